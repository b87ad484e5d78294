/*
 * model.c: the monitor's aggregation of a GHC eventlog (see model.h):
 * the model's life (new, reset, feed) and its one parser callback,
 * mon_on_event(), which decodes each event with the public
 * els_event_decode() and hands it to its family's handler, which
 * updates that family's part of the model (Note [The model's owners] in
 * model_impl.h): threads and capabilities, GC pauses, heap, sparks and
 * the program's identity here; user messages, markers and their spans
 * and the sink's loss notes in model_user.c; heap censuses and
 * cost-centre samples in model_prof.c.  Per-capability activity is a
 * state (idle, running a thread, in GC) changed only by that
 * capability's own events, so blocks arriving out of order across
 * capabilities do not confuse it.  Nothing here does I/O.  Not its job:
 * the timelines and rate intervals (model_time.c), the thread and
 * cost-centre tables and what bounds the model's memory when the stream
 * is hostile (model_tables.c, Note [Stream-chosen keys]), thread stops
 * (model_stops.c), or rendering (render*.c, series.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eventlog-sink.h"
#include "eventlog-sink/parse.h"
#include "model_impl.h"

/* Prometheus histogram bounds of GC pauses, seconds. */
const double mon_pause_bounds[MON_PAUSE_BUCKETS] = {
    0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5
};

const char *const mon_spark_names[7] = {
    "created", "dud", "overflowed", "converted", "gcd", "fizzled", "pool"
};

const char *const mon_builtin_names[MON_CC_BUILTINS] = {
    "program", "GC", "IDLE", "SYSTEM", "OVERHEAD_of", "DONT_CARE"
};

const char *mon_class_name(enum mon_class c)
{
    static const char *const names[MON_CLASS_N] = {
        "scheduler", "gc", "heap", "spark", "user", "profiling", "meta",
        "other"
    };
    return (unsigned)c < MON_CLASS_N ? names[c] : "other";
}

enum mon_class mon_class_of(uint16_t tag)
{
    switch (tag) {
    case 0: case 1: case 2: case 3: case 4: case 8: case 15:
    case 45: case 46: case 47: case 48: case 55: case 56: case 57:
        return MON_CLASS_SCHED;
    case 9: case 10: case 11: case 12: case 20: case 21: case 22: case 54:
        return MON_CLASS_GC;
    case 49: case 50: case 51: case 52: case 53:
        return MON_CLASS_HEAP;
    case 34: case 35: case 36: case 37: case 38: case 39: case 40: case 41:
        return MON_CLASS_SPARK;
    case 19: case 58:
        return MON_CLASS_USER;
    case 16: case 18: case 25: case 26: case 27: case 28: case 29: case 30:
    case 31: case 32: case 33: case 43: case 44:
        return MON_CLASS_META;
    default:
        if (tag >= 160 && tag <= 169)
            return MON_CLASS_PROF;
        return MON_CLASS_OTHER;
    }
}

/* mon_class_of() for the tags below 256 (all GHC's), filled once
 * (mon_model_new()): a load per event instead of a call and a switch. */
static uint8_t mon_classes[256];
static bool mon_classes_ready;

static void mon_classes_init(void)
{
    if (mon_classes_ready)
        return;
    for (unsigned t = 0; t < 256; t++)
        mon_classes[t] = (uint8_t)mon_class_of((uint16_t)t);
    mon_classes_ready = true;
}

/* ------------------------------------------------------------------------
 * GC and allocation
 * ------------------------------------------------------------------------ */

/* Note [Collections]
 * ~~~~~~~~~~~~~~~~~~
 * Every capability that takes part in a collection posts its own
 * GC_START and GC_END (the workers of a parallel collection from
 * rts/Capability.c's yieldCapability()): counting GC_START counted about
 * twice the collections `+RTS -s` reports at -N2.  A collection is
 * posted once, by the capability that leads it: REQUEST_SEQ_GC or
 * REQUEST_PAR_GC (scheduler class; rts/Schedule.c's scheduleDoGC() posts
 * it once it has won the sync) and GC_STATS_GHC with the generation
 * collected (GC class; rts/Stats.c's stat_endGC()).  Collections are the
 * larger of the two counts: they agree when both classes are on, and
 * when one is off (or was off for a while, classes being switchable at
 * run time) the other counts them all.  Per generation, only
 * GC_STATS_GHC tells.
 *
 * A collection's pause is its leader's GC_START to GC_END.  stat_startGC()
 * and stat_endGC() post these two with the very timestamps the RTS's
 * statistics use, so the difference is the collection's elapsed time as
 * `+RTS -s` counts it in "Max pause" and "Tot time (elapsed)".  The
 * workers' starts come before (they stop before the leader begins) and
 * their ends after (the leader releases them when it is done): their
 * GC_START..GC_END is each capability's time in GC (Note [Time in GC] in
 * model_time.c), not the pause.  The leader is the capability that
 * posted the request or the stats since its last GC_END; both come
 * before its GC_END in its own blocks, so the order in which different
 * capabilities' blocks arrive does not matter.  A collection whose
 * leader's events did not all arrive (a stream joined mid-collection)
 * has no pause.
 */

