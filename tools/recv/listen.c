/*
 * listen.c: `eventlog-sink recv --listen`, the collector end of the
 * unix-connect and tcp-connect sinks.
 *
 * Bind (a UNIX socket file only where nothing but a stale socket is in
 * the way, mode 0600 from the start), say where on stderr (with port 0
 * that line is the only way a script learns the port), and wait for the
 * producer: every connection is accepted while waiting, and the first
 * that sends a complete eventlog header is the producer; the others are
 * closed (Note [Waiting for the producer]).  Then the listener is closed
 * at once, so that a producer redialling later is refused rather than
 * left queued in a backlog nobody reads, and the socket file goes with
 * it.  Copying the stream is recv.c's job.
 */
#if defined(HAVE_CONFIG_H)
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* ppoll */
#endif

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "eventlog-sink.h"
#include "eventlog-sink/parse.h"
#include "recv.h"
#include "../tool.h"
#include "monitor/util.h"

/* Room in the kernel for a burst of connections between two accepts. */
#define RECV_LISTEN_BACKLOG 16

struct recv_listener {
    int fd;
    char endpoint[400];     /* "unix:PATH" (sun_path < 108) or "tcp:..." */
    /* unix: the socket file we bound, to recognise it when removing it. */
    bool bound_file;
    dev_t dev;
    ino_t ino;
};

/* Make the socket path free for bind(), by the rule the unix sink follows
 * (lib/sinks/unix.c): nothing there, or a socket nobody accepts on, which
 * is left over from a process that died and is removed.  A socket someone
 * listens on, and anything that is not a socket, is refused: replacing it
 * would take over another collector's address or destroy a user's file.
 * Connecting is the only reliable test for "left over": the file outlives
 * its process, and then connect() is refused.  A live listener gets one
 * connection that closes at once.  0, or -errno with a line in err. */
static int recv_unix_clear(const struct recv_target *t, char *err,
                           size_t err_len)
{
    const char *path = t->path;
    struct stat st;
    if (lstat(path, &st) < 0) {
        if (errno == ENOENT)
            return 0;
        int e = errno;
        snprintf(err, err_len, "cannot inspect %s: %s", path, strerror(e));
        return -e;
    }
    if (!S_ISSOCK(st.st_mode)) {
        snprintf(err, err_len, "refusing to replace %s: it is %s, and only "
                 "a stale socket is replaced", path,
                 util_file_type_name(st.st_mode));
        return -EEXIST;
    }
    int fd = util_socket_nb(AF_UNIX, SOCK_STREAM);
    if (fd < 0) {
        snprintf(err, err_len, "cannot create a socket to probe %s: %s",
                 path, strerror(-fd));
        return fd;
    }
    int rc;
    while ((rc = connect(fd, t->ai->ai_addr, t->ai->ai_addrlen)) < 0 &&
           errno == EINTR) {
    }
    int e = rc < 0 ? errno : 0;
    util_close(fd);
    switch (e) {
    case 0:
    case EAGAIN:        /* backlog full: very much alive */
    case EINPROGRESS:
        snprintf(err, err_len, "another process is listening on %s", path);
        return -EADDRINUSE;
    case ECONNREFUSED:  /* nobody listening: stale */
        if (unlink(path) < 0 && errno != ENOENT) {
            e = errno;
            snprintf(err, err_len, "cannot remove stale socket %s: %s", path,
                     strerror(e));
            return -e;
        }
        return 0;
    case ENOENT:        /* removed meanwhile */
        return 0;
    default:
        snprintf(err, err_len, "cannot tell whether %s is in use: connect: "
                 "%s", path, strerror(e));
        return -e;
    }
}

/* Close the listener; remove the socket file only if it is still the one
 * we bound (someone may have replaced it meanwhile).  The comparison runs
 * while our socket is open, so its inode number cannot have been reused
 * (see unix_listen_close() in lib/sinks/unix.c for the same argument). */
static void recv_listener_close(struct recv_listener *l,
                                const struct recv_target *t)
{
    if (l->fd < 0)
        return;
    if (l->bound_file)
        util_unlink_if_same(t->path, S_IFSOCK, l->dev, l->ino);
    l->bound_file = false;
    util_close(l->fd);
    l->fd = -1;
}

