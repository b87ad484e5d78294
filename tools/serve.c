/*
 * serve.c: `eventlog-sink serve`, the live monitor as a web page and a
 * Prometheus endpoint.
 *
 * One thread, one poll loop: the eventlog source (tools/monitor/
 * source.c) feeds the model (model.c); browsers and scrapers connect
 * over HTTP/1.1 (request heads parsed by http.c).  The page and its
 * script are built into the binary (assets.c, from tools/monitor/web);
 * live updates go to every open page at each interval as Server-Sent
 * Events carrying the model's JSON.  Routes: / (the page), /api/state,
 * /api/timeline?from=NS&to=NS&cols=N, /api/speedscope?from=NS&to=NS,
 * /events (SSE), /metrics (Prometheus text), /api/control (the control
 * buttons, below).  It serves GET and HEAD, and POST for control only,
 * takes no request bodies, and listens on loopback unless told a host;
 * on loopback it answers only requests that name loopback in their Host
 * field (see http_host_is_loopback()).
 *
 * With --control, POST /api/control?cmd=ACTION[&class=X] runs one of the
 * monitor's actions (tools/monitor/control.c: an allowlist) on the
 * program and answers its result as JSON.  Refused with 403: on a
 * listener beyond loopback, from another origin (an Origin field that is
 * not this server: a page elsewhere cannot press the buttons; browsers
 * send Origin with every POST), without the control token, and any
 * action off the list.  The token keeps out the other local users who
 * can reach a loopback port: 192 random bits made at start (or read from
 * --token-file, a 0600 file of ours), printed on the start-up line in
 * the page URL's fragment ("/#token=..."), which browsers never send, so
 * it stays out of request lines, logs and Referer.  The page's script
 * takes it from there and sends it in the X-Eventlog-Sink-Token field
 * with each action; it is compared in constant time
 * (http_token_matches()) and never served back.  The page, /events,
 * /metrics and GET /api/control need no token.  An action holds the loop
 * until the program answers (milliseconds; MON_CTL_TIMEOUT_MS at most).
 * Not its job: TLS, authentication beyond loopback (put a proxy in front
 * to expose it).
 *
 * Hostile neighbours: any local user can connect to a loopback port, so
 * no client may take the server's memory or its slots.  Each client's
 * pending output is bounded (SERVE_OUT_MAX: its requests are not read
 * meanwhile, so pipelining cannot amplify), each request has deadlines
 * (see Note [Connection deadlines] in monitor/http.c), event streams
 * take at most SERVE_SSE_MAX of the SERVE_CLIENTS slots, and a
 * connection beyond the slots is answered 503 and closed at once.  For
 * tests only, the environment variables ELS_SERVE_TEST_HEAD_MS,
 * ELS_SERVE_TEST_REQUEST_MS and ELS_SERVE_TEST_STALL_MS shorten the
 * deadlines (serve_limits()).
 *
 * Our own process: it catches SIGINT/SIGTERM to stop cleanly and sends
 * with MSG_NOSIGNAL so that a browser closing its end is an error we
 * handle, not a SIGPIPE.
 */
#if defined(HAVE_CONFIG_H)
#include "config.h"
#endif

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "eventlog-sink.h"
#include "monitor/assets.h"
#include "monitor/control.h"
#include "monitor/http.h"
#include "monitor/run.h"
#include "tool.h"
#include "util.h"

#define SERVE_CLIENTS 64
/* Event streams stay open: without a share of their own, 64 pages (or
 * one user's 64 connections to /events) would leave no slot for the
 * page, /api/ and /metrics.  Half the slots: a scraper and a few pages
 * always get in. */
#define SERVE_SSE_MAX (SERVE_CLIENTS / 2)
/* Pending output over which a client's requests are not read (and an
 * event stream's updates skipped: each carries the whole state, the next
 * one replaces it).  A client can make us hold this plus one response,
 * whatever it pipelines: 64 clients 16 MiB plus their responses.  Well
 * above one update of the state (tens of KiB), so a page that reads
 * never meets it. */
