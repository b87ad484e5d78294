#!/usr/bin/env bash
# test_security.sh: who can reach a program's eventlog, and what a spec
# can touch, on the patched RTS.
#
# examples/live-service and a one-line program (tests/harness.sh:
# build_tiny_program) choose their sink with +RTS --eventlog-sink=SPEC.
# Checked here, while the program waits for its consumer (wait=): the
# UNIX socket file is 0600 by default whatever the umask, and mode= is
# honoured exactly (the umask does not narrow it; setuid/setgid/sticky
# bits are refused); the same for a FIFO the sink creates; a file sink's
# default is 0644 less the umask; a TCP sink without a host listens on
# 127.0.0.1 only (in /proc/net/tcp, and nothing on 0.0.0.0 or IPv6),
# and so does `eventlog-sink recv --listen`, whose UNIX socket is 0600;
# --eventlog-sink is refused under -rtsopts=some (on the command line
# and in GHCRTS) and for a setuid program (run by another unprivileged
# user through setpriv; GHC then refuses every RTS option); no spec
# clobbers a file: unix: and fifo: over a regular file or a symlink leave
# it intact, file: over a directory or a FIFO is refused.  Every stream a
# consumer then receives is checked with ghc-events.  Faults (dead
# consumers, full disks, stale sockets) are test_faults.sh's.
#
# Skips (77) without the patched RTS, GHC, ghc-events or the library's GHC
# glue; the setuid case skips with a note without root and setpriv.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"

setup_live_service_test


# run_bg NAME ARGS...: live-service ARGS in the background (ppid).
run_bg() {
    local name=$1
    shift
    start_program "$name" "$LIVE_SERVICE" "$@"
}

# run_fg NAME CMD...: CMD in the foreground; sets prog_rc.
run_fg() {
    local name=$1
    shift
    prog_rc=0
    "$@" >"$T/$name.prog.out" 2>"$T/$name.prog.err" </dev/null || prog_rc=$?
}

# refusal NAME RC PATTERN [RAN]: the program ($T/NAME.prog.*) exited 1
# with stderr matching the extended regex PATTERN in its first line, and
# printed nothing matching RAN (default "emitted|tiny ran") on stdout.
refusal() {
    local name=$1 rc=$2 pattern=$3 ran=${4:-emitted|tiny ran}
    [ "$rc" -eq 1 ] || fail "$name: exit status $rc, expected 1: $(head -c 400 "$T/$name.prog.err")"
    head -n 1 "$T/$name.prog.err" | grep -Eq -- "$pattern" \
        || fail "$name: the error does not match /$pattern/: $(head -c 400 "$T/$name.prog.err")"
    ! grep -Eq "$ran" "$T/$name.prog.out" || fail "$name: the program ran anyway"
    note "$name: exit 1: $(head -n 1 "$T/$name.prog.err")"
}

# file_id PATH: inode, type, mode, size, mtime and content hash of PATH
# (the link itself for a symlink).
file_id() {
    stat -c '%i %F %a %s %Y' "$1" && { [ ! -f "$1" ] || [ -L "$1" ] || sha256sum <"$1"; }
}

# complete NAME FILE PREFIX COUNT: the program (ppid) and receiver (rpid)
# end well and FILE holds exactly COUNT user events starting with PREFIX.
complete() {
    wait_both "$rpid"
    check_program "$1" "$prog_rc" "emitted $4 user events"
    check_recv "$1" "$recv_rc"
    validate_stream "$2" "$T/$1.show" "$3" || fail "$1: invalid stream: $vs_why"
    [ "$vs_user" -eq "$4" ] || fail "$1: $vs_user user events, expected $4"
}

# mode_while_waiting NAME UMASK SPEC PATH RECV-SPEC WANT: run `burst 100`
# with SPEC (which has wait=) under UMASK; while it waits for its
# consumer, PATH must have mode WANT (octal, as stat %a prints it) and
# belong to us; then a receiver on RECV-SPEC gets the complete stream.
mode_while_waiting() {
    local name=$1 mask=$2 spec=$3 path=$4 rspec=$5 want=$6 got
    (umask "$mask" && exec "$LIVE_SERVICE" burst 100 +RTS "--eventlog-sink=$spec" -RTS) \
        >"$T/$name.prog.out" 2>"$T/$name.prog.err" &
    ppid=$!
    bg_register "$ppid"
    wait_until 20 grep -q 'waiting up to' "$T/$name.prog.err" \
        || fail_showing "$T/$name.prog.err" "$name: the program did not start waiting for a consumer"
    got=$(stat -c '%a %u' "$path") || fail "$name: $path does not exist while the program waits"
    [ "$got" = "$want $(id -u)" ] || fail "$name: $path has mode/owner '$got', expected '$want $(id -u)' (umask $mask)"
    start_receiver "$name" "$rspec"
    complete "$name" "$T/$name.eventlog" "live-service burst " 100
    note "$name: $path mode $want under umask $mask"
}

