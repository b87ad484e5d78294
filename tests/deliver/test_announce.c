/*
 * test_announce.c: the discovery entry a writer leaves for `eventlog-sink
 * ps` (lib/deliver/announce.c, Note [Announce files]) and its reader
 * (tools/discover.c): the file appears at open with mode 0600 in a 0700
 * directory, lists the endpoint and control socket, and goes at close;
 * announce=0 writes nothing; a directory that is a symbolic link or open
 * to others is refused by both sides; entries of dead processes and of
 * reused pids are skipped and removed while live ones stay; a forked
 * child never removes its parent's entry; pid:/name: resolve, and a name
 * two programs share is refused with both pids.
 */
#include "check.h"
#include "testutil.h"

#include <fcntl.h>

#include "deliver/announce.h"
#include "discover.h"
#include "eventlog-sink.h"

static const char *entry_path(long pid)
{
    static char buf[1024];
    snprintf(buf, sizeof buf, "%s/eventlog-sink/%ld.announce", check_dir, pid);
    return buf;
}

static struct els_writer *open_spec(const char *fmt, const char *sock)
{
    char spec[1200], err[512];
    snprintf(spec, sizeof spec, fmt, sock);
    struct els_writer *w = NULL;
    int r = els_writer_open(spec, &w, err, sizeof err);
    CHECK_MSG(r == 0, "open %s: %s", spec, err);
    return w;
}

static void use_case_dir(void)
{
    setenv("XDG_RUNTIME_DIR", check_dir, 1);
}

static void announce_file_is_private_and_goes_at_close(void)
{
    use_case_dir();
    const char *sock = check_path("a.sock");
    struct els_writer *w = open_spec("unix:%s?control=1", sock);
    struct stat st;
    CHECK_INT(lstat(entry_path(getpid()), &st), ==, 0);
    CHECK_MSG(S_ISREG(st.st_mode), "not a regular file");
    CHECK_INT(st.st_mode & 0777, ==, 0600);
    CHECK_INT(st.st_uid, ==, geteuid());
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/eventlog-sink", check_dir);
    CHECK_INT(lstat(dir, &st), ==, 0);
    CHECK_INT(st.st_mode & 0777, ==, 0700);

    struct disc_list l;
    char err[512];
    CHECK_INT(disc_scan(&l, err, sizeof err), ==, 0);
    CHECK_INT(l.n, ==, 1);
    CHECK_INT(l.v[0].pid, ==, getpid());
    CHECK_CONTAINS(l.v[0].name, "test_announce");
    CHECK_INT(l.v[0].n_sinks, ==, 1);
    char ep[1100];
    snprintf(ep, sizeof ep, "unix:%s", sock);
    CHECK_STR(l.v[0].sinks[0].endpoint, ep);
    CHECK_STR(l.v[0].sinks[0].control, ep);
    CHECK_MSG(l.v[0].argc >= 1, "no arguments");
    disc_list_free(&l);

    char pidref[32], *spec = NULL;
    snprintf(pidref, sizeof pidref, "pid:%ld", (long)getpid());
    CHECK_INT(disc_resolve(pidref, true, &spec, err, sizeof err), ==, 0);
    CHECK_STR(spec, ep);
    free(spec);

    CHECK_OK(els_writer_close(w));
    CHECK_INT(lstat(entry_path(getpid()), &st), ==, -1);
    CHECK_INT(errno, ==, ENOENT);
}

static void announce_off_writes_nothing(void)
{
    use_case_dir();
    struct els_writer *w = open_spec("unix:%s?announce=0", check_path("b.sock"));
    struct stat st;
    CHECK_INT(lstat(entry_path(getpid()), &st), ==, -1);
    CHECK_OK(els_writer_close(w));
    char err[256];
    struct els_writer *bad = NULL;
    CHECK_INT(els_writer_open("unix:/tmp/x.sock?announce=2", &bad, err,
                              sizeof err), ==, ELS_EINVAL);
    CHECK_CONTAINS(err, "announce=2: expected 0 or 1");
}

static void symlinked_directory_is_refused(void)
{
    use_case_dir();
    tu_log_capture();
    const char *real = check_path("real");
    CHECK_INT(mkdir(real, 0700), ==, 0);
    char link[1024];
    snprintf(link, sizeof link, "%s/eventlog-sink", check_dir);
    CHECK_INT(symlink(real, link), ==, 0);
    struct els_writer *w = open_spec("unix:%s", check_path("c.sock"));
    char in_real[1100];
    snprintf(in_real, sizeof in_real, "%s/%ld.announce", real, (long)getpid());
    struct stat st;
    CHECK_INT(lstat(in_real, &st), ==, -1);
    CHECK_MSG(tu_log_contains("symbolic link"), "no warning about the link");
    struct disc_list l;
    char err[512];
    CHECK_INT(disc_scan(&l, err, sizeof err), <, 0);
    CHECK_OK(els_writer_close(w));
}

