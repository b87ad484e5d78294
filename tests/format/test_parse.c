/*
 * test_parse.c: the incremental parser (lib/format/parse.c,
 * parse_decode.c, <eventlog-sink/parse.h>).
 *
 * Any chunking gives the same events (every split position, pairs of
 * splits, byte by byte, random piece sizes), each event with its tag,
 * time, payload and the capability of its block; the status says exactly
 * where a stream stopped (at start, in the header, between events, inside
 * an event, ended, failed) and at which offset; the event-type table
 * keeps descriptions; a selection (by tag and text prefix) delivers the
 * same events however the stream is cut; restarts after DATA_END, resets, and a callback
 * stopping the feed; every error path with its offset, sticky; random and
 * corrupted input under the sanitizers; each decoder on GHC's layouts and
 * on short payloads; and the in-band note decoder on notes a real writer
 * sent; and a real eventlog of GHC 9.0.2 (tests/data/) parsed in odd
 * pieces to exactly the event count ghc-events read from it.  Real GHC
 * streams are compared with ghc-events by
 * tests/tools/test_parse_ghc_events.sh.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "check.h"
#include "eventlog-sink.h"
#include "eventlog-sink/parse.h"
#include "evgen.h"
#include "format/evformat.h"
#include "streams.h"

/* ------------------------------------------------------------------------
 * A recorder: what the callbacks saw, folded into a digest so that two
 * runs with different chunkings can be compared event by event.
 * ------------------------------------------------------------------------ */

struct rec {
    uint64_t events, blocks, headers, ends;
    uint64_t digest;
    uint64_t end_offset;
    int32_t last_cap;
    uint16_t last_tag;
    int stop_after;             /* > 0: return 7 from the n-th event */
};

static void rec_mix(struct rec *r, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) {
        r->digest ^= b[i];
        r->digest *= 0x100000001b3ull;
    }
}

static int rec_on_event(void *user, const struct els_event *ev)
{
    struct rec *r = user;
    if (ev->tag == ELS_EV_BLOCK_MARKER)
        r->blocks++;
    else
        r->events++;
    rec_mix(r, &ev->tag, sizeof ev->tag);
    rec_mix(r, &ev->time, sizeof ev->time);
    rec_mix(r, &ev->cap, sizeof ev->cap);
    rec_mix(r, &ev->offset, sizeof ev->offset);
    rec_mix(r, &ev->payload_len, sizeof ev->payload_len);
    if (ev->payload_len > 0)
        rec_mix(r, ev->payload, ev->payload_len);
    r->last_cap = ev->cap;
    r->last_tag = ev->tag;
    if (r->stop_after > 0 && --r->stop_after == 0)
        return 7;
    return 0;
}

static int rec_on_header(void *user, const struct els_parser *p)
{
    struct rec *r = user;
    const struct els_event_type *t;
    size_t n = els_parser_event_types(p, &t);
    r->headers++;
    rec_mix(r, &n, sizeof n);
    return 0;
}

static int rec_on_end(void *user, uint64_t offset)
{
    struct rec *r = user;
    r->ends++;
    r->end_offset = offset;
    return 0;
}

static const struct els_parse_callbacks rec_cb = {
    .struct_size = sizeof(struct els_parse_callbacks),
    .on_header = rec_on_header, .on_event = rec_on_event,
    .on_end = rec_on_end,
};

static struct els_parser *rec_parser(struct rec *r, unsigned flags)
{
    struct els_parser *p;
    memset(r, 0, sizeof *r);
    r->digest = 0xcbf29ce484222325ull;
    CHECK_OK(els_parser_new(&p, &rec_cb, r, flags));
    return p;
}

static struct els_parse_status status_of(const struct els_parser *p)
{
    struct els_parse_status st;
    els_parser_status(p, &st);
    return st;
}

/* Feed the stream in pieces cut at the given positions (ascending), each
 * piece in its own exact-size block for the sanitizers. */
static int feed_split(struct els_parser *p, const uint8_t *data, size_t len,
                      const size_t *cuts, size_t ncuts)
{
    size_t at = 0;
    for (size_t i = 0; i <= ncuts; i++) {
        size_t end = i < ncuts ? cuts[i] : len;
        uint8_t *piece = exact_copy(data + at, end - at);
        size_t used = 0;
        int r = els_parser_feed(p, piece, end - at, &used);
        free(piece);
        if (r < 0)
            return r;
        CHECK_INT(used, ==, end - at);
        at = end;
    }
    return 0;
}

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* ------------------------------------------------------------------------
 * Chunking
 * ------------------------------------------------------------------------ */

/* The reference run: the whole stream in one piece. */
static struct rec reference(const struct tbuf *b)
{
    struct rec r;
    struct els_parser *p = rec_parser(&r, 0);
    CHECK_OK(els_parser_feed(p, b->data, b->len, NULL));
    CHECK_INT(status_of(p).where, ==, ELS_PARSE_ENDED);
    els_parser_free(p);
    return r;
}

static void same_run(const struct rec *a, const struct rec *b, const char *how)
{
    CHECK_MSG(a->digest == b->digest && a->events == b->events &&
              a->blocks == b->blocks && a->headers == b->headers &&
              a->ends == b->ends && a->end_offset == b->end_offset,
              "%s: events %" PRIu64 "/%" PRIu64 ", blocks %" PRIu64 "/%"
              PRIu64 ", digest differs: %d", how, a->events, b->events,
              a->blocks, b->blocks, a->digest != b->digest);
}

static void every_split(void)
{
    struct tbuf b = {0};
    uint64_t events, blocks;
    build_stream(&b, &events, &blocks);
    struct rec ref = reference(&b);
    CHECK_U64(ref.events, ==, events);
    CHECK_U64(ref.blocks, ==, blocks);
    CHECK_U64(ref.headers, ==, 1);
    CHECK_U64(ref.ends, ==, 1);
    CHECK_U64(ref.end_offset, ==, b.len - 2);

    /* One parser for all runs, reset in between: reset must forget
     * everything. */
    struct rec r;
    struct els_parser *p = rec_parser(&r, 0);
    for (size_t i = 0; i <= b.len; i++) {
        for (size_t j = i; j <= b.len; j++) {
            char how[64];
            snprintf(how, sizeof how, "cuts at %zu, %zu", i, j);
            els_parser_reset(p);
            memset(&r, 0, sizeof r);
            r.digest = 0xcbf29ce484222325ull;
            size_t cuts[2] = { i, j };
            CHECK_MSG(feed_split(p, b.data, b.len, cuts, 2) == 0, "%s: %s",
                      how, status_of(p).error);
            struct els_parse_status st = status_of(p);
            CHECK_INT(st.where, ==, ELS_PARSE_ENDED);
            CHECK_U64(st.offset, ==, b.len);
            CHECK_U64(st.events, ==, events);
            CHECK_U64(st.blocks, ==, blocks);
            same_run(&ref, &r, how);
        }
    }
    els_parser_free(p);
}

