/*
 * fdutil.c: descriptor plumbing shared by the sinks, the writer and the
 * receiver tool: creating sockets and pipes close-on-exec and non-blocking,
 * listening on resolved TCP addresses, accepting, closing, and writing
 * without ever letting SIGPIPE reach the process; and, for the sinks that
 * create files, naming what is in the way at a path and removing only a
 * file they made.  It knows nothing about units, queues or specs (address
 * syntax and name resolution are address.c's), keeps no state, and never
 * changes a signal disposition or another thread's signal mask: callers
 * that write to pipes block SIGPIPE on their own thread.
 *
 * Linux only (accept4, pipe2, MSG_NOSIGNAL), like the rest of the library.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* accept4, pipe2 */
#endif

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "sinks/address.h"
#include "sinks/fdutil.h"

int elsi_socket_nb(int domain, int type)
{
    int fd = socket(domain, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    return fd < 0 ? -errno : fd;
}

int elsi_accept_nb(int listen_fd, int *fd)
{
    for (;;) {
        int c = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (c >= 0) {
            *fd = c;
            return 0;
        }
        /* ECONNABORTED: that client gave up while queued; another one may
         * be behind it, so look again rather than wait for the next
         * POLLIN. */
        if (errno == EINTR || errno == ECONNABORTED)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return -EAGAIN;
        return -errno;
    }
}

int elsi_set_nonblock(int fd)
{
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0)
        return -errno;
    if (flags & O_NONBLOCK)
        return 0;
    if (fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
        return -errno;
    return 0;
}

int elsi_pipe_nb(int fds[2])
{
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0)
        return -errno;
    return 0;
}

void elsi_close(int fd)
{
    /* On Linux the descriptor is released even when close() reports EINTR,
     * so retrying could close a descriptor another thread just opened. */
    int saved = errno;
    (void)close(fd);
    errno = saved;
}

/* Bind and listen on one resolved address.  fd or -errno. */
static int fdutil_tcp_listen_one(const struct addrinfo *ai, int backlog)
{
    int fd = elsi_socket_nb(ai->ai_family, SOCK_STREAM);
    if (fd < 0)
        return fd;
    int one = 1;
    /* An IPv6 socket accepts IPv4-mapped clients too unless told not to;
     * a spec naming an IPv6 address means that address only. */
    if (ai->ai_family == AF_INET6 &&
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) < 0)
        goto fail;
    /* SO_REUSEADDR lets a restarted program bind its port while
     * connections of the previous run sit in TIME_WAIT.  It does not let
     * two listeners share a port on Linux (that is SO_REUSEPORT, which we
     * do not want: a second listener must fail, not split the clients). */
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0)
        goto fail;
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0)
        goto fail;
    if (listen(fd, backlog) < 0)
        goto fail;
    return fd;
fail: {
        int e = errno;
        elsi_close(fd);
        return -e;
    }
}

int elsi_tcp_listen(const struct addrinfo *res, int backlog,
                    const char *fallback, char *where, size_t where_len)
{
    int first_err = 0;
    snprintf(where, where_len, "%s", fallback);
    for (const struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        int fd = fdutil_tcp_listen_one(ai, backlog);
        if (fd >= 0)
            return fd;
        if (first_err == 0 || (fd == -EADDRINUSE && first_err != -EADDRINUSE)) {
            first_err = fd;
            if (elsi_sockaddr_format(ai->ai_addr, ai->ai_addrlen, where,
                                     where_len) < 0)
                snprintf(where, where_len, "%s", fallback);
        }
    }
    return first_err < 0 ? first_err : -EADDRNOTAVAIL;   /* empty list */
}

int elsi_bound_address(int fd, char *buf, size_t len)
{
    struct sockaddr_storage ss;
    socklen_t ss_len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &ss_len) < 0)
        return -errno;
    return elsi_sockaddr_format((const struct sockaddr *)&ss, ss_len, buf, len);
}

bool elsi_is_socket(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
}

const char *elsi_file_type_name(mode_t mode)
{
    if (S_ISREG(mode))  return "a regular file";
    if (S_ISDIR(mode))  return "a directory";
    if (S_ISLNK(mode))  return "a symbolic link";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode))  return "a character device";
    if (S_ISBLK(mode))  return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "a file of unknown type";
}

