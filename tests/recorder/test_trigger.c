/*
 * test_trigger.c: a flight recorder's triggers (lib/writer/trigger.c,
 * Note [Triggered dumps]).  The syntax of dump-on=, after=, cooldown= and
 * max-dumps= and its refusals; durations and sizes; each condition on
 * hand-made units (a GC pause per capability, heap-live, marker and
 * message prefixes with a %-escaped comma, loss); strict thresholds (a
 * pause of exactly gc-pause>'s duration does not fire); after=, the
 * cooldown and max-dumps= (other dumps counted too) on a clock the test
 * drives; and garbage units, counted and survived, with the next good
 * unit still read.
 */
#include "check.h"
#include "eventlog-sink.h"
#include "writer/trigger.h"
#include "evgen.h"

#define EQ_INT(a, b) CHECK_INT(a, ==, b)
#define EQ_U64(a, b) CHECK_U64(a, ==, b)

static struct evgen_buf hdr(void)
{
    struct evgen_buf b = { 0 };
    evgen_u32(&b, 0x68647262u);
    evgen_u32(&b, 0x68657462u);
    evgen_type(&b, 9, 0, "Start GC");
    evgen_type(&b, 10, 0, "Stop GC");
    evgen_type(&b, 18, 14, "Block marker");
    evgen_type(&b, 19, -1, "User message");
    evgen_type(&b, 51, 12, "Live heap");
    evgen_type(&b, 58, -1, "User marker");
    evgen_u32(&b, 0x68657465u);
    evgen_u32(&b, 0x68647265u);
    evgen_u32(&b, 0x64617462u);
    return b;
}

/* A block of cap (0xffff: global) opened at t0; events added with ev_*. */
static struct evgen_buf blk(uint16_t cap, uint64_t t0)
{
    struct evgen_buf b = { 0 };
    evgen_u16(&b, 18);
    evgen_u64(&b, t0);
    evgen_u32(&b, 0);
    evgen_u64(&b, 0);
    evgen_u16(&b, cap);
    return b;
}

static void blk_end(struct evgen_buf *b)
{
    uint32_t size = (uint32_t)b->len;
    b->p[10] = (uint8_t)(size >> 24); b->p[11] = (uint8_t)(size >> 16);
    b->p[12] = (uint8_t)(size >> 8);  b->p[13] = (uint8_t)size;
}

static void ev_plain(struct evgen_buf *b, uint16_t tag, uint64_t t)
{
    evgen_u16(b, tag);
    evgen_u64(b, t);
}

static void ev_text(struct evgen_buf *b, uint16_t tag, uint64_t t, const char *s)
{
    ev_plain(b, tag, t);
    evgen_u16(b, (uint16_t)strlen(s));
    evgen_put(b, s, strlen(s));
}

static struct elsi_trigger *trig(const char *on, const char *after,
                                 const char *cooldown, const char *max)
{
    struct elsi_trigger_config cfg;
    char err[256] = "";
    int r = elsi_trigger_parse(on, after, cooldown, max, &cfg, err, sizeof err);
    CHECK_MSG(r == 0, "parse %s: %d %s", on, r, err);
    struct elsi_trigger *t = NULL;
    EQ_INT(elsi_trigger_new(&t, &cfg), 0);
    struct evgen_buf h = hdr();
    elsi_trigger_header(t, h.p, h.len);
    evgen_free(&h);
    return t;
}

static void feed(struct elsi_trigger *t, struct evgen_buf *b, uint64_t now)
{
    blk_end(b);
    /* In two pieces, as a unit that wraps in the ring comes. */
    size_t cut = b->len / 2;
    elsi_trigger_unit(t, b->p, cut, b->p + cut, b->len - cut, now);
    evgen_free(b);
}

