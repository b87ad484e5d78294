/*
 * rotate.c: "rotate:", a custom eventlog sink written against the public
 * headers only.  It writes one stream into numbered files in a directory,
 * DIR/PREFIX.NNNNNN.eventlog, starting a new file before the current one
 * would grow past size= and removing the oldest files past keep=, so a
 * service can run with its eventlog on for weeks in bounded disk space.
 * Every file is an eventlog on its own: it starts with the stream's header
 * chunk and holds whole blocks; only the last file of a stream ends with
 * DATA_END.  Numbers continue from the highest one in DIR, across restarts
 * of the eventlog and of the program, and no existing file is ever opened
 * for writing.  The spec is documented in rotate.h.
 *
 * Not its job: queueing, threads and loss accounting (the library's writer
 * does them and counts whatever this sink fails to take), compression,
 * rotation by time, or fsync (a crash may lose what the kernel has not
 * written back, as with the RTS's own eventlog file).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <eventlog-sink.h>

#include "rotate.h"

#define ROTATE_DEFAULT_SIZE ((uint64_t)256 << 20)
#define ROTATE_DEFAULT_MODE 0600
#define ROTATE_MAX_KEEP 1000000ul
/* Room for the number and ".eventlog" in a NAME_MAX (255) file name. */
#define ROTATE_PREFIX_MAX 200
#define ROTATE_SUFFIX ".eventlog"
/* A file created by another process between our scan and our create
 * moves us to the next number; give up after this many. */
#define ROTATE_CREATE_TRIES 100

struct rotate_sink {
    int dir_fd;             /* DIR, opened once: later renames of the path
                               do not send files elsewhere */
    char *dir;              /* DIR as given, for messages */
    char *prefix;
    uint64_t size;          /* start a new file before passing this */
    unsigned long keep;     /* files to keep; 0: remove none */
    mode_t mode;

    int fd;                 /* the current file, or -1 */
    uint64_t number;        /* its number */
    uint64_t file_bytes;    /* bytes in it, all whole units */
    uint64_t file_blocks;   /* units after the header in it */

    /* The stream's header chunk, written first into every file. */
    uint8_t *header;
    size_t header_len;

    /* A failure was reported on stderr; stay quiet until one succeeds. */
    bool failing;
};

// ---------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------

/* Control characters (a spec may carry %0A) would break the one-line
 * promise: show them as '?'. */
