/*
 * recv.c: `eventlog-sink recv`, the consumer side of the library.
 *
 * It connects to a UNIX or TCP socket (or opens a FIFO), or with --listen
 * waits on one for the single producer that a unix-connect or tcp-connect
 * sink sends from (listen.c), copies the eventlog stream it reads to a file or
 * standard output, runs every byte through the library's parser
 * (<eventlog-sink/parse.h>), and says in its exit status whether the
 * stream was complete and well formed.  It does not interpret events (use ghc-events for that), serves
 * one stream per run (it is a test and capture tool, not a collector
 * daemon), and never changes the bytes it copies.
 *
 * Unlike the library, this is our own process, so it may set signal
 * dispositions: it catches SIGINT and SIGTERM to stop cleanly and ignores
 * SIGPIPE so that a closed output pipe is an error it can report.
 */
#if defined(HAVE_CONFIG_H)
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* ppoll */
#endif

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
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
#include "monitor/safetext.h"
#include "../discover.h"
#include "../tool.h"
#include "monitor/util.h"

/* Exit statuses of recv (documented in its --help). */
enum {
    RECV_EXIT_OK = 0,
    RECV_EXIT_UNREACHABLE = 1,  /* or the output could not be written */
    RECV_EXIT_USAGE = TOOL_EXIT_USAGE,
    RECV_EXIT_BAD_STREAM = 3    /* truncated or malformed */
};

/* ------------------------------------------------------------------------
 * recv: signals
 *
 * Note [Stop signals]
 * ~~~~~~~~~~~~~~~~~~~
 * SIGINT and SIGTERM are blocked except while we wait (ppoll() unblocks
 * them atomically, so a signal cannot slip in between checking the flag
 * and starting to wait) and while we write the output (a write blocked on
 * a full pipe must be interruptible).  The handler only sets a flag; it is
 * installed without SA_RESTART so that a blocked write returns EINTR, and
 * with SA_RESETHAND so that a second signal ends the process the default
 * way should a write block again after the first.
 * ------------------------------------------------------------------------ */

volatile sig_atomic_t recv_stop_signal;

static void recv_on_signal(int sig)
{
    recv_stop_signal = sig;
}

static void recv_signals_setup(struct recv_signals *s)
{
    static const int sigs[] = { SIGINT, SIGTERM };
    sigset_t stop_set;
    sigemptyset(&stop_set);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old;
        /* A signal ignored when we were started (SIGINT for a background
         * job of a non-interactive shell) stays ignored: whoever started
         * us did not want it to stop us. */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = recv_on_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESETHAND;
        sigaction(sigs[i], &sa, NULL);
        sigaddset(&stop_set, sigs[i]);
    }
    signal(SIGPIPE, SIG_IGN);

    sigprocmask(SIG_BLOCK, &stop_set, &s->waiting);
    sigprocmask(SIG_SETMASK, NULL, &s->blocked);
    /* waiting = the mask we were started with, minus SIGINT/SIGTERM. */
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        if (sigismember(&stop_set, sigs[i]))
            sigdelset(&s->waiting, sigs[i]);
}

uint64_t recv_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Wait for events on fd (or just sleep when fd < 0) for at most
 * timeout_ms (< 0: no limit), with SIGINT/SIGTERM deliverable.
 * Returns poll's revents (> 0), 0 on timeout or signal, or -errno if
 * ppoll() itself failed (so that no caller spins on a broken wait). */
static int recv_wait(const struct recv_signals *s, int fd, short events,
                     long timeout_ms)
{
    struct pollfd pfd = { .fd = fd, .events = events };
    struct timespec ts, *tsp = NULL;
    if (timeout_ms >= 0) {
        ts.tv_sec = timeout_ms / 1000;
        ts.tv_nsec = (timeout_ms % 1000) * 1000000L;
        tsp = &ts;
    }
    int n = ppoll(fd >= 0 ? &pfd : NULL, fd >= 0 ? 1 : 0, tsp, &s->waiting);
    if (n < 0)
        return errno == EINTR ? 0 : -errno;
    return n > 0 ? pfd.revents : 0;
}

