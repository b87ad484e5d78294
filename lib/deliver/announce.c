/*
 * announce.c: the program's entry in the per-user discovery directory
 * (announce.h): where the directory is and when it is trusted, the
 * process's identity (pid, start time, argv from /proc/self), the file's
 * line format, and writing and removing the file safely, including after
 * fork and at exit.  Not its job: reading entries or judging them stale
 * (tools/discover.c does that, as every reader must), or what the sinks
 * and control channel do with their sockets.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "deliver/announce.h"
#include "log.h"
#include "sinks/fdutil.h"

/*
 * Note [Announce files]
 * ~~~~~~~~~~~~~~~~~~~~~
 * One file per process, PID.announce, in a directory only this user can
 * use: $XDG_RUNTIME_DIR/eventlog-sink (the session's private runtime
 * directory), else ${TMPDIR:-/tmp}/eventlog-sink-UID.  The temp
 * directory is shared, so another user could make that name first: the
 * directory is opened with O_NOFOLLOW and used only if it is a directory
 * owned by us with no group or other bits; anything else is refused (the
 * program runs unannounced, with a warning).  Inside a directory only we
 * can write, a file is created under a temporary name with O_EXCL and
 * O_NOFOLLOW, mode 0600, and renamed over PID.announce: a reader sees
 * the old file or the new one, never half of one.
 *
 * The format is lines of "KEY VALUE" (the first line is
 * ELSI_ANNOUNCE_MAGIC); in values, '%', bytes below 0x20 and 0x7f are
 * written %XX so that a line never breaks:
 *     pid PID
 *     start START      field 22 of /proc/PID/stat (clock ticks)
 *     name NAME        the base name of argv[0]
 *     arg ARG          once per argument, argv[0] first
 *   then per announced writer, a group starting with "sink":
 *     sink SPEC        the spec as given
 *     endpoint EP      where a consumer connects ("unix:/path", ...)
 *     control CTL      the control socket as a spec, or "-" when off
 * A pid is reused after its process dies, so a reader trusts an entry
 * only while /proc/PID/stat's start time equals START; other entries are
 * stale (a program killed with SIGKILL leaves one) and any reader may
 * remove them.
 *
 * The file goes with the last writer (els_writer_close(), which the RTS
 * calls at stop and at exit) and, for an exit that skips it, with an
 * atexit handler.  A forked child inherits the parent's writers but not
 * their sockets' ownership (Note [Fork] in writer.c): it forgets the
 * parent's list, never removes the parent's file, and announces under
 * its own pid only the writers it opens itself.
 */

#define ANNOUNCE_ARGV_MAX (64 * 1024)   /* bytes of /proc/self/cmdline kept */

struct announced {
    const void *key;
    char *spec;
    char *endpoint;
    char *control;              /* a spec, or NULL: control off */
    struct announced *next;
};

static pthread_mutex_t announce_lock = PTHREAD_MUTEX_INITIALIZER;
static struct announced *announce_list;
static pid_t announce_owner;    /* the pid whose file the list describes */
static pthread_once_t announce_once = PTHREAD_ONCE_INIT;

// ---------------------------------------------------------------------------
// The directory and the process
// ---------------------------------------------------------------------------

int elsi_announce_dir_path(char *buf, size_t len)
{
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    int n;
    if (xdg != NULL && xdg[0] == '/') {
        n = snprintf(buf, len, "%s/eventlog-sink", xdg);
    } else {
        const char *tmp = getenv("TMPDIR");
        if (tmp == NULL || tmp[0] != '/')
            tmp = "/tmp";
        n = snprintf(buf, len, "%s/eventlog-sink-%lu", tmp,
                     (unsigned long)geteuid());
    }
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int elsi_announce_dir_open(int create, char *err, size_t err_len)
{
    char path[PATH_MAX];
    if (elsi_announce_dir_path(path, sizeof path) != 0)
        return elsi_fail(err, err_len, -ENAMETOOLONG, "the discovery "
                         "directory's path is too long");
    if (create && mkdir(path, 0700) != 0 && errno != EEXIST)
        return elsi_fail(err, err_len, -errno, "%s: cannot create: %s",
                         path, strerror(errno));
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        struct stat st;
        if ((e == ELOOP || e == ENOTDIR) && lstat(path, &st) == 0 &&
            S_ISLNK(st.st_mode))
            return elsi_fail(err, err_len, -ELOOP, "%s is a symbolic link: "
                             "refused", path);
        return elsi_fail(err, err_len, -e, "%s: %s", path, strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        elsi_close(fd);
        return elsi_fail(err, err_len, -e, "%s: %s", path, strerror(e));
    }
    if (st.st_uid != geteuid()) {
        elsi_close(fd);
        return elsi_fail(err, err_len, -EPERM, "%s belongs to uid %lu, not "
                         "to this user: refused", path,
                         (unsigned long)st.st_uid);
    }
    if ((st.st_mode & 077) != 0) {
        elsi_close(fd);
        return elsi_fail(err, err_len, -EACCES, "%s has mode %03o: others "
                         "may use it (chmod 700): refused", path,
                         (unsigned)(st.st_mode & 0777));
    }
    return fd;
}

/* tools/discover.c reads it back the same way (disc_proc_start()). */
int elsi_proc_start_time(pid_t pid, uint64_t *start)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? -ENOENT : -errno;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    elsi_close(fd);
    if (n <= 0)
        return -EPROTO;
    buf[n] = '\0';
    /* The command name (field 2) may hold spaces and parentheses: the
     * fields after it start after the last ')'.  Field 3 is the state;
     * the start time is field 22. */
    char *p = strrchr(buf, ')');
    if (p == NULL)
        return -EPROTO;
    p++;
    for (int field = 3; field < 22; field++) {
        while (*p == ' ')
            p++;
        while (*p != ' ' && *p != '\0')
            p++;
    }
    while (*p == ' ')
        p++;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(p, &end, 10);
    if (end == p || errno != 0)
        return -EPROTO;
    *start = v;
    return 0;
}

