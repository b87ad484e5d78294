#!/usr/bin/env bash
# sanitize.sh: build and run the unit tests under AddressSanitizer +
# UndefinedBehaviorSanitizer and under ThreadSanitizer, and the receiver's
# tests against an ASan+UBSan receiver.
#
# Two out-of-tree builds, _build-asan and _build-tsan, configured with the
# sanitizer flags and --disable-shared (the unit tests link the core
# statically; no libtool wrappers), each running `make check` of the unit
# tests; the ASan+UBSan run adds tests/test_recv.sh, which then drives that
# tree's sanitized tools/eventlog-sink.  The other shell tests load the
# shared library into GHC programs, whose RTS is not built with
# sanitizers, so they are left to the plain build (scripts/test-all.sh).
# Any sanitizer report fails the test that produced it (halt_on_error, no
# recovery, exit status 86 so that a report is never mistaken for an
# expected status; the unit-test harness runs LeakSanitizer's check at the
# end of every case, tests/check.h).  Needs configure (run scripts/build.sh
# first, or this script runs autoreconf like it does).
#
# Usage: scripts/sanitize.sh [asan|tsan]...   (default: both)
# Environment: CC (default: configure's choice), MAKE_JOBS (default 2).
# Exit status: 0 if every run passed.  The test-suite.log of each run is
# at _build-<kind>/test-suite.log.
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

export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1:exitcode=86"
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
        make -j"$jobs" >make.out 2>&1 || { tail -n 40 make.out >&2; exit 1; }
        tests=$(unit_tests | tail -n 1)
        [ -n "$tests" ] || { echo "sanitize: UNIT_TESTS is empty in $dir/Makefile" >&2; exit 1; }
        # The receiver is single-threaded: ASan+UBSan is its sanitizer.
        [ "$kind" != asan ] || tests="$tests tests/test_recv.sh"
        echo "sanitize: make check ($kind): $tests"
        if ! make -j"$jobs" check TESTS="$tests"; then
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