/* ------------------------------------------------------------------------
 * recv: endpoints
 * ------------------------------------------------------------------------ */

/* Split and check SPEC, for connecting or (listen) for listening.  On
 * failure writes one line into err and returns RECV_EXIT_USAGE or
 * RECV_EXIT_UNREACHABLE (a TCP host that does not resolve: the spec is
 * fine, the endpoint cannot be found). */
static int recv_target_parse(struct recv_target *t, const char *spec,
                             bool listen, char *err, size_t err_len)
{
    static const struct {
        const char *name;
        enum recv_scheme scheme;
    } schemes[] = {
        { "unix", RECV_UNIX },
        { "tcp", RECV_TCP },
        { "fifo", RECV_FIFO },
    };
    memset(t, 0, sizeof *t);
    t->spec = spec;

    const char *colon = strchr(spec, ':');
    if (colon == NULL) {
        snprintf(err, err_len, "'%s' is not a spec (expected unix:PATH, "
                 "tcp:[HOST:]PORT or fifo:PATH)", spec);
        return RECV_EXIT_USAGE;
    }
    size_t scheme_len = (size_t)(colon - spec);
    bool found = false;
    /* Exact match: "tc:1" or "tcpx:1" is not tcp. */
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
        if (strlen(schemes[i].name) == scheme_len &&
            memcmp(schemes[i].name, spec, scheme_len) == 0) {
            t->scheme = schemes[i].scheme;
            found = true;
        }
    }
    if (!found) {
        snprintf(err, err_len, "unknown scheme '%.*s' in '%s' (expected "
                 "unix, tcp or fifo)", (int)(scheme_len > 64 ? 64 : scheme_len),
                 spec, spec);
        return RECV_EXIT_USAGE;
    }
    t->address = colon + 1;

    char why[256] = "";
    switch (t->scheme) {
    case RECV_UNIX:
    case RECV_TCP: {
        int rc = els_endpoint_resolve(spec, listen ? ELS_ENDPOINT_PASSIVE : 0,
                                      &t->ai, why, sizeof why);
        if (rc < 0) {
            snprintf(err, err_len, "%s: %s", spec, why);
            /* A malformed address is a usage error; a host that does not
             * resolve is a fine spec naming an endpoint we cannot find. */
            return rc == ELS_EINVAL || rc == ELS_ENAMETOOLONG
                   ? RECV_EXIT_USAGE : RECV_EXIT_UNREACHABLE;
        }
        if (t->scheme == RECV_UNIX)
            t->path = ((const struct sockaddr_un *)(const void *)
                       t->ai->ai_addr)->sun_path;
        return 0;
    }
    case RECV_FIFO:
        /* Nothing to listen on: a FIFO has no connections to accept, and
         * the fifo sink opens an existing FIFO rather than dialling. */
        if (listen) {
            snprintf(err, err_len, "%s: --listen takes unix:PATH or "
                     "tcp:[HOST:]PORT, not a FIFO", spec);
            return RECV_EXIT_USAGE;
        }
        if (t->address[0] == '\0') {
            snprintf(err, err_len, "%s: empty FIFO path", spec);
            return RECV_EXIT_USAGE;
        }
        return 0;
    }
    return RECV_EXIT_USAGE;
}

static void recv_target_free(struct recv_target *t)
{
    els_endpoint_free(t->ai);
    t->ai = NULL;
}

/* Connect a non-blocking stream socket to one address, waiting for an
 * in-progress TCP connect with signals deliverable.  fd or -errno;
 * -EINTR when a stop signal came. */
