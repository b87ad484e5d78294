/*
 * profile_prof.c: a time-profile report (.prof's layout) from the
 * eventlog's cost-centre samples.
 *
 * Every PROF_SAMPLE_COST_CENTRE is one tick of one capability charged to
 * the stack it carries (innermost first, MAIN left out).  The ticks build
 * the same call tree the RTS prints: a node per stack, its individual
 * ticks, and inherited ticks summed over its subtree; PROF_BEGIN gives
 * the tick interval.  The report has the RTS's two tables: cost centres
 * with at least 1% of the time by individual time, then the tree.
 *
 * What the eventlog does not carry is said in the file's header and
 * shown as 0: entry counts, allocation (total, %alloc), and the RTS's
 * stack numbers (the "no." column numbers this file's nodes).  The report
 * is rewritten whole (temporary name, then rename) after each batch of
 * samples, so the file named is always a complete report of the ticks
 * received so far.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile.h"

struct prof_node {
    uint32_t cc;                /* cost-centre id; UINT32_MAX: MAIN */
    uint32_t parent, child, sibling;    /* indices; 0 (MAIN) = none */
    uint64_t ticks, inherited;
    unsigned depth;
};

struct profile_prof {
    const char *path;
    FILE *msgs;
    struct profile_run run;
    struct profile_ccs ccs;
    struct prof_node *nodes;
    uint32_t n_nodes, cap_nodes;
    uint64_t total;
    uint64_t ignored;           /* ticks of the RTS's own cost centres */
    uint64_t tick_ns;
    uint64_t caps_seen;         /* bit per capability below 64 */
    bool dirty;
};

int profile_prof_open(struct profile_prof **out, const char *path, FILE *msgs)
{
    struct profile_prof *pp = calloc(1, sizeof *pp);
    if (pp == NULL)
        return -ENOMEM;
    pp->nodes = calloc(64, sizeof *pp->nodes);
    if (pp->nodes == NULL) {
        free(pp);
        return -ENOMEM;
    }
    pp->cap_nodes = 64;
    pp->n_nodes = 1;
    pp->nodes[0].cc = UINT32_MAX;
    pp->path = path;
    pp->msgs = msgs;
    pp->tick_ns = 1000000;      /* the RTS's default until PROF_BEGIN says */
    pp->dirty = true;           /* a report, if empty, from the start */
    *out = pp;
    return 0;
}

static uint32_t prof_child(struct profile_prof *pp, uint32_t parent, uint32_t cc)
{
    for (uint32_t c = pp->nodes[parent].child; c != 0; c = pp->nodes[c].sibling)
        if (pp->nodes[c].cc == cc)
            return c;
    if (pp->n_nodes == pp->cap_nodes) {
        if (pp->cap_nodes >= (1u << 24))
            return 0;
        struct prof_node *v = realloc(pp->nodes, 2 * pp->cap_nodes * sizeof *v);
        if (v == NULL)
            return 0;
        pp->nodes = v;
        pp->cap_nodes *= 2;
    }
    uint32_t n = pp->n_nodes++;
    struct prof_node *k = &pp->nodes[n];
    memset(k, 0, sizeof *k);
    k->cc = cc;
    k->parent = parent;
    k->depth = pp->nodes[parent].depth + 1;
    /* Appended last among its siblings: the tree reads in the order
     * stacks first appeared. */
    uint32_t *link = &pp->nodes[parent].child;
    while (*link != 0)
        link = &pp->nodes[*link].sibling;
    *link = n;
    return n;
}

/* The RTS's ignoreCCS(): ticks of its own cost centres (garbage
 * collection, idling, the system, profiling overhead) count in neither
 * the total nor the tables (+RTS -pa would show them). */
static bool prof_ignored(const struct profile_prof *pp, const struct els_ccs *s)
{
    static const char *const builtin[][2] = {
        { "GC", "GC" }, { "IDLE", "IDLE" }, { "SYSTEM", "SYSTEM" },
        { "OVERHEAD_of", "PROFILING" }, { "DONT_CARE", "MAIN" },
    };
    if (s->depth != 1)
        return false;
    const struct profile_cc *c = profile_ccs_get(&pp->ccs, els_ccs_id(s, 0));
    if (c == NULL)
        return false;
    for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++)
        if (strcmp(c->label, builtin[i][0]) == 0 && strcmp(c->module, builtin[i][1]) == 0)
            return true;
    return false;
}

