/*
 * routes.c: what `eventlog-sink serve` answers: / (the page and
 * its script, built into the binary: assets.c, from tools/monitor/web),
 * /api/state, /api/series?from=NS&to=NS&cols=N (the charts' series, from
 * the model), the zoomable timeline's /api/info, /api/timeline,
 * /api/events, /api/range and /api/pauses, and /api/heap, /api/durations,
 * /api/spans and /api/profile of any range (timeline.c; query.h and
 * aggr.h say what they answer), /api/speedscope?from=NS&to=NS, /events (Server-Sent Events carrying
 * the model's JSON, at once and then at each interval: serve_push()),
 * /metrics (Prometheus text) and /api/control.  It answers GET and HEAD,
 * and POST for control only, and takes no request bodies.  With --all
 * (all.c): / is the index of the programs followed, /api/programs
 * its JSON, /metrics every program's series, and /p/PID/PATH answers
 * PATH as above for that program's model (the page's URLs are
 * relative, so the same page works there); the control buttons are off,
 * and with --control POST /api/alertmanager takes Alertmanager's
 * webhook (alert.c), the one route with a body.
 *
 * Every request needs serve's token first (serve_authorize(), before
 * any route is looked at, so that an answer tells nothing of what
 * exists): in X-Eventlog-Sink-Token or "Authorization: Bearer TOKEN"
 * (Prometheus' authorization.credentials_file sends that), or the
 * session cookie that a GET with ?token=TOKEN sets (the start-up line's
 * URL), answered with a 303 to the same URL without the token, so that
 * it stays out of the address bar, history and logs.  Without, a 401
 * that says how (and nothing else).  The token is compared in constant
 * time (http_token_matches()) and never served back, but in the
 * redirect's fragment for a page with buttons (Note [The session
 * cookie]).  --public-read opens GET and HEAD to anyone who can connect:
 * a POST (an action, an alert) still needs the token.
 *
 * With --control, POST /api/control?cmd=ACTION[&class=X] runs one of the
 * monitor's actions (tools/monitor/control.c: an allowlist) on the
 * program and answers its result as JSON.  Refused with 403: on a
 * listener beyond loopback, from another origin (an Origin field that is
 * not this server: a page elsewhere cannot press the buttons; browsers
 * send Origin with every POST), without the token in a request field
 * (the cookie alone does not act: a browser sends it by itself), and
 * any action off the list.  The webhook is held to the same rules
 * (serve_act_refusal()), its token sent as "Authorization: Bearer
 * TOKEN", which is what Alertmanager's http_config.authorization sends,
 * but also beyond loopback: a fleet's Alertmanager runs elsewhere, and
 * what an alert can do is bounded (alert.c, Note [Alerts from
 * outside]); the token then crosses the network as it is, which the
 * start-up line warns of (put a TLS proxy in front).  An action holds
 * the loop until the program answers (milliseconds; MON_CTL_TIMEOUT_MS
 * at most).
 *
 * Not its job: reading requests and sending the answers queued here
 * (conn.c), or refusing a Host that is not loopback (conn.c
 * does, before a request is routed).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../monitor/assets.h"
#include "serve.h"
#include "otlp.h"

/* ------------------------------------------------------------------------
 * Responses
 * ------------------------------------------------------------------------ */

static void serve_head(struct serve_client *c, int status, const char *type,
                       size_t len, bool keep, const char *extra)
{
    sb_printf(&c->out, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
              "Content-Length: %zu\r\nCache-Control: no-store\r\n"
              "X-Content-Type-Options: nosniff\r\n%s%s\r\n", status,
              http_reason(status), type, len,
              keep ? "" : "Connection: close\r\n", extra ? extra : "");
}

static void serve_reply(struct serve_client *c, int status, const char *type,
                        const void *body, size_t len, bool keep, bool head,
                        const char *extra)
{
    serve_head(c, status, type, len, keep, extra);
    if (!head)
        sb_put(&c->out, body, len);
    if (!keep)
        c->closing = true;
}

void serve_error(struct serve_client *c, int status)
{
    char body[96];
    int n = snprintf(body, sizeof body, "%d %s\n", status, http_reason(status));
    serve_reply(c, status, "text/plain; charset=utf-8", body, (size_t)n,
                false, false, NULL);
}

