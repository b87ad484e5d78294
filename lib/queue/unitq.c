/*
 * unitq.c: the bounded queue of units (see unitq.h for the contract).
 *
 * Bytes live in one contiguous allocation used as a circular buffer; a
 * unit may wrap around its end, which is why readers get two iovecs.
 * Offsets are 64-bit and only grow, so the span in use is head_off -
 * tail_off and the position in the buffer is off % cap.  Descriptors live
 * in their own power-of-two circular table indexed by seq & mask.  What may be
 * touched, and when a unit goes to the front early: Note [The queue's
 * memory] in unitq.h.
 *
 * Not this file's job: locking, waiting for room, deciding what to drop.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "eventlog-sink.h"
#include "queue/unitq.h"

int elsi_unitq_init(struct elsi_unitq *r, uint64_t cap_bytes, uint64_t max_units)
{
    memset(r, 0, sizeof *r);
    if (cap_bytes == 0 || max_units == 0 || cap_bytes > SIZE_MAX / 2)
        return ELS_EINVAL;
    uint64_t n = 1;
    while (n < max_units) {
        if (n > (UINT64_MAX >> 2))
            return ELS_EINVAL;
        n <<= 1;
    }
    r->buf = malloc((size_t)cap_bytes);
    r->units = calloc((size_t)n, sizeof *r->units);
    if (r->buf == NULL || r->units == NULL) {
        elsi_unitq_destroy(r);
        return ELS_ENOMEM;
    }
    r->cap = cap_bytes;
    r->units_mask = n - 1;
    return 0;
}

void elsi_unitq_destroy(struct elsi_unitq *r)
{
    if (r->units != NULL)
        for (uint64_t seq = r->tail_seq; seq < r->head_seq; seq++)
            free(r->units[seq & r->units_mask].ext);
    free(r->buf);
    free(r->units);
    memset(r, 0, sizeof *r);
}

uint64_t elsi_unitq_bytes(const struct elsi_unitq *r)
{
    return r->buf_bytes + r->ext_bytes;
}

uint64_t elsi_unitq_count(const struct elsi_unitq *r)
{
    return r->head_seq - r->tail_seq;
}

static uint64_t spare_bytes(const struct elsi_unitq *r)
{
    return r->spares != NULL ? elsi_pool_bytes(r->spares) : 0;
}

uint64_t elsi_unitq_memory(const struct elsi_unitq *r)
{
    return r->touched + r->ext_bytes + spare_bytes(r);
}

uint64_t elsi_unitq_spare_room(const struct elsi_unitq *r)
{
    uint64_t held = r->touched + r->ext_bytes;
    return held < r->cap ? r->cap - held : 0;
}

/* What the byte buffer has touched once [off, off + len) is used. */
static uint64_t touched_after(const struct elsi_unitq *r, uint64_t off, size_t len)
{
    uint64_t end = off % r->cap + len;
    if (end > r->cap)
        return r->cap;          /* wraps: every byte has been used */
    return end > r->touched ? end : r->touched;
}

/*
 * Where a unit of len bytes goes in the byte buffer (*off, in queue space),
 * with held bytes of buffers and spares beside it; false if nowhere now.
 * Here is head_off; the front is the start of the next lap, which leaves
 * the rest of this one unused until the tail reaches it.  A place that
 * touches no new byte comes first; the front only once units are handed
 * over (Note [The queue's memory]); new bytes only if grow, and within
 * cap - held.
 */
static bool ring_place(const struct elsi_unitq *r, size_t len, uint64_t held,
                       bool grow, uint64_t *off)
{
    uint64_t head = r->head_off, tail = r->tail_off, pos = head % r->cap;
    uint64_t budget = held < r->cap ? r->cap - held : 0;
    bool here = head + len - tail <= r->cap;
    uint64_t here_touched = here ? touched_after(r, head, len) : 0;
    uint64_t front = head - pos + r->cap;
    bool at_front = r->ext_seen && pos != 0 && front + len - tail <= r->cap;
    uint64_t front_touched = at_front ? touched_after(r, front, len) : 0;

    if (here && here_touched == r->touched)
        *off = head;
    else if (at_front && front_touched == r->touched)
        *off = front;
    else if (!grow)
        return false;
    else if (here && here_touched <= budget)
        *off = head;
    else if (at_front && front_touched <= budget)
        *off = front;
    else
        return false;
    return true;
}

bool elsi_unitq_has_room(const struct elsi_unitq *r, size_t len)
{
    uint64_t off;
    return len <= r->cap && elsi_unitq_count(r) <= r->units_mask &&
           ring_place(r, len, r->ext_bytes + spare_bytes(r), true, &off);
}

bool elsi_unitq_has_room_without_spares(const struct elsi_unitq *r, size_t len)
{
    uint64_t off;
    return len <= r->cap && elsi_unitq_count(r) <= r->units_mask &&
           ring_place(r, len, r->ext_bytes, true, &off);
}

bool elsi_unitq_has_room_touched(const struct elsi_unitq *r, size_t len)
{
    uint64_t off;
    return len <= r->cap && elsi_unitq_count(r) <= r->units_mask &&
           ring_place(r, len, 0, false, &off);
}

bool elsi_unitq_has_room_ext(const struct elsi_unitq *r, size_t size)
{
    uint64_t held = elsi_unitq_memory(r);
    return elsi_unitq_count(r) <= r->units_mask && held <= r->cap &&
           size <= r->cap - held;
}

