/*
 * test_spec.c: spec parsing (lib/sinks/spec*.c), and the message plumbing every
 * refusal goes through (lib/base/error.c, lib/base/log.c).
 *
 * Each refusal is checked for its code and for a message that quotes the
 * spec and names the wrong part.  Sink-declared options are tested with
 * sinks registered here, so the cases do not depend on which options the
 * built-in sinks happen to declare.
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>

#include "check.h"
#include "eventlog-sink.h"
#include "base/log.h"
#include "sinks/sinks.h"
#include "sinks/spec.h"

#if defined(__SANITIZE_ADDRESS__)
#define TEST_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_LSAN 1
#endif
#endif
#if defined(TEST_LSAN)
#include <sanitizer/lsan_interface.h>
#endif

/* check.h ends every case with _exit(), which skips LeakSanitizer's exit
 * check; cases that exercise failure paths ask for it explicitly. */
static void check_no_leaks(void)
{
#if defined(TEST_LSAN)
    CHECK_MSG(__lsan_do_recoverable_leak_check() == 0, "memory leaked");
#endif
}

/* ------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------ */

static void check_spec_empty(int line, const struct elsi_spec *s)
{
    if (s->scheme[0] != '\0' || s->text != NULL || s->address != NULL ||
        s->ops != NULL || s->n_options != 0 || s->buffer_bytes != 0 ||
        s->linger_ms != 0 || s->option_keys[0] != NULL)
        check_fail_(__FILE__, line, "spec not left empty after failure");
}

/* spec must be refused with code, and the message must quote the spec and
 * contain needle. */
static void refused_(int line, const char *spec, int code, const char *needle)
{
    struct elsi_spec s;
    char err[512];
    memset(&s, 0x5a, sizeof s);     /* garbage in: the parser must clear */
    strcpy(err, "(untouched)");
    int rc = elsi_spec_parse(spec, &s, err, sizeof err);
    if (rc != code)
        check_fail_(__FILE__, line, "spec \"%s\": returned %d, wanted %d "
                    "(message: %s)", spec ? spec : "(null)", rc, code, err);
    if (spec != NULL && strchr(spec, '\n') == NULL && strlen(spec) < 100) {
        char head[160];
        snprintf(head, sizeof head, "spec \"%s\": ", spec);
        if (strncmp(err, head, strlen(head)) != 0)
            check_fail_(__FILE__, line, "message does not start with "
                        "'%s': \"%s\"", head, err);
    }
    if (strstr(err, needle) == NULL)
        check_fail_(__FILE__, line, "message for \"%s\" does not contain "
                    "\"%s\": \"%s\"", spec ? spec : "(null)", needle, err);
    check_spec_empty(line, &s);
    elsi_spec_free(&s);     /* must be harmless after a failure */
}
#define REFUSED(spec, code, needle) refused_(__LINE__, spec, code, needle)

static void parse_ok_(int line, const char *spec, struct elsi_spec *s)
{
    char err[512] = "";
    int rc = elsi_spec_parse(spec, s, err, sizeof err);
    if (rc != 0)
        check_fail_(__FILE__, line, "spec \"%s\": returned %d: %s", spec, rc,
                    err);
}
#define PARSE_OK(spec, s) parse_ok_(__LINE__, spec, s)

static uint64_t buffer_of_(int line, const char *spec)
{
    struct elsi_spec s;
    parse_ok_(line, spec, &s);
    uint64_t b = s.buffer_bytes;
    elsi_spec_free(&s);
    return b;
}
#define BUFFER_OF(spec) buffer_of_(__LINE__, spec)

static int test_open(void **sink, const struct els_sink_args *args)
{
    (void)args;
    *sink = NULL;
    return 0;
}

static void test_close(void *sink)
{
    (void)sink;
}

static int test_write(void *sink, const void *buf, size_t len)
{
    (void)sink;
    (void)buf;
    (void)len;
    return 0;
}

static const char *const test_a_options[] = { "color", "size-hint", NULL };
static const struct els_sink_ops test_sink_a = {
    .struct_size = sizeof(struct els_sink_ops), .scheme = "test-a",
    .options = test_a_options, .style = ELS_SINK_CALLBACK,
    .open = test_open, .close = test_close, .write = test_write,
};
static const struct els_sink_ops test_sink_b = {
    .struct_size = sizeof(struct els_sink_ops), .scheme = "test-b",
    .options = NULL, .style = ELS_SINK_CALLBACK,
    .open = test_open, .close = test_close, .write = test_write,
};

static void register_test_sinks(void)
{
    CHECK_OK(els_sink_register(&test_sink_a));
    CHECK_OK(els_sink_register(&test_sink_b));
}

/* ------------------------------------------------------------------------
 * Structure and scheme
 * ------------------------------------------------------------------------ */

static void minimal_spec_gets_defaults(void)
{
    struct elsi_spec s;
    PARSE_OK("unix:/tmp/ghc.sock", &s);
    CHECK_STR(s.scheme, "unix");
    CHECK_STR(s.address, "/tmp/ghc.sock");
    CHECK_STR(s.text, "unix:/tmp/ghc.sock");
    CHECK(s.ops == els_sink_lookup("unix"));
    CHECK(s.ops != NULL);
    CHECK_U64(s.buffer_bytes, ==, ELSI_DEFAULT_BUFFER);
    CHECK_INT(s.policy, ==, ELSI_POLICY_DROP);
    CHECK_INT(s.wait_ms, ==, 0);
    CHECK_INT(s.linger_ms, ==, ELSI_DEFAULT_LINGER_MS);
    CHECK_INT(s.n_options, ==, 0);
    elsi_spec_free(&s);
    check_spec_empty(__LINE__, &s);
}

