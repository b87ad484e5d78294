/*
 * test_evformat.c: unit tests for lib/format/evformat.c.
 *
 * Covers unit classification (each kind, and inputs cut short, held in
 * buffers of exactly their length so that a sanitizer build catches any
 * read past the end), the note encoding byte by byte and through the
 * framer, the framer fed in every split position, each of its error paths,
 * its complete flag, and random input; and a real eventlog written by GHC
 * 9.0.2's own RTS (tests/data/, see its README), which must frame cleanly
 * with as many events as ghc-events read from it.  The other streams built
 * here are hand-made; whether they satisfy ghc-events is checked by the
 * end-to-end tests, not here.
 */
#include <fcntl.h>
#include <stdbool.h>

#include "check.h"
#include "eventlog-sink.h"
#include "format/evformat.h"

/* ------------------------------------------------------------------------
 * Stream building
 * ------------------------------------------------------------------------ */

struct tbuf {
    uint8_t data[4096];
    size_t len;
};

static void tb_bytes(struct tbuf *b, const void *p, size_t n)
{
    CHECK_MSG(b->len + n <= sizeof b->data, "test buffer overflow");
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void tb_u8(struct tbuf *b, unsigned v)
{
    uint8_t x = (uint8_t)v;
    tb_bytes(b, &x, 1);
}

static void tb_u16(struct tbuf *b, unsigned v)
{
    tb_u8(b, v >> 8);
    tb_u8(b, v);
}

static void tb_u32(struct tbuf *b, uint32_t v)
{
    tb_u16(b, v >> 16);
    tb_u16(b, v & 0xffff);
}

static void tb_u64(struct tbuf *b, uint64_t v)
{
    tb_u32(b, (uint32_t)(v >> 32));
    tb_u32(b, (uint32_t)v);
}

static void tb_str(struct tbuf *b, const char *s)
{
    tb_bytes(b, s, strlen(s));
}

static void tb_event_type(struct tbuf *b, unsigned type, unsigned size,
                          const char *desc)
{
    tb_str(b, "etb");
    tb_u8(b, 0);
    tb_u16(b, type);
    tb_u16(b, size);
    tb_u32(b, (uint32_t)strlen(desc));
    tb_str(b, desc);
    tb_u32(b, 0);
    tb_str(b, "ete");
    tb_u8(b, 0);
}

/* The header of a minimal stream: types 16 (variable, log message),
 * 18 (block marker, 14 bytes) and 0 (create thread, 4 bytes). */
static void tb_header(struct tbuf *b)
{
    tb_str(b, "hdrbhetb");
    tb_event_type(b, 16, 0xffff, "Log message");
    tb_event_type(b, 18, 14, "Block marker");
    tb_event_type(b, 0, 4, "Create thread");
    tb_str(b, "hetehdredatb");
}

static void tb_end(struct tbuf *b)
{
    tb_u16(b, 0xffff);
}

static uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)rd16(p) << 16 | rd16(p + 2);
}

static uint64_t rd64(const uint8_t *p)
{
    return (uint64_t)rd32(p) << 32 | rd32(p + 4);
}

/* A copy of p in a heap block of exactly n bytes. */
static uint8_t *exact_copy(const void *p, size_t n)
{
    uint8_t *c = malloc(n ? n : 1);
    CHECK(c != NULL);
    if (n)
        memcpy(c, p, n);
    return c;
}

/* A valid stream: header, a block holding a thread creation and a log
 * message, a note block, DATA_END.  Returns the number of events that are
 * not block markers (2 + 1) through *events and blocks through *blocks. */
static void build_stream(struct tbuf *b, uint64_t *events, uint64_t *blocks)
{
    tb_header(b);
    size_t marker = b->len;
    tb_u16(b, 18);
    tb_u64(b, 100);
    tb_u32(b, 0);       /* size, patched below */
    tb_u64(b, 200);
    tb_u16(b, 0);
    tb_u16(b, 0);       /* create thread 7 */
    tb_u64(b, 150);
    tb_u32(b, 7);
    tb_u16(b, 16);      /* log message "hi" */
    tb_u64(b, 160);
    tb_u16(b, 2);
    tb_str(b, "hi");
    uint32_t size = (uint32_t)(b->len - marker);
    b->data[marker + 10] = (uint8_t)(size >> 24);
    b->data[marker + 11] = (uint8_t)(size >> 16);
    b->data[marker + 12] = (uint8_t)(size >> 8);
    b->data[marker + 13] = (uint8_t)size;
    size_t n = elsi_note_encode(b->data + b->len, sizeof b->data - b->len,
                                300, "note");
    CHECK(n > 0);
    b->len += n;
    tb_end(b);
    *events = 3;
    *blocks = 2;
}

