/*
 * pb.h: the byte buffer the OTLP encoders write into, with the two wire
 * forms they need: protobuf (varints, fixed64, length-delimited fields)
 * and JSON (escaped strings).  Not a protobuf library: no schema, no
 * reading beyond the few response fields export.c takes, no unknown
 * fields.  An allocation failure, or growth past the buffer's limit,
 * makes the buffer failed (b->failed) and later writes no-ops, so an
 * encoder checks once at the end.
 */
#ifndef ELS_OTLP_PB_H
#define ELS_OTLP_PB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct otlp_buf {
    uint8_t *p;
    size_t len, cap;
    size_t limit;            /* 0: no limit beyond memory */
    bool failed;
};

void otlp_buf_free(struct otlp_buf *b);
void otlp_buf_put(struct otlp_buf *b, const void *d, size_t n);
void otlp_buf_puts(struct otlp_buf *b, const char *s);
void otlp_buf_printf(struct otlp_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- protobuf ----
 * Field numbers are the caller's (from opentelemetry-proto).  A nested
 * message is written between pb_begin() and pb_end(): pb_begin() returns
 * where its body starts, pb_end() moves the body to make room for its
 * length as a minimal varint.  Moving costs a copy per nesting level, and
 * OTLP nests at most seven deep. */
void pb_varint(struct otlp_buf *b, uint64_t v);
void pb_tag(struct otlp_buf *b, uint32_t field, unsigned wire);
void pb_uint(struct otlp_buf *b, uint32_t field, uint64_t v);     /* wire 0; 0 omitted */
void pb_fixed64(struct otlp_buf *b, uint32_t field, uint64_t v);  /* wire 1; 0 omitted */
void pb_double(struct otlp_buf *b, uint32_t field, double v);     /* wire 1; always written */
void pb_bytes(struct otlp_buf *b, uint32_t field, const void *d, size_t n); /* wire 2 */
/* A string field: bytes that are not UTF-8 become U+FFFD (protobuf
 * strings must be UTF-8; a stream's text need not be). */
void pb_string(struct otlp_buf *b, uint32_t field, const char *s, size_t n);
size_t pb_begin(struct otlp_buf *b, uint32_t field);
void pb_end(struct otlp_buf *b, size_t start);

/* Read one varint at *p below end; false if truncated or too long. */
bool pb_read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v);

/* ---- JSON ---- */
/* s (n bytes, any content) as a quoted JSON string: quotes, backslash and
 * control characters escaped, bytes that are not UTF-8 replaced by
 * U+FFFD. */
void otlp_json_str(struct otlp_buf *b, const char *s, size_t n);
/* A double as JSON (non-finite values become 0: JSON has no NaN). */
void otlp_json_double(struct otlp_buf *b, double v);
/* OTLP/JSON writes 64-bit integers as decimal strings. */
void otlp_json_u64str(struct otlp_buf *b, uint64_t v);
void otlp_json_i64str(struct otlp_buf *b, int64_t v);
/* Lower-case hex of n bytes, quoted (trace and span ids). */
void otlp_json_hex(struct otlp_buf *b, const uint8_t *d, size_t n);

/* Length of the valid UTF-8 sequence at s (1-4), or 0 if s[0..] does not
 * start one within n bytes. */
size_t otlp_utf8_len(const uint8_t *s, size_t n);

#endif /* ELS_OTLP_PB_H */
