/*
 * model_time.c: the monitor model's state over time: each capability's
 * state (idle, running a thread, in GC) and its timeline, the run-wide
 * timeline the charts draw, and the rate interval that mon_model_tick()
 * closes (rates, utilisation, Note [Time in GC], the interval's top cost
 * centres).  A timeline is a row of MON_BINS bins whose width doubles
 * whenever the run outgrows them, so the whole run stays visible at
 * bounded memory.  Not its job: which event changes a capability's state
 * (model.c), the keyed tables (model_tables.c), or drawing the timelines
 * (render*.c).
 */
#include <stdlib.h>
#include <string.h>

#include "model_impl.h"

/* ------------------------------------------------------------------------
 * Timeline
 * ------------------------------------------------------------------------ */

/* Coarsen the timeline until t fits in MON_BINS bins: bins widen by
 * 2^k in one pass (a stream may jump far ahead in time at once). */
static void mon_fit(struct mon_model *m, uint64_t t)
{
    unsigned k = 0;
    while (k < 63 && (t / m->tl.bin_ns) >> k >= MON_BINS)
        k++;
    if (k == 0)
        return;
    for (unsigned c = 0; c < m->caps.n; c++) {
        struct mon_bin *b = m->caps.at[c].bins;
        if (b == NULL)
            continue;
        for (unsigned i = 0; i < MON_BINS; i++) {
            unsigned j = i >> k;
            if (j == i)
                continue;
            /* Microseconds in a bin stay below 2^32 up to bins of 71
             * minutes; saturate rather than wrap beyond. */
            uint64_t r = (uint64_t)b[j].run_us + b[i].run_us;
            uint64_t g = (uint64_t)b[j].gc_us + b[i].gc_us;
            b[j].run_us = r > UINT32_MAX ? UINT32_MAX : (uint32_t)r;
            b[j].gc_us = g > UINT32_MAX ? UINT32_MAX : (uint32_t)g;
            b[i].run_us = b[i].gc_us = 0;
        }
    }
    struct mon_gbin *g = m->tl.gbins;
    for (unsigned i = 0; i < MON_BINS; i++) {
        unsigned j = i >> k;
        if (j == i)
            continue;
        struct mon_gbin z = g[i];
        g[j].events += z.events;
        g[j].gcs += z.gcs;
        g[j].user += z.user;
        g[j].gc_ns += z.gc_ns;
        g[j].alloc += z.alloc;
        if (z.threads)
            g[j].threads = z.threads;
        if (z.heap_size)
            g[j].heap_size = z.heap_size;
        if (z.heap_live)
            g[j].heap_live = z.heap_live;
        memset(&g[i], 0, sizeof g[i]);
    }
    m->tl.bin_ns = k < 63 && m->tl.bin_ns <= UINT64_MAX >> k ? m->tl.bin_ns << k : UINT64_MAX;
    m->tl.last_bin >>= k;
    m->tl.gbin_hi = 0;             /* the bins moved: forget the last one */
}

struct mon_gbin *mon_gbin_find(struct mon_model *m, uint64_t t)
{
    mon_fit(m, t);
    unsigned i = (unsigned)(t / m->tl.bin_ns);
    if (i > m->tl.last_bin) {
        /* Levels carry forward into bins no event touched. */
        for (unsigned j = m->tl.last_bin + 1; j <= i; j++) {
            m->tl.gbins[j].threads = m->tl.gbins[m->tl.last_bin].threads;
            m->tl.gbins[j].heap_size = m->tl.gbins[m->tl.last_bin].heap_size;
            m->tl.gbins[j].heap_live = m->tl.gbins[m->tl.last_bin].heap_live;
        }
        m->tl.last_bin = i;
    }
    m->tl.gbin_idx = i;
    m->tl.gbin_lo = (uint64_t)i * m->tl.bin_ns;
    m->tl.gbin_hi = m->tl.bin_ns <= UINT64_MAX - m->tl.gbin_lo ? m->tl.gbin_lo + m->tl.bin_ns : UINT64_MAX;
    return &m->tl.gbins[i];
}

/* Add [a, b) in state s to capability c's bins. */
static void mon_cap_span(struct mon_model *m, struct mon_cap *c,
                         enum mon_cap_state s, uint64_t a, uint64_t b)
{
    if (s == CAP_IDLE || b <= a || c->bins == NULL)
        return;
    if (s == CAP_RUN)
        c->run_ns += b - a;
    else
        c->gc_ns += b - a;
    mon_fit(m, b);
    while (a < b) {
        /* Saturate: near 2^64 (bad timestamps) the product wraps, and a
         * wrapped end would send a backwards for ever. */
        uint64_t i = a / m->tl.bin_ns;
        uint64_t end = i + 1 <= UINT64_MAX / m->tl.bin_ns ? (i + 1) * m->tl.bin_ns
                                                        : UINT64_MAX;
        uint64_t upto = end < b ? end : b;
        uint32_t us = (uint32_t)((upto - a) / 1000u);
        if (s == CAP_RUN)
            c->bins[i].run_us += us;
        else
            c->bins[i].gc_us += us;
        a = upto;
    }
}

