/*
 * series.c: the metric families and the walk over one model's series
 * (see series.h).  Which figure goes under which name, with which
 * labels, is decided here once; the writers (render_prom.c, and any
 * other exporter) only format what the walk hands them.
 */
#include <stdio.h>
#include <string.h>

#include "render.h"
#include "series.h"

enum {
    PF_PAUSE, PF_GC_RATIO, PF_COLLECTIONS, PF_GEN_PAUSE_MAX, PF_GC_STARTS,
    PF_HEAP_SIZE, PF_HEAP_LIVE, PF_HEAP_ALLOC, PF_CENSUS_BYTES, PF_CENSUS_TIME,
    PF_CENSUSES, PF_THREADS, PF_THREADS_CREATED, PF_STOPS, PF_STOPPED,
    PF_SPARKS, PF_SPARK_POOL, PF_CAP_UTIL, PF_CAP_GC, PF_EVENTS,
    PF_EVENTS_RATE, PF_TYPE_EVENTS, PF_TYPE_BYTES, PF_USER, PF_BYTES,
    PF_LOST_UNITS, PF_LOST_BYTES, PF_UNREAD, PF_N
};

/* Bands of the last census among the series (the largest; the page and
 * --json have all MON_BANDS kept). */
#define MON_SERIES_BANDS 20

#define C MON_SERIES_COUNTER
#define G MON_SERIES_GAUGE
const struct mon_family mon_families[PF_N] = {
    [PF_PAUSE] = { "ghc_gc_pause_seconds", MON_SERIES_HISTOGRAM,
                   "GC pauses, one per collection: its leading capability's "
                   "GC_START to GC_END (the elapsed time +RTS -s counts)" },
    [PF_GC_RATIO] = { "ghc_gc_time_ratio", G,
                      "Share of the capabilities' time spent in GC pauses over "
                      "the last interval (GC time summed over capabilities / "
                      "(interval x capabilities)); at most 1" },
    [PF_COLLECTIONS] = { "ghc_gc_collections_total", C,
                         "GC collections (one per REQUEST_SEQ_GC/REQUEST_PAR_GC or "
                         "GC_STATS_GHC, as +RTS -s counts colls) by generation; "
                         "gen=\"unknown\": collections the stream gave no "
                         "generation for" },
    [PF_GEN_PAUSE_MAX] = { "ghc_gc_pause_max_seconds", G,
                           "Longest collection pause by generation (+RTS -s's "
                           "Max pause)" },
    [PF_GC_STARTS] = { "ghc_gc_capability_starts_total", C,
                       "GC_START events by capability: every capability taking "
                       "part in a collection posts one (not collections)" },
    [PF_HEAP_SIZE] = { "ghc_heap_size_bytes", G, "Heap size" },
    [PF_HEAP_LIVE] = { "ghc_heap_live_bytes", G, "Live data after the last GC" },
    [PF_HEAP_ALLOC] = { "ghc_heap_allocated_bytes_total", C,
                        "Bytes allocated: the sum of every capability's last "
                        "HEAP_ALLOCATED (+RTS -s's bytes allocated in the heap)" },
    [PF_CENSUS_BYTES] = { "ghc_heap_census_bytes", G,
                          "Bytes of the largest bands of the last heap census "
                          "(-hT, -hc, -hm, -hd, -hy, ...)" },
    [PF_CENSUS_TIME] = { "ghc_heap_census_time_seconds", G,
                         "When the last heap census began, in seconds of the run" },
    [PF_CENSUSES] = { "ghc_heap_censuses_total", C, "Heap censuses" },
    [PF_THREADS] = { "ghc_threads", G, "Haskell threads alive by state" },
    [PF_THREADS_CREATED] = { "ghc_threads_created_total", C,
                             "Haskell threads created" },
    [PF_STOPS] = { "ghc_thread_stops_total", C,
                   "Thread stops by reason (STOP_THREAD's status)" },
    [PF_STOPPED] = { "ghc_thread_stopped_seconds_total", C,
                     "Time from each thread stop to the thread's next run, by "
                     "the stop's reason" },
    [PF_SPARKS] = { "ghc_sparks_total", C,
                    "Spark counters summed over capabilities" },
    [PF_SPARK_POOL] = { "ghc_spark_pool", G, "Sparks in the pool per capability" },
    [PF_CAP_UTIL] = { "ghc_capability_utilisation", G,
                      "Share of the last interval a capability ran Haskell code" },
    [PF_CAP_GC] = { "ghc_capability_gc_ratio", G,
                    "Share of the last interval a capability spent in GC" },
    [PF_EVENTS] = { "eventlog_events_total", C, "Events read by class" },
    [PF_EVENTS_RATE] = { "eventlog_events_per_second", G,
                         "Events per second over the last interval by class" },
    [PF_TYPE_EVENTS] = { "eventlog_events_by_type_total", C,
                         "Events read by type (the stream's description of the tag)" },
    [PF_TYPE_BYTES] = { "eventlog_event_bytes_by_type_total", C,
                        "Bytes of the events read by type (tag, time, size, payload)" },
    [PF_USER] = { "eventlog_user_events_total", C, "User messages and markers" },
    [PF_BYTES] = { "eventlog_received_bytes_total", C, "Eventlog bytes received" },
    [PF_LOST_UNITS] = { "eventlog_lost_units_total", C,
                        "Units the sink reported lost in-band, by kind" },
    [PF_LOST_BYTES] = { "eventlog_lost_bytes_total", C,
                        "Bytes the sink reported lost in-band, by kind" },
    [PF_UNREAD] = { "eventlog_unread_bytes_total", C,
                    "Bytes not interpreted after the stream became malformed" },
};
#undef C
#undef G
const size_t mon_families_n = PF_N;

