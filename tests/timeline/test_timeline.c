/*
 * test_timeline.c: the timeline engine (tools/timeline) on built streams
 * whose every event the test knows, and on the real eventlog in
 * tests/data: the spool's bound and its counted drops, the index's
 * windows, the figures of a selection against the generator's own sums,
 * the pyramid's memory over a two-day run and a short one's, a live
 * spool answering as the file does, and the span lanes paired as the
 * durations pair.
 */
#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "check.h"
#include "monitor/model_gen.h"
#include "timeline/index.h"
#include "timeline/query.h"
#include "timeline/spool.h"

/* model_gen.h's builders this test does not use. */
__attribute__((unused)) static void unused_builders(void)
{
    (void)ev_cc; (void)ev_sample; (void)ev_gc_stats; (void)ev_heap_prof_begin;
    (void)ev_sparks; (void)ev_census; (void)ev_band; (void)ev_cc_band;
    (void)unused_builders;
}

/* ------------------------------------------------------------------------
 * A generated run: two caps, threads running and stopping, collections,
 * allocation; every event recorded for the expectations.
 * ------------------------------------------------------------------------ */

struct rec {
    uint64_t t;
    int cap;
    uint16_t tag;
    uint32_t a, b;                /* thread/status, alloc total... */
    uint64_t off;
};

struct gen {
    struct evgen_buf b;
    struct rec *r;
    size_t n, cap;
};

static void rec(struct gen *g, uint64_t t, int cap, uint16_t tag, uint32_t a,
                uint32_t b)
{
    if (g->n == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 1024;
        g->r = realloc(g->r, g->cap * sizeof *g->r);
    }
    g->r[g->n++] = (struct rec){ t, cap, tag, a, b, g->b.len };
}

/* blocks x per block iterations on each of two caps; each iteration
 * 1 ms: thread runs 600 us, then (every 5th) a 100 us collection, an
 * allocation report. */
static void gen_run(struct gen *g, unsigned blocks, unsigned per)
{
    g->b = header();
    uint64_t alloc[2] = { 0, 0 };
    for (unsigned k = 0; k < blocks; k++) {
        for (uint16_t c = 0; c < 2; c++) {
            uint64_t t = (uint64_t)k * per * MS + 1000;
            block(&g->b, c, t);
            for (unsigned i = 0; i < per; i++, t += MS) {
                uint32_t th = 1 + c + 2 * (i % 3);
                rec(g, t, c, 1, th, 0);
                ev_thread(&g->b, 1, t, th);
                uint16_t st = (i % 4 == 0) ? 7 : 3;
                rec(g, t + 600000, c, 2, th, st);
                ev_stop(&g->b, t + 600000, th, st);
                if (i % 5 == 0) {
                    rec(g, t + 700000, c, 9, 0, 0);
                    ev(&g->b, 9, t + 700000);
                    rec(g, t + 800000 + c * 1000, c, 10, 0, 0);
                    ev(&g->b, 10, t + 800000 + c * 1000);
                }
                alloc[c] += 4096 * (i % 7 + 1);
                rec(g, t + 900000, c, 49, 0, (uint32_t)alloc[c]);
                ev_heap(&g->b, 49, t + 900000, alloc[c]);
                if (c == 0 && i % 50 == 7) {
                    rec(g, t + 950000, c, 58, i, 0);
                    ev_text(&g->b, 58, t + 950000, "tick");
                }
            }
            end_block(&g->b);
        }
    }
    evgen_put(&g->b, evgen_data_end, 2);
}

static void gen_free(struct gen *g)
{
    evgen_free(&g->b);
    free(g->r);
}

static int rec_cmp(const void *x, const void *y)
{
    const struct rec *a = x, *b = y;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    return a->off < b->off ? -1 : a->off > b->off;
}

static void index_all_bins(struct tl_index **ix, struct tl_spool **sp,
                           const char *path, const struct evgen_buf *b,
                           unsigned bins)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK(fd >= 0);
    CHECK(write(fd, b->p, b->len) == (ssize_t)b->len);
    close(fd);
    CHECK_OK(tl_spool_open_file(sp, path));
    CHECK_OK(tl_index_new(ix, bins));
    for (size_t off = 0; off < b->len; off += 3000) {
        size_t n = b->len - off < 3000 ? b->len - off : 3000;
        CHECK_OK(tl_index_feed(*ix, b->p + off, n));
    }
}

static void index_all(struct tl_index **ix, struct tl_spool **sp, const char *path,
                      const struct evgen_buf *b)
{
    index_all_bins(ix, sp, path, b, 0);
}

/* A built stream ended (its last block closed, DATA_END), written to
 * check_dir/name and indexed there. */
static void index_built(struct tl_index **ix, struct tl_spool **sp,
                        const char *name, struct evgen_buf *b)
{
    end_block(b);
    evgen_put(b, evgen_data_end, 2);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", check_dir, name);
    index_all(ix, sp, path, b);
}

static char *route(struct tl_index *ix, struct tl_spool *sp, const char *kind,
                   const char *qs)
{
    struct strbuf sb = { 0 };
    int st = timeline_route(ix, sp, kind, qs, &sb);
    CHECK_MSG(st == 200, "%s %s: %d %.*s", kind, qs, st, (int)sb.len, sb.p);
    sb_put(&sb, "", 1);
    return sb.p;
}

static uint64_t json_u64(const char *doc, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(doc, k);
    CHECK_MSG(p, "no %s in %.300s", key, doc);
    return strtoull(p + strlen(k), NULL, 10);
}

/* ------------------------------------------------------------------------
 * Cases
 * ------------------------------------------------------------------------ */

static uint64_t dir_bytes(const char *dir, unsigned *files)
{
    DIR *d = opendir(dir);
    CHECK(d);
    uint64_t sum = 0;
    *files = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        struct stat st;
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        CHECK(lstat(p, &st) == 0);
        CHECK_INT(st.st_mode & 0777, ==, 0600);
        CHECK(S_ISREG(st.st_mode));
        sum += (uint64_t)st.st_size;
        (*files)++;
    }
    closedir(d);
    return sum;
}

/* The bound holds on disk after every append; the oldest bytes go first
 * and are counted; what is kept reads back. */
