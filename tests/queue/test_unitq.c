/*
 * test_unitq.c: the bounded queue on its own: reserve/commit/release order,
 * wrap-around, room accounting, units too big, descriptor exhaustion,
 * out-of-order commits, starting over at the front once empty, units
 * handed over in buffers of their own (let in and counted by their whole
 * size), and the bound on the queue's memory: the byte ring's touched
 * bytes, the buffers and the spares within the capacity.
 */
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "eventlog-sink.h"
#include "queue/unitq.h"

static void fill(struct iovec iov[2], uint8_t start)
{
    uint8_t v = start;
    for (int i = 0; i < 2; i++)
        for (size_t k = 0; k < iov[i].iov_len; k++)
            ((uint8_t *)iov[i].iov_base)[k] = v++;
}

static void check_unit_bytes(struct elsi_unitq *r, uint64_t seq, uint8_t start)
{
    struct elsi_unit *u = elsi_unitq_unit(r, seq);
    CHECK(u != NULL);
    struct iovec iov[2];
    int n = elsi_unitq_iov(r, u, 0, iov);
    CHECK(n >= 1);
    uint8_t v = start;
    size_t total = 0;
    for (int i = 0; i < n; i++)
        for (size_t k = 0; k < iov[i].iov_len; k++, total++)
            CHECK_INT(((uint8_t *)iov[i].iov_base)[k], ==, (uint8_t)v++);
    CHECK_U64(total, ==, u->len);
}

static void ring_basic(void)
{
    struct elsi_unitq r;
    CHECK_OK(elsi_unitq_init(&r, 100, 4));
    uint64_t seq;
    struct iovec iov[2];
    struct elsi_unit meta = { .cap = 3, .start_time = 7 };
    CHECK_OK(elsi_unitq_reserve(&r, 40, &meta, &seq, iov));
    CHECK_U64(seq, ==, 0);
    CHECK_U64(iov[0].iov_len, ==, 40);
    CHECK_U64(iov[1].iov_len, ==, 0);
    fill(iov, 1);
    CHECK_U64(r.committed_seq, ==, 0);
    elsi_unitq_commit(&r, seq);
    CHECK_U64(r.committed_seq, ==, 1);
    CHECK_U64(elsi_unitq_bytes(&r), ==, 40);
    CHECK_INT(elsi_unitq_unit(&r, 0)->cap, ==, 3);
    CHECK_U64(elsi_unitq_unit(&r, 0)->start_time, ==, 7);
    check_unit_bytes(&r, 0, 1);
    CHECK(elsi_unitq_unit(&r, 1) == NULL);
    CHECK(elsi_unitq_release(&r, NULL, NULL));
    CHECK(!elsi_unitq_release(&r, NULL, NULL));
    CHECK_U64(elsi_unitq_bytes(&r), ==, 0);
    CHECK(elsi_unitq_unit(&r, 0) == NULL);
    elsi_unitq_destroy(&r);
}

static void ring_wraps(void)
{
    struct elsi_unitq r;
    CHECK_OK(elsi_unitq_init(&r, 100, 8));
    uint64_t seq;
    struct iovec iov[2];
    for (unsigned round = 0; round < 50; round++) {
        /* 30-byte units in a 100-byte ring wrap at different points. */
        CHECK_OK(elsi_unitq_reserve(&r, 30, NULL, &seq, iov));
        fill(iov, (uint8_t)round);
        elsi_unitq_commit(&r, seq);
        check_unit_bytes(&r, seq, (uint8_t)round);
        if (elsi_unitq_count(&r) == 3) {
            CHECK(!elsi_unitq_has_room(&r, 30));
            CHECK_INT(elsi_unitq_reserve(&r, 30, NULL, &seq, iov), ==, -ENOBUFS);
            CHECK(elsi_unitq_release(&r, NULL, NULL));
        }
    }
    /* Reading from the middle of a wrapped unit. */
    struct elsi_unit *u = elsi_unitq_unit(&r, r.tail_seq);
    int n = elsi_unitq_iov(&r, u, 29, iov);
    CHECK_INT(n, >=, 1);
    CHECK_U64(iov[0].iov_len + (n > 1 ? iov[1].iov_len : 0), ==, 1);
    CHECK_INT(elsi_unitq_iov(&r, u, 30, iov), ==, 0);
    elsi_unitq_destroy(&r);
}

