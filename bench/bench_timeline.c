/*
 * bench_timeline.c: the timeline engine's figures (tools/timeline) on a
 * large eventlog, for bench_timeline.sh.
 *
 *   bench_timeline gen FILE BYTES [THREADS [CAPS]]
 *       write a synthetic eventlog of about BYTES in GHC 9.0.2's format:
 *       the header of tests/data/ghc-9.0.2-N2.eventlog (a real RTS's),
 *       then per-cap blocks of 2 MiB like the RTS's buffers: THREADS
 *       (300) labelled threads run in turn on CAPS (2) caps, about one
 *       event every two microseconds per cap (running, stopping for a reason,
 *       user messages), a collection every 50 ms on every cap with
 *       allocation and heap figures, a marker every 100 ms.
 *   bench_timeline run FILE [PX [BINS]]
 *       index FILE where it lies (one pass), then time the queries a
 *       page makes: the whole run, 10 s, 1 s, 300 ms, 100 ms and 1 ms
 *       windows (timeline at PX, 1500, pixels; the events of a 1 ms and
 *       a 1 s window; the figures of a 300 ms, 1 s and the whole run's
 *       window), 9 positions each; print index time (wall and CPU),
 *       median and worst latency per query (wall and CPU), the level
 *       that answered, and the peak RSS.  With BINS, a pyramid that
 *       coarse (64 bins make a 2-minute file's bins as wide as the
 *       default's after two days of a live program) and the windows the
 *       chunk summaries answer.
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

#include "timeline/index.h"
#include "timeline/query.h"
#include "timeline/spool.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* This process's CPU time: on a shared, loaded machine the wall clock
 * says as much about the neighbours as about the code. */
static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ------------------------------------------------------------------------
 * gen
 * ------------------------------------------------------------------------ */

struct out {
    FILE *f;
    uint64_t written;
};

struct capbuf {
    uint8_t *p;
    size_t len;
    uint64_t t, t_start;
    uint32_t running;
};

#define BLOCK (2u << 20)

static void put16(uint8_t *p, uint16_t v) { p[0] = v >> 8; p[1] = (uint8_t)v; }
static void put32(uint8_t *p, uint32_t v) { put16(p, v >> 16); put16(p + 2, (uint16_t)v); }
static void put64(uint8_t *p, uint64_t v) { put32(p, v >> 32); put32(p + 4, (uint32_t)v); }

static uint8_t *ev(struct capbuf *c, uint16_t tag, uint64_t t, size_t payload)
{
    uint8_t *p = c->p + c->len;
    put16(p, tag);
    put64(p + 2, t);
    c->len += 10 + payload;
    return p + 10;
}

static void flush_block(struct out *o, struct capbuf *c, uint16_t cap)
{
    if (c->len <= 24)
        return;
    put16(c->p, 18);
    put64(c->p + 2, c->t_start);
    put32(c->p + 10, (uint32_t)c->len);
    put64(c->p + 14, c->t);
    put16(c->p + 22, cap);
    fwrite(c->p, 1, c->len, o->f);
    o->written += c->len;
    c->len = 24;
    c->t_start = c->t;
}

static void text_ev(struct capbuf *c, uint16_t tag, uint64_t t, const char *s)
{
    size_t n = strlen(s);
    uint8_t *p = ev(c, tag, t, 2 + n);
    put16(p, (uint16_t)n);
    memcpy(p + 2, s, n);
}

