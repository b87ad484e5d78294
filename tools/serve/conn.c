/*
 * conn.c: `eventlog-sink serve`'s connections: a slot for each
 * client, reading its requests (pipelined ones in order), sending its
 * answers, and closing it: at its end, on error, past a deadline, or
 * with a lingering close after the last answer.  Hostile neighbours: any
 * local user can connect to a loopback port, so no client may take the
 * server's memory or its slots.  Each client's pending output is bounded
 * (SERVE_OUT_MAX: its requests are not read meanwhile, so pipelining
 * cannot amplify), each request has deadlines (see Note [Connection
 * deadlines] in http.c), event streams take at most
 * SERVE_SSE_MAX of the SERVE_CLIENTS slots (routes.c counts
 * them), and a connection beyond the slots is answered 503 and closed
 * at once.  Bodies: only a route that takes one (serve_body_max(): the
 * webhook of --all, SERVE_ALERT_BODY_MAX) reads it, once the request
 * is authorized (serve_authorize(): a stranger's body is not read), into a buffer of
 * its announced length allocated then (64 clients at most 16 MiB);
 * any other announced body, or a longer one, is a 413 before a byte of
 * it is read, and the whole request (head and body) has request_ms.  For tests only, the environment variables
 * ELS_SERVE_TEST_HEAD_MS, ELS_SERVE_TEST_REQUEST_MS and
 * ELS_SERVE_TEST_STALL_MS shorten the deadlines (serve_limits()).  Sends
 * use MSG_NOSIGNAL, so a browser closing its end is an error we handle,
 * not a SIGPIPE.  Not its job: what a request is answered
 * (routes.c), HTTP parsing and the deadline bookkeeping
 * (http.c), or the poll loop (serve.c).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "serve.h"
#include "monitor/util.h"

/* Pending output over which a client's requests are not read (and an
 * event stream's updates skipped: each carries the whole state, the next
 * one replaces it).  A client can make us hold this plus one response,
 * whatever it pipelines: 64 clients 16 MiB plus their responses.  Well
 * above one update of the state (tens of KiB), so a page that reads
 * never meets it. */
#define SERVE_OUT_MAX (256u << 10)
/* Note [Connection deadlines] in http.c.  A browser sends a
 * head in one piece within milliseconds: 10 s is only for a slow link.
 * 60 s for a whole request covers a speedscope export of megabytes on a
 * slow link.  15 s over the output bound: a page stopped reading (a
 * browser reads a background tab's event stream all the same). */
#define SERVE_HEAD_MS 10000
#define SERVE_REQUEST_MS 60000
#define SERVE_STALL_MS 15000
#define SERVE_IDLE_MS 30000             /* a kept-alive connection unused */
#define SERVE_DRAIN_MS 2000

/* ------------------------------------------------------------------------
 * Slots
 * ------------------------------------------------------------------------ */

void serve_close(struct serve *s, struct serve_client *c)
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
    c->sse_pid = 0;
    c->sse_start = 0;
    free(c->body);
    c->body = NULL;
    c->body_len = 0;
    c->in_body = false;
}

void serve_accept(struct serve *s, uint64_t now)
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

/* ------------------------------------------------------------------------
 * Reading requests, sending answers
 * ------------------------------------------------------------------------ */

static size_t serve_pending(const struct serve_client *c)
{
    return c->out.len - c->out_off;
}

bool serve_paused(const struct serve_client *c)
{
    return serve_pending(c) > SERVE_OUT_MAX;
}

/* The body of c's request is all here: answer it, and forget the body. */
static void serve_body_done(struct serve *s, struct serve_client *c,
                            uint64_t now)
{
    c->req.body = c->body;
    c->req.body_len = c->body_len;
    serve_route(s, c, &c->req, now);
    free(c->body);
    c->body = NULL;
    c->body_len = 0;
    c->in_body = false;
    c->req.body = NULL;
    http_clock_request(&c->clock, now, c->in_len > 0 && !c->closing);
    http_clock_output(&c->clock, now, serve_pending(c), SERVE_OUT_MAX);
}

