/*
 * aggr.c: the timeline's aggregates (aggr.h): heap censuses by band,
 * spans from markers, cost-centre ticks by stack; fed one event at a
 * time, answered by window from their side files (side.h).
 *
 * Note [Aggregate memory]
 * ~~~~~~~~~~~~~~~~~~~~~~~
 * Held in memory whatever the run's length:
 *  - the side files' tail pages: 4096 records of 24 bytes (censuses,
 *    spans), 16 (band samples, ticks): about 330 KiB, and 16 bytes per
 *    page of 4096 records written (for a day of 100 spans a second,
 *    34 KiB);
 *  - the band table: at most TL_HEAP_BANDS_MAX bands in
 *    TL_HEAP_NAMES_BYTES of keys and names, plus 16 bytes a band and
 *    its hash (2.5 MiB at most besides the names);
 *  - spans: at most TL_SPANS_NAMES_MAX names (200 bytes each), the
 *    (thread, name, pair) keys of open starts (about 40 bytes each, at
 *    most TL_SPANS_KEYS_MAX: 2.5 MiB), the open starts (16 bytes each,
 *    at most TL_SPANS_OPEN_MAX: 4 MiB), the
 *    marker events waiting for their capabilities (24 bytes each, at
 *    most TL_SPANS_PENDING_MAX: 8 MiB);
 *  - the stack table: at most TL_PROF_STACKS_MAX stacks of
 *    TL_PROF_STACK_IDS_MAX ids in all (16 MiB at most), and the cost
 *    centres' definitions.
 * What does not fit is counted and answered (refused_samples,
 * names_refused, open_refused, released_early, other), never dropped
 * silently.  A query holds in addition what its answer needs, at most
 * TL_HEAP_CELLS_MAX values (heap) or TL_SPANS_EXACT_MAX durations.
 *
 * Note [Spans in time order]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~
 * An end pairs with the latest open start of its name posted by the same
 * Haskell thread: several threads serve requests of one name at once,
 * and a global last-in-first-out would pair one thread's end with
 * another's start.  The poster is the thread the capability runs
 * (RUN_THREAD .. STOP_THREAD around the marker on that capability; 0
 * outside any).  A span's start and end may be posted on different
 * capabilities (the thread migrates), and the blocks of different
 * capabilities reach us out of time order, so matching in stream order
 * could meet an end before its start.  Marker events therefore wait,
 * one queue per capability (already in time order), and leave by a
 * merge of the queues' heads (equal times in stream order, as ghc-events
 * sorts) once every capability (created, or seen posting, and not
 * deleted or disabled) has posted an event at or after their time: its
 * events arrive in time order, so nothing earlier can still come from
 * it.  Which capabilities exist is known only from CAP_CREATE, on the
 * global lane, whose buffer the RTS writes when it fills, at a flush
 * (--eventlog-flush-interval) or at exit: until one arrives nothing is
 * matched while fewer than TL_SPANS_PENDING_MAX / 2 wait (a capability
 * whose first block has not come is unknown), and past that the
 * capabilities seen so far stand for all, the events so matched counted
 * in released_early.  At the stream's end everything left is matched;
 * when TL_SPANS_PENDING_MAX wait, the earliest goes first, counted in
 * released_early too (such pairs may differ from the time order).
 */
#include "timeline/aggr_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eventlog-sink/parse.h"
#include "monitor/ccs.h"
#include "timeline/side.h"

/* ------------------------------------------------------------------------
 * Interning: byte strings to dense numbers, with a second string (a
 * band's name) kept beside the key; bounded in count and bytes.
 * ------------------------------------------------------------------------ */

static uint32_t hash_bytes(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 16777619u;
    return h;
}

static void itab_free(struct itab *t)
{
    free(t->v);
    free(t->blob);
    free(t->slots);
}

static int blob_add(struct itab *t, const void *p, size_t n, uint32_t *off)
{
    if (t->blob_len + n > t->blob_cap) {
        size_t c = t->blob_cap ? t->blob_cap : 4096;
        while (c < t->blob_len + n)
            c *= 2;
        char *b = realloc(t->blob, c);
        if (!b)
            return -ENOMEM;
        t->blob = b;
        t->blob_cap = c;
    }
    memcpy(t->blob + t->blob_len, p, n);
    *off = (uint32_t)t->blob_len;
    t->blob_len += n;
    return 0;
}

