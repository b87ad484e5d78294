/*
 * aggr_query.c: the aggregates' answers (kind=heap, durations, spans,
 * and the route to kind=profile in aggr_profile.c; aggr.h says what each
 * holds), and the spans of the timeline's span lanes
 * (tl_aggr_put_spans), read back by window from the side files.  A query's own memory is said in Note [Aggregate memory]
 * (aggr.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timeline/aggr_impl.h"
#include "timeline/index.h"

int tl_aggr_fail(struct strbuf *out, int status, const char *msg)
{
    sb_puts(out, "{\"error\":");
    sb_json_str(out, msg, strlen(msg));
    sb_puts(out, "}");
    return status;
}

bool tl_aggr_qs_get(const char *qs, const char *key, char *val, size_t n)
{
    size_t kl = strlen(key);
    for (const char *p = qs; p && *p;) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        if (len > kl && p[kl] == '=' && !strncmp(p, key, kl)) {
            size_t vl = len - kl - 1;
            if (vl >= n)
                vl = n - 1;
            memcpy(val, p + kl + 1, vl);
            val[vl] = 0;
            return true;
        }
        p = amp ? amp + 1 : NULL;
    }
    return false;
}

/* 0 (absent: *out unchanged, or a decimal number), -1 malformed. */
static int qs_u64(const char *qs, const char *key, uint64_t *out)
{
    char v[32];
    if (!tl_aggr_qs_get(qs, key, v, sizeof v))
        return 0;
    if (!*v || strspn(v, "0123456789") != strlen(v) || strlen(v) > 19)
        return -1;
    *out = strtoull(v, NULL, 10);
    return 0;
}

static const char *band_name(const struct tl_aggr *a, uint32_t b, size_t *n)
{
    *n = a->bands.v[b].aux_len;
    return a->bands.blob + a->bands.v[b].aux_off;
}

static const char *breakdown_name(uint32_t b)
{
    static const char *const names[] = {
        NULL, "cost-centre stack (-hc)", "module (-hm)",
        "closure description (-hd)", "type (-hy)", "retainer set (-hr)",
        "biography (-hb)", "closure type (-hT)",
    };
    return b < sizeof names / sizeof names[0] ? names[b] : NULL;
}

/* ------------------------------------------------------------------------
 * kind=heap
 * ------------------------------------------------------------------------ */

struct heap_walk {
    uint64_t t0, t1, px, count;
    struct cen_rec *list, *perpix, first, last;
    bool have_perpix;
};

static int heap_pick(void *ctx, uint64_t i, const void *rec)
{
    (void)i;
    struct heap_walk *w = ctx;
    struct cen_rec c;
    memcpy(&c, rec, sizeof c);
    if (w->count == 0)
        w->first = c;
    w->last = c;
    if (w->count < w->px)
        w->list[w->count] = c;
    uint64_t pix = (uint64_t)((unsigned __int128)(c.t - w->t0) * w->px
                              / ((unsigned __int128)(w->t1 - w->t0) + 1));
    w->perpix[pix] = c;
    w->perpix[pix].era |= 0x80000000u;   /* marks a pixel in use */
    w->count++;
    return 0;
}

/* Call fn for each band sample of census c. */
static int census_each(struct tl_aggr *a, const struct cen_rec *c, struct hs_rec *buf,
                       void (*fn)(void *ctx, const struct hs_rec *r), void *ctx)
{
    for (uint64_t i = 0; i < c->n;) {
        uint64_t k = c->n - i < TL_SIDE_PAGE ? c->n - i : TL_SIDE_PAGE;
        int rc = tl_side_read(&a->hs, c->first + i, k, buf);
        if (rc < 0)
            return rc;
        for (uint64_t j = 0; j < k; j++)
            fn(ctx, &buf[j]);
        i += k;
    }
    return 0;
}

struct heap_acc {
    uint64_t *vals;               /* per band */
    uint8_t *seen;
    int64_t *slot;                /* series row, -1 none */
    uint64_t *series;             /* rows x ncen */
    uint64_t *total;
    size_t col, ncen;
};

static void acc_last(void *ctx, const struct hs_rec *r)
{
    struct heap_acc *h = ctx;
    h->vals[r->band] += r->bytes;
    h->seen[r->band] = 1;
}

static void acc_seen(void *ctx, const struct hs_rec *r)
{
    struct heap_acc *h = ctx;
    h->seen[r->band] = 1;
}

static void acc_series(void *ctx, const struct hs_rec *r)
{
    struct heap_acc *h = ctx;
    h->total[h->col] += r->bytes;
    if (h->slot[r->band] >= 0)
        h->series[(size_t)h->slot[r->band] * h->ncen + h->col] += r->bytes;
}

