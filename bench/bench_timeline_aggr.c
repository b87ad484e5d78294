/*
 * bench_timeline_aggr.c: the memory the timeline's aggregates hold
 * (tools/timeline/aggr.h: heap censuses, spans, cost-centre ticks) after
 * a long profiled run, for bench_timeline_aggr.sh.
 *
 *   bench_timeline_aggr gen FILE BYTES
 *       a synthetic profiled run of about BYTES in GHC 9.0.2's format
 *       (the header of tests/data/ghc-9.0.2-N2.eventlog): 2 caps running
 *       300 threads in turn, each run a "request start"/"request end"
 *       span (1 in 8 a "db begin"/"db stop" inside it), a -hc census every
 *       100 ms of 60 of 3000 cost-centre stacks, a time-profiler tick
 *       every 1 ms per cap from 5000 stacks (1 in 10 IDLE, 1 in 20 GC).
 *   bench_timeline_aggr run FILE
 *       index FILE where it lies (one pass) and print what the aggregates
 *       hold (memory, side files, counts), the index's memory, the peak
 *       RSS, and the latency of kind=heap, durations, profile over the
 *       whole run and a 1 s window.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "timeline/aggr.h"
#include "timeline/index.h"
#include "timeline/query.h"
#include "timeline/spool.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

struct buf {
    uint8_t *p;
    size_t len;
    uint64_t t, t_start;
};

#define BLOCK (2u << 20)
static FILE *out;
static uint64_t written;
static uint64_t rnd = 88172645463325252ull;

static uint64_t next(void)
{
    rnd ^= rnd << 13;
    rnd ^= rnd >> 7;
    rnd ^= rnd << 17;
    return rnd;
}

static void put16(uint8_t *p, uint16_t v) { p[0] = v >> 8; p[1] = (uint8_t)v; }
static void put32(uint8_t *p, uint32_t v) { put16(p, v >> 16); put16(p + 2, (uint16_t)v); }
static void put64(uint8_t *p, uint64_t v) { put32(p, v >> 32); put32(p + 4, (uint32_t)v); }

static void flush(struct buf *b, uint16_t cap)
{
    if (b->len <= 24)
        return;
    put16(b->p, 18);
    put64(b->p + 2, b->t_start);
    put32(b->p + 10, (uint32_t)b->len);
    put64(b->p + 14, b->t);
    put16(b->p + 22, cap);
    fwrite(b->p, 1, b->len, out);
    written += b->len;
    b->len = 24;
    b->t_start = b->t;
}

/* An event of payload bytes (variable: size prefixed). */
static uint8_t *ev(struct buf *b, uint16_t cap, uint16_t tag, uint64_t t,
                   size_t payload, int var)
{
    if (b->len + 12 + payload > BLOCK)
        flush(b, cap);
    uint8_t *p = b->p + b->len;
    put16(p, tag);
    put64(p + 2, t);
    if (var)
        put16(p + 10, (uint16_t)payload);
    b->len += 10 + (var ? 2 : 0) + payload;
    if (t > b->t)
        b->t = t;
    return p + 10 + (var ? 2 : 0);
}

static void marker(struct buf *b, uint16_t cap, uint64_t t, const char *s)
{
    size_t n = strlen(s);
    memcpy(ev(b, cap, 58, t, n, 1), s, n);
}

static void stack(uint8_t *p, uint32_t s, unsigned depth)
{
    p[0] = (uint8_t)depth;
    for (unsigned i = 0; i < depth; i++)
        put32(p + 1 + 4 * i, 1 + (s * 7 + i * 131) % 2000);
}

