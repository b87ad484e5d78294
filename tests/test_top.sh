#!/usr/bin/env bash
# test_top.sh: `eventlog-sink top`, the terminal monitor.
#
# Under tmux (a real terminal: send-keys, capture-pane), top follows the
# file a running program writes with plain `+RTS -l` (the route of a
# stock RTS: the file grows, top re-reads it), shows the same GC, thread,
# user-message and marker counts as ghc-events reads from that file, and
# starts over when the program runs again and replaces the file (a
# restart); q quits it.  `top --once --json` on the file gives the same
# figures, and the same GC pause maximum and total; without a terminal top prints plain lines.
# Control keys: without --control a key says control is not enabled;
# with --control against a -N2 program whose sink has control=1, i, t,
# f, s, h and c+letter each send their command and the status line shows
# the program's answer (flush, snapshot, the class toggle and the heap
# census expect success when the program's help lists them, else the
# unknown-command error), R restarts the stream (top shows run 2), X
# then y stops it (top shows its end).  Skips without
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

# Without --control, a control key says so.
tm send-keys -t els f
wait_until 30 pane_shows "control: flush: ELS_ENOTSUP: control is not enabled" \
    || { sed 's/^/#   /' "$T/pane.txt" >&2; fail "f without --control does not say control is not enabled"; }

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

# Stopped by SIGINT before its first interval, plain-lines top still ends
# its output with a view of what it read.
# (--save tells when it has read the whole file.)
"$ELS_SINK_TOOL" top --lines --interval 3600 --save "$T/int.eventlog" "$LOG" \
    >"$T/int.txt" 2>&1 </dev/null &
top_pid=$!
saved_all() { cmp -s "$LOG" "$T/int.eventlog"; }
wait_until 30 saved_all || fail "top --save did not copy the whole file"
[ -s "$T/int.txt" ] && fail_showing "$T/int.txt" "top --interval 3600 printed before its first interval"
kill -INT "$top_pid"
wait "$top_pid" || fail_showing "$T/int.txt" "top stopped by SIGINT exited with $?"
grep -qF "GC       $SHOWN_GC (" "$T/int.txt" || fail_showing "$T/int.txt" "top stopped by SIGINT printed no last view"

# A malformed file: one line, exit 1.
head -c 200 "$LOG" >"$T/bad.eventlog"
printf 'garbage' >>"$T/bad.eventlog"
"$ELS_SINK_TOOL" top --once --json "$T/bad.eventlog" >"$T/bad.json" 2>&1 && rc=0 || rc=$?
[ "$rc" -eq 1 ] || fail "top --once on a malformed file: exit $rc, expected 1"
[ "$(json_get "$T/bad.json" source.error)" != None ] || fail "top --json does not report the malformed stream"
# --- Control keys (--control) on a live program with control=1 -------------
csock=$T/c.sock
tm new-session -d -s ctl -x 200 -y 60 \
    "'$ELS_SINK_TOOL' top --control --interval 0.2 'unix:$csock'; echo top-exited-\$? >'$T/ctl.exit'" \
    || fail "tmux could not start the control session"
start_busy_live ctl 1 "$csock" control=1 -hT
# cpane_shows LINE...: the control session's pane (wrapped lines joined)
# holds every fixed string given.
cpane_shows() {
    local s
    tm capture-pane -p -J -t ctl >"$T/cpane.txt" 2>/dev/null || return 1
    for s in "$@"; do
        grep -qF -- "$s" "$T/cpane.txt" || return 1
    done
}
# key NAME KEYS... -- LINE: send KEYS, wait until the pane shows LINE.
key() {
    local name=$1 keys=()
    shift
    while [ "$1" != -- ]; do keys+=("$1"); shift; done
    tm send-keys -t ctl "${keys[@]}"
    wait_until 30 cpane_shows "$2" || {
        sed 's/^/#   /' "$T/cpane.txt" >&2
        fail "$name: after the keys ${keys[*]} top's status line lacks '$2'"
    }
    note "$name: $(grep -F -- "control: " "$T/cpane.txt" | head -1)"
}
unknown="ELS_EINVAL: unknown command (send \"help\" for the list)"
key status i -- "control: status: ok: running on unix:$csock; protocol 2; consumers "
key stats t -- "control: stats: ok: units accepted "
for k in "f flush flush" "s snapshot snapshot" "h heap-census heap-census"; do
    set -- $k
    if control_has "$2" "$csock" "$3"; then
        key "$2" "$1" -- "control: $2: ok"
    else
        key "$2" "$1" -- "control: $2: $unknown"
    fi
done
if control_has classes "$csock" get-classes; then
    classes=$("$ELS_SINK_TOOL" ctl "unix:$csock" get-classes | sed 's/^get-classes: //')
    # The classes after the toggle, in the order sgnpfu.
    want=
    for l in s g n p f u; do
        case $classes in *$l*) on=1 ;; *) on=0 ;; esac
        [ "$l" = g ] && on=$(( 1 - on ))
        [ "$on" = 1 ] && want+=$l
    done
    key toggle-class c g -- "control: toggle-class g: ok: $want"
else
    key toggle-class c g -- "control: toggle-class g: $unknown"
fi
key stop-cancelled X n -- "control: stop cancelled"
# restart: the stream ends and a new one starts; top follows it, and the
# next key opens a new session.
key restart R -- "control: restart: ok: accepted; the stream ends now"
wait_until 30 cpane_shows "run 2 " || { sed 's/^/#   /' "$T/cpane.txt" >&2; fail "top does not show the restarted stream"; }
key status-again i -- "control: status: ok: running on unix:$csock"
key stop X y -- "control: stop: ok: accepted; the stream ends now"
wait_until 30 cpane_shows "[ended]" || { sed 's/^/#   /' "$T/cpane.txt" >&2; fail "top does not show the stopped stream's end"; }
kill -0 "$ppid" 2>/dev/null || fail "the program died on stop"
stop_controlled
wait_pid "$ppid" 60 || fail_showing "$T/ctl.prog.err" "the program did not exit cleanly after stop"
tm send-keys -t ctl q
wait_until 30 test -s "$T/ctl.exit" || fail "top --control did not quit on q"
grep -qx "top-exited-0" "$T/ctl.exit" || fail "top --control exited with $(cat "$T/ctl.exit")"

echo "PASS: $els_test_name"
