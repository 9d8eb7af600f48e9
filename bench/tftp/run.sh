#!/usr/bin/env bash
# TFTP benchmark: `bootctl serve` beside pin/tftp's own server and tftpd-hpa in the same run.
#
#   bench/tftp/run.sh            env: CLIENTS (64), SIZE_BYTES (8 MiB), BLKSIZE (1468), ROUNDS (5),
#                                     PINS ("same split"), WINDOWS ("4 16"), PORT, PIN_PORT, HPA_PORT,
#                                     PIN_ARGS (extra pintftp flags: -single-port, -anticipate N),
#                                     BOOTCTL
#
# bootctl serve (the product: bootsrv with its observer, boot-state tracking and metrics; lock-step
# transfers on pin/tftp's sender behind tftpd's checks, windowed ones on ours) serves an 8 MiB
# random file from tftp.root; pin/tftp v3's server (bench/tftp/pintftp, the module's
# version, its defaults: a port per transfer, lock-step) and tftpd-hpa (`in.tftpd -l -s -B 1468`,
# Debian package tftpd-hpa) serve the same directory. Against each, in interleaved rounds:
#   - 1 lock-step client: curl (tftp://, --tftp-blksize 1468), with PIN=same (client and server
#     pinned to CPU 0) and PIN=split (server on CPU 0, client on CPU 1);
#   - CLIENTS concurrent lock-step curl clients on CPU 1 (the servers stay on CPU 0);
#   - windowed: 1 atftp client asking for RFC 7440 windowsize W (WINDOWS); tftpd-hpa does not
#     negotiate windowsize, nor does pin/tftp, so against them atftp runs lock-step.
# Every fetched file's sha256 is checked; a failed or corrupt transfer fails the run. Each line
# prints the median of ROUNDS rounds (and min..max); a single transfer's rate is its curl
# time_total (atftp: the process's lifetime), the concurrent rate is all bytes over the wall time.
# "/hpa" is a server's median over tftpd-hpa's, "/pin" bootctl's over pin/tftp's; "paired" is the
# median of the per-round ratios of the same two.
set -euo pipefail
cd "$(dirname "$0")/../.."

CLIENTS=${CLIENTS:-64}
SIZE_BYTES=${SIZE_BYTES:-8388608}
BLKSIZE=${BLKSIZE:-1468}
ROUNDS=${ROUNDS:-5}
PINS=${PINS:-same split}
WINDOWS=${WINDOWS:-4 16}
PORT=${PORT:-16969}
HPA_PORT=${HPA_PORT:-16970}
PIN_PORT=${PIN_PORT:-16971}
PIN_ARGS=${PIN_ARGS:-}
ncpu=1 # the concurrent clients' CPU
[ "$(nproc)" -ge 2 ] || PINS=same ncpu=0

for tool in curl in.tftpd sha256sum taskset; do
	command -v "$tool" >/dev/null || { echo "run.sh: $tool not found (Debian packages: curl tftpd-hpa coreutils util-linux)" >&2; exit 2; }
done
command -v atftp >/dev/null || { echo "run.sh: atftp not installed: no windowed lines" >&2; WINDOWS=""; }

work=$(mktemp -d /tmp/bf-tftpbench.XXXXXX)
out=$(mktemp -d /dev/shm/bf-tftpbench.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$work" "$out"
}
trap cleanup EXIT

if [ -n "${BOOTCTL:-}" ]; then cp "$BOOTCTL" "$work/bootctl"; else go build -o "$work/bootctl" ./cmd/bootctl; fi
go build -o "$work/pintftp" ./bench/tftp/pintftp
mkdir -p "$work/root" "$work/ipxe"
chmod 755 "$work" "$work/root" # tftpd-hpa drops to user nobody
head -c "$SIZE_BYTES" /dev/urandom >"$work/root/file"
chmod 644 "$work/root/file"
sum=$(sha256sum "$work/root/file" | cut -d' ' -f1)

