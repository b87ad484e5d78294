/*
 * query.h: answers for the timeline page over one stream's index and its
 * bytes (index.h, spool.h): what ran where in a window [t0,t1] drawn W
 * pixels wide, the events of a window as a list, and a selection's
 * figures, as JSON.  A narrow window (its chunks hold at most raw_budget
 * events, by the index's count) is drawn by replaying the events from
 * the chunks, read back with pread(); a wider one from the index's
 * summary pyramid when a bin is no wider than a pixel, else from the
 * chunks' summaries when they are finer than the bins (see Note
 * [Choosing a level] in query.c).  The answer says which ("mode": "raw",
 * "chunks", "summary").  Not its job: HTTP, the
 * page, feeding the index, locking (the caller holds whatever lock
 * guards ix and sp against the appender for the whole call).
 *
 * Times are nanoseconds since the RTS started, as in the eventlog, and
 * JSON numbers are integers unless said otherwise.  Every answer is one
 * object; errors are {"error": "text"} with an HTTP status (400, 500).
 *
 * kind=info (GET /api/range without t0/t1 may use it too):
 *   {"t_first":T,"t_last":T,"caps":N,"events":N,"bytes":N,
 *    "bin_ns":W,"bins":N,"mem_bytes":N,
 *    "dropped":{"chunks":N,"events":N,"bytes":N,"t_first":T,"t_last":T},
 *    "spool":{"base":O,"end":O,"on_disk":N,"segments_dropped":N},
 *    "aggr":{"mem_bytes":N,"disk_bytes":N,"censuses":N,"bands":N,
 *            "spans":N,"span_names":N,"ticks":N,"stacks":N}}
 *   (mem_bytes counts the aggregates' memory too; "aggr" is their part,
 *   and the bytes of their side files)
 *
 * kind=timeline (t0, t1, px, threads):
 *   {"t0":T,"t1":T,"px":W,"ns_per_px":F (a float),
 *    "mode":"raw"|"chunks"|"summary",
 *    "resolution_ns":R (the finest time step drawn: 1 raw, the bin width
 *        summary, the window's mean chunk length chunks: each chunk's
 *        time is spread evenly over the pixels it covers),
 *    "events_estimate":N,
 *    "caps":[{"cap":C,"segments":[SEG...],
 *             "sparks":{"created":[W],"converted":[W],"pool":[W]}}],
 *    "activity":[W floats: HECs running, averaged over the pixel],
 *    "gc":[W floats: HECs in GC, averaged over the pixel],
 *    "heap":{"size":[W],"live":[W]}  (the last value at or before the
 *        pixel's end, 0 before the first),
 *    "markers":[[T,CAP,"text"]...]  (at most 1000, from the index's notes;
 *        CAP -1 for none),
 *    "spans":[[T_START,T_END,"name"]...]  (the spans that overlap the
 *        window, paired as kind=durations pairs them (aggr.h: markers
 *        "NAME start"/"NAME end", "NAME begin"/"NAME stop", messages
 *        "START NAME"/"STOP NAME", per thread), those that ended in the
 *        order they ended, then those still open, T_END -1; at most 1000),
 *    "spans_truncated":true|false  (more overlap the window than listed;
 *        "spans_error":"text" when the spans could not be read),
 *    "messages":[[T,CAP,"text"]...] | null  (user messages; raw mode, at
 *        most 1000),
 *    "threads":[{"id":N,"label":"text","segments":[SEG...]}...] | null
 *        (raw mode; the `threads` (default 64, at most 2000) threads that
 *        ran longest in the window, in id order, their mixed cells on
 *        a grid of at most 500 cells (an interval of a pixel or longer
 *        is its own segment); "threads_more":N the threads left out),
 *    and when threads is null (not raw):
 *    "threads_window_ns":N  (about the widest window here that would be
 *        replayed, so drawn with thread lanes: the page asks to zoom in),
 *    "threads_busiest":[[ID,RUNNING_NS]...]  (chunks mode only: the
 *        threads that ran longest in the window's chunks, busiest first,
 *        at most `threads`; RUNNING_NS a lower bound, summed over the
 *        chunks in which the thread ran longest)}
 *   SEG, a cap's: [S,E,"run",THREAD] | [S,E,"gc"] | [S,E,"idle"] |
 *       [S,E,"mixed",RUN_FRACTION,GC_FRACTION,THREAD] (a pixel that
 *       holds intervals shorter than itself; THREAD the longest running).
 *   SEG, a thread's: [S,E,"running"] | [S,E,"runnable"] |
 *       [S,E,"blocked","ReasonName"] | [S,E,"finished"] |
 *       [S,E,"mixed",RUNNING_FRACTION,BLOCKED_FRACTION]; ReasonName as
 *       GHC names the stop status (HeapOverflow, StackOverflow,
 *       ThreadYielding, ThreadBlocked, ThreadFinished, ForeignCall,
 *       BlockedOnMVar, BlockedOnBlackHole, ...; see tl_stop_name()), and
 *       a runnable segment after a stop carries it too:
 *       [S,E,"runnable","ThreadYielding"].  Time before a thread's first
 *       event in the replay is not drawn (its state is unknown there).
 *   Segments are in time order and do not overlap (a mixed cell is cut
 *   at the segments beside it), at most about 2 per pixel per lane.
 *
 * kind=events (t0, t1, n: at most n events, default 1000, max 100000):
 *   {"t0":T,"t1":T,"total":N,"exact":true|false,"truncated":true|false,
 *    "events":[[T,CAP,"description"]...]}
 *   in time order (equal times: stream order), CAP -1 for none, the
 *   description as `ghc-events show` prints it after "cap N: ".  total is
 *   exact when the window was replayed, else the index's estimate.
 *
 * kind=range (t0, t1): a selection's figures
 *   {"t0":T,"t1":T,"exact":true|false,"mode":M,"resolution_ns":R,
 *        (as for the timeline; a range takes chunks whenever they are
 *        finer than the bins)
 *    "gc":{"count":N,"total_ns":N,"max_ns":N},   (collections whose
 *        GC_END falls in the window, each its GC_START..GC_END on its cap)
 *    "alloc_bytes":N,   (HEAP_ALLOCATED in the window, each the rise of
 *        its cap's counter since that cap's previous one)
 *    "hec_ns":{"run":N,"gc":N,"idle":N},   (summed over HECs)
 *    "threads":[{"id":N,"label":"..","running_ns":N,"runnable_ns":N,
 *                "blocked_ns":N,"stops":{"ReasonName":count,...}}] | null}
 *   exact is false when the window was too wide to replay: then gc and
 *   alloc come from the whole chunks (mode chunks; exact when t0 and
 *   t1 + 1 are chunk boundaries) or pyramid bins (mode summary) at
 *   least half inside the window, hec_ns from each weighted by its part
 *   inside, and threads is null.
 *
 * The bound: one query holds per lane a 256 KiB read buffer, per thread
 * in the window a few hundred bytes and its segments (<= 2 per pixel),
 * and its output; see Note [Timeline memory] in index.c for the rest.
 */
