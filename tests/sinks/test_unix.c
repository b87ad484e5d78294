/*
 * test_unix.c: the "unix" and "unix-connect" sinks, called through
 * their ops tables as the writer calls them, against real sockets in the
 * case's temporary directory; plus the socket half of fdutil (MSG_NOSIGNAL,
 * write_all).  The writer thread itself is test_writer.c's business.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* accept4, setgroups */
#endif

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "check.h"
#include "testutil.h"

#include "base/fdutil.h"
#include "sinks/sinks.h"

static const struct els_sink_ops *const U = &elsi_sink_unix;
static const struct els_sink_ops *const UC = &elsi_sink_unix_connect;

/* Open unix:path (optionally ?mode=value) and check it succeeded. */
static void *open_listener(struct tu_args *t, const char *path, const char *mode)
{
    void *sink = NULL;
    int rc = U->open(&sink, tu_sink_args(t, "unix", path, mode ? "mode" : NULL, mode));
    CHECK_MSG(rc == 0, "open unix:%s: %d (%s)", path, rc, t->err);
    CHECK(sink != NULL);
    return sink;
}

/* Accept one consumer, waiting for it to arrive. */
static int accept_one(void *sink)
{
    CHECK_OK(tu_wait_fd(U->listen_fd(sink), POLLIN, TU_WAIT_MS));
    int fd = -1;
    CHECK_OK(U->accept(sink, &fd));
    CHECK(fd >= 0);
    return fd;
}

static size_t count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

/* ------------------------------------------------------------------------
 * unix: listening
 * ------------------------------------------------------------------------ */

/* The basic life: listen, accept a client, data flows, close removes the
 * socket file. */
static void unix_listen_accept_send(void)
{
    const char *path = check_path("s.sock");
    struct tu_args t;
    void *sink = open_listener(&t, path, NULL);

    struct stat st;
    CHECK_OK(lstat(path, &st));
    CHECK(S_ISSOCK(st.st_mode));
    CHECK(tu_is_nonblock_cloexec(U->listen_fd(sink)));

    char ep[1100], want[1100];
    snprintf(want, sizeof want, "unix:%s", path);
    CHECK_INT(U->endpoint(sink, ep, sizeof ep), ==, (int)strlen(want));
    CHECK_STR(ep, want);

    int fd = -1;
    CHECK_INT(U->accept(sink, &fd), ==, -EAGAIN);   /* nobody yet */

    int client = tu_connect_unix(path, TU_WAIT_MS);
    CHECK_INT(client, >=, 0);
    fd = accept_one(sink);
    CHECK(tu_is_nonblock_cloexec(fd));

    static const char msg[] = "hdrb...hete hdre datb";
    CHECK_OK(elsi_write_all(fd, msg, sizeof msg));
    char got[sizeof msg];
    CHECK_OK(tu_read_exact(client, got, sizeof got, TU_WAIT_MS));
    CHECK(memcmp(got, msg, sizeof msg) == 0);

    close(fd);
    close(client);
    U->close(sink);
    CHECK(!tu_exists(path));
}

/* Without mode= the socket is 0600, whatever the umask: umask 0 would give
 * 0777 if the sink relied on it. */
static void unix_mode_default_0600(void)
{
    umask(0);
    const char *path = check_path("s.sock");
    struct tu_args t;
    void *sink = open_listener(&t, path, NULL);
    CHECK_INT(tu_file_mode(path), ==, 0600);
    U->close(sink);
}

/* mode= is honoured exactly, with or without the leading 0, and the umask
 * does not narrow it (a group-readable socket is what mode=0660 asks). */
static void unix_mode_option(void)
{
    umask(077);
    struct tu_args t;
    const char *p1 = check_path("a.sock");
    void *s1 = open_listener(&t, p1, "0640");
    CHECK_INT(tu_file_mode(p1), ==, 0640);
    U->close(s1);

    struct tu_args t2;
    const char *p2 = check_path("b.sock");
    void *s2 = open_listener(&t2, p2, "660");
    CHECK_INT(tu_file_mode(p2), ==, 0660);
    U->close(s2);
}

