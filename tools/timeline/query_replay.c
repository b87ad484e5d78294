/*
 * query_replay.c: a window replayed from the stream's bytes, each lane's
 * events read back from its chunks and merged by time into the caps' and
 * threads' segments, the figures and the event lists (query.c chooses
 * when; query_emit.c writes the result).
 *
 * Note [Replaying a window]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~
 * Each capability's events are in time order in its own chunks, and each
 * chunk records the cap's state at its start (the thread running, in GC
 * or not, its allocation counter).  So a window [t0,t1] is replayed from
 * the first chunk of each lane that reaches t0 (tl_lane_seek()), starting
 * from that chunk's state, and the lanes are merged by time (equal times
 * in stream order, as ghc-events' stable sort has them) until every lane
 * is past t1.  What happened before the first chunk is summed up by its
 * start state, which is exact for caps; a thread's state is known only
 * from its first event in the replay on.  A cap with no chunk reaching
 * t0 keeps, throughout the window, the state its next chunk starts with,
 * or its state now when it has none.  Events a little out of order
 * within a lane are put in order on the way (see tlq_replay_run()).
 */
#include "timeline/query_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eventlog-sink/parse.h"

/* ------------------------------------------------------------------------
 * Reading a lane's events back
 * ------------------------------------------------------------------------ */

struct cursor {
    const struct tl_index *ix;
    struct tl_spool *sp;
    const struct tl_lane *l;
    size_t ci;                    /* current chunk */
    uint64_t pos, end;            /* stream offsets within it */
    uint64_t stop_after;          /* no chunk starting after this */
    uint8_t *buf;
    uint64_t buf_at;              /* stream offset of buf[0] */
    size_t blen;
    int err;
    bool have;
    struct els_event ev;
};

static bool cursor_chunk(struct cursor *c)
{
    while (c->ci < c->l->n) {
        const struct tl_chunk *k = &c->l->v[c->ci];
        if (k->t_first > c->stop_after)
            return false;
        if (k->off < tl_spool_base(c->sp)) {
            c->ci++;
            continue;
        }
        c->pos = k->off;
        c->end = k->off + k->len;
        if (c->end > tl_spool_end(c->sp))
            c->end = tl_spool_end(c->sp);
        if (k->synthetic == 0)
            c->pos += 10 + 14;    /* the block marker */
        return true;
    }
    return false;
}

/* Make n bytes at pos available in buf: a pointer to them, or NULL. */
static const uint8_t *cursor_bytes(struct cursor *c, size_t n)
{
    if (c->pos >= c->buf_at && c->pos + n <= c->buf_at + c->blen)
        return c->buf + (c->pos - c->buf_at);
    long r = tl_spool_read(c->sp, c->pos, c->buf, TL_BUF);
    if (r < 0) {
        c->err = (int)r;
        return NULL;
    }
    c->buf_at = c->pos;
    c->blen = (size_t)r;
    return (size_t)r >= n ? c->buf : NULL;
}

static uint64_t be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* The lane's next event into c->ev (c->have false at its end). */
static void cursor_next(struct cursor *c)
{
    c->have = false;
    for (;;) {
        if (c->pos + 10 > c->end) {
            c->ci++;
            if (!cursor_chunk(c))
                return;
            continue;
        }
        const uint8_t *p = cursor_bytes(c, 12 <= c->end - c->pos ? 12 : 10);
        if (!p)
            return;
        uint16_t tag = (uint16_t)be(p, 2);
        int sz = tl_index_type_size(c->ix, tag);
        if (sz == -2) {
            c->err = -EINVAL;
            return;
        }
        size_t hdr = 10, len = (size_t)sz;
        if (sz < 0) {
            if (c->pos + 12 > c->end) {
                c->err = -EINVAL;
                return;
            }
            len = (size_t)be(p + 10, 2);
            hdr = 12;
        }
        p = cursor_bytes(c, hdr + len);
        if (!p) {
            if (!c->err)
                c->err = -EINVAL;
            return;
        }
        const struct tl_chunk *k = &c->l->v[c->ci];
        c->ev = (struct els_event){
            .tag = tag, .time = be(p + 2, 8), .cap = k->cap,
            .payload = p + hdr, .payload_len = len, .offset = c->pos,
        };
        c->pos += hdr + len;
        if (tag == ELS_EV_BLOCK_MARKER)
            continue;
        c->have = true;
        return;
    }
}

