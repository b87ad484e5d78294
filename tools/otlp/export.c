/*
 * export.c: the OTLP exporter's queue and its one delivery thread (see
 * export.h).  Plain HTTP/1.1 over TCP, one connection per request
 * (Connection: close): a request every few seconds per signal does not
 * need keep-alive, and a fresh connection never meets a half-closed one.
 *
 * Note [OTLP exporter locking]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * One mutex guards the queue, the counters and last_error.  The stream
 * reader holds it for a list append (and evictions); the exporter thread
 * holds it to take the head and to account an outcome, never across
 * connect, send, recv or a backoff wait (the wait is a condition wait,
 * which releases it).  So the reader waits at most for a few pointer
 * moves, never for the network.
 */
#include "otlp/export.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define OTLP_RESPONSE_MAX (64u << 10)   /* response bytes read, headers included */

struct otlp_batch {
    struct otlp_batch *next;
    enum otlp_signal sig;
    uint8_t *body;
    size_t len;
    uint64_t items;
};

struct otlp_exporter {
    struct otlp_config cfg;
    struct otlp_retry retry;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond;            /* CLOCK_MONOTONIC */
    struct otlp_batch *head, *tail;
    bool stop;
    uint64_t flush_deadline_ms;     /* with stop: deliver until then */
    struct otlp_stats st;
    uint64_t rng;
};

static const char *const otlp_drop_names[OTLP_NDROP_CAUSES] = {
    "queue_full", "too_large", "gave_up", "refused", "shutdown",
};

const char *otlp_drop_cause_name(enum otlp_drop_cause c)
{
    return (unsigned)c < OTLP_NDROP_CAUSES ? otlp_drop_names[c] : "unknown";
}

static uint64_t otlp_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void otlp_drop_locked(struct otlp_exporter *e, struct otlp_batch *b,
                             enum otlp_drop_cause cause)
{
    e->st.sig[b->sig].dropped_batches[cause]++;
    e->st.sig[b->sig].dropped_items[cause] += b->items;
}

