/*
 * sink_file.c: the "file" sink.  Opens (creating or truncating) a regular
 * file at open(), so that a path the program cannot write fails at start-up
 * with a clear message, just as the RTS's own eventlog file writer does, and
 * hands the writer duplicates of that one descriptor.  It writes nothing
 * itself and never removes the file: the file is the product.  FIFOs have
 * their own sink (fifo:), so anything but a regular file is refused here
 * rather than written into.
 */
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

/* Like open(2)'s usual 0666 & ~umask, minus group/other write. */
#define FILE_DEFAULT_MODE 0644

struct file_sink {
    int fd;
    char *path;
};

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
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return file_refuse(args, path, st.st_mode);

    /* O_NONBLOCK has no effect on a regular file; it is there so that a
     * FIFO put at the path since the stat() fails (ENXIO) instead of
     * blocking, and the fstat() below then catches any other swap.  The
     * umask applies to mode, as for any file a program creates; an existing
     * file keeps its mode. */
    int fd;
    while ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
                                O_NONBLOCK | O_NOCTTY, (mode_t)mode)) < 0 &&
           errno == EINTR) {
    }
    if (fd < 0)
        return elsi_fail(args->err, args->err_len, -errno,
                         "cannot open %s for writing: %s", path,
                         strerror(errno));
    if (fstat(fd, &st) < 0)
        rc = elsi_fail(args->err, args->err_len, -errno, "cannot inspect %s: %s",
                       path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = file_refuse(args, path, st.st_mode);
    if (rc < 0) {
        elsi_close(fd);
        return rc;
    }

    struct file_sink *f = calloc(1, sizeof *f);
    if (f == NULL || (f->path = strdup(path)) == NULL) {
        free(f);
        elsi_close(fd);
        return elsi_fail(args->err, args->err_len, ELS_ENOMEM,
                         "%s: out of memory", args->spec);
    }
    f->fd = fd;
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
