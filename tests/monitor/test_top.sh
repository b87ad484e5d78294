#!/usr/bin/env bash
# test_top.sh: `eventlog-sink top`, the terminal monitor.
#
# First, without GHC: a hostile stream (ESC sequences, BEL, CR, DEL and C1
# in the program's name, a message, a marker, a heap label, a cost centre
# and a note) shows only in its safe form in top --once, --lines and the
# full screen under tmux (the window title stays, none of the stream's
# sequences in the bytes top wrote), while --json keeps the exact text;
# and top started before a unix: socket exists connects when a listener
# binds it (its directory watch, said in the view's source state) and
# its first view holds the whole stream from the first event, and its
# stderr said once what it waited for.  A target that is not there (no
# such socket, one nothing listens on, a TCP port nothing listens on, no
# such file, a FIFO no writer opens) makes top --once exit 1 with one
# line and no view; top on a missing file and serve on a missing socket
# say once on stderr what they wait for.
#
# A file of about 730 MB, more than one 0.05 s interval can read: top
# --once --json reads it to its end (its totals are ghc-events' for the
# whole file, its state says it read the file to its end), and serve's
# state says how much of it was read while it reads.
#
# Then, under tmux (a real terminal: send-keys, capture-pane), top follows the
# file a running program writes with plain `+RTS -l` (the route of a
# stock RTS: the file grows, top re-reads it), shows the same GC, thread,
# user-message and marker counts as ghc-events reads from that file, and
# starts over when the program runs again and replaces the file (a
# restart); q quits it.  `top --once --json` on the file gives the same
# figures, the same longest collection pause and GC time, and time in GC as the
# share of the capabilities' time (ghc-events' pauses summed over
# capabilities / (last event's time x capabilities)); without a terminal
# top prints plain lines.
# Control keys: without --control a key says control is not enabled;
# with --control against a -N2 program whose sink has control=1, i, t,
# f, s, h and c+letter each send their command and the status line shows
# the program's answer (every one must succeed: the patched RTS is
# required, so a command missing from the program's help fails the
# test), R restarts the stream (top shows run 2), X then y stops it (top
# shows its end).  The monitors started before the program (top in
# tmux, top --json and serve, all with --control) connect their control
# session as the program's stream comes, without a key; the page keeps
# four answers, newest first, each with the command sent and the time
# (headless Chromium, when installed).  Skips without tmux, GHC,
# ghc-events, curl or the patched RTS (the parts before need only tmux
# and python3).
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"
. "$(dirname "$0")/../ghcprog.sh"
. "$(dirname "$0")/../monitor/monitor.sh"

command -v python3 >/dev/null 2>&1 || skip "python3 not installed"
command -v tmux >/dev/null 2>&1 || skip "tmux not installed (scripts/install-deps.sh)"
require_tool
make_tmpdir
H=$ELS_TMP

# --- A hostile stream's text (no GHC needed) --------------------------------
# Every string top shows carries ESC sequences (clear screen, window title,
# a cursor query the terminal would answer on stdin), BEL, CR, DEL, a raw
# C1 byte and C1 in UTF-8.  top --once, --lines and the full screen show
# them only in their safe form; --json keeps the exact text.
"$PYTHON" - "$H/evil.eventlog" "$H/evil.want.json" <<'PY'
import json, struct, sys
msg = b"\x1b[2J\x1b[Hgone\r\x7f\xc2\x9b6n"
mark = b"\x1b]2;title\x07 start"
prog = b"\x1b]0;pwned\x07evil\x9b2J"
label = b"\x1b[31mRED"
cc = b"\x1b[6n"
note = b"eventlog-sink: \x1b[?1049l note"
out = bytearray(b"hdrbhetb")
for tag, size, desc in [(16, -1, b"Log message"), (18, 14, b"Block marker"),
                        (19, -1, b"User message"), (58, -1, b"User marker"),
                        (30, -1, b"Program arguments"), (161, -1, b"Cost centre"),
                        (162, 8, b"Heap sample begin"), (164, -1, b"Heap sample string"),
                        (165, 8, b"Heap sample end"), (167, -1, b"Time profile sample")]:
    out += b"etb\0" + struct.pack(">HhI", tag, size, len(desc)) + desc + b"\0\0\0\0ete\0"
out += b"hetehdredatb"
def ev(tag, t, payload, var=True):
    return struct.pack(">HQ", tag, t) + (struct.pack(">H", len(payload)) if var else b"") + payload
out += ev(30, 0, struct.pack(">I", 1) + b"/usr/bin/" + prog + b"\0+RTS\0")
out += ev(161, 0, struct.pack(">I", 1) + cc + b"\0Main\0x.hs\0\0")
out += ev(16, 0, note)
out += ev(19, 1000000, msg)
out += ev(58, 2000000, mark)
out += ev(167, 3000000, struct.pack(">IQB", 0, 3, 1) + struct.pack(">I", 1))
out += ev(162, 4000000, struct.pack(">Q", 1), var=False)
out += ev(164, 4000000, b"\1" + struct.pack(">Q", 300) + label + b"\0")
out += ev(165, 4000000, struct.pack(">Q", 1), var=False)
out += b"\xff\xff"
open(sys.argv[1], "wb").write(out)
u = lambda b: b.decode("utf-8", "replace")
json.dump({"program": u(prog), "message": u(msg), "marker": u(mark),
           "label": u(label), "cc": u(cc), "note": u(note)}, open(sys.argv[2], "w"))