int profile_prof_event(struct profile_prof *pp, const struct els_event *ev)
{
    struct els_event_data e;
    profile_run_event(&pp->run, ev);
    switch (ev->tag) {
    case ELS_EV_HEAP_PROF_COST_CENTRE:
        if (els_event_decode(ev, &e) == 0)
            return profile_ccs_define(&pp->ccs, &e);
        return 0;
    case ELS_EV_PROF_BEGIN:
        if (els_event_decode(ev, &e) == 0 && e.u.prof_begin.tick_interval > 0)
            pp->tick_ns = e.u.prof_begin.tick_interval;
        return 0;
    case ELS_EV_PROF_SAMPLE_COST_CENTRE: {
        if (els_event_decode(ev, &e) != 0)
            return 0;
        const struct els_ccs *s = &e.u.prof_sample.stack;
        if (prof_ignored(pp, s)) {
            pp->ignored++;
            return 0;
        }
        uint32_t n = 0;
        for (size_t i = s->depth; i > 0; i--) {
            n = prof_child(pp, n, els_ccs_id(s, i - 1));
            if (n == 0)
                return -ENOMEM;
        }
        pp->nodes[n].ticks++;
        pp->total++;
        if (e.u.prof_sample.cap < 64)
            pp->caps_seen |= UINT64_C(1) << e.u.prof_sample.cap;
        pp->dirty = true;
        return 0;
    }
    default:
        return 0;
    }
}

static const char *prof_field(const struct profile_prof *pp, uint32_t cc, int which)
{
    if (cc == UINT32_MAX)
        return which == 2 ? "<built-in>" : "MAIN";
    const struct profile_cc *c = profile_ccs_get(&pp->ccs, cc);
    if (c == NULL)
        return "?";
    return which == 0 ? c->label : which == 1 ? c->module : c->srcloc;
}

static double prof_pct(uint64_t part, uint64_t total)
{
    return total ? 100.0 * (double)part / (double)total : 0.0;
}

struct prof_flat {
    uint32_t cc;
    uint64_t ticks;
};

static int prof_flat_cmp(const void *a, const void *b)
{
    const struct prof_flat *x = a, *y = b;
    if (x->ticks != y->ticks)
        return x->ticks < y->ticks ? 1 : -1;
    return x->cc < y->cc ? -1 : x->cc > y->cc;
}

