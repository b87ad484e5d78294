#!/usr/bin/env bash
# test_serve_all.sh: one `eventlog-sink serve --all` for every program on
# the host, scraped by a real Prometheus (README, "A fleet: one serve
# --all per host").
#
# In a discovery directory of the test's own (XDG_RUNTIME_DIR), serve
# --all starts first, with no program; Prometheus (Debian package,
# started here on loopback with a generated configuration, 1 s scrape
# interval, its own data directory) scrapes its /metrics with serve's
# token (authorization.credentials_file): up; a second job without the
# token is down, its scrapes answered 401.  Then three
# copies of tests/programs/Busy.hs named alpha, beta and gamma start, each on
# its own unix: sink, and serve follows them without a restart.
# Checked: `promtool check metrics` passes /metrics with the three
# programs (each metric family once); through Prometheus' query API,
# each program's ghc_gc_collections_total (and the index's count),
# labelled with its name and pid and
# scraped after it went idle, equals the collections ghc-events shows in the
# stream serve read (its --save-dir copy); headless Chromium, opening
# the start-up line's URL (?token=, traded for a cookie), shows the
# index page listing the three with links to their pages, and a
# program's page (/p/PID/?token=...) is left at /p/PID/ and shows that
# program live through the same
# script as single-program serve (relative URLs); after beta exits its
# series leave /metrics and Prometheus' instant query finds none, while
# alpha and gamma stay.  Last, a program that floods its sink and exits
# (tests/programs/Flood.hs: its announcement goes while its sink still holds
# megabytes for serve) loses nothing: its sink reports no drop and
# serve's copy of its stream runs to the end marker and parses.  --save-dir
# gives each run a file of its own (DIR/NAME.PID.N.eventlog): a program
# that restarts its eventlog three times leaves four whole runs, the
# first still holding its work, and symlinks planted at its save names
# (in a directory others could write) are neither written through nor
# replaced.  Skips without prometheus, promtool, curl, python3, chromium,
# GHC, ghc-events or the patched RTS.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"
. "$(dirname "$0")/../ghcprog.sh"
. "$(dirname "$0")/../monitor/monitor.sh"

require_prometheus
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[ -n "$CHROMIUM" ] || skip "chromium not installed (scripts/install-deps.sh)"
command -v curl >/dev/null 2>&1 || skip "curl not installed"
command -v python3 >/dev/null 2>&1 || skip "python3 not installed"
monitor_setup
deadline_set 300
export XDG_RUNTIME_DIR=$T/run
mkdir -m 700 "$XDG_RUNTIME_DIR"
mkdir "$T/saved"
NAMES="alpha beta gamma"
for n in $NAMES; do
    cp "$BUSY" "$T/$n" || fail "cannot copy $BUSY"
done

start_serve_all --save-dir "$T/saved"

start_prometheus "$PORT"

# start NAME: NAME runs 2 phases on a unix: sink at $T/NAME.sock (waiting
# for its consumer: serve), then waits on its stdin (a FIFO held open on
# fd in_NAME; the later programs do not inherit it, so that closing it
# is the end of the program's input).
OPEN_FDS=
start() {
    local n=$1 fd
    mkfifo "$T/$n.in"
    (
        for fd in $OPEN_FDS; do eval "exec $fd>&-"; done
        exec "$T/$n" 2 +RTS -N2 -I0 "--eventlog-sink=unix:$T/$n.sock?wait=60" \
            --eventlog-flush-interval=0.2 -RTS <"$T/$n.in" >"$T/$n.out" 2>"$T/$n.err"
    ) &
    eval "pid_$n=\$!"
    bg_register "$!"
    exec {fd}>"$T/$n.in"
    eval "in_$n=\$fd"
    OPEN_FDS="$OPEN_FDS $fd"
}
for n in $NAMES; do start "$n"; done
for n in $NAMES; do
    wait_until 60 grep -qx ready "$T/$n.out" || fail_showing "$T/$n.err" "$n did not start"
done
# shellcheck disable=SC2154
note "alpha $pid_alpha, beta $pid_beta, gamma $pid_gamma"

# all_markers PID: serve's view of the program (its /p/PID/api/state)
# counts the 5 markers of its 2 phases.
all_markers() {
    scurl -sf --max-time 10 "http://127.0.0.1:$PORT/p/$1/api/state" -o "$T/$1.state" &&
        [ "$(json_get "$T/$1.state" user.markers)" -ge 5 ]
}
for n in $NAMES; do
    pid=$(eval echo "\$pid_$n")
    wait_until 60 all_markers "$pid" \
        || fail "$n: serve --all did not see its 5 markers at /p/$pid/api/state: $(head -c 400 "$T/$pid.state" 2>/dev/null)"
done
idle_since=$(date +%s.%N)

