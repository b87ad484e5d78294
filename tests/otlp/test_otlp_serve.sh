#!/usr/bin/env bash
# test_otlp_serve.sh: `serve --all --otlp-*` exports every followed
# program's metrics, logs and spans to a collector (here a receiver on
# loopback, tests/otlp/receiver.py), checked with the official schema
# (check_otlp.py: protoc --decode with no unknown field, json_format.Parse)
# and against independent readers.
#  1. http/protobuf: tests/programs/Spans.hs (-N2) and Figures.hs (-N2
#     -hT; and built -prof at -N2 -hc when GHC's profiling libraries are
#     there) on unix: sinks, with +RTS -s, under one serve --all (its
#     --save-dir copy of each stream read by ghc-events show).  Every
#     body decodes strictly; each program's last metrics request (sent
#     when serve saw it end) equals its /p/PID/metrics scraped after the
#     end, point for point (serve_export.py last-metrics); its
#     collections and bytes allocated equal +RTS -s's; its heap bands
#     equal the last census ghc-events shows; Spans' messages and
#     markers are logs with their text and time, its marker and
#     START/STOP pairs spans with their times, and (--otlp-gc-spans) each
#     capability's GC_START..GC_END a span "GC"; the resource names the
#     program (service.name, process.pid, process.executable.name,
#     host.name).  The exporter's counters in /metrics: every batch sent,
#     nothing dropped.
#  1b. `serve FILE --otlp-*` on 1's saved stream of Spans: the same logs,
#     spans and collections as the live export (and ghc-events, +RTS -s).
#  2. http/json with OTEL_* variables (endpoint, protocol,
#     OTEL_TRACES_EXPORTER=none, OTEL_RESOURCE_ATTRIBUTES): bodies parse
#     strictly, no trace request is made, the attribute is on the
#     resource.
#  3. a receiver answering each body 503 with Retry-After then 200: every
#     batch taken exactly once, the retries counted in /metrics.
#  4. a receiver that never answers: the queue stays within its bound
#     (--otlp-queue-bytes) and the drops are counted in /metrics and the
#     state JSON.
#  5. a non-loopback endpoint without --otlp-insecure: refused with one
#     line, exit 2.
#  6. examples/otlp: the Grafana dashboard parses and names only series
#     the exporter sent in 1 (as the collector's prometheusremotewrite
#     exporter names them: dots to underscores, no suffixes added).
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"
. "$(dirname "$0")/../ghcprog.sh"
. "$(dirname "$0")/../monitor/monitor.sh"

PROTOS=$ELS_TOP_SRCDIR/tests/node/node_modules/@opentelemetry/otlp-grpc-exporter-base/build/protos
[ -f "$PROTOS/opentelemetry/proto/collector/logs/v1/logs_service.proto" ] ||
    skip "the OTLP .proto files (scripts/install-node-deps.sh)"
command -v protoc >/dev/null 2>&1 || skip "protoc (Debian protobuf-compiler)"
/usr/bin/python3 -c 'import google.protobuf' 2>/dev/null || skip "python3-protobuf"
command -v curl >/dev/null 2>&1 || skip "curl not installed"
setup_ghc_program_test spans Spans
SPANS=$GHC_PROGRAM
build_ghc_program figures Figures patched_ghc_lib -threaded -eventlog -rtsopts -O
FIGURES=$GHC_PROGRAM
FIGURES_PROF=
if [ -f "$("$GHC" --print-libdir)/rts/libHSrts_thr_p.a" ]; then
    build_ghc_program figures-prof Figures patched_ghc_lib -threaded -eventlog -rtsopts \
        -O -prof -fprof-auto
    FIGURES_PROF=$GHC_PROGRAM
else
    note "no profiling libraries (ghc-prof): the -hc run is left out"
fi
deadline_set 600
export XDG_RUNTIME_DIR=$T/run
mkdir -m 700 "$XDG_RUNTIME_DIR" || fail "mkdir $XDG_RUNTIME_DIR"
CHECK="/usr/bin/python3 $ELS_TOP_SRCDIR/tests/otlp/check_otlp.py $PROTOS $T"
EXPORT="/usr/bin/python3 $ELS_TOP_SRCDIR/tests/otlp/serve_export.py $T"

