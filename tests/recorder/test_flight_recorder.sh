#!/usr/bin/env bash
# test_flight_recorder.sh: the ring: sink on a real -N2 program keeps the
# last size= of its stream in memory and dumps it, on a signal the spec
# names, on a command over its control socket, from Haskell (ringDump) and
# at exit, into new files that are valid eventlogs on their own.
#
# tests/programs/LateJoin.hs (threads and tasks created early, labelled, many
# megabytes of events, then "ready"; after a line on stdin, tasks released
# and threads finished) runs with
# ring:PATH?size=8M&signal=USR2&control=unix:SOCK.  After "ready" (its
# buffers written out) the test sends SIGUSR2: the first dump must hold
# the last events before that point and none of the first ones, and stay
# within size= plus a few bytes.  Then `eventlog-sink ctl unix:SOCK
# ring-dump`, twice, after the program marked (and wrote out) a marker:
# each answers a new file's name, the first holding that marker; the
# socket is 0600 and refuses a client whose hello is not control-only.
# Built with GHC.Eventlog.Sink (hsc2hs generates it), the program then
# calls ringDump itself.  At exit the last dump must hold the end of the
# run.  The first control dump and the exit dump must pass `ghc-events
# validate threads` and `validate tasks` and keep every event under
# ThreadScope's rule: each starts with the program's state (a join
# snapshot), not mid-story.
#
# max-dumps=2: two dumps (a ring-dump, a signal), then each way of
# asking (ring-dump, a signal, ringDump) is refused with the reason and
# writes nothing.  A program killed (SIGKILL) while a dump is written
# (strace slows the dump's writes) leaves no file under a dump's name
# that is not whole, only NAME.1.eventlog.partial.  A program whose
# second sink cannot open stops at start-up, and its recorder leaves no
# file, says why and counts it.
#
# Skips (77) without the patched RTS, GHC, ghc-events or hsc2hs (and the
# killed dump without strace).
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"
. "$(dirname "$0")/../ghcprog.sh"

require_tool
require_ghc
require_patched_rts
require_hsc2hs
make_tmpdir
T=$ELS_TMP
# With GHC.Eventlog.Sink (hsc2hs, no cabal, as test_control.sh builds it)
# the program can call ringDump.
hsdir=$ELS_TOP_BUILDDIR/tests/ghc/out/flight-recorder-src
hsc=$ELS_TOP_SRCDIR/haskell/eventlog-sink/src/GHC/Eventlog/Sink.hsc
if ! [ "$hsdir/GHC/Eventlog/Sink.hs" -nt "$hsc" ]; then
    mkdir -p "$hsdir/GHC/Eventlog" || fail "mkdir $hsdir"
    "$HSC2HS" -I"$ELS_INCLUDEDIR" -o "$hsdir/GHC/Eventlog/Sink.hs" "$hsc" \
        >"$T/hsc2hs.log" 2>&1 || fail_showing "$T/hsc2hs.log" "hsc2hs $hsc failed"
    rm -f "$ELS_TOP_BUILDDIR/tests/ghc/out/flight-recorder-pkg"
fi
build_ghc_program flight-recorder-pkg LateJoin patched_ghc_lib -threaded \
    -eventlog -rtsopts -DSINK_PACKAGE "-i$hsdir"
PROGRAM_LABEL=flight-recorder
PROG=$GHC_PROGRAM
SOCK=$T/ctl.sock
SIZE=$((8 * 1024 * 1024))
BYTES=12000000

# dump_complete FILE: FILE ends with the end-of-data marker.
dump_complete() {
    [ -s "$1" ] && [ "$(tail -c 2 "$1" | od -An -tx1 | tr -d ' \n')" = ffff ]
}

# -A32m: far fewer GCs, each of which stops both capabilities (slow on a
# loaded machine: with the default nursery "ready" took over 60 s).
start_controlled rec "$PROG" 12 "$BYTES" +RTS -N2 -A32m -l \
    "--eventlog-sink=ring:$T/rec.eventlog?size=8M&signal=USR2&control=unix:$SOCK" \
    --eventlog-flush-interval=0.1 -RTS
wait_output rec ready
kill -USR2 "$ppid" || fail "the program is gone before the dump"
wait_until 60 dump_complete "$T/rec.1.eventlog" \
    || fail_showing "$T/rec.prog.err" "no complete dump rec.1.eventlog within 60 s of SIGUSR2"

# --- the control socket ---------------------------------------------------------
grep -q "control enabled on ring:$T/rec.eventlog through unix:$SOCK (control-only clients)" \
    "$T/rec.prog.err" || fail_showing "$T/rec.prog.err" "no start-up line saying where control is"