PY

# no_raw FILE WHAT: FILE holds no control character but newlines (C0, ESC,
# DEL, C1 raw or in UTF-8).
no_raw() {
    "$PYTHON" - "$1" <<'PY' || fail "$2: a control character reached the output: $(od -c "$1" | head -20)"
import sys
data = open(sys.argv[1], "rb").read()
text = data.decode("utf-8", "surrogateescape")
bad = [c for c in text if (ord(c) < 0x20 and c != "\n") or ord(c) == 0x7f
       or 0x80 <= ord(c) <= 0x9f or 0xdc80 <= ord(c) <= 0xdc9f]
sys.exit(1 if bad else 0)
PY
}
"$ELS_SINK_TOOL" top --once "$H/evil.eventlog" >"$H/evil.once" 2>&1 </dev/null \
    || fail_showing "$H/evil.once" "top --once on the hostile stream failed"
no_raw "$H/evil.once" "top --once"
grep -qF '\u{1B}[2J\u{1B}[Hgone\r\u{7F}\u{9B}6n' "$H/evil.once" \
    || fail_showing "$H/evil.once" "top --once does not show the message's escaped form"
note "top --once: $(grep -F 'last message' "$H/evil.once")"

"$ELS_SINK_TOOL" top --lines --interval 0.1 "$H/evil.eventlog" >"$H/evil.lines" 2>&1 </dev/null &
lines_pid=$!
bg_register "$lines_pid"
wait_until 30 grep -qF "Last note:" "$H/evil.lines" || fail_showing "$H/evil.lines" "top --lines showed no view"
kill -INT "$lines_pid"
wait "$lines_pid" || fail_showing "$H/evil.lines" "top --lines stopped by SIGINT exited with $?"
no_raw "$H/evil.lines" "top --lines"

"$ELS_SINK_TOOL" top --once --json "$H/evil.eventlog" >"$H/evil.json" 2>&1 </dev/null \
    || fail_showing "$H/evil.json" "top --once --json on the hostile stream failed"
"$PYTHON" - "$H/evil.json" "$H/evil.want.json" <<'PY' || fail_showing "$H/evil.json" "top --json does not keep the exact text"
import json, sys
d, w = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
got = {"program": d["program"]["name"], "message": d["user"]["recent_messages"][-1]["text"],
       "marker": d["user"]["recent_markers"][-1]["text"],
       "label": d["heap"]["by_label"][0]["label"], "cc": d["profile"]["top"][0]["cc"],
       "note": d["loss"]["recent"][-1]["text"]}
for k in w:
    if got[k] != w[k]:
        print("# %s: %r, want %r" % (k, got[k], w[k]), file=sys.stderr)
        sys.exit(1)
PY

# The full screen, in a real terminal: the window title stays, and the
# bytes top wrote (tmux pipe-pane) hold none of the stream's sequences.
TMUX_SOCK=$H/tmux.sock
tm() { tmux -S "$TMUX_SOCK" "$@"; }
tm_cleanup() { tm kill-server 2>/dev/null || true; }
trap 'tm_cleanup; els_cleanup' EXIT
tm new-session -d -s evil -x 110 -y 45 \
    "while [ ! -e '$H/go' ]; do sleep 0.05; done; '$ELS_SINK_TOOL' top --interval 0.2 '$H/evil.eventlog'" \
    || fail "tmux could not start a session"
tm pipe-pane -o -t evil "cat >'$H/evil.raw'" || fail "tmux pipe-pane failed"
title0=$(tm display-message -p -t evil '#{pane_title}')
touch "$H/go"
evil_shown() { tm capture-pane -p -t evil >"$H/evil.pane" 2>/dev/null && grep -qF "Last note:" "$H/evil.pane"; }
wait_until 30 evil_shown || fail_showing "$H/evil.pane" "the full screen shows no view"
title=$(tm display-message -p -t evil '#{pane_title}')
[ "$title" = "$title0" ] || fail "the stream retitled the terminal: '$title0' became '$title'"
grep -qF '\u{1B}]2;title\u{07} start' "$H/evil.pane" || fail_showing "$H/evil.pane" "the full screen lacks the marker's safe form"
"$PYTHON" - "$H/evil.raw" <<'PY' || fail "the full screen wrote the stream's own escape sequences: $(od -c "$H/evil.raw" | head -20)"
import sys
raw = open(sys.argv[1], "rb").read()
# top's own sequences are CSI H, 2J, ?1049h, ?25l; the stream's are these.
for seq in (b"\x1b]", b"\x1b[6n", b"\x1b[31m", b"\x1b[?1049l", b"\x07", b"\x7f", b"\x9b", b"\xc2\x9b"):
    if seq in raw:
        sys.exit(1)