// ---------------------------------------------------------------------------
// The file
// ---------------------------------------------------------------------------

struct abuf {
    char *p;
    size_t len, cap;
    bool failed;
};

static void abuf_put(struct abuf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (p == NULL) {
            b->failed = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

/* "KEY VALUE\n" with VALUE (n bytes) escaped as Note [Announce files]
 * says. */
static void abuf_line(struct abuf *b, const char *key, const char *v,
                      size_t n)
{
    abuf_put(b, key, strlen(key));
    abuf_put(b, " ", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        if (c < 0x20 || c == 0x7f || c == '%') {
            char esc[4];
            snprintf(esc, sizeof esc, "%%%02X", c);
            abuf_put(b, esc, 3);
        } else {
            abuf_put(b, &v[i], 1);
        }
    }
    abuf_put(b, "\n", 1);
}

static void abuf_line_str(struct abuf *b, const char *key, const char *v)
{
    abuf_line(b, key, v, strlen(v));
}

/* The identity part of the file: pid, start, name, arguments. */
static void announce_identity(struct abuf *b, pid_t pid)
{
    char num[32];
    abuf_put(b, ELSI_ANNOUNCE_MAGIC "\n", strlen(ELSI_ANNOUNCE_MAGIC) + 1);
    snprintf(num, sizeof num, "%ld", (long)pid);
    abuf_line_str(b, "pid", num);
    uint64_t start = 0;
    if (elsi_proc_start_time(pid, &start) == 0) {
        snprintf(num, sizeof num, "%" PRIu64, start);
        abuf_line_str(b, "start", num);
    }
    char *argv = malloc(ANNOUNCE_ARGV_MAX);
    ssize_t n = 0;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (argv != NULL && fd >= 0) {
        ssize_t r;
        while (n < ANNOUNCE_ARGV_MAX &&
               (r = read(fd, argv + n, ANNOUNCE_ARGV_MAX - (size_t)n)) > 0)
            n += r;
    }
    if (fd >= 0)
        elsi_close(fd);
    if (argv != NULL && n > 0) {
        /* argv[0]'s base name; arguments are NUL-separated, the last one
         * cut if the list was longer than we keep. */
        size_t a0 = strnlen(argv, (size_t)n);
        const char *base = argv;
        for (size_t i = 0; i < a0; i++)
            if (argv[i] == '/' && i + 1 < a0)
                base = argv + i + 1;
        abuf_line(b, "name", base, a0 - (size_t)(base - argv));
        for (ssize_t i = 0; i < n;) {
            size_t len = strnlen(argv + i, (size_t)(n - i));
            abuf_line(b, "arg", argv + i, len);
            i += (ssize_t)len + 1;
        }
    }
    free(argv);
}

/* Write the list as this process's file, or remove the file when the
 * list is empty.  Called with announce_lock held. */
static void announce_sync(void)
{
    char err[256] = "";
    pid_t pid = getpid();
    int dfd = elsi_announce_dir_open(announce_list != NULL, err, sizeof err);
    if (dfd < 0) {
        if (announce_list != NULL)
            elsi_log(ELS_LOG_WARN, "not announced for eventlog-sink ps: %s",
                     err);
        return;
    }
    char name[64], tmp[64];
    snprintf(name, sizeof name, "%ld" ELSI_ANNOUNCE_SUFFIX, (long)pid);
    snprintf(tmp, sizeof tmp, ".%ld.tmp", (long)pid);
    if (announce_list == NULL) {
        (void)unlinkat(dfd, name, 0);
        elsi_close(dfd);
        return;
    }

    struct abuf b = { 0 };
    announce_identity(&b, pid);
    for (const struct announced *a = announce_list; a != NULL; a = a->next) {
        abuf_line_str(&b, "sink", a->spec);
        abuf_line_str(&b, "endpoint", a->endpoint);
        abuf_line_str(&b, "control", a->control ? a->control : "-");
    }
    const char *fail = NULL;
    int e = 0;
    if (b.failed) {
        fail = "out of memory";
        e = ENOMEM;
        goto out;
    }
    /* A temporary file left by an earlier process with our pid (killed
     * mid-write) is ours to replace: the directory is ours alone. */
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
                    O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST && unlinkat(dfd, tmp, 0) == 0)
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
                    O_CLOEXEC, 0600);
    if (fd < 0) {
        e = errno;
        fail = "cannot create";
        goto out;
    }
    int r = fchmod(fd, 0600) == 0 ? elsi_write_all(fd, b.p, b.len) : -errno;
    elsi_close(fd);
    if (r != 0 || renameat(dfd, tmp, dfd, name) != 0) {
        e = r != 0 ? -r : errno;
        fail = "cannot write";
        (void)unlinkat(dfd, tmp, 0);
    }
out:
    if (fail != NULL) {
        char path[PATH_MAX];
        if (elsi_announce_dir_path(path, sizeof path) != 0)
            path[0] = '\0';
        elsi_log(ELS_LOG_WARN, "not announced for eventlog-sink ps: %s/%s: "
                 "%s: %s", path, name, fail, strerror(e));
    }
    free(b.p);
    elsi_close(dfd);
}