# ---------------------------------------------------------------------------
# a. Modes of what the sinks create.
# ---------------------------------------------------------------------------
mode_while_waiting unix-default 000 "unix:$T/a.sock?wait=60" "$T/a.sock" "unix:$T/a.sock" 600
mode_while_waiting unix-default-022 022 "unix:$T/b.sock?wait=60" "$T/b.sock" "unix:$T/b.sock" 600
mode_while_waiting unix-mode-0660 077 "unix:$T/c.sock?wait=60&mode=0660" "$T/c.sock" "unix:$T/c.sock" 660
mode_while_waiting unix-mode-0666 022 "unix:$T/d.sock?wait=60&mode=0666" "$T/d.sock" "unix:$T/d.sock" 666
mode_while_waiting fifo-default 000 "fifo:$T/a.fifo?wait=60" "$T/a.fifo" "fifo:$T/a.fifo" 600
mode_while_waiting fifo-mode-0640 077 "fifo:$T/b.fifo?wait=60&mode=0640" "$T/b.fifo" "fifo:$T/b.fifo" 640

for bad in 4700 2700 1700; do
    run_fg "mode-$bad" "$LIVE_SERVICE" burst 10 +RTS "--eventlog-sink=unix:$T/m.sock?mode=$bad" -RTS
    refusal "mode-$bad" "$prog_rc" "mode"
    [ ! -e "$T/m.sock" ] || fail "mode-$bad: a socket was created"
done

# file: 0644 less the umask (as for any file a program creates); mode=.
for case in "022 - 644" "077 - 600" "022 0600 600"; do
    read -r mask m want <<<"$case"
    f=$T/f-$mask-$m.eventlog
    spec="file:$f"
    [ "$m" = - ] || spec="$spec?mode=$m"
    name=file-$mask-$m
    prog_rc=0
    (umask "$mask" && exec "$LIVE_SERVICE" burst 100 +RTS "--eventlog-sink=$spec" -RTS) \
        >"$T/$name.prog.out" 2>"$T/$name.prog.err" </dev/null || prog_rc=$?
    check_program "$name" "$prog_rc" "emitted 100 user events"
    [ "$(stat -c %a "$f")" = "$want" ] || fail "$name: $f has mode $(stat -c %a "$f"), expected $want"
    validate_stream "$f" "$T/$name.show" "live-service burst " || fail "$name: invalid stream: $vs_why"
    [ "$vs_user" -eq 100 ] || fail "$name: $vs_user user events, expected 100"
done
note "file: 644 under umask 022, 600 under 077, mode=0600 honoured"

# The receiver's own listening socket: 0600 under umask 000.
(umask 000 && exec "$ELS_SINK_TOOL" recv --listen --timeout 30 -o "$T/rl.eventlog" "unix:$T/rl.sock") \
    >/dev/null 2>"$T/rl.recv.err" &
cpid=$!
bg_register "$cpid"
listening_endpoint "$T/rl.recv.err" "$cpid" 10 >/dev/null \
    || fail_showing "$T/rl.recv.err" "recv-listen: no 'listening on' line"
[ "$(stat -c %a "$T/rl.sock")" = 600 ] || fail "recv-listen: its socket has mode $(stat -c %a "$T/rl.sock"), expected 600"
run_fg rl "$LIVE_SERVICE" burst 100 +RTS "--eventlog-sink=unix-connect:$T/rl.sock?policy=block" -RTS
check_program rl "$prog_rc" "emitted 100 user events"
recv_rc=0; wait_pid "$cpid" 30 || recv_rc=$?
check_recv rl "$recv_rc"
validate_stream "$T/rl.eventlog" "$T/rl.show" "live-service burst " || fail "rl: invalid stream: $vs_why"
[ "$vs_user" -eq 100 ] || fail "rl: $vs_user user events, expected 100"
note "recv-listen: unix socket 600 under umask 000"