static int gen(const char *path, uint64_t bytes)
{
    char hpath[4096];
    const char *src = getenv("ELS_TOP_SRCDIR");
    snprintf(hpath, sizeof hpath, "%s/tests/data/ghc-9.0.2-N2.eventlog", src ? src : ".");
    FILE *h = fopen(hpath, "rb");
    if (!h) {
        fprintf(stderr, "bench_timeline_aggr: %s: %s\n", hpath, strerror(errno));
        return 1;
    }
    static uint8_t hb[1 << 16];
    size_t hn = fread(hb, 1, sizeof hb, h), hdr = 0;
    fclose(h);
    for (size_t i = 0; i + 4 <= hn && !hdr; i++)
        if (!memcmp(hb + i, "datb", 4))
            hdr = i + 4;
    out = fopen(path, "wb");
    if (!hdr || !out)
        return 1;
    fwrite(hb, 1, hdr, out);
    written = hdr;
    struct buf caps[3];
    for (int c = 0; c < 3; c++) {
        caps[c].p = malloc(BLOCK + 4096);
        caps[c].len = 24;
        caps[c].t = caps[c].t_start = 1000000;
    }
    struct buf *g = &caps[2];       /* the global lane */
    for (uint16_t c = 0; c < 2; c++)  /* the caps exist (CAP_CREATE) */
        put16(ev(g, 0xffff, 45, g->t, 2, 0), c);
    /* Cost centres: 2000 of the program's, then IDLE, GC. */
    for (uint32_t id = 1; id <= 2002; id++) {
        char l[32], m[32];
        snprintf(l, sizeof l, id == 2001 ? "IDLE" : id == 2002 ? "GC" : "fn%u", id);
        snprintf(m, sizeof m, id == 2001 ? "IDLE" : id == 2002 ? "GC" : "Mod%u", id % 50);
        size_t ln = strlen(l), mn = strlen(m);
        uint8_t *p = ev(g, 0xffff, 161, g->t, 4 + ln + 1 + mn + 1 + 4 + 1, 1);
        put32(p, id);
        memcpy(p + 4, l, ln + 1);
        memcpy(p + 5 + ln, m, mn + 1);
        memcpy(p + 6 + ln + mn, "x:1", 4);
        p[10 + ln + mn] = 0;
    }
    uint8_t *p = ev(g, 0xffff, 160, g->t, 1 + 8 + 4 + 7, 1);
    p[0] = 0;
    put64(p + 1, 100000000);
    put32(p + 9, 1);
    memset(p + 13, 0, 7);
    uint64_t next_census = 100000000, era = 0, next_tick[2] = { 1000000, 1000000 };
    while (written < bytes) {
        int c = caps[0].t <= caps[1].t ? 0 : 1;
        struct buf *b = &caps[c];
        uint64_t t = b->t;
        if (t >= next_census) {
            if (g->t < t)
                g->t = t;
            put64(ev(g, 0xffff, 162, g->t, 8, 0), ++era);
            for (unsigned k = 0; k < 60; k++) {
                uint32_t s = (uint32_t)(k * 50 + era % 50);
                p = ev(g, 0xffff, 163, g->t, 1 + 8 + 1 + 4 * 4, 1);
                p[0] = 0;
                put64(p + 1, 1000 * (k + 1) + era * (k == 3 ? 64 : 1));
                stack(p + 9, s, 4);
            }
            put64(ev(g, 0xffff, 165, g->t, 8, 0), era);
            next_census += 100000000;
            continue;
        }
        while (next_tick[c] <= t) {
            uint64_t x = next();
            p = ev(g, 0xffff, 167, next_tick[c] > g->t ? next_tick[c] : g->t, 4 + 8 + 1 + 4 * 8, 1);
            memset(p, 0, 4 + 8 + 1 + 4 * 8);
            put32(p, (uint32_t)c);
            put64(p + 4, next_tick[c] / 1000000);
            if (x % 10 == 0 || x % 20 == 1) {
                p[12] = 1;
                put32(p + 13, x % 10 == 0 ? 2001 : 2002);
            } else {
                stack(p + 12, (uint32_t)(x % 5000), 2 + (unsigned)(x >> 8) % 7);
            }
            next_tick[c] += 1000000;
        }
        uint64_t x = next();
        uint32_t th = 1 + (uint32_t)(x % 300);
        put32(ev(b, (uint16_t)c, 1, t, 4, 0), th);
        marker(b, (uint16_t)c, t + 100, "request start");
        t += 2000 + x % 20000;
        if (x % 8 == 0) {
            marker(b, (uint16_t)c, t, "db begin");
            t += 500 + (x >> 12) % 5000;
            marker(b, (uint16_t)c, t, "db stop");
        }
        marker(b, (uint16_t)c, t + 100, "request end");
        p = ev(b, (uint16_t)c, 2, t + 200, 10, 0);
        put32(p, th);
        put16(p + 4, 3);
        put32(p + 6, 0);
        b->t = t + 500 + (x >> 20) % 3000;
    }
    for (int c = 0; c < 3; c++) {
        flush(&caps[c], c == 2 ? 0xffff : (uint16_t)c);
        free(caps[c].p);
    }
    uint8_t end[2] = { 0xff, 0xff };
    fwrite(end, 1, 2, out);
    return fclose(out) ? 1 : 0;
}

