/*
 * test_classes.c: the -l letter syntax of els_ghc_set_classes()
 * (lib/ghc/classes.c): absolute and relative sets, 'a', and the one-line
 * errors for what it refuses.
 */
#include "check.h"
#include "eventlog-sink.h"
#include "ghc/classes.h"

#define S (1u << 0)
#define G (1u << 1)
#define N (1u << 2)
#define P (1u << 3)
#define F (1u << 4)
#define U (1u << 5)

static unsigned parse_ok(const char *letters, unsigned current)
{
    unsigned out = 0xdead;
    char err[128] = "";
    int rc = elsi_ghc_parse_classes(letters, current, &out, err, sizeof err);
    CHECK_MSG(rc == 0, "'%s': %d %s", letters, rc, err);
    return out;
}

static void test_absolute(void)
{
    CHECK_INT(parse_ok("sgu", S | G | N | P | F | U), ==, S | G | U);
    CHECK_INT(parse_ok("f", S | G | P | U), ==, F);
    CHECK_INT(parse_ok("n", 0), ==, N);
}

static void test_relative(void)
{
    CHECK_INT(parse_ok("-s+f", S | G | P | U), ==, G | P | U | F);
    CHECK_INT(parse_ok("+f", S | G | P | U), ==, S | G | P | U | F);
    CHECK_INT(parse_ok("-g", S | G | P | U), ==, S | P | U);
    /* A sign applies to the next letter only, as in -l. */
    CHECK_INT(parse_ok("-gu", S | G | P), ==, S | P | U);
    CHECK_INT(parse_ok("-g-u", S | G | P | U), ==, S | P);
}

static void test_all(void)
{
    /* 'a' is every class but the nonmoving GC's, as 9.0.2's -la. */
    CHECK_INT(parse_ok("a", 0), ==, S | G | P | F | U);
    CHECK_INT(parse_ok("-a", S | G | N | P | F | U), ==, N);
    CHECK_INT(parse_ok("an", 0), ==, S | G | N | P | F | U);
}

static void parse_bad(const char *letters, const char *needle)
{
    unsigned out = 0x1234;
    char err[128] = "";
    int rc = elsi_ghc_parse_classes(letters, S, &out, err, sizeof err);
    CHECK_INT(rc, ==, ELS_EINVAL);
    CHECK_CONTAINS(err, needle);
    CHECK_INT(out, ==, 0x1234);
    CHECK(strchr(err, '\n') == NULL);
}

static void test_refused(void)
{
    parse_bad("sx", "unknown class 'x'");
    parse_bad("t", "unknown class 't'");     /* stderr tracing only */
    parse_bad("", "no event classes");
    parse_bad("-", "a sign with no class");
    parse_bad("s-", "a sign with no class");
    parse_bad("--s", "'-' after a sign");
    unsigned out;
    CHECK_INT(elsi_ghc_parse_classes(NULL, 0, &out, NULL, 0), ==, ELS_EINVAL);
}

static void test_format(void)
{
    char buf[8];
    CHECK_INT(elsi_ghc_format_classes(S | G | P | U, buf, sizeof buf), ==, 0);
    CHECK_STR(buf, "sgpu");
    CHECK_INT(elsi_ghc_format_classes(0, buf, sizeof buf), ==, 0);
    CHECK_STR(buf, "");
    CHECK_INT(elsi_ghc_format_classes(ELSI_CLASSES_ALL, buf, sizeof buf), ==, 0);
    CHECK_STR(buf, "sgnpfu");
    char small[4];
    CHECK_INT(elsi_ghc_format_classes(S | G | P | U, small, sizeof small), ==,
              ELS_EINVAL);
    CHECK_INT(elsi_ghc_format_classes(0, small, 0), ==, ELS_EINVAL);
    /* What it prints, it parses back. */
    CHECK_INT(parse_ok("sgpu", 0), ==, S | G | P | U);
}

static const struct check_case cases[] = {
    CHECK_CASE(test_absolute),
    CHECK_CASE(test_relative),
    CHECK_CASE(test_all),
    CHECK_CASE(test_refused),
    CHECK_CASE(test_format),
};

CHECK_MAIN(cases)
