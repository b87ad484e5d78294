/*
 * aggr.h: the timeline's aggregates over a whole run, fed by the index
 * (index.c) in its one pass and answered as JSON: heap censuses by band
 * over time, durations of marked spans, and the cost-centre samples of
 * any range.  Each keeps its bulk in side files (side.h: one record per
 * band sample, span or tick, read back by window) and in memory only
 * bounded tables; see Note [Aggregate memory] in aggr.c.  Not its job:
 * the spool's bytes, HTTP, locking (the caller serialises feeding and
 * queries, as for the index).
 *
 * Times are ns since the RTS started; JSON numbers are integers unless
 * said otherwise.  Errors are {"error":"text"} with status 400 or 500.
 *
 * kind=heap (t0, t1, px (default 1000, 1 .. 8192), order=size|growth,
 *            bands=N (default 32; 0: every band), the censuses whose
 *            time (HEAP_PROF_SAMPLE_BEGIN's) lies in [t0,t1]):
 *   {"t0":T,"t1":T,"unit":"bytes","breakdown":"closure type (-hT)"|null,
 *    "order":"size"|"growth","censuses":N (in the window),
 *    "sampling":"every"|"last_per_pixel" (when more than px censuses:
 *        the last census of each pixel),
 *    "times":[T...], "total":[bytes...]  (per census drawn),
 *    "bands":[{"name":"..","size":B,"growth":G,"series":[bytes...]}...],
 *    "bands_more":N (bands of the window left out), "bands_seen":N,
 *    "band_table":{"bands":N,"max":N,"refused_samples":N},
 *    "censuses_total":N,"censuses_unfinished":N,"lost":N}
 *   A band's name is the one `eventlog-sink dump --hp` gives it (a -hc
 *   stack "(K)label/caller..." numbered in the order first met; MAIN for
 *   the empty stack); size is its bytes at the window's last census,
 *   growth that minus its bytes at the window's first (a leak grows).
 *   Bands are ranked by order (ties: first met first); "series" has one
 *   value per time, 0 where the census lacks the band.  Bands past the
 *   table's bound go to "(other)" and are counted in refused_samples.
 *
 * kind=durations (t0, t1): spans from markers "NAME start"/"NAME end",
 *   "NAME begin"/"NAME stop" and messages "START NAME"/"STOP NAME", each
 *   end matched to the latest open start of its name and pair posted by
 *   the same Haskell thread (the one running on the capability that
 *   posted it), wherever the thread ran (in time order: Note [Spans in
 *   time order]), so concurrent requests of one name pair each with its
 *   own; the spans whose END lies in [t0,t1]:
 *   {"t0":T,"t1":T,"rule":"end_in_window","spans":N,"exact":true|false,
 *    "names":[{"name":"..","count":N,"total_ns":N,"mean_ns":F,
 *              "p50_ns":N,"p99_ns":N,"max_ns":N,"longest":[S,E]}...],
 *    "unmatched_ends":N,"open":N,"pending":N,"open_refused":N,
 *    "names_refused":N,"released_early":N,"lost":N}
 *   names by total_ns, largest first.  pK is the nearest rank: the
 *   ceil(K/100 x count)-th smallest duration.  Quantiles are exact while
 *   the window holds at most TL_SPANS_EXACT_MAX spans; beyond, "exact"
 *   is false and p50/p99 are null (count, total, mean, max stay exact).
 *   The counters are over the whole run: ends with no open start, starts
 *   still open, marker events not yet matched (pending: a capability's
 *   earlier events may still arrive), starts refused past
 *   TL_SPANS_OPEN_MAX open or TL_SPANS_KEYS_MAX (thread, name, pair)
 *   keys, spans of names past TL_SPANS_NAMES_MAX (they
 *   count under "(other)"), marker events matched before every
 *   capability was known to have caught up (released_early: too many
 *   waiting while CAP_CREATE had not arrived, or TL_SPANS_PENDING_MAX
 *   waiting).
 *
 * kind=spans (t0, t1, n (default 1000, at most 100000)): the closed
 *   instances that overlap [t0,t1], in the order they ended (the
 *   timeline's span lanes, kind=timeline's "spans", are these and the
 *   starts still open: tl_aggr_put_spans):
 *   {"t0":T,"t1":T,"total":N,"truncated":true|false,
 *    "spans":[[S,E,"name"]...]}
 *
 * kind=profile (t0, t1, format=tree|speedscope, rts=apart|include): the
 *   PROF_SAMPLE_COST_CENTRE ticks whose time lies in [t0,t1], aggregated
 *   by stack.  The RTS's own cost centres (a stack of one of GC/GC,
 *   IDLE/IDLE, SYSTEM/SYSTEM, OVERHEAD_of/PROFILING, DONT_CARE/MAIN, as
 *   the RTS's .prof leaves them out) are counted apart unless rts=include.
 *   tree:
 *   {"t0":T,"t1":T,"samples":N (every tick in the window),
 *    "rts":{"GC":N,"IDLE":N,"SYSTEM":N,"OVERHEAD_of":N,"DONT_CARE":N},
 *    "rts_included":true|false,"other":N (ticks of stacks past the table),
 *    "frames":[{"name":"..","module":"..","src":".."}...],
 *    "nodes":[[PARENT,FRAME,SELF,TOTAL]...]}  (node 0 the root, PARENT
 *        and FRAME -1; a node's parent comes before it)
 *   speedscope: speedscope's file format (type "sampled", unit "none"):
 *    one sample per distinct stack (outermost frame first) weighing its
 *    ticks, so the weights add up to the ticks kept.
 */