static void every_builtin_scheme_parses(void)
{
    static const char *const specs[] = {
        "unix:/tmp/a.sock", "unix-connect:/tmp/a.sock", "tcp:4000",
        "tcp-connect:127.0.0.1:4000", "fifo:/tmp/a.fifo", "file:/tmp/a.log",
    };
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        struct elsi_spec s;
        PARSE_OK(specs[i], &s);
        CHECK_INT(strncmp(specs[i], s.scheme, strlen(s.scheme)), ==, 0);
        CHECK_INT(specs[i][strlen(s.scheme)], ==, ':');
        CHECK_STR(s.address, specs[i] + strlen(s.scheme) + 1);
        CHECK(s.ops == els_sink_lookup(s.scheme));
        elsi_spec_free(&s);
    }
}

/* nng's lesson: a prefix of a scheme, or a scheme with a prefix, must
 * never reach a sink. */
static void scheme_prefixes_are_not_registered(void)
{
    REFUSED("tc:x", ELS_ENOSCHEME, "scheme \"tc\" is not registered");
    REFUSED("tcpp:1", ELS_ENOSCHEME, "scheme \"tcpp\" is not registered");
    REFUSED("unixx:/a", ELS_ENOSCHEME, "scheme \"unixx\" is not registered");
    REFUSED("un:/a", ELS_ENOSCHEME, "scheme \"un\" is not registered");
    REFUSED("tcp-:1", ELS_ENOSCHEME, "scheme \"tcp-\" is not registered");
    REFUSED("tcp-connec:1", ELS_ENOSCHEME, "\"tcp-connec\"");
    REFUSED("file-:x", ELS_ENOSCHEME, "\"file-\"");
    /* The message lists what is registered. */
    REFUSED("tc:x", ELS_ENOSCHEME,
            "unix, unix-connect, tcp, tcp-connect, fifo, file");
}

static void scheme_syntax_errors(void)
{
    REFUSED(":x", ELS_EINVAL, "missing scheme before ':'");
    REFUSED(":", ELS_EINVAL, "missing scheme");
    REFUSED("unix", ELS_EINVAL, "no ':' after the scheme");
    REFUSED("/tmp/ghc.sock", ELS_EINVAL, "no ':' after the scheme");
    REFUSED("", ELS_EINVAL, "empty spec");
    REFUSED("UNIX:/a", ELS_EINVAL, "schemes are lowercase");
    REFUSED("UNIX:/a", ELS_EINVAL, "scheme \"UNIX\"");
    REFUSED("Tcp:1", ELS_EINVAL, "lowercase");
    REFUSED("tcp ://", ELS_EINVAL, "invalid character ' ' in scheme \"tcp \"");
    REFUSED(" unix:/a", ELS_EINVAL, "invalid character ' '");
    REFUSED("unix/a:b", ELS_EINVAL, "invalid character '/'");
    REFUSED("tcp_x:1", ELS_EINVAL, "invalid character '_'");
    REFUSED("1tcp:1", ELS_EINVAL, "must start with a letter");
    REFUSED("-tcp:1", ELS_EINVAL, "must start with a letter");
    REFUSED("abcdefghijklmnopqrstuvwxyzabcdef:x", ELS_EINVAL,
            "longer than 31 bytes");
    REFUSED(NULL, ELS_EINVAL, "no spec given");
}

static void empty_address_is_left_to_the_sink(void)
{
    struct elsi_spec s;
    PARSE_OK("unix:", &s);
    CHECK_STR(s.address, "");
    elsi_spec_free(&s);
    PARSE_OK("tcp:?buffer=4M", &s);
    CHECK_STR(s.address, "");
    CHECK_U64(s.buffer_bytes, ==, 4u << 20);
    elsi_spec_free(&s);
}

/* ------------------------------------------------------------------------
 * %-decoding
 * ------------------------------------------------------------------------ */

static void address_and_values_are_percent_decoded(void)
{
    struct elsi_spec s;
    PARSE_OK("unix:/tmp/a%3Fb%26c%25d%3d", &s);
    CHECK_STR(s.address, "/tmp/a?b&c%d=");
    elsi_spec_free(&s);

    PARSE_OK("unix:/tmp/%3f%2F%c3%A9", &s);
    CHECK_STR(s.address, "/tmp/?/\xc3\xa9");
    elsi_spec_free(&s);

    /* An address may contain ':' and '=' unescaped; only '?' ends it. */
    PARSE_OK("tcp-connect:[::1]:80", &s);
    CHECK_STR(s.address, "[::1]:80");
    elsi_spec_free(&s);

    register_test_sinks();
    PARSE_OK("test-a:x?color=r%26d%3Fx%25&size-hint=%31%30", &s);
    CHECK_INT(s.n_options, ==, 2);
    CHECK_STR(s.option_values[0], "r&d?x%");
    CHECK_STR(s.option_values[1], "10");
    elsi_spec_free(&s);

    /* Common option values are decoded too. */
    PARSE_OK("unix:/a?buffer=%34M", &s);
    CHECK_U64(s.buffer_bytes, ==, 4u << 20);
    elsi_spec_free(&s);
}

static void bad_percent_escapes_are_refused(void)
{
    REFUSED("unix:/a%zz", ELS_EINVAL, "bad %-escape \"%zz\" in the address");
    REFUSED("unix:/a%4", ELS_EINVAL, "bad %-escape \"%4\"");
    REFUSED("unix:/a%", ELS_EINVAL, "bad %-escape \"%\"");
    REFUSED("unix:/a%g0/b", ELS_EINVAL, "bad %-escape \"%g0\"");
    REFUSED("unix:/a%4?buffer=4M", ELS_EINVAL, "bad %-escape \"%4\"");
    REFUSED("unix:/a%00b", ELS_EINVAL, "%00 in the address");
    REFUSED("unix:/a%00b", ELS_EINVAL, "NUL");
    register_test_sinks();
    REFUSED("test-a:x?color=%zz", ELS_EINVAL,
            "bad %-escape \"%zz\" in the value of option 'color'");
    REFUSED("test-a:x?color=a%00", ELS_EINVAL,
            "%00 in the value of option 'color'");
    REFUSED("unix:/a?buffer=4%", ELS_EINVAL, "option 'buffer'");
}

/* ------------------------------------------------------------------------
 * Option structure
 * ------------------------------------------------------------------------ */

