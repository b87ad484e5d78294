/*
 * test_http.c: serve's request parser (tools/serve/http.c) on the
 * fields that guard serve (Host, Origin, the token's
 * X-Eventlog-Sink-Token and Authorization's Bearer scheme, the session
 * cookie), the token and cookie comparisons, the query that a login
 * URL's redirect keeps, the check a
 * --token-file passes (tools/util.c: util_read_private()), a
 * connection's deadlines (http_clock_*: a slow client played in
 * simulated time) and the Prometheus escaping of /metrics
 * (tools/monitor/strbuf.c: sb_prom_label(), sb_prom_help()).  Malformed
 * heads in general are the fuzzer's (fuzz/fuzz_http.c) and
 * tests/monitor/test_serve.sh's; serve's answers to these requests, and what
 * serve does with a late client, are test_serve.sh's.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "testutil.h"
#include "serve/http.h"
#include "monitor/strbuf.h"
#include "monitor/util.h"

/* Parse "POST /api/control?cmd=status HTTP/1.1\r\nHost: h\r\n" + fields
 * + "\r\n"; the parser's answer. */
static int parse_with(const char *fields, struct http_request *r)
{
    static char buf[HTTP_HEAD_MAX];
    int n = snprintf(buf, sizeof buf, "POST /api/control?cmd=status HTTP/1.1\r\n"
                     "Host: 127.0.0.1:8089\r\n%s\r\n", fields);
    CHECK(n > 0 && (size_t)n < sizeof buf);
    int r1 = http_parse_request(buf, (size_t)n, r);
    if (r1 > 0)
        CHECK_INT(r1, ==, n);
    return r1;
}

static void test_token_field(void)
{
    struct http_request r;
    CHECK_INT(parse_with("", &r), >, 0);
    CHECK(!r.has_token);
    CHECK_STR(r.token, "");

    /* Any case of the name; the value trimmed as any field's. */
    CHECK_INT(parse_with("x-EVENTLOG-sink-token:   abc-DEF_1.~  \r\n", &r), >, 0);
    CHECK(r.has_token);
    CHECK_STR(r.token, "abc-DEF_1.~");
    CHECK_INT(r.method, ==, HTTP_POST);
    CHECK_STR(r.path, "/api/control");

    /* Present but empty: a token that matches nothing. */
    CHECK_INT(parse_with("X-Eventlog-Sink-Token:\r\n", &r), >, 0);
    CHECK(r.has_token);
    CHECK_STR(r.token, "");

    /* Twice, even with the same value: which would count? */
    CHECK_INT(parse_with("X-Eventlog-Sink-Token: a\r\nX-Eventlog-Sink-Token: a\r\n", &r),
              ==, -400);
    CHECK_INT(parse_with("X-Eventlog-Sink-Token: a\r\nx-eventlog-sink-token: b\r\n", &r),
              ==, -400);

    /* Bounded: HTTP_TOKEN_MAX characters fit, one more is refused. */
    char field[HTTP_TOKEN_MAX + 64], value[HTTP_TOKEN_MAX + 2];
    memset(value, 'k', HTTP_TOKEN_MAX);
    value[HTTP_TOKEN_MAX] = '\0';
    snprintf(field, sizeof field, "X-Eventlog-Sink-Token: %s\r\n", value);
    CHECK_INT(parse_with(field, &r), >, 0);
    CHECK_INT(strlen(r.token), ==, HTTP_TOKEN_MAX);
    CHECK_STR(r.token, value);
    value[HTTP_TOKEN_MAX] = 'k';
    value[HTTP_TOKEN_MAX + 1] = '\0';
    snprintf(field, sizeof field, "X-Eventlog-Sink-Token: %s\r\n", value);
    CHECK_INT(parse_with(field, &r), ==, -400);

    /* A control byte in it is malformed, like in any field. */
    CHECK_INT(parse_with("X-Eventlog-Sink-Token: a\001b\r\n", &r), ==, -400);
    /* A name that only starts like it is another field. */
    CHECK_INT(parse_with("X-Eventlog-Sink-Tokens: a\r\n", &r), >, 0);
    CHECK(!r.has_token);
}

