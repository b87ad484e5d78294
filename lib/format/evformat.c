/*
 * evformat.c: the GHC eventlog format, as far as the library needs it.
 *
 * Three jobs: tell what kind of unit the RTS handed to writeEventLog()
 * (header chunk, block, DATA_END) without reading past its end; encode an
 * in-band note as a complete global block holding one EVENT_LOG_MSG; and
 * follow a whole stream, fed in pieces of any size, closely enough to say
 * whether it is well formed and complete.  The framer checks the structure
 * (magics, the event-type table, that every event's type was declared and
 * that its payload is as long as declared, the DATA_END at an event
 * boundary); it does not interpret payloads, check timestamps or block
 * sizes, or check that a type's declared size is the one GHC uses.  That
 * is the job of a real reader such as ghc-events.
 *
 * Format reference: GHC 9.0.2 includes/rts/EventLogFormat.h and
 * rts/eventlog/EventLog.c (postHeaderEvents, postEventType,
 * postBlockMarker, closeBlockMarker, postLogMsg).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eventlog-sink.h"
#include "format/evformat.h"
#include "log.h"

/* ------------------------------------------------------------------------
 * Big-endian helpers
 * ------------------------------------------------------------------------ */

static uint16_t evformat_get16(const uint8_t *p)
{
    return (uint16_t)((unsigned)p[0] << 8 | (unsigned)p[1]);
}

static uint32_t evformat_get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
           (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static uint64_t evformat_get64(const uint8_t *p)
{
    return (uint64_t)evformat_get32(p) << 32 | evformat_get32(p + 4);
}

static uint8_t *evformat_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
    return p + 2;
}

static uint8_t *evformat_put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
    return p + 4;
}

static uint8_t *evformat_put64(uint8_t *p, uint64_t v)
{
    p = evformat_put32(p, (uint32_t)(v >> 32));
    return evformat_put32(p, (uint32_t)v);
}

/* ------------------------------------------------------------------------
 * Units
 * ------------------------------------------------------------------------ */

void elsi_unit_classify(const void *unit, size_t len, struct elsi_unit_info *info)
{
    const uint8_t *p = unit;

    info->kind = ELSI_UNIT_KIND_OTHER;
    info->cap = ELSI_CAP_GLOBAL;
    info->start_time = 0;
    info->end_time = 0;
    if (p == NULL)
        return;

    if (len >= 4 && evformat_get32(p) == ELSI_EVENT_HEADER_BEGIN) {
        info->kind = ELSI_UNIT_KIND_HEADER;
    } else if (len == 2 && evformat_get16(p) == ELSI_EVENT_DATA_END) {
        info->kind = ELSI_UNIT_KIND_END;
    } else if (len >= ELSI_BLOCK_MARKER_BYTES &&
               evformat_get16(p) == ELSI_EVENT_BLOCK_MARKER) {
        /* type:16 time:64 size:32 end_time:64 cap:16 */
        info->kind = ELSI_UNIT_KIND_BLOCK;
        info->start_time = evformat_get64(p + 2);
        info->end_time = evformat_get64(p + 14);
        info->cap = evformat_get16(p + 22);
    }
}

/* ------------------------------------------------------------------------
 * Notes
 *
 * A note is what GHC's own global buffer would hold if the RTS had posted
 * one log message into a fresh block: postBlockMarker() then postLogMsg(),
 * with closeBlockMarker() filling in the size (counted from the first byte
 * of the marker to the end of the block) and the end time.
 * ------------------------------------------------------------------------ */

/* EVENT_LOG_MSG: type:16 time:64 payload_size:16, then the message. */
#define EVFORMAT_LOG_MSG_HEADER_BYTES 12
/* The payload size is a 16-bit field. */
#define EVFORMAT_MSG_MAX 0xffffu

size_t elsi_note_size(size_t msg_len)
{
    if (msg_len > EVFORMAT_MSG_MAX)
        msg_len = EVFORMAT_MSG_MAX;
    return ELSI_BLOCK_MARKER_BYTES + EVFORMAT_LOG_MSG_HEADER_BYTES + msg_len;
}

