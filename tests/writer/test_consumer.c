/*
 * test_consumer.c: delivery to each kind of consumer (lib/writer/
 * consumer.c), end to end inside one process: units go in through
 * els_writer_write() and come out of real UNIX sockets, FIFOs and files,
 * byte for byte; late joiners start with the header and are told what
 * they missed; several consumers each get everything; a consumer that
 * vanishes is dropped without harm (and without SIGPIPE).  What the writer
 * holds for stalled consumers stays within consumer-memory= (Note
 * [Consumer memory]).  Consumers that join a running stream wait for a
 * join snapshot and then receive exactly header + snapshot + every unit
 * after it; others never see it (Note [Late joiners]).  A connect-out
 * collector holds the program under policy=block only when it is trusted
 * (Note [Trusted consumers], [Collector proof]): a UNIX listener of this
 * uid, trust=1, or a proof of collector-secret=.  The rule itself is also
 * fed peers of other uids directly (elsi_consumer_trust_rule()), so that
 * it is checked without root, which the end-to-end case needs.
 */
#include <malloc.h>
#include <sys/resource.h>

#include "check.h"
#include "testutil.h"
#include "writer/writer_test.h"
#include "writer/writer_impl.h"
#include "control/sha256.h"

static void writer_unix_roundtrip(void)
{
    const char *sock;
    struct els_writer *w = open_at("unix", "s.sock", "policy=block", &sock);
    struct reader rd;
    reader_start(&rd, unix_connect(sock), false);
    wait_consumers(w, 1);

    struct evgen_buf expect = { 0 };
    struct evgen_buf h = evgen_header();
    write_expect(w, &expect, h.p, h.len);
    for (unsigned i = 0; i < 50; i++) {
        struct evgen_buf b = evgen_block((uint16_t)(i % 2), i * 1000, 20, "u", 0);
        write_expect(w, &expect, b.p, b.len);
        free(b.p);
    }
    write_expect(w, &expect, evgen_data_end, 2);

    /* Wait for delivery, then check the counters before closing. */
    uint64_t deadline = check_now_ms() + 10000;
    while (atomic_load(&rd.len) < expect.len && check_now_ms() < deadline)
        check_sleep_ms(5);
    struct els_stats s = stats_of(w);
    CHECK_U64(s.units_accepted, ==, 51);
    CHECK_U64(s.header_bytes, ==, h.len);
    check_conservation(&s);
    CHECK_OK(els_writer_close(w));
    reader_join(&rd);

    CHECK_U64(rd.got.len, ==, expect.len);
    CHECK(memcmp(rd.got.p, expect.p, expect.len) == 0);
    check_stream_parses(&rd.got, true);
    /* The socket file is removed at stop. */
    CHECK(access(sock, F_OK) != 0);
    evgen_free(&rd.got);
    evgen_free(&expect);
    evgen_free(&h);
}

static void writer_late_joiner(void)
{
    const char *sock;
    struct els_writer *w = open_at("unix", "s.sock", "", &sock);
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    for (unsigned i = 0; i < 10; i++) {
        struct evgen_buf b = evgen_block(0, i * 100, 5, "early", 0);
        write_ok(w, b.p, b.len);
        free(b.p);
    }
    struct reader rd;
    reader_start(&rd, unix_connect(sock), false);
    wait_consumers(w, 1);
    for (unsigned i = 0; i < 10; i++) {
        struct evgen_buf b = evgen_block(1, 5000 + i * 100, 5, "late", 0);
        write_ok(w, b.p, b.len);
        free(b.p);
    }
    write_ok(w, evgen_data_end, 2);
    CHECK_OK(els_writer_close(w));
    reader_join(&rd);

    /* Header first, then every unit: nothing was released before it came. */
    CHECK(rd.got.len > h.len);
    CHECK(memcmp(rd.got.p, h.p, h.len) == 0);
    check_stream_parses(&rd.got, true);
    uint64_t units, notes;
    count_blocks(&rd.got, h.len, &units, &notes);
    CHECK_U64(units, ==, 20);
    CHECK_U64(notes, ==, 0);
    evgen_free(&rd.got);
    evgen_free(&h);
}

static void writer_several_consumers(void)
{
    const char *sock;
    struct els_writer *w = open_at("unix", "s.sock", "policy=block", &sock);
    struct reader rd[3];
    for (int i = 0; i < 3; i++)
        reader_start(&rd[i], unix_connect(sock), false);
    wait_consumers(w, 3);
    struct evgen_buf expect = evgen_header();
    write_ok(w, expect.p, expect.len);
    for (unsigned i = 0; i < 200; i++) {
        struct evgen_buf b = evgen_block((uint16_t)(i % 4), i * 10, 0, "m", 8192);
        write_expect(w, &expect, b.p, b.len);
        free(b.p);
    }
    write_expect(w, &expect, evgen_data_end, 2);
    CHECK_OK(els_writer_close(w));
    for (int i = 0; i < 3; i++) {
        reader_join(&rd[i]);
        CHECK_U64(rd[i].got.len, ==, expect.len);
        CHECK(memcmp(rd[i].got.p, expect.p, expect.len) == 0);
        evgen_free(&rd[i].got);
    }
    evgen_free(&expect);
}