/* r's head (n bytes of c->in) announces a body: read it if its route
 * takes one that long (what is already in c->in first), else refuse. */
static void serve_body_start(struct serve *s, struct serve_client *c,
                             const struct http_request *r, size_t n,
                             uint64_t now)
{
    uint64_t max = serve_body_max(s, r);
    if (r->content_length > max || (c->body = malloc(r->content_length)) == NULL) {
        s->refused++;
        serve_error(c, r->content_length > max ? 413 : 503);
        c->in_len = 0;
        http_clock_request(&c->clock, now, false);
        return;
    }
    c->req = *r;
    c->in_body = true;
    size_t take = c->in_len - n;
    if (take > r->content_length)
        take = (size_t)r->content_length;
    memcpy(c->body, c->in + n, take);
    c->body_len = take;
    memmove(c->in, c->in + n + take, c->in_len - n - take);
    c->in_len -= n + take;
    /* The head's clock becomes the request's, which the body must meet. */
    http_clock_request(&c->clock, now, false);
    if (c->body_len == r->content_length)
        serve_body_done(s, c, now);
    else if (r->expect_continue)
        sb_puts(&c->out, "HTTP/1.1 100 Continue\r\n\r\n");
}

/* Handle the complete requests in c->in (pipelined ones in order), while
 * the client's output stays within its bound: one response may take it
 * over, and the rest wait until it has read. */
void serve_requests(struct serve *s, struct serve_client *c,
                    uint64_t now)
{
    while (c->in_len > 0 && !c->closing && !c->sse && !c->in_body &&
           !serve_paused(c)) {
        struct http_request r;
        int n = http_parse_request(c->in, c->in_len, &r);
        if (n == 0)
            return;
        if (n < 0 || (s->loopback && !http_host_is_loopback(r.host))) {
            s->refused++;
            serve_error(c, n < 0 ? -n : 403);
            c->in_len = 0;
        } else if (!serve_authorize(s, c, &r)) {
            /* Answered (401, or the 303 of a ?token= URL), its body
             * unread: a refusal closes, and the 303 keeps the
             * connection only for a request without one. */
            memmove(c->in, c->in + n, c->in_len - (size_t)n);
            c->in_len -= (size_t)n;
        } else if (r.content_length > 0) {
            serve_body_start(s, c, &r, (size_t)n, now);
            continue;
        } else {
            serve_route(s, c, &r, now);
            memmove(c->in, c->in + n, c->in_len - (size_t)n);
            c->in_len -= (size_t)n;
        }
        if (!c->sse)
            http_clock_request(&c->clock, now, c->in_len > 0 && !c->closing);
        http_clock_output(&c->clock, now, serve_pending(c), SERVE_OUT_MAX);
    }
}

/* Read what c sends of its request's body; answer it once whole. */
static void serve_read_body(struct serve *s, struct serve_client *c,
                            uint64_t now)
{
    while (c->in_body) {
        ssize_t n = recv(c->fd, c->body + c->body_len,
                         (size_t)c->req.content_length - c->body_len, 0);
        if (n > 0) {
            c->body_len += (size_t)n;
            if (c->body_len == c->req.content_length) {
                serve_body_done(s, c, now);
                serve_requests(s, c, now);  /* none can be waiting yet */
            }
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        serve_close(s, c);      /* gone before its body was whole */
        return;
    }
}

bool serve_flush(struct serve_client *c, uint64_t now)
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

void serve_read(struct serve *s, struct serve_client *c, uint64_t now)
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
        if (c->in_body) {
            /* A body is read into its own buffer, not c->in. */
            serve_read_body(s, c, now);
            if (c->fd < 0 || c->in_body)
                return;
        }
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

/* ------------------------------------------------------------------------
 * Deadlines
 * ------------------------------------------------------------------------ */

/* Close the clients whose deadline passed (Note [Connection deadlines]
 * in http.c). */
void serve_deadlines(struct serve *s, uint64_t now)
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

/* The deadlines: the constants above, or shorter ones for a test (the
 * variables are documented as for tests only: a test of a 10 s deadline
 * need not wait 10 s). */
void serve_limits(struct http_limits *l)
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
