/*
 * metrics.c: the one table of OTLP metric names (see metrics.h).  Names
 * follow OpenTelemetry's style (dotted lower case, unit out of the name,
 * no _total suffix: a Sum says it counts).  Where hs-opentelemetry's
 * GHC metrics instrumentation (OpenTelemetry.Instrumentation.GHCMetrics,
 * from GHC.Stats) exports the same figure, its name is used:
 * process.runtime.ghc.allocated_bytes, .gc.count, .memory.live_bytes,
 * .memory.heap_size.  The rest are figures only the eventlog gives (per
 * capability, per thread, per pause, the stream's own losses) and get
 * names in the same tree.
 */
#include "otlp/metrics.h"

#include <string.h>

const struct otlp_metric_name otlp_metric_names[] = {
    /* hs-opentelemetry's names */
    { "ghc_heap_allocated_bytes_total", "process.runtime.ghc.allocated_bytes", "By", OTLP_SUM,
      "Bytes allocated on the GHC heap (sum over capabilities)" },
    { "ghc_gc_collections_total", "process.runtime.ghc.gc.count", "{gc}", OTLP_SUM,
      "Garbage collections, by generation" },
    { "ghc_heap_live_bytes", "process.runtime.ghc.memory.live_bytes", "By", OTLP_GAUGE,
      "Live data in the heap after the last collection" },
    { "ghc_heap_size_bytes", "process.runtime.ghc.memory.heap_size", "By", OTLP_GAUGE,
      "Memory the RTS holds for the heap" },
    /* the eventlog's own figures */
    { "ghc_gc_pause_seconds", "process.runtime.ghc.gc.pause", "s", OTLP_HISTOGRAM,
      "Collection pauses (the leader's GC start to GC end)" },
    { "ghc_gc_pause_max_seconds", "process.runtime.ghc.gc.pause.max", "s", OTLP_GAUGE,
      "Longest collection pause so far" },
    { "ghc_gc_capability_starts_total", "process.runtime.ghc.gc.capability_starts", "{start}", OTLP_SUM,
      "GC starts posted by each capability (a parallel collection posts one per capability)" },
    { "ghc_gc_time_ratio", "process.runtime.ghc.gc.time_ratio", "1", OTLP_GAUGE,
      "Share of elapsed time in collections" },
    { "ghc_capability_utilisation", "process.runtime.ghc.capability.utilization", "1", OTLP_GAUGE,
      "Share of time each capability ran Haskell code" },
    { "ghc_capability_gc_ratio", "process.runtime.ghc.capability.gc_ratio", "1", OTLP_GAUGE,
      "Share of time each capability spent in collections" },
    { "ghc_threads", "process.runtime.ghc.threads", "{thread}", OTLP_GAUGE,
      "Haskell threads by state" },
    { "ghc_threads_created_total", "process.runtime.ghc.threads.created", "{thread}", OTLP_SUM,
      "Haskell threads created" },
    { "ghc_thread_stops_total", "process.runtime.ghc.thread.stops", "{stop}", OTLP_SUM,
      "Thread stops by reason" },
    { "ghc_thread_stopped_seconds_total", "process.runtime.ghc.thread.stopped_time", "s", OTLP_SUM,
      "Time threads spent stopped, by reason" },
    { "ghc_sparks_total", "process.runtime.ghc.sparks", "{spark}", OTLP_SUM,
      "Sparks by outcome" },
    { "ghc_spark_pool", "process.runtime.ghc.spark.pool", "{spark}", OTLP_GAUGE,
      "Sparks waiting in each capability's pool" },
    { "ghc_heap_census_bytes", "process.runtime.ghc.heap_profile.bytes", "By", OTLP_GAUGE,
      "Residency of each band of the last heap census" },
    { "ghc_heap_censuses_total", "process.runtime.ghc.heap_profile.censuses", "{census}", OTLP_SUM,
      "Heap censuses taken" },
    { "ghc_heap_census_time_seconds", "process.runtime.ghc.heap_profile.time", "s", OTLP_GAUGE,
      "Time of the last heap census since the program started" },
    { "eventlog_events_total", "eventlog.events", "{event}", OTLP_SUM,
      "Events read from the stream" },
    { "eventlog_events_by_type_total", "eventlog.events.by_type", "{event}", OTLP_SUM,
      "Events read, by event type" },
    { "eventlog_event_bytes_by_type_total", "eventlog.event_bytes.by_type", "By", OTLP_SUM,
      "Bytes of events read, by event type" },
    { "eventlog_events_per_second", "eventlog.event_rate", "{event}/s", OTLP_GAUGE,
      "Events per second over the last interval" },
    { "eventlog_received_bytes_total", "eventlog.received_bytes", "By", OTLP_SUM,
      "Bytes of the stream received" },
    { "eventlog_unread_bytes_total", "eventlog.unread_bytes", "By", OTLP_SUM,
      "Bytes of the stream that could not be read as events" },
    { "eventlog_user_events_total", "eventlog.user_events", "{event}", OTLP_SUM,
      "User messages and markers" },
    { "eventlog_lost_units_total", "eventlog.lost.units", "{unit}", OTLP_SUM,
      "Units of the stream lost, by cause" },
    { "eventlog_lost_bytes_total", "eventlog.lost.bytes", "By", OTLP_SUM,
      "Bytes of the stream lost, by cause" },
    /* the exporter's own */
    { NULL, "eventlog.otlp.left_out", "{item}", OTLP_SUM,
      "Logs and spans the rate limit left out, by signal" },
};

const size_t otlp_metric_names_count =
    sizeof otlp_metric_names / sizeof otlp_metric_names[0];

const struct otlp_metric_name *otlp_metric_name_for(const char *prom)
{
    for (size_t i = 0; i < otlp_metric_names_count; i++)
        if (otlp_metric_names[i].prom != NULL && strcmp(otlp_metric_names[i].prom, prom) == 0)
            return &otlp_metric_names[i];
    return NULL;
}
