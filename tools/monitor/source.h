/*
 * source.h: where the monitor's eventlog bytes come from: a UNIX or TCP
 * socket a sink serves, a FIFO, or a file that may still be growing.
 *
 * A source keeps itself connected: when the stream ends (the program
 * exited or restarted its eventlog) it reconnects, and when a followed
 * file is truncated or replaced (a stock `+RTS -l` program started again)
 * it reads the new file from its start; either way the model is reset
 * for the new run.  While a unix: socket, FIFO or file does not exist
 * yet, it watches the directory (inotify) and connects as soon as the
 * path appears, so a monitor started first sees a short program from its
 * first event; without inotify it polls every MON_POLL_MS.  Its state
 * (shown in the views) says what it waits for and why, and for a file
 * how much of it was read: a view of part of a large file must not pass
 * for the whole run's.  It is not
 * responsible for what the bytes mean (model.c) or for the event loop
 * (the commands own it: mon_source_fd() says what to poll,
 * mon_source_wait_ms() how long at most).
 */
#ifndef ELS_MON_SOURCE_H
#define ELS_MON_SOURCE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "model.h"

enum mon_source_kind { MON_SRC_FILE, MON_SRC_UNIX, MON_SRC_TCP, MON_SRC_FIFO };

/* A tap on a stream (serve's timeline, tools/serve/timeline.c): fn is
 * called with each run's bytes as they are read, and with buf NULL, len
 * 0 when a new run's first bytes come. */
struct mon_tap {
    void (*fn)(void *ctx, const void *buf, size_t len);
    void *ctx;
};

struct mon_source {
    enum mon_source_kind kind;
    char spec[512];
    const char *path;               /* FILE, FIFO: into spec */
    struct addrinfo *ai;            /* UNIX, TCP */
    int fd;
    bool eof;                       /* FILE: read up to the current end */
    bool fresh;                     /* opened, no byte read yet */
    dev_t dev;
    ino_t ino;
    uint64_t offset;                /* FILE: bytes read */
    uint64_t retry_at_ms;
    /* waiting for a path to appear: an inotify descriptor watching its
     * directory (-1: none), the name to look for, and until when a
     * refused connection is retried quickly (bound, not yet listening) */
    int watch_fd;
    char watch_dir[512], watch_name[256];
    uint64_t burst_until_ms;
    bool woken;                     /* this attempt follows a watch event */
    int save_fd;                    /* copy of the current run, or -1 */
    uint64_t save_errors;
    /* mon_source_save_runs(): each run to a new file, dir/stem.N.eventlog,
     * the next N to try (0: --save's one file, replaced at each run). */
    char save_dir[4096], save_stem[256];
    unsigned save_next;
    uint64_t opens;                 /* streams opened so far (see fd) */
    int open_err;                   /* the last failed attempt's -errno */
    bool no_writer;                 /* FIFO: opened, no writer had it open */
    bool once;                      /* FILE: read once, not followed */
    char state[768];
    struct mon_tap tap;             /* serve's timeline; fn NULL: none */
};

/* arg: unix:PATH, tcp:[HOST:]PORT, fifo:PATH, file:PATH or a file path.
 * 0, or a negative code with one line in err (a malformed spec). */
int mon_source_init(struct mon_source *s, const char *arg, char *err,
                    size_t err_len);
void mon_source_close(struct mon_source *s);
/* Also copy the current run's bytes, as received, to path (replaced at
 * each new run): the stream the views show, for other readers.  0 or
 * -errno. */
int mon_source_save(struct mon_source *s, const char *path);
/* Copy each run, as received, to a file of its own, DIR/STEM.N.eventlog
 * with N = 1, 2, ... (serve --all's --save-dir): opened when the run's
 * first bytes come, created 0600 and never replacing a file or following
 * a symlink (a taken name, whoever took it, moves on to the next N), and
 * closed when the run ends; an earlier run is never truncated.  A file
 * that cannot be created is said on stderr, and that run is not
 * copied. */
void mon_source_save_runs(struct mon_source *s, const char *dir,
                          const char *stem);
/* The descriptor to poll for input: the stream, or while waiting the
 * directory watch; -1 for none (a file that is open, or no watch: call
 * mon_source_pump() within mon_source_wait_ms()). */
int mon_source_fd(const struct mon_source *s);
/* How long the caller may wait (in poll) before the next
 * mon_source_pump(): the next retry while not connected, else
 * UINT64_MAX. */
uint64_t mon_source_wait_ms(const struct mon_source *s, uint64_t now_ms);
bool mon_source_is_file(const struct mon_source *s);
/* Is a stream open now (a socket connected, a FIFO with its writer, a
 * file)?  s->opens counts the streams opened, so a caller sees a new one
 * (the program's next run) even between two looks. */
bool mon_source_up(const struct mon_source *s);
/* Why the last attempt to open the source failed, in words ("no such
 * socket", "connection refused: nothing listens on it", "no such file",
 * "no writer has the FIFO open", ...), into buf. */
void mon_source_why(const struct mon_source *s, char *buf, size_t len);
/* How the source waits for its path: "watching DIR for it", "checking
 * every 25 ms", "retrying every 0.5 s", into buf. */
void mon_source_how(const struct mon_source *s, char *buf, size_t len);
/* Read what is available (at most max_bytes; 0: no limit) into m,
 * connecting or reopening as needed.  Never blocks.  Returns the bytes
 * read. */
/* What the commands read per turn of their loop: enough to keep up
 * (the model digests over 100 MB/s), little enough that a flood never
 * holds up redrawing or answering browsers. */
#define MON_PUMP_MAX (4u << 20)
uint64_t mon_source_pump(struct mon_source *s, struct mon_model *m,
                         uint64_t now_ms, uint64_t max_bytes);

uint64_t mon_now_ms(void);

#endif /* ELS_MON_SOURCE_H */