static void otlp_set_error_locked(struct otlp_exporter *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void otlp_set_error_locked(struct otlp_exporter *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->st.last_error, sizeof e->st.last_error, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------------------
 * The queue
 * ------------------------------------------------------------------------ */

int otlp_exporter_enqueue(struct otlp_exporter *e, enum otlp_signal s,
                          struct otlp_buf *body, uint64_t items)
{
    struct otlp_batch *b = malloc(sizeof *b);
    uint8_t *p = body->p;
    size_t len = body->len;
    body->p = NULL;
    body->len = body->cap = 0;
    pthread_mutex_lock(&e->mu);
    e->st.sig[s].enqueued_batches++;
    e->st.sig[s].enqueued_items += items;
    if (b == NULL || len > e->st.bound_bytes) {
        e->st.sig[s].dropped_batches[OTLP_DROP_TOO_LARGE]++;
        e->st.sig[s].dropped_items[OTLP_DROP_TOO_LARGE] += items;
        pthread_mutex_unlock(&e->mu);
        free(b);
        free(p);
        return -ENOBUFS;
    }
    *b = (struct otlp_batch){ .sig = s, .body = p, .len = len, .items = items };
    /* Drop oldest first: see export.h. */
    while (e->st.held_bytes + len > e->st.bound_bytes && e->head != NULL) {
        struct otlp_batch *old = e->head;
        e->head = old->next;
        if (e->head == NULL)
            e->tail = NULL;
        e->st.sig[old->sig].queued_batches--;
        e->st.held_bytes -= old->len;
        otlp_drop_locked(e, old, OTLP_DROP_QUEUE_FULL);
        free(old->body);
        free(old);
    }
    if (e->st.held_bytes + len > e->st.bound_bytes) {
        /* Only the batch in flight is left and the two do not fit. */
        otlp_drop_locked(e, b, OTLP_DROP_QUEUE_FULL);
        pthread_mutex_unlock(&e->mu);
        free(b->body);
        free(b);
        return -ENOBUFS;
    }
    if (e->tail)
        e->tail->next = b;
    else
        e->head = b;
    e->tail = b;
    e->st.sig[s].queued_batches++;
    e->st.held_bytes += len;
    if (e->st.held_bytes > e->st.peak_held_bytes)
        e->st.peak_held_bytes = e->st.held_bytes;
    pthread_cond_signal(&e->cond);
    pthread_mutex_unlock(&e->mu);
    return 0;
}

void otlp_exporter_stats(struct otlp_exporter *e, struct otlp_stats *out)
{
    pthread_mutex_lock(&e->mu);
    *out = e->st;
    pthread_mutex_unlock(&e->mu);
}

/* ------------------------------------------------------------------------
 * One HTTP request
 * ------------------------------------------------------------------------ */

struct otlp_reply {
    int status;                 /* 0: no answer (connection error, timeout) */
    long long retry_after_ms;   /* -1: none */
    char *body;                 /* into buf */
    size_t body_len;
    char why[512];
    char buf[OTLP_RESPONSE_MAX + 1];
};

/* true once otlp_exporter_free()'s flush time is over: a request in
 * flight gives up then instead of at its own timeout.  Read without the
 * lock (atomics: written under it, before the broadcast). */
static bool otlp_cancelled(struct otlp_exporter *e)
{
    return __atomic_load_n(&e->stop, __ATOMIC_ACQUIRE) &&
           otlp_now_ms() >= __atomic_load_n(&e->flush_deadline_ms, __ATOMIC_RELAXED);
}

/* Wait for events on fd until deadline, looking at otlp_cancelled() every
 * 100 ms. */
static int otlp_wait_fd(struct otlp_exporter *e, int fd, short events, uint64_t deadline)
{
    for (;;) {
        uint64_t now = otlp_now_ms();
        if (otlp_cancelled(e))
            return -ECANCELED;
        if (now >= deadline)
            return -ETIMEDOUT;
        struct pollfd pfd = { .fd = fd, .events = events };
        int n = poll(&pfd, 1, (int)(deadline - now > 100 ? 100 : deadline - now));
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return -errno;
    }
}

static int otlp_connect(struct otlp_exporter *e, const struct otlp_url *u, uint64_t deadline, char *why, size_t wl)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res;
    int rc = getaddrinfo(u->host, u->port, &hints, &res);
    if (rc != 0) {
        snprintf(why, wl, "cannot resolve %.200s: %s", u->host, gai_strerror(rc));
        return -1;
    }
    int fd = -1, err = 0;
    for (struct addrinfo *ai = res; ai != NULL && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
            err = errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS) {
            err = errno;
        } else {
            int w = otlp_wait_fd(e, fd, POLLOUT, deadline);
            socklen_t sl = sizeof err;
            if (w < 0)
                err = -w;
            else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl) < 0)
                err = errno;
            if (err == 0)
                break;
        }
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        snprintf(why, wl, "cannot connect to %.200s port %s: %s", u->host, u->port, strerror(err));
    return fd;
}

static int otlp_send_all(struct otlp_exporter *e, int fd, const void *d, size_t n, uint64_t deadline)
{
    const char *p = d;
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
        } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int rc = otlp_wait_fd(e, fd, POLLOUT, deadline);
            if (rc < 0)
                return rc;
        } else if (w < 0 && errno != EINTR) {
            return -errno;
        }
    }
    return 0;
}

