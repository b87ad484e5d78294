#!/usr/bin/env bash
# test_discovery.sh: programs announce themselves and the tools find them
# (README, "Finding programs: ps, pid:, name:").
#
# Two copies of tests/programs/Busy.hs named alpha and beta (the name ps shows
# is argv[0]'s base name) run with unix: sinks and control=1, in a
# discovery directory of the test's own (XDG_RUNTIME_DIR).  Checked:
# `ps --json` lists both with their pids, names, endpoints and control
# sockets, and asks each for its consumers: two receivers the test
# attaches to alpha and none to beta are counted as 2 and 0 (in the
# table too); `top --once --json pid:PID`
# reaches that program (its program name in the view); `ctl name:NAME
# get-classes` answers from the right one (its pid in the answer's
# session is not visible, so the test also checks a name: miss and a
# shared name are refused); after alpha exits its entry is gone; a
# third program killed with SIGKILL leaves its entry, which ps ignores
# and removes; a spec with announce=0 leaves no entry.  A program whose
# spec gives a relative path (unix:app.sock, started in a directory of
# its own) is announced with its absolute path, and the tools run in
# another directory, where a socket of the same name feeds a fake
# stream, reach the program and never that socket.  An entry writable by
# others is left out of ps with a line saying why.  A program that
# exec's another (tests/programs/Exec.hs) is no longer listed or resolved,
# though its entry, pid and start time stay and another listener holds
# its TCP port.  Skips (77) without GHC, ghc-events or the patched RTS.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"
. "$(dirname "$0")/../ghcprog.sh"
. "$(dirname "$0")/../monitor/monitor.sh"

monitor_setup
deadline_set 240
export XDG_RUNTIME_DIR=$T/run
mkdir -m 700 "$XDG_RUNTIME_DIR"
DIR=$XDG_RUNTIME_DIR/eventlog-sink
for n in alpha beta gamma delta; do
    cp "$BUSY" "$T/$n" || fail "cannot copy $BUSY"
done

# fake_stream ADDR LOG: another user's listener at ADDR (a UNIX socket
# path, or tcp:PORT on 127.0.0.1) feeding every client the sample
# eventlog of tests/data; LOG gets a line per connection.
fake_stream() {
    "$PYTHON" - "$1" "$ELS_TOP_SRCDIR/tests/data/ghc-9.0.2-N2.eventlog" "$2" <<'PY' &
import socket, sys
addr, data, log = sys.argv[1], open(sys.argv[2], "rb").read(), sys.argv[3]
if addr.startswith("tcp:"):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", int(addr[4:])))
else:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(addr)
s.listen(8)
with open(log, "a") as f:
    f.write("listening\n")
while True:
    c, _ = s.accept()
    with open(log, "a") as f:
        f.write("connection\n")
    try:
        c.sendall(data)
    except OSError:
        pass
    c.close()
PY
    bg_register "$!"
    wait_until 30 grep -qs listening "$2" || fail "the fake listener at $1 did not start"
}

# start NAME SINK-OPTIONS: NAME runs 1 phase with a unix: sink at
# $T/NAME.sock, then waits on its stdin (a FIFO held open on fd in_NAME).
start() {
    local n=$1 opts=$2 fd
    mkfifo "$T/$n.in"
    "$T/$n" 1 +RTS -N2 -I0 "--eventlog-sink=unix:$T/$n.sock?$opts" \
        --eventlog-flush-interval=0.2 -RTS <"$T/$n.in" >"$T/$n.out" 2>"$T/$n.err" &
    eval "pid_$n=\$!"
    bg_register "$!"
    exec {fd}>"$T/$n.in"
    eval "in_$n=\$fd"
    wait_until 60 grep -qx ready "$T/$n.out" || fail_showing "$T/$n.err" "$n did not start"
}
start alpha "control=1"
start beta "control=1"
# shellcheck disable=SC2154
note "alpha $pid_alpha, beta $pid_beta"

T_PS=$T/ps.json
"$ELS_SINK_TOOL" ps --json >"$T_PS" 2>"$T/ps.err" || fail_showing "$T/ps.err" "ps --json failed"
"$PYTHON" - "$T_PS" "$T" "$pid_alpha" "$pid_beta" <<'PY' || fail_showing "$T_PS" "ps --json does not list both programs as they are"
import json, sys
ps = json.load(open(sys.argv[1]))
t, want = sys.argv[2], {int(sys.argv[3]): "alpha", int(sys.argv[4]): "beta"}
got = {e["pid"]: e for e in ps}
assert set(got) == set(want), (sorted(got), sorted(want))
for pid, name in want.items():
    e = got[pid]
    assert e["name"] == name, e
    assert e["argv"][1] == "1", e
    ep = "unix:%s/%s.sock" % (t, name)
    assert e["sinks"][0]["endpoint"] == ep, e
    assert e["sinks"][0]["control"] == ep, e
    assert e["consumers"] == 0, e      # asked over control: nobody attached
    assert e["uptime_s"] >= 0, e
