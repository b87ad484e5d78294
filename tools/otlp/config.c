/*
 * config.c: the OTLP exporter's settings from OTEL_* variables and
 * --otlp-* flags, checked once (see config.h).
 */
#include "otlp/config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const otlp_signal_names[OTLP_NSIGNALS] = { "metrics", "logs", "traces" };
static const char *const otlp_signal_upper[OTLP_NSIGNALS] = { "METRICS", "LOGS", "TRACES" };

const char *otlp_signal_name(enum otlp_signal s)
{
    return (unsigned)s < OTLP_NSIGNALS ? otlp_signal_names[s] : "unknown";
}

static int otlp_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int otlp_fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -EINVAL;
}

void otlp_config_init(struct otlp_config *c)
{
    memset(c, 0, sizeof *c);
    for (int s = 0; s < OTLP_NSIGNALS; s++)
        c->enabled[s] = true;
    c->format = OTLP_PROTOBUF;
    c->timeout_ms = 10000;
    c->interval_ms = 60000;
    c->max_rate = 100;
    c->queue_bytes = OTLP_QUEUE_BYTES_DEFAULT;
}

static void otlp_headers_clear(struct otlp_config *c)
{
    for (size_t i = 0; i < c->nheaders; i++) {
        free(c->headers[i].name);
        free(c->headers[i].value);
    }
    c->nheaders = 0;
}

static void otlp_resource_clear(struct otlp_config *c)
{
    for (size_t i = 0; i < c->nresource; i++) {
        free((char *)c->resource[i].key);
        free((char *)c->resource[i].s);
    }
    c->nresource = 0;
}

void otlp_config_free(struct otlp_config *c)
{
    free(c->base_endpoint);
    for (int s = 0; s < OTLP_NSIGNALS; s++)
        free(c->signal_endpoint[s]);
    free(c->service_name);
    otlp_headers_clear(c);
    otlp_resource_clear(c);
    memset(c, 0, sizeof *c);
}

static int otlp_set_str(char **dst, const char *v, const char *what, char *err, size_t errlen)
{
    if (strlen(v) > OTLP_URL_MAX)
        return otlp_fail(err, errlen, "%s: longer than %d bytes", what, OTLP_URL_MAX);
    char *d = strdup(v);
    if (d == NULL)
        return otlp_fail(err, errlen, "%s: out of memory", what);
    free(*dst);
    *dst = d;
    return 0;
}

/* A decimal in [lo, hi]; the whole string. */
static int otlp_number(const char *v, unsigned long long lo, unsigned long long hi,
                       unsigned long long *out, const char *what, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    if (!isdigit((unsigned char)v[0]))
        return otlp_fail(err, errlen, "%s: not a number: \"%.40s\"", what, v);
    unsigned long long n = strtoull(v, &end, 10);
    if (errno != 0 || *end != '\0' || n < lo || n > hi)
        return otlp_fail(err, errlen, "%s: \"%.40s\" is not a whole number from %llu to %llu",
                         what, v, lo, hi);
    *out = n;
    return 0;
}

/* ------------------------------------------------------------------------
 * Lists of key=value (OTEL_EXPORTER_OTLP_HEADERS, OTEL_RESOURCE_ATTRIBUTES)
 * ------------------------------------------------------------------------ */

static int otlp_hexval(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
           c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Percent-decode [s, s+n) into a new string; NULL if a %XX is malformed or
 * decodes to a control character (a header value must not carry CR or
 * LF: they would end the header and start another). */
static char *otlp_pct_decode(const char *s, size_t n)
{
    char *out = malloc(n + 1);
    if (out == NULL)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)s[i];
        if (c == '%') {
            if (i + 2 >= n) {
                free(out);
                return NULL;
            }
            int hi = otlp_hexval((unsigned char)s[i + 1]), lo = otlp_hexval((unsigned char)s[i + 2]);
            if (hi < 0 || lo < 0) {
                free(out);
                return NULL;
            }
            c = hi << 4 | lo;
            i += 2;
        }
        if (c < 0x20 || c == 0x7f) {
            free(out);
            return NULL;
        }
        out[o++] = (char)c;
    }
    out[o] = '\0';
    return out;
}