/* Origin and Host keep their rules now that they share the code. */
static void test_origin_host_fields(void)
{
    struct http_request r;
    CHECK_INT(parse_with("Origin: http://127.0.0.1:8089\r\n", &r), >, 0);
    CHECK(r.has_origin);
    CHECK_STR(r.origin, "http://127.0.0.1:8089");
    CHECK_STR(r.host, "127.0.0.1:8089");
    CHECK_INT(parse_with("Origin: a\r\nOrigin: a\r\n", &r), ==, -400);
    CHECK_INT(parse_with("Host: x\r\n", &r), ==, -400);
    char field[400];
    snprintf(field, sizeof field, "Origin: http://%0300d\r\n", 0);
    CHECK_INT(parse_with(field, &r), ==, -400);
}

static void test_token_matches(void)
{
    const char *t = "0123456789abcdef0123456789abcdef";
    CHECK(http_token_matches(t, "0123456789abcdef0123456789abcdef"));
    CHECK(!http_token_matches(t, "0123456789abcdef0123456789abcdeF"));
    CHECK(!http_token_matches(t, "1123456789abcdef0123456789abcdef"));
    CHECK(!http_token_matches(t, "0123456789abcdef0123456789abcde"));
    CHECK(!http_token_matches(t, "0123456789abcdef0123456789abcdef0"));
    CHECK(!http_token_matches(t, ""));
    /* No token expected (none made): nothing matches, not even "". */
    CHECK(!http_token_matches("", ""));
    CHECK(!http_token_matches("", "x"));
}

/* The ways serve takes its token besides X-Eventlog-Sink-Token: the
 * Authorization field's Bearer scheme, the session cookie, and the
 * ?token= that a login URL carries and its redirect drops. */
static void test_bearer(void)
{
    CHECK_STR(http_bearer_token("Bearer abc"), "abc");
    CHECK_STR(http_bearer_token("bEARER   abc"), "abc");
    CHECK_STR(http_bearer_token("Bearer "), "");
    CHECK(http_bearer_token("Bearer") == NULL);
    CHECK(http_bearer_token("Basic YTpi") == NULL);
    CHECK(http_bearer_token("Bearerabc") == NULL);
    CHECK(http_bearer_token("") == NULL);
}

static void test_cookie_field(void)
{
    struct http_request r;
    CHECK_INT(parse_with("", &r), >, 0);
    CHECK(!r.has_cookie);
    CHECK_STR(r.cookie, "");
    CHECK_INT(parse_with("Cookie:  a=1; b=2 \r\n", &r), >, 0);
    CHECK(r.has_cookie);
    CHECK_STR(r.cookie, "a=1; b=2");
    /* More than once (a proxy from HTTP/2): joined, not refused. */
    CHECK_INT(parse_with("Cookie: a=1\r\ncookie: b=2\r\n", &r), >, 0);
    CHECK_STR(r.cookie, "a=1; b=2");
    /* As long as a head can be: kept whole. */
    static char field[HTTP_HEAD_MAX];
    int n = snprintf(field, sizeof field, "Cookie: big=%07000d; s=v\r\n", 0);
    CHECK(n > 0 && (size_t)n < sizeof field);
    CHECK_INT(parse_with(field, &r), >, 0);
    CHECK(http_cookie_matches(r.cookie, "s", "v"));
}

static void test_cookie_matches(void)
{
    const char *v = "0123456789abcdef0123456789abcdef";
    CHECK(http_cookie_matches("eventlog-sink-8089=0123456789abcdef0123456789abcdef",
                              "eventlog-sink-8089", v));
    CHECK(http_cookie_matches("x=1;eventlog-sink-8089 = \"0123456789abcdef0123456789abcdef\" ;y",
                              "eventlog-sink-8089", v));
    /* Another port's cookie, a prefix of the name, a wrong value. */
    CHECK(!http_cookie_matches("eventlog-sink-8090=0123456789abcdef0123456789abcdef",
                               "eventlog-sink-8089", v));
    CHECK(!http_cookie_matches("eventlog-sink-80890=0123456789abcdef0123456789abcdef",
                               "eventlog-sink-8089", v));
    CHECK(!http_cookie_matches("xeventlog-sink-8089=0123456789abcdef0123456789abcdef",
                               "eventlog-sink-8089", v));
    CHECK(!http_cookie_matches("eventlog-sink-8089=0123456789abcdef0123456789abcdeF",
                               "eventlog-sink-8089", v));
    CHECK(!http_cookie_matches("eventlog-sink-8089", "eventlog-sink-8089", v));
    CHECK(!http_cookie_matches("eventlog-sink-8089=", "eventlog-sink-8089", v));
    CHECK(!http_cookie_matches("", "eventlog-sink-8089", v));
    /* One of the name set by someone else: the right one still counts. */
    CHECK(http_cookie_matches("eventlog-sink-8089=planted; "
                              "eventlog-sink-8089=0123456789abcdef0123456789abcdef",
                              "eventlog-sink-8089", v));
    /* Nothing expected: nothing matches. */
    CHECK(!http_cookie_matches("a=", "a", ""));
}