#ifndef ELS_TL_AGGR_H
#define ELS_TL_AGGR_H

#include "eventlog-sink/parse.h"
#include <stdbool.h>
#include <stdint.h>

#include "monitor/strbuf.h"

#define TL_HEAP_BANDS_MAX 65536u        /* the band-name table */
#define TL_HEAP_NAMES_BYTES (8u << 20)  /* its keys and names */
#define TL_HEAP_CELLS_MAX (4u << 20)    /* bands x censuses in one answer */
#define TL_SPANS_NAMES_MAX 4096u
#define TL_SPANS_NAME_LEN 200u          /* longer names are cut */
#define TL_SPANS_OPEN_MAX 262144u
#define TL_SPANS_KEYS_MAX 65536u        /* (thread, name, pair) with starts */
#define TL_SPANS_PENDING_MAX 262144u
#define TL_SPANS_EXACT_MAX (4u << 20)
#define TL_SPANS_LIST_MAX 100000u
#define TL_PROF_STACKS_MAX 65536u
#define TL_PROF_STACK_IDS_MAX (1u << 22)

struct els_event;
struct tl_aggr;

int tl_aggr_new(struct tl_aggr **out);
void tl_aggr_free(struct tl_aggr *a);

/* Note [What the aggregates see]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Of the stream's events the aggregates read the heap profile's, the
 * messages and markers, the cost-centre ticks, the capabilities' comings
 * and goings and the block markers (tl_aggr_wants()): a small part of a
 * busy program's events, most of which are runs and stops.  Of the rest
 * they need two things, which the index knows anyway: how far in time
 * each capability has posted (matching waits until no capability can
 * still post an earlier span end) and which thread runs on it (who
 * posted a marker).  The index gives them through tl_aggr_cap() before
 * each event the aggregates read and at the end of each block, instead
 * of every event going through them (a fifth of the index's time on a
 * 300-thread file). */
static inline bool tl_aggr_wants(uint16_t tag)
{
    switch (tag) {
    case ELS_EV_HEAP_PROF_BEGIN: case ELS_EV_HEAP_PROF_COST_CENTRE:
    case ELS_EV_HEAP_PROF_SAMPLE_BEGIN: case ELS_EV_HEAP_BIO_PROF_SAMPLE_BEGIN:
    case ELS_EV_HEAP_PROF_SAMPLE_STRING: case ELS_EV_HEAP_PROF_SAMPLE_COST_CENTRE:
    case ELS_EV_HEAP_PROF_SAMPLE_END:
    case ELS_EV_USER_MARKER: case ELS_EV_USER_MSG:
    case ELS_EV_PROF_SAMPLE_COST_CENTRE:
    case ELS_EV_CAP_CREATE: case ELS_EV_CAP_ENABLE:
    case ELS_EV_CAP_DELETE: case ELS_EV_CAP_DISABLE:
    case ELS_EV_BLOCK_MARKER:
        return true;
    default:
        return false;
    }
}
/* Capability cap (-1: none) posted events up to time last, and thread
 * running runs on it (0: none). */
void tl_aggr_cap(struct tl_aggr *a, int cap, uint64_t last, uint32_t running);
/* An event tl_aggr_wants(), in stream order: 0, or -ENOMEM. */
int tl_aggr_event(struct tl_aggr *a, const struct els_event *ev);
/* The stream ended (DATA_END): what waits is matched. */
void tl_aggr_end(struct tl_aggr *a);
/* kind "heap", "durations", "spans" or "profile" with its query string
 * over ix's aggregates (t0/t1 missing: the run's first and last event):
 * an HTTP status with JSON appended to out, or 0 when kind is none of
 * these.  timeline_route() (query.h) answers these kinds through it. */
struct tl_index;
int tl_aggr_route(struct tl_index *ix, const char *kind, const char *qs,
                  struct strbuf *out);

/* The spans that overlap [t0,t1] (end >= t0, start <= t1), paired as
 * kind=durations pairs them, appended to out as JSON array items
 * [S,E,"name"] joined by commas: the closed ones in the order they
 * ended, then, when opens, the starts still open (E -1).  At most max
 * are written; the walk stops once stop have been met, their count in
 * *total.  Marker events still waiting (pending) are in neither.  0, or
 * -ENOMEM, or a side file's read error. */
int tl_aggr_put_spans(struct tl_aggr *a, uint64_t t0, uint64_t t1, uint64_t max,
                      uint64_t stop, bool opens, struct strbuf *out, uint64_t *total);

struct tl_aggr_stats {
    uint64_t mem_bytes;             /* held in memory now */
    uint64_t disk_bytes;            /* in side files */
    uint64_t censuses, band_samples, bands;
    uint64_t spans, span_names;
    uint64_t ticks, stacks;
};
void tl_aggr_stats(const struct tl_aggr *a, struct tl_aggr_stats *out);

#endif /* ELS_TL_AGGR_H */
