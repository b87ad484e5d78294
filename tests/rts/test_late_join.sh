#!/usr/bin/env bash
# test_late_join.sh: a consumer that joins a running -N2 program after the
# start of its stream left the queue gets a stream the readers take whole:
# the header, a snapshot of the program's state taken for it (tasks,
# threads with their labels, capabilities...), then everything after it.
#
# tests/programs/LateJoin.hs creates OS worker tasks and labelled threads, emits
# more than buffer=3M of events, prints "ready" and waits; a consumer joins
# then; after the join the program releases its tasks (some are deleted)
# and threads (they finish).  Checked: the joiner's stream passes
# `ghc-events validate threads` and `validate tasks`, ThreadScope's rule
# keeps every event, it says in-band that it joined at a snapshot, it holds
# the labels set before the join, the events after the join, and none of
# the "before-join" user events (about 6 MB, all written out before it
# joined); a consumer attached from the start gets the whole stream (each
# of those events once, no loss reported), which the readers also take
# whole.  That consumer is this user's, and the sink's policy=block: it
# holds the program back when it falls behind (on a loaded machine),
# instead of being cut loose with a gap in its stream.
#
# Skips (77) without the patched RTS, GHC or ghc-events.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"
. "$(dirname "$0")/../ghcprog.sh"

setup_ghc_program_test late-join LateJoin
PROG=$GHC_PROGRAM
SOCK=$T/s.sock

BYTES=6000000
BEFORE=$((BYTES / 100))     # LateJoin.hs: one "before-join K" per 100 bytes
# wait=: the program starts only once the first consumer is there, so it
# gets the stream from its first byte.  policy=block: a trusted consumer
# that falls behind holds the program back, so nothing is lost for it;
# linger= (a hang guard) bounds how long the blocks of a flush may wait.
# -A32m: the default 1 MiB nursery makes thousands of GCs, each stopping
# both capabilities, which on a loaded machine each wait for a time slice
# (a run took over 120 s to "ready", 3 s on a quiet machine).
start_controlled late "$PROG" 12 "$BYTES" +RTS -N2 -A32m -l \
    "--eventlog-sink=unix:$SOCK?buffer=3M&wait=60&policy=block&linger=60" \
    --eventlog-flush-interval=0.1 -RTS
start_receiver first "unix:$SOCK"
first_pid=$rpid
# A hang guard; a failure says how far the first consumer got.
wait_until 120 els_printed_or_gone "$T/late.prog.out" ready "$ppid" \
    || fail_showing "$T/first.recv.err" "the program did not print 'ready' within 120 s; the first consumer holds $(stat -c %s "$T/first.eventlog" 2>/dev/null || echo no) bytes; the program's stderr: $(head -c 400 "$T/late.prog.err")"
wait_output late ready
# Over 3M was emitted into a 3M queue: the joiner below joins a stream
# whose first units are gone.
start_receiver joiner "unix:$SOCK"
wait_until 60 els_has_header "$T/joiner.eventlog" \
    || fail_showing "$T/joiner.recv.err" "the joiner got no header within 60 s"
tell_controlled go
wait_output late done
stop_controlled
wait_both "$rpid"
check_program late "$prog_rc" done
check_recv joiner "$recv_rc"
first_rc=0; wait_pid "$first_pid" 30 || first_rc=$?
check_recv first "$first_rc"

show_events "$T/joiner.eventlog" "$T/joiner.show" || fail "ghc-events cannot parse the joiner's stream"
grep -q 'joined mid-run; its stream starts at a snapshot' "$T/joiner.show" \
    || fail "the joiner's stream does not say it starts at a snapshot: $(grep -m 2 'eventlog-sink' "$T/joiner.show")"
check_readers_accept joiner "$T/joiner.eventlog"
note "joiner: $kept_line"
for label in "late-join main" worker-1 worker-4 blocked-1 blocked-12; do
    grep -q "$label" "$T/joiner.show" || fail "the joiner's stream lacks the thread label '$label' set before the join"
done
after=$(count_shown_user_events "$T/joiner.show" "after-join ")
[ "$after" -eq 2000 ] || fail "the joiner got $after of the 2000 events after the join"
early=$(count_shown_user_events "$T/joiner.show" "before-join ")
[ "$early" -eq 0 ] || fail "the joiner got $early of the $BEFORE 'before-join' events, all written out before it joined"
grep -q 'marker: end' "$T/joiner.show" || fail "the joiner's stream lacks the final marker"

show_events "$T/first.eventlog" "$T/first.show" || fail "ghc-events cannot parse the first consumer's stream"
check_readers_accept first "$T/first.eventlog"
note "first consumer: $kept_line"
grep -q 'joined mid-run' "$T/first.show" && fail "the first consumer was told of a join"
got=$(awk '/^ *[0-9]+: / { sub(/^ *[0-9]+: (cap [0-9]+: )?/, "")
                           if ($1 == "before-join" && !seen[$2]++) n++ }
           END { print n + 0 }' "$T/first.show")
[ "$got" -eq "$BEFORE" ] || fail "the first consumer got $got of the $BEFORE 'before-join' events"
! loss_lines "$T/late.prog.err" >/dev/null \
    || fail_showing "$T/late.prog.err" "units were lost with trusted consumers under policy=block"
exit 0