static void writer_late_joiner_after_release(void)
{
    const char *sock;
    struct els_writer *w = open_at("unix", "s.sock", "buffer=3M", &sock);
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    for (unsigned i = 0; i < 100; i++) {
        struct evgen_buf b = evgen_block(0, i * 1000, 0, "x", 100 * 1024);
        els_writer_write(w, b.p, b.len);
        free(b.p);
    }
    /* Let the writer thread release what no one can take. */
    WAIT_UNTIL(stats_of(w).units_dropped[ELS_DROP_NO_CONSUMER] != 0, 5,
               "nothing released for want of a consumer");
    struct reader rd;
    reader_start(&rd, unix_connect(sock), false);
    wait_consumers(w, 1);
    write_ok(w, evgen_data_end, 2);
    struct els_stats s = stats_of(w);
    check_conservation(&s);
    CHECK_OK(els_writer_close(w));
    reader_join(&rd);
    /* The header is never dropped: the late joiner's stream starts with it
     * and parses, and says it joined mid-run. */
    CHECK(memcmp(rd.got.p, h.p, h.len) == 0);
    check_stream_parses(&rd.got, true);
    CHECK(contains(&rd.got, "joined mid-run"));
    evgen_free(&rd.got);
    evgen_free(&h);
}

static void writer_consumer_vanishes(void)
{
    /* SIGPIPE keeps its default action here: a send without MSG_NOSIGNAL
     * would kill this test. */
    const char *sock = check_path("s.sock");
    int fd;
    struct evgen_buf h;
    struct els_writer *w = open_unix_with_client("policy=drop", &fd, &h);
    struct evgen_buf b = evgen_block(0, 1, 0, "x", 256 * 1024);
    write_ok(w, b.p, b.len);
    char tmp[100];
    CHECK(read(fd, tmp, sizeof tmp) > 0);
    close(fd);      /* unread data: the peer sees a reset */
    for (unsigned i = 0; i < 20; i++)
        els_writer_write(w, b.p, b.len);
    wait_no_consumers(w);
    struct reader rd;
    reader_start(&rd, unix_connect(sock), false);
    wait_consumers(w, 1);
    write_ok(w, b.p, b.len);
    write_ok(w, evgen_data_end, 2);
    CHECK_OK(els_writer_close(w));
    reader_join(&rd);
    check_stream_parses(&rd.got, true);
    free(b.p);
    evgen_free(&rd.got);
    evgen_free(&h);
}

static void writer_fifo_reader_comes_and_goes(void)
{
    const char *fifo;
    struct els_writer *w = open_at("fifo", "f", "", &fifo);
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    struct evgen_buf b = evgen_block(0, 1, 0, "x", 100 * 1024);
    write_ok(w, b.p, b.len);    /* no reader: the program does not block */

    int fd = open(fifo, O_RDONLY | O_CLOEXEC);
    CHECK(fd >= 0);
    char buf[4096];
    CHECK(read(fd, buf, sizeof buf) > 0);
    close(fd);                  /* reader goes away mid-stream */
    /* A FIFO cannot tell readers apart: one that opened before the writer
     * saw the last one leave would share the old pipe and its buffered
     * tail.  The writer notices at once (POLLERR); wait for that. */
    wait_no_consumers(w);
    for (unsigned i = 0; i < 10; i++)
        els_writer_write(w, b.p, b.len);

    /* The reader comes back: a fresh stream from the header. */
    struct reader rd;
    fd = open(fifo, O_RDONLY | O_CLOEXEC);
    CHECK(fd >= 0);
    reader_start(&rd, fd, false);
    wait_consumers(w, 1);
    write_ok(w, b.p, b.len);
    write_ok(w, evgen_data_end, 2);
    CHECK_OK(els_writer_close(w));
    reader_join(&rd);
    CHECK(memcmp(rd.got.p, h.p, h.len) == 0);
    check_stream_parses(&rd.got, true);
    free(b.p);
    evgen_free(&rd.got);
    evgen_free(&h);
}

static void writer_file_sink(void)
{
    const char *path;
    struct els_writer *w = open_at("file", "out.eventlog", "policy=block", &path);
    struct evgen_buf expect = evgen_header();
    write_ok(w, expect.p, expect.len);
    for (unsigned i = 0; i < 30; i++) {
        struct evgen_buf b = evgen_block(0, i, 10, "f", 0);
        write_expect(w, &expect, b.p, b.len);
        free(b.p);
    }
    write_expect(w, &expect, evgen_data_end, 2);
    CHECK_OK(els_writer_close(w));
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    struct evgen_buf got = { 0 };
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        evgen_put(&got, buf, n);
    fclose(f);
    CHECK_U64(got.len, ==, expect.len);
    CHECK(memcmp(got.p, expect.p, expect.len) == 0);
    evgen_free(&got);
    evgen_free(&expect);
}

/* Many consumers stall in the middle of units; cutting each loose needs a
 * private copy of the rest of its unit.  The total held never exceeds
 * consumer-memory=; consumers that would exceed it are closed and
 * counted, and every stream still ends well formed or as a clean prefix. */
