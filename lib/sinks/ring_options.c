/*
 * ring_options.c: the syntax of a flight recorder's dump options
 * (ring:...&dump-on=...&after=...&cooldown=...&max-dumps=...), checked
 * by the ring sink at open and read again by the writer.  What the
 * conditions mean and when a dump is due is the evaluator's business
 * (lib/writer/trigger.c, Note [Triggered dumps]); this file reads no
 * stream and knows nothing of the writer.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eventlog-sink.h"
#include "base/log.h"
#include "sinks/ring_options.h"
#include "sinks/spec.h"

#define TRIGGER_MAX_NS ((uint64_t)86400 * 1000000000u)

int elsi_trigger_parse_duration(const char *text, uint64_t *ns)
{
    if (text == NULL || ns == NULL || text[0] < '0' || text[0] > '9')
        return ELS_EINVAL;
    uint64_t whole = 0, frac = 0, frac_scale = 1;
    size_t i = 0;
    for (; text[i] >= '0' && text[i] <= '9'; i++) {
        whole = whole * 10 + (uint64_t)(text[i] - '0');
        if (whole > TRIGGER_MAX_NS)
            return ELS_EINVAL;
    }
    if (text[i] == '.') {
        i++;
        if (text[i] < '0' || text[i] > '9')
            return ELS_EINVAL;
        for (unsigned d = 0; text[i] >= '0' && text[i] <= '9'; i++, d++) {
            if (d == 9)
                return ELS_EINVAL;  /* finer than any unit needs */
            frac = frac * 10 + (uint64_t)(text[i] - '0');
            frac_scale *= 10;
        }
    }
    const char *u = text + i;
    uint64_t mult;
    if (strcmp(u, "ns") == 0)
        mult = 1;
    else if (strcmp(u, "us") == 0)
        mult = 1000;
    else if (strcmp(u, "ms") == 0)
        mult = 1000000;
    else if (strcmp(u, "s") == 0 || u[0] == '\0')
        mult = 1000000000;
    else if (strcmp(u, "m") == 0)
        mult = 60000000000ull;
    else
        return ELS_EINVAL;
    if (whole > TRIGGER_MAX_NS / mult)
        return ELS_EINVAL;
    uint64_t v = whole * mult + frac * mult / frac_scale;
    if (v > TRIGGER_MAX_NS)
        return ELS_EINVAL;
    *ns = v;
    return 0;
}

/* Decode %XX in [s, s+n) into out (NUL-terminated, at most cap-1 bytes):
 * its length, or -1 (a bad escape, too long). */
static long trigger_unescape(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '%') {
            if (i + 2 >= n)
                return -1;
            int h = elsi_hex_digit(s[i + 1]), l = elsi_hex_digit(s[i + 2]);
            if (h < 0 || l < 0)
                return -1;
            c = (char)(h * 16 + l);
            i += 2;
        }
        if (o + 1 >= cap)
            return -1;
        out[o++] = c;
    }
    out[o] = '\0';
    return (long)o;
}

