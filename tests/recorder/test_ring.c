/*
 * test_ring.c: the "ring" flight recorder (lib/sinks/ring.c and the
 * writer's side of it, lib/writer/recorder.c, Note [Flight recorder]), end to
 * end inside one process on real files: each dump is a new file, never
 * replacing one; a dump is a whole stream on its own (header, the
 * stream's start or a join snapshot, the units up to the dump, the end
 * marker) that holds the last units before the dump; the window stays
 * within size=; dumps on request, at the end of the stream and on a
 * signal the spec names; bad specs and unwritable places fail clearly;
 * max-dumps= bounds every way a dump is asked for; a dump carries its
 * name only once whole; nothing recorded, no file; the recorder's own
 * control socket (control=unix:PATH).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* memmem */
#endif
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>

#include "check.h"
#include "testutil.h"
#include "writer/writer_test.h"
#include "control/codec.h"
#include "control/frames.h"

static struct evgen_buf read_file(const char *path)
{
    size_t len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    CHECK_MSG(fd >= 0, "open %s: %s", path, strerror(errno));
    char *p = tu_read_all(fd, &len, 5000);
    close(fd);
    CHECK(p != NULL);
    struct evgen_buf b = { 0 };
    evgen_put(&b, p, len);
    free(p);
    return b;
}

static size_t count_of(const struct evgen_buf *b, const char *needle)
{
    size_t n = strlen(needle), k = 0;
    for (size_t i = 0; i + n <= b->len; i++)
        k += memcmp(b->p + i, needle, n) == 0;
    return k;
}

static void write_blocks(struct els_writer *w, unsigned from, unsigned n,
                         size_t min_len, struct evgen_buf *expect)
{
    for (unsigned i = from; i < from + n; i++) {
        char tag[32];
        snprintf(tag, sizeof tag, "unit%06u", i);
        struct evgen_buf b = evgen_block((uint16_t)(i % 2), (uint64_t)i * 100, 1,
                                         tag, min_len);
        write_ok(w, b.p, b.len);
        if (expect != NULL)
            evgen_put(expect, b.p, b.len);
        free(b.p);
    }
}

/* While nothing was evicted a dump is the stream from its start; each
 * dump is a new file, 0600; the window goes on after a dump. */
static void ring_dump_from_the_start(void)
{
    const char *path;
    struct els_writer *w = open_at("ring", "app.eventlog", "size=3M", &path);
    struct evgen_buf expect = evgen_header();
    write_ok(w, expect.p, expect.len);
    write_blocks(w, 0, 20, 0, &expect);

    char name[4096];
    CHECK_OK(els_writer_dump(w, name, sizeof name));
    CHECK_STR(name, check_path("app.1.eventlog"));
    CHECK_INT(tu_file_mode(name), ==, 0600);
    struct evgen_buf got = read_file(name);
    evgen_put(&expect, evgen_data_end, 2);
    CHECK_U64(got.len, ==, expect.len);
    CHECK(memcmp(got.p, expect.p, expect.len) == 0);
    check_stream_parses(&got, true);
    evgen_free(&got);

    write_blocks(w, 20, 5, 0, NULL);
    CHECK_OK(els_writer_dump(w, name, sizeof name));
    CHECK_STR(name, check_path("app.2.eventlog"));
    got = read_file(name);
    check_stream_parses(&got, true);
    CHECK(count_of(&got, "unit000024") == 1);
    evgen_free(&got);

    /* Not a recorder: no dump. */
    const char *sock;
    struct els_writer *u = open_at("unix", "s.sock", "", &sock);
    CHECK_INT(els_writer_dump(u, name, sizeof name), ==, ELS_EINVAL);
    CHECK_OK(els_writer_close(u));

    /* The stream's end makes a last dump: app.3. */
    CHECK_OK(els_writer_close(w));
    CHECK(tu_exists(check_path("app.3.eventlog")));
    evgen_free(&expect);
}

struct source {
    struct els_writer *w;
    atomic_uint asked, given;
};

/* A producer that answers a request for a join snapshot at once, from the
 * writer thread (allowed: any thread). */
