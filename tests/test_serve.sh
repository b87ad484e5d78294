#!/usr/bin/env bash
# test_serve.sh: `eventlog-sink serve`, the live web page, in a real
# browser.
#
# serve reads a live -N2 program on the patched RTS from a unix: sink
# (and saves the stream it receives).  Headless Chromium (Debian package
# chromium, driven over the DevTools protocol by tests/monitor/browser.py)
# loads the page while the program is running; the GC, thread, user
# message and marker counts the page's DOM shows equal what ghc-events
# reads from the same stream, and the timeline has been drawn; a
# screenshot is kept (tests/monitor/serve.png in the build tree).  Two
# more clients follow the live updates (Server-Sent Events) at the same
# time.  Bad HTTP input gets the right 4xx (5xx for an unsupported
# version) and leaves serve unharmed, and a Host that is not loopback
# gets 403 (DNS rebinding); the page shows the stream's end
# once the program exits, and serve reconnects to the program's next run.  Skips without chromium, curl, python3, GHC,
# ghc-events or the patched RTS.
set -u -o pipefail

. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ghcprog.sh"
. "$(dirname "$0")/monitor/monitor.sh"

CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[ -n "$CHROMIUM" ] || skip "chromium not installed (scripts/install-deps.sh)"
command -v curl >/dev/null 2>&1 || skip "curl not installed"
command -v python3 >/dev/null 2>&1 || skip "python3 not installed"
monitor_setup

PHASES=2
start_serve live "unix:$T/p.sock"
start_busy_live live "$PHASES" "$T/p.sock"
wait_all_markers live "$PHASES"

# Two live followers besides the browser.
for i in 1 2; do
    curl -sN --max-time 60 "http://127.0.0.1:$PORT/events" >"$T/sse$i.out" 2>/dev/null &
    bg_register $!
done

# --- The page in a browser, against the live program ---------------------
size_before=$(wc -c <"$T/live.saved")
ready='document.getElementById("markers").textContent == "'$(( 2 * PHASES + 1 ))'"
       && document.getElementById("speedscope").href.indexOf("from=") > 0'
values='({gc: document.getElementById("gc-count").textContent,
         threads: document.getElementById("threads-created").textContent,
         msgs: document.getElementById("user-messages").textContent,
         markers: document.getElementById("markers").textContent,
         program: document.getElementById("program").textContent,
         loss: document.getElementById("loss").textContent})'
"$PYTHON" "$ELS_TOP_SRCDIR/tests/monitor/browser.py" "$CHROMIUM" \
    "http://127.0.0.1:$PORT/" "$ready" "$values" "$T/serve.png" 90 \
    >"$T/dom.json" 2>"$T/browser.err" \
    || fail_showing "$T/browser.err" "the browser could not read the page"
size_after=$(wc -c <"$T/live.saved")
[ "$size_before" -eq "$size_after" ] \
    || fail "the stream grew while the page was read ($size_before -> $size_after bytes): the program was not idle"
kill -0 "$ppid" 2>/dev/null || fail "the program ended before the page was read"
cp "$T/live.saved" "$T/live.eventlog"
shown_counts "$T/live.eventlog" live
read -r gc threads msgs markers program < <(json_get "$T/dom.json" gc threads msgs markers program)
note "page: $gc GCs, $threads threads, $msgs messages, $markers markers, program $program"
[ "$gc" -eq "$SHOWN_GC" ] || fail "page: $gc GCs, ghc-events $SHOWN_GC"
[ "$threads" -eq "$SHOWN_THREADS" ] || fail "page: $threads threads, ghc-events $SHOWN_THREADS"
[ "$msgs" -eq "$SHOWN_MSGS" ] || fail "page: $msgs messages, ghc-events $SHOWN_MSGS"
[ "$markers" -eq "$SHOWN_MARKERS" ] || fail "page: $markers markers, ghc-events $SHOWN_MARKERS"
[ "$program" = Busy ] || [ "$program" = busy ] || fail "page names the program '$program'"
mkdir -p "$ELS_TOP_BUILDDIR/tests/monitor"
cp "$T/serve.png" "$ELS_TOP_BUILDDIR/tests/monitor/serve.png"
note "screenshot: $ELS_TOP_BUILDDIR/tests/monitor/serve.png"

# --- Several clients at once ---------------------------------------------
sse_has_data() { [ "$(grep -c '^data: {' "$1")" -ge 2 ]; }
for i in 1 2; do
    wait_until 30 sse_has_data "$T/sse$i.out" \
        || fail "event-stream client $i got $(grep -c '^data: ' "$T/sse$i.out") updates, expected 2 or more"
