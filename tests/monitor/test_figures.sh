#!/usr/bin/env bash
# test_figures.sh: every figure the live monitor shows, against the RTS's
# own accounts.
#
# tests/programs/Figures.hs (collections of both generations, allocation on
# every capability, heap censuses, thread stops of many kinds, user
# events; built with the patched RTS) runs at -N1, -N2 and -N4 with
# +RTS -hT, and once more built with -prof -fprof-auto at -N2 with -hc
# -p (time samples; the cost centre GHC names "producer.go.\"); each run
# writes its eventlog to a file (+RTS -l -ol) and the RTS's report
# (+RTS -s).  For each run the views read that file: `top --once
# --json`, `top --once`'s text, and `serve FILE`'s /api/state (the
# page's data), /metrics and, profiled, the speedscope export.
# tests/monitor/figures.py then computes every figure from sources that
# are not the monitor and compares: collections per generation, the
# longest and total pause per generation and the bytes allocated from
# +RTS -s (allowing only -s's rounding); from `ghc-events show` of the
# same eventlog the GC starts, the collections' leaders and their
# pauses (p50, histogram), each capability's last HEAP_ALLOCATED summed,
# thread stops by reason and the time from each stop to the thread's
# next run, the last census's time, bands and their order, the cost
# centres' names and time samples (the RTS's own apart); events and
# bytes by type from a walk of the file's bytes (checked against
# ghc-events' counts); the stop reasons' names from GHC's Constants.h.
# The table of figures (view, ours, independent) is printed as notes.
# Skips without GHC, ghc-events, the patched RTS, GHC's profiling
# libraries (Debian's ghc-prof), curl or python3.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"
. "$(dirname "$0")/../ghcprog.sh"
. "$(dirname "$0")/../monitor/monitor.sh"

command -v curl >/dev/null 2>&1 || skip "curl not installed"
command -v python3 >/dev/null 2>&1 || skip "python3 not installed"
require_tool
require_ghc
require_patched_rts
ghc_libdir=$("$GHC" --print-libdir) || fail "$GHC --print-libdir failed"
[ -f "$ghc_libdir/rts/libHSrts_thr_p.a" ] \
    || skip "GHC's profiling libraries are not installed (Debian package ghc-prof)"
# Always -O: unoptimised profiled code meets GHC 9.0.2's "PAP object
# entered" crash during heap censuses (README, "Profiled programs").
setup_ghc_program_test figures Figures -O
FIGURES=$GHC_PROGRAM
build_ghc_program figures-prof Figures patched_ghc_lib -threaded -eventlog -rtsopts \
    -O -prof -fprof-auto
FIGURES_PROF=$GHC_PROGRAM
# Programs and serve announce nothing into other tests' directory.
export XDG_RUNTIME_DIR=$T/run
mkdir -m 700 "$XDG_RUNTIME_DIR" || fail "mkdir $XDG_RUNTIME_DIR"
GHC_CONSTANTS_H=$("$GHC" --print-libdir)/include/rts/Constants.h
export GHC_CONSTANTS_H
[ -f "$GHC_CONSTANTS_H" ] || fail "no $GHC_CONSTANTS_H"

# get PATH OUT: GET PATH from the serve started last, with the token its
# start-up URL (?token=) gives, as "Authorization: Bearer", as a scraper
# sends it.  A serve that printed no token fails the test: every route
# needs one.
get() {
    local token
    case $SERVE_URL in
    *'?token='*) token=${SERVE_URL#*\?token=} ;;
    *) fail "serve's start-up line gives no token: $SERVE_URL" ;;
    esac
    curl -sf --max-time 10 -H "Authorization: Bearer $token" \
        "http://127.0.0.1:$PORT/$1" -o "$2"
}

# read_all NAME WANT: serve's /api/state shows the stream ended with
# WANT events.
read_all() {
    get api/state "$T/$1.api.json" &&
        [ "$(json_get "$T/$1.api.json" source.ended events.total)" = "true $2" ]
}

