#!/usr/bin/env bash
# test_serve_auth.sh: `eventlog-sink serve` and `serve --all` show a
# program's data only to whoever holds serve's token (README, "Live
# monitor: top and serve"): the programs' sockets are 0600, and what the
# page, /api and /metrics carry (user messages, thread labels, program
# arguments) must not cross to another user through a loopback port.
#
# A live -N2 program (tests/programs/Busy.hs, its sink with control=1, its
# user messages "work ...") is followed by a serve --control and by a
# serve --all --control (the program announced in a discovery directory
# of the test's own).  For each, every route (page, script, /api/*,
# /metrics, /events, control, the webhook, a program's /p/PID/ routes
# and a pid that does not exist, a path that is nothing) answers a
# request without the token 401, with the same short body everywhere
# that says how to authenticate and holds none of the program's name,
# pid or messages (so it tells nothing of which programs exist), also
# for another unprivileged user (setpriv, when root).  With
# "Authorization: Bearer TOKEN" every read route answers 200; a wrong
# token of the same length (in the Bearer field, X-Eventlog-Sink-Token,
# ?token= or the cookie) gets 401.  A GET of ?token=TOKEN answers 303 to
# the same path and query without the token (a page under /p/PID/ too;
# with control buttons the token only in the fragment), setting an
# HttpOnly, SameSite=Strict, Path=/ cookie without Secure whose value is
# not the token; that cookie alone then reads every route, but is not a
# token (as Bearer it is refused) and does not act (POST /api/control:
# 403).  --public-read (a third and fourth serve) opens the reads to a
# client without anything, warns on its start-up line, and still
# refuses actions and alerts without the token (401).  Skips without
# curl, python3, GHC, ghc-events or the patched RTS.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"
. "$(dirname "$0")/../ghcprog.sh"
. "$(dirname "$0")/../monitor/monitor.sh"

command -v curl >/dev/null 2>&1 || skip "curl not installed"
command -v python3 >/dev/null 2>&1 || skip "python3 not installed"
monitor_setup
export XDG_RUNTIME_DIR=$T/run
mkdir -m 700 "$XDG_RUNTIME_DIR" || fail "mkdir $XDG_RUNTIME_DIR"

# req NAME METHOD PATH [CURL-ARGS...]: one request to serve at PORT;
# CODE its status, $T/NAME.body its body, $T/NAME.head its head.  An
# event stream is cut after 3 s (its status is all that counts).
req() {
    local name=$1 method=$2 path=$3
    shift 3
    local m=(-X "$method")
    [ "$method" = HEAD ] && m=(-I)
    CODE=$(curl -s "${m[@]}" --max-time 3 -D "$T/$name.head" -o "$T/$name.body" \
           -w '%{http_code}' "$@" "http://127.0.0.1:$PORT$path") || true
}

# header NAME FIELD: the value of FIELD in $T/NAME.head ("" if none).
header() {
    tr -d '\r' <"$T/$1.head" | sed -n "s/^$2: *//Ip" | head -n 1
}

# refused_all WHAT METHOD:PATH...: each request without any credential
# gets 401 with the same body as the first, which says how to
# authenticate and holds nothing of the program (the words in SECRETS).
refused_all() {
    local what=$1 mp first= i=0 w
    shift
    for mp in "$@"; do
        i=$((i + 1))
        req "$what-anon-$i" "${mp%%:*}" "${mp#*:}"
        [ "$CODE" = 401 ] || fail_showing "$T/$what-anon-$i.body" "$what: $mp without the token: status $CODE, expected 401"
        [ "${mp%%:*}" = HEAD ] && continue
        if [ -z "$first" ]; then
            first=$T/$what-anon-$i.body
            grep -q "Authorization: Bearer TOKEN" "$first" && grep -q '?token=' "$first" \
                || fail_showing "$first" "$what: the 401 does not say how to authenticate"
            for w in $SECRETS; do
                ! grep -qF -- "$w" "$first" || fail_showing "$first" "$what: the 401 holds '$w'"
            done
        else
            cmp -s "$first" "$T/$what-anon-$i.body" \
                || fail_showing "$T/$what-anon-$i.body" "$what: $mp's 401 differs from $(head -c 200 "$first")"
        fi
    done
    note "$what: $# requests without the token: 401, one body: $(head -c 120 "$first")"
}

# read_all WHAT CURL-ARGS -- PATHS...: each GET PATH with CURL-ARGS
# answers 200.
read_all() {
    local what=$1 args=() p i=0
    shift
    while [ "$1" != -- ]; do args+=("$1"); shift; done
    shift
    for p in "$@"; do
        i=$((i + 1))
        req "$what-$i" GET "$p" "${args[@]}"
        [ "$CODE" = 200 ] || fail_showing "$T/$what-$i.body" "$what: GET $p: status $CODE, expected 200"
    done
}

