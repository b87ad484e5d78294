/*
 * test_fifo.c: the "fifo" sink, called through its ops table as the
 * writer calls it, with real FIFOs in the case's temporary directory and
 * readers that come and go; plus the pipe half of fdutil (EPIPE with the
 * thread-directed SIGPIPE consumed, as the writer thread relies on).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* accept4, setgroups, F_GETPIPE_SZ */
#endif

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/uio.h>

#include "check.h"
#include "testutil.h"

#include "base/fdutil.h"
#include "sinks/sinks.h"

static const struct els_sink_ops *const F = &elsi_sink_fifo;

static void *open_fifo(struct tu_args *t, const char *path, const char *mode)
{
    void *sink = NULL;
    int rc = F->open(&sink, tu_sink_args(t, "fifo", path, mode ? "mode" : NULL, mode));
    CHECK_MSG(rc == 0, "open fifo:%s: %d (%s)", path, rc, t->err);
    return sink;
}

static bool is_fifo(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISFIFO(st.st_mode);
}

/* A reader as a consumer would open it: without waiting for a writer. */
static int open_reader(const char *path)
{
    int r = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    CHECK_MSG(r >= 0, "open reader %s: %s", path, strerror(errno));
    return r;
}

static int dial_ok(void *sink)
{
    int fd = -1;
    CHECK_OK(F->dial(sink, &fd));
    CHECK(fd >= 0);
    return fd;
}

static void send_and_receive(int w, int r, const char *msg)
{
    CHECK_OK(elsi_write_all(w, msg, strlen(msg)));
    char got[256];
    CHECK(strlen(msg) < sizeof got);
    CHECK_OK(tu_read_exact(r, got, strlen(msg), TU_WAIT_MS));
    CHECK(memcmp(got, msg, strlen(msg)) == 0);
}

/* ------------------------------------------------------------------------
 * Creating, refusing, removing
 * ------------------------------------------------------------------------ */

/* Created 0600 by default whatever the umask, reported by endpoint(), and
 * removed at close. */
static void fifo_created_0600_and_removed(void)
{
    umask(0);
    const char *path = check_path("ev.fifo");
    struct tu_args t;
    void *sink = open_fifo(&t, path, NULL);
    CHECK(is_fifo(path));
    CHECK_INT(tu_file_mode(path), ==, 0600);
    char ep[1100], want[1100];
    snprintf(want, sizeof want, "fifo:%s", path);
    CHECK_INT(F->endpoint(sink, ep, sizeof ep), ==, (int)strlen(want));
    CHECK_STR(ep, want);
    F->close(sink);
    CHECK(!tu_exists(path));
}

/* mode= gives exactly those bits (the umask does not narrow them). */
static void fifo_mode_option(void)
{
    umask(077);
    const char *path = check_path("ev.fifo");
    struct tu_args t;
    void *sink = open_fifo(&t, path, "0640");
    CHECK_INT(tu_file_mode(path), ==, 0640);
    F->close(sink);

    void *bad = NULL;
    CHECK_INT(F->open(&bad, tu_sink_args(&t, "fifo", path, "mode", "0800")), ==,
              ELS_EINVAL);
    CHECK_CONTAINS(t.err, "mode=0800");
    CHECK(!tu_exists(path));
}

/* A FIFO that exists is used as it is and left in place at close. */
static void fifo_existing_fifo_used_and_kept(void)
{
    const char *path = check_path("ev.fifo");
    CHECK_OK(mkfifo(path, 0644));
    CHECK_OK(chmod(path, 0644));
    struct tu_args t;
    void *sink = open_fifo(&t, path, "0600");
    CHECK_INT(tu_file_mode(path), ==, 0644);    /* not ours to change */
    int r = open_reader(path);
    int w = dial_ok(sink);
    send_and_receive(w, r, "existing");
    close(w);
    close(r);
    F->close(sink);
    CHECK(is_fifo(path));
}

