/*
 * model_impl.h: the monitor model's state, shared by the files that
 * build it from events (model.c, with model_time.c for time and
 * timelines, model_tables.c for the keyed tables, model_stops.c for
 * thread stops, model_prof.c for profiling and model_user.c for
 * messages, markers and the sink's notes) and the renderers
 * that read it (render*.c: JSON, timelines, speedscope profiles,
 * Prometheus and terminal text; series.c: the metrics).  Each part of
 * the state names the file that writes it (Note [The model's owners]).
 * Nothing outside tools/monitor/ includes it: the rest of the tool sees
 * only model.h.
 */
#ifndef ELS_MON_MODEL_IMPL_H
#define ELS_MON_MODEL_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "eventlog-sink/parse.h"
#include "model.h"

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
#define MON_REORDER (1u << 18)      /* runs and stops waiting for their turn */
#define MON_TEV_CHUNK 256           /* their queues' allocation unit */
/* Chunks enough for MON_REORDER, and for each queue's part-filled two */
#define MON_TEV_CHUNKS (MON_REORDER / MON_TEV_CHUNK + 2 * (MON_MAX_CAPS + 1))
#define MON_TEV_BACK 32             /* places one is moved back in its queue */

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
 * MON_STOPS index; Note [Stopped time] in model_stops.c). */
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
 * time order (Note [Stopped time] in model_stops.c). */
struct mon_tev {
    uint64_t t, seq;
    uint32_t thread;
    uint8_t reason;
};

/* A source's waiting runs and stops: chunks of MON_TEV_CHUNK, each
 * holding at[lo, hi), linked from first to last (Note [Waiting queues]). */
