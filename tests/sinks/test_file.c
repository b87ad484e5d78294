/*
 * test_file.c: the "file" sink, called through its ops table as the
 * writer calls it, on real files in the case's temporary directory: created
 * or truncated at open, errors at open for paths that cannot be written,
 * and descriptors from dial() that continue one stream.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* accept4, setgroups */
#endif

#include <fcntl.h>
#include <sys/stat.h>

#include "check.h"
#include "testutil.h"

#include "base/fdutil.h"
#include "sinks/sinks.h"

static const struct els_sink_ops *const FL = &elsi_sink_file;

static void *open_file(struct tu_args *t, const char *path, const char *mode)
{
    void *sink = NULL;
    int rc = FL->open(&sink, tu_sink_args(t, "file", path, mode ? "mode" : NULL, mode));
    CHECK_MSG(rc == 0, "open file:%s: %d (%s)", path, rc, t->err);
    return sink;
}

static off_t file_size(const char *path)
{
    struct stat st;
    CHECK_OK(stat(path, &st));
    return st.st_size;
}

/* Created at open (0644 under umask 022), reported by endpoint(); each
 * dial() gives a new descriptor that the writer may close, and the stream
 * continues across them; close() leaves the file. */
static void file_created_and_written(void)
{
    umask(022);
    const char *path = check_path("out.eventlog");
    struct tu_args t;
    void *sink = open_file(&t, path, NULL);
    CHECK(tu_exists(path));
    CHECK_INT(tu_file_mode(path), ==, 0644);
    char ep[1100], want[1100];
    snprintf(want, sizeof want, "file:%s", path);
    CHECK_INT(FL->endpoint(sink, ep, sizeof ep), ==, (int)strlen(want));
    CHECK_STR(ep, want);

    int fd1 = -1, fd2 = -1;
    CHECK_OK(FL->dial(sink, &fd1));
    CHECK(tu_is_nonblock_cloexec(fd1));
    CHECK_OK(elsi_write_all(fd1, "hello ", 6));
    close(fd1);                         /* the writer closes its copy */
    CHECK_OK(FL->dial(sink, &fd2));
    CHECK_OK(elsi_write_all(fd2, "world", 5));
    close(fd2);
    FL->close(sink);

    char *content = tu_read_file(path);
    CHECK_STR(content, "hello world");
    free(content);
}

/* An existing file is truncated at open (before anything is dialled) and
 * keeps its mode. */
static void file_truncated(void)
{
    const char *path = check_path("out.eventlog");
    CHECK_OK(tu_write_file(path, "an old eventlog"));
    CHECK_OK(chmod(path, 0600));
    struct tu_args t;
    void *sink = open_file(&t, path, NULL);
    CHECK_INT(file_size(path), ==, 0);
    CHECK_INT(tu_file_mode(path), ==, 0600);
    FL->close(sink);
    CHECK_INT(file_size(path), ==, 0);
}

/* mode= is the creation mode, and the umask applies to it as for any file
 * created with open(2). */
static void file_mode_option(void)
{
    umask(022);
    const char *p1 = check_path("a");
    struct tu_args t1;
    void *s1 = open_file(&t1, p1, "0600");
    CHECK_INT(tu_file_mode(p1), ==, 0600);
    FL->close(s1);

    const char *p2 = check_path("b");
    struct tu_args t2;
    void *s2 = open_file(&t2, p2, "0666");
    CHECK_INT(tu_file_mode(p2), ==, 0644);
    FL->close(s2);

    umask(0);
    const char *p5 = check_path("e");
    struct tu_args t5;
    void *s5 = open_file(&t5, p5, NULL);
    CHECK_INT(tu_file_mode(p5), ==, 0644);      /* the default itself */
    FL->close(s5);

    umask(077);
    const char *p3 = check_path("c");
    struct tu_args t3;
    void *s3 = open_file(&t3, p3, NULL);
    CHECK_INT(tu_file_mode(p3), ==, 0600);
    FL->close(s3);

    const char *p4 = check_path("d");
    void *s4 = NULL;
    CHECK_INT(FL->open(&s4, tu_sink_args(&t1, "file", p4, "mode", "u+rw")), ==,
              ELS_EINVAL);
    CHECK_CONTAINS(t1.err, "mode=u+rw");
    CHECK(!tu_exists(p4));
}

