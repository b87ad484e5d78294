/*
 * pyramid.c: a cap's time accounted as the stream goes: into the summary
 * pyramid's bins (coarsened two into one when time outgrows them) and
 * into the cap's current chunk's summary (index.c decides the chunks and
 * calls these; see index.h for the pyramid's figures).
 *
 * Note [Chunk summaries]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * Between a window narrow enough to replay and one at least a pyramid
 * bin per pixel wide (bins are 2.6 s wide after two days), each chunk of
 * a cap carries the figures of its stretch of the run, so that such a
 * window is drawn at chunk resolution instead of a bin's.  A cap's
 * stretches tile its time: when a chunk of the cap begins (its block
 * marker, or a checkpoint inside a long block) the cap's current state
 * is cut at the chunk's first time, the time before it going to the
 * previous chunk and the time after it to the new one (tli_cap_cut()).  So
 * chunk i of a cap covers [t_first(i), t_first(i+1)), the last one up
 * to the cap's last state change, and the sums of whole chunks are the
 * replay's sums over the same stretch: collections counted where their
 * GC_END is, allocation where its HEAP_ALLOCATED is.  The thread that
 * ran longest in a chunk is found with a small table per cap, cleared at
 * each cut: a thread looks at TL_TOP_PROBE slots from its hash and, when
 * none is its own or free, takes the one that ran least so far (so each
 * event costs a few loads whatever the number of threads, and a thread
 * that runs much in a chunk keeps its slot; the winner's time is then a
 * lower bound).
 *
 * Note [Pyramid pages]
 * ~~~~~~~~~~~~~~~~~~~~
 * The pyramid's arrays are reserved whole (nbins bins: 1.5 MiB + 4 MiB
 * per HEC by default) but cost memory only where written: they are
 * anonymous mappings, whose pages the kernel provides at their first
 * write (reading a page never written maps the shared zero page).  So a
 * bin is written only to change it: the bins past the run's end and an
 * idle cap's bins (nothing running, nothing counted) are never written,
 * and a short or idle program holds the pages its activity covers, not
 * the whole reservation.  Coarsening writes a merged bin only where it
 * differs and gives the emptied upper half's pages back (MADV_DONTNEED:
 * they read as zeros again), so the same holds after it.  The bins, and
 * so every answer, are the same as with the arrays cleared in full;
 * only their residence differs.  calloc() would not do: one served from
 * memory freed earlier is cleared, so written, in full.
 */
#include "timeline/index_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* An array of n bins of size sz, all zero, whose pages cost memory
 * only once written (Note [Pyramid pages]); NULL when out of memory. */
