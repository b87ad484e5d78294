/*
 * test_producer.c: the producer side (lib/queue/producer.c): what
 * els_writer_write() returns and counts for units it cannot take.
 */
#include "check.h"
#include "deliver/writer_test.h"

static void writer_unit_too_big(void)
{
    CHECK_OK(els_sink_register(&slow_sink));
    struct els_writer *w = open_ok("test-slow:?buffer=3M");
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    size_t big = 4 * 1024 * 1024;
    uint8_t *p = calloc(1, big);
    p[1] = 18;
    CHECK_INT(els_writer_write(w, p, big), ==, 1);
    struct els_stats s = stats_of(w);
    CHECK_U64(s.units_dropped[ELS_DROP_TOO_BIG], ==, 1);
    CHECK_U64(s.bytes_dropped[ELS_DROP_TOO_BIG], ==, big);
    check_conservation(&s);
    CHECK_INT(els_writer_write(w, NULL, 1), ==, ELS_EINVAL);
    CHECK_INT(els_writer_write(w, p, 0), ==, ELS_EINVAL);
    CHECK_OK(els_writer_close(w));
    free(p);
}

static const struct check_case cases[] = {
    CHECK_CASE(writer_unit_too_big),
};

CHECK_MAIN(cases)
