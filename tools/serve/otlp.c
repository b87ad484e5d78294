/*
 * otlp.c: serve's OpenTelemetry export (see otlp.h): the flags, one
 * exporter for the whole process (one queue, one thread, one bound),
 * and per followed program its resource, its events' logs and spans
 * (tools/otlp/events.c, fed by the model's tap) and, at each export
 * interval, its model's series as one metrics request.
 *
 * Note [Exporting from serve's one thread]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Everything here runs in serve's poll loop, between reads: the walk
 * and the encoding of a program's metrics (tens of microseconds), the
 * events' records as the model reads them.  The network is the
 * exporter thread's alone: otlp_exporter_enqueue() only takes the
 * queue's lock, and a full queue drops its oldest batch (counted) rather
 * than wait, so a collector that is slow or gone never holds up the
 * reading of a stream.  Metrics go at each interval (OTEL_METRIC_EXPORT_
 * INTERVAL); logs and spans at least every second (SERVE_OTLP_EVENTS_MS,
 * as OpenTelemetry's batch processors do) or at every full batch.
 */
#if defined(HAVE_CONFIG_H)
#include "config.h"
#endif

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "eventlog-sink.h"
#include "../monitor/model_impl.h"
#include "../monitor/series.h"
#include "otlp/config.h"
#include "otlp/encode.h"
#include "otlp/events.h"
#include "otlp/export.h"
#include "otlp/metrics.h"
#include "otlp.h"
#include "../tool.h"

#define SERVE_OTLP_EVENTS_MS 1000       /* logs and spans wait at most this */
#define SERVE_OTLP_FLUSH_MS 2000        /* what is pending at exit gets this */

const char serve_otlp_usage[] =
"OpenTelemetry export (OTLP over HTTP to a collector; on when a flag\n"
"below is given or OTEL_EXPORTER_OTLP_ENDPOINT or a per-signal\n"
"endpoint variable is set; then the other OTEL_* variables are read\n"
"too, and a flag wins over its variable):\n"
"  --otlp-endpoint URL   base URL (default http://localhost:4318; /v1/\n"
"                        metrics, /v1/logs, /v1/traces appended); plain\n"
"                        http only, to loopback unless --otlp-insecure\n"
"                        (forward with TLS from a collector on this host)\n"
"  --otlp-protocol P     http/protobuf (default) or http/json\n"
"  --otlp-header K=V     a request header (repeatable; URL-encoded value)\n"
"  --otlp-timeout MS     a request's timeout (default 10000)\n"
"  --otlp-interval MS    metrics every MS (default 60000)\n"
"  --otlp-signals LIST   metrics,logs,traces (default all) or none\n"
"  --otlp-insecure       allow plain http to a host other than loopback\n"
"  --otlp-max-rate N     logs and spans per second per program, each\n"
"                        (default 100; 0: no limit); the rest counted\n"
"  --otlp-queue-bytes N  the export queue's bound (default 8388608)\n"
"  --otlp-service-name S service.name (default: each program's name)\n"
"  --otlp-gc-spans       each GC pause as a span \"GC\" too\n";

/* ------------------------------------------------------------------------
 * State
 * ------------------------------------------------------------------------ */

/* Resource attributes we add beyond the configuration's. */
#define SERVE_OTLP_OWN_ATTRS 4

struct serve_otlp_prog {
    struct serve_otlp_prog *prev, *next;
    struct mon_model *m;
    char name[128];             /* announced, or "" (from the stream) */
    long pid;                   /* announced, or 0 */
    uint32_t res_pid;           /* the pid the resource was made for */
    bool res_named;             /* and whether it had the program's name */
    char service[128], exe[128];
    struct otlp_attr attrs[OTLP_RESOURCE_MAX + SERVE_OTLP_OWN_ATTRS];
    struct otlp_resource res;
    struct otlp_events *ev;
    uint64_t start_ns;          /* unix ns: this run's first event seen */
    bool ended;
};