/* A collection's pause p, of generation gen (-1: not known). */
static void mon_pause(struct mon_model *m, uint64_t p, int gen)
{
    m->gc.pause_ns += p;
    if (p > m->gc.pause_max)
        m->gc.pause_max = p;
    m->gc.pauses[m->gc.npauses++ % MON_PAUSES] = p;
    unsigned b = 0;
    while (b < MON_PAUSE_BUCKETS && (double)p / 1e9 > mon_pause_bounds[b])
        b++;
    m->gc.pause_hist[b]++;
    if (gen >= 0 && gen < MON_GENS) {
        m->gc.gen_npauses[gen]++;
        m->gc.gen_pause_ns[gen] += p;
        if (p > m->gc.gen_pause_max[gen])
            m->gc.gen_pause_max[gen] = p;
    }
}

/* Note [Allocation]
 * ~~~~~~~~~~~~~~~~~
 * rts/sm/Storage.c's calcTotalAllocated() posts one HEAP_ALLOCATED per
 * capability, in that capability's block, with that capability's own
 * running total (cap->total_allocated).  The program's allocation is the
 * sum of every capability's last value, as `+RTS -s`'s "bytes allocated
 * in the heap" is their sum; taking the largest value seen (as this
 * model did) gave about one capability's share.  An event outside any
 * capability's block is kept as one more capability's. */

/* Note [Mid-run streams]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * A flight recorder's dump (`ring:`), or the stream of a consumer that
 * joined a running program, starts mid-run: at a join snapshot 22 s into
 * the run, say.  Its figures are the file's, not the run's: its time
 * axis and its rates' span start at its first event (the smallest time
 * of any event, as `ghc-events show` sorts them), and the counters the
 * RTS posts as running totals (each capability's HEAP_ALLOCATED and
 * SPARK_COUNTERS) count the change within it: each capability's last
 * value less the first one it holds.  A stream from the run's start
 * counts their last values, as `+RTS -s` does.  The stream says which
 * it is: a note that it joined at a snapshot or late, or a dump's own
 * note (`eventlog-sink: dump N: CAUSE`), which is no loss: only the three
 * kinds of loss note count as losses (loss_notes).  Its rates and
 * utilisation are over its own span, first to last event, whichever it
 * is: a run's first event is at its start. */

uint64_t mon_alloc_base(const struct mon_model *m)
{
    if (!m->run.midrun)
        return 0;
    uint64_t base = m->heap.alloc_nocap_first;
    for (unsigned c = 0; c < m->caps.n; c++)
        if (m->caps.at[c].seen && m->caps.at[c].alloc_seen)
            base += m->caps.at[c].alloc_first;
    return base;
}

void mon_spark_base(const struct mon_model *m, uint64_t sp[7])
{
    memset(sp, 0, 7 * sizeof sp[0]);
    if (!m->run.midrun)
        return;
    for (unsigned c = 0; c < m->caps.n; c++)
        if (m->caps.at[c].seen && m->caps.at[c].sp_seen)
            for (int k = 0; k < SP_REMAINING; k++)
                sp[k] += m->caps.at[c].sp_first[k];
}

/* ------------------------------------------------------------------------
 * Event types
 * ------------------------------------------------------------------------ */

/* One event of its type.  Its bytes in the stream are its tag and time
 * (10), the size field of a variable-size type (2) and its payload:
 * only the payloads are summed here (two additions an event); the rest
 * follows from the count and the header, when shown (mon_type_bytes()). */
static inline void mon_count_type(struct mon_model *m, const struct els_event *ev)
{
    unsigned k = ev->tag < MON_TAGS ? ev->tag : MON_TAGS;
    m->counts.type_n[k]++;
    m->counts.type_payload[k] += ev->payload_len;
}