static void prof_write(struct profile_prof *pp, FILE *f, bool final)
{
    /* Inherited ticks: children have higher indices than their parent. */
    for (uint32_t i = 0; i < pp->n_nodes; i++)
        pp->nodes[i].inherited = pp->nodes[i].ticks;
    for (uint32_t i = pp->n_nodes; i-- > 1;)
        pp->nodes[pp->nodes[i].parent].inherited += pp->nodes[i].inherited;

    char date[64];
    profile_run_date(&pp->run, date, sizeof date);
    unsigned procs = (unsigned)__builtin_popcountll(pp->caps_seen);
    fprintf(f, "\t%s Time and Allocation Profiling Report  (%s)\n\n",
            date, final ? "Final" : "so far");
    fprintf(f, "\t   %s\n\n", pp->run.job[0] ? pp->run.job : "eventlog");
    fprintf(f, "\tRebuilt from an eventlog by eventlog-sink dump --prof: the eventlog\n"
               "\tcarries time samples, not entry counts or allocation; both are\n"
               "\tshown as 0, and \"no.\" numbers this report's nodes, not the RTS's.\n"
               "\tAs in the RTS's report, the %" PRIu64 " ticks of GC, IDLE, SYSTEM and\n"
               "\tprofiling overhead are left out.\n\n", pp->ignored);
    fprintf(f, "\ttotal time  = %12.2f secs   (%" PRIu64 " ticks @ %" PRIu64
            " us, %u processor%s)\n",
            (double)pp->total * (double)pp->tick_ns / 1e9 / (procs ? procs : 1),
            pp->total, pp->tick_ns / 1000, procs ? procs : 1, procs > 1 ? "s" : "");
    fprintf(f, "\ttotal alloc =           0 bytes  (not in the eventlog)\n\n");

    /* Per cost centre, individual ticks over every stack it tops. */
    struct prof_flat *flat = calloc(pp->n_nodes, sizeof *flat);
    size_t nf = 0;
    size_t wl = strlen("COST CENTRE"), wm = strlen("MODULE"), ws = strlen("SRC");
    for (uint32_t i = 0; i < pp->n_nodes; i++) {
        const struct prof_node *k = &pp->nodes[i];
        if (flat != NULL && k->ticks > 0) {
            size_t j = 0;
            while (j < nf && flat[j].cc != k->cc)
                j++;
            if (j == nf)
                flat[nf++].cc = k->cc;
            flat[j].ticks += k->ticks;
        }
        if (i == 0 || k->inherited > 0) {
            size_t l = strlen(prof_field(pp, k->cc, 0)) + k->depth;
            wl = l > wl ? l : wl;
            l = strlen(prof_field(pp, k->cc, 1));
            wm = l > wm ? l : wm;
            l = strlen(prof_field(pp, k->cc, 2));
            ws = l > ws ? l : ws;
        }
    }
    if (flat != NULL) {
        qsort(flat, nf, sizeof *flat, prof_flat_cmp);
        fprintf(f, "%-*s %-*s %-*s %6s %6s\n\n", (int)wl, "COST CENTRE", (int)wm,
                "MODULE", (int)ws, "SRC", "%time", "%alloc");
        for (size_t j = 0; j < nf; j++) {
            /* The RTS's rule: above 1% of the time. */
            if (flat[j].ticks * 100 <= pp->total)
                continue;
            fprintf(f, "%-*s %-*s %-*s %6.1f %6.1f\n", (int)wl,
                    prof_field(pp, flat[j].cc, 0), (int)wm, prof_field(pp, flat[j].cc, 1),
                    (int)ws, prof_field(pp, flat[j].cc, 2),
                    prof_pct(flat[j].ticks, pp->total), 0.0);
        }
        free(flat);
    }

    /* As the RTS's fprintHeader(): each heading right-aligned over its
     * "%time %alloc" pair (12 columns) of the row below. */
    fprintf(f, "\n\n%-*s %-*s %-*s %6s %11s  %12s   %12s\n", (int)wl, "", (int)wm, "",
            (int)ws, "", "", "", "individual", "inherited");
    fprintf(f, "%-*s %-*s %-*s %6s %11s  %5s %6s   %5s %6s\n\n", (int)wl, "COST CENTRE",
            (int)wm, "MODULE", (int)ws, "SRC", "no.", "entries", "%time", "%alloc",
            "%time", "%alloc");
    /* Depth first, children in the order they appeared. */
    uint32_t n = 0;
    for (;;) {
        const struct prof_node *k = &pp->nodes[n];
        if (n == 0 || k->inherited > 0)
            fprintf(f, "%*s%-*s %-*s %-*s %6" PRIu32 " %11d  %5.1f %6.1f   %5.1f %6.1f\n",
                    (int)k->depth, "", (int)(wl - k->depth), prof_field(pp, k->cc, 0),
                    (int)wm, prof_field(pp, k->cc, 1), (int)ws, prof_field(pp, k->cc, 2),
                    n, 0, prof_pct(k->ticks, pp->total), 0.0,
                    prof_pct(k->inherited, pp->total), 0.0);
        if (k->child != 0 && k->inherited > 0) {
            n = k->child;
            continue;
        }
        while (n != 0 && pp->nodes[n].sibling == 0)
            n = pp->nodes[n].parent;
        if (n == 0)
            break;
        n = pp->nodes[n].sibling;
    }
}

static int prof_rewrite(struct profile_prof *pp, bool final)
{
    size_t len = strlen(pp->path);
    char *tmp = malloc(len + 16);
    if (tmp == NULL)
        return -ENOMEM;
    memcpy(tmp, pp->path, len);
    memcpy(tmp + len, ".tmp.XXXXXX", 12);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        int e = -errno;
        free(tmp);
        return e;
    }
    FILE *f = fdopen(fd, "w");
    if (f == NULL) {
        int e = -errno;
        close(fd);
        unlink(tmp);
        free(tmp);
        return e;
    }
    fchmod(fd, 0666 & ~0022);
    prof_write(pp, f, final);
    int rc = 0;
    if (fflush(f) != 0 || (final && fsync(fd) != 0 && errno != EINVAL))
        rc = -errno;
    if (fclose(f) != 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && rename(tmp, pp->path) != 0)
        rc = -errno;
    if (rc != 0)
        unlink(tmp);
    free(tmp);
    if (rc == 0)
        pp->dirty = false;
    return rc;
}

int profile_prof_flush(struct profile_prof *pp)
{
    return pp->dirty ? prof_rewrite(pp, false) : 0;
}

int profile_prof_finish(struct profile_prof *pp, bool clean)
{
    if (pp->total == 0 && pp->msgs != NULL)
        fprintf(pp->msgs, "eventlog-sink dump: %s: the stream holds no time profile "
                "samples (was the program built with -prof and run with +RTS -p?): "
                "the report has no ticks\n", pp->path);
    return prof_rewrite(pp, clean);
}

void profile_prof_free(struct profile_prof *pp)
{
    if (pp == NULL)
        return;
    profile_ccs_free(&pp->ccs);
    free(pp->nodes);
    free(pp);
}
