/*
 * streams.h: hand-made eventlog streams for the tests of lib/format
 * (test_evformat.c, test_parse.c): a byte buffer with big-endian writers,
 * a minimal header, and a small valid stream with a block and a note.
 * Whether such streams satisfy ghc-events is the end-to-end tests' job.
 */
#ifndef ELS_TEST_FORMAT_STREAMS_H
#define ELS_TEST_FORMAT_STREAMS_H

#include "check.h"
#include "format/evformat.h"

/* ------------------------------------------------------------------------
 * Stream building
 * ------------------------------------------------------------------------ */

struct tbuf {
    uint8_t data[4096];
    size_t len;
};

static inline void tb_bytes(struct tbuf *b, const void *p, size_t n)
{
    CHECK_MSG(b->len + n <= sizeof b->data, "test buffer overflow");
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static inline void tb_u8(struct tbuf *b, unsigned v)
{
    uint8_t x = (uint8_t)v;
    tb_bytes(b, &x, 1);
}

static inline void tb_u16(struct tbuf *b, unsigned v)
{
    tb_u8(b, v >> 8);
    tb_u8(b, v);
}

static inline void tb_u32(struct tbuf *b, uint32_t v)
{
    tb_u16(b, v >> 16);
    tb_u16(b, v & 0xffff);
}

static inline void tb_u64(struct tbuf *b, uint64_t v)
{
    tb_u32(b, (uint32_t)(v >> 32));
    tb_u32(b, (uint32_t)v);
}

static inline void tb_str(struct tbuf *b, const char *s)
{
    tb_bytes(b, s, strlen(s));
}

static inline void tb_event_type(struct tbuf *b, unsigned type, unsigned size,
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
static inline void tb_header(struct tbuf *b)
{
    tb_str(b, "hdrbhetb");
    tb_event_type(b, 16, 0xffff, "Log message");
    tb_event_type(b, 18, 14, "Block marker");
    tb_event_type(b, 0, 4, "Create thread");
    tb_str(b, "hetehdredatb");
}

static inline void tb_end(struct tbuf *b)
{
    tb_u16(b, 0xffff);
}

static inline uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)rd16(p) << 16 | rd16(p + 2);
}

static inline uint64_t rd64(const uint8_t *p)
{
    return (uint64_t)rd32(p) << 32 | rd32(p + 4);
}

/* A copy of p in a heap block of exactly n bytes. */
static inline uint8_t *exact_copy(const void *p, size_t n)
{
    uint8_t *c = malloc(n ? n : 1);
    CHECK(c != NULL);
    if (n)
        memcpy(c, p, n);
    return c;
}

/* Open a block of cap (0xffff: global) with a marker whose size
 * tb_block_close() fills in; returns where the marker starts. */
static inline size_t tb_block_open(struct tbuf *b, uint64_t time, uint64_t end_time,
                                   unsigned cap)
{
    size_t marker = b->len;
    tb_u16(b, 18);
    tb_u64(b, time);
    tb_u32(b, 0);
    tb_u64(b, end_time);
    tb_u16(b, cap);
    return marker;
}

static inline void tb_block_close(struct tbuf *b, size_t marker)
{
    uint32_t size = (uint32_t)(b->len - marker);
    for (int k = 0; k < 4; k++)
        b->data[marker + 10 + k] = (uint8_t)(size >> (24 - 8 * k));
}

/* A valid stream: header, a block holding a thread creation and a log
 * message, a note block, DATA_END.  Returns the number of events that are
 * not block markers (2 + 1) through *events and blocks through *blocks. */
static inline void build_stream(struct tbuf *b, uint64_t *events, uint64_t *blocks)
{
    tb_header(b);
    size_t marker = tb_block_open(b, 100, 200, 0);
    tb_u16(b, 0);       /* create thread 7 */
    tb_u64(b, 150);
    tb_u32(b, 7);
    tb_u16(b, 16);      /* log message "hi" */
    tb_u64(b, 160);
    tb_u16(b, 2);
    tb_str(b, "hi");
    tb_block_close(b, marker);
    size_t n = elsi_note_encode(b->data + b->len, sizeof b->data - b->len,
                                300, "note");
    CHECK(n > 0);
    b->len += n;
    tb_end(b);
    *events = 3;
    *blocks = 2;
}

#endif /* ELS_TEST_FORMAT_STREAMS_H */