# receiver DIR MODE: start receiver.py; sets RPORT, RECV_PID.
receiver() {
    mkdir -p "$1"
    /usr/bin/python3 "$ELS_TOP_SRCDIR/tests/otlp/receiver.py" "$1" "$2" &
    RECV_PID=$!
    bg_register $!
    wait_for_file "$1/port" 30 || fail "receiver $2 did not start"
    RPORT=$(cat "$1/port")
}
# bodies DIR: the request bodies the receiver saved in DIR.
bodies() { ls "$1"/0*.metrics "$1"/0*.logs "$1"/0*.traces 2>/dev/null; }
# metric NAME: the sum of NAME's samples in $T/now.metrics (a fresh /metrics).
metric() {
    awk -v n="$1" '{ k = $1; sub(/\{.*/, "", k) } k == n { s += $NF } END { printf "%d\n", s }' \
        "$T/now.metrics"
}
scrape() { scurl -sf --max-time 10 "http://127.0.0.1:$PORT/metrics" -o "$T/now.metrics"; }
# exporter_idle: every queued batch was answered (sent or dropped).
exporter_idle() {
    scrape || return 1
    [ "$(metric eventlog_sink_otlp_queue_bytes)" -eq 0 ] &&
        [ "$(metric eventlog_sink_otlp_queued_batches)" -eq 0 ] &&
        [ "$(metric eventlog_sink_otlp_enqueued_batches_total)" -eq \
          $(( $(metric eventlog_sink_otlp_sent_batches_total) + $(metric eventlog_sink_otlp_dropped_batches_total) )) ]
}
# ended PID: serve --all lists PID as ended.
ended() {
    scurl -sf --max-time 10 "http://127.0.0.1:$PORT/api/programs" -o "$T/programs.json" &&
        /usr/bin/python3 -c '
import json, sys
sys.exit(0 if any(p["pid"] == int(sys.argv[2]) and p["ended"]
                  for p in json.load(open(sys.argv[1]))["programs"]) else 1)' "$T/programs.json" "$1"
}
# run NAME PROGRAM RTS-OPTIONS...: NAME (a copy of PROGRAM, so that its
# announced name is NAME) on a unix: sink waiting for serve, with +RTS
# -s into $T/NAME.stats, in the background; sets pid_NAME.
run() {
    local n=$1 prog=$2
    shift 2
    cp "$prog" "$T/$n" || fail "cannot copy $prog"
    "$T/$n" +RTS "$@" "--eventlog-sink=unix:$T/$n.sock?wait=60" "-s$T/$n.stats" -RTS \
        </dev/null >"$T/$n.out" 2>"$T/$n.err" &
    eval "pid_$n=\$!"
    bg_register "$!"
}
# finish NAMES...: each program exits 0 and serve lists it as ended.
finish() {
    local n pid
    for n in "$@"; do
        pid=$(eval echo "\$pid_$n")
        wait "$pid" || fail_showing "$T/$n.err" "$n failed"
        wait_until 60 ended "$pid" || fail "$n ($pid): serve never listed it as ended: $(cat "$T/programs.json")"
    done
}

# ---- 1. http/protobuf, three programs ----
R=$T/r1
receiver "$R" ok
mkdir "$T/saved"
start_serve_all --save-dir "$T/saved" --otlp-endpoint "http://127.0.0.1:$RPORT" \
    --otlp-interval 500 --otlp-max-rate 0 --otlp-gc-spans
grep -q "exporting OTLP (metrics, logs, traces, http/protobuf) to http://127.0.0.1:$RPORT/v1/metrics" \
    "$T/serve.err" || fail_showing "$T/serve.err" "serve did not say where it exports"
NAMES="spans figs"
run spans "$SPANS" -N2
run figs "$FIGURES" -N2 -hT -i0.05
if [ -n "$FIGURES_PROF" ]; then
    run figsprof "$FIGURES_PROF" -N2 -hc -i0.05
    NAMES="$NAMES figsprof"
fi
# shellcheck disable=SC2086
finish $NAMES
wait_until 60 exporter_idle || fail_showing "$T/now.metrics" "the exporter did not deliver everything"
for s in metrics logs traces; do
    grep -q "^eventlog_sink_otlp_sent_batches_total{signal=\"$s\"} [1-9]" "$T/now.metrics" ||
        fail_showing "$T/now.metrics" "no $s batch sent"