static void bad_(int line, const char *on, const char *after, const char *cd,
                 const char *max, const char *needle)
{
    struct elsi_trigger_config cfg;
    char err[256] = "";
    int r = elsi_trigger_parse(on, after, cd, max, &cfg, err, sizeof err);
    if (r != ELS_EINVAL || strstr(err, needle) == NULL)
        check_fail_(__FILE__, line, "dump-on=%s: returned %d, \"%s\"; wanted "
                    "ELS_EINVAL with \"%s\"", on ? on : "(none)", r, err, needle);
}
#define BAD(on, after, cd, max, needle) bad_(__LINE__, on, after, cd, max, needle)

static void test_parse(void)
{
    struct elsi_trigger_config c;
    char err[256];
    EQ_INT(elsi_trigger_parse(NULL, NULL, NULL, NULL, &c, err, sizeof err), 0);
    EQ_INT((int)c.n_conds, 0);
    EQ_INT(elsi_trigger_parse("gc-pause>50ms,heap-live>1G,marker:A%2CB,"
                                 "message:,loss", "0.5s", "5m", "3", &c, err,
                                 sizeof err), 0);
    EQ_INT((int)c.n_conds, 5);
    EQ_U64(c.conds[0].value, 50000000u);
    EQ_U64(c.conds[1].value, (uint64_t)1 << 30);
    CHECK_STR(c.conds[2].prefix, "A,B");
    EQ_INT(c.conds[2].kind, ELSI_TRIGGER_MARKER);
    EQ_INT(c.conds[3].kind, ELSI_TRIGGER_MESSAGE);
    CHECK_STR(c.conds[3].prefix, "");
    EQ_INT(c.conds[4].kind, ELSI_TRIGGER_LOSS);
    EQ_INT((int)c.after_ms, 500);
    EQ_INT((int)c.cooldown_ms, 300000);
    EQ_INT((int)c.max_dumps, 3);
    EQ_INT(elsi_trigger_parse("loss", NULL, NULL, NULL, &c, err, sizeof err), 0);
    EQ_INT((int)c.after_ms, 1000);
    EQ_INT((int)c.cooldown_ms, 60000);
    EQ_INT((int)c.max_dumps, 10);

    BAD("gc-pause>soon", NULL, NULL, NULL, "expected a duration");
    BAD("gc-pause>5h", NULL, NULL, NULL, "expected a duration");
    BAD("heap-live>lots", NULL, NULL, NULL, "expected a size");
    BAD("panic", NULL, NULL, NULL, "expected gc-pause");
    BAD("loss,,loss", NULL, NULL, NULL, "an empty condition");
    BAD("marker:%4", NULL, NULL, NULL, "escape");
    BAD("marker:%00", NULL, NULL, NULL, "NUL");
    BAD("loss,loss,loss,loss,loss,loss,loss,loss,loss", NULL, NULL, NULL, "more than 8");
    BAD("loss", "2h", NULL, NULL, "after=2h");
    BAD("loss", NULL, "x", NULL, "cooldown=x");
    BAD("loss", NULL, NULL, "0", "max-dumps=0");
    BAD("loss", NULL, NULL, "-1", "max-dumps=-1");
    BAD(NULL, "1s", NULL, NULL, "after= means nothing");
    BAD(NULL, NULL, "1m", NULL, "cooldown= means nothing");
    BAD(NULL, NULL, NULL, "0", "max-dumps=0");
    /* max-dumps= alone bounds the dumps asked for otherwise. */
    EQ_INT(elsi_trigger_parse(NULL, NULL, NULL, "2", &c, err, sizeof err), 0);
    EQ_INT((int)c.n_conds, 0);
    EQ_INT((int)c.max_dumps, 2);
}

