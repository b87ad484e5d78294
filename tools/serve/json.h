/*
 * json.h: a small, strict and bounded JSON reader, for the one JSON
 * document `serve --all` takes from outside: Alertmanager's webhook
 * (tools/serve/alert.c).  The caller gives the text and an array of
 * tokens; the reader fills the array with one token per value, in
 * document order, each knowing where its subtree ends, so that walking
 * it needs no recursion either.  Bounds: the caller's token array (a
 * document with more values is refused, not truncated) and
 * JSON_DEPTH_MAX levels of nesting (an explicit stack, never the C
 * stack).  Strict: RFC 8259's grammar and nothing more (no comments,
 * trailing commas, single quotes, NaN, leading '+' or zeros, bare
 * control bytes in strings, byte order mark), strings well-formed UTF-8
 * with paired surrogates, and "\u0000" refused (a C string could not
 * hold it).  Not its job: numbers' values (kept as text), what the
 * document means.
 */
#ifndef ELS_SERVE_JSON_H
#define ELS_SERVE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSON_DEPTH_MAX 32       /* arrays and objects open at once */
#define JSON_TEXT_MAX (64u << 20)   /* the longest text json_parse() takes */

enum json_type {
    JSON_NULL, JSON_FALSE, JSON_TRUE, JSON_NUMBER, JSON_STRING, JSON_ARRAY,
    JSON_OBJECT
};

/* What json_parse() returns. */
enum json_status {
    JSON_OK = 0,
    JSON_EMALFORMED = -1,       /* not JSON (err says where and why) */
    JSON_ETOOMANY = -2,         /* more values than the token array holds */
    JSON_ETOODEEP = -3,         /* nested deeper than JSON_DEPTH_MAX */
};

struct json_tok {
    uint32_t start;     /* its first byte (a string's: after the quote) */
    uint32_t len;       /* its bytes (a string's: between the quotes, raw) */
    uint32_t end;       /* the index of the first token after its subtree */
    uint32_t count;     /* an array's elements, an object's members */
    uint8_t type;       /* enum json_type */
};

/* An object's tokens are its members' key (a string) and value in turn;
 * token 0 is the whole document. */
struct json_doc {
    const char *text;
    struct json_tok *tok;
    unsigned n;
};

/* Parse text[0..len) into d with tokens from toks[0..cap).  JSON_OK, or
 * a negative enum json_status with one line in err ("at byte N: ..."). */
int json_parse(struct json_doc *d, const char *text, size_t len,
               struct json_tok *toks, unsigned cap, char *err, size_t err_len);

/* The value of member key of object i: its token index, or -1 absent,
 * -2 given twice (which would count?), -3 i is not an object. */
int json_member(const struct json_doc *d, unsigned i, const char *key);

/* The children of container i (an object's: its keys, each followed by
 * its value): the first, or 0 for none; then the one after c, or 0.
 *     for (unsigned c = json_first(d, i); c; c = json_next(d, i, c))  */
unsigned json_first(const struct json_doc *d, unsigned i);
unsigned json_next(const struct json_doc *d, unsigned i, unsigned c);

/* String i decoded (escapes resolved) into out, NUL-terminated: its
 * length, or -1 when i is not a string or it needs more than cap - 1
 * bytes. */
long json_str(const struct json_doc *d, unsigned i, char *out, size_t cap);

/* Is i the string s (after decoding)? */
bool json_str_eq(const struct json_doc *d, unsigned i, const char *s);

const char *json_type_name(enum json_type t);

#endif /* ELS_SERVE_JSON_H */