static struct thr *thr_get(struct replay *r, uint32_t id)
{
    if (r->nthr * 2 >= r->thr_cap) {
        if (r->thr_cap >= 2 * TL_THREADS_MAX) {
            /* look up only */
        } else {
            size_t nc = r->thr_cap ? r->thr_cap * 2 : 256;
            struct thr *v = calloc(nc, sizeof *v);
            if (!v)
                return NULL;
            for (size_t i = 0; i < r->thr_cap; i++) {
                if (!r->thr[i].id)
                    continue;
                size_t h = (r->thr[i].id * 2654435761u) & (nc - 1);
                while (v[h].id)
                    h = (h + 1) & (nc - 1);
                v[h] = r->thr[i];
            }
            free(r->thr);
            r->thr = v;
            r->thr_cap = nc;
        }
    }
    size_t mask = r->thr_cap - 1;
    for (size_t h = (id * 2654435761u) & mask;; h = (h + 1) & mask) {
        if (r->thr[h].id == id)
            return &r->thr[h];
        if (!r->thr[h].id) {
            if (r->nthr * 2 >= r->thr_cap) {
                r->thr_more++;
                return NULL;
            }
            r->nthr++;
            r->thr[h] = (struct thr){ .id = id, .state = -1, .seg.thread = true,
                                      .seg.cell = -1 };
            return &r->thr[h];
        }
    }
}

static void thr_set(struct replay *r, uint32_t id, uint64_t t, int state,
                    uint32_t reason)
{
    if (!id)
        return;
    struct thr *th = thr_get(r, id);
    if (!th)
        return;
    if (th->state >= 0) {
        uint64_t s = th->since > r->w.t0 ? th->since : r->w.t0;
        uint64_t e = t < r->w.t1 ? t : r->w.t1;
        if (e > s)
            th->ns[th->state] += e - s;
        tlq_seg_add(&th->seg, &r->wt, th->since, t, th->state, th->reason);
    }
    th->state = state;
    th->reason = reason;
    th->since = t;
}

static void cap_set(struct replay *r, unsigned c, uint64_t t, uint32_t running,
                    bool in_gc)
{
    struct capr *k = &r->caps[c];
    if (k->known && t > k->since) {
        int kind = k->in_gc ? 1 : k->running ? 0 : 2;
        tlq_seg_add(&k->seg, &r->w, k->since, t, kind, k->running);
        /* tlq_px_spread() adds the pixels' covered fractions: HECs busy */
        if (kind == 0)
            tlq_px_spread(r->activity, &r->w, k->since, t, 1.0);
        else if (kind == 1)
            tlq_px_spread(r->gc, &r->w, k->since, t, 1.0);
    }
    k->known = true;
    if (t > k->since || !k->since)
        k->since = t;
    k->running = running;
    k->in_gc = in_gc;
}

