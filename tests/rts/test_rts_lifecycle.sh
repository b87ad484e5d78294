#!/usr/bin/env bash
# test_rts_lifecycle.sh: the patched RTS's eventlog through stop, start,
# flush, setNumCapabilities and forkProcess, on real programs.
#
# tests/programs/Lifecycle.hs with the checking writer tests/rts/
# lifecycle_writer.c (scheme "lctest", one file per stream; it counts every
# unit that reaches it before the header, after DATA_END or while no
# stream runs), compiled with the patched RTS's ghc-eventlog-sink for the
# thr_l and thr_debug ways (the debug way checks the RTS's assertions).
# Checked, with ghc-events reading every stream:
#   a. stop, setNumCapabilities 6, many full buffers' worth of scheduler
#      events while stopped, start: no crash, no "could not flush" line,
#      none of the stopped period's events in either stream, events from
#      the new capabilities in the second;
#   b. the restarted stream and a forked child's stream carry the init
#      events (capsets, capabilities, wall clock, pid/ppid, RTS identifier,
#      program arguments, heap info), with the child's own pid;
#   c. stress: threads flushing with a capability held (rts_lock) and
#      without one while the main thread stops and starts the eventlog in
#      a loop, flush interval 0.01 s: no deadlock (timeout as safety net),
#      every stream valid and complete;
#   d. the periodic flush delivers a marker while the program runs, both
#      when its one thread never idles and when it is idle;
#   e. forkProcess children, with the flush ticker and flushing threads
#      active in the parent, run and exit normally;
#   f. refusals: --eventlog-flush-interval on the non-threaded RTS or with
#      a bad value; a full scheme table is reported as such.
#
# Skips (77) without ghc-events, GHC or the patched RTS.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"

[ -n "$GHC_EVENTS" ] && command -v "$GHC_EVENTS" >/dev/null 2>&1 || skip "ghc-events not found"
require_patched_rts
make_tmpdir
T=$ELS_TMP
src=$ELS_TOP_SRCDIR/tests/rts

# build_lc NAME GHC-ARGS...: compile Lifecycle.hs + lifecycle_writer.c with
# the patched RTS, cached in $ELS_TOP_BUILDDIR/tests/rts/out/NAME.
build_lc() {
    local name=$1 dir=$ELS_TOP_BUILDDIR/tests/rts/out log
    shift
    log=$T/build-$name.log
    mkdir -p "$dir" || fail "cannot create $dir"
    (
        if command -v flock >/dev/null 2>&1; then exec 9>"$dir/.lock"; flock 9; fi
        ! newer_than_patched_build "$dir/$name" "$ELS_TOP_SRCDIR/tests/programs/Lifecycle.hs" \
            "$src/lifecycle_writer.c" || exit 0
        rm -rf "$dir/work-$name"
        mkdir -p "$dir/work-$name"
        cp "$ELS_TOP_SRCDIR/tests/programs/Lifecycle.hs" "$src/lifecycle_writer.c" "$dir/work-$name/"
        (cd "$dir/work-$name" && "$ELS_PATCHED_GHC" -v0 -O -rtsopts "$@" \
            -outputdir obj Lifecycle.hs lifecycle_writer.c -o "$name") >"$log" 2>&1 \
            || exit 1
        mv -f "$dir/work-$name/$name" "$dir/$name" && rm -rf "$dir/work-$name"
    ) || {
        sed 's/^/#   /' "$log" >&2
        fail "could not build the test program $name ($*)"
    }
    echo "$dir/$name"
}

LC=$(build_lc lifecycle-thr-l -threaded -eventlog) || exit 1
LCD=$(build_lc lifecycle-thr-debug -threaded -debug) || exit 1
LCN=$(build_lc lifecycle-l -eventlog) || exit 1

# run_lc NAME SECS PROG ARGS...: run to completion (killed after SECS),
# output in $T/NAME.{out,err}; sets rc and pid.
run_lc() {
    local name=$1 secs=$2
    shift 2
    "$@" >"$T/$name.out" 2>"$T/$name.err" </dev/null &
    pid=$!
    bg_register "$pid"
    rc=0; wait_pid "$pid" "$secs" || rc=$?
    [ "$rc" -ne 124 ] || fail "$name: still running after $secs s (deadlock?): $*"
}

# check_run NAME DONE-LINE: the run exited 0, printed DONE-LINE, its writer
# saw no broken promise, and the RTS printed no "could not flush".
check_run() {
    local name=$1
    if [ "$rc" -ne 0 ]; then
        sed 's/^/#   /' "$T/$name.err" >&2
        fail "$name: exit status $rc"
    fi
    grep -q "^$2" "$T/$name.out" || fail "$name: no '$2' in its output: $(head -c 300 "$T/$name.out")"
    grep -qx "violations: 0" "$T/$name.out" \
        || fail "$name: the writer saw broken promises: $(grep violation "$T/$name.err" | head -n 5 | tr '\n' ' ')"
    ! grep -q "could not flush" "$T/$name.err" \
        || fail "$name: the RTS printed 'could not flush' $(grep -c "could not flush" "$T/$name.err") times"
}