/* ------------------------------------------------------------------------
 * Events
 * ------------------------------------------------------------------------ */

static int mon_on_header(void *user, const struct els_parser *p)
{
    (void)p;
    struct mon_model *m = user;
    m->run.streams++;
    m->run.ended = false;
    return 0;
}

static int mon_on_end(void *user, uint64_t offset)
{
    (void)offset;
    struct mon_model *m = user;
    m->run.ended = true;
    mon_tevs_release(m, true);      /* nothing else will come */
    return 0;
}

/* Threads and capabilities (the threads and stops parts). */
static void mon_on_sched(struct mon_model *m, const struct mon_ev *e)
{
    const struct els_event_data *d = e->d;
    uint64_t t = e->ev->time;
    switch (e->ev->tag) {
    case ELS_EV_CREATE_THREAD:
        m->threads.created++;
        mon_thread_set(m, d->u.thread.thread, TH_RUNNABLE);
        break;
    case ELS_EV_RUN_THREAD:
        mon_thread_run(m, e->c, d->u.thread.thread, t);
        if (e->c != NULL)
            mon_cap_set(m, e->c, CAP_RUN, t);
        break;
    case ELS_EV_STOP_THREAD:
        mon_thread_stop(m, e->c, d->u.stop_thread.thread, d->u.stop_thread.status, t);
        if (e->c != NULL && e->c->state == CAP_RUN)
            mon_cap_set(m, e->c, CAP_IDLE, t);
        break;
    case ELS_EV_THREAD_RUNNABLE:
        mon_thread_set(m, d->u.thread.thread, TH_RUNNABLE);
        break;
    case ELS_EV_THREAD_WAKEUP:
        mon_thread_set(m, d->u.thread_cap.thread, TH_RUNNABLE);
        break;
    case ELS_EV_CAP_CREATE:
        mon_cap(m, d->u.cap.cap);
        m->caps.known = true;
        break;
    }
}

/* A collection is announced (its request, or its GC_STATS_GHC of
 * generation gen, -1 for a request): this capability leads it (Note
 * [Collections]). */
static void mon_gc_lead(struct mon_model *m, const struct mon_ev *e, int gen)
{
    uint64_t before = mon_collections(m);
    if (gen < 0) {
        m->gc.requests++;
    } else {
        m->gc.stats++;
        m->gc.gen_colls[gen]++;
        if ((unsigned)gen + 1 > m->gc.ngens)
            m->gc.ngens = (unsigned)gen + 1;
    }
    e->gb->gcs += (uint32_t)(mon_collections(m) - before);
    if (e->c != NULL) {
        e->c->gc_lead = true;
        if (gen >= 0)
            e->c->gc_gen = gen;
    }
}

/* GC_END on capability c: its time in GC, and the pause if it led the
 * collection. */
static void mon_gc_end(struct mon_model *m, const struct mon_ev *e)
{
    struct mon_cap *c = e->c;
    uint64_t t = e->ev->time;
    if (c->gc_start != 0 && t >= c->gc_start) {
        uint64_t p = t - c->gc_start;
        m->gc.ns += p;
        c->gc_pause_ns += p;
        e->gb->gc_ns += p;
        if (c->gc_lead)
            mon_pause(m, p, c->gc_gen);
    }
    c->gc_start = 0;
    c->gc_lead = false;
    c->gc_gen = -1;
    mon_cap_set(m, c, CAP_IDLE, t);
}

/* Collections and each capability's GC phases (the GC part). */
static void mon_on_gc(struct mon_model *m, const struct mon_ev *e)
{
    struct mon_cap *c = e->c;
    uint64_t t = e->ev->time;
    switch (e->ev->tag) {
    case ELS_EV_REQUEST_SEQ_GC:
    case ELS_EV_REQUEST_PAR_GC:
        mon_gc_lead(m, e, -1);
        break;
    case ELS_EV_GC_STATS_GHC: {
        unsigned g = e->d->u.gc_stats.generation;
        mon_gc_lead(m, e, g >= MON_GENS ? MON_GENS - 1 : (int)g);
        break;
    }
    case ELS_EV_GC_START:
        m->gc.starts++;
        if (c != NULL) {
            c->gc_starts++;
            c->gc_start = t ? t : 1;
            mon_cap_set(m, c, CAP_GC, t);
        }
        break;
    case ELS_EV_GC_WORK:
        if (c != NULL)
            mon_cap_set(m, c, CAP_GC, t);
        break;
    case ELS_EV_GC_DONE:
    case ELS_EV_GC_IDLE:
        if (c != NULL && c->gc_start == 0)
            mon_cap_set(m, c, CAP_IDLE, t);
        break;
    case ELS_EV_GC_END:
        if (c != NULL)
            mon_gc_end(m, e);
        break;
    }
}