static void consumer_memory_bounded(void)
{
    enum { N = 20 };
    const uint64_t bound = 512 * 1024;
    const char *sock;
    struct els_writer *w = open_at("unix", "s.sock",
                                   "buffer=4M&policy=drop&consumer-memory=512K",
                                   &sock);
    int fds[N];
    for (int i = 0; i < N; i++)
        fds[i] = unix_connect(sock);
    wait_consumers(w, N);
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    struct evgen_buf b = evgen_block(0, 1, 0, "x", 700 * 1024);
    for (unsigned i = 0; i < 40; i++) {
        CHECK_INT(els_writer_write(w, b.p, b.len), >=, 0);
        struct els_stats s = stats_of(w);
        CHECK_U64(s.consumer_memory, <=, bound);
        check_conservation(&s);
    }
    WAIT_UNTIL(stats_of(w).consumers_dropped_memory > 0, 1,
               "no consumer was closed for the bound");
    /* Closed consumers leave the count once reaped. */
    WAIT_UNTIL(stats_of(w).consumers_dropped_memory +
               stats_of(w).consumers_connected == N, 1, "consumers unaccounted");
    struct els_stats s = stats_of(w);
    CHECK_U64(s.consumer_memory_peak, <=, bound);
    CHECK_U64(s.consumer_memory_peak, >, 0);
    write_ok(w, evgen_data_end, 2);
    CHECK_OK(els_writer_close(w));
    for (int i = 0; i < N; i++) {
        struct reader rd;
        reader_start(&rd, fds[i], false);
        reader_join(&rd);
        check_stream_parses(&rd.got, false);
        evgen_free(&rd.got);
    }
    free(b.p);
    evgen_free(&h);
}

/* Bytes of address space this process has mapped (VmSize). */
static uint64_t vm_size_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    CHECK(f != NULL);
    char line[256];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "VmSize: %llu kB", &kb) == 1)
            break;
    fclose(f);
    CHECK(kb > 0);
    return (uint64_t)kb * 1024;
}

/*
 * A consumer stalls in the middle of a unit and is cut loose while memory
 * for the copy of the rest of that unit cannot be had.  It must not be
 * counted as having received the unit, nor be sent anything after the
 * half unit (that stream could not be parsed): it is closed, and what it
 * got is a well-formed prefix.
 */
static void consumer_cut_out_of_memory(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    CHECK_SKIP_PART("an address-space limit and a sanitizer's shadow memory "
                    "do not mix (the plain build runs this case)");
#else
    /* One malloc arena for every thread: a per-thread arena is a 64 MiB
     * reservation that would serve the copy without mapping anything. */
    CHECK(mallopt(M_ARENA_MAX, 1) == 1);
    tu_log_capture();
    int fd;
    struct evgen_buf h;
    struct els_writer *w = open_unix_with_client("buffer=4M&policy=drop", &fd, &h);
    struct evgen_buf b = evgen_block(0, 1, 0, "x", 700 * 1024);
    write_ok(w, b.p, b.len);
    /* The socket took the header and part of the unit, no more. */
    WAIT_UNTIL(stats_of(w).units_queued == 1 && !stats_of(w).units_sent, 1,
               "the unit left the queue");
    struct rlimit old;
    CHECK_OK(getrlimit(RLIMIT_AS, &old));
    /* Room for small allocations, none for a copy of ~500 KiB (glibc maps
     * anything above 128 KiB on its own). */
    struct rlimit low = { (rlim_t)(vm_size_bytes() + 64 * 1024), old.rlim_max };
    CHECK_OK(setrlimit(RLIMIT_AS, &low));
    for (unsigned i = 0; i < 8; i++)
        CHECK_INT(els_writer_write(w, b.p, b.len), >=, 0);
    WAIT_UNTIL(stats_of(w).consumers_connected == 0, 1,
               "the consumer was not closed when its copy failed");
    CHECK_OK(setrlimit(RLIMIT_AS, &old));
    CHECK(tu_log_contains("out of memory"));
    struct els_stats s = stats_of(w);
    check_conservation(&s);
    CHECK_U64(s.units_sent, ==, 0);     /* nobody got a unit in full */
    CHECK_OK(els_writer_close(w));
    struct reader rd;
    reader_start(&rd, fd, false);
    reader_join(&rd);
    check_stream_parses(&rd.got, false);
    CHECK_U64(rd.got.len, <, h.len + b.len);
    free(b.p);
    evgen_free(&rd.got);
    evgen_free(&h);
#endif
}

// ---------------------------------------------------------------------------
// Late joiners (Note [Late joiners])
// ---------------------------------------------------------------------------

static atomic_uint snapshot_requests;

static void count_request(void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&snapshot_requests, 1);
}

/* Write n blocks tagged tag to w, appending them to each expected stream
 * given (NULL to skip). */
static void blocks(struct els_writer *w, unsigned n, uint64_t t0, const char *tag,
                   struct evgen_buf *e1, struct evgen_buf *e2)
{
    for (unsigned i = 0; i < n; i++) {
        struct evgen_buf b = evgen_block((uint16_t)(i % 2), t0 + i * 100, 4, tag, 0);
        write_ok(w, b.p, b.len);
        if (e1 != NULL)
            evgen_put(e1, b.p, b.len);
        if (e2 != NULL)
            evgen_put(e2, b.p, b.len);
        free(b.p);
    }
}

