/*
 * serve.h: what the parts of `eventlog-sink serve` share: serve.c (the
 * command line, the token, the listener and the poll loop),
 * conn.c (each client's connection: slots, input, request bodies,
 * the output bound, deadlines), routes.c (what each path answers),
 * and with --all all.c (the programs followed) and alert.c
 * (Alertmanager's webhook).  Not its job:
 * HTTP parsing and the deadline bookkeeping (http.h), the model
 * and its source (monitor/).
 */
#ifndef ELS_TOOL_SERVE_H
#define ELS_TOOL_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../monitor/control.h"
#include "http.h"
#include "../monitor/model.h"
#include "../monitor/source.h"
#include "../monitor/strbuf.h"

#define SERVE_CLIENTS 64
/* Event streams stay open: without a share of their own, 64 pages (or
 * one user's 64 connections to /events) would leave no slot for the
 * page, /api/ and /metrics.  Half the slots: a scraper and a few pages
 * always get in. */
#define SERVE_SSE_MAX (SERVE_CLIENTS / 2)

struct serve_client {
    int fd;
    char in[HTTP_HEAD_MAX];
    size_t in_len;
    struct strbuf out;
    size_t out_off;
    bool sse, closing;
    /* Response sent and our side shut: reading what the client still
     * sends until it closes (or SERVE_DRAIN_MS), so that closing with
     * unread input does not reset the connection and destroy the
     * response before the client read it (a "lingering close"). */
    bool draining;
    uint64_t drain_since;
    /* Refused for want of a slot of its kind: closed as soon as the 503
     * is handed to the kernel, without a lingering close, so that the
     * refused do not hold slots themselves. */
    bool close_now;
    /* With --all: the program whose model this event stream carries
     * (its pid and start time), 0 for none. */
    long sse_pid;
    uint64_t sse_start;
    struct http_clock clock;
    /* A request whose body is being read (a route that takes one:
     * serve_body_max()): its head, and body_len of its bytes so far in
     * body (malloc'd, its Content-Length). */
    bool in_body;
    struct http_request req;
    char *body;
    size_t body_len;
};

struct serve {
    int listen_fd;
    bool loopback;              /* refuse Host names other than loopback */
    struct serve_client clients[SERVE_CLIENTS];
    struct mon_model *model;    /* NULL with --all */
    struct mon_source src;
    struct serve_tl *tl;        /* src's timeline (NULL with --all) */
    struct serve_otlp_prog *otlp;   /* src's OTLP export (otlp.h), or NULL */
    struct serve_all *all;      /* with --all: every announced program */
    struct mon_control control;
    /* With --all --control: the webhook's state (its cooldown), else
     * NULL (no webhook). */
    struct serve_alerts *alerts;
    /* Every request needs the token (or the cookie below), the
     * read-only ones too unless public_read: see serve_authorize(). */
    char token[HTTP_TOKEN_MAX + 1];
    /* The session cookie that a GET with ?token= sets: its name (with
     * the port: cookies do not tell ports apart) and its value, random
     * at each start and not the token (Note [The session cookie] in
     * routes.c). */
    char cookie_name[32];
    char cookie[HTTP_TOKEN_MAX + 1];
    /* --public-read: GET and HEAD need no token (POST still does). */
    bool public_read;
    /* --control: the actions (one program) or the webhook (--all). */
    bool actions;
    struct strbuf scratch;
    struct http_limits limits;
    unsigned nsse;              /* clients that are event streams */
    uint64_t served, refused, late;
};

struct serve_all;
struct serve_alerts;
struct serve_tl;
struct serve_otlp_prog;
struct pollfd;

/* ------------------------------------------------------------------------
 * timeline.c
 * ------------------------------------------------------------------------ */

/* A live spool's bound, per program (--spool-size's default). */
#define SERVE_SPOOL_DEFAULT (256ull << 20)
/* A stream's timeline: live spools made under parent (a directory that
 * exists), each run's at most max_bytes; or, with file set, that file
 * indexed where it lies.  NULL when out of memory. */
struct serve_tl *serve_tl_new(const char *parent, const char *file,
                              uint64_t max_bytes);
void serve_tl_free(struct serve_tl *t);
/* mon_source's tap: ctx is the serve_tl (Note [Feeding the timeline]). */
void serve_tl_tap(void *ctx, const void *buf, size_t len);
/* The stream is the file at path, to be indexed where it lies. */
int serve_tl_set_file(struct serve_tl *t, const char *path);
/* A FILE's timeline started after its source read its first len bytes
 * (mon_open() reads at once): a thread indexes the file from its start,
 * as far as it goes and then as far as the source reads (Note [Index
 * thread] in timeline.c).  0 or -errno. */
int serve_tl_catch_up(struct serve_tl *t, uint64_t len);
/* Bytes its live spool holds on disk now. */
uint64_t serve_tl_disk(const struct serve_tl *t);
/* Answer /api/KIND?qs (kind: timeline, events, range, info) as JSON in
 * out: the HTTP status (503 before the stream's first bytes). */
int serve_tl_route(struct serve_tl *t, const char *kind, const char *qs,
                   struct strbuf *out);
/* Where live spools go by default: $XDG_RUNTIME_DIR, else $TMPDIR, else
 * /tmp. */
const char *serve_tl_default_parent(void);

/* ------------------------------------------------------------------------
 * all.c
 * ------------------------------------------------------------------------ */

/* The most programs `serve --all` follows at once (those beyond are
 * counted, not followed, until a slot frees). */