static int trigger_cond(const char *piece, size_t n, struct elsi_trigger_cond *c,
                        char *err, size_t err_len)
{
    char text[ELSI_TRIGGER_PREFIX_MAX + 32];
    long len = trigger_unescape(piece, n, text, sizeof text);
    if (len < 0)
        return elsi_fail(err, err_len, ELS_EINVAL, "dump-on=: \"%.*s\": a bad "
                         "%%XX escape, or longer than %u bytes", (int)n, piece,
                         ELSI_TRIGGER_PREFIX_MAX);
    if ((size_t)len != strlen(text))
        return elsi_fail(err, err_len, ELS_EINVAL, "dump-on=: \"%.*s\": a NUL "
                         "byte in a condition", (int)n, piece);
    memset(c, 0, sizeof *c);
    const char *v;
    if (strncmp(text, "gc-pause>", 9) == 0) {
        c->kind = ELSI_TRIGGER_GC_PAUSE;
        if (elsi_trigger_parse_duration(text + 9, &c->value) != 0)
            return elsi_fail(err, err_len, ELS_EINVAL, "dump-on=%s: expected a "
                             "duration like 50ms (ns, us, ms, s or m)", text);
    } else if (strncmp(text, "heap-live>", 10) == 0) {
        c->kind = ELSI_TRIGGER_HEAP_LIVE;
        if (els_sink_parse_size(text + 10, &c->value) != 0)
            return elsi_fail(err, err_len, ELS_EINVAL, "dump-on=%s: expected a "
                             "size like 512M (digits with an optional K, M "
                             "or G)", text);
    } else if ((v = strncmp(text, "marker:", 7) == 0 ? text + 7 : NULL) != NULL ||
               (v = strncmp(text, "message:", 8) == 0 ? text + 8 : NULL) != NULL) {
        c->kind = text[1] == 'a' ? ELSI_TRIGGER_MARKER : ELSI_TRIGGER_MESSAGE;
        c->prefix_len = strlen(v);
        if (c->prefix_len > ELSI_TRIGGER_PREFIX_MAX)
            return elsi_fail(err, err_len, ELS_EINVAL, "dump-on=: a prefix "
                             "longer than %u bytes", ELSI_TRIGGER_PREFIX_MAX);
        memcpy(c->prefix, v, c->prefix_len + 1);
    } else if (strcmp(text, "loss") == 0) {
        c->kind = ELSI_TRIGGER_LOSS;
    } else {
        return elsi_fail(err, err_len, ELS_EINVAL, "dump-on=%s: expected "
                         "gc-pause>DURATION, heap-live>SIZE, marker:PREFIX, "
                         "message:PREFIX or loss", text);
    }
    return 0;
}

int elsi_trigger_parse(const char *dump_on, const char *after,
                       const char *cooldown, const char *max_dumps,
                       struct elsi_trigger_config *out,
                       char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    out->after_ms = ELSI_TRIGGER_DEFAULT_AFTER_MS;
    out->cooldown_ms = ELSI_TRIGGER_DEFAULT_COOLDOWN_MS;
    out->max_dumps = ELSI_TRIGGER_DEFAULT_MAX_DUMPS;
    if (dump_on == NULL) {
        const char *lone = after != NULL ? "after" : cooldown != NULL ? "cooldown"
                           : NULL;
        if (lone != NULL)
            return elsi_fail(err, err_len, ELS_EINVAL, "%s= means nothing "
                             "without dump-on=", lone);
    }
    const char *p = dump_on;
    while (p != NULL) {
        const char *comma = strchr(p, ',');
        size_t n = comma != NULL ? (size_t)(comma - p) : strlen(p);
        if (n == 0)
            return elsi_fail(err, err_len, ELS_EINVAL, "dump-on=%s: an empty "
                             "condition", dump_on);
        if (out->n_conds == ELSI_TRIGGER_MAX_CONDS)
            return elsi_fail(err, err_len, ELS_EINVAL, "dump-on=: more than %u "
                             "conditions", ELSI_TRIGGER_MAX_CONDS);
        int r = trigger_cond(p, n, &out->conds[out->n_conds], err, err_len);
        if (r != 0)
            return r;
        out->n_conds++;
        p = comma != NULL ? comma + 1 : NULL;
    }
    uint64_t ns;
    if (after != NULL) {
        if (elsi_trigger_parse_duration(after, &ns) != 0 || ns / 1000000 > 3600000)
            return elsi_fail(err, err_len, ELS_EINVAL, "after=%s: expected a "
                             "duration like 1s or 500ms, at most an hour", after);
        out->after_ms = (uint32_t)(ns / 1000000);
    }
    if (cooldown != NULL) {
        if (elsi_trigger_parse_duration(cooldown, &ns) != 0)
            return elsi_fail(err, err_len, ELS_EINVAL, "cooldown=%s: expected a "
                             "duration like 60s or 5m, at most a day", cooldown);
        out->cooldown_ms = (uint32_t)(ns / 1000000);
    }
    if (max_dumps != NULL) {
        char *end;
        errno = 0;
        unsigned long v = max_dumps[0] >= '0' && max_dumps[0] <= '9'
                              ? strtoul(max_dumps, &end, 10) : 0;
        if (v == 0 || errno != 0 || *end != '\0' || v > ELSI_TRIGGER_MAX_DUMPS)
            return elsi_fail(err, err_len, ELS_EINVAL, "max-dumps=%s: expected "
                             "a count from 1 to %u", max_dumps,
                             ELSI_TRIGGER_MAX_DUMPS);
        out->max_dumps = (unsigned)v;
    }
    return 0;
}
