/*
 * producer.c: the producer side of the writer, what posting threads (the
 * RTS's capabilities) call.  els_writer_write() copies a unit into the
 * queue and returns; its only system call is one byte to the writer
 * thread's wake-up pipe when that thread sleeps.  els_writer_flush() asks
 * the writer thread to push out what is queued.  Units lost at the door
 * (no room, too big, stopping, a forked child) are counted here by cause
 * and remembered as a gap to announce to the consumers.
 *
 * Not this file's job: the queue's own bookkeeping (lib/queue/unitq.c),
 * taking units out and delivering them (loop.c, outgoing.c), what is released
 * when (release.c).  Who may touch what: Note [Queue locking] in
 * lib/writer/writer_impl.h.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "writer/writer_impl.h"
#include "eventlog-sink.h"
#include "format/evformat.h"
#include "base/log.h"
#include "queue/unitq.h"
#include "sinks/spec.h"

/* Count a unit lost at the door and remember the gap for the consumers.
 * Lock held. */
static void drop_at_door(struct els_writer *w, size_t len, uint16_t cap,
                         enum els_drop_cause cause)
{
    w->stats.st.units_accepted++;
    w->stats.st.bytes_accepted += len;
    w->stats.st.units_dropped[cause]++;
    w->stats.st.bytes_dropped[cause] += len;
    if (cap < ELS_MAX_CAPS) {
        w->stats.caps[cap].units_accepted++;
        w->stats.caps[cap].bytes_accepted += len;
        w->stats.caps[cap].units_dropped++;
        w->stats.caps[cap].bytes_dropped += len;
        w->queue.gap_caps |= (uint64_t)1 << cap;
    } else if (cap == ELSI_CAP_GLOBAL) {
        w->queue.gap_global = true;
    }
    w->queue.gap_units++;
    w->queue.gap_bytes += len;
    w->queue.gap_cause = (uint8_t)cause;
}

/* A flight recorder makes room by forgetting its oldest unit: Note
 * [Flight recorder].  Lock held; false if that is not possible now. */
static bool recorder_evict(struct els_writer *w)
{
    if (w->ops->style != ELS_SINK_RECORD ||
        w->queue.uq.tail_seq >= w->queue.uq.committed_seq)
        return false;
    /* A dump reads the queue without the lock: only what it has written
     * may go. */
    if (w->rec.dump_active &&
        w->queue.uq.tail_seq >= atomic_load_explicit(&w->rec.dump_floor, memory_order_acquire))
        return false;
    /* Nor the unit the dump-on= evaluator is reading (Note [Triggered
     * dumps]). */
    if (w->rec.eval_active && w->queue.uq.tail_seq >= w->rec.eval_seq)
        return false;
    elsi_release_oldest(w, ELS_DROP_NO_CONSUMER);
    return true;
}

static int cache_header(struct els_writer *w, const void *unit, size_t len)
{
    if (w->queue.header != NULL) {
        /* A second header in one writer means the RTS restarted logging
         * without stopping this writer: consumers already have a header,
         * and a second one would corrupt their stream. */
        elsi_log(ELS_LOG_WARN, "ignoring a second eventlog header (%zu bytes)", len);
        return 1;
    }
    uint8_t *copy = malloc(len);
    if (copy == NULL)
        return ELS_ENOMEM;
    memcpy(copy, unit, len);
    w->queue.header = copy;
    w->queue.header_len = len;
    w->stats.st.header_bytes = len;
    return 0;
}

/* Copy a unit into the space reserved for it, with the lock released: the
 * only access to w outside the lock while a producer is in flight. */
static void copy_in(const struct iovec iov[2], const void *unit)
{
    memcpy(iov[0].iov_base, unit, iov[0].iov_len);
    if (iov[1].iov_len)
        memcpy(iov[1].iov_base, (const uint8_t *)unit + iov[0].iov_len,
               iov[1].iov_len);
}

int els_writer_write(struct els_writer *w, const void *unit, size_t len)
{
    return els_writer_write_reason(w, unit, len, ELS_REASON_UNKNOWN);
}

/* Leave els_writer_write() with the lock held: wake the writer thread if
 * asked, stop counting as in flight, unlock.  Nothing of w is touched
 * after this (Note [Producers in flight]). */
