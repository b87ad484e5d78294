/*
 * http.c: the HTTP/1.1 request-head parser of `serve` (see http.h).
 *
 * Strict where being lenient could hide an attack or a mistake (bytes
 * outside visible ASCII in the target, header names that are not tokens,
 * obsolete line folding, a chunked body, a Content-Length given twice or
 * not plain digits, which is how request smuggling starts); lenient where clients differ harmlessly (a bare LF
 * ends a line, as RFC 9112 section 2.2 allows).  Also a connection's
 * deadlines (http_clock_*), which judge a client by the time it takes,
 * never by what it sends.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "http.h"

static bool http_tchar(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
           (c >= 'A' && c <= 'Z') || (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* Is [p, e) made of token characters only (a method, a field's name)? */
static bool http_token(const char *p, const char *e)
{
    for (const char *q = p; q < e; q++)
        if (!http_tchar((unsigned char)*q))
            return false;
    return true;
}

/* The end of the line starting at p (the LF), or NULL if none before end. */
static const char *http_eol(const char *p, const char *end)
{
    return memchr(p, '\n', (size_t)(end - p));
}

/* Trim a line [p, e) of its CR and optional whitespace around a value. */
static void http_trim(const char **p, const char **e)
{
    while (*p < *e && (**p == ' ' || **p == '\t'))
        (*p)++;
    while (*e > *p && ((*e)[-1] == ' ' || (*e)[-1] == '\t' || (*e)[-1] == '\r'))
        (*e)--;
}

static bool http_ieq(const char *p, size_t n, const char *word)
{
    return strlen(word) == n && strncasecmp(p, word, n) == 0;
}

/* Does the comma-separated list [p, e) hold token word? */
static bool http_has_token(const char *p, const char *e, const char *word)
{
    while (p < e) {
        const char *c = memchr(p, ',', (size_t)(e - p));
        const char *a = p, *b = c ? c : e;
        http_trim(&a, &b);
        if (http_ieq(a, (size_t)(b - a), word))
            return true;
        p = c ? c + 1 : e;
    }
    return false;
}

/* Keep a field's value [p, e) that may appear once and must fit out
 * (len bytes with its NUL): false if it came before or is too long,
 * which the caller answers 400 (two values: which one would count?). */
static bool http_field(const char *p, const char *e, char *out, size_t len,
                       bool *seen)
{
    if (*seen || (size_t)(e - p) >= len)
        return false;
    *seen = true;
    memcpy(out, p, (size_t)(e - p));
    out[e - p] = '\0';
    return true;
}

/* The end of the head in buf (after its empty line), or NULL with *rc
 * set: 0 to wait for more bytes, or the status of a head too long. */
static const char *http_head_end(const char *buf, size_t len, int *rc)
{
    size_t scan = len < HTTP_HEAD_MAX ? len : HTTP_HEAD_MAX;
    for (size_t i = 0; i < scan; i++) {
        if (buf[i] != '\n')
            continue;
        if (i >= 1 && buf[i - 1] == '\n')
            return buf + i + 1;
        if (i >= 2 && buf[i - 1] == '\r' && buf[i - 2] == '\n')
            return buf + i + 1;
    }
    const char *line_end = http_eol(buf, buf + scan);
    if (line_end != NULL && (size_t)(line_end - buf) > HTTP_TARGET_MAX + 32)
        *rc = -414;                     /* the request line alone is too long */
    else
        *rc = len >= HTTP_HEAD_MAX ? -431 : 0;
    return NULL;
}

/* The request line [p, line_end) (no CR): "method SP target SP version".
 * The version, path and query go into req, the method's span into
 * *mend (the method ends there) for http_method(), which judges it once
 * the fields are read.
 * 0, or a negative status. */
