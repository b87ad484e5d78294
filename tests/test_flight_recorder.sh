#!/usr/bin/env bash
# test_flight_recorder.sh: the ring: sink on a real -N2 program keeps the
# last size= of its stream in memory and dumps it, on a signal the spec
# names and at exit, into new files that are valid eventlogs on their own.
#
# tests/ghc/LateJoin.hs (threads and tasks created early, labelled, many
# megabytes of events, then "ready"; after a line on stdin, tasks released
# and threads finished) runs with ring:PATH?size=8M&signal=USR2.  After
# "ready" (its buffers written out) the test sends SIGUSR2: the first dump
# must hold the last events before that point and none of the first ones,
# and stay within size= plus a few bytes.  At exit the second dump must
# hold the end of the run.  Both must pass `ghc-events validate threads`
# and `validate tasks` and keep every event under ThreadScope's rule: each
# starts with the program's state (a join snapshot), not mid-story.
#
# Skips (77) without the patched RTS, GHC or ghc-events.
set -u -o pipefail

. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ghcprog.sh"

setup_ghc_program_test flight-recorder LateJoin
PROG=$GHC_PROGRAM
SIZE=$((8 * 1024 * 1024))
BYTES=12000000

# dump_complete FILE: FILE ends with the end-of-data marker.
dump_complete() {
    [ -s "$1" ] && [ "$(tail -c 2 "$1" | od -An -tx1 | tr -d ' \n')" = ffff ]
}

start_controlled rec "$PROG" 12 "$BYTES" +RTS -N2 -l \
    "--eventlog-sink=ring:$T/rec.eventlog?size=8M&signal=USR2" \
    --eventlog-flush-interval=0.1 -RTS
wait_output rec ready
kill -USR2 "$ppid" || fail "the program is gone before the dump"
wait_until 60 dump_complete "$T/rec.1.eventlog" \
    || fail_showing "$T/rec.prog.err" "no complete dump rec.1.eventlog within 60 s of SIGUSR2"
tell_controlled go
wait_output rec done
stop_controlled
prog_rc=0; wait_pid "$ppid" 60 || prog_rc=$?
check_program rec "$prog_rc" done
[ "$(stat -c %a "$T/rec.1.eventlog")" = 600 ] || fail "the dump is not mode 0600"
grep -q "dumped the recording to $T/rec.2.eventlog" "$T/rec.prog.err" \
    || fail_showing "$T/rec.prog.err" "no dump at exit reported"

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
check_readers_accept dump1 "$T/rec.1.eventlog"
note "dump 1: $kept_line"

show_events "$T/rec.2.eventlog" "$T/rec2.show" || fail "ghc-events cannot parse the dump at exit"
grep -q 'marker: end' "$T/rec2.show" || fail "the dump at exit lacks the program's last marker"
check_readers_accept dump2 "$T/rec.2.eventlog"
note "dump 2: $(stat -c %s "$T/rec.2.eventlog") bytes, $kept_line"
[ ! -e "$T/rec.3.eventlog" ] || fail "a third dump appeared"
exit 0