/* Feed the stream in pieces cut at the given positions (ascending). */
static int feed_split(struct elsi_framer *f, const uint8_t *data, size_t len,
                      const size_t *cuts, size_t ncuts)
{
    size_t at = 0;
    for (size_t i = 0; i <= ncuts; i++) {
        size_t end = i < ncuts ? cuts[i] : len;
        /* Each piece in its own exact-size block for the sanitizers. */
        uint8_t *piece = exact_copy(data + at, end - at);
        int r = elsi_framer_feed(f, piece, end - at);
        free(piece);
        if (r < 0)
            return r;
        at = end;
    }
    return 0;
}

/* Feed a whole stream in one call to a fresh framer; return feed's result
 * and leave the framer in *f for inspection (caller destroys). */
static int feed_all(struct elsi_framer *f, const struct tbuf *b)
{
    CHECK_OK(elsi_framer_init(f));
    return feed_split(f, b->data, b->len, NULL, 0);
}

/* ------------------------------------------------------------------------
 * Classification
 * ------------------------------------------------------------------------ */

static void classify_kinds(void)
{
    struct elsi_unit_info info;
    struct tbuf b = {0};

    tb_header(&b);
    uint8_t *c = exact_copy(b.data, b.len);
    elsi_unit_classify(c, b.len, &info);
    CHECK_INT(info.kind, ==, ELSI_UNIT_KIND_HEADER);
    CHECK_INT(info.cap, ==, ELSI_CAP_GLOBAL);
    free(c);

    /* "hdrb" alone is still a header chunk (only the start is looked at). */
    c = exact_copy("hdrb", 4);
    elsi_unit_classify(c, 4, &info);
    CHECK_INT(info.kind, ==, ELSI_UNIT_KIND_HEADER);
    free(c);

    static const uint8_t end[2] = { 0xff, 0xff };
    c = exact_copy(end, 2);
    elsi_unit_classify(c, 2, &info);
    CHECK_INT(info.kind, ==, ELSI_UNIT_KIND_END);
    CHECK_U64(info.start_time, ==, 0);
    free(c);

    /* A block marker: type 18, start 0x0102030405060708, size 24,
     * end 0x1112131415161718, cap 3, followed by nothing. */
    struct tbuf m = {0};
    tb_u16(&m, 18);
    tb_u64(&m, 0x0102030405060708ull);
    tb_u32(&m, 24);
    tb_u64(&m, 0x1112131415161718ull);
    tb_u16(&m, 3);
    CHECK_INT(m.len, ==, ELSI_BLOCK_MARKER_BYTES);
    c = exact_copy(m.data, m.len);
    elsi_unit_classify(c, m.len, &info);
    CHECK_INT(info.kind, ==, ELSI_UNIT_KIND_BLOCK);
    CHECK_U64(info.start_time, ==, 0x0102030405060708ull);
    CHECK_U64(info.end_time, ==, 0x1112131415161718ull);
    CHECK_INT(info.cap, ==, 3);
    free(c);

    /* Something else: an event that is not a block marker. */
    struct tbuf o = {0};
    tb_u16(&o, 0);
    tb_u64(&o, 5);
    tb_u32(&o, 1);
    tb_u64(&o, 0);
    tb_u16(&o, 0);
    c = exact_copy(o.data, o.len);
    elsi_unit_classify(c, o.len, &info);
    CHECK_INT(info.kind, ==, ELSI_UNIT_KIND_OTHER);
    CHECK_INT(info.cap, ==, ELSI_CAP_GLOBAL);
    CHECK_U64(info.start_time, ==, 0);
    CHECK_U64(info.end_time, ==, 0);
    free(c);
}

