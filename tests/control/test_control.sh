#!/bin/bash
# test_control.sh: the control channel end to end (docs/CONTROL.md) on a
# real -N2 program (tests/programs/Controlled.hs, `idle`) linked against
# the patched RTS, driven by `eventlog-sink ctl`, with the effects checked
# in the streams by eventlog-sink recv and ghc-events:
#   - unix: status, stats, help, unknown commands (exit 1, error text),
#     --json; restart (the first stream ends complete, a second one starts
#     with its header on the same socket) and stop (the stream ends
#     complete, the program runs on, the socket is gone);
#   - eventlog-socket's binary messages (bytes built from its protocol
#     description) and junk from a client that also reads the stream: each
#     answered in-band, in a stream ghc-events reads;
#   - control off by default: the same commands get no answer, and the
#     stream of a consumer that sent them is complete and has no answer;
#   - another user is refused (when the test can run as uid 65534);
#   - tcp: refused without the secret and with a wrong one, served with
#     it (ctl answers the program's challenge with a proof), and stop ends
#     a tcp consumer's stream; the runs with the secret and with a wrong
#     one go through a forwarding proxy that records what ctl sends: a
#     proof frame, and no 8 consecutive bytes of the secret.
# Malformed frames, oversized frames and a flooding client are covered
# against real writers by tests/control/test_control.
set -u

. "$(dirname "$0")/../harness.sh"

require_tool
require_ghc
[ -n "$GHC_EVENTS" ] || skip "ghc-events not installed"
require_patched_rts
require_hsc2hs
command -v perl >/dev/null 2>&1 || skip "perl not installed"
make_tmpdir
build_controlled patched
T=$ELS_SINK_TOOL

# ctl_ok NAME ARGS...: ctl succeeds; its stdout in $ELS_TMP/NAME.ctl.
ctl_ok() {
    local name=$1
    shift
    "$T" ctl "$@" >"$ELS_TMP/$name.ctl" 2>"$ELS_TMP/$name.ctl.err" \
        || fail_showing "$ELS_TMP/$name.ctl.err" "$name: eventlog-sink ctl $* failed"
}

# ctl_fails NAME ARGS...: ctl exits 1; its stderr in $ELS_TMP/NAME.ctl.err.
ctl_fails() {
    local name=$1 rc=0
    shift
    "$T" ctl "$@" >"$ELS_TMP/$name.ctl" 2>"$ELS_TMP/$name.ctl.err" || rc=$?
    [ "$rc" -eq 1 ] || fail_showing "$ELS_TMP/$name.ctl.err" \
        "$name: eventlog-sink ctl $* exited with $rc (expected 1)"
}

# consumers_now SPEC N [CTL-OPTS]: status reports N consumers (ctl's own
# session included).
consumers_now() {
    "$T" ctl ${3:-} "$1" status 2>/dev/null | grep -q "; consumers $2;"
}

shows() {
    "$GHC_EVENTS" show "$1" >"$1.shown" 2>&1 || return 1
    grep -qF -- "$2" "$1.shown"
}

# A client that sends HEX and writes what it reads to OUT until EOF.
raw_client() {
    perl -e '
        use IO::Socket::UNIX; use Socket;
        my ($path, $out, $hex) = @ARGV;
        my $s = IO::Socket::UNIX->new(Type => SOCK_STREAM(), Peer => $path)
            or die "connect $path: $!";
        open(my $o, ">", $out) or die; binmode $o;
        $s->syswrite(pack("H*", $hex));
        open(my $d, ">", "$out.sent") or die; close $d;
        while (1) { my $n = $s->sysread(my $buf, 65536); last if !$n;
                    print $o $buf; $o->flush; }' "$@" &
    cpid=$!
    bg_register "$cpid"
}

# --- unix: the commands ------------------------------------------------------
sock=$ELS_TMP/u.sock
# --eventlog-flush-interval=0: "idle-marker" stays in its capability's
# buffer until the restart writes it out, so that r1, which connects
# later, receives it (with the sink's default 1 s flush it would have
# gone to the consumers of the moment).
start_controlled u "$CONTROLLED" idle +RTS -N2 "--eventlog-sink=unix:$sock?control=1" \
    --eventlog-flush-interval=0 -RTS