/* Wait until the writer released units, so that the stream's start is
 * gone for a consumer that joins now. */
static void wait_released(struct els_writer *w)
{
    WAIT_UNTIL(stats_of(w).units_sent > 0 && stats_of(w).units_queued == 0, 5,
               "units not delivered and released");
}

static void joiner_starts_at_its_snapshot(void)
{
    atomic_store(&snapshot_requests, 0);
    const char *sock;
    struct els_writer *w = open_at("unix", "s.sock", "", &sock);
    CHECK_OK(els_writer_set_snapshot_source(w, count_request, NULL));
    struct evgen_buf h = evgen_header();
    struct evgen_buf first = { 0 }, joiner = { 0 };
    evgen_put(&first, h.p, h.len);

    struct reader a, b;
    reader_start(&a, unix_connect(sock), false);
    wait_consumers(w, 1);
    write_ok(w, h.p, h.len);
    blocks(w, 10, 0, "early", &first, NULL);
    wait_released(w);
    CHECK_U64(atomic_load(&snapshot_requests), ==, 0);

    reader_start(&b, unix_connect(sock), false);
    wait_consumers(w, 2);
    WAIT_UNTIL(atomic_load(&snapshot_requests) == 1, 5, "no snapshot request");
    /* Units between the join and the snapshot are the first consumer's
     * only: the snapshot describes the state after them. */
    blocks(w, 3, 10000, "between", &first, NULL);
    struct evgen_buf snap = evgen_block(ELSI_CAP_GLOBAL, 20000, 3, "snapshot", 0);
    CHECK_U64(els_writer_write_snapshot(w, snap.p, snap.len), ==, 0);
    evgen_put(&joiner, snap.p, snap.len);
    blocks(w, 5, 30000, "after", &first, &joiner);
    write_ok(w, evgen_data_end, 2);
    evgen_put(&first, evgen_data_end, 2);
    evgen_put(&joiner, evgen_data_end, 2);
    /* The joiner's stream: header, a note that it joined, then exactly
     * `joiner`. */
    WAIT_UNTIL(atomic_load(&a.len) == first.len &&
               atomic_load(&b.len) > h.len + joiner.len,
               5, "streams incomplete: %zu of %zu, %zu of more than %zu",
               atomic_load(&a.len), first.len, atomic_load(&b.len),
               h.len + joiner.len);

    struct els_stats s = stats_of(w);
    CHECK_U64(s.snapshot_units, ==, 1);
    CHECK_U64(s.snapshot_bytes, ==, snap.len);
    CHECK_U64(s.joiners_with_snapshot, ==, 1);
    CHECK_U64(s.joiners_without_snapshot, ==, 0);
    CHECK_U64(s.units_accepted, ==, 19);     /* the snapshot is not one */
    CHECK_U64(total_dropped(&s), ==, 0);
    check_conservation(&s);
    CHECK_OK(els_writer_close(w));
    reader_join(&a);
    reader_join(&b);

    CHECK_U64(a.got.len, ==, first.len);
    CHECK(memcmp(a.got.p, first.p, first.len) == 0);
    CHECK(memcmp(b.got.p, h.p, h.len) == 0);
    CHECK(memcmp(b.got.p + b.got.len - joiner.len, joiner.p, joiner.len) == 0);
    check_stream_parses(&b.got, true);
    CHECK(contains(&b.got, "joined mid-run; its stream starts at a snapshot"));
    uint64_t units, notes;
    count_blocks(&b.got, h.len, &units, &notes);
    CHECK_U64(notes, ==, 2);    /* the note, and the snapshot (global) */
    CHECK_U64(units, ==, 5);
    evgen_free(&a.got);
    evgen_free(&b.got);
    evgen_free(&first);
    evgen_free(&joiner);
    evgen_free(&snap);
    evgen_free(&h);
}

/* A joiner whose snapshot never comes gets the stream as it would without
 * a snapshot source once the stream ends: the oldest queued unit on, after
 * a note saying so. */
static void joiner_without_answer_starts_at_the_end(void)
{
    const char *sock;
    struct els_writer *w = open_at("unix", "s.sock", "", &sock);
    CHECK_OK(els_writer_set_snapshot_source(w, count_request, NULL));
    struct evgen_buf h = evgen_header();
    struct reader a, b;
    reader_start(&a, unix_connect(sock), false);
    wait_consumers(w, 1);
    write_ok(w, h.p, h.len);
    blocks(w, 10, 0, "early", NULL, NULL);
    wait_released(w);
    reader_start(&b, unix_connect(sock), false);
    wait_consumers(w, 2);
    blocks(w, 4, 10000, "late", NULL, NULL);
    write_ok(w, evgen_data_end, 2);
    CHECK_OK(els_writer_close(w));
    reader_join(&a);
    reader_join(&b);

    CHECK(memcmp(b.got.p, h.p, h.len) == 0);
    check_stream_parses(&b.got, true);
    CHECK(contains(&b.got, "joined mid-run (no snapshot before the end)"));
    CHECK(!contains(&b.got, "early"));
    uint64_t units, notes;
    count_blocks(&b.got, h.len, &units, &notes);
    CHECK_U64(units, ==, 4);
    CHECK_U64(notes, ==, 1);
    evgen_free(&a.got);
    evgen_free(&b.got);
    evgen_free(&h);
}