static int producer_leave(struct els_writer *w, bool wake, int result)
{
    if (wake)
        elsi_writer_send_wake(w);
    if (--w->life.producers == 0 && w->life.stopping)
        pthread_cond_broadcast(&w->life.producers_left);
    pthread_mutex_unlock(&w->lock);
    return result;
}

/*
 * Note [Units handed over]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * Copying a unit into the queue is most of what a producer pays for a full
 * 2 MiB buffer.  els_writer_hand_over() lets the producer give the buffer
 * itself instead: the queue retains it as the unit's bytes (its whole size
 * counted against buffer=, like bytes in the queue) and the producer gets
 * a spare buffer of the same size to fill next, from the pool when one is
 * kept, else a new one malloc'd before the producer queues (never under
 * the lock).  When the unit is released (every consumer has it, or a
 * policy let it go), its buffer goes back to the pool (release.c), which
 * keeps spares while they fit in what buffer= has left: a producer that
 * runs ahead of its consumer then finds a spare rather than paying for a
 * fresh buffer's malloc and page faults.  The byte buffer's touched bytes,
 * the buffers retained and the spares stay within buffer= together (Note
 * [The queue's memory] in unitq.h): a buffer that does not fit beside them
 * is copied if its bytes fit where the byte buffer has been already, and
 * spares that alone keep a copy out are freed.
 *
 * Why it is safe: the buffer moves whole, under the lock, in the same
 * critical section that reserves and commits the unit, so its bytes are
 * complete before any reader can see it; from then on only readers touch
 * it, without the lock, under exactly the rules of queued bytes (Note
 * [Queue locking]): nothing is released while a consumer, a dump or the
 * dump-on= evaluator is inside it, so a buffer is never handed out again
 * while a sink reads it.  The producer never touches it after the call.
 *
 * What is handed over: units of at least half their buffer (in practice
 * the buffers that filled up), when buffer= (or a recorder's size=)
 * holds at least eight such buffers.  A smaller unit (a flush, a stop) is
 * copied as before: holding a 2 MiB buffer for a few hundred bytes would
 * fill buffer= with empty space; so is every unit of a smaller queue, which
 * would keep too few units (a recorder's window would shrink to a few
 * buffers, its snapshots with it).  The header is always copied (it is kept
 * apart for ever).  Room, policies, waiting and every loss count are the
 * same for both ways in: a unit dropped for want of room stays in the
 * producer's buffer, which the producer keeps.
 *
 * What the bound costs the producer: taking a spare and retaining the
 * buffer read the spares' count and size beside the queue's own fields (a
 * few loads, under the lock it already takes); no call is added to that
 * path.  Only slow paths free memory: a new buffer size (the old spares,
 * with the lock released, beside the malloc of a fresh spare that path
 * already made) and spares shed for a copy (under the lock, as a spare
 * given back is when a unit is dropped).
 */

/* A spare buffer of size bytes for a producer handing one over: from
 * the pool, else malloc'd with the lock released (the producer is in
 * flight, so the writer stays).  A size the pool does not keep is the
 * RTS's new buffer size: the spares of the old one are freed then, with
 * the lock released too (Note [The queue's memory] in unitq.h).  NULL if
 * none could be had.  Lock held. */
static uint8_t *producer_spare(struct els_writer *w, size_t size)
{
    uint8_t *spare = elsi_pool_take(&w->queue.pool, size);
    if (spare != NULL)
        return spare;
    uint8_t *old[ELSI_POOL_KEEP];
    unsigned n_old = elsi_pool_resize(&w->queue.pool, size, old);
    pthread_mutex_unlock(&w->lock);
    for (unsigned i = 0; i < n_old; i++)
        free(old[i]);
    spare = malloc(size);
    pthread_mutex_lock(&w->lock);
    if (spare != NULL)
        w->queue.pool.allocated++;
    return spare;
}

/* Reserve room to copy a unit of len bytes in.  Spares are let go when
 * only they stand in the way: they are memory kept in case, and a unit
 * is the stream (Note [The queue's memory]).  As elsi_unitq_reserve().
 * Lock held. */
static int queue_reserve_copy(struct els_writer *w, size_t len,
                              const struct elsi_unit *meta, uint64_t *seq,
                              struct iovec iov[2])
{
    struct elsi_unitq *uq = &w->queue.uq;
    int r = elsi_unitq_reserve(uq, len, meta, seq, iov);
    if (r != -ENOBUFS || w->queue.pool.n == 0 ||
        !elsi_unitq_has_room_without_spares(uq, len))
        return r;
    while (w->queue.pool.n > 0 && !elsi_unitq_has_room(uq, len))
        free(elsi_pool_take(&w->queue.pool, w->queue.pool.size));
    return elsi_unitq_reserve(uq, len, meta, seq, iov);
}

