/*
 * evgen.h: synthetic GHC eventlog units for tests: a header chunk that
 * declares the event types the library touches (log message, block marker,
 * user message) and blocks of user-message events, byte-for-byte in the
 * RTS's layout (rts/eventlog/EventLog.c).  Lets the writer tests feed
 * realistic units without running a Haskell program.
 */
#ifndef ELS_TEST_EVGEN_H
#define ELS_TEST_EVGEN_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct evgen_buf {
    uint8_t *p;
    size_t len, cap;
};

static void evgen_put(struct evgen_buf *b, const void *d, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->len + n)
            cap *= 2;
        b->p = realloc(b->p, cap);
        b->cap = cap;
    }
    memcpy(b->p + b->len, d, n);
    b->len += n;
}

/* Free b's bytes and empty it (a test's buffers must not leak: the leak
 * check runs at the end of every case, tests/check.h). */
static inline void evgen_free(struct evgen_buf *b)
{
    free(b->p);
    *b = (struct evgen_buf){ 0 };
}

static void evgen_u16(struct evgen_buf *b, uint16_t v)
{
    uint8_t x[2] = { (uint8_t)(v >> 8), (uint8_t)v };
    evgen_put(b, x, 2);
}

static void evgen_u32(struct evgen_buf *b, uint32_t v)
{
    evgen_u16(b, (uint16_t)(v >> 16));
    evgen_u16(b, (uint16_t)v);
}

static void evgen_u64(struct evgen_buf *b, uint64_t v)
{
    evgen_u32(b, (uint32_t)(v >> 32));
    evgen_u32(b, (uint32_t)v);
}

static void evgen_type(struct evgen_buf *b, uint16_t t, int16_t size,
                       const char *desc)
{
    evgen_u32(b, 0x65746200u);          /* etb */
    evgen_u16(b, t);
    evgen_u16(b, (uint16_t)size);
    evgen_u32(b, (uint32_t)strlen(desc));
    evgen_put(b, desc, strlen(desc));
    evgen_u32(b, 0);                    /* no extra info */
    evgen_u32(b, 0x65746500u);          /* ete */
}

/* The header chunk, as the RTS's first writeEventLog() call carries it. */
static struct evgen_buf evgen_header(void)
{
    struct evgen_buf b = { 0 };
    evgen_u32(&b, 0x68647262u);         /* hdrb */
    evgen_u32(&b, 0x68657462u);         /* hetb */
    evgen_type(&b, 16, -1, "Log message");
    evgen_type(&b, 18, 14, "Block marker");
    evgen_type(&b, 19, -1, "User message");
    evgen_u32(&b, 0x68657465u);         /* hete */
    evgen_u32(&b, 0x68647265u);         /* hdre */
    evgen_u32(&b, 0x64617462u);         /* datb */
    return b;
}

/* One block of capability cap with n user messages "<tag> <i>" starting at
 * timestamp t0, padded with events until it is at least min_len bytes. */
static struct evgen_buf evgen_block(uint16_t cap, uint64_t t0, unsigned n,
                                    const char *tag, size_t min_len)
{
    struct evgen_buf b = { 0 };
    evgen_u16(&b, 18);
    evgen_u64(&b, t0);
    evgen_u32(&b, 0);                   /* size, patched below */
    evgen_u64(&b, 0);                   /* end time, patched below */
    evgen_u16(&b, cap);
    uint64_t t = t0;
    for (unsigned i = 0; i < n || b.len < min_len; i++) {
        char msg[64];
        int m = snprintf(msg, sizeof msg, "%s %u", tag, i);
        evgen_u16(&b, 19);
        evgen_u64(&b, ++t);
        evgen_u16(&b, (uint16_t)m);
        evgen_put(&b, msg, (size_t)m);
    }
    uint32_t size = (uint32_t)b.len;
    uint8_t *p = b.p + 10;
    p[0] = (uint8_t)(size >> 24); p[1] = (uint8_t)(size >> 16);
    p[2] = (uint8_t)(size >> 8);  p[3] = (uint8_t)size;
    for (int k = 0; k < 8; k++)
        b.p[14 + k] = (uint8_t)(t >> (56 - 8 * k));
    return b;
}

static const uint8_t evgen_data_end[2] = { 0xff, 0xff };

#endif /* ELS_TEST_EVGEN_H */
