/*
 * eventlog-sink/parse.h: an incremental reader of GHC eventlog streams.
 *
 * For consumers written in C: a live monitor reading a socket, a receiver
 * checking what it copies, a test counting events.  Feed the bytes of a
 * stream in pieces of any size; the parser calls back once the header's
 * event-type table is complete, once per event (with the capability of
 * the block it sits in), and at DATA_END.  Decoders turn the payloads of
 * the events a monitor needs into structs.  Nothing here allocates after
 * els_parser_new(), except while a header is read (the descriptions of
 * its event types); memory is bounded whatever the input claims, and
 * malformed input is an error code and a stream offset, never a crash.
 *
 * What it does not do: reorder events (blocks of different capabilities
 * arrive out of timestamp order), keep state across events (which thread
 * runs where), or check payloads beyond what a decoder needs.  A full
 * reader such as ghc-events does that.
 *
 * Format: all integers big-endian.  A header ("hdrb" "hetb", entries
 * "etb\0" tag:16 size:16 desc_len:32 desc extra_len:32 extra "ete\0",
 * "hete" "hdre"), then "datb", then events: tag:16 time:64, a 16-bit
 * payload size if the tag's declared size is variable (0xffff), the
 * payload, and finally the tag 0xffff (DATA_END).  Block markers (tag 18)
 * open a block of one capability's events.  Reference: GHC 9.0.2
 * includes/rts/EventLogFormat.h and rts/eventlog/EventLog.c.
 *
 * Errors follow <eventlog-sink.h>: 0 or a negative code.  Compiles on its
 * own in C99 and C++.
 */
#ifndef EVENTLOG_SINK_PARSE_H
#define EVENTLOG_SINK_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Event tags (GHC's EVENT_* numbers; fixed by the format, not by a header)
 * ------------------------------------------------------------------------ */

enum els_event_tag {
    ELS_EV_CREATE_THREAD = 0,
    ELS_EV_RUN_THREAD = 1,
    ELS_EV_STOP_THREAD = 2,
    ELS_EV_THREAD_RUNNABLE = 3,
    ELS_EV_MIGRATE_THREAD = 4,
    ELS_EV_THREAD_WAKEUP = 8,
    ELS_EV_GC_START = 9,
    ELS_EV_GC_END = 10,
    ELS_EV_REQUEST_SEQ_GC = 11,
    ELS_EV_REQUEST_PAR_GC = 12,
    ELS_EV_CREATE_SPARK_THREAD = 15,
    ELS_EV_LOG_MSG = 16,
    ELS_EV_BLOCK_MARKER = 18,
    ELS_EV_USER_MSG = 19,
    ELS_EV_GC_IDLE = 20,
    ELS_EV_GC_WORK = 21,
    ELS_EV_GC_DONE = 22,
    ELS_EV_CAPSET_CREATE = 25,
    ELS_EV_CAPSET_DELETE = 26,
    ELS_EV_CAPSET_ASSIGN_CAP = 27,
    ELS_EV_CAPSET_REMOVE_CAP = 28,
    ELS_EV_RTS_IDENTIFIER = 29,
    ELS_EV_PROGRAM_ARGS = 30,
    ELS_EV_PROGRAM_ENV = 31,
    ELS_EV_OSPROCESS_PID = 32,
    ELS_EV_OSPROCESS_PPID = 33,
    ELS_EV_SPARK_COUNTERS = 34,
    ELS_EV_SPARK_CREATE = 35,
    ELS_EV_SPARK_DUD = 36,
    ELS_EV_SPARK_OVERFLOW = 37,
    ELS_EV_SPARK_RUN = 38,
    ELS_EV_SPARK_STEAL = 39,
    ELS_EV_SPARK_FIZZLE = 40,
    ELS_EV_SPARK_GC = 41,
    ELS_EV_WALL_CLOCK_TIME = 43,
    ELS_EV_THREAD_LABEL = 44,
    ELS_EV_CAP_CREATE = 45,
    ELS_EV_CAP_DELETE = 46,
    ELS_EV_CAP_DISABLE = 47,
    ELS_EV_CAP_ENABLE = 48,
    ELS_EV_HEAP_ALLOCATED = 49,
    ELS_EV_HEAP_SIZE = 50,
    ELS_EV_HEAP_LIVE = 51,
    ELS_EV_HEAP_INFO_GHC = 52,
    ELS_EV_GC_STATS_GHC = 53,
    ELS_EV_GC_GLOBAL_SYNC = 54,
    ELS_EV_TASK_CREATE = 55,
    ELS_EV_TASK_MIGRATE = 56,
    ELS_EV_TASK_DELETE = 57,
    ELS_EV_USER_MARKER = 58,
    ELS_EV_HEAP_PROF_BEGIN = 160,
    ELS_EV_HEAP_PROF_COST_CENTRE = 161,
    ELS_EV_HEAP_PROF_SAMPLE_BEGIN = 162,
    ELS_EV_HEAP_PROF_SAMPLE_COST_CENTRE = 163,
    ELS_EV_HEAP_PROF_SAMPLE_STRING = 164,
    ELS_EV_HEAP_PROF_SAMPLE_END = 165,
    ELS_EV_HEAP_BIO_PROF_SAMPLE_BEGIN = 166,
    ELS_EV_PROF_SAMPLE_COST_CENTRE = 167,
    ELS_EV_PROF_BEGIN = 168
};

