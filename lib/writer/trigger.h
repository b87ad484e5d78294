/*
 * trigger.h: the conditions that make a flight recorder (ring:) save
 * itself (Note [Triggered dumps] in trigger.c): an evaluator the writer
 * thread feeds with the header and each unit and asks when a dump is due.
 * The options' syntax (dump-on=, after=, cooldown=, max-dumps=) is
 * lib/sinks/ring_options.h, which the ring sink checks at open.
 * The evaluator reads units with the public parser (eventlog-sink/parse.h)
 * and keeps no pointer into them; it never touches the writer, its lock or
 * its queue, and takes the time as an argument, so a test drives it with a
 * clock of its own.  Not its job: reading the queue, opening or writing a
 * dump (recorder.c, lib/sinks/ring.c).
 */
#ifndef ELS_TRIGGER_H
#define ELS_TRIGGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sinks/ring_options.h"

/* The text of a cause: "marker INCIDENT 42 at 1.532 s". */
#define ELSI_TRIGGER_CAUSE_MAX 320

struct elsi_trigger;

/* 0, or ELS_ENOMEM (the parser's buffers). */
int elsi_trigger_new(struct elsi_trigger **out, const struct elsi_trigger_config *cfg);
void elsi_trigger_free(struct elsi_trigger *t);

/* The stream's header chunk (hdrb ... datb); later units are read against
 * it.  Bytes are not kept. */
void elsi_trigger_header(struct elsi_trigger *t, const void *hdr, size_t len);
/* One unit (a block, or DATA_END), in up to two pieces (a unit that wraps
 * in the queue), seen at now_ms.  A unit that does not parse as whole
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

#endif /* ELS_TRIGGER_H */
