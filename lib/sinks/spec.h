/*
 * spec.h: parsing of sink specs, SCHEME:ADDRESS[?key=value&...].
 *
 * The parser checks syntax, matches the scheme exactly against the sink
 * registry, decodes the options common to every sink (buffer, policy, wait,
 * linger) and keeps the sink's own options for its open().  It refuses an
 * option that neither the writer nor the sink declares.  It opens nothing;
 * whether an address can be bound is the sink's business.
 *
 * ADDRESS and option values may use %XX escapes (so a path can contain '?'
 * or '&'); keys may not.
 *
 * It also owns the rules that other modules apply to the same names and
 * texts: scheme and option-key syntax (checked again by the registry for
 * registered tables), the common option names, and, for the sinks, the
 * shared mode= option and the "spec \"...\": " form of their messages.
 */
#ifndef ELS_SPEC_H
#define ELS_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eventlog-sink.h"
#include "base/log.h"

#define ELSI_SPEC_MAX_OPTIONS 16
#define ELSI_SCHEME_MAX 31
#define ELSI_OPTION_KEY_MAX ELSI_SCHEME_MAX   /* longest option key */

/* Defaults and limits of the common options. */
#define ELSI_RTS_BUFFER_BYTES   (2u * 1024 * 1024)        /* one RTS EventsBuf */
#define ELSI_DEFAULT_BUFFER     ((uint64_t)32 * 1024 * 1024)
#define ELSI_MAX_BUFFER         ((uint64_t)16 * 1024 * 1024 * 1024)
#define ELSI_DEFAULT_LINGER_MS  5000u
#define ELSI_MAX_SECONDS        86400u
#define ELSI_DEFAULT_MAX_CONSUMERS  64u
#define ELSI_MAX_CONSUMERS          65536u
#define ELSI_DEFAULT_CONSUMER_MEMORY ((uint64_t)8 * 1024 * 1024)
#define ELSI_MIN_CONSUMER_MEMORY     ((uint64_t)64 * 1024)

enum elsi_policy {
    ELSI_POLICY_DROP = 0,
    ELSI_POLICY_BLOCK = 1
};

struct elsi_spec {
    char scheme[ELSI_SCHEME_MAX + 1];
    char *text;                     /* copy of the whole spec */
    char *address;                  /* decoded ADDRESS */
    const struct els_sink_ops *ops; /* registered sink for scheme */

    /* Sink-specific options (declared in ops->options), decoded. */
    size_t n_options;
    char *option_keys[ELSI_SPEC_MAX_OPTIONS];
    char *option_values[ELSI_SPEC_MAX_OPTIONS];

    /* Common options. */
    uint64_t buffer_bytes;          /* buffer=SIZE: K/M/G binary suffixes; > 2 MiB */
    enum elsi_policy policy;        /* policy=drop|block|block:MS */
    int64_t block_ms;               /* -1: block forever; else MS > 0 */
    uint32_t wait_ms;               /* wait=SECS (decimals allowed); 0: don't */
    uint32_t wait_consumers;        /* wait-consumers=N: wait= holds for N; default 1 */
    uint32_t linger_ms;             /* linger=SECS; default 5 s */
    uint32_t max_consumers;         /* max-consumers=N: per sink, at once */
    uint64_t consumer_memory;       /* consumer-memory=SIZE: see writer */
    bool control;                   /* control=1|unix:PATH: docs/CONTROL.md */
    char *control_endpoint;         /* control=unix:PATH: PATH, or NULL */
    char *control_secret;           /* control-secret=PATH, or NULL */
    /* Connect-out sinks (Note [Trusted consumers]): trust=1, and
     * collector-secret=PATH (or NULL): the secret a collector proves to
     * be trusted (Note [Collector proof]). */
    bool trust;
    char *collector_secret;
    bool announce;                  /* announce=0|1: writer/announce.h; default 1 */
};

/* Parse text into *out (which the caller then owns: elsi_spec_free()).
 * On error returns ELS_EINVAL (syntax or value), ELS_ENOSCHEME (scheme not
 * registered) or ELS_ENOMEM, leaves *out empty, and writes one line to err
 * quoting the spec and naming the part that is wrong. */
int elsi_spec_parse(const char *text, struct elsi_spec *out,
                    char *err, size_t err_len);

void elsi_spec_free(struct elsi_spec *spec);

/* The value of the hexadecimal digit c (0-9, a-f, A-F), or -1: %XX
 * escapes, here and in the options that take escaped lists. */
int elsi_hex_digit(char c);

/* Fill the public view handed to the sink's open(). */
void elsi_spec_sink_args(const struct elsi_spec *spec,
                         struct els_sink_args *args, char *err, size_t err_len);

/* Parse "SECS" (non-negative decimal, at most ELSI_MAX_SECONDS, up to
 * millisecond precision) into milliseconds.  0 or ELS_EINVAL. */
int elsi_parse_seconds(const char *text, uint32_t *ms);

/* Scheme syntax: [a-z][a-z0-9+.-]*, at most ELSI_SCHEME_MAX bytes.  The
 * registry applies it to registered tables; the parser applies the same
 * checks one at a time to a spec, to say which one fails. */
bool elsi_scheme_valid(const char *scheme);

/* Option key syntax: [a-z][a-z0-9_-]*, at most ELSI_OPTION_KEY_MAX bytes.
 * The registry applies it to the names a sink declares, the parser to the
 * keys of a spec. */
bool elsi_option_key_valid(const char *key);

/* Is key one of the options every sink shares (buffer, policy, wait,
 * linger), which the writer decodes and a sink may not declare? */
bool elsi_option_is_common(const char *key);

/* ------------------------------------------------------------------------
 * For the sinks' open()
 * ------------------------------------------------------------------------ */

/* Write "spec \"<args->spec>\": <message>" to args->err, the form of every
 * spec parser message (the spec quoted, as elsi_quote() does), and return
 * code.  For what is wrong with the address as written; errors met while
 * acquiring the endpoint name the path or address they concern instead. */
int elsi_sink_fail(const struct els_sink_args *args, int code,
                   const char *fmt, ...) ELSI_PRINTF(3, 4);

/* The option mode=: octal permission bits from 0 to 0777, with or without
 * a leading 0 ("0660", "660"); default_mode if the spec does not give it.
 * Setuid, setgid and sticky bits are refused rather than dropped.  0, or
 * ELS_EINVAL with the message in args->err. */
int elsi_sink_mode(const struct els_sink_args *args, unsigned default_mode,
                   unsigned *mode);

#endif /* ELS_SPEC_H */