static void test_durations(void)
{
    uint64_t ns = 0;
    EQ_INT(elsi_trigger_parse_duration("50ms", &ns), 0);
    EQ_U64(ns, 50000000u);
    EQ_INT(elsi_trigger_parse_duration("1.5", &ns), 0);
    EQ_U64(ns, 1500000000u);
    EQ_INT(elsi_trigger_parse_duration("250us", &ns), 0);
    EQ_U64(ns, 250000u);
    EQ_INT(elsi_trigger_parse_duration("7ns", &ns), 0);
    EQ_U64(ns, 7u);
    EQ_INT(elsi_trigger_parse_duration("2m", &ns), 0);
    EQ_U64(ns, 120000000000u);
    EQ_INT(elsi_trigger_parse_duration("1440m", &ns), 0);
    EQ_INT(elsi_trigger_parse_duration("1441m", &ns), ELS_EINVAL);
    EQ_INT(elsi_trigger_parse_duration("99999999999999999999s", &ns), ELS_EINVAL);
    EQ_INT(elsi_trigger_parse_duration(".5s", &ns), ELS_EINVAL);
    EQ_INT(elsi_trigger_parse_duration("5.s", &ns), ELS_EINVAL);
    EQ_INT(elsi_trigger_parse_duration("5 ms", &ns), ELS_EINVAL);
    EQ_INT(elsi_trigger_parse_duration("", &ns), ELS_EINVAL);
}

static void test_conditions(void)
{
    char cause[ELSI_TRIGGER_CAUSE_MAX];
    /* A GC pause: 60 ms on cap 1 (cap 0's 10 ms GC interleaved). */
    struct elsi_trigger *t = trig("gc-pause>50ms", "0", NULL, NULL);
    struct evgen_buf b = blk(1, 1000000000u);
    ev_plain(&b, 9, 1000000000u);
    ev_plain(&b, 10, 1040000000u);      /* 40 ms: below */
    feed(t, &b, 100);
    CHECK(!elsi_trigger_due(t, 100, false, NULL));
    b = blk(1, 2000000000u);
    ev_plain(&b, 9, 2000000000u);
    feed(t, &b, 101);
    b = blk(0, 2000000000u);
    ev_plain(&b, 9, 2001000000u);
    ev_plain(&b, 10, 2011000000u);
    feed(t, &b, 102);
    CHECK(!elsi_trigger_due(t, 102, false, NULL));
    b = blk(1, 2050000000u);
    ev_plain(&b, 10, 2060000000u);
    feed(t, &b, 103);
    CHECK(elsi_trigger_due(t, 103, false, NULL));
    EQ_INT((int)elsi_trigger_take(t, cause, sizeof cause), 1);
    CHECK_STR(cause, "gc-pause 60.000 ms on cap 1 at 2.060 s");
    elsi_trigger_free(t);

    /* heap-live (a global block), marker and message prefixes. */
    t = trig("heap-live>1M,marker:A%2CB,message:go", "0", "0", NULL);
    b = blk(0xffff, 5);
    ev_plain(&b, 51, 5);
    evgen_u32(&b, 1);
    evgen_u64(&b, 1024 * 1024);         /* not above */
    ev_text(&b, 58, 6, "A-B");
    ev_text(&b, 19, 7, "g");
    feed(t, &b, 10);
    CHECK(!elsi_trigger_due(t, 10, false, NULL));
    b = blk(0, 3000000000u);
    ev_text(&b, 58, 3001000000u, "A,B incident\x01");
    feed(t, &b, 11);
    CHECK(elsi_trigger_due(t, 11, false, NULL));
    elsi_trigger_take(t, cause, sizeof cause);
    CHECK_STR(cause, "marker A,B incident? at 3.001 s");
    b = blk(0, 4000000000u);
    ev_text(&b, 19, 4000000000u, "go now");
    feed(t, &b, 12);
    elsi_trigger_take(t, cause, sizeof cause);
    CHECK_STR(cause, "message go now at 4.000 s");
    b = blk(0xffff, 5000000000u);
    ev_plain(&b, 51, 5000000000u);
    evgen_u32(&b, 1);
    evgen_u64(&b, 2 * 1024 * 1024);
    feed(t, &b, 13);
    elsi_trigger_take(t, cause, sizeof cause);
    CHECK_STR(cause, "heap-live 2097152 bytes at 5.000 s");
    elsi_trigger_free(t);

    /* loss: a rise in the count, not the count. */
    t = trig("loss", "0", "0", NULL);
    elsi_trigger_loss(t, 0, 1);
    CHECK(!elsi_trigger_due(t, 1, false, NULL));
    elsi_trigger_loss(t, 3, 2);
    CHECK(elsi_trigger_due(t, 2, false, NULL));
    elsi_trigger_take(t, cause, sizeof cause);
    CHECK_CONTAINS(cause, "loss of 3 units");
    elsi_trigger_loss(t, 3, 3);
    CHECK(!elsi_trigger_due(t, 3, false, NULL));
    elsi_trigger_free(t);
}

