#!/usr/bin/env bash
# test_alert_webhook.sh: serve --all's webhook for Alertmanager (POST
# /api/alertmanager, tools/serve/alert.c) driven directly with curl, the
# way Alertmanager posts, against a real GHC program (tests/programs/Trigger.hs
# pauses, with its eventlog to a unix: sink serve follows and to a ring:
# flight recorder with a control socket, both from one +RTS
# --eventlog-sink list), in a discovery directory of the test's own.
#
#   refused, nothing dumped: no token, a wrong one, the right one as
#     Basic instead of Bearer (401, as for every route of serve); GET
#     (405); a body that is not JSON
#     by its Content-Type (415), malformed JSON, a version other than "4",
#     an alert without labels (400); a body over 256 KiB, with and
#     without "Expect: 100-continue", and one with more values than the
#     reader takes (413); and serve --all without --control (403, with
#     the token);
#   a resolved alert: 200, "resolved", nothing dumped;
#   an unknown pid and a program name nobody has: 200, "unknown-program",
#     beside a firing alert of the program in the same batch, which is
#     dumped: the answer's file is the recorder's new dump, its size the
#     file's, and the dump passes ghc-events and ThreadScope's rule;
#     serve says so on stderr;
#   the same alert again, 4 s later, and one naming the program by name:
#     "cooldown", no second dump (--dump-cooldown 3600 is seconds);
#   a pid of the wrong program name: "unknown-program";
#   a flood of 100 alerts: 64 looked at, 36 counted as skipped;
#   keep-alive: Alertmanager's next batch on the same connection;
#   a full cooldown table (256 programs within their cooldown, 255 of
#     them tests/programs/Busy.hs with a recorder, dumped and gone): the next
#     program is "over-limit" and not dumped, and the app's cooldown holds;
#   a recorder with max-dumps=2 under --dump-cooldown 2: dumped,
#     "cooldown", dumped once the cooldown ended (not before 2 s), then
#     "failed" twice with the recorder's ELS_ELIMIT reason, two files.
# Skips without curl, python3, GHC, ghc-events or the patched RTS.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"
. "$(dirname "$0")/../ghcprog.sh"
. "$(dirname "$0")/../monitor/monitor.sh"

alert_setup
command -v "$PYTHON" >/dev/null 2>&1 || skip "python3 not installed"
deadline_set 900

# alert STATUS LABELS: one alert as Alertmanager writes it.
alert() {
    printf '{"status":"%s","labels":{%s},"annotations":{"summary":"s"},"startsAt":"2026-01-01T00:00:00Z","endsAt":"0001-01-01T00:00:00Z","generatorURL":"http://p/graph","fingerprint":"0f"}' "$1" "$2"
}
# body FILE ALERT...: a webhook of those alerts into FILE.
body() {
    local f=$1 IFS=,
    shift
    printf '{"receiver":"eventlog-sink","status":"firing","alerts":[%s],"groupLabels":{},"commonLabels":{},"commonAnnotations":{},"externalURL":"http://am","version":"4","groupKey":"{}","truncatedAlerts":0}' "$*" >"$f"
}
# post FILE [CURL-ARGS...]: POST FILE as JSON with the token (AUTH, if
# set, is the Authorization field's value instead, "" for none; CTYPE
# the Content-Type's); the status in CODE, the answer in $T/answer.
post() {
    local f=$1 auth=("Authorization: Bearer $TOKEN")
    shift
    if [ -n "${AUTH+set}" ]; then
        auth=()
        [ -z "$AUTH" ] || auth=("Authorization: $AUTH")
    fi
    CODE=$(curl -s --max-time 120 -o "$T/answer" -w '%{http_code}' \
        -H "Content-Type: ${CTYPE:-application/json}" ${auth[@]+-H "${auth[@]}"} \
        "$@" --data-binary "@$f" "$URL") || CODE=curl-failed
}
# answer EXPR: EXPR of the JSON answer a (Python), printed.
answer() {
    "$PYTHON" -c 'import json, sys; a = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
        "$T/answer" "$1"
}
expect_code() {
    [ "$CODE" = "$1" ] || fail "$2: HTTP $CODE, expected $1: $(head -c 400 "$T/answer")"
}
no_dump() {
    [ "$(dumps app)" -eq "${2:-0}" ] || fail "$1: the recorder wrote $(dumps app) dumps, expected ${2:-0}"
}