/* Join units are skipped by consumers that did not wait for them, and a
 * consumer that joins while nothing was released yet starts at the very
 * beginning without asking for one. */
static void snapshot_unseen_by_others_and_not_asked_early(void)
{
    atomic_store(&snapshot_requests, 0);
    const char *sock;
    struct els_writer *w = open_at("unix", "s.sock", "", &sock);
    CHECK_OK(els_writer_set_snapshot_source(w, count_request, NULL));
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    blocks(w, 3, 0, "early", NULL, NULL);
    struct reader a;
    reader_start(&a, unix_connect(sock), false);
    wait_consumers(w, 1);
    struct evgen_buf snap = evgen_block(ELSI_CAP_GLOBAL, 500, 2, "snapshot", 0);
    CHECK_U64(els_writer_write_snapshot(w, snap.p, snap.len), ==, 0);
    blocks(w, 3, 1000, "after", NULL, NULL);
    write_ok(w, evgen_data_end, 2);
    CHECK_OK(els_writer_close(w));
    reader_join(&a);
    CHECK_U64(atomic_load(&snapshot_requests), ==, 0);
    CHECK(contains(&a.got, "early 0"));
    CHECK(!contains(&a.got, "snapshot"));
    uint64_t units, notes;
    count_blocks(&a.got, h.len, &units, &notes);
    CHECK_U64(units, ==, 6);
    CHECK_U64(notes, ==, 0);
    evgen_free(&a.got);
    evgen_free(&snap);
    evgen_free(&h);
}

/* A join unit never waits for room, even under policy=block with a
 * consumer that holds the queue full: it is counted as not queued, and
 * asked for again once there is room (Note [Asking again for a join
 * snapshot]), when it is queued and the joiner starts at it. */
static void snapshot_never_waits_for_room(void)
{
    atomic_store(&snapshot_requests, 0);
    const char *sock;
    struct els_writer *w = open_at("unix", "s.sock", "policy=block:50&buffer=3M&linger=0.2", &sock);
    CHECK_OK(els_writer_set_snapshot_source(w, count_request, NULL));
    struct reader a;
    reader_start(&a, unix_connect(sock), false);
    wait_consumers(w, 1);
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    blocks(w, 3, 0, "early", NULL, NULL);
    wait_released(w);
    /* Fill the queue until the consumer that stopped reading holds it. */
    atomic_store(&a.paused, true);
    while (stats_of(w).bytes_queued + 16384 < 3 * 1024 * 1024) {
        struct evgen_buf b = evgen_block(0, 0, 0, "fill", 8192);
        write_ok(w, b.p, b.len);
        free(b.p);
    }
    struct reader b;
    reader_start(&b, unix_connect(sock), false);
    wait_consumers(w, 2);
    WAIT_UNTIL(atomic_load(&snapshot_requests) == 1, 5, "no snapshot request");
    struct evgen_buf big = evgen_block(ELSI_CAP_GLOBAL, 0, 0, "snapshot", 32768);
    CHECK_U64(els_writer_write_snapshot(w, big.p, big.len), ==, 1);
    struct els_stats s = stats_of(w);
    CHECK_U64(s.snapshots_not_queued, ==, 1);
    CHECK_U64(s.snapshot_units, ==, 0);
    check_conservation(&s);
    /* Room again: the writer asks again, and the answer is queued. */
    atomic_store(&a.paused, false);
    WAIT_UNTIL(atomic_load(&snapshot_requests) == 2, 5,
               "the refused snapshot was not asked for again");
    CHECK_U64(els_writer_write_snapshot(w, big.p, big.len), ==, 0);
    WAIT_UNTIL(stats_of(w).joiners_with_snapshot == 1, 5,
               "the joiner did not start at the snapshot");
    s = stats_of(w);
    CHECK_U64(s.snapshot_units, ==, 1);
    CHECK_U64(s.joiners_without_snapshot, ==, 0);
    CHECK_OK(els_writer_close(w));
    reader_join(&a);
    reader_join(&b);
    CHECK(contains(&b.got, "joined mid-run; its stream starts at a snapshot"));
    evgen_free(&a.got);
    evgen_free(&b.got);
    evgen_free(&big);
    evgen_free(&h);
}

/* A callback sink whose write calls fail as a mask says (bit i: call i). */
static atomic_uint pick_calls, pick_fail_mask;
static struct evgen_buf pick_got;

static int pick_open(void **sink, const struct els_sink_args *args)
{
    (void)args;
    *sink = &pick_got;
    return 0;
}

static void pick_close(void *sink)
{
    (void)sink;
}

static int pick_write(void *sink, const void *buf, size_t len)
{
    (void)sink;
    unsigned i = atomic_fetch_add(&pick_calls, 1);
    if (i < 32 && ((atomic_load(&pick_fail_mask) >> i) & 1u))
        return -EIO;
    pthread_mutex_lock(&got_lock);
    evgen_put(&pick_got, buf, len);
    pthread_mutex_unlock(&got_lock);
    return 0;
}

static const struct els_sink_ops pick_sink = {
    .struct_size = sizeof(struct els_sink_ops),
    .scheme = "test-pick",
    .style = ELS_SINK_CALLBACK,
    .open = pick_open,
    .close = pick_close,
    .write = pick_write,
};