scurl -sf --max-time 10 "http://127.0.0.1:$PORT/metrics" -o "$T/all.metrics" \
    || fail "GET /metrics failed"
"$PROMTOOL" check metrics <"$T/all.metrics" >"$T/promtool.out" 2>&1 \
    || fail_showing "$T/promtool.out" "promtool check metrics rejects serve --all's /metrics"
[ "$(grep -c '^# TYPE ghc_gc_collections_total ' "$T/all.metrics")" -eq 1 ] \
    || fail_showing "$T/all.metrics" "ghc_gc_collections_total's TYPE is not there exactly once"
note "promtool passes /metrics: $(grep -c '^ghc_gc_collections_total{' "$T/all.metrics") ghc_gc_collections_total series"

wait_until 120 prom_ready || fail_showing "$T/prometheus.log" "prometheus did not become ready"
# The scrape without the token fails (serve's 401); with it, up.
wait_until 60 prom_refused \
    || fail_showing "$T/targets.json" "prometheus' scrapes are not up with the token and refused (401) without: $(cat "$T/up.json" 2>/dev/null)"
note "prometheus: job eventlog-sink (credentials_file) up; job no-token down: $("$PYTHON" -c '
import json, sys
print([t["lastError"] for t in json.load(open(sys.argv[1]))["data"]["activeTargets"] if t["labels"]["job"] == "no-token"][0])' "$T/targets.json")"
# query EXPR: the instant query's samples as lines "TIMESTAMP VALUE
# PROGRAM PID" into $T/query.out (none: empty).
query() {
    curl -sf --max-time 10 -G "http://127.0.0.1:$PROM_PORT/api/v1/query" \
        --data-urlencode "query=$1" -o "$T/query.json" || return 1
    "$PYTHON" -c '
import json, sys
for r in json.load(open(sys.argv[1]))["data"]["result"]:
    ts, v = r["value"]
    print(ts, v, r["metric"].get("program", "-"), r["metric"].get("pid", "-"))
' "$T/query.json" >"$T/query.out"
}
# scraped_after_idle PID: Prometheus holds the GC collections of PID
# (ghc_gc_collections_total summed over generations) scraped after every
# program went idle.
scraped_after_idle() {
    query "sum by (program, pid) (ghc_gc_collections_total{pid=\"$1\"})" || return 1
    [ -s "$T/query.out" ] || return 1
    "$PYTHON" -c 'import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) else 1)' \
        "$(cut -d' ' -f1 "$T/query.out")" "$idle_since"
}
for n in $NAMES; do
    pid=$(eval echo "\$pid_$n")
    saved=$T/saved/$n.$pid.1.eventlog
    [ -s "$saved" ] || fail "serve --all saved no stream for $n at $saved"
    cp "$saved" "$T/$n.eventlog"
    shown_counts "$T/$n.eventlog" "$n"
    # The index (/api/programs) counts the same collections.
    scurl -sf --max-time 10 "http://127.0.0.1:$PORT/api/programs" -o "$T/programs.json" \
        || fail "GET /api/programs failed"
    index=$("$PYTHON" -c 'import json, sys
print(next(p["gc_collections"] for p in json.load(open(sys.argv[1]))["programs"] if p["pid"] == int(sys.argv[2])))' \
        "$T/programs.json" "$pid") || fail_showing "$T/programs.json" "$n: not in /api/programs"
    [ "$index" = "$SHOWN_GC" ] || fail "$n: the index shows $index GC collections, ghc-events $SHOWN_GC"
    wait_until 60 scraped_after_idle "$pid" \
        || fail_showing "$T/prometheus.log" "$n: prometheus has no ghc_gc_collections_total{pid=\"$pid\"} scraped after idle: $(cat "$T/query.json" 2>/dev/null)"
    read -r _ value program qpid <"$T/query.out"
    note "$n: prometheus ghc_gc_collections_total $value (program $program, pid $qpid); ghc-events $SHOWN_GC"
    [ "$value" = "$SHOWN_GC" ] || fail "$n: prometheus scraped $value GC collections, ghc-events counts $SHOWN_GC"
    [ "$program" = "$n" ] && [ "$qpid" = "$pid" ] \
        || fail "$n: ghc_gc_collections_total labelled program $program pid $qpid (expected $n, $pid)"
done
query 'count(sum by (pid) (ghc_gc_collections_total))' && read -r _ count _ <"$T/query.out"
[ "${count:-0}" = 3 ] || fail "prometheus sees ${count:-no} programs' ghc_gc_collections_total, expected 3"

# --- The index page and a program's page in Chromium -------------------
"$PYTHON" "$ELS_TOP_SRCDIR/tests/monitor/browser.py" "$CHROMIUM" \
    "$SERVE_URL" \
    "document.querySelectorAll('tr.program').length === 3" \
    "Array.from(document.querySelectorAll('tr.program')).map(r => [r.querySelector('a').textContent, r.querySelector('a').getAttribute('href'), r.cells[2].textContent]).sort()" \
    "$T/index.png" 60 >"$T/index.json" 2>"$T/browser.err" \
    || fail_showing "$T/browser.err" "chromium: the index page did not list 3 programs"
got=$("$PYTHON" -c 'import json, sys; print(json.dumps([r[:2] for r in json.load(open(sys.argv[1]))]))' "$T/index.json")
want=$("$PYTHON" -c '
import json, sys
a = sys.argv[1:]
print(json.dumps(sorted([[a[i], "p/%s/" % a[i + 1]] for i in range(0, len(a), 2)])))
' alpha "$pid_alpha" beta "$pid_beta" gamma "$pid_gamma")
[ "$got" = "$want" ] || fail "index page lists $got, expected $want"
note "index page: $(cat "$T/index.json")"
"$PYTHON" "$ELS_TOP_SRCDIR/tests/monitor/browser.py" "$CHROMIUM" \
    "http://127.0.0.1:$PORT/p/$pid_gamma/?token=$TOKEN" \
    "document.getElementById('pid').textContent === '$pid_gamma'" \
    "[document.getElementById('program').textContent, document.getElementById('pid').textContent, location.href]" \
    "$T/gamma.png" 60 >"$T/gamma.json" 2>"$T/browser2.err" \
    || fail_showing "$T/browser2.err" "chromium: gamma's page /p/$pid_gamma/ never showed its pid"
note "gamma's page: $(cat "$T/gamma.json")"
# Without the token; the fragment may hold the timeline's view.
[ "$("$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))[2].split("#t0=")[0])' "$T/gamma.json")" = "http://127.0.0.1:$PORT/p/$pid_gamma/" ] \
    || fail "gamma's page, opened with ?token=, is not at /p/$pid_gamma/ without it: $(cat "$T/gamma.json")"