struct mon_cap *mon_cap_first(struct mon_model *m, int32_t cap)
{
    if (cap < 0 || cap >= MON_MAX_CAPS)
        return NULL;
    struct mon_cap *c = &m->caps.at[cap];
    if (!c->seen) {
        c->bins = calloc(MON_BINS, sizeof *c->bins);
        if (c->bins == NULL)
            return NULL;
        m->mem += MON_BINS * sizeof *c->bins;
        c->seen = true;
        c->gc_gen = -1;
        if ((unsigned)cap + 1 > m->caps.n)
            m->caps.n = (unsigned)cap + 1;
    }
    return c;
}

void mon_cap_set(struct mon_model *m, struct mon_cap *c,
                        enum mon_cap_state s, uint64_t t)
{
    if (t < c->since)
        t = c->since;
    mon_cap_span(m, c, c->state, c->since, t);
    c->state = s;
    c->since = t;
}

/* ------------------------------------------------------------------------
 * Rate intervals
 * ------------------------------------------------------------------------ */

/* Busy and GC time of c up to t, the open state included. */
static void mon_cap_upto(const struct mon_cap *c, uint64_t t, uint64_t *run,
                         uint64_t *gc)
{
    *run = c->run_ns;
    *gc = c->gc_ns;
    if (t > c->since) {
        if (c->state == CAP_RUN)
            *run += t - c->since;
        else if (c->state == CAP_GC)
            *gc += t - c->since;
    }
}

/* Note [Time in GC]
 * ~~~~~~~~~~~~~~~~~
 * "Time in GC" is the share of the capabilities' time spent in GC
 * pauses over the interval: the pause time (GC_START to GC_END, per
 * capability, as ghc-events reads it) summed over capabilities, divided
 * by the interval times the capabilities seen.  It was the sum divided
 * by the interval alone, which exceeds 100% as soon as several
 * capabilities post GC_START and GC_END for the same collection (a
 * parallel GC; the README's own screenshot showed 103.5%).
 * Each capability's part is clipped to the interval: a pause still open
 * counts up to now, and one that ends in a later interval counts there
 * only what that interval has not already counted; a block that arrives
 * late (capabilities' blocks come out of order) never makes a share
 * exceed 1.  Over a whole saved run every pause is closed, so the figure
 * is exactly ghc-events' sum / (last event's time x capabilities).
 * The same clipping keeps each capability's util and gc shares <= 1. */

/* (now - prev) / span clipped to [0, 1]. */
static double mon_share(uint64_t now, uint64_t prev, uint64_t span)
{
    if (span == 0 || now <= prev)
        return 0;
    uint64_t d = now - prev;
    return d >= span ? 1.0 : (double)d / (double)span;
}

/* Note [After the end]
 * ~~~~~~~~~~~~~~~~~~~~~
 * Once a stream has ended nothing more comes, so a view's last interval
 * would hold nothing: rates and time in GC of 0, no cost-centre samples,
 * a program that stopped looking idle.  Every tick after the end is
 * therefore over the stream's whole span, as for a saved file: rates are
 * the run's averages (over its span, first to last event), the tables
 * the run's totals, and the views say so (whole_run).  A thread left in
 * the table ran no further than the end: the views count it by its last
 * state "at the end", none running or runnable (mon_thread_counts()). */

