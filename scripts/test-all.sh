#!/usr/bin/env bash
# test-all.sh: THE test command: build, run every test, check the
# distribution, run the unit tests and the receiver's tests under
# sanitizers.  It does not decide what a test checks (the tests do) and
# installs nothing itself (scripts/build.sh does).
#
# Steps: scripts/build.sh (deps, autoreconf, configure _build/, make);
# `make check` in _build (unit tests and the shell end-to-end tests; the
# logs of failing tests are printed); `make distcheck` in _build (the
# tarball builds, passes its unit tests, installs and cleans up out of
# tree);
# scripts/sanitize.sh (ASan+UBSan and TSan builds of the unit tests, and
# the receiver's tests against an ASan+UBSan receiver).
#
# The summary counts cases, not programs: a unit-test program's cases
# (its "N passed, N failed" line), a shell test as one, shown layer by
# layer (add_cases); distcheck, whose logs are gone when it passes, counts
# its programs (automake's "# PASS:" totals).  A step that fails with no
# failed test in its totals (a build error, distcheck failing after its
# tests passed, a sanitizer run that died) counts as one failure, so a
# failed run never ends in "N passed, 0 failed".  Steps and
# tests that did not run are listed before the last line, and so are the
# parts of tests that skipped themselves ("SKIPPED PART:" lines in the
# logs: root-only cases, no IPv6 loopback).  The last line printed is
# "N passed, N failed".
#
# Skips: a local run may leave steps out (SKIP_DISTCHECK=1, SKIP_SANITIZE=1;
# each is announced at the start and in the summary) and tests skip (77)
# when GHC, ghc-events, clang or the patched RTS is missing.  With
# ELS_REQUIRE_ALL=1 (set by .ci/run) nothing may be left out: a SKIP_*
# switch, a skipped step and a skipped test are each a failure.  Skipped
# parts stay allowed there (they depend on the machine, not the project:
# root, IPv6, tmpfs), but are listed.
#
# Nothing shrinks the suite silently (Note [What make runs]): make's
# settings from the environment (MAKEFLAGS, TESTS, XFAIL_TESTS, ...) are
# announced, and cleared under ELS_REQUIRE_ALL; and whatever make did,
# every test the Makefile lists (read by a make that sees none of this
# environment) must have a result, else each missing one is a failure,
# named.  A test that make reports XFAIL failed, and counts so.
#
# Usage: scripts/test-all.sh
# Environment: SKIP_DISTCHECK=1, SKIP_SANITIZE=1 (local quick runs only),
# ELS_REQUIRE_ALL=1, MAKE_JOBS (default 2).
# Exit status: 0 only if every step ran (or was deliberately skipped
# outside ELS_REQUIRE_ALL) and passed.
set -uo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top" || exit 1
build=$top/_build
jobs=${MAKE_JOBS:-2}
require_all=${ELS_REQUIRE_ALL:-}
start_s=$(date +%s)

passed=0
failed=0
skipped=0
status=0
steps=()
not_run=()
not_ran=()

say() {
    echo "test-all: $*"
}

# The switches that leave steps out, announced up front: a variable
# inherited from the environment must not drop a step silently.
for v in SKIP_DISTCHECK SKIP_SANITIZE; do
    if [ -n "${!v:-}" ]; then
        if [ -n "$require_all" ]; then
            say "$v=${!v} is set, but ELS_REQUIRE_ALL=1: that step runs anyway" >&2
            unset "$v"
        else
            say "$v=${!v} is set in the environment: that step will NOT run"
        fi
    fi
done

