/*
 * unix.c: the "unix" sink (listen on a UNIX stream socket; every
 * accepted client is a consumer) and the "unix-connect" sink (connect out
 * to a collector's UNIX socket).  They produce descriptors and nothing else:
 * the writer thread does every read and write on them, decides when to
 * accept or redial, and closes what it was given.  What this file does own
 * is the socket file: it refuses to replace anything that is not a stale
 * socket, creates it with its final permissions (no moment with wider
 * ones, nothing at the path followed), reports it by the absolute path it
 * was bound at, and removes it at close only if it is still the one this
 * process created.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/address.h"
#include "base/fdutil.h"
#include "base/log.h"
#include "sinks/sinks.h"
#include "sinks/spec.h"

#define UNIX_BACKLOG 16
#define UNIX_DEFAULT_MODE 0600

/* ------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------ */

/* The socket file's path from args->address, in *sa.  A path that is
 * empty or does not fit sun_path is refused, in the spec's words. */
static int unix_addr(const struct els_sink_args *args, struct sockaddr_un *sa,
                     socklen_t *sa_len)
{
    char why[ELSI_ADDR_ERR_MAX];
    int rc = elsi_unix_addr_make(args->address, sa, sa_len, why, sizeof why);
    return rc < 0 ? elsi_sink_fail(args, rc, "%s", why) : 0;
}

/* ------------------------------------------------------------------------
 * unix: listen on PATH
 * ------------------------------------------------------------------------ */

enum { UNIX_STALE = 0, UNIX_LIVE = 1, UNIX_GONE = 2 };

struct unix_listener {
    int fd;
    struct sockaddr_un sa;      /* sa.sun_path is the path, NUL-terminated */
    socklen_t sa_len;
    /* The path made absolute when it was bound (Note [Absolute socket
     * paths]); NULL when the working directory could not be read. */
    char *abs_path;
    /* The socket file we bound, to recognise it at close. */
    dev_t dev;
    ino_t ino;
    pid_t owner;                /* the process that bound it */
};

/* Is a process listening on the existing socket file at sa?  Connecting is
 * the only reliable test: a socket file outlives the process that bound it
 * (nothing removes it when that process dies), and then connect() is
 * refused.  A live listener receives one connection that closes at once.
 * UNIX_LIVE, UNIX_STALE, UNIX_GONE, or -errno (message in err). */
static int unix_probe_live(const struct unix_listener *u,
                           const struct els_sink_args *args)
{
    int fd = elsi_socket_nb(AF_UNIX, SOCK_STREAM);
    if (fd < 0)
        return elsi_fail(args->err, args->err_len, fd,
                         "cannot create a socket to probe %s: %s",
                         u->sa.sun_path, strerror(-fd));
    int rc;
    while ((rc = connect(fd, (const struct sockaddr *)&u->sa, u->sa_len)) < 0
           && errno == EINTR) {
    }
    int e = errno;
    elsi_close(fd);
    if (rc == 0)
        return UNIX_LIVE;
    switch (e) {
    case EAGAIN:        /* its backlog is full: very much alive */
    case EINPROGRESS:
        return UNIX_LIVE;
    case ECONNREFUSED:  /* nobody listening: left behind by a dead process */
        return UNIX_STALE;
    case ENOENT:        /* removed meanwhile: nothing to clean up */
        return UNIX_GONE;
    default:
        return elsi_fail(args->err, args->err_len, -e,
                         "cannot tell whether %s is in use: connect: %s",
                         u->sa.sun_path, strerror(e));
    }
}

/* Make the path free for bind(): nothing there, or only a stale socket,
 * which is removed.  Anything else is refused. */
