#!/usr/bin/env bash
# test_test_all.sh: the summary of scripts/test-all.sh tells the truth.
#
# Runs a copy of scripts/test-all.sh in a scratch tree whose
# scripts/build.sh, scripts/sanitize.sh and `make` (first on PATH) are
# stand-ins that report chosen outcomes the way the real ones do (make
# honours MAKEFLAGS' TESTS=, XFAIL_TESTS=, -n and -e as GNU make and
# automake's harness do), and checks what the script concludes.  In every
# case the last line is "N passed, N failed" and the exit status is 0
# exactly when it says 0 failed; the summary counts cases (a unit-test
# program's own count, a shell test as one) layer by layer.  Each failure
# kind must end in a non-zero exit and a summary that shows it:
#   - a step that fails with no failed test in its totals (distcheck
#     failing after its tests passed, a sanitizer run that died, a build
#     error) counts as a failure;
#   - a failing unit-test case, a failing shell test (whatever its log
#     says), a unit-test program that crashed (a signal: no "N passed, N
#     failed" line), an automake hard error (ERROR, exit 99) and a test
#     turned XFAIL through MAKEFLAGS each count as failed in their layer;
#   - a shrunk run (MAKEFLAGS='TESTS=...', make -n, make -e with TESTS in
#     the environment, a sanitizer run or distcheck that ran fewer tests
#     than listed) names the tests without a result and counts each as
#     failed; under ELS_REQUIRE_ALL=1 MAKEFLAGS is cleared and all run;
#   - CI=true in the environment (CI sets it) changes no count;
#   - SKIP_* switches are announced and the steps they leave out listed;
#     skipped tests and skipped parts are listed; with ELS_REQUIRE_ALL=1 a
#     skipped test and a SKIP_* switch cannot pass.
# It does not run the real steps (that is test-all.sh itself).
set -u -o pipefail

. "$(dirname "$0")/harness.sh"

make_tmpdir
T=$ELS_TMP
top=$T/tree
mkdir -p "$top/scripts" "$T/bin"
cp "$ELS_TOP_SRCDIR/scripts/test-all.sh" "$top/scripts/test-all.sh"

# The stand-ins' suite, as the Makefile lists it: two unit-test programs
# and two shell tests.
# The stand-ins read it from a file: test-all.sh reads the list with no
# environment.
cat >"$T/bin/fake-lists" <<'EOF'
FAKE_UNIT='tests/sinks/test_spec tests/queue/test_unitq'
FAKE_SHELL='tests/sinks/test_faults.sh tests/test_fuzz_smoke.sh'
EOF

# Stand-ins.  FAKE_BUILD_RC, FAKE_CHECK (pass | skip | fail | shfail |
# crash | error), FAKE_DIST_RC, FAKE_DIST_TOTAL, FAKE_SAN_RC and
# FAKE_SAN_SHRINK choose the outcomes.
cat >"$top/scripts/build.sh" <<'EOF'
#!/usr/bin/env bash
mkdir -p "$(dirname "$0")/../_build"
exit "${FAKE_BUILD_RC:-0}"
EOF
# sanitize.sh: each run's results and its list (tests.list); asan adds a
# tool test; FAKE_SAN_SHRINK=1 leaves test_spec out of the TSan run.
cat >"$top/scripts/sanitize.sh" <<EOF
#!/usr/bin/env bash
. '$T/bin/fake-lists'
EOF
cat >>"$top/scripts/sanitize.sh" <<'EOF'
top=$(dirname "$0")/..
for k in asan tsan; do
    d=$top/_build-$k
    mkdir -p "$d/tests/queue" "$d/tests/sinks" "$d/tests/tools"
    list=$FAKE_UNIT
    [ "$k" = tsan ] || list="$list tests/tools/test_recv.sh"
    echo "$list" >"$d/tests.list"
    printf '# TOTAL: 1\n# PASS:  1\n' >"$d/test-suite.log"
    printf ':test-result: PASS\n' >"$d/tests/queue/test_unitq.trs"
    printf 'ok - a\nok - b\n2 passed, 0 failed\n' >"$d/tests/queue/test_unitq.log"
    if [ "$k" = asan ] || [ -z "${FAKE_SAN_SHRINK:-}" ]; then
        printf ':test-result: PASS\n' >"$d/tests/sinks/test_spec.trs"
        printf '8 passed, 0 failed\n' >"$d/tests/sinks/test_spec.log"
    fi