void mon_model_tick(struct mon_model *m, uint64_t wall_ns, bool whole_run)
{
    if (m->run.ended)
        whole_run = true;
    m->rate.whole_run = whole_run;
    /* The run so far is the stream's own span, from its first event
     * (Note [Mid-run streams] in model.c). */
    uint64_t first = m->run.first_seen && m->run.first < m->run.now ? m->run.first : m->run.now;
    double dt = whole_run ? (double)(m->run.now - first) / 1e9 : (double)wall_ns / 1e9;
    uint64_t since = whole_run ? first : m->rate.prev_now;
    mon_tevs_release(m, false);
    if (whole_run) {
        m->rate.prev_events = m->rate.prev_gcs = m->rate.prev_gc_ns = 0;
        m->rate.prev_alloc = mon_alloc_base(m);
        m->rate.prev_user = m->rate.prev_bytes = 0;
        memset(m->rate.prev_class, 0, sizeof m->rate.prev_class);
        mon_spark_base(m, m->rate.prev_sp);
        memset(m->prof.prev_kind_samples, 0, sizeof m->prof.prev_kind_samples);
        for (unsigned i = 0; i < m->prof.nccs; i++)
            m->prof.ccs[i].prev_samples = 0;
        for (unsigned c = 0; c < m->caps.n; c++)
            m->caps.at[c].prev_run = m->caps.at[c].prev_gc = m->caps.at[c].prev_pause = 0;
    }
    m->rate.interval_s = dt;
    double inv = dt > 0 ? 1.0 / dt : 0;
    m->rate.events = (double)(m->counts.events - m->rate.prev_events) * inv;
    for (int i = 0; i < MON_CLASS_N; i++) {
        m->rate.class[i] = (double)(m->counts.by_class[i] - m->rate.prev_class[i]) * inv;
        m->rate.prev_class[i] = m->counts.by_class[i];
    }
    uint64_t colls = mon_collections(m);
    m->rate.gcs = (double)(colls - m->rate.prev_gcs) * inv;
    for (int k = 0; k < MON_CC_BUILTINS; k++) {
        m->prof.kind_interval[k] = m->prof.kind_samples[k] - m->prof.prev_kind_samples[k];
        m->prof.prev_kind_samples[k] = m->prof.kind_samples[k];
    }
    m->rate.alloc = (double)(m->heap.alloc - m->rate.prev_alloc) * inv;
    uint64_t user = m->user.messages + m->user.markers;
    m->rate.user = (double)(user - m->rate.prev_user) * inv;
    m->rate.bytes = (double)(m->src.bytes - m->rate.prev_bytes) * inv;

    /* Utilisation in event time: the share of [since, now] each
     * capability spent running or in GC.  See Note [Time in GC]. */
    uint64_t span = m->run.now > since ? m->run.now - since : 0;
    uint64_t sp[7] = { 0 }, pause = 0;
    unsigned caps = 0;
    for (unsigned c = 0; c < m->caps.n; c++) {
        struct mon_cap *cp = &m->caps.at[c];
        if (!cp->seen)
            continue;
        caps++;
        uint64_t run, gc;
        mon_cap_upto(cp, m->run.now, &run, &gc);
        cp->util = mon_share(run, cp->prev_run, span);
        cp->gc_frac = mon_share(gc, cp->prev_gc, span);
        cp->prev_run = run > cp->prev_run ? run : cp->prev_run;
        cp->prev_gc = gc > cp->prev_gc ? gc : cp->prev_gc;
        uint64_t p = cp->gc_pause_ns;
        if (cp->gc_start != 0 && m->run.now > cp->gc_start)
            p += m->run.now - cp->gc_start;
        uint64_t d = p > cp->prev_pause ? p - cp->prev_pause : 0;
        pause += d < span ? d : span;
        cp->prev_pause = p > cp->prev_pause ? p : cp->prev_pause;
        for (int k = 0; k < 7; k++)
            sp[k] += cp->sp[k];
    }
    m->gc.caps = caps;
    m->rate.gc_frac = span && caps ? (double)pause / ((double)span * caps) : 0;
    for (int k = 0; k < 7; k++) {
        m->rate.sp[k] = k == SP_REMAINING ? (double)sp[k]
                        : (double)(sp[k] >= m->rate.prev_sp[k] ? sp[k] - m->rate.prev_sp[k] : 0) * inv;
        m->rate.prev_sp[k] = sp[k];
    }

    /* Top cost centres of the interval. */
    m->prof.ntop = 0;
    for (uint32_t i = 0; i < m->prof.nccs; i++) {
        uint64_t n = m->prof.ccs[i].samples - m->prof.ccs[i].prev_samples;
        m->prof.ccs[i].prev_samples = m->prof.ccs[i].samples;
        if (n == 0)
            continue;
        unsigned pos = m->prof.ntop < 10 ? m->prof.ntop++ : 10;
        while (pos > 0 && m->prof.top[pos - 1].n < n) {
            if (pos < 10)
                m->prof.top[pos] = m->prof.top[pos - 1];
            pos--;
        }
        if (pos < 10)
            m->prof.top[pos] = (struct mon_text_topcc){ i, n };
    }

    m->rate.prev_now = m->run.now;
    m->rate.prev_events = m->counts.events;
    m->rate.prev_gcs = colls;
    m->rate.prev_gc_ns = m->gc.ns;
    m->rate.prev_alloc = m->heap.alloc;
    m->rate.prev_user = user;
    m->rate.prev_bytes = m->src.bytes;
}
