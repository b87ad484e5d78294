/*
 * test_producer.c: the producer side (lib/writer/producer.c): what
 * els_writer_write() returns and counts for units it cannot take, and
 * writes racing els_writer_close(): a producer still copying a unit when
 * close begins keeps the writer alive until it has left (Note [Producers
 * in flight]); a write that starts once close has begun is refused with
 * ELS_ESTOPPED and not counted.  Units handed over
 * (els_writer_hand_over(), Note [Units handed over]): a full buffer is
 * kept and the producer gets another, a small unit is copied, a dropped
 * unit leaves the producer its buffer, and the consumer receives every
 * byte either way.  The memory the queue holds with units handed over and
 * a consumer that never reads stays within buffer=, counted by the queue
 * and by the test (the byte ring's resident pages, what malloc handed
 * out); a new buffer size lets the old spares go.  Run under
 * ThreadSanitizer by scripts/sanitize.sh.
 */
#include <sched.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "writer/writer_impl.h"
#include "writer/writer_test.h"

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


// ---------------------------------------------------------------------------
// The queue's memory with units handed over (Note [The queue's memory] in
// lib/queue/unitq.h), counted by the queue and by the test
// ---------------------------------------------------------------------------

/* Bytes malloc has handed out and not had back, in every arena and in
 * chunks of their own (mallinfo2); what a sanitizer's allocator hands
 * out is not in it (memory_probe_malloc() tells). */
static uint64_t malloc_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return (uint64_t)mi.uordblks + (uint64_t)mi.hblkhd;
}

/* Does malloc_in_use() see a 1 MiB malloc? */
static bool memory_probe_malloc(void)
{
    uint64_t before = malloc_in_use();
    void *p = malloc(1 << 20);
    CHECK(p != NULL);
    bool seen = malloc_in_use() >= before + (1 << 20);
    free(p);
    return seen;
}

/* Resident bytes of [p, p + len), as the kernel says (mincore); vec has a
 * byte for each page. */
static uint64_t resident_bytes(const void *p, size_t len, unsigned char *vec)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = (uintptr_t)p & ~(page - 1);
    uintptr_t end = ((uintptr_t)p + len + page - 1) & ~(page - 1);
    CHECK_OK(mincore((void *)start, end - start, vec));
    uint64_t n = 0;
    for (uintptr_t i = 0; i < (end - start) / page; i++)
        n += vec[i] & 1;
    return n * page;
}

static uint64_t queue_memory(struct els_writer *w)
{
    pthread_mutex_lock(&w->lock);
    uint64_t m = elsi_unitq_memory(&w->queue.uq);
    pthread_mutex_unlock(&w->lock);
    return m;
}

/*
 * A consumer that never reads, and a producer with two capabilities'
 * buffers that hands over every full one and has its partly filled ones
 * (flushes) copied, as the RTS does: the memory the writer holds for the
 * queue (the byte ring's resident bytes, the buffers retained, the spares)
 * stays within buffer=, both as the queue counts it and as the test
 * counts it itself: the byte ring's resident pages (mincore) plus what
 * malloc has handed out since the start (mallinfo2), less what the test
 * holds, with room for the one unit a consumer cut loose keeps and its
 * notes.  Before the bound counted the byte ring's touched bytes and the
 * spares, the copies walked the whole byte ring while buffers and spares
 * filled buffer= again: twice buffer=.
 */
