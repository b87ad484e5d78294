/*
 * discovery.c: the rules of the discovery directory (discovery.h) that
 * the library's writer (lib/writer/announce.c) and the tool's reader
 * (tools/discover.c) share: the directory's path and when it and an
 * entry are trusted, the line escapes, the start time that tells a
 * process from a later one, and the proof that a program still holds its
 * sockets.  Not its job: writing entries (announce.c) or parsing and
 * judging them as a whole (discover.c), which both apply these rules.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eventlog-sink/discovery.h"

/*
 * Note [Announce files]
 * ~~~~~~~~~~~~~~~~~~~~~
 * One file per process, PID.announce, in a directory only this user can
 * use: $XDG_RUNTIME_DIR/eventlog-sink (the session's private runtime
 * directory), else ${TMPDIR:-/tmp}/eventlog-sink-UID.  The temp
 * directory is shared, so another user could make that name first: both
 * ends open the directory with O_NOFOLLOW and use it only if it is a
 * directory owned by the user with no group or other bits; anything else
 * is refused (the writer runs unannounced, with a warning; a reader says
 * why and lists nothing).  A reader also trusts an entry only when it is
 * a regular file of the user's that no one else may write (root could
 * put one in the directory): another entry is ignored, with a note.
 *
 * The format is lines of "KEY VALUE" (the first line is
 * ELS_DISCOVERY_MAGIC); in values, '%', bytes below 0x20 and 0x7f are
 * written %XX so that a line never breaks:
 *     pid PID
 *     start START      field 22 of /proc/PID/stat (clock ticks)
 *     name NAME        the base name of argv[0]
 *     arg ARG          once per argument, argv[0] first
 *   then per announced writer, a group starting with "sink":
 *     sink SPEC        the spec as given
 *     endpoint EP      where a consumer connects ("unix:/path", ...)
 *     socket ID        the listening socket at EP (Note [Proof of life])
 *     control CTL      the control socket as a spec, or "-" when off
 *     control-socket ID  CTL's own socket, when it is not EP's
 * Paths are absolute: a reader runs in a working directory of its own,
 * where a relative unix:app.sock would name whatever socket another user
 * put there, so the sinks resolve them when they bind and a reader
 * refuses an entry that names a relative unix: path.
 *
 * A pid is reused after its process dies, so a reader trusts an entry
 * only while /proc/PID/stat's start time equals START; other entries are
 * stale (a program killed with SIGKILL leaves one) and any reader may
 * remove them.
 *
 * Note [Proof of life]
 * ~~~~~~~~~~~~~~~~~~~~
 * The start time survives execve(): a program that exec's another keeps
 * its pid and its start time, but its sockets (all close-on-exec) and the
 * library are gone, and with them the code that would remove the entry.
 * Its TCP port is free for any local user to bind, and its socket file
 * stays behind in a directory others may write; a reader that trusted
 * the entry would hand that user's stream to ps, recv, serve --all.  So
 * the entry names each listening socket by its identity, the inode
 * number that /proc/PID/fd shows as socket:[ID], and a reader trusts the
 * entry only while the process holds every socket a reader would connect
 * to (a unix: or tcp: endpoint, and the control socket).  Only root and
 * the process's own user can list its descriptors, which is who may read
 * the entry anyway.  An entry whose process is there but does not hold
 * them is as stale as one whose pid was reused; one whose descriptors
 * cannot be listed is not trusted and left alone.  Socket identities are
 * not reused while a process holds the socket, and the counter behind
 * them does not come round for a long time after.
 */

int els_discovery_dir_path(char *buf, size_t len)
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

int els_discovery_judge(const struct stat *st, uid_t self, bool dir,
                         char *why, size_t why_len)
{
    if (dir && !S_ISDIR(st->st_mode)) {
        snprintf(why, why_len, "not a directory: refused");
        return -ENOTDIR;
    }
    if (!dir && !S_ISREG(st->st_mode)) {
        snprintf(why, why_len, "not a regular file: not trusted");
        return -EINVAL;
    }
    if (st->st_uid != self) {
        snprintf(why, why_len, "belongs to uid %lu, not to this user (uid "
                 "%lu): %s", (unsigned long)st->st_uid, (unsigned long)self,
                 dir ? "refused" : "not trusted");
        return -EPERM;
    }
    mode_t loose = dir ? 077 : 022;
    if ((st->st_mode & loose) != 0) {
        snprintf(why, why_len, dir ? "has mode %03o: others may use it "
                                     "(chmod 700): refused"
                                   : "has mode %03o: others may write it: "
                                     "not trusted",
                 (unsigned)(st->st_mode & 0777));
        return -EACCES;
    }
    return 0;
}

