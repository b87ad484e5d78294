/*
 * recv.c: `eventlog-sink recv`, the consumer side of the library.
 *
 * It connects to a UNIX or TCP socket (or opens a FIFO), or with --listen
 * waits on one for the single producer that a unix-connect or tcp-connect
 * sink sends from, copies the eventlog stream it reads to a file or
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
#include "tool.h"
#include "util.h"

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

static volatile sig_atomic_t recv_stop_signal;

static void recv_on_signal(int sig)
{
    recv_stop_signal = sig;
}

struct recv_signals {
    sigset_t blocked;     /* mask in force outside the windows */
    sigset_t waiting;     /* mask while waiting or writing */
};

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

static uint64_t recv_now_ms(void)
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

enum recv_scheme { RECV_UNIX, RECV_TCP, RECV_FIFO };

struct recv_target {
    enum recv_scheme scheme;
    const char *spec;
    const char *address;            /* after "SCHEME:" */
    /* RECV_UNIX (one entry) and RECV_TCP, from els_endpoint_resolve(),
     * resolved once (passive for --listen). */
    struct addrinfo *ai;
    const char *path;               /* RECV_UNIX: the socket path */
};

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
 * is absent.  fd, or -errno with a line in err. */
static int recv_open(const struct recv_signals *s, const struct recv_target *t,
                     uint64_t retry_ms, char *err, size_t err_len)
{
    uint64_t deadline = recv_now_ms() + retry_ms;
    for (;;) {
        int fd = recv_open_once(s, t, err, err_len);
        if (fd >= 0 || fd == -EINTR)
            return fd;
        if (!recv_absent(fd) || retry_ms == 0)
            return fd;
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
 * recv: listening (--listen)
 *
 * The collector end of the unix-connect and tcp-connect sinks: bind, say
 * where on stderr (with port 0 that line is the only way a script learns
 * the port), accept one producer, and close the listener at once, so that
 * a producer redialling later is refused rather than left queued in a
 * backlog nobody reads.  The socket file of unix: goes with the listener.
 * ------------------------------------------------------------------------ */

#define RECV_LISTEN_BACKLOG 4

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

/*
 * Note [Socket file mode]
 * ~~~~~~~~~~~~~~~~~~~~~~~
 * The socket file must be 0600 from the moment it exists.  Setting the
 * mode afterwards by path (chmod) follows whatever the path names by then:
 * a user who can write the directory swaps in a symbolic link between
 * bind() and chmod(), and the mode lands on the file it points to: any
 * file the collector's user may chmod (for root, any file at all).
 * fchmod() on a socket descriptor does not reach the file.  So bind()
 * creates the file with the mode already right: the tool is one thread,
 * so a umask set around bind() affects nothing else.  (The library, with
 * other threads that may create files meanwhile, cannot do this; its unix:
 * sink has its own way.)
 */
static int recv_listen_unix(struct recv_listener *l,
                            const struct recv_target *t,
                            char *err, size_t err_len)
{
    const char *path = t->path;
    int rc = recv_unix_clear(t, err, err_len);
    if (rc < 0)
        return rc;
    l->fd = util_socket_nb(AF_UNIX, SOCK_STREAM);
    if (l->fd < 0) {
        rc = l->fd;
        l->fd = -1;
        snprintf(err, err_len, "cannot create a socket for %s: %s", path,
                 strerror(-rc));
        return rc;
    }
    /* Created with mode 0600 by bind() itself: see Note [Socket file
     * mode]. */
    mode_t old_umask = umask(0177);
    int bound = bind(l->fd, t->ai->ai_addr, t->ai->ai_addrlen);
    int bind_errno = errno;
    umask(old_umask);
    if (bound < 0) {
        rc = -bind_errno;
        if (rc == -EADDRINUSE)
            snprintf(err, err_len, "cannot bind %s: another process created "
                     "it just now", path);
        else
            snprintf(err, err_len, "cannot bind %s: %s", path,
                     strerror(-rc));
        goto fail;
    }
    struct stat st;
    if (lstat(path, &st) < 0) {
        rc = -errno;
        snprintf(err, err_len, "cannot inspect %s after bind: %s", path,
                 strerror(-rc));
        (void)unlink(path);
        goto fail;
    }
    l->bound_file = true;
    l->dev = st.st_dev;
    l->ino = st.st_ino;
    if (listen(l->fd, RECV_LISTEN_BACKLOG) < 0) {
        rc = -errno;
        snprintf(err, err_len, "cannot listen on %s: %s", path,
                 strerror(-rc));
        goto fail;
    }
    snprintf(l->endpoint, sizeof l->endpoint, "unix:%s", path);
    return 0;
fail:
    recv_listener_close(l, t);
    return rc;
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

/* Listen on the target, announce it on stderr, and accept one producer
 * within timeout_ms (< 0: no limit).  The listener is closed (and the
 * socket file removed) before this returns, whatever happens.  A
 * connected descriptor, non-blocking and close-on-exec, or -errno with a
 * line in err: -ETIMEDOUT when nobody came, -EINTR on a stop signal. */
static int recv_listen_accept(const struct recv_signals *s,
                              const struct recv_target *t, long timeout_ms,
                              char *err, size_t err_len)
{
    struct recv_listener l = { .fd = -1 };
    int rc = t->scheme == RECV_UNIX ? recv_listen_unix(&l, t, err, err_len)
                                    : recv_listen_tcp(&l, t, err, err_len);
    if (rc < 0)
        return rc;
    /* Unbuffered stderr: the line is out before anyone can connect. */
    fprintf(stderr, TOOL_NAME " recv: listening on %s\n", l.endpoint);

    /* --timeout covers the whole wait for a producer, including a
     * connection that stays silent: until its first byte it may be a
     * probe, and a silent client must not hold the receiver for ever. */
    uint64_t deadline = recv_now_ms() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms);
    int fd = -1;
    for (;;) {
        if (fd >= 0) {
            util_close(fd);
            fd = -1;
        }
        if (recv_stop_signal) {
            snprintf(err, err_len, "stopped before a producer connected to "
                     "%s", l.endpoint);
            rc = -EINTR;
            break;
        }
        long wait_ms = -1;
        if (timeout_ms >= 0) {
            uint64_t now = recv_now_ms();
            if (now >= deadline) {
                snprintf(err, err_len, "no producer connected to %s within "
                         "%g s", l.endpoint, (double)timeout_ms / 1000.0);
                rc = -ETIMEDOUT;
                break;
            }
            wait_ms = (long)(deadline - now);
        }
        rc = util_accept_nb(l.fd, &fd);
        if (rc == 0) {
            /* A connection that closes before its first byte is not a
             * producer but a probe (the library's unix sink connects to
             * an existing socket to see whether anyone listens): keep
             * listening for the real one.  Nothing (signal, timeout):
             * back to the checks above, which close it. */
            int w = recv_wait(s, fd, POLLIN, wait_ms);
            if (w < 0) {
                snprintf(err, err_len, "cannot wait on %s: %s", l.endpoint,
                         strerror(-w));
                rc = w;
                break;
            }
            char first;
            if (w == 0 || recv(fd, &first, 1, MSG_PEEK) == 0)
                continue;
            break;
        }
        if (rc != -EAGAIN) {
            snprintf(err, err_len, "cannot accept on %s: %s", l.endpoint,
                     strerror(-rc));
            break;
        }
        int w = recv_wait(s, l.fd, POLLIN, wait_ms);
        if (w < 0) {
            snprintf(err, err_len, "cannot wait on %s: %s", l.endpoint,
                     strerror(-w));
            rc = w;
            break;
        }
    }
    if (rc != 0 && fd >= 0) {
        util_close(fd);
        fd = -1;
    }
    recv_listener_close(&l, t);
    return rc == 0 ? fd : rc;
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

static void recv_copy(const struct recv_signals *s, int in, int out,
                      struct els_parser *parser, struct recv_result *res)
{
    static uint8_t buf[64 * 1024];
    /* Wait before the first read: a FIFO that no writer has opened yet
     * reads as end-of-file (0), while ppoll() waits for the writer (see
     * recv_open_once()).  After that, read first and wait on EAGAIN. */
    bool wait_first = true;
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
        res->bytes += (uint64_t)n;
        /* Written before it is checked: the output holds everything that
         * arrived, including the bytes a malformed stream went wrong at. */
        int w = recv_write_out(s, out, buf, (size_t)n);
        if (w == -EINTR) {
            res->interrupted = true;
            return;
        }
        if (w < 0) {
            res->write_error = w;
            return;
        }
        if (els_parser_feed(parser, buf, (size_t)n, NULL) < 0)
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
"\n"
"With --listen, SPEC is where to wait for the producer instead (the\n"
"collector end of the unix-connect: and tcp-connect: sinks):\n"
"  unix:PATH           create the socket PATH (mode 0600); an existing PATH\n"
"                      is replaced only if it is a socket nobody listens on\n"
"  tcp:[HOST:]PORT     listen on HOST (default 127.0.0.1); PORT 0 lets the\n"
"                      system choose\n"
"It prints \"" TOOL_NAME " recv: listening on unix:PATH\" or\n"
"\"... listening on tcp:HOST:PORT\" (with the real port) on standard\n"
"error once it listens, even with --quiet, accepts one connection, stops\n"
"listening and removes the socket file it created.\n"
"\n"
"Options:\n"
"  -o, --output FILE   write to FILE (created or truncated, mode 0644)\n"
"  -r, --retry SECS    while the endpoint is absent, try again every 0.1 s\n"
"                      for up to SECS seconds (not with --listen)\n"
"  -l, --listen        listen on SPEC for one producer to connect\n"
"  -t, --timeout SECS  with --listen: give up if no producer comes within\n"
"                      SECS seconds; a connection that sends nothing does\n"
"                      not count (default: wait for ever)\n"
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

int recv_main(int argc, char **argv)
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
    const char *output = NULL;
    uint64_t retry_ms = 0;
    bool retry_given = false;
    bool listen = false;
    uint64_t timeout_ms = 0;
    bool timeout_given = false;
    bool quiet = false;

    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":o:r:lt:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            if (optarg[0] == '\0')
                return recv_usage_error("empty output file name");
            output = optarg;
            break;
        case 'r':
            if (!tool_parse_secs(optarg, &retry_ms))
                return recv_usage_error("--retry: '%s' is not a number of "
                                        "seconds from 0 to 86400", optarg);
            retry_given = true;
            break;
        case 'l':
            listen = true;
            break;
        case 't':
            if (!tool_parse_secs(optarg, &timeout_ms))
                return recv_usage_error("--timeout: '%s' is not a number of "
                                        "seconds from 0 to 86400", optarg);
            timeout_given = true;
            break;
        case 'q':
            quiet = true;
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
    const char *spec = argv[optind];
    /* Each wait belongs to one direction; accepting the other silently
     * would leave the user believing it took effect. */
    if (retry_given && listen)
        return recv_usage_error("--retry is for connecting; with --listen "
                                "use --timeout");
    if (timeout_given && !listen)
        return recv_usage_error("--timeout is for --listen; when "
                                "connecting use --retry");
    if (output == NULL && isatty(STDOUT_FILENO))
        return recv_usage_error("refusing to write a binary stream to a "
                                "terminal; use -o FILE or a redirection");

    char err[512];
    struct recv_target target;
    int rc = recv_target_parse(&target, spec, listen, err, sizeof err);
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

    int in;
    if (listen)
        in = recv_listen_accept(&sigs, &target,
                                timeout_given ? (long)timeout_ms : -1,
                                err, sizeof err);
    else
        in = recv_open(&sigs, &target, retry_ms, err, sizeof err);
    recv_target_free(&target);
    if (in < 0) {
        els_parser_free(parser);
        if (in == -EINTR && !listen)
            fprintf(stderr, TOOL_NAME " recv: stopped before %s was "
                    "reached\n", spec);
        else
            fprintf(stderr, TOOL_NAME " recv: %s\n", err);
        return RECV_EXIT_UNREACHABLE;
    }

    /* The output is created only once the endpoint answered (or, with
     * --listen, a producer came), so that a failed attempt never
     * truncates the file of an earlier capture. */
    int out = STDOUT_FILENO;
    const char *out_name = "standard output";
    if (output != NULL) {
        out = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY,
                   0644);
        if (out < 0) {
            fprintf(stderr, TOOL_NAME " recv: cannot create %s: %s\n", output,
                    strerror(errno));
            util_close(in);
            els_parser_free(parser);
            return RECV_EXIT_UNREACHABLE;
        }
        out_name = output;
    }

    struct recv_result res = { 0 };
    recv_copy(&sigs, in, out, parser, &res);
    struct els_parse_status st;
    els_parser_status(parser, &st);
    util_close(in);
    if (out != STDOUT_FILENO && close(out) < 0 && errno != EINTR &&
        res.write_error == 0)
        res.write_error = -errno;

    if (!quiet)
        fprintf(stderr, TOOL_NAME " recv: received %llu bytes, %llu events, "
                "%llu blocks\n", (unsigned long long)res.bytes,
                (unsigned long long)st.events,
                (unsigned long long)st.blocks);

    if (res.write_error != 0) {
        fprintf(stderr, TOOL_NAME " recv: cannot write to %s: %s\n", out_name,
                strerror(-res.write_error));
        rc = RECV_EXIT_UNREACHABLE;
    } else if (st.where == ELS_PARSE_FAILED) {
        fprintf(stderr, TOOL_NAME " recv: stream malformed at %s\n",
                st.error);
        rc = RECV_EXIT_BAD_STREAM;
    } else if (st.where != ELS_PARSE_ENDED) {
        char why[128] = "";
        if (res.read_error != 0)
            snprintf(why, sizeof why, ": %s", strerror(-res.read_error));
        else if (res.interrupted)
            snprintf(why, sizeof why, ": stopped by %s",
                     recv_stop_signal == SIGINT ? "SIGINT" : "SIGTERM");
        fprintf(stderr, TOOL_NAME " recv: stream truncated after %llu bytes "
                "(%llu events)%s\n", (unsigned long long)res.bytes,
                (unsigned long long)st.events, why);
        rc = RECV_EXIT_BAD_STREAM;
    } else {
        rc = RECV_EXIT_OK;
    }
    els_parser_free(parser);
    return rc;
}
