#!/bin/bash
# test_recv.sh: the `eventlog-sink recv` command, driven through FIFOs and,
# for --listen, through TCP connections made by bash's /dev/tcp.
#
# Serves a real eventlog (written by a GHC program compiled here, or the
# file named by ELS_SAMPLE_EVENTLOG) through FIFOs and checks what the
# receiver writes, says and returns: a complete stream (to a file and to
# standard output), a truncated one, malformed ones, usage errors,
# unreachable endpoints, --retry (the endpoint appears only after the
# receiver said an attempt failed), a closed output pipe and SIGTERM in the
# middle of a stream.  For --listen: a stream sent to tcp:0 (the port read
# from the "listening on" line) with exactly one connection accepted, a
# truncated one, --timeout, an address in use, and the rules for an
# existing socket path (a regular file or directory is refused, a live
# socket is refused, a stale one is replaced; mode 0600; removed at exit).
# Connecting to unix:/tcp: endpoints, and streaming to a UNIX listener,
# need the library as producer and are covered by the end-to-end tests.
# Skips (77) only when there is neither a sample file nor a GHC to make one.
# Without ghc-events the event counts are not compared with its count (a
# skipped part; a failure under ELS_REQUIRE_ALL=1).
#
# Uses $ELS_TOP_BUILDDIR/tools/eventlog-sink, or the program named by
# RECV=path when set.

set -eu

. "$(dirname "$0")/../harness.sh"

RECV=${RECV:-$ELS_SINK_TOOL}
[ -x "$RECV" ] || fail "receiver not built: $RECV"

make_tmpdir
umask 022
T=$ELS_TMP

# ---------------------------------------------------------------------------
# The sample stream
# ---------------------------------------------------------------------------

if [ -n "${ELS_SAMPLE_EVENTLOG:-}" ]; then
    [ -r "$ELS_SAMPLE_EVENTLOG" ] || fail "ELS_SAMPLE_EVENTLOG=$ELS_SAMPLE_EVENTLOG is not readable"
    SAMPLE=$ELS_SAMPLE_EVENTLOG
elif [ -n "${GHC:-}" ] && [ -x "$GHC" ]; then
    mkdir "$T/ghc"
    cat >"$T/ghc/Sample.hs" <<'EOF'
import Debug.Trace
main :: IO ()
main = mapM_ (\i -> traceEventIO ("sample " ++ show i)) [1 .. 1000 :: Int]
EOF
    note "compiling a sample eventlog program with $GHC"
    if ! "$GHC" -eventlog -rtsopts -outputdir "$T/ghc" -o "$T/ghc/Sample" \
            "$T/ghc/Sample.hs" >"$T/ghc/build.log" 2>&1; then
        cat "$T/ghc/build.log" >&2
        fail "could not compile the sample program"
    fi
    (cd "$T/ghc" && ./Sample +RTS -l -RTS) || fail "the sample program failed"
    SAMPLE=$T/ghc/Sample.eventlog
    [ -s "$SAMPLE" ] || fail "the sample program wrote no eventlog"
else
    skip "no GHC to produce a sample eventlog (set GHC or ELS_SAMPLE_EVENTLOG)"
fi
SIZE=$(stat -c %s "$SAMPLE")
HALF=$((SIZE / 2))
# The receiver's event count must be the independent reader's.
EVENTS='[1-9][0-9]*'
if [ -n "${GHC_EVENTS:-}" ] && command -v "$GHC_EVENTS" >/dev/null 2>&1; then
    EVENTS=$(count_events "$SAMPLE") || fail "ghc-events cannot read the sample $SAMPLE"
else
    skip_part_dep event-count "ghc-events not installed: the receiver's event counts are not compared with it"
fi
note "sample: $SAMPLE ($SIZE bytes, $EVENTS events)"

# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

# recv ARGS...: run the receiver with stdout to $T/out, stderr to $T/err;
# sets RC.  Never aborts the script.
recv() {
    RC=0
    "$RECV" "$@" >"$T/out" 2>"$T/err" </dev/null || RC=$?
}

