#!/usr/bin/env bash
# test_faults.sh: the patched RTS's eventlog under faults, end to end.
#
# examples/live-service (patched RTS, +RTS --eventlog-sink=SPEC) runs while
# its consumers and its surroundings misbehave, and what arrived is judged
# with the independent ghc-events reader (counts, not only exit codes: it
# accepts a truncated log silently) and, where the receiver printed one,
# against `eventlog-sink recv`'s own event count.  Covered: a consumer
# killed (SIGTERM and SIGKILL, alternately) and reconnected many times in
# one run; the program killed with SIGKILL mid-run; consumers that stop
# reading (a TCP connection nobody reads, a receiver whose output pipe is
# full); a FIFO reader closing and reopening; a file sink on a full file
# system (root only: tmpfs); a TCP port in use; a UNIX socket path that is
# a regular file, a symlink, a live socket, a stale socket, or in a
# directory the user may not write (as an unprivileged user, via setpriv).
# Who may connect (modes, bind addresses, -rtsopts) is test_security.sh's;
# long runs are scripts/soak.sh's (about 200 reconnections in its ten
# minutes; here ELS_FAULT_RECONNECTS, default 30).
#
# Skips (77) without the patched RTS, GHC, ghc-events or the library's GHC
# glue; single parts skip (skip_part) when they need root or setpriv.
# The programs that must outlive a series of actions are
# tests/programs/Controlled.hs, which runs until the test tells it to
# stop; waits have generous deadlines (hang guards); nothing asserts on
# time.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"

setup_live_service_test

R=${ELS_FAULT_RECONNECTS:-30}
mnt=

# Unmount the tmpfs of case e however the test ends (rm -rf cannot remove
# a mount point), then clean up as harness.sh does.
trap 'rc=$?; [ -z "$mnt" ] || umount -l "$mnt" 2>/dev/null; (exit $rc); els_cleanup' EXIT

# run_bg NAME ARGS...: live-service ARGS in the background (ppid).
run_bg() {
    local name=$1
    shift
    start_program "$name" "$LIVE_SERVICE" "$@"
}

# valid NAME FILE [PREFIX]: FILE is a valid captured stream
# (validate_stream; user events start with PREFIX, default "controlled ")
# with at least one event; its ghc-events output is $T/NAME.show.
valid() {
    validate_stream "$2" "$T/$1.show" "${3:-controlled }" || fail "$1: invalid stream: $vs_why"
    [ "$vs_events" -gt 0 ] || fail "$1: the stream parses but holds no event ($(wc -c <"$2") bytes)"
}

# same_count NAME RECV-ERR: ghc-events read as many events (vs_events) as
# the receiver counted on the way.
same_count() {
    local e
    e=$(recv_events "$2") || fail_showing "$2" "$1: the receiver printed no event count"
    [ "$e" -eq "$vs_events" ] \
        || fail "$1: eventlog-sink recv counted $e events, ghc-events read $vs_events"
}

# one_line_refusal NAME RC PATTERN: the program ($T/NAME.prog.*) exited
# with status RC (expected 1), printed exactly one line on stderr matching
# the extended regex PATTERN, and did not run.
one_line_refusal() {
    local name=$1 rc=$2 pattern=$3 lines
    [ "$rc" -eq 1 ] || fail "$name: exit status $rc, expected 1: $(head -c 400 "$T/$name.prog.err")"
    lines=$(wc -l <"$T/$name.prog.err")
    [ "$lines" -eq 1 ] || fail "$name: $lines lines on stderr, expected 1: $(head -c 600 "$T/$name.prog.err")"
    grep -Eq -- "$pattern" "$T/$name.prog.err" \
        || fail "$name: the error does not match /$pattern/: $(cat "$T/$name.prog.err")"
    ! grep -q emitted "$T/$name.prog.out" || fail "$name: the program ran anyway"
    note "$name: exit 1: $(cat "$T/$name.prog.err")"
}

