/*
 * fuzz_parse.c: libFuzzer target for the incremental parser and its
 * decoders (lib/format/parse.c, parse_decode.c) and the unit classifier
 * (lib/format/evformat.c): the code that reads eventlog bytes from outside.
 * `eventlog-sink recv` runs every byte it receives through the parser, a
 * live monitor decodes every event, and the writer classifies every unit
 * the RTS hands it.
 *
 * Input: byte 0's low 3 bits say how many split sizes follow (0 to 7),
 * each one byte (a piece of 1 to 256 bytes); its bit 7 asks for
 * ELS_PARSE_RESTART; the rest is the stream.  The stream is fed four
 * ways, each into its own parser: in one call, in pieces of the chosen
 * sizes (cycling), one byte at a time (for streams up to 16 KiB), and in
 * pieces into a parser with a selection (els_parser_select(): tags and
 * text prefixes).
 * Every piece is copied into an exactly sized heap block of its own, so a
 * read past the end of a piece is an AddressSanitizer report.  Every event
 * delivered goes through els_event_decode() and els_note_decode(), whose
 * strings must lie inside the payload.  Properties: the parsers see
 * the same events (a digest of tag, time, capability, offset and payload;
 * for the selecting one, those of the others the selection keeps, and no
 * other) and end in the same status with the same message; the return code
 * agrees with the status; without an error all bytes are consumed; once
 * failed every later call fails and nothing changes; without the restart
 * flag one byte after DATA_END is an error; the message is one printable
 * line.  Whether the parser's verdict on real streams is ghc-events' is
 * tests/tools/test_parse_ghc_events.sh's job, not this target's.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eventlog-sink.h"
#include "eventlog-sink/parse.h"
#include "format/evformat.h"
#include "fuzz.h"

/* Byte-at-a-time feeding costs one call per byte: bounded. */
#define FUZZ_PARSE_BYTEWISE_MAX (16u * 1024)

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fuzz_seen {
    uint64_t digest;
    uint64_t events;
    /* The same over the events FUZZ_SELECTED() keeps. */
    uint64_t sel_digest;
    uint64_t sel_events;
};

static uint8_t *fuzz_parse_one;
/* A parser holds about 520 KiB of tables; filling them per input would
 * cost more than parsing.  Two parsers (plain and restarting) per way of
 * feeding are made once and reset per input; the fourth way selects
 * (fuzz_select()). */
#define FUZZ_WAYS 4
#define FUZZ_SELECTING 3
static struct els_parser *fuzz_parsers[FUZZ_WAYS][2];
static struct fuzz_seen fuzz_seen[FUZZ_WAYS];

static void fuzz_mix(uint64_t *digest, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        *digest = (*digest ^ b[i]) * 0x100000001b3ull;
}

static void fuzz_mix_event(uint64_t *d, const struct els_event *ev)
{
    fuzz_mix(d, &ev->tag, sizeof ev->tag);
    fuzz_mix(d, &ev->time, sizeof ev->time);
    fuzz_mix(d, &ev->cap, sizeof ev->cap);
    fuzz_mix(d, &ev->offset, sizeof ev->offset);
    fuzz_mix(d, &ev->payload_len, sizeof ev->payload_len);
    if (ev->payload_len > 0)
        fuzz_mix(d, ev->payload, ev->payload_len);
}

/* The selection of the fourth parser, and the same as a predicate. */
static void fuzz_select(struct els_parser *p)
{
    FUZZ_CHECK(els_parser_select(p, ELS_EV_USER_MSG, "A", 1) == 0 &&
               els_parser_select(p, ELS_EV_USER_MSG, "BC", 2) == 0 &&
               els_parser_select(p, ELS_EV_USER_MARKER, "B", 1) == 0 &&
               els_parser_select(p, ELS_EV_LOG_MSG, NULL, 0) == 0 &&
               els_parser_select(p, ELS_EV_GC_START, NULL, 0) == 0 &&
               els_parser_select(p, ELS_EV_BLOCK_MARKER, NULL, 0) == 0,
               "select");
}

