# lib.sh: helpers sourced by the shell tests (tests/test_*.sh).
#
# It finds the source and build trees (ELS_TOP_SRCDIR, ELS_TOP_BUILDDIR from
# the Makefile's TESTS_ENVIRONMENT, else from this file's location), the
# built receiver and library, GHC and ghc-events; gives each test a private
# temporary directory removed on exit together with any background process
# the test registered; and offers waiting helpers with deadlines, a user-event
# counter built on the independent ghc-events reader, cached builds of the
# example programs, and, for the end-to-end tests, the steps they share:
# starting the program, a receiver or a collector and checking how each
# ended.  It runs no test itself.
#
# Exit statuses follow automake's harness: 0 pass, 1 fail, 77 skip.
#
# Usage (from a test):  . "$(dirname "$0")/lib.sh"   (after set -u if wanted)

# ---------------------------------------------------------------------------
# Trees and tools
# ---------------------------------------------------------------------------

els_lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${ELS_TOP_SRCDIR:=$(cd "$els_lib_dir/.." && pwd)}"
if [ -z "${ELS_TOP_BUILDDIR:-}" ]; then
    # Run by hand: prefer the out-of-tree build scripts/build.sh makes.
    if [ -f "$ELS_TOP_SRCDIR/_build/Makefile" ]; then
        ELS_TOP_BUILDDIR=$ELS_TOP_SRCDIR/_build
    else
        ELS_TOP_BUILDDIR=$ELS_TOP_SRCDIR
    fi
fi
export ELS_TOP_SRCDIR ELS_TOP_BUILDDIR

# ELS_TOOL_UNDER_TEST names another eventlog-sink binary to test in this
# tree's setting (scripts/sanitize.sh: the ASan+UBSan one, against the
# plain build's library, programs and patched RTS).
ELS_SINK_TOOL=${ELS_TOOL_UNDER_TEST:-$ELS_TOP_BUILDDIR/tools/eventlog-sink}
ELS_LIBDIR=$ELS_TOP_BUILDDIR/lib/.libs
ELS_SHLIB=$ELS_LIBDIR/libeventlog-sink.so
ELS_INCLUDEDIR=$ELS_TOP_SRCDIR/include
export ELS_SINK_TOOL ELS_LIBDIR ELS_SHLIB ELS_INCLUDEDIR

# configure found them (TESTS_ENVIRONMENT passes them, possibly empty);
# when run by hand, look on PATH.
if [ -z "${GHC:-}" ]; then GHC=$(command -v ghc 2>/dev/null || true); fi
if [ -z "${GHC_EVENTS:-}" ]; then GHC_EVENTS=$(command -v ghc-events 2>/dev/null || true); fi
export GHC GHC_EVENTS

els_test_name=$(basename "$0" .sh)

# ---------------------------------------------------------------------------
# Outcomes
# ---------------------------------------------------------------------------

# skip MSG: the test cannot run here (exit 77).  With ELS_REQUIRE_ALL=1
# (CI: .ci/run) a test that cannot run fails instead: there everything
# the test needs must be installed.
skip() {
    if [ -n "${ELS_REQUIRE_ALL:-}" ]; then
        echo "FAIL: $els_test_name: cannot run: $* (ELS_REQUIRE_ALL=1: a skip is a failure)" >&2
        exit 1
    fi
    echo "SKIP: $els_test_name: $*" >&2
    exit 77
}

# skip_part NAME MSG: one part of the test cannot run on this machine (it
# needs root, or a kernel feature); the rest goes on.  The line is listed
# in scripts/test-all.sh's summary.  Only for what depends on the machine,
# never on the project: such skips stay allowed under ELS_REQUIRE_ALL.
skip_part() {
    local name=$1
    shift
    echo "# SKIPPED PART: $els_test_name: $name: $*" >&2
}

# skip_part_dep NAME MSG: one part of the test cannot run because
# something the project depends on (scripts/install-deps.sh installs it)
# is missing: with ELS_REQUIRE_ALL=1 the test fails, otherwise the part
# is skipped (skip_part) and the rest goes on.
skip_part_dep() {
    local name=$1
    shift
    if [ -n "${ELS_REQUIRE_ALL:-}" ]; then
        fail "$name: cannot run: $* (ELS_REQUIRE_ALL=1: only what the machine lacks may skip)"
    fi
    skip_part "$name" "$*"
}

# part_needs NAME TOOL...: true if every TOOL is on PATH; otherwise part
# NAME is skipped for want of a dependency (skip_part_dep), status 1.
part_needs() {
    local name=$1 tool
    shift
    for tool in "$@"; do
        if ! command -v "$tool" >/dev/null 2>&1; then
            skip_part_dep "$name" "$tool not installed"
            return 1
        fi
    done
}

