/*
 * metrics.h: the OTLP exporter's metrics interface: a batch is a list of
 * series (name, description, unit, kind, data points with attributes and
 * a value or histogram buckets) that the caller fills from its own model
 * (serve's walker over the monitor model, the one /metrics renders from)
 * and hands to otlp_encode_metrics() (encode.h).  Nothing here keeps
 * state between batches: values are cumulative since start_ns, as
 * OpenTelemetry's cumulative temporality says, so the caller passes the
 * running totals it already has.
 *
 * The names a series takes are in one table, otlp_metric_names[]
 * (metrics.c): /metrics' Prometheus name, the OpenTelemetry name
 * (process.runtime.ghc.* where hs-opentelemetry's GHC metrics
 * instrumentation names the same figure, so one dashboard serves both;
 * eventlog.* for what only the stream knows), its unit in UCUM as OTLP
 * wants ("By", "s", "{gc}") and its kind.
 */
#ifndef ELS_OTLP_METRICS_H
#define ELS_OTLP_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One attribute (KeyValue).  Strings are NUL-terminated, UTF-8 or not
 * (bytes that are not become U+FFFD). */
enum otlp_attr_type { OTLP_ATTR_STR, OTLP_ATTR_INT, OTLP_ATTR_DOUBLE, OTLP_ATTR_BOOL };
struct otlp_attr {
    const char *key;
    enum otlp_attr_type type;
    const char *s;
    int64_t i;
    double d;
    bool b;
};

enum otlp_metric_kind {
    OTLP_SUM,          /* cumulative, monotonic counter */
    OTLP_GAUGE,
    OTLP_HISTOGRAM     /* cumulative, explicit buckets */
};

struct otlp_point {
    const struct otlp_attr *attrs;
    size_t nattrs;
    /* SUM and GAUGE: the value, as_int when is_int (counts, bytes),
     * else as_double. */
    bool is_int;
    int64_t i;
    double d;
    /* HISTOGRAM: nbuckets counts (not cumulative: bucket k counts values
     * in (bounds[k-1], bounds[k]]; the last one above every bound), the
     * nbuckets - 1 upper bounds, the total count and sum. */
    const uint64_t *bucket_counts;
    const double *bounds;
    size_t nbuckets;
    uint64_t count;
    double sum;
};

struct otlp_series {
    const char *name, *description, *unit;
    enum otlp_metric_kind kind;
    const struct otlp_point *points;
    size_t npoints;
};

/* One entry of the name table. */
struct otlp_metric_name {
    const char *prom;          /* /metrics' family name */
    const char *otel;          /* the OTLP name */
    const char *unit;
    enum otlp_metric_kind kind;
    const char *description;
};

extern const struct otlp_metric_name otlp_metric_names[];
extern const size_t otlp_metric_names_count;

/* The entry for a /metrics family name, or NULL: a series with no entry
 * is not exported (a new /metrics family needs its OTLP name chosen
 * here, not made up by a rule). */
const struct otlp_metric_name *otlp_metric_name_for(const char *prom);

#endif /* ELS_OTLP_METRICS_H */
