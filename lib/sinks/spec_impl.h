/*
 * spec_impl.h: what the two halves of the spec parser share: spec.c (the
 * structure of a spec: scheme, %-decoded address, the option list and
 * its keys) and spec_options.c (the values of the options every sink
 * shares, their defaults and the rules between them).  Nothing outside
 * lib/sinks/spec*.c includes it: the rest of the library sees spec.h.
 */
#ifndef ELS_SPEC_IMPL_H
#define ELS_SPEC_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "base/log.h"
#include "sinks/spec.h"

/* How much of one piece (a value, a key) a message quotes. */
#define SPEC_PIECE_MAX 64
/* Buffer for one elsi_quote() of a piece. */
#define SPEC_PIECE_BUF ELSI_QUOTE_BUF(SPEC_PIECE_MAX)

/* An option's value as a message quotes it: at most SPEC_PIECE_MAX bytes
 * of it, escaped (a decoded value may hold control bytes), in q. */
static inline const char *spec_quote_value(char q[SPEC_PIECE_BUF],
                                           const char *value)
{
    return elsi_quote(q, SPEC_PIECE_BUF, value, strlen(value), SPEC_PIECE_MAX);
}

enum spec_common {
    SPEC_OPT_BUFFER,
    SPEC_OPT_POLICY,
    SPEC_OPT_WAIT,
    SPEC_OPT_WAIT_CONSUMERS,
    SPEC_OPT_LINGER,
    SPEC_OPT_MAX_CONSUMERS,
    SPEC_OPT_CONSUMER_MEMORY,
    SPEC_OPT_CONTROL,
    SPEC_OPT_CONTROL_SECRET,
    SPEC_OPT_TRUST,
    SPEC_OPT_COLLECTOR_SECRET,
    SPEC_OPT_ANNOUNCE,
    SPEC_OPT__COUNT
};

/* Their keys, indexed by enum spec_common (spec_options.c). */
extern const char *const elsi_spec_common_names[SPEC_OPT__COUNT];

struct spec_parser {
    const char *text;
    char *err;
    size_t err_len;
    struct elsi_spec *out;
    bool common_seen[SPEC_OPT__COUNT];
};

static inline bool spec_is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Write "spec \"<text>\": <fmt...>" about p's spec to its err and return
 * code (spec.c). */
int elsi_spec_fail(struct spec_parser *p, int code, const char *fmt, ...)
    ELSI_PRINTF(3, 4);
/* The name the parser's code calls it by. */
#define spec_fail elsi_spec_fail

/* spec_options.c: the common options' defaults, before any is read. */
void elsi_spec_set_defaults(struct elsi_spec *out);
/* spec_options.c: decode the value of common option opt (written key in
 * the spec: size= stands for buffer= on a ring: sink).  Takes value (a
 * malloc'd, decoded string): kept in *p->out or freed.  0, or the error
 * code with the message in p->err. */
int elsi_spec_set_common(struct spec_parser *p, enum spec_common opt,
                         const char *key, char *value);
/* spec_options.c: the rules between common options, once all are read. */
int elsi_spec_check_common(struct spec_parser *p);

#endif /* ELS_SPEC_IMPL_H */
