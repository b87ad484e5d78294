/*
 * test_producer.c: the producer side (lib/queue/producer.c): what
 * els_writer_write() returns and counts for units it cannot take, and
 * writes racing els_writer_close(): a producer still copying a unit when
 * close begins keeps the writer alive until it has left (Note [Producers
 * in flight]); a write that starts once close has begun is refused with
 * ELS_ESTOPPED and not counted.  Units handed over
 * (els_writer_hand_over(), Note [Units handed over]): a full buffer is
 * kept and the producer gets another, a small unit is copied, a dropped
 * unit leaves the producer its buffer, and the consumer receives every
 * byte either way.  Run under ThreadSanitizer by scripts/sanitize.sh.
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

/* A malloc'd buffer of size bytes holding a block of capability cap (its
 * events tagged tag) of at least min_len bytes; *len gets its length. */
static void *block_buffer(size_t size, uint16_t cap, const char *tag,
                          size_t min_len, size_t *len)
{
    struct evgen_buf b = evgen_block(cap, 1000, 1, tag, min_len);
    CHECK(b.len <= size);
    void *buf = malloc(size);
    CHECK(buf != NULL);
    memcpy(buf, b.p, b.len);
    *len = b.len;
    evgen_free(&b);
    return buf;
}

static void hand_over_delivers_every_byte(void)
{
    int fd;
    struct evgen_buf h, expect = { 0 };
    struct els_writer *w = open_unix_with_client("buffer=16M", &fd, &h);
    evgen_put(&expect, h.p, h.len);
    struct reader rd;
    reader_start(&rd, fd, false);
    const size_t size = 256 * 1024;
    void *held[40];
    size_t n_held = 0;
    for (unsigned i = 0; i < 40; i++) {
        char tag[32];
        snprintf(tag, sizeof tag, "full %u", i);
        size_t len;
        void *buf = block_buffer(size, (uint16_t)(i % 2), tag, size - 200, &len);
        void *was = buf;
        evgen_put(&expect, buf, len);
        CHECK_INT(els_writer_hand_over(w, &buf, len, size, ELS_REASON_BUFFER_FULL), ==, 0);
        /* Kept: the producer holds another buffer now. */
        CHECK(buf != was);
        held[n_held++] = buf;
    }
    /* A small unit is copied: the producer keeps its buffer. */
    size_t small_len;
    void *small = block_buffer(size, 0, "small", 0, &small_len);
    void *was = small;
    evgen_put(&expect, small, small_len);
    CHECK_INT(els_writer_hand_over(w, &small, small_len, size, ELS_REASON_FLUSH), ==, 0);
    CHECK(small == was);
    struct els_stats s = stats_of(w);
    CHECK_U64(s.units_handed_over, ==, 40);
    CHECK_U64(s.units_accepted, ==, 41);
    CHECK_INT(els_writer_hand_over(w, NULL, 1, size, ELS_REASON_FLUSH), ==, ELS_EINVAL);
    CHECK_INT(els_writer_hand_over(w, &small, size + 1, size, ELS_REASON_FLUSH), ==, ELS_EINVAL);
    write_ok(w, evgen_data_end, 2);
    evgen_put(&expect, evgen_data_end, 2);
    CHECK_OK(els_writer_close(w));
    reader_join(&rd);
    CHECK_U64(rd.got.len, ==, expect.len);
    CHECK(memcmp(rd.got.p, expect.p, expect.len) == 0);
    check_stream_parses(&rd.got, true);
    /* Every buffer the producer was given is its own to free. */
    for (size_t i = 0; i < n_held; i++)
        free(held[i]);
    free(small);
    evgen_free(&rd.got);
    evgen_free(&expect);
    evgen_free(&h);
}

/* The sink's write is held, so nothing is released: the ring fills with
 * handed-over buffers (counted by their whole size) and the next unit,
 * under policy=drop, is dropped and stays the producer's. */
static void hand_over_dropped_keeps_buffer(void)
{
    CHECK_OK(els_sink_register(&slow_sink));
    atomic_store(&slow_sink_hold, true);
    struct els_writer *w = open_ok("test-slow:?buffer=8M&policy=drop&linger=0.2");
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    const size_t size = 1024 * 1024;
    void *held[9];
    unsigned kept = 0, dropped = 0;
    for (unsigned i = 0; i < 9; i++) {
        size_t len;
        void *buf = block_buffer(size, 0, "drop", size / 2 + 16, &len);
        void *was = buf;
        int r = els_writer_hand_over(w, &buf, len, size, ELS_REASON_BUFFER_FULL);
        CHECK(r == 0 || r == 1);
        if (r == 1) {
            CHECK(buf == was);      /* not kept: still the producer's */
            dropped++;
        } else {
            CHECK(buf != was);
            kept++;
        }
        held[i] = buf;
    }
    /* 8M holds eight 1M buffers: the ninth finds no room. */
    CHECK_INT(kept, ==, 8);
    CHECK_INT(dropped, ==, 1);
    struct els_stats s = stats_of(w);
    CHECK_U64(s.units_handed_over, ==, 8);
    CHECK_U64(s.units_dropped[ELS_DROP_QUEUE_FULL], ==, 1);
    check_conservation(&s);
    atomic_store(&slow_sink_hold, false);
    CHECK_OK(els_writer_close(w));
    for (unsigned i = 0; i < 9; i++)
        free(held[i]);
    evgen_free(&h);
}

/* A ring of fewer than eight buffers copies every unit: handed over,
 * each would take a whole buffer's room. */
static void hand_over_small_ring_copies(void)
{
    CHECK_OK(els_sink_register(&slow_sink));
    struct els_writer *w = open_ok("test-slow:?buffer=7M");
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    const size_t size = 1024 * 1024;
    size_t len;
    void *buf = block_buffer(size, 0, "copied", size - 100, &len);
    void *was = buf;
    CHECK_INT(els_writer_hand_over(w, &buf, len, size, ELS_REASON_BUFFER_FULL), ==, 0);
    CHECK(buf == was);
    CHECK_U64(stats_of(w).units_handed_over, ==, 0);
    CHECK_OK(els_writer_close(w));
    free(buf);
    evgen_free(&h);
}

static const struct check_case cases[] = {
    CHECK_CASE(writer_unit_too_big),
    CHECK_CASE(producer_copy_in_flight_at_close),
    CHECK_CASE_T(producer_many_writers_racing_close, 60),
    CHECK_CASE(producer_write_after_close_began),
    CHECK_CASE(hand_over_delivers_every_byte),
    CHECK_CASE(hand_over_dropped_keeps_buffer),
    CHECK_CASE(hand_over_small_ring_copies),
};

CHECK_MAIN(cases)