wait_output u posted
grep -q "control enabled on unix:$sock" "$ELS_TMP/u.prog.err" \
    || fail_showing "$ELS_TMP/u.prog.err" "no start-up line saying control is enabled"
ctl_ok status "unix:$sock" status , stats , help
grep -q "^status: running on unix:$sock; protocol 2; consumers 1;" "$ELS_TMP/status.ctl" \
    || fail "status: $(cat "$ELS_TMP/status.ctl")"
grep -q "^stats: units accepted [0-9]* sent" "$ELS_TMP/status.ctl" || fail "stats: $(cat "$ELS_TMP/status.ctl")"
grep -q "^help: .*stop, restart" "$ELS_TMP/status.ctl" || fail "help: $(cat "$ELS_TMP/status.ctl")"
ctl_ok json --json "unix:$sock" status
grep -q '^{"command":"status","ok":true,"status":0,"error":null,"result":"running on ' "$ELS_TMP/json.ctl" \
    || fail "--json: $(cat "$ELS_TMP/json.ctl")"
ctl_fails unknown "unix:$sock" status , no-such-thing
grep -q "^eventlog-sink ctl: no-such-thing: ELS_EINVAL: unknown command" "$ELS_TMP/unknown.ctl.err" \
    || fail "unknown command: $(cat "$ELS_TMP/unknown.ctl.err")"
grep -q "^status: running" "$ELS_TMP/unknown.ctl" || fail "the command before the failing one was not answered"
# ring-dump through a unix: sink: it keeps no recording, and says so.
ctl_fails ring "unix:$sock" ring-dump
grep -q "^eventlog-sink ctl: ring-dump: ELS_EINVAL: unix:$sock keeps no recording" "$ELS_TMP/ring.ctl.err" \
    || fail "ring-dump: $(cat "$ELS_TMP/ring.ctl.err")"

# eventlog-socket's messages (magic, version 0, namespace length 15,
# "eventlog-socket", command id), from a client that reads the stream:
# requestHeapCensus (5) and capability tracing on (18), then junk.
es=f09e978c000f6576656e746c6f672d736f636b6574
raw_client "$sock" "$ELS_TMP/es.stream" "${es}05${es}12676172626167650a"
es_pid=$cpid
wait_until 30 grep -qa "eventlog-socket command 18" "$ELS_TMP/es.stream" \
    || fail "no in-band answers to eventlog-socket's messages"

# restart: the first streams end complete, a new one starts.
start_receiver r1 "unix:$sock"
wait_until 30 consumers_now "unix:$sock" 3 || fail "recv r1 did not connect"
ctl_ok restart "unix:$sock" restart
grep -q "^restart: accepted" "$ELS_TMP/restart.ctl" || fail "restart: $(cat "$ELS_TMP/restart.ctl")"
wait_pid "$rpid" 30 || check_recv r1 $?
wait_pid "$es_pid" 30 || fail "the eventlog-socket client's stream did not end at the restart"
shows "$ELS_TMP/es.stream" "eventlog-sink control eventlog-socket command 5: " \
    || fail_showing "$ELS_TMP/es.stream.shown" "no answer to requestHeapCensus in the stream"
shows "$ELS_TMP/es.stream" "eventlog-sink control eventlog-socket command 18: error ELS_ENOTSUP" \
    || fail_showing "$ELS_TMP/es.stream.shown" "no ELS_ENOTSUP answer to capability tracing"
shows "$ELS_TMP/es.stream" "eventlog-sink control (malformed): error ELS_EINVAL: not a control message" \
    || fail_showing "$ELS_TMP/es.stream.shown" "no error answer to junk"
"$GHC_EVENTS" validate threads "$ELS_TMP/es.stream" 2>&1 | grep -q "^Valid" \
    || fail "the eventlog-socket client's stream is not valid"
