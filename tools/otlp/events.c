/*
 * events.c: eventlog events to OTLP logs and spans (see events.h).  Runs
 * on the stream reader's thread: no locks of its own, and the only call
 * out is otlp_exporter_enqueue(), which never waits on the network.
 */
#include "otlp/events.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "otlp/encode.h"

struct otlp_open_span {
    char *name;
    size_t len;
    uint64_t t;
    int32_t cap;
    bool marker;
};

struct otlp_pending_log {
    struct otlp_log rec;
    char *body;
    const char *kind;
    int64_t cap;
    bool has_cap;
    uint64_t t;                  /* event time: made unix time at the flush */
};

struct otlp_pending_span {
    struct otlp_span rec;
    char *name;
    const char *source;
    int64_t cap;
    uint64_t t0, t1;             /* event times: made unix times at the flush */
};

struct otlp_bucket {
    double tokens;
    uint64_t last_ms;
};

struct otlp_events {
    struct otlp_exporter *x;
    const struct otlp_config *c;
    const struct otlp_resource *res;
    bool have_anchor, have_guess;
    int64_t anchor_ns;           /* unix ns at event time 0 */
    struct otlp_open_span open[OTLP_EVENTS_OPEN_MAX];
    size_t nopen;
    struct otlp_pending_log logs[OTLP_EVENTS_BATCH];
    size_t nlogs;
    struct otlp_pending_span spans[OTLP_EVENTS_BATCH];
    size_t nspans;
    struct otlp_bucket bucket[2];
    struct otlp_events_stats st;
    /* --otlp-gc-spans: each capability's GC_START not yet ended. */
    uint64_t gc_t0[OTLP_EVENTS_GC_CAPS];
    bool gc_open[OTLP_EVENTS_GC_CAPS];
};

static uint64_t otlp_realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t otlp_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int otlp_events_new(struct otlp_events **out, struct otlp_exporter *x,
                    const struct otlp_config *c, const struct otlp_resource *res)
{
    struct otlp_events *ev = calloc(1, sizeof *ev);
    if (ev == NULL)
        return -ENOMEM;
    ev->x = x;
    ev->c = c;
    ev->res = res;
    for (int i = 0; i < 2; i++) {
        ev->bucket[i].tokens = c->max_rate;
        ev->bucket[i].last_ms = otlp_mono_ms();
    }
    *out = ev;
    return 0;
}

void otlp_events_reset(struct otlp_events *ev)
{
    for (size_t i = 0; i < ev->nopen; i++)
        free(ev->open[i].name);
    ev->nopen = 0;
    ev->have_anchor = ev->have_guess = false;
    memset(ev->gc_open, 0, sizeof ev->gc_open);
}

/* One token of signal i's bucket, or false (left out).  Burst: one
 * second's worth (at least one record). */
static bool otlp_take(struct otlp_events *ev, int i)
{
    double rate = ev->c->max_rate;
    if (rate <= 0)
        return true;
    struct otlp_bucket *b = &ev->bucket[i];
    uint64_t now = otlp_mono_ms();
    double burst = rate < 1 ? 1 : rate;
    b->tokens += (double)(now - b->last_ms) * rate / 1000.0;
    if (b->tokens > burst)
        b->tokens = burst;
    b->last_ms = now;
    if (b->tokens < 1)
        return false;
    b->tokens -= 1;
    return true;
}

static uint64_t otlp_unix_ns(struct otlp_events *ev, uint64_t t)
{
    if (!ev->have_anchor && !ev->have_guess) {
        ev->anchor_ns = (int64_t)otlp_realtime_ns() - (int64_t)t;
        ev->have_guess = true;
    }
    return (uint64_t)(ev->anchor_ns + (int64_t)t);
}

