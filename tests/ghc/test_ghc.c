/*
 * test_ghc.c: lib/ghc/ghc.c (the RTS adapter) against a fake RTS.
 *
 * ghc.c refers to the RTS's startEventLogging/endEventLogging weakly; this
 * program defines them (the stock-RTS route: no unit writer), so the glue
 * runs exactly as in a Haskell program while the test controls every
 * interleaving.  The writer calls the glue makes are wrapped
 * (-Wl,--wrap=els_writer_stats_sized,--wrap=els_writer_flush) so that a test can
 * hold a caller inside one while another thread stops the eventlog.
 * Checked: a stats or flush call in flight keeps the writer alive until it
 * returns (stop waits for it); els_ghc_start returns the error when the
 * sink cannot be opened and the program goes on, and starts again once
 * the way is clear, and opens nothing while another writer runs; a fork while another thread is opening the sink, or
 * has a call in flight, leaves a child that can configure, start and
 * stop; a bad $EVENTLOG_SINK is quoted with its control bytes escaped;
 * an RTS buffer size that buffer= or consumer-memory= cannot hold stops
 * the start-up with one line (els_ghc_start: ELS_EINVAL) before anything
 * is opened; els_ghc_stats_sized() writes no more than the caller's size;
 * a list of two sinks gets every unit to both.
 * The end-to-end side (real programs, forkProcess) is
 * tests/rts/test_fork.sh and tests/rts/test_ghc_api.sh.
 */
#include <Rts.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/un.h>

#undef CHECK                    /* Rts.h's; check.h has its own */
#include "check.h"
#include "childcheck.h"
#include "evgen.h"
#include "testutil.h"
#include "eventlog-sink.h"
#include "eventlog-sink/ghc.h"

// ---------------------------------------------------------------------------
// The fake RTS: start calls init and writes the header; end writes
// DATA_END and calls stop, as rts/eventlog/EventLog.c does.
// ---------------------------------------------------------------------------

static pthread_mutex_t fake_rts_lock = PTHREAD_MUTEX_INITIALIZER;
static const EventLogWriter *fake_rts_writer;

/* When set, the next start waits (before it calls init) until released,
 * with rts_start_entered set: the moment between the glue's open and the
 * RTS taking the writer. */
static atomic_bool rts_start_hold, rts_start_entered, rts_start_release;

bool startEventLogging(const EventLogWriter *writer)
{
    if (atomic_exchange(&rts_start_hold, false)) {
        atomic_store(&rts_start_entered, true);
        while (!atomic_load(&rts_start_release))
            check_sleep_ms(1);
    }
    pthread_mutex_lock(&fake_rts_lock);
    if (fake_rts_writer != NULL) {
        pthread_mutex_unlock(&fake_rts_lock);
        return false;
    }
    writer->initEventLogWriter();
    (void)evgen_block;          /* blocks are the writer tests' business */
    struct evgen_buf h = evgen_header();
    writer->writeEventLog(h.p, h.len);
    free(h.p);
    fake_rts_writer = writer;
    pthread_mutex_unlock(&fake_rts_lock);
    return true;
}

/* Patch 0011's getEventLogBufferSize(); 0 stands for the default. */
static atomic_size_t fake_buffer_size;

size_t getEventLogBufferSize(void);
size_t getEventLogBufferSize(void)
{
    return atomic_load(&fake_buffer_size);
}

enum EventLogStatus eventLogStatus(void)
{
    pthread_mutex_lock(&fake_rts_lock);
    bool running = fake_rts_writer != NULL;
    pthread_mutex_unlock(&fake_rts_lock);
    return running ? EVENTLOG_RUNNING : EVENTLOG_NOT_CONFIGURED;
}

void endEventLogging(void)
{
    pthread_mutex_lock(&fake_rts_lock);
    const EventLogWriter *writer = fake_rts_writer;
    fake_rts_writer = NULL;
    if (writer != NULL) {
        writer->writeEventLog((void *)evgen_data_end, sizeof evgen_data_end);
        writer->stopEventLogWriter();
    }
    pthread_mutex_unlock(&fake_rts_lock);
}

// ---------------------------------------------------------------------------
// Holding a caller inside the writer
// ---------------------------------------------------------------------------

int __real_els_writer_stats_sized(struct els_writer *w, struct els_stats *out,
                                  size_t size);
int __real_els_writer_flush(struct els_writer *w);
int __wrap_els_writer_stats_sized(struct els_writer *w, struct els_stats *out,
                                  size_t size);
