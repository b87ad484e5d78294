#!/bin/bash
# test_recv.sh: the `eventlog-sink recv` command, driven through FIFOs.
#
# Serves a real eventlog (written by a GHC program compiled here, or the
# file named by ELS_SAMPLE_EVENTLOG) through FIFOs and checks what the
# receiver writes, says and returns: a complete stream (to a file and to
# standard output), a truncated one, malformed ones, usage errors,
# unreachable endpoints, --retry, a closed output pipe and SIGTERM in the
# middle of a stream.  The socket paths (unix:, tcp:) need a producer and
# are covered by the end-to-end tests against the library.  Skips (77) only
# when there is neither a sample file nor a GHC to make one.
#
# Uses $ELS_TOP_BUILDDIR/tools/eventlog-sink, or the program named by
# RECV=path when set.

set -eu

. "$(dirname "$0")/lib.sh"

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
note "sample: $SAMPLE ($SIZE bytes)"

# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

# recv ARGS...: run the receiver with stdout to $T/out, stderr to $T/err;
# sets RC.  Never aborts the script.
recv() {
    RC=0
    "$RECV" "$@" >"$T/out" 2>"$T/err" </dev/null || RC=$?
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
    grep -qE "^eventlog-sink recv: received $SIZE bytes, [1-9][0-9]* events, [1-9][0-9]* blocks\$" \
        "$T/err" || why "no summary line"
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

case_retry() {
    local f=$T/late pid rc=0
    rm -f "$f"
    "$RECV" recv --retry 60 -o "$T/copy" "fifo:$f" 2>"$T/err" </dev/null &
    pid=$!
    bg_register "$pid"
    # Give it a moment to find the FIFO absent; if it was slower, the FIFO
    # is simply there at its first try and the case still holds.
    sleep 0.5
    kill -0 "$pid" 2>/dev/null || why "receiver gave up at once" || return 1
    mkfifo "$f"
    serve "$f" "$SAMPLE"
    wait_pid "$pid" 60 || rc=$?
    RC=$rc
    expect_rc 0 || return 1
    expect_same "$T/copy" "$SAMPLE" || return 1

    # Retrying ends after SECS.
    recv recv --retry 0.3 "fifo:$T/never"
    expect_rc 1 || return 1
    expect_err "(retried for 0.3 s)" || return 1
    expect_err_lines 1
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

# ---------------------------------------------------------------------------

CASES="help_and_version fifo_to_file fifo_to_stdout quiet truncated malformed
usage_errors unreachable retry writer_arrives_later closed_stdout sigterm"
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