sys.exit(0 if raw else 1)
PY
tm kill-session -t evil
note "full screen: title unchanged ('$title'), $(wc -c <"$H/evil.raw") bytes written, none of the stream's sequences"

# --- A monitor started before its program (no GHC needed) -------------------
# top waits for a unix: socket that does not exist; a listener binds it
# later, notes how long after binding top's connection came (a figure, not
# a verdict) and serves a stream with a known first event.  top must take
# the whole stream from that event, and must have connected because the
# socket appeared (its directory watch), not on a retry timer.
mkdir "$H/later"
"$ELS_SINK_TOOL" top --json --interval 0.05 "unix:$H/later/app.sock" >"$H/later.json" 2>"$H/later.err" &
later_pid=$!
bg_register "$later_pid"
wait_until 30 grep -qF "waiting for unix:$H/later/app.sock" "$H/later.json" \
    || fail_showing "$H/later.json" "top does not say it waits for the socket"
# ... and says so on stderr, once, at start.
later_said="eventlog-sink top: waiting for unix:$H/later/app.sock to appear (no such socket yet; watching $H/later for it)"
[ "$(cat "$H/later.err")" = "$later_said" ] \
    || fail_showing "$H/later.err" "top's stderr does not say once what it waits for: want '$later_said'"
"$PYTHON" - "$H/later/app.sock" "$ELS_TOP_SRCDIR/tests/data/ghc-9.0.2-N2.eventlog" "$H/later.accept" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
t0 = time.monotonic()
s.bind(sys.argv[1])
s.listen(1)
s.settimeout(60)
c, _ = s.accept()
t1 = time.monotonic()
open(sys.argv[3], "w").write("%.1f\n" % ((t1 - t0) * 1000))
c.sendall(open(sys.argv[2], "rb").read())
time.sleep(60)          # keep the stream open: top's view says how it came
PY
listener_pid=$!
bg_register "$listener_pid"
want_events=$(cat "$ELS_TOP_SRCDIR/tests/data/ghc-9.0.2-N2.events")
later_all() {
    "$PYTHON" - "$H/later.json" "$want_events" >"$H/later.view" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    try:
        d = json.loads(line)
    except ValueError:
        continue
    if d["events"]["total"] > 0:
        # The first view with events: the whole stream, from its first.
        print(d["events"]["total"], d["source"]["state"])
        sys.exit(0 if d["events"]["total"] == int(sys.argv[2]) else 1)
sys.exit(1)
PY
}
wait_until 30 later_all || fail "top's first view after the socket appeared: '$(cat "$H/later.view")', want all $want_events events of the stream"
grep -qF "(as it appeared: directory watch)" "$H/later.view" \
    || fail "top connected on its retry timer, not when the socket appeared: '$(cat "$H/later.view")'"
note "socket appearing: top connected $(cat "$H/later.accept") ms after bind, first view: $(cat "$H/later.view")"
kill "$later_pid" "$listener_pid" 2>/dev/null
wait "$later_pid" "$listener_pid" 2>/dev/null
[ "$(cat "$H/later.err")" = "$later_said" ] \
    || fail_showing "$H/later.err" "top's stderr says more than once what it waits for"

# --- A target that is not there (no GHC needed) ----------------------------
# With --once: exit 1, one line naming the target and why, no view: a
# socket that does not exist, one nothing listens on (bound, never
# listening: refused), a TCP port nothing listens on, a file that does
# not exist, a FIFO no writer opens within the interval.  Without --once: one line on stderr says what the monitor
# waits for (top on a file in a directory that does not exist, serve on
# a missing socket, whose page says it too), and nothing more as it waits.
"$PYTHON" -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$H/stale.sock" \
    || fail "cannot make a socket nothing listens on"
free=$(free_tcp_port) || fail "no free TCP port"
# once_fails NAME TARGET WANT: top --once --json TARGET exits 1 with the
# one line WANT on stderr and prints nothing.
once_fails() {
    local rc=0
    "$ELS_SINK_TOOL" top --once --json "$2" >"$H/$1.out" 2>"$H/$1.err" </dev/null || rc=$?
    [ "$rc" -eq 1 ] || fail_showing "$H/$1.err" "$1: top --once $2 exited $rc, want 1"
    [ "$(cat "$H/$1.err")" = "$3" ] || fail_showing "$H/$1.err" "$1: top --once $2 said something else than '$3'"
    [ ! -s "$H/$1.out" ] || fail_showing "$H/$1.out" "$1: top --once $2 printed a view"
    note "$1: exit $rc, '$(cat "$H/$1.err")'"
}
once_fails typo "unix:$H/typo.sock" "eventlog-sink top: cannot read unix:$H/typo.sock: no such socket"
once_fails stale "unix:$H/stale.sock" \
    "eventlog-sink top: cannot read unix:$H/stale.sock: connection refused: nothing listens on that socket"
once_fails tcp "tcp:127.0.0.1:$free" \
    "eventlog-sink top: cannot read tcp:127.0.0.1:$free: connection refused: nothing listens on that port"
