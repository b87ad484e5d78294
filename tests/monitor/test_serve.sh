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
# once the program exits, and serve reconnects to the program's next run.
# Every request carries serve's token (README; the routes' refusals
# without it are tests/security/test_serve_auth.sh's): the browser opens
# the start-up line's URL (?token=...), whose redirect leaves the page
# at / with a cookie; opened without it, it shows serve's 401 and
# nothing of the program.
# Control (serve --control, the program's sink with control=1): opened
# with the start-up line's URL, the page takes the token out of the
# address bar, and a mouse click on the Status, Flush and class-g
# buttons shows the program's answer on the page (flush and the class
# toggle answer ok: the patched RTS has every command); POST
# /api/control without the token or with a wrong one gets 401, from
# another origin, with a Host that is not loopback, or with an action
# off the allowlist 403, a GET that names an action 405; a restart
# through it starts a new stream that serve follows.  The token appears
# in no GET answer (page, script, state, control state, events,
# metrics) and in serve's output only on its start-up line.
# --token-file: a group-readable file is refused, a 0600 one gives the
# token (a second serve, without a program, with --public-read: the
# page opened without the token reads, and its Status button says that
# control needs the token URL).
# Hostile clients, against a serve of the saved stream: one pipelining
# GET /app.js without reading leaves serve's peak RSS (VmHWM) within
# 16 MiB of what it was and is closed past the output deadline; 64 slow
# clients sending a head's byte every second (each before the head
# deadline) are all closed at the deadline and the page answers again;
# 64 clients asking for /events get at most half the slots, the rest
# 503, and the page and /metrics still answer 200.  Skips without
# chromium, curl, python3, GHC, ghc-events or the patched RTS.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"
. "$(dirname "$0")/../ghcprog.sh"
. "$(dirname "$0")/../monitor/monitor.sh"

CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[ -n "$CHROMIUM" ] || skip "chromium not installed (scripts/install-deps.sh)"
command -v curl >/dev/null 2>&1 || skip "curl not installed"
command -v python3 >/dev/null 2>&1 || skip "python3 not installed"
monitor_setup

PHASES=2
start_serve live "unix:$T/p.sock" --control
printf '%s\n' "$TOKEN" | grep -qE '^[0-9a-f]{48}$' \
    || fail_showing "$T/live.serve.err" "no 192-bit token in the start-up URL '$SERVE_URL'"
start_busy_live live "$PHASES" "$T/p.sock" control=1
wait_all_markers live "$PHASES"

# Two live followers besides the browser.
for i in 1 2; do
    scurl -sN --max-time 60 "http://127.0.0.1:$PORT/events" >"$T/sse$i.out" 2>/dev/null &
    bg_register $!
done

# --- The page in a browser, against the live program ---------------------
# Opened without the token: serve's 401, and nothing of the program.
"$PYTHON" "$ELS_TOP_SRCDIR/tests/monitor/browser.py" "$CHROMIUM" \
    "http://127.0.0.1:$PORT/" 'document.body.innerText.startsWith("401 Unauthorized")' \
    'document.body.innerText' "$T/refused.png" 60 >"$T/refused.json" 2>"$T/refused-browser.err" \
    || fail_showing "$T/refused-browser.err" "the browser did not get serve's 401 without the token"
for w in work Busy busy "$ppid"; do
    ! grep -qF -- "$w" "$T/refused.json" || fail_showing "$T/refused.json" "the page refused without the token shows '$w'"
done
# Opened with the start-up line's URL: the cookie, and the page at /
# without the token in the address bar.
size_before=$(wc -c <"$T/live.saved")
ready='document.getElementById("markers").textContent == "'$(( 2 * PHASES + 1 ))'"
       && !document.getElementById("control").hidden'
values='({gc: document.getElementById("gc-count").textContent,
         threads: document.getElementById("threads-created").textContent,
         msgs: document.getElementById("user-messages").textContent,
         markers: document.getElementById("markers").textContent,
         program: document.getElementById("program").textContent,
         loss: document.getElementById("loss").textContent,
         href: location.href})'
"$PYTHON" "$ELS_TOP_SRCDIR/tests/monitor/browser.py" "$CHROMIUM" \
    "$SERVE_URL" "$ready" "$values" "$T/serve.png" 90 \
    >"$T/dom.json" 2>"$T/browser.err" \
    || fail_showing "$T/browser.err" "the browser could not read the page"
