/*
 * sinks.h: the built-in sink tables.  Each lives in its own file and is
 * registered by registry.c through the same validation as a custom sink.
 */
#ifndef ELS_SINKS_H
#define ELS_SINKS_H

#include "eventlog-sink/sink.h"

extern const struct els_sink_ops elsi_sink_unix;          /* unix:PATH */
extern const struct els_sink_ops elsi_sink_unix_connect;  /* unix-connect:PATH */
extern const struct els_sink_ops elsi_sink_tcp;           /* tcp:[HOST:]PORT */
extern const struct els_sink_ops elsi_sink_tcp_connect;   /* tcp-connect:[HOST:]PORT */
extern const struct els_sink_ops elsi_sink_fifo;          /* fifo:PATH */
extern const struct els_sink_ops elsi_sink_file;          /* file:PATH */

/* Writes "scheme, scheme, ..." of every registered sink into buf, for
 * messages; like snprintf. */
int elsi_registry_names(char *buf, size_t len);

/* Call fn for every registered scheme now, and for every scheme registered
 * from now on (after its registration succeeded, without the registry's
 * lock held).  One watcher at a time; the GHC glue uses it to mirror the
 * schemes into a patched RTS's sink table. */
void elsi_registry_watch(void (*fn)(const char *scheme));

#endif /* ELS_SINKS_H */
