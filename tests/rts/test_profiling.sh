#!/usr/bin/env bash
# test_profiling.sh: profiled programs on the patched RTS stream their
# cost-centre and heap samples live, and the profilers obey the library's
# controls (GHC.Eventlog.Sink.Profiling over els_ghc_heap_profiling,
# els_ghc_heap_census, els_ghc_time_profiling; RTS patch 0011).
#
# tests/programs/Prof.hs, built with ghc-eventlog-sink -prof -eventlog
# -threaded, runs with +RTS -N2 -p -hc -i0.1 -l --eventlog-sink=unix:...,
# `eventlog-sink recv` receiving; it runs commands read from stdin and
# answers each on stdout.  The test reads what recv has written so far
# with ghc-events show and waits for events, never for the clock; the
# time profiler's tick numbers (one tick = 1 ms in a profiled RTS) and the
# censuses serve as the clock that shows a profiler stayed quiet.  Checked:
#   live: the cost-centre definitions of prof_work and prof_retain, time
#     samples and heap censuses by cost centre naming prof_retain reach the
#     consumer while the program waits for its next command;
#   heap timer off: no census starts during the next 400 ticks after the
#     stop returned (one already due may: at most one);
#   census on request with the timer off: exactly one census follows the
#     request, and none in the 400 ticks after it;
#   heap timer on: censuses resume;
#   time profiler off: no time sample during the next 3 censuses (one tick
#     in flight may: at most one tick); on: samples resume;
#   the whole stream parses and defines each cost centre and begins the
#     heap profile once; the program and recv end cleanly;
#   a consumer that joins after the live samples arrived starts at a
#     snapshot (RTS patch 0012) that defines every cost centre the heap
#     and time samples it receives name, and begins the heap profile; its
#     stream passes `ghc-events validate threads`;
#   without a heap profiling mode (+RTS -p only) the heap calls answer
#     ELS_ENOTSUP and the time call works;
#   not profiled (no -prof), +RTS -hT -i100: a census by closure type
#     streams on request, the heap timer calls work, the time call answers
#     ELS_ENOTSUP.
#
# Skips (77) without GHC's profiling libraries (Debian's ghc-prof,
# scripts/install-deps.sh installs it), the patched RTS, GHC, ghc-events,
# hsc2hs or the receiver.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"

require_tool
require_ghc
require_patched_rts
command -v hsc2hs >/dev/null 2>&1 || skip "hsc2hs not found (it comes with Debian's ghc)"
ghc_libdir=$("$GHC" --print-libdir) || fail "$GHC --print-libdir failed"
if [ ! -f "$ghc_libdir/rts/libHSrts_thr_p.a" ] ||
   ! ls "$ghc_libdir"/base-*/libHSbase-*_p.a >/dev/null 2>&1; then
    skip "GHC's profiling libraries are not installed (Debian package ghc-prof; scripts/install-deps.sh installs it)"
fi
# The stock profiled RTS is there: the patched one must be too.
prts=$ELS_PATCHED_RTS_DIR/lib/rts/libHSrts_thr_p.a
[ -f "$prts" ] && [ ! -L "$prts" ] \
    || fail "the patched RTS has no patched thr_p way ($prts) although GHC has one: rebuild it (make patched-rts)"
make_tmpdir
T=$ELS_TMP

# ---------------------------------------------------------------------------
# Build Prof.hs with the Haskell package's modules (hsc2hs, then -i), once
# per build tree and flavour, rebuilt when a source, the library or the
# patched RTS is newer.
# ---------------------------------------------------------------------------
hs=$ELS_TOP_SRCDIR/haskell/eventlog-sink/src/GHC/Eventlog