static void byte_by_byte_and_random_pieces(void)
{
    struct tbuf b = {0};
    uint64_t events, blocks;
    build_stream(&b, &events, &blocks);
    struct rec ref = reference(&b);

    struct rec r;
    struct els_parser *p = rec_parser(&r, 0);
    CHECK_INT(status_of(p).where, ==, ELS_PARSE_AT_START);
    uint64_t last = 0;
    for (size_t i = 0; i < b.len; i++) {
        CHECK_MSG(status_of(p).where != ELS_PARSE_ENDED, "ended after %zu", i);
        uint8_t *one = exact_copy(b.data + i, 1);
        CHECK_MSG(els_parser_feed(p, one, 1, NULL) == 0, "byte %zu: %s", i,
                  status_of(p).error);
        free(one);
        struct els_parse_status st = status_of(p);
        CHECK_U64(st.offset, ==, i + 1);
        /* Counters only grow, one at a time. */
        CHECK(st.events == last || st.events == last + 1);
        last = st.events;
    }
    same_run(&ref, &r, "byte by byte");
    /* Empty feeds are harmless, even after the end. */
    CHECK_OK(els_parser_feed(p, b.data, 0, NULL));
    CHECK_INT(status_of(p).where, ==, ELS_PARSE_ENDED);
    els_parser_free(p);

    uint64_t seed = 0x2545f4914f6cdd1dull;
    for (int round = 0; round < 2000; round++) {
        p = rec_parser(&r, 0);
        size_t at = 0;
        while (at < b.len) {
            size_t n = 1 + xorshift(&seed) % (round % 2 ? 7 : 200);
            if (n > b.len - at)
                n = b.len - at;
            uint8_t *piece = exact_copy(b.data + at, n);
            CHECK_OK(els_parser_feed(p, piece, n, NULL));
            free(piece);
            at += n;
        }
        same_run(&ref, &r, "random pieces");
        els_parser_free(p);
    }
}

/* ------------------------------------------------------------------------
 * Where a stream stopped
 * ------------------------------------------------------------------------ */

static void status_where(void)
{
    struct tbuf b = {0};
    uint64_t events, blocks;
    build_stream(&b, &events, &blocks);
    struct tbuf h = {0};
    tb_header(&h);
    /* build_stream(): marker at h.len (24 bytes), create thread (14), log
     * message (12 + 2), a note block, DATA_END. */
    size_t marker = h.len, create = marker + 24, msg = create + 14;

    static const struct {
        size_t len;
        enum els_parse_where where;
        size_t item;                /* expected item_offset */
    } cases[] = {
        { 0, ELS_PARSE_AT_START, 0 },
        { 1, ELS_PARSE_IN_HEADER, 0 },
        { 0 /* h.len - 1 */, ELS_PARSE_IN_HEADER, 0 },
    };
    struct rec r;
    struct els_parser *p;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len = i == 2 ? h.len - 1 : cases[i].len;
        p = rec_parser(&r, 0);
        CHECK_OK(els_parser_feed(p, b.data, len, NULL));
        struct els_parse_status st = status_of(p);
        CHECK_INT(st.where, ==, cases[i].where);
        CHECK_U64(st.offset, ==, len);
        CHECK_U64(st.item_offset, ==, cases[i].item);
        CHECK_STR(st.error, "");
        els_parser_free(p);
    }

    /* The header complete: between events, the table readable. */
    p = rec_parser(&r, 0);
    const struct els_event_type *t;
    CHECK_OK(els_parser_feed(p, b.data, h.len - 1, NULL));
    CHECK_INT(els_parser_event_types(p, &t), ==, 0);
    CHECK(els_parser_event_type(p, 0) == NULL);
    CHECK_OK(els_parser_feed(p, b.data + h.len - 1, 1, NULL));
    struct els_parse_status st = status_of(p);
    CHECK_INT(st.where, ==, ELS_PARSE_AT_EVENT);
    CHECK_U64(st.item_offset, ==, h.len);
    CHECK_U64(st.streams, ==, 1);
    CHECK_U64(r.headers, ==, 1);
    CHECK_INT(els_parser_event_types(p, &t), ==, 3);
    CHECK_INT(t[0].tag, ==, 16);
    CHECK_INT(t[0].size, ==, ELS_EVENT_SIZE_VARIABLE);
    CHECK_STR(t[0].desc, "Log message");
    CHECK_INT(t[1].tag, ==, 18);
    CHECK_INT(t[1].size, ==, 14);
    CHECK_STR(t[2].desc, "Create thread");
    CHECK(els_parser_event_type(p, 0) == &t[2]);
    CHECK(els_parser_event_type(p, 1) == NULL);

    /* Inside the marker, inside the create-thread event's payload. */
    CHECK_OK(els_parser_feed(p, b.data + h.len, 5, NULL));
    st = status_of(p);
    CHECK_INT(st.where, ==, ELS_PARSE_IN_EVENT);
    CHECK_U64(st.item_offset, ==, marker);
    CHECK_OK(els_parser_feed(p, b.data + h.len + 5, create + 12 - (h.len + 5),
                             NULL));
    st = status_of(p);
    CHECK_INT(st.where, ==, ELS_PARSE_IN_EVENT);
    CHECK_U64(st.item_offset, ==, create);
    CHECK_U64(st.blocks, ==, 1);
    CHECK_U64(st.events, ==, 0);
    /* The last payload byte delivers it, with the block's capability. */
    CHECK_OK(els_parser_feed(p, b.data + create + 12, 2, NULL));
    st = status_of(p);
    CHECK_INT(st.where, ==, ELS_PARSE_AT_EVENT);
    CHECK_U64(st.item_offset, ==, msg);
    CHECK_U64(st.events, ==, 1);
    CHECK_INT(r.last_tag, ==, 0);
    CHECK_INT(r.last_cap, ==, 0);
    /* The rest: ended, with DATA_END's offset. */
    CHECK_OK(els_parser_feed(p, b.data + msg, b.len - msg, NULL));
    st = status_of(p);
    CHECK_INT(st.where, ==, ELS_PARSE_ENDED);
    CHECK_U64(st.item_offset, ==, b.len - 2);
    CHECK_U64(st.offset, ==, b.len);
    /* The note block is global. */
    CHECK_INT(r.last_tag, ==, 16);
    CHECK_INT(r.last_cap, ==, -1);
    els_parser_free(p);

    CHECK_STR(els_parse_where_name(ELS_PARSE_IN_EVENT), "in-event");
    CHECK_STR(els_parse_where_name((enum els_parse_where)99), "unknown");
}

/* Events outside any block, after a block's declared end, and in blocks
 * of capability 3 and of the global 0xffff. */
static void capability_of_block(void)
{
    struct tbuf b = {0};
    tb_header(&b);
    tb_u16(&b, 0);              /* before any block */
    tb_u64(&b, 1);
    tb_u32(&b, 1);
    tb_u16(&b, 18);             /* block of cap 3 holding one event */
    tb_u64(&b, 2);
    tb_u32(&b, 24 + 14);
    tb_u64(&b, 3);
    tb_u16(&b, 3);
    tb_u16(&b, 0);
    tb_u64(&b, 2);
    tb_u32(&b, 2);
    tb_u16(&b, 0);              /* past the block's end */
    tb_u64(&b, 4);
    tb_u32(&b, 3);
    tb_u16(&b, 18);             /* global block */
    tb_u64(&b, 5);
    tb_u32(&b, 24 + 14);
    tb_u64(&b, 5);
    tb_u16(&b, 0xffff);
    tb_u16(&b, 0);
    tb_u64(&b, 5);
    tb_u32(&b, 4);
    tb_end(&b);

    struct rec r;
    struct els_parser *p = rec_parser(&r, 0);
    size_t at;
    int32_t want_caps[] = { -1, 3, 3, -1, -1, -1 };
    uint16_t want_tags[] = { 0, 18, 0, 0, 18, 0 };
    /* Feed event by event and look at the last one delivered. */
    struct tbuf h = {0};
    tb_header(&h);
    CHECK_OK(els_parser_feed(p, b.data, h.len, NULL));
    at = h.len;
    size_t sizes[] = { 14, 24, 14, 14, 24, 14 };
    for (int i = 0; i < 6; i++) {
        CHECK_OK(els_parser_feed(p, b.data + at, sizes[i], NULL));
        at += sizes[i];
        CHECK_MSG(r.last_tag == want_tags[i] && r.last_cap == want_caps[i],
                  "event %d: tag %u cap %d, wanted tag %u cap %d", i,
                  r.last_tag, (int)r.last_cap, want_tags[i],
                  (int)want_caps[i]);
    }
    els_parser_free(p);
}