static void test_query_without(void)
{
    char out[64];
    CHECK(http_query_without("token=abc", "token", out, sizeof out));
    CHECK_STR(out, "");
    CHECK(http_query_without("from=1&token=abc&to=2", "token", out, sizeof out));
    CHECK_STR(out, "from=1&to=2");
    CHECK(http_query_without("token&tokens=1&token=2&x=", "token", out, sizeof out));
    CHECK_STR(out, "tokens=1&x=");
    CHECK(http_query_without("&&a=1&&", "token", out, sizeof out));
    CHECK_STR(out, "a=1");
    CHECK(http_query_without("", "token", out, sizeof out));
    CHECK_STR(out, "");
    CHECK(!http_query_without("abcdef", "token", out, 6));
    CHECK(http_query_without("abcdef", "token", out, 7));
    CHECK_STR(out, "abcdef");
}

static void write_mode(const char *path, const char *text, mode_t mode)
{
    CHECK_OK(tu_write_file(path, text));
    CHECK_OK(chmod(path, mode) < 0 ? -errno : 0);
}

static void token_file_checks(const char *dir)
{
    char path[1100], link[1100], err[200], buf[40];
    snprintf(path, sizeof path, "%s/token", dir);
    snprintf(link, sizeof link, "%s/link", dir);

    write_mode(path, "0123456789abcdef0123456789abcdef\n", 0600);
    CHECK_INT(util_read_private(path, buf, 32, err, sizeof err), ==, 32);
    CHECK(memcmp(buf, "0123456789abcdef0123456789abcdef", 32) == 0);
    /* 0400 is as private. */
    CHECK_OK(chmod(path, 0400) < 0 ? -errno : 0);
    CHECK_INT(util_read_private(path, buf, 32, err, sizeof err), ==, 32);

    /* Readable by the group or others, or writable by them: refused. */
    static const mode_t open_modes[] = { 0640, 0604, 0620, 0660, 0644 };
    for (size_t i = 0; i < sizeof open_modes / sizeof open_modes[0]; i++) {
        CHECK_OK(chmod(path, open_modes[i]) < 0 ? -errno : 0);
        CHECK_INT(util_read_private(path, buf, 32, err, sizeof err), ==, -EACCES);
        CHECK_CONTAINS(err, "lets others read or change it (chmod 600)");
    }
    CHECK_OK(chmod(path, 0640) < 0 ? -errno : 0);
    util_read_private(path, buf, 32, err, sizeof err);
    CHECK_STR(err, "mode 640 lets others read or change it (chmod 600)");

    /* A symbolic link, even to a good file, is not followed. */
    CHECK_OK(chmod(path, 0600) < 0 ? -errno : 0);
    CHECK_OK(symlink(path, link) < 0 ? -errno : 0);
    CHECK_INT(util_read_private(link, buf, 32, err, sizeof err), ==, -ELOOP);
    CHECK_STR(err, "a symbolic link");
    /* Not a regular file. */
    CHECK_INT(util_read_private(dir, buf, 32, err, sizeof err), ==, -EINVAL);
    CHECK_STR(err, "not a regular file");

    /* Too long (a newline beyond len is still allowed), or empty. */
    write_mode(path, "0123456789abcdef0123456789abcdef0", 0600);
    CHECK_INT(util_read_private(path, buf, 32, err, sizeof err), ==, -EFBIG);
    CHECK_CONTAINS(err, "longer than 32 bytes");
    write_mode(path, "0123456789abcdef0123456789abcdef\n\n", 0600);
    CHECK_INT(util_read_private(path, buf, 32, err, sizeof err), ==, -EFBIG);
    write_mode(path, "short", 0600);
    CHECK_INT(util_read_private(path, buf, 32, err, sizeof err), ==, 5);
    write_mode(path, "\n", 0600);
    CHECK_INT(util_read_private(path, buf, 32, err, sizeof err), ==, -EINVAL);
    CHECK_STR(err, "empty");
    CHECK_INT(util_read_private("/nonexistent/token", buf, 32, err, sizeof err),
              ==, -ENOENT);
}

