/*
 * index.c: the time index, the summary pyramid and the notes of one
 * stream (see index.h), built from els_parser callbacks in one pass:
 * chunks, threads, notes and the events applied to them; a cap's time
 * into its bins and chunk is pyramid.c's.
 *
 * Note [Timeline memory]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * What the index holds, whatever the stream's age or size:
 *  - the pyramid: bins x (sizeof(struct tl_gbin) + HECs x sizeof(struct
 *    tl_capbin)) = 65536 x (24 + 64 x HECs) bytes: 1.5 MiB + 4 MiB per
 *    HEC by default, reserved; it never grows after a HEC's first
 *    event, it coarsens; only the pages written are held (Note [Pyramid
 *    pages] in pyramid.c);
 *  - notes: TL_NOTES_MAX x 112 bytes = 1.75 MiB at most (a ring);
 *  - threads: at most TL_THREADS_MAX x ~96 bytes = 6 MiB, plus its hash;
 *  - the header and the event-type table (256 KiB + descriptions), and
 *    the parser (about 520 KiB);
 *  - chunks: 248 bytes (their summaries and longest pauses included)
 *    per block, or per TL_CHUNK_EVENTS (8192) events of a longer block,
 *    still in the spool: for a 1 GiB spool of 15-byte events about 8700
 *    chunks, 2.1 MiB; for a 2.6 GB file of 170 M events about 21000, 5
 *    MiB.  Blocks shorter than that (a writer flushing often) cost 248
 *    bytes each: at least one per flush per HEC, 20 MiB a day per HEC at
 *    one flush a second, less what the spool drops (their chunks go with
 *    their bytes);
 *  - per HEC, the current chunk's table of threads' running time
 *    (TL_TOP_SLOTS x 16 bytes = 16 KiB).
 * So about 10 MiB + 4 MiB per HEC + 248 bytes per chunk, which
 * tests/timeline/test_timeline.c (pyramid_bounded) measures.
 */
#include "timeline/index_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eventlog-sink/parse.h"
#include "timeline/aggr.h"

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
        int rc = tli_cap_bins(ix, (unsigned)cap);
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
        tli_cap_cut(ix, (unsigned)cap, ev->time);
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
        tli_cap_cut(ix, (unsigned)cap, ev->time);
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

/* The tags apply() reads; the others only count (runs and stops:
 * apply_run_stop()). */
static bool applies(uint16_t tag)
{
    switch (tag) {
    case ELS_EV_CREATE_THREAD:
    case ELS_EV_THREAD_LABEL: case ELS_EV_GC_START: case ELS_EV_GC_WORK:
    case ELS_EV_GC_IDLE: case ELS_EV_GC_DONE: case ELS_EV_GC_END:
    case ELS_EV_HEAP_ALLOCATED: case ELS_EV_SPARK_COUNTERS:
    case ELS_EV_HEAP_SIZE: case ELS_EV_HEAP_LIVE: case ELS_EV_USER_MARKER:
        return true;
    default:
        return false;
    }
}

/* The event's fields into d: text read here, the rest by the parser;
 * false for a short payload (counted, not applied). */
static bool apply_decode(const struct els_event *ev, struct els_event_data *d)
{
    if (ev->tag == ELS_EV_USER_MSG || ev->tag == ELS_EV_USER_MARKER) {
        /* the text is the payload less a trailing NUL, as
         * els_event_decode() reads it, without clearing all of d */
        size_t n = ev->payload ? ev->payload_len : 0;
        d->u.text.ptr = (const char *)ev->payload;
        d->u.text.len = n && !ev->payload[n - 1] ? n - 1 : n;
    } else if (els_event_decode(ev, d) < 0) {
        return false;
    }
    return true;
}

/* Threads: a thread's creation and label (its runs, stops and end:
 * apply_run_stop()). */
static void apply_thread(struct tl_index *ix, const struct els_event *ev,
                         const struct els_event_data *d)
{
    uint64_t t = ev->time;
    struct tl_thread *th;
    switch (ev->tag) {
    case ELS_EV_CREATE_THREAD:
        th = thread_get(ix, d->u.thread.thread);
        if (th && !th->created)
            th->created = t;
        break;
    case ELS_EV_THREAD_LABEL:
        th = thread_get(ix, d->u.thread_label.thread);
        if (th) {
            size_t n = d->u.thread_label.label.len;
            if (n >= TL_LABEL_MAX)
                n = TL_LABEL_MAX - 1;
            memcpy(th->label, d->u.thread_label.label.ptr, n);
            th->label[n] = 0;
        }
        break;
    default:
        break;
    }
}

/* Collections: the cap in GC or not, and at GC_END the pause in its bin
 * and chunk. */
