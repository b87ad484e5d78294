/*
 * source.c: the monitor's eventlog sources (see source.h).
 *
 * Connecting follows tools/recv.c: addresses from els_endpoint_resolve(),
 * close-on-exec descriptors, a FIFO opened non-blocking so that waiting
 * for a writer never blocks the event loop.  Unlike recv, a source never
 * gives up: an absent endpoint is retried, which is what a monitor of a
 * program that restarts needs.  See Note [Waiting for a path].
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <stdint.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "eventlog-sink.h"
#include "source.h"
#include "usage.h"

/* Note [Waiting for a path]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~
 * A monitor is often started before its program (the demo does), and a
 * short program may come and go within half a second: retrying every
 * 500 ms missed it in 2 of 3 runs.  So while a unix: socket or a file
 * does not exist yet (or refuses: a stale socket), the source watches
 * its directory with inotify, and mon_source_fd() hands that descriptor
 * to the caller's poll: the path's creation (or a rename onto it, or a
 * chmod) wakes the loop and the source connects at once.  A socket is
 * bound before it listens, so a refused connection right after the event
 * is retried every MON_BURST_MS for MON_BURST_WINDOW_MS.  The watch is
 * armed just before an attempt, so a path created after a failed attempt
 * is always seen; after a stream ends the next attempt still waits
 * MON_RETRY_MS (a server that accepts and closes at once must not make
 * the monitor spin).  Without inotify (or with
 * the directory missing) the path is polled every MON_POLL_MS; tcp:
 * (nothing to watch) and a FIFO waiting for its writer (the writer's
 * open changes nothing in the directory) keep MON_RETRY_MS. */
#define MON_RETRY_MS 500
#define MON_POLL_MS 25
#define MON_BURST_MS 5
#define MON_BURST_WINDOW_MS 200

uint64_t mon_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int mon_source_init(struct mon_source *s, const char *arg, char *err,
                    size_t err_len)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->save_fd = -1;
    s->watch_fd = -1;
    if (strlen(arg) >= sizeof s->spec) {
        snprintf(err, err_len, "'%.40s...' is too long", arg);
        return -ENAMETOOLONG;
    }
    snprintf(s->spec, sizeof s->spec, "%s", arg);
    if (strncmp(arg, "unix:", 5) == 0 || strncmp(arg, "tcp:", 4) == 0) {
        s->kind = arg[0] == 'u' ? MON_SRC_UNIX : MON_SRC_TCP;
        int rc = els_endpoint_resolve(arg, 0, &s->ai, err, err_len);
        return rc < 0 ? rc : 0;
    }
    if (strncmp(arg, "fifo:", 5) == 0) {
        s->kind = MON_SRC_FIFO;
        s->path = s->spec + 5;
    } else {
        s->kind = MON_SRC_FILE;
        s->path = strncmp(arg, "file:", 5) == 0 ? s->spec + 5 : s->spec;
    }
    if (s->path[0] == '\0') {
        snprintf(err, err_len, "'%s': empty path", arg);
        return -EINVAL;
    }
    return 0;
}

/* The path a source waits for that a directory watch can see (a unix:
 * socket's or a file's), copied into buf; NULL for tcp:, a FIFO or an
 * abstract socket. */
static const char *mon_watch_path(const struct mon_source *s, char *buf,
                                  size_t len)
{
    if (s->kind == MON_SRC_FILE) {
        snprintf(buf, len, "%s", s->path);
        return buf;
    }
    if (s->kind != MON_SRC_UNIX || s->ai == NULL || s->ai->ai_family != AF_UNIX)
        return NULL;
    const struct sockaddr_un *un = (const struct sockaddr_un *)s->ai->ai_addr;
    size_t n = strnlen(un->sun_path, sizeof un->sun_path);
    if (n == 0 || n >= len)
        return NULL;
    memcpy(buf, un->sun_path, n);
    buf[n] = '\0';
    return buf;
}

static void mon_watch_close(struct mon_source *s)
{
    if (s->watch_fd >= 0)
        close(s->watch_fd);
    s->watch_fd = -1;
}

/* Watch the directory of the path s waits for; true if a watch was
 * armed now (the caller then tries at once: the path may have appeared
 * before the watch). */
