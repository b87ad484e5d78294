/*
 * ring.c: the "ring" sink, a flight recorder.  The stream stays in the
 * writer's queue, whose size= bounds it, the oldest units giving way to
 * new ones; this sink only opens a new file for each dump of that window
 * (els_writer_dump(), a control command, the end of the stream, or, when
 * the spec names one, a signal).  Dumps go to PATH.1, PATH.2, ... (for a
 * PATH ending in ".eventlog", NAME.1.eventlog, ...), never replacing a
 * file, earlier dumps included, and never following a symlink someone
 * swapped in (Note [A dump's name]).
 *
 * Not this file's job: what goes into a dump and keeping every dump a
 * valid eventlog on its own (lib/writer/recorder.c, Note [Flight recorder]).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fdutil.h"
#include "sinks/ring_options.h"
#include "sinks/sinks.h"
#include "sinks/spec.h"

/* Dumps hold the program's events: owner only. */
#define RING_DUMP_MODE 0600
/* How many numbered names to try before giving up. */
#define RING_MAX_NUMBER 999999

/* dump-on=, after=, cooldown= and max-dumps= are checked here and acted on
 * by the writer (ring_options.h; Note [Triggered dumps]). */
static const char *const ring_options[] = { "signal", "at-exit", "dump-on", "after",
                                            "cooldown", "max-dumps", NULL };

struct ring_sink {
    char *stem, *suffix;    /* dump k is stem.k suffix */
    char *dir;              /* the directory the dumps go to */
    unsigned next;          /* the next number to try */
    /* The dump being written: its file, and the name it gets when it is
     * complete (Note [A dump's name]). */
    char partial[PATH_MAX], final[PATH_MAX];
    bool at_exit;
    int signo;              /* 0: no signal */
    struct sigaction old_action;
    int pipe[2];            /* signal handler -> writer thread */
};

/*
 * Note [Dump on a signal]
 * ~~~~~~~~~~~~~~~~~~~~~~~
 * The library never changes signal dispositions on its own; signal= is
 * the user asking it to.  Only SIGUSR1 and SIGUSR2 can be named (the RTS
 * uses neither), and only while nobody else handles them: a handler
 * already installed (a Haskell installHandler, say) refuses the spec.
 * The handler writes one byte to a pipe (async-signal-safe; a full pipe
 * already means a dump is pending) that the sink offers as listen_fd.
 * One sink per signal per process: ring_signal_fd is the pipe's write end
 * while a sink owns the signal.
 */
static atomic_int ring_signal_fd[2] = { -1, -1 };     /* USR1, USR2 */

static int ring_signal_slot(int signo)
{
    return signo == SIGUSR1 ? 0 : 1;
}

static void ring_on_signal(int signo)
{
    int saved = errno;
    int fd = atomic_load(&ring_signal_fd[ring_signal_slot(signo)]);
    if (fd >= 0) {
        static const char byte = 1;
        ssize_t r = write(fd, &byte, 1);
        (void)r;    /* EAGAIN: a dump is pending already */
    }
    errno = saved;
}

static int ring_parse_signal(const char *v, int *signo)
{
    if (strncmp(v, "SIG", 3) == 0)
        v += 3;
    if (strcmp(v, "USR1") == 0)
        *signo = SIGUSR1;
    else if (strcmp(v, "USR2") == 0)
        *signo = SIGUSR2;
    else
        return ELS_EINVAL;
    return 0;
}

static int ring_take_signal(struct ring_sink *s, const struct els_sink_args *a)
{
    if (atomic_load(&ring_signal_fd[ring_signal_slot(s->signo)]) >= 0) {
        snprintf(a->err, a->err_len, "spec \"%s\": signal=%s: another ring: "
                 "sink owns that signal", a->spec, els_sink_option(a, "signal"));
        return ELS_EBUSY;
    }
    struct sigaction cur;
    if (sigaction(s->signo, NULL, &cur) != 0)
        return -errno;
    if ((cur.sa_flags & SA_SIGINFO) || cur.sa_handler != SIG_DFL) {
        snprintf(a->err, a->err_len, "spec \"%s\": signal=%s: the program "
                 "already handles that signal", a->spec,
                 els_sink_option(a, "signal"));
        return ELS_EBUSY;
    }
    int r = elsi_pipe_nb(s->pipe);
    if (r != 0)
        return r;
    int expected = -1;
    if (!atomic_compare_exchange_strong(&ring_signal_fd[ring_signal_slot(s->signo)],
                                        &expected, s->pipe[1])) {
        snprintf(a->err, a->err_len, "spec \"%s\": signal=%s: another ring: "
                 "sink owns that signal", a->spec, els_sink_option(a, "signal"));
        return ELS_EBUSY;
    }
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_handler = ring_on_signal;
    act.sa_flags = SA_RESTART;
    sigemptyset(&act.sa_mask);
    if (sigaction(s->signo, &act, &s->old_action) != 0) {
        r = -errno;
        atomic_store(&ring_signal_fd[ring_signal_slot(s->signo)], -1);
        return r;
    }
    return 0;
}

