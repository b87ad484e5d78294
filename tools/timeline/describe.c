/*
 * describe.c: one event as `ghc-events show` (0.17) words it, so that the
 * page's event list reads like the reader users already know and tests
 * can compare the two line by line.  Events it has no wording for fall
 * back on their header description.
 */
#include <inttypes.h>
#include <string.h>

#include "eventlog-sink/parse.h"
#include "timeline/query.h"

/* Haskell's `show` of a String: quoted, with \" and \\ escaped and
 * control and non-ASCII bytes as decimal escapes. */
static void show_str(struct strbuf *out, const char *s, size_t n)
{
    sb_puts(out, "\"");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            sb_printf(out, "\\%c", c);
        else if (c >= 0x20 && c < 0x7f)
            sb_put(out, &s[i], 1);
        else
            sb_printf(out, "\\%u", c);
    }
    sb_puts(out, "\"");
}

/* Events of one family (threads: their life, labels and moves): true if ev is one of them (its
 * description appended to o). */
static bool describe_threads(const struct els_event *ev, const struct els_event_data *dp,
                   struct strbuf *o)
{
    const struct els_event_data d = *dp;
    switch (ev->tag) {
    case ELS_EV_CREATE_THREAD:
        sb_printf(o, "creating thread %" PRIu32, d.u.thread.thread);
        return true;
    case ELS_EV_RUN_THREAD:
        sb_printf(o, "running thread %" PRIu32, d.u.thread.thread);
        return true;
    case ELS_EV_STOP_THREAD:
        if (d.u.stop_thread.status == 8 && d.u.stop_thread.blocked_on)
            sb_printf(o, "stopping thread %" PRIu32
                      " (blocked on black hole owned by thread %" PRIu32 ")",
                      d.u.stop_thread.thread, d.u.stop_thread.blocked_on);
        else
            sb_printf(o, "stopping thread %" PRIu32 " (%s)",
                      d.u.stop_thread.thread, tl_stop_text(d.u.stop_thread.status));
        return true;
    case ELS_EV_THREAD_RUNNABLE:
        sb_printf(o, "thread %" PRIu32 " is runnable", d.u.thread.thread);
        return true;
    case ELS_EV_MIGRATE_THREAD:
        sb_printf(o, "migrating thread %" PRIu32 " to cap %u",
                  d.u.thread_cap.thread, d.u.thread_cap.cap);
        return true;
    case ELS_EV_THREAD_WAKEUP:
        sb_printf(o, "waking up thread %" PRIu32 " on cap %u",
                  d.u.thread_cap.thread, d.u.thread_cap.cap);
        return true;
    case ELS_EV_CREATE_SPARK_THREAD:
        sb_printf(o, "creating spark thread %" PRIu32, d.u.thread.thread);
        return true;
    case ELS_EV_THREAD_LABEL:
        sb_printf(o, "thread %" PRIu32 " has label \"", d.u.thread_label.thread);
        sb_put(o, d.u.thread_label.label.ptr, d.u.thread_label.label.len);
        sb_puts(o, "\"");
        return true;
    default:
        return false;
    }
}

/* Events of one family (collections and the heap): true if ev is one of them (its
 * description appended to o). */
