/*
 * ccs.h: cost-centre definitions by id, and the rules that turn their
 * stream text into the names GHC's classic profile formats hold: one
 * table and one naming for everything that names a cost centre or a
 * heap band the way the RTS's files do (dump --hp/--prof, the timeline's
 * heap bands and profile).  Not its job: the samples themselves, which
 * each reader keeps in its own way.
 */
#ifndef ELS_MON_CCS_H
#define ELS_MON_CCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "eventlog-sink/parse.h"

/* Cost-centre definitions by id (HEAP_PROF_COST_CENTRE), shared by dump's
 * converters (profile_hp.c, profile_prof.c) and the timeline's aggregates.  A stream that starts at a snapshot re-posts them; a
 * second definition of an id replaces the first. */
struct profile_cc {
    bool defined;
    char *label, *module, *srcloc;   /* already made safe, never NULL once defined */
    size_t len[3];                   /* their lengths, in that order */
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

/* A -hc band's name as the RTS's .hp writes it (fprint_ccs()): "(N)"
 * with the stack number N, then the stack innermost first, CAFs as
 * Module.CAF, cut at PROFILE_BAND_CHARS characters ending "..."; the
 * empty stack is "MAIN".  Written to out (always NUL-terminated); the
 * length it would have. */
#define PROFILE_BAND_CHARS 25         /* the RTS's default -L */
#define PROFILE_BAND_MAX (PROFILE_BAND_CHARS + 16)
size_t profile_ccs_band(const struct profile_ccs *t, const struct els_ccs *s,
                        uint32_t number, char *out, size_t cap);

#endif /* ELS_MON_CCS_H */
