/*
 * encode_traces.c: ExportTraceServiceRequest (collector/trace/v1) from a
 * list of finished spans.
 *
 * Field numbers (trace/v1/trace.proto): ScopeSpans{spans 2};
 * Span{trace_id 1 (16 bytes), span_id 2 (8 bytes), name 5, kind 6,
 * start_time_unix_nano 7 (fixed64), end_time_unix_nano 8 (fixed64),
 * attributes 9, status 15}; Status{message 2, code 3}.
 */
#include "otlp/encode.h"

#include <errno.h>
#include <string.h>

int otlp_encode_spans(struct otlp_buf *b, enum otlp_format f,
                      const struct otlp_resource *res,
                      const struct otlp_span *spans, size_t n)
{
    if (f == OTLP_PROTOBUF) {
        size_t open[2];
        otlp_pb_open(b, res, open);
        for (size_t i = 0; i < n; i++) {
            const struct otlp_span *s = &spans[i];
            size_t sp = pb_begin(b, 2);
            pb_bytes(b, 1, s->trace_id, 16);
            pb_bytes(b, 2, s->span_id, 8);
            pb_string(b, 5, s->name, s->name_len);
            pb_uint(b, 6, (uint64_t)s->kind);
            pb_fixed64(b, 7, s->start_ns);
            pb_fixed64(b, 8, s->end_ns);
            otlp_pb_attrs(b, 9, s->attrs, s->nattrs);
            if (s->status_code != OTLP_STATUS_UNSET || s->status_message) {
                size_t st = pb_begin(b, 15);
                if (s->status_message)
                    pb_string(b, 2, s->status_message, strlen(s->status_message));
                pb_uint(b, 3, (uint64_t)s->status_code);
                pb_end(b, st);
            }
            pb_end(b, sp);
        }
        otlp_pb_close(b, open);
    } else {
        otlp_json_open(b, res, "resourceSpans", "scopeSpans", "spans");
        for (size_t i = 0; i < n; i++) {
            const struct otlp_span *s = &spans[i];
            otlp_buf_puts(b, i ? ",{\"traceId\":" : "{\"traceId\":");
            otlp_json_hex(b, s->trace_id, 16);
            otlp_buf_puts(b, ",\"spanId\":");
            otlp_json_hex(b, s->span_id, 8);
            otlp_buf_puts(b, ",\"name\":");
            otlp_json_str(b, s->name, s->name_len);
            otlp_buf_printf(b, ",\"kind\":%d,\"startTimeUnixNano\":", s->kind);
            otlp_json_u64str(b, s->start_ns);
            otlp_buf_puts(b, ",\"endTimeUnixNano\":");
            otlp_json_u64str(b, s->end_ns);
            otlp_buf_puts(b, ",\"attributes\":");
            otlp_json_attrs(b, s->attrs, s->nattrs);
            otlp_buf_printf(b, ",\"status\":{\"code\":%d", s->status_code);
            if (s->status_message) {
                otlp_buf_puts(b, ",\"message\":");
                otlp_json_str(b, s->status_message, strlen(s->status_message));
            }
            otlp_buf_puts(b, "}}");
        }
        otlp_json_close(b);
    }
    return b->failed ? -ENOMEM : 0;
}
