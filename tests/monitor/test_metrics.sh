#!/usr/bin/env bash
# test_metrics.sh: `eventlog-sink serve`'s /metrics scraped by a real
# Prometheus server.
#
# serve follows a live -N2 program on the patched RTS (unix: sink); the
# Debian package prometheus, started here on loopback with a generated
# configuration, scrapes serve's /metrics every second with serve's
# token (authorization.credentials_file: its job is up) and, as a
# second job, without it (down: the scrape's error is serve's 401);
# through its query
# API, a sample scraped after the program went idle holds the GC
# collections ghc-events reads from the same stream (the one serve saved),
# labelled with the program's name and pid, and the pause histogram counts
# as many pauses (one per collection).  `promtool check metrics` (same package) passes the exposition
# of the live program, and of a program whose name (a link to it) holds a
# tab, a double quote, a backslash, a newline and a byte that is not
# UTF-8: its label value is exactly the name with \\, \" and \n escaped
# and the byte replaced by U+FFFD.  Skips without prometheus, promtool,
# curl, python3, GHC, ghc-events or the patched RTS.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"
. "$(dirname "$0")/../ghcprog.sh"
. "$(dirname "$0")/../monitor/monitor.sh"

require_prometheus
command -v curl >/dev/null 2>&1 || skip "curl not installed"
command -v python3 >/dev/null 2>&1 || skip "python3 not installed"
monitor_setup

# Prometheus first (start_prometheus in monitor.sh): it takes the longest
# to start.

PHASES=2
start_serve live "unix:$T/p.sock"
start_prometheus "$PORT"
start_busy_live live "$PHASES" "$T/p.sock"
wait_all_markers live "$PHASES"
# promtool_clean NAME: GET /metrics into $T/NAME.metrics; promtool's
# check (syntax and its lint) must pass it.
promtool_clean() {
    scurl -sf --max-time 10 "http://127.0.0.1:$PORT/metrics" -o "$T/$1.metrics" \
        || fail "$1: GET /metrics failed"
    "$PROMTOOL" check metrics <"$T/$1.metrics" >"$T/$1.promtool" 2>&1 \
        || fail_showing "$T/$1.promtool" "$1: promtool check metrics rejects /metrics"
}
promtool_clean live
cp "$T/live.saved" "$T/live.eventlog"
idle_since=$(date +%s.%N)
shown_counts "$T/live.eventlog" live
wait_until 120 prom_ready || fail_showing "$T/prometheus.log" "prometheus did not become ready"
# serve's token in credentials_file: up; without it: down, 401.
wait_until 60 prom_refused \
    || fail_showing "$T/targets.json" "prometheus' scrapes are not up with the token and refused (401) without: $(cat "$T/up.json" 2>/dev/null)"
note "prometheus: job eventlog-sink (credentials_file) up; job no-token down: $("$PYTHON" -c '
import json, sys
print([t["lastError"] for t in json.load(open(sys.argv[1]))["data"]["activeTargets"] if t["labels"]["job"] == "no-token"][0])' "$T/targets.json")"

# query EXPR: the first sample of an instant query, as "TIMESTAMP VALUE
# LABELS-JSON", into $T/query.out.
query() {
    curl -sf --max-time 10 -G "http://127.0.0.1:$PROM_PORT/api/v1/query" \
        --data-urlencode "query=$1" -o "$T/query.json" || return 1
    "$PYTHON" -c '
import json, sys
r = json.load(open(sys.argv[1]))["data"]["result"]
if not r:
    sys.exit(1)
ts, v = r[0]["value"]
print(ts, v, json.dumps(r[0]["metric"], sort_keys=True))
' "$T/query.json" >"$T/query.out"
}
# A sample scraped after the program went idle (its timestamp is later).
scraped_after_idle() {
    query 'sum by (instance, job, pid, program) (ghc_gc_collections_total)' || return 1
    "$PYTHON" -c 'import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) else 1)' \
        "$(cut -d' ' -f1 "$T/query.out")" "$idle_since"
}
wait_until 120 scraped_after_idle \
    || fail_showing "$T/prometheus.log" "prometheus has no ghc_gc_collections_total sample scraped after the program went idle: $(cat "$T/query.json" 2>/dev/null)"
[ "$(wc -c <"$T/live.saved")" -eq "$(wc -c <"$T/live.eventlog")" ] \
    || fail "the stream grew after the program said it was idle"
read -r _ value labels <"$T/query.out"
note "prometheus: ghc_gc_collections_total (summed over generations) $value $labels; ghc-events: $SHOWN_GC"
[ "$value" = "$SHOWN_GC" ] || fail "prometheus scraped $value GC collections, ghc-events counts $SHOWN_GC"
[ "$labels" = "{\"instance\": \"127.0.0.1:$PORT\", \"job\": \"eventlog-sink\", \"pid\": \"$ppid\", \"program\": \"busy\"}" ] \
    || fail "ghc_gc_collections_total labels: $labels (expected program busy, pid $ppid)"
query 'ghc_gc_pause_seconds_count' || fail "no ghc_gc_pause_seconds_count"
read -r _ pauses _ <"$T/query.out"
[ "$pauses" = "$SHOWN_GC" ] || fail "ghc_gc_pause_seconds_count $pauses, ghc-events counts $SHOWN_GC GC collections"
query 'sum(eventlog_user_events_total)' || fail "no eventlog_user_events_total"
read -r _ user _ <"$T/query.out"
[ "$user" = "$(( SHOWN_MSGS + SHOWN_MARKERS ))" ] \
    || fail "eventlog_user_events_total sums to $user, ghc-events counts $(( SHOWN_MSGS + SHOWN_MARKERS ))"

stop_controlled
wait_pid "$ppid" 60 || fail_showing "$T/live.prog.err" "the program did not exit cleanly"

# A program whose name is hostile to the exposition: argv[0], a link.
name=$'bad\tna"me\\x\ny\xff'
ln -s "$BUSY" "$T/$name" || fail "cannot make a link named with a tab, a newline and 0xff"
start_serve hostile "unix:$T/h.sock"
BUSY=$T/$name start_busy_live hostile 1 "$T/h.sock"
wait_all_markers hostile 1
promtool_clean hostile
want=$'program="bad\tna\\"me\\\\x\\ny\xef\xbf\xbd",pid="'"$ppid"'"'
grep -qF -- "ghc_gc_collections_total{$want,gen=\"0\"} " "$T/hostile.metrics" \
    || fail_showing "$T/hostile.metrics" "ghc_gc_collections_total is not labelled with the escaped name: $want"
note "hostile name: promtool passes $(grep -cF -- "$want" "$T/hostile.metrics") samples labelled $want"
stop_controlled
wait_pid "$ppid" 60 || fail_showing "$T/hostile.prog.err" "the hostile-named program did not exit cleanly"
kill -TERM "$spid"
wait_pid "$spid" 30 || fail "serve did not exit 0 on SIGTERM"
echo "PASS: $els_test_name"