# --- Without --control: no webhook ---------------------------------------
start_serve_all
printf '{"version":"4","alerts":[]}' >"$T/empty.json"
CODE=$(curl -s -o "$T/answer" -w '%{http_code}' -H 'Content-Type: application/json' \
    -H "Authorization: Bearer $TOKEN" --data-binary "@$T/empty.json" \
    "http://127.0.0.1:$PORT/api/alertmanager")
expect_code 403 "serve --all without --control"
grep -q "alerts are off" "$T/answer" || fail "without --control: $(cat "$T/answer")"
kill -TERM "$spid"
wait_pid "$spid" 30 || fail_showing "$T/serve.err" "serve --all did not exit 0"

start_serve_all_control --dump-cooldown 3600
start_pauses app
PID=$ppid
URL=http://127.0.0.1:$PORT/api/alertmanager

LABELS="\"alertname\":\"GhcLongGcPause\",\"job\":\"ghc\",\"instance\":\"127.0.0.1:$PORT\",\"pid\":\"$PID\",\"program\":\"pauses\""
body "$T/firing.json" "$(alert firing "$LABELS")"

# --- Refusals: nothing dumped -------------------------------------------
AUTH='' post "$T/firing.json"
expect_code 401 "no token"
grep -q "Authorization: Bearer" "$T/answer" || fail "no token: the 401 does not say what is needed: $(cat "$T/answer")"
AUTH="Bearer x$TOKEN" post "$T/firing.json"
expect_code 401 "a wrong token"
AUTH="Basic $TOKEN" post "$T/firing.json"
expect_code 401 "the token as Basic"
CODE=$(curl -s -o "$T/answer" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "$URL")
expect_code 405 "GET"
CTYPE=text/plain post "$T/firing.json"
expect_code 415 "Content-Type text/plain"
printf '{"version":"4","alerts":[{"status":"firing","labels":{"pid":"%s"}},]}' "$PID" >"$T/bad.json"
post "$T/bad.json"
expect_code 400 "malformed JSON (a trailing comma)"
grep -q "malformed JSON at byte" "$T/answer" || fail "malformed JSON: the 400 does not say where: $(cat "$T/answer")"
sed 's/"version":"4"/"version":"3"/' "$T/firing.json" >"$T/v3.json"
post "$T/v3.json"
expect_code 400 "version 3"
printf '{"version":"4","alerts":[{"status":"firing"}]}' >"$T/nolabels.json"
post "$T/nolabels.json"
expect_code 400 "an alert without labels"
"$PYTHON" -c 'import sys; sys.stdout.write("{\"version\":\"4\",\"alerts\":[" + ",".join(["{}"] * 20000) + "]}")' >"$T/values.json"
post "$T/values.json"
expect_code 413 "20000 values"
"$PYTHON" -c 'import sys; sys.stdout.write("{\"version\":\"4\",\"alerts\":[],\"pad\":\"" + "x" * 300000 + "\"}")' >"$T/huge.json"
post "$T/huge.json" -H 'Expect:'
expect_code 413 "a 300 KB body"
post "$T/huge.json" -H 'Expect: 100-continue'
expect_code 413 "a 300 KB body with Expect: 100-continue"
no_dump "after the refusals"
note "refused: no token, wrong token, Basic (401), GET (405), text/plain (415), malformed, v3, no labels (400), 20000 values, 300 KB (413)"

# --- A batch: resolved, unknown, and the program's firing alert ---------
body "$T/resolved.json" "$(alert resolved "$LABELS")"
post "$T/resolved.json"
expect_code 200 "a resolved alert"
[ "$(answer 'a["alerts"][0]["outcome"]')" = resolved ] || fail "resolved: $(cat "$T/answer")"
no_dump "a resolved alert"
body "$T/batch.json" \
    "$(alert firing '"alertname":"X","pid":"4194999"')" \
    "$(alert firing '"alertname":"Y","program":"nobody-has-this-name"')" \
    "$(alert firing '"alertname":"Z","severity":"page"')" \
    "$(alert firing "$LABELS")"
post "$T/batch.json"
dumped_at=$(date +%s.%N)
expect_code 200 "a batch with unknown programs"
read -r o0 o1 o2 o3 < <(answer '" ".join(x["outcome"] for x in a["alerts"])')
[ "$o0 $o1 $o2 $o3" = "unknown-program unknown-program no-target dumped" ] \
    || fail "batch: outcomes $o0 $o1 $o2 $o3: $(cat "$T/answer")"
