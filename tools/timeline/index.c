/*
 * index.c: the time index, the summary pyramid and the notes of one
 * stream (see index.h), built from els_parser callbacks in one pass.
 *
 * Note [Timeline memory]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * What the index holds, whatever the stream's age or size:
 *  - the pyramid: bins x (sizeof(struct tl_gbin) + HECs x sizeof(struct
 *    tl_capbin)) = 65536 x (24 + 48 x HECs) bytes: 1.5 MiB + 3 MiB per
 *    HEC by default; it never grows after a HEC's first event, it
 *    coarsens;
 *  - notes: TL_NOTES_MAX x 112 bytes = 1.75 MiB at most (a ring);
 *  - threads: at most TL_THREADS_MAX x ~96 bytes = 6 MiB, plus its hash;
 *  - the header and the event-type table (256 KiB + descriptions), and
 *    the parser (about 520 KiB);
 *  - chunks: 128 bytes (their summaries included) per block, or per
 *    TL_CHUNK_EVENTS (8192) events of a longer block, still in the
 *    spool: for a 1 GiB spool of 15-byte events about 8700 chunks, 1.1
 *    MiB; for a 2.6 GB file of 170 M events about 21000, 2.6 MiB.
 *    Blocks shorter than that (a writer flushing often) cost 128 bytes
 *    each: at least one per flush per HEC, 1 MiB a day per HEC at one
 *    flush a second, less the spool's drops;
 *  - per HEC, the current chunk's table of threads' running time
 *    (TL_TOP_SLOTS x 16 bytes = 4 KiB).
 * So about 10 MiB + 3 MiB per HEC + 128 bytes per chunk, which
 * tests/timeline/test_timeline.c (pyramid_bounded) measures.
 *
 * Note [Chunk summaries]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * Between a window narrow enough to replay and one at least a pyramid
 * bin per pixel wide (bins are 2.6 s wide after two days), each chunk of
 * a cap carries the figures of its stretch of the run, so that such a
 * window is drawn at chunk resolution instead of a bin's.  A cap's
 * stretches tile its time: when a chunk of the cap begins (its block
 * marker, or a checkpoint inside a long block) the cap's current state
 * is cut at the chunk's first time, the time before it going to the
 * previous chunk and the time after it to the new one (cap_cut()).  So
 * chunk i of a cap covers [t_first(i), t_first(i+1)), the last one up
 * to the cap's last state change, and the sums of whole chunks are the
 * replay's sums over the same stretch: collections counted where their
 * GC_END is, allocation where its HEAP_ALLOCATED is.  The thread that
 * ran longest in a chunk is found with a small table per cap, cleared at
 * each cut: a thread looks at TL_TOP_PROBE slots from its hash and, when
 * none is its own or free, takes the one that ran least so far (so each
 * event costs a few loads whatever the number of threads, and a thread
 * that runs much in a chunk keeps its slot; the winner's time is then a
 * lower bound).
 */
#include "timeline/index.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eventlog-sink/parse.h"
#include "timeline/aggr.h"

#define TL_TOP_SLOTS 256          /* a power of two */
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

/* ------------------------------------------------------------------------
 * Stop statuses
 * ------------------------------------------------------------------------ */

/* GHC 9.0.2 posts 1-5 for the StgThreadReturnCode, 6 for a foreign
 * call, and 6 + why_blocked for a blocked thread (rts/Trace.h); ghc-events
 * reads them with the table below (mkStopStatus). */
static const struct { const char *name, *text; } stops[] = {
    [0] = { "NoStatus", "No stop thread status" },
    [1] = { "HeapOverflow", "heap overflow" },
    [2] = { "StackOverflow", "stack overflow" },
    [3] = { "ThreadYielding", "thread yielding" },
    [4] = { "ThreadBlocked", "thread blocked" },
    [5] = { "ThreadFinished", "thread finished" },
    [6] = { "ForeignCall", "making a foreign call" },
    [7] = { "BlockedOnMVar", "blocked on an MVar" },
    [8] = { "BlockedOnBlackHole", "blocked on a black hole" },
    [9] = { "BlockedOnRead", "blocked on I/O read" },
    [10] = { "BlockedOnWrite", "blocked on I/O write" },
    [11] = { "BlockedOnDelay", "blocked on threadDelay" },
    [12] = { "BlockedOnSTM", "blocked in STM retry" },
    [13] = { "BlockedOnDoProc", "blocked on asyncDoProc" },
    [14] = { "BlockedOnCCall", "blocked in a foreign call" },
    [15] = { "BlockedOnCCall_Interruptible", "blocked in a foreign call" },
    [16] = { "BlockedOnMsgThrowTo", "blocked in throwTo" },
    [17] = { "ThreadMigrating", "thread migrating" },
    [18] = { "BlockedOnMsgGlobalise", "waiting for data to be globalised" },
    [19] = { "NoStatus", "No stop thread status" },
    [20] = { "BlockedOnMVarRead", "blocked reading an MVar" },
};

