/*
 * test_loop.c: the writer thread's loop (lib/writer/loop.c) facing more
 * than it should serve: connections over max-consumers= are refused at
 * once and counted; when accept() runs out of descriptors the listener
 * rests instead of spinning, and recovers; a sink that keeps failing does
 * not flood the log.
 */
#include <sys/resource.h>

#include "check.h"
#include "testutil.h"
#include "writer/writer_test.h"

static void loop_max_consumers(void)
{
    const char *sock;
    struct els_writer *w = open_at("unix", "s.sock", "max-consumers=2", &sock);
    int fds[5];
    for (int i = 0; i < 5; i++)
        fds[i] = unix_connect(sock);
    WAIT_UNTIL(stats_of(w).consumers_refused == 3, 1, "refusals not counted");
    struct els_stats s = stats_of(w);
    CHECK_U64(s.consumers_connected, ==, 2);
    CHECK_U64(s.consumers_total, ==, 2);
    /* The refused ones were closed at once: they read end of file. */
    int eof = 0;
    for (int i = 0; i < 5; i++) {
        char c;
        if (tu_wait_fd(fds[i], POLLIN, 100) == 0 && read(fds[i], &c, 1) == 0)
            eof++;
    }
    CHECK_INT(eof, ==, 3);
    CHECK_OK(els_writer_close(w));
    for (int i = 0; i < 5; i++)
        close(fds[i]);
}

/* The lowest free descriptor number: with RLIMIT_NOFILE set to it, the
 * process can open nothing more. */
static int lowest_free_fd(void)
{
    int fd = dup(0);
    CHECK(fd >= 0);
    close(fd);
    return fd;
}

static void loop_accept_out_of_descriptors(void)
{
    tu_log_capture();
    const char *sock;
    struct els_writer *w = open_at("unix", "s.sock", "", &sock);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(fd >= 0);
    struct rlimit old;
    CHECK_OK(getrlimit(RLIMIT_NOFILE, &old));
    /* No descriptor left for accept(); the client needs none to connect. */
    struct rlimit low = { (rlim_t)lowest_free_fd(), old.rlim_max };
    CHECK_OK(setrlimit(RLIMIT_NOFILE, &low));
    CHECK_OK(connect(fd, (struct sockaddr *)&sa, sizeof sa));
    WAIT_UNTIL(stats_of(w).accept_errors > 0, 1, "accept() never failed");
    CHECK_OK(setrlimit(RLIMIT_NOFILE, &old));
    WAIT_UNTIL(stats_of(w).consumers_connected == 1, 5,
               "the consumer was not accepted once descriptors were back");
    /* Resting 100 ms, then 200 ms...: a handful of failures, where a
     * listener polled again at once fails thousands of times. */
    CHECK_U64(stats_of(w).accept_errors, <=, 10);
    CHECK(tu_log_contains("not accepting for"));
    CHECK_OK(els_writer_close(w));
    close(fd);
}

static atomic_uint failed_lines;

static void counting_hook(void *user, enum els_log_level level, const char *msg)
{
    (void)user;
    (void)level;
    if (strstr(msg, "sink write failed") != NULL)
        atomic_fetch_add(&failed_lines, 1);
}

/* A sink whose every write fails: each failure is counted, the log gets
 * at most one line a second about it. */
static void loop_failing_sink_log_is_limited(void)
{
    els_set_log_hook(counting_hook, NULL, ELS_LOG_DEBUG);
    CHECK_OK(els_sink_register(&slow_sink));
    struct els_writer *w = open_ok("test-slow:?buffer=3M");
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    atomic_store(&slow_sink_fail, true);
    uint64_t start = check_now_ms();
    struct evgen_buf b = evgen_block(0, 1, 10, "x", 0);
    for (unsigned i = 0; i < 30; i++) {
        unsigned before = atomic_load(&slow_sink_writes);
        write_ok(w, b.p, b.len);
        WAIT_UNTIL(atomic_load(&slow_sink_writes) > before, 1, "no retry");
    }
    uint64_t elapsed = check_now_ms() - start;
    unsigned lines = atomic_load(&failed_lines);
    CHECK_MSG(lines >= 1 && lines <= 1 + elapsed / 1000 + 1,
              "%u lines about failed writes in %llu ms", lines,
              (unsigned long long)elapsed);
    atomic_store(&slow_sink_fail, false);
    CHECK_OK(els_writer_close(w));
    free(b.p);
    evgen_free(&h);
}

static const struct check_case cases[] = {
    CHECK_CASE(loop_max_consumers),
    CHECK_CASE(loop_accept_out_of_descriptors),
    CHECK_CASE_T(loop_failing_sink_log_is_limited, 60),
};

CHECK_MAIN(cases)
