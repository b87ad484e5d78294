/*
 * test_writer.c: the writer end to end inside one process: units go in
 * through els_writer_write() and come out of real UNIX sockets, FIFOs,
 * files and a custom callback sink.  Checks byte-exact delivery, late
 * joiners, several consumers at their own pace, slow consumers cut loose
 * with an in-band note, conservation of units under concurrent producers,
 * both policies, stop, fork and SIGPIPE safety.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "check.h"
#include "evgen.h"
#include "eventlog-sink.h"
#include "eventlog-sink/parse.h"
#include "format/evformat.h"

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

static struct els_writer *open_ok(const char *spec)
{
    char err[256];
    struct els_writer *w = NULL;
    int r = els_writer_open(spec, &w, err, sizeof err);
    CHECK_MSG(r == 0, "els_writer_open(%s): %d: %s", spec, r, err);
    return w;
}

static struct els_stats stats_of(struct els_writer *w)
{
    struct els_stats s;
    CHECK_OK(els_writer_stats(w, &s));
    return s;
}

static uint64_t total_dropped(const struct els_stats *s)
{
    uint64_t n = 0;
    for (int i = 0; i < ELS_DROP__COUNT; i++)
        n += s->units_dropped[i];
    return n;
}

static void check_conservation(const struct els_stats *s)
{
    uint64_t du = 0, db = 0;
    for (int i = 0; i < ELS_DROP__COUNT; i++) {
        du += s->units_dropped[i];
        db += s->bytes_dropped[i];
    }
    CHECK_U64(s->units_accepted, ==, s->units_sent + du + s->units_queued);
    CHECK_U64(s->bytes_accepted, ==, s->bytes_sent + db + s->bytes_queued);
}

/* A writer on SCHEME:PATH?QUERY (QUERY "" for none), PATH being NAME in
 * the case's directory; *path gets PATH. */
static struct els_writer *open_at(const char *scheme, const char *name,
                                  const char *query, const char **path)
{
    char spec[600];
    *path = check_path(name);
    snprintf(spec, sizeof spec, "%s:%s%s%s", scheme, *path, query[0] ? "?" : "",
             query);
    return open_ok(spec);
}

/* Poll every step_ms milliseconds until cond holds; fail with the
 * message (printf arguments) if it still does not after 10 s, a generous
 * deadline rather than a timing threshold. */
#define WAIT_UNTIL(cond, step_ms, ...)                                      \
    do {                                                                    \
        uint64_t wait_deadline_ = check_now_ms() + 10000 * CHECK_TIMEOUT_SCALE; \
        while (!(cond)) {                                                   \
            CHECK_MSG(check_now_ms() < wait_deadline_, __VA_ARGS__);        \
            check_sleep_ms(step_ms);                                        \
        }                                                                   \
    } while (0)

static void wait_consumers(struct els_writer *w, uint64_t n)
{
    WAIT_UNTIL(stats_of(w).consumers_connected >= n, 5,
               "no %llu consumers", (unsigned long long)n);
}

/* Wait until the writer has noticed that its last consumer left. */
static void wait_no_consumers(struct els_writer *w)
{
    WAIT_UNTIL(stats_of(w).consumers_connected == 0, 5,
               "consumers still connected");
}

static int unix_connect(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(fd >= 0);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    uint64_t deadline = check_now_ms() + 10000;
    while (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        CHECK_MSG(check_now_ms() < deadline, "connect %s: %s", path, strerror(errno));
        check_sleep_ms(10);
    }
    return fd;
}

/* A consumer reading into memory on its own thread until EOF. */
struct reader {
    int fd;
    pthread_t thread;
    struct evgen_buf got;
    atomic_size_t len;          /* bytes received so far */
    atomic_bool paused;         /* stop reading while set */
};

static void *reader_main(void *arg)
{
    struct reader *rd = arg;
    uint8_t buf[65536];
    for (;;) {
        if (atomic_load(&rd->paused)) {
            check_sleep_ms(5);
            continue;
        }
        ssize_t n = read(rd->fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        evgen_put(&rd->got, buf, (size_t)n);
        atomic_store(&rd->len, rd->got.len);
    }
    return NULL;
}

static void reader_start(struct reader *rd, int fd, bool paused)
{
    memset(rd, 0, sizeof *rd);
    rd->fd = fd;
    atomic_store(&rd->paused, paused);
    CHECK_OK(pthread_create(&rd->thread, NULL, reader_main, rd));
}

static void reader_join(struct reader *rd)
{
    atomic_store(&rd->paused, false);
    pthread_join(rd->thread, NULL);
    close(rd->fd);
}

/* The stream a consumer should receive: header, units, end. */
struct expected {
    struct evgen_buf header;
    struct evgen_buf all;       /* header + every unit + end */
};

static void check_stream_parses(const struct evgen_buf *got, bool complete)
{
    struct els_parser *p;
    struct els_parse_status st;
    CHECK_OK(els_parser_new(&p, NULL, NULL, 0));
    int r = els_parser_feed(p, got->p, got->len, NULL);
    els_parser_status(p, &st);
    CHECK_MSG(r == 0, "stream malformed: %s", st.error);
    if (complete)
        CHECK_MSG(st.where == ELS_PARSE_ENDED, "stream incomplete after %zu "
                  "bytes", got->len);
    els_parser_free(p);
}

static bool contains(const struct evgen_buf *b, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= b->len; i++)
        if (memcmp(b->p + i, needle, n) == 0)
            return true;
    return false;
}

