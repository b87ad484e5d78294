#!/usr/bin/env bash
# test_test_all.sh: the summary of scripts/test-all.sh tells the truth.
#
# Runs a copy of scripts/test-all.sh in a scratch tree whose
# scripts/build.sh, scripts/sanitize.sh and `make` (first on PATH) are
# stand-ins that report chosen outcomes, and checks what the script
# concludes: a step that fails with no failed test in its totals
# (distcheck failing after its tests passed, a sanitizer run that died, a
# build error) counts as a failure in the last line "N passed, N failed"
# and in the exit status; SKIP_* switches are announced and the steps they
# leave out are listed; skipped tests and skipped parts are listed; with
# ELS_REQUIRE_ALL=1 a skipped test and a SKIP_* switch cannot pass; and in
# every case the exit status is 0 exactly when the last line says 0
# failed; the summary counts cases (a unit-test program's own count, a
# shell test as one) layer by layer.  It does not run the real steps (that is test-all.sh itself).
set -u -o pipefail

. "$(dirname "$0")/lib.sh"

make_tmpdir
T=$ELS_TMP
top=$T/tree
mkdir -p "$top/scripts" "$T/bin"
cp "$ELS_TOP_SRCDIR/scripts/test-all.sh" "$top/scripts/test-all.sh"

# Stand-ins.  FAKE_BUILD_RC, FAKE_CHECK (pass | skip | fail),
# FAKE_DIST_RC, FAKE_SAN_RC choose the outcomes.
cat >"$top/scripts/build.sh" <<'EOF'
#!/usr/bin/env bash
mkdir -p "$(dirname "$0")/../_build"
exit "${FAKE_BUILD_RC:-0}"
EOF
cat >"$top/scripts/sanitize.sh" <<'EOF'
#!/usr/bin/env bash
top=$(dirname "$0")/..
mkdir -p "$top/_build-asan/tests/queue" "$top/_build-tsan/tests/queue"
printf '# TOTAL: 1\n# PASS:  1\n' >"$top/_build-asan/test-suite.log"
printf '# TOTAL: 1\n# PASS:  1\n' >"$top/_build-tsan/test-suite.log"
printf ':test-result: PASS\n' >"$top/_build-asan/tests/queue/test_ring.trs"
printf 'ok - a\nok - b\nok - c\n3 passed, 0 failed\n' >"$top/_build-asan/tests/queue/test_ring.log"
printf ':test-result: PASS\n' >"$top/_build-tsan/tests/queue/test_ring.trs"
printf 'ok - a\nok - b\n2 passed, 0 failed\n' >"$top/_build-tsan/tests/queue/test_ring.log"
exit "${FAKE_SAN_RC:-0}"
EOF
cat >"$T/bin/make" <<'EOF'
#!/usr/bin/env bash
# make -C DIR -jN TARGET: only check and distcheck are played.
dir=$2
case " $* " in
    *" distcheck "*)
        printf '# TOTAL: 5\n# PASS:  4\n# SKIP:  1\n# XFAIL: 0\n# FAIL:  0\n# XPASS: 0\n# ERROR: 0\n'
        echo "SKIP: tests/sinks/test_e2e_rts.sh"
        echo "inner ELS_REQUIRE_ALL=${ELS_REQUIRE_ALL:-unset}"
        exit "${FAKE_DIST_RC:-0}" ;;
    *" check "*)
        # Cases: a unit-test program of 8 cases, two shell tests.
        mkdir -p "$dir/tests/sinks"
        rc=0
        printf '# TOTAL: 3\n# PASS:  3\n' >"$dir/test-suite.log"
        if [ "${FAKE_CHECK:-pass}" = fail ]; then
            printf ':test-result: FAIL\n' >"$dir/tests/sinks/test_spec.trs"
            printf 'FAIL - h\n7 passed, 1 failed\n' >"$dir/tests/sinks/test_spec.log"
            rc=2
        else
            printf ':test-result: PASS\n' >"$dir/tests/sinks/test_spec.trs"
            printf 'ok - h\n8 passed, 0 failed\n' >"$dir/tests/sinks/test_spec.log"
        fi
        printf ':test-result: PASS\n' >"$dir/tests/sinks/test_faults.sh.trs"
        printf '# SKIPPED PART: test_faults: enospc: mounting a tmpfs needs root\n1 passed, 0 failed\n' \
            >"$dir/tests/sinks/test_faults.sh.log"
        if [ "${FAKE_CHECK:-pass}" = skip ]; then
            printf ':test-result: SKIP\n' >"$dir/tests/test_fuzz_smoke.sh.trs"
            printf 'SKIP: test_fuzz_smoke: no clang\n' >"$dir/tests/test_fuzz_smoke.sh.log"
        else
            printf ':test-result: PASS\n' >"$dir/tests/test_fuzz_smoke.sh.trs"
            : >"$dir/tests/test_fuzz_smoke.sh.log"
        fi
        exit "$rc" ;;