static bool mon_watch_arm(struct mon_source *s)
{
    char path[sizeof s->watch_dir];
    if (s->watch_fd >= 0 || mon_watch_path(s, path, sizeof path) == NULL)
        return false;
    char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    if (strlen(name) >= sizeof s->watch_name || name[0] == '\0')
        return false;
    snprintf(s->watch_name, sizeof s->watch_name, "%s", name);
    if (slash == NULL)
        snprintf(s->watch_dir, sizeof s->watch_dir, ".");
    else if (slash == path)
        snprintf(s->watch_dir, sizeof s->watch_dir, "/");
    else {
        *slash = '\0';
        snprintf(s->watch_dir, sizeof s->watch_dir, "%s", path);
    }
    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0)
        return false;
    if (inotify_add_watch(fd, s->watch_dir, IN_CREATE | IN_MOVED_TO | IN_ATTRIB
                          | IN_CLOSE_WRITE | IN_ONLYDIR) < 0) {
        close(fd);
        return false;
    }
    s->watch_fd = fd;
    return true;
}

/* Read the watch's events; true if the path may have appeared (its name,
 * a lost queue, or the directory gone: then the watch closes and the
 * next attempt arms a new one). */
static bool mon_watch_drain(struct mon_source *s)
{
    bool hit = false, gone = false;
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    while (s->watch_fd >= 0) {
        ssize_t n = read(s->watch_fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *e = (const struct inotify_event *)p;
            if (e->mask & (IN_Q_OVERFLOW | IN_IGNORED))
                hit = gone = true;
            else if (e->len > 0 && strcmp(e->name, s->watch_name) == 0)
                hit = true;
            p += sizeof *e + e->len;
        }
    }
    if (gone)
        mon_watch_close(s);
    return hit;
}

static uint64_t mon_retry_delay(const struct mon_source *s, uint64_t now_ms)
{
    char path[sizeof s->watch_dir];
    if (now_ms < s->burst_until_ms)
        return MON_BURST_MS;
    if (s->watch_fd < 0 && mon_watch_path(s, path, sizeof path) != NULL)
        return MON_POLL_MS;
    return MON_RETRY_MS;
}

static void mon_source_drop(struct mon_source *s, uint64_t now_ms)
{
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
    s->retry_at_ms = now_ms + MON_RETRY_MS;
    if (s->save_next > 0 && s->save_fd >= 0) {
        close(s->save_fd);      /* the run is over: its copy is whole */
        s->save_fd = -1;
    }
}

int mon_source_save(struct mon_source *s, const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
    if (fd < 0)
        return -errno;
    s->save_fd = fd;
    return 0;
}

void mon_source_save_runs(struct mon_source *s, const char *dir,
                          const char *stem)
{
    snprintf(s->save_dir, sizeof s->save_dir, "%s", dir);
    snprintf(s->save_stem, sizeof s->save_stem, "%s", stem);
    s->save_next = 1;
}

/* Note [Saved runs]
 * ~~~~~~~~~~~~~~~~~
 * serve --all's --save-dir is often a directory others may write (/tmp, a
 * shared volume), and its names are predictable (a program's name and
 * pid).  So a run's copy is created with O_EXCL and O_NOFOLLOW: a file or
 * a symlink someone planted at the name is never written through or
 * replaced, the next number is taken instead; and each run (a program
 * that restarts its eventlog starts a new one) gets a number of its own,
 * so that a restart never truncates the run before it. */
#define MON_SAVE_TRIES 100000u

static void mon_save_open_run(struct mon_source *s)
{
    char path[sizeof s->save_dir + sizeof s->save_stem + 32];
    int e = EEXIST;
    for (unsigned tries = 0; tries < MON_SAVE_TRIES && e == EEXIST; tries++) {
        snprintf(path, sizeof path, "%s/%s.%u.eventlog", s->save_dir,
                 s->save_stem, s->save_next++);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
                      O_CLOEXEC | O_NOCTTY, 0600);
        if (fd >= 0) {
            s->save_fd = fd;
            return;
        }
        e = errno;
    }
    s->save_errors++;
    fprintf(stderr, MON_TOOL_NAME " serve: cannot save a run of %s as %s: %s\n",
            s->spec, path, strerror(e));
}

static void mon_source_copy(struct mon_source *s, const void *buf, size_t len)
{
    const char *p = buf;
    while (s->save_fd >= 0 && len > 0) {
        ssize_t n = write(s->save_fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            s->save_errors++;
            return;
        }
        p += n;
        len -= (size_t)n;
    }
}

void mon_source_close(struct mon_source *s)
{
    if (s->save_fd >= 0)
        close(s->save_fd);
    s->save_fd = -1;
    mon_source_drop(s, 0);
    mon_watch_close(s);
    els_endpoint_free(s->ai);
    s->ai = NULL;
}

int mon_source_fd(const struct mon_source *s)
{
    if (s->fd >= 0)
        return s->kind == MON_SRC_FILE ? -1 : s->fd;
    return s->watch_fd;
}

