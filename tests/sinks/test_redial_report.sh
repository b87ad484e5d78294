#!/usr/bin/env bash
# test_redial_report.sh: connect-out sinks that lose their collector,
# wait= running out, and what the loss report at exit says, end to end.
#
# tests/programs/Controlled.hs (patched RTS, +RTS --eventlog-sink=SPEC,
# running until the test tells it to stop) streams while:
#   a. its unix-connect: / tcp-connect: collector (`recv --listen`) goes
#      away mid-run, twice (SIGTERM, then SIGKILL), and a new one listens
#      on the same endpoint: the sink redials, every connection gets a
#      stream of its own that starts with the header and that ghc-events
#      reads with no user event twice, and the last one is complete;
#   b. wait= expires with nobody there: the program says so and goes on
#      (it runs, and a consumer that comes later gets a complete stream),
#      for a listening sink and for a connect-out sink, whose collector
#      then appears mid-run and is dialled;
#   c. it never has a consumer: the loss report at exit counts every unit
#      it accepted as dropped, under the cause for that case, and the
#      per-cause counts add up.
# Cause names come from tests/harness.sh (ELS_CAUSE_*).  The figures in
# in-band notes are checked where they are produced: the late joiners of
# test_e2e_stock.sh and test_e2e_rts.sh, the full disk and the stalled
# consumers of test_faults.sh.
#
# Skips (77) without the receiver, GHC, ghc-events, the library's GHC glue
# or the patched RTS.  Waits have generous deadlines (hang guards);
# nothing asserts on time.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"

require_tool
require_ghc
require_patched_rts
make_tmpdir
T=$ELS_TMP
PROGRAM_LABEL=controlled
build_controlled patched
note "program: $CONTROLLED"

# stream_ok NAME FILE: FILE is a stream of its own (header first) that
# ghc-events reads, no user event twice.
stream_ok() {
    validate_stream "$2" "$T/$1.show" "controlled " || fail "$1: invalid stream: $vs_why"
    [ "$vs_events" -gt 0 ] || fail "$1: the stream parses but holds no event"
}

# ---------------------------------------------------------------------------
# a. Redialling a collector that went away.
# ---------------------------------------------------------------------------
for kind in unix tcp; do
    name=redial-$kind
    if [ "$kind" = unix ]; then
        listen=unix:$T/rd.sock
        start_collector "$name.1" "$listen"
        spec="unix-connect:$T/rd.sock"
    else
        start_collector "$name.1" tcp:127.0.0.1:0
        listen=$collector_endpoint
        spec="tcp-connect:127.0.0.1:${listen##*:}"
    fi
    note "$name: collector on $listen"
    EVENTLOG_SINK_DEBUG=1 start_controlled "$name" "$CONTROLLED" run 0 +RTS -N2 \
        "--eventlog-sink=$spec?wait=60" --eventlog-flush-interval=0.1 -RTS
    for i in 1 2; do
        c=$name.$i
        wait_until 60 stream_has_data "$T/$c.eventlog" $((200 + RANDOM % 20000)) \
            || fail_showing "$T/$c.recv.err" "$c: the collector got no header and blocks within 60 s"
        if [ "$i" -eq 1 ]; then sig=TERM want=3; else sig=KILL want=137; fi
        kill -"$sig" "$cpid" 2>/dev/null
        rc=0; { wait_pid "$cpid" 30 || rc=$?; } 2>/dev/null
        [ "$rc" -eq "$want" ] || fail_showing "$T/$c.recv.err" \
            "$c: the collector killed with SIG$sig exited $rc, expected $want"
        stream_ok "$c" "$T/$c.eventlog"
        # The writer notices the collector gone before the next one comes.
        wait_count 60 "$T/$name.prog.err" 'consumer [0-9]* detached' "$i" \
            || fail_showing "$T/$name.prog.err" "$c: the program did not notice its collector $i go"
        kill -0 "$ppid" 2>/dev/null || fail_showing "$T/$name.prog.err" "$name: the program ended by itself"
        start_collector "$name.$((i + 1))" "$listen"
    done
    c=$name.3
    wait_until 60 stream_has_data "$T/$c.eventlog" \
        || fail_showing "$T/$name.prog.err" "$c: the sink did not redial the new collector on $listen within 60 s"
    stop_controlled
    wait_both "$cpid"
    check_program "$name" "$prog_rc" "emitted [0-9]* user events"
    check_recv "$c" "$recv_rc"
    stream_ok "$c" "$T/$c.eventlog"
    [ "$vs_user" -gt 0 ] || fail "$c: the complete stream holds no user event"
    # At least the three collectors.  (A tcp-connect redial that the
    # kernel refuses only after connect() returned EINPROGRESS is logged
    # as a consumer that attached and detached at once.)
    attached=$(grep -c 'consumer [0-9]* attached' "$T/$name.prog.err")
    [ "$attached" -ge 3 ] || fail_showing "$T/$name.prog.err" "$name: $attached connections, expected at least 3"
    note "$name: 3 connections (SIGTERM, SIGKILL, complete), each a stream from the header; last: $vs_user user events"