static void option_syntax_errors(void)
{
    REFUSED("unix:/a?", ELS_EINVAL, "empty option list after '?'");
    REFUSED("unix:/a?buffer=4M&", ELS_EINVAL, "empty option");
    REFUSED("unix:/a?&buffer=4M", ELS_EINVAL, "empty option");
    REFUSED("unix:/a?buffer=4M&&wait=1", ELS_EINVAL, "empty option");
    REFUSED("unix:/a?buffer", ELS_EINVAL, "option 'buffer' has no value");
    REFUSED("unix:/a?buffer=4M&linger", ELS_EINVAL,
            "option 'linger' has no value");
    REFUSED("unix:/a?=4M", ELS_EINVAL, "option '=4M' has an empty key");
    REFUSED("unix:/a?buffer=", ELS_EINVAL, "option 'buffer' has an empty value");
    REFUSED("unix:/a?Buffer=4M", ELS_EINVAL, "invalid option key 'Buffer'");
    REFUSED("unix:/a?buf%66er=4M", ELS_EINVAL, "invalid option key 'buf%66er'");
    REFUSED("unix:/a?my key=1", ELS_EINVAL, "invalid option key 'my key'");
    REFUSED("unix:/a?wait=1?linger=2", ELS_EINVAL,
            "unescaped '?' in the value of option 'wait'");
}

static void duplicate_options_are_refused(void)
{
    REFUSED("unix:/a?buffer=4M&buffer=8M", ELS_EINVAL,
            "option 'buffer' is given twice");
    REFUSED("unix:/a?policy=drop&wait=1&policy=drop", ELS_EINVAL,
            "option 'policy' is given twice");
    REFUSED("unix:/a?linger=1&linger=1", ELS_EINVAL, "'linger' is given twice");
    REFUSED("unix:/a?wait=1&wait=2", ELS_EINVAL, "'wait' is given twice");
    register_test_sinks();
    REFUSED("test-a:x?color=red&size-hint=1&color=blue", ELS_EINVAL,
            "option 'color' is given twice");
}

static void unknown_options_are_refused(void)
{
    REFUSED("unix:/a?foo=1", ELS_EINVAL, "unknown option 'foo' for scheme unix");
    REFUSED("unix:/a?foo=1", ELS_EINVAL,
            "(valid: buffer, policy, wait, wait-consumers, linger");
    REFUSED("tcp:0?buffer=4M&bufer=8M", ELS_EINVAL,
            "unknown option 'bufer' for scheme tcp");
    register_test_sinks();
    REFUSED("test-b:x?color=red", ELS_EINVAL,
            "unknown option 'color' for scheme test-b "
            "(valid: buffer, policy, wait, wait-consumers, linger, max-consumers, "
            "consumer-memory, control, control-secret, trust, "
            "collector-secret, announce)");
    REFUSED("test-a:x?colour=red", ELS_EINVAL,
            "(valid: buffer, policy, wait, wait-consumers, linger, max-consumers, "
            "consumer-memory, control, control-secret, trust, "
            "collector-secret, announce, color, size-hint)");
}

static void consumer_limits(void)
{
    struct elsi_spec s;
    PARSE_OK("unix:/a", &s);
    CHECK_INT(s.max_consumers, ==, ELSI_DEFAULT_MAX_CONSUMERS);
    CHECK_U64(s.consumer_memory, ==, ELSI_DEFAULT_CONSUMER_MEMORY);
    elsi_spec_free(&s);
    PARSE_OK("tcp:0?max-consumers=3&consumer-memory=64K", &s);
    CHECK_INT(s.max_consumers, ==, 3);
    CHECK_U64(s.consumer_memory, ==, 64 * 1024);
    elsi_spec_free(&s);
    REFUSED("unix:/a?max-consumers=0", ELS_EINVAL, "max-consumers=0");
    REFUSED("unix:/a?max-consumers=65537", ELS_EINVAL, "from 1 to 65536");
    REFUSED("unix:/a?max-consumers=2x", ELS_EINVAL, "max-consumers=2x");
    REFUSED("unix:/a?consumer-memory=lots", ELS_EINVAL, "consumer-memory=lots");
    REFUSED("unix:/a?consumer-memory=0", ELS_EINVAL, "from 64K");
}

static void sink_options_belong_to_their_scheme(void)
{
    register_test_sinks();
    struct elsi_spec s;
    PARSE_OK("test-a:dest?size-hint=3&buffer=8M&color=red", &s);
    CHECK_STR(s.scheme, "test-a");
    CHECK_STR(s.address, "dest");
    CHECK(s.ops == &test_sink_a);
    CHECK_INT(s.n_options, ==, 2);
    CHECK_STR(s.option_keys[0], "size-hint");   /* spec order */
    CHECK_STR(s.option_values[0], "3");
    CHECK_STR(s.option_keys[1], "color");
    CHECK_STR(s.option_values[1], "red");
    CHECK_U64(s.buffer_bytes, ==, 8u << 20);
    elsi_spec_free(&s);

    REFUSED("test-b:dest?color=red", ELS_EINVAL,
            "unknown option 'color' for scheme test-b");
    REFUSED("unix:/a?size-hint=3", ELS_EINVAL,
            "unknown option 'size-hint' for scheme unix");
}

static void sink_args_point_into_the_spec(void)
{
    register_test_sinks();
    struct elsi_spec s;
    PARSE_OK("test-a:d%3Fst?color=red&policy=block&size-hint=2", &s);
    char err[64];
    struct els_sink_args a;
    memset(&a, 0x5a, sizeof a);
    elsi_spec_sink_args(&s, &a, err, sizeof err);
    CHECK_STR(a.scheme, "test-a");
    CHECK_STR(a.address, "d?st");
    CHECK_STR(a.spec, "test-a:d%3Fst?color=red&policy=block&size-hint=2");
    CHECK_INT(a.n_options, ==, 2);
    CHECK_STR(a.option_keys[0], "color");
    CHECK_STR(a.option_keys[1], "size-hint");
    CHECK(a.err == err);
    CHECK_INT(a.err_len, ==, sizeof err);
    CHECK_STR(els_sink_option(&a, "color"), "red");
    CHECK_STR(els_sink_option(&a, "size-hint"), "2");
    /* Common options are the writer's and never reach the sink. */
    CHECK(els_sink_option(&a, "policy") == NULL);
    CHECK(els_sink_option(&a, "colo") == NULL);
    CHECK(els_sink_option(&a, NULL) == NULL);
    CHECK(els_sink_option(NULL, "color") == NULL);
    elsi_spec_free(&s);
}