static int http_request_line(const char *p, const char *line_end,
                             struct http_request *req, const char **mend)
{
    const char *sp1 = memchr(p, ' ', (size_t)(line_end - p));
    if (sp1 == NULL || sp1 == p || !http_token(p, sp1))
        return -400;
    *mend = sp1;
    const char *t = sp1 + 1;
    const char *sp2 = memchr(t, ' ', (size_t)(line_end - t));
    if (sp2 == NULL || sp2 == t)
        return -400;
    const char *v = sp2 + 1;
    if ((size_t)(line_end - v) != 8 || memcmp(v, "HTTP/", 5) != 0 ||
        v[6] != '.' || v[5] < '0' || v[5] > '9' || v[7] < '0' || v[7] > '9')
        return -400;
    if (v[5] != '1')
        return -505;
    req->minor = v[7] - '0';
    req->keep_alive = req->minor >= 1;

    size_t tlen = (size_t)(sp2 - t);
    if (tlen >= HTTP_TARGET_MAX)
        return -414;
    if (t[0] != '/')
        return -400;
    for (size_t i = 0; i < tlen; i++) {
        unsigned char c = (unsigned char)t[i];
        if (c <= 0x20 || c >= 0x7f)
            return -400;
    }
    const char *qm = memchr(t, '?', tlen);
    size_t plen = qm ? (size_t)(qm - t) : tlen;
    memcpy(req->path, t, plen);
    req->path[plen] = '\0';
    if (qm) {
        memcpy(req->query, qm + 1, tlen - plen - 1);
        req->query[tlen - plen - 1] = '\0';
    }
    return 0;
}

/* Which of the once-only fields the head has given so far. */
struct http_seen {
    bool host, type, length;
};

/* One field: name [p, colon), value [vp, vq) trimmed.  0, or a negative
 * status. */
static int http_header_field(const char *p, const char *colon, const char *vp,
                             const char *vq, struct http_request *req,
                             struct http_seen *seen)
{
    size_t nlen = (size_t)(colon - p);
    if (http_ieq(p, nlen, "host")) {
        if (!http_field(vp, vq, req->host, sizeof req->host, &seen->host))
            return -400;
    } else if (http_ieq(p, nlen, "origin")) {
        if (!http_field(vp, vq, req->origin, sizeof req->origin,
                        &req->has_origin))
            return -400;
    } else if (http_ieq(p, nlen, "x-eventlog-sink-token")) {
        if (!http_field(vp, vq, req->token, sizeof req->token,
                        &req->has_token))
            return -400;
    } else if (http_ieq(p, nlen, "authorization")) {
        if (!http_field(vp, vq, req->authorization,
                        sizeof req->authorization, &req->has_authorization))
            return -400;
    } else if (http_ieq(p, nlen, "cookie")) {
        /* Joined, not refused when repeated: see struct
         * http_request.  Fits, as the head does. */
        size_t have = strlen(req->cookie), add = (size_t)(vq - vp);
        size_t sep = have > 0 ? 2 : 0;
        if (have + sep + add >= sizeof req->cookie)
            return -431;
        memcpy(req->cookie + have, "; ", sep);
        memcpy(req->cookie + have + sep, vp, add);
        req->cookie[have + sep + add] = '\0';
        req->has_cookie = true;
    } else if (http_ieq(p, nlen, "content-type")) {
        if (!http_field(vp, vq, req->content_type,
                        sizeof req->content_type, &seen->type))
            return -400;
    } else if (http_ieq(p, nlen, "content-length")) {
        if (seen->length || vp == vq)
            return -400;
        seen->length = true;
        for (const char *q = vp; q < vq; q++)
            if (*q < '0' || *q > '9')
                return -400;
        if (vq - vp > HTTP_LENGTH_DIGITS)
            return -413;
        for (const char *q = vp; q < vq; q++)
            req->content_length = req->content_length * 10 +
                                  (uint64_t)(*q - '0');
    } else if (http_ieq(p, nlen, "expect")) {
        if (http_ieq(vp, (size_t)(vq - vp), "100-continue"))
            req->expect_continue = true;
    } else if (http_ieq(p, nlen, "transfer-encoding")) {
        return -411;
    } else if (http_ieq(p, nlen, "connection")) {
        if (http_has_token(vp, vq, "close"))
            req->keep_alive = false;
        else if (http_has_token(vp, vq, "keep-alive"))
            req->keep_alive = true;
    }
    return 0;
}

