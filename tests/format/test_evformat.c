/*
 * test_evformat.c: unit tests for lib/format/evformat.c.
 *
 * Covers unit classification (each kind, and inputs cut short, held in
 * buffers of exactly their length so that a sanitizer build catches any
 * read past the end) and the note encoding, byte by byte and through the
 * parser.  The parser's own tests are in test_parse.c.
 */
#include <fcntl.h>
#include <stdbool.h>

#include "check.h"
#include "eventlog-sink.h"
#include "eventlog-sink/parse.h"
#include "format/evformat.h"
#include "streams.h"

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
static void note_roundtrip_parser(void)
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

    struct els_parser *p;
    struct els_parse_status st;
    CHECK_OK(els_parser_new(&p, NULL, NULL, 0));
    CHECK_OK(els_parser_feed(p, b.data, b.len, NULL));
    els_parser_status(p, &st);
    CHECK_INT(st.where, ==, ELS_PARSE_ENDED);
    CHECK_U64(st.events, ==, 1);
    CHECK_U64(st.blocks, ==, 1);
    CHECK_U64(st.offset, ==, b.len);
    /* The block's size field ends exactly where DATA_END begins. */
    CHECK_INT(note_at + rd32(b.data + note_at + 10), ==, b.len - 2);
    els_parser_free(p);
}

static const struct check_case cases[] = {
    CHECK_CASE(classify_kinds),
    CHECK_CASE(classify_truncated),
    CHECK_CASE(note_encode_bytes),
    CHECK_CASE(note_encode_limits),
    CHECK_CASE(note_roundtrip_parser),
};

CHECK_MAIN(cases)
