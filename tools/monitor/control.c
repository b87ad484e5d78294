/*
 * control.c: the monitor's control actions (see control.h).
 */

/* Note [Following the stream]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A monitor is often started before its program (the README's order, a
 * sink with wait=), so the session's attempt at start finds no socket.
 * Waiting for a key to try again showed "not connected" for the whole
 * run, so the commands' loops call mon_control_poll(), which tries when
 * the stream (the same SPEC) connects: the program is there then.  It
 * tries too when the program closed the session while its stream is up
 * (a restart).  A connection that fails while the stream is up (no such
 * socket, refused: the program is between two runs) is retried from
 * MON_CTL_RETRY_MIN_MS, doubling up to MON_CTL_RETRY_MAX_MS.  A hello
 * that gets no answer or is refused is not retried on a timer: a program
 * without control=1 ignores it (for MON_CTL_TIMEOUT_MS, holding up the
 * loop) and takes a join snapshot for the connection, so that waits for
 * the stream's next run or an action.  Nothing is tried while the
 * stream is down: there is no program to ask.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "eventlog-sink.h"
#include "safetext.h"
#include "usage.h"
#include "control.h"

struct mon_action {
    const char *name;
    const char *command;        /* NULL: toggle-class, two commands */
};

/* The allowlist: what a key or a button may send. */
static const struct mon_action mon_actions[] = {
    { "status", "status" },
    { "stats", "stats" },
    { "flush", "flush" },
    { "snapshot", "snapshot" },
    { "heap-census", "heap-census" },
    { "classes", "get-classes" },
    { "toggle-class", NULL },
    { "restart", "restart" },
    { "stop", "stop" },
};
#define MON_N_ACTIONS (sizeof mon_actions / sizeof mon_actions[0])

static const struct mon_action *mon_action_find(const char *name)
{
    for (size_t i = 0; i < MON_N_ACTIONS; i++)
        if (strcmp(name, mon_actions[i].name) == 0)
            return &mon_actions[i];
    return NULL;
}

bool mon_control_allowed(const char *action, const char *arg)
{
    const struct mon_action *a = mon_action_find(action);
    if (a == NULL)
        return false;
    if (a->command != NULL)
        return arg[0] == '\0';
    return arg[0] != '\0' && arg[1] == '\0' && strchr(MON_CTL_CLASSES, arg[0]);
}

/* Open a session: 0, or the failure with one line in err. */
static int mon_control_open(struct mon_control *mc, char *err, size_t err_len)
{
    ctlc_close(&mc->conn);
    struct ctlc_answer hello;
    int rc = ctlc_open(&mc->conn, mc->spec, mc->secret, mc->secret_len,
                       MON_CTL_TIMEOUT_MS, &hello, err, err_len);
    if (rc == 0 && hello.status != 0) {
        rc = hello.status;
        snprintf(err, err_len, "the program refused the session: %s",
                 ctlc_detail(&hello));
        ctlc_close(&mc->conn);
    }
    if (rc == 0)
        snprintf(mc->state, sizeof mc->state, "connected to %s", mc->spec);
    return rc;
}

/* Open the session if there is none (or the program closed it): 0, or
 * the failure in r. */
static int mon_control_session(struct mon_control *mc, struct mon_ctl_result *r)
{
    if (mc->conn.fd >= 0 && !ctlc_closed(&mc->conn))
        return 0;
    char err[700];
    int rc = mon_control_open(mc, err, sizeof err);
    if (rc != 0) {
        snprintf(mc->state, sizeof mc->state, "not connected (tries again "
                 "when the program's stream connects, and at the next "
                 "command): %s", err);
        if (r != NULL) {
            r->status = rc;
            snprintf(r->text, sizeof r->text, "%s", err);
        }
    }
    return rc;
}

