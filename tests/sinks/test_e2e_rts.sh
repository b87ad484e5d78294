#!/usr/bin/env bash
# test_e2e_rts.sh: end to end on the patched GHC RTS (rts-patches/).
#
# examples/live-service, compiled with the patched RTS's ghc-eventlog-sink
# and linked with the built shared library (no C main), chooses its sink
# with +RTS --eventlog-sink=SPEC.  Checked here: every built-in sink (unix,
# tcp, fifo, file, unix-connect and tcp-connect to `recv --listen`) delivers
# a complete stream that ghc-events parses, with exactly the user events
# emitted, as many as a plain `+RTS -l` file of the same program holds
# (on unix:, with the RTS's full buffers handed over without a copy); a
# consumer waiting from the start (wait=) gets the start-up events (capsets,
# caps, RTS identifier, program arguments, pid); a late joiner gets a stream
# that parses, with no more user events than were emitted and an in-band
# note for what it missed; a consumer killed mid-stream does not stop the
# program from exiting normally; --eventlog-flush-interval delivers a quiet
# program's event while it runs, and with =0 the event waits until
# exit; stopping
# and starting the eventlog at runtime (els_ghc_stop/els_ghc_start) under
# load gives one complete stream per start; and the one-line refusals (an
# unregistered scheme, a spec without a scheme, a program not linked with
# the library, -rtsopts=some, a bad or unsupported flush interval, a port
# in use).  Drop accounting and several consumers are the unit tests' job;
# the stock-RTS route is test_e2e_stock.sh's.
#
# Skips (77) without the patched RTS ($ELS_PATCHED_RTS_DIR/bin/
# ghc-eventlog-sink), GHC, ghc-events or the GHC glue of the library.
# What must happen while a program runs is done with
# tests/programs/Controlled.hs, which runs until the test tells it to stop
# and says when it is ready; waits have generous deadlines (hang guards);
# nothing asserts on time.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"

setup_live_service_test

N=100000
ghc_version=$("$ELS_PATCHED_GHC" --numeric-version) || fail "$ELS_PATCHED_GHC --numeric-version failed"

# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

# run_bg NAME ARGS...: run live-service ARGS in the background, output in
# $T/NAME.prog.{out,err}; sets ppid and records the command line (for the
# program-arguments event) in prog_args.
run_bg() {
    local name=$1
    shift
    start_program "$name" "$LIVE_SERVICE" "$@"
}

# show NAME FILE: ghc-events show FILE into $T/NAME.show, or fail.
show() {
    [ -s "$2" ] || fail "$1: no eventlog received ($2 is missing or empty)"
    show_events "$2" "$T/$1.show" || fail "$1: ghc-events cannot parse $2"
}

# check_burst NAME FILE: FILE parses and holds exactly $N burst events,
# as many as the plain -l file.
check_burst() {
    local name=$1 file=$2 count
    show "$name" "$file"
    count=$(count_shown_user_events "$T/$name.show" "live-service burst ")
    note "$name: $count user events, $(wc -c <"$file") bytes"
    [ "$count" -eq "$N" ] \
        || fail "$name: $count user events in the stream, expected $N (plain -l file: ${plain_count:-?})"
    [ -z "${plain_count:-}" ] || [ "$count" -eq "$plain_count" ] \
        || fail "$name: $count user events, the plain -l file holds $plain_count"
}

# check_startup NAME PID: the stream shown in $T/NAME.show starts the way
# a -l file does: capsets, capabilities, RTS identifier, the program's
# arguments ($prog_args), pid PID, wall clock, heap parameters.  The texts
# are ghc-events 0.17's.
check_startup() {
    local name=$1 pid=$2 shown=$T/$1.show want a args=
    for a in "${prog_args[@]}"; do
        args="$args${args:+,}\"$a\""
    done
    for want in \
        "created capset 0 of type CapsetOsProcess" \
        "created capset 1 of type CapsetClockDomain" \
        "created cap 0" \
        "created cap 1" \
        "assigned cap 0 to capset 0" \
        "assigned cap 1 to capset 0" \
        "capset 0: RTS version \"GHC-$ghc_version rts_thr_l\"" \
        "capset 0: args: [$args]" \
        "capset 0: pid $pid"; do
        has_shown_event "$shown" "$want" \
            || fail "$name: no start-up event '$want' in the stream (see $(grep -m 3 'capset 0: \(args\|RTS\)' "$shown" | tr '\n' ' '))"
    done
    grep -Eq '^ *[0-9]+: capset 1: wall clock time [0-9]+s [0-9]+ns' "$shown" \
        || fail "$name: no wall clock time event in the stream"
    grep -Eq '^ *[0-9]+: heap stats for heap capset 0: ' "$shown" \
        || fail "$name: no heap parameters event in the stream"
}

