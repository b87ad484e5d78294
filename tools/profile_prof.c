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
 * shown as 0: entry counts, allocation (total, %alloc, bytes), and the
 * RTS's stack numbers (the "no." column numbers this file's nodes).  The
 * layout is that of +RTS -P, whose "ticks" columns show exactly what the
 * eventlog carries.  Names longer than PROF_NAME_WIDTH are cut in the
 * tables and given in full once at the end (Note [Bounded columns]).  The
 * report is rewritten whole (temporary name, then rename) while samples
 * arrive, at a bounded cadence (Note [Live report cadence]), so the file
 * named is always a complete report of the ticks received up to a second
 * or so before.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "profile.h"

/* Note [Linear in the stream]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A tick walks its stack from MAIN down, finding or making one node per
 * cost centre.  Finding a child by walking its parent's children made a
 * stream whose stacks fan out (thousands of children of one node) cost
 * time quadratic in its stacks; so children are found through a hash
 * index keyed by (parent, cost centre) and appended after their parent's
 * last child (kept), and the flat table sums a cost centre's ticks
 * through another index: a tick costs a few probes, a report a few per
 * node.  Memory is bounded: past PROFILE_PROF_NODES_MAX nodes, a tick
 * whose stack needs a new node is counted in one "(other)" node under
 * MAIN (and in the flat table's "(other)" row); how many is said in the
 * report's header and on the messages stream.
 */

/* Note [Bounded columns]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * GHC's report pads every row's name columns to the longest name in the
 * table, so one 60,000-byte label (a string the program chose) makes
 * every row 60 KB wide.  Here a column is as wide as its longest name
 * but no wider than PROF_NAME_WIDTH (plus the tree's indentation, at
 * most 255: stacks are at most 255 deep): a longer name is cut to
 * PROF_NAME_WIDTH characters ending in "...[K]", and the report ends
 * with a list giving each cut name once in full after its "[K]".  Names
 * are tokens without spaces (profile_word()), so the tables still split
 * on white space.  A row is thus at most a few hundred bytes and the
 * report is bounded by the stream's size times a small factor.
 */
#define PROF_NAME_WIDTH 60

/* Note [Live report cadence]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~
 * The report is rewritten whole, which costs time in proportion to the
 * tree.  Rewriting after every read of a stream made a long stream cost
 * time quadratic in its size.  profile_prof_flush() rewrites only when
 * ticks arrived since the last report and at least PROFILE_PROF_REWRITE_NS
 * (1 s) or ten times the last rewrite's duration, whichever is longer,
 * has passed since the last one: rewriting takes at most about a tenth
 * of the wall time whatever the stream, and a live report lags the
 * stream by about a second.  The caller wakes for a pending rewrite
 * even when no byte arrives (profile_prof_due()); the final report is
 * written at the end whatever the cadence.
 */

enum prof_kind { PROF_CC, PROF_MAIN, PROF_OTHER };

struct prof_node {
    uint32_t cc;                /* cost-centre id, for kind PROF_CC */
    uint32_t parent, child, sibling, last_child;  /* indices; 0 (MAIN) = none */
    uint64_t ticks, inherited;
    uint16_t depth;
    uint8_t kind;
};

struct profile_prof {
    const char *path;
    FILE *msgs;
    struct profile_run run;
    struct profile_ccs ccs;
    struct prof_node *nodes;
    uint32_t n_nodes, cap_nodes;
    struct profile_table children;      /* (parent, cc) -> node */
    uint32_t other_node;                /* 0: none yet */
    uint64_t other;                     /* ticks counted in "(other)" */
    uint64_t total;
    uint64_t ignored;           /* ticks of the RTS's own cost centres */
    uint64_t tick_ns;
    uint64_t caps_seen;         /* bit per capability below 64 */
    bool dirty;
    uint64_t next_due;          /* Note [Live report cadence] */
    uint64_t rewrites;
    uint64_t write_probes;      /* of the last report's indexes */
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
    pp->nodes[0].kind = PROF_MAIN;
    pp->path = path;
    pp->msgs = msgs;
    pp->tick_ns = 1000000;      /* the RTS's default until PROF_BEGIN says */
    pp->dirty = true;           /* a report, if empty, from the start */
    *out = pp;
    return 0;
}

