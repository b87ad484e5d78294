/*
 * spec_options.c: the values of the options every sink shares, as a spec
 * gives them: sizes (buffer, consumer-memory), seconds (wait, linger),
 * policy, consumer limits (max-consumers, wait-consumers), control and
 * its secret, announce (the discovery entry, lib/writer/announce.c), and a connect-out sink's trust and collector-secret; their
 * defaults, and the rules between them (control-secret= needs control=,
 * trust= and collector-secret= only for sinks that connect out, and
 * never together).  Each refusal names the option and quotes the value.
 * Also the size and seconds syntax other modules use
 * (els_sink_parse_size(), elsi_parse_seconds()).  Not its job: the
 * spec's structure, which keys exist and which are given twice (spec.c),
 * or what the options do (the writer, lib/writer/, and the control
 * channel, lib/control/).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sinks/spec_impl.h"

/* policy=block:MS upper bound: one day, like ELSI_MAX_SECONDS. */
#define SPEC_MAX_BLOCK_MS ((int64_t)ELSI_MAX_SECONDS * 1000)

const char *const elsi_spec_common_names[SPEC_OPT__COUNT] = {
    [SPEC_OPT_BUFFER] = "buffer",
    [SPEC_OPT_POLICY] = "policy",
    [SPEC_OPT_WAIT] = "wait",
    [SPEC_OPT_WAIT_CONSUMERS] = "wait-consumers",
    [SPEC_OPT_LINGER] = "linger",
    [SPEC_OPT_MAX_CONSUMERS] = "max-consumers",
    [SPEC_OPT_CONSUMER_MEMORY] = "consumer-memory",
    [SPEC_OPT_CONTROL] = "control",
    [SPEC_OPT_CONTROL_SECRET] = "control-secret",
    [SPEC_OPT_TRUST] = "trust",
    [SPEC_OPT_COLLECTOR_SECRET] = "collector-secret",
    [SPEC_OPT_ANNOUNCE] = "announce",
};

/* ------------------------------------------------------------------------
 * Sizes, seconds, policy, consumer limits
 * ------------------------------------------------------------------------ */

enum spec_num_status {
    SPEC_NUM_OK = 0,
    SPEC_NUM_SYNTAX,
    SPEC_NUM_OVERFLOW
};

/* Digits with an optional K, M or G (either case, binary multiples). */
static enum spec_num_status spec_size(const char *s, uint64_t *bytes)
{
    uint64_t v = 0;
    size_t i = 0;
    if (!spec_is_digit(s[0]))
        return SPEC_NUM_SYNTAX;
    bool overflow = false;
    for (; spec_is_digit(s[i]); i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            overflow = true;    /* keep scanning: syntax errors win */
        else
            v = v * 10 + d;
    }
    unsigned shift = 0;
    switch (s[i]) {
    case '\0': break;
    case 'k': case 'K': shift = 10; i++; break;
    case 'm': case 'M': shift = 20; i++; break;
    case 'g': case 'G': shift = 30; i++; break;
    default: return SPEC_NUM_SYNTAX;
    }
    if (s[i] != '\0')
        return SPEC_NUM_SYNTAX;
    if (overflow || v > (UINT64_MAX >> shift))
        return SPEC_NUM_OVERFLOW;
    *bytes = v << shift;
    return SPEC_NUM_OK;
}

int els_sink_parse_size(const char *text, uint64_t *bytes)
{
    if (text == NULL || bytes == NULL)
        return ELS_EINVAL;
    switch (spec_size(text, bytes)) {
    case SPEC_NUM_OK: return 0;
    case SPEC_NUM_OVERFLOW: return -ERANGE;
    default: return ELS_EINVAL;
    }
}