/* A tag's declared payload size when each event carries its own 16-bit
 * size after the timestamp. */
#define ELS_EVENT_SIZE_VARIABLE (-1)

/* One entry of the header's event-type table. */
struct els_event_type {
    uint16_t tag;
    int32_t size;             /* payload bytes, or ELS_EVENT_SIZE_VARIABLE */
    /* The description, NUL-terminated, at most ELS_PARSE_DESC_MAX bytes
     * (longer ones are cut; GHC's are under 100). */
    const char *desc;
};

#define ELS_PARSE_DESC_MAX 255

/* One event.  payload points into the bytes fed or into the parser's own
 * buffer, and is valid only during the callback. */
struct els_event {
    uint16_t tag;
    uint64_t time;            /* nanoseconds since the RTS started */
    /* Capability of the enclosing block; -1 outside any block or in a
     * global block (GHC writes capability 0xffff for events that belong to
     * no capability: capsets, heap info, messages). */
    int32_t cap;
    const uint8_t *payload;
    size_t payload_len;
    uint64_t offset;          /* stream offset of the event's tag */
};

/* ------------------------------------------------------------------------
 * The parser
 * ------------------------------------------------------------------------ */

struct els_parser;

/* Callbacks; any may be NULL.  A non-zero return stops els_parser_feed()
 * right after that item and is returned by it (pick a value other than
 * ELS_EINVAL, which means a malformed stream); the item counts as
 * consumed, *used says how much of the piece was, and the next feed goes
 * on from there.  The struct grows
 * only at its end, like struct els_sink_ops (see <eventlog-sink/sink.h>,
 * "Growing the table"): set struct_size = sizeof(struct
 * els_parse_callbacks); callbacks past a caller's struct_size are absent. */
struct els_parse_callbacks {
    size_t struct_size;
    /* The header is complete (after "datb"): els_parser_event_types() and
     * els_parser_event_type() describe this stream from now on. */
    int (*on_header)(void *user, const struct els_parser *p);
    /* One event, block markers included (tag ELS_EV_BLOCK_MARKER). */
    int (*on_event)(void *user, const struct els_event *ev);
    /* DATA_END at offset: the stream ended cleanly. */
    int (*on_end)(void *user, uint64_t offset);
    /* End of the first release's struct (ELS_PARSE_CALLBACKS_MIN_SIZE). */
};

#define ELS_PARSE_CALLBACKS_MIN_SIZE \
    (offsetof(struct els_parse_callbacks, on_end) + sizeof(void (*)(void)))

/* Flags for els_parser_new(). */
/* After DATA_END, a new header ("hdrb") starts a new stream (a restart:
 * the event-type table is replaced) instead of being an error. */
#define ELS_PARSE_RESTART 1u

/* A parser with its fixed buffers (about 520 KiB: one event of the
 * largest size, a size, an index and a selection per tag).  cb may be NULL; it is
 * copied.  0, ELS_EINVAL (unknown flag), ELS_EVERSION (cb->struct_size
 * below ELS_PARSE_CALLBACKS_MIN_SIZE or above 4096) or ELS_ENOMEM.
 *
 * The structs the parser fills (els_parse_status, els_event_data,
 * els_note) change only with the library's major version. */