# bootctl serve's files: a one-profile image store, a fake iPXE binary, one node on 127.0.0.1 (so
# every transfer is also tracked as that node's boot event), DHCP off.
head -c 65536 /dev/urandom >"$work/vmlinuz"
head -c 65536 /dev/urandom >"$work/ipxe/undionly.kpxe"
"$work/bootctl" --log-level warn image add --store "$work/images" --name default --kernel "$work/vmlinuz" >/dev/null
printf 'name,mac,ip,node\nnode0,52:54:00:00:00:01,127.0.0.1,s0-b0-n0\n' >"$work/inventory.csv"
cat >"$work/serve.yaml" <<YAML
servers: [{name: bs0, address: 127.0.0.1}]
topology: mini
mapping: bcda
inventory: inventory.csv
images: images
ipxe_dir: ipxe
state_dir: state
http: {listen: "127.0.0.1:0"}
tftp: {listen: "127.0.0.1:$PORT", root: root, max_block_size: $BLKSIZE, max_transfers_per_client: $((CLIENTS + 8))}
dhcp: {mode: "off"}
YAML

# The servers run on CPU 0 (taskset); with PIN=same the single client joins them there, with
# PIN=split it runs on CPU 1. Go sizes GOMAXPROCS from the affinity mask: bootctl runs on one P.
taskset -c 0 "$work/bootctl" --log-level warn serve --config "$work/serve.yaml" 2>"$work/serve.log" &
pids+=($!)
# -L foreground, -l standalone (a process per transfer, like inetd), -s chroot, -B blksize cap.
# PIN_ARGS unquoted: flags, word-split on purpose.
# shellcheck disable=SC2086
taskset -c 0 "$work/pintftp" -listen "127.0.0.1:$PIN_PORT" -root "$work/root" -blksize "$BLKSIZE" $PIN_ARGS &
pids+=($!)
taskset -c 0 in.tftpd -L -l -a "127.0.0.1:$HPA_PORT" -s -B "$BLKSIZE" "$work/root" &
pids+=($!)
for p in $PORT $PIN_PORT; do
	for ((i = 0; i < 50; i++)); do
		curl -s -o /dev/null "tftp://127.0.0.1:$p/file" --max-time 5 && break
		sleep 0.1
	done
done
for p in "${pids[@]}"; do
	kill -0 "$p" 2>/dev/null || { echo "run.sh: a server exited at start (port $PORT, $PIN_PORT or $HPA_PORT in use?)" >&2; cat "$work/serve.log" >&2; exit 1; }
done

declare -A port=([bootctl]=$PORT [pintftp]=$PIN_PORT [tftpd-hpa]=$HPA_PORT)
declare -A label=([bootctl]=bootctl [pintftp]=pin/tftp [tftpd-hpa]=tftpd-hpa)
servers=(bootctl pintftp tftpd-hpa)
fail=0

# check FILE: the fetched file's sha256 against the served one's.
check() {
	local got
	got=$(sha256sum "$1" | cut -d' ' -f1)
	[ "$got" = "$sum" ] || { echo "run.sh: $1: sha256 $got, want $sum" >&2; fail=1; return 1; }
}

# curl1 SERVER CPU: one lock-step transfer; prints MiB/s.
curl1() {
	local f="$out/$1.1" t
	t=$(taskset -c "$2" curl -sS --max-time 120 --tftp-blksize "$BLKSIZE" -o "$f" -w '%{time_total}' "tftp://127.0.0.1:${port[$1]}/file") || { echo "run.sh: curl from $1 failed" >&2; fail=1; echo 0; return; }
	check "$f" || { echo 0; return; }
	rm -f "$f"
	awk -v b="$SIZE_BYTES" -v t="$t" 'BEGIN { printf "%.1f\n", b / t / 1048576 }'
}

# curlN SERVER: CLIENTS concurrent lock-step transfers; prints the aggregate MiB/s.
curlN() {
	local start end i ok=1
	local -a cp=()
	start=$(date +%s%N)
	for ((i = 0; i < CLIENTS; i++)); do
		taskset -c "$ncpu" curl -sS --max-time 300 --tftp-blksize "$BLKSIZE" -o "$out/$1.n$i" "tftp://127.0.0.1:${port[$1]}/file" &
		cp+=($!)
	done
	for p in "${cp[@]}"; do wait "$p" || ok=0; done
	end=$(date +%s%N)
	((ok)) || { echo "run.sh: a curl from $1 failed" >&2; fail=1; }
	for ((i = 0; i < CLIENTS; i++)); do check "$out/$1.n$i" || ok=0; done
	rm -f "$out/$1".n*
	((ok)) || { echo 0; return; }
	awk -v b="$SIZE_BYTES" -v n="$CLIENTS" -v ns="$((end - start))" 'BEGIN { printf "%.1f\n", n * b / (ns / 1e9) / 1048576 }'
}