# recv_bounded ARGS...: like recv, but stopped (RC 124) if still running
# after 60 s: for cases where a broken receiver would wait for ever.
recv_bounded() {
    local pid
    RC=0
    "$RECV" "$@" >"$T/out" 2>"$T/err" </dev/null &
    pid=$!
    bg_register "$pid"
    wait_pid "$pid" 60 || RC=$?
}

# why MSG: print MSG and the receiver's stderr, fail the case.
why() {
    echo "  $*" >&2
    sed 's/^/  stderr: /' "$T/err" >&2 2>/dev/null || true
    return 1
}

expect_rc() {
    [ "$RC" -eq "$1" ] || why "exit status $RC, expected $1"
}

# expect_err TEXT: the receiver's stderr contains TEXT (fixed string).
expect_err() {
    grep -qF -- "$1" "$T/err" || why "stderr lacks \"$1\""
}

# expect_err_lines N: stderr has exactly N lines.
expect_err_lines() {
    local n
    n=$(wc -l <"$T/err")
    [ "$n" -eq "$1" ] || why "stderr has $n lines, expected $1"
}

expect_same() {
    cmp -s "$1" "$2" || why "$1 differs from $2"
}

# new_fifo NAME: a fresh FIFO NAME.fifo in the temporary directory (the
# suffix keeps it apart from the plain files); prints its path.
new_fifo() {
    rm -f "$T/$1.fifo"
    mkfifo "$T/$1.fifo"
    echo "$T/$1.fifo"
}

# serve FIFO FILE: write FILE into FIFO in the background once a reader
# opens it (killed at exit if no reader ever comes).
serve() {
    cat "$2" >"$1" &
    bg_register $!
}

# listen_bg ARGS...: start `recv --listen ARGS` in the background (stdout
# to $T/out, stderr to $T/err); sets LPID.
listen_bg() {
    rm -f "$T/err"
    : >"$T/err"
    "$RECV" recv --listen "$@" >"$T/out" 2>"$T/err" </dev/null &
    LPID=$!
    bg_register "$LPID"
}

# listening_on PID: wait for receiver PID's "listening on" line and print
# the endpoint it names; 1 if it exited without listening.
listening_on() {
    listening_endpoint "$T/err" "$1" 60
}

# tcp_refused PORT: a connection to 127.0.0.1:PORT is refused right now.
# Bounded by `timeout`: a listener whose backlog is full lets connect()
# hang for minutes instead of refusing, and that must count as "not
# refused", not as a refusal once it finally times out.
tcp_refused() {
    timeout 10 bash -c 'exec 9>"/dev/tcp/127.0.0.1/$1"' _ "$1" 2>&1 |
        grep -q 'Connection refused'
}

# ---------------------------------------------------------------------------
# Cases (each returns non-zero on failure and says why on stderr)
# ---------------------------------------------------------------------------

case_help_and_version() {
    RC=0; "$RECV" --help >"$T/out" 2>"$T/err" || RC=$?
    expect_rc 0 && grep -q '^  recv ' "$T/out" || why "--help does not list recv" || return 1
    RC=0; "$RECV" --version >"$T/out" 2>"$T/err" || RC=$?
    expect_rc 0 && grep -qE '^eventlog-sink [0-9]+\.[0-9]+\.[0-9]+' "$T/out" ||
        why "--version: $(cat "$T/out")" || return 1
    recv recv --help
    expect_rc 0 && grep -qF 'Usage: eventlog-sink recv' "$T/out" ||
        why "recv --help: no usage line" || return 1
    grep -qF 'recv --listen [-o FILE] [--timeout SECS]' "$T/out" ||
        why "recv --help: no usage line for --listen" || return 1
    grep -qE '^  -t, --timeout SECS' "$T/out" ||
        why "recv --help: --timeout not described"
}

case_fifo_to_file() {
    local f
    f=$(new_fifo in)
    serve "$f" "$SAMPLE"
    recv recv -o "$T/copy" "fifo:$f"
    expect_rc 0 || return 1
    expect_same "$T/copy" "$SAMPLE" || return 1
    [ ! -s "$T/out" ] || why "wrote to stdout despite -o" || return 1
    expect_err "eventlog-sink recv: received $SIZE bytes, " || return 1
    expect_err_lines 1 || return 1
    [ "$(stat -c %a "$T/copy")" = 644 ] || why "mode $(stat -c %a "$T/copy"), expected 644"
}