static int recv_connect_one(const struct recv_signals *s, int domain,
                            const struct sockaddr *sa, socklen_t len)
{
    int fd = util_socket_nb(domain, SOCK_STREAM);
    if (fd < 0)
        return fd;
    if (connect(fd, sa, len) == 0)
        return fd;
    int e = errno;
    if (e != EINPROGRESS && e != EINTR) {
        util_close(fd);
        return -e;
    }
    /* EINTR from a non-blocking connect also means "still connecting". */
    for (;;) {
        if (recv_stop_signal) {
            util_close(fd);
            return -EINTR;
        }
        int w = recv_wait(s, fd, POLLOUT, -1);
        if (w < 0) {
            util_close(fd);
            return w;
        }
        if (w > 0)
            break;
    }
    int so_error = 0;
    socklen_t so_len = sizeof so_error;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &so_len) < 0)
        so_error = errno;
    if (so_error != 0) {
        util_close(fd);
        return -so_error;
    }
    return fd;
}

/* Is this failure "nobody there yet", worth retrying under --retry?
 * EAGAIN: a UNIX listener whose backlog is full (non-blocking connect). */
static bool recv_absent(int code)
{
    return code == -ENOENT || code == -ECONNREFUSED || code == -EAGAIN;
}

/* One attempt to reach the endpoint: a descriptor open for reading,
 * non-blocking and close-on-exec, or -errno with a line in err. */
static int recv_open_once(const struct recv_signals *s,
                          const struct recv_target *t,
                          char *err, size_t err_len)
{
    switch (t->scheme) {
    case RECV_UNIX: {
        int fd = recv_connect_one(s, AF_UNIX, t->ai->ai_addr,
                                  t->ai->ai_addrlen);
        if (fd < 0)
            snprintf(err, err_len, "cannot connect to %s: %s", t->spec,
                     strerror(-fd));
        return fd;
    }
    case RECV_TCP: {
        /* Try each address in turn; if one refused, that is the error to
         * report (and the one that makes the endpoint "absent"), since
         * the others are usually families the host does not route. */
        int first_refused = 0, last = -EHOSTUNREACH;
        for (const struct addrinfo *ai = t->ai; ai != NULL; ai = ai->ai_next) {
            int fd = recv_connect_one(s, ai->ai_family, ai->ai_addr,
                                      ai->ai_addrlen);
            if (fd >= 0)
                return fd;
            if (fd == -EINTR)
                return fd;
            last = fd;
            if (recv_absent(fd) && first_refused == 0)
                first_refused = fd;
        }
        int code = first_refused != 0 ? first_refused : last;
        snprintf(err, err_len, "cannot connect to %s: %s", t->spec,
                 strerror(-code));
        return code;
    }
    case RECV_FIFO: {
        /* O_NONBLOCK: open() returns at once instead of waiting for a
         * writer, so the wait happens in ppoll() where a signal can end
         * it.  Until a writer has opened the FIFO, Linux reports neither
         * POLLIN nor POLLHUP on it, so the wait does not end early. */
        int fd = open(t->address, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
            int e = errno;
            snprintf(err, err_len, "cannot open %s: %s", t->spec, strerror(e));
            return -e;
        }
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode)) {
            util_close(fd);
            snprintf(err, err_len, "cannot open %s: %s is not a FIFO",
                     t->spec, t->address);
            return -EINVAL;
        }
        return fd;
    }
    }
    snprintf(err, err_len, "%s: unsupported scheme", t->spec);
    return -EINVAL;
}

/* Reach the endpoint, retrying every 100 ms for up to retry_ms while it
 * is absent; the first failure that starts retrying is said on stderr
 * (so that a user, or a test, sees it is waiting and why).  fd, or
 * -errno with a line in err. */
