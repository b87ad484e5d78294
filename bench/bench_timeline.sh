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
# Then the same file under a 64-bin pyramid (bins as wide as a two-day
# live program's): the windows drawn from the chunk summaries.
# ThreadScope, when installed (apt-get install threadscope xvfb xauth),
# loads a BENCH_TIMELINE_TS_BYTES (2e8) synthetic file under xvfb-run for
# at most BENCH_TIMELINE_TS_SECONDS (300): its peak RSS and its time until
# its CPU time stops rising for 5 s (loaded), or "not loaded" at the end.
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
    "$top"/tools/timeline/{spool,index,pyramid,query,query_replay,query_emit,pauses,describe,aggr,aggr_query,aggr_profile,side}.c \
    "$top/tools/monitor/ccs.c" "$top/tools/monitor/strbuf.c" "$build/lib/.libs/libelscore.a" -lm -lpthread

file=${1:-}
if [ -z "$file" ]; then
    file=$work/synthetic.eventlog
    t0=$(date +%s.%N)
    ELS_TOP_SRCDIR=$top "$work/bench_timeline" gen "$file" "${BENCH_TIMELINE_BYTES:-2000000000}"
    echo "generated $(du -h "$file" | cut -f1) in $(echo "$(date +%s.%N) - $t0" | bc) s"
fi
echo "machine: $(nproc) cores, $(uptime | sed 's/.*load/load/')"
"$work/bench_timeline" run "$file"
echo
echo "the same, as bins after two days of a live program:"
"$work/bench_timeline" run "$file" 1500 64
echo "after: $(uptime | sed 's/.*load/load/')"

if command -v threadscope >/dev/null && command -v xvfb-run >/dev/null; then
    ts=$work/ts.eventlog
    ELS_TOP_SRCDIR=$top "$work/bench_timeline" gen "$ts" "${BENCH_TIMELINE_TS_BYTES:-200000000}"
    echo
    echo "ThreadScope vs this index on $(du -h "$ts" | cut -f1) ($(uptime | sed 's/.*load/load/')):"
    "$work/bench_timeline" run "$ts" | grep -E '^index|^\| timeline, whole|^peak'
    xvfb-run -a threadscope "$ts" >"$work/ts.out" 2>&1 &
    xvfb=$!
    pid=
    for _ in $(seq 100); do
        pid=$(pgrep -n -x threadscope || true)
        [ -n "$pid" ] && break
        sleep 0.2
    done
    start=$(date +%s.%N); busy=$start; last=-1; idle=0; peak=0; state="not loaded"
    while [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; do
        cpu=$(awk '{print $14 + $15}' "/proc/$pid/stat")
        rss=$(awk '/VmHWM/{print $2}' "/proc/$pid/status")
        [ "${rss:-0}" -gt "$peak" ] && peak=$rss
        if [ "$cpu" = "$last" ]; then idle=$((idle + 1)); else idle=0; busy=$(date +%s.%N); fi
        last=$cpu
        if [ $idle -ge 10 ]; then state=loaded; break; fi
        [ "$(echo "$(date +%s.%N) - $start > ${BENCH_TIMELINE_TS_SECONDS:-300}" | bc)" = 1 ] && break
        sleep 0.5
    done
    echo "threadscope: $state, $(echo "$busy - $start" | bc) s wall," \
         "$(echo "$last / $(getconf CLK_TCK)" | bc) s CPU, peak RSS $((peak / 1024)) MiB"
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    wait "$xvfb" 2>/dev/null || true
else
    echo "threadscope: not installed (apt-get install threadscope xvfb xauth)"
fi