# part_runs_as NAME UID: true if part NAME can run commands as UID
# (can_run_as).  Otherwise the part is skipped, status 1: for want of
# root or of a usable, unprivileged UID (the machine's: allowed under
# ELS_REQUIRE_ALL), or of setpriv (a dependency: skip_part_dep).
part_runs_as() {
    local name=$1 uid=$2
    if [ "$(id -u)" -ne 0 ]; then
        skip_part "$name" "needs root to run commands as uid $uid"
        return 1
    fi
    part_needs "$name" setpriv || return 1
    if ! can_run_as "$uid"; then
        skip_part "$name" "uid $uid cannot be used as an unprivileged user here"
        return 1
    fi
}

# fail MSG: the test failed (exit 1).  Say what was expected and what came.
fail() {
    echo "FAIL: $els_test_name: $*" >&2
    exit 1
}

# note MSG: progress line in the test's .log file.
note() {
    echo "# $*" >&2
}

# ---------------------------------------------------------------------------
# Temporary directory and background processes
# ---------------------------------------------------------------------------

els_bg_pids=()
ELS_TMP=

els_cleanup() {
    local rc=$? pid
    for pid in "${els_bg_pids[@]}"; do
        if kill -0 "$pid" 2>/dev/null; then
            kill "$pid" 2>/dev/null || true
        fi
    done
    for pid in "${els_bg_pids[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    if [ -n "$ELS_TMP" ] && [ -d "$ELS_TMP" ]; then
        if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && [ -n "${ELS_KEEP_TMP:-}" ]; then
            echo "# kept $ELS_TMP" >&2
        else
            rm -rf "$ELS_TMP"
        fi
    fi
    return "$rc"
}