static const char *many_options[ELSI_SPEC_MAX_OPTIONS + 2];
static char many_names[ELSI_SPEC_MAX_OPTIONS + 1][16];

static void too_many_options_are_refused(void)
{
    for (int i = 0; i <= ELSI_SPEC_MAX_OPTIONS; i++) {
        snprintf(many_names[i], sizeof many_names[i], "o%d", i);
        many_options[i] = many_names[i];
    }
    static struct els_sink_ops many = {
        .struct_size = sizeof(struct els_sink_ops), .scheme = "many",
        .style = ELS_SINK_CALLBACK,
        .open = test_open, .close = test_close, .write = test_write,
    };
    many.options = many_options;
    CHECK_OK(els_sink_register(&many));

    char spec[512] = "many:x?buffer=4M";
    for (int i = 0; i < ELSI_SPEC_MAX_OPTIONS; i++)
        snprintf(spec + strlen(spec), sizeof spec - strlen(spec),
                 "&o%d=%d", i, i);
    struct elsi_spec s;
    PARSE_OK(spec, &s);
    CHECK_INT(s.n_options, ==, ELSI_SPEC_MAX_OPTIONS);
    CHECK_STR(s.option_values[ELSI_SPEC_MAX_OPTIONS - 1], "15");
    elsi_spec_free(&s);

    snprintf(spec + strlen(spec), sizeof spec - strlen(spec), "&o%d=x",
             ELSI_SPEC_MAX_OPTIONS);
    struct elsi_spec t;
    char err[512];
    CHECK_INT(elsi_spec_parse(spec, &t, err, sizeof err), ==, ELS_EINVAL);
    CHECK_CONTAINS(err, "too many options at 'o16'");
    check_spec_empty(__LINE__, &t);
    check_no_leaks();
}

/* ------------------------------------------------------------------------
 * Common option values
 * ------------------------------------------------------------------------ */

static void buffer_values(void)
{
    CHECK_U64(BUFFER_OF("unix:/a?buffer=4M"), ==, (uint64_t)4 << 20);
    CHECK_U64(BUFFER_OF("unix:/a?buffer=3m"), ==, (uint64_t)3 << 20);
    CHECK_U64(BUFFER_OF("unix:/a?buffer=2049K"), ==, (uint64_t)2049 << 10);
    CHECK_U64(BUFFER_OF("unix:/a?buffer=2049k"), ==, (uint64_t)2049 << 10);
    CHECK_U64(BUFFER_OF("unix:/a?buffer=2097153"), ==, 2097153);
    CHECK_U64(BUFFER_OF("unix:/a?buffer=1G"), ==, (uint64_t)1 << 30);
    CHECK_U64(BUFFER_OF("unix:/a?buffer=1g"), ==, (uint64_t)1 << 30);
    CHECK_U64(BUFFER_OF("unix:/a?buffer=16G"), ==, ELSI_MAX_BUFFER);
    CHECK_U64(BUFFER_OF("unix:/a?buffer=0004M"), ==, (uint64_t)4 << 20);

    /* Exactly one RTS buffer is not enough: the queue must hold more. */
    REFUSED("unix:/a?buffer=2M", ELS_EINVAL, "buffer=2M is too small");
    REFUSED("unix:/a?buffer=2M", ELS_EINVAL, "more than 2M");
    REFUSED("unix:/a?buffer=2048K", ELS_EINVAL, "buffer=2048K is too small");
    REFUSED("unix:/a?buffer=2097152", ELS_EINVAL, "too small");
    REFUSED("unix:/a?buffer=0", ELS_EINVAL, "buffer=0 is too small");
    REFUSED("unix:/a?buffer=1K", ELS_EINVAL, "too small");
    REFUSED("unix:/a?buffer=17G", ELS_EINVAL, "buffer=17G is too large");
    REFUSED("unix:/a?buffer=16385M", ELS_EINVAL, "too large: at most 16G");
    REFUSED("unix:/a?buffer=99999999999999G", ELS_EINVAL,
            "buffer=99999999999999G is too large");
    REFUSED("unix:/a?buffer=18446744073709551616", ELS_EINVAL, "too large");
    REFUSED("unix:/a?buffer=99999999999999999999999999K", ELS_EINVAL,
            "too large");
    REFUSED("unix:/a?buffer=4MB", ELS_EINVAL, "buffer=4MB: expected a size");
    REFUSED("unix:/a?buffer=4 M", ELS_EINVAL, "buffer=4 M: expected a size");
    REFUSED("unix:/a?buffer=-4M", ELS_EINVAL, "buffer=-4M: expected a size");
    REFUSED("unix:/a?buffer=+4M", ELS_EINVAL, "buffer=+4M: expected a size");
    REFUSED("unix:/a?buffer=0x400000", ELS_EINVAL, "expected a size");
    REFUSED("unix:/a?buffer=4T", ELS_EINVAL, "buffer=4T: expected a size");
    REFUSED("unix:/a?buffer=M", ELS_EINVAL, "buffer=M: expected a size");
    /* A syntax error wins over overflow: it says what is really wrong. */
    REFUSED("unix:/a?buffer=99999999999999999999999x", ELS_EINVAL,
            "expected a size");

    uint64_t b = 1;
    CHECK_OK(els_sink_parse_size("0", &b));
    CHECK_U64(b, ==, 0);
    CHECK_OK(els_sink_parse_size("1k", &b));
    CHECK_U64(b, ==, 1024);
    CHECK_OK(els_sink_parse_size("17179869183G", &b));
    CHECK_U64(b, ==, (((uint64_t)1 << 34) - 1) << 30);
    CHECK_INT(els_sink_parse_size("17179869184G", &b), ==, -ERANGE);
    CHECK_OK(els_sink_parse_size("18446744073709551615", &b));
    CHECK_U64(b, ==, UINT64_MAX);
    CHECK_INT(els_sink_parse_size("18446744073709551616", &b), ==, -ERANGE);
    CHECK_INT(els_sink_parse_size("", &b), ==, ELS_EINVAL);
    CHECK_INT(els_sink_parse_size("K", &b), ==, ELS_EINVAL);
    CHECK_INT(els_sink_parse_size("1KK", &b), ==, ELS_EINVAL);
    CHECK_INT(els_sink_parse_size(NULL, &b), ==, ELS_EINVAL);
}