static void spool_bound(void)
{
    struct tl_spool *sp;
    CHECK_INT(tl_spool_open_dir(&sp, check_dir, 1000, 2000), ==, -EINVAL);
    CHECK_OK(tl_spool_open_dir(&sp, check_dir, 1 << 20, 256 << 10));
    struct stat st;
    CHECK(stat(tl_spool_dir(sp), &st) == 0);
    CHECK_INT(st.st_mode & 0777, ==, 0700);
    uint8_t buf[10007];
    uint64_t total = 0;
    for (int k = 0; k < 600; k++) {
        for (size_t i = 0; i < sizeof buf; i++)
            buf[i] = (uint8_t)((total + i) * 7 / 3);
        CHECK_OK(tl_spool_append(sp, buf, sizeof buf));
        total += sizeof buf;
        unsigned files;
        CHECK_U64(dir_bytes(tl_spool_dir(sp), &files), <=, 1 << 20);
    }
    struct tl_spool_stats s;
    tl_spool_stats(sp, &s);
    CHECK_U64(s.end, ==, total);
    CHECK_U64(s.bytes_dropped, ==, s.base);
    CHECK_U64(s.end - s.base, >=, (1 << 20) - (256 << 10));
    CHECK_U64(s.segments_dropped, >, 0);
    CHECK_INT(tl_spool_read(sp, s.base - 1, buf, 10), ==, -ERANGE);
    uint8_t back[5000];
    uint64_t at = s.base + 1234;  /* across a segment boundary or not */
    CHECK_INT(tl_spool_read(sp, at, back, sizeof back), ==, (long)sizeof back);
    for (size_t i = 0; i < sizeof back; i++) {
        uint64_t o = at + i;
        /* byte o of append k at position i' = o - k*sizeof buf */
        uint64_t k = o / sizeof buf, ip = o - k * sizeof buf;
        CHECK_INT(back[i], ==, (uint8_t)((k * sizeof buf + ip) * 7 / 3));
    }
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", tl_spool_dir(sp));
    tl_spool_close(sp);
    CHECK(stat(dir, &st) < 0 && errno == ENOENT);
}

/* A live spool over a generated run: the index forgets the chunks the
 * spool dropped, oldest first, and counts their events and time. */
static void spool_drops_counted(void)
{
    struct gen g = { 0 };
    gen_run(&g, 40, 200);
    struct tl_spool *sp;
    struct tl_index *ix;
    CHECK_OK(tl_spool_open_dir(&sp, check_dir, 64 << 10, 8 << 10));
    CHECK_OK(tl_index_new(&ix, 0));
    for (size_t off = 0; off < g.b.len; off += 4096) {
        size_t n = g.b.len - off < 4096 ? g.b.len - off : 4096;
        CHECK_OK(tl_spool_append(sp, g.b.p + off, n));
        CHECK_OK(tl_index_feed(ix, g.b.p + off, n));
        tl_index_trim(ix, tl_spool_base(sp));
    }
    struct tl_index_stats s;
    tl_index_stats(ix, &s);
    CHECK_U64(s.events, ==, g.n);
    CHECK_U64(s.dropped_events, >, 0);
    uint64_t kept = 0, first_kept = UINT64_MAX;
    for (unsigned l = 0; l < 2; l++) {
        const struct tl_lane *ln = tl_index_lane(ix, l);
        for (size_t i = ln->head; i < ln->n; i++) {
            kept += ln->v[i].events;
            CHECK_U64(ln->v[i].off, >=, tl_spool_base(sp));
            if (ln->v[i].t_first < first_kept)
                first_kept = ln->v[i].t_first;
        }
    }
    const struct tl_lane *gl = tl_index_lane(ix, TL_LANE_GLOBAL);
    CHECK_U64(gl->n - gl->head, ==, 0);
    CHECK_U64(kept + s.dropped_events, ==, g.n);
    CHECK_U64(s.dropped_t_last, <=, first_kept + 200 * MS);
    CHECK_U64(s.dropped_t_first, ==, g.r[0].t);
    /* a window in the dropped range answers from the pyramid, a kept one
     * from the bytes */
    char qs[128];
    snprintf(qs, sizeof qs, "t0=%llu&t1=%llu&n=10",
             (unsigned long long)(first_kept + 50 * MS),
             (unsigned long long)(first_kept + 51 * MS));
    char *j = route(ix, sp, "events", qs);
    CHECK_U64(json_u64(j, "total"), >, 0);
    free(j);
    j = route(ix, sp, "info", "");
    CHECK_U64(json_u64(j, "segments_dropped"), >, 0);
    free(j);
    tl_index_free(ix);
    tl_spool_close(sp);
    gen_free(&g);
}

/* A window's events are exactly those the generator wrote in it, in time
 * order; its figures are the generator's sums. */
