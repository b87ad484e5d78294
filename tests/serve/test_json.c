/*
 * test_json.c: the JSON reader of serve --all's webhook
 * (tools/serve/json.c) on what Alertmanager sends and on hostile
 * documents: every departure from RFC 8259 refused with where it is,
 * nesting past JSON_DEPTH_MAX and more values than tokens refused
 * without recursion (a 1 MiB run of '[' and a million-value array),
 * strings' escapes, surrogates and UTF-8 checked, lookups that refuse a
 * key given twice, and decoding into a buffer too small.  Random inputs
 * are the fuzzer's (fuzz/fuzz_json.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "serve/json.h"

static struct json_tok toks[4096];
static char err[200];

static int parse(struct json_doc *d, const char *text)
{
    return json_parse(d, text, strlen(text), toks, 4096, err, sizeof err);
}

/* An Alertmanager webhook as version 0.25 sends it. */
static const char webhook[] =
    "{\"receiver\":\"eventlog-sink\",\"status\":\"firing\",\"alerts\":["
    "{\"status\":\"firing\",\"labels\":{\"alertname\":\"GhcLongGcPause\","
    "\"instance\":\"127.0.0.1:8089\",\"job\":\"ghc\",\"pid\":\"4242\","
    "\"program\":\"app\"},\"annotations\":{\"summary\":\"a pause \\u003e 0.1 s\"},"
    "\"startsAt\":\"2024-01-01T00:00:00.000Z\",\"endsAt\":\"0001-01-01T00:00:00Z\","
    "\"generatorURL\":\"http://x/graph?g0.expr=a%3Eb\",\"fingerprint\":\"0123abcd\"}],"
    "\"groupLabels\":{\"alertname\":\"GhcLongGcPause\"},\"commonLabels\":{},"
    "\"commonAnnotations\":{},\"externalURL\":\"http://am:9093\",\"version\":\"4\","
    "\"groupKey\":\"{}:{alertname=\\\"GhcLongGcPause\\\"}\",\"truncatedAlerts\":0}";

static void test_webhook(void)
{
    struct json_doc d;
    CHECK_INT(parse(&d, webhook), ==, JSON_OK);
    CHECK_INT(d.tok[0].type, ==, JSON_OBJECT);
    CHECK_INT(d.tok[0].count, ==, 10);
    CHECK_INT(d.tok[0].end, ==, d.n);
    int v = json_member(&d, 0, "version");
    CHECK(v > 0 && json_str_eq(&d, (unsigned)v, "4"));
    int alerts = json_member(&d, 0, "alerts");
    CHECK(alerts > 0);
    CHECK_INT(d.tok[alerts].type, ==, JSON_ARRAY);
    CHECK_INT(d.tok[alerts].count, ==, 1);
    unsigned a = json_first(&d, (unsigned)alerts);
    CHECK(a != 0);
    CHECK_INT(json_next(&d, (unsigned)alerts, a), ==, 0);
    int labels = json_member(&d, a, "labels");
    CHECK(labels > 0);
    char buf[64];
    int pid = json_member(&d, (unsigned)labels, "pid");
    CHECK(pid > 0);
    CHECK_INT(json_str(&d, (unsigned)pid, buf, sizeof buf), ==, 4);
    CHECK_STR(buf, "4242");
    int ann = json_member(&d, a, "annotations");
    int sum = json_member(&d, (unsigned)ann, "summary");
    CHECK_INT(json_str(&d, (unsigned)sum, buf, sizeof buf), ==, 15);
    CHECK_STR(buf, "a pause > 0.1 s");
    CHECK_INT(json_member(&d, (unsigned)labels, "absent"), ==, -1);
    CHECK_INT(json_member(&d, (unsigned)alerts, "x"), ==, -3);
    int n = json_member(&d, 0, "truncatedAlerts");
    CHECK_INT(d.tok[n].type, ==, JSON_NUMBER);
    /* Walking the labels visits each member once, keys then values. */
    unsigned count = 0;
    for (unsigned k = json_first(&d, (unsigned)labels); k;
         k = json_next(&d, (unsigned)labels, k)) {
        CHECK_INT(d.tok[k].type, ==, JSON_STRING);
        CHECK_INT(d.tok[k + 1].type, ==, JSON_STRING);
        count++;
    }
    CHECK_INT(count, ==, 5);
}

