/*
 * test_aggr.c: the aggregates' side files (tools/timeline/side.h) past
 * the memory page: records spilled to an unlinked file read back whole,
 * windows over keys out of order, and over intervals (the spans'
 * records), answered as a brute-force scan answers them, and a file that cannot be written counted as lost, not kept as a
 * hole.  (The aggregates themselves are checked on real runs against
 * ghc-events by test_timeline_aggr.sh.)
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "timeline/side.h"

struct rec { uint64_t key, val; };

struct sum { uint64_t n, val, last_i; int order_ok; };

static int add(void *ctx, uint64_t i, const void *r)
{
    struct sum *s = ctx;
    struct rec x;
    memcpy(&x, r, sizeof x);
    CHECK_U64(x.val, ==, i * 7 + 1);    /* the record read is the one written */
    if (s->n && i <= s->last_i)
        s->order_ok = 0;
    s->last_i = i;
    s->n++;
    s->val += x.val;
    return 0;
}

static size_t entries(const char *dir)
{
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

static void side_spill_and_walk(void)
{
    char dir[] = "/tmp/test-aggr-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    setenv("TMPDIR", dir, 1);
    struct tl_side s;
    CHECK_OK(tl_side_init(&s, sizeof(struct rec)));
    enum { N = 3 * TL_SIDE_PAGE + 123 };
    static uint64_t keys[N];
    uint64_t x = 88172645463325252ull;
    for (uint64_t i = 0; i < N; i++) {
        /* rising with jitter: later records may hold earlier keys, as
         * blocks of different caps do */
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        keys[i] = i * 1000 + x % 50000;
        struct rec r = { keys[i], i * 7 + 1 };
        CHECK_OK(tl_side_append(&s, &r));
    }
    CHECK_U64(s.n, ==, N);
    CHECK_U64(tl_side_disk(&s), ==, 3ull * TL_SIDE_PAGE * sizeof(struct rec));
    CHECK_U64(s.lost, ==, 0);
    /* the spill file is unlinked: nothing left behind */
    CHECK_INT(entries(dir), ==, 0);
    static struct rec buf[TL_SIDE_PAGE];
    const uint64_t win[][2] = {
        { 0, UINT64_MAX }, { 0, 0 }, { 4090000, 4100000 }, { 2500000, 9000000 },
        { keys[N - 1], keys[N - 1] }, { 12345678, 12400000 },
    };
    for (size_t w = 0; w < sizeof win / sizeof win[0]; w++) {
        struct sum want = { 0 }, got = { .order_ok = 1 };
        for (uint64_t i = 0; i < N; i++)
            if (keys[i] >= win[w][0] && keys[i] <= win[w][1])
                want.n++, want.val += i * 7 + 1;
        CHECK_OK(tl_side_walk(&s, win[w][0], win[w][1], buf, add, &got));
        CHECK_U64(got.n, ==, want.n);
        CHECK_U64(got.val, ==, want.val);
        CHECK(got.order_ok);
    }
    /* records across the disk and the memory page */
    static struct rec two[TL_SIDE_PAGE];
    CHECK_OK(tl_side_read(&s, 3 * TL_SIDE_PAGE - 10, 20, two));
    for (int i = 0; i < 20; i++)
        CHECK_U64(two[i].val, ==, (3 * TL_SIDE_PAGE - 10 + i) * 7ull + 1);
    CHECK_INT(tl_side_read(&s, N - 1, 2, two), ==, -ERANGE);
    tl_side_fini(&s);
    CHECK_INT(rmdir(dir), ==, 0);
}

static void side_write_error_counted(void)
{
    setenv("TMPDIR", "/nonexistent-test-aggr", 1);
    struct tl_side s;
    CHECK_OK(tl_side_init(&s, sizeof(struct rec)));
    int rc = 0;
    for (uint64_t i = 0; i < TL_SIDE_PAGE + 10; i++) {
        struct rec r = { i, i * 7 + 1 };
        int k = tl_side_append(&s, &r);
        if (k < 0 && !rc)
            rc = k;
    }
    CHECK_INT(rc, ==, -ENOENT);
    /* the page that could not be kept and everything after: lost, and
     * nothing half-kept is read back */
    CHECK_U64(s.lost, ==, TL_SIDE_PAGE + 10);
    CHECK_U64(s.n, ==, 0);
    static struct rec buf[TL_SIDE_PAGE];
    struct sum got = { .order_ok = 1 };
    CHECK_OK(tl_side_walk(&s, 0, UINT64_MAX, buf, add, &got));
    CHECK_U64(got.n, ==, 0);
    tl_side_fini(&s);
}

/* An interval as the spans' records hold one: end (the key), start. */
struct ival { uint64_t end, start; };

struct ovl { uint64_t n, sum; };

static int ovl_add(void *ctx, uint64_t i, const void *r)
{
    struct ovl *o = ctx;
    (void)r;
    o->n++;
    o->sum += i + 1;
    return 0;
}

/* Intervals (end as key, start second): a walk for those overlapping a
 * window finds what a scan finds, the few long ones too (they begin
 * pages before the one they end in). */
static void side_overlap_walk(void)
{
    char dir[] = "/tmp/test-aggr-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    setenv("TMPDIR", dir, 1);
    struct tl_side s;
    CHECK_OK(tl_side_init(&s, sizeof(struct ival)));
    enum { N = 4 * TL_SIDE_PAGE + 77 };
    static struct ival v[N];
    uint64_t x = 2463534242ull;
    for (uint64_t i = 0; i < N; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        uint64_t end = 100000 + i * 1000 + x % 3000;
        uint64_t len = i % 997 == 5 ? end - 1000 : x % 20000;
        v[i] = (struct ival){ end, end - len };
        CHECK_OK(tl_side_append(&s, &v[i]));
    }
    static struct ival buf[TL_SIDE_PAGE];
    const uint64_t win[][2] = {
        { 0, UINT64_MAX }, { 0, 500 }, { 150000, 150000 }, { 2000000, 2100000 },
        { 5000000, 6000000 }, { v[N - 1].end, UINT64_MAX }, { 3000000, 3000000 },
    };
    for (size_t w = 0; w < sizeof win / sizeof win[0]; w++) {
        struct ovl want = { 0 }, got = { 0 };
        for (uint64_t i = 0; i < N; i++)
            if (v[i].end >= win[w][0] && v[i].start <= win[w][1])
                want.n++, want.sum += i + 1;
        CHECK_OK(tl_side_walk_overlap(&s, win[w][0], win[w][1], buf, ovl_add, &got));
        CHECK_U64(got.n, ==, want.n);
        CHECK_U64(got.sum, ==, want.sum);
    }
    tl_side_fini(&s);
    CHECK_INT(rmdir(dir), ==, 0);
}

static const struct check_case cases[] = {
    CHECK_CASE(side_spill_and_walk),
    CHECK_CASE(side_write_error_counted),
    CHECK_CASE(side_overlap_walk),
};

CHECK_MAIN(cases)