static int unix_clear_path(const struct unix_listener *u,
                           const struct els_sink_args *args)
{
    const char *path = u->sa.sun_path;
    struct stat st;
    if (lstat(path, &st) < 0) {
        if (errno == ENOENT)
            return 0;
        return elsi_fail(args->err, args->err_len, -errno,
                         "cannot inspect %s: %s", path, strerror(errno));
    }
    if (!S_ISSOCK(st.st_mode))
        return elsi_fail(args->err, args->err_len, ELS_EEXIST,
                         "refusing to replace %s: it is %s", path,
                         elsi_file_type_name(st.st_mode));
    int live = unix_probe_live(u, args);
    if (live < 0)
        return live;
    if (live == UNIX_GONE)
        return 0;
    if (live == UNIX_LIVE)
        return elsi_fail(args->err, args->err_len, ELS_EADDRINUSE,
                         "another process is listening on %s", path);
    /* Remove only the socket we probed: if the path names another file now
     * (swapped in during the probe), leave it and let the bind fail. */
    struct stat again;
    if (lstat(path, &again) < 0)
        return errno == ENOENT ? 0
                               : elsi_fail(args->err, args->err_len, -errno,
                                           "cannot inspect %s: %s", path,
                                           strerror(errno));
    if (again.st_dev != st.st_dev || again.st_ino != st.st_ino ||
        !S_ISSOCK(again.st_mode))
        return elsi_fail(args->err, args->err_len, ELS_EADDRINUSE,
                         "%s changed while being checked", path);
    if (unlink(path) < 0 && errno != ENOENT)
        return elsi_fail(args->err, args->err_len, -errno,
                         "cannot remove stale socket %s: %s", path,
                         strerror(errno));
    elsi_log(ELS_LOG_INFO, "removed stale socket %s", path);
    return 0;
}

/* Note [Socket file permissions]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * bind() creates the socket file with 0777 & ~umask, which is usually wider
 * than mode=, and fixing it afterwards with chmod() by path lets anyone who
 * can write the directory redirect the chmod() through a symbolic link.
 * elsi_unix_bind_listen() binds in a private directory, sets the mode and
 * starts listening there, and only then renames the socket into place
 * (see Note [Creating files others can race] in base/fdutil.c): from the first
 * moment the path names it, the file has its final mode and accepts
 * connections. */

/* Note [Absolute socket paths]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A relative path names a socket in the working directory of whoever
 * uses it.  The endpoint this sink reports goes to other processes (the
 * discovery entry that ps, pid:/name:, serve --all read, the start-up
 * line) that run elsewhere, where unix:app.sock would be whatever socket
 * is there, perhaps another user's feeding a fake stream; and the
 * program may change directory before it closes.  So the path is made
 * absolute when it is bound (the working directory then, joined with
 * the path as given), reported so, and removed by it at close.  bind()
 * itself still takes the path as given, which sun_path's length limit
 * was checked on.  When the working directory cannot be read (removed,
 * or not searchable) the endpoint stays relative, with a warning:
 * readers then refuse it rather than guess. */
static char *unix_absolute(const char *path)
{
    if (path[0] == '/')
        return strdup(path);
    char *cwd = getcwd(NULL, 0);
    if (cwd == NULL)
        return NULL;
    while (path[0] == '.' && path[1] == '/') {
        path += 2;
        while (path[0] == '/')
            path++;
    }
    size_t n = strlen(cwd) + strlen(path) + 2;
    char *abs = malloc(n);
    if (abs != NULL)
        snprintf(abs, n, "%s%s%s", cwd, strcmp(cwd, "/") == 0 ? "" : "/",
                 path);
    free(cwd);
    return abs;
}

static int unix_listen_open(void **sink, const struct els_sink_args *args)
{
    /* Setuid, setgid and sticky bits mean nothing on a socket; mode=
     * refuses them rather than dropping them silently. */
    unsigned mode;
    int rc = elsi_sink_mode(args, UNIX_DEFAULT_MODE, &mode);
    if (rc < 0)
        return rc;

    struct unix_listener *u = calloc(1, sizeof *u);
    if (u == NULL)
        return elsi_fail(args->err, args->err_len, ELS_ENOMEM,
                         "%s: out of memory", args->spec);
    u->fd = -1;
    rc = unix_addr(args, &u->sa, &u->sa_len);
    if (rc < 0)
        goto fail;
    const char *path = u->sa.sun_path;

    rc = unix_clear_path(u, args);
    if (rc < 0)
        goto fail;

    u->fd = elsi_socket_nb(AF_UNIX, SOCK_STREAM);
    if (u->fd < 0) {
        rc = elsi_fail(args->err, args->err_len, u->fd,
                       "cannot create a socket for %s: %s", path,
                       strerror(-u->fd));
        u->fd = -1;
        goto fail;
    }
    /* See Note [Socket file permissions]. */
    struct stat st;
    char why[256];
    rc = elsi_unix_bind_listen(u->fd, path, (mode_t)mode, UNIX_BACKLOG, &st,
                               why, sizeof why);
    if (rc == ELS_EEXIST) {
        /* Something appeared at the path after we cleared it. */
        rc = elsi_sink_fail(args, ELS_EADDRINUSE,
                            "cannot bind: another process created the "
                            "path just now");
        goto fail;
    }
    if (rc < 0) {
        rc = elsi_sink_fail(args, rc, "%s", why);
        goto fail;
    }
    u->dev = st.st_dev;
    u->ino = st.st_ino;
    u->owner = getpid();
    /* See Note [Absolute socket paths]. */
    u->abs_path = unix_absolute(path);
    if (u->abs_path == NULL)
        elsi_log(ELS_LOG_WARN, "unix:%s: cannot make the path absolute (%s): "
                 "it is reported as given, which readers in another "
                 "directory refuse", path, strerror(errno));
    *sink = u;
    return 0;

fail:
    if (u->fd >= 0)
        elsi_close(u->fd);
    free(u);
    return rc;
}