/* Anything else at the path is refused and left untouched. */
static void fifo_non_fifo_refused(void)
{
    const char *file = check_path("file");
    CHECK_OK(tu_write_file(file, "precious data"));
    struct tu_args t;
    void *sink = NULL;
    CHECK_INT(F->open(&sink, tu_sink_args(&t, "fifo", file, NULL, NULL)), ==,
              ELS_EEXIST);
    CHECK_CONTAINS(t.err, file);
    CHECK_CONTAINS(t.err, "regular file");
    char *content = tu_read_file(file);
    CHECK_STR(content, "precious data");
    free(content);

    CHECK_INT(F->open(&sink, tu_sink_args(&t, "fifo", check_dir, NULL, NULL)),
              ==, ELS_EEXIST);
    CHECK_CONTAINS(t.err, "directory");

    const char *dangling = check_path("dangling");
    CHECK_OK(symlink(check_path("nowhere"), dangling));
    CHECK_INT(F->open(&sink, tu_sink_args(&t, "fifo", dangling, NULL, NULL)),
              ==, ELS_EEXIST);
    CHECK_CONTAINS(t.err, "symbolic link");
    CHECK(!tu_exists(check_path("nowhere")));

    CHECK_INT(F->open(&sink, tu_sink_args(&t, "fifo", "", NULL, NULL)), ==,
              ELS_EINVAL);
    CHECK_CONTAINS(t.err, "spec \"fifo:\": the FIFO path is empty");
}

static void fifo_eacces_body(const char *dir)
{
    CHECK_OK(chmod(dir, 0500));
    char path[1100];
    snprintf(path, sizeof path, "%s/ev.fifo", dir);
    struct tu_args t;
    void *sink = NULL;
    CHECK_INT(F->open(&sink, tu_sink_args(&t, "fifo", path, NULL, NULL)), ==,
              -EACCES);
    CHECK_CONTAINS(t.err, path);
    CHECK_CONTAINS(t.err, strerror(EACCES));
    CHECK(!tu_exists(path));
}

/* (As root this runs as uid 65534, since root ignores permissions.) */
static void fifo_directory_without_permission(void)
{
    int rc = tu_run_unprivileged("locked", fifo_eacces_body);
    CHECK(rc == 0 || rc == TU_SKIPPED);
}

/* close() removes only the FIFO this process created, and only while it
 * is still that FIFO. */
static void fifo_close_removes_only_own(void)
{
    const char *path = check_path("ev.fifo");
    struct tu_args t;
    void *sink = open_fifo(&t, path, NULL);
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        F->close(sink);
        _exit(0);
    }
    int status;
    CHECK_INT(waitpid(pid, &status, 0), ==, pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(is_fifo(path));               /* the child left it */

    CHECK_OK(unlink(path));
    CHECK_OK(mkfifo(path, 0600));       /* someone else's now */
    F->close(sink);
    CHECK(is_fifo(path));
}

/* Something else put at the path after open() is not written to. */
static void fifo_dial_refuses_replacement(void)
{
    const char *path = check_path("ev.fifo");
    struct tu_args t;
    void *sink = open_fifo(&t, path, NULL);
    CHECK_OK(unlink(path));
    CHECK_OK(tu_write_file(path, "precious data"));
    int fd = -1;
    CHECK_INT(F->dial(sink, &fd), ==, ELS_EEXIST);
    CHECK_INT(fd, ==, -1);
    F->close(sink);
    char *content = tu_read_file(path);
    CHECK_STR(content, "precious data");
    free(content);
}

/* ------------------------------------------------------------------------
 * Readers coming and going
 * ------------------------------------------------------------------------ */

/* No reader: "not yet", at once (a blocking open would hang the case). */
static void fifo_dial_without_reader(void)
{
    const char *path = check_path("ev.fifo");
    struct tu_args t;
    void *sink = open_fifo(&t, path, NULL);
    int fd = -1;
    CHECK_INT(F->dial(sink, &fd), ==, -EAGAIN);
    CHECK_INT(F->dial(sink, &fd), ==, -EAGAIN);
    CHECK_INT(fd, ==, -1);
    F->close(sink);
}

/* With a reader: a non-blocking, close-on-exec write end with a large
 * pipe, and data flows. */
static void fifo_dial_with_reader(void)
{
    const char *path = check_path("ev.fifo");
    struct tu_args t;
    void *sink = open_fifo(&t, path, NULL);
    int r = open_reader(path);
    int w = dial_ok(sink);
    CHECK(tu_is_nonblock_cloexec(w));
    CHECK_INT(fcntl(w, F_GETFL) & O_ACCMODE, ==, O_WRONLY);
    /* The pipe grows to 1 MiB unless the system forbids it; root is never
     * forbidden. */
    if (geteuid() == 0)
        CHECK_INT(fcntl(w, F_GETPIPE_SZ), >=, 1 << 20);
    send_and_receive(w, r, "hdrb hete hdre datb");
    close(w);
    close(r);
    F->close(sink);
}

/* The reader leaves: the write fails with EPIPE, the SIGPIPE it raised on
 * this thread is consumed (the process survives unblocking SIGPIPE with
 * the default disposition), and once a reader is back, dial works again. */
