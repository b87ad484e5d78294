#!/usr/bin/env bash
# test_fifo_readers.sh: the fifo: sink with the readers people use, on the
# patched RTS (examples/live-service).
#
# a. `ghc-events inc PATH`, a GHC-built reader that opens the FIFO
#    non-blocking, gets the whole stream (it used to read end of file at
#    once, because the sink opened its end only once a reader existed).
# b. Readers come and go while the program runs: a non-blocking reader
#    that leaves early (`ghc-events inc | head`), a blocking one
#    (eventlog-sink recv) killed mid-stream, then another non-blocking one:
#    each stream starts with the header and parses.  A reader that opens
#    the FIFO while another is being served gets none of that one's bytes
#    and, once the other leaves, a stream of its own.
# c. Two programs given the same FIFO: the second is refused with a clear
#    error and the first goes on (they used to write into one pipe and the
#    reader got a malformed stream); after the first is killed with
#    SIGKILL, the FIFO it left is free for the next program.
#
# Skips (77) without the patched RTS, GHC, ghc-events or the receiver.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"

setup_live_service_test

# inc_reader NAME FIFO [HEAD]: `ghc-events inc FIFO` in the background,
# output in $T/NAME.inc (only its first HEAD lines if given); sets rpid.
inc_reader() {
    local name=$1 fifo=$2 head=${3:-}
    if [ -n "$head" ]; then
        { "$GHC_EVENTS" inc "$fifo" 2>"$T/$name.inc.err" | head -n "$head" >"$T/$name.inc"; } &
    else
        "$GHC_EVENTS" inc "$fifo" >"$T/$name.inc" 2>"$T/$name.inc.err" &
    fi
    rpid=$!
    bg_register "$rpid"
}

# inc_user_events NAME PREFIX: user events starting with PREFIX in the
# output of inc_reader NAME.
inc_user_events() {
    count_shown_user_events "$T/$1.inc" "$2"
}

# recv_some NAME FIFO PREFIX: a blocking reader (eventlog-sink recv),
# killed once it has data; its stream must start with the header, parse
# and hold user events starting with PREFIX.
recv_some() {
    local name=$1 fifo=$2 prefix=$3 pid
    "$ELS_SINK_TOOL" recv -o "$T/$name.eventlog" "fifo:$fifo" >/dev/null 2>"$T/$name.recv.err" &
    pid=$!
    bg_register "$pid"
    wait_until 60 stream_has_data "$T/$name.eventlog" 20000 \
        || fail_showing "$T/$name.recv.err" "$name: the receiver got no stream"
    kill "$pid"; wait "$pid" 2>/dev/null || true
    validate_stream "$T/$name.eventlog" "$T/$name.show" "$prefix" \
        || fail "$name: invalid stream: $vs_why"
    [ "$vs_user" -gt 0 ] || fail "$name: no user events"
}

# check_inc NAME: the reader reported no error (it fails on a stream
# that does not start with the header, or on a malformed block).
check_inc() {
    local name=$1
    [ ! -s "$T/$name.inc.err" ] || fail_showing "$T/$name.inc.err" "$name: ghc-events inc reported an error"
}

# ---------------------------------------------------------------------------
# a. A non-blocking reader gets the whole stream.
# ---------------------------------------------------------------------------
f=$T/a.fifo
start_program inc "$LIVE_SERVICE" burst 1000 +RTS -N2 "--eventlog-sink=fifo:$f?wait=30&policy=block" -RTS
wait_for_file "$f" 20 || fail_showing "$T/inc.prog.err" "inc: the FIFO $f was not created"
inc_reader inc "$f"
wait_both "$rpid"
check_program inc "$prog_rc" "emitted 1000 user events"
[ "$recv_rc" -eq 0 ] || fail_showing "$T/inc.inc.err" "inc: ghc-events inc exited with status $recv_rc"
check_inc inc
n=$(inc_user_events inc "live-service burst ")
[ "$n" -eq 1000 ] || fail "inc: ghc-events inc printed $n user events, expected 1000"
note "inc: ghc-events inc (non-blocking) read all 1000 user events"
[ ! -e "$f" ] || fail "inc: the FIFO it created was left behind"

# ---------------------------------------------------------------------------
# b. Readers that come and go.
# ---------------------------------------------------------------------------
f=$T/b.fifo
start_program comego "$LIVE_SERVICE" steady 600 +RTS -N2 "--eventlog-sink=fifo:$f" -RTS
prog=$ppid
wait_for_file "$f" 20 || fail_showing "$T/comego.prog.err" "comego: the FIFO $f was not created"

