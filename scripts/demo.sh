#!/usr/bin/env bash
# demo.sh: THE main command: watch a GHC 9.0.2 program stream its eventlog
# live over a UNIX socket, chosen with +RTS --eventlog-sink.
#
# A first result in minutes on a fresh machine: it installs only the
# packages it needs (scripts/install-deps.sh --demo: the C toolchain,
# autotools, GHC, ghc-events) and builds the library, the `eventlog-sink`
# command and the one way of the patched RTS it links against (`make
# patched-rts-thr_l`: -threaded -eventlog; the test command builds the
# other ways).  Getting GHC's source needs apt and root (rts-patches/
# README).  Compiles examples/live-service with
# _build/patched-rts/bin/ghc-eventlog-sink (no C main: the sink is an RTS
# option), starts the receiver `eventlog-sink recv` and the live monitor
# `eventlog-sink top --lines` on a UNIX socket that does not exist yet,
# runs `live-service burst N +RTS -N2 --eventlog-sink="unix:...?wait=10&
# wait-consumers=2&policy=block"` (start-up waits for both consumers, so
# neither misses an event; policy=block: a slow consumer slows the
# program rather than losing events), then reads what arrived with the
# independent ghc-events reader: the first events, the start-up events,
# the user events against the number emitted, and ghc-events' own
# validation; and checks the monitor's last live view: the stream ended,
# nothing lost, not joined mid-run, and its GC collections equal those
# the RTS itself reports (+RTS -s, "Gen N: C colls" summed).
# Without a patched RTS (another GHC version, or --disable-patched-rts)
# it says so and takes the stock-RTS route instead: examples/hello-stream,
# whose C main sets RtsConfig.eventlog_writer from $EVENTLOG_SINK.  Safe
# to run again: the build is incremental, the program is recompiled only
# when it is out of date, and every run uses a fresh directory under
# _build/demo/ (the last one is kept for inspection, older ones removed).
#
# Usage: scripts/demo.sh [N]      (N user events, default 200000)
# Environment: ELS_SKIP_DEPS=1 skips the package check of build.sh;
#              BUILD_DIR as for build.sh (default _build).
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"
n=${1:-200000}
case "$n" in
    '' | *[!0-9]*) echo "usage: scripts/demo.sh [N]   (N user events, default 200000)" >&2; exit 2 ;;
