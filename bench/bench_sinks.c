/*
 * bench_sinks.c: the library's own benchmarks, driven by scripts/bench.sh.
 *
 * Two sections.  "throughput" pushes eventlog-shaped units (a header
 * chunk, then 2 MiB blocks that start with a block marker, then DATA_END)
 * through each built-in sink under policy=block to a consumer that drains
 * as fast as it can, and measures the same bytes pushed by a plain write()
 * loop over the same kind of channel in the same run, interleaved (raw,
 * sink, raw, sink...), so that the sink/raw ratio cancels the machine's
 * drift.  "writecost" times els_writer_write() for one 2 MiB unit on the
 * posting thread (fast consumer, stalled consumer under policy=drop, no
 * consumer) against a plain memcpy of the same bytes, interleaved sample by
 * sample.  Both print Markdown tables for docs/BENCHMARKS.md.
 *
 * Not its job: pass/fail on timings (the machine is shared and noisy; a
 * run fails only when the library loses or corrupts data, which policy=
 * block forbids), building itself (scripts/bench.sh), or benchmarks that
 * need a Haskell program (bench/bench_app.sh).  It uses the public API
 * only.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "eventlog-sink.h"
#include "evgen.h"

/* An RTS buffer is 2 MiB; a block never exceeds it.  evgen_block() pads
 * with user-message events of at most 2 + 8 + 2 + 16 bytes, so asking for
 * 64 bytes less keeps the block under 2 MiB. */
#define BENCH_UNIT_MAX (2u * 1024 * 1024)
#define BENCH_READ_BUF (1u * 1024 * 1024)
/* The fifo sink asks for a 1 MiB pipe (lib/sinks/fifo.c); the raw pipe gets
 * the same so that the ratio measures the library, not the pipe size. */
#define BENCH_PIPE_SIZE (1024 * 1024)
#define BENCH_MAX_PRODUCERS 16
#define BENCH_MAX_REPS 64

static struct {
    const char *dir;
    unsigned mb;
    unsigned reps;
    unsigned samples;
    unsigned pace_us;
    unsigned producers;
    const char *sinks;
} bench_opt = {
    .dir = NULL, .mb = 512, .reps = 9, .samples = 2000, .pace_us = 1000,
    /* Not tcp (listening): its clients are untrusted (Note [Trusted
     * consumers]), so under policy=block a reader slower than the
     * producer is cut loose by design; tcp-connect measures the same TCP
     * path with a trusted collector.  --sinks tcp still runs it. */
    .producers = 1, .sinks = "unix,fifo,file,unix-connect,tcp-connect",
};

static struct evgen_buf bench_header;
static struct evgen_buf bench_block[BENCH_MAX_PRODUCERS];
static int bench_failures;
/* The library's warnings (losses at close) matter in the throughput runs;
 * the informational lines (listening on ...) would only clutter. */
static bool bench_log_quiet;

static double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void bench_sleep_us(unsigned us)
{
    struct timespec ts = { us / 1000000u, (long)(us % 1000000u) * 1000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void bench_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void bench_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bench_sinks: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

/* A data problem (not a timing): recorded, printed, and the exit status
 * says so. */
static void bench_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void bench_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bench_sinks: FAIL: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    bench_failures++;
}

static void bench_path(char *buf, size_t len, const char *name)
{
    int n = snprintf(buf, len, "%s/%s", bench_opt.dir, name);
    if (n < 0 || (size_t)n >= len)
        bench_die("path too long: %s/%s", bench_opt.dir, name);
}

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* q-quantile of v[0..n) by the nearest-rank rule; sorts v. */
static double bench_quantile(double *v, size_t n, double q)
{
    qsort(v, n, sizeof *v, bench_cmp_double);
    size_t k = (size_t)(q * (double)n + 0.999999);
    if (k < 1)
        k = 1;
    if (k > n)
        k = n;
    return v[k - 1];
}

static double bench_median(const double *v, size_t n)
{
    double tmp[BENCH_MAX_REPS];
    memcpy(tmp, v, n * sizeof *v);
    qsort(tmp, n, sizeof *tmp, bench_cmp_double);
    return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

static void bench_make_units(void)
{
    bench_header = evgen_header();
    for (unsigned p = 0; p < BENCH_MAX_PRODUCERS; p++) {
        bench_block[p] = evgen_block((uint16_t)p, 1000u * (p + 1), 0, "bench",
                                     BENCH_UNIT_MAX - 64);
        if (bench_block[p].len > BENCH_UNIT_MAX)
            bench_die("generated block of %zu bytes exceeds 2 MiB",
                      bench_block[p].len);
    }
}

// ---------------------------------------------------------------------------
// Descriptors
// ---------------------------------------------------------------------------

static int bench_unix_listen(const char *path)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof sa.sun_path)
        bench_die("socket path too long: %s", path);
    strcpy(sa.sun_path, path);
    unlink(path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(fd, 4) != 0)
        bench_die("listen on %s: %s", path, strerror(errno));
    return fd;
}

static int bench_unix_connect(const char *path)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
        bench_die("connect to %s: %s", path, strerror(errno));
    return fd;
}

/* Listen on 127.0.0.1 with a free port, stored in *port. */
static int bench_tcp_listen(unsigned *port)
{
    struct sockaddr_in sa = { .sin_family = AF_INET,
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(fd, 4) != 0 || getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
        bench_die("listen on 127.0.0.1:0: %s", strerror(errno));
    *port = ntohs(sa.sin_port);
    return fd;
}

static int bench_tcp_connect(unsigned port)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
        bench_die("connect to 127.0.0.1:%u: %s", port, strerror(errno));
    return fd;
}

static int bench_accept(int lfd)
{
    int fd;
    while ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0 && errno == EINTR) {
    }
    if (fd < 0)
        bench_die("accept: %s", strerror(errno));
    return fd;
}