const char *tl_stop_name(unsigned s)
{
    return s < sizeof stops / sizeof stops[0] ? stops[s].name : "NoStatus";
}

const char *tl_stop_text(unsigned s)
{
    return s < sizeof stops / sizeof stops[0] ? stops[s].text
                                              : "No stop thread status";
}

/* ------------------------------------------------------------------------
 * Pyramid
 * ------------------------------------------------------------------------ */

static void coarsen(struct tl_index *ix)
{
    unsigned h = ix->nbins / 2;
    for (unsigned c = 0; c < ix->ncaps; c++) {
        struct tl_capbin *v = ix->pcap[c];
        if (!v)
            continue;
        for (unsigned i = 0; i < h; i++) {
            struct tl_capbin a = v[2 * i], b = v[2 * i + 1], m = b;
            m.run_ns = a.run_ns + b.run_ns;
            m.gc_ns = a.gc_ns + b.gc_ns;
            m.alloc = a.alloc + b.alloc;
            m.pause_ns = a.pause_ns + b.pause_ns;
            m.pause_max = a.pause_max > b.pause_max ? a.pause_max : b.pause_max;
            m.gcs = a.gcs + b.gcs;
            m.sparks_created = a.sparks_created + b.sparks_created;
            m.sparks_converted = a.sparks_converted + b.sparks_converted;
            if (!b.pad_) {          /* no spark counters in b */
                m.spark_pool = a.spark_pool;
                m.pad_ = a.pad_;
            }
            v[i] = m;
        }
        memset(v + h, 0, h * sizeof *v);
    }
    struct tl_gbin *g = ix->pglob;
    for (unsigned i = 0; i < h; i++) {
        struct tl_gbin a = g[2 * i], b = g[2 * i + 1], m = b;
        if (!b.heap_size)
            m.heap_size = a.heap_size;
        if (!b.heap_live)
            m.heap_live = a.heap_live;
        m.markers = a.markers + b.markers;
        g[i] = m;
    }
    memset(g + h, 0, h * sizeof *g);
    ix->width *= 2;
    ix->shift++;
    ix->used = (ix->used + 1) / 2;
}

/* The bin of time t, coarsening until the pyramid covers it. */
static size_t bin_of(struct tl_index *ix, uint64_t t)
{
    while ((t >> ix->shift) >= ix->nbins)
        coarsen(ix);
    size_t b = (size_t)(t >> ix->shift);
    if (b + 1 > ix->used)
        ix->used = b + 1;
    return b;
}

static int cap_bins(struct tl_index *ix, unsigned cap)
{
    if (ix->pcap[cap])
        return 0;
    ix->pcap[cap] = calloc(ix->nbins, sizeof(struct tl_capbin));
    ix->top[cap] = calloc(TL_TOP_SLOTS, sizeof *ix->top[cap]);
    if (!ix->pcap[cap] || !ix->top[cap])
        return -ENOMEM;
    ix->st.mem_bytes += (uint64_t)ix->nbins * sizeof(struct tl_capbin)
        + TL_TOP_SLOTS * sizeof *ix->top[cap];
    return 0;
}

/* The cap's current chunk (the last of its lane), or NULL. */
static struct tl_chunk *cap_chunk(struct tl_index *ix, unsigned cap)
{
    struct tl_lane *l = &ix->lanes[cap];
    return l->n > l->head ? &l->v[l->n - 1] : NULL;
}