PY
"$ELS_SINK_TOOL" ps >"$T/ps.txt" 2>&1 || fail_showing "$T/ps.txt" "ps failed"
grep -qE "^$pid_beta +beta " "$T/ps.txt" || fail_showing "$T/ps.txt" "ps does not show beta"

# Consumers: two receivers on alpha (each attached once it has the
# stream's header), none on beta; ps counts them, not its own session.
for k in 1 2; do
    start_receiver "alpha_c$k" "unix:$T/alpha.sock"
done
for k in 1 2; do
    wait_until 60 els_has_header "$ELS_TMP/alpha_c$k.eventlog" \
        || fail_showing "$ELS_TMP/alpha_c$k.recv.err" "receiver $k of alpha got no header"
done
"$ELS_SINK_TOOL" ps --json >"$T_PS" 2>"$T/ps.err" || fail_showing "$T/ps.err" "ps --json failed"
"$PYTHON" - "$T_PS" "$pid_alpha" "$pid_beta" <<'PY' || fail_showing "$T_PS" "ps --json does not count alpha's 2 consumers and beta's 0"
import json, sys
got = {e["pid"]: e for e in json.load(open(sys.argv[1]))}
alpha, beta = got[int(sys.argv[2])], got[int(sys.argv[3])]
assert alpha["consumers"] == 2 and alpha["sinks"][0]["consumers"] == 2, alpha
assert beta["consumers"] == 0 and beta["sinks"][0]["consumers"] == 0, beta
PY
"$ELS_SINK_TOOL" ps >"$T/ps.txt" 2>&1 || fail_showing "$T/ps.txt" "ps failed"
grep -qE "^$pid_alpha +alpha .* 2 +[0-9]+\$" "$T/ps.txt" \
    || fail_showing "$T/ps.txt" "ps's CONSUMERS column does not say 2 for alpha"
grep -qE "^$pid_beta +beta .* 0 +[0-9]+\$" "$T/ps.txt" \
    || fail_showing "$T/ps.txt" "ps's CONSUMERS column does not say 0 for beta"

# top pid:PID reaches that program: its view names it.
"$ELS_SINK_TOOL" top --once --json "pid:$pid_beta" >"$T/top.json" 2>"$T/top.err" \
    || fail_showing "$T/top.err" "top --once pid:$pid_beta failed"
grep -q '/beta' "$T/top.json" || fail_showing "$T/top.json" "top pid:$pid_beta shows another program"
! grep -q '/alpha' "$T/top.json" || fail_showing "$T/top.json" "top pid:$pid_beta shows alpha"

# ctl name:NAME reaches the program named: get-classes answers, and
# status says which sink it runs on.
for n in alpha beta; do
    "$ELS_SINK_TOOL" ctl "name:$n" get-classes , status >"$T/ctl_$n.out" 2>&1 \
        || fail_showing "$T/ctl_$n.out" "ctl name:$n get-classes failed"
    grep -q '^get-classes: ' "$T/ctl_$n.out" || fail_showing "$T/ctl_$n.out" "no get-classes answer from $n"
    grep -qF "running on unix:$T/$n.sock" "$T/ctl_$n.out" \
        || fail_showing "$T/ctl_$n.out" "ctl name:$n reached another program"
done
if "$ELS_SINK_TOOL" ctl name:nobody stats >"$T/miss.out" 2>&1; then
    fail "ctl name:nobody succeeded"
fi
grep -q 'no such program' "$T/miss.out" || fail_showing "$T/miss.out" "name: miss not explained"

# Two programs with one name: refused, both listed.
mkdir -p "$T/b2" && cp "$T/beta" "$T/b2/beta"
mkfifo "$T/b2.in"
"$T/b2/beta" 1 +RTS -I0 "--eventlog-sink=unix:$T/b2.sock" -RTS <"$T/b2.in" >"$T/b2.out" 2>"$T/b2.err" &
pid_b2=$!
bg_register "$pid_b2"
exec {in_b2}>"$T/b2.in"
wait_until 60 grep -qx ready "$T/b2.out" || fail_showing "$T/b2.err" "second beta did not start"
if "$ELS_SINK_TOOL" top --once name:beta >"$T/amb.out" 2>&1; then
    fail "top name:beta with two programs named beta succeeded"
fi
grep -q "ambiguous.* $pid_beta" "$T/amb.out" && grep -q " $pid_b2" "$T/amb.out" \
    || fail_showing "$T/amb.out" "the ambiguity does not list both pids"
echo stop >&"$in_b2"
wait_pid "$pid_b2" 60 || fail "second beta did not exit"