static void answer_snapshot(void *ctx)
{
    struct source *src = ctx;
    unsigned k = atomic_fetch_add(&src->asked, 1);
    char tag[32];
    snprintf(tag, sizeof tag, "snapshot%04u", k);
    struct evgen_buf b = evgen_block(ELSI_CAP_GLOBAL, 0, 1, tag, 0);
    if (els_writer_write_snapshot(src->w, b.p, b.len) == 0)
        atomic_fetch_add(&src->given, 1);
    free(b.p);
}

/* Far more than the window goes through: the dump starts at a snapshot,
 * holds only that one, ends with the last unit written and the end
 * marker, parses, covers most of the window, and the window stays within
 * size=. */
static void ring_window_starts_at_a_snapshot(void)
{
    const char *path;
    struct els_writer *w = open_at("ring", "rec", "size=3M", &path);
    struct source src = { .w = w };
    CHECK_OK(els_writer_set_snapshot_source(w, answer_snapshot, &src));
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    uint64_t peak = 0;
    for (unsigned i = 0; i < 400; i++) {
        write_blocks(w, i, 1, 32 * 1024, NULL);
        struct els_stats s = stats_of(w);
        if (s.bytes_queued > peak)
            peak = s.bytes_queued;
    }
    CHECK(atomic_load(&src.given) >= 4);
    char name[4096];
    CHECK_OK(els_writer_dump(w, name, sizeof name));
    CHECK_STR(name, check_path("rec.1"));
    struct evgen_buf got = read_file(name);
    check_stream_parses(&got, true);
    CHECK(memcmp(got.p, h.p, h.len) == 0);
    /* Right after the header: a snapshot block, and only one. */
    CHECK(got.len > h.len + 64);
    CHECK(memmem(got.p + h.len, 80, "snapshot", 8) != NULL);
    CHECK_U64(count_of(&got, "snapshot"), ==, 1);
    CHECK(count_of(&got, "unit000399") > 0);
    CHECK(got.len >= 3u * 1024 * 1024 / 2);
    CHECK(got.len <= 3u * 1024 * 1024 + 4096);
    struct els_stats s = stats_of(w);
    CHECK(peak <= 3u * 1024 * 1024);
    CHECK_U64(s.snapshots_not_queued, ==, 0);
    check_conservation(&s);
    CHECK_OK(els_writer_close(w));
    evgen_free(&got);
    evgen_free(&h);
}

/* Without a snapshot source, a window whose start was evicted is dumped
 * from its oldest unit, after a note saying so. */
static void ring_without_snapshots_says_so(void)
{
    const char *path;
    struct els_writer *w = open_at("ring", "rec", "size=3M&at-exit=0", &path);
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    write_blocks(w, 0, 300, 32 * 1024, NULL);
    char name[4096];
    CHECK_OK(els_writer_dump(w, name, sizeof name));
    struct evgen_buf got = read_file(name);
    check_stream_parses(&got, true);
    CHECK(contains(&got, "(a dump without a snapshot)"));
    CHECK(count_of(&got, "unit000299") > 0);
    CHECK(count_of(&got, "unit000000") == 0);
    evgen_free(&got);
    /* at-exit=0: no dump when the stream ends. */
    CHECK_OK(els_writer_close(w));
    CHECK(!tu_exists(check_path("rec.2")));
    evgen_free(&h);
}

/* signal=USR2: the signal makes a dump; the disposition is restored at
 * close; a signal someone handles already, or another ring's, is
 * refused. */
