/*
 * announce.c: the program's entry in the per-user discovery directory
 * (announce.h): the process's identity (pid, start time, argv from
 * /proc/self), the lines of each announced writer, and writing and
 * removing the file safely, including after fork and at exit.  Not its
 * job: the directory's rules, the escapes and the proof of life, which
 * it shares with every reader (lib/discovery/discovery.c); reading
 * entries or judging them stale (tools/discover.c); what the sinks and
 * the control channel do with their sockets.
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

#include "writer/announce.h"
#include "eventlog-sink/discovery.h"
#include "base/log.h"
#include "base/fdutil.h"

/*
 * Note [Writing the entry]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * The directory and the format are Note [Announce files]
 * (lib/discovery/discovery.c).  Inside a directory only we can write, a
 * file is created under a temporary name with O_EXCL and O_NOFOLLOW,
 * mode 0600, and renamed over PID.announce: a reader sees the old file
 * or the new one, never half of one.  Each listening socket is named by
 * its identity (Note [Proof of life]), taken from the descriptor the
 * writer hands over, so an entry proves itself only while this process
 * holds them.
 *
 * The file goes with the last writer (els_writer_close(), which the RTS
 * calls at stop and at exit) and, for an exit that skips it, with an
 * atexit handler.  A forked child inherits the parent's writers but not
 * their sockets' ownership (Note [Fork] in writer.c): it forgets the
 * parent's list, never removes the parent's file, and announces under
 * its own pid only the writers it opens itself.  An execve() leaves the
 * file behind with nothing to remove it: its sockets are gone, so
 * readers no longer trust it and remove it.
 */

#define ANNOUNCE_ARGV_MAX (64 * 1024)   /* bytes of /proc/self/cmdline kept */

struct announced {
    const void *key;
    char *spec;
    char *endpoint;
    uint64_t socket_id;         /* endpoint's listening socket, or 0 */
    char *control;              /* a spec, or NULL: control off */
    uint64_t control_id;        /* control's own socket, or 0 */
    struct announced *next;
};

static pthread_mutex_t announce_lock = PTHREAD_MUTEX_INITIALIZER;
static struct announced *announce_list;
static pid_t announce_owner;    /* the pid whose file the list describes */
static pthread_once_t announce_once = PTHREAD_ONCE_INIT;

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
        char esc[4];
        size_t k = els_discovery_escape((unsigned char)v[i], esc);
        abuf_put(b, k > 0 ? esc : &v[i], k > 0 ? k : 1);
    }
    abuf_put(b, "\n", 1);
}

static void abuf_line_id(struct abuf *b, const char *key, uint64_t id)
{
    char num[32];
    snprintf(num, sizeof num, "%" PRIu64, id);
    abuf_line(b, key, num, strlen(num));
}

static void abuf_line_str(struct abuf *b, const char *key, const char *v)
{
    abuf_line(b, key, v, strlen(v));
}

/* The identity part of the file: pid, start, name, arguments. */
static void announce_identity(struct abuf *b, pid_t pid)
{
    char num[32];
    abuf_put(b, ELS_DISCOVERY_MAGIC "\n", strlen(ELS_DISCOVERY_MAGIC) + 1);
    snprintf(num, sizeof num, "%ld", (long)pid);
    abuf_line_str(b, "pid", num);
    uint64_t start = 0;
    if (els_discovery_proc_start(pid, &start) == 0) {
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
    int dfd = els_discovery_dir_open(announce_list != NULL, err, sizeof err);
    if (dfd < 0) {
        if (announce_list != NULL)
            elsi_log(ELS_LOG_WARN, "not announced for eventlog-sink ps: %s",
                     err);
        return;
    }
    char name[64], tmp[64];
    snprintf(name, sizeof name, "%ld" ELS_DISCOVERY_SUFFIX, (long)pid);
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
        if (a->socket_id != 0)
            abuf_line_id(&b, "socket", a->socket_id);
        abuf_line_str(&b, "control", a->control ? a->control : "-");
        if (a->control_id != 0)
            abuf_line_id(&b, "control-socket", a->control_id);
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
        if (els_discovery_dir_path(path, sizeof path) != 0)
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
        int dfd = els_discovery_dir_open(false, err, sizeof err);
        if (dfd >= 0) {
            char name[64];
            snprintf(name, sizeof name, "%ld" ELS_DISCOVERY_SUFFIX,
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

void elsi_announce_add(const void *key, const struct elsi_spec *spec,
                       const struct elsi_announce_sink *sink)
{
    if (!spec->announce)
        return;
    pthread_once(&announce_once, announce_register);
    struct announced *a = calloc(1, sizeof *a);
    if (a == NULL)
        return;
    a->key = key;
    a->spec = strdup(spec->text != NULL ? spec->text : "");
    a->endpoint = strdup(sink->endpoint);
    a->socket_id = els_discovery_socket_id(sink->listen_fd);
    if (sink->control != NULL) {
        a->control = strdup(sink->control);
        a->control_id = els_discovery_socket_id(sink->control_fd);
    }
    if (a->spec == NULL || a->endpoint == NULL ||
        (sink->control != NULL && a->control == NULL)) {
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
