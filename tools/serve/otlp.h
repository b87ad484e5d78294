/*
 * otlp.h: serve's OpenTelemetry export: the --otlp-* flags, and for each
 * program serve follows, its model's series (the walk /metrics is
 * written from) as OTLP metrics at each export interval and its events
 * as logs and spans (tools/otlp does the encoding, the rate limit and
 * the delivery, on a thread of its own: nothing here waits on the
 * network).  Not its job: what a series is called in OTLP (the name
 * table, tools/otlp/metrics.c), HTTP (tools/otlp/export.c).
 *
 * Export is on when the user asks for it: an --otlp-* flag, or
 * OTEL_EXPORTER_OTLP_ENDPOINT or a per-signal endpoint variable set.
 * Only then are the other OTEL_* variables read (a shell that sets
 * OTEL_SERVICE_NAME for another program does not make serve export).
 */
#ifndef ELS_TOOL_SERVE_OTLP_H
#define ELS_TOOL_SERVE_OTLP_H

#include <stdint.h>

#include "../monitor/model.h"
#include "../monitor/strbuf.h"

/* getopt_long's val for every --otlp-* option (its name tells which). */
#define SERVE_OTLP_OPT 0x4f54
#define SERVE_OTLP_OPTIONS \
    { "otlp-endpoint", required_argument, NULL, SERVE_OTLP_OPT }, \
    { "otlp-protocol", required_argument, NULL, SERVE_OTLP_OPT }, \
    { "otlp-header", required_argument, NULL, SERVE_OTLP_OPT }, \
    { "otlp-timeout", required_argument, NULL, SERVE_OTLP_OPT }, \
    { "otlp-interval", required_argument, NULL, SERVE_OTLP_OPT }, \
    { "otlp-signals", required_argument, NULL, SERVE_OTLP_OPT }, \
    { "otlp-insecure", no_argument, NULL, SERVE_OTLP_OPT }, \
    { "otlp-max-rate", required_argument, NULL, SERVE_OTLP_OPT }, \
    { "otlp-queue-bytes", required_argument, NULL, SERVE_OTLP_OPT }, \
    { "otlp-service-name", required_argument, NULL, SERVE_OTLP_OPT }, \
    { "otlp-gc-spans", no_argument, NULL, SERVE_OTLP_OPT }

/* The flags as given, applied after the variables (a flag wins). */
#define SERVE_OTLP_FLAGS_MAX 64
struct serve_otlp_flags {
    const char *name[SERVE_OTLP_FLAGS_MAX];     /* without the dashes */
    const char *value[SERVE_OTLP_FLAGS_MAX];
    unsigned n;
};

/* The help's paragraph on the flags. */
extern const char serve_otlp_usage[];

/* Keep one flag (getopt's name and optarg).  0, or a usage error's exit
 * status after its line. */
int serve_otlp_flag(struct serve_otlp_flags *f, const char *name,
                    const char *value);

/* Start exporting if asked: the variables, then the flags, checked
 * (a refusal is one line on stderr: "serve: OTLP: ..."), and the
 * exporter's thread.  0 (exporting or not asked), or the exit status. */
int serve_otlp_start(const struct serve_otlp_flags *f);
/* Send what is pending (at most 2 s more) and stop. */
void serve_otlp_stop(void);

/* One followed program (its model m; name and pid: the announced ones,
 * or NULL and 0 to take them from the stream).  Sets m's tap.  NULL
 * when not exporting (or out of memory: said once on stderr).  m may be
 * NULL for a model mon_open() is about to make: the tap then goes in
 * through mon_open()'s taps, and serve_otlp_prog_attach() gives the
 * model once made. */
struct serve_otlp_prog *serve_otlp_prog_new(struct mon_model *m,
                                            const char *name, long pid);
void serve_otlp_prog_attach(struct serve_otlp_prog *p, struct mon_model *m);
/* The program exited and its model took its last tick: its last
 * metrics and pending logs and spans go now, and nothing after. */
void serve_otlp_prog_end(struct serve_otlp_prog *p);
void serve_otlp_prog_free(struct serve_otlp_prog *p);
/* mon_model's tap (model.h): ctx is the serve_otlp_prog. */
void serve_otlp_tap(void *ctx, const struct mon_model *m, const struct els_event *ev);

/* From the poll loop at each turn: exports every program's metrics (and
 * sends pending logs and spans) when the interval is due. */
void serve_otlp_tick(uint64_t now_ms);

/* The exporter's own counters as eventlog_sink_otlp_* families (nothing
 * when not exporting), after /metrics' model families. */
void serve_otlp_prometheus(struct strbuf *b);
/* The state JSON's "otlp" member: b holds one JSON object; its closing
 * brace becomes ,"otlp":{...}} (nothing when not exporting). */
void serve_otlp_state_json(struct strbuf *b);

#endif /* ELS_TOOL_SERVE_OTLP_H */
