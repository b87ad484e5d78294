/*
 * test_announce.c: the discovery entry a writer leaves for `eventlog-sink
 * ps` (lib/writer/announce.c, Note [Writing the entry]), the rules both
 * ends share (lib/discovery/discovery.c, Note [Announce files], Note
 * [Proof of life]) and the reader (tools/discover.c): the file appears
 * at open with mode 0600 in a 0700 directory, lists the endpoint and
 * control socket, with their paths absolute even when the spec's were
 * relative, and goes at close; announce=0 writes nothing; a directory
 * that is a symbolic link, another user's or open to others is refused
 * by both sides; an entry of another user's, writable by others, a
 * symbolic link, of another format, naming a relative path or no socket
 * that proves it is left out with a note saying why; entries of dead
 * processes, of reused pids and of processes that exec'd (a real
 * execve()) are skipped and removed while live ones stay; a forked
 * child never removes its parent's entry; pid:/name: resolve, and a
 * name two programs share is refused with both pids.  The owner rules
 * are also checked on their own (els_discovery_judge()), so that they
 * are tested without root too.
 */
#include "check.h"
#include "testutil.h"

#include <fcntl.h>
#include <limits.h>

#include "writer/announce.h"
#include "discover.h"
#include "eventlog-sink/discovery.h"
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

static const char *case_dir_path(void)
{
    static char dir[1024];
    snprintf(dir, sizeof dir, "%s/eventlog-sink", check_dir);
    return dir;
}

/* An announce file for pid with start time start, name and the sink
 * lines sinks (a file: sink that proves nothing, when NULL), mode 0600,
 * as the library would write it. */
static void fake_entry_sinks(long pid, uint64_t start, const char *name,
                             const char *sinks)
{
    (void)mkdir(case_dir_path(), 0700);
    FILE *f = fopen(entry_path(pid), "w");
    CHECK_MSG(f != NULL, "cannot write the fake entry");
    fprintf(f, "%s\npid %ld\nstart %" PRIu64 "\nname %s\narg %s\n",
            ELS_DISCOVERY_MAGIC, pid, start, name, name);
    if (sinks != NULL)
        fputs(sinks, f);
    else
        fprintf(f, "sink file:/nowhere/%ld.eventlog\n"
                "endpoint file:/nowhere/%ld.eventlog\ncontrol -\n", pid, pid);
    fclose(f);
    CHECK_OK(chmod(entry_path(pid), 0600));
}

static void fake_entry(long pid, uint64_t start, const char *name)
{
    fake_entry_sinks(pid, start, name, NULL);
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
    /* The reader refuses it too, whatever it holds: group bits alone,
     * other bits alone. */
    static const mode_t loose[] = { 0750, 0705, 0701, 0710 };
    for (size_t i = 0; i < sizeof loose / sizeof loose[0]; i++) {
        CHECK_OK(chmod(dir, 0700));
        fake_entry(getpid(), 0, "alive");
        CHECK_OK(chmod(dir, loose[i]));
        struct disc_list l;
        char err[512] = "";
        CHECK_INT(disc_scan(&l, err, sizeof err), ==, -EACCES);
        CHECK_CONTAINS(err, "chmod 700");
        CHECK_CONTAINS(err, dir);
    }
    CHECK_OK(els_writer_close(w));
}

/* The rules on their own, with owners no test could make without root:
 * a directory or an entry of another uid is refused; a directory with
 * any group or other bit, an entry others may write. */