/* One command; 0 with the answer in r, or the failure in r. */
static int mon_control_call(struct mon_control *mc, const char *command,
                            struct mon_ctl_result *r)
{
    snprintf(r->command, sizeof r->command, "%s", command);
    struct ctlc_answer a;
    int rc = ctlc_call(&mc->conn, command, MON_CTL_TIMEOUT_MS, &a);
    if (rc != 0) {
        ctlc_close(&mc->conn);
        snprintf(mc->state, sizeof mc->state, "not connected: no answer to "
                 "%s: %s", command, ctlc_strerror(rc));
        r->status = rc;
        snprintf(r->text, sizeof r->text, "no answer: %s", ctlc_strerror(rc));
        return rc;
    }
    r->status = a.status;
    snprintf(r->text, sizeof r->text, "%s", ctlc_detail(&a));
    return a.status;
}

int mon_control_run(struct mon_control *mc, const char *action,
                    const char *arg, struct mon_ctl_result *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->action, sizeof r->action, "%s%s%s", action, arg[0] ? " " : "",
             arg);
    const struct mon_action *a = mon_action_find(action);
    if (!mc->enabled) {
        r->status = ELS_ENOTSUP;
        snprintf(r->text, sizeof r->text, "control is not enabled (start with "
                 "--control; the program's sink needs control=1)");
    } else if (a == NULL || !mon_control_allowed(action, arg)) {
        r->status = ELS_EINVAL;
        snprintf(r->text, sizeof r->text, "not an action of the monitor");
    } else if (mon_control_session(mc, r) == 0) {
        if (a->command != NULL) {
            mon_control_call(mc, a->command, r);
        } else if (mon_control_call(mc, "get-classes", r) == 0) {
            /* The answer is the letters that are on, e.g. "sgpu". */
            char change[32];
            snprintf(change, sizeof change, "set-classes %c%c",
                     strchr(r->text, arg[0]) != NULL ? '-' : '+', arg[0]);
            mon_control_call(mc, change, r);
        }
    }
    mc->last = *r;
    mc->have_last = true;
    return r->status;
}

int mon_control_init(struct mon_control *mc, const char *cmd,
                     const char *spec, const char *secret_file)
{
    memset(mc, 0, sizeof *mc);
    mc->conn.fd = -1;
    if (spec == NULL) {
        snprintf(mc->state, sizeof mc->state, "off (no --control)");
        return secret_file == NULL ? 0
             : mon_usage_error(cmd, "--secret-file needs --control");
    }
    if (strncmp(spec, "unix:", 5) != 0 && strncmp(spec, "tcp:", 4) != 0)
        return mon_usage_error(cmd, "--control needs a unix: or tcp: SPEC, "
                                "not '%s'", spec);
    if (strlen(spec) >= sizeof mc->spec)
        return mon_usage_error(cmd, "'%.40s...' is too long", spec);
    snprintf(mc->spec, sizeof mc->spec, "%s", spec);
    if (secret_file != NULL) {
        char err[160];
        if (ctlc_read_secret(secret_file, mc->secret, &mc->secret_len, err,
                             sizeof err) != 0) {
            fprintf(stderr, MON_TOOL_NAME " %s: %s: %s\n", cmd, secret_file, err);
            return 1;
        }
    }
    mc->enabled = true;
    (void)mon_control_session(mc, NULL);
    return 0;
}

void mon_control_close(struct mon_control *mc)
{
    ctlc_close(&mc->conn);
}

bool mon_control_ready(struct mon_control *mc)
{
    if (mc->conn.fd >= 0 && ctlc_closed(&mc->conn)) {
        ctlc_close(&mc->conn);
        snprintf(mc->state, sizeof mc->state, "not connected: the program "
                 "closed the session (its stream ended); connects again with "
                 "its stream, or at the next command");
    }
    return mc->conn.fd >= 0;
}

