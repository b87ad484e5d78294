/*
 * profile.h: GHC's classic profile files (.hp, .prof) rebuilt from an
 * eventlog's profiling events, for `eventlog-sink dump --hp/--prof`.
 *
 * The converters see every event of a stream (live or finished, started
 * at a snapshot or at the program's start) and keep their file valid at
 * every sample boundary, so a crash of the program, of the stream or of
 * this tool loses nothing already received; see Note [Valid at every
 * sample] in profile_hp.c.  What they are not: a reader of the stream
 * (dump.c parses), nor a judge of profiles (they trust the RTS's
 * numbers).  Text the stream chose reaches the files only through
 * profile_word()/profile_quoted(): the formats have no escapes.
 */
#ifndef ELS_TOOL_PROFILE_H
#define ELS_TOOL_PROFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "eventlog-sink/parse.h"

/* Cost-centre definitions by id (HEAP_PROF_COST_CENTRE), shared by both
 * converters.  A stream that starts at a snapshot re-posts them; a
 * second definition of an id replaces the first. */
struct profile_cc {
    bool defined;
    char *label, *module, *srcloc;   /* already made safe, never NULL once defined */
};

struct profile_ccs {
    struct profile_cc *v;
    uint32_t n;
};

/* ids above this are refused (GHC numbers its cost centres from 0 up,
 * a few thousand in a large program). */
#define PROFILE_CC_MAX (1u << 22)

int profile_ccs_define(struct profile_ccs *t, const struct els_event_data *e);
const struct profile_cc *profile_ccs_get(const struct profile_ccs *t, uint32_t id);
void profile_ccs_free(struct profile_ccs *t);

/* s as one whitespace-free token of printable ASCII: every other byte,
 * space, '"' and '\\' become '_'; empty becomes "_".  Malloc'd (NULL on
 * ENOMEM). */
char *profile_word(struct els_str s);
/* s for a "..." field: printable ASCII, '"' written as '\''. */
void profile_quoted(FILE *f, struct els_str s);

/* The .hp converter. */
struct profile_hp;
int profile_hp_open(struct profile_hp **out, const char *path, FILE *msgs);
int profile_hp_event(struct profile_hp *h, const struct els_event *ev);
/* clean: the stream ended with DATA_END (the final empty sample, as the
 * RTS writes it at exit, is added).  Returns 0 or a negative errno. */
int profile_hp_finish(struct profile_hp *h, bool clean);
void profile_hp_free(struct profile_hp *h);

/* The .prof converter: profile_prof_flush() rewrites the report (to a
 * temporary name, then rename) if samples arrived since the last one. */
struct profile_prof;
int profile_prof_open(struct profile_prof **out, const char *path, FILE *msgs);
int profile_prof_event(struct profile_prof *pp, const struct els_event *ev);
int profile_prof_flush(struct profile_prof *pp);
int profile_prof_finish(struct profile_prof *pp, bool clean);
void profile_prof_free(struct profile_prof *pp);

/* Shared header data: the program's arguments and the wall clock at its
 * start, from PROGRAM_ARGS and WALL_CLOCK_TIME. */
struct profile_run {
    char job[1024];           /* safe text */
    bool have_clock;
    int64_t start_sec;        /* wall clock at time 0 */
};
void profile_run_event(struct profile_run *r, const struct els_event *ev);
/* "Thu Nov 26 10:22 2026", the RTS's time_str() form. */
void profile_run_date(const struct profile_run *r, char *buf, size_t cap);

#endif /* ELS_TOOL_PROFILE_H */
