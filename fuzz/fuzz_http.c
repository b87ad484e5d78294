/*
 * fuzz_http.c: the request-head parser of `eventlog-sink serve`
 * (tools/serve/http.c), the only code that reads what the network
 * sends it.
 *
 * Properties, for any bytes: the parser returns a head length within the
 * input, 0 (more needed, only while the input is below HTTP_HEAD_MAX), or
 * minus one of the statuses it documents; a complete head gives a path
 * that starts with '/' and holds only visible ASCII, and the same result
 * from exactly the head's bytes (what follows is never read); fed a
 * prefix, it never claims a head longer than the prefix.  The fields that
 * guard control (Host, Origin, the token's X-Eventlog-Sink-Token, the
 * webhook's Authorization and Content-Type) are NUL-terminated within
 * their arrays, trimmed, free of control bytes other than tab, "" unless
 * present, and the same from the head alone, as is the Content-Length
 * (below 10^15: longer is a 413);
 * the token comparison agrees with strcmp() and never matches an empty
 * expected token.  The query helper stays within its string.  A
 * connection's deadlines, driven by the same bytes read as events
 * (http_fuzz_clock()): no byte restarts a running head clock, and a head
 * awaited head_ms (output under its bound) is always judged late.  Built with
 * the server's own source file (there is no library to link it from).
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "../tools/serve/http.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool http_fuzz_status_ok(int r)
{
    switch (-r) {
    case 400: case 405: case 411: case 413: case 414: case 431: case 505:
        return true;
    default:
        return false;
    }
}

/* A kept field value: terminated within its n bytes, trimmed, no
 * control byte but tab. */
static void http_fuzz_field(const char *what, const char *v, size_t n)
{
    size_t len = strnlen(v, n);
    FUZZ_CHECK(len < n, "%s not terminated", what);
    if (len > 0)
        FUZZ_CHECK(v[0] != ' ' && v[0] != '\t' && v[len - 1] != ' ' &&
                   v[len - 1] != '\t', "%s '%s' not trimmed", what, v);
    for (size_t i = 0; i < len; i++)
        FUZZ_CHECK((unsigned char)v[i] >= 0x20 || v[i] == '\t',
                   "byte 0x%02x in %s", (unsigned char)v[i], what);
}

static void http_fuzz_check(const struct http_request *req)
{
    http_fuzz_field("Host", req->host, sizeof req->host);
    http_fuzz_field("Origin", req->origin, sizeof req->origin);
    http_fuzz_field("the token", req->token, sizeof req->token);
    http_fuzz_field("Authorization", req->authorization, sizeof req->authorization);
    http_fuzz_field("Content-Type", req->content_type, sizeof req->content_type);
    http_fuzz_field("Cookie", req->cookie, sizeof req->cookie);
    FUZZ_CHECK(req->has_cookie || req->cookie[0] == '\0', "a Cookie not given");
    FUZZ_CHECK(req->has_authorization || req->authorization[0] == '\0',
               "an Authorization not given");
    FUZZ_CHECK(req->content_length < 1000000000000000ull,
               "a Content-Length of more than %d digits", HTTP_LENGTH_DIGITS);
    FUZZ_CHECK(req->body == NULL && req->body_len == 0, "a body from the parser");
    FUZZ_CHECK(req->has_origin || req->origin[0] == '\0', "an Origin not given");
    FUZZ_CHECK(req->has_token || req->token[0] == '\0', "a token not given");
    FUZZ_CHECK(strlen(req->token) <= HTTP_TOKEN_MAX, "a token beyond the bound");
    /* The comparison is equality, and an empty token expected (no
     * control) lets nothing in. */
    static const char expected[] = "0123456789abcdef0123456789abcdef";
    FUZZ_CHECK(http_token_matches(expected, req->token) ==
               (strcmp(expected, req->token) == 0), "token '%s' misjudged",
               req->token);
    FUZZ_CHECK(http_token_matches(req->token, req->token) == (req->token[0] != '\0'),
               "token '%s' against itself", req->token);
    FUZZ_CHECK(!http_token_matches("", req->token), "'%s' matches no token",
               req->token);
    /* A cookie matches only the value expected: never an empty one, and
     * never a value the request's own bytes could not spell. */
    FUZZ_CHECK(!http_cookie_matches(req->cookie, "s", ""), "cookie '%s' matches an empty value",
               req->cookie);
    if (http_cookie_matches(req->cookie, "s", expected))
        FUZZ_CHECK(strstr(req->cookie, expected) != NULL,
                   "cookie '%s' matched a value it does not hold", req->cookie);
    const char *bearer = http_bearer_token(req->authorization);
    if (bearer != NULL)
        FUZZ_CHECK(bearer >= req->authorization &&
                   bearer <= req->authorization + strlen(req->authorization),
                   "a Bearer token outside its field");
    /* What the login redirect keeps names no token any more. */
    char without[sizeof req->query];
    if (http_query_without(req->query, "token", without, sizeof without))
        FUZZ_CHECK(strncmp(without, "token=", 6) != 0 && strstr(without, "&token=") == NULL,
                   "query '%s' kept a token: '%s'", req->query, without);
    FUZZ_CHECK(req->path[0] == '/', "path '%s'", req->path);
    for (const char *p = req->path; *p; p++)
        FUZZ_CHECK(*p > 0x20 && *p < 0x7f, "byte 0x%02x in the path", (unsigned char)*p);
    for (const char *p = req->query; *p; p++)
        FUZZ_CHECK(*p > 0x20 && *p < 0x7f, "byte 0x%02x in the query", (unsigned char)*p);
    FUZZ_CHECK(req->method == HTTP_GET || req->method == HTTP_HEAD ||
               req->method == HTTP_POST, "method %d",
               (int)req->method);
    uint64_t v;
    (void)http_query_u64(req->query, "from", &v);
    (void)http_query_u64(req->query, "to", &v);
    char str[16];
    if (http_query_str(req->query, "cmd", str, sizeof str))
        FUZZ_CHECK(strlen(str) < sizeof str, "query value overran");
}

