/*
 * side.c: the aggregates' record files (side.h).
 */
#include "timeline/side.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int tl_side_init(struct tl_side *s, size_t rec)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    if (rec < 8)
        return -EINVAL;
    s->rec = rec;
    s->tail = malloc(TL_SIDE_PAGE * rec);
    return s->tail ? 0 : -ENOMEM;
}

void tl_side_fini(struct tl_side *s)
{
    if (s->fd >= 0)
        close(s->fd);
    free(s->tail);
    free(s->pages);
    memset(s, 0, sizeof *s);
    s->fd = -1;
}

/* An unlinked file: nothing to clean up whatever ends the process. */
static int side_file(void)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
        return fd >= 0 ? fd : -errno;
    char path[4096];
    size_t n = strlen(dir);
    if (n + 32 > sizeof path)
        return -ENAMETOOLONG;
    memcpy(path, dir, n);
    memcpy(path + n, "/eventlog-side-XXXXXX", 22);
    fd = mkostemp(path, O_CLOEXEC);
    if (fd < 0)
        return -errno;
    unlink(path);
    return fd;
}

static int write_all(int fd, const uint8_t *p, size_t n, uint64_t off)
{
    while (n) {
        ssize_t w = pwrite(fd, p, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -errno;
        p += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

int tl_side_append(struct tl_side *s, const void *rec)
{
    if (s->error) {
        s->lost++;
        return s->error;
    }
    uint64_t page = s->n / TL_SIDE_PAGE;
    size_t in = (size_t)(s->n % TL_SIDE_PAGE);
    if (page >= s->pages_cap) {
        size_t c = s->pages_cap ? s->pages_cap * 2 : 16;
        struct tl_side_page *v = realloc(s->pages, c * sizeof *v);
        if (!v) {
            s->lost++;
            return -ENOMEM;
        }
        s->pages = v;
        s->pages_cap = c;
    }
    uint64_t key, key2 = 0;
    memcpy(&key, rec, sizeof key);
    if (s->rec >= 16)
        memcpy(&key2, (const uint8_t *)rec + 8, sizeof key2);
    struct tl_side_page *pg = &s->pages[page];
    if (in == 0) {
        pg->lo = pg->hi = key;
        pg->lo2 = key2;
    } else {
        if (key < pg->lo)
            pg->lo = key;
        else if (key > pg->hi)
            pg->hi = key;
        if (key2 < pg->lo2)
            pg->lo2 = key2;
    }
    memcpy(s->tail + in * s->rec, rec, s->rec);
    s->n++;
    if (in + 1 == TL_SIDE_PAGE) {
        int rc = 0;
        if (s->fd < 0) {
            rc = side_file();
            if (rc >= 0)
                s->fd = rc, rc = 0;
        }
        if (rc == 0)
            rc = write_all(s->fd, s->tail, TL_SIDE_PAGE * s->rec,
                           page * TL_SIDE_PAGE * s->rec);
        if (rc < 0) {
            /* The page cannot be kept: the aggregates stop growing and
             * say so (lost), rather than answer from a hole. */
            s->error = rc;
            s->lost += TL_SIDE_PAGE;
            s->n -= TL_SIDE_PAGE;
            return rc;
        }
    }
    return 0;
}

int tl_side_read(struct tl_side *s, uint64_t i, uint64_t n, void *buf)
{
    uint8_t *out = buf;
    if (i + n > s->n)
        return -ERANGE;
    uint64_t ondisk = s->n / TL_SIDE_PAGE * TL_SIDE_PAGE;
    while (n) {
        if (i >= ondisk) {
            memcpy(out, s->tail + (i - ondisk) * s->rec, n * s->rec);
            return 0;
        }
        uint64_t k = ondisk - i < n ? ondisk - i : n;
        size_t len = (size_t)(k * s->rec);
        uint64_t off = i * s->rec;
        for (size_t got = 0; got < len;) {
            ssize_t r = pread(s->fd, out + got, len - got, (off_t)(off + got));
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                return r < 0 ? -errno : -EIO;
            got += (size_t)r;
        }
        out += len;
        i += k;
        n -= k;
    }
    return 0;
}

uint64_t tl_side_mem(const struct tl_side *s)
{
    return TL_SIDE_PAGE * s->rec + s->pages_cap * sizeof *s->pages;
}

uint64_t tl_side_disk(const struct tl_side *s)
{
    return s->n / TL_SIDE_PAGE * TL_SIDE_PAGE * s->rec;
}

/* Both walks: pages that can hold a record with key in [t0, t1] (and,
 * for an overlap, second word <= t2), each such record. */
static int side_walk(struct tl_side *s, uint64_t t0, uint64_t t1, uint64_t t2,
                     bool overlap, void *buf,
                     int (*fn)(void *ctx, uint64_t i, const void *rec), void *ctx)
{
    uint64_t np = tl_side_npages(s);
    for (uint64_t p = 0; p < np; p++) {
        if (s->pages[p].hi < t0 || s->pages[p].lo > t1
            || (overlap && s->pages[p].lo2 > t2))
            continue;
        uint64_t first = p * TL_SIDE_PAGE;
        uint64_t n = s->n - first < TL_SIDE_PAGE ? s->n - first : TL_SIDE_PAGE;
        int rc = tl_side_read(s, first, n, buf);
        if (rc < 0)
            return rc;
        const uint8_t *r = buf;
        for (uint64_t j = 0; j < n; j++, r += s->rec) {
            uint64_t key, key2;
            memcpy(&key, r, sizeof key);
            if (key < t0 || key > t1)
                continue;
            if (overlap) {
                memcpy(&key2, r + 8, sizeof key2);
                if (key2 > t2)
                    continue;
            }
            rc = fn(ctx, first + j, r);
            if (rc)
                return rc;
        }
    }
    return 0;
}

int tl_side_walk(struct tl_side *s, uint64_t t0, uint64_t t1, void *buf,
                 int (*fn)(void *ctx, uint64_t i, const void *rec), void *ctx)
{
    return side_walk(s, t0, t1, 0, false, buf, fn, ctx);
}

int tl_side_walk_overlap(struct tl_side *s, uint64_t t0, uint64_t t1, void *buf,
                         int (*fn)(void *ctx, uint64_t i, const void *rec), void *ctx)
{
    if (s->rec < 16)
        return -EINVAL;
    return side_walk(s, t0, UINT64_MAX, t1, true, buf, fn, ctx);
}