# sink_opts: every case-a sink waits for its consumer and never drops.
sink_opts='policy=block&wait=60'

# burst_with NAME SPEC RECV-ARGS...: start `recv RECV-ARGS` (unless
# RECV-ARGS is empty), run `burst N` with --eventlog-sink=SPEC, wait for
# both (prog_rc, recv_rc).
burst_with() {
    local name=$1 spec=$2 rpid=
    shift 2
    if [ "$#" -gt 0 ]; then
        "$ELS_SINK_TOOL" recv "$@" >"$T/$name.recv.out" 2>"$T/$name.recv.err" &
        rpid=$!
        bg_register "$rpid"
    fi
    run_bg "$name" burst "$N" +RTS -N2 "--eventlog-sink=$spec" -RTS
    prog_rc=0; wait_pid "$ppid" 60 || prog_rc=$?
    recv_rc=0
    if [ -n "$rpid" ]; then wait_pid "$rpid" 30 || recv_rc=$?; fi
}

# ---------------------------------------------------------------------------
# The reference: the same program writing its own file with plain -l.
# ---------------------------------------------------------------------------
(cd "$T" && "$LIVE_SERVICE" burst "$N" +RTS -N2 -l "-ol$T/plain.eventlog" -RTS \
    >"$T/plain.prog.out" 2>"$T/plain.prog.err")
check_program plain $? "emitted $N user events"
check_burst plain "$T/plain.eventlog"
plain_count=$N
# The start-up checks hold for the RTS's own file first; a failure here
# means their texts do not match this ghc-events, not a sink problem.
prog_args=("$LIVE_SERVICE" burst "$N" +RTS -N2 -l "-ol$T/plain.eventlog" -RTS)
grep -Eq '^ *[0-9]+: capset 0: pid [0-9]+$' "$T/plain.show" || fail "plain: no pid event in the -l file"
plain_pid=$(sed -n 's/^ *[0-9]*: capset 0: pid \([0-9]*\)$/\1/p' "$T/plain.show" | head -n 1)
check_startup plain "$plain_pid"

# ---------------------------------------------------------------------------
# a + b. Every built-in sink: a complete stream with exactly N user events
# and, since each consumer waits from the start (wait=), the start-up
# events.
# ---------------------------------------------------------------------------

# unix: the receiver retries until the program has made the socket.
# With the library's debug lines, which say how many of the units the
# RTS handed over whole (its full buffers: no copy, Note [Units handed
# over] in lib/writer/producer.c).
EVENTLOG_SINK_DEBUG=1 burst_with unix "unix:$T/s.sock?$sink_opts" --retry 60 -o "$T/unix.eventlog" "unix:$T/s.sock"
check_program unix "$prog_rc" "emitted $N user events"
check_recv unix "$recv_rc"
check_burst unix "$T/unix.eventlog"
handed=$(sed -n 's/.*: [0-9]* units accepted, \([0-9]*\) of them handed over without a copy$/\1/p' "$T/unix.prog.err")
[ "${handed:-0}" -gt 0 ] \
    || fail_showing "$T/unix.prog.err" "unix: the RTS handed over none of its full buffers (${handed:-no report})"
note "unix: $handed units handed over without a copy"
check_startup unix "$ppid"
[ ! -e "$T/s.sock" ] || fail "unix: socket file $T/s.sock left behind after exit"

# tcp, port 0: the receiver learns the port from the sink's
# "listening on tcp:127.0.0.1:PORT" line on the program's stderr.
run_bg tcp burst "$N" +RTS -N2 "--eventlog-sink=tcp:127.0.0.1:0?$sink_opts" -RTS
program_tcp_endpoint tcp
case "$endpoint" in
    tcp:127.0.0.1:[1-9]*) ;;
    *) fail "tcp: the logged endpoint '$endpoint' is not tcp:127.0.0.1:PORT" ;;
esac
start_receiver tcp "$endpoint"
tcp_pid=$ppid
wait_both "$rpid"
check_program tcp "$prog_rc" "emitted $N user events"
check_recv tcp "$recv_rc"
check_burst tcp "$T/tcp.eventlog"
check_startup tcp "$tcp_pid"

