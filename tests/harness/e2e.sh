# e2e.sh (sourced by tests/harness.sh): the steps the end-to-end tests share:
# starting a program, a receiver or a collector, and checking how each
# ended; late joiners.

# ---------------------------------------------------------------------------
# Programs, receivers and collectors (the end-to-end tests)
# ---------------------------------------------------------------------------

# A run called NAME keeps its files in $ELS_TMP: NAME.prog.{out,err} for
# the program, NAME.recv.{out,err} for the receiver (or collector) and
# NAME.eventlog for the stream it received.  The helpers below share the
# variables ppid (the program), rpid (a receiver), cpid (a collector),
# prog_rc and recv_rc; PROGRAM_LABEL names the program in messages.

# fail_showing FILE MSG: copy FILE into the test's log, indented, and fail
# with MSG.
fail_showing() {
    sed 's/^/#   /' "$1" >&2
    shift
    fail "$@"
}

# start_program NAME CMD ARGS...: run CMD ARGS in the background (an
# EVENTLOG_SINK=... before the call reaches it); sets ppid and records the
# command line in prog_args.
start_program() {
    local name=$1
    shift
    prog_args=("$@")
    "$@" >"$ELS_TMP/$name.prog.out" 2>"$ELS_TMP/$name.prog.err" &
    ppid=$!
    bg_register "$ppid"
}

# check_program NAME RC LINE: the program exited with status 0 and printed
# LINE (a grep pattern for a whole line) on stdout.
check_program() {
    local name=$1 rc=$2 line=$3 label=${PROGRAM_LABEL:-the program}
    [ "$rc" -eq 0 ] || fail_showing "$ELS_TMP/$name.prog.err" \
        "$name: $label exited with status $rc (expected 0)"
    grep -qx "$line" "$ELS_TMP/$name.prog.out" \
        || fail "$name: $label stdout lacks '$line': $(head -c 200 "$ELS_TMP/$name.prog.out")"
}

# start_receiver NAME SPEC: `recv --retry 60` from SPEC into
# $ELS_TMP/NAME.eventlog in the background (retrying while the program
# sets up its endpoint); sets rpid.
start_receiver() {
    "$ELS_SINK_TOOL" recv --retry 60 -o "$ELS_TMP/$1.eventlog" "$2" \
        >"$ELS_TMP/$1.recv.out" 2>"$ELS_TMP/$1.recv.err" &
    rpid=$!
    bg_register "$rpid"
}

# check_recv NAME RC: the receiver saw a complete, well-formed stream.
check_recv() {
    [ "$2" -eq 0 ] || fail_showing "$ELS_TMP/$1.recv.err" \
        "$1: eventlog-sink recv exited with status $2 (expected 0: complete stream)"
}

# wait_both RPID: wait for the program (ppid, 60 s) and then for the
# receiver or collector RPID (30 s); sets prog_rc and recv_rc (124: still
# running at its deadline, and killed).
wait_both() {
    prog_rc=0; wait_pid "$ppid" 60 || prog_rc=$?
    recv_rc=0; wait_pid "$1" 30 || recv_rc=$?
}

# program_tcp_endpoint NAME: wait for the tcp sink's "listening on
# tcp:HOST:PORT" line (the real port, also when the spec said 0) on the
# program's stderr and set endpoint to tcp:HOST:PORT.
program_tcp_endpoint() {
    local err=$ELS_TMP/$1.prog.err
    wait_until 10 grep -q 'listening on tcp:' "$err" \
        || fail_showing "$err" "$1: no 'listening on tcp:HOST:PORT' line on the program's stderr"
    endpoint=$(sed -n 's/.*listening on \(tcp:[^ ]*\).*/\1/p' "$err" | head -n 1)
    note "$1: $endpoint"
}

# join_late NAME SOCKET: the program started by start_controlled (`run
# READY`) says "ready"; then receive from unix:SOCKET into
# $ELS_TMP/NAME.eventlog while it runs, tell the program to stop once the
# receiver has the header (it has joined), and wait for both (prog_rc,
# recv_rc).
join_late() {
    wait_output "$1" ready
    start_receiver "$1" "unix:$2"
    wait_until 60 els_has_header "$ELS_TMP/$1.eventlog" \
        || fail_showing "$ELS_TMP/$1.recv.err" "$1: the late joiner got no header within 60 s"
    stop_controlled
    wait_both "$rpid"
}

els_has_header() {
    stream_header_len "$1" >/dev/null
}

