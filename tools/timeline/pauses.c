/*
 * pauses.c: the longest GC pauses of a window (kind=pauses), from the
 * chunk summaries alone, so that a person finds the worst pauses of a
 * day-long run or a 2 GB file in one click; see Note [Longest pauses].
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "timeline/index_impl.h"
#include "timeline/pauses.h"

/* Note [Longest pauses]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * While it reads the stream, the index keeps for each chunk of a HEC (at
 * most TL_CHUNK_EVENTS events) its TL_CHUNK_PAUSES longest pauses,
 * GC_START to GC_END on that HEC, by the time of their GC_END (the start
 * may lie in an earlier chunk).  A window's list is the longest of those
 * whose GC_END falls in it, so every listed pause is exact.  Two things
 * follow:
 *  - a collection stops every HEC, so it is in several lanes: of pauses
 *    that overlap, only the longest is listed (the HEC that led it);
 *  - a chunk with more collections than it keeps may hide a pause no
 *    longer than the shortest it kept.  The list is then still right
 *    when every such hidden pause is shorter than the last one listed;
 *    "exact" says whether that holds (with 8 kept, it does unless many
 *    long pauses fall in one chunk, as in a program collecting every
 *    100 us: -A64k).
 * The cost is one pass over the window's chunks, about 14,000 for a 2 GB
 * file, and no byte of the stream read back; the memory, 128 bytes a
 * chunk. */

void tli_chunk_pause(struct tl_chunk *c, uint64_t end, uint64_t len)
{
    /* c->gcs counts this one already: the kept are the first n. */
    int n = c->gcs - 1 < TL_CHUNK_PAUSES ? (int)c->gcs - 1 : TL_CHUNK_PAUSES;
    int i = n;
    while (i > 0 && c->top_len[i - 1] < len)
        i--;
    if (i == TL_CHUNK_PAUSES)
        return;
    for (int j = (n < TL_CHUNK_PAUSES ? n : TL_CHUNK_PAUSES - 1); j > i; j--)
        c->top_len[j] = c->top_len[j - 1], c->top_end[j] = c->top_end[j - 1];
    c->top_len[i] = len;
    c->top_end[i] = end;
}

struct cand { uint64_t a, b; int cap; };

static int by_length(const void *x, const void *y)
{
    const struct cand *p = x, *q = y;
    uint64_t lp = p->b - p->a, lq = q->b - q->a;
    if (lp != lq)
        return lp > lq ? -1 : 1;
    return p->b < q->b ? -1 : p->b > q->b;
}

static int cand_add(struct cand **v, size_t *k, size_t *cap, struct cand c)
{
    if (*k == *cap) {
        size_t nc = *cap ? 2 * *cap : 256;
        struct cand *nv = realloc(*v, nc * sizeof *nv);
        if (nv == NULL)
            return -1;
        *v = nv, *cap = nc;
    }
    (*v)[(*k)++] = c;
    return 0;
}

int tl_pauses(struct tl_index *ix, uint64_t t0, uint64_t t1, unsigned n,
              struct strbuf *out)
{
    size_t cap = 0, k = 0;
    struct cand *v = NULL;
    uint64_t hidden = 0;        /* the longest a chunk may have hidden */
    bool hides = false;
    for (unsigned c = 0; c < tl_index_ncaps(ix); c++) {
        const struct tl_lane *l = tl_index_lane(ix, c);
        for (size_t i = tl_lane_seek(l, t0); i < l->n; i++) {
            const struct tl_chunk *ch = &l->v[i];
            if (ch->t_first > t1)
                break;
            for (int j = 0; j < TL_CHUNK_PAUSES && j < (int)ch->gcs; j++) {
                uint64_t e = ch->top_end[j], len = ch->top_len[j];
                if (e < t0 || e > t1)
                    continue;
                if (cand_add(&v, &k, &cap, (struct cand){ e >= len ? e - len : 0, e,
                                                          (int)c }) < 0) {
                    free(v);
                    return -1;
                }
            }
            if (ch->gcs > TL_CHUNK_PAUSES) {
                hides = true;
                if (ch->top_len[TL_CHUNK_PAUSES - 1] > hidden)
                    hidden = ch->top_len[TL_CHUNK_PAUSES - 1];
            }
        }
    }
    if (k > 0)                  /* qsort() of no array is undefined */
        qsort(v, k, sizeof *v, by_length);
    sb_printf(out, "{\"t0\":%" PRIu64 ",\"t1\":%" PRIu64 ",\"pauses\":[", t0, t1);
    /* The listed ones are moved to the front, v[0 .. listed). */
    size_t listed = 0;
    for (size_t i = 0; i < k && listed < n; i++) {
        bool covered = false;       /* by a longer one already listed */
        for (size_t j = 0; j < listed && !covered; j++)
            covered = v[j].a <= v[i].b && v[i].a <= v[j].b;
        if (covered)
            continue;
        sb_printf(out, "%s[%" PRIu64 ",%" PRIu64 ",%d]", listed ? "," : "",
                  v[i].a, v[i].b, v[i].cap);
        v[listed++] = v[i];
    }
    bool exact = !hides || (listed == n && hidden < v[listed - 1].b - v[listed - 1].a);
    sb_printf(out, "],\"exact\":%s}", exact ? "true" : "false");
    free(v);
    return 0;
}
