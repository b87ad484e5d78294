#!/usr/bin/env bash
# bench_monitor.sh: the live monitor's two figures (docs: README, "Live
# monitor").
#
# 1. Headroom: an event-heavy -N2 program (bench/MonitorLoad.hs, built
#    with the patched RTS) writes its eventlog with +RTS -l; its eventlog
#    bytes per second (file size over the run's wall time) against the
#    model's parse rate on that file (bench_monitor.c, median of 5).
# 2. CPU of `top` and `serve` at the default 1 s refresh on an idle
#    program (tests/ghc/Busy.hs after its work, on a unix: sink flushed
#    every second), from /proc/PID/stat over BENCH_IDLE_SECS (30).
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
build_hs "$top/tests/ghc/Busy.hs" busy
cc -O2 -std=gnu11 -I"$top/include" -I"$top/tools" "$top/bench/bench_monitor.c" \
    "$top/tools/monitor/model.c" "$top/tools/monitor/model_time.c" \
    "$top/tools/monitor/model_tables.c" "$top/tools/monitor/render.c" "$top/tools/monitor/strbuf.c" \
    "$top/tools/safetext.c" \
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
mkfifo "$work/in"
"$work/busy" 1 +RTS -N2 -I0 "--eventlog-sink=unix:$work/p.sock?wait=30" \
    --eventlog-flush-interval=1 -RTS <"$work/in" >"$work/busy.out" 2>&1 &
pids+=($!)
exec {hold}>"$work/in"
"$tool" serve --listen 127.0.0.1:0 "unix:$work/p.sock" 2>"$work/serve.err" &
spid=$!; pids+=("$spid")
for _ in $(seq 1 300); do grep -qx ready "$work/busy.out" 2>/dev/null && break; sleep 0.1; done
"$tool" top --lines "unix:$work/p.sock" >/dev/null 2>&1 &
tpid=$!; pids+=("$tpid")
sleep 2   # let both settle into the idle state before measuring
s0=$(cpu_ticks "$spid"); u0=$(cpu_ticks "$tpid")
sleep "$idle_secs"
s1=$(cpu_ticks "$spid"); u1=$(cpu_ticks "$tpid")
hz=$(getconf CLK_TCK)
serve_cpu=$(awk -v a="$s0" -v b="$s1" -v hz="$hz" -v s="$idle_secs" 'BEGIN { printf "%.2f", 100 * (b - a) / hz / s }')
top_cpu=$(awk -v a="$u0" -v b="$u1" -v hz="$hz" -v s="$idle_secs" 'BEGIN { printf "%.2f", 100 * (b - a) / hz / s }')
echo stop >&"$hold"

echo "| figure | value |"
echo "|---|---|"
echo "| event-heavy -N2 program ($load_n x 2 user events): eventlog rate | $prog_mbs MB/s ($bytes bytes in $(awk -v a="$t0" -v z="$t1" 'BEGIN { printf "%.2f", z - a }') s) |"
echo "| monitor model parse rate (median of 5, 64 KiB pieces) | $parse_mbs MB/s |"
echo "| headroom | ${headroom}x |"
echo "| serve CPU, idle program, 1 s refresh, ${idle_secs} s | ${serve_cpu}% of a core |"
echo "| top CPU (--lines), idle program, 1 s refresh, ${idle_secs} s | ${top_cpu}% of a core |"
