/*
 * encode_metrics.c: ExportMetricsServiceRequest (collector/metrics/v1)
 * from a list of series (metrics.h): Sum (cumulative, monotonic), Gauge,
 * and explicit-bucket Histogram (cumulative).
 *
 * Field numbers (metrics/v1/metrics.proto): Metric{name 1, description 2,
 * unit 3, gauge 5, sum 7, histogram 9}; Gauge{data_points 1};
 * Sum{data_points 1, aggregation_temporality 2, is_monotonic 3};
 * Histogram{data_points 1, aggregation_temporality 2};
 * NumberDataPoint{start_time_unix_nano 2 (fixed64), time_unix_nano 3
 * (fixed64), as_double 4, as_int 6 (sfixed64), attributes 7};
 * HistogramDataPoint{start_time_unix_nano 2, time_unix_nano 3, count 4
 * (fixed64), sum 5 (double), bucket_counts 6 (packed fixed64),
 * explicit_bounds 7 (packed double), attributes 9}.
 */
#include "otlp/encode.h"

#include <errno.h>
#include <string.h>

#define OTLP_CUMULATIVE 2   /* AGGREGATION_TEMPORALITY_CUMULATIVE */

static void otlp_pb_number(struct otlp_buf *b, const struct otlp_point *pt,
                           uint64_t start_ns, uint64_t time_ns)
{
    size_t dp = pb_begin(b, 1);
    pb_fixed64(b, 2, start_ns);
    pb_fixed64(b, 3, time_ns);
    if (pt->is_int) {
        /* as_int is sfixed64: always written, a zero is a value. */
        pb_tag(b, 6, 1);
        uint8_t le[8];
        for (int i = 0; i < 8; i++)
            le[i] = (uint8_t)((uint64_t)pt->i >> (8 * i));
        otlp_buf_put(b, le, 8);
    } else {
        pb_double(b, 4, pt->d);
    }
    otlp_pb_attrs(b, 7, pt->attrs, pt->nattrs);
    pb_end(b, dp);
}

static void otlp_pb_histogram(struct otlp_buf *b, const struct otlp_point *pt,
                              uint64_t start_ns, uint64_t time_ns)
{
    size_t dp = pb_begin(b, 1);
    pb_fixed64(b, 2, start_ns);
    pb_fixed64(b, 3, time_ns);
    pb_fixed64(b, 4, pt->count);
    pb_double(b, 5, pt->sum);
    if (pt->nbuckets > 0) {
        pb_tag(b, 6, 2);
        pb_varint(b, pt->nbuckets * 8);
        for (size_t k = 0; k < pt->nbuckets; k++) {
            uint8_t le[8];
            for (int i = 0; i < 8; i++)
                le[i] = (uint8_t)(pt->bucket_counts[k] >> (8 * i));
            otlp_buf_put(b, le, 8);
        }
    }
    if (pt->nbuckets > 1) {
        pb_tag(b, 7, 2);
        pb_varint(b, (pt->nbuckets - 1) * 8);
        for (size_t k = 0; k + 1 < pt->nbuckets; k++) {
            uint64_t u;
            memcpy(&u, &pt->bounds[k], sizeof u);
            uint8_t le[8];
            for (int i = 0; i < 8; i++)
                le[i] = (uint8_t)(u >> (8 * i));
            otlp_buf_put(b, le, 8);
        }
    }
    otlp_pb_attrs(b, 9, pt->attrs, pt->nattrs);
    pb_end(b, dp);
}

static void otlp_pb_metric(struct otlp_buf *b, const struct otlp_series *s,
                           uint64_t start_ns, uint64_t time_ns)
{
    size_t m = pb_begin(b, 2);          /* ScopeMetrics.metrics */
    pb_string(b, 1, s->name, strlen(s->name));
    if (s->description)
        pb_string(b, 2, s->description, strlen(s->description));
    if (s->unit)
        pb_string(b, 3, s->unit, strlen(s->unit));
    uint32_t field = s->kind == OTLP_SUM ? 7 : s->kind == OTLP_GAUGE ? 5 : 9;
    size_t d = pb_begin(b, field);
    for (size_t i = 0; i < s->npoints; i++) {
        if (s->kind == OTLP_HISTOGRAM)
            otlp_pb_histogram(b, &s->points[i], start_ns, time_ns);
        else
            otlp_pb_number(b, &s->points[i], s->kind == OTLP_SUM ? start_ns : 0, time_ns);
    }
    if (s->kind != OTLP_GAUGE)
        pb_uint(b, 2, OTLP_CUMULATIVE);
    if (s->kind == OTLP_SUM)
        pb_uint(b, 3, 1);
    pb_end(b, d);
    pb_end(b, m);
}

