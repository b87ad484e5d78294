#!/usr/bin/env bash
# test_otlp.sh: the OTLP exporter (tools/otlp) against receivers on
# loopback, every body checked with the official schema (the .proto files
# of opentelemetry-proto from tests/node, installed by
# scripts/install-node-deps.sh): protoc --decode with no unknown field for
# http/protobuf, json_format.Parse for http/json (check_otlp.py).
#  1. metrics: a sum, a gauge and a histogram in both encodings carry the
#     values given, cumulative, with the resource attributes of
#     OTEL_RESOURCE_ATTRIBUTES and the headers of --otlp-header.
#  2. logs and spans from a real -N2 eventlog (Spans.hs): every message and
#     marker is a log with its event's time (wall-clock anchor + event
#     time), every "req start"/"req end" marker pair and "START phase"/
#     "STOP phase" pair a span with the duration ghc-events shows.
#  3. a receiver answering 503 with Retry-After: 1, then 200: every batch
#     arrives, is taken exactly once, and the retries are counted;
#     Retry-After's two forms (seconds, HTTP-date).
#  4. partial success: the rejected count is read and counted.
#  5. a receiver that never answers: held bytes stay within the bound and
#     the drops are counted (enqueued = sent + dropped + queued + in flight).
#  6. refusals in one line: a non-loopback endpoint without --otlp-insecure,
#     https, grpc, a malformed header.
. "$(dirname "$0")/../harness.sh"
set -u

DRIVE=$ELS_TOP_BUILDDIR/tests/otlp/otlp_drive
[ -x "$DRIVE" ] || skip "otlp_drive not built"
PROTOS=$ELS_TOP_SRCDIR/tests/node/node_modules/@opentelemetry/otlp-grpc-exporter-base/build/protos
[ -f "$PROTOS/opentelemetry/proto/collector/logs/v1/logs_service.proto" ] ||
    skip "the OTLP .proto files (scripts/install-node-deps.sh)"
command -v protoc >/dev/null 2>&1 || skip "protoc (Debian protobuf-compiler)"
/usr/bin/python3 -c 'import google.protobuf' 2>/dev/null || skip "python3-protobuf"
make_tmpdir
CHECK="/usr/bin/python3 $ELS_TOP_SRCDIR/tests/otlp/check_otlp.py $PROTOS $ELS_TMP"

# receiver DIR MODE: start receiver.py; sets PORT.
receiver() {
    mkdir -p "$1"
    /usr/bin/python3 "$ELS_TOP_SRCDIR/tests/otlp/receiver.py" "$1" "$2" &
    bg_register $!
    RECV_PID=$!
    wait_for_file "$1/port" 30 || fail "receiver $2 did not start"
    PORT=$(cat "$1/port")
}
stat_of() { sed -n "s/^$1=//p" "$2"; }