static void otlp_flush_logs(struct otlp_events *ev)
{
    if (ev->nlogs == 0)
        return;
    struct otlp_log recs[OTLP_EVENTS_BATCH];
    struct otlp_attr attrs[OTLP_EVENTS_BATCH][2];
    for (size_t i = 0; i < ev->nlogs; i++) {
        struct otlp_pending_log *p = &ev->logs[i];
        recs[i] = p->rec;
        recs[i].time_ns = ev->have_anchor ? otlp_unix_ns(ev, p->t) : 0;
        size_t n = 0;
        attrs[i][n++] = (struct otlp_attr){ .key = "eventlog.kind", .type = OTLP_ATTR_STR, .s = p->kind };
        if (p->has_cap)
            attrs[i][n++] = (struct otlp_attr){ .key = "ghc.capability", .type = OTLP_ATTR_INT, .i = p->cap };
        recs[i].attrs = attrs[i];
        recs[i].nattrs = n;
    }
    struct otlp_buf b = { 0 };
    if (otlp_encode_logs(&b, ev->c->format, ev->res, recs, ev->nlogs) == 0)
        otlp_exporter_enqueue(ev->x, OTLP_LOGS, &b, ev->nlogs);
    otlp_buf_free(&b);
    for (size_t i = 0; i < ev->nlogs; i++)
        free(ev->logs[i].body);
    ev->st.logs += ev->nlogs;
    ev->nlogs = 0;
}

static void otlp_flush_spans(struct otlp_events *ev)
{
    if (ev->nspans == 0)
        return;
    struct otlp_span recs[OTLP_EVENTS_BATCH];
    struct otlp_attr attrs[OTLP_EVENTS_BATCH][2];
    for (size_t i = 0; i < ev->nspans; i++) {
        struct otlp_pending_span *p = &ev->spans[i];
        recs[i] = p->rec;
        recs[i].start_ns = otlp_unix_ns(ev, p->t0);
        recs[i].end_ns = otlp_unix_ns(ev, p->t1);
        attrs[i][0] = (struct otlp_attr){ .key = "eventlog.kind", .type = OTLP_ATTR_STR, .s = p->source };
        attrs[i][1] = (struct otlp_attr){ .key = "ghc.capability", .type = OTLP_ATTR_INT, .i = p->cap };
        recs[i].attrs = attrs[i];
        recs[i].nattrs = p->cap >= 0 ? 2 : 1;
    }
    struct otlp_buf b = { 0 };
    if (otlp_encode_spans(&b, ev->c->format, ev->res, recs, ev->nspans) == 0)
        otlp_exporter_enqueue(ev->x, OTLP_TRACES, &b, ev->nspans);
    otlp_buf_free(&b);
    for (size_t i = 0; i < ev->nspans; i++)
        free(ev->spans[i].name);
    ev->st.spans += ev->nspans;
    ev->nspans = 0;
}

void otlp_events_flush(struct otlp_events *ev)
{
    otlp_flush_logs(ev);
    otlp_flush_spans(ev);
}

static void otlp_add_log(struct otlp_events *ev, const struct els_event *e, int sev,
                         const char *sevtext, const char *kind, const char *text, size_t len)
{
    if (!ev->c->enabled[OTLP_LOGS])
        return;
    if (!otlp_take(ev, 0)) {
        ev->st.logs_left_out++;
        return;
    }
    if (len > OTLP_EVENTS_TEXT_MAX)
        len = OTLP_EVENTS_TEXT_MAX;
    char *body = malloc(len + 1);
    if (body == NULL) {
        ev->st.logs_left_out++;
        return;
    }
    memcpy(body, text, len);
    body[len] = '\0';
    struct otlp_pending_log *p = &ev->logs[ev->nlogs++];
    p->body = body;
    p->kind = kind;
    p->cap = e->cap;
    p->has_cap = e->cap >= 0;
    p->t = e->time;
    p->rec = (struct otlp_log){
        .observed_ns = otlp_realtime_ns(),
        .severity = sev, .severity_text = sevtext, .body = body, .body_len = len,
    };
    if (ev->nlogs == OTLP_EVENTS_BATCH)
        otlp_flush_logs(ev);
}

