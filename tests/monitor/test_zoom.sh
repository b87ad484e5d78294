#!/usr/bin/env bash
# test_zoom.sh: serve's zoomable timeline (tools/serve/timeline.c, the
# page's tools/monitor/web/zoom.js) on a real program, in headless
# Chromium, against the independent reader, ghc-events show.
#
# tests/programs/Zoom.hs (labelled workers on -N2 that allocate, an MVar
# hand-over to a labelled consumer, markers, START/STOP spans, and the
# markers "zoom-target" half-way, each after sparks and a collection)
# runs on the patched RTS into a unix: sink that serve reads live
# (--spool-dir: the spool is a private 0700 directory there while the
# stream runs).  tests/monitor/zoom.js then zooms the page with the mouse
# onto about 1 ms around a "zoom-target" (the first whose window holds,
# in ghc-events, what its checks need) and checks the event list, the
# painted lanes (threads, GC, heap, sparks), the labels and stop reasons,
# a selection's figures and a reload against ghc-events show of the
# stream serve saved (--save); the same again on `serve FILE` of that
# saved stream (indexed where it lies: no spool).  Last, under `serve
# --all` the program's page, /api/state and /api/timeline still answer
# after it exited, and /api/programs lists it as ended.
#
# Skips (77) without the patched RTS, GHC, ghc-events, curl, python3,
# chromium, node or playwright-core (scripts/install-node-deps.sh).
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"
. "$(dirname "$0")/../ghcprog.sh"
. "$(dirname "$0")/monitor.sh"

require_page_tools
setup_ghc_program_test zoom Zoom
ZOOM=$GHC_PROGRAM
deadline_set 600
export XDG_RUNTIME_DIR=$T/run
mkdir -m 700 "$XDG_RUNTIME_DIR" "$T/spool" || fail "mkdir"
SHOTS=${ELS_ZOOM_SHOTS:-$T}

# run_zoom NAME SOCK: the program into a unix: sink at SOCK (waiting for
# serve), flushed every 0.2 s; waits until it exits.
run_zoom() {
    "$ZOOM" +RTS -N2 -A256k "--eventlog-sink=unix:$2?wait=60" \
        --eventlog-flush-interval=0.2 -RTS >"$T/$1.out" 2>"$T/$1.err" \
        || fail_showing "$T/$1.err" "$1: Zoom exited with $?"
    grep -q done "$T/$1.out" || fail_showing "$T/$1.out" "$1: Zoom did not finish"
}

# info_events NAME: /api/info's event count (0 when it does not answer).
info_events() {
    scurl -sf --max-time 10 "http://127.0.0.1:$PORT/api/info" -o "$T/$1.info" \
        && json_get "$T/$1.info" events || echo 0
}

