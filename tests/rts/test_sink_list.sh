#!/usr/bin/env bash
# test_sink_list.sh: two sinks at once from RTS flags only (README, "Sink
# specs", lists): +RTS --eventlog-sink='unix:SOCK|ring:FILE?...&control=unix:CTL'
# on a real -N2 program of the patched RTS, with no C main.
#
# tests/programs/Busy.hs (PHASES phases of 200 user messages "work ..." and
# two markers each, then the marker "work done" and "ready", then it
# waits on stdin) runs in a discovery directory of the test's own.
# Checked while it runs: `eventlog-sink ps --json` lists both sinks for
# its pid (specs, endpoints, both control sockets), with the one consumer
# the test attached to the unix: sink and none on the recorder, and `ps`
# shows a line for each; `eventlog-sink ctl unix:CTL flush , ring-dump` writes a
# dump that ghc-events and ThreadScope's rule take whole, holding every
# user message and marker the program posted.  After it exits: the
# consumer on the unix: socket received a complete stream (recv's end
# marker) that ghc-events parses, with every user message and marker
# once; neither sink reported a loss; the announce file and both sockets
# are gone.  A flood that fills the RTS's buffers: the last sink (the
# recorder) keeps them without a copy, the first keeps none, and the
# consumer and the recorder's dump at exit each hold every event.
# Refused at start-up, each with one line naming the reason
# and nothing left behind: an empty spec in the list, five sinks, a bad
# option in the second spec, a '|' that belonged to a path, and a second
# sink that cannot open (the first one's socket is removed again).
#
# Skips (77) without the patched RTS, GHC or ghc-events.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"
. "$(dirname "$0")/../ghcprog.sh"
. "$(dirname "$0")/../monitor/monitor.sh"

monitor_setup
command -v "$PYTHON" >/dev/null 2>&1 || skip "python3 not installed"
deadline_set 300
export XDG_RUNTIME_DIR=$T/run
mkdir -m 700 "$XDG_RUNTIME_DIR" || fail "mkdir $XDG_RUNTIME_DIR"
PHASES=4
MSGS=$((PHASES * 200))
MARKERS=$((2 * PHASES + 1))
SOCK=$T/app.sock
REC=$T/app.eventlog
CTL=$T/app.rec.sock
LIVE="unix:$SOCK?wait=60&control=1"
RING="ring:$REC?size=64M&at-exit=0&control=unix:$CTL"

# --- Two sinks, RTS flags only ---------------------------------------------
start_controlled app "$BUSY" "$PHASES" +RTS -N2 -I0 -l \
    "--eventlog-sink=$LIVE|$RING" --eventlog-flush-interval=0.2 -RTS
PID=$ppid
start_receiver live "unix:$SOCK"
live_pid=$rpid
wait_output app ready

# ps lists both sinks under the program's pid.
"$ELS_SINK_TOOL" ps --json >"$T/ps.json" 2>"$T/ps.err" || fail_showing "$T/ps.err" "ps --json failed"
"$PYTHON" - "$T/ps.json" "$PID" "$LIVE" "unix:$SOCK" "$RING" "ring:$REC" "unix:$CTL" <<'PY' \
    || fail_showing "$T/ps.json" "ps --json does not list both sinks of pid $PID"
import json, sys
ps, pid, live, live_ep, ring, ring_ep, ctl = sys.argv[1:]
e = [p for p in json.load(open(ps)) if p["pid"] == int(pid)]
assert len(e) == 1, e
s = e[0]["sinks"]
assert [(k["spec"], k["endpoint"], k["control"]) for k in s] == \
    [(live, live_ep, live_ep), (ring, ring_ep, ctl)], s
# Each answers over its control socket: the unix: sink has the one
# receiver the test started (wait=60 held the program for it), the
# recorder no consumer; no loss.
assert (s[0]["consumers"], s[0]["dropped_units"]) == (1, 0), s
assert (s[1]["consumers"], s[1]["dropped_units"]) == (0, 0), s
assert e[0]["consumers"] == 1, e
PY
"$ELS_SINK_TOOL" ps >"$T/ps.txt" 2>&1 || fail_showing "$T/ps.txt" "ps failed"
grep -qE "^$PID +busy +[0-9]+ unix:$SOCK +unix:$SOCK +1 +0\$" "$T/ps.txt" \
    || fail_showing "$T/ps.txt" "ps has no line for the unix: sink of pid $PID with its 1 consumer"
grep -qE "^ +ring:$REC +unix:$CTL " "$T/ps.txt" \
    || fail_showing "$T/ps.txt" "ps has no line for the ring: sink of pid $PID"

# A dump through the recorder's control socket, while the program runs:
# flush first, so that everything posted so far is in the recording.
"$ELS_SINK_TOOL" ctl "unix:$CTL" flush , ring-dump >"$T/ctl.out" 2>"$T/ctl.err" \
    || fail_showing "$T/ctl.err" "ctl flush , ring-dump failed"
D=$T/app.1.eventlog
grep -qxF "ring-dump: $D ($(stat -c %s "$D" 2>/dev/null) bytes)" "$T/ctl.out" \
    || fail_showing "$T/ctl.out" "ring-dump did not answer the dump's name and size"
