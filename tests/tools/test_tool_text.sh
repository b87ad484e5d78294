#!/usr/bin/env bash
# test_tool_text.sh: text that a stream, a file or a peer chose never
# reaches the terminal raw from `dump`, `dump --counts` or `ctl`.
#
# - A file whose header descriptions, messages, markers and thread label
#   hold escape sequences (OSC title change, clear screen), C1 controls,
#   DEL, a bidirectional override and bytes that are not UTF-8: `dump` and
#   `dump --counts` print only valid UTF-8 with no control character but
#   newline, and the escaped forms (\u{1B}, \xFF) show what arrived.
# - A fake control server on a UNIX socket (python3, speaking just the
#   control-only part of docs/CONTROL.md) answers every command with such
#   text, one with an error: `ctl`'s stdout and stderr hold none of it
#   raw; `ctl --json` prints valid JSON whose "result" is the exact text
#   (bytes that are not UTF-8 become U+FFFD, which JSON cannot avoid).
#
# Needs python3 (skips, 77, without it); no GHC.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"

TOOL=${TOOL:-$ELS_SINK_TOOL}
[ -x "$TOOL" ] || fail "tool not built: $TOOL"
command -v python3 >/dev/null 2>&1 || skip "python3 not installed"
make_tmpdir
T=$ELS_TMP

# clean_text FILE: FILE is valid UTF-8 holding no C0 control but newline,
# no DEL, no C1 control, no bidirectional override or isolate and no
# line or paragraph separator.  Says what it found otherwise.
clean_text() {
    python3 - "$1" <<'EOF'
import sys
data = open(sys.argv[1], 'rb').read()
try:
    text = data.decode('utf-8')
except UnicodeDecodeError as e:
    sys.exit('%s: not UTF-8 at byte %d: %r' % (sys.argv[1], e.start,
             data[max(0, e.start - 20):e.start + 20]))
bad = set(range(0x20)) - {0x0a}
bad |= {0x7f} | set(range(0x80, 0xa0)) | set(range(0x202a, 0x202f))
bad |= set(range(0x2066, 0x206a)) | {0x2028, 0x2029}
for i, ch in enumerate(text):
    if ord(ch) in bad:
        sys.exit('%s: raw U+%04X at character %d: %r' % (sys.argv[1], ord(ch),
                 i, text[max(0, i - 20):i + 20]))
EOF
}

# ---------------------------------------------------------------------------
# dump and dump --counts on a hostile file
# ---------------------------------------------------------------------------

python3 - "$T/hostile.eventlog" <<'EOF'
import struct, sys
ESC = b'\x1b'
title = ESC + b']0;pwned' + b'\x07'         # OSC: retitle the window
clear = ESC + b'[2J' + ESC + b'[H'           # clear the screen
c1 = b'\xc2\x9b' + b'31m'                    # CSI as a C1 control (U+009B)
bidi = '\u202e'.encode()                     # right-to-left override
junk = b'\xff\xfe\x9b' + b'\x7f'             # not UTF-8, and DEL

def u16(v): return struct.pack('>H', v)
def u32(v): return struct.pack('>I', v)
def u64(v): return struct.pack('>Q', v)

def etype(tag, size, desc):
    return (u32(0x65746200) + u16(tag) + u16(size & 0xffff) + u32(len(desc))
            + desc + u32(0) + u32(0x65746500))

out = b'hdrb' + b'hetb'
out += etype(16, -1, b'Log ' + title + b'message')
out += etype(18, 14, b'Block marker')
out += etype(19, -1, b'User ' + clear + b'message ' + junk)
out += etype(44, -1, b'Thread ' + c1 + b'label' + bidi)
out += etype(58, -1, b'User marker\r\nfake line')
out += b'hete' + b'hdre' + b'datb'

events = b''
t = 1
def ev(tag, payload, variable=True):
    global t, events
    t += 1
    events += u16(tag) + u64(t) + (u16(len(payload)) if variable else b'') + payload
ev(19, b'hello ' + title + clear + b'world ' + junk)
ev(16, b'log ' + c1 + bidi + b'\x00\x01\x08 tail')
ev(58, b'marker\nsecond line ' + ESC + b'[1A')
ev(44, u32(7) + b'worker ' + ESC + b'P+q' + ESC + b'\\')
block = u16(18) + u64(1) + u32(24 + len(events)) + u64(t) + u16(0) + events
out += block + u16(0xffff)
open(sys.argv[1], 'wb').write(out)
EOF

rc=0
"$TOOL" dump "$T/hostile.eventlog" >"$T/dump.out" 2>"$T/dump.err" || rc=$?
[ "$rc" -eq 0 ] || fail_showing "$T/dump.err" "dump: exit status $rc on the hostile file, expected 0"
clean_text "$T/dump.out" || fail "dump: stream text reached the output raw"
clean_text "$T/dump.err" || fail "dump: stream text reached stderr raw"
grep -qF 'hello \u{1B}]0;pwned\u{07}\u{1B}[2J\u{1B}[Hworld \xFF\xFE\x9B\u{7F}' "$T/dump.out" \
    || fail_showing "$T/dump.out" "dump: the user message is not shown in its escaped form"
grep -qF 'User \u{1B}[2J\u{1B}[Hmessage' "$T/dump.out" \
    || fail_showing "$T/dump.out" "dump: the description is not shown in its escaped form"
[ "$(wc -l <"$T/dump.out")" -eq 5 ] \
    || fail_showing "$T/dump.out" "dump: expected 5 lines (4 events and the block marker): a newline from the stream broke a line?"
