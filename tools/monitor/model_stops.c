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
 * (mon_tevs_push()) until every capability's blocks have passed their
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

/* The earliest waiting run or stop, in time order: pair it. */
static void mon_tevs_pop(struct mon_model *m)
{
    struct mon_tev e = m->stops.tevs[0], *h = m->stops.tevs;
    uint32_t n = --m->stops.ntevs, i = 0;
    if (n > 0) {
        struct mon_tev last = h[n];
        for (;;) {
            uint32_t c = 2 * i + 1;
            if (c >= n)
                break;
            if (c + 1 < n && mon_tev_before(&h[c + 1], &h[c]))
                c++;
            if (!mon_tev_before(&h[c], &last))
                break;
            h[i] = h[c];
            i = c;
        }
        h[i] = last;
    }
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

/* Pair the runs and stops whose turn came: all of them with all (the
 * stream ended), else those no capability can still precede. */
void mon_tevs_release(struct mon_model *m, bool all)
{
    uint64_t w = all ? UINT64_MAX : mon_watermark(m);
    while (m->stops.ntevs > 0 && m->stops.tevs[0].t <= w)
        mon_tevs_pop(m);
}

static void mon_tevs_push(struct mon_model *m, uint32_t thread, uint8_t reason,
                          uint64_t t)
{
    if (thread == 0)
        return;
    if (m->stops.tevs == NULL) {
        m->stops.tevs = malloc(MON_REORDER * sizeof *m->stops.tevs);
        if (m->stops.tevs == NULL)
            return;
        m->mem += MON_REORDER * sizeof *m->stops.tevs;
    }
    if (m->stops.ntevs == MON_REORDER) {
        m->stops.tevs_early++;
        mon_tevs_pop(m);
    }
    struct mon_tev e = { .t = t, .seq = m->stops.tev_seq++, .thread = thread,
                         .reason = reason };
    uint32_t i = m->stops.ntevs++;
    while (i > 0 && mon_tev_before(&e, &m->stops.tevs[(i - 1) / 2])) {
        m->stops.tevs[i] = m->stops.tevs[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    m->stops.tevs[i] = e;
    mon_tevs_release(m, false);
}

void mon_thread_stop(struct mon_model *m, uint32_t id, uint16_t status,
                            uint64_t t)
{
    uint8_t r = (uint8_t)(status < MON_STOPS ? status : MON_STOPS - 1);
    m->stops.n[r]++;
    if (status == 5)
        mon_thread_del(m, id);
    else
        mon_thread_set(m, id, status <= 3 ? TH_RUNNABLE : TH_BLOCKED);
    mon_tevs_push(m, id, r, t);
}

void mon_thread_run(struct mon_model *m, uint32_t id, uint64_t t)
{
    mon_thread_set(m, id, TH_RUNNING);
    mon_tevs_push(m, id, MON_STOPS, t);
}