# wrong_token: TOKEN with its last character changed (the same length).
wrong_token() {
    case $TOKEN in *0) printf '%s1' "${TOKEN%?}" ;; *) printf '%s0' "${TOKEN%?}" ;; esac
}

# login WHAT PATH WANT-LOCATION: GET PATH (with ?token= in it) answers
# 303 to WANT-LOCATION with the session cookie; COOKIE is "NAME=VALUE".
login() {
    local what=$1 path=$2 want=$3 set a
    req "$what" GET "$path"
    [ "$CODE" = 303 ] || fail_showing "$T/$what.head" "$what: GET $path: status $CODE, expected 303"
    [ "$(header "$what" Location)" = "$want" ] \
        || fail_showing "$T/$what.head" "$what: GET $path: Location '$(header "$what" Location)', expected '$want'"
    set=$(header "$what" Set-Cookie)
    COOKIE=${set%%;*}
    [ "${COOKIE%%=*}" = "eventlog-sink-$PORT" ] || fail_showing "$T/$what.head" "$what: cookie '$COOKIE' not named for port $PORT"
    for a in HttpOnly SameSite=Strict Path=/; do
        case "; $set;" in *"; $a;"*) ;; *) fail_showing "$T/$what.head" "$what: the cookie lacks $a: $set" ;; esac
    done
    case "; $set;" in *"; Secure;"*) fail "$what: a Secure cookie over plain http: $set" ;; esac
    case $COOKIE in *"$TOKEN"*) fail "$what: the cookie carries the token: $set" ;; esac
}

# the_cookie_reads WHAT PATHS...: with COOKIE alone each GET PATH
# answers 200; the cookie's value is no token, and one of the same
# length but wrong is refused.
the_cookie_reads() {
    local what=$1 value=${COOKIE#*=} bad
    shift
    read_all "$what-cookie" -H "Cookie: other=1; $COOKIE" -- "$@"
    req "$what-cookie-as-bearer" GET /metrics -H "Authorization: Bearer $value"
    [ "$CODE" = 401 ] || fail "$what: the cookie's value as a Bearer token: status $CODE, expected 401"
    case $value in *0) bad=${value%?}1 ;; *) bad=${value%?}0 ;; esac
    req "$what-cookie-wrong" GET /metrics -H "Cookie: ${COOKIE%%=*}=$bad"
    [ "$CODE" = 401 ] || fail "$what: a wrong cookie of the same length: status $CODE, expected 401"
}

# wrong_tokens_refused WHAT PATH: a wrong token of the same length, in
# each place a token goes, gets 401 for GET PATH, and sets no cookie.
wrong_tokens_refused() {
    local what=$1 path=$2 wrong
    wrong=$(wrong_token)
    req "$what-wrong-bearer" GET "$path" -H "Authorization: Bearer $wrong"
    [ "$CODE" = 401 ] || fail "$what: GET $path with a wrong Bearer token: status $CODE, expected 401"
    req "$what-wrong-field" GET "$path" -H "X-Eventlog-Sink-Token: $wrong"
    [ "$CODE" = 401 ] || fail "$what: GET $path with a wrong X-Eventlog-Sink-Token: status $CODE, expected 401"
    req "$what-wrong-query" GET "$path?token=$wrong"
    [ "$CODE" = 401 ] || fail "$what: GET $path?token=WRONG: status $CODE, expected 401"
    [ -z "$(header "$what-wrong-query" Set-Cookie)" ] || fail "$what: a wrong ?token= set a cookie"
    # The right token beside a wrong one: a wrong one is never ignored.
    req "$what-wrong-both" GET "$path" -H "Authorization: Bearer $TOKEN" -H "X-Eventlog-Sink-Token: $wrong"
    [ "$CODE" = 401 ] || fail "$what: GET $path with a right and a wrong token: status $CODE, expected 401"
}

# other_user WHAT PATH WANT: as an unprivileged user (uid 65534), GET
# PATH without the token answers WANT.
other_user() {
    local got
    part_runs_as "$1 as another user" 65534 || return 0
    got=$(as_user 65534 curl -s --max-time 10 -o /dev/null -w '%{http_code}' \
          "http://127.0.0.1:$PORT$2") || true
    [ "$got" = "$3" ] || fail "$1: another user's GET $2: status $got, expected $3"
    note "$1: another user's GET $2: $got"
}

# --- serve --control, one program ------------------------------------------
start_serve one "unix:$T/p.sock" --control
printf '%s\n' "$TOKEN" | grep -qE '^[0-9a-f]{48}$' \
    || fail_showing "$T/one.serve.err" "no 192-bit token in the start-up URL '$SERVE_URL'"