done
[ "$(metric eventlog_sink_otlp_dropped_batches_total)" -eq 0 ] &&
    [ "$(metric eventlog_sink_otlp_retries_total)" -eq 0 ] &&
    [ "$(metric eventlog_sink_otlp_left_out_total)" -eq 0 ] ||
    fail_showing "$T/now.metrics" "drops, retries or records left out against a receiver that takes all"
[ "$(metric eventlog_sink_otlp_enqueued_batches_total)" -eq "$(ls "$R"/0*.meta | wc -l)" ] ||
    fail "the receiver took $(ls "$R"/0*.meta | wc -l) requests, the exporter counts $(metric eventlog_sink_otlp_enqueued_batches_total)"
$CHECK $(bodies "$R") >"$T/r1.decoded" || fail "a body failed the schema check"
note "1: $(ls "$R"/0*.meta | wc -l) requests, each decoded strictly by protoc"

for n in $NAMES; do
    pid=$(eval echo "\$pid_$n")
    scurl -sf --max-time 10 "http://127.0.0.1:$PORT/p/$pid/metrics" -o "$T/$n.prom" ||
        fail "GET /p/$pid/metrics failed"
    $EXPORT "$R" last-metrics "$pid" "$T/$n.prom" "$ELS_TOP_SRCDIR/tools/otlp/metrics.c" \
        >"$T/$n.names" 2>"$T/$n.cmp" || fail_showing "$T/$n.cmp" "$n: the last export differs from /p/$pid/metrics"
    note "$n: $(cat "$T/$n.cmp")"
    $EXPORT "$R" summary "$pid" >"$T/$n.summary" || fail "$n: cannot read the export back"
    saved=$(ls "$T/saved/$n.$pid".*.eventlog | head -1)
    show_events "$saved" "$T/$n.show" || fail "$n: ghc-events cannot read serve's copy"
    grep -qx "resource service.name $n" "$T/$n.summary" &&
        grep -qx "resource process.pid $pid" "$T/$n.summary" &&
        grep -qx "resource process.executable.name $n" "$T/$n.summary" &&
        grep -qx "resource host.name $(hostname)" "$T/$n.summary" ||
        fail_showing "$T/$n.summary" "$n: the resource does not name the program"
    # +RTS -s: collections and bytes allocated.
    colls=$(awk '/^ *Gen +[0-9]+ +[0-9]+ colls,/ { s += $3 } END { print s + 0 }' "$T/$n.stats")
    alloc=$(awk '/bytes allocated in the heap/ { gsub(",", "", $1); print $1 }' "$T/$n.stats")
    got_colls=$(awk '$1 == "metric" && $2 == "process.runtime.ghc.gc.count" { s += $4 } END { print s + 0 }' "$T/$n.summary")
    got_alloc=$(awk '$1 == "metric" && $2 == "process.runtime.ghc.allocated_bytes" { print $4 }' "$T/$n.summary")
    [ "$colls" -gt 0 ] && [ "$got_colls" = "$colls" ] ||
        fail "$n: exported $got_colls collections, +RTS -s says $colls"
    [ "$got_alloc" = "$alloc" ] || fail "$n: exported $got_alloc bytes allocated, +RTS -s says $alloc"
    note "$n: $got_colls collections and $got_alloc bytes allocated, as +RTS -s"
done

# Heap bands: the last census ghc-events shows.  The exporter keeps the
# largest 20 (MON_SERIES_BANDS): each one it sent holds the census's
# value for that label, and no band it left out is larger than one sent.
for n in $NAMES; do
    [ "$n" = spans ] && continue
    awk '$1 == "metric" && $2 == "process.runtime.ghc.heap_profile.bytes" {
            b = $0; sub(/^metric [^ ]* band=/, "", b); sub(/ [0-9]+$/, "", b); print $NF "\t" b }' \
        "$T/$n.summary" >"$T/$n.bands.got"
    /usr/bin/python3 - "$T/$n.show" "$T/$n.bands.got" <<'PY' >"$T/$n.bands" 2>&1 ||