static void classify_truncated(void)
{
    struct elsi_unit_info info;
    struct tbuf m = {0};
    tb_u16(&m, 18);
    tb_u64(&m, 1);
    tb_u32(&m, 24);
    tb_u64(&m, 2);
    tb_u16(&m, 0);

    /* Every proper prefix of a block marker is not a block. */
    for (size_t n = 0; n < ELSI_BLOCK_MARKER_BYTES; n++) {
        uint8_t *c = exact_copy(m.data, n);
        elsi_unit_classify(c, n, &info);
        CHECK_MSG(info.kind == ELSI_UNIT_KIND_OTHER,
                  "block marker cut to %zu bytes classified as %d", n,
                  (int)info.kind);
        CHECK_U64(info.start_time, ==, 0);
        free(c);
    }
    for (size_t n = 0; n < 4; n++) {
        uint8_t *c = exact_copy("hdrb", n);
        elsi_unit_classify(c, n, &info);
        CHECK_INT(info.kind, ==, ELSI_UNIT_KIND_OTHER);
        free(c);
    }
    /* DATA_END must be exactly two bytes. */
    static const uint8_t ends[3] = { 0xff, 0xff, 0xff };
    for (size_t n = 0; n <= 3; n++) {
        uint8_t *c = exact_copy(ends, n);
        elsi_unit_classify(c, n, &info);
        CHECK_INT(info.kind, ==,
                  n == 2 ? ELSI_UNIT_KIND_END : ELSI_UNIT_KIND_OTHER);
        free(c);
    }
    elsi_unit_classify(NULL, 0, &info);
    CHECK_INT(info.kind, ==, ELSI_UNIT_KIND_OTHER);
}

/* ------------------------------------------------------------------------
 * Notes
 * ------------------------------------------------------------------------ */

static void note_encode_bytes(void)
{
    const char *msg = "lost 3 units";
    size_t msg_len = strlen(msg);
    size_t want = 24 + 2 + 8 + 2 + msg_len;
    CHECK_INT(elsi_note_size(msg_len), ==, want);

    uint8_t buf[128];
    memset(buf, 0xaa, sizeof buf);
    uint64_t ts = 0x0a0b0c0d0e0f1011ull;
    CHECK_INT(elsi_note_encode(buf, sizeof buf, ts, msg), ==, want);

    /* Block marker: type 18, ts, size (whole block), end ts, cap 0xffff. */
    CHECK_INT(rd16(buf + 0), ==, 18);
    CHECK_U64(rd64(buf + 2), ==, ts);
    CHECK_INT(rd32(buf + 10), ==, want);
    CHECK_U64(rd64(buf + 14), ==, ts);
    CHECK_INT(rd16(buf + 22), ==, 0xffff);
    /* EVENT_LOG_MSG: type 16, ts, payload size, message without NUL. */
    CHECK_INT(rd16(buf + 24), ==, 16);
    CHECK_U64(rd64(buf + 26), ==, ts);
    CHECK_INT(rd16(buf + 34), ==, msg_len);
    CHECK(memcmp(buf + 36, msg, msg_len) == 0);
    /* Nothing written past the note. */
    for (size_t i = want; i < sizeof buf; i++)
        CHECK_INT(buf[i], ==, 0xaa);

    /* Explicit byte image of a short note, independent of rd*(). */
    static const uint8_t image[] = {
        0x00, 0x12,                                     /* type 18 */
        0, 0, 0, 0, 0, 0, 0x01, 0x02,                   /* ts 0x102 */
        0, 0, 0, 0x25,                                  /* size 37 */
        0, 0, 0, 0, 0, 0, 0x01, 0x02,                   /* end ts */
        0xff, 0xff,                                     /* cap */
        0x00, 0x10,                                     /* type 16 */
        0, 0, 0, 0, 0, 0, 0x01, 0x02,                   /* ts */
        0x00, 0x01,                                     /* length 1 */
        'x'
    };
    CHECK_INT(elsi_note_encode(buf, sizeof buf, 0x102, "x"), ==, sizeof image);
    CHECK(memcmp(buf, image, sizeof image) == 0);

    /* The note is a block unit, global, [ts, ts]. */
    struct elsi_unit_info info;
    elsi_unit_classify(buf, sizeof image, &info);
    CHECK_INT(info.kind, ==, ELSI_UNIT_KIND_BLOCK);
    CHECK_INT(info.cap, ==, ELSI_CAP_GLOBAL);
    CHECK_U64(info.start_time, ==, 0x102);
    CHECK_U64(info.end_time, ==, 0x102);
}