static void ring_dump_on_signal(void)
{
    const char *path = check_path("sig");
    char spec[700], err[512];
    snprintf(spec, sizeof spec, "ring:%s?size=3M&signal=USR2&at-exit=0", path);
    struct els_writer *w = open_ok(spec);
    struct els_writer *w2 = NULL;
    char spec2[700];
    snprintf(spec2, sizeof spec2, "ring:%s?size=3M&signal=SIGUSR2", check_path("other"));
    CHECK_INT(els_writer_open(spec2, &w2, err, sizeof err), ==, ELS_EBUSY);
    CHECK(strstr(err, "another ring: sink owns that signal") != NULL);

    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    write_blocks(w, 0, 3, 0, NULL);
    CHECK_OK(raise(SIGUSR2));
    WAIT_UNTIL(tu_exists(check_path("sig.1")), 5, "no dump after SIGUSR2");
    CHECK_OK(els_writer_close(w));
    struct evgen_buf got = read_file(check_path("sig.1"));
    check_stream_parses(&got, true);
    CHECK(count_of(&got, "unit000002") == 1);
    evgen_free(&got);

    struct sigaction sa;
    CHECK_OK(sigaction(SIGUSR2, NULL, &sa));
    CHECK(sa.sa_handler == SIG_DFL);
    /* Somebody else's handler: refused. */
    signal(SIGUSR1, SIG_IGN);
    snprintf(spec, sizeof spec, "ring:%s?size=3M&signal=USR1", path);
    CHECK_INT(els_writer_open(spec, &w2, err, sizeof err), ==, ELS_EBUSY);
    CHECK(strstr(err, "already handles that signal") != NULL);
    signal(SIGUSR1, SIG_DFL);
    evgen_free(&h);
}

static void ring_bad_specs(void)
{
    static const struct {
        const char *query, *want;
    } cases[] = {
        { "buffer=8M", "does not apply to scheme ring (its size= is the window" },
        { "policy=block", "option 'policy' does not apply to scheme ring" },
        { "wait=1", "option 'wait' does not apply to scheme ring" },
        { "size=1M", "size=1M is too small" },
        { "size=lots", "size=lots: expected a size" },
        { "at-exit=yes", "at-exit=yes: expected 0 or 1" },
        { "signal=INT", "signal=INT: expected USR1 or USR2" },
    };
    char spec[700], err[512];
    struct els_writer *w = NULL;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(spec, sizeof spec, "ring:%s?%s", check_path("r"), cases[i].query);
        CHECK_INT(els_writer_open(spec, &w, err, sizeof err), ==, ELS_EINVAL);
        CHECK_MSG(strstr(err, cases[i].want) != NULL, "%s: %s", spec, err);
    }
    CHECK(els_writer_open("ring:", &w, err, sizeof err) == ELS_EINVAL);
    CHECK(strstr(err, "needs a path") != NULL);
    snprintf(spec, sizeof spec, "ring:%s/r", check_path("no-such-dir"));
    CHECK(els_writer_open(spec, &w, err, sizeof err) == -ENOENT);
    CHECK(strstr(err, "cannot write dumps into") != NULL);
    CHECK_OK(mkdir(check_path("d"), 0700));
    snprintf(spec, sizeof spec, "ring:%s", check_path("d"));
    CHECK(els_writer_open(spec, &w, err, sizeof err) == -EISDIR);
}

/* A dump that cannot be written fails with the reason and leaves no
 * file; the recorder goes on, and an existing file (or symlink) with a
 * dump's name is stepped over, never written through. */
static void ring_failed_dump_and_existing_names(void)
{
    CHECK_OK(mkdir(check_path("d"), 0700));
    const char *path = check_path("d/x");
    CHECK_OK(symlink(check_path("victim"), check_path("d/x.1")));
    char spec[700];
    snprintf(spec, sizeof spec, "ring:%s?size=3M&at-exit=0", path);
    struct els_writer *w = open_ok(spec);
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    write_blocks(w, 0, 3, 0, NULL);
    char name[4096];
    CHECK_OK(els_writer_dump(w, name, sizeof name));
    CHECK_STR(name, check_path("d/x.2"));
    CHECK(!tu_exists(check_path("victim")));

    CHECK_OK(unlink(check_path("d/x.1")));
    CHECK_OK(unlink(check_path("d/x.2")));
    CHECK_OK(rmdir(check_path("d")));
    CHECK_INT(els_writer_dump(w, name, sizeof name), ==, -ENOENT);
    CHECK_OK(mkdir(check_path("d"), 0700));
    CHECK_OK(els_writer_dump(w, name, sizeof name));
    CHECK_OK(els_writer_close(w));
    evgen_free(&h);
}