/* The raw baseline's writer: a plain blocking loop.  MSG_NOSIGNAL on
 * sockets only so that a broken run reports instead of dying. */
static void bench_write_all(int fd, bool is_socket, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = is_socket ? send(fd, p, len, MSG_NOSIGNAL) : write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            bench_die("raw write: %s", n < 0 ? strerror(errno) : "wrote 0");
        p += n;
        len -= (size_t)n;
    }
}

// ---------------------------------------------------------------------------
// The consumer: a thread that read()s as fast as it can
// ---------------------------------------------------------------------------

struct bench_reader {
    int fd;             /* what to read, or -1: accept one on listen_fd */
    int listen_fd;
    uint64_t expect;    /* bytes of a complete stream */
    _Atomic uint64_t got;
    _Atomic double t_done;  /* when got reached expect; 0 before */
    int err;
    pthread_t thread;
};

static void *bench_reader_main(void *arg)
{
    struct bench_reader *r = arg;
    if (r->fd < 0)
        r->fd = bench_accept(r->listen_fd);
    uint8_t *buf = malloc(BENCH_READ_BUF);
    if (buf == NULL)
        bench_die("out of memory");
    uint64_t got = 0;
    for (;;) {
        ssize_t n = read(r->fd, buf, BENCH_READ_BUF);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            r->err = errno;
            break;
        }
        if (n == 0)
            break;
        bool was_short = got < r->expect;
        got += (uint64_t)n;
        if (was_short && got >= r->expect)
            atomic_store(&r->t_done, bench_now());
        atomic_store_explicit(&r->got, got, memory_order_release);
    }
    free(buf);
    close(r->fd);
    return NULL;
}

static void bench_reader_start(struct bench_reader *r, int fd, int listen_fd,
                               uint64_t expect)
{
    r->fd = fd;
    r->listen_fd = listen_fd;
    r->expect = expect;
    atomic_init(&r->got, 0);
    atomic_init(&r->t_done, 0.0);
    r->err = 0;
    if (pthread_create(&r->thread, NULL, bench_reader_main, r) != 0)
        bench_die("pthread_create failed");
}

/* Wait until the reader has at least n bytes.  The main thread sleeps
 * between looks so that it takes little of the CPUs being measured.  With
 * a writer w, stop waiting as soon as it has dropped a unit: the reader
 * will never get n bytes (a TCP client is not trusted, so policy=block
 * cuts it loose when it falls behind: Note [Trusted consumers]), and the
 * caller's checks report the loss. */
static void bench_reader_wait(struct bench_reader *r, uint64_t n, const char *what,
                              struct els_writer *w)
{
    double deadline = bench_now() + 60;
    while (atomic_load_explicit(&r->got, memory_order_acquire) < n) {
        if (w != NULL) {
            struct els_stats st;
            uint64_t dropped = 0;
            els_writer_stats(w, &st);
            for (int c = 0; c < ELS_DROP__COUNT; c++)
                dropped += st.units_dropped[c];
            if (dropped != 0)
                return;
        }
        if (bench_now() > deadline)
            bench_die("%s: the consumer has %" PRIu64 " of %" PRIu64
                      " bytes after 60 s", what, (uint64_t)atomic_load(&r->got), n);
        bench_sleep_us(200);
    }
}

/* CPU seconds used by the whole process so far (all threads). */
static double bench_cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

// ---------------------------------------------------------------------------
// Throughput
// ---------------------------------------------------------------------------

/*
 * Each run, raw or through a sink, carries the same stream: the header
 * chunk, BENCH_WARMUP blocks, n_units blocks, DATA_END.  The clock runs
 * from the first of the n_units blocks (once the warm-up blocks have
 * reached the consumer) to the last byte: a new writer's 32 MiB queue
 * takes page faults on its first pass, a new socket grows its buffers,
 * and neither is the steady rate the target is about.  (The first pass is
 * a one-off cost per writer; docs/BENCHMARKS.md gives its size.)
 */
#define BENCH_WARMUP 24u

enum bench_family { FAMILY_UNIX, FAMILY_TCP, FAMILY_PIPE, FAMILY_FILE };

static const char *const bench_family_name[] = {
    [FAMILY_UNIX] = "raw unix socket",
    [FAMILY_TCP] = "raw TCP loopback",
    [FAMILY_PIPE] = "raw pipe (1 MiB)",
    [FAMILY_FILE] = "raw write() to file",
};

struct bench_sink_case {
    const char *scheme;
    enum bench_family family;
};

static const struct bench_sink_case bench_sink_cases[] = {
    { "unix", FAMILY_UNIX },
    { "tcp", FAMILY_TCP },
    { "fifo", FAMILY_PIPE },
    { "file", FAMILY_FILE },
    { "unix-connect", FAMILY_UNIX },
    { "tcp-connect", FAMILY_TCP },
};
#define BENCH_N_SINKS (sizeof bench_sink_cases / sizeof bench_sink_cases[0])

/* Timed blocks per run: --mb worth, a multiple of the producer count. */
static unsigned bench_units(void)
{
    uint64_t total = (uint64_t)bench_opt.mb * 1024 * 1024;
    unsigned n = (unsigned)(total / bench_block[0].len);
    n -= n % bench_opt.producers;
    return n > 0 ? n : bench_opt.producers;
}

static uint64_t bench_warmup_bytes(void)
{
    return bench_header.len + (uint64_t)BENCH_WARMUP * bench_block[0].len;
}

static uint64_t bench_timed_bytes(unsigned n_units)
{
    return (uint64_t)n_units * bench_block[0].len + sizeof evgen_data_end;
}

struct bench_result {
    double secs, cpu;
    uint64_t dropped_units;
};