int els_discovery_dir_open(bool create, char *err, size_t err_len)
{
    char path[PATH_MAX];
    if (els_discovery_dir_path(path, sizeof path) != 0) {
        snprintf(err, err_len, "the discovery directory's path is too long");
        return -ENAMETOOLONG;
    }
    if (create && mkdir(path, 0700) != 0 && errno != EEXIST) {
        int e = errno;
        snprintf(err, err_len, "%s: cannot create: %s", path, strerror(e));
        return -e;
    }
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        struct stat st;
        if ((e == ELOOP || e == ENOTDIR) && lstat(path, &st) == 0 &&
            S_ISLNK(st.st_mode)) {
            snprintf(err, err_len, "%s is a symbolic link: refused", path);
            return -ELOOP;
        }
        snprintf(err, err_len, "%s: %s", path, strerror(e));
        return -e;
    }
    struct stat st;
    char why[200];
    if (fstat(fd, &st) != 0) {
        int e = errno;
        snprintf(err, err_len, "%s: %s", path, strerror(e));
        close(fd);
        return -e;
    }
    int r = els_discovery_judge(&st, geteuid(), true, why, sizeof why);
    if (r != 0) {
        snprintf(err, err_len, "%s %s", path, why);
        close(fd);
        return r;
    }
    return fd;
}

int els_discovery_proc_start(pid_t pid, uint64_t *start)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? -ENOENT : -errno;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
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

uint64_t els_discovery_socket_id(int fd)
{
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode))
        return 0;
    return (uint64_t)st.st_ino;
}

/* The id of a /proc/PID/fd link's target "socket:[ID]", or 0. */
static uint64_t discovery_link_socket(const char *target)
{
    static const char pfx[] = "socket:[";
    if (strncmp(target, pfx, sizeof pfx - 1) != 0)
        return 0;
    const char *p = target + sizeof pfx - 1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(p, &end, 10);
    if (end == p || errno != 0 || strcmp(end, "]") != 0)
        return 0;
    return v;
}

/* See Note [Proof of life]. */
int els_discovery_holds_sockets(pid_t pid, const uint64_t *ids, size_t n,
                                 uint64_t *missing)
{
    enum { MAX_IDS = 64 };
    if (n == 0)
        return 0;           /* nothing to prove */
    if (n > MAX_IDS)
        return -E2BIG;
    bool found[MAX_IDS] = { false };
    size_t left = n;
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/fd", (long)pid);
    int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return errno == ENOENT ? -ESRCH : -errno;
    DIR *d = fdopendir(dfd);
    if (d == NULL) {
        int e = errno;
        close(dfd);
        return -e;
    }
    struct dirent *de;
    while (left > 0 && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char target[64];
        ssize_t k = readlinkat(dirfd(d), de->d_name, target,
                               sizeof target - 1);
        if (k <= 0)
            continue;       /* closed meanwhile, or not a socket's name */
        target[k] = '\0';
        uint64_t id = discovery_link_socket(target);
        for (size_t i = 0; id != 0 && i < n; i++) {
            if (!found[i] && ids[i] == id) {
                found[i] = true;
                left--;
            }
        }
    }
    closedir(d);
    for (size_t i = 0; i < n; i++) {
        if (!found[i]) {
            if (missing != NULL)
                *missing = ids[i];
            return -ENOENT;
        }
    }
    return 0;
}

int els_discovery_endpoint_check(const char *endpoint, char *why,
                                  size_t why_len)
{
    if (strncmp(endpoint, "unix:", 5) == 0 && endpoint[5] != '/') {
        snprintf(why, why_len, "is a relative path, which would name a "
                 "socket in the reader's working directory: not trusted");
        return -EINVAL;
    }
    return 0;
}

bool els_discovery_connectable(const char *endpoint)
{
    return strncmp(endpoint, "unix:", 5) == 0 ||
           strncmp(endpoint, "tcp:", 4) == 0;
}

size_t els_discovery_escape(unsigned char c, char out[4])
{
    if (c >= 0x20 && c != 0x7f && c != '%')
        return 0;
    snprintf(out, 4, "%%%02X", c);
    return 3;
}

static int discovery_hex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

void els_discovery_unescape(char *s)
{
    char *o = s;
    for (char *p = s; *p != '\0'; p++) {
        int hi, lo;
        if (*p == '%' && (hi = discovery_hex(p[1])) >= 0 &&
            (lo = discovery_hex(p[2])) >= 0) {
            *o++ = (char)(hi * 16 + lo);
            p += 2;
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
}