static void note_encode_limits(void)
{
    uint8_t buf[64];
    /* Too small by one byte: nothing written. */
    size_t need = elsi_note_size(5);
    memset(buf, 0xaa, sizeof buf);
    CHECK_INT(elsi_note_encode(buf, need - 1, 1, "hello"), ==, 0);
    CHECK_INT(buf[0], ==, 0xaa);
    CHECK_INT(elsi_note_encode(buf, need, 1, "hello"), ==, need);
    /* Empty and NULL messages give an empty payload. */
    CHECK_INT(elsi_note_encode(buf, sizeof buf, 1, ""), ==, 36);
    CHECK_INT(rd16(buf + 34), ==, 0);
    CHECK_INT(elsi_note_encode(buf, sizeof buf, 1, NULL), ==, 36);

    /* A message longer than 16 bits allow is cut to 65535 bytes. */
    CHECK_INT(elsi_note_size(65535), ==, 36 + 65535);
    CHECK_INT(elsi_note_size(65536), ==, 36 + 65535);
    CHECK_INT(elsi_note_size((size_t)-1), ==, 36 + 65535);
    size_t long_len = 100000;
    char *msg = malloc(long_len + 1);
    CHECK(msg != NULL);
    memset(msg, 'm', long_len);
    msg[long_len] = '\0';
    size_t total = elsi_note_size(long_len);
    uint8_t *big = malloc(total);
    CHECK(big != NULL);
    CHECK_INT(elsi_note_encode(big, total, 9, msg), ==, total);
    CHECK_INT(rd32(big + 10), ==, total);
    CHECK_INT(rd16(big + 34), ==, 65535);
    CHECK(memcmp(big + 36, msg, 65535) == 0);
    free(big);
    free(msg);
}

/* The note inside a minimal stream declaring only types 16 and 18. */
static void note_roundtrip_framer(void)
{
    struct tbuf b = {0};
    tb_str(&b, "hdrbhetb");
    tb_event_type(&b, 18, 14, "Block marker");
    tb_event_type(&b, 16, 0xffff, "Log message");
    tb_str(&b, "hetehdredatb");
    size_t note_at = b.len;
    size_t n = elsi_note_encode(b.data + b.len, sizeof b.data - b.len, 42,
                                "dropped 1 unit (queue-full)");
    CHECK_INT(n, ==, elsi_note_size(strlen("dropped 1 unit (queue-full)")));
    b.len += n;
    tb_end(&b);

    struct elsi_framer f;
    CHECK_OK(feed_all(&f, &b));
    CHECK(elsi_framer_complete(&f));
    CHECK_U64(f.events, ==, 1);
    CHECK_U64(f.blocks, ==, 1);
    CHECK_U64(f.event_types, ==, 2);
    CHECK_U64(f.offset, ==, b.len);
    /* The block's size field ends exactly where DATA_END begins. */
    CHECK_INT(note_at + rd32(b.data + note_at + 10), ==, b.len - 2);
    elsi_framer_destroy(&f);
}

/* ------------------------------------------------------------------------
 * Framer: splits and the complete flag
 * ------------------------------------------------------------------------ */

static void framer_every_split(void)
{
    struct tbuf b = {0};
    uint64_t events, blocks;
    build_stream(&b, &events, &blocks);

    for (size_t i = 0; i <= b.len; i++) {
        struct elsi_framer f;
        CHECK_OK(elsi_framer_init(&f));
        size_t cut = i;
        int r = feed_split(&f, b.data, b.len, &cut, 1);
        CHECK_MSG(r == 0, "split at %zu: %s", i, f.error);
        CHECK_MSG(elsi_framer_complete(&f), "split at %zu: not complete", i);
        CHECK_U64(f.events, ==, events);
        CHECK_U64(f.blocks, ==, blocks);
        CHECK_U64(f.event_types, ==, 3);
        CHECK_U64(f.offset, ==, b.len);
        elsi_framer_destroy(&f);
    }

    /* Pairs of cuts, so that items are also cut twice.  Every first cut
     * with every fifth second cut: each framer allocates its 256 KiB
     * size table, and all pairs take minutes under TSan. */
    for (size_t i = 0; i <= b.len; i++) {
        for (size_t j = i; j <= b.len; j += 5) {
            struct elsi_framer f;
            CHECK_OK(elsi_framer_init(&f));
            size_t cuts[2] = { i, j };
            int r = feed_split(&f, b.data, b.len, cuts, 2);
            CHECK_MSG(r == 0 && elsi_framer_complete(&f),
                      "cuts at %zu, %zu: r=%d %s", i, j, r, f.error);
            CHECK_U64(f.events, ==, events);
            elsi_framer_destroy(&f);
        }
    }
}