static void policy_values(void)
{
    struct elsi_spec s;
    PARSE_OK("unix:/a?policy=drop", &s);
    CHECK_INT(s.policy, ==, ELSI_POLICY_DROP);
    elsi_spec_free(&s);
    PARSE_OK("unix:/a?policy=block", &s);
    CHECK_INT(s.policy, ==, ELSI_POLICY_BLOCK);
    CHECK_INT(s.block_ms, ==, -1);
    elsi_spec_free(&s);
    PARSE_OK("unix:/a?policy=block:1", &s);
    CHECK_INT(s.policy, ==, ELSI_POLICY_BLOCK);
    CHECK_INT(s.block_ms, ==, 1);
    elsi_spec_free(&s);
    PARSE_OK("unix:/a?policy=block:250", &s);
    CHECK_INT(s.block_ms, ==, 250);
    elsi_spec_free(&s);
    PARSE_OK("unix:/a?policy=block:86400000", &s);
    CHECK_INT(s.block_ms, ==, 86400000);
    elsi_spec_free(&s);
    PARSE_OK("unix:/a?policy=block%3A5", &s);
    CHECK_INT(s.block_ms, ==, 5);
    elsi_spec_free(&s);

    REFUSED("unix:/a?policy=block:0", ELS_EINVAL,
            "policy=block:0: MS in block:MS must be");
    REFUSED("unix:/a?policy=block:86400001", ELS_EINVAL, "policy=block:86400001");
    REFUSED("unix:/a?policy=block:", ELS_EINVAL, "from 1 to 86400000");
    REFUSED("unix:/a?policy=block:-1", ELS_EINVAL, "policy=block:-1");
    REFUSED("unix:/a?policy=block:+5", ELS_EINVAL, "policy=block:+5");
    REFUSED("unix:/a?policy=block:1.5", ELS_EINVAL, "policy=block:1.5");
    REFUSED("unix:/a?policy=block: 5", ELS_EINVAL, "policy=block: 5");
    REFUSED("unix:/a?policy=block:99999999999999999999999", ELS_EINVAL,
            "from 1 to 86400000");
    REFUSED("unix:/a?policy=Block", ELS_EINVAL,
            "policy=Block: expected drop, block or block:MS");
    REFUSED("unix:/a?policy=dropp", ELS_EINVAL, "policy=dropp: expected");
    REFUSED("unix:/a?policy=blocking", ELS_EINVAL, "policy=blocking: expected");
}

static void seconds_values(void)
{
    struct elsi_spec s;
    PARSE_OK("unix:/a?wait=2&linger=0.25", &s);
    CHECK_INT(s.wait_ms, ==, 2000);
    CHECK_INT(s.linger_ms, ==, 250);
    elsi_spec_free(&s);
    PARSE_OK("unix:/a?linger=0&wait=0.001", &s);
    CHECK_INT(s.linger_ms, ==, 0);
    CHECK_INT(s.wait_ms, ==, 1);
    elsi_spec_free(&s);
    PARSE_OK("unix:/a?wait=86400&linger=1.5", &s);
    CHECK_INT(s.wait_ms, ==, 86400000);
    CHECK_INT(s.linger_ms, ==, 1500);
    elsi_spec_free(&s);
    PARSE_OK("unix:/a?wait=007.10", &s);
    CHECK_INT(s.wait_ms, ==, 7100);
    elsi_spec_free(&s);

    PARSE_OK("unix:/a?wait=1", &s);
    CHECK_INT(s.wait_consumers, ==, 1);
    elsi_spec_free(&s);
    PARSE_OK("unix:/a?wait=3&wait-consumers=2", &s);
    CHECK_INT(s.wait_ms, ==, 3000);
    CHECK_INT(s.wait_consumers, ==, 2);
    elsi_spec_free(&s);
    REFUSED("unix:/a?wait-consumers=0", ELS_EINVAL,
            "wait-consumers=0: expected a whole number from 1 to");
    REFUSED("unix:/a?wait-consumers=2x", ELS_EINVAL, "wait-consumers=2x");
    REFUSED("ring:/a?wait-consumers=2", ELS_EINVAL,
            "option 'wait-consumers' does not apply to scheme ring");
    REFUSED("unix:/a?wait=0.0001", ELS_EINVAL,
            "wait=0.0001: expected seconds like 2 or 0.25");
    REFUSED("unix:/a?linger=86400.001", ELS_EINVAL, "linger=86400.001");
    REFUSED("unix:/a?linger=86401", ELS_EINVAL, "linger=86401: expected");
    REFUSED("unix:/a?wait=-1", ELS_EINVAL, "wait=-1");
    REFUSED("unix:/a?wait=1e3", ELS_EINVAL, "wait=1e3");
    REFUSED("unix:/a?wait=.5", ELS_EINVAL, "wait=.5");
    REFUSED("unix:/a?wait=2.", ELS_EINVAL, "wait=2.");
    REFUSED("unix:/a?wait=1,5", ELS_EINVAL, "wait=1,5");
    REFUSED("unix:/a?wait=two", ELS_EINVAL, "wait=two");
    REFUSED("unix:/a?linger=99999999999999999999", ELS_EINVAL,
            "linger=99999999999999999999");

    uint32_t ms = 7;
    CHECK_OK(elsi_parse_seconds("0.5", &ms));
    CHECK_INT(ms, ==, 500);
    CHECK_OK(elsi_parse_seconds("86400.000", &ms));
    CHECK_INT(ms, ==, 86400000);
    CHECK_INT(elsi_parse_seconds("", &ms), ==, ELS_EINVAL);
    CHECK_INT(elsi_parse_seconds("1.2.3", &ms), ==, ELS_EINVAL);
    CHECK_INT(elsi_parse_seconds(" 1", &ms), ==, ELS_EINVAL);
    CHECK_INT(elsi_parse_seconds(NULL, &ms), ==, ELS_EINVAL);
}