# build_prof NAME GHC-FLAGS...: build $ELS_TOP_BUILDDIR/tests/ghc/out/NAME/prof.
# Always -O: unoptimised profiled code meets GHC 9.0.2's "PAP object
# entered" crash during heap censuses (README, "Profiled programs").
build_prof() {
    local name=$1 b=$ELS_TOP_BUILDDIR/tests/ghc/out/$1
    shift
    mkdir -p "$b" || fail "cannot create $b"
    (
        if command -v flock >/dev/null 2>&1; then exec 9>"$b/.lock"; flock 9; fi
        ! newer_than_patched_build "$b/prof" "$ELS_TOP_SRCDIR/tests/programs/Prof.hs" \
            "$hs/Sink.hsc" "$hs/Sink/Profiling.hs" "$0" || exit 0
        rm -rf "$b/work"
        mkdir -p "$b/work/src/GHC/Eventlog/Sink" || exit 1
        hsc2hs -I"$ELS_INCLUDEDIR" -o "$b/work/src/GHC/Eventlog/Sink.hs" "$hs/Sink.hsc" || exit 1
        cp "$hs/Sink/Profiling.hs" "$b/work/src/GHC/Eventlog/Sink/" || exit 1
        cp "$ELS_TOP_SRCDIR/tests/programs/Prof.hs" "$b/work/Main.hs" || exit 1
        (cd "$b/work" && patched_ghc_lib -v0 -O "$@" -eventlog -threaded -rtsopts \
            -Wall -Werror -isrc -outputdir obj Main.hs -o prof) || exit 1
        mv -f "$b/work/prof" "$b/prof" && rm -rf "$b/work"
    ) >"$T/build-$name.log" 2>&1 || fail_showing "$T/build-$name.log" "could not build tests/programs/Prof.hs ($name: $*)"
    note "program ($name): $b/prof"
}
build_prof prof -prof
build_prof noprof
PROF=$ELS_TOP_BUILDDIR/tests/ghc/out/prof/prof

# ---------------------------------------------------------------------------
# Driving the program
# ---------------------------------------------------------------------------

# prof_launch NAME RTS-OPTS...: run the program in $T (its .prof and .hp
# files go there) as a coprocess; the caller starts its consumer (a sink
# with wait= holds the program until one connects), then expects "ready".
prof_launch() {
    prof_name=$1
    shift
    coproc PROF_PROC { cd "$T" && exec "$PROF" +RTS "$@" -RTS 2>"$T/$prof_name.prog.err"; }
    prof_pid=$PROF_PROC_PID
    bg_register "$prof_pid"
}

# prof_expect LINE: the program's next answer is LINE.
prof_expect() {
    local got=
    IFS= read -r -t 60 got <&"${PROF_PROC[0]}" \
        || fail_showing "$T/$prof_name.prog.err" "$prof_name: no answer from the program (expected '$1')"
    [ "$got" = "$1" ] \
        || fail_showing "$T/$prof_name.prog.err" "$prof_name: the program answered '$got', expected '$1'"
}

# prof CMD ANSWER: send CMD, expect ANSWER.
prof() {
    printf '%s\n' "$1" >&"${PROF_PROC[1]}" || fail "$prof_name: the program is gone (sending '$1')"
    prof_expect "$2"
}

# ---------------------------------------------------------------------------
# Reading what the consumer has received so far
# ---------------------------------------------------------------------------
STREAM=$T/live.eventlog
SHOWN=$T/shown.txt

# snap: ghc-events show of what recv wrote so far (a stream cut anywhere
# parses up to its last whole event).
snap() {
    [ -s "$STREAM" ] && "$GHC_EVENTS" show "$STREAM" >"$SHOWN" 2>/dev/null
}

# marker_time TEXT: the time of the user event TEXT (empty if not there).
marker_time() {
    awk -v t="$1" '$0 ~ "^ *[0-9]+: cap [0-9]+: " { s = $0; sub(/^ *[0-9]+: cap [0-9]+: /, "", s)
        if (s == t) { sub(/:.*/, ""); print $1 + 0; exit } }' "$SHOWN"
}

# censuses_after T0: how many censuses began after time T0.
censuses_after() {
    awk -v t0="$1" '/^ *[0-9]+: start heap prof sample / { sub(/:.*/, ""); if ($1 + 0 > t0) n++ }
        END { print n + 0 }' "$SHOWN"
}

# census_times_after T0: the start times of the censuses after T0.
census_times_after() {
    awk -v t0="$1" '/^ *[0-9]+: start heap prof sample / { sub(/:.*/, ""); if ($1 + 0 > t0) print $1 + 0 }' "$SHOWN"
}

