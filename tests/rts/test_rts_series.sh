#!/usr/bin/env bash
# test_rts_series.sh: the RTS patch series and the patched RTS it builds.
#
# Checks that the series (rts-patches/ghc-BASE, or ELS_RTS_SERIES) applies
# cleanly with patch -p1 and no fuzz to the pristine GHC source the build
# extracted; that every prefix of the series builds (the first k patches
# built as a series of their own by build-patched-rts.sh --check-prefixes:
# every object the prefix changes compiled for the thr_l way (every
# installed way with ELS_PREFIX_WAYS=all), the archive assembled, and a
# program linked against the prefix (thr_l) runs and writes an eventlog
# ghc-events reads; the whole series is the build under test, built for
# every way by the build itself and not again here); and that a Haskell
# program
# emitting traceEventIO events, compiled with the built ghc-eventlog-sink
# (-threaded -eventlog -rtsopts), links against the patched RTS archives,
# runs with +RTS -l and writes an eventlog ghc-events parses with every
# event in it.  It does not test the sink
# flag or anything the patches add (the end-to-end tests do).
#
# Skips (77) without GHC BASE, ghc-events, or the built patched RTS
# (ELS_PATCHED_RTS_DIR, default $ELS_TOP_BUILDDIR/patched-rts).
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"

series=${ELS_RTS_SERIES:-$ELS_TOP_SRCDIR/rts-patches/ghc-9.0.2}
out=${ELS_PATCHED_RTS_DIR:-$ELS_TOP_BUILDDIR/patched-rts}
script=$ELS_TOP_SRCDIR/rts-patches/build-patched-rts.sh
[ -f "$series/BASE" ] || skip "no series BASE in $series"
base=$(tr -d ' \n' <"$series/BASE")
[ -n "$GHC" ] && command -v "$GHC" >/dev/null 2>&1 || skip "GHC not found"
version=$("$GHC" --numeric-version) || skip "$GHC --numeric-version failed"
[ "$version" = "$base" ] || skip "GHC $version found; the RTS patch series is for $base"
[ -n "$GHC_EVENTS" ] && command -v "$GHC_EVENTS" >/dev/null 2>&1 || skip "ghc-events not found"
sinkghc=$out/bin/ghc-eventlog-sink
[ -x "$sinkghc" ] || skip "patched RTS not built ($sinkghc; make patched-rts)"
pristine=$out/work/pristine
[ -d "$pristine/rts" ] || skip "no pristine source in $pristine"

make_tmpdir
T=$ELS_TMP

# ---------------------------------------------------------------------------
# The whole series applies cleanly, in order.
# ---------------------------------------------------------------------------
mapfile -t patches < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' "$series/series")
note "series: ${#patches[@]} patch(es) for GHC $base"
cp -a "$pristine" "$T/tree" || fail "cannot copy $pristine"
i=0
for p in "${patches[@]}"; do
    i=$((i + 1))
    [ -f "$series/$p" ] || fail "series names $p, which is not in $series"
    patch -p1 --batch --forward --fuzz=0 --no-backup-if-mismatch -d "$T/tree" \
        <"$series/$p" >"$T/patch.log" 2>&1 \
        || fail "patch #$i $p does not apply cleanly: $(tail -n 3 "$T/patch.log" | tr '\n' ' ')"
    if grep -Eq 'fuzz|offset' "$T/patch.log"; then
        note "patch #$i $p applies with offsets: $(grep -E 'fuzz|offset' "$T/patch.log" | head -n 2 | tr '\n' ' ')"
    fi
    find "$T/tree" -name '*.rej' | grep -q . && fail "patch #$i $p left .rej files"
    head -n 5 "$series/$p" | grep -q '^From [0-9a-f]\{40\} ' \
        || fail "patch #$i $p is not git format-patch output (no 'From <sha>' line)"
    grep -q '^Subject: \[PATCH[^]]*\] eventlog: ' "$series/$p" \
        || fail "patch #$i $p: subject is not 'eventlog: <imperative>'"
