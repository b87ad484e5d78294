/*
 * util.c: descriptor helpers of the eventlog-sink tool (see util.h).
 */
#include <errno.h>
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
