#!/usr/bin/env bash
# test_ring_triggers.sh: a ring: flight recorder saves itself on a
# condition the stream shows (dump-on=, Note [Triggered dumps]), with real
# -N2 programs (tests/programs/Trigger.hs) and at-exit=0, so every dump is a
# triggered one.
#
#   marker: dump-on=marker:INCIDENT&after=1s: exactly one dump, holding
#     the marker, at least the second of ticks before it, and written
#     while the program still ran (it ends before the last of the 300
#     ticks the program posts after the marker, about 3 s of them: the
#     writer waits after= (1 s) past the marker, and the check leaves the
#     rest to a loaded machine rather than judge the delay by the clock);
#     it starts with an in-band note naming the cause,
#     stderr says "dump 1: marker INCIDENT 42 at ...", and it passes
#     `ghc-events validate threads|tasks` and ThreadScope's rule.
#   gc: dump-on=gc-pause>1ms (a major GC of a large live heap): one dump,
#     noted as a gc-pause, that validates.
#   flap: a marker every 100 ms for 4 s with after=0.2s, cooldown=1s and
#     max-dumps=2: exactly two dumps.
#   max-dumps=1 with a control socket: the first long GC pause's dump is
#     the only one; a ring-dump after it fails (ELS_ELIMIT, saying why)
#     and the later pauses are suppressed.
#   Each run's exit report counts what the evaluator read (none bad, none
#   missed: it kept up), the conditions met and suppressed and the dumps;
#   `ctl status` shows the same counts while the program runs.
#
# Skips (77) without the patched RTS, GHC or ghc-events.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"
. "$(dirname "$0")/../ghcprog.sh"

setup_ghc_program_test ring-triggers Trigger
PROG=$GHC_PROGRAM

# run NAME MODE OPTIONS: the program in MODE with ring:$T/NAME.eventlog
# and OPTIONS, to its end.  With WHILE_RUNNING set, that command runs
# once the first dump exists and before the program is waited for.
run() {
    local name=$1 mode=$2 opts=$3
    start_program "$name" "$PROG" "$mode" +RTS -N2 -l \
        "--eventlog-sink=ring:$T/$name.eventlog?size=16M&at-exit=0&$opts" \
        --eventlog-flush-interval=0.1 -RTS
    if [ -n "${WHILE_RUNNING:-}" ]; then
        wait_for_file "$T/$name.1.eventlog" 60 \
            || fail_showing "$T/$name.prog.err" "$name: no dump while the program ran"
        $WHILE_RUNNING
    fi
    local rc=0
    wait_pid "$ppid" 120 || rc=$?
    check_program "$name" "$rc" done
}

# evaluator_report NAME DUMPS: the writer's report at exit says the
# evaluator read every unit (some, none bad, none missed: it kept up) and
# took DUMPS dumps; prints "met suppressed".
evaluator_report() {
    local line
    line=$(grep -o 'dump-on read [0-9]* units, [0-9]* bad, [0-9]* missed; [0-9]* conditions met, [0-9]* suppressed, [0-9]* dumps' \
           "$T/$1.prog.err") || fail_showing "$T/$1.prog.err" "$1: no report of the dump-on= evaluator at exit"
    set -- "$1" "$2" $line
    # dump-on read R units, B bad, M missed; F conditions met, S suppressed, D dumps
    [ "$5" -gt 0 ] || fail "$1: the evaluator read no units: $line"
    [ "$7" = 0 ] || fail "$1: units the evaluator could not parse: $line"
    [ "$9" = 0 ] || fail "$1: units forgotten before the evaluator read them: $line"
    [ "${16}" = "$2" ] || fail "$1: ${16} dumps counted, expected $2: $line"
    echo "${11} ${14}"
}

# status_while_dumped: `ctl status` on the recorder's control socket
# shows the evaluator's counts once the first dump was taken.
status_while_dumped() {
    "$ELS_SINK_TOOL" ctl "unix:$T/mark.ctl" status >"$T/mark.status" 2>&1 \
        || fail_showing "$T/mark.status" "marker: ctl status failed"
    grep -Eq 'dump-on read [1-9][0-9]* units, 0 bad, 0 missed; [1-9][0-9]* conditions met, 0 suppressed, 1 dumps' \
        "$T/mark.status" || fail_showing "$T/mark.status" "marker: ctl status lacks the evaluator's counts"
}

# dumps NAME: how many dumps NAME.K.eventlog exist.
dumps() {
    local n=0
    while [ -e "$T/$1.$((n + 1)).eventlog" ]; do n=$((n + 1)); done
    echo "$n"
}

# --- a marker -----------------------------------------------------------------
WHILE_RUNNING=status_while_dumped \
    run mark marker "dump-on=marker:INCIDENT&after=1s&control=unix:$T/mark.ctl"
evaluator_report mark 1 >/dev/null
[ "$(dumps mark)" -eq 1 ] || fail_showing "$T/mark.prog.err" "marker: $(dumps mark) dumps, expected 1"
D=$T/mark.1.eventlog
show_events "$D" "$T/mark.show" || fail "marker: ghc-events cannot parse $D"
grep -q 'marker: INCIDENT 42' "$T/mark.show" || fail "marker: the dump lacks the marker"
grep -q 'eventlog-sink: dump 1: marker INCIDENT 42 at [0-9.]* s' "$T/mark.show" \
    || fail "marker: the dump lacks the in-band note naming its cause"
grep -q "dump 1: marker INCIDENT 42 at [0-9.]* s: $D" "$T/mark.prog.err" \
    || fail_showing "$T/mark.prog.err" "marker: no stderr line naming the dump and its cause"
