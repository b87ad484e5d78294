/*
 * spec.c: parsing of sink specs, SCHEME:ADDRESS[?key=value&key=value...]:
 * their structure.  Splits a spec into its scheme (matched exactly
 * against the registry, never by prefix), its %-decoded address and its
 * key=value options; refuses a malformed, unknown or repeated key, hands
 * the value of a common option to spec_options.c and keeps the ones the
 * sink declared for its open().  Every refusal is one line that quotes
 * the spec and names the part that is wrong (elsi_spec_fail(), which
 * spec_options.c words its refusals with too).  What the address means,
 * and whether it can be bound or opened, is the sink's business: an
 * empty address is passed on for the sink to judge.  The sinks use the
 * helpers at the end of this file for the one option several of them
 * share (mode=) and to word their complaints about the spec the way the
 * parser does.  Not its job: what the common options' values may be, their
 * defaults and the rules between them (spec_options.c).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "sinks/sinks.h"
#include "sinks/spec_impl.h"

/* How much of the spec a message quotes before cutting it with "...": long
 * enough for any sensible spec, short enough that the reason after it
 * survives an err buffer of a few hundred bytes. */
#define SPEC_QUOTE_MAX 160

/* Write "spec \"<text>\": <fmt...>" to err: the form of every message about
 * a spec, the parser's and the sinks' (elsi_sink_fail()).  errno is kept,
 * as elsi_fail() keeps it. */
static int spec_vfail(char *err, size_t err_len, int code, const char *text,
                      const char *fmt, va_list ap)
{
    if (err == NULL || err_len == 0)
        return code;
    int saved_errno = errno;
    char what[512];
    char quoted[ELSI_QUOTE_BUF(SPEC_QUOTE_MAX)];
    vsnprintf(what, sizeof what, fmt, ap);
    elsi_quote(quoted, sizeof quoted, text, strlen(text), SPEC_QUOTE_MAX);
    errno = saved_errno;
    return elsi_fail(err, err_len, code, "spec \"%s\": %s", quoted, what);
}

int elsi_spec_fail(struct spec_parser *p, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = spec_vfail(p->err, p->err_len, code, p->text, fmt, ap);
    va_end(ap);
    return rc;
}

/* ------------------------------------------------------------------------
 * Lexical rules
 * ------------------------------------------------------------------------ */

static bool spec_is_lower(char c)
{
    return c >= 'a' && c <= 'z';
}

/* Schemes: [a-z0-9+.-] after the first letter. */
static bool spec_is_scheme_char(char c)
{
    return spec_is_lower(c) || spec_is_digit(c) || c == '+' || c == '.' ||
           c == '-';
}

/* Keys: [a-z0-9_-] after the first letter.  No %-escapes: a key is a name,
 * not data. */
static bool spec_is_key_char(char c)
{
    return spec_is_lower(c) || spec_is_digit(c) || c == '_' || c == '-';
}

/* s[0..n) is 1 to max bytes, a letter a-z and then characters that
 * is_char accepts: the shape of both schemes and option keys. */
static bool spec_name_valid(const char *s, size_t n, size_t max,
                            bool (*is_char)(char))
{
    if (n == 0 || n > max || !spec_is_lower(s[0]))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!is_char(s[i]))
            return false;
    return true;
}

bool elsi_scheme_valid(const char *scheme)
{
    return scheme != NULL &&
           spec_name_valid(scheme, strnlen(scheme, ELSI_SCHEME_MAX + 1),
                           ELSI_SCHEME_MAX, spec_is_scheme_char);
}

bool elsi_option_key_valid(const char *key)
{
    return key != NULL &&
           spec_name_valid(key, strnlen(key, ELSI_OPTION_KEY_MAX + 1),
                           ELSI_OPTION_KEY_MAX, spec_is_key_char);
}

/* Index of key in elsi_spec_common_names, or -1. */
static int spec_common_index(const char *key)
{
    for (int i = 0; i < SPEC_OPT__COUNT; i++)
        if (strcmp(key, elsi_spec_common_names[i]) == 0)
            return i;
    return -1;
}

bool elsi_option_is_common(const char *key)
{
    return key != NULL && spec_common_index(key) >= 0;
}

int elsi_hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decode %XX escapes in s[0..n) into a new string.  what names the piece
 * for messages ("address", "the value of option 'mode'"). */