# --- live ---------------------------------------------------------------
start_serve live "unix:$T/zoom.sock" --interval 0.2 --spool-dir "$T/spool"
run_zoom live "$T/zoom.sock" &
zpid=$!
bg_register "$zpid"
spooled() { [ -n "$(ls -A "$T/spool")" ]; }
wait_until 60 spooled || fail "no spool directory under --spool-dir while the stream runs"
sp=$(ls -d "$T"/spool/*)
[ "$(stat -c %a "$sp")" = 700 ] || fail "the spool directory $sp has mode $(stat -c %a "$sp"), not 700"
wait "$zpid" || fail "the program failed"
live_ended() { state live && grep -q '"ended":true' "$T/live.state"; }
wait_until 60 live_ended \
    || fail_showing "$T/live.state" "serve did not see the stream end"
"$GHC_EVENTS" show "$T/live.saved" >"$T/shown" || fail "ghc-events show $T/live.saved"
want=$(awk '/^Events:$/ { on = 1; next } on && /^ *[0-9]+: / { n++ } END { print n + 0 }' "$T/shown")
indexed() { [ "$(info_events "$1")" = "$want" ]; }
wait_until 30 indexed live \
    || fail_showing "$T/live.info" "/api/info counts $(info_events live) events, ghc-events $want"
note "live: $want events indexed, as ghc-events shows; spool $sp (mode 700)"

# The old column timeline is gone; the new routes need the token too.
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/api/timeline")
[ "$code" = 401 ] || fail "GET /api/timeline without the token: $code, expected 401"
code=$(scurl -s -o "$T/bad.json" -w '%{http_code}' "http://127.0.0.1:$PORT/api/timeline?t0=5&t1=1")
[ "$code" = 400 ] || fail_showing "$T/bad.json" "t1 < t0: $code, expected 400"

node "$ELS_TOP_SRCDIR/tests/monitor/zoom.js" "$ELS_TOP_SRCDIR" "$SERVE_URL" "$T/shown" zoom-target \
    "$SHOTS/monitor-zoom.png" >"$T/node-live.out" 2>&1
rc=$?
sed 's/^/# live: /' "$T/node-live.out"
[ $rc = 0 ] || fail "the page's timeline differs from ghc-events on the live stream"

kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
[ ! -e "$sp" ] || fail "serve left its spool $sp behind after it stopped"

# --- FILE -----------------------------------------------------------------
cp "$T/live.saved" "$T/run.eventlog"
start_serve file "$T/run.eventlog" --interval 0.2 --spool-dir "$T/spool"
wait_until 30 indexed file \
    || fail_showing "$T/file.info" "serve FILE: /api/info counts $(info_events file) events, ghc-events $want"
[ -z "$(ls -A "$T/spool")" ] || fail "serve FILE made a spool: $(ls -A "$T/spool")"
node "$ELS_TOP_SRCDIR/tests/monitor/zoom.js" "$ELS_TOP_SRCDIR" "$SERVE_URL" "$T/shown" zoom-target \
    "$T/file.png" >"$T/node-file.out" 2>&1
rc=$?
sed 's/^/# file: /' "$T/node-file.out"
[ $rc = 0 ] || fail "the page's timeline differs from ghc-events on serve FILE"
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null

# --- serve --all: a program's page after it exited --------------------------
start_serve_all --interval 0.2 --spool-dir "$T/spool" --keep-ended 2
run_zoom all "$T/all.sock" &
zpid=$!
bg_register "$zpid"
programs() { scurl -sf --max-time 10 "http://127.0.0.1:$PORT/api/programs" -o "$T/programs.json"; }
followed() { programs && grep -q '"pid"' "$T/programs.json"; }
listed_ended() { programs && grep -q '"ended":true' "$T/programs.json"; }
wait_until 60 followed \
    || fail "serve --all did not follow the program"
apid=$(scurl -sf "http://127.0.0.1:$PORT/api/programs" | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["programs"][0]["pid"])')
wait "$zpid" || fail "the program failed"
wait_until 60 listed_ended \
    || fail_showing "$T/programs.json" "/api/programs does not list the exited program as ended"
sleep 1.5       # a scan or two later: still there
for p in api/state api/info "api/timeline?px=100" ""; do
    code=$(scurl -s -o "$T/after.out" -w '%{http_code}' "http://127.0.0.1:$PORT/p/$apid/$p")
    [ "$code" = 200 ] || fail_showing "$T/after.out" "/p/$apid/$p answers $code after the program exited"
done
n=$(scurl -sf "http://127.0.0.1:$PORT/p/$apid/api/info" | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["events"])')
[ "${n:-0}" -gt 1000 ] || fail "the exited program's timeline holds ${n:-no} events"
ls -d "$T"/spool/* >/dev/null 2>&1 || fail "the exited program's spool is gone"
scurl -sf "http://127.0.0.1:$PORT/metrics" | grep -q "pid=\"$apid\"" \
    && fail "the exited program's series stay in /metrics"
note "serve --all: pid $apid exited; its page, /api/state and /api/timeline ($n events) still answer, listed as ended"
exit 0