# Note [What make runs]
# ~~~~~~~~~~~~~~~~~~~~~
# make takes settings from the environment as well as from its command
# line: MAKEFLAGS (and MFLAGS, GNUMAKEFLAGS, MAKEOVERRIDES) carry
# variables such as TESTS=... and flags such as -n, -t, -q, -i or -e into
# every make, MAKEFILES adds makefiles, and a variable the Makefile leaves
# unset (XFAIL_TESTS, LOG_COMPILER, DISTCHECK_CONFIGURE_FLAGS, ...) is
# taken from the environment.  Each can shrink or weaken the suite while
# make still exits 0.  So they are announced, and cleared under
# ELS_REQUIRE_ALL (MAKE_VARS below); and since a list of names can never
# be complete, the result is checked too (check_ran): every test the
# Makefile lists has a result of this run, or counts as a failure.
MAKE_VARS='MAKEFLAGS|MFLAGS|GNUMAKEFLAGS|MAKEOVERRIDES|MAKEFILES|MAKELEVEL'
MAKE_VARS="$MAKE_VARS|TESTS|TEST_LOGS|RECHECK_LOGS|TEST_SUITE_LOG|XFAIL_TESTS"
MAKE_VARS="$MAKE_VARS|DISABLE_HARD_ERRORS|TEST_EXTENSIONS|UNIT_TESTS|SHELL_TESTS"
MAKE_VARS="$MAKE_VARS|check_PROGRAMS|(AM_)?TESTS_ENVIRONMENT|AM_TESTS_FD_REDIRECT"
MAKE_VARS="$MAKE_VARS|([A-Z0-9_]*_)?LOG_(COMPILER|COMPILE|FLAGS|DRIVER|DRIVER_FLAGS)"
MAKE_VARS="$MAKE_VARS|(AM_)?DISTCHECK_CONFIGURE_FLAGS|am__[A-Za-z0-9_]*"
while IFS= read -r v; do
    if [ -n "$require_all" ]; then
        say "$v=${!v} is set in the environment, but ELS_REQUIRE_ALL=1: cleared (it can change what make runs)" >&2
        unset "$v"
    else
        say "$v=${!v} is set in the environment: it may change what make runs (every listed test must still have a result)"
    fi
done < <(compgen -e | grep -Ex "$MAKE_VARS" || true)

# cpu_s: set cpu to the CPU seconds (user + system) of this script's
# finished children so far: the steps' makes and everything they waited
# for.  `times` runs in this shell (a subshell's count starts at 0).
cpu_file=$(mktemp "${TMPDIR:-/tmp}/test-all-cpu.XXXXXX")
trap 'rm -f "$cpu_file"' EXIT
cpu_s() {
    times >"$cpu_file"
    cpu=$(awk 'NR == 2 {
        n = split($0, t, " "); s = 0
        for (i = 1; i <= n; i++) { split(t[i], p, "m"); s += p[1] * 60 + p[2] }
        printf "%d\n", s }' "$cpu_file")
}

# step NAME RESULT: record a step's result and the time it took (since
# the previous step ended), to see where the time budget goes: wall time,
# and CPU time, which a busy machine does not inflate.
step_t0=$start_s
cpu_s
step_cpu0=$cpu
step() {
    local now
    now=$(date +%s)
    cpu_s
    steps+=("$1: $2 ($((now - step_t0)) s, $((cpu - step_cpu0)) s CPU)")
    step_t0=$now
    step_cpu0=$cpu
}

# step_not_run NAME WHY: NAME did not run; under ELS_REQUIRE_ALL that is
# a failure.
step_not_run() {
    step "$1" "NOT RUN ($2)"
    not_run+=("$1 ($2)")
    if [ -n "$require_all" ]; then
        say "$1 did not run ($2); ELS_REQUIRE_ALL=1 counts that as a failure" >&2
        failed=$((failed + 1))
        status=1
    fi
}

# count_step NAME PASSED FAILED SKIPPED STEP_RC SKIPS_OK UNIT: add a step's
# counts to the totals: a step that failed (STEP_RC != 0) with no failure
# counted is one failure, and under ELS_REQUIRE_ALL each skipped test is a
# failure too, unless SKIPS_OK is set.  UNIT is said after the counts.
count_step() {
    local name=$1 p=$2 f=$3 s=$4 rc=$5 skips_ok=$6 unit=$7
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        say "$name: the step failed with no failed test in its summary: counted as 1 failure" >&2
        f=1
    fi
    say "$name: $p passed, $f failed, $s skipped$unit"
    passed=$((passed + p))
    failed=$((failed + f))
    skipped=$((skipped + s))
    if [ "$s" -gt 0 ] && [ -n "$require_all" ] && [ -z "$skips_ok" ]; then
        say "$name: $s tests skipped; ELS_REQUIRE_ALL=1 counts each as a failure" >&2
        failed=$((failed + s))
        status=1
    fi
}

# listed_tests DIR VAR: the words of the make variable VAR ($(TESTS),
# $(UNIT_TESTS)) as DIR's Makefile defines it, read by a make that sees
# nothing of this environment but PATH (Note [What make runs]).
listed_tests() {
    # shellcheck disable=SC2016 # $(...) is for make, not the shell
    printf 'els-print-list:\n\t@echo $(%s)\n' "$2" \
        | env -i PATH="$PATH" HOME="${HOME:-/}" make -s --no-print-directory -C "$1" \
            -f Makefile -f - els-print-list 2>/dev/null | tail -n 1
}

