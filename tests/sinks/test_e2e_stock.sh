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
# a running program (tests/programs/Controlled.hs, which runs until told to
# stop) without wait=, after more than buffer= was emitted, gets a stream
# ghc-events parses, with user events, no more than were emitted, and an
# in-band note saying it joined mid-run; a program whose collector starts
# only once the program is waiting for it (wait=) loses nothing; a bad
# spec stops the program with exit status 1 and one line naming the
# scheme.  No step depends on how long anything takes: the tests wait for
# what the programs say.  This test does not look at drop accounting or
# several consumers (the unit tests do) and needs no patched RTS.
#
# Skips (77) without GHC, ghc-events or the GHC glue of the library.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"

require_tool
require_ghc
make_tmpdir
build_example
note "program: $HELLO_STREAM"

N=100000
T=$ELS_TMP
PROGRAM_LABEL=hello-stream
emitted="emitted $N user events"

# check_stream NAME FILE: FILE parses and holds exactly $N user events.
check_stream() {
    local name=$1 file=$2 count
    [ -s "$file" ] || fail "$name: no eventlog received ($file is missing or empty)"
    count=$(count_user_events "$file") || fail "$name: ghc-events cannot parse $file"
    note "$name: $count user events, $(wc -c <"$file") bytes"
    [ "$count" -eq "$N" ] \
        || fail "$name: $count user events in the stream, expected $N (stock file: $stock_count)"
}

# run_program NAME SPEC: run the program in the background with
# EVENTLOG_SINK=SPEC; sets ppid.
run_program() {
    EVENTLOG_SINK=$2 start_program "$1" "$HELLO_STREAM" "$N" +RTS -l -N2 -RTS
}

# stream NAME PROGSPEC RECVSPEC: run the receiver (retrying while the
# program sets up its endpoint) and the program; both must exit 0.  Sets
# prog_rc and recv_rc, leaves the stream in $T/NAME.eventlog.
stream() {
    start_receiver "$1" "$3"
    run_program "$1" "$2"
    wait_both "$rpid"
}

# check_run NAME: the program and the receiver both exited 0 (prog_rc,
# recv_rc), and the stream $T/NAME.eventlog is complete.
check_run() {
    check_program "$1" "$prog_rc" "$emitted"
    check_recv "$1" "$recv_rc"
    check_stream "$1" "$T/$1.eventlog"
}

# finish NAME RPID: wait for the program and the receiver or collector
# RPID, then check_run NAME.
finish() {
    wait_both "$2"
    check_run "$1"
}

# ---------------------------------------------------------------------------
# The reference: the stock RTS file writer.
# ---------------------------------------------------------------------------
(cd "$T" && env -u EVENTLOG_SINK "$HELLO_STREAM" "$N" +RTS -l -N2 "-ol$T/stock.eventlog" -RTS \
    >"$T/stock.prog.out" 2>"$T/stock.prog.err")
check_program stock $? "$emitted"
stock_count=$(count_user_events "$T/stock.eventlog") || fail "stock: ghc-events cannot parse the RTS's own file"
note "stock: $stock_count user events"
[ "$stock_count" -eq "$N" ] || fail "stock: $stock_count user events, expected $N"

# ---------------------------------------------------------------------------
# unix, fifo: the program waits (wait=60) for the receiver and blocks
# rather than drop (policy=block), so nothing may be lost.
# ---------------------------------------------------------------------------
stream unix "unix:$T/s.sock?policy=block&wait=60" "unix:$T/s.sock"
check_run unix
[ ! -e "$T/s.sock" ] || fail "unix: socket file $T/s.sock left behind after exit"

stream fifo "fifo:$T/f.fifo?policy=block&wait=60" "fifo:$T/f.fifo"
check_run fifo

# ---------------------------------------------------------------------------
# tcp: a port free right now; if another process takes it before the
# program binds, the program fails with "in use" and we try another.
# ---------------------------------------------------------------------------
for attempt in 1 2 3; do
    port=$(free_tcp_port) || fail "tcp: found no free port"
    note "tcp: port $port (attempt $attempt)"
    stream tcp "tcp:127.0.0.1:$port?policy=block&wait=60" "tcp:127.0.0.1:$port"
    if [ "$prog_rc" -ne 0 ] && grep -qi "in use" "$T/tcp.prog.err"; then
        continue
    fi
    break
done
check_run tcp

# tcp port 0: the kernel picks the port; the receiver learns it from the
# sink's "listening on tcp:HOST:PORT" line on the program's stderr.
run_program tcp0 "tcp:127.0.0.1:0?policy=block&wait=60"
program_tcp_endpoint tcp0
case "$endpoint" in
    tcp:127.0.0.1:0 | *:) fail "tcp0: the logged endpoint '$endpoint' has no real port" ;;
