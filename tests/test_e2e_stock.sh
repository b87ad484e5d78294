#!/usr/bin/env bash
# test_e2e_stock.sh: end to end on the stock GHC RTS (no RTS patches).
#
# examples/hello-stream, linked against the built shared library, streams
# its eventlog through EVENTLOG_SINK (set in RtsConfig.eventlog_writer by
# its C main) to the built receiver over each kind of sink: unix, tcp (a
# fixed free port, and port 0 learnt from the "listening on" log line), fifo,
# to a file, and to a collector (`recv --listen`) through unix-connect and
# tcp-connect (port 0, learnt from the receiver's "listening on" line).
# Every stream must parse with the independent ghc-events reader and hold
# exactly as many user events as the program emitted, the same number a
# plain `+RTS -l` file of the stock RTS holds.  Also: a receiver that joins
# a running program without wait= still gets a stream ghc-events parses; a
# program whose collector starts a second after it waits for it (wait=)
# and loses nothing; a bad spec stops the program with one line naming the
# scheme.  This test does not look at drop accounting or several consumers
# (the unit tests do) and needs no patched RTS.
#
# Skips (77) without GHC, ghc-events or the GHC glue of the library.
set -u -o pipefail

. "$(dirname "$0")/lib.sh"

require_tool
require_ghc
make_tmpdir
build_example
note "program: $HELLO_STREAM"

N=100000
T=$ELS_TMP

# check_program NAME RC: the program's exit status and stdout line.
check_program() {
    local name=$1 rc=$2
    if [ "$rc" -ne 0 ]; then
        sed 's/^/#   /' "$T/$name.prog.err" >&2
        fail "$name: hello-stream exited with status $rc (expected 0)"
    fi
    grep -qx "emitted $N user events" "$T/$name.prog.out" \
        || fail "$name: hello-stream stdout lacks 'emitted $N user events': $(head -c 200 "$T/$name.prog.out")"
}

# check_stream NAME FILE: FILE parses and holds exactly $N user events.
check_stream() {
    local name=$1 file=$2 count
    [ -s "$file" ] || fail "$name: no eventlog received ($file is missing or empty)"
    count=$(count_user_events "$file") || fail "$name: ghc-events cannot parse $file"
    note "$name: $count user events, $(wc -c <"$file") bytes"
    [ "$count" -eq "$N" ] \
        || fail "$name: $count user events in the stream, expected $N (stock file: $stock_count)"
}

# stream NAME PROGSPEC RECVSPEC: run the receiver (retrying while the
# program sets up its endpoint) and the program; both must exit 0.  Sets
# prog_rc and recv_rc, leaves the stream in $T/NAME.eventlog.
stream() {
    local name=$1 progspec=$2 recvspec=$3 ppid rpid
    "$ELS_SINK_TOOL" recv --retry 10 -o "$T/$name.eventlog" "$recvspec" \
        >"$T/$name.recv.out" 2>"$T/$name.recv.err" &
    rpid=$!
    bg_register "$rpid"
    EVENTLOG_SINK=$progspec "$HELLO_STREAM" "$N" +RTS -l -N2 -RTS \
        >"$T/$name.prog.out" 2>"$T/$name.prog.err" &
    ppid=$!
    bg_register "$ppid"
    prog_rc=0; wait_pid "$ppid" 60 || prog_rc=$?
    recv_rc=0; wait_pid "$rpid" 30 || recv_rc=$?
}

check_recv() {
    local name=$1
    if [ "$recv_rc" -ne 0 ]; then
        sed 's/^/#   /' "$T/$name.recv.err" >&2
        fail "$name: eventlog-sink recv exited with status $recv_rc (expected 0: complete stream)"
    fi
}

# ---------------------------------------------------------------------------
# The reference: the stock RTS file writer.
# ---------------------------------------------------------------------------
(cd "$T" && env -u EVENTLOG_SINK "$HELLO_STREAM" "$N" +RTS -l -N2 "-ol$T/stock.eventlog" -RTS \
    >"$T/stock.prog.out" 2>"$T/stock.prog.err")
check_program stock $?
stock_count=$(count_user_events "$T/stock.eventlog") || fail "stock: ghc-events cannot parse the RTS's own file"
note "stock: $stock_count user events"
[ "$stock_count" -eq "$N" ] || fail "stock: $stock_count user events, expected $N"

# ---------------------------------------------------------------------------
# unix, fifo: the program waits (wait=10) for the receiver and blocks
# rather than drop (policy=block), so nothing may be lost.
# ---------------------------------------------------------------------------
stream unix "unix:$T/s.sock?policy=block&wait=10" "unix:$T/s.sock"
check_program unix "$prog_rc"
check_recv unix
check_stream unix "$T/unix.eventlog"
[ ! -e "$T/s.sock" ] || fail "unix: socket file $T/s.sock left behind after exit"

stream fifo "fifo:$T/f.fifo?policy=block&wait=10" "fifo:$T/f.fifo"
check_program fifo "$prog_rc"
check_recv fifo
check_stream fifo "$T/fifo.eventlog"