static void ring_too_big(void)
{
    struct elsi_unitq r;
    CHECK_OK(elsi_unitq_init(&r, 64, 4));
    uint64_t seq;
    struct iovec iov[2];
    CHECK_INT(elsi_unitq_reserve(&r, 65, NULL, &seq, iov), ==, ELS_EMSGSIZE);
    CHECK_INT(elsi_unitq_reserve(&r, 0, NULL, &seq, iov), ==, ELS_EMSGSIZE);
    CHECK_OK(elsi_unitq_reserve(&r, 64, NULL, &seq, iov));   /* exactly fits */
    CHECK_INT(elsi_unitq_reserve(&r, 1, NULL, &seq, iov), ==, -ENOBUFS);
    elsi_unitq_destroy(&r);
}

static void ring_descriptors_run_out(void)
{
    struct elsi_unitq r;
    CHECK_OK(elsi_unitq_init(&r, 1000, 3));  /* rounded up to 4 */
    uint64_t seq;
    struct iovec iov[2];
    for (int i = 0; i < 4; i++)
        CHECK_OK(elsi_unitq_reserve(&r, 1, NULL, &seq, iov));
    CHECK(!elsi_unitq_has_room(&r, 1));
    CHECK_INT(elsi_unitq_reserve(&r, 1, NULL, &seq, iov), ==, -ENOBUFS);
    elsi_unitq_destroy(&r);
}

static void ring_out_of_order_commit(void)
{
    struct elsi_unitq r;
    CHECK_OK(elsi_unitq_init(&r, 100, 8));
    uint64_t a, b, c;
    struct iovec iov[2];
    CHECK_OK(elsi_unitq_reserve(&r, 10, NULL, &a, iov));
    CHECK_OK(elsi_unitq_reserve(&r, 10, NULL, &b, iov));
    CHECK_OK(elsi_unitq_reserve(&r, 10, NULL, &c, iov));
    elsi_unitq_commit(&r, c);
    elsi_unitq_commit(&r, b);
    /* Nothing visible, nothing releasable while the first is filling. */
    CHECK_U64(r.committed_seq, ==, 0);
    CHECK(!elsi_unitq_release(&r, NULL, NULL));
    elsi_unitq_commit(&r, a);
    CHECK_U64(r.committed_seq, ==, 3);
    CHECK(elsi_unitq_release(&r, NULL, NULL));
    CHECK(elsi_unitq_release(&r, NULL, NULL));
    CHECK(elsi_unitq_release(&r, NULL, NULL));
    CHECK(!elsi_unitq_release(&r, NULL, NULL));
    elsi_unitq_destroy(&r);
}

static void ring_bad_init(void)
{
    struct elsi_unitq r;
    CHECK_INT(elsi_unitq_init(&r, 0, 4), ==, ELS_EINVAL);
    CHECK_INT(elsi_unitq_init(&r, 10, 0), ==, ELS_EINVAL);
}

/* Note [Reusing the start of the ring]: once empty, the next unit goes to
 * the start of the buffer, so a queue that is drained as fast as it fills
 * keeps using its first bytes; a ring that is not empty wraps as before
 * and keeps its whole capacity. */
