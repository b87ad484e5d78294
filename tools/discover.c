/*
 * discover.c: reading the discovery directory (discover.h): which
 * directory and when to trust it, parsing the announce files' line
 * format, judging entries live or stale (and removing stale ones), and
 * turning pid:PID and name:NAME into a spec.  It mirrors the writer's
 * rules in lib/deliver/announce.c (Note [Announce files]) from their
 * description, as the control client mirrors the protocol.  Not its job:
 * asking programs anything (ps.c does), printing.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "discover.h"
#include "tool.h"
#include "safetext.h"
#include "util.h"

#define DISC_MAGIC "eventlog-sink-announce 1"
#define DISC_SUFFIX ".announce"
#define DISC_FILE_MAX (256 * 1024)

int disc_dir_path(char *buf, size_t len)
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

/* The reader's side of the start time the library writes in each entry
 * (lib/deliver/announce.c, elsi_proc_start_time()): the same field read
 * the same way; kept here because the tool uses the library's public
 * names only.  A change to one is a change to both. */
int disc_proc_start(long pid, uint64_t *start)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? -ENOENT : -errno;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    util_close(fd);
    if (n <= 0)
        return -EPROTO;
    buf[n] = '\0';
    /* Fields after the command name (which may hold ')') start after
     * the last ')'; field 3 is the state, 22 the start time. */
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
    char *end;
    errno = 0;
    unsigned long long v = strtoull(p, &end, 10);
    if (end == p || errno != 0)
        return -EPROTO;
    *start = v;
    return 0;
}

/* %XX-decode s in place. */
static void disc_unescape(char *s)
{
    char *o = s;
    for (char *p = s; *p != '\0'; p++) {
        unsigned v;
        if (*p == '%' && p[1] != '\0' && p[2] != '\0' &&
            sscanf(p + 1, "%2x", &v) == 1) {
            *o++ = (char)v;
            p += 2;
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
}

static void disc_entry_free(struct disc_entry *e)
{
    free(e->name);
    for (size_t i = 0; i < e->argc; i++)
        free(e->argv[i]);
    free(e->argv);
    for (size_t i = 0; i < e->n_sinks; i++) {
        free(e->sinks[i].spec);
        free(e->sinks[i].endpoint);
        free(e->sinks[i].control);
    }
    memset(e, 0, sizeof *e);
}

/* Parse one file's text (NUL-terminated, modified) into *e.  0, or
 * -EPROTO when it is not an announce file. */
static int disc_parse(char *text, struct disc_entry *e)
{
    memset(e, 0, sizeof *e);
    bool have_pid = false, have_start = false;
    char *line = text;
    if (strncmp(line, DISC_MAGIC "\n", strlen(DISC_MAGIC) + 1) != 0)
        return -EPROTO;
    line += strlen(DISC_MAGIC) + 1;
    while (*line != '\0') {
        char *nl = strchr(line, '\n');
        if (nl == NULL)
            break;              /* a cut line: ignore it */
        *nl = '\0';
        char *sp = strchr(line, ' ');
        if (sp != NULL) {
            *sp = '\0';
            char *key = line, *v = sp + 1;
            disc_unescape(v);
            struct disc_sink *s = e->n_sinks > 0 ? &e->sinks[e->n_sinks - 1]
                                                 : NULL;
            if (strcmp(key, "pid") == 0) {
                e->pid = strtol(v, NULL, 10);
                have_pid = e->pid > 0;
            } else if (strcmp(key, "start") == 0) {
                e->start = strtoull(v, NULL, 10);
                have_start = true;
            } else if (strcmp(key, "name") == 0 && e->name == NULL) {
                e->name = strdup(v);
            } else if (strcmp(key, "arg") == 0) {
                char **a = realloc(e->argv, (e->argc + 1) * sizeof *a);
                if (a != NULL) {
                    e->argv = a;
                    if ((a[e->argc] = strdup(v)) != NULL)
                        e->argc++;
                }
            } else if (strcmp(key, "sink") == 0 &&
                       e->n_sinks < DISC_SINKS_MAX) {
                e->sinks[e->n_sinks++].spec = strdup(v);
            } else if (strcmp(key, "endpoint") == 0 && s != NULL &&
                       s->endpoint == NULL) {
                s->endpoint = strdup(v);
            } else if (strcmp(key, "control") == 0 && s != NULL &&
                       s->control == NULL && strcmp(v, "-") != 0) {
                s->control = strdup(v);
            }           /* unknown keys: a later version's, skipped */
        }
        line = nl + 1;
    }
    if (!have_pid || !have_start) {
        disc_entry_free(e);
        return -EPROTO;
    }
    if (e->name == NULL)
        e->name = strdup("?");
    return 0;
}

/* Read dfd/name: its bytes (NUL-terminated, malloc'd) and the inode
 * read, or NULL. */
static char *disc_read(int dfd, const char *name, struct stat *st)
{
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
                    O_NONBLOCK);
    if (fd < 0)
        return NULL;
    char *buf = NULL;
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode) ||
        st->st_size > DISC_FILE_MAX || (buf = malloc(DISC_FILE_MAX + 1)) == NULL) {
        util_close(fd);
        return NULL;
    }
    size_t n = 0;
    ssize_t r;
    while (n < DISC_FILE_MAX &&
           (r = read(fd, buf + n, DISC_FILE_MAX - n)) > 0)
        n += (size_t)r;
    buf[n] = '\0';
    util_close(fd);
    return buf;
}