static const int64_t *rank_key;
static int rank_cmp(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    if (rank_key[a] != rank_key[b])
        return rank_key[a] > rank_key[b] ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* What a heap answer shows: the columns sampled, the bands ranked. */
struct heap_view {
    bool growth, every, cut;
    uint64_t count, rows;
    uint32_t nseen;
    const struct cen_rec *cols;
    size_t ncen;
    const uint32_t *order;        /* bands by rank */
    const uint64_t *firstv;       /* per band, at the first census */
};

static void heap_json(struct tl_aggr *a, uint64_t t0, uint64_t t1,
                      const struct heap_view *v, const struct heap_acc *h,
                      struct strbuf *out)
{
    const char *bd = a->have_breakdown ? breakdown_name(a->breakdown) : NULL;
    sb_printf(out, "{\"t0\":%" PRIu64 ",\"t1\":%" PRIu64 ",\"unit\":\"bytes\","
              "\"breakdown\":", t0, t1);
    if (bd)
        sb_json_str(out, bd, strlen(bd));
    else
        sb_puts(out, "null");
    sb_printf(out, ",\"order\":\"%s\",\"censuses\":%" PRIu64 ",\"sampling\":\"%s\","
              "\"times\":[", v->growth ? "growth" : "size", v->count,
              v->every ? "every" : "last_per_pixel");
    for (size_t i = 0; i < v->ncen; i++)
        sb_printf(out, "%s%" PRIu64, i ? "," : "", v->cols[i].t);
    sb_puts(out, "],\"total\":[");
    for (size_t i = 0; i < v->ncen; i++)
        sb_printf(out, "%s%" PRIu64, i ? "," : "", h->total[i]);
    sb_puts(out, "],\"bands\":[");
    for (uint64_t r = 0; r < v->rows; r++) {
        uint32_t b = v->order[r];
        size_t n;
        const char *nm = band_name(a, b, &n);
        sb_puts(out, r ? ",{\"name\":" : "{\"name\":");
        sb_json_str(out, nm, n);
        sb_printf(out, ",\"size\":%" PRIu64 ",\"growth\":%" PRId64 ",\"series\":[",
                  h->vals[b], (int64_t)h->vals[b] - (int64_t)v->firstv[b]);
        for (size_t i = 0; i < v->ncen; i++)
            sb_printf(out, "%s%" PRIu64, i ? "," : "", h->series[r * v->ncen + i]);
        sb_puts(out, "]}");
    }
    sb_printf(out, "],\"bands_more\":%" PRIu64 ",\"bands_cut_to_fit\":%s,"
              "\"bands_seen\":%" PRIu32 ",\"band_table\":{\"bands\":%" PRIu32
              ",\"max\":%u,\"refused_samples\":%" PRIu64 "},\"censuses_total\":%"
              PRIu64 ",\"censuses_unfinished\":%" PRIu64 ",\"lost\":%" PRIu64 "}",
              v->nseen - v->rows, v->cut ? "true" : "false", v->nseen, a->bands.n,
              TL_HEAP_BANDS_MAX, a->band_refused, a->cen.n, a->cen_unfinished,
              a->cen.lost + a->hs.lost);
}

static int q_heap(struct tl_aggr *a, const char *qs, uint64_t t0, uint64_t t1,
                  struct strbuf *out)
{
    uint64_t px = 1000, nb = 32;
    char order[16] = "size";
    if (qs_u64(qs, "px", &px) < 0 || qs_u64(qs, "bands", &nb) < 0)
        return tl_aggr_fail(out, 400, "px and bands are decimal integers");
    if (px < 1 || px > 8192)
        return tl_aggr_fail(out, 400, "px must be 1 .. 8192");
    tl_aggr_qs_get(qs, "order", order, sizeof order);
    bool growth = !strcmp(order, "growth");
    if (!growth && strcmp(order, "size"))
        return tl_aggr_fail(out, 400, "order is size or growth");
    int status = 500;
    const char *why = "out of memory";
    uint32_t nbands = a->bands.n;
    struct heap_walk w = { .t0 = t0, .t1 = t1, .px = px };
    struct heap_acc h = { 0 };
    struct cen_rec *cols = NULL;
    uint32_t *order_v = NULL;
    int64_t *key = NULL;
    uint64_t *firstv = NULL;
    void *buf = malloc(TL_SIDE_PAGE * sizeof(struct cen_rec));
    w.list = calloc(px, sizeof *w.list);
    w.perpix = calloc(px, sizeof *w.perpix);
    h.vals = calloc(nbands + 1, sizeof *h.vals);
    firstv = calloc(nbands + 1, sizeof *firstv);
    h.seen = calloc(nbands + 1, 1);
    h.slot = malloc((nbands + 1) * sizeof *h.slot);
    key = calloc(nbands + 1, sizeof *key);
    order_v = malloc((nbands + 1) * sizeof *order_v);
    if (!buf || !w.list || !w.perpix || !h.vals || !firstv || !h.seen || !h.slot
        || !key || !order_v)
        goto out;
    why = "the heap side file could not be read";
    if (tl_side_walk(&a->cen, t0, t1, buf, heap_pick, &w) < 0)
        goto out;
    size_t ncen = 0;
    bool every = w.count <= px;
    if (every) {
        cols = w.list;
        ncen = (size_t)w.count;
    } else {
        for (uint64_t p = 0; p < px; p++)
            if (w.perpix[p].era & 0x80000000u)
                w.perpix[ncen++] = w.perpix[p];
        cols = w.perpix;
    }
    for (size_t i = 0; i < ncen; i++)
        cols[i].era &= 0x7fffffffu;
    if (w.count) {
        struct heap_acc f = { .vals = firstv, .seen = h.seen };
        if (census_each(a, &w.last, buf, acc_last, &h) < 0
            || census_each(a, &w.first, buf, acc_last, &f) < 0)
            goto out;
        for (size_t i = 0; i < ncen; i++)
            if (census_each(a, &cols[i], buf, acc_seen, &h) < 0)
                goto out;
    }
    uint32_t nseen = 0;
    for (uint32_t b = 0; b < nbands; b++) {
        key[b] = growth ? (int64_t)h.vals[b] - (int64_t)firstv[b] : (int64_t)h.vals[b];
        if (h.seen[b])
            order_v[nseen++] = b;
        h.slot[b] = -1;
    }
    rank_key = key;
    qsort(order_v, nseen, sizeof *order_v, rank_cmp);
    uint64_t rows = nb == 0 || nb > nseen ? nseen : nb;
    bool cut = false;
    if (ncen && rows * ncen > TL_HEAP_CELLS_MAX) {
        rows = TL_HEAP_CELLS_MAX / ncen;
        cut = true;
    }
    for (uint64_t r = 0; r < rows; r++)
        h.slot[order_v[r]] = (int64_t)r;
    why = "out of memory";
    h.series = calloc(rows * ncen + 1, sizeof *h.series);
    h.total = calloc(ncen + 1, sizeof *h.total);
    if (!h.series || !h.total)
        goto out;
    h.ncen = ncen;
    why = "the heap side file could not be read";
    for (size_t i = 0; i < ncen; i++) {
        h.col = i;
        if (census_each(a, &cols[i], buf, acc_series, &h) < 0)
            goto out;
    }
    struct heap_view v = { .growth = growth, .every = every, .cut = cut,
                           .count = w.count, .rows = rows, .nseen = nseen,
                           .cols = cols, .ncen = ncen, .order = order_v,
                           .firstv = firstv };
    heap_json(a, t0, t1, &v, &h, out);
    status = 200;
out:
    free(buf);
    free(w.list);
    free(w.perpix);
    free(h.vals);
    free(firstv);
    free(h.seen);
    free(h.slot);
    free(h.series);
    free(h.total);
    free(key);
    free(order_v);
    return status == 200 ? status : tl_aggr_fail(out, status, why);
}

/* ------------------------------------------------------------------------
 * kind=durations, kind=spans
 * ------------------------------------------------------------------------ */

struct dur { uint32_t name; uint64_t d; };

struct name_acc {
    uint64_t count, total, max, max_s, max_e;
};

struct dur_walk {
    struct name_acc *acc;
    struct dur *v;
    size_t n, cap;
    bool exact;
    uint64_t spans;
};

static int dur_one(void *ctx, uint64_t i, const void *rec)
{
    (void)i;
    struct dur_walk *w = ctx;
    struct span_rec s;
    memcpy(&s, rec, sizeof s);
    uint64_t d = s.end >= s.start ? s.end - s.start : 0;
    struct name_acc *n = &w->acc[s.name];
    if (!n->count || d > n->max)
        n->max = d, n->max_s = s.start, n->max_e = s.end;
    n->count++;
    n->total += d;
    w->spans++;
    if (w->exact && w->n < w->cap)
        w->v[w->n++] = (struct dur){ s.name, d };
    return 0;
}

static int count_one(void *ctx, uint64_t i, const void *rec)
{
    (void)i;
    (void)rec;
    ++*(uint64_t *)ctx;
    return 0;
}

static int dur_cmp(const void *x, const void *y)
{
    const struct dur *a = x, *b = y;
    if (a->name != b->name)
        return a->name < b->name ? -1 : 1;
    return a->d < b->d ? -1 : a->d > b->d;
}

static const struct name_acc *sort_acc;
static int name_cmp(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    if (sort_acc[a].total != sort_acc[b].total)
        return sort_acc[a].total > sort_acc[b].total ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* Nearest rank: the ceil(p/100 n)-th smallest of v[0..n). */
static uint64_t nearest_rank(const struct dur *v, uint64_t n, unsigned p)
{
    uint64_t r = (p * n + 99) / 100;
    return v[r ? r - 1 : 0].d;
}

static int q_durations(struct tl_aggr *a, uint64_t t0, uint64_t t1, struct strbuf *out)
{
    uint32_t nn = a->names.n;
    struct dur_walk w = { .exact = true };
    w.acc = calloc(nn + 1, sizeof *w.acc);
    uint32_t *ord = malloc((nn + 1) * sizeof *ord);
    uint64_t *at = calloc(nn + 1, sizeof *at);   /* first index in v */
    void *buf = malloc(TL_SIDE_PAGE * sizeof(struct span_rec));
    if (!w.acc || !ord || !at || !buf) {
        free(w.acc), free(ord), free(at), free(buf);
        return tl_aggr_fail(out, 500, "out of memory");
    }
    /* Count first: a window past the bound is answered without
     * gathering its durations at all. */
    uint64_t in_window = 0;
    int rc = tl_side_walk(&a->spans, t0, t1, buf, count_one, &in_window);
    w.exact = in_window <= TL_SPANS_EXACT_MAX;
    if (w.exact && in_window) {
        w.v = malloc(in_window * sizeof *w.v);
        w.cap = in_window;
        if (!w.v)
            rc = -ENOMEM;
    }
    if (rc == 0)
        rc = tl_side_walk(&a->spans, t0, t1, buf, dur_one, &w);
    free(buf);
    if (rc < 0) {
        free(w.acc), free(ord), free(at), free(w.v);
        return tl_aggr_fail(out, 500, rc == -ENOMEM ? "out of memory"
                                            : "the spans side file could not be read");
    }
    if (w.exact && w.n > 0) {         /* qsort() of no array is undefined */
        qsort(w.v, w.n, sizeof *w.v, dur_cmp);
        for (size_t i = w.n; i-- > 0;)
            at[w.v[i].name] = i;
    }
    uint32_t k = 0;
    for (uint32_t i = 0; i < nn; i++)
        if (w.acc[i].count)
            ord[k++] = i;
    sort_acc = w.acc;
    qsort(ord, k, sizeof *ord, name_cmp);
    sb_printf(out, "{\"t0\":%" PRIu64 ",\"t1\":%" PRIu64 ",\"rule\":\"end_in_window\","
              "\"spans\":%" PRIu64 ",\"exact\":%s,\"names\":[", t0, t1, w.spans,
              w.exact ? "true" : "false");
    for (uint32_t j = 0; j < k; j++) {
        uint32_t i = ord[j];
        const struct name_acc *n = &w.acc[i];
        sb_puts(out, j ? ",{\"name\":" : "{\"name\":");
        sb_json_str(out, a->names.blob + a->names.v[i].off, a->names.v[i].len);
        sb_printf(out, ",\"count\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"mean_ns\":",
                  n->count, n->total);
        sb_json_num(out, (double)n->total / (double)n->count);
        if (w.exact)
            sb_printf(out, ",\"p50_ns\":%" PRIu64 ",\"p99_ns\":%" PRIu64,
                      nearest_rank(w.v + at[i], n->count, 50),
                      nearest_rank(w.v + at[i], n->count, 99));
        else
            sb_puts(out, ",\"p50_ns\":null,\"p99_ns\":null");
        sb_printf(out, ",\"max_ns\":%" PRIu64 ",\"longest\":[%" PRIu64 ",%" PRIu64 "]}",
                  n->max, n->max_s, n->max_e);
    }
    sb_printf(out, "],\"unmatched_ends\":%" PRIu64 ",\"open\":%" PRIu64
              ",\"pending\":%zu,\"open_refused\":%" PRIu64 ",\"names_refused\":%"
              PRIu64 ",\"released_early\":%" PRIu64 ",\"lost\":%" PRIu64 "}",
              a->unmatched, a->open_live, a->pend_n, a->open_refused,
              a->names_refused, a->released_early, a->spans.lost);
    free(w.acc), free(ord), free(at), free(w.v);
    return 200;
}

struct list_walk {
    struct tl_aggr *a;
    struct strbuf *out;
    uint64_t total, max, stop;
};

static void put_span(struct list_walk *w, uint64_t s, int64_t e, uint32_t name)
{
    if (w->total < w->max) {
        sb_printf(w->out, "%s[%" PRIu64 ",%" PRId64 ",", w->total ? "," : "", s, e);
        sb_json_str(w->out, w->a->names.blob + w->a->names.v[name].off,
                    w->a->names.v[name].len);
        sb_puts(w->out, "]");
    }
    w->total++;
}

static int list_one(void *ctx, uint64_t i, const void *rec)
{
    (void)i;
    struct list_walk *w = ctx;
    struct span_rec s;
    memcpy(&s, rec, sizeof s);
    put_span(w, s.start, (int64_t)s.end, s.name);
    return w->total >= w->stop;
}

int tl_aggr_put_spans(struct tl_aggr *a, uint64_t t0, uint64_t t1, uint64_t max,
                      uint64_t stop, bool opens, struct strbuf *out, uint64_t *total)
{
    void *buf = malloc(TL_SIDE_PAGE * sizeof(struct span_rec));
    if (!buf)
        return -ENOMEM;
    struct list_walk w = { .a = a, .out = out, .max = max, .stop = stop };
    int rc = tl_side_walk_overlap(&a->spans, t0, t1, buf, list_one, &w);
    free(buf);
    if (rc < 0)
        return rc;
    /* The starts still open, from the same table their ends will be
     * matched against (match()). */
    for (uint32_t k = 0; opens && k < a->keys.n && k < a->heads_cap && w.total < stop; k++) {
        uint32_t key[3];
        memcpy(key, a->keys.blob + a->keys.v[k].off, sizeof key);
        for (uint32_t i = a->heads[k]; i && w.total < stop; i = a->open[i - 1].prev)
            if (a->open[i - 1].t <= t1)
                put_span(&w, a->open[i - 1].t, -1, key[1]);
    }
    *total = w.total;
    return 0;
}

static int q_spans(struct tl_aggr *a, const char *qs, uint64_t t0, uint64_t t1,
                   struct strbuf *out)
{
    uint64_t n = 1000, total;
    if (qs_u64(qs, "n", &n) < 0)
        return tl_aggr_fail(out, 400, "n is a decimal integer");
    if (n > TL_SPANS_LIST_MAX)
        n = TL_SPANS_LIST_MAX;
    struct strbuf list = { 0 };
    int rc = tl_aggr_put_spans(a, t0, t1, n, UINT64_MAX, false, &list, &total);
    if (rc < 0 || list.failed) {
        sb_free(&list);
        return tl_aggr_fail(out, 500, rc == -ENOMEM || list.failed ? "out of memory"
                                      : "the spans side file could not be read");
    }
    sb_printf(out, "{\"t0\":%" PRIu64 ",\"t1\":%" PRIu64 ",\"total\":%" PRIu64
              ",\"truncated\":%s,\"spans\":[", t0, t1, total,
              total > n ? "true" : "false");
    if (list.len)
        sb_put(out, list.p, list.len);
    sb_puts(out, "]}");
    sb_free(&list);
    return 200;
}

/* ------------------------------------------------------------------------
 * The route
 * ------------------------------------------------------------------------ */

int tl_aggr_route(struct tl_index *ix, const char *kind, const char *qs,
                  struct strbuf *out)
{
    if (!kind || (strcmp(kind, "heap") && strcmp(kind, "durations")
                  && strcmp(kind, "spans") && strcmp(kind, "profile")))
        return 0;
    if (!qs)
        qs = "";
    struct tl_aggr *a = tl_index_aggr(ix);
    struct tl_index_stats st;
    tl_index_stats(ix, &st);
    uint64_t t0 = st.t_first, t1 = st.t_last;
    if (qs_u64(qs, "t0", &t0) < 0 || qs_u64(qs, "t1", &t1) < 0)
        return tl_aggr_fail(out, 400, "t0 and t1 are decimal integers");
    if (t1 < t0)
        return tl_aggr_fail(out, 400, "t1 is before t0");
    if (!strcmp(kind, "heap"))
        return q_heap(a, qs, t0, t1, out);
    if (!strcmp(kind, "durations"))
        return q_durations(a, t0, t1, out);
    if (!strcmp(kind, "spans"))
        return q_spans(a, qs, t0, t1, out);
    return tl_aggr_profile(a, qs, t0, t1, out);
}
