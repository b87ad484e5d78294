/*
 * query.c: windows, event lists and figures from the index and the
 * stream's bytes (see query.h for what each answer holds).
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
 * within a lane are put in order on the way (see replay_run()).
 */
#include "timeline/query.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eventlog-sink/parse.h"
#include "timeline/aggr.h"

#define TL_BUF (256u << 10)
#define TL_LIST_NOTES 1000u
#define TL_THREAD_PX 500u        /* thread lanes' grid, at most */

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

/* ------------------------------------------------------------------------
 * Numbers: printf's floating point costs a microsecond a number, and a
 * drawing holds tens of thousands.
 * ------------------------------------------------------------------------ */

static void put_u64(struct strbuf *sb, uint64_t v)
{
    char b[24];
    int i = sizeof b;
    do {
        b[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    sb_put(sb, b + i, sizeof b - (size_t)i);
}

/* v with at most 4 decimals, trailing zeros dropped (0 for non-finite
 * or negative values, which no figure here has). */
static void put_num(struct strbuf *sb, double v)
{
    if (!(v > 0) || v > 1e15) {
        sb_put(sb, "0", 1);
        return;
    }
    uint64_t x = (uint64_t)(v * 10000 + 0.5);
    put_u64(sb, x / 10000);
    unsigned f = (unsigned)(x % 10000);
    if (!f)
        return;
    char d[6] = { '.', (char)('0' + f / 1000), (char)('0' + f / 100 % 10),
                  (char)('0' + f / 10 % 10), (char)('0' + f % 10), 0 };
    size_t n = 5;
    while (d[n - 1] == '0')
        n--;
    sb_put(sb, d, n);
}

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

static const char *cap_kinds[] = { "run", "gc", "idle" };
static const char *thr_kinds[] = { "running", "runnable", "blocked", "finished" };

static void seg_sep(struct segem *m)
{
    if (m->any)
        sb_puts(&m->sb, ",");
    m->any = true;
}

static void seg_flush_open(struct segem *m)
{
    if (!m->open)
        return;
    seg_sep(m);
    const char *k = m->thread ? thr_kinds[m->kind] : cap_kinds[m->kind];
    sb_put(&m->sb, "[", 1);
    put_u64(&m->sb, m->s);
    sb_put(&m->sb, ",", 1);
    put_u64(&m->sb, m->e);
    sb_puts(&m->sb, ",\"");
    sb_puts(&m->sb, k);
    sb_puts(&m->sb, "\"");
    if (!m->thread && m->kind == 0) {
        sb_put(&m->sb, ",", 1);
        put_u64(&m->sb, m->arg);
    } else if (m->thread && (m->kind == 1 || m->kind == 2) && m->arg) {
        sb_puts(&m->sb, ",\"");
        sb_puts(&m->sb, tl_stop_name(m->arg));
        sb_puts(&m->sb, "\"");
    }
    sb_puts(&m->sb, "]");
    m->open = false;
}

/* The pending cell holds the short intervals of one grid cell, but a
 * segment drawn as itself may end or begin inside that cell: the cell
 * is drawn from the end of the segment before it (cell_lo) to the start
 * of the one after it (hi), never over them.  Drawn on its whole grid
 * cell, it would cover a running segment's last pixels with a cell
 * whose fractions leave that running time out (the page paints it
 * runnable), and segments would not be in time order. */
static void seg_flush_cell_to(struct segem *m, const struct win *w, uint64_t hi)
{
    if (m->cell < 0)
        return;
    uint64_t s = w->t0 + (uint64_t)(m->cell * w->nspp);
    uint64_t e = w->t0 + (uint64_t)((m->cell + 1) * w->nspp);
    if (e > w->t1)
        e = w->t1;
    if (s < m->cell_lo)
        s = m->cell_lo;
    if (e > hi)
        e = hi;
    double span = (double)(e > s ? e - s : 1);
    seg_flush_open(m);
    seg_sep(m);
    sb_put(&m->sb, "[", 1);
    put_u64(&m->sb, s);
    sb_put(&m->sb, ",", 1);
    put_u64(&m->sb, e);
    sb_puts(&m->sb, ",\"mixed\",");
    put_num(&m->sb, (double)m->cell_ns[0] / span);
    sb_puts(&m->sb, ",");
    put_num(&m->sb, (double)m->cell_ns[m->thread ? 2 : 1] / span);
    if (!m->thread) {
        sb_put(&m->sb, ",", 1);
        put_u64(&m->sb, m->cell_arg);
    }
    sb_puts(&m->sb, "]");
    m->cell = -1;
    m->cell_lo = 0;
    memset(m->cell_ns, 0, sizeof m->cell_ns);
    m->cell_arg = 0;
    m->cell_arg_ns = 0;
}

static void seg_flush_cell(struct segem *m, const struct win *w)
{
    seg_flush_cell_to(m, w, UINT64_MAX);
}

static void seg_add(struct segem *m, const struct win *w, uint64_t s, uint64_t e,
                    int kind, uint32_t arg)
{
    if (s < w->t0)
        s = w->t0;
    if (e > w->t1)
        e = w->t1;
    if (e <= s)
        return;
    if ((double)(e - s) >= (w->whole_ns > 0 ? w->whole_ns : w->nspp) || e == w->t1) {
        /* a pixel or longer, or the state the window ends in (a stop
         * just before t1 keeps its reason): drawn as itself, after the
         * pending cell */
        seg_flush_cell_to(m, w, s);
        if (m->open && m->kind == kind && m->arg == arg && m->e >= s) {
            m->e = e;
            return;
        }
        seg_flush_open(m);
        m->open = true;
        m->s = s;
        m->e = e;
        m->kind = kind;
        m->arg = arg;
        return;
    }
    long px = (long)((double)(s - w->t0) / w->nspp);
    if (m->cell != px) {
        seg_flush_cell(m, w);
        m->cell_lo = m->open ? m->e : 0;
    }
    m->cell = px;
    m->cell_ns[kind] += e - s;
    if (kind == 0 && e - s > m->cell_arg_ns) {
        m->cell_arg_ns = e - s;
        m->cell_arg = arg;
    }
}

static void seg_end(struct segem *m, const struct win *w)
{
    seg_flush_cell(m, w);
    seg_flush_open(m);
}

/* Spread an interval's length over per-pixel sums. */
static void px_spread(double *v, const struct win *w, uint64_t s, uint64_t e,
                      double weight)
{
    if (s < w->t0)
        s = w->t0;
    if (e > w->t1)
        e = w->t1;
    if (e <= s)
        return;
    double a = (double)(s - w->t0) / w->nspp, b = (double)(e - w->t0) / w->nspp;
    long pa = (long)a, pb = (long)b;
    if (pb >= (long)w->px)
        pb = (long)w->px - 1;
    for (long p = pa; p <= pb; p++) {
        double lo = a > p ? a : (double)p, hi = b < p + 1 ? b : (double)(p + 1);
        if (hi > lo)
            v[p] += (hi - lo) * weight;
    }
}

static long px_of(const struct win *w, uint64_t t)
{
    if (t < w->t0)
        return -1;
    long p = (long)((double)(t - w->t0) / w->nspp);
    return p >= (long)w->px ? (long)w->px - 1 : p;
}

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
        seg_add(&th->seg, &r->wt, th->since, t, th->state, th->reason);
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
        seg_add(&k->seg, &r->w, k->since, t, kind, k->running);
        /* px_spread() adds the pixels' covered fractions: HECs busy */
        if (kind == 0)
            px_spread(r->activity, &r->w, k->since, t, 1.0);
        else if (kind == 1)
            px_spread(r->gc, &r->w, k->since, t, 1.0);
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
            long p = px_of(&r->w, t);
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
        long p = px_of(&r->w, t);
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
static void replay_caps_init(struct replay *r, struct tl_index *ix)
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
 * every event by time.  So the merged events pass through a heap of
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

/* The heap orders small keys; the events wait in slots. */
struct hkey {
    uint64_t t, off;
    uint32_t slot;
};

struct reorder {
    struct hkey *k;
    struct held *slot;
    uint32_t *free_slots;
    size_t n, nfree;
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
    size_t i = h->n++;
    while (i && key_less(&key, &h->k[(i - 1) / 2])) {
        h->k[i] = h->k[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->k[i] = key;
}

/* The earliest event's slot; release it with heap_release(). */
static struct held *heap_pop(struct reorder *h)
{
    struct hkey top = h->k[0], x = h->k[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && key_less(&h->k[c + 1], &h->k[c]))
            c++;
        if (!key_less(&h->k[c], &x))
            break;
        h->k[i] = h->k[c];
        i = c;
    }
    if (h->n)
        h->k[i] = x;
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

static int replay_run(struct replay *r, struct tl_index *ix, struct tl_spool *sp)
{
    unsigned nl = r->ncaps + 1;
    struct cursor *cur = calloc(nl, sizeof *cur);
    struct reorder h = {
        .k = malloc(TL_REORDER * sizeof *h.k),
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

static void replay_finish(struct replay *r)
{
    for (unsigned c = 0; c < r->ncaps; c++) {
        struct capr *k = &r->caps[c];
        if (k->known)
            cap_set(r, c, r->w.t1, k->running, k->in_gc);
        seg_end(&k->seg, &r->w);
    }
    for (size_t i = 0; i < r->thr_cap; i++) {
        struct thr *th = &r->thr[i];
        if (!th->id)
            continue;
        if (th->state >= 0 && th->state != 3)
            thr_set(r, th->id, r->w.t1, th->state, th->reason);
        else if (th->state == 3)
            thr_set(r, th->id, r->w.t1, 3, 0);
        seg_end(&th->seg, &r->wt);
    }
}

static int replay_init(struct replay *r, struct tl_index *ix, const struct win *w,
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

static void replay_free(struct replay *r)
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

/* ------------------------------------------------------------------------
 * Estimates and the summary
 * ------------------------------------------------------------------------ */

static uint64_t estimate(struct tl_index *ix, uint64_t t0, uint64_t t1)
{
    uint64_t n = 0;
    unsigned nc = tl_index_ncaps(ix);
    for (unsigned i = 0; i <= nc; i++) {
        const struct tl_lane *l = tl_index_lane(ix, i < nc ? i : TL_LANE_GLOBAL);
        for (size_t k = tl_lane_seek(l, t0); k < l->n && l->v[k].t_first <= t1; k++)
            n += l->v[k].events;
    }
    return n;
}

/* Sum the pyramid's bins over [s, e) with each bin weighted by its
 * overlap: fn(bin index, fraction). */
static void bins_over(const struct tl_index *ix, uint64_t s, uint64_t e,
                      void (*fn)(void *, size_t, double), void *arg)
{
    uint64_t bw = tl_pyr_width(ix);
    size_t used = tl_pyr_used(ix);
    for (uint64_t b = s / bw; b < used && b * bw < e; b++) {
        uint64_t lo = b * bw, hi = lo + bw;
        uint64_t a = s > lo ? s : lo, z = e < hi ? e : hi;
        if (z > a)
            fn(arg, (size_t)b, (double)(z - a) / (double)bw);
    }
}

struct pxsum {
    const struct tl_capbin *cb;
    double run, gc, created, converted;
    uint32_t thread;
    double pool;
    bool pool_set;
};

static void pxsum_fn(void *arg, size_t b, double f)
{
    struct pxsum *s = arg;
    const struct tl_capbin *x = &s->cb[b];
    s->run += (double)x->run_ns * f;
    s->gc += (double)x->gc_ns * f;
    s->created += x->sparks_created * f;
    s->converted += x->sparks_converted * f;
    s->thread = x->thread_end;
    if (x->pad_) {
        s->pool = x->spark_pool;
        s->pool_set = true;
    }
}

/* ------------------------------------------------------------------------
 * Chunk summaries (see Note [Chunk summaries] in index.c)
 * ------------------------------------------------------------------------ */

/* The stretch of the cap's time chunk i of lane l covers: [*s, *e). */
static void chunk_span(const struct tl_lane *l, size_t i,
                       const struct tl_capstate *cs, uint64_t *s, uint64_t *e)
{
    *s = l->v[i].t_first;
    *e = i + 1 < l->n ? l->v[i + 1].t_first : cs->since;
    if (*e < *s)
        *e = *s;
}

/* Per pixel of one cap, from its chunks: HEC fractions running and in
 * GC, sparks, and the thread whose chunk ran it longest there. */
struct chunkpx {
    double *run, *gc, *created, *converted, *best;
    uint32_t *thread;
};

static void chunk_pixels(const struct tl_index *ix, unsigned c,
                         const struct win *w, struct chunkpx *x)
{
    const struct tl_lane *l = tl_index_lane(ix, c);
    const struct tl_capstate *cs = tl_index_capstate(ix, c);
    for (size_t i = tl_lane_seek(l, w->t0); i < l->n && l->v[i].t_first <= w->t1; i++) {
        const struct tl_chunk *k = &l->v[i];
        uint64_t s, e;
        chunk_span(l, i, cs, &s, &e);
        if (e <= s)
            continue;
        double dur = (double)(e - s);
        px_spread(x->run, w, s, e, (double)k->run_ns / dur);
        px_spread(x->gc, w, s, e, (double)k->gc_ns / dur);
        if (k->sparks_created)
            px_spread(x->created, w, s, e, k->sparks_created * w->nspp / dur);
        if (k->sparks_converted)
            px_spread(x->converted, w, s, e, k->sparks_converted * w->nspp / dur);
        if (!k->top_thread)
            continue;
        long pa = px_of(w, s < w->t0 ? w->t0 : s), pb = px_of(w, e > w->t1 ? w->t1 : e);
        for (long p = pa < 0 ? 0 : pa; p <= pb; p++) {
            double lo = w->t0 + p * w->nspp, hi = lo + w->nspp;
            double a = (double)s > lo ? (double)s : lo, z = (double)e < hi ? (double)e : hi;
            double v = z > a ? (double)k->top_ns * (z - a) / dur : 0;
            if (v > x->best[p]) {
                x->best[p] = v;
                x->thread[p] = k->top_thread;
            }
        }
    }
}

/* The window's chunk summaries summed: each chunk weighted by the part of
 * its stretch inside [t0, t1], counts taken whole from chunks at least
 * half inside, so exact when t0 and t1 + 1 are chunk boundaries. */
struct chunkfig {
    uint64_t gcs, pause, pmax, alloc;
    double run, gc;
};

static void chunk_figures(const struct tl_index *ix, unsigned c, uint64_t t0,
                          uint64_t t1, struct chunkfig *f)
{
    const struct tl_lane *l = tl_index_lane(ix, c);
    const struct tl_capstate *cs = tl_index_capstate(ix, c);
    uint64_t end = t1 == UINT64_MAX ? t1 : t1 + 1;
    for (size_t i = tl_lane_seek(l, t0); i < l->n && l->v[i].t_first <= t1; i++) {
        const struct tl_chunk *k = &l->v[i];
        uint64_t s, e;
        chunk_span(l, i, cs, &s, &e);
        uint64_t a = s > t0 ? s : t0, z = e < end ? e : end;
        double frac = e > s ? (z > a ? (double)(z - a) / (double)(e - s) : 0)
                            : (s >= t0 && s <= t1);
        if (frac >= 0.5) {
            f->gcs += k->gcs;
            f->pause += k->pause_ns;
            f->pmax = k->pause_max > f->pmax ? k->pause_max : f->pmax;
            f->alloc += k->alloc;
        }
        f->run += (double)k->run_ns * frac;
        f->gc += (double)k->gc_ns * frac;
    }
}

/* The busiest threads by the window's chunks (each chunk's longest
 * runner and its time there, a lower bound on the thread's): appended
 * as [[id,running_ns],...], at most max, busiest first. */
static int cmp_top(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    if (x[1] != y[1])
        return x[1] > y[1] ? -1 : 1;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

static void chunk_busiest(const struct tl_index *ix, unsigned ncaps,
                          const struct win *w, unsigned max, struct strbuf *out)
{
    size_t cap = 1024, n = 0;
    uint64_t *v = calloc(2 * cap, sizeof *v);  /* open addressing: id, ns */
    for (unsigned c = 0; v && c < ncaps; c++) {
        const struct tl_lane *l = tl_index_lane(ix, c);
        for (size_t i = tl_lane_seek(l, w->t0); i < l->n && l->v[i].t_first <= w->t1; i++) {
            const struct tl_chunk *k = &l->v[i];
            if (!k->top_thread || k->t_first < w->t0)
                continue;
            size_t h = (k->top_thread * 2654435761u) & (cap - 1);
            while (v[2 * h] && v[2 * h] != k->top_thread)
                h = (h + 1) & (cap - 1);
            if (!v[2 * h]) {
                if (2 * (n + 1) > cap)
                    continue;       /* full: the rest are not counted */
                n++;
                v[2 * h] = k->top_thread;
            }
            v[2 * h + 1] += k->top_ns;
        }
    }
    size_t m = 0;
    for (size_t i = 0; v && i < cap; i++)
        if (v[2 * i]) {
            v[2 * m] = v[2 * i];
            v[2 * m + 1] = v[2 * i + 1];
            m++;
        }
    if (v)
        qsort(v, m, 2 * sizeof *v, cmp_top);
    sb_puts(out, "[");
    for (size_t i = 0; i < m && i < max; i++)
        sb_printf(out, "%s[%" PRIu64 ",%" PRIu64 "]", i ? "," : "", v[2 * i],
                  v[2 * i + 1]);
    sb_puts(out, "]");
    free(v);
}

enum mode { MODE_RAW, MODE_CHUNKS, MODE_SUMMARY };
static const char *mode_names[] = { "raw", "chunks", "summary" };

/* Note [Choosing a level]
 * ~~~~~~~~~~~~~~~~~~~~~~~
 * A window is replayed when its chunks hold at most the budget's events
 * (exact, and the only level with thread lanes and messages).  Past
 * that, the cheapest level that still gives a datum per pixel: the
 * pyramid when a bin is no wider than a pixel; else the chunk summaries
 * when the window holds more chunks per cap than bins (chunks are then
 * the finer grid) and every seen cap's live chunks reach back to t0
 * (before them the spool dropped the bytes and only the pyramid
 * remembers); else the pyramid after all.  A range (one datum) takes
 * the chunks whenever they are the finer grid.  *res is the level's
 * time step: 1, the bin width, or the window's mean chunk length. */
static enum mode choose_mode(const struct tl_index *ix, uint64_t t0, uint64_t t1,
                             uint64_t est, uint64_t budget, double nspp,
                             bool range, uint64_t *res)
{
    *res = 1;
    if (est <= budget)
        return MODE_RAW;
    uint64_t bw = tl_pyr_width(ix);
    *res = bw;
    if (!range && (double)bw <= nspp)
        return MODE_SUMMARY;
    uint64_t most = 0;
    unsigned nc = tl_index_ncaps(ix);
    for (unsigned c = 0; c < nc; c++) {
        if (!tl_pyr_cap(ix, c))
            continue;
        const struct tl_lane *l = tl_index_lane(ix, c);
        if (l->head == l->n || l->v[l->head].t_first > t0)
            return MODE_SUMMARY;
        size_t i = tl_lane_seek(l, t0), j = i;
        while (j < l->n && l->v[j].t_first <= t1)
            j++;
        if (j - i > most)
            most = j - i;
    }
    uint64_t span = t1 - t0 + 1;
    if (!most || most <= span / bw)
        return MODE_SUMMARY;
    *res = span / most ? span / most : 1;
    return MODE_CHUNKS;
}

static void summary_lanes(struct replay *r, struct tl_index *ix, bool chunks)
{
    const struct win *w = &r->w;
    uint64_t now = 0;
    struct tl_index_stats st;
    tl_index_stats(ix, &st);
    now = st.t_last;
    struct chunkpx cx = { 0 };
    if (chunks) {
        cx.run = calloc(5 * (size_t)w->px, sizeof(double));
        cx.thread = calloc(w->px, sizeof *cx.thread);
        if (!cx.run || !cx.thread)
            chunks = false;         /* out of memory: the pyramid's bins */
        else {
            cx.gc = cx.run + w->px;
            cx.created = cx.gc + w->px;
            cx.converted = cx.created + w->px;
            cx.best = cx.converted + w->px;
        }
    }
    for (unsigned c = 0; c < r->ncaps; c++) {
        const struct tl_capbin *cb = tl_pyr_cap(ix, c);
        struct capr *k = &r->caps[c];
        const struct tl_capstate *cs = tl_index_capstate(ix, c);
        if (!cb)
            continue;
        if (chunks) {
            memset(cx.run, 0, 5 * (size_t)w->px * sizeof(double));
            memset(cx.thread, 0, w->px * sizeof *cx.thread);
            chunk_pixels(ix, c, w, &cx);
        }
        double pool = 0;
        for (unsigned p = 0; p < w->px; p++) {
            uint64_t s = w->t0 + (uint64_t)(p * w->nspp);
            uint64_t e = w->t0 + (uint64_t)((p + 1) * w->nspp);
            if (e > w->t1)
                e = w->t1;
            if (e <= s)
                e = s + 1;
            struct pxsum x = { .cb = cb };
            bins_over(ix, s, e, pxsum_fn, &x);
            if (chunks) {
                double span = (double)(e - s);
                x.run = cx.run[p] * span;
                x.gc = cx.gc[p] * span;
                x.created = cx.created[p];
                x.converted = cx.converted[p];
                x.thread = cx.thread[p];
            }
            /* the state still open at the index's end */
            if (cs->seen && (cs->running || cs->in_gc) && e > cs->since) {
                uint64_t a = s > cs->since ? s : cs->since, z = e < now ? e : now;
                if (z > a) {
                    if (cs->in_gc)
                        x.gc += (double)(z - a);
                    else
                        x.run += (double)(z - a);
                    x.thread = cs->in_gc ? 0 : cs->running;
                }
            }
            double span = (double)(e - s);
            double fr = x.run / span, fg = x.gc / span;
            r->activity[p] += fr;
            r->gc[p] += fg;
            k->created[p] = x.created;
            k->converted[p] = x.converted;
            if (x.pool_set)
                pool = x.pool;
            k->pool[p] = pool;
            if (fr >= 0.99)
                seg_add(&k->seg, w, s, s + (uint64_t)w->nspp + 1, 0, x.thread);
            else if (fg >= 0.99)
                seg_add(&k->seg, w, s, s + (uint64_t)w->nspp + 1, 1, 0);
            else if (fr + fg <= 0.01)
                seg_add(&k->seg, w, s, s + (uint64_t)w->nspp + 1, 2, 0);
            else {
                seg_flush_cell(&k->seg, w);
                k->seg.cell = p;
                k->seg.cell_ns[0] = (uint64_t)x.run;
                k->seg.cell_ns[1] = (uint64_t)x.gc;
                k->seg.cell_arg = x.thread;
                seg_flush_cell(&k->seg, w);
            }
        }
        seg_end(&k->seg, w);
    }
    free(cx.run);
    free(cx.thread);
    /* heap: the last value at or before each pixel's end */
    const struct tl_gbin *g = tl_pyr_global(ix);
    uint64_t bw = tl_pyr_width(ix);
    size_t used = tl_pyr_used(ix);
    double hs = 0, hl = 0;
    size_t b = 0;
    for (unsigned p = 0; p < w->px; p++) {
        uint64_t e = w->t0 + (uint64_t)((p + 1) * w->nspp);
        for (; b < used && b * bw < e; b++) {
            if (g[b].heap_size)
                hs = (double)g[b].heap_size;
            if (g[b].heap_live)
                hl = (double)g[b].heap_live;
        }
        r->heap_size[p] = hs;
        r->heap_live[p] = hl;
    }
}

struct figsum {
    const struct tl_index *ix;
    unsigned c;
    uint64_t gcs, pause, pmax;
    double alloc, run, gc;
};

static void figsum_fn(void *arg, size_t b, double f)
{
    struct figsum *s = arg;
    const struct tl_capbin *x = &tl_pyr_cap(s->ix, s->c)[b];
    /* counts are whole: a bin partly inside counts if its middle is */
    if (f >= 0.5) {
        s->gcs += x->gcs;
        s->pause += x->pause_ns;
        if (x->pause_max > s->pmax)
            s->pmax = x->pause_max;
        s->alloc += (double)x->alloc;
    }
    s->run += (double)x->run_ns * f;
    s->gc += (double)x->gc_ns * f;
}

/* ------------------------------------------------------------------------
 * Output
 * ------------------------------------------------------------------------ */

static void put_arr(struct strbuf *sb, const double *v, unsigned n)
{
    sb_puts(sb, "[");
    for (unsigned i = 0; i < n; i++) {
        if (i)
            sb_put(sb, ",", 1);
        put_num(sb, v[i]);
    }
    sb_puts(sb, "]");
}

static void put_notes(struct strbuf *out, struct tl_index *ix, uint64_t t0,
                      uint64_t t1)
{
    size_t n = tl_index_notes(ix);
    unsigned k = 0;
    sb_puts(out, ",\"markers\":[");
    for (size_t i = 0; i < n && k < TL_LIST_NOTES; i++) {
        const struct tl_note *nt = tl_index_note(ix, i);
        if (nt->kind != TL_NOTE_MARKER || nt->t < t0 || nt->t > t1)
            continue;
        if (k++)
            sb_puts(out, ",");
        sb_printf(out, "[%" PRIu64 ",%d,", nt->t, (int)nt->cap);
        sb_json_str(out, nt->text, nt->len);
        sb_puts(out, "]");
    }
    sb_puts(out, "],\"spans\":[");
    k = 0;
    for (size_t i = 0; i < n && k < TL_LIST_NOTES; i++) {
        const struct tl_note *a = tl_index_note(ix, i);
        if (a->kind != TL_NOTE_START || a->t > t1)
            continue;
        int64_t end = -1;
        for (size_t j = i + 1; j < n; j++) {
            const struct tl_note *z = tl_index_note(ix, j);
            if (z->kind == TL_NOTE_STOP && z->len == a->len
                && !memcmp(z->text, a->text, a->len)) {
                end = (int64_t)z->t;
                break;
            }
        }
        if (end >= 0 && (uint64_t)end < t0)
            continue;
        if (k++)
            sb_puts(out, ",");
        sb_printf(out, "[%" PRIu64 ",%" PRId64 ",", a->t, end);
        sb_json_str(out, a->text, a->len);
        sb_puts(out, "]");
    }
    sb_puts(out, "]");
}

static int cmp_busy(const void *a, const void *b)
{
    const struct thr *x = *(const struct thr *const *)a, *y = *(const struct thr *const *)b;
    if (x->ns[0] != y->ns[0])
        return x->ns[0] > y->ns[0] ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int cmp_thr(const void *a, const void *b)
{
    const struct thr *x = *(const struct thr *const *)a, *y = *(const struct thr *const *)b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The replay's threads sorted by id (NULL-terminated array to free). */
static struct thr **threads_sorted(struct replay *r)
{
    struct thr **v = calloc(r->nthr + 1, sizeof *v);
    if (!v)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < r->thr_cap; i++)
        if (r->thr[i].id)
            v[n++] = &r->thr[i];
    qsort(v, n, sizeof *v, cmp_thr);
    return v;
}

static void put_label(struct strbuf *out, struct tl_index *ix, uint32_t id)
{
    const struct tl_thread *t = tl_index_thread(ix, id);
    const char *l = t ? t->label : "";
    sb_json_str(out, l, strlen(l));
}

static int fail(struct strbuf *out, int status, const char *fmt, const char *arg)
{
    char msg[256];
    snprintf(msg, sizeof msg, fmt, arg);
    sb_puts(out, "{\"error\":");
    sb_json_str(out, msg, strlen(msg));
    sb_puts(out, "}");
    return status;
}

static int q_info(struct tl_index *ix, struct tl_spool *sp, struct strbuf *out)
{
    struct tl_index_stats s;
    tl_index_stats(ix, &s);
    struct tl_spool_stats ss;
    tl_spool_stats(sp, &ss);
    sb_printf(out, "{\"t_first\":%" PRIu64 ",\"t_last\":%" PRIu64
              ",\"caps\":%" PRIu64 ",\"events\":%" PRIu64 ",\"bytes\":%" PRIu64
              ",\"bin_ns\":%" PRIu64 ",\"bins\":%" PRIu64 ",\"mem_bytes\":%" PRIu64
              ",\"dropped\":{\"chunks\":%" PRIu64 ",\"events\":%" PRIu64
              ",\"bytes\":%" PRIu64 ",\"t_first\":%" PRIu64 ",\"t_last\":%" PRIu64
              "},\"spool\":{\"base\":%" PRIu64 ",\"end\":%" PRIu64
              ",\"on_disk\":%" PRIu64 ",\"segments_dropped\":%" PRIu64 "}}",
              s.t_first, s.t_last, s.caps, s.events, s.bytes, s.bin_width,
              s.bins, s.mem_bytes, s.dropped_chunks, s.dropped_events,
              s.dropped_bytes, s.dropped_t_first, s.dropped_t_last, ss.base,
              ss.end, ss.bytes_on_disk, ss.segments_dropped);
    return 200;
}

int tl_query(struct tl_index *ix, struct tl_spool *sp, const struct tl_query *q,
             struct strbuf *out)
{
    if (q->kind == TL_Q_INFO)
        return q_info(ix, sp, out);
    if (q->t1 < q->t0)
        return fail(out, 400, "t1 is before t0%s", "");
    unsigned px = q->kind == TL_Q_TIMELINE ? q->px : 1;
    if (px < 1 || px > TL_PX_MAX)
        return fail(out, 400, "px must be 1 .. 8192%s", "");
    uint64_t budget = q->raw_budget ? q->raw_budget : TL_RAW_BUDGET_DEFAULT;
    uint64_t est = estimate(ix, q->t0, q->t1);
    struct win w = { .t0 = q->t0, .t1 = q->t1, .px = px };
    w.nspp = (double)(q->t1 - q->t0 + 1) / px;
    uint64_t res;
    enum mode mode = choose_mode(ix, q->t0, q->t1, est, budget, w.nspp,
                                 q->kind == TL_Q_RANGE, &res);
    bool raw = mode == MODE_RAW;
    struct replay r;
    if (replay_init(&r, ix, &w, raw && q->kind != TL_Q_EVENTS) < 0) {
        replay_free(&r);
        return fail(out, 500, "out of memory%s", "");
    }
    int rc = 0;
    if (q->kind == TL_Q_EVENTS) {
        unsigned n = q->max_events ? q->max_events : 1000;
        r.list_max = n > TL_EVENTS_MAX ? TL_EVENTS_MAX : n;
        /* Within the budget every event of the window is counted; past
         * it the list stops at its end and the total is the estimate. */
        r.full = false;
        r.count_all = raw;
        rc = replay_run(&r, ix, sp);
    } else if (raw) {
        replay_caps_init(&r, ix);
        rc = replay_run(&r, ix, sp);
        replay_finish(&r);
    } else if (q->kind == TL_Q_TIMELINE) {
        summary_lanes(&r, ix, mode == MODE_CHUNKS);
    }
    if (rc < 0) {
        replay_free(&r);
        return fail(out, 500, "reading the stream back: %s", strerror(-rc));
    }
    if (q->kind == TL_Q_EVENTS) {
        bool all = raw || r.listed < r.list_max;
        uint64_t total = all ? r.total : est;
        sb_printf(out, "{\"t0\":%" PRIu64 ",\"t1\":%" PRIu64 ",\"total\":%" PRIu64
                  ",\"exact\":%s,\"truncated\":%s,\"events\":[", q->t0, q->t1,
                  total, all ? "true" : "false",
                  r.listed < total ? "true" : "false");
        sb_put(out, r.events.p ? r.events.p : "", r.events.len);
        sb_puts(out, "]}");
        replay_free(&r);
        return out->failed ? 500 : 200;
    }
    if (q->kind == TL_Q_RANGE) {
        uint64_t run = 0, gcns = 0, span_all = 0;
        uint64_t gcs = r.gcs, total = r.gc_total, mx = r.gc_max, alloc = r.alloc;
        if (!raw) {
            gcs = total = mx = alloc = 0;
        }
        for (unsigned c = 0; c < r.ncaps; c++) {
            if (!tl_pyr_cap(ix, c))
                continue;
            span_all += q->t1 - q->t0;
            struct figsum f = { .ix = ix, .c = c };
            if (mode == MODE_CHUNKS) {
                struct chunkfig cf = { 0 };
                chunk_figures(ix, c, q->t0, q->t1, &cf);
                f.gcs = cf.gcs;
                f.pause = cf.pause;
                f.pmax = cf.pmax;
                f.alloc = (double)cf.alloc;
                f.run = cf.run;
                f.gc = cf.gc;
            } else {
                bins_over(ix, q->t0, q->t1, figsum_fn, &f);
            }
            if (!raw) {
                gcs += f.gcs;
                total += f.pause;
                mx = f.pmax > mx ? f.pmax : mx;
                alloc += (uint64_t)f.alloc;
            }
            run += (uint64_t)f.run;
            gcns += (uint64_t)f.gc;
        }
        sb_printf(out, "{\"t0\":%" PRIu64 ",\"t1\":%" PRIu64 ",\"exact\":%s,"
                  "\"mode\":\"%s\",\"resolution_ns\":%" PRIu64 ","
                  "\"gc\":{\"count\":%" PRIu64 ",\"total_ns\":%" PRIu64
                  ",\"max_ns\":%" PRIu64 "},\"alloc_bytes\":%" PRIu64,
                  q->t0, q->t1, raw ? "true" : "false", mode_names[mode], res,
                  gcs, total, mx, alloc);
        if (raw) {
            /* HEC time from the replay: exact */
            run = gcns = 0;
            for (unsigned p = 0; p < px; p++) {
                run += (uint64_t)(r.activity[p] * w.nspp + 0.5);
                gcns += (uint64_t)(r.gc[p] * w.nspp + 0.5);
            }
        }
        sb_printf(out, ",\"hec_ns\":{\"run\":%" PRIu64 ",\"gc\":%" PRIu64
                  ",\"idle\":%" PRIu64 "}", run, gcns,
                  span_all > run + gcns ? span_all - run - gcns : 0);
        if (raw) {
            sb_puts(out, ",\"threads\":[");
            struct thr **v = threads_sorted(&r);
            for (size_t i = 0; v && v[i]; i++) {
                struct thr *th = v[i];
                if (i)
                    sb_puts(out, ",");
                sb_printf(out, "{\"id\":%" PRIu32 ",\"label\":", th->id);
                put_label(out, ix, th->id);
                sb_printf(out, ",\"running_ns\":%" PRIu64 ",\"runnable_ns\":%"
                          PRIu64 ",\"blocked_ns\":%" PRIu64 ",\"stops\":{",
                          th->ns[0], th->ns[1], th->ns[2]);
                bool any = false;
                for (unsigned s = 0; s < 21; s++) {
                    if (!th->stops[s])
                        continue;
                    sb_printf(out, "%s\"%s\":%" PRIu32, any ? "," : "",
                              tl_stop_name(s), th->stops[s]);
                    any = true;
                }
                sb_puts(out, "}}");
            }
            free(v);
            sb_puts(out, "]}");
        } else {
            sb_puts(out, ",\"threads\":null}");
        }
        replay_free(&r);
        return out->failed ? 500 : 200;
    }
    /* the timeline */
    sb_printf(out, "{\"t0\":%" PRIu64 ",\"t1\":%" PRIu64 ",\"px\":%u,\"ns_per_px\":",
              q->t0, q->t1, px);
    sb_json_num(out, w.nspp);
    sb_printf(out, ",\"mode\":\"%s\",\"resolution_ns\":%" PRIu64
              ",\"events_estimate\":%" PRIu64 ",\"caps\":[",
              mode_names[mode], res, est);
    bool first = true;
    for (unsigned c = 0; c < r.ncaps; c++) {
        if (!tl_pyr_cap(ix, c))
            continue;
        struct capr *k = &r.caps[c];
        sb_printf(out, "%s{\"cap\":%u,\"segments\":[", first ? "" : ",", c);
        first = false;
        sb_put(out, k->seg.sb.p ? k->seg.sb.p : "", k->seg.sb.len);
        sb_puts(out, "],\"sparks\":{\"created\":");
        put_arr(out, k->created, px);
        sb_puts(out, ",\"converted\":");
        put_arr(out, k->converted, px);
        sb_puts(out, ",\"pool\":");
        put_arr(out, k->pool, px);
        sb_puts(out, "}}");
    }
    sb_puts(out, "],\"activity\":");
    put_arr(out, r.activity, px);
    sb_puts(out, ",\"gc\":");
    put_arr(out, r.gc, px);
    sb_puts(out, ",\"heap\":{\"size\":");
    put_arr(out, r.heap_size, px);
    sb_puts(out, ",\"live\":");
    put_arr(out, r.heap_live, px);
    sb_puts(out, "}");
    put_notes(out, ix, q->t0, q->t1);
    if (raw) {
        sb_puts(out, ",\"messages\":[");
        sb_put(out, r.msgs.p ? r.msgs.p : "", r.msgs.len);
        sb_puts(out, "],\"threads\":[");
        struct thr **v = threads_sorted(&r);
        size_t nv = 0, shown = 0;
        while (v && v[nv])
            nv++;
        /* the busiest threads get lanes, shown in id order */
        if (v)
            qsort(v, nv, sizeof *v, cmp_busy);
        unsigned maxt = q->max_threads ? q->max_threads : TL_THREADS_DEFAULT;
        size_t keep = 0;
        for (size_t i = 0; i < nv; i++) {
            if (!v[i]->seg.sb.len)
                continue;
            if (keep == maxt) {
                r.thr_more++;
                continue;
            }
            v[keep++] = v[i];
        }
        if (v)
            qsort(v, keep, sizeof *v, cmp_thr);
        for (size_t i = 0; i < keep; i++) {
            if (shown++)
                sb_puts(out, ",");
            sb_printf(out, "{\"id\":%" PRIu32 ",\"label\":", v[i]->id);
            put_label(out, ix, v[i]->id);
            sb_puts(out, ",\"segments\":[");
            sb_put(out, v[i]->seg.sb.p, v[i]->seg.sb.len);
            sb_puts(out, "]}");
        }
        free(v);
        sb_printf(out, "],\"threads_more\":%" PRIu64 "}", r.thr_more);
    } else {
        /* thread lanes need a replay: the widest window that would
         * replay here (the page offers to zoom to it), and the threads
         * the chunks say ran most */
        uint64_t span = q->t1 - q->t0 + 1;
        uint64_t narrow = (uint64_t)((double)span * (double)budget / (double)est);
        sb_printf(out, ",\"messages\":null,\"threads\":null,"
                  "\"threads_window_ns\":%" PRIu64, narrow);
        if (mode == MODE_CHUNKS) {
            sb_puts(out, ",\"threads_busiest\":");
            chunk_busiest(ix, r.ncaps, &w, q->max_threads ? q->max_threads
                                                          : TL_THREADS_DEFAULT, out);
        }
        sb_puts(out, "}");
    }
    replay_free(&r);
    return out->failed ? 500 : 200;
}

/* ------------------------------------------------------------------------
 * The HTTP face
 * ------------------------------------------------------------------------ */

static bool qs_get(const char *qs, const char *key, char *val, size_t n)
{
    size_t kl = strlen(key);
    for (const char *p = qs; p && *p;) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        if (len > kl && p[kl] == '=' && !strncmp(p, key, kl)) {
            size_t vl = len - kl - 1;
            if (vl >= n)
                vl = n - 1;
            memcpy(val, p + kl + 1, vl);
            val[vl] = 0;
            return true;
        }
        p = amp ? amp + 1 : NULL;
    }
    return false;
}

static int qs_u64(const char *qs, const char *key, uint64_t *out, bool *given)
{
    char v[32];
    *given = qs_get(qs, key, v, sizeof v);
    if (!*given)
        return 0;
    if (!*v || strspn(v, "0123456789") != strlen(v) || strlen(v) > 19)
        return -1;
    *out = strtoull(v, NULL, 10);
    return 0;
}

int timeline_route(struct tl_index *ix, struct tl_spool *sp, const char *kind,
                   const char *qs, struct strbuf *out)
{
    char k[16] = "";
    if (!qs)
        qs = "";
    if (kind)
        snprintf(k, sizeof k, "%s", kind);
    else
        qs_get(qs, "kind", k, sizeof k);
    struct tl_query q = { 0 };
    int agg = tl_aggr_route(ix, k, qs, out);   /* heap, durations, spans, profile */
    if (agg)
        return agg;
    if (!strcmp(k, "info"))
        q.kind = TL_Q_INFO;
    else if (!strcmp(k, "timeline"))
        q.kind = TL_Q_TIMELINE;
    else if (!strcmp(k, "events"))
        q.kind = TL_Q_EVENTS;
    else if (!strcmp(k, "range"))
        q.kind = TL_Q_RANGE;
    else
        return fail(out, 400, "unknown kind \"%.20s\" (info, timeline, events, range)", k);
    struct tl_index_stats st;
    tl_index_stats(ix, &st);
    q.t0 = st.t_first;
    q.t1 = st.t_last;
    uint64_t px = 1000, n = 1000, nt = TL_THREADS_DEFAULT;
    bool g;
    if (qs_u64(qs, "t0", &q.t0, &g) < 0 || qs_u64(qs, "t1", &q.t1, &g) < 0
        || qs_u64(qs, "px", &px, &g) < 0 || qs_u64(qs, "n", &n, &g) < 0
        || qs_u64(qs, "threads", &nt, &g) < 0)
        return fail(out, 400, "t0, t1, px, n and threads are decimal integers%s", "");
    q.max_threads = nt > TL_THREADS_MAX_OUT ? TL_THREADS_MAX_OUT : (unsigned)nt;
    if (!q.max_threads)
        q.max_threads = TL_THREADS_DEFAULT;
    if (px > TL_PX_MAX)
        return fail(out, 400, "px must be 1 .. 8192%s", "");
    q.px = (unsigned)px;
    q.max_events = n > TL_EVENTS_MAX ? TL_EVENTS_MAX : (unsigned)n;
    return tl_query(ix, sp, &q, out);
}