/* Room for one more node: 0 or -ENOMEM. */
static int prof_reserve(struct profile_prof *pp)
{
    if (pp->n_nodes < pp->cap_nodes)
        return 0;
    struct prof_node *v = realloc(pp->nodes, 2 * (size_t)pp->cap_nodes * sizeof *v);
    if (v == NULL)
        return -ENOMEM;
    pp->nodes = v;
    pp->cap_nodes *= 2;
    return 0;
}

/* A new node under parent (room reserved), last among its siblings: the
 * tree reads in the order stacks first appeared. */
static uint32_t prof_new_node(struct profile_prof *pp, uint32_t parent, uint8_t kind,
                              uint32_t cc)
{
    uint32_t n = pp->n_nodes++;
    struct prof_node *k = &pp->nodes[n], *p = &pp->nodes[parent];
    memset(k, 0, sizeof *k);
    k->cc = cc;
    k->kind = kind;
    k->parent = parent;
    k->depth = (uint16_t)(p->depth + 1);
    if (p->child == 0)
        p->child = n;
    else
        pp->nodes[p->last_child].sibling = n;
    p->last_child = n;
    return n;
}

struct prof_child_key {
    const struct prof_node *nodes;
    uint32_t parent, cc;
};

static bool prof_same_child(const void *ctx, uint32_t idx)
{
    const struct prof_child_key *k = ctx;
    const struct prof_node *n = &k->nodes[idx];
    return n->parent == k->parent && n->cc == k->cc && n->kind == PROF_CC;
}

/* The child of parent for cost centre cc, made if new; 0 when the tree
 * is full (Note [Linear in the stream]) or memory is short (*rc). */
static uint32_t prof_child(struct profile_prof *pp, uint32_t parent, uint32_t cc, int *rc)
{
    uint32_t words[2] = { parent, cc };
    uint32_t h = profile_hash_words(words, 2);
    struct prof_child_key key = { pp->nodes, parent, cc };
    int64_t found = profile_table_find(&pp->children, h, prof_same_child, &key);
    if (found >= 0)
        return (uint32_t)found;
    if (pp->n_nodes - (pp->other_node != 0) >= PROFILE_PROF_NODES_MAX)
        return 0;
    if ((*rc = prof_reserve(pp)) != 0 ||
        (*rc = profile_table_add(&pp->children, h, pp->n_nodes)) != 0)
        return 0;
    return prof_new_node(pp, parent, PROF_CC, cc);
}