# ---------------------------------------------------------------------------
# b. TCP listens on the loopback unless told otherwise.
# ---------------------------------------------------------------------------

# tcp_listeners PORT: print the local addresses listening (state 0A) on
# PORT, from /proc/net/tcp and /proc/net/tcp6 (hex, as the kernel shows
# them).
tcp_listeners() {
    local hex
    hex=$(printf '%04X' "$1")
    cat /proc/net/tcp /proc/net/tcp6 2>/dev/null \
        | awk -v h=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == h { print $2 }'
}

# only_loopback NAME PORT: exactly one listener on PORT, 127.0.0.1.
only_loopback() {
    local l
    l=$(tcp_listeners "$2" | sort -u | tr '\n' ' ')
    [ "$l" = "0100007F:$(printf '%04X' "$2") " ] \
        || fail "$1: listeners on port $2: '$l', expected only 127.0.0.1 (0100007F)"
    if command -v ss >/dev/null 2>&1; then
        note "$1: ss -ltn: $(ss -Hltn "sport = :$2" | awk '{ print $4 }' | tr '\n' ' ')"
    fi
}

run_bg tcp-0 burst 100 +RTS "--eventlog-sink=tcp:0?wait=60" -RTS
program_tcp_endpoint tcp-0
case "$endpoint" in
    tcp:127.0.0.1:[1-9]*) ;;
    *) fail "tcp-0: endpoint '$endpoint', expected tcp:127.0.0.1:PORT" ;;
esac
port=${endpoint##*:}
only_loopback tcp-0 "$port"
start_receiver tcp-0 "$endpoint"
complete tcp-0 "$T/tcp-0.eventlog" "live-service burst " 100

# An explicit port without a host: the same.
for _ in 1 2 3 4 5; do
    port=$(free_tcp_port) || fail "no free TCP port"
    run_bg tcp-port burst 100 +RTS "--eventlog-sink=tcp:$port?wait=60" -RTS
    wait_until 20 grep -q 'waiting up to\|in use' "$T/tcp-port.prog.err" || break
    grep -q 'in use' "$T/tcp-port.prog.err" || break
    wait "$ppid" 2>/dev/null
done
wait_until 20 grep -q 'waiting up to' "$T/tcp-port.prog.err" \
    || fail_showing "$T/tcp-port.prog.err" "tcp-port: the program did not start waiting on tcp:$port"
only_loopback tcp-port "$port"
start_receiver tcp-port "tcp:$port"
complete tcp-port "$T/tcp-port.eventlog" "live-service burst " 100

# The receiver's --listen without a host.
"$ELS_SINK_TOOL" recv --listen --timeout 30 -o "$T/rt.eventlog" tcp:0 >/dev/null 2>"$T/rt.recv.err" &
cpid=$!
bg_register "$cpid"
ep=$(listening_endpoint "$T/rt.recv.err" "$cpid" 10) || fail_showing "$T/rt.recv.err" "recv-tcp: no 'listening on' line"
case "$ep" in
    tcp:127.0.0.1:[1-9]*) ;;
    *) fail "recv-tcp: endpoint '$ep', expected tcp:127.0.0.1:PORT" ;;
esac
only_loopback recv-tcp "${ep##*:}"
kill "$cpid" 2>/dev/null

# ---------------------------------------------------------------------------
# c. -rtsopts=some and setuid programs.
# ---------------------------------------------------------------------------
build_tiny_program some patched_ghc_lib -threaded -eventlog -rtsopts=some
SOME=$TINY_PROGRAM
run_fg some-argv "$SOME" +RTS "--eventlog-sink=unix:$T/x.sock" -RTS
refusal some-argv "$prog_rc" "RTS options are disabled|Most RTS options are disabled"
run_fg some-env env GHCRTS="--eventlog-sink=unix:$T/x.sock" "$SOME"
refusal some-env "$prog_rc" "RTS options are disabled|Most RTS options are disabled"
[ ! -e "$T/x.sock" ] || fail "rtsopts=some: a socket was created"
# A safe option is accepted (the refusal is the sink's), and so is the
# program without options.
run_fg some-safe "$SOME" +RTS -T -RTS
[ "$prog_rc" -eq 0 ] && grep -qx 'tiny ran' "$T/some-safe.prog.out" \
    || fail "rtsopts=some: the program does not run with a safe option (exit $prog_rc): $(head -c 300 "$T/some-safe.prog.err")"