/* ------------------------------------------------------------------------
 * Selecting events (Note [Selected events])
 * ------------------------------------------------------------------------ */

/* A stream with a block of cap 3 holding thread creations and messages,
 * some starting with "INCIDENT", and one message outside any block. */
static void build_selection_stream(struct tbuf *b, uint64_t *events)
{
    static const char *const texts[] = { "INCIDENT 1", "other", "INC",
                                         "INCIDENT", "xINCIDENT" };
    tb_header(b);
    size_t marker = tb_block_open(b, 100, 900, 3);
    *events = 0;
    for (unsigned i = 0; i < 5; i++) {
        tb_u16(b, 0);           /* create thread i */
        tb_u64(b, 110 + 10 * i);
        tb_u32(b, i);
        tb_u16(b, 16);
        tb_u64(b, 115 + 10 * i);
        tb_u16(b, (unsigned)strlen(texts[i]));
        tb_str(b, texts[i]);
        *events += 2;
    }
    tb_block_close(b, marker);
    tb_u16(b, 16);              /* outside the block */
    tb_u64(b, 1000);
    tb_u16(b, 10);
    tb_str(b, "INCIDENT 2");
    *events += 1;
    tb_end(b);
}

/* Which events the reference run keeps, to compare with a selection. */
enum sel_want { SEL_INCIDENT, SEL_INCIDENT_THREADS, SEL_BLOCKS_INC };
static enum sel_want sel_want;

static bool sel_wanted(const struct els_event *ev)
{
    bool incident = ev->tag == 16 && ev->payload_len >= 8 &&
                    memcmp(ev->payload, "INCIDENT", 8) == 0;
    switch (sel_want) {
    case SEL_INCIDENT:
        return incident;
    case SEL_INCIDENT_THREADS:
        return incident || ev->tag == 0;
    case SEL_BLOCKS_INC:
        return ev->tag == 18 || (ev->tag == 16 && ev->payload_len >= 3 &&
                                 memcmp(ev->payload, "INC", 3) == 0);
    }
    return false;
}

static int sel_on_event(void *user, const struct els_event *ev)
{
    return sel_wanted(ev) ? rec_on_event(user, ev) : 0;
}

/* What a parser without a selection delivers, filtered by sel_want. */
static struct rec sel_reference(const struct tbuf *b, enum sel_want want)
{
    sel_want = want;
    struct els_parse_callbacks cb = rec_cb;
    cb.on_event = sel_on_event;
    struct rec r;
    struct els_parser *p;
    memset(&r, 0, sizeof r);
    r.digest = 0xcbf29ce484222325ull;
    CHECK_OK(els_parser_new(&p, &cb, &r, 0));
    CHECK_OK(els_parser_feed(p, b->data, b->len, NULL));
    els_parser_free(p);
    return r;
}

static void sel_apply(struct els_parser *p, enum sel_want want)
{
    switch (want) {
    case SEL_INCIDENT:
        CHECK_OK(els_parser_select(p, 16, "INCIDENT", 8));
        break;
    case SEL_INCIDENT_THREADS:
        CHECK_OK(els_parser_select(p, 16, "INCIDENT", 8));
        CHECK_OK(els_parser_select(p, 0, NULL, 0));
        break;
    case SEL_BLOCKS_INC:
        CHECK_OK(els_parser_select(p, 16, "INCIDENT", 8));  /* within "INC" */
        CHECK_OK(els_parser_select(p, 16, "INC", 3));
        CHECK_OK(els_parser_select(p, 18, NULL, 0));
        break;
    }
}

static void selection(void)
{
    struct tbuf b = {0};
    uint64_t events;
    build_selection_stream(&b, &events);
    struct rec full = reference(&b);
    CHECK_U64(full.events, ==, events);

    static const enum sel_want wants[] = { SEL_INCIDENT, SEL_INCIDENT_THREADS,
                                           SEL_BLOCKS_INC };
    static const uint64_t delivered[] = { 3, 8, 5 };
    for (size_t w = 0; w < 3; w++) {
        struct rec want = sel_reference(&b, wants[w]);
        CHECK_U64(want.events + want.blocks, ==, delivered[w]);
        /* The same events, capabilities and offsets however the stream is
         * cut: whole, at every single position, byte by byte. */
        struct rec r;
        struct els_parser *p = rec_parser(&r, 0);
        sel_apply(p, wants[w]);
        for (size_t i = 0; i <= b.len + 1; i++) {
            char how[64];
            snprintf(how, sizeof how, "selection %zu, cut at %zu", w, i);
            els_parser_reset(p);        /* the selection stays */
            memset(&r, 0, sizeof r);
            r.digest = 0xcbf29ce484222325ull;
            if (i <= b.len) {
                size_t cut = i;
                CHECK_MSG(feed_split(p, b.data, b.len, &cut, 1) == 0, "%s: %s",
                          how, status_of(p).error);
            } else {
                for (size_t k = 0; k < b.len; k++)
                    CHECK_OK(els_parser_feed(p, b.data + k, 1, NULL));
            }
            struct els_parse_status st = status_of(p);
            CHECK_INT(st.where, ==, ELS_PARSE_ENDED);
            CHECK_U64(st.offset, ==, b.len);
            CHECK_U64(st.events, ==, events);   /* skipped ones count */
            CHECK_U64(st.blocks, ==, 1);
            same_run(&want, &r, how);
        }
        /* Back to every event. */
        els_parser_select_all(p);
        els_parser_reset(p);
        memset(&r, 0, sizeof r);
        r.digest = 0xcbf29ce484222325ull;
        CHECK_OK(els_parser_feed(p, b.data, b.len, NULL));
        same_run(&full, &r, "after els_parser_select_all");
        els_parser_free(p);
    }

    /* The capability of a selected event after skipped ones. */
    struct rec r;
    struct els_parser *p = rec_parser(&r, 0);
    CHECK_OK(els_parser_select(p, 16, "INCIDENT 1", 10));
    CHECK_OK(els_parser_feed(p, b.data, b.len, NULL));
    CHECK_U64(r.events, ==, 1);
    CHECK_INT(r.last_cap, ==, 3);
    els_parser_free(p);

    /* A callback stopping the feed stops it at its event. */
    p = rec_parser(&r, 0);
    sel_apply(p, SEL_INCIDENT);
    r.stop_after = 1;
    size_t used = 0;
    CHECK_INT(els_parser_feed(p, b.data, b.len, &used), ==, 7);
    CHECK_U64(status_of(p).offset, ==, used);
    CHECK_U64(r.events, ==, 1);
    CHECK_OK(els_parser_feed(p, b.data + used, b.len - used, NULL));
    CHECK_U64(r.events, ==, 3);
    els_parser_free(p);

    /* Skipped events are still checked: an undeclared tag is an error at
     * its offset whatever is selected. */
    struct tbuf bad = {0};
    tb_header(&bad);
    tb_u16(&bad, 16);
    tb_u64(&bad, 1);
    tb_u16(&bad, 2);
    tb_str(&bad, "ok");
    size_t bad_at = bad.len;
    tb_u16(&bad, 77);
    tb_u64(&bad, 2);
    p = rec_parser(&r, 0);
    CHECK_OK(els_parser_select(p, 0, NULL, 0));
    CHECK_INT(els_parser_feed(p, bad.data, bad.len, NULL), ==, ELS_EINVAL);
    CHECK_U64(status_of(p).item_offset, ==, bad_at);
    CHECK_U64(r.events, ==, 0);
    els_parser_free(p);

    /* Arguments and limits. */
    CHECK_OK(els_parser_new(&p, NULL, NULL, 0));
    char big[ELS_PARSE_PREFIX_MAX + 1];
    memset(big, 'x', sizeof big);
    CHECK_INT(els_parser_select(p, 16, NULL, 1), ==, ELS_EINVAL);
    CHECK_INT(els_parser_select(p, 16, big, sizeof big), ==, ELS_EINVAL);
    CHECK_OK(els_parser_select(p, 16, big, sizeof big - 1));
    for (unsigned i = 1; i < ELS_PARSE_PREFIXES_MAX; i++)
        CHECK_OK(els_parser_select(p, 19, big, i));
    CHECK_INT(els_parser_select(p, 58, "m", 1), ==, ELS_EINVAL);
    CHECK_OK(els_parser_select(p, 58, NULL, 0));    /* no prefix: no slot */
    els_parser_select_all(p);
    CHECK_OK(els_parser_select(p, 58, "m", 1));     /* slots free again */
    els_parser_free(p);
}