static bool otlp_is_token(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!(isalnum(c) || strchr("!#$%&'*+-.^_`|~", c) != NULL))
            return false;
    }
    return true;
}

static void otlp_trim(const char **s, size_t *n)
{
    while (*n > 0 && (**s == ' ' || **s == '\t')) {
        (*s)++;
        (*n)--;
    }
    while (*n > 0 && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
        (*n)--;
}

/* One "k=v" of a header list, added to c->headers. */
static int otlp_add_header(struct otlp_config *c, const char *item, size_t n,
                           const char *what, char *err, size_t errlen)
{
    otlp_trim(&item, &n);
    if (n == 0)
        return 0;               /* "a=1,,b=2" and a trailing comma are harmless */
    const char *eq = memchr(item, '=', n);
    if (eq == NULL)
        return otlp_fail(err, errlen, "%s: \"%.*s\" is not key=value", what,
                         (int)(n > 40 ? 40 : n), item);
    const char *k = item, *v = eq + 1;
    size_t kn = (size_t)(eq - item), vn = n - kn - 1;
    otlp_trim(&k, &kn);
    otlp_trim(&v, &vn);
    if (!otlp_is_token(k, kn))
        return otlp_fail(err, errlen, "%s: \"%.*s\" is not a header name", what,
                         (int)(kn > 40 ? 40 : kn), k);
    if (kn + vn > OTLP_HEADER_MAX)
        return otlp_fail(err, errlen, "%s: header %.*s longer than %d bytes", what,
                         (int)(kn > 40 ? 40 : kn), k, OTLP_HEADER_MAX);
    if (c->nheaders == OTLP_HEADERS_MAX)
        return otlp_fail(err, errlen, "%s: more than %d headers", what, OTLP_HEADERS_MAX);
    char *value = otlp_pct_decode(v, vn);
    char *name = strndup(k, kn);
    if (value == NULL || name == NULL) {
        free(value);
        free(name);
        return otlp_fail(err, errlen, "%s: header %.*s: bad %%-escape or a control character in its value",
                         what, (int)(kn > 40 ? 40 : kn), k);
    }
    c->headers[c->nheaders].name = name;
    c->headers[c->nheaders].value = value;
    c->nheaders++;
    return 0;
}

static int otlp_add_resource(struct otlp_config *c, const char *item, size_t n,
                             const char *what, char *err, size_t errlen)
{
    otlp_trim(&item, &n);
    if (n == 0)
        return 0;
    const char *eq = memchr(item, '=', n);
    if (eq == NULL || eq == item)
        return otlp_fail(err, errlen, "%s: \"%.*s\" is not key=value", what,
                         (int)(n > 40 ? 40 : n), item);
    const char *k = item, *v = eq + 1;
    size_t kn = (size_t)(eq - item), vn = n - kn - 1;
    otlp_trim(&k, &kn);
    otlp_trim(&v, &vn);
    if (kn > 255 || vn > OTLP_VALUE_MAX)
        return otlp_fail(err, errlen, "%s: attribute %.*s: key over 255 or value over %d bytes",
                         what, (int)(kn > 40 ? 40 : kn), k, OTLP_VALUE_MAX);
    if (c->nresource == OTLP_RESOURCE_MAX)
        return otlp_fail(err, errlen, "%s: more than %d attributes", what, OTLP_RESOURCE_MAX);
    char *key = otlp_pct_decode(k, kn), *val = otlp_pct_decode(v, vn);
    if (key == NULL || val == NULL || key[0] == '\0') {
        free(key);
        free(val);
        return otlp_fail(err, errlen, "%s: attribute %.*s: bad %%-escape or a control character",
                         what, (int)(kn > 40 ? 40 : kn), k);
    }
    /* A later duplicate replaces the earlier one. */
    for (size_t i = 0; i < c->nresource; i++) {
        if (strcmp(c->resource[i].key, key) == 0) {
            free(key);
            free((char *)c->resource[i].s);
            c->resource[i].s = val;
            return 0;
        }
    }
    c->resource[c->nresource++] = (struct otlp_attr){ .key = key, .type = OTLP_ATTR_STR, .s = val };
    return 0;
}

static int otlp_list(struct otlp_config *c, const char *v, const char *what,
                     int (*add)(struct otlp_config *, const char *, size_t, const char *,
                                char *, size_t),
                     char *err, size_t errlen)
{
    if (strlen(v) > OTLP_HEADERS_MAX * (OTLP_HEADER_MAX + 2))
        return otlp_fail(err, errlen, "%s: too long", what);
    const char *p = v;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        int rc = add(c, p, n, what, err, errlen);
        if (rc < 0)
            return rc;
        if (comma == NULL)
            return 0;
        p = comma + 1;
    }
}