static void ring_reuses_start_when_empty(void)
{
    struct elsi_unitq r;
    CHECK_OK(elsi_unitq_init(&r, 100, 8));
    uint64_t seq;
    struct iovec iov[2];
    for (unsigned round = 0; round < 20; round++) {
        CHECK_OK(elsi_unitq_reserve(&r, 30, NULL, &seq, iov));
        CHECK(iov[0].iov_base == r.buf);
        CHECK_U64(iov[1].iov_len, ==, 0);
        fill(iov, (uint8_t)round);
        elsi_unitq_commit(&r, seq);
        check_unit_bytes(&r, seq, (uint8_t)round);
        CHECK(elsi_unitq_release(&r, NULL, NULL));
        CHECK_U64(elsi_unitq_bytes(&r), ==, 0);
    }
    /* Not empty: the next unit follows the retained one, and the ring
     * still holds its full capacity (30 + 30 + 40 bytes). */
    CHECK_OK(elsi_unitq_reserve(&r, 30, NULL, &seq, iov));
    elsi_unitq_commit(&r, seq);
    CHECK_OK(elsi_unitq_reserve(&r, 30, NULL, &seq, iov));
    CHECK(iov[0].iov_base == r.buf + 30);
    elsi_unitq_commit(&r, seq);
    CHECK(elsi_unitq_release(&r, NULL, NULL));
    CHECK_OK(elsi_unitq_reserve(&r, 70, NULL, &seq, iov));
    CHECK(iov[0].iov_base == r.buf + 60);
    CHECK_U64(iov[0].iov_len, ==, 40);
    CHECK_U64(iov[1].iov_len, ==, 30);
    fill(iov, 9);
    elsi_unitq_commit(&r, seq);
    CHECK(!elsi_unitq_has_room(&r, 1));
    CHECK(elsi_unitq_release(&r, NULL, NULL));
    check_unit_bytes(&r, seq, 9);
    CHECK(elsi_unitq_release(&r, NULL, NULL));
    /* Empty after a wrapped unit: the start again. */
    CHECK_OK(elsi_unitq_reserve(&r, 100, NULL, &seq, iov));
    CHECK(iov[0].iov_base == r.buf);
    CHECK_U64(iov[0].iov_len, ==, 100);
    elsi_unitq_destroy(&r);
}

/* Units handed over (elsi_unitq_reserve_ext()): read in place, their
 * buffers' whole sizes counted against the capacity together with the
 * byte ring's, given back at release, freed by destroy if still held. */
static void ring_units_handed_over(void)
{
    struct elsi_unitq r;
    CHECK_OK(elsi_unitq_init(&r, 100, 8));
    uint64_t seq;
    struct iovec iov[2];
    uint8_t *a = malloc(40), *b = malloc(40);
    CHECK(a != NULL && b != NULL);
    for (int i = 0; i < 40; i++)
        a[i] = (uint8_t)(100 + i);
    /* 30 bytes of a 40-byte buffer: 40 count. */
    CHECK_OK(elsi_unitq_reserve_ext(&r, a, 30, 40, NULL, &seq));
    CHECK_U64(seq, ==, 0);
    elsi_unitq_commit(&r, seq);
    CHECK_U64(elsi_unitq_bytes(&r), ==, 40);
    check_unit_bytes(&r, 0, 100);
    CHECK_INT(elsi_unitq_iov(&r, elsi_unitq_unit(&r, 0), 10, iov), ==, 1);
    CHECK(iov[0].iov_base == a + 10);
    CHECK_U64(iov[0].iov_len, ==, 20);
    /* A ring unit beside it, then no room for a third buffer of 40. */
    CHECK_OK(elsi_unitq_reserve(&r, 50, NULL, &seq, iov));
    fill(iov, 1);
    elsi_unitq_commit(&r, seq);
    CHECK_U64(elsi_unitq_bytes(&r), ==, 90);
    CHECK_INT(elsi_unitq_reserve_ext(&r, b, 40, 40, NULL, &seq), ==, -ENOBUFS);
    CHECK_INT(elsi_unitq_reserve_ext(&r, b, 41, 40, NULL, &seq), ==, ELS_EMSGSIZE);
    CHECK_INT(elsi_unitq_reserve_ext(&r, b, 10, 101, NULL, &seq), ==, ELS_EMSGSIZE);
    /* Released: the buffer comes back, its room with it. */
    uint8_t *ext = NULL;
    size_t ext_size = 0;
    CHECK(elsi_unitq_release(&r, &ext, &ext_size));
    CHECK(ext == a);
    CHECK_U64(ext_size, ==, 40);
    free(a);
    CHECK_U64(elsi_unitq_bytes(&r), ==, 50);
    check_unit_bytes(&r, 1, 1);
    CHECK_OK(elsi_unitq_reserve_ext(&r, b, 40, 40, NULL, &seq));
    elsi_unitq_commit(&r, seq);
    CHECK(elsi_unitq_release(&r, &ext, &ext_size));
    CHECK(ext == NULL);         /* the ring unit's bytes are the ring's */
    CHECK_U64(elsi_unitq_bytes(&r), ==, 40);
    /* b is still held: destroy frees it (ASan would report a leak). */
    elsi_unitq_destroy(&r);
}