done
printf ':test-result: PASS\n' >"$top/_build-asan/tests/tools/test_recv.sh.trs"
: >"$top/_build-asan/tests/tools/test_recv.sh.log"
exit "${FAKE_SAN_RC:-0}"
EOF
cat >"$T/bin/make" <<'EOF'
#!/usr/bin/env bash
# make [-s --no-print-directory] -C DIR ... TARGET: the list query
# (els-print-list, its makefile on stdin), check and distcheck are
# played.  Like GNU make, it takes variables and flags from MAKEFLAGS,
# and from the environment under -e.
. "$(dirname "$0")/fake-lists"
dir=.
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    [ "${args[$i]}" != -C ] || dir=${args[$((i + 1))]}
done
flags= mf_tests= mf_xfail=
for w in ${MAKEFLAGS:-}; do
    case $w in
        TESTS=*) mf_tests=${w#TESTS=} ;;
        XFAIL_TESTS=*) mf_xfail=${w#XFAIL_TESTS=} ;;
        -*) ;;
        *=*) ;;
        *) flags=$flags$w ;;
    esac
done
case " $* " in
    *" els-print-list "*)
        var=$(sed -n 's/.*\$(\([A-Z_]*\)).*/\1/p')
        case $var in
            TESTS) echo "$FAKE_UNIT $FAKE_SHELL" ;;
            UNIT_TESTS) echo "$FAKE_UNIT" ;;
            *) echo ;;
        esac
        exit 0 ;;
    *" distcheck "*)
        # Run with TESTS=$(UNIT_TESTS) on the command line: MAKEFLAGS'
        # TESTS does not win over it.
        n=${FAKE_DIST_TOTAL:-2}
        printf '# TOTAL: %s\n# PASS:  %s\n# SKIP:  1\n# XFAIL: 0\n# FAIL:  0\n# XPASS: 0\n# ERROR: 0\n' "$n" $((n - 1))
        echo "SKIP: tests/queue/test_unitq"
        echo "inner ELS_REQUIRE_ALL=${ELS_REQUIRE_ALL:-unset}"
        exit "${FAKE_DIST_RC:-0}" ;;
    *" check "*) ;;
    *) exit 0 ;;
esac
# check: which tests run (the Makefile's TESTS; MAKEFLAGS' TESTS=; the
# environment's TESTS under -e; none under -n).
run=" $FAKE_UNIT $FAKE_SHELL "
[ -z "$mf_tests" ] || run=" $mf_tests "
case $flags in *e*) [ -z "${TESTS:-}" ] || run=" $TESTS " ;; esac
case $flags in *n*) run=' ' ;; esac
mkdir -p "$dir/tests/sinks" "$dir/tests/queue"
rc=0
printf '# TOTAL: 4\n# PASS:  4\n' >"$dir/test-suite.log"
# result TEST RESULT LOG: TEST's .trs and .log, if TEST runs; a FAIL of a
# test in XFAIL_TESTS is XFAIL; FAIL and ERROR fail make.
result() {
    local t=$1 r=$2 trs=$dir/${1%.test}.trs
    case $run in *" $t "*) ;; *) return 0 ;; esac
    case " $mf_xfail " in *" $t "*) [ "$r" != FAIL ] || r=XFAIL ;; esac
    case $r in FAIL|ERROR) rc=2 ;; esac
    printf ':test-result: %s\n' "$r" >"$trs"
    printf '%b' "$3" >"${trs%.trs}.log"
}
case ${FAKE_CHECK:-pass} in
    fail) result tests/sinks/test_spec FAIL 'FAIL - h\n7 passed, 1 failed\n' ;;
    *) result tests/sinks/test_spec PASS 'ok - h\n8 passed, 0 failed\n' ;;