[ "$SERVE_URL" = "http://127.0.0.1:$PORT/?token=$TOKEN" ] \
    || fail_showing "$T/one.serve.err" "the start-up URL is '$SERVE_URL'"
start_busy_live one 1 "$T/p.sock" control=1
wait_all_markers one 1
pid=$ppid
SECRETS="work busy Busy $pid"
scurl -sf --max-time 10 "http://127.0.0.1:$PORT/api/state" -o "$T/one.state" || fail "GET /api/state with the token failed"
grep -q '"work ' "$T/one.state" || fail_showing "$T/one.state" "the state holds no user message to keep from others"

ONE_READS="/ /index.html /app.js /style.css /api/state /api/timeline?t0=0 /api/speedscope /metrics /api/control /events /zoom.js /api/info /api/events /api/range /api/series?from=0 /api/pauses /api/heap /api/durations /api/spans /api/profile /pauses.js /durations.js /heap.js /flame.js"
anon=()
for p in $ONE_READS /nothing-here; do anon+=("GET:$p"); done
anon+=("HEAD:/" "HEAD:/metrics" "POST:/api/control?cmd=status" "POST:/api/control?cmd=stop"
       "POST:/api/state" "POST:/api/control?cmd=status&token=$TOKEN")
refused_all one "${anon[@]}"
# A body is not read for a stranger (a 401, not the 413 of a route
# without bodies).
req one-anon-body POST /api/state --data-binary hello
[ "$CODE" = 401 ] || fail "one: POST with a body without the token: status $CODE, expected 401"
[ "$(header one-anon-1 WWW-Authenticate)" = 'Bearer realm="eventlog-sink"' ] \
    || fail_showing "$T/one-anon-1.head" "one: the 401 has no Bearer challenge"
other_user one /metrics 401

read_all one-bearer -H "Authorization: Bearer $TOKEN" -- $ONE_READS
grep -q "^data: {" "$T/one-bearer-10.body" || fail_showing "$T/one-bearer-10.body" "one: /events with the token sent no state"
grep -q "^ghc_gc_collections_total{program=\"busy\",pid=\"$pid\"," "$T/one-bearer-8.body" \
    || fail_showing "$T/one-bearer-8.body" "one: /metrics with the token holds no ghc_gc_collections_total"
read_all one-field -H "X-Eventlog-Sink-Token: $TOKEN" -- /api/state /metrics
wrong_tokens_refused one /api/state

# The start-up URL: a cookie and the same URL without the token (the
# buttons' token in the fragment only).
login one-login "/?token=$TOKEN" "/#token=$TOKEN"
login one-login-query "/api/timeline?t0=0&token=$TOKEN&px=10" "/api/timeline?t0=0&px=10#token=$TOKEN"
login one-login-head "/metrics?token=$TOKEN" "/metrics#token=$TOKEN"
login one-login-slashes "//evil.example/?token=$TOKEN" "/#token=$TOKEN"
the_cookie_reads one $ONE_READS
# The cookie does not act: an action needs the token in a field.
req one-cookie-acts POST "/api/control?cmd=status" -H "Cookie: $COOKIE"
[ "$CODE" = 403 ] && grep -q "control needs the token" "$T/one-cookie-acts.body" \
    || fail_showing "$T/one-cookie-acts.body" "one: an action with the cookie alone: status $CODE, expected 403"
for how in "X-Eventlog-Sink-Token: $TOKEN" "Authorization: Bearer $TOKEN"; do
    req one-acts POST "/api/control?cmd=status" -H "$how"
    [ "$CODE" = 200 ] && [ "$(json_get "$T/one-acts.body" action ok)" = "status true" ] \
        || fail_showing "$T/one-acts.body" "one: an action with '${how%%:*}': status $CODE"
done
note "one: Bearer, X-Eventlog-Sink-Token and the cookie read; wrong tokens 401; the cookie alone does not act"
kill -TERM "$spid"
wait_pid "$spid" 30 || fail_showing "$T/one.serve.err" "serve did not exit 0 on SIGTERM"

# --- serve --all --control ----------------------------------------------------
start_serve_all --control
[ "$SERVE_URL" = "http://127.0.0.1:$PORT/?token=$TOKEN" ] \
    || fail_showing "$T/serve.err" "serve --all's start-up URL is '$SERVE_URL'"
grep -qF "(alerts: POST http://127.0.0.1:$PORT/api/alertmanager with 'Authorization: Bearer' and the token)" "$T/serve.err" \
    || fail_showing "$T/serve.err" "serve --all --control does not say where alerts go"