static int gen(const char *path, uint64_t bytes, unsigned nthreads, unsigned ncaps)
{
    char hpath[4096];
    const char *src = getenv("ELS_TOP_SRCDIR");
    snprintf(hpath, sizeof hpath, "%s/tests/data/ghc-9.0.2-N2.eventlog",
             src ? src : ".");
    FILE *h = fopen(hpath, "rb");
    if (!h) {
        fprintf(stderr, "bench_timeline: %s: %s\n", hpath, strerror(errno));
        return 1;
    }
    static uint8_t hb[1 << 16];
    size_t hn = fread(hb, 1, sizeof hb, h);
    fclose(h);
    size_t hdr = 0;
    for (size_t i = 0; i + 4 <= hn; i++)
        if (!memcmp(hb + i, "datb", 4)) {
            hdr = i + 4;
            break;
        }
    if (!hdr)
        return 1;
    struct out o = { .f = fopen(path, "wb") };
    if (!o.f)
        return 1;
    fwrite(hb, 1, hdr, o.f);
    o.written = hdr;
    struct capbuf *caps = calloc(ncaps, sizeof *caps);
    for (unsigned c = 0; c < ncaps; c++) {
        caps[c].p = malloc(BLOCK + 4096);
        caps[c].len = 24;
        caps[c].t = caps[c].t_start = 1000000 + c * 137;
    }
    /* the threads, created and labelled on cap 0 */
    for (uint32_t th = 1; th <= nthreads; th++) {
        struct capbuf *c = &caps[0];
        put32(ev(c, 0, c->t, 4), th);
        char label[32];
        snprintf(label, sizeof label, "worker-%u", th);
        size_t n = strlen(label);
        uint8_t *p = ev(c, 44, c->t, 2 + 4 + n);
        put16(p, (uint16_t)(4 + n));
        put32(p + 2, th);
        memcpy(p + 6, label, n);
        c->t += 500;
    }
    uint64_t x = 88172645463325252ull, next_gc = 50000000, next_marker = 100000000;
    uint64_t alloc[64] = { 0 };
    unsigned marker_n = 0;
    while (o.written < bytes) {
        /* advance the cap that is furthest behind */
        unsigned c = 0;
        for (unsigned k = 1; k < ncaps; k++)
            if (caps[k].t < caps[c].t)
                c = k;
        struct capbuf *b = &caps[c];
        if (b->len > BLOCK - 256)
            flush_block(&o, b, (uint16_t)c);
        if (b->t >= next_gc) {
            /* every cap stops for the collection: cap c leads it */
            for (unsigned k = 0; k < ncaps; k++) {
                struct capbuf *q = &caps[k];
                if (q->len > BLOCK - 256)
                    flush_block(&o, q, (uint16_t)k);
                uint64_t t = next_gc > q->t ? next_gc : q->t;
                if (q->running) {
                    uint8_t *p = ev(q, 2, t, 10);
                    put32(p, q->running);
                    put16(p + 4, 1);      /* heap overflow */
                    put32(p + 6, 0);
                    q->running = 0;
                }
                ev(q, 9, t + 1000, 0);
                x ^= x << 13; x ^= x >> 7; x ^= x << 17;
                uint64_t pause = 200000 + x % 800000;
                alloc[k] += 4u << 20;
                uint8_t *p = ev(q, 49, t + pause - 100, 12);
                put32(p, 0);
                put64(p + 4, alloc[k]);
                ev(q, 10, t + pause, 0);
                if (k == c) {
                    p = ev(q, 50, t + pause + 10, 12);
                    put32(p, 0);
                    put64(p + 4, 64ull << 20);
                    p = ev(q, 51, t + pause + 20, 12);
                    put32(p, 0);
                    put64(p + 4, (20ull << 20) + x % (8u << 20));
                }
                q->t = t + pause + 100;
            }
            next_gc += 50000000;
            continue;
        }
        if (b->t >= next_marker) {
            char m[48];
            snprintf(m, sizeof m, "request %u", ++marker_n);
            text_ev(b, 58, b->t, m);
            next_marker += 100000000;
        }
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        uint32_t th = 1 + (uint32_t)(x % nthreads);
        put32(ev(b, 1, b->t, 4), th);
        b->running = th;
        b->t += 600 + x % 1400;
        if (x % 5 == 0)
            text_ev(b, 19, b->t, "handled");
        b->t += 600 + (x >> 8) % 3000;
        uint8_t *p = ev(b, 2, b->t, 10);
        put32(p, th);
        static const uint16_t why[] = { 3, 7, 7, 11, 9, 3, 7, 16 };
        put16(p + 4, why[(x >> 16) % 8]);
        put32(p + 6, 0);
        b->running = 0;
        b->t += 400 + (x >> 24) % 1600;
    }
    for (unsigned c = 0; c < ncaps; c++) {
        flush_block(&o, &caps[c], (uint16_t)c);
        free(caps[c].p);
    }
    uint8_t end[2] = { 0xff, 0xff };
    fwrite(end, 1, 2, o.f);
    free(caps);
    return fclose(o.f) ? 1 : 0;
}