static void test_scalars_and_whitespace(void)
{
    struct json_doc d;
    static const char *const ok[] = {
        "0", "-0", "12", "-1.5e+3", "1E9", "0.25", "true", "false", "null",
        "\"\"", " \t\r\n[ ] ", "{}", "[[],{},[{}]]", "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"",
        "\"\\u00e9\\ud83d\\ude00\"", "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"",
        "{\"a\":[1,2,{\"b\":null}],\"c\":\"d\"}",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int rc = parse(&d, ok[i]);
        if (rc != JSON_OK)
            fprintf(stderr, "refused %s: %s\n", ok[i], err);
        CHECK_INT(rc, ==, JSON_OK);
        CHECK_INT(d.tok[0].end, ==, d.n);
    }
    char buf[32];
    CHECK_INT(parse(&d, "\"\\u00e9\\ud83d\\ude00\""), ==, JSON_OK);
    CHECK_INT(json_str(&d, 0, buf, sizeof buf), ==, 6);
    CHECK_STR(buf, "\xc3\xa9\xf0\x9f\x98\x80");
    CHECK_INT(parse(&d, "\"a\\nb\\\"\""), ==, JSON_OK);
    CHECK_INT(json_str(&d, 0, buf, sizeof buf), ==, 4);
    CHECK_STR(buf, "a\nb\"");
    /* One byte short: refused, not cut. */
    CHECK_INT(json_str(&d, 0, buf, 4), ==, -1);
    CHECK_INT(json_str(&d, 0, buf, 5), ==, 4);
    /* Not a string. */
    CHECK_INT(parse(&d, "[1]"), ==, JSON_OK);
    CHECK_INT(json_str(&d, 1, buf, sizeof buf), ==, -1);
    CHECK(!json_str_eq(&d, 1, "1"));
}

/* Each refused, with a message naming a byte offset. */
static void test_malformed(void)
{
    static const char *const bad[] = {
        "", " ", "{", "}", "[", "]", "[1,]", "{\"a\":1,}", "{,}", "[,1]",
        "{\"a\"}", "{\"a\" 1}", "{a:1}", "{'a':1}", "['a']", "[1 2]",
        "01", "+1", "1.", ".5", "1e", "1e+", "-", "--1", "0x10", "NaN",
        "Infinity", "tru", "nul", "True", "[true false]", "\"abc",
        "\"a\nb\"", "\"a\tb\"", "\"\\x41\"", "\"\\u12\"", "\"\\u12g4\"",
        "\"\\ud800\"", "\"\\ud800\\u0041\"", "\"\\udc00\"", "\"\\u0000\"",
        "\"\xff\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"",
        "\"\xe2\x82\"", "\xef\xbb\xbf{}", "{} {}", "[1]x", "/* c */ 1",
        "[1]\x00", "{\"a\":1 \"b\":2}",
    };
    struct json_doc d;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        /* Lengths by strlen, but "[1]\x00" keeps its NUL. */
        size_t len = strlen(bad[i]) + (strcmp(bad[i], "[1]") == 0 ? 1 : 0);
        int rc = json_parse(&d, bad[i], len, toks, 4096, err, sizeof err);
        if (rc != JSON_EMALFORMED)
            fprintf(stderr, "case %zu '%s': %d\n", i, bad[i], rc);
        CHECK_INT(rc, ==, JSON_EMALFORMED);
        CHECK(strncmp(err, "at byte ", 8) == 0);
    }
    CHECK_INT(parse(&d, "[1, 2, x]"), ==, JSON_EMALFORMED);
    CHECK_STR(err, "at byte 7: expected a value");
}