wait_for_file "$sock" 30 || fail "no socket after restart"
start_receiver r2 "unix:$sock"
wait_until 30 consumers_now "unix:$sock" 2 || fail "recv r2 did not connect"

# stop: the stream ends complete, the program runs on without a socket.
ctl_ok stop "unix:$sock" stop
wait_pid "$rpid" 30 || check_recv r2 $?
for s in r1 r2; do
    "$GHC_EVENTS" show "$ELS_TMP/$s.eventlog" >/dev/null 2>&1 || fail "$s: ghc-events cannot read it"
done
count=$(count_user_events "$ELS_TMP/r1.eventlog" idle-marker)
[ "$count" -ge 1 ] || fail "r1 lacks the program's event"
wait_until 10 sh -c "! test -e '$sock'" || fail "the socket is still there after stop"
ctl_fails after-stop "unix:$sock" status
kill -0 "$ppid" 2>/dev/null || fail "the program died"
stop_controlled
wait_pid "$ppid" 60 || fail_showing "$ELS_TMP/u.prog.err" "the program failed after stop"
grep -qx "idle done" "$ELS_TMP/u.prog.out" || fail "the program did not finish"

# --- control off by default ---------------------------------------------------
sock=$ELS_TMP/off.sock
start_controlled off "$CONTROLLED" idle +RTS -N2 "--eventlog-sink=unix:$sock" -RTS
wait_output off posted
ctl_fails off --timeout 1 "unix:$sock" stop
grep -q "no answer to the hello" "$ELS_TMP/off.ctl.err" || fail "off: $(cat "$ELS_TMP/off.ctl.err")"
raw_client "$sock" "$ELS_TMP/off.stream" "${es}05${es}12"
wait_for_file "$ELS_TMP/off.stream.sent" 30 || fail "the client did not send"
stop_controlled
wait_pid "$ppid" 60 || fail "the program without control failed"
wait_pid "$cpid" 30 || fail "the consumer's stream did not end"
"$GHC_EVENTS" validate threads "$ELS_TMP/off.stream" 2>&1 | grep -q "^Valid" \
    || fail "the stream of a client that sent commands to a sink without control is not valid"
! grep -qa "eventlog-sink control" "$ELS_TMP/off.stream" || fail "control answered with control off"

# --- another user -------------------------------------------------------------
if can_run_as 65534; then
    sock=$ELS_TMP/other.sock
    chmod 0711 "$ELS_TMP"
    cp "$T" "$ELS_TMP/tool" && chmod 0755 "$ELS_TMP/tool"
    start_controlled other "$CONTROLLED" idle +RTS -N2 "--eventlog-sink=unix:$sock?control=1&mode=0666" -RTS
    wait_output other posted
    rc=0
    as_user 65534 "$ELS_TMP/tool" ctl "unix:$sock" stop >"$ELS_TMP/other.out" 2>&1 || rc=$?
    [ "$rc" -eq 1 ] || fail "another user: ctl exited $rc: $(cat "$ELS_TMP/other.out")"
    grep -q "EPERM: peer uid 65534 may not control this program" "$ELS_TMP/other.out" \
        || fail "another user: $(cat "$ELS_TMP/other.out")"
    ctl_ok other-status "unix:$sock" status
    stop_controlled
    wait_pid "$ppid" 60 || fail "the program failed"
else
    skip_part other-user "needs root, setpriv and an unprivileged uid 65534"
fi

