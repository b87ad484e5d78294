/*
 * json.c: the strict, bounded JSON reader of json.h.  One pass over the
 * text with an explicit stack of the containers open (JSON_DEPTH_MAX),
 * one token per value taken from the caller's array; every byte is
 * looked at a bounded number of times, so the work is linear in the
 * text whatever it holds (fuzz/fuzz_json.c).  Strings are checked when
 * read (escapes, surrogate pairs, UTF-8) and decoded only when asked
 * for (json_str()), which can then trust them.
 */
#include <stdio.h>
#include <string.h>

#include "json.h"

struct json_reader {
    const unsigned char *p;
    size_t len, pos;
    struct json_doc *d;
    unsigned cap;
    char *err;
    size_t err_len;
};

static int json_fail(struct json_reader *r, int code, const char *what)
{
    if (r->err != NULL && r->err_len > 0)
        snprintf(r->err, r->err_len, "at byte %zu: %s", r->pos, what);
    return code;
}

static void json_ws(struct json_reader *r)
{
    while (r->pos < r->len && (r->p[r->pos] == ' ' || r->p[r->pos] == '\t' ||
                               r->p[r->pos] == '\n' || r->p[r->pos] == '\r'))
        r->pos++;
}

/* A new token of type t starting at the current byte; -1 when full. */
static long json_tok_new(struct json_reader *r, enum json_type t)
{
    struct json_doc *d = r->d;
    if (d->n == r->cap)
        return -1;
    d->tok[d->n] = (struct json_tok){ .start = (uint32_t)r->pos,
                                      .end = d->n + 1, .type = (uint8_t)t };
    return (long)d->n++;
}

static int json_hex(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Four hex digits at p (within the text): their value, or -1. */
static long json_u4(const unsigned char *p)
{
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int h = json_hex(p[i]);
        if (h < 0)
            return -1;
        v = v << 4 | h;
    }
    return v;
}

/* The length of the well-formed UTF-8 sequence at p (n bytes left), or
 * 0: overlong forms, surrogates and code points past U+10FFFF are not
 * (RFC 3629). */
