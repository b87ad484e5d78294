/*
 * test_writer.c: the writer's life (lib/writer/writer.c): open errors,
 * wait= for a first consumer, stop with a consumer that never reads, and
 * fork (the child's copy drops its units and leaves the parent's endpoint
 * and consumers alone).  Stop always finishes by its deadline (linger=),
 * whatever the consumers and the sink do (Note [Stop deadline]), and
 * reports what was lost: consumers still behind, units never consumed.
 * A join snapshot refused for want of room is asked for again (Note
 * [Asking again for a join snapshot]).  The counters are copied into no
 * more than the caller's struct els_stats.
 */
#include "check.h"
#include "testutil.h"
#include "writer/writer_test.h"

/* A consumer that never reads is still behind at the stop deadline: close
 * returns anyway, its stream is a well-formed prefix without the end
 * marker, and the exit report says so. */
static void writer_stop_with_stalled_consumer(void)
{
    tu_log_capture();
    int fd;     /* never reads until close returned */
    struct evgen_buf h;
    struct els_writer *w = open_unix_with_client("buffer=4M&linger=0.2", &fd, &h);
    struct evgen_buf b = evgen_block(0, 1, 0, "x", 256 * 1024);
    for (unsigned i = 0; i < 40; i++)
        els_writer_write(w, b.p, b.len);
    els_writer_write(w, evgen_data_end, 2);
    /* Returns after linger= even though nobody reads (the harness's
     * timeout fails the case if it hangs). */
    CHECK_OK(els_writer_close(w));
    CHECK_MSG(tu_log_contains("1 consumers were still behind when linger= ran "
                              "out"), "no report of the consumer left behind");
    struct reader rd;
    reader_start(&rd, fd, false);
    reader_join(&rd);
    /* What it got is a well-formed prefix. */
    check_stream_parses(&rd.got, false);
    free(b.p);
    evgen_free(&rd.got);
    evgen_free(&h);
}

/* The linger loss has a size: each consumer still behind at the stop
 * deadline is named with the units it did not receive in full and the
 * bytes of them it did not receive, and the totals are in the report and
 * in els_stats_format()'s figures.  Nothing is cut loose here (the stream
 * fits the queue), so what it missed is exactly the stream minus what it
 * received. */
static void writer_linger_loss_has_size(void)
{
    tu_log_capture();
    int fd;     /* never reads until close returned */
    struct evgen_buf h;
    struct els_writer *w = open_unix_with_client("buffer=8M&linger=0.2", &fd, &h);
    struct evgen_buf all = { 0 };
    evgen_put(&all, h.p, h.len);
    size_t ends[11];
    for (unsigned i = 0; i < 10; i++) {
        struct evgen_buf b = evgen_block(0, i, 0, "x", 256 * 1024);
        write_expect(w, &all, b.p, b.len);
        ends[i] = all.len;
        free(b.p);
    }
    write_expect(w, &all, evgen_data_end, 2);
    ends[10] = all.len;
    CHECK_OK(els_writer_close(w));
    struct reader rd;
    reader_start(&rd, fd, false);
    reader_join(&rd);
    CHECK(rd.got.len < all.len);
    CHECK(memcmp(rd.got.p, all.p, rd.got.len) == 0);   /* nothing cut */
    uint64_t units = 0;
    for (unsigned i = 0; i < 11; i++)
        units += ends[i] > rd.got.len;
    uint64_t bytes = all.len - rd.got.len;
    char want[256];
    snprintf(want, sizeof want, "1 consumers were still behind when linger= "
             "ran out, missing %llu units (%llu bytes) in all (consumer ",
             (unsigned long long)units, (unsigned long long)bytes);
    CHECK_MSG(tu_log_contains(want), "no report \"%s\"", want);
    snprintf(want, sizeof want, " missed %llu units (%llu bytes)): their "
             "streams end without the end marker",
             (unsigned long long)units, (unsigned long long)bytes);
    CHECK_MSG(tu_log_contains(want), "no report \"%s\"", want);

    /* The one-line summary carries the same figures. */
    struct els_stats s = { .consumers_behind_at_stop = 1,
                           .behind_at_stop_units = units,
                           .behind_at_stop_bytes = bytes };
    char line[512];
    CHECK(els_stats_format(&s, line, sizeof line) > 0);
    snprintf(want, sizeof want, "behind at stop 1 consumers, %llu units, %llu "
             "bytes", (unsigned long long)units, (unsigned long long)bytes);
    CHECK_MSG(strstr(line, want) != NULL, "summary \"%s\" lacks \"%s\"",
              line, want);
    evgen_free(&rd.got);
    evgen_free(&all);
    evgen_free(&h);
}