static void window_and_figures(void)
{
    struct gen g = { 0 };
    gen_run(&g, 6, 300);
    struct tl_index *ix;
    struct tl_spool *sp;
    char path[1024];
    snprintf(path, sizeof path, "%s/run.eventlog", check_dir);
    index_all(&ix, &sp, path, &g.b);
    qsort(g.r, g.n, sizeof *g.r, rec_cmp);
    static const uint64_t wins[][2] = {
        { 0, UINT64_MAX / 2 }, { 123 * MS + 4567, 124 * MS + 4567 },
        { 299 * MS, 301 * MS + 800000 }, { 1000 * MS, 1650 * MS },
    };
    for (size_t w = 0; w < sizeof wins / sizeof wins[0]; w++) {
        uint64_t t0 = wins[w][0], t1 = wins[w][1];
        char qs[160];
        snprintf(qs, sizeof qs, "t0=%llu&t1=%llu&n=100000", (unsigned long long)t0,
                 (unsigned long long)t1);
        /* expectations */
        uint64_t n = 0, gcs = 0, pause = 0, pmax = 0, alloc = 0;
        uint64_t gstart[2] = { 0, 0 }, prev_alloc[2] = { 0, 0 };
        uint64_t run_ns[8] = { 0 }, since[8] = { 0 };
        for (size_t i = 0; i < g.n; i++) {
            const struct rec *r = &g.r[i];
            bool in = r->t >= t0 && r->t <= t1;
            n += in;
            if (r->tag == 9)
                gstart[r->cap] = r->t;
            if (r->tag == 10 && in) {
                uint64_t p = r->t - gstart[r->cap];
                gcs++;
                pause += p;
                pmax = p > pmax ? p : pmax;
            }
            if (r->tag == 49) {
                if (in)
                    alloc += r->b - prev_alloc[r->cap];
                prev_alloc[r->cap] = r->b;
            }
            if (r->tag == 1)
                since[r->a] = r->t;
            if (r->tag == 2) {
                uint64_t s = since[r->a] > t0 ? since[r->a] : t0;
                uint64_t e = r->t < t1 ? r->t : t1;
                if (e > s)
                    run_ns[r->a] += e - s;
            }
        }
        char *j = route(ix, sp, "events", qs);
        CHECK_U64(json_u64(j, "total"), ==, n);
        CHECK_CONTAINS(j, "\"exact\":true");
        /* the listed times, in order */
        const char *p = strstr(j, "\"events\":[") + 9;
        size_t k = 0;
        for (size_t i = 0; i < g.n; i++) {
            if (g.r[i].t < t0 || g.r[i].t > t1)
                continue;
            p = strchr(p + 1, '[');
            CHECK(p);
            CHECK_U64(strtoull(p + 1, NULL, 10), ==, g.r[i].t);
            const char *c = strchr(p, ',');
            CHECK_INT(atoi(c + 1), ==, g.r[i].cap);
            k++;
        }
        CHECK_U64(k, ==, n);
        free(j);
        j = route(ix, sp, "range", qs);
        CHECK_CONTAINS(j, "\"exact\":true");
        const char *gc = strstr(j, "\"gc\":");
        CHECK_U64(json_u64(gc, "count"), ==, gcs);
        CHECK_U64(json_u64(gc, "total_ns"), ==, pause);
        CHECK_U64(json_u64(gc, "max_ns"), ==, pmax);
        CHECK_U64(json_u64(j, "alloc_bytes"), ==, alloc);
        for (uint32_t th = 1; th <= 6; th++) {
            char key[32];
            snprintf(key, sizeof key, "{\"id\":%u,", th);
            const char *tj = strstr(j, key);
            if (!run_ns[th]) {
                CHECK(!tj || json_u64(tj, "running_ns") == 0);
                continue;
            }
            CHECK_MSG(tj, "thread %u missing: %s", th, j);
            CHECK_U64(json_u64(tj, "running_ns"), ==, run_ns[th]);
        }
        free(j);
        /* the drawing: raw, lanes for both caps, at most ~2 segments a px */
        snprintf(qs, sizeof qs, "t0=%llu&t1=%llu&px=200", (unsigned long long)t0,
                 (unsigned long long)(t1 > 1800 * MS ? 1800 * MS : t1));
        j = route(ix, sp, "timeline", qs);
        CHECK_CONTAINS(j, "\"mode\":\"raw\"");
        CHECK_CONTAINS(j, "{\"cap\":1,");
        const char *c0 = strstr(j, "{\"cap\":0,\"segments\":[");
        const char *c1 = strstr(j, "{\"cap\":1,");
        size_t n0 = 0;
        for (const char *q = c0; q && q < c1; q = strchr(q + 1, '['))
            n0++;
        CHECK_U64(n0, <=, 2 * 200 + 4);
        free(j);
    }
    /* the summary when the budget is small */
    struct tl_query q = { .kind = TL_Q_TIMELINE, .t0 = 0, .t1 = 1800 * MS,
                          .px = 100, .raw_budget = 10 };
    struct strbuf sb = { 0 };
    CHECK_INT(tl_query(ix, sp, &q, &sb), ==, 200);
    sb_put(&sb, "", 1);
    CHECK_CONTAINS(sb.p, "\"mode\":\"summary\"");
    CHECK_CONTAINS(sb.p, "\"threads\":null");
    /* 600 us of each 1 ms run on each cap: 1.2 HECs busy on average */
    const char *a = strstr(sb.p, "\"activity\":[");
    double sum = 0;
    int np = 0;
    for (const char *p = a + 12; *p != ']'; np++) {
        char *e;
        sum += strtod(p, &e);
        p = *e == ',' ? e + 1 : e;
    }
    CHECK_INT(np, ==, 100);
    CHECK_MSG(sum / np > 1.15 && sum / np < 1.25, "activity %f", sum / np);
    sb_free(&sb);
    /* errors */
    CHECK_INT(timeline_route(ix, sp, "timeline", "t0=5&t1=4", &sb), ==, 400);
    CHECK_INT(timeline_route(ix, sp, "nope", "", &sb), ==, 400);
    CHECK_INT(timeline_route(ix, sp, "events", "t0=-1", &sb), ==, 400);
    CHECK_INT(timeline_route(ix, sp, "timeline", "px=100000", &sb), ==, 400);
    sb_free(&sb);
    tl_index_free(ix);
    tl_spool_close(sp);
    gen_free(&g);
}

/* A cap's buffer may hold an event timed a little before the one before
 * it (and caps share times): the replay's list is the stream stably
 * sorted by time, as ghc-events shows it, whatever the disorder's shape
 * (an event back past several, runs back to back, equal times). */
static void replay_reorders(void)
{
    struct gen g = { 0 };
    g.b = header();
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (unsigned k = 0; k < 4; k++) {
        for (uint16_t c = 0; c < 2; c++) {
            uint64_t t = (uint64_t)k * 10 * MS + 100 * MS;
            block(&g.b, c, t);
            for (unsigned i = 0; i < 150; i++) {
                x ^= x << 13; x ^= x >> 7; x ^= x << 17;
                /* mostly forward; one in four back by up to 40 us, one
                 * in eight at the same time as the cap before it */
                uint64_t e = x % 8 == 0 ? t : x % 4 == 1 ? t - x % 40000
                                                         : t + 1000 + x % 50000;
                if (x % 8 != 0 && x % 4 != 1)
                    t = e;
                uint32_t th = 1 + c;
                rec(&g, e, c, 1, th, 0);
                ev_thread(&g.b, 1, e, th);
            }
            end_block(&g.b);
        }
    }
    evgen_put(&g.b, evgen_data_end, 2);
    struct tl_index *ix;
    struct tl_spool *sp;
    char path[1024];
    snprintf(path, sizeof path, "%s/reorder.eventlog", check_dir);
    index_all(&ix, &sp, path, &g.b);
    qsort(g.r, g.n, sizeof *g.r, rec_cmp);
    size_t back = 0;
    for (size_t i = 1; i < g.n; i++)
        back += g.r[i].off < g.r[i - 1].off;
    CHECK(back > 50);              /* the stream really was out of order */
    char *j = route(ix, sp, "events", "t0=0&t1=1000000000&n=100000");
    CHECK_U64(json_u64(j, "total"), ==, g.n);
    const char *p = strstr(j, "\"events\":[") + 9;
    for (size_t i = 0; i < g.n; i++) {
        p = strchr(p + 1, '[');
        CHECK(p);
        CHECK_MSG(strtoull(p + 1, NULL, 10) == g.r[i].t,
                  "event %zu: %llu, ghc-events' order has %llu", i,
                  strtoull(p + 1, NULL, 10), (unsigned long long)g.r[i].t);
        CHECK_INT(atoi(strchr(p, ',') + 1), ==, g.r[i].cap);
    }
    free(j);
    tl_index_free(ix);
    tl_spool_close(sp);
    gen_free(&g);
}