static void hand_over_memory_bounded_stalled_consumer(void)
{
    enum { CAP = 8 << 20, SIZE = 256 << 10, STEPS = 900 };
    int fd;
    struct evgen_buf h;
    struct els_writer *w = open_unix_with_client("buffer=8M&policy=drop&consumer-memory=1M",
                                                 &fd, &h);
    /* The consumer never reads: the socket's buffers fill and it stalls. */
    struct evgen_buf full = evgen_block(0, 1, 1, "full", SIZE * 3 / 4);
    struct evgen_buf part[3] = {
        evgen_block(0, 1, 1, "part", SIZE / 8),
        evgen_block(0, 1, 1, "part", SIZE / 4),
        evgen_block(0, 1, 1, "part", SIZE / 2 - 4096),
    };
    CHECK(full.len <= SIZE && part[2].len < SIZE / 2);
    void *cur[2] = { malloc(SIZE), malloc(SIZE) };
    CHECK(cur[0] != NULL && cur[1] != NULL);
    pthread_mutex_lock(&w->lock);
    const uint8_t *ring_buf = w->queue.uq.buf;
    CHECK_U64(w->queue.uq.cap, ==, CAP);
    pthread_mutex_unlock(&w->lock);
    unsigned char *vec = malloc(CAP / 4096 + 2);
    CHECK(vec != NULL);
    bool count_malloc = memory_probe_malloc();
    uint64_t base = malloc_in_use();
    uint64_t ring_base = resident_bytes(ring_buf, CAP, vec);
    /* What a consumer cut loose may keep besides (the rest of one unit,
     * and its notes), and the descriptors' pages touched. */
    const uint64_t slack = SIZE + (256 << 10);
    uint64_t worst = 0, worst_step = 0;
    unsigned copied = 0;
    /* At least STEPS steps, and on until the run did what it is for
     * (below): how many full buffers find room to be handed over
     * depends on how soon the writer thread frees what it cut loose,
     * which a loaded machine delays, so the count of steps is not fixed
     * (a step that handed nothing over yields to the writer). */
    unsigned handed = 0;
    for (unsigned step = 0;
         step < STEPS || ((handed < 100 || copied < 100) && step < 200 * STEPS);
         step++) {
        unsigned c = step % 2;
        bool flush = step % 3 == 2;
        const struct evgen_buf *b = flush ? &part[(step / 3) % 3] : &full;
        memcpy(cur[c], b->p, b->len);
        void *was = cur[c];
        int r = els_writer_hand_over(w, &cur[c], b->len, SIZE,
                                     flush ? ELS_REASON_FLUSH : ELS_REASON_BUFFER_FULL);
        CHECK_MSG(r == 0 || r == 1, "step %u: els_writer_hand_over: %d", step, r);
        if (flush) {
            CHECK(cur[c] == was);
            copied += r == 0;
        } else if (cur[c] != was) {
            handed++;
        } else {
            sched_yield();
        }
        uint64_t counted = queue_memory(w);
        CHECK_MSG(counted <= CAP, "step %u: the queue counts %" PRIu64
                  " bytes held, over buffer=%d", step, counted, CAP);
        uint64_t ring_resident = resident_bytes(ring_buf, CAP, vec) - ring_base;
        uint64_t allocated = 0;
        if (count_malloc) {
            uint64_t now = malloc_in_use();
            allocated = now > base ? now - base : 0;
        }
        uint64_t held = ring_resident + allocated;
        if (held > worst) {
            worst = held;
            worst_step = step;
        }
        CHECK_MSG(held <= CAP + slack, "step %u: the queue holds %" PRIu64
                  " bytes: %" PRIu64 " of its byte ring resident and %" PRIu64
                  " allocated since it started (it counts %" PRIu64 "), over "
                  "buffer=%d plus %" PRIu64, step, held, ring_resident,
                  allocated, counted, CAP, slack);
    }
    fprintf(stderr, "  most held: %" PRIu64 " bytes at step %" PRIu64
            " (byte ring and buffers%s), buffer=%d\n", worst, worst_step,
            count_malloc ? "" : "; malloc not counted here", CAP);
    /* What the run was meant to do: full buffers kept, flushes copied,
     * a queue that filled (the consumer cut loose or units dropped). */
    struct els_stats s = stats_of(w);
    CHECK_U64(s.units_handed_over, >=, 100);
    CHECK_U64(copied, >=, 100);
    CHECK_U64(total_dropped(&s), >, 0);
    check_conservation(&s);
    CHECK_OK(els_writer_close(w));
    close(fd);
    free(cur[0]);
    free(cur[1]);
    free(vec);
    evgen_free(&full);
    for (int i = 0; i < 3; i++)
        evgen_free(&part[i]);
    evgen_free(&h);
}

/* Whether the pool holds spares of size, and how many; lock taken. */
static unsigned pool_spares(struct els_writer *w, size_t size)
{
    pthread_mutex_lock(&w->lock);
    unsigned n = w->queue.pool.size == size ? w->queue.pool.n : 0;
    pthread_mutex_unlock(&w->lock);
    return n;
}