import re, sys
census = None
for line in open(sys.argv[1], errors="replace"):
    if re.search(r": start heap prof sample \d+$", line):
        census = {}
    m = re.search(r": heap prof sample \d+, residency (\d+), (label|cost centre stack) (.*)$", line)
    if m and census is not None:
        stacks = m.group(2) != "label"
        census[m.group(3)] = census.get(m.group(3), 0) + int(m.group(1))
if not census:
    sys.exit("ghc-events shows no heap census")
got = {}
for line in open(sys.argv[2]):
    v, label = line.rstrip("\n").split("\t", 1)
    got[label] = int(v)
want_n = min(20, len(census))
if len(got) != want_n:
    sys.exit("%d bands exported, the census has %d (want %d)" % (len(got), len(census), want_n))
if stacks:
    # -hc: ghc-events shows stacks as ids, the exporter their names: the
    # values of the largest bands must agree.
    want = sorted(census.values(), reverse=True)[:want_n]
    if sorted(got.values(), reverse=True) != want:
        sys.exit("band values %s, the census's largest %s" % (sorted(got.values(), reverse=True), want))
    print("%d of the census's %d cost-centre stacks, the largest, at its values" % (len(got), len(census)))
    sys.exit(0)
for label, v in got.items():
    if census.get(label) != v:
        sys.exit("band %r: exported %d, the census says %r" % (label, v, census.get(label)))
smallest = min(got.values())
left = [l for l, v in census.items() if l not in got and v > smallest]
if left:
    sys.exit("bands larger than one exported were left out: %s" % left[:5])
print("%d of the census's %d bands, the largest, at its values" % (len(got), len(census)))
PY
        fail_showing "$T/$n.bands" "$n: exported heap bands differ from the last census ghc-events shows"
    note "$n: $(cat "$T/$n.bands")"
done

