/*
 * aggr_profile.c: kind=profile, the cost-centre samples of a window read
 * back from their side file and answered as a call tree or as
 * speedscope's file (aggr.h says what each holds; aggr_query.c routes
 * here).  A query's own memory is said in Note [Aggregate memory]
 * (aggr.c).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timeline/aggr_impl.h"
struct tick_walk {
    uint64_t *count;              /* per stack; [n] for the overflow stack */
    uint32_t nstacks;
    uint64_t samples;
};

static int tick_one(void *ctx, uint64_t i, const void *rec)
{
    (void)i;
    struct tick_walk *w = ctx;
    struct tick_rec r;
    memcpy(&r, rec, sizeof r);
    w->count[r.stack < w->nstacks ? r.stack : w->nstacks]++;
    w->samples++;
    return 0;
}

static uint32_t stack_depth(const struct tl_aggr *a, uint32_t s)
{
    return a->stacks.v[s].len / 4;
}

static uint32_t stack_id(const struct tl_aggr *a, uint32_t s, uint32_t i)
{
    uint32_t id;
    memcpy(&id, a->stacks.blob + a->stacks.v[s].off + 4 * (size_t)i, 4);
    return id;
}

static void frame_json(const struct tl_aggr *a, uint32_t cc, bool speedscope,
                       struct strbuf *out)
{
    const struct profile_cc *c = profile_ccs_get(&a->ccs, cc);
    char unknown[24];
    snprintf(unknown, sizeof unknown, "cc%" PRIu32, cc);
    const char *l = c ? c->label : unknown, *m = c ? c->module : "",
               *s = c ? c->srcloc : "";
    sb_puts(out, "{\"name\":");
    sb_json_str(out, l, strlen(l));
    sb_puts(out, speedscope ? ",\"file\":" : ",\"module\":");
    sb_json_str(out, m, strlen(m));
    if (!speedscope) {
        sb_puts(out, ",\"src\":");
        sb_json_str(out, s, strlen(s));
    }
    sb_puts(out, "}");
}

struct tnode { int64_t parent; int64_t frame; uint64_t self, total; };

/* A profile's frames: the cost centres its kept stacks name. */
struct prof {
    const struct tl_aggr *a;
    const uint64_t *count;        /* per stack, 0 when not kept */
    uint32_t ns;
    const int64_t *frame_of;      /* cc id -> frame, -1 */
    const uint32_t *frames;
    uint32_t nframes;
    uint64_t samples;
    const uint64_t *by_rts;
    bool include;
};

/* The frame of cost centre cc. */
static int64_t prof_frame(const struct prof *p, uint32_t cc)
{
    int64_t f = -1;
    if (cc < p->a->ccs.n)
        f = p->frame_of[cc];
    else
        for (uint32_t j = 0; j < p->nframes; j++)
            if (p->frames[j] == cc)
                f = j;
    return f;
}

/* The samples as speedscope's file: -1 out of memory. */
static int prof_speedscope(const struct prof *p, uint64_t t0, uint64_t t1,
                           struct strbuf *out)
{
    sb_puts(out, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
                 "\"exporter\":\"eventlog-sink serve\",\"name\":\"cost centres\","
                 "\"activeProfileIndex\":0,\"shared\":{\"frames\":[");
    for (uint32_t f = 0; f < p->nframes; f++) {
        if (f)
            sb_puts(out, ",");
        frame_json(p->a, p->frames[f], true, out);
    }
    sb_puts(out, "]},\"profiles\":[{\"type\":\"sampled\",\"name\":");
    char nm[96];
    snprintf(nm, sizeof nm, "%" PRIu64 " .. %" PRIu64 " ns", t0, t1);
    sb_json_str(out, nm, strlen(nm));
    sb_puts(out, ",\"unit\":\"none\",\"samples\":[");
    struct strbuf wts = { 0 };
    uint64_t sum = 0;
    bool first = true;
    for (uint32_t s = 0; s < p->ns; s++) {
        if (!p->count[s])
            continue;
        sb_puts(out, first ? "[" : ",[");
        uint32_t d = stack_depth(p->a, s);
        for (uint32_t i = d; i-- > 0;) {
            uint32_t cc = stack_id(p->a, s, i);
            int64_t f = prof_frame(p, cc);
            sb_printf(out, "%s%" PRId64, i + 1 == d ? "" : ",", f);
        }
        sb_puts(out, "]");
        sb_printf(&wts, "%s%" PRIu64, first ? "" : ",", p->count[s]);
        sum += p->count[s];
        first = false;
    }
    sb_puts(out, "],\"weights\":[");
    if (wts.len)
        sb_put(out, wts.p, wts.len);
    bool f = wts.failed;
    sb_free(&wts);
    if (f)
        return -1;
    sb_printf(out, "],\"startValue\":0,\"endValue\":%" PRIu64 "}]}", sum);
    return 0;
}