#define SERVE_OUT_MAX (256u << 10)
/* Note [Connection deadlines] in monitor/http.c.  A browser sends a
 * head in one piece within milliseconds: 10 s is only for a slow link.
 * 60 s for a whole request covers a speedscope export of megabytes on a
 * slow link.  15 s over the output bound: a page stopped reading (a
 * browser reads a background tab's event stream all the same). */
#define SERVE_HEAD_MS 10000
#define SERVE_REQUEST_MS 60000
#define SERVE_STALL_MS 15000
#define SERVE_IDLE_MS 30000             /* a kept-alive connection unused */
#define SERVE_DRAIN_MS 2000
#define SERVE_DEADLINE_STEP_MS 250      /* how late a deadline may be seen */
#define SERVE_TOKEN_BYTES 24            /* random bytes of a made token */
#define SERVE_TOKEN_MIN 32              /* characters of a --token-file's */

struct serve_client {
    int fd;
    char in[HTTP_HEAD_MAX];
    size_t in_len;
    struct strbuf out;
    size_t out_off;
    bool sse, closing;
    /* Response sent and our side shut: reading what the client still
     * sends until it closes (or SERVE_DRAIN_MS), so that closing with
     * unread input does not reset the connection and destroy the
     * response before the client read it (a "lingering close"). */
    bool draining;
    uint64_t drain_since;
    /* Refused for want of a slot of its kind: closed as soon as the 503
     * is handed to the kernel, without a lingering close, so that the
     * refused do not hold slots themselves. */
    bool close_now;
    struct http_clock clock;
};

struct serve {
    int listen_fd;
    bool loopback;              /* refuse Host names other than loopback */
    struct serve_client clients[SERVE_CLIENTS];
    struct mon_model *model;
    struct mon_source src;
    struct mon_control control;
    /* Control actions need this in X-Eventlog-Sink-Token ("" with no
     * --control: nothing to protect). */
    char token[HTTP_TOKEN_MAX + 1];
    struct strbuf scratch;
    struct http_limits limits;
    unsigned nsse;              /* clients that are event streams */
    uint64_t served, refused, late;
};

static void serve_usage(FILE *out)
{
    fprintf(out,
"Usage: " TOOL_NAME " serve [OPTIONS] SPEC|FILE\n"
"\n"
"Serve a live web view of a GHC program's runtime, from its eventlog,\n"
"and its figures in the Prometheus text format at /metrics.\n"
"\n"
"SPEC|FILE as for `" TOOL_NAME " top`: unix:PATH, tcp:[HOST:]PORT,\n"
"fifo:PATH, or a file, followed as it grows (a saved eventlog shows the\n"
"whole run).\n"
"\n"
"Options:\n"
"  --listen [HOST:]PORT  where to serve (default 127.0.0.1:8089; port 0\n"
"                        picks one; a host other than loopback exposes\n"
"                        the page, which has no authentication)\n"
"  --interval SECS       refresh interval (default 1)\n"
"  --save FILE           copy the stream as received to FILE (a new run\n"
"                        replaces it)\n"
"  --control             show control buttons: a control session with\n"
"                        the program at SPEC (unix: or tcp:; its sink\n"
"                        needs control=1): status, stats, flush,\n"
"                        snapshot, heap census, classes, restart, stop.\n"
"                        Only on a loopback listener, and only for a\n"
"                        page opened with the token URL of the start-up\n"
"                        line (a new random token at each start)\n"
"  --token-file FILE     the control token from FILE instead, for a URL\n"
"                        that stays the same: 32 to 128 characters of\n"
"                        A-Z a-z 0-9 - . _ ~ in a regular file of yours\n"
"                        that only you can read (mode 600)\n"
"  --secret-file FILE    the control secret (tcp:), as for ctl\n"
"  -h, --help            this help\n"
"\n"
"Prints 'serving http://HOST:PORT/' on stderr once listening; with\n"
"--control 'serving http://HOST:PORT/#token=TOKEN' (the token stays\n"
"in the browser: a URL's fragment is never sent), the URL that makes\n"
"the buttons work (the page sends the token in X-Eventlog-Sink-Token);\n"
"with --token-file the line names the file instead of the token.\n"
"Pages: / (live view), /metrics, /api/state, /api/timeline, /events\n"
"(Server-Sent Events), /api/speedscope?from=NS&to=NS (cost-centre\n"
"samples of a profiled program as a speedscope profile), /api/control\n"
"(GET: the control session's state; POST ?cmd=ACTION[&class=X]: run\n"
"an action, answered as JSON {\"ok\":..,\"error\":..,\"result\":..}; 403\n"
"without the token, for another origin or an action off the list).\n"
"At most 64 connections, 32 of them /events (beyond: 503); a request\n"
"head within 10 s, a request within 60 s, a client 256 KiB behind\n"
"is not read and is closed after 15 s.\n");
}

