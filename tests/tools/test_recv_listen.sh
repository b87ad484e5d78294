#!/usr/bin/env bash
# test_recv_listen.sh: `eventlog-sink recv --listen` against hostile
# clients and a hostile directory, and the tool's use of the library.
#
# - A client that connects and stays silent does not outlast --timeout:
#   the receiver gives up at the deadline with exit status 1 and says
#   nobody connected (a silent connection may be a probe, never a
#   producer until its first byte).
# - The producer is found among other connections (Note [Waiting for the
#   producer] in tools/recv/listen.c): with a connection that sends
#   garbage and ten that send nothing (more than the 8 that may wait),
#   the real producer connecting last is received byte for byte, within
#   --timeout; the garbage and the excess are closed at once while the
#   receiver still waits, and counted on stderr.  A connection that sends
#   nothing (as uid 65534 when run as root) is closed at its 5 s header
#   deadline while the receiver waits on, and the producer after it is
#   received.  The stream is built here (python3): no GHC needed.
# - The UNIX socket file has mode 0600 from the moment the path names it,
#   and nothing changes a mode by path afterwards: a user who swaps the
#   new socket for a symbolic link as soon as it appears (done here by an
#   LD_PRELOAD shim around bind() and the renames that put a file in
#   place, standing for a race another user can win) must not get the
#   link's target chmod'ed.
# - The tool calls only the library's public names (els_*): none of its
#   objects refers to an internal elsi_ symbol.
#
# Uses $ELS_TOP_BUILDDIR/tools/eventlog-sink, or RECV=path.  Skips (77)
# without a C compiler for the shim; without python3 (the producer among
# others) or nm (the public names) that part is skipped (SKIPPED PART), and
# fails under ELS_REQUIRE_ALL=1 (scripts/install-deps.sh installs both).
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"

RECV=${RECV:-$ELS_SINK_TOOL}
[ -x "$RECV" ] || skip "receiver not built: $RECV"
make_tmpdir
umask 022
T=$ELS_TMP

# ---------------------------------------------------------------------------
# A silent client and --timeout
# ---------------------------------------------------------------------------

"$RECV" recv --listen --timeout 3 -o "$T/silent.eventlog" tcp:127.0.0.1:0 \
    >"$T/silent.out" 2>"$T/silent.err" </dev/null &
rpid=$!
bg_register "$rpid"
endpoint=$(listening_endpoint "$T/silent.err" "$rpid" 30) \
    || fail_showing "$T/silent.err" "silent: no 'listening on' line"