int els_parser_new(struct els_parser **out, const struct els_parse_callbacks *cb,
                   void *user, unsigned flags);
void els_parser_free(struct els_parser *p);

/* Forget everything and expect a header at the next byte, as after
 * els_parser_new() (a new connection).  Counters restart from zero. */
void els_parser_reset(struct els_parser *p);

/* Consume len bytes.  Returns 0 when all were consumed (an item cut at the
 * end of the piece waits for the next piece), a callback's non-zero
 * return, or ELS_EINVAL when the stream is malformed (every later call
 * fails too; els_parser_status() says where and why).  *used (may be
 * NULL) receives the bytes of buf consumed. */
int els_parser_feed(struct els_parser *p, const void *buf, size_t len,
                    size_t *used);

enum els_parse_where {
    ELS_PARSE_AT_START = 0,   /* nothing fed yet (or just reset) */
    ELS_PARSE_IN_HEADER,      /* inside the header, before "datb" */
    ELS_PARSE_AT_EVENT,       /* between events: a clean cut */
    ELS_PARSE_IN_EVENT,       /* inside an event */
    ELS_PARSE_ENDED,          /* after DATA_END: complete */
    ELS_PARSE_FAILED          /* malformed; see error */
};

struct els_parse_status {
    enum els_parse_where where;
    uint64_t offset;          /* bytes consumed */
    /* IN_HEADER / IN_EVENT: where the unfinished header or event began.
     * FAILED: where the offending item begins.  ENDED: offset of
     * DATA_END.  Otherwise equal to offset. */
    uint64_t item_offset;
    /* Events read, block markers excluded (with a selection, delivered
     * or not: see els_parser_select()). */
    uint64_t events;
    uint64_t blocks;          /* block markers read */
    uint64_t streams;         /* headers completed (> 1 after restarts) */
    /* FAILED: "offset N: what is wrong", else "". */
    const char *error;
};

void els_parser_status(const struct els_parser *p, struct els_parse_status *out);

/* Name of a where value ("in-header", ...); "unknown" for bad values. */
const char *els_parse_where_name(enum els_parse_where where);

/* The current stream's event-type table, in header order (empty before
 * the first header is complete).  Valid until the next header begins,
 * els_parser_reset() or els_parser_free(). */
size_t els_parser_event_types(const struct els_parser *p,
                              const struct els_event_type **types);
/* The entry for tag, or NULL if the header did not declare it. */
const struct els_event_type *els_parser_event_type(const struct els_parser *p,
                                                   uint16_t tag);

/* ------------------------------------------------------------------------
 * Selecting events
 *
 * A reader that needs few of the events (a trigger waiting for one
 * marker, a watch on GC pauses) can have the parser skip the rest without
 * a callback: a skipped event costs a few loads, a delivered one a call.
 * Skipped events are checked like the others (declared tag, length) and
 * counted in els_parse_status.events, and block markers give later
 * events their capability whether they are delivered or not.  A selection
 * is part of the parser, not of the stream: it survives
 * els_parser_reset() and new headers.
 * ------------------------------------------------------------------------ */

/* Longest prefix els_parser_select() takes, and how many it keeps. */
#define ELS_PARSE_PREFIX_MAX 255
#define ELS_PARSE_PREFIXES_MAX 16

/* Deliver the events with this tag (ELS_EV_BLOCK_MARKER for block
 * markers); with prefix_len > 0, only those whose payload begins with
 * the prefix (the text of a traceMarker or a traceEvent, for instance).
 * Calls add up: a tag selected without a prefix is delivered whole; with
 * prefixes, an event matching any of them is.  The first call since
 * els_parser_new() or els_parser_select_all() starts the selection: from
 * then on the tags never selected are skipped.  0, or ELS_EINVAL (prefix
 * NULL with a length, prefix_len above ELS_PARSE_PREFIX_MAX, more than
 * ELS_PARSE_PREFIXES_MAX prefixes in all). */
int els_parser_select(struct els_parser *p, uint16_t tag, const void *prefix,
                      size_t prefix_len);
/* Deliver every event again (the default). */
void els_parser_select_all(struct els_parser *p);