struct mon_tevchunk {
    struct mon_tevchunk *next, *prev;
    uint32_t lo, hi;
    struct mon_tev at[MON_TEV_CHUNK];
};
struct mon_tevq {
    struct mon_tevchunk *first, *last;
    bool listed;                    /* in the stops part's active[] */
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

/* Note [The model's owners]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~
 * struct mon_model is a set of parts, each written by one file (named
 * at its struct) and read by the renderers (render_*.c, series.c),
 * which change nothing.  model.c's event dispatch hands a family's
 * events to that family's handler (its own, model_prof.c's or
 * model_user.c's), which updates that family's part from them only;
 * model_time.c closes the rate
 * intervals from the parts' totals; model_tables.c owns the keyed
 * tables inside the thread, stop and profiling parts. */

/* The source: what mon_model_set_source() says and the bytes fed
 * (model.c; spec, state and connections survive a reset). */
struct mon_source_part {
    char spec[512], state[768];
    uint64_t connections;
    uint64_t bytes, bytes_skipped;  /* fed; fed after a malformation */
};

/* The run: the stream's span and the program's identity (model.c).
 * first: the first event's time (first_seen: one came); midrun: the
 * stream starts mid-run, as the sink's notes say (model_user.c; Note
 * [Mid-run streams] in model.c). */
struct mon_run_part {
    uint64_t now, streams;
    bool ended;
    uint64_t first;
    bool first_seen, midrun;
    char program[128], rts[128];
    uint32_t pid;
};

/* Events by class and by type: events and their payloads' bytes by tag
 * (MON_TAGS: all larger tags; model.c's mon_count_type());
 * mon_type_bytes() in render.c adds the rest. */
struct mon_counts_part {
    uint64_t events, by_class[MON_CLASS_N];
    uint64_t type_n[MON_TAGS + 1], type_payload[MON_TAGS + 1];
};

/* The capabilities (model.c, model_time.c): n is the highest seen + 1;
 * known: a CAP_CREATE came (Note [Stopped time] in model_stops.c). */
struct mon_caps_part {
    struct mon_cap at[MON_MAX_CAPS];
    unsigned n;
    bool known;
};

/* The run-wide timeline (model_time.c): gbins (MON_BINS) of bin_ns
 * each.  The bin of the last event, [gbin_lo, gbin_hi): most events
 * fall in it, and finding a bin otherwise costs two divisions. */
struct mon_timeline_part {
    uint64_t bin_ns;
    struct mon_gbin *gbins;
    unsigned last_bin;
    uint64_t gbin_lo, gbin_hi;
    unsigned gbin_idx;
};

/* GC (model.c; caps: model_time.c's tick).  Note [Collections] in
 * model.c: collections counted by their requests and by their
 * GC_STATS_GHC (per generation); pauses are collections' (the leading
 * capability's GC_START to GC_END).  starts counts every capability's
 * GC_START; ns sums every capability's GC_START..GC_END, and the rate
 * part's gc_frac, the last interval's share of the capabilities' time
 * in them (see mon_model_tick()), is at most 1. */
struct mon_gc_part {
    unsigned caps;                  /* capabilities gc_frac divides by */
    uint64_t requests, stats, gen_colls[MON_GENS];
    unsigned ngens;                 /* generations seen (stats, heap info) */
    uint64_t starts, ns;
    uint64_t pause_max, pause_ns, npauses, gen_pause_max[MON_GENS],
             gen_pause_ns[MON_GENS], gen_npauses[MON_GENS];
    uint64_t pauses[MON_PAUSES];    /* recent collections' pauses */
    uint64_t pause_hist[MON_PAUSE_BUCKETS + 1];
};

/* The heap (model.c; the censuses: model_prof.c): alloc is the sum of every capability's last
 * HEAP_ALLOCATED (alloc_nocap: such events outside a capability's
 * block); census is the last complete heap census, staging the one
 * under way; breakdown: HEAP_PROF_BEGIN's (GHC's HEAP_BY_* number, 0
 * before it came). */
struct mon_heap_part {
    uint64_t size, live, alloc, alloc_nocap, max;
    uint64_t alloc_nocap_first;
    uint64_t live_t;                /* the last HEAP_LIVE's time */
    bool alloc_nocap_seen;
    struct mon_census census, staging;
    uint64_t censuses;
    uint32_t breakdown;
    bool in_sample;
};

/* Threads alive by state (model.c; the table: model_tables.c). */
struct mon_threads_part {
    struct mon_tids alive;
    uint64_t created, untracked;
    uint64_t probes;                /* table slots looked at, for tests */
};

/* Thread stops by status (MON_STOPS - 1: all larger), the time from
 * each stop to the thread's next run and how many stops that time
 * covers (model_stops.c, Note [Stopped time]). */
struct mon_stops_part {
    uint64_t n[MON_STOPS], ns[MON_STOPS], paired[MON_STOPS];
    struct mon_tids stopped;        /* threads stopped, in time order */
    /* Runs and stops waiting, one queue per source (a capability, or
     * MON_MAX_CAPS: none), each in (t, seq) order; at most MON_REORDER
     * in all, in at most MON_TEV_CHUNKS chunks. */
    struct mon_tevq tevq[MON_MAX_CAPS + 1];
    uint16_t active[MON_MAX_CAPS + 1]; /* the sources that had a chunk */
    unsigned nactive;
    uint32_t ntevs, nchunks;
    uint64_t released_to;           /* the last release's watermark */
    struct mon_tevchunk *spare;     /* emptied chunks, linked by next */
    uint64_t tev_seq, tevs_early, untracked;
};

/* Spark events (model.c); the counters are each capability's
 * (struct mon_cap's sp). */
struct mon_sparks_part {
    uint64_t events;
};

/* User messages and markers (model_user.c): msgs[i]'s text is copied
 * from msg_src[i] when the feed call ends, if msg_src[i].ptr is set
 * (Note [Recent messages] in model_user.c). */
struct mon_user_part {
    uint64_t messages, markers;
    struct mon_text msgs[MON_RECENT];
    struct els_str msg_src[MON_RECENT];
    uintptr_t feed_lo, feed_hi;     /* the piece being fed, else 0, 0 */
    struct mon_text marks[MON_MARKS];
    struct mon_span spans[MON_SPANS];
    struct mon_text open_spans[MON_OPEN_SPANS];
    unsigned nopen;
    uint64_t nspans;
};

/* The sink's in-band notes (model_user.c); a join at a snapshot is no loss
 * (joined_at_snapshot). */
struct mon_loss_part {
    bool joined_at_snapshot;
    uint64_t notes, loss_notes, dropped_units, dropped_bytes, missed_units,
             missed_bytes, late_units, late_bytes;
    struct mon_text note_texts[MON_RECENT];
};

/* Cost-centre profiling (model_prof.c; the table: model_tables.c; the
 * intervals and top: model_time.c's tick).  kind_samples: time samples
 * of the RTS's own cost centres (depth 1), by enum mon_builtin
 * (MON_CC_PROGRAM: the program's own). */
struct mon_prof_part {
    struct mon_cc *ccs;             /* indexed by cost-centre id */
    uint32_t nccs;
    size_t cc_text;                 /* names' charge (MON_CC_CHARGE) */
    uint64_t ccs_refused, strings_cut;
    uint64_t samples;
    struct mon_sample *ring;        /* MON_SAMPLES samples */
    uint64_t kind_samples[MON_CC_BUILTINS],
             prev_kind_samples[MON_CC_BUILTINS], kind_interval[MON_CC_BUILTINS];
    struct mon_text_topcc { uint32_t id; uint64_t n; } top[10];
    unsigned ntop;
};

/* The last tick's interval and rates (model_time.c); whole_run: it was
 * the stream's whole span (a saved file, or a stream that ended: Note
 * [After the end] in model_time.c). */
struct mon_rate_part {
    double interval_s;
    bool whole_run;
    uint64_t prev_now, prev_events, prev_class[MON_CLASS_N], prev_gcs,
             prev_gc_ns, prev_alloc, prev_sp[7], prev_user, prev_bytes;
    double events, class[MON_CLASS_N], gcs, gc_frac, alloc, sp[7], user,
           bytes;
};

struct mon_model {
    struct els_parser *parser;
    bool failed;                    /* the stream is malformed: error says */
    char error[256];
    size_t mem;                     /* allocated beyond the struct, gbins */

