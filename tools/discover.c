/*
 * discover.c: reading the discovery directory (discover.h): parsing the
 * announce files' lines, judging each entry live, stale or untrusted by
 * the rules the library shares with every reader (lib/discovery/
 * discovery.h: the directory, the entry's owner and mode, absolute
 * paths, the start time, Note [Proof of life]), removing stale entries,
 * and turning pid:PID and name:NAME into a spec.  Not its job: asking
 * programs anything (ps.c does), printing.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "discover.h"
#include "eventlog-sink/discovery.h"
#include "tool.h"
#include "monitor/safetext.h"
#include "monitor/util.h"

#define DISC_FILE_MAX (256 * 1024)
#define DISC_IDS_MAX (2 * DISC_SINKS_MAX)

int disc_dir_path(char *buf, size_t len)
{
    return els_discovery_dir_path(buf, len);
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

/* A socket identity from a line: a positive number, else 0. */
static uint64_t disc_id(const char *v)
{
    char *end;
    errno = 0;
    unsigned long long id = strtoull(v, &end, 10);
    return v[0] >= '0' && v[0] <= '9' && *end == '\0' && errno == 0 ? id : 0;
}

/* Parse one file's text (NUL-terminated, modified) into *e.  0;
 * -EPROTONOSUPPORT an announce file of another format version; -EPROTO
 * not an announce file. */
