/*
 * parse_decode.c: payload decoders for <eventlog-sink/parse.h>.
 *
 * Turns the payload of one event, as the parser delivered it, into the
 * fields GHC 9.0.2 writes for its tag (rts/eventlog/EventLog.c), and
 * recognises this library's own in-band notes among the log messages.
 * Each decoder reads only the bytes it has: a payload shorter than its
 * fields is ELS_EINVAL, a longer one (a newer RTS appending fields) is
 * fine.  Framing, and which tags a stream declares, are parse.c's job.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "eventlog-sink.h"
#include "eventlog-sink/parse.h"

/* A bounded big-endian reader: every get checks the bytes left and, once
 * one fails, every later one fails too, so a decoder checks once. */
struct rd {
    const uint8_t *p;
    size_t left;
    bool short_;
};

static bool rd_take(struct rd *r, size_t n)
{
    if (r->short_ || r->left < n) {
        r->short_ = true;
        return false;
    }
    return true;
}

static uint64_t rd_uint(struct rd *r, size_t n)
{
    if (!rd_take(r, n))
        return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | r->p[i];
    r->p += n;
    r->left -= n;
    return v;
}

#define rd_u8(r) ((uint8_t)rd_uint(r, 1))
#define rd_u16(r) ((uint16_t)rd_uint(r, 2))
#define rd_u32(r) ((uint32_t)rd_uint(r, 4))
#define rd_u64(r) rd_uint(r, 8)

/* The rest of the payload as a string, a trailing NUL not counted. */
static struct els_str rd_rest(struct rd *r)
{
    struct els_str s = { (const char *)r->p, r->short_ ? 0 : r->left };
    if (s.len > 0 && s.ptr[s.len - 1] == '\0')
        s.len--;
    r->p += s.len;
    r->left = 0;
    return s;
}

/* A NUL-terminated string inside the payload (HEAP_PROF_SAMPLE_STRING's
 * label); without a NUL, the rest. */
static struct els_str rd_cstr(struct rd *r)
{
    struct els_str s = { (const char *)r->p, 0 };
    if (r->short_)
        return s;
    const uint8_t *nul = memchr(r->p, 0, r->left);
    s.len = nul != NULL ? (size_t)(nul - r->p) : r->left;
    size_t used = nul != NULL ? s.len + 1 : s.len;
    r->p += used;
    r->left -= used;
    return s;
}

/* A cost-centre stack: a depth byte, then that many 32-bit ids (GHC
 * posts at most 255). */
static struct els_ccs rd_ccs(struct rd *r)
{
    struct els_ccs s = { 0, NULL };
    uint8_t depth = rd_u8(r);
    if (!rd_take(r, (size_t)depth * 4))
        return s;
    s.depth = depth;
    s.ids = r->p;
    r->p += (size_t)depth * 4;
    r->left -= (size_t)depth * 4;
    return s;
}