/* A unit the sink failed to take is announced before the next one; when
 * the note itself fails to be written, the loss is announced again with
 * the unit after (it is not forgotten with the note). */
static void loss_note_lost_with_its_write_is_announced_again(void)
{
    CHECK_OK(els_sink_register(&pick_sink));
    /* Calls: 0 header, 1 unit "one" (fails), 2 the note (fails), 3 unit
     * "two", 4 the note again, 5 unit "three". */
    atomic_store(&pick_fail_mask, (1u << 1) | (1u << 2));
    struct els_writer *w = open_ok("test-pick:?buffer=3M");
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    const char *names[] = { "unit-one", "unit-two", "unit-three" };
    unsigned after[] = { 2, 3, 5 };
    for (unsigned i = 0; i < 3; i++) {
        struct evgen_buf b = evgen_block(0, 10 * (i + 1), 1, names[i], 0);
        write_ok(w, b.p, b.len);
        free(b.p);
        WAIT_UNTIL(atomic_load(&pick_calls) >= after[i], 10,
                   "the sink was not called for %s", names[i]);
    }
    write_ok(w, evgen_data_end, 2);
    CHECK_OK(els_writer_close(w));
    pthread_mutex_lock(&got_lock);
    CHECK(!contains(&pick_got, "unit-one"));
    CHECK(contains(&pick_got, "unit-two"));
    CHECK(contains(&pick_got, "unit-three"));
    CHECK_MSG(contains(&pick_got, "this consumer missed 1 units"),
              "the lost unit is never announced (%u sink calls)",
              atomic_load(&pick_calls));
    pthread_mutex_unlock(&got_lock);
    evgen_free(&pick_got);
    evgen_free(&h);
}

static void snapshot_api_rejects_bad_arguments(void)
{
    CHECK_U64((uint64_t)(int64_t)els_writer_write_snapshot(NULL, "x", 1), ==,
              (uint64_t)(int64_t)ELS_EINVAL);
    CHECK(els_writer_set_snapshot_source(NULL, count_request, NULL) == ELS_EINVAL);
}

// ---------------------------------------------------------------------------
// Connect-out collectors under policy=block
// ---------------------------------------------------------------------------

enum collector_mode { COLLECTOR_IDLE, COLLECTOR_PROVE, COLLECTOR_WRONG };

#define COLLECTOR_SECRET "a collector secret of 32 bytes!!"

/* The collector's side of Note [Collector proof], from docs/CONTROL.md:
 * find the challenge note, answer "ELSC" 02 04 00 20 and HMAC-SHA256 of
 * the label, its NUL and the 32 challenge bytes. */
static void collector_prove(int fd, const char *secret)
{
    static const char pfx[] = "eventlog-sink collector challenge ";
    char buf[65536];
    size_t len = 0;
    const char *at = NULL;
    while (at == NULL || (size_t)(at - buf) + sizeof pfx - 1 + 64 > len) {
        ssize_t n = read(fd, buf + len, sizeof buf - len);
        if (n <= 0)
            _exit(3);
        len += (size_t)n;
        at = memmem(buf, len, pfx, sizeof pfx - 1);
        if (len == sizeof buf)
            _exit(4);
    }
    static const char label[] = "eventlog-sink collector proof v1";
    uint8_t m[sizeof label + 32];
    memcpy(m, label, sizeof label);
    for (size_t i = 0; i < 32; i++) {
        unsigned v;
        if (sscanf(at + sizeof pfx - 1 + 2 * i, "%2x", &v) != 1)
            _exit(5);
        m[sizeof label + i] = (uint8_t)v;
    }
    uint8_t f[8 + 32] = { 'E', 'L', 'S', 'C', 2, 4, 0, 32 };
    elsi_hmac_sha256(secret, strlen(secret), m, sizeof m, f + 8);
    if (write(fd, f, sizeof f) != (ssize_t)sizeof f)
        _exit(6);
}

/* A collector in a child process: listens (on lfd, or at path as uid
 * when uid >= 0), accepts one connection, proves (or not) per mode, and
 * then never reads again.  Its pid; it is killed by collector_end(). */
static pid_t collector_start(int lfd, const char *path, long uid,
                             enum collector_mode mode)
{
    int ready[2];
    CHECK_OK(pipe(ready));
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(ready[0]);
        if (uid >= 0 && (setgroups(0, NULL) != 0 ||
                         setresgid((gid_t)uid, (gid_t)uid, (gid_t)uid) != 0 ||
                         setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) != 0))
            _exit(7);
        if (path != NULL && (lfd = tu_bind_unix(path, true)) < 0)
            _exit(8);
        if (write(ready[1], "r", 1) != 1)
            _exit(9);
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0)
            _exit(10);
        if (mode != COLLECTOR_IDLE)
            collector_prove(fd, mode == COLLECTOR_PROVE
                                    ? COLLECTOR_SECRET
                                    : "not the collector secret at all");
        for (;;)
            pause();
    }
    close(ready[1]);
    char b;
    CHECK_MSG(read(ready[0], &b, 1) == 1, "the collector did not start");
    close(ready[0]);
    return pid;
}

