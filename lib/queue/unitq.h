/*
 * unitq.h: the bounded queue of units between the posting threads and the
 * writer thread.
 *
 * A byte buffer of fixed capacity holding whole units, plus a queue of unit
 * descriptors.  Units are numbered by a 64-bit sequence number that never
 * wraps in practice; [tail, head) are retained.  A unit is first reserved
 * (space and sequence number assigned), then filled by its producer without
 * any lock, then committed.  Only the oldest unit can be released.
 *
 * This file does no I/O, takes no locks and starts no threads: the writer
 * serialises every call with its own mutex (see Note [Queue locking] in
 * lib/writer/writer_impl.h).  What the queue guarantees is memory-level:
 * the bytes of a retained unit never move and are never overwritten until
 * it is released, so a reader may read them without the lock once it has
 * seen the unit committed under the lock.
 *
 * A unit may also live outside the byte buffer, in a buffer handed over by
 * its producer (Note [Units handed over], lib/writer/producer.c): its
 * descriptor then points at that buffer, which the queue owns until the
 * unit is released.  Such buffers count against the same capacity, by
 * their whole size, and so do the byte buffer's touched bytes and the spare
 * buffers kept beside the queue: Note [The queue's memory].
 *
 * Note [Reusing the start of the queue]
 * When the last retained unit is released, the queue starts over at the
 * beginning of its buffer.  With a consumer that keeps up the queue is
 * empty almost every time a unit arrives, so the same first few MiB are
 * used again and again: they stay in the cache, and the rest of the
 * buffer (allocated, never touched) costs no resident memory.  Cycling
 * through the whole buffer instead made every byte of it resident (32 MiB
 * by default) and copied each unit into cold memory.  Only an empty queue
 * starts over, so no room is ever lost to the jump: a consumer that falls
 * behind still has the whole capacity.
 *
 * Note [The queue's memory]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~
 * What the queue costs in memory is not what it retains.  The byte buffer
 * is allocated whole; only the bytes it ever touched are resident, and
 * they stay so (touched: its first touched bytes, since units go in order
 * from its front).  A handed-over buffer costs its whole size, and so does
 * each spare buffer the writer keeps for producers (lib/queue/pool.h).
 * The bound is on their sum:
 *
 *     touched + ext_bytes + spares <= cap
 *
 * and every step keeps it: a unit handed over is taken only if its buffer
 * fits beside the three (elsi_unitq_reserve_ext); a unit copied in may
 * touch new bytes of the byte buffer only within what the buffers and
 * spares leave (elsi_unitq_reserve); a spare is kept only within what the
 * queue leaves (elsi_unitq_spare_room).  Taking a spare to give a producer
 * while its full buffer goes into the queue leaves the sum as it was.
 *
 * Counting the units retained instead (as this queue once did) let the
 * byte buffer's walk touch all of cap while buffers filled cap again: a
 * stalled consumer made a 64 MiB queue cost 128 MiB.  So once units are
 * handed over, the byte buffer keeps to the bytes it has touched: a unit
 * that would touch new ones goes to the front instead when the front is
 * free (jumping over the rest of the lap, counted as in use until the
 * tail reaches it), and the byte buffer grows only when neither place has
 * room.  A full buffer that finds no room is copied instead only where
 * that touches no new byte (elsi_unitq_has_room_touched,
 * lib/writer/producer.c): bytes touched stay taken from the buffers for
 * good.  A queue no unit was ever handed over to wraps as before and keeps
 * the whole capacity for copies.
 */
#ifndef ELS_UNITQ_H
#define ELS_UNITQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "queue/pool.h"

enum elsi_unit_state {
    ELSI_UNIT_RESERVED = 0,  /* being copied in by its producer */
    ELSI_UNIT_COMMITTED = 1  /* complete and visible */
};

struct elsi_unit {
    uint64_t off;           /* byte offset in queue space (monotonic) */
    uint32_t len;
    /* A unit handed over: its bytes are ext[0..len), in a buffer of
     * ext_size bytes the queue owns (off is unused); NULL for a unit in
     * the byte buffer. */
    uint8_t *ext;
    uint32_t ext_size;
    uint8_t state;          /* enum elsi_unit_state */
    uint8_t kind;           /* enum elsi_unit_kind (evformat.h) */
    uint16_t cap;           /* block's capability, 0xFFFF for global */
    uint64_t start_time;    /* block marker timestamps, 0 if none */
    uint64_t end_time;
    /* Units (and their bytes) dropped at the door just before this one,
     * so every consumer can be told in-band where the gap is. */
    uint64_t gap_units, gap_bytes;
    uint8_t gap_cause;      /* enum els_drop_cause of that gap */
    bool gap_global;        /* the gap holds global blocks */
    uint64_t gap_caps;      /* bit c: the gap holds blocks of capability c */
    /* Set by the writer once any consumer received the whole unit. */
    bool delivered;
    /* Set by the writer when a consumer failed on it (a write error). */
    bool failed;
    /* Set by the writer when a consumer was cut loose past it. */
    bool skipped;
};

/* The room a unit takes: its length, or for a unit handed over its
 * buffer's whole size. */
static inline uint64_t elsi_unit_room(const struct elsi_unit *u)
{
    return u->ext != NULL ? u->ext_size : u->len;
}