static bool fuzz_selected(const struct els_event *ev)
{
    const uint8_t *t = ev->payload;
    size_t n = ev->payload_len;
    switch (ev->tag) {
    case ELS_EV_USER_MSG:
        return (n >= 1 && t[0] == 'A') || (n >= 2 && t[0] == 'B' && t[1] == 'C');
    case ELS_EV_USER_MARKER:
        return n >= 1 && t[0] == 'B';
    case ELS_EV_LOG_MSG:
    case ELS_EV_GC_START:
    case ELS_EV_BLOCK_MARKER:
        return true;
    default:
        return false;
    }
}

static bool fuzz_inside(struct els_str s, const struct els_event *ev)
{
    const char *lo = (const char *)ev->payload;
    return s.len == 0 ||
           (s.ptr >= lo && s.len <= ev->payload_len &&
            s.ptr + s.len <= lo + ev->payload_len);
}

static int fuzz_on_event(void *user, const struct els_event *ev)
{
    struct fuzz_seen *s = user;
    s->events++;
    fuzz_mix_event(&s->digest, ev);
    if (fuzz_selected(ev)) {
        s->sel_events++;
        fuzz_mix_event(&s->sel_digest, ev);
    } else {
        FUZZ_CHECK(s != &fuzz_seen[FUZZ_SELECTING], "tag %u delivered but "
                   "not selected", (unsigned)ev->tag);
    }
    FUZZ_CHECK(ev->cap >= -1 && ev->cap < 0xffff, "cap %d", (int)ev->cap);

    struct els_event_data d;
    int rc = els_event_decode(ev, &d);
    FUZZ_CHECK(rc == 0 || rc == 1 || rc == ELS_EINVAL, "decode: %d", rc);
    if (rc == 0) {
        switch (ev->tag) {
        case ELS_EV_LOG_MSG:
        case ELS_EV_USER_MSG:
        case ELS_EV_USER_MARKER:
            FUZZ_CHECK(fuzz_inside(d.u.text, ev), "text outside");
            break;
        case ELS_EV_THREAD_LABEL:
            FUZZ_CHECK(fuzz_inside(d.u.thread_label.label, ev), "label");
            break;
        case ELS_EV_RTS_IDENTIFIER:
            FUZZ_CHECK(fuzz_inside(d.u.capset_text.text, ev), "ident");
            break;
        case ELS_EV_HEAP_PROF_SAMPLE_STRING:
            FUZZ_CHECK(fuzz_inside(d.u.heap_sample_string.label, ev),
                       "sample label");
            break;
        case ELS_EV_PROGRAM_ARGS:
        case ELS_EV_PROGRAM_ENV: {
            struct els_str list = d.u.capset_strings.strings, it;
            size_t n = 0;
            FUZZ_CHECK(fuzz_inside(list, ev), "args");
            while (els_str_next(&list, &it)) {
                FUZZ_CHECK(fuzz_inside(it, ev), "arg %zu", n);
                n++;
            }
            FUZZ_CHECK(n == d.u.capset_strings.count, "count %zu vs %zu", n,
                       d.u.capset_strings.count);
            break;
        }
        default:
            break;
        }
    }
    struct els_note note;
    rc = els_note_decode(ev, &note);
    FUZZ_CHECK(rc == 0 || rc == 1, "note decode: %d", rc);
    if (rc == 0)
        FUZZ_CHECK(fuzz_inside(note.text, ev) && fuzz_inside(note.cause, ev),
                   "note strings outside the payload");
    return 0;
}

static const struct els_parse_callbacks fuzz_cb = {
    .struct_size = sizeof(struct els_parse_callbacks),
    .on_event = fuzz_on_event,
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);
    fuzz_parse_one = fuzz_alloc(1);
    for (unsigned k = 0; k < FUZZ_WAYS; k++)
        for (unsigned r = 0; r < 2; r++)
            FUZZ_CHECK(els_parser_new(&fuzz_parsers[k][r], &fuzz_cb,
                                      &fuzz_seen[k],
                                      r ? ELS_PARSE_RESTART : 0) == 0,
                       "parser");
    for (unsigned r = 0; r < 2; r++)
        fuzz_select(fuzz_parsers[FUZZ_SELECTING][r]);
    return 0;
}