static void framer_byte_by_byte(void)
{
    struct tbuf b = {0};
    uint64_t events, blocks;
    build_stream(&b, &events, &blocks);

    struct elsi_framer f;
    CHECK_OK(elsi_framer_init(&f));
    CHECK_INT(f.state, ==, ELSI_FRAMER_HEADER);
    uint64_t last_events = 0;
    for (size_t i = 0; i < b.len; i++) {
        CHECK_MSG(!elsi_framer_complete(&f), "complete after %zu bytes", i);
        CHECK_MSG(elsi_framer_feed(&f, b.data + i, 1) == 0, "byte %zu: %s",
                  i, f.error);
        CHECK_U64(f.offset, ==, i + 1);
        /* Counters only grow, one at a time. */
        CHECK(f.events == last_events || f.events == last_events + 1);
        last_events = f.events;
    }
    CHECK(elsi_framer_complete(&f));
    CHECK_INT(f.state, ==, ELSI_FRAMER_ENDED);
    CHECK_U64(f.events, ==, events);
    CHECK_U64(f.blocks, ==, blocks);
    /* Empty feeds are harmless, even after the end. */
    CHECK_OK(elsi_framer_feed(&f, b.data, 0));
    CHECK(elsi_framer_complete(&f));
    elsi_framer_destroy(&f);
}

static void framer_complete_flag(void)
{
    struct tbuf b = {0};
    uint64_t events, blocks;
    build_stream(&b, &events, &blocks);

    /* Header only: well formed, not complete. */
    struct tbuf h = {0};
    tb_header(&h);
    struct elsi_framer f;
    CHECK_OK(feed_all(&f, &h));
    CHECK(!elsi_framer_complete(&f));
    CHECK_INT(f.state, ==, ELSI_FRAMER_DATA);
    CHECK_U64(f.event_types, ==, 3);
    CHECK_U64(f.events, ==, 0);
    elsi_framer_destroy(&f);

    /* All but the last byte of DATA_END: not complete; then complete. */
    CHECK_OK(elsi_framer_init(&f));
    CHECK_OK(elsi_framer_feed(&f, b.data, b.len - 1));
    CHECK(!elsi_framer_complete(&f));
    CHECK_U64(f.events, ==, events);
    CHECK_OK(elsi_framer_feed(&f, b.data + b.len - 1, 1));
    CHECK(elsi_framer_complete(&f));
    elsi_framer_destroy(&f);

    /* An event counts only once its payload is complete. */
    CHECK_OK(elsi_framer_init(&f));
    CHECK_OK(elsi_framer_feed(&f, b.data, h.len + 24 + 10 + 3));
    CHECK_U64(f.blocks, ==, 1);
    CHECK_U64(f.events, ==, 0);
    CHECK_OK(elsi_framer_feed(&f, b.data + h.len + 37, 1));
    CHECK_U64(f.events, ==, 1);
    elsi_framer_destroy(&f);

    /* An empty stream is not complete. */
    CHECK_OK(elsi_framer_init(&f));
    CHECK(!elsi_framer_complete(&f));
    elsi_framer_destroy(&f);
    /* Destroy twice is harmless. */
    elsi_framer_destroy(&f);
}

/* Zero-size payloads, empty variable payloads, empty descriptions, extra
 * info, and sizes above 32767 (unsigned, as ghc-events reads them). */