/* The "(other)" node: Note [Linear in the stream]. */
static uint32_t prof_other_node(struct profile_prof *pp, int *rc)
{
    if (pp->other_node == 0) {
        if ((*rc = prof_reserve(pp)) != 0)
            return 0;
        pp->other_node = prof_new_node(pp, 0, PROF_OTHER, 0);
    }
    return pp->other_node;
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
        int rc = 0;
        uint32_t n = 0;
        for (size_t i = s->depth; i > 0; i--) {
            uint32_t c = prof_child(pp, n, els_ccs_id(s, i - 1), &rc);
            if (c == 0 && rc == 0) {
                c = prof_other_node(pp, &rc);
                pp->other += rc == 0;
                i = 1;          /* the tick is (other)'s */
            }
            if (rc != 0)
                return rc;
            n = c;
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

/* ------------------------------------------------------------------ */
/* The report */

/* Field which (0 label, 1 module, 2 source location) of a node's cost
 * centre, and its length. */
static const char *prof_name(const struct profile_prof *pp, uint8_t kind, uint32_t cc,
                             int which, size_t *len)
{
    const char *s;
    if (kind == PROF_MAIN) {
        s = which == 2 ? "<built-in>" : "MAIN";
    } else if (kind == PROF_OTHER) {
        s = which == 0 ? "(other)" : "-";
    } else {
        const struct profile_cc *c = profile_ccs_get(&pp->ccs, cc);
        if (c != NULL) {
            *len = c->len[which];
            return which == 0 ? c->label : which == 1 ? c->module : c->srcloc;
        }
        s = "?";
    }
    *len = strlen(s);
    return s;
}

static size_t prof_shown(size_t len)
{
    return len > PROF_NAME_WIDTH ? PROF_NAME_WIDTH : len;
}

/* The names cut in this report, numbered in order of first use:
 * Note [Bounded columns]. */
struct prof_cut {
    uint32_t cc;
    uint8_t which;
};
struct prof_cuts {
    struct prof_cut *v;
    uint32_t n, cap;
    struct profile_table index;
};

static bool prof_same_cut(const void *ctx, uint32_t idx)
{
    const struct prof_cut *k = ((const struct prof_cut *const *)ctx)[0];
    const struct prof_cut *v = ((const struct prof_cut *const *)ctx)[1];
    return v[idx].cc == k->cc && v[idx].which == k->which;
}

/* The number of the cut name (cc, which), or 0 when memory is short. */
static uint32_t prof_cut_number(struct prof_cuts *cuts, uint32_t cc, uint8_t which)
{
    struct prof_cut key = { cc, which };
    const struct prof_cut *ctx[2] = { &key, cuts->v };
    uint32_t words[2] = { cc, which };
    uint32_t h = profile_hash_words(words, 2);
    int64_t found = profile_table_find(&cuts->index, h, prof_same_cut, ctx);
    if (found >= 0)
        return (uint32_t)found + 1;
    if (cuts->n == cuts->cap) {
        uint32_t cap = cuts->cap ? 2 * cuts->cap : 16;
        struct prof_cut *v = realloc(cuts->v, cap * sizeof *v);
        if (v == NULL)
            return 0;
        cuts->v = v;
        cuts->cap = cap;
    }
    if (profile_table_add(&cuts->index, h, cuts->n) != 0)
        return 0;
    cuts->v[cuts->n] = key;
    return ++cuts->n;
}

/* A name cell: the name (cut if long) padded to width columns. */
static int prof_cell(FILE *f, const struct profile_prof *pp, struct prof_cuts *cuts,
                     uint8_t kind, uint32_t cc, int which, size_t width)
{
    size_t len;
    const char *s = prof_name(pp, kind, cc, which, &len);
    if (len <= PROF_NAME_WIDTH) {
        fprintf(f, "%s%*s", s, (int)(width - len), "");
        return 0;
    }
    uint32_t k = prof_cut_number(cuts, cc, (uint8_t)which);
    if (k == 0)
        return -ENOMEM;
    char tag[24];
    int tl = snprintf(tag, sizeof tag, "...[%" PRIu32 "]", k);
    fprintf(f, "%.*s%s%*s", PROF_NAME_WIDTH - tl, s, tag, (int)(width - PROF_NAME_WIDTH), "");
    return 0;
}

static double prof_pct(uint64_t part, uint64_t total)
{
    return total ? 100.0 * (double)part / (double)total : 0.0;
}

struct prof_flat {
    uint32_t cc;
    uint8_t kind;
    uint64_t ticks;
};

static bool prof_same_flat(const void *ctx, uint32_t idx)
{
    const struct prof_flat *k = ((const struct prof_flat *const *)ctx)[0];
    const struct prof_flat *v = ((const struct prof_flat *const *)ctx)[1];
    return v[idx].cc == k->cc && v[idx].kind == k->kind;
}

static int prof_flat_cmp(const void *a, const void *b)
{
    const struct prof_flat *x = a, *y = b;
    if (x->ticks != y->ticks)
        return x->ticks < y->ticks ? 1 : -1;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    return x->cc < y->cc ? -1 : x->cc > y->cc;
}

static unsigned prof_digits(uint64_t v)
{
    unsigned n = 1;
    while (v > 9)
        v /= 10, n++;
    return n;
}

/* The RTS's reportPerCCCosts(): per cost centre, its individual ticks
 * over every stack it tops; those above 1% of the time, by ticks. */
static int prof_write_flat(struct profile_prof *pp, FILE *f, struct prof_cuts *cuts)
{
    struct prof_flat *flat = malloc(pp->n_nodes * sizeof *flat);
    struct profile_table index = { 0 };
    size_t nf = 0;
    int rc = flat == NULL ? -ENOMEM : 0;
    for (uint32_t i = 0; i < pp->n_nodes && rc == 0; i++) {
        const struct prof_node *k = &pp->nodes[i];
        if (k->ticks == 0)
            continue;
        struct prof_flat key = { .cc = k->cc, .kind = k->kind };
        const struct prof_flat *ctx[2] = { &key, flat };
        uint32_t words[2] = { k->cc, k->kind };
        uint32_t h = profile_hash_words(words, 2);
        int64_t j = profile_table_find(&index, h, prof_same_flat, ctx);
        if (j < 0) {
            rc = profile_table_add(&index, h, (uint32_t)nf);
            j = (int64_t)nf;
            flat[nf++] = key;
        }
        flat[j].ticks += k->ticks;
    }
    pp->write_probes += index.probes;
    profile_table_free(&index);
    if (rc != 0) {
        free(flat);
        return rc;
    }
    /* The RTS's rule: above 1% of the time. */
    size_t nl = 0;
    for (size_t j = 0; j < nf; j++)
        if (flat[j].ticks * 100 > pp->total)
            flat[nl++] = flat[j];
    qsort(flat, nl, sizeof *flat, prof_flat_cmp);
    size_t w[3] = { strlen("COST CENTRE"), strlen("MODULE"), strlen("SRC") };
    for (size_t j = 0; j < nl; j++)
        for (int c = 0; c < 3; c++) {
            size_t len;
            prof_name(pp, flat[j].kind, flat[j].cc, c, &len);
            w[c] = prof_shown(len) > w[c] ? prof_shown(len) : w[c];
        }
    fprintf(f, "%-*s %-*s %-*s %6s %6s  %5s %9s\n\n", (int)w[0], "COST CENTRE",
            (int)w[1], "MODULE", (int)w[2], "SRC", "%time", "%alloc", "ticks", "bytes");
    for (size_t j = 0; j < nl && rc == 0; j++) {
        for (int c = 0; c < 3 && rc == 0; c++) {
            rc = prof_cell(f, pp, cuts, flat[j].kind, flat[j].cc, c, w[c]);
            if (c < 2)
                fputc(' ', f);
        }
        fprintf(f, " %6.1f %6.1f  %5" PRIu64 " %9d\n", prof_pct(flat[j].ticks, pp->total),
                0.0, flat[j].ticks, 0);
    }
    fputs("\n\n", f);
    free(flat);
    return rc;
}

/* Whether the tree shows node n: MAIN, and nodes with ticks below them. */
static bool prof_shown_node(const struct profile_prof *pp, uint32_t n)
{
    return n == 0 || pp->nodes[n].inherited > 0;
}

/* The RTS's reportCCS(): the call tree, depth first, children in the
 * order they appeared. */
static int prof_write_tree(struct profile_prof *pp, FILE *f, struct prof_cuts *cuts)
{
    size_t w[3] = { strlen("COST CENTRE"), strlen("MODULE"), strlen("SRC") };
    unsigned wn = 3;            /* "no." */
    for (uint32_t i = 0; i < pp->n_nodes; i++) {
        const struct prof_node *k = &pp->nodes[i];
        if (!prof_shown_node(pp, i))
            continue;
        for (int c = 0; c < 3; c++) {
            size_t len;
            prof_name(pp, k->kind, k->cc, c, &len);
            len = prof_shown(len) + (c == 0 ? k->depth : 0);
            w[c] = len > w[c] ? len : w[c];
        }
        wn = prof_digits(i) > wn ? prof_digits(i) : wn;
    }
    fprintf(f, "%-*s %-*s %-*s %-*s %11s  %12s   %12s\n", (int)w[0], "", (int)w[1], "",
            (int)w[2], "", (int)wn, "", "", "individual", "inherited");
    fprintf(f, "%-*s %-*s %-*s %-*s %11s  %5s %6s   %5s %6s  %5s %9s\n\n", (int)w[0],
            "COST CENTRE", (int)w[1], "MODULE", (int)w[2], "SRC", (int)wn, "no.",
            "entries", "%time", "%alloc", "%time", "%alloc", "ticks", "bytes");
    int rc = 0;
    uint32_t n = 0;
    while (rc == 0) {
        const struct prof_node *k = &pp->nodes[n];
        if (prof_shown_node(pp, n)) {
            fprintf(f, "%*s", (int)k->depth, "");
            for (int c = 0; c < 3 && rc == 0; c++) {
                rc = prof_cell(f, pp, cuts, k->kind, k->cc, c, w[c] - (c == 0 ? k->depth : 0));
                if (c < 2)
                    fputc(' ', f);
            }
            fprintf(f, " %*" PRIu32 " %11d  %5.1f  %5.1f   %5.1f  %5.1f  %5" PRIu64 " %9d\n",
                    (int)wn, n, 0, prof_pct(k->ticks, pp->total), 0.0,
                    prof_pct(k->inherited, pp->total), 0.0, k->ticks, 0);
        }
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
    return rc;
}

/* The names cut in the tables, in full: Note [Bounded columns]. */
static void prof_write_cuts(const struct profile_prof *pp, FILE *f, const struct prof_cuts *cuts)
{
    static const char *const column[] = { "COST CENTRE", "MODULE", "SRC" };
    if (cuts->n == 0)
        return;
    fprintf(f, "\n\nNames longer than %d characters are cut in the tables above and end\n"
               "in \"...[K]\"; in full:\n\n", PROF_NAME_WIDTH);
    for (uint32_t k = 0; k < cuts->n; k++) {
        size_t len;
        const char *s = prof_name(pp, PROF_CC, cuts->v[k].cc, cuts->v[k].which, &len);
        fprintf(f, "[%" PRIu32 "] %s %s\n", k + 1, column[cuts->v[k].which], s);
    }
}

static int prof_write(struct profile_prof *pp, FILE *f, bool final)
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
    fprintf(f, "\tRebuilt from an eventlog by eventlog-sink dump --prof, in +RTS -P's\n"
               "\tlayout: the eventlog carries the time samples (ticks), not entry\n"
               "\tcounts or allocation; both are shown as 0, and \"no.\" numbers this\n"
               "\treport's nodes, not the RTS's.\n"
               "\tAs in the RTS's report, the %" PRIu64 " ticks of GC, IDLE, SYSTEM and\n"
               "\tprofiling overhead are left out.\n", pp->ignored);
    if (pp->other > 0)
        fprintf(f, "\t%" PRIu64 " ticks of stacks beyond the report's %u call-tree\n"
                   "\tnodes are counted in (other).\n", pp->other, PROFILE_PROF_NODES_MAX);
    fprintf(f, "\n\ttotal time  = %12.2f secs   (%" PRIu64 " ticks @ %" PRIu64
            " us, %u processor%s)\n",
            (double)pp->total * (double)pp->tick_ns / 1e9 / (procs ? procs : 1),
            pp->total, pp->tick_ns / 1000, procs ? procs : 1, procs > 1 ? "s" : "");
    fprintf(f, "\ttotal alloc =           0 bytes  (not in the eventlog)\n\n");

    struct prof_cuts cuts = { 0 };
    pp->write_probes = 0;
    int rc = prof_write_flat(pp, f, &cuts);
    if (rc == 0)
        rc = prof_write_tree(pp, f, &cuts);
    if (rc == 0)
        prof_write_cuts(pp, f, &cuts);
    pp->write_probes += cuts.index.probes;
    profile_table_free(&cuts.index);
    free(cuts.v);
    return rc;
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
    int rc = prof_write(pp, f, final);
    if (fflush(f) != 0 || (final && fsync(fd) != 0 && errno != EINVAL))
        rc = rc ? rc : -errno;
    if (fclose(f) != 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && rename(tmp, pp->path) != 0)
        rc = -errno;
    if (rc != 0)
        unlink(tmp);
    free(tmp);
    if (rc == 0) {
        pp->dirty = false;
        pp->rewrites++;
    }
    return rc;
}

static uint64_t prof_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int profile_prof_flush(struct profile_prof *pp, uint64_t now_ns)
{
    if (!pp->dirty || now_ns < pp->next_due)
        return 0;
    uint64_t t0 = prof_clock_ns();
    int rc = prof_rewrite(pp, false);
    uint64_t took = prof_clock_ns() - t0;
    uint64_t gap = took > PROFILE_PROF_REWRITE_NS / 10 ? 10 * took : PROFILE_PROF_REWRITE_NS;
    pp->next_due = now_ns + gap;
    return rc;
}

uint64_t profile_prof_due(const struct profile_prof *pp)
{
    return pp->dirty ? pp->next_due : UINT64_MAX;
}

int profile_prof_finish(struct profile_prof *pp, bool clean)
{
    if (pp->total == 0 && pp->msgs != NULL)
        fprintf(pp->msgs, "eventlog-sink dump: %s: the stream holds no time profile "
                "samples (was the program built with -prof and run with +RTS -p?): "
                "the report has no ticks\n", pp->path);
    if (pp->other > 0 && pp->msgs != NULL)
        fprintf(pp->msgs, "eventlog-sink dump: %s: %" PRIu64 " ticks of stacks beyond "
                "the report's %u call-tree nodes are counted in (other)\n",
                pp->path, pp->other, PROFILE_PROF_NODES_MAX);
    return prof_rewrite(pp, clean);
}

void profile_prof_stats(const struct profile_prof *pp, struct profile_stats *st)
{
    *st = (struct profile_stats){
        .probes = pp->children.probes + pp->write_probes,
        .entries = pp->n_nodes,
        .other = pp->other,
        .rewrites = pp->rewrites,
    };
}

void profile_prof_free(struct profile_prof *pp)
{
    if (pp == NULL)
        return;
    profile_ccs_free(&pp->ccs);
    profile_table_free(&pp->children);
    free(pp->nodes);
    free(pp);
}