size_after=$(wc -c <"$T/live.saved")
[ "$size_before" -eq "$size_after" ] \
    || fail "the stream grew while the page was read ($size_before -> $size_after bytes): the program was not idle"
kill -0 "$ppid" 2>/dev/null || fail "the program ended before the page was read"
cp "$T/live.saved" "$T/live.eventlog"
shown_counts "$T/live.eventlog" live
read -r gc threads msgs markers program href < <(json_get "$T/dom.json" gc threads msgs markers program href)
# The token leaves the URL; the timeline's view may be in its fragment.
case $href in
"http://127.0.0.1:$PORT/" | "http://127.0.0.1:$PORT/#t0="*) ;;
*) fail "the page opened with the token URL is at '$href'" ;;
esac
case $href in *token*) fail "the page's URL still holds the token: '$href'" ;; esac
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
# serve must answer the next request normally.  Run at the end of a
# pipeline, in a subshell: `|| exit 1` makes its failure the test's.
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
printf 'GARBAGE\r\n\r\n' | raw garbage 400 || exit 1
printf 'GET / HTTP/1.1\r\n\r\n' | raw no-host 400 || exit 1
printf 'GET / HTTP/2.0\r\nHost: x\r\n\r\n' | raw version 505 || exit 1
printf 'DELETE / HTTP/1.1\r\nHost: x\r\n\r\n' | raw method 405 || exit 1
printf 'POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Length: 5\r\n\r\nhello' "$TOKEN" | raw body 413 || exit 1
printf 'GET /%s HTTP/1.1\r\nHost: x\r\n\r\n' "$(head -c 3000 /dev/zero | tr '\0' a)" | raw long-uri 414 || exit 1
{ printf 'GET / HTTP/1.1\r\nHost: x\r\n'; for i in $(seq 1 400); do printf 'X-Pad-%d: %s\r\n' "$i" aaaaaaaaaaaaaaaaaaaaaaaa; done; printf '\r\n'; } | raw huge-head 431 || exit 1
printf 'GET /nothing-here HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer %s\r\n\r\n' "$TOKEN" | raw not-found 404 || exit 1
# DNS rebinding: a page elsewhere whose name now points here.
printf 'GET /api/state HTTP/1.1\r\nHost: evil.example:%s\r\nAuthorization: Bearer %s\r\n\r\n' "$PORT" "$TOKEN" | raw rebinding 403 || exit 1
printf 'GET /api/state HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nAuthorization: Bearer %s\r\n\r\n' "$PORT" "$TOKEN" | raw loopback-host 200 || exit 1
printf 'GET /\x01 HTTP/1.1\r\nHost: x\r\n\r\n' | raw control-char 400 || exit 1
printf 'GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n' | raw folding 400 || exit 1
# A client that connects and says nothing does not block others.
exec {idle_fd}<>/dev/tcp/127.0.0.1/"$PORT"
state idle-client || fail "serve does not answer while an idle client is connected"
exec {idle_fd}>&-

# /metrics and the speedscope export answer too.
scurl -sf --max-time 10 "http://127.0.0.1:$PORT/metrics" -o "$T/metrics.txt" || fail "/metrics failed"
grep -q '^ghc_gc_collections_total{program="busy",pid="'"$ppid"'",gen="0"} ' "$T/metrics.txt" \
    || fail_showing "$T/metrics.txt" "/metrics lacks ghc_gc_collections_total for pid $ppid"
colls=$(awk '/^ghc_gc_collections_total\{program="busy",pid="'"$ppid"'",/ { n += $NF } END { print n + 0 }' "$T/metrics.txt")
[ "$colls" = "$SHOWN_GC" ] || fail_showing "$T/metrics.txt" "/metrics counts $colls GC collections for pid $ppid, ghc-events $SHOWN_GC"
scurl -sf --max-time 10 "http://127.0.0.1:$PORT/api/speedscope" -o "$T/speedscope.json" \
    || fail "/api/speedscope failed"
"$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["profiles"][0]["type"] == "sampled"' \
    "$T/speedscope.json" || fail_showing "$T/speedscope.json" "/api/speedscope is not a speedscope profile"

# --- Control buttons, in the browser -----------------------------------------
sock=$T/p.sock
answer="document.getElementById('ctl-answer')"
# The program runs on the patched RTS: every command must be there and
# work (a library without them is a failure here, not another answer).
control_must_have help "$sock" flush get-classes set-classes
want_flush="flush: ok"
want_class="toggle-class g: ok: "
cat >"$T/steps.json" <<EOF
[{"click": "#ctl-status", "wait": "$answer.textContent.startsWith('status: ok: running on unix:')",
  "read": "$answer.textContent"},
 {"click": "#ctl-flush", "wait": "$answer.textContent.startsWith('flush: ')", "read": "$answer.textContent"},
 {"click": "#ctl-class-g", "wait": "$answer.textContent.startsWith('toggle-class g: ')", "read": "$answer.textContent"}]
