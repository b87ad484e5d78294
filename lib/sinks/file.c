/*
 * file.c: the "file" sink.  Opens (creating or truncating) a regular
 * file at open(), so that a path the program cannot write fails at start-up
 * with a clear message, just as the RTS's own eventlog file writer does, and
 * hands the writer duplicates of that one descriptor.  It never destroys a
 * stream: a file this process (or the process it was forked from) already
 * wrote a stream into is left alone, and the new stream goes to the first
 * free PATH.1, PATH.2, ...  It writes nothing itself and never removes a
 * file: the file is the product.  FIFOs have their own sink (fifo:), so
 * anything but a regular file is refused here rather than written into.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "base/fdutil.h"
#include "base/log.h"
#include "sinks/sinks.h"
#include "sinks/spec.h"

/* Like open(2)'s usual 0666 & ~umask, minus group/other write. */
#define FILE_DEFAULT_MODE 0644

/* How many numbered names to try before giving up. */
#define FILE_MAX_NUMBER 9999

struct file_sink {
    int fd;
    char *path;         /* the file written: PATH or PATH.N */
};

/* Note [Never truncate an earlier stream]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A program opens its sink again on every runtime restart (els_ghc_start)
 * and in a forked child that starts its own stream.  Truncating PATH each
 * time would destroy the earlier streams without a word.  So the sink
 * remembers, for the life of the process, the files (device and inode) it
 * opened; a forked child inherits the list with the rest of memory.  A
 * path that names one of them is never truncated: the stream goes to the
 * first of PATH.1, PATH.2, ... that does not exist (O_EXCL, so an existing
 * file, ours or not, is never touched).  Only the first open of a file in
 * a process truncates it, as the RTS's own -l does when a program is run
 * again. */
static pthread_mutex_t file_seen_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t file_seen_once = PTHREAD_ONCE_INIT;
static struct file_id { dev_t dev; ino_t ino; } *file_seen;
static size_t file_seen_n, file_seen_cap;

/* fork() while another thread holds the lock must not leave it locked in
 * the child: take it around fork(); in the child the forking thread, which
 * took it, releases it. */
static void file_seen_prepare(void) { pthread_mutex_lock(&file_seen_lock); }
static void file_seen_release(void) { pthread_mutex_unlock(&file_seen_lock); }
static void file_seen_init(void)
{
    pthread_atfork(file_seen_prepare, file_seen_release, file_seen_release);
}

static bool file_seen_has(dev_t dev, ino_t ino)
{
    pthread_once(&file_seen_once, file_seen_init);
    pthread_mutex_lock(&file_seen_lock);
    bool found = false;
    for (size_t i = 0; i < file_seen_n && !found; i++)
        found = file_seen[i].dev == dev && file_seen[i].ino == ino;
    pthread_mutex_unlock(&file_seen_lock);
    return found;
}

/* Remember a file; false if out of memory. */
static bool file_seen_add(dev_t dev, ino_t ino)
{
    pthread_once(&file_seen_once, file_seen_init);
    pthread_mutex_lock(&file_seen_lock);
    bool ok = true;
    if (file_seen_n == file_seen_cap) {
        size_t cap = file_seen_cap ? file_seen_cap * 2 : 8;
        struct file_id *p = realloc(file_seen, cap * sizeof *p);
        if (p == NULL) {
            ok = false;
        } else {
            file_seen = p;
            file_seen_cap = cap;
        }
    }
    if (ok)
        file_seen[file_seen_n++] = (struct file_id){ dev, ino };
    pthread_mutex_unlock(&file_seen_lock);
    return ok;
}

static int file_open_fd(const char *path, int flags, unsigned mode)
{
    int fd;
    while ((fd = open(path, flags | O_WRONLY | O_CREAT | O_CLOEXEC |
                                O_NONBLOCK | O_NOCTTY, (mode_t)mode)) < 0 &&
           errno == EINTR) {
    }
    return fd < 0 ? -errno : fd;
}

/* The first free PATH.N: 0 with *fd and *name (malloc'd), or -errno. */
static int file_open_numbered(const char *path, unsigned mode, int *fd,
                              char **name)
{
    size_t len = strlen(path) + 8;
    char *p = malloc(len);
    if (p == NULL)
        return ELS_ENOMEM;
    for (unsigned n = 1; n <= FILE_MAX_NUMBER; n++) {
        snprintf(p, len, "%s.%u", path, n);
        int d = file_open_fd(p, O_EXCL | O_NOFOLLOW, mode);
        if (d >= 0) {
            *fd = d;
            *name = p;
            return 0;
        }
        if (d != -EEXIST) {
            free(p);
            return d;
        }
    }
    free(p);
    return ELS_EEXIST;
}

