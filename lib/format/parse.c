/*
 * parse.c: the incremental eventlog parser of <eventlog-sink/parse.h>.
 *
 * Follows a stream fed in pieces of any size: the header and its
 * event-type table, then events by their declared sizes, each delivered
 * with the capability of its block, then DATA_END (and, if asked, a new
 * header after it).  It checks structure only: magics, that every event's
 * tag was declared, that each event is as long as declared, DATA_END at an
 * event boundary.  Payload meaning is the decoders' job (parse_decode.c),
 * and timestamps, ordering and block sizes are a full reader's.  Unit
 * classification for the writer and the note encoder stay in evformat.c.
 *
 * Memory: one allocation at els_parser_new() holds the per-tag tables and
 * a buffer for one event of the largest size, so an event cut across
 * pieces is assembled without allocating; only the header's descriptions
 * grow an arena, capped in total.  Lengths read from the stream are 16 or
 * 32 bits, compared against what is left, and never added to a pointer
 * before that.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eventlog-sink.h"
#include "eventlog-sink/parse.h"
#include "format/evformat.h"
#include "base/log.h"

/* Marks in p->sizes[]: a tag the header did not declare. */
#define PARSE_SIZE_UNKNOWN INT32_MIN
/* An event-type entry's size field with this value means "variable"
 * (GHC writes EVENT_SIZE_DYNAMIC, -1, as a 16-bit word). */
#define PARSE_WIRE_VARIABLE 0xffffu
/* A description or extra-info block longer than this is taken as garbage
 * rather than skipped: GHC's longest description is under 100 bytes. */
#define PARSE_HEADER_STRING_MAX (1024u * 1024u)
/* Total description bytes kept per header; past it descriptions are "".
 * Bounds the arena whatever a hostile header declares. */
#define PARSE_DESC_ARENA_MAX (1024u * 1024u)
#define PARSE_NUM_TAGS 65536u
/* desc_off[] of an entry whose description did not fit the arena. */
#define PARSE_DESC_NONE UINT32_MAX
#define PARSE_EVENT_MAX 0xffffu
#define PARSE_CALLBACKS_MAX_SIZE 4096u

enum parse_select {
    SELECT_SKIP = 0,
    SELECT_ALL,         /* every event of the tag */
    SELECT_PREFIX       /* those whose payload begins with a prefix */
};

enum parse_step {
    STEP_HDRB = 0,      /* "hdrb" */
    STEP_HETB,          /* "hetb" */
    STEP_ET_OR_HETE,    /* "etb\0" opens an entry, "hete" ends them */
    STEP_ET_HEAD,       /* tag:16 size:16 desc_len:32 */
    STEP_ET_DESC,       /* the description: kept up to the cut, rest skipped */
    STEP_ET_EXTRA_LEN,  /* extra_len:32 */
    STEP_ET_EXTRA,      /* skip the extra info */
    STEP_ET_END,        /* "ete\0" */
    STEP_HDRE,          /* "hdre" */
    STEP_DATB,          /* "datb" */
    STEP_EV_TAG,        /* tag:16, or DATA_END */
    STEP_EV_TIME,       /* time:64 */
    STEP_EV_VARLEN,     /* payload_size:16 of a variable-size event */
    STEP_EV_PAYLOAD,    /* the payload */
    STEP_NONE           /* ENDED or FAILED */
};

struct els_parser {
    struct els_parse_callbacks cb;
    void *user;
    unsigned flags;

    enum els_parse_where where;
    int step;
    uint64_t offset;
    uint64_t item_offset;
    uint64_t events, blocks, streams;
    char error[160];

    /* The fixed item being assembled (at most 8 bytes: a timestamp), or
     * the bytes still to skip or collect. */
    uint8_t pending[8];
    uint32_t pending_len;
    uint32_t need;
    uint64_t skip;

    /* The event-type entry being read. */
    uint16_t et_tag;
    int32_t et_size;
    uint32_t et_desc_off;
    uint32_t et_desc_room;      /* bytes reserved for it in the arena */
    uint32_t et_desc_kept;

