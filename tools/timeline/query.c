/*
 * query.c: windows, event lists and figures from the index and the
 * stream's bytes (see query.h for what each answer holds): the level
 * that answers a window (Note [Choosing a level]), the summaries' lanes
 * and figures from the pyramid and the chunks, and the HTTP face.  The
 * replay is in query_replay.c, the JSON writers in query_emit.c.
 */
#include "timeline/query_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eventlog-sink/parse.h"
#include "timeline/aggr.h"
#include "timeline/aggr_impl.h"     /* tl_aggr_qs_get: one query-string reader */
#include "timeline/pauses.h"

/* ------------------------------------------------------------------------
 * Estimates and the summary
 * ------------------------------------------------------------------------ */

static uint64_t estimate(struct tl_index *ix, uint64_t t0, uint64_t t1)
{
    uint64_t n = 0;
    unsigned nc = tl_index_ncaps(ix);
    for (unsigned i = 0; i <= nc; i++) {
        const struct tl_lane *l = tl_index_lane(ix, i < nc ? i : TL_LANE_GLOBAL);
        for (size_t k = tl_lane_seek(l, t0); k < l->n && l->v[k].t_first <= t1; k++)
            n += l->v[k].events;
    }
    return n;
}

/* Sum the pyramid's bins over [s, e) with each bin weighted by its
 * overlap: fn(bin index, fraction). */
static void bins_over(const struct tl_index *ix, uint64_t s, uint64_t e,
                      void (*fn)(void *, size_t, double), void *arg)
{
    uint64_t bw = tl_pyr_width(ix);
    size_t used = tl_pyr_used(ix);
    for (uint64_t b = s / bw; b < used && b * bw < e; b++) {
        uint64_t lo = b * bw, hi = lo + bw;
        uint64_t a = s > lo ? s : lo, z = e < hi ? e : hi;
        if (z > a)
            fn(arg, (size_t)b, (double)(z - a) / (double)bw);
    }
}

struct pxsum {
    const struct tl_capbin *cb;
    double run, gc, created, converted;
    uint32_t thread;
    double pool;
    bool pool_set;
};

static void pxsum_fn(void *arg, size_t b, double f)
{
    struct pxsum *s = arg;
    const struct tl_capbin *x = &s->cb[b];
    s->run += (double)x->run_ns * f;
    s->gc += (double)x->gc_ns * f;
    s->created += x->sparks_created * f;
    s->converted += x->sparks_converted * f;
    s->thread = x->thread_end;
    if (x->pad_) {
        s->pool = x->spark_pool;
        s->pool_set = true;
    }
}

/* ------------------------------------------------------------------------
 * Chunk summaries (see Note [Chunk summaries] in pyramid.c)
 * ------------------------------------------------------------------------ */

/* The stretch of the cap's time chunk i of lane l covers: [*s, *e). */
static void chunk_span(const struct tl_lane *l, size_t i,
                       const struct tl_capstate *cs, uint64_t *s, uint64_t *e)
{
    *s = l->v[i].t_first;
    *e = i + 1 < l->n ? l->v[i + 1].t_first : cs->since;
    if (*e < *s)
        *e = *s;
}

/* Per pixel of one cap, from its chunks: HEC fractions running and in
 * GC, sparks, and the thread whose chunk ran it longest there. */
struct chunkpx {
    double *run, *gc, *created, *converted, *best;
    uint32_t *thread;
};