#define SERVE_ALL_MAX 256

/* A new empty set; save_dir (or NULL) gets a copy of each run of each
 * stream as DIR/NAME.PID.N.eventlog; each program's timeline spools
 * under spool_parent, at most spool_max bytes each; keep_ended programs
 * that exited are kept (their page, index and spool), the oldest
 * forgotten first, and while the spools of all programs pass
 * spool_total the oldest ended ones are forgotten too.  NULL when out
 * of memory. */
struct serve_all *serve_all_new(const char *save_dir, const char *spool_parent,
                                uint64_t spool_max, unsigned keep_ended,
                                uint64_t spool_total);
void serve_all_free(struct serve_all *a);
/* Rescan the discovery directory when due (or woken): follow new
 * programs, forget those gone. */
void serve_all_scan(struct serve_all *a, uint64_t now);
/* Descriptors to poll (at most SERVE_ALL_MAX + 1) into pfd; their
 * count.  *wait is lowered to when a source wants a retry or the next
 * scan. */
unsigned serve_all_pollfds(struct serve_all *a, struct pollfd *pfd,
                           uint64_t now, uint64_t *wait);
/* Read from the programs whose descriptors (as filled by
 * serve_all_pollfds()) are ready or which wait for a retry, each within
 * its share of the turn's budget.  True when one had more to read. */
bool serve_all_pump(struct serve_all *a, const struct pollfd *pfd,
                    unsigned npfd, uint64_t now);
/* Close a rate interval on every model. */
void serve_all_tick(struct serve_all *a, uint64_t wall_ns);
/* The model of the program pid (start: its start time, or 0 for any),
 * or NULL. */
struct mon_model *serve_all_model(struct serve_all *a, long pid,
                                  uint64_t *start);
/* The timeline of the program pid (start as for serve_all_model()). */
struct serve_tl *serve_all_timeline(struct serve_all *a, long pid,
                                    uint64_t start);
/* The index page, its JSON, and every program's /metrics. */
void serve_all_index_html(struct serve_all *a, struct strbuf *b);
void serve_all_index_json(struct serve_all *a, struct strbuf *b);
void serve_all_prometheus(struct serve_all *a, struct strbuf *b);

/* ------------------------------------------------------------------------
 * alert.c
 * ------------------------------------------------------------------------ */

/* The largest body POST /api/alertmanager takes (a larger one is a 413,
 * not read). */
#define SERVE_ALERT_BODY_MAX (256u << 10)
#define SERVE_ALERT_COOLDOWN_MS 60000   /* --dump-cooldown's default */

/* The webhook's state: cooldown_ms between two dumps of a program (0:
 * none).  NULL when out of memory. */
struct serve_alerts *serve_alerts_new(uint64_t cooldown_ms);
void serve_alerts_free(struct serve_alerts *a);
/* Answer an authorized POST /api/alertmanager whose body r carries: the
 * HTTP status (200, or 400/413/415 with nothing done), the answer into
 * b and its Content-Type into *type.  now: mon_now_ms(). */
int serve_alerts_handle(struct serve_alerts *a, const struct http_request *r,
                        uint64_t now, struct strbuf *b, const char **type);

/* ------------------------------------------------------------------------
 * conn.c
 * ------------------------------------------------------------------------ */

/* The deadlines: conn.c's constants, or shorter ones for a test. */
void serve_limits(struct http_limits *l);
/* Take every waiting connection into a free slot (beyond the slots: a
 * 503 and closed at once). */
void serve_accept(struct serve *s, uint64_t now);
/* Read what c sent and handle its complete requests (or drain it). */
void serve_read(struct serve *s, struct serve_client *c, uint64_t now);
/* Handle the complete requests waiting in c->in, within its output bound. */
void serve_requests(struct serve *s, struct serve_client *c, uint64_t now);
/* Send what is queued; false when the client is gone. */
bool serve_flush(struct serve_client *c, uint64_t now);
/* Close c and free its slot. */
void serve_close(struct serve *s, struct serve_client *c);
/* Close the clients whose deadline passed. */
void serve_deadlines(struct serve *s, uint64_t now);
/* Over the output bound: its requests wait (and are not read), and an
 * event stream's updates are skipped. */
bool serve_paused(const struct serve_client *c);

/* ------------------------------------------------------------------------
 * routes.c
 * ------------------------------------------------------------------------ */

/* May request r go to its route?  True if it carries the token
 * (X-Eventlog-Sink-Token or "Authorization: Bearer"), the session
 * cookie, or is a GET or HEAD under --public-read.  Otherwise false,
 * with its answer queued on c: a 401 that says how to authenticate, or,
 * for a GET or HEAD with the token in its query (?token=), a 303 to the
 * same URL without it that sets the cookie.  Judged before anything of
 * the route (whether a program exists, a body is taken). */
bool serve_authorize(struct serve *s, struct serve_client *c,
                     const struct http_request *r);
/* Queue the answer to request r on c (a route, or a refusal); r->body
 * holds its body if it had one (at most serve_body_max()). */
void serve_route(struct serve *s, struct serve_client *c,
                 const struct http_request *r, uint64_t now);
/* The largest body the route of r takes: 0 for every route but the
 * webhook's. */
uint64_t serve_body_max(const struct serve *s, const struct http_request *r);
/* Queue "STATUS REASON" as the answer, and close after it. */
void serve_error(struct serve_client *c, int status);
/* Queue the model's state on every event stream not behind. */
void serve_push(struct serve *s);

#endif /* ELS_TOOL_SERVE_H */
