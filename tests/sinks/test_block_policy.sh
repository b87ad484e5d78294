#!/usr/bin/env bash
# test_block_policy.sh: policy=block end to end, with a Haskell program on
# the patched RTS and consumers that connect and never read a byte.
#
#   a. A trusted consumer (a UNIX-socket client of this user) is idle, and
#      the queue fills only when the RTS writes its last blocks at exit.
#      Those blocks may wait for the stop deadline (linger=) and no longer:
#      the program exits 0, and the report on stderr says what was dropped
#      (stopped) and that a consumer was left behind.  Before the stop had
#      a deadline the program hung at exit for good.
#   b. An untrusted consumer (a TCP client) is idle while the program
#      writes several times the queue: it may not hold the program back.
#      The program runs to the end and exits 0; the client was cut loose
#      (slow-consumer in the report).
#   c. As b, with a UNIX-socket client of another user (uid 65534, socket
#      mode 0666; root only, via setpriv: a skipped part otherwise).
#
# The idle clients are perl one-liners that connect, say so, and sleep.
# Nothing asserts on time: waits have generous deadlines, and a program
# that hangs is killed at its deadline and the case fails.
# Skips (77) without the patched RTS, GHC or perl.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"

require_tool
require_ghc
require_patched_rts
command -v perl >/dev/null 2>&1 || skip "no perl for the idle clients"
make_tmpdir
T=$ELS_TMP

# The program: N user events of about 218 bytes each on capability 0, then
# "done".  With -N1 a 2 MiB RTS buffer fills every ~9,600 events.
prog=$T/fill
cat >"$T/Fill.hs" <<'EOF'
import Control.Monad (forM_)
import Debug.Trace (traceEventIO)
import System.Environment (getArgs)

main :: IO ()
main = do
    [n] <- map read <$> getArgs
    forM_ [1 .. n :: Int] $ \i -> traceEventIO (replicate 200 'x' ++ ' ' : show i)
    putStrLn "done"
EOF
(cd "$T" && patched_ghc_lib -v0 -threaded -eventlog -rtsopts -outputdir obj \
    Fill.hs -o fill) >"$T/build.log" 2>&1 \
    || fail_showing "$T/build.log" "could not build the test program"

# idle_client NAME KIND ADDR [UID]: connect to a UNIX socket path or a TCP
# 127.0.0.1 port (retrying for 20 s while it is not there), print
# "connected", then hold the connection without reading.  Sets cpid.
idle_client() {
    local name=$1 kind=$2 addr=$3 uid=${4:-}
    local run=()
    [ -z "$uid" ] || run=(setpriv --reuid="$uid" --regid="$uid" --clear-groups --)
    "${run[@]}" perl -MIO::Socket::UNIX -MIO::Socket::INET -e '
        my ($kind, $addr) = @ARGV;
        $| = 1;
        for (1 .. 200) {
            my $s = $kind eq "unix"
                ? IO::Socket::UNIX->new(Peer => $addr)
                : IO::Socket::INET->new(PeerAddr => "127.0.0.1:$addr");
            if ($s) { print "connected\n"; sleep 600; exit 0 }
            select(undef, undef, undef, 0.1);
        }
        die "cannot connect to $addr: $!\n";' "$kind" "$addr" \
        >"$T/$name.client.out" 2>"$T/$name.client.err" &
    cpid=$!
    bg_register "$cpid"
}

# check_loss NAME CAUSE WHY: the program's loss report names CAUSE.
check_loss() {
    grep -Eq "dropped [0-9]+ of [0-9]+ units .*$2 [1-9]" "$T/$1.prog.err" \
        || fail_showing "$T/$1.prog.err" "$1: $3 (no $2 loss reported)"
    note "$1: exit 0: $(grep dropped "$T/$1.prog.err")"
}

# check_exit NAME: the program ran to its end (status 0, "done").
check_exit() {
    prog_rc=0
    wait_pid "$ppid" 60 || prog_rc=$?
    [ "$prog_rc" -ne 124 ] \
        || fail_showing "$T/$1.prog.err" "$1: the program was still running after 60 s (held back by an idle consumer)"
    check_program "$1" "$prog_rc" done
    kill "$cpid" 2>/dev/null || true
}

# ---------------------------------------------------------------------------
# a. Trusted idle consumer, the queue full at exit.  About 3.5 MiB of
# events: one 2 MiB block during the run fits the 3 MiB queue; the last
# ~1.5 MiB block at exit does not (the socket holds ~200 KiB).
# ---------------------------------------------------------------------------
idle_client a unix "$T/a.sock"
start_program a "$prog" 16800 +RTS -N1 \
    "--eventlog-sink=unix:$T/a.sock?wait=30&policy=block&buffer=3M&linger=1"
wait_until 30 grep -q connected "$T/a.client.out" \
    || fail_showing "$T/a.client.err" "a: the idle client did not connect"
check_exit a
check_loss a stopped "the blocks that did not fit at exit are not reported"
grep -q '1 consumers were still behind when linger= ran out' "$T/a.prog.err" \
    || fail_showing "$T/a.prog.err" "a: the consumer left behind is not reported"

# ---------------------------------------------------------------------------
# b. Untrusted idle consumer (TCP), about 13 MB through the 3 MiB queue.
# ---------------------------------------------------------------------------
start_program b "$prog" 60000 +RTS -N1 \
    "--eventlog-sink=tcp:127.0.0.1:0?wait=30&policy=block&buffer=3M&linger=1"
program_tcp_endpoint b
idle_client b tcp "${endpoint##*:}"
check_exit b
check_loss b slow-consumer "the idle TCP client was not cut loose"

# ---------------------------------------------------------------------------
# c. Untrusted idle consumer: another user's UNIX client.
# ---------------------------------------------------------------------------
if part_runs_as c 65534; then
    chmod 0711 "$T"
    mkdir -m 0777 "$T/pub"
    idle_client c unix "$T/pub/c.sock" 65534
    start_program c "$prog" 60000 +RTS -N1 \
        "--eventlog-sink=unix:$T/pub/c.sock?mode=0666&wait=30&policy=block&buffer=3M&linger=1"
    wait_until 30 grep -q connected "$T/c.client.out" \
        || fail_showing "$T/c.client.err" "c: the other user's client did not connect"
    check_exit c
    check_loss c slow-consumer "the other user's client was not cut loose"
fi