EOF
ELS_BROWSER_STEPS=$T/steps.json "$PYTHON" "$ELS_TOP_SRCDIR/tests/monitor/browser.py" "$CHROMIUM" \
    "$SERVE_URL" '!document.getElementById("control").hidden' \
    '({state: document.getElementById("ctl-state").textContent, href: location.href,
      kept: sessionStorage.getItem("eventlog-sink-token")})' "$T/control.png" 60 \
    >"$T/control.json" 2>"$T/control-browser.err" \
    || fail_showing "$T/control-browser.err" "the browser could not press the control buttons"
cp "$T/control.png" "$ELS_TOP_BUILDDIR/tests/monitor/serve-control.png"
"$PYTHON" - "$T/control.json" "$sock" "$want_flush" "$want_class" "$TOKEN" "$PORT" <<'PY' || fail_showing "$T/control.json" "the page does not show the control answers"
import json, sys
d = json.load(open(sys.argv[1]))
status, flush, cls = d["steps"]
assert status.startswith("status: ok: running on unix:%s; protocol 2;" % sys.argv[2]), status
assert flush.startswith(sys.argv[3]), (flush, sys.argv[3])
assert cls.startswith(sys.argv[4]), (cls, sys.argv[4])
v = d["values"]
# The token left the address bar (the query for the cookie, the
# redirect's fragment) for the tab's storage; the fragment may hold the
# timeline's view.
base = "http://127.0.0.1:%s/" % sys.argv[6]
assert v["href"] == base or v["href"].startswith(base + "#t0="), v["href"]
assert "token" not in v["href"], v["href"]
assert v["kept"] == sys.argv[5], v["kept"]
print("# page: %s | %s | %s | %s" % (status[:60], flush, cls, v["state"]))
PY

# --- Control requests the server refuses -----------------------------------
# post NAME WANT QUERY [CURL-ARGS...]: POST /api/control?QUERY with the
# token ($POST_TOKEN instead if set: "" sends none), status WANT.
post() {
    local name=$1 want=$2 query=$3 got tok=${POST_TOKEN-$TOKEN}
    shift 3
    [ -z "$tok" ] || set -- -H "X-Eventlog-Sink-Token: $tok" "$@"
    got=$(curl -s --max-time 20 -o "$T/$name.post" -w '%{http_code}' -X POST "$@" \
          "http://127.0.0.1:$PORT/api/control?$query") || true
    if [ "$got" = 000 ] && ! kill -0 "$spid" 2>/dev/null; then
        fail_showing "$T/live.serve.err" "$name: POST /api/control?$query: no answer, and serve is gone"
    fi
    [ "$got" = "$want" ] || fail_showing "$T/$name.post" "$name: POST /api/control?$query: status $got, expected $want (serve's stderr: $(tail -n 5 "$T/live.serve.err" | tr '\n' ' '))"
}
POST_TOKEN= post no-token 401 cmd=status
grep -q "this needs serve's token" "$T/no-token.post" || fail_showing "$T/no-token.post" "no-token: no reason given"
# Wrong in its last character only.
case $TOKEN in *0) wrong=${TOKEN%?}1 ;; *) wrong=${TOKEN%?}0 ;; esac
POST_TOKEN=$wrong post wrong-token 401 cmd=status
grep -q "wrong token" "$T/wrong-token.post" || fail_showing "$T/wrong-token.post" "wrong-token: no reason given"
POST_TOKEN=${TOKEN}0 post long-token 401 cmd=status
printf 'POST /api/control?cmd=status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Eventlog-Sink-Token: %s\r\nX-Eventlog-Sink-Token: %s\r\n\r\n' \
    "$TOKEN" "$TOKEN" | raw two-tokens 400 || exit 1