static void chunk_pixels(const struct tl_index *ix, unsigned c,
                         const struct win *w, struct chunkpx *x)
{
    const struct tl_lane *l = tl_index_lane(ix, c);
    const struct tl_capstate *cs = tl_index_capstate(ix, c);
    for (size_t i = tl_lane_seek(l, w->t0); i < l->n && l->v[i].t_first <= w->t1; i++) {
        const struct tl_chunk *k = &l->v[i];
        uint64_t s, e;
        chunk_span(l, i, cs, &s, &e);
        if (e <= s)
            continue;
        double dur = (double)(e - s);
        tlq_px_spread(x->run, w, s, e, (double)k->run_ns / dur);
        tlq_px_spread(x->gc, w, s, e, (double)k->gc_ns / dur);
        if (k->sparks_created)
            tlq_px_spread(x->created, w, s, e, k->sparks_created * w->nspp / dur);
        if (k->sparks_converted)
            tlq_px_spread(x->converted, w, s, e, k->sparks_converted * w->nspp / dur);
        if (!k->top_thread)
            continue;
        long pa = tlq_px_of(w, s < w->t0 ? w->t0 : s), pb = tlq_px_of(w, e > w->t1 ? w->t1 : e);
        for (long p = pa < 0 ? 0 : pa; p <= pb; p++) {
            double lo = w->t0 + p * w->nspp, hi = lo + w->nspp;
            double a = (double)s > lo ? (double)s : lo, z = (double)e < hi ? (double)e : hi;
            double v = z > a ? (double)k->top_ns * (z - a) / dur : 0;
            if (v > x->best[p]) {
                x->best[p] = v;
                x->thread[p] = k->top_thread;
            }
        }
    }
}

/* The window's chunk summaries summed: each chunk weighted by the part of
 * its stretch inside [t0, t1], counts taken whole from chunks at least
 * half inside, so exact when t0 and t1 + 1 are chunk boundaries. */
struct chunkfig {
    uint64_t gcs, pause, pmax, alloc;
    double run, gc;
};

static void chunk_figures(const struct tl_index *ix, unsigned c, uint64_t t0,
                          uint64_t t1, struct chunkfig *f)
{
    const struct tl_lane *l = tl_index_lane(ix, c);
    const struct tl_capstate *cs = tl_index_capstate(ix, c);
    uint64_t end = t1 == UINT64_MAX ? t1 : t1 + 1;
    for (size_t i = tl_lane_seek(l, t0); i < l->n && l->v[i].t_first <= t1; i++) {
        const struct tl_chunk *k = &l->v[i];
        uint64_t s, e;
        chunk_span(l, i, cs, &s, &e);
        uint64_t a = s > t0 ? s : t0, z = e < end ? e : end;
        double frac = e > s ? (z > a ? (double)(z - a) / (double)(e - s) : 0)
                            : (s >= t0 && s <= t1);
        if (frac >= 0.5) {
            f->gcs += k->gcs;
            f->pause += k->pause_ns;
            f->pmax = k->pause_max > f->pmax ? k->pause_max : f->pmax;
            f->alloc += k->alloc;
        }
        f->run += (double)k->run_ns * frac;
        f->gc += (double)k->gc_ns * frac;
    }
}

/* The busiest threads by the window's chunks (each chunk's longest
 * runner and its time there, a lower bound on the thread's): appended
 * as [[id,running_ns],...], at most max, busiest first. */
