#!/usr/bin/env bash
# test_rts_control.sh: runtime control of the patched RTS's eventlog
# (rts/EventLogControl.h: class toggles, snapshots, buffer size) on real
# programs.
#
# tests/programs/Control.hs with the writer tests/rts/control_writer.c (scheme
# cttest: one file per stream, plus, for each JOIN snapshot unit, a file
# header + that unit + every later unit: what a consumer that joins gets),
# compiled with the patched RTS for the threaded eventlog way, -N2.
# Checked, with ghc-events reading every stream (ghc-events shows the new
# event types by their header names, "Trace class", "Snapshot begin" ...,
# which is itself the check that an old reader skips them):
#   a. toggles: after "g off" no GC event until "g on", GC events after it;
#      the same for s (thread events), u (the user event posted while off
#      is absent, the one after present) and p (spark counters); f, off at
#      start-up, turned on: spark events appear; the program reads the
#      classes and RtsFlags.TraceFlags back in step; a thread born while s
#      was off is announced when s comes back, so validate threads passes;
#   b. JOIN snapshot, requested from an OS thread the RTS does not know:
#      header + JOIN unit + later units passes validate threads and tasks
#      and names the threads labelled before the join; the ordinary
#      stream never carries the JOIN unit and stays valid;
#   c. restart and forkProcess: the new stream and the child's stream pass
#      validate threads and tasks and carry the threads' labels;
#   d. SYNC snapshots (synchronous and requested) leave the running stream
#      valid, bracketed, with thread states;
#   e. --eventlog-buffer-size: bounds refused with the RTS's message, a
#      run with 64k buffers valid and complete, a runtime change read back;
#   f. stress: a thread toggling classes and requesting snapshots in a
#      loop while four threads post, -N2, flush interval 0.01 s: no crash,
#      every stream (ordinary and joined) valid.
#
# Skips (77) without ghc-events, GHC or the patched RTS.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"
. "$(dirname "$0")/../ghcprog.sh"

[ -n "$GHC_EVENTS" ] && command -v "$GHC_EVENTS" >/dev/null 2>&1 || skip "ghc-events not found"
require_patched_rts
make_tmpdir
T=$ELS_TMP
src=$ELS_TOP_SRCDIR/tests/rts

CT=$ELS_TOP_BUILDDIR/tests/rts/out/control-thr-l
build_ct() {
    local dir=$ELS_TOP_BUILDDIR/tests/rts/out log=$T/build-ct.log
    mkdir -p "$dir" || fail "cannot create $dir"
    (
        if command -v flock >/dev/null 2>&1; then exec 9>"$dir/.lock-ct"; flock 9; fi
        ! newer_than_patched_build "$CT" "$ELS_TOP_SRCDIR/tests/programs/Control.hs" \
            "$src/control_writer.c" || exit 0
        rm -rf "$dir/work-ct" && mkdir -p "$dir/work-ct"
        cp "$ELS_TOP_SRCDIR/tests/programs/Control.hs" "$src/control_writer.c" "$dir/work-ct/"
        (cd "$dir/work-ct" && "$ELS_PATCHED_GHC" -v0 -O -rtsopts -threaded \
            -eventlog -package unix -outputdir obj Control.hs control_writer.c \
            -o control-thr-l) >"$log" 2>&1 || exit 1
        mv -f "$dir/work-ct/control-thr-l" "$CT" && rm -rf "$dir/work-ct"
    ) || { sed 's/^/#   /' "$log" >&2; fail "could not build tests/programs/Control.hs"; }
}
build_ct

# run_ct NAME ARGS...: run the program (killed after 60 s), streams under
# $T/NAME.*; output in $T/NAME.{out,err}.
run_ct() {
    local name=$1 rc=0
    shift
    "$CT" "$@" >"$T/$name.out" 2>"$T/$name.err" </dev/null &
    local pid=$!
    bg_register "$pid"
    wait_pid "$pid" 60 || rc=$?
    [ "$rc" -ne 124 ] || fail "$name: still running after 60 s (deadlock?)"
    [ "$rc" -eq 0 ] || { sed 's/^/#   /' "$T/$name.err" >&2; fail "$name: exit $rc"; }
}

# valid NAME FILE: ghc-events reads FILE completely and validate threads
# and tasks accept it; the shown events go to $T/NAME.show.
valid() {
    local what
    show_events "$2" "$T/$1.show" || fail "$1: ghc-events cannot read $2"
    [ ! -s "$T/$1.show.err" ] || fail "$1: ghc-events show: $(head -c 300 "$T/$1.show.err")"
    for what in threads tasks; do
        "$GHC_EVENTS" validate "$what" "$2" >"$T/$1.$what" 2>&1
        head -n 1 "$T/$1.$what" | grep -q '^Valid event log' || {
            sed -n '1,20p' "$T/$1.$what" | sed 's/^/#   /' >&2
            fail "$1: ghc-events validate $what rejects $2"
        }
    done
}

