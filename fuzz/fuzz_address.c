/*
 * fuzz_address.c: libFuzzer target for the address parsers that both the
 * sinks and the receiver (`eventlog-sink recv`) apply to text from outside
 * (lib/base/address.c), and for elsi_quote() (lib/base/log.c), through which every
 * piece of such text reaches a message.
 *
 * The first byte chooses what the rest of the input is:
 *   0  a TCP address (elsi_tcp_addr_parse): on success the result must
 *      print back (PORT, HOST:PORT or [HOST]:PORT) to text that parses to
 *      the same result; a numeric host is also resolved (never a name: the
 *      target must not query DNS) and every address found must format
 *      (elsi_sockaddr_format) to text that parses back to the same port;
 *   1  a UNIX socket path (elsi_unix_addr_make): accepted exactly when it
 *      fits sun_path with its NUL, copied whole, length right;
 *   2  raw socket address bytes for elsi_sockaddr_format, which must never
 *      read past the length it is given;
 *   3  text for elsi_quote() with a buffer size and limit taken from the
 *      input: the result fits and has no control byte or '"'; with the
 *      documented ELSI_QUOTE_BUF(max) bytes it is exactly what a reference
 *      quoter in this file produces, with fewer a prefix of that cut
 *      between two input bytes and ended by "...".
 * Messages must be one printable line.  The receiver's own spec splitting
 * (tools/recv/recv.c, recv_target_parse, through els_endpoint_resolve() in
 * lib/sinks/endpoint.c) resolves host names, so it is covered here
 * through the two parsers it calls, not directly.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "eventlog-sink.h"
#include "base/address.h"
#include "base/log.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);
    return 0;
}

static bool fuzz_addr_same(const struct elsi_tcp_addr *a,
                           const struct elsi_tcp_addr *b)
{
    return strcmp(a->host, b->host) == 0 && a->host_given == b->host_given &&
           a->port == b->port;
}

/* Numeric hosts only: an IPv4 dotted quad or anything with ':' (which
 * elsi_tcp_resolve() itself resolves with AI_NUMERICHOST). */
static bool fuzz_addr_numeric(const char *host)
{
    struct in_addr in;
    return strchr(host, ':') != NULL || inet_pton(AF_INET, host, &in) == 1;
}

static void fuzz_addr_resolve(const struct elsi_tcp_addr *a, bool passive)
{
    char err[ELSI_ADDR_ERR_MAX];
    struct addrinfo *res = NULL;
    err[0] = '\0';
    int rc = elsi_tcp_resolve(a, passive, &res, err, sizeof err);
    if (rc != 0) {
        FUZZ_CHECK(res == NULL, "result set on failure");
        FUZZ_CHECK(fuzz_one_line(err, sizeof err),
                   "resolve message: \"%s\"", err);
        return;
    }
    for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        char text[128];
        int n = elsi_sockaddr_format(ai->ai_addr, ai->ai_addrlen, text,
                                     sizeof text);
        FUZZ_CHECK(n > 0 && (size_t)n < sizeof text,
                   "elsi_sockaddr_format: %d", n);
        struct elsi_tcp_addr back;
        rc = elsi_tcp_addr_parse(text, &back, err, sizeof err);
        FUZZ_CHECK(rc == 0, "formatted \"%s\" does not parse: %s", text, err);
        FUZZ_CHECK(back.port == a->port, "port %u became %u via \"%s\"",
                   a->port, back.port, text);
        /* A short buffer gets a NUL-terminated prefix and the full
         * length, like snprintf. */
        char shortbuf[5];
        int m = elsi_sockaddr_format(ai->ai_addr, ai->ai_addrlen, shortbuf,
                                     sizeof shortbuf);
        FUZZ_CHECK(m == n && memchr(shortbuf, '\0', sizeof shortbuf) != NULL,
                   "short buffer: %d vs %d", m, n);
    }
    freeaddrinfo(res);
}

