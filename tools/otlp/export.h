/*
 * export.h: delivery of encoded OTLP requests: a bounded queue that the
 * stream reader fills without ever waiting on the network, and one
 * exporter thread that POSTs each batch over HTTP/1.1, retries as the
 * OTLP specification says and counts every outcome.
 *
 * The queue is bounded in bytes (config queue_bytes, default 8 MiB; the
 * batch being sent counts against it too).  When a new batch does not
 * fit, the OLDEST queued batches are dropped to make room: metrics are
 * cumulative, so the newest batch carries everything an older one said,
 * and a collector coming back after an outage is better served with the
 * present than with the start of the outage.  A batch larger than the
 * bound on its own is dropped at once (cause too_large).  Every drop is
 * counted per signal and cause; conservation holds at every moment:
 *   enqueued = sent + dropped (all causes) + queued + in flight.
 *
 * Not its job: encoding (encode.h), deciding what to send (events.h, the
 * metrics walker), TLS (refused by config.h).
 */
#ifndef ELS_OTLP_EXPORT_H
#define ELS_OTLP_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "otlp/config.h"
#include "otlp/pb.h"

enum otlp_drop_cause {
    OTLP_DROP_QUEUE_FULL = 0,   /* evicted (oldest first) to make room */
    OTLP_DROP_TOO_LARGE,        /* a batch over the queue bound by itself */
    OTLP_DROP_GAVE_UP,          /* retried until the retry time ran out */
    OTLP_DROP_REFUSED,          /* an HTTP status that must not be retried */
    OTLP_DROP_SHUTDOWN,         /* still queued when the exporter stopped */
    OTLP_NDROP_CAUSES
};

const char *otlp_drop_cause_name(enum otlp_drop_cause c);

struct otlp_signal_stats {
    uint64_t enqueued_batches, enqueued_items;
    uint64_t sent_batches, sent_items;         /* a 2xx answer */
    uint64_t rejected_items;                   /* partial success: refused inside a 2xx */
    uint64_t retries;                          /* attempts after the first */
    uint64_t dropped_batches[OTLP_NDROP_CAUSES], dropped_items[OTLP_NDROP_CAUSES];
    uint64_t queued_batches, inflight_batches;
};

struct otlp_stats {
    struct otlp_signal_stats sig[OTLP_NSIGNALS];
    size_t held_bytes;          /* queued + in flight: at most bound_bytes */
    size_t bound_bytes;
    size_t peak_held_bytes;
    char last_error[512];       /* "" if none yet */
};

/* Retry timing (defaults: first wait 1 s, doubling to at most 30 s, with
 * jitter (each wait drawn from [d/2, d]); a batch is given up 120 s after
 * its first attempt).  A Retry-After answer replaces the computed wait,
 * within the same total. */
struct otlp_retry {
    unsigned initial_ms, max_ms, give_up_ms;
};

struct otlp_exporter;

/* Start the exporter thread.  c must have passed otlp_config_finish() and
 * is copied (what it points to must outlive the exporter).  0, -ENOMEM or
 * a negative errno from pthread_create. */
int otlp_exporter_new(struct otlp_exporter **out, const struct otlp_config *c,
                      const struct otlp_retry *retry /* NULL: defaults */);

/* Queue one encoded request of items records for signal s; takes body's
 * memory (body is left empty) whatever happens.  Never waits on the
 * network: it takes the queue's lock, which the exporter thread holds
 * only to move a batch in or out.  0 queued, -ENOBUFS dropped
 * (counted). */
int otlp_exporter_enqueue(struct otlp_exporter *e, enum otlp_signal s,
                          struct otlp_buf *body, uint64_t items);

void otlp_exporter_stats(struct otlp_exporter *e, struct otlp_stats *out);

/* Stop: keep delivering for up to flush_ms (0: not at all), then drop
 * what is left (counted as shutdown; a request in flight is abandoned
 * within 100 ms of that time, whatever its timeout), join the thread and
 * free. */
void otlp_exporter_free(struct otlp_exporter *e, unsigned flush_ms);

/* Exposed for the tests: the wait a Retry-After value asks for, in ms
 * from now (seconds or an HTTP-date), or -1 if it is neither. */
long long otlp_retry_after_ms(const char *value, long long now_unix);

/* Exposed for the tests: rejected items and message from a response
 * body (protobuf ExportXServiceResponse.partial_success{rejected 1,
 * error_message 2}, or JSON "partialSuccess").  0 found, 1 none, -EINVAL
 * malformed. */
int otlp_partial_success(const uint8_t *body, size_t len, bool json,
                         uint64_t *rejected, char *msg, size_t msglen);

#endif /* ELS_OTLP_EXPORT_H */
