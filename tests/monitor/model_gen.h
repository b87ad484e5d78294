/*
 * model_gen.h: GHC eventlog streams built event by event in the RTS's
 * layout (rts/eventlog/EventLog.c) for tests/monitor/test_model.c: a
 * header declaring the types the model reads, blocks of a capability,
 * and the events the model interprets (threads and their stops, GC
 * requests, phases and statistics, text, heap and heap censuses, cost
 * centres and their samples).  Static, like tests/evgen.h, which
 * it builds on.
 */
#ifndef ELS_TEST_MODEL_GEN_H
#define ELS_TEST_MODEL_GEN_H

#include <stdint.h>
#include <string.h>

#include "evgen.h"

#define MS 1000000ull

static struct evgen_buf header(void)
{
    (void)evgen_block;
    (void)evgen_header;
    static const struct { uint16_t tag; int16_t size; const char *desc; } types[] = {
        { 0, 4, "Create thread" }, { 1, 4, "Run thread" },
        { 2, 10, "Stop thread" }, { 9, 0, "Start GC" }, { 10, 0, "Stop GC" },
        { 11, 0, "Request sequential GC" }, { 12, 0, "Request parallel GC" },
        { 45, 2, "Create capability" },
        { 53, 58, "GC statistics" },
        { 160, -1, "Start of heap profile" },
        { 163, -1, "Cost-centre heap profile sample" },
        { 16, -1, "Log message" }, { 18, 14, "Block marker" },
        { 19, -1, "User message" }, { 58, -1, "User marker" },
        { 30, -1, "Program arguments" }, { 32, 8, "Process ID" },
        { 49, 12, "Heap allocated" }, { 50, 12, "Heap size" },
        { 51, 12, "Heap live" }, { 161, -1, "Cost centre definition" },
        { 162, 8, "Start of heap profile sample" },
        { 164, -1, "Heap profile sample string" },
        { 165, 8, "End of heap profile sample" },
        { 167, -1, "Time profile sample" },
        { 34, 56, "Spark counters" },
    };
    struct evgen_buf b = { 0 };
    evgen_u32(&b, 0x68647262u);
    evgen_u32(&b, 0x68657462u);
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        evgen_type(&b, types[i].tag, types[i].size, types[i].desc);
    evgen_u32(&b, 0x68657465u);
    evgen_u32(&b, 0x68647265u);
    evgen_u32(&b, 0x64617462u);
    return b;
}

/* Events go into blocks: block(cap) opens one (closing the last, whose
 * size is then known), events follow; end_block() closes the last. */
static size_t block_at = SIZE_MAX;

static void end_block(struct evgen_buf *b)
{
    if (block_at == SIZE_MAX)
        return;
    uint32_t size = (uint32_t)(b->len - block_at);
    uint8_t *p = b->p + block_at + 10;
    p[0] = (uint8_t)(size >> 24); p[1] = (uint8_t)(size >> 16);
    p[2] = (uint8_t)(size >> 8);  p[3] = (uint8_t)size;
    block_at = SIZE_MAX;
}

static void block(struct evgen_buf *b, uint16_t cap, uint64_t t)
{
    end_block(b);
    block_at = b->len;
    evgen_u16(b, 18);
    evgen_u64(b, t);
    evgen_u32(b, 0);
    evgen_u64(b, t);
    evgen_u16(b, cap);
}

static void ev(struct evgen_buf *b, uint16_t tag, uint64_t t)
{
    evgen_u16(b, tag);
    evgen_u64(b, t);
}

static void ev_thread(struct evgen_buf *b, uint16_t tag, uint64_t t, uint32_t th)
{
    ev(b, tag, t);
    evgen_u32(b, th);
}

static void ev_stop(struct evgen_buf *b, uint64_t t, uint32_t th, uint16_t status)
{
    ev(b, 2, t);
    evgen_u32(b, th);
    evgen_u16(b, status);
    evgen_u32(b, 0);
}

static void ev_text(struct evgen_buf *b, uint16_t tag, uint64_t t, const char *s)
{
    ev(b, tag, t);
    evgen_u16(b, (uint16_t)strlen(s));
    evgen_put(b, s, strlen(s));
}