[ "$(dumps app)" -eq 1 ] || fail "batch: $(dumps app) dumps, expected 1"
D=$T/app.rec.1.eventlog
file=$(answer 'a["alerts"][3]["programs"][0]["file"]')
size=$(answer 'a["alerts"][3]["programs"][0]["size"]')
[ "$file" = "$D" ] || fail "the answer names $file, the dump is $D"
[ "$size" = "$(stat -c %s "$D")" ] || fail "the answer says $size bytes, $D has $(stat -c %s "$D")"
[ "$(answer 'a["dumped"]')" = 1 ] || fail "the answer counts $(answer 'a["dumped"]') dumps"
grep -q "alert GhcLongGcPause: pid $PID: $D ($size bytes)" "$T/serve.err" \
    || fail_showing "$T/serve.err" "serve did not say on stderr what it dumped"
show_events "$D" "$T/dump.show" || fail "ghc-events cannot parse the dump $D"
grep -q 'tick [0-9]' "$T/dump.show" || fail "the dump holds none of the program's ticks"
check_readers_accept dump "$D"
note "batch: $(answer 'a["alerts"][0]["error"]'); dumped $file ($size bytes)"

# --- The cooldown: no second dump ----------------------------------------
# --dump-cooldown 3600 is seconds: the same alert 4 s after the dump (more
# than 3600 ms, far less than 3600 s) is still in it.  The wait is a
# lower bound only; a slow machine waits longer, which changes nothing.
long_after_dump() {
    "$PYTHON" -c 'import sys, time; sys.exit(0 if time.time() - float(sys.argv[1]) >= 4 else 1)' "$dumped_at"
}
wait_until 30 long_after_dump || fail "the clock did not pass 4 s"
post "$T/firing.json"
expect_code 200 "the alert again"
[ "$(answer 'a["alerts"][0]["outcome"]')" = cooldown ] \
    || fail "the alert again 4 s after its dump, --dump-cooldown 3600: $(cat "$T/answer")"
read -r cd_s left < <(answer '"%s %s" % (a["cooldown_s"], a["alerts"][0]["programs"][0]["cooldown_left_s"])')
[ "$cd_s" = 3600.0 ] || fail "--dump-cooldown 3600: the answer says a cooldown of $cd_s s"
"$PYTHON" -c 'import sys; sys.exit(0 if 3000 < float(sys.argv[1]) <= 3596 else 1)' "$left" \
    || fail "4 s into a 3600 s cooldown the answer says $left s left"
body "$T/byname.json" "$(alert firing '"alertname":"GhcHeapGrowing","program":"pauses"')"
post "$T/byname.json"
expect_code 200 "by name"
[ "$(answer '"%s %s" % (a["alerts"][0]["programs"][0]["pid"], a["alerts"][0]["outcome"])')" = "$PID cooldown" ] \
    || fail "by name: $(cat "$T/answer")"
body "$T/other.json" "$(alert firing "\"pid\":\"$PID\",\"program\":\"other\"")"
post "$T/other.json"
expect_code 200 "a pid of another name"
[ "$(answer 'a["alerts"][0]["outcome"]')" = unknown-program ] || fail "pid of another name: $(cat "$T/answer")"
no_dump "within the cooldown" 1

# --- A flood -------------------------------------------------------------
alerts=()
for i in $(seq 1 100); do alerts+=("$(alert firing "\"alertname\":\"F$i\",\"pid\":\"$PID\"")"); done
body "$T/flood.json" "${alerts[@]}"
post "$T/flood.json"
expect_code 200 "100 alerts"
read -r rec han skp n < <(answer '"%d %d %d %d" % (a["received"], a["handled"], a["skipped"], len(a["alerts"]))')
[ "$rec $han $skp $n" = "100 64 36 64" ] || fail "flood: received/handled/skipped/listed $rec $han $skp $n"
no_dump "after the flood" 1

# --- Keep-alive: two batches on one connection ---------------------------
CODE=$(curl -s --max-time 30 -o "$T/answer" -w '%{http_code} %{num_connects}\n' \
    -H 'Content-Type: application/json' -H "Authorization: Bearer $TOKEN" \
    --data-binary "@$T/resolved.json" "$URL" --next -o "$T/answer2" \
    -w '%{http_code} %{num_connects}\n' \
    -H 'Content-Type: application/json' -H "Authorization: Bearer $TOKEN" \
    --data-binary "@$T/resolved.json" "$URL" | tr '\n' ' ')