# check_late_joiner NAME FILE [must-miss]: FILE, what a late joiner of the
# controlled program ($ELS_TMP/NAME.prog.out says "emitted K user
# events") received, is a valid stream holding user events "controlled I",
# each once and no more than K; if it holds fewer than K, it says so
# in-band (a "joined mid-run" or a loss note): nothing is lost silently.
# With must-miss it must hold fewer than K, with the "joined mid-run" note.
check_late_joiner() {
    local name=$1 file=$2 k
    k=$(sed -n 's/^emitted \([0-9]*\) user events$/\1/p' "$ELS_TMP/$name.prog.out")
    [ -n "$k" ] || fail "$name: the program did not say how many events it emitted"
    validate_stream "$file" "$ELS_TMP/$name.show" "controlled " \
        || fail "$name: invalid stream: $vs_why"
    note "$name: $vs_user of $k user events, $vs_events events, joined notes $vs_joined, loss notes $vs_notes, $(wc -c <"$file") bytes"
    [ "$vs_user" -gt 0 ] || fail "$name: the late joiner's stream holds no user event"
    [ "$vs_user" -le "$k" ] || fail "$name: $vs_user user events received, only $k emitted"
    if [ "$vs_user" -lt "$k" ] && [ $((vs_joined + vs_notes)) -eq 0 ]; then
        fail "$name: $vs_user of $k user events and no in-band note of a late join or a loss"
    fi
    if [ "${3:-}" = must-miss ]; then
        [ "$vs_user" -lt "$k" ] || fail "$name: all $k user events arrived, though more than buffer= was emitted before the join"
        [ "$vs_joined" -gt 0 ] || fail "$name: no 'joined mid-run' note, though units were released before the join"
    fi
    [ "$vs_joined" -gt 0 ] || return 0
    # Joined at a snapshot of the program's state (a patched RTS): what came
    # before is not this stream's, and no loss.
    if grep -q 'joined mid-run; its stream starts at a snapshot' "$ELS_TMP/$name.show"; then
        note "$name: joined at a snapshot"
        return 0
    fi
    # The note's figures: the units released before the join are exactly
    # those the loss report at exit counts as released with no consumer
    # (the joiner kept up afterwards), and their bytes too when that is
    # the only cause.
    local units bytes
    read -r units bytes < <(sed -n 's/^.*eventlog-sink: consumer [0-9]* joined mid-run; \([0-9]*\) earlier units (\([0-9]*\) bytes) were no longer queued$/\1 \2/p' \
        "$ELS_TMP/$name.show" | head -n 1)
    [ -n "$units" ] || fail "$name: cannot read the figures of the 'joined mid-run' note: $(grep -m 1 'joined mid-run' "$ELS_TMP/$name.show")"
    check_noted_losses "$name" "$ELS_TMP/$name.prog.err" "$ELS_CAUSE_RELEASED_UNCONSUMED" "$units" "$bytes"
    note "$name: joined after $units units ($bytes bytes) were released; loss report: $lf_causes($lf_bytes bytes)"
}

els_listening_or_gone() {
    grep -q '^eventlog-sink recv: listening on ' "$1" || ! kill -0 "$2" 2>/dev/null
}

# listening_endpoint ERRFILE PID SECS: wait up to SECS for the "listening
# on" line of `recv --listen` (process PID, stderr in ERRFILE) and print
# the endpoint it names (unix:PATH or tcp:HOST:PORT); 1 if PID exited, or
# SECS passed, without one.
listening_endpoint() {
    wait_until "$3" els_listening_or_gone "$1" "$2" || return 1
    sed -n 's/^eventlog-sink recv: listening on //p' "$1" | head -n 1 | grep .
}

# start_collector NAME SPEC: `recv --listen --timeout 120 SPEC` into
# $ELS_TMP/NAME.eventlog in the background; waits for it to listen and sets
# collector_endpoint to the endpoint it names, and cpid.
start_collector() {
    local name=$1 spec=$2 err=$ELS_TMP/$1.recv.err
    : >"$err"
    "$ELS_SINK_TOOL" recv --listen --timeout 120 -o "$ELS_TMP/$name.eventlog" "$spec" \
        >"$ELS_TMP/$name.recv.out" 2>"$err" &
    cpid=$!
    bg_register "$cpid"
    collector_endpoint=$(listening_endpoint "$err" "$cpid" 60) \
        || fail_showing "$err" "$name: no 'listening on' line from eventlog-sink recv --listen"
}