static void otlp_ids(uint8_t *trace_id, uint8_t *span_id)
{
    uint8_t r[24];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
        uint64_t t = otlp_realtime_ns();
        for (size_t i = 0; i < sizeof r; i++)
            r[i] = (uint8_t)(t >> (i % 8 * 8)) ^ (uint8_t)i;
    }
    r[0] |= 1;     /* an all-zero id is invalid */
    r[16] |= 1;
    memcpy(trace_id, r, 16);
    memcpy(span_id, r + 16, 8);
}

/* A span of name (malloc'd, len bytes: taken whatever happens) from event
 * time t0 to t1, unless the rate limit leaves it out. */
static void otlp_add_span(struct otlp_events *ev, char *name, size_t len, const char *source,
                          int64_t cap, uint64_t t0, uint64_t t1)
{
    if (!otlp_take(ev, 1)) {
        ev->st.spans_left_out++;
        free(name);
        return;
    }
    struct otlp_pending_span *p = &ev->spans[ev->nspans++];
    p->name = name;
    p->source = source;
    p->cap = cap;
    p->t0 = t0;
    p->t1 = t1;
    p->rec = (struct otlp_span){
        .name = name, .name_len = len,
        .kind = OTLP_SPAN_INTERNAL, .status_code = OTLP_STATUS_UNSET,
    };
    otlp_ids(p->rec.trace_id, p->rec.span_id);
    if (ev->nspans == OTLP_EVENTS_BATCH)
        otlp_flush_spans(ev);
}

/* --otlp-gc-spans: a capability's GC_START to its next GC_END, as the
 * monitor times a pause (the leader's pair; a parallel collection's
 * other capabilities post a pair of their own, each its own span). */
static void otlp_gc_event(struct otlp_events *ev, const struct els_event *e)
{
    if (!ev->c->gc_spans || !ev->c->enabled[OTLP_TRACES] || e->cap < 0 ||
        e->cap >= OTLP_EVENTS_GC_CAPS)
        return;
    if (e->tag == ELS_EV_GC_START) {
        ev->gc_t0[e->cap] = e->time;
        ev->gc_open[e->cap] = true;
        return;
    }
    if (!ev->gc_open[e->cap])
        return;
    ev->gc_open[e->cap] = false;
    char *name = strdup("GC");
    if (name == NULL) {
        ev->st.spans_left_out++;
        return;
    }
    otlp_add_span(ev, name, 2, "gc", e->cap, ev->gc_t0[e->cap], e->time);
}

/* "STEM start"/"STEM begin" opens, "STEM end"/"STEM stop" closes (the
 * monitor's words); for user messages "START X" opens and "STOP X"
 * closes.  Returns the name's length, 0 if the text is neither. */
static size_t otlp_span_word(const char *s, size_t n, bool marker, bool *opens,
                             const char **name)
{
    if (marker) {
        static const struct { const char *w; bool opens; } words[] = {
            { " start", true }, { " begin", true }, { " end", false }, { " stop", false },
        };
        for (size_t i = 0; i < 4; i++) {
            size_t wl = strlen(words[i].w);
            if (n > wl && memcmp(s + n - wl, words[i].w, wl) == 0) {
                *opens = words[i].opens;
                *name = s;
                return n - wl;
            }
        }
        return 0;
    }
    if (n > 6 && memcmp(s, "START ", 6) == 0) {
        *opens = true;
        *name = s + 6;
        return n - 6;
    }
    if (n > 5 && memcmp(s, "STOP ", 5) == 0) {
        *opens = false;
        *name = s + 5;
        return n - 5;
    }
    return 0;
}

