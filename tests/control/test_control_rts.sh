#!/usr/bin/env bash
# test_control_rts.sh: the control channel's runtime-control commands on a
# busy -N2 program (tests/programs/LateJoin.hs: worker threads that allocate
# and post until told to finish), driven by `eventlog-sink ctl` over the
# unix sink with control=1 and again over the tcp sink with
# control-secret= (ctl and the raw message prove the secret), their
# effects checked in a consumer's stream
# with ghc-events: `set-classes -g` answers the classes left on and no GC
# event follows it in the stream until `set-classes +g` (after which GC
# events come back); the same through eventlog-socket's binary message
# for "GC tracing off" (id 9); `get-classes`, `flush`, `snapshot` and
# `buffer-size` answer and act; the stream stays valid for the readers.
#
# Skips (77) without the patched RTS, GHC or ghc-events.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"
. "$(dirname "$0")/../ghcprog.sh"

setup_ghc_program_test control-rts LateJoin
PROG=$GHC_PROGRAM
T_TOOL=$ELS_SINK_TOOL
SECRET=$T/secret
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$SECRET"
chmod 0600 "$SECRET"

ctl() {
    "$T_TOOL" ctl "${SECRET_ARGS[@]}" "$SPEC" "$@" 2>"$T/ctl.err" \
        || fail_showing "$T/ctl.err" "eventlog-sink ctl $* failed"
}

# grown_by FILE BYTES: FILE is at least BYTES longer than when
# mark_size FILE ran: the program has run on (and allocated) meanwhile.
mark_size() { marked=$(stat -c %s "$1"); }
grown_by() { [ "$(stat -c %s "$1")" -ge $((marked + $2)) ]; }
run_on() {
    ctl flush >/dev/null
    mark_size "$STREAM"
    wait_until 60 grown_by "$STREAM" 400000 \
        || fail "$TR: the stream did not grow while the program ran"
}

# answer: the result of ctl's one answer line "COMMAND [ARGS]: RESULT".
answer() { sed 's/^[^:]*: //'; }

# send_es_message HEX: eventlog-socket's binary message on a connection
# of its own (over TCP after proving the secret: a hello, the in-band
# challenge, a proof), reading the stream until the in-band answer.
send_es_message() {
    perl -e 'use IO::Socket::UNIX; use IO::Socket::INET; use Socket;
         use Digest::SHA qw(hmac_sha256);
         my ($spec, $msg, $secretfile) = @ARGV;
         my $s;
         if ($spec =~ /^unix:(.*)$/) {
             $s = IO::Socket::UNIX->new(Type => SOCK_STREAM(), Peer => $1) or die "connect: $!";
         } else {
             $spec =~ /^tcp:(.*)$/ or die "spec $spec";
             $s = IO::Socket::INET->new(PeerAddr => $1) or die "connect: $!";
         }
         my $all = "";
         sub read_until { my $re = shift;
             while ($all !~ $re) { my $n = $s->sysread(my $buf, 65536);
                 die "stream ended before $re" if !$n; $all .= $buf; } }
         if (defined $secretfile) {
             open(my $f, "<", $secretfile) or die "$secretfile: $!";
             local $/; my $secret = <$f>; $secret =~ s/\n\z//;
             my $nonce = join "", map { chr(int(rand(256))) } 1 .. 16;
             $s->syswrite("ELSC\x02\x01" . pack("n", 17) . "\x00" . $nonce);
             read_until(qr/challenge ([0-9a-f]{64})/);
             $all =~ /challenge ([0-9a-f]{64})/;
             my $proof = hmac_sha256("eventlog-sink control proof v2\0" . pack("H*", $1)
                                     . $nonce . "\x00", $secret);
             $s->syswrite("ELSC\x02\x03" . pack("n", 32) . $proof);
             read_until(qr/proof: ok/);
         }
         $s->syswrite(pack("H*", $msg));
         read_until(qr/eventlog-socket command 9/);
         close $s;' "$SPEC" "$1" "${SECRET_ARGS[@]:1}" \
        || fail "$TR: could not send eventlog-socket's message"
}

