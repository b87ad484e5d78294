#!/usr/bin/env bash
# bench_otlp.sh: what OpenTelemetry export costs `eventlog-sink serve --all`
# (docs/BENCHMARKS.md, docs/OTLP.md).
#
# Usage: bench/bench_otlp.sh TOOL BUSY APP [N] [SECS]
#   TOOL  the eventlog-sink binary (_build/tools/eventlog-sink)
#   BUSY  tests/programs/Busy.hs on the patched RTS (_build/tests/ghc/out/busy)
#   APP   bench/App.hs on the patched RTS (bench_monitor.sh builds it), or
#         "-" to leave out part 2
# 1. Side by side in one run: two serve --all, each in a discovery
#    directory of its own with N copies of BUSY (1 phase, -N1, then idle,
#    as bench_serve_all.sh), one without export and one exporting all
#    three signals (--otlp-interval 10000, --otlp-gc-spans) to a receiver
#    on loopback (tests/otlp/receiver.py); over SECS seconds (default 60)
#    each one's CPU seconds per second (utime + stime from /proc), RSS and
#    peak RSS, and the export's counters from /metrics.
# 2. One program at the busiest rate the monitors follow (App.hs `events
#    8000000 4`, -N2, bench_monitor.sh's keep-up row) under serve --all
#    exporting at the default limits (--otlp-interval 1000 so that several
#    exports happen during the run): the batches dropped (want 0), the
#    logs and spans the rate limit left out, and whether serve kept up
#    (its received bytes equal the program's stream).
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
TOOL=$(realpath "$1") BUSY=$(realpath "$2") APP=$3 N=${4:-50} SECS=${5:-60}
T=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT

mkdir "$T/recv"
/usr/bin/python3 "$here/../tests/otlp/receiver.py" "$T/recv" ok &
pids+=("$!")
for _ in $(seq 100); do [ -f "$T/recv/port" ] && break; sleep 0.1; done
RPORT=$(cat "$T/recv/port")

# serve_in DIR NAME OPTIONS...: serve --all on discovery directory DIR;
# sets PORT_NAME, AUTH_NAME, PID_NAME.
serve_in() {
    local dir=$1 name=$2
    shift 2
    mkdir -m 700 "$dir"
    XDG_RUNTIME_DIR=$dir "$TOOL" serve --all --listen 127.0.0.1:0 "$@" 2>"$T/$name.err" &
    local sp=$!
    pids+=("$sp")
    for _ in $(seq 100); do grep -q "serving http" "$T/$name.err" && break; sleep 0.1; done
    eval "PID_$name=$sp"
    eval "PORT_$name=$(sed -n 's|.*serving http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$T/$name.err")"
    eval "AUTH_$name=\"Authorization: Bearer $(sed -n 's|.*serving http://[^ ]*?token=\([^ ]*\).*|\1|p' "$T/$name.err")\""
}
# programs DIR N: N idle copies of BUSY announced in DIR.
programs() {
    local dir=$1 n=$2 i
    for i in $(seq "$n"); do
        ln -sf "$BUSY" "$dir.prog$i"
        mkfifo "$dir.in$i"
        XDG_RUNTIME_DIR=$dir "$dir.prog$i" 1 +RTS -N1 -I0 \
            "--eventlog-sink=unix:$dir.s$i.sock?wait=60" --eventlog-flush-interval=0.5 -RTS \
            <"$dir.in$i" >"$dir.out$i" 2>"$dir.err$i" &
        pids+=("$!")
        sleep 1000000 >"$dir.in$i" &
        pids+=("$!")
    done
}
followed() {    # followed PORT AUTH
    curl -sf -H "$2" "http://127.0.0.1:$1/api/programs" | grep -o '"pid":' | wc -l
}
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
metric() {      # metric FILE NAME: the sum of NAME's samples
    awk -v n="$2" '{ k = $1; sub(/\{.*/, "", k) } k == n { s += $NF } END { printf "%d\n", s }' "$1"
}

# ---- 1. side by side ----
serve_in "$T/plain" plain
serve_in "$T/otlp" otlp --otlp-endpoint "http://127.0.0.1:$RPORT" --otlp-interval 10000 \
    --otlp-gc-spans
programs "$T/plain" "$N"
programs "$T/otlp" "$N"
for _ in $(seq 600); do
    [ "$(followed "$PORT_plain" "$AUTH_plain")" -eq "$N" ] &&
        [ "$(followed "$PORT_otlp" "$AUTH_otlp")" -eq "$N" ] && break
    sleep 0.2
done
for _ in $(seq 600); do
    [ "$(cat "$T"/plain.out* "$T"/otlp.out* 2>/dev/null | grep -cx ready)" -eq $((2 * N)) ] && break
    sleep 0.2