long long otlp_retry_after_ms(const char *v, long long now_unix)
{
    while (*v == ' ' || *v == '\t')
        v++;
    if (*v >= '0' && *v <= '9') {
        char *end;
        errno = 0;
        unsigned long long s = strtoull(v, &end, 10);
        while (*end == ' ' || *end == '\t' || *end == '\r')
            end++;
        if (errno != 0 || *end != '\0' || s > 86400ull * 365)
            return -1;
        return (long long)s * 1000;
    }
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *end = strptime(v, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    if (end == NULL)
        return -1;
    while (*end == ' ' || *end == '\t' || *end == '\r')
        end++;
    if (*end != '\0')
        return -1;
    long long at = (long long)timegm(&tm);
    return at <= now_unix ? 0 : (at - now_unix) * 1000;
}

/* Parse the status line and the headers we use; body points after them. */
static void otlp_parse_reply(struct otlp_reply *r, size_t len)
{
    r->buf[len] = '\0';
    int major, minor, status;
    if (sscanf(r->buf, "HTTP/%d.%d %d", &major, &minor, &status) != 3 || status < 100 || status > 999) {
        snprintf(r->why, sizeof r->why, "not an HTTP response");
        return;
    }
    r->status = status;
    char *hdr_end = strstr(r->buf, "\r\n\r\n");
    if (hdr_end == NULL)
        return;
    *hdr_end = '\0';
    r->body = hdr_end + 4;
    r->body_len = len - (size_t)(r->body - r->buf);
    for (char *line = strstr(r->buf, "\r\n"); line != NULL; ) {
        line += 2;
        char *next = strstr(line, "\r\n");
        if (next)
            *next = '\0';
        if (strncasecmp(line, "Retry-After:", 12) == 0)
            r->retry_after_ms = otlp_retry_after_ms(line + 12, (long long)time(NULL));
        else if (strncasecmp(line, "Content-Length:", 15) == 0) {
            unsigned long long cl = strtoull(line + 15, NULL, 10);
            if (cl < r->body_len)
                r->body_len = (size_t)cl;
        }
        line = next;
    }
}

/* Content-Length of the response if the headers are complete and say it,
 * so that reading can stop without waiting for the close. */
static bool otlp_reply_complete(const char *buf, size_t len)
{
    const char *end = memmem(buf, len, "\r\n\r\n", 4);
    if (end == NULL)
        return false;
    size_t hl = (size_t)(end - buf) + 4;
    for (const char *p = buf; p < end; p++) {
        if ((p == buf || p[-1] == '\n') && (size_t)(end - p) > 15 &&
            strncasecmp(p, "Content-Length:", 15) == 0)
            return len >= hl + strtoull(p + 15, NULL, 10);
    }
    return false;
}

static void otlp_post(struct otlp_exporter *e, const struct otlp_batch *b, struct otlp_reply *r)
{
    const struct otlp_config *c = &e->cfg;
    const struct otlp_url *u = &c->url[b->sig];
    uint64_t deadline = otlp_now_ms() + c->timeout_ms;
    r->status = 0;
    r->retry_after_ms = -1;
    r->body = NULL;
    r->body_len = 0;
    r->why[0] = '\0';
    int fd = otlp_connect(e, u, deadline, r->why, sizeof r->why);
    if (fd < 0)
        return;
    struct otlp_buf h = { 0 };
    bool v6 = strchr(u->host, ':') != NULL;
    otlp_buf_printf(&h, "POST %s HTTP/1.1\r\nHost: %s%s%s:%s\r\n", u->path,
                    v6 ? "[" : "", u->host, v6 ? "]" : "", u->port);
    otlp_buf_printf(&h, "User-Agent: eventlog-sink-otlp\r\nContent-Type: %s\r\n"
                    "Content-Length: %zu\r\nConnection: close\r\n",
                    c->format == OTLP_JSON ? "application/json" : "application/x-protobuf", b->len);
    for (size_t i = 0; i < c->nheaders; i++) {
        otlp_buf_puts(&h, c->headers[i].name);
        otlp_buf_puts(&h, ": ");
        otlp_buf_puts(&h, c->headers[i].value);
        otlp_buf_puts(&h, "\r\n");
    }
    otlp_buf_puts(&h, "\r\n");
    int rc = h.failed ? -ENOMEM : otlp_send_all(e, fd, h.p, h.len, deadline);
    otlp_buf_free(&h);
    if (rc == 0)
        rc = otlp_send_all(e, fd, b->body, b->len, deadline);
    if (rc < 0) {
        snprintf(r->why, sizeof r->why, "sending to %.200s: %s", u->text, strerror(-rc));
        close(fd);
        return;
    }
    size_t len = 0;
    for (;;) {
        if (len == OTLP_RESPONSE_MAX || otlp_reply_complete(r->buf, len))
            break;     /* the rest of an oversized answer is not read */
        ssize_t n = recv(fd, r->buf + len, OTLP_RESPONSE_MAX - len, 0);
        if (n > 0) {
            len += (size_t)n;
        } else if (n == 0) {
            break;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if ((rc = otlp_wait_fd(e, fd, POLLIN, deadline)) < 0) {
                snprintf(r->why, sizeof r->why, "no answer from %.200s within %u ms", u->text, c->timeout_ms);
                close(fd);
                return;
            }
        } else if (errno != EINTR) {
            snprintf(r->why, sizeof r->why, "reading from %.200s: %s", u->text, strerror(errno));
            close(fd);
            return;
        }
    }
    close(fd);
    otlp_parse_reply(r, len);
    if (r->status == 0 && r->why[0] == '\0')
        snprintf(r->why, sizeof r->why, "%.200s closed without an answer", u->text);
}

/* ------------------------------------------------------------------------
 * Partial success
 * ------------------------------------------------------------------------ */

static int otlp_pb_skip(const uint8_t **p, const uint8_t *end, unsigned wire)
{
    uint64_t v;
    switch (wire) {
    case 0: return pb_read_varint(p, end, &v) ? 0 : -EINVAL;
    case 1: if (end - *p < 8) return -EINVAL; *p += 8; return 0;
    case 5: if (end - *p < 4) return -EINVAL; *p += 4; return 0;
    case 2:
        if (!pb_read_varint(p, end, &v) || v > (uint64_t)(end - *p))
            return -EINVAL;
        *p += v;
        return 0;
    default: return -EINVAL;
    }
}

static int otlp_json_number_after(const char *body, size_t len, const char *key, uint64_t *out)
{
    const char *k = memmem(body, len, key, strlen(key));
    if (k == NULL)
        return 1;
    const char *p = k + strlen(key), *end = body + len;
    while (p < end && (*p == ' ' || *p == ':' || *p == '"' || *p == '\t' || *p == '\n'))
        p++;
    if (p == end || *p < '0' || *p > '9')
        return -EINVAL;
    uint64_t v = 0;
    while (p < end && *p >= '0' && *p <= '9')
        v = v * 10 + (uint64_t)(*p++ - '0');
    *out = v;
    return 0;
}

int otlp_partial_success(const uint8_t *body, size_t len, bool json,
                         uint64_t *rejected, char *msg, size_t msglen)
{
    *rejected = 0;
    if (msglen)
        msg[0] = '\0';
    if (json) {
        const char *b = (const char *)body;
        const char *ps = memmem(b, len, "\"partialSuccess\"", 16);
        if (ps == NULL)
            return 1;
        size_t rest = len - (size_t)(ps - b);
        static const char *const keys[] = {
            "\"rejectedDataPoints\"", "\"rejectedLogRecords\"", "\"rejectedSpans\"",
        };
        for (size_t i = 0; i < 3; i++) {
            int rc = otlp_json_number_after(ps, rest, keys[i], rejected);
            if (rc <= 0)
                break;
        }
        const char *em = memmem(ps, rest, "\"errorMessage\"", 14);
        if (em != NULL && msglen) {
            const char *q = memchr(em + 14, '"', rest - (size_t)(em + 14 - ps));
            size_t o = 0;
            for (q = q ? q + 1 : NULL; q && q < b + len && *q != '"' && o + 1 < msglen; q++)
                msg[o++] = (*q >= 0x20 && *q < 0x7f) ? *q : '?';
            msg[o] = '\0';
        }
        return 0;
    }
    const uint8_t *p = body, *end = body + len;
    int found = 1;
    while (p < end) {
        uint64_t tag;
        if (!pb_read_varint(&p, end, &tag))
            return -EINVAL;
        if (tag >> 3 == 1 && (tag & 7) == 2) {
            uint64_t n;
            if (!pb_read_varint(&p, end, &n) || n > (uint64_t)(end - p))
                return -EINVAL;
            const uint8_t *q = p, *qend = p + n;
            p = qend;
            found = 0;
            while (q < qend) {
                uint64_t t2;
                if (!pb_read_varint(&q, qend, &t2))
                    return -EINVAL;
                if (t2 >> 3 == 1 && (t2 & 7) == 0) {
                    if (!pb_read_varint(&q, qend, rejected))
                        return -EINVAL;
                } else if (t2 >> 3 == 2 && (t2 & 7) == 2) {
                    uint64_t ml;
                    if (!pb_read_varint(&q, qend, &ml) || ml > (uint64_t)(qend - q))
                        return -EINVAL;
                    size_t o = 0;
                    for (uint64_t i = 0; i < ml && o + 1 < msglen; i++)
                        msg[o++] = (q[i] >= 0x20 && q[i] < 0x7f) ? (char)q[i] : '?';
                    if (msglen)
                        msg[o] = '\0';
                    q += ml;
                } else if (otlp_pb_skip(&q, qend, (unsigned)(t2 & 7)) < 0) {
                    return -EINVAL;
                }
            }
        } else if (otlp_pb_skip(&p, end, (unsigned)(tag & 7)) < 0) {
            return -EINVAL;
        }
    }
    return found;
}

/* ------------------------------------------------------------------------
 * The exporter thread
 * ------------------------------------------------------------------------ */

static uint64_t otlp_rand(struct otlp_exporter *e)
{
    /* xorshift64*: jitter only, not a secret */
    e->rng ^= e->rng >> 12;
    e->rng ^= e->rng << 25;
    e->rng ^= e->rng >> 27;
    return e->rng * 2685821657736338717ull;
}

/* Wait ms or until told to stop with nothing more to deliver; the lock is
 * held on entry and on return.  false: stop now. */
static bool otlp_sleep_locked(struct otlp_exporter *e, uint64_t ms)
{
    uint64_t until = otlp_now_ms() + ms;
    for (;;) {
        uint64_t now = otlp_now_ms();
        if (e->stop && now >= e->flush_deadline_ms)
            return false;
        if (now >= until)
            return true;
        uint64_t wake = until;
        if (e->stop && e->flush_deadline_ms < wake)
            wake = e->flush_deadline_ms;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t d = wake - now;
        ts.tv_sec += (time_t)(d / 1000);
        ts.tv_nsec += (long)(d % 1000) * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&e->cond, &e->mu, &ts);
    }
}

