#!/usr/bin/env bash
# bench_control.sh: the pause that runtime control of the patched RTS's
# eventlog imposes, as a Markdown table: a SYNC snapshot, a restart (whose
# stream starts with the full snapshot, the content of a JOIN snapshot)
# and a class toggle, with THREADS live labelled Haskell threads, beside
# a plain flushEventLog.  bench/ControlBench.hs does the timing (median
# and maximum of REPS calls, in microseconds); the program runs -N2 with
# the eventlog going to a file in a temporary directory.  About 10 s.
#
# Usage: bench/bench_control.sh [THREADS [REPS]]   (default 10000 20)
# Environment: BUILD_DIR (default: the source tree's _build),
# BENCH_APP_BUILD (where the binary is cached, default
# ${TMPDIR:-/tmp}/bench_control-build).  Measures only; fails only when
# the program cannot be built or fails.
set -u -o pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$TOP/_build}
THREADS=${1:-10000}
REPS=${2:-20}
OBJ=${BENCH_APP_BUILD:-${TMPDIR:-/tmp}/bench_control-build}
PGHC=$BUILD_DIR/patched-rts/bin/ghc-eventlog-sink

[ -x "$PGHC" ] || { echo "bench_control: no patched RTS at $PGHC (run make)" >&2; exit 1; }
mkdir -p "$OBJ" || exit 1
if [ ! -x "$OBJ/control-bench" ] || [ "$TOP/bench/ControlBench.hs" -nt "$OBJ/control-bench" ] \
    || [ "$BUILD_DIR/patched-rts/build-report.txt" -nt "$OBJ/control-bench" ]; then
    echo "bench_control: building ControlBench" >&2
    "$PGHC" -v0 -O -threaded -eventlog -rtsopts -outputdir "$OBJ/obj" \
        "$TOP/bench/ControlBench.hs" "$TOP/bench/bench_control_writer.c" \
        -o "$OBJ/control-bench" || exit 1
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
echo "| operation | live threads | median us | max us |"
echo "|---|---|---|---|"
(cd "$tmp" && BENCH_CONTROL_OUT=$tmp/restarted.eventlog \
    "$OBJ/control-bench" "$THREADS" "$REPS" +RTS -N2 -l -RTS) || exit 1
