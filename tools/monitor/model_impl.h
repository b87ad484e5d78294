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
#define MON_CCS_MAX 65536           /* cost-centre ids kept: 0 .. this - 1 */
#define MON_CC_NAME 128             /* bytes kept of a cost centre's name */
#define MON_CC_TEXT_MAX (8u << 20)  /* all cost centres' names, charged: */
/* a name of n bytes costs its copy and malloc's overhead (at most 32
 * bytes on glibc) */
#define MON_CC_CHARGE(n) ((size_t)(n) + 1 + 32)
#define MON_LABELS 64               /* heap sample entries kept */
#define MON_SAMPLES 32768           /* cost-centre samples kept */
#define MON_STACK 24                /* frames kept per sample */

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

struct mon_thread {
    uint32_t id;                    /* 0: empty slot */
    uint8_t state;
};

struct mon_cc {
    char *label, *module;           /* NULL: unknown or refused */
    uint64_t samples, prev_samples;
    uint64_t heap, heap_gen;        /* the sample heap_gen's bytes */
};

struct mon_sample {
    uint64_t t;
    uint8_t depth;
    uint32_t ids[MON_STACK];        /* innermost first */
};

struct mon_label {
    char s[MON_TEXT];
    uint64_t bytes;
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

    /* GC: gc_ns sums the pauses (GC_START to GC_END) over capabilities;
     * gc_frac, the last interval's share of the capabilities' time in
     * them (see mon_model_tick()), is at most 1 */
    unsigned gc_caps;               /* capabilities gc_frac divides by */
    uint64_t gcs, gc_ns, pause_max;
    uint64_t pauses[MON_PAUSES];
    unsigned npauses;
    uint64_t pause_hist[MON_PAUSE_BUCKETS + 1];

    /* heap */
    uint64_t heap_size, heap_live, heap_alloc, heap_max;
    struct mon_label labels[MON_LABELS], staging[MON_LABELS];
    unsigned nlabels, nstaging;
    uint64_t heap_samples;
    bool in_sample, sample_by_cc;

    /* threads (open addressing, linear probing, backward-shift deletes,
     * keyed hash: Note [Stream-chosen keys] in model_tables.c) */
    struct mon_thread *threads;
    uint32_t threads_cap, threads_used;
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
    uint64_t notes, dropped_units, dropped_bytes, missed_units, missed_bytes,
             late_units, late_bytes;
    struct mon_text note_texts[MON_RECENT];

    /* profiling */
    struct mon_cc *ccs;             /* indexed by cost-centre id */
    uint32_t nccs;
    size_t cc_text;                 /* names' charge (MON_CC_CHARGE) */
    uint64_t ccs_refused, strings_cut, heap_gen;
    size_t mem;                     /* allocated beyond the struct, gbins */
    uint64_t prof_samples;
    struct mon_sample *samples;     /* ring of MON_SAMPLES */

    /* the last tick's interval */
    double interval_s;
    uint64_t prev_now, prev_events, prev_class[MON_CLASS_N], prev_gcs,
             prev_gc_ns, prev_alloc, prev_sp[7], prev_user, prev_bytes;
    double rate_events, rate_class[MON_CLASS_N], rate_gcs, gc_frac,
           rate_alloc, rate_sp[7], rate_user, rate_bytes;
    struct mon_text_topcc { uint32_t id; uint64_t n; } top[10];
    unsigned ntop;
};

/* Cost centre i's bytes in the last heap sample by cost centre. */
static inline uint64_t mon_cc_heap(const struct mon_model *m, uint32_t i)
{
    return m->ccs[i].heap_gen == m->heap_gen ? m->ccs[i].heap : 0;
}

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

/* model_tables.c: draw the process's hash key, once (before any table
 * is used: mon_model_new()). */
void mon_key_init(void);
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