# --- a command registered from Haskell ------------------------------------------
# GHC.Eventlog.Sink.Control without cabal (hsc2hs for GHC.Eventlog.Sink),
# cached in the build tree like Controlled.
{
    gdir=$ELS_TOP_BUILDDIR/tests/programs/out/greeter
    greeter=$gdir/greeter
    hs=$ELS_TOP_SRCDIR/haskell/eventlog-sink/src
    if ! newer_than_patched_build "$greeter" "$ELS_TOP_SRCDIR/tests/programs/Greeter.hs" \
            "$hs/GHC/Eventlog/Sink.hsc" "$hs/GHC/Eventlog/Sink/Control.hs"; then
        rm -rf "$gdir" && mkdir -p "$gdir/src/GHC/Eventlog/Sink" || fail "mkdir $gdir"
        cp "$hs/GHC/Eventlog/Sink/Control.hs" "$gdir/src/GHC/Eventlog/Sink/"
        "$HSC2HS" -I"$ELS_INCLUDEDIR" -o "$gdir/src/GHC/Eventlog/Sink.hs" "$hs/GHC/Eventlog/Sink.hsc" \
            >"$ELS_TMP/greeter.build" 2>&1 \
            && (cd "$gdir" && patched_ghc_lib -v0 -threaded -eventlog -rtsopts -isrc \
                    -outputdir obj "$ELS_TOP_SRCDIR/tests/programs/Greeter.hs" -o greeter) \
            >>"$ELS_TMP/greeter.build" 2>&1 \
            || fail_showing "$ELS_TMP/greeter.build" "could not build tests/programs/Greeter.hs"
    fi
    sock=$ELS_TMP/g.sock
    start_controlled g "$greeter" +RTS -N2 "--eventlog-sink=unix:$sock?control=1" -RTS
    wait_output g registered
    ctl_ok greet "unix:$sock" greet world , user greeter 1 again
    grep -qx "greet world: hello world" "$ELS_TMP/greet.ctl" || fail "greet: $(cat "$ELS_TMP/greet.ctl")"
    grep -qx "user greeter 1 again: hello again" "$ELS_TMP/greet.ctl" || fail "greet: $(cat "$ELS_TMP/greet.ctl")"
    ctl_fails greet-fail "unix:$sock" greet fail , greet boom , greet still
    grep -q "greet fail: ELS_EINVAL: asked to fail" "$ELS_TMP/greet-fail.ctl.err" \
        || fail "greet fail: $(cat "$ELS_TMP/greet-fail.ctl.err")"
    grep -q "greet boom: ELS_EINVAL: exception: boom" "$ELS_TMP/greet-fail.ctl.err" \
        || fail "greet boom: $(cat "$ELS_TMP/greet-fail.ctl.err")"
    grep -qx "greet still: hello still" "$ELS_TMP/greet-fail.ctl" || fail "after an exception: $(cat "$ELS_TMP/greet-fail.ctl")"
    # eventlog-socket's message for namespace "greeter", command 1.
    raw_client "$sock" "$ELS_TMP/g.stream" "f09e978c0007$(printf greeter | od -An -tx1 | tr -d ' \n')01"
    wait_until 30 grep -qa "greeter command 1: ok: hello" "$ELS_TMP/g.stream" \
        || fail "no in-band answer to the eventlog-socket message for greeter/1"
    stop_controlled
    wait_pid "$ppid" 60 || fail_showing "$ELS_TMP/g.prog.err" "the greeter failed"
    wait_pid "$cpid" 30 || fail "the greeter's stream did not end"
    shows "$ELS_TMP/g.stream" "eventlog-sink control greeter command 1: ok: hello " \
        || fail_showing "$ELS_TMP/g.stream.shown" "ghc-events does not show the answer"
}

# --- tcp ------------------------------------------------------------------------
secret=$ELS_TMP/secret
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$secret"
chmod 0600 "$secret"
printf 'not the secret at all!!\n' >"$ELS_TMP/wrong"
chmod 0600 "$ELS_TMP/wrong"
# ctl reads its secret file with the program's rules: others may not read it.
cp "$secret" "$ELS_TMP/open-secret"
chmod 0640 "$ELS_TMP/open-secret"
start_controlled tcp "$CONTROLLED" idle +RTS -N2 \
    "--eventlog-sink=tcp:0?control=1&control-secret=$secret" -RTS
wait_output tcp posted
program_tcp_endpoint tcp
ctl_fails tcp-none "$endpoint" status
ctl_fails tcp-open-secret --secret-file "$ELS_TMP/open-secret" "$endpoint" status
grep -qF "open-secret: mode 640 lets others read or change it (chmod 600)" "$ELS_TMP/tcp-open-secret.ctl.err" \
    || fail "ctl took a group-readable secret file: $(cat "$ELS_TMP/tcp-open-secret.ctl.err")"