esac
exit 0
EOF
chmod +x "$top/scripts/"*.sh "$T/bin/make"

# run NAME [VAR=VALUE...]: run the copy with those variables (and none of
# the caller's SKIP_*, ELS_REQUIRE_ALL or FAKE_*); output in $T/NAME.out,
# status in rc, last line in last, failures counted in nfailed.
run() {
    local name=$1
    shift
    rm -rf "$top/_build" "$top/_build-asan" "$top/_build-tsan"
    rc=0
    env -u SKIP_DISTCHECK -u SKIP_SANITIZE -u ELS_REQUIRE_ALL "$@" \
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

run all-pass
[ "$rc" -eq 0 ] || fail_showing "$T/all-pass.out" "all-pass: exit status $rc"
[ "$last" = "19 passed, 0 failed" ] || fail "all-pass: '$last', expected '19 passed, 0 failed'"
has all-pass "test-all:   _build/tests/sinks/test_faults.sh.log: part: test_faults: enospc: mounting a tmpfs needs root"
# Cases, not programs, layer by layer: the unit test's 8, a shell test as
# one (whatever its log says).
has all-pass "check: cases by layer: sinks 9, tests 1"
has all-pass "check: 10 passed, 0 failed, 0 skipped (cases)"
has all-pass "distcheck: tests/sinks/test_e2e_rts.sh (no patched RTS in distcheck)"
has all-pass "inner ELS_REQUIRE_ALL=unset"

# distcheck fails after its tests passed: one failure, not "0 failed".
run dist-fails FAKE_DIST_RC=2
{ [ "$rc" -ne 0 ] && [ "$nfailed" -eq 1 ]; } || fail "dist-fails: exit $rc, '$last'; expected a failure counted"
has dist-fails "distcheck: the step failed with no failed test in its summary: counted as 1 failure"

# A sanitizer run that dies without a failed test.
run san-fails FAKE_SAN_RC=1
{ [ "$rc" -ne 0 ] && [ "$nfailed" -eq 1 ]; } || fail "san-fails: exit $rc, '$last'; expected one failure"

# The build fails: nothing tested, one failure.
run build-fails FAKE_BUILD_RC=1
{ [ "$rc" -ne 0 ] && [ "$last" = "0 passed, 1 failed" ]; } || fail "build-fails: exit $rc, '$last'"

# A case fails in make check: counted once, in its layer; distcheck not run.
run check-fails FAKE_CHECK=fail
{ [ "$rc" -ne 0 ] && [ "$nfailed" -eq 1 ]; } || fail "check-fails: exit $rc, '$last'"
has check-fails "check: cases by layer: sinks 8 (1 FAILED), tests 1"
has check-fails "distcheck: NOT RUN (make check failed)"

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
{ [ "$rc" -ne 0 ] && [ "$nfailed" -eq 1 ]; } || fail "skip-test-ci: exit $rc, '$last'; a skipped test must fail under ELS_REQUIRE_ALL"

# ELS_REQUIRE_ALL: a SKIP_* switch does not leave a step out; distcheck's
# designed skips do not count; skipped parts stay allowed.
run switch-ci SKIP_SANITIZE=1 ELS_REQUIRE_ALL=1
[ "$rc" -eq 0 ] || fail_showing "$T/switch-ci.out" "switch-ci: exit status $rc"
has switch-ci "SKIP_SANITIZE=1 is set, but ELS_REQUIRE_ALL=1: that step runs anyway"
has switch-ci "test-all:   sanitize: ok"

exit 0