# run_fg NAME ARGS...: live-service ARGS in the foreground; sets prog_rc.
run_fg() {
    local name=$1
    shift
    prog_rc=0
    "$LIVE_SERVICE" "$@" >"$T/$name.prog.out" 2>"$T/$name.prog.err" </dev/null || prog_rc=$?
}

# file_id PATH: inode, type, mode, size, mtime and content hash of PATH
# (not following a symlink), to show that a refusal left it alone.
file_id() {
    stat -c '%i %F %a %s %Y' "$1" && { [ ! -f "$1" ] || [ -L "$1" ] || sha256sum <"$1"; }
}

# ---------------------------------------------------------------------------
# a. One run of the controlled program, a unix sink (policy=drop), R consumers killed one
# after another once each has received the header and part of a block,
# alternately with SIGTERM (the receiver exits 3: truncated) and SIGKILL,
# then one that stays to the end (exit 0, complete).  Every capture is a
# stream ghc-events reads in full, with no user event twice; the program
# exits 0; every connection was accepted; and if any stream was told of a
# loss in-band, the writer's loss line is on the program's stderr at exit.
# The program (Controlled.hs) runs until the last consumer has joined.
# Each consumer is killed after a varying amount of data (not time).
# ---------------------------------------------------------------------------
build_controlled patched
EVENTLOG_SINK_DEBUG=1 start_controlled rc "$CONTROLLED" run 0 +RTS -N2 "--eventlog-sink=unix:$T/rc.sock" \
    --eventlog-flush-interval=0.1 -RTS
wait_for_file "$T/rc.sock" 20 || fail_showing "$T/rc.prog.err" "rc: the program did not create its socket"
notes=0 total_user=0
for i in $(seq 1 "$R"); do
    name=rc.$i
    "$ELS_SINK_TOOL" recv --retry 60 -o "$T/$name.eventlog" "unix:$T/rc.sock" \
        >/dev/null 2>"$T/$name.recv.err" &
    r=$!
    bg_register "$r"
    # Cut at a varying point: after the header and 200 B to 30 kB more.
    wait_until 60 stream_has_data "$T/$name.eventlog" $((200 + RANDOM % 30000)) \
        || fail_showing "$T/$name.recv.err" "$name: no header and blocks within 60 s"
    kill -0 "$ppid" 2>/dev/null \
        || fail_showing "$T/rc.prog.err" "rc: the program ended by itself after $((i - 1)) of $R reconnections"
    if [ $((i % 2)) -eq 1 ]; then sig=TERM want=3; else sig=KILL want=137; fi
    kill -"$sig" "$r" 2>/dev/null
    rc=0; { wait_pid "$r" 30 || rc=$?; } 2>/dev/null
    [ "$rc" -eq "$want" ] || fail_showing "$T/$name.recv.err" \
        "$name: the receiver killed with SIG$sig exited $rc, expected $want"
    valid "$name" "$T/$name.eventlog"
    [ "$sig" = KILL ] || same_count "$name" "$T/$name.recv.err"
    [ "$sig" = KILL ] || grep -q 'stream truncated after .*stopped by SIGTERM' "$T/$name.recv.err" \
        || fail_showing "$T/$name.recv.err" "$name: the receiver does not say the stream was cut by SIGTERM"
    notes=$((notes + vs_notes))
    total_user=$((total_user + vs_user))
    # The writer notices each departure before the next consumer comes
    # (a dead consumer must not linger in its list).
    wait_count 30 "$T/rc.prog.err" 'consumer [0-9]* detached' "$i" \
        || fail "$name: the writer did not notice consumer $i leave ($(grep -c detached "$T/rc.prog.err") detached)"
done
start_receiver rc.last "unix:$T/rc.sock"
wait_until 60 stream_has_data "$T/rc.last.eventlog" \
    || fail_showing "$T/rc.last.recv.err" "rc.last: no header and block within 60 s"