# make_tmpdir: create $ELS_TMP (short path: UNIX socket paths must fit in
# sun_path) and remove it, and stop registered processes, on exit.
# ELS_KEEP_TMP=1 keeps it after a failure.
make_tmpdir() {
    local base=${TMPDIR:-/tmp}
    [ "${#base}" -le 60 ] || base=/tmp
    ELS_TMP=$(mktemp -d "$base/els-$els_test_name.XXXXXX") || fail "mktemp failed"
    trap els_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

# bg_register PID: kill PID on exit if it is still running.
bg_register() {
    els_bg_pids+=("$1")
}

# ---------------------------------------------------------------------------
# Deadlines and waiting (generous deadlines, never timing thresholds)
# ---------------------------------------------------------------------------

# deadline_set SECS: start a deadline SECS from now (one per test).
deadline_set() {
    ELS_DEADLINE=$(( $(date +%s) + $1 ))
}

# deadline_passed: true once the deadline set by deadline_set has passed.
deadline_passed() {
    [ "$(date +%s)" -ge "${ELS_DEADLINE:?deadline_set first}" ]
}

# wait_until SECS CMD...: run CMD every 0.1 s until it succeeds (0) or
# SECS seconds have passed (1).
wait_until() {
    local secs=$1 end
    shift
    end=$(( $(date +%s) + secs ))
    while ! "$@"; do
        [ "$(date +%s)" -lt "$end" ] || return 1
        sleep 0.1
    done
    return 0
}

# wait_for_file PATH [SECS]: wait until PATH exists (a file, socket or
# FIFO); 1 if it did not appear within SECS (default 10).
wait_for_file() {
    wait_until "${2:-10}" test -e "$1"
}

# wait_pid PID [SECS]: wait for background child PID to exit and return its
# status; if it is still running after SECS (default 60), kill it and
# return 124.
wait_pid() {
    local pid=$1 secs=${2:-60} rc=0
    if ! wait_until "$secs" els_pid_gone "$pid"; then
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        return 124
    fi
    wait "$pid" || rc=$?
    return "$rc"
}

els_pid_gone() {
    ! kill -0 "$1" 2>/dev/null
}

# ---------------------------------------------------------------------------
# Requirements
# ---------------------------------------------------------------------------

# require_tool: skip unless the receiver was built.
require_tool() {
    [ -x "$ELS_SINK_TOOL" ] || skip "receiver not built: $ELS_SINK_TOOL"
}

# require_ghc: skip unless GHC with RTS headers, ghc-events and the shared
# library with its GHC glue are all there.
require_ghc() {
    [ -n "$GHC" ] && command -v "$GHC" >/dev/null 2>&1 || skip "GHC not found"
    [ -n "$GHC_EVENTS" ] && command -v "$GHC_EVENTS" >/dev/null 2>&1 || skip "ghc-events not found"
    if [ -z "${GHC_INCLUDE_DIR:-}" ]; then
        local libdir
        libdir=$("$GHC" --print-libdir 2>/dev/null) || skip "$GHC --print-libdir failed"
        [ -f "$libdir/include/Rts.h" ] || skip "GHC has no RTS headers (Rts.h)"
    fi
    [ -e "$ELS_SHLIB" ] || skip "shared library not built: $ELS_SHLIB"
}

# require_hsc2hs: skip unless hsc2hs is installed (it generates
# GHC.Eventlog.Sink from its .hsc for the tests that build the Haskell
# package without cabal); a dependency, so a failure under
# ELS_REQUIRE_ALL.  Sets HSC2HS.
require_hsc2hs() {
    if [ -z "${HSC2HS:-}" ]; then HSC2HS=$(command -v hsc2hs 2>/dev/null || true); fi
    [ -n "$HSC2HS" ] || skip "hsc2hs not installed (it builds GHC.Eventlog.Sink)"
}

# ---------------------------------------------------------------------------
# Reading eventlogs with ghc-events
# ---------------------------------------------------------------------------

# ghc-events 0.17 `show` prints each event as "TIME: cap N: TEXT" (or
# "TIME: TEXT" for events without a capability).  A traceEventIO message
# prints as its bare text, exactly like an RTS log message (so do the
# library's in-band loss notices), and traceMarkerIO as "marker: TEXT": a
# user event is therefore recognised by its text, which hello-stream makes
# "hello-stream N".

# show_events FILE OUT: ghc-events show FILE > OUT; fails if ghc-events
# cannot parse FILE (it accepts a log cut at an event boundary, so callers
# must also count).
show_events() {
    "$GHC_EVENTS" show "$1" >"$2" 2>"$2.err" || {
        echo "# ghc-events show $1: $(head -c 400 "$2.err")" >&2
        return 1
    }
}

# count_user_events FILE [PREFIX]: print how many user events whose message
# starts with PREFIX (default "hello-stream ") FILE holds; status 1 if
# ghc-events cannot parse FILE.
count_user_events() {
    local file=$1 prefix=${2:-hello-stream } shown
    shown=$(mktemp "${ELS_TMP:-${TMPDIR:-/tmp}}/show.XXXXXX")
    if ! show_events "$file" "$shown"; then
        rm -f "$shown" "$shown.err"
        return 1
    fi
    # Fixed-string match on the part after "cap N: ": no regex
    # metacharacters from PREFIX leak in.
    awk -v p="$prefix" '
        /^ *[0-9]+: / {
            sub(/^ *[0-9]+: (cap [0-9]+: )?/, "")
            if (index($0, p) == 1) n++
        }
        END { print n + 0 }' "$shown"
    rm -f "$shown" "$shown.err"
}

# count_events FILE: print how many events (of any kind) FILE holds;
# status 1 if ghc-events cannot parse it.
count_events() {
    local file=$1 shown
    shown=$(mktemp "${ELS_TMP:-${TMPDIR:-/tmp}}/show.XXXXXX")
    if ! show_events "$file" "$shown"; then
        rm -f "$shown" "$shown.err"
        return 1
    fi
    awk '/^Events:/ { on = 1; next } on && /^ *[0-9]+: / { n++ } END { print n + 0 }' "$shown"
    rm -f "$shown" "$shown.err"
}

# ---------------------------------------------------------------------------
# The example program
# ---------------------------------------------------------------------------

# build_example: compile examples/hello-stream against the built shared
# library, once per build tree (cached in
# $ELS_TOP_BUILDDIR/examples/hello-stream/out and rebuilt only when a
# source or the library is newer), and set HELLO_STREAM to the program.
build_example() {
    local out log
    log=${ELS_TMP:-${TMPDIR:-/tmp}}/build-example.log
    if ! out=$(GHC=$GHC "$ELS_TOP_SRCDIR/examples/hello-stream/build.sh" \
                   "$ELS_TOP_BUILDDIR" "$ELS_TOP_BUILDDIR/examples/hello-stream/out" 2>"$log"); then
        cat "$log" >&2
        fail "could not build examples/hello-stream"
    fi
    HELLO_STREAM=$(printf '%s\n' "$out" | tail -n 1)
    [ -x "$HELLO_STREAM" ] || fail "build.sh did not produce a program ($HELLO_STREAM)"
}

# free_tcp_port: print a TCP port on 127.0.0.1 that nothing listens on now
# (a random one in 20000..59999 not in /proc/net/tcp{,6}).  Another process
# may take it before we bind: callers retry on "address in use".
free_tcp_port() {
    local port hex
    for _ in $(seq 1 50); do
        port=$(( 20000 + (RANDOM * 32768 + RANDOM) % 40000 ))
        hex=$(printf '%04X' "$port")
        # awk reads to the end: a `grep -q` here would leave the writer
        # to die of SIGPIPE, a failed pipeline under pipefail.
        if ! cat /proc/net/tcp /proc/net/tcp6 2>/dev/null \
                | awk -v p=":$hex" 'substr($2, length($2) - 4) == p { f = 1 } END { exit !f }'; then
            echo "$port"
            return 0
        fi
    done
    return 1
}

# ---------------------------------------------------------------------------
# The patched RTS (rts-patches/) and examples/live-service
# ---------------------------------------------------------------------------

# Where `make` built the patched RTS (TESTS_ENVIRONMENT passes it; by hand
# it is the build tree's patched-rts/) and its compiler driver.
if [ -z "${ELS_PATCHED_RTS_DIR:-}" ]; then
    ELS_PATCHED_RTS_DIR=$ELS_TOP_BUILDDIR/patched-rts
fi
ELS_PATCHED_GHC=$ELS_PATCHED_RTS_DIR/bin/ghc-eventlog-sink
export ELS_PATCHED_RTS_DIR ELS_PATCHED_GHC

# require_patched_rts: skip unless the patched RTS's ghc-eventlog-sink was
# built (configure found the GHC version the series is for and was not
# given --disable-patched-rts).
require_patched_rts() {
    if [ ! -x "$ELS_PATCHED_GHC" ]; then
        if [ -f "$ELS_PATCHED_RTS_DIR/SKIPPED" ]; then
            skip "no patched RTS: $(head -n 1 "$ELS_PATCHED_RTS_DIR/SKIPPED")"
        fi
        skip "no patched RTS ($ELS_PATCHED_GHC): configure found no GHC the series is for, or --disable-patched-rts"
    fi
}

# patched_ghc_lib ARGS...: compile with the patched RTS, against the built
# shared library (-leventlog-sink is added; give -rtsopts etc. yourself).
patched_ghc_lib() {
    "$ELS_PATCHED_GHC" "$@" -L"$ELS_LIBDIR" -leventlog-sink -optl-Wl,-rpath,"$ELS_LIBDIR"
}

# newer_than_patched_build PROG SRC: true when PROG exists and is newer than
# SRC, the library and the patched RTS it was linked with (no rebuild due).
newer_than_patched_build() {
    local prog=$1 dep
    shift
    [ -x "$prog" ] || return 1
    for dep in "$@" "$ELS_SHLIB" "$ELS_PATCHED_GHC" \
               "$ELS_PATCHED_RTS_DIR"/lib/rts/libHSrts*.a; do
        [ -e "$dep" ] || continue
        [ "$prog" -nt "$dep" ] || return 1
    done
    return 0
}

# setup_live_service_test: the common start of the patched-RTS tests: skip
# (77) without the receiver, GHC, ghc-events or the patched RTS; make the
# temporary directory T; build examples/live-service (LIVE_SERVICE).
setup_live_service_test() {
    require_tool
    require_ghc
    require_patched_rts
    make_tmpdir
    build_live_service
    note "program: $LIVE_SERVICE"
    T=$ELS_TMP
    PROGRAM_LABEL=live-service
}

# build_live_service: compile examples/live-service with the patched RTS
# (-threaded -eventlog -rtsopts) and the built shared library, once per
# build tree: cached in $ELS_TOP_BUILDDIR/examples/live-service/out and
# rebuilt only when Main.hs, the library or the patched RTS is newer.
# Concurrent callers serialise on a lock file.  Sets LIVE_SERVICE.
build_live_service() {
    local src=$ELS_TOP_SRCDIR/examples/live-service/Main.hs
    local out=$ELS_TOP_BUILDDIR/examples/live-service/out
    local prog=$out/live-service log
    log=${ELS_TMP:-${TMPDIR:-/tmp}}/build-live-service.log
    mkdir -p "$out" || fail "cannot create $out"
    (
        if command -v flock >/dev/null 2>&1; then
            exec 9>"$out/.build.lock"
            flock 9
        fi
        ! newer_than_patched_build "$prog" "$src" || exit 0
        # The source directory is read-only under distcheck: compile a
        # copy in a work directory, move the program into place in one
        # step (a concurrent reader never sees half a file).
        rm -rf "$out/work"
        mkdir -p "$out/work"
        cp "$src" "$out/work/Main.hs"
        (cd "$out/work" && patched_ghc_lib -v0 -O -threaded -eventlog -rtsopts \
            -outputdir obj Main.hs -o live-service) >"$log" 2>&1 || exit 1
        mv -f "$out/work/live-service" "$prog" && rm -rf "$out/work"
    ) || {
        sed 's/^/#   /' "$log" >&2
        fail "could not build examples/live-service with $ELS_PATCHED_GHC"
    }
    LIVE_SERVICE=$prog
    [ -x "$LIVE_SERVICE" ] || fail "no program at $LIVE_SERVICE after the build"
}

# count_shown_user_events SHOWN [PREFIX]: like count_user_events, on the
# output of show_events (so that one `ghc-events show` serves several
# checks).
count_shown_user_events() {
    awk -v p="${2:-hello-stream }" '
        /^ *[0-9]+: / {
            sub(/^ *[0-9]+: (cap [0-9]+: )?/, "")
            if (index($0, p) == 1) n++
        }
        END { print n + 0 }' "$1"
}

# has_shown_event SHOWN TEXT: true if an event in the output of show_events
# reads exactly TEXT once its "TIME: [cap N: ]" prefix is removed.
has_shown_event() {
    awk -v t="$2" '
        /^ *[0-9]+: / {
            sub(/^ *[0-9]+: (cap [0-9]+: )?/, "")
            if ($0 == t) { found = 1; exit }
        }
        END { exit !found }' "$1"
}

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

# ---------------------------------------------------------------------------
# Faults, security and soak (test_faults.sh, test_security.sh,
# scripts/soak.sh).  These helpers only look and report: they return a
# status and set variables, and leave failing to the caller, so that the
# soak script can count what a test would stop at.
# ---------------------------------------------------------------------------

# stream_header_len FILE: print the length of the eventlog header FILE
# starts with (from "hdrb" through "datb"); 1 if FILE does not start with
# "hdrb" or does not hold the whole header yet.  Meant for the start of a
# stream (grep stops at the first "datb").
stream_header_len() {
    local off
    [ "$(head -c 4 "$1" 2>/dev/null)" = hdrb ] || return 1
    off=$(head -c 1048576 "$1" | grep -obUaF -m 1 datb | head -n 1 | cut -d: -f1)
    [ -n "$off" ] || return 1
    echo $((off + 4))
}

# stream_has_data FILE [BYTES]: true once FILE holds the whole header and
# at least BYTES (default 200) bytes after it: a block marker and some
# events of the first block.
stream_has_data() {
    local h size
    h=$(stream_header_len "$1") || return 1
    size=$(stat -c %s "$1" 2>/dev/null) || return 1
    [ "$size" -ge $((h + ${2:-200})) ]
}

# validate_stream FILE SHOWN [PREFIX]: read FILE with ghc-events (output in
# SHOWN) and judge it as a captured stream: it starts with the header,
# ghc-events exits 0 and prints nothing on stderr, and no user event text
# starting with PREFIX (default "live-service ") occurs twice (every
# workload of live-service numbers its events).  Sets vs_events (all
# events), vs_user (events starting with PREFIX), vs_dups (repeated user
# event texts), vs_notes (in-band loss notes: "... dropped here" and
# "this consumer missed ..." from the library), vs_joined (notes that the
# consumer joined after earlier units had left the queue) and, on
# failure, vs_why.
# Status 0 if the stream is valid.  A stream cut anywhere (a killed
# consumer, a killed program) is valid: ghc-events reads such a prefix
# without complaint, which is why callers also compare counts.
validate_stream() {
    local file=$1 shown=$2 prefix=${3:-live-service } rc=0
    vs_events=0 vs_user=0 vs_dups=0 vs_notes=0 vs_joined=0 vs_why=
    if [ ! -s "$file" ]; then
        vs_why="$file is missing or empty"
        return 1
    fi
    if [ "$(head -c 4 "$file")" != hdrb ]; then
        vs_why="$file does not start with the eventlog header (hdrb): $(head -c 4 "$file" | od -An -c | tr -s ' ')"
        return 1
    fi
    "$GHC_EVENTS" show "$file" >"$shown" 2>"$shown.err" || rc=$?
    if [ "$rc" -ne 0 ] || [ -s "$shown.err" ]; then
        vs_why="ghc-events show exited $rc: $(head -c 300 "$shown.err")"
        return 1
    fi
    read -r vs_events vs_user vs_dups vs_notes vs_joined < <(awk -v p="$prefix" '
        /^Events:/ { on = 1; next }
        on && /^ *[0-9]+: / {
            n++
            sub(/^ *[0-9]+: (cap [0-9]+: )?/, "")
            if (index($0, p) == 1) { u++; if (seen[$0]++) d++ }
            if (index($0, "eventlog-sink: ") == 1 &&
                ($0 ~ / dropped here: / || $0 ~ /^eventlog-sink: this consumer missed /))
                l++
            if (index($0, "eventlog-sink: consumer ") == 1 && $0 ~ / joined mid-run; /)
                j++
        }
        END { print n + 0, u + 0, d + 0, l + 0, j + 0 }' "$shown")
    if [ "$vs_dups" -ne 0 ]; then
        vs_why="$vs_dups user events occur more than once"
        return 1
    fi
    return 0
}

# recv_events ERRFILE: print the number of events `eventlog-sink recv`
# reported on its stderr ("received N bytes, E events, ..."); 1 if it
# printed no such line (it was killed with SIGKILL).
recv_events() {
    sed -n 's/^eventlog-sink recv: received [0-9]* bytes, \([0-9]*\) events.*/\1/p' "$1" \
        | tail -n 1 | grep .
}

# loss_lines ERRFILE: print the writer's loss report lines from a
# program's stderr ("SINK: dropped N of M units (...): CAUSE N, ..." and
# "SINK: slow consumers missed N units (...) ..."); 1 if there are none.
loss_lines() {
    grep -E '^eventlog-sink: .*: (dropped [0-9]+ of [0-9]+ units \([0-9]+ bytes\): [a-z-]+ [0-9]+|slow consumers missed [0-9]+ units)' "$1"
}

# Loss causes as the writer names them in its loss report at exit and in
# its in-band notes (els_drop_cause_name).  Tests name a cause only through
# these variables, so a renamed cause changes here, once.
#   units still queued at exit in a program that never had a consumer:
ELS_CAUSE_NEVER_CONSUMED=no-consumer
#   units released for room while no consumer was connected:
ELS_CAUSE_RELEASED_UNCONSUMED=no-consumer
#   units a slow consumer (the only one) was cut loose from:
ELS_CAUSE_CUT_LOOSE=slow-consumer
#   units every consumer failed to take (ENOSPC on a file):
ELS_CAUSE_SINK_FAILED=sink-error
#   units still queued for a connected consumer at the linger= deadline:
ELS_CAUSE_LINGER=stopped

# loss_figures ERRFILE: parse the writer's loss report ("SINK: dropped N of
# M units (B bytes): CAUSE N, CAUSE N") on a program's stderr into
# lf_dropped, lf_accepted, lf_bytes and lf_causes ("cause=N ..."); status 1
# (all zero) if there is none.  The per-cause counts must add up to N, or
# the report itself is wrong: then status 2 and lf_why.
loss_figures() {
    local line rest
    lf_dropped=0 lf_accepted=0 lf_bytes=0 lf_causes='' lf_why=''
    line=$(grep -E '^eventlog-sink: .*: dropped [0-9]+ of [0-9]+ units \([0-9]+ bytes\): ' "$1" | tail -n 1)
    [ -n "$line" ] || return 1
    read -r lf_dropped lf_accepted lf_bytes < <(printf '%s\n' "$line" |
        sed -E 's/.*: dropped ([0-9]+) of ([0-9]+) units \(([0-9]+) bytes\): .*/\1 \2 \3/')
    rest=${line##*bytes): }
    lf_causes=$(printf '%s\n' "$rest" | tr ',' '\n' | awk 'NF == 2 { printf "%s=%s ", $1, $2 }')
    local sum
    sum=$(printf '%s\n' "$lf_causes" | tr ' ' '\n' | awk -F= 'NF == 2 { n += $2 } END { print n + 0 }')
    if [ "$sum" -ne "$lf_dropped" ]; then
        lf_why="the causes add up to $sum, the report says $lf_dropped dropped: $line"
        return 2
    fi
    return 0
}

# loss_cause CAUSE: the count loss_figures found for CAUSE (0 if absent).
loss_cause() {
    printf '%s\n' "$lf_causes" | tr ' ' '\n' | awk -F= -v c="$1" '$1 == c { n += $2 } END { print n + 0 }'
}

# check_noted_losses NAME ERRFILE CAUSE UNITS BYTES: the in-band notes of
# a stream said UNITS units (BYTES bytes) were lost for CAUSE; the loss
# report on the program's stderr (ERRFILE) must exist, add up, count
# exactly UNITS under CAUSE and, when CAUSE is its only cause, BYTES bytes.
check_noted_losses() {
    local name=$1 err=$2 cause=$3 units=$4 bytes=$5 rc=0
    loss_figures "$err" || rc=$?
    [ "$rc" -ne 1 ] || fail_showing "$err" "$name: the stream was told of $units lost units ($cause), but the program reported no loss at exit"
    [ "$rc" -eq 0 ] || fail "$name: $lf_why"
    [ "$(loss_cause "$cause")" -eq "$units" ] \
        || fail "$name: the stream's notes count $units units; the loss report counts $(loss_cause "$cause") as $cause ($lf_causes)"
    if [ "$lf_causes" = "$cause=$units " ]; then
        [ "$lf_bytes" -eq "$bytes" ] \
            || fail "$name: the stream's notes count $bytes bytes; the loss report says $lf_bytes"
    fi
}

# wait_count SECS FILE PATTERN N: wait until at least N lines of FILE
# match the grep pattern PATTERN; 1 if SECS passed first.
els_count_at_least() {
    [ "$(grep -c -- "$2" "$1" 2>/dev/null)" -ge "$3" ]
}
wait_count() {
    wait_until "$1" els_count_at_least "$2" "$3" "$4"
}

# rss_kb PID: print the resident set size of PID in KiB; 1 if PID is gone.
rss_kb() {
    awk '/^VmRSS:/ { print $2; found = 1 } END { exit !found }' "/proc/$1/status" 2>/dev/null
}

# as_user UID CMD...: run CMD with real and effective user and group UID
# and no supplementary groups (setpriv, util-linux).
as_user() {
    local uid=$1
    shift
    setpriv --reuid="$uid" --regid="$uid" --clear-groups -- "$@"
}

# as_user_bg UID COMMAND [ARGS...]: as_user in the background, with $!
# the command itself (setpriv execs it), so that killing $! (or the
# EXIT trap's bg_register cleanup) stops it; a backgrounded function
# would leave $! naming a subshell and the command running on.
as_user_bg() {
    local uid=$1
    shift
    setpriv --reuid="$uid" --regid="$uid" --clear-groups -- "$@" &
}

# can_run_as UID: true if this process can run commands as UID (root with
# setpriv, and UID really unprivileged: it cannot read a root-only file).
can_run_as() {
    [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1 || return 1
    [ "$(as_user "$1" id -u 2>/dev/null)" = "$1" ] || return 1
    ! as_user "$1" test -r /proc/1/environ 2>/dev/null
}

# can_load_as UID PROGRAM: true if UID can load PROGRAM and its shared
# libraries (the build tree's libeventlog-sink.so sits under the clone,
# which a private directory such as a 0700 home or mktemp -d hides from
# other users).
can_load_as() {
    local missing
    missing=$(as_user "$1" ldd "$2" 2>&1) || return 1
    ! printf '%s\n' "$missing" | grep -q 'not found'
}

# build_tiny_program NAME GHC-ARGS...: compile a one-line Haskell program
# (one user event "tiny", then "tiny ran" on stdout) with the patched RTS's
# driver and GHC-ARGS, cached in
# $ELS_TOP_BUILDDIR/examples/live-service/out/tiny-lib/NAME (rebuilt when
# this file, the library or the patched RTS is newer; concurrent callers
# serialise on a lock).  Use patched_ghc_lib as the first GHC-ARG to link
# the library.  Sets TINY_PROGRAM.
build_tiny_program() {
    local name=$1 dir=$ELS_TOP_BUILDDIR/examples/live-service/out/tiny-lib log
    shift
    log=${ELS_TMP:-${TMPDIR:-/tmp}}/tiny-$name.log
    mkdir -p "$dir" || fail "cannot create $dir"
    (
        if command -v flock >/dev/null 2>&1; then exec 9>"$dir/.lock"; flock 9; fi
        p=$dir/$name
        ! newer_than_patched_build "$p" "${BASH_SOURCE[0]}" || exit 0
        rm -rf "$dir/work-$name"
        mkdir -p "$dir/work-$name"
        printf '%s\n' 'import Debug.Trace (traceEventIO)' 'main :: IO ()' \
            'main = traceEventIO "tiny" >> putStrLn "tiny ran"' >"$dir/work-$name/Tiny.hs"
        (cd "$dir/work-$name" && "$@" -v0 -outputdir obj Tiny.hs -o "$name") >"$log" 2>&1 \
            || exit 1
        mv -f "$dir/work-$name/$name" "$p" && rm -rf "$dir/work-$name"
    ) || {
        sed 's/^/#   /' "$log" >&2
        fail "could not build the test program $name ($*)"
    }
    TINY_PROGRAM=$dir/$name
}

# ---------------------------------------------------------------------------
# tests/programs/Controlled.hs: a program that runs until the test says stop
# ---------------------------------------------------------------------------

# build_controlled KIND: compile tests/programs/Controlled.hs and set
# CONTROLLED.  KIND patched: with the patched RTS's driver (-threaded
# -eventlog -rtsopts; the sink comes from +RTS --eventlog-sink=SPEC).
# KIND stock: with the stock GHC and examples/hello-stream/main.c as its C
# main (the sink comes from EVENTLOG_SINK).  Both link the built shared
# library.  Cached in $ELS_TOP_BUILDDIR/tests/programs/out/KIND, rebuilt
# when a source, the library or (patched) the patched RTS is newer;
# concurrent callers serialise on a lock.
build_controlled() {
    local kind=$1 src=$ELS_TOP_SRCDIR/tests/programs/Controlled.hs
    local cmain=$ELS_TOP_SRCDIR/examples/hello-stream/main.c
    local dir=$ELS_TOP_BUILDDIR/tests/programs/out/$kind log
    log=${ELS_TMP:-${TMPDIR:-/tmp}}/build-controlled-$kind.log
    mkdir -p "$dir" || fail "cannot create $dir"
    (
        if command -v flock >/dev/null 2>&1; then exec 9>"$dir/.lock"; flock 9; fi
        p=$dir/controlled
        if [ "$kind" = patched ]; then
            ! newer_than_patched_build "$p" "$src" "${BASH_SOURCE[0]}" || exit 0
        elif [ -x "$p" ]; then
            fresh=1
            for dep in "$src" "$cmain" "$ELS_SHLIB" "$ELS_INCLUDEDIR/eventlog-sink/ghc.h" \
                       "${BASH_SOURCE[0]}"; do
                [ "$p" -nt "$dep" ] || fresh=0
            done
            [ "$fresh" -eq 0 ] || exit 0
        fi
        # ghc writes a C file's object next to the source: compile copies.
        rm -rf "$dir/work"
        mkdir -p "$dir/work"
        cp "$src" "$dir/work/Controlled.hs"
        case "$kind" in
            patched)
                (cd "$dir/work" && patched_ghc_lib -v0 -O -threaded -eventlog -rtsopts \
                    -outputdir obj Controlled.hs -o controlled) ;;
            stock)
                cp "$cmain" "$dir/work/main.c"
                (cd "$dir/work" && "$GHC" -v0 -O -threaded -eventlog -no-hs-main \
                    -I"$ELS_INCLUDEDIR" -outputdir obj Controlled.hs main.c \
                    -L"$ELS_LIBDIR" -leventlog-sink -optl-Wl,-rpath,"$ELS_LIBDIR" \
                    -o controlled) ;;
            *) echo "build_controlled: unknown kind $kind" >&2; exit 1 ;;
        esac >"$log" 2>&1 || exit 1
        mv -f "$dir/work/controlled" "$p" && rm -rf "$dir/work"
    ) || {
        sed 's/^/#   /' "$log" >&2
        fail "could not build tests/programs/Controlled.hs ($kind)"
    }
    CONTROLLED=$dir/controlled
}

# start_controlled NAME CMD ARGS...: like start_program, with the program's
# standard input a FIFO that the test holds open (ctl_fd): the program
# (Controlled.hs) runs until stop_controlled.  One at a time.
start_controlled() {
    local name=$1 fifo=$ELS_TMP/$1.ctl
    shift
    rm -f "$fifo"
    mkfifo "$fifo" || fail "$name: mkfifo $fifo"
    prog_args=("$@")
    # The background shell blocks opening the FIFO until we open its
    # other end just below.
    "$@" <"$fifo" >"$ELS_TMP/$name.prog.out" 2>"$ELS_TMP/$name.prog.err" &
    ppid=$!
    bg_register "$ppid"
    exec {ctl_fd}>"$fifo"
}

# tell_controlled LINE: send LINE to the program started by
# start_controlled (see Controlled.hs for what it understands).
tell_controlled() {
    printf '%s\n' "$1" >&"$ctl_fd"
}

# stop_controlled: tell the program started by start_controlled to finish.
stop_controlled() {
    # In a subshell that ignores SIGPIPE: the program may be dead already
    # (killed by the test), and a write to a FIFO nobody reads must not
    # kill the test.
    (trap '' PIPE; echo stop >&"$ctl_fd") 2>/dev/null || true
    exec {ctl_fd}>&-
}

# wait_output NAME LINE [SECS]: wait (default 60 s, a hang guard) until
# the program (ppid) printed LINE (a whole line, fixed string) on stdout;
# fail, showing its stderr, if it exits or the guard passes first.
els_printed_or_gone() {
    grep -qxF -- "$2" "$1" || ! kill -0 "$3" 2>/dev/null
}
wait_output() {
    local out=$ELS_TMP/$1.prog.out
    wait_until "${3:-60}" els_printed_or_gone "$out" "$2" "$ppid" \
        || fail_showing "$ELS_TMP/$1.prog.err" "$1: the program did not print '$2' within ${3:-60} s"
    grep -qxF -- "$2" "$out" \
        || fail_showing "$ELS_TMP/$1.prog.err" "$1: the program ended without printing '$2'"
}