done
sleep 2
hz=$(getconf CLK_TCK)
a0=$(ticks "$PID_plain") b0=$(ticks "$PID_otlp") s0=$(date +%s.%N)
for _ in $(seq "$SECS"); do
    curl -sf -H "$AUTH_plain" "http://127.0.0.1:$PORT_plain/metrics" -o "$T/plain.metrics"
    curl -sf -H "$AUTH_otlp" "http://127.0.0.1:$PORT_otlp/metrics" -o "$T/otlp.metrics"
    sleep 1
done
a1=$(ticks "$PID_plain") b1=$(ticks "$PID_otlp") s1=$(date +%s.%N)
for w in plain otlp; do
    p=$(eval echo "\$PID_$w")
    eval "rss_$w=$(awk '/^VmRSS/ {print $2}' "/proc/$p/status")"
    eval "hwm_$w=$(awk '/^VmHWM/ {print $2}' "/proc/$p/status")"
done
M=$T/otlp.metrics
awk -v n="$N" -v a="$((a1 - a0))" -v b="$((b1 - b0))" -v hz="$hz" -v s0="$s0" -v s1="$s1" \
    -v ra="$rss_plain" -v rb="$rss_otlp" -v ha="$hwm_plain" -v hb="$hwm_otlp" \
    -v sent="$(metric "$M" eventlog_sink_otlp_sent_batches_total)" \
    -v items="$(metric "$M" eventlog_sink_otlp_sent_items_total)" \
    -v drop="$(metric "$M" eventlog_sink_otlp_dropped_batches_total)" \
    -v peak="$(metric "$M" eventlog_sink_otlp_queue_peak_bytes)" \
    -v bound="$(metric "$M" eventlog_sink_otlp_queue_bound_bytes)" 'BEGIN {
    d = s1 - s0
    printf "serve --all, %d idle programs each, %.0f s side by side: without export CPU %.4f s/s, RSS %.1f MiB (peak %.1f); ", n, d, a / hz / d, ra / 1024, ha / 1024
    printf "exporting (3 signals, 10 s) CPU %.4f s/s, RSS %.1f MiB (peak %.1f); ", b / hz / d, rb / 1024, hb / 1024
    printf "difference %+.4f of a core, RSS %+.1f MiB; export: %d batches (%d items) sent, %d dropped, queue peak %d of %d bytes\n", (b - a) / hz / d, (rb - ra) / 1024, sent, items, drop, peak, bound }'

[ "$APP" = - ] && exit 0
# ---- 2. the busiest program, default limits ----
APP=$(realpath "$APP")
serve_in "$T/busy" busy --otlp-endpoint "http://127.0.0.1:$RPORT" --otlp-interval 1000
mkdir -p "$T/busysave"
XDG_RUNTIME_DIR=$T/busy "$APP" events 8000000 4 +RTS -N2 \
    "--eventlog-sink=unix:$T/busy.sock?wait=60&policy=drop" -RTS >"$T/app.out" 2>"$T/app.err" &
app=$!
pids+=("$app")
b0=$(ticks "$PID_busy") s0=$(date +%s.%N)
wait "$app"
s1=$(date +%s.%N)
# Until serve has read everything and the exporter has answered all.
for _ in $(seq 600); do
    curl -sf -H "$AUTH_busy" "http://127.0.0.1:$PORT_busy/metrics" -o "$T/busy.metrics"
    [ "$(metric "$T/busy.metrics" eventlog_sink_otlp_queue_bytes)" -eq 0 ] &&
        curl -sf -H "$AUTH_busy" "http://127.0.0.1:$PORT_busy/api/programs" | grep -q '"ended":true' && break
    sleep 0.5
done
b1=$(ticks "$PID_busy")
curl -sf -H "$AUTH_busy" "http://127.0.0.1:$PORT_busy/metrics" -o "$T/busy.metrics"
M=$T/busy.metrics
echo "busiest program (App events 8000000 4, -N2) under serve --all exporting at the default limits:" \
    "$(awk -v a="$s0" -v b="$s1" 'BEGIN { printf "%.1f s", b - a }') run," \
    "serve CPU $(awk -v t="$((b1 - b0))" -v hz="$hz" 'BEGIN { printf "%.2f s", t / hz }')," \
    "batches sent $(metric "$M" eventlog_sink_otlp_sent_batches_total)," \
    "dropped $(metric "$M" eventlog_sink_otlp_dropped_batches_total)," \
    "logs+spans left out by the rate limit $(metric "$M" eventlog_sink_otlp_left_out_total)," \
    "queue peak $(metric "$M" eventlog_sink_otlp_queue_peak_bytes) bytes," \
    "sink drops in the stream: $(grep -c 'dropped' "$T/app.err" || true) lines on stderr"