case_fifo_to_stdout() {
    local f
    f=$(new_fifo in)
    serve "$f" "$SAMPLE"
    recv recv "fifo:$f"
    expect_rc 0 || return 1
    expect_same "$T/out" "$SAMPLE" || return 1
    grep -qE "^eventlog-sink recv: received $SIZE bytes, $EVENTS events, [1-9][0-9]* blocks\$" \
        "$T/err" || why "no summary line saying $SIZE bytes, $EVENTS events"
}

case_quiet() {
    local f
    f=$(new_fifo in)
    serve "$f" "$SAMPLE"
    recv recv --quiet -o "$T/copy" "fifo:$f"
    expect_rc 0 || return 1
    expect_same "$T/copy" "$SAMPLE" || return 1
    [ ! -s "$T/err" ] || why "--quiet printed something"
}

case_truncated() {
    local f
    f=$(new_fifo in)
    head -c "$HALF" "$SAMPLE" >"$T/half"
    serve "$f" "$T/half"
    recv recv -o "$T/copy" "fifo:$f"
    expect_rc 3 || return 1
    expect_same "$T/copy" "$T/half" || return 1
    expect_err "eventlog-sink recv: stream truncated after $HALF bytes (" || return 1
    expect_err_lines 2 || return 1

    # Nothing at all: the writer opens and closes at once.
    f=$(new_fifo empty)
    : >"$T/nothing"
    serve "$f" "$T/nothing"
    recv recv --quiet "fifo:$f"
    expect_rc 3 || return 1
    expect_err "eventlog-sink recv: stream truncated after 0 bytes (0 events)" || return 1
    expect_err_lines 1
}

case_malformed() {
    local f
    # A byte after DATA_END.
    f=$(new_fifo in)
    { cat "$SAMPLE"; printf 'x'; } >"$T/trailing"
    serve "$f" "$T/trailing"
    recv recv -o "$T/copy" "fifo:$f"
    expect_rc 3 || return 1
    expect_err "eventlog-sink recv: stream malformed at offset $SIZE: " || return 1
    expect_same "$T/copy" "$T/trailing" || return 1

    # Not an eventlog at all.
    f=$(new_fifo junk)
    printf 'hdrXjunk' >"$T/junk"
    serve "$f" "$T/junk"
    recv recv --quiet "fifo:$f"
    expect_rc 3 || return 1
    expect_err "eventlog-sink recv: stream malformed at offset 0: " || return 1
    expect_err_lines 1
}

# usage_error TEXT ARGS...: ARGS is a usage error mentioning TEXT.
usage_error() {
    local text=$1
    shift
    recv "$@"
    expect_rc 2 || why "for: $*" || return 1
    expect_err "$text" || why "for: $*" || return 1
    expect_err_lines 2 || why "for: $*" || return 1
    [ "$(tail -n 1 "$T/err")" = "try 'eventlog-sink recv --help'" ] ||
        why "no hint line for: $*"
}

case_usage_errors() {
    local long
    long=$T/$(printf 'x%.0s' $(seq 1 120)).sock
    usage_error "missing SPEC" recv || return 1
    usage_error "unknown scheme 'tc' in 'tc:1'" recv tc:1 || return 1
    usage_error "unknown scheme 'tcpx'" recv tcpx:1 || return 1
    usage_error "unknown scheme 'unix-connect'" recv unix-connect:/x || return 1
    usage_error "'nocolon' is not a spec" recv nocolon || return 1
    usage_error "unknown option '--bogus'" recv --bogus fifo:/x || return 1
    usage_error "unknown option '-z'" recv -z fifo:/x || return 1
    usage_error "needs an argument" recv fifo:/x -o || return 1
    usage_error "--retry: 'soon'" recv --retry soon fifo:/x || return 1
    usage_error "--retry: '-1'" recv --retry=-1 fifo:/x || return 1
    usage_error "one SPEC only" recv fifo:/x fifo:/y || return 1
    usage_error "empty FIFO path" recv fifo: || return 1
    usage_error "port" recv tcp:99999 || return 1
    usage_error "limit" recv "unix:$long" || return 1
    usage_error "port 0 cannot be connected to" recv tcp:0 || return 1
    usage_error "--listen takes unix:PATH or tcp:[HOST:]PORT, not a FIFO" \
        recv --listen "fifo:$T/x.fifo" || return 1
    usage_error "--timeout is for --listen" recv --timeout 1 tcp:1 || return 1
    usage_error "--retry is for connecting" recv --listen --retry 1 tcp:0 || return 1
    usage_error "--timeout: 'soon'" recv --listen --timeout soon tcp:0 || return 1
    usage_error "limit" recv --listen "unix:$long" || return 1
    usage_error "unknown scheme 'tcp-connect'" recv --listen tcp-connect:0 || return 1
    [ ! -e "$T/x.fifo" ] || why "a refused --listen created $T/x.fifo" || return 1

    recv no-such-command
    expect_rc 2 || return 1
    expect_err "unknown command 'no-such-command'" || return 1
    recv
    expect_rc 2
}

