#!/usr/bin/env bash
# demo.sh: THE main command: watch a stock GHC 9.0.2 program stream its
# eventlog live over a UNIX socket.
#
# Builds the project (scripts/build.sh) and examples/hello-stream against
# it, starts the receiver `eventlog-sink recv` on a UNIX socket, runs
# hello-stream with EVENTLOG_SINK pointing at that socket (wait=10: its
# start-up waits for the receiver, so no event is lost; policy=block: a
# slow receiver slows the program rather than losing events), then reads
# what arrived with the independent ghc-events reader: the first events,
# the number of user events against the number emitted, and ghc-events'
# own validation.  Safe to run again: every run uses a fresh directory
# under _build/demo/ (the last one is kept for inspection, older ones are
# removed).
#
# Usage: scripts/demo.sh [N]      (N user events, default 200000)
# Environment: ELS_SKIP_DEPS=1 skips the package check of build.sh.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"
n=${1:-200000}
build=$top/_build

say() { printf '\n== %s\n' "$*"; }

say "Building eventlog-sink (scripts/build.sh)"
mkdir -p "$build/demo"
"$top/scripts/build.sh" >"$build/demo/build.log" 2>&1 || {
    tail -n 40 "$build/demo/build.log" >&2
    echo "demo: the build failed; full log in $build/demo/build.log" >&2
    exit 1
}
echo "built in $build (log: $build/demo/build.log)"

ghc=$(command -v ghc || true)
ghc_events=$(command -v ghc-events || true)
[ -n "$ghc" ] || { echo "demo: ghc not found (scripts/install-deps.sh installs it)" >&2; exit 1; }
[ -n "$ghc_events" ] || { echo "demo: ghc-events not found (package libghc-ghc-events-dev)" >&2; exit 1; }

say "Compiling examples/hello-stream against the library"
prog=$(GHC=$ghc "$top/examples/hello-stream/build.sh" "$build" | tail -n 1)
echo "$prog"

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
cleanup() {
    if [ -n "$recv_pid" ] && kill -0 "$recv_pid" 2>/dev/null; then
        kill "$recv_pid" 2>/dev/null || true
    fi
}
trap cleanup EXIT

say "Starting the receiver"
echo "eventlog-sink recv --retry 15 -o $out unix:$sock &"
"$build/tools/eventlog-sink" recv --retry 15 -o "$out" "unix:$sock" 2>"$dir/recv.err" &
recv_pid=$!

say "Running the program (stock GHC $("$ghc" --numeric-version) RTS, C main sets RtsConfig.eventlog_writer)"
echo "EVENTLOG_SINK=\"unix:$sock?wait=10&policy=block\" $prog $n +RTS -l -N2"
prog_rc=0
EVENTLOG_SINK="unix:$sock?wait=10&policy=block" "$prog" "$n" +RTS -l -N2 -RTS || prog_rc=$?
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

say "User events"
user=$(awk '/^ *[0-9]+: / { sub(/^ *[0-9]+: (cap [0-9]+: )?/, ""); if (index($0, "hello-stream ") == 1) n++ } END { print n + 0 }' "$dir/app.show")
total=$(awk '/^Events:/ { on = 1; next } on && /^ *[0-9]+: / { n++ } END { print n + 0 }' "$dir/app.show")
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

say "Result"
if [ "$prog_rc" -eq 0 ] && [ "$recv_rc" -eq 0 ] && [ "$user" -eq "$n" ] && [ "$valid" = ok ]; then
    echo "OK: the program streamed its eventlog live over $sock; the receiver got a complete"
    echo "stream that ghc-events parses and validates, with all $n user events."
    echo "Files: $dir"
    exit 0
fi
echo "NOT OK: program exit $prog_rc, receiver exit $recv_rc, $user of $n user events, validation $valid."
echo "Files: $dir"
exit 1
