#!/usr/bin/env bash
# bench_serve_all.sh: memory and CPU of one `eventlog-sink serve --all`
# following N idle programs (the README's fleet; docs/BENCHMARKS.md).
#
# Usage: bench/bench_serve_all.sh TOOL BUSY [N] [SECS]
#   TOOL  the eventlog-sink binary (_build/tools/eventlog-sink)
#   BUSY  tests/programs/Busy.hs built on the patched RTS (make check builds
#         it: _build/tests/ghc/out/busy)
# Starts serve --all in a discovery directory of its own, then N copies
# of BUSY (1 phase, -N1, no idle GC, unix: sinks), waits until serve
# follows all N and they are idle, then over SECS seconds (default 10)
# GETs /metrics once a second (a scraper) and reports serve's CPU
# seconds per second (utime + stime from /proc) and its RSS and peak
# RSS.  Prints one line "serve --all N programs: ...".
set -u -o pipefail
TOOL=$(realpath "$1") BUSY=$(realpath "$2") N=${3:-50} SECS=${4:-10}
T=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
export XDG_RUNTIME_DIR=$T/run
mkdir -m 700 "$XDG_RUNTIME_DIR"
"$TOOL" serve --all --listen 127.0.0.1:0 2>"$T/serve.err" &
spid=$!
pids+=("$spid")
for _ in $(seq 100); do grep -q "serving http" "$T/serve.err" && break; sleep 0.1; done
PORT=$(sed -n 's|.*serving http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$T/serve.err")
[ -n "$PORT" ] || { cat "$T/serve.err"; exit 1; }
# serve's token, sent as a scraper does.
AUTH="Authorization: Bearer $(sed -n 's|.*serving http://[^ ]*?token=\([^ ]*\).*|\1|p' "$T/serve.err")"
for i in $(seq "$N"); do
    ln -s "$BUSY" "$T/prog$i"
    mkfifo "$T/in$i"
    "$T/prog$i" 1 +RTS -N1 -I0 "--eventlog-sink=unix:$T/s$i.sock?wait=60" \
        --eventlog-flush-interval=0.5 -RTS <"$T/in$i" >"$T/out$i" 2>"$T/err$i" &
    pids+=("$!")
    # Keep the program's stdin open (it waits for a line or EOF).
    sleep 1000000 >"$T/in$i" &
    pids+=("$!")
done
for _ in $(seq 600); do
    [ "$(grep -lx ready "$T"/out* 2>/dev/null | wc -l)" -eq "$N" ] && break
    sleep 0.2
done
followed() {
    curl -sf -H "$AUTH" "http://127.0.0.1:$PORT/api/programs" | grep -o '"pid":' | wc -l
}
for _ in $(seq 300); do [ "$(followed)" -eq "$N" ] && break; sleep 0.2; done
[ "$(followed)" -eq "$N" ] || { echo "serve follows $(followed) of $N"; cat "$T/err1" "$T/serve.err"; exit 1; }
sleep 2
ticks() { awk '{print $14 + $15}' "/proc/$spid/stat"; }
hz=$(getconf CLK_TCK)
t0=$(ticks) s0=$(date +%s.%N)
for _ in $(seq "$SECS"); do
    curl -sf -H "$AUTH" "http://127.0.0.1:$PORT/metrics" -o "$T/metrics" || exit 1
    sleep 1
done
t1=$(ticks) s1=$(date +%s.%N)
rss=$(awk '/^VmRSS/ {print $2}' "/proc/$spid/status")
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$spid/status")
series=$(grep -c '^eventlog_received_bytes_total{' "$T/metrics")
awk -v n="$N" -v t="$((t1 - t0))" -v hz="$hz" -v s0="$s0" -v s1="$s1" \
    -v rss="$rss" -v hwm="$hwm" -v series="$series" -v bytes="$(wc -c <"$T/metrics")" 'BEGIN {
    printf "serve --all %d programs: CPU %.4f s/s, RSS %.1f MiB (peak %.1f MiB), /metrics %d programs, %d bytes\n",
        n, t / hz / (s1 - s0), rss / 1024, hwm / 1024, series, bytes }'