static void ev_heap(struct evgen_buf *b, uint16_t tag, uint64_t t, uint64_t bytes)
{
    ev(b, tag, t);
    evgen_u32(b, 1);
    evgen_u64(b, bytes);
}

static void ev_cc(struct evgen_buf *b, uint32_t id, const char *label,
                  const char *module)
{
    ev(b, 161, 0);
    evgen_u16(b, (uint16_t)(4 + strlen(label) + 1 + strlen(module) + 1 + 5 + 1));
    evgen_u32(b, id);
    evgen_put(b, label, strlen(label) + 1);
    evgen_put(b, module, strlen(module) + 1);
    evgen_put(b, "x.hs", 5);
    evgen_put(b, "", 1);
}

static void ev_sample(struct evgen_buf *b, uint64_t t, unsigned depth,
                      const uint32_t *ids)
{
    ev(b, 167, t);
    evgen_u16(b, (uint16_t)(13 + 4 * depth));
    evgen_u32(b, 0);
    evgen_u64(b, t / 1000);
    uint8_t d = (uint8_t)depth;
    evgen_put(b, &d, 1);
    for (unsigned i = 0; i < depth; i++)
        evgen_u32(b, ids[i]);
}

/* GC_STATS_GHC of a collection of generation gen (the other figures 0). */
static void ev_gc_stats(struct evgen_buf *b, uint64_t t, uint16_t gen)
{
    ev(b, 53, t);
    evgen_u32(b, 0);
    evgen_u16(b, gen);
    for (int i = 0; i < 3; i++)
        evgen_u64(b, 0);
    evgen_u32(b, 1);
    for (int i = 0; i < 3; i++)
        evgen_u64(b, 0);
}

/* HEAP_PROF_BEGIN with breakdown (GHC's HEAP_PROF_BREAKDOWN_*), every
 * selector empty. */
static void ev_heap_prof_begin(struct evgen_buf *b, uint32_t breakdown)
{
    ev(b, 160, 0);
    evgen_u16(b, 1 + 8 + 4 + 7);
    uint8_t z[8] = { 0 };
    evgen_put(b, z, 1);
    evgen_u64(b, 100000000);
    evgen_u32(b, breakdown);
    evgen_put(b, z, 7);
}

/* SPARK_COUNTERS: created, dud, overflowed, converted, GC'd, fizzled,
 * remaining (the RTS's order). */
static void ev_sparks(struct evgen_buf *b, uint64_t t, const uint64_t sp[7])
{
    ev(b, 34, t);
    for (int k = 0; k < 7; k++)
        evgen_u64(b, sp[k]);
}

/* HEAP_PROF_SAMPLE_BEGIN (era) / _END at t. */
static void ev_census(struct evgen_buf *b, uint16_t tag, uint64_t t, uint64_t era)
{
    ev(b, tag, t);
    evgen_u64(b, era);
}

/* HEAP_PROF_SAMPLE_STRING: label's bytes in the census. */
static void ev_band(struct evgen_buf *b, uint64_t t, uint64_t bytes,
                    const char *label)
{
    ev(b, 164, t);
    evgen_u16(b, (uint16_t)(1 + 8 + strlen(label) + 1));
    uint8_t prof = 0;
    evgen_put(b, &prof, 1);
    evgen_u64(b, bytes);
    evgen_put(b, label, strlen(label) + 1);
}

/* HEAP_PROF_SAMPLE_COST_CENTRE: a stack's bytes (ids innermost first). */
static void ev_cc_band(struct evgen_buf *b, uint64_t t, uint64_t bytes,
                       unsigned depth, const uint32_t *ids)
{
    ev(b, 163, t);
    evgen_u16(b, (uint16_t)(1 + 8 + 1 + 4 * depth));
    uint8_t prof = 0, d = (uint8_t)depth;
    evgen_put(b, &prof, 1);
    evgen_u64(b, bytes);
    evgen_put(b, &d, 1);
    for (unsigned i = 0; i < depth; i++)
        evgen_u32(b, ids[i]);
}

#endif /* ELS_TEST_MODEL_GEN_H */