static void *bins_map(size_t n, size_t sz)
{
    void *p = mmap(NULL, n * sz, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void bins_unmap(void *p, size_t n, size_t sz)
{
    if (p)
        munmap(p, n * sz);
}

/* Zero bytes [p, p + len) of a bins_map() array: the whole pages in it
 * given back, the ends cleared. */
static void bins_clear(void *p, size_t len)
{
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)p, e = a + len;
    uintptr_t a1 = (a + pg - 1) & ~(pg - 1), e1 = e & ~(pg - 1);
    if (e1 <= a1 || madvise((void *)a1, e1 - a1, MADV_DONTNEED) < 0) {
        memset(p, 0, len);
        return;
    }
    memset(p, 0, a1 - a);
    memset((void *)e1, 0, e - e1);
}

int tli_pyr_new(struct tl_index *ix)
{
    ix->pglob = bins_map(ix->nbins, sizeof *ix->pglob);
    return ix->pglob ? 0 : -ENOMEM;
}

void tli_pyr_free(struct tl_index *ix)
{
    for (unsigned c = 0; c < TL_CAPS_MAX; c++)
        bins_unmap(ix->pcap[c], ix->nbins, sizeof *ix->pcap[c]);
    bins_unmap(ix->pglob, ix->nbins, sizeof *ix->pglob);
}

/* ------------------------------------------------------------------------
 * Pyramid
 * ------------------------------------------------------------------------ */

static void coarsen(struct tl_index *ix)
{
    unsigned h = ix->nbins / 2;
    for (unsigned c = 0; c < ix->ncaps; c++) {
        struct tl_capbin *v = ix->pcap[c];
        if (!v)
            continue;
        for (unsigned i = 0; i < h; i++) {
            struct tl_capbin a = v[2 * i], b = v[2 * i + 1], m = b;
            m.run_ns = a.run_ns + b.run_ns;
            m.gc_ns = a.gc_ns + b.gc_ns;
            m.alloc = a.alloc + b.alloc;
            m.pause_ns = a.pause_ns + b.pause_ns;
            m.pause_max = a.pause_max > b.pause_max ? a.pause_max : b.pause_max;
            m.gcs = a.gcs + b.gcs;
            m.sparks_created = a.sparks_created + b.sparks_created;
            m.sparks_converted = a.sparks_converted + b.sparks_converted;
            if (!b.pad_) {          /* no spark counters in b */
                m.spark_pool = a.spark_pool;
                m.pad_ = a.pad_;
            }
            if (memcmp(&v[i], &m, sizeof m))
                v[i] = m;
        }
        bins_clear(v + h, h * sizeof *v);
    }
    struct tl_gbin *g = ix->pglob;
    for (unsigned i = 0; i < h; i++) {
        struct tl_gbin a = g[2 * i], b = g[2 * i + 1], m = b;
        if (!b.heap_size)
            m.heap_size = a.heap_size;
        if (!b.heap_live)
            m.heap_live = a.heap_live;
        m.markers = a.markers + b.markers;
        if (memcmp(&g[i], &m, sizeof m))
            g[i] = m;
    }
    bins_clear(g + h, h * sizeof *g);
    ix->width *= 2;
    ix->shift++;
    ix->used = (ix->used + 1) / 2;
}

/* Coarsen until the pyramid covers t (tli_bin_of()'s rare path). */
void tli_pyr_cover(struct tl_index *ix, uint64_t t)
{
    while ((t >> ix->shift) >= ix->nbins)
        coarsen(ix);
}

int tli_cap_bins(struct tl_index *ix, unsigned cap)
{
    if (ix->pcap[cap])
        return 0;
    ix->pcap[cap] = bins_map(ix->nbins, sizeof(struct tl_capbin));
    ix->top[cap] = calloc(TL_TOP_SLOTS, sizeof *ix->top[cap]);
    if (!ix->pcap[cap] || !ix->top[cap])
        return -ENOMEM;
    ix->st.mem_bytes += (uint64_t)ix->nbins * sizeof(struct tl_capbin)
        + TL_TOP_SLOTS * sizeof *ix->top[cap];
    return 0;
}

/* tli_cap_change()'s rare path: [cs->since, t) spans several bins. */
void tli_cap_change_bins(struct tl_index *ix, unsigned cap, uint64_t t,
                         uint32_t running, bool in_gc)
{
    struct tl_capstate *cs = &ix->caps[cap];
    size_t b1 = tli_bin_of(ix, t);
    struct tl_capbin *v = ix->pcap[cap];
    uint64_t a = cs->since;
    size_t b0 = (size_t)(a >> ix->shift);
    for (size_t b = b0; b <= b1; b++) {
        uint64_t lo = b * ix->width, hi = lo + ix->width;
        uint64_t s = a > lo ? a : lo, e = t < hi ? t : hi;
        if (e > s) {
            if (cs->in_gc)
                v[b].gc_ns += e - s;
            else if (cs->running)
                v[b].run_ns += e - s;
        }
        /* written only to change it (Note [Pyramid pages]) */
        uint32_t th = cs->in_gc ? 0 : cs->running;
        if (b < b1 && v[b].thread_end != th)
            v[b].thread_end = th;
    }
    if (v[b1].thread_end != (in_gc ? 0 : running))
        v[b1].thread_end = in_gc ? 0 : running;
    cs->running = running;
    cs->in_gc = in_gc;
    cs->since = t;
}

/* A chunk of the cap begins at t: the state so far goes to the previous
 * chunk (see Note [Chunk summaries]). */
void tli_cap_cut(struct tl_index *ix, unsigned cap, uint64_t t)
{
    struct tl_capstate *cs = &ix->caps[cap];
    if (cs->since)
        tli_cap_change(ix, cap, t, cs->running, cs->in_gc);
    memset(ix->top[cap], 0, TL_TOP_SLOTS * sizeof *ix->top[cap]);
}

uint64_t tl_pyr_width(const struct tl_index *ix) { return ix->width; }
size_t tl_pyr_used(const struct tl_index *ix) { return ix->used; }
const struct tl_capbin *tl_pyr_cap(const struct tl_index *ix, unsigned cap)
{
    return cap < TL_CAPS_MAX ? ix->pcap[cap] : NULL;
}
const struct tl_gbin *tl_pyr_global(const struct tl_index *ix) { return ix->pglob; }