/* ------------------------------------------------------------------------
 * Values shared by variables and flags
 * ------------------------------------------------------------------------ */

static int otlp_protocol(struct otlp_config *c, const char *v, const char *what,
                         char *err, size_t errlen)
{
    if (strcmp(v, "http/protobuf") == 0)
        c->format = OTLP_PROTOBUF;
    else if (strcmp(v, "http/json") == 0)
        c->format = OTLP_JSON;
    else if (strcmp(v, "grpc") == 0)
        return otlp_fail(err, errlen, "%s: grpc is not supported: use http/protobuf (port 4318 on a collector)", what);
    else
        return otlp_fail(err, errlen, "%s: \"%.40s\": expected http/protobuf or http/json", what, v);
    return 0;
}

static int otlp_signals(struct otlp_config *c, const char *v, char *err, size_t errlen)
{
    bool on[OTLP_NSIGNALS] = { false, false, false };
    if (strcmp(v, "none") != 0) {
        const char *p = v;
        for (;;) {
            const char *comma = strchr(p, ',');
            size_t n = comma ? (size_t)(comma - p) : strlen(p);
            int s;
            for (s = 0; s < OTLP_NSIGNALS; s++)
                if (strlen(otlp_signal_names[s]) == n && memcmp(p, otlp_signal_names[s], n) == 0)
                    break;
            if (s == OTLP_NSIGNALS)
                return otlp_fail(err, errlen, "--otlp-signals: \"%.*s\": expected metrics, logs, traces or none",
                                 (int)(n > 40 ? 40 : n), p);
            on[s] = true;
            if (comma == NULL)
                break;
            p = comma + 1;
        }
    }
    memcpy(c->enabled, on, sizeof on);
    return 0;
}

static int otlp_rate(struct otlp_config *c, const char *v, const char *what, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    double r = strtod(v, &end);
    if (errno != 0 || end == v || *end != '\0' || !(r >= 0) || r > 1e6)
        return otlp_fail(err, errlen, "%s: \"%.40s\" is not a rate from 0 to 1000000 per second", what, v);
    c->max_rate = r;
    return 0;
}