/* HEAP_ALLOCATED: each capability's own running total (Note
 * [Allocation]). */
static void mon_heap_allocated(struct mon_model *m, const struct mon_ev *e)
{
    struct mon_cap *c = e->c;
    uint64_t *last = c != NULL ? &c->alloc : &m->heap.alloc_nocap;
    uint64_t now = e->d->u.heap.bytes;
    bool *seen = c != NULL ? &c->alloc_seen : &m->heap.alloc_nocap_seen;
    if (!*seen) {
        *seen = true;
        *(c != NULL ? &c->alloc_first : &m->heap.alloc_nocap_first) = now;
    }
    m->heap.alloc = m->heap.alloc - *last + now;
    if (now > *last)
        e->gb->alloc += now - *last;
    *last = now;
}

/* Heap sizes and allocation (the heap part). */
static void mon_on_heap(struct mon_model *m, const struct mon_ev *e)
{
    const struct els_event_data *d = e->d;
    switch (e->ev->tag) {
    case ELS_EV_HEAP_ALLOCATED:
        mon_heap_allocated(m, e);
        break;
    case ELS_EV_HEAP_SIZE:
        m->heap.size = d->u.heap.bytes;
        e->gb->heap_size = m->heap.size;
        break;
    case ELS_EV_HEAP_LIVE:
        m->heap.live = d->u.heap.bytes;
        m->heap.live_t = e->ev->time;
        e->gb->heap_live = m->heap.live;
        break;
    case ELS_EV_HEAP_INFO_GHC:
        m->heap.max = d->u.heap_info.max_heap_size;
        if (d->u.heap_info.generations > m->gc.ngens)
            m->gc.ngens = d->u.heap_info.generations < MON_GENS
                          ? d->u.heap_info.generations : MON_GENS;
        break;
    }
}

/* Spark counters (each capability's) and spark events (the sparks
 * part). */
static void mon_on_spark(struct mon_model *m, const struct mon_ev *e)
{
    struct mon_cap *c = e->c;
    if (e->ev->tag != ELS_EV_SPARK_COUNTERS) {
        m->sparks.events++;
        return;
    }
    if (c == NULL)
        return;
    bool first = !c->sp_seen;
    c->sp_seen = true;
    c->sp[SP_CREATED] = e->d->u.spark_counters.created;
    c->sp[SP_DUD] = e->d->u.spark_counters.dud;
    c->sp[SP_OVERFLOWED] = e->d->u.spark_counters.overflowed;
    c->sp[SP_CONVERTED] = e->d->u.spark_counters.converted;
    c->sp[SP_GCD] = e->d->u.spark_counters.gcd;
    c->sp[SP_FIZZLED] = e->d->u.spark_counters.fizzled;
    c->sp[SP_REMAINING] = e->d->u.spark_counters.remaining;
    if (first)
        memcpy(c->sp_first, c->sp, sizeof c->sp_first);
}

/* The program's identity (the run part). */
static void mon_on_identity(struct mon_model *m, const struct mon_ev *e)
{
    const struct els_event_data *d = e->d;
    switch (e->ev->tag) {
    case ELS_EV_RTS_IDENTIFIER:
        mon_copy(m->run.rts, sizeof m->run.rts, d->u.capset_text.text.ptr,
                 d->u.capset_text.text.len);
        break;
    case ELS_EV_PROGRAM_ARGS: {
        struct els_str list = d->u.capset_strings.strings, first;
        if (els_str_next(&list, &first)) {
            const char *b = first.ptr + first.len;
            while (b > first.ptr && b[-1] != '/')
                b--;
            mon_copy(m->run.program, sizeof m->run.program, b,
                     first.len - (size_t)(b - first.ptr));
        }
        break;
    }
    case ELS_EV_OSPROCESS_PID:
        m->run.pid = d->u.os_pid.pid;
        break;
    }
}

