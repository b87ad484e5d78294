/*
 * test_tcp.c: the "tcp" and "tcp-connect" sinks, called through their
 * ops tables as the writer calls them, on loopback with kernel-chosen
 * ports; plus fdutil's MSG_NOSIGNAL promise on a TCP connection the peer
 * reset.  Address parsing itself is test_address.c's business.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* accept4, setgroups */
#endif

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "check.h"
#include "testutil.h"

#include "base/fdutil.h"
#include "sinks/sinks.h"

static const struct els_sink_ops *const T = &elsi_sink_tcp;
static const struct els_sink_ops *const TC = &elsi_sink_tcp_connect;

static void *open_listener(struct tu_args *t, const char *address)
{
    tu_log_capture();       /* keeps "listening on" lines out of the output */
    void *sink = NULL;
    int rc = T->open(&sink, tu_sink_args(t, "tcp", address, NULL, NULL));
    CHECK_MSG(rc == 0, "open tcp:%s: %d (%s)", address, rc, t->err);
    return sink;
}

/* The port the endpoint reports, checking its form "tcp:<host>:<port>". */
static unsigned endpoint_port(void *sink, const char *host)
{
    char ep[300], prefix[100];
    int n = T->endpoint(sink, ep, sizeof ep);
    CHECK_INT(n, ==, (int)strlen(ep));
    snprintf(prefix, sizeof prefix, "tcp:%s:", host);
    CHECK_MSG(strncmp(ep, prefix, strlen(prefix)) == 0,
              "endpoint \"%s\" does not start with \"%s\"", ep, prefix);
    char *end;
    unsigned long port = strtoul(ep + strlen(prefix), &end, 10);
    CHECK_MSG(*end == '\0' && port > 0 && port < 65536, "endpoint \"%s\"", ep);
    return (unsigned)port;
}

static int accept_one(void *sink)
{
    CHECK_OK(tu_wait_fd(T->listen_fd(sink), POLLIN, TU_WAIT_MS));
    int fd = -1;
    CHECK_OK(T->accept(sink, &fd));
    return fd;
}

static int nodelay(int fd)
{
    int v = -1;
    socklen_t len = sizeof v;
    CHECK_OK(getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &len));
    return v;
}

/* ------------------------------------------------------------------------
 * tcp: listening
 * ------------------------------------------------------------------------ */

/* Port 0: the kernel's choice is what endpoint() and the log report, a
 * client reaches it, and the consumer is set up for small writes. */
static void tcp_port0_endpoint_and_data(void)
{
    tu_log_capture();
    struct tu_args t;
    void *sink = open_listener(&t, "0");
    unsigned port = endpoint_port(sink, "127.0.0.1");
    char line[100];
    snprintf(line, sizeof line, "listening on tcp:127.0.0.1:%u", port);
    CHECK(tu_log_contains(line));
    CHECK(tu_is_nonblock_cloexec(T->listen_fd(sink)));

    int fd = -1;
    CHECK_INT(T->accept(sink, &fd), ==, -EAGAIN);
    int client = tu_connect_tcp("127.0.0.1", port, TU_WAIT_MS);
    CHECK_INT(client, >=, 0);
    fd = accept_one(sink);
    CHECK(tu_is_nonblock_cloexec(fd));
    CHECK_INT(nodelay(fd), !=, 0);

    static const char msg[] = "a block of events";
    CHECK_OK(elsi_write_all(fd, msg, sizeof msg));
    char got[sizeof msg];
    CHECK_OK(tu_read_exact(client, got, sizeof got, TU_WAIT_MS));
    CHECK(memcmp(got, msg, sizeof msg) == 0);
    close(fd);
    close(client);
    T->close(sink);
}

/* Security default: no host means loopback only. */
static void tcp_default_bind_is_loopback(void)
{
    struct tu_args t;
    void *sink = open_listener(&t, "0");
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    CHECK_OK(getsockname(T->listen_fd(sink), (struct sockaddr *)&ss, &len));
    CHECK_INT(ss.ss_family, ==, AF_INET);
    const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;
    CHECK_U64(ntohl(in->sin_addr.s_addr), ==, INADDR_LOOPBACK);
    T->close(sink);
}