/* ------------------------------------------------------------------------
 * Restarts, reset, stopping
 * ------------------------------------------------------------------------ */

static void restart_after_end(void)
{
    struct tbuf one = {0};
    uint64_t events, blocks;
    build_stream(&one, &events, &blocks);
    struct tbuf two = one;
    tb_bytes(&two, one.data, one.len);

    /* Without the flag: an error at the second header. */
    struct rec r;
    struct els_parser *p = rec_parser(&r, 0);
    CHECK_INT(els_parser_feed(p, two.data, two.len, NULL), ==, ELS_EINVAL);
    struct els_parse_status st = status_of(p);
    CHECK_INT(st.where, ==, ELS_PARSE_FAILED);
    char want[64];
    snprintf(want, sizeof want, "offset %zu: data after DATA_END", one.len);
    CHECK_STR(st.error, want);
    els_parser_free(p);

    /* With it: two streams, every byte split. */
    for (size_t cut = 0; cut <= two.len; cut++) {
        p = rec_parser(&r, ELS_PARSE_RESTART);
        CHECK_OK(feed_split(p, two.data, two.len, &cut, 1));
        st = status_of(p);
        CHECK_INT(st.where, ==, ELS_PARSE_ENDED);
        CHECK_U64(st.streams, ==, 2);
        CHECK_U64(r.headers, ==, 2);
        CHECK_U64(r.ends, ==, 2);
        CHECK_U64(st.events, ==, 2 * events);
        CHECK_U64(r.end_offset, ==, two.len - 2);
        els_parser_free(p);
    }

    /* A restart whose header is cut: in the header, the old table gone. */
    p = rec_parser(&r, ELS_PARSE_RESTART);
    CHECK_OK(els_parser_feed(p, two.data, one.len + 10, NULL));
    st = status_of(p);
    CHECK_INT(st.where, ==, ELS_PARSE_IN_HEADER);
    CHECK_U64(st.item_offset, ==, one.len);
    const struct els_event_type *t;
    CHECK_INT(els_parser_event_types(p, &t), ==, 0);

    /* Reset: a fresh stream from offset 0, counters cleared. */
    els_parser_reset(p);
    st = status_of(p);
    CHECK_INT(st.where, ==, ELS_PARSE_AT_START);
    CHECK_U64(st.offset, ==, 0);
    CHECK_U64(st.events, ==, 0);
    CHECK_OK(els_parser_feed(p, one.data, one.len, NULL));
    CHECK_INT(status_of(p).where, ==, ELS_PARSE_ENDED);
    els_parser_free(p);

    /* Unknown flags are refused. */
    CHECK_INT(els_parser_new(&p, NULL, NULL, 2), ==, ELS_EINVAL);
    els_parser_free(NULL);
}

/* Callbacks of the first release's size (as a program built against an
 * older header passes them) work, whatever follows them in memory; sizes
 * that cannot be a callbacks struct are refused. */
static void callbacks_struct_size(void)
{
    struct tbuf b = {0};
    uint64_t events, blocks;
    build_stream(&b, &events, &blocks);
    struct rec r;
    memset(&r, 0, sizeof r);
    uint8_t *block = malloc(ELS_PARSE_CALLBACKS_MIN_SIZE);
    CHECK(block != NULL);
    struct els_parse_callbacks cb = rec_cb;
    cb.struct_size = ELS_PARSE_CALLBACKS_MIN_SIZE;
    memcpy(block, &cb, ELS_PARSE_CALLBACKS_MIN_SIZE);
    struct els_parser *p;
    CHECK_OK(els_parser_new(&p, (const struct els_parse_callbacks *)block, &r,
                            0));
    free(block);                /* copied */
    CHECK_OK(els_parser_feed(p, b.data, b.len, NULL));
    CHECK_U64(r.events, ==, events);
    CHECK_U64(r.ends, ==, 1);
    els_parser_free(p);

    static const size_t garbage[] = { 0, 8, ELS_PARSE_CALLBACKS_MIN_SIZE - 1,
                                      4097, (size_t)-1 };
    for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++) {
        cb.struct_size = garbage[i];
        p = (struct els_parser *)1;
        CHECK_INT(els_parser_new(&p, &cb, &r, 0), ==, ELS_EVERSION);
    }
    /* Larger (a newer header's struct): accepted. */
    struct { struct els_parse_callbacks cb; void (*later)(void); } newer;
    memset(&newer, 0, sizeof newer);
    newer.cb = rec_cb;
    newer.cb.struct_size = sizeof newer;
    CHECK_OK(els_parser_new(&p, &newer.cb, &r, 0));
    els_parser_free(p);
}

static void callback_stops_feed(void)
{
    struct tbuf b = {0};
    uint64_t events, blocks;
    build_stream(&b, &events, &blocks);
    struct rec ref = reference(&b);

    /* Stop at the second event (the create-thread event after the
     * marker); then feed the rest from where it stopped. */
    struct rec r;
    struct els_parser *p = rec_parser(&r, 0);
    r.stop_after = 2;
    size_t used = 0;
    CHECK_INT(els_parser_feed(p, b.data, b.len, &used), ==, 7);
    struct tbuf h = {0};
    tb_header(&h);
    CHECK_U64(used, ==, h.len + 24 + 14);
    CHECK_INT(r.last_tag, ==, 0);
    CHECK_INT(status_of(p).where, ==, ELS_PARSE_AT_EVENT);
    CHECK_OK(els_parser_feed(p, b.data + used, b.len - used, &used));
    CHECK_INT(status_of(p).where, ==, ELS_PARSE_ENDED);
    same_run(&ref, &r, "stopped and resumed");
    els_parser_free(p);
}

