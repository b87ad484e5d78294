/*
 * timeline.c: the zoomable timeline of each stream serve follows: the
 * stream's bytes, as its source reads them (mon_source's tap), go to a
 * time index (tools/timeline/index.h) and, for a live stream, to a spool
 * of segment files in a private directory (spool.h), from which any
 * window is read back; a FILE is indexed where it lies and read back
 * from there (no copy).  Each new run of the stream (the program's next
 * eventlog, a file replaced) starts a new index and spool.  The routes
 * /api/timeline, /api/events, /api/range and /api/info answer from them
 * (timeline_route(), query.h).
 *
 * Note [Feeding the timeline]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A live stream: the tap runs in serve's one thread, between the read
 * and the model's feed: it never waits for anything but a write() to a
 * local file (the spool) and the index's own work, both proportional to
 * the bytes read.  A FILE: its bytes are on disk already, so a thread of
 * the timeline's own reads them where they lie, as far as the file went
 * when it was opened and then as far as the source has read (the tap
 * says how far), while serve's thread reads them into the model.  The
 * first whole-run view of a large file then waits for the index alone,
 * not for the model and the index one after the other (Note [Index
 * thread]).  Whatever goes wrong with the timeline (the spool's disk
 * full, a stream the index finds malformed, more capabilities than it
 * takes) stops the timeline of that run, says why once on stderr and in
 * /api/info's "timeline_error", and never stops the stream or the model.
 * Memory: the index keeps itself bounded (index.c's Note [Timeline
 * memory]); the disk: the spool keeps at most its bound (--spool-size),
 * dropping its oldest segment first, and the index forgets the chunks
 * whose bytes went (tl_index_trim()), counting them in /api/info's
 * "dropped".
 *
 * Note [Index thread]
 * ~~~~~~~~~~~~~~~~~~~
 * The index, the spool and the aggregates are not thread-safe (spool.h
 * asks the caller to serialise them): t->mu guards them, the run's
 * state (failed, error) and the thread's figures.  The thread holds it
 * while it feeds a piece of at most SERVE_TL_PIECE bytes (a few
 * milliseconds), never while it reads the file, so a query waits at
 * most one piece.  A new run (the file replaced) or serve's end stops
 * the thread and waits for it before the index goes.  The thread only
 * reads the file, the index's side files and the spool's (a FILE's spool
 * is the file itself), and writes nothing serve's thread reads without
 * the lock.
 *
 * Not its job: the queries (query.c), which source feeds it (serve.c,
 * all.c), HTTP (routes.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "serve.h"
#include "../timeline/index.h"
#include "../timeline/query.h"
#include "../timeline/spool.h"
#include "../tool.h"

/* What the index thread feeds at a time (Note [Index thread]). */
#define SERVE_TL_PIECE (1u << 20)
/* Note [Reading ahead]
 * ~~~~~~~~~~~~~~~~~~~~
 * A file not in the page cache would be read at the pace of the index's
 * preads, the disk and the index taking turns: a 2.9 GB file took 9.2 s
 * where its cached copy took 6.0 s.  So the thread asks the kernel for
 * the next SERVE_TL_AHEAD bytes (POSIX_FADV_WILLNEED) while it indexes
 * the ones before: the disk reads while the index works, and no more
 * than that much is asked for ahead (a file larger than memory is not
 * pulled in whole). */
#define SERVE_TL_AHEAD (64u << 20)

struct serve_tl {
    pthread_mutex_t mu;         /* Note [Index thread] */
    struct tl_index *ix;
    struct tl_spool *sp;
    char parent[4096];          /* where live spools go */
    char file[4096];            /* a FILE indexed in place, or "" */
    uint64_t max_bytes;         /* a live spool's bound */
    uint64_t runs;
    bool failed;                /* this run's timeline stopped */
    char error[300];
    /* A FILE's index thread (Note [Index thread]): it indexes [0, avail)
     * of fd; done: how far it went; tapped: how far the source read. */
    pthread_t thread;
    bool thread_on, stop;
    pthread_cond_t more;
    int fd;
    uint64_t avail, done, tapped;
};

struct serve_tl *serve_tl_new(const char *parent, const char *file,
                              uint64_t max_bytes)
{
    struct serve_tl *t = calloc(1, sizeof *t);
    if (t == NULL)
        return NULL;
    if (pthread_mutex_init(&t->mu, NULL) != 0) {
        free(t);
        return NULL;
    }
    if (pthread_cond_init(&t->more, NULL) != 0) {
        pthread_mutex_destroy(&t->mu);
        free(t);
        return NULL;
    }
    snprintf(t->parent, sizeof t->parent, "%s", parent ? parent : "");
    snprintf(t->file, sizeof t->file, "%s", file ? file : "");
    t->max_bytes = max_bytes;
    t->fd = -1;
    return t;
}