owner=65534 runner=65533
if can_run_as "$runner" && can_run_as "$owner" && ! can_load_as "$runner" "$SOME"; then
    skip_part suid "uid $runner cannot reach the build tree's shared library (the clone is in a private directory)"
elif can_run_as "$runner" && can_run_as "$owner"; then
    chmod 0711 "$T"
    mkdir -m 0755 "$T/pub"
    mkdir -m 0777 "$T/pub/w"
    cp "$SOME" "$T/pub/suid"
    chown "$owner:$owner" "$T/pub/suid"
    chmod 4755 "$T/pub/suid"
    prog_rc=0
    as_user "$runner" "$T/pub/suid" >"$T/suid-plain.prog.out" 2>"$T/suid-plain.prog.err" </dev/null || prog_rc=$?
    [ "$prog_rc" -eq 0 ] && grep -qx 'tiny ran' "$T/suid-plain.prog.out" \
        || fail "suid: the setuid program does not run without options (exit $prog_rc): $(head -c 300 "$T/suid-plain.prog.err")"
    run_fg suid-argv as_user "$runner" "$T/pub/suid" +RTS "--eventlog-sink=unix:$T/pub/w/x.sock" -RTS
    refusal suid-argv "$prog_rc" "RTS options are disabled for setuid binaries"
    run_fg suid-env env GHCRTS="--eventlog-sink=unix:$T/pub/w/x.sock" setpriv --reuid="$runner" \
        --regid="$runner" --clear-groups -- "$T/pub/suid"
    refusal suid-env "$prog_rc" "RTS options are disabled for setuid binaries"
    [ -z "$(ls -A "$T/pub/w")" ] || fail "suid: something was created in $T/pub/w: $(ls -A "$T/pub/w")"
    chmod 0700 "$T"
else
    skip_part suid "needs root and setpriv to run as unprivileged users $owner and $runner"
fi

# ---------------------------------------------------------------------------
# d. No file clobbered through a spec.
# ---------------------------------------------------------------------------
printf 'precious data\n' >"$T/reg"
ln -s reg "$T/link"
mkdir "$T/dir"
mkfifo "$T/pipe"
ids() {
    printf '%s|%s|%s|%s\n' "$(file_id "$T/reg")" "$(file_id "$T/link")" \
        "$(file_id "$T/dir")" "$(file_id "$T/pipe")"
}
before=$(ids)
run_fg clobber-unix "$LIVE_SERVICE" burst 10 +RTS "--eventlog-sink=unix:$T/reg" -RTS
refusal clobber-unix "$prog_rc" "refusing to replace $T/reg: it is a regular file"
run_fg clobber-unix-link "$LIVE_SERVICE" burst 10 +RTS "--eventlog-sink=unix:$T/link" -RTS
refusal clobber-unix-link "$prog_rc" "refusing to replace $T/link: it is a symbolic link"
run_fg clobber-fifo "$LIVE_SERVICE" burst 10 +RTS "--eventlog-sink=fifo:$T/reg" -RTS
refusal clobber-fifo "$prog_rc" "$T/reg"
run_fg clobber-fifo-link "$LIVE_SERVICE" burst 10 +RTS "--eventlog-sink=fifo:$T/link" -RTS
refusal clobber-fifo-link "$prog_rc" "$T/link"
run_fg clobber-file-dir "$LIVE_SERVICE" burst 10 +RTS "--eventlog-sink=file:$T/dir" -RTS
refusal clobber-file-dir "$prog_rc" "refusing to write to $T/dir: it is a directory"
run_fg clobber-file-fifo "$LIVE_SERVICE" burst 10 +RTS "--eventlog-sink=file:$T/pipe" -RTS
refusal clobber-file-fifo "$prog_rc" "refusing to write to $T/pipe: it is a FIFO"
after=$(ids)
[ "$after" = "$before" ] || fail "clobber: something changed: before '$before', after '$after'"
[ -z "$(ls -A "$T/dir")" ] || fail "clobber: something was created in $T/dir"

exit 0