# ---------------------------------------------------------------------------
# tcp: a port free right now; if another process takes it before the
# program binds, the program fails with "in use" and we try another.
# ---------------------------------------------------------------------------
for attempt in 1 2 3; do
    port=$(free_tcp_port) || fail "tcp: found no free port"
    note "tcp: port $port (attempt $attempt)"
    stream tcp "tcp:127.0.0.1:$port?policy=block&wait=10" "tcp:127.0.0.1:$port"
    if [ "$prog_rc" -ne 0 ] && grep -qi "in use" "$T/tcp.prog.err"; then
        continue
    fi
    break
done
check_program tcp "$prog_rc"
check_recv tcp
check_stream tcp "$T/tcp.eventlog"

# tcp port 0: the kernel picks the port; the receiver learns it from the
# sink's "listening on tcp:HOST:PORT" line on the program's stderr.
EVENTLOG_SINK="tcp:127.0.0.1:0?policy=block&wait=10" "$HELLO_STREAM" "$N" +RTS -l -N2 -RTS \
    >"$T/tcp0.prog.out" 2>"$T/tcp0.prog.err" &
ppid=$!
bg_register "$ppid"
wait_until 10 grep -q 'listening on tcp:' "$T/tcp0.prog.err" || {
    sed 's/^/#   /' "$T/tcp0.prog.err" >&2
    fail "tcp0: no 'listening on tcp:HOST:PORT' line on the program's stderr"
}
endpoint=$(sed -n 's/.*listening on \(tcp:[^ ]*\).*/\1/p' "$T/tcp0.prog.err" | head -n 1)
note "tcp0: $endpoint"
case "$endpoint" in
    tcp:127.0.0.1:0 | *:) fail "tcp0: the logged endpoint '$endpoint' has no real port" ;;
esac
"$ELS_SINK_TOOL" recv --retry 10 -o "$T/tcp0.eventlog" "$endpoint" \
    >"$T/tcp0.recv.out" 2>"$T/tcp0.recv.err" &
rpid=$!
bg_register "$rpid"
prog_rc=0; wait_pid "$ppid" 60 || prog_rc=$?
recv_rc=0; wait_pid "$rpid" 30 || recv_rc=$?
check_program tcp0 "$prog_rc"
check_recv tcp0
check_stream tcp0 "$T/tcp0.eventlog"

# ---------------------------------------------------------------------------
# unix-connect, tcp-connect: the receiver listens (recv --listen) and the
# program connects out to it.  wait=10 holds the program's start-up until
# the connection is made and policy=block keeps it from dropping, so the
# count must be exact.
# ---------------------------------------------------------------------------

# start_collector NAME RECVSPEC: start `recv --listen` on RECVSPEC, the
# stream going to $T/NAME.eventlog; sets rpid.
start_collector() {
    local name=$1 spec=$2
    : >"$T/$name.recv.err"
    "$ELS_SINK_TOOL" recv --listen --timeout 30 -o "$T/$name.eventlog" "$spec" \
        >"$T/$name.recv.out" 2>"$T/$name.recv.err" &
    rpid=$!
    bg_register "$rpid"
}

collector_listening() {
    grep -q '^eventlog-sink recv: listening on ' "$T/$1.recv.err" ||
        ! kill -0 "$2" 2>/dev/null
}

# collector_endpoint NAME: wait for the collector's "listening on" line;
# print the endpoint it names (unix:PATH or tcp:HOST:PORT).
collector_endpoint() {
    local name=$1 endpoint
    wait_until 10 collector_listening "$name" "$rpid" || true
    endpoint=$(sed -n 's/^eventlog-sink recv: listening on //p' "$T/$name.recv.err" | head -n 1)
    if [ -z "$endpoint" ]; then
        sed 's/^/#   /' "$T/$name.recv.err" >&2
        fail "$name: no 'listening on' line from eventlog-sink recv --listen"
    fi
    echo "$endpoint"
}

# run_program NAME SPEC: run the program in the background with
# EVENTLOG_SINK=SPEC; sets ppid.
run_program() {
    EVENTLOG_SINK=$2 "$HELLO_STREAM" "$N" +RTS -l -N2 -RTS \
        >"$T/$1.prog.out" 2>"$T/$1.prog.err" &
    ppid=$!
    bg_register "$ppid"
}

# finish NAME: wait for both, then check both and the stream.
finish() {
    prog_rc=0; wait_pid "$ppid" 60 || prog_rc=$?
    recv_rc=0; wait_pid "$rpid" 30 || recv_rc=$?
    check_program "$1" "$prog_rc"
    check_recv "$1"
    check_stream "$1" "$T/$1.eventlog"
}