struct serve_otlp {
    struct otlp_config c;
    struct otlp_exporter *x;
    struct serve_otlp_prog *progs;
    char host[256];
    uint64_t next_metrics, next_events;
    uint64_t exports;           /* metrics requests made */
    uint64_t encode_failed;
};

static struct serve_otlp *serve_otlp_g;

static uint64_t serve_otlp_unix_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------------
 * Flags and start
 * ------------------------------------------------------------------------ */

int serve_otlp_flag(struct serve_otlp_flags *f, const char *name,
                    const char *value)
{
    if (f->n == SERVE_OTLP_FLAGS_MAX)
        return tool_usage_error("serve", "too many --otlp-* flags");
    f->name[f->n] = name;
    f->value[f->n] = value;
    f->n++;
    return 0;
}

static const char *serve_otlp_getenv(const char *name)
{
    return getenv(name);
}

/* Did the user ask for export (a flag, or an endpoint variable)? */
static bool serve_otlp_asked(const struct serve_otlp_flags *f)
{
    static const char *const vars[] = {
        "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
        "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    };
    if (f->n > 0)
        return true;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v != NULL && *v != '\0')
            return true;
    }
    return false;
}

int serve_otlp_start(const struct serve_otlp_flags *f)
{
    if (!serve_otlp_asked(f))
        return 0;
    struct serve_otlp *o = calloc(1, sizeof *o);
    if (o == NULL) {
        fprintf(stderr, TOOL_NAME " serve: out of memory\n");
        return 1;
    }
    char err[600];
    otlp_config_init(&o->c);
    int rc = otlp_config_from_env(&o->c, serve_otlp_getenv, err, sizeof err);
    for (unsigned i = 0; rc == 0 && i < f->n; i++) {
        char flag[64];
        snprintf(flag, sizeof flag, "--%s", f->name[i]);
        rc = otlp_config_flag(&o->c, flag, f->value[i], err, sizeof err);
    }
    if (rc == 0)
        rc = otlp_config_finish(&o->c, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, TOOL_NAME " serve: OTLP: %s\n", err);
        otlp_config_free(&o->c);
        free(o);
        return TOOL_EXIT_USAGE;
    }
    bool any = false;
    char what[64] = "";
    for (int s = 0; s < OTLP_NSIGNALS; s++)
        if (o->c.enabled[s]) {
            snprintf(what + strlen(what), sizeof what - strlen(what), "%s%s",
                     any ? ", " : "", otlp_signal_name(s));
            any = true;
        }
    if (!any) {                 /* every signal's exporter is none */
        otlp_config_free(&o->c);
        free(o);
        return 0;
    }
    if ((rc = otlp_exporter_new(&o->x, &o->c, NULL)) < 0) {
        fprintf(stderr, TOOL_NAME " serve: OTLP: cannot start the exporter: "
                "%s\n", strerror(-rc));
        otlp_config_free(&o->c);
        free(o);
        return 1;
    }
    if (gethostname(o->host, sizeof o->host - 1) < 0)
        o->host[0] = '\0';
    const struct otlp_url *u = &o->c.url[o->c.enabled[OTLP_METRICS] ? OTLP_METRICS :
                                         o->c.enabled[OTLP_LOGS] ? OTLP_LOGS : OTLP_TRACES];
    fprintf(stderr, TOOL_NAME " serve: exporting OTLP (%s, %s) to %s, metrics "
            "every %u ms\n", what, o->c.format == OTLP_JSON ? "http/json" :
            "http/protobuf", u->text, o->c.interval_ms);
    o->next_metrics = o->next_events = 0;
    serve_otlp_g = o;
    return 0;
}

/* ------------------------------------------------------------------------
 * Programs
 * ------------------------------------------------------------------------ */

static const char *serve_otlp_base(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash != NULL && slash[1] != '\0' ? slash + 1 : path;
}