static int recv_open(const struct recv_signals *s, const struct recv_target *t,
                     uint64_t retry_ms, char *err, size_t err_len)
{
    uint64_t deadline = recv_now_ms() + retry_ms;
    bool said = false;
    for (;;) {
        int fd = recv_open_once(s, t, err, err_len);
        if (fd >= 0 || fd == -EINTR)
            return fd;
        if (!recv_absent(fd) || retry_ms == 0)
            return fd;
        if (!said) {
            fprintf(stderr, TOOL_NAME " recv: %s; retrying for up to %g s\n",
                    err, (double)retry_ms / 1000.0);
            said = true;
        }
        uint64_t now = recv_now_ms();
        if (now >= deadline) {
            size_t used = strlen(err);
            snprintf(err + used, err_len - used, " (retried for %.1f s)",
                     (double)retry_ms / 1000.0);
            return fd;
        }
        uint64_t left = deadline - now;
        recv_wait(s, -1, 0, (long)(left < 100 ? left : 100));
        if (recv_stop_signal)
            return -EINTR;
    }
}

/* ------------------------------------------------------------------------
 * recv: copying
 * ------------------------------------------------------------------------ */

/* Write all of buf to the output, retrying short writes but not EINTR: a stop signal must be able to end a write that blocks on
 * a full pipe (see Note [Stop signals]).  0, -errno, or -EINTR when
 * stopped. */
static int recv_write_out(const struct recv_signals *s, int fd,
                          const uint8_t *buf, size_t len)
{
    int rc = 0;
    sigprocmask(SIG_SETMASK, &s->waiting, NULL);
    while (len > 0) {
        if (recv_stop_signal) {
            rc = -EINTR;
            break;
        }
        ssize_t n = write(fd, buf, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            rc = -errno;
            break;
        }
        buf += n;
        len -= (size_t)n;
    }
    sigprocmask(SIG_SETMASK, &s->blocked, NULL);
    return rc;
}

struct recv_result {
    uint64_t bytes;
    int read_error;     /* -errno, or 0 */
    int write_error;    /* -errno, or 0 */
    bool interrupted;
};

/* Take n bytes that arrived: count them, write them out, then check them
 * (written before they are checked: the output holds everything that
 * arrived, including the bytes a malformed stream went wrong at).  False
 * when the copy must end (res says why, or the stream is malformed). */
static bool recv_take(const struct recv_signals *s, int out, const uint8_t *p,
                      size_t n, struct els_parser *parser, struct recv_result *res)
{
    res->bytes += n;
    int w = recv_write_out(s, out, p, n);
    if (w == -EINTR) {
        res->interrupted = true;
        return false;
    }
    if (w < 0) {
        res->write_error = w;
        return false;
    }
    return els_parser_feed(parser, p, n, NULL) >= 0;
}

/* Copy what arrived before the copy began (prefix: the producer's
 * header, read while judging the connections of --listen), then the rest
 * of in, to out, feeding the parser. */
static void recv_copy(const struct recv_signals *s, int in, int out,
                      const struct recv_prefix *prefix,
                      struct els_parser *parser, struct recv_result *res)
{
    /* Large enough to empty a unix socket's default send buffer (208 KiB)
     * in one read: a read, a write and two mask changes per piece are
     * most of recv's system time beside a busy program. */
    static uint8_t buf[256 * 1024];
    if (prefix->len > 0 &&
        !recv_take(s, out, prefix->bytes, prefix->len, parser, res))
        return;
    /* Wait before the first read: a FIFO that no writer has opened yet
     * reads as end-of-file (0), while ppoll() waits for the writer (see
     * recv_open_once()).  After that, read first and wait on EAGAIN.
     * A producer of --listen has sent already: read at once. */
    bool wait_first = prefix->len == 0;
    for (;;) {
        if (recv_stop_signal) {
            res->interrupted = true;
            return;
        }
        if (wait_first) {
            int w = recv_wait(s, in, POLLIN, -1);
            if (w < 0) {
                res->read_error = w;
                return;
            }
            wait_first = w == 0;    /* signal: check the flag, wait again */
            continue;
        }
        ssize_t n = read(in, buf, sizeof buf);
        if (n == 0)
            return;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                int w = recv_wait(s, in, POLLIN, -1);
                if (w < 0) {
                    res->read_error = w;
                    return;
                }
                continue;
            }
            res->read_error = -errno;
            return;
        }
        if (!recv_take(s, out, buf, (size_t)n, parser, res))
            return;
    }
}

