#!/usr/bin/env bash
# DHCP benchmark: perfdhcp DORA exchanges/s, drop % and server CPU per DORA for
# `bootctl serve` itself (reservation mode and dhcp.pool; alone on bbolt, and as
# a fleet member on etcd), the bench server
# (bench/dhcp/main.go: a bare dhcpd.Server without bootsrv, reservation and
# pool) and, when installed, ISC Kea (kea-dhcp4, memfile leases), in one run,
# with the same perfdhcp parameters for every server.
#
# Topology: namespace S (server, 10.88.0.1/32 on s0 and a route to the relay)
# <-veth-> namespace C (perfdhcp, 10.88.0.50/16 on c0). perfdhcp simulates a
# relay (giaddr = 10.88.0.50), so every server answers to 10.88.0.50:67; the
# server has no subnet on s0, as behind a point-to-point link to the relay,
# because dhcpd refuses a giaddr inside a subnet it is attached to (no relay
# sits there: its clients reach the server directly). The clients are the
# CLIENTS MACs 00:0c:01:00:00:00.. (perfdhcp -M); bootctl serve gets them as
# an inventory of the sunway machine's first CLIENTS nodes, with addresses
# from 10.88.100.0 in reservation mode and none in pool mode (range
# 10.88.1.0-10.88.250.255, as Kea's pool).
#
# Needs root, iproute2, Go, perfdhcp (Debian kea-admin); Kea from
# kea-dhcp4-server. Usage: bench/dhcp/run.sh
# (env: RATE RATES DURATION CLIENTS SERVERS NICE POOL_WORKERS (dhcp.workers of serve-pool)
# BOOTCTL=prebuilt binary PROFILE_DIR=dir: bootctl serve writes a CPU profile of each run there; KEEP=1 keeps the
# temporary directory with perfdhcp's outputs, the servers' logs and bootctl's DHCP metrics)
set -euo pipefail

RATE=${RATE:-5000}          # target DORA/s for the headline run
RATES=${RATES:-"$RATE 8000 12000"} # rates swept for every server
DURATION=${DURATION:-10}    # seconds per perfdhcp run
CLIENTS=${CLIENTS:-20000}   # distinct simulated clients (MACs)
NICE=${NICE:--10}           # servers and perfdhcp run at this nice level, so a
                            # busy shared host disturbs every server alike less
SERVERS=${SERVERS:-"serve-reservation serve-pool fleet-reservation fleet-pool bench-reservation bench-pool kea"}

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
	if [ -n "${KEEP:-}" ]; then echo "# kept $TMP (perfdhcp outputs, server logs and metrics)"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT INT TERM

echo "# building bootctl and the bench server"
(cd "$ROOT" && go build -o "$TMP/dhcpbench" ./bench/dhcp)
if [ -n "${BOOTCTL:-}" ]; then cp "$BOOTCTL" "$TMP/bootctl"; else (cd "$ROOT" && go build -o "$TMP/bootctl" ./cmd/bootctl); fi

# bootctl serve's files: inventories (with and without addresses), the MAC list
# perfdhcp draws from, an image store with a default profile, one config per mode.
"$TMP/dhcpbench" -inventory "$TMP/inventory-reservation.csv" -macs "$TMP/macs.txt" -clients "$CLIENTS" -first-ip 10.88.100.0
"$TMP/dhcpbench" -inventory "$TMP/inventory-pool.csv" -clients "$CLIENTS"
head -c 65536 /dev/urandom > "$TMP/vmlinuz"; head -c 65536 /dev/urandom > "$TMP/initrd.img"
"$TMP/bootctl" --log-level warn image add --store "$TMP/images" --name default \
	--kernel "$TMP/vmlinuz" --initrd "$TMP/initrd.img" --cmdline console=ttyS0 >/dev/null
for mode in reservation pool; do
	cat > "$TMP/serve-$mode.yaml" <<YAML
servers: [{name: bs0, address: 10.88.0.1}]
topology: sunway
mapping: bcda
inventory: inventory-$mode.csv
images: images
state_dir: state-$mode
http: {listen: "10.88.0.1:8080"}
tftp: {listen: "off"}
dhcp:
  mode: reservation
  interfaces: [s0]
  subnet: 10.88.0.0/16
  lease_time: 1h
YAML
done
echo "  pool: {range: 10.88.1.0-10.88.250.255, lease: 1h}" >> "$TMP/serve-pool.yaml"
# fleet-*: the same server as one member of a fleet on etcd (Debian's etcd-server, started in the
# server's namespace): boot states and, in pool mode, address allocation go through etcd.
for mode in reservation pool; do
	cat > "$TMP/fleet-$mode.yaml" <<YAML
servers: [{name: bs0, address: 10.88.0.1}]
topology: sunway
mapping: bcda
inventory: inventory-$mode.csv
images: images
dhcp:
  mode: reservation
  subnet: 10.88.0.0/16
  lease_time: 1h
YAML
done
echo "  pool: {range: 10.88.1.0-10.88.250.255, lease: 1h}" >> "$TMP/fleet-pool.yaml"
ETCD_EP=127.0.0.1:23791
[ -n "${POOL_WORKERS:-}" ] && echo "  workers: $POOL_WORKERS" >> "$TMP/serve-pool.yaml"