# fifo: the sink creates the FIFO; the reader retries until it exists.
burst_with fifo "fifo:$T/f.fifo?$sink_opts" --retry 60 -o "$T/fifo.eventlog" "fifo:$T/f.fifo"
check_program fifo "$prog_rc" "emitted $N user events"
check_recv fifo "$recv_rc"
check_burst fifo "$T/fifo.eventlog"
check_startup fifo "$ppid"

# file: no consumer to wait for.
burst_with file "file:$T/file.eventlog?policy=block"
check_program file "$prog_rc" "emitted $N user events"
check_burst file "$T/file.eventlog"
check_startup file "$ppid"

# unix-connect, tcp-connect: the collector (recv --listen) listens, the
# program connects out to it.
start_collector unixc "unix:$T/c.sock"
[ "$collector_endpoint" = "unix:$T/c.sock" ] \
    || fail "unixc: collector listening on '$collector_endpoint', expected unix:$T/c.sock"
burst_with unixc "unix-connect:$T/c.sock?$sink_opts"
recv_rc=0; wait_pid "$cpid" 30 || recv_rc=$?
check_program unixc "$prog_rc" "emitted $N user events"
check_recv unixc "$recv_rc"
check_burst unixc "$T/unixc.eventlog"
check_startup unixc "$ppid"

start_collector tcpc tcp:127.0.0.1:0
case "$collector_endpoint" in
    tcp:127.0.0.1:[1-9]*) ;;
    *) fail "tcpc: collector endpoint '$collector_endpoint' is not tcp:127.0.0.1:PORT" ;;
esac
note "tcpc: collector on $collector_endpoint"
burst_with tcpc "tcp-connect:127.0.0.1:${collector_endpoint##*:}?$sink_opts"
recv_rc=0; wait_pid "$cpid" 30 || recv_rc=$?
check_program tcpc "$prog_rc" "emitted $N user events"
check_recv tcpc "$recv_rc"
check_burst tcpc "$T/tcpc.eventlog"
check_startup tcpc "$ppid"

# ---------------------------------------------------------------------------
# c. A late joiner: no wait=, buffer=4M; the receiver connects once the
# program (Controlled.hs) has emitted 400,000 user events, more than the
# queue holds, and the program stops once the receiver has the header.
# Its stream must be complete and parse, hold no more user events than
# were emitted and fewer, with the note that it joined mid-run.
# ---------------------------------------------------------------------------
build_controlled patched
start_controlled late "$CONTROLLED" run 400000 +RTS -N2 "--eventlog-sink=unix:$T/late.sock?buffer=4M" -RTS
join_late late "$T/late.sock"
check_program late "$prog_rc" "emitted [0-9]* user events"
check_recv late "$recv_rc"
check_late_joiner late "$T/late.eventlog" must-miss

# ---------------------------------------------------------------------------
# d. The consumer is killed (SIGKILL) while the program runs (it runs
# until told to stop, after the kill): the program then ends normally
# (exit 0), under the default policy and under policy=block.
# ---------------------------------------------------------------------------
for policy in drop block; do
    name=killed-$policy
    start_receiver "$name" "unix:$T/k.sock"
    start_controlled "$name" "$CONTROLLED" run 0 +RTS -N2 \
        "--eventlog-sink=unix:$T/k.sock?wait=60&policy=$policy" --eventlog-flush-interval=0.1 -RTS
    # The program is past start-up once its consumer has the header; the
    # flush interval makes blocks flow, so the kill lands mid-stream.
    wait_until 60 stream_has_data "$T/$name.eventlog" \
        || fail_showing "$T/$name.recv.err" "$name: the receiver got no header and block from the program"
    kill -0 "$ppid" 2>/dev/null || fail_showing "$T/$name.prog.err" "$name: the program ended before it was told to"
    kill -9 "$rpid" 2>/dev/null
    { wait "$rpid"; } 2>/dev/null
    stop_controlled
    prog_rc=0; wait_pid "$ppid" 60 || prog_rc=$?
    [ "$prog_rc" -ne 124 ] || fail "$name: the program did not exit within 60 s after its consumer was killed"
    check_program "$name" "$prog_rc" "emitted [0-9]* user events"
    note "$name: $(cat "$T/$name.prog.out")"
done

# ---------------------------------------------------------------------------
# e. --eventlog-flush-interval: `controlled idle` posts "idle-marker",
# prints "posted" and then does nothing until told to stop.  With the flag
# the marker reaches the consumer while the program still waits; with
# =0 the marker stays in its capability's buffer until exit: it is not
# there while the program waits, and it is there once it has ended.
# ---------------------------------------------------------------------------

