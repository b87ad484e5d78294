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
 * The tap runs in serve's one thread, between the read and the model's
 * feed: it never waits for anything but a write() to a local file
 * (the spool) and the index's own work, both proportional to the bytes
 * read.  Whatever goes wrong with the timeline (the spool's disk full,
 * a stream the index finds malformed, more capabilities than it takes)
 * stops the timeline of that run, says why once on stderr and in
 * /api/info's "timeline_error", and never stops the stream or the model.
 * Memory: the index keeps itself bounded (index.c's Note [Timeline
 * memory]); the disk: the spool keeps at most its bound (--spool-size),
 * dropping its oldest segment first, and the index forgets the chunks
 * whose bytes went (tl_index_trim()), counting them in /api/info's
 * "dropped".  A query runs in the same thread, so the appender and the
 * readers never overlap (spool.h asks the caller to serialise them).
 *
 * Not its job: the queries (query.c), which source feeds it (serve.c,
 * all.c), HTTP (routes.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "serve.h"
#include "../timeline/index.h"
#include "../timeline/query.h"
#include "../timeline/spool.h"
#include "../tool.h"

struct serve_tl {
    struct tl_index *ix;
    struct tl_spool *sp;
    char parent[4096];          /* where live spools go */
    char file[4096];            /* a FILE indexed in place, or "" */
    uint64_t max_bytes;         /* a live spool's bound */
    uint64_t runs;
    bool failed;                /* this run's timeline stopped */
    char error[300];
};

struct serve_tl *serve_tl_new(const char *parent, const char *file,
                              uint64_t max_bytes)
{
    struct serve_tl *t = calloc(1, sizeof *t);
    if (t == NULL)
        return NULL;
    snprintf(t->parent, sizeof t->parent, "%s", parent ? parent : "");
    snprintf(t->file, sizeof t->file, "%s", file ? file : "");
    t->max_bytes = max_bytes;
    return t;
}

static void serve_tl_drop(struct serve_tl *t)
{
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

void serve_tl_tap(void *ctx, const void *buf, size_t len)
{
    struct serve_tl *t = ctx;
    if (buf == NULL) {
        serve_tl_start(t);
        return;
    }
    if (t->failed || t->ix == NULL || t->sp == NULL)
        return;
    int rc;
    if (t->file[0] != '\0') {
        /* The source read these bytes from the file: they are there. */
        if ((rc = tl_spool_refresh(t->sp)) < 0) {
            serve_tl_fail(t, t->file, rc, NULL);
            return;
        }
    } else {
        if ((rc = tl_spool_append(t->sp, buf, len)) < 0) {
            serve_tl_fail(t, "writing the spool", rc, tl_spool_dir(t->sp));
            return;
        }
        tl_index_trim(t->ix, tl_spool_base(t->sp));
    }
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

int serve_tl_route(struct serve_tl *t, const char *kind, const char *qs,
                   struct strbuf *out)
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
        sb_printf(out, ",\"run\":%" PRIu64 ",\"file\":%s,\"timeline_error\":",
                  t->runs, t->file[0] != '\0' ? "true" : "false");
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
    if (t->failed)
        return -EIO;
    int fd = open(t->file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        serve_tl_fail(t, t->file, -errno, NULL);
        return -errno;
    }
    static unsigned char buf[65536];
    uint64_t off = 0;
    while (off < len && !t->failed) {
        size_t want = len - off < sizeof buf ? (size_t)(len - off) : sizeof buf;
        ssize_t n = pread(fd, buf, want, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            serve_tl_fail(t, t->file, n < 0 ? -errno : -EIO, "reading it again");
            break;
        }
        serve_tl_tap(t, buf, (size_t)n);
        off += (uint64_t)n;
    }
    close(fd);
    return t->failed ? -EIO : 0;
}

int serve_tl_set_file(struct serve_tl *t, const char *path)
{
    if (strlen(path) >= sizeof t->file)
        return -ENAMETOOLONG;
    snprintf(t->file, sizeof t->file, "%s", path);
    return 0;
}