/* gc-pause>D fires on a pause longer than D: one of exactly D does not
 * (on either capability, the pause closing a block or inside one), one
 * a nanosecond longer does.  Likewise heap-live>S: exactly S is not
 * above it. */
static void test_thresholds_are_strict(void)
{
    char cause[ELSI_TRIGGER_CAUSE_MAX];
    struct elsi_trigger *t = trig("gc-pause>50ms", "0", "0", NULL);
    struct evgen_buf b = blk(0, 1000000000u);
    ev_plain(&b, 9, 1000000000u);
    ev_plain(&b, 10, 1050000000u);              /* exactly 50 ms */
    feed(t, &b, 10);
    b = blk(1, 2000000000u);
    ev_plain(&b, 9, 2000000000u);
    feed(t, &b, 11);
    b = blk(1, 2040000000u);
    ev_plain(&b, 10, 2050000000u);              /* 50 ms, across blocks */
    feed(t, &b, 12);
    CHECK_MSG(!elsi_trigger_due(t, 12, false, NULL),
              "gc-pause>50ms fired on pauses of exactly 50 ms");
    struct elsi_trigger_counts n;
    elsi_trigger_counts(t, &n);
    EQ_U64(n.fired, 0u);
    b = blk(0, 3000000000u);
    ev_plain(&b, 9, 3000000000u);
    ev_plain(&b, 10, 3050000001u);              /* 50 ms and 1 ns */
    feed(t, &b, 13);
    CHECK_MSG(elsi_trigger_due(t, 13, false, NULL),
              "gc-pause>50ms missed a pause of 50.000001 ms");
    elsi_trigger_take(t, cause, sizeof cause);
    CHECK_STR(cause, "gc-pause 50.000 ms on cap 0 at 3.050 s");
    elsi_trigger_free(t);

    t = trig("heap-live>1M", "0", "0", NULL);
    b = blk(0xffff, 5);
    ev_plain(&b, 51, 5);
    evgen_u32(&b, 1);
    evgen_u64(&b, 1024 * 1024);                 /* exactly 1M */
    feed(t, &b, 20);
    CHECK(!elsi_trigger_due(t, 20, false, NULL));
    b = blk(0xffff, 6);
    ev_plain(&b, 51, 6);
    evgen_u32(&b, 1);
    evgen_u64(&b, 1024 * 1024 + 1);
    feed(t, &b, 21);
    CHECK(elsi_trigger_due(t, 21, false, NULL));
    elsi_trigger_free(t);
}

static void marker_at(struct elsi_trigger *t, uint64_t now)
{
    struct evgen_buf b = blk(0, now * 1000000u);
    ev_text(&b, 58, now * 1000000u, "FLAP");
    feed(t, &b, now);
}

static void test_after_cooldown_max(void)
{
    struct elsi_trigger *t = trig("marker:FLAP", "1s", "10s", "2");
    uint64_t wake = 0;
    marker_at(t, 1000);
    CHECK(!elsi_trigger_due(t, 1999, false, &wake));
    EQ_U64(wake, 2000u);
    CHECK(elsi_trigger_due(t, 1500, true, NULL));   /* ending: at once */
    marker_at(t, 1500);                             /* part of the armed dump */
    CHECK(elsi_trigger_due(t, 2000, false, NULL));
    EQ_INT((int)elsi_trigger_take(t, NULL, 0), 1);
    elsi_trigger_due(t, 2000, false, &wake);
    EQ_U64(wake, 0u);
    marker_at(t, 10999);                            /* in the cooldown */
    CHECK(!elsi_trigger_due(t, 20000, false, NULL));
    marker_at(t, 11000);
    CHECK(elsi_trigger_due(t, 12000, false, NULL));
    EQ_INT((int)elsi_trigger_take(t, NULL, 0), 2);
    marker_at(t, 50000);                            /* past max-dumps= */
    CHECK(!elsi_trigger_due(t, 60000, true, NULL));
    struct elsi_trigger_counts n;
    elsi_trigger_counts(t, &n);
    EQ_U64(n.fired, 5u);
    EQ_U64(n.suppressed, 2u);
    EQ_INT((int)n.dumps, 2);
    elsi_trigger_free(t);
}