uint32_t els_ccs_id(const struct els_ccs *stack, size_t i)
{
    if (stack == NULL || i >= stack->depth || stack->ids == NULL)
        return 0;
    const uint8_t *p = stack->ids + i * 4;
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

bool els_str_next(struct els_str *list, struct els_str *item)
{
    if (list->len == 0)
        return false;
    const char *nul = memchr(list->ptr, '\0', list->len);
    item->ptr = list->ptr;
    item->len = nul != NULL ? (size_t)(nul - list->ptr) : list->len;
    size_t used = nul != NULL ? item->len + 1 : item->len;
    list->ptr += used;
    list->len -= used;
    return true;
}

/* ------------------------------------------------------------------------
 * Decoders, one per family of events.  Each fills out for the tags it
 * knows and returns true, or false for a tag of another family; a short
 * payload shows in r->short_ (els_event_decode checks it once).
 * ------------------------------------------------------------------------ */

typedef bool decode_family_fn(uint16_t tag, struct rd *r,
                              struct els_event_data *out);

/* Threads, and the messages of the program and the RTS. */
static bool decode_thread(uint16_t tag, struct rd *r, struct els_event_data *out)
{
    switch (tag) {
    case ELS_EV_CREATE_THREAD:
    case ELS_EV_RUN_THREAD:
    case ELS_EV_THREAD_RUNNABLE:
    case ELS_EV_CREATE_SPARK_THREAD:
        out->u.thread.thread = rd_u32(r);
        return true;
    case ELS_EV_STOP_THREAD:
        out->u.stop_thread.thread = rd_u32(r);
        out->u.stop_thread.status = rd_u16(r);
        out->u.stop_thread.blocked_on = rd_u32(r);
        return true;
    case ELS_EV_MIGRATE_THREAD:
    case ELS_EV_THREAD_WAKEUP:
        out->u.thread_cap.thread = rd_u32(r);
        out->u.thread_cap.cap = rd_u16(r);
        return true;
    case ELS_EV_THREAD_LABEL:
        out->u.thread_label.thread = rd_u32(r);
        out->u.thread_label.label = rd_rest(r);
        return true;
    case ELS_EV_LOG_MSG:
    case ELS_EV_USER_MSG:
    case ELS_EV_USER_MARKER:
        out->u.text = rd_rest(r);
        return true;
    default:
        return false;
    }
}

/* The garbage collector, and sparks. */
static bool decode_gc_spark(uint16_t tag, struct rd *r, struct els_event_data *out)
{
    switch (tag) {
    case ELS_EV_GC_START:
    case ELS_EV_GC_END:
    case ELS_EV_REQUEST_SEQ_GC:
    case ELS_EV_REQUEST_PAR_GC:
    case ELS_EV_GC_IDLE:
    case ELS_EV_GC_WORK:
    case ELS_EV_GC_DONE:
    case ELS_EV_GC_GLOBAL_SYNC:
    case ELS_EV_SPARK_CREATE:
    case ELS_EV_SPARK_DUD:
    case ELS_EV_SPARK_OVERFLOW:
    case ELS_EV_SPARK_RUN:
    case ELS_EV_SPARK_FIZZLE:
    case ELS_EV_SPARK_GC:
        return true;    /* no fields */
    case ELS_EV_GC_STATS_GHC:
        out->u.gc_stats.capset = rd_u32(r);
        out->u.gc_stats.generation = rd_u16(r);
        out->u.gc_stats.copied = rd_u64(r);
        out->u.gc_stats.slop = rd_u64(r);
        out->u.gc_stats.fragmentation = rd_u64(r);
        out->u.gc_stats.par_n_threads = rd_u32(r);
        out->u.gc_stats.par_max_copied = rd_u64(r);
        out->u.gc_stats.par_tot_copied = rd_u64(r);
        out->u.gc_stats.par_balanced_copied = rd_u64(r);
        return true;
    case ELS_EV_SPARK_COUNTERS:
        out->u.spark_counters.created = rd_u64(r);
        out->u.spark_counters.dud = rd_u64(r);
        out->u.spark_counters.overflowed = rd_u64(r);
        out->u.spark_counters.converted = rd_u64(r);
        out->u.spark_counters.gcd = rd_u64(r);
        out->u.spark_counters.fizzled = rd_u64(r);
        out->u.spark_counters.remaining = rd_u64(r);
        return true;
    case ELS_EV_SPARK_STEAL:
        out->u.spark_steal.victim_cap = rd_u16(r);
        return true;
    default:
        return false;
    }
}

/* The heap's size and shape. */
static bool decode_heap(uint16_t tag, struct rd *r, struct els_event_data *out)
{
    switch (tag) {
    case ELS_EV_HEAP_ALLOCATED:
    case ELS_EV_HEAP_SIZE:
    case ELS_EV_HEAP_LIVE:
        out->u.heap.capset = rd_u32(r);
        out->u.heap.bytes = rd_u64(r);
        return true;
    case ELS_EV_HEAP_INFO_GHC:
        out->u.heap_info.capset = rd_u32(r);
        out->u.heap_info.generations = rd_u16(r);
        out->u.heap_info.max_heap_size = rd_u64(r);
        out->u.heap_info.alloc_area_size = rd_u64(r);
        out->u.heap_info.mblock_size = rd_u64(r);
        out->u.heap_info.block_size = rd_u64(r);
        return true;
    default:
        return false;
    }
}

/* Heap profiles and the cost-centre profiler. */
static bool decode_prof(uint16_t tag, struct rd *r, struct els_event_data *out)
{
    switch (tag) {
    case ELS_EV_HEAP_PROF_SAMPLE_BEGIN:
    case ELS_EV_HEAP_PROF_SAMPLE_END:
        out->u.heap_sample.era = rd_u64(r);
        return true;
    case ELS_EV_HEAP_BIO_PROF_SAMPLE_BEGIN:
        out->u.heap_sample.era = rd_u64(r);
        out->u.heap_sample.time = rd_u64(r);
        return true;
    case ELS_EV_HEAP_PROF_BEGIN:
        out->u.heap_prof_begin.profile = rd_u8(r);
        out->u.heap_prof_begin.period = rd_u64(r);
        out->u.heap_prof_begin.breakdown = rd_u32(r);
        return true;
    case ELS_EV_HEAP_PROF_COST_CENTRE:
        out->u.cost_centre.id = rd_u32(r);
        out->u.cost_centre.label = rd_cstr(r);
        out->u.cost_centre.module = rd_cstr(r);
        out->u.cost_centre.srcloc = rd_cstr(r);
        out->u.cost_centre.is_caf = rd_u8(r) != 0;
        return true;
    case ELS_EV_HEAP_PROF_SAMPLE_COST_CENTRE:
        out->u.heap_sample_ccs.profile = rd_u8(r);
        out->u.heap_sample_ccs.residency = rd_u64(r);
        out->u.heap_sample_ccs.stack = rd_ccs(r);
        return true;
    case ELS_EV_PROF_SAMPLE_COST_CENTRE:
        out->u.prof_sample.cap = rd_u32(r);
        out->u.prof_sample.tick = rd_u64(r);
        out->u.prof_sample.stack = rd_ccs(r);
        return true;
    case ELS_EV_PROF_BEGIN:
        out->u.prof_begin.tick_interval = rd_u64(r);
        return true;
    case ELS_EV_HEAP_PROF_SAMPLE_STRING:
        out->u.heap_sample_string.profile = rd_u8(r);
        out->u.heap_sample_string.residency = rd_u64(r);
        out->u.heap_sample_string.label = rd_cstr(r);
        return true;
    default:
        return false;
    }
}

/* Capability sets: the process and what it says of itself. */
static bool decode_capset(uint16_t tag, struct rd *r, struct els_event_data *out)
{
    switch (tag) {
    case ELS_EV_CAPSET_CREATE:
        out->u.capset_create.capset = rd_u32(r);
        out->u.capset_create.type = rd_u16(r);
        return true;
    case ELS_EV_CAPSET_DELETE:
        out->u.capset.capset = rd_u32(r);
        return true;
    case ELS_EV_CAPSET_ASSIGN_CAP:
    case ELS_EV_CAPSET_REMOVE_CAP:
        out->u.capset_cap.capset = rd_u32(r);
        out->u.capset_cap.cap = rd_u16(r);
        return true;
    case ELS_EV_RTS_IDENTIFIER:
        out->u.capset_text.capset = rd_u32(r);
        out->u.capset_text.text = rd_rest(r);
        return true;
    case ELS_EV_PROGRAM_ARGS:
    case ELS_EV_PROGRAM_ENV: {
        out->u.capset_strings.capset = rd_u32(r);
        struct els_str all = rd_rest(r), it, walk = all;
        out->u.capset_strings.strings = all;
        while (els_str_next(&walk, &it))
            out->u.capset_strings.count++;
        return true;
    }
    case ELS_EV_OSPROCESS_PID:
    case ELS_EV_OSPROCESS_PPID:
        out->u.os_pid.capset = rd_u32(r);
        out->u.os_pid.pid = rd_u32(r);
        return true;
    case ELS_EV_WALL_CLOCK_TIME:
        out->u.wall_clock.capset = rd_u32(r);
        out->u.wall_clock.sec = rd_u64(r);
        out->u.wall_clock.nsec = rd_u32(r);
        return true;
    default:
        return false;
    }
}

/* Capabilities, OS tasks, and the block marker. */
static bool decode_cap_task(uint16_t tag, struct rd *r, struct els_event_data *out)
{
    switch (tag) {
    case ELS_EV_CAP_CREATE:
    case ELS_EV_CAP_DELETE:
    case ELS_EV_CAP_DISABLE:
    case ELS_EV_CAP_ENABLE:
        out->u.cap.cap = rd_u16(r);
        return true;
    case ELS_EV_TASK_CREATE:
        out->u.task_create.task = rd_u64(r);
        out->u.task_create.cap = rd_u16(r);
        out->u.task_create.os_thread = rd_u64(r);
        return true;
    case ELS_EV_TASK_MIGRATE:
        out->u.task_migrate.task = rd_u64(r);
        out->u.task_migrate.cap = rd_u16(r);
        out->u.task_migrate.new_cap = rd_u16(r);
        return true;
    case ELS_EV_TASK_DELETE:
        out->u.task_delete.task = rd_u64(r);
        return true;
    case ELS_EV_BLOCK_MARKER:
        out->u.block.size = rd_u32(r);
        out->u.block.end_time = rd_u64(r);
        out->u.block.cap = rd_u16(r);
        return true;
    default:
        return false;
    }
}

static decode_family_fn *const decode_families[] = {
    decode_thread, decode_gc_spark, decode_heap, decode_prof,
    decode_capset, decode_cap_task,
};

int els_event_decode(const struct els_event *ev, struct els_event_data *out)
{
    struct rd r = { ev->payload, ev->payload != NULL ? ev->payload_len : 0,
                    false };
    memset(out, 0, sizeof *out);

    bool known = false;
    for (size_t i = 0; !known && i < sizeof decode_families / sizeof *decode_families; i++)
        known = decode_families[i](ev->tag, &r, out);
    if (!known)
        return 1;
    if (r.short_) {
        memset(out, 0, sizeof *out);
        return ELS_EINVAL;
    }
    return 0;
}

/* ------------------------------------------------------------------------
 * In-band notes
 *
 * The texts are those lib/writer writes (elsi_consumer_note() callers):
 *   "eventlog-sink: U units (B bytes) dropped here: CAUSE; ..."
 *   "eventlog-sink: this consumer missed U units (B bytes) here: ..."
 *   "eventlog-sink: consumer N joined mid-run; U earlier units (B bytes)
 *    were no longer queued"
 *   "eventlog-sink: consumer N joined mid-run; its stream starts at a
 *    snapshot of the program's state taken then"
 * The figures are found by their shape, "U [earlier ]units (B bytes)",
 * so rewording the rest of a message does not lose them; the kind is
 * told by the phrase each one carries.  tests/format/test_parse.c checks
 * this against notes the writer really sends.
 * ------------------------------------------------------------------------ */

#define NOTE_PREFIX "eventlog-sink: "

/* Find "U units (B bytes)" or "U earlier units (B bytes)" in s. */
static bool note_figures(const char *s, size_t len, uint64_t *units,
                         uint64_t *bytes)
{
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9' || (i > 0 && s[i - 1] >= '0' &&
                                          s[i - 1] <= '9'))
            continue;
        /* sscanf on a bounded copy: the payload is not NUL-terminated. */
        char buf[96];
        size_t n = len - i < sizeof buf - 1 ? len - i : sizeof buf - 1;
        memcpy(buf, s + i, n);
        buf[n] = '\0';
        unsigned long long u, b;
        int end = 0;
        if ((sscanf(buf, "%llu units (%llu bytes)%n", &u, &b, &end) == 2 ||
             sscanf(buf, "%llu earlier units (%llu bytes)%n", &u, &b,
                    &end) == 2) && end > 0) {
            *units = u;
            *bytes = b;
            return true;
        }
    }
    return false;
}

