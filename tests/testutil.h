/*
 * testutil.h: helpers shared by the tests that talk to real endpoints (the
 * sink tests and the writer test).  They play the other side: a client
 * that connects to a listening sink, a collector that a dialling sink
 * connects to, a reader that drains a descriptor, and the set-up that sinks
 * need (arguments for open(), a thread with SIGPIPE blocked as the writer
 * has it, a user that file permissions apply to).  Every wait has a
 * deadline, so a broken library makes a test fail rather than hang; the
 * deadlines are generous and never decide pass or fail on their own.
 *
 * Include after check.h.  Everything is static inline, so a test pays only
 * for what it uses.  Functions return 0 or a negative errno, like the
 * library; -ETIMEDOUT means a deadline passed.
 */
#ifndef ELS_TEST_TESTUTIL_H
#define ELS_TEST_TESTUTIL_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "eventlog-sink.h"

/* The deadline for every wait in the tests: long enough for a loaded,
 * sanitizer-instrumented machine (a hang guard, never a verdict). */
#define TU_WAIT_MS (10000u * CHECK_TIMEOUT_SCALE)

/* ------------------------------------------------------------------------
 * Waiting on descriptors
 * ------------------------------------------------------------------------ */

/* Wait until fd reports one of events (POLLIN, POLLOUT) or an error or
 * hang-up, for at most timeout_ms.  0, -ETIMEDOUT or -errno. */
static inline int tu_wait_fd(int fd, short events, unsigned timeout_ms)
{
    uint64_t deadline = check_now_ms() + timeout_ms;
    for (;;) {
        uint64_t now = check_now_ms();
        if (now >= deadline)
            return -ETIMEDOUT;
        struct pollfd p = { .fd = fd, .events = events };
        int n = poll(&p, 1, (int)(deadline - now));
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return -errno;
    }
}

/* Wait for a non-blocking connect() (a dial() that returned -EINPROGRESS)
 * to finish, as the writer does: POLLOUT, then SO_ERROR.  0 when
 * connected, else the negative error the connection failed with. */
static inline int tu_wait_connected(int fd, unsigned timeout_ms)
{
    int rc = tu_wait_fd(fd, POLLOUT, timeout_ms);
    if (rc < 0)
        return rc;
    int soerr = 0;
    socklen_t len = sizeof soerr;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
        return -errno;
    return -soerr;
}

/* ------------------------------------------------------------------------
 * Reading what a sink's descriptor delivered
 * ------------------------------------------------------------------------ */

/* Read exactly n bytes from fd (blocking or not).  0; -EPIPE if EOF came
 * first; -ETIMEDOUT; or -errno. */
static inline int tu_read_exact(int fd, void *buf, size_t n, unsigned timeout_ms)
{
    uint64_t deadline = check_now_ms() + timeout_ms;
    char *p = buf;
    while (n > 0) {
        uint64_t now = check_now_ms();
        if (now >= deadline)
            return -ETIMEDOUT;
        int rc = tu_wait_fd(fd, POLLIN, (unsigned)(deadline - now));
        if (rc < 0)
            return rc;
        ssize_t r = read(fd, p, n);
        if (r == 0)
            return -EPIPE;
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return -errno;
        }
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* Read fd until EOF into a malloc'd buffer with a NUL after the data (so
 * text can be compared as a string); *len gets the byte count.  NULL with
 * errno set on error, or ETIMEDOUT if EOF did not come in time. */
static inline char *tu_read_all(int fd, size_t *len, unsigned timeout_ms)
{
    uint64_t deadline = check_now_ms() + timeout_ms;
    size_t cap = 4096, used = 0;
    char *buf = malloc(cap);
    if (buf == NULL)
        return NULL;
    for (;;) {
        uint64_t now = check_now_ms();
        int rc = now >= deadline ? -ETIMEDOUT
                                 : tu_wait_fd(fd, POLLIN, (unsigned)(deadline - now));
        if (rc < 0) {
            free(buf);
            errno = -rc;
            return NULL;
        }
        if (cap - used < 2) {
            char *nb = realloc(buf, cap * 2);
            if (nb == NULL) {
                free(buf);
                errno = ENOMEM;
                return NULL;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + used, cap - used - 1);
        if (r == 0)
            break;
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            int e = errno;
            free(buf);
            errno = e;
            return NULL;
        }
        used += (size_t)r;
    }
    buf[used] = '\0';
    *len = used;
    return buf;
}

/* ------------------------------------------------------------------------
 * The other end of a socket: clients and collectors
 * ------------------------------------------------------------------------ */

/* Connect a blocking, close-on-exec client to the UNIX socket at path,
 * retrying while the path is missing or refuses (the listener is not up
 * yet) until timeout_ms.  fd or -errno. */
static inline int tu_connect_unix(const char *path, unsigned timeout_ms)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof sa.sun_path)
        return -ENAMETOOLONG;
    strcpy(sa.sun_path, path);
    uint64_t deadline = check_now_ms() + timeout_ms;
    for (;;) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return -errno;
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
            return fd;
        int e = errno;
        close(fd);
        if ((e != ENOENT && e != ECONNREFUSED && e != EINTR) ||
            check_now_ms() >= deadline)
            return -e;
        check_sleep_ms(10);
    }
}

