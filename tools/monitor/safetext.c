/*
 * safetext.c: untrusted bytes shown as text (see safetext.h for the rule).
 */
#include <stdint.h>
#include <string.h>

#include "safetext.h"

/* The code point of the valid UTF-8 sequence at s (n bytes available)
 * and its length, or 0 when s does not start one (overlong forms,
 * surrogates and values past U+10FFFF are not valid). */
static size_t safetext_utf8(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned c = s[0];
    size_t len;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if ((c & 0xe0) == 0xc0) { len = 2; v = c & 0x1f; min = 0x80; }
    else if ((c & 0xf0) == 0xe0) { len = 3; v = c & 0x0f; min = 0x800; }
    else if ((c & 0xf8) == 0xf0) { len = 4; v = c & 0x07; min = 0x10000; }
    else return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        v = (v << 6) | (s[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return len;
}

/* Code points a terminal acts on or that change how the line reads. */
static int safetext_is_control(uint32_t cp)
{
    return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f)
        || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069)
        || cp == 0x2028 || cp == 0x2029;
}

size_t safetext_char(const char *s, size_t n, char out[SAFETEXT_CHAR_MAX],
                     size_t *out_len)
{
    static const char hex[] = "0123456789ABCDEF";
    const unsigned char *u = (const unsigned char *)s;
    uint32_t cp;
    size_t len = safetext_utf8(u, n, &cp);
    if (len == 0) {
        out[0] = '\\';
        out[1] = 'x';
        out[2] = hex[u[0] >> 4];
        out[3] = hex[u[0] & 15];
        *out_len = 4;
        return 1;
    }
    if (cp == '\\' || cp == '\n' || cp == '\t' || cp == '\r') {
        out[0] = '\\';
        out[1] = cp == '\\' ? '\\' : cp == '\n' ? 'n' : cp == '\t' ? 't' : 'r';
        *out_len = 2;
        return 1;
    }
    if (safetext_is_control(cp)) {
        /* \u{XX} for the one-byte controls, \u{XXXX} for the others. */
        size_t k = 0, digits = cp <= 0xff ? 2 : 4;
        out[k++] = '\\';
        out[k++] = 'u';
        out[k++] = '{';
        for (size_t d = digits; d-- > 0;)
            out[k++] = hex[(cp >> (4 * d)) & 15];
        out[k++] = '}';
        *out_len = k;
        return len;
    }
    memcpy(out, s, len);
    *out_len = len;
    return len;
}

void safetext_fput(FILE *f, const char *s, size_t n)
{
    char c[SAFETEXT_CHAR_MAX];
    size_t i = 0;
    while (i < n) {
        size_t l;
        i += safetext_char(s + i, n - i, c, &l);
        fwrite(c, 1, l, f);
    }
}

size_t safetext_copy(char *dst, size_t cap, const char *s, size_t n)
{
    char c[SAFETEXT_CHAR_MAX];
    size_t i = 0, k = 0;
    while (i < n) {
        size_t l;
        size_t took = safetext_char(s + i, n - i, c, &l);
        if (k + l + 1 > cap)
            break;
        memcpy(dst + k, c, l);
        k += l;
        i += took;
    }
    dst[k] = '\0';
    return k;
}

void safetext_json_fput(FILE *f, const char *s, size_t n)
{
    size_t i = 0;
    fputc('"', f);
    while (i < n) {
        char form[SAFETEXT_CHAR_MAX + 1];
        size_t len;
        size_t took = safetext_char(s + i, n - i, form, &len);
        form[len] = '\0';
        if (s[i] == '"') {
            fputs("\\\"", f);
        } else if (len == took && memcmp(form, s + i, len) == 0) {
            fwrite(s + i, 1, took, f);              /* shown as it is */
        } else if (form[1] == 'x') {
            fputs("\\ufffd", f);                   /* not UTF-8 */
        } else if (form[1] == 'u') {
            /* \u{XX} or \u{XXXX}: the same code point, JSON's way. */
            char hex[5] = "0000";
            size_t digits = len - 4;
            memcpy(hex + 4 - digits, form + 3, digits);
            fprintf(f, "\\u%s", hex);
        } else {
            fputs(form, f);     /* \\ \n \t \r mean the same in JSON */
        }
        i += took;
    }
    fputc('"', f);
}