static void test_token_file(void)
{
    /* The check reads the mode bits; it needs no unprivileged user. */
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", check_path("tokenfile"));
    CHECK_OK(mkdir(dir, 0700) < 0 ? -errno : 0);
    token_file_checks(dir);
}

static const struct http_limits limits = {
    .head_ms = 10000, .request_ms = 60000, .idle_ms = 30000, .stall_ms = 15000,
};

/* A slow loris: one byte a second.  Late 10 s after accept, whatever it
 * sends; no byte restarts the clock. */
static void test_head_deadline_from_accept(void)
{
    struct http_clock c;
    http_clock_accept(&c, 1000);
    for (uint64_t t = 1000; t < 11000; t += 1000) {
        http_clock_input(&c, t);
        CHECK_INT(http_clock_late(&c, t, &limits), ==, HTTP_IN_TIME);
    }
    http_clock_input(&c, 10999);
    CHECK_INT(http_clock_late(&c, 10999, &limits), ==, HTTP_IN_TIME);
    CHECK_INT(http_clock_late(&c, 11000, &limits), ==, HTTP_LATE_HEAD);
    CHECK_STR(http_late_name(HTTP_LATE_HEAD), "request head incomplete");

    /* Silent after accept: the same deadline. */
    http_clock_accept(&c, 5);
    CHECK_INT(http_clock_late(&c, 10004, &limits), ==, HTTP_IN_TIME);
    CHECK_INT(http_clock_late(&c, 10005, &limits), ==, HTTP_LATE_HEAD);
}

/* Kept alive: idle between requests (its own limit), then the next
 * head's clock starts at its first byte. */
static void test_head_deadline_kept_alive(void)
{
    struct http_clock c;
    http_clock_accept(&c, 0);
    http_clock_input(&c, 100);
    http_clock_request(&c, 200, false);
    http_clock_output(&c, 200, 5000, 1 << 18);
    CHECK_INT(http_clock_late(&c, 9000, &limits), ==, HTTP_IN_TIME);
    http_clock_output(&c, 300, 0, 1 << 18);
    /* Idle from 300: no head deadline, the idle one. */
    CHECK_INT(http_clock_late(&c, 29000, &limits), ==, HTTP_IN_TIME);
    CHECK_INT(http_clock_late(&c, 30300, &limits), ==, HTTP_LATE_IDLE);
    /* A byte at 20000 starts the next head's clock... */
    http_clock_input(&c, 20000);
    CHECK_INT(http_clock_late(&c, 29999, &limits), ==, HTTP_IN_TIME);
    /* ...which the next bytes do not restart. */
    http_clock_input(&c, 25000);
    http_clock_input(&c, 29000);
    CHECK_INT(http_clock_late(&c, 30000, &limits), ==, HTTP_LATE_HEAD);

    /* Pipelined: the next head's clock starts when the previous one is
     * handled. */
    http_clock_accept(&c, 0);
    http_clock_request(&c, 4000, true);
    http_clock_output(&c, 4000, 100, 1 << 18);
    http_clock_output(&c, 4001, 0, 1 << 18);
    CHECK_INT(http_clock_late(&c, 13999, &limits), ==, HTTP_IN_TIME);
    CHECK_INT(http_clock_late(&c, 14000, &limits), ==, HTTP_LATE_HEAD);
}

/* From the head's first byte to the response's last, 60 s, however
 * the client reads meanwhile. */
static void test_request_deadline(void)
{
    struct http_clock c;
    http_clock_accept(&c, 0);
    http_clock_input(&c, 500);
    http_clock_request(&c, 600, false);
    for (uint64_t t = 600; t < 60000; t += 1000) {
        http_clock_output(&c, t, 1000, 1 << 18);    /* some read, some left */
        CHECK_INT(http_clock_late(&c, t, &limits), ==, HTTP_IN_TIME);
    }
    CHECK_INT(http_clock_late(&c, 60000, &limits), ==, HTTP_LATE_REQUEST);
    /* Sent in time: no deadline but the idle one. */
    http_clock_output(&c, 59000, 0, 1 << 18);
    CHECK_INT(http_clock_late(&c, 60000, &limits), ==, HTTP_IN_TIME);
}