/* ------------------------------------------------------------------------
 * Messages and memory on failure
 * ------------------------------------------------------------------------ */

static void messages_survive_odd_input(void)
{
    struct elsi_spec s;
    char err[512];

    /* A newline in a spec is escaped, so the message stays one line. */
    CHECK_INT(elsi_spec_parse("unix:/a\n?foo=1", &s, err, sizeof err), ==,
              ELS_EINVAL);
    CHECK(strchr(err, '\n') == NULL);
    CHECK_CONTAINS(err, "unix:/a\\x0a?foo=1");
    CHECK_CONTAINS(err, "unknown option 'foo'");

    /* A very long spec is cut in the quote, not in the reason. */
    char spec[1200];
    snprintf(spec, sizeof spec, "unix:/%0900d?foo=1", 0);
    CHECK_INT(elsi_spec_parse(spec, &s, err, sizeof err), ==, ELS_EINVAL);
    CHECK_CONTAINS(err, "...\": unknown option 'foo' for scheme unix");
    CHECK_INT(strlen(err), <, sizeof err - 1);

    /* err may be NULL, or tiny. */
    CHECK_INT(elsi_spec_parse("tc:x", &s, NULL, 0), ==, ELS_ENOSCHEME);
    char small[8];
    CHECK_INT(elsi_spec_parse("tc:x", &s, small, sizeof small), ==,
              ELS_ENOSCHEME);
    CHECK_STR(small, "spec \"t");
    check_spec_empty(__LINE__, &s);
}

static void failures_free_everything(void)
{
    register_test_sinks();
    static const char *const bad[] = {
        "tc:x", "unix:/a%zz", "unix:/a?foo=1", "unix:/a?buffer=1",
        "test-a:x?color=red&color=blue", "test-a:x?color=red&size-hint=%zz",
        "test-a:x?color=red&size-hint=1&buffer=2M",
        "test-a:x?color=red&size-hint=1&policy=x", "unix:/a?buffer=4M&",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct elsi_spec s;
        CHECK_INT(elsi_spec_parse(bad[i], &s, NULL, 0), <, 0);
        check_spec_empty(__LINE__, &s);
        elsi_spec_free(&s);
    }
    struct elsi_spec z;
    memset(&z, 0, sizeof z);
    elsi_spec_free(&z);
    elsi_spec_free(NULL);
    check_no_leaks();
}

/* ------------------------------------------------------------------------
 * lib/base/error.c
 * ------------------------------------------------------------------------ */

static void error_texts(void)
{
    CHECK_STR(els_strerror(0), "success");
    CHECK_STR(els_strerror(ELS_ENOSCHEME),
              "sink scheme not registered (link with -leventlog-sink)");
    static const int codes[] = {
        ELS_EINVAL, ELS_ENOSCHEME, ELS_ENAMETOOLONG, ELS_EADDRINUSE,
        ELS_EEXIST, ELS_EBUSY, ELS_ENOMEM, ELS_EMSGSIZE, ELS_EVERSION,
        ELS_ESTOPPED,
    };
    size_t n = sizeof codes / sizeof codes[0];
    for (size_t i = 0; i < n; i++) {
        const char *t = els_strerror(codes[i]);
        CHECK(t != NULL && t[0] != '\0');
        CHECK(strcmp(t, "unknown error code") != 0);
        for (size_t j = 0; j < i; j++)
            CHECK_MSG(strcmp(t, els_strerror(codes[j])) != 0,
                      "codes %d and %d share \"%s\"", codes[i], codes[j], t);
    }
    CHECK_CONTAINS(els_strerror(ELS_EMSGSIZE), "buffer=");
    CHECK_CONTAINS(els_strerror(ELS_EVERSION), "ABI");
    /* Other codes are the operating system's. */
    CHECK_STR(els_strerror(-ENOENT), strerror(ENOENT));
    CHECK_STR(els_strerror(-EAGAIN), strerror(EAGAIN));
    CHECK_STR(els_strerror(-99999), "unknown error code");
    CHECK_STR(els_strerror(5), "unknown error code");
    CHECK_STR(els_strerror(INT_MIN), "unknown error code");
}

static void drop_cause_names(void)
{
    static const char *const want[ELS_DROP__COUNT] = {
        "queue-full", "block-timeout", "too-big", "no-consumer",
        "sink-error", "stopped", "forked-child", "slow-consumer",
    };
    for (int i = 0; i < ELS_DROP__COUNT; i++)
        CHECK_STR(els_drop_cause_name((enum els_drop_cause)i), want[i]);
    CHECK_STR(els_drop_cause_name(ELS_DROP__COUNT), "unknown");
    CHECK_STR(els_drop_cause_name((enum els_drop_cause)-1), "unknown");
    CHECK_STR(els_drop_cause_name((enum els_drop_cause)1000), "unknown");
}

/* ------------------------------------------------------------------------
 * lib/base/log.c
 * ------------------------------------------------------------------------ */

struct captured {
    int calls;
    enum els_log_level level;
    char message[1024];
};

static void capture_hook(void *user, enum els_log_level level,
                         const char *message)
{
    struct captured *c = user;
    c->calls++;
    c->level = level;
    snprintf(c->message, sizeof c->message, "%s", message);
}