static bool otlp_retryable(int status)
{
    return status == 0 || status == 429 || status == 502 || status == 503 || status == 504;
}

/* Deliver one batch, retrying; the lock is held on entry and on return,
 * released around every attempt. */
static void otlp_deliver_locked(struct otlp_exporter *e, struct otlp_batch *b,
                                struct otlp_reply *r)
{
    struct otlp_signal_stats *ss = &e->st.sig[b->sig];
    uint64_t first = otlp_now_ms();
    uint64_t wait = e->retry.initial_ms;
    for (unsigned attempt = 0;; attempt++) {
        if (attempt > 0)
            ss->retries++;
        pthread_mutex_unlock(&e->mu);
        otlp_post(e, b, r);
        uint64_t rejected = 0;
        char msg[128] = "";
        int ps = 1;
        if (r->status >= 200 && r->status < 300 && r->body != NULL)
            ps = otlp_partial_success((const uint8_t *)r->body, r->body_len,
                                      e->cfg.format == OTLP_JSON, &rejected, msg, sizeof msg);
        pthread_mutex_lock(&e->mu);
        const char *sig = otlp_signal_name(b->sig);
        if (r->status >= 200 && r->status < 300) {
            ss->sent_batches++;
            ss->sent_items += b->items;
            ss->rejected_items += rejected;
            if (ps == 0 && (rejected > 0 || msg[0] != '\0'))
                otlp_set_error_locked(e, "%s: partial success: %llu rejected: %s", sig,
                                      (unsigned long long)rejected, msg);
            return;
        }
        if (r->status != 0)
            otlp_set_error_locked(e, "%s: HTTP %d from %.200s", sig, r->status, e->cfg.url[b->sig].text);
        else
            otlp_set_error_locked(e, "%s: %.400s", sig, r->why);
        if (!otlp_retryable(r->status)) {
            otlp_drop_locked(e, b, OTLP_DROP_REFUSED);
            return;
        }
        uint64_t d;
        if (r->retry_after_ms >= 0) {
            d = (uint64_t)r->retry_after_ms;
        } else {
            d = wait / 2 + otlp_rand(e) % (wait / 2 + 1);
            wait = wait * 2 > e->retry.max_ms ? e->retry.max_ms : wait * 2;
        }
        uint64_t now = otlp_now_ms();
        if (now + d > first + e->retry.give_up_ms) {
            otlp_drop_locked(e, b, OTLP_DROP_GAVE_UP);
            return;
        }
        if (!otlp_sleep_locked(e, d)) {
            otlp_drop_locked(e, b, OTLP_DROP_SHUTDOWN);
            return;
        }
    }
}