/* The key's number: 0 found, 1 added (aux kept beside it), -ENOSPC (the
 * table is full), -ENOMEM. */
static int itab_get(struct itab *t, const void *key, size_t len,
                    const char *aux, size_t aux_len, uint32_t *out)
{
    uint32_t h = hash_bytes(key, len);
    if (t->nslots) {
        for (size_t s = h & (t->nslots - 1);; s = (s + 1) & (t->nslots - 1)) {
            uint32_t k = t->slots[s];
            if (!k)
                break;
            struct ient *e = &t->v[k - 1];
            if (e->len == len && !memcmp(t->blob + e->off, key, len)) {
                *out = k - 1;
                return 0;
            }
        }
    }
    if (t->n >= t->max || t->blob_len + len + aux_len > t->blob_max)
        return -ENOSPC;
    if (t->n == t->cap) {
        uint32_t c = t->cap ? t->cap * 2 : 64;
        struct ient *v = realloc(t->v, c * sizeof *v);
        if (!v)
            return -ENOMEM;
        t->v = v;
        t->cap = c;
    }
    if (2 * (t->n + 1) > t->nslots) {
        size_t ns = t->nslots ? t->nslots * 2 : 128;
        uint32_t *sl = calloc(ns, sizeof *sl);
        if (!sl)
            return -ENOMEM;
        for (uint32_t i = 0; i < t->n; i++) {
            size_t s = hash_bytes(t->blob + t->v[i].off, t->v[i].len) & (ns - 1);
            while (sl[s])
                s = (s + 1) & (ns - 1);
            sl[s] = i + 1;
        }
        free(t->slots);
        t->slots = sl;
        t->nslots = ns;
    }
    struct ient e = { .len = (uint32_t)len, .aux_len = (uint32_t)aux_len };
    if (blob_add(t, key, len, &e.off) < 0 || blob_add(t, aux, aux_len, &e.aux_off) < 0)
        return -ENOMEM;
    t->v[t->n] = e;
    size_t s = h & (t->nslots - 1);
    while (t->slots[s])
        s = (s + 1) & (t->nslots - 1);
    t->slots[s] = t->n + 1;
    *out = t->n++;
    return 1;
}

static uint64_t itab_mem(const struct itab *t)
{
    return t->cap * sizeof *t->v + t->blob_cap + t->nslots * sizeof *t->slots;
}

/* ------------------------------------------------------------------------
 * State
 * ------------------------------------------------------------------------ */

int tl_aggr_new(struct tl_aggr **out)
{
    struct tl_aggr *a = calloc(1, sizeof *a);
    *out = NULL;
    if (!a)
        return -ENOMEM;
    a->bands.max = TL_HEAP_BANDS_MAX;
    a->bands.blob_max = TL_HEAP_NAMES_BYTES;
    a->names.max = TL_SPANS_NAMES_MAX;
    a->names.blob_max = (size_t)TL_SPANS_NAMES_MAX * TL_SPANS_NAME_LEN;
    a->stacks.max = TL_PROF_STACKS_MAX;
    a->stacks.blob_max = (size_t)TL_PROF_STACK_IDS_MAX * 4;
    a->other_band = NO_BAND;
    a->other_name = UINT32_MAX;
    a->keys.max = TL_SPANS_KEYS_MAX;
    a->keys.blob_max = (size_t)TL_SPANS_KEYS_MAX * 12;
    if (tl_side_init(&a->cen, sizeof(struct cen_rec)) < 0
        || tl_side_init(&a->hs, sizeof(struct hs_rec)) < 0
        || tl_side_init(&a->spans, sizeof(struct span_rec)) < 0
        || tl_side_init(&a->ticks, sizeof(struct tick_rec)) < 0) {
        tl_aggr_free(a);
        return -ENOMEM;
    }
    *out = a;
    return 0;
}

void tl_aggr_free(struct tl_aggr *a)
{
    if (!a)
        return;
    profile_ccs_free(&a->ccs);
    tl_side_fini(&a->cen);
    tl_side_fini(&a->hs);
    tl_side_fini(&a->spans);
    tl_side_fini(&a->ticks);
    itab_free(&a->bands);
    itab_free(&a->names);
    itab_free(&a->stacks);
    free(a->heads);
    itab_free(&a->keys);
    free(a->open);
    for (unsigned q = 0; q < 257; q++)
        free(a->pq[q].v);
    free(a);
}