static void framer_edge_sizes(void)
{
    struct tbuf b = {0};
    tb_str(&b, "hdrbhetb");
    tb_event_type(&b, 9, 0, "");
    tb_event_type(&b, 16, 0xffff, "Log message");
    /* An entry with 3 bytes of extra info. */
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
    tb_event_type(&b, 41, 0x8000, "big");
    /* Declaring a type twice with the same size is accepted. */
    tb_event_type(&b, 9, 0, "again");
    tb_str(&b, "hetehdredatb");
    tb_u16(&b, 9);              /* zero payload */
    tb_u64(&b, 1);
    size_t after_zero = b.len;
    tb_u16(&b, 16);             /* empty message */
    tb_u64(&b, 2);
    tb_u16(&b, 0);
    size_t after_empty = b.len;
    tb_u16(&b, 40);
    tb_u64(&b, 3);
    tb_u16(&b, 0xbeef);
    size_t before_big = b.len;
    tb_u16(&b, 41);
    tb_u64(&b, 4);

    /* An event with nothing after its header counts as soon as its last
     * byte is fed, not when the next byte arrives. */
    struct elsi_framer f;
    CHECK_OK(elsi_framer_init(&f));
    CHECK_OK(elsi_framer_feed(&f, b.data, after_zero));
    CHECK_U64(f.events, ==, 1);
    CHECK_OK(elsi_framer_feed(&f, b.data + after_zero,
                              after_empty - after_zero));
    CHECK_U64(f.events, ==, 2);
    elsi_framer_destroy(&f);

    CHECK_OK(feed_all(&f, &b));
    CHECK_U64(f.event_types, ==, 4);
    CHECK_U64(f.events, ==, 3);
    CHECK_U64(f.offset, ==, b.len);
    /* 0x8000 payload bytes, fed in pieces. */
    uint8_t zeros[1000] = {0};
    size_t left = 0x8000;
    while (left > 0) {
        size_t n = left < sizeof zeros ? left : sizeof zeros;
        CHECK_OK(elsi_framer_feed(&f, zeros, n));
        left -= n;
    }
    CHECK_U64(f.events, ==, 4);
    static const uint8_t end[2] = { 0xff, 0xff };
    CHECK_OK(elsi_framer_feed(&f, end, 2));
    CHECK(elsi_framer_complete(&f));
    CHECK_U64(f.offset, ==, before_big + 10 + 0x8000 + 2);
    elsi_framer_destroy(&f);
}

/* ------------------------------------------------------------------------
 * Framer: errors
 * ------------------------------------------------------------------------ */

/* Feed b whole and expect an error naming offset at and containing what;
 * then check that the error is sticky.  Also feed it byte by byte and
 * expect the same message. */
static void expect_error(const struct tbuf *b, uint64_t at, const char *what)
{
    char want[64];
    snprintf(want, sizeof want, "offset %" PRIu64 ": ", at);

    struct elsi_framer f;
    CHECK_OK(elsi_framer_init(&f));
    int r = elsi_framer_feed(&f, b->data, b->len);
    CHECK_INT(r, ==, ELS_EINVAL);
    CHECK_INT(f.state, ==, ELSI_FRAMER_ERROR);
    CHECK(!elsi_framer_complete(&f));
    CHECK_MSG(strncmp(f.error, want, strlen(want)) == 0,
              "error \"%s\" does not start with \"%s\"", f.error, want);
    CHECK_CONTAINS(f.error, what);
    char saved[sizeof f.error];
    memcpy(saved, f.error, sizeof saved);
    /* Sticky: later feeds fail and keep the first message. */
    static const uint8_t end[2] = { 0xff, 0xff };
    CHECK_INT(elsi_framer_feed(&f, end, 2), ==, ELS_EINVAL);
    CHECK_INT(elsi_framer_feed(&f, end, 0), ==, ELS_EINVAL);
    CHECK_STR(f.error, saved);
    elsi_framer_destroy(&f);

    CHECK_OK(elsi_framer_init(&f));
    r = 0;
    for (size_t i = 0; i < b->len && r == 0; i++)
        r = elsi_framer_feed(&f, b->data + i, 1);
    CHECK_INT(r, ==, ELS_EINVAL);
    CHECK_STR(f.error, saved);
    elsi_framer_destroy(&f);
}

static void framer_error_magics(void)
{
    struct tbuf good = {0};
    tb_header(&good);
    size_t types_end = good.len - 12;   /* where "hete" starts */

    struct tbuf b = good;
    b.data[0] = 'H';
    expect_error(&b, 0, "expected \"hdrb\"");

    b = good;
    b.data[5] = 'E';
    expect_error(&b, 4, "expected \"hetb\"");

    b = good;
    b.data[8] = 'x';                    /* first "etb\0" */
    expect_error(&b, 8, "expected \"etb\\0\" or \"hete\"");

    b = good;
    b.data[types_end] = 'H';
    expect_error(&b, types_end, "expected \"etb\\0\" or \"hete\"");

    b = good;
    b.data[types_end + 4] = 'H';
    expect_error(&b, types_end + 4, "expected \"hdre\"");

    b = good;
    b.data[types_end + 8] = 'D';
    expect_error(&b, types_end + 8, "expected \"datb\"");

    /* "ete\0" of the first entry: 8 + 4 + 8 + strlen("Log message") + 4 */
    size_t ete = 8 + 4 + 8 + 11 + 4;
    b = good;
    CHECK_INT(b.data[ete], ==, 'e');
    b.data[ete + 3] = 1;
    expect_error(&b, ete, "expected \"ete\\0\"");
}