/* Dumps asked for otherwise (a request, a signal) count against
 * max-dumps= too: with max-dumps=2 and one such dump, the conditions get
 * one dump, and the next condition met is suppressed. */
static void test_max_dumps_counts_every_dump(void)
{
    struct elsi_trigger *t = trig("marker:FLAP", "0", "0", "2");
    elsi_trigger_other_dump(t);
    marker_at(t, 10);
    CHECK(elsi_trigger_due(t, 10, false, NULL));
    EQ_INT((int)elsi_trigger_take(t, NULL, 0), 1);
    marker_at(t, 20);
    CHECK_MSG(!elsi_trigger_due(t, 20, true, NULL),
              "a third dump armed with max-dumps=2 (one requested, one triggered)");
    struct elsi_trigger_counts n;
    elsi_trigger_counts(t, &n);
    EQ_U64(n.fired, 2u);
    EQ_U64(n.suppressed, 1u);
    EQ_INT((int)n.dumps, 1);
    elsi_trigger_free(t);
}

static void test_garbage(void)
{
    (void)evgen_header;     /* evgen.h's stream has no GC or marker types */
    (void)evgen_block;
    struct elsi_trigger *t = trig("marker:X", "0", "0", NULL);
    static const uint8_t junk[] = { 0x00, 0x3a, 1, 2, 3, 0xff, 0xfe, 0x12 };
    elsi_trigger_unit(t, junk, sizeof junk, NULL, 0, 1);
    elsi_trigger_unit(t, junk, 3, junk, 1, 2);      /* ends inside an event */
    uint8_t big[4096];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)(i * 131 + 7);
    elsi_trigger_unit(t, big, sizeof big, big, 100, 3);
    elsi_trigger_unit(t, NULL, 0, NULL, 0, 4);
    struct elsi_trigger_counts n;
    elsi_trigger_counts(t, &n);
    CHECK(n.bad_units >= 3);
    EQ_U64(n.units, 4u);
    /* The next good unit is read. */
    marker_at(t, 5);
    struct evgen_buf b = blk(0, 6);
    ev_text(&b, 58, 6, "X marks");
    feed(t, &b, 6);
    CHECK(elsi_trigger_due(t, 6, false, NULL));
    /* Without a header nothing parses, and nothing breaks. */
    struct elsi_trigger_config cfg;
    char err[64];
    EQ_INT(elsi_trigger_parse("marker:X", NULL, NULL, NULL, &cfg, err, sizeof err), 0);
    struct elsi_trigger *u = NULL;
    EQ_INT(elsi_trigger_new(&u, &cfg), 0);
    elsi_trigger_unit(u, junk, sizeof junk, NULL, 0, 1);
    elsi_trigger_counts(u, &n);
    EQ_U64(n.bad_units, 1u);
    elsi_trigger_free(u);
    elsi_trigger_free(t);
}

static const struct check_case cases[] = {
    CHECK_CASE(test_parse),
    CHECK_CASE(test_durations),
    CHECK_CASE(test_conditions),
    CHECK_CASE(test_thresholds_are_strict),
    CHECK_CASE(test_after_cooldown_max),
    CHECK_CASE(test_max_dumps_counts_every_dump),
    CHECK_CASE(test_garbage),
};
CHECK_MAIN(cases)