/* Anything but octal permission bits is refused before anything is
 * created. */
static void unix_mode_invalid(void)
{
    static const char *const bad[] = { "", "0999", "8", "1777", "07777",
                                       "rw", "-1", "0x1ff", "0640 " };
    const char *path = check_path("s.sock");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct tu_args t;
        void *sink = NULL;
        int rc = U->open(&sink, tu_sink_args(&t, "unix", path, "mode", bad[i]));
        CHECK_MSG(rc == ELS_EINVAL, "mode=\"%s\": %d", bad[i], rc);
        CHECK_CONTAINS(t.err, "mode=");
        CHECK(!tu_exists(path));
    }
}

/* A socket file left by a process that died (bound, never unlinked) is
 * removed, and the removal is logged. */
static void unix_stale_socket_removed(void)
{
    tu_log_capture();
    const char *path = check_path("s.sock");
    int dead = tu_bind_unix(path, true);
    CHECK_INT(dead, >=, 0);
    close(dead);                        /* the file stays */
    CHECK(tu_exists(path));

    struct tu_args t;
    void *sink = open_listener(&t, path, NULL);
    char expect[1200];
    snprintf(expect, sizeof expect, "removed stale socket %s", path);
    CHECK(tu_log_contains(expect));

    int client = tu_connect_unix(path, TU_WAIT_MS);
    CHECK_INT(client, >=, 0);
    int fd = accept_one(sink);
    close(fd);
    close(client);
    U->close(sink);
}

/* A socket someone listens on is not taken over. */
static void unix_live_socket_refused(void)
{
    const char *path = check_path("s.sock");
    int live = tu_bind_unix(path, true);
    CHECK_INT(live, >=, 0);
    struct stat before, after;
    CHECK_OK(lstat(path, &before));

    struct tu_args t;
    void *sink = NULL;
    CHECK_INT(U->open(&sink, tu_sink_args(&t, "unix", path, NULL, NULL)), ==,
              ELS_EADDRINUSE);
    CHECK_CONTAINS(t.err, "another process is listening on");
    CHECK_CONTAINS(t.err, path);

    /* Still the same file, and its owner still gets clients. */
    CHECK_OK(lstat(path, &after));
    CHECK(before.st_ino == after.st_ino);
    int client = tu_connect_unix(path, TU_WAIT_MS);
    CHECK_INT(client, >=, 0);
    close(client);
    close(live);
}

/* What is not a socket is never replaced, and its content stays. */
static void unix_non_socket_refused(void)
{
    const char *file = check_path("file");
    CHECK_OK(tu_write_file(file, "precious data"));
    struct tu_args t;
    void *sink = NULL;
    CHECK_INT(U->open(&sink, tu_sink_args(&t, "unix", file, NULL, NULL)), ==,
              ELS_EEXIST);
    CHECK_CONTAINS(t.err, "refusing to replace");
    CHECK_CONTAINS(t.err, file);
    CHECK_CONTAINS(t.err, "regular file");
    char *content = tu_read_file(file);
    CHECK_STR(content, "precious data");
    free(content);

    const char *dir = check_path("dir");
    CHECK_OK(mkdir(dir, 0700));
    CHECK_INT(U->open(&sink, tu_sink_args(&t, "unix", dir, NULL, NULL)), ==,
              ELS_EEXIST);
    CHECK_CONTAINS(t.err, "directory");

    /* A symbolic link, even to a socket, is not ours to replace. */
    const char *real = check_path("real.sock");
    int live = tu_bind_unix(real, false);
    CHECK_INT(live, >=, 0);
    const char *link = check_path("link.sock");
    CHECK_OK(symlink(real, link));
    CHECK_INT(U->open(&sink, tu_sink_args(&t, "unix", link, NULL, NULL)), ==,
              ELS_EEXIST);
    CHECK_CONTAINS(t.err, "symbolic link");
    CHECK(tu_exists(link));
    close(live);
}