/* Connect a blocking, close-on-exec client to host:port (numeric host,
 * "127.0.0.1" or "::1"), retrying on ECONNREFUSED until timeout_ms.  fd or
 * -errno (-EINVAL for a host that is not a numeric address). */
static inline int tu_connect_tcp(const char *host, unsigned port, unsigned timeout_ms)
{
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
    struct addrinfo *res;
    char ps[8];
    snprintf(ps, sizeof ps, "%u", port);
    if (getaddrinfo(host, ps, &hints, &res) != 0)
        return -EINVAL;
    uint64_t deadline = check_now_ms() + timeout_ms;
    int rc;
    for (;;) {
        int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            rc = -errno;
            break;
        }
        if (connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
            rc = fd;
            break;
        }
        rc = -errno;
        close(fd);
        if ((rc != -ECONNREFUSED && rc != -EINTR) || check_now_ms() >= deadline)
            break;
        check_sleep_ms(10);
    }
    freeaddrinfo(res);
    return rc;
}

/* A collector's socket at path: bound, and listening if listen_now (a
 * bound socket that does not listen yet refuses connections, which is how
 * the tests stage "collector not up yet" without racing anyone for the
 * path).  Blocking, close-on-exec.  fd or -errno. */
static inline int tu_bind_unix(const char *path, bool listen_now)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof sa.sun_path)
        return -ENAMETOOLONG;
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
        (listen_now && listen(fd, 16) < 0)) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

/* The same for TCP: bound to host (numeric) port 0, the chosen port in
 * *port.  The port stays reserved (connections to it are refused) until
 * the test calls listen() on fd.  fd or -errno. */