/* The samples as a call tree: -1 out of memory (nothing written). */
static int prof_tree(const struct prof *p, uint64_t ids_total, uint64_t t0,
                     uint64_t t1, struct strbuf *out)
{
    /* The call tree: nodes by (parent, frame), outermost first, found
     * through slots: (node << 1 | 1) hashed by (parent, frame). */
    size_t nslots = 64, nnodes = 0;
    while (nslots < 2 * (ids_total + 1))
        nslots *= 2;
    uint64_t *slots = calloc(nslots, sizeof *slots);
    struct tnode *nodes = malloc((ids_total + 1) * sizeof *nodes);
    if (!slots || !nodes) {
        free(slots);
        free(nodes);
        return -1;
    }
    nodes[nnodes++] = (struct tnode){ -1, -1, 0, 0 };
    for (uint32_t s = 0; s < p->ns; s++) {
        if (!p->count[s])
            continue;
        uint64_t c = p->count[s];
        size_t cur = 0;
        nodes[0].total += c;
        for (uint32_t i = stack_depth(p->a, s); i-- > 0;) {
            uint32_t cc = stack_id(p->a, s, i);
            int64_t f = prof_frame(p, cc);
            uint64_t h = ((uint64_t)cur * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)f * 0xC2B2AE3D27D4EB4Full);
            size_t sl = (size_t)(h >> 7) & (nslots - 1);
            size_t found = 0;
            while (slots[sl]) {
                size_t n = (size_t)(slots[sl] >> 1);
                if (nodes[n].parent == (int64_t)cur && nodes[n].frame == f) {
                    found = n;
                    break;
                }
                sl = (sl + 1) & (nslots - 1);
            }
            if (!found) {
                found = nnodes++;
                nodes[found] = (struct tnode){ (int64_t)cur, f, 0, 0 };
                slots[sl] = (uint64_t)found << 1 | 1;
            }
            cur = found;
            nodes[cur].total += c;
        }
        nodes[cur].self += c;
    }
    sb_printf(out, "{\"t0\":%" PRIu64 ",\"t1\":%" PRIu64 ",\"samples\":%" PRIu64
              ",\"rts\":{", t0, t1, p->samples);
    for (int k = 1; k < 6; k++)
        sb_printf(out, "%s\"%s\":%" PRIu64, k > 1 ? "," : "", tl_aggr_rts_names[k],
                  p->by_rts[k]);
    sb_printf(out, "},\"rts_included\":%s,\"other\":%" PRIu64 ",\"frames\":[",
              p->include ? "true" : "false", p->count[p->ns]);
    for (uint32_t f = 0; f < p->nframes; f++) {
        if (f)
            sb_puts(out, ",");
        frame_json(p->a, p->frames[f], false, out);
    }
    sb_puts(out, "],\"nodes\":[");
    for (size_t n = 0; n < nnodes; n++)
        sb_printf(out, "%s[%" PRId64 ",%" PRId64 ",%" PRIu64 ",%" PRIu64 "]",
                  n ? "," : "", nodes[n].parent, nodes[n].frame, nodes[n].self,
                  nodes[n].total);
    sb_puts(out, "]}");
    free(slots);
    free(nodes);
    return 0;
}

int tl_aggr_profile(struct tl_aggr *a, const char *qs, uint64_t t0, uint64_t t1,
                    struct strbuf *out)
{
    char format[16] = "tree", rts[16] = "apart";
    tl_aggr_qs_get(qs, "format", format, sizeof format);
    tl_aggr_qs_get(qs, "rts", rts, sizeof rts);
    bool ss = !strcmp(format, "speedscope");
    if (!ss && strcmp(format, "tree"))
        return tl_aggr_fail(out, 400, "format is tree or speedscope");
    bool include = !strcmp(rts, "include");
    if (!include && strcmp(rts, "apart"))
        return tl_aggr_fail(out, 400, "rts is apart or include");
    uint32_t ns = a->stacks.n;
    struct tick_walk w = { .nstacks = ns };
    w.count = calloc(ns + 1, sizeof *w.count);
    void *buf = malloc(TL_SIDE_PAGE * sizeof(struct tick_rec));
    int64_t *frame_of = NULL;     /* cc id -> frame, -1 */
    uint32_t *frames = NULL, nframes = 0;
    int status = 500;
    const char *why = "out of memory";
    if (!w.count || !buf)
        goto out;
    why = "the samples side file could not be read";
    if (tl_side_walk(&a->ticks, t0, t1, buf, tick_one, &w) < 0)
        goto out;
    why = "out of memory";
    uint64_t by_rts[6] = { 0 };
    uint64_t ids_total = 0;
    for (uint32_t s = 0; s < ns; s++) {
        if (!w.count[s])
            continue;
        int k = tl_aggr_rts_kind(a, s);
        by_rts[k] += w.count[s];
        if (k && !include)
            w.count[s] = 0;
        else
            ids_total += stack_depth(a, s);
    }
    frame_of = malloc(a->ccs.n ? a->ccs.n * sizeof *frame_of : 1);
    frames = malloc((ids_total + 1) * sizeof *frames);
    if (!frame_of || !frames)
        goto out;
    for (uint32_t i = 0; i < a->ccs.n; i++)
        frame_of[i] = -1;
    /* Ids beyond the definitions get frames too, named ccN. */
    for (uint32_t s = 0; s < ns; s++) {
        if (!w.count[s])
            continue;
        for (uint32_t i = 0; i < stack_depth(a, s); i++) {
            uint32_t cc = stack_id(a, s, i);
            bool known = false;
            if (cc < a->ccs.n) {
                known = frame_of[cc] >= 0;
                if (!known)
                    frame_of[cc] = nframes;
            } else {
                for (uint32_t f = 0; f < nframes && !known; f++)
                    known = frames[f] == cc;
            }
            if (!known)
                frames[nframes++] = cc;
        }
    }
    struct prof p = { .a = a, .count = w.count, .ns = ns, .frame_of = frame_of,
                      .frames = frames, .nframes = nframes, .samples = w.samples,
                      .by_rts = by_rts, .include = include };
    if ((ss ? prof_speedscope(&p, t0, t1, out)
            : prof_tree(&p, ids_total, t0, t1, out)) < 0)
        goto out;
    status = 200;
out:
    free(w.count);
    free(buf);
    free(frame_of);
    free(frames);
    return status == 200 ? status : tl_aggr_fail(out, status, why);
}