/* One unit on its way in: what producer_put()'s steps share. */
struct put {
    const void *unit;
    size_t len;
    struct elsi_unit_info info;
    /* Handed over (Note [Units handed over]): the size of the unit's
     * buffer, and the spare the producer gets for it (NULL: copied). */
    size_t take_size;
    uint8_t *spare;
    size_t need;                /* the room it takes */
    struct elsi_unit meta;
    uint64_t seq;
    struct iovec iov[2];        /* where its copy goes */
    /* How long it may wait for room: Note [How long producers wait]. */
    bool may_wait;
    uint64_t deadline_ms;
    struct timespec deadline;
    enum els_drop_cause timeout_cause;
};

/* Drop p at the door for cause, give its spare back and leave (waking
 * the writer thread if asked).  Returns 1.  Lock held. */
static int put_drop(struct els_writer *w, struct put *p,
                    enum els_drop_cause cause, bool wake)
{
    drop_at_door(w, p->len, p->info.cap, cause);
    elsi_pool_give(&w->queue.pool, p->spare, p->take_size, elsi_pool_room(w));
    return producer_leave(w, wake, 1);
}

/* Try once to reserve room for p that leaves kept_room free: 0, or
 * not (as elsi_unitq_reserve()).  Lock held. */
static int put_try_reserve(struct els_writer *w, struct put *p,
                           uint64_t kept_room)
{
    struct elsi_unitq *uq = &w->queue.uq;
    if (p->spare == NULL)
        return kept_room == 0 ||
               elsi_unitq_has_room_without_spares(uq, p->len + kept_room)
               ? queue_reserve_copy(w, p->len, &p->meta, &p->seq, p->iov) : -ENOBUFS;
    if (kept_room == 0 || elsi_unitq_has_room_ext(uq, p->take_size + kept_room))
        return elsi_unitq_reserve_ext(uq, (uint8_t *)p->unit, p->len,
                                     p->take_size, &p->meta, &p->seq);
    return -ENOBUFS;
}

/* Wait for the writer thread to make room, until p's deadline.  false
 * when the deadline passed and there is still no room.  Lock held. */
static bool put_wait_room(struct els_writer *w, struct put *p, uint64_t kept_room)
{
    w->queue.room_waiters++;
    int rc = 0;
    if (p->deadline_ms == UINT64_MAX)
        pthread_cond_wait(&w->queue.room, &w->lock);
    else
        rc = pthread_cond_timedwait(&w->queue.room, &w->lock, &p->deadline);
    w->queue.room_waiters--;
    struct elsi_unitq *uq = &w->queue.uq;
    bool room = p->spare != NULL
                    ? elsi_unitq_has_room_ext(uq, p->need + kept_room) ||
                          elsi_unitq_has_room_touched(uq, p->len + kept_room)
                    : elsi_unitq_has_room_without_spares(uq, p->len + kept_room);
    return rc != ETIMEDOUT || room;
}

/* Reserve room for p, waiting for it as the policy allows.  true:
 * reserved (lock held, still in flight); false: dropped, and the
 * producer has left (Note [Producers in flight]).  Lock held. */
static bool put_reserve(struct els_writer *w, struct put *p)
{
    for (;;) {
        p->meta.gap_units = w->queue.gap_units;
        p->meta.gap_bytes = w->queue.gap_bytes;
        p->meta.gap_cause = w->queue.gap_cause;
        p->meta.gap_caps = w->queue.gap_caps;
        p->meta.gap_global = w->queue.gap_global;
        /* Room kept for a join snapshot: Note [Asking again for a join
         * snapshot]. */
        uint64_t kept_room = p->info.kind != ELSI_UNIT_KIND_END ? w->queue.join_reserve : 0;
        if (put_try_reserve(w, p, kept_room) == 0)
            return true;
        if (recorder_evict(w))
            continue;
        /* No room for its buffer, but for its bytes where the byte buffer
         * has been already: copied, and the spare goes back.  Not where
         * the copy would touch new bytes, which would stay taken from the
         * buffers for good (Note [The queue's memory] in unitq.h): that
         * unit waits, or is dropped, as one that found no room. */
        if (p->spare != NULL &&
            elsi_unitq_has_room_touched(&w->queue.uq, p->len + kept_room)) {
            elsi_pool_give(&w->queue.pool, p->spare, p->take_size, elsi_pool_room(w));
            p->spare = NULL;
            p->need = p->len;
            continue;
        }
        bool wake = elsi_writer_need_wake(w);   /* the writer may free room */
        if (!p->may_wait || w->life.stopping) {
            put_drop(w, p, w->life.stopping ? ELS_DROP_STOPPED : ELS_DROP_QUEUE_FULL,
                     wake);
            return false;
        }
        if (wake)
            elsi_writer_send_wake(w);
        if (!put_wait_room(w, p, kept_room)) {
            put_drop(w, p, p->timeout_cause, false);
            return false;
        }
    }
}