int __wrap_els_writer_flush(struct els_writer *w);

static _Thread_local bool hold_me;      /* this thread's call is held */
static atomic_bool held;                /* a held call is inside */
static atomic_bool release;             /* let it go */
static atomic_bool stop_done;           /* els_ghc_stop() has returned */
static atomic_bool stopped_under_caller;

/* Inside a wrapped call of a holding thread: say so, then wait until
 * released or until stop returned (which it must not while we are
 * inside; the 2 s bound only ends the wait when it does not). */
static void hold_inside(void)
{
    if (!hold_me)
        return;
    atomic_store(&held, true);
    uint64_t end = check_now_ms() + 2000;
    while (!atomic_load(&release) && check_now_ms() < end) {
        if (atomic_load(&stop_done)) {
            atomic_store(&stopped_under_caller, true);
            break;
        }
        check_sleep_ms(1);
    }
}

int __wrap_els_writer_stats_sized(struct els_writer *w, struct els_stats *out,
                                  size_t size)
{
    hold_inside();
    return __real_els_writer_stats_sized(w, out, size);
}

int __wrap_els_writer_flush(struct els_writer *w)
{
    hold_inside();
    return __real_els_writer_flush(w);
}

static void *stats_thread(void *arg)
{
    (void)arg;
    hold_me = true;
    struct els_stats st;
    return (void *)(intptr_t)els_ghc_stats(&st);
}

static void *flush_thread(void *arg)
{
    (void)arg;
    hold_me = true;
    els_ghc_writer()->flushEventLog();
    return NULL;
}

static void *stop_thread(void *arg)
{
    (void)arg;
    els_ghc_stop();
    atomic_store(&stop_done, true);
    return NULL;
}

static const char *sock_spec(const char *name, const char *options)
{
    static char spec[2][700];
    static int next;
    char *s = spec[next++ % 2];
    snprintf(s, sizeof spec[0], "unix:%s%s%s", check_path(name),
             options[0] ? "?" : "", options);
    return s;
}

static void configure(const char *spec)
{
    char err[512];
    int r = els_ghc_configure(spec, err, sizeof err);
    CHECK_MSG(r == 0, "configure %s: %d %s", spec, r, err);
}

/* Start, hold a caller (fn) inside the writer, stop from another thread:
 * stop must not return before the caller has left. */
static void stop_waits_for(void *(*fn)(void *))
{
    els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);
    configure(sock_spec("s.sock", ""));
    CHECK_OK(els_ghc_start());
    pthread_t caller, stopper;
    CHECK_OK(pthread_create(&caller, NULL, fn, NULL));
    while (!atomic_load(&held))
        check_sleep_ms(1);
    CHECK_OK(pthread_create(&stopper, NULL, stop_thread, NULL));
    void *rc;
    CHECK_OK(pthread_join(caller, &rc));
    CHECK_MSG(!atomic_load(&stopped_under_caller),
              "els_ghc_stop() returned (the writer closed) while a call was still using it");
    CHECK_OK(pthread_join(stopper, NULL));
    CHECK(atomic_load(&stop_done));
    struct els_stats st;
    CHECK_INT(els_ghc_stats(&st), ==, ELS_ESTOPPED);
}

static void stop_waits_for_stats_in_flight(void)
{
    stop_waits_for(stats_thread);
}

static void stop_waits_for_flush_in_flight(void)
{
    stop_waits_for(flush_thread);
}

// ---------------------------------------------------------------------------
// Restart errors
// ---------------------------------------------------------------------------

/* While stopped, something takes the socket's path: start returns the
 * error (the process goes on), and succeeds once the path is free. */
static void start_returns_open_errors(void)
{
    els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);
    const char *path = check_path("s.sock");
    configure(sock_spec("s.sock", ""));
    CHECK_OK(els_ghc_start());
    CHECK_INT(els_ghc_start(), ==, ELS_EBUSY);
    els_ghc_stop();
    CHECK(!tu_exists(path));

    CHECK_OK(tu_write_file(path, "in the way\n"));
    int r = els_ghc_start();
    CHECK_MSG(r < 0 && r != ELS_EBUSY, "start with the path taken: %d", r);
    struct els_stats st;
    CHECK_INT(els_ghc_stats(&st), ==, ELS_ESTOPPED);
    CHECK_INT(els_ghc_start(), ==, r);          /* again: same answer */
    CHECK(unlink(path) == 0);

    CHECK_OK(els_ghc_start());
    CHECK_OK(els_ghc_stats(&st));
    els_ghc_stop();
}