static bool serve_otlp_configured(const struct serve_otlp *o, const char *key)
{
    for (size_t k = 0; k < o->c.nresource; k++)
        if (strcmp(o->c.resource[k].key, key) == 0)
            return true;
    return false;
}

/* The program's resource: service.name (OTEL_SERVICE_NAME or its flag,
 * else OTEL_RESOURCE_ATTRIBUTES' service.name, else the program's
 * name), process.pid, process.executable.name and host.name unless
 * OTEL_RESOURCE_ATTRIBUTES says them, then OTEL_RESOURCE_ATTRIBUTES. */
static void serve_otlp_resource(struct serve_otlp *o, struct serve_otlp_prog *p,
                                const struct mon_model *m)
{
    const char *prog = p->name[0] != '\0' ? p->name : m != NULL ? m->run.program : "";
    uint32_t pid = p->pid != 0 ? (uint32_t)p->pid : m != NULL ? m->run.pid : 0;
    snprintf(p->exe, sizeof p->exe, "%s", prog[0] != '\0' ? serve_otlp_base(prog) :
             "unknown");
    snprintf(p->service, sizeof p->service, "%s", o->c.service_name != NULL ?
             o->c.service_name : p->exe);
    size_t n = 0;
    if (o->c.service_name != NULL || !serve_otlp_configured(o, "service.name"))
        p->attrs[n++] = (struct otlp_attr){ .key = "service.name",
                                            .type = OTLP_ATTR_STR, .s = p->service };
    if (pid != 0 && !serve_otlp_configured(o, "process.pid"))
        p->attrs[n++] = (struct otlp_attr){ .key = "process.pid",
                                            .type = OTLP_ATTR_INT, .i = pid };
    if (!serve_otlp_configured(o, "process.executable.name"))
        p->attrs[n++] = (struct otlp_attr){ .key = "process.executable.name",
                                            .type = OTLP_ATTR_STR, .s = p->exe };
    if (o->host[0] != '\0' && !serve_otlp_configured(o, "host.name"))
        p->attrs[n++] = (struct otlp_attr){ .key = "host.name",
                                            .type = OTLP_ATTR_STR, .s = o->host };
    for (size_t k = 0; k < o->c.nresource; k++) {
        if (o->c.service_name != NULL &&
            strcmp(o->c.resource[k].key, "service.name") == 0)
            continue;
        p->attrs[n++] = o->c.resource[k];
    }
    p->res = (struct otlp_resource){ .attrs = p->attrs, .nattrs = n,
                                     .scope_name = "eventlog-sink",
                                     .scope_version = PACKAGE_VERSION };
    p->res_pid = pid;
    p->res_named = prog[0] != '\0';
}

struct serve_otlp_prog *serve_otlp_prog_new(struct mon_model *m,
                                            const char *name, long pid)
{
    struct serve_otlp *o = serve_otlp_g;
    if (o == NULL)
        return NULL;
    struct serve_otlp_prog *p = calloc(1, sizeof *p);
    if (p == NULL || otlp_events_new(&p->ev, o->x, &o->c, &p->res) < 0) {
        fprintf(stderr, TOOL_NAME " serve: OTLP: out of memory: %s is not "
                "exported\n", name != NULL ? name : "a program");
        free(p);
        return NULL;
    }
    p->m = m;
    snprintf(p->name, sizeof p->name, "%s", name != NULL ? name : "");
    p->pid = pid;
    serve_otlp_resource(o, p, m);
    p->next = o->progs;
    if (o->progs != NULL)
        o->progs->prev = p;
    o->progs = p;
    if (m != NULL)
        mon_model_set_tap(m, serve_otlp_tap, p);
    return p;
}

void serve_otlp_prog_attach(struct serve_otlp_prog *p, struct mon_model *m)
{
    if (p == NULL)
        return;
    p->m = m;
    serve_otlp_resource(serve_otlp_g, p, m);
}