/*
 * The "copy" baseline: what any design that copies each unit into a queue
 * and writes it out from another thread costs, without this library: the
 * posting thread memcpy()s each block into one of 16 preallocated 2 MiB
 * slots (32 MiB, the size of the library's default queue) and a sender
 * thread write()s the slots out, blocking.  Handing over 16 slots under a
 * mutex costs nothing next to 2 MiB copies.  The gap between this and the
 * raw loop is the price of the copy the library's contract requires (the
 * RTS reuses its buffer once writeEventLog() returns); the gap between
 * this and the sink is the library's own overhead.
 */
#define BENCH_SLOTS 16u

struct bench_copier {
    uint8_t *slot[BENCH_SLOTS];
    size_t len[BENCH_SLOTS];
    uint64_t head, tail;        /* slots filled, slots written out */
    bool done;
    pthread_mutex_t lock;
    pthread_cond_t cv;
    int fd;
    bool is_socket;
    pthread_t thread;
};

static void *bench_copier_main(void *arg)
{
    struct bench_copier *k = arg;
    pthread_mutex_lock(&k->lock);
    for (;;) {
        while (k->tail == k->head && !k->done)
            pthread_cond_wait(&k->cv, &k->lock);
        if (k->tail == k->head)
            break;
        unsigned i = (unsigned)(k->tail % BENCH_SLOTS);
        pthread_mutex_unlock(&k->lock);
        bench_write_all(k->fd, k->is_socket, k->slot[i], k->len[i]);
        pthread_mutex_lock(&k->lock);
        k->tail++;
        pthread_cond_broadcast(&k->cv);
    }
    pthread_mutex_unlock(&k->lock);
    return NULL;
}

static void bench_copier_post(struct bench_copier *k, const void *p, size_t len)
{
    pthread_mutex_lock(&k->lock);
    while (k->head - k->tail == BENCH_SLOTS)
        pthread_cond_wait(&k->cv, &k->lock);
    unsigned i = (unsigned)(k->head % BENCH_SLOTS);
    pthread_mutex_unlock(&k->lock);
    memcpy(k->slot[i], p, len);
    k->len[i] = len;
    pthread_mutex_lock(&k->lock);
    k->head++;
    pthread_cond_broadcast(&k->cv);
    pthread_mutex_unlock(&k->lock);
}

static uint8_t *bench_copier_mem;   /* the slots, allocated and touched once */

static void bench_copier_start(struct bench_copier *k, int fd, bool is_socket)
{
    if (bench_copier_mem == NULL) {
        bench_copier_mem = malloc((size_t)BENCH_SLOTS * BENCH_UNIT_MAX);
        if (bench_copier_mem == NULL)
            bench_die("out of memory");
        memset(bench_copier_mem, 1, (size_t)BENCH_SLOTS * BENCH_UNIT_MAX);
    }
    for (unsigned i = 0; i < BENCH_SLOTS; i++)
        k->slot[i] = bench_copier_mem + (size_t)i * BENCH_UNIT_MAX;
    k->head = k->tail = 0;
    k->done = false;
    k->fd = fd;
    k->is_socket = is_socket;
    pthread_mutex_init(&k->lock, NULL);
    pthread_cond_init(&k->cv, NULL);
    if (pthread_create(&k->thread, NULL, bench_copier_main, k) != 0)
        bench_die("pthread_create failed");
}

/* Wait until every posted slot is written out, and end the thread. */
static void bench_copier_finish(struct bench_copier *k)
{
    pthread_mutex_lock(&k->lock);
    k->done = true;
    pthread_cond_broadcast(&k->cv);
    pthread_mutex_unlock(&k->lock);
    pthread_join(k->thread, NULL);
    pthread_mutex_destroy(&k->lock);
    pthread_cond_destroy(&k->cv);
}

/* The same stream by a plain blocking write() loop on this thread, or
 * with copy set, through the copy baseline above. */
static struct bench_result bench_raw_run(enum bench_family fam, unsigned n_units,
                                         bool copy)
{
    uint64_t warm = bench_warmup_bytes();
    uint64_t expect = warm + bench_timed_bytes(n_units);
    char path[4096];
    int wfd = -1, lfd = -1;
    bool is_socket = fam == FAMILY_UNIX || fam == FAMILY_TCP;
    struct bench_reader rd;
    switch (fam) {
    case FAMILY_UNIX:
        bench_path(path, sizeof path, "raw.sock");
        lfd = bench_unix_listen(path);
        wfd = bench_unix_connect(path);
        bench_reader_start(&rd, bench_accept(lfd), -1, expect);
        break;
    case FAMILY_TCP: {
        unsigned port;
        lfd = bench_tcp_listen(&port);
        wfd = bench_tcp_connect(port);
        bench_reader_start(&rd, bench_accept(lfd), -1, expect);
        break;
    }
    case FAMILY_PIPE: {
        int p[2];
        if (pipe2(p, O_CLOEXEC) != 0)
            bench_die("pipe2: %s", strerror(errno));
        (void)fcntl(p[1], F_SETPIPE_SZ, BENCH_PIPE_SIZE);
        wfd = p[1];
        bench_reader_start(&rd, p[0], -1, expect);
        break;
    }
    case FAMILY_FILE:
        bench_path(path, sizeof path, "raw.file");
        wfd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (wfd < 0)
            bench_die("open %s: %s", path, strerror(errno));
        break;
    }

    bench_write_all(wfd, is_socket, bench_header.p, bench_header.len);
    for (unsigned i = 0; i < BENCH_WARMUP; i++)
        bench_write_all(wfd, is_socket, bench_block[0].p, bench_block[0].len);
    if (fam != FAMILY_FILE)
        bench_reader_wait(&rd, warm, bench_family_name[fam], NULL);

    struct bench_result res = { 0 };
    struct bench_copier k;
    if (copy)
        bench_copier_start(&k, wfd, is_socket);
    double c0 = bench_cpu(), t0 = bench_now();
    for (unsigned i = 0; i < n_units; i++) {
        const struct evgen_buf *b = &bench_block[i % bench_opt.producers];
        if (copy)
            bench_copier_post(&k, b->p, b->len);
        else
            bench_write_all(wfd, is_socket, b->p, b->len);
    }
    if (copy) {
        bench_copier_post(&k, evgen_data_end, sizeof evgen_data_end);
        bench_copier_finish(&k);
    } else {
        bench_write_all(wfd, is_socket, evgen_data_end, sizeof evgen_data_end);
    }
    if (fam == FAMILY_FILE) {
        res.secs = bench_now() - t0;
        res.cpu = bench_cpu() - c0;
        close(wfd);
        unlink(path);
        return res;
    }
    bench_reader_wait(&rd, expect, bench_family_name[fam], NULL);
    res.cpu = bench_cpu() - c0;
    res.secs = atomic_load(&rd.t_done) - t0;
    close(wfd);
    pthread_join(rd.thread, NULL);
    if (lfd >= 0)
        close(lfd);
    if (fam == FAMILY_UNIX)
        unlink(path);
    if (rd.err != 0 || rd.got != expect)
        bench_die("raw %s: read %" PRIu64 " of %" PRIu64 " bytes (%s)",
                  bench_family_name[fam], (uint64_t)rd.got, expect, strerror(rd.err));
    return res;
}

