/*
 * commands.c: the control channel's commands that act on the RTS
 * (docs/CONTROL.md): stop and restart of the eventlog, flush, snapshots,
 * classes, buffer size, heap and time profiling, the ring: dump, and, in the
 * "eventlog-socket" namespace, that project's built-in commands, so its
 * clients (eventlog-live's buttons) work unchanged.  They are registered
 * when the library is loaded; each calls the C API of
 * <eventlog-sink/ghc.h> from the control thread (lib/control/worker.c),
 * never from the writer thread.
 *
 * Not this file's job: the protocol, sessions and authorisation
 * (lib/control/), the RTS calls themselves (ghc.c and the patches).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "control/control.h"
#include "eventlog-sink/ghc.h"
#include "ghc/glue.h"

static int no_args(const char *args, char *out, size_t out_len)
{
    if (args[0] == '\0')
        return 0;
    snprintf(out, out_len, "this command takes no arguments");
    return ELS_EINVAL;
}

static int cmd_stop(struct elsi_control *ctl, const char *args, char *out,
                    size_t out_len)
{
    (void)ctl;
    int r = no_args(args, out, out_len);
    if (r == 0)
        els_ghc_stop();
    return r;
}

static int cmd_restart(struct elsi_control *ctl, const char *args, char *out,
                       size_t out_len)
{
    (void)ctl;
    int r = no_args(args, out, out_len);
    if (r != 0)
        return r;
    els_ghc_stop();
    return els_ghc_start();
}

/* eventlog-socket 18/19: GHC master's TRACE_CAP has no -l letter in GHC
 * 9.0.2, where capability events follow the other classes. */
static int cmd_es_cap_tracing(struct elsi_control *ctl, const char *args,
                              char *out, size_t out_len)
{
    (void)ctl;
    (void)args;
    snprintf(out, out_len, "GHC 9.0.2 has no capability-tracing class (its "
             "-l classes are s g n p f u)");
    return ELS_ENOTSUP;
}

/* on|off -> 1|0, else -1 with the reason in out. */
static int on_off(const char *args, char *out, size_t out_len)
{
    if (strcmp(args, "on") == 0)
        return 1;
    if (strcmp(args, "off") == 0)
        return 0;
    snprintf(out, out_len, "expected on or off");
    return -1;
}

static int cmd_flush(struct elsi_control *ctl, const char *args, char *out,
                     size_t out_len)
{
    (void)ctl;
    int r = no_args(args, out, out_len);
    return r != 0 ? r : els_ghc_flush();
}

static int cmd_snapshot(struct elsi_control *ctl, const char *args, char *out,
                        size_t out_len)
{
    (void)ctl;
    int r = no_args(args, out, out_len);
    return r != 0 ? r : els_ghc_snapshot();
}

static int cmd_get_classes(struct elsi_control *ctl, const char *args,
                           char *out, size_t out_len)
{
    (void)ctl;
    int r = no_args(args, out, out_len);
    return r != 0 ? r : els_ghc_get_classes(out, out_len);
}

static int cmd_set_classes(struct elsi_control *ctl, const char *args,
                           char *out, size_t out_len)
{
    (void)ctl;
    if (args[0] == '\0') {
        snprintf(out, out_len, "expected classes in -l syntax, e.g. -s+f");
        return ELS_EINVAL;
    }
    int r = els_ghc_set_classes(args, out, out_len);
    if (r == 0)
        r = els_ghc_get_classes(out, out_len);
    return r;
}

static int cmd_buffer_size(struct elsi_control *ctl, const char *args,
                           char *out, size_t out_len)
{
    (void)ctl;
    if (args[0] != '\0') {
        uint64_t bytes = 0;
        if (els_sink_parse_size(args, &bytes) != 0) {
            snprintf(out, out_len, "expected a size like 512K or 2M");
            return ELS_EINVAL;
        }
        /* The reason for a refusal goes to the client, not only to the
         * program's log: Note [Unit size and the sink's limits]. */
        int r = elsi_ghc_check_buffer_size((size_t)bytes, out, out_len);
        if (r == 0)
            r = els_ghc_set_buffer_size((size_t)bytes);
        if (r != 0)
            return r;
    }
    long size = els_ghc_buffer_size();
    if (size < 0)
        return (int)size;
    snprintf(out, out_len, "%ld", size);
    return 0;
}

/* eventlog-socket 6-17: trace flags as -l letters. */
static const char es_class_letter[] = "sgnpfu";

static int es_classes(unsigned id, char *out, size_t out_len)
{
    char change[3] = { (id % 2 == 0) ? '+' : '-',
                       es_class_letter[(id - 6) / 2], '\0' };
    int r = els_ghc_set_classes(change, out, out_len);
    if (r == 0)
        r = els_ghc_get_classes(out, out_len);
    return r;
}

#define ES_CLASS_CMD(n)                                                     \
    static int cmd_es_##n(struct elsi_control *ctl, const char *args,       \
                          char *out, size_t out_len)                        \
    {                                                                       \
        (void)ctl;                                                          \
        (void)args;                                                         \
        return es_classes(n, out, out_len);                                 \
    }
ES_CLASS_CMD(6) ES_CLASS_CMD(7) ES_CLASS_CMD(8) ES_CLASS_CMD(9)
ES_CLASS_CMD(10) ES_CLASS_CMD(11) ES_CLASS_CMD(12) ES_CLASS_CMD(13)
ES_CLASS_CMD(14) ES_CLASS_CMD(15) ES_CLASS_CMD(16) ES_CLASS_CMD(17)

