#!/usr/bin/env bash
# test_flight_recorder.sh: the ring: sink on a real -N2 program keeps the
# last size= of its stream in memory and dumps it, on a signal the spec
# names, on a command over its control socket, from Haskell (ringDump) and
# at exit, into new files that are valid eventlogs on their own.
#
# tests/ghc/LateJoin.hs (threads and tasks created early, labelled, many
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
# Skips (77) without the patched RTS, GHC, ghc-events or hsc2hs.
set -u -o pipefail

. "$(dirname "$0")/../lib.sh"
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
exit 0