# alpha exits normally: its entry goes with it.
[ -f "$DIR/$pid_alpha.announce" ] || fail "no entry for alpha in $DIR"
echo stop >&"$in_alpha"
wait_pid "$pid_alpha" 60 || fail_showing "$T/alpha.err" "alpha did not exit cleanly"
[ ! -e "$DIR/$pid_alpha.announce" ] || fail "alpha exited, its entry stayed"

# gamma killed with SIGKILL: its stale entry is ignored, then removed.
start gamma "control=1"
# shellcheck disable=SC2154
[ -f "$DIR/$pid_gamma.announce" ] || fail "no entry for gamma"
kill -9 "$pid_gamma"
wait "$pid_gamma" 2>/dev/null
[ -f "$DIR/$pid_gamma.announce" ] || fail "gamma's entry vanished without a reader (cannot test cleaning)"
"$ELS_SINK_TOOL" ps --json >"$T_PS" 2>"$T/ps.err" || fail_showing "$T/ps.err" "ps --json failed"
"$PYTHON" -c 'import json,sys; p=[e["pid"] for e in json.load(open(sys.argv[1]))]; assert p == [int(sys.argv[2])], p' \
    "$T_PS" "$pid_beta" || fail_showing "$T_PS" "ps lists a dead program (or lost beta)"
[ ! -e "$DIR/$pid_gamma.announce" ] || fail "ps left gamma's stale entry"

# A relative path: unix:app.sock from $T/appdir.  The tools run in
# $T/elsewhere, where another app.sock feeds a fake stream (the sample
# eventlog of tests/data) and counts its connections.
mkdir "$T/appdir" "$T/elsewhere"
fake_stream "$T/elsewhere/app.sock" "$T/fake.log"
mkfifo "$T/rel.in"
(cd "$T/appdir" && exec "$T/gamma" 1 +RTS -N2 -I0 "--eventlog-sink=unix:app.sock?control=1" \
    --eventlog-flush-interval=0.2 -RTS) <"$T/rel.in" >"$T/rel.out" 2>"$T/rel.err" &
pid_rel=$!
bg_register "$pid_rel"
exec {in_rel}>"$T/rel.in"
wait_until 60 grep -qx ready "$T/rel.out" || fail_showing "$T/rel.err" "the program with a relative path did not start"
(cd "$T/elsewhere" && "$ELS_SINK_TOOL" ps --json) >"$T_PS" 2>"$T/ps.err" || fail_showing "$T/ps.err" "ps --json failed"
"$PYTHON" - "$T_PS" "$pid_rel" "unix:$T/appdir/app.sock" <<'PY' || fail_showing "$T_PS" "ps does not give the relative path as the absolute one it was bound at"
import json, sys
e = [p for p in json.load(open(sys.argv[1])) if p["pid"] == int(sys.argv[2])]
assert len(e) == 1, e
s = e[0]["sinks"][0]
assert (s["endpoint"], s["control"]) == (sys.argv[3], sys.argv[3]), s
PY
(cd "$T/elsewhere" && "$ELS_SINK_TOOL" top --once --json "pid:$pid_rel") >"$T/top_rel.json" 2>"$T/top_rel.err" \
    || fail_showing "$T/top_rel.err" "top --once pid:$pid_rel from another directory failed"
"$PYTHON" - "$T/top_rel.json" "$pid_rel" "unix:$T/appdir/app.sock" <<'PY' || fail_showing "$T/top_rel.json" "top pid:$pid_rel from another directory shows another stream"
import json, sys
v = json.load(open(sys.argv[1]))
assert (v["program"]["name"], v["program"]["pid"]) == ("gamma", int(sys.argv[2])), v["program"]
assert v["source"]["spec"] == sys.argv[3], v["source"]
PY
(cd "$T/elsewhere" && "$ELS_SINK_TOOL" ctl "pid:$pid_rel" status) >"$T/ctl_rel.out" 2>&1 \
    || fail_showing "$T/ctl_rel.out" "ctl pid:$pid_rel status from another directory failed"
grep -qF "running on unix:$T/appdir/app.sock" "$T/ctl_rel.out" || fail_showing "$T/ctl_rel.out" "ctl pid:$pid_rel reached another socket"
! grep -q connection "$T/fake.log" || fail "a tool connected to the socket named app.sock in its own directory"

# An entry that others may write: left out, with a line saying why.
chmod 622 "$DIR/$pid_rel.announce"
"$ELS_SINK_TOOL" ps --json >"$T_PS" 2>"$T/ps.err" || fail_showing "$T/ps.err" "ps --json failed"
"$PYTHON" -c 'import json,sys; p=[e["pid"] for e in json.load(open(sys.argv[1]))]; assert int(sys.argv[2]) not in p, p' \
    "$T_PS" "$pid_rel" || fail_showing "$T_PS" "ps lists an entry others may write"
