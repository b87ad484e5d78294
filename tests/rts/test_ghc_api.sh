#!/usr/bin/env bash
# test_ghc_api.sh: the library's GHC entry points and RTS flags, from real
# programs on the patched RTS.
#
# tests/programs/Api.hs runs commands read from stdin (stop, start, emit, flush,
# stats) and answers each on stdout; the test waits for each answer, never
# for the clock.  Checked:
#   restart refused: with a tcp: sink on a fixed port, els_ghc_stop(), then
#     a listener from outside takes the port: els_ghc_start() returns
#     ELS_EADDRINUSE with one line on stderr naming the reason, and the
#     program goes on; once the port is free again, els_ghc_start()
#     returns 0 and a consumer receives the new stream, which ends well
#     at exit;
#   flushEventLog(NULL) through a safe foreign import delivers an event to
#     a live consumer while the program runs (without it the event would
#     wait in a 2 MiB buffer until exit);
#   els_ghc_stats() answers ELS_ESTOPPED while stopped and 0 while running;
#   --eventlog-sink takes precedence over -ol, in either order: nothing is
#     written to the -ol file, the stream goes to the sink.
#
# Skips (77) without the patched RTS, GHC or ghc-events.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"
. "$(dirname "$0")/../ghcprog.sh"

setup_ghc_program_test api Api
API=$GHC_PROGRAM
EADDRINUSE=98
ESHUTDOWN=108

# api_launch NAME SPEC: run Api with --eventlog-sink=SPEC as a coprocess
# (stderr in $T/NAME.prog.err); the caller reads its "ready".
api_launch() {
    api_name=$1
    coproc API_PROC { exec "$API" +RTS -N2 "--eventlog-sink=$2" -RTS 2>"$T/$1.prog.err"; }
    api_pid=$API_PROC_PID
    bg_register "$api_pid"
}

# api_expect LINE: the program's next answer is LINE.
api_expect() {
    local got=
    IFS= read -r -t 30 got <&"${API_PROC[0]}" \
        || fail_showing "$T/$api_name.prog.err" "$api_name: no answer from the program (expected '$1')"
    [ "$got" = "$1" ] \
        || fail_showing "$T/$api_name.prog.err" "$api_name: the program answered '$got', expected '$1'"
}

# api CMD ANSWER: send CMD, expect ANSWER.
api() {
    printf '%s\n' "$1" >&"${API_PROC[1]}" || fail "$api_name: the program is gone (sending '$1')"
    api_expect "$2"
}

# api_quit: send quit, wait for the program to end; sets prog_rc.
api_quit() {
    api quit bye
    local pid=$api_pid
    prog_rc=0; wait_pid "$pid" 60 || prog_rc=$?
}

# ---------------------------------------------------------------------------
# Restart refused while the port is taken, then accepted.
# ---------------------------------------------------------------------------
# free_tcp_port's port may be taken before the program binds it: retry.
port=
for _ in 1 2 3 4 5; do
    port=$(free_tcp_port) || fail "no free TCP port"
    api_launch restart "tcp:127.0.0.1:$port"
    ready=
    IFS= read -r -t 30 ready <&"${API_PROC[0]}" || true
    [ "$ready" != ready ] || break
    wait_pid "$api_pid" 30 || true
    grep -q "address already in use" "$T/restart.prog.err" \
        || fail_showing "$T/restart.prog.err" "restart: the program did not start (answered '$ready')"
    port=
done
[ -n "$port" ] || fail "restart: could not start the program on a free port"
api stats "stats 0"
api stop stopped
api stats "stats -$ESHUTDOWN"

# Another process takes the port while the eventlog is stopped.
"$ELS_SINK_TOOL" recv --listen --timeout 60 -o "$T/squatter.out" "tcp:127.0.0.1:$port" \
    >/dev/null 2>"$T/squatter.err" &
squatter=$!
bg_register "$squatter"
listening_endpoint "$T/squatter.err" "$squatter" 10 >/dev/null \
    || fail_showing "$T/squatter.err" "restart: the squatter could not listen on port $port"

api start "start -$EADDRINUSE"
grep -q "els_ghc_start: .*$port" "$T/restart.prog.err" \
    || fail_showing "$T/restart.prog.err" "restart: no log line naming the port the failed start could not take"
api stats "stats -$ESHUTDOWN"
api "emit api while stopped" emitted
api start "start -$EADDRINUSE"

kill "$squatter"
wait "$squatter" 2>/dev/null || true

api start "start 0"
api stats "stats 0"
start_receiver restart "tcp:127.0.0.1:$port"
api "emit api after restart" emitted
api flush flushed
# The flush alone brings the event to the consumer, while the program runs.
wait_until 30 grep -qa "api after restart" "$T/restart.eventlog" \
    || fail "restart: the flushed event did not reach the consumer while the program ran"
kill -0 "$api_pid" 2>/dev/null || fail "restart: the program ended before its answer"
api_quit
recv_rc=0; wait_pid "$rpid" 30 || recv_rc=$?
[ "$prog_rc" -eq 0 ] || fail_showing "$T/restart.prog.err" "restart: the program exited with status $prog_rc"
check_recv restart "$recv_rc"
n=$(count_user_events "$T/restart.eventlog" "api after restart") \
    || fail "restart: ghc-events cannot parse the stream after the restart"
[ "$n" -eq 1 ] || fail "restart: $n copies of the event in the new stream, expected 1"
note "restart: refused while the port was taken, streamed after"

# ---------------------------------------------------------------------------
# --eventlog-sink over -ol, in both orders.
# ---------------------------------------------------------------------------
build_tiny_program tiny-thr patched_ghc_lib -threaded -eventlog -rtsopts
for order in sink-first ol-first; do
    ol=$T/$order.ol.eventlog
    sink=file:$T/$order.sink.eventlog
    if [ "$order" = sink-first ]; then
        flags=("--eventlog-sink=$sink" -l "-ol$ol")
    else
        flags=(-l "-ol$ol" "--eventlog-sink=$sink")
    fi
    rc=0
    (cd "$T" && "$TINY_PROGRAM" +RTS "${flags[@]}" -RTS >"$T/$order.out" 2>"$T/$order.err") || rc=$?
    [ "$rc" -eq 0 ] || fail_showing "$T/$order.err" "$order: the program exited with status $rc"
    [ ! -s "$ol" ] || fail "$order: the -ol file $ol was written ($(wc -c <"$ol") bytes)"
    n=$(count_user_events "$T/$order.sink.eventlog" tiny) \
        || fail "$order: ghc-events cannot parse the sink's file"
    [ "$n" -eq 1 ] || fail "$order: $n user events in the sink's file, expected 1"
done
note "--eventlog-sink wins over -ol in both orders"
exit 0