#ifndef ELS_TL_QUERY_H
#define ELS_TL_QUERY_H

#include <stddef.h>
#include <stdint.h>

#include "monitor/strbuf.h"
#include "timeline/index.h"
#include "timeline/spool.h"

/* Events a window may hold to be replayed (a replay runs at 2-5 M events
 * a second on one core: 250 000 keeps a loaded machine under 100 ms). */
#define TL_RAW_BUDGET_DEFAULT 250000u
#define TL_THREADS_DEFAULT 64u
#define TL_THREADS_MAX_OUT 2000u
#define TL_PX_MAX 8192u
#define TL_EVENTS_MAX 100000u

enum tl_query_kind { TL_Q_INFO, TL_Q_TIMELINE, TL_Q_EVENTS, TL_Q_RANGE };

struct tl_query {
    enum tl_query_kind kind;
    uint64_t t0, t1;
    unsigned px;                  /* timeline: pixels, 1 .. TL_PX_MAX */
    unsigned max_events;          /* events: list at most this many */
    uint64_t raw_budget;          /* 0: TL_RAW_BUDGET_DEFAULT */
    unsigned max_threads;         /* timeline: thread lanes (0: default) */
};

/* Answer q as JSON appended to out: 200, or 400 (q makes no sense: t1 <
 * t0, px out of range; out holds {"error":...}), or 500 (the stream's
 * bytes could not be read back; out says why). */
int tl_query(struct tl_index *ix, struct tl_spool *sp, const struct tl_query *q,
             struct strbuf *out);

/* The HTTP face: kind ("timeline", "events", "range", "info"; NULL: the
 * query string's kind=) and the query string ("t0=..&t1=..&px=..&n=..",
 * numbers in decimal nanoseconds; missing t0/t1: the whole run) to an
 * HTTP status and JSON in out.  serve mounts it as
 *     /api/timeline -> timeline_route(ix, sp, "timeline", qs, out)
 *     /api/events   -> timeline_route(ix, sp, "events", qs, out)
 *     /api/range    -> timeline_route(ix, sp, "range", qs, out)
 * and answers the status with application/json. */
int timeline_route(struct tl_index *ix, struct tl_spool *sp, const char *kind,
                   const char *query_string, struct strbuf *out);

/* One event's description as `ghc-events show` prints it (without the
 * time and "cap N: "), appended to out. */
struct els_event;
void tl_describe(const struct tl_index *ix, const struct els_event *ev,
                 struct strbuf *out);

#endif /* ELS_TL_QUERY_H */
