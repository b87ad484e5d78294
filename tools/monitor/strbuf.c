/*
 * strbuf.c: the monitor's growable text buffer (see strbuf.h).
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

void sb_free(struct strbuf *sb)
{
    free(sb->p);
    *sb = (struct strbuf){ 0 };
}

void sb_clear(struct strbuf *sb)
{
    sb->len = 0;
    sb->failed = false;
    if (sb->p != NULL)
        sb->p[0] = '\0';
}

static bool sb_reserve(struct strbuf *sb, size_t n)
{
    if (sb->failed)
        return false;
    if (sb->len + n + 1 <= sb->cap)
        return true;
    size_t cap = sb->cap ? sb->cap : 1024;
    while (cap < sb->len + n + 1)
        cap *= 2;
    char *p = realloc(sb->p, cap);
    if (p == NULL) {
        sb->failed = true;
        return false;
    }
    sb->p = p;
    sb->cap = cap;
    return true;
}

void sb_put(struct strbuf *sb, const void *d, size_t n)
{
    if (!sb_reserve(sb, n))
        return;
    memcpy(sb->p + sb->len, d, n);
    sb->len += n;
    sb->p[sb->len] = '\0';
}

void sb_puts(struct strbuf *sb, const char *s)
{
    sb_put(sb, s, strlen(s));
}

void sb_printf(struct strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    char small[256];
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        sb_put(sb, small, (size_t)n);
        return;
    }
    if (!sb_reserve(sb, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(sb->p + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if none. */
static size_t sb_utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    uint32_t cp, min;
    if (c < 0x80) return 1;
    if ((c & 0xe0) == 0xc0) { len = 2; cp = c & 0x1f; min = 0x80; }
    else if ((c & 0xf0) == 0xe0) { len = 3; cp = c & 0x0f; min = 0x800; }
    else if ((c & 0xf8) == 0xf0) { len = 4; cp = c & 0x07; min = 0x10000; }
    else return 0;
    if (len > n) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

void sb_json_str(struct strbuf *sb, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    sb_put(sb, "\"", 1);
    size_t i = 0;
    while (i < n) {
        unsigned char c = u[i];
        if (c == '"' || c == '\\') {
            char e[2] = { '\\', (char)c };
            sb_put(sb, e, 2);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            sb_printf(sb, "\\u%04x", c);
            i++;
        } else {
            size_t l = sb_utf8_len(u + i, n - i);
            if (l == 0) {
                sb_puts(sb, "\\ufffd");
                i++;
            } else {
                sb_put(sb, u + i, l);
                i += l;
            }
        }
    }
    sb_put(sb, "\"", 1);
}

/* Prometheus text: the escapes of the format's one rule (the quote
 * only inside a label value), valid UTF-8 as it is. */
static void sb_prom_text(struct strbuf *sb, const char *s, size_t n,
                         bool quote)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned char c = u[i];
        if (c == '\\' || (quote && c == '"')) {
            char e[2] = { '\\', (char)c };
            sb_put(sb, e, 2);
            i++;
        } else if (c == '\n') {
            sb_put(sb, "\\n", 2);
            i++;
        } else {
            size_t l = sb_utf8_len(u + i, n - i);
            if (l == 0) {
                sb_put(sb, "\xef\xbf\xbd", 3);    /* U+FFFD */
                i++;
            } else {
                sb_put(sb, u + i, l);
                i += l;
            }
        }
    }
}

void sb_prom_label(struct strbuf *sb, const char *s, size_t n)
{
    sb_put(sb, "\"", 1);
    sb_prom_text(sb, s, n, true);
    sb_put(sb, "\"", 1);
}

void sb_prom_help(struct strbuf *sb, const char *s, size_t n)
{
    sb_prom_text(sb, s, n, false);
}

void sb_json_num(struct strbuf *sb, double v)
{
    if (!isfinite(v))
        v = 0;
    /* The range test first: converting a double outside int64_t's range
     * is undefined. */
    if (fabs(v) < 1e15 && v == floor(v))
        sb_printf(sb, "%lld", (long long)v);
    else
        sb_printf(sb, "%.6g", v);
}