void serve_otlp_tap(void *ctx, const struct mon_model *m, const struct els_event *ev)
{
    struct serve_otlp_prog *p = ctx;
    if (ev == NULL) {           /* a new run: Note in events.h */
        otlp_events_flush(p->ev);
        otlp_events_reset(p->ev);
        p->start_ns = 0;
        p->ended = false;
        return;
    }
    if (p->start_ns == 0)
        p->start_ns = serve_otlp_unix_ns();
    /* The model takes the pid and the program's name from the stream's
     * first events: records are sent under the resource that names them
     * (a batch is encoded when it fills, so the check is here, not at
     * the interval).  The model is m, not p->m: mon_open() may read a
     * whole FILE before serve attaches it. */
    if (p->pid == 0 && (p->res_pid != m->run.pid ||
                        (!p->res_named && m->run.program[0] != '\0')))
        serve_otlp_resource(serve_otlp_g, p, m);
    otlp_events_feed(p->ev, ev);
}

/* ------------------------------------------------------------------------
 * Metrics: the series walk into one request
 * ------------------------------------------------------------------------ */

/* Memory for one request's series: chunks that never move (the points
 * point into them), freed together. */
struct serve_otlp_chunk {
    struct serve_otlp_chunk *next;
    size_t used, cap;
    max_align_t data[];
};

struct serve_otlp_walk {
    struct serve_otlp_chunk *chunks;
    bool failed;
    struct otlp_series *series;
    size_t nseries, cap_series;
    /* the family being collected */
    const struct mon_family *family;
    const struct otlp_metric_name *name;
    struct otlp_point *pts;
    size_t npts, cap_pts;
};

static void *serve_otlp_alloc(struct serve_otlp_walk *w, size_t n)
{
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    struct serve_otlp_chunk *c = w->chunks;
    if (c == NULL || c->cap - c->used < n) {
        size_t cap = n > (32u << 10) ? n : (32u << 10);
        c = malloc(sizeof *c + cap);
        if (c == NULL) {
            w->failed = true;
            return NULL;
        }
        c->next = w->chunks;
        c->used = 0;
        c->cap = cap;
        w->chunks = c;
    }
    void *at = (char *)c->data + c->used;
    c->used += n;
    return at;
}

/* The family collected so far becomes a series. */
static void serve_otlp_close_family(struct serve_otlp_walk *w)
{
    if (w->family == NULL || w->npts == 0 || w->name == NULL) {
        w->npts = 0;
        return;
    }
    struct otlp_point *pts = serve_otlp_alloc(w, w->npts * sizeof *pts);
    if (w->nseries == w->cap_series) {
        size_t cap = w->cap_series ? 2 * w->cap_series : 32;
        struct otlp_series *s = realloc(w->series, cap * sizeof *s);
        if (s == NULL)
            w->failed = true;
        else {
            w->series = s;
            w->cap_series = cap;
        }
    }
    if (pts == NULL || w->nseries == w->cap_series) {
        w->npts = 0;
        return;
    }
    memcpy(pts, w->pts, w->npts * sizeof *pts);
    w->series[w->nseries++] = (struct otlp_series){
        .name = w->name->otel, .description = w->name->description,
        .unit = w->name->unit, .kind = w->name->kind,
        .points = pts, .npoints = w->npts,
    };
    w->npts = 0;
}

static void serve_otlp_value(struct otlp_point *pt, double v)
{
    if (isfinite(v) && fabs(v) < 9e15 && v == floor(v)) {
        pt->is_int = true;
        pt->i = (int64_t)v;
    } else {
        pt->d = isfinite(v) ? v : 0;
    }
}

/* mon_series_walk()'s callback: one series, one point (its own labels as
 * attributes; the program's name and pid are the resource's). */