/* ------------------------------------------------------------------------
 * Heap censuses
 * ------------------------------------------------------------------------ */

static uint32_t other_band(struct tl_aggr *a)
{
    a->band_refused++;
    if (a->other_band == NO_BAND) {
        /* Kept beyond the bound: one entry more than max. */
        a->bands.max++;
        a->bands.blob_max += 16;
        uint32_t b;
        if (itab_get(&a->bands, "o", 1, "(other)", 7, &b) >= 0)
            a->other_band = b;
    }
    return a->other_band;
}

static int census_sample(struct tl_aggr *a, uint32_t band, uint64_t bytes)
{
    if (band == NO_BAND)
        return 0;
    struct hs_rec r = { .bytes = bytes, .band = band };
    if (tl_side_append(&a->hs, &r) < 0)
        return 0;                   /* counted in hs.lost */
    a->cur.n++;
    return 0;
}

static int on_heap(struct tl_aggr *a, const struct els_event *ev)
{
    struct els_event_data e;
    if (els_event_decode(ev, &e) != 0)
        return 0;
    switch (ev->tag) {
    case ELS_EV_HEAP_PROF_BEGIN:
        a->have_breakdown = true;
        a->breakdown = e.u.heap_prof_begin.breakdown;
        return 0;
    case ELS_EV_HEAP_PROF_COST_CENTRE:
        return profile_ccs_define(&a->ccs, &e) == -ENOMEM ? -ENOMEM : 0;
    case ELS_EV_HEAP_PROF_SAMPLE_BEGIN:
    case ELS_EV_HEAP_BIO_PROF_SAMPLE_BEGIN:
        if (a->in_census)
            a->cen_unfinished++;
        a->in_census = true;
        a->cur = (struct cen_rec){ .t = ev->time, .first = a->hs.n,
                                   .era = (uint32_t)e.u.heap_sample.era };
        return 0;
    case ELS_EV_HEAP_PROF_SAMPLE_STRING: {
        if (!a->in_census || e.u.heap_sample_string.profile != 0)
            return 0;
        char *w = profile_word(e.u.heap_sample_string.label);
        if (!w)
            return -ENOMEM;
        size_t n = strlen(w);
        char key[1 + 512];
        key[0] = 's';
        size_t kn = n < 512 ? n : 512;
        memcpy(key + 1, w, kn);
        uint32_t b;
        int rc = n < 512 ? itab_get(&a->bands, key, 1 + kn, w, n, &b) : -ENOSPC;
        free(w);
        if (rc == -ENOMEM)
            return rc;
        return census_sample(a, rc < 0 ? other_band(a) : b,
                             e.u.heap_sample_string.residency);
    }
    case ELS_EV_HEAP_PROF_SAMPLE_COST_CENTRE: {
        if (!a->in_census || e.u.heap_sample_ccs.profile != 0)
            return 0;
        const struct els_ccs *s = &e.u.heap_sample_ccs.stack;
        uint32_t key[256];
        key[0] = 0x63;              /* 'c' */
        for (size_t i = 0; i < s->depth; i++)
            key[i + 1] = els_ccs_id(s, i);
        char name[64];
        size_t nn;
        uint32_t b;
        int rc;
        if (s->depth == 0) {
            rc = itab_get(&a->bands, key, 4, "MAIN", 4, &b);
        } else {
            /* Numbered in the order first met, as dump --hp numbers. */
            nn = profile_ccs_band(&a->ccs, s, a->stack_no + 1, name, sizeof name);
            rc = itab_get(&a->bands, key, 4 * (1 + s->depth), name, nn, &b);
            if (rc == 1)
                a->stack_no++;
        }
        if (rc == -ENOMEM)
            return rc;
        return census_sample(a, rc < 0 ? other_band(a) : b,
                             e.u.heap_sample_ccs.residency);
    }
    case ELS_EV_HEAP_PROF_SAMPLE_END:
        if (!a->in_census)
            return 0;
        a->in_census = false;
        tl_side_append(&a->cen, &a->cur);   /* a failure: cen.lost */
        return 0;
    default:
        return 0;
    }
}

/* ------------------------------------------------------------------------
 * Spans: Note [Spans in time order]
 * ------------------------------------------------------------------------ */

static bool pend_less(const struct pend *x, const struct pend *y)
{
    return x->t < y->t || (x->t == y->t && x->seq < y->seq);
}