int otlp_config_from_env(struct otlp_config *c, const char *(*get)(const char *),
                         char *err, size_t errlen)
{
    const char *v;
    int rc;
    unsigned long long n;
    if ((v = get("OTEL_EXPORTER_OTLP_ENDPOINT")) != NULL && *v) {
        if ((rc = otlp_set_str(&c->base_endpoint, v, "OTEL_EXPORTER_OTLP_ENDPOINT", err, errlen)) < 0)
            return rc;
        c->requested = true;
    }
    for (int s = 0; s < OTLP_NSIGNALS; s++) {
        char name[64];
        snprintf(name, sizeof name, "OTEL_EXPORTER_OTLP_%s_ENDPOINT", otlp_signal_upper[s]);
        if ((v = get(name)) != NULL && *v) {
            if ((rc = otlp_set_str(&c->signal_endpoint[s], v, name, err, errlen)) < 0)
                return rc;
            c->requested = true;
        }
        snprintf(name, sizeof name, "OTEL_%s_EXPORTER", otlp_signal_upper[s]);
        if ((v = get(name)) != NULL && *v) {
            if (strcmp(v, "otlp") == 0)
                c->enabled[s] = true;
            else if (strcmp(v, "none") == 0)
                c->enabled[s] = false;
            else
                return otlp_fail(err, errlen, "%s: \"%.40s\": expected otlp or none", name, v);
        }
    }
    if ((v = get("OTEL_EXPORTER_OTLP_PROTOCOL")) != NULL && *v &&
        (rc = otlp_protocol(c, v, "OTEL_EXPORTER_OTLP_PROTOCOL", err, errlen)) < 0)
        return rc;
    if ((v = get("OTEL_EXPORTER_OTLP_HEADERS")) != NULL && *v &&
        (rc = otlp_list(c, v, "OTEL_EXPORTER_OTLP_HEADERS", otlp_add_header, err, errlen)) < 0)
        return rc;
    if ((v = get("OTEL_EXPORTER_OTLP_TIMEOUT")) != NULL && *v) {
        if ((rc = otlp_number(v, 1, 600000, &n, "OTEL_EXPORTER_OTLP_TIMEOUT", err, errlen)) < 0)
            return rc;
        c->timeout_ms = (unsigned)n;
    }
    if ((v = get("OTEL_METRIC_EXPORT_INTERVAL")) != NULL && *v) {
        if ((rc = otlp_number(v, 100, 86400000, &n, "OTEL_METRIC_EXPORT_INTERVAL", err, errlen)) < 0)
            return rc;
        c->interval_ms = (unsigned)n;
    }
    if ((v = get("OTEL_SERVICE_NAME")) != NULL && *v &&
        (rc = otlp_set_str(&c->service_name, v, "OTEL_SERVICE_NAME", err, errlen)) < 0)
        return rc;
    if ((v = get("OTEL_RESOURCE_ATTRIBUTES")) != NULL && *v &&
        (rc = otlp_list(c, v, "OTEL_RESOURCE_ATTRIBUTES", otlp_add_resource, err, errlen)) < 0)
        return rc;
    if ((v = get("OTEL_EXPORTER_OTLP_INSECURE")) != NULL && *v) {
        if (strcasecmp(v, "true") == 0)
            c->insecure = true;
        else if (strcasecmp(v, "false") == 0)
            c->insecure = false;
        else
            return otlp_fail(err, errlen, "OTEL_EXPORTER_OTLP_INSECURE: \"%.40s\": expected true or false", v);
    }
    return 0;
}

bool otlp_config_flag_has_value(const char *name)
{
    return strcmp(name, "--otlp-insecure") != 0 && strcmp(name, "--otlp-gc-spans") != 0;
}

