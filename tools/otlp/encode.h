/*
 * encode.h: OTLP export requests, as http/protobuf or http/json bodies.
 *
 * Each encoder writes one Export{Metrics,Logs,Trace}ServiceRequest with a
 * single ResourceX (the program's resource attributes) holding a single
 * ScopeX (this exporter's name and version).  Field numbers are those of
 * opentelemetry-proto (collector/{metrics,logs,trace}/v1 and the messages
 * they hold); JSON follows OTLP/JSON: lowerCamelCase names, trace and span
 * ids as lower-case hex, 64-bit integers as decimal strings, enums as
 * numbers.  The encoders hold no state and do no I/O; they return 0, or
 * -ENOMEM when the buffer failed (memory, or its limit).
 */
#ifndef ELS_OTLP_ENCODE_H
#define ELS_OTLP_ENCODE_H

#include "otlp/metrics.h"
#include "otlp/pb.h"

enum otlp_format { OTLP_PROTOBUF, OTLP_JSON };

struct otlp_resource {
    const struct otlp_attr *attrs;
    size_t nattrs;
    const char *scope_name, *scope_version;
};

/* OpenTelemetry's SeverityNumber values the exporter uses. */
enum { OTLP_SEV_DEBUG = 5, OTLP_SEV_INFO = 9, OTLP_SEV_WARN = 13, OTLP_SEV_ERROR = 17 };

struct otlp_log {
    uint64_t time_ns;          /* 0: unknown (the receiver uses observed) */
    uint64_t observed_ns;
    int severity;              /* SeverityNumber */
    const char *severity_text;
    const char *body;          /* body_len bytes, any content */
    size_t body_len;
    const struct otlp_attr *attrs;
    size_t nattrs;
};

/* Span.SpanKind and Status.StatusCode values. */
enum { OTLP_SPAN_INTERNAL = 1 };
enum { OTLP_STATUS_UNSET = 0, OTLP_STATUS_OK = 1, OTLP_STATUS_ERROR = 2 };

struct otlp_span {
    uint8_t trace_id[16], span_id[8];
    const char *name;          /* name_len bytes */
    size_t name_len;
    uint64_t start_ns, end_ns;
    int kind;
    const struct otlp_attr *attrs;
    size_t nattrs;
    int status_code;
    const char *status_message;  /* NULL: none */
};

int otlp_encode_metrics(struct otlp_buf *b, enum otlp_format f,
                        const struct otlp_resource *res,
                        const struct otlp_series *series, size_t n,
                        uint64_t start_ns, uint64_t time_ns);
int otlp_encode_logs(struct otlp_buf *b, enum otlp_format f,
                     const struct otlp_resource *res,
                     const struct otlp_log *logs, size_t n);
int otlp_encode_spans(struct otlp_buf *b, enum otlp_format f,
                      const struct otlp_resource *res,
                      const struct otlp_span *spans, size_t n);

/* Shared by the three encoders (encode_common.c). */
void otlp_pb_attrs(struct otlp_buf *b, uint32_t field,
                   const struct otlp_attr *a, size_t n);
void otlp_json_attrs(struct otlp_buf *b, const struct otlp_attr *a, size_t n);
/* The envelope up to the scope's list field: pb writes
 * request.resource_x(1){resource(1), scope_x(2){scope(1), ...}} and
 * returns the two open positions for otlp_pb_close(); json writes
 * {"resourceX":[{"resource":{...},"scopeX":[{"scope":{...},"LIST":[ */
void otlp_pb_open(struct otlp_buf *b, const struct otlp_resource *res, size_t open[2]);
void otlp_pb_close(struct otlp_buf *b, const size_t open[2]);
void otlp_json_open(struct otlp_buf *b, const struct otlp_resource *res,
                    const char *resource_x, const char *scope_x, const char *list);
void otlp_json_close(struct otlp_buf *b);

#endif /* ELS_OTLP_ENCODE_H */
