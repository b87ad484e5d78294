/*
 * render_prom.c: the Prometheus text exposition of one or many models
 * (mon_model_prometheus(), mon_models_prometheus() in model.h), written
 * from the series walk (series.c), which decides every name, label and
 * value; this file only formats them.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "render.h"
#include "series.h"

/* A sample's value: an integer as such, else 15 significant digits (a
 * census's time in seconds keeps its nanoseconds; sb_json_num()'s 6
 * digits did not). */
static void mon_prom_num(struct strbuf *sb, double v)
{
    if (isfinite(v) && fabs(v) < 1e15 && v == floor(v))
        sb_printf(sb, "%lld", (long long)v);
    else
        sb_printf(sb, "%.15g", isfinite(v) ? v : 0);
}

/* One sample line: name and suffix, the program's labels, the series's
 * own, le (a histogram bucket's bound, NULL for none), the value.  The
 * program's name comes from the stream (argv[0]): any bytes, escaped as
 * a label value (not JSON's escaping: a scraper refuses its \u0009), as
 * is every label value. */
static void mon_prom_line(struct strbuf *sb, const struct mon_series *s,
                          const char *suffix, const char *le, double v)
{
    sb_printf(sb, "%s%s{program=", s->family->name, suffix);
    sb_prom_label(sb, s->program, strlen(s->program));
    sb_printf(sb, ",pid=\"%" PRIu32 "\"", s->pid);
    for (unsigned i = 0; i < s->nlabels; i++) {
        sb_printf(sb, ",%s=", s->labels[i].key);
        sb_prom_label(sb, s->labels[i].value, s->labels[i].len);
    }
    if (le != NULL) {
        sb_puts(sb, ",le=");
        sb_prom_label(sb, le, strlen(le));
    }
    sb_puts(sb, "} ");
    mon_prom_num(sb, v);
    sb_puts(sb, "\n");
}

/* The walk's callback: a series's lines (a histogram's buckets, sum and
 * count). */
static void mon_prom_series(void *ctx, const struct mon_series *s)
{
    struct strbuf *sb = ctx;
    if (s->family->type != MON_SERIES_HISTOGRAM) {
        mon_prom_line(sb, s, "", NULL, s->value);
        return;
    }
    char le[32];
    for (unsigned b = 0; b <= s->nbounds; b++) {
        if (b < s->nbounds)
            snprintf(le, sizeof le, "%g", s->bounds[b]);
        else
            snprintf(le, sizeof le, "+Inf");
        mon_prom_line(sb, s, "_bucket", le, (double)s->cumulative[b]);
    }
    mon_prom_line(sb, s, "_sum", NULL, s->value);
    mon_prom_line(sb, s, "_count", NULL, (double)s->cumulative[s->nbounds]);
}

static void mon_prom_head(struct strbuf *sb, const struct mon_family *f)
{
    static const char *const types[] = {
        [MON_SERIES_COUNTER] = "counter", [MON_SERIES_GAUGE] = "gauge",
        [MON_SERIES_HISTOGRAM] = "histogram",
    };
    /* Our own texts, escaped all the same so that a later one with a
     * backslash or a line break cannot break the exposition. */
    sb_printf(sb, "# HELP %s ", f->name);
    sb_prom_help(sb, f->help, strlen(f->help));
    sb_printf(sb, "\n# TYPE %s %s\n", f->name, types[f->type]);
}

/* Note [Metric families of many programs]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * The exposition format wants each family's samples together, after
 * its one HELP and TYPE: a second TYPE line for a name is an error to
 * Prometheus.  `serve --all` renders many programs' models into one
 * /metrics, so the families are the outer loop and the programs the
 * inner one (mon_models_prometheus()); each program's samples carry its
 * own program and pid labels.  A model that has not yet read the
 * program's pid (no stream yet) is left out: its samples would carry
 * pid="0" and clash with any other such program's. */
void mon_models_prometheus(const struct mon_model *const *ms, size_t n,
                           bool need_pid, struct strbuf *sb)
{
    for (size_t f = 0; f < mon_families_n; f++) {
        mon_prom_head(sb, &mon_families[f]);
        for (size_t i = 0; i < n; i++)
            if (ms[i] != NULL && (!need_pid || ms[i]->run.pid != 0))
                mon_series_walk_family(ms[i], f, mon_prom_series, sb);
    }
}

void mon_model_prometheus(const struct mon_model *m, struct strbuf *sb)
{
    mon_models_prometheus(&m, 1, false, sb);
}
