/*
 * test_sink_race.c: the unix and fifo sinks against a neighbour who can
 * write the directory their file goes into (/tmp, a shared run directory)
 * and tries to make a root program change the mode of a file it names.
 *
 * Two ways.  Deterministic: this program is linked with -Wl,--wrap for
 * bind, mkfifo, mkfifoat, chmod, fchmodat and connect; when armed, the
 * wrappers act as the attacker at the worst moments (right after the file
 * is created, right before any mode is set) by putting a symbolic link to
 * a victim file at the sink's path, or (right after the probe of a stale
 * socket) a file of its own; a wrapper around renameat2 records the mode a
 * file has the moment it is published.  Real: a second user (uid 65534,
 * as root only) swaps symbolic links at the paths as fast as it can while
 * this process opens and closes the sinks over and over.  Either way the victim must
 * keep its owner and mode, nothing planted at the path is followed, and
 * nothing is left behind in the directory.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* setgroups */
#endif

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "check.h"
#include "testutil.h"

#include "base/fdutil.h"
#include "sinks/sinks.h"

static const struct els_sink_ops *const U = &elsi_sink_unix;
static const struct els_sink_ops *const F = &elsi_sink_fifo;

// ---------------------------------------------------------------------------
// The attacker inside: wrappers
// ---------------------------------------------------------------------------

static const char *race_target;     /* the sink's path; NULL: disarmed */
static const char *race_victim;
static unsigned race_attacks;
enum { RACE_AT_CREATE = 1, RACE_AT_MODE = 2 };
static unsigned race_when = RACE_AT_CREATE | RACE_AT_MODE;
static bool race_bind_private = true;   /* every bind() in a 0700 directory */

static void race_attack(unsigned when)
{
    if (race_target == NULL || !(race_when & when))
        return;
    (void)unlink(race_target);
    if (symlink(race_victim, race_target) == 0)
        race_attacks++;
}

int __real_bind(int fd, const struct sockaddr *sa, socklen_t len);
int __wrap_bind(int fd, const struct sockaddr *sa, socklen_t len);
int __real_mkfifo(const char *path, mode_t mode);
int __wrap_mkfifo(const char *path, mode_t mode);
int __real_mkfifoat(int dirfd, const char *path, mode_t mode);
int __wrap_mkfifoat(int dirfd, const char *path, mode_t mode);
int __real_renameat2(int olddirfd, const char *oldpath, int newdirfd,
                     const char *newpath, unsigned flags);
int __wrap_renameat2(int olddirfd, const char *oldpath, int newdirfd,
                     const char *newpath, unsigned flags);
int __real_connect(int fd, const struct sockaddr *sa, socklen_t len);
int __wrap_connect(int fd, const struct sockaddr *sa, socklen_t len);
int __real_chmod(const char *path, mode_t mode);
int __wrap_chmod(const char *path, mode_t mode);
int __real_fchmodat(int dirfd, const char *path, mode_t mode, int flags);
int __wrap_fchmodat(int dirfd, const char *path, mode_t mode, int flags);

int __wrap_bind(int fd, const struct sockaddr *sa, socklen_t len)
{
    int rc = __real_bind(fd, sa, len);
    if (rc == 0 && race_target != NULL && sa->sa_family == AF_UNIX) {
        /* Where the socket was made must be reachable by us alone. */
        const struct sockaddr_un *un = (const struct sockaddr_un *)sa;
        char dir[sizeof un->sun_path];
        snprintf(dir, sizeof dir, "%s", un->sun_path);
        char *slash = strrchr(dir, '/');
        struct stat st;
        if (slash == NULL || (*slash = '\0', stat(dir, &st) < 0) ||
            (st.st_mode & 07777) != 0700 || st.st_uid != geteuid())
            race_bind_private = false;
        race_attack(RACE_AT_CREATE);
    }
    return rc;
}

/* When set: the path of a stale socket that, the moment the sink has
 * probed it (connect() refused), the attacker replaces with a file of its
 * own. */
static const char *race_probe_swap;

int __wrap_connect(int fd, const struct sockaddr *sa, socklen_t len)
{
    int rc = __real_connect(fd, sa, len);
    int e = errno;
    if (race_probe_swap != NULL && sa->sa_family == AF_UNIX &&
        strcmp(((const struct sockaddr_un *)sa)->sun_path, race_probe_swap) == 0) {
        (void)unlink(race_probe_swap);
        if (tu_write_file(race_probe_swap, "theirs") == 0)
            race_attacks++;
    }
    errno = e;
    return rc;
}

/* What the file looked like the moment it was published at its path:
 * its mode, and its private directory's (-1: not published that way). */
