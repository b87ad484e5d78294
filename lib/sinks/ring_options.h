/*
 * ring_options.h: the syntax of a flight recorder's (ring:) dump options,
 * dump-on=COND[,COND...] with after=, cooldown= and max-dumps=, checked
 * by the ring sink at open (ring.c) and read by the writer for the
 * evaluator (lib/writer/trigger.h, Note [Triggered dumps] in
 * lib/writer/trigger.c).  Not its job: reading units or deciding when a
 * dump is due.
 */
#ifndef ELS_RING_OPTIONS_H
#define ELS_RING_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#define ELSI_TRIGGER_MAX_CONDS 8
#define ELSI_TRIGGER_PREFIX_MAX 255
#define ELSI_TRIGGER_DEFAULT_AFTER_MS 1000u
#define ELSI_TRIGGER_DEFAULT_COOLDOWN_MS 60000u
#define ELSI_TRIGGER_DEFAULT_MAX_DUMPS 10u
#define ELSI_TRIGGER_MAX_DUMPS 100000u

enum elsi_trigger_kind {
    ELSI_TRIGGER_GC_PAUSE = 1,  /* a GC longer than value ns */
    ELSI_TRIGGER_HEAP_LIVE,     /* live heap above value bytes at a GC */
    ELSI_TRIGGER_MARKER,        /* traceMarker text starting with prefix */
    ELSI_TRIGGER_MESSAGE,       /* traceEvent text starting with prefix */
    ELSI_TRIGGER_LOSS           /* any unit the writer counts as lost */
};

struct elsi_trigger_cond {
    enum elsi_trigger_kind kind;
    uint64_t value;
    char prefix[ELSI_TRIGGER_PREFIX_MAX + 1];
    size_t prefix_len;
};

struct elsi_trigger_config {
    unsigned n_conds;               /* 0: no dump-on=, nothing to do */
    struct elsi_trigger_cond conds[ELSI_TRIGGER_MAX_CONDS];
    uint32_t after_ms, cooldown_ms;
    unsigned max_dumps;
};

/* The options as the spec gives them (each NULL when absent; the spec has
 * decoded %XX once already).  0, or ELS_EINVAL with one line in err naming
 * the option.  after= and cooldown= without dump-on= are refused: they
 * would mean nothing.  max-dumps= alone bounds the dumps asked for
 * otherwise (lib/writer/recorder.c, Note [Flight recorder]). */
int elsi_trigger_parse(const char *dump_on, const char *after,
                       const char *cooldown, const char *max_dumps,
                       struct elsi_trigger_config *out,
                       char *err, size_t err_len);
/* A duration: digits with an optional fraction and a unit ns, us, ms, s
 * or m (none: seconds, as the other options take them), into ns.  0 or
 * ELS_EINVAL (also above a day). */
int elsi_trigger_parse_duration(const char *text, uint64_t *ns);

#endif /* ELS_RING_OPTIONS_H */