static void other_init(void) {}
static bool other_write(void *buf, size_t len) { (void)buf; (void)len; return true; }
static void other_flush(void) {}
static void other_stop(void) {}

/* The eventlog runs with someone else's writer (+RTS -l's file): start
 * answers ELS_EBUSY without opening its sink, which could take a port
 * or, as here, create a file. */
static void start_refused_opens_nothing(void)
{
    static const EventLogWriter other = {
        .initEventLogWriter = other_init,
        .writeEventLog = other_write,
        .flushEventLog = other_flush,
        .stopEventLogWriter = other_stop,
    };
    els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);
    char spec[700];
    snprintf(spec, sizeof spec, "file:%s", check_path("f.eventlog"));
    configure(spec);
    CHECK(startEventLogging(&other));
    CHECK_INT(els_ghc_start(), ==, ELS_EBUSY);
    CHECK(!tu_exists(check_path("f.eventlog")));
    endEventLogging();
    CHECK_OK(els_ghc_start());
    CHECK(tu_exists(check_path("f.eventlog")));
    els_ghc_stop();
}

// ---------------------------------------------------------------------------
// fork()
// ---------------------------------------------------------------------------

/* In a child: a sink of its own can be configured, started and stopped
 * (under TSan: configured); exit 0 if so (the alarm catches a hang). */
static void child_starts_its_own(void)
{
    alarm(10);
    char err[512];
    if (els_ghc_configure(sock_spec("child.sock", ""), err, sizeof err) != 0)
        _exit(2);
    if (!CHILD_CAN_START_THREADS)
        _exit(0);
    if (els_ghc_start() != 0)
        _exit(3);
    struct els_stats st;
    if (els_ghc_stats(&st) != 0)
        _exit(4);
    els_ghc_stop();
    _exit(0);
}

static void *start_thread(void *arg)
{
    (void)arg;
    return (void *)(intptr_t)els_ghc_start();
}

/* fork() while another thread is opening the sink (wait= holds it there
 * until a consumer comes): the child is not stuck behind that thread. */
static void fork_during_a_start(void)
{
    els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);
    const char *path = check_path("s.sock");
    configure(sock_spec("s.sock", "wait=20"));
    pthread_t starter;
    CHECK_OK(pthread_create(&starter, NULL, start_thread, NULL));
    while (!tu_exists(path))        /* listening: now waiting for us */
        check_sleep_ms(1);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
        child_starts_its_own();
    check_child_ok(pid);
    /* The parent's start goes on: a consumer ends its wait. */
    int fd = tu_connect_unix(path, TU_WAIT_MS);
    CHECK(fd >= 0);
    void *rc;
    CHECK_OK(pthread_join(starter, &rc));
    CHECK_INT((intptr_t)rc, ==, 0);
    els_ghc_stop();
    close(fd);
}

/* fork() after another thread's start opened the sink and before the
 * RTS took it: the child closes its copy of that writer (without removing
 * the parent's socket) and can start its own; the parent's start goes
 * on. */
static void fork_between_open_and_start(void)
{
    els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);
    const char *path = check_path("s.sock");
    configure(sock_spec("s.sock", ""));
    atomic_store(&rts_start_hold, true);
    pthread_t starter;
    CHECK_OK(pthread_create(&starter, NULL, start_thread, NULL));
    while (!atomic_load(&rts_start_entered))
        check_sleep_ms(1);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
        child_starts_its_own();
    check_child_ok(pid);
    CHECK(tu_exists(path));
    atomic_store(&rts_start_release, true);
    void *rc;
    CHECK_OK(pthread_join(starter, &rc));
    CHECK_INT((intptr_t)rc, ==, 0);
    int fd = tu_connect_unix(path, TU_WAIT_MS);
    CHECK(fd >= 0);
    struct els_stats st;
    CHECK_OK(els_ghc_stats(&st));
    els_ghc_stop();
    close(fd);
}

/* fork() while another thread's call is in flight: the child's stop does
 * not wait for a call that does not exist there. */
