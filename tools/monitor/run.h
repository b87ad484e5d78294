/*
 * run.h: how `top` and `serve` start and stop: the source, the optional
 * copy of the stream and the model, opened from the command line, and
 * the stop signals.  The commands' own loops are theirs.
 */
#ifndef ELS_MON_RUN_H
#define ELS_MON_RUN_H

#include <signal.h>
#include <stdbool.h>

#include "model.h"
#include "source.h"

/* Set by SIGINT and SIGTERM once mon_catch_stop_signals() ran. */
extern volatile sig_atomic_t mon_stop;
void mon_catch_stop_signals(void);

/* Open SPEC|FILE arg (and save, if not NULL) into *src and a new model
 * in *m, and make the first attempt to reach it.  With once (top --once)
 * a target that cannot be reached now (no such socket or file, a
 * connection refused) is an error; otherwise a monitor waits for it, and
 * says so once on stderr ("waiting for unix:/tmp/app.sock to appear (no
 * such socket yet; watching /tmp for it)").  0, or the exit status after
 * one line on stderr (a usage error for a bad spec).  taps, if not
 * NULL, are set before that first read, so they see every byte and
 * every event. */
struct mon_taps {
    struct mon_tap bytes;           /* on the source (source.h) */
    mon_event_tap events;           /* on the model (model.h); NULL: none */
    void *events_ctx;
};
int mon_open(const char *cmd, const char *arg, const char *save, bool once,
             const struct mon_taps *taps, struct mon_source *src,
             struct mon_model **m);
/* With once, when the view is due: 0 if a stream was opened, else
 * (a FIFO no writer opened in time) exit status 1 after one line. */
int mon_once_reached(const char *cmd, const struct mon_source *src);
void mon_close(struct mon_source *src, struct mon_model *m);

/* --interval's argument into *ms; 0 or the usage error's exit status. */
int mon_parse_interval(const char *cmd, const char *text, uint64_t *ms);

#endif /* ELS_MON_RUN_H */