size_t elsi_note_encode(void *buf, size_t buf_len, uint64_t timestamp,
                        const char *msg)
{
    if (msg == NULL)
        msg = "";
    /* strnlen: a message longer than the cut is never scanned to its end. */
    size_t msg_len = strnlen(msg, EVFORMAT_MSG_MAX);
    size_t total = elsi_note_size(msg_len);
    if (buf == NULL || buf_len < total)
        return 0;

    uint8_t *p = buf;
    p = evformat_put16(p, ELSI_EVENT_BLOCK_MARKER);
    p = evformat_put64(p, timestamp);
    p = evformat_put32(p, (uint32_t)total);   /* at most 65571: fits */
    p = evformat_put64(p, timestamp);         /* end time */
    p = evformat_put16(p, ELSI_CAP_GLOBAL);

    p = evformat_put16(p, ELSI_EVENT_LOG_MSG);
    p = evformat_put64(p, timestamp);
    p = evformat_put16(p, (uint16_t)msg_len);
    memcpy(p, msg, msg_len);
    return total;
}

/* ------------------------------------------------------------------------
 * The framer
 *
 * A state machine over "steps".  A step either assembles a small fixed
 * item (at most 8 bytes) in f->pending, or skips a counted run of bytes
 * (a description, extra info, an event payload) without storing it, so
 * memory stays O(1) whatever lengths the stream claims.  Lengths read from
 * the stream are 16 or 32 bits and are only ever subtracted from, never
 * added to a pointer or used to allocate.
 *
 * Transitions are eager: when an item completes, any zero-length skip that
 * follows is taken at once, so that after every feed() the counters and
 * elsi_framer_complete() describe exactly the bytes fed so far.
 * ------------------------------------------------------------------------ */

enum evformat_step {
    EVF_STEP_HDRB = 0,      /* "hdrb" */
    EVF_STEP_HETB,          /* "hetb" */
    EVF_STEP_ET_OR_HETE,    /* "etb\0" opens an entry, "hete" ends them */
    EVF_STEP_ET_HEAD,       /* type:16 size:16 desc_len:32 */
    EVF_STEP_ET_DESC,       /* skip the description */
    EVF_STEP_ET_EXTRA_LEN,  /* extra_len:32 */
    EVF_STEP_ET_EXTRA,      /* skip the extra info */
    EVF_STEP_ET_END,        /* "ete\0" */
    EVF_STEP_HDRE,          /* "hdre" */
    EVF_STEP_DATB,          /* "datb" */
    EVF_STEP_EV_TYPE,       /* type:16, or DATA_END */
    EVF_STEP_EV_TIME,       /* time:64 */
    EVF_STEP_EV_VARLEN,     /* payload_size:16 of a variable-size event */
    EVF_STEP_EV_PAYLOAD     /* skip the payload */
};

/* Marks in f->sizes[]; see evformat.h. */
#define EVF_SIZE_UNKNOWN  (-1)
#define EVF_SIZE_VARIABLE (-2)
/* An event-type entry's size field with this value means "variable"
 * (GHC writes EVENT_SIZE_DYNAMIC, -1, as a 16-bit word). */
#define EVF_WIRE_VARIABLE 0xffffu
/* A description or extra-info block longer than this is taken as garbage
 * rather than skipped: GHC's longest description is under 100 bytes. */
#define EVF_HEADER_STRING_MAX (1024u * 1024u)

#define EVF_NUM_TYPES 65536u

static int framer_error(struct elsi_framer *f, uint64_t at, const char *fmt, ...)
    ELSI_PRINTF(3, 4);