static char *query(struct tl_index *ix, struct tl_spool *sp, enum tl_query_kind kind,
                   uint64_t t0, uint64_t t1, unsigned px, uint64_t budget)
{
    struct tl_query q = { .kind = kind, .t0 = t0, .t1 = t1, .px = px,
                          .raw_budget = budget };
    struct strbuf sb = { 0 };
    CHECK_INT(tl_query(ix, sp, &q, &sb), ==, 200);
    sb_put(&sb, "", 1);
    return sb.p;
}

/* A window too wide to replay and narrower than a few pyramid bins is
 * drawn from the chunks' summaries, whose figures over whole chunks are
 * the generator's sums; each level is chosen where it is the cheapest
 * with a datum per pixel. */
static void chunk_summaries(void)
{
    struct gen g = { 0 };
    gen_run(&g, 6, 300);          /* a block of 300 ms per cap: a chunk each */
    struct tl_index *ix;
    struct tl_spool *sp;
    char path[1024];
    snprintf(path, sizeof path, "%s/chunks.eventlog", check_dir);
    /* four bins: each 2^29 ns, wider than a chunk */
    index_all_bins(&ix, &sp, path, &g.b, 4);
    qsort(g.r, g.n, sizeof *g.r, rec_cmp);
    CHECK_U64(tl_pyr_width(ix), ==, 1ull << 29);
    const uint64_t block = 300 * MS;
    /* windows whose ends are chunk boundaries: blocks [a, b) */
    static const unsigned spans[][2] = { { 1, 4 }, { 0, 6 }, { 2, 3 }, { 3, 5 } };
    for (size_t w = 0; w < sizeof spans / sizeof spans[0]; w++) {
        uint64_t t0 = spans[w][0] * block + 1000;
        uint64_t t1 = spans[w][1] * block + 1000 - 1;
        uint64_t gcs = 0, pause = 0, pmax = 0, alloc = 0, run = 0;
        uint64_t gstart[2] = { 0, 0 }, prev_alloc[2] = { 0, 0 }, since[8] = { 0 };
        for (size_t i = 0; i < g.n; i++) {
            const struct rec *r = &g.r[i];
            bool in = r->t >= t0 && r->t <= t1;
            if (r->tag == 9)
                gstart[r->cap] = r->t;
            if (r->tag == 10 && in) {
                uint64_t p = r->t - gstart[r->cap];
                gcs++;
                pause += p;
                pmax = p > pmax ? p : pmax;
            }
            if (r->tag == 49) {
                if (in)
                    alloc += r->b - prev_alloc[r->cap];
                prev_alloc[r->cap] = r->b;
            }
            if (r->tag == 1)
                since[r->a] = r->t;
            if (r->tag == 2) {
                uint64_t s = since[r->a] > t0 ? since[r->a] : t0;
                uint64_t e = r->t < t1 + 1 ? r->t : t1 + 1;
                if (e > s)
                    run += e - s;
            }
        }
        CHECK_U64(gcs, >, 0);
        char *j = query(ix, sp, TL_Q_RANGE, t0, t1, 1, 10);
        CHECK_CONTAINS(j, "\"exact\":false");
        CHECK_CONTAINS(j, "\"mode\":\"chunks\"");
        const char *gc = strstr(j, "\"gc\":");
        CHECK_U64(json_u64(gc, "count"), ==, gcs);
        CHECK_U64(json_u64(gc, "total_ns"), ==, pause);
        CHECK_U64(json_u64(gc, "max_ns"), ==, pmax);
        CHECK_U64(json_u64(j, "alloc_bytes"), ==, alloc);
        CHECK_U64(json_u64(strstr(j, "\"hec_ns\":"), "run"), ==, run);
        CHECK_U64(json_u64(j, "resolution_ns"), <=, block);
        CHECK_CONTAINS(j, "\"threads\":null");
        free(j);
        /* the replay agrees (the same figures, exact) */
        j = query(ix, sp, TL_Q_RANGE, t0, t1, 1, 0);
        CHECK_CONTAINS(j, "\"mode\":\"raw\"");
        CHECK_U64(json_u64(strstr(j, "\"gc\":"), "count"), ==, gcs);
        CHECK_U64(json_u64(j, "alloc_bytes"), ==, alloc);
        /* HEC time summed per pixel: within a nanosecond a pixel */
        uint64_t rr = json_u64(strstr(j, "\"hec_ns\":"), "run");
        CHECK_MSG(rr + 2 >= run && rr <= run + 2, "raw hec run %llu, want %llu",
                  (unsigned long long)rr, (unsigned long long)run);
        free(j);
    }
    /* the drawing at chunk resolution: 600 us of each 1 ms run on each
     * cap, the busiest threads named, lanes asked for in a narrower
     * window */
    char *j = query(ix, sp, TL_Q_TIMELINE, block + 1000, 4 * block + 999, 100, 10);
    CHECK_CONTAINS(j, "\"mode\":\"chunks\"");
    CHECK_CONTAINS(j, "\"threads\":null");
    CHECK_U64(json_u64(j, "resolution_ns"), ==, block);
    uint64_t narrow = json_u64(j, "threads_window_ns");
    CHECK_U64(narrow, <, 3 * block);
    CHECK_CONTAINS(j, "\"threads_busiest\":[[");
    const char *a = strstr(j, "\"activity\":[");
    int np = 0;
    for (const char *p = a + 12; *p != ']'; np++) {
        char *e;
        double v = strtod(p, &e);
        CHECK_MSG(v > 1.19 && v < 1.21, "activity[%d] %f", np, v);
        p = *e == ',' ? e + 1 : e;
    }
    CHECK_INT(np, ==, 100);
    /* cap 0 runs threads 1, 3, 5: the mixed cells name one of them */
    const char *c0 = strstr(j, "{\"cap\":0,\"segments\":[[");
    CHECK(c0);
    CHECK_CONTAINS(c0, "\"mixed\",0.6,0.02,");
    free(j);
    /* levels: a pixel a bin or wider is the pyramid's; a window within the
     * budget is replayed */
    j = query(ix, sp, TL_Q_TIMELINE, 0, 6 * block, 2, 10);
    CHECK_CONTAINS(j, "\"mode\":\"summary\"");
    CHECK_U64(json_u64(j, "resolution_ns"), ==, 1ull << 29);
    CHECK(!strstr(j, "threads_busiest"));
    free(j);
    j = query(ix, sp, TL_Q_TIMELINE, block + 1000, 4 * block + 999, 100, 0);
    CHECK_CONTAINS(j, "\"mode\":\"raw\"");
    CHECK(!strstr(j, "threads_window_ns"));
    /* the replay draws the same activity */
    a = strstr(j, "\"activity\":[");
    np = 0;
    for (const char *p = a + 12; *p != ']'; np++) {
        char *e;
        double v = strtod(p, &e);
        CHECK_MSG(v > 1.19 && v < 1.21, "raw activity[%d] %f", np, v);
        p = *e == ',' ? e + 1 : e;
    }
    CHECK_INT(np, ==, 100);
    free(j);
    /* a window a pixel of which holds a bin: the pyramid */
    j = query(ix, sp, TL_Q_TIMELINE, block + 1000, 4 * block + 999, 1, 10);
    CHECK_CONTAINS(j, "\"mode\":\"summary\"");
    free(j);
    tl_index_free(ix);
    tl_spool_close(sp);
    /* fine bins (the default): finer than the chunks, so the pyramid */
    index_all(&ix, &sp, path, &g.b);
    j = query(ix, sp, TL_Q_TIMELINE, block + 1000, 4 * block + 999, 100, 10);
    CHECK_CONTAINS(j, "\"mode\":\"summary\"");
    free(j);
    tl_index_free(ix);
    tl_spool_close(sp);
    gen_free(&g);
}

