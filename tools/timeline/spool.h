/*
 * spool.h: where the bytes of one eventlog stream are kept for the
 * timeline (tools/timeline), so that any time range can be read back
 * later: either a live stream appended to segment files in a private
 * directory, bounded by a total size (the oldest segment is dropped
 * first, and what it held is counted), or a file that already exists,
 * read where it lies with pread() and never copied or loaded whole.
 *
 * Offsets are the stream's own: byte 0 is the first byte ever appended
 * (or the file's first byte), and they never move when segments are
 * dropped; tl_spool_base() says where the readable bytes now begin.
 * Not its job: what the bytes mean (index.h), threads (one thread owns a
 * spool; readers and the appender must be serialised by the caller).
 * Errors: 0 or a negative errno.
 */
#ifndef ELS_TL_SPOOL_H
#define ELS_TL_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#define TL_SPOOL_DEFAULT_MAX (1ull << 30)      /* 1 GiB */
#define TL_SPOOL_DEFAULT_SEGMENT (16ull << 20) /* 16 MiB */
#define TL_SPOOL_SEGMENTS_MAX 4096

struct tl_spool;

struct tl_spool_stats {
    uint64_t base, end;         /* readable offsets [base, end) */
    uint64_t bytes_on_disk;     /* end - base for a live spool */
    uint64_t segments;          /* segments now kept */
    uint64_t segments_dropped;
    uint64_t bytes_dropped;     /* == base for a live spool */
};

/* A live spool: a new directory "eventlog-timeline-XXXXXX" (mode 0700)
 * under parent (which must exist and not be a symlink), segment files of
 * mode 0600 made with O_EXCL|O_NOFOLLOW|O_CLOEXEC.  max_bytes bounds the
 * segments' total; segment_bytes is the size of one (the bound is kept
 * to within one segment: at most max_bytes on disk, and at least
 * max_bytes - segment_bytes readable once that much was appended).  0
 * for either takes the default.  -EINVAL when segment_bytes > max_bytes
 * or the bound needs more than TL_SPOOL_SEGMENTS_MAX segments. */
int tl_spool_open_dir(struct tl_spool **out, const char *parent,
                      uint64_t max_bytes, uint64_t segment_bytes);

/* A file read in place (O_RDONLY|O_CLOEXEC|O_NOFOLLOW is not used: the
 * user names the file).  It may grow (a file still being written):
 * tl_spool_refresh() looks at its size again.  Nothing is ever dropped. */
int tl_spool_open_file(struct tl_spool **out, const char *path);

/* Close, and for a live spool remove its segments and directory. */
void tl_spool_close(struct tl_spool *sp);

/* Live spools only: append len bytes (a new segment is started when the
 * current one is full, and the oldest dropped while the total would pass
 * the bound).  -EBADF on a file spool, -errno from write(). */
int tl_spool_append(struct tl_spool *sp, const void *buf, size_t len);

/* A file spool: take the file's current size as its end.  No-op live. */
int tl_spool_refresh(struct tl_spool *sp);

/* Read len bytes at stream offset off into buf: the bytes read (short at
 * the end), or -ERANGE when off is below tl_spool_base() (dropped), or
 * -errno. */
long tl_spool_read(struct tl_spool *sp, uint64_t off, void *buf, size_t len);

uint64_t tl_spool_base(const struct tl_spool *sp);
uint64_t tl_spool_end(const struct tl_spool *sp);
void tl_spool_stats(const struct tl_spool *sp, struct tl_spool_stats *out);
/* The live spool's directory ("" for a file). */
const char *tl_spool_dir(const struct tl_spool *sp);

#endif /* ELS_TL_SPOOL_H */
