#!/usr/bin/env bash
# bench_timeline_aggr.sh: the memory the timeline's aggregates (heap
# censuses, spans, cost-centre ticks: tools/timeline/aggr.h) hold after a
# long profiled run, and the latency of their queries.
#
# Usage: bench/bench_timeline_aggr.sh [FILE]
#   FILE: an eventlog (a profiled program's, run with -hc -p and spans)
#   indexed where it lies; without one, a synthetic profiled run of
#   BENCH_TIMELINE_BYTES (2e9) bytes is written to BENCH_TIMELINE_DIR
#   (${TMPDIR:-/tmp}) first and removed after.  The side files go to
#   TMPDIR as well.  Builds with cc from the sources (lib/.libs/libelscore.a
#   from scripts/build.sh: BUILD_DIR, default _build).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${BUILD_DIR:-$top/_build}" && pwd)
work=$(mktemp -d "${BENCH_TIMELINE_DIR:-${TMPDIR:-/tmp}}/bench-aggr.XXXXXX")
trap 'rm -rf "$work"' EXIT
cc -O2 -g -D_GNU_SOURCE -I"$top/include" -I"$top/tools" -I"$build" \
    -o "$work/bench_timeline_aggr" "$top/bench/bench_timeline_aggr.c" \
    "$top"/tools/timeline/{spool,index,pyramid,query,query_replay,query_emit,pauses,describe,aggr,aggr_query,aggr_profile,side}.c \
    "$top/tools/monitor/ccs.c" "$top/tools/monitor/strbuf.c" \
    "$build/lib/.libs/libelscore.a" -lm -lpthread

file=${1:-}
if [ -z "$file" ]; then
    file=$work/synthetic.eventlog
    ELS_TOP_SRCDIR=$top "$work/bench_timeline_aggr" gen "$file" "${BENCH_TIMELINE_BYTES:-2000000000}"
    echo "generated $(du -h "$file" | cut -f1)"
fi
echo "machine: $(nproc) cores, $(uptime | sed 's/.*load/load/')"
"$work/bench_timeline_aggr" run "$file"