static void fuzz_addr_tcp(const char *text, size_t text_len)
{
    char err[ELSI_ADDR_ERR_MAX];
    struct elsi_tcp_addr a;
    err[0] = '\0';
    int rc = elsi_tcp_addr_parse(text, &a, err, sizeof err);
    if (rc != 0) {
        FUZZ_CHECK(rc == ELS_EINVAL, "elsi_tcp_addr_parse: %d", rc);
        FUZZ_CHECK(fuzz_one_line(err, sizeof err),
                   "message is not one printable line: \"%s\"", err);
        return;
    }
    size_t hlen = strnlen(a.host, sizeof a.host);
    FUZZ_CHECK(hlen > 0 && hlen < sizeof a.host, "host length %zu", hlen);
    FUZZ_CHECK(a.host_given || strcmp(a.host, "127.0.0.1") == 0,
               "default host is \"%s\"", a.host);
    FUZZ_CHECK(!a.host_given || hlen <= text_len, "host longer than the text");

    /* Print it back and parse again. */
    char again[sizeof a.host + 16];
    if (!a.host_given)
        snprintf(again, sizeof again, "%u", (unsigned)a.port);
    else if (strchr(a.host, ':') != NULL)
        snprintf(again, sizeof again, "[%s]:%u", a.host, (unsigned)a.port);
    else
        snprintf(again, sizeof again, "%s:%u", a.host, (unsigned)a.port);
    struct elsi_tcp_addr b;
    rc = elsi_tcp_addr_parse(again, &b, err, sizeof err);
    FUZZ_CHECK(rc == 0, "\"%s\" (printed back) does not parse: %s", again,
               err);
    FUZZ_CHECK(fuzz_addr_same(&a, &b), "\"%s\" parses differently", again);

    if (fuzz_addr_numeric(a.host)) {
        fuzz_addr_resolve(&a, false);
        fuzz_addr_resolve(&a, true);
    }
}

static void fuzz_addr_unix(const char *path)
{
    char err[ELSI_ADDR_ERR_MAX];
    struct sockaddr_un sa;
    socklen_t sa_len = 0;
    size_t n = strlen(path);
    err[0] = '\0';
    int rc = elsi_unix_addr_make(path, &sa, &sa_len, err, sizeof err);
    if (n == 0) {
        FUZZ_CHECK(rc == ELS_EINVAL, "empty path: %d", rc);
    } else if (n >= sizeof sa.sun_path) {
        FUZZ_CHECK(rc == ELS_ENAMETOOLONG, "%zu-byte path: %d", n, rc);
    } else {
        FUZZ_CHECK(rc == 0, "%zu-byte path refused: %d (%s)", n, rc, err);
        FUZZ_CHECK(sa.sun_family == AF_UNIX, "family %d", sa.sun_family);
        FUZZ_CHECK(strcmp(sa.sun_path, path) == 0, "path not copied whole");
        FUZZ_CHECK(sa_len == offsetof(struct sockaddr_un, sun_path) + n + 1,
                   "sa_len %u for a %zu-byte path", (unsigned)sa_len, n);
        return;
    }
    FUZZ_CHECK(fuzz_one_line(err, sizeof err),
               "message is not one printable line: \"%s\"", err);
}

static void fuzz_addr_sockaddr(const uint8_t *data, size_t size)
{
    /* sa_family is read before the length is looked at, so give it at
     * least that much; everything past it is exactly the bytes given. */
    size_t len = size < sizeof(sa_family_t) ? sizeof(sa_family_t) : size;
    uint8_t *raw = fuzz_alloc(len);
    memset(raw, 0, len);
    memcpy(raw, data, size);
    char buf[128];
    int n = elsi_sockaddr_format((const struct sockaddr *)raw,
                                 (socklen_t)size, buf, sizeof buf);
    if (n >= 0) {
        FUZZ_CHECK((size_t)n < sizeof buf, "%d bytes for an address", n);
        struct elsi_tcp_addr back;
        char err[ELSI_ADDR_ERR_MAX];
        int rc = elsi_tcp_addr_parse(buf, &back, err, sizeof err);
        FUZZ_CHECK(rc == 0, "formatted \"%s\" does not parse: %s", buf, err);
    }
    free(raw);
}

