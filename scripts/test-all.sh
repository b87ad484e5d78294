#!/usr/bin/env bash
# test-all.sh: THE test command: build, run every test, check the
# distribution, run the unit tests under sanitizers.
#
# Steps: scripts/build.sh (deps, autoreconf, configure _build/, make);
# `make check` in _build (unit tests and the shell end-to-end tests; the
# logs of failing tests are printed); `make distcheck` in _build (the
# tarball builds, passes its tests, installs and cleans up out of tree);
# scripts/sanitize.sh (ASan+UBSan and TSan builds of the unit tests).
# Each test run's automake summary ("# PASS:" / "# FAIL:" / "# ERROR:" /
# "# XPASS:" totals) is added up, and the last line printed is
# "N passed, N failed" over all runs (skipped tests are in neither count;
# a step that fails without running tests counts as one failure).
#
# Usage: scripts/test-all.sh
# Environment: SKIP_DISTCHECK=1, SKIP_SANITIZE=1 leave out those steps
# (for quick local runs; CI runs everything).  MAKE_JOBS (default 2).
# Exit status: 0 only if every step passed.
set -uo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top" || exit 1
build=$top/_build
jobs=${MAKE_JOBS:-2}

passed=0
failed=0
skipped=0
status=0
steps=()

# add_totals NAME FILE: add the first "# PASS:"-style totals in FILE.
add_totals() {
    local name=$1 file=$2 p f s
    if [ ! -f "$file" ]; then
        echo "test-all: $name: no test summary ($file)" >&2
        failed=$((failed + 1))
        return
    fi
    read -r p f s < <(sed 's/\x1b\[[0-9;]*m//g' "$file" | awk '
        $1 == "#" && !seen[$2]++ {
            if ($2 == "PASS:") p = $3
            else if ($2 == "FAIL:" || $2 == "ERROR:" || $2 == "XPASS:") f += $3
            else if ($2 == "SKIP:") s = $3
        }
        END { print p + 0, f + 0, s + 0 }')
    echo "test-all: $name: $p passed, $f failed, $s skipped"
    passed=$((passed + p))
    failed=$((failed + f))
    skipped=$((skipped + s))
}

# print_failed_logs DIR: show the .log of every failed test under DIR.
print_failed_logs() {
    local trs
    while IFS= read -r trs; do
        if grep -Eq '^:test-result: (FAIL|ERROR|XPASS)' "$trs"; then
            echo "----- ${trs%.trs}.log" >&2
            cat "${trs%.trs}.log" >&2 || true
        fi
    done < <(find "$1" -name '*.trs' 2>/dev/null | sort)
}

step() {
    steps+=("$1: $2")
}

# 1. Build.
if ! "$top/scripts/build.sh"; then
    step build FAILED
    echo "test-all: the build failed; nothing was tested" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
step build ok

# 2. make check: every test, including the shell tests.
rm -f "$build/test-suite.log"
if make -C "$build" -j"$jobs" check; then
    step check ok
else
    step check FAILED
    status=1
    print_failed_logs "$build"
fi
add_totals check "$build/test-suite.log"
check_ok=$status

# 3. make distcheck (its own out-of-tree build of the tarball; its
# test-suite.log is removed when it passes, so read its console summary).
if [ -n "${SKIP_DISTCHECK:-}" ]; then
    step distcheck "skipped (SKIP_DISTCHECK)"
elif [ "$check_ok" -ne 0 ]; then
    step distcheck "not run (make check failed)"
else
    dlog=$build/distcheck.out
    if make -C "$build" -j"$jobs" distcheck 2>&1 | tee "$dlog"; then
        step distcheck ok
    else
        step distcheck FAILED
        status=1
        print_failed_logs "$build/eventlog-sink-"*/
    fi
    if grep -q '^# TOTAL:' "$dlog"; then
        add_totals distcheck "$dlog"
    elif [ "$status" -ne 0 ]; then
        echo "test-all: distcheck failed before running tests" >&2
        failed=$((failed + 1))
    fi
fi

# 4. Sanitizers.
if [ -n "${SKIP_SANITIZE:-}" ]; then
    step sanitize "skipped (SKIP_SANITIZE)"
else
    rm -f "$top"/_build-asan/test-suite.log "$top"/_build-tsan/test-suite.log
    if "$top/scripts/sanitize.sh"; then
        step sanitize ok
    else
        step sanitize FAILED
        status=1
    fi
    add_totals asan "$top/_build-asan/test-suite.log"
    add_totals tsan "$top/_build-tsan/test-suite.log"
fi

echo "test-all: steps:"
printf 'test-all:   %s\n' "${steps[@]}"
[ "$skipped" -eq 0 ] || echo "test-all: $skipped tests skipped"
if [ "$failed" -ne 0 ]; then status=1; fi
echo "$passed passed, $failed failed"
exit "$status"