static void replay_event(struct replay *r, const struct els_event *ev)
{
    struct els_event_data d;
    if (els_event_decode(ev, &d) < 0)
        return;
    uint64_t t = ev->time;
    bool in = t >= r->w.t0 && t <= r->w.t1;
    struct capr *k = ev->cap >= 0 && (unsigned)ev->cap < r->ncaps
        ? &r->caps[ev->cap] : NULL;
    switch (ev->tag) {
    case ELS_EV_RUN_THREAD:
        if (k)
            cap_set(r, (unsigned)ev->cap, t, d.u.thread.thread, k->in_gc);
        thr_set(r, d.u.thread.thread, t, 0, 0);
        break;
    case ELS_EV_STOP_THREAD: {
        unsigned s = d.u.stop_thread.status;
        if (k)
            cap_set(r, (unsigned)ev->cap, t, 0, k->in_gc);
        int st = s == 5 ? 3 : (s >= 1 && s <= 3) ? 1 : 2;
        thr_set(r, d.u.stop_thread.thread, t, st, s == 5 ? 0 : s);
        if (in) {
            struct thr *th = thr_get(r, d.u.stop_thread.thread);
            if (th && s < 21)
                th->stops[s]++;
        }
        break;
    }
    case ELS_EV_CREATE_THREAD:
        thr_set(r, d.u.thread.thread, t, 1, 0);
        break;
    case ELS_EV_THREAD_RUNNABLE:
    case ELS_EV_THREAD_WAKEUP: {
        uint32_t id = ev->tag == ELS_EV_THREAD_RUNNABLE ? d.u.thread.thread
                                                        : d.u.thread_cap.thread;
        struct thr *th = thr_get(r, id);
        if (th && th->state != 0)
            thr_set(r, id, t, 1, 0);
        break;
    }
    case ELS_EV_GC_START:
        if (k) {
            k->gc_start = t;
            cap_set(r, (unsigned)ev->cap, t, k->running, true);
        }
        break;
    case ELS_EV_GC_WORK:
    case ELS_EV_GC_IDLE:
        if (k && !k->in_gc)
            cap_set(r, (unsigned)ev->cap, t, k->running, true);
        break;
    case ELS_EV_GC_DONE:
        if (k && k->in_gc)
            cap_set(r, (unsigned)ev->cap, t, k->running, false);
        break;
    case ELS_EV_GC_END:
        if (k) {
            cap_set(r, (unsigned)ev->cap, t, k->running, false);
            if (in && k->gc_start && t >= k->gc_start) {
                uint64_t p = t - k->gc_start;
                r->gcs++;
                r->gc_total += p;
                if (p > r->gc_max)
                    r->gc_max = p;
            }
            k->gc_start = 0;
        }
        break;
    case ELS_EV_HEAP_ALLOCATED:
        if (k) {
            uint64_t v = d.u.heap.bytes;
            if (in)
                r->alloc += v >= k->alloc ? v - k->alloc : v;
            k->alloc = v;
        }
        break;
    case ELS_EV_SPARK_COUNTERS:
        if (k) {
            long p = tlq_px_of(&r->w, t);
            uint64_t cr = d.u.spark_counters.created;
            uint64_t cv = d.u.spark_counters.converted;
            if (in && p >= 0 && k->sp_seen) {
                k->created[p] += (double)(cr - (cr >= k->sp_created ? k->sp_created : cr));
                k->converted[p] += (double)(cv - (cv >= k->sp_converted ? k->sp_converted : cv));
            }
            if (in && p >= 0)
                for (long q = p; q < (long)r->w.px; q++)
                    k->pool[q] = (double)d.u.spark_counters.remaining;
            k->sp_seen = true;
            k->sp_created = cr;
            k->sp_converted = cv;
        }
        break;
    case ELS_EV_HEAP_SIZE:
    case ELS_EV_HEAP_LIVE: {
        long p = tlq_px_of(&r->w, t);
        double *v = ev->tag == ELS_EV_HEAP_SIZE ? r->heap_size : r->heap_live;
        if (t <= r->w.t1)
            for (long q = p < 0 ? 0 : p; q < (long)r->w.px; q++)
                v[q] = (double)d.u.heap.bytes;
        break;
    }
    case ELS_EV_USER_MSG:
        if (in && r->msgs_n < TL_LIST_NOTES) {
            if (r->msgs_n++)
                sb_puts(&r->msgs, ",");
            sb_printf(&r->msgs, "[%" PRIu64 ",%d,", t, (int)ev->cap);
            sb_json_str(&r->msgs, d.u.text.ptr, d.u.text.len);
            sb_puts(&r->msgs, "]");
        }
        break;
    default:
        break;
    }
}

/* Set the caps' state before the window from their chunks. */
void tlq_replay_caps_init(struct replay *r, struct tl_index *ix)
{
    for (unsigned c = 0; c < r->ncaps; c++) {
        struct capr *k = &r->caps[c];
        const struct tl_lane *l = tl_index_lane(ix, c);
        size_t i = tl_lane_seek(l, r->w.t0);
        if (i < l->n) {
            const struct tl_chunk *ch = &l->v[i];
            k->running = ch->thread0;
            k->in_gc = ch->gc0;
            k->alloc = ch->alloc0;
            k->since = ch->t_first < r->w.t0 ? ch->t_first : r->w.t0;
            k->known = true;
        } else {
            const struct tl_capstate *cs = tl_index_capstate(ix, c);
            k->running = cs->running;
            k->in_gc = cs->in_gc;
            k->alloc = cs->alloc;
            k->since = cs->since < r->w.t0 ? cs->since : r->w.t0;
            k->known = cs->seen;
        }
        if (k->running)
            thr_set(r, k->running, k->since, 0, 0);
    }
}

/* A cap's buffer is not strictly in time order (an event may carry a
 * time taken a little before an earlier one's), while ghc-events sorts
 * every event by time.  So the merged events pass through a buffer of
 * TL_REORDER events ordered by (time, stream offset), and each lane is
 * read TL_SLACK_NS past t1: disorder shorter than either comes out
 * sorted, as a stable sort of the stream has it. */