static int spec_decode(struct spec_parser *p, const char *s, size_t n,
                       const char *what, char **out)
{
    char *d = malloc(n + 1);
    if (d == NULL)
        return spec_fail(p, ELS_ENOMEM, "out of memory");
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            d[o++] = s[i];
            continue;
        }
        int hi = i + 1 < n ? elsi_hex_digit(s[i + 1]) : -1;
        int lo = i + 2 < n ? elsi_hex_digit(s[i + 2]) : -1;
        if (hi < 0 || lo < 0) {
            char q[SPEC_PIECE_BUF];
            size_t len = n - i < 3 ? n - i : 3;
            free(d);
            return spec_fail(p, ELS_EINVAL,
                             "bad %%-escape \"%s\" in %s (write %%XX with "
                             "two hex digits; %%25 for a literal '%%')",
                             elsi_quote(q, sizeof q, s + i, len, 3), what);
        }
        int c = hi * 16 + lo;
        if (c == 0) {
            free(d);
            return spec_fail(p, ELS_EINVAL,
                             "%%00 in %s would decode to a NUL byte", what);
        }
        d[o++] = (char)c;
        i += 2;
    }
    d[o] = '\0';
    *out = d;
    return 0;
}

/* ------------------------------------------------------------------------
 * Structure
 * ------------------------------------------------------------------------ */

/* Scheme: everything before the first ':'.  Sets out->scheme and out->ops,
 * and *rest to the text after the ':'. */
static int spec_parse_scheme(struct spec_parser *p, const char **rest)
{
    const char *text = p->text;
    char names[256];
    const char *colon = strchr(text, ':');

    if (text[0] == '\0')
        return spec_fail(p, ELS_EINVAL,
                         "empty spec (expected SCHEME:ADDRESS, for example "
                         "unix:/tmp/ghc.sock)");
    if (colon == NULL) {
        elsi_registry_names(names, sizeof names);
        return spec_fail(p, ELS_EINVAL,
                         "no ':' after the scheme (expected SCHEME:ADDRESS; "
                         "schemes: %s)", names);
    }
    size_t n = (size_t)(colon - text);
    if (n == 0) {
        elsi_registry_names(names, sizeof names);
        return spec_fail(p, ELS_EINVAL,
                         "missing scheme before ':' (schemes: %s)", names);
    }

    /* elsi_scheme_valid()'s checks one at a time, so that the message can
     * say which one fails (and suggest lowercase before anything else). */
    char q[SPEC_PIECE_BUF], bad[SPEC_PIECE_BUF];
    bool upper = false;
    for (size_t i = 0; i < n; i++) {
        char c = text[i];
        if (c >= 'A' && c <= 'Z') {
            upper = true;
        } else if (!spec_is_scheme_char(c)) {
            return spec_fail(p, ELS_EINVAL,
                             "invalid character '%s' in scheme \"%s\" "
                             "(schemes are [a-z][a-z0-9+.-]* followed by "
                             "':')",
                             elsi_quote(bad, sizeof bad, &text[i], 1, 1),
                             elsi_quote(q, sizeof q, text, n,
                                        SPEC_PIECE_MAX));
        }
    }
    if (upper) {
        elsi_registry_names(names, sizeof names);
        return spec_fail(p, ELS_EINVAL,
                         "scheme \"%s\" has uppercase letters; schemes are "
                         "lowercase (schemes: %s)",
                         elsi_quote(q, sizeof q, text, n, SPEC_PIECE_MAX),
                         names);
    }
    if (!spec_is_lower(text[0]))
        return spec_fail(p, ELS_EINVAL,
                         "scheme \"%s\" must start with a letter a-z",
                         elsi_quote(q, sizeof q, text, n, SPEC_PIECE_MAX));
    if (n > ELSI_SCHEME_MAX)
        return spec_fail(p, ELS_EINVAL,
                         "scheme \"%s\" is longer than %d bytes",
                         elsi_quote(q, sizeof q, text, n, SPEC_PIECE_MAX),
                         ELSI_SCHEME_MAX);

    memcpy(p->out->scheme, text, n);
    p->out->scheme[n] = '\0';
    /* Exact match only: "tc:" or "tcpp:" must not reach the tcp sink. */
    p->out->ops = els_sink_lookup(p->out->scheme);
    if (p->out->ops == NULL) {
        elsi_registry_names(names, sizeof names);
        return spec_fail(p, ELS_ENOSCHEME,
                         "scheme \"%s\" is not registered (schemes: %s)",
                         p->out->scheme, names);
    }
    *rest = colon + 1;
    return 0;
}

static bool spec_sink_declares(const struct els_sink_ops *ops, const char *key)
{
    if (ops->options == NULL)
        return false;
    for (size_t i = 0; ops->options[i] != NULL; i++)
        if (strcmp(ops->options[i], key) == 0)
            return true;
    return false;
}

