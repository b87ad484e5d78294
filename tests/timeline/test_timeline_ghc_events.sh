#!/usr/bin/env bash
# test_timeline_ghc_events.sh: the timeline engine (tools/timeline) on
# real eventlogs against the independent reader, ghc-events show.
#
# tests/timeline/Timeline.hs (labelled workers on -N2, collections, an
# MVar hand-over, markers) is built with the installed GHC and run with
# +RTS -l; it and the real log in tests/data are indexed where they lie
# and, for the program's log, through a live spool too.  figures.py
# then checks that a 1 ms window around a known marker lists exactly the
# events ghc-events shows there, that a selection's collections, pauses,
# allocation and per-thread running time equal the values it computes
# from ghc-events' lines, and that thread lanes carry their labels.
#
# Skips (77) without GHC or ghc-events.
set -u -o pipefail

. "$(dirname "$0")/../lib.sh"

[ -n "$GHC" ] && command -v "$GHC" >/dev/null 2>&1 || skip "GHC not found"
[ -n "$GHC_EVENTS" ] && command -v "$GHC_EVENTS" >/dev/null 2>&1 || skip "ghc-events not found"
command -v python3 >/dev/null 2>&1 || skip "python3 not found"
driver=$ELS_TOP_BUILDDIR/tests/timeline/tl_driver
[ -x "$driver" ] || fail "tl_driver not built: $driver"
make_tmpdir
T=$ELS_TMP
src=$ELS_TOP_SRCDIR/tests/timeline

cp "$src/Timeline.hs" "$T/"
(cd "$T" && "$GHC" -O0 -threaded -eventlog -rtsopts Timeline.hs -o Timeline) \
    >"$T/ghc.log" 2>&1 || { cat "$T/ghc.log" >&2; fail "building Timeline.hs"; }
(cd "$T" && ./Timeline +RTS -l -N2 -A64k -RTS) || fail "Timeline exited with $?"
[ -s "$T/Timeline.eventlog" ] || fail "no Timeline.eventlog"
"$GHC_EVENTS" show "$T/Timeline.eventlog" >"$T/shown" || fail "ghc-events show"
note "$(grep -c '' "$T/shown") lines shown, $(grep -c 'finished GC' "$T/shown") collections"
[ "$(grep -c 'finished GC' "$T/shown")" -gt 2 ] || fail "the program made too few collections to test"

python3 "$src/figures.py" "$driver" "$T/Timeline.eventlog" "$T/shown" \
    "worker 2 step 20" || fail "the engine differs from ghc-events on Timeline.eventlog"
mkdir "$T/spool"
python3 "$src/figures.py" "$driver" "$T/Timeline.eventlog" "$T/shown" \
    "worker 3 step 30" --live "$T/spool" 1073741824 \
    || fail "the engine differs from ghc-events on Timeline.eventlog through a live spool"
[ -z "$(ls -A "$T/spool")" ] || fail "the live spool left files behind: $(ls -A "$T/spool")"

data=$ELS_TOP_SRCDIR/tests/data/ghc-9.0.2-N2.eventlog
"$GHC_EVENTS" show "$data" >"$T/shown-data" || fail "ghc-events show $data"
python3 "$src/figures.py" "$driver" "$data" "$T/shown-data" "worker 1 done" \
    || fail "the engine differs from ghc-events on $data"
exit 0