/* struct els_stats is caller-allocated and append-only: a caller built
 * against an older, smaller struct passes its size and gets the fields
 * it knows, with nothing written past it (canary bytes); a newer, larger
 * one gets zeros in the fields this library lacks, and nothing past its
 * size either. */
static void stats_sized_writes_no_more_than_asked(void)
{
    int fd;
    struct evgen_buf h;
    struct els_writer *w = open_unix_with_client("", &fd, &h);
    struct evgen_buf b = evgen_block(0, 1, 10, "x", 0);
    for (unsigned i = 0; i < 3; i++)
        write_ok(w, b.p, b.len);
    struct els_stats now = stats_of(w);
    CHECK_U64(now.units_accepted, ==, 3);

    enum { CANARY = 0xA5, SLACK = 64 };
    static const size_t sizes[] = {
        offsetof(struct els_stats, behind_at_stop_units),  /* before them */
        offsetof(struct els_stats, units_dropped),         /* the oldest */
        12,                                 /* not even a whole field */
        sizeof(struct els_stats),
        sizeof(struct els_stats) + 24,      /* a newer caller's */
    };
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t size = sizes[k];
        unsigned char buf[sizeof(struct els_stats) + 24 + SLACK];
        memset(buf, CANARY, sizeof buf);
        CHECK_OK(els_writer_stats_sized(w, (struct els_stats *)(void *)buf, size));
        for (size_t i = size; i < sizeof buf; i++)
            CHECK_MSG(buf[i] == CANARY, "size %zu: byte %zu written", size, i);
        /* What was asked for holds the counters... */
        size_t have = size < sizeof(struct els_stats) ? size : sizeof(struct els_stats);
        struct els_stats got;
        memset(&got, 0, sizeof got);
        memcpy(&got, buf, have);
        if (have >= offsetof(struct els_stats, units_sent))
            CHECK_U64(got.units_accepted, ==, 3);
        /* ... and a newer caller's tail is zero. */
        for (size_t i = sizeof(struct els_stats); i < size; i++)
            CHECK_MSG(buf[i] == 0, "size %zu: byte %zu not zeroed", size, i);
    }
    CHECK_INT(els_writer_stats_sized(w, &now, 0), ==, ELS_EINVAL);
    CHECK_INT(els_writer_stats_sized(w, NULL, sizeof now), ==, ELS_EINVAL);
    CHECK_OK(els_writer_close(w));
    close(fd);
    free(b.p);
    evgen_free(&h);
}

struct delayed_connect {
    const char *path;
    int fd;
};

static void *delayed_connect_main(void *arg)
{
    struct delayed_connect *dc = arg;
    check_sleep_ms(300);
    dc->fd = unix_connect(dc->path);
    return NULL;
}

static void writer_wait_for_first_consumer(void)
{
    char spec[600];
    struct delayed_connect dc = { .path = check_path("s.sock"), .fd = -1 };
    snprintf(spec, sizeof spec, "unix:%s?wait=20", dc.path);
    pthread_t t;
    CHECK_OK(pthread_create(&t, NULL, delayed_connect_main, &dc));
    struct els_writer *w = open_ok(spec);
    /* open() returned because the consumer came, not because of a timeout
     * (20 s is above the harness's limit for this case). */
    CHECK_U64(stats_of(w).consumers_total, >=, 1);
    pthread_join(t, NULL);
    CHECK_OK(els_writer_close(w));
    close(dc.fd);
}

static void *delayed_connect_late_main(void *arg)
{
    struct delayed_connect *dc = arg;
    check_sleep_ms(900);
    dc->fd = unix_connect(dc->path);
    return NULL;
}

/* wait-consumers=2: open() returns once the second consumer is there, so
 * both get the stream from its first unit. */