# Spans' logs and spans against ghc-events show.
S=$T/spans.show
set -- $(sed -n 's/^ *\([0-9]*\): capset [0-9]*: wall clock time \([0-9]*\)s \([0-9]*\)ns.*/\1 \2 \3/p' "$S" | head -1)
[ $# -eq 3 ] || fail "no wall clock event in ghc-events show's output"
anchor=$(( $2 * 1000000000 + $3 - $1 ))
plus_anchor() {
    local n=$1 line i out
    while read -r line; do
        set -- $line
        out=
        for ((i = 1; i <= n; i++)); do out="$out $(( $1 + anchor ))"; shift; done
        echo "${out# } $*"
    done
}
awk '{ t = $1; sub(":", "", t) }
    / cap [0-9]+: marker: / { sub(/^.*: marker: /, ""); print t " marker " $0; next }
    / cap [0-9]+: (hello from Spans|bye from Spans|START phase|STOP phase)$/ {
        sub(/^[^:]*: cap [0-9]+: /, ""); print t " message " $0 }' "$S" |
    plus_anchor 1 | sort >"$T/logs.want"
awk '$1 == "log" && ($2 == "message" || $2 == "marker") { print $3, $2, substr($0, index($0, $4)) }' \
    "$T/spans.summary" | sort >"$T/logs.got"
[ "$(wc -l <"$T/logs.want")" -ge 24 ] || fail "ghc-events shows too few user events"
diff "$T/logs.want" "$T/logs.got" >&2 || fail "Spans: logs differ from ghc-events show"
awk '{ t = $1; sub(":", "", t) }
    / marker: req start$/ { rs[++nr] = t }
    / marker: req end$/ && nr > 0 { print rs[nr], t, "req marker"; nr-- }
    / cap [0-9]+: START phase$/ { ps[++np] = t }
    / cap [0-9]+: STOP phase$/ && np > 0 { print ps[np], t, "phase user_event"; np-- }
    / cap [0-9]+: starting GC$/ { c = $0; sub(/.*cap /, "", c); sub(/:.*/, "", c); g[c] = t }
    / cap [0-9]+: finished GC$/ { c = $0; sub(/.*cap /, "", c); sub(/:.*/, "", c)
                                   if (c in g) { print g[c], t, "GC gc"; delete g[c] } }' "$S" |
    plus_anchor 2 | awk '{ print $3, $1, $2, $4 }' | sort >"$T/spans.want"
awk '$1 == "span" { $1 = ""; sub(/^ /, ""); print }' "$T/spans.summary" | sort >"$T/spans.got"
[ "$(grep -c ' gc$' "$T/spans.want")" -gt 0 ] || fail "ghc-events shows no GC in Spans"
diff "$T/spans.want" "$T/spans.got" >&2 || fail "Spans: spans differ from the pairs ghc-events shows"
note "spans: $(wc -l <"$T/logs.got") logs and $(wc -l <"$T/spans.got") spans ($(grep -c ' gc$' "$T/spans.got") GC pauses) at ghc-events' times"
names1=$(cat "$T"/*.names | sort -u)
kill -TERM "$spid"
wait_pid "$spid" 30 || fail "serve did not exit on SIGTERM"
kill "$RECV_PID"

# ---- 1b. serve FILE: the same run's saved stream exports the same ----
R=$T/r1b
receiver "$R" ok
spans_pid=$pid_spans
saved=$(ls "$T/saved/spans.$spans_pid".*.eventlog | head -1)
start_serve file "$saved" --otlp-endpoint "http://127.0.0.1:$RPORT" \
    --otlp-interval 500 --otlp-max-rate 0 --otlp-gc-spans
file_ended() { state file && grep -q '"ended":true' "$T/file.state"; }
wait_until 60 file_ended || fail_showing "$T/file.state" "serve FILE: the saved run never ended"
# A single serve exports every interval (no last request at the end, as
# --all sends for a program that leaves): one made after the end.
scrape || fail "GET /metrics failed"
n0=$(awk '$1 ~ /^eventlog_sink_otlp_enqueued_batches_total\{signal="metrics"\}$/ { print $2 }' "$T/now.metrics")
metrics_after_end() {
    exporter_idle && [ "$(awk '$1 ~ /^eventlog_sink_otlp_sent_batches_total\{signal="metrics"\}$/ { print $2 }' \
        "$T/now.metrics")" -gt "${n0:-0}" ]
}
wait_until 60 metrics_after_end || fail_showing "$T/now.metrics" "serve FILE: no metrics request after the end"
$CHECK $(bodies "$R") >"$T/r1b.decoded" || fail "serve FILE: a body failed the schema check"
$EXPORT "$R" summary "$spans_pid" >"$T/file.summary" || fail "serve FILE: cannot read the export back"
grep -qx "resource service.name spans" "$T/file.summary" ||
    fail_showing "$T/file.summary" "serve FILE: the resource does not name the program"
awk '$1 == "log" && ($2 == "message" || $2 == "marker") { print $3, $2, substr($0, index($0, $4)) }' \
    "$T/file.summary" | sort >"$T/file.logs"
diff "$T/logs.want" "$T/file.logs" >&2 || fail "serve FILE: logs differ from ghc-events show"
awk '$1 == "span" { $1 = ""; sub(/^ /, ""); print }' "$T/file.summary" | sort >"$T/file.spans"
diff "$T/spans.want" "$T/file.spans" >&2 || fail "serve FILE: spans differ from the pairs ghc-events shows"
colls=$(awk '/^ *Gen +[0-9]+ +[0-9]+ colls,/ { s += $3 } END { print s + 0 }' "$T/spans.stats")
got_colls=$(awk '$1 == "metric" && $2 == "process.runtime.ghc.gc.count" { s += $4 } END { print s + 0 }' "$T/file.summary")
[ "$got_colls" = "$colls" ] || fail "serve FILE: exported $got_colls collections, +RTS -s says $colls"
note "1b: serve FILE of the saved stream: $(wc -l <"$T/file.logs") logs, $(wc -l <"$T/file.spans") spans and $got_colls collections, as live"
kill -TERM "$spid"
wait_pid "$spid" 30 || fail "serve FILE did not exit on SIGTERM"
kill "$RECV_PID"

# ---- 2. http/json, from the variables ----
R=$T/r2
receiver "$R" ok
OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:$RPORT OTEL_EXPORTER_OTLP_PROTOCOL=http/json \
OTEL_TRACES_EXPORTER=none OTEL_RESOURCE_ATTRIBUTES=deployment.environment=otlp-test \
OTEL_METRIC_EXPORT_INTERVAL=300 start_serve_all
run spans "$SPANS" -N2
finish spans
wait_until 60 exporter_idle || fail_showing "$T/now.metrics" "json: the exporter did not deliver everything"
ls "$R"/0*.metrics >/dev/null 2>&1 && ls "$R"/0*.logs >/dev/null 2>&1 || fail "json: no metrics or no logs request"
! ls "$R"/0*.traces >/dev/null 2>&1 || fail "json: OTEL_TRACES_EXPORTER=none, yet traces were sent"
grep -q 'content-type=application/json' "$R"/0001.*.meta || fail "json: not application/json"
$CHECK $(bodies "$R") >"$T/r2.decoded" || fail "json: a body failed json_format.Parse"
grep -q '^resource deployment.environment otlp-test$' "$T/r2.decoded" || fail "json: OTEL_RESOURCE_ATTRIBUTES not on the resource"
note "2: $(ls "$R"/0*.meta | wc -l) http/json requests parse strictly; no traces (OTEL_TRACES_EXPORTER=none)"
kill -TERM "$spid"; wait_pid "$spid" 30 || fail "serve did not exit"
kill "$RECV_PID"

# ---- 3. 503 with Retry-After, then 200 ----
R=$T/r3
receiver "$R" retry
start_serve_all --otlp-endpoint "http://127.0.0.1:$RPORT" --otlp-interval 1000
run spans "$SPANS" -N2
finish spans
wait_until 120 exporter_idle || fail_showing "$T/now.metrics" "retry: the exporter did not deliver everything"
batches=$(metric eventlog_sink_otlp_enqueued_batches_total)
taken=$(awk '$3 == 200' "$R/log" | wc -l)
distinct=$(awk '$3 == 200 { print $4 }' "$R/log" | sort -u | wc -l)
refused=$(awk '$3 == 503' "$R/log" | wc -l)
[ "$taken" -eq "$batches" ] && [ "$distinct" -eq "$batches" ] ||
    fail "retry: $batches batches, $taken taken ($distinct distinct)"
[ "$refused" -eq "$batches" ] && [ "$(metric eventlog_sink_otlp_retries_total)" -eq "$batches" ] ||
    fail "retry: $refused refused, $(metric eventlog_sink_otlp_retries_total) retries in /metrics, $batches batches"
note "3: $batches batches each refused once (503, Retry-After: 1), then taken once; /metrics counts $refused retries"
kill -TERM "$spid"; wait_pid "$spid" 30 || fail "serve did not exit"
kill "$RECV_PID"

# ---- 4. a receiver that never answers ----
R=$T/r4
receiver "$R" hang
start_serve_all --otlp-endpoint "http://127.0.0.1:$RPORT" --otlp-interval 100 \
    --otlp-queue-bytes 65536 --otlp-timeout 600000
dropped_full() { scrape && grep -q '^eventlog_sink_otlp_dropped_batches_total{signal="metrics",cause="queue_full"} [1-9]' "$T/now.metrics"; }
# How many batches one run makes depends on how fast the machine is:
# programs run one after another until the queue has had to drop (each
# adds its batches; none is taken), then the last one's page is asked.
k=0
until dropped_full; do
    k=$((k + 1))
    [ "$k" -le 20 ] || fail_showing "$T/now.metrics" "hang: no queue_full drop counted after $((k - 1)) runs"
    run "figs$k" "$FIGURES" -N2 -hT -i0.05
    finish "figs$k"
done
pid_figs=$(eval echo "\$pid_figs$k")
scrape || fail "GET /metrics failed"
peak=$(metric eventlog_sink_otlp_queue_peak_bytes); bound=$(metric eventlog_sink_otlp_queue_bound_bytes)
[ "$bound" -eq 65536 ] && [ "$peak" -le "$bound" ] && [ "$(metric eventlog_sink_otlp_queue_bytes)" -le "$bound" ] ||
    fail_showing "$T/now.metrics" "hang: peak $peak bytes against a bound of $bound"
sum=$(( $(metric eventlog_sink_otlp_sent_batches_total) + $(metric eventlog_sink_otlp_queued_batches) +
        $(metric eventlog_sink_otlp_dropped_batches_total) ))
enq=$(metric eventlog_sink_otlp_enqueued_batches_total)
[ $((enq - sum)) -ge 0 ] && [ $((enq - sum)) -le 3 ] ||
    fail "hang: $enq enqueued, sent + queued + dropped = $sum (at most one in flight per signal)"
pid=$pid_figs
scurl -sf --max-time 10 "http://127.0.0.1:$PORT/p/$pid/api/state" -o "$T/hang.state" || fail "GET /p/$pid/api/state failed"
[ "$(json_get "$T/hang.state" otlp.dropped_items)" -gt 0 ] &&
    [ "$(json_get "$T/hang.state" otlp.queue_bound_bytes)" -eq 65536 ] ||
    fail "hang: the state JSON's otlp member does not show the drops: $(json_get "$T/hang.state" otlp)"
note "4: peak $peak of $bound bytes queued, $(metric eventlog_sink_otlp_dropped_batches_total) batches dropped (oldest first), counted in /metrics and the state JSON"
kill -TERM "$spid"; wait_pid "$spid" 30 || fail "serve did not exit"
kill "$RECV_PID"

# ---- 5. refusals in one line ----
rc=0
"$ELS_SINK_TOOL" serve --all --listen 127.0.0.1:0 --otlp-endpoint http://192.0.2.1:4318 \
    >"$T/r5.out" 2>"$T/r5.err" || rc=$?
[ "$rc" -eq 2 ] && [ "$(wc -l <"$T/r5.err")" -eq 1 ] && grep -q 'OTLP: .*is not on this host.*--otlp-insecure' "$T/r5.err" ||
    fail "non-loopback endpoint: status $rc: $(cat "$T/r5.err")"
rc=0
OTEL_EXPORTER_OTLP_ENDPOINT=http://collector.example:4318 "$ELS_SINK_TOOL" serve --all \
    --listen 127.0.0.1:0 >"$T/r5.out" 2>"$T/r5.err" || rc=$?
[ "$rc" -eq 2 ] && [ "$(wc -l <"$T/r5.err")" -eq 1 ] || fail "non-loopback endpoint (variable): status $rc: $(cat "$T/r5.err")"
note "5: $(cat "$T/r5.err")"

# ---- 6. the example dashboard names only series the exporter sends ----
DASH=$ELS_TOP_SRCDIR/examples/otlp/grafana-dashboard.json
printf '%s\n' "$names1" | tr . _ | sort -u >"$T/sent.names"
/usr/bin/python3 - "$DASH" "$T/sent.names" >"$T/dash.out" 2>&1 <<'PY' || fail_showing "$T/dash.out" "the example dashboard"
import json, re, sys
d = json.load(open(sys.argv[1]))           # parses, or fails here
sent = set(open(sys.argv[2]).read().split())
exprs = []
def walk(o):
    if isinstance(o, dict):
        for k, v in o.items():
            if k in ("expr", "query", "definition") and isinstance(v, str):
                exprs.append(v)
            walk(v)
    elif isinstance(o, list):
        for v in o:
            walk(v)
walk(d)
names = set()
for e in exprs:
    # label names are not metrics: drop matchers, by/without lists and
    # label_values()'s label
    e = re.sub(r"\{[^}]*\}", "", e)
    e = re.sub(r"\b(by|without)\s*\([^)]*\)", "", e)
    e = re.sub(r"label_values\(([a-z0-9_]+),[^)]*\)", r"\1", e)
    names |= set(n for n in re.findall(r"[a-z_][a-z0-9_]*", e)
                 if n.startswith(("process_", "eventlog_")))
if not names:
    sys.exit("the dashboard names no metric")
def sent_as(n):
    # a histogram's series are NAME_bucket, NAME_sum, NAME_count
    return n in sent or any(n.endswith(s) and n[:-len(s)] in sent for s in ("_bucket", "_sum", "_count"))
missing = sorted(n for n in names if not sent_as(n))
if missing:
    sys.exit("names series the exporter did not send: %s" % missing)
print(len(names))
PY
note "6: the dashboard parses; its $(cat "$T/dash.out") metrics are all among the $(wc -l <"$T/sent.names") the exporter sent"
echo "PASS: $els_test_name"