/* The field lines from p to the empty line before end.  0, or a
 * negative status. */
static int http_header_fields(const char *p, const char *end,
                              struct http_request *req, struct http_seen *seen)
{
    while (p < end) {
        const char *e = http_eol(p, end);
        const char *ve = e;
        if (ve > p && ve[-1] == '\r')
            ve--;
        if (ve == p)
            break;                      /* the empty line */
        if (*p == ' ' || *p == '\t')
            return -400;                /* obsolete line folding */
        const char *colon = memchr(p, ':', (size_t)(ve - p));
        if (colon == NULL || colon == p || !http_token(p, colon))
            return -400;
        const char *vp = colon + 1, *vq = ve;
        http_trim(&vp, &vq);
        for (const char *q = vp; q < vq; q++)
            if ((unsigned char)*q < 0x20 && *q != '\t')
                return -400;
        int rc = http_header_field(p, colon, vp, vq, req, seen);
        if (rc != 0)
            return rc;
        p = e + 1;
    }
    return 0;
}

/* The method [m, e): 0, or -405 for one the server does not take. */
static int http_method(const char *m, const char *e, struct http_request *req)
{
    size_t ml = (size_t)(e - m);
    if (ml == 3 && memcmp(m, "GET", 3) == 0)
        req->method = HTTP_GET;
    else if (ml == 4 && memcmp(m, "HEAD", 4) == 0)
        req->method = HTTP_HEAD;
    else if (ml == 4 && memcmp(m, "POST", 4) == 0)
        req->method = HTTP_POST;
    else
        return -405;
    return 0;
}

int http_parse_request(const char *buf, size_t len, struct http_request *req)
{
    int rc;
    const char *end = http_head_end(buf, len, &rc);
    if (end == NULL)
        return rc;
    /* Leading empty lines before a request line are allowed (RFC 9112
     * section 2.2) but a head that is only empty lines is not complete. */
    const char *p = buf;
    while (p < end && (*p == '\r' || *p == '\n'))
        p++;
    if (p == end)
        return -400;
    const char *mstart = p, *mend;

    memset(req, 0, sizeof *req);
    const char *le = http_eol(p, end);
    const char *line_end = le;
    if (line_end > p && line_end[-1] == '\r')
        line_end--;
    if ((rc = http_request_line(p, line_end, req, &mend)) != 0)
        return rc;
    struct http_seen seen = { false, false, false };
    if ((rc = http_header_fields(le + 1, end, req, &seen)) != 0)
        return rc;
    /* RFC 9112 section 3.2: a 1.1 request without Host is a 400. */
    if (req->minor >= 1 && !seen.host)
        return -400;
    /* The method last: a malformed head is a 400 whatever its method. */
    if ((rc = http_method(mstart, mend, req)) != 0)
        return rc;
    return (int)(end - buf);
}

bool http_host_is_loopback(const char *host)
{
    static const char *const names[] = { "127.0.0.1", "localhost", "[::1]" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t n = strlen(names[i]);
        if (strncasecmp(host, names[i], n) != 0)
            continue;
        const char *port = host + n;
        if (*port == '\0')
            return true;
        if (*port != ':' || port[1] == '\0')
            continue;
        bool digits = true;
        for (const char *d = port + 1; *d; d++)
            digits = digits && *d >= '0' && *d <= '9';
        if (digits)
            return true;
    }
    return false;
}

bool http_token_matches(const char *expected, const char *given)
{
    size_t el = strlen(expected), gl = strlen(given);
    unsigned diff = el != gl || el == 0;
    /* Every byte of given, each against a byte of expected (its first
     * when given is longer), with no early exit. */
    for (size_t i = 0; i < gl; i++)
        diff |= (unsigned)((unsigned char)given[i] ^
                           (unsigned char)expected[i < el ? i : 0]);
    return diff == 0;
}

const char *http_bearer_token(const char *authorization)
{
    if (strncasecmp(authorization, "Bearer ", 7) != 0)
        return NULL;
    const char *t = authorization + 7;
    while (*t == ' ')
        t++;
    return t;
}