/* Remove dfd/name if it is still the file read (st): a program that got
 * the stale entry's pid may have just written its own. */
static void disc_remove_stale(int dfd, const char *name, const struct stat *st)
{
    struct stat now;
    if (fstatat(dfd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
        now.st_dev == st->st_dev && now.st_ino == st->st_ino)
        (void)unlinkat(dfd, name, 0);
}

static int disc_cmp(const void *a, const void *b)
{
    long x = ((const struct disc_entry *)a)->pid;
    long y = ((const struct disc_entry *)b)->pid;
    return (x > y) - (x < y);
}

int disc_scan(struct disc_list *out, char *err, size_t err_len)
{
    out->v = NULL;
    out->n = 0;
    char path[PATH_MAX];
    if (disc_dir_path(path, sizeof path) != 0) {
        snprintf(err, err_len, "the discovery directory's path is too long");
        return -ENAMETOOLONG;
    }
    int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) {
        int e = errno;
        if (e == ENOENT)
            return 0;
        snprintf(err, err_len, "%s: %s", path,
                 e == ELOOP ? "a symbolic link: refused" : strerror(e));
        return -e;
    }
    struct stat st;
    if (fstat(dfd, &st) != 0 || st.st_uid != geteuid() ||
        (st.st_mode & 077) != 0) {
        snprintf(err, err_len, "%s is not this user's private directory "
                 "(owner uid %lu, mode %03o): refused", path,
                 (unsigned long)st.st_uid, (unsigned)(st.st_mode & 0777));
        util_close(dfd);
        return -EACCES;
    }
    int dfd2 = dup(dfd);
    DIR *d = dfd2 >= 0 ? fdopendir(dfd2) : NULL;
    if (d == NULL) {
        int e = errno;
        if (dfd2 >= 0)
            util_close(dfd2);
        util_close(dfd);
        snprintf(err, err_len, "%s: %s", path, strerror(e));
        return -e;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name), sl = strlen(DISC_SUFFIX);
        if (len <= sl || strcmp(de->d_name + len - sl, DISC_SUFFIX) != 0)
            continue;
        struct stat fst;
        char *text = disc_read(dfd, de->d_name, &fst);
        if (text == NULL)
            continue;
        struct disc_entry e;
        int r = disc_parse(text, &e);
        free(text);
        if (r != 0)
            continue;           /* not ours to judge or remove */
        uint64_t start = 0;
        char expect[64];
        snprintf(expect, sizeof expect, "%ld" DISC_SUFFIX, e.pid);
        int pr = disc_proc_start(e.pid, &start);
        if (strcmp(expect, de->d_name) != 0 || pr == -ENOENT ||
            (pr == 0 && start != e.start)) {
            /* Gone, or its pid belongs to a later process now. */
            disc_remove_stale(dfd, de->d_name, &fst);
            disc_entry_free(&e);
            continue;
        }
        struct disc_entry *v = realloc(out->v, (out->n + 1) * sizeof *v);
        if (v == NULL) {
            disc_entry_free(&e);
            break;
        }
        out->v = v;
        out->v[out->n++] = e;
    }
    closedir(d);
    util_close(dfd);
    if (out->n > 1)
        qsort(out->v, out->n, sizeof *out->v, disc_cmp);
    return 0;
}