/* max-dumps=N bounds every dump asked for, whoever asks: past it a
 * request (els_writer_dump(), what a control command and serve --all's
 * webhook call) fails with ELS_ELIMIT and a line saying why, and a
 * signal writes nothing; neither leaves a file, and each is counted
 * (dumps_refused) and logged.  The dump at the end is at-exit='s
 * business, not bounded by it. */
static void ring_max_dumps_bounds_every_request(void)
{
    tu_log_capture();
    const char *path = check_path("cap");
    char spec[700];
    snprintf(spec, sizeof spec, "ring:%s?size=3M&max-dumps=2&signal=USR2", path);
    struct els_writer *w = open_ok(spec);
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    write_blocks(w, 0, 3, 0, NULL);
    char name[4096];
    CHECK_OK(els_writer_dump(w, name, sizeof name));
    CHECK_STR(name, check_path("cap.1"));
    CHECK_OK(raise(SIGUSR2));
    WAIT_UNTIL(stats_of(w).dumps_written == 2, 5, "no dump after SIGUSR2");
    CHECK(tu_exists(check_path("cap.2")));

    int r = els_writer_dump(w, name, sizeof name);
    CHECK_MSG(r == ELS_ELIMIT, "a third dump with max-dumps=2: %d (%s), \"%s\"",
              r, els_err_name(r), name);
    CHECK_CONTAINS(name, "max-dumps=2 reached: 2 dumps written, no more");
    CHECK_OK(raise(SIGUSR2));
    WAIT_UNTIL(stats_of(w).dumps_refused == 2, 5, "the signal past max-dumps= "
               "was not refused");
    struct els_stats st = stats_of(w);
    CHECK_U64(st.dumps_written, ==, 2);
    CHECK_U64(st.dumps_failed, ==, 0);
    CHECK(!tu_exists(check_path("cap.3")));
    CHECK(!tu_exists(check_path("cap.3.partial")));
    CHECK(tu_log_contains("no dump for a request: max-dumps=2 reached"));
    CHECK(tu_log_contains("no dump for the signal: max-dumps=2 reached"));

    /* The end of the stream: at-exit= decides, not max-dumps=. */
    write_blocks(w, 3, 1, 0, NULL);
    CHECK_OK(els_writer_close(w));
    struct evgen_buf got = read_file(check_path("cap.3"));
    check_stream_parses(&got, true);
    CHECK(count_of(&got, "unit000003") == 1);
    CHECK(tu_log_contains("dumps: 3 written, 0 failed (no file left), 2 "
                          "refused past max-dumps="));
    evgen_free(&got);
    evgen_free(&h);
    els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);
}

/* A dump is written as NAME.K.partial and renamed to NAME.K only once
 * whole (ring.c's Note [A dump's name]): what a program killed in a
 * dump leaves behind, NAME.K.partial, is stepped over and left alone by
 * the next program's dumps, as is a symlink planted at a .partial name,
 * which is never written through; a dump leaves no .partial behind. */
static void ring_dump_named_when_whole(void)
{
    CHECK_OK(tu_write_file(check_path("k.1.eventlog.partial"), "cut short"));
    CHECK_OK(symlink(check_path("victim"), check_path("k.2.eventlog.partial")));
    CHECK_OK(tu_write_file(check_path("k.3.eventlog"), "someone's"));
    char spec[700];
    snprintf(spec, sizeof spec, "ring:%s?size=3M&at-exit=0",
             check_path("k.eventlog"));
    struct els_writer *w = open_ok(spec);
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    write_blocks(w, 0, 3, 0, NULL);
    char name[4096];
    CHECK_OK(els_writer_dump(w, name, sizeof name));
    CHECK_STR(name, check_path("k.4.eventlog"));
    CHECK_INT(tu_file_mode(name), ==, 0600);
    struct evgen_buf got = read_file(name);
    check_stream_parses(&got, true);
    evgen_free(&got);
    CHECK(!tu_exists(check_path("k.4.eventlog.partial")));
    CHECK(!tu_exists(check_path("victim")));
    char *left = tu_read_file(check_path("k.1.eventlog.partial"));
    CHECK_STR(left, "cut short");
    free(left);
    left = tu_read_file(check_path("k.3.eventlog"));
    CHECK_STR(left, "someone's");
    free(left);
    CHECK_OK(els_writer_close(w));
    evgen_free(&h);
}