# control_run TRANSPORT: the whole run over unix or tcp.
control_run() {
    TR=$1
    STREAM=$T/$TR.eventlog
    local sink
    case $TR in
        unix) SPEC=unix:$T/c.sock; SECRET_ARGS=(); sink=$SPEC ;;
        tcp) SECRET_ARGS=(--secret-file "$SECRET")
             sink="tcp:127.0.0.1:0?control-secret=$SECRET&" ;;
    esac
    case $sink in *\?*) ;; *) sink=$sink? ;; esac
    start_controlled "$TR" "$PROG" 2 100000 +RTS -N2 -l \
        "--eventlog-sink=${sink}control=1&wait=60" --eventlog-flush-interval=0.05 -RTS
    if [ "$TR" = tcp ]; then
        program_tcp_endpoint "$TR"
        SPEC=$endpoint
    fi
    start_receiver "$TR" "$SPEC"
    local s_pid=$rpid
    wait_output "$TR" ready

    local out
    out=$(ctl get-classes | answer)
    case $out in *g*) ;; *) fail "$TR: get-classes: $out" ;; esac
    out=$(ctl set-classes -g | answer)
    case $out in *g*|"") fail "$TR: set-classes -g: $out" ;; esac
    run_on
    out=$(ctl set-classes +g | answer)
    case $out in *g*) ;; *) fail "$TR: set-classes +g: $out" ;; esac
    run_on
    # eventlog-socket's "GC tracing off" (namespace eventlog-socket, id 9),
    # then back on with ctl.
    send_es_message f09e978c000f6576656e746c6f672d736f636b657409
    g_off() { "$T_TOOL" ctl "${SECRET_ARGS[@]}" "$SPEC" get-classes 2>/dev/null | answer | grep -qv g; }
    wait_until 30 g_off \
        || fail "$TR: eventlog-socket's GC-off message did not turn g off"
    run_on
    out=$(ctl set-classes +g , snapshot , buffer-size)
    grep -q "^snapshot: " <<<"$out" || fail "$TR: snapshot: $out"
    grep -q "^buffer-size: [0-9]" <<<"$out" || fail "$TR: buffer-size: $out"
    run_on
    tell_controlled go
    wait_output "$TR" done
    stop_controlled
    prog_rc=0; wait_pid "$ppid" 60 || prog_rc=$?
    check_program "$TR" "$prog_rc" done
    local s_rc=0; wait_pid "$s_pid" 30 || s_rc=$?
    check_recv "$TR" "$s_rc"

    show_events "$STREAM" "$T/$TR.show" || fail "$TR: ghc-events cannot parse the stream"
    check_readers_accept "$TR" "$STREAM"
    windows "$T/$TR.show" >"$T/$TR.win"
    in_window() { grep -E "^$1: " "$T/$TR.win" | grep -cE "$2" || true; }
    # The stream starts with g on (window 0); changes: 1 g off (ctl), 2 g on,
    # 3 g off (eventlog-socket), 4 g on.
    local changes w n
    changes=$(awk -F': ' '{ print $1 }' "$T/$TR.win" | sort -n | tail -n 1)
    [ "$changes" = 4 ] || fail "$TR: expected 4 class changes in the stream, saw ${changes:-none}"
    for w in 1 3; do
        n=$(in_window $w "$GC_EVENTS_RE")
        [ "$n" -eq 0 ] || fail "$TR: $n GC events in the stream while g was off (window $w)"
    done
    for w in 2 4; do
        n=$(in_window $w "$GC_EVENTS_RE")
        [ "$n" -gt 0 ] || fail "$TR: no GC event while g was on (window $w)"
    done
    note "$TR: class windows: $(for w in 0 1 2 3 4; do printf '%s ' "$(in_window $w "$GC_EVENTS_RE")"; done)GC events; $kept_line"
}

control_run unix
control_run tcp
exit 0