# check_ran NAME DIR TESTS...: every test of TESTS has a result under DIR
# (its .trs: clear_results removed those of earlier runs, so the result
# is this run's).  Each one without counts as a failed test, named; an
# empty TESTS (the list could not be read) counts as one failure.
check_ran() {
    local name=$1 dir=$2 t n=0 missing=()
    shift 2
    for t in "$@"; do
        n=$((n + 1))
        grep -q '^:test-result: ' "$dir/${t%.test}.trs" 2>/dev/null || missing+=("$t")
    done
    if [ "$n" -eq 0 ]; then
        say "$name: cannot read the list of tests from $dir/Makefile: counted as 1 failure" >&2
        failed=$((failed + 1))
        status=1
        return
    fi
    say "$name: $((n - ${#missing[@]})) of the $n listed tests ran"
    if [ "${#missing[@]}" -gt 0 ]; then
        say "$name: ${#missing[@]} listed tests have no result (each counted as a failure): ${missing[*]}" >&2
        failed=$((failed + ${#missing[@]}))
        status=1
        not_ran+=("$name: ${missing[*]}")
    fi
}

# add_totals NAME FILE STEP_RC [SKIPS_OK]: add the first "# PASS:"-style
# totals in FILE; a step that failed (STEP_RC != 0) with no failure among
# its totals counts as one failure.  Under ELS_REQUIRE_ALL each skipped
# test is a failure too, unless SKIPS_OK is given.
add_totals() {
    local name=$1 file=$2 rc=$3 skips_ok=${4:-} p=0 f=0 s=0
    if [ -f "$file" ]; then
        read -r p f s < <(sed 's/\x1b\[[0-9;]*m//g' "$file" | awk '
            $1 == "#" && !seen[$2]++ {
                if ($2 == "PASS:") p = $3
                else if ($2 == "FAIL:" || $2 == "ERROR:" || $2 == "XPASS:" || $2 == "XFAIL:") f += $3
                else if ($2 == "SKIP:") s = $3
            }
            END { print p + 0, f + 0, s + 0 }')
    else
        say "$name: no test summary ($file)" >&2
    fi
    count_step "$name" "$p" "$f" "$s" "$rc" "$skips_ok" ""
}

# add_cases NAME DIR STEP_RC [SKIPS_OK]: count the cases of every test
# that ran under DIR, layer by layer (the test's directory: tests/sinks,
# tests/writer, ...), so that a failure shows where it is: a unit-test
# program (tests/check.h) counts the cases of its last "N passed, N
# failed" line, a shell test (*.sh) counts as one case, and a program that
# failed without a failed case (a crash, a timeout) as one failed case.  A
# step that failed (STEP_RC != 0) with no failure counted is one failure.
# Under ELS_REQUIRE_ALL each skipped test is a failure, unless SKIPS_OK.
add_cases() {
    local name=$1 dir=$2 rc=$3 skips_ok=${4:-} p=0 f=0 s=0
    local trs log res layer cp cf layers=''
    declare -A lay_p=() lay_f=()
    while IFS= read -r trs; do
        log=${trs%.trs}.log
        res=$(sed -n 's/^:test-result: //p' "$trs" | head -n 1)
        layer=$(dirname "${trs#"$dir"/}")
        layer=${layer#tests}; layer=${layer#/}; [ -n "$layer" ] || layer=tests
        if [ "$res" = SKIP ]; then s=$((s + 1)); continue; fi
        cp=- cf=-
        case $trs in
            *.sh.trs) ;;
            *) read -r cp cf < <(sed 's/\x1b\[[0-9;]*m//g' "$log" 2>/dev/null | awk '
                   /^[0-9]+ passed, [0-9]+ failed/ { p = $1; f = $3 }
                   END { if (p == "") print "- -"; else print p, f }') ;;
        esac
        # XFAIL: a test that failed (the Makefile expects none to).
        case $res in
            PASS) [ "$cp" != - ] || { cp=1; cf=0; } ;;
            *) if [ "$cp" = - ]; then cp=0; cf=1; elif [ "$cf" -eq 0 ]; then cf=1; fi ;;
        esac
        [ -n "${lay_p[$layer]+x}" ] || { lay_p[$layer]=0; lay_f[$layer]=0; layers="$layers $layer"; }
        lay_p[$layer]=$(( ${lay_p[$layer]} + cp ))
        lay_f[$layer]=$(( ${lay_f[$layer]} + cf ))
        p=$((p + cp)); f=$((f + cf))
    done < <(trs_files "$dir")
    local line=''
    for layer in $(printf '%s\n' $layers | sort); do
        line="$line $layer ${lay_p[$layer]}"
        [ "${lay_f[$layer]}" -eq 0 ] || line="$line (${lay_f[$layer]} FAILED)"
        line="$line,"
    done
    [ -z "$line" ] || say "$name: cases by layer:${line%,}"
    count_step "$name" "$p" "$f" "$s" "$rc" "$skips_ok" " (cases)"
}

# print_failed_logs DIR: show the .log of every failed test under DIR.
print_failed_logs() {
    local trs
    while IFS= read -r trs; do
        if grep -Eq '^:test-result: (FAIL|ERROR|XPASS|XFAIL)' "$trs"; then
            echo "----- ${trs%.trs}.log" >&2
            cat "${trs%.trs}.log" >&2 || true
        fi
    done < <(trs_files "$1")
}

# trs_files DIR: the automake result files under DIR, leaving out what a
# failed distcheck left behind (its own tree, eventlog-sink-VERSION/).
trs_files() {
    find "$1" -path "$1/eventlog-sink-*" -prune -o -name '*.trs' -print 2>/dev/null | sort
}

# skipped_tests DIR: print "TEST: reason" for every test under DIR that
# skipped (77), and "TEST: PART: reason" for every part that skipped itself.
skipped_tests() {
    local trs log
    while IFS= read -r trs; do
        log=${trs%.trs}.log
        if grep -q '^:test-result: SKIP' "$trs"; then
            echo "${log#"$top"/}: $(grep -m 1 '^SKIP: ' "$log" 2>/dev/null | cut -c 7-)"
        fi
        grep -h 'SKIPPED PART: ' "$log" 2>/dev/null | sed "s|^.*SKIPPED PART: |${log#"$top"/}: part: |"
    done < <(trs_files "$1")
}

# 1. Build.
if ! "$top/scripts/build.sh"; then
    step build FAILED
    say "the build failed; nothing was tested" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
step build ok

# clear_results DIR: remove the results of earlier runs under DIR, so that
# the summary counts only what this run ran (a test moved or removed since
# would leave its old .trs behind).
clear_results() {
    find "$1" -path "$1/eventlog-sink-*" -prune -o \( -name '*.trs' -o -name test-suite.log \) \
        -type f -print 2>/dev/null | xargs -r rm -f
}

# 2. make check: every test, including the shell tests.
clear_results "$build"
check_rc=0
make -C "$build" -j"$jobs" check || check_rc=$?
if [ "$check_rc" -eq 0 ]; then
    step check ok
else
    step check FAILED
    status=1
    print_failed_logs "$build"
fi
add_cases check "$build" "$check_rc"
# shellcheck disable=SC2046 # one word per test
check_ran check "$build" $(listed_tests "$build" TESTS)
skips=$(skipped_tests "$build")

# 3. make distcheck (its own out-of-tree build of the tarball; its
# test-suite.log is removed when it passes, so read its console summary).
# It configures --disable-patched-rts (the patched RTS would need GHC's
# source downloaded again) and runs the unit tests: the shell tests ran
# in step 2.  Its skips are listed, not failed, and ELS_REQUIRE_ALL is not
# passed into it.
if [ -n "${SKIP_DISTCHECK:-}" ]; then
    step_not_run distcheck "SKIP_DISTCHECK=$SKIP_DISTCHECK"
elif [ "$check_rc" -ne 0 ]; then
    step_not_run distcheck "make check failed"
else
    dlog=$build/distcheck.out
    drc=0
    # The tarball's own build runs the unit tests only: the shell tests
    # ran in step 2 from the same sources, and without the patched RTS
    # most of them would skip (the rest drive GHC programs, minutes of
    # the time budget for nothing the tarball changes).
    env -u ELS_REQUIRE_ALL make -C "$build" -j"$jobs" distcheck 'TESTS=$(UNIT_TESTS)' 2>&1 | tee "$dlog" || drc=$?
    if [ "$drc" -eq 0 ]; then
        step distcheck ok
    else
        step distcheck FAILED
        status=1
        print_failed_logs "$build/eventlog-sink-"*/
    fi
    # No "# TOTAL:" line: it failed before its tests ran (counted as one
    # failure by add_totals).
    add_totals distcheck "$dlog" "$drc" skips-ok
    # The tarball's build ran $(UNIT_TESTS), all of them (its totals are
    # all that is left of it).
    dtotal=$(sed 's/\x1b\[[0-9;]*m//g' "$dlog" | awk '$1 == "#" && $2 == "TOTAL:" { print $3; exit }')
    # shellcheck disable=SC2046 # one word per test
    dlisted=$(set -- $(listed_tests "$build" UNIT_TESTS); echo $#)
    if [ "$drc" -eq 0 ] && [ "${dtotal:-0}" -ne "$dlisted" ]; then
        say "distcheck: ${dtotal:-no} tests ran, UNIT_TESTS lists $dlisted: counted as 1 failure" >&2
        failed=$((failed + 1))
        status=1
        not_ran+=("distcheck: ${dtotal:-no} of $dlisted unit tests")
    else
        say "distcheck: ${dtotal:-0} of the $dlisted listed unit tests ran"
    fi
    skips=$skips$'\n'$(sed 's/\x1b\[[0-9;]*m//g' "$dlog" | sed -n 's/^SKIP: \(.*\)/distcheck: \1 (no patched RTS in distcheck)/p')
fi

# 4. Sanitizers.
if [ -n "${SKIP_SANITIZE:-}" ]; then
    step_not_run sanitize "SKIP_SANITIZE=$SKIP_SANITIZE"
else
    for d in "$top/_build-asan" "$top/_build-tsan"; do
        [ ! -d "$d" ] || clear_results "$d"
    done
    src=0
    "$top/scripts/sanitize.sh" || src=$?
    if [ "$src" -eq 0 ]; then
        step sanitize ok
    else
        step sanitize FAILED
        status=1
    fi
    # Each run's own totals; the step's failure is charged once, to the
    # first run, if neither run shows a failed test.
    a_rc=0 t_rc=0
    [ -f "$top/_build-asan/test-suite.log" ] || a_rc=1
    [ -f "$top/_build-tsan/test-suite.log" ] || t_rc=1
    if [ "$src" -ne 0 ] && [ "$a_rc" -eq 0 ] && [ "$t_rc" -eq 0 ] &&
            ! grep -Eq '^# (FAIL|ERROR|XPASS|XFAIL): +[1-9]' \
                "$top/_build-asan/test-suite.log" "$top/_build-tsan/test-suite.log"; then
        a_rc=$src
    fi
    [ -f "$top/_build-asan/test-suite.log" ] || say "asan: no test summary" >&2
    [ -f "$top/_build-tsan/test-suite.log" ] || say "tsan: no test summary" >&2
    add_cases asan "$top/_build-asan" "$a_rc"
    add_cases tsan "$top/_build-tsan" "$t_rc"
    # What each run was to run: sanitize.sh's list (tests.list), which
    # must hold every unit test of the plain build.
    unit_list=$(listed_tests "$build" UNIT_TESTS)
    for k in asan tsan; do
        klist=$(cat "$top/_build-$k/tests.list" 2>/dev/null)
        for t in $unit_list; do
            case " $klist " in *" $t "*) ;; *) klist="$klist $t" ;; esac
        done
        # shellcheck disable=SC2086 # one word per test
        check_ran "$k" "$top/_build-$k" $klist
    done
    skips=$skips$'\n'$(skipped_tests "$top/_build-asan")$'\n'$(skipped_tests "$top/_build-tsan")
fi

say "steps:"
printf 'test-all:   %s\n' "${steps[@]}"
if [ "${#not_run[@]}" -gt 0 ]; then
    say "NOT EVERYTHING RAN: steps left out: ${not_run[*]}"
fi
if [ "${#not_ran[@]}" -gt 0 ]; then
    say "NOT EVERYTHING RAN: listed tests without a result:"
    printf 'test-all:   %s\n' "${not_ran[@]}"
fi
skips=$(printf '%s\n' "$skips" | sed '/^$/d')
if [ -n "$skips" ]; then
    say "skipped tests and parts:"
    printf '%s\n' "$skips" | sed 's/^/test-all:   /'
fi
cpu_s
say "took $(( ($(date +%s) - start_s) / 60 )) min $(( ($(date +%s) - start_s) % 60 )) s ($cpu s CPU)"
if [ "$failed" -ne 0 ]; then status=1; fi
# A non-zero status with nothing counted as failed would be a lie too.
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
echo "$passed passed, $failed failed"
exit "$status"
