/*
 * index.h: the timeline's time index of one eventlog stream, built in one
 * streaming pass over the same bytes the spool keeps (spool.h).
 *
 * Three things are kept, each bounded:
 *  - chunks: each block of the stream (a BLOCK_MARKER and the events of
 *    one capability it covers, in time order) as (offset, length, cap,
 *    first and last event time, events, the cap's state at its start);
 *    events outside any block form synthetic chunks of at most
 *    TL_SYNTH_EVENTS events, and a block is cut every TL_CHUNK_EVENTS
 *    events (a checkpoint of its cap's state), so that a window replays
 *    at most that many events per lane before its start.  One array per capability (and one for the
 *    global lane), in stream order, so that [t0,t1] finds its chunks by
 *    binary search.  Chunks whose bytes the spool dropped are removed and
 *    counted (tl_index_trim()).
 *  - the summary pyramid: at most `bins` bins (default 65536) of equal
 *    width covering [0, now); when the run outgrows them, pairs merge and
 *    the width doubles.  Each bin holds, per HEC, time running and in GC,
 *    the thread running at its end, collections and their pauses,
 *    allocation, sparks created/converted and the pool; and globally heap
 *    size and live and the markers.  Finer detail is recomputed from the
 *    chunks (query.h).
 *  - notes: the last TL_NOTES_MAX markers, text cut at TL_NOTE_TEXT
 *    (spans are the aggregates': aggr.h); thread labels and lives, at most
 *    TL_THREADS_MAX threads (the oldest finished forgotten first).
 *
 * Memory bound: see Note [Timeline memory] in index.c.  Not its job:
 * where the bytes are (spool.h), answering queries (query.h), locking.
 * Errors: 0 or a negative errno (-EINVAL: a malformed stream).
 */
#ifndef ELS_TL_INDEX_H
#define ELS_TL_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "timeline/aggr.h"

#define TL_SYNTH_EVENTS 4096
#define TL_CHUNK_EVENTS 8192      /* a block is cut into chunks this long */
#define TL_CHUNK_PAUSES 8         /* longest pauses kept per chunk */
#define TL_NOTES_MAX 16384
#define TL_NOTE_TEXT 96
#define TL_THREADS_MAX 65536
#define TL_LABEL_MAX 64
#define TL_CAPS_MAX 256           /* capabilities indexed; more: refused */
#define TL_PYR_BINS_DEFAULT 65536u
#define TL_PYR_WIDTH0 1024u       /* ns: the first bin width */

struct tl_chunk {
    uint64_t off;                 /* stream offset of its first byte */
    uint64_t t_first, t_last;     /* first and last event time in it */
    uint64_t t_max;               /* max t_last of the lane up to here */
    uint64_t alloc0;              /* the cap's HEAP_ALLOCATED before it */
    uint32_t len;                 /* bytes */
    uint32_t events;              /* events, block marker excluded */
    uint32_t thread0;             /* thread running on the cap at its start */
    int16_t cap;                  /* -1: global lane */
    uint8_t gc0;                  /* the cap was in GC at its start */
    /* 0: a block (from its marker); 1: events outside any block; 2: the
     * rest of a block after TL_CHUNK_EVENTS events (no marker) */
    uint8_t synthetic;
    /* The chunk's summary (a cap's chunks only; see Note [Chunk
     * summaries] in pyramid.c): its cap's time from t_first to the next
     * chunk's t_first (the last: to the cap's state change now), and the
     * events in it. */
    uint64_t run_ns, gc_ns;
    uint64_t alloc;               /* HEAP_ALLOCATED deltas in it */
    uint64_t pause_ns, pause_max; /* collections whose GC_END is in it */
    /* its TL_CHUNK_PAUSES longest pauses, longest first: GC_END and
     * length (0: none); see Note [Longest pauses] in pauses.c */
    uint64_t top_end[TL_CHUNK_PAUSES], top_len[TL_CHUNK_PAUSES];
    uint32_t gcs;
    uint32_t sparks_created, sparks_converted;
    uint32_t top_thread;          /* ran longest in it (0: none) */
    uint64_t top_ns;              /* ... for this long */
};

struct tl_lane {
    struct tl_chunk *v;           /* v[head .. n) are live */
    size_t head, n, cap;
};

/* One pyramid bin of one HEC. */
struct tl_capbin {
    uint64_t run_ns, gc_ns;
    uint64_t alloc;               /* bytes allocated (HEAP_ALLOCATED deltas) */
    uint64_t pause_ns, pause_max; /* collections ended in the bin */
    uint32_t thread_end;          /* running at the bin's end (0: none) */
    uint32_t gcs;                 /* collections ended in the bin */
    uint32_t sparks_created, sparks_converted;
    uint32_t spark_pool;          /* remaining at the last counters */
    uint32_t pad_;
};

