/*
 * announce.h: a program's entry in the per-user discovery directory, so
 * that `eventlog-sink ps` (and pid:/name: arguments) find it without
 * being told its socket path.  See Note [Announce files] in announce.c
 * for the directory, the file format and the safety rules.
 *
 * The writer calls elsi_announce_add() when a writer is open and
 * elsi_announce_remove() when it closes; nothing here runs on the
 * program's posting path.  Failures never fail the writer: they are
 * logged once per call and the program runs unannounced.
 */
#ifndef ELS_ANNOUNCE_H
#define ELS_ANNOUNCE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sinks/spec.h"

/* The first line of every announce file: format name and version. */
#define ELSI_ANNOUNCE_MAGIC "eventlog-sink-announce 1"
/* An entry's file name is PID followed by this suffix. */
#define ELSI_ANNOUNCE_SUFFIX ".announce"

/* The discovery directory's path into buf: $XDG_RUNTIME_DIR/eventlog-sink
 * when XDG_RUNTIME_DIR is an absolute path, else
 * ${TMPDIR:-/tmp}/eventlog-sink-UID.  0, or -ENAMETOOLONG. */
int elsi_announce_dir_path(char *buf, size_t len);

/* Open the discovery directory (creating it with mode 0700 when create
 * is set and it is missing), refusing a symbolic link, a directory of
 * another user and one with group or other permission bits.  The
 * directory descriptor (close-on-exec), or -errno with one line in err:
 * -ELOOP a symbolic link, -EPERM another owner, -EACCES a loose mode,
 * -ENOENT missing (create unset). */
int elsi_announce_dir_open(int create, char *err, size_t err_len);

/* Field 22 of /proc/PID/stat (start time in clock ticks after boot),
 * which tells a process from a later one given the same pid.  0, or
 * -ENOENT (no such process), -EPROTO (unreadable), -errno. */
int elsi_proc_start_time(pid_t pid, uint64_t *start);

/* Announce the writer key (the writer's address: only an identity) with
 * its parsed spec and its endpoint ("unix:/path", as
 * els_writer_endpoint() gives it): the process's file is rewritten to
 * list every announced writer.  Nothing happens when spec->announce is
 * false. */
void elsi_announce_add(const void *key, const struct elsi_spec *spec,
                       const char *endpoint);

/* Forget the writer key; the file is rewritten without it, or removed
 * when no writer is left.  A key never added (announce=0, a forked
 * child's inherited writer) is ignored. */
void elsi_announce_remove(const void *key);

#endif /* ELS_ANNOUNCE_H */
