/*
 * http.h: the request parser of `eventlog-sink serve`'s HTTP/1.1 server.
 *
 * Parses one request head (request line and header fields) from bytes
 * that arrive in pieces; the server's only input from the network, so it
 * takes anything (fuzz/fuzz_http.c) and answers with the status code a
 * bad request deserves.  It reads a body's length (Content-Length), not
 * the body: which routes take one, and how much, is the server's
 * business (conn.c), as is routing; it does not decode percent
 * escapes or take chunked bodies (Transfer-Encoding is refused).  Beside it,
 * a connection's deadlines (struct http_clock): pure bookkeeping, with
 * the time passed in, so that a unit test can play a slow client in
 * microseconds; the server owns the socket and does the closing.
 */
#ifndef ELS_SERVE_HTTP_H
#define ELS_SERVE_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTP_HEAD_MAX 8192      /* request line + headers */
#define HTTP_TARGET_MAX 1024
#define HTTP_TOKEN_MAX 128      /* the X-Eventlog-Sink-Token field's value */
/* The Authorization field's value: "Bearer " and a token. */
#define HTTP_AUTH_MAX (HTTP_TOKEN_MAX + 32)
#define HTTP_LENGTH_DIGITS 15   /* a Content-Length of more is a 413 */

enum http_method { HTTP_GET, HTTP_HEAD, HTTP_POST };

struct http_request {
    enum http_method method;
    char path[HTTP_TARGET_MAX];     /* before '?', NUL-terminated */
    char query[HTTP_TARGET_MAX];    /* after '?', "" if none */
    char host[256];                 /* the Host field, "" if none */
    char origin[256];               /* the Origin field, "" if none */
    bool has_origin;
    /* X-Eventlog-Sink-Token: serve's token as the page sends it with
     * each action (routes.c compares it); "" if none. */
    char token[HTTP_TOKEN_MAX + 1];
    bool has_token;
    /* Authorization, as scrapers and the webhook of serve --all send
     * the token ("Bearer TOKEN": http_bearer_token()); "" if none. */
    char authorization[HTTP_AUTH_MAX + 1];
    bool has_authorization;
    /* Every Cookie field's value, joined with "; " (RFC 6265 section
     * 5.4: a browser sends one; a proxy from HTTP/2 may send several).
     * It cannot be too long: the whole head fits HTTP_HEAD_MAX.  Read
     * with http_cookie_matches(). */
    char cookie[HTTP_HEAD_MAX];
    bool has_cookie;
    char content_type[128];         /* "" if none */
    uint64_t content_length;        /* 0 without Content-Length */
    bool expect_continue;           /* Expect: 100-continue */
    int minor;                      /* HTTP/1.minor */
    bool keep_alive;
    /* Set by the server, not the parser: the body, once read whole. */
    const char *body;
    size_t body_len;
};

/* Parse the head at the start of buf[0..len).  Returns the head's length
 * (> 0) with *req filled, 0 if more bytes are needed (and len is below
 * HTTP_HEAD_MAX), or minus the HTTP status to answer: 400 malformed,
 * 405 a method other than GET/HEAD/POST, 411 a chunked body
 * (Transfer-Encoding), 413 a Content-Length of more than
 * HTTP_LENGTH_DIGITS digits, 400 a Content-Length that is not digits or
 * a Host, Origin, X-Eventlog-Sink-Token, Authorization, Content-Type or
 * Content-Length field longer than req holds or given twice (Cookie may
 * come more than once), 431 head too long, 505 not HTTP/1.x. */
int http_parse_request(const char *buf, size_t len, struct http_request *req);

/* The decimal value of key in a query ("from=5&to=9"); false if absent
 * or not a number below 2^64. */
bool http_query_u64(const char *query, const char *key, uint64_t *out);
/* The value of key in a query as it stands (no percent decoding), into
 * out (len > 0 bytes); "" and true for "key=" or a bare "key"; false if
 * absent or longer than out holds. */
