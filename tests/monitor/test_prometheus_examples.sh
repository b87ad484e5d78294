#!/usr/bin/env bash
# test_prometheus_examples.sh: examples/prometheus/ (README, "A fleet:
# one serve --all per host") is what Prometheus and Alertmanager take:
# `promtool check config prometheus.yml` (which reads rules.yml beside
# it, and the token file its scrape names: a copy names one of the
# test's), `promtool check rules rules.yml`, `promtool test rules
# rules_test.yml` (each rule fires for the program that calls for it,
# and only then), `amtool check-config alertmanager.yml`; and every
# metric the rules name is one `serve` really exports: its /metrics,
# serving a real GHC eventlog (tests/data/ghc-9.0.2-N2.eventlog), has
# each name (up aside, which Prometheus makes).  Skips without
# promtool, amtool (Debian's prometheus and prometheus-alertmanager) or
# curl.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"
. "$(dirname "$0")/../monitor/monitor.sh"

require_tool
require_prometheus
require_alertmanager
[ -n "$AMTOOL" ] || skip "amtool not installed (Debian package prometheus-alertmanager)"
command -v curl >/dev/null 2>&1 || skip "curl not installed"
make_tmpdir
T=$ELS_TMP
EX=$ELS_TOP_SRCDIR/examples/prometheus

# promtool checks that the scrape's credentials_file exists: a copy
# beside rules.yml names a token file of the test's.
grep -q '^      credentials_file: /etc/eventlog-sink/prometheus.token$' "$EX/prometheus.yml" \
    || fail_showing "$EX/prometheus.yml" "prometheus.yml does not scrape with serve's token (authorization.credentials_file)"
cp "$EX/prometheus.yml" "$EX/rules.yml" "$T/" || fail "cannot copy the examples"
(umask 077 && printf 'example-token-0123456789abcdefghijklmnop\n' >"$T/prometheus.token") \
    || fail "cannot write $T/prometheus.token"
sed -i "s|/etc/eventlog-sink/prometheus.token|$T/prometheus.token|" "$T/prometheus.yml"
"$PROMTOOL" check config "$T/prometheus.yml" >"$T/config.out" 2>&1 \
    || fail_showing "$T/config.out" "promtool check config rejects prometheus.yml"
"$PROMTOOL" check rules "$EX/rules.yml" >"$T/rules.out" 2>&1 \
    || fail_showing "$T/rules.out" "promtool check rules rejects rules.yml"
"$PROMTOOL" test rules "$EX/rules_test.yml" >"$T/test.out" 2>&1 \
    || fail_showing "$T/test.out" "promtool test rules: rules_test.yml fails"
grep -q SUCCESS "$T/test.out" || fail_showing "$T/test.out" "promtool test rules did not say SUCCESS"
"$AMTOOL" check-config "$EX/alertmanager.yml" >"$T/am.out" 2>&1 \
    || fail_showing "$T/am.out" "amtool check-config rejects alertmanager.yml"
note "promtool: $(grep -o 'SUCCESS: [0-9]* rules found' "$T/rules.out"); rules_test.yml passes; amtool accepts alertmanager.yml"

# Every alert of rules.yml is tested in rules_test.yml.
for a in $(sed -n 's/^ *- alert: *\([A-Za-z]*\).*/\1/p' "$EX/rules.yml"); do
    grep -q "alertname: $a\$" "$EX/rules_test.yml" || fail "rules_test.yml does not test $a"
done

# The metric names of the rules' expressions against serve's /metrics.
start_serve file "$ELS_TOP_SRCDIR/tests/data/ghc-9.0.2-N2.eventlog"
has_gcs() {
    scurl -sf --max-time 10 "http://127.0.0.1:$PORT/metrics" -o "$T/metrics" &&
        grep -q '^ghc_gc_collections_total{.*} [1-9]' "$T/metrics"
}
wait_until 30 has_gcs || fail_showing "$T/metrics" "serve's /metrics never counted the file's GCs"
sed -n 's/^# TYPE \([a-z_]*\) .*/\1/p' "$T/metrics" | sort -u >"$T/families"
used=$(grep -E '^ *(expr:|\(|[a-z]|-)' "$EX/rules.yml" | grep -v '^ *#' |
           grep -oE '\b(ghc|eventlog)_[a-z_]+' | sort -u)
[ -n "$used" ] || fail "no metric names found in rules.yml"
for m in $used; do
    base=$(printf '%s\n' "$m" | sed -E 's/_(bucket|sum|count)$//')
    grep -qx "$base" "$T/families" \
        || fail_showing "$T/families" "rules.yml uses $m, which serve's /metrics does not export"
done
note "rules.yml's metrics, all exported: $(printf '%s ' $used)"
kill -TERM "$spid"
wait_pid "$spid" 30 || fail_showing "$T/file.serve.err" "serve did not exit 0 on SIGTERM"
echo "PASS: $els_test_name"