#define TL_REORDER 4096
#define TL_SLACK_NS 10000000ull

struct held {
    struct els_event ev;
    uint8_t *big;                 /* a payload longer than small */
    uint8_t small[48];
};

/* The keys wait sorted in k[head .. head+n) of room for 2 x TL_REORDER,
 * the events in slots.  A lane's events mostly come in order, so a key
 * mostly goes at the end and the earliest is always at the front: a
 * sorted run, not a heap, costs no sift per event; one out of order
 * moves only the keys after its place. */
struct hkey {
    uint64_t t, off;
    uint32_t slot;
};

struct reorder {
    struct hkey *k;
    struct held *slot;
    uint32_t *free_slots;
    size_t head, n, nfree;
};

static bool key_less(const struct hkey *a, const struct hkey *b)
{
    return a->t < b->t || (a->t == b->t && a->off < b->off);
}

static void heap_push(struct reorder *h, const struct els_event *ev)
{
    uint32_t s = h->free_slots[--h->nfree];
    struct held *x = &h->slot[s];
    x->ev = *ev;
    x->big = NULL;
    if (ev->payload_len <= sizeof x->small) {
        memcpy(x->small, ev->payload, ev->payload_len);
    } else {
        x->big = malloc(ev->payload_len);
        if (x->big)
            memcpy(x->big, ev->payload, ev->payload_len);
        else
            x->ev.payload_len = 0;
    }
    x->ev.payload = x->big ? x->big : x->small;
    struct hkey key = { ev->time, ev->offset, s };
    if (h->head + h->n == 2 * TL_REORDER) {
        memmove(h->k, h->k + h->head, h->n * sizeof *h->k);
        h->head = 0;
    }
    struct hkey *v = h->k + h->head;
    size_t i = h->n++;
    if (i && key_less(&key, &v[i - 1])) {
        size_t lo = 0, hi = i - 1;  /* the first key above this one */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (key_less(&key, &v[mid]))
                hi = mid;
            else
                lo = mid + 1;
        }
        memmove(v + lo + 1, v + lo, (i - lo) * sizeof *v);
        i = lo;
    }
    v[i] = key;
}

/* The earliest event's slot; release it with heap_release(). */
static struct held *heap_pop(struct reorder *h)
{
    struct hkey top = h->k[h->head++];
    if (!--h->n)
        h->head = 0;
    h->free_slots[h->nfree++] = top.slot;
    return &h->slot[top.slot];
}

static void heap_release(struct held *x)
{
    free(x->big);
    x->big = NULL;
}

/* One event in order: false when the replay may stop. */
static bool replay_one(struct replay *r, const struct tl_index *ix,
                       const struct els_event *ev)
{
    if (ev->time > r->w.t1)
        return true;
    if (r->full)
        replay_event(r, ev);
    if (ev->time < r->w.t0)
        return true;
    r->total++;
    if (r->listed < r->list_max) {
        if (r->listed++)
            sb_puts(&r->events, ",");
        sb_printf(&r->events, "[%" PRIu64 ",%d,", ev->time, (int)ev->cap);
        struct strbuf d = { 0 };
        tl_describe(ix, ev, &d);
        sb_json_str(&r->events, d.p ? d.p : "", d.len);
        sb_free(&d);
        sb_puts(&r->events, "]");
        return true;
    }
    return r->full || r->count_all;
}