stop_controlled
wait_both "$rpid"
check_program rc "$prog_rc" "emitted [0-9]* user events"
check_recv rc.last "$recv_rc"
valid rc.last "$T/rc.last.eventlog"
same_count rc.last "$T/rc.last.recv.err"
[ "$vs_user" -gt 0 ] || fail "rc.last: the complete stream holds no user event"
notes=$((notes + vs_notes))
total_user=$((total_user + vs_user))
attached=$(grep -c 'consumer [0-9]* attached' "$T/rc.prog.err")
[ "$attached" -eq $((R + 1)) ] || fail "rc: $attached consumers attached, expected $((R + 1))"
[ "$total_user" -gt 0 ] || fail "rc: no user event in any of the $((R + 1)) streams"
loss=$(loss_lines "$T/rc.prog.err") || loss=
if [ "$notes" -gt 0 ] && [ -z "$loss" ]; then
    fail_showing "$T/rc.prog.err" "rc: $notes in-band loss notes in the streams but no loss line on stderr at exit"
fi
[ ! -e "$T/rc.sock" ] || fail "rc: socket file left behind after exit"
note "rc: $((R + 1)) connections ($R killed, SIGTERM/SIGKILL), all valid; $total_user user events in all; $(cat "$T/rc.prog.out"); in-band loss notes: $notes; loss report: ${loss:-none}"

# ---------------------------------------------------------------------------
# b. The program killed with SIGKILL mid-run (flush every 0.1 s): the
# consumer's copy is a prefix that ghc-events reads (events and user
# events > 0, as many as the receiver counted) and the receiver exits 3.
# The socket file stays behind: case c starts on it.
# ---------------------------------------------------------------------------
start_receiver killed "unix:$T/k.sock"
start_controlled killed "$CONTROLLED" run 0 +RTS -N2 "--eventlog-sink=unix:$T/k.sock?wait=60" \
    --eventlog-flush-interval=0.1 -RTS
wait_until 60 stream_has_data "$T/killed.eventlog" 20000 \
    || fail_showing "$T/killed.recv.err" "killed: the receiver got no 20 kB of blocks within 60 s"
kill -0 "$ppid" 2>/dev/null || fail_showing "$T/killed.prog.err" "killed: the program ended before it was killed"
kill -KILL "$ppid"
{ wait "$ppid"; } 2>/dev/null
stop_controlled
recv_rc=0; wait_pid "$rpid" 30 || recv_rc=$?
[ "$recv_rc" -eq 3 ] || fail_showing "$T/killed.recv.err" \
    "killed: the receiver exited $recv_rc after the program was killed, expected 3 (truncated)"
grep -q 'stream truncated after' "$T/killed.recv.err" \
    || fail_showing "$T/killed.recv.err" "killed: the receiver does not say the stream was truncated"
valid killed "$T/killed.eventlog"
same_count killed "$T/killed.recv.err"
[ "$vs_user" -gt 0 ] || fail "killed: the prefix holds no user event"
note "killed: exit 3, $vs_events events ($vs_user user events) in $(wc -c <"$T/killed.eventlog") bytes"

# ---------------------------------------------------------------------------
# c. unix: PATH cases.
# ---------------------------------------------------------------------------

# A stale socket (left by the program killed in b): removed, with a line
# saying so, and the program works: a complete stream, every event.
[ -S "$T/k.sock" ] || fail "stale: the killed program left no socket file at $T/k.sock"
start_receiver stale "unix:$T/k.sock"
run_bg stale burst 20000 +RTS -N2 "--eventlog-sink=unix:$T/k.sock?wait=60&policy=block" -RTS
wait_both "$rpid"
check_program stale "$prog_rc" "emitted 20000 user events"
check_recv stale "$recv_rc"
grep -q "removed stale socket $T/k.sock" "$T/stale.prog.err" \
    || fail_showing "$T/stale.prog.err" "stale: no 'removed stale socket' line"
valid stale "$T/stale.eventlog" "live-service burst "
[ "$vs_user" -eq 20000 ] || fail "stale: $vs_user burst events, expected 20000"
note "stale: replaced; complete stream, 20000 user events"

