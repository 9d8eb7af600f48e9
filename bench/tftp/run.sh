#!/usr/bin/env bash
# TFTP benchmark: bootfabric tftpd beside tftpd-hpa in the same run.
# 1 client, then N concurrent clients (default 64), each fetching an 8 MB
# (8,000,000-byte) file with blksize 1468 over loopback; every file's
# sha256 is checked; any failed transfer fails the run.
#
#   bench/tftp/run.sh [clients]   env: SIZE_BYTES, BLKSIZE, PORT, HPA_PORT, ROUNDS, ANTICIPATE
#
# "bootfabric" is the default lock-step server; "bf-antic8" is the same
# server with the opt-in Anticipate=8 burst mode (ANTICIPATE=0 skips it).
#
# Needs tftpd-hpa (Debian package tftpd-hpa) for the reference figures;
# without it only bootfabric is measured.
set -euo pipefail
cd "$(dirname "$0")/../.."

CLIENTS=${1:-64}
SIZE_BYTES=${SIZE_BYTES:-8000000}
BLKSIZE=${BLKSIZE:-1468}
PORT=${PORT:-16969}
HPA_PORT=${HPA_PORT:-16970}
ROUNDS=${ROUNDS:-3}
ANTICIPATE=${ANTICIPATE:-8}
ANTIC_PORT=${ANTIC_PORT:-16971}

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
sleep 0.5
for p in "${pids[@]}"; do
  kill -0 "$p" 2>/dev/null || { echo "a server exited at start (port $PORT, $ANTIC_PORT or $HPA_PORT in use?)" >&2; cat "$work/serve.log" >&2; exit 1; }
done

echo "TFTP loopback benchmark: file $SIZE_BYTES bytes, blksize $BLKSIZE, $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), best of $ROUNDS rounds per line"
status=0
# Rounds are interleaved across servers so that changes in host load hit
# every server alike; each line keeps the best round.
for clients in 1 "$CLIENTS"; do
  declare -A best=() bestagg=()
  for ((r = 0; r < ROUNDS; r++)); do
    for s in "${servers[@]}"; do
      set -- $s
      line=$("$work/tftpbench" load -name "$1" -addr "$2" -file file -sha256 "$sum" \
        -clients "$clients" -blksize "$BLKSIZE" -json) || { echo "$line"; status=1; continue; }
      agg=$(sed -E 's/.*"aggregate_MiB_per_s":([0-9.]+).*/\1/' <<<"$line")
      if [[ -z "${best[$1]:-}" ]] || awk -v a="$agg" -v b="${bestagg[$1]}" 'BEGIN{exit !(a>b)}'; then
        best[$1]=$line bestagg[$1]=$agg
      fi
    done
  done
  for s in "${servers[@]}"; do
    set -- $s
    [[ -n "${best[$1]:-}" ]] && python3 - "${best[$1]}" <<'PY'
import json, sys
s = json.loads(sys.argv[1])
print(f"{s['server']:<11} clients={s['clients']:<3} aggregate {s['aggregate_MiB_per_s']:7.1f} MiB/s   "
      f"per client min/median/max {s['min_client_MiB_per_s']:.1f}/{s['median_client_MiB_per_s']:.1f}/{s['max_client_MiB_per_s']:.1f} MiB/s   "
      f"sha256 ok {s['sha256_ok']}/{s['clients']}  failed {s['failed']}")
PY
  done
  unset best bestagg
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $status