/* A port someone (or another writer) listens on is refused by name. */
static void tcp_port_in_use(void)
{
    struct tu_args t1, t2;
    void *first = open_listener(&t1, "0");
    unsigned port = endpoint_port(first, "127.0.0.1");
    char addr[32], want[100];
    snprintf(addr, sizeof addr, "%u", port);
    snprintf(want, sizeof want, "tcp:127.0.0.1:%u: address already in use", port);

    void *second = NULL;
    CHECK_INT(T->open(&second, tu_sink_args(&t2, "tcp", addr, NULL, NULL)), ==,
              ELS_EADDRINUSE);
    CHECK_STR(t2.err, want);
    T->close(first);

    /* The same against a listener outside the library. */
    unsigned port2;
    int other = tu_bind_tcp("127.0.0.1", true, &port2);
    CHECK_INT(other, >=, 0);
    snprintf(addr, sizeof addr, "127.0.0.1:%u", port2);
    CHECK_INT(T->open(&second, tu_sink_args(&t2, "tcp", addr, NULL, NULL)), ==,
              ELS_EADDRINUSE);
    CHECK_CONTAINS(t2.err, "address already in use");
    close(other);
}

/* A restarted program gets its port back while the previous run's
 * connections sit in TIME_WAIT (SO_REUSEADDR).  The server side closes
 * first here, so the TIME_WAIT is on the listener's port. */
static void tcp_rebind_during_time_wait(void)
{
    struct tu_args t;
    void *sink = open_listener(&t, "0");
    unsigned port = endpoint_port(sink, "127.0.0.1");
    int client = tu_connect_tcp("127.0.0.1", port, TU_WAIT_MS);
    CHECK_INT(client, >=, 0);
    int fd = accept_one(sink);
    close(fd);                          /* active close: TIME_WAIT here */
    size_t len;
    char *rest = tu_read_all(client, &len, TU_WAIT_MS);
    CHECK(rest != NULL && len == 0);
    free(rest);
    close(client);
    T->close(sink);

    char addr[32];
    snprintf(addr, sizeof addr, "%u", port);
    struct tu_args t2;
    void *again = open_listener(&t2, addr);
    CHECK_INT(endpoint_port(again, "127.0.0.1"), ==, port);
    T->close(again);
}

/* An explicit IPv6 host, when the machine has IPv6 loopback. */
static void tcp_ipv6_loopback(void)
{
    unsigned probe_port;
    int probe = tu_bind_tcp("::1", false, &probe_port);
    if (probe < 0) {
        printf("SKIPPED PART: tcp_ipv6_loopback: no IPv6 loopback: %s\n", strerror(-probe));
        return;
    }
    close(probe);

    struct tu_args t;
    void *sink = open_listener(&t, "[::1]:0");
    unsigned port = endpoint_port(sink, "[::1]");

    int client = tu_connect_tcp("::1", port, TU_WAIT_MS);
    CHECK_INT(client, >=, 0);
    int fd = accept_one(sink);
    CHECK_OK(elsi_write_all(fd, "v6", 2));
    char got[2];
    CHECK_OK(tu_read_exact(client, got, 2, TU_WAIT_MS));
    CHECK(memcmp(got, "v6", 2) == 0);
    close(fd);
    close(client);
    T->close(sink);

    /* The IPv6 wildcard means IPv6 only (IPV6_V6ONLY): the kernel sets it
     * by itself for a specific address like ::1, not for ::. */
    struct tu_args t2;
    void *any = open_listener(&t2, "[::]:0");
    int v6only = 0;
    socklen_t len = sizeof v6only;
    CHECK_OK(getsockopt(T->listen_fd(any), IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &len));
    CHECK_INT(v6only, ==, 1);
    T->close(any);
}

/* An address that cannot be bound here is an error naming it. */
static void tcp_unbindable_address(void)
{
    struct tu_args t;
    void *sink = NULL;
    /* TEST-NET-1 (RFC 5737): never a local address. */
    CHECK_INT(T->open(&sink, tu_sink_args(&t, "tcp", "192.0.2.1:0", NULL, NULL)),
              ==, -EADDRNOTAVAIL);
    CHECK_CONTAINS(t.err, "192.0.2.1");
}

/* An address the parser refuses is reported like every other spec error:
 * the spec first, then what is wrong with the address. */
