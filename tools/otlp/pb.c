/*
 * pb.c: the encoders' byte buffer, protobuf's wire primitives and JSON
 * string escaping.  See pb.h.  Knows no OTLP message.
 */
#include "otlp/pb.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void otlp_buf_free(struct otlp_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
    b->failed = false;
}

static bool otlp_buf_room(struct otlp_buf *b, size_t n)
{
    if (b->failed)
        return false;
    if (n > SIZE_MAX / 2 - b->len || (b->limit != 0 && b->len + n > b->limit)) {
        b->failed = true;
        return false;
    }
    if (b->len + n <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n)
        cap *= 2;
    if (b->limit != 0 && cap > b->limit)
        cap = b->limit;
    uint8_t *p = realloc(b->p, cap);
    if (p == NULL) {
        b->failed = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

void otlp_buf_put(struct otlp_buf *b, const void *d, size_t n)
{
    if (n == 0 || !otlp_buf_room(b, n))
        return;
    memcpy(b->p + b->len, d, n);
    b->len += n;
}

void otlp_buf_puts(struct otlp_buf *b, const char *s)
{
    otlp_buf_put(b, s, strlen(s));
}

void otlp_buf_printf(struct otlp_buf *b, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = true;
        return;
    }
    if ((size_t)n < sizeof tmp) {
        otlp_buf_put(b, tmp, (size_t)n);
        return;
    }
    if (!otlp_buf_room(b, (size_t)n + 1))
        return;
    va_start(ap, fmt);
    vsnprintf((char *)b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* ------------------------------------------------------------------------
 * Protobuf
 * ------------------------------------------------------------------------ */

static size_t pb_varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static size_t pb_varint_at(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

void pb_varint(struct otlp_buf *b, uint64_t v)
{
    uint8_t tmp[10];
    otlp_buf_put(b, tmp, pb_varint_at(tmp, v));
}

void pb_tag(struct otlp_buf *b, uint32_t field, unsigned wire)
{
    pb_varint(b, (uint64_t)field << 3 | wire);
}

void pb_uint(struct otlp_buf *b, uint32_t field, uint64_t v)
{
    if (v == 0)
        return;
    pb_tag(b, field, 0);
    pb_varint(b, v);
}

static void pb_le64(struct otlp_buf *b, uint64_t v)
{
    uint8_t tmp[8];
    for (int i = 0; i < 8; i++)
        tmp[i] = (uint8_t)(v >> (8 * i));
    otlp_buf_put(b, tmp, 8);
}

void pb_fixed64(struct otlp_buf *b, uint32_t field, uint64_t v)
{
    if (v == 0)
        return;
    pb_tag(b, field, 1);
    pb_le64(b, v);
}

void pb_double(struct otlp_buf *b, uint32_t field, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    pb_tag(b, field, 1);
    pb_le64(b, u);
}

void pb_bytes(struct otlp_buf *b, uint32_t field, const void *d, size_t n)
{
    pb_tag(b, field, 2);
    pb_varint(b, n);
    otlp_buf_put(b, d, n);
}

size_t otlp_utf8_len(const uint8_t *s, size_t n)
{
    uint8_t c = s[0];
    if (c < 0x80)
        return 1;
    size_t len;
    uint32_t cp, min;
    if ((c & 0xe0) == 0xc0) {
        len = 2; cp = c & 0x1f; min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
        len = 3; cp = c & 0x0f; min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
        len = 4; cp = c & 0x07; min = 0x10000;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

static bool otlp_is_utf8(const char *s, size_t n)
{
    const uint8_t *u = (const uint8_t *)s;
    for (size_t i = 0; i < n;) {
        size_t l = otlp_utf8_len(u + i, n - i);
        if (l == 0)
            return false;
        i += l;
    }
    return true;
}

void pb_string(struct otlp_buf *b, uint32_t field, const char *s, size_t n)
{
    if (otlp_is_utf8(s, n)) {
        pb_bytes(b, field, s, n);
        return;
    }
    size_t start = pb_begin(b, field);
    const uint8_t *u = (const uint8_t *)s;
    for (size_t i = 0; i < n;) {
        size_t l = otlp_utf8_len(u + i, n - i);
        if (l == 0) {
            otlp_buf_put(b, "\xef\xbf\xbd", 3);
            i++;
        } else {
            otlp_buf_put(b, u + i, l);
            i += l;
        }
    }
    pb_end(b, start);
}

size_t pb_begin(struct otlp_buf *b, uint32_t field)
{
    pb_tag(b, field, 2);
    return b->len;
}

void pb_end(struct otlp_buf *b, size_t start)
{
    if (b->failed)
        return;
    size_t body = b->len - start;
    size_t ll = pb_varint_len(body);
    if (!otlp_buf_room(b, ll))
        return;
    memmove(b->p + start + ll, b->p + start, body);
    pb_varint_at(b->p + start, body);
    b->len += ll;
}

bool pb_read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    uint64_t r = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (*p >= end)
            return false;
        uint8_t c = *(*p)++;
        r |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = r;
            return true;
        }
    }
    return false;
}

/* ------------------------------------------------------------------------
 * JSON
 * ------------------------------------------------------------------------ */

void otlp_json_str(struct otlp_buf *b, const char *s, size_t n)
{
    const uint8_t *u = (const uint8_t *)s;
    otlp_buf_put(b, "\"", 1);
    for (size_t i = 0; i < n;) {
        uint8_t c = u[i];
        if (c == '"' || c == '\\') {
            char esc[2] = { '\\', (char)c };
            otlp_buf_put(b, esc, 2);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            otlp_buf_printf(b, "\\u%04x", c);
            i++;
        } else {
            size_t l = otlp_utf8_len(u + i, n - i);
            if (l == 0) {
                otlp_buf_put(b, "\xef\xbf\xbd", 3);
                i++;
            } else {
                otlp_buf_put(b, u + i, l);
                i += l;
            }
        }
    }
    otlp_buf_put(b, "\"", 1);
}

void otlp_json_double(struct otlp_buf *b, double v)
{
    if (!isfinite(v))
        v = 0;
    otlp_buf_printf(b, "%.17g", v);
}

void otlp_json_u64str(struct otlp_buf *b, uint64_t v)
{
    otlp_buf_printf(b, "\"%llu\"", (unsigned long long)v);
}

void otlp_json_i64str(struct otlp_buf *b, int64_t v)
{
    otlp_buf_printf(b, "\"%lld\"", (long long)v);
}

void otlp_json_hex(struct otlp_buf *b, const uint8_t *d, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    otlp_buf_put(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        char two[2] = { hex[d[i] >> 4], hex[d[i] & 15] };
        otlp_buf_put(b, two, 2);
    }
    otlp_buf_put(b, "\"", 1);
}