/* ------------------------------------------------------------------------
 * Decoders
 *
 * els_event_decode() fills the member of the union named after the event
 * and returns 0, 1 if the tag has no decoder here (use the payload), or
 * ELS_EINVAL if the payload is shorter than the fields need (longer is
 * fine: a newer RTS may append fields).  Events without fields
 * (GC_START, SPARK_RUN, ...) decode to 0 with nothing filled.  Strings
 * point into the payload (not NUL-terminated; a trailing NUL is not
 * counted), valid as long as the payload.
 * ------------------------------------------------------------------------ */

struct els_str {
    const char *ptr;
    size_t len;
};

/* A cost-centre stack as the samples carry it: depth cost-centre ids,
 * innermost first (the running cost centre, then its callers), as raw
 * big-endian words in the payload; read them with els_ccs_id(). */
struct els_ccs {
    uint8_t depth;
    const uint8_t *ids;
};

/* The i-th id of stack (0: innermost), i < stack->depth. */
uint32_t els_ccs_id(const struct els_ccs *stack, size_t i);

struct els_event_data {
    union {
        /* CREATE_THREAD, RUN_THREAD, THREAD_RUNNABLE, CREATE_SPARK_THREAD */
        struct { uint32_t thread; } thread;
        /* STOP_THREAD: status 1-5 as GHC's rts/Constants.h numbers
         * why a thread stopped (1 heap overflow, 2 stack overflow,
         * 3 yielding, 4 blocked, 5 finished); a blocked thread is
         * posted as 6 + its why_blocked (Constants.h): 7 MVar, 8 black
         * hole, 9 read, 10 write, 11 delay, 12 STM, 13 doProc,
         * 16 foreign call, 17 interruptible foreign call, 18 throwTo,
         * 19 migrating, 20 MVar read; blocked_on: the thread it waits
         * for (black hole), else 0. */
        struct { uint32_t thread; uint16_t status; uint32_t blocked_on; } stop_thread;
        /* MIGRATE_THREAD (new capability), THREAD_WAKEUP (the other
         * capability) */
        struct { uint32_t thread; uint16_t cap; } thread_cap;
        /* THREAD_LABEL */
        struct { uint32_t thread; struct els_str label; } thread_label;
        /* LOG_MSG, USER_MSG, USER_MARKER */
        struct els_str text;
        /* CAPSET_CREATE (type: 1 custom, 2 OS process, 3 clock domain) */
        struct { uint32_t capset; uint16_t type; } capset_create;
        /* CAPSET_DELETE */
        struct { uint32_t capset; } capset;
        /* CAPSET_ASSIGN_CAP, CAPSET_REMOVE_CAP */
        struct { uint32_t capset; uint16_t cap; } capset_cap;
        /* RTS_IDENTIFIER */
        struct { uint32_t capset; struct els_str text; } capset_text;
        /* PROGRAM_ARGS, PROGRAM_ENV: count NUL-separated strings in
         * strings (iterate with els_str_next()) */
        struct { uint32_t capset; size_t count; struct els_str strings; } capset_strings;
        /* OSPROCESS_PID, OSPROCESS_PPID */
        struct { uint32_t capset; uint32_t pid; } os_pid;
        /* WALL_CLOCK_TIME */
        struct { uint32_t capset; uint64_t sec; uint32_t nsec; } wall_clock;
        /* CAP_CREATE, CAP_DELETE, CAP_DISABLE, CAP_ENABLE */
        struct { uint16_t cap; } cap;
        /* SPARK_STEAL */
        struct { uint16_t victim_cap; } spark_steal;
        /* SPARK_COUNTERS */
        struct {
            uint64_t created, dud, overflowed, converted, gcd, fizzled,
                     remaining;
        } spark_counters;
        /* HEAP_ALLOCATED, HEAP_SIZE, HEAP_LIVE */
        struct { uint32_t capset; uint64_t bytes; } heap;
        /* HEAP_INFO_GHC */
        struct {
            uint32_t capset;
            uint16_t generations;
            uint64_t max_heap_size, alloc_area_size, mblock_size, block_size;
        } heap_info;
        /* GC_STATS_GHC */
        struct {
            uint32_t capset;
            uint16_t generation;
            uint64_t copied, slop, fragmentation;
            uint32_t par_n_threads;
            uint64_t par_max_copied, par_tot_copied, par_balanced_copied;
        } gc_stats;
        /* TASK_CREATE (os_thread: the kernel thread id) */
        struct { uint64_t task; uint16_t cap; uint64_t os_thread; } task_create;
        /* TASK_MIGRATE */
        struct { uint64_t task; uint16_t cap, new_cap; } task_migrate;
        /* TASK_DELETE */
        struct { uint64_t task; } task_delete;
        /* HEAP_PROF_SAMPLE_BEGIN, HEAP_PROF_SAMPLE_END (time 0),
         * HEAP_BIO_PROF_SAMPLE_BEGIN */
        struct { uint64_t era, time; } heap_sample;
        /* HEAP_PROF_SAMPLE_STRING: one closure type's (-hT) or other
         * label's residency in the current sample */
        struct { uint8_t profile; uint64_t residency; struct els_str label; } heap_sample_string;
        /* HEAP_PROF_BEGIN: the heap profile's sampling period (ns) and
         * breakdown (GHC's HEAP_BY_* numbers: 1 cost-centre stack, 2
         * module, 3 closure description, 4 type, 5 retainer, 6
         * biography, 7 closure type); the selectors that follow are not
         * decoded. */
        struct { uint8_t profile; uint64_t period; uint32_t breakdown; } heap_prof_begin;
        /* HEAP_PROF_COST_CENTRE: one cost centre's definition (the heap
         * and time samples name cost centres by id) */
        struct {
            uint32_t id;
            struct els_str label, module, srcloc;
            bool is_caf;
        } cost_centre;
        /* HEAP_PROF_SAMPLE_COST_CENTRE: one cost-centre stack's residency
         * in the current sample (-hc); the stack as for prof_sample */
        struct { uint8_t profile; uint64_t residency; struct els_ccs stack; } heap_sample_ccs;
        /* PROF_SAMPLE_COST_CENTRE: one time-profiler tick of cap (-p):
         * the stack running then */
        struct { uint32_t cap; uint64_t tick; struct els_ccs stack; } prof_sample;
        /* PROF_BEGIN: the time profiler's tick interval (ns) */
        struct { uint64_t tick_interval; } prof_begin;
        /* BLOCK_MARKER: size counts from the marker's tag to the end of
         * the block */
        struct { uint32_t size; uint64_t end_time; uint16_t cap; } block;
    } u;
};