static void framer_error_undeclared(void)
{
    struct tbuf b = {0};
    tb_header(&b);
    tb_u16(&b, 0);          /* declared: fine */
    tb_u64(&b, 1);
    tb_u32(&b, 1);
    size_t bad = b.len;
    tb_u16(&b, 17);         /* never declared */
    tb_u64(&b, 2);
    tb_end(&b);
    expect_error(&b, bad, "event type 17 was not declared");
}

static void framer_error_after_end(void)
{
    struct tbuf b = {0};
    uint64_t events, blocks;
    build_stream(&b, &events, &blocks);
    size_t end = b.len;
    tb_str(&b, "hdrb");     /* a second stream glued on */
    expect_error(&b, end, "after DATA_END");

    /* Also when the extra bytes come in a later feed. */
    struct elsi_framer f;
    CHECK_OK(elsi_framer_init(&f));
    CHECK_OK(elsi_framer_feed(&f, b.data, end));
    CHECK(elsi_framer_complete(&f));
    CHECK_INT(elsi_framer_feed(&f, b.data + end, 1), ==, ELS_EINVAL);
    CHECK(!elsi_framer_complete(&f));
    char want[64];
    snprintf(want, sizeof want, "offset %zu: data after DATA_END", end);
    CHECK_STR(f.error, want);
    elsi_framer_destroy(&f);
}

static void framer_error_lengths(void)
{
    /* Description length over 1 MiB: reported at the length field. */
    struct tbuf b = {0};
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
    tb_u32(&b, 0xffffffffu);
    expect_error(&b, 16, "limit 1 MiB");

    /* Exactly 1 MiB is allowed (skipped without being stored). */
    struct elsi_framer f;
    b.len = 0;
    tb_str(&b, "hdrbhetbetb");
    tb_u8(&b, 0);
    tb_u16(&b, 5);
    tb_u16(&b, 4);
    tb_u32(&b, 1024 * 1024);
    CHECK_OK(feed_all(&f, &b));
    uint8_t chunk[4096];
    memset(chunk, 'd', sizeof chunk);
    for (size_t i = 0; i < 1024 * 1024 / sizeof chunk; i++)
        CHECK_OK(elsi_framer_feed(&f, chunk, sizeof chunk));
    CHECK_INT(f.state, ==, ELSI_FRAMER_HEADER);
    elsi_framer_destroy(&f);

    /* Extra info over 1 MiB. */
    b.len = 0;
    tb_str(&b, "hdrbhetbetb");
    tb_u8(&b, 0);
    tb_u16(&b, 5);
    tb_u16(&b, 4);
    tb_u32(&b, 1);
    tb_str(&b, "d");
    tb_u32(&b, 0x80000000u);
    expect_error(&b, 21, "extra info of event type 5");
}

static void framer_error_declarations(void)
{
    struct tbuf b = {0};
    tb_str(&b, "hdrbhetb");
    tb_event_type(&b, 0xffff, 4, "end?");
    expect_error(&b, 12, "reserved for DATA_END");

    b.len = 0;
    tb_str(&b, "hdrbhetb");
    tb_event_type(&b, 7, 4, "a");
    size_t second = b.len;
    tb_event_type(&b, 7, 6, "b");
    /* Reported at the second entry's "ete\0". */
    expect_error(&b, second + 4 + 8 + 1 + 4, "event type 7 declared again");
}

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Random bytes, and random corruptions of a valid stream, fed in random
 * pieces: the framer must never crash, read or write out of bounds (run
 * under ASan), or report an offset other than the bytes it consumed. */