/* p is queued: count it accepted and queued, and clear the gap it
 * carries to the consumers.  Lock held. */
static void put_count(struct els_writer *w, const struct put *p)
{
    w->queue.gap_units = w->queue.gap_bytes = 0;
    w->queue.gap_caps = 0;
    w->queue.gap_global = false;
    if (p->info.cap < ELS_MAX_CAPS) {
        w->stats.caps[p->info.cap].units_accepted++;
        w->stats.caps[p->info.cap].bytes_accepted += p->len;
    }
    if (p->need > w->queue.max_unit_seen)
        w->queue.max_unit_seen = p->need;  /* the room it took */
    w->stats.st.units_accepted++;
    w->stats.st.bytes_accepted += p->len;
    w->stats.st.units_queued++;
    w->stats.st.bytes_queued += p->len;
}

/* Queue p, already in flight and not a header: reserve room, then copy
 * it in with the lock released, or retain its buffer.  Lock held; left
 * by producer_leave().  0 queued, 1 dropped. */
static int put_queue(struct els_writer *w, struct put *p,
                     enum els_write_reason reason, void **spare_out)
{
    /* A unit is counted as accepted in the same critical section that
     * queues or drops it, so accepted == sent + dropped + queued holds in
     * every snapshot, even while a producer waits for room. */
    if (p->len > w->queue.uq.cap || p->len > UINT32_MAX)
        return put_drop(w, p, ELS_DROP_TOO_BIG, false);

    p->meta = (struct elsi_unit){
        .kind = (uint8_t)p->info.kind,
        .cap = p->info.cap,
        .start_time = p->info.start_time,
        .end_time = p->info.end_time,
    };
    uint64_t now = elsi_now_ms();
    p->deadline_ms = 0;
    p->timeout_cause = ELS_DROP_BLOCK_TIMEOUT;
    p->may_wait = elsi_room_deadline(w, p->info.kind, reason, now,
                                     &p->deadline_ms, &p->timeout_cause);
    if (p->may_wait && p->deadline_ms != UINT64_MAX)
        elsi_deadline_timespec(p->deadline_ms > now ? p->deadline_ms - now : 0,
                               &p->deadline);

    /* Counted once, whatever happens to the unit next. */
    w->stats.st.units_by_reason[reason]++;
    if (!put_reserve(w, p))
        return 1;
    put_count(w, p);
    if (p->spare != NULL) {
        /* Complete already: visible at once (Note [Units handed over]). */
        *spare_out = p->spare;
        w->stats.st.units_handed_over++;
        elsi_unitq_commit(&w->queue.uq, p->seq);
        return producer_leave(w, elsi_writer_need_wake(w), 0);
    }
    pthread_mutex_unlock(&w->lock);

    copy_in(p->iov, p->unit);
    pthread_mutex_lock(&w->lock);
    elsi_unitq_commit(&w->queue.uq, p->seq);
    return producer_leave(w, elsi_writer_need_wake(w), 0);
}

/* Queue a unit (bytes at unit): copied into the queue, or with take_size
 * set, retained in its own buffer (unit, of take_size bytes) while *spare
 * gets the buffer the producer fills next; *spare is left alone when the
 * unit was copied or dropped.  0 queued or cached, 1 dropped, or a
 * negative code. */