static void serve_otlp_series(void *ctx, const struct mon_series *s)
{
    struct serve_otlp_walk *w = ctx;
    if (s->family != w->family) {
        serve_otlp_close_family(w);
        w->family = s->family;
        w->name = otlp_metric_name_for(s->family->name);
    }
    if (w->name == NULL || w->failed)
        return;                 /* no OTLP name: metrics.h */
    if (w->npts == w->cap_pts) {
        size_t cap = w->cap_pts ? 2 * w->cap_pts : 16;
        struct otlp_point *p = realloc(w->pts, cap * sizeof *p);
        if (p == NULL) {
            w->failed = true;
            return;
        }
        w->pts = p;
        w->cap_pts = cap;
    }
    struct otlp_point pt = { 0 };
    if (s->nlabels > 0) {
        struct otlp_attr *a = serve_otlp_alloc(w, s->nlabels * sizeof *a);
        if (a == NULL)
            return;
        for (unsigned i = 0; i < s->nlabels; i++) {
            char *v = serve_otlp_alloc(w, s->labels[i].len + 1);
            if (v == NULL)
                return;
            memcpy(v, s->labels[i].value, s->labels[i].len);
            v[s->labels[i].len] = '\0';
            a[i] = (struct otlp_attr){ .key = s->labels[i].key,
                                       .type = OTLP_ATTR_STR, .s = v };
        }
        pt.attrs = a;
        pt.nattrs = s->nlabels;
    }
    if (s->family->type == MON_SERIES_HISTOGRAM) {
        /* The walk's buckets are cumulative (Prometheus's); OTLP's are
         * not. */
        uint64_t *counts = serve_otlp_alloc(w, (s->nbounds + 1) * sizeof *counts);
        double *bounds = serve_otlp_alloc(w, (s->nbounds + 1) * sizeof *bounds);
        if (counts == NULL || bounds == NULL)
            return;
        for (unsigned b = 0; b <= s->nbounds; b++)
            counts[b] = s->cumulative[b] - (b > 0 ? s->cumulative[b - 1] : 0);
        memcpy(bounds, s->bounds, s->nbounds * sizeof *bounds);
        pt.bucket_counts = counts;
        pt.bounds = bounds;
        pt.nbuckets = s->nbounds + 1;
        pt.count = s->cumulative[s->nbounds];
        pt.sum = s->value;
    } else {
        serve_otlp_value(&pt, s->value);
    }
    w->pts[w->npts++] = pt;
}

static void serve_otlp_walk_free(struct serve_otlp_walk *w)
{
    while (w->chunks != NULL) {
        struct serve_otlp_chunk *c = w->chunks;
        w->chunks = c->next;
        free(c);
    }
    free(w->series);
    free(w->pts);
}

/* The name of the exporter's own series, from the name table. */
static const struct otlp_metric_name *serve_otlp_own_name(const char *otel)
{
    for (size_t i = 0; i < otlp_metric_names_count; i++)
        if (otlp_metric_names[i].prom == NULL &&
            strcmp(otlp_metric_names[i].otel, otel) == 0)
            return &otlp_metric_names[i];
    return NULL;
}

