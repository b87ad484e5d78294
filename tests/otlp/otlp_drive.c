/*
 * otlp_drive.c: drives the OTLP exporter (tools/otlp) for
 * tests/otlp/test_otlp.sh, configured as serve will be: OTEL_* variables
 * and --otlp-* flags.  It prints its counters as key=value lines; the
 * test checks what the receiver got against them and against the inputs.
 *
 *   otlp_drive [--otlp-* ...] events FILE
 *       logs and spans from an eventlog file, delivered before exit.
 *   otlp_drive [--otlp-* ...] metrics START_NS TIME_NS SERIES...
 *       one metrics request; SERIES is sum:NAME:INT, gauge:NAME:DOUBLE
 *       or hist:NAME:B1/B2/...:C1/C2/.../CN:SUM (N = bounds + 1).
 *   otlp_drive [--otlp-* ...] flood BATCHES BYTES
 *       BATCHES log requests of about BYTES each, as fast as possible,
 *       then the counters at once (nothing waits for delivery).
 *   otlp_drive [--otlp-* ...] check
 *       only the configuration.
 *   otlp_drive retry-after VALUE
 *       the wait (ms) a Retry-After header value asks for, -1 if none.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "otlp/config.h"
#include "otlp/encode.h"
#include "otlp/events.h"
#include "otlp/export.h"

static const char *drive_getenv(const char *name)
{
    return getenv(name);
}

static void drive_stats(struct otlp_exporter *x)
{
    struct otlp_stats st;
    otlp_exporter_stats(x, &st);
    for (int s = 0; s < OTLP_NSIGNALS; s++) {
        const struct otlp_signal_stats *ss = &st.sig[s];
        const char *n = otlp_signal_name(s);
        printf("%s.enqueued_batches=%llu\n%s.enqueued_items=%llu\n%s.sent_batches=%llu\n"
               "%s.sent_items=%llu\n%s.rejected_items=%llu\n%s.retries=%llu\n"
               "%s.queued_batches=%llu\n%s.inflight_batches=%llu\n",
               n, (unsigned long long)ss->enqueued_batches, n, (unsigned long long)ss->enqueued_items,
               n, (unsigned long long)ss->sent_batches, n, (unsigned long long)ss->sent_items,
               n, (unsigned long long)ss->rejected_items, n, (unsigned long long)ss->retries,
               n, (unsigned long long)ss->queued_batches, n, (unsigned long long)ss->inflight_batches);
        for (int c = 0; c < OTLP_NDROP_CAUSES; c++)
            printf("%s.dropped_batches.%s=%llu\n", n, otlp_drop_cause_name(c),
                   (unsigned long long)ss->dropped_batches[c]);
    }
    printf("held_bytes=%zu\nbound_bytes=%zu\npeak_held_bytes=%zu\nlast_error=%s\n",
           st.held_bytes, st.bound_bytes, st.peak_held_bytes, st.last_error);
}

static int drive_on_event(void *user, const struct els_event *e)
{
    otlp_events_feed(user, e);
    return 0;
}

static int drive_events(struct otlp_exporter *x, const struct otlp_config *c,
                        const struct otlp_resource *res, const char *path)
{
    struct otlp_events *ev;
    if (otlp_events_new(&ev, x, c, res) < 0)
        return 1;
    struct els_parser *p;
    struct els_parse_callbacks cbs = { .struct_size = sizeof cbs };
    cbs.on_event = drive_on_event;
    if (els_parser_new(&p, &cbs, ev, 0) < 0)
        return 1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "otlp_drive: %s: %s\n", path, strerror(errno));
        return 1;
    }
    char buf[65536];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        if (els_parser_feed(p, buf, (size_t)n, NULL) < 0) {
            struct els_parse_status ps;
            els_parser_status(p, &ps);
            fprintf(stderr, "otlp_drive: %s: %s\n", path, ps.error);
            return 1;
        }
    }
    close(fd);
    els_parser_free(p);
    otlp_events_flush(ev);
    struct otlp_events_stats es;
    otlp_events_stats(ev, &es);
    printf("events.logs=%llu\nevents.spans=%llu\nevents.logs_left_out=%llu\n"
           "events.spans_left_out=%llu\nevents.spans_unmatched=%llu\n",
           (unsigned long long)es.logs, (unsigned long long)es.spans,
           (unsigned long long)es.logs_left_out, (unsigned long long)es.spans_left_out,
           (unsigned long long)es.spans_unmatched);
    otlp_events_free(ev);
    return 0;
}

static int drive_metrics(struct otlp_exporter *x, const struct otlp_config *c,
                         const struct otlp_resource *res, int argc, char **argv)
{
    if (argc < 2)
        return 2;
    uint64_t start = strtoull(argv[0], NULL, 10), now = strtoull(argv[1], NULL, 10);
    size_t n = (size_t)argc - 2;
    struct otlp_series *s = calloc(n, sizeof *s);
    struct otlp_point *pts = calloc(n, sizeof *pts);
    static const struct otlp_attr attr = { .key = "ghc.capability", .type = OTLP_ATTR_INT, .i = 1 };
    for (size_t i = 0; i < n; i++) {
        char *spec = strdup(argv[i + 2]);
        char *kind = strtok(spec, ":"), *name = strtok(NULL, ":");
        if (kind == NULL || name == NULL)
            return 2;
        s[i].name = name;
        s[i].description = "a test series";
        s[i].unit = "1";
        s[i].points = &pts[i];
        s[i].npoints = 1;
        pts[i].attrs = &attr;
        pts[i].nattrs = 1;
        if (strcmp(kind, "sum") == 0) {
            s[i].kind = OTLP_SUM;
            pts[i].is_int = true;
            pts[i].i = strtoll(strtok(NULL, ":"), NULL, 10);
        } else if (strcmp(kind, "gauge") == 0) {
            s[i].kind = OTLP_GAUGE;
            pts[i].d = strtod(strtok(NULL, ":"), NULL);
        } else {
            s[i].kind = OTLP_HISTOGRAM;
            char *bounds = strtok(NULL, ":"), *counts = strtok(NULL, ":"), *sum = strtok(NULL, ":");
            double *bv = calloc(64, sizeof *bv);
            uint64_t *cv = calloc(65, sizeof *cv);
            size_t nb = 0, nc = 0;
            for (char *t = strtok(bounds, "/"); t && nb < 64; t = strtok(NULL, "/"))
                bv[nb++] = strtod(t, NULL);
            for (char *t = strtok(counts, "/"); t && nc < 65; t = strtok(NULL, "/"))
                cv[nc++] = strtoull(t, NULL, 10);
            if (nc != nb + 1)
                return 2;
            pts[i].bounds = bv;
            pts[i].bucket_counts = cv;
            pts[i].nbuckets = nc;
            for (size_t k = 0; k < nc; k++)
                pts[i].count += cv[k];
            pts[i].sum = strtod(sum, NULL);
        }
    }
    struct otlp_buf b = { 0 };
    if (otlp_encode_metrics(&b, c->format, res, s, n, start, now) < 0)
        return 1;
    otlp_exporter_enqueue(x, OTLP_METRICS, &b, n);
    return 0;
}

static int drive_flood(struct otlp_exporter *x, const struct otlp_config *c,
                       const struct otlp_resource *res, long batches, long bytes)
{
    char *text = malloc((size_t)bytes);
    memset(text, 'x', (size_t)bytes);
    for (long i = 0; i < batches; i++) {
        struct otlp_log l = { .observed_ns = 1, .severity = OTLP_SEV_INFO, .body = text,
                              .body_len = (size_t)bytes };
        struct otlp_buf b = { 0 };
        otlp_encode_logs(&b, c->format, res, &l, 1);
        otlp_exporter_enqueue(x, OTLP_LOGS, &b, 1);
    }
    free(text);
    drive_stats(x);
    return 0;
}

int main(int argc, char **argv)
{
    struct otlp_config c;
    char err[1024];
    otlp_config_init(&c);
    if (otlp_config_from_env(&c, drive_getenv, err, sizeof err) < 0) {
        fprintf(stderr, "otlp_drive: %s\n", err);
        return 2;
    }
    int i = 1;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        const char *v = NULL;
        if (otlp_config_flag_has_value(argv[i])) {
            if (i + 1 >= argc) {
                fprintf(stderr, "otlp_drive: %s needs a value\n", argv[i]);
                return 2;
            }
            v = argv[i + 1];
        }
        int rc = otlp_config_flag(&c, argv[i], v, err, sizeof err);
        if (rc < 0) {
            fprintf(stderr, "otlp_drive: %s\n", err);
            return 2;
        }
        if (rc == 1) {
            fprintf(stderr, "otlp_drive: unknown flag %s\n", argv[i]);
            return 2;
        }
        if (v)
            i++;
    }
    if (otlp_config_finish(&c, err, sizeof err) < 0) {
        fprintf(stderr, "otlp_drive: %s\n", err);
        return 2;
    }
    if (i >= argc)
        return 2;
    if (strcmp(argv[i], "check") == 0)
        return 0;
    if (strcmp(argv[i], "retry-after") == 0 && i + 1 < argc) {
        printf("%lld\n", otlp_retry_after_ms(argv[i + 1], (long long)time(NULL)));
        return 0;
    }
    struct otlp_attr rattrs[OTLP_RESOURCE_MAX + 1];
    size_t nr = 0;
    rattrs[nr++] = (struct otlp_attr){ .key = "service.name", .type = OTLP_ATTR_STR,
                                       .s = c.service_name ? c.service_name : "otlp_drive" };
    for (size_t k = 0; k < c.nresource; k++)
        rattrs[nr++] = c.resource[k];
    struct otlp_resource res = { .attrs = rattrs, .nattrs = nr,
                                 .scope_name = "eventlog-sink", .scope_version = "test" };
    struct otlp_retry retry = { 200, 2000, 20000 };
    const char *g = getenv("OTLP_DRIVE_GIVE_UP_MS");
    if (g)
        retry.give_up_ms = (unsigned)atoi(g);
    struct otlp_exporter *x;
    if (otlp_exporter_new(&x, &c, &retry) < 0)
        return 1;
    int rc;
    unsigned flush_ms = 60000;
    if (strcmp(argv[i], "events") == 0 && i + 1 < argc) {
        rc = drive_events(x, &c, &res, argv[i + 1]);
    } else if (strcmp(argv[i], "metrics") == 0) {
        rc = drive_metrics(x, &c, &res, argc - i - 1, argv + i + 1);
    } else if (strcmp(argv[i], "flood") == 0 && i + 2 < argc) {
        rc = drive_flood(x, &c, &res, atol(argv[i + 1]), atol(argv[i + 2]));
        flush_ms = 0;
    } else {
        return 2;
    }
    /* Deliver everything (or stop at once after a flood), then report. */
    struct otlp_stats st;
    (void)st;
    if (flush_ms) {
        for (;;) {
            otlp_exporter_stats(x, &st);
            int busy = 0;
            for (int s = 0; s < OTLP_NSIGNALS; s++)
                busy += (int)(st.sig[s].queued_batches + st.sig[s].inflight_batches);
            if (busy == 0)
                break;
            usleep(20000);
        }
        drive_stats(x);
    }
    otlp_exporter_free(x, 0);
    otlp_config_free(&c);
    return rc;
}