once_fails nofile "$H/typo.eventlog" "eventlog-sink top: cannot read $H/typo.eventlog: no such file"
mkfifo "$H/lonely.fifo" || fail "mkfifo failed"
once_fails fifo "fifo:$H/lonely.fifo" \
    "eventlog-sink top: cannot read fifo:$H/lonely.fifo within the interval: no writer has the FIFO open"

"$ELS_SINK_TOOL" top --json --interval 0.05 "$H/nodir/app.eventlog" >"$H/nodir.json" 2>"$H/nodir.err" </dev/null &
nodir_pid=$!
bg_register "$nodir_pid"
views() { [ "$(grep -c '^{' "$H/nodir.json")" -ge "$1" ]; }
wait_until 30 views 5 || fail_showing "$H/nodir.json" "top on a missing file shows no views"
kill "$nodir_pid"
wait "$nodir_pid" 2>/dev/null
nodir_said="eventlog-sink top: waiting for $H/nodir/app.eventlog to appear (no such file yet; checking every 25 ms)"
[ "$(cat "$H/nodir.err")" = "$nodir_said" ] \
    || fail_showing "$H/nodir.err" "top on a missing file does not say once what it waits for: want '$nodir_said'"
grep -qF "waiting for $H/nodir/app.eventlog: no such file" "$H/nodir.json" \
    || fail_showing "$H/nodir.json" "top's view does not say it waits for the file"

"$ELS_SINK_TOOL" serve --listen 127.0.0.1:0 "unix:$H/typo.sock" >/dev/null 2>"$H/serve-typo.err" &
serve_typo_pid=$!
bg_register "$serve_typo_pid"
wait_until 30 grep -q "serving http://" "$H/serve-typo.err" \
    || fail_showing "$H/serve-typo.err" "serve on a missing socket did not start"
serve_said="eventlog-sink serve: waiting for unix:$H/typo.sock to appear (no such socket yet; watching $H for it)"
[ "$(head -1 "$H/serve-typo.err")" = "$serve_said" ] \
    || fail_showing "$H/serve-typo.err" "serve on a missing socket does not say what it waits for: want '$serve_said'"