start_collector tcpc tcp:127.0.0.1:0
endpoint=$(collector_endpoint tcpc) || exit 1
note "tcpc: collector on $endpoint"
case "$endpoint" in
    tcp:127.0.0.1:0 | tcp:127.0.0.1:[1-9]*[!0-9]* | tcp:127.0.0.1:)
        fail "tcpc: '$endpoint' has no real port" ;;
    tcp:127.0.0.1:[1-9]*) ;;
    *) fail "tcpc: '$endpoint' is not tcp:127.0.0.1:PORT" ;;
esac
run_program tcpc "tcp-connect:127.0.0.1:${endpoint##*:}?policy=block&wait=10"
finish tcpc

start_collector unixc "unix:$T/c.sock"
endpoint=$(collector_endpoint unixc) || exit 1
[ "$endpoint" = "unix:$T/c.sock" ] || fail "unixc: listening on '$endpoint', expected unix:$T/c.sock"
run_program unixc "unix-connect:$T/c.sock?policy=block&wait=10"
finish unixc
[ ! -e "$T/c.sock" ] || fail "unixc: the collector left $T/c.sock behind"

# The collector comes a second after the program: start-up waits (wait=10)
# while the sink redials, and nothing is lost once it connects.
run_program unixlate "unix-connect:$T/late-c.sock?policy=block&wait=10"
sleep 1
kill -0 "$ppid" 2>/dev/null || {
    sed 's/^/#   /' "$T/unixlate.prog.err" >&2
    fail "unixlate: the program did not wait for its collector (wait=10)"
}
start_collector unixlate "unix:$T/late-c.sock"
finish unixlate
[ ! -e "$T/late-c.sock" ] || fail "unixlate: the collector left $T/late-c.sock behind"

# ---------------------------------------------------------------------------
# file: the library's file sink, no receiver.
# ---------------------------------------------------------------------------
EVENTLOG_SINK="file:$T/file.eventlog?policy=block" "$HELLO_STREAM" "$N" +RTS -l -N2 -RTS \
    >"$T/file.prog.out" 2>"$T/file.prog.err"
check_program file $?
check_stream file "$T/file.eventlog"

# ---------------------------------------------------------------------------
# A late joiner: no wait=, the default policy; the receiver connects about
# a second after the program started.  300 chunks of 1000 events with a
# 10 ms pause after each keep the program running a few seconds.
# ---------------------------------------------------------------------------
late_n=300000
EVENTLOG_SINK="unix:$T/late.sock" "$HELLO_STREAM" "$late_n" 10000 +RTS -l -N2 -RTS \
    >"$T/late.prog.out" 2>"$T/late.prog.err" &
ppid=$!
bg_register "$ppid"
wait_for_file "$T/late.sock" 20 || {
    sed 's/^/#   /' "$T/late.prog.err" >&2
    fail "late: the program did not create $T/late.sock"
}
sleep 1
kill -0 "$ppid" 2>/dev/null \
    || fail "late: the program finished within a second; it cannot be joined late"
"$ELS_SINK_TOOL" recv --retry 10 -o "$T/late.eventlog" "unix:$T/late.sock" \
    >"$T/late.recv.out" 2>"$T/late.recv.err" &
rpid=$!
bg_register "$rpid"
prog_rc=0; wait_pid "$ppid" 60 || prog_rc=$?
recv_rc=0; wait_pid "$rpid" 30 || recv_rc=$?
if [ "$prog_rc" -ne 0 ]; then
    sed 's/^/#   /' "$T/late.prog.err" >&2
    fail "late: hello-stream exited with status $prog_rc"
fi
check_recv late
[ -s "$T/late.eventlog" ] || fail "late: nothing received"
late_events=$(count_events "$T/late.eventlog") || fail "late: ghc-events cannot parse the stream"
late_user=$(count_user_events "$T/late.eventlog") || fail "late: ghc-events cannot parse the stream"
note "late: $late_events events, $late_user of $late_n user events, $(wc -c <"$T/late.eventlog") bytes"
[ "$late_events" -gt 0 ] || fail "late: the stream parses but holds no event"

# ---------------------------------------------------------------------------
# A bad spec: "tc" is not "tcp" (schemes match exactly).  The program must
# stop before running, with one line that names the scheme.
# ---------------------------------------------------------------------------
rc=0
EVENTLOG_SINK='tc:x' "$HELLO_STREAM" 10 +RTS -l -RTS >"$T/bad.out" 2>"$T/bad.err" || rc=$?
[ "$rc" -ne 0 ] || fail "bad spec: hello-stream exited 0 with EVENTLOG_SINK=tc:x"
lines=$(wc -l <"$T/bad.err")
[ "$lines" -eq 1 ] || fail "bad spec: $lines lines on stderr, expected 1: $(cat "$T/bad.err")"
grep -Eq '(^|[^[:alnum:]])tc([^[:alnum:]]|$)' "$T/bad.err" \
    || fail "bad spec: the error does not name the scheme 'tc': $(cat "$T/bad.err")"
grep -q "emitted" "$T/bad.out" && fail "bad spec: the program ran anyway"
note "bad spec: exit $rc: $(cat "$T/bad.err")"

exit 0