post cross-origin 403 cmd=status -H "Origin: http://evil.example"
grep -q "another origin" "$T/cross-origin.post" || fail_showing "$T/cross-origin.post" "cross-origin: no reason given"
post other-port 403 cmd=status -H "Origin: http://127.0.0.1:1"
post rebinding-host 403 cmd=status -H "Host: evil.example:$PORT"
post off-list 403 cmd=ring-dump
grep -q "not an action" "$T/off-list.post" || fail_showing "$T/off-list.post" "off-list: no reason given"
post unknown 403 cmd=no-such-thing
post bad-class 403 "cmd=toggle-class&class=x"
post no-cmd 403 ""
post same-origin 200 cmd=status -H "Origin: http://127.0.0.1:$PORT"
[ "$(json_get "$T/same-origin.post" ok)" = true ] || fail_showing "$T/same-origin.post" "same-origin status failed"
got=$(scurl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/api/control?cmd=stop")
[ "$got" = 405 ] || fail "GET /api/control?cmd=stop: status $got, expected 405"
got=$(scurl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$PORT/api/state")
[ "$got" = 405 ] || fail "POST /api/state: status $got, expected 405"
kill -0 "$ppid" 2>/dev/null || fail "the program died"

# A restart through the control endpoint: a new stream, which serve follows.
post restart 200 cmd=restart
[ "$(json_get "$T/restart.post" ok result)" = "true accepted; the stream ends now" ] \
    || fail_showing "$T/restart.post" "restart was not accepted"
restarted() { state restarted && [ "$(json_get "$T/restarted.state" source.connections)" = 2 ]; }
wait_until 30 restarted || fail "serve does not follow the restarted stream: $(head -c 400 "$T/restarted.state")"

# The token in no answer to a GET, and in serve's output only where it
# was given out.
scurl -sf --max-time 10 "http://127.0.0.1:$PORT/" -o "$T/index.get" || fail "GET / failed"
scurl -sf --max-time 10 "http://127.0.0.1:$PORT/app.js" -o "$T/app.get" || fail "GET /app.js failed"
scurl -sf --max-time 10 "http://127.0.0.1:$PORT/api/control" -o "$T/control.get" || fail "GET /api/control failed"
for f in index.get app.get control.get sse1.out sse2.out metrics.txt restarted.state; do
    [ -s "$T/$f" ] || fail "$f: nothing to search for the token"
    ! grep -qF "$TOKEN" "$T/$f" || fail_showing "$T/$f" "the token is in a GET answer ($f)"
done
[ "$(grep -cF "$TOKEN" "$T/live.serve.err")" = 1 ] && grep -qF "serving $SERVE_URL" "$T/live.serve.err" \
    || fail_showing "$T/live.serve.err" "the token is in serve's output beyond its start-up line"

# --- The program ends: the page's data says so -----------------------------
stop_controlled
wait_pid "$ppid" 60 || fail_showing "$T/live.prog.err" "the program did not exit cleanly"
ended() { state end && [ "$(json_get "$T/end.state" source.ended)" = true ]; }
wait_until 30 ended || fail "serve does not report the end of the stream: $(head -c 400 "$T/end.state")"

# --- The program runs again: serve reconnects and shows the new run ------
first_pid=$ppid
start_busy_live again 1 "$T/p.sock"
second_run() {
    state again && [ "$(json_get "$T/again.state" source.connections program.pid user.markers)" = "3 $ppid 3" ]
}
wait_until 60 second_run \
    || fail "serve does not show the program's second run (pid $ppid after $first_pid): $(head -c 400 "$T/again.state")"
stop_controlled
wait_pid "$ppid" 60 || fail_showing "$T/again.prog.err" "the second run did not exit cleanly"

kill -TERM "$spid"
wait_pid "$spid" 30 || fail "serve did not exit 0 on SIGTERM"

# --- --token-file --------------------------------------------------------------
# Group-readable: refused before serving (timeout: a guard against a
# serve that took it); 0600: its token, not printed.
ftoken=$TOKEN-from.a_file~
printf '%s\n' "$ftoken" >"$T/token"
chmod 640 "$T/token"
timeout 30 "$ELS_SINK_TOOL" serve --listen 127.0.0.1:0 --control --token-file "$T/token" "unix:$T/p.sock" \
    >/dev/null 2>"$T/tf-open.err" && fail "serve took a group-readable --token-file"
grep -qF "token-file $T/token: mode 640 lets others read or change it (chmod 600)" "$T/tf-open.err" \
    || fail_showing "$T/tf-open.err" "no clear error for a group-readable --token-file"
# A NUL byte would cut the token short.
printf '%s\0x\n' "$ftoken" >"$T/token-nul"
chmod 600 "$T/token-nul"
timeout 30 "$ELS_SINK_TOOL" serve --listen 127.0.0.1:0 --control --token-file "$T/token-nul" "unix:$T/p.sock" \
    >/dev/null 2>"$T/tf-nul.err" && fail "serve took a --token-file with a NUL byte"
grep -qF "token-file $T/token-nul: expected a token of 32 to 128 characters" "$T/tf-nul.err" \
    || fail_showing "$T/tf-nul.err" "no clear error for a --token-file with a NUL byte"
chmod 600 "$T/token"
# With --public-read too: the page reads without a token, and a button
# says what it lacks.
start_serve tf "unix:$T/p.sock" --control --token-file "$T/token" --public-read
! grep -qF "$ftoken" "$T/tf.serve.err" || fail_showing "$T/tf.serve.err" "serve printed the file's token"
grep -qF "serving http://127.0.0.1:$PORT/ (open http://127.0.0.1:$PORT/?token= followed by the token in $T/token, or send 'Authorization: Bearer' and that token)" \
    "$T/tf.serve.err" || fail_showing "$T/tf.serve.err" "the start-up line does not say where the token is"
grep -q "warning: --public-read" "$T/tf.serve.err" || fail_showing "$T/tf.serve.err" "no warning for --public-read"
post tf-made 401 cmd=status
POST_TOKEN= post tf-none 401 cmd=status
POST_TOKEN=$ftoken post tf-file 200 cmd=status
[ "$(json_get "$T/tf-file.post" action ok)" = "status false" ] \
    || fail_showing "$T/tf-file.post" "the file's token did not reach the action (no program runs)"
cat >"$T/notoken.json" <<'EOF'
[{"click": "#ctl-status", "wait": "document.getElementById('ctl-answer').textContent.indexOf('token') > 0",
  "read": "document.getElementById('ctl-answer').textContent"}]
EOF
ELS_BROWSER_STEPS=$T/notoken.json "$PYTHON" "$ELS_TOP_SRCDIR/tests/monitor/browser.py" "$CHROMIUM" \
    "http://127.0.0.1:$PORT/" '!document.getElementById("control").hidden' 'location.href' \
    "$T/notoken.png" 60 >"$T/notoken.out" 2>"$T/notoken-browser.err" \
    || fail_showing "$T/notoken-browser.err" "the browser could not read the --public-read page"
notoken=$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["steps"][0])' "$T/notoken.out")
case $notoken in
# The answer, then its time (the page keeps five answers, each timed).
"status: control needs the page's token URL (see serve's start-up line: http://HOST:PORT/?token=...)  ["[0-9][0-9]:[0-9][0-9]:[0-9][0-9]"]") ;;
*) fail "the --public-read page without the token answers the Status button '$notoken'" ;;
esac
kill -TERM "$spid"
wait_pid "$spid" 30 || fail "serve (--token-file) did not exit 0 on SIGTERM"
# --- Hostile clients ---------------------------------------------------------
# Against a serve of the saved stream, with the deadlines shortened
# (ELS_SERVE_TEST_*_MS, for tests only; serve's own are 10 s for a head
# and 15 s over the output bound).  Each attack, then what must hold:
# memory, a deadline met, the page and /metrics still answered.
# attack MODE ARGS...: a raw-socket client (Python) with serve's token,
# see each use.
attack() {
    TOKEN=$TOKEN "$PYTHON" - "$@" <<'PY'
import os, select, socket, sys, time
mode, port = sys.argv[1], int(sys.argv[2])
auth = b"Authorization: Bearer " + os.environ["TOKEN"].encode() + b"\r\n"
def conn():
    return socket.create_connection(("127.0.0.1", port), timeout=30)
def status(s):
    line = b""
    while not line.endswith(b"\n"):
        c = s.recv(1)
        if not c:
            return "closed"
        line += c
    return line.split(b" ")[1].decode()
def gone(s, secs):
    # Closed by serve (reset, or its FIN): without reading what it sent.
    p = select.poll()
    p.register(s, select.POLLERR | select.POLLHUP | select.POLLRDHUP)
    return bool(p.poll(int(secs * 1000)))
if mode == "pipeline":
    # Pipelines N requests for GET /app.js (11 KiB each) and never reads;
    # then waits (up to GUARD s) for serve to close it.
    n, guard = int(sys.argv[3]), float(sys.argv[4])
    s = conn()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    req = b"GET /app.js HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth + b"\r\n"
    data, sent = req * n, 0
    s.setblocking(False)
    end = time.time() + guard
    while sent < len(data) and time.time() < end:
        try:
            sent += s.send(data[sent:sent + 65536])
        except BlockingIOError:
            select.select([], [s], [], 0.1)
    # Two requests on another connection: serve's loop has been round.
    for _ in range(2):
        t = conn()
        t.sendall(b"GET /api/state HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth + b"Connection: close\r\n\r\n")
        st = status(t)
        t.close()
    print(sent // len(req), st, "closed" if gone(s, guard) else "open")
elif mode == "loris":
    # N connections each send one byte of a head every EVERY s, until
    # serve closed them all or GUARD s passed; prints how many it closed
    # and when the last went.
    n, every, guard = int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
    head = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 4000
    socks = [conn() for _ in range(n)]
    alive, t0, i, last = set(range(n)), time.time(), 0, 0.0
    while alive and time.time() - t0 < guard:
        for k in list(alive):
            try:
                if gone(socks[k], 0):
                    raise OSError
                socks[k].send(head[i:i + 1])
            except OSError:
                alive.discard(k)
                last = time.time() - t0
        i += 1
        time.sleep(every)
    print(n - len(alive), round(last, 1))
elif mode == "events":
    # N clients ask for /events and keep it open; then GET / and
    # /metrics on new connections.  Prints the streams' statuses (count
    # of 200, of 503) and the two answers'.
    n = int(sys.argv[3])
    socks, codes = [], []
    for _ in range(n):
        s = conn()
        s.sendall(b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth + b"\r\n")
        codes.append(status(s))
        socks.append(s)
    out = [str(codes.count("200")), str(codes.count("503"))]
    for path in ("/", "/metrics"):
        t = conn()
        t.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth + b"Connection: close\r\n\r\n")
        out.append(status(t))
        t.close()
    print(" ".join(out))
PY
}
hwm_kb() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }

ELS_SERVE_TEST_HEAD_MS=3000 ELS_SERVE_TEST_STALL_MS=3000 start_serve hostile "$T/live.eventlog"
state hostile-start || fail "serve of the saved stream does not answer"

# Pipelining without reading: 10,000 requests for 110 MiB of answers.
# serve stops reading the client at its output bound, keeps its memory,
# and closes it once it stayed there past the deadline.
base_kb=$(hwm_kb "$spid")
read -r sent after_state closed < <(attack pipeline "$PORT" 10000 30) || fail "pipeline: the client failed"
peak_kb=$(hwm_kb "$spid")
note "pipelining: $sent requests sent unread; serve's peak RSS $base_kb -> $peak_kb KiB; the client $closed"
[ "$after_state" = 200 ] || fail "pipelining: /api/state answered $after_state meanwhile"
[ $(( peak_kb - base_kb )) -lt 16384 ] \
    || fail "pipelining: serve's peak RSS grew by $(( (peak_kb - base_kb) / 1024 )) MiB ($base_kb -> $peak_kb KiB)"
[ "$closed" = closed ] || fail "pipelining: serve kept a client over its output bound past the deadline"

# 64 slow clients (every slot), a byte of a head every second, each
# byte before the 3 s deadline: all closed at the deadline all the same,
# and a new client gets the page.
read -r closed last < <(attack loris "$PORT" 64 1 30) || fail "slow clients: the client failed"
note "slow clients: $closed of 64 closed, the last after $last s"
[ "$closed" = 64 ] || fail "slow clients: serve closed $closed of 64 within 30 s (head deadline 3 s)"
got=$(scurl -s --max-time 10 -o "$T/after-loris.html" -w '%{http_code}' "http://127.0.0.1:$PORT/")
[ "$got" = 200 ] || fail "slow clients: GET / answered $got after they were closed"

# 64 event streams asked for (every slot): at most half are served, the
# rest refused at once, and the page and /metrics still answer.
read -r streams refused page metrics < <(attack events "$PORT" 64) || fail "event streams: the client failed"
note "event streams: $streams served, $refused refused (503); then GET / $page, /metrics $metrics"
[ "$streams" -le 32 ] || fail "event streams: $streams of 64 slots taken by /events"
[ "$(( streams + refused ))" = 64 ] || fail "event streams: $streams served and $refused refused of 64"
[ "$page" = 200 ] && [ "$metrics" = 200 ] \
    || fail "event streams: with the streams' share full, GET / answered $page and /metrics $metrics"
kill -0 "$spid" 2>/dev/null || fail "serve died under hostile clients"
kill -TERM "$spid"
wait_pid "$spid" 30 || fail "serve (hostile clients) did not exit 0 on SIGTERM"
echo "PASS: $els_test_name"