/* Up to two spans covering [off, off + len) of queue space. */
static int ring_spans(const struct elsi_unitq *r, uint64_t off, size_t len,
                      struct iovec iov[2])
{
    size_t pos = (size_t)(off % r->cap);
    size_t first = len;
    if (first > r->cap - pos)
        first = (size_t)(r->cap - pos);
    iov[0].iov_base = r->buf + pos;
    iov[0].iov_len = first;
    iov[1].iov_base = r->buf;
    iov[1].iov_len = len - first;
    return iov[1].iov_len ? 2 : 1;
}

/* Fill the next descriptor from meta for a reserved unit of len bytes,
 * in the byte buffer at off (ext NULL) or in ext, a buffer of ext_size
 * bytes (off is then unused, but keeps offsets in order). */
static void ring_describe(struct elsi_unitq *r, const struct elsi_unit *meta,
                          uint64_t off, size_t len, uint8_t *ext,
                          size_t ext_size)
{
    struct elsi_unit *u = &r->units[r->head_seq & r->units_mask];
    if (meta != NULL)
        *u = *meta;
    else
        memset(u, 0, sizeof *u);
    u->off = off;
    u->len = (uint32_t)len;
    u->ext = ext;
    u->ext_size = (uint32_t)ext_size;
    u->state = ELSI_UNIT_RESERVED;
    u->delivered = false;
    u->failed = false;
}

int elsi_unitq_reserve(struct elsi_unitq *r, size_t len,
                      const struct elsi_unit *meta, uint64_t *seq,
                      struct iovec iov[2])
{
    if (len == 0 || len > r->cap || len > UINT32_MAX)
        return ELS_EMSGSIZE;
    uint64_t off;
    if (elsi_unitq_count(r) > r->units_mask ||
        !ring_place(r, len, r->ext_bytes + spare_bytes(r), true, &off))
        return -ENOBUFS;

    if (off != r->head_off) {
        r->jump_from = r->head_off;
        r->jump_to = off;
    }
    ring_describe(r, meta, off, len, NULL, 0);
    ring_spans(r, off, len, iov);
    r->touched = touched_after(r, off, len);
    r->head_off = off + len;
    r->buf_bytes += len;
    r->copied_in += len;
    *seq = r->head_seq++;
    return 0;
}

int elsi_unitq_reserve_ext(struct elsi_unitq *r, uint8_t *buf, size_t len,
                          size_t size, const struct elsi_unit *meta,
                          uint64_t *seq)
{
    if (buf == NULL || len == 0 || len > size || size > r->cap ||
        size > UINT32_MAX)
        return ELS_EMSGSIZE;
    if (!elsi_unitq_has_room_ext(r, size))
        return -ENOBUFS;

    ring_describe(r, meta, r->head_off, len, buf, size);
    r->ext_bytes += size;
    r->ext_seen = true;
    *seq = r->head_seq++;
    return 0;
}

void elsi_unitq_commit(struct elsi_unitq *r, uint64_t seq)
{
    struct elsi_unit *u = elsi_unitq_unit(r, seq);
    if (u == NULL)
        return;
    u->state = ELSI_UNIT_COMMITTED;
    /* Commits may arrive out of order (two producers copying at once);
     * the visible prefix only grows over committed units. */
    while (r->committed_seq < r->head_seq &&
           r->units[r->committed_seq & r->units_mask].state ==
               ELSI_UNIT_COMMITTED)
        r->committed_seq++;
}

struct elsi_unit *elsi_unitq_unit(struct elsi_unitq *r, uint64_t seq)
{
    if (seq < r->tail_seq || seq >= r->head_seq)
        return NULL;
    return &r->units[seq & r->units_mask];
}

int elsi_unitq_iov(const struct elsi_unitq *r, const struct elsi_unit *u,
                  size_t from, struct iovec iov[2])
{
    if (from >= u->len)
        return 0;
    if (u->ext != NULL) {
        iov[0].iov_base = u->ext + from;
        iov[0].iov_len = u->len - from;
        iov[1].iov_base = NULL;
        iov[1].iov_len = 0;
        return 1;
    }
    return ring_spans(r, u->off + from, u->len - from, iov);
}

bool elsi_unitq_release(struct elsi_unitq *r, uint8_t **ext, size_t *ext_size)
{
    if (ext != NULL)
        *ext = NULL;
    if (ext_size != NULL)
        *ext_size = 0;
    if (r->tail_seq == r->committed_seq)
        return false;   /* empty, or the oldest unit is still being filled */
    struct elsi_unit *u = &r->units[r->tail_seq & r->units_mask];
    if (u->ext != NULL) {
        r->ext_bytes -= u->ext_size;
        if (ext != NULL && ext_size != NULL) {
            *ext = u->ext;
            *ext_size = u->ext_size;
        } else {
            free(u->ext);
        }
        u->ext = NULL;
    } else {
        r->tail_off = u->off + u->len;
        r->buf_bytes -= u->len;
        if (r->jump_to != 0 && r->tail_off == r->jump_from) {
            r->tail_off = r->jump_to;   /* the rest of that lap is free */
            r->jump_from = r->jump_to = 0;
        }
    }
    r->tail_seq++;
    if (r->buf_bytes == 0) {
        /* The byte buffer is empty: its next unit starts at the beginning
         * of the buffer again (Note [Reusing the start of the queue],
         * unitq.h).  Offsets only grow, so both move on to the next
         * multiple of cap.  Units handed over may still be retained:
         * their offsets are not used. */
        uint64_t pos = r->head_off % r->cap;
        if (pos != 0)
            r->tail_off = r->head_off = r->head_off + (r->cap - pos);
        else
            r->tail_off = r->head_off;
        r->jump_from = r->jump_to = 0;
    }
    return true;
}