esac
case ${FAKE_CHECK:-pass} in
    # Killed by a signal: no closing line.
    crash) result tests/queue/test_unitq FAIL 'ok - a\nok - b\n' ;;
    # A hard error (exit 99) after its cases passed.
    error) result tests/queue/test_unitq ERROR 'ok - a\nok - b\nok - c\n3 passed, 0 failed\n' ;;
    *) result tests/queue/test_unitq PASS 'ok - a\nok - b\nok - c\n3 passed, 0 failed\n' ;;
esac
case ${FAKE_CHECK:-pass} in
    # A failed shell test counts as one failure, whatever its log says.
    shfail) result tests/sinks/test_faults.sh FAIL '1 passed, 0 failed\nFAIL: test_faults: broken\n' ;;
    *) result tests/sinks/test_faults.sh PASS '# SKIPPED PART: test_faults: enospc: mounting a tmpfs needs root\n1 passed, 0 failed\n' ;;
esac
case ${FAKE_CHECK:-pass} in
    skip) result tests/test_fuzz_smoke.sh SKIP 'SKIP: test_fuzz_smoke: no clang\n' ;;
    *) result tests/test_fuzz_smoke.sh PASS '' ;;
esac
exit "$rc"
EOF
chmod +x "$top/scripts/"*.sh "$T/bin/make"

# run NAME [ENV-ARGS...]: run the copy with those variables (and none of
# the caller's SKIP_*, ELS_REQUIRE_ALL, CI, FAKE_* or make settings: the
# harness running this test has MAKEFLAGS of its own); output in
# $T/NAME.out, status in rc, last line in last, failures counted in
# nfailed.
run() {
    local name=$1
    shift
    rm -rf "$top/_build" "$top/_build-asan" "$top/_build-tsan"
    rc=0
    env -u SKIP_DISTCHECK -u SKIP_SANITIZE -u ELS_REQUIRE_ALL -u CI \
        -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u GNUMAKEFLAGS -u MAKEOVERRIDES -u MAKEFILES \
        -u TESTS -u XFAIL_TESTS "$@" \
        PATH="$T/bin:$PATH" "$top/scripts/test-all.sh" >"$T/$name.out" 2>&1 || rc=$?
    last=$(tail -n 1 "$T/$name.out")
    printf '%s\n' "$last" | grep -Eqx '[0-9]+ passed, [0-9]+ failed' \
        || fail_showing "$T/$name.out" "$name: the last line is not 'N passed, N failed': '$last'"
    nfailed=$(printf '%s\n' "$last" | sed 's/.*passed, \([0-9]*\) failed/\1/')
    # The invariant: status 0 exactly when nothing failed.
    if { [ "$rc" -eq 0 ] && [ "$nfailed" -ne 0 ]; } || { [ "$rc" -ne 0 ] && [ "$nfailed" -eq 0 ]; }; then
        fail_showing "$T/$name.out" "$name: exit status $rc but the last line says '$last'"
    fi
    note "$name: exit $rc: $last"
}

# has NAME TEXT: the output of run NAME contains TEXT (fixed string).
has() {
    grep -qF -- "$2" "$T/$1.out" || fail_showing "$T/$1.out" "$1: no line containing '$2'"
}

# hasnt NAME TEXT: ... and not this.
hasnt() {
    ! grep -qF -- "$2" "$T/$1.out" || fail_showing "$T/$1.out" "$1: a line contains '$2'"
}

# failed_with NAME N: run NAME exited non-zero with N failures counted.
failed_with() {
    { [ "$rc" -ne 0 ] && [ "$nfailed" -eq "$2" ]; } \
        || fail_showing "$T/$1.out" "$1: exit $rc, '$last'; expected a non-zero exit and $2 failed"
}