static void framer_random_input(void)
{
    struct tbuf good = {0};
    uint64_t events, blocks;
    build_stream(&good, &events, &blocks);
    uint64_t seed = 0x9e3779b97f4a7c15ull;
#define NEXT() xorshift(&seed)

    for (int round = 0; round < 20000; round++) {
        struct tbuf b = good;
        if (round % 4 == 0) {
            /* Pure noise, sometimes with a valid start. */
            size_t keep = (round % 8 == 0) ? 8 : 0;
            for (size_t i = keep; i < b.len; i++)
                b.data[i] = (uint8_t)NEXT();
        } else {
            int flips = 1 + (int)(NEXT() % 4);
            for (int k = 0; k < flips; k++)
                b.data[NEXT() % b.len] = (uint8_t)NEXT();
            if (NEXT() % 3 == 0)
                b.len = NEXT() % (b.len + 1);
        }
        struct elsi_framer f;
        CHECK_OK(elsi_framer_init(&f));
        size_t at = 0;
        int r = 0;
        while (at < b.len && r == 0) {
            size_t n = 1 + NEXT() % 40;
            if (n > b.len - at)
                n = b.len - at;
            uint8_t *piece = exact_copy(b.data + at, n);
            r = elsi_framer_feed(&f, piece, n);
            free(piece);
            at += n;
        }
        if (r == 0) {
            CHECK_U64(f.offset, ==, b.len);
            CHECK(f.state != ELSI_FRAMER_ERROR);
        } else {
            CHECK_INT(r, ==, ELS_EINVAL);
            CHECK_INT(f.state, ==, ELSI_FRAMER_ERROR);
            CHECK_MSG(strncmp(f.error, "offset ", 7) == 0, "error: %s",
                      f.error);
            CHECK(f.offset <= b.len);
            CHECK(!elsi_framer_complete(&f));
        }
        elsi_framer_destroy(&f);
    }
#undef NEXT
}

/* ------------------------------------------------------------------------
 * A real eventlog
 * ------------------------------------------------------------------------ */

/* The committed sample (tests/data/ghc-9.0.2-N2.eventlog: -threaded -N2,
 * two threads of user events and markers, three blocks) is fed in odd
 * piece sizes so that items straddle feeds; the framer must find it
 * complete and count exactly the events ghc-events counted when the sample
 * was made (tests/data/ghc-9.0.2-N2.events). */
static void framer_ghc_sample(void)
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

    struct elsi_framer f;
    CHECK_OK(elsi_framer_init(&f));
    static const size_t pieces[] = { 1, 7, 4096, 3, 65536, 13 };
    uint8_t *buf = malloc(65536);
    CHECK(buf != NULL);
    uint64_t total = 0;
    for (size_t k = 0;; k++) {
        size_t want = pieces[k % (sizeof pieces / sizeof pieces[0])];
        ssize_t n = read(fd, buf, want);
        if (n < 0 && errno == EINTR)
            continue;
        CHECK_MSG(n >= 0, "read %s: %s", path, strerror(errno));
        if (n == 0)
            break;
        int r = elsi_framer_feed(&f, buf, (size_t)n);
        CHECK_MSG(r == 0, "%s: %s", path, f.error);
        total += (uint64_t)n;
    }
    close(fd);
    free(buf);
    struct stat st;
    CHECK_OK(stat(path, &st));
    CHECK_U64(total, ==, (uint64_t)st.st_size);
    CHECK_MSG(elsi_framer_complete(&f), "%s: no DATA_END after %" PRIu64
              " bytes", path, total);
    CHECK_U64(f.offset, ==, total);
    CHECK_U64(f.events, ==, want_events);
    CHECK_U64(f.blocks, >=, 2);         /* one per capability at least */
    CHECK_U64(f.event_types, >, 50);    /* GHC declares every type it has */
    printf("framer_ghc_sample: %" PRIu64 " bytes, %" PRIu64 " events, %"
           PRIu64 " blocks, %" PRIu64 " event types\n", total, f.events,
           f.blocks, f.event_types);
    elsi_framer_destroy(&f);
}

static const struct check_case cases[] = {
    CHECK_CASE(classify_kinds),
    CHECK_CASE(classify_truncated),
    CHECK_CASE(note_encode_bytes),
    CHECK_CASE(note_encode_limits),
    CHECK_CASE(note_roundtrip_framer),
    CHECK_CASE(framer_every_split),
    CHECK_CASE(framer_byte_by_byte),
    CHECK_CASE(framer_complete_flag),
    CHECK_CASE(framer_edge_sizes),
    CHECK_CASE(framer_error_magics),
    CHECK_CASE(framer_error_undeclared),
    CHECK_CASE(framer_error_after_end),
    CHECK_CASE(framer_error_lengths),
    CHECK_CASE(framer_error_declarations),
    CHECK_CASE_T(framer_random_input, 120),
    CHECK_CASE(framer_ghc_sample),
};

CHECK_MAIN(cases)