typo_port=$(sed -n 's|.*serving http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$H/serve-typo.err")
# The token its start-up URL gives, if any, as a scraper sends it.
typo_token=$(sed -n 's|.*serving http://[^ ]*[?#]token=\([^ &#]*\).*|\1|p' "$H/serve-typo.err")
typo_state() {
    curl -sf --max-time 10 ${typo_token:+-H "Authorization: Bearer $typo_token"} \
        "http://127.0.0.1:$typo_port/api/state" -o "$H/serve-typo.state" &&
        grep -qF "waiting for unix:$H/typo.sock: no such socket" "$H/serve-typo.state"
}
if command -v curl >/dev/null 2>&1; then
    wait_until 30 typo_state || fail_showing "$H/serve-typo.state" "serve's state does not say it waits for the socket"
fi
kill "$serve_typo_pid"
wait "$serve_typo_pid" 2>/dev/null
[ "$(grep -c "waiting for" "$H/serve-typo.err")" = 1 ] \
    || fail_showing "$H/serve-typo.err" "serve says more than once what it waits for"
tm_cleanup
rm -rf "$H"

monitor_setup

# --- A file larger than one interval can read: --once reads all of it -------
# About 730 MB: units of a 60000-byte event of a type of its own, 64
# small fixed-size events, and now and then a user message and a marker.
# At --interval 0.05 no machine reads it within one interval, so a view
# printed at the interval's end would show part of it as the run's.
# top --once --json must read to the end: its totals equal what
# ghc-events reads from the whole file, and its state says the file was
# read to its end.  serve on the same file never calls a part the whole:
# while it reads, its state says how much of the file it has read; at
# the end, that it read the file to its end and follows it.
command -v curl >/dev/null 2>&1 || skip "curl not installed"
BIG=$T/big.eventlog
"$PYTHON" - "$BIG" 12000 <<'PY' || fail "cannot write $BIG"
import struct, sys
out = open(sys.argv[1], "wb")
hdr = bytearray(b"hdrbhetb")
for tag, size, desc in [(19, -1, b"User message"), (58, -1, b"User marker"),
                        (200, -1, b"Filler"), (201, 8, b"Tick")]:
    hdr += b"etb\0" + struct.pack(">HhI", tag, size, len(desc)) + desc + b"\0\0\0\0ete\0"
out.write(hdr + b"hetehdredatb")
filler = bytes(range(256)) * 234 + b"x" * 96
for i in range(int(sys.argv[2])):
    t = (i + 1) * 1000000
    unit = bytearray(struct.pack(">HQH", 200, t, len(filler)) + filler)
    unit += struct.pack(">HQQ", 201, t, i) * 64
    if i % 8 == 0:
        m = b"big %d" % i
        unit += struct.pack(">HQH", 19, t, len(m)) + m
    if i % 64 == 0:
        m = b"big phase %d" % i
        unit += struct.pack(">HQH", 58, t, len(m)) + m
    out.write(unit)
out.write(b"\xff\xff")
PY
big_size=$(stat -c %s "$BIG")
show_events "$BIG" "$T/big.show" || fail "ghc-events cannot parse $BIG"
read -r big_events big_msgs big_markers < <(awk '
    /^Events:/ { on = 1; next }
    on && /^ *[0-9]+: / {
        n++
        sub(/^ *[0-9]+: /, "")
        if (index($0, "big ") == 1) u++
        else if (index($0, "marker: ") == 1) m++
    }
    END { print n + 0, u + 0, m + 0 }' "$T/big.show")
rm -f "$T/big.show"
note "big file: $big_size bytes; ghc-events: $big_events events, $big_msgs messages, $big_markers markers"
"$ELS_SINK_TOOL" top --once --json --interval 0.05 "$BIG" >"$T/big.json" 2>"$T/big.err" </dev/null \
    || fail_showing "$T/big.err" "top --once on the big file failed"
read -r got_bytes got_events got_msgs got_markers got_ended < <(json_get "$T/big.json" \
    source.bytes events.total user.messages user.markers source.ended)
big_state=$(json_get "$T/big.json" source.state)
note "top --once --json: $got_bytes bytes, $got_events events, $got_msgs messages, $got_markers markers, state '$big_state'"
[ "$got_bytes $got_events $got_msgs $got_markers $got_ended" = "$big_size $big_events $big_msgs $big_markers true" ] \
    || fail "top --once on the big file: $got_bytes bytes, $got_events events, $got_msgs messages, $got_markers markers, ended $got_ended; the file has $big_size bytes and ghc-events reads $big_events, $big_msgs, $big_markers"
[ "$big_state" = "$BIG read to its end ($big_size bytes)" ] \
    || fail "top --once on the big file: state '$big_state', want '$BIG read to its end ($big_size bytes)'"

"$ELS_SINK_TOOL" serve --listen 127.0.0.1:0 --interval 0.05 "$BIG" >/dev/null 2>"$T/big.serve.err" &
spid=$!
bg_register "$spid"
serve_listening "$T/big.serve.err" "serve on the big file"
# big_read: one look at /api/state (kept in big.looks); true once serve
# has read the whole file.  A look at part of the file must say so.
big_read() {
    state big || return 1
    "$PYTHON" - "$T/big.state" "$big_size" "$BIG" >>"$T/big.looks" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
size, path, s = int(sys.argv[2]), sys.argv[3], d["source"]
print(s["bytes"], s["ended"], s["state"])
if s["bytes"] < size:
    if s["ended"] or not s["state"].startswith("reading %s: " % path) or " of " not in s["state"]:
        print("PART SHOWN AS WHOLE")
    sys.exit(1)
sys.exit(0)
PY
}
: >"$T/big.looks"
wait_until 120 big_read || fail_showing "$T/big.looks" "serve did not read the big file"
! grep -q "PART SHOWN AS WHOLE" "$T/big.looks" \
    || fail_showing "$T/big.looks" "serve showed part of the file without saying it was reading it"
read -r s_events s_msgs s_markers < <(json_get "$T/big.state" events.total user.messages user.markers)
[ "$s_events $s_msgs $s_markers" = "$big_events $big_msgs $big_markers" ] \
    || fail "serve on the big file: $s_events events, $s_msgs messages, $s_markers markers; ghc-events $big_events, $big_msgs, $big_markers"
s_state=$(json_get "$T/big.state" source.state)
[ "$s_state" = "$BIG read to its end ($big_size bytes); following it as it grows" ] \
    || fail "serve on the big file, read whole: state '$s_state'"
note "serve on the big file: $(($(wc -l <"$T/big.looks") - 1)) looks at a part ($(head -1 "$T/big.looks")), then '$s_state'"
kill "$spid"
wait "$spid" 2>/dev/null
rm -f "$BIG"

LOG=$T/busy.eventlog
TMUX_SOCK=$T/tmux.sock

# run_busy NAME PHASES: run the program to its end, eventlog in $LOG.
run_busy() {
    "$BUSY" "$2" +RTS -N2 -I0 -l "-ol$LOG" -RTS </dev/null \
        >"$T/$1.prog.out" 2>"$T/$1.prog.err" \
        || fail_showing "$T/$1.prog.err" "$1: the program failed"
}

pane() { tm capture-pane -p -t els >"$T/pane.txt" 2>/dev/null; }

# pane_shows LINE...: the pane holds every fixed string given.
pane_shows() {
    local s
    pane || return 1
    for s in "$@"; do
        grep -qF -- "$s" "$T/pane.txt" || return 1
    done
}

# expect_pane NAME RUN: the pane shows run RUN with the counts shown_counts
# set.
expect_pane() {
    wait_until 60 pane_shows "run $2 " "[ended]" "GC       $SHOWN_GC collections" \
            "(created $SHOWN_THREADS)" "messages $SHOWN_MSGS  markers $SHOWN_MARKERS " || {
        sed 's/^/#   /' "$T/pane.txt" >&2
        fail "$1: top's pane does not show run $2 with $SHOWN_GC GCs, $SHOWN_THREADS threads, $SHOWN_MSGS messages, $SHOWN_MARKERS markers"
    }
    note "$1: the pane shows what ghc-events reads"
}

# --- Live in a terminal: top is waiting before the file exists ---------
trap 'tm_cleanup; els_cleanup' EXIT
tm new-session -d -s els -x 110 -y 45 \
    "'$ELS_SINK_TOOL' top --interval 0.2 '$LOG'; echo top-exited-\$? >'$T/top.exit'" \
    || fail "tmux could not start a session"
wait_until 30 pane_shows "waiting for $LOG" \
    || { sed 's/^/#   /' "$T/pane.txt" >&2; fail "top does not say it waits for the file"; }

run_busy first 3
shown_counts "$LOG" first
[ "$SHOWN_MARKERS" -eq 7 ] || fail "first: $SHOWN_MARKERS markers in the file, the program posts 7"
expect_pane first 1

# The program runs again: the file is truncated and rewritten.
run_busy second 1
shown_counts "$LOG" second
expect_pane second 2

# Without --control, a control key says so.
tm send-keys -t els f
wait_until 30 pane_shows "control: flush: ELS_ENOTSUP: control is not enabled" \
    || { sed 's/^/#   /' "$T/pane.txt" >&2; fail "f without --control does not say control is not enabled"; }

tm send-keys -t els q
wait_until 30 test -s "$T/top.exit" || fail "top did not quit on q"
grep -qx "top-exited-0" "$T/top.exit" || fail "top exited with $(cat "$T/top.exit")"

# --- For scripts: --once --json and plain lines --------------------------
"$ELS_SINK_TOOL" top --once --json "$LOG" >"$T/once.json" 2>"$T/once.err" \
    || fail_showing "$T/once.err" "top --once --json failed"
read -r gc threads msgs markers ended < <(json_get "$T/once.json" gc.collections \
    threads.created user.messages user.markers source.ended)
note "top --once --json: $gc GCs, $threads threads, $msgs messages, $markers markers, ended $ended"
[ "$gc" -eq "$SHOWN_GC" ] || fail "top --json: $gc GCs, ghc-events $SHOWN_GC"
[ "$threads" -eq "$SHOWN_THREADS" ] || fail "top --json: $threads threads, ghc-events $SHOWN_THREADS"
[ "$msgs" -eq "$SHOWN_MSGS" ] || fail "top --json: $msgs messages, ghc-events $SHOWN_MSGS"
[ "$markers" -eq "$SHOWN_MARKERS" ] || fail "top --json: $markers markers, ghc-events $SHOWN_MARKERS"
[ "$ended" = true ] || fail "top --json: the stream did not end"
# GC time: GC_START to GC_END on the same capability, summed, as read
# by ghc-events (times in ns), against top's seconds; a collection's
# pause: the same on the capability that requested the collection (its
# leader), against top's maximum in milliseconds.
read -r n_pauses max_ns total_ns < <(awk '
    /^ *[0-9]+: cap [0-9]+: requesting (parallel|sequential) GC$/ { lead[$3] = 1 }
    /^ *[0-9]+: cap [0-9]+: starting GC$/ { s[$3] = $1 + 0 }
    /^ *[0-9]+: cap [0-9]+: finished GC$/ {
        p = $1 - s[$3]; t += p
        if (lead[$3]) { n++; if (p > m) m = p }
        lead[$3] = 0
    }
    END { printf "%d %d %d\n", n, m, t }' "$T/second.show")
read -r max_ms time_s < <(json_get "$T/once.json" gc.pause_max_ms gc.time_s)
note "GC pauses: ghc-events $n_pauses collections, max $max_ns ns, GC time $total_ns ns; top max $max_ms ms, GC time $time_s s"
"$PYTHON" -c 'import sys; a, b, c, d = map(float, sys.argv[1:]); sys.exit(0 if abs(a * 1e6 - b) <= 1e-5 * b + 1 and abs(c * 1e9 - d) <= 1e-5 * d + 1 else 1)' \
    "$max_ms" "$max_ns" "$time_s" "$total_ns" \
    || fail "top --json: GC pause max $max_ms ms and GC time $time_s s, ghc-events $max_ns ns and $total_ns ns"
# Time in GC: the share of the capabilities' time, never over 1: the
# pauses ghc-events reads, summed over capabilities, over the run's span
# (its first event to its last) times the capabilities.
# (Its events: the lines after "Events:", not the event types' list.)
read -r n_caps last_ns < <(awk '
    /^Events:/ { on = 1 }
    on && /^ *[0-9]+: / { t = $1 + 0; if (t > m) m = t; if (f == "" || t < f) f = t }
    /^ *[0-9]+: cap [0-9]+: / { c[$3] = 1 }
    END { n = 0; for (k in c) n++; printf "%d %d\n", n, m - f }' "$T/second.show")
read -r frac frac_caps < <(json_get "$T/once.json" gc.time_frac gc.time_frac_caps)
note "time in GC: top $frac of $frac_caps caps' time; ghc-events $total_ns ns / ($last_ns ns x $n_caps caps)"
[ "$frac_caps" -eq "$n_caps" ] || fail "top --json: time in GC over $frac_caps caps, ghc-events shows $n_caps"
"$PYTHON" -c 'import sys; f, t, l, n = map(float, sys.argv[1:]); w = t / (l * n); sys.exit(0 if 0 <= f <= 1 and abs(f - w) <= 1e-5 * w + 1e-9 else 1)' \
    "$frac" "$total_ns" "$last_ns" "$n_caps" \
    || fail "top --json: time in GC $frac, ghc-events gives $total_ns / ($last_ns x $n_caps)"

"$ELS_SINK_TOOL" top --once "$LOG" >"$T/once.txt" 2>&1 </dev/null \
    || fail_showing "$T/once.txt" "top --once failed"
grep -q $'\x1b' "$T/once.txt" && fail "top without a terminal wrote escape sequences"
grep -qF "GC       $SHOWN_GC collections" "$T/once.txt" || fail_showing "$T/once.txt" "top --once lacks the GC line"
grep -qE "time in GC [0-9.]+% of $n_caps caps' time" "$T/once.txt" \
    || fail_showing "$T/once.txt" "top --once does not say time in GC is a share of the $n_caps caps' time"

# Stopped by SIGINT before its first interval, plain-lines top still ends
# its output with a view of what it read.
# (--save tells when it has read the whole file.)
"$ELS_SINK_TOOL" top --lines --interval 3600 --save "$T/int.eventlog" "$LOG" \
    >"$T/int.txt" 2>&1 </dev/null &
top_pid=$!
saved_all() { cmp -s "$LOG" "$T/int.eventlog"; }
wait_until 30 saved_all || fail "top --save did not copy the whole file"
[ -s "$T/int.txt" ] && fail_showing "$T/int.txt" "top --interval 3600 printed before its first interval"
kill -INT "$top_pid"
wait "$top_pid" || fail_showing "$T/int.txt" "top stopped by SIGINT exited with $?"
grep -qF "GC       $SHOWN_GC collections" "$T/int.txt" || fail_showing "$T/int.txt" "top stopped by SIGINT printed no last view"

# A malformed file: one line, exit 1.
head -c 200 "$LOG" >"$T/bad.eventlog"
printf 'garbage' >>"$T/bad.eventlog"
"$ELS_SINK_TOOL" top --once --json "$T/bad.eventlog" >"$T/bad.json" 2>&1 && rc=0 || rc=$?
[ "$rc" -eq 1 ] || fail "top --once on a malformed file: exit $rc, expected 1"
[ "$(json_get "$T/bad.json" source.error)" != None ] || fail "top --json does not report the malformed stream"
# --- Control keys (--control) on a live program with control=1 -------------
csock=$T/c.sock
tm new-session -d -s ctl -x 200 -y 60 \
    "'$ELS_SINK_TOOL' top --control --interval 0.2 'unix:$csock'; echo top-exited-\$? >'$T/ctl.exit'" \
    || fail "tmux could not start the control session"
# Two more monitors started before the program, as the README orders
# it: top --json and serve, both with --control.
"$ELS_SINK_TOOL" top --control --json --interval 0.2 "unix:$csock" \
    >"$T/ctl.json" 2>"$T/ctl.json.err" </dev/null &
ctl_json_pid=$!
bg_register "$ctl_json_pid"
"$ELS_SINK_TOOL" serve --control --listen 127.0.0.1:0 "unix:$csock" >/dev/null 2>"$T/ctl.serve.err" &
ctl_serve_pid=$!
bg_register "$ctl_serve_pid"
serve_listening "$T/ctl.serve.err" "serve --control"
start_busy_live ctl 1 "$csock" control=1 -hT
# cpane_shows LINE...: the control session's pane (wrapped lines joined)
# holds every fixed string given.
cpane_shows() {
    local s
    tm capture-pane -p -J -t ctl >"$T/cpane.txt" 2>/dev/null || return 1
    for s in "$@"; do
        grep -qF -- "$s" "$T/cpane.txt" || return 1
    done
}
# key NAME KEYS... -- LINE: send KEYS, wait until the pane shows LINE.
key() {
    local name=$1 keys=()
    shift
    while [ "$1" != -- ]; do keys+=("$1"); shift; done
    tm send-keys -t ctl "${keys[@]}"
    wait_until 30 cpane_shows "$2" || {
        sed 's/^/#   /' "$T/cpane.txt" >&2
        fail "$name: after the keys ${keys[*]} top's status line lacks '$2'"
    }
    note "$name: $(grep -F -- "control: " "$T/cpane.txt" | head -1)"
}
# The patched RTS is required here, so every command the keys send must
# work: a missing one fails the test (it is not an "unknown command" to
# expect).
control_must_have ctl "$csock" flush snapshot heap-census get-classes set-classes
# The monitors started before the program connect their control session
# as its stream comes, before any key or button.
wait_until 30 cpane_shows "control: connected to unix:$csock" \
    || { sed 's/^/#   /' "$T/cpane.txt" >&2; fail "top's control did not connect when the program came (no key pressed)"; }
ctl_json_ready() {
    "$PYTHON" - "$T/ctl.json" "unix:$csock" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    try:
        c = json.loads(line)["control"]
    except (ValueError, KeyError):
        continue
    if c["ready"] and c["state"] == "connected to " + sys.argv[2] and c["last"] is None:
        sys.exit(0)
sys.exit(1)
PY
}
wait_until 30 ctl_json_ready \
    || fail_showing "$T/ctl.json" "top --json --control: control did not connect when the program came"
note "control connected without a key: $(grep -F -- "control: " "$T/cpane.txt" | head -1)"
# serve's page: the session connected before any button; then four
# buttons, and the page keeps each answer, newest first, with the
# command it sent and the time.
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -n "$CHROMIUM" ]; then
    cat >"$T/ctl.steps.json" <<'EOF'
[{"click": "#ctl-status", "wait": "document.querySelectorAll('#ctl-answer .ctl-entry.ok').length == 1", "read": "null"},
 {"click": "#ctl-flush", "wait": "document.querySelectorAll('#ctl-answer .ctl-entry.ok').length == 2", "read": "null"},
 {"click": "#ctl-class-u", "wait": "document.querySelectorAll('#ctl-answer .ctl-entry.ok').length == 3", "read": "null"},
 {"click": "#ctl-class-u", "wait": "document.querySelectorAll('#ctl-answer .ctl-entry.ok').length == 4", "read": "null"}]
EOF
    ELS_BROWSER_STEPS=$T/ctl.steps.json "$PYTHON" "$ELS_TOP_SRCDIR/tests/monitor/browser.py" "$CHROMIUM" \
        "$SERVE_URL" 'document.getElementById("ctl-state").textContent.startsWith("connected to ")' \
        '[...document.querySelectorAll("#ctl-answer .ctl-entry")].map((e) => e.textContent)' \
        "$T/ctl.png" 60 >"$T/ctl.page.json" 2>"$T/ctl.browser.err" \
        || fail_showing "$T/ctl.browser.err" "serve --control's page: control did not connect when the program came, or its answers"
    "$PYTHON" - "$T/ctl.page.json" "$csock" <<'PY' || fail_showing "$T/ctl.page.json" "the page does not keep the answers, newest first, with command and time"
import json, re, sys
got = json.load(open(sys.argv[1]))["values"]
stamp = r" +\[\d\d:\d\d:\d\d, sent: %s\]"
want = [r"toggle-class u: ok: \S*" + stamp % r"set-classes [+-]u",
        r"toggle-class u: ok: \S*" + stamp % r"set-classes [+-]u",
        r"flush: ok" + stamp % "flush",
        r"status: ok: running on unix:%s; .*" % re.escape(sys.argv[2]) + stamp % "status"]
assert len(got) == len(want), got
for g, w in zip(got, want):
    assert re.fullmatch(w, g), (g, w)
# The two toggles sent opposite changes.
assert got[0][-3] != got[1][-3], got[:2]
print("# page answers: " + " | ".join(got))
PY
else
    note "chromium not installed: the page's answers are not checked"
fi
kill "$ctl_json_pid" "$ctl_serve_pid"
wait "$ctl_json_pid" "$ctl_serve_pid" 2>/dev/null
key status i -- "control: status: ok: running on unix:$csock; protocol 2; consumers "
key stats t -- "control: stats: ok: units accepted "
for k in "f flush" "s snapshot" "h heap-census"; do
    set -- $k
    key "$2" "$1" -- "control: $2: ok"
done
classes=$("$ELS_SINK_TOOL" ctl "unix:$csock" get-classes | sed 's/^get-classes: //')
# The classes after the toggle, in the order sgnpfu.
want=
for l in s g n p f u; do
    case $classes in *$l*) on=1 ;; *) on=0 ;; esac
    [ "$l" = g ] && on=$(( 1 - on ))
    [ "$on" = 1 ] && want+=$l
done
key toggle-class c g -- "control: toggle-class g: ok: $want"
key stop-cancelled X n -- "control: stop cancelled"
# restart: the stream ends and a new one starts; top follows it, and the
# next key opens a new session.
key restart R -- "control: restart: ok: accepted; the stream ends now"
wait_until 30 cpane_shows "run 2 " || { sed 's/^/#   /' "$T/cpane.txt" >&2; fail "top does not show the restarted stream"; }
key status-again i -- "control: status: ok: running on unix:$csock"
key stop X y -- "control: stop: ok: accepted; the stream ends now"
wait_until 30 cpane_shows "[ended]" || { sed 's/^/#   /' "$T/cpane.txt" >&2; fail "top does not show the stopped stream's end"; }
kill -0 "$ppid" 2>/dev/null || fail "the program died on stop"
stop_controlled
wait_pid "$ppid" 60 || fail_showing "$T/ctl.prog.err" "the program did not exit cleanly after stop"
tm send-keys -t ctl q
wait_until 30 test -s "$T/ctl.exit" || fail "top --control did not quit on q"
grep -qx "top-exited-0" "$T/ctl.exit" || fail "top --control exited with $(cat "$T/ctl.exit")"

echo "PASS: $els_test_name"