struct bench_producer {
    struct els_writer *w;
    unsigned index, count;
    bool hand_over;             /* els_writer_hand_over(), as the RTS does */
    unsigned failed;
    pthread_t thread;
};

static void *bench_producer_main(void *arg)
{
    struct bench_producer *p = arg;
    const struct evgen_buf *b = &bench_block[p->index];
    if (!p->hand_over) {
        for (unsigned i = 0; i < p->count; i++)
            if (els_writer_write(p->w, b->p, b->len) != 0)
                p->failed++;
        return NULL;
    }
    /* Like a capability: fill a buffer, hand it over, go on with the one
     * given back.  Like the raw loop, nothing is refilled: a spare that
     * came back from a unit sent holds a block already, one fresh from
     * malloc does not, and the reader here counts bytes without parsing
     * them. */
    void *buf = malloc(b->len);
    if (buf == NULL)
        bench_die("out of memory");
    memcpy(buf, b->p, b->len);
    for (unsigned i = 0; i < p->count; i++)
        if (els_writer_hand_over(p->w, &buf, b->len, b->len,
                                 ELS_REASON_BUFFER_FULL) != 0)
            p->failed++;
    free(buf);
    return NULL;
}

static void bench_wait_consumer(struct els_writer *w, const char *spec)
{
    double deadline = bench_now() + 30;
    struct els_stats st;
    do {
        els_writer_stats(w, &st);
        if (st.consumers_connected > 0)
            return;
        bench_sleep_us(1000);
    } while (bench_now() < deadline);
    bench_die("%s: no consumer attached within 30 s", spec);
}

/* Wait until `units` units were accepted and none is queued; the stats
 * then. */
static void bench_wait_drained(struct els_writer *w, uint64_t units, unsigned poll_us,
                               struct els_stats *st)
{
    double deadline = bench_now() + 60;
    do {
        els_writer_stats(w, st);
        if (st->units_queued == 0 && st->units_accepted >= units)
            return;
        bench_sleep_us(poll_us);
    } while (bench_now() < deadline);
}