/* ------------------------------------------------------------------------
 * recv: command line
 * ------------------------------------------------------------------------ */

static void recv_usage(FILE *out)
{
    fprintf(out,
"Usage: " TOOL_NAME " recv [-o FILE] [--retry SECS] [--quiet] SPEC\n"
"       " TOOL_NAME " recv --listen [-o FILE] [--timeout SECS] [--quiet] SPEC\n"
"\n"
"Receive one GHC eventlog stream from SPEC and copy it unchanged to FILE\n"
"(default: standard output), checking its structure on the way.\n"
"\n"
"SPEC:\n"
"  unix:PATH           connect to a UNIX socket\n"
"  tcp:[HOST:]PORT     connect over TCP (HOST defaults to 127.0.0.1)\n"
"  tcp:[ADDR]:PORT     connect over TCP to an IPv6 address\n"
"  fifo:PATH           read a FIFO\n"
"  pid:PID, name:NAME  connect to a program `" TOOL_NAME " ps` lists\n"
"\n"
"With --listen, SPEC is where to wait for the producer instead (the\n"
"collector end of the unix-connect: and tcp-connect: sinks):\n"
"  unix:PATH           create the socket PATH (mode 0600); an existing PATH\n"
"                      is replaced only if it is a socket nobody listens on\n"
"  tcp:[HOST:]PORT     listen on HOST (default 127.0.0.1); PORT 0 lets the\n"
"                      system choose\n"
"It prints \"" TOOL_NAME " recv: listening on unix:PATH\" or\n"
"\"... listening on tcp:HOST:PORT\" (with the real port) on standard\n"
"error once it listens, even with --quiet.  It accepts every connection\n"
"while it waits: the first that sends a complete eventlog header is the\n"
"producer; one that sends anything else is closed at once, one that\n"
"sends no header within 5 s is closed then, and beyond 8 waiting the\n"
"oldest is closed (counted on standard error, at most once a second).\n"
"Once the producer is there it stops listening and removes the socket\n"
"file it created.\n"
"\n"
"Options:\n"
"  -o, --output FILE   write to FILE (created or truncated, mode 0644)\n"
"  -r, --retry SECS    while the endpoint is absent, try again every 0.1 s\n"
"                      for up to SECS seconds (not with --listen); the\n"
"                      first failed attempt is said on standard error,\n"
"                      \"... ; retrying for up to SECS s\", even with --quiet\n"
"  -l, --listen        listen on SPEC for one producer to connect\n"
"  -t, --timeout SECS  with --listen: give up if no producer has sent its\n"
"                      header within SECS seconds of the start, whatever\n"
"                      else connects (default: wait for ever)\n"
"  -q, --quiet         do not print the summary line\n"
"  -h, --help          show this help\n"
"\n"
"The stream ends when the producer closes it.  SIGINT or SIGTERM stops\n"
"the copy; the stream then counts as truncated unless it was complete.\n"
"\n"
"Exit status:\n"
"  0  the stream ended with DATA_END and was well formed\n"
"  1  the endpoint could not be reached or listened on, nobody connected\n"
"     within --timeout, or the output could not be written\n"
"  2  usage error\n"
"  3  the stream was truncated (closed or stopped before DATA_END) or\n"
"     malformed\n");
}

#define recv_usage_error(...) tool_usage_error("recv", __VA_ARGS__)

/* What recv's command line asks for (recv_parse()). */
struct recv_opts {
    const char *spec;
    const char *output;                 /* -o; NULL: standard output */
    uint64_t retry_ms, timeout_ms;      /* --retry, --timeout */
    bool retry_given, timeout_given;
    bool listen, quiet;
};

