/*
 * model_prof.c: what a profiled program's events say (the model's
 * profiling part and the heap part's censuses, model_impl.h): the
 * names of its cost centres, the time profiler's samples with their
 * stacks (the RTS's own cost centres counted apart), and the heap
 * censuses, each kept as its largest bands once it is complete.  Not
 * its job: the cost-centre table and what bounds it (model_tables.c),
 * the samples' rates and top (model_time.c's tick), or the heap's
 * sizes and allocation (model.c).
 */
#include <stdlib.h>
#include <string.h>

#include "model_impl.h"

/* ------------------------------------------------------------------------
 * Profiling
 * ------------------------------------------------------------------------ */

/* HEAP_PROF_COST_CENTRE: a cost centre's names. */
static void mon_prof_cc(struct mon_model *m, const struct els_event_data *d)
{
    struct mon_cc *c = mon_cc(m, d->u.cost_centre.id, true);
    if (c != NULL)
        mon_cc_set_names(m, c, d->u.cost_centre.label, d->u.cost_centre.module);
}

/* PROF_SAMPLE_COST_CENTRE: one time-profiler tick, its stack kept in
 * the ring (MON_STACK frames of it, innermost first). */
static void mon_prof_sample(struct mon_model *m, const struct els_event *ev,
                            const struct els_event_data *d)
{
    const struct els_ccs *stack = &d->u.prof_sample.stack;
    unsigned depth = stack->depth;
    if (depth == 0) {
        /* CCS_MAIN, the program's (no cost centre to name or keep). */
        m->prof.kind_samples[MON_CC_PROGRAM]++;
        return;
    }
    if (m->prof.ring == NULL) {
        m->prof.ring = calloc(MON_SAMPLES, sizeof *m->prof.ring);
        if (m->prof.ring == NULL)
            return;
        m->mem += MON_SAMPLES * sizeof *m->prof.ring;
    }
    struct mon_sample *s = &m->prof.ring[m->prof.samples % MON_SAMPLES];
    s->t = ev->time;
    s->depth = (uint8_t)(depth > MON_STACK ? MON_STACK : depth);
    for (unsigned i = 0; i < s->depth; i++)
        s->ids[i] = els_ccs_id(stack, i);
    m->prof.samples++;
    struct mon_cc *c = mon_cc(m, s->ids[0], true);
    /* A tick of the RTS's own (a stack of one of its cost centres) is
     * not the program's: counted apart, as GHC's report does. */
    unsigned kind = c != NULL && depth == 1 ? c->builtin : MON_CC_PROGRAM;
    m->prof.kind_samples[kind]++;
    if (c != NULL && kind == MON_CC_PROGRAM)
        c->samples++;
}

/* The band of a census with bytes bytes: a new slot while there are
 * fewer than MON_BANDS, else the smallest one's if smaller (NULL if
 * not).  The census's totals count every band. */
static struct mon_band *mon_census_band(struct mon_model *m, uint64_t bytes)
{
    struct mon_census *st = &m->heap.staging;
    uint32_t seq = (uint32_t)st->bands_all;
    st->bands_all++;
    st->bytes += bytes;
    struct mon_band *slot = NULL;
    if (st->nbands < MON_BANDS) {
        slot = &st->bands[st->nbands++];
    } else {
        for (unsigned i = 0; i < MON_BANDS; i++)
            if (slot == NULL || st->bands[i].bytes < slot->bytes)
                slot = &st->bands[i];
        if (slot->bytes >= bytes)
            return NULL;
    }
    slot->bytes = bytes;
    slot->seq = seq;
    slot->deeper = false;
    return slot;
}

/* HEAP_PROF_SAMPLE_COST_CENTRE: one cost-centre stack's band of the
 * census under way (-hc). */
static void mon_heap_cc_sample(struct mon_model *m, const struct els_event_data *d)
{
    if (!m->heap.in_sample)
        return;
    const struct els_ccs *stack = &d->u.heap_sample_ccs.stack;
    unsigned depth = stack->depth;
    struct mon_band *b = mon_census_band(m, d->u.heap_sample_ccs.residency);
    if (b == NULL)
        return;
    if (depth == 0) {
        /* CCS_MAIN: the RTS stops the stack there, and its .hp file
         * names the empty stack MAIN (rts/ProfHeap.c's fprint_ccs()). */
        b->depth = 0;
        mon_copy(b->u.s, sizeof b->u.s, "MAIN", 4);
        return;
    }
    b->depth = (uint8_t)(depth > MON_STACK ? MON_STACK : depth);
    b->deeper = depth > MON_STACK;
    for (unsigned i = 0; i < b->depth; i++)
        b->u.ids[i] = els_ccs_id(stack, i);
}

static void mon_heap_sample_string(struct mon_model *m, uint64_t res,
                                   struct els_str label)
{
    if (!m->heap.in_sample)
        return;
    struct mon_band *b = mon_census_band(m, res);
    if (b == NULL)
        return;
    b->depth = 0;
    mon_copy(b->u.s, sizeof b->u.s, label.ptr, label.len);
}

static void mon_heap_sample_begin(struct mon_model *m, uint64_t t)
{
    m->heap.in_sample = true;
    m->heap.staging.nbands = 0;
    m->heap.staging.bands_all = m->heap.staging.bytes = 0;
    m->heap.staging.t = t;
}

/* The census under way is complete: it becomes the one the views show
 * (an END without a BEGIN, as after a join mid-census, changes nothing). */
static void mon_heap_sample_end(struct mon_model *m)
{
    if (!m->heap.in_sample)
        return;
    struct mon_census *st = &m->heap.staging;
    m->heap.census.nbands = st->nbands;
    memcpy(m->heap.census.bands, st->bands, st->nbands * sizeof st->bands[0]);
    m->heap.census.t = st->t;
    m->heap.census.bands_all = st->bands_all;
    m->heap.census.bytes = st->bytes;
    m->heap.in_sample = false;
    m->heap.censuses++;
}

/* Heap censuses and cost-centre samples (the heap and profiling
 * parts). */
void mon_on_prof(struct mon_model *m, const struct mon_ev *e)
{
    const struct els_event_data *d = e->d;
    switch (e->ev->tag) {
    case ELS_EV_HEAP_PROF_BEGIN:
        m->heap.breakdown = d->u.heap_prof_begin.breakdown;
        break;
    case ELS_EV_HEAP_PROF_SAMPLE_BEGIN:
    case ELS_EV_HEAP_BIO_PROF_SAMPLE_BEGIN:
        mon_heap_sample_end(m);
        mon_heap_sample_begin(m, e->ev->time);
        break;
    case ELS_EV_HEAP_PROF_SAMPLE_END:
        mon_heap_sample_end(m);
        break;
    case ELS_EV_HEAP_PROF_SAMPLE_STRING:
        mon_heap_sample_string(m, d->u.heap_sample_string.residency,
                               d->u.heap_sample_string.label);
        break;
    case ELS_EV_HEAP_PROF_COST_CENTRE:
        mon_prof_cc(m, d);
        break;
    case ELS_EV_HEAP_PROF_SAMPLE_COST_CENTRE:
        mon_heap_cc_sample(m, d);
        break;
    case ELS_EV_PROF_SAMPLE_COST_CENTRE:
        mon_prof_sample(m, e->ev, d);
        break;
    }
}
