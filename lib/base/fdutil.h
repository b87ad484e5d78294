/*
 * fdutil.h: descriptor plumbing shared by the sinks, the writer and the
 * receiver.  Every descriptor is created close-on-exec; every call retries
 * on EINTR; nothing here raises SIGPIPE or changes a signal disposition.
 */
#ifndef ELS_FDUTIL_H
#define ELS_FDUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

/* socket(domain, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0); fd or -errno. */
int elsi_socket_nb(int domain, int type);

/* Accept one connection on a listening socket, close-on-exec and
 * non-blocking.  0 with *fd set, -EAGAIN if none is pending, or -errno. */
int elsi_accept_nb(int listen_fd, int *fd);

/* Set O_NONBLOCK.  0 or -errno. */
int elsi_set_nonblock(int fd);

/* A close-on-exec, non-blocking pipe (the writer's wake-up channel). */
int elsi_pipe_nb(int fds[2]);

/* close() that keeps errno and ignores EINTR (Linux: the fd is gone). */
void elsi_close(int fd);

/* Write as much of iov as the descriptor takes now.  Sockets use sendmsg
 * with MSG_NOSIGNAL | MSG_DONTWAIT; other descriptors writev.  A write to a
 * pipe with no reader returns -EPIPE; the SIGPIPE it raises is aimed at the
 * calling thread, which must have SIGPIPE blocked (the writer thread does),
 * and is consumed here so it never reaches the process.
 * Returns bytes written (> 0), -EAGAIN, or -errno. */
ssize_t elsi_write_iov(int fd, bool is_socket, const struct iovec *iov, int iovcnt);

/* Write all of buf, waiting with poll() when the descriptor is
 * non-blocking.  For the tools and tests.  0 or -errno. */
int elsi_write_all(int fd, const void *buf, size_t len);

/* Is fd a socket? */
bool elsi_is_socket(int fd);

/* What kind of file a stat() mode describes, for messages about what is in
 * the way at a path: "a regular file", "a directory", "a FIFO"... */
const char *elsi_file_type_name(mode_t mode);

/* Remove path if it still names the file this process made there: of type
 * (S_IFSOCK, S_IFIFO), with device and inode numbers dev and ino, and the
 * calling process is owner (the pid that made it: a forked child must not
 * remove its parent's file).  The caller must hold the file's inode alive
 * until this returns (an open descriptor on it), or its number may already
 * belong to a replacement.  Best effort; nothing is reported. */
void elsi_unlink_if_ours(const char *path, mode_t type, dev_t dev, ino_t ino,
                         pid_t owner);

/* Rename entry name of dir to base in parent (directory descriptors, or
 * AT_FDCWD), never replacing anything: RENAME_NOREPLACE, or on a
 * filesystem without it link() and unlink().  0, -EEXIST when something
 * is at base, or -errno. */
int elsi_rename_new(int dir, const char *name, int parent, const char *base);

struct stat;

/* Create a file at path with permission bits exactly mode, safely in a
 * directory other users may write (see Note [Creating files others can
 * race] in fdutil.c).  make(dirfd, name, reach, arg) creates the file as
 * entry name of a fresh private directory (mode 0700, beside path, opened
 * as dirfd); reach is a path naming that entry, for calls that take only a
 * path (bind): "/proc/self/fd/N/NAME", or the textual path when /proc is
 * missing.  make() returns 0 or -errno and writes a message into err.
 * Then the mode is set inside the private directory and the file is
 * renamed to path: without replacing anything when replace is NULL
 * (-EEXIST if something is there), or replacing only the file whose
 * st_dev/st_ino replace gives (-EEXIST if something else is there).  On
 * success *st describes the file now at path.  Whatever the outcome, the
 * private directory is gone and nothing else is left behind (a file make()
 * created is removed on failure; its descriptors are make()'s to close).
 * Failure: -errno with one line in err that does not repeat path.  A path
 * ending in '/' or naming "." or ".." is refused (ELS_EINVAL). */
int elsi_create_at(const char *path, mode_t mode, const struct stat *replace,
                   int (*make)(int dirfd, const char *name, const char *reach,
                               void *arg, char *err, size_t err_len),
                   void *arg, struct stat *st, char *err, size_t err_len);

/* Bind the AF_UNIX stream socket fd at path with exactly mode and listen
 * with backlog, by elsi_create_at() (never replacing anything: a stale
 * socket must be removed first).  There is no moment at which the socket
 * can be reached by path with wider permissions, and nothing planted at
 * path (a symbolic link) is followed.  *st describes the socket file.
 * 0 or -errno with one line in err that does not repeat path (-EEXIST:
 * something is at path; -ENAMETOOLONG: no way to name the private entry
 * within sun_path). */
int elsi_unix_bind_listen(int fd, const char *path, mode_t mode, int backlog,
                          struct stat *st, char *err, size_t err_len);

struct addrinfo;

/* Listen on TCP at the first address of res (a passive list from
 * elsi_tcp_resolve()) that binds: one listener is enough, though a name
 * may resolve to several addresses ("localhost": ::1 and 127.0.0.1).  The
 * socket is close-on-exec and non-blocking, with SO_REUSEADDR, and
 * IPV6_V6ONLY on an IPv6 address.  Returns the listening descriptor, or,
 * when no address binds, -errno of the first "in use" failure (the
 * likeliest mistake) or else of the first failure, with the address that
 * failed formatted into where as "HOST:PORT" (fallback, the address as
 * written, when it cannot be formatted). */
int elsi_tcp_listen(const struct addrinfo *res, int backlog,
                    const char *fallback, char *where, size_t where_len);

/* Format the address fd is bound to as elsi_sockaddr_format() does: the
 * port the kernel chose when bound to port 0.  >= 0, or -errno. */
int elsi_bound_address(int fd, char *buf, size_t len);

#endif /* ELS_FDUTIL_H */