[ "$CODE" = "200 1 200 0 " ] || fail "two batches on one connection: $CODE"

no_dump "at the end" 1

# --- A full cooldown table refuses ------------------------------------------
# serve keeps the cooldowns of 256 programs.  The app's is one; 255 more
# programs (tests/programs/Busy.hs with a recorder, 32 at a time) are dumped
# one alert each and exit, their cooldowns (3600 s) kept.  The next
# program is then refused ("over-limit") and not dumped, and none of the
# programs kept is forgotten: the app is still in its cooldown.
build_ghc_program busy Busy patched_ghc_lib -threaded -eventlog -rtsopts
FLEET_PROG=$GHC_PROGRAM
# fleet_start FIRST LAST: programs fFIRST..fLAST, each with a ring: recorder
# ($T/fI.eventlog, control socket $T/fI.sock), all reading one FIFO
# (fleet_fd) whose closing ends them; pids in fleet_pid[I].
declare -a fleet_pid
fleet_start() {
    local i
    rm -f "$T/fleet.in"
    mkfifo "$T/fleet.in" || fail "mkfifo $T/fleet.in"
    for i in $(seq "$1" "$2"); do
        "$FLEET_PROG" 1 +RTS -N1 -I0 \
            "--eventlog-sink=ring:$T/f$i.eventlog?size=3M&at-exit=0&control=unix:$T/f$i.sock" \
            -RTS <"$T/fleet.in" >"$T/f$i.out" 2>"$T/f$i.err" &
        fleet_pid[i]=$!
        bg_register "$!"
    done
    exec {fleet_fd}>"$T/fleet.in"
    for i in $(seq "$1" "$2"); do
        wait_until 120 grep -qx ready "$T/f$i.out" || fail_showing "$T/f$i.err" "fleet program $i did not start"
    done
}
# fleet_stop FIRST LAST: end them.
fleet_stop() {
    local i
    exec {fleet_fd}>&-
    for i in $(seq "$1" "$2"); do
        wait_pid "${fleet_pid[i]}" 60 || fail_showing "$T/f$i.err" "fleet program $i did not exit cleanly"
    done
}
# fleet_alert FIRST LAST: one request with an alert for each of them.
fleet_alert() {
    local i alerts=()
    for i in $(seq "$1" "$2"); do
        alerts+=("$(alert firing "\"alertname\":\"Fleet\",\"pid\":\"${fleet_pid[i]}\"")")
    done
    body "$T/fleet.json" "${alerts[@]}"
    post "$T/fleet.json"
    expect_code 200 "alerts for programs $1-$2"
}
first=1
while [ "$first" -le 255 ]; do
    last=$((first + 31 > 255 ? 255 : first + 31))
    fleet_start "$first" "$last"
    for from in $(seq "$first" 8 "$last"); do
        to=$((from + 7 > last ? last : from + 7))
        fleet_alert "$from" "$to"
        [ "$(answer 'a["dumped"]')" = $((to - from + 1)) ] \
            || fail "programs $from-$to: $(answer 'a["dumped"]') dumped: $(head -c 600 "$T/answer")"
    done
    fleet_stop "$first" "$last"
    first=$((last + 1))
done
for i in $(seq 1 255); do
    [ -e "$T/f$i.1.eventlog" ] || fail "fleet program $i was answered dumped and has no dump"
done
note "255 programs dumped: serve holds 256 cooldowns"
fleet_start 256 256
fleet_alert 256 256
[ "$(answer 'a["alerts"][0]["outcome"]')" = over-limit ] \
    || fail "the 257th program in a full cooldown table: $(cat "$T/answer")"
answer 'a["alerts"][0]["programs"][0]["error"]' | grep -q "256 programs are in their cooldown" \
    || fail "the over-limit answer does not say why: $(cat "$T/answer")"
[ ! -e "$T/f256.1.eventlog" ] || fail "a full cooldown table let the 257th program be dumped"
post "$T/firing.json"
expect_code 200 "the app's alert with a full table"
[ "$(answer 'a["alerts"][0]["outcome"]')" = cooldown ] \
    || fail "a full cooldown table forgot the app's cooldown: $(cat "$T/answer")"
no_dump "with a full cooldown table" 1
fleet_stop 256 256
note "the 257th program: over-limit, not dumped; the app still in its cooldown"

stop_controlled
wait_pid "$PID" 60 || fail_showing "$T/app.prog.err" "the program did not exit cleanly"
kill -TERM "$spid"
wait_pid "$spid" 30 || fail_showing "$T/serve.err" "serve --all did not exit 0 on SIGTERM"