done

# ---------------------------------------------------------------------------
# b. wait= runs out: the program says so and goes on.
# ---------------------------------------------------------------------------

# A listening sink; a consumer that comes later gets a complete stream.
name=wait-listen
start_controlled "$name" "$CONTROLLED" run 0 +RTS -N2 "--eventlog-sink=unix:$T/wl.sock?wait=0.5" -RTS
wait_output "$name" ready
grep -qF "no consumer on unix:$T/wl.sock after 0.5 s; going on" "$T/$name.prog.err" \
    || fail_showing "$T/$name.prog.err" "$name: no line saying wait= ran out"
start_receiver "$name" "unix:$T/wl.sock"
wait_until 60 els_has_header "$T/$name.eventlog" \
    || fail_showing "$T/$name.recv.err" "$name: the consumer that came later got nothing"
stop_controlled
wait_both "$rpid"
check_program "$name" "$prog_rc" "emitted [0-9]* user events"
check_recv "$name" "$recv_rc"
stream_ok "$name" "$T/$name.eventlog"
[ "$vs_user" -gt 0 ] || fail "$name: the complete stream holds no user event"
note "$name: went on after wait=0.5; a later consumer got $vs_user user events"

# A connect-out sink with no collector: the program goes on, and the
# collector that appears mid-run is dialled.
name=wait-connect
start_controlled "$name" "$CONTROLLED" run 0 +RTS -N2 \
    "--eventlog-sink=unix-connect:$T/wc.sock?wait=0.5" --eventlog-flush-interval=0.1 -RTS
wait_output "$name" ready
grep -qF "no consumer on unix-connect:$T/wc.sock after 0.5 s; going on" "$T/$name.prog.err" \
    || fail_showing "$T/$name.prog.err" "$name: no line saying wait= ran out"
start_collector "$name" "unix:$T/wc.sock"
wait_until 60 stream_has_data "$T/$name.eventlog" \
    || fail_showing "$T/$name.prog.err" "$name: the sink did not dial the collector that appeared"
stop_controlled
wait_both "$cpid"
check_program "$name" "$prog_rc" "emitted [0-9]* user events"
check_recv "$name" "$recv_rc"
stream_ok "$name" "$T/$name.eventlog"
[ "$vs_user" -gt 0 ] || fail "$name: the complete stream holds no user event"
note "$name: went on after wait=0.5; the collector that came later got $vs_user user events"

# ---------------------------------------------------------------------------
# c. No consumer ever: everything accepted is reported lost, under the
# cause for a program that never had a consumer.
# ---------------------------------------------------------------------------
name=never
start_controlled "$name" "$CONTROLLED" run 20000 +RTS -N2 "--eventlog-sink=unix:$T/nv.sock" -RTS
wait_output "$name" ready
stop_controlled
prog_rc=0; wait_pid "$ppid" 60 || prog_rc=$?
check_program "$name" "$prog_rc" "emitted [0-9]* user events"
rc=0; loss_figures "$T/$name.prog.err" || rc=$?
[ "$rc" -ne 1 ] || fail_showing "$T/$name.prog.err" "$name: no loss report at exit, though nobody ever received anything"
[ "$rc" -eq 0 ] || fail "$name: $lf_why"
[ "$lf_accepted" -gt 0 ] || fail "$name: the loss report says no unit was accepted"
[ "$lf_dropped" -eq "$lf_accepted" ] \
    || fail_showing "$T/$name.prog.err" "$name: $lf_dropped of $lf_accepted units reported dropped, though nobody received any"
[ "$(loss_cause "$ELS_CAUSE_NEVER_CONSUMED")" -eq "$lf_dropped" ] \
    || fail_showing "$T/$name.prog.err" "$name: expected all $lf_dropped units under cause $ELS_CAUSE_NEVER_CONSUMED, got: $lf_causes"
note "$name: dropped $lf_dropped of $lf_accepted units ($lf_bytes bytes): $lf_causes"

exit 0