/* A unit handed over is let in, and counted, by its buffer's whole size,
 * not by the length of the unit in it: the memory it holds is the
 * buffer. */
static void ring_handed_over_counted_by_size(void)
{
    struct elsi_unitq r;
    CHECK_OK(elsi_unitq_init(&r, 100, 8));
    uint64_t seq;
    struct iovec iov[2];
    CHECK_OK(elsi_unitq_reserve(&r, 50, NULL, &seq, iov));
    elsi_unitq_commit(&r, seq);
    uint8_t *a = malloc(60), *b = malloc(50);
    CHECK(a != NULL && b != NULL);
    /* 30 bytes would fit in the 50 left; their 60-byte buffer does not. */
    CHECK(!elsi_unitq_has_room_ext(&r, 60));
    CHECK_INT(elsi_unitq_reserve_ext(&r, a, 30, 60, NULL, &seq), ==, -ENOBUFS);
    CHECK_U64(elsi_unitq_bytes(&r), ==, 50);
    /* A 50-byte buffer fills the ring, whatever its unit's length. */
    CHECK_OK(elsi_unitq_reserve_ext(&r, b, 30, 50, NULL, &seq));
    elsi_unitq_commit(&r, seq);
    CHECK_U64(elsi_unitq_bytes(&r), ==, 100);
    CHECK_U64(elsi_unitq_memory(&r), ==, 100);
    CHECK(!elsi_unitq_has_room(&r, 1));
    CHECK(!elsi_unitq_has_room_ext(&r, 1));
    CHECK(elsi_unitq_release(&r, NULL, NULL));
    uint8_t *ext = NULL;
    size_t ext_size = 0;
    CHECK(elsi_unitq_release(&r, &ext, &ext_size));
    CHECK(ext == b);
    CHECK_U64(ext_size, ==, 50);
    CHECK_U64(elsi_unitq_bytes(&r), ==, 0);
    free(a);
    free(b);
    elsi_unitq_destroy(&r);
}

/* Note [The queue's memory]: once units are handed over, a copied unit
 * goes to the front rather than touch new bytes of the byte ring, new
 * bytes are touched only within what buffers and spares leave, and
 * buffers and spares fit only beside the bytes touched: touched +
 * buffers + spares never exceeds cap.  (A ring that never had a unit
 * handed over wraps as before: ring_reuses_start_when_empty.) */