static void log_hook_receives_lines(void)
{
    struct captured c = { 0 };
    els_set_log_hook(capture_hook, &c, ELS_LOG_INFO);
    elsi_log(ELS_LOG_WARN, "port %d busy", 80);
    CHECK_INT(c.calls, ==, 1);
    CHECK_INT(c.level, ==, ELS_LOG_WARN);
    CHECK_STR(c.message, "port 80 busy");

    elsi_log(ELS_LOG_DEBUG, "too chatty");
    CHECK_INT(c.calls, ==, 1);
    elsi_log(ELS_LOG_INFO, "trailing newline\n");
    CHECK_STR(c.message, "trailing newline");
    elsi_log(ELS_LOG_ERROR, "two\nlines\r\n\n");
    CHECK_STR(c.message, "two lines");
    CHECK_INT(c.level, ==, ELS_LOG_ERROR);

    char big[2000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    elsi_log(ELS_LOG_INFO, "%s", big);
    CHECK_INT(strlen(c.message), ==, 511);
    CHECK_CONTAINS(c.message + 500, "xxxxxxxx...");

    els_set_log_hook(capture_hook, &c, ELS_LOG_DEBUG);
    elsi_log(ELS_LOG_DEBUG, "now heard");
    CHECK_STR(c.message, "now heard");
    CHECK_INT(c.level, ==, ELS_LOG_DEBUG);

    els_set_log_hook(capture_hook, &c, ELS_LOG_ERROR);
    int before = c.calls;
    elsi_log(ELS_LOG_WARN, "filtered");
    CHECK_INT(c.calls, ==, before);

    els_set_log_hook(NULL, NULL, ELS_LOG_DEBUG);
    elsi_log(ELS_LOG_ERROR, "to nobody");
    CHECK_INT(c.calls, ==, before);

    /* Logging keeps errno, so failure paths may log before returning. */
    errno = EADDRINUSE;
    elsi_log(ELS_LOG_ERROR, "x");
    CHECK_INT(errno, ==, EADDRINUSE);
}

static void fail_writes_one_line(void)
{
    char err[16];
    CHECK_INT(elsi_fail(err, sizeof err, ELS_EINVAL, "bad %s", "thing"), ==,
              ELS_EINVAL);
    CHECK_STR(err, "bad thing");
    CHECK_INT(elsi_fail(err, sizeof err, -ENOENT, "%s", "a long message here"),
              ==, -ENOENT);
    CHECK_STR(err, "a long message ");
    CHECK_INT(elsi_fail(NULL, 0, ELS_EBUSY, "nowhere"), ==, ELS_EBUSY);
    err[0] = 'z';
    CHECK_INT(elsi_fail(err, 0, ELS_EBUSY, "nowhere"), ==, ELS_EBUSY);
    CHECK_INT(err[0], ==, 'z');
}

/* Point fd 2 at a file in the case's directory; return its path. */
static const char *redirect_stderr(void)
{
    const char *path = check_path("stderr.txt");
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    CHECK(dup2(fileno(f), STDERR_FILENO) == STDERR_FILENO);
    fclose(f);
    return path;
}

static void read_file(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
}

static void default_hook_writes_stderr(void)
{
    unsetenv("EVENTLOG_SINK_DEBUG");
    const char *path = redirect_stderr();
    elsi_log(ELS_LOG_INFO, "hello %s\n", "world");
    elsi_log(ELS_LOG_DEBUG, "not by default");
    elsi_log(ELS_LOG_ERROR, "second");
    char buf[256];
    read_file(path, buf, sizeof buf);
    CHECK_STR(buf, "eventlog-sink: hello world\neventlog-sink: second\n");
}

static void debug_env_raises_default_level(void)
{
    setenv("EVENTLOG_SINK_DEBUG", "1", 1);
    const char *path = redirect_stderr();
    elsi_log(ELS_LOG_DEBUG, "details");
    char buf[256];
    read_file(path, buf, sizeof buf);
    CHECK_STR(buf, "eventlog-sink: details\n");
}

static void explicit_hook_beats_debug_env(void)
{
    setenv("EVENTLOG_SINK_DEBUG", "1", 1);
    struct captured c = { 0 };
    els_set_log_hook(capture_hook, &c, ELS_LOG_INFO);
    elsi_log(ELS_LOG_DEBUG, "details");
    CHECK_INT(c.calls, ==, 0);
}

/* A hook is always called with its own user pointer, and once
 * els_set_log_hook() returns the old hook is never called again (see
 * Note [Log hook updates] in log.c). */
struct hook_state {
    atomic_int calls;
    atomic_int mismatches;
};

static struct hook_state hook_a, hook_b;

static void hook_fn_a(void *user, enum els_log_level level, const char *m)
{
    (void)level;
    (void)m;
    struct hook_state *s = user;
    if (s != &hook_a)
        atomic_fetch_add(&hook_a.mismatches, 1);
    atomic_fetch_add(&s->calls, 1);
}

static void hook_fn_b(void *user, enum els_log_level level, const char *m)
{
    (void)level;
    (void)m;
    struct hook_state *s = user;
    if (s != &hook_b)
        atomic_fetch_add(&hook_b.mismatches, 1);
    atomic_fetch_add(&s->calls, 1);
}

static atomic_int loggers_stop;

static void *logger_thread(void *arg)
{
    (void)arg;
    while (!atomic_load(&loggers_stop))
        elsi_log(ELS_LOG_INFO, "busy %d", 1);
    return NULL;
}

static void hook_swaps_while_logging(void)
{
    els_set_log_hook(hook_fn_a, &hook_a, ELS_LOG_INFO);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        CHECK_INT(pthread_create(&t[i], NULL, logger_thread, NULL), ==, 0);
    /* Wait until the loggers run, so the swaps below race with them. */
    uint64_t deadline = check_now_ms() + 20000;
    while (atomic_load(&hook_a.calls) == 0 && check_now_ms() < deadline)
        check_sleep_ms(1);
    CHECK_INT(atomic_load(&hook_a.calls), >, 0);
    for (int round = 0; round < 2000; round++) {
        if (round % 2 == 0)
            els_set_log_hook(hook_fn_b, &hook_b, ELS_LOG_INFO);
        else
            els_set_log_hook(hook_fn_a, &hook_a, ELS_LOG_INFO);
    }
    els_set_log_hook(NULL, NULL, ELS_LOG_INFO);
    int a = atomic_load(&hook_a.calls), b = atomic_load(&hook_b.calls);
    /* Keep logging for a while: nothing may reach the old hooks now. */
    uint64_t until = check_now_ms() + 100;
    while (check_now_ms() < until)
        check_sleep_ms(5);
    atomic_store(&loggers_stop, 1);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    CHECK_INT(atomic_load(&hook_a.calls), ==, a);
    CHECK_INT(atomic_load(&hook_b.calls), ==, b);
    CHECK_INT(atomic_load(&hook_a.mismatches), ==, 0);
    CHECK_INT(atomic_load(&hook_b.mismatches), ==, 0);
    CHECK_INT(a + b, >, 0);
}

/* control=0|1|unix:PATH: the endpoint form is a ring: sink's, decoded like
 * any value, and refused with control-secret= (UNIX peers only). */
static void control_values(void)
{
    struct elsi_spec s;
    PARSE_OK("ring:/tmp/r.eventlog?control=unix:/tmp/c%3F.sock&size=4M", &s);
    CHECK_MSG(s.control, "control=unix:PATH turns control on");
    CHECK_STR(s.control_endpoint, "/tmp/c?.sock");
    elsi_spec_free(&s);
    PARSE_OK("ring:/tmp/r.eventlog?control=0", &s);
    CHECK_MSG(!s.control && s.control_endpoint == NULL, "control=0 is off");
    elsi_spec_free(&s);
    PARSE_OK("unix:/tmp/x?control=1", &s);
    CHECK_MSG(s.control && s.control_endpoint == NULL, "control=1 has no endpoint");
    elsi_spec_free(&s);

    REFUSED("ring:/tmp/r?control=unix:", ELS_EINVAL, "needs the path");
    REFUSED("ring:/tmp/r?control=tcp:9000", ELS_EINVAL,
            "control=tcp:9000: expected 0, 1 or unix:PATH");
    REFUSED("ring:/tmp/r?control=unix", ELS_EINVAL, "expected 0, 1 or unix:PATH");
    REFUSED("unix:/tmp/x?control=unix:/tmp/c", ELS_EINVAL,
            "takes control=1 for its own clients");
    REFUSED("file:/tmp/x?control=unix:/tmp/c", ELS_EINVAL,
            "control=unix:PATH is for ring: sinks");
    REFUSED("ring:/tmp/r?control=unix:/tmp/c&control-secret=/tmp/s",
            ELS_EINVAL, "control=unix:PATH takes UNIX clients only");
    REFUSED("ring:/tmp/r?control=unix:/tmp/c&control=1", ELS_EINVAL,
            "given twice");
    check_no_leaks();
}

/* trust=0|1 and collector-secret=PATH (Note [Trusted consumers]): only
 * connect-out sinks take them, and not both at once. */
static void connect_out_trust_values(void)
{
    struct elsi_spec s;
    PARSE_OK("tcp-connect:127.0.0.1:9?policy=block&trust=1", &s);
    CHECK_MSG(s.trust, "trust=1 is kept");
    CHECK(s.collector_secret == NULL);
    elsi_spec_free(&s);
    PARSE_OK("unix-connect:/tmp/c.sock?trust=0", &s);
    CHECK_MSG(!s.trust, "trust=0 is off");
    elsi_spec_free(&s);
    PARSE_OK("tcp-connect:127.0.0.1:9?collector-secret=/tmp/s%26k", &s);
    CHECK_STR(s.collector_secret, "/tmp/s&k");
    CHECK_MSG(!s.trust, "trust is off by default");
    elsi_spec_free(&s);
    REFUSED("tcp-connect:127.0.0.1:9?trust=yes", ELS_EINVAL,
            "trust=yes: expected 0 or 1");
    REFUSED("tcp:0?trust=1", ELS_EINVAL, "trust= is for connect-out sinks");
    REFUSED("unix:/tmp/x?collector-secret=/tmp/s", ELS_EINVAL,
            "collector-secret= is for connect-out sinks");
    REFUSED("file:/tmp/x?trust=1", ELS_EINVAL, "trust= is for connect-out sinks");
    REFUSED("tcp-connect:127.0.0.1:9?trust=1&collector-secret=/tmp/s",
            ELS_EINVAL, "trust=1 and collector-secret= together");
    REFUSED("tcp-connect:127.0.0.1:9?collector-secret=", ELS_EINVAL,
            "has an empty value");
}

static const struct check_case cases[] = {
    CHECK_CASE(connect_out_trust_values),
    CHECK_CASE(minimal_spec_gets_defaults),
    CHECK_CASE(every_builtin_scheme_parses),
    CHECK_CASE(scheme_prefixes_are_not_registered),
    CHECK_CASE(scheme_syntax_errors),
    CHECK_CASE(empty_address_is_left_to_the_sink),
    CHECK_CASE(address_and_values_are_percent_decoded),
    CHECK_CASE(bad_percent_escapes_are_refused),
    CHECK_CASE(option_syntax_errors),
    CHECK_CASE(duplicate_options_are_refused),
    CHECK_CASE(unknown_options_are_refused),
    CHECK_CASE(consumer_limits),
    CHECK_CASE(sink_options_belong_to_their_scheme),
    CHECK_CASE(sink_args_point_into_the_spec),
    CHECK_CASE(too_many_options_are_refused),
    CHECK_CASE(buffer_values),
    CHECK_CASE(policy_values),
    CHECK_CASE(seconds_values),
    CHECK_CASE(control_values),
    CHECK_CASE(messages_survive_odd_input),
    CHECK_CASE(failures_free_everything),
    CHECK_CASE(error_texts),
    CHECK_CASE(drop_cause_names),
    CHECK_CASE(log_hook_receives_lines),
    CHECK_CASE(fail_writes_one_line),
    CHECK_CASE(default_hook_writes_stderr),
    CHECK_CASE(debug_env_raises_default_level),
    CHECK_CASE(explicit_hook_beats_debug_env),
    CHECK_CASE(hook_swaps_while_logging),
};

CHECK_MAIN(cases)