static int producer_put(struct els_writer *w, const void *unit, size_t len,
                        enum els_write_reason reason, size_t take_size,
                        void **spare_out)
{
    if (w == NULL || unit == NULL || len == 0 ||
        (unsigned)reason >= ELS_REASON__COUNT)
        return ELS_EINVAL;

    struct put p = { .unit = unit, .len = len, .take_size = take_size };
    elsi_unit_classify(unit, len, &p.info);

    pthread_mutex_lock(&w->lock);
    if (w->life.forked) {
        drop_at_door(w, len, p.info.cap, ELS_DROP_FORKED_CHILD);
        pthread_mutex_unlock(&w->lock);
        return 1;
    }
    if (w->life.stopping) {
        pthread_mutex_unlock(&w->lock);
        return ELS_ESTOPPED;
    }
    w->life.producers++;
    if (p.info.kind == ELSI_UNIT_KIND_HEADER) {
        int r = cache_header(w, unit, len);
        return producer_leave(w, elsi_writer_need_wake(w), r);
    }
    /* A queue of fewer than eight buffers copies: handed over, each unit
     * would take a whole buffer's room (Note [Units handed over]). */
    if (take_size > 0 && take_size <= w->queue.uq.cap / 8 &&
        (p.spare = producer_spare(w, take_size)) != NULL && w->life.stopping) {
        elsi_pool_give(&w->queue.pool, p.spare, take_size, elsi_pool_room(w));
        return producer_leave(w, false, ELS_ESTOPPED);
    }
    p.need = p.spare != NULL ? take_size : len;
    return put_queue(w, &p, reason, spare_out);
}

int els_writer_write_reason(struct els_writer *w, const void *unit, size_t len,
                            enum els_write_reason reason)
{
    return producer_put(w, unit, len, reason, 0, NULL);
}

int els_writer_hand_over(struct els_writer *w, void **buf, size_t len,
                         size_t size, enum els_write_reason reason)
{
    if (buf == NULL || *buf == NULL || len > size)
        return ELS_EINVAL;
    /* Small units are copied: Note [Units handed over]. */
    bool take = len >= size / 2 && size <= UINT32_MAX;
    return producer_put(w, *buf, len, reason, take ? size : 0, buf);
}

int els_writer_set_snapshot_source(struct els_writer *w,
                                   els_snapshot_request_fn request, void *ctx)
{
    if (w == NULL)
        return ELS_EINVAL;
    pthread_mutex_lock(&w->lock);
    w->queue.snapshot_request = request;
    w->queue.snapshot_ctx = ctx;
    pthread_mutex_unlock(&w->lock);
    return 0;
}

/* Note [Late joiners]: queued if there is room now, never waiting, outside
 * the stream's counters and its gap. */
int els_writer_write_snapshot(struct els_writer *w, const void *unit, size_t len)
{
    if (w == NULL || unit == NULL || len == 0)
        return ELS_EINVAL;
    pthread_mutex_lock(&w->lock);
    if (w->life.forked || w->life.stopping) {
        int r = w->life.stopping && !w->life.forked ? ELS_ESTOPPED : 1;
        pthread_mutex_unlock(&w->lock);
        return r;
    }
    struct elsi_unit meta = { .kind = ELSI_UNIT_KIND_JOIN, .cap = ELSI_CAP_GLOBAL };
    uint64_t seq, at = w->queue.uq.copied_in;
    struct iovec iov[2];
    if (len > UINT32_MAX || queue_reserve_copy(w, len, &meta, &seq, iov) != 0) {
        w->stats.st.snapshots_not_queued++;
        w->queue.join_refused_len = len;  /* Note [Asking again for a join snapshot] */
        pthread_mutex_unlock(&w->lock);
        return 1;
    }
    w->life.producers++;
    w->stats.st.snapshot_units++;
    w->stats.st.snapshot_bytes += len;
    pthread_mutex_unlock(&w->lock);

    copy_in(iov, unit);
    pthread_mutex_lock(&w->lock);
    elsi_unitq_commit(&w->queue.uq, seq);
    w->queue.join_seq = seq;
    w->queue.join_at = at;
    return producer_leave(w, elsi_writer_need_wake(w), 0);
}

int els_writer_flush(struct els_writer *w)
{
    if (w == NULL)
        return ELS_EINVAL;
    pthread_mutex_lock(&w->lock);
    if (w->life.stopping) {
        pthread_mutex_unlock(&w->lock);
        return ELS_ESTOPPED;
    }
    w->queue.flush_requested = true;
    if (elsi_writer_need_wake(w))
        elsi_writer_send_wake(w);   /* under the lock: see producer_leave() */
    pthread_mutex_unlock(&w->lock);
    return 0;
}
