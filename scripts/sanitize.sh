#!/usr/bin/env bash
# sanitize.sh: build and run the unit tests under AddressSanitizer +
# UndefinedBehaviorSanitizer and under ThreadSanitizer, and the tool's
# shell tests against an ASan+UBSan eventlog-sink.
#
# Two out-of-tree builds, _build-asan and _build-tsan, configured with the
# sanitizer flags and --disable-shared (the unit tests link the core
# statically; no libtool wrappers), each running `make check` of the unit
# tests.  The ASan+UBSan run adds the shell tests of the tool's commands
# (recv, dump, ctl, top, serve and its /metrics, serve --all's webhook:
# TOOL_TESTS below), which then drive that tree's sanitized
# tools/eventlog-sink (all subcommands;
# tests/harness.sh's ELS_TOOL_UNDER_TEST).  They run in the plain build's
# setting (PLAIN_BUILD, default _build: its TESTS_ENVIRONMENT, so its GHC,
# ghc-events, patched RTS, shared library and cached programs): the GHC
# programs load the plain library, whose RTS is not built with
# sanitizers; the tool is what is under test.  Without a configured plain
# build only the tool tests that need no GHC program run.  The other
# shell tests are left to the plain build (scripts/test-all.sh).
# Any sanitizer report fails the test that produced it (halt_on_error, no
# recovery, exit status 86 so that a report is never mistaken for an
# expected status; the unit-test harness runs LeakSanitizer's check at the
# end of every case, tests/check.h; the tool's at its exit).  Needs
# configure (run scripts/build.sh first, or this script runs autoreconf
# like it does).
#
# The TSan tree builds only what its unit tests need (the library and the
# test programs): the tool runs only under ASan+UBSan.  Each test gets
# its own discovery directory, as in the plain build (AM_TESTS_ENVIRONMENT,
# which the TESTS_ENVIRONMENT given here leaves alone).
#
# Usage: scripts/sanitize.sh [asan|tsan]...   (default: both)
# Environment: CC (default: configure's choice), MAKE_JOBS (default 2),
# PLAIN_BUILD (default _build), PATCHED_RTS_DIR (passed to the plain
# build's settings when given).
# Exit status: 0 if every run passed.  The test-suite.log of each run is
# at _build-<kind>/test-suite.log, and the list of the tests it was to
# run at _build-<kind>/tests.list (scripts/test-all.sh checks that each
# has a result).
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"
jobs=${MAKE_JOBS:-2}

kinds=("$@")
[ "${#kinds[@]}" -gt 0 ] || kinds=(asan tsan)

if [ ! -x configure ]; then
    echo "sanitize: autoreconf -fi"
    autoreconf -fi
fi

# verify_asan_link_order=0: test_recv_listen.sh preloads a bind() shim
# (LD_PRELOAD) into the tool, ahead of the ASan runtime.
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1:verify_asan_link_order=0:exitcode=86"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=86"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:exitcode=86"
export LSAN_OPTIONS="${LSAN_OPTIONS:-}"

# The unit test programs, read from the configured Makefile so the list
# stays the one in Makefile.am.
unit_tests() {
    # shellcheck disable=SC2016 # $(UNIT_TESTS) is for make, not the shell
    printf 'els-print-unit-tests:\n\t@echo $(UNIT_TESTS)\n' \
        | make -s --no-print-directory -f Makefile -f - els-print-unit-tests
}

# The tool's shell tests, and those of them that need no GHC program
# (run when there is no plain build to borrow programs from).
TOOL_TESTS_ALONE="tests/tools/test_recv.sh tests/tools/test_recv_listen.sh tests/tools/test_tool_text.sh"
TOOL_TESTS="$TOOL_TESTS_ALONE tests/tools/test_parse_ghc_events.sh tests/control/test_control.sh"
TOOL_TESTS="$TOOL_TESTS tests/monitor/test_top.sh tests/monitor/test_metrics.sh tests/monitor/test_serve.sh"
TOOL_TESTS="$TOOL_TESTS tests/monitor/test_alert_webhook.sh tests/security/test_serve_auth.sh"
plain=${PLAIN_BUILD:-$top/_build}