int els_event_decode(const struct els_event *ev, struct els_event_data *out);

/* The next NUL-separated string of a PROGRAM_ARGS/ENV list: *s is
 * advanced past it.  false when none is left. */
bool els_str_next(struct els_str *list, struct els_str *item);

/* ------------------------------------------------------------------------
 * In-band notes
 *
 * This library tells each consumer about lost data in the stream itself,
 * as LOG_MSG events whose text starts "eventlog-sink: ".  The decoder
 * recognises the three kinds of loss and returns their figures, and the
 * note of a consumer that joined at a snapshot (not a loss).
 * ------------------------------------------------------------------------ */

enum els_note_kind {
    /* Units the writer dropped before any consumer could take them
     * (cause: a drop cause name, see els_drop_cause_name()). */
    ELS_NOTE_DROPPED = 1,
    /* Units this consumer missed: it fell behind or a write failed. */
    ELS_NOTE_CONSUMER_MISSED,
    /* The consumer joined mid-run; earlier units were no longer queued. */
    ELS_NOTE_JOINED_LATE,
    /* Another message from the library. */
    ELS_NOTE_OTHER,
    /* The consumer joined mid-run and its stream starts at a snapshot of
     * the program's state: nothing it needs is missing (no figures). */
    ELS_NOTE_JOINED_AT_SNAPSHOT
};

struct els_note {
    enum els_note_kind kind;
    uint64_t units, bytes;    /* 0 for ELS_NOTE_OTHER */
    struct els_str cause;     /* ELS_NOTE_DROPPED; else empty */
    struct els_str text;      /* the whole message */
};

/* 0 if ev is one of this library's notes (filled in *out), 1 if it is
 * another event. */
int els_note_decode(const struct els_event *ev, struct els_note *out);

#ifdef __cplusplus
}
#endif

#endif /* EVENTLOG_SINK_PARSE_H */
