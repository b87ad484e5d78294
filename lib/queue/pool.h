/*
 * pool.h: the spare buffers the writer hands to producers in exchange for
 * the full ones they hand over (Note [Units handed over],
 * lib/queue/producer.c).
 *
 * A stack of malloc'd buffers of one size, most recently returned first
 * (still warm in the cache), kept up to a fixed count; buffers of another
 * size, and any beyond that count, are freed.  No locks, no I/O: the
 * writer serialises every call with its own mutex, like the ring's.
 */
#ifndef ELS_POOL_H
#define ELS_POOL_H

#include <stddef.h>
#include <stdint.h>

/* Spare buffers kept: enough for both capabilities of a -N2 program and
 * the global buffer to find one each while the writer sends. */
#define ELSI_POOL_KEEP 4

struct elsi_pool {
    size_t size;                    /* of the buffers kept; 0: none yet */
    uint8_t *spare[ELSI_POOL_KEEP];
    unsigned n;
    uint64_t allocated;             /* buffers malloc'd for producers, ever */
};

/* A spare buffer of exactly size bytes, or NULL if none is kept (the
 * caller then allocates one with malloc, outside the writer's lock). */
uint8_t *elsi_pool_take(struct elsi_pool *p, size_t size);
/* Give back a buffer of size bytes (kept or freed). */
void elsi_pool_give(struct elsi_pool *p, uint8_t *buf, size_t size);
/* Free every spare buffer. */
void elsi_pool_destroy(struct elsi_pool *p);

#endif /* ELS_POOL_H */