bool http_query_str(const char *query, const char *key, char *out, size_t len);

/* Does a Host field name this machine's loopback ("127.0.0.1",
 * "localhost", "[::1]", each with an optional port)?  A server on
 * loopback refuses other names: a page elsewhere that rebinds its own
 * domain to 127.0.0.1 (DNS rebinding) must not read the monitor. */
bool http_host_is_loopback(const char *host);

/* Is given (a request's token field) the expected token?  Never for an
 * empty expected token.  In time that depends on given's length only,
 * not on where the two differ: a client that times the answers learns
 * nothing of the token. */
bool http_token_matches(const char *expected, const char *given);

/* The token of an Authorization value "Bearer TOKEN" (the scheme's name
 * in any case, then one or more spaces: RFC 9110 section 11.4), or NULL
 * for another scheme or none. */
const char *http_bearer_token(const char *authorization);

/* Does a cookie named name in cookies (a request's cookie: "a=1; b=2")
 * have the value expected (http_token_matches(), so in time that does
 * not depend on where they differ)?  Every cookie of that name is tried:
 * a browser sends each path's and another server on this host may have
 * set one of the same name (cookies do not tell ports apart). */
bool http_cookie_matches(const char *cookies, const char *name,
                         const char *expected);

/* query without its parameters named key ("token=X&from=5" without
 * "token": "from=5"), into out (len > 0 bytes); false if it does not
 * fit. */
bool http_query_without(const char *query, const char *key, char *out,
                        size_t len);

const char *http_reason(int status);

/* ------------------------------------------------------------------------
 * A connection's deadlines.  See Note [Connection deadlines] in http.c.
 * ------------------------------------------------------------------------ */

struct http_limits {
    uint64_t head_ms;       /* a whole request head, from its first byte */
    uint64_t request_ms;    /* a request, head's first byte to response sent */
    uint64_t idle_ms;       /* a kept-alive connection with nothing pending */
    uint64_t stall_ms;      /* pending output over the server's bound */
};

enum http_late {
    HTTP_IN_TIME = 0,
    HTTP_LATE_HEAD,         /* head_ms passed with the head incomplete */
    HTTP_LATE_REQUEST,      /* request_ms passed before the response left */
    HTTP_LATE_OUTPUT,       /* over the output bound for stall_ms */
    HTTP_LATE_IDLE,         /* idle_ms passed with nothing pending */
};

/* Times are milliseconds of a monotonic clock, as the caller gives them. */
struct http_clock {
    bool in_head;           /* a head is awaited (or partly here) */
    bool in_request;        /* a parsed request's response is not all sent */
    bool stream;            /* an event stream: no request or idle limit */
    bool over;              /* pending output over the server's bound */
    uint64_t head_since, request_since, idle_since, over_since;
};

/* A connection accepted at now: its first head is awaited from now. */
void http_clock_accept(struct http_clock *c, uint64_t now);
/* Request bytes arrived: starts the head clock if none runs; a byte
 * never restarts it (a client sending one byte at a time is late all
 * the same). */
void http_clock_input(struct http_clock *c, uint64_t now);
/* A head was parsed and its response queued; more: bytes of a next
 * (pipelined) head remain, whose clock starts now. */
void http_clock_request(struct http_clock *c, uint64_t now, bool more);
/* The connection became an event stream: only the output bound holds. */
void http_clock_stream(struct http_clock *c);
/* After output was queued or sent: pending bytes still to send, and the
 * server's bound on them. */
void http_clock_output(struct http_clock *c, uint64_t now, size_t pending,
                       size_t bound);
/* Which deadline, if any, has passed at now (the first that applies, in
 * the order of enum http_late). */
enum http_late http_clock_late(const struct http_clock *c, uint64_t now,
                               const struct http_limits *l);
const char *http_late_name(enum http_late late);

#endif /* ELS_SERVE_HTTP_H */