/* Every event: the counts part, the run's span, its timeline bin. */
static struct mon_gbin *mon_count_event(struct mon_model *m,
                                        const struct els_event *ev)
{
    m->counts.events++;
    m->counts.by_class[ev->tag < 256 ? mon_classes[ev->tag] : MON_CLASS_OTHER]++;
    mon_count_type(m, ev);
    if (ev->time > m->run.now)
        m->run.now = ev->time;
    if (!m->run.first_seen || ev->time < m->run.first) {
        m->run.first = ev->time;
        m->run.first_seen = true;
    }
    struct mon_gbin *gb = mon_gbin_at(m, ev->time);
    gb->events++;
    return gb;
}

/* The parser's callback: count the event, then hand it, decoded, to its
 * family's handler. */
static int mon_on_event(void *user, const struct els_event *ev)
{
    struct mon_model *m = user;
    if (ev->tag == ELS_EV_BLOCK_MARKER)
        return 0;
    if (m->tap != NULL)                 /* serve's OTLP export */
        m->tap(m->tap_ctx, m, ev);
    struct mon_ev e = { .ev = ev };
    e.gb = mon_count_event(m, ev);
    e.c = mon_cap(m, ev->cap);
    if (e.c != NULL)
        e.c->last = ev->time;   /* Note [Stopped time] in model_stops.c */
    if (ev->tag == ELS_EV_USER_MSG) {
        mon_user_msg(m, ev);
        e.gb->user++;
        e.gb->threads = m->threads.alive.used;
        return 0;
    }
    struct els_event_data d;
    if (els_event_decode(ev, &d) < 0)
        return 0;           /* short payload: counted, not interpreted */
    e.d = &d;

    switch (ev->tag) {
    case ELS_EV_CREATE_THREAD: case ELS_EV_RUN_THREAD: case ELS_EV_STOP_THREAD:
    case ELS_EV_THREAD_RUNNABLE: case ELS_EV_THREAD_WAKEUP: case ELS_EV_CAP_CREATE:
        mon_on_sched(m, &e);
        break;
    case ELS_EV_REQUEST_SEQ_GC: case ELS_EV_REQUEST_PAR_GC: case ELS_EV_GC_STATS_GHC:
    case ELS_EV_GC_START: case ELS_EV_GC_WORK: case ELS_EV_GC_DONE:
    case ELS_EV_GC_IDLE: case ELS_EV_GC_END:
        mon_on_gc(m, &e);
        break;
    case ELS_EV_HEAP_ALLOCATED: case ELS_EV_HEAP_SIZE: case ELS_EV_HEAP_LIVE:
    case ELS_EV_HEAP_INFO_GHC:
        mon_on_heap(m, &e);
        break;
    case ELS_EV_SPARK_COUNTERS:
    case ELS_EV_SPARK_CREATE: case ELS_EV_SPARK_DUD: case ELS_EV_SPARK_OVERFLOW:
    case ELS_EV_SPARK_RUN: case ELS_EV_SPARK_STEAL: case ELS_EV_SPARK_FIZZLE:
    case ELS_EV_SPARK_GC:
        mon_on_spark(m, &e);
        break;
    case ELS_EV_LOG_MSG:
        mon_on_note(m, &e);
        break;
    case ELS_EV_USER_MARKER:
        mon_marker(m, ev, d.u.text);
        e.gb->user++;
        break;
    case ELS_EV_RTS_IDENTIFIER: case ELS_EV_PROGRAM_ARGS: case ELS_EV_OSPROCESS_PID:
        mon_on_identity(m, &e);
        break;
    case ELS_EV_HEAP_PROF_BEGIN: case ELS_EV_HEAP_PROF_SAMPLE_BEGIN:
    case ELS_EV_HEAP_BIO_PROF_SAMPLE_BEGIN: case ELS_EV_HEAP_PROF_SAMPLE_END:
    case ELS_EV_HEAP_PROF_SAMPLE_STRING: case ELS_EV_HEAP_PROF_COST_CENTRE:
    case ELS_EV_HEAP_PROF_SAMPLE_COST_CENTRE: case ELS_EV_PROF_SAMPLE_COST_CENTRE:
        mon_on_prof(m, &e);
        break;
    default:
        break;
    }
    e.gb->threads = m->threads.alive.used;
    return 0;
}

/* ------------------------------------------------------------------------
 * Lifecycle and feeding
 * ------------------------------------------------------------------------ */

static void mon_clear_run(struct mon_model *m)
{
    for (unsigned c = 0; c < MON_MAX_CAPS; c++)
        free(m->caps.at[c].bins);
    for (uint32_t i = 0; i < m->prof.nccs; i++) {
        free(m->prof.ccs[i].label);
        free(m->prof.ccs[i].module);
    }
    free(m->prof.ccs);
    free(m->threads.alive.slots);
    free(m->stops.stopped.slots);
    free(m->stops.stopped.times);
    mon_tevs_free(m);
    free(m->prof.ring);
    free(m->tl.gbins);
}