# --- A program that exits leaves /metrics and Prometheus -----------------
# shellcheck disable=SC2154
exec {in_beta}>&-
wait_pid "$pid_beta" 60 || fail_showing "$T/beta.err" "beta did not exit cleanly"
beta_gone_from_metrics() {
    scurl -sf --max-time 10 "http://127.0.0.1:$PORT/metrics" -o "$T/after.metrics" &&
        ! grep -q "pid=\"$pid_beta\"" "$T/after.metrics"
}
wait_until 30 beta_gone_from_metrics \
    || fail_showing "$T/after.metrics" "beta ($pid_beta) exited but its series stay in /metrics"
for n in alpha gamma; do
    grep -q "^ghc_gc_collections_total{program=\"$n\"" "$T/after.metrics" \
        || fail_showing "$T/after.metrics" "$n left /metrics when beta exited"
done
beta_gone_from_prometheus() {
    query "ghc_gc_collections_total{pid=\"$pid_beta\"}" && [ ! -s "$T/query.out" ]
}
wait_until 30 beta_gone_from_prometheus \
    || fail "prometheus still finds beta's series: $(cat "$T/query.json")"
query 'count(sum by (pid) (ghc_gc_collections_total))' && read -r _ count _ <"$T/query.out"
[ "${count:-0}" = 2 ] || fail "after beta exited prometheus sees ${count:-no} programs' ghc_gc_collections_total, expected 2"
"$PROMTOOL" check metrics <"$T/after.metrics" >"$T/promtool2.out" 2>&1 \
    || fail_showing "$T/promtool2.out" "promtool check metrics rejects /metrics after beta exited"
note "beta gone: /metrics and prometheus hold alpha and gamma only"

# shellcheck disable=SC2154
exec {in_alpha}>&- {in_gamma}>&-
wait_pid "$pid_alpha" 60 || fail "alpha did not exit cleanly"
wait_pid "$pid_gamma" 60 || fail "gamma did not exit cleanly"
# --- A program leaving with a backlog -------------------------------------
# Its announcement goes when it stops, before its sink has sent the last
# units: serve reads the stream to its end all the same (Note [A program
# leaving]).
build_ghc_program flood Flood patched_ghc_lib -threaded -eventlog -rtsopts
"$GHC_PROGRAM" 1000000 +RTS -N2 "--eventlog-sink=unix:$T/flood.sock?wait=60" -RTS \
    >"$T/flood.out" 2>"$T/flood.err" || fail_showing "$T/flood.err" "the flooding program failed"
! grep -q 'dropped' "$T/flood.err" \
    || fail_showing "$T/flood.err" "serve --all left a program's stream before its end: its sink dropped units"
