/*
 * test_writer.c: the writer's life (lib/deliver/writer.c): open errors,
 * wait= for a first consumer, stop with a consumer that never reads, and
 * fork (the child's copy drops its units and leaves the parent's endpoint
 * and consumers alone).
 */
#include "check.h"
#include "deliver/writer_test.h"

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
    CHECK_CASE(writer_stop_with_stalled_consumer),
    CHECK_CASE_T(writer_wait_for_first_consumer, 15),
    CHECK_CASE(writer_fork_child_leaves_parent_alone),
    CHECK_CASE(writer_open_errors),
};

CHECK_MAIN(cases)