bool http_cookie_matches(const char *cookies, const char *name,
                         const char *expected)
{
    /* RFC 6265 section 5.4: "name=value" pairs separated by "; "; a
     * value may be quoted.  Lenient about the spaces (other clients). */
    size_t nl = strlen(name);
    bool found = false;
    for (const char *p = cookies; *p != '\0';) {
        while (*p == ' ' || *p == '\t')
            p++;
        const char *semi = strchr(p, ';');
        const char *e = semi ? semi : p + strlen(p);
        const char *eq = memchr(p, '=', (size_t)(e - p));
        if (eq != NULL) {
            const char *ne = eq, *v = eq + 1, *ve = e;
            http_trim(&p, &ne);
            http_trim(&v, &ve);
            if (ve - v >= 2 && *v == '"' && ve[-1] == '"') {
                v++;
                ve--;
            }
            char value[HTTP_TOKEN_MAX + 1];
            if ((size_t)(ne - p) == nl && memcmp(p, name, nl) == 0 &&
                (size_t)(ve - v) < sizeof value) {
                memcpy(value, v, (size_t)(ve - v));
                value[ve - v] = '\0';
                /* No early exit: every cookie of the name is compared. */
                found |= http_token_matches(expected, value);
            }
        }
        p = semi ? semi + 1 : e;
    }
    return found;
}

bool http_query_without(const char *query, const char *key, char *out,
                        size_t len)
{
    size_t kl = strlen(key), n = 0;
    for (const char *p = query; *p != '\0';) {
        const char *amp = strchr(p, '&');
        const char *e = amp ? amp : p + strlen(p);
        bool named = (size_t)(e - p) >= kl && memcmp(p, key, kl) == 0 &&
                     (p + kl == e || p[kl] == '=');
        if (!named && e > p) {
            size_t add = (size_t)(e - p) + (n > 0);
            if (n + add >= len)
                return false;
            if (n > 0)
                out[n++] = '&';
            memcpy(out + n, p, (size_t)(e - p));
            n += (size_t)(e - p);
        }
        p = amp ? amp + 1 : e;
    }
    out[n] = '\0';
    return true;
}

bool http_query_str(const char *query, const char *key, char *out, size_t len)
{
    size_t kl = strlen(key);
    for (const char *p = query; *p != '\0';) {
        const char *amp = strchr(p, '&');
        const char *e = amp ? amp : p + strlen(p);
        if ((size_t)(e - p) >= kl && memcmp(p, key, kl) == 0 &&
            (p + kl == e || p[kl] == '=')) {
            const char *v = p + kl == e ? e : p + kl + 1;
            if ((size_t)(e - v) >= len)
                return false;
            memcpy(out, v, (size_t)(e - v));
            out[e - v] = '\0';
            return true;
        }
        p = amp ? amp + 1 : e;
    }
    return false;
}

bool http_query_u64(const char *query, const char *key, uint64_t *out)
{
    size_t kl = strlen(key);
    for (const char *p = query; *p != '\0';) {
        const char *amp = strchr(p, '&');
        const char *e = amp ? amp : p + strlen(p);
        if ((size_t)(e - p) > kl && memcmp(p, key, kl) == 0 && p[kl] == '=') {
            const char *d = p + kl + 1;
            if (d == e)
                return false;
            uint64_t v = 0;
            for (; d < e; d++) {
                if (*d < '0' || *d > '9')
                    return false;
                unsigned dig = (unsigned)(*d - '0');
                if (v > (UINT64_MAX - dig) / 10)
                    return false;
                v = v * 10 + dig;
            }
            *out = v;
            return true;
        }
        p = amp ? amp + 1 : e;
    }
    return false;
}

const char *http_reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 301: return "Moved Permanently";
    case 303: return "See Other";
    case 401: return "Unauthorized";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 403: return "Forbidden";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 414: return "URI Too Long";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Error";
    }
}

/* ------------------------------------------------------------------------
 * A connection's deadlines
 * ------------------------------------------------------------------------ */