flood_saved() {
    set -- "$T"/saved/flood.*.eventlog
    [ -e "$1" ] && [ "$(tail -c 2 "$1" | od -An -tx1 | tr -d ' ')" = ffff ]
}
wait_until 30 flood_saved || fail "serve's copy of the flooding program's stream lacks the end marker"
set -- "$T"/saved/flood.*.eventlog
show_events "$1" "$T/flood.show" || fail "ghc-events cannot parse serve's copy of the flooding program's stream"
flood_msgs=$(grep -c ': flood [0-3] ' "$T/flood.show")
[ "$flood_msgs" -eq 1000000 ] || fail "serve's copy of the flood holds $flood_msgs of its 1000000 messages"
note "flood: all 1000000 messages in serve's copy, nothing dropped"

# --- --save-dir: a file per run, never through a planted name ------------------
# saver restarts its eventlog three times (ctl restart): four runs, each
# copied whole to a file of its own, the first still holding the
# program's work at the end.  Before the program announces itself,
# symlinks to a victim file sit at its save names (the pid is known:
# the shell that plants them execs the program): serve writes through
# neither and numbers the runs past them.
cp "$BUSY" "$T/saver" || fail "cannot copy $BUSY"
printf 'victim\n' >"$T/victim"
mkfifo "$T/saver.in"
(
    for fd in $OPEN_FDS; do eval "exec $fd>&-"; done
    # shellcheck disable=SC2016
    exec sh -c 'ln -s "$1" "$2/saver.$$.eventlog" && ln -s "$1" "$2/saver.$$.1.eventlog" &&
        exec "$3" 2 +RTS -N2 -I0 "--eventlog-sink=unix:$4?wait=60&control=1" \
            --eventlog-flush-interval=0.2 -RTS' \
        sh "$T/victim" "$T/saved" "$T/saver" "$T/saver.sock" \
        <"$T/saver.in" >"$T/saver.out" 2>"$T/saver.err"
) &
pid_saver=$!
bg_register "$pid_saver"
exec {in_saver}>"$T/saver.in"
wait_until 60 grep -qx ready "$T/saver.out" || fail_showing "$T/saver.err" "saver did not start"
wait_until 60 all_markers "$pid_saver" || fail "saver: serve --all did not see its markers"
# run_saved K: serve's copy of run K (file K+1: the first name is
# planted) exists and holds the start of a stream.
run_saved() {
    [ -s "$T/saved/saver.$pid_saver.$(($1 + 1)).eventlog" ]
}
wait_until 30 run_saved 1 || fail "serve --all saved no first run of saver: $(ls "$T/saved")"
for k in 2 3 4; do
    "$ELS_SINK_TOOL" ctl "unix:$T/saver.sock" restart >"$T/restart.out" 2>&1 \
        || fail_showing "$T/restart.out" "restart $((k - 1)) of saver failed"
    wait_until 30 run_saved "$k" \
        || fail "after restart $((k - 1)), serve --all saved no run $k of saver: $(ls "$T/saved")"
done
exec {in_saver}>&-
wait_pid "$pid_saver" 60 || fail_showing "$T/saver.err" "saver did not exit cleanly"
ends_stream() {
    [ "$(tail -c 2 "$1" | od -An -tx1 | tr -d ' \n')" = ffff ]
}
wait_until 30 ends_stream "$T/saved/saver.$pid_saver.5.eventlog" \
    || fail "serve's copy of saver's last run lacks the end marker"
for k in 1 2 3 4; do
    f=$T/saved/saver.$pid_saver.$((k + 1)).eventlog
    [ -f "$f" ] && [ ! -L "$f" ] || fail "run $k of saver: $f is not a file of serve's"
    ends_stream "$f" || fail "run $k of saver: $f lacks the end marker"
    show_events "$f" "$T/saver.$k.show" || fail "run $k of saver: ghc-events cannot parse $f"
done
grep -q 'marker: work done' "$T/saver.1.show" \
    || fail "saver's first run lost its work: a later run overwrote it"
! grep -q 'marker: work done' "$T/saver.4.show" \
    || fail "saver's last run holds the first run's work"
[ "$(cat "$T/victim")" = victim ] || fail "serve --all wrote through a planted symlink: the victim holds $(head -c 100 "$T/victim")"
[ -L "$T/saved/saver.$pid_saver.1.eventlog" ] && [ -L "$T/saved/saver.$pid_saver.eventlog" ] \
    || fail "serve --all replaced a planted symlink"
[ ! -e "$T/saved/saver.$pid_saver.6.eventlog" ] || fail "serve --all saved a fifth run of saver"
note "saver: 4 runs in saver.$pid_saver.2-5.eventlog, the planted symlinks left alone"

kill -TERM "$spid"
wait_pid "$spid" 30 || fail_showing "$T/serve.err" "serve --all did not exit 0 on SIGTERM"
echo "PASS: $els_test_name"