/* The socket file is 0600 from the moment the path names it, and nothing
 * planted at the path is followed: the library's way, through
 * els_endpoint_listen_unix() (Note [Socket file permissions] in
 * lib/sinks/unix.c). */
static int recv_listen_unix(struct recv_listener *l,
                            const struct recv_target *t,
                            char *err, size_t err_len)
{
    const char *path = t->path;
    int rc = recv_unix_clear(t, err, err_len);
    if (rc < 0)
        return rc;
    char why[256];
    uint64_t dev = 0, ino = 0;
    l->fd = els_endpoint_listen_unix(path, 0600, RECV_LISTEN_BACKLOG, &dev,
                                     &ino, why, sizeof why);
    if (l->fd < 0) {
        rc = l->fd;
        l->fd = -1;
        if (rc == ELS_EEXIST)
            snprintf(err, err_len, "cannot bind %s: another process created "
                     "it just now", path);
        else
            snprintf(err, err_len, "cannot listen on %s: %s", path, why);
        return rc;
    }
    l->bound_file = true;
    l->dev = (dev_t)dev;
    l->ino = (ino_t)ino;
    snprintf(l->endpoint, sizeof l->endpoint, "unix:%s", path);
    return 0;
}

static int recv_listen_tcp(struct recv_listener *l,
                           const struct recv_target *t,
                           char *err, size_t err_len)
{
    char where[300];
    int rc = els_endpoint_listen_tcp(t->ai, RECV_LISTEN_BACKLOG, where,
                                     sizeof where);
    if (rc < 0) {
        snprintf(err, err_len, "cannot listen on tcp:%s: %s", where,
                 strerror(-rc));
        return rc;
    }
    l->fd = rc;
    /* With port 0 the kernel chose: report the real port. */
    rc = els_endpoint_name(l->fd, l->endpoint, sizeof l->endpoint);
    if (rc < 0) {
        snprintf(err, err_len, "%s: cannot read the bound address: %s",
                 t->spec, strerror(-rc));
        util_close(l->fd);
        l->fd = -1;
        return rc;
    }
    return 0;
}


/* ------------------------------------------------------------------------
 * recv: waiting for the producer
 *
 * Note [Waiting for the producer]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Anyone who can reach the endpoint can connect before the producer does
 * (over TCP, any local user; a port scanner; the library's unix sink,
 * which probes an existing socket to see whether anyone listens).  Taking
 * the first connection for the producer let a silent one hold the
 * receiver until --timeout while the real producer waited unaccepted.
 * So every connection is accepted while we wait and judged by what it
 * sends, through the library's parser: the first whose bytes complete an
 * eventlog header ("hdrb" ... "datb") is the producer, and whatever it
 * sent so far starts the copy.  The others are closed:
 *   - as soon as their bytes cannot start an eventlog (the parser fails),
 *     or fill RECV_HEADER_MAX without completing a header;
 *   - when RECV_HEADER_DEADLINE_MS pass without a complete header;
 *   - when more than RECV_PENDING_MAX are waiting: the one waiting
 *     longest goes.  A producer sends its header right after connecting
 *     (the sink's first unit), so it is judged within milliseconds; to
 *     push it out, a flood must open RECV_PENDING_MAX connections in
 *     that time, while closing the newest instead would let a few idle
 *     connections refused the producer for RECV_HEADER_DEADLINE_MS each.
 * A connection that closes before sending anything is a probe and is
 * dropped without a word; the others are counted and reported on stderr
 * at most once a second.  Memory stays bounded: RECV_PENDING_MAX
 * connections, each with at most RECV_HEADER_MAX bytes and one parser.
 * This tells a producer from a mistake or an idle neighbour, not from an
 * impostor: whoever sends a valid header first is taken.  A collector
 * that must know its producer listens on a unix: socket (mode 0600).
 * ------------------------------------------------------------------------ */

#define RECV_PENDING_MAX 8
#define RECV_HEADER_DEADLINE_MS 5000
/* GHC 9.0.2's header is about 8 KiB. */
#define RECV_HEADER_MAX (256u * 1024u)
#define RECV_ACCEPTS_PER_WAKE 64
#define RECV_REPORT_INTERVAL_MS 1000

struct recv_pending {
    int fd;
    uint64_t since_ms;              /* accepted at */
    struct els_parser *parser;      /* from its first byte on */
    uint8_t *buf;                   /* what it sent, for the copy */
    size_t len;
};