static int disc_parse(char *text, struct disc_entry *e)
{
    static const char family[] = "eventlog-sink-announce ";
    memset(e, 0, sizeof *e);
    bool have_pid = false, have_start = false;
    char *line = text;
    if (strncmp(line, ELS_DISCOVERY_MAGIC "\n",
                strlen(ELS_DISCOVERY_MAGIC) + 1) != 0)
        return strncmp(line, family, sizeof family - 1) == 0
               ? -EPROTONOSUPPORT : -EPROTO;
    line += strlen(ELS_DISCOVERY_MAGIC) + 1;
    while (*line != '\0') {
        char *nl = strchr(line, '\n');
        if (nl == NULL)
            break;              /* a cut line: ignore it */
        *nl = '\0';
        char *sp = strchr(line, ' ');
        if (sp != NULL) {
            *sp = '\0';
            char *key = line, *v = sp + 1;
            els_discovery_unescape(v);
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
            } else if (strcmp(key, "socket") == 0 && s != NULL &&
                       s->socket_id == 0) {
                s->socket_id = disc_id(v);
            } else if (strcmp(key, "control") == 0 && s != NULL &&
                       s->control == NULL && strcmp(v, "-") != 0) {
                s->control = strdup(v);
            } else if (strcmp(key, "control-socket") == 0 && s != NULL &&
                       s->control_id == 0) {
                s->control_id = disc_id(v);
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
 * read; or NULL, with why (empty when the file went meanwhile or memory
 * ran out: nothing to say of the entry) when the file is not one to
 * trust (Note [Announce files]) or cannot be read. */
static char *disc_read(int dfd, const char *name, struct stat *st, char *why,
                       size_t why_len)
{
    why[0] = '\0';
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
                    O_NONBLOCK);
    if (fd < 0) {
        if (errno == ELOOP)
            snprintf(why, why_len, "a symbolic link: not trusted");
        else if (errno != ENOENT)
            snprintf(why, why_len, "cannot open: %s", strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    if (fstat(fd, st) != 0) {
        snprintf(why, why_len, "cannot inspect: %s", strerror(errno));
        util_close(fd);
        return NULL;
    }
    if (els_discovery_judge(st, geteuid(), false, why, why_len) != 0 ||
        st->st_size > DISC_FILE_MAX || (buf = malloc(DISC_FILE_MAX + 1)) == NULL) {
        if (why[0] == '\0' && st->st_size > DISC_FILE_MAX)
            snprintf(why, why_len, "larger than %d bytes: not read",
                     DISC_FILE_MAX);
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

/* Note an entry left out: "DIR/NAME: why" in its safe form. */
static void disc_note(struct disc_list *l, const char *dir, const char *name,
                      const char *fmt, ...)
{
    char why[600], raw[PATH_MAX + 700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    snprintf(raw, sizeof raw, "%s/%s: %s", dir, name, why);
    struct disc_note *v = realloc(l->notes, (l->n_notes + 1) * sizeof *v);
    if (v == NULL)
        return;
    l->notes = v;
    size_t cap = 4 * strlen(raw) + 1;
    char *text = malloc(cap);
    if (text == NULL)
        return;
    safetext_copy(text, cap, raw, strlen(raw));
    char *end;
    long pid = strtol(name, &end, 10);
    l->notes[l->n_notes++] = (struct disc_note){
        .pid = end != name && strcmp(end, ELS_DISCOVERY_SUFFIX) == 0 ? pid : 0,
        .text = text,
    };
}

enum disc_verdict { DISC_LIVE, DISC_STALE, DISC_UNTRUSTED };

/* Does every endpoint of e name an absolute path, and does e's process
 * hold every socket a reader would connect to (Note [Proof of life])?
 * DISC_LIVE; DISC_STALE (the process is gone or holds them no more); or
 * DISC_UNTRUSTED with why. */
static enum disc_verdict disc_judge(const struct disc_entry *e, char *why,
                                    size_t why_len)
{
    uint64_t ids[DISC_IDS_MAX];
    const char *of[DISC_IDS_MAX];
    size_t n = 0;
    char shown[300], rule[200];
    for (size_t i = 0; i < e->n_sinks; i++) {
        const struct disc_sink *k = &e->sinks[i];
        const char *eps[2] = { k->endpoint, k->control };
        uint64_t eids[2] = { k->socket_id, k->control_id };
        for (int j = 0; j < 2; j++) {
            const char *ep = eps[j];
            if (ep == NULL)
                continue;
            safetext_copy(shown, sizeof shown, ep, strlen(ep));
            if (els_discovery_endpoint_check(ep, rule, sizeof rule) != 0) {
                snprintf(why, why_len, "%s \"%s\" %s",
                         j ? "control" : "endpoint", shown, rule);
                return DISC_UNTRUSTED;
            }
            if (!els_discovery_connectable(ep))
                continue;
            /* control=1 is served on the endpoint's own socket. */
            uint64_t id = eids[j];
            if (j == 1 && id == 0 && k->endpoint != NULL &&
                strcmp(ep, k->endpoint) == 0)
                id = k->socket_id;
            if (id == 0) {
                snprintf(why, why_len, "names no socket that proves %s "
                         "\"%s\" is the program's: not trusted",
                         j ? "control" : "endpoint", shown);
                return DISC_UNTRUSTED;
            }
            ids[n] = id;
            of[n++] = ep;
        }
    }
    uint64_t missing = 0;
    int r = els_discovery_holds_sockets((pid_t)e->pid, ids, n, &missing);
    if (r == -ESRCH)
        return DISC_STALE;
    if (r == -ENOENT) {
        const char *ep = "?";
        for (size_t i = 0; i < n; i++)
            if (ids[i] == missing)
                ep = of[i];
        safetext_copy(shown, sizeof shown, ep, strlen(ep));
        snprintf(why, why_len, "pid %ld no longer holds the socket of %s "
                 "(socket:[%" PRIu64 "]): it exec'd another program or "
                 "closed it: stale", e->pid, shown, missing);
        return DISC_STALE;
    }
    if (r != 0) {
        snprintf(why, why_len, "cannot list pid %ld's descriptors to check "
                 "that it still holds its sockets (%s): not trusted",
                 e->pid, strerror(-r));
        return DISC_UNTRUSTED;
    }
    return DISC_LIVE;
}

int disc_scan(struct disc_list *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    char path[PATH_MAX];
    if (disc_dir_path(path, sizeof path) != 0) {
        snprintf(err, err_len, "the discovery directory's path is too long");
        return -ENAMETOOLONG;
    }
    char why[600];
    int dfd = els_discovery_dir_open(false, why, sizeof why);
    if (dfd == -ENOENT)
        return 0;
    if (dfd < 0) {
        safetext_copy(err, err_len, why, strlen(why));
        return dfd;
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
        size_t len = strlen(de->d_name), sl = strlen(ELS_DISCOVERY_SUFFIX);
        if (len <= sl || strcmp(de->d_name + len - sl, ELS_DISCOVERY_SUFFIX) != 0)
            continue;
        struct stat fst;
        char *text = disc_read(dfd, de->d_name, &fst, why, sizeof why);
        if (text == NULL) {
            if (why[0] != '\0')
                disc_note(out, path, de->d_name, "%s", why);
            continue;
        }
        struct disc_entry e;
        int r = disc_parse(text, &e);
        free(text);
        if (r == -EPROTONOSUPPORT)
            disc_note(out, path, de->d_name, "not of format \"%s\" (a "
                      "library of another version wrote it): not trusted",
                      ELS_DISCOVERY_MAGIC);
        if (r != 0)
            continue;           /* not ours to judge or remove */
        uint64_t start = 0;
        char expect[64];
        snprintf(expect, sizeof expect, "%ld" ELS_DISCOVERY_SUFFIX, e.pid);
        int pr = els_discovery_proc_start((pid_t)e.pid, &start);
        enum disc_verdict v = DISC_STALE;
        why[0] = '\0';
        if (strcmp(expect, de->d_name) == 0 && pr != -ENOENT &&
            (pr != 0 || start == e.start)) {
            v = disc_judge(&e, why, sizeof why);
            /* The same process before and after its descriptors were
             * listed: a pid reused meanwhile is stale, not a proof. */
            if (v == DISC_LIVE && pr == 0 &&
                (els_discovery_proc_start((pid_t)e.pid, &start) != 0 ||
                 start != e.start))
                v = DISC_STALE;
        }
        if (v != DISC_LIVE) {
            /* Gone, its pid given to a later process, or no longer
             * holding its sockets: stale, removed; else left alone. */
            if (v == DISC_STALE)
                disc_remove_stale(dfd, de->d_name, &fst);
            if (why[0] != '\0')
                disc_note(out, path, de->d_name, "%s", why);
            disc_entry_free(&e);
            continue;
        }
        struct disc_entry *nv = realloc(out->v, (out->n + 1) * sizeof *nv);
        if (nv == NULL) {
            disc_entry_free(&e);
            break;
        }
        out->v = nv;
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
    for (size_t i = 0; i < l->n_notes; i++)
        free(l->notes[i].text);
    free(l->notes);
    memset(l, 0, sizeof *l);
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
    const struct disc_note *note = NULL;
    for (size_t i = 0; by_pid && i < l.n_notes && note == NULL; i++)
        if (l.notes[i].pid == pid)
            note = &l.notes[i];
    if (found == NULL && note != NULL) {
        snprintf(err, err_len, "%s: its entry is left out: %s", shown,
                 note->text);
        r = -ENOENT;
    } else if (found == NULL) {
        int off = snprintf(err, err_len, "%s: no such program announced in "
                           "%s (see 'eventlog-sink ps')", shown, path);
        if (l.n_notes > 0 && off > 0 && (size_t)off < err_len)
            snprintf(err + off, err_len - (size_t)off, "; %zu entries were "
                     "left out, the first: %s", l.n_notes, l.notes[0].text);
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
