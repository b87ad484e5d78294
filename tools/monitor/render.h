/*
 * render.h: between the monitor model's renderers (render_json.c,
 * render_text.c, render_prom.c, series.c) and what they share
 * (render.c).  Nothing outside tools/monitor/ includes it.
 */
#ifndef ELS_MON_RENDER_H
#define ELS_MON_RENDER_H

#include <stddef.h>
#include <stdint.h>

#include "model_impl.h"

/* The recent collections' median and longest pause. */
void mon_pause_pcts(const struct mon_model *m, uint64_t *p50, uint64_t *recent_max);

/* The census's bands, largest first, ties in the census's order. */
void mon_band_order(const struct mon_census *c, unsigned *order);
/* A band's name as the stream's bytes into out (cleared first): a
 * string band's text, or a cost-centre stack as the RTS's .hp file
 * names it. */
void mon_band_name(const struct mon_model *m, const struct mon_band *b,
                   struct strbuf *out);
/* A cost centre's label, "?" if unknown. */
const char *mon_cc_name(const struct mon_model *m, uint32_t id);
/* GHC's HEAP_PROF_BREAKDOWN_* in words. */
const char *mon_breakdown_name(uint32_t b);
/* STOP_THREAD's status in words (buf: room for one made up). */
const char *mon_stop_name(unsigned status, char *buf, size_t cap);
/* An event type's name: the stream's own description of tag k. */
const char *mon_type_name(const struct mon_model *m, unsigned k, char *buf,
                          size_t cap);
/* The bytes of tag k's events in the stream; every tag's, into out. */
uint64_t mon_type_bytes(const struct mon_model *m, unsigned k);
void mon_types_bytes(const struct mon_model *m, uint64_t *out);
/* Indexes of the non-zero entries of v[0..n), largest first (ties:
 * lower index first); returns how many. */
unsigned mon_rank(const uint64_t *v, unsigned n, unsigned *order);
const char *mon_state_name(enum mon_cap_state s);
/* Spark counters' totals as of the last tick (the change within a
 * mid-run stream); allocation less what came before a mid-run
 * stream's start. */
void mon_spark_totals(const struct mon_model *m, uint64_t sp[7]);
uint64_t mon_allocated(const struct mon_model *m);

#endif /* ELS_MON_RENDER_H */
