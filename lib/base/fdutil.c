/*
 * fdutil.c: descriptor plumbing shared by the sinks, the writer and the
 * receiver tool: creating sockets and pipes close-on-exec and non-blocking,
 * listening on resolved TCP addresses, accepting, closing, and writing
 * without ever letting SIGPIPE reach the process; and, for the sinks that
 * create files, creating them with their final mode in directories other
 * users may write, naming what is in the way at a path, and removing only
 * a file they made.  It knows nothing about units, queues or specs (address
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
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "base/address.h"
#include "base/fdutil.h"
#include "base/log.h"

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

// ---------------------------------------------------------------------------
// Creating files where others can race
// ---------------------------------------------------------------------------

/* Note [Creating files others can race]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * bind() and mkfifo() create their file with 0777 or the given mode less
 * the umask, which is not what mode= asks.  Fixing it afterwards with
 * chmod(path) is the classic race: whoever can write the directory (/tmp)
 * swaps a symbolic link in between, and chmod() follows it, so a root
 * program makes any file it names 0666.  The alternatives:
 *   - umask() around bind(): the umask is process-wide, and other threads
 *     (the RTS's, the application's) create files at the same time.
 *   - fchmod() on the descriptor: a socket descriptor's inode is not the
 *     file bind() made (Linux changes the sockfs inode, and the file keeps
 *     its mode), and a FIFO has no descriptor before it exists at a path.
 * So the file is made where nobody else can reach it: in a fresh
 * directory beside path, mode 0700, owned by us and opened without
 * following links (checked with fstat()).  Every later step names the
 * entry relative to that directory's descriptor: mkfifoat(), fchmodat(),
 * bind() through /proc/self/fd/N/NAME (a path that resolves through our
 * descriptor, not through the shared directory), renameat().  The mode is
 * final before the rename publishes the file, so no one ever sees it with
 * wider bits, and the rename never follows what is at path: it replaces a
 * symbolic link rather than its target, and with RENAME_NOREPLACE it
 * replaces nothing at all.  Being beside path, the private directory is on
 * the same filesystem, so the rename cannot fail with EXDEV.  If the
 * directory cannot be made (a directory we may create files in but not
 * subdirectories does not exist on Linux) the creation fails; there is no
 * less safe fallback. */

/* A random suffix for the private directory's name. */
static void fdutil_random_name(char *buf, size_t len, unsigned attempt)
{
    static const char alphabet[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    unsigned char r[8];
    if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        unsigned long v = (unsigned long)ts.tv_nsec ^ ((unsigned long)getpid() << 16)
                          ^ ((unsigned long)attempt << 8) ^ (unsigned long)ts.tv_sec;
        for (size_t i = 0; i < sizeof r; i++, v = v * 6364136223846793005UL + 1)
            r[i] = (unsigned char)(v >> 33);
    }
    char s[sizeof r + 1];
    for (size_t i = 0; i < sizeof r; i++)
        s[i] = alphabet[r[i] % (sizeof alphabet - 1)];
    s[sizeof r] = '\0';
    snprintf(buf, len, ".els-%s", s);
}

/* Split path into its directory (opened as *parent, O_PATH) and its last
 * component (into base). */