ip netns add "$S"
ip netns add "$C"
ip -n "$C" link add c0 type veth peer name s0 netns "$S"
ip -n "$S" addr add 10.88.0.1/32 dev s0
ip -n "$C" addr add 10.88.0.50/16 dev c0
for ns in "$S" "$C"; do ip -n "$ns" link set lo up; done
ip -n "$S" link set s0 up
ip -n "$S" route add 10.88.0.50/32 dev s0
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
		-M "$TMP/macs.txt" 10.88.0.1 2>&1 || true)
	c1=$(cpu_ticks "$pid")
	echo "$out" > "$TMP/perfdhcp-$name-$rate.txt"
	# Why packets went unanswered: the kernel's UDP counters in S (cumulative), and bootctl's own.
	{ echo "# server namespace"; ip netns exec "$S" grep Udp: /proc/net/snmp
	  echo "# client namespace (RcvbufErrors: replies perfdhcp was too slow to read)"; ip netns exec "$C" grep Udp: /proc/net/snmp
	} > "$TMP/metrics-$name-$rate.txt" 2>&1 || true
	case $name in serve-*|fleet-*)
		ip netns exec "$S" curl -s http://10.88.0.1:8080/metrics | grep -E '^bootfabric_(dhcp_(dropped|pool)|fleet_(state_records|etcd_request_seconds_count|etcd_errors))' >> "$TMP/metrics-$name-$rate.txt" || true ;;
	esac
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

# start_etcd: one etcd member on S's loopback for the fleet-* servers (once).
ETCD_PID=
start_etcd() {
	[ -n "$ETCD_PID" ] && return 0
	command -v etcd >/dev/null || { echo "# etcd not installed (apt-get install etcd-server): no fleet-* runs" >&2; return 1; }
	ip netns exec "$S" etcd --name bench --data-dir "$TMP/etcd" --listen-client-urls "http://$ETCD_EP" \
		--advertise-client-urls "http://$ETCD_EP" --listen-peer-urls http://127.0.0.1:23801 \
		--initial-advertise-peer-urls http://127.0.0.1:23801 --initial-cluster bench=http://127.0.0.1:23801 \
		>"$TMP/etcd.log" 2>&1 &
	ETCD_PID=$!; PIDS+=("$ETCD_PID")
	for _ in $(seq 100); do
		ip netns exec "$S" curl -sf "http://$ETCD_EP/health" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "etcd did not start" >&2; cat "$TMP/etcd.log" >&2; return 1
}

# start_server NAME: starts it in S, sets SPID.
start_server() {
	case $1 in
	serve-reservation|serve-pool)
		nice -n "$NICE" ip netns exec "$S" "$TMP/bootctl" --log-level warn serve --config "$TMP/$1.yaml" \
			${PROFILE_DIR:+--cpu-profile "$PROFILE_DIR/$1-$(date +%s).prof"} 2>>"$TMP/$1.log" & ;;
	fleet-reservation|fleet-pool)
		start_etcd || return 1
		[ -f "$TMP/fleet.key" ] || "$TMP/bootctl" fleet keygen --out "$TMP/fleet.key" >/dev/null || return 1
		ip netns exec "$S" "$TMP/bootctl" --log-level warn fleet apply -f "$TMP/$1.yaml" --etcd "$ETCD_EP" --fleet "$1" \
			--sign-key "$TMP/fleet.key" >/dev/null 2>>"$TMP/$1.log" || return 1
		nice -n "$NICE" ip netns exec "$S" "$TMP/bootctl" --log-level warn serve --etcd "$ETCD_EP" --fleet "$1" --name bs0 \
			--config-key "$TMP/fleet.key.pub" --fleet-secret "$TMP/fleet.key.secret" \
			--http 10.88.0.1:8080 --tftp off --interface s0 --images "$TMP/images" --state-dir "$TMP/fstate-$1" 2>>"$TMP/$1.log" & ;;
	bench-reservation)
		nice -n "$NICE" ip netns exec "$S" "$TMP/dhcpbench" -iface s0 -server-ip 10.88.0.1 2>>"$TMP/$1.log" & ;;
	bench-pool)
		nice -n "$NICE" ip netns exec "$S" "$TMP/dhcpbench" -iface s0 -server-ip 10.88.0.1 \
			-pool-db "$TMP/leases.db" 2>>"$TMP/$1.log" & ;;
	kea)
		KEA_PIDFILE_DIR="$TMP/kea" KEA_LOCKFILE_DIR="$TMP/kea" \
			nice -n "$NICE" ip netns exec "$S" kea-dhcp4 -c "$TMP/kea/kea-dhcp4.conf" >>"$TMP/kea/stdout" 2>&1 & ;;
	esac
	SPID=$!; PIDS+=("$SPID")
	wait_port67 || { cat "$TMP/$1.log" "$TMP/kea/stdout" "$TMP/kea/kea.log" 2>/dev/null >&2; return 1; }
}

if [[ " $SERVERS " == *" kea "* ]] && ! command -v kea-dhcp4 >/dev/null; then
	SERVERS=${SERVERS/kea/}
	echo "# kea-dhcp4 not installed (apt-get install kea-dhcp4-server): no reference run"
fi
if [[ " $SERVERS " == *" kea "* ]]; then
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
fi

echo "# serve-*: bootctl serve (bootsrv: inventory, boot-state tracking, metrics); bench-*: bench/dhcp/main.go (dhcpd alone)"
echo "# perfdhcp: $DURATION s per run, $CLIENTS clients (-M), relay mode; DORA/s as perfdhcp reports it;"
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