static void writer_wait_for_two_consumers(void)
{
    char spec[600];
    const char *path = check_path("s.sock");
    struct delayed_connect a = { .path = path, .fd = -1 };
    struct delayed_connect b = { .path = path, .fd = -1 };
    snprintf(spec, sizeof spec, "unix:%s?wait=20&wait-consumers=2", path);
    pthread_t ta, tb;
    CHECK_OK(pthread_create(&ta, NULL, delayed_connect_main, &a));
    CHECK_OK(pthread_create(&tb, NULL, delayed_connect_late_main, &b));
    struct els_writer *w = open_ok(spec);
    CHECK_U64(stats_of(w).consumers_total, >=, 2);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK_OK(els_writer_close(w));
    close(a.fd);
    close(b.fd);
}

static void writer_fork_child_leaves_parent_alone(void)
{
    const char *sock;
    struct els_writer *w = open_at("unix", "s.sock", "policy=block", &sock);
    struct reader rd;
    reader_start(&rd, unix_connect(sock), false);
    wait_consumers(w, 1);
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);

    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        struct evgen_buf b = evgen_block(9, 1, 3, "child", 0);
        int r = els_writer_write(w, b.p, b.len);
        struct els_stats s;
        els_writer_stats(w, &s);
        int ok = r == 1 && s.units_dropped[ELS_DROP_FORKED_CHILD] == 1;
        els_writer_close(w);
        _exit(ok ? 0 : 1);
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
    /* The parent's endpoint and consumer survived the child's close. */
    CHECK(access(sock, F_OK) == 0);
    CHECK_U64(stats_of(w).consumers_connected, ==, 1);
    struct evgen_buf b = evgen_block(0, 2, 3, "parent", 0);
    write_ok(w, b.p, b.len);
    write_ok(w, evgen_data_end, 2);
    CHECK_OK(els_writer_close(w));
    reader_join(&rd);
    check_stream_parses(&rd.got, true);
    CHECK(contains(&rd.got, "parent"));
    CHECK(!contains(&rd.got, "child"));
    free(b.p);
    evgen_free(&rd.got);
    evgen_free(&h);
}

static void writer_open_errors(void)
{
    char err[256];
    struct els_writer *w = NULL;
    CHECK_INT(els_writer_open("tc:x", &w, err, sizeof err), ==, ELS_ENOSCHEME);
    CHECK(w == NULL);
    CHECK_CONTAINS(err, "tc");
    char spec[400] = "unix:/tmp/";
    memset(spec + strlen(spec), 'a', 200);
    CHECK_INT(els_writer_open(spec, &w, err, sizeof err), ==, ELS_ENAMETOOLONG);
    CHECK_INT(els_writer_open("unix:/x?buffer=1M", &w, err, sizeof err), ==, ELS_EINVAL);
    CHECK_CONTAINS(err, "buffer");
    CHECK_INT(els_writer_open(NULL, &w, err, sizeof err), ==, ELS_EINVAL);
    CHECK_INT(els_spec_check("tcp:127.0.0.1:0?policy=block:100", err, sizeof err), ==, 0);
    CHECK_INT(els_spec_check("tcp:127.0.0.1:0?policy=sometimes", err, sizeof err), ==, ELS_EINVAL);
}

/* A callback sink stuck in write() for good (a collector that hangs, a
 * file on a stalled filesystem): close returns by the stop deadline, and
 * the writer thread finishes the writer once the call returns. */
static void writer_stop_bounded_with_stuck_sink(void)
{
    CHECK_OK(els_sink_register(&slow_sink));
    atomic_store(&slow_sink_hold, true);
    struct els_writer *w = open_ok("test-slow:?linger=0.2");
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    struct evgen_buf b = evgen_block(0, 1, 10, "x", 0);
    write_ok(w, b.p, b.len);
    WAIT_UNTIL(atomic_load(&slow_sink_writes) > 0, 1, "the sink was never called");
    /* The harness's timeout fails the case if close waits for the sink. */
    CHECK_OK(els_writer_close(w));
    CHECK(atomic_load(&slow_sink_hold));
    CHECK(!atomic_load(&slow_sink_closed));
    atomic_store(&slow_sink_hold, false);
    WAIT_UNTIL(atomic_load(&slow_sink_closed), 1,
               "the sink was not closed after its write returned");
    free(b.p);    evgen_free(&h);
}

/* Under policy=block a unit written by a flush or by the stop (the RTS
 * holds every capability then) waits at most linger= for room, the stop's
 * units together no longer than the stop deadline, and close returns by
 * it, while the only consumer (trusted: a callback sink) takes nothing. */