/* Stop the index thread, if it runs, and wait for it. */
static void serve_tl_stop_thread(struct serve_tl *t)
{
    if (!t->thread_on)
        return;
    pthread_mutex_lock(&t->mu);
    t->stop = true;
    pthread_cond_signal(&t->more);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->thread, NULL);
    t->thread_on = false;
    t->stop = false;
}

static void serve_tl_drop(struct serve_tl *t)
{
    serve_tl_stop_thread(t);
    if (t->fd >= 0)
        close(t->fd);
    t->fd = -1;
    tl_index_free(t->ix);
    t->ix = NULL;
    if (t->sp != NULL)
        tl_spool_close(t->sp);  /* a live one: its directory goes */
    t->sp = NULL;
}

void serve_tl_free(struct serve_tl *t)
{
    if (t == NULL)
        return;
    serve_tl_drop(t);
    pthread_cond_destroy(&t->more);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static void serve_tl_fail(struct serve_tl *t, const char *what, int err,
                          const char *detail)
{
    t->failed = true;
    snprintf(t->error, sizeof t->error, "%.100s: %s%s%.150s", what, strerror(-err),
             detail != NULL ? ": " : "", detail != NULL ? detail : "");
    fprintf(stderr, TOOL_NAME " serve: timeline stopped for this run (the "
            "live view goes on): %s\n", t->error);
}

/* A segment: a sixteenth of the bound (at most the spool's default), so
 * that dropping one loses little of what the bound keeps. */
static uint64_t serve_tl_segment(uint64_t max)
{
    uint64_t seg = max / 16;
    if (seg > TL_SPOOL_DEFAULT_SEGMENT)
        seg = TL_SPOOL_DEFAULT_SEGMENT;
    return seg < 4096 ? 4096 : seg;
}

/* A new run: a new index and spool. */
static void serve_tl_start(struct serve_tl *t)
{
    serve_tl_drop(t);
    t->failed = false;
    t->error[0] = '\0';
    t->avail = t->done = t->tapped = 0;
    t->runs++;
    int rc = tl_index_new(&t->ix, 0);
    if (rc < 0) {
        serve_tl_fail(t, "the time index", rc, NULL);
        return;
    }
    if (t->file[0] != '\0') {
        if ((rc = tl_spool_open_file(&t->sp, t->file)) < 0)
            serve_tl_fail(t, t->file, rc, NULL);
    } else if ((rc = tl_spool_open_dir(&t->sp, t->parent, t->max_bytes,
                                       serve_tl_segment(t->max_bytes))) < 0) {
        serve_tl_fail(t, "cannot make a spool directory", rc, t->parent);
    }
}

/* The index thread (Note [Index thread]): [done, avail) of the file,
 * a piece at a time, until told to stop. */
static void *serve_tl_thread(void *arg)
{
    struct serve_tl *t = arg;
    unsigned char *buf = malloc(SERVE_TL_PIECE);
    uint64_t ahead = 0;             /* asked of the kernel up to here */
    (void)posix_fadvise(t->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    pthread_mutex_lock(&t->mu);
    if (buf == NULL)
        serve_tl_fail(t, "the index thread", -ENOMEM, NULL);
    while (!t->stop) {
        if (t->failed || t->done >= t->avail) {
            pthread_cond_wait(&t->more, &t->mu);
            continue;
        }
        uint64_t off = t->done, left = t->avail - off;
        size_t want = left < SERVE_TL_PIECE ? (size_t)left : SERVE_TL_PIECE;
        pthread_mutex_unlock(&t->mu);
        if (off + SERVE_TL_AHEAD / 2 >= ahead) {
            /* Note [Reading ahead] */
            (void)posix_fadvise(t->fd, (off_t)ahead, SERVE_TL_AHEAD, POSIX_FADV_WILLNEED);
            ahead += SERVE_TL_AHEAD;
        }
        ssize_t n = pread(t->fd, buf, want, (off_t)off);
        int err = n < 0 ? -errno : 0;
        pthread_mutex_lock(&t->mu);
        if (t->stop)
            break;
        if (n < 0 && err == -EINTR)
            continue;
        if (n <= 0) {
            serve_tl_fail(t, t->file, n < 0 ? err : -EIO, "reading it");
            continue;
        }
        int rc;
        if ((rc = tl_spool_refresh(t->sp)) < 0)
            serve_tl_fail(t, t->file, rc, NULL);
        else if ((rc = tl_index_feed(t->ix, buf, (size_t)n)) < 0)
            serve_tl_fail(t, "indexing the stream", rc, tl_index_error(t->ix));
        t->done += (uint64_t)n;
    }
    pthread_mutex_unlock(&t->mu);
    free(buf);
    return NULL;
}

/* A FILE's run: its thread indexes the file from 0 to at least len and
 * as far as the file goes now. */
static void serve_tl_start_thread(struct serve_tl *t, uint64_t len)
{
    if (t->failed)
        return;
    if ((t->fd = open(t->file, O_RDONLY | O_CLOEXEC)) < 0) {
        serve_tl_fail(t, t->file, -errno, NULL);
        return;
    }
    struct stat st;
    t->avail = len;
    if (fstat(t->fd, &st) == 0 && (uint64_t)st.st_size > t->avail)
        t->avail = (uint64_t)st.st_size;
    t->tapped = len;
    int rc = pthread_create(&t->thread, NULL, serve_tl_thread, t);
    if (rc != 0) {
        serve_tl_fail(t, "the index thread", -rc, NULL);
        return;
    }
    t->thread_on = true;
}

void serve_tl_tap(void *ctx, const void *buf, size_t len)
{
    struct serve_tl *t = ctx;
    if (buf == NULL) {
        serve_tl_start(t);
        return;
    }
    if (t->file[0] != '\0') {
        /* The source read these bytes from the file: the thread may
         * index that far. */
        if (!t->thread_on) {
            if (t->ix != NULL && t->sp != NULL && t->fd < 0)
                serve_tl_start_thread(t, len);
            return;
        }
        pthread_mutex_lock(&t->mu);
        t->tapped += len;
        if (t->tapped > t->avail) {
            t->avail = t->tapped;
            pthread_cond_signal(&t->more);
        }
        pthread_mutex_unlock(&t->mu);
        return;
    }
    if (t->failed || t->ix == NULL || t->sp == NULL)
        return;
    int rc;
    if ((rc = tl_spool_append(t->sp, buf, len)) < 0) {
        serve_tl_fail(t, "writing the spool", rc, tl_spool_dir(t->sp));
        return;
    }
    tl_index_trim(t->ix, tl_spool_base(t->sp));
    if ((rc = tl_index_feed(t->ix, buf, len)) < 0)
        serve_tl_fail(t, "indexing the stream", rc, tl_index_error(t->ix));
}

uint64_t serve_tl_disk(const struct serve_tl *t)
{
    if (t == NULL || t->sp == NULL || t->file[0] != '\0')
        return 0;
    struct tl_spool_stats st;
    tl_spool_stats(t->sp, &st);
    return st.bytes_on_disk;
}

static int serve_tl_route_locked(struct serve_tl *t, const char *kind,
                                 const char *qs, struct strbuf *out);

int serve_tl_route(struct serve_tl *t, const char *kind, const char *qs,
                   struct strbuf *out)
{
    if (t != NULL)
        pthread_mutex_lock(&t->mu);
    int status = serve_tl_route_locked(t, kind, qs, out);
    if (t != NULL)
        pthread_mutex_unlock(&t->mu);
    return status;
}

static int serve_tl_route_locked(struct serve_tl *t, const char *kind,
                                 const char *qs, struct strbuf *out)
{
    if (t == NULL || t->ix == NULL || t->sp == NULL) {
        sb_puts(out, "{\"error\":");
        const char *why = t != NULL && t->failed ? t->error :
                          "no stream yet: the timeline starts with its first bytes";
        sb_json_str(out, why, strlen(why));
        sb_puts(out, "}");
        return 503;
    }
    int status = timeline_route(t->ix, t->sp, kind, qs, out);
    /* info also says whether this run's timeline stopped, and which run
     * it is (the page starts over on a new one). */
    if (status == 200 && strcmp(kind, "info") == 0 && out->len > 0 &&
        out->p[out->len - 1] == '}') {
        out->len--;
        sb_printf(out, ",\"run\":%" PRIu64 ",\"file\":%s,", t->runs,
                  t->file[0] != '\0' ? "true" : "false");
        if (t->file[0] != '\0')       /* how far the index thread is */
            sb_printf(out, "\"file_indexed\":%" PRIu64 ",\"file_known\":%"
                      PRIu64 ",", t->done, t->avail);
        sb_puts(out, "\"timeline_error\":");
        if (t->failed)
            sb_json_str(out, t->error, strlen(t->error));
        else
            sb_puts(out, "null");
        sb_puts(out, "}");
    }
    return status;
}

const char *serve_tl_default_parent(void)
{
    const char *d = getenv("XDG_RUNTIME_DIR");
    if (d == NULL || d[0] != '/')
        d = getenv("TMPDIR");
    if (d == NULL || d[0] != '/')
        d = "/tmp";
    return d;
}

int serve_tl_catch_up(struct serve_tl *t, uint64_t len)
{
    if (t->file[0] == '\0')
        return -EINVAL;
    serve_tl_start(t);
    serve_tl_start_thread(t, len);
    return t->failed ? -EIO : 0;
}

int serve_tl_set_file(struct serve_tl *t, const char *path)
{
    if (strlen(path) >= sizeof t->file)
        return -ENAMETOOLONG;
    snprintf(t->file, sizeof t->file, "%s", path);
    return 0;
}