esac
start_receiver tcp0 "$endpoint"
finish tcp0 "$rpid"

# ---------------------------------------------------------------------------
# unix-connect, tcp-connect: the receiver listens (recv --listen) and the
# program connects out to it.  wait=60 holds the program's start-up until
# the connection is made and policy=block keeps it from dropping, so the
# count must be exact.
# ---------------------------------------------------------------------------

start_collector tcpc tcp:127.0.0.1:0
endpoint=$collector_endpoint
note "tcpc: collector on $endpoint"
case "$endpoint" in
    tcp:127.0.0.1:0 | tcp:127.0.0.1:[1-9]*[!0-9]* | tcp:127.0.0.1:)
        fail "tcpc: '$endpoint' has no real port" ;;
    tcp:127.0.0.1:[1-9]*) ;;
    *) fail "tcpc: '$endpoint' is not tcp:127.0.0.1:PORT" ;;
esac
run_program tcpc "tcp-connect:127.0.0.1:${endpoint##*:}?policy=block&trust=1&wait=60"
finish tcpc "$cpid"

start_collector unixc "unix:$T/c.sock"
endpoint=$collector_endpoint
[ "$endpoint" = "unix:$T/c.sock" ] || fail "unixc: listening on '$endpoint', expected unix:$T/c.sock"
run_program unixc "unix-connect:$T/c.sock?policy=block&wait=60"
finish unixc "$cpid"
[ ! -e "$T/c.sock" ] || fail "unixc: the collector left $T/c.sock behind"

# The collector comes only once the program says it is waiting for one:
# start-up waits (wait=60, a hang guard) while the sink redials, and
# nothing is lost once it connects.
run_program unixlate "unix-connect:$T/late-c.sock?policy=block&wait=60"
wait_until 60 grep -q 'waiting up to .* for a consumer' "$T/unixlate.prog.err" \
    || fail_showing "$T/unixlate.prog.err" "unixlate: the program did not say it waits for its collector (wait=60)"
kill -0 "$ppid" 2>/dev/null \
    || fail_showing "$T/unixlate.prog.err" "unixlate: the program did not wait for its collector (wait=60)"
start_collector unixlate "unix:$T/late-c.sock"
finish unixlate "$cpid"
[ ! -e "$T/late-c.sock" ] || fail "unixlate: the collector left $T/late-c.sock behind"

# ---------------------------------------------------------------------------
# file: the library's file sink, no receiver.
# ---------------------------------------------------------------------------
EVENTLOG_SINK="file:$T/file.eventlog?policy=block" "$HELLO_STREAM" "$N" +RTS -l -N2 -RTS \
    >"$T/file.prog.out" 2>"$T/file.prog.err"
check_program file $? "$emitted"
check_stream file "$T/file.eventlog"

# ---------------------------------------------------------------------------
# A late joiner: no wait=, buffer=4M, the default policy.  The program
# (Controlled.hs, which runs until told to stop) says "ready" after 400,000
# user events, over 11 MB of eventlog: whole 2 MiB buffers beyond the
# 4 MiB queue reached the writer with no consumer, so some were released
# before anyone joined.  The receiver joins then; once it has the header
# the program is told to stop.  Its stream must parse and hold user
# events, no more than were emitted, and fewer (something was released),
# with the in-band note that it joined mid-run.
# ---------------------------------------------------------------------------
build_controlled stock
EVENTLOG_SINK="unix:$T/late.sock?buffer=4M" start_controlled late "$CONTROLLED" run 400000 +RTS -l -N2 -RTS
join_late late "$T/late.sock"
check_program late "$prog_rc" "emitted [0-9]* user events"
check_recv late "$recv_rc"
check_late_joiner late "$T/late.eventlog" must-miss

# ---------------------------------------------------------------------------
# A bad spec: "tc" is not "tcp" (schemes match exactly).  The program must
# stop before running, with one line that names the scheme.
# ---------------------------------------------------------------------------
rc=0
EVENTLOG_SINK='tc:x' "$HELLO_STREAM" 10 +RTS -l -RTS >"$T/bad.out" 2>"$T/bad.err" || rc=$?
[ "$rc" -eq 1 ] || fail "bad spec: hello-stream exited $rc with EVENTLOG_SINK=tc:x, expected 1 (README)"
lines=$(wc -l <"$T/bad.err")
[ "$lines" -eq 1 ] || fail "bad spec: $lines lines on stderr, expected 1: $(cat "$T/bad.err")"
grep -Eq '(^|[^[:alnum:]])tc([^[:alnum:]]|$)' "$T/bad.err" \
    || fail "bad spec: the error does not name the scheme 'tc': $(cat "$T/bad.err")"
grep -q "emitted" "$T/bad.out" && fail "bad spec: the program ran anyway"
note "bad spec: exit $rc: $(cat "$T/bad.err")"

exit 0
