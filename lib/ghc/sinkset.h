/*
 * sinkset.h: the RTS adapter's set of writers.  One +RTS --eventlog-sink
 * flag (or $EVENTLOG_SINK, or els_ghc_configure()) may name several sinks
 * separated by '|'; sinkset.c splits and checks such a list, opens one
 * writer per spec and hands every unit to each.  Not its job: the RTS's
 * callbacks, the process-wide state and its locks (ghc.c).
 */
#ifndef ELS_GHC_SINKSET_H
#define ELS_GHC_SINKSET_H

#include <stdbool.h>
#include <stddef.h>

#include "eventlog-sink.h"
#include "eventlog-sink/ghc.h"

/* The writers of one list, in the list's order. */
struct elsi_ghc_sinks {
    unsigned n;                             /* 1..ELS_GHC_SINKS_MAX */
    struct els_writer *w[ELS_GHC_SINKS_MAX];
    bool recorder[ELS_GHC_SINKS_MAX];       /* a flight recorder (ring:) */
};

/* Check every spec of list (els_spec_check()) and the list's own syntax.
 * 0, or a negative code with one line in err naming the spec at fault
 * ("sink 2 of 2: spec \"...\": ..."; a single spec's errors are worded
 * as els_spec_check() words them). */
int elsi_ghc_specs_check(const char *list, char *err, size_t err_len);

/* Call fn(spec, ctx, err, err_len) for each spec of list, in order, until
 * one fails; a failure of a list's spec is put as "sink K of N: ...".  0,
 * or the code of the split or of fn. */
typedef int (*elsi_ghc_spec_fn)(const char *spec, void *ctx, char *err,
                                size_t err_len);
int elsi_ghc_specs_each(const char *list, elsi_ghc_spec_fn fn, void *ctx,
                        char *err, size_t err_len);

/* Open a writer for each spec of list.  0 and *out, or the first error
 * (every writer opened before it is closed again). */
int elsi_ghc_sinks_open(const char *list, struct elsi_ghc_sinks **out,
                        char *err, size_t err_len);

/* Close every writer (els_writer_close()) and free s.  NULL is a no-op. */
void elsi_ghc_sinks_close(struct elsi_ghc_sinks *s);

/* Hand one unit, the first len bytes of *buf, to every writer, with its
 * reason.  size > 0: *buf is a malloc'd buffer of size bytes that the last
 * writer may keep (els_writer_hand_over(), which may replace *buf);
 * size == 0: every writer copies.  Losses are each writer's, counted
 * there. */
void elsi_ghc_sinks_write(struct elsi_ghc_sinks *s, void **buf, size_t len,
                          size_t size, enum els_write_reason reason);

/* A join snapshot, to every writer (els_writer_write_snapshot()). */
void elsi_ghc_sinks_write_snapshot(struct elsi_ghc_sinks *s, const void *unit,
                                   size_t len);

/* els_writer_set_snapshot_source() on every writer. */
void elsi_ghc_sinks_set_snapshot_source(struct elsi_ghc_sinks *s,
                                        els_snapshot_request_fn request,
                                        void *ctx);

/* els_writer_flush() on every writer. */
void elsi_ghc_sinks_flush(struct elsi_ghc_sinks *s);

/* els_writer_dump() of the first flight recorder; ELS_EINVAL without
 * one. */
int elsi_ghc_sinks_dump(struct elsi_ghc_sinks *s, char *name, size_t name_len);

/* els_writer_stats_sized() of writer i; ELS_EINVAL past the last. */
int elsi_ghc_sinks_stats(struct elsi_ghc_sinks *s, unsigned i,
                         struct els_stats *out, size_t size);

#endif /* ELS_GHC_SINKSET_H */
