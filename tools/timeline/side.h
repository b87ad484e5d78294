/*
 * side.h: an append-only file of fixed-size records beside the spool,
 * for the timeline's aggregates (aggr.h): heap censuses and their bands,
 * spans, cost-centre samples.  Each record starts with a 64-bit key (a
 * time); the records are kept in the order appended, and for every page
 * of TL_SIDE_PAGE records the least and greatest key (and the least of
 * the records' second 64-bit word, when they have one) is kept in memory,
 * so that a window [t0,t1] reads only the pages that can hold its keys
 * even when the keys arrive out of order (blocks of different
 * capabilities), and a walk for intervals (key the end, second word the
 * start: spans) reads only the pages that can hold one overlapping it.  The last, unfinished page is in memory; full pages go
 * to an unlinked temporary file (O_TMPFILE in $TMPDIR or /tmp, mode
 * 0600), created at the first full page.  Not its job: what the records
 * mean, locking.  Errors: 0 or a negative errno.
 */
#ifndef ELS_TL_SIDE_H
#define ELS_TL_SIDE_H

#include <stddef.h>
#include <stdint.h>

#define TL_SIDE_PAGE 4096u         /* records a page */

struct tl_side_page {
    uint64_t lo, hi;               /* least and greatest key */
    uint64_t lo2;                  /* least second word (rec >= 16) */
};

struct tl_side {
    int fd;                        /* -1 until the first full page */
    size_t rec;                    /* bytes a record */
    uint64_t n;                    /* records appended */
    uint8_t *tail;                 /* the unfinished page */
    struct tl_side_page *pages;    /* one per page begun */
    size_t pages_cap;
    int error;                     /* the first write error, 0 none */
    uint64_t lost;                 /* records not kept (write errors) */
};

/* rec: a record's size, at least 8 (its key). */
int tl_side_init(struct tl_side *s, size_t rec);
void tl_side_fini(struct tl_side *s);
/* Append one record: 0, or -errno (the record is counted in s->lost). */
int tl_side_append(struct tl_side *s, const void *rec);
/* Records [i, i+n) into buf (n <= TL_SIDE_PAGE, within one page or
 * not): 0 or -errno. */
int tl_side_read(struct tl_side *s, uint64_t i, uint64_t n, void *buf);
static inline uint64_t tl_side_npages(const struct tl_side *s)
{
    return (s->n + TL_SIDE_PAGE - 1) / TL_SIDE_PAGE;
}
/* Memory held (the tail page and the page table) and bytes on disk. */
uint64_t tl_side_mem(const struct tl_side *s);
uint64_t tl_side_disk(const struct tl_side *s);

/* Visit, in append order, every record whose key is in [t0, t1]: fn's
 * non-zero return stops the walk and is returned; a read error returns
 * -errno.  buf: scratch of TL_SIDE_PAGE records. */
int tl_side_walk(struct tl_side *s, uint64_t t0, uint64_t t1, void *buf,
                 int (*fn)(void *ctx, uint64_t i, const void *rec), void *ctx);

/* As tl_side_walk, for records of at least 16 bytes holding intervals
 * (key: the end, second word: the start): every record that overlaps
 * [t0, t1], key >= t0 and second word <= t1, however long ago it began
 * or however late it ended. */
int tl_side_walk_overlap(struct tl_side *s, uint64_t t0, uint64_t t1, void *buf,
                         int (*fn)(void *ctx, uint64_t i, const void *rec), void *ctx);

#endif /* ELS_TL_SIDE_H */
