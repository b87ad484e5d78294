/*
 * announce.h: a program's entry in the per-user discovery directory, so
 * that `eventlog-sink ps` (and pid:/name: arguments) find it without
 * being told its socket path.  See Note [Announce files] in
 * lib/discovery/discovery.c for the directory, the file format and the
 * safety rules, and Note [Writing the entry] in announce.c.
 *
 * The writer calls elsi_announce_add() when a writer is open and
 * elsi_announce_remove() when it closes; nothing here runs on the
 * program's posting path.  Failures never fail the writer: they are
 * logged once per call and the program runs unannounced.
 */
#ifndef ELS_ANNOUNCE_H
#define ELS_ANNOUNCE_H

#include "sinks/spec.h"

/* What a writer announces: where a consumer connects and the control
 * socket, each with the descriptor that proves the program holds it
 * (Note [Proof of life] in lib/discovery/discovery.c). */
struct elsi_announce_sink {
    /* Where a consumer connects, in spec form, paths absolute
     * ("unix:/path", as els_writer_endpoint() gives it). */
    const char *endpoint;
    /* The sink's listening socket at endpoint, or -1 (none: a sink that
     * dials, writes a file, or records). */
    int listen_fd;
    /* The control socket in spec form, or NULL: control off. */
    const char *control;
    /* control's own listening socket, or -1 when control is served on
     * endpoint's socket. */
    int control_fd;
};

/* Announce the writer key (the writer's address: only an identity) with
 * its parsed spec and what sink says: the process's file is rewritten to
 * list every announced writer.  Nothing happens when spec->announce is
 * false.  The descriptors are only looked at, during the call. */
void elsi_announce_add(const void *key, const struct elsi_spec *spec,
                       const struct elsi_announce_sink *sink);

/* Forget the writer key; the file is rewritten without it, or removed
 * when no writer is left.  A key never added (announce=0, a forked
 * child's inherited writer) is ignored. */
void elsi_announce_remove(const void *key);

#endif /* ELS_ANNOUNCE_H */