done

# ---------------------------------------------------------------------------
# Each prefix builds (thr_l, or every way), links and runs (thr_l).
# ---------------------------------------------------------------------------
if [ "${#patches[@]}" -gt 0 ]; then
    t0=$(date +%s)
    prefix_ways=${ELS_PREFIX_WAYS:-thr_l}
    [ "$prefix_ways" != all ] || prefix_ways=''
    bash "$script" --series "$series" --out "$out" --ghc "$GHC" \
        --check-prefixes --scratch "$T/prefixes" ${prefix_ways:+--ways "$prefix_ways"} \
        >"$T/prefixes.log" 2>&1 || {
        sed 's/^/#   /' "$T/prefixes.log" >&2
        fail "a prefix of the series does not build"
    }
    sed 's/^/# /' "$T/prefixes.log" >&2
    # The whole series (prefix 1..N) is the build under test: the builder
    # says so rather than build it again, and the program below links
    # against it and runs.
    total=${#patches[@]}
    grep -qF "prefix 1..$total is the series this build made" "$T/prefixes.log" \
        || fail "the builder did not recognise the whole series as this build's"
    n=$(grep -c '^build-patched-rts: prefix .*linked and ran' "$T/prefixes.log")
    [ "$n" -eq $((total - 1)) ] || fail "$n prefixes checked, expected $((total - 1))"
    for k in $(seq 1 $((total - 1))); do
        c=$(count_user_events "$T/prefixes/prefix-$k.eventlog" "prefix-check") \
            || fail "prefix 1..$k: ghc-events cannot read the eventlog its program wrote"
        [ "$c" -eq 1 ] || fail "prefix 1..$k: $c 'prefix-check' events in its program's eventlog, expected 1"
    done
    note "every prefix built, linked and ran in $(( $(date +%s) - t0 )) s"
fi

# ---------------------------------------------------------------------------
# A program built with ghc-eventlog-sink uses the patched RTS and writes
# an eventlog ghc-events reads.
# ---------------------------------------------------------------------------
N=2000
mkdir -p "$T/hello"
cat >"$T/hello/Hello.hs" <<EOF
import Control.Monad (forM_)
import Debug.Trace (traceEventIO)

main :: IO ()
main = do
  forM_ [1 .. $N :: Int] \$ \\i -> traceEventIO ("rts-series " ++ show i)
  putStrLn "emitted $N user events"
EOF
(cd "$T/hello" && "$sinkghc" -v3 -threaded -eventlog -rtsopts Hello.hs -o hello) \
    >"$T/ghc.log" 2>&1 || { tail -n 20 "$T/ghc.log" >&2; fail "ghc-eventlog-sink cannot build Hello.hs"; }
grep -q -- "-L$out/lib/rts" "$T/ghc.log" \
    || fail "the link did not use the patched RTS dir $out/lib/rts"
libdir=$("$sinkghc" --print-libdir)
[ "$libdir" = "$out/lib" ] || fail "ghc-eventlog-sink --print-libdir is $libdir, expected $out/lib"
(cd "$T/hello" && ./hello +RTS -l -RTS) >"$T/hello.out" 2>"$T/hello.err" \
    || { cat "$T/hello.err" >&2; fail "the program failed"; }
grep -qx "emitted $N user events" "$T/hello.out" || fail "unexpected output: $(head -c 200 "$T/hello.out")"
[ -s "$T/hello/hello.eventlog" ] || fail "+RTS -l wrote no hello.eventlog"
count=$(count_user_events "$T/hello/hello.eventlog" "rts-series ") || fail "ghc-events cannot parse the eventlog"
note "patched RTS: $count user events, $(wc -c <"$T/hello/hello.eventlog") bytes"
[ "$count" -eq "$N" ] || fail "$count user events in the eventlog, expected $N"

exit 0