/* Program p's series, as /metrics has them now, in one request. */
static void serve_otlp_metrics(struct serve_otlp *o, struct serve_otlp_prog *p)
{
    if (!o->c.enabled[OTLP_METRICS] || p->m == NULL || p->m->run.pid == 0)
        return;                 /* as /metrics: no pid yet, no series */
    struct serve_otlp_walk w = { 0 };
    mon_series_walk(p->m, serve_otlp_series, &w);
    serve_otlp_close_family(&w);
    /* What the rate limit left out, by signal. */
    struct otlp_events_stats es;
    otlp_events_stats(p->ev, &es);
    const struct otlp_metric_name *lo = serve_otlp_own_name("eventlog.otlp.left_out");
    struct otlp_attr sig[2] = {
        { .key = "signal", .type = OTLP_ATTR_STR, .s = "logs" },
        { .key = "signal", .type = OTLP_ATTR_STR, .s = "traces" },
    };
    struct otlp_point lp[2] = {
        { .attrs = &sig[0], .nattrs = 1, .is_int = true, .i = (int64_t)es.logs_left_out },
        { .attrs = &sig[1], .nattrs = 1, .is_int = true,
          .i = (int64_t)(es.spans_left_out + es.spans_unmatched) },
    };
    if (lo != NULL && !w.failed) {
        w.family = NULL;
        if (w.nseries == w.cap_series) {
            struct otlp_series *s = realloc(w.series, (w.cap_series + 1) * sizeof *s);
            if (s == NULL)
                w.failed = true;
            else {
                w.series = s;
                w.cap_series++;
            }
        }
        if (!w.failed)
            w.series[w.nseries++] = (struct otlp_series){
                .name = lo->otel, .description = lo->description, .unit = lo->unit,
                .kind = lo->kind, .points = lp, .npoints = 2,
            };
    }
    uint64_t now = serve_otlp_unix_ns();
    struct otlp_buf b = { 0 };
    size_t items = 0;
    for (size_t i = 0; i < w.nseries; i++)
        items += w.series[i].npoints;
    if (w.failed || otlp_encode_metrics(&b, o->c.format, &p->res, w.series,
                                        w.nseries, p->start_ns ? p->start_ns : now,
                                        now) < 0)
        o->encode_failed++;
    else {
        (void)otlp_exporter_enqueue(o->x, OTLP_METRICS, &b, items);
        o->exports++;
    }
    otlp_buf_free(&b);
    serve_otlp_walk_free(&w);
}

void serve_otlp_prog_end(struct serve_otlp_prog *p)
{
    if (p == NULL || p->ended)
        return;
    serve_otlp_metrics(serve_otlp_g, p);
    otlp_events_flush(p->ev);
    p->ended = true;
}

void serve_otlp_prog_free(struct serve_otlp_prog *p)
{
    if (p == NULL)
        return;
    struct serve_otlp *o = serve_otlp_g;
    serve_otlp_prog_end(p);     /* what it has goes (at exit too) */
    if (p->m != NULL)
        mon_model_set_tap(p->m, NULL, NULL);
    otlp_events_free(p->ev);
    if (p->prev != NULL)
        p->prev->next = p->next;
    else
        o->progs = p->next;
    if (p->next != NULL)
        p->next->prev = p->prev;
    free(p);
}

void serve_otlp_tick(uint64_t now_ms)
{
    struct serve_otlp *o = serve_otlp_g;
    if (o == NULL)
        return;
    bool metrics = now_ms >= o->next_metrics, events = now_ms >= o->next_events;
    if (o->next_metrics == 0) {         /* the first turn: one interval on */
        o->next_metrics = now_ms + o->c.interval_ms;
        metrics = false;
    }
    if (metrics)
        o->next_metrics = now_ms + o->c.interval_ms;
    if (events)
        o->next_events = now_ms + SERVE_OTLP_EVENTS_MS;
    if (!metrics && !events)
        return;
    for (struct serve_otlp_prog *p = o->progs; p != NULL; p = p->next) {
        if (p->ended)
            continue;
        if (events)
            otlp_events_flush(p->ev);
        if (metrics)
            serve_otlp_metrics(o, p);
    }
}

void serve_otlp_stop(void)
{
    struct serve_otlp *o = serve_otlp_g;
    if (o == NULL)
        return;
    while (o->progs != NULL)            /* normally freed with their models */
        serve_otlp_prog_free(o->progs);
    otlp_exporter_free(o->x, SERVE_OTLP_FLUSH_MS);
    otlp_config_free(&o->c);
    free(o);
    serve_otlp_g = NULL;
}

/* ------------------------------------------------------------------------
 * The exporter's own figures
 * ------------------------------------------------------------------------ */