/* Zero-size payloads, empty variable payloads, empty descriptions, extra
 * info, long descriptions (cut), sizes above 32767. */
static void edge_sizes(void)
{
    struct tbuf b = {0};
    tb_str(&b, "hdrbhetb");
    tb_event_type(&b, 9, 0, "");
    tb_event_type(&b, 16, 0xffff, "Log message");
    tb_str(&b, "etb");
    tb_u8(&b, 0);
    tb_u16(&b, 40);
    tb_u16(&b, 2);
    tb_u32(&b, 1);
    tb_str(&b, "d");
    tb_u32(&b, 3);
    tb_str(&b, "xyz");
    tb_str(&b, "ete");
    tb_u8(&b, 0);
    char longdesc[401];
    memset(longdesc, 'L', 400);
    longdesc[400] = '\0';
    tb_event_type(&b, 41, 0x8000, longdesc);
    tb_event_type(&b, 9, 0, "again");
    tb_str(&b, "hetehdredatb");
    tb_u16(&b, 9);
    tb_u64(&b, 1);
    size_t after_zero = b.len;
    tb_u16(&b, 16);
    tb_u64(&b, 2);
    tb_u16(&b, 0);
    size_t after_empty = b.len;
    tb_u16(&b, 40);
    tb_u64(&b, 3);
    tb_u16(&b, 0xbeef);
    size_t before_big = b.len;
    tb_u16(&b, 41);
    tb_u64(&b, 4);

    struct rec r;
    struct els_parser *p = rec_parser(&r, 0);
    CHECK_OK(els_parser_feed(p, b.data, after_zero, NULL));
    CHECK_U64(r.events, ==, 1);
    CHECK_OK(els_parser_feed(p, b.data + after_zero, after_empty - after_zero,
                             NULL));
    CHECK_U64(r.events, ==, 2);
    CHECK_OK(els_parser_feed(p, b.data + after_empty, b.len - after_empty,
                             NULL));
    CHECK_U64(r.events, ==, 3);
    const struct els_event_type *t;
    CHECK_INT(els_parser_event_types(p, &t), ==, 4);
    CHECK_STR(t[0].desc, "");
    CHECK_STR(t[2].desc, "d");
    CHECK_INT(strlen(t[3].desc), ==, ELS_PARSE_DESC_MAX);
    CHECK_INT(t[3].size, ==, 0x8000);
    uint8_t zeros[1000] = {0};
    size_t left = 0x8000;
    while (left > 0) {
        size_t n = left < sizeof zeros ? left : sizeof zeros;
        CHECK_OK(els_parser_feed(p, zeros, n, NULL));
        left -= n;
    }
    CHECK_U64(r.events, ==, 4);
    static const uint8_t end[2] = { 0xff, 0xff };
    CHECK_OK(els_parser_feed(p, end, 2, NULL));
    struct els_parse_status st = status_of(p);
    CHECK_INT(st.where, ==, ELS_PARSE_ENDED);
    CHECK_U64(st.offset, ==, before_big + 10 + 0x8000 + 2);
    els_parser_free(p);
}

/* ------------------------------------------------------------------------
 * Errors
 * ------------------------------------------------------------------------ */

/* Feed b whole, then byte by byte: both fail with ELS_EINVAL, an error
 * starting "offset AT: " and containing what, item_offset AT; sticky. */
static void expect_error(const struct tbuf *b, uint64_t at, const char *what)
{
    char want[64];
    snprintf(want, sizeof want, "offset %" PRIu64 ": ", at);
    struct rec r;
    struct els_parser *p = rec_parser(&r, 0);
    CHECK_INT(els_parser_feed(p, b->data, b->len, NULL), ==, ELS_EINVAL);
    struct els_parse_status st = status_of(p);
    CHECK_INT(st.where, ==, ELS_PARSE_FAILED);
    CHECK_U64(st.item_offset, ==, at);
    CHECK_MSG(strncmp(st.error, want, strlen(want)) == 0,
              "error \"%s\" does not start with \"%s\"", st.error, want);
    CHECK_CONTAINS(st.error, what);
    char saved[200];
    snprintf(saved, sizeof saved, "%s", st.error);
    static const uint8_t end[2] = { 0xff, 0xff };
    CHECK_INT(els_parser_feed(p, end, 2, NULL), ==, ELS_EINVAL);
    CHECK_INT(els_parser_feed(p, end, 0, NULL), ==, ELS_EINVAL);
    CHECK_STR(status_of(p).error, saved);
    els_parser_free(p);

    p = rec_parser(&r, 0);
    int rc = 0;
    for (size_t i = 0; i < b->len && rc == 0; i++)
        rc = els_parser_feed(p, b->data + i, 1, NULL);
    CHECK_INT(rc, ==, ELS_EINVAL);
    CHECK_STR(status_of(p).error, saved);
    els_parser_free(p);
}

static void error_magics(void)
{
    struct tbuf good = {0};
    tb_header(&good);
    size_t types_end = good.len - 12;
    struct tbuf b = good;
    b.data[0] = 'H';
    expect_error(&b, 0, "expected \"hdrb\"");
    b = good;
    b.data[5] = 'E';
    expect_error(&b, 4, "expected \"hetb\"");
    b = good;
    b.data[8] = 'x';
    expect_error(&b, 8, "expected \"etb\\0\" or \"hete\"");
    b = good;
    b.data[types_end + 4] = 'H';
    expect_error(&b, types_end + 4, "expected \"hdre\"");
    b = good;
    b.data[types_end + 8] = 'D';
    expect_error(&b, types_end + 8, "expected \"datb\"");
    size_t ete = 8 + 4 + 8 + 11 + 4;
    b = good;
    b.data[ete + 3] = 1;
    expect_error(&b, ete, "expected \"ete\\0\"");
}

static void error_events_and_lengths(void)
{
    struct tbuf b = {0};
    tb_header(&b);
    tb_u16(&b, 0);
    tb_u64(&b, 1);
    tb_u32(&b, 1);
    size_t bad = b.len;
    tb_u16(&b, 17);
    tb_u64(&b, 2);
    tb_end(&b);
    expect_error(&b, bad, "event type 17 was not declared");

    b.len = 0;
    tb_str(&b, "hdrbhetbetb");
    tb_u8(&b, 0);
    tb_u16(&b, 5);
    tb_u16(&b, 4);
    tb_u32(&b, 1024 * 1024 + 1);
    expect_error(&b, 16, "description of event type 5 is 1048577 bytes");

    b.len = 0;
    tb_str(&b, "hdrbhetbetb");
    tb_u8(&b, 0);
    tb_u16(&b, 5);
    tb_u16(&b, 4);
    tb_u32(&b, 1);
    tb_str(&b, "d");
    tb_u32(&b, 0x80000000u);
    expect_error(&b, 21, "extra info of event type 5");

    b.len = 0;
    tb_str(&b, "hdrbhetb");
    tb_event_type(&b, 0xffff, 4, "end?");
    expect_error(&b, 12, "reserved for DATA_END");

    b.len = 0;
    tb_str(&b, "hdrbhetb");
    tb_event_type(&b, 7, 4, "a");
    size_t second = b.len;
    tb_event_type(&b, 7, 6, "b");
    expect_error(&b, second + 4 + 8 + 1 + 4, "event type 7 declared again");
}