/* Count blocks in a stream by capability: cap == ELSI_CAP_GLOBAL counts
 * in-band notes, anything else the test's units. */
static void count_blocks(const struct evgen_buf *b, size_t header_len,
                         uint64_t *units, uint64_t *notes)
{
    *units = *notes = 0;
    size_t off = header_len;
    while (off + ELSI_BLOCK_MARKER_BYTES <= b->len) {
        const uint8_t *p = b->p + off;
        if (p[0] == 0xff && p[1] == 0xff)
            break;
        CHECK_INT(p[0] << 8 | p[1], ==, ELSI_EVENT_BLOCK_MARKER);
        uint32_t size = (uint32_t)p[10] << 24 | (uint32_t)p[11] << 16 |
                        (uint32_t)p[12] << 8 | p[13];
        uint16_t cap = (uint16_t)(p[22] << 8 | p[23]);
        if (cap == ELSI_CAP_GLOBAL)
            (*notes)++;
        else
            (*units)++;
        off += size;
    }
}

/* Add up the figures of the in-band loss notes in a stream: "N units (B
 * bytes) dropped here" and "this consumer missed N units (B bytes)". */
static void sum_loss_notes(const struct evgen_buf *b, uint64_t *units,
                           uint64_t *bytes)
{
    static const char tag[] = "eventlog-sink: ";
    *units = *bytes = 0;
    for (size_t i = 0; i + sizeof tag - 1 <= b->len; i++) {
        if (memcmp(b->p + i, tag, sizeof tag - 1) != 0)
            continue;
        char text[256];
        size_t n = b->len - i < sizeof text - 1 ? b->len - i : sizeof text - 1;
        memcpy(text, b->p + i, n);
        text[n] = '\0';
        unsigned long long u, by;
        if (sscanf(text, "eventlog-sink: %llu units (%llu bytes) dropped here", &u, &by) == 2 ||
            sscanf(text, "eventlog-sink: this consumer missed %llu units (%llu bytes)", &u, &by) == 2) {
            *units += u;
            *bytes += by;
        }
    }
}

static uint64_t total_dropped_bytes(const struct els_stats *s)
{
    uint64_t n = 0;
    for (int i = 0; i < ELS_DROP__COUNT; i++)
        n += s->bytes_dropped[i];
    return n;
}

static void write_ok(struct els_writer *w, const void *p, size_t n)
{
    int r = els_writer_write(w, p, n);
    CHECK_MSG(r == 0, "els_writer_write: %d", r);
}

/* write_ok(), and append the unit to what the consumer must receive. */
static void write_expect(struct els_writer *w, struct evgen_buf *expect,
                         const void *p, size_t n)
{
    write_ok(w, p, n);
    evgen_put(expect, p, n);
}

// ---------------------------------------------------------------------------
// Delivery
// ---------------------------------------------------------------------------

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
    uint64_t units, notes;
    count_blocks(&slow.got, h.len, &units, &notes);
    CHECK_U64(units, <, 300);
    CHECK_U64(notes, >=, 1);
    evgen_free(&fast.got);
    evgen_free(&slow.got);
    evgen_free(&h);
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
    const char *sock;
    struct els_writer *w = open_at("unix", "s.sock", "policy=drop", &sock);
    int fd = unix_connect(sock);
    wait_consumers(w, 1);
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
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

// ---------------------------------------------------------------------------
// Policies and conservation, with a custom callback sink
// ---------------------------------------------------------------------------

static atomic_uint slow_sink_delay_ms;
static atomic_bool slow_sink_hold;     /* block in write while set */
static pthread_mutex_t got_lock = PTHREAD_MUTEX_INITIALIZER;
static struct evgen_buf slow_sink_got;

static int slow_open(void **sink, const struct els_sink_args *args)
{
    (void)args;
    *sink = &slow_sink_got;
    return 0;
}

static void slow_close(void *sink)
{
    (void)sink;
}