grep -q "EPERM: the program asks for proof of its shared secret" "$ELS_TMP/tcp-none.ctl.err" \
    || fail "tcp without secret: $(cat "$ELS_TMP/tcp-none.ctl.err")"
# A proxy in front of the program records the client's bytes.
perl -e '
    use IO::Socket::INET; use IO::Select;
    my ($port, $out, $portfile) = @ARGV;
    my $l = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => 0,
                                  Listen => 4, ReuseAddr => 1) or die "listen: $!";
    open(my $p, ">", "$portfile.tmp") or die; print $p $l->sockport, "\n";
    close $p; rename("$portfile.tmp", $portfile) or die;
    open(my $o, ">>", $out) or die; binmode $o; $o->autoflush(1);
    sub put { my ($s, $b) = @_; while (length $b) { my $n = syswrite($s, $b);
              return 0 if !$n; substr($b, 0, $n) = ""; } return 1; }
    while (my $c = $l->accept) {
        my $u = IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => $port)
            or die "connect: $!";
        my $sel = IO::Select->new($c, $u);
        LOOP: while (1) {
            for my $s ($sel->can_read) {
                my $n = sysread($s, my $b, 65536);
                last LOOP if !$n;
                if ($s == $c) { print $o $b; put($u, $b) or last LOOP; }
                else { put($c, $b) or last LOOP; }
            }
        }
        close $c; close $u;
    }' "${endpoint##*:}" "$ELS_TMP/wire" "$ELS_TMP/proxy.port" &
bg_register $!
wait_for_file "$ELS_TMP/proxy.port" 30 || fail "the proxy did not start"
proxied=tcp:127.0.0.1:$(cat "$ELS_TMP/proxy.port")
ctl_fails tcp-wrong --secret-file "$ELS_TMP/wrong" "$proxied" stop
grep -q "hello: EPERM: wrong proof of the shared secret" "$ELS_TMP/tcp-wrong.ctl.err" \
    || fail "tcp with a wrong secret: $(cat "$ELS_TMP/tcp-wrong.ctl.err")"
ctl_ok tcp-status --secret-file "$secret" "$proxied" status
grep -q "^status: running on tcp:" "$ELS_TMP/tcp-status.ctl" || fail "tcp: $(cat "$ELS_TMP/tcp-status.ctl")"
# Both sessions sent a proof frame ("ELSC", version 2, kind 3, 32 bytes)...
n=$(perl -0777 -ne 'print scalar(() = /ELSC\x02\x03\x00\x20/g)' "$ELS_TMP/wire")
[ "$n" -eq 2 ] || fail "the proxy saw $n proof frames, not 2"
# ... and no 8 consecutive bytes of either secret.
leak=$(perl -0777 -e 'local $/; open(my $w, "<", shift) or die; my $wire = <$w>;
    for my $f (@ARGV) { open(my $h, "<", $f) or die; my $s = <$h>; $s =~ s/\n$//;
        for my $i (0 .. length($s) - 8) { my $p = substr($s, $i, 8);
            print "$p\n" if index($wire, $p) >= 0; } }' \
    "$ELS_TMP/wire" "$secret" "$ELS_TMP/wrong") || fail "cannot read the capture"
[ -z "$leak" ] || fail "the client sent bytes of a secret: $leak"
start_receiver t1 "$endpoint"
wait_until 30 consumers_now "$endpoint" 2 "--secret-file $secret" || fail "recv t1 did not connect"
ctl_ok tcp-stop --secret-file "$secret" "$endpoint" stop
wait_pid "$rpid" 30 || check_recv t1 $?
"$GHC_EVENTS" show "$ELS_TMP/t1.eventlog" >/dev/null 2>&1 || fail "t1: ghc-events cannot read it"
stop_controlled
wait_pid "$ppid" 60 || fail "the tcp program failed"
exit 0
