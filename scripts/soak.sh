#!/usr/bin/env bash
# soak.sh: the soak run: a long-running program, consumers that come and
# go, and a verdict on its memory and on every stream it served.
#
# Runs examples/live-service `steady` (about 10,000 user events a second
# from two threads) with +RTS -N2 --eventlog-sink=unix:SOCK?buffer=4M
# --eventlog-flush-interval=0.5 for --minutes N (default 10), while three
# consumers (`eventlog-sink recv`) each join and leave again and again:
# each connection lasts a random 0.5-8 s and ends by SIGTERM, by SIGKILL,
# or by SIGTERM after a stall (the receiver stopped with SIGSTOP for
# 2-15 s, long enough to be cut loose from a 4 MB queue now and then),
# followed by a random pause of 0-2 s.  Every captured stream is checked
# with ghc-events as it ends (header first, parses with no error text, no
# user event twice, and as many events as the receiver counted when it
# could print its count) and then deleted unless it failed.  The
# program's resident set size is sampled every 10 s.
#
# Prints a summary: connections (by how they ended), streams valid and
# invalid, events read, in-band loss notes, the program's exit status and
# loss report, and RSS (first, min, max, last, and the last against the
# first sample taken after the first minute, when the queue and the heap
# have reached their working size).  Exit status 1 if any stream was
# invalid, the program did not exit 0, or the RSS grew by more than 20%
# after the first minute (a soak verdict, not a unit test: for a
# --minutes 1 run there is no verdict on memory); 2 for usage errors; 77
# when the patched RTS, GHC or ghc-events is missing.  Ten minutes make
# about 200 connections.
#
# Needs a build with the patched RTS (scripts/build.sh); it does not
# build anything but examples/live-service (cached in the build tree).
#
# Usage: scripts/soak.sh [--minutes N] [--consumers N] [--keep]
#   --keep keeps the work directory (streams that failed are always kept
#   there, and it is kept on failure).
# Environment: BUILD_DIR (default _build), as for scripts/build.sh.
set -u -o pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
minutes=10
nconsumers=3
keep=0
usage() {
    echo "usage: scripts/soak.sh [--minutes N] [--consumers N] [--keep]" >&2
    exit 2
}
while [ "$#" -gt 0 ]; do
    case "$1" in
        --minutes) [ "$#" -ge 2 ] || usage; minutes=$2; shift 2 ;;
        --consumers) [ "$#" -ge 2 ] || usage; nconsumers=$2; shift 2 ;;
        --keep) keep=1; shift ;;
        *) usage ;;
    esac
done
case "$minutes" in '' | *[!0-9]* | 0) usage ;; esac
case "$nconsumers" in '' | *[!0-9]* | 0) usage ;; esac

