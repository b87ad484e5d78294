/*
 * model_stops.c: thread stops by status and the time from each stop to
 * the thread's next run (the model's stops part, model_impl.h), paired
 * in time order across capabilities' blocks that arrive in any order
 * (Note [Stopped time]).  Not its job: which threads are alive and in
 * what state (model_tables.c), or the other events (model.c).
 */
#include <stdlib.h>

#include "model_impl.h"

/* ------------------------------------------------------------------------
 * Thread stops
 * ------------------------------------------------------------------------ */

/* Note [Stopped time]
 * ~~~~~~~~~~~~~~~~~~~
 * Each thread stop counts under its status (STOP_THREAD: heap overflow,
 * yielding, finished, a foreign call, or blocked and on what: GHC 9.0.2
 * posts 6 + the TSO's why_blocked, rts/Schedule.c), and the time from
 * the stop to the thread's next run counts under the same status: how
 * long a reason kept threads off a capability, waiting to be woken or
 * to be scheduled again.
 *
 * "Next" is in time, and a thread's stop and its next run may lie in
 * different capabilities' blocks (it migrated, or came back from a safe
 * foreign call on another capability), which arrive in any order: a
 * file written at exit holds all of capability 0's events before any of
 * capability 1's.  So runs and stops wait in a heap ordered by time
 * (mon_tevs_push(), Note [Waiting queues]) until every capability's blocks have passed their
 * time: each capability's events are in order, so once all of them
 * posted something later (the least of their latest times), nothing
 * earlier can still come.  Then they are paired in time order through
 * the stop table (a thread's stop waits there for its run).  A
 * capability's latest time is its last event's: the RTS posts GC_END
 * with the time its statistics took a little before (stat_endGC()), so
 * that one may be older than the event before it, which only holds the
 * others back a little longer.  A
 * capability that never posts holds them back until the stream ends or
 * MON_REORDER wait (the earliest then goes on: tevs_early counts them,
 * and their pairing may be off).  A capability's first block may be
 * older than others' (it had nothing to write yet), which is why a
 * capability seen only in CAP_CREATE holds them back too, and why
 * nothing goes before the first CAP_CREATE has told which capabilities
 * there are: GHC posts them at start-up into the buffer of events
 * without a capability, which a stock RTS writes only when it fills or
 * at exit, after blocks of every capability (a -N2 file began with
 * capability 0's block at 156 ms, capability 1's from 80 ms came
 * later).
 */