static void apply_gc(struct tl_index *ix, const struct els_event *ev,
                     struct tl_capstate *cs)
{
    unsigned cap = (unsigned)ev->cap;
    uint64_t t = ev->time;
    switch (ev->tag) {
    case ELS_EV_GC_START:
        cs->gc_start = t;
        tli_cap_change(ix, cap, t, cs->running, true);
        break;
    case ELS_EV_GC_WORK:
    case ELS_EV_GC_IDLE:
        if (!cs->in_gc)
            tli_cap_change(ix, cap, t, cs->running, true);
        break;
    case ELS_EV_GC_DONE:
        if (cs->in_gc)
            tli_cap_change(ix, cap, t, cs->running, false);
        break;
    case ELS_EV_GC_END: {
        tli_cap_change(ix, cap, t, cs->running, false);
        struct tl_capbin *b = &ix->pcap[cap][tli_bin_of(ix, t)];
        uint64_t p = cs->gc_start && t >= cs->gc_start ? t - cs->gc_start : 0;
        b->gcs++;
        b->pause_ns += p;
        if (p > b->pause_max)
            b->pause_max = p;
        struct tl_chunk *c = tli_cap_chunk(ix, cap);
        if (c) {
            c->gcs++;
            c->pause_ns += p;
            if (p > c->pause_max)
                c->pause_max = p;
            tli_chunk_pause(c, t, p);
        }
        cs->gc_start = 0;
        break;
    }
    default:
        break;
    }
}

/* A cap's counters: allocation and sparks, as increases since its last
 * report, into its bin and chunk. */
static void apply_counters(struct tl_index *ix, const struct els_event *ev,
                           const struct els_event_data *d, struct tl_capstate *cs)
{
    unsigned cap = (unsigned)ev->cap;
    size_t b = tli_bin_of(ix, ev->time);
    struct tl_chunk *c = tli_cap_chunk(ix, cap);
    if (ev->tag == ELS_EV_HEAP_ALLOCATED) {
        uint64_t v = d->u.heap.bytes;
        uint64_t delta = v >= cs->alloc ? v - cs->alloc : v;
        ix->pcap[cap][b].alloc += delta;
        if (c)
            c->alloc += delta;
        cs->alloc = v;
        return;
    }
    struct tl_capbin *x = &ix->pcap[cap][b];
    uint64_t cr = d->u.spark_counters.created;
    uint64_t cv = d->u.spark_counters.converted;
    if (cs->sp_seen) {
        uint32_t dcr = (uint32_t)(cr >= cs->sp_created ? cr - cs->sp_created : 0);
        uint32_t dcv = (uint32_t)(cv >= cs->sp_converted ? cv - cs->sp_converted : 0);
        x->sparks_created += dcr;
        x->sparks_converted += dcv;
        if (c) {
            c->sparks_created += dcr;
            c->sparks_converted += dcv;
        }
    }
    cs->sp_created = cr;
    cs->sp_converted = cv;
    cs->sp_seen = true;
    x->spark_pool = (uint32_t)d->u.spark_counters.remaining;
    x->pad_ = 1;
}

/* The stream's own figures: heap size and live bytes, markers. */
static void apply_global(struct tl_index *ix, const struct els_event *ev,
                         const struct els_event_data *d)
{
    uint64_t t = ev->time;
    int cap = ev->cap;
    switch (ev->tag) {
    case ELS_EV_HEAP_SIZE:
        ix->pglob[tli_bin_of(ix, t)].heap_size = d->u.heap.bytes;
        break;
    case ELS_EV_HEAP_LIVE:
        ix->pglob[tli_bin_of(ix, t)].heap_live = d->u.heap.bytes;
        break;
    case ELS_EV_USER_MARKER:
        ix->pglob[tli_bin_of(ix, t)].markers++;
        note_add(ix, t, cap, TL_NOTE_MARKER, d->u.text.ptr, d->u.text.len);
        break;
    default:
        break;
    }
}

/* The state of the event's cap, its first event making it seen, its
 * time the cap's last; NULL for an event of no cap, or with *rc < 0
 * (lane_of_cap()'s). */
static inline __attribute__((always_inline)) struct tl_capstate *
event_cap(struct tl_index *ix, const struct els_event *ev, int *rc)
{
    int cap = ev->cap;
    if (cap < 0)
        return NULL;
    unsigned lane;
    if (!((unsigned)cap < ix->ncaps && ix->caps[cap].seen)
        && (*rc = lane_of_cap(ix, cap, &lane)) < 0)
        return NULL;
    struct tl_capstate *cs = &ix->caps[cap];
    cs->last_t = ev->time;
    return cs;
}

