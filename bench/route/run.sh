#!/usr/bin/env bash
# Routing benchmark: bootctl's engines beside OpenSM's on the same simulated fabric, in the same
# run. ibsim simulates the fabric (written by bootctl route --net from a spec, with faults if
# given), OpenSM assigns the LIDs, and ibnetdiscover reads the fabric back; then
#   - each bootctl engine routes the ibnetdiscover output (dmodk: the spec, with --lids from it);
#     the time is bootctl's compute time (--timings), the balance its --check;
#   - each OpenSM engine routes the simulated fabric (opensm -o -R ENGINE); the time is from its
#     log ("building routing with" to "tables configured on all switches"), the balance is
#     bootctl's --check of the tables OpenSM dumped (route --load opensm-lfts.dump).
# Balance: routes per channel (link direction), max and mean over all pairs (all-to-all), and the
# max over shift permutations (1 is the best possible on a full fat-tree).
#
#   bench/route/run.sh [SPEC] [FAULTS]   env: ENGINES (bootctl's), OSM_ENGINES, SHIFTS
#
# Needs ibsim-utils, opensm and infiniband-diags (Debian packages) and python3 (to read JSON).
set -euo pipefail
cd "$(dirname "$0")/../.."

SPEC=${1:-"pgft:3;8,8,8;1,8,8;1,1,1"}
FAULTS=${2:-}
ENGINES=${ENGINES:-dmodc dmodk minhop updn}
[ -n "$FAULTS" ] && ENGINES=${ENGINES/dmodk/} # dmodk routes intact PGFTs only
OSM_ENGINES=${OSM_ENGINES:-ftree minhop updn}
SHIFTS=${SHIFTS:-256}
UMAD2SIM=$(ls /usr/lib/*/umad2sim/libumad2sim.so 2>/dev/null | head -1)
PATH=$PATH:/usr/sbin

[ -n "$UMAD2SIM" ] || { echo "bench/route: needs libumad2sim.so (apt-get install ibsim-utils)" >&2; exit 2; }
for t in ibsim opensm ibnetdiscover python3; do
  command -v "$t" >/dev/null || { echo "bench/route: needs $t (apt-get install ibsim-utils opensm infiniband-diags python3)" >&2; exit 2; }
done

work=$(mktemp -d /tmp/bf-routebench.XXXXXX)
simpid=
cleanup() {
  if [ -n "$simpid" ]; then kill "$simpid" 2>/dev/null || true; wait "$simpid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/bootctl" ./cmd/bootctl
bc="$work/bootctl"
# Run from the work directory: libumad2sim makes a fake sysfs (sys-PID) in the working directory.
[ -e "$SPEC" ] && SPEC=$(realpath "$SPEC")
FAULTS_NAME=$FAULTS
[ -n "$FAULTS" ] && FAULTS=$(realpath "$FAULTS")
cd "$work"
faultargs=()
[ -n "$FAULTS" ] && faultargs=(--faults "$FAULTS")

"$bc" route -t "$SPEC" -e minhop "${faultargs[@]}" --net "$work/fabric.net" >/dev/null 2>"$work/net.log" ||
  "$bc" route -t "$SPEC" -e dmodc "${faultargs[@]}" --net "$work/fabric.net" >/dev/null 2>>"$work/net.log" || true
[ -s "$work/fabric.net" ] || { cat "$work/net.log" >&2; exit 1; }
nodes=$(grep -cE '^(Switch|Hca)' "$work/fabric.net")
switches=$(grep -cE '^Switch' "$work/fabric.net")
ports=$(awk '/^(Switch|Hca)/ {n += $2 + 1} END {print n}' "$work/fabric.net")

export IBSIM_SOCKNAME="bfbench$$" OSM_CACHE_DIR="$work/cache" OSM_TMP_DIR="$work"
mkdir -p "$work/cache" "$work/dumps"
ibsim -s -n -N $((nodes + 16)) -S $((switches + 16)) -P $((ports + 64)) "$work/fabric.net" >"$work/ibsim.log" 2>&1 &
simpid=$!
for _ in $(seq 100); do grep -q "simulator ready" "$work/ibsim.log" && break; sleep 0.1; done
grep -q "simulator ready" "$work/ibsim.log" || { cat "$work/ibsim.log" >&2; exit 1; }
osm() { LD_PRELOAD=$UMAD2SIM timeout 600 opensm "$@" >/dev/null 2>&1; }
osm -o -f "$work/osm-lids.log"
LD_PRELOAD=$UMAD2SIM ibnetdiscover >"$work/disc.out" 2>/dev/null

# balance FILE.json -> "a2a max / mean, shift max / mean of max"
balance() {
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["report"]; a=r["all_to_all"]; s=r["shift"]
print("%d / %.1f | %d / %.2f" % (a["max"], a["mean"], s["max"], s["mean_max"]))' "$1"
}
ctime() { python3 -c 'import json,sys; print("%.6f" % json.load(open(sys.argv[1]))["compute_seconds"])' "$1"; }

echo "fabric: $SPEC${FAULTS:+ with faults $FAULTS_NAME}: $((nodes - switches)) CAs, $switches switches ($(ibsim -h 2>&1 | grep -o 'ibsim [0-9][0-9.]*' | head -1 || true), $(opensm --version 2>/dev/null | grep -o 'OpenSM [0-9.]*' | head -1))"
printf '%-16s | %10s | %-22s | %-22s\n' "engine" "routing s" "all-to-all max / mean" "shift max / mean of max"
for e in $ENGINES; do
  args=(route -t "$work/disc.out" -e "$e")
  [ "$e" = dmodk ] && args=(route -t "$SPEC" "${faultargs[@]}" -e dmodk --lids "$work/disc.out")
  if "$bc" "${args[@]}" --check --shifts "$SHIFTS" --timings -o json >"$work/$e.json" 2>"$work/$e.err"; then
    printf '%-16s | %10s | %s\n' "bootctl $e" "$(ctime "$work/$e.json")" "$(balance "$work/$e.json" | sed 's/|/| /')"
  else
    printf '%-16s | %s\n' "bootctl $e" "$(tail -1 "$work/$e.err" | cut -c1-100)"
  fi
done
for e in $OSM_ENGINES; do
  rm -f "$work/dumps/opensm-lfts.dump"
  osm -o -R "$e" -D 0x47 --dump_files_dir "$work/dumps" -f "$work/osm-$e.log"
  secs=$(python3 - "$work/osm-$e.log" "$e" <<'PY'
import re, sys
start = end = None
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"\w+ +\d+ (\d+):(\d+):(\d+) (\d+) ", line)
    if not m:
        continue
    t = int(m[1]) * 3600 + int(m[2]) * 60 + int(m[3]) + int(m[4]) / 1e6
    if "building routing with" in line and start is None:
        start = t
    if "tables configured on all switches" in line and start is not None:
        end = t
        used = re.search(r"osm_ucast_mgr_process: (\S+) tables", line)[1]
print("%.6f" % (end - start) if end else "failed", used if end else "")
PY
)
  used=${secs#* }; secs=${secs%% *}
  if [ "$used" != "$e" ]; then
    printf '%-16s | %s\n' "opensm $e" "OpenSM fell back to ${used:-nothing}"; continue
  fi
  if "$bc" route -t "$work/disc.out" --load "$work/dumps/opensm-lfts.dump" --check --shifts "$SHIFTS" -o json >"$work/osm-$e.json" 2>"$work/osm-$e.err"; then
    printf '%-16s | %10s | %s\n' "opensm $e" "$secs" "$(balance "$work/osm-$e.json" | sed 's/|/| /')"
  else
    printf '%-16s | %10s | %s\n' "opensm $e" "$secs" "$(tail -1 "$work/osm-$e.err" | cut -c1-100)"
  fi
done