/* A thread lane on its coarser grid (a window of 1200 px: thread cells
 * of 2.4 px): one thread's running times of many pixels, each stop
 * followed by a short runnable time: 1.8 px (shorter than a cell, longer
 * than a pixel), 0.5 px (a mixed cell), and last a stop 0.3 px before
 * the window's end.  The lane's segments must not overlap (a mixed cell
 * drawn on its whole grid cell covers the end of the running segment
 * before it), the running segments end at their stops, and each stop of
 * a pixel or more, and the last one, starts a segment with its reason,
 * as zoom.js checks them on the page. */
static void thread_lane_cells(void)
{
    const uint64_t t0 = 10 * MS, t1 = t0 + 1200000;       /* 1000 ns a px */
    /* thread 1 runs at a, stops at b with status st */
    static const struct { uint64_t a, b; uint16_t st; } runs[] = {
        { 100000, 300700, 2 },    /* runnable 1800 ns, a cell is 2400 */
        { 302500, 600000, 1 },    /* runnable 500 ns: a mixed cell */
        { 600500, 900000, 3 },    /* runnable 2000 ns */
        { 902000, 1199700, 7 },   /* blocked from 300 ns before t1 */
    };
    const size_t nr = sizeof runs / sizeof runs[0];
    struct evgen_buf b = header();
    block(&b, 0, t0);
    ev_thread(&b, 0, t0 + 1000, 1);                     /* CREATE_THREAD */
    for (size_t i = 0; i < nr; i++) {
        ev_thread(&b, 1, t0 + runs[i].a, 1);
        ev_stop(&b, t0 + runs[i].b, 1, runs[i].st);
    }
    struct tl_index *ix;
    struct tl_spool *sp;
    index_built(&ix, &sp, "lane.eventlog", &b);
    char qs[160];
    snprintf(qs, sizeof qs, "t0=%llu&t1=%llu&px=1200", (unsigned long long)t0,
             (unsigned long long)t1);
    char *j = route(ix, sp, "timeline", qs);
    CHECK_CONTAINS(j, "\"mode\":\"raw\"");
    const char *lane = strstr(j, "{\"id\":1,");
    CHECK_MSG(lane, "no lane for thread 1: %s", j);
    const char *p = strstr(lane, "\"segments\":[");
    CHECK(p);
    p += strlen("\"segments\":[");
    uint64_t prev_e = 0;
    size_t nseg = 0, seen_run = 0, seen_stop = 0;
    while (*p == '[') {
        char *q;
        uint64_t s = strtoull(p + 1, &q, 10);
        uint64_t e = strtoull(q + 1, &q, 10);
        const char *kind = q + 2;           /* past ,"  */
        const char *end = strchr(p, ']');
        CHECK(end);
        CHECK_MSG(s >= prev_e, "segment %zu %.*s] begins before the last ended (%llu): %s",
                  nseg, (int)(end - p), p, (unsigned long long)prev_e, lane);
        for (size_t i = 0; i < nr; i++) {
            if (!strncmp(kind, "running\"", 8) && s == t0 + runs[i].a) {
                CHECK_MSG(e == t0 + runs[i].b, "running from %llu ends at %llu, not %llu",
                          (unsigned long long)s, (unsigned long long)e,
                          (unsigned long long)(t0 + runs[i].b));
                seen_run++;
            }
            if (s == t0 + runs[i].b) {
                /* a stop: its own segment, with its reason, if the
                 * thread waits a pixel or more, or the window ends */
                uint64_t next = i + 1 < nr ? runs[i + 1].a : t1 - t0;
                if (next - runs[i].b >= 1000 || i + 1 == nr) {
                    char want[64];
                    snprintf(want, sizeof want, "\"%s\",\"%s\"]",
                             runs[i].st == 7 ? "blocked" : "runnable",
                             tl_stop_name(runs[i].st));
                    CHECK_MSG(!strncmp(kind - 1, want, strlen(want)),
                              "the stop at %llu (%s) starts [%.*s], not %s",
                              (unsigned long long)s, tl_stop_name(runs[i].st),
                              (int)(end - p + 1), p, want);
                    CHECK_U64(e, ==, t0 + next);
                    seen_stop++;
                }
            }
        }
        prev_e = e;
        nseg++;
        p = end + 1;
        if (*p == ',')
            p++;
    }
    CHECK_U64(seen_run, ==, nr);
    CHECK_U64(seen_stop, ==, 3);
    free(j);
    tl_index_free(ix);
    tl_spool_close(sp);
    evgen_free(&b);
}

/* The thread table is bounded: once TL_THREADS_MAX threads are known,
 * a new one makes the finished ones go (their lanes keep only their id),
 * and a live one is never forgotten for a new one.  The finish is a
 * stop with status 5, which takes the index's path for runs and stops
 * (Note [Runs and stops first] in index.c). */