static bool describe_gc_heap(const struct els_event *ev, const struct els_event_data *dp,
                   struct strbuf *o)
{
    const struct els_event_data d = *dp;
    switch (ev->tag) {
    case ELS_EV_GC_START: sb_puts(o, "starting GC"); return true;
    case ELS_EV_GC_END: sb_puts(o, "finished GC"); return true;
    case ELS_EV_REQUEST_SEQ_GC: sb_puts(o, "requesting sequential GC"); return true;
    case ELS_EV_REQUEST_PAR_GC: sb_puts(o, "requesting parallel GC"); return true;
    case ELS_EV_GC_IDLE: sb_puts(o, "GC idle"); return true;
    case ELS_EV_GC_WORK: sb_puts(o, "GC working"); return true;
    case ELS_EV_GC_DONE: sb_puts(o, "GC done"); return true;
    case ELS_EV_GC_GLOBAL_SYNC: sb_puts(o, "all caps stopped for GC"); return true;
    case ELS_EV_GC_STATS_GHC:
        sb_printf(o, "GC stats for heap capset %" PRIu32 ": generation %u, %"
                  PRIu64 " bytes copied, %" PRIu64 " bytes slop, %" PRIu64
                  " bytes fragmentation, %" PRIu32 " par threads, %" PRIu64
                  " bytes max par copied, %" PRIu64 " bytes total par copied",
                  d.u.gc_stats.capset, d.u.gc_stats.generation,
                  d.u.gc_stats.copied, d.u.gc_stats.slop,
                  d.u.gc_stats.fragmentation, d.u.gc_stats.par_n_threads,
                  d.u.gc_stats.par_max_copied, d.u.gc_stats.par_tot_copied);
        if (ev->payload_len >= 58)
            sb_printf(o, ", %" PRIu64 " bytes balanced par copied",
                      d.u.gc_stats.par_balanced_copied);
        return true;
    case ELS_EV_HEAP_ALLOCATED:
        sb_printf(o, "allocated on heap capset %" PRIu32 ": %" PRIu64
                  " total bytes till now", d.u.heap.capset, d.u.heap.bytes);
        return true;
    case ELS_EV_HEAP_SIZE:
        sb_printf(o, "size of heap capset %" PRIu32 ": %" PRIu64 " bytes",
                  d.u.heap.capset, d.u.heap.bytes);
        return true;
    case ELS_EV_HEAP_LIVE:
        sb_printf(o, "live data in heap capset %" PRIu32 ": %" PRIu64 " bytes",
                  d.u.heap.capset, d.u.heap.bytes);
        return true;
    case ELS_EV_HEAP_INFO_GHC:
        sb_printf(o, "heap stats for heap capset %" PRIu32 ": generations %u, %"
                  PRIu64 " bytes max heap size, %" PRIu64 " bytes alloc area size, %"
                  PRIu64 " bytes mblock size, %" PRIu64 " bytes block size",
                  d.u.heap_info.capset, d.u.heap_info.generations,
                  d.u.heap_info.max_heap_size, d.u.heap_info.alloc_area_size,
                  d.u.heap_info.mblock_size, d.u.heap_info.block_size);
        return true;
    default:
        return false;
    }
}

/* Events of one family (sparks): true if ev is one of them (its
 * description appended to o). */
static bool describe_sparks(const struct els_event *ev, const struct els_event_data *dp,
                   struct strbuf *o)
{
    const struct els_event_data d = *dp;
    switch (ev->tag) {
    case ELS_EV_SPARK_COUNTERS:
        sb_printf(o, "spark stats: %" PRIu64 " created, %" PRIu64 " converted, %"
                  PRIu64 " remaining (%" PRIu64 " overflowed, %" PRIu64 " dud, %"
                  PRIu64 " GC'd, %" PRIu64 " fizzled)",
                  d.u.spark_counters.created, d.u.spark_counters.converted,
                  d.u.spark_counters.remaining, d.u.spark_counters.overflowed,
                  d.u.spark_counters.dud, d.u.spark_counters.gcd,
                  d.u.spark_counters.fizzled);
        return true;
    case ELS_EV_SPARK_CREATE: sb_puts(o, "spark created"); return true;
    case ELS_EV_SPARK_DUD: sb_puts(o, "dud spark discarded"); return true;
    case ELS_EV_SPARK_OVERFLOW: sb_puts(o, "overflowed spark discarded"); return true;
    case ELS_EV_SPARK_RUN: sb_puts(o, "running a local spark"); return true;
    case ELS_EV_SPARK_STEAL:
        sb_printf(o, "stealing a spark from cap %u", d.u.spark_steal.victim_cap);
        return true;
    case ELS_EV_SPARK_FIZZLE: sb_puts(o, "spark fizzled"); return true;
    case ELS_EV_SPARK_GC: sb_puts(o, "spark GCed"); return true;
    default:
        return false;
    }
}

/* Events of one family (tasks and capabilities): true if ev is one of them (its
 * description appended to o). */
static bool describe_caps_tasks(const struct els_event *ev, const struct els_event_data *dp,
                   struct strbuf *o)
{
    const struct els_event_data d = *dp;
    switch (ev->tag) {
    case ELS_EV_TASK_CREATE:
        sb_printf(o, "task 0x%" PRIx64 " created on cap %u with OS kernel thread %"
                  PRIu64, d.u.task_create.task, d.u.task_create.cap,
                  d.u.task_create.os_thread);
        return true;
    case ELS_EV_TASK_MIGRATE:
        sb_printf(o, "task 0x%" PRIx64 " migrated from cap %u to cap %u",
                  d.u.task_migrate.task, d.u.task_migrate.cap,
                  d.u.task_migrate.new_cap);
        return true;
    case ELS_EV_TASK_DELETE:
        sb_printf(o, "task 0x%" PRIx64 " deleted", d.u.task_delete.task);
        return true;
    case ELS_EV_CAP_CREATE: sb_printf(o, "created cap %u", d.u.cap.cap); return true;
    case ELS_EV_CAP_DELETE: sb_printf(o, "deleted cap %u", d.u.cap.cap); return true;
    case ELS_EV_CAP_DISABLE: sb_printf(o, "disabled cap %u", d.u.cap.cap); return true;
    case ELS_EV_CAP_ENABLE: sb_printf(o, "enabled cap %u", d.u.cap.cap); return true;
    default:
        return false;
    }
}