/* A walk through one family of one model. */
struct mon_walk {
    const struct mon_model *m;
    mon_series_fn fn;
    void *ctx;
    struct mon_series s;
    size_t f;
};

/* A series with labels key = value (NULL keys: fewer labels). */
static void mon_put(struct mon_walk *w, double v, const char *k1,
                    const char *v1, size_t l1, const char *k2, const char *v2)
{
    struct mon_series *s = &w->s;
    s->nlabels = 0;
    if (k1 != NULL)
        s->labels[s->nlabels++] = (struct mon_label){ k1, v1, l1 };
    if (k2 != NULL)
        s->labels[s->nlabels++] = (struct mon_label){ k2, v2, strlen(v2) };
    s->value = v;
    w->fn(w->ctx, s);
}

static void mon_put0(struct mon_walk *w, double v)
{
    mon_put(w, v, NULL, NULL, 0, NULL, NULL);
}

static void mon_put1(struct mon_walk *w, const char *key, const char *val, double v)
{
    mon_put(w, v, key, val, strlen(val), NULL, NULL);
}

/* Per generation, per capability, per kind: a label of a number. */
static void mon_put_n(struct mon_walk *w, const char *key, unsigned n, double v)
{
    char buf[16];
    snprintf(buf, sizeof buf, "%u", n);
    mon_put1(w, key, buf, v);
}

static void mon_walk_pauses(struct mon_walk *w)
{
    const struct mon_gc_part *gc = &w->m->gc;
    uint64_t cum[MON_PAUSE_BUCKETS + 1], n = 0;
    for (size_t b = 0; b <= MON_PAUSE_BUCKETS; b++)
        cum[b] = n += gc->pause_hist[b];
    w->s.nbounds = MON_PAUSE_BUCKETS;
    w->s.bounds = mon_pause_bounds;
    w->s.cumulative = cum;
    mon_put0(w, (double)gc->pause_ns / 1e9);
    w->s.nbounds = 0;
    w->s.bounds = NULL;
    w->s.cumulative = NULL;
}

