/*
 * tcp.c: the "tcp" sink (listen on a TCP port; every accepted client
 * is a consumer) and the "tcp-connect" sink (connect out to a collector).
 * They turn an address into descriptors and nothing else: the writer
 * thread does every read and write, decides when to accept or redial, and
 * closes what it was given.  Address syntax and name resolution belong to
 * base/address.c; no authentication or encryption happens here, which is why
 * the listener binds to loopback unless a host is given.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/address.h"
#include "base/fdutil.h"
#include "base/log.h"
#include "sinks/sinks.h"
#include "sinks/spec.h"

#define TCP_BACKLOG 16

/* Consumers are sent one unit at a time and a flush may leave a small
 * block; with Nagle's algorithm it would wait for the previous segment's
 * ACK (up to the peer's delayed-ACK timeout) before leaving.  A failure
 * only costs latency, so it is ignored. */
static void tcp_set_nodelay(int fd)
{
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* Parse args->address into *a and resolve it into *res (for bind() if
 * passive, else for connect(), which cannot reach port 0), the caller to
 * freeaddrinfo() it.  What is wrong is said in the spec's words. */
static int tcp_resolve_args(const struct els_sink_args *args, bool passive,
                            struct elsi_tcp_addr *a, struct addrinfo **res)
{
    char why[ELSI_ADDR_ERR_MAX];
    int rc = elsi_tcp_addr_parse(args->address, a, why, sizeof why);
    if (rc < 0)
        return elsi_sink_fail(args, rc, "%s", why);
    if (!passive && a->port == 0)
        return elsi_sink_fail(args, ELS_EINVAL,
                              "port 0 cannot be connected to");
    rc = elsi_tcp_resolve(a, passive, res, why, sizeof why);
    if (rc < 0)
        return elsi_sink_fail(args, rc, "%s", why);
    return 0;
}

/* ------------------------------------------------------------------------
 * tcp: listen on [HOST:]PORT
 * ------------------------------------------------------------------------ */

struct tcp_listener {
    int fd;
    char bound[300];    /* "127.0.0.1:40321" or "[::1]:40321" */
};

/* Who can reach the listener, from the address it is bound to (a name
 * may resolve to anything, so the spec's text cannot tell). */
static enum elsi_reach tcp_reach(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
        return ELSI_REACH_NETWORK;      /* say the worst */
    return elsi_sockaddr_reach((const struct sockaddr *)&ss, len);
}

static int tcp_listen_open(void **sink, const struct els_sink_args *args)
{
    /* Security default: with no HOST the parser gives 127.0.0.1, so the
     * stream (which may reveal what the program does) is only offered to
     * local processes unless the spec names a wider address on purpose. */
    struct elsi_tcp_addr a;
    struct addrinfo *res = NULL;
    int rc = tcp_resolve_args(args, true, &a, &res);
    if (rc < 0)
        return rc;

    struct tcp_listener *t = calloc(1, sizeof *t);
    if (t == NULL) {
        freeaddrinfo(res);
        return elsi_fail(args->err, args->err_len, ELS_ENOMEM,
                         "%s: out of memory", args->spec);
    }

    /* If no address binds, the error names the first "in use" one (the
     * likeliest mistake), else the first failure. */
    char where[300];
    t->fd = elsi_tcp_listen(res, TCP_BACKLOG, args->address, where, sizeof where);
    freeaddrinfo(res);
    if (t->fd < 0) {
        int e = t->fd;
        free(t);
        if (e == -EADDRINUSE)
            return elsi_fail(args->err, args->err_len, ELS_EADDRINUSE,
                             "tcp:%s: address already in use", where);
        return elsi_fail(args->err, args->err_len, e,
                         "tcp:%s: cannot listen: %s", where, strerror(-e));
    }

    /* With port 0 the kernel chose; what we report must be the real one. */
    rc = elsi_bound_address(t->fd, t->bound, sizeof t->bound);
    if (rc < 0) {
        rc = elsi_fail(args->err, args->err_len, rc,
                       "%s: cannot read the bound address: %s", args->spec,
                       strerror(-rc));
        elsi_close(t->fd);
        free(t);
        return rc;
    }
    /* The start-up line says so when the stream leaves this machine:
     * anyone who can connect reads it, with no authentication.  The
     * endpoint is followed by a space, as scripts cut it out of the line. */
    switch (tcp_reach(t->fd)) {
    case ELSI_REACH_LOOPBACK:
        elsi_log(ELS_LOG_INFO, "listening on tcp:%s", t->bound);
        break;
    case ELSI_REACH_ANY:
        elsi_log(ELS_LOG_WARN, "listening on tcp:%s (every network "
                 "interface): the eventlog is exposed without authentication "
                 "to anyone who can reach this machine", t->bound);
        break;
    case ELSI_REACH_NETWORK:
        elsi_log(ELS_LOG_WARN, "listening on tcp:%s (a network address): "
                 "the eventlog is exposed without authentication to anyone "
                 "who can reach that address", t->bound);
        break;
    }
    *sink = t;
    return 0;
}

static void tcp_listen_close(void *sink)
{
    struct tcp_listener *t = sink;
    elsi_close(t->fd);
    free(t);
}

static int tcp_listen_fd(void *sink)
{
    const struct tcp_listener *t = sink;
    return t->fd;
}

static int tcp_accept(void *sink, int *fd)
{
    const struct tcp_listener *t = sink;
    int rc = elsi_accept_nb(t->fd, fd);
    if (rc == 0)
        tcp_set_nodelay(*fd);
    return rc;
}

static int tcp_listen_endpoint(void *sink, char *buf, size_t len)
{
    const struct tcp_listener *t = sink;
    return snprintf(buf, len, "tcp:%s", t->bound);
}

const struct els_sink_ops elsi_sink_tcp = {
    .struct_size = sizeof(struct els_sink_ops),
    .scheme = "tcp",
    .options = NULL,
    .style = ELS_SINK_LISTEN,
    .open = tcp_listen_open,
    .close = tcp_listen_close,
    .listen_fd = tcp_listen_fd,
    .accept = tcp_accept,
    .endpoint = tcp_listen_endpoint,
};

/* ------------------------------------------------------------------------
 * tcp-connect: connect to a collector at [HOST:]PORT
 * ------------------------------------------------------------------------ */

struct tcp_dialer {
    struct addrinfo *res;       /* resolved once, at open */
    size_t n_addrs;
    size_t next;                /* address the next dial() starts with */
    char name[300];             /* "HOST:PORT" / "[V6]:PORT" as given */
};

static int tcp_dial_open(void **sink, const struct els_sink_args *args)
{
    /* Resolved once: a host that does not resolve is a mistake in the spec
     * and should fail at start-up, and the writer thread should not block
     * in getaddrinfo() at every redial. */
    struct elsi_tcp_addr a;
    struct addrinfo *res = NULL;
    int rc = tcp_resolve_args(args, false, &a, &res);
    if (rc < 0)
        return rc;

    struct tcp_dialer *d = calloc(1, sizeof *d);
    if (d == NULL) {
        freeaddrinfo(res);
        return elsi_fail(args->err, args->err_len, ELS_ENOMEM,
                         "%s: out of memory", args->spec);
    }
    d->res = res;
    for (const struct addrinfo *ai = d->res; ai != NULL; ai = ai->ai_next)
        d->n_addrs++;
    snprintf(d->name, sizeof d->name, strchr(a.host, ':') ? "[%s]:%u" : "%s:%u",
             a.host, (unsigned)a.port);
    *sink = d;
    return 0;
}

static void tcp_dial_close(void *sink)
{
    struct tcp_dialer *d = sink;
    freeaddrinfo(d->res);
    free(d);
}

static const struct addrinfo *tcp_dial_addr(const struct tcp_dialer *d, size_t i)
{
    const struct addrinfo *ai = d->res;
    while (i-- > 0)
        ai = ai->ai_next;
    return ai;
}

/* Each call tries the addresses in turn, starting with the one after the
 * address the previous call left connecting: a connect() that fails later
 * (SO_ERROR, seen by the writer) then does not make us retry the same dead
 * address forever.  An address that fails at once is skipped within the
 * same call.  If any address refused, the collector is simply not up yet
 * (-EAGAIN, quietly retried); otherwise the first error is returned for the
 * writer to log. */
static int tcp_dial(void *sink, int *fd)
{
    struct tcp_dialer *d = sink;
    bool refused = false;
    int first_err = 0;
    for (size_t k = 0; k < d->n_addrs; k++) {
        size_t i = (d->next + k) % d->n_addrs;
        const struct addrinfo *ai = tcp_dial_addr(d, i);
        int s = elsi_socket_nb(ai->ai_family, SOCK_STREAM);
        if (s < 0) {
            if (first_err == 0)
                first_err = s;
            continue;
        }
        tcp_set_nodelay(s);
        if (connect(s, ai->ai_addr, ai->ai_addrlen) == 0) {
            *fd = s;
            return 0;
        }
        int e = errno;
        if (e == EINPROGRESS || e == EINTR) {
            /* EINTR: the connection goes on asynchronously. */
            d->next = (i + 1) % d->n_addrs;
            *fd = s;
            return -EINPROGRESS;
        }
        elsi_close(s);
        if (e == ECONNREFUSED)
            refused = true;
        else if (first_err == 0)
            first_err = -e;
    }
    if (refused || first_err == 0)
        return -EAGAIN;
    return first_err;
}

static int tcp_dial_endpoint(void *sink, char *buf, size_t len)
{
    const struct tcp_dialer *d = sink;
    return snprintf(buf, len, "tcp-connect:%s", d->name);
}

const struct els_sink_ops elsi_sink_tcp_connect = {
    .struct_size = sizeof(struct els_sink_ops),
    .scheme = "tcp-connect",
    .options = NULL,
    .style = ELS_SINK_DIAL,
    .open = tcp_dial_open,
    .close = tcp_dial_close,
    .dial = tcp_dial,
    .endpoint = tcp_dial_endpoint,
};