# passed_all NAME: run NAME passed, with every case counted.
ALL='35 passed, 0 failed'
passed_all() {
    { [ "$rc" -eq 0 ] && [ "$last" = "$ALL" ]; } \
        || fail_showing "$T/$1.out" "$1: exit $rc, '$last'; expected exit 0 and '$ALL'"
}

# Everything passes: check 13 cases (8 + 3 + two shell tests), distcheck
# 1 (and its skip), asan 11 (8 + 2 + a tool test), tsan 10.
run all-pass
passed_all all-pass
has all-pass "test-all:   _build/tests/sinks/test_faults.sh.log: part: test_faults: enospc: mounting a tmpfs needs root"
# Cases, not programs, layer by layer: the unit tests' own counts, a
# shell test as one (whatever its log says).
has all-pass "check: cases by layer: queue 3, sinks 9, tests 1"
has all-pass "check: 13 passed, 0 failed, 0 skipped (cases)"
has all-pass "check: 4 of the 4 listed tests ran"
has all-pass "distcheck: tests/queue/test_unitq (no patched RTS in distcheck)"
has all-pass "distcheck: 2 of the 2 listed unit tests ran"
has all-pass "asan: 3 of the 3 listed tests ran"
has all-pass "tsan: 2 of the 2 listed tests ran"
has all-pass "inner ELS_REQUIRE_ALL=unset"
hasnt all-pass "NOT EVERYTHING RAN"

# CI sets CI=true: nothing counts differently, on success or failure.
run ci-true CI=true
passed_all ci-true
run ci-true-ci CI=true ELS_REQUIRE_ALL=1
passed_all ci-true-ci
run ci-true-crash CI=true FAKE_CHECK=crash
failed_with ci-true-crash 1

# distcheck fails after its tests passed: one failure, not "0 failed".
run dist-fails FAKE_DIST_RC=2
failed_with dist-fails 1
has dist-fails "distcheck: the step failed with no failed test in its summary: counted as 1 failure"

# A sanitizer run that dies without a failed test.
run san-fails FAKE_SAN_RC=1
failed_with san-fails 1

# The build fails: nothing tested, one failure.
run build-fails FAKE_BUILD_RC=1
{ [ "$rc" -ne 0 ] && [ "$last" = "0 passed, 1 failed" ]; } || fail "build-fails: exit $rc, '$last'"

# A case fails in make check: counted once, in its layer; distcheck not run.
run check-fails FAKE_CHECK=fail
failed_with check-fails 1
has check-fails "check: cases by layer: queue 3, sinks 8 (1 FAILED), tests 1"
has check-fails "distcheck: NOT RUN (make check failed)"

# A shell test fails, though its log has a "1 passed, 0 failed" line.
run sh-fails FAKE_CHECK=shfail
failed_with sh-fails 1
has sh-fails "check: cases by layer: queue 3, sinks 8 (1 FAILED), tests 1"
has sh-fails "----- $top/_build/tests/sinks/test_faults.sh.log"

# A unit-test program killed by a signal: no closing line, its passed
# cases not counted as the program's result.
run crash FAKE_CHECK=crash
failed_with crash 1
has crash "check: cases by layer: queue 0 (1 FAILED), sinks 9, tests 1"
has crash "----- $top/_build/tests/queue/test_unitq.log"

# An automake hard error (exit 99) after every case passed.
run hard-error FAKE_CHECK=error
failed_with hard-error 1
has hard-error "check: cases by layer: queue 3 (1 FAILED), sinks 9, tests 1"

# A failing shell test made XFAIL through MAKEFLAGS (its log has no
# count of its own): make exits 0, the test still failed; under
# ELS_REQUIRE_ALL MAKEFLAGS goes and it is a FAIL (and distcheck, not
# run after a failed check, is one more failure there).
run xfail FAKE_CHECK=shfail MAKEFLAGS='XFAIL_TESTS=tests/sinks/test_faults.sh'
failed_with xfail 1
has xfail "check: cases by layer: queue 3, sinks 8 (1 FAILED), tests 1"
run xfail-ci FAKE_CHECK=shfail MAKEFLAGS='XFAIL_TESTS=tests/sinks/test_faults.sh' ELS_REQUIRE_ALL=1
failed_with xfail-ci 2
has xfail-ci "MAKEFLAGS=XFAIL_TESTS=tests/sinks/test_faults.sh is set in the environment, but ELS_REQUIRE_ALL=1: cleared"

