#!/usr/bin/env bash
# test_recv_listen.sh: `eventlog-sink recv --listen` against hostile
# clients and a hostile directory, and the tool's use of the library.
#
# - A client that connects and stays silent does not outlast --timeout:
#   the receiver gives up at the deadline with exit status 1 and says
#   nobody connected (a silent connection may be a probe, never a
#   producer until its first byte).
# - The UNIX socket file exists with mode 0600 from the moment bind()
#   creates it, and nothing changes a mode by path afterwards: a user who
#   swaps the new socket for a symbolic link right after bind() (done here
#   by an LD_PRELOAD shim around bind(), standing for a race another user
#   can win) must not get the link's target chmod'ed.
# - The tool calls only the library's public names (els_*): none of its
#   objects refers to an internal elsi_ symbol.
#
# Uses $ELS_TOP_BUILDDIR/tools/eventlog-sink, or RECV=path.  Skips (77)
# without a C compiler for the shim.
set -u -o pipefail

. "$(dirname "$0")/lib.sh"

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
# Socket file mode, and the symlink swap
# ---------------------------------------------------------------------------

CC=${CC:-cc}
command -v "$CC" >/dev/null 2>&1 || skip "no C compiler ($CC) for the bind() shim"
cat >"$T/shim.c" <<'EOF'
/* After a successful bind() of a UNIX socket: record the new file's mode
 * (SHIM_MODE_FILE), then, as a hostile user with write access to the
 * directory could, move the socket away and put a symbolic link to
 * SHIM_VICTIM in its place. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

int bind(int fd, const struct sockaddr *sa, socklen_t len)
{
    int (*real)(int, const struct sockaddr *, socklen_t) =
        (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "bind");
    int rc = real(fd, sa, len);
    if (rc != 0 || sa->sa_family != AF_UNIX)
        return rc;
    const char *path = ((const struct sockaddr_un *)sa)->sun_path;
    struct stat st;
    FILE *f = fopen(getenv("SHIM_MODE_FILE"), "w");
    if (f != NULL && lstat(path, &st) == 0)
        fprintf(f, "%o\n", (unsigned)(st.st_mode & 07777));
    if (f != NULL)
        fclose(f);
    const char *victim = getenv("SHIM_VICTIM");
    if (victim != NULL) {
        char moved[200];
        snprintf(moved, sizeof moved, "%s.moved", path);
        rename(path, moved);
        symlink(victim, path);
    }
    return rc;
}
EOF
"$CC" -shared -fPIC -o "$T/shim.so" "$T/shim.c" -ldl >"$T/shim.log" 2>&1 \
    || fail_showing "$T/shim.log" "cannot build the bind() shim"

# Plain: the file is 0600 as bind() leaves it.
rc=0
SHIM_MODE_FILE=$T/mode LD_PRELOAD=$T/shim.so \
    "$RECV" recv --listen --timeout 0.2 -o "$T/m.eventlog" "unix:$T/m.sock" \
    >"$T/m.out" 2>"$T/m.err" </dev/null || rc=$?
[ "$rc" -eq 1 ] || fail_showing "$T/m.err" "mode: exit status $rc, expected 1 (nobody connected)"
[ -s "$T/mode" ] || fail_showing "$T/m.err" "mode: the shim saw no bind() of $T/m.sock"
[ "$(cat "$T/mode")" = 600 ] \
    || fail "mode: the socket file was created with mode $(cat "$T/mode"), not 600 (set afterwards by path?)"
[ ! -e "$T/m.sock" ] || fail "mode: the socket file was left behind"

# Swapped for a link to a file of this user's: its mode must not change,
# and the link is not the receiver's to remove.
echo secret >"$T/victim"
chmod 0644 "$T/victim"
rc=0
SHIM_MODE_FILE=$T/mode2 SHIM_VICTIM=$T/victim LD_PRELOAD=$T/shim.so \
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
if [ -n "$objs" ] && command -v nm >/dev/null 2>&1; then
    # shellcheck disable=SC2086 # one word per object
    internal=$(nm -u $objs | grep -o 'elsi_[A-Za-z0-9_]*' | sort -u | tr '\n' ' ')
    [ -z "$internal" ] || fail "the tool calls internal library functions: $internal"
else
    note "no tool objects or no nm: the public-names check did not run"
fi
exit 0