/* A header declaring every tag with a long description: the table and
 * its descriptions stay within their bounds, and the stream parses. */
static void many_types_bounded(void)
{
    char desc[300];
    memset(desc, 'x', sizeof desc);
    struct rec r;
    struct els_parser *p = rec_parser(&r, 0);
    CHECK_OK(els_parser_feed(p, "hdrbhetb", 8, NULL));
    for (unsigned tag = 0; tag < 0xffff; tag++) {
        uint8_t e[4 + 8 + sizeof desc + 4 + 4];
        size_t k = 0;
        memcpy(e, "etb", 4);
        k = 4;
        e[k++] = (uint8_t)(tag >> 8);
        e[k++] = (uint8_t)tag;
        e[k++] = 0;
        e[k++] = 4;
        e[k++] = 0;
        e[k++] = 0;
        e[k++] = (uint8_t)(sizeof desc >> 8);
        e[k++] = (uint8_t)sizeof desc;
        memcpy(e + k, desc, sizeof desc);
        k += sizeof desc;
        memset(e + k, 0, 4);
        k += 4;
        memcpy(e + k, "ete", 4);
        k += 4;
        CHECK_OK(els_parser_feed(p, e, k, NULL));
    }
    static const uint8_t tail[] = "hetehdredatb";
    CHECK_OK(els_parser_feed(p, tail, 12, NULL));
    const struct els_event_type *t;
    CHECK_INT(els_parser_event_types(p, &t), ==, 0xffff);
    /* The first ones keep their (cut) description; past the arena's
     * cap the rest are "". */
    CHECK_INT(strlen(t[0].desc), ==, ELS_PARSE_DESC_MAX);
    CHECK_STR(t[0xfffe].desc, "");
    els_parser_free(p);
}

/* Random bytes and corruptions of a valid stream in random pieces: no
 * crash or out-of-bounds access (ASan), and an error or a status that
 * accounts for every byte. */
static void random_input(void)
{
    struct tbuf good = {0};
    uint64_t events, blocks;
    build_stream(&good, &events, &blocks);
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    struct rec r;
    struct els_parser *p = rec_parser(&r, ELS_PARSE_RESTART);
    for (int round = 0; round < 20000; round++) {
        struct tbuf b = good;
        if (round % 4 == 0) {
            size_t keep = (round % 8 == 0) ? 8 : 0;
            for (size_t i = keep; i < b.len; i++)
                b.data[i] = (uint8_t)xorshift(&seed);
        } else {
            int flips = 1 + (int)(xorshift(&seed) % 4);
            for (int k = 0; k < flips; k++)
                b.data[xorshift(&seed) % b.len] = (uint8_t)xorshift(&seed);
            if (xorshift(&seed) % 3 == 0)
                b.len = xorshift(&seed) % (b.len + 1);
        }
        els_parser_reset(p);
        size_t at = 0;
        int rc = 0;
        while (at < b.len && rc == 0) {
            size_t n = 1 + xorshift(&seed) % 40;
            if (n > b.len - at)
                n = b.len - at;
            uint8_t *piece = exact_copy(b.data + at, n);
            rc = els_parser_feed(p, piece, n, NULL);
            free(piece);
            at += n;
        }
        struct els_parse_status st = status_of(p);
        if (rc == 0) {
            CHECK_U64(st.offset, ==, b.len);
            CHECK(st.where != ELS_PARSE_FAILED);
        } else {
            CHECK_INT(rc, ==, ELS_EINVAL);
            CHECK_INT(st.where, ==, ELS_PARSE_FAILED);
            CHECK_MSG(strncmp(st.error, "offset ", 7) == 0, "error: %s",
                      st.error);
            CHECK(st.item_offset <= st.offset && st.offset <= b.len);
        }
    }
    els_parser_free(p);
}

/* ------------------------------------------------------------------------
 * Decoders
 * ------------------------------------------------------------------------ */

static struct els_event ev_of(uint16_t tag, const struct tbuf *payload)
{
    struct els_event ev = { .tag = tag, .payload = payload->data,
                            .payload_len = payload->len };
    return ev;
}

/* Each decoder on GHC 9.0.2's layout; then every shorter payload is
 * refused and a longer one accepted. */
