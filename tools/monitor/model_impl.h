/*
 * model_impl.h: the monitor model's state, shared by the files that
 * build it from events (model.c, with model_time.c for time and
 * timelines and model_tables.c for the keyed tables) and render.c, which
 * turns it into JSON, timelines, speedscope profiles, Prometheus and
 * terminal text.  Nothing outside tools/monitor/model*.c and render.c
 * includes it: the rest of the tool sees only model.h.
 */
#ifndef ELS_MON_MODEL_IMPL_H
#define ELS_MON_MODEL_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "eventlog-sink/parse.h"
#include "model.h"

/* Tags the public enum does not name (GHC 9.0.2 EventLogFormat.h). */
#define MON_EV_PROF_SAMPLE_COST_CENTRE 167
#define MON_EV_PROF_BEGIN 168

#define MON_MAX_CAPS 256
#define MON_BINS 4096               /* timeline bins before coarsening */
#define MON_BIN0_NS 10000000ull     /* first bin width: 10 ms */
#define MON_PAUSES 1024             /* recent GC pauses for p50/max */
#define MON_RECENT 16               /* recent messages, notes */
#define MON_MARKS 1024              /* recent markers */
#define MON_SPANS 256               /* recent marker spans */
#define MON_OPEN_SPANS 64
#define MON_TEXT 96                 /* bytes kept of a message */
#define MON_THREADS_MAX (1u << 20)  /* thread table cap */
#define MON_STOPPED_MAX (1u << 18)  /* stop table cap (threads stopped) */
#define MON_CCS_MAX 65536           /* cost-centre ids kept: 0 .. this - 1 */
#define MON_CC_NAME 128             /* bytes kept of a cost centre's name */
#define MON_CC_TEXT_MAX (8u << 20)  /* all cost centres' names, charged: */
/* a name of n bytes costs its copy and malloc's overhead (at most 32
 * bytes on glibc) */
#define MON_CC_CHARGE(n) ((size_t)(n) + 1 + 32)
#define MON_BANDS 64                /* bands kept of a heap census */
#define MON_SAMPLES 32768           /* cost-centre samples kept */
#define MON_STACK 24                /* frames kept per sample */
#define MON_GENS 16                 /* generations told apart (later: the last) */
#define MON_TAGS 256                /* event types counted one by one */
#define MON_STOPS 32                /* thread-stop statuses told apart */
#define MON_REORDER 65536           /* runs and stops waiting for their turn */

/* Prometheus histogram bounds of GC pauses, seconds. */
#define MON_PAUSE_BUCKETS 10
extern const double mon_pause_bounds[MON_PAUSE_BUCKETS];

enum mon_cap_state { CAP_IDLE, CAP_RUN, CAP_GC };
enum mon_thread_state { TH_RUNNABLE = 1, TH_RUNNING, TH_BLOCKED };

struct mon_bin {
    uint32_t run_us, gc_us;
};

/* The run-wide series the charts draw, one per timeline bin. */
struct mon_gbin {
    uint32_t events, gcs, user;
    uint32_t threads;               /* alive at the bin's end */
    uint64_t gc_ns, alloc;          /* sums */
    uint64_t heap_size, heap_live;  /* last value */
};

struct mon_cap {
    bool seen;
    enum mon_cap_state state;
    uint64_t since;                 /* when state began */
    uint64_t run_ns, gc_ns;         /* closed states */
    uint64_t gc_start;              /* GC_START on this cap, or 0 */
    uint64_t gc_pause_ns;           /* closed GC_START..GC_END pauses */
    uint64_t gc_starts;             /* GC_START events of this cap */
    /* This cap leads the collection under way (it posted its REQUEST_*_GC
     * or GC_STATS_GHC): its GC_START..GC_END is the collection's pause
     * (Note [Collections] in model.c); gc_gen: GC_STATS_GHC's generation,
     * or -1 before it came. */
    bool gc_lead;
    int gc_gen;
    uint64_t alloc;                 /* its last HEAP_ALLOCATED */
    /* The first HEAP_ALLOCATED and SPARK_COUNTERS seen: a stream that
     * starts mid-run shows the change since (Note [Mid-run streams]) */
    uint64_t alloc_first, sp_first[7];
    bool alloc_seen, sp_seen;
    uint64_t last;                  /* its last event's time */
    uint64_t prev_pause;            /* pause time counted by the last tick */
    struct mon_bin *bins;           /* MON_BINS, allocated when seen */
    /* latest SPARK_COUNTERS */
    uint64_t sp[7];
    /* interval bookkeeping */
    uint64_t prev_run, prev_gc;
    double util, gc_frac;
};