/* Over the output bound for 15 s: late, stream or not; the head of a
 * pipelined request that waits on us meanwhile is not judged, and its
 * clock starts again when the output falls under the bound. */
static void test_output_stall(void)
{
    struct http_clock c;
    http_clock_accept(&c, 0);
    http_clock_request(&c, 10, true);
    http_clock_output(&c, 10, 300000, 1 << 18);
    CHECK(c.over);
    CHECK_INT(http_clock_late(&c, 14000, &limits), ==, HTTP_IN_TIME);
    http_clock_output(&c, 14000, 270000, 1 << 18);  /* read a little */
    CHECK_INT(http_clock_late(&c, 15009, &limits), ==, HTTP_IN_TIME);
    CHECK_INT(http_clock_late(&c, 15010, &limits), ==, HTTP_LATE_OUTPUT);
    /* Under the bound at 15000: the waiting head has 10 s from then. */
    http_clock_output(&c, 15000, 1000, 1 << 18);
    CHECK_INT(http_clock_late(&c, 24999, &limits), ==, HTTP_IN_TIME);
    CHECK_INT(http_clock_late(&c, 25000, &limits), ==, HTTP_LATE_HEAD);

    /* An event stream: no request or idle deadline, only this one. */
    http_clock_accept(&c, 0);
    http_clock_input(&c, 1);
    http_clock_request(&c, 2, false);
    http_clock_stream(&c);
    http_clock_output(&c, 3, 100, 1 << 18);
    CHECK_INT(http_clock_late(&c, 3600000, &limits), ==, HTTP_IN_TIME);
    http_clock_output(&c, 3600000, (1 << 18) + 1, 1 << 18);
    CHECK_INT(http_clock_late(&c, 3614999, &limits), ==, HTTP_IN_TIME);
    CHECK_INT(http_clock_late(&c, 3615000, &limits), ==, HTTP_LATE_OUTPUT);
}

/* The escaped text, as a NUL-terminated copy. */
static const char *prom(bool label, const char *s, size_t n)
{
    static struct strbuf sb;
    sb_clear(&sb);
    if (label)
        sb_prom_label(&sb, s, n);
    else
        sb_prom_help(&sb, s, n);
    CHECK(!sb.failed);
    return sb.p;
}

static void test_prom_label(void)
{
    /* The three escapes; a tab, a CR and UTF-8 as they are. */
    static const char in[] = "a\tb\"c\\d\ne\rf \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";
    CHECK_STR(prom(true, in, sizeof in - 1),
              "\"a\tb\\\"c\\\\d\\ne\rf \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
    CHECK_STR(prom(true, "", 0), "\"\"");
    /* Not UTF-8, each byte U+FFFD: a lone continuation byte, 0xff, a
     * truncated sequence, an overlong '/', a surrogate. */
    static const char bad[] = "x\x80y\xffz\xe2\x82" "a\xc0\xaf" "b\xed\xa0\x80";
    CHECK_STR(prom(true, bad, sizeof bad - 1),
              "\"x\xef\xbf\xbdy\xef\xbf\xbdz\xef\xbf\xbd\xef\xbf\xbd"
              "a\xef\xbf\xbd\xef\xbf\xbd" "b\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
    /* No JSON escapes. */
    CHECK(strstr(prom(true, "\x01\t\x7f", 3), "\\u") == NULL);
}

static void test_prom_help(void)
{
    /* Backslash and newline; a quote stays as it is. */
    static const char in[] = "say \"x\" \\ then\nmore\t\xff";
    CHECK_STR(prom(false, in, sizeof in - 1),
              "say \"x\" \\\\ then\\nmore\t\xef\xbf\xbd");
}

static const struct check_case cases[] = {
    CHECK_CASE(test_head_deadline_from_accept),
    CHECK_CASE(test_head_deadline_kept_alive),
    CHECK_CASE(test_request_deadline),
    CHECK_CASE(test_output_stall),
    CHECK_CASE(test_prom_label),
    CHECK_CASE(test_prom_help),
    CHECK_CASE(test_token_field),
    CHECK_CASE(test_origin_host_fields),
    CHECK_CASE(test_token_matches),
    CHECK_CASE(test_token_file),
    CHECK_CASE(test_bearer),
    CHECK_CASE(test_cookie_field),
    CHECK_CASE(test_cookie_matches),
    CHECK_CASE(test_query_without),
};

CHECK_MAIN(cases)
