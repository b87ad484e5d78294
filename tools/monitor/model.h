/*
 * model.h: the live monitor's picture of a running GHC program, built
 * from its eventlog (shared by `eventlog-sink top` and `serve`).
 *
 * Bytes go in (mon_model_feed(), any piece size, through the public
 * parser <eventlog-sink/parse.h>); figures come out: per-capability
 * activity and utilisation, GC collections (per generation) and their
 * pauses, heap and allocation, heap censuses ranked by band, threads and
 * their stops by reason, sparks, cost-centre samples (the RTS's own
 * apart), events per second by class and by type, user messages and
 * markers, bytes and the in-band loss notes the sink writes.  Writers
 * render them as JSON (the views' single source), a timeline of the run,
 * a speedscope profile, and Prometheus text.  Rates are over the last
 * mon_model_tick() interval.
 *
 * What it is not responsible for: where the bytes come from (source.c),
 * drawing (top.c, the web page), or reordering events across
 * capabilities: per-capability state uses only that capability's events,
 * which the RTS writes in order.  Memory is bounded whatever the stream
 * holds: timelines coarsen, recent lists are rings, thread and
 * cost-centre tables are capped, stored strings cut (what did not fit is
 * counted), and the thread table's hash is keyed per process, so chosen
 * ids cannot make lookups slow.
 */
#ifndef ELS_MON_MODEL_H
#define ELS_MON_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strbuf.h"

struct mon_model;

/* Event classes, as the views count events per second. */
enum mon_class {
    MON_CLASS_SCHED,      /* threads, tasks, capabilities (-ls) */
    MON_CLASS_GC,         /* GC phases (-lg) */
    MON_CLASS_HEAP,       /* heap sizes and stats (-lg) */
    MON_CLASS_SPARK,      /* spark counters and events (-lp, -lf) */
    MON_CLASS_USER,       /* traceEvent/traceMarker (-lu) */
    MON_CLASS_PROF,       /* heap and cost-centre profiling */
    MON_CLASS_META,       /* capsets, identity, messages, block markers */
    MON_CLASS_OTHER,
    MON_CLASS_N
};

const char *mon_class_name(enum mon_class c);
enum mon_class mon_class_of(uint16_t tag);

int mon_model_new(struct mon_model **out);
/* A tap on the decoded events (serve's OTLP export): called with each
 * event of the stream as the model reads it (block markers excepted),
 * and with ev NULL when mon_model_reset() starts a new run; m is the
 * model, which has read every earlier event (mon_open() sets the tap
 * before its first read, which may read a whole FILE before it returns
 * the model).  It must not change the model.  NULL: none (a new
 * model's). */
struct els_event;
typedef void (*mon_event_tap)(void *ctx, const struct mon_model *m,
                              const struct els_event *ev);
void mon_model_set_tap(struct mon_model *m, mon_event_tap fn, void *ctx);
void mon_model_free(struct mon_model *m);
/* Forget the run (a new connection or a replaced file); counters of the
 * source (bytes, connections) survive. */
void mon_model_reset(struct mon_model *m);

/* Feed stream bytes.  0, or ELS_EINVAL once the stream is malformed
 * (mon_model_error() says where; further bytes are counted, not read,
 * until mon_model_reset()). */
int mon_model_feed(struct mon_model *m, const void *buf, size_t len);
const char *mon_model_error(const struct mon_model *m);
/* The source's state, shown by the views ("connected to X", "waiting
 * for X: connection refused").  Copied. */
void mon_model_set_source(struct mon_model *m, const char *spec,
                          const char *state);
void mon_model_note_connection(struct mon_model *m);

/* Close a rate interval of wall_ns nanoseconds (> 0).  With whole_run,
 * the interval is the run so far in event time instead (a saved file:
 * rates are run averages). */
void mon_model_tick(struct mon_model *m, uint64_t wall_ns, bool whole_run);

/* Renderers (append to sb). */
void mon_model_json(const struct mon_model *m, struct strbuf *sb);
/* The run's timeline from from_ns to to_ns (event time; to_ns 0 = now)
 * in at most cols columns: per capability the fraction running and in
 * GC, and the charts' series; markers and spans in the window. */
void mon_model_timeline_json(const struct mon_model *m, uint64_t from_ns,
                             uint64_t to_ns, unsigned cols,
                             struct strbuf *sb);
/* Cost-centre samples between from_ns and to_ns as a speedscope file
 * (https://www.speedscope.app/file-format-schema.json). */
void mon_model_speedscope(const struct mon_model *m, uint64_t from_ns,
                          uint64_t to_ns, struct strbuf *sb);
/* The terminal view: lines of at most about width columns. */
void mon_model_text(const struct mon_model *m, struct strbuf *sb, unsigned width);
void mon_model_prometheus(const struct mon_model *m, struct strbuf *sb);
/* n programs' models in one exposition, each family once (Note [Metric
 * families of many programs] in render_prom.c); with need_pid, models that
 * have not read their program's pid yet are left out. */
void mon_models_prometheus(const struct mon_model *const *ms, size_t n,
                           bool need_pid, struct strbuf *sb);

/* What `serve --all`'s index shows of a program. */
struct mon_health {
    uint64_t pause_p99_ns;      /* of the recent collections' pauses */
    uint64_t collections, heap_size, heap_live, lost_units, bytes;
    uint32_t pid;
    const char *program;        /* the model's: from the stream */
    bool ended;
};
void mon_model_health(const struct mon_model *m, struct mon_health *h);

/* Figures the tests and the terminal view read directly. */
struct mon_summary {
    /* collections: Note [Collections] in model.c; gc_starts: every
     * capability's GC_START; heap_allocated: the capabilities' sum */
    uint64_t now_ns, bytes, events, collections, gc_starts, heap_allocated,
             threads_created, threads_alive, user_messages, markers, streams;
    unsigned caps;
    bool ended;
    /* What the stream could not make the model keep (counted, shown),
     * the thread table's slots looked at, and mon_model_memory(). */
    uint64_t threads_untracked, ccs_refused, strings_cut, probes;
    size_t memory;
};
void mon_model_summary(const struct mon_model *m, struct mon_summary *out);

/* Bytes the model holds now (its own allocations; the parser's buffer
 * is the library's), and the most it ever holds, whatever the stream:
 * every table is capped and every stored string cut (Note
 * [Stream-chosen keys] in model_tables.c). */
size_t mon_model_memory(const struct mon_model *m);
size_t mon_model_memory_max(void);

#endif /* ELS_MON_MODEL_H */
