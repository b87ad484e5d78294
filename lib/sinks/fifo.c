/*
 * sink_fifo.c: the "fifo" sink.  Makes sure a FIFO exists at PATH
 * (creating it if needed) and hands the writer a non-blocking write end
 * whenever a reader has it open.  The program never waits for a reader:
 * without one, dial() says "not yet" and the writer asks again later, so a
 * reader may come, go (the writer sees EPIPE and redials) and come back.
 * The writer does all writing and closes the descriptors; this file owns
 * only the FIFO file, which it removes at close if it created it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* F_SETPIPE_SZ */
#endif

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "sinks/fdutil.h"
#include "log.h"
#include "sinks/sinks.h"
#include "sinks/spec.h"

#define FIFO_DEFAULT_MODE 0600
/* See dial(). */
#define FIFO_PIPE_SIZE (1024 * 1024)

struct fifo_sink {
    char *path;
    bool created;       /* we made it: remove it at close */
    /* O_PATH descriptor on the FIFO we made, -1 if none.  See Note
     * [Recognising our FIFO]. */
    int pin;
    dev_t dev;
    ino_t ino;
    pid_t owner;        /* the process that made it */
};

/* Note [Recognising our FIFO]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * close() removes the FIFO only if the path still names the one we made.
 * Comparing device and inode numbers alone is not enough: once a file is
 * unlinked and its last reference dropped, the filesystem may hand the same
 * inode number to the next file created (tmpfs does, at once), so "someone
 * removed ours and made their own" would look like ours.  Holding an O_PATH
 * descriptor on our FIFO keeps its inode alive, and a live inode's number
 * is not reused; the comparison is then exact.  (The unix sink gets the
 * same from its bound listening socket, which holds its file.)  O_PATH
 * opens neither end of the FIFO, so it does not count as a reader or a
 * writer. */

/* Create the FIFO with exactly mode (like the unix sink's socket: the
 * spec's mode= is what readers get, whatever the umask).  mkfifo() applies
 * the umask, which can only remove bits, so the chmod() that follows
 * widens at most to mode and no one gets more access in between.
 * 0: created; 1: something appeared at the path first; or a negative code
 * with the message written. */