/* elsi_unit_classify() against evformat.h's definitions. */
static void fuzz_classify(const uint8_t *data, size_t len)
{
    uint8_t *unit = fuzz_bytes(data, len);
    struct elsi_unit_info info;
    memset(&info, 0xa5, sizeof info);
    elsi_unit_classify(unit, len, &info);

    enum elsi_unit_kind want = ELSI_UNIT_KIND_OTHER;
    if (len >= 4 && fuzz_be(unit, 4) == ELSI_EVENT_HEADER_BEGIN)
        want = ELSI_UNIT_KIND_HEADER;
    else if (len == 2 && fuzz_be(unit, 2) == ELSI_EVENT_DATA_END)
        want = ELSI_UNIT_KIND_END;
    else if (len >= ELSI_BLOCK_MARKER_BYTES &&
             fuzz_be(unit, 2) == ELSI_EVENT_BLOCK_MARKER)
        want = ELSI_UNIT_KIND_BLOCK;
    FUZZ_CHECK(info.kind == want, "kind %d, expected %d (len %zu)",
               (int)info.kind, (int)want, len);
    if (want == ELSI_UNIT_KIND_BLOCK) {
        FUZZ_CHECK(info.start_time == fuzz_be(unit + 2, 8), "start time");
        FUZZ_CHECK(info.end_time == fuzz_be(unit + 14, 8), "end time");
        FUZZ_CHECK(info.cap == fuzz_be(unit + 22, 2), "cap");
    } else {
        FUZZ_CHECK(info.cap == ELSI_CAP_GLOBAL && info.start_time == 0 &&
                   info.end_time == 0, "fields set for a non-block");
    }
    free(unit);
}

/* Feed one piece from its own heap block, checking the per-call rules. */
static int fuzz_feed(struct els_parser *p, const uint8_t *data, size_t len)
{
    struct els_parse_status before, after;
    els_parser_status(p, &before);
    char old_error[200];
    snprintf(old_error, sizeof old_error, "%s", before.error);

    uint8_t *piece = fuzz_bytes(data, len);
    size_t used = 12345;
    int rc = els_parser_feed(p, piece, len, &used);
    free(piece);
    els_parser_status(p, &after);

    FUZZ_CHECK(rc == 0 || rc == ELS_EINVAL, "feed returned %d", rc);
    FUZZ_CHECK((rc == 0) == (after.where != ELS_PARSE_FAILED),
               "rc %d but where %s", rc, els_parse_where_name(after.where));
    FUZZ_CHECK(used <= len && after.offset == before.offset + used,
               "used %zu of %zu, offset %llu -> %llu", used, len,
               (unsigned long long)before.offset,
               (unsigned long long)after.offset);
    FUZZ_CHECK(after.item_offset <= after.offset, "item offset past offset");
    if (before.where == ELS_PARSE_FAILED) {
        FUZZ_CHECK(rc == ELS_EINVAL && used == 0 &&
                   strcmp(old_error, after.error) == 0,
                   "a failed parser changed");
    } else if (rc == 0) {
        FUZZ_CHECK(used == len, "consumed %zu of %zu without an error", used,
                   len);
    } else {
        FUZZ_CHECK(fuzz_one_line(after.error, strlen(after.error) + 1) &&
                   strncmp(after.error, "offset ", 7) == 0,
                   "error message: \"%s\"", after.error);
    }
    return rc;
}

/* Parsers a and b ended alike; b delivered what a did (selected: what a
 * delivered that the selection keeps). */