static const char *note_find(const char *s, size_t len, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; n <= len && i <= len - n; i++)
        if (memcmp(s + i, needle, n) == 0)
            return s + i;
    return NULL;
}

int els_note_decode(const struct els_event *ev, struct els_note *out)
{
    memset(out, 0, sizeof *out);
    if (ev->tag != ELS_EV_LOG_MSG)
        return 1;
    struct els_event_data d;
    if (els_event_decode(ev, &d) != 0)
        return 1;
    const char *s = d.u.text.ptr;
    size_t len = d.u.text.len;
    size_t plen = sizeof NOTE_PREFIX - 1;
    if (len < plen || memcmp(s, NOTE_PREFIX, plen) != 0)
        return 1;

    out->text = d.u.text;
    out->kind = ELS_NOTE_OTHER;
    uint64_t units, bytes;
    if (!note_figures(s + plen, len - plen, &units, &bytes)) {
        if (note_find(s, len, " joined mid-run; its stream starts at a snapshot") != NULL)
            out->kind = ELS_NOTE_JOINED_AT_SNAPSHOT;
        return 0;
    }
    const char *dropped = note_find(s, len, " dropped here: ");
    if (dropped != NULL) {
        out->kind = ELS_NOTE_DROPPED;
        const char *c = dropped + strlen(" dropped here: ");
        size_t rest = len - (size_t)(c - s), n = 0;
        while (n < rest && c[n] != ';')
            n++;
        out->cause.ptr = c;
        out->cause.len = n;
    } else if (note_find(s, len, "this consumer missed ") != NULL) {
        out->kind = ELS_NOTE_CONSUMER_MISSED;
    } else if (note_find(s, len, " joined mid-run") != NULL) {
        out->kind = ELS_NOTE_JOINED_LATE;
    } else {
        return 0;
    }
    out->units = units;
    out->bytes = bytes;
    return 0;
}
