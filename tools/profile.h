/*
 * profile.h: GHC's classic profile files (.hp, .prof) rebuilt from an
 * eventlog's profiling events, for `eventlog-sink dump --hp/--prof`.
 *
 * The converters see every event of a stream (live or finished, started
 * at a snapshot or at the program's start) and keep their file valid:
 * the .hp at every sample boundary, so a crash of the program, of the
 * stream or of this tool loses nothing already received (Note [Valid at
 * every sample] in profile_hp.c), the .prof at each rewrite, about a
 * second behind (Note [Live report cadence] in profile_prof.c).  Their
 * time is linear in the stream and their memory bounded (Note [Stack
 * numbers, bounded], Note [Linear in the stream]).  What they are not: a
 * reader of the stream
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
#include "monitor/ccs.h"

/* An open-addressing hash index from a 32-bit hash to entries a converter
 * keeps in its own array (by index), so that finding a stack or a call-tree
 * node costs a few probes whatever the number of entries; see Note
 * [Linear in the stream] in profile_prof.c.  The table holds at most
 * half its slots full. */
struct profile_table {
    struct profile_slot { uint32_t hash, idx1; } *slots;   /* idx1: index + 1; 0 empty */
    size_t cap, n;              /* cap: 0 or a power of two */
    uint64_t probes;            /* slots looked at, for the tests (profile_*_stats) */
};
/* The entry whose hash is h and for which same(ctx, index) holds, or -1. */
int64_t profile_table_find(struct profile_table *t, uint32_t h,
                           bool (*same)(const void *ctx, uint32_t idx), const void *ctx);
/* Add entry idx with hash h (not already there): 0 or -ENOMEM. */
int profile_table_add(struct profile_table *t, uint32_t h, uint32_t idx);
void profile_table_free(struct profile_table *t);
/* The hash of n 32-bit words. */
uint32_t profile_hash_words(const uint32_t *w, size_t n);

/* Figures for the tests and the bench: how much work the converters did
 * and what they refused (profile_hp_stats(), profile_prof_stats()). */
struct profile_stats {
    uint64_t probes;            /* hash slots looked at, every table */
    uint64_t entries;           /* .hp: distinct stacks; .prof: call-tree nodes */
    uint64_t other;             /* samples (.hp) or ticks (.prof) put in (other) */
    uint64_t rewrites;          /* .prof: reports written */
};

/* The .hp converter.  -hc bands: at most this many distinct cost-centre
 * stacks, holding at most this many ids in all, get bands of their own;
 * samples of later stacks go to the band "(other)" (Note [Stack numbers,
 * bounded] in profile_hp.c). */
#define PROFILE_HP_STACKS_MAX 65536u
/* The longest band name hp2ps reads; longer ones end in "...". */
#define PROFILE_HP_NAME_MAX 4999u
#define PROFILE_HP_STACK_IDS_MAX (1u << 22)
struct profile_hp;
int profile_hp_open(struct profile_hp **out, const char *path, FILE *msgs);
int profile_hp_event(struct profile_hp *h, const struct els_event *ev);
/* clean: the stream ended with DATA_END (the final empty sample, as the
 * RTS writes it at exit, is added).  Returns 0 or a negative errno. */
int profile_hp_finish(struct profile_hp *h, bool clean);
void profile_hp_stats(const struct profile_hp *h, struct profile_stats *st);
void profile_hp_free(struct profile_hp *h);

/* The .prof converter.  At most this many call-tree nodes; ticks of
 * stacks that would need more are counted in "(other)" (Note [Linear in
 * the stream] in profile_prof.c). */
#define PROFILE_PROF_NODES_MAX 131072u
/* The shortest time between two reports of a live stream, ns. */
#define PROFILE_PROF_REWRITE_NS 1000000000u
struct profile_prof;
int profile_prof_open(struct profile_prof **out, const char *path, FILE *msgs);
int profile_prof_event(struct profile_prof *pp, const struct els_event *ev);
/* Rewrite the report (to a temporary name, then rename) if samples
 * arrived since the last one and the cadence allows it at now_ns (any
 * monotonic clock in ns, the same at every call): Note [Live report
 * cadence] in profile_prof.c.  The first report is written at once. */
int profile_prof_flush(struct profile_prof *pp, uint64_t now_ns);
/* When profile_prof_flush() will next rewrite (on now_ns's clock), or
 * UINT64_MAX when nothing new waits to be reported. */
uint64_t profile_prof_due(const struct profile_prof *pp);
int profile_prof_finish(struct profile_prof *pp, bool clean);
void profile_prof_stats(const struct profile_prof *pp, struct profile_stats *st);
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
