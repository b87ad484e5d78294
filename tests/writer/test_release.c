/*
 * test_release.c: the release policy (lib/writer/release.c) and what it
 * means for producers: under policy=drop a slow consumer is cut loose and
 * told in-band what it missed while the others get everything, and drops
 * are counted and announced; under policy=block nothing is lost, and
 * block:MS drops after MS.  Only trusted consumers may hold producers
 * back under block (Note [Trusted consumers]); a TCP client that never
 * reads is served as under drop.  Losses are named by cause (a slow
 * consumer's are slow-consumer).  The counters keep accepted == sent +
 * dropped + queued at every instant under concurrent producers.
 */
#include "check.h"
#include "testutil.h"
#include "writer/writer_test.h"

/*
 * One consumer reads, another does not read at all.  The reader must get
 * every unit; the stalled one is cut loose, and once it reads again its
 * stream is still well formed and tells it what it missed.
 */
static void writer_slow_consumer_cut_loose(void)
{
    const char *sock;
    struct els_writer *w = open_at("unix", "s.sock", "buffer=4M&policy=drop", &sock);
    struct reader fast, slow;
    reader_start(&fast, unix_connect(sock), false);
    reader_start(&slow, unix_connect(sock), true);
    wait_consumers(w, 2);

    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    size_t expect_fast = h.len;
    for (unsigned i = 0; i < 300; i++) {
        struct evgen_buf b = evgen_block(0, i * 1000, 0, "x", 64 * 1024);
        write_ok(w, b.p, b.len);
        expect_fast += b.len;
        free(b.p);
        /* Pace the producer by the fast consumer, so that only the stalled
         * one can be the reason for a loss. */
        WAIT_UNTIL(atomic_load(&fast.len) >= expect_fast, 1,
                   "fast consumer stuck at %zu of %zu",
                   atomic_load(&fast.len), expect_fast);
    }
    write_ok(w, evgen_data_end, 2);
    struct els_stats s = stats_of(w);
    check_conservation(&s);
    CHECK_U64(total_dropped(&s), ==, 0);
    CHECK_U64(s.consumer_lost_units, >, 0);
    atomic_store(&slow.paused, false);
    CHECK_OK(els_writer_close(w));
    reader_join(&fast);
    reader_join(&slow);

    CHECK_U64(fast.got.len, ==, expect_fast + 2);
    check_stream_parses(&fast.got, true);
    check_stream_parses(&slow.got, true);
    CHECK(contains(&slow.got, "missed"));
    CHECK(contains(&slow.got, "slow-consumer"));
    uint64_t units, notes;
    count_blocks(&slow.got, h.len, &units, &notes);
    CHECK_U64(units, <, 300);
    CHECK_U64(notes, >=, 1);
    evgen_free(&fast.got);
    evgen_free(&slow.got);
    evgen_free(&h);
}

static void writer_conservation_under_producers(void)
{
    CHECK_OK(els_sink_register(&slow_sink));
    /* The sink takes nothing until every producer is done (it sits in its
     * first write), so 4 x 300 units of 16 KiB meet a 3 MiB queue that
     * nobody drains: drops are certain, whatever the relative speeds of
     * the threads (under TSan a slow sink need not be slower). */
    atomic_store(&slow_sink_hold, true);
    struct els_stats s;
    run_producers("test-slow:?buffer=3M&policy=drop", 4, 300, &s);
    CHECK_U64(s.units_accepted, ==, 4 * 300 + 1);
    CHECK_U64(total_dropped(&s), >, 0);
    /* Everything the sink got: the header, then units and notes.  Each
     * unit counted as sent (or still queued when stats were taken, then
     * sent at close) reached it exactly once. */
    struct evgen_buf h = evgen_header();
    CHECK(memcmp(slow_sink_got.p, h.p, h.len) == 0);
    check_stream_parses(&slow_sink_got, true);
    uint64_t units, notes;
    count_blocks(&slow_sink_got, h.len, &units, &notes);
    CHECK_U64(units + 1, >=, s.units_sent);  /* +1: DATA_END is not a block */
    CHECK_U64(units + 1, <=, s.units_sent + s.units_queued);
    CHECK_U64(notes, >, 0);                  /* drops are announced */
    /* ...with their figures: the only consumer is told of every unit
     * dropped, and of every byte. */
    uint64_t noted_units, noted_bytes;
    sum_loss_notes(&slow_sink_got, &noted_units, &noted_bytes);
    CHECK_U64(noted_units, ==, total_dropped(&s));
    CHECK_U64(noted_bytes, ==, total_dropped_bytes(&s));
    evgen_free(&h);
}

static void writer_block_policy_loses_nothing(void)
{
    CHECK_OK(els_sink_register(&slow_sink));
    atomic_store(&slow_sink_delay_ms, 1);
    struct els_stats s;
    run_producers("test-slow:?buffer=3M&policy=block", 2, 200, &s);
    CHECK_U64(total_dropped(&s), ==, 0);
    uint64_t units, notes;
    struct evgen_buf h = evgen_header();
    count_blocks(&slow_sink_got, h.len, &units, &notes);
    CHECK_U64(units, ==, 400);
    CHECK_U64(notes, ==, 0);
    check_stream_parses(&slow_sink_got, true);
    evgen_free(&h);
}