static void threads_forgotten(void)
{
    const uint32_t n = TL_THREADS_MAX, more = 1000;
    struct evgen_buf b = header();
    const uint64_t t0 = 10 * MS;
    block(&b, 0, t0);
    /* thread id is created at t0 + 300 id, runs, then stops: the odd
     * ones finish, the even ones yield */
    for (uint32_t id = 1; id <= n + more; id++) {
        uint64_t t = t0 + 300ull * id;
        ev_thread(&b, 0, t, id);
        ev_thread(&b, 1, t + 100, id);
        ev_stop(&b, t + 200, id, id % 2 ? 5 : 3);
    }
    struct tl_index *ix;
    struct tl_spool *sp;
    index_built(&ix, &sp, "threads.eventlog", &b);
    struct tl_index_stats st;
    tl_index_stats(ix, &st);
    /* thread n + 1 found the table full, half of it finished */
    CHECK_U64(st.threads_forgotten, ==, n / 2);
    static const uint32_t gone[] = { 1, 3, TL_THREADS_MAX - 1 };
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
        CHECK_MSG(tl_index_thread(ix, gone[i]) == NULL,
                  "finished thread %u still known", (unsigned)gone[i]);
    static const uint32_t kept[] = { 2, TL_THREADS_MAX, TL_THREADS_MAX + 1,
                                     TL_THREADS_MAX + 2, TL_THREADS_MAX + 1000 };
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
        const struct tl_thread *th = tl_index_thread(ix, kept[i]);
        CHECK_MSG(th != NULL, "thread %u forgotten", (unsigned)kept[i]);
        CHECK_U64(th->created, ==, t0 + 300ull * kept[i]);
        CHECK_U64(th->finished, ==, kept[i] % 2 ? t0 + 300ull * kept[i] + 200 : 0);
    }
    tl_index_free(ix);
    tl_spool_close(sp);
    evgen_free(&b);
}

/* A chunk's top thread is the one whose runs in it sum longest, here
 * among 1000 threads: one that runs 200 short times against 999 that
 * run once each for longer (Note [Top thread slots]: with ids of one
 * chunk apart modulo the table's size, none is evicted).  The
 * expectation is summed here from the schedule written. */
static void chunk_top_thread(void)
{
    enum { NTH = 1000, LONG = 7 };
    static uint64_t ran[NTH + 1];
    memset(ran, 0, sizeof ran);
    struct evgen_buf b = header();
    uint64_t t = 10 * MS;
    block(&b, 0, t);
    for (uint32_t id = 1; id <= NTH; id++) {
        /* the others: 10 to 20 us each, once; thread LONG: 0.2 us every
         * fifth turn, 200 times in all */
        uint32_t who[2] = { id, LONG };
        uint64_t len[2] = { 10000 + (id * 7919u) % 10000, 200 };
        for (int k = 0; k < 2; k++) {
            if ((k == 0 && id == LONG) || (k == 1 && id % 5))
                continue;
            t += 100;
            ev_thread(&b, 1, t, who[k]);
            t += len[k];
            ev_stop(&b, t, who[k], 3);
            ran[who[k]] += len[k];
        }
    }
    uint32_t want = 0;
    for (uint32_t id = 1; id <= NTH; id++)
        if (ran[id] > ran[want])
            want = id;
    CHECK_U64(want, ==, LONG);              /* the schedule's point */
    struct tl_index *ix;
    struct tl_spool *sp;
    index_built(&ix, &sp, "top.eventlog", &b);
    const struct tl_lane *l = tl_index_lane(ix, 0);
    CHECK_U64(l->n - l->head, ==, 1);
    CHECK_U64(l->v[l->head].top_thread, ==, want);
    CHECK_U64(l->v[l->head].top_ns, ==, ran[want]);
    tl_index_free(ix);
    tl_spool_close(sp);
    evgen_free(&b);
}

/* Under ASan or TSan the resident set holds the sanitizer's shadow memory
 * and its quarantine of freed blocks: there the allocator's own count of
 * live heap bytes stands in for it (as in tests/control/test_control.c). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MEM_FROM_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define MEM_FROM_ALLOCATOR 1
#endif
#endif
#ifdef MEM_FROM_ALLOCATOR
size_t __sanitizer_get_current_allocated_bytes(void);
#endif

static long rss_kib(void)
{
#ifdef MEM_FROM_ALLOCATOR
    return (long)(__sanitizer_get_current_allocated_bytes() / 1024);
#else
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6))
            v = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return v;
#endif
}

/* Two days of a two-HEC program: the index's memory stops growing once
 * the pyramid is allocated (it coarsens instead), and the pyramid keeps
 * every nanosecond of running time. */
static void pyramid_bounded(void)
{
    struct tl_index *ix;
    CHECK_OK(tl_index_new(&ix, 0));
    struct evgen_buf h = header();
    CHECK_OK(tl_index_feed(ix, h.p, h.len));
    evgen_free(&h);
    const uint64_t step = 200 * MS, hour = 3600000 * MS;
    uint64_t expected_run = 0, mem_1h = 0;
    long rss_1h = 0;
    uint64_t t = 1000;
    while (t < 48 * hour) {
        struct evgen_buf b = { 0 };
        for (uint16_t c = 0; c < 2; c++) {
            uint64_t tt = t;
            block(&b, c, tt);
            for (int i = 0; i < 2000; i++, tt += step) {
                ev_thread(&b, 1, tt, 10 + c);
                ev_stop(&b, tt + step / 4, 10 + c, 3);
                expected_run += step / 4;
            }
            end_block(&b);
        }
        CHECK_OK(tl_index_feed(ix, b.p, b.len));
        evgen_free(&b);
        t += 2000 * step;
        if (!mem_1h && t >= hour) {
            struct tl_index_stats s;
            tl_index_stats(ix, &s);
            mem_1h = s.mem_bytes;
            rss_1h = rss_kib();
        }
    }
    struct tl_index_stats s;
    tl_index_stats(ix, &s);
    printf("pyramid: %llu events, %llu chunks, bin %llu ns, index %llu bytes "
           "(at 1 h: %llu), RSS %ld KiB (at 1 h: %ld)\n",
           (unsigned long long)s.events, (unsigned long long)s.chunks,
           (unsigned long long)s.bin_width, (unsigned long long)s.mem_bytes,
           (unsigned long long)mem_1h, rss_kib(), rss_1h);
    CHECK_U64(s.events, >=, 48 * hour / step * 2 * 2);
    /* only the chunk table grows: 64 bytes a block */
    CHECK_U64(s.mem_bytes, <=, mem_1h + s.chunks * sizeof(struct tl_chunk) * 2 + 4096);
    CHECK_U64(s.bin_width * s.bins, >=, 48 * hour);
    CHECK_U64(s.bin_width, <=, 4 * 48 * hour / s.bins);
    uint64_t run = 0;
    for (unsigned c = 0; c < 2; c++)
        for (size_t b = 0; b < tl_pyr_used(ix); b++)
            run += tl_pyr_cap(ix, c)[b].run_ns;
    CHECK_U64(run, ==, expected_run);
    CHECK(rss_kib() - rss_1h < 8 * 1024);
    tl_index_free(ix);
}