static void collector_end(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* After the header: 1 MiB units until one waits out policy=block:MS (the
 * collector held the program back: it is trusted), or 40 (many times the
 * queue and the socket buffers) went in without waiting, the idle
 * collector cut loose instead (not trusted).  Returns whether it held. */
static bool collector_held_program(struct els_writer *w)
{
    struct evgen_buf b = evgen_block(0, 1, 0, "x", 1024 * 1024);
    bool held = false;
    for (int i = 0; i < 40 && !held; i++) {
        CHECK_INT(els_writer_write(w, b.p, b.len), >=, 0);
        held = stats_of(w).units_dropped[ELS_DROP_BLOCK_TIMEOUT] > 0;
    }
    struct els_stats st = stats_of(w);
    if (!held)  /* finished, the loss counted */
        CHECK_MSG(total_dropped(&st) > 0, "nothing was dropped, yet the "
                  "collector read nothing");
    evgen_free(&b);
    return held;
}

/* A writer on spec with the header written and its collector attached. */
static struct els_writer *collector_writer(const char *spec)
{
    struct els_writer *w = open_ok(spec);
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    evgen_free(&h);
    wait_consumers(w, 1);
    return w;
}

/* unix-connect: a collector listening as another uid (65534) is served as
 * under policy=drop: the program finishes, the loss counted, the log
 * says why; one listening as this uid holds the program (block). */
static void collector_unix_trusted_by_uid(void)
{
    tu_log_capture();
    char spec[700];
    const char *dir = check_path("d");
    CHECK_OK(mkdir(dir, 0777) < 0 ? -errno : 0);
    CHECK_OK(chmod(dir, 0777));
    if (geteuid() == 0)
        CHECK_OK(chmod(check_dir, 0711));   /* uid 65534 reaches d/ */
    if (geteuid() != 0) {
        printf("SKIPPED PART: collector_unix_trusted_by_uid: another uid's "
               "listener needs root\n");
    } else {
        const char *path = check_path("d/other.sock");
        pid_t pid = collector_start(-1, path, 65534, COLLECTOR_IDLE);
        snprintf(spec, sizeof spec, "unix-connect:%s?policy=block:200&"
                 "buffer=3M&linger=0.2", path);
        struct els_writer *w = collector_writer(spec);
        CHECK_MSG(!collector_held_program(w), "a collector of uid 65534 "
                  "held a policy=block program back");
        CHECK_MSG(tu_log_contains("the collector (listening as uid 65534) is "
                                  "not trusted"), "no log line says why");
        els_writer_close(w);
        collector_end(pid);
    }
    const char *mine = check_path("d/mine.sock");
    pid_t pid = collector_start(-1, mine, -1, COLLECTOR_IDLE);
    snprintf(spec, sizeof spec, "unix-connect:%s?policy=block:200&buffer=3M&"
             "linger=0.2", mine);
    struct els_writer *w = collector_writer(spec);
    CHECK_MSG(collector_held_program(w), "a collector of this uid was not "
              "trusted under policy=block");
    els_writer_close(w);
    collector_end(pid);
}

/* Note [Trusted consumers] as a decision on the peer's credentials: a
 * UNIX peer of this uid or root holds the program back, one of any other
 * uid does not, nor one whose uid is not known yet; trust=1 vouches only
 * for a collector the program dialled; TCP peers are never trusted on
 * their own; files and FIFOs the program opened are, callbacks always. */
static void trust_rule_by_peer(void)
{
    uid_t me = geteuid();
    long others[] = { 65534, 1, (long)me + 1, 1000 };
    for (int dialled = 0; dialled < 2; dialled++) {
        CHECK(elsi_consumer_trust_rule(ELSI_CONSUMER_FD, AF_UNIX, (long)me,
                                       dialled, false, me));
        CHECK(elsi_consumer_trust_rule(ELSI_CONSUMER_FD, AF_UNIX, 0, dialled,
                                       false, me));
        CHECK(!elsi_consumer_trust_rule(ELSI_CONSUMER_FD, AF_UNIX, -1, dialled,
                                        false, me));
        for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
            if (others[i] == (long)me || others[i] == 0)
                continue;
            CHECK_MSG(!elsi_consumer_trust_rule(ELSI_CONSUMER_FD, AF_UNIX,
                                                others[i], dialled, false, me),
                      "a UNIX peer of uid %ld is trusted by uid %ld (%s)",
                      others[i], (long)me, dialled ? "dialled" : "accepted");
            CHECK(!elsi_peer_uid_trusted(others[i], me));
        }
        CHECK(!elsi_consumer_trust_rule(ELSI_CONSUMER_FD, AF_INET, -1, dialled,
                                        false, me));
        CHECK(!elsi_consumer_trust_rule(ELSI_CONSUMER_FD, AF_INET6, -1, dialled,
                                        false, me));
        CHECK(elsi_consumer_trust_rule(ELSI_CONSUMER_CALLBACK, AF_UNSPEC, -1,
                                       dialled, false, me));
    }
    /* trust=1: the user vouches for the collector dialled, not for
     * whoever connects to a listener. */
    CHECK(elsi_consumer_trust_rule(ELSI_CONSUMER_FD, AF_INET, -1, true, true, me));
    CHECK(elsi_consumer_trust_rule(ELSI_CONSUMER_FD, AF_UNIX, 65534, true, true, me));
    CHECK(!elsi_consumer_trust_rule(ELSI_CONSUMER_FD, AF_INET, -1, false, true, me));
    CHECK(!elsi_consumer_trust_rule(ELSI_CONSUMER_FD, AF_UNIX, 65534, false, true,
                                    me == 65534 ? 65533 : me));
    /* A file or FIFO the program opened; nothing accepts one. */
    CHECK(elsi_consumer_trust_rule(ELSI_CONSUMER_FD, AF_UNSPEC, -1, true, false, me));
    CHECK(!elsi_consumer_trust_rule(ELSI_CONSUMER_FD, AF_UNSPEC, -1, false, false,
                                    me));
    /* The control channel's rule for UNIX peers is the same one. */
    CHECK(elsi_peer_uid_trusted((long)me, me));
    CHECK(elsi_peer_uid_trusted(0, me));
    CHECK(!elsi_peer_uid_trusted(-1, me));
    /* Seen from another user: this process's own uid is a stranger. */
    if (me != 0) {
        CHECK(!elsi_consumer_trust_rule(ELSI_CONSUMER_FD, AF_UNIX, (long)me, false,
                                        false, me + 1));
        CHECK(!elsi_peer_uid_trusted((long)me, me + 1));
    }
}

