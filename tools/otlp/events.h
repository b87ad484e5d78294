/*
 * events.h: logs and spans from a program's eventlog events, for the OTLP
 * exporter.
 *
 * Logs: user messages (traceEvent), markers (traceMarker) and thread
 * labels at INFO, the sink's in-band loss notes (els_note_decode()) at
 * WARN, each with the event's time and capability.  Spans: a marker
 * "NAME start" (or "NAME begin") and a later "NAME end" (or "NAME stop"),
 * as the monitor pairs them, and a traceEvent "START X" with a later
 * "STOP X" (ghc-events-analyze's convention); an end closes the latest
 * open start of the same name (LIFO), whichever capability posted it (a
 * Haskell thread moves between capabilities).  With gc_spans (config),
 * each capability's GC_START to its next GC_END is a span "GC" too.
 * Each span is the root of its own trace.
 *
 * Times: an event's time counts from the RTS's start; EVENT_WALL_CLOCK_TIME
 * (posted at start-up) gives the wall clock at one event time, hence the
 * anchor unix_ns = anchor + event time.  GHC posts it in the global
 * buffer, which may reach the stream after capability blocks holding
 * later events, so times are computed when a batch is sent (at
 * OTLP_EVENTS_BATCH records or the caller's flush), not when an event
 * arrives.  If the stream has not given it by then, logs carry no time
 * (the receiver uses the observed time) and spans are anchored at the
 * wall-clock time the first span was sent.
 *
 * Volume: a token bucket per signal (config max_rate per second, burst
 * of one second's worth) limits logs and spans; what it leaves out is
 * counted (otlp_events_left_out()) for the metrics.  Records are batched
 * (OTLP_EVENTS_BATCH per request) and handed to the exporter, which
 * never blocks the caller.
 */
#ifndef ELS_OTLP_EVENTS_H
#define ELS_OTLP_EVENTS_H

#include <eventlog-sink/parse.h>

#include "otlp/export.h"

#define OTLP_EVENTS_BATCH 256
#define OTLP_EVENTS_OPEN_MAX 1024     /* open spans kept; more are left out */
#define OTLP_EVENTS_TEXT_MAX 1024     /* a log body or span name is cut here */
#define OTLP_EVENTS_GC_CAPS 256       /* capabilities whose GC pauses are spans */

struct otlp_events;

/* x, c and res must outlive the result. */
int otlp_events_new(struct otlp_events **out, struct otlp_exporter *x,
                    const struct otlp_config *c, const struct otlp_resource *res);
/* Reset at a new stream (a restart or a new connection): open spans and
 * the clock anchor are forgotten. */
void otlp_events_reset(struct otlp_events *ev);
void otlp_events_feed(struct otlp_events *ev, const struct els_event *e);
/* Send what is pending (the caller's timer, and before freeing). */
void otlp_events_flush(struct otlp_events *ev);

struct otlp_events_stats {
    uint64_t logs, spans;                 /* handed to the exporter */
    uint64_t logs_left_out, spans_left_out;   /* by the rate limit */
    uint64_t spans_unmatched;             /* starts dropped: more than OPEN_MAX open */
};
void otlp_events_stats(const struct otlp_events *ev, struct otlp_events_stats *out);
void otlp_events_free(struct otlp_events *ev);

#endif /* ELS_OTLP_EVENTS_H */