/* Add [a, t) of the cap's state to its current chunk's summary. */
static inline __attribute__((always_inline)) void chunk_account(struct tl_index *ix, unsigned cap,
                          const struct tl_capstate *cs, uint64_t a, uint64_t t)
{
    struct tl_chunk *c = cap_chunk(ix, cap);
    if (!c || t <= a)
        return;
    if (cs->in_gc) {
        c->gc_ns += t - a;
    } else if (cs->running) {
        c->run_ns += t - a;
        struct tl_topslot *tab = ix->top[cap], *x = NULL, *least = NULL;
        uint32_t id = cs->running;
        uint32_t h = (id * 2654435761u) >> 8;
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

/* Account the cap's state from cs->since to t, then note new state. */
static void cap_change(struct tl_index *ix, unsigned cap, uint64_t t,
                       uint32_t running, bool in_gc)
{
    struct tl_capstate *cs = &ix->caps[cap];
    struct tl_capbin *v = ix->pcap[cap];
    if (t < cs->since)
        t = cs->since;              /* never backwards within a cap */
    chunk_account(ix, cap, cs, cs->since, t);
    size_t b1 = bin_of(ix, t);
    v = ix->pcap[cap];
    uint64_t a = cs->since;
    size_t b0 = (size_t)(a >> ix->shift);
    if (b0 == b1) {               /* the common case: one bin */
        if (cs->in_gc)
            v[b1].gc_ns += t - a;
        else if (cs->running)
            v[b1].run_ns += t - a;
        v[b1].thread_end = in_gc ? 0 : running;
        cs->running = running;
        cs->in_gc = in_gc;
        cs->since = t;
        return;
    }
    for (size_t b = b0; b <= b1; b++) {
        uint64_t lo = b * ix->width, hi = lo + ix->width;
        uint64_t s = a > lo ? a : lo, e = t < hi ? t : hi;
        if (e > s) {
            if (cs->in_gc)
                v[b].gc_ns += e - s;
            else if (cs->running)
                v[b].run_ns += e - s;
        }
        if (b < b1)
            v[b].thread_end = cs->in_gc ? 0 : cs->running;
    }
    v[b1].thread_end = in_gc ? 0 : running;
    cs->running = running;
    cs->in_gc = in_gc;
    cs->since = t;
}

/* A chunk of the cap begins at t: the state so far goes to the previous
 * chunk (see Note [Chunk summaries]). */
static void cap_cut(struct tl_index *ix, unsigned cap, uint64_t t)
{
    struct tl_capstate *cs = &ix->caps[cap];
    if (cs->since)
        cap_change(ix, cap, t, cs->running, cs->in_gc);
    memset(ix->top[cap], 0, TL_TOP_SLOTS * sizeof *ix->top[cap]);
}

/* ------------------------------------------------------------------------
 * Threads and notes
 * ------------------------------------------------------------------------ */

static uint32_t thash_of(uint32_t id) { return id * 2654435761u; }

static struct tl_thread *thread_find(const struct tl_index *ix, uint32_t id)
{
    if (!ix->threads_cap)
        return NULL;
    size_t mask = 2 * ix->threads_cap - 1;
    for (size_t h = thash_of(id) & mask;; h = (h + 1) & mask) {
        uint32_t k = ix->thash[h];
        if (!k)
            return NULL;
        if (ix->threads[k - 1].id == id)
            return &ix->threads[k - 1];
    }
}

static void thash_rebuild(struct tl_index *ix)
{
    size_t mask = 2 * ix->threads_cap - 1;
    memset(ix->thash, 0, 2 * ix->threads_cap * sizeof *ix->thash);
    for (size_t i = 0; i < ix->nthreads; i++) {
        size_t h = thash_of(ix->threads[i].id) & mask;
        while (ix->thash[h])
            h = (h + 1) & mask;
        ix->thash[h] = (uint32_t)i + 1;
    }
}

static struct tl_thread *thread_get(struct tl_index *ix, uint32_t id)
{
    struct tl_thread *t = thread_find(ix, id);
    if (t)
        return t;
    if (ix->nthreads == ix->threads_cap) {
        if (ix->threads_cap == TL_THREADS_MAX) {
            /* Full: forget the finished threads (their lanes show only
             * their id from now on). */
            size_t k = 0;
            for (size_t i = 0; i < ix->nthreads; i++)
                if (!ix->threads[i].finished)
                    ix->threads[k++] = ix->threads[i];
            ix->st.threads_forgotten += ix->nthreads - k;
            ix->nthreads = k;
            if (k == ix->threads_cap) {
                ix->st.threads_forgotten++;
                return NULL;
            }
        } else {
            size_t c = ix->threads_cap ? ix->threads_cap * 2 : 64;
            struct tl_thread *v = realloc(ix->threads, c * sizeof *v);
            if (!v)
                return NULL;
            ix->threads = v;
            uint32_t *h = realloc(ix->thash, 2 * c * sizeof *h);
            if (!h)
                return NULL;
            ix->thash = h;
            ix->st.mem_bytes += (c - ix->threads_cap)
                * (sizeof *v + 2 * sizeof *h);
            ix->threads_cap = c;
        }
        thash_rebuild(ix);
    }
    t = &ix->threads[ix->nthreads++];
    *t = (struct tl_thread){ .id = id };
    size_t mask = 2 * ix->threads_cap - 1;
    size_t h = thash_of(id) & mask;
    while (ix->thash[h])
        h = (h + 1) & mask;
    ix->thash[h] = (uint32_t)ix->nthreads;
    return t;
}

static void note_add(struct tl_index *ix, uint64_t t, int cap, int kind,
                     const char *s, size_t n)
{
    struct tl_note *nt;
    if (ix->notes_n < TL_NOTES_MAX) {
        nt = &ix->notes[(ix->notes_head + ix->notes_n++) % TL_NOTES_MAX];
    } else {
        nt = &ix->notes[ix->notes_head];
        ix->notes_head = (ix->notes_head + 1) % TL_NOTES_MAX;
        ix->st.notes_forgotten++;
    }
    if (n > TL_NOTE_TEXT)
        n = TL_NOTE_TEXT;
    nt->t = t;
    nt->cap = (int16_t)cap;
    nt->kind = (uint8_t)kind;
    nt->len = (uint8_t)n;
    memcpy(nt->text, s, n);
}

/* ------------------------------------------------------------------------
 * Chunks
 * ------------------------------------------------------------------------ */

static struct tl_chunk *chunk_push(struct tl_index *ix, unsigned lane)
{
    struct tl_lane *l = &ix->lanes[lane];
    if (l->n == l->cap) {
        if (l->head > l->n / 2) {   /* reuse the trimmed front */
            memmove(l->v, l->v + l->head, (l->n - l->head) * sizeof *l->v);
            l->n -= l->head;
            l->head = 0;
        } else {
            size_t c = l->cap ? l->cap * 2 : 64;
            struct tl_chunk *v = realloc(l->v, c * sizeof *v);
            if (!v)
                return NULL;
            ix->st.mem_bytes += (c - l->cap) * sizeof *v;
            l->v = v;
            l->cap = c;
        }
    }
    struct tl_chunk *c = &l->v[l->n++];
    memset(c, 0, sizeof *c);
    c->t_max = l->n - l->head > 1 ? l->v[l->n - 2].t_max : 0;
    ix->cur_lane = (int)lane;
    ix->cur_idx = l->n - 1;
    ix->st.chunks++;
    return c;
}

static struct tl_chunk *cur_chunk(struct tl_index *ix)
{
    if (ix->cur_lane < 0)
        return NULL;
    return &ix->lanes[ix->cur_lane].v[ix->cur_idx];
}

static int lane_of_cap(struct tl_index *ix, int cap, unsigned *lane)
{
    if (cap >= 0 && (unsigned)cap < ix->ncaps && ix->caps[cap].seen) {
        *lane = (unsigned)cap;      /* the common case */
        return 0;
    }
    if (cap < 0) {
        *lane = TL_LANE_GLOBAL;
        return 0;
    }
    if (cap >= TL_CAPS_MAX)
        return -E2BIG;
    if ((unsigned)cap >= ix->ncaps) {
        ix->ncaps = (unsigned)cap + 1;
        ix->st.caps = ix->ncaps;
    }
    if (!ix->caps[cap].seen) {
        int rc = cap_bins(ix, (unsigned)cap);
        if (rc < 0)
            return rc;
        ix->caps[cap].seen = true;
    }
    *lane = (unsigned)cap;
    return 0;
}

static int on_block(struct tl_index *ix, const struct els_event *ev)
{
    struct els_event_data d;
    if (els_event_decode(ev, &d) != 0)
        return -EINVAL;
    int cap = d.u.block.cap == 0xffff ? -1 : d.u.block.cap;
    unsigned lane;
    int rc = lane_of_cap(ix, cap, &lane);
    if (rc < 0)
        return rc;
    if (cap >= 0)
        cap_cut(ix, (unsigned)cap, ev->time);
    struct tl_chunk *c = chunk_push(ix, lane);
    if (!c)
        return -ENOMEM;
    c->off = ev->offset;
    c->len = d.u.block.size;
    c->cap = (int16_t)cap;
    c->t_first = c->t_last = ev->time;
    if (ev->time > c->t_max)
        c->t_max = ev->time;
    if (cap >= 0) {
        c->thread0 = ix->caps[cap].in_gc ? 0 : ix->caps[cap].running;
        c->gc0 = ix->caps[cap].in_gc;
        c->alloc0 = ix->caps[cap].alloc;
    }
    ix->cur_block_end = ev->offset + d.u.block.size;
    return 0;
}

/* The chunk for an event, opening a synthetic one outside blocks. */
static inline __attribute__((always_inline)) struct tl_chunk *
chunk_for(struct tl_index *ix, const struct els_event *ev)
{
    struct tl_chunk *c = cur_chunk(ix);
    if (c && c->synthetic != 1 && ev->offset >= ix->cur_block_end)
        c = NULL;                   /* past the block */
    if (c && c->synthetic != 1 && c->events >= TL_CHUNK_EVENTS && c->cap >= 0) {
        /* A checkpoint inside a long block: the cap's state here (before
         * this event) lets a window start replaying from this event. */
        c->len = (uint32_t)(ev->offset - c->off);
        struct tl_capstate *cs = &ix->caps[c->cap];
        int16_t cap = c->cap;
        cap_cut(ix, (unsigned)cap, ev->time);
        c = chunk_push(ix, (unsigned)cap);
        if (!c)
            return NULL;
        c->off = ev->offset;
        c->len = (uint32_t)(ix->cur_block_end - ev->offset);
        c->cap = cap;
        c->synthetic = 2;
        c->thread0 = cs->in_gc ? 0 : cs->running;
        c->gc0 = cs->in_gc;
        c->alloc0 = cs->alloc;
        c->t_first = ev->time;
    }
    if (c && c->synthetic == 1 && c->events >= TL_SYNTH_EVENTS)
        c = NULL;
    if (!c) {
        c = chunk_push(ix, TL_LANE_GLOBAL);
        if (!c)
            return NULL;
        c->off = ev->offset;
        c->cap = -1;
        c->synthetic = 1;
        c->t_first = ev->time;
        ix->cur_block_end = 0;
    }
    if (c->synthetic == 1) {
        int32_t sz = ix->sizes[ev->tag];
        c->len = (uint32_t)(ev->offset + 10 + (sz < 0 ? 2 : 0) + ev->payload_len
                            - c->off);
    }
    if (c->events == 0 || ev->time < c->t_first)
        c->t_first = c->events ? c->t_first : ev->time;
    if (ev->time > c->t_last)
        c->t_last = ev->time;
    if (c->t_last > c->t_max)
        c->t_max = c->t_last;
    c->events++;
    return c;
}

/* ------------------------------------------------------------------------
 * Events
 * ------------------------------------------------------------------------ */

/* The tags apply() reads; the others only count. */
static bool applies(uint16_t tag)
{
    switch (tag) {
    case ELS_EV_RUN_THREAD: case ELS_EV_STOP_THREAD: case ELS_EV_CREATE_THREAD:
    case ELS_EV_THREAD_LABEL: case ELS_EV_GC_START: case ELS_EV_GC_WORK:
    case ELS_EV_GC_IDLE: case ELS_EV_GC_DONE: case ELS_EV_GC_END:
    case ELS_EV_HEAP_ALLOCATED: case ELS_EV_SPARK_COUNTERS:
    case ELS_EV_HEAP_SIZE: case ELS_EV_HEAP_LIVE: case ELS_EV_USER_MARKER:
    case ELS_EV_USER_MSG:
        return true;
    default:
        return false;
    }
}

static inline __attribute__((always_inline)) int
apply(struct tl_index *ix, const struct els_event *ev)
{
    if (!applies(ev->tag))
        return 0;
    struct els_event_data d;
    if (ev->tag == ELS_EV_RUN_THREAD && ev->payload_len >= 4) {
        /* the most frequent event: read it here */
        const uint8_t *p = ev->payload;
        d.u.thread.thread = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16
                          | (uint32_t)p[2] << 8 | p[3];
    } else if (ev->tag == ELS_EV_STOP_THREAD && ev->payload_len >= 6) {
        /* the next most frequent: thread and status only */
        const uint8_t *p = ev->payload;
        d.u.stop_thread.thread = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16
                               | (uint32_t)p[2] << 8 | p[3];
        d.u.stop_thread.status = (uint16_t)(p[4] << 8 | p[5]);
    } else if (els_event_decode(ev, &d) < 0) {
        return 0;                   /* short payload: counted, not applied */
    }
    int cap = ev->cap;
    struct tl_capstate *cs = NULL;
    if (cap >= 0) {
        unsigned lane;
        int rc = lane_of_cap(ix, cap, &lane);
        if (rc < 0)
            return rc;
        cs = &ix->caps[cap];
        cs->last_t = ev->time;
    }
    uint64_t t = ev->time;
    switch (ev->tag) {
    case ELS_EV_RUN_THREAD:
        if (cs)
            cap_change(ix, (unsigned)cap, t, d.u.thread.thread, cs->in_gc);
        break;
    case ELS_EV_STOP_THREAD:
        if (cs)
            cap_change(ix, (unsigned)cap, t, 0, cs->in_gc);
        if (d.u.stop_thread.status == 5) {
            struct tl_thread *th = thread_get(ix, d.u.stop_thread.thread);
            if (th)
                th->finished = t;
        }
        break;
    case ELS_EV_CREATE_THREAD: {
        struct tl_thread *th = thread_get(ix, d.u.thread.thread);
        if (th && !th->created)
            th->created = t;
        break;
    }
    case ELS_EV_THREAD_LABEL: {
        struct tl_thread *th = thread_get(ix, d.u.thread_label.thread);
        if (th) {
            size_t n = d.u.thread_label.label.len;
            if (n >= TL_LABEL_MAX)
                n = TL_LABEL_MAX - 1;
            memcpy(th->label, d.u.thread_label.label.ptr, n);
            th->label[n] = 0;
        }
        break;
    }
    case ELS_EV_GC_START:
        if (cs) {
            cs->gc_start = t;
            cap_change(ix, (unsigned)cap, t, cs->running, true);
        }
        break;
    case ELS_EV_GC_WORK:
    case ELS_EV_GC_IDLE:
        if (cs && !cs->in_gc)
            cap_change(ix, (unsigned)cap, t, cs->running, true);
        break;
    case ELS_EV_GC_DONE:
        if (cs && cs->in_gc)
            cap_change(ix, (unsigned)cap, t, cs->running, false);
        break;
    case ELS_EV_GC_END:
        if (cs) {
            cap_change(ix, (unsigned)cap, t, cs->running, false);
            struct tl_capbin *b = &ix->pcap[cap][bin_of(ix, t)];
            uint64_t p = cs->gc_start && t >= cs->gc_start ? t - cs->gc_start : 0;
            b->gcs++;
            b->pause_ns += p;
            if (p > b->pause_max)
                b->pause_max = p;
            struct tl_chunk *c = cap_chunk(ix, (unsigned)cap);
            if (c) {
                c->gcs++;
                c->pause_ns += p;
                if (p > c->pause_max)
                    c->pause_max = p;
            }
            cs->gc_start = 0;
        }
        break;
    case ELS_EV_HEAP_ALLOCATED:
        if (cs) {
            uint64_t v = d.u.heap.bytes;
            uint64_t delta = v >= cs->alloc ? v - cs->alloc : v;
            size_t b = bin_of(ix, t);
            ix->pcap[cap][b].alloc += delta;
            struct tl_chunk *c = cap_chunk(ix, (unsigned)cap);
            if (c)
                c->alloc += delta;
            cs->alloc = v;
        }
        break;
    case ELS_EV_SPARK_COUNTERS:
        if (cs) {
            size_t b = bin_of(ix, t);
            struct tl_capbin *x = &ix->pcap[cap][b];
            uint64_t cr = d.u.spark_counters.created;
            uint64_t cv = d.u.spark_counters.converted;
            if (cs->sp_seen) {
                uint32_t dcr = (uint32_t)(cr >= cs->sp_created ? cr - cs->sp_created : 0);
                uint32_t dcv = (uint32_t)(cv >= cs->sp_converted ? cv - cs->sp_converted : 0);
                x->sparks_created += dcr;
                x->sparks_converted += dcv;
                struct tl_chunk *c = cap_chunk(ix, (unsigned)cap);
                if (c) {
                    c->sparks_created += dcr;
                    c->sparks_converted += dcv;
                }
            }
            cs->sp_created = cr;
            cs->sp_converted = cv;
            cs->sp_seen = true;
            x->spark_pool = (uint32_t)d.u.spark_counters.remaining;
            x->pad_ = 1;
        }
        break;
    case ELS_EV_HEAP_SIZE:
        ix->pglob[bin_of(ix, t)].heap_size = d.u.heap.bytes;
        break;
    case ELS_EV_HEAP_LIVE:
        ix->pglob[bin_of(ix, t)].heap_live = d.u.heap.bytes;
        break;
    case ELS_EV_USER_MARKER:
        ix->pglob[bin_of(ix, t)].markers++;
        note_add(ix, t, cap, TL_NOTE_MARKER, d.u.text.ptr, d.u.text.len);
        break;
    case ELS_EV_USER_MSG:
        /* Spans: "START label" / "STOP label" (ghc-events-analyze's
         * convention) are kept as notes. */
        if (d.u.text.len > 6 && !memcmp(d.u.text.ptr, "START ", 6))
            note_add(ix, t, cap, TL_NOTE_START, d.u.text.ptr + 6, d.u.text.len - 6);
        else if (d.u.text.len > 5 && !memcmp(d.u.text.ptr, "STOP ", 5))
            note_add(ix, t, cap, TL_NOTE_STOP, d.u.text.ptr + 5, d.u.text.len - 5);
        break;
    default:
        break;
    }
    return 0;
}

static int cb_end(void *user, uint64_t offset)
{
    struct tl_index *ix = user;
    (void)offset;
    tl_aggr_end(ix->aggr);
    return 0;
}

static int cb_header(void *user, const struct els_parser *p)
{
    struct tl_index *ix = user;
    struct els_parse_status s;
    els_parser_status(p, &s);
    if (!ix->have_header) {
        /* s.offset counts from the stream's start: the header is the
         * first s.offset bytes, all of which were kept. */
        ix->hdr_len = (size_t)s.offset;
        ix->have_header = true;
    }
    const struct els_event_type *types;
    size_t n = els_parser_event_types(p, &types);
    for (size_t i = 0; i < n; i++) {
        ix->sizes[types[i].tag] = types[i].size;
        if (types[i].tag < 1024 && !ix->descs[types[i].tag])
            ix->descs[types[i].tag] = strdup(types[i].desc);
    }
    return 0;
}

static int cb_event(void *user, const struct els_event *ev)
{
    struct tl_index *ix = user;
    if (ev->tag == ELS_EV_BLOCK_MARKER) {
        tl_aggr_event(ix->aggr, ev);
        return on_block(ix, ev);
    }
    struct tl_chunk *c = chunk_for(ix, ev);
    if (!c)
        return -ENOMEM;
    ix->st.events++;
    if (!ix->st.t_first || ev->time < ix->st.t_first)
        ix->st.t_first = ev->time;
    if (ev->time > ix->st.t_last)
        ix->st.t_last = ev->time;
    int rc = tl_aggr_event(ix->aggr, ev);
    return rc < 0 ? rc : apply(ix, ev);
}

int tl_index_new(struct tl_index **out, unsigned bins)
{
    *out = NULL;
    if (!bins)
        bins = TL_PYR_BINS_DEFAULT;
    if (bins < 2 || bins % 2 || bins > (1u << 22))
        return -EINVAL;
    struct tl_index *ix = calloc(1, sizeof *ix);
    if (!ix)
        return -ENOMEM;
    for (size_t i = 0; i < 65536; i++)
        ix->sizes[i] = -2;
    ix->cur_lane = -1;
    ix->nbins = bins;
    ix->width = TL_PYR_WIDTH0;
    ix->shift = 10;               /* log2(TL_PYR_WIDTH0) */
    ix->pglob = calloc(bins, sizeof *ix->pglob);
    ix->notes = calloc(TL_NOTES_MAX, sizeof *ix->notes);
    struct els_parse_callbacks cb = {
        .struct_size = sizeof cb, .on_header = cb_header, .on_event = cb_event,
        .on_end = cb_end,
    };
    if (!ix->pglob || !ix->notes || tl_aggr_new(&ix->aggr) < 0
        || els_parser_new(&ix->parser, &cb, ix, ELS_PARSE_RESTART) < 0) {
        tl_index_free(ix);
        return -ENOMEM;
    }
    ix->st.mem_bytes = sizeof *ix + (uint64_t)bins * sizeof *ix->pglob
        + TL_NOTES_MAX * sizeof *ix->notes + (520u << 10);
    *out = ix;
    return 0;
}

void tl_index_free(struct tl_index *ix)
{
    if (!ix)
        return;
    els_parser_free(ix->parser);
    tl_aggr_free(ix->aggr);
    free(ix->hdr);
    for (size_t i = 0; i < 1024; i++)
        free(ix->descs[i]);
    for (size_t i = 0; i <= TL_CAPS_MAX; i++)
        free(ix->lanes[i].v);
    for (size_t i = 0; i < TL_CAPS_MAX; i++) {
        free(ix->pcap[i]);
        free(ix->top[i]);
    }
    free(ix->pglob);
    free(ix->notes);
    free(ix->threads);
    free(ix->thash);
    free(ix);
}

int tl_index_feed(struct tl_index *ix, const void *buf, size_t len)
{
    if (!ix->have_header) {
        if (ix->hdr_len + len > (1u << 20)) {
            snprintf(ix->error, sizeof ix->error, "header longer than 1 MiB");
            return -EINVAL;
        }
        if (ix->hdr_len + len > ix->hdr_cap) {
            size_t c = ix->hdr_len + len + 4096;
            uint8_t *p = realloc(ix->hdr, c);
            if (!p)
                return -ENOMEM;
            ix->hdr = p;
            ix->hdr_cap = c;
        }
        memcpy(ix->hdr + ix->hdr_len, buf, len);
        ix->hdr_len += len;
    }
    int rc = els_parser_feed(ix->parser, buf, len, NULL);
    ix->fed += len;
    ix->st.bytes = ix->fed;
    if (rc == -EINVAL) {
        struct els_parse_status s;
        els_parser_status(ix->parser, &s);
        snprintf(ix->error, sizeof ix->error, "%s", s.error);
        return -EINVAL;
    }
    return rc < 0 ? rc : 0;
}

const char *tl_index_error(const struct tl_index *ix) { return ix->error; }

void tl_index_trim(struct tl_index *ix, uint64_t base)
{
    for (size_t i = 0; i <= TL_CAPS_MAX; i++) {
        struct tl_lane *l = &ix->lanes[i];
        while (l->head < l->n && l->v[l->head].off < base
               && !(ix->cur_lane == (int)i && ix->cur_idx == l->head)) {
            struct tl_chunk *c = &l->v[l->head++];
            ix->st.dropped_chunks++;
            ix->st.dropped_events += c->events;
            ix->st.dropped_bytes += c->len;
            if (!ix->st.dropped_t_first || c->t_first < ix->st.dropped_t_first)
                ix->st.dropped_t_first = c->t_first;
            if (c->t_last > ix->st.dropped_t_last)
                ix->st.dropped_t_last = c->t_last;
        }
    }
}

void tl_index_stats(const struct tl_index *ix, struct tl_index_stats *out)
{
    *out = ix->st;
    struct tl_aggr_stats ag;
    tl_aggr_stats(ix->aggr, &ag);
    out->mem_bytes += ag.mem_bytes;
    out->bin_width = ix->width;
    out->bins = ix->nbins;
}

const uint8_t *tl_index_header(const struct tl_index *ix, size_t *len)
{
    *len = ix->have_header ? ix->hdr_len : 0;
    return ix->hdr;
}

int tl_index_type_size(const struct tl_index *ix, uint16_t tag)
{
    return ix->sizes[tag];
}

const char *tl_index_type_desc(const struct tl_index *ix, uint16_t tag)
{
    return tag < 1024 && ix->descs[tag] ? ix->descs[tag] : "";
}

unsigned tl_index_ncaps(const struct tl_index *ix) { return ix->ncaps; }

const struct tl_lane *tl_index_lane(const struct tl_index *ix, unsigned lane)
{
    return lane <= TL_CAPS_MAX ? &ix->lanes[lane] : NULL;
}

size_t tl_lane_seek(const struct tl_lane *l, uint64_t t0)
{
    size_t lo = l->head, hi = l->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (l->v[mid].t_max < t0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

const struct tl_capstate *tl_index_capstate(const struct tl_index *ix,
                                            unsigned cap)
{
    return cap < TL_CAPS_MAX ? &ix->caps[cap] : NULL;
}

uint64_t tl_pyr_width(const struct tl_index *ix) { return ix->width; }
size_t tl_pyr_used(const struct tl_index *ix) { return ix->used; }
const struct tl_capbin *tl_pyr_cap(const struct tl_index *ix, unsigned cap)
{
    return cap < TL_CAPS_MAX ? ix->pcap[cap] : NULL;
}
const struct tl_gbin *tl_pyr_global(const struct tl_index *ix) { return ix->pglob; }

size_t tl_index_notes(const struct tl_index *ix) { return ix->notes_n; }
const struct tl_note *tl_index_note(const struct tl_index *ix, size_t i)
{
    return i < ix->notes_n ? &ix->notes[(ix->notes_head + i) % TL_NOTES_MAX] : NULL;
}

const struct tl_thread *tl_index_thread(const struct tl_index *ix, uint32_t id)
{
    return thread_find(ix, id);
}

struct tl_aggr *tl_index_aggr(const struct tl_index *ix) { return ix->aggr; }