# ticks_after T0: "FIRST LAST N": the first and last tick numbers of the
# time samples after time T0, and how many distinct ticks.
ticks_after() {
    awk -v t0="$1" '/^ *[0-9]+: cap no [0-9]+, prof sample [0-9]+,/ {
            t = $1; sub(/:$/, "", t)
            if (t + 0 <= t0) next
            k = $0; sub(/.*prof sample /, "", k); sub(/,.*/, "", k); k += 0
            if (!(k in seen)) { seen[k] = 1; n++ }
            if (first == "" || k < first) first = k
            if (k > last) last = k
        }
        END { print (first == "" ? 0 : first), last + 0, n + 0 }' "$SHOWN"
}

# ticks_span_after T0 N: true once the time samples after T0 span N ticks.
ticks_span_after() {
    local first last n
    snap || return 1
    read -r first last n < <(ticks_after "$1")
    [ "$n" -gt 0 ] && [ $((last - first)) -ge "$2" ]
}

# marked TEXT: send "mark TEXT" (the program posts TEXT and flushes), wait
# until the consumer has it; sets mark_t to its time.
marked() {
    prof "mark $1" marked
    mark_t=
    wait_until 30 marker_arrived "$1" \
        || fail "$prof_name: the marker '$1' did not reach the consumer"
}
marker_arrived() {
    snap || return 1
    mark_t=$(marker_time "$1")
    [ -n "$mark_t" ]
}

# ---------------------------------------------------------------------------
# Live profile, and the controls
# ---------------------------------------------------------------------------
SPEC="unix:$T/p.sock?wait=30"
prof_launch live -N2 -p -hc -i0.1 -l --eventlog-flush-interval=0.1 "--eventlog-sink=$SPEC"
start_receiver live "unix:$T/p.sock"
prof_expect ready

# The cost-centre ids of our two cost centres, from their definitions.
cc_id() {
    awk -v n="$1" '/^ *[0-9]+: cost centre [0-9]+ / && $5 == n { print $4; exit }' "$SHOWN"
}
live_ready() {
    snap || return 1
    work_cc=$(cc_id prof_work); retain_cc=$(cc_id prof_retain)
    [ -n "$work_cc" ] && [ -n "$retain_cc" ] || return 1
    grep -Eq '^ *[0-9]+: cap no [0-9]+, prof sample [0-9]+, cost centre stack ' "$SHOWN" || return 1
    [ "$(censuses_after 0)" -ge 2 ] || return 1
    # A heap sample by cost centre whose stack holds prof_retain.
    awk -v id="$retain_cc" '/heap prof sample [0-9]+, residency [0-9]+, cost centre stack / {
            s = $0; sub(/.*cost centre stack /, "", s); n = split(s, a, /[^0-9]+/)
            for (i = 1; i <= n; i++) if (a[i] == id) found = 1 }
        END { exit !found }' "$SHOWN"
}
wait_until 60 live_ready \
    || fail "live: the consumer did not receive cost-centre definitions, time samples and two censuses naming prof_retain while the program ran ($(grep -c 'prof sample' "$SHOWN" 2>/dev/null || echo 0) sample lines so far)"
kill -0 "$prof_pid" 2>/dev/null || fail "live: the program ended before its commands"
note "live: cost centres prof_work=$work_cc prof_retain=$retain_cc, time and heap samples arrived while the program waited for commands"

# A second consumer joins now: the stream's start has left the queue (the
# first consumer has it), so the joiner starts at a JOIN snapshot.  It
# stays for the rest of the run, whose censuses and time samples it checks
# below.
live_rpid=$rpid
start_receiver joiner "unix:$T/p.sock"
joiner_pid=$rpid
rpid=$live_rpid
joined() {
    [ -s "$T/joiner.eventlog" ] &&
        "$GHC_EVENTS" show "$T/joiner.eventlog" 2>/dev/null | grep -q ' joined mid-run; its stream starts at a snapshot'
}
wait_until 60 joined \
    || fail_showing "$T/joiner.recv.err" "joiner: no in-band note of a join at a snapshot within 60 s"

# Heap profile timer off: quiet for 400 ticks (4 intervals).
prof "heap off" "heap ok"
marked heap-off
t_off=$mark_t
wait_until 60 ticks_span_after "$t_off" 400 \
    || fail "heap off: the time profiler did not advance 400 ticks after the stop"
