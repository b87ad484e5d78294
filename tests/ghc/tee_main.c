/*
 * tee_main.c: a C main() for a test program (tests/ghc/Trigger.hs) that
 * hands its eventlog to two writers of the library at once, through the
 * public API only: the RTS's EventLogWriter (RtsConfig.eventlog_writer,
 * as examples/hello-stream does for one) copies each unit to both.  The
 * specs come from ELS_TEE_SINK_1 and ELS_TEE_SINK_2, e.g. a unix: sink
 * that `serve --all` follows and a ring: flight recorder with a control
 * socket that its webhook dumps: the patched RTS's --eventlog-sink takes
 * one sink, and a fleet's program wants both.  Each writer announces
 * itself (one announce file lists both sinks under the program's pid).
 * A spec that does not open stops the program with the reason.
 */
#include <stdio.h>
#include <stdlib.h>

#include <Rts.h>
#include <eventlog-sink.h>

extern StgClosure ZCMain_main_closure;

#define TEE_N 2
static struct els_writer *tee[TEE_N];

static void tee_init(void)
{
}

static bool tee_write(void *eventlog, size_t size)
{
    /* Losses are each writer's to count and report, as for one. */
    for (int i = 0; i < TEE_N; i++)
        (void)els_writer_write(tee[i], eventlog, size);
    return true;
}

static void tee_flush(void)
{
    for (int i = 0; i < TEE_N; i++)
        (void)els_writer_flush(tee[i]);
}

static void tee_stop(void)
{
    for (int i = 0; i < TEE_N; i++) {
        (void)els_writer_close(tee[i]);
        tee[i] = NULL;
    }
}

static const EventLogWriter tee_writer = {
    .initEventLogWriter = tee_init,
    .writeEventLog = tee_write,
    .flushEventLog = tee_flush,
    .stopEventLogWriter = tee_stop,
};

int main(int argc, char *argv[])
{
    static const char *const vars[TEE_N] = { "ELS_TEE_SINK_1", "ELS_TEE_SINK_2" };
    for (int i = 0; i < TEE_N; i++) {
        const char *spec = getenv(vars[i]);
        char err[512];
        if (spec == NULL || spec[0] == '\0') {
            fprintf(stderr, "tee: %s is not set\n", vars[i]);
            return 2;
        }
        int r = els_writer_open(spec, &tee[i], err, sizeof err);
        if (r != 0) {
            fprintf(stderr, "tee: %s: %s\n", vars[i], err);
            return 1;
        }
    }
    RtsConfig conf = defaultRtsConfig;
    conf.rts_opts_enabled = RtsOptsAll;
    conf.eventlog_writer = &tee_writer;
    return hs_main(argc, argv, &ZCMain_main_closure, conf);
}