int tlq_replay_run(struct replay *r, struct tl_index *ix, struct tl_spool *sp)
{
    unsigned nl = r->ncaps + 1;
    struct cursor *cur = calloc(nl, sizeof *cur);
    struct reorder h = {
        .k = malloc(2 * TL_REORDER * sizeof *h.k),
        .slot = malloc(TL_REORDER * sizeof *h.slot),
        .free_slots = malloc(TL_REORDER * sizeof *h.free_slots),
    };
    uint64_t horizon = r->w.t1 > UINT64_MAX - TL_SLACK_NS ? UINT64_MAX
                                                          : r->w.t1 + TL_SLACK_NS;
    int err = 0;
    bool going = true;
    if (!cur || !h.k || !h.slot || !h.free_slots) {
        err = -ENOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < TL_REORDER; i++)
        h.free_slots[h.nfree++] = TL_REORDER - 1 - i;
    for (unsigned i = 0; i < nl; i++) {
        unsigned lane = i < r->ncaps ? i : TL_LANE_GLOBAL;
        struct cursor *c = &cur[i];
        c->ix = ix;
        c->sp = sp;
        c->l = tl_index_lane(ix, lane);
        c->ci = tl_lane_seek(c->l, r->w.t0);
        c->stop_after = r->w.t1;
        c->buf = malloc(TL_BUF);
        if (!c->buf) {
            err = -ENOMEM;
            goto out;
        }
        if (cursor_chunk(c))
            cursor_next(c);
    }
    while (going) {
        struct cursor *best = NULL;
        for (unsigned i = 0; i < nl; i++) {
            struct cursor *c = &cur[i];
            if (c->err) {
                err = c->err;
                goto out;
            }
            if (!c->have || c->ev.time > horizon)
                continue;
            if (!best || c->ev.time < best->ev.time
                || (c->ev.time == best->ev.time && c->ev.offset < best->ev.offset))
                best = c;
        }
        if (!best)
            break;
        if (h.n == TL_REORDER) {
            struct held *x = heap_pop(&h);
            going = replay_one(r, ix, &x->ev);
            heap_release(x);
        }
        heap_push(&h, &best->ev);
        cursor_next(best);
    }
    while (h.n) {
        struct held *x = heap_pop(&h);
        if (going)
            going = replay_one(r, ix, &x->ev);
        heap_release(x);
    }
out:
    while (h.k && h.n)
        heap_release(heap_pop(&h));
    free(h.k);
    free(h.slot);
    free(h.free_slots);
    for (unsigned i = 0; cur && i < nl; i++)
        free(cur[i].buf);
    free(cur);
    return err;
}

void tlq_replay_finish(struct replay *r)
{
    for (unsigned c = 0; c < r->ncaps; c++) {
        struct capr *k = &r->caps[c];
        if (k->known)
            cap_set(r, c, r->w.t1, k->running, k->in_gc);
        tlq_seg_end(&k->seg, &r->w);
    }
    for (size_t i = 0; i < r->thr_cap; i++) {
        struct thr *th = &r->thr[i];
        if (!th->id)
            continue;
        if (th->state >= 0 && th->state != 3)
            thr_set(r, th->id, r->w.t1, th->state, th->reason);
        else if (th->state == 3)
            thr_set(r, th->id, r->w.t1, 3, 0);
        tlq_seg_end(&th->seg, &r->wt);
    }
}

int tlq_replay_init(struct replay *r, struct tl_index *ix, const struct win *w,
                    bool full)
{
    memset(r, 0, sizeof *r);
    r->ix = ix;
    r->w = *w;
    r->full = full;
    r->wt = *w;
    if (r->wt.px > TL_THREAD_PX) {
        /* Cells of shorter intervals on the coarser grid; an interval of
         * a pixel or longer (a stop's runnable time the page can show,
         * with its reason) is still drawn as itself. */
        r->wt.px = TL_THREAD_PX;
        r->wt.nspp = (double)(w->t1 - w->t0 + 1) / TL_THREAD_PX;
        r->wt.whole_ns = w->nspp;
    }
    r->ncaps = tl_index_ncaps(ix);
    r->caps = calloc(r->ncaps ? r->ncaps : 1, sizeof *r->caps);
    size_t W = w->px;
    r->activity = calloc(4 * W + 3 * W * (r->ncaps ? r->ncaps : 1), sizeof(double));
    if (!r->caps || !r->activity)
        return -ENOMEM;
    r->gc = r->activity + W;
    r->heap_size = r->gc + W;
    r->heap_live = r->heap_size + W;
    double *p = r->heap_live + W;
    for (unsigned c = 0; c < r->ncaps; c++) {
        r->caps[c].seg.cell = -1;
        r->caps[c].created = p;
        r->caps[c].converted = p + W;
        r->caps[c].pool = p + 2 * W;
        p += 3 * W;
    }
    return 0;
}

void tlq_replay_free(struct replay *r)
{
    for (unsigned c = 0; c < r->ncaps; c++)
        sb_free(&r->caps[c].seg.sb);
    for (size_t i = 0; i < r->thr_cap; i++)
        sb_free(&r->thr[i].seg.sb);
    free(r->caps);
    free(r->activity);
    free(r->thr);
    sb_free(&r->events);
    sb_free(&r->msgs);
}