n=$(censuses_after "$t_off")
[ "$n" -le 1 ] || fail "heap off: $n censuses in the 400 ticks after the heap profile timer stopped (at most 1, one already due)"
note "heap off: $n census(es) in 400 ticks"

# One census on request, with the timer off.
marked census-asked
t_ask=$mark_t
prof census "census ok"
census_seen() { snap && [ "$(censuses_after "$t_ask")" -ge 1 ]; }
wait_until 60 census_seen || fail "census: no census after the request"
t_census=$(census_times_after "$t_ask" | head -n 1)
wait_until 60 ticks_span_after "$t_census" 400 \
    || fail "census: the time profiler did not advance 400 ticks after the census"
n=$(censuses_after "$t_ask")
[ "$n" -eq 1 ] || fail "census: $n censuses after one request with the timer off (expected exactly 1)"
note "census: exactly one, on request"

# Heap profile timer on again: periodic censuses resume.
prof "heap on" "heap ok"
marked heap-on
t_on=$mark_t
resumed() { snap && [ "$(censuses_after "$t_on")" -ge 2 ]; }
wait_until 60 resumed || fail "heap on: the periodic censuses did not resume"

# Time profiler off: no samples over the next 3 censuses (the clock).
prof "time off" "time ok"
marked time-off
t_toff=$mark_t
three_censuses() { snap && [ "$(censuses_after "$t_toff")" -ge 3 ]; }
wait_until 60 three_censuses || fail "time off: no 3 censuses after the stop"
t_end=$(census_times_after "$t_toff" | sed -n 3p)
awk -v t1="$t_end" '{ t = $1; sub(/:$/, "", t); if (t + 0 <= t1) print }' "$SHOWN" >"$T/until.txt"
read -r _ _ n < <(SHOWN=$T/until.txt ticks_after "$t_toff")
[ "$n" -le 1 ] || fail "time off: time samples of $n ticks after the time profiler stopped (at most 1, in flight)"
note "time off: samples of $n tick(s) over 3 censuses"

prof "time on" "time ok"
marked time-on
t_ton=$mark_t
time_resumed() { ticks_span_after "$t_ton" 10; }
wait_until 60 time_resumed || fail "time on: the time samples did not resume"

prof quit bye
prog_rc=0; wait_pid "$prof_pid" 60 || prog_rc=$?
recv_rc=0; wait_pid "$rpid" 30 || recv_rc=$?
[ "$prog_rc" -eq 0 ] || fail_showing "$T/live.prog.err" "live: the program exited with status $prog_rc"
check_recv live "$recv_rc"
show_events "$STREAM" "$T/live.show" || fail "live: ghc-events cannot parse the whole stream"
total=$(awk '/^Events:/ { on = 1; next } on && /^ *[0-9]+: / { n++ } END { print n + 0 }' "$T/live.show")
[ "$total" -gt 0 ] || fail "live: the stream holds no events"
note "live: the whole stream parses ($total events)"

# cc_check SHOWN: "DEFINED DUPLICATED HEAP-IDS TIME-IDS UNDEFINED...": how
# many cost centres SHOWN (ghc-events show) defines, how many of them
# twice, how many distinct ids its heap samples and its time samples name,
# and the ids they name that it does not define.
cc_check() {
    awk '/^ *[0-9]+: cost centre [0-9]+ / { if (def[$4]++) dup++; next }
        / prof sample [0-9]+, (residency [0-9]+, )?cost centre stack / {
            heap = $0 ~ /residency/
            s = $0; sub(/.*cost centre stack /, "", s); n = split(s, a, /[^0-9]+/)
            for (i = 1; i <= n; i++) if (a[i] != "") {
                used[a[i]] = 1
                if (heap) h[a[i]] = 1; else t[a[i]] = 1
            }
        }
        END {
            for (i in def) nd++
            for (i in h) nh++
            for (i in t) nt++
            printf "%d %d %d %d", nd, dup, nh, nt
            for (i in used) if (!(i in def)) printf " %s", i
            print ""
        }' "$1"
}
read -r n_def n_dup _ _ _ < <(cc_check "$T/live.show")
[ "$n_def" -gt 0 ] && [ "$n_dup" -eq 0 ] \
    || fail "live: the stream defines $n_def cost centres, $n_dup of them more than once (each exactly once)"
