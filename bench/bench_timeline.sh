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
#   run of BENCH_TIMELINE_BYTES (2.921e9: 170 M events, the first-view
#   goal's count) bytes of a 300-thread, 2-cap
#   program in GHC 9.0.2's format is written to BENCH_TIMELINE_DIR
#   (${TMPDIR:-/tmp}) first (bench_timeline gen) and removed after.
# Then `eventlog-sink serve FILE` (BUILD_DIR's) as a user runs it: the
# seconds to its first whole-run view and to its model's figures of the
# whole file, and its peak RSS; BENCH_TIMELINE_SERVE_RUNS (5) times
# with the file in the page cache (warm) and their median, then once
# with its cached pages dropped (cold).
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

# serve_first_view FILE HOW: `eventlog-sink serve FILE` as a user starts
# it: seconds until /api/info says the whole file is indexed and the
# whole-run /api/timeline (1500 px) has answered (the page's first
# whole-run view), and until the model has read the file whole (the
# page's figures), serve's CPU seconds at the first, and its peak RSS;
# one line, HOW its first word.  Sets $view.
serve_first_view() {
    local f=$1 how=$2 size tok port t0 model= info first last pid cpu=
    view=
    size=$(stat -c %s "$f")
    tok=$work/token
    head -c 48 /dev/urandom | base64 | tr -dc A-Za-z0-9 | head -c 40 >"$tok"
    chmod 600 "$tok"
    port=$((20000 + RANDOM % 20000))
    t0=$(date +%s.%N)
    "$build/tools/eventlog-sink" serve "$f" --listen "127.0.0.1:$port" \
        --token-file "$tok" >"$work/serve.out" 2>&1 &
    pid=$!
    get() { curl -s -H "X-Eventlog-Sink-Token: $(cat "$tok")" "http://127.0.0.1:$port$1"; }
    while [ -z "$view" ] || [ -z "$model" ]; do
        kill -0 "$pid" 2>/dev/null || { cat "$work/serve.out" >&2; return 1; }
        if [ -z "$view" ]; then
            info=$(get /api/info 2>/dev/null || true)
            if [ "$(echo "$info" | grep -o '"file_indexed":[0-9]*' | cut -d: -f2)" = "$size" ]; then
                first=$(echo "$info" | grep -o '"t_first":[0-9]*' | head -n 1 | cut -d: -f2)
                last=$(echo "$info" | grep -o '"t_last":[0-9]*' | head -n 1 | cut -d: -f2)
                get "/api/timeline?t0=$first&t1=$last&px=1500" | grep -q '"caps":\[' \
                    || { echo "serve: no whole-run view" >&2; return 1; }
                view=$(echo "$(date +%s.%N) - $t0" | bc)
                cpu=$(awk '{print ($14 + $15) / 100}' "/proc/$pid/stat")
            fi
        fi
        if [ -z "$model" ] && get /api/state 2>/dev/null | grep -o '"source":{[^}]*' \
                | grep -q "\"bytes\":$size,"; then
            model=$(echo "$(date +%s.%N) - $t0" | bc)
        fi
        sleep 0.05
    done
    printf '%-5s whole-run view after %5.2f s (serve CPU %5.2f s), the model'"'"'s figures after %5.2f s, peak RSS %s MiB\n' \
        "$how" "$view" "$cpu" "$model" "$(awk '/VmHWM/{print int($2 / 1024)}' "/proc/$pid/status")"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
}

# serve_first_views FILE: BENCH_TIMELINE_SERVE_RUNS (5) runs with FILE
# read into the page cache just before (warm: a file just written or
# just looked at), their median, then one with FILE's cached pages
# dropped (cold: the disk's pace; dd's nocache needs no privilege).
serve_first_views() {
    local f=$1 views=() i
    echo "serve FILE ($(uptime | sed 's/.*load/load/')):"
    for i in $(seq "${BENCH_TIMELINE_SERVE_RUNS:-5}"); do
        cat "$f" >/dev/null
        serve_first_view "$f" warm
        views+=("$view")
    done
    echo "warm: median whole-run view after $(printf '%s\n' "${views[@]}" | sort -n \
        | awk '{v[NR] = $1} END {print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}') s"
    if dd if="$f" iflag=nocache count=0 status=none 2>/dev/null; then
        serve_first_view "$f" cold
    else
        echo "cold: not measured (dd could not drop the file's cached pages)"
    fi
}

file=${1:-}
if [ -z "$file" ]; then
    file=$work/synthetic.eventlog
    t0=$(date +%s.%N)
    ELS_TOP_SRCDIR=$top "$work/bench_timeline" gen "$file" "${BENCH_TIMELINE_BYTES:-2921000000}"
    echo "generated $(du -h "$file" | cut -f1) in $(echo "$(date +%s.%N) - $t0" | bc) s"
fi
echo "machine: $(nproc) cores, $(uptime | sed 's/.*load/load/')"
"$work/bench_timeline" run "$file"
echo
serve_first_views "$file"
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
