#!/usr/bin/env bash
# TFTP benchmark: bootfabric tftpd beside tftpd-hpa in the same run.
# 1 client, then N concurrent clients (default 64), each fetching an 8 MB
# (8,000,000-byte) file with blksize 1468 over loopback; every file's
# sha256 is checked; any failed transfer fails the run.
#
#   bench/tftp/run.sh [clients]   env: SIZE_BYTES, BLKSIZE, PORT, HPA_PORT, ROUNDS, MODES, ANTICIPATE
#
# Clients (MODES, default "pin atftp:4 atftp:16"): "pin" is the pin/tftp
# client in process, lock-step, as PXE ROMs and iPXE fetch; "atftp:W" is
# Debian's atftp asking for RFC 7440 windowsize W (4 is what UEFI firmware
# asks for). tftpd-hpa does not negotiate windowsize, so atftp falls back to
# lock-step against it. ANTICIPATE=N adds "bf-anticN", bootfabric with the
# opt-in pin/tftp burst mode.
#
# Needs tftpd-hpa and atftp (Debian packages) for the reference figures and
# the windowed clients; without them only what is installed is measured.
set -euo pipefail
cd "$(dirname "$0")/../.."

CLIENTS=${1:-64}
SIZE_BYTES=${SIZE_BYTES:-8000000}
BLKSIZE=${BLKSIZE:-1468}
PORT=${PORT:-16969}
HPA_PORT=${HPA_PORT:-16970}
ANTIC_PORT=${ANTIC_PORT:-16971}
ROUNDS=${ROUNDS:-3}
MODES=${MODES:-pin atftp:4 atftp:16}
ANTICIPATE=${ANTICIPATE:-0}

work=$(mktemp -d /tmp/bf-tftpbench.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/tftpbench" ./bench/tftp
mkdir -p "$work/root"
chmod 755 "$work" "$work/root" # tftpd-hpa drops to user nobody
head -c "$SIZE_BYTES" /dev/urandom > "$work/root/file"
chmod 644 "$work/root/file"
sum=$(sha256sum "$work/root/file" | cut -d' ' -f1)

"$work/tftpbench" serve -addr "127.0.0.1:$PORT" -root "$work/root" 2>"$work/serve.log" &
pids+=($!)
servers=("bootfabric 127.0.0.1:$PORT")
if ((ANTICIPATE >= 2)); then
  "$work/tftpbench" serve -addr "127.0.0.1:$ANTIC_PORT" -anticipate "$ANTICIPATE" -root "$work/root" 2>"$work/serve-antic.log" &
  pids+=($!)
  servers+=("bf-antic$ANTICIPATE 127.0.0.1:$ANTIC_PORT")
fi

hpa=$(command -v in.tftpd || true)
[[ -z "$hpa" && -x /usr/sbin/in.tftpd ]] && hpa=/usr/sbin/in.tftpd
if [[ -n "$hpa" ]]; then
  # -L foreground, -l listen, -s chroot to root; -B caps blksize like ours.
  "$hpa" -L -l -a "127.0.0.1:$HPA_PORT" -s -B "$BLKSIZE" "$work/root" &
  pids+=($!)
  servers+=("tftpd-hpa 127.0.0.1:$HPA_PORT")
else
  echo "tftpd-hpa not installed (apt-get install tftpd-hpa): measuring bootfabric only" >&2
fi
if ! command -v atftp >/dev/null; then
  echo "atftp not installed (apt-get install atftp): lock-step pin/tftp clients only" >&2
  MODES=pin
fi
sleep 0.5
for p in "${pids[@]}"; do
  kill -0 "$p" 2>/dev/null || { echo "a server exited at start (port $PORT, $ANTIC_PORT or $HPA_PORT in use?)" >&2; cat "$work/serve.log" >&2; exit 1; }
done

echo "TFTP loopback benchmark: file $SIZE_BYTES bytes, blksize $BLKSIZE, $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), best of $ROUNDS rounds per line"
status=0
# Rounds are interleaved across servers and clients so that changes in host
# load hit every line alike; each line keeps its best round.
for clients in 1 "$CLIENTS"; do
  declare -A best=() bestagg=()
  keys=()
  for ((r = 0; r < ROUNDS; r++)); do
    for mode in $MODES; do
      client=${mode%%:*} window=0
      [[ "$mode" == *:* ]] && window=${mode#*:}
      for s in "${servers[@]}"; do
        set -- $s
        key="$1 $mode"
        ((r == 0)) && keys+=("$key")
        line=$("$work/tftpbench" load -name "$1" -addr "$2" -file file -sha256 "$sum" \
          -clients "$clients" -blksize "$BLKSIZE" -client "$client" -windowsize "$window" -json) || { echo "$line"; status=1; continue; }
        agg=$(sed -E 's/.*"aggregate_MiB_per_s":([0-9.]+).*/\1/' <<<"$line")
        if [[ -z "${best[$key]:-}" ]] || awk -v a="$agg" -v b="${bestagg[$key]}" 'BEGIN{exit !(a>b)}'; then
          best[$key]=$line bestagg[$key]=$agg
        fi
      done
    done
  done
  for key in "${keys[@]}"; do
    [[ -n "${best[$key]:-}" ]] && python3 - "${best[$key]}" <<'PY'
import json, sys
s = json.loads(sys.argv[1])
client = s['client'] + (f" windowsize {s['windowsize']}" if s['windowsize'] else " lock-step")
print(f"{s['server']:<11} {client:<20} clients={s['clients']:<3} aggregate {s['aggregate_MiB_per_s']:7.1f} MiB/s   "
      f"per client min/median/max {s['min_client_MiB_per_s']:.1f}/{s['median_client_MiB_per_s']:.1f}/{s['max_client_MiB_per_s']:.1f} MiB/s   "
      f"sha256 ok {s['sha256_ok']}/{s['clients']}  failed {s['failed']}")
PY
  done
  unset best bestagg
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $status