static int published_mode = -1, published_dir_mode = -1;

int __wrap_renameat2(int olddirfd, const char *oldpath, int newdirfd,
                     const char *newpath, unsigned flags)
{
    struct stat st, dst;
    if (fstatat(olddirfd, oldpath, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        fstat(olddirfd, &dst) == 0) {
        published_mode = (int)(st.st_mode & 07777);
        published_dir_mode = dst.st_uid == geteuid() ? (int)(dst.st_mode & 07777)
                                                     : -2;
    }
    return __real_renameat2(olddirfd, oldpath, newdirfd, newpath, flags);
}

int __wrap_mkfifo(const char *path, mode_t mode)
{
    int rc = __real_mkfifo(path, mode);
    race_attack(RACE_AT_CREATE);
    return rc;
}

int __wrap_mkfifoat(int dirfd, const char *path, mode_t mode)
{
    int rc = __real_mkfifoat(dirfd, path, mode);
    race_attack(RACE_AT_CREATE);
    return rc;
}

int __wrap_chmod(const char *path, mode_t mode)
{
    race_attack(RACE_AT_MODE);
    return __real_chmod(path, mode);
}

int __wrap_fchmodat(int dirfd, const char *path, mode_t mode, int flags)
{
    race_attack(RACE_AT_MODE);
    return __real_fchmodat(dirfd, path, mode, flags);
}

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/* A file only its owner may read: what the attacker wants opened up. */
static const char *make_victim(void)
{
    const char *victim = check_path("victim");
    CHECK_OK(tu_write_file(victim, "secret"));
    CHECK_OK(chmod(victim, 0600));
    return victim;
}

static void check_victim(const char *victim)
{
    struct stat st;
    CHECK_OK(stat(victim, &st));
    CHECK_MSG((st.st_mode & 07777) == 0600 && st.st_uid == geteuid(),
              "the victim is now mode %04o, uid %u (was 0600, uid %u)",
              (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid,
              (unsigned)geteuid());
    char *content = tu_read_file(victim);
    CHECK_STR(content, "secret");
    free(content);
}

/* Entries of dir other than those named in keep (NULL-terminated). */
static size_t strays(const char *dir, const char *const *keep)
{
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        bool kept = false;
        for (const char *const *k = keep; *k != NULL && !kept; k++)
            kept = strcmp(e->d_name, *k) == 0;
        if (!kept) {
            printf("  stray entry: %s\n", e->d_name);
            n++;
        }
    }
    closedir(d);
    return n;
}

// ---------------------------------------------------------------------------
// Deterministic: the attacker acts at the worst moment
// ---------------------------------------------------------------------------

/* unix: a symbolic link swapped in right after bind() and again before any
 * mode is set.  The open fails (something appeared at the path), the
 * victim is untouched, and the private directory is gone. */
static void unix_symlink_swapped_in_after_bind(void)
{
    const char *victim = make_victim();
    const char *path = check_path("s.sock");
    race_victim = victim;
    race_target = path;
    struct tu_args t;
    void *sink = NULL;
    int rc = U->open(&sink, tu_sink_args(&t, "unix", path, "mode", "0666"));
    race_target = NULL;
    CHECK_MSG(race_attacks > 0, "the attack never ran");
    CHECK_MSG(race_bind_private, "bind() happened outside a private directory");
    if (rc == 0)
        U->close(sink);
    check_victim(victim);
    CHECK_INT(rc, ==, ELS_EADDRINUSE);
    CHECK_CONTAINS(t.err, "another process created the path just now");
    struct stat st;
    CHECK_OK(lstat(path, &st));
    CHECK(S_ISLNK(st.st_mode));         /* the attacker's link, untouched */
    static const char *const keep[] = { "victim", "s.sock", NULL };
    CHECK_INT(strays(check_dir, keep), ==, 0);
}

/* fifo: the same right after mkfifo(), or only right before the mode is
 * set (past every check of what was created). */
static void fifo_symlink_swapped_in(unsigned when)
{
    race_when = when;
    race_attacks = 0;
    const char *victim = make_victim();
    const char *path = check_path("f.fifo");
    (void)unlink(path);
    race_victim = victim;
    race_target = path;
    struct tu_args t;
    void *sink = NULL;
    int rc = F->open(&sink, tu_sink_args(&t, "fifo", path, "mode", "0666"));
    race_target = NULL;
    CHECK_MSG(race_attacks > 0, "the attack never ran");
    if (rc == 0)
        F->close(sink);
    check_victim(victim);
    CHECK_INT(rc, ==, ELS_EEXIST);
    CHECK_CONTAINS(t.err, "symbolic link");
    static const char *const keep[] = { "victim", "f.fifo", NULL };
    CHECK_INT(strays(check_dir, keep), ==, 0);
}

static void fifo_symlink_swapped_in_after_mkfifo(void)
{
    fifo_symlink_swapped_in(RACE_AT_CREATE);
}

static void fifo_symlink_swapped_in_before_mode(void)
{
    fifo_symlink_swapped_in(RACE_AT_MODE);
}

/* A symbolic link planted before the program starts is never followed:
 * to a regular file, to a directory, dangling. */
static void symlinks_planted_beforehand_not_followed(void)
{
    const char *victim = make_victim();
    const char *vdir = check_path("vdir");
    CHECK_OK(mkdir(vdir, 0700));
    const char *nowhere = check_path("nowhere");
    const char *targets[] = { victim, vdir, nowhere };
    const char *sock = check_path("s.sock"), *fifo = check_path("f.fifo");
    for (size_t i = 0; i < 3; i++) {
        (void)unlink(sock);
        (void)unlink(fifo);
        CHECK_OK(symlink(targets[i], sock));
        CHECK_OK(symlink(targets[i], fifo));
        struct tu_args t;
        void *sink = NULL;
        CHECK_INT(U->open(&sink, tu_sink_args(&t, "unix", sock, "mode", "0666")),
                  ==, ELS_EEXIST);
        CHECK_CONTAINS(t.err, "symbolic link");
        CHECK_INT(F->open(&sink, tu_sink_args(&t, "fifo", fifo, "mode", "0666")),
                  ==, ELS_EEXIST);
        CHECK_CONTAINS(t.err, "symbolic link");
    }
    check_victim(victim);
    CHECK_INT(tu_file_mode(vdir), ==, 0700);
    CHECK(!tu_exists(nowhere));
    static const char *const keep[] = { "victim", "vdir", "s.sock", "f.fifo",
                                        NULL };
    CHECK_INT(strays(check_dir, keep), ==, 0);
    CHECK_INT(strays(vdir, (const char *const[]){ NULL }), ==, 0);
}

/* The helper the receiver can use too: the socket appears with its final
 * mode and already listening, owned by us, whatever the umask; until then
 * it was in a directory only we can enter. */
static void unix_bind_listen_helper(void)
{
    umask(0);
    const char *path = check_path("h.sock");
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(fd >= 0);
    struct stat st;
    char err[256];
    CHECK_OK(elsi_unix_bind_listen(fd, path, 0640, 4, &st, err, sizeof err));
    CHECK_INT(published_mode, ==, 0640);
    CHECK_INT(published_dir_mode, ==, 0700);
    CHECK_INT(tu_file_mode(path), ==, 0640);
    struct stat now;
    CHECK_OK(lstat(path, &now));
    CHECK(S_ISSOCK(now.st_mode) && now.st_ino == st.st_ino &&
          now.st_dev == st.st_dev && now.st_uid == geteuid());
    int c = tu_connect_unix(path, TU_WAIT_MS);
    CHECK_INT(c, >=, 0);
    close(c);
    static const char *const keep[] = { "h.sock", NULL };
    CHECK_INT(strays(check_dir, keep), ==, 0);

    /* Never replaces anything, not even a stale socket. */
    int fd2 = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK_INT(elsi_unix_bind_listen(fd2, path, 0600, 4, &st, err, sizeof err),
              ==, ELS_EEXIST);
    CHECK_CONTAINS(err, "appeared");
    close(fd2);
    fd2 = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK_INT(elsi_unix_bind_listen(fd2, check_dir, 0600, 4, &st, err,
                                    sizeof err), ==, ELS_EEXIST);
    close(fd2);
    char slash[1100];
    snprintf(slash, sizeof slash, "%s/", check_dir);
    fd2 = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK_INT(elsi_unix_bind_listen(fd2, slash, 0600, 4, &st, err, sizeof err),
              ==, ELS_EINVAL);
    CHECK_CONTAINS(err, "must end in a file name");
    close(fd2);
    close(fd);
    CHECK_INT(strays(check_dir, keep), ==, 0);
}

// ---------------------------------------------------------------------------
// Real: another user races symbolic links into the directory
// ---------------------------------------------------------------------------

#define RACE_ROUNDS 3000

/* As uid 65534: swap symbolic links to the victim in and out at both
 * paths until killed. */
static void attacker_main(const char *victim, const char *sock, const char *fifo)
{
    if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0 ||
        geteuid() == 0)
        _exit(TU_SKIPPED);
    for (;;) {
        (void)symlink(victim, sock);
        (void)symlink(victim, fifo);
        (void)unlink(sock);
        (void)unlink(fifo);
    }
}