/* ------------------------------------------------------------------------
 * run
 * ------------------------------------------------------------------------ */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void timed(struct tl_index *ix, struct tl_spool *sp, const char *name,
                  const char *kind, uint64_t first, uint64_t last, uint64_t span,
                  unsigned px)
{
    double ms[9], cpu[9];
    size_t bytes = 0;
    const char *mode = "";
    for (int i = 0; i < 9; i++) {
        uint64_t t0 = span >= last - first ? first
            : first + (last - first - span) / 10 * (uint64_t)(i + 1);
        uint64_t t1 = span >= last - first ? last : t0 + span;
        char qs[128];
        snprintf(qs, sizeof qs, "t0=%llu&t1=%llu&px=%u&n=1000",
                 (unsigned long long)t0, (unsigned long long)t1, px);
        struct strbuf sb = { 0 };
        double t = now_ms(), c = cpu_ms();
        int st = timeline_route(ix, sp, kind, qs, &sb);
        ms[i] = now_ms() - t;
        cpu[i] = cpu_ms() - c;
        if (st != 200) {
            fprintf(stderr, "bench_timeline: %s %s: %d %.*s\n", kind, qs, st,
                    (int)(sb.len > 200 ? 200 : sb.len), sb.p);
            exit(1);
        }
        bytes = sb.len;
        if (sb.p && strstr(sb.p, "\"mode\":\"raw\""))
            mode = "raw";
        else if (sb.p && strstr(sb.p, "\"mode\":\"chunks\""))
            mode = "chunks";
        else if (sb.p && strstr(sb.p, "\"mode\":\"summary\""))
            mode = "summary";
        else if (sb.p && strstr(sb.p, "\"exact\":true"))
            mode = "exact";
        else if (sb.p && strstr(sb.p, "\"exact\":false"))
            mode = "estimate";
        sb_free(&sb);
    }
    qsort(ms, 9, sizeof ms[0], cmp_d);
    qsort(cpu, 9, sizeof cpu[0], cmp_d);
    printf("| %-26s | %8.1f | %8.1f | %8.1f | %8.1f | %-8s | %9zu |\n", name,
           ms[4], ms[8], cpu[4], cpu[8], mode, bytes);
}

/* bins 0: the default pyramid and every query; else a pyramid of that
 * many bins (as coarse, for this file, as the default's is after a day or
 * two of a live program) and the queries the chunk summaries answer. */