n=$(grep -c '^ *[0-9]*: start heap profiling ' "$T/live.show" || true)
[ "$n" -eq 1 ] || fail "live: the heap profile begins $n times in the stream (once)"

# The joiner: the snapshot it started at defines every cost centre that
# the samples it received name, and begins the heap profile; its stream is
# one the readers take (validate exits 0 even on "Invalid").
jrc=0; wait_pid "$joiner_pid" 30 || jrc=$?
check_recv joiner "$jrc"
show_events "$T/joiner.eventlog" "$T/joiner.show" || fail "joiner: ghc-events cannot parse the stream"
read -r n_def n_dup n_heap n_time undefined < <(cc_check "$T/joiner.show")
[ "$n_heap" -gt 0 ] && [ "$n_time" -gt 0 ] \
    || fail "joiner: no heap samples ($n_heap ids) or time samples ($n_time ids) by cost centre after the join"
[ -z "$undefined" ] \
    || fail "joiner: the samples name cost centres the stream never defines: $undefined ($n_def defined)"
grep -q '^ *[0-9]*: start heap profiling ' "$T/joiner.show" \
    || fail "joiner: the stream does not begin the heap profile"
out=$("$GHC_EVENTS" validate threads "$T/joiner.eventlog" 2>&1)
case $out in
    *Invalid*|*invalid*) fail "joiner: ghc-events validate threads rejects the stream: $(printf '%s' "$out" | head -c 300)" ;;
    *Valid*) ;;
    *) fail "joiner: ghc-events validate threads said neither valid nor invalid: $(printf '%s' "$out" | head -c 300)" ;;
esac
note "joiner: $n_def cost centres defined, every id of its samples among them ($n_heap in heap samples, $n_time in time samples); validate threads: valid"

# ---------------------------------------------------------------------------
# No heap profiling mode: the heap calls are refused, the time call works.
# ---------------------------------------------------------------------------
prof_launch nohp -N2 -p
prof_expect ready
prof "heap off" "heap ELS_ENOTSUP"
prof census "census ELS_ENOTSUP"
prof "time off" "time ok"
prof quit bye
prog_rc=0; wait_pid "$prof_pid" 60 || prog_rc=$?
[ "$prog_rc" -eq 0 ] || fail_showing "$T/nohp.prog.err" "nohp: the program exited with status $prog_rc"
note "nohp: heap calls refused with ELS_ENOTSUP without +RTS -h"

# ---------------------------------------------------------------------------
# Not profiled, heap profile by closure type (-hT needs no -prof): a census
# comes on request (-i100: no periodic census during the test), the heap
# timer calls are accepted, there is no time profiler.
# ---------------------------------------------------------------------------
PROF=$ELS_TOP_BUILDDIR/tests/ghc/out/noprof/prof
STREAM=$T/ht.eventlog
rm -f "$T/p.sock"
prof_launch ht -N2 -hT -i100 -l --eventlog-flush-interval=0.1 "--eventlog-sink=$SPEC"
start_receiver ht "unix:$T/p.sock"
prof_expect ready
prof "time off" "time ELS_ENOTSUP"
prof "heap off" "heap ok"
prof "heap on" "heap ok"
marked ht-census-asked
t_ask=$mark_t
prof census "census ok"
wait_until 60 census_seen || fail "ht: no census by closure type after the request"
grep -Eq '^ *[0-9]+: heap prof sample [0-9]+, residency [0-9]+, ' "$SHOWN" \
    || fail "ht: the census carries no heap samples"
prof quit bye
prog_rc=0; wait_pid "$prof_pid" 60 || prog_rc=$?
recv_rc=0; wait_pid "$rpid" 30 || recv_rc=$?
[ "$prog_rc" -eq 0 ] || fail_showing "$T/ht.prog.err" "ht: the program exited with status $prog_rc"
check_recv ht "$recv_rc"
note "ht: not profiled, -hT: a census by closure type on request; time profiling refused with ELS_ENOTSUP"
exit 0
