/*
 * fifo.c: the "fifo" sink.  Makes sure a FIFO exists at PATH (creating it
 * if needed), keeps its write end open so that readers never see an end of
 * file before the stream, and hands the writer that write end whenever a
 * reader has the FIFO open.  The program never waits for a reader: without
 * one, dial() says "not yet" and the writer asks again later, so a reader
 * may come, go (the writer sees EPIPE and redials) and come back, each time
 * to a stream that starts with the header.  One program writes to a FIFO
 * at a time: a second one is refused.  The writer does all writing and
 * closes the descriptors it is given; this file owns only the FIFO file,
 * which it removes at close if it created it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* F_SETPIPE_SZ */
#endif

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "base/fdutil.h"
#include "base/log.h"
#include "sinks/sinks.h"
#include "sinks/spec.h"

#define FIFO_DEFAULT_MODE 0600
/* See fifo_hold_open(). */
#define FIFO_PIPE_SIZE (1024 * 1024)
/* Lines dial() can repeat at every redial. */
#define FIFO_LOG_INTERVAL_MS 10000u

/* Note [One stream per reader]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A reader that opens a FIFO non-blocking (every GHC-built program does:
 * `ghc-events inc PATH`) reads end of file at once if no writer has it
 * open.  So the sink holds the write end from open() on (the "hold"),
 * obtained without waiting for a reader by opening a read end first and
 * closing it after.  A reader's presence is then seen without writing: a
 * write end polls POLLERR while the FIFO has no reader (Linux treats FIFOs
 * like pipes here).  When a reader is there, dial() gives the writer the
 * hold itself.
 *
 * Bytes the writer put into the pipe that the reader did not read before
 * leaving stay in the pipe for as long as any end is open: the next reader
 * would get the old stream's tail, maybe half a block, before its header.
 * The sink therefore keeps no other descriptor on a pipe it has handed
 * out.  When the reader leaves, the writer sees POLLERR, closes its end,
 * and the kernel frees the pipe and the bytes in it.
 *
 * For a FIFO the sink created, dial() also puts a fresh FIFO (with its own
 * hold) at PATH as it hands out the old one (elsi_create_at(), replacing
 * only the FIFO it made).  The reader keeps the old one; anyone who opens
 * PATH afterwards gets the fresh one and a writer on it, so there is no
 * moment at which a newcomer sees end of file, and a reader that comes
 * while another is served never shares its pipe: it waits for its own
 * stream, which starts when the other leaves.  (Two readers that open
 * PATH before dial() has seen either do share one: nothing tells a FIFO's
 * readers apart.)  A FIFO someone else made is theirs and is
 * never replaced: between the writer closing the old end and the next
 * dial() (100 ms later), a non-blocking newcomer reads end of file, and
 * two readers at once share one pipe, as with any FIFO.
 *
 * Exclusion: the hold carries an flock() lock, taken before the FIFO is
 * published or, for an existing FIFO, before it is used.  A second program
 * (or a forked child: flock locks belong to the open file, which the child
 * shares) fails to take it and is refused.  The lock goes with the hold to
 * the writer, and the kernel drops it when the last descriptor closes,
 * also when a program crashes: a FIFO left behind is then free to use.
 * An existing FIFO is unlocked between the writer closing its end and the
 * next dial(); a program starting in that moment gets the FIFO, and the
 * first one waits (dial() says "not yet") until it is free again. */

struct fifo_sink {
    char *path;
    unsigned mode;
    bool created;       /* we made the FIFO at path: replace it, remove it */
    /* Write end of the FIFO at path, locked, -1 while none (handed out and
     * not yet replaced).  See Note [One stream per reader]. */
    int hold;
    /* O_PATH descriptor on the FIFO at path: it keeps the inode alive, so
     * that dev/ino cannot be reused by a replacement (tmpfs reuses inode
     * numbers at once), and reopens an existing FIFO without going through
     * the path again.  It opens neither end. */
    int pin;
    dev_t dev;
    ino_t ino;
    pid_t owner;        /* the process that made it */
    struct elsi_ratelimit rl;
};

/* How much of the path a log line quotes. */
#define FIFO_QUOTE_MAX 200

static const char *fifo_quote(const struct fifo_sink *f, char *buf, size_t len)
{
    return elsi_quote(buf, len, f->path, strlen(f->path), FIFO_QUOTE_MAX);
}

/* Open a locked write end on the FIFO named by name in dirfd without
 * waiting for a reader (a read end opened first and closed after).  If
 * want is not NULL the FIFO must be that file.  The write end or -errno:
 * -EBUSY when another process holds the lock, -EEXIST when the path names
 * something else. */