[ "$(stat -c %a "$SOCK")" = 600 ] || fail "the control socket is mode $(stat -c %a "$SOCK"), not 0600"
# A hello without the control-only flag (a client that wants the stream)
# is answered with an error frame and closed: read to the end.
perl -e '
    use IO::Socket::UNIX; use Socket;
    alarm 30;
    my $s = IO::Socket::UNIX->new(Type => SOCK_STREAM(), Peer => $ARGV[0])
        or die "connect $ARGV[0]: $!";
    $s->syswrite(pack("H*", "454c534301010011" . "00" . ("ab" x 16)));
    my $all = ""; while ($s->sysread(my $b, 4096)) { $all .= $b; }
    print $all;' "$SOCK" >"$T/refused.out" 2>"$T/refused.err" \
    || fail_showing "$T/refused.err" "the refused client was not closed"
grep -qa "ELS_EINVAL: this socket serves control-only clients" "$T/refused.out" \
    || fail "a client without a control-only hello got: $(head -c 300 "$T/refused.out" | tr -c '[:print:]' .)"
[ "$(head -c 4 "$T/refused.out")" = ELSR ] || fail "the refusal is not an answer frame"

# ctl_dump NAME: ring-dump over the control socket; sets dumped to the file.
ctl_dump() {
    "$ELS_SINK_TOOL" ctl "unix:$SOCK" ring-dump >"$T/$1.ctl" 2>"$T/$1.ctl.err" \
        || fail_showing "$T/$1.ctl.err" "$1: eventlog-sink ctl unix:$SOCK ring-dump failed"
    dumped=$(sed -n 's/^ring-dump: \(.*\) ([0-9]* bytes)$/\1/p' "$T/$1.ctl")
    [ -n "$dumped" ] || fail "$1: ring-dump answered: $(cat "$T/$1.ctl")"
    dump_complete "$dumped" || fail "$1: $dumped is not a complete dump"
}
tell_controlled "mark before-ctl"
wait_output rec "marked before-ctl"
ctl_dump ctl1
[ "$dumped" = "$T/rec.2.eventlog" ] || fail "the first ring-dump wrote $dumped, not rec.2.eventlog"
grep -q "^ring-dump: $dumped ($(stat -c %s "$dumped") bytes)\$" "$T/ctl1.ctl" \
    || fail "ring-dump's answer does not give the file's size: $(cat "$T/ctl1.ctl")"
show_events "$dumped" "$T/ctl1.show" || fail "ghc-events cannot parse the ring-dump file"
grep -q 'marker: before-ctl' "$T/ctl1.show" || fail "the ring-dump file lacks the marker written just before the command"
check_readers_accept ctl-dump "$dumped"
note "ring-dump 1: $(stat -c %s "$dumped") bytes, $kept_line"
ctl_dump ctl2
[ "$dumped" = "$T/rec.3.eventlog" ] || fail "the second ring-dump wrote $dumped, not a new rec.3.eventlog"
# GHC.Eventlog.Sink.ringDump, from the program.
tell_controlled dump
wait_until 60 grep -q '^dumped \|^ringDump failed' "$T/rec.prog.out" \
    || fail_showing "$T/rec.prog.err" "the program's ringDump did not return"
grep -qx "dumped $T/rec.4.eventlog" "$T/rec.prog.out" \
    || fail "ringDump: $(grep -a '^dumped \|^ringDump' "$T/rec.prog.out")"
show_events "$T/rec.4.eventlog" "$T/hs.show" || fail "ghc-events cannot parse ringDump's file"
grep -q 'marker: before-ringDump' "$T/hs.show" || fail "ringDump's file lacks the marker written before it"
n=5

tell_controlled go
wait_output rec done
stop_controlled
prog_rc=0; wait_pid "$ppid" 60 || prog_rc=$?
check_program rec "$prog_rc" done
[ "$(stat -c %a "$T/rec.1.eventlog")" = 600 ] || fail "the dump is not mode 0600"
grep -q "dumped the recording to $T/rec.$n.eventlog" "$T/rec.prog.err" \
    || fail_showing "$T/rec.prog.err" "no dump at exit reported (as rec.$n.eventlog)"
[ ! -e "$SOCK" ] || fail "the control socket was not removed at exit"