# Ticks 0-249 come before the marker, 250-549 after it, 10 ms apart.
ticks=$(sed -n 's/.*tick \([0-9]*\)$/\1/p' "$T/mark.show" | sort -n)
first=$(printf '%s\n' "$ticks" | head -n 1)
last=$(printf '%s\n' "$ticks" | tail -n 1)
note "marker: dump holds ticks $first-$last"
[ -n "$first" ] && [ "$first" -le 150 ] || fail "marker: the dump starts at tick $first: less than a second before the marker"
[ "$last" -ge 250 ] || fail "marker: the dump ends at tick $last, before the marker"
[ "$last" -lt 549 ] || fail "marker: the dump ends at tick $last, the program's last: it was not written after= past the marker"
check_readers_accept marker "$D"

# --- a GC pause -----------------------------------------------------------------
run gc gc 'dump-on=gc-pause>1ms'
[ "$(dumps gc)" -ge 1 ] || fail_showing "$T/gc.prog.err" "gc: no dump on a long GC pause"
[ "$(dumps gc)" -eq 1 ] || fail "gc: $(dumps gc) dumps within the 60 s cooldown, expected 1"
show_events "$T/gc.1.eventlog" "$T/gc.show" || fail "gc: ghc-events cannot parse the dump"
grep -q 'eventlog-sink: dump 1: gc-pause [0-9.]* ms on cap [0-9]* at' "$T/gc.show" \
    || fail "gc: the dump lacks the note naming the pause"
check_readers_accept gc "$T/gc.1.eventlog"

# --- cooldown and max-dumps -------------------------------------------------------
run flap flap 'dump-on=marker:FLAP&after=0.2s&cooldown=1s&max-dumps=2'
[ "$(dumps flap)" -eq 2 ] || fail_showing "$T/flap.prog.err" "flap: $(dumps flap) dumps, expected max-dumps=2"
read -r met suppressed <<<"$(evaluator_report flap 2)"
# 40 markers: the two that armed dumps, those within after= of them, and
# the rest suppressed (cooldown, then max-dumps=).
[ "$met" -eq 40 ] || fail "flap: $met conditions met, expected the 40 markers posted"
[ "$suppressed" -ge 10 ] || fail "flap: only $suppressed of 40 markers suppressed with max-dumps=2"
show_events "$T/flap.2.eventlog" "$T/flap.show" || fail "flap: ghc-events cannot parse dump 2"
grep -q 'eventlog-sink: dump 2: marker FLAP' "$T/flap.show" \
    || fail "flap: the second dump lacks its note"

# --- max-dumps= is shared with the other ways of asking ----------------------------
# pauses: a long GC pause before "ready", then one after each second of
# ticks.  With max-dumps=1 the first pause's dump is the only one: a
# ring-dump is then refused with the reason, and the later pauses are
# suppressed.
start_controlled lim "$PROG" pauses +RTS -N2 -l \
    "--eventlog-sink=ring:$T/lim.eventlog?size=16M&at-exit=0&dump-on=gc-pause>1ms&after=0.2s&cooldown=0s&max-dumps=1&control=unix:$T/lim.sock" \
    --eventlog-flush-interval=0.1 -RTS
wait_output lim ready 120
wait_for_file "$T/lim.1.eventlog" 60 || fail_showing "$T/lim.prog.err" "max-dumps=1: no dump on the first pause"
"$ELS_SINK_TOOL" ctl "unix:$T/lim.sock" ring-dump >"$T/lim.ctl.out" 2>"$T/lim.ctl.err" \
    && fail "max-dumps=1: a ring-dump after the triggered dump succeeded: $(cat "$T/lim.ctl.out")"
grep -q "ring-dump: ELS_ELIMIT: max-dumps=1 reached: 1 dumps written, no more" "$T/lim.ctl.err" \
    || fail_showing "$T/lim.ctl.err" "max-dumps=1: the refused ring-dump does not say why"
# suppressed_pause: a pause after the dump was met and suppressed.
suppressed_pause() {
    "$ELS_SINK_TOOL" ctl "unix:$T/lim.sock" status >"$T/lim.status" 2>&1 &&
        grep -Eq 'conditions met, [1-9][0-9]* suppressed, 1 dumps' "$T/lim.status"
}
wait_until 60 suppressed_pause || fail_showing "$T/lim.status" "max-dumps=1: no later pause suppressed"
stop_controlled
rc=0; wait_pid "$ppid" 120 || rc=$?
check_program lim "$rc" done
evaluator_report lim 1 >/dev/null
[ "$(dumps lim)" -eq 1 ] && [ ! -e "$T/lim.2.eventlog.partial" ] \
    || fail "max-dumps=1: $(dumps lim) dumps"
grep -q "ring:$T/lim.eventlog: dumps: 1 written, 0 failed (no file left), 1 refused past max-dumps=" \
    "$T/lim.prog.err" || fail_showing "$T/lim.prog.err" "max-dumps=1: the refused ring-dump is not counted at exit"

# --- a bad condition is refused at start-up ----------------------------------------
"$PROG" marker +RTS -l "--eventlog-sink=ring:$T/bad.eventlog?dump-on=gc-pause>soon" -RTS \
    >"$T/bad.out" 2>"$T/bad.err" && fail "a bad dump-on= was accepted"
grep -q 'dump-on=gc-pause>soon: expected a duration' "$T/bad.err" \
    || fail_showing "$T/bad.err" "a bad dump-on= is not named"
exit 0