static struct bench_result bench_sink_run(const struct bench_sink_case *sc,
                                          unsigned n_units, bool hand_over)
{
    uint64_t warm = bench_warmup_bytes();
    uint64_t expect = warm + bench_timed_bytes(n_units);
    uint64_t all_units = BENCH_WARMUP + n_units + 1;   /* + DATA_END */
    char path[4096], spec[4600], err[512];
    int lfd = -1, pre_fd = -1;
    unsigned port = 0;
    const char *opts = "policy=block&linger=60";
    struct els_writer *w = NULL;

    /* The collectors of the connecting sinks listen before the writer
     * dials; the listening sinks exist before their client connects. */
    if (strcmp(sc->scheme, "unix") == 0) {
        bench_path(path, sizeof path, "sink.sock");
        snprintf(spec, sizeof spec, "unix:%s?%s", path, opts);
    } else if (strcmp(sc->scheme, "tcp") == 0) {
        snprintf(spec, sizeof spec, "tcp:127.0.0.1:0?%s", opts);
    } else if (strcmp(sc->scheme, "fifo") == 0) {
        bench_path(path, sizeof path, "sink.fifo");
        snprintf(spec, sizeof spec, "fifo:%s?%s", path, opts);
    } else if (strcmp(sc->scheme, "file") == 0) {
        bench_path(path, sizeof path, "sink.file");
        snprintf(spec, sizeof spec, "file:%s?%s", path, opts);
    } else if (strcmp(sc->scheme, "unix-connect") == 0) {
        bench_path(path, sizeof path, "collector.sock");
        lfd = bench_unix_listen(path);
        snprintf(spec, sizeof spec, "unix-connect:%s?%s", path, opts);
    } else {
        /* The bench's own collector: trusted to hold the producer back
         * (policy=block), as a collector proving collector-secret= is. */
        lfd = bench_tcp_listen(&port);
        snprintf(spec, sizeof spec, "tcp-connect:127.0.0.1:%u?%s&trust=1", port, opts);
    }
    int rc = els_writer_open(spec, &w, err, sizeof err);
    if (rc != 0)
        bench_die("els_writer_open(%s): %s", spec, err);

    struct bench_reader rd;
    bool has_reader = true;
    if (strcmp(sc->scheme, "unix") == 0) {
        bench_reader_start(&rd, bench_unix_connect(path), -1, expect);
    } else if (strcmp(sc->scheme, "tcp") == 0) {
        char ep[256];
        els_writer_endpoint(w, ep, sizeof ep);
        const char *colon = strrchr(ep, ':');
        if (colon == NULL || sscanf(colon + 1, "%u", &port) != 1)
            bench_die("unexpected endpoint %s", ep);
        bench_reader_start(&rd, bench_tcp_connect(port), -1, expect);
    } else if (strcmp(sc->scheme, "fifo") == 0) {
        /* Open without waiting for the writer, then read blocking once the
         * writer has dialled (a blocking read with no writer yet would see
         * end of file). */
        pre_fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (pre_fd < 0)
            bench_die("open %s: %s", path, strerror(errno));
    } else if (strcmp(sc->scheme, "file") == 0) {
        has_reader = false;
    } else {
        bench_reader_start(&rd, -1, lfd, expect);
    }
    bench_wait_consumer(w, spec);
    if (pre_fd >= 0) {
        fcntl(pre_fd, F_SETFL, fcntl(pre_fd, F_GETFL) & ~O_NONBLOCK);
        bench_reader_start(&rd, pre_fd, -1, expect);
    }

    unsigned failed = 0;
    struct els_stats st;
    if (els_writer_write(w, bench_header.p, bench_header.len) != 0)
        bench_fail("%s: the header was refused", sc->scheme);
    for (unsigned i = 0; i < BENCH_WARMUP; i++)
        failed += els_writer_write(w, bench_block[0].p, bench_block[0].len) != 0;
    if (has_reader)
        bench_reader_wait(&rd, warm, sc->scheme, w);
    else
        bench_wait_drained(w, BENCH_WARMUP, 50, &st);

    struct bench_result res = { 0 };
    struct bench_producer prod[BENCH_MAX_PRODUCERS];
    double c0 = bench_cpu(), t0 = bench_now();
    for (unsigned p = 0; p < bench_opt.producers; p++) {
        prod[p] = (struct bench_producer){ .w = w, .index = p,
                                           .count = n_units / bench_opt.producers,
                                           .hand_over = hand_over };
        if (bench_opt.producers == 1)
            bench_producer_main(&prod[p]);
        else if (pthread_create(&prod[p].thread, NULL, bench_producer_main, &prod[p]) != 0)
            bench_die("pthread_create failed");
    }
    for (unsigned p = 0; p < bench_opt.producers; p++) {
        if (bench_opt.producers > 1)
            pthread_join(prod[p].thread, NULL);
        failed += prod[p].failed;
    }
    if (els_writer_write(w, evgen_data_end, sizeof evgen_data_end) != 0)
        failed++;

    if (has_reader) {
        bench_reader_wait(&rd, expect, sc->scheme, w);
        res.cpu = bench_cpu() - c0;
        res.secs = atomic_load(&rd.t_done) - t0;
        bench_wait_drained(w, all_units, 1000, &st);
    } else {
        /* A file has no reader: it is done when the queue is empty.  Poll
         * finely so that the polling adds little to the time measured. */
        bench_wait_drained(w, all_units, 50, &st);
        res.secs = bench_now() - t0;
        res.cpu = bench_cpu() - c0;
    }
    els_writer_close(w);
    if (has_reader) {
        pthread_join(rd.thread, NULL);
        if (rd.err != 0 || rd.got != expect)
            bench_fail("%s: the consumer read %" PRIu64 " bytes, expected %" PRIu64
                       " (%s)", sc->scheme, (uint64_t)rd.got, expect,
                       strerror(rd.err));
    } else {
        struct stat sb;
        if (stat(path, &sb) != 0 || (uint64_t)sb.st_size != expect)
            bench_fail("%s: the file has %jd bytes, expected %" PRIu64, sc->scheme,
                       (intmax_t)sb.st_size, expect);
        unlink(path);
    }
    if (lfd >= 0)
        close(lfd);
    if (strcmp(sc->scheme, "unix-connect") == 0)
        unlink(path);

    for (int c = 0; c < ELS_DROP__COUNT; c++)
        res.dropped_units += st.units_dropped[c];
    if (failed != 0 || st.units_accepted != all_units ||
        st.units_sent != st.units_accepted || res.dropped_units != 0)
        bench_fail("%s: accepted %" PRIu64 " sent %" PRIu64 " dropped %" PRIu64
                   " of %" PRIu64 " units (%u writes not queued)", sc->scheme,
                   st.units_accepted, st.units_sent, res.dropped_units,
                   all_units, failed);
    return res;
}

static bool bench_sink_selected(const char *scheme)
{
    size_t n = strlen(scheme);
    for (const char *p = bench_opt.sinks; *p != '\0';) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, scheme, n) == 0)
            return true;
        p += len + (end != NULL);
    }
    return false;
}