int elsi_parse_seconds(const char *text, uint32_t *ms)
{
    if (text == NULL || ms == NULL || !spec_is_digit(text[0]))
        return ELS_EINVAL;
    uint64_t whole = 0;
    size_t i = 0;
    for (; spec_is_digit(text[i]); i++) {
        whole = whole * 10 + (uint64_t)(text[i] - '0');
        if (whole > ELSI_MAX_SECONDS)
            return ELS_EINVAL;  /* also keeps whole far from overflow */
    }
    uint64_t frac_ms = 0;
    if (text[i] == '.') {
        i++;
        /* "2." and ".5" are refused: a digit on each side of the point
         * makes a typo like "2.x" or "wait=." impossible to misread. */
        if (!spec_is_digit(text[i]))
            return ELS_EINVAL;
        unsigned scale = 100;
        for (unsigned digits = 0; spec_is_digit(text[i]); i++, digits++) {
            if (digits == 3)
                return ELS_EINVAL;  /* finer than a millisecond */
            frac_ms += (uint64_t)(text[i] - '0') * scale;
            scale /= 10;
        }
    }
    if (text[i] != '\0')
        return ELS_EINVAL;
    uint64_t total = whole * 1000 + frac_ms;
    if (total > (uint64_t)ELSI_MAX_SECONDS * 1000)
        return ELS_EINVAL;
    *ms = (uint32_t)total;
    return 0;
}

static int spec_set_buffer(struct spec_parser *p, const char *key,
                           const char *value)
{
    char q[SPEC_PIECE_BUF];
    uint64_t bytes = 0;
    switch (spec_size(value, &bytes)) {
    case SPEC_NUM_OK:
        break;
    case SPEC_NUM_SYNTAX:
        return spec_fail(p, ELS_EINVAL,
                         "%s=%s: expected a size like 64M (digits with "
                         "an optional K, M or G)", key,
                         spec_quote_value(q, value));
    case SPEC_NUM_OVERFLOW:
        bytes = UINT64_MAX;
        break;
    }
    /* The queue must hold at least one full RTS buffer plus the unit in
     * flight, or a single block could never be queued. */
    if (bytes <= ELSI_RTS_BUFFER_BYTES)
        return spec_fail(p, ELS_EINVAL,
                         "%s=%s is too small: it must be more than 2M "
                         "(%u bytes, one RTS event buffer)", key,
                         spec_quote_value(q, value),
                         (unsigned)ELSI_RTS_BUFFER_BYTES);
    if (bytes > ELSI_MAX_BUFFER)
        return spec_fail(p, ELS_EINVAL,
                         "%s=%s is too large: at most %" PRIu64 "G", key,
                         spec_quote_value(q, value),
                         ELSI_MAX_BUFFER >> 30);
    p->out->buffer_bytes = bytes;
    return 0;
}

static int spec_set_policy(struct spec_parser *p, const char *value)
{
    char q[SPEC_PIECE_BUF];
    struct elsi_spec *out = p->out;
    if (strcmp(value, "drop") == 0) {
        out->policy = ELSI_POLICY_DROP;
        out->block_ms = 0;
        return 0;
    }
    if (strcmp(value, "block") == 0) {
        out->policy = ELSI_POLICY_BLOCK;
        out->block_ms = -1;
        return 0;
    }
    if (strncmp(value, "block:", 6) == 0) {
        const char *ms = value + 6;
        int64_t v = 0;
        size_t i = 0;
        for (; spec_is_digit(ms[i]) && v <= SPEC_MAX_BLOCK_MS; i++)
            v = v * 10 + (ms[i] - '0');
        if (i == 0 || ms[i] != '\0' || v < 1 || v > SPEC_MAX_BLOCK_MS)
            return spec_fail(p, ELS_EINVAL,
                             "policy=%s: MS in block:MS must be a whole "
                             "number of milliseconds from 1 to %" PRId64,
                             spec_quote_value(q, value),
                             SPEC_MAX_BLOCK_MS);
        out->policy = ELSI_POLICY_BLOCK;
        out->block_ms = v;
        return 0;
    }
    return spec_fail(p, ELS_EINVAL,
                     "policy=%s: expected drop, block or block:MS",
                     spec_quote_value(q, value));
}

/* max-consumers=N and wait-consumers=N (1 to ELSI_MAX_CONSUMERS),
 * consumer-memory=SIZE (64K, room for the notes of many consumers, up to
 * buffer='s limit). */
