#!/usr/bin/env bash
# test_control_rts.sh: the control channel's runtime-control commands on a
# busy -N2 program (tests/ghc/LateJoin.hs: worker threads that allocate
# and post until told to finish), driven by `eventlog-sink ctl` over the
# unix sink with control=1, their effects checked in a consumer's stream
# with ghc-events: `set-classes -g` answers the classes left on and no GC
# event follows it in the stream until `set-classes +g` (after which GC
# events come back); the same through eventlog-socket's binary message
# for "GC tracing off" (id 9); `get-classes`, `flush`, `snapshot` and
# `buffer-size` answer and act; the stream stays valid for the readers.
#
# Skips (77) without the patched RTS, GHC or ghc-events.
set -u -o pipefail

. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ghcprog.sh"

setup_ghc_program_test control-rts LateJoin
PROG=$GHC_PROGRAM
SOCK=$T/c.sock
SPEC=unix:$SOCK
T_TOOL=$ELS_SINK_TOOL

ctl() {
    "$T_TOOL" ctl "$SPEC" "$@" 2>"$T/ctl.err" \
        || fail_showing "$T/ctl.err" "eventlog-sink ctl $* failed"
}

# grown_by FILE BYTES: FILE is at least BYTES longer than when
# mark_size FILE ran: the program has run on (and allocated) meanwhile.
mark_size() { marked=$(stat -c %s "$1"); }
grown_by() { [ "$(stat -c %s "$1")" -ge $((marked + $2)) ]; }
run_on() {
    ctl flush >/dev/null
    mark_size "$T/s.eventlog"
    wait_until 60 grown_by "$T/s.eventlog" 400000 \
        || fail "the stream did not grow while the program ran"
}

start_controlled c "$PROG" 2 100000 +RTS -N2 -l \
    "--eventlog-sink=$SPEC?control=1&wait=60" --eventlog-flush-interval=0.05 -RTS
start_receiver s "$SPEC"
s_pid=$rpid
wait_output c ready

# answer: the result of ctl's one answer line "COMMAND [ARGS]: RESULT".
answer() { sed 's/^[^:]*: //'; }
out=$(ctl get-classes | answer)
case $out in *g*) ;; *) fail "get-classes: $out" ;; esac
out=$(ctl set-classes -g | answer)
case $out in *g*|"") fail "set-classes -g: $out" ;; esac
run_on
out=$(ctl set-classes +g | answer)
case $out in *g*) ;; *) fail "set-classes +g: $out" ;; esac
run_on
# eventlog-socket's "GC tracing off" (namespace eventlog-socket, id 9),
# then back on with ctl.
es=f09e978c000f6576656e746c6f672d736f636b6574
perl -e 'use IO::Socket::UNIX; use Socket;
         my $s = IO::Socket::UNIX->new(Type => SOCK_STREAM(), Peer => $ARGV[0]) or die "connect: $!";
         $s->syswrite(pack("H*", $ARGV[1]));
         # Read the stream until the in-band answer to the message.
         my $all = "";
         while ($all !~ /eventlog-socket command 9/) {
             my $n = $s->sysread(my $buf, 65536); last if !$n; $all .= $buf; }
         close $s;' "$SOCK" "${es}09" \
    || fail "could not send eventlog-socket's message"
g_off() { "$T_TOOL" ctl "$SPEC" get-classes 2>/dev/null | answer | grep -qv g; }
wait_until 30 g_off \
    || fail "eventlog-socket's GC-off message did not turn g off"
run_on
out=$(ctl set-classes +g , snapshot , buffer-size)
grep -q "^snapshot: " <<<"$out" || fail "snapshot: $out"
grep -q "^buffer-size: [0-9]" <<<"$out" || fail "buffer-size: $out"
run_on
tell_controlled go
wait_output c done
stop_controlled
prog_rc=0; wait_pid "$ppid" 60 || prog_rc=$?
check_program c "$prog_rc" done
s_rc=0; wait_pid "$s_pid" 30 || s_rc=$?
check_recv s "$s_rc"

show_events "$T/s.eventlog" "$T/s.show" || fail "ghc-events cannot parse the stream"
check_readers_accept stream "$T/s.eventlog"
windows "$T/s.show" >"$T/s.win"
in_window() { grep -E "^$1: " "$T/s.win" | grep -cE "$2" || true; }
# The stream starts with g on (window 0); changes: 1 g off (ctl), 2 g on,
# 3 g off (eventlog-socket), 4 g on.
changes=$(awk -F': ' '{ print $1 }' "$T/s.win" | sort -n | tail -n 1)
[ "$changes" = 4 ] || fail "expected 4 class changes in the stream, saw ${changes:-none}"
for w in 1 3; do
    n=$(in_window $w "$GC_EVENTS_RE")
    [ "$n" -eq 0 ] || fail "$n GC events in the stream while g was off (window $w)"
done
for w in 2 4; do
    n=$(in_window $w "$GC_EVENTS_RE")
    [ "$n" -gt 0 ] || fail "no GC event while g was on (window $w)"
done
note "class windows: $(for w in 0 1 2 3 4; do printf '%s ' "$(in_window $w "$GC_EVENTS_RE")"; done)GC events; $kept_line"
exit 0
