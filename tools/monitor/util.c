/*
 * util.c: descriptor helpers of the eventlog-sink tool (see util.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

int util_socket_nb(int domain, int type)
{
    int fd = socket(domain, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    return fd < 0 ? -errno : fd;
}

int util_accept_nb(int listen_fd, int *fd)
{
    for (;;) {
        int c = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (c >= 0) {
            *fd = c;
            return 0;
        }
        /* A connection that died in the backlog: try the next. */
        if (errno == EINTR || errno == ECONNABORTED)
            continue;
        return errno == EWOULDBLOCK ? -EAGAIN : -errno;
    }
}

void util_close(int fd)
{
    int saved = errno;
    (void)close(fd);
    errno = saved;
}

const char *util_file_type_name(mode_t mode)
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

void util_unlink_if_same(const char *path, mode_t type, dev_t dev, ino_t ino)
{
    struct stat st;
    if (lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == type &&
        st.st_dev == dev && st.st_ino == ino)
        (void)unlink(path);
}

ssize_t util_read_private(const char *path, char *buf, size_t len,
                          char *err, size_t err_len)
{
    /* O_NONBLOCK: a FIFO put in its place must not hang the open. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        snprintf(err, err_len, "%s", e == ELOOP ? "a symbolic link" : strerror(e));
        return -e;
    }
    struct stat sb;
    ssize_t r = 0;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        snprintf(err, err_len, "not a regular file");
        r = -EINVAL;
    } else if (sb.st_uid != geteuid() && sb.st_uid != 0) {
        snprintf(err, err_len, "owned by uid %lu, not by this user",
                 (unsigned long)sb.st_uid);
        r = -EACCES;
    } else if (sb.st_mode & 077) {
        snprintf(err, err_len, "mode %03o lets others read or change it "
                 "(chmod 600)", (unsigned)(sb.st_mode & 0777));
        r = -EACCES;
    }
    size_t got = 0, extra = 0;
    char more[2];       /* what follows len bytes: a newline at most */
    while (r == 0 && extra < sizeof more) {
        char *at = got < len ? buf + got : more + extra;
        size_t room = got < len ? len - got : sizeof more - extra;
        ssize_t n = read(fd, at, room);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            r = -errno;
            snprintf(err, err_len, "%s", strerror(errno));
        } else if (n == 0) {
            break;
        } else if (got < len) {
            got += (size_t)n;
        } else {
            extra += (size_t)n;
        }
    }
    if (r == 0) {
        if (extra == 0 && got > 0 && buf[got - 1] == '\n')
            got--;
        if (extra > 1 || (extra == 1 && more[0] != '\n')) {
            snprintf(err, err_len, "longer than %zu bytes", len);
            r = -EFBIG;
        } else if (got == 0) {
            snprintf(err, err_len, "empty");
            r = -EINVAL;
        } else {
            r = (ssize_t)got;
        }
    }
    if (r < 0)
        explicit_bzero(buf, len);
    util_close(fd);
    return r;
}