done

# --- Bad HTTP input ----------------------------------------------------------
# raw NAME WANT: send stdin as a raw request; the status must be WANT and
# serve must answer the next request normally.
raw() {
    local name=$1 want=$2 got fd line=
    exec {fd}<>"/dev/tcp/127.0.0.1/$PORT" || fail "$name: cannot connect"
    cat >&"$fd"
    IFS= read -r -t 30 line <&"$fd" || true
    exec {fd}>&-
    got=$(printf '%s\n' "$line" | cut -d' ' -f2)
    [ "$got" = "$want" ] || fail "$name: status '$got', expected $want (${line%$'\r'})"
    kill -0 "$spid" 2>/dev/null || fail "$name: serve died"
    state after-"$name" || fail "$name: serve does not answer afterwards"
}
printf 'GARBAGE\r\n\r\n' | raw garbage 400
printf 'GET / HTTP/1.1\r\n\r\n' | raw no-host 400
printf 'GET / HTTP/2.0\r\nHost: x\r\n\r\n' | raw version 505
printf 'DELETE / HTTP/1.1\r\nHost: x\r\n\r\n' | raw method 405
printf 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello' | raw body 413
printf 'GET /%s HTTP/1.1\r\nHost: x\r\n\r\n' "$(head -c 3000 /dev/zero | tr '\0' a)" | raw long-uri 414
{ printf 'GET / HTTP/1.1\r\nHost: x\r\n'; for i in $(seq 1 400); do printf 'X-Pad-%d: %s\r\n' "$i" aaaaaaaaaaaaaaaaaaaaaaaa; done; printf '\r\n'; } | raw huge-head 431
printf 'GET /nothing-here HTTP/1.1\r\nHost: localhost\r\n\r\n' | raw not-found 404
# DNS rebinding: a page elsewhere whose name now points here.
printf 'GET /api/state HTTP/1.1\r\nHost: evil.example:%s\r\n\r\n' "$PORT" | raw rebinding 403
printf 'GET /api/state HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n\r\n' "$PORT" | raw loopback-host 200
printf 'GET /\x01 HTTP/1.1\r\nHost: x\r\n\r\n' | raw control-char 400
printf 'GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n' | raw folding 400
# A client that connects and says nothing does not block others.
exec {idle_fd}<>/dev/tcp/127.0.0.1/"$PORT"
state idle-client || fail "serve does not answer while an idle client is connected"
exec {idle_fd}>&-

# /metrics and the speedscope export answer too.
curl -sf --max-time 10 "http://127.0.0.1:$PORT/metrics" -o "$T/metrics.txt" || fail "/metrics failed"
grep -q '^ghc_gc_total{program="busy",pid="'"$ppid"'"} '"$SHOWN_GC"'$' "$T/metrics.txt" \
    || fail_showing "$T/metrics.txt" "/metrics lacks ghc_gc_total $SHOWN_GC for pid $ppid"
curl -sf --max-time 10 "http://127.0.0.1:$PORT/api/speedscope" -o "$T/speedscope.json" \
    || fail "/api/speedscope failed"
"$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["profiles"][0]["type"] == "sampled"' \
    "$T/speedscope.json" || fail_showing "$T/speedscope.json" "/api/speedscope is not a speedscope profile"

# --- The program ends: the page's data says so -----------------------------
stop_controlled
wait_pid "$ppid" 60 || fail_showing "$T/live.prog.err" "the program did not exit cleanly"
ended() { state end && [ "$(json_get "$T/end.state" source.ended)" = true ]; }
wait_until 30 ended || fail "serve does not report the end of the stream: $(head -c 400 "$T/end.state")"

# --- The program runs again: serve reconnects and shows the new run ------
first_pid=$ppid
start_busy_live again 1 "$T/p.sock"
second_run() {
    state again && [ "$(json_get "$T/again.state" source.connections program.pid user.markers)" = "2 $ppid 3" ]
}
wait_until 60 second_run \
    || fail "serve does not show the program's second run (pid $ppid after $first_pid): $(head -c 400 "$T/again.state")"
stop_controlled
wait_pid "$ppid" 60 || fail_showing "$T/again.prog.err" "the second run did not exit cleanly"

kill -TERM "$spid"
wait_pid "$spid" 30 || fail "serve did not exit 0 on SIGTERM"
echo "PASS: $els_test_name"