static void another_user_races_symlinks(void)
{
    if (geteuid() != 0)
        CHECK_SKIP_PART("needs root to run the attacker as uid 65534");
    const char *victim = make_victim();
    char shared[1024], sock[1100], fifo[1100];
    snprintf(shared, sizeof shared, "%s/shared", check_dir);
    CHECK_OK(mkdir(shared, 0777));
    CHECK_OK(chmod(shared, 0777));      /* not sticky: the worst case */
    CHECK_OK(chmod(check_dir, 0711));
    snprintf(sock, sizeof sock, "%s/s.sock", shared);
    snprintf(fifo, sizeof fifo, "%s/f.fifo", shared);

    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
        attacker_main(victim, sock, fifo);

    unsigned opened_unix = 0, opened_fifo = 0;
    for (int i = 0; i < RACE_ROUNDS; i++) {
        struct tu_args t;
        void *sink = NULL;
        if (U->open(&sink, tu_sink_args(&t, "unix", sock, "mode", "0666")) == 0) {
            opened_unix++;
            U->close(sink);
        }
        if (F->open(&sink, tu_sink_args(&t, "fifo", fifo, "mode", "0666")) == 0) {
            opened_fifo++;
            F->close(sink);
        }
    }
    CHECK_OK(kill(pid, SIGKILL));
    int status;
    CHECK_INT(waitpid(pid, &status, 0), ==, pid);
    if (WIFEXITED(status) && WEXITSTATUS(status) == TU_SKIPPED)
        CHECK_SKIP_PART("root, and cannot switch to uid 65534");
    printf("  %d rounds: unix opened %u times, fifo %u times\n", RACE_ROUNDS,
           opened_unix, opened_fifo);
    check_victim(victim);
    /* Only what the attacker left; nothing of ours (no private directory,
     * no socket or FIFO: the sinks removed what they made). */
    static const char *const keep[] = { "s.sock", "f.fifo", NULL };
    CHECK_INT(strays(shared, keep), ==, 0);
}