# streams NAME: the ordinary streams of run NAME (not the joined ones).
streams() {
    ls "$T/$1".*.eventlog 2>/dev/null | grep -v '\.join\.'
}

# in_window W REGEX: how many events of window W match REGEX.
in_window() {
    grep -E "^$1: " "$T/tg.win" | grep -cE "$2"
}

# ---------------------------------------------------------------------------
# a. toggles
# ---------------------------------------------------------------------------
run_ct tg toggles +RTS -N2 "--eventlog-sink=cttest:$T/tg" -RTS
set -- $(streams tg)
[ "$#" -eq 1 ] && [ -s "$1" ] || fail "toggles: expected one stream, got: $*"
valid tg "$1"
windows "$T/tg.show" >"$T/tg.win"
changes=$(awk -F': ' '{ print $1 }' "$T/tg.win" | sort -n | tail -n 1)
# Program order: 1 g off, 2 g on, 3 s off, 4 s on, 5 u off, 6 u on,
# 7 p off, 8 p on, 9 f on.
[ "$changes" = 9 ] || fail "toggles: expected 9 class changes in the stream, saw ${changes:-none}"
GCRE=$GC_EVENTS_RE
n=$(in_window 1 "$GCRE"); [ "$n" -eq 0 ] || fail "toggles: $n GC events while g was off"
n=$(in_window 2 "$GCRE"); [ "$n" -gt 0 ] || fail "toggles: no GC event after g came back on"
n=$(in_window 3 'thread|task .* (created|migrated)'); [ "$n" -eq 0 ] || fail "toggles: $n thread or task events while s was off"
n=$(in_window 4 'running thread|stopping thread'); [ "$n" -gt 0 ] || fail "toggles: no thread event after s came back on"
n=$(in_window 4 'has label "born-while-s-off"'); [ "$n" -eq 1 ] || fail "toggles: the thread born while s was off was not announced with its label"
n=$(grep -c 'hidden-while-u-off' "$T/tg.show"); [ "$n" -eq 0 ] || fail "toggles: a user event posted while u was off is in the stream"
n=$(in_window 6 '^6: visible-after-u-on$'); [ "$n" -eq 1 ] || fail "toggles: the user event after u came back on is missing"
n=$(in_window 7 'spark stats'); [ "$n" -eq 0 ] || fail "toggles: $n spark counter events while p was off"
n=$(in_window 8 'spark stats'); [ "$n" -gt 0 ] || fail "toggles: no spark counters after p came back on"
n=$(grep -cE '^[0-8]: spark (created|run|stolen|fizzled)' "$T/tg.win"); [ "$n" -eq 0 ] || fail "toggles: $n full spark events before f was turned on"
n=$(in_window 9 'spark created'); [ "$n" -gt 0 ] || fail "toggles: no spark created after f was turned on"
grep -qx 'start: classes sgpu flags sgpu' "$T/tg.out" &&
grep -qx 'g off: classes spu flags spu' "$T/tg.out" &&
grep -qx 'f on: classes sgpfu flags sgpfu' "$T/tg.out" ||
    { sed 's/^/#   /' "$T/tg.out" >&2; fail "toggles: classes or RtsFlags.TraceFlags out of step"; }
note "toggles: g, s, u, p off and on, f on at runtime; every window as expected"

# ---------------------------------------------------------------------------
# b. JOIN snapshot
# ---------------------------------------------------------------------------
run_ct jn join +RTS -N2 "--eventlog-sink=cttest:$T/jn" -RTS
set -- "$T"/jn.*.0.join.*.eventlog
[ "$#" -eq 1 ] && [ -s "$1" ] || fail "join: expected one joined stream, got: $*"
valid jn-join "$1"
for i in 1 2 3 4; do
    grep -q "has label \"joiner-label-$i\"" "$T/jn-join.show" || fail "join: the joined stream lacks the label joiner-label-$i"
done
grep -q 'task .* created on cap' "$T/jn-join.show" || fail "join: the joined stream announces no task"
grep -q 'marker: after-join' "$T/jn-join.show" || fail "join: the joined stream lacks what followed the join"
grep -q 'Snapshot thread state' "$T/jn-join.show" || fail "join: no thread state in the snapshot"
valid jn "$(streams jn)"
# The ordinary stream: its own start snapshot only.
n=$(grep -c ': Snapshot begin$' "$T/jn.show"); [ "$n" -eq 1 ] || fail "join: the ordinary stream holds $n snapshots (a JOIN unit leaked into it?)"
note "join: header + JOIN unit + later units valid (threads, tasks), labels kept"