static int fifo_hold_open(int dirfd, const char *name, const struct stat *want)
{
    int r = openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
    if (r < 0)
        return errno == ELOOP ? -EEXIST : -errno;
    struct stat st;
    int rc = 0;
    if (fstat(r, &st) < 0)
        rc = -errno;
    else if (!S_ISFIFO(st.st_mode) ||
             (want != NULL && (st.st_dev != want->st_dev || st.st_ino != want->st_ino)))
        rc = -EEXIST;
    if (rc < 0) {
        elsi_close(r);
        return rc;
    }
    /* The same inode as r, through r itself where /proc allows. */
    char self[40];
    snprintf(self, sizeof self, "/proc/self/fd/%d", r);
    int w = open(self, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (w < 0)
        w = openat(dirfd, name, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
    struct stat wst;
    if (w < 0)
        rc = -errno;
    else if (fstat(w, &wst) < 0)
        rc = -errno;
    else if (wst.st_dev != st.st_dev || wst.st_ino != st.st_ino)
        rc = -EEXIST;
    else if (flock(w, LOCK_EX | LOCK_NB) < 0)
        rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
    elsi_close(r);
    if (rc < 0) {
        if (w >= 0)
            elsi_close(w);
        return rc;
    }
    /* The default pipe holds 64 KiB, so one 2 MiB block from the RTS would
     * take 32 rounds of "write until EAGAIN, poll, wake up" while the
     * reader catches up.  A 1 MiB pipe cuts that to a few.  It may fail
     * (an unprivileged user over /proc/sys/fs/pipe-max-size or the per-user
     * pipe quota); the default size then still works, only with more
     * wake-ups, so the error is ignored. */
    (void)fcntl(w, F_SETPIPE_SZ, FIFO_PIPE_SIZE);
    return w;
}

/* What elsi_create_at() asks of us: the FIFO, then its hold and pin, all
 * inside the private directory, so they exist before the FIFO is seen. */
struct fifo_made {
    int hold, pin;
};

static int fifo_make(int dirfd, const char *name, const char *reach, void *arg,
                     char *err, size_t err_len)
{
    (void)reach;
    struct fifo_made *m = arg;
    if (mkfifoat(dirfd, name, 0600) < 0)
        return elsi_fail(err, err_len, -errno, "cannot create the FIFO: %s",
                         strerror(errno));
    m->hold = fifo_hold_open(dirfd, name, NULL);
    if (m->hold < 0)
        return elsi_fail(err, err_len, m->hold, "cannot open the FIFO: %s",
                         strerror(-m->hold));
    m->pin = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (m->pin < 0) {
        int e = errno;
        elsi_close(m->hold);
        m->hold = -1;
        return elsi_fail(err, err_len, -e, "cannot open the FIFO: %s",
                         strerror(e));
    }
    return 0;
}

/* Put a FIFO of ours at f->path: a new one, or one replacing the FIFO we
 * made there before (old, or NULL).  0 with f->hold, f->pin, dev, ino
 * set; or -errno with the message in why. */
static int fifo_create(struct fifo_sink *f, const struct stat *old, char *why,
                       size_t why_len)
{
    struct fifo_made m = { -1, -1 };
    struct stat st;
    int rc = elsi_create_at(f->path, (mode_t)f->mode, old, fifo_make, &m, &st,
                            why, why_len);
    if (rc < 0) {
        if (m.hold >= 0)
            elsi_close(m.hold);
        if (m.pin >= 0)
            elsi_close(m.pin);
        return rc;
    }
    if (f->pin >= 0)
        elsi_close(f->pin);
    f->hold = m.hold;
    f->pin = m.pin;
    f->dev = st.st_dev;
    f->ino = st.st_ino;
    f->owner = getpid();
    f->created = true;
    return 0;
}

/* Use the FIFO someone made at f->path (st: its lstat()).  Only one that
 * belongs to this program's user: another user's FIFO would be a way to
 * read this program's eventlog.  0, or a code with the message written. */
static int fifo_use_existing(struct fifo_sink *f, const struct stat *st,
                             const struct els_sink_args *args)
{
    if (st->st_uid != geteuid())
        return elsi_sink_fail(args, -EACCES, "refusing to write to the FIFO: "
                              "it belongs to uid %u, not to this program's "
                              "user", (unsigned)st->st_uid);
    f->pin = open(f->path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    struct stat pst;
    if (f->pin < 0 || fstat(f->pin, &pst) < 0 || pst.st_dev != st->st_dev ||
        pst.st_ino != st->st_ino)
        return elsi_sink_fail(args, ELS_EEXIST,
                              "the FIFO was replaced while being opened");
    f->hold = fifo_hold_open(AT_FDCWD, f->path, st);
    if (f->hold == -EBUSY)
        return elsi_sink_fail(args, ELS_EADDRINUSE,
                              "another process is already writing to this "
                              "FIFO");
    if (f->hold < 0)
        return elsi_sink_fail(args, f->hold, "cannot open the FIFO: %s",
                              strerror(-f->hold));
    f->dev = st->st_dev;
    f->ino = st->st_ino;
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
    f->mode = mode;
    f->hold = -1;
    f->pin = -1;

    /* An existing FIFO is used as it is, with its own permissions: it
     * belongs to whoever made it.  Anything else is refused, never
     * replaced, and a symbolic link is not followed (it would let whoever
     * planted it choose what the program writes into).  If the path is
     * missing we create it; should someone create something there first,
     * we look once more. */
    for (int attempt = 0;; attempt++) {
        struct stat st;
        if (lstat(f->path, &st) == 0) {
            if (S_ISFIFO(st.st_mode)) {
                rc = fifo_use_existing(f, &st, args);
                if (rc < 0)
                    goto fail;
                break;
            }
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
        char why[256];
        rc = fifo_create(f, NULL, why, sizeof why);
        if (rc == 0)
            break;
        if (rc != ELS_EEXIST || attempt > 0) {
            rc = elsi_sink_fail(args, rc, "cannot create the FIFO: %s", why);
            goto fail;
        }
    }
    *sink = f;
    return 0;

fail:
    if (f->hold >= 0)
        elsi_close(f->hold);
    if (f->pin >= 0)
        elsi_close(f->pin);
    free(f->path);
    free(f);
    return rc;
}

static void fifo_close(void *sink)
{
    struct fifo_sink *f = sink;
    /* Same rules as the unix sink's socket file: only the process that
     * created it (a forked child must not remove the parent's FIFO), and
     * only if it is still the same file (the pin, closed only afterwards,
     * keeps its inode number from being reused). */
    if (f->created)
        elsi_unlink_if_ours(f->path, S_IFIFO, f->dev, f->ino, f->owner);
    if (f->hold >= 0)
        elsi_close(f->hold);
    if (f->pin >= 0)
        elsi_close(f->pin);
    free(f->path);
    free(f);
}

/* Get a hold again after handing the last one out.  0, -EAGAIN (not now,
 * said in the log), or a code for the writer to log. */
static int fifo_rehold(struct fifo_sink *f)
{
    struct stat cur;
    if (fstat(f->pin, &cur) < 0)
        return -errno;
    if (f->created) {
        char why[256];
        int rc = fifo_create(f, &cur, why, sizeof why);
        if (rc == 0)
            return 0;
        char q[ELSI_QUOTE_BUF(FIFO_QUOTE_MAX)];
        elsi_log_limited(&f->rl, FIFO_LOG_INTERVAL_MS, ELS_LOG_WARN,
                         "fifo:\"%s\": cannot replace the FIFO for the next "
                         "reader: %s", fifo_quote(f, q, sizeof q), why);
        return rc == ELS_EEXIST ? ELS_EEXIST : -EAGAIN;
    }
    int h = fifo_hold_open(AT_FDCWD, f->path, &cur);
    if (h == -EBUSY) {
        char q[ELSI_QUOTE_BUF(FIFO_QUOTE_MAX)];
        elsi_log_limited(&f->rl, FIFO_LOG_INTERVAL_MS, ELS_LOG_WARN,
                         "fifo:\"%s\": another process is writing to the "
                         "FIFO; waiting until it is free",
                         fifo_quote(f, q, sizeof q));
        return -EAGAIN;
    }
    if (h < 0)
        return h;
    f->hold = h;
    return 0;
}

static int fifo_dial(void *sink, int *fd)
{
    struct fifo_sink *f = sink;

    /* Someone may have put something else at the path. */
    struct stat st;
    if (lstat(f->path, &st) < 0) {
        if (errno != ENOENT)
            return -errno;
        if (!f->created)
            return -EAGAIN;     /* theirs, and gone: until it is back */
        /* Ours, removed: a hold on it reaches no reader; make another. */
        if (f->hold >= 0)
            elsi_close(f->hold);
        f->hold = -1;
    } else if (st.st_dev != f->dev || st.st_ino != f->ino) {
        return ELS_EEXIST;
    }
    if (f->hold < 0) {
        int rc = fifo_rehold(f);
        if (rc < 0)
            return rc;
    }

    /* See Note [One stream per reader]: POLLERR means no reader. */
    struct pollfd p = { .fd = f->hold, .events = POLLOUT };
    int n;
    while ((n = poll(&p, 1, 0)) < 0 && errno == EINTR) {
    }
    if (n < 0)
        return -errno;
    if (p.revents & POLLERR)
        return -EAGAIN;

    *fd = f->hold;
    f->hold = -1;
    if (f->created)
        (void)fifo_rehold(f);   /* the next reader's FIFO; failures logged */
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