static int spec_set_consumer_limit(struct spec_parser *p, enum spec_common opt,
                                   const char *value)
{
    char q[SPEC_PIECE_BUF];
    uint64_t v = 0;
    if (opt == SPEC_OPT_CONSUMER_MEMORY) {
        if (spec_size(value, &v) == SPEC_NUM_OK &&
            v >= ELSI_MIN_CONSUMER_MEMORY && v <= ELSI_MAX_BUFFER) {
            p->out->consumer_memory = v;
            return 0;
        }
        return spec_fail(p, ELS_EINVAL, "consumer-memory=%s: expected a size "
                         "like 8M (digits with an optional K, M or G), from "
                         "64K to %" PRIu64 "G",
                         spec_quote_value(q, value), ELSI_MAX_BUFFER >> 30);
    }
    size_t i = 0;
    for (; spec_is_digit(value[i]) && v <= ELSI_MAX_CONSUMERS; i++)
        v = v * 10 + (uint64_t)(value[i] - '0');
    const char *key = opt == SPEC_OPT_WAIT_CONSUMERS ? "wait-consumers"
                                                      : "max-consumers";
    if (i == 0 || value[i] != '\0' || v < 1 || v > ELSI_MAX_CONSUMERS)
        return spec_fail(p, ELS_EINVAL, "%s=%s: expected a whole "
                         "number from 1 to %u", key,
                         spec_quote_value(q, value), ELSI_MAX_CONSUMERS);
    if (opt == SPEC_OPT_WAIT_CONSUMERS)
        p->out->wait_consumers = (uint32_t)v;
    else
        p->out->max_consumers = (uint32_t)v;
    return 0;
}

static int spec_set_seconds(struct spec_parser *p, const char *key,
                            const char *value, uint32_t *ms)
{
    if (elsi_parse_seconds(value, ms) == 0)
        return 0;
    char q[SPEC_PIECE_BUF];
    return spec_fail(p, ELS_EINVAL,
                     "%s=%s: expected seconds like 2 or 0.25 (at most 3 "
                     "decimals, at most %u)", key,
                     spec_quote_value(q, value),
                     (unsigned)ELSI_MAX_SECONDS);
}

/* ------------------------------------------------------------------------
 * Control and trust
 * ------------------------------------------------------------------------ */

/* control=0|1|unix:PATH (docs/CONTROL.md): off unless asked for.  1 serves
 * the sink's own clients, so only a sink that takes connections can carry
 * it (checked at open); unix:PATH gives a sink that takes none (ring:) a
 * socket of its own for control-only clients.  value stays the caller's
 * unless out->control_endpoint takes it. */
static int spec_set_control(struct spec_parser *p, char *value)
{
    struct elsi_spec *out = p->out;
    char cq[SPEC_PIECE_BUF];
    if (strcmp(value, "0") == 0 || strcmp(value, "1") == 0) {
        out->control = value[0] == '1';
        return 0;
    }
    if (strncmp(value, "unix:", 5) != 0)
        return spec_fail(p, ELS_EINVAL, "control=%s: expected 0, 1 or "
                         "unix:PATH",
                         spec_quote_value(cq, value));
    if (value[5] == '\0')
        return spec_fail(p, ELS_EINVAL, "control=unix: needs the path of "
                         "the control socket (control=unix:PATH)");
    if (out->ops->style != ELS_SINK_RECORD)
        return spec_fail(p, ELS_EINVAL, "control=unix:PATH is for ring: "
                         "sinks%s", out->ops->style == ELS_SINK_LISTEN
                             ? "; this one takes control=1 for its own clients"
                             : "");
    /* The path is checked (length, what is there) when it is bound. */
    memmove(value, value + 5, strlen(value + 5) + 1);
    out->control = true;
    out->control_endpoint = value;
    return 0;
}

/* Does the sink connect out to a collector over a socket (trust=,
 * collector-secret=)?  Files and FIFOs dial too, but their mode says who
 * may open them. */
static bool spec_connects_out(const struct elsi_spec *out)
{
    return out->ops->style == ELS_SINK_DIAL &&
           strcmp(out->scheme, "file") != 0 && strcmp(out->scheme, "fifo") != 0;
}

/* ------------------------------------------------------------------------
 * For the parser
 * ------------------------------------------------------------------------ */