static void unix_eacces_body(const char *dir)
{
    CHECK_OK(chmod(dir, 0500));
    char path[1100];
    snprintf(path, sizeof path, "%s/s.sock", dir);
    struct tu_args t;
    void *sink = NULL;
    CHECK_INT(U->open(&sink, tu_sink_args(&t, "unix", path, NULL, NULL)), ==,
              -EACCES);
    CHECK_CONTAINS(t.err, path);
    CHECK_CONTAINS(t.err, strerror(EACCES));
    CHECK(!tu_exists(path));
}

/* A directory we may not write to: the OS error, naming the path.  (As
 * root the check runs as uid 65534, since root ignores permissions.) */
static void unix_directory_without_permission(void)
{
    int rc = tu_run_unprivileged("locked", unix_eacces_body);
    CHECK(rc == 0 || rc == TU_SKIPPED);
}

/* A path that does not fit sun_path is refused, not truncated: nothing is
 * created, under the full name or a shortened one. */
static void unix_path_too_long(void)
{
    char path[300];
    int n = snprintf(path, sizeof path, "%s/", check_dir);
    while (n < 130)
        path[n++] = 'x';
    path[n] = '\0';
    struct tu_args t;
    void *sink = NULL;
    /* The spec first (its quote may be cut after 160 bytes), then the
     * reason. */
    char spec[300], reason[200];
    snprintf(spec, sizeof spec, "spec \"unix:%.100s", path);
    snprintf(reason, sizeof reason, "\": the UNIX socket path is %zu bytes; "
             "the limit is 107 bytes", strlen(path));
    CHECK_INT(U->open(&sink, tu_sink_args(&t, "unix", path, NULL, NULL)), ==,
              ELS_ENAMETOOLONG);
    CHECK_INT(strncmp(t.err, spec, strlen(spec)), ==, 0);
    CHECK_CONTAINS(t.err, reason);
    CHECK_INT(count_entries(check_dir), ==, 0);

    CHECK_INT(UC->open(&sink, tu_sink_args(&t, "unix-connect", path, NULL, NULL)),
              ==, ELS_ENAMETOOLONG);
    snprintf(spec, sizeof spec, "spec \"unix-connect:%.100s", path);
    CHECK_INT(strncmp(t.err, spec, strlen(spec)), ==, 0);
    CHECK_CONTAINS(t.err, reason);
}

static void unix_empty_path(void)
{
    struct tu_args t;
    void *sink = NULL;
    CHECK_INT(U->open(&sink, tu_sink_args(&t, "unix", "", NULL, NULL)), ==,
              ELS_EINVAL);
    CHECK_CONTAINS(t.err, "spec \"unix:\": empty UNIX socket path");
    CHECK_INT(UC->open(&sink, tu_sink_args(&t, "unix-connect", "", NULL, NULL)),
              ==, ELS_EINVAL);
    CHECK_CONTAINS(t.err, "spec \"unix-connect:\": empty UNIX socket path");
}

/* Someone replaced the socket file while we ran: close() leaves the
 * replacement alone. */
static void unix_close_keeps_replacement(void)
{
    const char *path = check_path("s.sock");
    struct tu_args t;
    void *sink = open_listener(&t, path, NULL);
    CHECK_OK(unlink(path));
    CHECK_OK(tu_write_file(path, "not yours"));
    U->close(sink);
    char *content = tu_read_file(path);
    CHECK_STR(content, "not yours");
    free(content);

    /* Replaced by another socket: same type, different file. */
    const char *p2 = check_path("t.sock");
    struct tu_args t2;
    void *s2 = open_listener(&t2, p2, NULL);
    CHECK_OK(unlink(p2));
    int other = tu_bind_unix(p2, true);
    CHECK_INT(other, >=, 0);
    U->close(s2);
    CHECK(tu_exists(p2));
    int client = tu_connect_unix(p2, TU_WAIT_MS);
    CHECK_INT(client, >=, 0);
    close(client);
    close(other);
}

