/*
 * query_impl.h: the state of a window's answer, shared by choosing its
 * level (query.c), replaying it (query_replay.c) and writing it out
 * (query_emit.c); nothing else includes it.
 */
#ifndef ELS_TL_QUERY_IMPL_H
#define ELS_TL_QUERY_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "monitor/strbuf.h"
#include "timeline/index.h"
#include "timeline/query.h"
#include "timeline/spool.h"

#define TL_BUF (256u << 10)
#define TL_LIST_NOTES 1000u
#define TL_THREAD_PX 500u        /* thread lanes' grid, at most */

/* ------------------------------------------------------------------------
 * Segments, at most about two per pixel
 * ------------------------------------------------------------------------ */

struct win {
    uint64_t t0, t1;
    double nspp;                  /* ns per pixel */
    unsigned px;
    double whole_ns;              /* drawn as itself from (0: nspp) */
};

/* Kinds: a cap's 0 run, 1 gc, 2 idle; a thread's 0 running, 1 runnable,
 * 2 blocked, 3 finished.  Mixed cells give the fractions of kinds 0 and
 * (caps) 1 / (threads) 2. */
struct segem {
    struct strbuf sb;
    bool thread;                  /* thread kinds */
    bool any;
    /* the last emitted long segment, kept open to coalesce */
    bool open;
    uint64_t s, e;
    int kind;
    uint32_t arg;
    /* the pending pixel cell, drawn from cell_lo at the earliest */
    long cell;
    uint64_t cell_lo;
    uint64_t cell_ns[4];
    uint32_t cell_arg;
    uint64_t cell_arg_ns;
};

/* ------------------------------------------------------------------------
 * The replay's state
 * ------------------------------------------------------------------------ */

struct capr {
    bool known;
    uint32_t running;
    bool in_gc;
    uint64_t since;
    uint64_t gc_start;
    uint64_t alloc;
    bool sp_seen;
    uint64_t sp_created, sp_converted;
    struct segem seg;
    double *created, *converted, *pool;
};

struct thr {
    uint32_t id;
    int state;                    /* -1 unknown, else a thread kind */
    uint32_t reason;
    uint64_t since;
    uint64_t ns[4];
    uint32_t stops[21];
    struct segem seg;
};

struct replay {
    const struct tl_index *ix;
    struct win w;
    struct win wt;                /* the thread lanes' coarser grid */
    bool full;                    /* state and accumulators, not only a list */
    bool count_all;               /* a list: count past its end */
    unsigned ncaps;
    struct capr *caps;
    double *activity, *gc, *heap_size, *heap_live;
    /* threads: open addressing */
    struct thr *thr;
    size_t nthr, thr_cap;
    uint64_t thr_more;
    /* figures */
    uint64_t gcs, gc_total, gc_max, alloc;
    /* lists */
    struct strbuf events, msgs;
    unsigned list_max, listed, msgs_n;
    uint64_t total;
};

/* Segments (query_emit.c): m's lane gains [s, e) of kind with arg;
 * a pixel's pending cell is written; the lane is closed. */
void tlq_seg_add(struct segem *m, const struct win *w, uint64_t s, uint64_t e,
                 int kind, uint32_t arg);
void tlq_seg_flush_cell(struct segem *m, const struct win *w);
void tlq_seg_end(struct segem *m, const struct win *w);
/* Spread an interval's length over per-pixel sums; the pixel of t. */
void tlq_px_spread(double *v, const struct win *w, uint64_t s, uint64_t e,
                   double weight);
long tlq_px_of(const struct win *w, uint64_t t);

/* The answers' parts (query_emit.c), called by tl_query(). */
void tlq_put_events(struct strbuf *out, const struct tl_query *q,
                    const struct replay *r, bool raw, uint64_t est);
void tlq_put_range_threads(struct strbuf *out, struct tl_index *ix,
                           struct replay *r);
void tlq_put_lanes(struct strbuf *out, struct tl_index *ix,
                   const struct replay *r);
void tlq_put_thread_lanes(struct strbuf *out, struct tl_index *ix,
                          struct replay *r, unsigned maxt);

/* Replaying a window (query_replay.c): Note [Replaying a window]. */
int tlq_replay_init(struct replay *r, struct tl_index *ix, const struct win *w,
                    bool full);
void tlq_replay_caps_init(struct replay *r, struct tl_index *ix);
int tlq_replay_run(struct replay *r, struct tl_index *ix, struct tl_spool *sp);
void tlq_replay_finish(struct replay *r);
void tlq_replay_free(struct replay *r);

#endif /* ELS_TL_QUERY_IMPL_H */