/* A short program on 8 HECs, busy for 10 ms and then idle until one
 * last event on each HEC at 30 s: the pyramid coarsens 9 times, yet
 * holds only the pages that activity covers (Note [Pyramid pages] in
 * pyramid.c), not its 1.5 MiB + 8 x 4 MiB reservation, and keeps every
 * nanosecond of running time.  (Under a sanitizer rss_kib() is the
 * allocator's count, which the pyramid's mappings are not in.) */
static void pyramid_pages(void)
{
    long rss0 = rss_kib();
    struct tl_index *ix;
    CHECK_OK(tl_index_new(&ix, 0));
    struct evgen_buf b = header();
    uint64_t expected_run = 0;
    for (uint16_t c = 0; c < 8; c++) {
        block(&b, c, 1000);
        for (uint64_t t = 1000; t < 10 * MS; t += 100000) {
            ev_thread(&b, 1, t, 10 + c);
            ev_stop(&b, t + 50000, 10 + c, 3);
            expected_run += 50000;
        }
        end_block(&b);
    }
    for (uint16_t c = 0; c < 8; c++) {
        block(&b, c, 30000 * MS);
        ev_thread(&b, 1, 30000 * MS, 10 + c);
        ev_stop(&b, 30000 * MS + 1000, 10 + c, 3);
        expected_run += 1000;
        end_block(&b);
    }
    CHECK_OK(tl_index_feed(ix, b.p, b.len));
    evgen_free(&b);
    struct tl_index_stats s;
    tl_index_stats(ix, &s);
    long rss = rss_kib() - rss0;
    printf("pyramid pages: 8 HECs, bin %llu ns, %zu bins used, index %llu bytes "
           "reserved, RSS grew %ld KiB\n", (unsigned long long)s.bin_width,
           tl_pyr_used(ix), (unsigned long long)s.mem_bytes, rss);
    CHECK_U64(s.bin_width * s.bins, >=, 30000 * MS);
    uint64_t run = 0;
    for (unsigned c = 0; c < 8; c++)
        for (size_t i = 0; i < tl_pyr_used(ix); i++)
            run += tl_pyr_cap(ix, c)[i].run_ns;
    CHECK_U64(run, ==, expected_run);
    CHECK(rss < 8 * 1024);
    tl_index_free(ix);
}

/* The real eventlog: every event indexed, and its markers. */
static void real_sample(void)
{
    char path[1024], cnt[1024];
    snprintf(path, sizeof path, "%s/ghc-9.0.2-N2.eventlog", ELS_TEST_DATA_DIR);
    snprintf(cnt, sizeof cnt, "%s/ghc-9.0.2-N2.events", ELS_TEST_DATA_DIR);
    FILE *f = fopen(cnt, "r");
    CHECK(f);
    unsigned long long want = 0;
    CHECK(fscanf(f, "%llu", &want) == 1);
    fclose(f);
    struct tl_spool *sp, *live;
    struct tl_index *ix, *lix;
    CHECK_OK(tl_spool_open_file(&sp, path));
    CHECK_OK(tl_index_new(&ix, 0));
    CHECK_OK(tl_spool_open_dir(&live, check_dir, 0, 0));
    CHECK_OK(tl_index_new(&lix, 0));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    CHECK(fd >= 0);
    char buf[777];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        CHECK_OK(tl_index_feed(ix, buf, (size_t)n));
        CHECK_OK(tl_spool_append(live, buf, (size_t)n));
        CHECK_OK(tl_index_feed(lix, buf, (size_t)n));
    }
    close(fd);
    struct tl_index_stats s;
    tl_index_stats(ix, &s);
    CHECK_U64(s.events, ==, want);
    CHECK_U64(s.caps, ==, 2);
    char *j = route(ix, sp, "events", "n=100000");
    CHECK_U64(json_u64(j, "total"), ==, want);
    CHECK_CONTAINS(j, "\"marker: worker 1 done\"");
    CHECK_CONTAINS(j, "\"stopping thread 1 (thread yielding)\"");
    free(j);
    /* the live copy answers byte for byte as the file */
    const char *qs[] = { "", "t0=21000000&t1=22000000&px=300", "px=50" };
    for (size_t i = 0; i < 3; i++) {
        char *a = route(ix, sp, "timeline", qs[i]);
        char *b = route(lix, live, "timeline", qs[i]);
        CHECK_STR(a, b);
        CHECK_CONTAINS(a, "\"label\":\"IOManager on cap 0\"");
        free(a);
        free(b);
    }
    j = route(ix, sp, "timeline", "px=100");
    CHECK_CONTAINS(j, "\"markers\":[[");
    CHECK_CONTAINS(j, "worker 2 done");
    free(j);
    tl_index_free(ix);
    tl_index_free(lix);
    tl_spool_close(sp);
    tl_spool_close(live);
}

/* kind=pauses (pauses.c, Note [Longest pauses]): each of two caps has
 * PAUSES_PER collections a block (more than a chunk keeps), cap 1's 2 us shorter
 * inside cap 0's; the list is the truth computed here (per cap GC_START
 * to GC_END, overlapping ones once, longest first) whenever it says it
 * is exact, over the whole run and a window, and says it is not when a
 * chunk may hide one that belongs. */
struct pause { uint64_t a, b; int cap; };

static int pause_cmp(const void *x, const void *y)
{
    const struct pause *p = x, *q = y;
    uint64_t lp = p->b - p->a, lq = q->b - q->a;
    if (lp != lq)
        return lp > lq ? -1 : 1;
    return p->b < q->b ? -1 : p->b > q->b;
}

static void check_pauses(struct tl_index *ix, struct tl_spool *sp, struct pause *all,
                         size_t nall, uint64_t t0, uint64_t t1, unsigned n,
                         bool want_exact)
{
    struct pause *truth = calloc(nall, sizeof *truth);
    size_t k = 0;
    for (size_t i = 0; i < nall; i++)
        if (all[i].b >= t0 && all[i].b <= t1)
            truth[k++] = all[i];
    qsort(truth, k, sizeof *truth, pause_cmp);
    size_t listed = 0;
    for (size_t i = 0; i < k && listed < n; i++) {
        bool covered = false;
        for (size_t j = 0; j < listed; j++)
            covered |= truth[j].a <= truth[i].b && truth[i].a <= truth[j].b;
        if (!covered)
            truth[listed++] = truth[i];
    }
    char qs[128], want[64];
    snprintf(qs, sizeof qs, "t0=%llu&t1=%llu&n=%u", (unsigned long long)t0,
             (unsigned long long)t1, n);
    char *j = route(ix, sp, "pauses", qs);
    CHECK_CONTAINS(j, want_exact ? "\"exact\":true" : "\"exact\":false");
    const char *p = strstr(j, "\"pauses\":[");
    CHECK(p != NULL);
    p += 10;
    for (size_t i = 0; i < listed && want_exact; i++) {
        snprintf(want, sizeof want, "[%llu,%llu,%d]", (unsigned long long)truth[i].a,
                 (unsigned long long)truth[i].b, truth[i].cap);
        CHECK_MSG(strncmp(p, want, strlen(want)) == 0, "pause %zu: want %s at %.80s", i,
                  want, p);
        p += strlen(want) + 1;
    }
    if (want_exact)
        CHECK_MSG(p[-1] == ']', "more pauses listed than %zu: %.80s", listed, p - 1);
    free(j);
    free(truth);
}