static void writer_block_timeout(void)
{
    CHECK_OK(els_sink_register(&slow_sink));
    atomic_store(&slow_sink_hold, true);
    struct els_writer *w = open_ok("test-slow:?buffer=3M&policy=block:20");
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    struct evgen_buf b = evgen_block(0, 1, 0, "x", 512 * 1024);
    int dropped = 0;
    for (unsigned i = 0; i < 12; i++)
        if (els_writer_write(w, b.p, b.len) == 1)
            dropped++;
    CHECK_INT(dropped, >, 0);
    struct els_stats s = stats_of(w);
    CHECK_U64(s.units_dropped[ELS_DROP_BLOCK_TIMEOUT], ==, (uint64_t)dropped);
    check_conservation(&s);
    atomic_store(&slow_sink_hold, false);
    write_ok(w, evgen_data_end, 2);
    CHECK_OK(els_writer_close(w));
    check_stream_parses(&slow_sink_got, true);
    CHECK(contains(&slow_sink_got, "block-timeout"));
    free(b.p);
    evgen_free(&h);
}

/* With one consumer that stalls, units it was cut loose past are dropped
 * as slow-consumer (not sink-error). */
static void release_slow_consumer_cause(void)
{
    int fd;
    struct evgen_buf h;
    struct els_writer *w = open_unix_with_client("buffer=4M&policy=drop", &fd, &h);
    struct evgen_buf b = evgen_block(0, 1, 0, "x", 256 * 1024);
    for (unsigned i = 0; i < 60; i++)
        CHECK_INT(els_writer_write(w, b.p, b.len), >=, 0);
    WAIT_UNTIL(stats_of(w).units_dropped[ELS_DROP_SLOW_CONSUMER] > 0, 1,
               "nothing dropped as slow-consumer");
    struct els_stats s = stats_of(w);
    CHECK_U64(s.units_dropped[ELS_DROP_SINK_ERROR], ==, 0);
    check_conservation(&s);
    CHECK_OK(els_writer_close(w));
    close(fd);
    free(b.p);
    evgen_free(&h);
}

/* policy=block and a TCP client that connects and never reads: it may not
 * hold the program back.  Every write returns (queued or dropped), the
 * client is cut loose as under drop. */
static void release_untrusted_consumer_cannot_block(void)
{
    struct els_writer *w = open_ok("tcp:127.0.0.1:0?buffer=4M&policy=block");
    char ep[256];
    CHECK(els_writer_endpoint(w, ep, sizeof ep) > 0);
    unsigned port = (unsigned)atoi(strrchr(ep, ':') + 1);
    int fd = tu_connect_tcp("127.0.0.1", port, TU_WAIT_MS);
    CHECK(fd >= 0);
    wait_consumers(w, 1);
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    struct evgen_buf b = evgen_block(0, 1, 0, "x", 256 * 1024);
    /* 15 MB through a 4 MB queue to a client that reads nothing: without
     * the rule the harness's timeout fails this case. */
    for (unsigned i = 0; i < 60; i++)
        CHECK_INT(els_writer_write(w, b.p, b.len), ==, 0);
    struct els_stats s = stats_of(w);
    CHECK_U64(s.units_dropped[ELS_DROP_SLOW_CONSUMER], >, 0);
    check_conservation(&s);
    CHECK_OK(els_writer_close(w));
    close(fd);
    free(b.p);
    evgen_free(&h);
}

struct counted_producer {
    struct els_writer *w;
    const struct evgen_buf *unit;
    unsigned units;
    atomic_uint written;
    pthread_t thread;
};

static void *counted_producer_main(void *arg)
{
    struct counted_producer *cp = arg;
    for (unsigned i = 0; i < cp->units; i++) {
        int r = els_writer_write(cp->w, cp->unit->p, cp->unit->len);
        CHECK_MSG(r == 0, "write returned %d", r);
        atomic_fetch_add(&cp->written, 1);
    }
    return NULL;
}

/* policy=block and a UNIX-socket client of this user that pauses: it does
 * hold the program back (the queue fills and stays full, the producer
 * waits), and once it reads it gets every unit, nothing dropped. */
static void release_trusted_consumer_holds_back(void)
{
    const char *sock;
    struct els_writer *w = open_at("unix", "s.sock", "buffer=4M&policy=block", &sock);
    struct reader rd;
    reader_start(&rd, unix_connect(sock), true);
    wait_consumers(w, 1);
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    struct evgen_buf b = evgen_block(0, 1, 0, "x", 256 * 1024);
    struct counted_producer cp = { .w = w, .unit = &b, .units = 40 };
    CHECK_OK(pthread_create(&cp.thread, NULL, counted_producer_main, &cp));
    /* The queue fills up (under drop it would be cut back to half). */
    WAIT_UNTIL(stats_of(w).bytes_queued + b.len > 4u << 20, 1,
               "the queue did not fill");
    CHECK_INT(atomic_load(&cp.written), <, 40);
    atomic_store(&rd.paused, false);
    pthread_join(cp.thread, NULL);
    write_ok(w, evgen_data_end, 2);
    struct els_stats s = stats_of(w);
    CHECK_U64(total_dropped(&s), ==, 0);
    CHECK_U64(s.consumer_lost_units, ==, 0);
    CHECK_OK(els_writer_close(w));
    reader_join(&rd);
    check_stream_parses(&rd.got, true);
    uint64_t units, notes;
    count_blocks(&rd.got, h.len, &units, &notes);
    CHECK_U64(units, ==, 40);
    CHECK_U64(notes, ==, 0);
    free(b.p);
    evgen_free(&rd.got);
    evgen_free(&h);
}

static const struct check_case cases[] = {
    CHECK_CASE_T(writer_slow_consumer_cut_loose, 60),
    CHECK_CASE_T(writer_conservation_under_producers, 60),
    CHECK_CASE_T(writer_block_policy_loses_nothing, 60),
    CHECK_CASE(writer_block_timeout),
    CHECK_CASE(release_slow_consumer_cause),
    CHECK_CASE(release_untrusted_consumer_cannot_block),
    CHECK_CASE(release_trusted_consumer_holds_back),
};

CHECK_MAIN(cases)