    /* The current stream's table: types[] in header order, desc_off[]
     * beside it until the header ends (the arena may move while it
     * grows), then each types[i].desc points into the arena. */
    struct els_event_type *types;
    uint32_t *desc_off;
    size_t n_types, cap_types;
    char *descs;
    size_t descs_len, descs_cap;
    bool table_ready;           /* types[].desc published */

    /* The event being read. */
    struct els_event ev;
    uint32_t payload_have;

    /* The enclosing block: its capability and where it ends. */
    int32_t block_cap;
    uint64_t block_end;

    /* The selection (Note [Selected events]): select[tag] is one of
     * SELECT_*, and prefixes[] holds the prefixes of SELECT_PREFIX tags. */
    struct {
        uint16_t tag;
        uint16_t len;
        uint8_t bytes[ELS_PARSE_PREFIX_MAX];
    } prefixes[ELS_PARSE_PREFIXES_MAX];
    unsigned n_prefixes;
    uint64_t prefix_first[4];   /* the first bytes of prefixes[], a bit each */
    bool selecting;

    int32_t sizes[PARSE_NUM_TAGS];         /* declared size per tag */
    uint8_t select[PARSE_NUM_TAGS];
    uint16_t type_index[PARSE_NUM_TAGS];   /* index into types[] */
    uint8_t evbuf[PARSE_EVENT_MAX];        /* an event cut across pieces */
};

static int parse_error(struct els_parser *p, uint64_t at, const char *fmt, ...)
    ELSI_PRINTF(3, 4);