/* elsi_quote()'s documented result, built independently: every byte as
 * is or as \xNN, "..." after max bytes.  ends[k] is the length of the
 * result after k input bytes, the points where a shorter buffer may cut. */
static size_t fuzz_quote_reference(const uint8_t *s, size_t n, size_t max,
                                   char *out, size_t *ends)
{
    size_t o = 0, k = n < max ? n : max;
    ends[0] = 0;
    for (size_t i = 0; i < k; i++) {
        uint8_t c = s[i];
        if (c >= 0x20 && c != 0x7f && c != '"' && c != '\\')
            out[o++] = (char)c;
        else
            o += (size_t)sprintf(out + o, "\\x%02x", c);
        ends[i + 1] = o;
    }
    out[o] = '\0';
    if (n > max)
        strcpy(out + o, "...");
    return k;
}

static void fuzz_addr_quote(const uint8_t *data, size_t size)
{
    struct fuzz_reader r = { data, size };
    size_t max = fuzz_u8(&r);
    bool documented = fuzz_u8(&r) & 1;
    size_t buf_len = documented ? ELSI_QUOTE_BUF(max)
                                : 4 + (size_t)(fuzz_u8(&r) % 64);
    size_t n;
    const uint8_t *s = fuzz_take(&r, r.left, &n);
    uint8_t *text = fuzz_bytes(s, n);
    char *buf = fuzz_alloc(buf_len);
    char *want = fuzz_alloc(ELSI_QUOTE_BUF(max) + 1);
    size_t *ends = fuzz_alloc((max + 1) * sizeof *ends);
    size_t k = fuzz_quote_reference(text, n, max, want, ends);

    const char *out = elsi_quote(buf, buf_len, (const char *)text, n, max);
    FUZZ_CHECK(out == buf, "did not return buf");
    size_t olen = strnlen(buf, buf_len);
    FUZZ_CHECK(olen < buf_len, "result not NUL-terminated within buf_len");
    for (size_t i = 0; i < olen; i++) {
        unsigned char c = (unsigned char)buf[i];
        FUZZ_CHECK(c >= 0x20 && c != 0x7f && c != '"',
                   "byte 0x%02x in the result", c);
    }
    if (documented || strcmp(buf, want) == 0) {
        FUZZ_CHECK(strcmp(buf, want) == 0, "\"%s\", expected \"%s\"", buf,
                   want);
    } else {
        /* Cut short by the buffer: a prefix of the full result that ends
         * between two input bytes (never inside an escape), then "...". */
        FUZZ_CHECK(olen >= 3 && strcmp(buf + olen - 3, "...") == 0,
                   "cut result \"%s\" lacks \"...\"", buf);
        size_t plen = olen - 3;
        bool at_end = false;
        for (size_t i = 0; i <= k && !at_end; i++)
            at_end = ends[i] == plen;
        FUZZ_CHECK(at_end && memcmp(buf, want, plen) == 0,
                   "cut result \"%s\" is not a prefix of \"%s\"", buf, want);
    }
    free(ends);
    free(want);
    free(buf);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    uint8_t what = data[0] % 4;
    data++;
    size--;
    switch (what) {
    case 0: {
        char *text = fuzz_cstring(data, size);
        fuzz_addr_tcp(text, strlen(text));
        free(text);
        break;
    }
    case 1: {
        char *text = fuzz_cstring(data, size);
        fuzz_addr_unix(text);
        free(text);
        break;
    }
    case 2:
        fuzz_addr_sockaddr(data, size);
        break;
    case 3:
        fuzz_addr_quote(data, size);
        break;
    }
    return 0;
}