/* A recorder closed before anything was recorded (the program's next
 * sink failed to open, so the stream never started) writes no dump: no
 * file at all, a line that says why instead of "dumped the recording",
 * and the failure counted.  A request then is answered the same way. */
static void ring_nothing_recorded_no_file(void)
{
    tu_log_capture();
    char spec[700];
    snprintf(spec, sizeof spec, "ring:%s?size=3M", check_path("empty.eventlog"));
    struct els_writer *w = open_ok(spec);
    char name[4096];
    int r = els_writer_dump(w, name, sizeof name);
    CHECK_MSG(r == -ENODATA, "a dump of nothing: %d (%s)", r, els_err_name(r));
    CHECK_CONTAINS(name, "nothing was recorded: the stream never started");
    CHECK_U64(stats_of(w).dumps_failed, ==, 1);
    CHECK_OK(els_writer_close(w));
    DIR *d = opendir(check_path(""));
    CHECK(d != NULL);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        CHECK_MSG(strncmp(e->d_name, "empty.", 6) != 0, "a dump of nothing "
                  "left %s", e->d_name);
    closedir(d);
    CHECK(tu_log_contains("no dump for the end of the stream: nothing was "
                          "recorded: the stream never started"));
    CHECK(!tu_log_contains("dumped the recording"));
    CHECK(tu_log_contains("dumps: 0 written, 2 failed (no file left)"));
    els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);
}

/* One answer frame from fd: status, and text into text. */
static int read_answer_frame(int fd, uint32_t *id, char *text, size_t len)
{
    uint8_t h[16];
    CHECK_INT(tu_read_exact(fd, h, 16, 10000), ==, 0);
    CHECK(memcmp(h, ELSI_CTL_ANSWER_MAGIC, 4) == 0 && h[4] == ELSI_CTL_VERSION);
    *id = (uint32_t)h[6] << 24 | (uint32_t)h[7] << 16 | (uint32_t)h[8] << 8 | h[9];
    size_t n = (size_t)h[14] << 8 | h[15];
    CHECK(n < len);
    CHECK_INT(tu_read_exact(fd, text, n, 10000), ==, 0);
    text[n] = '\0';
    return (int)((uint32_t)h[10] << 24 | (uint32_t)h[11] << 16 |
                 (uint32_t)h[12] << 8 | h[13]);
}

static void send_frame(int fd, const uint8_t *f, size_t n)
{
    CHECK_INT(write(fd, f, n), ==, (ssize_t)n);
}

/* control=unix:PATH: a socket of the recorder's own, 0600 (a stale one
 * replaced), where a control-only client is served, a client that does
 * not say control-only is refused and closed, and which is removed at
 * close; a live socket, another file and a path too long refuse the
 * spec. */