// ---------------------------------------------------------------------------
// Fork and exit
// ---------------------------------------------------------------------------

static void announce_free(struct announced *a)
{
    free(a->spec);
    free(a->endpoint);
    free(a->control);
    free(a);
}

static void announce_atfork_prepare(void)
{
    pthread_mutex_lock(&announce_lock);
}

static void announce_atfork_parent(void)
{
    pthread_mutex_unlock(&announce_lock);
}

/* The parent's writers are not the child's to announce (Note [Announce
 * files]); the memory is the child's copy, so freeing it is safe. */
static void announce_atfork_child(void)
{
    while (announce_list != NULL) {
        struct announced *next = announce_list->next;
        announce_free(announce_list);
        announce_list = next;
    }
    pthread_mutex_unlock(&announce_lock);
}

/* An exit that skips els_writer_close() (exit() from C, a program that
 * never stops its eventlog) still removes the file; only the process
 * that wrote it does (a forked child runs its parent's atexit list). */
static void announce_atexit(void)
{
    pthread_mutex_lock(&announce_lock);
    if (announce_list != NULL && announce_owner == getpid()) {
        char err[256];
        int dfd = elsi_announce_dir_open(0, err, sizeof err);
        if (dfd >= 0) {
            char name[64];
            snprintf(name, sizeof name, "%ld" ELSI_ANNOUNCE_SUFFIX,
                     (long)getpid());
            (void)unlinkat(dfd, name, 0);
            elsi_close(dfd);
        }
    }
    pthread_mutex_unlock(&announce_lock);
}

static void announce_register(void)
{
    pthread_atfork(announce_atfork_prepare, announce_atfork_parent,
                   announce_atfork_child);
    atexit(announce_atexit);
}

// ---------------------------------------------------------------------------
// For the writer
// ---------------------------------------------------------------------------

static char *control_spec(const struct elsi_spec *spec, const char *endpoint)
{
    if (!spec->control)
        return NULL;
    if (spec->control_endpoint == NULL)
        return strdup(endpoint);
    size_t n = strlen(spec->control_endpoint) + 6;
    char *s = malloc(n);
    if (s != NULL)
        snprintf(s, n, "unix:%s", spec->control_endpoint);
    return s;
}

void elsi_announce_add(const void *key, const struct elsi_spec *spec,
                       const char *endpoint)
{
    if (!spec->announce)
        return;
    pthread_once(&announce_once, announce_register);
    struct announced *a = calloc(1, sizeof *a);
    if (a == NULL)
        return;
    a->key = key;
    a->spec = strdup(spec->text != NULL ? spec->text : "");
    a->endpoint = strdup(endpoint);
    a->control = control_spec(spec, endpoint);
    if (a->spec == NULL || a->endpoint == NULL ||
        (spec->control && a->control == NULL)) {
        announce_free(a);
        return;
    }
    pthread_mutex_lock(&announce_lock);
    /* In the order the writers opened. */
    struct announced **tail = &announce_list;
    while (*tail != NULL)
        tail = &(*tail)->next;
    *tail = a;
    announce_owner = getpid();
    announce_sync();
    pthread_mutex_unlock(&announce_lock);
}

void elsi_announce_remove(const void *key)
{
    pthread_mutex_lock(&announce_lock);
    for (struct announced **p = &announce_list; *p != NULL; p = &(*p)->next) {
        if ((*p)->key == key) {
            struct announced *a = *p;
            *p = a->next;
            announce_free(a);
            if (announce_owner == getpid())
                announce_sync();
            break;
        }
    }
    pthread_mutex_unlock(&announce_lock);
}