static size_t json_utf8(const unsigned char *p, size_t n)
{
    unsigned char c = p[0];
    size_t len;
    unsigned long cp;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

/* A string at the opening quote: checked, its token made. */
static int json_string(struct json_reader *r)
{
    long t = json_tok_new(r, JSON_STRING);
    if (t < 0)
        return json_fail(r, JSON_ETOOMANY, "more values than allowed");
    size_t open = ++r->pos;
    for (;;) {
        if (r->pos >= r->len)
            return json_fail(r, JSON_EMALFORMED, "unterminated string");
        unsigned char c = r->p[r->pos];
        if (c == '"')
            break;
        if (c < 0x20)
            return json_fail(r, JSON_EMALFORMED,
                             "control character in a string");
        if (c >= 0x80) {
            size_t l = json_utf8(r->p + r->pos, r->len - r->pos);
            if (l == 0)
                return json_fail(r, JSON_EMALFORMED, "not UTF-8");
            r->pos += l;
            continue;
        }
        if (c != '\\') {
            r->pos++;
            continue;
        }
        if (r->pos + 1 >= r->len)
            return json_fail(r, JSON_EMALFORMED, "unterminated string");
        c = r->p[r->pos + 1];
        if (c != 'u') {
            if (strchr("\"\\/bfnrt", c) == NULL || c == '\0')
                return json_fail(r, JSON_EMALFORMED, "unknown escape");
            r->pos += 2;
            continue;
        }
        long u = r->pos + 6 <= r->len ? json_u4(r->p + r->pos + 2) : -1;
        if (u < 0)
            return json_fail(r, JSON_EMALFORMED, "\\u without 4 hex digits");
        if (u == 0)
            return json_fail(r, JSON_EMALFORMED, "\\u0000 in a string");
        if (u >= 0xdc00 && u <= 0xdfff)
            return json_fail(r, JSON_EMALFORMED, "unpaired low surrogate");
        r->pos += 6;
        if (u >= 0xd800 && u <= 0xdbff) {
            long lo = r->pos + 6 <= r->len && r->p[r->pos] == '\\' &&
                      r->p[r->pos + 1] == 'u' ? json_u4(r->p + r->pos + 2) : -1;
            if (lo < 0xdc00 || lo > 0xdfff)
                return json_fail(r, JSON_EMALFORMED,
                                 "unpaired high surrogate");
            r->pos += 6;
        }
    }
    r->d->tok[t].start = (uint32_t)open;
    r->d->tok[t].len = (uint32_t)(r->pos - open);
    r->pos++;                   /* the closing quote */
    return JSON_OK;
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static int json_number(struct json_reader *r)
{
    long t = json_tok_new(r, JSON_NUMBER);
    if (t < 0)
        return json_fail(r, JSON_ETOOMANY, "more values than allowed");
    size_t start = r->pos;
#define JSON_DIGIT() (r->pos < r->len && r->p[r->pos] >= '0' && r->p[r->pos] <= '9')
    if (r->pos < r->len && r->p[r->pos] == '-')
        r->pos++;
    if (!JSON_DIGIT())
        return json_fail(r, JSON_EMALFORMED, "expected a digit");
    if (r->p[r->pos++] != '0')
        while (JSON_DIGIT())
            r->pos++;
    if (r->pos < r->len && r->p[r->pos] == '.') {
        r->pos++;
        if (!JSON_DIGIT())
            return json_fail(r, JSON_EMALFORMED, "expected a digit after '.'");
        while (JSON_DIGIT())
            r->pos++;
    }
    if (r->pos < r->len && (r->p[r->pos] == 'e' || r->p[r->pos] == 'E')) {
        r->pos++;
        if (r->pos < r->len && (r->p[r->pos] == '+' || r->p[r->pos] == '-'))
            r->pos++;
        if (!JSON_DIGIT())
            return json_fail(r, JSON_EMALFORMED, "expected an exponent");
        while (JSON_DIGIT())
            r->pos++;
    }
#undef JSON_DIGIT
    r->d->tok[t].len = (uint32_t)(r->pos - start);
    return JSON_OK;
}

/* A scalar or the opening of a container at the current byte.  *opened
 * says which: a container's token is left open for the caller. */
static int json_value(struct json_reader *r, long *opened)
{
    static const struct {
        const char *word;
        enum json_type type;
    } words[] = { { "true", JSON_TRUE }, { "false", JSON_FALSE },
                  { "null", JSON_NULL } };
    *opened = -1;
    if (r->pos >= r->len)
        return json_fail(r, JSON_EMALFORMED, "expected a value");
    unsigned char c = r->p[r->pos];
    if (c == '"')
        return json_string(r);
    if (c == '-' || (c >= '0' && c <= '9'))
        return json_number(r);
    if (c == '[' || c == '{') {
        long t = json_tok_new(r, c == '[' ? JSON_ARRAY : JSON_OBJECT);
        if (t < 0)
            return json_fail(r, JSON_ETOOMANY, "more values than allowed");
        r->pos++;
        *opened = t;
        return JSON_OK;
    }
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t wl = strlen(words[i].word);
        if (r->len - r->pos >= wl && memcmp(r->p + r->pos, words[i].word, wl) == 0) {
            long t = json_tok_new(r, words[i].type);
            if (t < 0)
                return json_fail(r, JSON_ETOOMANY, "more values than allowed");
            r->d->tok[t].len = (uint32_t)wl;
            r->pos += wl;
            return JSON_OK;
        }
    }
    return json_fail(r, JSON_EMALFORMED, "expected a value");
}

/* An object's key and its ':' (at the key's quote, whitespace skipped). */
static int json_key(struct json_reader *r)
{
    if (r->pos >= r->len || r->p[r->pos] != '"')
        return json_fail(r, JSON_EMALFORMED, "expected a string as key");
    int rc = json_string(r);
    if (rc != JSON_OK)
        return rc;
    json_ws(r);
    if (r->pos >= r->len || r->p[r->pos] != ':')
        return json_fail(r, JSON_EMALFORMED, "expected ':' after a key");
    r->pos++;
    json_ws(r);
    return JSON_OK;
}

int json_parse(struct json_doc *d, const char *text, size_t len,
               struct json_tok *toks, unsigned cap, char *err, size_t err_len)
{
    struct json_reader r = { .p = (const unsigned char *)text, .len = len,
                             .d = d, .cap = cap, .err = err,
                             .err_len = err_len };
    unsigned stack[JSON_DEPTH_MAX];
    unsigned depth = 0;
    *d = (struct json_doc){ .text = text, .tok = toks };
    if (err != NULL && err_len > 0)
        err[0] = '\0';
    if (len > JSON_TEXT_MAX)
        return json_fail(&r, JSON_ETOOMANY, "text too long");
    json_ws(&r);
    for (;;) {
        /* A value is due here. */
        long opened;
        int rc = json_value(&r, &opened);
        if (rc != JSON_OK)
            return rc;
        if (opened >= 0) {
            if (depth == JSON_DEPTH_MAX)
                return json_fail(&r, JSON_ETOODEEP, "nested too deep");
            stack[depth++] = (unsigned)opened;
            json_ws(&r);
            char close = toks[opened].type == JSON_ARRAY ? ']' : '}';
            if (r.pos < len && text[r.pos] == close) {
                r.pos++;
                toks[opened].end = d->n;
                toks[opened].len = (uint32_t)(r.pos - toks[opened].start);
                depth--;
            } else {
                if (toks[opened].type == JSON_OBJECT &&
                    (rc = json_key(&r)) != JSON_OK)
                    return rc;
                continue;
            }
        }
        /* After a value: a comma, the end of its container (which is a
         * value in turn) or, at the top, the end of the text. */
        for (;;) {
            json_ws(&r);
            if (depth == 0) {
                if (r.pos != len)
                    return json_fail(&r, JSON_EMALFORMED,
                                     "text after the value");
                return JSON_OK;
            }
            struct json_tok *parent = &toks[stack[depth - 1]];
            parent->count++;
            char close = parent->type == JSON_ARRAY ? ']' : '}';
            if (r.pos < len && text[r.pos] == ',') {
                r.pos++;
                json_ws(&r);
                if (parent->type == JSON_OBJECT && (rc = json_key(&r)) != JSON_OK)
                    return rc;
                break;
            }
            if (r.pos < len && text[r.pos] == close) {
                r.pos++;
                parent->end = d->n;
                parent->len = (uint32_t)(r.pos - parent->start);
                depth--;
                continue;
            }
            return json_fail(&r, JSON_EMALFORMED, parent->type == JSON_ARRAY
                             ? "expected ',' or ']'" : "expected ',' or '}'");
        }
    }
}

unsigned json_first(const struct json_doc *d, unsigned i)
{
    const struct json_tok *t = &d->tok[i];
    return (t->type == JSON_ARRAY || t->type == JSON_OBJECT) && t->count > 0
           ? i + 1 : 0;
}

unsigned json_next(const struct json_doc *d, unsigned i, unsigned c)
{
    unsigned after = d->tok[i].type == JSON_OBJECT ? d->tok[c + 1].end
                                                   : d->tok[c].end;
    return after < d->tok[i].end ? after : 0;
}

int json_member(const struct json_doc *d, unsigned i, const char *key)
{
    if (d->tok[i].type != JSON_OBJECT)
        return -3;
    int found = -1;
    for (unsigned k = json_first(d, i); k; k = json_next(d, i, k)) {
        if (!json_str_eq(d, k, key))
            continue;
        if (found >= 0)
            return -2;
        found = (int)k + 1;
    }
    return found;
}

/* Append code point cp as UTF-8 at out[*n] if it fits in cap - 1. */
static bool json_put_cp(char *out, size_t cap, size_t *n, unsigned long cp)
{
    unsigned char b[4];
    size_t l;
    if (cp < 0x80) {
        b[0] = (unsigned char)cp;
        l = 1;
    } else if (cp < 0x800) {
        b[0] = (unsigned char)(0xc0 | cp >> 6);
        b[1] = (unsigned char)(0x80 | (cp & 0x3f));
        l = 2;
    } else if (cp < 0x10000) {
        b[0] = (unsigned char)(0xe0 | cp >> 12);
        b[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        b[2] = (unsigned char)(0x80 | (cp & 0x3f));
        l = 3;
    } else {
        b[0] = (unsigned char)(0xf0 | cp >> 18);
        b[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
        b[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        b[3] = (unsigned char)(0x80 | (cp & 0x3f));
        l = 4;
    }
    if (*n + l >= cap)
        return false;
    memcpy(out + *n, b, l);
    *n += l;
    return true;
}

long json_str(const struct json_doc *d, unsigned i, char *out, size_t cap)
{
    const struct json_tok *t = &d->tok[i];
    if (t->type != JSON_STRING || cap == 0)
        return -1;
    /* json_string() checked every escape: read them as they are. */
    const unsigned char *p = (const unsigned char *)d->text + t->start;
    const unsigned char *e = p + t->len;
    size_t n = 0;
    while (p < e) {
        unsigned long cp;
        if (*p != '\\') {
            if (n + 1 >= cap)
                return -1;
            out[n++] = (char)*p++;
            continue;
        }
        static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
        if (p[1] != 'u') {
            if (n + 1 >= cap)
                return -1;
            out[n++] = to[strchr(from, p[1]) - from];
            p += 2;
            continue;
        }
        cp = (unsigned long)json_u4(p + 2);
        p += 6;
        if (cp >= 0xd800 && cp <= 0xdbff) {
            unsigned long lo = (unsigned long)json_u4(p + 2);
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            p += 6;
        }
        if (!json_put_cp(out, cap, &n, cp))
            return -1;
    }
    out[n] = '\0';
    return (long)n;
}

bool json_str_eq(const struct json_doc *d, unsigned i, const char *s)
{
    char buf[256];
    size_t sl = strlen(s);
    /* A decoded string is never longer than its raw bytes. */
    if (sl >= sizeof buf || d->tok[i].type != JSON_STRING || d->tok[i].len < sl)
        return false;
    long n = json_str(d, i, buf, sizeof buf);
    return n >= 0 && (size_t)n == sl && memcmp(buf, s, sl) == 0;
}

const char *json_type_name(enum json_type t)
{
    switch (t) {
    case JSON_NULL: return "null";
    case JSON_FALSE: case JSON_TRUE: return "a boolean";
    case JSON_NUMBER: return "a number";
    case JSON_STRING: return "a string";
    case JSON_ARRAY: return "an array";
    case JSON_OBJECT: return "an object";
    }
    return "?";
}
