/*
 * release.c: the release policy, on the writer thread with the lock held.
 * Decides when a unit leaves the ring and how that is counted: sent (some
 * consumer received it in full), a consumer's loss, or dropped by cause.
 * Under policy=drop it keeps room for the producers by freeing the oldest
 * units and cutting loose the consumers still in them; under policy=block
 * it never frees a unit a consumer still needs, so producers wait (in
 * lib/queue/producer.c).  See Note [What is dropped, and who is told].
 *
 * Not this file's job: sending (consumer.c), waiting for room (producer
 * side), the ring's mechanics (ring.c).
 */
#include <stdbool.h>
#include <stdint.h>

#include "deliver/writer_impl.h"
#include "eventlog-sink.h"
#include "queue/ring.h"
#include "sinks/spec.h"

void elsi_release_oldest(struct els_writer *w, enum els_drop_cause cause)
{
    struct elsi_unit *u = elsi_ring_unit(&w->ring, w->ring.tail_seq);
    uint64_t len = u->len;
    if (u->delivered) {
        w->st.units_sent++;
        w->st.bytes_sent += len;
        if (u->failed) {    /* sent, but some consumer missed it */
            w->st.consumer_lost_units++;
            w->st.consumer_lost_bytes += len;
        }
    } else {
        /* A unit a consumer failed on keeps that cause. */
        if (cause != ELS_DROP_STOPPED && u->failed)
            cause = ELS_DROP_SINK_ERROR;
        w->st.units_dropped[cause]++;
        w->st.bytes_dropped[cause] += len;
    }
    w->st.units_queued--;
    w->st.bytes_queued -= len;
    w->released_units++;
    w->released_bytes += len;
    elsi_ring_release(&w->ring);
}

/*
 * Release every unit no consumer needs; under policy=drop, when the ring
 * could not take another unit as large as the largest seen, free the
 * oldest units down to half the ring, cutting loose the consumers still
 * in them.  Returns whether anything was released.
 */
bool elsi_release_units(struct els_writer *w)
{
    struct elsi_ring *r = &w->ring;
    uint64_t before = r->tail_seq;

    uint64_t min_seq = r->committed_seq;
    for (struct consumer *c = w->consumers; c != NULL; c = c->next)
        if (!c->dead && c->seq < min_seq)
            min_seq = c->seq;
    bool have_consumers = w->consumers != NULL;
    if (!have_consumers)
        min_seq = r->tail_seq;  /* keep data for a late joiner */
    while (r->tail_seq < min_seq)
        elsi_release_oldest(w, ELS_DROP_NO_CONSUMER);

    /* Headroom: with two of the largest units free after this pass, a
     * producer can post once more before the next pass without finding
     * the ring full because of a consumer that is about to be cut.  Rings
     * under four units big cannot afford that and keep room for one. */
    uint64_t max = w->max_unit_seen;
    uint64_t headroom = r->cap >= 4 * max ? 2 * max : max;
    bool pressure = elsi_ring_bytes(r) + headroom > r->cap;
    if (pressure && w->spec.policy == ELSI_POLICY_DROP) {
        /* Free the oldest units until at most half the ring (or, for a
         * small ring, all but the headroom) is in use. */
        uint64_t target = r->cap / 2 < r->cap - headroom ? r->cap / 2
                                                         : r->cap - headroom;
        uint64_t to = r->tail_seq, used = elsi_ring_bytes(r);
        while (to < r->committed_seq && used > target) {
            used -= elsi_ring_unit(r, to)->len;
            to++;
        }
        for (struct consumer *c = w->consumers; c != NULL; c = c->next)
            if (!c->dead && c->seq < to)
                elsi_consumer_cut(w, c, to);
        while (r->tail_seq < to)
            elsi_release_oldest(w, have_consumers ? ELS_DROP_SINK_ERROR
                                             : ELS_DROP_NO_CONSUMER);
    }
    return r->tail_seq != before;
}