# marker_in NAME: what the receiver has written so far (a prefix of the
# stream, which ghc-events reads) holds the marker.
marker_in() {
    cp "$T/$1.eventlog" "$T/$1.part" 2>/dev/null || return 1
    show_events "$T/$1.part" "$T/$1.part.show" 2>/dev/null || return 1
    has_shown_event "$T/$1.part.show" idle-marker
}

start_receiver flush "unix:$T/fl.sock"
start_controlled flush "$CONTROLLED" idle +RTS -N2 "--eventlog-sink=unix:$T/fl.sock?wait=60" \
    --eventlog-flush-interval=0.2 -RTS
wait_output flush posted
wait_until 60 marker_in flush \
    || fail "flush: 'idle-marker' did not arrive while the program waited (--eventlog-flush-interval=0.2)"
kill -0 "$ppid" 2>/dev/null || fail_showing "$T/flush.prog.err" "flush: the program ended before it was told to"
note "flush: 'idle-marker' arrived while the program ran ($(wc -c <"$T/flush.part") bytes so far)"
stop_controlled
wait_both "$rpid"
check_program flush "$prog_rc" "idle done"
check_recv flush "$recv_rc"

# With --eventlog-flush-interval=0 (a socket sink would otherwise flush
# every second by default: test_live_default.sh): after the marker (on capability 0) the program fills
# whole buffers of capability 1 (`flood`), which are written and arrive;
# capability 0's buffer is not full, so the marker must still be missing
# from everything that arrived by then.  No clock is involved: the check
# is made once the other capability's blocks are there.
start_receiver noflush "unix:$T/nf.sock"
start_controlled noflush "$CONTROLLED" idle +RTS -N2 "--eventlog-sink=unix:$T/nf.sock?wait=60" \
    --eventlog-flush-interval=0 -RTS
wait_output noflush posted
tell_controlled flood
wait_output noflush flooded
wait_until 60 stream_has_data "$T/noflush.eventlog" $((2 * 1024 * 1024)) \
    || fail_showing "$T/noflush.recv.err" "noflush: capability 1's full buffers did not arrive"
kill -0 "$ppid" 2>/dev/null || fail_showing "$T/noflush.prog.err" "noflush: the program ended before it was told to"
cp "$T/noflush.eventlog" "$T/noflush.part"
show noflush.part "$T/noflush.part"
! has_shown_event "$T/noflush.part.show" idle-marker \
    || fail "noflush: 'idle-marker' arrived while the program waited, with --eventlog-flush-interval=0"
has_shown_event "$T/noflush.part.show" "controlled flood 1" \
    || fail "noflush: what arrived does not start capability 1's flood"
stop_controlled
wait_both "$rpid"
check_program noflush "$prog_rc" "idle done"
check_recv noflush "$recv_rc"
show noflush "$T/noflush.eventlog"
has_shown_event "$T/noflush.show" idle-marker \
    || fail "noflush: 'idle-marker' is not in the complete stream either"

# ---------------------------------------------------------------------------
# f. Restart at runtime: `restart 5 M` stops and starts the eventlog 5
# times while two workers emit events.  Each start re-creates the socket
# and waits (wait=60) for a consumer, so 6 receivers in a row must each get
# a complete stream.  Each period lasts until the workers have emitted M
# more events after the start, and only the chunk each worker was in when
# the eventlog started can straddle it, so every stream holds at least
# M - 200 of them.  Three rounds.
# ---------------------------------------------------------------------------
K=5
M=20000

# recv_streams ROUND: receive K+1 streams one after another.  Each
# receiver waits (--retry) for the next stream's socket: a listening sink
# stops listening as soon as its stream starts to end, so a receiver can
# only ever join a stream from its beginning.
recv_streams() {
    local round=$1 i rc r=
    trap '[ -z "$r" ] || kill "$r" 2>/dev/null; exit 143' TERM
    for i in $(seq 0 "$K"); do
        "$ELS_SINK_TOOL" recv --retry 60 -o "$T/r$round.s$i.eventlog" "unix:$T/r.sock" \
            >/dev/null 2>>"$T/r$round.s$i.recv.err" &
        r=$!
        rc=0; wait "$r" || rc=$?
        r=
        echo "$rc" >"$T/r$round.s$i.rc"
    done
}

