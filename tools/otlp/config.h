/*
 * config.h: the OTLP exporter's settings, from OpenTelemetry's standard
 * variables and from command-line flags that say the same (a flag wins
 * over its variable).  Validation happens here, once, so that the
 * exporter only ever sees a usable configuration: every refusal is one
 * line of text in the caller's buffer.  No I/O (not even a name lookup).
 *
 * Variables: OTEL_EXPORTER_OTLP_ENDPOINT (base URL: /v1/metrics,
 * /v1/logs, /v1/traces appended), OTEL_EXPORTER_OTLP_{METRICS,LOGS,
 * TRACES}_ENDPOINT (used as they are), OTEL_EXPORTER_OTLP_PROTOCOL
 * (http/protobuf, the default, or http/json; grpc refused),
 * OTEL_EXPORTER_OTLP_HEADERS (k=v,k2=v2, values URL-decoded),
 * OTEL_EXPORTER_OTLP_TIMEOUT (ms, default 10000), OTEL_SERVICE_NAME,
 * OTEL_RESOURCE_ATTRIBUTES (k=v,...), OTEL_METRIC_EXPORT_INTERVAL (ms,
 * default 60000), OTEL_{METRICS,LOGS,TRACES}_EXPORTER (otlp or none),
 * OTEL_EXPORTER_OTLP_INSECURE (true: allow plain http to a host other
 * than loopback).
 *
 * Flags (otlp_config_flag()): --otlp-endpoint URL, --otlp-protocol P,
 * --otlp-header K=V (repeatable; replaces the variable's list),
 * --otlp-timeout MS, --otlp-interval MS, --otlp-signals LIST
 * (metrics,logs,traces or none), --otlp-insecure, --otlp-max-rate N
 * (logs and spans per second, each signal; 0: no limit),
 * --otlp-queue-bytes N, --otlp-service-name NAME, --otlp-gc-spans (each
 * collection's pause as a span "GC", off by default: one a collection is
 * a volume few receivers want).
 *
 * Transport rules: no TLS library is linked, so https:// is refused
 * (point the exporter at a collector on this host that forwards with
 * TLS); plain http:// to a host other than loopback (localhost,
 * 127.0.0.0/8, ::1, by their literal names: no lookup) is refused unless
 * insecure is set.
 */
#ifndef ELS_OTLP_CONFIG_H
#define ELS_OTLP_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "otlp/encode.h"

enum otlp_signal { OTLP_METRICS = 0, OTLP_LOGS, OTLP_TRACES, OTLP_NSIGNALS };

#define OTLP_URL_MAX 1024
#define OTLP_HEADERS_MAX 32
#define OTLP_HEADER_MAX 4096        /* one header's name + value */
#define OTLP_RESOURCE_MAX 64
#define OTLP_VALUE_MAX 1024         /* a resource attribute's value */
#define OTLP_QUEUE_BYTES_DEFAULT (8u << 20)
#define OTLP_QUEUE_BYTES_MIN (64u << 10)

struct otlp_url {
    char text[OTLP_URL_MAX + 1];    /* the whole URL, for messages */
    char host[256];                 /* without brackets */
    char port[8];
    char path[OTLP_URL_MAX + 1];    /* from the first '/', "/" if none */
    bool loopback;
};

struct otlp_header {
    char *name, *value;
};

struct otlp_config {
    /* set by otlp_config_from_env() / otlp_config_flag() */
    char *base_endpoint;                    /* NULL: http://localhost:4318 */
    char *signal_endpoint[OTLP_NSIGNALS];
    bool enabled[OTLP_NSIGNALS];
    enum otlp_format format;
    struct otlp_header headers[OTLP_HEADERS_MAX];
    size_t nheaders;
    bool headers_from_flags;
    unsigned timeout_ms, interval_ms;
    char *service_name;
    struct otlp_attr resource[OTLP_RESOURCE_MAX];   /* strings owned */
    size_t nresource;
    bool insecure;
    bool gc_spans;                          /* --otlp-gc-spans */
    double max_rate;                        /* items/s per signal; 0: none */
    size_t queue_bytes;
    /* Some endpoint was named (a variable or --otlp-endpoint): a caller
     * that exports only when asked tests this. */
    bool requested;
    /* set by otlp_config_finish() */
    struct otlp_url url[OTLP_NSIGNALS];
};

void otlp_config_init(struct otlp_config *c);
void otlp_config_free(struct otlp_config *c);

/* Read the variables through get (getenv, or a test's table).  0 or
 * -EINVAL with the reason in err. */
int otlp_config_from_env(struct otlp_config *c, const char *(*get)(const char *),
                         char *err, size_t errlen);

/* Apply one flag (name with its dashes; value NULL for --otlp-insecure).
 * 0 applied, 1 not an OTLP flag, -EINVAL with the reason in err. */
int otlp_config_flag(struct otlp_config *c, const char *name, const char *value,
                     char *err, size_t errlen);
/* Whether name takes a value (for an argument loop). */
bool otlp_config_flag_has_value(const char *name);

/* Resolve and check the endpoints (after the variables and flags).  0 or
 * -EINVAL with one line in err. */
int otlp_config_finish(struct otlp_config *c, char *err, size_t errlen);

/* Parse one http:// URL (exported for the tests). */
int otlp_url_parse(struct otlp_url *u, const char *text, char *err, size_t errlen);

const char *otlp_signal_name(enum otlp_signal s);

#endif /* ELS_OTLP_CONFIG_H */