static void ring_control_socket(void)
{
    char spec[700], err[512], text[1100];
    const char *sock = check_path("c.sock");
    int stale = tu_bind_unix(sock, false);
    CHECK(stale >= 0);
    close(stale);
    snprintf(spec, sizeof spec, "ring:%s?control=unix:%s",
             check_path("r.eventlog"), sock);
    struct els_writer *w = NULL;
    CHECK_MSG(els_writer_open(spec, &w, err, sizeof err) == 0, "%s", err);
    struct stat st;
    CHECK_OK(lstat(sock, &st));
    CHECK(S_ISSOCK(st.st_mode));
    CHECK_INT(st.st_mode & 07777, ==, 0600);

    /* A control-only client: the nonce, then answers. */
    int fd = unix_connect(sock);
    uint8_t hello[17], f[1200], nonce[16];
    hello[0] = ELSI_CTL_HELLO_CONTROL_ONLY;
    memset(hello + 1, 'n', 16);
    send_frame(fd, f, frame(f, ELSI_CTL_KIND_HELLO, hello, sizeof hello));
    CHECK_INT(tu_read_exact(fd, nonce, 16, 10000), ==, 0);
    CHECK(memcmp(nonce, hello + 1, 16) == 0);
    uint32_t id;
    CHECK_INT(read_answer_frame(fd, &id, text, sizeof text), ==, 0);
    send_frame(fd, f, command(f, 9, "status"));
    CHECK_INT(read_answer_frame(fd, &id, text, sizeof text), ==, 0);
    CHECK_INT(id, ==, 9);
    CHECK_MSG(strncmp(text, "running on ring:", 16) == 0, "status: %s", text);

    /* A client that goes straight to a command is refused and closed. */
    int bad = unix_connect(sock);
    send_frame(bad, f, command(f, 3, "status"));
    CHECK_INT(read_answer_frame(bad, &id, text, sizeof text), ==, ELS_EINVAL);
    CHECK_INT(id, ==, 3);
    CHECK_MSG(strstr(text, "serves control-only clients") != NULL, "%s", text);
    CHECK_INT(tu_wait_fd(bad, POLLIN, 10000), ==, 0);
    CHECK_INT(read(bad, text, sizeof text), ==, 0);
    close(bad);

    /* Another recorder cannot take the live socket. */
    struct els_writer *w2 = NULL;
    snprintf(spec, sizeof spec, "ring:%s?control=unix:%s",
             check_path("r2.eventlog"), sock);
    CHECK_INT(els_writer_open(spec, &w2, err, sizeof err), ==, ELS_EADDRINUSE);
    CHECK_MSG(strstr(err, "is listening on") != NULL, "%s", err);

    close(fd);
    CHECK_OK(els_writer_close(w));
    CHECK(!tu_exists(sock));

    CHECK_OK(tu_write_file(sock, "mine"));
    snprintf(spec, sizeof spec, "ring:%s?control=unix:%s",
             check_path("r3.eventlog"), sock);
    CHECK_INT(els_writer_open(spec, &w2, err, sizeof err), ==, ELS_EEXIST);
    CHECK_MSG(strstr(err, "refusing to replace") != NULL, "%s", err);
    char longpath[300];
    memset(longpath, 'x', sizeof longpath - 1);
    longpath[sizeof longpath - 1] = '\0';
    snprintf(spec, sizeof spec, "ring:%s?control=unix:/tmp/%s",
             check_path("r4.eventlog"), longpath);
    CHECK_INT(els_writer_open(spec, &w2, err, sizeof err), ==, ELS_ENAMETOOLONG);
    CHECK_MSG(strstr(err, "(sun_path)") != NULL, "%s", err);
    /* control=1 is for sinks with clients: a recorder is told its form. */
    snprintf(spec, sizeof spec, "ring:%s?control=1", check_path("r5.eventlog"));
    CHECK_INT(els_writer_open(spec, &w2, err, sizeof err), ==, ELS_EINVAL);
    CHECK_MSG(strstr(err, "a ring: sink takes control=unix:PATH") != NULL, "%s", err);
}

/* A client of control=unix:PATH that never completes a control-only
 * hello, whatever it sends, gets the refusal frame and end of file within
 * the hello deadline (Note [Control-only hello deadline]): one that says
 * nothing (what `eventlog-sink recv unix:CTL` does), one that sends half
 * a hello and stops, one that trickles a hello a byte at a time, slower
 * than the deadline.  Before the deadline they held a consumer place for
 * ever with no word.  A control-only client connected meanwhile is still
 * served. */
