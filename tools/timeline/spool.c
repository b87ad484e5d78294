/*
 * spool.c: the bytes of one stream, on disk (see spool.h).  A live spool
 * is a ring of segment files named by their sequence number; the segment
 * table (offsets of each kept segment) is the only memory it holds.  A
 * file spool is one descriptor.
 */
#include "timeline/spool.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct tl_seg {
    uint64_t seq;               /* file name: %016llx */
    uint64_t start, len;        /* stream offsets it holds */
    int fd;                     /* O_RDWR, append position at len */
};

struct tl_spool {
    int file_fd;                /* file spool: the file; live: -1 */
    int dir_fd;                 /* live: the private directory */
    char dir[PATH_MAX];
    uint64_t max_bytes, seg_bytes;
    struct tl_seg *segs;        /* oldest first; head .. head+n */
    size_t nseg, capseg;
    uint64_t next_seq;
    uint64_t base, end;
    uint64_t segments_dropped, bytes_dropped;
};

static int seg_name(char *out, size_t n, uint64_t seq)
{
    return snprintf(out, n, "%016llx.seg", (unsigned long long)seq) < (int)n
        ? 0 : -ENAMETOOLONG;
}

int tl_spool_open_dir(struct tl_spool **out, const char *parent,
                      uint64_t max_bytes, uint64_t segment_bytes)
{
    *out = NULL;
    if (!max_bytes)
        max_bytes = TL_SPOOL_DEFAULT_MAX;
    if (!segment_bytes)
        segment_bytes = max_bytes < TL_SPOOL_DEFAULT_SEGMENT * 4
            ? (max_bytes / 4 ? max_bytes / 4 : 1) : TL_SPOOL_DEFAULT_SEGMENT;
    if (segment_bytes > max_bytes
        || max_bytes / segment_bytes > TL_SPOOL_SEGMENTS_MAX)
        return -EINVAL;
    struct stat st;
    if (lstat(parent, &st) < 0)
        return -errno;
    if (!S_ISDIR(st.st_mode))
        return -ENOTDIR;
    struct tl_spool *sp = calloc(1, sizeof *sp);
    if (!sp)
        return -ENOMEM;
    sp->file_fd = -1;
    sp->dir_fd = -1;
    if (snprintf(sp->dir, sizeof sp->dir, "%s/eventlog-timeline-XXXXXX",
                 parent) >= (int)sizeof sp->dir) {
        free(sp);
        return -ENAMETOOLONG;
    }
    /* mkdtemp makes the directory 0700 whatever the umask says. */
    if (!mkdtemp(sp->dir)) {
        int e = -errno;
        free(sp);
        return e;
    }
    sp->dir_fd = open(sp->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sp->dir_fd < 0) {
        int e = -errno;
        rmdir(sp->dir);
        free(sp);
        return e;
    }
    sp->max_bytes = max_bytes;
    sp->seg_bytes = segment_bytes;
    *out = sp;
    return 0;
}

