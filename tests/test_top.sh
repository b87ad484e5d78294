#!/usr/bin/env bash
# test_top.sh: `eventlog-sink top`, the terminal monitor.
#
# Under tmux (a real terminal: send-keys, capture-pane), top follows the
# file a running program writes with plain `+RTS -l` (the route of a
# stock RTS: the file grows, top re-reads it), shows the same GC, thread,
# user-message and marker counts as ghc-events reads from that file, and
# starts over when the program runs again and replaces the file (a
# restart); q quits it.  `top --once --json` on the file gives the same
# figures, and the same GC pause maximum and total; without a terminal top prints plain lines.  Skips without
# tmux, GHC, ghc-events or the patched RTS.
set -u -o pipefail

. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ghcprog.sh"
. "$(dirname "$0")/monitor/monitor.sh"

command -v tmux >/dev/null 2>&1 || skip "tmux not installed (scripts/install-deps.sh)"
command -v python3 >/dev/null 2>&1 || skip "python3 not installed"
monitor_setup

LOG=$T/busy.eventlog
TMUX_SOCK=$T/tmux.sock
tm() { tmux -S "$TMUX_SOCK" "$@"; }
tm_cleanup() { tm kill-server 2>/dev/null || true; }

# run_busy NAME PHASES: run the program to its end, eventlog in $LOG.
run_busy() {
    "$BUSY" "$2" +RTS -N2 -I0 -l "-ol$LOG" -RTS </dev/null \
        >"$T/$1.prog.out" 2>"$T/$1.prog.err" \
        || fail_showing "$T/$1.prog.err" "$1: the program failed"
}

pane() { tm capture-pane -p -t els >"$T/pane.txt" 2>/dev/null; }

# pane_shows LINE...: the pane holds every fixed string given.
pane_shows() {
    local s
    pane || return 1
    for s in "$@"; do
        grep -qF -- "$s" "$T/pane.txt" || return 1
    done
}

# expect_pane NAME RUN: the pane shows run RUN with the counts shown_counts
# set.
expect_pane() {
    wait_until 60 pane_shows "run $2 " "[ended]" "GC       $SHOWN_GC (" \
            "(created $SHOWN_THREADS)" "messages $SHOWN_MSGS  markers $SHOWN_MARKERS " || {
        sed 's/^/#   /' "$T/pane.txt" >&2
        fail "$1: top's pane does not show run $2 with $SHOWN_GC GCs, $SHOWN_THREADS threads, $SHOWN_MSGS messages, $SHOWN_MARKERS markers"
    }
    note "$1: the pane shows what ghc-events reads"
}

# --- Live in a terminal: top is waiting before the file exists ---------
trap 'tm_cleanup; els_cleanup' EXIT
tm new-session -d -s els -x 110 -y 45 \
    "'$ELS_SINK_TOOL' top --interval 0.2 '$LOG'; echo top-exited-\$? >'$T/top.exit'" \
    || fail "tmux could not start a session"
wait_until 30 pane_shows "waiting for $LOG" \
    || { sed 's/^/#   /' "$T/pane.txt" >&2; fail "top does not say it waits for the file"; }

run_busy first 3
shown_counts "$LOG" first
[ "$SHOWN_MARKERS" -eq 7 ] || fail "first: $SHOWN_MARKERS markers in the file, the program posts 7"
expect_pane first 1

# The program runs again: the file is truncated and rewritten.
run_busy second 1
shown_counts "$LOG" second
expect_pane second 2

tm send-keys -t els q
wait_until 30 test -s "$T/top.exit" || fail "top did not quit on q"
grep -qx "top-exited-0" "$T/top.exit" || fail "top exited with $(cat "$T/top.exit")"

# --- For scripts: --once --json and plain lines --------------------------
"$ELS_SINK_TOOL" top --once --json "$LOG" >"$T/once.json" 2>"$T/once.err" \
    || fail_showing "$T/once.err" "top --once --json failed"
read -r gc threads msgs markers ended < <(json_get "$T/once.json" gc.count \
    threads.created user.messages user.markers source.ended)
note "top --once --json: $gc GCs, $threads threads, $msgs messages, $markers markers, ended $ended"
[ "$gc" -eq "$SHOWN_GC" ] || fail "top --json: $gc GCs, ghc-events $SHOWN_GC"
[ "$threads" -eq "$SHOWN_THREADS" ] || fail "top --json: $threads threads, ghc-events $SHOWN_THREADS"
[ "$msgs" -eq "$SHOWN_MSGS" ] || fail "top --json: $msgs messages, ghc-events $SHOWN_MSGS"
[ "$markers" -eq "$SHOWN_MARKERS" ] || fail "top --json: $markers markers, ghc-events $SHOWN_MARKERS"
[ "$ended" = true ] || fail "top --json: the stream did not end"
# GC pauses: GC_START to GC_END on the same capability, as read by
# ghc-events (times in ns), against top's milliseconds (6 digits).
read -r n_pauses max_ns total_ns < <(awk '
    /^ *[0-9]+: cap [0-9]+: starting GC$/ { s[$3] = $1 + 0 }
    /^ *[0-9]+: cap [0-9]+: finished GC$/ { p = $1 - s[$3]; n++; t += p; if (p > m) m = p }
    END { printf "%d %d %d\n", n, m, t }' "$T/second.show")
read -r max_ms time_s < <(json_get "$T/once.json" gc.pause_max_ms gc.time_s)
note "GC pauses: ghc-events $n_pauses, max $max_ns ns, total $total_ns ns; top max $max_ms ms, total $time_s s"
"$PYTHON" -c 'import sys; a, b, c, d = map(float, sys.argv[1:]); sys.exit(0 if abs(a * 1e6 - b) <= 1e-5 * b + 1 and abs(c * 1e9 - d) <= 1e-5 * d + 1 else 1)' \
    "$max_ms" "$max_ns" "$time_s" "$total_ns" \
    || fail "top --json: GC pause max $max_ms ms and total $time_s s, ghc-events $max_ns ns and $total_ns ns"

"$ELS_SINK_TOOL" top --once "$LOG" >"$T/once.txt" 2>&1 </dev/null \
    || fail_showing "$T/once.txt" "top --once failed"
grep -q $'\x1b' "$T/once.txt" && fail "top without a terminal wrote escape sequences"
grep -qF "GC       $SHOWN_GC (" "$T/once.txt" || fail_showing "$T/once.txt" "top --once lacks the GC line"

# A malformed file: one line, exit 1.
head -c 200 "$LOG" >"$T/bad.eventlog"
printf 'garbage' >>"$T/bad.eventlog"
"$ELS_SINK_TOOL" top --once --json "$T/bad.eventlog" >"$T/bad.json" 2>&1 && rc=0 || rc=$?
[ "$rc" -eq 1 ] || fail "top --once on a malformed file: exit $rc, expected 1"
[ "$(json_get "$T/bad.json" source.error)" != None ] || fail "top --json does not report the malformed stream"
echo "PASS: $els_test_name"