/* Enter FAILED with "offset N: <what>".  Returns ELS_EINVAL. */
static int parse_error(struct els_parser *p, uint64_t at, const char *fmt, ...)
{
    char what[sizeof p->error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    p->where = ELS_PARSE_FAILED;
    p->step = STEP_NONE;
    p->item_offset = at;
    return elsi_fail(p->error, sizeof p->error, ELS_EINVAL,
                     "offset %llu: %s", (unsigned long long)at, what);
}

/* Next step assembles n bytes (1..sizeof p->pending). */
static void parse_expect(struct els_parser *p, int step, uint32_t n)
{
    p->step = step;
    p->need = n;
    p->pending_len = 0;
}

/* Next step skips (or, for a description or payload, collects) n bytes.
 * An empty one is finished by the caller through parse_run_done(). */
static void parse_run(struct els_parser *p, int step, uint64_t n)
{
    p->step = step;
    p->need = 0;
    p->pending_len = 0;
    p->skip = n;
}

static void parse_forget_types(struct els_parser *p)
{
    for (size_t i = 0; i < p->n_types; i++)
        p->sizes[p->types[i].tag] = PARSE_SIZE_UNKNOWN;
    p->n_types = 0;
    p->descs_len = 0;
    p->table_ready = false;
}

static void parse_begin_stream(struct els_parser *p)
{
    parse_forget_types(p);
    p->block_cap = -1;
    p->block_end = 0;
    p->where = ELS_PARSE_IN_HEADER;
    p->item_offset = p->offset;
    parse_expect(p, STEP_HDRB, 4);
}

/* ------------------------------------------------------------------------
 * The event-type table
 * ------------------------------------------------------------------------ */

/* Room for one more entry.  0 or ELS_ENOMEM (a header; not the hot path). */
static int parse_types_grow(struct els_parser *p)
{
    if (p->n_types < p->cap_types)
        return 0;
    size_t cap = p->cap_types ? p->cap_types * 2 : 128;
    struct els_event_type *t = realloc(p->types, cap * sizeof *t);
    if (t == NULL)
        return ELS_ENOMEM;
    p->types = t;
    uint32_t *o = realloc(p->desc_off, cap * sizeof *o);
    if (o == NULL)
        return ELS_ENOMEM;
    p->desc_off = o;
    p->cap_types = cap;
    return 0;
}

/* Reserve the description of the entry being read: up to
 * ELS_PARSE_DESC_MAX bytes plus its NUL, while the arena's cap allows
 * (past it the entry's description is ""). */
static int parse_desc_begin(struct els_parser *p, uint32_t desc_len)
{
    uint32_t keep = desc_len < ELS_PARSE_DESC_MAX ? desc_len : ELS_PARSE_DESC_MAX;
    size_t want = p->descs_len + keep + 1;
    p->et_desc_off = PARSE_DESC_NONE;
    p->et_desc_room = 0;
    p->et_desc_kept = 0;
    if (want > PARSE_DESC_ARENA_MAX)
        return 0;
    if (want > p->descs_cap) {
        size_t cap = p->descs_cap ? p->descs_cap : 4096;
        while (cap < want)
            cap *= 2;
        char *d = realloc(p->descs, cap);
        if (d == NULL)
            return ELS_ENOMEM;
        p->descs = d;
        p->descs_cap = cap;
    }
    p->et_desc_off = (uint32_t)p->descs_len;
    p->et_desc_room = keep;
    p->descs[p->descs_len] = '\0';
    p->descs_len = want;
    return 0;
}

/* The header is complete: point each entry at its description. */
static void parse_types_publish(struct els_parser *p)
{
    static const char empty[] = "";
    for (size_t i = 0; i < p->n_types; i++)
        p->types[i].desc = p->desc_off[i] == PARSE_DESC_NONE
                           ? empty : p->descs + p->desc_off[i];
    p->table_ready = true;
}

/* ------------------------------------------------------------------------
 * Events
 * ------------------------------------------------------------------------ */

/* Is an event of tag with this payload delivered (Note [Selected
 * events])? */
static inline bool parse_selected(const struct els_parser *p, uint16_t tag,
                                  const uint8_t *pl, size_t len)
{
    uint8_t how = p->select[tag];
    if (how != SELECT_PREFIX)
        return how == SELECT_ALL;
    /* Most text starts with no prefix's first byte: one test, no loop. */
    if (len == 0 || !(p->prefix_first[pl[0] >> 6] >> (pl[0] & 63) & 1))
        return false;
    for (unsigned i = 0; i < p->n_prefixes; i++) {
        size_t n = p->prefixes[i].len;
        if (p->prefixes[i].tag == tag && len >= n &&
            memcmp(pl, p->prefixes[i].bytes, n) == 0)
            return true;
    }
    return false;
}

/* Deliver the current event with payload pl, if selected; returns the
 * callback's code.  Inlined: it is most of the work per delivered event. */
static inline __attribute__((always_inline)) int parse_deliver(struct els_parser *p, const uint8_t *pl)
{
    struct els_event *ev = &p->ev;
    ev->payload = pl;
    if (ev->tag == ELSI_EVENT_BLOCK_MARKER) {
        /* size:32 end_time:64 cap:16; size counts from the marker's tag.
         * A marker cut shorter than that by its declared size opens no
         * block (the events after it are global). */
        p->blocks++;
        if (ev->payload_len >= 14) {
            uint16_t cap = elsi_be16(pl + 12);
            p->block_cap = cap == ELSI_CAP_GLOBAL ? -1 : (int32_t)cap;
            p->block_end = ev->offset + elsi_be32(pl);
        } else {
            p->block_cap = -1;
            p->block_end = 0;
        }
    } else {
        p->events++;
    }
    ev->cap = ev->offset < p->block_end ? p->block_cap : -1;
    parse_expect(p, STEP_EV_TAG, 2);
    p->where = ELS_PARSE_AT_EVENT;
    p->item_offset = p->offset;
    if (p->cb.on_event == NULL || !parse_selected(p, ev->tag, pl, ev->payload_len))
        return 0;
    return p->cb.on_event(p->user, ev);
}

/* A description, extra info or payload run of length 0, or the end of
 * one: move on.  Returns a callback's code for a payload. */
static int parse_run_done(struct els_parser *p)
{
    switch (p->step) {
    case STEP_ET_DESC:
        parse_expect(p, STEP_ET_EXTRA_LEN, 4);
        return 0;
    case STEP_ET_EXTRA:
        parse_expect(p, STEP_ET_END, 4);
        return 0;
    case STEP_EV_PAYLOAD:
        return parse_deliver(p, p->evbuf);
    default:
        return 0;
    }
}

/* Check a 4-byte magic in p->pending. */
static int parse_magic(struct els_parser *p, uint32_t want, const char *name)
{
    uint32_t got = elsi_be32(p->pending);
    if (got == want)
        return 0;
    return parse_error(p, p->offset - 4, "expected \"%s\", found 0x%08x",
                       name, (unsigned)got);
}

/* The header's fixed markers: each is checked, then the next step is
 * due.  (datb and ete\0 do more, in their own steps.) */
static const struct {
    uint32_t want;
    const char *name;
    enum parse_step next;
} parse_markers[] = {
    [STEP_HDRB] = { ELSI_EVENT_HEADER_BEGIN, "hdrb", STEP_HETB },
    [STEP_HETB] = { ELSI_EVENT_HET_BEGIN, "hetb", STEP_ET_OR_HETE },
    [STEP_HDRE] = { ELSI_EVENT_HEADER_END, "hdre", STEP_DATB },
};

static int parse_marker(struct els_parser *p)
{
    int r = parse_magic(p, parse_markers[p->step].want, parse_markers[p->step].name);
    if (r < 0)
        return r;
    parse_expect(p, parse_markers[p->step].next, 4);
    return 0;
}

/* An event type's tag, size and description length. */
static int parse_et_head(struct els_parser *p, const uint8_t *b, uint64_t at)
{
    uint16_t tag = elsi_be16(b);
    uint16_t size = elsi_be16(b + 2);
    uint32_t desc_len = elsi_be32(b + 4);
    if (tag == ELSI_EVENT_DATA_END)
        return parse_error(p, at, "event type 65535 is reserved for "
                           "DATA_END");
    if (desc_len > PARSE_HEADER_STRING_MAX)
        return parse_error(p, at + 4, "description of event type %u is "
                           "%lu bytes long (limit 1 MiB)", (unsigned)tag,
                           (unsigned long)desc_len);
    p->et_tag = tag;
    p->et_size = size == PARSE_WIRE_VARIABLE ? ELS_EVENT_SIZE_VARIABLE
                                             : (int32_t)size;
    if (parse_desc_begin(p, desc_len) < 0)
        return parse_error(p, at, "out of memory for the event-type "
                           "table");
    parse_run(p, STEP_ET_DESC, desc_len);
    return desc_len == 0 ? parse_run_done(p) : 0;
}

/* The end of an event type: enter it in the table. */
static int parse_et_end(struct els_parser *p, uint64_t at)
{
    int r;
    if ((r = parse_magic(p, ELSI_EVENT_ET_END, "ete\\0")) < 0)
        return r;
    /* A reader keeps one size per tag; a second declaration that
     * disagrees leaves it unclear which one the events follow. */
    int32_t old = p->sizes[p->et_tag];
    if (old == PARSE_SIZE_UNKNOWN) {
        if (parse_types_grow(p) < 0)
            return parse_error(p, at, "out of memory for the event-type "
                               "table");
        struct els_event_type *t = &p->types[p->n_types];
        t->tag = p->et_tag;
        t->size = p->et_size;
        t->desc = NULL;
        p->desc_off[p->n_types] = p->et_desc_off;
        p->type_index[p->et_tag] = (uint16_t)p->n_types;
        p->sizes[p->et_tag] = p->et_size;
        p->n_types++;
    } else if (old != p->et_size) {
        return parse_error(p, at, "event type %u declared again with "
                           "another size", (unsigned)p->et_tag);
    }
    parse_expect(p, STEP_ET_OR_HETE, 4);
    return 0;
}

/* datb: the header is complete and the events begin. */
static int parse_datb(struct els_parser *p)
{
    int r;
    if ((r = parse_magic(p, ELSI_EVENT_DATA_BEGIN, "datb")) < 0)
        return r;
    parse_types_publish(p);
    p->streams++;
    parse_expect(p, STEP_EV_TAG, 2);
    p->where = ELS_PARSE_AT_EVENT;
    p->item_offset = p->offset;
    return p->cb.on_header != NULL ? p->cb.on_header(p->user, p) : 0;
}

/* An event's tag, or the end of the data. */
static int parse_ev_tag(struct els_parser *p, const uint8_t *b, uint64_t at)
{
    uint16_t tag = elsi_be16(b);
    if (tag == ELSI_EVENT_DATA_END) {
        p->where = ELS_PARSE_ENDED;
        p->step = STEP_NONE;
        p->item_offset = at;
        return p->cb.on_end != NULL ? p->cb.on_end(p->user, at) : 0;
    }
    if (p->sizes[tag] == PARSE_SIZE_UNKNOWN)
        return parse_error(p, at, "event type %u was not declared in the "
                           "header", (unsigned)tag);
    p->ev.tag = tag;
    p->ev.offset = at;
    parse_expect(p, STEP_EV_TIME, 8);
    return 0;
}

/* An event's payload of size bytes is next. */
static int parse_ev_payload(struct els_parser *p, uint64_t size)
{
    p->ev.payload_len = (size_t)size;
    p->payload_have = 0;
    parse_run(p, STEP_EV_PAYLOAD, size);
    return size == 0 ? parse_run_done(p) : 0;
}

/* p->pending holds a complete item for p->step: check it and move on.
 * 0, ELS_EINVAL, ELS_ENOMEM, or a callback's code. */
static int parse_item(struct els_parser *p)
{
    const uint8_t *b = p->pending;
    uint64_t at = p->offset - p->need;

    switch (p->step) {
    case STEP_HDRB:
    case STEP_HETB:
    case STEP_HDRE:
        return parse_marker(p);

    case STEP_ET_OR_HETE: {
        uint32_t got = elsi_be32(b);
        if (got == ELSI_EVENT_ET_BEGIN) {
            parse_expect(p, STEP_ET_HEAD, 8);
            return 0;
        }
        if (got == ELSI_EVENT_HET_END) {
            parse_expect(p, STEP_HDRE, 4);
            return 0;
        }
        return parse_error(p, at, "expected \"etb\\0\" or \"hete\", found "
                           "0x%08x", (unsigned)got);
    }
    case STEP_ET_HEAD:
        return parse_et_head(p, b, at);
    case STEP_ET_EXTRA_LEN: {
        uint32_t extra_len = elsi_be32(b);
        if (extra_len > PARSE_HEADER_STRING_MAX)
            return parse_error(p, at, "extra info of event type %u is %lu "
                               "bytes long (limit 1 MiB)", (unsigned)p->et_tag,
                               (unsigned long)extra_len);
        parse_run(p, STEP_ET_EXTRA, extra_len);
        return extra_len == 0 ? parse_run_done(p) : 0;
    }
    case STEP_ET_END:
        return parse_et_end(p, at);
    case STEP_DATB:
        return parse_datb(p);

    case STEP_EV_TAG:
        return parse_ev_tag(p, b, at);
    case STEP_EV_TIME: {
        p->ev.time = elsi_be64(b);
        int32_t size = p->sizes[p->ev.tag];
        if (size == ELS_EVENT_SIZE_VARIABLE) {
            parse_expect(p, STEP_EV_VARLEN, 2);
            return 0;
        }
        return parse_ev_payload(p, (uint64_t)size);
    }
    case STEP_EV_VARLEN:
        return parse_ev_payload(p, elsi_be16(b));

    default:
        return parse_error(p, at, "internal error: step %d", p->step);
    }
}

/* Consume part of a run (p->need == 0) from b[0..len): store description
 * bytes and payload bytes, skip the rest.  Returns the bytes taken; *rc
 * gets a callback's code when the run ends. */
static size_t parse_take_run(struct els_parser *p, const uint8_t *b, size_t len,
                             int *rc)
{
    size_t take = p->skip < len ? (size_t)p->skip : len;
    *rc = 0;
    if (p->step == STEP_EV_PAYLOAD) {
        if (p->payload_have == 0 && take == p->ev.payload_len) {
            /* The whole payload is in this piece: no copy. */
            p->offset += take;
            p->skip = 0;
            *rc = parse_deliver(p, b);
            return take;
        }
        memcpy(p->evbuf + p->payload_have, b, take);
        p->payload_have += (uint32_t)take;
    } else if (p->step == STEP_ET_DESC && p->et_desc_kept < p->et_desc_room) {
        size_t room = p->et_desc_room - p->et_desc_kept;
        size_t n = take < room ? take : room;
        char *d = p->descs + p->et_desc_off + p->et_desc_kept;
        memcpy(d, b, n);
        d[n] = '\0';
        p->et_desc_kept += (uint32_t)n;
    }
    p->offset += take;
    p->skip -= take;
    if (p->skip == 0)
        *rc = parse_run_done(p);
    return take;
}

/* The events wholly inside b[0..len), from an event boundary: read them
 * without the byte-wise steps (Note [The whole-event path]), skipping
 * those not selected in a tight loop (Note [Selected events]).  Returns
 * the bytes taken, ending at the first event the slow path must take (a
 * cut event, DATA_END, an undeclared tag: the steps give those their
 * meaning) or after a callback that returned non-zero (*rc). */
static size_t parse_whole_events(struct els_parser *p, const uint8_t *b, size_t len,
                                 int *rc)
{
    const uint64_t base = p->offset;
    const bool deliver_none = p->cb.on_event == NULL;  /* a checker (recv) */
    const uint8_t *e = b, *const end = b + len;
    uint64_t skipped = 0;
    *rc = 0;
    /* A pointer, not an index: the next event's place hangs on this one's
     * size, and the loop is as fast as that chain of loads is short. */
    while (end - e >= 10) {
        uint16_t tag = elsi_be16(e);
        int32_t size = p->sizes[tag];
        const uint8_t *pl = e + 10;
        if (size < 0) {
            if (size != ELS_EVENT_SIZE_VARIABLE || end - e < 12)
                break;          /* undeclared, or its size is cut */
            size = elsi_be16(e + 10);
            pl = e + 12;
        }
        if (end - pl < size || tag == ELSI_EVENT_DATA_END)
            break;
        const uint8_t *next = pl + size;
        uint8_t how = p->select[tag];
        if (tag != ELSI_EVENT_BLOCK_MARKER &&
            (deliver_none || (how != SELECT_ALL &&
                              (how == SELECT_SKIP ||
                               !parse_selected(p, tag, pl, (size_t)size))))) {
            e = next;
            skipped++;
            continue;
        }
        p->ev.tag = tag;
        p->ev.offset = base + (uint64_t)(e - b);
        p->ev.time = elsi_be64(e + 2);
        p->ev.payload_len = (size_t)size;
        p->offset = base + (uint64_t)(next - b);
        e = next;
        if ((*rc = parse_deliver(p, pl)) != 0)
            break;
    }
    size_t done = (size_t)(e - b);
    p->offset = base + done;
    p->item_offset = p->offset;
    p->events += skipped;
    return done;
}

/*
 * Note [The whole-event path]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * The steps read an event in up to four pieces (tag, time, size,
 * payload), each through p->pending, so that a stream can be fed in
 * pieces of any size.  Fed whole blocks, as the writer's evaluator and the
 * monitors mostly are, nearly every event lies inside the piece: it is
 * then read in one go, with the same checks and the same callback, and
 * the steps are left exactly as the last step of the slow path leaves
 * them (parse_deliver()).  Anything else falls through to the steps.
 *
 * Note [Selected events]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * A flight recorder's triggers read every unit of a program posting
 * millions of events a second, and want perhaps one event in a million.
 * A callback per event cost them several times the walk itself, so the
 * parser can be told which events to deliver (els_parser_select()): by
 * tag, and for text events by the prefix of their payload.  On the
 * whole-event path a skipped event costs its tag, its size and one table
 * load; on the steps it is checked in parse_deliver().  Either way it is
 * checked and counted like any other, and a block marker always does its
 * work (the capability of the events after it) even when not delivered.
 * Without a selection every entry of select[] is SELECT_ALL, so the
 * check costs nothing extra.  A parser without an on_event callback
 * (recv checking what it copies) skips every event the same way: on a
 * two-core machine the consumer's CPU is the program's.
 */

int els_parser_feed(struct els_parser *p, const void *buf, size_t len,
                    size_t *used)
{
    const uint8_t *b = buf;
    size_t done = 0;
    int rc = 0;

    if (used != NULL)
        *used = 0;
    if (p == NULL || (buf == NULL && len > 0))
        return ELS_EINVAL;
    if (p->where == ELS_PARSE_FAILED)
        return ELS_EINVAL;

    while (done < len && rc == 0) {
        if (p->where == ELS_PARSE_ENDED) {
            if (!(p->flags & ELS_PARSE_RESTART)) {
                rc = parse_error(p, p->offset, "data after DATA_END");
                break;
            }
            parse_begin_stream(p);
        }
        if (p->where == ELS_PARSE_AT_START)
            parse_begin_stream(p);

        if (p->step == STEP_EV_TAG && p->pending_len == 0) {
            size_t n = parse_whole_events(p, b + done, len - done, &rc);
            if (n > 0) {
                done += n;
                continue;
            }
        }
        if (p->need == 0) {
            /* A run: never empty here, since empty runs end at once. */
            done += parse_take_run(p, b + done, len - done, &rc);
            continue;
        }
        if (p->where == ELS_PARSE_AT_EVENT && p->pending_len == 0) {
            p->where = ELS_PARSE_IN_EVENT;
            p->item_offset = p->offset;
        }
        size_t take = p->need - p->pending_len;
        if (take > len - done)
            take = len - done;
        memcpy(p->pending + p->pending_len, b + done, take);
        p->pending_len += (uint32_t)take;
        p->offset += take;
        done += take;
        if (p->pending_len == p->need)
            rc = parse_item(p);
    }
    if (used != NULL)
        *used = done;
    return rc;
}

/* ------------------------------------------------------------------------
 * Life cycle and queries
 * ------------------------------------------------------------------------ */

int els_parser_new(struct els_parser **out, const struct els_parse_callbacks *cb,
                   void *user, unsigned flags)
{
    if (out == NULL || (flags & ~ELS_PARSE_RESTART) != 0)
        return ELS_EINVAL;
    /* As for sink tables: a caller's struct may be older (smaller) or
     * newer (larger) than ours; garbage is neither. */
    if (cb != NULL && (cb->struct_size < ELS_PARSE_CALLBACKS_MIN_SIZE ||
                       cb->struct_size > PARSE_CALLBACKS_MAX_SIZE))
        return ELS_EVERSION;
    struct els_parser *p = malloc(sizeof *p);
    if (p == NULL)
        return ELS_ENOMEM;
    memset(p, 0, offsetof(struct els_parser, sizes));
    for (size_t i = 0; i < PARSE_NUM_TAGS; i++)
        p->sizes[i] = PARSE_SIZE_UNKNOWN;
    memset(p->select, SELECT_ALL, sizeof p->select);
    if (cb != NULL)
        memcpy(&p->cb, cb, cb->struct_size < sizeof p->cb ? cb->struct_size
                                                           : sizeof p->cb);
    p->user = user;
    p->flags = flags;
    els_parser_reset(p);
    *out = p;
    return 0;
}

void els_parser_free(struct els_parser *p)
{
    if (p == NULL)
        return;
    free(p->types);
    free(p->desc_off);
    free(p->descs);
    free(p);
}

void els_parser_reset(struct els_parser *p)
{
    parse_forget_types(p);
    p->where = ELS_PARSE_AT_START;
    p->step = STEP_HDRB;
    p->offset = p->item_offset = 0;
    p->events = p->blocks = p->streams = 0;
    p->error[0] = '\0';
    p->block_cap = -1;
    p->block_end = 0;
    parse_expect(p, STEP_HDRB, 4);
}

int els_parser_select(struct els_parser *p, uint16_t tag, const void *prefix,
                      size_t prefix_len)
{
    if (p == NULL || (prefix == NULL && prefix_len > 0) ||
        prefix_len > ELS_PARSE_PREFIX_MAX ||
        (prefix_len > 0 && p->n_prefixes == ELS_PARSE_PREFIXES_MAX))
        return ELS_EINVAL;
    if (!p->selecting) {
        memset(p->select, SELECT_SKIP, sizeof p->select);
        p->n_prefixes = 0;
        memset(p->prefix_first, 0, sizeof p->prefix_first);
        p->selecting = true;
    }
    if (prefix_len == 0) {
        p->select[tag] = SELECT_ALL;
    } else if (p->select[tag] != SELECT_ALL) {
        p->select[tag] = SELECT_PREFIX;
        p->prefixes[p->n_prefixes].tag = tag;
        p->prefixes[p->n_prefixes].len = (uint16_t)prefix_len;
        memcpy(p->prefixes[p->n_prefixes].bytes, prefix, prefix_len);
        p->n_prefixes++;
        uint8_t first = *(const uint8_t *)prefix;
        p->prefix_first[first >> 6] |= (uint64_t)1 << (first & 63);
    }
    return 0;
}

void els_parser_select_all(struct els_parser *p)
{
    memset(p->select, SELECT_ALL, sizeof p->select);
    p->n_prefixes = 0;
    memset(p->prefix_first, 0, sizeof p->prefix_first);
    p->selecting = false;
}

void els_parser_status(const struct els_parser *p, struct els_parse_status *out)
{
    out->where = p->where;
    out->offset = p->offset;
    out->item_offset = p->where == ELS_PARSE_AT_START ||
                       p->where == ELS_PARSE_AT_EVENT ? p->offset
                                                      : p->item_offset;
    out->events = p->events;
    out->blocks = p->blocks;
    out->streams = p->streams;
    out->error = p->where == ELS_PARSE_FAILED ? p->error : "";
}

const char *els_parse_where_name(enum els_parse_where where)
{
    static const char *const names[] = {
        [ELS_PARSE_AT_START] = "at-start",
        [ELS_PARSE_IN_HEADER] = "in-header",
        [ELS_PARSE_AT_EVENT] = "at-event",
        [ELS_PARSE_IN_EVENT] = "in-event",
        [ELS_PARSE_ENDED] = "ended",
        [ELS_PARSE_FAILED] = "failed",
    };
    if ((unsigned)where >= sizeof names / sizeof names[0])
        return "unknown";
    return names[where];
}

/* The table is readable from a header's "datb" until the next header
 * begins: during a header the descriptions are not published yet. */
static bool parse_table_ready(const struct els_parser *p)
{
    return p->table_ready;
}

size_t els_parser_event_types(const struct els_parser *p,
                              const struct els_event_type **types)
{
    if (!parse_table_ready(p)) {
        *types = NULL;
        return 0;
    }
    *types = p->types;
    return p->n_types;
}

const struct els_event_type *els_parser_event_type(const struct els_parser *p,
                                                   uint16_t tag)
{
    if (!parse_table_ready(p) || p->sizes[tag] == PARSE_SIZE_UNKNOWN)
        return NULL;
    return &p->types[p->type_index[tag]];
}