static int cmd_heap_profiling(struct elsi_control *ctl, const char *args,
                              char *out, size_t out_len)
{
    (void)ctl;
    int on = on_off(args, out, out_len);
    return on < 0 ? ELS_EINVAL : els_ghc_heap_profiling(on);
}

static int cmd_time_profiling(struct elsi_control *ctl, const char *args,
                              char *out, size_t out_len)
{
    (void)ctl;
    int on = on_off(args, out, out_len);
    return on < 0 ? ELS_EINVAL : els_ghc_time_profiling(on);
}

static int cmd_heap_census(struct elsi_control *ctl, const char *args,
                           char *out, size_t out_len)
{
    (void)ctl;
    int r = no_args(args, out, out_len);
    return r != 0 ? r : els_ghc_heap_census();
}

#define ES_PROF_CMD(n, call)                                                \
    static int cmd_es_##n(struct elsi_control *ctl, const char *args,       \
                          char *out, size_t out_len)                        \
    {                                                                       \
        (void)ctl;                                                          \
        (void)args;                                                         \
        (void)out;                                                          \
        (void)out_len;                                                      \
        return call;                                                        \
    }
ES_PROF_CMD(1, els_ghc_time_profiling(1))
ES_PROF_CMD(2, els_ghc_time_profiling(0))
ES_PROF_CMD(3, els_ghc_heap_profiling(1))
ES_PROF_CMD(4, els_ghc_heap_profiling(0))
ES_PROF_CMD(5, els_ghc_heap_census())

/* The dump of the writer the command came through: a ring: sink's, over
 * its control=unix:PATH socket; any other sink has no recording to dump. */
static int cmd_ring_dump(struct elsi_control *ctl, const char *args,
                         char *out, size_t out_len)
{
    int r = no_args(args, out, out_len);
    if (r != 0)
        return r;
    char name[PATH_MAX];
    r = elsi_control_writer_dump(ctl, name, sizeof name);
    if (r != 0) {
        /* Why (max-dumps= reached, ...), for whoever asked: ctl prints
         * it, serve --all's webhook answers it. */
        snprintf(out, out_len, "%s", name);
        return r;
    }
    struct stat st;
    if (stat(name, &st) == 0)
        snprintf(out, out_len, "%s (%lld bytes)", name, (long long)st.st_size);
    else
        snprintf(out, out_len, "%s", name);
    return 0;
}

struct ghc_command {
    const char *ns;
    unsigned id;
    const char *name;
    const char *help;
    elsi_ctl_builtin_fn fn;
    unsigned flags;
};

#define NS ELSI_CTL_NAMESPACE
#define ES "eventlog-socket"

static const struct ghc_command ghc_commands[] = {
    { NS, 0, "stop", "end the stream (every consumer gets its end)",
      cmd_stop, ELSI_CTL_ANSWER_FIRST },
    { NS, 0, "restart", "end the stream and start a new one on the same sink",
      cmd_restart, ELSI_CTL_ANSWER_FIRST },
    { ES, 18, NULL, NULL, cmd_es_cap_tracing, 0 },
    { ES, 19, NULL, NULL, cmd_es_cap_tracing, 0 },
    { NS, 0, "flush", "write every RTS buffer out now", cmd_flush, 0 },
    { NS, 0, "snapshot", "write the RTS's state into the stream",
      cmd_snapshot, 0 },
    { NS, 0, "get-classes", "the -l classes being traced", cmd_get_classes, 0 },
    { NS, 0, "set-classes", "change the classes (-l syntax: -s+f, sgu)",
      cmd_set_classes, 0 },
    { NS, 0, "buffer-size", "show, or set, the per-capability buffer",
      cmd_buffer_size, 0 },
    { ES, 6, NULL, NULL, cmd_es_6, 0 }, { ES, 7, NULL, NULL, cmd_es_7, 0 },
    { ES, 8, NULL, NULL, cmd_es_8, 0 }, { ES, 9, NULL, NULL, cmd_es_9, 0 },
    { ES, 10, NULL, NULL, cmd_es_10, 0 }, { ES, 11, NULL, NULL, cmd_es_11, 0 },
    { ES, 12, NULL, NULL, cmd_es_12, 0 }, { ES, 13, NULL, NULL, cmd_es_13, 0 },
    { ES, 14, NULL, NULL, cmd_es_14, 0 }, { ES, 15, NULL, NULL, cmd_es_15, 0 },
    { ES, 16, NULL, NULL, cmd_es_16, 0 }, { ES, 17, NULL, NULL, cmd_es_17, 0 },
    { NS, 0, "heap-profiling", "on|off: the heap profile timer",
      cmd_heap_profiling, 0 },
    { NS, 0, "heap-census", "one heap census now", cmd_heap_census, 0 },
    { NS, 0, "time-profiling", "on|off: cost-centre sampling (-prof)",
      cmd_time_profiling, 0 },
    { ES, 1, NULL, NULL, cmd_es_1, 0 }, { ES, 2, NULL, NULL, cmd_es_2, 0 },
    { ES, 3, NULL, NULL, cmd_es_3, 0 }, { ES, 4, NULL, NULL, cmd_es_4, 0 },
    { ES, 5, NULL, NULL, cmd_es_5, 0 },
    { NS, 0, "ring-dump", "write the ring: sink's window to a new file",
      cmd_ring_dump, 0 },
};

__attribute__((constructor)) static void ghc_control_register(void)
{
    for (size_t i = 0; i < sizeof ghc_commands / sizeof ghc_commands[0]; i++) {
        const struct ghc_command *c = &ghc_commands[i];
        elsi_control_register_builtin(c->ns, c->id, c->name, c->help, c->fn,
                                      c->flags);
    }
}
