/*
 * serve_routes.c: what `eventlog-sink serve` answers: / (the page and
 * its script, built into the binary: assets.c, from tools/monitor/web),
 * /api/state, /api/timeline?from=NS&to=NS&cols=N,
 * /api/speedscope?from=NS&to=NS, /events (Server-Sent Events carrying
 * the model's JSON, at once and then at each interval: serve_push()),
 * /metrics (Prometheus text) and /api/control.  It answers GET and HEAD,
 * and POST for control only, and takes no request bodies.  With --all
 * (serve_all.c): / is the index of the programs followed, /api/programs
 * its JSON, /metrics every program's series, and /p/PID/PATH answers
 * PATH as above for that program's model (the page's URLs are
 * relative, so the same page works there); the control buttons are off,
 * and with --control POST /api/alertmanager takes Alertmanager's
 * webhook (serve_alert.c), the one route with a body.
 *
 * With --control, POST /api/control?cmd=ACTION[&class=X] runs one of the
 * monitor's actions (tools/monitor/control.c: an allowlist) on the
 * program and answers its result as JSON.  Refused with 403: on a
 * listener beyond loopback, from another origin (an Origin field that is
 * not this server: a page elsewhere cannot press the buttons; browsers
 * send Origin with every POST), without the control token (serve.c makes
 * it; compared in constant time, http_token_matches(), and never served
 * back), and any action off the list.  The webhook is held to the same
 * rules (serve_act_refusal()), its token sent as "Authorization: Bearer
 * TOKEN", which is what Alertmanager's http_config.authorization sends,
 * but also beyond loopback: a fleet's Alertmanager runs elsewhere, and
 * what an alert can do is bounded (serve_alert.c, Note [Alerts from
 * outside]); the token then crosses the network as it is, which the
 * start-up line warns of (put a TLS proxy in front).  The page, /events, /metrics and
 * GET /api/control need no token.  An action holds the loop until the
 * program answers (milliseconds; MON_CTL_TIMEOUT_MS at most).
 *
 * Not its job: reading requests and sending the answers queued here
 * (serve_conn.c), or refusing a Host that is not loopback (serve_conn.c
 * does, before a request is routed).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "monitor/assets.h"
#include "serve.h"

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
    char body[200];
    int n = snprintf(body, sizeof body, "%d %s: %s\n", status,
                     http_reason(status), why);
    s->refused++;
    serve_reply(c, status, "text/plain; charset=utf-8", body, (size_t)n,
                false, false, extra);
}

/* ------------------------------------------------------------------------
 * Routes
 * ------------------------------------------------------------------------ */

/* Why a POST that acts (a control action, an alert) may not, or NULL
 * when it may: the rules at the top of the file.  given: the token the
 * request carries (has: whether it carries one); anywhere: not only on
 * loopback. */
static const char *serve_act_refusal(const struct serve *s,
                                     const struct http_request *r,
                                     const char *given, bool has,
                                     bool anywhere, const char *off,
                                     const char *missing, const char *wrong)
{
    char origin[300];
    snprintf(origin, sizeof origin, "http://%s", r->host);
    if (s->token[0] == '\0')
        return off;
    if (!s->loopback && !anywhere)
        return "control is served on loopback only";
    if (r->has_origin && strcasecmp(r->origin, origin) != 0)
        return "another origin may not control";
    if (!has)
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
    const char *why = serve_act_refusal(s, r, r->token, r->has_token, false,
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
 * as "Authorization: Bearer TOKEN" (serve_alert.c does the rest). */
static void serve_alert_route(struct serve *s, struct serve_client *c,
                              const struct http_request *r, uint64_t now)
{
    if (r->method != HTTP_POST) {
        serve_refuse(s, c, 405, "Alertmanager's webhook takes POST",
                     "Allow: POST\r\n");
        return;
    }
    /* RFC 9110 section 11.1: the scheme's name in any case, then one
     * space. */
    const char *given = r->authorization;
    bool bearer = r->has_authorization && strncasecmp(given, "Bearer ", 7) == 0;
    const char *why = serve_act_refusal(s, r, bearer ? given + 7 : "", bearer,
                                        true, "alerts are off (serve --all without "
                                        "--control)",
                                        "alerts need 'Authorization: Bearer "
                                        "TOKEN' with serve's control token",
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
    } else if (strcmp(path, "/api/timeline") == 0) {
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
            if (b->failed)
                continue;
        }
        serve_sse_event(c, b);
    }
}