/* See Note [Following the stream]. */
void mon_control_poll(struct mon_control *mc, uint64_t now_ms,
                      uint64_t stream_opens, bool stream_up)
{
    if (!mc->enabled)
        return;
    bool had = mc->conn.fd >= 0;
    if (mon_control_ready(mc)) {
        mc->stream_opens = stream_opens;
        mc->retry_at_ms = 0;
        return;
    }
    if (had || stream_opens != mc->stream_opens) {
        mc->stream_opens = stream_opens;
        mc->backoff_ms = 0;
        mc->retry_at_ms = now_ms > 0 ? now_ms : 1;
    }
    if (!stream_up) {
        mc->retry_at_ms = 0;    /* the next stream arms it again */
        return;
    }
    if (mc->retry_at_ms == 0 || now_ms < mc->retry_at_ms)
        return;
    char err[700];
    int rc = mon_control_open(mc, err, sizeof err);
    if (rc == 0) {
        mc->retry_at_ms = mc->backoff_ms = 0;
        return;
    }
    if (rc != -ENOENT && rc != -ECONNREFUSED && rc != -EAGAIN) {
        mc->retry_at_ms = 0;
        snprintf(mc->state, sizeof mc->state, "not connected (tries again "
                 "when the program's stream connects again, and at the next "
                 "command): %s", err);
        return;
    }
    mc->backoff_ms = mc->backoff_ms == 0 ? MON_CTL_RETRY_MIN_MS
                   : mc->backoff_ms * 2 > MON_CTL_RETRY_MAX_MS ? MON_CTL_RETRY_MAX_MS
                   : mc->backoff_ms * 2;
    mc->retry_at_ms = now_ms + mc->backoff_ms;
    snprintf(mc->state, sizeof mc->state, "not connected (retrying in %.2g s "
             "while the stream is up): %s", mc->backoff_ms / 1000.0, err);
}

uint64_t mon_control_wait_ms(const struct mon_control *mc, uint64_t now_ms)
{
    if (mc->retry_at_ms == 0)
        return UINT64_MAX;
    return mc->retry_at_ms > now_ms ? mc->retry_at_ms - now_ms : 0;
}

/* The program's answer (or a reason naming what it sent) in its safe
 * form (safetext.h): a line for a terminal, whatever the peer
 * answered. */
static void mon_control_safe(struct strbuf *sb, const char *s)
{
    char c[SAFETEXT_CHAR_MAX];
    size_t n = strlen(s), i = 0;
    while (i < n) {
        size_t l;
        i += safetext_char(s + i, n - i, c, &l);
        sb_put(sb, c, l);
    }
}

void mon_control_result_text(const struct mon_ctl_result *r, struct strbuf *sb)
{
    if (r->status == 0)
        sb_printf(sb, "%s: ok%s", r->action, r->text[0] ? ": " : "");
    else
        sb_printf(sb, "%s: %s: ", r->action, els_err_name(r->status));
    mon_control_safe(sb, r->text);
}

void mon_control_state_text(const struct mon_control *mc, struct strbuf *sb)
{
    mon_control_safe(sb, mc->state);
}

void mon_control_result_json(const struct mon_ctl_result *r, struct strbuf *sb)
{
    sb_puts(sb, "{\"action\":");
    sb_json_str(sb, r->action, strlen(r->action));
    sb_puts(sb, ",\"command\":");
    sb_json_str(sb, r->command, strlen(r->command));
    sb_printf(sb, ",\"ok\":%s,\"status\":%d,\"error\":",
              r->status == 0 ? "true" : "false", r->status);
    if (r->status != 0) {
        const char *name = els_err_name(r->status);
        sb_json_str(sb, name, strlen(name));
    } else {
        sb_puts(sb, "null");
    }
    sb_puts(sb, ",\"result\":");
    sb_json_str(sb, r->text, strlen(r->text));
    sb_puts(sb, "}");
}

void mon_control_json(struct mon_control *mc, struct strbuf *sb)
{
    bool ready = mon_control_ready(mc);
    sb_printf(sb, "{\"enabled\":%s,\"ready\":%s,\"state\":",
              mc->enabled ? "true" : "false", ready ? "true" : "false");
    sb_json_str(sb, mc->state, strlen(mc->state));
    sb_puts(sb, ",\"actions\":[");
    for (size_t i = 0; i < MON_N_ACTIONS; i++)
        sb_printf(sb, "%s\"%s\"", i ? "," : "", mon_actions[i].name);
    sb_puts(sb, "],\"classes\":\"" MON_CTL_CLASSES "\",\"last\":");
    if (mc->have_last)
        mon_control_result_json(&mc->last, sb);
    else
        sb_puts(sb, "null");
    sb_puts(sb, "}");
}