uint64_t mon_source_wait_ms(const struct mon_source *s, uint64_t now_ms)
{
    if (s->fd >= 0)
        return UINT64_MAX;
    return s->retry_at_ms > now_ms ? s->retry_at_ms - now_ms : 0;
}

bool mon_source_is_file(const struct mon_source *s)
{
    return s->kind == MON_SRC_FILE;
}

bool mon_source_up(const struct mon_source *s)
{
    return s->fd >= 0;
}

void mon_source_why(const struct mon_source *s, char *buf, size_t len)
{
    static const char *const what[] = {
        [MON_SRC_FILE] = "file", [MON_SRC_UNIX] = "socket",
        [MON_SRC_TCP] = "listener", [MON_SRC_FIFO] = "FIFO",
    };
    int e = -s->open_err;
    if (s->no_writer)
        snprintf(buf, len, "no writer has the FIFO open");
    else if (e == ENOENT)
        snprintf(buf, len, "no such %s", what[s->kind]);
    else if (e == ECONNREFUSED)
        snprintf(buf, len, "connection refused: nothing listens %s",
                 s->kind == MON_SRC_UNIX ? "on that socket" : "on that port");
    else if (e == EINVAL && s->kind == MON_SRC_FILE)
        snprintf(buf, len, "not a regular file");
    else if (e == EINVAL && s->kind == MON_SRC_FIFO)
        snprintf(buf, len, "not a FIFO");
    else
        snprintf(buf, len, "%s", strerror(e));
}

void mon_source_how(const struct mon_source *s, char *buf, size_t len)
{
    char path[sizeof s->watch_dir];
    if (s->watch_fd >= 0)
        snprintf(buf, len, "watching %s for it", s->watch_dir);
    else if (mon_watch_path(s, path, sizeof path) != NULL)
        snprintf(buf, len, "checking every %d ms", MON_POLL_MS);
    else
        snprintf(buf, len, "retrying every %.1f s", MON_RETRY_MS / 1000.0);
}

/* One attempt to open or connect; the descriptor (non-blocking) or
 * -errno with s->state saying why. */
static int mon_source_open(struct mon_source *s)
{
    if (s->kind == MON_SRC_FILE || s->kind == MON_SRC_FIFO) {
        char why[160];
        int fd = open(s->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
            s->open_err = -errno;
            mon_source_why(s, why, sizeof why);
            snprintf(s->state, sizeof s->state, "waiting for %s: %s", s->path,
                     why);
            return s->open_err;
        }
        struct stat st;
        if (fstat(fd, &st) < 0 ||
            (s->kind == MON_SRC_FILE ? !S_ISREG(st.st_mode) : !S_ISFIFO(st.st_mode))) {
            close(fd);
            s->open_err = -EINVAL;
            mon_source_why(s, why, sizeof why);
            snprintf(s->state, sizeof s->state, "waiting for %s: %s", s->path,
                     why);
            return -EINVAL;
        }
        s->dev = st.st_dev;
        s->ino = st.st_ino;
        return fd;
    }
    int last = -ECONNREFUSED;
    for (const struct addrinfo *ai = s->ai; ai != NULL; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            last = -errno;
            continue;
        }
        /* A blocking connect: loopback and UNIX sockets answer at once;
         * a remote host that does not answer holds the loop up to the
         * kernel's connect timeout, once per attempt. */
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
            int fl = fcntl(fd, F_GETFL);
            if (fl >= 0)
                (void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
            return fd;
        }
        last = -errno;
        close(fd);
    }
    char why[160];
    s->open_err = last;
    mon_source_why(s, why, sizeof why);
    snprintf(s->state, sizeof s->state, "waiting for %s: %s", s->spec, why);
    return last;
}

/* A followed file was truncated or replaced: a new run. */
static bool mon_file_restarted(const struct mon_source *s)
{
    struct stat st;
    if (stat(s->path, &st) < 0)
        return false;       /* gone: keep showing what we read */
    return st.st_dev != s->dev || st.st_ino != s->ino ||
           (uint64_t)st.st_size < s->offset;
}

/* A file's state says how much of it was read: a view of a file read
 * part way is not the whole run's (a large saved eventlog takes more
 * than one interval to read). */