/* The queue whose head is the earliest marker event waiting, or -1. */
static int pend_first(const struct tl_aggr *a)
{
    int best = -1;
    for (unsigned q = 0; q <= a->cap_hi; q++) {
        unsigned k = q == a->cap_hi ? 256 : q;
        const struct pendq *pq = &a->pq[k];
        if (pq->head < pq->n
            && (best < 0 || pend_less(&pq->v[pq->head], &a->pq[best].v[a->pq[best].head])))
            best = (int)k;
    }
    return best;
}

static void pend_pop(struct tl_aggr *a, int q, struct pend *out)
{
    struct pendq *pq = &a->pq[q];
    *out = pq->v[pq->head++];
    if (pq->head == pq->n)
        pq->head = pq->n = 0;
    a->pend_n--;
}

static int pend_push(struct tl_aggr *a, unsigned q, const struct pend *p)
{
    struct pendq *pq = &a->pq[q];
    if (pq->n == pq->cap) {
        if (pq->head > pq->n / 2) {   /* reuse the popped front */
            memmove(pq->v, pq->v + pq->head, (pq->n - pq->head) * sizeof *pq->v);
            pq->n -= pq->head;
            pq->head = 0;
        } else {
            size_t c = pq->cap ? pq->cap * 2 : 256;
            struct pend *v = realloc(pq->v, c * sizeof *v);
            if (!v)
                return -ENOMEM;
            a->pend_mem += (c - pq->cap) * sizeof *v;
            pq->v = v;
            pq->cap = c;
        }
    }
    pq->v[pq->n++] = *p;
    a->pend_n++;
    return 0;
}

static void match(struct tl_aggr *a, const struct pend *p)
{
    uint32_t key[3] = { p->thread, p->name, p->fam }, k;
    int rc = itab_get(&a->keys, key, sizeof key, "", 0, &k);
    if (rc < 0) {                 /* full, or out of memory */
        if (p->end)
            a->unmatched++;
        else
            a->open_refused++;
        return;
    }
    if (k >= a->heads_cap) {
        uint32_t c = a->heads_cap ? a->heads_cap * 2 : 256;
        uint32_t *v = realloc(a->heads, c * sizeof *v);
        if (!v) {
            a->open_refused += !p->end;
            a->unmatched += p->end;
            return;
        }
        memset(v + a->heads_cap, 0, (c - a->heads_cap) * sizeof *v);
        a->heads = v;
        a->heads_cap = c;
    }
    uint32_t *head = &a->heads[k];
    if (!p->end) {
        uint32_t i;
        if (a->open_free) {
            i = a->open_free - 1;
            a->open_free = a->open[i].prev;
        } else {
            if (a->open_n >= TL_SPANS_OPEN_MAX) {
                a->open_refused++;
                return;
            }
            if (a->open_n == a->open_cap) {
                uint32_t c = a->open_cap ? a->open_cap * 2 : 256;
                struct open_ent *v = realloc(a->open, c * sizeof *v);
                if (!v) {
                    a->open_refused++;
                    return;
                }
                a->open = v;
                a->open_cap = c;
            }
            i = a->open_n++;
        }
        a->open[i] = (struct open_ent){ .t = p->t, .prev = *head };
        *head = i + 1;
        a->open_live++;
        return;
    }
    if (!*head) {
        a->unmatched++;
        return;
    }
    uint32_t i = *head - 1;
    struct span_rec r = { .end = p->t, .start = a->open[i].t, .name = p->name };
    *head = a->open[i].prev;
    a->open[i].prev = a->open_free;
    a->open_free = i + 1;
    a->open_live--;
    tl_side_append(&a->spans, &r);  /* a failure: spans.lost */
}

/* Match what no capability can precede any more (or everything). */
static void release(struct tl_aggr *a, bool all)
{
    uint64_t wm = UINT64_MAX;
    bool early = !all && !a->caps_known;
    if (early && a->pend_n < TL_SPANS_PENDING_MAX / 2)
        return;                   /* a cap may not have posted yet */
    if (!all)
        for (unsigned c = 0; c < a->cap_hi; c++)
            if (a->cap_seen[c] && a->cap_last[c] < wm)
                wm = a->cap_last[c];
    while (a->pend_n) {
        int q = pend_first(a);
        if (!all && a->pq[q].v[a->pq[q].head].t > wm)
            break;
        struct pend p;
        pend_pop(a, q, &p);
        match(a, &p);
        a->released_early += early;
    }
}