/* --retry or --timeout (opt) SECS (arg): into *ms, with *given set;
 * TOOL_CONTINUE, or the exit status of a usage error. */
static int recv_parse_wait(const char *opt, const char *arg, uint64_t *ms,
                           bool *given)
{
    if (!tool_parse_secs(arg, ms))
        return recv_usage_error("%s: '%s' is not a number of seconds from "
                                "0 to 86400", opt, arg);
    *given = true;
    return TOOL_CONTINUE;
}

/* The command line into *o: TOOL_CONTINUE, or the exit status (after
 * --help or a usage error). */
static int recv_parse(int argc, char **argv, struct recv_opts *o)
{
    static const struct option longopts[] = {
        { "output", required_argument, NULL, 'o' },
        { "retry", required_argument, NULL, 'r' },
        { "listen", no_argument, NULL, 'l' },
        { "timeout", required_argument, NULL, 't' },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    *o = (struct recv_opts){ .output = NULL };

    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":o:r:lt:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            if (optarg[0] == '\0')
                return recv_usage_error("empty output file name");
            o->output = optarg;
            break;
        case 'r':
            c = recv_parse_wait("--retry", optarg, &o->retry_ms,
                                &o->retry_given);
            if (c != TOOL_CONTINUE)
                return c;
            break;
        case 'l':
            o->listen = true;
            break;
        case 't':
            c = recv_parse_wait("--timeout", optarg, &o->timeout_ms,
                                &o->timeout_given);
            if (c != TOOL_CONTINUE)
                return c;
            break;
        case 'q':
            o->quiet = true;
            break;
        case 'h':
            return tool_help(recv_usage);
        case ':':
            return recv_usage_error("option '%s' needs an argument",
                                    argv[optind - 1]);
        default:
            if (optopt != 0)
                return recv_usage_error("unknown option '-%c'", optopt);
            return recv_usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return recv_usage_error("missing SPEC (e.g. unix:/tmp/app.sock)");
    if (argc - optind > 1)
        return recv_usage_error("one SPEC only, got '%s' after '%s'",
                                argv[optind + 1], argv[optind]);
    int dr;
    if (!o->listen &&
        (dr = disc_resolve_arg("recv", &argv[optind], false)) != 0)
        return dr;
    o->spec = argv[optind];
    /* Each wait belongs to one direction; accepting the other silently
     * would leave the user believing it took effect. */
    if (o->retry_given && o->listen)
        return recv_usage_error("--retry is for connecting; with --listen "
                                "use --timeout");
    if (o->timeout_given && !o->listen)
        return recv_usage_error("--timeout is for --listen; when "
                                "connecting use --retry");
    if (o->output == NULL && isatty(STDOUT_FILENO))
        return recv_usage_error("refusing to write a binary stream to a "
                                "terminal; use -o FILE or a redirection");
    return TOOL_CONTINUE;
}

/* Connect to t (or, with --listen, wait for the producer), then free
 * t: the input descriptor, with what a producer already sent in
 * *prefix, or -1 after a message. */
static int recv_connect(const struct recv_opts *o,
                        const struct recv_signals *sigs,
                        struct recv_target *t, struct recv_prefix *prefix)
{
    char err[512];
    int in;
    if (o->listen)
        in = recv_listen_accept(sigs, t,
                                o->timeout_given ? (long)o->timeout_ms : -1,
                                prefix, err, sizeof err);
    else
        in = recv_open(sigs, t, o->retry_ms, err, sizeof err);
    recv_target_free(t);
    if (in < 0) {
        if (in == -EINTR && !o->listen)
            fprintf(stderr, TOOL_NAME " recv: stopped before %s was "
                    "reached\n", o->spec);
        else
            fprintf(stderr, TOOL_NAME " recv: %s\n", err);
        return -1;
    }
    return in;
}

/* The summary line (unless --quiet) and the verdict on the copy: the
 * exit status. */
static int recv_report(const struct recv_opts *o, const struct recv_result *res,
                       const struct els_parse_status *st, const char *out_name)
{
    if (!o->quiet)
        fprintf(stderr, TOOL_NAME " recv: received %llu bytes, %llu events, "
                "%llu blocks\n", (unsigned long long)res->bytes,
                (unsigned long long)st->events,
                (unsigned long long)st->blocks);

    if (res->write_error != 0) {
        fprintf(stderr, TOOL_NAME " recv: cannot write to %s: %s\n", out_name,
                strerror(-res->write_error));
        return RECV_EXIT_UNREACHABLE;
    }
    if (st->where == ELS_PARSE_FAILED) {
        /* The parser's words, but about bytes the stream chose. */
        fputs(TOOL_NAME " recv: stream malformed at ", stderr);
        safetext_fput(stderr, st->error, strlen(st->error));
        fputc('\n', stderr);
        return RECV_EXIT_BAD_STREAM;
    }
    if (st->where != ELS_PARSE_ENDED) {
        char why[128] = "";
        if (res->read_error != 0)
            snprintf(why, sizeof why, ": %s", strerror(-res->read_error));
        else if (res->interrupted)
            snprintf(why, sizeof why, ": stopped by %s",
                     recv_stop_signal == SIGINT ? "SIGINT" : "SIGTERM");
        fprintf(stderr, TOOL_NAME " recv: stream truncated after %llu bytes "
                "(%llu events)%s\n", (unsigned long long)res->bytes,
                (unsigned long long)st->events, why);
        return RECV_EXIT_BAD_STREAM;
    }
    return RECV_EXIT_OK;
}

int recv_main(int argc, char **argv)
{
    struct recv_opts o;
    int rc = recv_parse(argc, argv, &o);
    if (rc != TOOL_CONTINUE)
        return rc;

    char err[512];
    struct recv_target target;
    rc = recv_target_parse(&target, o.spec, o.listen, err, sizeof err);
    if (rc == RECV_EXIT_USAGE)
        return recv_usage_error("%s", err);
    if (rc != 0) {
        fprintf(stderr, TOOL_NAME " recv: %s\n", err);
        return rc;
    }

    struct els_parser *parser;
    if (els_parser_new(&parser, NULL, NULL, 0) < 0) {
        recv_target_free(&target);
        fprintf(stderr, TOOL_NAME " recv: out of memory\n");
        return RECV_EXIT_UNREACHABLE;
    }

    struct recv_signals sigs;
    recv_signals_setup(&sigs);

    struct recv_prefix prefix = { NULL, 0 };
    int in = recv_connect(&o, &sigs, &target, &prefix);
    if (in < 0) {
        els_parser_free(parser);
        return RECV_EXIT_UNREACHABLE;
    }

    /* The output is created only once the endpoint answered (or, with
     * --listen, a producer came), so that a failed attempt never
     * truncates the file of an earlier capture. */
    int out = STDOUT_FILENO;
    const char *out_name = "standard output";
    if (o.output != NULL) {
        out = open(o.output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY,
                   0644);
        if (out < 0) {
            fprintf(stderr, TOOL_NAME " recv: cannot create %s: %s\n",
                    o.output, strerror(errno));
            util_close(in);
            free(prefix.bytes);
            els_parser_free(parser);
            return RECV_EXIT_UNREACHABLE;
        }
        out_name = o.output;
    }

    struct recv_result res = { 0 };
    recv_copy(&sigs, in, out, &prefix, parser, &res);
    free(prefix.bytes);
    struct els_parse_status st;
    els_parser_status(parser, &st);
    util_close(in);
    if (out != STDOUT_FILENO && close(out) < 0 && errno != EINTR &&
        res.write_error == 0)
        res.write_error = -errno;

    rc = recv_report(&o, &res, &st, out_name);
    els_parser_free(parser);
    return rc;
}
