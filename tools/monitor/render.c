/*
 * render.c: what the monitor model's renderers share (see render.h):
 * names for what the model keeps as numbers (stop statuses, event
 * types, census breakdowns, capability states), cost-centre stacks as
 * the RTS names them, rankings and the figures more than one view
 * shows; and `serve --all`'s health of a program.  The renderers are
 * render_json.c (the views' JSON, the timeline, speedscope),
 * render_text.c (the terminal view) and render_prom.c (Prometheus, over
 * series.c).  Reads the state model.c builds (model_impl.h); changes
 * nothing.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"

static int mon_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

void mon_pause_pcts(const struct mon_model *m, uint64_t *p50,
                           uint64_t *recent_max)
{
    unsigned n = m->gc.npauses < MON_PAUSES ? m->gc.npauses : MON_PAUSES;
    *p50 = *recent_max = 0;
    if (n == 0)
        return;
    uint64_t tmp[MON_PAUSES];
    memcpy(tmp, m->gc.pauses, n * sizeof tmp[0]);
    qsort(tmp, n, sizeof tmp[0], mon_cmp_u64);
    *p50 = tmp[(n - 1) / 2];
    *recent_max = tmp[n - 1];
}

/* The last census's bands, largest first, ties in the census's order
 * (insertion sort: at most MON_BANDS). */