# A run shrunk to one test through MAKEFLAGS: the three others have no
# result, each a failure, named.
run shrunk MAKEFLAGS='TESTS=tests/sinks/test_spec'
failed_with shrunk 3
has shrunk "MAKEFLAGS=TESTS=tests/sinks/test_spec is set in the environment: it may change what make runs"
has shrunk "check: 1 of the 4 listed tests ran"
has shrunk "check: 3 listed tests have no result (each counted as a failure): tests/queue/test_unitq tests/sinks/test_faults.sh tests/test_fuzz_smoke.sh"
has shrunk "NOT EVERYTHING RAN: listed tests without a result:"
# ... which CI neutralises: everything runs and passes.
run shrunk-ci MAKEFLAGS='TESTS=tests/sinks/test_spec' ELS_REQUIRE_ALL=1
passed_all shrunk-ci
has shrunk-ci "MAKEFLAGS=TESTS=tests/sinks/test_spec is set in the environment, but ELS_REQUIRE_ALL=1: cleared"
# make -n: nothing runs, make exits 0.
run dry-run MAKEFLAGS=n
failed_with dry-run 4
has dry-run "check: 0 of the 4 listed tests ran"
# make -e with TESTS in the environment.
run env-tests MAKEFLAGS=e TESTS='tests/sinks/test_spec tests/queue/test_unitq'
failed_with env-tests 2
has env-tests "TESTS=tests/sinks/test_spec tests/queue/test_unitq is set in the environment"
# A sanitizer run that left a unit test out; a distcheck that ran fewer.
run san-shrunk FAKE_SAN_SHRINK=1
failed_with san-shrunk 1
has san-shrunk "tsan: 1 listed tests have no result (each counted as a failure): tests/sinks/test_spec"
run dist-shrunk FAKE_DIST_TOTAL=1
failed_with dist-shrunk 1
has dist-shrunk "distcheck: 1 tests ran, UNIT_TESTS lists 2: counted as 1 failure"

# A local run leaving steps out: announced, listed; it may pass.
run skip-local SKIP_SANITIZE=1 SKIP_DISTCHECK=1
[ "$rc" -eq 0 ] || fail_showing "$T/skip-local.out" "skip-local: exit status $rc"
has skip-local "SKIP_SANITIZE=1 is set in the environment: that step will NOT run"
has skip-local "SKIP_DISTCHECK=1 is set in the environment: that step will NOT run"
has skip-local "NOT EVERYTHING RAN: steps left out: distcheck (SKIP_DISTCHECK=1) sanitize (SKIP_SANITIZE=1)"

# A skipped test: listed; passes locally, fails under ELS_REQUIRE_ALL.
run skip-test FAKE_CHECK=skip
[ "$rc" -eq 0 ] || fail_showing "$T/skip-test.out" "skip-test: exit status $rc"
has skip-test "_build/tests/test_fuzz_smoke.sh.log: test_fuzz_smoke: no clang"
run skip-test-ci FAKE_CHECK=skip ELS_REQUIRE_ALL=1
failed_with skip-test-ci 1

# ELS_REQUIRE_ALL: a SKIP_* switch does not leave a step out; distcheck's
# designed skips do not count; skipped parts stay allowed.
run switch-ci SKIP_SANITIZE=1 ELS_REQUIRE_ALL=1
[ "$rc" -eq 0 ] || fail_showing "$T/switch-ci.out" "switch-ci: exit status $rc"
has switch-ci "SKIP_SANITIZE=1 is set, but ELS_REQUIRE_ALL=1: that step runs anyway"
has switch-ci "test-all:   sanitize: ok"

exit 0
