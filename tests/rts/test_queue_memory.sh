#!/usr/bin/env bash
# test_queue_memory.sh: the queue's memory stays within buffer= (size= for
# a recorder) on a real program of the patched RTS, whose capabilities
# hand their full buffers to the library and get spares back, with
# partly filled buffers copied (README, `buffer=`; Note [The queue's
# memory] in lib/queue/unitq.h).
#
# tests/programs/Fill.hs (-N2, no periodic flush) posts, in each round, user
# events worth 1.35 of a capability's buffer and flushes: one full buffer
# handed over, one a third full copied.  Forty rounds with 2 MiB buffers,
# then the buffer size becomes 1 MiB while the program runs (the spares
# of the old size must go), then sixty rounds more.  Two sinks, one at a
# time, each with SIZE = 32M:
#   a. unix:SOCK?buffer=SIZE with a consumer that connects and never reads
#      (a stalled consumer: the queue fills, the consumer is cut loose);
#   b. ring:FILE?size=SIZE, a recorder that is always full.
# After the program started (its queue nearly empty) its resident memory
# (VmRSS in /proc/PID/status) is read; after the rounds its peak resident
# memory (VmHWM) must not have grown by more than SIZE and a margin for
# what is not the queue (the RTS's two capability buffers, the Haskell
# heap, the rest of a unit a consumer cut loose keeps, the unit
# descriptors).  Before the bound counted the queue's touched bytes and
# its spare buffers, the copies walked the whole queue while kept buffers
# filled SIZE again: the growth was about twice SIZE.  Resident memory is
# a size, not a time: nothing here depends on the machine's speed.  The
# library's own count says both ways in were taken (units handed over,
# units copied), the losses are reported, and the recorder's dump at exit
# parses.
#
# Skips (77) without the patched RTS, GHC or ghc-events; part a needs
# python3 (its stalled consumer).
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"
. "$(dirname "$0")/../ghcprog.sh"

setup_ghc_program_test fill Fill
FILL=$GHC_PROGRAM
export XDG_RUNTIME_DIR=$T/run
mkdir -m 700 "$XDG_RUNTIME_DIR" || fail "mkdir $XDG_RUNTIME_DIR"
if [ -x /usr/bin/python3 ]; then PYTHON=/usr/bin/python3; else PYTHON=python3; fi
# The count of units handed over at exit is a debug line.
export EVENTLOG_SINK_DEBUG=1

SIZE_MB=32
# What is not the queue (see above); a run within the bound grows by 1-6
# MiB more than SIZE here, one without it by about SIZE more.
MARGIN_MB=12

status_kb() { awk -v k="$2:" '$1 == k { print $2; f = 1 } END { exit !f }' "/proc/$1/status"; }

# fill_and_measure NAME: the program (ppid) has said "ready"; run the
# rounds, change the buffer size between them, check the peak growth.
fill_and_measure() {
    local name=$1 rss0 hwm handed accepted
    rss0=$(status_kb "$ppid" VmRSS) || fail "$name: no VmRSS for pid $ppid"
    tell_controlled "fill 40"
    wait_output "$name" "filled 40" 300
    tell_controlled "size 1048576"
    wait_output "$name" "size 0 1048576"
    tell_controlled "fill 60"
    wait_output "$name" "filled 60" 300
    hwm=$(status_kb "$ppid" VmHWM) || fail "$name: no VmHWM for pid $ppid"
    note "$name: VmRSS ${rss0} kB after start, peak VmHWM ${hwm} kB after the rounds:" \
         "grew by $(( (hwm - rss0) / 1024 )) MiB, SIZE ${SIZE_MB} MiB"
    stop_controlled
    rc=0; wait_pid "$ppid" 120 || rc=$?
    [ "$rc" -eq 0 ] || fail_showing "$T/$name.prog.err" "$name: the program exited with $rc"
    # Both ways in, many times: of the 100 full buffers many are handed
    # over (one that finds no room may be copied, or dropped while the
    # writer thread waits for a core), the 100 flushes are copied.
    read -r accepted handed < <(sed -n 's/.*: \([0-9]*\) units accepted, \([0-9]*\) of them handed over.*/\1 \2/p' \
                                "$T/$name.prog.err" | tail -1)
    [ -n "${handed:-}" ] || fail_showing "$T/$name.prog.err" "$name: no count of the units handed over at exit"
    note "$name: $accepted units accepted, $handed of them handed over"
    [ "$handed" -ge 20 ] && [ $(( accepted - handed )) -ge 100 ] \
        || fail_showing "$T/$name.prog.err" "$name: $handed of $accepted units handed over: not the mix this test needs"
    [ $(( hwm - rss0 )) -le $(( (SIZE_MB + MARGIN_MB) * 1024 )) ] \
        || fail "$name: the program's resident memory grew by $(( (hwm - rss0) / 1024 )) MiB" \
                "(from $rss0 kB to a peak of $hwm kB) with a queue of ${SIZE_MB} MiB:" \
                "more than the queue plus ${MARGIN_MB} MiB"
}

# --- a. unix: with a consumer that never reads ------------------------------
if command -v "$PYTHON" >/dev/null 2>&1; then
    SOCK=$T/s.sock
    start_controlled stalled "$FILL" +RTS -N2 --eventlog-flush-interval=0 \
        "--eventlog-sink=unix:$SOCK?buffer=${SIZE_MB}M&wait=60" -RTS
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
    wait_output stalled ready
    fill_and_measure stalled
    kill "$consumer_pid" 2>/dev/null
    grep -Eq "dropped [0-9]+ of [0-9]+ units" "$T/stalled.prog.err" \
        || fail_showing "$T/stalled.prog.err" "stalled: no loss reported at exit"
else
    skip_part_dep stalled "python3 not installed"
fi

# --- b. ring: a recorder, always full -------------------------------------
REC=$T/rec.eventlog
start_controlled rec "$FILL" +RTS -N2 --eventlog-flush-interval=0 \
    "--eventlog-sink=ring:$REC?size=${SIZE_MB}M" -RTS
wait_output rec ready
fill_and_measure rec
dump=$T/rec.1.eventlog
[ -s "$dump" ] || fail_showing "$T/rec.prog.err" "rec: no dump at exit ($dump)"
show_events "$dump" "$T/rec.show" || fail "rec: ghc-events cannot parse the dump at exit"
grep -q "fill 000060 " "$T/rec.show" || fail "rec: the dump at exit does not hold the last round"

exit 0