void mon_band_order(const struct mon_census *c, unsigned *order)
{
    for (unsigned i = 0; i < c->nbands; i++)
        order[i] = i;
    for (unsigned i = 1; i < c->nbands; i++)
        for (unsigned j = i; j > 0; j--) {
            const struct mon_band *a = &c->bands[order[j]], *b = &c->bands[order[j - 1]];
            if (a->bytes < b->bytes || (a->bytes == b->bytes && a->seq > b->seq))
                break;
            unsigned t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
}

const char *mon_cc_name(const struct mon_model *m, uint32_t id)
{
    if (id < m->prof.nccs && m->prof.ccs[id].label != NULL)
        return m->prof.ccs[id].label;
    return "?";
}

/* A band's name as the stream's bytes (each view escapes it for its
 * medium): a string band's text, or a cost-centre stack as the RTS
 * names it in its .hp file (rts/ProfHeap.c's fprint_ccs(), without
 * the stack's number, which the eventlog does not carry): labels from
 * the innermost cost centre out, joined by "/", a CAF as MODULE.CAF,
 * "/..." after MON_STACK frames. */
void mon_band_name(const struct mon_model *m, const struct mon_band *b,
                          struct strbuf *out)
{
    sb_clear(out);
    if (b->depth == 0) {
        sb_puts(out, b->u.s);
        return;
    }
    for (unsigned i = 0; i < b->depth; i++) {
        uint32_t id = b->u.ids[i];
        const char *l = mon_cc_name(m, id);
        if (i > 0)
            sb_puts(out, "/");
        if (strcmp(l, "CAF") == 0 && m->prof.ccs[id].module != NULL) {
            sb_puts(out, m->prof.ccs[id].module);
            sb_puts(out, ".CAF");
        } else {
            sb_puts(out, l);
        }
    }
    if (b->deeper)
        sb_puts(out, "/...");
}

/* GHC's HEAP_PROF_BREAKDOWN_* (rts/EventLogFormat.h) in words. */
const char *mon_breakdown_name(uint32_t b)
{
    static const char *const names[] = {
        "?", "cost-centre stack (-hc)", "module (-hm)",
        "closure description (-hd)", "type description (-hy)",
        "retainer set (-hr)", "biography (-hb)", "closure type (-hT)",
    };
    return b < sizeof names / sizeof names[0] ? names[b] : "?";
}

/* STOP_THREAD's status in words, as GHC 9.0.2 posts it (1-5: StgRun's
 * return codes; 6: a safe foreign call; 6 + why_blocked for a blocked
 * thread: includes/rts/Constants.h). */
const char *mon_stop_name(unsigned status, char *buf, size_t cap)
{
    static const char *const names[] = {
        [1] = "heap overflow", [2] = "stack overflow", [3] = "yielding",
        [4] = "blocked", [5] = "finished", [6] = "foreign call",
        [7] = "blocked on MVar", [8] = "blocked on black hole",
        [9] = "blocked on I/O read", [10] = "blocked on I/O write",
        [11] = "blocked on delay", [12] = "blocked in STM retry",
        [13] = "blocked on asyncDoProc", [16] = "blocked in foreign call",
        [17] = "blocked in interruptible foreign call",
        [18] = "blocked in throwTo", [19] = "migrating",
        [20] = "blocked reading MVar", [21] = "blocked on I/O completion",
    };
    if (status < sizeof names / sizeof names[0] && names[status] != NULL)
        return names[status];
    if (status == MON_STOPS - 1)
        snprintf(buf, cap, "status %u or more", status);
    else
        snprintf(buf, cap, "status %u", status);
    return buf;
}

/* An event type's name: the stream's own description of its tag. */
const char *mon_type_name(const struct mon_model *m, unsigned k,
                                 char *buf, size_t cap)
{
    if (k < MON_TAGS) {
        const struct els_event_type *ty = els_parser_event_type(m->parser, (uint16_t)k);
        if (ty != NULL && ty->desc != NULL && ty->desc[0] != '\0')
            return ty->desc;
        snprintf(buf, cap, "type %u", k);
    } else {
        snprintf(buf, cap, "types %u and above", MON_TAGS);
    }
    return buf;
}

/* The bytes of tag k's events in the stream: each one's tag and time,
 * the size field of a type the header declares of variable size, and
 * the payloads (model.c's mon_count_type()).  The tags past MON_TAGS
 * are counted together: their size fields are not told apart. */
uint64_t mon_type_bytes(const struct mon_model *m, unsigned k)
{
    const struct els_event_type *ty =
        k < MON_TAGS ? els_parser_event_type(m->parser, (uint16_t)k) : NULL;
    bool var = ty != NULL && ty->size == ELS_EVENT_SIZE_VARIABLE;
    return m->counts.type_n[k] * (var ? 12 : 10) + m->counts.type_payload[k];
}

/* Every event type's bytes (for ranking). */
void mon_types_bytes(const struct mon_model *m, uint64_t *out)
{
    for (unsigned k = 0; k <= MON_TAGS; k++)
        out[k] = m->counts.type_n[k] ? mon_type_bytes(m, k) : 0;
}

/* Indexes of the non-zero entries of v[0..n), largest first (ties:
 * lower index first); returns how many. */
unsigned mon_rank(const uint64_t *v, unsigned n, unsigned *order)
{
    unsigned k = 0;
    for (unsigned i = 0; i < n; i++) {
        if (v[i] == 0)
            continue;
        unsigned j = k++;
        while (j > 0 && v[order[j - 1]] < v[i]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    return k;
}

const char *mon_state_name(enum mon_cap_state s)
{
    return s == CAP_RUN ? "running" : s == CAP_GC ? "gc" : "idle";
}


/* Spark counters' totals as of the last tick: the change within the
 * stream for one that starts mid-run (Note [Mid-run streams] in
 * model.c); the pool (SP_REMAINING) as it is. */
void mon_spark_totals(const struct mon_model *m, uint64_t sp[7])
{
    uint64_t base[7];
    mon_spark_base(m, base);
    for (int k = 0; k < 7; k++)
        sp[k] = m->rate.prev_sp[k] > base[k] ? m->rate.prev_sp[k] - base[k] : 0;
}

/* Allocation: the capabilities' sum, less what came before a mid-run
 * stream's start. */
uint64_t mon_allocated(const struct mon_model *m)
{
    uint64_t base = mon_alloc_base(m);
    return m->heap.alloc > base ? m->heap.alloc - base : 0;
}

void mon_model_health(const struct mon_model *m, struct mon_health *h)
{
    memset(h, 0, sizeof *h);
    unsigned n = m->gc.npauses < MON_PAUSES ? m->gc.npauses : MON_PAUSES;
    if (n > 0) {
        uint64_t tmp[MON_PAUSES];
        memcpy(tmp, m->gc.pauses, n * sizeof tmp[0]);
        qsort(tmp, n, sizeof tmp[0], mon_cmp_u64);
        h->pause_p99_ns = tmp[(size_t)((n - 1) * 99 / 100)];
    }
    h->collections = mon_collections(m);
    h->heap_size = m->heap.size;
    h->heap_live = m->heap.live;
    h->lost_units = m->loss.dropped_units + m->loss.missed_units + m->loss.late_units;
    h->bytes = m->src.bytes;
    h->pid = m->run.pid;
    h->program = m->run.program;
    h->ended = m->run.ended;
}