#define PAUSES_PER (TL_CHUNK_PAUSES + 2)

static void longest_pauses(void)
{
    struct evgen_buf b = header();
    struct pause all[2 * 40 * PAUSES_PER];
    size_t nall = 0;
    for (unsigned k = 0; k < 40; k++)
        for (uint16_t c = 0; c < 2; c++) {
            uint64_t base = (uint64_t)k * 10 * MS + 1000;
            block(&b, c, base);
            for (unsigned i = 0; i < PAUSES_PER; i++) {
                uint64_t len = ((k * 7 + i * 13) % 23 + 3) * 10000;
                uint64_t a = base + i * MS + c * 1000, e = a + len - c * 3000;
                ev(&b, 9, a);
                ev(&b, 10, e);
                all[nall++] = (struct pause){ a, e, c };
            }
            end_block(&b);
        }
    struct tl_index *ix;
    struct tl_spool *sp;
    index_built(&ix, &sp, "pauses.eventlog", &b);
    check_pauses(ix, sp, all, nall, 0, UINT64_MAX / 2, 3, true);
    check_pauses(ix, sp, all, nall, 0, UINT64_MAX / 2, 10, true);
    check_pauses(ix, sp, all, nall, 95 * MS, 207 * MS, 5, true);
    /* more a chunk than it keeps: asking for all cannot be exact */
    check_pauses(ix, sp, all, nall, 0, UINT64_MAX / 2, 1000, false);
    /* a window without a collection or a span: empty lists (the
     * sanitizers' builds check that nothing sorts an array never made) */
    char *j = route(ix, sp, "pauses", "t0=0&t1=1");
    CHECK_CONTAINS(j, "\"pauses\":[],\"exact\":true");
    free(j);
    j = route(ix, sp, "durations", "t0=0&t1=1");
    CHECK_CONTAINS(j, "\"names\":[]");
    free(j);
    tl_index_free(ix);
    tl_spool_close(sp);
    evgen_free(&b);
}

/* The span lanes (kind=timeline's "spans") are the spans the durations
 * pair: markers "NAME start"/"NAME end" and "NAME begin"/"NAME stop" as
 * well as messages "START NAME"/"STOP NAME", each end with the latest
 * open start of the same thread (which moved to the other cap), nested
 * ones too, in the order they ended, then the one still open; an end
 * with no start is in none. */
static void span_lanes(void)
{
    struct evgen_buf b = header();
    block(&b, 0, 1000);
    ev_thread(&b, 1, 1000, 1);
    ev_text(&b, 58, 2000, "request start");
    ev_text(&b, 58, 3000, "request start");
    ev_stop(&b, 4000, 1, 3);
    ev_thread(&b, 1, 4100, 3);
    ev_text(&b, 58, 4200, "request start");
    ev_text(&b, 19, 4300, "START job");
    ev_stop(&b, 5000, 3, 3);
    block(&b, 1, 1000);
    ev_thread(&b, 1, 5100, 1);
    ev_text(&b, 58, 6000, "request end");
    ev_text(&b, 58, 7000, "request end");
    ev_stop(&b, 8000, 1, 3);
    ev_thread(&b, 1, 8100, 3);
    ev_text(&b, 58, 9000, "request end");
    ev_text(&b, 58, 9500, "phase begin");
    ev_text(&b, 19, 9600, "STOP job");
    ev_text(&b, 58, 9700, "other end");
    ev_stop(&b, 10000, 3, 3);
    struct tl_index *ix;
    struct tl_spool *sp;
    index_built(&ix, &sp, "spans.eventlog", &b);
    static const struct { uint64_t t0, t1; const char *want; } win[] = {
        { 0, 20000, "\"spans\":[[3000,6000,\"request\"],[2000,7000,\"request\"],"
                    "[4200,9000,\"request\"],[4300,9600,\"job\"],[9500,-1,\"phase\"]],"
                    "\"spans_truncated\":false" },
        { 6500, 8500, "\"spans\":[[2000,7000,\"request\"],[4200,9000,\"request\"],"
                      "[4300,9600,\"job\"]]," },
        { 7500, 7600, "\"spans\":[[4200,9000,\"request\"],[4300,9600,\"job\"]]," },
        { 9800, 9900, "\"spans\":[[9500,-1,\"phase\"]]," },
    };
    for (size_t w = 0; w < sizeof win / sizeof win[0]; w++) {
        char qs[128];
        snprintf(qs, sizeof qs, "t0=%llu&t1=%llu&px=100", (unsigned long long)win[w].t0,
                 (unsigned long long)win[w].t1);
        char *j = route(ix, sp, "timeline", qs);
        CHECK_CONTAINS(j, win[w].want);
        free(j);
    }
    /* the table counts the same pairs */
    char *d = route(ix, sp, "durations", "");
    CHECK_CONTAINS(d, "{\"name\":\"request\",\"count\":3,\"total_ns\":12800,");
    CHECK_CONTAINS(d, "\"longest\":[2000,7000]");
    CHECK_CONTAINS(d, "\"unmatched_ends\":1,\"open\":1,\"pending\":0,");
    free(d);
    tl_index_free(ix);
    tl_spool_close(sp);
    evgen_free(&b);
}

static const struct check_case cases[] = {
    CHECK_CASE(spool_bound),
    CHECK_CASE(spool_drops_counted),
    CHECK_CASE(window_and_figures),
    CHECK_CASE(replay_reorders),
    CHECK_CASE(chunk_summaries),
    CHECK_CASE(thread_lane_cells),
    CHECK_CASE(threads_forgotten),
    CHECK_CASE(chunk_top_thread),
    CHECK_CASE(longest_pauses),
    CHECK_CASE(span_lanes),
    CHECK_CASE_T(pyramid_bounded, 300),
    CHECK_CASE(pyramid_pages),
    CHECK_CASE(real_sample),
};

CHECK_MAIN(cases)
