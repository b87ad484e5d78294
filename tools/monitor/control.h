/*
 * control.h: the monitor's control buttons and keys (`top --control`,
 * `serve --control`): a control-only session with the program whose
 * stream the monitor shows, over ctlclient.c.
 *
 * The monitor offers a fixed set of actions (the allowlist below), each
 * one or two commands of docs/CONTROL.md; nothing else can be sent
 * through it, whatever a key or an HTTP request asks.  An action blocks
 * its caller until the program answers or MON_CTL_TIMEOUT_MS passes
 * (commands are answered in milliseconds; the bound is for a program
 * that does not answer).  The session is opened at start, and kept up
 * without a key or a button: mon_control_poll() opens it again when the
 * program's stream connects (a monitor started before its program, the
 * program's next run, a restart), see Note [Following the stream], and
 * an action opens it if there is none.  Not its job: drawing the answers
 * (top.c, serve_routes.c and the page), deciding who may press a button
 * (serve_routes.c).
 */
#ifndef ELS_MON_CONTROL_H
#define ELS_MON_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctlclient.h"
#include "strbuf.h"

#define MON_CTL_TIMEOUT_MS 5000
/* Retries while the stream is up but the session cannot connect: from
 * MON_CTL_RETRY_MIN_MS, doubling up to MON_CTL_RETRY_MAX_MS. */
#define MON_CTL_RETRY_MIN_MS 250
#define MON_CTL_RETRY_MAX_MS 8000

/* The class letters of toggle-class, as +RTS -l and set-classes take
 * them (GHC 9.0.2: scheduler, GC, nonmoving GC, sparks sampled, sparks
 * full, user events). */
#define MON_CTL_CLASSES "sgnpfu"

struct mon_ctl_result {
    char action[32];            /* "flush", "toggle-class g" */
    char command[48];           /* the command last sent: "set-classes +g" */
    int status;                 /* 0 or an ELS_E* / -errno code */
    char text[CTLC_TEXT_MAX + 1];   /* the result, or the reason */
};

struct mon_control {
    bool enabled;               /* --control given */
    char spec[512];
    uint8_t secret[CTLC_SECRET_MAX];
    size_t secret_len;
    struct ctlc conn;
    char state[800];            /* the session, in words */
    bool have_last;
    struct mon_ctl_result last;
    /* mon_control_poll()'s: the stream's opens last seen, the next
     * attempt (0: none due) and the current backoff. */
    uint64_t stream_opens;
    uint64_t retry_at_ms, backoff_ms;
};

/* Is action (with arg, "" if none) on the allowlist?  The actions:
 * status, stats, flush, snapshot, heap-census, classes (get-classes),
 * toggle-class X (X one of MON_CTL_CLASSES: get-classes, then
 * set-classes +X or -X), restart, stop. */
bool mon_control_allowed(const char *action, const char *arg);

/* spec NULL: control off (every action answers so).  Otherwise spec must
 * be unix:... or tcp:...; secret_file may be NULL.  0, or the exit status
 * of a usage error after one line on stderr.  Tries to open the session
 * (its outcome goes to the state). */
int mon_control_init(struct mon_control *mc, const char *cmd,
                     const char *spec, const char *secret_file);
void mon_control_close(struct mon_control *mc);

/* Run an allowed action (the caller checked mon_control_allowed()) and
 * put the outcome into *r and mc->last.  Returns r->status. */
int mon_control_run(struct mon_control *mc, const char *action,
                    const char *arg, struct mon_ctl_result *r);

/* "flush: ok" / "flush: ELS_EINVAL: unknown command ..." (one line, for
 * a terminal: the program's text in its safe form, safetext.h). */
void mon_control_result_text(const struct mon_ctl_result *r, struct strbuf *sb);
/* The session's state in words, as mon_control_result_text() shows
 * text (it may quote what the program sent). */
void mon_control_state_text(const struct mon_control *mc, struct strbuf *sb);
/* {"action":..,"command":..,"ok":..,"status":N,"error":NAME|null,"result":..} */
void mon_control_result_json(const struct mon_ctl_result *r, struct strbuf *sb);
/* {"enabled":..,"ready":..,"state":..,"actions":[..],"classes":"sgnpfu",
 *  "last":RESULT|null} */
void mon_control_json(struct mon_control *mc, struct strbuf *sb);
/* Is a session open (as far as we know without asking)? */
bool mon_control_ready(struct mon_control *mc);

/* Once per turn of the command's loop: open the session when there is
 * none and the program's stream is up (stream_up) and new (stream_opens,
 * the source's count, changed) or the session just closed, and retry
 * with backoff while the program is not there yet (no such socket, a
 * connection refused).  Blocks as an action does (up to
 * MON_CTL_TIMEOUT_MS for a program that does not answer the hello).
 * Does nothing without --control. */
void mon_control_poll(struct mon_control *mc, uint64_t now_ms,
                      uint64_t stream_opens, bool stream_up);
/* How long the loop may wait before the next mon_control_poll() is due:
 * UINT64_MAX when none is. */
uint64_t mon_control_wait_ms(const struct mon_control *mc, uint64_t now_ms);

#endif /* ELS_MON_CONTROL_H */