# The plain build's TESTS_ENVIRONMENT, as its Makefile spells it.
plain_tests_environment() {
    # shellcheck disable=SC2016 # $(...) is for make, not the shell
    printf '$(info $(TESTS_ENVIRONMENT))\nels-print-env: ;@:\n' \
        | make -s --no-print-directory -C "$plain" -f Makefile -f - els-print-env \
            ${PATCHED_RTS_DIR:+PATCHED_RTS_DIR="$PATCHED_RTS_DIR"}
}

status=0
for kind in "${kinds[@]}"; do
    case "$kind" in
        asan) san="-fsanitize=address,undefined -fno-sanitize-recover=all" ;;
        tsan) san="-fsanitize=thread" ;;
        *) echo "sanitize: unknown kind '$kind' (asan or tsan)" >&2; exit 2 ;;
    esac
    flags="-O1 -g $san -fno-omit-frame-pointer"
    dir=$top/_build-$kind
    mkdir -p "$dir"
    (
        cd "$dir"
        stamp="CFLAGS=$flags"
        if [ ! -f Makefile ] || [ "$top/configure" -nt config.status ] \
                || [ "$(cat .els-config-stamp 2>/dev/null)" != "$stamp" ]; then
            echo "sanitize: configure $kind build in $dir"
            "$top/configure" --disable-shared --disable-patched-rts \
                CFLAGS="$flags" CXXFLAGS="$flags" LDFLAGS="$flags" >configure.out 2>&1 \
                || { tail -n 30 configure.out >&2; exit 1; }
            echo "$stamp" >.els-config-stamp
        fi
        # Build first: a Makefile older than Makefile.am regenerates itself
        # on the first make, and its messages must not end up in the list.
        # TSan: the library only here; `make check-TESTS` below builds the
        # test programs (the tool, and the rest of `all`, are ASan's).
        target=
        [ "$kind" != tsan ] || target=lib/libelscore.la
        rm -f tests.list
        make -j"$jobs" ${target:+"$target"} >make.out 2>&1 || { tail -n 40 make.out >&2; exit 1; }
        tests=$(unit_tests | tail -n 1)
        [ -n "$tests" ] || { echo "sanitize: UNIT_TESTS is empty in $dir/Makefile" >&2; exit 1; }
        # The tool's tests: ASan+UBSan is its sanitizer (recv, dump and
        # ctl are single-threaded; what threads top and serve have, ASan
        # follows too).
        env_args=()
        if [ "$kind" = asan ]; then
            if [ -f "$plain/Makefile" ] && plain_env=$(plain_tests_environment) \
                    && [ -n "$plain_env" ]; then
                tests="$tests $TOOL_TESTS"
                env_args=(TESTS_ENVIRONMENT="$plain_env ELS_TOOL_UNDER_TEST='$dir/tools/eventlog-sink'")
            else
                echo "sanitize: no configured plain build in $plain: only the tool tests that need no GHC program run"
                tests="$tests $TOOL_TESTS_ALONE"
            fi
        fi
        echo "$tests" >tests.list
        echo "sanitize: make check ($kind): $tests"
        check=check
        [ "$kind" != tsan ] || check='check-TESTS'
        if ! make -j"$jobs" "$check" TESTS="$tests" "${env_args[@]}"; then
            for t in $tests; do
                if [ -f "$t.trs" ] && grep -Eq '^:test-result: (FAIL|ERROR|XPASS)' "$t.trs"; then
                    echo "----- $dir/$t.log" >&2
                    tail -n 60 "$t.log" >&2 || true
                fi
            done
            exit 1
        fi
    ) || status=1
done
exit "$status"