static void ring_free(struct ring_sink *s)
{
    if (s->signo != 0 &&
        atomic_load(&ring_signal_fd[ring_signal_slot(s->signo)]) == s->pipe[1]) {
        sigaction(s->signo, &s->old_action, NULL);
        atomic_store(&ring_signal_fd[ring_signal_slot(s->signo)], -1);
    }
    for (int i = 0; i < 2; i++)
        if (s->pipe[i] >= 0)
            elsi_close(s->pipe[i]);
    free(s->stem);
    free(s->suffix);
    free(s->dir);
    free(s);
}

static int ring_open(void **out, const struct els_sink_args *a)
{
    const char *path = a->address;
    if (path[0] == '\0') {
        snprintf(a->err, a->err_len, "spec \"%s\": ring: needs a path for "
                 "its dumps (ring:PATH)", a->spec);
        return ELS_EINVAL;
    }
    if (strlen(path) + 16 > PATH_MAX) {
        snprintf(a->err, a->err_len, "spec \"%s\": the dump path is too long",
                 a->spec);
        return ELS_ENAMETOOLONG;
    }
    struct ring_sink *s = calloc(1, sizeof *s);
    if (s == NULL)
        return ELS_ENOMEM;
    s->pipe[0] = s->pipe[1] = -1;
    s->next = 1;
    s->at_exit = true;

    const char *ext = ".eventlog";
    size_t n = strlen(path), e = strlen(ext);
    bool has_ext = n > e && strcmp(path + n - e, ext) == 0;
    s->stem = strndup(path, has_ext ? n - e : n);
    s->suffix = strdup(has_ext ? ext : "");
    if (s->stem == NULL || s->suffix == NULL) {
        ring_free(s);
        return ELS_ENOMEM;
    }

    /* Fail at start-up, not at the first dump, when the dumps cannot be
     * written: the directory must exist and be writable. */
    char *dir = strdup(path);
    if (dir == NULL) {
        ring_free(s);
        return ELS_ENOMEM;
    }
    char *slash = strrchr(dir, '/');
    const char *d = slash == NULL ? "." : slash == dir ? "/" : (*slash = '\0', dir);
    struct stat st;
    int r = 0;
    if (stat(d, &st) != 0 || !S_ISDIR(st.st_mode) || access(d, W_OK | X_OK) != 0) {
        r = stat(d, &st) != 0 ? -errno : !S_ISDIR(st.st_mode) ? -ENOTDIR : -errno;
        snprintf(a->err, a->err_len, "spec \"%s\": cannot write dumps into "
                 "%s: %s", a->spec, d, els_strerror(r));
    }
    if (r == 0 && (s->dir = strdup(d)) == NULL)
        r = ELS_ENOMEM;
    free(dir);
    if (r == 0 && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        r = -EISDIR;
        snprintf(a->err, a->err_len, "spec \"%s\": %s is a directory; give "
                 "a file name to number the dumps after", a->spec, path);
    }

    const char *v;
    if (r == 0 && (v = els_sink_option(a, "at-exit")) != NULL) {
        if (strcmp(v, "1") == 0 || strcmp(v, "0") == 0) {
            s->at_exit = v[0] == '1';
        } else {
            r = ELS_EINVAL;
            snprintf(a->err, a->err_len, "spec \"%s\": at-exit=%s: expected "
                     "0 or 1", a->spec, v);
        }
    }
    if (r == 0) {
        struct elsi_trigger_config cfg;
        char why[256];
        why[0] = '\0';
        r = elsi_trigger_parse(els_sink_option(a, "dump-on"),
                               els_sink_option(a, "after"),
                               els_sink_option(a, "cooldown"),
                               els_sink_option(a, "max-dumps"), &cfg,
                               why, sizeof why);
        if (r != 0)
            snprintf(a->err, a->err_len, "spec \"%s\": %s", a->spec, why);
    }
    if (r == 0 && (v = els_sink_option(a, "signal")) != NULL) {
        if (ring_parse_signal(v, &s->signo) != 0) {
            r = ELS_EINVAL;
            snprintf(a->err, a->err_len, "spec \"%s\": signal=%s: expected "
                     "USR1 or USR2", a->spec, v);
        } else {
            r = ring_take_signal(s, a);
            if (r != 0)
                s->signo = 0;
            if (r != 0 && a->err[0] == '\0')
                snprintf(a->err, a->err_len, "spec \"%s\": signal=%s: %s",
                         a->spec, v, els_strerror(r));
        }
    }
    if (r != 0) {
        ring_free(s);
        return r;
    }
    *out = s;
    return 0;
}

