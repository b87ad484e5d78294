/*
 * writer_test.h: what the tests of the writer's parts share (test_writer,
 * test_consumer, test_release, test_loop, test_producer, in
 * tests/writer/): opening writers on real endpoints, readers that
 * consume on their own thread, checks on the stream (parses, counts of
 * blocks and notes) and on the counters (conservation), and a custom
 * callback sink ("test-slow:") that can be slowed down or held.
 *
 * Include after check.h.  Everything is static inline, so each test pays
 * only for what it uses.
 */
#ifndef ELS_TEST_WRITER_TEST_H
#define ELS_TEST_WRITER_TEST_H

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "check.h"
#include "evgen.h"
#include "eventlog-sink.h"
#include "eventlog-sink/parse.h"
#include "format/evformat.h"

// ---------------------------------------------------------------------------
// Writers, counters, consumers
// ---------------------------------------------------------------------------

static inline struct els_writer *open_ok(const char *spec)
{
    char err[256];
    struct els_writer *w = NULL;
    int r = els_writer_open(spec, &w, err, sizeof err);
    CHECK_MSG(r == 0, "els_writer_open(%s): %d: %s", spec, r, err);
    return w;
}

static inline struct els_stats stats_of(struct els_writer *w)
{
    struct els_stats s;
    CHECK_OK(els_writer_stats(w, &s));
    return s;
}

static inline uint64_t total_dropped(const struct els_stats *s)
{
    uint64_t n = 0;
    for (int i = 0; i < ELS_DROP__COUNT; i++)
        n += s->units_dropped[i];
    return n;
}

