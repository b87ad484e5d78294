/*
 * control.h: the control channel's server side (docs/CONTROL.md).  The
 * writer thread owns the sessions (one per consumer that sends input) and
 * calls in here from its poll loop; commands run on one process-wide
 * control thread, never on the writer thread, because an RTS call may stop
 * every capability while the writer must keep delivering.  The command
 * table holds the library's commands (registered by the GHC glue,
 * lib/ghc/commands.c) and the program's (els_control_register()).
 *
 * Not its job: the byte layout (codec.c), sending stream bytes
 * (deliver/consumer.c).
 */
#ifndef ELS_CONTROL_H
#define ELS_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eventlog-sink/control.h"

struct els_writer;
struct consumer;
struct elsi_control;
struct elsi_ctl_session;

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
 * no recording; ELS_ESTOPPED when it is gone. */
int elsi_control_writer_dump(struct elsi_control *ctl, char *name,
                             size_t name_len);

// ---------------------------------------------------------------------------
// For the writer (lib/deliver)
// ---------------------------------------------------------------------------

/* At open, when the spec says control=1: read the secret file (if any),
 * check the sink can carry control, log that control is enabled.  Also,
 * for every spec: read collector-secret= (if any) to check it as
 * control-secret= is checked, and say under policy=block which
 * connect-out collector is trusted (Note [Collector proof]).  0 or
 * ELS_EINVAL / ELS_ENOMEM with one line in err. */
int elsi_control_open(struct els_writer *w, char *err, size_t err_len);
/* control=unix:PATH (listener.c): bind the writer's control socket (at
 * open; 0 or an error with one line in err), its listening descriptor (-1
 * without one), accept a client (0, -EAGAIN, -errno), its name ("unix:
 * PATH", like snprintf), and close it, removing the socket file
 * (idempotent). */
int elsi_control_endpoint_open(struct els_writer *w, char *err, size_t err_len);
int elsi_control_endpoint_fd(struct els_writer *w);
int elsi_control_endpoint_accept(struct els_writer *w, int *fd);
int elsi_control_endpoint_name(struct els_writer *w, char *buf, size_t len);
void elsi_control_endpoint_close(struct els_writer *w);
/* A client accepted on that socket: its session, which answers it only
 * in frames and refuses it unless its first message is a control-only
 * hello, sent within elsi_ctl_hello_deadline_ms.  0, ELS_ENOMEM, or
 * -ENOBUFS over consumer-memory= (Note [Control memory]). */
int elsi_control_endpoint_session(struct els_writer *w, struct consumer *c);
/* Note [Control-only hello deadline]: 2000 ms; tests may shorten it. */
extern unsigned elsi_ctl_hello_deadline_ms;
/* The writer is going away (writer thread, at its end, no lock held):
 * results of commands still running are dropped from now on. */
void elsi_control_detach(struct els_writer *w);
/* Drop the writer's reference (writer_free). */
void elsi_control_release(struct elsi_control *ctl);

/* Writer thread, no lock held: */
/* Route the answers of finished commands to their sessions. */
void elsi_control_tick(struct els_writer *w);
/* c has input (POLLIN): read once, decode, answer or queue commands. */
void elsi_control_input(struct els_writer *w, struct consumer *c);
/* Control-only session: send its answers instead of stream bytes. */
bool elsi_control_only(const struct consumer *c);
void elsi_control_pump_only(struct els_writer *w, struct consumer *c,
                            size_t header_len, uint64_t visible);
/* Before unit c->seq (below visible, or c caught up): queue c's in-band
 * answers that are due there. */
void elsi_control_notes_due(struct els_writer *w, struct consumer *c,
                            uint64_t visible);
void elsi_control_session_free(struct els_writer *w, struct elsi_ctl_session *s);

// ---------------------------------------------------------------------------
// Connect-out trust (Note [Collector proof], control.c)
// ---------------------------------------------------------------------------

/* A dialled socket consumer that is not trusted yet and whose spec has
 * collector-secret=: queue its challenge (the first note after the
 * header) and await the proof.  Writer thread. */
void elsi_collector_challenge(struct els_writer *w, struct consumer *c);
/* Input from such a consumer: the proof, once; c->trusted when right. */
void elsi_collector_input(struct els_writer *w, struct consumer *c);

// ---------------------------------------------------------------------------
// consumer.c's side of Note [Control memory] (writer thread)
// ---------------------------------------------------------------------------

/* Count n more bytes against consumer-memory=: true, or false (nothing
 * counted) when they would pass it. */
bool elsi_consumer_memory_take(struct els_writer *w, size_t n);
void elsi_consumer_memory_give(struct els_writer *w, size_t n);
/* c asked for more than consumer-memory= has room for (what: for what):
 * closed, counted in consumers_dropped_memory, logged. */
void elsi_consumer_over_memory(struct els_writer *w, struct consumer *c,
                               const char *what);

#endif /* ELS_CONTROL_H */
