/*
 * series.h: every figure the monitor exports as a metric, one series at
 * a time: the families (name, help, type) and, per model, each series's
 * labels and value (or a histogram's buckets).  The Prometheus text of
 * /metrics (render_prom.c) is written from this walk, and any other
 * exporter that walks it shows the same figures under the same names.
 * Reads the model (model_impl.h); changes nothing and prints nothing.
 */
#ifndef ELS_MON_SERIES_H
#define ELS_MON_SERIES_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

enum mon_series_type {
    MON_SERIES_COUNTER,         /* only grows within a stream */
    MON_SERIES_GAUGE,
    MON_SERIES_HISTOGRAM        /* buckets, a sum and a count */
};

/* A metric family: its series share the name, type and help. */
struct mon_family {
    const char *name;           /* a Prometheus metric name */
    enum mon_series_type type;
    const char *help;           /* plain text; any writer escapes it */
};

/* A label beyond the program's own two: value is len bytes, not
 * terminated; a value may be any bytes from the stream (a census band,
 * an event type's description), so every writer escapes it. */
struct mon_label {
    const char *key;
    const char *value;
    size_t len;
};

#define MON_SERIES_LABELS 2

/* One series, valid during the callback only.  Every series carries the
 * program's name (from the stream: any bytes) and pid; then nlabels
 * labels of its own, in order. */
struct mon_series {
    const struct mon_family *family;
    const char *program;
    uint32_t pid;
    unsigned nlabels;
    struct mon_label labels[MON_SERIES_LABELS];
    /* A counter's or gauge's value; a histogram's sum. */
    double value;
    /* A histogram's buckets: upper bounds[i] (nbounds of them, in
     * seconds, increasing) with cumulative[i] observations at most that,
     * and cumulative[nbounds], the count of all (the +Inf bucket). */
    unsigned nbounds;
    const double *bounds;
    const uint64_t *cumulative;
};

/* Called once per series, in the order the families are listed and,
 * within a family, in the order a writer shows them. */
typedef void (*mon_series_fn)(void *ctx, const struct mon_series *s);

/* The families, always in this order: mon_families[0 ..
 * mon_families_n). */
extern const struct mon_family mon_families[];
extern const size_t mon_families_n;

/* Family f's series of model m (some families have none yet: a
 * histogram always has one). */
void mon_series_walk_family(const struct mon_model *m, size_t f,
                            mon_series_fn fn, void *ctx);
/* Every family's series of m, family by family. */
void mon_series_walk(const struct mon_model *m, mon_series_fn fn, void *ctx);

#endif /* ELS_MON_SERIES_H */