static void fifo_reader_leaves_and_returns(void)
{
    signal(SIGPIPE, SIG_DFL);
    tu_block_sigpipe();                 /* as the writer thread does */
    const char *path = check_path("ev.fifo");
    struct tu_args t;
    void *sink = open_fifo(&t, path, NULL);
    int r = open_reader(path);
    int w = dial_ok(sink);
    send_and_receive(w, r, "first reader");
    close(r);

    struct iovec iov = { "lost", 4 };
    CHECK_INT(elsi_write_iov(w, false, &iov, 1), ==, -EPIPE);
    CHECK(!tu_sigpipe_pending());
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    CHECK_OK(pthread_sigmask(SIG_UNBLOCK, &set, NULL));   /* would kill */
    CHECK_OK(pthread_sigmask(SIG_BLOCK, &set, NULL));
    close(w);

    int fd = -1;
    CHECK_INT(F->dial(sink, &fd), ==, -EAGAIN);
    r = open_reader(path);
    w = dial_ok(sink);
    send_and_receive(w, r, "second reader");
    close(w);
    close(r);
    F->close(sink);
}

/* ------------------------------------------------------------------------
 * Non-blocking readers, one stream per reader, one writer per FIFO
 * ------------------------------------------------------------------------ */

/* A non-blocking reader of an empty FIFO that a writer holds reads
 * "nothing yet" (EAGAIN), not end of file (0). */
static void check_no_eof(int r)
{
    char c;
    CHECK_INT(read(r, &c, 1), ==, -1);
    CHECK_INT(errno, ==, EAGAIN);
}

/* A reader that opens the FIFO non-blocking (as GHC-built programs do)
 * before the writer has dialled must not read end of file: the sink holds
 * the write end from open() on.  Once dialled, the stream flows.  The
 * same for a FIFO someone made before the program started. */
static void nonblocking_reader(bool existing)
{
    const char *path = check_path("ev.fifo");
    if (existing)
        CHECK_OK(mkfifo(path, 0600));
    struct tu_args t;
    void *sink = open_fifo(&t, path, NULL);
    int r = open_reader(path);
    check_no_eof(r);
    int w = dial_ok(sink);
    send_and_receive(w, r, "hdrb live");
    close(w);
    close(r);
    F->close(sink);
    CHECK(is_fifo(path) == existing);
}

static void fifo_nonblocking_reader_sees_writer(void)
{
    nonblocking_reader(false);
}

static void fifo_nonblocking_reader_existing_fifo(void)
{
    nonblocking_reader(true);
}

/* A reader leaves with a unit half read; the next reader opens the path
 * before the writer has even noticed (its end is still open).  The next
 * reader must never see the old stream's bytes: it gets a FIFO of its own,
 * with a writer on it (no end of file), and its stream starts with what
 * the writer sends it after dialling again. */
static void fifo_next_reader_gets_no_stale_bytes(void)
{
    tu_block_sigpipe();
    const char *path = check_path("ev.fifo");
    struct tu_args t;
    void *sink = open_fifo(&t, path, NULL);
    int r1 = open_reader(path);
    int w1 = dial_ok(sink);
    send_and_receive(w1, r1, "hdrb first ");
    CHECK_OK(elsi_write_all(w1, "half a unit", 11));
    close(r1);                          /* leaves 11 bytes unread */

    int r2 = open_reader(path);         /* w1 still open */
    check_no_eof(r2);                   /* and nothing stale */

    /* The writer sees the first reader gone, closes, dials again. */
    struct iovec iov = { "more", 4 };
    CHECK_INT(elsi_write_iov(w1, false, &iov, 1), ==, -EPIPE);
    close(w1);
    int w2 = dial_ok(sink);
    send_and_receive(w2, r2, "hdrb second");
    close(w2);
    char rest[16];
    CHECK_OK(tu_wait_fd(r2, POLLIN, TU_WAIT_MS));
    CHECK_INT(read(r2, rest, sizeof rest), ==, 0);  /* and nothing else */
    close(r2);
    F->close(sink);
    CHECK(!tu_exists(path));
}

/* A second reader while the first is served shares nothing with it: it
 * waits, and gets its own stream once the first one leaves. */