/* Refuse what is at path (not a regular file), saying which sink would
 * serve it where there is one. */
static int file_refuse(const struct els_sink_args *args, const char *path,
                       mode_t m)
{
    const char *hint = S_ISDIR(m)  ? " (give a file name)"
                     : S_ISFIFO(m) ? " (use fifo:)"
                     : S_ISSOCK(m) ? " (use unix-connect:)"
                     : "";
    return elsi_fail(args->err, args->err_len, ELS_EEXIST,
                     "refusing to write to %s: it is %s%s", path,
                     elsi_file_type_name(m), hint);
}

static int file_open(void **sink, const struct els_sink_args *args)
{
    unsigned mode;
    int rc = elsi_sink_mode(args, FILE_DEFAULT_MODE, &mode);
    if (rc < 0)
        return rc;
    const char *path = args->address;
    if (path[0] == '\0')
        return elsi_sink_fail(args, ELS_EINVAL, "the file path is empty");

    /* Look before opening: O_TRUNC must not reach anything that is not a
     * regular file, and open(O_WRONLY) on a FIFO would wait for a reader.
     * A symbolic link to a regular file is fine, as for the RTS. */
    struct stat st;
    if (stat(path, &st) == 0) {
        if (!S_ISREG(st.st_mode))
            return file_refuse(args, path, st.st_mode);
    } else {
        st.st_mode = 0;
    }

    /* O_NONBLOCK has no effect on a regular file; it is there so that a
     * FIFO put at the path since the stat() fails (ENXIO) instead of
     * blocking, and the fstat() below then catches any other swap.  The
     * umask applies to mode, as for any file a program creates; an existing
     * file keeps its mode.  See Note [Never truncate an earlier stream]. */
    bool earlier = S_ISREG(st.st_mode) && file_seen_has(st.st_dev, st.st_ino);
    char *name = NULL;
    int fd;
    if (earlier) {
        rc = file_open_numbered(path, mode, &fd, &name);
        if (rc < 0)
            return elsi_sink_fail(args, rc, "cannot open a new numbered file "
                                  "beside the earlier stream: %s",
                                  rc == ELS_EEXIST ? "all names up to .9999 exist"
                                                   : strerror(-rc));
    } else {
        fd = file_open_fd(path, O_TRUNC, mode);
        if (fd < 0)
            return elsi_fail(args->err, args->err_len, fd,
                             "cannot open %s for writing: %s", path,
                             strerror(-fd));
    }
    if (fstat(fd, &st) < 0)
        rc = elsi_fail(args->err, args->err_len, -errno, "cannot inspect %s: %s",
                       path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = file_refuse(args, path, st.st_mode);
    else if (!file_seen_add(st.st_dev, st.st_ino))
        rc = elsi_fail(args->err, args->err_len, ELS_ENOMEM,
                       "%s: out of memory", args->spec);
    if (rc < 0) {
        elsi_close(fd);
        free(name);
        return rc;
    }

    struct file_sink *f = calloc(1, sizeof *f);
    if (f == NULL || (name == NULL && (name = strdup(path)) == NULL)) {
        free(f);
        elsi_close(fd);
        return elsi_fail(args->err, args->err_len, ELS_ENOMEM,
                         "%s: out of memory", args->spec);
    }
    if (earlier)
        elsi_log(ELS_LOG_INFO, "%s holds an earlier stream of this program; "
                 "this one goes to %s", path, name);
    f->fd = fd;
    f->path = name;
    *sink = f;
    return 0;
}

static void file_close(void *sink)
{
    struct file_sink *f = sink;
    elsi_close(f->fd);
    free(f->path);
    free(f);
}

/* The writer closes whatever dial() gives it (after a write error, at
 * close), so it gets a duplicate each time and the original stays here for
 * the next call.  Duplicates share the file offset, so a redial after an
 * error (ENOSPC, say) continues where the stream stopped instead of
 * overwriting the start. */
static int file_dial(void *sink, int *fd)
{
    const struct file_sink *f = sink;
    int d = fcntl(f->fd, F_DUPFD_CLOEXEC, 0);
    if (d < 0)
        return -errno;
    *fd = d;
    return 0;
}

static int file_endpoint(void *sink, char *buf, size_t len)
{
    const struct file_sink *f = sink;
    return snprintf(buf, len, "file:%s", f->path);
}

static const char *const file_options[] = { "mode", NULL };

const struct els_sink_ops elsi_sink_file = {
    .struct_size = sizeof(struct els_sink_ops),
    .scheme = "file",
    .options = file_options,
    .style = ELS_SINK_DIAL,
    .open = file_open,
    .close = file_close,
    .dial = file_dial,
    .endpoint = file_endpoint,
};