# ---- 1. metrics ----
for proto in http/protobuf http/json; do
    d=$ELS_TMP/m-${proto#http/}
    receiver "$d" ok
    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$PORT OTEL_SERVICE_NAME=svc-$$ \
    OTEL_RESOURCE_ATTRIBUTES='deployment.environment=a%20b,host.name=h1' \
    OTEL_EXPORTER_OTLP_PROTOCOL=$proto \
        "$DRIVE" --otlp-header 'Authorization=Bearer%20t0k' metrics 1700000000000000000 1700000000500000000 \
        sum:process.runtime.ghc.gc.count:12345678901 gauge:process.runtime.ghc.memory.heap_size:1048576.5 \
        'hist:process.runtime.ghc.gc.pause:0.001/0.01/0.1:5/3/2/1:0.4375' >"$d/stats" ||
        fail "$proto: otlp_drive metrics failed"
    [ "$(stat_of metrics.sent_batches "$d/stats")" = 1 ] || fail "$proto: $(cat "$d/stats")"
    $CHECK "$d"/0*.metrics >"$d/decoded" || fail "$proto: a metrics body failed the schema check"
    cat >"$d/want" <<EOW
header authorization Bearer t0k
resource service.name svc-$$
resource deployment.environment a b
resource host.name h1
metric process.runtime.ghc.gc.count sum 1700000000000000000 1700000000500000000 12345678901
metric process.runtime.ghc.memory.heap_size gauge 0 1700000000500000000 1048576.5
metric process.runtime.ghc.gc.pause histogram 1700000000000000000 1700000000500000000 11 0.4375 0.001/0.01/0.1 5/3/2/1
EOW
    diff "$d/want" "$d/decoded" >&2 || fail "$proto: decoded metrics differ from what was sent"
    kill "$RECV_PID"
done
note "metrics: protobuf and JSON decode strictly with the values sent"

# ---- 2. logs and spans from a real eventlog ----
[ -n "$GHC" ] && command -v "$GHC" >/dev/null 2>&1 || skip "GHC not found"
mkdir -p "$ELS_TMP/hs"
cp "$ELS_TOP_SRCDIR/tests/programs/Spans.hs" "$ELS_TMP/hs/"
(cd "$ELS_TMP/hs" && "$GHC" -threaded -eventlog -rtsopts -outputdir o -o spans Spans.hs) \
    >"$ELS_TMP/hs/build.log" 2>&1 || fail "Spans.hs did not build: $(tail -5 "$ELS_TMP/hs/build.log")"
(cd "$ELS_TMP/hs" && ./spans +RTS -N2 -l -olspans.eventlog -RTS) || fail "Spans failed"
show_events "$ELS_TMP/hs/spans.eventlog" "$ELS_TMP/hs/shown" || fail "ghc-events cannot read the eventlog"
# The anchor: "TIME: capset 0: wall clock time Ss Nns (unix epoch)"; unix
# nanoseconds exceed a double's 53 bits, so the sums are bash's 64-bit
# integers (plus_anchor), never awk's.
set -- $(sed -n 's/^ *\([0-9]*\): capset [0-9]*: wall clock time \([0-9]*\)s \([0-9]*\)ns.*/\1 \2 \3/p' \
         "$ELS_TMP/hs/shown" | head -1)
[ $# -eq 3 ] || fail "no wall clock event in ghc-events show's output"
anchor=$(( $2 * 1000000000 + $3 - $1 ))
# plus_anchor: add the anchor to the first N numeric fields of each line.
plus_anchor() {
    local n=$1 line f i out
    while read -r line; do
        set -- $line
        out=
        for ((i = 1; i <= n; i++)); do out="$out $(( $1 + anchor ))"; shift; done
        echo "${out# } $*"
    done
}
for proto in http/protobuf http/json; do
    d=$ELS_TMP/e-${proto#http/}
    receiver "$d" ok
    "$DRIVE" --otlp-endpoint "http://localhost:$PORT" --otlp-protocol $proto --otlp-max-rate 0 \
        events "$ELS_TMP/hs/spans.eventlog" >"$d/stats" || fail "$proto: otlp_drive events failed"
    $CHECK "$d"/0*.logs "$d"/0*.traces >"$d/decoded" || fail "$proto: a body failed the schema check"
    # Logs: message and marker texts at their times, as ghc-events shows them.
    awk '
        { t = $1; sub(":", "", t) }
        / cap [0-9]+: marker: / { sub(/^.*: marker: /, ""); print t " marker " $0; next }
        / cap [0-9]+: (hello from Spans|bye from Spans|START phase|STOP phase)$/ {
            sub(/^[^:]*: cap [0-9]+: /, ""); print t " message " $0 }' \
        "$ELS_TMP/hs/shown" | plus_anchor 1 | sort >"$d/logs.want"
    awk '$1 == "log" && ($5 == "message" || $5 == "marker") && $2 == 9 {
            $1 = $2 = $3 = ""; sub(/^ +/, ""); print }' "$d/decoded" | sort >"$d/logs.got"
    [ "$(wc -l <"$d/logs.want")" -ge 24 ] || fail "ghc-events shows too few user events: $(wc -l <"$d/logs.want")"
    diff "$d/logs.want" "$d/logs.got" >&2 || fail "$proto: logs differ from ghc-events show"
    grep -q '^log 9 INFO [0-9]* thread_label thread [0-9]*: spans-main$' "$d/decoded" ||
        fail "$proto: no log of the thread label"
    # Spans: pairs from ghc-events, each end closing the latest open start.
    awk '
        { t = $1; sub(":", "", t) }
        / marker: req start$/ { rs[++nr] = t }
        / marker: req end$/ && nr > 0 { print rs[nr], t, "req marker"; nr-- }
        / cap [0-9]+: START phase$/ { ps[++np] = t }
        / cap [0-9]+: STOP phase$/ && np > 0 { print ps[np], t, "phase user_event"; np-- }' \
        "$ELS_TMP/hs/shown" | plus_anchor 2 | awk '{ print $3, $1, $2, $4 }' | sort >"$d/spans.want"
    awk '$1 == "span" { $1 = ""; sub(/^ /, ""); print }' "$d/decoded" | sort >"$d/spans.got"
    [ "$(wc -l <"$d/spans.want")" -eq 20 ] || fail "expected 20 pairs in ghc-events show, got $(wc -l <"$d/spans.want")"
    diff "$d/spans.want" "$d/spans.got" >&2 || fail "$proto: spans differ from the pairs ghc-events shows"
    kill "$RECV_PID"
done
note "logs and spans: every message, marker and pair as ghc-events shows it, in both encodings"

# The rate limit leaves records out and counts them: 1 per second, a burst of 1.
d=$ELS_TMP/rate
receiver "$d" ok
"$DRIVE" --otlp-endpoint "http://127.0.0.1:$PORT" --otlp-max-rate 1 events "$ELS_TMP/hs/spans.eventlog" \
    >"$d/stats" || fail "rate: otlp_drive failed"
all_logs=$(stat_of events.logs "$ELS_TMP/e-protobuf/stats")
got=$(stat_of events.logs "$d/stats"); out=$(stat_of events.logs_left_out "$d/stats")
[ "$out" -gt 0 ] && [ $((got + out)) -eq "$all_logs" ] ||
    fail "rate limit: $got logs sent + $out left out != $all_logs"
kill "$RECV_PID"

# ---- 3. 503 with Retry-After, then 200 ----
d=$ELS_TMP/retry
receiver "$d" retry
"$DRIVE" --otlp-endpoint "http://127.0.0.1:$PORT" --otlp-max-rate 0 events "$ELS_TMP/hs/spans.eventlog" \
    >"$d/stats" || fail "retry: otlp_drive failed"
batches=$(( $(stat_of logs.enqueued_batches "$d/stats") + $(stat_of traces.enqueued_batches "$d/stats") ))
taken=$(awk '$3 == 200' "$d/log" | wc -l)
distinct=$(awk '$3 == 200 { print $4 }' "$d/log" | sort -u | wc -l)
refused=$(awk '$3 == 503' "$d/log" | wc -l)
retries=$(( $(stat_of logs.retries "$d/stats") + $(stat_of traces.retries "$d/stats") ))
[ "$taken" -eq "$batches" ] && [ "$distinct" -eq "$batches" ] ||
    fail "retry: $batches batches, $taken taken ($distinct distinct): $(cat "$d/log")"
[ "$refused" -eq "$batches" ] && [ "$retries" -eq "$batches" ] ||
    fail "retry: $refused refused, $retries retries counted, $batches batches"
note "retry: $batches batches each refused once with Retry-After, then taken once"
kill "$RECV_PID"

# Retry-After as seconds or as an HTTP-date (RFC 9110), anything else ignored.
[ "$("$DRIVE" retry-after 7)" = 7000 ] || fail "Retry-After: 7 not read as 7 s"
[ "$("$DRIVE" retry-after 'Wed, 21 Oct 2015 07:28:00 GMT')" = 0 ] || fail "Retry-After: a past date"
ra=$("$DRIVE" retry-after "$(LC_ALL=C date -u -d '+30 sec' '+%a, %d %b %Y %H:%M:%S GMT')")
[ "$ra" -ge 0 ] && [ "$ra" -le 30000 ] || fail "Retry-After: a date 30 s ahead read as $ra ms"
[ "$("$DRIVE" retry-after soon)" = -1 ] || fail "Retry-After: soon was not ignored"

# ---- 4. partial success ----
for proto in http/protobuf http/json; do
    d=$ELS_TMP/p-${proto#http/}
    receiver "$d" partial
    "$DRIVE" --otlp-endpoint "http://127.0.0.1:$PORT" --otlp-protocol $proto --otlp-max-rate 0 \
        events "$ELS_TMP/hs/spans.eventlog" >"$d/stats" || fail "partial: otlp_drive failed"
    n=$(stat_of logs.sent_batches "$d/stats")
    [ "$n" -gt 0 ] && [ "$(stat_of logs.rejected_items "$d/stats")" -eq $((3 * n)) ] ||
        fail "partial ($proto): $(grep -E 'logs\.|last_error' "$d/stats")"
    grep -q '^last_error=.*partial success: 3 rejected: 3 refused by the test' "$d/stats" ||
        fail "partial ($proto): $(grep last_error "$d/stats")"
    kill "$RECV_PID"
done

# ---- 5. a receiver that never answers ----
d=$ELS_TMP/hang
receiver "$d" hang
OTLP_DRIVE_GIVE_UP_MS=600000 "$DRIVE" --otlp-endpoint "http://127.0.0.1:$PORT" --otlp-timeout 60000 \
    --otlp-queue-bytes 262144 flood 400 4000 >"$d/stats" || fail "hang: otlp_drive failed"
peak=$(stat_of peak_held_bytes "$d/stats"); bound=$(stat_of bound_bytes "$d/stats")
full=$(stat_of logs.dropped_batches.queue_full "$d/stats")
[ "$bound" -eq 262144 ] && [ "$peak" -le "$bound" ] && [ "$peak" -gt $((bound / 2)) ] ||
    fail "hang: peak $peak bytes against a bound of $bound"
[ "$full" -gt 0 ] || fail "hang: no queue_full drop counted: $(cat "$d/stats")"
sum=$(( $(stat_of logs.sent_batches "$d/stats") + $(stat_of logs.queued_batches "$d/stats") +
        $(stat_of logs.inflight_batches "$d/stats") ))
for c in queue_full too_large gave_up refused shutdown; do
    sum=$(( sum + $(stat_of logs.dropped_batches.$c "$d/stats") ))
done
[ "$sum" -eq 400 ] && [ "$(stat_of logs.enqueued_batches "$d/stats")" -eq 400 ] ||
    fail "hang: 400 enqueued but sent + dropped + queued + in flight = $sum"
note "hang: peak $peak of $bound bytes held, $full batches dropped (oldest first), all accounted"
kill "$RECV_PID"

# ---- 6. refusals ----
refused_line() {  # refused_line PATTERN CMD...: one line on stderr matching PATTERN, exit 2
    local pat=$1 rc=0
    shift
    "$@" >"$ELS_TMP/r.out" 2>"$ELS_TMP/r.err" || rc=$?
    [ "$rc" -eq 2 ] && [ "$(wc -l <"$ELS_TMP/r.err")" -eq 1 ] && grep -q -- "$pat" "$ELS_TMP/r.err" ||
        fail "refusal of $*: status $rc: $(cat "$ELS_TMP/r.err")"
}
refused_line 'is not on this host.*--otlp-insecure' "$DRIVE" --otlp-endpoint http://192.0.2.1:4318 check
refused_line 'is not on this host' env OTEL_EXPORTER_OTLP_LOGS_ENDPOINT=http://collector.example:4318/v1/logs "$DRIVE" check
"$DRIVE" --otlp-endpoint http://192.0.2.1:4318 --otlp-insecure check || fail "--otlp-insecure refused"
refused_line 'https is not supported.*collector on this host' "$DRIVE" --otlp-endpoint https://127.0.0.1:4318 check
refused_line 'grpc is not supported' env OTEL_EXPORTER_OTLP_PROTOCOL=grpc "$DRIVE" check
refused_line 'is not key=value' env OTEL_EXPORTER_OTLP_HEADERS=novalue "$DRIVE" check
refused_line 'control character' "$DRIVE" --otlp-header 'X-A=b%0d%0aX-Injected: 1' check
refused_line 'longer than' "$DRIVE" --otlp-endpoint "http://127.0.0.1/$(head -c 5000 /dev/zero | tr '\0' a)" check
refused_line 'user information' "$DRIVE" --otlp-endpoint http://u:p@127.0.0.1:4318 check
note "refusals: one line each"
exit 0
