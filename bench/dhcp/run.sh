#!/usr/bin/env bash
# DHCP benchmark: perfdhcp DORA exchanges/s and drop % against bootfabric's
# dhcpd (reservation mode, and dynamic pool with fsync'd bbolt leases) and,
# when installed, ISC Kea (kea-dhcp4, memfile leases) in the same run.
#
# Topology: namespace S (server, 10.88.0.1/16 on s0) <-veth-> namespace C
# (perfdhcp, 10.88.0.50/16 on c0). perfdhcp simulates a relay (giaddr =
# 10.88.0.50), so every server answers to 10.88.0.50:67.
#
# Needs root, iproute2, Go, perfdhcp (Debian kea-admin); Kea from
# kea-dhcp4-server. Usage: bench/dhcp/run.sh  (env: RATE DURATION CLIENTS RATES)
set -euo pipefail

RATE=${RATE:-5000}          # target DORA/s for the headline run
RATES=${RATES:-"$RATE 8000 12000"} # rates swept for every server
DURATION=${DURATION:-10}    # seconds per perfdhcp run
CLIENTS=${CLIENTS:-20000}   # distinct simulated clients (MACs)
NICE=${NICE:--10}           # servers and perfdhcp run at this nice level, so a
                            # busy shared host disturbs every server alike less

[ "$(id -u)" = 0 ] || { echo "run.sh: needs root (network namespaces)" >&2; exit 2; }
command -v perfdhcp >/dev/null || { echo "run.sh: needs perfdhcp (apt-get install kea-admin)" >&2; exit 2; }

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TMP=$(mktemp -d /tmp/bfdhcpbench.XXXXXX)
S=bfdS$$
C=bfdC$$
PIDS=()

cleanup() {
	for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
	sleep 0.2
	for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill -9 "$p" 2>/dev/null || true; done
	ip netns del "$S" 2>/dev/null || true
	ip netns del "$C" 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

echo "# building bench server"
(cd "$ROOT" && go build -o "$TMP/dhcpbench" ./bench/dhcp)

ip netns add "$S"
ip netns add "$C"
ip -n "$C" link add c0 type veth peer name s0 netns "$S"
ip -n "$S" addr add 10.88.0.1/16 dev s0
ip -n "$C" addr add 10.88.0.50/16 dev c0
for ns in "$S" "$C"; do ip -n "$ns" link set lo up; done
ip -n "$S" link set s0 up
ip -n "$C" link set c0 up

wait_port67() { # wait until something listens on UDP 67 in S
	for _ in $(seq 50); do
		ip netns exec "$S" ss -Hlun 'sport = :67' | grep -q . && return 0
		sleep 0.1
	done
	echo "server did not start" >&2; return 1
}

stop_server() {
	local pid=$1
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
	kill -9 "$pid" 2>/dev/null || true
}

cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat" 2>/dev/null || echo 0; }

# perf NAME RATE PID: one perfdhcp run; prints a result row including the
# server's CPU time per completed DORA (independent of other load on the host).
perf() {
	local name=$1 rate=$2 pid=$3 out c0 c1
	c0=$(cpu_ticks "$pid")
	out=$(nice -n "$NICE" ip netns exec "$C" perfdhcp -4 -l c0 -r "$rate" -p "$DURATION" -R "$CLIENTS" \
		-b mac=00:0c:01:00:00:00 10.88.0.1 2>&1 || true)
	c1=$(cpu_ticks "$pid")
	echo "$out" > "$TMP/perfdhcp-$name-$rate.txt"
	echo "$out" | awk -v name="$name" -v target="$rate" -v dur="$DURATION" -v cpu=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" '
		/^\*\*\*Statistics for: DISCOVER-OFFER/ {ex="do"}
		/^\*\*\*Statistics for: REQUEST-ACK/ {ex="ra"}
		/^sent packets:/ {sent[ex]=$3}
		/^received packets:/ {recv[ex]=$3}
		/^Rate:/ {rate=$2}
		END {
			d = sent["do"]+0; a = recv["ra"]+0
			drop = d ? 100*(d-a)/d : 100
			getline l < "/proc/loadavg"; split(l, la, " ")
			printf "%-22s %8d %10.0f %12.0f %10d %10d %8.2f%% %9.1f %6s\n", name, target, rate, a/dur, d, a, drop, a ? cpu*1e6/hz/a : 0, la[1]
		}'
}

header() { printf "%-22s %8s %10s %12s %10s %10s %9s %9s %6s\n" server target "DORA/s" "ACKs/s" DISCOVERs ACKs drop "cpu_us/DORA" load1; }

# start_server NAME: starts it in S, sets SPID.
start_server() {
	case $1 in
	dhcpd-reservation)
		nice -n "$NICE" ip netns exec "$S" "$TMP/dhcpbench" -iface s0 -server-ip 10.88.0.1 2>>"$TMP/$1.log" & ;;
	dhcpd-pool)
		nice -n "$NICE" ip netns exec "$S" "$TMP/dhcpbench" -iface s0 -server-ip 10.88.0.1 \
			-pool-db "$TMP/leases.db" -workers 64 2>>"$TMP/$1.log" & ;;
	kea)
		KEA_PIDFILE_DIR="$TMP/kea" KEA_LOCKFILE_DIR="$TMP/kea" \
			nice -n "$NICE" ip netns exec "$S" kea-dhcp4 -c "$TMP/kea/kea-dhcp4.conf" >>"$TMP/kea/stdout" 2>&1 & ;;
	esac
	SPID=$!; PIDS+=("$SPID")
	wait_port67 || { cat "$TMP/$1.log" "$TMP/kea/stdout" "$TMP/kea/kea.log" 2>/dev/null >&2; return 1; }
}

SERVERS="dhcpd-reservation dhcpd-pool"
if command -v kea-dhcp4 >/dev/null; then
	SERVERS="$SERVERS kea"
	mkdir -p "$TMP/kea"
	cat > "$TMP/kea/kea-dhcp4.conf" <<JSON
{ "Dhcp4": {
  "interfaces-config": { "interfaces": [ "s0" ], "dhcp-socket-type": "udp" },
  "lease-database": { "type": "memfile", "persist": true, "name": "$TMP/kea/leases4.csv", "lfc-interval": 0 },
  "valid-lifetime": 3600,
  "subnet4": [ { "id": 1, "subnet": "10.88.0.0/16", "pools": [ { "pool": "10.88.1.0 - 10.88.250.255" } ],
                 "next-server": "10.88.0.1", "boot-file-name": "ipxe.efi" } ],
  "loggers": [ { "name": "kea-dhcp4", "output_options": [ { "output": "$TMP/kea/kea.log" } ], "severity": "WARN" } ]
} }
JSON
	KEA="kea-dhcp4 $(kea-dhcp4 -v)"
else
	echo "# kea-dhcp4 not installed (apt-get install kea-dhcp4-server): no reference run"
fi

echo "# perfdhcp: $DURATION s per run, $CLIENTS clients, relay mode; DORA/s as perfdhcp reports it;"
echo "# drop = 1 - ACKs/DISCOVERs; servers alternate per rate so that host load hits all alike"
echo "# nice $NICE for servers and perfdhcp; load1 = host load average at the end of the run"
echo "# host: $(nproc) CPUs, $(uname -r), perfdhcp $(perfdhcp -v 2>&1 | head -1)"
header
for r in $RATES; do
	for srv in $SERVERS; do
		start_server "$srv" || continue
		name=$srv
		[ "$srv" = kea ] && name=$KEA
		perf "$name" "$r" "$SPID"
		stop_server "$SPID"
	done
done