/* Events of one family (messages, markers, capsets and the program's identity): true if ev is one of them (its
 * description appended to o). */
static bool describe_text_capsets(const struct els_event *ev, const struct els_event_data *dp,
                   struct strbuf *o)
{
    const struct els_event_data d = *dp;
    switch (ev->tag) {
    case ELS_EV_LOG_MSG:
    case ELS_EV_USER_MSG:
        sb_put(o, d.u.text.ptr, d.u.text.len);
        return true;
    case ELS_EV_USER_MARKER:
        sb_puts(o, "marker: ");
        sb_put(o, d.u.text.ptr, d.u.text.len);
        return true;
    case ELS_EV_CAPSET_CREATE: {
        static const char *types[] = { "CapsetUnknown", "CapsetCustom",
                                       "CapsetOsProcess", "CapsetClockDomain" };
        unsigned t = d.u.capset_create.type;
        sb_printf(o, "created capset %" PRIu32 " of type %s",
                  d.u.capset_create.capset, t < 4 ? types[t] : types[0]);
        return true;
    }
    case ELS_EV_CAPSET_DELETE:
        sb_printf(o, "deleted capset %" PRIu32, d.u.capset.capset);
        return true;
    case ELS_EV_CAPSET_ASSIGN_CAP:
        sb_printf(o, "assigned cap %u to capset %" PRIu32, d.u.capset_cap.cap,
                  d.u.capset_cap.capset);
        return true;
    case ELS_EV_CAPSET_REMOVE_CAP:
        sb_printf(o, "removed cap %u from capset %" PRIu32, d.u.capset_cap.cap,
                  d.u.capset_cap.capset);
        return true;
    case ELS_EV_OSPROCESS_PID:
        sb_printf(o, "capset %" PRIu32 ": pid %" PRIu32, d.u.os_pid.capset,
                  d.u.os_pid.pid);
        return true;
    case ELS_EV_OSPROCESS_PPID:
        sb_printf(o, "capset %" PRIu32 ": parent pid %" PRIu32, d.u.os_pid.capset,
                  d.u.os_pid.pid);
        return true;
    case ELS_EV_WALL_CLOCK_TIME:
        sb_printf(o, "capset %" PRIu32 ": wall clock time %" PRIu64 "s %" PRIu32
                  "ns (unix epoch)", d.u.wall_clock.capset, d.u.wall_clock.sec,
                  d.u.wall_clock.nsec);
        return true;
    case ELS_EV_RTS_IDENTIFIER:
        sb_printf(o, "capset %" PRIu32 ": RTS version \"", d.u.capset_text.capset);
        sb_put(o, d.u.capset_text.text.ptr, d.u.capset_text.text.len);
        sb_puts(o, "\"");
        return true;
    case ELS_EV_PROGRAM_ARGS:
    case ELS_EV_PROGRAM_ENV: {
        sb_printf(o, "capset %" PRIu32 ": %s: [", d.u.capset_strings.capset,
                  ev->tag == ELS_EV_PROGRAM_ARGS ? "args" : "env");
        struct els_str list = d.u.capset_strings.strings, item;
        bool first = true;
        while (els_str_next(&list, &item)) {
            if (!first)
                sb_puts(o, ",");
            first = false;
            show_str(o, item.ptr, item.len);
        }
        sb_puts(o, "]");
        return true;
    }
    default:
        return false;
    }
}

void tl_describe(const struct tl_index *ix, const struct els_event *ev,
                 struct strbuf *o)
{
    struct els_event_data d;
    if (els_event_decode(ev, &d) == 0 &&
        (describe_threads(ev, &d, o) || describe_gc_heap(ev, &d, o) ||
         describe_sparks(ev, &d, o) || describe_caps_tasks(ev, &d, o) ||
         describe_text_capsets(ev, &d, o)))
        return;
    sb_puts(o, tl_index_type_desc(ix, ev->tag));
}
