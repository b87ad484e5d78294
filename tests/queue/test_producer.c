/*
 * test_producer.c: the producer side (lib/queue/producer.c): what
 * els_writer_write() returns and counts for units it cannot take, and
 * writes racing els_writer_close(): a producer still copying a unit when
 * close begins keeps the writer alive until it has left (Note [Producers
 * in flight]); a write that starts once close has begun is refused with
 * ELS_ESTOPPED and not counted.  Run under ThreadSanitizer by
 * scripts/sanitize.sh.
 */
#include "check.h"
#include "deliver/writer_test.h"

static void writer_unit_too_big(void)
{
    CHECK_OK(els_sink_register(&slow_sink));
    struct els_writer *w = open_ok("test-slow:?buffer=3M");
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    size_t big = 4 * 1024 * 1024;
    uint8_t *p = calloc(1, big);
    p[1] = 18;
    CHECK_INT(els_writer_write(w, p, big), ==, 1);
    struct els_stats s = stats_of(w);
    CHECK_U64(s.units_dropped[ELS_DROP_TOO_BIG], ==, 1);
    CHECK_U64(s.bytes_dropped[ELS_DROP_TOO_BIG], ==, big);
    check_conservation(&s);
    CHECK_INT(els_writer_write(w, NULL, 1), ==, ELS_EINVAL);
    CHECK_INT(els_writer_write(w, p, 0), ==, ELS_EINVAL);
    CHECK_OK(els_writer_close(w));
    free(p);
    evgen_free(&h);
}

/* A unit of len bytes that classifies as a block of capability 0. */
static uint8_t *big_unit(size_t len)
{
    uint8_t *p = calloc(1, len);
    CHECK(p != NULL);
    p[1] = 18;
    return p;
}

struct one_write {
    struct els_writer *w;
    const uint8_t *unit;
    size_t len;
    int result;
    pthread_t thread;
};

static void *one_write_main(void *arg)
{
    struct one_write *ow = arg;
    ow->result = els_writer_write(ow->w, ow->unit, ow->len);
    return NULL;
}

/*
 * A producer is copying a large unit (it was accepted: its space is
 * reserved) when close begins.  Close must wait for it to commit before
 * freeing the ring it copies into; before that rule the ring was freed
 * under the copy (a crash, or a report from ASan/TSan).
 */
static void producer_copy_in_flight_at_close(void)
{
    const char *sock = check_path("s.sock");
    char spec[600];
    snprintf(spec, sizeof spec, "unix:%s?buffer=96M", sock);
    struct els_writer *w = open_ok(spec);
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    size_t len = 90u << 20;
    struct one_write ow = { .w = w, .unit = big_unit(len), .len = len };
    CHECK_OK(pthread_create(&ow.thread, NULL, one_write_main, &ow));
    /* Accepted means reserved: the copy is under way (or done). */
    WAIT_UNTIL(stats_of(w).units_accepted == 1, 0, "the unit was not accepted");
    CHECK_OK(els_writer_close(w));
    pthread_join(ow.thread, NULL);
    CHECK_INT(ow.result, ==, 0);
    free((void *)ow.unit);
    evgen_free(&h);
}

/* Many producers, each with one large unit, all inside
 * els_writer_write() (accepted, or waiting for room) when close begins. */
static void producer_many_writers_racing_close(void)
{
    for (unsigned round = 0; round < 4; round++) {
        const char *sock = check_path("s.sock");
        char spec[600];
        snprintf(spec, sizeof spec, "unix:%s?buffer=40M&policy=drop", sock);
        struct els_writer *w = open_ok(spec);
        struct evgen_buf h = evgen_header();
        write_ok(w, h.p, h.len);
        enum { N = 8 };
        size_t len = 8u << 20;
        struct one_write ow[N];
        uint8_t *unit = big_unit(len);
        for (unsigned i = 0; i < N; i++) {
            ow[i] = (struct one_write){ .w = w, .unit = unit, .len = len };
            CHECK_OK(pthread_create(&ow[i].thread, NULL, one_write_main, &ow[i]));
        }
        /* Every producer has taken its unit's fate (queued or dropped at
         * the door) once all N are accepted. */
        WAIT_UNTIL(stats_of(w).units_accepted == N, 0, "not all accepted");
        CHECK_OK(els_writer_close(w));
        for (unsigned i = 0; i < N; i++) {
            pthread_join(ow[i].thread, NULL);
            CHECK_MSG(ow[i].result == 0 || ow[i].result == 1,
                      "write returned %d", ow[i].result);
        }
        free(unit);
        evgen_free(&h);
    }
}

/* Producers that keep writing while close runs: once close has begun,
 * every write returns ELS_ESTOPPED and is not counted.  The sink holds the
 * writer thread in its write() so that close is still running (it waits
 * up to linger=) while the producers find out. */
struct until_stopped {
    struct els_writer *w;
    unsigned refused;
    uint64_t accepted_ok;
    pthread_t thread;
};

static void *until_stopped_main(void *arg)
{
    struct until_stopped *us = arg;
    struct evgen_buf b = evgen_block(1, 1, 4, "late", 0);
    for (;;) {
        int r = els_writer_write(us->w, b.p, b.len);
        if (r == ELS_ESTOPPED)
            break;
        CHECK_MSG(r == 0 || r == 1, "write returned %d", r);
        us->accepted_ok++;
        check_sleep_ms(1);
    }
    /* Close has begun: every later write is refused too. */
    for (unsigned i = 0; i < 100; i++)
        if (els_writer_write(us->w, b.p, b.len) == ELS_ESTOPPED)
            us->refused++;
    free(b.p);
    return NULL;
}

struct closer {
    struct els_writer *w;
    int result;
    pthread_t thread;
};

static void *closer_main(void *arg)
{
    struct closer *c = arg;
    c->result = els_writer_close(c->w);
    return NULL;
}

static void producer_write_after_close_began(void)
{
    CHECK_OK(els_sink_register(&slow_sink));
    atomic_store(&slow_sink_hold, true);
    struct els_writer *w = open_ok("test-slow:?linger=20");
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    struct until_stopped us[4];
    for (unsigned i = 0; i < 4; i++) {
        us[i] = (struct until_stopped){ .w = w };
        CHECK_OK(pthread_create(&us[i].thread, NULL, until_stopped_main, &us[i]));
    }
    struct closer c = { .w = w };
    CHECK_OK(pthread_create(&c.thread, NULL, closer_main, &c));
    for (unsigned i = 0; i < 4; i++) {
        pthread_join(us[i].thread, NULL);
        CHECK_INT(us[i].refused, ==, 100);
    }
    atomic_store(&slow_sink_hold, false);
    pthread_join(c.thread, NULL);
    CHECK_OK(c.result);
    /* What the sink got is a well-formed stream of the accepted units. */
    check_stream_parses(&slow_sink_got, false);
    evgen_free(&h);
}

static const struct check_case cases[] = {
    CHECK_CASE(writer_unit_too_big),
    CHECK_CASE(producer_copy_in_flight_at_close),
    CHECK_CASE_T(producer_many_writers_racing_close, 60),
    CHECK_CASE(producer_write_after_close_began),
};

CHECK_MAIN(cases)