void disc_list_free(struct disc_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        disc_entry_free(&l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

bool disc_is_ref(const char *arg)
{
    return strncmp(arg, "pid:", 4) == 0 || strncmp(arg, "name:", 5) == 0;
}

int disc_resolve(const char *arg, bool control, char **spec, char *err,
                 size_t err_len)
{
    *spec = NULL;
    if (!disc_is_ref(arg)) {
        *spec = strdup(arg);
        return *spec != NULL ? 0 : -ENOMEM;
    }
    bool by_pid = arg[0] == 'p';
    const char *want = arg + (by_pid ? 4 : 5);
    char shown[256];
    safetext_copy(shown, sizeof shown, arg, strlen(arg));
    long pid = 0;
    if (by_pid) {
        char *end;
        pid = strtol(want, &end, 10);
        if (want[0] == '\0' || *end != '\0' || pid <= 0) {
            snprintf(err, err_len, "%s: expected pid:PID with a process id",
                     shown);
            return -EINVAL;
        }
    } else if (want[0] == '\0') {
        snprintf(err, err_len, "name: needs a program name (name:NAME)");
        return -EINVAL;
    }
    struct disc_list l;
    int r = disc_scan(&l, err, err_len);
    if (r != 0)
        return r;
    struct disc_entry *found = NULL;
    size_t matches = 0;
    for (size_t i = 0; i < l.n; i++) {
        if (by_pid ? l.v[i].pid == pid : strcmp(l.v[i].name, want) == 0) {
            if (found == NULL)
                found = &l.v[i];
            matches++;
        }
    }
    char path[PATH_MAX];
    if (disc_dir_path(path, sizeof path) != 0)
        path[0] = '\0';
    if (found == NULL) {
        snprintf(err, err_len, "%s: no such program announced in %s "
                 "(see 'eventlog-sink ps')", shown, path);
        r = -ENOENT;
    } else if (matches > 1) {
        int off = snprintf(err, err_len, "%s is ambiguous: %zu programs "
                           "have that name (pids", shown, matches);
        for (size_t i = 0; i < l.n && off > 0 && (size_t)off < err_len; i++)
            if (strcmp(l.v[i].name, want) == 0)
                off += snprintf(err + off, err_len - (size_t)off, " %ld",
                                l.v[i].pid);
        if (off > 0 && (size_t)off < err_len)
            snprintf(err + off, err_len - (size_t)off, "); use pid:PID");
        r = -EEXIST;
    } else {
        const char *s = NULL;
        for (size_t i = 0; i < found->n_sinks && s == NULL; i++)
            s = control ? found->sinks[i].control : found->sinks[i].endpoint;
        if (s == NULL) {
            snprintf(err, err_len, "%s (pid %ld) has %s", shown, found->pid,
                     control ? "no control socket (control=1 is off)"
                             : "no sink endpoint announced");
            r = -ENOENT;
        } else if ((*spec = strdup(s)) == NULL) {
            r = -ENOMEM;
        }
    }
    disc_list_free(&l);
    return r;
}

int disc_resolve_arg(const char *cmd, char **arg, bool control)
{
    if (!disc_is_ref(*arg))
        return 0;
    char err[1024];
    char *spec;
    int r = disc_resolve(*arg, control, &spec, err, sizeof err);
    if (r != 0) {
        fprintf(stderr, TOOL_NAME " %s: %s\n", cmd, err);
        return r == -EINVAL ? TOOL_EXIT_USAGE : 1;
    }
    *arg = spec;
    return 0;
}