/* One pyramid bin of the whole program. */
struct tl_gbin {
    uint64_t heap_size, heap_live;   /* last seen in the bin, 0: none */
    uint32_t markers;
    uint32_t pad_;
};

struct tl_note {
    uint64_t t;
    int16_t cap;
    uint8_t kind;                 /* TL_NOTE_* */
    uint8_t len;
    char text[TL_NOTE_TEXT];
};
enum { TL_NOTE_MARKER = 1 };

struct tl_thread {
    uint32_t id;
    uint64_t created, finished;   /* 0: not seen */
    char label[TL_LABEL_MAX];     /* "" none */
};

/* A cap's state as the index passes its events. */
struct tl_capstate {
    bool seen;
    uint32_t running;             /* 0: none */
    bool in_gc;
    uint64_t since;               /* time of the last state change */
    uint64_t gc_start;
    uint64_t last_t;
    uint64_t alloc;               /* last HEAP_ALLOCATED, cumulative */
    uint64_t sp_created, sp_converted;  /* last SPARK_COUNTERS */
    bool sp_seen;
};

struct tl_index_stats {
    uint64_t bytes, events, chunks, caps;
    uint64_t t_first, t_last;     /* over everything indexed */
    uint64_t dropped_chunks, dropped_events, dropped_bytes;
    uint64_t dropped_t_first, dropped_t_last;  /* time range lost */
    uint64_t bin_width, bins;
    uint64_t notes_forgotten, threads_forgotten;
    uint64_t mem_bytes;           /* what the index holds now, aggr's too */
    struct tl_aggr_stats aggr;    /* the aggregates' part (aggr.h) */
};

struct tl_index;

/* bins: the pyramid's bin count (0: default; even, 2 .. 1<<22). */
int tl_index_new(struct tl_index **out, unsigned bins);
void tl_index_free(struct tl_index *ix);

/* The next len bytes of the stream (the first call starts at offset 0).
 * 0, or -EINVAL (malformed: tl_index_error() says where), -ENOMEM,
 * -E2BIG (more than TL_CAPS_MAX capabilities). */
int tl_index_feed(struct tl_index *ix, const void *buf, size_t len);
const char *tl_index_error(const struct tl_index *ix);

/* Forget the chunks that begin below offset base (the spool dropped
 * them), counting them. */
void tl_index_trim(struct tl_index *ix, uint64_t base);

void tl_index_stats(const struct tl_index *ix, struct tl_index_stats *out);

/* The header's bytes ("hdrb" .. "datb"), so that chunks can be parsed. */
const uint8_t *tl_index_header(const struct tl_index *ix, size_t *len);
/* A tag's payload size from the header: >= 0, -1 variable, -2 unknown. */
int tl_index_type_size(const struct tl_index *ix, uint16_t tag);
const char *tl_index_type_desc(const struct tl_index *ix, uint16_t tag);

/* Lanes: 0 .. ncaps-1 are capabilities, TL_LANE_GLOBAL the rest. */
#define TL_LANE_GLOBAL TL_CAPS_MAX
unsigned tl_index_ncaps(const struct tl_index *ix);  /* highest cap + 1 */
const struct tl_lane *tl_index_lane(const struct tl_index *ix, unsigned lane);
/* The first live chunk of lane whose t_max >= t0 (binary search): its
 * index in lane->v, or lane->n. */
size_t tl_lane_seek(const struct tl_lane *l, uint64_t t0);
/* The cap's state now (for a window after its last chunk). */
const struct tl_capstate *tl_index_capstate(const struct tl_index *ix,
                                            unsigned cap);

/* The pyramid: bins [0, nbins) of width ns; per-cap arrays NULL for a cap
 * never seen. */
uint64_t tl_pyr_width(const struct tl_index *ix);
size_t tl_pyr_used(const struct tl_index *ix);   /* bins written so far */
const struct tl_capbin *tl_pyr_cap(const struct tl_index *ix, unsigned cap);
const struct tl_gbin *tl_pyr_global(const struct tl_index *ix);

/* Notes in time order of arrival: i in [0, n). */
size_t tl_index_notes(const struct tl_index *ix);
const struct tl_note *tl_index_note(const struct tl_index *ix, size_t i);
/* The thread's record, or NULL. */
const struct tl_thread *tl_index_thread(const struct tl_index *ix, uint32_t id);

/* Thread stop statuses (STOP_THREAD's status field, GHC 9.0.2): the name
 * GHC gives it ("HeapOverflow", "BlockedOnMVar", ...) and the text
 * ghc-events shows ("heap overflow", "blocked on an MVar", ...). */
const char *tl_stop_name(unsigned status);
const char *tl_stop_text(unsigned status);

/* The run's aggregates (heap censuses, spans, cost-centre ticks: aggr.h),
 * fed by tl_index_feed(). */
struct tl_aggr *tl_index_aggr(const struct tl_index *ix);

#endif /* ELS_TL_INDEX_H */