/* A forked child closing its copy must not remove the parent's socket;
 * the parent's close still does. */
static void unix_forked_child_close_keeps_file(void)
{
    const char *path = check_path("s.sock");
    struct tu_args t;
    void *sink = open_listener(&t, path, NULL);
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        U->close(sink);
        _exit(0);
    }
    int status;
    CHECK_INT(waitpid(pid, &status, 0), ==, pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(tu_exists(path));

    int client = tu_connect_unix(path, TU_WAIT_MS);
    CHECK_INT(client, >=, 0);
    int fd = accept_one(sink);
    close(fd);
    close(client);
    U->close(sink);
    CHECK(!tu_exists(path));
}

/* ------------------------------------------------------------------------
 * unix-connect: dialling a collector
 * ------------------------------------------------------------------------ */

/* Dial until the collector is there, then data flows. */
static void unix_connect_dial(void)
{
    const char *path = check_path("collector.sock");
    struct tu_args t;
    void *sink = NULL;
    /* The collector need not exist at open(). */
    CHECK_OK(UC->open(&sink, tu_sink_args(&t, "unix-connect", path, NULL, NULL)));
    char ep[1100], want[1100];
    UC->endpoint(sink, ep, sizeof ep);
    snprintf(want, sizeof want, "unix-connect:%s", path);
    CHECK_STR(ep, want);

    int fd = -1;
    CHECK_INT(UC->dial(sink, &fd), ==, -EAGAIN);    /* no file */

    int coll = tu_bind_unix(path, false);           /* bound, not listening */
    CHECK_INT(coll, >=, 0);
    CHECK_INT(UC->dial(sink, &fd), ==, -EAGAIN);    /* refused */

    CHECK_OK(listen(coll, 16));
    struct tu_collector c;
    CHECK_OK(tu_collector_start(&c, coll, TU_WAIT_MS));
    int rc = UC->dial(sink, &fd);
    if (rc == -EINPROGRESS)
        rc = tu_wait_connected(fd, TU_WAIT_MS);
    CHECK_OK(rc);
    CHECK(tu_is_nonblock_cloexec(fd));

    char data[100000];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (char)(i * 7);
    CHECK_OK(elsi_write_all(fd, data, sizeof data));
    close(fd);
    CHECK_OK(tu_collector_join(&c));
    CHECK_U64(c.len, ==, sizeof data);
    CHECK(memcmp(c.data, data, sizeof data) == 0);
    free(c.data);
    close(coll);
    UC->close(sink);
    CHECK(tu_exists(path));         /* the collector's file, not ours */
}

/* ------------------------------------------------------------------------
 * fdutil on sockets
 * ------------------------------------------------------------------------ */

/* MSG_NOSIGNAL alone keeps a socket write to a closed peer from raising
 * SIGPIPE: SIGPIPE is neither blocked nor ignored here, so a signal would
 * kill the case. */