static void loose_directory_is_refused(void)
{
    use_case_dir();
    tu_log_capture();
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/eventlog-sink", check_dir);
    CHECK_INT(mkdir(dir, 0700), ==, 0);
    CHECK_INT(chmod(dir, 0755), ==, 0);
    struct els_writer *w = open_spec("unix:%s", check_path("d.sock"));
    struct stat st;
    CHECK_INT(lstat(entry_path(getpid()), &st), ==, -1);
    CHECK_MSG(tu_log_contains("chmod 700"), "no warning about the mode");
    CHECK_OK(els_writer_close(w));
}

/* An announce file for pid with start time start and name. */
static void fake_entry(long pid, uint64_t start, const char *name)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/eventlog-sink", check_dir);
    (void)mkdir(dir, 0700);
    FILE *f = fopen(entry_path(pid), "w");
    CHECK_MSG(f != NULL, "cannot write the fake entry");
    fprintf(f, "%s\npid %ld\nstart %" PRIu64 "\nname %s\narg %s\n"
            "sink unix:/nowhere/%ld.sock\nendpoint unix:/nowhere/%ld.sock\n"
            "control -\n", ELSI_ANNOUNCE_MAGIC, pid, start, name, name, pid,
            pid);
    fclose(f);
    chmod(entry_path(pid), 0600);
}

static void dead_and_reused_entries_are_removed(void)
{
    use_case_dir();
    /* Dead: a child that has exited and been reaped. */
    pid_t dead = fork();
    if (dead == 0)
        _exit(0);
    uint64_t dead_start = 0;
    CHECK_OK(elsi_proc_start_time(dead, &dead_start));
    waitpid(dead, NULL, 0);
    /* Reused: a live process whose start time is not the file's. */
    pid_t live = fork();
    if (live == 0) {
        pause();
        _exit(0);
    }
    uint64_t live_start = 0, me_start = 0;
    CHECK_OK(elsi_proc_start_time(live, &live_start));
    CHECK_OK(elsi_proc_start_time(getpid(), &me_start));
    fake_entry(dead, dead_start, "dead");
    fake_entry(live, live_start + 1, "reused");
    fake_entry(getpid(), me_start, "alive");

    struct disc_list l;
    char err[512];
    CHECK_INT(disc_scan(&l, err, sizeof err), ==, 0);
    CHECK_INT(l.n, ==, 1);
    CHECK_INT(l.v[0].pid, ==, getpid());
    CHECK_STR(l.v[0].name, "alive");
    disc_list_free(&l);
    struct stat st;
    CHECK_INT(lstat(entry_path(dead), &st), ==, -1);
    CHECK_INT(lstat(entry_path(live), &st), ==, -1);
    CHECK_INT(lstat(entry_path(getpid()), &st), ==, 0);
    char *spec = NULL;
    CHECK_INT(disc_resolve("name:reused", false, &spec, err, sizeof err), ==,
              -ENOENT);
    kill(live, SIGKILL);
    waitpid(live, NULL, 0);
}

static void shared_name_is_ambiguous(void)
{
    use_case_dir();
    uint64_t a = 0, b = 0;
    CHECK_OK(elsi_proc_start_time(getpid(), &a));
    CHECK_OK(elsi_proc_start_time(getppid(), &b));
    fake_entry(getpid(), a, "twin");
    fake_entry(getppid(), b, "twin");
    char err[512], *spec = NULL, pids[64];
    CHECK_INT(disc_resolve("name:twin", false, &spec, err, sizeof err), ==,
              -EEXIST);
    CHECK_CONTAINS(err, "ambiguous");
    snprintf(pids, sizeof pids, " %ld", (long)getpid());
    CHECK_CONTAINS(err, pids);
    snprintf(pids, sizeof pids, " %ld", (long)getppid());
    CHECK_CONTAINS(err, pids);
    CHECK_INT(disc_resolve("name:nobody", false, &spec, err, sizeof err), ==,
              -ENOENT);
    CHECK_INT(disc_resolve("unix:/x", false, &spec, err, sizeof err), ==, 0);
    CHECK_STR(spec, "unix:/x");
    free(spec);
}

static void forked_child_leaves_parent_entry(void)
{
    use_case_dir();
    struct els_writer *w = open_spec("unix:%s", check_path("e.sock"));
    pid_t child = fork();
    if (child == 0) {
        /* The inherited writer is the parent's: closing it must not
         * touch the parent's entry, nor write one for the child. */
        els_writer_close(w);
        _exit(0);
    }
    int status;
    waitpid(child, &status, 0);
    CHECK_INT(WEXITSTATUS(status), ==, 0);
    struct stat st;
    CHECK_INT(lstat(entry_path(getpid()), &st), ==, 0);
    CHECK_INT(lstat(entry_path(child), &st), ==, -1);
    CHECK_OK(els_writer_close(w));
    CHECK_INT(lstat(entry_path(getpid()), &st), ==, -1);
}

static const struct check_case cases[] = {
    CHECK_CASE(announce_file_is_private_and_goes_at_close),
    CHECK_CASE(announce_off_writes_nothing),
    CHECK_CASE(symlinked_directory_is_refused),
    CHECK_CASE(loose_directory_is_refused),
    CHECK_CASE(dead_and_reused_entries_are_removed),
    CHECK_CASE(shared_name_is_ambiguous),
    CHECK_CASE(forked_child_leaves_parent_entry),
};

CHECK_MAIN(cases)