note "dump: $(grep -c . "$T/dump.out") lines, no raw control"

rc=0
"$TOOL" dump --counts "$T/hostile.eventlog" >"$T/counts.out" 2>"$T/counts.err" || rc=$?
[ "$rc" -eq 0 ] || fail_showing "$T/counts.err" "dump --counts: exit status $rc, expected 0"
clean_text "$T/counts.out" || fail "dump --counts: a description reached the output raw"
grep -qxF '1 44 Thread \u{9B}31mlabel\u{202E}' "$T/counts.out" \
    || fail_showing "$T/counts.out" "dump --counts: the thread label's description is not in its escaped form"
grep -qxF '1 58 User marker\r\nfake line' "$T/counts.out" \
    || fail_showing "$T/counts.out" "dump --counts: a description's newline was printed as a line break"
[ "$(wc -l <"$T/counts.out")" -eq 6 ] \
    || fail_showing "$T/counts.out" "dump --counts: expected 6 lines (5 types and the end line)"

# ---------------------------------------------------------------------------
# ctl against a hostile control server
# ---------------------------------------------------------------------------

SOCK=$T/ctl.sock
cat >"$T/server.py" <<'EOF'
# Just enough of docs/CONTROL.md (version 2, control-only session): read a
# hello, send its nonce, a hello answer, then answer each command frame
# with the next hostile text (the second one an error).  Serves clients
# one after the other until killed.
import os, socket, struct, sys
path, ready = sys.argv[1], sys.argv[2]
ESC = b'\x1b'
texts = [
    (0, b'running ' + ESC + b']0;pwned\x07' + ESC + b'[2J\r\n\xc2\x9b31m\xe2\x80\xae tail \\ "q"'),
    (-22, b'ELS_EINVAL: bad ' + ESC + b'[31mred\x7f\x01 \xff end'),
]

def read_exact(c, n):
    b = b''
    while len(b) < n:
        d = c.recv(n - len(b))
        if not d:
            raise EOFError
        b += d
    return b

def frame():
    h = read_exact(conn, 8)
    assert h[:4] == b'ELSC', h
    return h[5], read_exact(conn, struct.unpack('>H', h[6:8])[0])

def answer(kind, rid, status, text):
    conn.sendall(b'ELSR' + bytes([2, kind]) + struct.pack('>IiH', rid, status, len(text)) + text)

s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(4)
open(ready, 'w').close()
while True:
    conn, _ = s.accept()
    try:
        kind, payload = frame()
        assert kind == 1 and len(payload) == 17, (kind, payload)
        conn.sendall(b'some stream bytes' + payload[1:])
        answer(0x81, 0, 0, b'')
        n = 0
        while True:
            kind, payload = frame()
            rid = struct.unpack('>I', payload[:4])[0]
            status, text = texts[n % len(texts)]
            answer(0x82, rid, status, text)
            n += 1
    except (EOFError, ConnectionError):
        pass
    conn.close()
EOF
python3 "$T/server.py" "$SOCK" "$T/server.ready" 2>"$T/server.err" &
bg_register $!
wait_for_file "$T/server.ready" 30 || fail_showing "$T/server.err" "the fake control server did not start"

rc=0
"$TOOL" ctl --timeout 20 "unix:$SOCK" status , stats >"$T/ctl.out" 2>"$T/ctl.err" || rc=$?
[ "$rc" -eq 1 ] || fail_showing "$T/ctl.err" "ctl: exit status $rc, expected 1 (the second answer is an error)"
clean_text "$T/ctl.out" || fail "ctl: an answer reached stdout raw"
clean_text "$T/ctl.err" || fail "ctl: an error text reached stderr raw"
grep -qxF 'status: running \u{1B}]0;pwned\u{07}\u{1B}[2J\r\n\u{9B}31m\u{202E} tail \\ "q"' "$T/ctl.out" \
    || fail_showing "$T/ctl.out" "ctl: the answer is not shown in its escaped form"
grep -qxF 'eventlog-sink ctl: stats: ELS_EINVAL: bad \u{1B}[31mred\u{7F}\u{01} \xFF end' "$T/ctl.err" \
    || fail_showing "$T/ctl.err" "ctl: the error text is not shown in its escaped form"

rc=0
"$TOOL" ctl --json --timeout 20 "unix:$SOCK" status , stats >"$T/json.out" 2>"$T/json.err" || rc=$?
[ "$rc" -eq 1 ] || fail_showing "$T/json.err" "ctl --json: exit status $rc, expected 1"
clean_text "$T/json.out" || fail "ctl --json: a control character reached the output raw"
python3 - "$T/json.out" <<'EOF' || fail_showing "$T/json.out" "ctl --json: not the exact texts"
import json, sys
lines = open(sys.argv[1], 'rb').read().decode('utf-8').splitlines()
assert len(lines) == 2, lines
a, b = (json.loads(l) for l in lines)
want_a = '\x1b]0;pwned\x07\x1b[2J\r\n\x9b31m\u202e tail \\ "q"'
assert a == {"command": "status", "ok": True, "status": 0, "error": None,
             "result": "running " + want_a}, a
assert b == {"command": "stats", "ok": False, "status": -22,
             "error": "ELS_EINVAL", "result": "bad \x1b[31mred\x7f\x01 \ufffd end"}, b
EOF
note "ctl: answers escaped on the terminal, exact in --json"
exit 0