for round in 1 2 3; do
    recv_streams "$round" &
    lpid=$!
    bg_register "$lpid"
    run_bg "restart$round" restart "$K" "$M" +RTS -N2 "--eventlog-sink=unix:$T/r.sock?wait=60&policy=block" -RTS
    prog_rc=0; wait_pid "$ppid" 90 || prog_rc=$?
    loop_rc=0; wait_pid "$lpid" 30 || loop_rc=$?
    check_program "restart$round" "$prog_rc" "restarted $K times"
    [ "$loop_rc" -eq 0 ] || fail "restart$round: the receivers did not finish (status $loop_rc)"
    counts=
    for i in $(seq 0 "$K"); do
        name=restart$round.s$i
        [ -f "$T/r$round.s$i.rc" ] || fail "$name: no receiver ran for stream $i"
        rc=$(cat "$T/r$round.s$i.rc")
        if [ "$rc" -ne 0 ]; then
            sed 's/^/#   /' "$T/r$round.s$i.recv.err" >&2
            fail "$name: eventlog-sink recv exited with status $rc (expected 0: complete stream $i of $((K + 1)))"
        fi
        show "$name" "$T/r$round.s$i.eventlog"
        count=$(count_shown_user_events "$T/$name.show" "live-service restart ")
        [ "$count" -ge $((M - 200)) ] \
            || fail "$name: $count user events in stream $i, expected at least $((M - 200))"
        counts="$counts $count"
    done
    note "restart$round: $((K + 1)) complete streams, user events:$counts"
done
[ ! -e "$T/r.sock" ] || fail "restart: socket file $T/r.sock left behind after exit"

# ---------------------------------------------------------------------------
# g. Refusals: one line on stderr, non-zero exit, the program does not run.
# ---------------------------------------------------------------------------

# refused NAME PATTERN CMD...: CMD exits non-zero without running (no
# "emitted"/"tiny ran" on stdout) and its stderr has exactly one line,
# matching the extended regex PATTERN.
refused() {
    local name=$1 pattern=$2 rc=0 lines
    shift 2
    "$@" >"$T/$name.out" 2>"$T/$name.err" </dev/null || rc=$?
    [ "$rc" -ne 0 ] || fail "$name: exited 0, expected a refusal"
    ! grep -q 'emitted\|tiny ran' "$T/$name.out" || fail "$name: the program ran anyway"
    lines=$(wc -l <"$T/$name.err")
    [ "$lines" -eq 1 ] || fail "$name: $lines lines on stderr, expected 1: $(head -c 600 "$T/$name.err")"
    grep -Eq -- "$pattern" "$T/$name.err" \
        || fail "$name: the error does not match /$pattern/: $(cat "$T/$name.err")"
    note "$name: exit $rc: $(cat "$T/$name.err")"
}

refused bad-scheme "scheme 'tc'.*-leventlog-sink" \
    "$LIVE_SERVICE" burst 10 +RTS --eventlog-sink=tc:x -RTS
refused no-colon "--eventlog-sink=nocolon: .*SCHEME:ADDRESS" \
    "$LIVE_SERVICE" burst 10 +RTS --eventlog-sink=nocolon -RTS

