/*
 * test_tl_thread.c: serve's timeline of a FILE (tools/serve/timeline.c),
 * whose index runs on a thread of its own (Note [Index thread]):
 * queries answered while the thread indexes, the finished index the same
 * as one fed in a single thread, and the file replaced while it is
 * indexed (a new run: the thread stopped, a new one on the new file).
 * The sanitizer builds run it too: under TSan it is the check that the
 * thread and the queries share nothing unguarded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "monitor/model_gen.h"
#include "serve/serve.h"
#include "timeline/index.h"
#include "timeline/query.h"
#include "timeline/spool.h"

/* model_gen.h's builders this test does not use. */
__attribute__((unused)) static void unused_builders(void)
{
    (void)ev_cc; (void)ev_sample; (void)ev_gc_stats; (void)ev_heap_prof_begin;
    (void)ev_sparks; (void)ev_census; (void)ev_band; (void)ev_cc_band;
    (void)ev_heap; (void)unused_builders;
}

/* A two-capability stream of runs and stops of 50 threads, with a
 * marker every 1,000 pairs: pairs * 2 + pairs / 1000 events. */
static struct evgen_buf stream(unsigned pairs, unsigned salt)
{
    struct evgen_buf b = header();
    uint64_t t[2] = { MS, MS + 7 };
    for (unsigned i = 0; i < pairs; i++) {
        unsigned c = (i / 2000) % 2;
        if (i % 2000 == 0)
            block(&b, (uint16_t)c, t[c]);
        uint32_t th = 1 + (i * 7 + salt) % 50;
        ev_thread(&b, 1, t[c], th);
        ev_stop(&b, t[c] + 3000, th, (uint16_t)(1 + i % 3));
        t[c] += 5000;
        if (i % 1000 == 999)
            ev_text(&b, 58, t[c] - 1000, "step");
    }
    end_block(&b);
    evgen_put(&b, evgen_data_end, 2);
    return b;
}

static void write_file(const char *path, const struct evgen_buf *b)
{
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.new", path);
    FILE *f = fopen(tmp, "wb");
    CHECK(f != NULL);
    if (f == NULL)
        return;
    CHECK_INT((int)fwrite(b->p, 1, b->len, f), ==, (int)b->len);
    CHECK_INT(fclose(f), ==, 0);
    CHECK_INT(rename(tmp, path), ==, 0);    /* replaced whole, as a writer does */
}

/* The JSON number after "key": in s, or -1. */
static long long field(const char *s, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(s, k);
    return p != NULL ? strtoll(p + strlen(k), NULL, 10) : -1;
}

static long long info(struct serve_tl *t, const char *key)
{
    struct strbuf sb = { 0 };
    CHECK_INT(serve_tl_route(t, "info", "", &sb), ==, 200);
    long long v = sb.p != NULL ? field(sb.p, key) : -1;
    sb_free(&sb);
    return v;
}

/* Query while the thread indexes, until it has indexed size bytes of
 * run; the queries made meanwhile. */
static unsigned query_until_indexed(struct serve_tl *t, long long size, long long run)
{
    unsigned queries = 0;
    for (int i = 0; i < 60000; i++) {
        struct strbuf sb = { 0 };
        int st = serve_tl_route(t, "timeline", "t0=0&t1=100000000000&px=300", &sb);
        CHECK(st == 200 || st == 503);
        sb_free(&sb);
        st = serve_tl_route(t, "events", "t0=0&t1=100000000000&n=50", &sb);
        CHECK(st == 200 || st == 503);
        sb_free(&sb);
        queries += 2;
        if (info(t, "run") == run && info(t, "file_indexed") == size)
            return queries;
        usleep(1000);
    }
    CHECK_MSG(0, "the thread never indexed %lld bytes of run %lld", size, run);
    return queries;
}

/* The whole-run timeline and the events' count of path, fed in one
 * thread. */