# --- max-dumps= and a short cooldown ------------------------------------------
# A recorder with max-dumps=2 under --dump-cooldown 2: the first alert
# dumps; the same alert at once is in the cooldown; after it (2 s, read
# from the answers' own cooldown_left_s reaching its end) the next alert
# dumps; then the recorder refuses: the third and fourth alerts fail
# with its reason, and no file is added.
start_serve_all_control --dump-cooldown 2
URL=http://127.0.0.1:$PORT/api/alertmanager
start_controlled capped "$FLEET_PROG" 1 +RTS -N1 -I0 \
    "--eventlog-sink=ring:$T/capped.eventlog?size=3M&at-exit=0&max-dumps=2&control=unix:$T/capped.sock" -RTS
wait_output capped ready
body "$T/capped.json" "$(alert firing "\"alertname\":\"Capped\",\"pid\":\"$ppid\"")"
capped_dumps() { ls "$T" | grep -c '^capped\.[0-9]*\.eventlog$'; }
# alert_outcome: post the capped program's alert; its outcome in outcome.
alert_outcome() {
    post "$T/capped.json"
    expect_code 200 "the capped program's alert"
    outcome=$(answer 'a["alerts"][0]["outcome"]')
}
# The cooldown starts when the dump is made, while the first alert is
# answered: the time is taken before it is sent.
sent_at=$(date +%s.%N)
alert_outcome
[ "$outcome" = dumped ] || fail "max-dumps=2, alert 1: $(cat "$T/answer")"
alert_outcome
[ "$outcome" = cooldown ] || fail "--dump-cooldown 2, the alert at once: $(cat "$T/answer")"
"$PYTHON" -c 'import sys; sys.exit(0 if 0 < float(sys.argv[1]) <= 2 else 1)' \
    "$(answer 'a["alerts"][0]["programs"][0]["cooldown_left_s"]')" \
    || fail "--dump-cooldown 2: $(answer 'a["alerts"][0]["programs"][0]["cooldown_left_s"]') s left"
# past_cooldown: post until the alert is no longer in the cooldown.
past_cooldown() { alert_outcome; [ "$outcome" != cooldown ]; }
wait_until 60 past_cooldown || fail "--dump-cooldown 2 never ended: $(cat "$T/answer")"
"$PYTHON" -c 'import sys, time; sys.exit(0 if time.time() - float(sys.argv[1]) >= 2 else 1)' "$sent_at" \
    || fail "--dump-cooldown 2 ended less than 2 s after the dump"
[ "$outcome" = dumped ] || fail "max-dumps=2, alert 2: $(cat "$T/answer")"
[ "$(capped_dumps)" -eq 2 ] || fail "max-dumps=2: $(capped_dumps) dumps after two"
for k in 3 4; do
    wait_until 60 past_cooldown || fail "--dump-cooldown 2 never ended: $(cat "$T/answer")"
    [ "$outcome" = failed ] || fail "max-dumps=2, alert $k: $outcome, expected failed: $(cat "$T/answer")"
    answer 'a["alerts"][0]["programs"][0]["error"]' \
        | grep -q "ELS_ELIMIT: max-dumps=2 reached: 2 dumps written, no more" \
        || fail "max-dumps=2, alert $k: the failure does not say why: $(cat "$T/answer")"
done
[ "$(capped_dumps)" -eq 2 ] || fail "max-dumps=2: four alerts wrote $(capped_dumps) dumps"
grep -q "alert Capped: pid $ppid: ELS_ELIMIT: max-dumps=2 reached" "$T/serve.err" \
    || fail_showing "$T/serve.err" "serve does not say on stderr why the recorder wrote no dump"
stop_controlled
wait_pid "$ppid" 60 || fail_showing "$T/capped.prog.err" "the capped program did not exit cleanly"
grep -q "dumps: 2 written, 0 failed (no file left), 2 refused past max-dumps=" "$T/capped.prog.err" \
    || fail_showing "$T/capped.prog.err" "the capped program does not count the refusals"
note "max-dumps=2, --dump-cooldown 2: dumped, cooldown, dumped, failed, failed: $(answer 'a["alerts"][0]["programs"][0]["error"]')"
kill -TERM "$spid"
wait_pid "$spid" 30 || fail_showing "$T/serve.err" "serve --all did not exit 0 on SIGTERM"
echo "PASS: $els_test_name"