/* Connections closed for not being the producer, by reason. */
struct recv_refusals {
    uint64_t not_header, silent, too_many;
    uint64_t reported_ms;           /* last report */
    bool unreported;
};

struct recv_waiting {
    struct recv_pending p[RECV_PENDING_MAX];
    size_t n;
    struct recv_refusals r;
    const char *endpoint;
};

static void recv_pending_drop(struct recv_pending *p)
{
    util_close(p->fd);
    els_parser_free(p->parser);
    free(p->buf);
    *p = (struct recv_pending){ .fd = -1 };
}

/* Close connection i, counting it in *counter (NULL: a probe, not
 * counted), and keep the others in the order they came. */
static void recv_waiting_close(struct recv_waiting *w, size_t i,
                               uint64_t *counter)
{
    recv_pending_drop(&w->p[i]);
    memmove(&w->p[i], &w->p[i + 1], (w->n - i - 1) * sizeof w->p[0]);
    w->n--;
    if (counter != NULL) {
        (*counter)++;
        w->r.unreported = true;
    }
}

/* One line for the refusals since the last one, when there are any and
 * (unless force) a second has passed. */
static void recv_report(struct recv_waiting *w, uint64_t now, bool force)
{
    struct recv_refusals *r = &w->r;
    if (!r->unreported ||
        (!force && now < r->reported_ms + RECV_REPORT_INTERVAL_MS))
        return;
    fprintf(stderr, TOOL_NAME " recv: closed connections to %s that were "
            "not a producer, so far: %llu sent no eventlog header within "
            "%d s, %llu sent something else, %llu beyond %d waiting\n",
            w->endpoint, (unsigned long long)r->silent,
            RECV_HEADER_DEADLINE_MS / 1000, (unsigned long long)r->not_header,
            (unsigned long long)r->too_many, RECV_PENDING_MAX);
    r->unreported = false;
    r->reported_ms = now;
}

/* Read what connection i sent and judge it.  1: it is the producer;
 * 0: still waiting (or it was closed). */
static int recv_pending_read(struct recv_waiting *w, size_t i)
{
    struct recv_pending *p = &w->p[i];
    if (p->buf == NULL) {
        p->buf = malloc(RECV_HEADER_MAX);
        if (p->buf == NULL) {
            recv_waiting_close(w, i, &w->r.not_header);
            return 0;
        }
    }
    ssize_t n = read(p->fd, p->buf + p->len, RECV_HEADER_MAX - p->len);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return 0;
    if (n <= 0) {
        /* Closed (or reset) before a complete header: a probe if it sent
         * nothing at all. */
        recv_waiting_close(w, i, p->len == 0 ? NULL : &w->r.not_header);
        return 0;
    }
    if (p->parser == NULL && els_parser_new(&p->parser, NULL, NULL, 0) < 0) {
        recv_waiting_close(w, i, &w->r.not_header);
        return 0;
    }
    const uint8_t *fresh = p->buf + p->len;
    p->len += (size_t)n;
    (void)els_parser_feed(p->parser, fresh, (size_t)n, NULL);
    struct els_parse_status st;
    els_parser_status(p->parser, &st);
    /* A header completed (streams counts them) makes the producer, even
     * if what follows it in the same read is malformed: that is the
     * copy's verdict to give, as for any stream. */
    if (st.streams > 0)
        return 1;
    if (st.where == ELS_PARSE_FAILED || p->len == RECV_HEADER_MAX)
        recv_waiting_close(w, i, &w->r.not_header);
    return 0;
}

/* Accept what the listener holds (a bounded number per wake, so that a
 * flood cannot keep us from reading the connections we have).  0 or
 * -errno from accept(). */
static int recv_accept_all(struct recv_waiting *w, int listen_fd, uint64_t now)
{
    for (int k = 0; k < RECV_ACCEPTS_PER_WAKE; k++) {
        int fd;
        int rc = util_accept_nb(listen_fd, &fd);
        if (rc == -EAGAIN)
            return 0;
        if (rc < 0)
            return rc;
        if (w->n == RECV_PENDING_MAX)
            recv_waiting_close(w, 0, &w->r.too_many);
        w->p[w->n++] = (struct recv_pending){ .fd = fd, .since_ms = now };
    }
    return 0;
}

