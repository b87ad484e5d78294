/*
 * query_emit.c: a window's answer written as JSON: numbers without
 * printf, the lanes' segments (at most about two per pixel), arrays,
 * markers and spans, thread lists (query.c chooses the level, fills the
 * lanes and calls these).
 */
#include "timeline/query_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eventlog-sink/parse.h"

/* ------------------------------------------------------------------------
 * Numbers: printf's floating point costs a microsecond a number, and a
 * drawing holds tens of thousands.
 * ------------------------------------------------------------------------ */

static void put_u64(struct strbuf *sb, uint64_t v)
{
    char b[24];
    int i = sizeof b;
    do {
        b[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    sb_put(sb, b + i, sizeof b - (size_t)i);
}

/* v with at most 4 decimals, trailing zeros dropped (0 for non-finite
 * or negative values, which no figure here has). */
static void put_num(struct strbuf *sb, double v)
{
    if (!(v > 0) || v > 1e15) {
        sb_put(sb, "0", 1);
        return;
    }
    uint64_t x = (uint64_t)(v * 10000 + 0.5);
    put_u64(sb, x / 10000);
    unsigned f = (unsigned)(x % 10000);
    if (!f)
        return;
    char d[6] = { '.', (char)('0' + f / 1000), (char)('0' + f / 100 % 10),
                  (char)('0' + f / 10 % 10), (char)('0' + f % 10), 0 };
    size_t n = 5;
    while (d[n - 1] == '0')
        n--;
    sb_put(sb, d, n);
}

/* ------------------------------------------------------------------------
 * Segments, at most about two per pixel
 * ------------------------------------------------------------------------ */

static const char *cap_kinds[] = { "run", "gc", "idle" };
static const char *thr_kinds[] = { "running", "runnable", "blocked", "finished" };

static void seg_sep(struct segem *m)
{
    if (m->any)
        sb_puts(&m->sb, ",");
    m->any = true;
}

static void seg_flush_open(struct segem *m)
{
    if (!m->open)
        return;
    seg_sep(m);
    const char *k = m->thread ? thr_kinds[m->kind] : cap_kinds[m->kind];
    sb_put(&m->sb, "[", 1);
    put_u64(&m->sb, m->s);
    sb_put(&m->sb, ",", 1);
    put_u64(&m->sb, m->e);
    sb_puts(&m->sb, ",\"");
    sb_puts(&m->sb, k);
    sb_puts(&m->sb, "\"");
    if (!m->thread && m->kind == 0) {
        sb_put(&m->sb, ",", 1);
        put_u64(&m->sb, m->arg);
    } else if (m->thread && (m->kind == 1 || m->kind == 2) && m->arg) {
        sb_puts(&m->sb, ",\"");
        sb_puts(&m->sb, tl_stop_name(m->arg));
        sb_puts(&m->sb, "\"");
    }
    sb_puts(&m->sb, "]");
    m->open = false;
}

/* The pending cell holds the short intervals of one grid cell, but a
 * segment drawn as itself may end or begin inside that cell: the cell
 * is drawn from the end of the segment before it (cell_lo) to the start
 * of the one after it (hi), never over them.  Drawn on its whole grid
 * cell, it would cover a running segment's last pixels with a cell
 * whose fractions leave that running time out (the page paints it
 * runnable), and segments would not be in time order. */
static void seg_flush_cell_to(struct segem *m, const struct win *w, uint64_t hi)
{
    if (m->cell < 0)
        return;
    uint64_t s = w->t0 + (uint64_t)(m->cell * w->nspp);
    uint64_t e = w->t0 + (uint64_t)((m->cell + 1) * w->nspp);
    if (e > w->t1)
        e = w->t1;
    if (s < m->cell_lo)
        s = m->cell_lo;
    if (e > hi)
        e = hi;
    double span = (double)(e > s ? e - s : 1);
    seg_flush_open(m);
    seg_sep(m);
    sb_put(&m->sb, "[", 1);
    put_u64(&m->sb, s);
    sb_put(&m->sb, ",", 1);
    put_u64(&m->sb, e);
    sb_puts(&m->sb, ",\"mixed\",");
    put_num(&m->sb, (double)m->cell_ns[0] / span);
    sb_puts(&m->sb, ",");
    put_num(&m->sb, (double)m->cell_ns[m->thread ? 2 : 1] / span);
    if (!m->thread) {
        sb_put(&m->sb, ",", 1);
        put_u64(&m->sb, m->cell_arg);
    }
    sb_puts(&m->sb, "]");
    m->cell = -1;
    m->cell_lo = 0;
    memset(m->cell_ns, 0, sizeof m->cell_ns);
    m->cell_arg = 0;
    m->cell_arg_ns = 0;
}

void tlq_seg_flush_cell(struct segem *m, const struct win *w)
{
    seg_flush_cell_to(m, w, UINT64_MAX);
}

void tlq_seg_add(struct segem *m, const struct win *w, uint64_t s, uint64_t e,
                 int kind, uint32_t arg)
{
    if (s < w->t0)
        s = w->t0;
    if (e > w->t1)
        e = w->t1;
    if (e <= s)
        return;
    if ((double)(e - s) >= (w->whole_ns > 0 ? w->whole_ns : w->nspp) || e == w->t1) {
        /* a pixel or longer, or the state the window ends in (a stop
         * just before t1 keeps its reason): drawn as itself, after the
         * pending cell */
        seg_flush_cell_to(m, w, s);
        if (m->open && m->kind == kind && m->arg == arg && m->e >= s) {
            m->e = e;
            return;
        }
        seg_flush_open(m);
        m->open = true;
        m->s = s;
        m->e = e;
        m->kind = kind;
        m->arg = arg;
        return;
    }
    long px = (long)((double)(s - w->t0) / w->nspp);
    if (m->cell != px) {
        tlq_seg_flush_cell(m, w);
        m->cell_lo = m->open ? m->e : 0;
    }
    m->cell = px;
    m->cell_ns[kind] += e - s;
    if (kind == 0 && e - s > m->cell_arg_ns) {
        m->cell_arg_ns = e - s;
        m->cell_arg = arg;
    }
}

void tlq_seg_end(struct segem *m, const struct win *w)
{
    tlq_seg_flush_cell(m, w);
    seg_flush_open(m);
}

/* Spread an interval's length over per-pixel sums. */
void tlq_px_spread(double *v, const struct win *w, uint64_t s, uint64_t e,
                   double weight)
{
    if (s < w->t0)
        s = w->t0;
    if (e > w->t1)
        e = w->t1;
    if (e <= s)
        return;
    double a = (double)(s - w->t0) / w->nspp, b = (double)(e - w->t0) / w->nspp;
    long pa = (long)a, pb = (long)b;
    if (pb >= (long)w->px)
        pb = (long)w->px - 1;
    for (long p = pa; p <= pb; p++) {
        double lo = a > p ? a : (double)p, hi = b < p + 1 ? b : (double)(p + 1);
        if (hi > lo)
            v[p] += (hi - lo) * weight;
    }
}

long tlq_px_of(const struct win *w, uint64_t t)
{
    if (t < w->t0)
        return -1;
    long p = (long)((double)(t - w->t0) / w->nspp);
    return p >= (long)w->px ? (long)w->px - 1 : p;
}

/* ------------------------------------------------------------------------
 * Output
 * ------------------------------------------------------------------------ */

static void put_arr(struct strbuf *sb, const double *v, unsigned n)
{
    sb_puts(sb, "[");
    for (unsigned i = 0; i < n; i++) {
        if (i)
            sb_put(sb, ",", 1);
        put_num(sb, v[i]);
    }
    sb_puts(sb, "]");
}

static void put_notes(struct strbuf *out, struct tl_index *ix, uint64_t t0,
                      uint64_t t1)
{
    size_t n = tl_index_notes(ix);
    unsigned k = 0;
    sb_puts(out, ",\"markers\":[");
    for (size_t i = 0; i < n && k < TL_LIST_NOTES; i++) {
        const struct tl_note *nt = tl_index_note(ix, i);
        if (nt->kind != TL_NOTE_MARKER || nt->t < t0 || nt->t > t1)
            continue;
        if (k++)
            sb_puts(out, ",");
        sb_printf(out, "[%" PRIu64 ",%d,", nt->t, (int)nt->cap);
        sb_json_str(out, nt->text, nt->len);
        sb_puts(out, "]");
    }
    /* The spans the durations pair (aggr.h): one rule for the table
     * and the lanes that draw its instances. */
    sb_puts(out, "],\"spans\":[");
    uint64_t total = 0;
    int rc = tl_aggr_put_spans(tl_index_aggr(ix), t0, t1, TL_LIST_NOTES,
                               TL_LIST_NOTES + 1, true, out, &total);
    sb_printf(out, "],\"spans_truncated\":%s", total > TL_LIST_NOTES ? "true" : "false");
    if (rc < 0)
        sb_puts(out, ",\"spans_error\":\"the spans side file could not be read\"");
}

static int cmp_busy(const void *a, const void *b)
{
    const struct thr *x = *(const struct thr *const *)a, *y = *(const struct thr *const *)b;
    if (x->ns[0] != y->ns[0])
        return x->ns[0] > y->ns[0] ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int cmp_thr(const void *a, const void *b)
{
    const struct thr *x = *(const struct thr *const *)a, *y = *(const struct thr *const *)b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The replay's threads sorted by id (NULL-terminated array to free). */
static struct thr **threads_sorted(struct replay *r)
{
    struct thr **v = calloc(r->nthr + 1, sizeof *v);
    if (!v)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < r->thr_cap; i++)
        if (r->thr[i].id)
            v[n++] = &r->thr[i];
    qsort(v, n, sizeof *v, cmp_thr);
    return v;
}

static void put_label(struct strbuf *out, struct tl_index *ix, uint32_t id)
{
    const struct tl_thread *t = tl_index_thread(ix, id);
    const char *l = t ? t->label : "";
    sb_json_str(out, l, strlen(l));
}

/* ------------------------------------------------------------------------
 * The answers' parts
 * ------------------------------------------------------------------------ */

void tlq_put_events(struct strbuf *out, const struct tl_query *q,
                    const struct replay *r, bool raw, uint64_t est)
{
    bool all = raw || r->listed < r->list_max;
    uint64_t total = all ? r->total : est;
    sb_printf(out, "{\"t0\":%" PRIu64 ",\"t1\":%" PRIu64 ",\"total\":%" PRIu64
              ",\"exact\":%s,\"truncated\":%s,\"events\":[", q->t0, q->t1,
              total, all ? "true" : "false",
              r->listed < total ? "true" : "false");
    sb_put(out, r->events.p ? r->events.p : "", r->events.len);
    sb_puts(out, "]}");
}

/* A range's threads from the replay, in id order, with their times and
 * stops. */
void tlq_put_range_threads(struct strbuf *out, struct tl_index *ix,
                           struct replay *r)
{
    sb_puts(out, ",\"threads\":[");
    struct thr **v = threads_sorted(r);
    for (size_t i = 0; v && v[i]; i++) {
        struct thr *th = v[i];
        if (i)
            sb_puts(out, ",");
        sb_printf(out, "{\"id\":%" PRIu32 ",\"label\":", th->id);
        put_label(out, ix, th->id);
        sb_printf(out, ",\"running_ns\":%" PRIu64 ",\"runnable_ns\":%"
                  PRIu64 ",\"blocked_ns\":%" PRIu64 ",\"stops\":{",
                  th->ns[0], th->ns[1], th->ns[2]);
        bool any = false;
        for (unsigned s = 0; s < 21; s++) {
            if (!th->stops[s])
                continue;
            sb_printf(out, "%s\"%s\":%" PRIu32, any ? "," : "",
                      tl_stop_name(s), th->stops[s]);
            any = true;
        }
        sb_puts(out, "}}");
    }
    free(v);
    sb_puts(out, "]");
}

/* The timeline's caps (segments and sparks), its activity, GC and heap
 * per pixel, and the window's markers and spans. */
void tlq_put_lanes(struct strbuf *out, struct tl_index *ix,
                   const struct replay *r)
{
    unsigned px = r->w.px;
    bool first = true;
    for (unsigned c = 0; c < r->ncaps; c++) {
        if (!tl_pyr_cap(ix, c))
            continue;
        const struct capr *k = &r->caps[c];
        sb_printf(out, "%s{\"cap\":%u,\"segments\":[", first ? "" : ",", c);
        first = false;
        sb_put(out, k->seg.sb.p ? k->seg.sb.p : "", k->seg.sb.len);
        sb_puts(out, "],\"sparks\":{\"created\":");
        put_arr(out, k->created, px);
        sb_puts(out, ",\"converted\":");
        put_arr(out, k->converted, px);
        sb_puts(out, ",\"pool\":");
        put_arr(out, k->pool, px);
        sb_puts(out, "}}");
    }
    sb_puts(out, "],\"activity\":");
    put_arr(out, r->activity, px);
    sb_puts(out, ",\"gc\":");
    put_arr(out, r->gc, px);
    sb_puts(out, ",\"heap\":{\"size\":");
    put_arr(out, r->heap_size, px);
    sb_puts(out, ",\"live\":");
    put_arr(out, r->heap_live, px);
    sb_puts(out, "}");
    put_notes(out, ix, r->w.t0, r->w.t1);
}

/* A replayed timeline's messages and thread lanes: the busiest maxt
 * threads with a segment get lanes, shown in id order; the rest are
 * counted in threads_more.  Closes the answer. */
void tlq_put_thread_lanes(struct strbuf *out, struct tl_index *ix,
                          struct replay *r, unsigned maxt)
{
    sb_puts(out, ",\"messages\":[");
    sb_put(out, r->msgs.p ? r->msgs.p : "", r->msgs.len);
    sb_puts(out, "],\"threads\":[");
    struct thr **v = threads_sorted(r);
    size_t nv = 0, shown = 0;
    while (v && v[nv])
        nv++;
    if (v)
        qsort(v, nv, sizeof *v, cmp_busy);
    size_t keep = 0;
    for (size_t i = 0; i < nv; i++) {
        if (!v[i]->seg.sb.len)
            continue;
        if (keep == maxt) {
            r->thr_more++;
            continue;
        }
        v[keep++] = v[i];
    }
    if (v)
        qsort(v, keep, sizeof *v, cmp_thr);
    for (size_t i = 0; i < keep; i++) {
        if (shown++)
            sb_puts(out, ",");
        sb_printf(out, "{\"id\":%" PRIu32 ",\"label\":", v[i]->id);
        put_label(out, ix, v[i]->id);
        sb_puts(out, ",\"segments\":[");
        sb_put(out, v[i]->seg.sb.p, v[i]->seg.sb.len);
        sb_puts(out, "]}");
    }
    free(v);
    sb_printf(out, "],\"threads_more\":%" PRIu64 "}", r->thr_more);
}