# show NAME FILE: ghc-events show FILE into $T/NAME.show, or fail.
show() {
    [ -s "$2" ] || fail "$1: no stream in $2"
    show_events "$2" "$T/$1.show" || fail "$1: ghc-events cannot parse $2"
}

# check_init NAME PID PPID: the stream shown in $T/NAME.show opens with the
# init events of process PID (parent PPID) with capabilities 0..NCAPS-1.
check_init() {
    local name=$1 p=$2 pp=$3 ncaps=$4 want c
    for want in "created capset 0 of type CapsetOsProcess" \
                "created capset 1 of type CapsetClockDomain" \
                "capset 0: pid $p" "capset 0: parent pid $pp" \
                "capset 0: RTS version \"GHC-" "capset 0: args: [" \
                "wall clock time" "heap stats for heap capset 0"; do
        grep -qF -- "$want" "$T/$name.show" || fail "$name: no '$want' in the stream"
    done
    for c in $(seq 0 $((ncaps - 1))); do
        grep -qE "^ *[0-9]+: created cap $c\$" "$T/$name.show" || fail "$name: no 'created cap $c'"
        grep -qE "assigned cap $c to capset 0\$" "$T/$name.show" || fail "$name: cap $c not in capset 0"
    done
}

# ---------------------------------------------------------------------------
# a, b. Stop, setNumCapabilities 6, start.
# ---------------------------------------------------------------------------
# The debug RTS runs with -qg: GHC 9.0.2's debug build asserts at exit
# that GC CPU time is below process CPU time (rts/Stats.c, the
# productivity assertion), and its parallel GC, which sums each GC
# thread's own CPU clock, trips it after setNumCapabilities about once in
# 20 runs with or without any eventlog flag; the thr_l run keeps the
# parallel GC.
for way in thr_l thr_debug; do
    prog=$LC; gcopt=''
    [ "$way" = thr_l ] || { prog=$LCD; gcopt=-qg; }
    n=setcaps-$way
    run_lc "$n" 120 "$prog" setcaps +RTS -N2 $gcopt "--eventlog-sink=lctest:$T/$n" -RTS
    check_run "$n" "setcaps done"
    show "$n.s0" "$T/$n.$pid.0.eventlog"
    show "$n.s1" "$T/$n.$pid.1.eventlog"
    [ ! -e "$T/$n.$pid.2.eventlog" ] || fail "$n: a third stream"
    ids=$(sed -n 's/^stopped-threads: //p' "$T/$n.out")
    [ -n "$ids" ] || fail "$n: no stopped-threads line"
    for s in s0 s1; do
        ! grep -q "while-stopped" "$T/$n.$s.show" || fail "$n: a label set while stopped is in stream $s"
        for id in $ids; do
            ! grep -qE "thread $id( |\$)" "$T/$n.$s.show" \
                || fail "$n: stream $s has events of thread $id, which ran only while the eventlog was stopped: $(grep -E "thread $id( |\$)" "$T/$n.$s.show" | head -n 2 | tr '\n' ' ')"
        done
    done
    for c in 0 1 2 3 4 5; do
        k=$(grep -cE "^ *[0-9]+: cap $c: after $c " "$T/$n.s1.show")
        [ "$k" -eq 2000 ] || fail "$n: $k events of cap $c in the restarted stream, expected 2000"
    done
    ppid_line=$(grep -oE "capset 0: parent pid [0-9]+" "$T/$n.s0.show" | head -n 1)
    check_init "$n.s1" "$pid" "${ppid_line##* }" 6
    note "$n: no crash, two streams, nothing from the stopped period, init events and all 6 capabilities in the second"
done

# ---------------------------------------------------------------------------
# c. Stress: flushes with and without a capability against stop/start.
# ---------------------------------------------------------------------------
for way in thr_l thr_debug; do
    prog=$LC; K=40; [ "$way" = thr_l ] || { prog=$LCD; K=15; }
    n=stress-$way
    run_lc "$n" 180 "$prog" stress "$K" +RTS -N2 "--eventlog-sink=lctest:$T/$n" \
        --eventlog-flush-interval=0.01 -RTS
    check_run "$n" "stress done: $K restarts"
    total=0
    for i in $(seq 0 "$K"); do
        show "$n.s$i" "$T/$n.$pid.$i.eventlog"
        c=$(count_shown_user_events "$T/$n.s$i.show" "stress ")
        total=$((total + c))
        grep -qF "capset 0: pid $pid" "$T/$n.s$i.show" || fail "$n: stream $i has no init events"
    done
    [ ! -e "$T/$n.$pid.$((K + 1)).eventlog" ] || fail "$n: more than $((K + 1)) streams"
    [ "$total" -gt 0 ] || fail "$n: no user events in $((K + 1)) streams"
    note "$n: $((K + 1)) valid streams, $total user events, $(sed -n 's/^flush units: //p' "$T/$n.out") flush units"
done