int recv_listen_accept(const struct recv_signals *s,
                       const struct recv_target *t, long timeout_ms,
                       struct recv_prefix *prefix, char *err, size_t err_len)
{
    struct recv_listener l = { .fd = -1 };
    int rc = t->scheme == RECV_UNIX ? recv_listen_unix(&l, t, err, err_len)
                                    : recv_listen_tcp(&l, t, err, err_len);
    if (rc < 0)
        return rc;
    /* Unbuffered stderr: the line is out before anyone can connect. */
    fprintf(stderr, TOOL_NAME " recv: listening on %s\n", l.endpoint);

    struct recv_waiting w = { .n = 0, .endpoint = l.endpoint };
    uint64_t deadline = recv_now_ms() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms);
    int fd = -1;
    for (;;) {
        if (recv_stop_signal) {
            snprintf(err, err_len, "stopped before a producer connected to "
                     "%s", l.endpoint);
            rc = -EINTR;
            break;
        }
        uint64_t now = recv_now_ms();
        if (timeout_ms >= 0 && now >= deadline) {
            snprintf(err, err_len, "no producer connected to %s within "
                     "%g s", l.endpoint, (double)timeout_ms / 1000.0);
            rc = -ETIMEDOUT;
            break;
        }
        /* The next thing due: the deadline, a header deadline, a report. */
        uint64_t due = timeout_ms >= 0 ? deadline : UINT64_MAX;
        for (size_t i = w.n; i-- > 0;) {
            uint64_t expires = w.p[i].since_ms + RECV_HEADER_DEADLINE_MS;
            if (now >= expires)
                recv_waiting_close(&w, i, &w.r.silent);
            else if (expires < due)
                due = expires;
        }
        recv_report(&w, now, false);
        if (w.r.unreported && w.r.reported_ms + RECV_REPORT_INTERVAL_MS < due)
            due = w.r.reported_ms + RECV_REPORT_INTERVAL_MS;

        struct pollfd pfd[1 + RECV_PENDING_MAX];
        pfd[0] = (struct pollfd){ .fd = l.fd, .events = POLLIN };
        for (size_t i = 0; i < w.n; i++)
            pfd[1 + i] = (struct pollfd){ .fd = w.p[i].fd, .events = POLLIN };
        struct timespec ts, *tsp = NULL;
        if (due != UINT64_MAX) {
            uint64_t ms = due > now ? due - now : 0;
            ts.tv_sec = (time_t)(ms / 1000);
            ts.tv_nsec = (long)(ms % 1000) * 1000000L;
            tsp = &ts;
        }
        /* SIGINT/SIGTERM deliverable only while we wait: Note [Stop
         * signals] in recv.c. */
        int n = ppoll(pfd, 1 + w.n, tsp, &s->waiting);
        if (n < 0 && errno != EINTR) {
            rc = -errno;
            snprintf(err, err_len, "cannot wait on %s: %s", l.endpoint,
                     strerror(-rc));
            break;
        }
        if (n <= 0)
            continue;
        /* Connections first (their pfd entries match w.p as it is now),
         * from the last, so that closing one moves none still to read. */
        size_t chosen = SIZE_MAX;
        for (size_t i = w.n; i-- > 0;) {
            if (pfd[1 + i].revents == 0)
                continue;
            if (recv_pending_read(&w, i) == 1) {
                chosen = i;
                break;
            }
        }
        if (chosen != SIZE_MAX) {
            struct recv_pending *p = &w.p[chosen];
            fd = p->fd;
            prefix->bytes = p->buf;
            prefix->len = p->len;
            els_parser_free(p->parser);
            *p = (struct recv_pending){ .fd = -1 };
            rc = 0;
            break;
        }
        if (pfd[0].revents != 0) {
            rc = recv_accept_all(&w, l.fd, recv_now_ms());
            if (rc < 0) {
                snprintf(err, err_len, "cannot accept on %s: %s", l.endpoint,
                         strerror(-rc));
                break;
            }
        }
    }
    recv_report(&w, recv_now_ms(), true);
    for (size_t i = 0; i < w.n; i++)
        if (w.p[i].fd >= 0)
            recv_pending_drop(&w.p[i]);
    recv_listener_close(&l, t);
    return rc == 0 ? fd : rc;
}