static void fifo_second_reader_waits_for_its_own_stream(void)
{
    tu_block_sigpipe();
    const char *path = check_path("ev.fifo");
    struct tu_args t;
    void *sink = open_fifo(&t, path, NULL);
    int r1 = open_reader(path);
    int w1 = dial_ok(sink);
    int r2 = open_reader(path);
    static const char first[] = "hdrb for the first reader only";
    CHECK_OK(elsi_write_all(w1, first, strlen(first)));
    check_no_eof(r2);                   /* no byte of the first stream */
    char got[sizeof first];
    CHECK_OK(tu_read_exact(r1, got, strlen(first), TU_WAIT_MS));
    CHECK(memcmp(got, first, strlen(first)) == 0);
    close(r1);
    close(w1);
    int fd = dial_ok(sink);
    send_and_receive(fd, r2, "hdrb for the second");
    close(fd);
    close(r2);
    F->close(sink);
}

/* Only one program writes to a FIFO: a second sink on the same path is
 * refused with a clear error while the first one holds it, created or
 * existing, idle or dialled; so is a forked child (which shares the
 * parent's descriptors, but not the right to write). */
static void fifo_second_writer_refused(void)
{
    const char *path = check_path("ev.fifo");
    struct tu_args t, t2;
    void *sink = open_fifo(&t, path, NULL);
    void *second = NULL;
    CHECK_INT(F->open(&second, tu_sink_args(&t2, "fifo", path, NULL, NULL)), ==,
              ELS_EADDRINUSE);
    CHECK_CONTAINS(t2.err, "another process is already writing to this FIFO");
    CHECK_CONTAINS(t2.err, path);

    int r = open_reader(path);
    int w = dial_ok(sink);               /* handed to the writer */
    CHECK_INT(F->open(&second, tu_sink_args(&t2, "fifo", path, NULL, NULL)), ==,
              ELS_EADDRINUSE);

    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        struct tu_args tc;
        void *child = NULL;
        int rc = F->open(&child, tu_sink_args(&tc, "fifo", path, NULL, NULL));
        _exit(rc == ELS_EADDRINUSE ? 0 : 1);
    }
    int status;
    CHECK_INT(waitpid(pid, &status, 0), ==, pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    close(w);
    close(r);
    F->close(sink);
    /* Free again once the first one has gone. */
    second = open_fifo(&t2, path, NULL);
    F->close(second);
}

/* A program that dies without closing leaves its FIFO behind, but not its
 * lock: the next program uses the FIFO. */
static void fifo_lock_does_not_survive_a_crash(void)
{
    const char *path = check_path("ev.fifo");
    int ready[2];
    CHECK_OK(pipe(ready));
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        struct tu_args tc;
        void *child = NULL;
        if (F->open(&child, tu_sink_args(&tc, "fifo", path, NULL, NULL)) != 0)
            _exit(1);
        (void)write(ready[1], "x", 1);
        pause();
        _exit(1);
    }
    char c;
    CHECK_INT(read(ready[0], &c, 1), ==, 1);
    struct tu_args t;
    void *sink = NULL;
    CHECK_INT(F->open(&sink, tu_sink_args(&t, "fifo", path, NULL, NULL)), ==,
              ELS_EADDRINUSE);
    CHECK_OK(kill(pid, SIGKILL));
    int status;
    CHECK_INT(waitpid(pid, &status, 0), ==, pid);
    CHECK(is_fifo(path));
    sink = open_fifo(&t, path, NULL);
    int r = open_reader(path);
    int w = dial_ok(sink);
    send_and_receive(w, r, "after the crash");
    close(w);
    close(r);
    F->close(sink);
    CHECK(is_fifo(path));               /* not ours: left in place */
    close(ready[0]);
    close(ready[1]);
}

/* A FIFO that belongs to another user is refused: writing into it would
 * hand that user the program's eventlog.  (Runs as root only: made by
 * uid 65534 and opened by root.) */
static void fifo_other_users_fifo_refused(void)
{
    if (geteuid() != 0)
        CHECK_SKIP_PART("needs root to make a FIFO of another user");
    const char *path = check_path("theirs.fifo");
    CHECK_OK(mkfifo(path, 0666));
    CHECK_OK(chown(path, 65534, 65534));
    struct tu_args t;
    void *sink = NULL;
    CHECK_INT(F->open(&sink, tu_sink_args(&t, "fifo", path, NULL, NULL)), ==,
              -EACCES);
    CHECK_CONTAINS(t.err, "belongs to uid 65534");
}

/* A symbolic link at the path is never followed, even to a FIFO. */
static void fifo_symlink_never_followed(void)
{
    const char *target = check_path("real.fifo");
    const char *link = check_path("link.fifo");
    CHECK_OK(mkfifo(target, 0600));
    CHECK_OK(symlink(target, link));
    struct tu_args t;
    void *sink = NULL;
    CHECK_INT(F->open(&sink, tu_sink_args(&t, "fifo", link, NULL, NULL)), ==,
              ELS_EEXIST);
    CHECK_CONTAINS(t.err, "symbolic link");
    CHECK_INT(tu_file_mode(target), ==, 0600);
    struct stat st;
    CHECK_OK(lstat(link, &st));
    CHECK(S_ISLNK(st.st_mode));
}