static void unix_listen_close(void *sink)
{
    struct unix_listener *u = sink;
    /* Remove the file only if this process bound it (a forked child
     * closing its copy of the writer must not pull the socket out from
     * under the parent) and only if it is still the file we bound: someone
     * may have replaced it, or, when the path could not be made absolute,
     * the process may have changed directory since.  The comparison is
     * done while our bound socket is still open: it holds its file's
     * inode, so that inode number cannot have been given to a replacement
     * (once a file is gone, tmpfs reuses its number at once). */
    elsi_unlink_if_ours(u->abs_path != NULL ? u->abs_path : u->sa.sun_path,
                        S_IFSOCK, u->dev, u->ino, u->owner);
    elsi_close(u->fd);
    free(u->abs_path);
    free(u);
}

static int unix_listen_fd(void *sink)
{
    const struct unix_listener *u = sink;
    return u->fd;
}

static int unix_accept(void *sink, int *fd)
{
    const struct unix_listener *u = sink;
    return elsi_accept_nb(u->fd, fd);
}

static int unix_listen_endpoint(void *sink, char *buf, size_t len)
{
    const struct unix_listener *u = sink;
    return snprintf(buf, len, "unix:%s",
                    u->abs_path != NULL ? u->abs_path : u->sa.sun_path);
}

static const char *const unix_options[] = { "mode", NULL };

const struct els_sink_ops elsi_sink_unix = {
    .struct_size = sizeof(struct els_sink_ops),
    .scheme = "unix",
    .options = unix_options,
    .style = ELS_SINK_LISTEN,
    .open = unix_listen_open,
    .close = unix_listen_close,
    .listen_fd = unix_listen_fd,
    .accept = unix_accept,
    .endpoint = unix_listen_endpoint,
};

/* ------------------------------------------------------------------------
 * unix-connect: connect to a collector listening on PATH
 * ------------------------------------------------------------------------ */

struct unix_dialer {
    struct sockaddr_un sa;
    socklen_t sa_len;
};

static int unix_dial_open(void **sink, const struct els_sink_args *args)
{
    struct unix_dialer *d = calloc(1, sizeof *d);
    if (d == NULL)
        return elsi_fail(args->err, args->err_len, ELS_ENOMEM,
                         "%s: out of memory", args->spec);
    /* Only the path is checked: the collector need not be up yet. */
    int rc = unix_addr(args, &d->sa, &d->sa_len);
    if (rc < 0) {
        free(d);
        return rc;
    }
    *sink = d;
    return 0;
}

static void unix_dial_close(void *sink)
{
    free(sink);
}

static int unix_dial(void *sink, int *fd)
{
    const struct unix_dialer *d = sink;
    int s = elsi_socket_nb(AF_UNIX, SOCK_STREAM);
    if (s < 0)
        return s;
    if (connect(s, (const struct sockaddr *)&d->sa, d->sa_len) == 0) {
        *fd = s;
        return 0;
    }
    switch (errno) {
    case EINPROGRESS:
    case EINTR:     /* the connection goes on asynchronously */
        *fd = s;
        return -EINPROGRESS;
    case EAGAIN:    /* the collector's backlog is full; try again later */
    case ENOENT:    /* the collector is not up yet */
    case ECONNREFUSED:
        elsi_close(s);
        return -EAGAIN;
    default: {
        int e = errno;
        elsi_close(s);
        return -e;
    }
    }
}

static int unix_dial_endpoint(void *sink, char *buf, size_t len)
{
    const struct unix_dialer *d = sink;
    return snprintf(buf, len, "unix-connect:%s", d->sa.sun_path);
}

const struct els_sink_ops elsi_sink_unix_connect = {
    .struct_size = sizeof(struct els_sink_ops),
    .scheme = "unix-connect",
    .options = NULL,
    .style = ELS_SINK_DIAL,
    .open = unix_dial_open,
    .close = unix_dial_close,
    .dial = unix_dial,
    .endpoint = unix_dial_endpoint,
};