/* The sinks' files, the moment they appear at their paths: already with
 * the mode asked for (the umask would have given 0777 or 0666). */
static void files_published_with_final_mode(void)
{
    umask(0);
    const char *sock = check_path("s.sock"), *fifo = check_path("f.fifo");
    struct tu_args t;
    void *sink = NULL;
    CHECK_OK(U->open(&sink, tu_sink_args(&t, "unix", sock, NULL, NULL)));
    CHECK_INT(published_mode, ==, 0600);
    CHECK_INT(published_dir_mode, ==, 0700);
    U->close(sink);
    published_mode = published_dir_mode = -1;
    CHECK_OK(F->open(&sink, tu_sink_args(&t, "fifo", fifo, "mode", "0640")));
    CHECK_INT(published_mode, ==, 0640);
    CHECK_INT(published_dir_mode, ==, 0700);
    F->close(sink);
    static const char *const keep[] = { NULL };
    CHECK_INT(strays(check_dir, keep), ==, 0);
}

/* A stale socket is removed only if the path still names it after the
 * probe: a file swapped in meanwhile is left alone and the open fails. */
static void unix_stale_socket_swapped_during_probe(void)
{
    const char *path = check_path("s.sock");
    int dead = tu_bind_unix(path, true);
    CHECK_INT(dead, >=, 0);
    close(dead);                        /* a stale socket file stays */
    race_probe_swap = path;
    struct tu_args t;
    void *sink = NULL;
    int rc = U->open(&sink, tu_sink_args(&t, "unix", path, NULL, NULL));
    race_probe_swap = NULL;
    CHECK_MSG(race_attacks > 0, "the attack never ran");
    if (rc == 0)
        U->close(sink);
    char *content = tu_read_file(path);
    CHECK_MSG(content != NULL, "the file swapped in was removed");
    CHECK_STR(content, "theirs");
    free(content);
    CHECK_INT(rc, ==, ELS_EADDRINUSE);
    CHECK_CONTAINS(t.err, "changed while being checked");
}

static const struct check_case cases[] = {
    CHECK_CASE(files_published_with_final_mode),
    CHECK_CASE(unix_symlink_swapped_in_after_bind),
    CHECK_CASE(fifo_symlink_swapped_in_after_mkfifo),
    CHECK_CASE(fifo_symlink_swapped_in_before_mode),
    CHECK_CASE(symlinks_planted_beforehand_not_followed),
    CHECK_CASE(unix_stale_socket_swapped_during_probe),
    CHECK_CASE(unix_bind_listen_helper),
    CHECK_CASE_T(another_user_races_symlinks, 120),
};

CHECK_MAIN(cases)