/* Every program's events' figures summed. */
static void serve_otlp_events_total(const struct serve_otlp *o,
                                    struct otlp_events_stats *t)
{
    *t = (struct otlp_events_stats){ 0 };
    for (const struct serve_otlp_prog *p = o->progs; p != NULL; p = p->next) {
        struct otlp_events_stats es;
        otlp_events_stats(p->ev, &es);
        t->logs += es.logs;
        t->spans += es.spans;
        t->logs_left_out += es.logs_left_out;
        t->spans_left_out += es.spans_left_out;
        t->spans_unmatched += es.spans_unmatched;
    }
}

static void serve_otlp_head(struct strbuf *b, const char *name, const char *type,
                            const char *help)
{
    sb_printf(b, "# HELP eventlog_sink_otlp_%s %s\n# TYPE eventlog_sink_otlp_%s %s\n",
              name, help, name, type);
}

void serve_otlp_prometheus(struct strbuf *b)
{
    struct serve_otlp *o = serve_otlp_g;
    if (o == NULL)
        return;
    struct otlp_stats st;
    otlp_exporter_stats(o->x, &st);
    static const struct {
        const char *name, *help;
        size_t off;
    } per_sig[] = {
        { "enqueued_batches_total", "Export requests queued, by signal",
          offsetof(struct otlp_signal_stats, enqueued_batches) },
        { "enqueued_items_total", "Records (points, logs, spans) queued, by signal",
          offsetof(struct otlp_signal_stats, enqueued_items) },
        { "sent_batches_total", "Export requests a collector took (2xx), by signal",
          offsetof(struct otlp_signal_stats, sent_batches) },
        { "sent_items_total", "Records in the requests a collector took, by signal",
          offsetof(struct otlp_signal_stats, sent_items) },
        { "rejected_items_total", "Records a collector refused inside a 2xx "
          "(partial success), by signal",
          offsetof(struct otlp_signal_stats, rejected_items) },
        { "retries_total", "Attempts after a request's first, by signal",
          offsetof(struct otlp_signal_stats, retries) },
        { "queued_batches", "Requests waiting in the queue, by signal",
          offsetof(struct otlp_signal_stats, queued_batches) },
    };
    for (size_t k = 0; k < sizeof per_sig / sizeof per_sig[0]; k++) {
        bool gauge = strstr(per_sig[k].name, "_total") == NULL;
        serve_otlp_head(b, per_sig[k].name, gauge ? "gauge" : "counter", per_sig[k].help);
        for (int s = 0; s < OTLP_NSIGNALS; s++)
            sb_printf(b, "eventlog_sink_otlp_%s{signal=\"%s\"} %" PRIu64 "\n",
                      per_sig[k].name, otlp_signal_name(s),
                      *(const uint64_t *)((const char *)&st.sig[s] + per_sig[k].off));
    }
    serve_otlp_head(b, "dropped_batches_total", "counter",
                    "Export requests dropped, by signal and cause");
    for (int s = 0; s < OTLP_NSIGNALS; s++)
        for (int c = 0; c < OTLP_NDROP_CAUSES; c++)
            sb_printf(b, "eventlog_sink_otlp_dropped_batches_total{signal=\"%s\","
                      "cause=\"%s\"} %" PRIu64 "\n", otlp_signal_name(s),
                      otlp_drop_cause_name(c), st.sig[s].dropped_batches[c]);
    serve_otlp_head(b, "dropped_items_total", "counter",
                    "Records in the dropped requests, by signal and cause");
    for (int s = 0; s < OTLP_NSIGNALS; s++)
        for (int c = 0; c < OTLP_NDROP_CAUSES; c++)
            sb_printf(b, "eventlog_sink_otlp_dropped_items_total{signal=\"%s\","
                      "cause=\"%s\"} %" PRIu64 "\n", otlp_signal_name(s),
                      otlp_drop_cause_name(c), st.sig[s].dropped_items[c]);
    struct otlp_events_stats es;
    serve_otlp_events_total(o, &es);
    serve_otlp_head(b, "left_out_total", "counter", "Logs and spans the rate "
                    "limit (--otlp-max-rate) or the open-span bound left out, "
                    "by signal, over the programs followed now");
    sb_printf(b, "eventlog_sink_otlp_left_out_total{signal=\"logs\"} %" PRIu64 "\n"
              "eventlog_sink_otlp_left_out_total{signal=\"traces\"} %" PRIu64 "\n",
              es.logs_left_out, es.spans_left_out + es.spans_unmatched);
    serve_otlp_head(b, "queue_bytes", "gauge", "Bytes of requests queued or in flight");
    sb_printf(b, "eventlog_sink_otlp_queue_bytes %zu\n", st.held_bytes);
    serve_otlp_head(b, "queue_peak_bytes", "gauge", "Most bytes queued or in flight so far");
    sb_printf(b, "eventlog_sink_otlp_queue_peak_bytes %zu\n", st.peak_held_bytes);
    serve_otlp_head(b, "queue_bound_bytes", "gauge", "The queue's bound (--otlp-queue-bytes)");
    sb_printf(b, "eventlog_sink_otlp_queue_bound_bytes %zu\n", st.bound_bytes);
    serve_otlp_head(b, "encode_failures_total", "counter",
                    "Metrics requests not made for want of memory");
    sb_printf(b, "eventlog_sink_otlp_encode_failures_total %" PRIu64 "\n",
              o->encode_failed);
    serve_otlp_head(b, "last_error_info", "gauge",
                    "The last export failure, in its error label (1 once one happened)");
    sb_puts(b, "eventlog_sink_otlp_last_error_info{error=");
    sb_prom_label(b, st.last_error, strlen(st.last_error));
    sb_printf(b, "} %d\n", st.last_error[0] != '\0');
}