static void decode_layouts(void)
{
    struct els_event_data d;
    struct tbuf pl = {0};
    struct els_event ev;

#define DECODE(tag) (ev = ev_of(tag, &pl), els_event_decode(&ev, &d))
    tb_u32(&pl, 7);
    tb_u16(&pl, 4);
    tb_u32(&pl, 9);
    CHECK_OK(DECODE(ELS_EV_STOP_THREAD));
    CHECK_INT(d.u.stop_thread.thread, ==, 7);
    CHECK_INT(d.u.stop_thread.status, ==, 4);
    CHECK_INT(d.u.stop_thread.blocked_on, ==, 9);
    for (size_t n = 0; n < 10; n++) {
        struct tbuf s = pl;
        s.len = n;
        ev = ev_of(ELS_EV_STOP_THREAD, &s);
        CHECK_INT(els_event_decode(&ev, &d), ==, ELS_EINVAL);
    }
    tb_u32(&pl, 0xdead);        /* a newer RTS's extra field */
    CHECK_OK(DECODE(ELS_EV_STOP_THREAD));
    CHECK_INT(d.u.stop_thread.blocked_on, ==, 9);

    pl.len = 0;
    tb_u32(&pl, 3);
    tb_u16(&pl, 1);
    CHECK_OK(DECODE(ELS_EV_MIGRATE_THREAD));
    CHECK_INT(d.u.thread_cap.thread, ==, 3);
    CHECK_INT(d.u.thread_cap.cap, ==, 1);
    CHECK_OK(DECODE(ELS_EV_THREAD_WAKEUP));
    CHECK_INT(d.u.thread_cap.cap, ==, 1);

    pl.len = 0;
    tb_u32(&pl, 5);
    tb_str(&pl, "worker");
    CHECK_OK(DECODE(ELS_EV_THREAD_LABEL));
    CHECK_INT(d.u.thread_label.thread, ==, 5);
    CHECK_INT(d.u.thread_label.label.len, ==, 6);
    CHECK(memcmp(d.u.thread_label.label.ptr, "worker", 6) == 0);

    pl.len = 0;
    tb_u32(&pl, 0);
    tb_u16(&pl, 1);
    tb_u64(&pl, 100);
    tb_u64(&pl, 200);
    tb_u64(&pl, 300);
    tb_u32(&pl, 2);
    tb_u64(&pl, 400);
    tb_u64(&pl, 500);
    tb_u64(&pl, 600);
    CHECK_INT(pl.len, ==, 58);      /* GHC's declared size */
    CHECK_OK(DECODE(ELS_EV_GC_STATS_GHC));
    CHECK_INT(d.u.gc_stats.generation, ==, 1);
    CHECK_U64(d.u.gc_stats.copied, ==, 100);
    CHECK_U64(d.u.gc_stats.fragmentation, ==, 300);
    CHECK_INT(d.u.gc_stats.par_n_threads, ==, 2);
    CHECK_U64(d.u.gc_stats.par_balanced_copied, ==, 600);

    pl.len = 0;
    tb_u32(&pl, 0);
    tb_u16(&pl, 2);
    tb_u64(&pl, 1);
    tb_u64(&pl, 2);
    tb_u64(&pl, 3);
    tb_u64(&pl, 4);
    CHECK_INT(pl.len, ==, 38);
    CHECK_OK(DECODE(ELS_EV_HEAP_INFO_GHC));
    CHECK_INT(d.u.heap_info.generations, ==, 2);
    CHECK_U64(d.u.heap_info.block_size, ==, 4);

    pl.len = 0;
    tb_u32(&pl, 0);
    tb_u64(&pl, 123456);
    CHECK_OK(DECODE(ELS_EV_HEAP_LIVE));
    CHECK_U64(d.u.heap.bytes, ==, 123456);

    pl.len = 0;
    tb_u8(&pl, 1);
    tb_u64(&pl, 4096);
    tb_str(&pl, "ARR_WORDS");
    tb_u8(&pl, 0);
    CHECK_OK(DECODE(ELS_EV_HEAP_PROF_SAMPLE_STRING));
    CHECK_INT(d.u.heap_sample_string.profile, ==, 1);
    CHECK_U64(d.u.heap_sample_string.residency, ==, 4096);
    CHECK_INT(d.u.heap_sample_string.label.len, ==, 9);

    pl.len = 0;
    for (int i = 1; i <= 7; i++)
        tb_u64(&pl, (uint64_t)i);
    CHECK_OK(DECODE(ELS_EV_SPARK_COUNTERS));
    CHECK_U64(d.u.spark_counters.created, ==, 1);
    CHECK_U64(d.u.spark_counters.remaining, ==, 7);

    pl.len = 0;
    tb_u32(&pl, 1);
    tb_bytes(&pl, "./prog\0+RTS\0-N2\0", 16);
    CHECK_OK(DECODE(ELS_EV_PROGRAM_ARGS));
    CHECK_INT(d.u.capset_strings.count, ==, 3);
    struct els_str list = d.u.capset_strings.strings, it;
    CHECK(els_str_next(&list, &it) && it.len == 6 && memcmp(it.ptr, "./prog", 6) == 0);
    CHECK(els_str_next(&list, &it) && it.len == 4);
    CHECK(els_str_next(&list, &it) && it.len == 3);
    CHECK(!els_str_next(&list, &it));

    pl.len = 0;
    tb_u32(&pl, 1);
    tb_u64(&pl, 1700000000);
    tb_u32(&pl, 5);
    CHECK_OK(DECODE(ELS_EV_WALL_CLOCK_TIME));
    CHECK_U64(d.u.wall_clock.sec, ==, 1700000000);
    CHECK_INT(d.u.wall_clock.nsec, ==, 5);

    pl.len = 0;
    tb_u64(&pl, 0x1234);
    tb_u16(&pl, 1);
    tb_u64(&pl, 999);
    CHECK_OK(DECODE(ELS_EV_TASK_CREATE));
    CHECK_U64(d.u.task_create.task, ==, 0x1234);
    CHECK_INT(d.u.task_create.cap, ==, 1);
    CHECK_U64(d.u.task_create.os_thread, ==, 999);

    pl.len = 0;
    tb_u64(&pl, 0x1234);
    tb_u16(&pl, 1);
    tb_u16(&pl, 0);
    CHECK_OK(DECODE(ELS_EV_TASK_MIGRATE));
    CHECK_INT(d.u.task_migrate.new_cap, ==, 0);

    pl.len = 0;
    tb_u32(&pl, 1);
    tb_u16(&pl, 2);
    CHECK_OK(DECODE(ELS_EV_CAPSET_CREATE));
    CHECK_INT(d.u.capset_create.type, ==, 2);
    CHECK_OK(DECODE(ELS_EV_CAPSET_ASSIGN_CAP));
    CHECK_INT(d.u.capset_cap.cap, ==, 2);

    pl.len = 0;
    tb_u32(&pl, 1);
    tb_u32(&pl, 4242);
    CHECK_OK(DECODE(ELS_EV_OSPROCESS_PPID));
    CHECK_INT(d.u.os_pid.pid, ==, 4242);

    pl.len = 0;
    tb_u16(&pl, 3);
    CHECK_OK(DECODE(ELS_EV_CAP_DISABLE));
    CHECK_INT(d.u.cap.cap, ==, 3);
    CHECK_OK(DECODE(ELS_EV_SPARK_STEAL));
    CHECK_INT(d.u.spark_steal.victim_cap, ==, 3);

    /* No fields; no decoder; messages without a NUL. */
    pl.len = 0;
    CHECK_OK(DECODE(ELS_EV_GC_START));
    CHECK_OK(DECODE(ELS_EV_SPARK_RUN));
    CHECK_INT(DECODE(200), ==, 1);
    tb_str(&pl, "hello");
    CHECK_OK(DECODE(ELS_EV_USER_MARKER));
    CHECK_INT(d.u.text.len, ==, 5);
#undef DECODE
}