static void owner_and_mode_rules(void)
{
    uid_t me = geteuid(), other = me == 65534 ? 65533 : 65534;
    struct stat st = { .st_mode = S_IFDIR | 0700, .st_uid = me };
    char why[256];
    CHECK_INT(els_discovery_judge(&st, me, true, why, sizeof why), ==, 0);
    st.st_uid = other;
    CHECK_INT(els_discovery_judge(&st, me, true, why, sizeof why), ==, -EPERM);
    CHECK_CONTAINS(why, "belongs to uid");
    st.st_uid = me;
    for (mode_t bit = 01; bit <= 040; bit <<= 1) {
        st.st_mode = S_IFDIR | 0700 | bit;
        CHECK_INT(els_discovery_judge(&st, me, true, why, sizeof why), ==,
                  -EACCES);
        CHECK_CONTAINS(why, "chmod 700");
    }
    st.st_mode = S_IFREG | 0600;
    CHECK_INT(els_discovery_judge(&st, me, true, why, sizeof why), ==,
              -ENOTDIR);

    st = (struct stat){ .st_mode = S_IFREG | 0600, .st_uid = me };
    CHECK_INT(els_discovery_judge(&st, me, false, why, sizeof why), ==, 0);
    st.st_mode = S_IFREG | 0644;   /* others may read what is ours */
    CHECK_INT(els_discovery_judge(&st, me, false, why, sizeof why), ==, 0);
    st.st_uid = other;
    st.st_mode = S_IFREG | 0600;
    CHECK_INT(els_discovery_judge(&st, me, false, why, sizeof why), ==, -EPERM);
    CHECK_CONTAINS(why, "belongs to uid");
    st.st_uid = me;
    static const mode_t writable[] = { 0620, 0602, 0622, 0666 };
    for (size_t i = 0; i < sizeof writable / sizeof writable[0]; i++) {
        st.st_mode = S_IFREG | writable[i];
        CHECK_INT(els_discovery_judge(&st, me, false, why, sizeof why), ==,
                  -EACCES);
        CHECK_CONTAINS(why, "others may write");
    }
    st.st_mode = S_IFLNK | 0777;
    CHECK_INT(els_discovery_judge(&st, me, false, why, sizeof why), ==,
              -EINVAL);
    /* Root's uid is a peer like any other here: only the user counts. */
    if (me != 0) {
        st = (struct stat){ .st_mode = S_IFDIR | 0700, .st_uid = 0 };
        CHECK_INT(els_discovery_judge(&st, me, true, why, sizeof why), ==,
                  -EPERM);
    }
}

/* A discovery directory of another user: refused by the writer (it
 * announces nothing, and says why) and by the reader, though its mode is
 * 0700 and it holds an entry that would be live.  (As root: root may
 * open any directory, so only the owner rule stands in the way.) */
static void foreign_directory_is_refused(void)
{
    if (geteuid() != 0)
        CHECK_SKIP_PART("another user's directory needs root (the rule "
                        "itself: owner_and_mode_rules)");
    use_case_dir();
    tu_log_capture();
    uint64_t start = 0;
    CHECK_OK(els_discovery_proc_start(getpid(), &start));
    fake_entry(getpid(), start, "alive");
    CHECK_OK(chown(case_dir_path(), 65534, 65534));
    CHECK_OK(chown(entry_path(getpid()), 65534, 65534));
    struct disc_list l;
    char err[512] = "";
    CHECK_INT(disc_scan(&l, err, sizeof err), ==, -EPERM);
    CHECK_CONTAINS(err, "belongs to uid 65534");
    char *spec = NULL;
    char pidref[32];
    snprintf(pidref, sizeof pidref, "pid:%ld", (long)getpid());
    CHECK_INT(disc_resolve(pidref, false, &spec, err, sizeof err), ==, -EPERM);
    CHECK_OK(unlink(entry_path(getpid())));
    struct els_writer *w = open_spec("unix:%s", check_path("f.sock"));
    struct stat st;
    CHECK_INT(lstat(entry_path(getpid()), &st), ==, -1);
    CHECK_MSG(tu_log_contains("belongs to uid 65534, not to this user"),
              "no warning about the directory's owner");
    CHECK_OK(els_writer_close(w));
}

