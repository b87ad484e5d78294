/*
 * test_pool.c: the spare buffers (lib/queue/pool.c) on their own: a
 * buffer given back is kept only while the spares, it included, fit in
 * the room the caller gives and within ELSI_POOL_KEEP; taken back most
 * recent first and only at the size kept; a new size hands back every
 * spare of the old one, and buffers of the old size given back later are
 * not kept.  What is kept is counted twice: by the pool (elsi_pool_bytes)
 * and by the buffers the test can take back out of it.
 */
#include <stdlib.h>

#include "check.h"
#include "queue/pool.h"

/* Take every spare of size out of the pool (freeing it); how many. */
static unsigned take_all(struct elsi_pool *p, size_t size)
{
    unsigned n = 0;
    uint8_t *b;
    while ((b = elsi_pool_take(p, size)) != NULL) {
        free(b);
        n++;
    }
    return n;
}

static void pool_keeps_within_room(void)
{
    struct elsi_pool p = { 0 };
    /* Room for two and a half buffers of 10: two are kept, the others
     * freed (LeakSanitizer would report one that is neither). */
    for (int i = 0; i < 4; i++)
        elsi_pool_give(&p, malloc(10), 10, 25);
    CHECK_U64(p.n, ==, 2);
    CHECK_U64(elsi_pool_bytes(&p), ==, 20);
    /* Exactly the room: kept. */
    elsi_pool_give(&p, malloc(10), 10, 30);
    CHECK_U64(elsi_pool_bytes(&p), ==, 30);
    /* No room at all: freed, however few are kept. */
    elsi_pool_give(&p, malloc(10), 10, 0);
    CHECK_U64(p.n, ==, 3);
    CHECK_U64(take_all(&p, 10), ==, 3);
    CHECK_U64(elsi_pool_bytes(&p), ==, 0);
    elsi_pool_give(&p, malloc(10), 10, 9);
    CHECK_U64(p.n, ==, 0);
    elsi_pool_give(&p, NULL, 10, 100);
    CHECK_U64(p.n, ==, 0);
    elsi_pool_destroy(&p);
}

static void pool_keeps_at_most_keep(void)
{
    struct elsi_pool p = { 0 };
    for (int i = 0; i < ELSI_POOL_KEEP + 5; i++)
        elsi_pool_give(&p, malloc(8), 8, UINT64_MAX);
    CHECK_U64(p.n, ==, ELSI_POOL_KEEP);
    CHECK_U64(take_all(&p, 8), ==, ELSI_POOL_KEEP);
    elsi_pool_destroy(&p);
}

static void pool_takes_most_recent_of_its_size(void)
{
    struct elsi_pool p = { 0 };
    uint8_t *a = malloc(16), *b = malloc(16);
    elsi_pool_give(&p, a, 16, 100);
    elsi_pool_give(&p, b, 16, 100);
    CHECK(elsi_pool_take(&p, 8) == NULL);   /* not a size it keeps */
    CHECK(elsi_pool_take(&p, 16) == b);
    CHECK(elsi_pool_take(&p, 16) == a);
    CHECK(elsi_pool_take(&p, 16) == NULL);
    free(a);
    free(b);
    /* A buffer of another size is not kept. */
    elsi_pool_give(&p, malloc(8), 8, 100);
    CHECK_U64(p.n, ==, 0);
    elsi_pool_destroy(&p);
}

/* The RTS's buffer size changed: the producers ask for another size.  The
 * old spares are handed back whole, buffers of the old size that come
 * back later are freed, and the new size is kept from then on. */
static void pool_new_size_lets_old_spares_go(void)
{
    struct elsi_pool p = { 0 };
    for (int i = 0; i < 3; i++)
        elsi_pool_give(&p, malloc(32), 32, 1000);
    CHECK_U64(elsi_pool_bytes(&p), ==, 96);
    uint8_t *old[ELSI_POOL_KEEP];
    CHECK_U64(elsi_pool_resize(&p, 32, old), ==, 0);   /* the same size */
    CHECK_U64(p.n, ==, 3);
    CHECK(elsi_pool_take(&p, 16) == NULL);
    unsigned n_old = elsi_pool_resize(&p, 16, old);
    CHECK_U64(n_old, ==, 3);
    CHECK_U64(elsi_pool_bytes(&p), ==, 0);
    for (unsigned i = 0; i < n_old; i++)
        free(old[i]);
    elsi_pool_give(&p, malloc(32), 32, 1000);   /* an old unit released */
    CHECK_U64(p.n, ==, 0);
    elsi_pool_give(&p, malloc(16), 16, 1000);
    CHECK_U64(elsi_pool_bytes(&p), ==, 16);
    CHECK_U64(take_all(&p, 16), ==, 1);
    elsi_pool_destroy(&p);
}

static void pool_destroy_frees_spares(void)
{
    struct elsi_pool p = { 0 };
    for (int i = 0; i < 5; i++)
        elsi_pool_give(&p, malloc(64), 64, 1000);
    CHECK_U64(p.n, ==, 5);
    elsi_pool_destroy(&p);      /* LeakSanitizer checks the rest */
    CHECK_U64(p.n, ==, 0);
}

static const struct check_case cases[] = {
    CHECK_CASE(pool_keeps_within_room),
    CHECK_CASE(pool_keeps_at_most_keep),
    CHECK_CASE(pool_takes_most_recent_of_its_size),
    CHECK_CASE(pool_new_size_lets_old_spares_go),
    CHECK_CASE(pool_destroy_frees_spares),
};

CHECK_MAIN(cases)