static void bench_throughput(void)
{
    unsigned n_units = bench_units();
    uint64_t bytes = bench_timed_bytes(n_units);
    double raw_mbs[BENCH_N_SINKS][BENCH_MAX_REPS], sink_mbs[BENCH_N_SINKS][BENCH_MAX_REPS];
    double raw_cpu[BENCH_N_SINKS][BENCH_MAX_REPS], sink_cpu[BENCH_N_SINKS][BENCH_MAX_REPS];
    double copy_mbs[BENCH_N_SINKS][BENCH_MAX_REPS], copy_cpu[BENCH_N_SINKS][BENCH_MAX_REPS];
    double ratio[BENCH_N_SINKS][BENCH_MAX_REPS], ratio_copy[BENCH_N_SINKS][BENCH_MAX_REPS];
    double ho_mbs[BENCH_N_SINKS][BENCH_MAX_REPS], ho_cpu[BENCH_N_SINKS][BENCH_MAX_REPS];
    double ratio_ho[BENCH_N_SINKS][BENCH_MAX_REPS];
    uint64_t drops[BENCH_N_SINKS] = { 0 };

    printf("### Throughput\n\n");
    printf("Per run: header (%zu bytes) and %u warm-up blocks (untimed), then "
           "%u blocks of %zu bytes and DATA_END = %" PRIu64 " bytes (%.0f MiB) "
           "timed; %u producer thread%s, policy=block, buffer=32M (default); "
           "%u repetitions, each running raw, copy, sink and hand-over "
           "back to back.\n\n",
           bench_header.len, BENCH_WARMUP, n_units, bench_block[0].len, bytes,
           (double)bytes / 1048576, bench_opt.producers,
           bench_opt.producers == 1 ? "" : "s", bench_opt.reps);
    fflush(stdout);

    for (unsigned rep = 0; rep < bench_opt.reps; rep++) {
        for (size_t s = 0; s < BENCH_N_SINKS; s++) {
            const struct bench_sink_case *sc = &bench_sink_cases[s];
            if (!bench_sink_selected(sc->scheme))
                continue;
            struct bench_result raw = bench_raw_run(sc->family, n_units, false);
            struct bench_result cp = bench_raw_run(sc->family, n_units, true);
            struct bench_result sr = bench_sink_run(sc, n_units, false);
            struct bench_result ho = bench_sink_run(sc, n_units, true);
            ho_mbs[s][rep] = (double)bytes / ho.secs / 1e6;
            ho_cpu[s][rep] = ho.cpu / ((double)bytes / 1e9);
            ratio_ho[s][rep] = raw.secs / ho.secs;
            drops[s] += ho.dropped_units;
            raw_mbs[s][rep] = (double)bytes / raw.secs / 1e6;
            copy_mbs[s][rep] = (double)bytes / cp.secs / 1e6;
            copy_cpu[s][rep] = cp.cpu / ((double)bytes / 1e9);
            ratio_copy[s][rep] = cp.secs / sr.secs;
            sink_mbs[s][rep] = (double)bytes / sr.secs / 1e6;
            raw_cpu[s][rep] = raw.cpu / ((double)bytes / 1e9);
            sink_cpu[s][rep] = sr.cpu / ((double)bytes / 1e9);
            ratio[s][rep] = raw.secs / sr.secs;
            drops[s] += sr.dropped_units;
            fprintf(stderr, "  rep %u %-12s raw %5.0f MB/s %4.2f cpu-s/GB  "
                    "copy %5.0f MB/s %4.2f  sink %5.0f MB/s %4.2f  "
                    "hand-over %5.0f MB/s %4.2f  sink/raw %3.0f%%  "
                    "hand-over/raw %3.0f%%  sink/copy %3.0f%%\n",
                    rep + 1, sc->scheme, raw_mbs[s][rep], raw_cpu[s][rep],
                    copy_mbs[s][rep], copy_cpu[s][rep],
                    sink_mbs[s][rep], sink_cpu[s][rep], ho_mbs[s][rep],
                    ho_cpu[s][rep], 100 * ratio[s][rep], 100 * ratio_ho[s][rep],
                    100 * ratio_copy[s][rep]);
        }
    }

    printf("| sink | baseline | raw MB/s | copy MB/s | sink MB/s | sink/raw | "
           "range | sink/copy | hand-over MB/s | hand-over/raw | range | "
           "CPU s/GB raw, copy, sink, hand-over | drops | hand-over >= 90%% of raw |\n");
    printf("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for (size_t s = 0; s < BENCH_N_SINKS; s++) {
        const struct bench_sink_case *sc = &bench_sink_cases[s];
        if (!bench_sink_selected(sc->scheme))
            continue;
        unsigned n = bench_opt.reps;
        double lo = ratio[s][0], hi = ratio[s][0];
        for (unsigned i = 1; i < n; i++) {
            lo = ratio[s][i] < lo ? ratio[s][i] : lo;
            hi = ratio[s][i] > hi ? ratio[s][i] : hi;
        }
        double hlo = ratio_ho[s][0], hhi = ratio_ho[s][0];
        for (unsigned i = 1; i < n; i++) {
            hlo = ratio_ho[s][i] < hlo ? ratio_ho[s][i] : hlo;
            hhi = ratio_ho[s][i] > hhi ? ratio_ho[s][i] : hhi;
        }
        double med = bench_median(ratio[s], n), hmed = bench_median(ratio_ho[s], n);
        printf("| %s | %s | %.0f | %.0f | %.0f | %.0f%% | %.0f-%.0f%% | %.0f%% | "
               "%.0f | **%.0f%%** | %.0f-%.0f%% | %.2f, %.2f, %.2f, %.2f | %" PRIu64
               " | %s |\n",
               sc->scheme, bench_family_name[sc->family],
               bench_median(raw_mbs[s], n), bench_median(copy_mbs[s], n),
               bench_median(sink_mbs[s], n), 100 * med, 100 * lo, 100 * hi,
               100 * bench_median(ratio_copy[s], n), bench_median(ho_mbs[s], n),
               100 * hmed, 100 * hlo, 100 * hhi, bench_median(raw_cpu[s], n),
               bench_median(copy_cpu[s], n), bench_median(sink_cpu[s], n),
               bench_median(ho_cpu[s], n), drops[s],
               hmed >= 0.9 ? "met" : "missed");
    }
    printf("\nMB/s = 10^6 bytes per second over the timed part, first block "
           "posted to last byte read (file sink: to the queue being empty; "
           "raw file: to the last write() returning).  Medians of %u; "
           "sink/raw is the median of the per-pair ratios, range their "
           "min-max.  CPU s/GB: user+system CPU time of the whole process "
           "(producer, writer thread, reader) per 10^9 bytes.  copy: the raw "
           "loop behind a memcpy into a 32 MiB queue and a sender thread, "
           "i.e. the least any copying design costs (see bench_sinks.c); "
           "sink/copy is the median of the per-run ratios.  sink: the "
           "producer calls els_writer_write() (a copy into the queue); "
           "hand-over: els_writer_hand_over(), as the patched RTS does (no "
           "copy: the queue keeps the producer's buffer and gives it a "
           "spare).  The listening "
           "tcp: sink is left out: a TCP client is untrusted, so under "
           "policy=block a reader slower than the producer is cut loose by "
           "design (tcp-connect is the TCP row).\n\n",
           bench_opt.reps);
    fflush(stdout);
}