/* "buffer, policy, wait, linger, <the sink's>" for messages. */
static void spec_valid_options(const struct els_sink_ops *ops, char *buf,
                               size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < SPEC_OPT__COUNT; i++) {
        int n = snprintf(buf + o, len - o, "%s%s", i > 0 ? ", " : "",
                         elsi_spec_common_names[i]);
        if (n < 0 || (size_t)n >= len - o)
            return;
        o += (size_t)n;
    }
    for (size_t i = 0; ops->options != NULL && ops->options[i] != NULL; i++) {
        int n = snprintf(buf + o, len - o, ", %s", ops->options[i]);
        if (n < 0 || (size_t)n >= len - o)
            return;
        o += (size_t)n;
    }
}

/* One key=value item, s[0..n), of the option list. */
static int spec_parse_option(struct spec_parser *p, const char *s, size_t n,
                             bool only_item)
{
    struct elsi_spec *out = p->out;
    char q[SPEC_PIECE_BUF];

    if (n == 0)
        return spec_fail(p, ELS_EINVAL, only_item
                         ? "empty option list after '?'"
                         : "empty option (a stray '&')");
    const char *eq = memchr(s, '=', n);
    if (eq == NULL)
        return spec_fail(p, ELS_EINVAL,
                         "option '%s' has no value (expected key=value)",
                         elsi_quote(q, sizeof q, s, n, SPEC_PIECE_MAX));
    size_t klen = (size_t)(eq - s);
    if (klen == 0)
        return spec_fail(p, ELS_EINVAL, "option '%s' has an empty key",
                         elsi_quote(q, sizeof q, s, n, SPEC_PIECE_MAX));
    if (!spec_name_valid(s, klen, ELSI_OPTION_KEY_MAX, spec_is_key_char))
        return spec_fail(p, ELS_EINVAL,
                         "invalid option key '%s' (keys are [a-z][a-z0-9_-]* "
                         "of at most %d bytes, without %%-escapes)",
                         elsi_quote(q, sizeof q, s, klen, SPEC_PIECE_MAX),
                         ELSI_OPTION_KEY_MAX);
    char key[ELSI_OPTION_KEY_MAX + 1];
    memcpy(key, s, klen);
    key[klen] = '\0';

    const char *raw = eq + 1;
    size_t vlen = n - klen - 1;
    if (vlen == 0)
        return spec_fail(p, ELS_EINVAL, "option '%s' has an empty value",
                         key);
    /* Only the first '?' starts the options; a second one is almost
     * certainly an address that needed %3F. */
    if (memchr(raw, '?', vlen) != NULL)
        return spec_fail(p, ELS_EINVAL,
                         "unescaped '?' in the value of option '%s' (write "
                         "%%3F)", key);

    /* A flight recorder (ring:) keeps the stream in the queue: its size=
     * is the queue's size, the queue drops the oldest units (policy=drop
     * by design), and no consumer is waited for. */
    bool record = out->ops->style == ELS_SINK_RECORD;
    if (record && (strcmp(key, "buffer") == 0 || strcmp(key, "policy") == 0 ||
                   strcmp(key, "wait") == 0 ||
                   strcmp(key, "wait-consumers") == 0))
        return spec_fail(p, ELS_EINVAL,
                         "option '%s' does not apply to scheme %s%s", key,
                         out->scheme, strcmp(key, "buffer") == 0
                         ? " (its size= is the window it keeps)" : "");
    int common = record && strcmp(key, "size") == 0
                     ? (int)SPEC_OPT_BUFFER : spec_common_index(key);
    bool seen = common >= 0 && p->common_seen[common];
    for (size_t i = 0; !seen && i < out->n_options; i++)
        seen = strcmp(out->option_keys[i], key) == 0;
    if (seen)
        return spec_fail(p, ELS_EINVAL, "option '%s' is given twice", key);
    if (common < 0 && !spec_sink_declares(out->ops, key)) {
        char valid[256];
        spec_valid_options(out->ops, valid, sizeof valid);
        return spec_fail(p, ELS_EINVAL,
                         "unknown option '%s' for scheme %s (valid: %s)",
                         key, out->scheme, valid);
    }

    char what[ELSI_OPTION_KEY_MAX + 40];
    snprintf(what, sizeof what, "the value of option '%s'", key);
    char *value = NULL;
    int rc = spec_decode(p, raw, vlen, what, &value);
    if (rc != 0)
        return rc;

    if (common >= 0) {
        p->common_seen[common] = true;
        return elsi_spec_set_common(p, (enum spec_common)common, key, value);
    }

    if (out->n_options == ELSI_SPEC_MAX_OPTIONS) {
        free(value);
        return spec_fail(p, ELS_EINVAL,
                         "too many options at '%s' (at most %d besides "
                         "the common ones)", key,
                         ELSI_SPEC_MAX_OPTIONS);
    }
    char *kcopy = strdup(key);
    if (kcopy == NULL) {
        free(value);
        return spec_fail(p, ELS_ENOMEM, "out of memory");
    }
    out->option_keys[out->n_options] = kcopy;
    out->option_values[out->n_options] = value;
    out->n_options++;
    return 0;
}