enum { SP_CREATED, SP_DUD, SP_OVERFLOWED, SP_CONVERTED, SP_GCD, SP_FIZZLED,
       SP_REMAINING };
extern const char *const mon_spark_names[7];

struct mon_text {
    uint64_t t;
    int32_t cap;
    char s[MON_TEXT];
};

struct mon_span {
    uint64_t t0, t1;
    char s[MON_TEXT];
};

/* An entry of a table keyed by thread id: the thread table's (state:
 * enum mon_thread_state) or the stop table's (state: the stop's
 * MON_STOPS index; Note [Stopped time] in model.c). */
struct mon_thread {
    uint32_t id;                    /* 0: empty slot */
    uint8_t state;
};

/* Open addressing, linear probing, backward-shift deletes, keyed hash:
 * Note [Stream-chosen keys] in model_tables.c.  A timed table keeps a
 * time beside each entry (times[i] goes with slots[i]); max: the most
 * slots it may grow to. */
struct mon_tids {
    struct mon_thread *slots;
    uint64_t *times;
    uint32_t cap, used, max;
    bool timed;
};

/* A thread's run (reason MON_STOPS) or stop, waiting for its turn in
 * time order (Note [Stopped time] in model.c). */
struct mon_tev {
    uint64_t t, seq;
    uint32_t thread;
    uint8_t reason;
};

/* The RTS's own cost centres (rts/Profiling.c), whose time samples the
 * views show apart from the program's, as GHC's report leaves them out
 * of its tables (ignoreCCS()). */
enum mon_builtin { MON_CC_PROGRAM, MON_CC_GC, MON_CC_IDLE, MON_CC_SYSTEM,
                   MON_CC_OVERHEAD, MON_CC_DONT_CARE, MON_CC_BUILTINS };
extern const char *const mon_builtin_names[MON_CC_BUILTINS];

struct mon_cc {
    char *label, *module;           /* NULL: unknown or refused */
    uint64_t samples, prev_samples;
    uint8_t builtin;                /* enum mon_builtin */
};

struct mon_sample {
    uint64_t t;
    uint8_t depth;
    uint32_t ids[MON_STACK];        /* innermost first */
};

/* One band of a heap census: a string (closure type -hT, module -hm,
 * closure description -hd, type -hy, ...) or, for -hc, a cost-centre
 * stack of depth ids, innermost first (deeper: it had more than
 * MON_STACK frames).  seq: its place in the census (ties keep it). */
struct mon_band {
    uint64_t bytes;
    uint32_t seq;
    uint8_t depth;                  /* 0: a string band */
    bool deeper;
    union {
        char s[MON_TEXT];
        uint32_t ids[MON_STACK];
    } u;
};

/* A heap census: its bands (the MON_BANDS largest), when it began, how
 * many bands and bytes it had in all. */
struct mon_census {
    struct mon_band bands[MON_BANDS];
    unsigned nbands;
    uint64_t t, bands_all, bytes;
};

struct mon_model {
    struct els_parser *parser;
    bool failed;
    char error[256];
    char spec[512], source_state[768];
    uint64_t connections;

    /* stream */
    uint64_t bytes, bytes_skipped, now, streams;
    bool ended;
    /* first: the first event's time (first_seen: one came); midrun: the
     * stream starts mid-run (Note [Mid-run streams] in model.c) */
    uint64_t first;
    bool first_seen, midrun;
    uint64_t events, by_class[MON_CLASS_N];
    char program[128], rts[128];
    uint32_t pid;

    /* capabilities and timeline */
    struct mon_cap caps[MON_MAX_CAPS];
    unsigned ncaps;                 /* highest seen + 1 */
    uint64_t bin_ns;
    struct mon_gbin *gbins;         /* MON_BINS */
    unsigned last_bin;
    /* The bin of the last event, [gbin_lo, gbin_hi): most events fall in
     * it, and finding a bin otherwise costs two divisions. */
    uint64_t gbin_lo, gbin_hi;
    unsigned gbin_idx;