static void fdutil_socket_epipe_without_sigpipe(void)
{
    signal(SIGPIPE, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    CHECK_OK(pthread_sigmask(SIG_UNBLOCK, &set, NULL));

    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
    close(sv[1]);
    CHECK(elsi_is_socket(sv[0]));
    struct iovec iov[2] = { { "abc", 3 }, { "def", 3 } };
    CHECK_INT(elsi_write_iov(sv[0], true, iov, 2), ==, -EPIPE);
    CHECK(!tu_sigpipe_pending());
    CHECK_INT(elsi_write_all(sv[0], "x", 1), ==, -EPIPE);
    close(sv[0]);
}

struct reader_arg {
    int fd;
    char *data;
    size_t len;
};

static void *reader_main(void *p)
{
    struct reader_arg *r = p;
    r->data = tu_read_all(r->fd, &r->len, TU_WAIT_MS);
    return NULL;
}

/* write_iov takes what fits and then says -EAGAIN; write_all waits for
 * room and delivers everything in order. */
static void fdutil_socket_partial_and_write_all(void)
{
    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
    CHECK_OK(elsi_set_nonblock(sv[0]));
    CHECK(fcntl(sv[0], F_GETFL) & O_NONBLOCK);

    /* Fill the socket buffer. */
    static char chunk[65536];
    memset(chunk, 'a', sizeof chunk);
    size_t queued = 0;
    for (;;) {
        struct iovec iov = { chunk, sizeof chunk };
        ssize_t n = elsi_write_iov(sv[0], true, &iov, 1);
        if (n == -EAGAIN)
            break;
        CHECK_INT(n, >, 0);
        queued += (size_t)n;
    }
    CHECK_U64(queued, >, 0);

    /* A reader drains it while write_all pushes 4 MiB more. */
    struct reader_arg r = { .fd = sv[1] };
    pthread_t th;
    CHECK_OK(pthread_create(&th, NULL, reader_main, &r));
    size_t big = 4u << 20;
    char *buf = malloc(big);
    CHECK(buf != NULL);
    for (size_t i = 0; i < big; i++)
        buf[i] = (char)(i % 251);
    CHECK_OK(elsi_write_all(sv[0], buf, big));
    close(sv[0]);
    pthread_join(th, NULL);
    CHECK(r.data != NULL);
    CHECK_U64(r.len, ==, queued + big);
    for (size_t i = 0; i < queued; i++)
        CHECK(r.data[i] == 'a');
    CHECK(memcmp(r.data + queued, buf, big) == 0);
    free(r.data);
    free(buf);
    close(sv[1]);
}

static void fdutil_socket_helpers(void)
{
    int s = elsi_socket_nb(AF_UNIX, SOCK_STREAM);
    CHECK_INT(s, >=, 0);
    CHECK(tu_is_nonblock_cloexec(s));
    CHECK(elsi_is_socket(s));
    CHECK_INT(elsi_socket_nb(12345, SOCK_STREAM), <, 0);

    const char *path = check_path("l.sock");
    int l = tu_bind_unix(path, true);
    CHECK_INT(l, >=, 0);
    CHECK_OK(elsi_set_nonblock(l));
    int fd = -1;
    CHECK_INT(elsi_accept_nb(l, &fd), ==, -EAGAIN);
    int client = tu_connect_unix(path, TU_WAIT_MS);
    CHECK_INT(client, >=, 0);
    CHECK_OK(tu_wait_fd(l, POLLIN, TU_WAIT_MS));
    CHECK_OK(elsi_accept_nb(l, &fd));
    CHECK(tu_is_nonblock_cloexec(fd));
    CHECK_INT(elsi_accept_nb(s, &fd), ==, -EINVAL);     /* not listening */

    errno = 1234;
    elsi_close(fd);
    CHECK_INT(errno, ==, 1234);
    CHECK_INT(fcntl(fd, F_GETFD), ==, -1);
    close(client);
    close(l);
    close(s);
}

static const struct check_case cases[] = {
    CHECK_CASE(unix_listen_accept_send),
    CHECK_CASE(unix_mode_default_0600),
    CHECK_CASE(unix_mode_option),
    CHECK_CASE(unix_mode_invalid),
    CHECK_CASE(unix_stale_socket_removed),
    CHECK_CASE(unix_live_socket_refused),
    CHECK_CASE(unix_non_socket_refused),
    CHECK_CASE(unix_directory_without_permission),
    CHECK_CASE(unix_path_too_long),
    CHECK_CASE(unix_empty_path),
    CHECK_CASE(unix_close_keeps_replacement),
    CHECK_CASE(unix_forked_child_close_keeps_file),
    CHECK_CASE(unix_connect_dial),
    CHECK_CASE(fdutil_socket_epipe_without_sigpipe),
    CHECK_CASE(fdutil_socket_partial_and_write_all),
    CHECK_CASE(fdutil_socket_helpers),
};

CHECK_MAIN(cases)