static void ring_close(void *sink)
{
    ring_free(sink);
}

static int ring_listen_fd(void *sink)
{
    struct ring_sink *s = sink;
    return s->pipe[0];
}

/*
 * Note [A dump's name]
 * ~~~~~~~~~~~~~~~~~~~~
 * A file named like a dump is a whole dump: the program may be killed
 * (or the machine stop) while a dump is written, and a cut file under
 * the dump's name would pass for the recording of the moment.  So dump K
 * is written into NAME.K.eventlog.partial (created 0600 with O_EXCL and
 * O_NOFOLLOW: never an existing file, never through a symlink someone
 * planted in a shared directory), and only once it is complete is it
 * fsynced and renamed to NAME.K.eventlog, without replacing anything
 * (RENAME_NOREPLACE, else link()).  A dump that fails is removed; one
 * cut by a kill leaves its .partial file, which a user recognises and
 * which the next program skips (its number is taken).  A number whose
 * dump name or .partial name is taken, by an earlier dump, a file of
 * someone else's or a symlink, is skipped; if the final name was taken
 * while the dump was written, the next free number is used.
 */

/* Dump k's final and partial names into s->final and s->partial. */
static int ring_names(struct ring_sink *s, unsigned k)
{
    int m = snprintf(s->final, sizeof s->final, "%s.%u%s", s->stem, k, s->suffix);
    int p = snprintf(s->partial, sizeof s->partial, "%s.partial", s->final);
    if (m < 0 || (size_t)m >= sizeof s->final || p < 0 ||
        (size_t)p >= sizeof s->partial)
        return ELS_ENAMETOOLONG;
    return 0;
}

/* Is anything (a symlink included) at path? */
static bool ring_taken(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 || errno != ENOENT;
}

static int ring_dump_open(void *sink, enum els_dump_reason why, int *fd,
                          char *name, size_t name_len)
{
    struct ring_sink *s = sink;
    if (why == ELS_DUMP_SIGNAL) {
        char buf[64];
        ssize_t n = s->pipe[0] >= 0 ? read(s->pipe[0], buf, sizeof buf) : -1;
        if (n <= 0)
            return -ECANCELED;
        while (read(s->pipe[0], buf, sizeof buf) > 0) {
        }
    }
    if (why == ELS_DUMP_EXIT && !s->at_exit)
        return -ECANCELED;
    for (; s->next <= RING_MAX_NUMBER; s->next++) {
        int r = ring_names(s, s->next);
        if (r != 0)
            return r;
        if (ring_taken(s->final))
            continue;
        int f = open(s->partial, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                     RING_DUMP_MODE);
        if (f < 0 && errno == EEXIST)
            continue;
        if (f < 0)
            return -errno;
        s->next++;
        *fd = f;
        snprintf(name, name_len, "%s", s->partial);
        return 0;
    }
    return -EEXIST;
}

/* Make the directory entry of a renamed dump durable too.  Best effort:
 * the dump itself is complete and named already. */
static void ring_sync_dir(const struct ring_sink *s)
{
    int d = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d >= 0) {
        (void)fsync(d);
        elsi_close(d);
    }
}

static int ring_dump_close(void *sink, int fd, int complete, char *name,
                           size_t name_len)
{
    struct ring_sink *s = sink;
    int r = 0;
    if (complete && fd >= 0 && fsync(fd) != 0)
        r = -errno;
    if (!complete || r != 0) {
        (void)unlink(s->partial);
        return r;
    }
    /* Note [A dump's name]: the number chosen at open, or if something
     * took that name meanwhile, the next free one. */
    char written[PATH_MAX];
    snprintf(written, sizeof written, "%s", s->partial);
    for (;;) {
        r = elsi_rename_new(AT_FDCWD, written, AT_FDCWD, s->final);
        if (r != -EEXIST)
            break;
        do {
            r = s->next > RING_MAX_NUMBER ? -EEXIST : ring_names(s, s->next++);
        } while (r == 0 && ring_taken(s->final));
        if (r != 0)
            break;
    }
    if (r != 0) {
        (void)unlink(written);
        return r;
    }
    ring_sync_dir(s);
    snprintf(name, name_len, "%s", s->final);
    return 0;
}

static int ring_endpoint(void *sink, char *buf, size_t len)
{
    struct ring_sink *s = sink;
    return snprintf(buf, len, "ring:%s%s", s->stem, s->suffix);
}

const struct els_sink_ops elsi_sink_ring = {
    .struct_size = sizeof(struct els_sink_ops),
    .scheme = "ring",
    .options = ring_options,
    .style = ELS_SINK_RECORD,
    .open = ring_open,
    .close = ring_close,
    .listen_fd = ring_listen_fd,
    .dump_open = ring_dump_open,
    .endpoint = ring_endpoint,
    .dump_close = ring_dump_close,
};