static void timed(struct tl_index *ix, struct tl_spool *sp, const char *name,
                  const char *kind, const char *qs)
{
    struct strbuf sb = { 0 };
    double t = now_ms();
    int st = timeline_route(ix, sp, kind, qs, &sb);
    double ms = now_ms() - t;
    if (st != 200) {
        fprintf(stderr, "bench_timeline_aggr: %s %s: %d %.*s\n", kind, qs, st,
                (int)(sb.len > 200 ? 200 : sb.len), sb.p);
        exit(1);
    }
    printf("| %-34s | %9.1f | %10zu |\n", name, ms, sb.len);
    sb_free(&sb);
}

static int run(const char *path)
{
    struct tl_index *ix;
    struct tl_spool *sp;
    if (tl_index_new(&ix, 0) < 0 || tl_spool_open_file(&sp, path) < 0) {
        fprintf(stderr, "bench_timeline_aggr: %s: cannot open\n", path);
        return 1;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 1;
    static char buf[1 << 20];
    double t = now_ms();
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        if (tl_index_feed(ix, buf, (size_t)n) < 0) {
            fprintf(stderr, "bench_timeline_aggr: %s\n", tl_index_error(ix));
            return 1;
        }
    close(fd);
    double index_ms = now_ms() - t;
    struct tl_index_stats s;
    tl_index_stats(ix, &s);
    struct tl_aggr_stats a;
    tl_aggr_stats(tl_index_aggr(ix), &a);
    printf("file: %s, %.2f GB, %llu events, %.1f s of run; index %.0f ms\n", path,
           s.bytes / 1e9, (unsigned long long)s.events, (s.t_last - s.t_first) / 1e9,
           index_ms);
    printf("aggregates: %.2f MiB in memory, %.1f MiB in side files; %llu censuses "
           "(%llu band samples, %llu bands), %llu spans of %llu names, %llu ticks "
           "of %llu stacks\n", a.mem_bytes / 1048576.0, a.disk_bytes / 1048576.0,
           (unsigned long long)a.censuses, (unsigned long long)a.band_samples,
           (unsigned long long)a.bands, (unsigned long long)a.spans,
           (unsigned long long)a.span_names, (unsigned long long)a.ticks,
           (unsigned long long)a.stacks);
    printf("index memory (aggregates included): %.1f MiB\n\n", s.mem_bytes / 1048576.0);
    char w1[96];
    uint64_t mid = s.t_first + (s.t_last - s.t_first) / 2;
    snprintf(w1, sizeof w1, "t0=%llu&t1=%llu", (unsigned long long)mid,
             (unsigned long long)(mid + 1000000000ull));
    char q[160];
    printf("| query                              | ms        | JSON bytes |\n");
    printf("|------------------------------------|----------:|-----------:|\n");
    timed(ix, sp, "heap, whole run, 32 bands", "heap", "px=1500");
    timed(ix, sp, "heap growth, whole run, 32 bands", "heap", "px=1500&order=growth");
    snprintf(q, sizeof q, "%s&px=1500", w1);
    timed(ix, sp, "heap, 1 s", "heap", q);
    timed(ix, sp, "durations, whole run", "durations", "");
    timed(ix, sp, "durations, 1 s", "durations", w1);
    timed(ix, sp, "profile tree, whole run", "profile", "");
    snprintf(q, sizeof q, "%s&format=speedscope", w1);
    timed(ix, sp, "profile speedscope, 1 s", "profile", q);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("\npeak RSS: %.1f MiB\n", ru.ru_maxrss / 1024.0);
    tl_spool_close(sp);
    tl_index_free(ix);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "gen"))
        return gen(argv[2], strtoull(argv[3], NULL, 10));
    if (argc == 3 && !strcmp(argv[1], "run"))
        return run(argv[2]);
    fprintf(stderr, "usage: bench_timeline_aggr gen FILE BYTES\n"
                    "       bench_timeline_aggr run FILE\n");
    return 2;
}