# A non-blocking reader that leaves after 300 lines.
inc_reader early "$f" 300
rc=0; wait_pid "$rpid" 60 || rc=$?
[ "$rc" -ne 124 ] || fail "early: ghc-events inc | head did not finish"
n=$(inc_user_events early "live-service steady ")
[ "$n" -gt 0 ] || fail "early: no user events in the first 300 lines: $(head -c 300 "$T/early.inc")"
note "early: a non-blocking reader read $n user events, then left"

# A blocking reader, killed once it has data.
recv_some blocking "$f" "live-service steady "
note "blocking: the receiver's stream starts with the header and parses ($vs_user user events)"

# Two readers at once: the second opens the FIFO while the first is
# served, and gets its stream only when the first leaves.
"$ELS_SINK_TOOL" recv -o "$T/first.eventlog" "fifo:$f" >/dev/null 2>"$T/first.recv.err" &
first=$!
bg_register "$first"
wait_until 60 stream_has_data "$T/first.eventlog" 20000 \
    || fail_showing "$T/first.recv.err" "first: the receiver got no stream"
inc_reader second "$f"
second=$rpid
# Wait until the second reader has the FIFO open (a descriptor on it).
has_fifo_open() {
    local l
    for l in /proc/"$1"/fd/*; do
        case "$(readlink "$l" 2>/dev/null)" in "$f"|"$f (deleted)") return 0 ;; esac
    done
    return 1
}
wait_until 30 has_fifo_open "$second" || fail "second: ghc-events inc did not open the FIFO"
kill "$first"; wait "$first" 2>/dev/null || true
validate_stream "$T/first.eventlog" "$T/first.show" "live-service steady " \
    || fail "first: invalid stream: $vs_why"
wait_count 60 "$T/second.inc" 'live-service steady ' 200 \
    || fail_showing "$T/second.inc.err" "second: no stream after the first reader left"
kill -INT "$prog"
prog_rc=0; wait_pid "$prog" 60 || prog_rc=$?
rc=0; wait_pid "$second" 30 || rc=$?
[ "$rc" -eq 0 ] || fail_showing "$T/second.inc.err" "second: ghc-events inc exited with status $rc"
check_inc second
n=$(inc_user_events second "live-service steady ")
d=$(sed -n 's/^ *[0-9]*: \(cap [0-9]*: \)\{0,1\}\(live-service steady .*\)/\2/p' "$T/second.inc" | sort | uniq -d | wc -l)
[ "$d" -eq 0 ] || fail "second: $d user events printed twice"
note "second: waited for the first reader, then read its own stream ($n user events)"

[ ! -e "$f" ] || fail "comego: the FIFO it created was left behind"

# ---------------------------------------------------------------------------
# c. One program per FIFO.
# ---------------------------------------------------------------------------
f=$T/c.fifo
start_program one "$LIVE_SERVICE" steady 600 +RTS "--eventlog-sink=fifo:$f" -RTS
one=$ppid
wait_for_file "$f" 20 || fail_showing "$T/one.prog.err" "one: the FIFO $f was not created"
rc=0
"$LIVE_SERVICE" burst 10 +RTS "--eventlog-sink=fifo:$f" -RTS >"$T/two.prog.out" 2>"$T/two.prog.err" </dev/null || rc=$?
[ "$rc" -eq 1 ] || fail_showing "$T/two.prog.err" "two: exit status $rc, expected 1 (refused)"
head -n 1 "$T/two.prog.err" | grep -qF "spec \"fifo:$f\": another process is already writing to this FIFO" \
    || fail_showing "$T/two.prog.err" "two: not refused with a clear error"
! grep -q 'emitted' "$T/two.prog.out" || fail "two: the second program ran anyway"
kill -0 "$one" 2>/dev/null || fail_showing "$T/one.prog.err" "one: the first program died"
note "two: refused: $(head -n 1 "$T/two.prog.err")"

# The first program's stream is intact.
recv_some one "$f" "live-service steady "

# Killed without a chance to clean up: the FIFO stays, its lock does not.
kill -KILL "$one"; wait "$one" 2>/dev/null || true
[ -p "$f" ] || fail "one: expected the killed program's FIFO to remain"
start_program three "$LIVE_SERVICE" burst 100 +RTS "--eventlog-sink=fifo:$f?wait=30&policy=block" -RTS
"$ELS_SINK_TOOL" recv -o "$T/three.eventlog" "fifo:$f" >/dev/null 2>"$T/three.recv.err" &
rpid=$!
bg_register "$rpid"
wait_both "$rpid"
check_program three "$prog_rc" "emitted 100 user events"
check_recv three "$recv_rc"
validate_stream "$T/three.eventlog" "$T/three.show" "live-service burst " \
    || fail "three: invalid stream: $vs_why"
[ "$vs_user" -eq 100 ] || fail "three: $vs_user user events, expected 100"
note "three: the FIFO a killed program left behind serves the next program (100 user events)"
