# monitor.sh: what the live monitor's shell tests share (test_top.sh,
# test_serve.sh, test_metrics.sh; sourced after tests/harness.sh and
# tests/ghcprog.sh).  It runs no test itself.
#
# The program is tests/programs/Busy.hs (PHASES phases of two threads posting
# user messages "work ...", marker pairs "phase I start/end", a major GC
# each, then the marker "work done", "ready" on stdout, and it waits for
# stdin), built with the patched RTS and the library.  Figures are
# checked against the independent reader: ghc-events show on the same
# stream.

# Debian's python3 when there (a python3 earlier on PATH may be a slow
# shim); the tests use it for JSON and the browser.
if [ -x /usr/bin/python3 ]; then PYTHON=/usr/bin/python3; else PYTHON=python3; fi

# monitor_setup: skip or build (BUSY), make T.
monitor_setup() {
    setup_ghc_program_test busy Busy
    BUSY=$GHC_PROGRAM
}

# shown_counts FILE NAME: ghc-events show FILE into $T/NAME.show and set
# SHOWN_GC (collections: the "GC stats" events, or the GC requests where
# they are more), SHOWN_STARTS (GC_START events, every capability's),
# SHOWN_THREADS (threads created),
# SHOWN_MSGS (user messages "work ..."), SHOWN_MARKERS (markers).
shown_counts() {
    show_events "$1" "$T/$2.show" || fail "$2: ghc-events cannot parse $1"
    read -r SHOWN_GC SHOWN_STARTS SHOWN_THREADS SHOWN_MSGS SHOWN_MARKERS < <(awk '
        /^ *[0-9]+: / {
            sub(/^ *[0-9]+: (cap [0-9]+: )?/, "")
            if ($0 == "starting GC") g++
            else if (index($0, "GC stats for heap capset ") == 1) st++
            else if ($0 == "requesting parallel GC" || $0 == "requesting sequential GC") rq++
            else if (index($0, "creating thread ") == 1) t++
            else if (index($0, "work ") == 1) u++
            else if (index($0, "marker: ") == 1) m++
        }
        END { print (st > rq ? st : rq) + 0, g + 0, t + 0, u + 0, m + 0 }' "$T/$2.show")
    note "$2: ghc-events: $SHOWN_GC GC collections ($SHOWN_STARTS GC starts), $SHOWN_THREADS threads, $SHOWN_MSGS messages, $SHOWN_MARKERS markers ($(wc -c <"$1") bytes)"
}

# json_get FILE PATH...: print the values at the dotted PATHs of the JSON
# object in FILE, space-separated ("gc.collections user.markers").
json_get() {
    "$PYTHON" - "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
out = []
for path in sys.argv[2:]:
    v = d
    for k in path.split("."):
        v = v[k]
    out.append(str(v).lower() if isinstance(v, bool) else str(v))
print(" ".join(out))
PY
}

# require_page_tools: skip (77) without what drives the page in a browser:
# Debian's chromium, node, playwright-core (scripts/install-node-deps.sh)
# and curl.
require_page_tools() {
    [ -x /usr/bin/chromium ] || skip "chromium not installed (scripts/install-deps.sh)"
    command -v node >/dev/null 2>&1 || skip "node not installed"
    [ -d "$ELS_TOP_SRCDIR/tests/node/node_modules/playwright-core" ] \
        || skip "playwright-core not installed (scripts/install-node-deps.sh)"
    command -v curl >/dev/null 2>&1 || skip "curl not installed"
}

# start_serve NAME SOURCE [OPTIONS...]: `serve --listen 127.0.0.1:0
# --save $T/NAME.saved OPTIONS SOURCE` in the background (spid); waits
# until it says where it serves and sets PORT, SERVE_URL to the URL it
# prints and TOKEN (see serve_listening).
start_serve() {
    local name=$1 src=$2 err=$T/$1.serve.err
    shift 2
    "$ELS_SINK_TOOL" serve --listen 127.0.0.1:0 --save "$T/$name.saved" "$@" "$src" \
        >"$T/$name.serve.out" 2>"$err" &
    spid=$!
    bg_register "$spid"
    serve_listening "$err" "$name: serve"
}

# serve_listening ERR WHAT: wait until the serve whose stderr is ERR
# says where it serves; set SERVE_URL to the URL it prints
# (http://127.0.0.1:PORT/?token=TOKEN), PORT, and TOKEN from the URL
# (with --token-file the URL has none: TOKEN stays the caller's).
serve_listening() {
    wait_until 30 grep -q "serving http://" "$1" \
        || fail_showing "$1" "$2 did not start listening"
    SERVE_URL=$(sed -n 's|.*serving \(http://127\.0\.0\.1:[0-9]*/[^ ]*\).*|\1|p' "$1")
    PORT=$(printf '%s\n' "$SERVE_URL" | sed -n 's|^http://[^:]*:\([0-9]*\)/.*|\1|p')
    [ -n "$PORT" ] || fail_showing "$1" "$2: no port in its output"
    case $SERVE_URL in
    *'?token='*) TOKEN=${SERVE_URL#*\?token=} ;;
    esac
}

# scurl ARGS...: curl with serve's token (TOKEN) as a scraper sends it,
# "Authorization: Bearer TOKEN".
scurl() {
    curl -H "Authorization: Bearer $TOKEN" "$@"
}

# state NAME: GET /api/state into $T/NAME.state; status 1 if it fails.
state() {
    scurl -sf --max-time 10 "http://127.0.0.1:$PORT/api/state" -o "$T/$1.state"
}

# markers_at_least NAME N: /api/state counts at least N markers.
markers_at_least() {
    state "$1" && [ "$(json_get "$T/$1.state" user.markers)" -ge "$2" ]
}

# start_busy_live NAME PHASES SOCKET [SINK-OPTIONS [RTS-OPTIONS...]]: the
# program on the patched RTS, -N2, its eventlog on a unix: sink that waits
# for serve (with SINK-OPTIONS too, e.g. control=1), flushed every 0.2 s
# (so a finished phase reaches the monitor while the program idles), no
# idle GC; waits for "ready".  Stop it with stop_controlled.
start_busy_live() {
    local name=$1 phases=$2 sock=$3 opts=${4:-}
    shift 3
    [ $# -gt 0 ] && shift
    start_controlled "$name" "$BUSY" "$phases" +RTS -N2 -I0 "$@" \
        "--eventlog-sink=unix:$sock?wait=60${opts:+&$opts}" \
        --eventlog-flush-interval=0.2 -RTS
    wait_output "$name" ready
}

# control_has NAME SOCKET COMMAND: does the program at SOCKET list
# COMMAND in its answer to help?  (A library without the runtime-control
# and profiling parts lacks flush, snapshot, classes and the heap census.)
control_has() {
    "$ELS_SINK_TOOL" ctl "unix:$2" help >"$T/$1.help" 2>&1 \
        || fail_showing "$T/$1.help" "$1: ctl help failed"
    grep -qE "(^help: |, )$3(,|\$)" "$T/$1.help"
}

# control_must_have NAME SOCKET COMMAND...: the program at SOCKET lists
# every COMMAND in its answer to help, or the test fails: with the
# patched RTS and the library's runtime-control parts (what these tests
# require) every command the monitor offers must work, so a missing one
# is a failure, not an "unknown command" to expect.
control_must_have() {
    local name=$1 sock=$2 c
    shift 2
    for c in "$@"; do
        control_has "$name" "$sock" "$c" \
            || fail_showing "$T/$name.help" "$name: the program's control lacks '$c'"
    done
}

# wait_all_markers NAME PHASES: wait until serve has seen every marker of
# the program's run (2 per phase and "work done").
wait_all_markers() {
    wait_until 60 markers_at_least "$1" $(( 2 * $2 + 1 )) \
        || fail "$1: serve did not see the $(( 2 * $2 + 1 )) markers within 60 s: $(head -c 600 "$T/$1.state" 2>/dev/null)"
}

# require_prometheus: skip without prometheus and promtool (Debian's
# prometheus package); sets PROMETHEUS and PROMTOOL.
require_prometheus() {
    PROMETHEUS=$(command -v prometheus || true)
    [ -n "$PROMETHEUS" ] || skip "prometheus not installed (scripts/install-deps.sh)"
    PROMTOOL=$(command -v promtool || true)
    [ -n "$PROMTOOL" ] || skip "promtool not installed (Debian package prometheus; scripts/install-deps.sh)"
}

# start_prometheus TARGET-PORT: a real Prometheus on a free loopback port
# (PROM_PORT), its data in $T/prom, scraping 127.0.0.1:TARGET-PORT's
# /metrics every second twice: job eventlog-sink with serve's token
# (TOKEN, in $T/prom.token: authorization.credentials_file, as
# examples/prometheus/prometheus.yml does) and job no-token without
# (prom_refused checks that its scrapes fail).  prom_pid; its log in
# $T/prometheus.log.  prom_ready tells when it answers.
start_prometheus() {
    PROM_PORT=$(free_tcp_port) || fail "no free port for prometheus"
    (umask 077 && printf '%s\n' "$TOKEN" >"$T/prom.token") || fail "cannot write $T/prom.token"
    cat >"$T/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: eventlog-sink
    metrics_path: /metrics
    authorization:
      credentials_file: $T/prom.token
    static_configs:
      - targets: ['127.0.0.1:$1']
  - job_name: no-token
    metrics_path: /metrics
    static_configs:
      - targets: ['127.0.0.1:$1']
YML
    run_prometheus "$T/prometheus.yml"
}
# prom_refused: Prometheus scraped job no-token (start_prometheus) and
# failed with serve's 401 (its targets API's lastError), and up is 0
# for it and 1 for job eventlog-sink; the answers in $T/targets.json
# and $T/up.json.
prom_refused() {
    curl -sf --max-time 10 "http://127.0.0.1:$PROM_PORT/api/v1/targets" \
        -o "$T/targets.json" || return 1
    curl -sf --max-time 10 -G "http://127.0.0.1:$PROM_PORT/api/v1/query" \
        --data-urlencode 'query=up' -o "$T/up.json" || return 1
    "$PYTHON" - "$T/targets.json" "$T/up.json" <<'PY'
import json, sys
targets = json.load(open(sys.argv[1]))["data"]["activeTargets"]
up = {r["metric"]["job"]: r["value"][1]
      for r in json.load(open(sys.argv[2]))["data"]["result"]}
by_job = {t["labels"]["job"]: t for t in targets}
bad, good = by_job.get("no-token"), by_job.get("eventlog-sink")
ok = (bad is not None and good is not None and
      bad["health"] == "down" and "401" in bad["lastError"] and
      good["health"] == "up" and up.get("no-token") == "0" and
      up.get("eventlog-sink") == "1")
sys.exit(0 if ok else 1)
PY
}
# run_prometheus CONFIG: Prometheus with CONFIG on PROM_PORT, as above.
run_prometheus() {
    "$PROMETHEUS" --config.file="$1" --storage.tsdb.path="$T/prom" \
        --web.listen-address="127.0.0.1:$PROM_PORT" >"$T/prometheus.log" 2>&1 &
    prom_pid=$!
    bg_register "$prom_pid"
}
prom_ready() { curl -sf --max-time 5 "http://127.0.0.1:$PROM_PORT/-/ready" >/dev/null; }

# ---------------------------------------------------------------------------
# Alerts (test_alert_webhook.sh, test_alert_capture.sh)
# ---------------------------------------------------------------------------

# alert_setup: skip or build PAUSES (tests/programs/Trigger.hs, whose pauses
# mode makes long GC pauses), make T, and a discovery directory of the
# test's own.
alert_setup() {
    command -v curl >/dev/null 2>&1 || skip "curl not installed"
    setup_ghc_program_test pauses Trigger
    PAUSES=$GHC_PROGRAM
    export XDG_RUNTIME_DIR=$T/run
    mkdir -m 700 "$XDG_RUNTIME_DIR" || fail "mkdir $XDG_RUNTIME_DIR"
}

# start_pauses NAME: PAUSES, -N2, flushed every 0.2 s, its eventlog to a
# unix: sink ($T/NAME.sock) that waits for its first consumer and to a
# ring: flight recorder ($T/NAME.rec.eventlog, 64M, no dump at exit)
# with a control socket ($T/NAME.rec.sock): both from RTS flags, as a
# fleet's program runs (README, "Alerts that capture the moment");
# returns once it printed "ready" (pid in ppid).  stop_controlled ends
# it.
start_pauses() {
    start_controlled "$1" "$PAUSES" pauses +RTS -N2 -l \
        "--eventlog-sink=unix:$T/$1.sock?wait=60|ring:$T/$1.rec.eventlog?size=64M&at-exit=0&control=unix:$T/$1.rec.sock" \
        --eventlog-flush-interval=0.2 -RTS
    wait_output "$1" ready 120
}

# dumps NAME: how many dumps NAME's recorder wrote.
dumps() {
    local n=0
    while [ -e "$T/$1.rec.$((n + 1)).eventlog" ]; do n=$((n + 1)); done
    echo "$n"
}

# start_serve_all [OPTIONS...]: `serve --all --listen 127.0.0.1:0
# OPTIONS` in the background (spid, its stderr in $T/serve.err); waits
# until it says where it serves and sets PORT (and SERVE_URL, TOKEN).
start_serve_all() {
    "$ELS_SINK_TOOL" serve --all --listen 127.0.0.1:0 "$@" \
        >"$T/serve.out" 2>"$T/serve.err" &
    spid=$!
    bg_register "$spid"
    serve_listening "$T/serve.err" "serve --all"
}

# start_serve_all_control [OPTIONS...]: start_serve_all --control with a
# token file ($T/token, TOKEN).
start_serve_all_control() {
    TOKEN=alert-test-token-0123456789-abcdefghijkl
    (umask 077 && printf '%s\n' "$TOKEN" >"$T/token") || fail "cannot write $T/token"
    start_serve_all --control --token-file "$T/token" "$@"
}

# require_alertmanager: skip without Debian's prometheus-alertmanager;
# sets ALERTMANAGER, and AMTOOL (empty if the package has none).
require_alertmanager() {
    ALERTMANAGER=$(command -v prometheus-alertmanager || true)
    [ -n "$ALERTMANAGER" ] || skip "prometheus-alertmanager not installed (scripts/install-deps.sh)"
    AMTOOL=$(command -v amtool || true)
}