static void ring_memory_counts_touched_bytes_and_spares(void)
{
    struct elsi_unitq r;
    struct elsi_pool pool = { 0 };
    CHECK_OK(elsi_unitq_init(&r, 100, 16));
    r.spares = &pool;
    uint64_t s1, s2, s3, s4, sa;
    struct iovec iov[2];
    uint8_t *a = malloc(40);
    CHECK(a != NULL);
    CHECK_OK(elsi_unitq_reserve(&r, 20, NULL, &s1, iov));
    CHECK(iov[0].iov_base == r.buf);
    CHECK_OK(elsi_unitq_reserve(&r, 20, NULL, &s2, iov));
    CHECK(iov[0].iov_base == r.buf + 20);
    CHECK_OK(elsi_unitq_reserve_ext(&r, a, 40, 40, NULL, &sa));
    elsi_unitq_commit(&r, s1);
    elsi_unitq_commit(&r, s2);
    elsi_unitq_commit(&r, sa);
    CHECK_U64(r.touched, ==, 40);
    CHECK_U64(elsi_unitq_memory(&r), ==, 80);
    CHECK(elsi_unitq_release(&r, NULL, NULL));          /* s1 */
    /* 20 bytes: at 40 they would touch new bytes; at the front, where s1
     * was, they do not.  The rest of the lap is jumped over: until s2
     * leaves, nothing more fits. */
    CHECK_OK(elsi_unitq_reserve(&r, 20, NULL, &s3, iov));
    CHECK(iov[0].iov_base == r.buf);
    CHECK_U64(iov[0].iov_len, ==, 20);
    elsi_unitq_commit(&r, s3);
    CHECK_U64(r.touched, ==, 40);
    CHECK_U64(elsi_unitq_memory(&r), ==, 80);
    CHECK(!elsi_unitq_has_room(&r, 1));
    CHECK(elsi_unitq_release(&r, NULL, NULL));          /* s2 */
    /* Where s2 was, 20 bytes fit without touching new ones; more grow the
     * byte ring, but only into what the buffer leaves (to 60). */
    CHECK(elsi_unitq_has_room(&r, 20));
    CHECK(elsi_unitq_has_room(&r, 40));
    CHECK(!elsi_unitq_has_room(&r, 41));
    CHECK(elsi_unitq_has_room_touched(&r, 20));
    CHECK(!elsi_unitq_has_room_touched(&r, 21));
    /* A spare takes the room left: still 20 bytes where s2 was, but no
     * new byte and no buffer fits; without the spare the copy would. */
    elsi_pool_give(&pool, malloc(20), 20, elsi_unitq_spare_room(&r));
    CHECK_U64(pool.n, ==, 1);
    CHECK_U64(elsi_unitq_memory(&r), ==, 100);
    CHECK(elsi_unitq_has_room(&r, 20));
    CHECK(!elsi_unitq_has_room(&r, 21));
    CHECK(elsi_unitq_has_room_without_spares(&r, 21));
    CHECK(!elsi_unitq_has_room_ext(&r, 1));
    CHECK_INT(elsi_unitq_reserve(&r, 21, NULL, &s4, iov), ==, -ENOBUFS);
    /* No room for a second spare. */
    elsi_pool_give(&pool, malloc(20), 20, elsi_unitq_spare_room(&r));
    CHECK_U64(pool.n, ==, 1);
    free(elsi_pool_take(&pool, 20));
    CHECK_OK(elsi_unitq_reserve(&r, 40, NULL, &s4, iov));
    CHECK(iov[0].iov_base == r.buf + 20);
    elsi_unitq_commit(&r, s4);
    CHECK_U64(r.touched, ==, 60);
    CHECK_U64(elsi_unitq_memory(&r), ==, 100);
    /* Touched bytes stay counted after their units leave: releasing every
     * copied unit frees no room for a buffer; releasing the buffer does. */
    uint8_t *ext;
    size_t ext_size;
    CHECK(elsi_unitq_release(&r, &ext, &ext_size));     /* a */
    CHECK(ext == a);
    free(a);
    CHECK(elsi_unitq_release(&r, NULL, NULL));          /* s3 */
    CHECK(elsi_unitq_release(&r, NULL, NULL));          /* s4 */
    CHECK_U64(elsi_unitq_bytes(&r), ==, 0);
    CHECK_U64(elsi_unitq_memory(&r), ==, 60);
    CHECK(elsi_unitq_has_room_ext(&r, 40));
    CHECK(!elsi_unitq_has_room_ext(&r, 41));
    CHECK_U64(elsi_unitq_spare_room(&r), ==, 40);
    elsi_pool_destroy(&pool);
    elsi_unitq_destroy(&r);
}

/* A long mixed run, in the pattern a stalled consumer under policy=drop
 * leaves (the oldest half freed whenever the ring is nearly full, copies
 * of every size between whole buffers, spares kept in whatever room is
 * left): the ring's own count of its memory never exceeds cap, and
 * neither does what the test counts itself: the furthest byte of the
 * byte ring any unit was given (from the iovecs), plus the buffers it
 * handed in and did not get back, plus the spares. */