static void otlp_json_point(struct otlp_buf *b, const struct otlp_series *s,
                            const struct otlp_point *pt, uint64_t start_ns, uint64_t time_ns)
{
    otlp_buf_puts(b, "{\"attributes\":");
    otlp_json_attrs(b, pt->attrs, pt->nattrs);
    if (s->kind != OTLP_GAUGE) {
        otlp_buf_puts(b, ",\"startTimeUnixNano\":");
        otlp_json_u64str(b, start_ns);
    }
    otlp_buf_puts(b, ",\"timeUnixNano\":");
    otlp_json_u64str(b, time_ns);
    if (s->kind == OTLP_HISTOGRAM) {
        otlp_buf_puts(b, ",\"count\":");
        otlp_json_u64str(b, pt->count);
        otlp_buf_puts(b, ",\"sum\":");
        otlp_json_double(b, pt->sum);
        otlp_buf_puts(b, ",\"bucketCounts\":[");
        for (size_t k = 0; k < pt->nbuckets; k++) {
            if (k)
                otlp_buf_puts(b, ",");
            otlp_json_u64str(b, pt->bucket_counts[k]);
        }
        otlp_buf_puts(b, "],\"explicitBounds\":[");
        for (size_t k = 0; k + 1 < pt->nbuckets; k++) {
            if (k)
                otlp_buf_puts(b, ",");
            otlp_json_double(b, pt->bounds[k]);
        }
        otlp_buf_puts(b, "]");
    } else if (pt->is_int) {
        otlp_buf_puts(b, ",\"asInt\":");
        otlp_json_i64str(b, pt->i);
    } else {
        otlp_buf_puts(b, ",\"asDouble\":");
        otlp_json_double(b, pt->d);
    }
    otlp_buf_puts(b, "}");
}

static void otlp_json_metric(struct otlp_buf *b, const struct otlp_series *s,
                             uint64_t start_ns, uint64_t time_ns)
{
    otlp_buf_puts(b, "{\"name\":");
    otlp_json_str(b, s->name, strlen(s->name));
    if (s->description) {
        otlp_buf_puts(b, ",\"description\":");
        otlp_json_str(b, s->description, strlen(s->description));
    }
    if (s->unit) {
        otlp_buf_puts(b, ",\"unit\":");
        otlp_json_str(b, s->unit, strlen(s->unit));
    }
    otlp_buf_puts(b, s->kind == OTLP_SUM ? ",\"sum\":{" :
                     s->kind == OTLP_GAUGE ? ",\"gauge\":{" : ",\"histogram\":{");
    otlp_buf_puts(b, "\"dataPoints\":[");
    for (size_t i = 0; i < s->npoints; i++) {
        if (i)
            otlp_buf_puts(b, ",");
        otlp_json_point(b, s, &s->points[i], start_ns, time_ns);
    }
    otlp_buf_puts(b, "]");
    if (s->kind != OTLP_GAUGE)
        otlp_buf_printf(b, ",\"aggregationTemporality\":%d", OTLP_CUMULATIVE);
    if (s->kind == OTLP_SUM)
        otlp_buf_puts(b, ",\"isMonotonic\":true");
    otlp_buf_puts(b, "}}");
}

int otlp_encode_metrics(struct otlp_buf *b, enum otlp_format f,
                        const struct otlp_resource *res,
                        const struct otlp_series *series, size_t n,
                        uint64_t start_ns, uint64_t time_ns)
{
    if (f == OTLP_PROTOBUF) {
        size_t open[2];
        otlp_pb_open(b, res, open);
        for (size_t i = 0; i < n; i++)
            otlp_pb_metric(b, &series[i], start_ns, time_ns);
        otlp_pb_close(b, open);
    } else {
        otlp_json_open(b, res, "resourceMetrics", "scopeMetrics", "metrics");
        for (size_t i = 0; i < n; i++) {
            if (i)
                otlp_buf_puts(b, ",");
            otlp_json_metric(b, &series[i], start_ns, time_ns);
        }
        otlp_json_close(b);
    }
    return b->failed ? -ENOMEM : 0;
}