void elsi_spec_set_defaults(struct elsi_spec *out)
{
    out->buffer_bytes = ELSI_DEFAULT_BUFFER;
    out->policy = ELSI_POLICY_DROP;
    out->block_ms = 0;              /* unused under policy=drop */
    out->wait_ms = 0;
    out->wait_consumers = 1;
    out->linger_ms = ELSI_DEFAULT_LINGER_MS;
    out->max_consumers = ELSI_DEFAULT_MAX_CONSUMERS;
    out->consumer_memory = ELSI_DEFAULT_CONSUMER_MEMORY;
    out->announce = true;
}

int elsi_spec_set_common(struct spec_parser *p, enum spec_common opt,
                         const char *key, char *value)
{
    struct elsi_spec *out = p->out;
    char q[SPEC_PIECE_BUF];
    int rc = 0;
    switch (opt) {
    case SPEC_OPT_BUFFER:
        rc = spec_set_buffer(p, key, value);
        break;
    case SPEC_OPT_POLICY:
        rc = spec_set_policy(p, value);
        break;
    case SPEC_OPT_WAIT:
        rc = spec_set_seconds(p, key, value, &out->wait_ms);
        break;
    case SPEC_OPT_LINGER:
        rc = spec_set_seconds(p, key, value, &out->linger_ms);
        break;
    case SPEC_OPT_MAX_CONSUMERS:
    case SPEC_OPT_WAIT_CONSUMERS:
    case SPEC_OPT_CONSUMER_MEMORY:
        rc = spec_set_consumer_limit(p, opt, value);
        break;
    case SPEC_OPT_CONTROL:
        rc = spec_set_control(p, value);
        if (rc == 0 && out->control_endpoint == value)
            value = NULL;
        break;
    case SPEC_OPT_CONTROL_SECRET:
        /* A path; the file is read (and its mode checked) at open. */
        if (value[0] == '\0') {
            rc = spec_fail(p, ELS_EINVAL, "control-secret= needs the path "
                           "of a file holding the secret");
        } else {
            out->control_secret = value;
            value = NULL;
        }
        break;
    case SPEC_OPT_TRUST:
        /* Note [Trusted consumers]: the user vouches for the
         * collector. */
        if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0)
            rc = spec_fail(p, ELS_EINVAL, "trust=%s: expected 0 or 1",
                           spec_quote_value(q, value));
        else
            out->trust = value[0] == '1';
        break;
    case SPEC_OPT_COLLECTOR_SECRET:
        /* A path; read (and its mode checked) at open, as
         * control-secret='s. */
        out->collector_secret = value;
        value = NULL;
        break;
    case SPEC_OPT_ANNOUNCE:
        /* The entry `eventlog-sink ps` lists (Note [Announce files]). */
        if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0)
            rc = spec_fail(p, ELS_EINVAL, "announce=%s: expected 0 or 1",
                           spec_quote_value(q, value));
        else
            out->announce = value[0] == '1';
        break;
    case SPEC_OPT__COUNT:
        break;
    }
    free(value);
    return rc;
}

int elsi_spec_check_common(struct spec_parser *p)
{
    struct elsi_spec *out = p->out;
    if (out->control_secret != NULL && !out->control)
        return spec_fail(p, ELS_EINVAL, "control-secret= is given without "
                         "control=1");
    if ((p->common_seen[SPEC_OPT_TRUST] || out->collector_secret != NULL) &&
        !spec_connects_out(out))
        return spec_fail(p, ELS_EINVAL, "%s is for connect-out sinks "
                         "(unix-connect:, tcp-connect:): it says whether "
                         "their collector may hold the program back under "
                         "policy=block", p->common_seen[SPEC_OPT_TRUST]
                             ? "trust=" : "collector-secret=");
    if (out->trust && out->collector_secret != NULL)
        return spec_fail(p, ELS_EINVAL, "trust=1 and collector-secret= "
                         "together: trust=1 trusts any collector, so the "
                         "secret would prove nothing (give one of them)");
    if (out->control_secret != NULL && out->control_endpoint != NULL)
        return spec_fail(p, ELS_EINVAL, "control-secret= is for TCP "
                         "clients; control=unix:PATH takes UNIX clients "
                         "only");
    return 0;
}
