#!/usr/bin/env bash
# test_analysis.sh: the page's analysis views (heap by band over time,
# the durations table, the cost-centre flame graph, the longest GC
# pauses: tools/monitor/web/)
# on real runs, in headless Chromium, against independent readers.
#
# tests/programs/Durations.hs (labelled workers on -N2, requests in
# withSpan "request", a leaking cache, begin/stop markers, START/STOP
# messages, throwing spans) runs twice on the patched RTS:
#  - plain with -hT, its eventlog on a unix: sink that serve reads live
#    (the live page);
#  - profiled (-prof -fprof-auto) with -hc -p into a file that serve
#    indexes where it lies (the file page), beside the RTS's own .hp.
# For each run the directory $T/NAME holds NAME.eventlog (for the live
# run, the stream serve saved), NAME.show (`ghc-events show`),
# NAME.dump.hp (`eventlog-sink dump --hp`) and, for the profiled run,
# the RTS's rts.hp.  Then each view's driver, tests/monitor/analysis/
# VIEW.js, drives the page at serve's URL and compares what it shows with
# what it computes itself from those files:
#
#     node tests/monitor/analysis/VIEW.js SRCDIR URL RUNDIR NAME SHOTDIR
#
# ELS_ANALYSIS_VIEWS="heap ..." runs only those views' drivers (while
# working on one; .ci/run clears every ELS_* setting).
# Skips (77) without the patched RTS, GHC, GHC's profiling libraries,
# ghc-events, curl, python3, chromium, node or playwright-core
# (scripts/install-node-deps.sh).
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"
. "$(dirname "$0")/../ghcprog.sh"
. "$(dirname "$0")/monitor.sh"

require_page_tools
setup_durations_programs
deadline_set 600
export XDG_RUNTIME_DIR=$T/run
mkdir -m 700 "$XDG_RUNTIME_DIR" "$T/spool" || fail "mkdir"
export TMPDIR=$T
SHOTS=${ELS_ANALYSIS_SHOTS:-$T}

# readers NAME: ghc-events show and dump --hp of $T/NAME/NAME.eventlog.
readers() {
    local d=$T/$1
    "$GHC_EVENTS" show "$d/$1.eventlog" >"$d/$1.show" || fail "$1: ghc-events show"
    "$ELS_SINK_TOOL" dump --hp "$d/$1.dump.hp" "$d/$1.eventlog" >/dev/null 2>"$d/dump.err" \
        || fail_showing "$d/dump.err" "$1: dump --hp failed"
}

# info_events: /api/info's event count (0 when it does not answer).
info_events() {
    scurl -sf --max-time 10 "http://127.0.0.1:$PORT/api/info" -o "$T/info.json" \
        && json_get "$T/info.json" events || echo 0
}
# shown_events NAME: the events ghc-events lists for run NAME.
shown_events() {
    awk '/^Events:$/ { on = 1; next } on && /^ *[0-9]+: / { n++ } END { print n + 0 }' "$T/$1/$1.show"
}

# views NAME: every view's driver on the page serve shows for run NAME.
views() {
    local v rc
    for v in ${ELS_ANALYSIS_VIEWS:-heap durations flame pauses}; do
        node "$ELS_TOP_SRCDIR/tests/monitor/analysis/$v.js" "$ELS_TOP_SRCDIR" "$SERVE_URL" \
            "$T/$1" "$1" "$SHOTS" >"$T/$1.$v.out" 2>&1
        rc=$?
        sed "s/^/# $1 $v: /" "$T/$1.$v.out"
        [ $rc = 0 ] || fail "$1: the page's $v view differs from what the stream says"
    done
}

# --- live: the plain run, -hT -------------------------------------------
mkdir "$T/plain" || fail "mkdir"
start_serve plain "unix:$T/plain.sock" --interval 0.2 --spool-dir "$T/spool"
(cd "$T/plain" && "$PLAIN" +RTS -N2 -hT -i0.002 -A64k "--eventlog-sink=unix:$T/plain.sock?wait=60" \
    --eventlog-flush-interval=0.2 -RTS </dev/null >out 2>err) \
    || fail_showing "$T/plain/err" "plain: the program failed"
grep -q '^done [0-9]' "$T/plain/out" || fail_showing "$T/plain/out" "plain: the program did not finish"
ended() { state plain && grep -q '"ended":true' "$T/plain.state"; }
wait_until 60 ended || fail_showing "$T/plain.state" "serve did not see the stream end"
cp "$T/plain.saved" "$T/plain/plain.eventlog" || fail "no saved stream"
readers plain
want=$(shown_events plain)
indexed() { [ "$(info_events)" = "$want" ]; }
wait_until 60 indexed || fail_showing "$T/info.json" "/api/info counts $(info_events) events, ghc-events $want"
views plain
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null

# --- file: the profiled run, -hc -p ---------------------------------------
mkdir "$T/prof" || fail "mkdir"
(cd "$T/prof" && "$PROF" +RTS -N2 -hc -p -i0.01 -A64k -l "-ol$T/prof/prof.eventlog" -RTS \
    </dev/null >out 2>err) || fail_showing "$T/prof/err" "prof: the program failed"
grep -q '^done [0-9]' "$T/prof/out" || fail_showing "$T/prof/out" "prof: the program did not finish"
rts_hp=$(ls "$T"/prof/*.hp | grep -v '\.dump\.hp$' | head -n 1)
[ -s "$rts_hp" ] || fail "the profiled run wrote no .hp"
mv "$rts_hp" "$T/prof/rts.hp"
readers prof
start_serve prof "$T/prof/prof.eventlog" --interval 0.2 --spool-dir "$T/spool"
want=$(shown_events prof)
wait_until 60 indexed || fail_showing "$T/info.json" "/api/info counts $(info_events) events, ghc-events $want"
views prof
exit 0