int otlp_config_flag(struct otlp_config *c, const char *name, const char *value,
                     char *err, size_t errlen)
{
    unsigned long long n;
    int rc;
    if (strncmp(name, "--otlp-", 7) != 0)
        return 1;
    if (strcmp(name, "--otlp-insecure") == 0) {
        c->insecure = true;
        return 0;
    }
    if (strcmp(name, "--otlp-gc-spans") == 0) {
        c->gc_spans = true;
        return 0;
    }
    static const char *const known[] = {
        "--otlp-endpoint", "--otlp-protocol", "--otlp-header", "--otlp-timeout",
        "--otlp-interval", "--otlp-signals", "--otlp-max-rate", "--otlp-queue-bytes",
        "--otlp-service-name",
    };
    size_t k;
    for (k = 0; k < sizeof known / sizeof known[0]; k++)
        if (strcmp(name, known[k]) == 0)
            break;
    if (k == sizeof known / sizeof known[0])
        return 1;
    if (value == NULL)
        return otlp_fail(err, errlen, "%s needs a value", name);
    if (strcmp(name, "--otlp-endpoint") == 0) {
        /* The flag names the base endpoint and overrides the per-signal
         * variables too: it says where everything goes. */
        for (int s = 0; s < OTLP_NSIGNALS; s++) {
            free(c->signal_endpoint[s]);
            c->signal_endpoint[s] = NULL;
        }
        c->requested = true;
        return otlp_set_str(&c->base_endpoint, value, name, err, errlen);
    }
    if (strcmp(name, "--otlp-protocol") == 0)
        return otlp_protocol(c, value, name, err, errlen);
    if (strcmp(name, "--otlp-header") == 0) {
        if (!c->headers_from_flags) {
            otlp_headers_clear(c);
            c->headers_from_flags = true;
        }
        return otlp_add_header(c, value, strlen(value), name, err, errlen);
    }
    if (strcmp(name, "--otlp-timeout") == 0) {
        if ((rc = otlp_number(value, 1, 600000, &n, name, err, errlen)) < 0)
            return rc;
        c->timeout_ms = (unsigned)n;
        return 0;
    }
    if (strcmp(name, "--otlp-interval") == 0) {
        if ((rc = otlp_number(value, 100, 86400000, &n, name, err, errlen)) < 0)
            return rc;
        c->interval_ms = (unsigned)n;
        return 0;
    }
    if (strcmp(name, "--otlp-signals") == 0)
        return otlp_signals(c, value, err, errlen);
    if (strcmp(name, "--otlp-max-rate") == 0)
        return otlp_rate(c, value, name, err, errlen);
    if (strcmp(name, "--otlp-queue-bytes") == 0) {
        if ((rc = otlp_number(value, OTLP_QUEUE_BYTES_MIN, 1ull << 32, &n, name, err, errlen)) < 0)
            return rc;
        c->queue_bytes = (size_t)n;
        return 0;
    }
    return otlp_set_str(&c->service_name, value, name, err, errlen);
}

/* ------------------------------------------------------------------------
 * URLs
 * ------------------------------------------------------------------------ */

static bool otlp_host_is_loopback(const char *host)
{
    if (strcasecmp(host, "localhost") == 0)
        return true;
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, host, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6);
    return false;
}