build=${BUILD_DIR:-$top/_build}
case "$build" in /*) ;; *) build=$top/$build ;; esac
export ELS_TOP_SRCDIR=$top ELS_TOP_BUILDDIR=$build
[ "$keep" -eq 0 ] || export ELS_KEEP_TMP=1

. "$top/tests/harness.sh"

require_tool
require_ghc
require_patched_rts
make_tmpdir
# --keep: keep the directory on success too (harness.sh keeps it on failure
# with ELS_KEEP_TMP).
if [ "$keep" -eq 1 ]; then
    trap 'rc=$?; echo "soak: work directory kept: $ELS_TMP" >&2; ELS_TMP=; (exit $rc); els_cleanup' EXIT
fi
build_live_service
T=$ELS_TMP
secs=$((minutes * 60))
sock=$T/soak.sock
spec="unix:$sock?buffer=4M"

echo "soak: $LIVE_SERVICE steady $secs +RTS -N2 --eventlog-sink=$spec --eventlog-flush-interval=0.5"
echo "soak: $nconsumers consumers joining and leaving; RSS every 10 s; work directory $T"
start=$(date +%s)
EVENTLOG_SINK_DEBUG=1 start_program soak "$LIVE_SERVICE" steady "$secs" \
    +RTS -N2 "--eventlog-sink=$spec" --eventlog-flush-interval=0.5 -RTS
wait_for_file "$sock" 20 || fail_showing "$T/soak.prog.err" "the program did not create $sock"

# tenths LO HI: a random number of seconds in [LO/10, HI/10], as "S.D".
tenths() {
    local t=$(( $1 + RANDOM % ($2 - $1 + 1) ))
    echo "$((t / 10)).$((t % 10))"
}

# consumer K: join and leave until the program ends; one result line per
# connection in $T/results.K: K N HOW RC VALID EVENTS USER NOTES RECV-EVENTS.
consumer() {
    local k=$1 n=0 how rc r f e valid
    trap '[ -z "${r:-}" ] || kill -KILL "$r" 2>/dev/null; exit 143' TERM
    while kill -0 "$ppid" 2>/dev/null; do
        n=$((n + 1))
        f=$T/c$k.$n.eventlog
        "$ELS_SINK_TOOL" recv --retry 5 -o "$f" "unix:$sock" >/dev/null 2>"$f.err" &
        r=$!
        case $((RANDOM % 3)) in
            0) how=term ;;
            1) how=kill ;;
            *) how=stall ;;
        esac
        sleep "$(tenths 5 80)"
        if [ "$how" = stall ]; then
            kill -STOP "$r" 2>/dev/null
            sleep "$(tenths 20 150)"
            kill -CONT "$r" 2>/dev/null
            sleep "$(tenths 5 20)"
        fi
        ended=0
        if kill -0 "$r" 2>/dev/null; then
            if [ "$how" = kill ]; then kill -KILL "$r"; else kill -TERM "$r"; fi
        else
            ended=1         # the program ended first
        fi
        rc=0; { wait "$r" || rc=$?; } 2>/dev/null
        r=
        if [ "$rc" -eq 1 ] && [ ! -s "$f" ]; then
            # The program had gone before the receiver connected.
            echo "$k $n unreachable $rc - 0 0 0 -" >>"$T/results.$k"
            rm -f "$f" "$f.err"
            break
        fi
        valid=ok
        validate_stream "$f" "$f.show" || valid=invalid
        e=$(recv_events "$f.err") || e=-
        if [ "$valid" = ok ] && [ "$e" != - ] && [ "$e" -ne "$vs_events" ]; then
            valid=invalid vs_why="recv counted $e events, ghc-events read $vs_events"
        fi
        if [ "$valid" = ok ] && [ "$vs_events" -eq 0 ]; then
            valid=invalid vs_why="no event after $how"
        fi
        # A consumer still there when the program ended gets the whole
        # rest of the stream, unless it was stalled past linger= (5 s).
        if [ "$ended" -eq 1 ] && [ "$how" != stall ] && [ "$rc" -ne 0 ]; then
            valid=invalid vs_why="connected at the program's exit, yet recv exited $rc"
        fi
        [ "$ended" -eq 0 ] || how=$how-to-end
        echo "$k $n $how $rc $valid $vs_events $vs_user $vs_notes $e" >>"$T/results.$k"
        if [ "$valid" = ok ]; then
            rm -f "$f" "$f.err" "$f.show" "$f.show.err"
        else
            echo "soak: consumer $k connection $n ($how, recv exit $rc): INVALID: $vs_why (kept $f)" >&2
        fi
        sleep "$(tenths 0 20)"
    done
}

cpids=()
for k in $(seq 1 "$nconsumers"); do
    : >"$T/results.$k"
    consumer "$k" &
    cpids+=($!)
    bg_register "$!"
done

# RSS every 10 s while the program runs: "SECONDS-SINCE-START KB".
: >"$T/rss"
next=$start
while kill -0 "$ppid" 2>/dev/null; do
    now=$(date +%s)
    if [ "$now" -ge "$next" ]; then
        kb=$(rss_kb "$ppid") && echo "$((now - start)) $kb" >>"$T/rss"
        next=$((next + 10))
    fi
    sleep 1
done
prog_rc=0; wait_pid "$ppid" 60 || prog_rc=$?
for p in "${cpids[@]}"; do
    wait_pid "$p" 120 || true
done
end=$(date +%s)

# ---------------------------------------------------------------------------
# Summary and verdict
# ---------------------------------------------------------------------------
verdict=0
cat "$T"/results.* >"$T/results"
conns=$(awk '$3 != "unreachable"' "$T/results" | wc -l)
echo
echo "soak: ran $((end - start)) s; the program exited $prog_rc: $(head -c 200 "$T/soak.prog.out")"
[ "$prog_rc" -eq 0 ] || { verdict=1; echo "soak: FAIL: the program exited $prog_rc"; sed 's/^/  /' "$T/soak.prog.err" | grep -v 'consumer [0-9]* \(at\|de\)tached' | head -n 20; }
echo "soak: $conns connections: $(awk '$3 != "unreachable" { n[$3]++ } END { for (h in n) printf "%s %d, ", h, n[h] }' "$T/results" | sed 's/, $//')"
echo "soak: receiver exit statuses: $(awk '$3 != "unreachable" { n[$4]++ } END { for (s in n) printf "%s: %d, ", s, n[s] }' "$T/results" | sed 's/, $//')"
echo "soak: the writer saw $(grep -c 'consumer [0-9]* attached' "$T/soak.prog.err") consumers attach and $(grep -c 'consumer [0-9]* detached' "$T/soak.prog.err") detach"
read -r nvalid ninvalid events user notes < <(awk '$3 != "unreachable" {
        if ($5 == "ok") v++; else i++
        e += $6; u += $7; l += $8 }
    END { print v + 0, i + 0, e + 0, u + 0, l + 0 }' "$T/results")
echo "soak: streams: $nvalid valid, $ninvalid invalid; $events events read ($user user events); $notes in-band loss notes"
[ "$ninvalid" -eq 0 ] || { verdict=1; echo "soak: FAIL: $ninvalid invalid streams (kept in $T)"; }
[ "$conns" -gt 0 ] || { verdict=1; echo "soak: FAIL: no consumer connected"; }
loss=$(loss_lines "$T/soak.prog.err") || loss="none (nothing dropped)"
echo "soak: loss report at exit: $loss"
if [ "$notes" -gt 0 ] && [ "$loss" = "none (nothing dropped)" ]; then
    verdict=1
    echo "soak: FAIL: streams were told of losses in-band but the program reported none"
fi

if [ -s "$T/rss" ]; then
    read -r n first min max last < <(awk '
        NR == 1 { first = $2; min = $2; max = $2 }
        { if ($2 < min) min = $2; if ($2 > max) max = $2; last = $2 }
        END { print NR, first, min, max, last }' "$T/rss")
    echo "soak: RSS over $n samples (KiB): first $first, min $min, max $max, last $last"
    read -r base_t base < <(awk '$1 >= 60 { print $1, $2; exit }' "$T/rss")
    if [ -n "${base:-}" ] && [ "$(awk 'END { print NR }' "$T/rss")" -gt 1 ] \
            && [ "$(tail -n 1 "$T/rss" | cut -d' ' -f1)" -gt "$base_t" ]; then
        growth=$(awk -v b="$base" -v l="$last" 'BEGIN { printf "%.1f", (l - b) * 100 / b }')
        echo "soak: RSS at ${base_t} s: $base KiB; last: $last KiB; growth since: $growth% (bound: 20%)"
        if awk -v b="$base" -v l="$last" 'BEGIN { exit !(l > b * 1.2) }'; then
            verdict=1
            echo "soak: FAIL: RSS grew by $growth% after the first minute"
        fi
    else
        echo "soak: no RSS verdict: the run was too short to sample after the first minute"
    fi
else
    verdict=1
    echo "soak: FAIL: no RSS sample"
fi

if [ "$verdict" -eq 0 ]; then
    echo "soak: PASS"
else
    echo "soak: FAIL (work directory kept: $T)"
    ELS_KEEP_TMP=1
fi
exit "$verdict"