case_unreachable() {
    local port
    recv recv unix:/nonexistent/x.sock
    expect_rc 1 || return 1
    expect_err "unix:/nonexistent/x.sock" || return 1
    expect_err "No such file or directory" || return 1
    expect_err_lines 1 || return 1

    recv recv "fifo:$T/absent"
    expect_rc 1 || return 1
    expect_err_lines 1 || return 1

    echo "not a fifo" >"$T/plain"
    recv recv "fifo:$T/plain"
    expect_rc 1 || return 1
    expect_err "not a FIFO" || return 1

    port=$(free_tcp_port) || why "no free TCP port" || return 1
    recv recv "tcp:$port"
    expect_rc 1 || return 1
    expect_err "Connection refused" || return 1

    # A failed attempt leaves an earlier capture alone.
    echo "earlier capture" >"$T/keep"
    recv recv -o "$T/keep" unix:/nonexistent/x.sock
    expect_rc 1 || return 1
    [ "$(cat "$T/keep")" = "earlier capture" ] || why "-o file clobbered"
}

# retrying_or_gone PID: the receiver (PID) said it retries, or exited.
retrying_or_gone() {
    grep -qF '; retrying for up to ' "$T/err" || ! kill -0 "$1" 2>/dev/null
}

# --retry must be what gets the stream: the FIFO is made only after the
# receiver has said that an attempt failed and that it retries, so the
# copy can only come from a later attempt.
case_retry() {
    local f=$T/late pid rc=0
    rm -f "$f"
    : >"$T/err"
    "$RECV" recv --retry 60 -o "$T/copy" "fifo:$f" 2>"$T/err" </dev/null &
    pid=$!
    bg_register "$pid"
    wait_until 60 retrying_or_gone "$pid" ||
        why "no 'retrying' line within 60 s: does it report a failed attempt?" || return 1
    kill -0 "$pid" 2>/dev/null || why "receiver gave up at once" || return 1
    expect_err "eventlog-sink recv: cannot open fifo:$f: No such file or directory; retrying for up to 60 s" || return 1
    mkfifo "$f"
    serve "$f" "$SAMPLE"
    wait_pid "$pid" 60 || rc=$?
    RC=$rc
    expect_rc 0 || return 1
    expect_same "$T/copy" "$SAMPLE" || return 1
    expect_err "eventlog-sink recv: received $SIZE bytes, " || return 1
    expect_err_lines 2 || return 1

    # Retrying ends after SECS.
    recv recv --retry 0.3 "fifo:$T/never"
    expect_rc 1 || return 1
    expect_err "retrying for up to 0.3 s" || return 1
    expect_err "(retried for 0.3 s)" || return 1
    expect_err_lines 2
}