last=$((BYTES / 100))
size1=$(stat -c %s "$T/rec.1.eventlog")
note "dump 1: $size1 bytes"
[ "$size1" -le $((SIZE + 4096)) ] || fail "dump 1 holds $size1 bytes, more than size= ($SIZE)"
# Snapshots at least every quarter of the window, and room kept for one
# RTS buffer (2M): a dump covers at least half of an 8M window.
[ "$size1" -ge $((SIZE / 2)) ] || fail "dump 1 holds only $size1 bytes of an $SIZE-byte window"
show_events "$T/rec.1.eventlog" "$T/rec1.show" || fail "ghc-events cannot parse dump 1"
grep -q "before-join $last x" "$T/rec1.show" || fail "dump 1 lacks the last event before the dump (before-join $last)"
grep -q 'marker: ready' "$T/rec1.show" || fail "dump 1 lacks the marker written just before the dump"
early=$(grep -c 'before-join [0-9] ' "$T/rec1.show" || true)
[ "$early" -eq 0 ] || fail "dump 1 holds $early of the first events: the window is larger than size="
# The readers' verdict on a dump mid-run is the ring-dump file's (above):
# the same window moments later, written by the same code.

show_events "$T/rec.$n.eventlog" "$T/recn.show" || fail "ghc-events cannot parse the dump at exit"
grep -q 'marker: end' "$T/recn.show" || fail "the dump at exit lacks the program's last marker"
check_readers_accept dump-at-exit "$T/rec.$n.eventlog"
note "dump at exit: $(stat -c %s "$T/rec.$n.eventlog") bytes, $kept_line"
[ ! -e "$T/rec.$((n + 1)).eventlog" ] || fail "an extra dump appeared"

# --- max-dumps= bounds every way of asking ----------------------------------------
# With max-dumps=2, a ring-dump and a signal write the two dumps; then a
# ring-dump fails with the reason, a signal writes nothing (the program
# says so) and the program's own ringDump fails; nothing more is written
# and the refusals are counted at exit.
start_controlled cap "$PROG" 2 2000000 +RTS -N2 -A32m -l \
    "--eventlog-sink=ring:$T/cap.eventlog?size=8M&signal=USR2&at-exit=0&max-dumps=2&control=unix:$T/cap.sock" \
    --eventlog-flush-interval=0.1 -RTS
wait_output cap ready
"$ELS_SINK_TOOL" ctl "unix:$T/cap.sock" ring-dump >"$T/cap1.ctl" 2>&1 \
    || fail_showing "$T/cap1.ctl" "max-dumps=2: the first ring-dump failed"
kill -USR2 "$ppid" || fail "max-dumps=2: the program is gone"
wait_until 60 dump_complete "$T/cap.2.eventlog" \
    || fail_showing "$T/cap.prog.err" "max-dumps=2: no second dump on SIGUSR2"
"$ELS_SINK_TOOL" ctl "unix:$T/cap.sock" ring-dump >"$T/cap3.ctl" 2>"$T/cap3.err" \
    && fail "max-dumps=2: a third ring-dump succeeded: $(cat "$T/cap3.ctl")"
grep -q "ring-dump: ELS_ELIMIT: max-dumps=2 reached: 2 dumps written, no more" "$T/cap3.err" \
    || fail_showing "$T/cap3.err" "max-dumps=2: the third ring-dump's failure does not say why"
kill -USR2 "$ppid" || fail "max-dumps=2: the program is gone"
wait_until 60 grep -q "ring:$T/cap.eventlog: no dump for the signal: max-dumps=2 reached" "$T/cap.prog.err" \
    || fail_showing "$T/cap.prog.err" "max-dumps=2: a signal past it is not refused with a word"
tell_controlled dump
wait_until 60 grep -q '^dumped \|^ringDump failed' "$T/cap.prog.out" \
    || fail_showing "$T/cap.prog.err" "max-dumps=2: the program's ringDump did not return"
grep -q '^ringDump failed: .*max-dumps=' "$T/cap.prog.out" \
    || fail "max-dumps=2: ringDump: $(grep -a '^dumped \|^ringDump' "$T/cap.prog.out")"
tell_controlled go
wait_output cap done
stop_controlled
prog_rc=0; wait_pid "$ppid" 60 || prog_rc=$?
check_program cap "$prog_rc" done
set -- "$T"/cap.[0-9]*
[ "$#" -eq 2 ] && [ "$1" = "$T/cap.1.eventlog" ] && [ "$2" = "$T/cap.2.eventlog" ] \
    || fail "max-dumps=2: the recorder left $*"
grep -q "ring:$T/cap.eventlog: dumps: 2 written, 0 failed (no file left), 3 refused past max-dumps=" \
    "$T/cap.prog.err" || fail_showing "$T/cap.prog.err" "max-dumps=2: the refusals are not counted at exit"