static int on_marker(struct tl_aggr *a, const struct els_event *ev)
{
    /* Most messages are no span's: "START x"/"STOP x" need 6 bytes. */
    if (ev->tag == ELS_EV_USER_MSG
        && (ev->payload_len < 6 || !ev->payload || ev->payload[0] != 'S'))
        return 0;
    struct els_event_data e;
    if (els_event_decode(ev, &e) != 0)
        return 0;
    const char *s = e.u.text.ptr;
    size_t n = e.u.text.len, nl = 0;
    const char *name = NULL;
    int fam = -1, end = 0;
    static const struct { const char *suf; int fam, end; } sufs[] = {
        { " start", 0, 0 }, { " end", 0, 1 }, { " begin", 1, 0 }, { " stop", 1, 1 },
    };
    if (ev->tag == ELS_EV_USER_MARKER) {
        for (size_t i = 0; i < 4 && fam < 0; i++) {
            size_t k = strlen(sufs[i].suf);
            if (n > k && !memcmp(s + n - k, sufs[i].suf, k))
                name = s, nl = n - k, fam = sufs[i].fam, end = sufs[i].end;
        }
    } else if (n > 6 && !memcmp(s, "START ", 6)) {
        name = s + 6, nl = n - 6, fam = 2;
    } else if (n > 5 && !memcmp(s, "STOP ", 5)) {
        name = s + 5, nl = n - 5, fam = 2, end = 1;
    }
    if (fam < 0)
        return 0;
    if (nl > TL_SPANS_NAME_LEN)
        nl = TL_SPANS_NAME_LEN;
    uint32_t id;
    int rc = itab_get(&a->names, name, nl, "", 0, &id);
    if (rc == -ENOMEM)
        return rc;
    if (rc < 0) {
        a->names_refused++;
        if (a->other_name == UINT32_MAX) {
            a->names.max++;
            a->names.blob_max += 8;
            if (itab_get(&a->names, "(other)", 7, "", 0, &id) < 0)
                return 0;
            a->other_name = id;
        }
        id = a->other_name;
    }
    if (a->pend_n == TL_SPANS_PENDING_MAX) {
        struct pend p;
        pend_pop(a, pend_first(a), &p);
        match(a, &p);
        a->released_early++;
    }
    struct pend p = { .t = ev->time, .seq = a->seq++, .name = id,
                      .fam = (uint8_t)fam, .end = (uint8_t)end,
                      .thread = ev->cap >= 0 && ev->cap < 256 ? a->running[ev->cap] : 0 };
    if (pend_push(a, ev->cap >= 0 && ev->cap < 256 ? (unsigned)ev->cap : 256, &p) < 0)
        return -ENOMEM;
    release(a, false);
    return 0;
}

/* ------------------------------------------------------------------------
 * Cost-centre ticks
 * ------------------------------------------------------------------------ */

static int on_tick(struct tl_aggr *a, const struct els_event *ev)
{
    struct els_event_data e;
    if (els_event_decode(ev, &e) != 0)
        return 0;
    const struct els_ccs *s = &e.u.prof_sample.stack;
    uint32_t key[255], id;
    for (size_t i = 0; i < s->depth; i++)
        key[i] = els_ccs_id(s, i);
    int rc = itab_get(&a->stacks, key, 4 * (size_t)s->depth, "", 0, &id);
    if (rc == -ENOMEM)
        return rc;
    if (rc < 0) {
        id = OTHER_STACK;
        a->ticks_other++;
    }
    struct tick_rec r = { .t = ev->time, .stack = id, .cap = e.u.prof_sample.cap };
    tl_side_append(&a->ticks, &r);      /* a failure: ticks.lost */
    return 0;
}

/* ------------------------------------------------------------------------
 * Feeding
 * ------------------------------------------------------------------------ */

void tl_aggr_cap(struct tl_aggr *a, int cap, uint64_t last, uint32_t running)
{
    if (cap < 0 || cap >= 256)
        return;
    if (!a->cap_seen[cap]) {
        a->cap_seen[cap] = true;
        if ((unsigned)cap >= a->cap_hi)
            a->cap_hi = (unsigned)cap + 1;
    }
    if (last > a->cap_last[cap])
        a->cap_last[cap] = last;
    a->running[cap] = running;
}