int otlp_url_parse(struct otlp_url *u, const char *text, char *err, size_t errlen)
{
    memset(u, 0, sizeof *u);
    size_t len = strlen(text);
    if (len > OTLP_URL_MAX)
        return otlp_fail(err, errlen, "endpoint longer than %d bytes", OTLP_URL_MAX);
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)text[i];
        if (ch <= 0x20 || ch >= 0x7f)
            return otlp_fail(err, errlen, "endpoint \"%.60s\": a space, control or non-ASCII byte at %zu",
                             text, i);
    }
    memcpy(u->text, text, len + 1);
    if (strncasecmp(text, "https://", 8) == 0)
        return otlp_fail(err, errlen, "endpoint %.200s: https is not supported (no TLS library): "
                         "point it at an OpenTelemetry collector on this host (http://localhost:4318) "
                         "that forwards with TLS", text);
    if (strncasecmp(text, "http://", 7) != 0)
        return otlp_fail(err, errlen, "endpoint \"%.60s\": expected http://HOST[:PORT][/PATH]", text);
    const char *p = text + 7;
    const char *slash = strchr(p, '/');
    size_t auth = slash ? (size_t)(slash - p) : strlen(p);
    if (memchr(p, '@', auth) != NULL)
        return otlp_fail(err, errlen, "endpoint \"%.60s\": user information in a URL is not supported "
                         "(use --otlp-header Authorization=...)", text);
    if (memchr(text, '#', len) != NULL)
        return otlp_fail(err, errlen, "endpoint \"%.60s\": a fragment (#) has no meaning here", text);
    const char *hend, *portp = NULL;
    if (auth > 0 && p[0] == '[') {
        const char *rb = memchr(p, ']', auth);
        if (rb == NULL)
            return otlp_fail(err, errlen, "endpoint \"%.60s\": unclosed [ in the host", text);
        if (rb - p - 1 >= (long)sizeof u->host || rb - p - 1 == 0)
            return otlp_fail(err, errlen, "endpoint \"%.60s\": bad IPv6 host", text);
        memcpy(u->host, p + 1, (size_t)(rb - p - 1));
        struct in6_addr a6;
        if (inet_pton(AF_INET6, u->host, &a6) != 1)
            return otlp_fail(err, errlen, "endpoint \"%.60s\": bad IPv6 host", text);
        hend = rb + 1;
        if (hend < p + auth) {
            if (*hend != ':')
                return otlp_fail(err, errlen, "endpoint \"%.60s\": junk after ]", text);
            portp = hend + 1;
        }
    } else {
        const char *colon = memchr(p, ':', auth);
        hend = colon ? colon : p + auth;
        if (colon)
            portp = colon + 1;
        if (hend == p || (size_t)(hend - p) >= sizeof u->host)
            return otlp_fail(err, errlen, "endpoint \"%.60s\": missing or overlong host", text);
        memcpy(u->host, p, (size_t)(hend - p));
        for (const char *h = u->host; *h; h++)
            if (!(isalnum((unsigned char)*h) || *h == '-' || *h == '.' || *h == '_'))
                return otlp_fail(err, errlen, "endpoint \"%.60s\": bad character in the host", text);
    }
    if (portp != NULL) {
        size_t pl = (size_t)(p + auth - portp);
        char tmp[8];
        unsigned long long port;
        if (pl == 0 || pl > 5)
            return otlp_fail(err, errlen, "endpoint \"%.60s\": bad port", text);
        memcpy(tmp, portp, pl);
        tmp[pl] = '\0';
        if (otlp_number(tmp, 1, 65535, &port, "port", err, errlen) < 0)
            return otlp_fail(err, errlen, "endpoint \"%.60s\": bad port", text);
        snprintf(u->port, sizeof u->port, "%llu", port);
    } else {
        strcpy(u->port, "80");
    }
    snprintf(u->path, sizeof u->path, "%s", slash ? slash : "/");
    u->loopback = otlp_host_is_loopback(u->host);
    return 0;
}

int otlp_config_finish(struct otlp_config *c, char *err, size_t errlen)
{
    const char *base = c->base_endpoint ? c->base_endpoint : "http://localhost:4318";
    for (int s = 0; s < OTLP_NSIGNALS; s++) {
        if (!c->enabled[s])
            continue;
        char text[OTLP_URL_MAX + 32];
        if (c->signal_endpoint[s] != NULL) {
            snprintf(text, sizeof text, "%s", c->signal_endpoint[s]);
        } else {
            size_t bl = strlen(base);
            while (bl > 0 && base[bl - 1] == '/')
                bl--;
            snprintf(text, sizeof text, "%.*s/v1/%s", (int)bl, base, otlp_signal_names[s]);
        }
        char why[512];
        if (otlp_url_parse(&c->url[s], text, why, sizeof why) < 0)
            return otlp_fail(err, errlen, "otlp %s: %s", otlp_signal_names[s], why);
        if (!c->url[s].loopback && !c->insecure)
            return otlp_fail(err, errlen, "otlp %s: endpoint %s is not on this host and plain http "
                             "would send telemetry and headers unencrypted: run a collector on this host "
                             "that forwards with TLS, or pass --otlp-insecure "
                             "(OTEL_EXPORTER_OTLP_INSECURE=true)", otlp_signal_names[s], c->url[s].text);
    }
    if (c->queue_bytes < OTLP_QUEUE_BYTES_MIN)
        return otlp_fail(err, errlen, "otlp queue bound %zu below %u bytes", c->queue_bytes,
                         OTLP_QUEUE_BYTES_MIN);
    return 0;
}