note "max-dumps=2: ring-dump, signal, ringDump refused past it: $(cat "$T/cap3.err")"

# --- a program killed in the middle of a dump -------------------------------------
# strace slows each writev the program makes (a dump's writes) by 2 s,
# so a dump of the 8 MiB window takes minutes and SIGKILL lands while it
# is written, whatever the machine's load.  What it leaves: every file
# named as a dump is whole (ends with the end marker and parses); the
# cut one is the dump's .partial file.
if command -v strace >/dev/null 2>&1 &&
        strace -f -qq -o /dev/null -e trace=writev true >/dev/null 2>&1; then
    start_controlled cut strace -f -qq -o /dev/null -e trace=writev \
        -e inject=writev:delay_exit=2000000 "$PROG" 2 "$BYTES" +RTS -N2 -A32m -l \
        "--eventlog-sink=ring:$T/cut.eventlog?size=8M&control=unix:$T/cut.sock" \
        --eventlog-flush-interval=0.1 -RTS
    wait_output cut ready 300
    cut_pid=$(ps -o pid= --ppid "$ppid" | tr -d ' ')
    [ -n "$cut_pid" ] || fail "the program under strace is not strace's child"
    "$ELS_SINK_TOOL" ctl "unix:$T/cut.sock" ring-dump >"$T/cut.ctl" 2>&1 &
    ctl_pid=$!
    bg_register "$ctl_pid"
    dump_begun() {
        local f
        for f in "$T"/cut.1.eventlog*; do [ -s "$f" ] && return 0; done
        return 1
    }
    wait_until 120 dump_begun || fail_showing "$T/cut.prog.err" "the slowed dump never began"
    kill -KILL "$cut_pid" || fail "the program ended before SIGKILL"
    rc=0; wait_pid "$ppid" 60 || rc=$?
    [ "$rc" -eq 137 ] || fail_showing "$T/cut.prog.err" "the program killed in a dump exited $rc, not by SIGKILL (137)"
    wait_pid "$ctl_pid" 30 >/dev/null 2>&1 || true
    stop_controlled
    for f in "$T"/cut.*.eventlog; do
        [ -e "$f" ] || continue
        dump_complete "$f" || fail "$f is named as a dump but was cut short by the kill ($(stat -c %s "$f") bytes, no end marker)"
        show_events "$f" "$T/cut.show" || fail "$f is named as a dump but does not parse"
    done
    [ -s "$T/cut.1.eventlog.partial" ] || fail "the dump the kill cut left no cut.1.eventlog.partial: $(ls "$T" | grep '^cut\.')"
    dump_complete "$T/cut.1.eventlog.partial" && fail "cut.1.eventlog.partial is whole: the kill did not land in the dump"
    note "killed in a dump: $(stat -c %s "$T/cut.1.eventlog.partial") bytes left in cut.1.eventlog.partial, no file under a dump's name"
else
    skip_part "killed in a dump" "strace cannot trace here"
fi

# --- a start that fails -----------------------------------------------------------
# The recorder opens, the next sink cannot: the program stops at start-up,
# and the recorder, which recorded nothing, leaves no file and says why
# instead of claiming a dump; its exit line counts the failed dump.
"$PROG" 2 1000 +RTS -l \
    "--eventlog-sink=ring:$T/failed.eventlog?size=8M|unix:$T/no-such-dir/app.sock" -RTS \
    >"$T/start-failed.out" 2>"$T/start-failed.err" </dev/null \
    && fail "a program started though its second sink cannot open"
grep -q "sink 2 of 2: spec \"unix:$T/no-such-dir/app.sock\"" "$T/start-failed.err" \
    || fail_showing "$T/start-failed.err" "the failed start does not name the sink that failed"
! grep -q "dumped the recording" "$T/start-failed.err" \
    || fail_showing "$T/start-failed.err" "a recorder that recorded nothing claims a dump"
grep -q "ring:$T/failed.eventlog: no dump for the end of the stream: nothing was recorded: the stream never started" \
    "$T/start-failed.err" || fail_showing "$T/start-failed.err" "the recorder of a failed start does not say why it wrote no dump"
grep -q "ring:$T/failed.eventlog: dumps: 0 written, 1 failed (no file left)" "$T/start-failed.err" \
    || fail_showing "$T/start-failed.err" "the failed dump is not counted"
set -- "$T"/failed.*
[ ! -e "$1" ] || fail "the failed start left $*"
exit 0
