/*
 * control.h: the control channel's server side (docs/CONTROL.md).  The
 * writer thread owns the sessions (one per consumer that sends input) and
 * calls in here from its poll loop, through the ops table of
 * writer/writer_ops.h only; commands run on one process-wide
 * control thread, never on the writer thread, because an RTS call may stop
 * every capability while the writer must keep delivering.  The command
 * table holds the library's commands (registered by the GHC glue,
 * lib/ghc/commands.c) and the program's (els_control_register()).
 *
 * Not its job: the byte layout (codec.c), sending stream bytes
 * (writer/consumer.c).
 */
#ifndef ELS_CONTROL_H
#define ELS_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eventlog-sink/control.h"

struct elsi_control;

/* The library's own namespace for its text commands. */
#define ELSI_CTL_NAMESPACE "eventlog-sink"

/* Commands the library registers.  ctl gives the writer whose client
 * called (status, stats); NULL once that writer is gone. */
typedef int (*elsi_ctl_builtin_fn)(struct elsi_control *ctl, const char *args,
                                   char *out, size_t out_len);

enum elsi_ctl_flags {
    /* Answer "accepted" before running: the command ends the stream the
     * answer would travel in (stop, restart). */
    ELSI_CTL_ANSWER_FIRST = 1u
};

/* Register a library command: ns is ELSI_CTL_NAMESPACE (text name
 * required, id 0) or "eventlog-socket" (id required, name NULL: reachable
 * only through eventlog-socket messages).  help is one line for `help`.
 * 0, ELS_EEXIST or ELS_ENOMEM. */
int elsi_control_register_builtin(const char *ns, unsigned id,
                                  const char *name, const char *help,
                                  elsi_ctl_builtin_fn fn, unsigned flags);

/* Counters and endpoint of ctl's writer, for status and stats: 0 or
 * ELS_ESTOPPED when the writer is gone. */
struct els_stats;
int elsi_control_writer_stats(struct elsi_control *ctl, struct els_stats *st,
                              char *endpoint, size_t endpoint_len);

/* ring-dump: a dump of ctl's writer (els_writer_dump()), its file's name
 * in name.  ELS_EINVAL, with the reason in name, when that writer keeps
 * no recording; ELS_ESTOPPED when it is gone; otherwise the dump's
 * failure (ELS_ELIMIT past max-dumps=, ...) with the reason in name. */
int elsi_control_writer_dump(struct elsi_control *ctl, char *name,
                             size_t name_len);

// ---------------------------------------------------------------------------
// For the writer (lib/writer sees only this table: writer/writer_ops.h)
// ---------------------------------------------------------------------------

/* What the control channel does for a writer, as the writer's ops: at
 * open, when the spec says control=1, read the secret file (if any),
 * check the sink can carry control, log that control is enabled; for
 * every spec, read collector-secret= (if any) to check it as
 * control-secret= is checked, and say under policy=block which
 * connect-out collector is trusted (Note [Collector proof]).  Then the
 * sessions of the clients that send input, the challenge of a collector,
 * the answers of finished commands (tick), and control=unix:PATH's own
 * socket (listen_fd, accept).  lib/open.c hands it to elsi_writer_open(). */
struct elsi_writer_ops;
extern const struct elsi_writer_ops elsi_control_ops;

/* Note [Control-only hello deadline]: 2000 ms; tests may shorten it. */
extern unsigned elsi_ctl_hello_deadline_ms;

// ---------------------------------------------------------------------------
// control=unix:PATH's socket (listener.c)
// ---------------------------------------------------------------------------

/* Bind the control socket of spec sp (0, or an error with one line in
 * err; *listener NULL then), its listening descriptor (-1 without one),
 * accept a client (0, -EAGAIN, -errno), its name ("unix:PATH", like
 * snprintf), and close it, removing the socket file (idempotent: sets
 * *listener NULL). */
struct elsi_spec;
int elsi_control_endpoint_open(const struct elsi_spec *sp, void **listener,
                               char *err, size_t err_len);
int elsi_control_endpoint_fd(void *listener);
int elsi_control_endpoint_accept(void *listener, int *fd);
int elsi_control_endpoint_name(void *listener, char *buf, size_t len);
void elsi_control_endpoint_close(void **listener);

#endif /* ELS_CONTROL_H */
