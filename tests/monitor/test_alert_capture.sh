#!/usr/bin/env bash
# test_alert_capture.sh: an alert captures the moment (README, "A fleet:
# one serve --all per host"): a real Prometheus scrapes `serve --all
# --control` and evaluates the alerting rules of examples/prometheus/, a
# real Alertmanager routes the alert to serve's webhook with the token
# (http_config.authorization.credentials_file), and the program's ring:
# flight recorder writes a dump.  Prometheus scrapes with the same token
# (authorization.credentials_file), as every client of serve must.
#
# The configurations are the examples', generated with this test's
# ports and paths, 1 s scrape and evaluation intervals, and the
# GhcLongGcPause threshold lowered from 0.5 s to 0.05 s (a test rules
# file made from rules.yml); Alertmanager runs on loopback with its own
# storage, clustering off, and its webhook route's group interval and
# repeat interval shortened to 1 s and 2 s, so that it sends the
# firing alert again and again.  The program (tests/programs/Trigger.hs pauses) has
# GC pauses of tens to hundreds of milliseconds, and its eventlog goes
# to a unix: sink serve follows and to a ring: recorder with a control
# socket, both from one +RTS --eventlog-sink list.  Checked: Prometheus has the alert
# firing for the program's pid; the recorder writes a dump (a generous
# deadline: this checks that it happens, not how fast); serve names it
# on stderr; the dump passes ghc-events and ThreadScope's rule and holds
# a GC pause (GC_START to GC_END on one capability) longer than the
# rule's threshold; Alertmanager's repeats meet serve's cooldown (it
# says so) and no second dump is written.  Skips without prometheus,
# promtool, prometheus-alertmanager, curl, python3, GHC, ghc-events or
# the patched RTS.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"
. "$(dirname "$0")/../ghcprog.sh"
. "$(dirname "$0")/../monitor/monitor.sh"

require_prometheus
require_alertmanager
command -v "$PYTHON" >/dev/null 2>&1 || skip "python3 not installed"
alert_setup
deadline_set 600
EX=$ELS_TOP_SRCDIR/examples/prometheus
THRESHOLD=0.05

start_serve_all_control
(umask 077 && cp "$T/token" "$T/am.token" && cp "$T/token" "$T/prom.token") \
    || fail "cannot copy the token"

# sub FILE FROM TO: replace FROM by TO in FILE (fixed strings), failing
# when FROM is not there: the examples must keep what this test changes.
sub() {
    grep -qF -- "$2" "$1" || fail "$(basename "$1"): no '$2' to replace (examples/prometheus changed?)"
    "$PYTHON" -c 'import sys; p, a, b = sys.argv[1:]; s = open(p).read(); open(p, "w").write(s.replace(a, b))' "$1" "$2" "$3"
}

# --- Alertmanager ---------------------------------------------------------
AM_PORT=$(free_tcp_port) || fail "no free port for alertmanager"
cp "$EX/alertmanager.yml" "$T/alertmanager.yml"
sub "$T/alertmanager.yml" "http://127.0.0.1:8089/api/alertmanager" "http://127.0.0.1:$PORT/api/alertmanager"
sub "$T/alertmanager.yml" "/etc/eventlog-sink/alertmanager.token" "$T/am.token"
sub "$T/alertmanager.yml" "instance=\"127.0.0.1:8089\"" "instance=\"127.0.0.1:$PORT\""
sub "$T/alertmanager.yml" "      group_interval: 1m
      repeat_interval: 1h" "      group_interval: 1s
      repeat_interval: 2s"
"$AMTOOL" check-config "$T/alertmanager.yml" >"$T/amtool.out" 2>&1 \
    || fail_showing "$T/amtool.out" "amtool rejects the generated alertmanager.yml"
"$ALERTMANAGER" --config.file="$T/alertmanager.yml" --storage.path="$T/am" \
    --web.listen-address="127.0.0.1:$AM_PORT" --cluster.listen-address= \
    >"$T/alertmanager.log" 2>&1 &
am_pid=$!
bg_register "$am_pid"
am_ready() { curl -sf --max-time 5 "http://127.0.0.1:$AM_PORT/-/ready" >/dev/null; }
wait_until 120 am_ready || fail_showing "$T/alertmanager.log" "alertmanager did not become ready"

# --- Prometheus -------------------------------------------------------------
PROM_PORT=$(free_tcp_port) || fail "no free port for prometheus"
cp "$EX/rules.yml" "$T/rules.yml"
sub "$T/rules.yml" 'increase(ghc_gc_pause_seconds_bucket{le="0.5"}[1m])' \
    "increase(ghc_gc_pause_seconds_bucket{le=\"$THRESHOLD\"}[1m])"