static void dead_and_reused_entries_are_removed(void)
{
    use_case_dir();
    /* Dead: a child that has exited and been reaped. */
    pid_t dead = fork();
    if (dead == 0)
        _exit(0);
    uint64_t dead_start = 0;
    CHECK_OK(els_discovery_proc_start(dead, &dead_start));
    waitpid(dead, NULL, 0);
    /* Reused: a live process whose start time is not the file's. */
    pid_t live = fork();
    if (live == 0) {
        pause();
        _exit(0);
    }
    uint64_t live_start = 0, me_start = 0;
    CHECK_OK(els_discovery_proc_start(live, &live_start));
    CHECK_OK(els_discovery_proc_start(getpid(), &me_start));
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

/* A socket listening at check_path(name), held by this process (the
 * case ends with it open): its identity, as /proc shows it. */
static uint64_t held_socket(const char *name)
{
    int fd = tu_bind_unix(check_path(name), true);
    CHECK_INT(fd, >=, 0);
    uint64_t id = els_discovery_socket_id(fd);
    CHECK_MSG(id != 0, "no identity for a socket");
    return id;
}

/* The scan's list and notes: how many entries, and the notes in one
 * string (for CHECK_CONTAINS). */
static size_t scan(char *notes, size_t len)
{
    struct disc_list l;
    char err[512] = "";
    CHECK_MSG(disc_scan(&l, err, sizeof err) == 0, "disc_scan: %s", err);
    size_t n = l.n, off = 0;
    notes[0] = '\0';
    for (size_t i = 0; i < l.n_notes && off < len; i++)
        off += (size_t)snprintf(notes + off, len - off, "%s\n",
                                l.notes[i].text);
    disc_list_free(&l);
    return n;
}

/* Entries a reader must not trust are left out with a note naming the
 * entry and saying why, and stay where they are (they are not stale);
 * pid: says why too.  Each case starts from an entry that is listed. */
static void untrusted_entries_are_left_out(void)
{
    use_case_dir();
    uint64_t start = 0;
    CHECK_OK(els_discovery_proc_start(getpid(), &start));
    uint64_t id = held_socket("l.sock");
    char ok[2048], lines[2048], notes[4096], err[1024], pidref[32], *spec;
    snprintf(pidref, sizeof pidref, "pid:%ld", (long)getpid());
    snprintf(ok, sizeof ok, "sink unix:%s\nendpoint unix:%s\nsocket %" PRIu64
             "\ncontrol unix:%s\n", check_path("l.sock"), check_path("l.sock"),
             id, check_path("l.sock"));
    const char *entry = entry_path(getpid());
    struct stat st;

    fake_entry_sinks(getpid(), start, "alive", ok);
    CHECK_INT(scan(notes, sizeof notes), ==, 1);
    CHECK_STR(notes, "");

    /* Writable by others. */
    CHECK_OK(chmod(entry, 0622));
    CHECK_INT(scan(notes, sizeof notes), ==, 0);
    CHECK_CONTAINS(notes, entry);
    CHECK_CONTAINS(notes, "others may write it");
    CHECK_INT(lstat(entry, &st), ==, 0);
    CHECK_INT(disc_resolve(pidref, false, &spec, err, sizeof err), ==, -ENOENT);
    CHECK_CONTAINS(err, "others may write it");
    CHECK_OK(chmod(entry, 0600));
    CHECK_INT(scan(notes, sizeof notes), ==, 1);

    /* Another user's (only root can make one). */
    if (geteuid() == 0) {
        CHECK_OK(chown(entry, 65534, 65534));
        CHECK_INT(scan(notes, sizeof notes), ==, 0);
        CHECK_CONTAINS(notes, entry);
        CHECK_CONTAINS(notes, "belongs to uid 65534");
        CHECK_INT(lstat(entry, &st), ==, 0);
        CHECK_INT(disc_resolve(pidref, false, &spec, err, sizeof err), ==,
                  -ENOENT);
        CHECK_CONTAINS(err, "belongs to uid 65534");
        CHECK_OK(chown(entry, geteuid(), getegid()));
        CHECK_INT(scan(notes, sizeof notes), ==, 1);
    } else {
        printf("SKIPPED PART: %s: an entry of another user needs root (the "
               "rule itself: owner_and_mode_rules)\n", check_case_name);
    }

    /* A symbolic link to an entry. */
    char real[1100];
    snprintf(real, sizeof real, "%s/elsewhere", case_dir_path());
    CHECK_OK(rename(entry, real));
    CHECK_OK(symlink(real, entry));
    CHECK_INT(scan(notes, sizeof notes), ==, 0);
    CHECK_CONTAINS(notes, "symbolic link");
    CHECK_OK(unlink(entry));
    CHECK_OK(rename(real, entry));
    CHECK_INT(scan(notes, sizeof notes), ==, 1);

    /* Relative paths, as an endpoint or as the control socket. */
    snprintf(lines, sizeof lines, "sink unix:l.sock\nendpoint unix:l.sock\n"
             "socket %" PRIu64 "\ncontrol -\n", id);
    fake_entry_sinks(getpid(), start, "alive", lines);
    CHECK_INT(scan(notes, sizeof notes), ==, 0);
    CHECK_CONTAINS(notes, entry);
    CHECK_CONTAINS(notes, "endpoint \"unix:l.sock\" is a relative path");
    CHECK_INT(lstat(entry, &st), ==, 0);
    CHECK_INT(disc_resolve(pidref, false, &spec, err, sizeof err), ==, -ENOENT);
    CHECK_CONTAINS(err, entry);
    CHECK_CONTAINS(err, "relative path");
    snprintf(lines, sizeof lines, "sink ring:%s\nendpoint ring:%s\n"
             "control unix:l.sock\ncontrol-socket %" PRIu64 "\n",
             check_path("r"), check_path("r"), id);
    fake_entry_sinks(getpid(), start, "alive", lines);
    CHECK_INT(scan(notes, sizeof notes), ==, 0);
    CHECK_CONTAINS(notes, "control \"unix:l.sock\" is a relative path");
    CHECK_INT(disc_resolve(pidref, true, &spec, err, sizeof err), ==, -ENOENT);
    CHECK_CONTAINS(err, "relative path");

    /* No socket named: nothing proves the endpoint is the program's. */
    snprintf(lines, sizeof lines, "sink unix:%s\nendpoint unix:%s\n"
             "control -\n", check_path("l.sock"), check_path("l.sock"));
    fake_entry_sinks(getpid(), start, "alive", lines);
    CHECK_INT(scan(notes, sizeof notes), ==, 0);
    CHECK_CONTAINS(notes, "names no socket that proves endpoint");
    snprintf(lines, sizeof lines, "sink tcp:127.0.0.1:9\n"
             "endpoint tcp:127.0.0.1:9\ncontrol -\n");
    fake_entry_sinks(getpid(), start, "alive", lines);
    CHECK_INT(scan(notes, sizeof notes), ==, 0);
    CHECK_CONTAINS(notes, "names no socket that proves endpoint");
    snprintf(lines, sizeof lines, "sink ring:%s\nendpoint ring:%s\n"
             "control unix:%s\n", check_path("r"), check_path("r"),
             check_path("l.sock"));
    fake_entry_sinks(getpid(), start, "alive", lines);
    CHECK_INT(scan(notes, sizeof notes), ==, 0);
    CHECK_CONTAINS(notes, "names no socket that proves control");

    /* The format of another version (an older library's proves nothing). */
    FILE *f = fopen(entry, "w");
    CHECK(f != NULL);
    fprintf(f, "eventlog-sink-announce 1\npid %ld\nstart %" PRIu64 "\n%s",
            (long)getpid(), start, ok);
    fclose(f);
    CHECK_INT(scan(notes, sizeof notes), ==, 0);
    CHECK_CONTAINS(notes, "a library of another version wrote it");
    CHECK_INT(lstat(entry, &st), ==, 0);

    fake_entry_sinks(getpid(), start, "alive", ok);
    CHECK_INT(scan(notes, sizeof notes), ==, 1);
}

/* A socket the entry names that its process does not hold (closed, or
 * left behind by an execve()): the entry is stale, removed, and said so
 * once. */
static void entry_without_its_socket_is_stale(void)
{
    use_case_dir();
    uint64_t start = 0;
    CHECK_OK(els_discovery_proc_start(getpid(), &start));
    int fd = tu_bind_unix(check_path("gone.sock"), true);
    CHECK_INT(fd, >=, 0);
    uint64_t gone = els_discovery_socket_id(fd);
    uint64_t held = held_socket("held.sock");
    char lines[2048], notes[4096];
    snprintf(lines, sizeof lines, "sink unix:%s\nendpoint unix:%s\n"
             "socket %" PRIu64 "\ncontrol -\nsink ring:%s\nendpoint ring:%s\n"
             "control unix:%s\ncontrol-socket %" PRIu64 "\n",
             check_path("held.sock"), check_path("held.sock"), held,
             check_path("r"), check_path("r"), check_path("gone.sock"), gone);
    fake_entry_sinks(getpid(), start, "alive", lines);
    CHECK_INT(scan(notes, sizeof notes), ==, 1);    /* both held */
    close(fd);
    CHECK_INT(scan(notes, sizeof notes), ==, 0);
    CHECK_CONTAINS(notes, "no longer holds the socket of unix:");
    CHECK_CONTAINS(notes, "gone.sock");
    struct stat st;
    CHECK_INT(lstat(entry_path(getpid()), &st), ==, -1);
    CHECK_INT(scan(notes, sizeof notes), ==, 0);
    CHECK_STR(notes, "");
}

/* unix: and control=unix: paths given relative are announced absolute,
 * as they were when bound, and the reader hands them out so from any
 * directory; the socket files go at close even after a chdir(). */
static void relative_paths_are_announced_absolute(void)
{
    use_case_dir();
    const char *sub = check_path("sub");
    CHECK_OK(mkdir(sub, 0700));
    CHECK_OK(chdir(sub));
    struct els_writer *w = open_spec("unix:%s?control=1", "./rel.sock");
    struct els_writer *r = open_spec("ring:%s?size=3M&at-exit=0&"
                                     "control=unix:rec.ctl",
                                     check_path("sub/rec.eventlog"));
    CHECK_OK(chdir("/"));
    char sock[1100], ctl[1100], got[PATH_MAX + 64];
    snprintf(sock, sizeof sock, "unix:%s/rel.sock", sub);
    snprintf(ctl, sizeof ctl, "unix:%s/rec.ctl", sub);
    CHECK_INT(els_writer_endpoint(w, got, sizeof got), ==, (int)strlen(sock));
    CHECK_STR(got, sock);

    struct disc_list l;
    char err[512];
    CHECK_INT(disc_scan(&l, err, sizeof err), ==, 0);
    CHECK_INT(l.n, ==, 1);
    CHECK_INT(l.v[0].n_sinks, ==, 2);
    CHECK_STR(l.v[0].sinks[0].endpoint, sock);
    CHECK_STR(l.v[0].sinks[0].control, sock);
    CHECK_STR(l.v[0].sinks[1].control, ctl);
    CHECK_INT(l.n_notes, ==, 0);
    disc_list_free(&l);
    char pidref[32], *spec = NULL;
    snprintf(pidref, sizeof pidref, "pid:%ld", (long)getpid());
    CHECK_INT(disc_resolve(pidref, false, &spec, err, sizeof err), ==, 0);
    CHECK_STR(spec, sock);
    free(spec);

    CHECK_OK(els_writer_close(r));
    CHECK_OK(els_writer_close(w));
    CHECK_MSG(!tu_exists(sock + 5), "%s outlived its writer", sock + 5);
    CHECK_MSG(!tu_exists(ctl + 5), "%s outlived its writer", ctl + 5);
}

/* Does pid run a program whose path holds name? */
static bool runs(pid_t pid, const char *name)
{
    char exe[PATH_MAX], proc_exe[64];
    snprintf(proc_exe, sizeof proc_exe, "/proc/%ld/exe", (long)pid);
    ssize_t k = readlink(proc_exe, exe, sizeof exe - 1);
    if (k <= 0)
        return false;
    exe[k] = '\0';
    return strstr(exe, name) != NULL;
}

/* Note [Proof of life], with a real execve(): a child opens a unix: and
 * a tcp: writer (control on both), is listed while it runs them, then
 * exec's sleep(1), which keeps its pid and start time but not its
 * sockets.  Its entry is then stale (removed, with a note), even with
 * someone else listening on the freed TCP port; pid: finds nothing. */
static void exec_leaves_no_trusted_entry(void)
{
    use_case_dir();
    const char *sleep_path = access("/bin/sleep", X_OK) == 0 ? "/bin/sleep"
                                                             : "/usr/bin/sleep";
    int ready[2], go[2];
    CHECK_OK(pipe(ready));
    CHECK_OK(pipe(go));
    fflush(NULL);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        close(ready[0]);
        close(go[1]);
        char spec[1200], err[512], tcp[300];
        struct els_writer *u = NULL, *t = NULL;
        snprintf(spec, sizeof spec, "unix:%s?control=1", check_path("x.sock"));
        if (els_writer_open(spec, &u, err, sizeof err) != 0 ||
            els_writer_open("tcp:127.0.0.1:0?control=1", &t, err,
                            sizeof err) != 0 ||
            els_writer_endpoint(t, tcp, sizeof tcp) < 0)
            _exit(3);
        if (write(ready[1], tcp, strlen(tcp) + 1) < 0)
            _exit(4);
        char b;
        if (read(go[0], &b, 1) != 1)
            _exit(5);
        execl(sleep_path, "sleep", "60", (char *)NULL);
        _exit(6);
    }
    close(ready[1]);
    close(go[0]);
    char tcp[300] = "";
    CHECK_MSG(tu_read_exact(ready[0], tcp, 1, TU_WAIT_MS) == 0,
              "the child opened no writers");
    for (size_t n = 1; n < sizeof tcp - 1 && tcp[n - 1] != '\0'; n++)
        CHECK_OK(tu_read_exact(ready[0], tcp + n, 1, TU_WAIT_MS));
    close(ready[0]);

    /* Running its writers: listed, with both sinks. */
    char sock[1100], pidref[32], err[1024], notes[4096], *spec = NULL;
    snprintf(sock, sizeof sock, "unix:%s", check_path("x.sock"));
    snprintf(pidref, sizeof pidref, "pid:%ld", (long)child);
    struct disc_list l;
    CHECK_INT(disc_scan(&l, err, sizeof err), ==, 0);
    CHECK_INT(l.n, ==, 1);
    CHECK_INT(l.v[0].pid, ==, child);
    CHECK_INT(l.v[0].n_sinks, ==, 2);
    CHECK_STR(l.v[0].sinks[0].endpoint, sock);
    CHECK_STR(l.v[0].sinks[1].endpoint, tcp);
    CHECK_STR(l.v[0].sinks[1].control, tcp);
    disc_list_free(&l);

    /* exec: the same pid, start time and entry; no sockets. */
    uint64_t before = 0, after = 0;
    CHECK_OK(els_discovery_proc_start(child, &before));
    CHECK_INT(write(go[1], "g", 1), ==, 1);
    uint64_t deadline = check_now_ms() + TU_WAIT_MS;
    while (!runs(child, "sleep")) {
        CHECK_MSG(check_now_ms() < deadline, "the child did not exec %s",
                  sleep_path);
        check_sleep_ms(10);
    }
    CHECK_OK(els_discovery_proc_start(child, &after));
    CHECK_U64(after, ==, before);
    struct stat st;
    CHECK_INT(lstat(entry_path(child), &st), ==, 0);
    /* Someone else takes the port (here this process; any user could). */
    unsigned port = (unsigned)atoi(strrchr(tcp, ':') + 1);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sin = { .sin_family = AF_INET,
                               .sin_port = htons((uint16_t)port),
                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    /* The kernel names the new image (what runs() reads) a moment before
     * it closes the old one's close-on-exec descriptors: the child's
     * listener may hold the port a little longer. */
    int one = 1;
    CHECK_OK(setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ? -errno : 0);
    int brc;
    deadline = check_now_ms() + TU_WAIT_MS;
    while ((brc = bind(lfd, (struct sockaddr *)&sin, sizeof sin) < 0 ? -errno : 0) == -EADDRINUSE
           && check_now_ms() < deadline)
        check_sleep_ms(10);
    CHECK_OK(brc);
    CHECK_OK(listen(lfd, 4) < 0 ? -errno : 0);

    CHECK_INT(scan(notes, sizeof notes), ==, 0);
    char pidnote[64];
    snprintf(pidnote, sizeof pidnote, "pid %ld no longer holds the socket",
             (long)child);
    CHECK_CONTAINS(notes, pidnote);
    CHECK_INT(lstat(entry_path(child), &st), ==, -1);
    CHECK_INT(disc_resolve(pidref, false, &spec, err, sizeof err), ==, -ENOENT);
    CHECK_INT(disc_resolve(pidref, true, &spec, err, sizeof err), ==, -ENOENT);
    close(lfd);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
}

static void shared_name_is_ambiguous(void)
{
    use_case_dir();
    uint64_t a = 0, b = 0;
    CHECK_OK(els_discovery_proc_start(getpid(), &a));
    CHECK_OK(els_discovery_proc_start(getppid(), &b));
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
    CHECK_CASE(owner_and_mode_rules),
    CHECK_CASE(foreign_directory_is_refused),
    CHECK_CASE(untrusted_entries_are_left_out),
    CHECK_CASE(entry_without_its_socket_is_stale),
    CHECK_CASE(relative_paths_are_announced_absolute),
    CHECK_CASE(exec_leaves_no_trusted_entry),
    CHECK_CASE(dead_and_reused_entries_are_removed),
    CHECK_CASE(shared_name_is_ambiguous),
    CHECK_CASE(forked_child_leaves_parent_entry),
};

CHECK_MAIN(cases)