static void tcp_bad_address_quotes_spec(void)
{
    struct tu_args t;
    void *sink = NULL;
    CHECK_INT(T->open(&sink, tu_sink_args(&t, "tcp", "127.0.0.1:x", NULL, NULL)),
              ==, ELS_EINVAL);
    CHECK_CONTAINS(t.err, "spec \"tcp:127.0.0.1:x\": port \"x\" is not a "
                          "number from 0 to 65535");

    CHECK_INT(T->open(&sink, tu_sink_args(&t, "tcp", "", NULL, NULL)), ==,
              ELS_EINVAL);
    CHECK_CONTAINS(t.err, "spec \"tcp:\": empty TCP address");

    /* A decoded control byte in the spec is quoted, not passed through. */
    CHECK_INT(T->open(&sink, tu_sink_args(&t, "tcp", "a:8\n0", NULL, NULL)),
              ==, ELS_EINVAL);
    CHECK_CONTAINS(t.err, "spec \"tcp:a:8\\x0a0\": port \"8\\x0a0\"");
    CHECK(strchr(t.err, '\n') == NULL);
}

/* ------------------------------------------------------------------------
 * tcp-connect: dialling a collector
 * ------------------------------------------------------------------------ */

/* Before the collector listens, dial says "not yet" (directly, or through
 * a connect that fails with ECONNREFUSED, as the writer would see it);
 * once it listens, data flows. */
static void tcp_connect_dial(void)
{
    unsigned port;
    int coll = tu_bind_tcp("127.0.0.1", false, &port);  /* reserved, refusing */
    CHECK_INT(coll, >=, 0);

    char addr[32], want[64];
    snprintf(addr, sizeof addr, "%u", port);            /* no host: loopback */
    struct tu_args t;
    void *sink = NULL;
    CHECK_OK(TC->open(&sink, tu_sink_args(&t, "tcp-connect", addr, NULL, NULL)));
    char ep[300];
    TC->endpoint(sink, ep, sizeof ep);
    snprintf(want, sizeof want, "tcp-connect:127.0.0.1:%u", port);
    CHECK_STR(ep, want);

    int fd = -1;
    int rc = TC->dial(sink, &fd);
    if (rc == -EINPROGRESS) {
        CHECK_INT(tu_wait_connected(fd, TU_WAIT_MS), ==, -ECONNREFUSED);
        close(fd);
    } else {
        CHECK_INT(rc, ==, -EAGAIN);
    }

    CHECK_OK(listen(coll, 16));
    struct tu_collector c;
    CHECK_OK(tu_collector_start(&c, coll, TU_WAIT_MS));
    rc = TC->dial(sink, &fd);
    if (rc == -EINPROGRESS)
        rc = tu_wait_connected(fd, TU_WAIT_MS);
    CHECK_OK(rc);
    CHECK(tu_is_nonblock_cloexec(fd));
    CHECK_INT(nodelay(fd), !=, 0);

    size_t n = 1u << 20;
    char *data = malloc(n);
    CHECK(data != NULL);
    for (size_t i = 0; i < n; i++)
        data[i] = (char)(i * 13 + 1);
    CHECK_OK(elsi_write_all(fd, data, n));
    close(fd);
    CHECK_OK(tu_collector_join(&c));
    CHECK_U64(c.len, ==, n);
    CHECK(memcmp(c.data, data, n) == 0);
    free(c.data);
    free(data);
    close(coll);
    TC->close(sink);
}

/* The host is resolved at open(): a name that does not resolve fails there,
 * naming it; and port 0 cannot be dialled. */
static void tcp_connect_bad_address(void)
{
    struct tu_args t;
    void *sink = NULL;
    CHECK_INT(TC->open(&sink, tu_sink_args(&t, "tcp-connect",
                                           "no-such-host.invalid:9000", NULL,
                                           NULL)),
              ==, ELS_EINVAL);
    CHECK_CONTAINS(t.err, "spec \"tcp-connect:no-such-host.invalid:9000\": "
                          "cannot resolve TCP host \"no-such-host.invalid\"");

    CHECK_INT(TC->open(&sink, tu_sink_args(&t, "tcp-connect", "127.0.0.1:0",
                                           NULL, NULL)),
              ==, ELS_EINVAL);
    CHECK_CONTAINS(t.err, "spec \"tcp-connect:127.0.0.1:0\": port 0 cannot "
                          "be connected to");

    CHECK_INT(TC->open(&sink, tu_sink_args(&t, "tcp-connect", "[::1]", NULL,
                                           NULL)),
              ==, ELS_EINVAL);
    CHECK_CONTAINS(t.err, "spec \"tcp-connect:[::1]\": expected ':PORT' "
                          "after ']'");
}

/* ------------------------------------------------------------------------
 * fdutil on TCP
 * ------------------------------------------------------------------------ */