cp "$EX/prometheus.yml" "$T/prometheus.yml"
sub "$T/prometheus.yml" "  scrape_interval: 5s
  evaluation_interval: 5s" "  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s"
sub "$T/prometheus.yml" "  - rules.yml" "  - $T/rules.yml"
sub "$T/prometheus.yml" "'127.0.0.1:9093'" "'127.0.0.1:$AM_PORT'"
sub "$T/prometheus.yml" "'127.0.0.1:8089'" "'127.0.0.1:$PORT'"
sub "$T/prometheus.yml" "/etc/eventlog-sink/prometheus.token" "$T/prom.token"
"$PROMTOOL" check config "$T/prometheus.yml" >"$T/promtool.out" 2>&1 \
    || fail_showing "$T/promtool.out" "promtool rejects the generated prometheus.yml"
run_prometheus "$T/prometheus.yml"
wait_until 120 prom_ready || fail_showing "$T/prometheus.log" "prometheus did not become ready"

# --- The program, and its dump ---------------------------------------------
start_pauses app
PID=$ppid
note "program $PID; serve :$PORT, prometheus :$PROM_PORT, alertmanager :$AM_PORT"
D=$T/app.rec.1.eventlog
dumped() { grep -q "alert GhcLongGcPause: pid $PID: $D (" "$T/serve.err"; }
# What Prometheus and Alertmanager hold, for a failure's message.
alert_state() {
    curl -s --max-time 5 -G "http://127.0.0.1:$PROM_PORT/api/v1/query" \
        --data-urlencode "query=ALERTS{pid=\"$PID\"}" | head -c 600
    echo
    curl -s --max-time 5 "http://127.0.0.1:$AM_PORT/api/v2/alerts" | head -c 600
}
wait_until 300 dumped || {
    alert_state >"$T/alerts.out" 2>&1
    cat "$T/serve.err" >>"$T/alerts.out"
    fail_showing "$T/alerts.out" "no dump of pid $PID on the alert within 300 s"
}
grep "alert GhcLongGcPause: pid $PID:" "$T/serve.err" | head -n 1 | sed 's/^/# /' >&2
firing() {
    curl -sf --max-time 5 -G "http://127.0.0.1:$PROM_PORT/api/v1/query" \
        --data-urlencode "query=ALERTS{alertname=\"GhcLongGcPause\",alertstate=\"firing\",pid=\"$PID\",program=\"pauses\"}" \
        -o "$T/alerts.json" && grep -q '"result":\[{' "$T/alerts.json"
}
wait_until 30 firing || fail "prometheus does not hold GhcLongGcPause firing for pid $PID: $(cat "$T/alerts.json")"

show_events "$D" "$T/dump.show" || fail "ghc-events cannot parse the dump $D"
read -r n_pauses max_ns < <(awk '
    /^ *[0-9]+: cap [0-9]+: starting GC$/ { s[$3] = $1 + 0 }
    /^ *[0-9]+: cap [0-9]+: finished GC$/ { if ($3 in s) { p = $1 - s[$3]; n++; if (p > m) m = p } }
    END { printf "%d %d\n", n, m }' "$T/dump.show")
note "the dump: $(stat -c %s "$D") bytes, $n_pauses GC pauses, the longest $max_ns ns"
"$PYTHON" -c 'import sys; sys.exit(0 if int(sys.argv[1]) > float(sys.argv[2]) * 1e9 else 1)' \
    "$max_ns" "$THRESHOLD" || fail "the dump's longest GC pause is $max_ns ns, not over the rule's $THRESHOLD s"
check_readers_accept dump "$D"

# --- Alertmanager's repeats meet the cooldown --------------------------------
cooled() { grep -q "alert GhcLongGcPause: pid $PID: no dump, cooldown" "$T/serve.err"; }
wait_until 120 cooled || fail_showing "$T/serve.err" "no repeat of the alert reached serve within 120 s"
[ "$(dumps app)" -eq 1 ] || fail "the recorder wrote $(dumps app) dumps within serve's cooldown, expected 1"
note "$(grep -c "pid $PID: no dump, cooldown" "$T/serve.err") repeats met the cooldown; one dump"

stop_controlled
wait_pid "$PID" 60 || fail_showing "$T/app.prog.err" "the program did not exit cleanly"
kill -TERM "$spid"
wait_pid "$spid" 30 || fail_showing "$T/serve.err" "serve --all did not exit 0 on SIGTERM"
echo "PASS: $els_test_name"