/* Enter the ERROR state with "offset N: <what>".  Returns ELS_EINVAL. */
static int framer_error(struct elsi_framer *f, uint64_t at, const char *fmt, ...)
{
    char what[sizeof f->error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    f->state = ELSI_FRAMER_ERROR;
    return elsi_fail(f->error, sizeof f->error, ELS_EINVAL,
                     "offset %llu: %s", (unsigned long long)at, what);
}

/* Next step assembles n bytes (1..sizeof f->pending). */
static void framer_expect(struct elsi_framer *f, int step, uint32_t n)
{
    f->step = step;
    f->need = n;
    f->pending_len = 0;
    f->item_start = f->offset;
}

static void framer_event_done(struct elsi_framer *f)
{
    if (f->cur_type == ELSI_EVENT_BLOCK_MARKER)
        f->blocks++;
    else
        f->events++;
    framer_expect(f, EVF_STEP_EV_TYPE, 2);
}

/* The skip of the current step is over (or was empty): move on. */
static void framer_skip_done(struct elsi_framer *f)
{
    switch (f->step) {
    case EVF_STEP_ET_DESC:
        framer_expect(f, EVF_STEP_ET_EXTRA_LEN, 4);
        break;
    case EVF_STEP_ET_EXTRA:
        framer_expect(f, EVF_STEP_ET_END, 4);
        break;
    case EVF_STEP_EV_PAYLOAD:
        framer_event_done(f);
        break;
    default:
        break;
    }
}

/* Next step skips n bytes. */
static void framer_skip(struct elsi_framer *f, int step, uint64_t n)
{
    f->step = step;
    f->need = 0;
    f->pending_len = 0;
    f->skip = n;
    if (n == 0)
        framer_skip_done(f);
}

/* Check a 4-byte magic in f->pending. */
static int framer_magic(struct elsi_framer *f, uint32_t want, const char *name)
{
    uint32_t got = evformat_get32(f->pending);
    if (got == want)
        return 0;
    return framer_error(f, f->item_start,
                        "expected \"%s\", found 0x%08x", name, (unsigned)got);
}

/* f->pending holds a complete item for f->step: check it and move on. */
static int framer_item(struct elsi_framer *f)
{
    const uint8_t *p = f->pending;
    int r;

    switch (f->step) {
    case EVF_STEP_HDRB:
        if ((r = framer_magic(f, ELSI_EVENT_HEADER_BEGIN, "hdrb")) < 0)
            return r;
        framer_expect(f, EVF_STEP_HETB, 4);
        return 0;

    case EVF_STEP_HETB:
        if ((r = framer_magic(f, ELSI_EVENT_HET_BEGIN, "hetb")) < 0)
            return r;
        framer_expect(f, EVF_STEP_ET_OR_HETE, 4);
        return 0;

    case EVF_STEP_ET_OR_HETE: {
        uint32_t got = evformat_get32(p);
        if (got == ELSI_EVENT_ET_BEGIN) {
            framer_expect(f, EVF_STEP_ET_HEAD, 8);
            return 0;
        }
        if (got == ELSI_EVENT_HET_END) {
            framer_expect(f, EVF_STEP_HDRE, 4);
            return 0;
        }
        return framer_error(f, f->item_start,
                            "expected \"etb\\0\" or \"hete\", found 0x%08x",
                            (unsigned)got);
    }

    case EVF_STEP_ET_HEAD: {
        uint16_t type = evformat_get16(p);
        uint16_t size = evformat_get16(p + 2);
        uint32_t desc_len = evformat_get32(p + 4);
        if (type == ELSI_EVENT_DATA_END)
            return framer_error(f, f->item_start,
                                "event type 65535 is reserved for DATA_END");
        if (desc_len > EVF_HEADER_STRING_MAX)
            return framer_error(f, f->item_start + 4,
                                "description of event type %u is %lu bytes "
                                "long (limit 1 MiB)", (unsigned)type,
                                (unsigned long)desc_len);
        f->et_type = type;
        f->et_size = size == EVF_WIRE_VARIABLE ? EVF_SIZE_VARIABLE : size;
        framer_skip(f, EVF_STEP_ET_DESC, desc_len);
        return 0;
    }

    case EVF_STEP_ET_EXTRA_LEN: {
        uint32_t extra_len = evformat_get32(p);
        if (extra_len > EVF_HEADER_STRING_MAX)
            return framer_error(f, f->item_start,
                                "extra info of event type %u is %lu bytes "
                                "long (limit 1 MiB)", (unsigned)f->et_type,
                                (unsigned long)extra_len);
        framer_skip(f, EVF_STEP_ET_EXTRA, extra_len);
        return 0;
    }

    case EVF_STEP_ET_END: {
        if ((r = framer_magic(f, ELSI_EVENT_ET_END, "ete\\0")) < 0)
            return r;
        /* A reader keeps one size per type; a second declaration that
         * disagrees leaves it unclear which one the events follow. */
        int32_t old = f->sizes[f->et_type];
        if (old == EVF_SIZE_UNKNOWN) {
            f->sizes[f->et_type] = f->et_size;
            f->event_types++;
        } else if (old != f->et_size) {
            return framer_error(f, f->item_start,
                                "event type %u declared again with another "
                                "size", (unsigned)f->et_type);
        }
        framer_expect(f, EVF_STEP_ET_OR_HETE, 4);
        return 0;
    }

    case EVF_STEP_HDRE:
        if ((r = framer_magic(f, ELSI_EVENT_HEADER_END, "hdre")) < 0)
            return r;
        framer_expect(f, EVF_STEP_DATB, 4);
        return 0;

    case EVF_STEP_DATB:
        if ((r = framer_magic(f, ELSI_EVENT_DATA_BEGIN, "datb")) < 0)
            return r;
        f->state = ELSI_FRAMER_DATA;
        framer_expect(f, EVF_STEP_EV_TYPE, 2);
        return 0;

    case EVF_STEP_EV_TYPE: {
        uint16_t type = evformat_get16(p);
        if (type == ELSI_EVENT_DATA_END) {
            f->state = ELSI_FRAMER_ENDED;
            f->need = 0;
            f->pending_len = 0;
            return 0;
        }
        if (f->sizes[type] == EVF_SIZE_UNKNOWN)
            return framer_error(f, f->item_start,
                                "event type %u was not declared in the header",
                                (unsigned)type);
        f->cur_type = type;
        framer_expect(f, EVF_STEP_EV_TIME, 8);
        return 0;
    }

    case EVF_STEP_EV_TIME: {
        int32_t size = f->sizes[f->cur_type];
        if (size == EVF_SIZE_VARIABLE)
            framer_expect(f, EVF_STEP_EV_VARLEN, 2);
        else
            framer_skip(f, EVF_STEP_EV_PAYLOAD, (uint64_t)size);
        return 0;
    }

    case EVF_STEP_EV_VARLEN:
        framer_skip(f, EVF_STEP_EV_PAYLOAD, evformat_get16(p));
        return 0;

    default:
        return framer_error(f, f->item_start, "internal error: step %d",
                            f->step);
    }
}

int elsi_framer_init(struct elsi_framer *f)
{
    memset(f, 0, sizeof *f);
    f->sizes = malloc(EVF_NUM_TYPES * sizeof f->sizes[0]);
    if (f->sizes == NULL)
        return ELS_ENOMEM;
    for (size_t i = 0; i < EVF_NUM_TYPES; i++)
        f->sizes[i] = EVF_SIZE_UNKNOWN;
    f->state = ELSI_FRAMER_HEADER;
    framer_expect(f, EVF_STEP_HDRB, 4);
    return 0;
}

void elsi_framer_destroy(struct elsi_framer *f)
{
    free(f->sizes);
    f->sizes = NULL;
}

int elsi_framer_feed(struct elsi_framer *f, const void *buf, size_t len)
{
    const uint8_t *p = buf;

    if (f->state == ELSI_FRAMER_ERROR)
        return ELS_EINVAL;
    if (f->sizes == NULL)
        return framer_error(f, f->offset, "framer used without init");

    while (len > 0) {
        if (f->state == ELSI_FRAMER_ENDED)
            return framer_error(f, f->offset, "data after DATA_END");

        if (f->need == 0) {
            /* Skipping: f->skip > 0 here, since empty skips are taken at
             * once by framer_skip(). */
            size_t take = f->skip < len ? (size_t)f->skip : len;
            f->skip -= take;
            f->offset += take;
            p += take;
            len -= take;
            if (f->skip == 0)
                framer_skip_done(f);
            continue;
        }

        size_t take = f->need - f->pending_len;
        if (take > len)
            take = len;
        memcpy(f->pending + f->pending_len, p, take);
        f->pending_len += (uint32_t)take;
        f->offset += take;
        p += take;
        len -= take;
        if (f->pending_len == f->need) {
            int r = framer_item(f);
            if (r < 0)
                return r;
        }
    }
    return 0;
}

bool elsi_framer_complete(const struct elsi_framer *f)
{
    return f->state == ELSI_FRAMER_ENDED;
}