/* After the peer is gone, writes fail with EPIPE (or ECONNRESET if its
 * reset arrived first) and never raise SIGPIPE: neither blocked nor
 * ignored here, it would kill the case. */
static void fdutil_tcp_peer_closed_without_sigpipe(void)
{
    signal(SIGPIPE, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    CHECK_OK(pthread_sigmask(SIG_UNBLOCK, &set, NULL));

    struct tu_args t;
    void *sink = open_listener(&t, "0");
    unsigned port = endpoint_port(sink, "127.0.0.1");
    int client = tu_connect_tcp("127.0.0.1", port, TU_WAIT_MS);
    CHECK_INT(client, >=, 0);
    int fd = accept_one(sink);
    close(client);

    struct iovec iov = { "data", 4 };
    uint64_t deadline = check_now_ms() + TU_WAIT_MS;
    ssize_t n;
    while ((n = elsi_write_iov(fd, true, &iov, 1)) > 0 || n == -EAGAIN) {
        CHECK(check_now_ms() < deadline);
        check_sleep_ms(1);
    }
    CHECK_MSG(n == -EPIPE || n == -ECONNRESET, "write_iov: %zd", n);
    n = elsi_write_iov(fd, true, &iov, 1);
    CHECK_INT(n, ==, -EPIPE);
    CHECK(!tu_sigpipe_pending());
    close(fd);
    T->close(sink);
}

/* The start-up line: plain for loopback; a warning that the stream is
 * exposed without authentication when it listens on every interface.
 * tcp:0:PORT (host "0", which getaddrinfo() reads as 0.0.0.0) is refused
 * rather than exposing the stream quietly. */
static char startup_line[512];
static enum els_log_level startup_level;

static void startup_hook(void *user, enum els_log_level level, const char *msg)
{
    (void)user;
    if (strstr(msg, "listening on") != NULL) {
        snprintf(startup_line, sizeof startup_line, "%s", msg);
        startup_level = level;
    }
}

static void tcp_startup_line_says_who_can_connect(void)
{
    els_set_log_hook(startup_hook, NULL, ELS_LOG_DEBUG);
    struct tu_args t;
    void *sink = NULL;
    CHECK_OK(T->open(&sink, tu_sink_args(&t, "tcp", "0", NULL, NULL)));
    CHECK_CONTAINS(startup_line, "listening on tcp:127.0.0.1:");
    CHECK(strstr(startup_line, "exposed") == NULL);
    CHECK_INT(startup_level, ==, ELS_LOG_INFO);
    T->close(sink);

    startup_line[0] = '\0';
    CHECK_OK(T->open(&sink, tu_sink_args(&t, "tcp", "0.0.0.0:0", NULL, NULL)));
    CHECK_CONTAINS(startup_line, "listening on tcp:0.0.0.0:");
    CHECK_CONTAINS(startup_line, " (every network interface): the eventlog "
                   "is exposed without authentication");
    CHECK_INT(startup_level, ==, ELS_LOG_WARN);
    T->close(sink);

    startup_line[0] = '\0';
    CHECK_INT(T->open(&sink, tu_sink_args(&t, "tcp", "0:0", NULL, NULL)), ==,
              ELS_EINVAL);
    CHECK_CONTAINS(t.err, "spec \"tcp:0:0\": host \"0\" is a shorthand for "
                   "0.0.0.0 (every interface)");
    CHECK_STR(startup_line, "");
    CHECK_INT(TC->open(&sink, tu_sink_args(&t, "tcp-connect", "127.1:9", NULL,
                                           NULL)), ==, ELS_EINVAL);
    CHECK_CONTAINS(t.err, "shorthand for 127.0.0.1");
}

static const struct check_case cases[] = {
    CHECK_CASE(tcp_startup_line_says_who_can_connect),
    CHECK_CASE(tcp_port0_endpoint_and_data),
    CHECK_CASE(tcp_default_bind_is_loopback),
    CHECK_CASE(tcp_port_in_use),
    CHECK_CASE(tcp_rebind_during_time_wait),
    CHECK_CASE(tcp_ipv6_loopback),
    CHECK_CASE(tcp_unbindable_address),
    CHECK_CASE(tcp_bad_address_quotes_spec),
    CHECK_CASE(tcp_connect_dial),
    CHECK_CASE_T(tcp_connect_bad_address, 60),
    CHECK_CASE(fdutil_tcp_peer_closed_without_sigpipe),
};

CHECK_MAIN(cases)