static void fuzz_same(unsigned a, unsigned b, struct els_parser *pa,
                      struct els_parser *pb, bool selected, const char *how)
{
    struct els_parse_status x, y;
    els_parser_status(pa, &x);
    els_parser_status(pb, &y);
    FUZZ_CHECK(x.where == y.where && x.offset == y.offset &&
               x.item_offset == y.item_offset && x.events == y.events &&
               x.blocks == y.blocks && x.streams == y.streams,
               "%s: status differs (%s/%s, offset %llu/%llu, events "
               "%llu/%llu)", how, els_parse_where_name(x.where),
               els_parse_where_name(y.where), (unsigned long long)x.offset,
               (unsigned long long)y.offset, (unsigned long long)x.events,
               (unsigned long long)y.events);
    FUZZ_CHECK(strcmp(x.error, y.error) == 0, "%s: \"%s\" vs \"%s\"", how,
               x.error, y.error);
    uint64_t want_digest = selected ? fuzz_seen[a].sel_digest : fuzz_seen[a].digest;
    uint64_t want_events = selected ? fuzz_seen[a].sel_events : fuzz_seen[a].events;
    FUZZ_CHECK(fuzz_seen[b].digest == want_digest &&
               fuzz_seen[b].events == want_events,
               "%s: different events delivered", how);
    const struct els_event_type *ta, *tb;
    size_t na = els_parser_event_types(pa, &ta);
    size_t nb = els_parser_event_types(pb, &tb);
    FUZZ_CHECK(na == nb, "%s: %zu vs %zu event types", how, na, nb);
    for (size_t i = 0; i < na; i++)
        FUZZ_CHECK(ta[i].tag == tb[i].tag && ta[i].size == tb[i].size &&
                   strcmp(ta[i].desc, tb[i].desc) == 0 &&
                   strlen(ta[i].desc) <= ELS_PARSE_DESC_MAX,
                   "%s: event type %zu differs", how, i);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_reader r = { data, size };
    uint8_t first = fuzz_u8(&r);
    size_t n_splits = first % 8;
    unsigned restart = first >> 7;
    size_t splits[8];
    for (size_t i = 0; i < n_splits; i++)
        splits[i] = 1 + (size_t)fuzz_u8(&r);
    size_t len;
    const uint8_t *stream = fuzz_take(&r, r.left, &len);

    fuzz_classify(stream, len);
    elsi_unit_classify(NULL, len, &(struct elsi_unit_info){ 0 });

    struct els_parser *p[FUZZ_WAYS];
    for (unsigned k = 0; k < FUZZ_WAYS; k++) {
        p[k] = fuzz_parsers[k][restart];
        els_parser_reset(p[k]);     /* keeps the selection */
        fuzz_seen[k].digest = fuzz_seen[k].sel_digest = 0xcbf29ce484222325ull;
        fuzz_seen[k].events = fuzz_seen[k].sel_events = 0;
    }

    /* Whole. */
    fuzz_feed(p[0], stream, len);
    fuzz_feed(p[0], stream, 0);

    /* In the chosen pieces, classifying each as if it were a unit. */
    size_t at = 0;
    for (size_t k = 0; at < len; k++) {
        size_t n = n_splits > 0 ? splits[k % n_splits] : len;
        if (n > len - at)
            n = len - at;
        fuzz_classify(stream + at, n);
        fuzz_feed(p[1], stream + at, n);
        at += n;
    }
    fuzz_same(0, 1, p[0], p[1], false, "whole vs pieces");

    /* Selecting, in the same pieces: what it skips is checked and counted
     * alike (Note [Selected events]). */
    at = 0;
    for (size_t k = 0; at < len; k++) {
        size_t n = n_splits > 0 ? splits[(k + 1) % n_splits] : len;
        if (n > len - at)
            n = len - at;
        fuzz_feed(p[FUZZ_SELECTING], stream + at, n);
        at += n;
    }
    fuzz_same(0, FUZZ_SELECTING, p[0], p[FUZZ_SELECTING], true,
              "whole vs selecting");

    /* A byte at a time through one reused 1-byte heap block, cheap checks
     * only. */
    if (len <= FUZZ_PARSE_BYTEWISE_MAX) {
        for (size_t i = 0; i < len; i++) {
            *fuzz_parse_one = stream[i];
            int rc = els_parser_feed(p[2], fuzz_parse_one, 1, NULL);
            if (rc != 0)
                break;
        }
        fuzz_same(0, 2, p[0], p[2], false, "whole vs bytewise");
    }

    /* Without the restart flag nothing may follow DATA_END. */
    struct els_parse_status st;
    els_parser_status(p[0], &st);
    if (st.where == ELS_PARSE_ENDED && !restart) {
        static const uint8_t extra = 0;
        FUZZ_CHECK(fuzz_feed(p[0], &extra, 1) == ELS_EINVAL,
                   "a byte after DATA_END was accepted");
    }
    return 0;
}