/* The RTS's buffer size changes while the program runs: the spares of the
 * old size are freed as soon as a producer asks for the new one, and
 * spares of the new size are kept from then on. */
static void hand_over_new_size_frees_old_spares(void)
{
    enum { OLD = 256 << 10, NEW = 128 << 10, N = 8 };
    int fd;
    struct evgen_buf h;
    struct els_writer *w = open_unix_with_client("buffer=16M", &fd, &h);
    struct reader rd;
    reader_start(&rd, fd, true);
    struct evgen_buf old_block = evgen_block(0, 1, 1, "old", OLD * 3 / 4);
    struct evgen_buf new_block = evgen_block(0, 2, 1, "new", NEW * 3 / 4);
    void *cur = malloc(OLD);
    CHECK(cur != NULL);
    /* N buffers of the old size queued while the consumer waits, then
     * sent: their buffers come back as spares (all but those a producer
     * took again meanwhile: the socket may take a unit before the
     * consumer reads). */
    for (unsigned i = 0; i < N; i++) {
        memcpy(cur, old_block.p, old_block.len);
        CHECK_INT(els_writer_hand_over(w, &cur, old_block.len, OLD,
                                       ELS_REASON_BUFFER_FULL), ==, 0);
    }
    atomic_store(&rd.paused, false);
    WAIT_UNTIL(stats_of(w).units_sent == N, 5, "the %d units were not sent", N);
    unsigned n_old = pool_spares(w, OLD);
    CHECK_U64(n_old, >=, N / 2);
    free(cur);
    cur = malloc(NEW);
    CHECK(cur != NULL);
    bool count_malloc = memory_probe_malloc();
    uint64_t before = malloc_in_use();
    /* The first buffer of the new size: the old spares go. */
    memcpy(cur, new_block.p, new_block.len);
    CHECK_INT(els_writer_hand_over(w, &cur, new_block.len, NEW,
                                   ELS_REASON_BUFFER_FULL), ==, 0);
    pthread_mutex_lock(&w->lock);
    size_t pool_size = w->queue.pool.size;
    unsigned pool_n = w->queue.pool.n;
    uint64_t counted = elsi_unitq_memory(&w->queue.uq);
    pthread_mutex_unlock(&w->lock);
    CHECK_MSG(pool_n == 0 || pool_size == NEW, "%u spares of %zu bytes kept "
              "after the buffer size became %d", pool_n, pool_size, NEW);
    CHECK_U64(counted, <=, 2 * NEW);    /* the new unit; its spare, once back */
    if (count_malloc) {
        uint64_t now = malloc_in_use();
        /* The old spares freed, one new spare malloc'd (the producer's). */
        CHECK_MSG(now + n_old * (uint64_t)OLD <= before + NEW + (64 << 10),
                  "malloc'd bytes went from %" PRIu64 " to %" PRIu64
                  ": the %u spares of %d bytes were not freed", before, now,
                  n_old, OLD);
    }
    /* More of the new size: once sent, their buffers are kept. */
    for (unsigned i = 0; i < 3; i++) {
        memcpy(cur, new_block.p, new_block.len);
        CHECK_INT(els_writer_hand_over(w, &cur, new_block.len, NEW,
                                       ELS_REASON_BUFFER_FULL), ==, 0);
    }
    WAIT_UNTIL(stats_of(w).units_sent == N + 4 && pool_spares(w, NEW) >= 1, 5,
               "no spare of the new size kept");
    write_ok(w, evgen_data_end, 2);
    struct els_stats s = stats_of(w);
    CHECK_U64(s.units_handed_over, ==, N + 4);
    check_conservation(&s);
    CHECK_OK(els_writer_close(w));
    reader_join(&rd);
    check_stream_parses(&rd.got, true);
    free(cur);
    evgen_free(&rd.got);
    evgen_free(&old_block);
    evgen_free(&new_block);
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
    CHECK_CASE_T(hand_over_memory_bounded_stalled_consumer, 120),
    CHECK_CASE(hand_over_new_size_frees_old_spares),
};

CHECK_MAIN(cases)