/* A refusal with its reason, for whoever tries by hand. */
static void serve_refuse(struct serve *s, struct serve_client *c, int status,
                         const char *why, const char *extra)
{
    char body[400];
    int n = snprintf(body, sizeof body, "%d %s: %s\n", status,
                     http_reason(status), why);
    s->refused++;
    serve_reply(c, status, "text/plain; charset=utf-8", body, (size_t)n,
                false, false, extra);
}

/* ------------------------------------------------------------------------
 * Authentication
 * ------------------------------------------------------------------------ */

/* Note [The session cookie]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~
 * Any local user can connect to a loopback port, and the page, /api and
 * /metrics carry what the programs say (user messages, thread labels,
 * arguments) that their 0600 sockets keep from other users; so every
 * route needs the token, as a notebook server's do.  A browser cannot
 * send a header field with a navigation, so the start-up line's URL
 * carries the token in its query, once: the answer is a 303 to the
 * same URL without it, which sets a cookie, and the page's own requests
 * (its script, /events, /api) carry the cookie from then on.
 *
 * The cookie's value is not the token but a second random value made
 * at each start: cookies do not tell ports apart, so a browser sends it
 * to any server on this host, another user's too.  What such a server
 * could take then reads this serve until it stops; it cannot act (an
 * action needs the token in a request field) nor learn the token.  Its
 * name carries the port, so that two serves on one host do not replace
 * each other's.  HttpOnly (the page's script never needs it), SameSite
 * Strict (a page of another site cannot make the browser send it), Path
 * /; not Secure, which a browser would keep from plain http.  No
 * Max-Age: it goes with the browser session, and with this serve (the
 * next start makes another).
 *
 * The page's buttons send the token in X-Eventlog-Sink-Token, which its
 * script must then know: with a control session to offer (serve
 * --control), the 303 names the URL with "#token=TOKEN" as its fragment,
 * which a browser keeps for the page and never sends; the script moves
 * it into the tab's sessionStorage and out of the address bar.  A
 * fragment is not logged, and without --control the redirect has none.
 */

/* What a 401 answers with (RFC 9110 section 11.6.1: a challenge). */
#define SERVE_AUTH_CHALLENGE "WWW-Authenticate: Bearer realm=\"eventlog-sink\"\r\n"

/* The token a request carries in a field: X-Eventlog-Sink-Token, else
 * "Authorization: Bearer".  NULL for none. */
static const char *serve_given_token(const struct http_request *r)
{
    if (r->has_token)
        return r->token;
    return r->has_authorization ? http_bearer_token(r->authorization) : NULL;
}

/* A GET or HEAD with the right token in its query: a 303 to the same
 * path and query without it, which sets the session cookie. */
static void serve_login(struct serve *s, struct serve_client *c,
                        const struct http_request *r)
{
    char rest[HTTP_TARGET_MAX];
    if (!http_query_without(r->query, "token", rest, sizeof rest))
        rest[0] = '\0';        /* cannot be longer than the query */
    /* "//host" would be another server's address (a path of ours
     * cannot start so): the page's instead. */
    const char *path = r->path[1] == '/' || r->path[1] == '\\' ? "/" : r->path;
    char extra[HTTP_TARGET_MAX * 2 + 3 * HTTP_TOKEN_MAX];
    snprintf(extra, sizeof extra, "Location: %s%s%s%s%s\r\n"
             "Set-Cookie: %s=%s; Path=/; HttpOnly; SameSite=Strict\r\n"
             "Referrer-Policy: no-referrer\r\n",
             path, rest[0] != '\0' ? "?" : "", rest,
             s->control.enabled ? "#token=" : "",
             s->control.enabled ? s->token : "", s->cookie_name, s->cookie);
    serve_reply(c, 303, "text/plain; charset=utf-8", "", 0,
                r->keep_alive && r->content_length == 0,
                r->method == HTTP_HEAD, extra);
}

bool serve_authorize(struct serve *s, struct serve_client *c,
                     const struct http_request *r)
{
    bool read = r->method != HTTP_POST;
    char query_token[HTTP_TOKEN_MAX + 1];
    if (read && http_query_str(r->query, "token", query_token,
                               sizeof query_token)) {
        bool ok = http_token_matches(s->token, query_token);
        explicit_bzero(query_token, sizeof query_token);
        if (ok) {
            serve_login(s, c, r);
            return false;
        }
        serve_refuse(s, c, 401, "wrong token in the URL: open the URL on "
                     "serve's start-up line", SERVE_AUTH_CHALLENGE);
        return false;
    }
    /* Every field that carries a token must carry the right one. */
    const char *bearer = r->has_authorization ?
                         http_bearer_token(r->authorization) : NULL;
    if ((r->has_token && !http_token_matches(s->token, r->token)) ||
        (bearer != NULL && !http_token_matches(s->token, bearer))) {
        serve_refuse(s, c, 401, "wrong token", SERVE_AUTH_CHALLENGE);
        return false;
    }
    if (r->has_token || bearer != NULL || (read && s->public_read) ||
        (r->has_cookie && http_cookie_matches(r->cookie, s->cookie_name,
                                              s->cookie)))
        return true;
    serve_refuse(s, c, 401, "this needs serve's token: open the URL on "
                 "serve's start-up line (http://HOST:PORT/?token=...), or "
                 "send 'Authorization: Bearer TOKEN'", SERVE_AUTH_CHALLENGE);
    return false;
}