static void fork_during_a_call(void)
{
    els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);
    configure(sock_spec("s.sock", ""));
    CHECK_OK(els_ghc_start());
    pthread_t caller;
    CHECK_OK(pthread_create(&caller, NULL, stats_thread, NULL));
    while (!atomic_load(&held))
        check_sleep_ms(1);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        alarm(10);
        els_ghc_stop();         /* the inherited writer: forked, closed */
        child_starts_its_own();
    }
    check_child_ok(pid);
    atomic_store(&release, true);
    CHECK_OK(pthread_join(caller, NULL));
    els_ghc_stop();
}

// ---------------------------------------------------------------------------
// Spec text in log lines
// ---------------------------------------------------------------------------

/* A C main's bad $EVENTLOG_SINK ends the program with one line on stderr
 * that quotes the spec with its control bytes escaped. */
static void env_spec_is_quoted(void)
{
    const char *path = check_path("stderr.txt");
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 || dup2(fd, STDERR_FILENO) != STDERR_FILENO)
            _exit(2);
        setenv(ELS_GHC_SPEC_ENV, "unix:/x\x1b[31m\a?bogus=1", 1);
        (void)els_ghc_writer_from_env();
        _exit(3);                       /* it must not return */
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 1,
              "els_ghc_writer_from_env: status %d, expected exit 1", status);
    char *text = tu_read_file(path);
    CHECK(text != NULL);
    size_t len = strlen(text);
    CHECK_MSG(len > 0 && text[len - 1] == '\n' && strchr(text, '\n') == text + len - 1,
              "not one line: %s", text);
    CHECK_CONTAINS(text, "EVENTLOG_SINK=\"unix:/x\\x1b[31m\\x07?bogus=1\"");
    for (size_t i = 0; i + 1 < len; i++)
        CHECK_MSG((unsigned char)text[i] >= 0x20, "raw control byte 0x%02x in: %s",
                  (unsigned char)text[i], text);
    free(text);
}

// ---------------------------------------------------------------------------
// The RTS's buffer size against the sink's limits
// ---------------------------------------------------------------------------

/* Note [Unit size and the sink's limits]: a start-up whose
 * --eventlog-buffer-size contradicts the spec stops the program with one
 * line on stderr, naming the two values, before anything is opened. */
static void startup_refuses(const char *options, size_t buffer_size,
                            const char *expect)
{
    const char *path = check_path("stderr.txt");
    const char *sock = check_path("s.sock");
    const char *spec = sock_spec("s.sock", options);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        alarm(10);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 || dup2(fd, STDERR_FILENO) != STDERR_FILENO)
            _exit(2);
        atomic_store(&fake_buffer_size, buffer_size);
        char err[512];
        if (els_ghc_configure(spec, err, sizeof err) != 0)
            _exit(4);
        /* As the RTS does at start-up with RtsConfig's writer. */
        startEventLogging(els_ghc_writer());
        _exit(3);                       /* it must not return */
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 1,
              "start-up with %s and buffer size %zu: status %d, expected "
              "exit 1", spec, buffer_size, status);
    char *text = tu_read_file(path);
    CHECK(text != NULL);
    size_t len = strlen(text);
    CHECK_MSG(len > 0 && strchr(text, '\n') == text + len - 1,
              "not one line: %s", text);
    CHECK_CONTAINS(text, expect);
    CHECK(!tu_exists(sock));            /* nothing was opened */
    free(text);
}

static void buffer_size_above_buffer_refused(void)
{
    startup_refuses("buffer=3M", 4u << 20, "eventlog-sink: +RTS "
                    "--eventlog-buffer-size=4194304 is not below the sink's "
                    "buffer=3145728: every full RTS buffer would be dropped "
                    "as too big");
    /* els_ghc_start() says so with its code, and opens nothing. */
    els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);
    atomic_store(&fake_buffer_size, 4u << 20);
    configure(sock_spec("s.sock", "buffer=3M"));
    CHECK_INT(els_ghc_start(), ==, ELS_EINVAL);
    CHECK(!tu_exists(check_path("s.sock")));
    /* Below both limits it starts. */
    configure(sock_spec("s.sock", "buffer=5M&consumer-memory=4M"));
    CHECK_OK(els_ghc_start());
    els_ghc_stop();
}

static void buffer_size_above_consumer_memory_refused(void)
{
    startup_refuses("consumer-memory=1M", 2u << 20, "eventlog-sink: +RTS "
                    "--eventlog-buffer-size=2097152 is above the sink's "
                    "consumer-memory=1048576: a slow consumer would be closed "
                    "instead of cut loose");
    els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);
    atomic_store(&fake_buffer_size, 4u << 20);
    configure(sock_spec("s.sock", "consumer-memory=2M"));
    CHECK_INT(els_ghc_start(), ==, ELS_EINVAL);
    CHECK(!tu_exists(check_path("s.sock")));
}

