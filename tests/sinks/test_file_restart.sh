#!/usr/bin/env bash
# test_file_restart.sh: the file: sink across runtime restarts, on the
# patched RTS (examples/live-service `restart K M`: the program stops and
# starts the eventlog K times while two workers emit events).
#
# Every start opens the sink again.  The first stream goes to PATH
# (truncated, as the RTS's own -l does when a program runs again); each
# later one to the first free PATH.N, so all K+1 streams survive: each
# starts with the header, parses, holds at least M - 200 of the workers'
# events (only the chunk a worker was in when the eventlog started can
# straddle a start), and no event is in two of them.  A numbered file
# that exists before the run (an earlier run's) is skipped and left as it
# was.  The forked-child case is test_file.c's (file_forked_child_...).
#
# Skips (77) without the patched RTS, GHC or ghc-events.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"

setup_live_service_test

K=3
M=5000
f=$T/r.eventlog
echo "an earlier run" >"$f.2"
echo "the run before" >"$f"

start_program restart "$LIVE_SERVICE" restart "$K" "$M" +RTS -N2 "--eventlog-sink=file:$f?policy=block" -RTS
prog_rc=0; wait_pid "$ppid" 120 || prog_rc=$?
check_program restart "$prog_rc" "restarted $K times"

[ "$(cat "$f.2")" = "an earlier run" ] || fail "restart: $f.2, which existed before the run, was changed"
files=("$f" "$f.1" "$f.3" "$f.4")
[ ! -e "$f.5" ] || fail "restart: $f.5 exists: more streams than starts"
counts=
for file in "${files[@]}"; do
    name=$(basename "$file")
    [ -f "$file" ] || fail "restart: no stream in $file (only the last start's stream survived?)"
    validate_stream "$file" "$T/$name.show" "live-service restart " \
        || fail "$name: invalid stream: $vs_why"
    [ "$vs_user" -ge $((M - 200)) ] \
        || fail "$name: $vs_user user events, expected at least $((M - 200))"
    counts="$counts $vs_user"
done
dups=$(for file in "${files[@]}"; do
           name=$(basename "$file")
           sed -n 's/^ *[0-9]*: \(cap [0-9]*: \)\{0,1\}\(live-service restart .*\)/\2/p' "$T/$name.show"
       done | sort | uniq -d | wc -l)
[ "$dups" -eq 0 ] || fail "restart: $dups user events are in two streams"
grep -q "holds an earlier stream of this program; this one goes to $f.1" "$T/restart.prog.err" \
    || fail_showing "$T/restart.prog.err" "restart: the program did not say where the second stream went"
note "restart: $((K + 1)) streams in $f, .1, .3, .4 (.2 was taken), user events:$counts"