static int cmp_top(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    if (x[1] != y[1])
        return x[1] > y[1] ? -1 : 1;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

static void chunk_busiest(const struct tl_index *ix, unsigned ncaps,
                          const struct win *w, unsigned max, struct strbuf *out)
{
    size_t cap = 1024, n = 0;
    uint64_t *v = calloc(2 * cap, sizeof *v);  /* open addressing: id, ns */
    for (unsigned c = 0; v && c < ncaps; c++) {
        const struct tl_lane *l = tl_index_lane(ix, c);
        for (size_t i = tl_lane_seek(l, w->t0); i < l->n && l->v[i].t_first <= w->t1; i++) {
            const struct tl_chunk *k = &l->v[i];
            if (!k->top_thread || k->t_first < w->t0)
                continue;
            size_t h = (k->top_thread * 2654435761u) & (cap - 1);
            while (v[2 * h] && v[2 * h] != k->top_thread)
                h = (h + 1) & (cap - 1);
            if (!v[2 * h]) {
                if (2 * (n + 1) > cap)
                    continue;       /* full: the rest are not counted */
                n++;
                v[2 * h] = k->top_thread;
            }
            v[2 * h + 1] += k->top_ns;
        }
    }
    size_t m = 0;
    for (size_t i = 0; v && i < cap; i++)
        if (v[2 * i]) {
            v[2 * m] = v[2 * i];
            v[2 * m + 1] = v[2 * i + 1];
            m++;
        }
    if (v)
        qsort(v, m, 2 * sizeof *v, cmp_top);
    sb_puts(out, "[");
    for (size_t i = 0; i < m && i < max; i++)
        sb_printf(out, "%s[%" PRIu64 ",%" PRIu64 "]", i ? "," : "", v[2 * i],
                  v[2 * i + 1]);
    sb_puts(out, "]");
    free(v);
}

enum mode { MODE_RAW, MODE_CHUNKS, MODE_SUMMARY };
static const char *mode_names[] = { "raw", "chunks", "summary" };

/* Note [Choosing a level]
 * ~~~~~~~~~~~~~~~~~~~~~~~
 * A window is replayed when its chunks hold at most the budget's events
 * (exact, and the only level with thread lanes and messages).  Past
 * that, the cheapest level that still gives a datum per pixel: the
 * pyramid when a bin is no wider than a pixel; else the chunk summaries
 * when the window holds more chunks per cap than bins (chunks are then
 * the finer grid) and every seen cap's live chunks reach back to t0
 * (before them the spool dropped the bytes and only the pyramid
 * remembers); else the pyramid after all.  A range (one datum) takes
 * the chunks whenever they are the finer grid.  *res is the level's
 * time step: 1, the bin width, or the window's mean chunk length. */
static enum mode choose_mode(const struct tl_index *ix, uint64_t t0, uint64_t t1,
                             uint64_t est, uint64_t budget, double nspp,
                             bool range, uint64_t *res)
{
    *res = 1;
    if (est <= budget)
        return MODE_RAW;
    uint64_t bw = tl_pyr_width(ix);
    *res = bw;
    if (!range && (double)bw <= nspp)
        return MODE_SUMMARY;
    uint64_t most = 0;
    unsigned nc = tl_index_ncaps(ix);
    for (unsigned c = 0; c < nc; c++) {
        if (!tl_pyr_cap(ix, c))
            continue;
        const struct tl_lane *l = tl_index_lane(ix, c);
        if (l->head == l->n || l->v[l->head].t_first > t0)
            return MODE_SUMMARY;
        size_t i = tl_lane_seek(l, t0), j = i;
        while (j < l->n && l->v[j].t_first <= t1)
            j++;
        if (j - i > most)
            most = j - i;
    }
    uint64_t span = t1 - t0 + 1;
    if (!most || most <= span / bw)
        return MODE_SUMMARY;
    *res = span / most ? span / most : 1;
    return MODE_CHUNKS;
}

static void summary_lanes(struct replay *r, struct tl_index *ix, bool chunks)
{
    const struct win *w = &r->w;
    uint64_t now = 0;
    struct tl_index_stats st;
    tl_index_stats(ix, &st);
    now = st.t_last;
    struct chunkpx cx = { 0 };
    if (chunks) {
        cx.run = calloc(5 * (size_t)w->px, sizeof(double));
        cx.thread = calloc(w->px, sizeof *cx.thread);
        if (!cx.run || !cx.thread)
            chunks = false;         /* out of memory: the pyramid's bins */
        else {
            cx.gc = cx.run + w->px;
            cx.created = cx.gc + w->px;
            cx.converted = cx.created + w->px;
            cx.best = cx.converted + w->px;
        }
    }
    for (unsigned c = 0; c < r->ncaps; c++) {
        const struct tl_capbin *cb = tl_pyr_cap(ix, c);
        struct capr *k = &r->caps[c];
        const struct tl_capstate *cs = tl_index_capstate(ix, c);
        if (!cb)
            continue;
        if (chunks) {
            memset(cx.run, 0, 5 * (size_t)w->px * sizeof(double));
            memset(cx.thread, 0, w->px * sizeof *cx.thread);
            chunk_pixels(ix, c, w, &cx);
        }
        double pool = 0;
        for (unsigned p = 0; p < w->px; p++) {
            uint64_t s = w->t0 + (uint64_t)(p * w->nspp);
            uint64_t e = w->t0 + (uint64_t)((p + 1) * w->nspp);
            if (e > w->t1)
                e = w->t1;
            if (e <= s)
                e = s + 1;
            struct pxsum x = { .cb = cb };
            bins_over(ix, s, e, pxsum_fn, &x);
            if (chunks) {
                double span = (double)(e - s);
                x.run = cx.run[p] * span;
                x.gc = cx.gc[p] * span;
                x.created = cx.created[p];
                x.converted = cx.converted[p];
                x.thread = cx.thread[p];
            }
            /* the state still open at the index's end */
            if (cs->seen && (cs->running || cs->in_gc) && e > cs->since) {
                uint64_t a = s > cs->since ? s : cs->since, z = e < now ? e : now;
                if (z > a) {
                    if (cs->in_gc)
                        x.gc += (double)(z - a);
                    else
                        x.run += (double)(z - a);
                    x.thread = cs->in_gc ? 0 : cs->running;
                }
            }
            double span = (double)(e - s);
            double fr = x.run / span, fg = x.gc / span;
            r->activity[p] += fr;
            r->gc[p] += fg;
            k->created[p] = x.created;
            k->converted[p] = x.converted;
            if (x.pool_set)
                pool = x.pool;
            k->pool[p] = pool;
            if (fr >= 0.99)
                tlq_seg_add(&k->seg, w, s, s + (uint64_t)w->nspp + 1, 0, x.thread);
            else if (fg >= 0.99)
                tlq_seg_add(&k->seg, w, s, s + (uint64_t)w->nspp + 1, 1, 0);
            else if (fr + fg <= 0.01)
                tlq_seg_add(&k->seg, w, s, s + (uint64_t)w->nspp + 1, 2, 0);
            else {
                tlq_seg_flush_cell(&k->seg, w);
                k->seg.cell = p;
                k->seg.cell_ns[0] = (uint64_t)x.run;
                k->seg.cell_ns[1] = (uint64_t)x.gc;
                k->seg.cell_arg = x.thread;
                tlq_seg_flush_cell(&k->seg, w);
            }
        }
        tlq_seg_end(&k->seg, w);
    }
    free(cx.run);
    free(cx.thread);
    /* heap: the last value at or before each pixel's end */
    const struct tl_gbin *g = tl_pyr_global(ix);
    uint64_t bw = tl_pyr_width(ix);
    size_t used = tl_pyr_used(ix);
    double hs = 0, hl = 0;
    size_t b = 0;
    for (unsigned p = 0; p < w->px; p++) {
        uint64_t e = w->t0 + (uint64_t)((p + 1) * w->nspp);
        for (; b < used && b * bw < e; b++) {
            if (g[b].heap_size)
                hs = (double)g[b].heap_size;
            if (g[b].heap_live)
                hl = (double)g[b].heap_live;
        }
        r->heap_size[p] = hs;
        r->heap_live[p] = hl;
    }
}

struct figsum {
    const struct tl_index *ix;
    unsigned c;
    uint64_t gcs, pause, pmax;
    double alloc, run, gc;
};

static void figsum_fn(void *arg, size_t b, double f)
{
    struct figsum *s = arg;
    const struct tl_capbin *x = &tl_pyr_cap(s->ix, s->c)[b];
    /* counts are whole: a bin partly inside counts if its middle is */
    if (f >= 0.5) {
        s->gcs += x->gcs;
        s->pause += x->pause_ns;
        if (x->pause_max > s->pmax)
            s->pmax = x->pause_max;
        s->alloc += (double)x->alloc;
    }
    s->run += (double)x->run_ns * f;
    s->gc += (double)x->gc_ns * f;
}

static int fail(struct strbuf *out, int status, const char *fmt, const char *arg)
{
    char msg[256];
    snprintf(msg, sizeof msg, fmt, arg);
    sb_puts(out, "{\"error\":");
    sb_json_str(out, msg, strlen(msg));
    sb_puts(out, "}");
    return status;
}

static int q_info(struct tl_index *ix, struct tl_spool *sp, struct strbuf *out)
{
    struct tl_index_stats s;
    tl_index_stats(ix, &s);
    struct tl_spool_stats ss;
    tl_spool_stats(sp, &ss);
    sb_printf(out, "{\"t_first\":%" PRIu64 ",\"t_last\":%" PRIu64
              ",\"caps\":%" PRIu64 ",\"events\":%" PRIu64 ",\"bytes\":%" PRIu64
              ",\"bin_ns\":%" PRIu64 ",\"bins\":%" PRIu64 ",\"mem_bytes\":%" PRIu64
              ",\"dropped\":{\"chunks\":%" PRIu64 ",\"events\":%" PRIu64
              ",\"bytes\":%" PRIu64 ",\"t_first\":%" PRIu64 ",\"t_last\":%" PRIu64
              "},\"spool\":{\"base\":%" PRIu64 ",\"end\":%" PRIu64
              ",\"on_disk\":%" PRIu64 ",\"segments_dropped\":%" PRIu64 "}"
              ",\"aggr\":{\"mem_bytes\":%" PRIu64 ",\"disk_bytes\":%" PRIu64
              ",\"censuses\":%" PRIu64 ",\"bands\":%" PRIu64 ",\"spans\":%" PRIu64
              ",\"span_names\":%" PRIu64 ",\"ticks\":%" PRIu64 ",\"stacks\":%" PRIu64 "}}",
              s.t_first, s.t_last, s.caps, s.events, s.bytes, s.bin_width,
              s.bins, s.mem_bytes, s.dropped_chunks, s.dropped_events,
              s.dropped_bytes, s.dropped_t_first, s.dropped_t_last, ss.base,
              ss.end, ss.bytes_on_disk, ss.segments_dropped, s.aggr.mem_bytes,
              s.aggr.disk_bytes, s.aggr.censuses, s.aggr.bands, s.aggr.spans,
              s.aggr.span_names, s.aggr.ticks, s.aggr.stacks);
    return 200;
}

/* Fill r with the window at its level: the events listed, the replay,
 * or the summaries' lanes. */
static int q_fill(struct replay *r, struct tl_index *ix, struct tl_spool *sp,
                  const struct tl_query *q, enum mode mode)
{
    bool raw = mode == MODE_RAW;
    if (q->kind == TL_Q_EVENTS) {
        unsigned n = q->max_events ? q->max_events : 1000;
        r->list_max = n > TL_EVENTS_MAX ? TL_EVENTS_MAX : n;
        /* Within the budget every event of the window is counted; past
         * it the list stops at its end and the total is the estimate. */
        r->full = false;
        r->count_all = raw;
        return tlq_replay_run(r, ix, sp);
    }
    if (raw) {
        tlq_replay_caps_init(r, ix);
        int rc = tlq_replay_run(r, ix, sp);
        tlq_replay_finish(r);
        return rc;
    }
    if (q->kind == TL_Q_TIMELINE)
        summary_lanes(r, ix, mode == MODE_CHUNKS);
    return 0;
}

/* A range's figures: GCs, allocation and HEC time from the replay when
 * raw, else summed from the chunks or the pyramid. */
static void q_range(struct strbuf *out, struct tl_index *ix,
                    const struct tl_query *q, struct replay *r, enum mode mode,
                    uint64_t res)
{
    bool raw = mode == MODE_RAW;
    uint64_t run = 0, gcns = 0, span_all = 0;
    uint64_t gcs = r->gcs, total = r->gc_total, mx = r->gc_max, alloc = r->alloc;
    if (!raw) {
        gcs = total = mx = alloc = 0;
    }
    for (unsigned c = 0; c < r->ncaps; c++) {
        if (!tl_pyr_cap(ix, c))
            continue;
        span_all += q->t1 - q->t0;
        struct figsum f = { .ix = ix, .c = c };
        if (mode == MODE_CHUNKS) {
            struct chunkfig cf = { 0 };
            chunk_figures(ix, c, q->t0, q->t1, &cf);
            f.gcs = cf.gcs;
            f.pause = cf.pause;
            f.pmax = cf.pmax;
            f.alloc = (double)cf.alloc;
            f.run = cf.run;
            f.gc = cf.gc;
        } else {
            bins_over(ix, q->t0, q->t1, figsum_fn, &f);
        }
        if (!raw) {
            gcs += f.gcs;
            total += f.pause;
            mx = f.pmax > mx ? f.pmax : mx;
            alloc += (uint64_t)f.alloc;
        }
        run += (uint64_t)f.run;
        gcns += (uint64_t)f.gc;
    }
    sb_printf(out, "{\"t0\":%" PRIu64 ",\"t1\":%" PRIu64 ",\"exact\":%s,"
              "\"mode\":\"%s\",\"resolution_ns\":%" PRIu64 ","
              "\"gc\":{\"count\":%" PRIu64 ",\"total_ns\":%" PRIu64
              ",\"max_ns\":%" PRIu64 "},\"alloc_bytes\":%" PRIu64,
              q->t0, q->t1, raw ? "true" : "false", mode_names[mode], res,
              gcs, total, mx, alloc);
    if (raw) {
        /* HEC time from the replay: exact */
        run = gcns = 0;
        for (unsigned p = 0; p < r->w.px; p++) {
            run += (uint64_t)(r->activity[p] * r->w.nspp + 0.5);
            gcns += (uint64_t)(r->gc[p] * r->w.nspp + 0.5);
        }
    }
    sb_printf(out, ",\"hec_ns\":{\"run\":%" PRIu64 ",\"gc\":%" PRIu64
              ",\"idle\":%" PRIu64 "}", run, gcns,
              span_all > run + gcns ? span_all - run - gcns : 0);
    if (raw) {
        tlq_put_range_threads(out, ix, r);
        sb_puts(out, "}");
    } else {
        sb_puts(out, ",\"threads\":null}");
    }
}

/* The timeline: its header, the caps' lanes and figures, then the thread
 * lanes from the replay, or without one the window that would replay. */
static void q_timeline(struct strbuf *out, struct tl_index *ix,
                       const struct tl_query *q, struct replay *r,
                       enum mode mode, uint64_t res, uint64_t est,
                       uint64_t budget)
{
    unsigned maxt = q->max_threads ? q->max_threads : TL_THREADS_DEFAULT;
    sb_printf(out, "{\"t0\":%" PRIu64 ",\"t1\":%" PRIu64 ",\"px\":%u,\"ns_per_px\":",
              q->t0, q->t1, r->w.px);
    sb_json_num(out, r->w.nspp);
    sb_printf(out, ",\"mode\":\"%s\",\"resolution_ns\":%" PRIu64
              ",\"events_estimate\":%" PRIu64 ",\"caps\":[",
              mode_names[mode], res, est);
    tlq_put_lanes(out, ix, r);
    if (mode == MODE_RAW) {
        tlq_put_thread_lanes(out, ix, r, maxt);
        return;
    }
    /* thread lanes need a replay: the widest window that would
     * replay here (the page offers to zoom to it), and the threads
     * the chunks say ran most */
    uint64_t span = q->t1 - q->t0 + 1;
    uint64_t narrow = (uint64_t)((double)span * (double)budget / (double)est);
    sb_printf(out, ",\"messages\":null,\"threads\":null,"
              "\"threads_window_ns\":%" PRIu64, narrow);
    if (mode == MODE_CHUNKS) {
        sb_puts(out, ",\"threads_busiest\":");
        chunk_busiest(ix, r->ncaps, &r->w, maxt, out);
    }
    sb_puts(out, "}");
}

int tl_query(struct tl_index *ix, struct tl_spool *sp, const struct tl_query *q,
             struct strbuf *out)
{
    if (q->kind == TL_Q_INFO)
        return q_info(ix, sp, out);
    if (q->t1 < q->t0)
        return fail(out, 400, "t1 is before t0%s", "");
    unsigned px = q->kind == TL_Q_TIMELINE ? q->px : 1;
    if (px < 1 || px > TL_PX_MAX)
        return fail(out, 400, "px must be 1 .. 8192%s", "");
    uint64_t budget = q->raw_budget ? q->raw_budget : TL_RAW_BUDGET_DEFAULT;
    uint64_t est = estimate(ix, q->t0, q->t1);
    struct win w = { .t0 = q->t0, .t1 = q->t1, .px = px };
    w.nspp = (double)(q->t1 - q->t0 + 1) / px;
    uint64_t res;
    enum mode mode = choose_mode(ix, q->t0, q->t1, est, budget, w.nspp,
                                 q->kind == TL_Q_RANGE, &res);
    bool raw = mode == MODE_RAW;
    struct replay r;
    if (tlq_replay_init(&r, ix, &w, raw && q->kind != TL_Q_EVENTS) < 0) {
        tlq_replay_free(&r);
        return fail(out, 500, "out of memory%s", "");
    }
    int rc = q_fill(&r, ix, sp, q, mode);
    if (rc < 0) {
        tlq_replay_free(&r);
        return fail(out, 500, "reading the stream back: %s", strerror(-rc));
    }
    if (q->kind == TL_Q_EVENTS)
        tlq_put_events(out, q, &r, raw, est);
    else if (q->kind == TL_Q_RANGE)
        q_range(out, ix, q, &r, mode, res);
    else
        q_timeline(out, ix, q, &r, mode, res, est, budget);
    tlq_replay_free(&r);
    return out->failed ? 500 : 200;
}

/* ------------------------------------------------------------------------
 * The HTTP face
 * ------------------------------------------------------------------------ */

static int qs_u64(const char *qs, const char *key, uint64_t *out, bool *given)
{
    char v[32];
    *given = tl_aggr_qs_get(qs, key, v, sizeof v);
    if (!*given)
        return 0;
    if (!*v || strspn(v, "0123456789") != strlen(v) || strlen(v) > 19)
        return -1;
    *out = strtoull(v, NULL, 10);
    return 0;
}

/* kind=pauses: t0, t1 (the whole run when left out), n. */
static int route_pauses(struct tl_index *ix, const char *qs, struct strbuf *out)
{
    struct tl_index_stats st;
    tl_index_stats(ix, &st);
    uint64_t t0 = st.t_first, t1 = st.t_last, n = 10;
    bool g;
    if (qs_u64(qs, "t0", &t0, &g) < 0 || qs_u64(qs, "t1", &t1, &g) < 0
        || qs_u64(qs, "n", &n, &g) < 0)
        return fail(out, 400, "t0, t1 and n are decimal integers%s", "");
    if (t1 < t0)
        return fail(out, 400, "t1 is before t0%s", "");
    if (n < 1 || n > 1000)
        return fail(out, 400, "n must be 1 .. 1000%s", "");
    if (tl_pauses(ix, t0, t1, (unsigned)n, out) < 0)
        return fail(out, 500, "out of memory%s", "");
    return 200;
}

int timeline_route(struct tl_index *ix, struct tl_spool *sp, const char *kind,
                   const char *qs, struct strbuf *out)
{
    char k[16] = "";
    if (!qs)
        qs = "";
    if (kind)
        snprintf(k, sizeof k, "%s", kind);
    else
        tl_aggr_qs_get(qs, "kind", k, sizeof k);
    struct tl_query q = { 0 };
    int agg = tl_aggr_route(ix, k, qs, out);   /* heap, durations, spans, profile */
    if (agg)
        return agg;
    if (!strcmp(k, "pauses"))
        return route_pauses(ix, qs, out);
    if (!strcmp(k, "info"))
        q.kind = TL_Q_INFO;
    else if (!strcmp(k, "timeline"))
        q.kind = TL_Q_TIMELINE;
    else if (!strcmp(k, "events"))
        q.kind = TL_Q_EVENTS;
    else if (!strcmp(k, "range"))
        q.kind = TL_Q_RANGE;
    else
        return fail(out, 400, "unknown kind \"%.20s\" (info, timeline, events, range, pauses, heap, durations, spans, profile)", k);
    struct tl_index_stats st;
    tl_index_stats(ix, &st);
    q.t0 = st.t_first;
    q.t1 = st.t_last;
    uint64_t px = 1000, n = 1000, nt = TL_THREADS_DEFAULT;
    bool g;
    if (qs_u64(qs, "t0", &q.t0, &g) < 0 || qs_u64(qs, "t1", &q.t1, &g) < 0
        || qs_u64(qs, "px", &px, &g) < 0 || qs_u64(qs, "n", &n, &g) < 0
        || qs_u64(qs, "threads", &nt, &g) < 0)
        return fail(out, 400, "t0, t1, px, n and threads are decimal integers%s", "");
    q.max_threads = nt > TL_THREADS_MAX_OUT ? TL_THREADS_MAX_OUT : (unsigned)nt;
    if (!q.max_threads)
        q.max_threads = TL_THREADS_DEFAULT;
    if (px > TL_PX_MAX)
        return fail(out, 400, "px must be 1 .. 8192%s", "");
    q.px = (unsigned)px;
    q.max_events = n > TL_EVENTS_MAX ? TL_EVENTS_MAX : (unsigned)n;
    return tl_query(ix, sp, &q, out);
}