/* Deep nesting is refused at JSON_DEPTH_MAX by the explicit stack: a
 * megabyte of '[' costs no C stack. */
static void test_depth(void)
{
    struct json_doc d;
    char ok[2 * JSON_DEPTH_MAX + 1];
    memset(ok, '[', JSON_DEPTH_MAX);
    memset(ok + JSON_DEPTH_MAX, ']', JSON_DEPTH_MAX);
    ok[2 * JSON_DEPTH_MAX] = '\0';
    CHECK_INT(parse(&d, ok), ==, JSON_OK);
    CHECK_INT(d.n, ==, JSON_DEPTH_MAX);
    char deeper[2 * JSON_DEPTH_MAX + 3];
    memset(deeper, '[', JSON_DEPTH_MAX + 1);
    memset(deeper + JSON_DEPTH_MAX + 1, ']', JSON_DEPTH_MAX + 1);
    deeper[2 * JSON_DEPTH_MAX + 2] = '\0';
    CHECK_INT(parse(&d, deeper), ==, JSON_ETOODEEP);
    size_t big = 1u << 20;
    char *open = malloc(big + 1);
    CHECK(open != NULL);
    memset(open, '[', big);
    open[big] = '\0';
    CHECK_INT(parse(&d, open), ==, JSON_ETOODEEP);
    for (size_t i = 0; i < big; i += 2)
        memcpy(open + i, "{\"", 2);
    CHECK(json_parse(&d, open, big, toks, 4096, err, sizeof err) != JSON_OK);
    free(open);
}

/* More values than tokens: refused, never truncated. */
static void test_too_many(void)
{
    struct json_doc d;
    size_t n = 1000000, len = 2 * n + 1;
    char *text = malloc(len + 1);
    CHECK(text != NULL);
    text[0] = '[';
    for (size_t i = 0; i < n; i++)
        memcpy(text + 1 + 2 * i, i + 1 < n ? "1," : "1]", 2);
    text[len] = '\0';
    CHECK_INT(json_parse(&d, text, len, toks, 4096, err, sizeof err), ==,
              JSON_ETOOMANY);
    CHECK(strstr(err, "more values") != NULL);
    /* Exactly as many as the array holds: fine. */
    CHECK_INT(json_parse(&d, "[1,2,3]", 7, toks, 4, err, sizeof err), ==, JSON_OK);
    CHECK_INT(json_parse(&d, "[1,2,3]", 7, toks, 3, err, sizeof err), ==,
              JSON_ETOOMANY);
    CHECK_INT(json_parse(&d, "[1,2,3]", 7, toks, 0, err, sizeof err), ==,
              JSON_ETOOMANY);
    free(text);
}

/* A key given twice has no one value: json_member() says so. */
static void test_duplicate_keys(void)
{
    struct json_doc d;
    CHECK_INT(parse(&d, "{\"pid\":\"1\",\"x\":0,\"pid\":\"2\"}"), ==, JSON_OK);
    CHECK_INT(json_member(&d, 0, "pid"), ==, -2);
    CHECK(json_member(&d, 0, "x") > 0);
    /* The same key written with an escape is the same key. */
    CHECK_INT(parse(&d, "{\"pid\":1,\"p\\u0069d\":2}"), ==, JSON_OK);
    CHECK_INT(json_member(&d, 0, "pid"), ==, -2);
    /* Keys of nested objects are not the outer object's. */
    CHECK_INT(parse(&d, "{\"a\":{\"pid\":1},\"pid\":2}"), ==, JSON_OK);
    int p = json_member(&d, 0, "pid");
    CHECK(p > 0);
    CHECK_INT(d.tok[p].type, ==, JSON_NUMBER);
}

static const struct check_case cases[] = {
    CHECK_CASE(test_webhook),
    CHECK_CASE(test_scalars_and_whitespace),
    CHECK_CASE(test_malformed),
    CHECK_CASE(test_depth),
    CHECK_CASE(test_too_many),
    CHECK_CASE(test_duplicate_keys),
};

CHECK_MAIN(cases)
