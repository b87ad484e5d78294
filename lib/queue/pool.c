/*
 * pool.c: spare buffers for units handed over (see pool.h for the
 * contract).  Not its job: when a buffer is handed over or given back
 * (lib/writer/producer.c, release.c).
 */
#include <stdlib.h>

#include "queue/pool.h"

uint8_t *elsi_pool_take(struct elsi_pool *p, size_t size)
{
    if (p->n == 0 || size != p->size)
        return NULL;
    return p->spare[--p->n];
}

unsigned elsi_pool_resize(struct elsi_pool *p, size_t size,
                          uint8_t *old[ELSI_POOL_KEEP])
{
    unsigned n = 0;
    if (size != p->size) {
        while (p->n > 0)
            old[n++] = p->spare[--p->n];
        p->size = size;
    }
    return n;
}

void elsi_pool_give(struct elsi_pool *p, uint8_t *buf, size_t size,
                    uint64_t room)
{
    if (buf == NULL)
        return;
    if (p->size == 0)
        p->size = size;     /* the capabilities' buffer size, in practice */
    if (size == p->size && p->n < ELSI_POOL_KEEP &&
        (uint64_t)(p->n + 1) * size <= room)
        p->spare[p->n++] = buf;
    else
        free(buf);
}

void elsi_pool_destroy(struct elsi_pool *p)
{
    while (p->n > 0)
        free(p->spare[--p->n]);
}