static inline __attribute__((always_inline)) int
apply(struct tl_index *ix, const struct els_event *ev)
{
    if (!applies(ev->tag))
        return 0;
    struct els_event_data d;
    if (!apply_decode(ev, &d))
        return 0;                   /* short payload: counted, not applied */
    int rc = 0;
    struct tl_capstate *cs = event_cap(ix, ev, &rc);
    if (rc < 0)
        return rc;
    switch (ev->tag) {
    case ELS_EV_CREATE_THREAD: case ELS_EV_THREAD_LABEL:
        apply_thread(ix, ev, &d);
        break;
    case ELS_EV_GC_START: case ELS_EV_GC_WORK: case ELS_EV_GC_IDLE:
    case ELS_EV_GC_DONE: case ELS_EV_GC_END:
        if (cs)
            apply_gc(ix, ev, cs);
        break;
    case ELS_EV_HEAP_ALLOCATED: case ELS_EV_SPARK_COUNTERS:
        if (cs)
            apply_counters(ix, ev, &d, cs);
        break;
    default:
        apply_global(ix, ev, &d);
        break;
    }
    return 0;
}

/* Note [Runs and stops first]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Most of a busy program's events are a thread run and a thread stop.
 * Through apply() each took a test of the tag in applies(), another in
 * apply_decode(), a switch in apply() and another in apply_thread():
 * branches the CPU mispredicts when runs, stops and messages alternate
 * at random.  With their payload whole they take this path after one
 * test (a short one is counted, not applied, as apply() treats any). */
static inline __attribute__((always_inline)) int
apply_run_stop(struct tl_index *ix, const struct els_event *ev)
{
    const uint8_t *p = ev->payload;
    uint32_t id = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16
                | (uint32_t)p[2] << 8 | p[3];
    int rc = 0;
    struct tl_capstate *cs = event_cap(ix, ev, &rc);
    if (rc < 0)
        return rc;
    if (cs)
        tli_cap_change(ix, (unsigned)ev->cap, ev->time,
                       ev->tag == ELS_EV_RUN_THREAD ? id : 0, cs->in_gc);
    if (ev->tag == ELS_EV_STOP_THREAD && (p[4] << 8 | p[5]) == 5) {
        struct tl_thread *th = thread_get(ix, id);
        if (th)
            th->finished = ev->time;
    }
    return 0;
}

/* Tell the aggregates how far the events since the last call went, and
 * who runs on their capability (Note [What the aggregates see]). */
static void aggr_sync(struct tl_index *ix)
{
    int cap = ix->aggr_cap;
    if (!ix->aggr_any)
        return;
    uint32_t running = cap >= 0 && (unsigned)cap < ix->ncaps && ix->caps[cap].seen
        ? ix->caps[cap].running : 0;
    tl_aggr_cap(ix->aggr, cap, ix->aggr_last, running);
}

static int cb_end(void *user, uint64_t offset)
{
    struct tl_index *ix = user;
    (void)offset;
    aggr_sync(ix);
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
    if (ev->cap != ix->aggr_cap) {
        aggr_sync(ix);
        ix->aggr_cap = ev->cap;
        ix->aggr_last = 0;
    }
    ix->aggr_any = true;
    if (ev->time > ix->aggr_last)
        ix->aggr_last = ev->time;
    if (ev->tag == ELS_EV_BLOCK_MARKER) {
        aggr_sync(ix);
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
    if ((ev->tag == ELS_EV_RUN_THREAD && ev->payload_len >= 4)
        || (ev->tag == ELS_EV_STOP_THREAD && ev->payload_len >= 6))
        return apply_run_stop(ix, ev);   /* Note [Runs and stops first] */
    if (tl_aggr_wants(ev->tag)) {
        aggr_sync(ix);
        int rc = tl_aggr_event(ix->aggr, ev);
        if (rc < 0)
            return rc;
    }
    return apply(ix, ev);
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
    ix->aggr_cap = -1;
    ix->nbins = bins;
    ix->width = TL_PYR_WIDTH0;
    ix->shift = 10;               /* log2(TL_PYR_WIDTH0) */
    int prc = tli_pyr_new(ix);
    ix->notes = calloc(TL_NOTES_MAX, sizeof *ix->notes);
    struct els_parse_callbacks cb = {
        .struct_size = sizeof cb, .on_header = cb_header, .on_event = cb_event,
        .on_end = cb_end,
    };
    if (prc < 0 || !ix->notes || tl_aggr_new(&ix->aggr) < 0
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
    tli_pyr_free(ix);
    for (size_t i = 0; i < TL_CAPS_MAX; i++)
        free(ix->top[i]);
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
    tl_aggr_stats(ix->aggr, &out->aggr);
    out->mem_bytes += out->aggr.mem_bytes;
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
