/*
 * encode_logs.c: ExportLogsServiceRequest (collector/logs/v1) from a list
 * of log records.
 *
 * Field numbers (logs/v1/logs.proto): ScopeLogs{log_records 2};
 * LogRecord{time_unix_nano 1 (fixed64), severity_number 2,
 * severity_text 3, body 5 (AnyValue), attributes 6,
 * observed_time_unix_nano 11 (fixed64)}.
 */
#include "otlp/encode.h"

#include <errno.h>
#include <string.h>

int otlp_encode_logs(struct otlp_buf *b, enum otlp_format f,
                     const struct otlp_resource *res,
                     const struct otlp_log *logs, size_t n)
{
    if (f == OTLP_PROTOBUF) {
        size_t open[2];
        otlp_pb_open(b, res, open);
        for (size_t i = 0; i < n; i++) {
            const struct otlp_log *l = &logs[i];
            size_t r = pb_begin(b, 2);
            pb_fixed64(b, 1, l->time_ns);
            pb_uint(b, 2, (uint64_t)l->severity);
            if (l->severity_text)
                pb_string(b, 3, l->severity_text, strlen(l->severity_text));
            size_t body = pb_begin(b, 5);
            pb_string(b, 1, l->body, l->body_len);
            pb_end(b, body);
            otlp_pb_attrs(b, 6, l->attrs, l->nattrs);
            pb_fixed64(b, 11, l->observed_ns);
            pb_end(b, r);
        }
        otlp_pb_close(b, open);
    } else {
        otlp_json_open(b, res, "resourceLogs", "scopeLogs", "logRecords");
        for (size_t i = 0; i < n; i++) {
            const struct otlp_log *l = &logs[i];
            otlp_buf_puts(b, i ? ",{" : "{");
            if (l->time_ns) {
                otlp_buf_puts(b, "\"timeUnixNano\":");
                otlp_json_u64str(b, l->time_ns);
                otlp_buf_puts(b, ",");
            }
            otlp_buf_puts(b, "\"observedTimeUnixNano\":");
            otlp_json_u64str(b, l->observed_ns);
            otlp_buf_printf(b, ",\"severityNumber\":%d", l->severity);
            if (l->severity_text) {
                otlp_buf_puts(b, ",\"severityText\":");
                otlp_json_str(b, l->severity_text, strlen(l->severity_text));
            }
            otlp_buf_puts(b, ",\"body\":{\"stringValue\":");
            otlp_json_str(b, l->body, l->body_len);
            otlp_buf_puts(b, "},\"attributes\":");
            otlp_json_attrs(b, l->attrs, l->nattrs);
            otlp_buf_puts(b, "}");
        }
        otlp_json_close(b);
    }
    return b->failed ? -ENOMEM : 0;
}
