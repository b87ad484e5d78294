/*
 * release.c: the release policy, on the writer thread with the lock held.
 * Decides when a unit leaves the queue and how that is counted: sent (some
 * consumer received it in full), a consumer's loss, or dropped by cause.
 * Under policy=drop it keeps room for the producers by freeing the oldest
 * units and cutting loose the consumers still in them; under policy=block
 * it never frees a unit a trusted consumer still needs, so producers wait
 * (in lib/writer/producer.c), and serves the untrusted ones as under drop.
 * See Note [What is dropped, and who is told] and Note [Trusted
 * consumers].
 *
 * Not this file's job: sending (consumer.c), waiting for room (producer
 * side), the queue's mechanics (lib/queue/unitq.c).
 */
#include <stdbool.h>
#include <stdint.h>

#include "writer/writer_impl.h"
#include "eventlog-sink.h"
#include "format/evformat.h"
#include "queue/unitq.h"
#include "sinks/spec.h"

/* See writer_impl.h and Note [How long producers wait]. */
bool elsi_room_deadline(struct els_writer *w, enum elsi_unit_kind kind,
                        enum els_write_reason reason, uint64_t now,
                        uint64_t *deadline_ms, enum els_drop_cause *cause)
{
    bool block = w->spec.policy == ELSI_POLICY_BLOCK;
    bool is_end = kind == ELSI_UNIT_KIND_END;
    if (is_end || reason == ELS_REASON_STOP)
        elsi_stop_clock(w, now);
    if (is_end) {
        *deadline_ms = w->life.stop_deadline_ms;
        *cause = ELS_DROP_STOPPED;
        return true;
    }
    if (!block)
        return false;
    uint64_t d = w->spec.block_ms < 0 ? UINT64_MAX
                                      : now + (uint64_t)w->spec.block_ms;
    *cause = ELS_DROP_BLOCK_TIMEOUT;
    if (reason == ELS_REASON_STOP && w->life.stop_deadline_ms <= d) {
        d = w->life.stop_deadline_ms;
        *cause = ELS_DROP_STOPPED;
    } else if (reason == ELS_REASON_FLUSH && now + w->spec.linger_ms < d) {
        d = now + w->spec.linger_ms;
    }
    *deadline_ms = d;
    return true;
}

void elsi_stop_clock(struct els_writer *w, uint64_t now)
{
    if (!w->life.stop_clock) {
        w->life.stop_clock = true;
        w->life.stop_deadline_ms = now + w->spec.linger_ms;
    }
}

uint64_t elsi_pool_room(struct els_writer *w)
{
    return elsi_unitq_spare_room(&w->queue.uq);
}

/* Release the queue's oldest unit; a handed-over buffer goes back to the
 * pool (Note [Units handed over]).  Lock held. */
static void release_ring_oldest(struct els_writer *w)
{
    uint8_t *ext;
    size_t ext_size;
    if (elsi_unitq_release(&w->queue.uq, &ext, &ext_size))
        elsi_pool_give(&w->queue.pool, ext, ext_size, elsi_pool_room(w));
}

void elsi_release_oldest(struct els_writer *w, enum els_drop_cause cause)
{
    struct elsi_unit *u = elsi_unitq_unit(&w->queue.uq, w->queue.uq.tail_seq);
    uint64_t len = u->len;
    if (u->kind == ELSI_UNIT_KIND_JOIN) {
        /* Not part of the stream: Note [Late joiners]. */
        release_ring_oldest(w);
        return;
    }
    /* A flight recorder's units were kept as promised: Note [Flight
     * recorder]. */
    if (w->ops->style == ELS_SINK_RECORD)
        u->delivered = true;
    if (u->delivered) {
        w->stats.st.units_sent++;
        w->stats.st.bytes_sent += len;
        if (u->failed || u->skipped) {  /* sent, but some consumer missed it */
            w->stats.st.consumer_lost_units++;
            w->stats.st.consumer_lost_bytes += len;
        }
    } else if (cause != ELS_DROP_STOPPED) {
        /* A unit a consumer failed on keeps that cause; one consumers were
         * cut loose past is a slow consumer's. */
        if (u->failed)
            cause = ELS_DROP_SINK_ERROR;
        else if (u->skipped)
            cause = ELS_DROP_SLOW_CONSUMER;
    }
    if (!u->delivered) {
        w->stats.st.units_dropped[cause]++;
        w->stats.st.bytes_dropped[cause] += len;
    }
    w->stats.st.units_queued--;
    w->stats.st.bytes_queued -= len;
    w->queue.released_units++;
    w->queue.released_bytes += len;
    release_ring_oldest(w);
}

