/*
 * ring_trigger.h: the conditions that make a flight recorder (ring:) save
 * itself, dump-on=COND[,COND...] with after=, cooldown= and max-dumps=
 * (Note [Triggered dumps] in ring_trigger.c).  Two parts: the options'
 * syntax, checked by the ring sink at open, and an evaluator the writer
 * thread feeds with the header and each unit and asks when a dump is due.
 * The evaluator reads units with the public parser (eventlog-sink/parse.h)
 * and keeps no pointer into them; it never touches the writer, its lock or
 * its ring, and takes the time as an argument, so a test drives it with a
 * clock of its own.  Not its job: reading the ring, opening or writing a
 * dump (lib/deliver/dump.c, lib/sinks/ring.c).
 */
#ifndef ELS_RING_TRIGGER_H
#define ELS_RING_TRIGGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ELSI_TRIGGER_MAX_CONDS 8
#define ELSI_TRIGGER_PREFIX_MAX 255
#define ELSI_TRIGGER_DEFAULT_AFTER_MS 1000u
#define ELSI_TRIGGER_DEFAULT_COOLDOWN_MS 60000u
#define ELSI_TRIGGER_DEFAULT_MAX_DUMPS 10u
#define ELSI_TRIGGER_MAX_DUMPS 100000u
/* The text of a cause: "marker INCIDENT 42 at 1.532 s". */
#define ELSI_TRIGGER_CAUSE_MAX 320

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
 * otherwise (lib/deliver/dump.c, Note [Flight recorder]). */
int elsi_trigger_parse(const char *dump_on, const char *after,
                       const char *cooldown, const char *max_dumps,
                       struct elsi_trigger_config *out,
                       char *err, size_t err_len);
/* A duration: digits with an optional fraction and a unit ns, us, ms, s
 * or m (none: seconds, as the other options take them), into ns.  0 or
 * ELS_EINVAL (also above a day). */
int elsi_trigger_parse_duration(const char *text, uint64_t *ns);

struct elsi_trigger;

/* 0, or ELS_ENOMEM (the parser's buffers). */
int elsi_trigger_new(struct elsi_trigger **out, const struct elsi_trigger_config *cfg);
void elsi_trigger_free(struct elsi_trigger *t);

/* The stream's header chunk (hdrb ... datb); later units are read against
 * it.  Bytes are not kept. */
void elsi_trigger_header(struct elsi_trigger *t, const void *hdr, size_t len);
/* One unit (a block, or DATA_END), in up to two pieces (a unit that wraps
 * in the ring), seen at now_ms.  A unit that does not parse as whole
 * events is counted (bad_units) and skipped. */
void elsi_trigger_unit(struct elsi_trigger *t, const void *a, size_t alen,
                       const void *b, size_t blen, uint64_t now_ms);
/* The writer's count of lost units so far: a rise fires loss. */
void elsi_trigger_loss(struct elsi_trigger *t, uint64_t lost_units, uint64_t now_ms);

/* Is a dump due at now_ms (a condition fired after= ago)?  ending: the
 * stream is ending, so a pending dump is due at once.  *wake_ms (may be
 * NULL) gets when to ask again, 0 for never. */
bool elsi_trigger_due(const struct elsi_trigger *t, uint64_t now_ms, bool ending,
                      uint64_t *wake_ms);
/* The due dump was started (or failed): copy its cause, start the
 * cooldown, count it.  Returns the dump's number (1, 2, ...). */
unsigned elsi_trigger_take(struct elsi_trigger *t, char *cause, size_t len);
/* A dump the conditions did not ask for (a request, a signal) was
 * written: it counts against max-dumps= too. */
void elsi_trigger_other_dump(struct elsi_trigger *t);
/* The event time (ns) of the pending cause, for the in-band note. */
uint64_t elsi_trigger_cause_time(const struct elsi_trigger *t);

struct elsi_trigger_counts {
    uint64_t units, bad_units;      /* units read; units that did not parse */
    uint64_t fired;                 /* conditions met (cooldown or not) */
    uint64_t suppressed;            /* met in a cooldown or past max-dumps */
    unsigned dumps;                 /* dumps taken */
};
void elsi_trigger_counts(const struct elsi_trigger *t, struct elsi_trigger_counts *out);

#endif /* ELS_RING_TRIGGER_H */