# ---------------------------------------------------------------------------
# c. restart and forkProcess
# ---------------------------------------------------------------------------
run_ct rs restart +RTS -N2 "--eventlog-sink=cttest:$T/rs" -RTS
grep -qx 'child: Just (Exited ExitSuccess)' "$T/rs.out" || fail "restart: the forked child failed: $(cat "$T/rs.out")"
parent=$(streams rs | grep '\.1\.eventlog$' | head -n 1)
[ -n "$parent" ] || fail "restart: no second stream"
valid rs-restarted "$parent"
for i in 1 2 3; do
    grep -q "has label \"restart-label-$i\"" "$T/rs-restarted.show" || fail "restart: the restarted stream lacks the label restart-label-$i"
done
grep -q 'marker: after-restart' "$T/rs-restarted.show" || fail "restart: the restarted stream lacks its events"
child=
for f in $(streams rs | grep '\.0\.eventlog$'); do
    case $f in "${parent%.1.eventlog}.0.eventlog") ;; *) child=$f ;; esac
done
[ -n "$child" ] || fail "restart: no stream from the forked child"
valid rs-child "$child"
grep -q 'marker: child-done' "$T/rs-child.show" || fail "restart: the child's stream lacks its events"
grep -q 'created cap 1' "$T/rs-child.show" || fail "restart: the child's stream does not announce the capabilities"
note "restart and fork child: streams valid (threads, tasks) with init events and labels"

# ---------------------------------------------------------------------------
# d. SYNC snapshots
# ---------------------------------------------------------------------------
run_ct sy sync +RTS -N2 "--eventlog-sink=cttest:$T/sy" -RTS
valid sy "$(streams sy)"
b=$(grep -c ': Snapshot begin$' "$T/sy.show"); e=$(grep -c ': Snapshot end$' "$T/sy.show")
[ "$b" -ge 7 ] && [ "$b" -eq "$e" ] || fail "sync: $b snapshot begins, $e ends (want >= 7, equal)"
grep -q 'has label "sync-label-1"' "$T/sy.show" || fail "sync: no thread label"
[ -z "$(ls "$T"/sy.*.join.* 2>/dev/null)" ] || fail "sync: a SYNC snapshot came as a JOIN unit"
note "sync: $b snapshots in a running stream, still valid"

# ---------------------------------------------------------------------------
# e. buffer size
# ---------------------------------------------------------------------------
for bad in 10k 2g; do
    rc=0; "$CT" bufsize 1 +RTS "--eventlog-buffer-size=$bad" -RTS >"$T/bs-bad.out" 2>"$T/bs-bad.err" || rc=$?
    [ "$rc" -ne 0 ] && grep -q "error in RTS option --eventlog-buffer-size=$bad: size outside allowed range (65536 - 1073741824)" "$T/bs-bad.err" ||
        fail "bufsize $bad: not refused as expected (exit $rc): $(cat "$T/bs-bad.err")"
done
run_ct bs bufsize 20000 +RTS -N2 --eventlog-buffer-size=64k "--eventlog-sink=cttest:$T/bs" -RTS
grep -qx 'buffer 65536' "$T/bs.out" || fail "bufsize: the program reads $(head -n 1 "$T/bs.out"), want 65536"
grep -qx 'set 0 buffer 131072' "$T/bs.out" || fail "bufsize: runtime change: $(sed -n 2p "$T/bs.out")"
grep -qx 'too small -22' "$T/bs.out" || fail "bufsize: a size below the bound was not refused with -EINVAL"
valid bs "$(streams bs)"
for p in bufsize-a bufsize-b; do
    n=$(grep -c ": $p [0-9]*$" "$T/bs.show")
    [ "$n" -eq 20000 ] || fail "bufsize: $n of 20000 $p events in the stream"
done
note "bufsize: bounds refused; 64k buffers, then 128k at runtime: every event kept"

# ---------------------------------------------------------------------------
# f. stress
# ---------------------------------------------------------------------------
run_ct st stress 1500 +RTS -N2 --eventlog-flush-interval=0.01 "--eventlog-sink=cttest:$T/st" -RTS
grep -qx stressed "$T/st.out" || fail "stress: the program did not finish"
n=0
for f in "$T"/st.*.eventlog; do
    valid "st-$n" "$f"
    n=$((n + 1))
done
[ "$n" -ge 2 ] || fail "stress: expected the stream and at least one joined stream, got $n"
note "stress: $n streams (ordinary and joined), all valid"
exit 0