/*
 * Release every unit no consumer needs.  When the queue could not take
 * another unit as large as the largest seen, free the oldest units down
 * to half the queue, cutting loose the consumers still in them: every
 * consumer under policy=drop, only untrusted ones under policy=block
 * (never past a trusted consumer).  Returns whether anything was
 * released.
 */
bool elsi_release_units(struct els_writer *w)
{
    struct elsi_unitq *r = &w->queue.uq;
    uint64_t before = r->tail_seq;
    /* A flight recorder keeps everything until its producers need the
     * room, and never what a dump still has to write (Note [Flight
     * recorder]). */
    if (w->ops->style == ELS_SINK_RECORD)
        return false;

    uint64_t min_seq = r->committed_seq, min_trusted = r->committed_seq;
    bool have_consumers = false;
    for (struct elsi_consumer *c = w->cons.list; c != NULL; c = c->next) {
        if (c->dead)
            continue;
        have_consumers = true;
        if (c->seq < min_seq)
            min_seq = c->seq;
        /* Consumers awaiting a join snapshot never hold producers back:
         * Note [Late joiners]. */
        if (c->trusted && !c->awaiting_snapshot && c->seq < min_trusted)
            min_trusted = c->seq;
    }
    if (!have_consumers)
        min_seq = r->tail_seq;  /* keep data for a late joiner */
    while (r->tail_seq < min_seq)
        elsi_release_oldest(w, ELS_DROP_NO_CONSUMER);

    /* Headroom: with two of the largest units free after this pass, a
     * producer can post once more before the next pass without finding
     * the queue full because of a consumer that is about to be cut.  Rings
     * under four units big cannot afford that and keep room for one. */
    uint64_t max = w->queue.max_unit_seen;
    uint64_t headroom = r->cap >= 4 * max ? 2 * max : max;
    /* Once units are handed over, what runs out is memory: the byte
     * byte buffer's touched bytes stay, so the room is what they leave, and only
     * the buffers free any of it (Note [The queue's memory]).  Where they
     * leave less than the headroom, the units retained are measured. */
    bool by_buffers = r->ext_seen && r->touched + headroom <= r->cap;
    uint64_t cap = by_buffers ? r->cap - r->touched : r->cap;
    uint64_t used = by_buffers ? r->ext_bytes : elsi_unitq_bytes(r);
    bool pressure = used + headroom > cap;
    bool block = w->spec.policy == ELSI_POLICY_BLOCK;
    /* Under block with no consumer at all, producers wait for one. */
    if (pressure && (!block || have_consumers)) {
        /* Free the oldest units until at most half the room (or, for a
         * small queue, all but the headroom) is in use. */
        uint64_t target = cap / 2 < cap - headroom ? cap / 2 : cap - headroom;
        uint64_t limit = block ? min_trusted : r->committed_seq;
        uint64_t to = r->tail_seq;
        while (to < limit && used > target) {
            const struct elsi_unit *u = elsi_unitq_unit(r, to);
            used -= by_buffers ? (u->ext != NULL ? u->ext_size : 0)
                               : elsi_unit_room(u);
            to++;
        }
        for (struct elsi_consumer *c = w->cons.list; c != NULL; c = c->next)
            if (!c->dead && c->seq < to)
                elsi_consumer_cut(w, c, to);
        while (r->tail_seq < to)
            elsi_release_oldest(w, have_consumers ? ELS_DROP_SLOW_CONSUMER
                                                  : ELS_DROP_NO_CONSUMER);
    }
    return r->tail_seq != before;
}