followed() {
    scurl -sf --max-time 10 "http://127.0.0.1:$PORT/p/$pid/api/state" -o "$T/all.state" &&
        [ "$(json_get "$T/all.state" program.pid program.name)" = "$pid busy" ]
}
wait_until 60 followed || fail "serve --all does not show the program $pid: $(head -c 300 "$T/all.state" 2>/dev/null)"
ALL_READS="/ /index.html /api/programs /metrics /app.js /p/$pid/ /p/$pid/api/state /p/$pid/metrics /p/$pid/api/timeline /p/$pid/api/control /p/$pid/events /p/$pid/api/info /p/$pid/api/events"
anon=()
for p in $ALL_READS "/p/$pid" /p/4194999/ /p/4194999/api/state /nothing-here; do anon+=("GET:$p"); done
anon+=("HEAD:/p/$pid/" "HEAD:/p/4194999/" "POST:/api/alertmanager" "POST:/p/$pid/api/control?cmd=status")
refused_all all "${anon[@]}"
other_user all "/p/$pid/api/state" 401

read_all all-bearer -H "Authorization: Bearer $TOKEN" -- $ALL_READS
grep -q "\"pid\": *$pid" "$T/all-bearer-3.body" || fail_showing "$T/all-bearer-3.body" "all: /api/programs with the token lists no pid $pid"
req all-gone GET /p/4194999/ -H "Authorization: Bearer $TOKEN"
[ "$CODE" = 404 ] || fail "all: a pid that does not exist, with the token: status $CODE, expected 404"
wrong_tokens_refused all /metrics
wrong_tokens_refused all "/p/$pid/api/state"
login all-login "/?token=$TOKEN" "/"
login all-login-page "/p/$pid/?x=1&token=$TOKEN" "/p/$pid/?x=1"
the_cookie_reads all $ALL_READS

# The webhook: the token as Alertmanager sends it, not the cookie.
printf '{"version":"4","status":"firing","alerts":[]}' >"$T/empty.json"
req all-hook-cookie POST /api/alertmanager -H "Cookie: $COOKIE" -H 'Content-Type: application/json' --data-binary "@$T/empty.json"
[ "$CODE" = 403 ] || fail_showing "$T/all-hook-cookie.body" "all: the webhook with the cookie alone: status $CODE, expected 403"
req all-hook POST /api/alertmanager -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' --data-binary "@$T/empty.json"
[ "$CODE" = 200 ] || fail_showing "$T/all-hook.body" "all: the webhook with the token: status $CODE, expected 200"
note "all: Bearer and the cookie read every route; a pid that exists and one that does not: the same 401"
kill -TERM "$spid"
wait_pid "$spid" 30 || fail_showing "$T/serve.err" "serve --all did not exit 0 on SIGTERM"

# --- --public-read ------------------------------------------------------------
start_serve pub "unix:$T/p.sock" --control --public-read
grep -q "warning: --public-read: the page, /api and /metrics answer every user of this machine without the token (actions still need it)" \
    "$T/pub.serve.err" || fail_showing "$T/pub.serve.err" "--public-read gives no warning"
read_all pub-anon -- $ONE_READS
other_user pub /metrics 200
for how in "" "Cookie: x=1"; do
    req pub-act POST "/api/control?cmd=status" ${how:+-H "$how"}
    [ "$CODE" = 401 ] || fail_showing "$T/pub-act.body" "--public-read: an action without the token: status $CODE, expected 401"
done
req pub-act-wrong POST "/api/control?cmd=status" -H "X-Eventlog-Sink-Token: $(wrong_token)"
[ "$CODE" = 401 ] || fail "--public-read: an action with a wrong token: status $CODE, expected 401"
req pub-act-token POST "/api/control?cmd=status" -H "X-Eventlog-Sink-Token: $TOKEN"
[ "$CODE" = 200 ] || fail_showing "$T/pub-act-token.body" "--public-read: an action with the token: status $CODE, expected 200"
kill -TERM "$spid"
wait_pid "$spid" 30 || fail_showing "$T/pub.serve.err" "serve --public-read did not exit 0 on SIGTERM"

start_serve_all --control --public-read
grep -q "warning: --public-read" "$T/serve.err" || fail_showing "$T/serve.err" "serve --all --public-read gives no warning"
wait_until 60 followed || fail "serve --all --public-read does not show the program $pid"
read_all all-pub-anon -- $ALL_READS
req all-pub-hook POST /api/alertmanager -H 'Content-Type: application/json' --data-binary "@$T/empty.json"
[ "$CODE" = 401 ] || fail_showing "$T/all-pub-hook.body" "--all --public-read: the webhook without the token: status $CODE, expected 401"
note "--public-read: every read answers without the token; actions and alerts still need it"
kill -TERM "$spid"
wait_pid "$spid" 30 || fail_showing "$T/serve.err" "serve --all --public-read did not exit 0 on SIGTERM"

stop_controlled
wait_pid "$ppid" 60 || fail_showing "$T/one.prog.err" "the program did not exit cleanly"
echo "PASS: $els_test_name"
