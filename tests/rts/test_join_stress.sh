#!/usr/bin/env bash
# test_join_stress.sh: consumers join and leave a busy -N2 program
# (tests/programs/JoinStress.hs: four threads posting and forking, worker tasks
# coming and going, one thread toggling the scheduler and GC classes and
# asking for snapshots for everyone in a loop, flush interval 0.01 s,
# buffer=3M).  A consumer attached from the start and every consumer that
# joins and stays to the end get streams that `ghc-events validate
# threads`/`tasks` accept and that ThreadScope's rule keeps whole; the
# consumers that leave early get streams that parse; the program exits
# normally.
#
# Skips (77) without the patched RTS, GHC or ghc-events.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"
. "$(dirname "$0")/../ghcprog.sh"

setup_ghc_program_test join-stress JoinStress
PROG=$GHC_PROGRAM
SOCK=$T/s.sock
JOINERS=3

start_controlled stress "$PROG" +RTS -N2 -l \
    "--eventlog-sink=unix:$SOCK?buffer=3M&wait=60" --eventlog-flush-interval=0.01 -RTS
start_receiver first "unix:$SOCK"
first_pid=$rpid
wait_output stress ready
# Joiners that stay: one after another, each once the previous one has its
# header; joiners that leave: stopped with SIGINT while the program runs.
stay_pids=()
for i in $(seq 1 $JOINERS); do
    start_receiver "stay$i" "unix:$SOCK"
    stay_pids+=("$rpid")
    start_receiver "leave$i" "unix:$SOCK"
    leave_pid=$rpid
    wait_until 30 els_has_header "$T/stay$i.eventlog" \
        || fail_showing "$T/stay$i.recv.err" "joiner $i got no header within 30 s"
    wait_until 30 els_has_header "$T/leave$i.eventlog" \
        || fail_showing "$T/leave$i.recv.err" "leaver $i got no header within 30 s"
    kill -INT "$leave_pid" 2>/dev/null || true
    wait_pid "$leave_pid" 30 || true
done
stop_controlled
prog_rc=0; wait_pid "$ppid" 120 || prog_rc=$?
check_program stress "$prog_rc" done

check_stream() {
    local name=$1 rc=0
    wait_pid "$2" 30 || rc=$?
    check_recv "$name" "$rc"
    show_events "$T/$name.eventlog" "$T/$name.show" || fail "$name: ghc-events cannot parse its stream"
    grep -q 'marker: end' "$T/$name.show" || fail "$name: the stream lacks the final marker"
    check_readers_accept "$name" "$T/$name.eventlog"
    note "$name: $kept_line"
}
check_stream first "$first_pid"
for i in $(seq 1 $JOINERS); do
    check_stream "stay$i" "${stay_pids[$((i - 1))]}"
    show_events "$T/leave$i.eventlog" "$T/leave$i.show" \
        || fail "leaver $i: ghc-events cannot parse the stream it left"
done
grep -q 'els_ghc_' "$T/stress.prog.err" && fail_showing "$T/stress.prog.err" "a toggle or snapshot call failed"
exit 0
