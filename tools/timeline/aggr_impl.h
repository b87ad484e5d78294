/*
 * aggr_impl.h: the aggregates' state, shared by their feeding (aggr.c)
 * and their answers (aggr_query.c, aggr_profile.c); nothing else
 * includes it.
 */
#ifndef ELS_TL_AGGR_IMPL_H
#define ELS_TL_AGGR_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "monitor/ccs.h"
#include "timeline/aggr.h"
#include "timeline/side.h"

struct ient {
    uint32_t off, len;            /* key in blob */
    uint32_t aux_off, aux_len;    /* second string in blob */
};

struct itab {
    struct ient *v;
    uint32_t n, cap, max;
    char *blob;
    size_t blob_len, blob_cap, blob_max;
    uint32_t *slots;              /* index + 1; 0 empty */
    size_t nslots;
};

struct cen_rec { uint64_t t, first; uint32_t n, era; };
struct hs_rec { uint64_t bytes; uint32_t band, pad; };
struct span_rec { uint64_t end, start; uint32_t name, pad; };
struct tick_rec { uint64_t t; uint32_t stack, cap; };

struct pend { uint64_t t, seq; uint32_t name, thread; uint8_t fam, end; };
struct open_ent { uint64_t t; uint32_t prev, pad; };

#define NO_BAND UINT32_MAX
#define OTHER_STACK UINT32_MAX

struct tl_aggr {
    struct profile_ccs ccs;
    /* Heap censuses. */
    bool have_breakdown;
    uint32_t breakdown;
    struct tl_side cen, hs;
    bool in_census;
    struct cen_rec cur;
    uint64_t cen_unfinished;
    struct itab bands;
    uint32_t other_band;
    uint32_t stack_no;            /* -hc stacks numbered so far */
    uint64_t band_refused;
    /* Spans. */
    struct itab names;
    uint32_t other_name;
    /* Open starts: a LIFO list per (thread, name, pair), found through
     * keys (their numbers index heads). */
    struct itab keys;
    uint32_t *heads;              /* per key: open index + 1, 0 none */
    uint32_t heads_cap;
    uint32_t running[256];        /* the thread running on each cap */
    struct open_ent *open;
    uint32_t open_n, open_cap, open_free;  /* free list: index + 1 */
    uint64_t open_live;
    /* Marker events waiting, one queue per capability (and one for
     * none), each in time order: Note [Spans in time order]. */
    struct pendq { struct pend *v; size_t head, n, cap; } pq[257];
    size_t pend_n;                /* in all queues */
    uint64_t pend_mem;
    uint64_t seq;
    uint64_t cap_last[256];
    bool cap_seen[256];
    unsigned cap_hi;              /* highest cap seen + 1 */
    bool caps_known;              /* a CAP_CREATE arrived */
    uint64_t unmatched, open_refused, names_refused, released_early;
    struct tl_side spans;
    /* Cost-centre ticks. */
    struct itab stacks;
    struct tl_side ticks;
    uint64_t ticks_other;
    int error;
};

/* The RTS's own cost centre a stack of one is (0: none), 1 .. 5 in the
 * order of "rts" in aggr.h. */
int tl_aggr_rts_kind(const struct tl_aggr *a, uint32_t stack);
extern const char *const tl_aggr_rts_names[6];

/* The answers' shared pieces (aggr_query.c): an error answer (its
 * status returned), a query string's value of key. */
int tl_aggr_fail(struct strbuf *out, int status, const char *msg);
bool tl_aggr_qs_get(const char *qs, const char *key, char *val, size_t n);
/* kind=profile (aggr_profile.c). */
int tl_aggr_profile(struct tl_aggr *a, const char *qs, uint64_t t0, uint64_t t1,
                    struct strbuf *out);

#endif /* ELS_TL_AGGR_IMPL_H */