/* Collections, their pauses and GC's time (Note [Collections]). */
static void mon_walk_gc(struct mon_walk *w)
{
    const struct mon_model *m = w->m;
    switch (w->f) {
    case PF_PAUSE: mon_walk_pauses(w); break;
    case PF_GC_RATIO: mon_put0(w, m->rate.gc_frac); break;
    case PF_COLLECTIONS: {
        for (unsigned g = 0; g < m->gc.ngens; g++)
            mon_put_n(w, "gen", g, (double)m->gc.gen_colls[g]);
        uint64_t unknown = mon_collections(m) - m->gc.stats;
        if (unknown > 0 || m->gc.ngens == 0)
            mon_put1(w, "gen", "unknown", (double)unknown);
        break;
    }
    case PF_GEN_PAUSE_MAX:
        for (unsigned g = 0; g < m->gc.ngens; g++)
            mon_put_n(w, "gen", g, (double)m->gc.gen_pause_max[g] / 1e9);
        break;
    }
}

static void mon_walk_census(struct mon_walk *w)
{
    const struct mon_model *m = w->m;
    unsigned order[MON_BANDS];
    struct strbuf band = { 0 };
    mon_band_order(&m->heap.census, order);
    for (unsigned i = 0; i < m->heap.census.nbands && i < MON_SERIES_BANDS; i++) {
        const struct mon_band *b = &m->heap.census.bands[order[i]];
        mon_band_name(m, b, &band);
        mon_put(w, (double)b->bytes, "band", band.p ? band.p : "", band.len,
                NULL, NULL);
    }
    sb_free(&band);
}

static void mon_walk_heap(struct mon_walk *w)
{
    const struct mon_model *m = w->m;
    switch (w->f) {
    case PF_HEAP_SIZE: mon_put0(w, (double)m->heap.size); break;
    case PF_HEAP_LIVE: mon_put0(w, (double)m->heap.live); break;
    case PF_HEAP_ALLOC: mon_put0(w, (double)mon_allocated(m)); break;
    case PF_CENSUS_BYTES: mon_walk_census(w); break;
    case PF_CENSUS_TIME:
        if (m->heap.censuses > 0)
            mon_put0(w, (double)m->heap.census.t / 1e9);
        break;
    case PF_CENSUSES: mon_put0(w, (double)m->heap.censuses); break;
    }
}

/* Threads by state, their stops by reason. */
static void mon_walk_threads(struct mon_walk *w)
{
    const struct mon_model *m = w->m;
    uint64_t runnable, running, blocked;
    unsigned rank[MON_STOPS], n;
    switch (w->f) {
    case PF_THREADS:
        mon_thread_counts(m, &runnable, &running, &blocked);
        if (m->run.ended)           /* Note [After the end] */
            runnable = running = blocked = 0;
        mon_put1(w, "state", "running", (double)running);
        mon_put1(w, "state", "runnable", (double)runnable);
        mon_put1(w, "state", "blocked", (double)blocked);
        break;
    case PF_THREADS_CREATED: mon_put0(w, (double)m->threads.created); break;
    case PF_STOPS: case PF_STOPPED:
        n = mon_rank(m->stops.n, MON_STOPS, rank);
        for (unsigned i = 0; i < n; i++) {
            char buf[48];
            mon_put1(w, "reason", mon_stop_name(rank[i], buf, sizeof buf),
                     w->f == PF_STOPS ? (double)m->stops.n[rank[i]]
                                      : (double)m->stops.ns[rank[i]] / 1e9);
        }
        break;
    }
}

/* Sparks, and what each capability did. */
static void mon_walk_caps(struct mon_walk *w)
{
    const struct mon_model *m = w->m;
    if (w->f == PF_SPARKS) {
        uint64_t sp[7];
        mon_spark_totals(m, sp);
        for (int k = 0; k < 6; k++)
            mon_put1(w, "outcome", mon_spark_names[k], (double)sp[k]);
        return;
    }
    for (unsigned c = 0; c < m->caps.n; c++) {
        const struct mon_cap *cp = &m->caps.at[c];
        if (!cp->seen)
            continue;
        mon_put_n(w, "cap", c, w->f == PF_GC_STARTS ? (double)cp->gc_starts :
                  w->f == PF_SPARK_POOL ? (double)cp->sp[SP_REMAINING] :
                  w->f == PF_CAP_UTIL ? cp->util : cp->gc_frac);
    }
}

