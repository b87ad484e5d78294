#!/usr/bin/env bash
# test_queue_memory.sh: the queue's memory stays within buffer= (size= for
# a recorder) on a real program of the patched RTS, whose capabilities
# hand their full buffers to the library and get spares back, with
# partly filled buffers copied at every flush (README, `buffer=`; Note
# [The queue's memory] in lib/queue/ring.h).
#
# tests/programs/Controlled.hs (`controlled idle`, -N2) floods capability
# 1 with user events on each "flood" line, with a 10 ms flush interval:
# whole buffers are handed over and partly filled ones copied.  Two sinks,
# one at a time, each with SIZE = 32M:
#   a. unix:SOCK?buffer=SIZE with a consumer that connects and never reads
#      (a stalled consumer: the queue fills, the consumer is cut loose);
#   b. ring:FILE?size=SIZE, a recorder that is always full.
# After the program started (its queue nearly empty) its resident memory
# (VmRSS in /proc/PID/status) is read; then it posts about eight times
# SIZE of events, and its peak resident memory (VmHWM) must not have grown by more than SIZE and a margin for what is not the
# queue (the RTS's two capability buffers, the Haskell heap, the rest of
# a unit a consumer cut loose keeps, the unit descriptors).  Before the
# bound counted the queue's touched bytes and its spare buffers, the
# copies walked the whole queue while kept buffers filled SIZE again: the
# growth was about twice SIZE.  Resident memory is a size, not a time:
# nothing here depends on the machine's speed.  The losses are counted
# (the consumer's cut-loose notes, the recorder's overwrites) and the
# stream stays well formed: the recorder's dump at exit parses.
#
# Skips (77) without the patched RTS, GHC, ghc-events or python3 (part a).
set -u -o pipefail

. "$(dirname "$0")/../lib.sh"

require_tool
require_ghc
require_patched_rts
make_tmpdir
T=$ELS_TMP
export XDG_RUNTIME_DIR=$T/run
mkdir -m 700 "$XDG_RUNTIME_DIR" || fail "mkdir $XDG_RUNTIME_DIR"
build_controlled patched
if [ -x /usr/bin/python3 ]; then PYTHON=/usr/bin/python3; else PYTHON=python3; fi

SIZE_MB=32
# What is not the queue, from the measurements of this test (growth of a
# run whose queue stays within SIZE: 1-6 MiB over it): the RTS's two 2 MiB
# capability buffers, the heap the flood allocates, a cut-loose unit.
MARGIN_MB=12
FLOOD_EVENTS=150000     # per "flood" line (Controlled.hs)

status_kb() { awk -v k="$2:" '$1 == k { print $2; f = 1 } END { exit !f }' "/proc/$1/status"; }
flooded() { grep -cxF flooded "$T/$1.prog.out" 2>/dev/null; }
at_least_flooded() { [ "$(flooded "$1")" -ge "$2" ] || ! kill -0 "$ppid" 2>/dev/null; }

# flood_and_measure NAME: the program (ppid) has started; flood it with
# about 8 x SIZE of events, then check its peak growth.
flood_and_measure() {
    local name=$1 rss0 hwm i rounds
    rss0=$(status_kb "$ppid" VmRSS) || fail "$name: no VmRSS for pid $ppid"
    # A flood line posts about 5 MiB of events.
    rounds=$(( 8 * SIZE_MB / 5 + 1 ))
    for i in $(seq 1 "$rounds"); do
        tell_controlled flood
        wait_until 120 at_least_flooded "$name" "$i" \
            || fail_showing "$T/$name.prog.err" "$name: flood $i did not finish"
        kill -0 "$ppid" 2>/dev/null || fail_showing "$T/$name.prog.err" "$name: the program died during flood $i"
    done
    hwm=$(status_kb "$ppid" VmHWM) || fail "$name: no VmHWM for pid $ppid"
    note "$name: VmRSS ${rss0} kB after start, peak VmHWM ${hwm} kB after $rounds floods" \
         "($((rounds * FLOOD_EVENTS)) events): grew by $(( (hwm - rss0) / 1024 )) MiB, SIZE ${SIZE_MB} MiB"
    [ $(( hwm - rss0 )) -le $(( (SIZE_MB + MARGIN_MB) * 1024 )) ] \
        || fail "$name: the program's resident memory grew by $(( (hwm - rss0) / 1024 )) MiB" \
                "(from $rss0 kB to a peak of $hwm kB) with a queue of ${SIZE_MB} MiB:" \
                "more than the queue plus ${MARGIN_MB} MiB"
}

# --- a. unix: with a consumer that never reads ------------------------------
if command -v "$PYTHON" >/dev/null 2>&1; then
    SOCK=$T/s.sock
    start_controlled stalled "$CONTROLLED" idle +RTS -N2 --eventlog-flush-interval=0.01 \
        "--eventlog-sink=unix:$SOCK?buffer=${SIZE_MB}M&wait=60" -RTS
    prog_pid=$ppid
    # Connects (the program waits for it: wait=), says so, never reads.
    "$PYTHON" - "$SOCK" "$T/stalled.connected" <<'PY' >"$T/stalled.consumer.err" 2>&1 &
import os, socket, sys, time
path, flag = sys.argv[1:]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
deadline = time.monotonic() + 60
while True:
    try:
        s.connect(path)
        break
    except OSError:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.05)
open(flag, "w").close()
while True:
    time.sleep(60)
PY
    consumer_pid=$!
    bg_register "$consumer_pid"
    wait_for_file "$T/stalled.connected" 60 \
        || fail_showing "$T/stalled.consumer.err" "stalled: the consumer did not connect"
    wait_output stalled posted
    flood_and_measure stalled
    # What the consumer missed is counted, and said at exit.
    kill "$consumer_pid" 2>/dev/null
    stop_controlled
    rc=0; wait_pid "$prog_pid" 120 || rc=$?
    [ "$rc" -eq 0 ] || fail_showing "$T/stalled.prog.err" "stalled: the program exited with $rc"
    grep -Eq "dropped [0-9]+ of [0-9]+ units" "$T/stalled.prog.err" \
        || fail_showing "$T/stalled.prog.err" "stalled: no loss reported at exit"
else
    skip_part_dep stalled "python3 not installed"
fi

# --- b. ring: a recorder, always full -------------------------------------
REC=$T/rec.eventlog
start_controlled rec "$CONTROLLED" idle +RTS -N2 --eventlog-flush-interval=0.01 \
    "--eventlog-sink=ring:$REC?size=${SIZE_MB}M" -RTS
prog_pid=$ppid
wait_output rec posted
flood_and_measure rec
stop_controlled
rc=0; wait_pid "$prog_pid" 120 || rc=$?
[ "$rc" -eq 0 ] || fail_showing "$T/rec.prog.err" "rec: the program exited with $rc"
dump=$T/rec.1.eventlog
[ -s "$dump" ] || fail_showing "$T/rec.prog.err" "rec: no dump at exit ($dump)"
show_events "$dump" "$T/rec.show" || fail "rec: ghc-events cannot parse the dump at exit"
grep -q "controlled flood" "$T/rec.show" || fail "rec: the dump at exit holds none of the flood"

exit 0
