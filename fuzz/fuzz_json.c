/*
 * fuzz_json.c: the JSON reader of serve --all's webhook
 * (tools/serve/json.c), which reads what anyone holding the token, or
 * anyone who can reach the port before the token is checked, sends it.
 *
 * Properties, for any bytes: only the documented results, and a
 * failure's message one printable line; on success the tokens describe
 * a tree (token 0 spans the document, every subtree ends within its
 * parent's, an array's or object's count is what walking it finds, an
 * object's keys are strings, nesting at most JSON_DEPTH_MAX), each
 * token's bytes lie within the input, every string decodes into exactly
 * its raw length's room or less, to UTF-8 without NUL, and a buffer one
 * byte shorter than the decoded length is refused; the document needs
 * exactly its count of tokens (one fewer: JSON_ETOOMANY); and written
 * back out canonically, it parses to the same tree with the same
 * strings.  Built with the reader's own source file.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "../tools/serve/json.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FJ_CAP 2048

/* Is s[0..n) UTF-8 with no NUL (an independent check, RFC 3629)? */
static bool fj_utf8(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        size_t l = c == 0 ? 0 : c < 0x80 ? 1 : (c >> 5) == 6 ? 2 :
                   (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (l == 0 || i + l > n)
            return false;
        uint32_t cp = l == 1 ? c : c & (0x7f >> l);
        for (size_t k = 1; k < l; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        static const uint32_t min[5] = { 0, 0, 0x80, 0x800, 0x10000 };
        if (cp < min[l] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += l;
    }
    return true;
}

/* The tree's shape is sound, nested at most JSON_DEPTH_MAX deep. */
static void fj_check_tree(const struct json_doc *d, size_t size)
{
    FUZZ_CHECK(d->n > 0 && d->tok[0].end == d->n, "token 0 ends at %u of %u",
               d->tok[0].end, d->n);
    unsigned stack[JSON_DEPTH_MAX + 1], depth = 0;
    for (unsigned i = 0; i < d->n; i++) {
        const struct json_tok *t = &d->tok[i];
        while (depth > 0 && d->tok[stack[depth - 1]].end <= i)
            depth--;
        FUZZ_CHECK(t->end > i && t->end <= d->n, "token %u ends at %u", i, t->end);
        if (depth > 0)
            FUZZ_CHECK(t->end <= d->tok[stack[depth - 1]].end,
                       "token %u leaves its parent", i);
        FUZZ_CHECK((size_t)t->start + t->len <= size, "token %u past the input", i);
        FUZZ_CHECK(t->type <= JSON_OBJECT, "token %u type %u", i, t->type);
        if (t->type != JSON_ARRAY && t->type != JSON_OBJECT) {
            FUZZ_CHECK(t->end == i + 1, "scalar %u has children", i);
            continue;
        }
        unsigned n = 0;
        for (unsigned c = json_first(d, i); c; c = json_next(d, i, c)) {
            FUZZ_CHECK(c > i && c < t->end, "child %u of %u", c, i);
            if (t->type == JSON_OBJECT)
                FUZZ_CHECK(d->tok[c].type == JSON_STRING, "a key of type %u",
                           d->tok[c].type);
            n++;
        }
        FUZZ_CHECK(n == t->count, "%u children walked, count %u", n, t->count);
        FUZZ_CHECK(depth < JSON_DEPTH_MAX, "nested deeper than the bound");
        stack[depth++] = i;
    }
}

/* Token i written out canonically into b (strings re-escaped from their
 * decoded bytes); returns the token after its subtree. */
static unsigned fj_write(const struct json_doc *d, unsigned i, char *b,
                         size_t *n, size_t cap)
{
    const struct json_tok *t = &d->tok[i];
#define FJ_PUT(s, l)                                                        \
    do {                                                                    \
        FUZZ_CHECK(*n + (l) <= cap, "canonical form too long");             \
        memcpy(b + *n, s, l);                                               \
        *n += l;                                                            \
    } while (0)
    if (t->type == JSON_STRING) {
        char *dec = fuzz_alloc((size_t)t->len + 1);
        long dl = json_str(d, i, dec, (size_t)t->len + 1);
        FUZZ_CHECK(dl >= 0, "string %u does not decode in its raw length", i);
        FJ_PUT("\"", 1);
        for (long k = 0; k < dl; k++) {
            unsigned char c = (unsigned char)dec[k];
            char esc[8];
            if (c == '"' || c == '\\' || c < 0x20) {
                snprintf(esc, sizeof esc, "\\u%04x", c);
                FJ_PUT(esc, 6);
            } else {
                FJ_PUT(&dec[k], 1);
            }
        }
        FJ_PUT("\"", 1);
        free(dec);
        return i + 1;
    }
    if (t->type != JSON_ARRAY && t->type != JSON_OBJECT) {
        FJ_PUT(d->text + t->start, t->len);
        return i + 1;
    }
    FJ_PUT(t->type == JSON_ARRAY ? "[" : "{", 1);
    unsigned c = i + 1, k = 0;
    while (c < t->end) {
        if (k > 0)
            FJ_PUT(",", 1);
        c = fj_write(d, c, b, n, cap);
        if (t->type == JSON_OBJECT) {
            FJ_PUT(":", 1);
            c = fj_write(d, c, b, n, cap);
        }
        k++;
    }
    FJ_PUT(t->type == JSON_ARRAY ? "]" : "}", 1);
    return t->end;
#undef FJ_PUT
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct json_tok toks[FJ_CAP], again[FJ_CAP];
    char *text = (char *)fuzz_bytes(data, size);
    char err[200];
    struct json_doc d;
    int rc = json_parse(&d, text, size, toks, FJ_CAP, err, sizeof err);
    FUZZ_CHECK(rc == JSON_OK || rc == JSON_EMALFORMED || rc == JSON_ETOOMANY ||
               rc == JSON_ETOODEEP, "result %d", rc);
    if (rc != JSON_OK) {
        FUZZ_CHECK(fuzz_one_line(err, sizeof err), "message '%s'", err);
        free(text);
        return 0;
    }
    fj_check_tree(&d, size);
    for (unsigned i = 0; i < d.n; i++) {
        if (d.tok[i].type != JSON_STRING)
            continue;
        size_t room = (size_t)d.tok[i].len + 1;
        char *dec = fuzz_alloc(room);
        long dl = json_str(&d, i, dec, room);
        FUZZ_CHECK(dl >= 0 && (size_t)dl < room, "string %u: %ld", i, dl);
        FUZZ_CHECK(fj_utf8((const unsigned char *)dec, (size_t)dl),
                   "string %u decodes to bytes that are not UTF-8", i);
        if (dl > 0)
            FUZZ_CHECK(json_str(&d, i, dec, (size_t)dl) == -1,
                       "string %u fits a buffer one byte short", i);
        free(dec);
    }
    /* Exactly its count of tokens. */
    struct json_doc fewer;
    FUZZ_CHECK(json_parse(&fewer, text, size, again, d.n - 1, err, sizeof err) ==
               JSON_ETOOMANY, "parsed with %u tokens of %u", d.n - 1, d.n);
    /* The canonical form parses to the same tree and strings.  A
     * string's bytes grow at most 6 times (\u00XX for a control). */
    size_t cap = 6 * size + 16, n = 0;
    char *canon = fuzz_alloc(cap);
    fj_write(&d, 0, canon, &n, cap);
    struct json_doc d2;
    rc = json_parse(&d2, canon, n, again, FJ_CAP, err, sizeof err);
    FUZZ_CHECK(rc == JSON_OK, "the canonical form fails: %s", err);
    FUZZ_CHECK(d2.n == d.n, "%u tokens, canonically %u", d.n, d2.n);
    for (unsigned i = 0; i < d.n; i++) {
        FUZZ_CHECK(d.tok[i].type == d2.tok[i].type &&
                   d.tok[i].end == d2.tok[i].end &&
                   d.tok[i].count == d2.tok[i].count, "token %u differs", i);
        if (d.tok[i].type != JSON_STRING)
            continue;
        char *a = fuzz_alloc((size_t)d.tok[i].len + 1);
        char *b2 = fuzz_alloc((size_t)d2.tok[i].len + 1);
        long al = json_str(&d, i, a, (size_t)d.tok[i].len + 1);
        long bl = json_str(&d2, i, b2, (size_t)d2.tok[i].len + 1);
        FUZZ_CHECK(al == bl && memcmp(a, b2, (size_t)al) == 0,
                   "string %u differs canonically", i);
        FUZZ_CHECK(json_str_eq(&d2, i, a) == (al < 256), "json_str_eq on %u", i);
        free(a);
        free(b2);
    }
    free(canon);
    free(text);
    return 0;
}