static bool mon_tev_before(const struct mon_tev *a, const struct mon_tev *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

/* The least of the latest event times of the capabilities seen. */
static uint64_t mon_watermark(const struct mon_model *m)
{
    if (!m->caps.known)
        return 0;
    uint64_t w = UINT64_MAX;
    for (unsigned i = 0; i < m->caps.n; i++)
        if (m->caps.at[i].seen && m->caps.at[i].last < w)
            w = m->caps.at[i].last;
    return w;
}

/* Note [Waiting queues]
 * ~~~~~~~~~~~~~~~~~~~~~
 * What waits is a capability's block or two of runs and stops: tens of
 * thousands each.  They come in time order per capability (its events
 * are), so each source keeps its own queue, appended to in O(1), and
 * the earliest of all is the least of the queues' heads: the few
 * capabilities' heads are looked at, where a heap of them all cost a
 * climb through megabytes of entries per pair (half of serve's time on
 * a 300-thread file).  The order is the heap's, (t, seq): an entry older
 * than its queue's last (a time that went back) moves back to its place,
 * at most MON_TEV_BACK places (beyond, it stays there, counted in
 * tevs_early), so that a stream whose times run backwards cannot make
 * each event walk a queue.
 *
 * The queues are lists of MON_TEV_CHUNK entries from one bounded set of
 * chunks, so a busy capability's queue can take what an idle one gave
 * back; MON_TEV_CHUNKS covers MON_REORDER entries and the part-filled
 * ends of every queue, so a chunk is always there while fewer than
 * MON_REORDER wait.  At MON_REORDER, the earliest of all goes on early
 * (tevs_early).
 *
 * MON_REORDER covers two of a capability's blocks of runs and stops
 * (GHC's 2 MiB buffer holds about 120,000 of them): with -N2, one
 * capability's full block waits for the other's, written later.
 */

static struct mon_tev *mon_tevq_head(const struct mon_tevq *q)
{
    return q->first != NULL ? &q->first->at[q->first->lo] : NULL;
}

/* The source whose head is the earliest of all, or -1 (none waits);
 * *next: the earliest head among the others, or NULL. */
static int mon_tevs_first(struct mon_model *m, const struct mon_tev **next)
{
    int best = -1;
    const struct mon_tev *bh = NULL, *second = NULL;
    for (unsigned k = 0; k < m->stops.nactive; k++) {
        const struct mon_tev *h = mon_tevq_head(&m->stops.tevq[m->stops.active[k]]);
        if (h == NULL)
            continue;
        if (bh == NULL || mon_tev_before(h, bh)) {
            second = bh;
            bh = h;
            best = m->stops.active[k];
        } else if (second == NULL || mon_tev_before(h, second)) {
            second = h;
        }
    }
    *next = second;
    return best;
}

/* Pair the head of source src: the earliest waiting run or stop. */
static void mon_tevs_pop(struct mon_model *m, int src)
{
    struct mon_tevq *q = &m->stops.tevq[src];
    struct mon_tevchunk *c = q->first;
    struct mon_tev e = c->at[c->lo++];
    if (c->lo == c->hi) {               /* emptied: spare */
        q->first = c->next;
        if (q->first != NULL)
            q->first->prev = NULL;
        else
            q->last = NULL;
        c->next = m->stops.spare;
        m->stops.spare = c;
    }
    m->stops.ntevs--;
    if (e.reason == MON_STOPS) {
        struct mon_thread *s = mon_tid_get(m, &m->stops.stopped, e.thread, false);
        if (s != NULL) {
            uint64_t t = *mon_tid_time(&m->stops.stopped, s);
            if (e.t >= t) {
                m->stops.ns[s->state] += e.t - t;
                m->stops.paired[s->state]++;
            }
            mon_tid_del(m, &m->stops.stopped, e.thread);
        }
    } else if (e.reason != 5) {         /* a finished thread runs no more */
        struct mon_thread *s = mon_tid_get(m, &m->stops.stopped, e.thread, true);
        if (s == NULL) {
            m->stops.untracked++;
            return;
        }
        s->state = e.reason;
        *mon_tid_time(&m->stops.stopped, s) = e.t;
    }
}

/* Pair the runs and stops no capability can precede any more: those up
 * to w.  A source's head goes while it is before every other head. */
static void mon_tevs_release_to(struct mon_model *m, uint64_t w)
{
    m->stops.released_to = w;
    while (m->stops.ntevs > 0 && w > 0) {
        const struct mon_tev *next;
        int src = mon_tevs_first(m, &next);
        const struct mon_tevq *q = &m->stops.tevq[src];
        const struct mon_tev *h = mon_tevq_head(q);
        if (h->t > w)
            return;
        do
            mon_tevs_pop(m, src);
        while ((h = mon_tevq_head(q)) != NULL && h->t <= w &&
               (next == NULL || mon_tev_before(h, next)));
    }
}

void mon_tevs_release(struct mon_model *m, bool all)
{
    mon_tevs_release_to(m, all ? UINT64_MAX : mon_watermark(m));
}

/* The earliest of all goes on before its time (no room to wait). */
static void mon_tevs_early(struct mon_model *m)
{
    const struct mon_tev *next;
    m->stops.tevs_early++;
    mon_tevs_pop(m, mon_tevs_first(m, &next));
}

/* A free slot at the end of source src's queue; NULL: out of memory. */
static struct mon_tev *mon_tevq_slot(struct mon_model *m, unsigned src)
{
    struct mon_tevq *q = &m->stops.tevq[src];
    struct mon_tevchunk *c = q->last;
    if (c == NULL || c->hi == MON_TEV_CHUNK) {
        if ((c = m->stops.spare) != NULL) {
            m->stops.spare = c->next;
        } else {
            if (m->stops.nchunks == MON_TEV_CHUNKS ||
                (c = malloc(sizeof *c)) == NULL)
                return NULL;
            m->stops.nchunks++;
            m->mem += sizeof *c;
        }
        c->lo = c->hi = 0;
        c->next = NULL;
        c->prev = q->last;
        if (q->last != NULL)
            q->last->next = c;
        else
            q->first = c;
        q->last = c;
        if (!q->listed) {
            q->listed = true;
            m->stops.active[m->stops.nactive++] = (uint16_t)src;
        }
    }
    return &c->at[c->hi++];
}

/* A run (reason MON_STOPS) or a stop of thread at t, from capability c
 * (NULL: none), waits for its turn. */
static void mon_tevs_push(struct mon_model *m, const struct mon_cap *c,
                          uint32_t thread, uint8_t reason, uint64_t t)
{
    if (thread == 0)
        return;
    if (m->stops.ntevs == MON_REORDER)
        mon_tevs_early(m);
    unsigned src = c != NULL ? (unsigned)(c - m->caps.at) : MON_MAX_CAPS;
    struct mon_tev *slot = mon_tevq_slot(m, src);
    if (slot == NULL) {
        m->stops.untracked++;
        return;
    }
    *slot = (struct mon_tev){ .t = t, .seq = m->stops.tev_seq++,
                              .thread = thread, .reason = reason };
    m->stops.ntevs++;
    /* Back to its place: swap with the one before while older. */
    struct mon_tevchunk *ch = m->stops.tevq[src].last;
    uint32_t i = ch->hi - 1;
    for (unsigned back = 0;; back++) {
        struct mon_tevchunk *pc = ch;
        uint32_t pi = i;
        if (pi > pc->lo) {
            pi--;
        } else if ((pc = pc->prev) != NULL) {
            pi = pc->hi - 1;
        } else {
            break;
        }
        if (!mon_tev_before(&ch->at[i], &pc->at[pi]))
            break;
        if (back == MON_TEV_BACK) {
            m->stops.tevs_early++;
            break;
        }
        struct mon_tev tmp = ch->at[i];
        ch->at[i] = pc->at[pi];
        pc->at[pi] = tmp;
        ch = pc;
        i = pi;
    }
    /* After a release to w every head is later than w: with the same w,
     * only this one can be due. */
    uint64_t w = mon_watermark(m);
    if (w != m->stops.released_to || t <= w)
        mon_tevs_release_to(m, w);
}

void mon_tevs_free(struct mon_model *m)
{
    for (unsigned k = 0; k < m->stops.nactive; k++) {
        struct mon_tevchunk *c = m->stops.tevq[m->stops.active[k]].first;
        while (c != NULL) {
            struct mon_tevchunk *next = c->next;
            free(c);
            c = next;
        }
    }
    while (m->stops.spare != NULL) {
        struct mon_tevchunk *next = m->stops.spare->next;
        free(m->stops.spare);
        m->stops.spare = next;
    }
}

void mon_thread_stop(struct mon_model *m, const struct mon_cap *c, uint32_t id,
                     uint16_t status, uint64_t t)
{
    uint8_t r = (uint8_t)(status < MON_STOPS ? status : MON_STOPS - 1);
    m->stops.n[r]++;
    if (status == 5)
        mon_thread_del(m, id);
    else
        mon_thread_set(m, id, status <= 3 ? TH_RUNNABLE : TH_BLOCKED);
    mon_tevs_push(m, c, id, r, t);
}

void mon_thread_run(struct mon_model *m, const struct mon_cap *c, uint32_t id,
                    uint64_t t)
{
    mon_thread_set(m, id, TH_RUNNING);
    mon_tevs_push(m, c, id, MON_STOPS, t);
}