/* Each byte an event, its high bits the milliseconds since the last. */
static void http_fuzz_clock(const uint8_t *data, size_t size)
{
    static const struct http_limits l = { .head_ms = 100, .request_ms = 600,
                                          .idle_ms = 300, .stall_ms = 150 };
    struct http_clock c;
    uint64_t now = 1;
    http_clock_accept(&c, now);
    for (size_t i = 0; i < size; i++) {
        now += data[i] >> 3;
        bool running = c.in_head;
        uint64_t since = c.head_since;
        switch (data[i] & 7) {
        case 0: case 1:
            http_clock_input(&c, now);
            FUZZ_CHECK(!running || c.head_since == since,
                       "a byte restarted the head clock at event %zu", i);
            break;
        case 2: http_clock_request(&c, now, (data[i] & 8) != 0); break;
        case 3: http_clock_output(&c, now, 0, 1000); break;
        case 4: http_clock_output(&c, now, 500, 1000); break;
        case 5: http_clock_output(&c, now, 5000, 1000); break;
        case 6: http_clock_stream(&c); break;
        default: break;
        }
        enum http_late late = http_clock_late(&c, now, &l);
        FUZZ_CHECK(late >= HTTP_IN_TIME && late <= HTTP_LATE_IDLE,
                   "verdict %d", (int)late);
        if (c.in_head && !c.over && now - c.head_since >= l.head_ms)
            FUZZ_CHECK(late == HTTP_LATE_HEAD, "a head awaited %llu ms "
                       "judged %s", (unsigned long long)(now - c.head_since),
                       http_late_name(late));
        if (late != HTTP_IN_TIME)
            return;             /* the server closes it */
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    http_fuzz_clock(data, size);
    char *buf = (char *)fuzz_bytes(data, size);
    struct http_request req;
    int r = http_parse_request(buf, size, &req);
    if (r > 0) {
        FUZZ_CHECK((size_t)r <= size, "head of %d bytes in %zu", r, size);
        http_fuzz_check(&req);
        /* Exactly the head: the same answer. */
        struct http_request again;
        char *head = (char *)fuzz_bytes(data, (size_t)r);
        int r2 = http_parse_request(head, (size_t)r, &again);
        FUZZ_CHECK(r2 == r, "%d from the head alone, %d with what follows", r2, r);
        FUZZ_CHECK(strcmp(again.path, req.path) == 0 && strcmp(again.query, req.query) == 0,
                   "a different target from the head alone");
        FUZZ_CHECK(strcmp(again.host, req.host) == 0 &&
                   strcmp(again.origin, req.origin) == 0 &&
                   again.has_token == req.has_token &&
                   strcmp(again.token, req.token) == 0 &&
                   strcmp(again.authorization, req.authorization) == 0 &&
                   strcmp(again.content_type, req.content_type) == 0 &&
                   again.content_length == req.content_length &&
                   again.expect_continue == req.expect_continue,
                   "different fields from the head alone");
        free(head);
    } else if (r == 0) {
        FUZZ_CHECK(size < HTTP_HEAD_MAX, "needs more after %zu bytes", size);
    } else {
        FUZZ_CHECK(http_fuzz_status_ok(r), "undocumented status %d", -r);
    }
    /* A prefix never yields a head longer than itself. */
    if (size > 1) {
        size_t cut = data[0] % size;
        char *pre = (char *)fuzz_bytes(data, cut);
        struct http_request p;
        int rp = http_parse_request(pre, cut, &p);
        FUZZ_CHECK(rp <= (int)cut, "head of %d bytes in a prefix of %zu", rp, cut);
        free(pre);
    }
    free(buf);
    return 0;
}