static int fdutil_open_parent(const char *path, int *parent, char *base,
                              size_t base_len, char *err, size_t err_len)
{
    const char *slash = strrchr(path, '/');
    const char *name = slash != NULL ? slash + 1 : path;
    if (name[0] == '\0' || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return elsi_fail(err, err_len, ELS_EINVAL,
                         "the path must end in a file name");
    if (strlen(name) >= base_len)
        return elsi_fail(err, err_len, ELS_ENAMETOOLONG,
                         "the file name is too long");
    snprintf(base, base_len, "%s", name);
    int fd;
    if (slash == NULL) {
        fd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    } else {
        size_t n = (size_t)(slash - path);
        char *dir = malloc(n + 2);
        if (dir == NULL)
            return elsi_fail(err, err_len, ELS_ENOMEM, "out of memory");
        memcpy(dir, path, n);
        if (n == 0)
            dir[n++] = '/';
        dir[n] = '\0';
        fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        free(dir);
    }
    if (fd < 0)
        return elsi_fail(err, err_len, -errno, "cannot open its directory: %s",
                         strerror(errno));
    *parent = fd;
    return 0;
}

/* Make a private directory (0700, ours) in parent: its descriptor, with
 * its name in name.  -errno with the message written. */
static int fdutil_private_dir(int parent, char *name, size_t name_len,
                              char *err, size_t err_len)
{
    for (unsigned attempt = 0;; attempt++) {
        fdutil_random_name(name, name_len, attempt);
        if (mkdirat(parent, name, 0700) == 0)
            break;
        if (errno != EEXIST || attempt >= 100)
            return elsi_fail(err, err_len, -errno,
                             "cannot create a private directory beside it: %s",
                             strerror(errno));
    }
    int d = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (d < 0 || fstat(d, &st) < 0 || st.st_uid != geteuid() ||
        fchmod(d, 0700) < 0) {
        /* Swapped in the instant since mkdirat(): not ours to touch.  Our
         * own empty directory, if it still exists somewhere, is harmless. */
        int e = d < 0 ? errno : EEXIST;
        if (d >= 0)
            elsi_close(d);
        return elsi_fail(err, err_len, -e,
                         "the private directory beside it was replaced: %s",
                         strerror(e));
    }
    return d;
}

/* Remove the private directory if it is still the one we hold. */
static void fdutil_private_dir_remove(int parent, const char *name, int dir)
{
    struct stat a, b;
    if (fstat(dir, &a) == 0 &&
        fstatat(parent, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
        a.st_dev == b.st_dev && a.st_ino == b.st_ino)
        (void)unlinkat(parent, name, AT_REMOVEDIR);
    elsi_close(dir);
}

int elsi_rename_new(int dir, const char *name, int parent, const char *base)
{
    if (renameat2(dir, name, parent, base, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -errno;
    /* A filesystem without RENAME_NOREPLACE: link() never replaces either. */
    if (linkat(dir, name, parent, base, 0) < 0)
        return -errno;
    (void)unlinkat(dir, name, 0);
    return 0;
}

int elsi_create_at(const char *path, mode_t mode, const struct stat *replace,
                   int (*make)(int dirfd, const char *name, const char *reach,
                               void *arg, char *err, size_t err_len),
                   void *arg, struct stat *st, char *err, size_t err_len)
{
    static const char entry[] = "f";
    char base[256], pname[32], reach[sizeof pname + 64];
    int parent = -1, dir = -1;
    int rc = fdutil_open_parent(path, &parent, base, sizeof base, err, err_len);
    if (rc < 0)
        return rc;
    rc = fdutil_private_dir(parent, pname, sizeof pname, err, err_len);
    if (rc < 0)
        goto out;
    dir = rc;

    /* See Note [Creating files others can race] for why reach goes through
     * /proc when it can. */
    if (faccessat(AT_FDCWD, "/proc/self/fd", X_OK, 0) == 0) {
        snprintf(reach, sizeof reach, "/proc/self/fd/%d/%s", dir, entry);
    } else {
        size_t n = strlen(path) - strlen(base);
        char *r = malloc(n + strlen(pname) + sizeof entry + 2);
        if (r == NULL) {
            rc = elsi_fail(err, err_len, ELS_ENOMEM, "out of memory");
            goto out;
        }
        sprintf(r, "%.*s%s/%s", (int)n, path, pname, entry);
        rc = make(dir, entry, r, arg, err, err_len);
        free(r);
        goto made;
    }
    rc = make(dir, entry, reach, arg, err, err_len);
made:
    if (rc < 0)
        goto out;
    struct stat now;
    if (fchmodat(dir, entry, mode, 0) < 0) {
        rc = elsi_fail(err, err_len, -errno, "cannot set mode %04o: %s",
                       (unsigned)mode, strerror(errno));
        goto out_made;
    }
    if (fstatat(dir, entry, st, AT_SYMLINK_NOFOLLOW) < 0) {
        rc = elsi_fail(err, err_len, -errno, "cannot inspect what was made: %s",
                       strerror(errno));
        goto out_made;
    }
    if (replace == NULL) {
        rc = elsi_rename_new(dir, entry, parent, base);
    } else if (fstatat(parent, base, &now, AT_SYMLINK_NOFOLLOW) < 0) {
        rc = errno == ENOENT ? elsi_rename_new(dir, entry, parent, base)
                             : -errno;
    } else if (now.st_dev != replace->st_dev || now.st_ino != replace->st_ino) {
        rc = ELS_EEXIST;
    } else {
        /* Between the fstatat() and here someone who can write the
         * directory could put something else at path, and it would be
         * replaced; they could as well have removed it themselves. */
        rc = renameat(dir, entry, parent, base) < 0 ? -errno : 0;
    }
    if (rc == ELS_EEXIST || rc == -ENOTEMPTY) {
        rc = elsi_fail(err, err_len, ELS_EEXIST,
                       "something else appeared at the path just now");
        goto out_made;
    }
    if (rc < 0) {
        rc = elsi_fail(err, err_len, rc, "cannot put it in place: %s",
                       strerror(-rc));
        goto out_made;
    }
    rc = 0;
    goto out;
out_made:
    (void)unlinkat(dir, entry, 0);
out:
    if (dir >= 0)
        fdutil_private_dir_remove(parent, pname, dir);
    elsi_close(parent);
    return rc;
}

struct fdutil_bind {
    int fd;
    int backlog;
};

static int fdutil_bind_make(int dirfd, const char *name, const char *reach,
                            void *arg, char *err, size_t err_len)
{
    (void)dirfd;
    (void)name;
    const struct fdutil_bind *b = arg;
    struct sockaddr_un sa;
    socklen_t sa_len;
    char why[ELSI_ADDR_ERR_MAX];
    int rc = elsi_unix_addr_make(reach, &sa, &sa_len, why, sizeof why);
    if (rc < 0)
        return elsi_fail(err, err_len, rc, "%s", why);
    if (bind(b->fd, (const struct sockaddr *)&sa, sa_len) < 0)
        return elsi_fail(err, err_len, -errno, "cannot bind: %s",
                         strerror(errno));
    /* Listening before the file is published: a socket bound but not
     * listening refuses connect(), and another program probing the path
     * for a live listener would take it for a stale socket. */
    if (listen(b->fd, b->backlog) < 0)
        return elsi_fail(err, err_len, -errno, "cannot listen: %s",
                         strerror(errno));
    return 0;
}

int elsi_unix_bind_listen(int fd, const char *path, mode_t mode, int backlog,
                          struct stat *st, char *err, size_t err_len)
{
    struct fdutil_bind b = { fd, backlog };
    return elsi_create_at(path, mode, NULL, fdutil_bind_make, &b, st, err,
                          err_len);
}