static int fifo_create(struct fifo_sink *f, unsigned mode,
                       const struct els_sink_args *args)
{
    if (mkfifo(f->path, (mode_t)mode) < 0) {
        if (errno == EEXIST)
            return 1;
        return elsi_fail(args->err, args->err_len, -errno,
                         "cannot create FIFO %s: %s", f->path,
                         strerror(errno));
    }
    /* See Note [Recognising our FIFO]. */
    struct stat st;
    f->pin = open(f->path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (f->pin < 0 || fstat(f->pin, &st) < 0 || !S_ISFIFO(st.st_mode)) {
        /* Replaced in the instant since we made it: not ours to touch. */
        if (f->pin >= 0)
            elsi_close(f->pin);
        f->pin = -1;
        return elsi_fail(args->err, args->err_len, ELS_EEXIST,
                         "%s was replaced while being created", f->path);
    }
    f->dev = st.st_dev;
    f->ino = st.st_ino;
    f->owner = getpid();
    if (chmod(f->path, (mode_t)mode) < 0) {
        int e = errno;
        (void)unlink(f->path);
        elsi_close(f->pin);
        f->pin = -1;
        return elsi_fail(args->err, args->err_len, -e,
                         "cannot set mode %04o on %s: %s", mode, f->path,
                         strerror(e));
    }
    f->created = true;
    return 0;
}

static int fifo_open(void **sink, const struct els_sink_args *args)
{
    unsigned mode;
    int rc = elsi_sink_mode(args, FIFO_DEFAULT_MODE, &mode);
    if (rc < 0)
        return rc;
    if (args->address[0] == '\0')
        return elsi_sink_fail(args, ELS_EINVAL, "the FIFO path is empty");
    struct fifo_sink *f = calloc(1, sizeof *f);
    if (f == NULL || (f->path = strdup(args->address)) == NULL) {
        free(f);
        return elsi_fail(args->err, args->err_len, ELS_ENOMEM,
                         "%s: out of memory", args->spec);
    }
    f->pin = -1;

    /* An existing FIFO (or a symbolic link to one) is used as it is, with
     * its own permissions: it belongs to whoever made it.  Anything else is
     * refused, never replaced.  If the path is missing we create it; should
     * someone create something there first, we look once more. */
    for (int attempt = 0;; attempt++) {
        struct stat st;
        if (stat(f->path, &st) == 0) {
            if (S_ISFIFO(st.st_mode))
                break;
            rc = elsi_fail(args->err, args->err_len, ELS_EEXIST,
                           "refusing to use %s as a FIFO: it is %s", f->path,
                           elsi_file_type_name(st.st_mode));
            goto fail;
        }
        if (errno != ENOENT) {
            rc = elsi_fail(args->err, args->err_len, -errno,
                           "cannot inspect %s: %s", f->path, strerror(errno));
            goto fail;
        }
        rc = fifo_create(f, mode, args);
        if (rc < 0)
            goto fail;
        if (rc == 0)
            break;
        if (attempt > 0) {
            /* stat() says missing, mkfifo() says present, twice: a
             * dangling symbolic link, most likely. */
            struct stat lst;
            rc = elsi_fail(args->err, args->err_len, ELS_EEXIST,
                           "refusing to replace %s: it is %s", f->path,
                           lstat(f->path, &lst) == 0
                               ? elsi_file_type_name(lst.st_mode)
                               : "in the way");
            goto fail;
        }
    }
    *sink = f;
    return 0;

fail:
    free(f->path);
    free(f);
    return rc;
}

static void fifo_close(void *sink)
{
    struct fifo_sink *f = sink;
    /* Same rules as the unix sink's socket file: only the process that
     * created it (a forked child must not remove the parent's FIFO), and
     * only if it is still the same file (see Note [Recognising our FIFO];
     * the pin is closed only afterwards). */
    if (f->created)
        elsi_unlink_if_ours(f->path, S_IFIFO, f->dev, f->ino, f->owner);
    if (f->pin >= 0)
        elsi_close(f->pin);
    free(f->path);
    free(f);
}

static int fifo_dial(void *sink, int *fd)
{
    const struct fifo_sink *f = sink;
    int w;
    /* O_NONBLOCK: opening the write end of a FIFO without a reader fails
     * with ENXIO instead of waiting for one.  The descriptor stays
     * non-blocking, as the writer wants it. */
    while ((w = open(f->path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)) < 0
           && errno == EINTR) {
    }
    if (w < 0)
        return errno == ENXIO ? -EAGAIN : -errno;

    /* Someone may have put something else at the path since open(). */
    struct stat st;
    if (fstat(w, &st) < 0 || !S_ISFIFO(st.st_mode)) {
        elsi_close(w);
        return ELS_EEXIST;
    }
    /* The default pipe holds 64 KiB, so one 2 MiB block from the RTS would
     * take 32 rounds of "write until EAGAIN, poll, wake up" while the
     * reader catches up.  A 1 MiB pipe cuts that to a few.  It may fail
     * (an unprivileged user over /proc/sys/fs/pipe-max-size or the per-user
     * pipe quota); the default size then still works, only with more
     * wake-ups, so the error is ignored. */
    (void)fcntl(w, F_SETPIPE_SZ, FIFO_PIPE_SIZE);
    *fd = w;
    return 0;
}

static int fifo_endpoint(void *sink, char *buf, size_t len)
{
    const struct fifo_sink *f = sink;
    return snprintf(buf, len, "fifo:%s", f->path);
}

static const char *const fifo_options[] = { "mode", NULL };

const struct els_sink_ops elsi_sink_fifo = {
    .struct_size = sizeof(struct els_sink_ops),
    .scheme = "fifo",
    .options = fifo_options,
    .style = ELS_SINK_DIAL,
    .open = fifo_open,
    .close = fifo_close,
    .dial = fifo_dial,
    .endpoint = fifo_endpoint,
};