    struct mon_source_part src;
    struct mon_run_part run;
    struct mon_counts_part counts;
    struct mon_caps_part caps;
    struct mon_timeline_part tl;
    struct mon_gc_part gc;
    struct mon_heap_part heap;
    struct mon_threads_part threads;
    struct mon_stops_part stops;
    struct mon_sparks_part sparks;
    struct mon_user_part user;
    struct mon_loss_part loss;
    struct mon_prof_part prof;
    struct mon_rate_part rate;
    /* mon_model_set_tap(): kept across mon_model_reset(). */
    mon_event_tap tap;
    void *tap_ctx;
};

/* Collections so far: Note [Collections] in model.c. */
static inline uint64_t mon_collections(const struct mon_model *m)
{
    return m->gc.stats > m->gc.requests ? m->gc.stats : m->gc.requests;
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

/* One event as a family's handler sees it: decoded (d), with its
 * capability (c: NULL outside a capability's block or beyond
 * MON_MAX_CAPS) and its timeline bin (gb). */
struct mon_ev {
    const struct els_event *ev;
    const struct els_event_data *d;
    struct mon_cap *c;
    struct mon_gbin *gb;
};

/* A text of n bytes into dst (cap bytes), cut to fit and terminated.
 * Messages are short: a plain loop.  memcpy() here was inlined as `rep
 * movsq`, whose start-up cost was more than half of the model's time per
 * event on a stream of traceEvent messages (perf annotate). */
static inline void mon_copy(char *dst, size_t cap, const char *s, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    for (size_t i = 0; i < n; i++)
        dst[i] = s[i];
    dst[n] = '\0';
}

/* model_prof.c: heap censuses, cost centres' names and time samples
 * (the HEAP_PROF_* and PROF_* events). */
void mon_on_prof(struct mon_model *m, const struct mon_ev *e);

/* model_user.c: a USER_MSG, whose text is copied when the feed call
 * ends (mon_user_msgs_copy(); Note [Recent messages] in model_user.c). */
void mon_user_msg(struct mon_model *m, const struct els_event *ev);
void mon_user_msgs_copy(struct mon_model *m);
/* model_user.c: a USER_MARKER with its text, which may open or close a
 * span. */
void mon_marker(struct mon_model *m, const struct els_event *ev,
                struct els_str text);
/* model_user.c: a LOG_MSG, the sink's in-band notes (the loss part). */
void mon_on_note(struct mon_model *m, const struct mon_ev *e);

/* model_time.c: the run-wide bin of event time t (coarsening the
 * timelines first if t is beyond them).  Every event asks, and nearly
 * every one falls in the last event's bin: that test is inline, the
 * rest in mon_gbin_find(). */
struct mon_gbin *mon_gbin_find(struct mon_model *m, uint64_t t);
static inline struct mon_gbin *mon_gbin_at(struct mon_model *m, uint64_t t)
{
    if (t >= m->tl.gbin_lo && t < m->tl.gbin_hi)
        return &m->tl.gbins[m->tl.gbin_idx];     /* in range, so no refit due */
    return mon_gbin_find(m, t);
}
/* model_time.c: capability cap, its timeline allocated when first seen;
 * NULL beyond MON_MAX_CAPS or out of memory.  Every event asks, so a cap
 * already seen is found inline; mon_cap_first() does the rest. */
struct mon_cap *mon_cap_first(struct mon_model *m, int32_t cap);
static inline struct mon_cap *mon_cap(struct mon_model *m, int32_t cap)
{
    if ((uint32_t)cap < MON_MAX_CAPS && m->caps.at[cap].seen)
        return &m->caps.at[cap];
    return mon_cap_first(m, cap);
}
/* model_time.c: c enters state s at event time t (never before the
 * state it leaves began), the time in that state added to its timeline. */
void mon_cap_set(struct mon_model *m, struct mon_cap *c,
                 enum mon_cap_state s, uint64_t t);

/* model_stops.c: pair the waiting runs and stops whose turn came, or
 * all of them (Note [Stopped time] in model_stops.c). */
void mon_tevs_release(struct mon_model *m, bool all);
/* model_stops.c: thread id stopped with status (STOP_THREAD's), or ran,
 * at event time t: its state in the thread table, and its turn in the
 * pairing of stops with the next runs. */
void mon_thread_stop(struct mon_model *m, const struct mon_cap *c, uint32_t id,
                     uint16_t status, uint64_t t);
void mon_thread_run(struct mon_model *m, const struct mon_cap *c, uint32_t id,
                    uint64_t t);
/* model_stops.c: the waiting runs and stops' memory (mon_clear_run()). */
void mon_tevs_free(struct mon_model *m);

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
