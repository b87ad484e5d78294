#!/usr/bin/env bash
# bench_timeline.sh: the zoomable timeline's figures (tools/timeline) on a
# large eventlog: one-pass index time, the latency of the queries a page
# makes (whole run, 10 s, 1 s, 100 ms, 1 ms windows; a 1 ms and a 1 s
# event list; a 1 s and the whole run's figures), and the peak RSS, with
# the load average beside them.  Goals (2 cores): first whole-run view
# <= 5 s (index + whole-run query), any zoom or pan <= 100 ms, RSS < 128
# MiB.
#
# Usage: bench/bench_timeline.sh [FILE]
#   FILE: an eventlog to index where it lies; without one, a synthetic
#   run of BENCH_TIMELINE_BYTES (2e9) bytes of a 300-thread, 2-cap
#   program in GHC 9.0.2's format is written to BENCH_TIMELINE_DIR
#   (${TMPDIR:-/tmp}) first (bench_timeline gen) and removed after.
# Builds bench_timeline with cc from the sources (no build tree needed
# beyond lib/.libs/libelscore.a from scripts/build.sh: BUILD_DIR, default
# _build).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${BUILD_DIR:-$top/_build}" && pwd)
work=$(mktemp -d "${BENCH_TIMELINE_DIR:-${TMPDIR:-/tmp}}/bench-timeline.XXXXXX")
trap 'rm -rf "$work"' EXIT
cc -O2 -g -D_GNU_SOURCE -I"$top/include" -I"$top/tools" -I"$build" \
    -o "$work/bench_timeline" "$top/bench/bench_timeline.c" \
    "$top"/tools/timeline/{spool,index,query,describe,aggr,aggr_query,side}.c \
    "$top/tools/profile_common.c" "$top/tools/monitor/strbuf.c" "$build/lib/.libs/libelscore.a" -lm -lpthread

file=${1:-}
if [ -z "$file" ]; then
    file=$work/synthetic.eventlog
    t0=$(date +%s.%N)
    ELS_TOP_SRCDIR=$top "$work/bench_timeline" gen "$file" "${BENCH_TIMELINE_BYTES:-2000000000}"
    echo "generated $(du -h "$file" | cut -f1) in $(echo "$(date +%s.%N) - $t0" | bc) s"
fi
echo "machine: $(nproc) cores, $(uptime | sed 's/.*load/load/')"
"$work/bench_timeline" run "$file"
echo "after: $(uptime | sed 's/.*load/load/')"