// ---------------------------------------------------------------------------
// Cost on the posting thread
// ---------------------------------------------------------------------------

enum bench_cost_case {
    COST_MEMCPY,        /* the reference: memcpy into one preallocated buffer */
    COST_MEMCPY_RING,   /* memcpy into a 32 MiB buffer, moving on each time */
    COST_FAST,
    COST_STALLED,
    COST_NONE,
    COST__COUNT
};

static const char *const bench_cost_name[COST__COUNT] = {
    [COST_MEMCPY] = "memcpy (reference)",
    [COST_MEMCPY_RING] = "memcpy into 32 MiB, rotating",
    [COST_FAST] = "fast consumer",
    [COST_STALLED] = "stalled consumer, policy=drop",
    [COST_NONE] = "no consumer",
};

static struct els_writer *bench_cost_open(const char *name, const char *opts)
{
    char path[4096], spec[4600], err[512];
    bench_path(path, sizeof path, name);
    snprintf(spec, sizeof spec, "unix:%s?%s", path, opts);
    struct els_writer *w = NULL;
    if (els_writer_open(spec, &w, err, sizeof err) != 0)
        bench_die("els_writer_open(%s): %s", spec, err);
    if (els_writer_write(w, bench_header.p, bench_header.len) != 0)
        bench_die("%s: the header was refused", spec);
    return w;
}

static void bench_writecost(void)
{
    const struct evgen_buf *b = &bench_block[0];
    size_t ring_bytes = 32u * 1024 * 1024;
    uint8_t *dst = malloc(b->len);
    uint8_t *ring = malloc(ring_bytes);
    if (dst == NULL || ring == NULL)
        bench_die("out of memory");
    memset(dst, 1, b->len);        /* fault the pages in before timing */
    memset(ring, 1, ring_bytes);
    size_t ring_off = 0;

    struct els_writer *w[COST__COUNT] = { NULL };
    char path[4096];
    w[COST_FAST] = bench_cost_open("fast.sock", "policy=drop&linger=5");
    w[COST_STALLED] = bench_cost_open("stalled.sock", "policy=drop&linger=0");
    w[COST_NONE] = bench_cost_open("none.sock", "policy=drop&linger=0");
    bench_path(path, sizeof path, "fast.sock");
    struct bench_reader rd;
    bench_reader_start(&rd, bench_unix_connect(path), -1, UINT64_MAX);
    bench_path(path, sizeof path, "stalled.sock");
    int stalled_fd = bench_unix_connect(path);     /* never read */
    bench_wait_consumer(w[COST_FAST], "fast.sock");
    bench_wait_consumer(w[COST_STALLED], "stalled.sock");

    unsigned n = bench_opt.samples;
    double *ns[COST__COUNT];
    uint64_t queued[COST__COUNT] = { 0 }, dropped[COST__COUNT] = { 0 };
    uint64_t preempted[COST__COUNT] = { 0 };
    for (int c = 0; c < COST__COUNT; c++)
        if ((ns[c] = malloc(n * sizeof(double))) == NULL)
            bench_die("out of memory");

    /* Warm-up: two passes over every ring (32 MiB = 16 units) so that page
     * faults and the stalled consumer's first cut are not in the samples. */
    unsigned warmup = 40;
    for (unsigned i = 0; i < warmup + n; i++) {
        for (int k = 0; k < COST__COUNT; k++) {
            /* Rotate the order so no case always follows the same one. */
            int c = (int)((i + (unsigned)k) % COST__COUNT);
            struct timespec a, z;
            struct rusage ru0, ru1;
            int r = 0;
            getrusage(RUSAGE_THREAD, &ru0);
            clock_gettime(CLOCK_MONOTONIC, &a);
            switch (c) {
            case COST_MEMCPY:
                memcpy(dst, b->p, b->len);
                break;
            case COST_MEMCPY_RING:
                if (ring_off + b->len > ring_bytes)
                    ring_off = 0;
                memcpy(ring + ring_off, b->p, b->len);
                ring_off += b->len;
                break;
            default:
                r = els_writer_write(w[c], b->p, b->len);
                break;
            }
            clock_gettime(CLOCK_MONOTONIC, &z);
            /* Keep the memcpys: the buffers are never read otherwise. */
            __asm__ __volatile__("" : : "r"(dst), "r"(ring) : "memory");
            getrusage(RUSAGE_THREAD, &ru1);
            if (r < 0)
                bench_die("%s: els_writer_write: %s", bench_cost_name[c],
                          els_strerror(r));
            if (i >= warmup) {
                ns[c][i - warmup] = (double)(z.tv_sec - a.tv_sec) * 1e9 +
                                    (double)(z.tv_nsec - a.tv_nsec);
                /* Switched out against its will during the call: the
                 * time includes other threads' work. */
                if (ru1.ru_nivcsw != ru0.ru_nivcsw)
                    preempted[c]++;
                if (r == 0)
                    queued[c]++;
                else
                    dropped[c]++;
            }
            bench_sleep_us(bench_opt.pace_us);
        }
    }

    struct els_stats fast_st;
    els_writer_stats(w[COST_FAST], &fast_st);
    uint64_t fast_drops = 0;
    for (int c = 0; c < ELS_DROP__COUNT; c++)
        fast_drops += fast_st.units_dropped[c];
    fast_drops += fast_st.consumer_lost_units;

    /* The stalled and absent consumers lose units by design; their loss
     * reports at close are expected. */
    bench_log_quiet = true;
    for (int c = COST_FAST; c < COST__COUNT; c++)
        els_writer_close(w[c]);
    bench_log_quiet = false;
    close(stalled_fd);
    pthread_join(rd.thread, NULL);

    double p50[COST__COUNT], p99[COST__COUNT], mx[COST__COUNT];
    for (int c = 0; c < COST__COUNT; c++) {
        p50[c] = bench_quantile(ns[c], n, 0.50);
        p99[c] = bench_quantile(ns[c], n, 0.99);
        mx[c] = ns[c][n - 1];
    }

    printf("### Cost of els_writer_write() on the posting thread\n\n");
    printf("One %zu-byte block per call; %u samples per case after %u warm-up "
           "rounds, the cases interleaved call by call (order rotating), with "
           "a %u us sleep after every call (pacing: each writer sees one unit "
           "every ~%u us, so the fast consumer is idle when the next call "
           "comes).  Sinks: unix sockets, buffer=32M.\n\n",
           b->len, n, warmup, bench_opt.pace_us,
           (unsigned)COST__COUNT * bench_opt.pace_us);
    printf("| case | queued | dropped | p50 us | p99 us | max us | p50/memcpy | "
           "p99/memcpy | preempted | target p99 <= 2x |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for (int c = 0; c < COST__COUNT; c++) {
        bool lib = c >= COST_FAST;
        char q[32] = "-", d[32] = "-";
        if (lib) {
            snprintf(q, sizeof q, "%" PRIu64, queued[c]);
            snprintf(d, sizeof d, "%" PRIu64, dropped[c]);
        }
        printf("| %s | %s | %s | %.1f | %.1f | %.1f | %.2f | **%.2f** | %.1f%% | %s |\n",
               bench_cost_name[c], q, d, p50[c] / 1e3, p99[c] / 1e3, mx[c] / 1e3,
               p50[c] / p50[COST_MEMCPY], p99[c] / p99[COST_MEMCPY],
               100.0 * (double)preempted[c] / n,
               !lib ? "-" : p99[c] <= 2 * p99[COST_MEMCPY] ? "met" : "missed");
    }
    printf("\nqueued/dropped: what els_writer_write() returned (0 or 1).  "
           "preempted: share of the calls during which the posting thread was "
           "switched out involuntarily (getrusage(RUSAGE_THREAD) ru_nivcsw "
           "changed), i.e. other threads, ours or not, took its CPU.  The "
           "fast consumer received %" PRIu64 " bytes; losses in its stream: "
           "%" PRIu64 " units.\n\n", (uint64_t)atomic_load(&rd.got), fast_drops);
    if (fast_drops != 0)
        printf("Note: the fast consumer lost units; the pacing is too tight for "
               "this machine (raise BENCH_PACE_US).\n\n");
    fflush(stdout);

    for (int c = 0; c < COST__COUNT; c++)
        free(ns[c]);
    free(dst);
    free(ring);
}