int tl_spool_open_file(struct tl_spool **out, const char *path)
{
    *out = NULL;
    struct tl_spool *sp = calloc(1, sizeof *sp);
    if (!sp)
        return -ENOMEM;
    sp->dir_fd = -1;
    sp->file_fd = open(path, O_RDONLY | O_CLOEXEC);
    if (sp->file_fd < 0) {
        int e = -errno;
        free(sp);
        return e;
    }
    struct stat st;
    if (fstat(sp->file_fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        int e = S_ISREG(st.st_mode) ? -errno : -EINVAL;
        close(sp->file_fd);
        free(sp);
        return e;
    }
    sp->end = (uint64_t)st.st_size;
    *out = sp;
    return 0;
}

static void drop_oldest(struct tl_spool *sp)
{
    struct tl_seg *s = &sp->segs[0];
    char name[64];
    seg_name(name, sizeof name, s->seq);
    close(s->fd);
    unlinkat(sp->dir_fd, name, 0);
    sp->segments_dropped++;
    sp->bytes_dropped += s->len;
    sp->base = s->start + s->len;
    memmove(sp->segs, sp->segs + 1, (sp->nseg - 1) * sizeof *sp->segs);
    sp->nseg--;
}

void tl_spool_close(struct tl_spool *sp)
{
    if (!sp)
        return;
    if (sp->file_fd >= 0)
        close(sp->file_fd);
    while (sp->nseg)
        drop_oldest(sp);
    if (sp->dir_fd >= 0) {
        close(sp->dir_fd);
        rmdir(sp->dir);
    }
    free(sp->segs);
    free(sp);
}

static int new_segment(struct tl_spool *sp)
{
    if (sp->nseg == sp->capseg) {
        size_t c = sp->capseg ? sp->capseg * 2 : 16;
        struct tl_seg *v = realloc(sp->segs, c * sizeof *v);
        if (!v)
            return -ENOMEM;
        sp->segs = v;
        sp->capseg = c;
    }
    char name[64];
    seg_name(name, sizeof name, sp->next_seq);
    int fd = openat(sp->dir_fd, name,
                    O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    sp->segs[sp->nseg++] = (struct tl_seg){ .seq = sp->next_seq++,
                                            .start = sp->end, .fd = fd };
    return 0;
}

int tl_spool_append(struct tl_spool *sp, const void *buf, size_t len)
{
    if (sp->file_fd >= 0)
        return -EBADF;
    const char *p = buf;
    while (len) {
        struct tl_seg *cur = sp->nseg ? &sp->segs[sp->nseg - 1] : NULL;
        if (!cur || cur->len >= sp->seg_bytes) {
            /* Room for a whole new segment first: the bound holds on disk
             * at every moment, not only after the append. */
            while (sp->nseg && (sp->end - sp->base) + sp->seg_bytes > sp->max_bytes)
                drop_oldest(sp);
            int rc = new_segment(sp);
            if (rc < 0)
                return rc;
            cur = &sp->segs[sp->nseg - 1];
        }
        size_t n = len;
        if (n > sp->seg_bytes - cur->len)
            n = (size_t)(sp->seg_bytes - cur->len);
        ssize_t w = pwrite(cur->fd, p, n, (off_t)cur->len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        cur->len += (uint64_t)w;
        sp->end += (uint64_t)w;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

int tl_spool_refresh(struct tl_spool *sp)
{
    if (sp->file_fd < 0)
        return 0;
    struct stat st;
    if (fstat(sp->file_fd, &st) < 0)
        return -errno;
    sp->end = (uint64_t)st.st_size;
    return 0;
}

static long pread_full(int fd, void *buf, size_t len, uint64_t off)
{
    size_t got = 0;
    while (got < len) {
        ssize_t r = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (long)got;
}

long tl_spool_read(struct tl_spool *sp, uint64_t off, void *buf, size_t len)
{
    if (off < sp->base)
        return -ERANGE;
    if (off >= sp->end)
        return 0;
    if (len > sp->end - off)
        len = (size_t)(sp->end - off);
    if (sp->file_fd >= 0)
        return pread_full(sp->file_fd, buf, len, off);
    /* Segments are contiguous: find the first by binary search. */
    size_t lo = 0, hi = sp->nseg;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (sp->segs[mid].start <= off)
            lo = mid;
        else
            hi = mid;
    }
    size_t got = 0;
    for (size_t i = lo; i < sp->nseg && got < len; i++) {
        struct tl_seg *s = &sp->segs[i];
        uint64_t in = off + got - s->start;
        size_t n = len - got;
        if (n > s->len - in)
            n = (size_t)(s->len - in);
        long r = pread_full(s->fd, (char *)buf + got, n, in);
        if (r < 0)
            return r;
        got += (size_t)r;
        if ((size_t)r < n)
            break;
    }
    return (long)got;
}

uint64_t tl_spool_base(const struct tl_spool *sp) { return sp->base; }
uint64_t tl_spool_end(const struct tl_spool *sp) { return sp->end; }
const char *tl_spool_dir(const struct tl_spool *sp)
{
    return sp->file_fd >= 0 ? "" : sp->dir;
}

void tl_spool_stats(const struct tl_spool *sp, struct tl_spool_stats *out)
{
    *out = (struct tl_spool_stats){
        .base = sp->base, .end = sp->end,
        .bytes_on_disk = sp->file_fd >= 0 ? 0 : sp->end - sp->base,
        .segments = sp->nseg, .segments_dropped = sp->segments_dropped,
        .bytes_dropped = sp->bytes_dropped,
    };
}