kill -0 "$PID" 2>/dev/null || fail "the program ended before the dump was checked"
shown_counts "$D" dump
[ "$SHOWN_MSGS" -eq "$MSGS" ] || fail "the dump holds $SHOWN_MSGS of the $MSGS user messages"
[ "$SHOWN_MARKERS" -eq "$MARKERS" ] || fail "the dump holds $SHOWN_MARKERS of the $MARKERS markers"
check_readers_accept dump "$D"
note "dump: $kept_line"

stop_controlled
wait_both "$live_pid"
check_program app "$prog_rc" ready
check_recv live "$recv_rc"
shown_counts "$T/live.eventlog" live
[ "$SHOWN_MSGS" -eq "$MSGS" ] || fail "the unix: consumer got $SHOWN_MSGS of the $MSGS user messages"
[ "$SHOWN_MARKERS" -eq "$MARKERS" ] || fail "the unix: consumer got $SHOWN_MARKERS of the $MARKERS markers"
! grep -qiE 'dropped|missed|behind' "$T/app.prog.err" \
    || fail_showing "$T/app.prog.err" "a sink reported a loss"
[ ! -e "$XDG_RUNTIME_DIR/eventlog-sink/$PID.announce" ] || fail "the announce file outlived the program"
[ ! -e "$SOCK" ] && [ ! -e "$CTL" ] || fail "a socket outlived the program"

# --- The RTS's full buffers: copied into the first, kept by the last -------
# tests/programs/Flood.hs posts N user events as fast as four threads can, so
# the capabilities' buffers fill (no periodic flush: however slow the
# machine, each buffer is written out full); the library's debug lines say how many
# units each sink kept without a copy.  The consumer on the first sink
# (policy=block: nothing lost for it) and the recorder's dump at exit
# each hold every event once.
build_ghc_program flood Flood patched_ghc_lib -threaded -eventlog -rtsopts
N=400000
start_program flood env EVENTLOG_SINK_DEBUG=1 "$GHC_PROGRAM" "$N" +RTS -N2 -l --eventlog-flush-interval=0 \
    "--eventlog-sink=unix:$T/flood.sock?wait=60&policy=block|ring:$T/flood.eventlog?size=64M" -RTS
start_receiver flood "unix:$T/flood.sock"
wait_both "$rpid"
[ "$prog_rc" -eq 0 ] || fail_showing "$T/flood.prog.err" "flood: status $prog_rc"
check_recv flood "$recv_rc"
# handed ENDPOINT: the units ENDPOINT's writer kept, from its debug line.
handed() {
    sed -n "s|.*: $1: [0-9]* units accepted, \([0-9]*\) of them handed over without a copy\$|\1|p" \
        "$T/flood.prog.err"
}
first=$(handed "unix:$T/flood.sock")
last=$(handed "ring:$T/flood.eventlog")
[ "${first:-x}" = 0 ] || fail_showing "$T/flood.prog.err" "flood: the first sink kept ${first:-no report of} units, expected 0"
[ "${last:-0}" -gt 0 ] || fail_showing "$T/flood.prog.err" "flood: the last sink kept none of the RTS's full buffers (${last:-no report})"
note "flood: the recorder kept $last units without a copy, the socket sink none"
for f in "$T/flood.eventlog" "$T/flood.1.eventlog"; do
    got=$(count_user_events "$f" "flood ") || fail "ghc-events cannot parse $f"
    [ "$got" -eq "$N" ] || fail "$f holds $got of the $N user events"
done
! grep -qiE 'dropped|missed|behind' "$T/flood.prog.err" \
    || fail_showing "$T/flood.prog.err" "flood: a sink reported a loss"

# --- Refused lists ----------------------------------------------------------
# refused NAME EXPECT SPEC: the program stops at start-up (status 1) with
# one line on stderr holding EXPECT (a fixed string), and leaves no
# socket behind.
refused() {
    local name=$1 expect=$2 rc=0
    "$BUSY" 1 +RTS -l "--eventlog-sink=$3" -RTS </dev/null \
        >"$T/$name.out" 2>"$T/$name.err" || rc=$?
    [ "$rc" -eq 1 ] || fail_showing "$T/$name.err" "$name: status $rc, expected 1"
    [ "$(wc -l <"$T/$name.err")" -eq 1 ] || fail_showing "$T/$name.err" "$name: not one line"
    grep -qF -- "$expect" "$T/$name.err" || fail_showing "$T/$name.err" "$name: the error does not say '$expect'"
    [ -z "$(find "$T" -maxdepth 1 -name 'bad*.sock')" ] || fail "$name: a socket was left behind"
    note "$name: $(cat "$T/$name.err")"
}
refused empty "sink 2 of 2 is empty" "unix:$T/bad1.sock|"
refused five "5 sinks, at most 4" \
    "unix:$T/bad1.sock|unix:$T/bad2.sock|unix:$T/bad3.sock|unix:$T/bad4.sock|unix:$T/bad5.sock"
refused option "sink 2 of 2: spec \"ring:$T/bad.eventlog?bogus=1\": unknown option 'bogus'" \
    "unix:$T/bad1.sock|ring:$T/bad.eventlog?bogus=1"
refused bar "write %7C for a '|' inside an address or option value" "unix:$T/a|bad1.sock"
echo "in the way" >"$T/taken"
refused open "sink 2 of 2: " "unix:$T/bad1.sock|unix:$T/taken"
echo "PASS: $els_test_name"