static void *otlp_exporter_main(void *arg)
{
    struct otlp_exporter *e = arg;
    struct otlp_reply *r = malloc(sizeof *r);
    pthread_mutex_lock(&e->mu);
    for (;;) {
        if (e->head == NULL) {
            if (e->stop)
                break;
            pthread_cond_wait(&e->cond, &e->mu);
            continue;
        }
        if (e->stop && otlp_now_ms() >= e->flush_deadline_ms)
            break;
        struct otlp_batch *b = e->head;
        e->head = b->next;
        if (e->head == NULL)
            e->tail = NULL;
        e->st.sig[b->sig].queued_batches--;
        e->st.sig[b->sig].inflight_batches++;
        if (r == NULL)
            otlp_drop_locked(e, b, OTLP_DROP_GAVE_UP);
        else
            otlp_deliver_locked(e, b, r);
        e->st.sig[b->sig].inflight_batches--;
        e->st.held_bytes -= b->len;
        free(b->body);
        free(b);
    }
    while (e->head != NULL) {
        struct otlp_batch *b = e->head;
        e->head = b->next;
        e->st.sig[b->sig].queued_batches--;
        e->st.held_bytes -= b->len;
        otlp_drop_locked(e, b, OTLP_DROP_SHUTDOWN);
        free(b->body);
        free(b);
    }
    e->tail = NULL;
    pthread_mutex_unlock(&e->mu);
    free(r);
    return NULL;
}