/* Note [Connection deadlines]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * The server has a fixed number of slots and one loop; each limit closes
 * one way a client can keep a slot or grow our memory without doing its
 * share:
 *
 *  - head: from accept (the first request) or from the first byte of the
 *    next one, a whole head within head_ms.  No byte restarts the clock:
 *    if each did, a client sending one byte every few seconds (a "slow
 *    loris") would hold its slot for ever, and 64 of them the server.
 *  - request: from a head's first byte until the last byte of its
 *    response left us, request_ms: a client that reads its answer slowly.
 *    With pipelined requests the clock is the oldest request's whose
 *    response is still pending, and it stops only when the output is all
 *    sent; a client that keeps output pending for request_ms is closed
 *    even if it reads meanwhile (browsers do not pipeline).
 *  - output: over the server's bound on pending output the server stops
 *    reading the client's requests, so that pipelining cannot turn 40
 *    request bytes into a response's kilobytes without end; a client that
 *    stays over the bound for stall_ms is closed.  An event stream has no
 *    request to finish, so this is its only limit.
 *  - idle: nothing pending (between kept-alive requests) for idle_ms.
 *
 * While the output is over the bound the server reads nothing, so bytes
 * of a next head that are already here wait on us, not on the client: the
 * head deadline is not judged then, and its clock starts again when the
 * output falls back under the bound.  That lets a client that downloads
 * keep a partial head for longer, at the price of reading what it asked
 * for; the request deadline still bounds each response.
 */

void http_clock_accept(struct http_clock *c, uint64_t now)
{
    *c = (struct http_clock){ .in_head = true, .head_since = now,
                              .idle_since = now };
}

void http_clock_input(struct http_clock *c, uint64_t now)
{
    if (!c->in_head && !c->stream) {
        c->in_head = true;
        c->head_since = now;
    }
}

void http_clock_request(struct http_clock *c, uint64_t now, bool more)
{
    if (!c->in_request) {
        c->in_request = true;
        c->request_since = c->head_since;
    }
    c->in_head = more;
    if (more)
        c->head_since = now;
}

void http_clock_stream(struct http_clock *c)
{
    c->stream = true;
    c->in_head = c->in_request = false;
}

void http_clock_output(struct http_clock *c, uint64_t now, size_t pending,
                       size_t bound)
{
    bool over = pending > bound;
    if (over && !c->over)
        c->over_since = now;
    if (!over && c->over && c->in_head)
        c->head_since = now;    /* its bytes waited on us */
    c->over = over;
    if (pending == 0 && c->in_request) {
        c->in_request = false;
        c->idle_since = now;
    }
}

enum http_late http_clock_late(const struct http_clock *c, uint64_t now,
                               const struct http_limits *l)
{
    /* now - since: the caller's clock is monotonic, but a since in the
     * future (a caller's mistake) must not wrap into "late". */
#define HTTP_PASSED(since, limit) (now >= (since) && now - (since) >= (limit))
    if (c->in_head && !c->over && HTTP_PASSED(c->head_since, l->head_ms))
        return HTTP_LATE_HEAD;
    if (c->in_request && HTTP_PASSED(c->request_since, l->request_ms))
        return HTTP_LATE_REQUEST;
    if (c->over && HTTP_PASSED(c->over_since, l->stall_ms))
        return HTTP_LATE_OUTPUT;
    if (!c->in_head && !c->in_request && !c->stream && !c->over &&
        HTTP_PASSED(c->idle_since, l->idle_ms))
        return HTTP_LATE_IDLE;
#undef HTTP_PASSED
    return HTTP_IN_TIME;
}

const char *http_late_name(enum http_late late)
{
    switch (late) {
    case HTTP_IN_TIME: return "in time";
    case HTTP_LATE_HEAD: return "request head incomplete";
    case HTTP_LATE_REQUEST: return "response not taken";
    case HTTP_LATE_OUTPUT: return "output over its bound";
    case HTTP_LATE_IDLE: return "idle";
    }
    return "?";
}
