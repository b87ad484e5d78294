/*
 * run.c: the start and stop that `top` and `serve` share (see run.h).
 * Our own process: setting signal dispositions is ours to do.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "usage.h"
#include "run.h"

volatile sig_atomic_t mon_stop;

static void mon_on_signal(int sig)
{
    (void)sig;
    mon_stop = 1;
}

void mon_catch_stop_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = mon_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* What the source waits for, said once at start: a monitor started
 * before its program (or on a misspelled path) is not silent. */
static void mon_say_waiting(const char *cmd, const struct mon_source *src)
{
    char why[160], how[600];
    mon_source_why(src, why, sizeof why);
    mon_source_how(src, how, sizeof how);
    if (src->no_writer)
        fprintf(stderr, MON_TOOL_NAME " %s: waiting for a writer on %s (%s)\n",
                cmd, src->spec, how);
    else if (src->open_err == -ENOENT)
        fprintf(stderr, MON_TOOL_NAME " %s: waiting for %s to appear (%s yet; "
                "%s)\n", cmd, src->spec, why, how);
    else if (src->open_err == -ECONNREFUSED)
        fprintf(stderr, MON_TOOL_NAME " %s: waiting for %s to accept (%s yet; "
                "%s)\n", cmd, src->spec, why, how);
    else
        fprintf(stderr, MON_TOOL_NAME " %s: waiting for %s (%s; %s)\n", cmd,
                src->spec, why, how);
}

int mon_open(const char *cmd, const char *arg, const char *save, bool once,
             const struct mon_taps *taps, struct mon_source *src,
             struct mon_model **m)
{
    char err[300];
    if (mon_source_init(src, arg, err, sizeof err) < 0)
        return mon_usage_error(cmd, "%s", err);
    if (taps != NULL)
        src->tap = taps->bytes;
    int rc;
    if (save != NULL && (rc = mon_source_save(src, save)) < 0) {
        fprintf(stderr, MON_TOOL_NAME " %s: cannot write %s: %s\n", cmd, save,
                strerror(-rc));
        mon_source_close(src);
        return 1;
    }
    if (mon_model_new(m) < 0) {
        fprintf(stderr, MON_TOOL_NAME " %s: out of memory\n", cmd);
        mon_source_close(src);
        return 1;
    }
    if (taps != NULL && taps->events != NULL)
        mon_model_set_tap(*m, taps->events, taps->events_ctx);
    mon_model_set_source(*m, src->spec, "starting");
    src->once = once;
    (void)mon_source_pump(src, *m, mon_now_ms(), MON_PUMP_MAX);
    if (mon_source_up(src) || src->opens > 0)
        return 0;
    if (once && !src->no_writer) {
        char why[160];
        mon_source_why(src, why, sizeof why);
        fprintf(stderr, MON_TOOL_NAME " %s: cannot read %s: %s\n", cmd, src->spec,
                why);
        mon_close(src, *m);
        *m = NULL;
        return 1;
    }
    /* A FIFO's writer may come within --once's interval
     * (mon_once_reached() says if it did not). */
    if (!once)
        mon_say_waiting(cmd, src);
    return 0;
}

int mon_once_reached(const char *cmd, const struct mon_source *src)
{
    if (src->opens > 0)
        return 0;
    char why[160];
    mon_source_why(src, why, sizeof why);
    fprintf(stderr, MON_TOOL_NAME " %s: cannot read %s within the interval: %s\n",
            cmd, src->spec, why);
    return 1;
}

void mon_close(struct mon_source *src, struct mon_model *m)
{
    mon_model_free(m);
    mon_source_close(src);
}

int mon_parse_interval(const char *cmd, const char *text, uint64_t *ms)
{
    if (!mon_parse_secs(text, ms) || *ms < 50)
        return mon_usage_error(cmd, "--interval takes seconds from 0.05 to "
                                "86400, not '%s'", text);
    return 0;
}