int otlp_exporter_new(struct otlp_exporter **out, const struct otlp_config *c,
                      const struct otlp_retry *retry)
{
    struct otlp_exporter *e = calloc(1, sizeof *e);
    if (e == NULL)
        return -ENOMEM;
    e->cfg = *c;
    e->retry = retry ? *retry : (struct otlp_retry){ 1000, 30000, 120000 };
    if (e->retry.initial_ms == 0)
        e->retry.initial_ms = 1;
    e->st.bound_bytes = c->queue_bytes;
    if (getrandom(&e->rng, sizeof e->rng, GRND_NONBLOCK) != sizeof e->rng || e->rng == 0)
        e->rng = (uint64_t)otlp_now_ms() | 1;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cond, &ca);
    pthread_condattr_destroy(&ca);
    int rc = pthread_create(&e->thread, NULL, otlp_exporter_main, e);
    if (rc != 0) {
        pthread_cond_destroy(&e->cond);
        pthread_mutex_destroy(&e->mu);
        free(e);
        return -rc;
    }
    *out = e;
    return 0;
}

void otlp_exporter_free(struct otlp_exporter *e, unsigned flush_ms)
{
    if (e == NULL)
        return;
    pthread_mutex_lock(&e->mu);
    __atomic_store_n(&e->flush_deadline_ms, otlp_now_ms() + flush_ms, __ATOMIC_RELAXED);
    __atomic_store_n(&e->stop, true, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&e->cond);
    pthread_mutex_unlock(&e->mu);
    pthread_join(e->thread, NULL);
    pthread_cond_destroy(&e->cond);
    pthread_mutex_destroy(&e->mu);
    free(e);
}