# A port another process listens on: the sink cannot open, exit 1.
start_collector holder tcp:127.0.0.1:0
held=${collector_endpoint##*:}
rc=0
"$LIVE_SERVICE" burst 10 +RTS "--eventlog-sink=tcp:127.0.0.1:$held" -RTS \
    >"$T/in-use.out" 2>"$T/in-use.err" </dev/null || rc=$?
kill "$cpid" 2>/dev/null
[ "$rc" -eq 1 ] || fail "in-use: exit status $rc with port $held held by another listener, expected 1: $(cat "$T/in-use.err")"
[ "$(wc -l <"$T/in-use.err")" -eq 1 ] || fail "in-use: expected one line on stderr: $(cat "$T/in-use.err")"
grep -qi 'address.*in use' "$T/in-use.err" || fail "in-use: the error does not say the address is in use: $(cat "$T/in-use.err")"
! grep -q emitted "$T/in-use.out" || fail "in-use: the program ran anyway"
note "in-use: exit 1: $(cat "$T/in-use.err")"

# A bad flush interval: one line naming the value, then the RTS's usage
# text (as for any bad +RTS option value).
rc=0
"$LIVE_SERVICE" burst 10 +RTS -N2 --eventlog-sink=file:"$T/bad.eventlog" \
    --eventlog-flush-interval=abc -RTS >"$T/bad-interval.out" 2>"$T/bad-interval.err" </dev/null || rc=$?
[ "$rc" -ne 0 ] || fail "bad-interval: --eventlog-flush-interval=abc accepted"
grep -q "eventlog-flush-interval: 'abc'" "$T/bad-interval.err" \
    || fail "bad-interval: no line naming 'abc': $(head -n 3 "$T/bad-interval.err")"
! grep -q emitted "$T/bad-interval.out" || fail "bad-interval: the program ran anyway"
note "bad-interval: exit $rc: $(head -n 1 "$T/bad-interval.err")"

# Small programs: one without the library, one with -rtsopts=some, one on
# the non-threaded RTS; cached next to live-service (rebuilt when this
# script, the library or the patched driver is newer).
tiny_dir=$ELS_TOP_BUILDDIR/examples/live-service/out/tiny
mkdir -p "$tiny_dir"
tiny_fresh() {
    local p=$tiny_dir/$1 dep
    [ -x "$p" ] || return 1
    for dep in "$0" "$ELS_SHLIB" "$ELS_PATCHED_GHC" "$ELS_PATCHED_RTS_DIR"/lib/rts/libHSrts*.a; do
        [ ! -e "$dep" ] || [ "$p" -nt "$dep" ] || return 1
    done
}
build_tiny() {
    local name=$1
    shift
    tiny_fresh "$name" && return 0
    printf '%s\n' 'import Debug.Trace (traceEventIO)' 'main :: IO ()' \
        'main = traceEventIO "tiny" >> putStrLn "tiny ran"' >"$tiny_dir/Tiny.hs"
    (cd "$tiny_dir" && "$@" -v0 -outputdir "obj-$name" Tiny.hs -o "$name.new" \
        && mv -f "$name.new" "$name") >"$T/tiny-$name.log" 2>&1 || {
        sed 's/^/#   /' "$T/tiny-$name.log" >&2
        fail "could not build the $name test program"
    }
}
(
    if command -v flock >/dev/null 2>&1; then exec 9>"$tiny_dir/.lock"; flock 9; fi
    build_tiny nolib "$ELS_PATCHED_GHC" -threaded -eventlog -rtsopts
    build_tiny some patched_ghc_lib -threaded -eventlog -rtsopts=some
    build_tiny nonthreaded patched_ghc_lib -eventlog -rtsopts
) || exit 1

refused no-library "--eventlog-sink=unix:$T/x.sock: no eventlog sink is registered for scheme 'unix'; link the program with -leventlog-sink" \
    "$tiny_dir/nolib" +RTS "--eventlog-sink=unix:$T/x.sock" -RTS
[ ! -e "$T/x.sock" ] || fail "no-library: a socket was created"
refused rtsopts-some "RTS options are disabled.*-rtsopts" \
    "$tiny_dir/some" +RTS "--eventlog-sink=unix:$T/x.sock" -RTS
[ ! -e "$T/x.sock" ] || fail "rtsopts-some: a socket was created"
# The same program with no option runs (the refusal is the option's).
"$tiny_dir/some" >"$T/some-plain.out" 2>&1 </dev/null || fail "rtsopts-some: the program fails even without options: $(cat "$T/some-plain.out")"

rc=0
"$tiny_dir/nonthreaded" +RTS "--eventlog-sink=file:$T/nt.eventlog" --eventlog-flush-interval=1 -RTS \
    >"$T/nonthreaded.out" 2>"$T/nonthreaded.err" </dev/null || rc=$?
[ "$rc" -ne 0 ] || fail "nonthreaded: --eventlog-flush-interval accepted by the non-threaded RTS"
grep -q 'eventlog-flush-interval needs the threaded RTS' "$T/nonthreaded.err" \
    || fail "nonthreaded: no line saying the flag needs the threaded RTS: $(head -n 3 "$T/nonthreaded.err")"
! grep -q 'tiny ran' "$T/nonthreaded.out" || fail "nonthreaded: the program ran anyway"
# ... and streams without it.
"$tiny_dir/nonthreaded" +RTS "--eventlog-sink=file:$T/nt.eventlog" -RTS \
    >"$T/nt.out" 2>"$T/nt.err" </dev/null || fail "nonthreaded: the file sink failed: $(cat "$T/nt.err")"
show nt "$T/nt.eventlog"
has_shown_event "$T/nt.show" tiny || fail "nonthreaded: the user event is not in the file sink's stream"

exit 0