static void ring_memory_bounded_in_a_long_mixed_run(void)
{
    enum { CAP = 1 << 20, SIZE = 64 << 10 };
    struct elsi_unitq r;
    struct elsi_pool pool = { 0 };
    CHECK_OK(elsi_unitq_init(&r, CAP, 4096));
    r.spares = &pool;
    uint64_t furthest = 0, held_ext = 0, copied = 0, handed = 0;
    uint32_t x = 12345;
    for (unsigned step = 0; step < 20000; step++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        uint64_t seq;
        struct iovec iov[2];
        int rc;
        if (x % 3 == 0) {
            uint8_t *buf = elsi_pool_take(&pool, SIZE);
            if (buf == NULL)
                buf = malloc(SIZE);
            CHECK(buf != NULL);
            rc = elsi_unitq_reserve_ext(&r, buf, SIZE / 2 + x % (SIZE / 2), SIZE,
                                       NULL, &seq);
            if (rc == 0) {
                held_ext += SIZE;
                handed++;
            } else {
                elsi_pool_give(&pool, buf, SIZE, elsi_unitq_spare_room(&r));
            }
        } else {
            size_t len = 1 + (x >> 4) % (SIZE / 2);
            rc = elsi_unitq_reserve(&r, len, NULL, &seq, iov);
            if (rc == 0) {
                copied++;
                for (int i = 0; i < 2; i++) {
                    uint64_t end = (uint64_t)((uint8_t *)iov[i].iov_base - r.buf) +
                                   iov[i].iov_len;
                    if (iov[i].iov_len > 0 && end > furthest)
                        furthest = end;
                }
            }
        }
        if (rc == 0)
            elsi_unitq_commit(&r, seq);
        else
            CHECK_INT(rc, ==, -ENOBUFS);
        if (rc != 0 || elsi_unitq_bytes(&r) + 2 * SIZE > CAP) {
            uint64_t target = elsi_unitq_bytes(&r) / 2;
            while (elsi_unitq_bytes(&r) > target) {
                uint8_t *ext;
                size_t ext_size;
                CHECK(elsi_unitq_release(&r, &ext, &ext_size));
                held_ext -= ext_size;
                elsi_pool_give(&pool, ext, ext_size, elsi_unitq_spare_room(&r));
            }
        }
        CHECK_U64(r.touched, >=, furthest);
        CHECK_U64(r.ext_bytes, ==, held_ext);
        CHECK_U64(elsi_unitq_memory(&r), <=, CAP);
        CHECK_MSG(furthest + held_ext + elsi_pool_bytes(&pool) <= CAP,
                  "step %u: %" PRIu64 " bytes of the byte ring used, %" PRIu64
                  " in buffers, %" PRIu64 " in spares: over %d", step, furthest,
                  held_ext, elsi_pool_bytes(&pool), CAP);
    }
    /* The run did what it was meant to: both ways in, many times over. */
    CHECK_U64(copied, >, 1000);
    CHECK_U64(handed, >, 1000);
    elsi_pool_destroy(&pool);
    elsi_unitq_destroy(&r);
}

static const struct check_case cases[] = {
    CHECK_CASE(ring_basic),
    CHECK_CASE(ring_wraps),
    CHECK_CASE(ring_too_big),
    CHECK_CASE(ring_descriptors_run_out),
    CHECK_CASE(ring_out_of_order_commit),
    CHECK_CASE(ring_bad_init),
    CHECK_CASE(ring_reuses_start_when_empty),
    CHECK_CASE(ring_units_handed_over),
    CHECK_CASE(ring_handed_over_counted_by_size),
    CHECK_CASE(ring_memory_counts_touched_bytes_and_spares),
    CHECK_CASE(ring_memory_bounded_in_a_long_mixed_run),
};

CHECK_MAIN(cases)