# run NAME PROGRAM RTS-OPTIONS...: the program to its end, its eventlog
# in $T/NAME.eventlog and +RTS -s in $T/NAME.stats; then every view of
# that file, and figures.py's verdict.
run() {
    local name=$1 prog=$2 log=$T/$1.eventlog prof= total
    shift 2
    case $name in prof*) prof=--prof ;; esac
    "$prog" +RTS "$@" -l "-ol$log" "-s$T/$name.stats" -RTS </dev/null \
        >"$T/$name.out" 2>"$T/$name.err" \
        || fail_showing "$T/$name.err" "$name: the program failed"
    grep -q '^done [0-9]' "$T/$name.out" || fail_showing "$T/$name.out" "$name: the program did not finish"
    grep -qx 'census 0 0' "$T/$name.out" \
        || fail_showing "$T/$name.out" "$name: the program could not stop the heap profile timer or ask for a census"
    show_events "$log" "$T/$name.show" || fail "$name: ghc-events cannot parse $log"
    total=$(count_events "$log") || fail "$name: ghc-events cannot count $log"
    "$ELS_SINK_TOOL" top --once --json "$log" >"$T/$name.json" 2>"$T/$name.top.err" \
        || fail_showing "$T/$name.top.err" "$name: top --once --json failed"
    "$ELS_SINK_TOOL" top --once "$log" >"$T/$name.txt" 2>&1 </dev/null \
        || fail_showing "$T/$name.txt" "$name: top --once failed"
    start_serve "$name" "$log"
    wait_until 60 read_all "$name" "$total" \
        || fail_showing "$T/$name.api.json" "$name: serve's /api/state never showed the whole file ($total events)"
    get metrics "$T/$name.metrics" || fail "$name: GET /metrics failed"
    get api/speedscope "$T/$name.speedscope.json" || fail "$name: GET /api/speedscope failed"
    kill -TERM "$spid"
    wait_pid "$spid" 30 || fail "$name: serve did not exit on SIGTERM"
    "$PYTHON" "$ELS_TOP_SRCDIR/tests/monitor/figures.py" "$name" "$T" $prof \
        >"$T/$name.figures" 2>&1 || {
        grep -v ' ok$' "$T/$name.figures" | sed 's/^/#   /' >&2
        fail "$name: the monitor's figures differ from the RTS's accounts (above; all in $T/$name.figures)"
    }
    tail -n 1 "$T/$name.figures" | sed 's/^# //' | while read -r l; do note "$l"; done
}

for n in 1 2 4; do
    run "n$n" "$FIGURES" "-N$n" -hT -i0.05
done
run prof2 "$FIGURES_PROF" -N2 -hc -p -i0.05

# The table: one line per figure and run (view, ours | independent).
for what in "GC collections (+RTS -s colls)" "gen 0 collections (+RTS -s)" \
        "gen 1 collections (+RTS -s)" "gen 0 max pause s (+RTS -s, %.4f)" \
        "gen 1 max pause s (+RTS -s, %.4f)" "bytes allocated (+RTS -s)" \
        "GC starts, every capability's (ghc-events)" "census bands (ghc-events)" \
        "stops by status (ghc-events)" "time from stop to next run ns (ghc-events)"; do
    awk -F'\t' -v w="$what" '$2 == "top --json" && $3 == w {
        printf "%s %s: ours %s, independent %s\n", $1, $3, substr($4, 1, 90), substr($5, 1, 90) }' \
        "$T/table.tsv" | while read -r l; do note "$l"; done
done

# dump's own spelling of the cost centre (its converters make band names
# hp2ps tokens): told, not judged here.
"$ELS_SINK_TOOL" dump --hp "$T/prof2.hp" "$T/prof2.eventlog" >/dev/null 2>&1 \
    || fail "dump --hp failed on the profiled run"
note "dump --hp spells the lambda's band: $(grep -o 'producer\.go\.[^/	]*' "$T/prof2.hp" | sort -u | tr '\n' ' ')"
echo "PASS: $els_test_name"