static void rotate_one_line(char *s)
{
    for (; *s != '\0'; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = '?';
}

static int rotate_fail(const struct els_sink_args *args, int code,
                       const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Write one line into args->err, return code. */
static int rotate_fail(const struct els_sink_args *args, int code,
                       const char *fmt, ...)
{
    if (args->err != NULL && args->err_len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(args->err, args->err_len, fmt, ap);
        va_end(ap);
        rotate_one_line(args->err);
    }
    return code;
}

static void rotate_report(struct rotate_sink *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A failure on the writer thread: the writer only learns the code (and
 * counts the unit as lost), so say here which file it concerned.  Once per
 * run of failures, so a full disk does not flood stderr.  To stderr
 * directly: <eventlog-sink/sink.h> offers a sink no way into the
 * application's log hook. */
static void rotate_report(struct rotate_sink *r, const char *fmt, ...)
{
    if (r->failing)
        return;
    r->failing = true;
    char line[768];
    int n = snprintf(line, sizeof line, "eventlog-sink: rotate: ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    rotate_one_line(line);
    size_t len = strlen(line);
    line[len++] = '\n';     /* snprintf left room for it */
    /* One write: lines from other threads do not interleave with it. */
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

// ---------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------

static int rotate_options(struct rotate_sink *r, const struct els_sink_args *args)
{
    const char *v;
    r->size = ROTATE_DEFAULT_SIZE;
    if ((v = els_sink_option(args, "size")) != NULL) {
        int rc = els_sink_parse_size(v, &r->size);
        if (rc == -ERANGE)
            return rotate_fail(args, ELS_EINVAL, "spec \"%s\": size=%s is "
                               "too large", args->spec, v);
        if (rc < 0)
            return rotate_fail(args, ELS_EINVAL, "spec \"%s\": size=%s is not "
                               "a size (digits with an optional K, M or G, "
                               "e.g. size=256M)", args->spec, v);
        if (r->size == 0)
            return rotate_fail(args, ELS_EINVAL, "spec \"%s\": size=0: a file "
                               "must be allowed at least one byte",
                               args->spec);
    }

    r->keep = 0;
    if ((v = els_sink_option(args, "keep")) != NULL) {
        char *end;
        errno = 0;
        unsigned long k = v[0] >= '0' && v[0] <= '9' ? strtoul(v, &end, 10) : 0;
        if (v[0] < '0' || v[0] > '9' || *end != '\0' || errno != 0 ||
            k > ROTATE_MAX_KEEP)
            return rotate_fail(args, ELS_EINVAL, "spec \"%s\": keep=%s is not "
                               "a number of files from 1 to %lu", args->spec,
                               v, ROTATE_MAX_KEEP);
        if (k == 0)
            return rotate_fail(args, ELS_EINVAL, "spec \"%s\": keep=0 would "
                               "remove the file being written; give keep=1 "
                               "or more, or leave keep out to remove none",
                               args->spec);
        r->keep = k;
    }

    r->mode = ROTATE_DEFAULT_MODE;
    if ((v = els_sink_option(args, "mode")) != NULL) {
        char *end;
        errno = 0;
        unsigned long m = v[0] >= '0' && v[0] <= '7' ? strtoul(v, &end, 8) : 0;
        if (v[0] < '0' || v[0] > '7' || *end != '\0' || errno != 0 || m > 0777)
            return rotate_fail(args, ELS_EINVAL, "spec \"%s\": mode=%s is not "
                               "octal permission bits from 0 to 0777",
                               args->spec, v);
        r->mode = (mode_t)m;
    }
    return 0;
}

/* Split DIR/PREFIX ("PREFIX" alone means the working directory). */
static int rotate_address(struct rotate_sink *r, const struct els_sink_args *args)
{
    const char *a = args->address;
    const char *slash = strrchr(a, '/');
    const char *prefix = slash != NULL ? slash + 1 : a;
    if (prefix[0] == '\0')
        return rotate_fail(args, ELS_EINVAL, "spec \"%s\": no file name "
                           "prefix after the directory (e.g. "
                           "rotate:/var/log/app/app)", args->spec);
    if (strcmp(prefix, ".") == 0 || strcmp(prefix, "..") == 0)
        return rotate_fail(args, ELS_EINVAL, "spec \"%s\": the file name "
                           "prefix cannot be \"%s\"", args->spec, prefix);
    if (strlen(prefix) > ROTATE_PREFIX_MAX)
        return rotate_fail(args, ELS_EINVAL, "spec \"%s\": the file name "
                           "prefix is longer than %d bytes", args->spec,
                           ROTATE_PREFIX_MAX);
    if (slash == NULL)
        r->dir = strdup(".");
    else if (slash == a)
        r->dir = strdup("/");
    else
        r->dir = strndup(a, (size_t)(slash - a));
    r->prefix = strdup(prefix);
    if (r->dir == NULL || r->prefix == NULL)
        return rotate_fail(args, ELS_ENOMEM, "rotate: out of memory");
    return 0;
}

/* Open DIR itself.  A symbolic link is refused: whoever can change the
 * link could send the files, and the removals past keep=, elsewhere. */
static int rotate_open_dir(struct rotate_sink *r, const struct els_sink_args *args)
{
    struct stat st;
    if (lstat(r->dir, &st) != 0)
        return rotate_fail(args, -errno, "rotate: directory %s: %s", r->dir,
                           errno == ENOENT ? "does not exist" : strerror(errno));
    if (S_ISLNK(st.st_mode))
        return rotate_fail(args, ELS_EINVAL, "rotate: %s is a symbolic link; "
                           "give the directory it points to", r->dir);
    if (!S_ISDIR(st.st_mode))
        return rotate_fail(args, -ENOTDIR, "rotate: %s is not a directory",
                           r->dir);
    /* O_NOFOLLOW: a link swapped in since the lstat() fails here. */
    r->dir_fd = open(r->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (r->dir_fd < 0)
        return rotate_fail(args, -errno, "rotate: cannot open directory %s: "
                           "%s", r->dir, strerror(errno));
    return 0;
}

// ---------------------------------------------------------------------------
// The files in DIR
// ---------------------------------------------------------------------------

/* If name is PREFIX.<digits>.eventlog (at least 6 digits), its number. */
static bool rotate_match(const struct rotate_sink *r, const char *name,
                         uint64_t *number)
{
    size_t plen = strlen(r->prefix);
    if (strncmp(name, r->prefix, plen) != 0 || name[plen] != '.')
        return false;
    const char *p = name + plen + 1;
    uint64_t v = 0;
    size_t digits = 0;
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
        if (digits == 19)
            return false;   /* not one of ours: we never get near */
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (digits < 6 || strcmp(p, ROTATE_SUFFIX) != 0)
        return false;
    *number = v;
    return true;
}

static void rotate_name(const struct rotate_sink *r, uint64_t number,
                        char *buf, size_t len)
{
    snprintf(buf, len, "%s.%06" PRIu64 ROTATE_SUFFIX, r->prefix, number);
}

static int rotate_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The numbers of PREFIX's files in DIR.  All of them (any file type) in
 * *max, so a new number never meets an old name; those of regular files,
 * sorted, in *list (if list != NULL; the caller frees it). */
static int rotate_scan(const struct rotate_sink *r, uint64_t *max,
                       uint64_t **list, size_t *n)
{
    /* A descriptor of its own: readdir's position is per open file. */
    int fd = openat(r->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    DIR *d = fdopendir(fd);
    if (d == NULL) {
        int e = errno;
        close(fd);
        return -e;
    }
    uint64_t *nums = NULL;
    size_t count = 0, cap = 0;
    int rc = 0;
    *max = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        uint64_t num;
        if (!rotate_match(r, e->d_name, &num))
            continue;
        if (num > *max)
            *max = num;
        if (list == NULL)
            continue;
        struct stat st;
        if (fstatat(r->dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode))
            continue;
        if (count == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            uint64_t *p = realloc(nums, ncap * sizeof *p);
            if (p == NULL) {
                rc = -ENOMEM;
                break;
            }
            nums = p;
            cap = ncap;
        }
        nums[count++] = num;
    }
    closedir(d);
    if (rc != 0 || list == NULL) {
        free(nums);
        return rc;
    }
    qsort(nums, count, sizeof *nums, rotate_cmp_u64);
    *list = nums;
    *n = count;
    return 0;
}

/* Remove the oldest regular files of PREFIX while more than keep remain.
 * The current file is the newest, so it stays. */
static void rotate_prune(struct rotate_sink *r)
{
    if (r->keep == 0)
        return;
    uint64_t max, *nums = NULL;
    size_t n = 0;
    int rc = rotate_scan(r, &max, &nums, &n);
    if (rc < 0) {
        rotate_report(r, "cannot list %s to remove old files: %s", r->dir,
                      strerror(-rc));
        return;
    }
    for (size_t i = 0; i + r->keep < n; i++) {
        char name[256];
        if (nums[i] == r->number)
            continue;
        rotate_name(r, nums[i], name, sizeof name);
        if (unlinkat(r->dir_fd, name, 0) != 0 && errno != ENOENT)
            rotate_report(r, "cannot remove %s/%s: %s", r->dir, name,
                          strerror(errno));
    }
    free(nums);
}

/* Create the next file: one number past the highest in DIR, never an
 * existing name (O_EXCL), never through a link (O_NOFOLLOW).  On failure
 * one line in why. */
static int rotate_create(struct rotate_sink *r, char *why, size_t why_len)
{
    uint64_t max;
    int rc = rotate_scan(r, &max, NULL, NULL);
    if (rc < 0) {
        snprintf(why, why_len, "cannot list %s: %s", r->dir, strerror(-rc));
        return rc;
    }
    char name[256];
    for (int tries = 0; tries < ROTATE_CREATE_TRIES; tries++) {
        uint64_t number = max + 1 + (uint64_t)tries;
        rotate_name(r, number, name, sizeof name);
        int fd = openat(r->dir_fd, name,
                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC |
                            O_NOCTTY,
                        r->mode);
        if (fd >= 0) {
            r->fd = fd;
            r->number = number;
            r->file_bytes = 0;
            r->file_blocks = 0;
            return 0;
        }
        if (errno != EEXIST) {
            rc = -errno;
            snprintf(why, why_len, "cannot create %s/%s: %s", r->dir, name,
                     strerror(errno));
            return rc;
        }
    }
    snprintf(why, why_len, "cannot create %s/%s: %d newer names were taken "
             "while trying", r->dir, name, ROTATE_CREATE_TRIES);
    return -EEXIST;
}

// ---------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------

/* Append len bytes to the current file, all or nothing: after a failure
 * (ENOSPC) the file is cut back, so it stays whole units.  EFBIG in a file
 * that holds blocks is not reported: the caller moves to the next file. */
static int rotate_append(struct rotate_sink *r, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(r->fd, p + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int rc = n < 0 ? -errno : -EIO;
            char name[256];
            rotate_name(r, r->number, name, sizeof name);
            if (rc != -EFBIG || r->file_blocks == 0)
                rotate_report(r, "cannot write %s/%s: %s", r->dir, name,
                              strerror(-rc));
            if (ftruncate(r->fd, (off_t)r->file_bytes) != 0 ||
                lseek(r->fd, (off_t)r->file_bytes, SEEK_SET) < 0)
                rotate_report(r, "cannot cut %s/%s back to whole units: %s",
                              r->dir, name, strerror(errno));
            return rc;
        }
        done += (size_t)n;
    }
    r->file_bytes += len;
    r->failing = false;
    return 0;
}

/* Close the current file; one with nothing in it goes. */
static void rotate_finish(struct rotate_sink *r)
{
    if (r->fd < 0)
        return;
    if (r->file_bytes == 0) {
        char name[256];
        rotate_name(r, r->number, name, sizeof name);
        (void)unlinkat(r->dir_fd, name, 0);
    }
    close(r->fd);
    r->fd = -1;
}

/* Start the next file with the header.  A file the header could not be
 * written to is removed, so no file without a header stays behind. */
static int rotate_next(struct rotate_sink *r)
{
    rotate_finish(r);
    char why[512];
    int rc = rotate_create(r, why, sizeof why);
    if (rc < 0) {
        rotate_report(r, "%s", why);
        return rc;
    }
    rc = rotate_append(r, r->header, r->header_len);
    if (rc < 0) {
        rotate_finish(r);
        return rc;
    }
    rotate_prune(r);
    return 0;
}

/* The units, by their first bytes: the header chunk starts with the
 * "hdrb" marker, DATA_END is the 16-bit tag 0xFFFF alone; anything else
 * is one or more blocks. */
static bool rotate_is_header(const uint8_t *p, size_t len)
{
    return len >= 4 && memcmp(p, "hdrb", 4) == 0;
}

static bool rotate_is_data_end(const uint8_t *p, size_t len)
{
    return len == 2 && p[0] == 0xff && p[1] == 0xff;
}

/* The header chunk comes first in a stream.  The writer sends it again if
 * it could not be taken (say the directory was full), so take the latest
 * copy, and write it into a current file that has no blocks yet. */
static int rotate_take_header(struct rotate_sink *r, const uint8_t *p, size_t len)
{
    uint8_t *copy = malloc(len);
    if (copy == NULL)
        return -ENOMEM;
    memcpy(copy, p, len);
    free(r->header);
    r->header = copy;
    r->header_len = len;
    if (r->fd >= 0 && r->file_blocks == 0) {
        if (r->file_bytes > 0) {
            if (ftruncate(r->fd, 0) != 0 || lseek(r->fd, 0, SEEK_SET) < 0)
                return -errno;
            r->file_bytes = 0;
        }
        int rc = rotate_append(r, r->header, r->header_len);
        if (rc == 0)
            rotate_prune(r);    /* the file open() made counts from now */
        return rc;
    }
    return rotate_next(r);
}

static int rotate_write(void *sink, const void *buf, size_t len)
{
    struct rotate_sink *r = sink;
    const uint8_t *p = buf;
    if (rotate_is_header(p, len))
        return rotate_take_header(r, p, len);
    if (r->header == NULL)
        return -EPROTO;     /* the contract puts the header first */
    /* DATA_END stays with the blocks it ends, whatever the size. */
    bool full = r->file_blocks > 0 && r->file_bytes + len > r->size &&
                !rotate_is_data_end(p, len);
    if (r->fd < 0 || full) {
        int rc = rotate_next(r);
        if (rc < 0)
            return rc;
    }
    int rc = rotate_append(r, p, len);
    /* The file cannot grow (RLIMIT_FSIZE, the file system's largest file
     * size) before size= is reached: the next file can. */
    if (rc == -EFBIG && r->file_blocks > 0) {
        rc = rotate_next(r);
        if (rc == 0)
            rc = rotate_append(r, p, len);
    }
    if (rc < 0)
        return rc;
    r->file_blocks++;
    return 0;
}

// ---------------------------------------------------------------------------
// The ops table
// ---------------------------------------------------------------------------

static void rotate_close(void *sink)
{
    struct rotate_sink *r = sink;
    rotate_finish(r);
    if (r->dir_fd >= 0)
        close(r->dir_fd);
    free(r->header);
    free(r->dir);
    free(r->prefix);
    free(r);
}

/* Check the spec and create the first file now, so that a directory the
 * program cannot write stops it at start-up with one line, as the RTS's
 * own eventlog file does.  The file stays empty until the header comes. */
static int rotate_open(void **sink, const struct els_sink_args *args)
{
    struct rotate_sink *r = calloc(1, sizeof *r);
    if (r == NULL)
        return rotate_fail(args, ELS_ENOMEM, "rotate: out of memory");
    r->fd = -1;
    r->dir_fd = -1;
    int rc = rotate_options(r, args);
    if (rc == 0)
        rc = rotate_address(r, args);
    if (rc == 0)
        rc = rotate_open_dir(r, args);
    if (rc == 0) {
        char why[512];
        rc = rotate_create(r, why, sizeof why);
        if (rc < 0)
            rotate_fail(args, rc, "rotate: %s", why);
    }
    if (rc < 0) {
        rotate_close(r);
        return rc;
    }
    *sink = r;
    return 0;
}

static int rotate_endpoint(void *sink, char *buf, size_t len)
{
    const struct rotate_sink *r = sink;
    return snprintf(buf, len, "rotate:%s/%s", r->dir, r->prefix);
}

static const char *const rotate_option_names[] = { "size", "keep", "mode", NULL };

/* Designated initialisers: members this sink does not use stay NULL, and a
 * change of the table's versioning member is one line. */
static const struct els_sink_ops rotate_ops = {
    .struct_size = sizeof(struct els_sink_ops),
    .scheme = "rotate",
    .options = rotate_option_names,
    .style = ELS_SINK_CALLBACK,
    .open = rotate_open,
    .close = rotate_close,
    .write = rotate_write,
    .endpoint = rotate_endpoint,
};

int rotate_sink_register(void)
{
    return els_sink_register(&rotate_ops);
}

#if !defined(ROTATE_NO_CONSTRUCTOR)
/*
 * Runs before main(), and so before hs_init() parses
 * +RTS --eventlog-sink=rotate:...  libeventlog-sink forwards every scheme
 * registered with it to the RTS (registerEventLogSink), custom ones
 * included: see docs/CUSTOM-SINKS.md.  A failure has been
 * logged by els_sink_register(); the RTS then refuses a rotate: spec.
 * Build with -DROTATE_NO_CONSTRUCTOR to register from a C main instead.
 */
__attribute__((constructor)) static void rotate_sink_register_early(void)
{
    (void)rotate_sink_register();
}
#endif
