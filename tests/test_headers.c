/*
 * test_headers.c: the public headers compile on their own (this file
 * includes each one first, alone) in C and, through test_headers_cxx.cc,
 * in C++; and every documented error code has its own text.
 */
#include "eventlog-sink/sink.h"     /* alone, before anything else */
#include "eventlog-sink/parse.h"    /* alone too (guarded) */
#include "eventlog-sink/control.h"  /* alone too (guarded) */
#include "eventlog-sink/discovery.h" /* alone too (guarded) */
#include "eventlog-sink.h"

#include <limits.h>

#include "check.h"

int cxx_headers_ok(void);

static void headers_compile_in_cxx(void)
{
    CHECK_INT(cxx_headers_ok(), ==, (int)sizeof(struct els_sink_ops));
}

static void error_codes_have_distinct_text(void)
{
    const int codes[] = { ELS_EINVAL, ELS_ENOSCHEME, ELS_ENAMETOOLONG,
                          ELS_EADDRINUSE, ELS_EEXIST, ELS_EBUSY, ELS_ENOMEM,
                          ELS_EMSGSIZE, ELS_EVERSION, ELS_ESTOPPED,
                          ELS_ENOTSUP };
    const size_t n = sizeof codes / sizeof codes[0];
    for (size_t i = 0; i < n; i++) {
        CHECK(codes[i] < 0);
        const char *t = els_strerror(codes[i]);
        CHECK(t != NULL && t[0] != '\0');
        for (size_t j = 0; j < i; j++) {
            CHECK_MSG(codes[i] != codes[j], "codes %zu and %zu are equal", i, j);
            CHECK_MSG(strcmp(t, els_strerror(codes[j])) != 0,
                      "codes %d and %d share the text \"%s\"", codes[i], codes[j], t);
        }
    }
    CHECK(els_strerror(0) != NULL);
    CHECK(els_strerror(-ETIMEDOUT) != NULL);
    CHECK(els_strerror(12345) != NULL);
}

/* Every code has its own name, spelled as its macro; errno values pass
 * through by their errno name. */
static void error_codes_have_names(void)
{
    static const struct {
        int code;
        const char *name;
    } want[] = {
        { ELS_EINVAL, "ELS_EINVAL" }, { ELS_ENOSCHEME, "ELS_ENOSCHEME" },
        { ELS_ENAMETOOLONG, "ELS_ENAMETOOLONG" },
        { ELS_EADDRINUSE, "ELS_EADDRINUSE" }, { ELS_EEXIST, "ELS_EEXIST" },
        { ELS_EBUSY, "ELS_EBUSY" }, { ELS_ENOMEM, "ELS_ENOMEM" },
        { ELS_EMSGSIZE, "ELS_EMSGSIZE" }, { ELS_EVERSION, "ELS_EVERSION" },
        { ELS_ESTOPPED, "ELS_ESTOPPED" }, { ELS_ENOTSUP, "ELS_ENOTSUP" },
        { -ETIMEDOUT, "ETIMEDOUT" }, { -EPIPE, "EPIPE" },
        { -ECONNREFUSED, "ECONNREFUSED" }, { -EHOSTUNREACH, "EHOSTUNREACH" },
        { 0, "OK" }, { 1, "UNKNOWN" }, { 12345, "UNKNOWN" },
        { -100000, "UNKNOWN" }, { INT_MIN, "UNKNOWN" },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        CHECK_STR(els_err_name(want[i].code), want[i].name);
}

static void drop_causes_have_names(void)
{
    for (int i = 0; i < ELS_DROP__COUNT; i++) {
        const char *n = els_drop_cause_name((enum els_drop_cause)i);
        CHECK(n != NULL && strcmp(n, "unknown") != 0);
    }
    CHECK_STR(els_drop_cause_name(ELS_DROP__COUNT), "unknown");
}

static void stats_format_mentions_every_total(void)
{
    struct els_stats s;
    memset(&s, 0, sizeof s);
    s.units_accepted = 7;
    s.units_sent = 4;
    s.units_dropped[ELS_DROP_QUEUE_FULL] = 2;
    s.units_queued = 1;
    char buf[512];
    int n = els_stats_format(&s, buf, sizeof buf);
    CHECK_INT(n, >, 0);
    CHECK_CONTAINS(buf, "accepted 7");
    CHECK_CONTAINS(buf, "sent 4");
    CHECK_CONTAINS(buf, "dropped 2");
    CHECK_CONTAINS(buf, "queued 1");
}

static const struct check_case cases[] = {
    CHECK_CASE(headers_compile_in_cxx),
    CHECK_CASE(error_codes_have_distinct_text),
    CHECK_CASE(error_codes_have_names),
    CHECK_CASE(drop_causes_have_names),
    CHECK_CASE(stats_format_mentions_every_total),
};

CHECK_MAIN(cases)
