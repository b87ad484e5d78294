#!/usr/bin/env bash
# bench_aggr_live.sh: the memory serve's timeline aggregates (heap
# censuses, spans, cost-centre ticks: tools/timeline/aggr.h) hold after
# a profiled service has streamed to it live for a long time (an hour by
# default), and what the heap, durations and profile queries then cost.
#
# Usage: bench/bench_aggr_live.sh [SECS]
#   SECS  how long the service runs (default 3600)
# Builds bench/Service.hs profiled (-prof -fprof-auto) with the patched
# RTS (scripts/build.sh: BUILD_DIR, default _build), starts `serve` on a
# unix: socket in a private directory, runs the service with +RTS -N2
# -hc -i1 -p streaming to it, and every 60 s (and at the end) prints one
# line from serve's /api/info ("aggr": the aggregates' memory and side
# files, their counts; mem_bytes: the whole index's) and serve's RSS
# from /proc.  At the end it times the whole-run /api/heap,
# /api/durations and /api/profile (the median of 5 GETs each, wall, from
# curl) and prints the peak RSS.  The spool defaults apply (256M: the
# oldest stream bytes go first; the aggregates keep the whole run).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${BUILD_DIR:-$top/_build}" && pwd)
SECS=${1:-3600}
pghc=$build/patched-rts/bin/ghc-eventlog-sink
tool=$build/tools/eventlog-sink
libdir=$build/lib/.libs
[ -x "$pghc" ] || { echo "no patched RTS at $pghc (scripts/build.sh)" >&2; exit 1; }
[ -x "$tool" ] || { echo "no $tool (scripts/build.sh)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/bench-aggr-live.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -m 700 "$work/run"
export XDG_RUNTIME_DIR=$work/run

cp "$top/bench/Service.hs" "$work/"
(cd "$work" && "$pghc" -v0 -O -threaded -eventlog -rtsopts -prof -fprof-auto \
    -i"$top/haskell/eventlog-sink/src" -outputdir obj Service.hs -o service \
    -L"$libdir" -leventlog-sink -optl-Wl,-rpath,"$libdir")

"$tool" serve --listen 127.0.0.1:0 "unix:$work/s.sock" >"$work/serve.out" 2>"$work/serve.err" &
spid=$!
pids+=("$spid")
for _ in $(seq 100); do grep -q "serving http" "$work/serve.err" && break; sleep 0.1; done
url=$(sed -n 's|.*serving \(http://127\.0\.0\.1:[0-9]*/\)?token=\([^ ]*\).*|\1 \2|p' "$work/serve.err")
[ -n "$url" ] || { cat "$work/serve.err"; exit 1; }
base=${url% *}
auth="Authorization: Bearer ${url#* }"

echo "machine: $(nproc) cores, $(uptime | sed 's/.*load/load/')"
(cd "$work" && ./service "$SECS" +RTS -N2 -hc -i1 -p "--eventlog-sink=unix:$work/s.sock?wait=60" \
    --eventlog-flush-interval=1 -RTS >"$work/service.out" 2>"$work/service.err") &
ppid=$!
pids+=("$ppid")

# report: one line of figures now.
report() {
    curl -sf -H "$auth" "${base}api/info" -o "$work/info.json" || { echo "no /api/info"; return; }
    python3 - "$work/info.json" "/proc/$spid/status" "$1" <<'PY'
import json, sys
i = json.load(open(sys.argv[1]))
st = dict(l.split(":", 1) for l in open(sys.argv[2]) if ":" in l)
kib = lambda k: int(st[k].split()[0])
a = i["aggr"]
print("%7s: %9d events; aggregates %6.2f MiB in memory, %7.2f MiB in side files "
      "(%d censuses, %d bands, %d spans of %d names, %d ticks of %d stacks); "
      "index %6.2f MiB; serve RSS %6.1f MiB (peak %6.1f)" % (
      sys.argv[3], i["events"], a["mem_bytes"] / 2**20, a["disk_bytes"] / 2**20,
      a["censuses"], a["bands"], a["spans"], a["span_names"], a["ticks"], a["stacks"],
      i["mem_bytes"] / 2**20, kib("VmRSS") / 1024, kib("VmHWM") / 1024))
PY
}

start=$(date +%s)
while kill -0 "$ppid" 2>/dev/null; do
    for _ in $(seq 60); do kill -0 "$ppid" 2>/dev/null || break; sleep 1; done
    report "$(( $(date +%s) - start ))s"
done
wait "$ppid" || { echo "the service failed:"; cat "$work/service.err"; exit 1; }
sleep 3
report "end"
for kind in heap durations profile; do
    ts=()
    for _ in 1 2 3 4 5; do
        ts+=("$(curl -sf -H "$auth" -o /dev/null -w '%{time_total}' "${base}api/$kind")")
    done
    printf '%s\n' "${ts[@]}" | sort -n | sed -n 3p | awk -v k="$kind" '{ printf "whole-run /api/%s: %.1f ms (median of 5)\n", k, $1 * 1000 }'
done
echo "machine after: $(uptime | sed 's/.*load/load/')"
