/*
 * fuzz_http.c: the request-head parser of `eventlog-sink serve`
 * (tools/monitor/http.c), the only code that reads what the network
 * sends it.
 *
 * Properties, for any bytes: the parser returns a head length within the
 * input, 0 (more needed, only while the input is below HTTP_HEAD_MAX), or
 * minus one of the statuses it documents; a complete head gives a path
 * that starts with '/' and holds only visible ASCII, and the same result
 * from exactly the head's bytes (what follows is never read); fed a
 * prefix, it never claims a head longer than the prefix.  The query
 * helper stays within its string.  Built with the server's own source
 * file (there is no library to link it from).
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "../tools/monitor/http.c"

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

static void http_fuzz_check(const struct http_request *req)
{
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
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