/* The note decoder on the texts the writer sends, and on others. */
static void decode_notes_text(void)
{
    static const struct {
        const char *text;
        int rc;
        enum els_note_kind kind;
        uint64_t units, bytes;
        const char *cause;
    } cases[] = {
        { "eventlog-sink: 3 units (3000 bytes) dropped here: queue-full; "
          "blocks of cap 0", 0, ELS_NOTE_DROPPED, 3, 3000, "queue-full" },
        { "eventlog-sink: this consumer missed 12 units (4096 bytes) here: "
          "it fell behind or failed to take them", 0, ELS_NOTE_CONSUMER_MISSED,
          12, 4096, "" },
        { "eventlog-sink: consumer 2 joined mid-run; 5 earlier units (500 "
          "bytes) were no longer queued", 0, ELS_NOTE_JOINED_LATE, 5, 500, "" },
        { "eventlog-sink: consumer 3 joined mid-run; its stream starts at a "
          "snapshot of the program's state taken then", 0,
          ELS_NOTE_JOINED_AT_SNAPSHOT, 0, 0, "" },
        { "eventlog-sink: something else", 0, ELS_NOTE_OTHER, 0, 0, "" },
        { "a user's log message: 3 units (3 bytes) dropped here: x;", 1,
          0, 0, 0, "" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct tbuf pl = {0};
        tb_str(&pl, cases[i].text);
        struct els_event ev = ev_of(ELS_EV_LOG_MSG, &pl);
        struct els_note n;
        CHECK_INT(els_note_decode(&ev, &n), ==, cases[i].rc);
        if (cases[i].rc != 0)
            continue;
        CHECK_INT(n.kind, ==, cases[i].kind);
        CHECK_U64(n.units, ==, cases[i].units);
        CHECK_U64(n.bytes, ==, cases[i].bytes);
        CHECK_INT(n.cause.len, ==, strlen(cases[i].cause));
        CHECK(memcmp(n.cause.ptr == NULL ? "" : n.cause.ptr, cases[i].cause,
                     n.cause.len) == 0);
        CHECK_INT(n.text.len, ==, strlen(cases[i].text));
    }
    /* A user message with the same text is not a note. */
    struct tbuf pl = {0};
    tb_str(&pl, cases[0].text);
    struct els_event ev = ev_of(ELS_EV_USER_MSG, &pl);
    struct els_note n;
    CHECK_INT(els_note_decode(&ev, &n), ==, 1);
}

/* Notes a real writer sends: a callback sink that holds its first unit
 * until told, policy=drop and a small queue, so that units are dropped
 * with cause queue-full; the parser's note decoder must find figures
 * that add up to the writer's own drop counters. */
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t held_cond = PTHREAD_COND_INITIALIZER;
static bool held_release, held_entered;
static struct { uint8_t *p; size_t len; } held_got;

static int held_open(void **sink, const struct els_sink_args *args)
{
    (void)args;
    *sink = NULL;
    return 0;
}

static void held_close(void *sink)
{
    (void)sink;
}

static int held_write(void *sink, const void *buf, size_t len)
{
    (void)sink;
    pthread_mutex_lock(&held_lock);
    held_entered = true;
    pthread_cond_broadcast(&held_cond);
    while (!held_release)
        pthread_cond_wait(&held_cond, &held_lock);
    uint8_t *p = realloc(held_got.p, held_got.len + len);
    CHECK(p != NULL);
    memcpy(p + held_got.len, buf, len);
    held_got.p = p;
    held_got.len += len;
    pthread_mutex_unlock(&held_lock);
    return 0;
}

static const struct els_sink_ops held_ops = {
    .struct_size = sizeof(struct els_sink_ops), .scheme = "test-held",
    .style = ELS_SINK_CALLBACK,
    .open = held_open, .close = held_close, .write = held_write,
};

struct note_sum { uint64_t units, bytes, notes; };

static int note_sum_on_event(void *user, const struct els_event *ev)
{
    struct note_sum *s = user;
    struct els_note n;
    if (els_note_decode(ev, &n) == 0 && n.kind == ELS_NOTE_DROPPED) {
        CHECK(n.cause.len == strlen("queue-full") &&
              memcmp(n.cause.ptr, "queue-full", n.cause.len) == 0);
        s->units += n.units;
        s->bytes += n.bytes;
        s->notes++;
    }
    return 0;
}

static void decode_notes_from_writer(void)
{
    els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);
    CHECK_OK(els_sink_register(&held_ops));
    struct els_writer *w;
    char err[256];
    CHECK_MSG(els_writer_open("test-held:x?buffer=3M&policy=drop&linger=10",
                              &w, err, sizeof err) == 0, "%s", err);
    struct evgen_buf h = evgen_header();
    CHECK_OK(els_writer_write(w, h.p, h.len));
    /* The header reaches the sink and is held there. */
    pthread_mutex_lock(&held_lock);
    while (!held_entered)
        pthread_cond_wait(&held_cond, &held_lock);
    pthread_mutex_unlock(&held_lock);
    for (int i = 0; i < 100; i++) {
        struct evgen_buf blk = evgen_block(0, (uint64_t)i * 1000, 20, "burst", 65536);
        els_writer_write(w, blk.p, blk.len);
        free(blk.p);
    }
    struct els_stats st;
    CHECK_OK(els_writer_stats(w, &st));
    CHECK(st.units_dropped[ELS_DROP_QUEUE_FULL] > 0);
    pthread_mutex_lock(&held_lock);
    held_release = true;
    pthread_cond_broadcast(&held_cond);
    pthread_mutex_unlock(&held_lock);
    CHECK_OK(els_writer_write(w, evgen_data_end, 2));
    CHECK_OK(els_writer_close(w));
    free(h.p);

    struct note_sum sum = {0};
    struct els_parse_callbacks cb = {
        .struct_size = sizeof cb, .on_event = note_sum_on_event,
    };
    struct els_parser *p;
    CHECK_OK(els_parser_new(&p, &cb, &sum, 0));
    CHECK_OK(els_parser_feed(p, held_got.p, held_got.len, NULL));
    struct els_parse_status ps;
    els_parser_status(p, &ps);
    CHECK_INT(ps.where, ==, ELS_PARSE_ENDED);
    CHECK(sum.notes > 0);
    CHECK_U64(sum.units, ==, st.units_dropped[ELS_DROP_QUEUE_FULL]);
    CHECK_U64(sum.bytes, ==, st.bytes_dropped[ELS_DROP_QUEUE_FULL]);
    els_parser_free(p);
    free(held_got.p);
}

/* ------------------------------------------------------------------------
 * A real eventlog written by GHC 9.0.2's own RTS (tests/data/README): it
 * must parse to its end, in odd pieces, with exactly as many events as
 * ghc-events read from it.
 * ------------------------------------------------------------------------ */

static void real_ghc_sample(void)
{
    const char *path = ELS_TEST_DATA_DIR "/ghc-9.0.2-N2.eventlog";
    const char *count_path = ELS_TEST_DATA_DIR "/ghc-9.0.2-N2.events";
    FILE *cf = fopen(count_path, "r");
    CHECK_MSG(cf != NULL, "%s: %s", count_path, strerror(errno));
    unsigned long long want_events = 0;
    CHECK_MSG(fscanf(cf, "%llu", &want_events) == 1, "%s: no count", count_path);
    fclose(cf);

    int fd = open(path, O_RDONLY | O_CLOEXEC);
    CHECK_MSG(fd >= 0, "%s: %s", path, strerror(errno));
    struct els_parser *p;
    CHECK_OK(els_parser_new(&p, NULL, NULL, 0));
    static const size_t pieces[] = { 1, 7, 4096, 3, 65536, 13 };
    uint8_t *buf = malloc(65536);
    CHECK(buf != NULL);
    uint64_t total = 0;
    struct els_parse_status st;
    for (size_t k = 0;; k++) {
        size_t want = pieces[k % (sizeof pieces / sizeof pieces[0])];
        ssize_t n = read(fd, buf, want);
        if (n < 0 && errno == EINTR)
            continue;
        CHECK_MSG(n >= 0, "read %s: %s", path, strerror(errno));
        if (n == 0)
            break;
        int r = els_parser_feed(p, buf, (size_t)n, NULL);
        els_parser_status(p, &st);
        CHECK_MSG(r == 0, "%s: %s", path, st.error ? st.error : "?");
        total += (uint64_t)n;
    }
    close(fd);
    free(buf);
    struct stat sb;
    CHECK_OK(stat(path, &sb));
    CHECK_U64(total, ==, (uint64_t)sb.st_size);
    els_parser_status(p, &st);
    CHECK_MSG(st.where == ELS_PARSE_ENDED, "%s: %s after %" PRIu64 " bytes",
              path, els_parse_where_name(st.where), total);
    CHECK_U64(st.offset, ==, total);
    CHECK_U64(st.events, ==, want_events);
    CHECK_U64(st.blocks, >=, 2);        /* one per capability at least */
    const struct els_event_type *types;
    CHECK_U64(els_parser_event_types(p, &types), >, 50); /* GHC declares all */
    els_parser_free(p);
}

static const struct check_case cases[] = {
    CHECK_CASE_T(every_split, 120),
    CHECK_CASE_T(byte_by_byte_and_random_pieces, 120),
    CHECK_CASE(status_where),
    CHECK_CASE(capability_of_block),
    CHECK_CASE(selection),
    CHECK_CASE(restart_after_end),
    CHECK_CASE(callbacks_struct_size),
    CHECK_CASE(callback_stops_feed),
    CHECK_CASE(edge_sizes),
    CHECK_CASE(error_magics),
    CHECK_CASE(error_events_and_lengths),
    CHECK_CASE_T(many_types_bounded, 60),
    CHECK_CASE_T(random_input, 120),
    CHECK_CASE(decode_layouts),
    CHECK_CASE(decode_notes_text),
    CHECK_CASE_T(decode_notes_from_writer, 60),
    CHECK_CASE(real_ghc_sample),
};

CHECK_MAIN(cases)