void elsi_unlink_if_ours(const char *path, mode_t type, dev_t dev, ino_t ino,
                         pid_t owner)
{
    /* Between this lstat() and the unlink() another process could still
     * swap the file; only one with write access to the directory can, and
     * it could remove the file anyway. */
    struct stat st;
    if (getpid() == owner && lstat(path, &st) == 0 &&
        (st.st_mode & S_IFMT) == type && st.st_dev == dev && st.st_ino == ino)
        (void)unlink(path);
}

/* Note [Consuming SIGPIPE]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~
 * Sockets are easy: MSG_NOSIGNAL stops the kernel from raising SIGPIPE.
 * writev() to a pipe or FIFO whose reader has gone raises SIGPIPE as well as
 * failing with EPIPE, and there is no flag to prevent it.  We may not touch
 * the process-wide disposition (the GHC RTS and the application own it), so
 * the contract is that the calling thread has SIGPIPE blocked (the writer
 * thread blocks it for its whole life).
 *
 * The kernel directs this SIGPIPE at the thread that wrote (send_sig() on
 * current), not at the process.  Because that thread blocks it, the signal
 * is not delivered anywhere: it stays pending on this thread only, where no
 * other thread can take it.  We then remove it with sigtimedwait() and a zero
 * timeout, which never waits.  Were it left pending, it would be delivered
 * the moment anything unblocked SIGPIPE on this thread, and with the default
 * disposition that kills the process.
 *
 * We only consume it if SIGPIPE was not pending before the write (checked
 * with sigpending(), which covers both this thread's and the process's
 * pending sets).  Standard signals do not queue: a SIGPIPE that was already
 * pending absorbs ours, and consuming "ours" would instead swallow a signal
 * someone else sent, which is not ours to discard.  In that case the pending
 * signal stays as it was, and our write added nothing to it.  The one
 * window left is a process-directed SIGPIPE sent by another process between
 * the sigpending() and the sigtimedwait(): indistinguishable from ours, and
 * merged with it by the kernel anyway, so there is only one signal to
 * account for either way.
 *
 * If the caller broke the contract and SIGPIPE is not blocked, the signal
 * was delivered (or ignored) before writev() returned; sigtimedwait() then
 * finds nothing and returns at once, so the call is harmless. */
static void fdutil_consume_sigpipe(void)
{
    sigset_t set;
    const struct timespec zero = { 0, 0 };
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    while (sigtimedwait(&set, NULL, &zero) < 0 && errno == EINTR) {
    }
}

static bool fdutil_sigpipe_pending(void)
{
    sigset_t pending;
    return sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
}

ssize_t elsi_write_iov(int fd, bool is_socket, const struct iovec *iov, int iovcnt)
{
    if (is_socket) {
        struct msghdr msg = {
            .msg_iov = (struct iovec *)iov,   /* sendmsg does not write it */
            .msg_iovlen = (size_t)iovcnt,
        };
        for (;;) {
            ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n >= 0)
                return n;
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return -EAGAIN;
            return -errno;
        }
    }

    /* See Note [Consuming SIGPIPE]. */
    bool was_pending = fdutil_sigpipe_pending();
    for (;;) {
        ssize_t n = writev(fd, iov, iovcnt);
        if (n >= 0)
            return n;
        int e = errno;
        if (e == EINTR)
            continue;
        if (e == EAGAIN || e == EWOULDBLOCK)
            return -EAGAIN;
        if (e == EPIPE && !was_pending)
            fdutil_consume_sigpipe();
        errno = e;
        return -e;
    }
}

int elsi_write_all(int fd, const void *buf, size_t len)
{
    bool is_socket = elsi_is_socket(fd);
    const char *p = buf;
    while (len > 0) {
        struct iovec iov = { .iov_base = (void *)p, .iov_len = len };
        ssize_t n = elsi_write_iov(fd, is_socket, &iov, 1);
        if (n == -EAGAIN) {
            struct pollfd pfd = { .fd = fd, .events = POLLOUT };
            if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
                return -errno;
            continue;
        }
        if (n < 0)
            return (int)n;
        if (n == 0)
            return -EIO;    /* cannot happen for len > 0; do not spin */
        p += n;
        len -= (size_t)n;
    }
    return 0;
}