/* ------------------------------------------------------------------------
 * Routes
 * ------------------------------------------------------------------------ */

/* Why a POST that acts (a control action, an alert) may not, or NULL
 * when it may: the rules at the top of the file (the request has passed
 * serve_authorize(): a token it carries is the right one, but it may
 * carry only the cookie); anywhere: not only on loopback. */
static const char *serve_act_refusal(const struct serve *s,
                                     const struct http_request *r,
                                     bool anywhere, const char *off,
                                     const char *missing, const char *wrong)
{
    char origin[300];
    snprintf(origin, sizeof origin, "http://%s", r->host);
    const char *given = serve_given_token(r);
    if (!s->actions)
        return off;
    if (!s->loopback && !anywhere)
        return "control is served on loopback only";
    if (r->has_origin && strcasecmp(r->origin, origin) != 0)
        return "another origin may not control";
    if (given == NULL)
        return missing;
    if (!http_token_matches(s->token, given))
        return wrong;
    return NULL;
}

/* /api/control: GET the state, POST an action (see the top of the file). */
static void serve_control(struct serve *s, struct serve_client *c,
                          const struct http_request *r)
{
    struct strbuf *b = &s->scratch;
    bool keep = r->keep_alive;
    if (r->method != HTTP_POST) {
        if (r->query[0] != '\0') {
            serve_refuse(s, c, 405, "actions take POST", "Allow: POST\r\n");
            return;
        }
        mon_control_json(&s->control, b);
        serve_reply(c, b->failed ? 503 : 200, "application/json", b->p,
                    b->len, keep, r->method == HTTP_HEAD, NULL);
        return;
    }
    char cmd[32] = "", cls[4] = "";
    bool named = http_query_str(r->query, "cmd", cmd, sizeof cmd);
    if (!http_query_str(r->query, "class", cls, sizeof cls))
        cls[0] = '\0';
    const char *why = serve_act_refusal(s, r, false,
                                        "control is off (serve without --control)",
                                        "control needs the token: open the page "
                                        "with the URL on serve's start-up line",
                                        "wrong control token: open the page "
                                        "with the URL on serve's start-up line");
    if (why == NULL && !s->control.enabled)
        why = "control is off (serve --all has no control session)";
    if (why != NULL) {
        serve_refuse(s, c, 403, why, NULL);
    } else if (!named || !mon_control_allowed(cmd, cls)) {
        serve_refuse(s, c, 403, "not an action of the monitor", NULL);
    } else {
        struct mon_ctl_result res;
        mon_control_run(&s->control, cmd, cls, &res);
        mon_control_result_json(&res, b);
        serve_reply(c, b->failed ? 503 : 200, "application/json", b->p,
                    b->len, keep, false, NULL);
    }
}

/* POST /api/alertmanager (--all): Alertmanager's webhook, with the token
 * as "Authorization: Bearer TOKEN" (alert.c does the rest). */
static void serve_alert_route(struct serve *s, struct serve_client *c,
                              const struct http_request *r, uint64_t now)
{
    if (r->method != HTTP_POST) {
        serve_refuse(s, c, 405, "Alertmanager's webhook takes POST",
                     "Allow: POST\r\n");
        return;
    }
    const char *why = serve_act_refusal(s, r, true, "alerts are off (serve "
                                        "--all without --control)",
                                        "alerts need 'Authorization: Bearer "
                                        "TOKEN' with serve's token",
                                        "wrong token in Authorization");
    if (why != NULL) {
        serve_refuse(s, c, 403, why, NULL);
        return;
    }
    const char *type;
    struct strbuf *b = &s->scratch;
    int status = serve_alerts_handle(s->alerts, r, now, b, &type);
    if (b->failed) {
        serve_error(c, 503);
        return;
    }
    if (status != 200)
        s->refused++;
    /* A refusal closes, as every refusal does; an answer keeps the
     * connection for Alertmanager's next batch. */
    serve_reply(c, status, type, b->p, b->len, status == 200 && r->keep_alive,
                false, NULL);
}