void serve_otlp_state_json(struct strbuf *b)
{
    struct serve_otlp *o = serve_otlp_g;
    if (o == NULL || b->failed || b->len == 0 || b->p[b->len - 1] != '}')
        return;
    struct otlp_stats st;
    otlp_exporter_stats(o->x, &st);
    uint64_t sent = 0, items = 0, retries = 0, rejected = 0, dropped = 0, queued = 0;
    for (int s = 0; s < OTLP_NSIGNALS; s++) {
        sent += st.sig[s].sent_batches;
        items += st.sig[s].sent_items;
        retries += st.sig[s].retries;
        rejected += st.sig[s].rejected_items;
        queued += st.sig[s].queued_batches;
        for (int c = 0; c < OTLP_NDROP_CAUSES; c++)
            dropped += st.sig[s].dropped_items[c];
    }
    struct otlp_events_stats es;
    serve_otlp_events_total(o, &es);
    b->len--;                   /* the object's closing brace */
    sb_puts(b, ",\"otlp\":{\"endpoint\":");
    const struct otlp_url *u = &o->c.url[o->c.enabled[OTLP_METRICS] ? OTLP_METRICS :
                                         o->c.enabled[OTLP_LOGS] ? OTLP_LOGS : OTLP_TRACES];
    sb_json_str(b, u->text, strlen(u->text));
    sb_printf(b, ",\"sent_batches\":%" PRIu64 ",\"sent_items\":%" PRIu64
              ",\"retries\":%" PRIu64 ",\"rejected_items\":%" PRIu64
              ",\"dropped_items\":%" PRIu64 ",\"left_out\":%" PRIu64
              ",\"queued_batches\":%" PRIu64 ",\"queue_bytes\":%zu"
              ",\"queue_bound_bytes\":%zu,\"last_error\":",
              sent, items, retries, rejected, dropped,
              es.logs_left_out + es.spans_left_out + es.spans_unmatched, queued,
              st.held_bytes, st.bound_bytes);
    sb_json_str(b, st.last_error, strlen(st.last_error));
    sb_puts(b, "}}");
}