port=${endpoint##*:}
# Connected and silent for as long as the receiver runs.
exec 8<>"/dev/tcp/127.0.0.1/$port" || fail "silent: cannot connect to $endpoint"
rc=0
wait_pid "$rpid" 60 || rc=$?
exec 8>&-
[ "$rc" -ne 124 ] || fail "silent: a silent client held the receiver past --timeout 3 (still waiting after 60 s)"
[ "$rc" -eq 1 ] || fail_showing "$T/silent.err" "silent: exit status $rc, expected 1"
grep -qF "no producer connected to $endpoint within 3 s" "$T/silent.err" \
    || fail_showing "$T/silent.err" "silent: no 'no producer connected' line"
[ ! -e "$T/silent.eventlog" ] || fail "silent: an output file was created for nobody"

# ---------------------------------------------------------------------------
# The producer among idle, garbage and excess connections
# ---------------------------------------------------------------------------

# send_stream PORT FILE: connect to 127.0.0.1:PORT, send FILE, close.
send_stream() {
    python3 -c 'import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(open(sys.argv[2], "rb").read())
s.close()' "$1" "$2"
}

# ready_or_gone FILE PID: FILE exists, or process PID has exited.
ready_or_gone() {
    [ -e "$1" ] || ! kill -0 "$2" 2>/dev/null
}

if part_needs producer-among-others python3; then
    # A valid stream of about 160 KiB: header, 40 blocks of user messages,
    # DATA_END.
    python3 - "$T/stream.eventlog" <<'PY'
import struct, sys
def u16(v): return struct.pack('>H', v)
def u32(v): return struct.pack('>I', v)
def u64(v): return struct.pack('>Q', v)
def etype(tag, size, desc):
    return (u32(0x65746200) + u16(tag) + u16(size & 0xffff) + u32(len(desc))
            + desc + u32(0) + u32(0x65746500))
out = (b'hdrb' + b'hetb' + etype(16, -1, b'Log message') + etype(18, 14, b'Block marker')
       + etype(19, -1, b'User message') + b'hete' + b'hdre' + b'datb')
t = 0
for blk in range(40):
    evs = b''
    t0 = t
    for i in range(200):
        t += 1
        msg = b'producer %d.%d' % (blk, i)
        evs += u16(19) + u64(t) + u16(len(msg)) + msg
    out += u16(18) + u64(t0) + u32(24 + len(evs)) + u64(t) + u16(0) + evs
out += u16(0xffff)
open(sys.argv[1], 'wb').write(out)
PY
    # crowd.py PORT READY: one connection sends garbage and must be closed
    # (EOF or reset) before the next step; then ten connect and send
    # nothing, and at least two (beyond the 8 that may wait) must be
    # closed at once.  Writes READY and holds the rest open until killed.
    # Each wait is bounded by 30 s (a hang guard, not a measure).
    cat >"$T/crowd.py" <<'PY'
import select, socket, sys, time
port, ready = int(sys.argv[1]), sys.argv[2]
def closed(c, secs):
    r, _, _ = select.select([c], [], [], secs)
    if not r:
        return False
    try:
        return c.recv(1) == b''
    except ConnectionError:
        return True
g = socket.create_connection(('127.0.0.1', port))
g.sendall(b'GET / HTTP/1.0\r\n\r\n')
if not closed(g, 30):
    sys.exit('crowd: the garbage connection was not closed within 30 s')
idle = [socket.create_connection(('127.0.0.1', port)) for _ in range(10)]
end = time.monotonic() + 30
gone = set()
while len(gone) < 2 and time.monotonic() < end:
    r, _, _ = select.select([c for c in idle if c not in gone], [], [], 1)
    for c in r:
        if closed(c, 0):
            gone.add(c)
if len(gone) < 2:
    sys.exit('crowd: %d of 10 idle connections closed within 30 s, expected at least 2 (beyond 8 waiting)' % len(gone))
open(ready, 'w').close()
time.sleep(3600)
PY
    "$RECV" recv --listen --timeout 60 -o "$T/crowd.eventlog" tcp:127.0.0.1:0 \
        >"$T/crowd.out" 2>"$T/crowd.err" </dev/null &
    rpid=$!
    bg_register "$rpid"
    endpoint=$(listening_endpoint "$T/crowd.err" "$rpid" 30) \
        || fail_showing "$T/crowd.err" "crowd: no 'listening on' line"
    port=${endpoint##*:}
    python3 "$T/crowd.py" "$port" "$T/crowd.ready" 2>"$T/crowd.py.err" &
    cpid=$!
    bg_register "$cpid"
    wait_until 60 ready_or_gone "$T/crowd.ready" "$cpid" || true
    [ -e "$T/crowd.ready" ] || fail_showing "$T/crowd.py.err" "crowd: the receiver did not judge the other connections"
    kill -0 "$rpid" 2>/dev/null || fail_showing "$T/crowd.err" "crowd: the receiver exited before the producer came"
    # The producer, last, while eight idle connections still wait.
    send_stream "$port" "$T/stream.eventlog" || fail "crowd: the producer could not connect or send"
    rc=0
    wait_pid "$rpid" 60 || rc=$?
    kill "$cpid" 2>/dev/null
    [ "$rc" -eq 0 ] || fail_showing "$T/crowd.err" "crowd: exit status $rc, expected 0 (the producer received)"
    cmp -s "$T/crowd.eventlog" "$T/stream.eventlog" \
        || fail "crowd: what the receiver wrote differs from what the producer sent"
    grep -qE 'closed connections to tcp:127\.0\.0\.1:[0-9]+ that were not a producer, so far: [0-9]+ sent no eventlog header within 5 s, 1 sent something else, ([2-9]|[1-9][0-9]) beyond 8 waiting' "$T/crowd.err" \
        || fail_showing "$T/crowd.err" "crowd: the closed connections were not counted on stderr"
    note "crowd: received $(stat -c %s "$T/crowd.eventlog") bytes past 11 other connections; $(grep -c 'not a producer' "$T/crowd.err") report line(s)"

    # A connection that stays silent (as another user when we can) is
    # closed at its header deadline while the receiver waits on.
    "$RECV" recv --listen --timeout 60 -o "$T/late.eventlog" tcp:127.0.0.1:0 \
        >"$T/late.out" 2>"$T/late.err" </dev/null &
    rpid=$!
    bg_register "$rpid"
    endpoint=$(listening_endpoint "$T/late.err" "$rpid" 30) \
        || fail_showing "$T/late.err" "late: no 'listening on' line"
    port=${endpoint##*:}
    # Reads until the receiver closes the connection, then says "closed".
    silent='exec 9<>"/dev/tcp/127.0.0.1/$1" || exit 1; cat <&9 >/dev/null; echo closed'
    who="this user"
    if can_run_as 65534; then
        who="uid 65534"
        as_user_bg 65534 timeout 30 bash -c "$silent" _ "$port" >"$T/silent.state" 2>&1
    else
        timeout 30 bash -c "$silent" _ "$port" >"$T/silent.state" 2>&1 &
    fi
    spid=$!
    bg_register "$spid"
    wait_pid "$spid" 60 || true
    grep -qx closed "$T/silent.state" \
        || fail_showing "$T/late.err" "late: a silent connection of $who was not closed within 30 s ($(cat "$T/silent.state"))"
    kill -0 "$rpid" 2>/dev/null || fail_showing "$T/late.err" "late: the receiver exited instead of waiting on"
    send_stream "$port" "$T/stream.eventlog" || fail "late: the producer could not connect or send"
    rc=0
    wait_pid "$rpid" 60 || rc=$?
    [ "$rc" -eq 0 ] || fail_showing "$T/late.err" "late: exit status $rc, expected 0"
    cmp -s "$T/late.eventlog" "$T/stream.eventlog" || fail "late: the copy differs from what was sent"
    grep -qF 'that were not a producer, so far: 1 sent no eventlog header within 5 s, 0 sent something else, 0 beyond 8 waiting' "$T/late.err" \
        || fail_showing "$T/late.err" "late: the silent connection was not counted"
    note "late: a silent connection of $who closed at its header deadline; the producer then received"
fi

# ---------------------------------------------------------------------------
# Socket file mode, and the symlink swap
# ---------------------------------------------------------------------------

CC=${CC:-cc}
command -v "$CC" >/dev/null 2>&1 || skip "no C compiler ($CC) for the bind() shim"
cat >"$T/shim.c" <<'EOF'
/* When the socket first appears at the path asked for (SHIM_PATH), by
 * bind() there or by a rename into place: record its mode
 * (SHIM_MODE_FILE), then, as a hostile user with write access to the
 * directory could, move the socket away and put a symbolic link to
 * SHIM_VICTIM in its place.  Whatever the receiver then does by path
 * (a chmod) would reach the victim. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static void appeared(const char *name)
{
    const char *want = getenv("SHIM_PATH");
    if (want == NULL || name == NULL)
        return;
    const char *wb = strrchr(want, '/'), *nb = strrchr(name, '/');
    wb = wb ? wb + 1 : want;
    nb = nb ? nb + 1 : name;
    if (strcmp(wb, nb) != 0)
        return;
    struct stat st;
    FILE *f = fopen(getenv("SHIM_MODE_FILE"), "w");
    if (f != NULL && lstat(want, &st) == 0)
        fprintf(f, "%o\n", (unsigned)(st.st_mode & 07777));
    if (f != NULL)
        fclose(f);
    const char *victim = getenv("SHIM_VICTIM");
    if (victim != NULL) {
        char moved[300];
        snprintf(moved, sizeof moved, "%s.moved", want);
        rename(want, moved);
        symlink(victim, want);
    }
}

int bind(int fd, const struct sockaddr *sa, socklen_t len)
{
    int (*real)(int, const struct sockaddr *, socklen_t) =
        (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "bind");
    int rc = real(fd, sa, len);
    if (rc == 0 && sa->sa_family == AF_UNIX)
        appeared(((const struct sockaddr_un *)sa)->sun_path);
    return rc;
}

int renameat2(int od, const char *o, int nd, const char *n, unsigned flags)
{
    int (*real)(int, const char *, int, const char *, unsigned) =
        (int (*)(int, const char *, int, const char *, unsigned))dlsym(RTLD_NEXT, "renameat2");
    int rc = real(od, o, nd, n, flags);
    if (rc == 0)
        appeared(n);
    return rc;
}

int renameat(int od, const char *o, int nd, const char *n)
{
    int (*real)(int, const char *, int, const char *) =
        (int (*)(int, const char *, int, const char *))dlsym(RTLD_NEXT, "renameat");
    int rc = real(od, o, nd, n);
    if (rc == 0)
        appeared(n);
    return rc;
}
EOF
"$CC" -shared -fPIC -o "$T/shim.so" "$T/shim.c" -ldl >"$T/shim.log" 2>&1 \
    || fail_showing "$T/shim.log" "cannot build the bind() shim"

# Plain: the file is 0600 when it first appears at the path.
rc=0
SHIM_PATH=$T/m.sock SHIM_MODE_FILE=$T/mode LD_PRELOAD=$T/shim.so \
    "$RECV" recv --listen --timeout 0.2 -o "$T/m.eventlog" "unix:$T/m.sock" \
    >"$T/m.out" 2>"$T/m.err" </dev/null || rc=$?
[ "$rc" -eq 1 ] || fail_showing "$T/m.err" "mode: exit status $rc, expected 1 (nobody connected)"
[ -s "$T/mode" ] || fail_showing "$T/m.err" "mode: the shim never saw $T/m.sock appear"
[ "$(cat "$T/mode")" = 600 ] \
    || fail "mode: the socket file appeared with mode $(cat "$T/mode"), not 600 (set afterwards by path?)"
[ ! -e "$T/m.sock" ] || fail "mode: the socket file was left behind"

# Swapped for a link to a file of this user's: its mode must not change,
# and the link is not the receiver's to remove.
echo secret >"$T/victim"
chmod 0644 "$T/victim"
rc=0
SHIM_PATH=$T/s.sock SHIM_MODE_FILE=$T/mode2 SHIM_VICTIM=$T/victim LD_PRELOAD=$T/shim.so \
    "$RECV" recv --listen --timeout 0.2 -o "$T/s.eventlog" "unix:$T/s.sock" \
    >"$T/s.out" 2>"$T/s.err" </dev/null || rc=$?
note "swap: recv exited $rc: $(tr '\n' ' ' <"$T/s.err")"
[ "$(stat -c %a "$T/victim")" = 644 ] \
    || fail "swap: the link's target changed mode to $(stat -c %a "$T/victim") (a chmod by path followed the swapped-in link)"
[ "$(cat "$T/victim")" = secret ] || fail "swap: the link's target was modified"
[ -L "$T/s.sock" ] || fail "swap: the receiver removed a link it did not create"

# ---------------------------------------------------------------------------
# Public names only
# ---------------------------------------------------------------------------

objs=$(find "$ELS_TOP_BUILDDIR/tools" -name 'eventlog_sink-*.o' 2>/dev/null)
[ -n "$objs" ] || fail "public names: no object of the tool (eventlog_sink-*.o) under $ELS_TOP_BUILDDIR/tools"
if part_needs public-names nm; then
    # shellcheck disable=SC2086 # one word per object
    internal=$(nm -u $objs | grep -o 'elsi_[A-Za-z0-9_]*' | sort -u | tr '\n' ' ')
    [ -z "$internal" ] || fail "the tool calls internal library functions: $internal"
fi
exit 0
