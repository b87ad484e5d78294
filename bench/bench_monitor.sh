#!/usr/bin/env bash
# bench_monitor.sh: the live monitor's two figures (docs: README, "Live
# monitor").
#
# 1. Headroom: an event-heavy -N2 program (bench/MonitorLoad.hs, built
#    with the patched RTS) writes its eventlog with +RTS -l; its eventlog
#    bytes per second (file size over the run's wall time) against the
#    model's parse rate on that file (bench_monitor.c, median of 5).
# 2. CPU of `top`, `serve` and `serve --all` at the default 1 s refresh
#    on an idle program (tests/programs/Busy.hs after its work, on a unix:
#    sink flushed every second), from /proc/PID/stat over
#    BENCH_IDLE_SECS (30).
# 3. Keep-up, each tool as a user runs it: the busiest program of the
#    performance goals (bench/App.hs `events BENCH_BUSY_EVENTS 4`, -N2,
#    about 3-5 M user events a second; 24 M events, so that the tools'
#    CPU, counted in 10 ms ticks, is read to a few per cent) streams through a unix: sink
#    (policy=drop, so a tool that falls behind shows as drops) to `top
#    --lines`, `serve` or `serve --all` (one run each); the tool's CPU
#    seconds from /proc/PID/stat once the stream has ended give its rate
#    (stream bytes per CPU second: the bytes are those of the same run
#    written with -l), against the program's own byte rate.
#
# Usage: bench/bench_monitor.sh [BUILD_DIR]   (default _build)
# Needs the build (scripts/build.sh) and the patched RTS; prints a table.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$top/_build}" && pwd)
ghc=$build/patched-rts/bin/ghc-eventlog-sink
tool=$build/tools/eventlog-sink
libdir=$build/lib/.libs
idle_secs=${BENCH_IDLE_SECS:-30}
load_n=${BENCH_LOAD_EVENTS:-1000000}
busy_n=${BENCH_BUSY_EVENTS:-24000000}
load0=$(cut -d" " -f1-3 /proc/loadavg)
work=$(mktemp -d /tmp/els-bench-monitor.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

[ -x "$ghc" ] || { echo "bench_monitor: no patched RTS at $ghc" >&2; exit 1; }
[ -x "$tool" ] || { echo "bench_monitor: no $tool (build first)" >&2; exit 1; }

build_hs() {  # build_hs SRC OUT
    mkdir -p "$work/b-$2"
    cp "$1" "$work/b-$2/Main.hs"
    (cd "$work/b-$2" && "$ghc" -v0 -O -threaded -eventlog -rtsopts \
        -L"$libdir" -leventlog-sink -optl-Wl,-rpath,"$libdir" Main.hs -o "$work/$2")
}
build_hs "$top/bench/MonitorLoad.hs" load
build_hs "$top/tests/programs/Busy.hs" busy
build_hs "$top/bench/App.hs" app
cc -O2 -std=gnu11 -I"$top/include" -I"$top/tools" "$top/bench/bench_monitor.c" \
    "$top/tools/monitor/model.c" "$top/tools/monitor/model_time.c" \
    "$top/tools/monitor/model_tables.c" "$top/tools/monitor/model_stops.c" \
    "$top/tools/monitor/model_prof.c" "$top/tools/monitor/model_user.c" "$top/tools/monitor/render.c" "$top/tools/monitor/strbuf.c" \
    "$top/tools/monitor/render_json.c" "$top/tools/monitor/render_text.c" \
    "$top/tools/monitor/render_prom.c" "$top/tools/monitor/series.c" \
    "$top/tools/monitor/safetext.c" \
    "$build/lib/.libs/libelscore.a" -lm -lpthread -o "$work/bench_monitor"

# --- 1. Headroom -------------------------------------------------------------
t0=$(date +%s.%N)
"$work/load" "$load_n" +RTS -N2 -l "-ol$work/load.eventlog" -RTS
t1=$(date +%s.%N)
bytes=$(wc -c <"$work/load.eventlog")
prog_mbs=$(awk -v b="$bytes" -v a="$t0" -v z="$t1" 'BEGIN { printf "%.1f", b / 1e6 / (z - a) }')
parse_mbs=$("$work/bench_monitor" "$work/load.eventlog" 5)
headroom=$(awk -v p="$parse_mbs" -v g="$prog_mbs" 'BEGIN { printf "%.0f", p / g }')

# --- 2. Idle CPU ---------------------------------------------------------------
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
pct() {  # pct TICKS0 TICKS1 SECS: per cent of a core
    awk -v a="$1" -v b="$2" -v hz="$hz" -v s="$3" 'BEGIN { printf "%.2f", 100 * (b - a) / hz / s }'
}
mkdir -m 700 "$work/run"     # the announcements serve --all follows
mkfifo "$work/in"
XDG_RUNTIME_DIR=$work/run "$work/busy" 1 +RTS -N2 -I0 "--eventlog-sink=unix:$work/p.sock?wait=30" \
    --eventlog-flush-interval=1 -RTS <"$work/in" >"$work/busy.out" 2>&1 &
pids+=($!)
exec {hold}>"$work/in"
"$tool" serve --listen 127.0.0.1:0 "unix:$work/p.sock" 2>"$work/serve.err" &
spid=$!; pids+=("$spid")
for _ in $(seq 1 300); do grep -qx ready "$work/busy.out" 2>/dev/null && break; sleep 0.1; done
"$tool" top --lines "unix:$work/p.sock" >/dev/null 2>&1 &
tpid=$!; pids+=("$tpid")
XDG_RUNTIME_DIR=$work/run "$tool" serve --all --listen 127.0.0.1:0 2>"$work/serve-all.err" &
apid=$!; pids+=("$apid")
sleep 3   # let all three settle into the idle state before measuring
s0=$(cpu_ticks "$spid"); u0=$(cpu_ticks "$tpid"); a0=$(cpu_ticks "$apid")
sleep "$idle_secs"
s1=$(cpu_ticks "$spid"); u1=$(cpu_ticks "$tpid"); a1=$(cpu_ticks "$apid")
serve_cpu=$(pct "$s0" "$s1" "$idle_secs")
top_cpu=$(pct "$u0" "$u1" "$idle_secs")
all_cpu=$(pct "$a0" "$a1" "$idle_secs")
echo stop >&"$hold"
kill "$spid" "$tpid" "$apid" 2>/dev/null || true
wait "$spid" "$tpid" "$apid" 2>/dev/null || true

# --- 3. Keep-up ----------------------------------------------------------------
b0=$(date +%s.%N)
"$work/app" events "$busy_n" 4 +RTS -N2 -l "-ol$work/busy.eventlog" -RTS >/dev/null
b1=$(date +%s.%N)
busy_bytes=$(wc -c <"$work/busy.eventlog")
busy_mbs=$(awk -v b="$busy_bytes" -v a="$b0" -v z="$b1" 'BEGIN { printf "%.1f", b / 1e6 / (z - a) }')
rm -f "$work/busy.eventlog"
keepup_rows=()
for t in top serve serve-all; do
    rm -f "$work/k.sock"
    case $t in
        top) "$tool" top --lines "unix:$work/k.sock" >/dev/null 2>"$work/k.err" & ;;
        serve) "$tool" serve --listen 127.0.0.1:0 "unix:$work/k.sock" 2>"$work/k.err" & ;;
        serve-all) XDG_RUNTIME_DIR=$work/run "$tool" serve --all --listen 127.0.0.1:0 2>"$work/k.err" & ;;
    esac
    kpid=$!; pids+=("$kpid")
    sleep 1
    p0=$(date +%s.%N)
    XDG_RUNTIME_DIR=$work/run "$work/app" events "$busy_n" 4 +RTS -N2 \
        "--eventlog-sink=unix:$work/k.sock?wait=30&policy=drop" -RTS >/dev/null 2>"$work/k.prog.err"
    p1=$(date +%s.%N)
    sleep 3   # the tool reads what is still queued for it
    k1=$(cpu_ticks "$kpid")
    kill "$kpid" 2>/dev/null || true
    wait "$kpid" 2>/dev/null || true
    drops=$(grep -o 'dropped [0-9]* of [0-9]* units' "$work/k.prog.err" || echo "none")
    cpu_s=$(awk -v k="$k1" -v hz="$hz" 'BEGIN { printf "%.2f", k / hz }')
    rate=$(awk -v b="$busy_bytes" -v c="$cpu_s" 'BEGIN { if (c > 0) printf "%.0f", b / 1e6 / c; else print "inf" }')
    head=$(awk -v r="$rate" -v g="$busy_mbs" 'BEGIN { if (r == "inf") print "inf"; else printf "%.1f", r / g }')
    wall=$(awk -v a="$p0" -v z="$p1" 'BEGIN { printf "%.2f", z - a }')
    keepup_rows+=("| $t following it live (program ${wall} s; drops: $drops) | ${cpu_s} CPU s: ${rate} MB/s, ${head}x the program's rate |")
done

echo "| figure | value |"
echo "|---|---|"
echo "| load average at the start | $load0 |"
echo "| event-heavy -N2 program ($load_n x 2 user events): eventlog rate | $prog_mbs MB/s ($bytes bytes in $(awk -v a="$t0" -v z="$t1" 'BEGIN { printf "%.2f", z - a }') s) |"
echo "| monitor model parse rate (median of 5, 64 KiB pieces) | $parse_mbs MB/s |"
echo "| headroom | ${headroom}x |"
echo "| serve CPU, idle program, 1 s refresh, ${idle_secs} s | ${serve_cpu}% of a core |"
echo "| top CPU (--lines), idle program, 1 s refresh, ${idle_secs} s | ${top_cpu}% of a core |"
echo "| serve --all CPU, the same idle program announced, 1 s refresh, ${idle_secs} s | ${all_cpu}% of a core |"
echo "| busiest program (app events $busy_n 4, -N2, -l): eventlog rate | $busy_mbs MB/s ($busy_bytes bytes) |"
for r in "${keepup_rows[@]}"; do echo "$r"; done
echo "| load average at the end | $(cut -d' ' -f1-3 /proc/loadavg) |"
