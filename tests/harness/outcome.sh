# outcome.sh (sourced by tests/harness.sh): how a test ends (pass, fail,
# skip, skipped parts), its private temporary directory and background
# processes, and waiting with deadlines that guard against hangs and are
# never a verdict on speed.

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
els_own_runtime_dir=

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
    # The discovery directories made for this test (tests/harness.sh,
    # as_user_runtime_dir).
    if [ -n "$ELS_TMP" ]; then
        rm -rf "$ELS_TMP".run-[0-9]*
    fi
    if [ -n "$els_own_runtime_dir" ]; then
        rm -rf "$els_own_runtime_dir"
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