// ---------------------------------------------------------------------------
// main
// ---------------------------------------------------------------------------

static void bench_log(void *user, enum els_log_level level, const char *message)
{
    (void)user;
    (void)level;
    if (!bench_log_quiet)
        fprintf(stderr, "eventlog-sink: %s\n", message);
}

static void bench_usage(FILE *f)
{
    fprintf(f,
            "usage: bench_sinks --dir DIR [--mb N] [--reps N] [--samples N]\n"
            "                   [--pace-us N] [--producers N] [--sinks A,B,...]\n"
            "                   throughput|writecost...\n");
}

static unsigned bench_uarg(const char *opt, const char *v, unsigned lo, unsigned hi)
{
    char *end;
    errno = 0;
    unsigned long x = strtoul(v, &end, 10);
    if (errno != 0 || *end != '\0' || end == v || x < lo || x > hi)
        bench_die("%s %s: expected a number from %u to %u", opt, v, lo, hi);
    return (unsigned)x;
}

int main(int argc, char **argv)
{
    const char *sections[8];
    int n_sections = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = strncmp(a, "--", 2) == 0 && strcmp(a, "--help") != 0;
        if (takes && v == NULL)
            bench_die("%s needs a value", a);
        if (strcmp(a, "--help") == 0) {
            bench_usage(stdout);
            return 0;
        } else if (strcmp(a, "--dir") == 0) {
            bench_opt.dir = v;
        } else if (strcmp(a, "--mb") == 0) {
            bench_opt.mb = bench_uarg(a, v, 4, 1u << 20);
        } else if (strcmp(a, "--reps") == 0) {
            bench_opt.reps = bench_uarg(a, v, 1, BENCH_MAX_REPS);
        } else if (strcmp(a, "--samples") == 0) {
            bench_opt.samples = bench_uarg(a, v, 1, 1u << 24);
        } else if (strcmp(a, "--pace-us") == 0) {
            bench_opt.pace_us = bench_uarg(a, v, 0, 1000000);
        } else if (strcmp(a, "--producers") == 0) {
            bench_opt.producers = bench_uarg(a, v, 1, BENCH_MAX_PRODUCERS);
        } else if (strcmp(a, "--sinks") == 0) {
            bench_opt.sinks = v;
        } else if (takes) {
            bench_usage(stderr);
            bench_die("unknown option %s", a);
        } else if (strcmp(a, "throughput") == 0 || strcmp(a, "writecost") == 0) {
            if (n_sections < 8)
                sections[n_sections++] = a;
            continue;
        } else {
            bench_usage(stderr);
            bench_die("unknown section %s", a);
        }
        i++;
    }
    if (bench_opt.dir == NULL || n_sections == 0) {
        bench_usage(stderr);
        return 2;
    }
    els_set_log_hook(bench_log, NULL, ELS_LOG_WARN);
    bench_make_units();

    for (int i = 0; i < n_sections; i++) {
        if (strcmp(sections[i], "throughput") == 0)
            bench_throughput();
        else
            bench_writecost();
    }
    if (bench_failures != 0)
        fprintf(stderr, "bench_sinks: %d data failure%s (see above)\n",
                bench_failures, bench_failures == 1 ? "" : "s");
    return bench_failures != 0;
}