# opened_or_gone PID PATH: process PID has PATH open, or has exited (so
# that waiting for it ends early; the caller checks which).
opened_or_gone() {
    local fd
    kill -0 "$1" 2>/dev/null || return 0
    for fd in /proc/"$1"/fd/*; do
        [ "$(readlink "$fd" 2>/dev/null)" = "$2" ] && return 0
    done
    return 1
}

# The receiver opens the FIFO before any writer does (the library's fifo
# sink only opens its end once a reader is there): it must wait for the
# writer, not take the empty FIFO for the end of the stream.
case_writer_arrives_later() {
    local f pid rc=0
    f=$(new_fifo in)
    "$RECV" recv -o "$T/copy" "fifo:$f" 2>"$T/err" </dev/null &
    pid=$!
    bg_register "$pid"
    wait_until 60 opened_or_gone "$pid" "$f" || why "receiver never opened $f" || return 1
    kill -0 "$pid" 2>/dev/null || why "receiver gave up before the writer came" || return 1
    cat "$SAMPLE" >"$f"
    wait_pid "$pid" 60 || rc=$?
    RC=$rc
    expect_rc 0 || return 1
    expect_same "$T/copy" "$SAMPLE"
}

# The output is a pipe whose reader has gone: an error, not SIGPIPE.
case_closed_stdout() {
    local f rcfile=$T/closed.rc
    f=$(new_fifo in)
    rm -f "$rcfile"
    rm -f "$T/reader-gone"
    { RC=0; "$RECV" recv "fifo:$f" 2>"$T/err" </dev/null || RC=$?; echo "$RC" >"$rcfile"; } |
        { exec 0<&-; : >"$T/reader-gone"; } &
    # Once the right-hand side has closed its stdin, nothing reads the pipe.
    wait_until 60 test -e "$T/reader-gone" || why "reader did not start" || return 1
    # Read-write so that opening never blocks.  Kept open until the
    # receiver is done: a FIFO with no open end loses what it holds.  A
    # few KiB only, so the write never waits for the reader.
    exec 6<>"$f"
    head -c 4096 "$SAMPLE" >&6
    wait_until 60 test -s "$rcfile" || { exec 6>&-; why "receiver did not finish"; return 1; }
    exec 6>&-
    RC=$(cat "$rcfile")
    expect_rc 1 || return 1
    expect_err "cannot write to standard output: Broken pipe"
}

# SIGTERM in the middle of a stream: what arrived is kept, and the stream
# is reported as truncated.
case_sigterm() {
    local f pid rc=0 got
    f=$(new_fifo in)
    rm -f "$T/copy"
    "$RECV" recv -o "$T/copy" "fifo:$f" 2>"$T/err" </dev/null &
    pid=$!
    bg_register "$pid"
    # Read-write: never blocks, and keeps the FIFO open for writing after
    # the first half, so the receiver waits for more.
    exec 7<>"$f"
    head -c "$HALF" "$SAMPLE" >&7
    wait_until 60 eval '[ "$(stat -c %s "$T/copy" 2>/dev/null || echo 0)" -eq "$HALF" ]' ||
        { exec 7>&-; why "the first half did not arrive"; return 1; }
    kill -TERM "$pid"
    wait_pid "$pid" 60 || rc=$?
    exec 7>&-
    RC=$rc
    expect_rc 3 || return 1
    expect_err "eventlog-sink recv: stream truncated after $HALF bytes (" || return 1
    expect_err "stopped by SIGTERM" || return 1
    got=$(stat -c %s "$T/copy")
    [ "$got" -eq "$HALF" ] || why "kept $got bytes, expected $HALF"
}

# --listen on tcp:0: the port comes from the "listening on" line; one
# producer is accepted and the listener then closes (a second connection
# is refused while the first is still streaming).
case_listen_tcp() {
    local endpoint port hlen rc=0
    rm -f "$T/copy"
    listen_bg -o "$T/copy" tcp:0
    endpoint=$(listening_on "$LPID") || why "no 'listening on' line" || return 1
    grep -qxE 'eventlog-sink recv: listening on tcp:127\.0\.0\.1:[1-9][0-9]*' "$T/err" ||
        why "bad 'listening on' line" || return 1
    port=${endpoint##*:}
    hlen=$(stream_header_len "$SAMPLE") || why "no header in $SAMPLE" || return 1
    exec 8>"/dev/tcp/127.0.0.1/$port" || why "cannot connect to $endpoint" || return 1
    # The producer is recognised by its complete header (Note [Waiting
    # for the producer]); from then on other connections are refused.
    head -c "$hlen" "$SAMPLE" >&8
    wait_until 60 tcp_refused "$port" ||
        { exec 8>&-; why "$endpoint still accepts connections after the producer's header"; return 1; }
    tail -c +$((hlen + 1)) "$SAMPLE" >&8
    exec 8>&-
    wait_pid "$LPID" 60 || rc=$?
    RC=$rc
    expect_rc 0 || return 1
    expect_same "$T/copy" "$SAMPLE" || return 1
    expect_err "eventlog-sink recv: received $SIZE bytes, " || return 1
    expect_err_lines 2 || return 1
    [ ! -s "$T/out" ] || why "wrote to stdout despite -o"
}

# A connection that closes before sending a byte (the library's unix sink
# probes a socket that way to see whether anyone listens) is not taken for
# the producer: recv keeps listening and receives the next one.
case_listen_ignores_probe() {
    local endpoint port rc=0
    rm -f "$T/copy"
    listen_bg -o "$T/copy" tcp:0
    endpoint=$(listening_on "$LPID") || why "no 'listening on' line" || return 1
    port=${endpoint##*:}
    exec 8>"/dev/tcp/127.0.0.1/$port" || why "cannot connect to $endpoint" || return 1
    exec 8>&-
    cat "$SAMPLE" >"/dev/tcp/127.0.0.1/$port" ||
        why "$endpoint stopped listening after a probe" || return 1
    wait_pid "$LPID" 60 || rc=$?
    RC=$rc
    expect_rc 0 || return 1
    expect_same "$T/copy" "$SAMPLE"
}

# The parser's verdict is the same as when connecting: a stream cut in
# the middle is truncated (3), and what arrived is kept.  Also to stdout.
case_listen_tcp_truncated() {
    local endpoint rc=0
    head -c "$HALF" "$SAMPLE" >"$T/half"
    listen_bg --quiet tcp:0
    endpoint=$(listening_on "$LPID") || why "no 'listening on' line" || return 1
    cat "$T/half" >"/dev/tcp/127.0.0.1/${endpoint##*:}" ||
        why "cannot send to $endpoint" || return 1
    wait_pid "$LPID" 60 || rc=$?
    RC=$rc
    expect_rc 3 || return 1
    expect_same "$T/out" "$T/half" || return 1
    expect_err "eventlog-sink recv: stream truncated after $HALF bytes (" || return 1
    # --quiet drops the summary, not the "listening on" line.
    expect_err "eventlog-sink recv: listening on tcp:" || return 1
    expect_err_lines 2
}

# Nobody connects within --timeout: status 1, the output file of an
# earlier capture untouched, the socket file removed.
case_listen_timeout() {
    echo "earlier capture" >"$T/keep"
    recv_bounded recv --listen --timeout 0.3 -o "$T/keep" tcp:0
    expect_rc 1 || return 1
    expect_err "eventlog-sink recv: listening on tcp:127.0.0.1:" || return 1
    expect_err "eventlog-sink recv: no producer connected to tcp:127.0.0.1:" || return 1
    expect_err "within 0.3 s" || return 1
    expect_err_lines 2 || return 1
    [ "$(cat "$T/keep")" = "earlier capture" ] || why "-o file clobbered" || return 1

    rm -f "$T/t.sock"
    recv_bounded recv --listen --timeout 0.3 -o "$T/keep" "unix:$T/t.sock"
    expect_rc 1 || return 1
    expect_err "eventlog-sink recv: listening on unix:$T/t.sock" || return 1
    expect_err "no producer connected to unix:$T/t.sock within 0.3 s" || return 1
    expect_err_lines 2 || return 1
    [ ! -e "$T/t.sock" ] || why "socket file $T/t.sock left behind" || return 1
    [ "$(cat "$T/keep")" = "earlier capture" ] || why "-o file clobbered"
}

# An address someone else listens on is refused with status 1 and the
# other listener's socket file is left alone.
case_listen_in_use() {
    local endpoint first
    listen_bg tcp:0
    first=$LPID
    endpoint=$(listening_on "$first") || why "no 'listening on' line" || return 1
    mv "$T/err" "$T/err.first"
    recv_bounded recv --listen --timeout 5 "$endpoint"
    expect_rc 1 || return 1
    expect_err "cannot listen on $endpoint: Address already in use" || return 1
    expect_err_lines 1 || return 1
    kill -TERM "$first" 2>/dev/null
    wait_pid "$first" 60 || true

    rm -f "$T/live.sock"
    listen_bg "unix:$T/live.sock"
    first=$LPID
    listening_on "$first" >/dev/null || why "no 'listening on' line" || return 1
    mv "$T/err" "$T/err.first"
    recv_bounded recv --listen --timeout 5 "unix:$T/live.sock"
    expect_rc 1 || return 1
    expect_err "another process is listening on $T/live.sock" || return 1
    expect_err_lines 1 || return 1
    # The refusal's probe connected and closed without a byte: the first
    # receiver takes it for a probe and listens on (it used to be waited
    # for here, 60 s, as if it ended); stopped, it removes its socket file.
    kill -0 "$first" 2>/dev/null || why "the first receiver took the probe for a producer" || return 1
    kill -TERM "$first" 2>/dev/null
    wait_pid "$first" 60 || true
    [ ! -e "$T/live.sock" ] || why "socket file $T/live.sock left behind"
}

# refused_path PATH TEXT: --listen on unix:PATH fails with status 1 and
# TEXT, leaving PATH as it was.
refused_path() {
    local before
    before=$(stat -c '%F %i %s' "$1")
    recv_bounded recv --listen --timeout 5 "unix:$1"
    expect_rc 1 || return 1
    expect_err "refusing to replace $1: it is $2" || return 1
    expect_err_lines 1 || return 1
    [ "$(stat -c '%F %i %s' "$1")" = "$before" ] || why "$1 was changed"
}

case_listen_refuses_non_socket() {
    echo "precious" >"$T/plain.sock"
    refused_path "$T/plain.sock" "a regular file" || return 1
    [ "$(cat "$T/plain.sock")" = precious ] || why "contents changed" || return 1
    mkdir -p "$T/dir.sock"
    refused_path "$T/dir.sock" "a directory" || return 1
    rm -f "$T/fifo.sock"
    mkfifo "$T/fifo.sock"
    refused_path "$T/fifo.sock" "a FIFO"
}

# A socket file whose listener died (SIGKILL: no clean-up) is stale and
# replaced.  The new socket has mode 0600 whatever the umask (022 here),
# and a stop signal while waiting ends with status 1 and removes it.
case_listen_replaces_stale() {
    local s=$T/stale.sock rc=0
    rm -f "$s" "$T/copy"
    listen_bg "unix:$s"
    listening_on "$LPID" >/dev/null || why "no 'listening on' line" || return 1
    kill -KILL "$LPID"
    wait "$LPID" 2>/dev/null || true
    [ -S "$s" ] || why "no stale socket left by the killed receiver" || return 1

    listen_bg -o "$T/copy" "unix:$s"
    listening_on "$LPID" >/dev/null || why "did not listen over the stale socket" || return 1
    expect_err "eventlog-sink recv: listening on unix:$s" || return 1
    [ -S "$s" ] || why "$s is not a socket" || return 1
    [ "$(stat -c %a "$s")" = 600 ] || why "socket mode $(stat -c %a "$s"), expected 600" || return 1
    kill -TERM "$LPID"
    wait_pid "$LPID" 60 || rc=$?
    RC=$rc
    expect_rc 1 || return 1
    expect_err "eventlog-sink recv: stopped before a producer connected to unix:$s" || return 1
    expect_err_lines 2 || return 1
    [ ! -e "$s" ] || why "socket file $s left behind" || return 1
    [ ! -e "$T/copy" ] || why "output created though nobody connected"
}

# ---------------------------------------------------------------------------

CASES="help_and_version fifo_to_file fifo_to_stdout quiet truncated malformed
usage_errors unreachable retry writer_arrives_later closed_stdout sigterm
listen_tcp listen_ignores_probe listen_tcp_truncated listen_timeout listen_in_use
listen_refuses_non_socket listen_replaces_stale"
passed=0
failed=0
for c in $CASES; do
    if "case_$c"; then
        echo "ok - $c"
        passed=$((passed + 1))
    else
        echo "FAIL - $c"
        failed=$((failed + 1))
    fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
