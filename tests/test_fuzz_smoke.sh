#!/bin/bash
# test_fuzz_smoke.sh: a short run of every libFuzzer target in fuzz/
# (scripts/fuzz.sh), so that the targets keep building against the library
# and the committed corpus (including its regress-* reproducers of fixed
# bugs) keeps passing.
#
# Builds the targets in this test's temporary directory (about 10 s on 2
# cores), fuzzes each for ELS_FUZZ_SECONDS (default 3) starting from a
# scratch copy of fuzz/corpus/, and fails if scripts/fuzz.sh reports a
# crash, a leak, a sanitizer report or a broken property (the reproducer's
# bytes are in this test's log, its file is copied to fuzz-crashes/ in the
# build tree), if a target did not run, or if the committed corpus
# changed.  Finding bugs takes longer runs: see
# fuzz/README.  Skips (77) when clang or its libFuzzer runtime (Debian:
# clang, libclang-rt-dev) is missing.
#
# Environment: ELS_FUZZ_SECONDS, ELS_FUZZ_CC (default clang).

set -u

. "$(dirname "$0")/harness.sh"

make_tmpdir
seconds=${ELS_FUZZ_SECONDS:-3}
script=$ELS_TOP_SRCDIR/scripts/fuzz.sh
corpus=$ELS_TOP_SRCDIR/fuzz/corpus
[ -f "$script" ] || fail "no $script"
[ -d "$corpus" ] || fail "no $corpus"

# What the committed corpus holds: names, sizes and contents.
corpus_digest() {
    (cd "$corpus" && find . -type f | LC_ALL=C sort | xargs cksum)
}
before=$(corpus_digest)

rc=0
BUILD_DIR=$ELS_TMP/fuzz CC=${ELS_FUZZ_CC:-clang} \
    bash "$script" --seconds "$seconds" >"$ELS_TMP/fuzz.out" 2>"$ELS_TMP/fuzz.err" || rc=$?
sed 's/^/# /' "$ELS_TMP/fuzz.out" "$ELS_TMP/fuzz.err" >&2
if [ "$rc" -eq 77 ]; then
    skip "$(tail -n 1 "$ELS_TMP/fuzz.err")"
fi
if [ "$rc" -ne 0 ]; then
    # The temporary directory goes away: keep the reproducers.
    keep=$ELS_TOP_BUILDDIR/fuzz-crashes
    if [ -d "$ELS_TMP/fuzz/crashes" ] && mkdir -p "$keep" 2>/dev/null &&
            cp -R "$ELS_TMP/fuzz/crashes/." "$keep/" 2>/dev/null; then
        note "reproducers copied to $keep"
    fi
    fail "scripts/fuzz.sh exited with status $rc (see the reproducers above)"
fi

# Every target ran: a summary line with a positive run count.
for t in spec address parse note writer control http model trigger json; do
    line=$(grep "^fuzz: $t: [0-9]* runs" "$ELS_TMP/fuzz.out") \
        || fail "no summary for target $t"
    runs=$(printf '%s\n' "$line" | sed 's/^fuzz: [a-z]*: \([0-9]*\) runs.*/\1/')
    [ "$runs" -gt 0 ] || fail "target $t ran no inputs: $line"
done

after=$(corpus_digest)
[ "$before" = "$after" ] || fail "the committed corpus under $corpus changed"
exit 0
