/*
 * discover.h: the reader of the per-user discovery directory, where every
 * program streaming its eventlog announces itself (the library's
 * lib/deliver/announce.c, Note [Announce files], writes it), and the
 * resolver of pid:PID and name:NAME arguments that `top`, `serve`, `ctl`
 * and `recv` accept in place of a spec.  The rules it applies are the
 * library's own (include/eventlog-sink/discovery.h, Note [Announce files] and
 * Note [Proof of life]).  Entries of dead processes (pid gone, or reused:
 * the start time differs) and of processes that no longer hold their
 * sockets (they exec'd) are skipped and removed; entries that are not
 * trusted (another owner, writable by others, a relative path, no
 * proof) are skipped and left, each with a note saying why.  Texts come
 * back as the files hold them: print them through safetext (the notes
 * are safe already).
 */
#ifndef ELS_TOOL_DISCOVER_H
#define ELS_TOOL_DISCOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DISC_SINKS_MAX 8

struct disc_sink {
    char *spec;                 /* as the program gave it */
    char *endpoint;             /* where a consumer connects: unix:/path... */
    uint64_t socket_id;         /* its listening socket, or 0: none named */
    char *control;              /* control socket as a spec, or NULL: off */
    uint64_t control_id;        /* control's own socket, or 0 */
};

struct disc_entry {
    long pid;
    uint64_t start;             /* field 22 of /proc/PID/stat */
    char *name;                 /* base name of argv[0] */
    size_t argc;
    char **argv;
    size_t n_sinks;
    struct disc_sink sinks[DISC_SINKS_MAX];
};

/* An entry left out of the list, and why. */
struct disc_note {
    long pid;                   /* from the file's name; 0 when none */
    char *text;                 /* "PATH: why", in its safe form */
};

struct disc_list {
    struct disc_entry *v;       /* by pid */
    size_t n;
    struct disc_note *notes;    /* entries not trusted, in directory order */
    size_t n_notes;
};

/* The directory's path, as the library computes it. 0 or -ENAMETOOLONG. */
int disc_dir_path(char *buf, size_t len);

/* The live, trusted entries, by pid; stale ones are removed, untrusted
 * ones noted in out->notes.  A missing directory is an empty list.  0,
 * or -errno with one line in err (the directory is a symbolic link,
 * another user's, or open to others: refused). */
int disc_scan(struct disc_list *out, char *err, size_t err_len);

void disc_list_free(struct disc_list *l);

/* Is arg a pid:PID or name:NAME reference? */
bool disc_is_ref(const char *arg);

/* Resolve arg: a pid:PID or name:NAME becomes its program's endpoint
 * (control set: its control socket) in *spec (malloc'd); anything else
 * is copied unchanged.  0, or a negative code with one line in err: no
 * such program (or its entry is not trusted: why), two or more programs
 * of that name (each listed), or a program without control when control
 * is wanted. */
int disc_resolve(const char *arg, bool control, char **spec, char *err,
                 size_t err_len);

/* For a command's argument handling: when *arg is a pid:/name:
 * reference, point it at the resolved spec (kept for the life of the
 * process) and return 0; leave anything else alone.  On failure print
 * "eventlog-sink CMD: <why>" and return the exit status (2 for a
 * malformed reference, else 1). */
int disc_resolve_arg(const char *cmd, char **arg, bool control);

#endif /* ELS_TOOL_DISCOVER_H */