static inline int tu_bind_tcp(const char *host, bool listen_now, unsigned *port)
{
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
    struct addrinfo *res;
    if (getaddrinfo(host, "0", &hints, &res) != 0)
        return -EINVAL;
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int rc = fd < 0 ? -errno : 0;
    if (rc == 0 && (bind(fd, res->ai_addr, res->ai_addrlen) < 0 ||
                    (listen_now && listen(fd, 16) < 0)))
        rc = -errno;
    freeaddrinfo(res);
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (rc == 0 && getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
        rc = -errno;
    if (rc < 0) {
        if (fd >= 0)
            close(fd);
        return rc;
    }
    *port = ss.ss_family == AF_INET6
                ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

/* A collector thread: accepts one connection on a listening socket and
 * reads it until EOF, so the test thread can write (or drive a writer)
 * meanwhile.  After tu_collector_join(): data (malloc'd, NUL-terminated,
 * the caller frees it) and len, or err < 0. */
struct tu_collector {
    int listen_fd;
    unsigned timeout_ms;
    pthread_t thread;
    char *data;
    size_t len;
    int err;
};

static inline void *tu_collector_main(void *arg)
{
    struct tu_collector *c = arg;
    uint64_t deadline = check_now_ms() + c->timeout_ms;
    int rc = tu_wait_fd(c->listen_fd, POLLIN, c->timeout_ms);
    if (rc < 0) {
        c->err = rc;
        return NULL;
    }
    int fd = accept4(c->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
        c->err = -errno;
        return NULL;
    }
    uint64_t now = check_now_ms();
    c->data = tu_read_all(fd, &c->len, now < deadline ? (unsigned)(deadline - now) : 0);
    if (c->data == NULL)
        c->err = -errno;
    close(fd);
    return NULL;
}

/* Start the collector on listen_fd (which the caller keeps and closes).
 * 0 or -errno. */
static inline int tu_collector_start(struct tu_collector *c, int listen_fd,
                                     unsigned timeout_ms)
{
    memset(c, 0, sizeof *c);
    c->listen_fd = listen_fd;
    c->timeout_ms = timeout_ms;
    int rc = pthread_create(&c->thread, NULL, tu_collector_main, c);
    return -rc;
}

/* Wait for the collector to see EOF (or give up).  Returns c->err. */
static inline int tu_collector_join(struct tu_collector *c)
{
    pthread_join(c->thread, NULL);
    return c->err;
}

/* ------------------------------------------------------------------------
 * Set-up that sinks need
 * ------------------------------------------------------------------------ */

/* Arguments for calling a sink's open() directly, as the writer would
 * after parsing "SCHEME:ADDRESS[?KEY=VALUE]".  Keeps its own copies, so
 * it must outlive the sink instance (the contract: until close()). */
struct tu_args {
    struct els_sink_args args;
    char address[1200];
    char spec[1600];
    const char *keys[1];
    const char *values[1];
    char key[64], value[256];
    char err[512];
};

/* Fill t for scheme and address, with one option key=value if key is not
 * NULL, and return &t->args.  t->err is empty until open() fails. */
static inline struct els_sink_args *tu_sink_args(struct tu_args *t,
                                                 const char *scheme,
                                                 const char *address,
                                                 const char *key,
                                                 const char *value)
{
    memset(t, 0, sizeof *t);
    snprintf(t->address, sizeof t->address, "%s", address);
    snprintf(t->spec, sizeof t->spec, "%s:%s%s%s%s%s", scheme, address,
             key ? "?" : "", key ? key : "", key ? "=" : "",
             key ? value : "");
    t->args.scheme = scheme;
    t->args.address = t->address;
    t->args.spec = t->spec;
    if (key != NULL) {
        snprintf(t->key, sizeof t->key, "%s", key);
        snprintf(t->value, sizeof t->value, "%s", value);
        t->keys[0] = t->key;
        t->values[0] = t->value;
        t->args.n_options = 1;
    }
    t->args.option_keys = t->keys;
    t->args.option_values = t->values;
    t->args.err = t->err;
    t->args.err_len = sizeof t->err;
    return &t->args;
}

/* Block SIGPIPE on the calling thread, as the writer thread does for its
 * whole life (pipes cannot use MSG_NOSIGNAL). */
static inline void tu_block_sigpipe(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/* Is SIGPIPE pending on this thread or the process? */
static inline bool tu_sigpipe_pending(void)
{
    sigset_t set;
    return sigpending(&set) == 0 && sigismember(&set, SIGPIPE) == 1;
}

/* Does something (anything, even a dangling symbolic link) exist at path? */
static inline bool tu_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Write text to a new file at path (for "left untouched" checks).  0 or
 * -errno. */
static inline int tu_write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    size_t len = strlen(text);
    ssize_t n = write(fd, text, len);
    int e = errno;
    close(fd);
    return n == (ssize_t)len ? 0 : (n < 0 ? -e : -EIO);
}

/* The whole content of the file at path, malloc'd and NUL-terminated, or
 * NULL with errno set. */
static inline char *tu_read_file(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return NULL;
    size_t len;
    char *data = tu_read_all(fd, &len, TU_WAIT_MS);
    int e = errno;
    close(fd);
    errno = e;
    return data;
}

/* Does fd have both O_NONBLOCK and FD_CLOEXEC, as every descriptor the
 * library hands out must? */
static inline bool tu_is_nonblock_cloexec(int fd)
{
    int fl = fcntl(fd, F_GETFL), fd_fl = fcntl(fd, F_GETFD);
    return fl >= 0 && fd_fl >= 0 && (fl & O_NONBLOCK) && (fd_fl & FD_CLOEXEC);
}

/* The library's log, captured: tu_log_capture() installs a hook that keeps
 * every line (all levels, up to 16 KiB, from any thread); tu_log_contains()
 * looks for text in what was kept so far. */
static inline bool tu_log_op_(const char *add, const char *find)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static char text[16384];
    bool found = false;
    pthread_mutex_lock(&lock);
    if (add != NULL) {
        size_t used = strlen(text);
        snprintf(text + used, sizeof text - used, "%s\n", add);
    }
    if (find != NULL)
        found = strstr(text, find) != NULL;
    pthread_mutex_unlock(&lock);
    return found;
}

static inline void tu_log_hook_(void *user, enum els_log_level level,
                                const char *message)
{
    (void)user;
    (void)level;
    tu_log_op_(message, NULL);
}

static inline void tu_log_capture(void)
{
    els_set_log_hook(tu_log_hook_, NULL, ELS_LOG_DEBUG);
}

static inline bool tu_log_contains(const char *text)
{
    return tu_log_op_(NULL, text);
}

/* The permission bits of path (not following a symbolic link), or
 * (mode_t)-1 if nothing is there. */
static inline mode_t tu_file_mode(const char *path)
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return (mode_t)-1;
    return st.st_mode & 07777;
}

/* What tu_run_unprivileged() returns when it could not drop root. */
#define TU_SKIPPED 77

/* Run fn(dir) where permission bits apply, in a forked child; dir is a new
 * directory check_path(name), mode 0700, owned by the user fn runs as.
 * Root bypasses permission checks, so as root the child first switches to
 * uid/gid 65534 ("nobody"; the case's directory is made traversable for
 * it).  A CHECK failing inside fn fails the child.  Returns 0 when fn
 * passed, 1 when it failed, TU_SKIPPED (after printing why) when root
 * could not be dropped. */
static inline int tu_run_unprivileged(const char *name, void (*fn)(const char *dir))
{
    const char *dir = check_path(name);
    static char dirbuf[1024];
    snprintf(dirbuf, sizeof dirbuf, "%s", dir);
    CHECK_OK(mkdir(dirbuf, 0700) < 0 ? -errno : 0);
    bool root = geteuid() == 0;
    if (root) {
        CHECK_OK(chown(dirbuf, 65534, 65534) < 0 ? -errno : 0);
        CHECK_OK(chmod(check_dir, 0711) < 0 ? -errno : 0);
    }
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        if (root && (setgroups(0, NULL) < 0 || setgid(65534) < 0 ||
                     setuid(65534) < 0 || geteuid() == 0))
            _exit(TU_SKIPPED);
        fn(dirbuf);
        check_exit_ok();
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == TU_SKIPPED) {
        printf("SKIPPED PART: %s: root, and cannot switch to uid 65534\n", name);
        return TU_SKIPPED;
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

#endif /* ELS_TEST_TESTUTIL_H */
