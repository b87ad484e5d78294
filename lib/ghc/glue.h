/*
 * glue.h: what the files of lib/ghc/ share that is not public: the check
 * of the RTS's buffer size against the sink's limits (ghc.c), which
 * runtime.c applies before changing that size at runtime, and the
 * request that runs the snapshot hooks (hooks.c), which ghc.c makes.
 * Not its job:
 * anything the application calls (<eventlog-sink/ghc.h>).
 */
#ifndef ELS_GHC_GLUE_H
#define ELS_GHC_GLUE_H

#include <stddef.h>

/* Would units of up to unit bytes contradict the buffer= or
 * consumer-memory= of spec (or of any spec of a list)?  0, or ELS_EINVAL
 * with one line in err (or the spec's own parse error).  See Note [Unit
 * size and the sink's limits] in ghc.c. */
int elsi_ghc_check_unit_size(const char *spec, size_t unit, char *err,
                             size_t err_len);

/* The same against the spec this process configured (0 when none). */
int elsi_ghc_check_buffer_size(size_t bytes, char *err, size_t err_len);

/* A snapshot that starts a stream was written (a stream's header, a
 * join snapshot): run the snapshot hooks soon, on their own thread.
 * Never waits for a hook; any thread, capabilities stopped or not.  See
 * Note [Snapshot hooks] in hooks.c. */
void elsi_ghc_hooks_kick(void);

#endif /* ELS_GHC_GLUE_H */
