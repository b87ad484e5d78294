#!/usr/bin/env bash
# test_sink_security.sh: a program on the patched RTS (examples/
# live-service) against a hostile neighbour, end to end.
#
# a. tcp: a host written as a numeric shorthand (tcp:0:PORT, which name
#    resolution reads as 0.0.0.0) is refused at start-up, exit 1, instead of
#    exposing the stream on every interface; an explicit tcp:0.0.0.0:0
#    listens on every interface and its start-up line is a warning that the
#    stream is exposed without authentication (a consumer on 127.0.0.1
#    still gets the whole stream); the default stays loopback, without it.
# b. unix: and fifo: in a directory another user can write: while that
#    user (uid 65534, through setpriv) swaps symbolic links to a root-only
#    file in and out at the paths, the program (root) starts again and
#    again with mode=0666; the file keeps its owner and mode 0600, and
#    nothing of the program's is left in the directory.  The same race at
#    its worst moments, deterministically, is tests/sinks/test_sink_race.c.
#
# Skips (77) without the patched RTS, GHC, ghc-events or the receiver; b
# is a skipped part (listed by scripts/test-all.sh) unless the test runs
# as root, and fails under ELS_REQUIRE_ALL without setpriv or perl.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"

setup_live_service_test

# ---------------------------------------------------------------------------
# a. TCP hosts.
# ---------------------------------------------------------------------------
rc=0
"$LIVE_SERVICE" burst 10 +RTS "--eventlog-sink=tcp:0:0" -RTS >"$T/zero.prog.out" 2>"$T/zero.prog.err" </dev/null || rc=$?
[ "$rc" -eq 1 ] || fail_showing "$T/zero.prog.err" "zero: exit status $rc, expected 1 (refused)"
head -n 1 "$T/zero.prog.err" | grep -qF 'host "0" is a shorthand for 0.0.0.0 (every interface)' \
    || fail_showing "$T/zero.prog.err" "zero: not refused with a clear error"
! grep -q emitted "$T/zero.prog.out" || fail "zero: the program ran anyway"
note "zero: $(head -n 1 "$T/zero.prog.err")"

start_program any "$LIVE_SERVICE" burst 1000 +RTS "--eventlog-sink=tcp:0.0.0.0:0?wait=30&policy=block" -RTS
program_tcp_endpoint any
case "$endpoint" in
    tcp:0.0.0.0:[1-9]*) ;;
    *) fail "any: the logged endpoint '$endpoint' is not tcp:0.0.0.0:PORT" ;;
esac
grep -qF "listening on $endpoint (every network interface): the eventlog is exposed without authentication" \
    "$T/any.prog.err" || fail_showing "$T/any.prog.err" "any: no warning that the stream is exposed"
start_receiver any "tcp:127.0.0.1:${endpoint##*:}"
wait_both "$rpid"
check_program any "$prog_rc" "emitted 1000 user events"
check_recv any "$recv_rc"
validate_stream "$T/any.eventlog" "$T/any.show" "live-service burst " || fail "any: invalid stream: $vs_why"
[ "$vs_user" -eq 1000 ] || fail "any: $vs_user user events, expected 1000"
note "any: $(grep -F 'listening on' "$T/any.prog.err" | head -n 1)"

start_program lo "$LIVE_SERVICE" burst 10 +RTS "--eventlog-sink=tcp:0?wait=30" -RTS
program_tcp_endpoint lo
start_receiver lo "$endpoint"
wait_both "$rpid"
check_program lo "$prog_rc" "emitted 10 user events"
! grep -q 'exposed' "$T/lo.prog.err" || fail_showing "$T/lo.prog.err" "lo: loopback reported as exposed"
note "lo: $(grep -F 'listening on' "$T/lo.prog.err" | head -n 1)"

# ---------------------------------------------------------------------------
# b. Symbolic links raced in by another user.
# ---------------------------------------------------------------------------
if ! part_runs_as race 65534 || ! part_needs race perl; then
    exit 0
fi
victim=$T/victim
echo secret >"$victim"
chmod 0600 "$victim"
shared=$T/shared
mkdir -m 0777 "$shared"
chmod 0777 "$shared"        # not sticky: the worst case
chmod 0711 "$T"
as_user_bg 65534 perl -e '
    my ($v, @paths) = @ARGV;
    while (1) { for my $p (@paths) { symlink $v, $p; unlink $p; } }' \
    "$victim" "$shared/s.sock" "$shared/f.fifo"
apid=$!
bg_register "$apid"
runs=0 started=0
for i in $(seq 1 15); do
    for spec in "unix:$shared/s.sock?mode=0666" "fifo:$shared/f.fifo?mode=0666"; do
        rc=0
        "$LIVE_SERVICE" burst 10 +RTS "--eventlog-sink=$spec" -RTS >/dev/null 2>"$T/race.err" </dev/null || rc=$?
        runs=$((runs + 1))
        [ "$rc" -ne 0 ] || started=$((started + 1))
        [ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || fail_showing "$T/race.err" "race: the program exited with status $rc"
    done
done
kill "$apid"; wait "$apid" 2>/dev/null || true
got=$(stat -c '%a %u' "$victim")
[ "$got" = "600 0" ] || fail "race: the root-only file is now mode/owner '$got', expected '600 0'"
[ "$(cat "$victim")" = secret ] || fail "race: the root-only file was changed"
strays=$(find "$shared" -mindepth 1 ! -name s.sock ! -name f.fifo | wc -l)
[ "$strays" -eq 0 ] || fail "race: left in the directory: $(ls -a "$shared")"
for p in "$shared/s.sock" "$shared/f.fifo"; do
    [ ! -e "$p" ] || [ -L "$p" ] || fail "race: $p left behind: $(stat -c '%F %U' "$p")"
done
note "race: $runs starts ($started got their endpoint, the others refused what was in the way); the root-only file kept mode 600"
