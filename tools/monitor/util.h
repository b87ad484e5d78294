/*
 * util.h: descriptor helpers of the eventlog-sink tool.
 *
 * Plain POSIX plumbing the tool needs and the library has no business
 * exporting: every descriptor close-on-exec and non-blocking, EINTR
 * handled.  Addresses come from the library's public endpoint calls.
 */
#ifndef ELS_TOOL_UTIL_H
#define ELS_TOOL_UTIL_H

#include <stddef.h>
#include <sys/types.h>

/* socket(domain, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0); fd or -errno. */
int util_socket_nb(int domain, int type);

/* Accept one connection, close-on-exec and non-blocking: 0 with *fd set,
 * -EAGAIN if none is pending, or -errno. */
int util_accept_nb(int listen_fd, int *fd);

/* close() that keeps errno and ignores EINTR (Linux: the fd is gone). */
void util_close(int fd);

/* "a regular file", "a directory", ... for a stat() mode. */
const char *util_file_type_name(mode_t mode);

/* Remove path if it still names the file with this type, device and
 * inode (the caller holds it open, so the inode number is not reused). */
void util_unlink_if_same(const char *path, mode_t type, dev_t dev, ino_t ino);

/* Read a secret file the way the library reads its control-secret= file
 * (lib/control/control.c): a regular file (not a symlink) owned by this
 * user or root, no permission bits for group or others, at most len
 * bytes with one trailing newline dropped, into buf (not terminated).
 * The byte count, or a negative errno with one line in err ("mode 640
 * lets others read or change it (chmod 600)"): -EACCES a wrong owner
 * or mode, -EFBIG more than len bytes, -EINVAL not a regular file or
 * empty, -errno opening or reading. */
ssize_t util_read_private(const char *path, char *buf, size_t len,
                          char *err, size_t err_len);

#endif /* ELS_TOOL_UTIL_H */