static void otlp_span_event(struct otlp_events *ev, const struct els_event *e,
                            struct els_str text, bool marker)
{
    bool opens;
    const char *name;
    size_t len = otlp_span_word(text.ptr, text.len, marker, &opens, &name);
    if (len == 0 || len > OTLP_EVENTS_TEXT_MAX || !ev->c->enabled[OTLP_TRACES])
        return;
    if (opens) {
        if (ev->nopen == OTLP_EVENTS_OPEN_MAX) {
            ev->st.spans_unmatched++;
            return;
        }
        char *copy = malloc(len);
        if (copy == NULL) {
            ev->st.spans_unmatched++;
            return;
        }
        memcpy(copy, name, len);
        ev->open[ev->nopen++] = (struct otlp_open_span){
            .name = copy, .len = len, .t = e->time, .cap = e->cap, .marker = marker,
        };
        return;
    }
    for (size_t i = ev->nopen; i-- > 0;) {
        struct otlp_open_span *o = &ev->open[i];
        if (o->marker != marker || o->len != len || memcmp(o->name, name, len) != 0)
            continue;
        char *owned = o->name;
        uint64_t t0 = o->t;
        int32_t cap = o->cap;
        memmove(&ev->open[i], &ev->open[i + 1], (ev->nopen - i - 1) * sizeof ev->open[0]);
        ev->nopen--;
        otlp_add_span(ev, owned, len, marker ? "marker" : "user_event", cap, t0, e->time);
        return;
    }
}

void otlp_events_feed(struct otlp_events *ev, const struct els_event *e)
{
    struct els_event_data d;
    switch (e->tag) {
    case ELS_EV_WALL_CLOCK_TIME:
        if (els_event_decode(e, &d) == 0) {
            ev->anchor_ns = (int64_t)(d.u.wall_clock.sec * 1000000000u + d.u.wall_clock.nsec) -
                            (int64_t)e->time;
            ev->have_anchor = true;
        }
        break;
    case ELS_EV_USER_MSG:
    case ELS_EV_USER_MARKER:
        if (els_event_decode(e, &d) != 0)
            break;
        otlp_add_log(ev, e, OTLP_SEV_INFO, "INFO", e->tag == ELS_EV_USER_MSG ? "message" : "marker",
                     d.u.text.ptr, d.u.text.len);
        otlp_span_event(ev, e, d.u.text, e->tag == ELS_EV_USER_MARKER);
        break;
    case ELS_EV_THREAD_LABEL:
        if (els_event_decode(e, &d) == 0) {
            char buf[OTLP_EVENTS_TEXT_MAX + 64];
            int n = snprintf(buf, sizeof buf, "thread %u: %.*s", d.u.thread_label.thread,
                             (int)(d.u.thread_label.label.len > OTLP_EVENTS_TEXT_MAX ?
                                   OTLP_EVENTS_TEXT_MAX : d.u.thread_label.label.len),
                             d.u.thread_label.label.ptr);
            otlp_add_log(ev, e, OTLP_SEV_INFO, "INFO", "thread_label", buf,
                         n < 0 ? 0 : (size_t)n >= sizeof buf ? sizeof buf - 1 : (size_t)n);
        }
        break;
    case ELS_EV_LOG_MSG: {
        struct els_note note;
        if (els_note_decode(e, &note) == 0) {
            bool loss = note.kind == ELS_NOTE_DROPPED || note.kind == ELS_NOTE_CONSUMER_MISSED ||
                        note.kind == ELS_NOTE_JOINED_LATE;
            otlp_add_log(ev, e, loss ? OTLP_SEV_WARN : OTLP_SEV_INFO, loss ? "WARN" : "INFO",
                         "sink_note", note.text.ptr, note.text.len);
        }
        break;
    }
    case ELS_EV_GC_START:
    case ELS_EV_GC_END:
        otlp_gc_event(ev, e);
        break;
    default:
        break;
    }
}

void otlp_events_stats(const struct otlp_events *ev, struct otlp_events_stats *out)
{
    *out = ev->st;
}

void otlp_events_free(struct otlp_events *ev)
{
    if (ev == NULL)
        return;
    otlp_events_flush(ev);
    otlp_events_reset(ev);
    free(ev);
}