/* tcp-connect: untrusted unless trust=1 or the collector proves
 * collector-secret=; an untrusted one cannot stop the program, and the
 * start-up line and the connection's line say so. */
static void collector_tcp_trust(void)
{
    tu_log_capture();
    const char *secret = check_path("secret");
    CHECK_OK(tu_write_file(secret, COLLECTOR_SECRET "\n"));
    CHECK_OK(chmod(secret, 0600));
    static const struct {
        const char *query;
        enum collector_mode mode;
        bool trusted;
        const char *log;
    } cases[] = {
        { "", COLLECTOR_IDLE, false,
          "a TCP collector is not trusted: served as under policy=drop" },
        { "&trust=1", COLLECTOR_IDLE, true, "the collector is trusted (trust=1)" },
        { "&collector-secret=", COLLECTOR_PROVE, true,
          "proved the secret of collector-secret=: trusted" },
        { "&collector-secret=", COLLECTOR_WRONG, false,
          "gave a wrong proof of collector-secret=: not trusted" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned port;
        int lfd = tu_bind_tcp("127.0.0.1", true, &port);
        CHECK(lfd >= 0);
        pid_t pid = collector_start(lfd, NULL, -1, cases[i].mode);
        close(lfd);
        char spec[700];
        snprintf(spec, sizeof spec, "tcp-connect:127.0.0.1:%u?policy=block:200"
                 "&buffer=3M&linger=0.2%s%s", port, cases[i].query,
                 strstr(cases[i].query, "secret") ? secret : "");
        struct els_writer *w = collector_writer(spec);
        if (cases[i].mode != COLLECTOR_IDLE)    /* the proof is checked */
            WAIT_UNTIL(tu_log_contains(cases[i].log), 5, "case %zu: no log "
                       "line \"%s\"", i, cases[i].log);
        bool held = collector_held_program(w);
        CHECK_MSG(held == cases[i].trusted, "case %zu (%s): the collector %s",
                  i, cases[i].query, held ? "held the program back"
                                          : "was not trusted");
        CHECK_MSG(tu_log_contains(cases[i].log), "case %zu: no log line "
                  "\"%s\"", i, cases[i].log);
        els_writer_close(w);
        collector_end(pid);
    }
    /* A secret file others may read is refused at open, as control's. */
    CHECK_OK(chmod(secret, 0644));
    char spec[700], err[300];
    struct els_writer *w = NULL;
    snprintf(spec, sizeof spec, "tcp-connect:127.0.0.1:9?collector-secret=%s",
             secret);
    CHECK_INT(els_writer_open(spec, &w, err, sizeof err), ==, ELS_EINVAL);
    CHECK_MSG(strstr(err, "lets others read") != NULL, "%s", err);
}

static const struct check_case cases[] = {
    CHECK_CASE(writer_unix_roundtrip),
    CHECK_CASE(collector_unix_trusted_by_uid),
    CHECK_CASE(trust_rule_by_peer),
    CHECK_CASE(collector_tcp_trust),
    CHECK_CASE(writer_late_joiner),
    CHECK_CASE(writer_several_consumers),
    CHECK_CASE(writer_late_joiner_after_release),
    CHECK_CASE(writer_consumer_vanishes),
    CHECK_CASE(writer_fifo_reader_comes_and_goes),
    CHECK_CASE(writer_file_sink),
    CHECK_CASE(consumer_memory_bounded),
    CHECK_CASE(consumer_cut_out_of_memory),
    CHECK_CASE(joiner_starts_at_its_snapshot),
    CHECK_CASE(joiner_without_answer_starts_at_the_end),
    CHECK_CASE(snapshot_unseen_by_others_and_not_asked_early),
    CHECK_CASE(snapshot_never_waits_for_room),
    CHECK_CASE(snapshot_api_rejects_bad_arguments),
    CHECK_CASE(loss_note_lost_with_its_write_is_announced_again),
};

CHECK_MAIN(cases)