# ---------------------------------------------------------------------------
# d. The periodic flush: a thread that never idles, an idle program.
# ---------------------------------------------------------------------------
# marker_arrived FILE MARKER: FILE (a stream still being written) parses up
# to an event holding MARKER.
marker_arrived() {
    [ -s "$1" ] && "$GHC_EVENTS" show "$1" 2>/dev/null | grep -q "$2"
}

for mode in busy idle; do
    for N in 1 2; do
        n=$mode-N$N
        mkfifo "$T/$n.in" || fail "mkfifo failed"
        "$LC" "$mode" +RTS -N$N "--eventlog-sink=lctest:$T/$n" --eventlog-flush-interval=0.01 -RTS \
            <"$T/$n.in" >"$T/$n.out" 2>"$T/$n.err" &
        pid=$!
        bg_register "$pid"
        exec 8>"$T/$n.in"
        wait_until 30 grep -q "^$mode running" "$T/$n.out" || fail "$n: the program did not start"
        wait_until 30 marker_arrived "$T/$n.$pid.0.eventlog" "$mode-marker" \
            || fail "$n: '$mode-marker' did not reach the stream within 30 s while the program ran"
        kill -0 "$pid" 2>/dev/null || fail "$n: the program ended early"
        echo go >&8
        exec 8>&-
        rc=0; wait_pid "$pid" 60 || rc=$?
        check_run "$n" "$mode done"
        show "$n" "$T/$n.$pid.0.eventlog"
        note "$n: the marker arrived while the program ran"
    done
done

# ---------------------------------------------------------------------------
# e. forkProcess with the flush ticker and flushing threads active.
# ---------------------------------------------------------------------------
for way in thr_l thr_debug; do
    prog=$LC; [ "$way" = thr_l ] || prog=$LCD
    n=fork-$way
    run_lc "$n" 180 "$prog" fork 20 +RTS -N2 "--eventlog-sink=lctest:$T/$n" \
        --eventlog-flush-interval=0.001 -RTS
    check_run "$n" "children: "
    kids=$(sed -n 's/^children: //p' "$T/$n.out")
    i=0
    for kid in $kids; do
        i=$((i + 1))
        show "$n.c$i" "$T/$n.$kid.0.eventlog"
        grep -qE "^ *[0-9]+: cap [0-9]+: child $i\$" "$T/$n.c$i.show" \
            || fail "$n: child $i's stream lacks its event"
        check_init "$n.c$i" "$kid" "$pid" 2
    done
    [ "$i" -eq 20 ] || fail "$n: $i children, expected 20"
    note "$n: 20 children ran and exited; each stream has the child's init events"
done

# ---------------------------------------------------------------------------
# f. Refusals.
# ---------------------------------------------------------------------------
# refuse NAME EXPECT PROG ARGS...: exits 1 with EXPECT on stderr.
refuse() {
    local name=$1 expect=$2
    shift 2
    run_lc "$name" 30 "$@"
    [ "$rc" -eq 1 ] || fail "$name: exit status $rc, expected 1 ($*)"
    grep -qF -- "$expect" "$T/$name.err" || fail "$name: stderr lacks '$expect': $(head -c 300 "$T/$name.err")"
}
refuse nonthreaded "--eventlog-flush-interval needs the threaded RTS" \
    "$LCN" tiny +RTS "--eventlog-sink=lctest:$T/nt" --eventlog-flush-interval=0.01 -RTS
refuse badvalue "bad value for --eventlog-flush-interval: 'x'" \
    "$LC" tiny +RTS --eventlog-flush-interval=x -RTS
refuse negvalue "bad value for --eventlog-flush-interval: '-1'" \
    "$LC" tiny +RTS --eventlog-flush-interval=-1 -RTS
# 0 means never (and turns off a sink's default interval): accepted.
run_lc zerovalue 30 "$LC" tiny +RTS --eventlog-flush-interval=0 -RTS
[ "$rc" -eq 0 ] || fail "zerovalue: exit status $rc, expected 0: $(head -c 300 "$T/zerovalue.err")"

run_lc registry 30 env LC_FILL_REGISTRY=1 "$LC" tiny +RTS --eventlog-sink=nosuch:x -RTS
[ "$rc" -eq 1 ] || fail "registry: exit status $rc, expected 1"
grep -qx "duplicate: -17" "$T/registry.out" || fail "registry: a duplicate scheme did not return -EEXIST: $(cat "$T/registry.out")"
grep -qx "malformed: -22" "$T/registry.out" || fail "registry: a malformed scheme did not return -EINVAL"
grep -qx "registered: 64, then: -28" "$T/registry.out" \
    || fail "registry: the table did not hold exactly 64 schemes and then return -ENOSPC: $(cat "$T/registry.out")"
grep -qF "no eventlog sink is registered for scheme 'nosuch'; 1 registration(s) were refused because the RTS's table of 64 schemes is full" "$T/registry.err" \
    || fail "registry: the refusal does not name the full table: $(cat "$T/registry.err")"
note "refusals: one line each; the scheme table holds 64 and says when it is full"

exit 0