# atftp1 SERVER WINDOW: one atftp transfer asking for windowsize WINDOW; prints MiB/s.
atftp1() {
	local f="$out/$1.w" start end
	start=$(date +%s%N)
	atftp --option "blksize $BLKSIZE" --option "windowsize $2" --option "tsize 0" -g -r file -l "$f" 127.0.0.1 "${port[$1]}" >/dev/null 2>&1 || { echo "run.sh: atftp from $1 failed" >&2; fail=1; echo 0; return; }
	end=$(date +%s%N)
	check "$f" || { echo 0; return; }
	rm -f "$f"
	awk -v b="$SIZE_BYTES" -v ns="$((end - start))" 'BEGIN { printf "%.1f\n", b / (ns / 1e9) / 1048576 }'
}

declare -A res=()
lines=()
for pin in $PINS; do lines+=("1 lock-step curl, PIN=$pin"); done
lines+=("$CLIENTS lock-step curl, concurrent")
for w in $WINDOWS; do lines+=("1 atftp windowsize $w"); done

echo "# TFTP: bootctl serve vs pin/tftp v3.2.0 (pintftp${PIN_ARGS:+ $PIN_ARGS}) vs tftpd-hpa, file $SIZE_BYTES bytes, blksize $BLKSIZE, $(nproc) CPUs, $ROUNDS interleaved rounds, load average $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 0; r < ROUNDS; r++)); do
	for s in "${servers[@]}"; do
		for pin in $PINS; do
			cpu=0
			[ "$pin" = split ] && cpu=1
			res["$s|1 lock-step curl, PIN=$pin"]+=" $(curl1 "$s" "$cpu")"
		done
		res["$s|$CLIENTS lock-step curl, concurrent"]+=" $(curlN "$s")"
		for w in $WINDOWS; do res["$s|1 atftp windowsize $w"]+=" $(atftp1 "$s" "$w")"; done
	done
done

# stats "v1 v2 ...": median min max.
stats() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.1f %.1f %.1f\n", m, v[1], v[NR] }'; }
# paired "a1 a2 ..." "b1 b2 ...": the median of the per-round ratios a/b (rounds are interleaved, so
# each pair saw the same host load).
paired() { paste <(tr ' ' '\n' <<<"$1" | grep .) <(tr ' ' '\n' <<<"$2" | grep .) | awk '$2 > 0 { print $1 / $2 }' | sort -g |
	awk '{ v[NR] = $1 } END { if (NR == 0) { print "-"; exit } m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2f\n", m }'; }
# ratio A B: the ratio of A's median to B's on line $l, and the paired ratio.
ratio() {
	local a b
	a=$(stats "${res[$1|$l]}" | cut -d' ' -f1)
	b=$(stats "${res[$2|$l]}" | cut -d' ' -f1)
	printf '%s %s' "$(awk -v a="$a" -v b="$b" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')" "$(paired "${res[$1|$l]}" "${res[$2|$l]}")"
}
printf '%-36s %-10s %8s %14s %6s %6s %6s %6s\n' "transfer" "server" "MiB/s" "min..max" "/hpa" "paired" "/pin" "paired"
for l in "${lines[@]}"; do
	first=$l
	for s in "${servers[@]}"; do
		read -r m mn mx <<<"$(stats "${res[$s|$l]}")"
		cols=""
		case $s in
		bootctl) cols="$(ratio bootctl tftpd-hpa) $(ratio bootctl pintftp)" ;;
		pintftp) cols="$(ratio pintftp tftpd-hpa)" ;;
		esac
		# shellcheck disable=SC2086
		printf '%-36s %-10s %8s %14s %6s %6s %6s %6s\n' "$first" "${label[$s]}" "$m" "$mn..$mx" $cols
		first=""
	done
done
echo "# sha256 of every transfer checked; load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $fail