static void writer_block_flush_and_stop_units_bounded(void)
{
    CHECK_OK(els_sink_register(&slow_sink));
    atomic_store(&slow_sink_hold, true);
    struct els_writer *w = open_ok("test-slow:?buffer=3M&policy=block&linger=0.2");
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    struct evgen_buf b = evgen_block(0, 1, 0, "x", 512 * 1024);
    int r = 0;
    for (unsigned i = 0; i < 12 && r == 0; i++)
        r = els_writer_write_reason(w, b.p, b.len, ELS_REASON_FLUSH);
    CHECK_INT(r, ==, 1);
    struct els_stats s = stats_of(w);
    CHECK_U64(s.units_dropped[ELS_DROP_BLOCK_TIMEOUT], ==, 1);
    CHECK_INT(els_writer_write_reason(w, b.p, b.len, ELS_REASON_STOP), ==, 1);
    s = stats_of(w);
    CHECK_U64(s.units_dropped[ELS_DROP_STOPPED], ==, 1);
    /* Past the stop deadline a unit with no room is dropped at once. */
    CHECK_INT(els_writer_write_reason(w, b.p, b.len, ELS_REASON_STOP), ==, 1);
    check_conservation(&s);
    CHECK_OK(els_writer_close(w));
    CHECK(atomic_load(&slow_sink_hold));
    atomic_store(&slow_sink_hold, false);
    WAIT_UNTIL(atomic_load(&slow_sink_closed), 1, "the sink was not closed");
    free(b.p);    evgen_free(&h);
}

/* Units no consumer ever came for are reported as no-consumer, not as
 * stopped. */
static void writer_never_a_consumer_reported_as_such(void)
{
    tu_log_capture();
    const char *sock;
    struct els_writer *w = open_at("unix", "s.sock", "", &sock);
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    struct evgen_buf b = evgen_block(0, 1, 10, "x", 0);
    for (unsigned i = 0; i < 3; i++)
        write_ok(w, b.p, b.len);
    write_ok(w, evgen_data_end, 2);
    CHECK_OK(els_writer_close(w));
    CHECK_MSG(tu_log_contains("dropped 4 of 4 units") &&
              tu_log_contains("no-consumer 4"), "loss not reported as no-consumer");
    CHECK(!tu_log_contains("stopped"));
    free(b.p);    evgen_free(&h);
}

// ---------------------------------------------------------------------------
// A join snapshot refused for want of room is asked for again
// ---------------------------------------------------------------------------

static atomic_uint join_asked;      /* requests from the writer */
static atomic_bool join_due;        /* a request not answered yet */

static void join_request(void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&join_asked, 1);
    atomic_store(&join_due, true);
}

/* A producer as the RTS is one: it posts blocks (waiting for room under
 * policy=block) and answers a snapshot request between two of them, at
 * its next safe point, never while it waits. */
struct rts_like {
    struct els_writer *w;
    atomic_bool stop;
    atomic_bool answers;    /* answers snapshot requests (after the first) */
    unsigned snapshots_refused;
};

static struct evgen_buf join_snapshot(void)
{
    return evgen_block(ELSI_CAP_GLOBAL, 0, 0, "snapshot", 64 * 1024);
}

static void *rts_like_main(void *arg)
{
    struct rts_like *r = arg;
    for (unsigned i = 0; !atomic_load(&r->stop); i++) {
        if (atomic_load(&r->answers) && atomic_exchange(&join_due, false)) {
            struct evgen_buf snap = join_snapshot();
            int rc = els_writer_write_snapshot(r->w, snap.p, snap.len);
            CHECK_MSG(rc == 0 || rc == 1, "write_snapshot returned %d", rc);
            r->snapshots_refused += rc == 1;
            free(snap.p);
        }
        struct evgen_buf b = evgen_block(0, 1000 + i, 0, "p", 16 * 1024);
        write_ok(r->w, b.p, b.len);
        free(b.p);
    }
    return NULL;
}

/* Note [Asking again for a join snapshot]: under policy=block with a slow
 * trusted consumer the queue is full when the snapshot comes; it is not
 * queued, the writer asks again once there is room (and keeps that room
 * from the producers meanwhile), and the joiner starts at a snapshot
 * rather than falling back after ELS_SNAPSHOT_WAIT_MS. */