static void engine(const char *path, struct strbuf *timeline, long long *events)
{
    struct tl_index *ix;
    struct tl_spool *sp;
    CHECK_OK(tl_index_new(&ix, 0));
    CHECK_OK(tl_spool_open_file(&sp, path));
    FILE *f = fopen(path, "rb");
    static char buf[65536];
    size_t n;
    while (f != NULL && (n = fread(buf, 1, sizeof buf, f)) > 0)
        CHECK_OK(tl_index_feed(ix, buf, n));
    if (f != NULL)
        fclose(f);
    struct tl_index_stats s;
    tl_index_stats(ix, &s);
    *events = (long long)s.events;
    CHECK_INT(timeline_route(ix, sp, "timeline", "t0=0&t1=100000000000&px=300", timeline), ==, 200);
    tl_spool_close(sp);
    tl_index_free(ix);
}

static void same_as_engine(struct serve_tl *t, const char *path)
{
    struct strbuf want = { 0 }, have = { 0 };
    long long events;
    engine(path, &want, &events);
    CHECK_INT(info(t, "events"), ==, events);
    CHECK_INT(serve_tl_route(t, "timeline", "t0=0&t1=100000000000&px=300", &have), ==, 200);
    CHECK_MSG(want.len == have.len && memcmp(want.p, have.p, want.len) == 0,
              "the thread's whole-run view differs from the engine's: %.200s / %.200s",
              have.p ? have.p : "", want.p ? want.p : "");
    sb_free(&want);
    sb_free(&have);
}

static char dir[256];

static void indexed_while_queried(void)
{
    char path[400];
    snprintf(path, sizeof path, "%s/a.eventlog", dir);
    struct evgen_buf a = stream(300000, 0);
    write_file(path, &a);
    struct serve_tl *t = serve_tl_new(dir, NULL, 1 << 20);
    CHECK(t != NULL);
    CHECK_OK(serve_tl_set_file(t, path));
    CHECK_OK(serve_tl_catch_up(t, 4096));       /* the source read 4 KiB */
    unsigned q = query_until_indexed(t, (long long)a.len, 1);
    printf("# %u queries while the thread indexed %zu bytes\n", q, a.len);
    same_as_engine(t, path);
    CHECK_INT(info(t, "events"), ==, 300000 * 2 + 300);
    serve_tl_free(t);
    evgen_free(&a);
}

static void replaced_while_indexed(void)
{
    char path[400];
    snprintf(path, sizeof path, "%s/b.eventlog", dir);
    struct evgen_buf a = stream(300000, 1), b = stream(20000, 2);
    write_file(path, &a);
    struct serve_tl *t = serve_tl_new(dir, NULL, 1 << 20);
    CHECK(t != NULL);
    CHECK_OK(serve_tl_set_file(t, path));
    CHECK_OK(serve_tl_catch_up(t, 4096));
    long long run = info(t, "run");
    /* Most often still at it; either way the replacement must hold. */
    printf("# replaced at %lld of %zu bytes indexed\n", info(t, "file_indexed"), a.len);
    /* The file is replaced; the source starts a new run and reads. */
    write_file(path, &b);
    serve_tl_tap(t, NULL, 0);
    serve_tl_tap(t, b.p, 4096);
    query_until_indexed(t, (long long)b.len, run + 1);
    same_as_engine(t, path);
    CHECK_INT(info(t, "events"), ==, 20000 * 2 + 20);
    /* And back, the source reading it all at once. */
    write_file(path, &a);
    serve_tl_tap(t, NULL, 0);
    serve_tl_tap(t, a.p, a.len);
    query_until_indexed(t, (long long)a.len, run + 2);
    same_as_engine(t, path);
    serve_tl_free(t);
    evgen_free(&a);
    evgen_free(&b);
}

static const struct check_case cases[] = {
    CHECK_CASE(indexed_while_queried),
    CHECK_CASE(replaced_while_indexed),
};

int main(int argc, char **argv)
{
    snprintf(dir, sizeof dir, "%s/els-tlthread-XXXXXX",
             getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    int rc = check_main(cases, sizeof cases / sizeof cases[0], argc, argv);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return rc;
}