static void ring_control_hello_deadline(void)
{
    char spec[700], err[512], text[1100];
    const char *sock = check_path("c.sock");
    snprintf(spec, sizeof spec, "ring:%s?control=unix:%s",
             check_path("r.eventlog"), sock);
    struct els_writer *w = NULL;
    CHECK_MSG(els_writer_open(spec, &w, err, sizeof err) == 0, "%s", err);

    uint8_t hello[17], f[64];
    hello[0] = ELSI_CTL_HELLO_CONTROL_ONLY;
    memset(hello + 1, 'n', 16);
    size_t flen = frame(f, ELSI_CTL_KIND_HELLO, hello, sizeof hello);

    enum { SILENT, HALF, TRICKLE, N_BAD };
    int bad[N_BAD];
    for (int i = 0; i < N_BAD; i++)
        bad[i] = unix_connect(sock);
    CHECK_INT(send(bad[HALF], f, flen / 2, MSG_NOSIGNAL), ==, (ssize_t)(flen / 2));
    int good = unix_connect(sock);
    send_frame(good, f, flen);
    uint8_t nonce[16];
    CHECK_INT(tu_read_exact(good, nonce, 16, 10000), ==, 0);
    uint32_t id;
    CHECK_INT(read_answer_frame(good, &id, text, sizeof text), ==, 0);

    /* Each bad client: the frame, then end of file.  The trickler goes on
     * sending (one byte per 400 ms: the whole hello would take 10 s)
     * until it is told. */
    bool told[N_BAD] = { false };
    size_t trickled = 0;
    uint64_t deadline = check_now_ms() + 15000;
    for (int done = 0; done < N_BAD;) {
        CHECK_MSG(check_now_ms() < deadline, "%d of %d clients were told "
                  "nothing after 15 s", N_BAD - done, N_BAD);
        if (!told[TRICKLE] && trickled < flen) {
            (void)send(bad[TRICKLE], f + trickled, 1, MSG_NOSIGNAL);
            trickled++;
        }
        struct pollfd pf[N_BAD];
        for (int i = 0; i < N_BAD; i++)
            pf[i] = (struct pollfd){ .fd = told[i] ? -1 : bad[i],
                                     .events = POLLIN };
        CHECK(poll(pf, N_BAD, 400) >= 0);
        for (int i = 0; i < N_BAD; i++) {
            if (told[i] || !(pf[i].revents & (POLLIN | POLLHUP)))
                continue;
            CHECK_INT(read_answer_frame(bad[i], &id, text, sizeof text), ==,
                      ELS_EINVAL);
            CHECK_MSG(strstr(text, "serves control-only clients") != NULL,
                      "client %d: %s", i, text);
            CHECK_INT(tu_wait_fd(bad[i], POLLIN, 10000), ==, 0);
            /* Then the end: end of file, or for the trickler a reset when
             * a byte of its reached the socket after the last read
             * (Linux resets the peer of a unix socket closed with unread
             * bytes). */
            ssize_t r = read(bad[i], text, sizeof text);
            CHECK_MSG(r == 0 || (i == TRICKLE && r < 0 && errno == ECONNRESET),
                      "client %d: read %zd (%s) after its answer, not the end",
                      i, r, r < 0 ? strerror(errno) : "data");
            told[i] = true;
            done++;
        }
    }
    CHECK_MSG(trickled < flen, "the trickler sent its whole hello (%zu bytes) "
              "before it was told", trickled);

    /* The control-only client met the deadline and is still served. */
    send_frame(good, f, command(f, 4, "status"));
    CHECK_INT(read_answer_frame(good, &id, text, sizeof text), ==, 0);
    CHECK_INT(id, ==, 4);
    for (int i = 0; i < N_BAD; i++)
        close(bad[i]);
    close(good);
    CHECK_OK(els_writer_close(w));
}

static const struct check_case cases[] = {
    CHECK_CASE(ring_dump_from_the_start),
    CHECK_CASE(ring_window_starts_at_a_snapshot),
    CHECK_CASE(ring_without_snapshots_says_so),
    CHECK_CASE(ring_dump_on_signal),
    CHECK_CASE(ring_bad_specs),
    CHECK_CASE(ring_failed_dump_and_existing_names),
    CHECK_CASE(ring_max_dumps_bounds_every_request),
    CHECK_CASE(ring_dump_named_when_whole),
    CHECK_CASE(ring_nothing_recorded_no_file),
    CHECK_CASE(ring_control_socket),
    CHECK_CASE(ring_control_hello_deadline),
};

CHECK_MAIN(cases)