static void joiner_gets_snapshot_with_queue_full(void)
{
    atomic_store(&join_asked, 0);
    atomic_store(&join_due, false);
    const char *sock;
    struct els_writer *w = open_at("unix", "s.sock", "policy=block&buffer=3M", &sock);
    CHECK_OK(els_writer_set_snapshot_source(w, join_request, NULL));
    /* A trusted consumer (a UNIX client of this user) that reads slowly:
     * 16 KiB, then a pause, so the queue stays full under policy=block. */
    struct reader a;
    reader_start_paced(&a, unix_connect(sock), false, 16 * 1024, 2);
    wait_consumers(w, 1);
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    for (unsigned i = 0; i < 4; i++) {
        struct evgen_buf b = evgen_block(0, i, 0, "early", 0);
        write_ok(w, b.p, b.len);
        free(b.p);
    }
    /* The stream's start is gone: a consumer that joins now awaits a
     * snapshot. */
    WAIT_UNTIL(stats_of(w).units_sent == 4 && stats_of(w).units_queued == 0, 5,
               "early units not delivered");

    /* Fill the queue: the consumer stops reading, the producer waits. */
    atomic_store(&a.paused, true);
    struct rts_like r = { .w = w };
    pthread_t producer;
    CHECK_OK(pthread_create(&producer, NULL, rts_like_main, &r));
    WAIT_UNTIL(stats_of(w).bytes_queued + 2 * 16 * 1024 > 3 * 1024 * 1024, 5,
               "the queue did not fill");

    struct reader b;
    reader_start(&b, unix_connect(sock), false);
    wait_consumers(w, 2);
    WAIT_UNTIL(atomic_load(&join_asked) >= 1, 5, "no snapshot request");
    /* The first answer comes from here, with the queue full: refused.
     * (The producer answers only from now on, whatever the scheduling.) */
    CHECK(atomic_exchange(&join_due, false));
    struct evgen_buf snap = join_snapshot();
    CHECK_INT(els_writer_write_snapshot(w, snap.p, snap.len), ==, 1);
    CHECK_U64(stats_of(w).snapshots_not_queued, ==, 1);
    atomic_store(&r.answers, true);

    /* The consumer reads again, slowly; the producer keeps the queue full
     * and answers whatever the writer asks. */
    atomic_store(&a.paused, false);
    WAIT_UNTIL(stats_of(w).joiners_with_snapshot +
               stats_of(w).joiners_without_snapshot == 1, 20,
               "the joiner never started");
    struct els_stats s = stats_of(w);
    CHECK_MSG(atomic_load(&join_asked) >= 2, "the snapshot was not asked for "
              "again (%u requests)", atomic_load(&join_asked));
    CHECK_U64(s.joiners_with_snapshot, ==, 1);
    CHECK_U64(s.joiners_without_snapshot, ==, 0);
    CHECK(s.snapshot_units >= 1);

    atomic_store(&r.stop, true);
    pthread_join(producer, NULL);
    write_ok(w, evgen_data_end, 2);
    CHECK_OK(els_writer_close(w));
    reader_join(&a);
    reader_join(&b);
    CHECK(memcmp(b.got.p, h.p, h.len) == 0);
    check_stream_parses(&b.got, true);
    check_stream_parses(&a.got, true);
    CHECK(contains(&b.got, "joined mid-run; its stream starts at a snapshot"));
    CHECK(contains(&b.got, "snapshot"));
    CHECK(!contains(&b.got, "early"));
    evgen_free(&a.got);
    evgen_free(&b.got);
    evgen_free(&snap);
    evgen_free(&h);
}

static const struct check_case cases[] = {
    CHECK_CASE(writer_stop_with_stalled_consumer),
    CHECK_CASE(writer_linger_loss_has_size),
    CHECK_CASE(stats_sized_writes_no_more_than_asked),
    CHECK_CASE_T(writer_wait_for_first_consumer, 15),
    CHECK_CASE_T(writer_wait_for_two_consumers, 15),
    CHECK_CASE(writer_fork_child_leaves_parent_alone),
    CHECK_CASE(writer_open_errors),
    CHECK_CASE(writer_stop_bounded_with_stuck_sink),
    CHECK_CASE(writer_block_flush_and_stop_units_bounded),
    CHECK_CASE(writer_never_a_consumer_reported_as_such),
    CHECK_CASE_T(joiner_gets_snapshot_with_queue_full, 30),
};

CHECK_MAIN(cases)
