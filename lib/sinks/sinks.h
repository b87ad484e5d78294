/*
 * sinks.h: the built-in sink tables.  Each lives in its own file and is
 * registered by registry.c through the same validation as a custom sink.
 */
#ifndef ELS_SINKS_H
#define ELS_SINKS_H

#include "eventlog-sink/sink.h"

/* How many schemes the registry holds: enough for the built-ins and any
 * realistic set of custom sinks; the registry never shrinks, so a fixed
 * array keeps lookups allocation-free.  A patched RTS's table must hold
 * as many (lib/ghc/ghc.c checks it against EVENTLOG_SINK_SCHEMES_MAX). */
#define ELSI_REGISTRY_MAX 64

extern const struct els_sink_ops elsi_sink_unix;          /* unix:PATH */
extern const struct els_sink_ops elsi_sink_unix_connect;  /* unix-connect:PATH */
extern const struct els_sink_ops elsi_sink_tcp;           /* tcp:[HOST:]PORT */
extern const struct els_sink_ops elsi_sink_tcp_connect;   /* tcp-connect:[HOST:]PORT */
extern const struct els_sink_ops elsi_sink_fifo;          /* fifo:PATH */
extern const struct els_sink_ops elsi_sink_file;          /* file:PATH */
extern const struct els_sink_ops elsi_sink_ring;          /* ring:PATH */

/* Check ops->struct_size against [min_size, ELS_SINK_OPS_MAX_SIZE] (the
 * registry passes ELS_SINK_OPS_MIN_SIZE; tests pass less to stand for a
 * library that has grown the table since the sink was built).  0: ops is
 * as big as this library's table and usable as is; 1: it is smaller, and
 * *out holds a copy completed with NULL members; or ELS_EINVAL (NULL) or
 * ELS_EVERSION with the reason in why. */
int elsi_sink_ops_import(const struct els_sink_ops *ops, size_t min_size,
                         struct els_sink_ops *out, char *why, size_t why_len);

/* Writes "scheme, scheme, ..." of every registered sink into buf, for
 * messages; like snprintf. */
int elsi_registry_names(char *buf, size_t len);

/* Call fn for every registered scheme now, and for every scheme registered
 * from now on (after its registration succeeded, without the registry's
 * lock held).  One watcher at a time; the GHC glue uses it to mirror the
 * schemes into a patched RTS's sink table. */
void elsi_registry_watch(void (*fn)(const char *scheme));

#endif /* ELS_SINKS_H */