    /* GC (Note [Collections] in model.c): collections counted by their
     * requests and by their GC_STATS_GHC (per generation); pauses are
     * collections' (the leading capability's GC_START to GC_END).
     * gc_starts counts every capability's GC_START; gc_ns sums every
     * capability's GC_START..GC_END, and gc_frac, the last interval's
     * share of the capabilities' time in them (see mon_model_tick()),
     * is at most 1. */
    unsigned gc_caps;               /* capabilities gc_frac divides by */
    uint64_t gc_requests, gc_stats, gen_colls[MON_GENS];
    unsigned ngens;                 /* generations seen (stats, heap info) */
    uint64_t gc_starts, gc_ns;
    uint64_t pause_max, pause_ns, npauses, gen_pause_max[MON_GENS],
             gen_pause_ns[MON_GENS], gen_npauses[MON_GENS];
    uint64_t pauses[MON_PAUSES];    /* recent collections' pauses */
    uint64_t pause_hist[MON_PAUSE_BUCKETS + 1];

    /* heap: heap_alloc is the sum of every capability's last
     * HEAP_ALLOCATED (alloc_nocap: such events outside a capability's
     * block); census is the last complete heap census, staging the one
     * under way; heap_breakdown: HEAP_PROF_BEGIN's (GHC's HEAP_BY_*
     * number, 0 before it came) */
    uint64_t heap_size, heap_live, heap_alloc, alloc_nocap, heap_max;
    uint64_t alloc_nocap_first;
    uint64_t heap_live_t;           /* the last HEAP_LIVE's time */
    bool alloc_nocap_seen;
    struct mon_census census, staging;
    uint64_t heap_samples;
    uint32_t heap_breakdown;
    bool in_sample;

    /* event types: events and their payloads' bytes by tag (MON_TAGS:
     * all larger tags); mon_type_bytes() in render.c adds the rest */
    uint64_t type_n[MON_TAGS + 1], type_payload[MON_TAGS + 1];

    /* thread stops by status (MON_STOPS - 1: all larger), the time from
     * each stop to the thread's next run (Note [Stopped time] in
     * model.c) and how many stops that time covers */
    uint64_t stop_n[MON_STOPS], stop_ns[MON_STOPS], stop_paired[MON_STOPS];
    struct mon_tids stopped;        /* threads stopped, in time order */
    struct mon_tev *tevs;           /* a min-heap by (t, seq) of MON_REORDER */
    uint32_t ntevs;
    uint64_t tev_seq, tevs_early, stops_untracked;
    bool caps_known;                /* a CAP_CREATE came */

    /* threads: alive ones by state */
    struct mon_tids threads;
    uint64_t threads_created, threads_untracked;
    uint64_t probes;                /* table slots looked at, for tests */

    /* sparks: sum over caps of SPARK_COUNTERS; spark events */
    uint64_t spark_events;

    /* user events: msgs[i]'s text is copied from msg_src[i] when the
     * feed call ends, if msg_src[i].ptr is set (Note [Recent messages]
     * in model.c) */
    uint64_t user_messages, markers;
    struct mon_text msgs[MON_RECENT];
    struct els_str msg_src[MON_RECENT];
    uintptr_t feed_lo, feed_hi;     /* the piece being fed, else 0, 0 */
    struct mon_text marks[MON_MARKS];
    struct mon_span spans[MON_SPANS];
    struct mon_text open_spans[MON_OPEN_SPANS];
    unsigned nopen;
    uint64_t nspans;

    /* loss notes (a join at a snapshot is no loss: joined_at_snapshot) */
    bool joined_at_snapshot;
    uint64_t notes, loss_notes, dropped_units, dropped_bytes, missed_units, missed_bytes,
             late_units, late_bytes;
    struct mon_text note_texts[MON_RECENT];

    /* profiling */
    struct mon_cc *ccs;             /* indexed by cost-centre id */
    uint32_t nccs;
    size_t cc_text;                 /* names' charge (MON_CC_CHARGE) */
    uint64_t ccs_refused, strings_cut;
    size_t mem;                     /* allocated beyond the struct, gbins */
    uint64_t prof_samples;
    struct mon_sample *samples;     /* ring of MON_SAMPLES */
    /* time samples of the RTS's own cost centres (depth 1), by
     * enum mon_builtin (MON_CC_PROGRAM: the program's own) */
    uint64_t cc_kind_samples[MON_CC_BUILTINS],
             prev_kind_samples[MON_CC_BUILTINS], kind_interval[MON_CC_BUILTINS];

    /* the last tick's interval; whole_run: it was the stream's whole
     * span (a saved file, or a stream that ended: Note [After the end]
     * in model_time.c) */
    double interval_s;
    bool whole_run;
    uint64_t prev_now, prev_events, prev_class[MON_CLASS_N], prev_gcs,
             prev_gc_ns, prev_alloc, prev_sp[7], prev_user, prev_bytes;
    double rate_events, rate_class[MON_CLASS_N], rate_gcs, gc_frac,
           rate_alloc, rate_sp[7], rate_user, rate_bytes;
    struct mon_text_topcc { uint32_t id; uint64_t n; } top[10];
    unsigned ntop;
};