int tl_aggr_event(struct tl_aggr *a, const struct els_event *ev)
{
    switch (ev->tag) {
    case ELS_EV_HEAP_PROF_BEGIN: case ELS_EV_HEAP_PROF_COST_CENTRE:
    case ELS_EV_HEAP_PROF_SAMPLE_BEGIN: case ELS_EV_HEAP_BIO_PROF_SAMPLE_BEGIN:
    case ELS_EV_HEAP_PROF_SAMPLE_STRING: case ELS_EV_HEAP_PROF_SAMPLE_COST_CENTRE:
    case ELS_EV_HEAP_PROF_SAMPLE_END:
        return on_heap(a, ev);
    case ELS_EV_USER_MARKER: case ELS_EV_USER_MSG:
        return on_marker(a, ev);
    case ELS_EV_PROF_SAMPLE_COST_CENTRE:
        return on_tick(a, ev);
    case ELS_EV_CAP_CREATE: case ELS_EV_CAP_ENABLE:
    case ELS_EV_CAP_DELETE: case ELS_EV_CAP_DISABLE: {
        /* A cap that exists holds the matching back until it has posted
         * (its first block may come after others' later events); one
         * deleted or disabled posts nothing more. */
        struct els_event_data e;
        if (els_event_decode(ev, &e) != 0 || e.u.cap.cap >= 256)
            return 0;
        unsigned c = e.u.cap.cap;
        a->caps_known = true;
        a->cap_seen[c] = ev->tag == ELS_EV_CAP_CREATE || ev->tag == ELS_EV_CAP_ENABLE;
        if (c >= a->cap_hi)
            a->cap_hi = c + 1;
        if (a->pend_n)
            release(a, false);
        return 0;
    }
    case ELS_EV_BLOCK_MARKER:
        /* A capability's block: the others may have caught up. */
        if (a->pend_n)
            release(a, false);
        return 0;
    default:
        return 0;
    }
}

void tl_aggr_end(struct tl_aggr *a)
{
    release(a, true);
}

void tl_aggr_stats(const struct tl_aggr *a, struct tl_aggr_stats *o)
{
    *o = (struct tl_aggr_stats){
        .mem_bytes = sizeof *a + tl_side_mem(&a->cen) + tl_side_mem(&a->hs)
            + tl_side_mem(&a->spans) + tl_side_mem(&a->ticks)
            + itab_mem(&a->bands) + itab_mem(&a->names) + itab_mem(&a->stacks)
            + itab_mem(&a->keys) + a->heads_cap * sizeof *a->heads
            + a->open_cap * sizeof *a->open + a->pend_mem
            + (uint64_t)a->ccs.n * sizeof *a->ccs.v,
        .disk_bytes = tl_side_disk(&a->cen) + tl_side_disk(&a->hs)
            + tl_side_disk(&a->spans) + tl_side_disk(&a->ticks),
        .censuses = a->cen.n, .band_samples = a->hs.n, .bands = a->bands.n,
        .spans = a->spans.n, .span_names = a->names.n,
        .ticks = a->ticks.n, .stacks = a->stacks.n,
    };
    for (uint32_t i = 0; i < a->ccs.n; i++)
        if (a->ccs.v[i].defined)
            o->mem_bytes += a->ccs.v[i].len[0] + a->ccs.v[i].len[1]
                + a->ccs.v[i].len[2] + 3;
}

const char *const tl_aggr_rts_names[6] = {
    "", "GC", "IDLE", "SYSTEM", "OVERHEAD_of", "DONT_CARE",
};

/* As the RTS's ignoreCCS() and profile_prof.c's prof_ignored(). */
int tl_aggr_rts_kind(const struct tl_aggr *a, uint32_t stack)
{
    static const char *const module[6] = {
        "", "GC", "IDLE", "SYSTEM", "PROFILING", "MAIN",
    };
    if (stack >= a->stacks.n || a->stacks.v[stack].len != 4)
        return 0;
    uint32_t id;
    memcpy(&id, a->stacks.blob + a->stacks.v[stack].off, 4);
    const struct profile_cc *c = profile_ccs_get(&a->ccs, id);
    if (!c)
        return 0;
    for (int k = 1; k < 6; k++)
        if (!strcmp(c->label, tl_aggr_rts_names[k]) && !strcmp(c->module, module[k]))
            return k;
    return 0;
}