uint64_t serve_body_max(const struct serve *s, const struct http_request *r)
{
    return s->all != NULL && r->method == HTTP_POST &&
           strcmp(r->path, "/api/alertmanager") == 0 ? SERVE_ALERT_BODY_MAX : 0;
}

/* One Server-Sent Event carrying b (the model's JSON: one line). */
static void serve_sse_event(struct serve_client *c, const struct strbuf *b)
{
    sb_puts(&c->out, "data: ");
    sb_put(&c->out, b->p, b->len);
    sb_puts(&c->out, "\n\n");
}

/* With --all: the routes of the whole set, and /p/PID/REST, which is
 * REST of that program's page (its model in *model, REST in *path).
 * True when answered here. */
static bool serve_route_all(struct serve *s, struct serve_client *c,
                            const struct http_request *r, const char **path,
                            struct mon_model **model, long *ppid,
                            uint64_t *start)
{
    bool head = r->method == HTTP_HEAD, keep = r->keep_alive;
    struct strbuf *b = &s->scratch;
    if (strcmp(*path, "/index.html") == 0 || strcmp(*path, "/api/programs") == 0 ||
        strcmp(*path, "/metrics") == 0) {
        const char *type = "application/json";
        if (strcmp(*path, "/index.html") == 0) {
            serve_all_index_html(s->all, b);
            type = "text/html; charset=utf-8";
        } else if (strcmp(*path, "/metrics") == 0) {
            serve_all_prometheus(s->all, b);
            serve_otlp_prometheus(b);   /* the exporter's own, if exporting */
            type = "text/plain; version=0.0.4; charset=utf-8";
        } else {
            serve_all_index_json(s->all, b);
        }
        if (b->failed)
            serve_error(c, 503);
        else
            serve_reply(c, 200, type, b->p, b->len, keep, head, NULL);
        return true;
    }
    if (strncmp(*path, "/p/", 3) != 0)
        return false;           /* the page's assets, or a 404 */
    char *end;
    long pid = strtol(*path + 3, &end, 10);
    if (end == *path + 3 || pid <= 0 ||
        (*model = serve_all_model(s->all, pid, start)) == NULL) {
        serve_refuse(s, c, 404, "no such program (it may have exited): "
                     "see the list at /", NULL);
        return true;
    }
    if (*end == '\0') {
        /* The page's URLs are relative: it needs its trailing '/'. */
        char loc[64];
        snprintf(loc, sizeof loc, "Location: /p/%ld/\r\n", pid);
        serve_reply(c, 301, "text/plain; charset=utf-8", "", 0, keep, head,
                    loc);
        return true;
    }
    if (*end != '/')
        return false;
    *path = strcmp(end, "/") == 0 ? "/index.html" : end;
    *ppid = pid;
    return false;
}