static inline void check_conservation(const struct els_stats *s)
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
static inline struct els_writer *open_at(const char *scheme, const char *name,
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

static inline void wait_consumers(struct els_writer *w, uint64_t n)
{
    WAIT_UNTIL(stats_of(w).consumers_connected >= n, 5,
               "no %llu consumers", (unsigned long long)n);
}

/* Wait until the writer has noticed that its last consumer left. */
static inline void wait_no_consumers(struct els_writer *w)
{
    WAIT_UNTIL(stats_of(w).consumers_connected == 0, 5,
               "consumers still connected");
}

static inline int unix_connect(const char *path)
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

/* A consumer reading into memory on its own thread until EOF: chunk
 * bytes at a time (0: 64 KiB), pausing pace_ms after each read (a slow
 * consumer) and while paused is set. */
struct reader {
    int fd;
    pthread_t thread;
    struct evgen_buf got;
    atomic_size_t len;          /* bytes received so far */
    atomic_bool paused;         /* stop reading while set */
    size_t chunk;
    unsigned pace_ms;
};

static inline void *reader_main(void *arg)
{
    struct reader *rd = arg;
    uint8_t buf[65536];
    size_t chunk = rd->chunk > 0 && rd->chunk < sizeof buf ? rd->chunk : sizeof buf;
    for (;;) {
        if (atomic_load(&rd->paused)) {
            check_sleep_ms(5);
            continue;
        }
        ssize_t n = read(rd->fd, buf, chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        evgen_put(&rd->got, buf, (size_t)n);
        atomic_store(&rd->len, rd->got.len);
        if (rd->pace_ms > 0)
            check_sleep_ms(rd->pace_ms);
    }
    return NULL;
}

static inline void reader_start_paced(struct reader *rd, int fd, bool paused,
                                      size_t chunk, unsigned pace_ms)
{
    memset(rd, 0, sizeof *rd);
    rd->fd = fd;
    rd->chunk = chunk;
    rd->pace_ms = pace_ms;
    atomic_store(&rd->paused, paused);
    CHECK_OK(pthread_create(&rd->thread, NULL, reader_main, rd));
}

static inline void reader_start(struct reader *rd, int fd, bool paused)
{
    reader_start_paced(rd, fd, paused, 0, 0);
}

static inline void reader_join(struct reader *rd)
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

static inline void check_stream_parses(const struct evgen_buf *got, bool complete)
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

static inline bool contains(const struct evgen_buf *b, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= b->len; i++)
        if (memcmp(b->p + i, needle, n) == 0)
            return true;
    return false;
}

/* Count blocks in a stream by capability: cap == ELSI_CAP_GLOBAL counts
 * in-band notes, anything else the test's units. */
static inline void count_blocks(const struct evgen_buf *b, size_t header_len,
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

static inline void write_ok(struct els_writer *w, const void *p, size_t n)
{
    int r = els_writer_write(w, p, n);
    CHECK_MSG(r == 0, "els_writer_write: %d", r);
}

/* A writer on unix:SOCKET?query (SOCKET in the case's directory) with one
 * client connected (*fd, which the test reads or not) and the header
 * chunk written (*h). */
static inline struct els_writer *open_unix_with_client(const char *query,
                                                       int *fd,
                                                       struct evgen_buf *h)
{
    const char *sock;
    struct els_writer *w = open_at("unix", "s.sock", query, &sock);
    *fd = unix_connect(sock);
    wait_consumers(w, 1);
    *h = evgen_header();
    write_ok(w, h->p, h->len);
    return w;
}

/* write_ok(), and append the unit to what the consumer must receive. */
static inline void write_expect(struct els_writer *w, struct evgen_buf *expect,
                         const void *p, size_t n)
{
    write_ok(w, p, n);
    evgen_put(expect, p, n);
}

// ---------------------------------------------------------------------------
// A custom callback sink, and producer threads
// ---------------------------------------------------------------------------

static atomic_uint slow_sink_delay_ms;
static atomic_bool slow_sink_hold;     /* block in write while set */
static pthread_mutex_t got_lock = PTHREAD_MUTEX_INITIALIZER;
static struct evgen_buf slow_sink_got;

static inline int slow_open(void **sink, const struct els_sink_args *args)
{
    (void)args;
    *sink = &slow_sink_got;
    return 0;
}

static atomic_bool slow_sink_closed;   /* close() was called */
static atomic_bool slow_sink_fail;     /* write() fails (-EIO) while set */
static atomic_uint slow_sink_writes;   /* write() calls begun */

static inline void slow_close(void *sink)
{
    (void)sink;
    atomic_store(&slow_sink_closed, true);
}

static inline int slow_write(void *sink, const void *buf, size_t len)
{
    (void)sink;
    atomic_fetch_add(&slow_sink_writes, 1);
    while (atomic_load(&slow_sink_hold))
        check_sleep_ms(1);
    unsigned d = atomic_load(&slow_sink_delay_ms);
    if (d)
        check_sleep_ms(d);
    if (atomic_load(&slow_sink_fail))
        return -EIO;
    pthread_mutex_lock(&got_lock);
    evgen_put(&slow_sink_got, buf, len);
    pthread_mutex_unlock(&got_lock);
    return 0;
}

static const struct els_sink_ops slow_sink __attribute__((unused)) = {
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

static inline void *producer_main(void *arg)
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

static inline void *monitor_main(void *arg)
{
    struct producer_arg *pa = arg;
    while (!atomic_load(pa->stop_monitor)) {
        struct els_stats s = stats_of(pa->w);
        check_conservation(&s);
        check_sleep_ms(1);
    }
    return NULL;
}

static inline void run_producers(const char *spec, unsigned threads, unsigned units,
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

/* Add up the figures of the in-band loss notes in a stream: "N units (B
 * bytes) dropped here" and "this consumer missed N units (B bytes)". */
static inline void sum_loss_notes(const struct evgen_buf *b, uint64_t *units,
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

static inline uint64_t total_dropped_bytes(const struct els_stats *s)
{
    uint64_t n = 0;
    for (int i = 0; i < ELS_DROP__COUNT; i++)
        n += s->bytes_dropped[i];
    return n;
}

#endif /* ELS_TEST_WRITER_TEST_H */