static int run(const char *path, unsigned px, unsigned bins)
{
    struct tl_index *ix;
    struct tl_spool *sp;
    if (tl_index_new(&ix, bins) < 0 || tl_spool_open_file(&sp, path) < 0) {
        fprintf(stderr, "bench_timeline: %s: cannot open\n", path);
        return 1;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 1;
    /* one pass, through a 1 MiB buffer: memory does not follow the size */
    static char buf[1 << 20];
    double t = now_ms(), c = cpu_ms();
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        if (tl_index_feed(ix, buf, (size_t)n) < 0) {
            fprintf(stderr, "bench_timeline: %s\n", tl_index_error(ix));
            return 1;
        }
    close(fd);
    double index_ms = now_ms() - t, index_cpu = cpu_ms() - c;
    struct tl_index_stats s;
    tl_index_stats(ix, &s);
    printf("file: %s, %.2f GB, %llu events, %llu caps, %llu chunks, %.1f s of run\n",
           path, s.bytes / 1e9, (unsigned long long)s.events,
           (unsigned long long)s.caps, (unsigned long long)s.chunks,
           (s.t_last - s.t_first) / 1e9);
    printf("index: %.0f ms wall, %.0f ms CPU (%.0f MB/s, %.1f M events/s of "
           "CPU), index memory %.1f MiB, bin %llu ns\n\n",
           index_ms, index_cpu, s.bytes / 1e3 / index_ms,
           s.events / 1e3 / index_cpu, s.mem_bytes / 1048576.0,
           (unsigned long long)s.bin_width);
    printf("| query (9 positions)        | median ms | worst ms | med. CPU | worst CPU | mode     | JSON bytes |\n");
    printf("|----------------------------|----------:|---------:|---------:|----------:|----------|-----------:|\n");
    uint64_t f = s.t_first, l = s.t_last;
    if (bins) {
        timed(ix, sp, "timeline, whole run", "timeline", f, l, l - f, px);
        timed(ix, sp, "timeline, 10 s", "timeline", f, l, 10000000000ull, px);
        timed(ix, sp, "timeline, 1 s", "timeline", f, l, 1000000000ull, px);
        timed(ix, sp, "timeline, 300 ms", "timeline", f, l, 300000000ull, px);
        timed(ix, sp, "timeline, 100 ms", "timeline", f, l, 100000000ull, px);
        timed(ix, sp, "range, 300 ms", "range", f, l, 300000000ull, px);
        timed(ix, sp, "range, 1 s", "range", f, l, 1000000000ull, px);
        goto done;
    }
    timed(ix, sp, "timeline, whole run", "timeline", f, l, l - f, px);
    timed(ix, sp, "timeline, 10 s", "timeline", f, l, 10000000000ull, px);
    timed(ix, sp, "timeline, 1 s", "timeline", f, l, 1000000000ull, px);
    timed(ix, sp, "timeline, 300 ms", "timeline", f, l, 300000000ull, px);
    timed(ix, sp, "timeline, 100 ms", "timeline", f, l, 100000000ull, px);
    timed(ix, sp, "timeline, 1 ms", "timeline", f, l, 1000000ull, px);
    timed(ix, sp, "events, 1 ms (first 1000)", "events", f, l, 1000000ull, px);
    timed(ix, sp, "events, 1 s (first 1000)", "events", f, l, 1000000000ull, px);
    timed(ix, sp, "range, 300 ms", "range", f, l, 300000000ull, px);
    timed(ix, sp, "range, 1 s", "range", f, l, 1000000000ull, px);
    timed(ix, sp, "range, whole run", "range", f, l, l - f, px);
    timed(ix, sp, "pauses, whole run (10)", "pauses", f, l, l - f, px);
    timed(ix, sp, "pauses, 1 s (10)", "pauses", f, l, 1000000000ull, px);
done:;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("\npeak RSS: %.1f MiB\n", ru.ru_maxrss / 1024.0);
    tl_spool_close(sp);
    tl_index_free(ix);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "gen"))
        return gen(argv[2], strtoull(argv[3], NULL, 10),
                   argc > 4 ? (unsigned)atoi(argv[4]) : 300,
                   argc > 5 ? (unsigned)atoi(argv[5]) : 2);
    if (argc >= 3 && !strcmp(argv[1], "run"))
        return run(argv[2], argc > 3 ? (unsigned)atoi(argv[3]) : 1500,
                   argc > 4 ? (unsigned)atoi(argv[4]) : 0);
    fprintf(stderr, "usage: bench_timeline gen FILE BYTES [THREADS [CAPS]]\n"
                    "       bench_timeline run FILE [PX [BINS]]\n");
    return 2;
}