/* ------------------------------------------------------------------------
 * Responses
 * ------------------------------------------------------------------------ */

static void serve_close(struct serve *s, struct serve_client *c)
{
    if (c->fd >= 0)
        util_close(c->fd);
    c->fd = -1;
    if (c->sse)
        s->nsse--;
    sb_free(&c->out);
    c->out_off = 0;
    c->in_len = 0;
    c->sse = c->closing = c->draining = c->close_now = false;
}

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

static void serve_error(struct serve_client *c, int status)
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
    char origin[300];
    snprintf(origin, sizeof origin, "http://%s", r->host);
    char cmd[32] = "", cls[4] = "";
    bool named = http_query_str(r->query, "cmd", cmd, sizeof cmd);
    if (!http_query_str(r->query, "class", cls, sizeof cls))
        cls[0] = '\0';
    if (!s->control.enabled) {
        serve_refuse(s, c, 403, "control is off (serve without --control)",
                     NULL);
    } else if (!s->loopback) {
        serve_refuse(s, c, 403, "control is served on loopback only", NULL);
    } else if (r->has_origin && strcasecmp(r->origin, origin) != 0) {
        serve_refuse(s, c, 403, "another origin may not control", NULL);
    } else if (!r->has_token) {
        serve_refuse(s, c, 403, "control needs the token: open the page "
                     "with the URL on serve's start-up line", NULL);
    } else if (!http_token_matches(s->token, r->token)) {
        serve_refuse(s, c, 403, "wrong control token: open the page with "
                     "the URL on serve's start-up line", NULL);
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

static void serve_route(struct serve *s, struct serve_client *c,
                        const struct http_request *r)
{
    bool head = r->method == HTTP_HEAD, keep = r->keep_alive;
    const char *path = strcmp(r->path, "/") == 0 ? "/index.html" : r->path;
    struct strbuf *b = &s->scratch;
    sb_clear(b);
    s->served++;

    if (strcmp(path, "/api/control") == 0) {
        serve_control(s, c, r);
        return;
    }
    if (r->method == HTTP_POST) {
        serve_refuse(s, c, 405, "only /api/control takes POST",
                     "Allow: GET, HEAD\r\n");
        return;
    }

    for (unsigned i = 0; i < mon_n_assets; i++) {
        if (strcmp(path, mon_assets[i].path) == 0) {
            serve_reply(c, 200, mon_assets[i].type, mon_assets[i].data,
                        mon_assets[i].len, keep, head, NULL);
            return;
        }
    }
    const char *json = "application/json";
    if (strcmp(path, "/api/state") == 0) {
        mon_model_json(s->model, b);
    } else if (strcmp(path, "/api/timeline") == 0) {
        uint64_t from = 0, to = 0, cols = 600;
        (void)http_query_u64(r->query, "from", &from);
        (void)http_query_u64(r->query, "to", &to);
        (void)http_query_u64(r->query, "cols", &cols);
        if (cols == 0 || cols > 4096)
            cols = 600;
        mon_model_timeline_json(s->model, from, to, (unsigned)cols, b);
    } else if (strcmp(path, "/api/speedscope") == 0) {
        uint64_t from = 0, to = 0;
        (void)http_query_u64(r->query, "from", &from);
        (void)http_query_u64(r->query, "to", &to);
        mon_model_speedscope(s->model, from, to, b);
        if (!b->failed) {
            serve_reply(c, 200, json, b->p, b->len, keep, head,
                        "Content-Disposition: attachment; "
                        "filename=\"profile.speedscope.json\"\r\n");
            return;
        }
    } else if (strcmp(path, "/metrics") == 0) {
        mon_model_prometheus(s->model, b);
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
        s->nsse++;
        http_clock_stream(&c->clock);
        /* The current state at once, not after the next interval. */
        mon_model_json(s->model, b);
        sb_puts(&c->out, "data: ");
        sb_put(&c->out, b->p, b->len);
        sb_puts(&c->out, "\n\n");
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

static size_t serve_pending(const struct serve_client *c)
{
    return c->out.len - c->out_off;
}

/* Over the output bound: its requests wait (and are not read). */
static bool serve_paused(const struct serve_client *c)
{
    return serve_pending(c) > SERVE_OUT_MAX;
}

/* Handle the complete requests in c->in (pipelined ones in order), while
 * the client's output stays within its bound: one response may take it
 * over, and the rest wait until it has read. */
static void serve_requests(struct serve *s, struct serve_client *c,
                           uint64_t now)
{
    while (c->in_len > 0 && !c->closing && !c->sse && !serve_paused(c)) {
        struct http_request r;
        int n = http_parse_request(c->in, c->in_len, &r);
        if (n == 0)
            return;
        if (n < 0 || (s->loopback && !http_host_is_loopback(r.host))) {
            s->refused++;
            serve_error(c, n < 0 ? -n : 403);
            c->in_len = 0;
        } else {
            serve_route(s, c, &r);
            memmove(c->in, c->in + n, c->in_len - (size_t)n);
            c->in_len -= (size_t)n;
        }
        if (!c->sse)
            http_clock_request(&c->clock, now, c->in_len > 0 && !c->closing);
        http_clock_output(&c->clock, now, serve_pending(c), SERVE_OUT_MAX);
    }
}

/* Send what is queued; false when the client is gone. */
static bool serve_flush(struct serve_client *c, uint64_t now)
{
    while (c->out_off < c->out.len) {
        ssize_t n = send(c->fd, c->out.p + c->out_off, c->out.len - c->out_off,
                         MSG_NOSIGNAL);
        if (n > 0) {
            c->out_off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        return false;
    }
    if (c->close_now)
        return false;
    if (c->out_off == c->out.len) {
        /* Its memory too: a response of megabytes is not kept for a
         * connection that may idle for SERVE_IDLE_MS. */
        if (c->out.cap > SERVE_OUT_MAX)
            sb_free(&c->out);
        else
            sb_clear(&c->out);
        c->out_off = 0;
        if (c->closing && !c->draining) {
            if (shutdown(c->fd, SHUT_WR) < 0)
                return false;
            c->draining = true;
            c->drain_since = now;
        }
    }
    else if (c->out_off > serve_pending(c)) {
        /* More sent than left: move the rest to the front, or a client
         * that reads slowly but never catches up (an event stream) would
         * grow the buffer by what it has read. */
        memmove(c->out.p, c->out.p + c->out_off, serve_pending(c));
        c->out.len -= c->out_off;
        c->out_off = 0;
    }
    http_clock_output(&c->clock, now, serve_pending(c), SERVE_OUT_MAX);
    return true;
}

/* ------------------------------------------------------------------------
 * The loop
 * ------------------------------------------------------------------------ */

static void serve_accept(struct serve *s, uint64_t now)
{
    for (;;) {
        int fd;
        if (util_accept_nb(s->listen_fd, &fd) < 0)
            return;
        struct serve_client *c = NULL;
        for (unsigned i = 0; i < SERVE_CLIENTS; i++)
            if (s->clients[i].fd < 0) {
                c = &s->clients[i];
                break;
            }
        if (c == NULL) {
            static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\n"
                "Content-Length: 0\r\nConnection: close\r\n\r\n";
            (void)send(fd, busy, sizeof busy - 1, MSG_NOSIGNAL);
            util_close(fd);
            s->refused++;
            continue;
        }
        c->fd = fd;
        c->in_len = 0;
        http_clock_accept(&c->clock, now);
    }
}

static void serve_read(struct serve *s, struct serve_client *c, uint64_t now)
{
    if (c->draining) {
        char sink[4096];
        ssize_t n;
        while ((n = recv(c->fd, sink, sizeof sink, 0)) > 0)
            ;
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            serve_close(s, c);
        return;
    }
    for (;;) {
        if (c->closing)
            c->in_len = 0;      /* an error is on its way: input is moot */
        /* Over its output bound: what it sends stays in the kernel, and
         * TCP makes the client wait (see SERVE_OUT_MAX). */
        if (serve_paused(c))
            return;
        if (c->in_len == sizeof c->in) {
            /* Full without a complete head: too long. */
            s->refused++;
            serve_error(c, 431);
            c->in_len = 0;
            http_clock_request(&c->clock, now, false);
            return;
        }
        ssize_t n = recv(c->fd, c->in + c->in_len, sizeof c->in - c->in_len, 0);
        if (n > 0) {
            c->in_len += (size_t)n;
            if (!c->sse) {
                http_clock_input(&c->clock, now);
                serve_requests(s, c, now);
            } else {
                c->in_len = 0;      /* an event stream sends nothing */
            }
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        /* Closed by the peer (or failed): finish what is queued if any. */
        if (c->out.len == c->out_off || c->sse)
            serve_close(s, c);
        else
            c->closing = true;
        return;
    }
}

/* Close the clients whose deadline passed (Note [Connection deadlines]
 * in monitor/http.c). */
static void serve_deadlines(struct serve *s, uint64_t now)
{
    for (unsigned i = 0; i < SERVE_CLIENTS; i++) {
        struct serve_client *c = &s->clients[i];
        if (c->fd < 0)
            continue;
        if (c->draining) {
            if (now - c->drain_since >= SERVE_DRAIN_MS)
                serve_close(s, c);
            continue;
        }
        enum http_late late = http_clock_late(&c->clock, now, &s->limits);
        if (late == HTTP_IN_TIME)
            continue;
        if (late != HTTP_LATE_IDLE)
            s->late++;
        if (late == HTTP_LATE_HEAD && serve_pending(c) == 0) {
            /* Said once, without waiting: whether it arrives is the
             * slow client's business. */
            static const char msg[] = "HTTP/1.1 408 Request Timeout\r\n"
                "Content-Length: 0\r\nConnection: close\r\n\r\n";
            (void)send(c->fd, msg, sizeof msg - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        }
        serve_close(s, c);
    }
}

static void serve_push(struct serve *s)
{
    struct strbuf *b = &s->scratch;
    sb_clear(b);
    mon_model_json(s->model, b);
    if (b->failed)
        return;
    for (unsigned i = 0; i < SERVE_CLIENTS; i++) {
        struct serve_client *c = &s->clients[i];
        if (c->fd < 0 || !c->sse || serve_paused(c))
            continue;       /* behind: the next update replaces this one */
        sb_puts(&c->out, "data: ");
        sb_put(&c->out, b->p, b->len);
        sb_puts(&c->out, "\n\n");
    }
}

/* The control token: read from token_file, or SERVE_TOKEN_BYTES from
 * getrandom() in hex.  0, or the exit status after a message. */
static int serve_make_token(struct serve *s, const char *token_file)
{
    if (token_file != NULL) {
        char err[200];
        ssize_t n = util_read_private(token_file, s->token, HTTP_TOKEN_MAX,
                                      err, sizeof err);
        bool ok = n >= SERVE_TOKEN_MIN;
        for (ssize_t i = 0; ok && i < n; i++) {
            char ch = s->token[i];
            ok = (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
                 (ch >= 'A' && ch <= 'Z') ||
                 (ch != '\0' && strchr("-._~", ch) != NULL);
        }
        if (n < 0 || !ok) {
            /* The characters a URL fragment and a header field carry
             * as they are. */
            fprintf(stderr, TOOL_NAME " serve: --token-file %s: %s\n",
                    token_file, n < 0 ? err : "expected a token of "
                    "32 to 128 characters of A-Z a-z 0-9 - . _ ~");
            explicit_bzero(s->token, sizeof s->token);
            return 1;
        }
        s->token[n] = '\0';
        return 0;
    }
    uint8_t raw[SERVE_TOKEN_BYTES];
    size_t got = 0;
    while (got < sizeof raw) {
        /* Blocks only until the kernel's pool is first seeded. */
        ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            fprintf(stderr, TOOL_NAME " serve: cannot get random bytes "
                    "for the control token: %s\n", strerror(errno));
            return 1;
        }
        got += (size_t)n;
    }
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(s->token + 2 * i, 3, "%02x", raw[i]);
    explicit_bzero(raw, sizeof raw);
    return 0;
}

/* The deadlines: the constants above, or shorter ones for a test (the
 * variables are documented as for tests only: a test of a 10 s deadline
 * need not wait 10 s). */
static void serve_limits(struct http_limits *l)
{
    *l = (struct http_limits){ .head_ms = SERVE_HEAD_MS,
                               .request_ms = SERVE_REQUEST_MS,
                               .idle_ms = SERVE_IDLE_MS,
                               .stall_ms = SERVE_STALL_MS };
    static const struct { const char *name; size_t off; } vars[] = {
        { "ELS_SERVE_TEST_HEAD_MS", offsetof(struct http_limits, head_ms) },
        { "ELS_SERVE_TEST_REQUEST_MS", offsetof(struct http_limits, request_ms) },
        { "ELS_SERVE_TEST_STALL_MS", offsetof(struct http_limits, stall_ms) },
    };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i].name);
        char *end;
        if (v == NULL || *v == '\0')
            continue;
        errno = 0;
        unsigned long long ms = strtoull(v, &end, 10);
        if (errno == 0 && *end == '\0' && ms >= 1 && ms <= 86400000)
            *(uint64_t *)((char *)l + vars[i].off) = ms;
    }
}

static int serve_listen(const char *where, char *name, size_t name_len)
{
    char spec[300];
    /* "PORT" alone means loopback. */
    if (strchr(where, ':') == NULL)
        snprintf(spec, sizeof spec, "tcp:127.0.0.1:%s", where);
    else
        snprintf(spec, sizeof spec, "tcp:%s", where);
    struct addrinfo *ai;
    char err[256];
    int rc = els_endpoint_resolve(spec, ELS_ENDPOINT_PASSIVE, &ai, err, sizeof err);
    if (rc < 0) {
        snprintf(name, name_len, "%s", err);
        return rc;
    }
    char at[256] = "";
    int fd = els_endpoint_listen_tcp(ai, 16, at, sizeof at);
    els_endpoint_free(ai);
    if (fd < 0) {
        snprintf(name, name_len, "cannot listen on %s: %s", at[0] ? at : where,
                 strerror(-fd));
        return fd;
    }
    if (els_endpoint_name(fd, name, name_len) < 0)
        snprintf(name, name_len, "%s", where);
    return fd;
}

int serve_main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "listen", required_argument, NULL, 'l' },
        { "interval", required_argument, NULL, 'i' },
        { "save", required_argument, NULL, 's' },
        { "control", no_argument, NULL, 'c' },
        { "secret-file", required_argument, NULL, 'S' },
        { "token-file", required_argument, NULL, 'T' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *listen_at = "127.0.0.1:8089";
    const char *secret_file = NULL, *token_file = NULL;
    bool control = false;
    uint64_t interval_ms = 1000;
    const char *save = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'l': listen_at = optarg; break;
        case 'i':
            if ((c = mon_parse_interval("serve", optarg, &interval_ms)) != 0)
                return c;
            break;
        case 's': save = optarg; break;
        case 'c': control = true; break;
        case 'S': secret_file = optarg; break;
        case 'T': token_file = optarg; break;
        case 'h': return tool_help(serve_usage);
        default: return tool_usage_error("serve", "unknown option");
        }
    }
    if (optind + 1 != argc)
        return tool_usage_error("serve", "expected one SPEC or FILE");
    if (token_file != NULL && !control)
        return tool_usage_error("serve", "--token-file needs --control");

    static struct serve s;
    if (control && (c = serve_make_token(&s, token_file)) != 0)
        return c;
    if ((c = mon_control_init(&s.control, "serve", control ? argv[optind] : NULL,
                              secret_file)) != 0)
        return c;
    if ((c = mon_open("serve", argv[optind], save, &s.src, &s.model)) != 0) {
        mon_control_close(&s.control);
        return c;
    }
    char name[300];
    s.listen_fd = serve_listen(listen_at, name, sizeof name);
    if (s.listen_fd < 0) {
        fprintf(stderr, TOOL_NAME " serve: %s\n", name);
        mon_close(&s.src, s.model);
        mon_control_close(&s.control);
        return s.listen_fd == ELS_EINVAL ? TOOL_EXIT_USAGE : 1;
    }
    for (unsigned i = 0; i < SERVE_CLIENTS; i++)
        s.clients[i].fd = -1;
    serve_limits(&s.limits);

    mon_catch_stop_signals();

    /* els_endpoint_name gives "tcp:HOST:PORT". */
    const char *hp = strncmp(name, "tcp:", 4) == 0 ? name + 4 : name;
    s.loopback = strncmp(hp, "127.", 4) == 0 || strncmp(hp, "[::1]", 5) == 0;
    if (!s.loopback)
        fprintf(stderr, TOOL_NAME " serve: warning: serving beyond this "
                "machine, without authentication%s\n", control ?
                "; control requests are refused (loopback only)" : "");
    /* One line, so that whoever waits for it reads the URL whole. */
    if (!control || !s.loopback)
        fprintf(stderr, TOOL_NAME " serve: serving http://%s/\n", hp);
    else if (token_file != NULL)
        fprintf(stderr, TOOL_NAME " serve: serving http://%s/ (control: "
                "open http://%s/#token= followed by the token in %s)\n",
                hp, hp, token_file);
    else
        fprintf(stderr, TOOL_NAME " serve: serving http://%s/#token=%s\n",
                hp, s.token);

    uint64_t last_tick = mon_now_ms(), next_tick = last_tick + interval_ms;
    bool whole_run_ticked = false;
    while (!mon_stop) {
        uint64_t now = mon_now_ms();
        uint64_t got = mon_source_pump(&s.src, s.model, now, MON_PUMP_MAX);
        if (got > 0)
            whole_run_ticked = false;
        if (now >= next_tick) {
            /* A file read to its end and not growing: rates are the run's
             * averages (a saved eventlog); otherwise the last interval's. */
            bool whole = mon_source_is_file(&s.src) && s.src.eof && got == 0;
            if (!(whole && whole_run_ticked))
                mon_model_tick(s.model, (now - last_tick) * 1000000ull, whole);
            whole_run_ticked = whole;
            last_tick = now;
            next_tick = now + interval_ms;
            serve_push(&s);
        }
        serve_deadlines(&s, now);

        struct pollfd pfd[2 + SERVE_CLIENTS];
        pfd[0] = (struct pollfd){ .fd = s.listen_fd, .events = POLLIN };
        pfd[1] = (struct pollfd){ .fd = mon_source_fd(&s.src), .events = POLLIN };
        bool clients = false;
        for (unsigned i = 0; i < SERVE_CLIENTS; i++) {
            struct serve_client *cl = &s.clients[i];
            pfd[2 + i] = (struct pollfd){ .fd = cl->fd };
            if (cl->fd < 0)
                continue;
            clients = true;
            /* A paused client's input waits in the kernel (POLLIN would
             * wake us for ever for bytes we will not read). */
            if (!serve_paused(cl))
                pfd[2 + i].events |= POLLIN;
            if (cl->out.len > cl->out_off)
                pfd[2 + i].events |= POLLOUT;
        }
        uint64_t wait = next_tick > now ? next_tick - now : 0;
        if ((mon_source_is_file(&s.src) || mon_source_fd(&s.src) < 0) && wait > 200)
            wait = 200;
        /* A source waiting for its path retries sooner (source.c's Note
         * [Waiting for a path]). */
        uint64_t src_wait = mon_source_wait_ms(&s.src, now);
        if (src_wait < wait)
            wait = src_wait;
        if (clients && wait > SERVE_DEADLINE_STEP_MS)
            wait = SERVE_DEADLINE_STEP_MS;  /* deadlines are judged in time */
        if (got == MON_PUMP_MAX)
            wait = 0;           /* the source has more: read on after a look */
        int n = poll(pfd, 2 + SERVE_CLIENTS, (int)wait);
        if (n <= 0)
            continue;
        now = mon_now_ms();
        if (pfd[0].revents & POLLIN)
            serve_accept(&s, now);
        for (unsigned i = 0; i < SERVE_CLIENTS; i++) {
            struct serve_client *cl = &s.clients[i];
            short re = pfd[2 + i].revents;
            if (cl->fd < 0 || pfd[2 + i].fd != cl->fd || re == 0)
                continue;
            if ((re & (POLLHUP | POLLERR)) && serve_paused(cl)) {
                serve_close(&s, cl);    /* gone, with its answers unread */
                continue;
            }
            if (re & (POLLIN | POLLHUP | POLLERR))
                serve_read(&s, cl, now);
            if (cl->fd >= 0 && !serve_flush(cl, now))
                serve_close(&s, cl);
        }
        /* Responses queued by this round's requests go out at once; a
         * client back under its output bound has its waiting requests
         * handled. */
        for (unsigned i = 0; i < SERVE_CLIENTS; i++) {
            struct serve_client *cl = &s.clients[i];
            if (cl->fd >= 0 && cl->out.len > cl->out_off && !serve_flush(cl, now))
                serve_close(&s, cl);
            if (cl->fd >= 0 && cl->in_len > 0 && !cl->closing && !cl->sse &&
                !serve_paused(cl)) {
                serve_requests(&s, cl, now);
                if (cl->out.len > cl->out_off && !serve_flush(cl, now))
                    serve_close(&s, cl);
            }
        }
    }
    for (unsigned i = 0; i < SERVE_CLIENTS; i++)
        serve_close(&s, &s.clients[i]);
    util_close(s.listen_fd);
    sb_free(&s.scratch);
    mon_close(&s.src, s.model);
    mon_control_close(&s.control);
    explicit_bzero(s.token, sizeof s.token);
    return 0;
}