void mon_model_set_tap(struct mon_model *m, mon_event_tap fn, void *ctx)
{
    m->tap = fn;
    m->tap_ctx = ctx;
}

int mon_model_new(struct mon_model **out)
{
    mon_key_init();
    mon_classes_init();
    struct mon_model *m = calloc(1, sizeof *m);
    if (m == NULL)
        return ELS_ENOMEM;
    const struct els_parse_callbacks cb = {
        .struct_size = sizeof cb,
        .on_header = mon_on_header,
        .on_event = mon_on_event,
        .on_end = mon_on_end,
    };
    mon_tids_init(m);
    int rc = els_parser_new(&m->parser, &cb, m, ELS_PARSE_RESTART);
    if (rc < 0) {
        free(m);
        return rc;
    }
    m->tl.bin_ns = MON_BIN0_NS;
    m->tl.gbins = calloc(MON_BINS, sizeof *m->tl.gbins);
    if (m->tl.gbins == NULL) {
        els_parser_free(m->parser);
        free(m);
        return ELS_ENOMEM;
    }
    *out = m;
    return 0;
}

void mon_model_free(struct mon_model *m)
{
    if (m == NULL)
        return;
    mon_clear_run(m);
    els_parser_free(m->parser);
    free(m);
}

void mon_model_reset(struct mon_model *m)
{
    struct els_parser *p = m->parser;
    struct mon_model keep = *m;
    mon_clear_run(m);
    els_parser_reset(p);
    memset(m, 0, sizeof *m);
    m->parser = p;
    mon_tids_init(m);
    m->tl.bin_ns = MON_BIN0_NS;
    m->tl.gbins = calloc(MON_BINS, sizeof *m->tl.gbins);
    memcpy(m->src.spec, keep.src.spec, sizeof m->src.spec);
    memcpy(m->src.state, keep.src.state, sizeof m->src.state);
    m->src.connections = keep.src.connections;
    m->tap = keep.tap;
    m->tap_ctx = keep.tap_ctx;
    if (m->tap != NULL)
        m->tap(m->tap_ctx, m, NULL);
}

int mon_model_feed(struct mon_model *m, const void *buf, size_t len)
{
    if (m->failed || m->tl.gbins == NULL) {
        m->src.bytes_skipped += len;
        return ELS_EINVAL;
    }
    m->src.bytes += len;
    m->user.feed_lo = (uintptr_t)buf;
    m->user.feed_hi = m->user.feed_lo + len;
    int rc = els_parser_feed(m->parser, buf, len, NULL);
    mon_user_msgs_copy(m);
    m->user.feed_lo = m->user.feed_hi = 0;
    if (rc < 0) {
        struct els_parse_status st;
        els_parser_status(m->parser, &st);
        snprintf(m->error, sizeof m->error, "%s", st.error ? st.error : "malformed stream");
        m->failed = true;
        return ELS_EINVAL;
    }
    return 0;
}

const char *mon_model_error(const struct mon_model *m)
{
    return m->failed ? m->error : NULL;
}

void mon_model_set_source(struct mon_model *m, const char *spec,
                          const char *state)
{
    if (spec != NULL)
        snprintf(m->src.spec, sizeof m->src.spec, "%s", spec);
    snprintf(m->src.state, sizeof m->src.state, "%s", state);
}

void mon_model_note_connection(struct mon_model *m)
{
    m->src.connections++;
}


void mon_model_summary(const struct mon_model *m, struct mon_summary *out)
{
    *out = (struct mon_summary){
        .now_ns = m->run.now, .bytes = m->src.bytes, .events = m->counts.events,
        .collections = mon_collections(m), .gc_starts = m->gc.starts,
        .heap_allocated = m->heap.alloc - mon_alloc_base(m), .threads_created = m->threads.created,
        .threads_alive = m->threads.alive.used, .user_messages = m->user.messages,
        .markers = m->user.markers, .streams = m->run.streams, .caps = m->caps.n,
        .ended = m->run.ended, .probes = m->threads.probes,
        .threads_untracked = m->threads.untracked,
        .ccs_refused = m->prof.ccs_refused, .strings_cut = m->prof.strings_cut,
        .memory = mon_model_memory(m),
    };
}