grep -qF "left out $DIR/$pid_rel.announce: has mode 622: others may write it" "$T/ps.err" \
    || fail_showing "$T/ps.err" "ps does not say why it left the entry out"
chmod 600 "$DIR/$pid_rel.announce"
echo stop >&"$in_rel"
wait_pid "$pid_rel" 60 || fail_showing "$T/rel.err" "the program with a relative path did not exit"
[ ! -e "$T/appdir/app.sock" ] || fail "the relative socket outlived its program"

# A program that exec's: tests/programs/Exec.hs with a tcp: and a unix: sink
# (control on both) becomes sleep(1), keeping its pid and start time but
# none of its sockets, and another listener takes its TCP port.  Its
# entry stays behind; ps leaves it out (saying why) and removes it,
# recv pid: finds nothing, and nothing connects to that listener.
build_ghc_program exec Exec patched_ghc_lib -threaded -eventlog -rtsopts
mkfifo "$T/ex.in"
"$GHC_PROGRAM" sleep 600 +RTS -I0 \
    "--eventlog-sink=tcp:127.0.0.1:0?control=1|unix:$T/ex.sock?control=1" -RTS \
    <"$T/ex.in" >"$T/ex.out" 2>"$T/ex.err" &
pid_ex=$!
bg_register "$pid_ex"
exec {in_ex}>"$T/ex.in"
wait_until 60 grep -qx ready "$T/ex.out" || fail_showing "$T/ex.err" "the exec program did not start"
"$ELS_SINK_TOOL" ps --json >"$T_PS" 2>"$T/ps.err" || fail_showing "$T/ps.err" "ps --json failed"
ex_tcp=$("$PYTHON" - "$T_PS" "$pid_ex" "unix:$T/ex.sock" <<'PY'
import json, sys
e = [p for p in json.load(open(sys.argv[1])) if p["pid"] == int(sys.argv[2])]
assert len(e) == 1, e
tcp, unix = e[0]["sinks"]
assert tcp["endpoint"].startswith("tcp:127.0.0.1:") and tcp["control"] == tcp["endpoint"], tcp
assert unix["endpoint"] == sys.argv[3], unix
print(tcp["endpoint"])
PY
) || fail_showing "$T_PS" "ps does not list the exec program with its two sinks before it exec's"
note "exec program $pid_ex on $ex_tcp"
echo go >&"$in_ex"
runs_sleep() { readlink "/proc/$pid_ex/exe" | grep -q sleep; }
wait_until 60 runs_sleep || fail_showing "$T/ex.err" "the program did not exec sleep"
[ -f "$DIR/$pid_ex.announce" ] || fail "the entry went with the exec (nothing left to test)"
fake_stream "tcp:${ex_tcp##*:}" "$T/fake_tcp.log"
"$ELS_SINK_TOOL" ps --json >"$T_PS" 2>"$T/ps.err" || fail_showing "$T/ps.err" "ps --json failed"
"$PYTHON" -c 'import json,sys; p=[e["pid"] for e in json.load(open(sys.argv[1]))]; assert int(sys.argv[2]) not in p, p' \
    "$T_PS" "$pid_ex" || fail_showing "$T_PS" "ps lists a program that exec'd sleep"
grep -qF "left out $DIR/$pid_ex.announce: pid $pid_ex no longer holds the socket" "$T/ps.err" \
    || fail_showing "$T/ps.err" "ps does not say why it left the exec'd program out"
[ ! -e "$DIR/$pid_ex.announce" ] || fail "ps left the exec'd program's stale entry"
if "$ELS_SINK_TOOL" recv -o "$T/ex.eventlog" "pid:$pid_ex" >"$T/ex_recv.out" 2>&1; then
    fail_showing "$T/ex_recv.out" "recv pid:$pid_ex of the exec'd program succeeded"
fi
grep -q 'no such program' "$T/ex_recv.out" || fail_showing "$T/ex_recv.out" "recv pid: of the exec'd program did not say why it failed"
! grep -q connection "$T/fake_tcp.log" || fail "a tool connected to the listener that took the exec'd program's port"
kill "$pid_ex" 2>/dev/null

# announce=0: no entry.
start delta "announce=0"
# shellcheck disable=SC2154
[ ! -e "$DIR/$pid_delta.announce" ] || fail "announce=0 wrote an entry"
[ "$(stat -c %a "$DIR")" = 700 ] || fail "$DIR has mode $(stat -c %a "$DIR")"
echo stop >&"$in_delta"
echo stop >&"$in_beta"
wait_pid "$pid_beta" 60 || fail "beta did not exit"
wait_pid "$pid_delta" 60 || fail "delta did not exit"
exit 0
