#!/usr/bin/env bash
# test_timeline_aggr.sh: the timeline's aggregates (tools/timeline/aggr.h:
# kind=heap, durations, spans, profile) on real runs, against independent
# readers.
#
# tests/programs/Durations.hs (labelled workers on -N2, requests in
# withSpan "request", a leaking cache, begin/stop markers, START/STOP
# messages, spans whose action throws) is built with the patched RTS
# twice: plain, run with -hT, and profiled (-prof -fprof-auto), run with
# -hc -p.  aggr.py then checks, through tl_driver:
#  - kind=heap: every census and every band equal `eventlog-sink dump
#    --hp` (times as its %f seconds, bytes), and for the profiled run the
#    RTS's own .hp (bands without their stack numbers, which the eventlog
#    does not carry); the last census per pixel when px is small; the
#    growth ranking's first band is the one that grew most in the .hp,
#    and in the profiled run the leaking cost centre's;
#  - kind=durations: count, total, p50, p99 (nearest rank), max and the
#    longest instance per name equal the pairs it matches itself from
#    `ghc-events show`, over the whole run and over its middle third;
#    the five throwing spans are all closed; kind=spans counts the spans
#    overlapping the third;
#  - kind=profile: the ticks of the whole run and of its middle third,
#    per stack, equal those `ghc-events show` lists there (tree and
#    speedscope), the RTS's own cost centres apart.
#
# Skips (77) without GHC, ghc-events, the patched RTS or GHC's profiling
# libraries (Debian's ghc-prof).
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"
. "$(dirname "$0")/../ghcprog.sh"

command -v python3 >/dev/null 2>&1 || skip "python3 not found"
driver=$ELS_TOP_BUILDDIR/tests/timeline/tl_driver
[ -x "$driver" ] || fail "tl_driver not built: $driver"
setup_durations_programs
export XDG_RUNTIME_DIR=$T/run
mkdir -m 700 "$XDG_RUNTIME_DIR" || fail "mkdir $XDG_RUNTIME_DIR"
export TMPDIR=$T

# run NAME PROGRAM RTS-OPTIONS...: in $T/NAME/, the eventlog NAME.eventlog,
# ghc-events' lines NAME.show and dump --hp's NAME.dump.hp.
run() {
    local name=$1 prog=$2 d=$T/$1
    shift 2
    mkdir -p "$d"
    (cd "$d" && "$prog" +RTS "$@" -l "-ol$d/$name.eventlog" -RTS </dev/null >"$d/out" 2>"$d/err") \
        || fail_showing "$d/err" "$name: the program failed"
    grep -q '^done [0-9]' "$d/out" || fail_showing "$d/out" "$name: the program did not finish"
    "$GHC_EVENTS" show "$d/$name.eventlog" >"$d/$name.show" || fail "$name: ghc-events show"
    "$ELS_SINK_TOOL" dump --hp "$d/$name.dump.hp" "$d/$name.eventlog" >/dev/null 2>"$d/dump.err" \
        || fail_showing "$d/dump.err" "$name: dump --hp failed"
}

run plain "$PLAIN" -N2 -hT -i0.002 -A64k
python3 "$ELS_TOP_SRCDIR/tests/timeline/aggr.py" "$driver" "$T/plain/plain.eventlog" \
    "$T/plain/plain.show" "$T/plain/plain.dump.hp" - - \
    || fail "the aggregates differ from ghc-events or dump --hp on the -hT run"

run prof "$PROF" -N2 -hc -p -i0.01 -A64k
rts_hp=$(ls "$T"/prof/*.hp | grep -v '\.dump\.hp$' | head -n 1)
[ -s "$rts_hp" ] || fail "the profiled run wrote no .hp"
python3 "$ELS_TOP_SRCDIR/tests/timeline/aggr.py" "$driver" "$T/prof/prof.eventlog" \
    "$T/prof/prof.show" "$T/prof/prof.dump.hp" "$rts_hp" leak \
    || fail "the aggregates differ from ghc-events, dump --hp or the RTS's .hp on the -hc run"

# serve answers the same kinds at /api/KIND, behind its token, with the
# engine's own answer (tl_driver's, checked above) for the whole run; a
# file is indexed by a thread of serve's timeline (tools/serve/timeline.c,
# Note [Index thread]).  Then the file is replaced by the -hT run's: a
# new run, indexed whole by a new thread.
cp "$T/prof/prof.eventlog" "$T/served.eventlog" || fail "cp"
"$ELS_SINK_TOOL" serve --listen 127.0.0.1:0 "$T/served.eventlog" \
    >"$T/serve.out" 2>"$T/serve.err" &
spid=$!
bg_register "$spid"
wait_until 30 grep -q 'serving http://' "$T/serve.err" \
    || fail_showing "$T/serve.err" "serve did not start listening"
url=$(sed -n 's|.*serving \(http://127\.0\.0\.1:[0-9]*/\)?token=\([^ ]*\).*|\1 \2|p' "$T/serve.err")
base=${url% *} token=${url#* }
[ -n "$base" ] && [ -n "$token" ] || fail_showing "$T/serve.err" "no URL with a token"
"$driver" "$T/prof/prof.eventlog" info "" >"$T/info.want" || fail "tl_driver info"
want_events=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["events"])' "$T/info.want")
info_field() {
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2]))' "$T/info.have" "$1"
}
# indexed EVENTS [RUN]: serve's /api/info counts EVENTS (in a run after RUN)
indexed() {
    curl -sf -H "Authorization: Bearer $token" "${base}api/info" -o "$T/info.have" &&
        [ "$(info_field events)" = "$1" ] && [ "$(info_field run)" -gt "${2:-0}" ]
}
wait_until 60 indexed "$want_events" || fail_showing "$T/info.have" "serve never indexed the file's $want_events events"
code=$(curl -s -o /dev/null -w '%{http_code}' "${base}api/durations")
[ "$code" = 401 ] || fail "/api/durations without the token answered $code, not 401"
# same_as_engine FILE KIND...: serve's /api/KIND equals tl_driver's on FILE
same_as_engine() {
    local file=$1 kind
    shift
    for kind in "$@"; do
        "$driver" "$file" "$kind" "" >"$T/$kind.want" || fail "tl_driver $kind"
        curl -sf -H "Authorization: Bearer $token" "${base}api/$kind" -o "$T/$kind.have" \
            || fail "serve's /api/$kind failed"
        python3 - "$T/$kind.want" "$T/$kind.have" <<'PY' || fail "serve's /api/$kind differs from the engine's answer on $file"
import json, sys
want, have = (json.load(open(f)) for f in sys.argv[1:3])
for k in sorted(set(want) | set(have)):
    if want.get(k) != have.get(k):
        print("FAIL: %s: engine %.200s, serve %.200s" % (k, json.dumps(want.get(k)), json.dumps(have.get(k))))
        sys.exit(1)
PY
        echo "# serve's /api/$kind equals the engine's ($(wc -c <"$T/$kind.have") bytes)"
    done
}
same_as_engine "$T/prof/prof.eventlog" heap durations spans profile
run1=$(info_field run)

cp "$T/plain/plain.eventlog" "$T/served.new" && mv "$T/served.new" "$T/served.eventlog" \
    || fail "replacing the served file"
"$driver" "$T/plain/plain.eventlog" info "" >"$T/info.want" || fail "tl_driver info"
want_events=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["events"])' "$T/info.want")
wait_until 60 indexed "$want_events" "$run1" \
    || fail_showing "$T/info.have" "serve never indexed the replacing file's $want_events events in a new run"
same_as_engine "$T/plain/plain.eventlog" heap durations spans
exit 0