static void mon_file_state(struct mon_source *s, struct mon_model *m,
                           bool at_end)
{
    struct stat st;
    uint64_t size = fstat(s->fd, &st) == 0 ? (uint64_t)st.st_size : 0;
    if (at_end || size <= s->offset) {
        snprintf(s->state, sizeof s->state, "%s read to its end (%" PRIu64
                 " bytes)%s", s->path, s->offset,
                 s->once ? "" : "; following it as it grows");
    } else if (size < 10000000) {
        snprintf(s->state, sizeof s->state, "reading %s: %" PRIu64 " of %"
                 PRIu64 " bytes (%u%%)", s->path, s->offset, size,
                 (unsigned)(s->offset * 100 / size));
    } else {
        snprintf(s->state, sizeof s->state, "reading %s: %.1f of %.1f MB (%u%%)",
                 s->path, (double)s->offset / 1e6, (double)size / 1e6,
                 (unsigned)(s->offset * 100 / size));
    }
    mon_model_set_source(m, s->spec, s->state);
}

uint64_t mon_source_pump(struct mon_source *s, struct mon_model *m,
                         uint64_t now_ms, uint64_t max_bytes)
{
    if (s->kind == MON_SRC_FILE && s->fd >= 0 && mon_file_restarted(s)) {
        mon_source_drop(s, 0);
        s->retry_at_ms = 0;
    }
    if (s->fd < 0) {
        /* See Note [Waiting for a path]. */
        if (mon_watch_drain(s)) {
            s->retry_at_ms = now_ms;
            s->burst_until_ms = now_ms + MON_BURST_WINDOW_MS;
        }
        if (now_ms < s->retry_at_ms)
            return 0;
        (void)mon_watch_arm(s);         /* before the attempt: no gap */
        int fd = mon_source_open(s);
        if (fd < 0) {
            s->retry_at_ms = now_ms + mon_retry_delay(s, now_ms);
            mon_model_set_source(m, s->spec, s->state);
            return 0;
        }
        bool woken = now_ms < s->burst_until_ms;
        mon_watch_close(s);
        s->burst_until_ms = 0;
        s->opens++;
        s->open_err = 0;
        s->no_writer = false;
        s->fd = fd;
        s->offset = 0;
        s->eof = false;
        s->fresh = true;
        snprintf(s->state, sizeof s->state, "%s %s%s",
                 s->kind == MON_SRC_FILE ? "reading" : "connected to", s->spec,
                 woken ? " (as it appeared: directory watch)" : "");
        mon_model_set_source(m, s->spec, s->state);
    }
    static unsigned char buf[65536];
    uint64_t total = 0;
    for (;;) {
        size_t want = sizeof buf;
        if (max_bytes && max_bytes - total < want)
            want = (size_t)(max_bytes - total);
        if (want == 0) {
            if (s->kind == MON_SRC_FILE)
                mon_file_state(s, m, false);
            return total;
        }
        ssize_t n = read(s->fd, buf, want);
        if (n > 0) {
            /* The old run stays on show until the new one sends. */
            if (s->fresh) {
                mon_model_reset(m);
                mon_model_note_connection(m);
                s->fresh = false;
                if (s->tap.fn != NULL)          /* serve's timeline */
                    s->tap.fn(s->tap.ctx, NULL, 0);
                if (s->save_next > 0) {         /* Note [Saved runs] */
                    if (s->save_fd >= 0)
                        close(s->save_fd);
                    s->save_fd = -1;
                    mon_save_open_run(s);
                } else if (s->save_fd >= 0 && (ftruncate(s->save_fd, 0) < 0 ||
                                               lseek(s->save_fd, 0, SEEK_SET) < 0)) {
                    s->save_errors++;
                }
            }
            mon_source_copy(s, buf, (size_t)n);
            if (s->tap.fn != NULL)              /* serve's timeline */
                s->tap.fn(s->tap.ctx, buf, (size_t)n);
            mon_model_feed(m, buf, (size_t)n);
            total += (uint64_t)n;
            s->offset += (uint64_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return total;
        if (s->kind == MON_SRC_FIFO && n == 0 && s->fresh) {
            /* No writer yet: try again later, nothing to reset, and no
             * stream was opened after all. */
            s->opens--;
            s->no_writer = true;
            snprintf(s->state, sizeof s->state, "waiting for a writer on %s",
                     s->spec);
            mon_model_set_source(m, s->spec, s->state);
            mon_source_drop(s, now_ms);
            return total;
        }
        if (s->kind == MON_SRC_FILE && n == 0) {
            s->eof = true;      /* the writer may append more */
            mon_file_state(s, m, true);
            return total;
        }
        /* Socket or FIFO closed (or failed): wait for the next run. */
        snprintf(s->state, sizeof s->state, "%s closed%s%s; reconnecting",
                 s->spec, n < 0 ? ": " : "", n < 0 ? strerror(errno) : "");
        mon_model_set_source(m, s->spec, s->state);
        mon_source_drop(s, now_ms);
        return total;
    }
}