struct elsi_unitq {
    uint8_t *buf;
    uint64_t cap;            /* bytes */
    /* The byte buffer's span in queue space: the retained units, and the end
     * of a lap jumped over, [jump_from, jump_to), while the tail has not
     * reached it (jump_to == 0: none; Note [The queue's memory]). */
    uint64_t head_off, tail_off;
    uint64_t jump_from, jump_to;
    struct elsi_unit *units;
    uint64_t units_mask;     /* descriptor table size - 1 (power of two) */
    uint64_t head_seq, tail_seq;
    uint64_t committed_seq;  /* first seq not yet committed (prefix) */
    uint64_t buf_bytes;     /* lengths of the units retained in the byte buffer */
    uint64_t ext_bytes;      /* sizes of the handed-over buffers retained */
    /* Lengths of the units copied in, ever: a measure of the stream
     * that no jump to the front inflates (lib/writer/recorder.c). */
    uint64_t copied_in;
    /* Note [The queue's memory]: the byte buffer's bytes [0, touched) have
     * been used (resident from then on); a unit was ever handed over; the
     * spare buffers that count against cap too (NULL: none). */
    uint64_t touched;
    bool ext_seen;
    const struct elsi_pool *spares;
};

/* Allocate a queue of cap_bytes and room for max_units descriptors (rounded
 * up to a power of two), with no spares counted (set r->spares to count a
 * pool's).  0 or ELS_ENOMEM / ELS_EINVAL. */
int elsi_unitq_init(struct elsi_unitq *r, uint64_t cap_bytes, uint64_t max_units);
void elsi_unitq_destroy(struct elsi_unitq *r);

/* Reserve len bytes for a new unit.  Returns 0 and sets *seq and iov[0..1]
 * (iov[1].iov_len == 0 when the space does not wrap); ELS_EMSGSIZE when
 * len is 0 or can never fit; -ENOBUFS when there is no room now (bytes,
 * descriptors, or memory: Note [The queue's memory]).  The descriptor is
 * initialised from *meta with the queue's own fields (off, len, state)
 * overwritten. */
int elsi_unitq_reserve(struct elsi_unitq *r, size_t len,
                      const struct elsi_unit *meta, uint64_t *seq,
                      struct iovec iov[2]);

/* Retain a complete unit of len bytes that lives in buf, a malloc'd
 * buffer of size bytes (len <= size), without copying it: the queue owns
 * buf from now until the unit is released (the caller takes it back
 * then: elsi_unitq_release()).  The unit is reserved, to be committed like
 * any other.  0, ELS_EMSGSIZE or -ENOBUFS as elsi_unitq_reserve(), room
 * being counted as size bytes (whatever len is) beside the byte buffer's
 * touched bytes and the spares. */
int elsi_unitq_reserve_ext(struct elsi_unitq *r, uint8_t *buf, size_t len,
                          size_t size, const struct elsi_unit *meta,
                          uint64_t *seq);

/* Mark seq as filled.  Committed units become visible in sequence order. */
void elsi_unitq_commit(struct elsi_unitq *r, uint64_t seq);

/* Would a unit of len bytes fit now, copied in?  Handed over in a buffer
 * of size bytes?  Copied in, if the spares were let go?  Copied in
 * without touching a new byte of the byte buffer (so elsi_unitq_reserve()
 * would put it there)? */
bool elsi_unitq_has_room(const struct elsi_unitq *r, size_t len);
bool elsi_unitq_has_room_ext(const struct elsi_unitq *r, size_t size);
bool elsi_unitq_has_room_without_spares(const struct elsi_unitq *r, size_t len);
bool elsi_unitq_has_room_touched(const struct elsi_unitq *r, size_t len);

/* Descriptor of a retained unit, or NULL if seq is outside [tail, head). */
struct elsi_unit *elsi_unitq_unit(struct elsi_unitq *r, uint64_t seq);

/* Descriptor of seq without the bounds check, for a reader that holds no
 * lock but knows seq is retained (it saw seq < committed_seq and it is the
 * only releaser).  Never reads head or tail, which producers update. */
static inline struct elsi_unit *elsi_unitq_unit_at(struct elsi_unitq *r, uint64_t seq)
{
    return &r->units[seq & r->units_mask];
}

/* Bytes [from, unit end) of unit u as up to two iovecs; returns iovec count
 * (0 if from >= len). */
int elsi_unitq_iov(const struct elsi_unitq *r, const struct elsi_unit *u,
                  size_t from, struct iovec iov[2]);

/* Release the oldest unit, which must be committed.  Returns false if the
 * queue is empty or the oldest unit is still reserved.  For a unit handed
 * over, *ext and *ext_size (when not NULL) get its buffer, now the
 * caller's; otherwise NULL and 0. */
bool elsi_unitq_release(struct elsi_unitq *r, uint8_t **ext, size_t *ext_size);

/* Bytes (in the byte buffer, and sizes of handed-over buffers) and units
 * currently retained (reserved or committed). */
uint64_t elsi_unitq_bytes(const struct elsi_unitq *r);
uint64_t elsi_unitq_count(const struct elsi_unitq *r);

/* Note [The queue's memory]: the memory held for the queue (the byte
 * byte buffer's touched bytes, the buffers retained, the spares), at most cap;
 * and the room left for spares beside the queue's own. */
uint64_t elsi_unitq_memory(const struct elsi_unitq *r);
uint64_t elsi_unitq_spare_room(const struct elsi_unitq *r);

#endif /* ELS_UNITQ_H */
