/*
 * pool.h: the spare buffers the writer hands to producers in exchange for
 * the full ones they hand over (Note [Units handed over],
 * lib/writer/producer.c).
 *
 * A stack of malloc'd buffers of one size, most recently returned first
 * (still warm in the cache).  A buffer given back is kept while the
 * spares stay within the room the caller says the queue has left (so
 * that the queue's memory, spares included, stays within buffer=: Note
 * [The queue's memory] in unitq.h, which counts the spares too) and within
 * ELSI_POOL_KEEP; buffers of another size, and any beyond, are freed.
 * The size is the one producers last asked for: when it changes (the RTS's
 * buffer size did), the spares of the old size are handed back to be
 * freed.  (The RTS's global buffer keeps 2 MiB whatever the capabilities'
 * size: its rare full blocks make the pool start over twice.)  Keeping as many spares as the queue could fill spares a
 * producer that outruns its consumer a malloc, and the page faults of a
 * fresh buffer, per unit.  No locks, no I/O: the writer serialises every
 * call with its own mutex, like the queue's.
 */
#ifndef ELS_POOL_H
#define ELS_POOL_H

#include <stddef.h>
#include <stdint.h>

/* Spare buffers kept at most, whatever the room: 64 of the RTS's 2 MiB
 * buffers fill a 128 MiB queue. */
#define ELSI_POOL_KEEP 64

struct elsi_pool {
    size_t size;                    /* of the buffers kept; 0: none yet */
    uint8_t *spare[ELSI_POOL_KEEP];
    unsigned n;
    uint64_t allocated;             /* buffers malloc'd for producers, ever */
};

/* A spare buffer of exactly size bytes, or NULL if none is kept (the
 * caller then allocates one with malloc, outside the writer's lock). */
uint8_t *elsi_pool_take(struct elsi_pool *p, size_t size);
/* From now on keep buffers of size bytes: the spares of another size move
 * to old[] (the caller frees them, outside its lock); returns how many. */
unsigned elsi_pool_resize(struct elsi_pool *p, size_t size,
                          uint8_t *old[ELSI_POOL_KEEP]);
/* Give back a buffer of size bytes: kept if the spares, it included,
 * fit in room bytes, else freed. */
void elsi_pool_give(struct elsi_pool *p, uint8_t *buf, size_t size,
                    uint64_t room);
/* Free every spare buffer. */
void elsi_pool_destroy(struct elsi_pool *p);

/* Bytes of the spares kept. */
static inline uint64_t elsi_pool_bytes(const struct elsi_pool *p)
{
    return (uint64_t)p->n * p->size;
}

#endif /* ELS_POOL_H */