int elsi_spec_parse(const char *text, struct elsi_spec *out,
                    char *err, size_t err_len)
{
    if (out == NULL)
        return elsi_fail(err, err_len, ELS_EINVAL, "no spec result given");
    memset(out, 0, sizeof *out);
    if (text == NULL)
        return elsi_fail(err, err_len, ELS_EINVAL,
                         "no spec given (expected SCHEME:ADDRESS"
                         "[?key=value&...])");

    struct spec_parser p = {
        .text = text, .err = err, .err_len = err_len, .out = out,
    };
    elsi_spec_set_defaults(out);

    const char *rest = NULL;
    int rc = spec_parse_scheme(&p, &rest);
    if (rc != 0)
        goto fail;

    out->text = strdup(text);
    if (out->text == NULL) {
        rc = spec_fail(&p, ELS_ENOMEM, "out of memory");
        goto fail;
    }

    const char *query = strchr(rest, '?');
    size_t alen = query != NULL ? (size_t)(query - rest) : strlen(rest);
    rc = spec_decode(&p, rest, alen, "the address", &out->address);
    if (rc != 0)
        goto fail;

    if (query != NULL) {
        const char *item = query + 1;
        bool only_item = true;
        for (;;) {
            const char *amp = strchr(item, '&');
            size_t n = amp != NULL ? (size_t)(amp - item) : strlen(item);
            if (amp != NULL)
                only_item = false;
            rc = spec_parse_option(&p, item, n, only_item);
            if (rc != 0)
                goto fail;
            if (amp == NULL)
                break;
            item = amp + 1;
        }
    }
    rc = elsi_spec_check_common(&p);
    if (rc != 0)
        goto fail;
    return 0;

fail:
    elsi_spec_free(out);
    return rc;
}

void elsi_spec_free(struct elsi_spec *spec)
{
    if (spec == NULL)
        return;
    free(spec->text);
    free(spec->address);
    free(spec->control_secret);
    free(spec->control_endpoint);
    free(spec->collector_secret);
    for (size_t i = 0; i < spec->n_options && i < ELSI_SPEC_MAX_OPTIONS; i++) {
        free(spec->option_keys[i]);
        free(spec->option_values[i]);
    }
    memset(spec, 0, sizeof *spec);
}

void elsi_spec_sink_args(const struct elsi_spec *spec,
                         struct els_sink_args *args, char *err, size_t err_len)
{
    memset(args, 0, sizeof *args);
    args->scheme = spec->scheme;
    args->address = spec->address != NULL ? spec->address : "";
    args->spec = spec->text != NULL ? spec->text : "";
    args->n_options = spec->n_options;
    /* char *[] to const char *const *: C needs the cast that C++ would
     * do implicitly; the sink may not write through these. */
    args->option_keys = (const char *const *)spec->option_keys;
    args->option_values = (const char *const *)spec->option_values;
    args->err = err;
    args->err_len = err_len;
}

const char *els_sink_option(const struct els_sink_args *args, const char *key)
{
    if (args == NULL || key == NULL || args->option_keys == NULL)
        return NULL;
    for (size_t i = 0; i < args->n_options; i++)
        if (args->option_keys[i] != NULL &&
            strcmp(args->option_keys[i], key) == 0)
            return args->option_values != NULL ? args->option_values[i]
                                               : NULL;
    return NULL;
}

/* ------------------------------------------------------------------------
 * For the sinks' open()
 * ------------------------------------------------------------------------ */

int elsi_sink_fail(const struct els_sink_args *args, int code,
                   const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = spec_vfail(args->err, args->err_len, code,
                        args->spec != NULL ? args->spec : "", fmt, ap);
    va_end(ap);
    return rc;
}

int elsi_sink_mode(const struct els_sink_args *args, unsigned default_mode,
                   unsigned *mode)
{
    const char *v = els_sink_option(args, "mode");
    *mode = default_mode;
    if (v == NULL)
        return 0;
    unsigned m = 0;
    const char *p = v;
    if (*p == '\0')
        goto bad;
    for (; *p != '\0'; p++) {
        if (*p < '0' || *p > '7' || m > 0777)
            goto bad;
        m = m * 8 + (unsigned)(*p - '0');
    }
    if (m > 0777)
        goto bad;
    *mode = m;
    return 0;
bad:;
    /* Quoted like every spec message: v is decoded and may hold control
     * bytes (found by fuzz/fuzz_spec.c). */
    char q[SPEC_PIECE_BUF];
    return elsi_sink_fail(args, ELS_EINVAL,
                          "mode=%s: expected octal permission bits 0..0777",
                          spec_quote_value(q, v));
}