# A regular file, and a symlink to one: refused, left as they were.
printf 'precious data\n' >"$T/reg"
ln -s reg "$T/link"
id_reg=$(file_id "$T/reg")
id_link=$(file_id "$T/link")
run_fg regular burst 10 +RTS "--eventlog-sink=unix:$T/reg" -RTS
one_line_refusal regular "$prog_rc" "refusing to replace $T/reg: it is a regular file"
[ "$(file_id "$T/reg")" = "$id_reg" ] || fail "regular: $T/reg changed"
run_fg symlink burst 10 +RTS "--eventlog-sink=unix:$T/link" -RTS
one_line_refusal symlink "$prog_rc" "refusing to replace $T/link: it is a symbolic link"
[ "$(file_id "$T/link")" = "$id_link" ] && [ "$(file_id "$T/reg")" = "$id_reg" ] \
    || fail "symlink: $T/link or its target changed"

# A live socket (another program's sink listening on it): refused; the
# socket stays the other program's, whose consumer then gets a complete
# stream.  (Not a one-shot `recv --listen`: the refusal's liveness probe
# is a connection, which such a collector takes for its producer.)
run_bg live steady 5 +RTS -N2 "--eventlog-sink=unix:$T/live.sock?wait=60" -RTS
live_pid=$ppid
wait_for_file "$T/live.sock" 20 || fail_showing "$T/live.prog.err" "live: the program did not create its socket"
id_live=$(file_id "$T/live.sock")
run_fg live-refused burst 10 +RTS "--eventlog-sink=unix:$T/live.sock" -RTS
one_line_refusal live-refused "$prog_rc" "another process is listening on $T/live.sock"
[ "$(file_id "$T/live.sock")" = "$id_live" ] || fail "live: the other program's socket file changed"
start_receiver live "unix:$T/live.sock"
ppid=$live_pid
wait_both "$rpid"
check_program live "$prog_rc" "emitted [0-9]* user events"
check_recv live "$recv_rc"
valid live "$T/live.eventlog" "live-service "
[ "$vs_user" -gt 0 ] || fail "live: the complete stream holds no user event"

# A directory the user may not write, as an unprivileged user.
uid=65534
if can_run_as "$uid" && ! can_load_as "$uid" "$LIVE_SERVICE"; then
    skip_part denied "uid $uid cannot reach the build tree's shared library (the clone is in a private directory)"
elif can_run_as "$uid"; then
    chmod 0711 "$T"
    mkdir -m 0755 "$T/locked"
    prog_rc=0
    as_user "$uid" "$LIVE_SERVICE" burst 10 +RTS "--eventlog-sink=unix:$T/locked/x.sock" -RTS \
        >"$T/denied.prog.out" 2>"$T/denied.prog.err" </dev/null || prog_rc=$?
    one_line_refusal denied "$prog_rc" "$T/locked/x.sock.*[Pp]ermission denied"
    [ -z "$(ls -A "$T/locked")" ] || fail "denied: something was created in $T/locked"
    chmod 0700 "$T"
else
    skip_part denied "cannot run as an unprivileged user: needs root and setpriv"
fi

# ---------------------------------------------------------------------------
# d. Consumers that stop reading, buffer=4M policy=drop, `burst` of about
# 22 MB: the program finishes (exit 0, every event emitted) and the loss
# is counted and reported at exit; what the stalled consumer got is a
# valid stream.
# ---------------------------------------------------------------------------
NB=600000

# TCP: a connection that bash opens and never reads.
run_bg stall-tcp burst "$NB" +RTS -N2 \
    "--eventlog-sink=tcp:127.0.0.1:0?buffer=4M&policy=drop&wait=60&linger=1" -RTS