/* Collections so far: Note [Collections] in model.c. */
static inline uint64_t mon_collections(const struct mon_model *m)
{
    return m->gc_stats > m->gc_requests ? m->gc_stats : m->gc_requests;
}

/* The part of the cumulative counters (HEAP_ALLOCATED, SPARK_COUNTERS)
 * the stream does not cover: 0 for a stream from the run's start, the
 * first values seen for one that starts mid-run (Note [Mid-run streams]
 * in model.c).  sp: the seven spark counters' bases. */
uint64_t mon_alloc_base(const struct mon_model *m);
void mon_spark_base(const struct mon_model *m, uint64_t sp[7]);

/* ------------------------------------------------------------------------
 * Between model.c and its helpers
 * ------------------------------------------------------------------------ */

/* model_time.c: the run-wide bin of event time t (coarsening the
 * timelines first if t is beyond them).  Every event asks, and nearly
 * every one falls in the last event's bin: that test is inline, the
 * rest in mon_gbin_find(). */
struct mon_gbin *mon_gbin_find(struct mon_model *m, uint64_t t);
static inline struct mon_gbin *mon_gbin_at(struct mon_model *m, uint64_t t)
{
    if (t >= m->gbin_lo && t < m->gbin_hi)
        return &m->gbins[m->gbin_idx];     /* in range, so no refit due */
    return mon_gbin_find(m, t);
}
/* model_time.c: capability cap, its timeline allocated when first seen;
 * NULL beyond MON_MAX_CAPS or out of memory.  Every event asks, so a cap
 * already seen is found inline; mon_cap_first() does the rest. */
struct mon_cap *mon_cap_first(struct mon_model *m, int32_t cap);
static inline struct mon_cap *mon_cap(struct mon_model *m, int32_t cap)
{
    if ((uint32_t)cap < MON_MAX_CAPS && m->caps[cap].seen)
        return &m->caps[cap];
    return mon_cap_first(m, cap);
}
/* model_time.c: c enters state s at event time t (never before the
 * state it leaves began), the time in that state added to its timeline. */
void mon_cap_set(struct mon_model *m, struct mon_cap *c,
                 enum mon_cap_state s, uint64_t t);

/* model.c: pair the waiting runs and stops whose turn came, or all of
 * them (Note [Stopped time]). */
void mon_tevs_release(struct mon_model *m, bool all);

/* model_tables.c: draw the process's hash key, once (before any table
 * is used: mon_model_new()). */
void mon_key_init(void);
/* model_tables.c: the tables' caps and kinds (mon_model_new(), and
 * after a reset). */
void mon_tids_init(struct mon_model *m);
/* model_tables.c: thread id's entry in tab, added (zeroed but for the
 * id) if new and create; NULL if absent or if the table is full (at
 * tab->max slots, or out of memory).  Valid until the table changes. */
struct mon_thread *mon_tid_get(struct mon_model *m, struct mon_tids *tab,
                               uint32_t id, bool create);
/* The time kept beside entry e of a timed table. */
static inline uint64_t *mon_tid_time(struct mon_tids *tab, struct mon_thread *e)
{
    return &tab->times[e - tab->slots];
}
void mon_tid_del(struct mon_model *m, struct mon_tids *tab, uint32_t id);
/* model_tables.c: set thread id's state, adding it if new (if the table
 * is full: counted in threads_untracked); forget a thread. */
void mon_thread_set(struct mon_model *m, uint32_t id, uint8_t state);
void mon_thread_del(struct mon_model *m, uint32_t id);
/* model_tables.c: threads alive by state. */
void mon_thread_counts(const struct mon_model *m, uint64_t *runnable,
                       uint64_t *running, uint64_t *blocked);
/* model_tables.c: cost centre id, grown into the table with create
 * (counted in ccs_refused at MON_CCS_MAX); NULL if absent or refused. */
struct mon_cc *mon_cc(struct mon_model *m, uint32_t id, bool create);
/* model_tables.c: replace c's names with copies cut to MON_CC_NAME, or
 * forget them when they would take the names over MON_CC_TEXT_MAX
 * (counted in ccs_refused, shown as "?"). */
void mon_cc_set_names(struct mon_model *m, struct mon_cc *c,
                      struct els_str label, struct els_str module);

#endif /* ELS_MON_MODEL_IMPL_H */