/* Events by class and by type. */
static void mon_walk_events(struct mon_walk *w)
{
    const struct mon_model *m = w->m;
    if (w->f == PF_EVENTS || w->f == PF_EVENTS_RATE) {
        for (int i = 0; i < MON_CLASS_N; i++)
            mon_put1(w, "class", mon_class_name((enum mon_class)i),
                     w->f == PF_EVENTS ? (double)m->counts.by_class[i]
                                       : m->rate.class[i]);
        return;
    }
    unsigned rank[MON_TAGS + 1];
    unsigned n = mon_rank(m->counts.type_n, MON_TAGS + 1, rank);
    for (unsigned i = 0; i < n; i++) {
        char buf[48], tag[16];
        const char *t = mon_type_name(m, rank[i], buf, sizeof buf);
        snprintf(tag, sizeof tag, "%u", rank[i]);
        mon_put(w, w->f == PF_TYPE_EVENTS ? (double)m->counts.type_n[rank[i]]
                                          : (double)mon_type_bytes(m, rank[i]),
                "type", t, strlen(t), "tag", tag);
    }
}

/* Kinds of loss the sink reported in-band: units or bytes. */
static void mon_walk_loss(struct mon_walk *w, uint64_t dropped, uint64_t missed,
                          uint64_t late)
{
    mon_put1(w, "kind", "dropped", (double)dropped);
    mon_put1(w, "kind", "missed", (double)missed);
    mon_put1(w, "kind", "joined_late", (double)late);
}

/* The stream: user events, bytes, loss. */
static void mon_walk_stream(struct mon_walk *w)
{
    const struct mon_model *m = w->m;
    const struct mon_loss_part *l = &m->loss;
    switch (w->f) {
    case PF_USER:
        mon_put1(w, "kind", "message", (double)m->user.messages);
        mon_put1(w, "kind", "marker", (double)m->user.markers);
        break;
    case PF_BYTES: mon_put0(w, (double)m->src.bytes); break;
    case PF_LOST_UNITS:
        mon_walk_loss(w, l->dropped_units, l->missed_units, l->late_units);
        break;
    case PF_LOST_BYTES:
        mon_walk_loss(w, l->dropped_bytes, l->missed_bytes, l->late_bytes);
        break;
    case PF_UNREAD: mon_put0(w, (double)m->src.bytes_skipped); break;
    }
}

void mon_series_walk_family(const struct mon_model *m, size_t f,
                            mon_series_fn fn, void *ctx)
{
    if (f >= PF_N)
        return;
    struct mon_walk w = {
        .m = m, .fn = fn, .ctx = ctx, .f = f,
        .s = { .family = &mon_families[f], .program = m->run.program,
               .pid = m->run.pid },
    };
    if (f <= PF_GEN_PAUSE_MAX)
        mon_walk_gc(&w);
    else if (f >= PF_HEAP_SIZE && f <= PF_CENSUSES)
        mon_walk_heap(&w);
    else if (f >= PF_THREADS && f <= PF_STOPPED)
        mon_walk_threads(&w);
    else if (f == PF_GC_STARTS || (f >= PF_SPARKS && f <= PF_CAP_GC))
        mon_walk_caps(&w);
    else if (f >= PF_EVENTS && f <= PF_TYPE_BYTES)
        mon_walk_events(&w);
    else
        mon_walk_stream(&w);
}

void mon_series_walk(const struct mon_model *m, mon_series_fn fn, void *ctx)
{
    for (size_t f = 0; f < PF_N; f++)
        mon_series_walk_family(m, f, fn, ctx);
}