/* ------------------------------------------------------------------------
 * fdutil on pipes
 * ------------------------------------------------------------------------ */

/* A SIGPIPE that was pending before the write is someone else's: it is not
 * consumed (ours merged into it, so exactly one remains). */
static void fdutil_pipe_keeps_foreign_sigpipe(void)
{
    tu_block_sigpipe();
    int p[2];
    CHECK_OK(elsi_pipe_nb(p));
    close(p[0]);
    CHECK_OK(pthread_kill(pthread_self(), SIGPIPE));
    CHECK(tu_sigpipe_pending());
    struct iovec iov = { "x", 1 };
    CHECK_INT(elsi_write_iov(p[1], false, &iov, 1), ==, -EPIPE);
    CHECK(tu_sigpipe_pending());

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    struct timespec zero = { 0, 0 };
    CHECK_INT(sigtimedwait(&set, NULL, &zero), ==, SIGPIPE);
    CHECK(!tu_sigpipe_pending());

    /* And with nothing pending before, ours is consumed. */
    CHECK_INT(elsi_write_iov(p[1], false, &iov, 1), ==, -EPIPE);
    CHECK(!tu_sigpipe_pending());
    close(p[1]);
}

/* The wake-up pipe: non-blocking, close-on-exec; writes stop at -EAGAIN
 * when full; write_all waits for room. */
static void fdutil_pipe_helpers(void)
{
    int p[2];
    CHECK_OK(elsi_pipe_nb(p));
    CHECK(tu_is_nonblock_cloexec(p[0]));
    CHECK(tu_is_nonblock_cloexec(p[1]));
    CHECK(!elsi_is_socket(p[0]));

    static char chunk[4096];
    memset(chunk, 'z', sizeof chunk);
    size_t total = 0;
    ssize_t n;
    struct iovec iov[2] = { { chunk, 1000 }, { chunk, sizeof chunk } };
    while ((n = elsi_write_iov(p[1], false, iov, 2)) > 0)
        total += (size_t)n;
    CHECK_INT(n, ==, -EAGAIN);
    CHECK_U64(total, >=, 4096);

    char *buf = malloc(total);
    CHECK(buf != NULL);
    CHECK_OK(tu_read_exact(p[0], buf, total, TU_WAIT_MS));
    free(buf);

    /* A blocking pipe made non-blocking. */
    int q[2];
    CHECK_OK(pipe(q));
    CHECK(!(fcntl(q[1], F_GETFL) & O_NONBLOCK));
    CHECK_OK(elsi_set_nonblock(q[1]));
    CHECK(fcntl(q[1], F_GETFL) & O_NONBLOCK);
    CHECK_OK(elsi_set_nonblock(q[1]));
    CHECK_INT(elsi_set_nonblock(-1), ==, -EBADF);
    close(q[0]);
    close(q[1]);
    close(p[0]);
    close(p[1]);
}

static const struct check_case cases[] = {
    CHECK_CASE(fifo_created_0600_and_removed),
    CHECK_CASE(fifo_mode_option),
    CHECK_CASE(fifo_existing_fifo_used_and_kept),
    CHECK_CASE(fifo_non_fifo_refused),
    CHECK_CASE(fifo_directory_without_permission),
    CHECK_CASE(fifo_close_removes_only_own),
    CHECK_CASE(fifo_dial_refuses_replacement),
    CHECK_CASE(fifo_dial_without_reader),
    CHECK_CASE(fifo_dial_with_reader),
    CHECK_CASE(fifo_reader_leaves_and_returns),
    CHECK_CASE(fifo_nonblocking_reader_sees_writer),
    CHECK_CASE(fifo_nonblocking_reader_existing_fifo),
    CHECK_CASE(fifo_next_reader_gets_no_stale_bytes),
    CHECK_CASE(fifo_second_reader_waits_for_its_own_stream),
    CHECK_CASE(fifo_second_writer_refused),
    CHECK_CASE(fifo_lock_does_not_survive_a_crash),
    CHECK_CASE(fifo_other_users_fifo_refused),
    CHECK_CASE(fifo_symlink_never_followed),
    CHECK_CASE(fdutil_pipe_keeps_foreign_sigpipe),
    CHECK_CASE(fdutil_pipe_helpers),
};

CHECK_MAIN(cases)