static void file_eacces_body(const char *dir)
{
    CHECK_OK(chmod(dir, 0500));
    char path[1100];
    snprintf(path, sizeof path, "%s/out.eventlog", dir);
    struct tu_args t;
    void *sink = NULL;
    CHECK_INT(FL->open(&sink, tu_sink_args(&t, "file", path, NULL, NULL)), ==,
              -EACCES);
    CHECK_CONTAINS(t.err, path);
    CHECK_CONTAINS(t.err, strerror(EACCES));
    CHECK(!tu_exists(path));
}

/* A directory we may not write to fails at open, naming the path and the
 * reason.  (As root this runs as uid 65534.) */
static void file_unwritable_directory(void)
{
    int rc = tu_run_unprivileged("locked", file_eacces_body);
    CHECK(rc == 0 || rc == TU_SKIPPED);

    const char *missing = check_path("no/such/dir/out.eventlog");
    struct tu_args t;
    void *sink = NULL;
    CHECK_INT(FL->open(&sink, tu_sink_args(&t, "file", missing, NULL, NULL)), ==,
              -ENOENT);
    CHECK_CONTAINS(t.err, missing);
}

/* Only regular files (or links to them) are written: a directory, FIFO,
 * socket or device is refused, without blocking and without change. */
static void file_non_regular_refused(void)
{
    struct tu_args t;
    void *sink = NULL;
    CHECK_INT(FL->open(&sink, tu_sink_args(&t, "file", check_dir, NULL, NULL)),
              ==, ELS_EEXIST);
    CHECK_CONTAINS(t.err, check_dir);
    CHECK_CONTAINS(t.err, "directory");

    const char *fifo = check_path("fifo");
    CHECK_OK(mkfifo(fifo, 0600));
    CHECK_INT(FL->open(&sink, tu_sink_args(&t, "file", fifo, NULL, NULL)), ==,
              ELS_EEXIST);
    CHECK_CONTAINS(t.err, "FIFO");

    const char *sock = check_path("sock");
    int s = tu_bind_unix(sock, true);
    CHECK_INT(s, >=, 0);
    CHECK_INT(FL->open(&sink, tu_sink_args(&t, "file", sock, NULL, NULL)), ==,
              ELS_EEXIST);
    CHECK_CONTAINS(t.err, "socket");
    close(s);

    CHECK_INT(FL->open(&sink, tu_sink_args(&t, "file", "/dev/null", NULL, NULL)),
              ==, ELS_EEXIST);
    CHECK_CONTAINS(t.err, "device");

    CHECK_INT(FL->open(&sink, tu_sink_args(&t, "file", "", NULL, NULL)), ==,
              ELS_EINVAL);
    CHECK_CONTAINS(t.err, "spec \"file:\": the file path is empty");
}

/* A symbolic link to a regular file is followed, as the RTS's own file
 * writer would. */
static void file_symlink_followed(void)
{
    const char *real = check_path("real");
    const char *link = check_path("link");
    CHECK_OK(tu_write_file(real, "old"));
    CHECK_OK(symlink(real, link));
    struct tu_args t;
    void *sink = open_file(&t, link, NULL);
    int fd = -1;
    CHECK_OK(FL->dial(sink, &fd));
    CHECK_OK(elsi_write_all(fd, "new", 3));
    close(fd);
    FL->close(sink);
    char *content = tu_read_file(real);
    CHECK_STR(content, "new");
    free(content);
}

/* Write text through a fresh dial() and close the sink. */
static void write_and_close(void *sink, const char *text)
{
    int fd = -1;
    CHECK_OK(FL->dial(sink, &fd));
    CHECK_OK(elsi_write_all(fd, text, strlen(text)));
    close(fd);
    FL->close(sink);
}

static void check_content(const char *path, const char *want)
{
    char *content = tu_read_file(path);
    CHECK_MSG(content != NULL, "%s: cannot read it", path);
    CHECK_STR(content, want);
    free(content);
}

static void check_endpoint(void *sink, const char *path)
{
    char ep[1100], want[1100];
    snprintf(want, sizeof want, "file:%s", path);
    CHECK_INT(FL->endpoint(sink, ep, sizeof ep), ==, (int)strlen(want));
    CHECK_STR(ep, want);
}