void serve_route(struct serve *s, struct serve_client *c,
                 const struct http_request *r, uint64_t now)
{
    bool head = r->method == HTTP_HEAD, keep = r->keep_alive;
    const char *path = strcmp(r->path, "/") == 0 ? "/index.html" : r->path;
    struct strbuf *b = &s->scratch;
    struct mon_model *model = s->model;
    uint64_t start = 0;
    long pid = 0;
    sb_clear(b);
    s->served++;

    if (s->all != NULL && r->method != HTTP_POST &&
        serve_route_all(s, c, r, &path, &model, &pid, &start))
        return;
    if (strcmp(path, "/api/control") == 0) {
        serve_control(s, c, r);
        return;
    }
    if (s->all != NULL && strcmp(path, "/api/alertmanager") == 0) {
        serve_alert_route(s, c, r, now);
        return;
    }
    if (r->method == HTTP_POST) {
        serve_refuse(s, c, 405, s->all != NULL ? "only /api/control and "
                     "/api/alertmanager take POST" : "only /api/control "
                     "takes POST", "Allow: GET, HEAD\r\n");
        return;
    }

    for (unsigned i = 0; i < mon_n_assets; i++) {
        if (strcmp(path, mon_assets[i].path) == 0) {
            serve_reply(c, 200, mon_assets[i].type, mon_assets[i].data,
                        mon_assets[i].len, keep, head, NULL);
            return;
        }
    }
    if (model == NULL) {
        serve_error(c, 404);    /* --all: a program's path outside /p/ */
        return;
    }
    const char *json = "application/json";
    if (strcmp(path, "/api/state") == 0) {
        mon_model_json(model, b);
        serve_otlp_state_json(b);       /* "otlp": the exporter's counters */
    } else if (strncmp(path, "/api/", 5) == 0 &&
               (strcmp(path + 5, "timeline") == 0 ||
                strcmp(path + 5, "events") == 0 ||
                strcmp(path + 5, "range") == 0 ||
                strcmp(path + 5, "info") == 0 ||
                strcmp(path + 5, "pauses") == 0 ||
                strcmp(path + 5, "heap") == 0 ||
                strcmp(path + 5, "durations") == 0 ||
                strcmp(path + 5, "spans") == 0 ||
                strcmp(path + 5, "profile") == 0)) {
        struct serve_tl *tl = s->all != NULL ?
                              serve_all_timeline(s->all, pid, start) : s->tl;
        int status = serve_tl_route(tl, path + 5, r->query, b);
        if (b->failed)
            serve_error(c, 503);
        else
            serve_reply(c, status, json, b->p, b->len, keep, head, NULL);
        return;
    } else if (strcmp(path, "/api/series") == 0) {
        uint64_t from = 0, to = 0, cols = 600;
        (void)http_query_u64(r->query, "from", &from);
        (void)http_query_u64(r->query, "to", &to);
        (void)http_query_u64(r->query, "cols", &cols);
        if (cols == 0 || cols > 4096)
            cols = 600;
        mon_model_timeline_json(model, from, to, (unsigned)cols, b);
    } else if (strcmp(path, "/api/speedscope") == 0) {
        uint64_t from = 0, to = 0;
        (void)http_query_u64(r->query, "from", &from);
        (void)http_query_u64(r->query, "to", &to);
        mon_model_speedscope(model, from, to, b);
        if (!b->failed) {
            serve_reply(c, 200, json, b->p, b->len, keep, head,
                        "Content-Disposition: attachment; "
                        "filename=\"profile.speedscope.json\"\r\n");
            return;
        }
    } else if (strcmp(path, "/metrics") == 0) {
        mon_model_prometheus(model, b);
        if (s->all == NULL)
            serve_otlp_prometheus(b);   /* the exporter's own, if exporting */
        json = "text/plain; version=0.0.4; charset=utf-8";
    } else if (strcmp(path, "/events") == 0) {
        if (!head && s->nsse >= SERVE_SSE_MAX) {
            serve_refuse(s, c, 503, "too many event streams open; the page "
                         "and /metrics still answer", "Retry-After: 10\r\n");
            c->close_now = true;
            return;
        }
        sb_puts(&c->out, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                "Cache-Control: no-store\r\nConnection: keep-alive\r\n\r\n");
        if (head) {
            c->closing = true;
            return;
        }
        c->sse = true;
        c->sse_pid = pid;
        c->sse_start = start;
        s->nsse++;
        http_clock_stream(&c->clock);
        /* The current state at once, not after the next interval. */
        mon_model_json(model, b);
        serve_otlp_state_json(b);
        serve_sse_event(c, b);
        return;
    } else {
        serve_error(c, 404);
        return;
    }
    if (b->failed) {
        serve_error(c, 503);
        return;
    }
    serve_reply(c, 200, json, b->p, b->len, keep, head, NULL);
}

void serve_push(struct serve *s)
{
    struct strbuf *b = &s->scratch;
    if (s->all == NULL) {
        sb_clear(b);
        mon_model_json(s->model, b);
        serve_otlp_state_json(b);
        if (b->failed)
            return;
    }
    for (unsigned i = 0; i < SERVE_CLIENTS; i++) {
        struct serve_client *c = &s->clients[i];
        if (c->fd < 0 || !c->sse || serve_paused(c))
            continue;       /* behind: the next update replaces this one */
        if (s->all != NULL) {
            /* Each stream its program's state; a program gone ends
             * its streams (the page's reconnection meets a 404). */
            uint64_t start = c->sse_start;
            struct mon_model *m = serve_all_model(s->all, c->sse_pid, &start);
            if (m == NULL) {
                serve_close(s, c);
                continue;
            }
            sb_clear(b);
            mon_model_json(m, b);
            serve_otlp_state_json(b);
            if (b->failed)
                continue;
        }
        serve_sse_event(c, b);
    }
}