static int slow_write(void *sink, const void *buf, size_t len)
{
    (void)sink;
    while (atomic_load(&slow_sink_hold))
        check_sleep_ms(1);
    unsigned d = atomic_load(&slow_sink_delay_ms);
    if (d)
        check_sleep_ms(d);
    pthread_mutex_lock(&got_lock);
    evgen_put(&slow_sink_got, buf, len);
    pthread_mutex_unlock(&got_lock);
    return 0;
}

static const struct els_sink_ops slow_sink = {
    .struct_size = sizeof(struct els_sink_ops),
    .scheme = "test-slow",
    .style = ELS_SINK_CALLBACK,
    .open = slow_open,
    .close = slow_close,
    .write = slow_write,
};

struct producer_arg {
    struct els_writer *w;
    unsigned id, units;
    atomic_bool *stop_monitor;
};

static void *producer_main(void *arg)
{
    struct producer_arg *pa = arg;
    for (unsigned i = 0; i < pa->units; i++) {
        struct evgen_buf b = evgen_block((uint16_t)pa->id, i, 0, "p", 16 * 1024);
        int r = els_writer_write(pa->w, b.p, b.len);
        CHECK_MSG(r == 0 || r == 1, "write returned %d", r);
        free(b.p);
    }
    return NULL;
}

static void *monitor_main(void *arg)
{
    struct producer_arg *pa = arg;
    while (!atomic_load(pa->stop_monitor)) {
        struct els_stats s = stats_of(pa->w);
        check_conservation(&s);
        check_sleep_ms(1);
    }
    return NULL;
}

static void run_producers(const char *spec, unsigned threads, unsigned units,
                          struct els_stats *before_close)
{
    struct els_writer *w = open_ok(spec);
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    pthread_t t[8], mon;
    struct producer_arg pa[8];
    atomic_bool stop_monitor = false;
    struct producer_arg ma = { .w = w, .stop_monitor = &stop_monitor };
    CHECK_OK(pthread_create(&mon, NULL, monitor_main, &ma));
    for (unsigned i = 0; i < threads; i++) {
        pa[i] = (struct producer_arg){ .w = w, .id = i, .units = units };
        CHECK_OK(pthread_create(&t[i], NULL, producer_main, &pa[i]));
    }
    for (unsigned i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    atomic_store(&slow_sink_hold, false);   /* a held sink may go on now */
    write_ok(w, evgen_data_end, 2);
    /* Once the sink has taken everything, every loss has been counted
     * (a held sink is cut loose only when the writer runs again). */
    WAIT_UNTIL(stats_of(w).units_queued == 0, 1, "the sink did not drain the queue");
    atomic_store(&stop_monitor, true);
    pthread_join(mon, NULL);
    *before_close = stats_of(w);
    check_conservation(before_close);
    CHECK_OK(els_writer_close(w));
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

// ---------------------------------------------------------------------------
// FIFO, file, stop, wait, fork, errors
// ---------------------------------------------------------------------------

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

static void writer_stop_with_stalled_consumer(void)
{
    const char *sock;
    struct els_writer *w = open_at("unix", "s.sock", "buffer=4M&linger=0.2", &sock);
    int fd = unix_connect(sock);    /* never reads */
    wait_consumers(w, 1);
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    struct evgen_buf b = evgen_block(0, 1, 0, "x", 256 * 1024);
    for (unsigned i = 0; i < 40; i++)
        els_writer_write(w, b.p, b.len);
    els_writer_write(w, evgen_data_end, 2);
    /* Returns after linger= even though nobody reads (the harness's
     * timeout fails the case if it hangs). */
    CHECK_OK(els_writer_close(w));
    struct reader rd;
    reader_start(&rd, fd, false);
    reader_join(&rd);
    /* What it got is a well-formed prefix. */
    check_stream_parses(&rd.got, false);
    free(b.p);
    evgen_free(&rd.got);
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

static const struct check_case cases[] = {
    CHECK_CASE(writer_unix_roundtrip),
    CHECK_CASE(writer_late_joiner),
    CHECK_CASE(writer_several_consumers),
    CHECK_CASE_T(writer_slow_consumer_cut_loose, 60),
    CHECK_CASE(writer_late_joiner_after_release),
    CHECK_CASE(writer_consumer_vanishes),
    CHECK_CASE_T(writer_conservation_under_producers, 60),
    CHECK_CASE_T(writer_block_policy_loses_nothing, 60),
    CHECK_CASE(writer_block_timeout),
    CHECK_CASE(writer_unit_too_big),
    CHECK_CASE(writer_fifo_reader_comes_and_goes),
    CHECK_CASE(writer_file_sink),
    CHECK_CASE(writer_stop_with_stalled_consumer),
    CHECK_CASE_T(writer_wait_for_first_consumer, 15),
    CHECK_CASE(writer_fork_child_leaves_parent_alone),
    CHECK_CASE(writer_open_errors),
};

CHECK_MAIN(cases)