/* Every runtime restart opens the sink again: the earlier streams stay,
 * each later one goes to the next free PATH.N, reported by endpoint(). */
static void file_restart_keeps_earlier_streams(void)
{
    char path[1024], p1[1100], p2[1100];
    snprintf(path, sizeof path, "%s", check_path("out.eventlog"));
    snprintf(p1, sizeof p1, "%s.1", path);
    snprintf(p2, sizeof p2, "%s.2", path);
    tu_log_capture();
    struct tu_args t;
    void *sink = open_file(&t, path, NULL);
    check_endpoint(sink, path);
    write_and_close(sink, "first stream");

    sink = open_file(&t, path, NULL);
    check_endpoint(sink, p1);
    CHECK(tu_log_contains("holds an earlier stream of this program; this one "
                          "goes to"));
    check_content(path, "first stream");
    write_and_close(sink, "second stream");

    sink = open_file(&t, path, NULL);
    check_endpoint(sink, p2);
    write_and_close(sink, "third stream");
    check_content(path, "first stream");
    check_content(p1, "second stream");
    check_content(p2, "third stream");

    /* Reached through another name (a link) it is still the same file. */
    const char *link = check_path("link");
    CHECK_OK(symlink(path, link));
    sink = open_file(&t, link, NULL);
    write_and_close(sink, "fourth");
    check_content(path, "first stream");
}

/* A numbered name that exists (a stream from an earlier run, a link
 * someone planted) is skipped, never opened. */
static void file_numbered_names_never_clobbered(void)
{
    char path[1024], p1[1100], p2[1100], p3[1100];
    snprintf(path, sizeof path, "%s", check_path("out.eventlog"));
    snprintf(p1, sizeof p1, "%s.1", path);
    snprintf(p2, sizeof p2, "%s.2", path);
    snprintf(p3, sizeof p3, "%s.3", path);
    const char *victim = check_path("victim");
    CHECK_OK(tu_write_file(p1, "an earlier run"));
    CHECK_OK(tu_write_file(victim, "precious"));
    CHECK_OK(symlink(victim, p2));
    tu_log_capture();
    struct tu_args t;
    void *sink = open_file(&t, path, NULL);
    write_and_close(sink, "first");
    sink = open_file(&t, path, NULL);
    check_endpoint(sink, p3);
    write_and_close(sink, "second");
    check_content(p1, "an earlier run");
    check_content(victim, "precious");
    check_content(p3, "second");
}

/* A forked child that opens the same path (forkProcess restarts the
 * eventlog in the child) must not truncate the parent's stream. */
static void file_forked_child_keeps_parents_file(void)
{
    char path[1024], p1[1100];
    snprintf(path, sizeof path, "%s", check_path("out.eventlog"));
    snprintf(p1, sizeof p1, "%s.1", path);
    /* Warnings only: the child's INFO line would make this case depend on
     * the log's own fork handling, which is not what it tests. */
    els_set_log_hook(tu_log_hook_, NULL, ELS_LOG_WARN);
    struct tu_args t;
    void *sink = open_file(&t, path, NULL);
    int fd = -1;
    CHECK_OK(FL->dial(sink, &fd));
    CHECK_OK(elsi_write_all(fd, "parent ", 7));
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        struct tu_args tc;
        void *child = NULL;
        if (FL->open(&child, tu_sink_args(&tc, "file", path, NULL, NULL)) != 0)
            _exit(1);
        write_and_close(child, "child");
        _exit(0);
    }
    int status;
    CHECK_INT(waitpid(pid, &status, 0), ==, pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_OK(elsi_write_all(fd, "stream", 6));
    close(fd);
    FL->close(sink);
    check_content(path, "parent stream");
    check_content(p1, "child");
}

static const struct check_case cases[] = {
    CHECK_CASE(file_restart_keeps_earlier_streams),
    CHECK_CASE(file_numbered_names_never_clobbered),
    CHECK_CASE(file_forked_child_keeps_parents_file),
    CHECK_CASE(file_created_and_written),
    CHECK_CASE(file_truncated),
    CHECK_CASE(file_mode_option),
    CHECK_CASE(file_unwritable_directory),
    CHECK_CASE(file_non_regular_refused),
    CHECK_CASE(file_symlink_followed),
};

CHECK_MAIN(cases)