// ---------------------------------------------------------------------------
// The caller's struct els_stats
// ---------------------------------------------------------------------------

/* els_ghc_stats_sized() with an older, smaller struct: the fields it
 * knows are filled, nothing past its size is written (canary bytes). */
static void ghc_stats_sized_writes_no_more_than_asked(void)
{
    els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);
    configure(sock_spec("s.sock", ""));
    CHECK_OK(els_ghc_start());
    unsigned char buf[sizeof(struct els_stats) + 64];
    memset(buf, 0xA5, sizeof buf);
    size_t old = offsetof(struct els_stats, behind_at_stop_units);
    CHECK_OK(els_ghc_stats_sized((struct els_stats *)(void *)buf, old));
    for (size_t i = old; i < sizeof buf; i++)
        CHECK_MSG(buf[i] == 0xA5, "byte %zu of %zu written", i, old);
    struct els_stats got;
    memcpy(&got, buf, old);
    CHECK(got.header_bytes > 0);        /* the fake RTS wrote the header */
    els_ghc_stop();
    CHECK_INT(els_ghc_stats_sized(&got, sizeof got), ==, ELS_ESTOPPED);
}

// ---------------------------------------------------------------------------
// A list of sinks on the stock route
// ---------------------------------------------------------------------------

struct list_reader {
    const char *path;
    char *got;
    size_t len;
};

static void *list_reader_main(void *arg)
{
    struct list_reader *r = arg;
    int fd = tu_connect_unix(r->path, TU_WAIT_MS);
    if (fd >= 0) {
        r->got = tu_read_all(fd, &r->len, TU_WAIT_MS * 3);
        close(fd);
    }
    return NULL;
}

/* EventLogWriter's writeEventLog (a C main's RtsConfig, no units): every
 * unit reaches the consumers of both sinks of "unix:A|unix:B", whole
 * (tests/ghc/test_sinkset.c drives the unit writer). */
static void list_on_the_stock_route(void)
{
    els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);
    char list[1400];
    snprintf(list, sizeof list, "%s|", sock_spec("a.sock", "wait=20"));
    snprintf(list + strlen(list), sizeof list - strlen(list), "%s",
             sock_spec("b.sock", "wait=20"));
    configure(list);
    struct list_reader r[2] = { { .path = check_path("a.sock") },
                                { .path = check_path("b.sock") } };
    char paths[2][700];
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        snprintf(paths[i], sizeof paths[i], "%s", r[i].path);
        r[i].path = paths[i];
        CHECK_OK(pthread_create(&t[i], NULL, list_reader_main, &r[i]));
    }
    CHECK_OK(els_ghc_start());
    struct evgen_buf all = evgen_header();
    struct evgen_buf b = evgen_block(0, 1000, 50, "stock", 0);
    CHECK(els_ghc_writer()->writeEventLog(b.p, b.len));
    evgen_put(&all, b.p, b.len);
    evgen_put(&all, evgen_data_end, sizeof evgen_data_end);
    els_ghc_stop();
    for (int i = 0; i < 2; i++) {
        CHECK_OK(pthread_join(t[i], NULL));
        CHECK_MSG(r[i].got != NULL && r[i].len == all.len &&
                  memcmp(r[i].got, all.p, all.len) == 0,
                  "%s: %zu bytes, not the %zu written", r[i].path, r[i].len,
                  all.len);
        free(r[i].got);
    }
    free(b.p);
    evgen_free(&all);
}

static const struct check_case cases[] = {
    CHECK_CASE(list_on_the_stock_route),
    CHECK_CASE(stop_waits_for_stats_in_flight),
    CHECK_CASE(stop_waits_for_flush_in_flight),
    CHECK_CASE(start_returns_open_errors),
    CHECK_CASE(start_refused_opens_nothing),
    CHECK_CASE(fork_during_a_start),
    CHECK_CASE(fork_between_open_and_start),
    CHECK_CASE(fork_during_a_call),
    CHECK_CASE(env_spec_is_quoted),
    CHECK_CASE(buffer_size_above_buffer_refused),
    CHECK_CASE(buffer_size_above_consumer_memory_refused),
    CHECK_CASE(ghc_stats_sized_writes_no_more_than_asked),
};

CHECK_MAIN(cases)