program_tcp_endpoint stall-tcp
port=${endpoint##*:}
exec 3<>"/dev/tcp/127.0.0.1/$port" || fail "stall-tcp: cannot connect to $endpoint"
prog_rc=0; wait_pid "$ppid" 120 || prog_rc=$?
check_program stall-tcp "$prog_rc" "emitted $NB user events"
loss=$(loss_lines "$T/stall-tcp.prog.err") \
    || fail_showing "$T/stall-tcp.prog.err" "stall-tcp: no loss report at exit"
# The program has closed the connection: read what the kernel kept.
cat <&3 >"$T/stall-tcp.eventlog"
exec 3<&-
valid stall-tcp "$T/stall-tcp.eventlog" "live-service burst "
[ "$vs_user" -lt "$NB" ] || fail "stall-tcp: the stalled consumer got all $NB events, yet loss was reported"
# The figures: the causes add up, the only consumer was cut loose from
# units (it never read), and units were still queued for it at the
# linger= deadline (it never caught up).
rc=0; loss_figures "$T/stall-tcp.prog.err" || rc=$?
[ "$rc" -eq 0 ] || fail_showing "$T/stall-tcp.prog.err" "stall-tcp: unreadable loss report: ${lf_why:-none}"
[ "$(loss_cause "$ELS_CAUSE_CUT_LOOSE")" -gt 0 ] \
    || fail "stall-tcp: no unit counted as $ELS_CAUSE_CUT_LOOSE (cut loose): $lf_causes"
[ "$(loss_cause "$ELS_CAUSE_LINGER")" -gt 0 ] \
    || fail "stall-tcp: no unit counted as $ELS_CAUSE_LINGER (still queued at the linger deadline): $lf_causes"
note "stall-tcp: exit 0; stalled consumer got $vs_user of $NB burst events in $(wc -c <"$T/stall-tcp.eventlog") bytes; $loss"

# UNIX: a receiver whose stdout is a pipe nobody reads until the program
# has ended, beside a consumer that keeps up.  The one keeping up gets a
# complete stream, and every burst event unless it was told in-band (of a
# loss, or that it joined after the first units had gone: the program
# starts when the first of the two connects).
rm -f "$T/go"
(
    ( "$ELS_SINK_TOOL" recv --retry 60 "unix:$T/st.sock" 2>"$T/stall-unix.recv.err"; echo $? >"$T/stall-unix.rc" ) \
        | { while [ ! -e "$T/go" ]; do sleep 0.1; done; cat >"$T/stall-unix.eventlog"; }
) &
spid=$!
bg_register "$spid"
start_receiver keep-up "unix:$T/st.sock"
EVENTLOG_SINK_DEBUG=1 run_bg stall-unix burst "$NB" +RTS -N2 \
    "--eventlog-sink=unix:$T/st.sock?buffer=4M&policy=drop&wait=60&linger=1" -RTS
prog_rc=0; wait_pid "$ppid" 120 || prog_rc=$?
recv_rc=0; wait_pid "$rpid" 30 || recv_rc=$?
touch "$T/go"
wait_pid "$spid" 30 || fail "stall-unix: the stalled receiver did not finish once its pipe was read"
check_program stall-unix "$prog_rc" "emitted $NB user events"
attached=$(grep -c 'consumer [0-9]* attached' "$T/stall-unix.prog.err")
[ "$attached" -eq 2 ] || fail "stall-unix: $attached consumers attached, expected 2"
loss=$(loss_lines "$T/stall-unix.prog.err") \
    || fail_showing "$T/stall-unix.prog.err" "stall-unix: no loss report at exit"
check_recv keep-up "$recv_rc"
valid keep-up "$T/keep-up.eventlog" "live-service burst "
same_count keep-up "$T/keep-up.recv.err"
[ "$vs_user" -eq "$NB" ] || [ "$vs_notes" -gt 0 ] || [ "$vs_joined" -gt 0 ] \
    || fail "keep-up: $vs_user of $NB burst events and no in-band note of a loss or a late join"
keep_user=$vs_user
valid stall-unix "$T/stall-unix.eventlog" "live-service burst "
same_count stall-unix "$T/stall-unix.recv.err"
note "stall-unix: exit 0; keeping up: $keep_user events; stalled (recv exit $(cat "$T/stall-unix.rc")): $vs_user; $loss"

# ---------------------------------------------------------------------------
# e. fifo: the reader closes and reopens several times.  Each reader waits
# until the writer has noticed the previous one leave (the debug line),
# so that it opens a new pipe, and gets a stream of its own that starts
# with the header and parses; the last one gets a complete stream.
# ---------------------------------------------------------------------------
K=5
EVENTLOG_SINK_DEBUG=1 start_controlled fifo "$CONTROLLED" run 0 +RTS -N2 "--eventlog-sink=fifo:$T/f.fifo" \
    --eventlog-flush-interval=0.1 -RTS
for i in $(seq 1 "$K"); do
    name=fifo.$i
    "$ELS_SINK_TOOL" recv --retry 60 -o "$T/$name.eventlog" "fifo:$T/f.fifo" \
        >/dev/null 2>"$T/$name.recv.err" &
    r=$!
    bg_register "$r"
    wait_until 30 stream_has_data "$T/$name.eventlog" \
        || fail_showing "$T/$name.recv.err" "$name: no header and block within 30 s"
    kill -0 "$ppid" 2>/dev/null || fail_showing "$T/fifo.prog.err" "fifo: the program ended by itself after $((i - 1)) of $K readers"
    kill -TERM "$r"
    rc=0; wait_pid "$r" 30 || rc=$?
    [ "$rc" -eq 3 ] || fail_showing "$T/$name.recv.err" "$name: the reader stopped by SIGTERM exited $rc, expected 3"
    valid "$name" "$T/$name.eventlog"
    same_count "$name" "$T/$name.recv.err"
    wait_count 30 "$T/fifo.prog.err" 'consumer [0-9]* detached' "$i" \
        || fail "$name: the writer did not notice reader $i leave"
done
start_receiver fifo.last "fifo:$T/f.fifo"
wait_until 60 stream_has_data "$T/fifo.last.eventlog" \
    || fail_showing "$T/fifo.last.recv.err" "fifo.last: no header and block within 60 s"
stop_controlled
wait_both "$rpid"
check_program fifo "$prog_rc" "emitted [0-9]* user events"
check_recv fifo.last "$recv_rc"
valid fifo.last "$T/fifo.last.eventlog"
same_count fifo.last "$T/fifo.last.recv.err"
[ "$vs_user" -gt 0 ] || fail "fifo.last: the complete stream holds no user event"
attached=$(grep -c 'consumer [0-9]* attached' "$T/fifo.prog.err")
[ "$attached" -eq $((K + 1)) ] || fail "fifo: $attached readers attached, expected $((K + 1))"
[ ! -e "$T/f.fifo" ] || fail "fifo: the FIFO it created was left behind"
note "fifo: $((K + 1)) readers, each a stream from the header; last complete ($vs_user user events)"

# ---------------------------------------------------------------------------
# f. file: on a full file system (a 2 MB tmpfs; root only).  The program
# is unharmed, ENOSPC is counted ($ELS_CAUSE_SINK_FAILED) and reported, the file notes
# its losses in-band, and it is an eventlog prefix (possibly ended by
# DATA_END, which is 2 bytes): ghc-events and the receiver (through a
# FIFO) read the same events from it and the receiver finds it well
# formed.
# ---------------------------------------------------------------------------
NF=200000
if [ "$(id -u)" -ne 0 ]; then
    skip_part enospc "mounting a tmpfs needs root"
elif mkdir "$T/full" && mount -t tmpfs -o size=2m,mode=0700 tmpfs "$T/full" 2>"$T/mount.err"; then
    mnt=$T/full
    run_fg enospc burst "$NF" +RTS -N2 "--eventlog-sink=file:$mnt/x.eventlog" -RTS
    cp "$mnt/x.eventlog" "$T/enospc.eventlog"
    umount "$mnt" && mnt=
    check_program enospc "$prog_rc" "emitted $NF user events"
    loss=$(loss_lines "$T/enospc.prog.err") \
        || fail_showing "$T/enospc.prog.err" "enospc: no loss report at exit"
    grep -Eq "dropped [0-9]+ of [0-9]+ units .*$ELS_CAUSE_SINK_FAILED [1-9]" "$T/enospc.prog.err" \
        || fail_showing "$T/enospc.prog.err" "enospc: the loss report counts no $ELS_CAUSE_SINK_FAILED"
    size=$(stat -c %s "$T/enospc.eventlog")
    [ "$size" -le $((2 * 1024 * 1024)) ] || fail "enospc: $size bytes on a 2 MB file system"
    valid enospc "$T/enospc.eventlog" "live-service burst "
    [ "$vs_user" -lt "$NF" ] || fail "enospc: all $NF events fit in 2 MB?"
    # The notes are small: after a failed unit is cut off again there is
    # room for them, so the file itself says where it lost data.
    [ "$vs_notes" -gt 0 ] || fail "enospc: no in-band loss note in the file"
    read -r noted noted_bytes < <(awk '/eventlog-sink: this consumer missed [0-9]+ units/ {
                    for (i = 1; i <= NF; i++) {
                        if ($i == "missed") n += $(i + 1)
                        if ($i ~ /^\(/) { b += substr($i, 2) } } }
                 END { print n + 0, b + 0 }' "$T/enospc.show")
    # The figures: every unit the file sink failed on is counted as
    # $ELS_CAUSE_SINK_FAILED, and the file says so in-band, unit for unit
    # and byte for byte (the notes are small enough to fit after a cut).
    check_noted_losses enospc "$T/enospc.prog.err" "$ELS_CAUSE_SINK_FAILED" "$noted" "$noted_bytes"
    mkfifo "$T/enospc.fifo"
    cat "$T/enospc.eventlog" >"$T/enospc.fifo" &
    bg_register $!
    rc=0
    "$ELS_SINK_TOOL" recv -o "$T/enospc.copy" "fifo:$T/enospc.fifo" 2>"$T/enospc.recv.err" || rc=$?
    # 0: DATA_END (2 bytes) still fitted after the cut; 3: truncated at a
    # unit boundary.  Never "malformed": the cut-off unit is gone.
    { [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ]; } && ! grep -q malformed "$T/enospc.recv.err" \
        || fail_showing "$T/enospc.recv.err" "enospc: the receiver does not read the file as a well-formed stream or prefix (exit $rc)"
    same_count enospc "$T/enospc.recv.err"
    note "enospc: exit 0; file $size bytes, $vs_events events ($vs_user user), recv exit $rc; $vs_notes in-band notes for $noted units; $loss"
else
    skip_part enospc "cannot mount a tmpfs: $(head -c 200 "$T/mount.err")"
fi

# ---------------------------------------------------------------------------
# g. A TCP port in use (another process listens on it): exit 1, one line,
# with and without the host; the other listener keeps its port.
# ---------------------------------------------------------------------------
start_collector holder tcp:127.0.0.1:0
held=${collector_endpoint##*:}
run_fg in-use burst 10 +RTS "--eventlog-sink=tcp:127.0.0.1:$held" -RTS
one_line_refusal in-use "$prog_rc" "[Aa]ddress.*in use"
run_fg in-use-nohost burst 10 +RTS "--eventlog-sink=tcp:$held" -RTS
one_line_refusal in-use-nohost "$prog_rc" "[Aa]ddress.*in use"
kill -0 "$cpid" 2>/dev/null || fail "in-use: the listener holding port $held died"
grep -q "^ *[0-9]*: 0100007F:$(printf '%04X' "$held") 00000000:0000 0A " /proc/net/tcp \
    || fail "in-use: port $held is no longer listening on 127.0.0.1"
kill "$cpid" 2>/dev/null

exit 0