esac
build=${BUILD_DIR:-_build}
case "$build" in /*) ;; *) build=$top/$build ;; esac

say() { printf '\n== %s\n' "$*"; }
demo_t0=$(date +%s)
took() { echo "took $(( $(date +%s) - demo_t0 )) s (load average: $(cut -d' ' -f1-3 /proc/loadavg))"; }

say "Building eventlog-sink (scripts/build.sh)"
mkdir -p "$build/demo"
t0=$(date +%s)
BUILD_DIR=$build ELS_DEPS=--demo \
    MAKE_TARGETS="lib/libeventlog-sink.la tools/eventlog-sink patched-rts-thr_l" \
    "$top/scripts/build.sh" >"$build/demo/build.log" 2>&1 || {
    tail -n 40 "$build/demo/build.log" >&2
    echo "demo: the build failed; full log in $build/demo/build.log" >&2
    exit 1
}
echo "built in $build in $(( $(date +%s) - t0 )) s (log: $build/demo/build.log)"

ghc=$(command -v ghc || true)
ghc_events=$(command -v ghc-events || true)
[ -n "$ghc" ] || { echo "demo: ghc not found (scripts/install-deps.sh installs it)" >&2; exit 1; }
[ -n "$ghc_events" ] || { echo "demo: ghc-events not found (package libghc-ghc-events-dev)" >&2; exit 1; }
ghc_version=$("$ghc" --numeric-version)
libdir=$build/lib/.libs
[ -e "$libdir/libeventlog-sink.so" ] || { echo "demo: $libdir/libeventlog-sink.so was not built" >&2; exit 1; }

# Which route: the patched RTS if the build made it.
patched=$build/patched-rts/bin/ghc-eventlog-sink
if [ -x "$patched" ]; then
    route=patched
else
    route=stock
    why=
    if [ -f "$build/patched-rts/SKIPPED" ]; then
        why=$(head -n 1 "$build/patched-rts/SKIPPED")
    elif [ -f "$build/Makefile" ]; then
        why=$(sed -n 's/^PATCHED_RTS_NOTE = //p' "$build/Makefile" | head -n 1)
    fi
    : "${why:=no patched RTS in $build/patched-rts}"
fi

if [ "$route" = patched ]; then
    say "Compiling examples/live-service against the patched RTS (GHC $ghc_version)"
    prog_dir=$build/demo/live-service
    prog=$prog_dir/live-service
    src=$top/examples/live-service/Main.hs
    mkdir -p "$prog_dir"
    fresh=1
    [ -x "$prog" ] || fresh=0
    for dep in "$src" "$libdir/libeventlog-sink.so" "$patched" "$build"/patched-rts/lib/rts/libHSrts_thr_l.a; do
        [ -e "$dep" ] || continue
        [ "$fresh" -eq 1 ] && [ "$prog" -nt "$dep" ] || fresh=0
    done
    echo "$patched -threaded -eventlog -rtsopts Main.hs -o live-service -L$libdir -leventlog-sink"
    if [ "$fresh" -eq 1 ]; then
        echo "(up to date: $prog)"
    else
        # A copy in a work directory: the source tree gets no objects.
        rm -rf "$prog_dir/work"
        mkdir -p "$prog_dir/work"
        cp "$src" "$prog_dir/work/Main.hs"
        (cd "$prog_dir/work" && "$patched" -v0 -O -threaded -eventlog -rtsopts \
            -outputdir obj Main.hs -o live-service \
            -L"$libdir" -leventlog-sink -optl-Wl,-rpath,"$libdir") || {
            echo "demo: compiling examples/live-service failed" >&2
            exit 1
        }
        mv -f "$prog_dir/work/live-service" "$prog"
        rm -rf "$prog_dir/work"
        echo "built $prog"
    fi
    user_prefix="live-service burst "
else
    say "No patched RTS: $why"
    echo "Taking the stock-RTS route instead: examples/hello-stream, whose C main"
    echo "hands the library's writer to the RTS (RtsConfig.eventlog_writer) when"
    echo "EVENTLOG_SINK is set."
    say "Compiling examples/hello-stream against the library"
    prog=$(GHC=$ghc "$top/examples/hello-stream/build.sh" "$build" | tail -n 1)
    echo "$prog"
    user_prefix="hello-stream "
fi

# A short directory: UNIX socket paths must fit in sun_path (108 bytes).
find "$build/demo" -mindepth 1 -maxdepth 1 -name 'run.*' -exec rm -rf {} +
dir=$(mktemp -d "$build/demo/run.XXXXXX")
if [ "${#dir}" -gt 80 ]; then
    rmdir "$dir"
    dir=$(mktemp -d "${TMPDIR:-/tmp}/els-demo.XXXXXX")
fi
sock=$dir/app.sock
out=$dir/app.eventlog

recv_pid=
top_pid=
cleanup() {
    for p in "$recv_pid" "$top_pid"; do
        if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
            kill "$p" 2>/dev/null || true
        fi
    done
}
trap cleanup EXIT

say "Starting the receiver"
echo "eventlog-sink recv --retry 15 unix:$sock -o $out &"
"$build/tools/eventlog-sink" recv --retry 15 -o "$out" "unix:$sock" 2>"$dir/recv.err" &
recv_pid=$!

say "Starting the live monitor beside it"
echo "eventlog-sink top --lines --interval 0.5 unix:$sock > $dir/top.out &"
"$build/tools/eventlog-sink" top --lines --interval 0.5 "unix:$sock" >"$dir/top.out" 2>"$dir/top.err" &
top_pid=$!

prog_rc=0
if [ "$route" = patched ]; then
    say "Running the program (patched GHC $ghc_version RTS; the sink is an RTS option)"
    echo "live-service burst $n +RTS -N2 -s$dir/app.stats --eventlog-sink=\"unix:$sock?wait=10&wait-consumers=2&policy=block\""
    "$prog" burst "$n" +RTS -N2 "-s$dir/app.stats" "--eventlog-sink=unix:$sock?wait=10&wait-consumers=2&policy=block" -RTS || prog_rc=$?
else
    say "Running the program (stock GHC $ghc_version RTS; its C main reads EVENTLOG_SINK)"
    echo "EVENTLOG_SINK=\"unix:$sock?wait=10&wait-consumers=2&policy=block\" hello-stream $n +RTS -l -N2 -s$dir/app.stats"
    EVENTLOG_SINK="unix:$sock?wait=10&wait-consumers=2&policy=block" "$prog" "$n" +RTS -l -N2 "-s$dir/app.stats" -RTS || prog_rc=$?
fi
echo "program exit status: $prog_rc"

recv_rc=0
wait "$recv_pid" || recv_rc=$?
recv_pid=
echo "receiver exit status: $recv_rc (0: complete stream, 3: truncated or malformed)"
if [ -s "$dir/recv.err" ]; then sed 's/^/receiver: /' "$dir/recv.err"; fi
[ -f "$out" ] || { echo "demo: nothing was received" >&2; exit 1; }
echo "received $(wc -c <"$out") bytes into $out"

say "The first events, as ghc-events reads them"
"$ghc_events" show "$out" >"$dir/app.show" 2>"$dir/show.err" || {
    cat "$dir/show.err" >&2
    echo "demo: ghc-events cannot parse the received stream" >&2
    exit 1
}
awk '/^Events:/ { on = 1 } on { print; if (++shown == 25) exit }' "$dir/app.show"

say "Start-up events (the receiver was there from the first event)"
startup=$(grep -E '^ *[0-9]+: (created capset|capset 0: (RTS version|args|pid))' "$dir/app.show" || true)
if [ -n "$startup" ]; then
    printf '%s\n' "$startup"
else
    echo "none found"
fi

say "User events"
user=$(awk -v p="$user_prefix" '/^ *[0-9]+: / { sub(/^ *[0-9]+: (cap [0-9]+: )?/, ""); if (index($0, p) == 1) n++ } END { print n + 0 }' "$dir/app.show")
total=$(awk '/^Events:/ { on = 1; next } on && /^ *[0-9]+: / { n++ } END { print n + 0 }' "$dir/app.show")
awk -v p="$user_prefix" '/^ *[0-9]+: / { line = $0; sub(/^ *[0-9]+: (cap [0-9]+: )?/, ""); if (index($0, p) == 1) { print line; if (++k == 3) exit } }' "$dir/app.show"
echo "..."
echo "$user user events received of $n emitted ($total events in all)"

say "ghc-events validate"
valid=ok
for what in threads tasks sparks; do
    if "$ghc_events" validate "$what" "$out" >"$dir/validate-$what.out" 2>&1 \
            && grep -q '^Valid event log' "$dir/validate-$what.out"; then
        echo "validate $what: valid"
    else
        echo "validate $what: $(head -n 3 "$dir/validate-$what.out")"
        valid=no
    fi
done

say "The live monitor's last view (eventlog-sink top, a second consumer)"
kill -INT "$top_pid" 2>/dev/null || true
wait "$top_pid" 2>/dev/null || true
top_pid=
# The last complete view: from its last "eventlog-sink top:" line on.
awk '/^eventlog-sink top: / { buf = "" } { buf = buf $0 "\n" } END { printf "%s", buf }' \
    "$dir/top.out" >"$dir/top.last"
head -n 40 "$dir/top.last"
echo "(every view: $dir/top.out)"

say "The live view against the RTS's own report and the received stream"
# What the monitor saw while the program ran, not a later reading of the
# file: its last view must show the whole stream (ended, nothing lost,
# not joined mid-run) and the GC collections the RTS reports (+RTS -s:
# every capability of a parallel collection posts a GC_START, so the
# starts ghc-events shows are not collections).
monitor=ok
gc_live=$(awk '$1 == "GC" && $2 ~ /^[0-9]+$/ && $3 == "collections" { print $2; exit }' "$dir/top.last")
gc_rts=$(awk '$1 == "Gen" && $4 == "colls," { n += $3; found = 1 } END { if (found) print n }' "$dir/app.stats" 2>/dev/null || true)
gc_starts=$(grep -cE '^ *[0-9]+: cap [0-9]+: starting GC$' "$dir/app.show" || true)
echo "GC collections: live monitor ${gc_live:-none}, +RTS -s ${gc_rts:-none} (ghc-events shows $gc_starts GC starts over the capabilities)"
[ -n "${gc_rts:-}" ] && [ "${gc_live:-x}" = "$gc_rts" ] || monitor=no
if grep -q '^Received .*\[ended\]' "$dir/top.last"; then
    echo "the monitor saw the stream's end"
else
    echo "the monitor did not see the stream end"; monitor=no
fi
if grep -q '^Loss: none reported' "$dir/top.last" && ! grep -q '^Joined mid-run' "$dir/top.last"; then
    echo "the monitor had the stream from its first event, with no loss"
else
    echo "the monitor joined late or lost events"; monitor=no
fi

say "Result"
if [ "$route" = patched ]; then
    how="chose its sink with +RTS --eventlog-sink (patched RTS, no C main)"
else
    how="chose its sink in its C main (stock RTS; $why)"
fi
if [ "$prog_rc" -eq 0 ] && [ "$recv_rc" -eq 0 ] && [ "$user" -eq "$n" ] \
        && [ -n "$startup" ] && [ "$valid" = ok ] && [ "$monitor" = ok ]; then
    echo "OK: the program $how"
    echo "and streamed its eventlog live over $sock."
    echo "The receiver got a complete stream, start-up events first, that ghc-events"
    echo "parses and validates, with all $n user events; the live monitor watched it"
    echo "from its first event to its end and counted the GC collections +RTS -s reports."
    echo "Files: $dir"
    took
    exit 0
fi
echo "NOT OK: program exit $prog_rc, receiver exit $recv_rc, $user of $n user events,"
echo "start-up events $([ -n "$startup" ] && echo present || echo missing), validation $valid, monitor $monitor."
echo "Files: $dir"
took
exit 1
