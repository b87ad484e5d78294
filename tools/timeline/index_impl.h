/*
 * index_impl.h: the index's state, shared by its building (index.c) and
 * the pyramid and chunk summaries a cap's time goes to (pyramid.c);
 * nothing else includes it.
 */
#ifndef ELS_TL_INDEX_IMPL_H
#define ELS_TL_INDEX_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eventlog-sink/parse.h"
#include "timeline/index.h"

/* Note [Top thread slots]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * A chunk's top thread (the one that ran longest in it) is summed per
 * thread in a table of TL_TOP_SLOTS slots, looked up at each stop.  GHC
 * numbers threads from 1 up, so a thread's id modulo the table's size
 * is its slot: a program's threads of one chunk seldom share one, and
 * then the next TL_TOP_PROBE slots are tried before the least is
 * evicted.  With a multiplicative hash into 256 slots, the 300 threads
 * of bench_timeline's file overflowed the table, and indexing it took
 * about 10 % more CPU than with these slots (`bench_timeline run`, 12
 * alternated pairs). */
#define TL_TOP_SLOTS 1024         /* a power of two */
#define TL_TOP_PROBE 4

struct tl_topslot {
    uint32_t id;                  /* 0: empty */
    uint64_t ns;
};

struct tl_index {
    struct els_parser *parser;
    char error[256];
    /* The header, kept until "datb" and then fixed. */
    uint8_t *hdr;
    size_t hdr_len, hdr_cap;
    bool have_header;
    int32_t sizes[65536];         /* -2 unknown */
    char *descs[1024];            /* tags below 1024 */
    uint64_t fed;

    struct tl_lane lanes[TL_CAPS_MAX + 1];
    unsigned ncaps;
    /* The chunk events go to now: lane and index, or lane < 0. */
    int cur_lane;
    size_t cur_idx;
    uint64_t cur_block_end;       /* a block's end offset; 0: synthetic */
    /* What the aggregates have not been told (Note [What the aggregates
     * see] in aggr.h): the capability of the events since, and their
     * latest time. */
    int aggr_cap;
    bool aggr_any;                /* there were such events */
    uint64_t aggr_last;

    struct tl_capstate caps[TL_CAPS_MAX];
    /* per cap: threads' running time in its current chunk, TL_TOP_SLOTS
     * slots (allocated with the cap's bins) */
    struct tl_topslot *top[TL_CAPS_MAX];

    /* Pyramid. */
    unsigned nbins;
    uint64_t width;               /* 1 << shift */
    unsigned shift;
    size_t used;
    struct tl_capbin *pcap[TL_CAPS_MAX];
    struct tl_gbin *pglob;

    struct tl_note *notes;        /* ring of TL_NOTES_MAX */
    size_t notes_head, notes_n;

    struct tl_thread *threads;
    size_t nthreads, threads_cap;
    uint32_t *thash;              /* index + 1, 0 empty; 2 x threads_cap */

    struct tl_index_stats st;
    struct tl_aggr *aggr;         /* heap, spans, ticks: aggr.h */
};

/* The pyramid and the chunk summaries (pyramid.c).  The steps every
 * event of a cap takes are inline here, their rare paths in pyramid.c:
 * on a 2-cap run of 15-byte events they were a fifth of the index's
 * time as calls. */
void tli_pyr_cover(struct tl_index *ix, uint64_t t);
/* The global bins (at tl_index_new()); every cap's and the global bins
 * (at tl_index_free()).  See Note [Pyramid pages] in pyramid.c. */
int tli_pyr_new(struct tl_index *ix);
void tli_pyr_free(struct tl_index *ix);
void tli_cap_change_bins(struct tl_index *ix, unsigned cap, uint64_t t,
                         uint32_t running, bool in_gc);

/* The bin of time t, coarsening until the pyramid covers it. */
static inline size_t tli_bin_of(struct tl_index *ix, uint64_t t)
{
    if (__builtin_expect((t >> ix->shift) >= ix->nbins, 0))
        tli_pyr_cover(ix, t);
    size_t b = (size_t)(t >> ix->shift);
    if (b + 1 > ix->used)
        ix->used = b + 1;
    return b;
}

/* The cap's bins and thread table, allocated at its first event. */
int tli_cap_bins(struct tl_index *ix, unsigned cap);

/* The cap's current chunk (the last of its lane), or NULL. */
static inline struct tl_chunk *tli_cap_chunk(struct tl_index *ix, unsigned cap)
{
    struct tl_lane *l = &ix->lanes[cap];
    return l->n > l->head ? &l->v[l->n - 1] : NULL;
}

/* Add [a, t) of the cap's state to its current chunk's summary (Note
 * [Chunk summaries] in pyramid.c). */
static inline __attribute__((always_inline)) void
tli_chunk_account(struct tl_index *ix, unsigned cap,
                  const struct tl_capstate *cs, uint64_t a, uint64_t t)
{
    struct tl_chunk *c = tli_cap_chunk(ix, cap);
    if (!c || t <= a)
        return;
    if (cs->in_gc) {
        c->gc_ns += t - a;
    } else if (cs->running) {
        c->run_ns += t - a;
        struct tl_topslot *tab = ix->top[cap], *x = NULL, *least = NULL;
        uint32_t id = cs->running;
        uint32_t h = id;
        for (unsigned i = 0; i < TL_TOP_PROBE; i++) {
            struct tl_topslot *y = &tab[(h + i) & (TL_TOP_SLOTS - 1)];
            if (y->id == id || !y->id) {
                x = y;
                break;
            }
            if (!least || y->ns < least->ns)
                least = y;
        }
        if (!x) {
            x = least;
            x->ns = 0;
        }
        x->id = id;
        x->ns += t - a;
        if (x->ns > c->top_ns) {
            c->top_ns = x->ns;
            c->top_thread = id;
        }
    }
}

/* Account the cap's state from its since to t, then note new state. */
static inline __attribute__((always_inline)) void
tli_cap_change(struct tl_index *ix, unsigned cap, uint64_t t,
               uint32_t running, bool in_gc)
{
    struct tl_capstate *cs = &ix->caps[cap];
    if (t < cs->since)
        t = cs->since;              /* never backwards within a cap */
    tli_chunk_account(ix, cap, cs, cs->since, t);
    size_t b1 = (size_t)(t >> ix->shift);
    if (__builtin_expect(b1 >= ix->nbins
                         || (size_t)(cs->since >> ix->shift) != b1, 0)) {
        tli_cap_change_bins(ix, cap, t, running, in_gc);
        return;
    }
    if (b1 + 1 > ix->used)          /* the common case: one bin */
        ix->used = b1 + 1;
    struct tl_capbin *v = &ix->pcap[cap][b1];
    uint64_t a = cs->since;
    if (cs->in_gc)
        v->gc_ns += t - a;
    else if (cs->running)
        v->run_ns += t - a;
    v->thread_end = in_gc ? 0 : running;
    cs->running = running;
    cs->in_gc = in_gc;
    cs->since = t;
}
/* A chunk of the cap begins at t (Note [Chunk summaries]). */
void tli_cap_cut(struct tl_index *ix, unsigned cap, uint64_t t);

/* A pause of len ns ended at end in chunk c: kept if among its
 * TL_CHUNK_PAUSES longest (pauses.c). */
void tli_chunk_pause(struct tl_chunk *c, uint64_t end, uint64_t len);

#endif /* ELS_TL_INDEX_IMPL_H */
