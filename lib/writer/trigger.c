/*
 * trigger.c: a flight recorder's triggers (ring:...&dump-on=...): the
 * evaluator that reads each unit of the stream with the public parser and
 * decides when a dump is due.  Not its job: the options' syntax
 * (lib/sinks/ring_options.c), where the units come from or what a dump
 * holds (recorder.c, Note [Flight recorder]), naming dump files
 * (lib/sinks/ring.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eventlog-sink.h"
#include "eventlog-sink/parse.h"
#include "base/log.h"
#include "writer/trigger.h"
#include "sinks/spec.h"

/*
 * Note [Triggered dumps]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * The recorder saves itself when the stream shows something worth keeping
 * (dotnet-monitor's collection rules: trigger, action, limits).  The
 * conditions are read from the units themselves, on the writer thread, so
 * the program's threads pay nothing but the copy they already make: a
 * GC_START/GC_END pair of one capability further apart than gc-pause>, a
 * HEAP_LIVE above heap-live>, a USER_MARKER (traceMarker) or USER_MSG
 * (traceEvent) whose text starts with marker:/message:'s prefix, or a rise
 * in the writer's count of lost units (loss).  A unit is read as the RTS
 * wrote it, one whole block, against the stream's header; a unit that does
 * not parse as whole events (a custom producer's garbage) is counted and
 * skipped, and the parser starts again from the header, so one bad unit
 * never hides the next good one.
 *
 * A condition met arms one dump, due after= later (the dump then holds
 * what led up to the cause and what followed it); conditions met while it
 * is armed are part of it.  Once taken, a dump starts the cooldown:
 * conditions met within cooldown= of the one that armed the last dump,
 * and any after max-dumps= dumps (the conditions' own and those asked
 * for otherwise: elsi_trigger_other_dump()), are counted as suppressed
 * and do nothing, so a flapping condition costs at most max-dumps=
 * files, at most one per cooldown.  At the end of the stream an armed
 * dump is due at once.
 *
 * In dump-on=, a comma separates conditions; the spec decodes %XX once,
 * and each condition is decoded once more, so a prefix holding a comma or
 * a percent sign is written %252C or %2525 (and '&', '?' or a space, as
 * in any option value, %26, %3F, %20).
 */

/* Every condition's prefix fits the parser's selection. */
_Static_assert(ELSI_TRIGGER_MAX_CONDS <= ELS_PARSE_PREFIXES_MAX &&
               ELSI_TRIGGER_PREFIX_MAX <= ELS_PARSE_PREFIX_MAX,
               "dump-on= prefixes must fit els_parser_select()");

struct elsi_trigger {
    struct elsi_trigger_config cfg;
    struct els_parser *parser;  /* delivers only what a condition reads */
    uint8_t *header;
    size_t header_len;
    bool parser_ready;          /* fed the header, between events */
    uint64_t now_ms;            /* of the unit being read */
    uint64_t last_time;         /* the newest block's end */
    uint64_t gc_start[ELS_MAX_CAPS];    /* 0: no GC open on that cap */
    uint64_t lost_seen;

    bool armed;
    uint64_t armed_ms, cause_time;
    char cause[ELSI_TRIGGER_CAUSE_MAX];
    bool have_last;
    uint64_t last_armed_ms;
    struct elsi_trigger_counts counts;
    uint64_t other_dumps;       /* elsi_trigger_other_dump() */
};

// ---------------------------------------------------------------------------
// The evaluator
// ---------------------------------------------------------------------------

/* A condition is met: arm a dump unless one is armed, in a cooldown, or
 * past max-dumps= (Note [Triggered dumps]). */
static void trigger_fire(struct elsi_trigger *t, uint64_t time, const char *fmt, ...)
    ELSI_PRINTF(3, 4);

static void trigger_fire(struct elsi_trigger *t, uint64_t time, const char *fmt, ...)
{
    t->counts.fired++;
    if (t->armed)
        return;
    if (t->counts.dumps + t->other_dumps >= t->cfg.max_dumps ||
        (t->have_last && t->now_ms - t->last_armed_ms < t->cfg.cooldown_ms)) {
        t->counts.suppressed++;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->cause, sizeof t->cause, fmt, ap);
    va_end(ap);
    if (n >= 0)
        snprintf(t->cause + ((size_t)n < sizeof t->cause ? (size_t)n : sizeof t->cause - 1),
                 sizeof t->cause - ((size_t)n < sizeof t->cause ? (size_t)n : sizeof t->cause - 1),
                 " at %" PRIu64 ".%03" PRIu64 " s", time / 1000000000u,
                 time / 1000000u % 1000u);
    t->armed = true;
    t->armed_ms = t->now_ms;
    t->cause_time = time;
}

/* Text for a cause line: printable ASCII, at most 120 bytes. */
static void trigger_clean(const struct els_str *s, char *out, size_t cap)
{
    size_t n = s->len < cap - 1 ? s->len : cap - 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s->ptr[i];
        out[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    out[n] = '\0';
}

/* A marker or message condition against a text event's payload (the text
 * itself: no decoding needed). */
static void trigger_text(struct elsi_trigger *t, const struct elsi_trigger_cond *c,
                         const struct els_event *ev)
{
    if (ev->payload_len < c->prefix_len ||
        memcmp(ev->payload, c->prefix, c->prefix_len) != 0)
        return;
    struct els_str text = { (const char *)ev->payload, ev->payload_len };
    char clean[121];
    trigger_clean(&text, clean, sizeof clean);
    trigger_fire(t, ev->time, "%s %s", c->kind == ELSI_TRIGGER_MARKER
                 ? "marker" : "message", clean);
}

static void trigger_gc(struct elsi_trigger *t, const struct elsi_trigger_cond *c,
                       const struct els_event *ev)
{
    if (ev->cap < 0 || ev->cap >= ELS_MAX_CAPS)
        return;
    if (ev->tag == ELS_EV_GC_START) {
        t->gc_start[ev->cap] = ev->time + 1;    /* 0 means none */
    } else if (t->gc_start[ev->cap] != 0) {
        uint64_t start = t->gc_start[ev->cap] - 1;
        t->gc_start[ev->cap] = 0;
        if (ev->time > start && ev->time - start > c->value)
            trigger_fire(t, ev->time, "gc-pause %" PRIu64 ".%03" PRIu64
                         " ms on cap %d", (ev->time - start) / 1000000u,
                         (ev->time - start) / 1000u % 1000u, (int)ev->cap);
    }
}

/* Called for the events the parser selected (elsi_trigger_new()): block
 * markers, and the events some condition reads; a marker or message
 * only when it starts with a condition's prefix. */
static int trigger_on_event(void *user, const struct els_event *ev)
{
    struct elsi_trigger *t = user;
    struct els_event_data d;
    if (ev->tag == ELS_EV_BLOCK_MARKER) {
        if (els_event_decode(ev, &d) == 0 && d.u.block.end_time > t->last_time)
            t->last_time = d.u.block.end_time;
        return 0;
    }
    for (unsigned i = 0; i < t->cfg.n_conds; i++) {
        const struct elsi_trigger_cond *c = &t->cfg.conds[i];
        switch (c->kind) {
        case ELSI_TRIGGER_GC_PAUSE:
            if (ev->tag == ELS_EV_GC_START || ev->tag == ELS_EV_GC_END)
                trigger_gc(t, c, ev);
            break;
        case ELSI_TRIGGER_HEAP_LIVE:
            if (ev->tag == ELS_EV_HEAP_LIVE && els_event_decode(ev, &d) == 0 &&
                d.u.heap.bytes > c->value)
                trigger_fire(t, ev->time, "heap-live %" PRIu64 " bytes",
                             d.u.heap.bytes);
            break;
        case ELSI_TRIGGER_MARKER:
            if (ev->tag == ELS_EV_USER_MARKER)
                trigger_text(t, c, ev);
            break;
        case ELSI_TRIGGER_MESSAGE:
            if (ev->tag == ELS_EV_USER_MSG)
                trigger_text(t, c, ev);
            break;
        case ELSI_TRIGGER_LOSS:
            break;
        }
    }
    return 0;
}

int elsi_trigger_new(struct elsi_trigger **out, const struct elsi_trigger_config *cfg)
{
    struct elsi_trigger *t = calloc(1, sizeof *t);
    if (t == NULL)
        return ELS_ENOMEM;
    t->cfg = *cfg;
    struct els_parse_callbacks cb = {
        .struct_size = sizeof cb,
        .on_event = trigger_on_event,
    };
    int r = els_parser_new(&t->parser, &cb, t, 0);
    /* Only what a condition reads reaches trigger_on_event(): on a
     * program posting millions of events a second, a call per event was
     * most of the evaluator's cost (Note [Selected events] in
     * format/parse.c). */
    if (r == 0)
        r = els_parser_select(t->parser, ELS_EV_BLOCK_MARKER, NULL, 0);
    for (unsigned i = 0; r == 0 && i < cfg->n_conds; i++) {
        const struct elsi_trigger_cond *c = &cfg->conds[i];
        switch (c->kind) {
        case ELSI_TRIGGER_GC_PAUSE:
            r = els_parser_select(t->parser, ELS_EV_GC_START, NULL, 0);
            if (r == 0)
                r = els_parser_select(t->parser, ELS_EV_GC_END, NULL, 0);
            break;
        case ELSI_TRIGGER_HEAP_LIVE:
            r = els_parser_select(t->parser, ELS_EV_HEAP_LIVE, NULL, 0);
            break;
        case ELSI_TRIGGER_MARKER:
        case ELSI_TRIGGER_MESSAGE:
            r = els_parser_select(t->parser, c->kind == ELSI_TRIGGER_MARKER
                                  ? ELS_EV_USER_MARKER : ELS_EV_USER_MSG,
                                  c->prefix, c->prefix_len);
            break;
        case ELSI_TRIGGER_LOSS:
            break;
        }
    }
    if (r != 0) {
        els_parser_free(t->parser);
        free(t);
        return r;
    }
    *out = t;
    return 0;
}

void elsi_trigger_free(struct elsi_trigger *t)
{
    if (t == NULL)
        return;
    els_parser_free(t->parser);
    free(t->header);
    free(t);
}

/* Start the parser over at the header: true when it is between events. */
static bool trigger_restart(struct elsi_trigger *t)
{
    els_parser_reset(t->parser);
    memset(t->gc_start, 0, sizeof t->gc_start);
    t->parser_ready = false;
    if (t->header == NULL)
        return false;
    struct els_parse_status st;
    if (els_parser_feed(t->parser, t->header, t->header_len, NULL) != 0)
        return false;
    els_parser_status(t->parser, &st);
    t->parser_ready = st.where == ELS_PARSE_AT_EVENT;
    return t->parser_ready;
}

void elsi_trigger_header(struct elsi_trigger *t, const void *hdr, size_t len)
{
    free(t->header);
    t->header = malloc(len > 0 ? len : 1);
    t->header_len = t->header != NULL ? len : 0;
    if (t->header != NULL)
        memcpy(t->header, hdr, len);
    trigger_restart(t);
}

void elsi_trigger_unit(struct elsi_trigger *t, const void *a, size_t alen,
                       const void *b, size_t blen, uint64_t now_ms)
{
    t->counts.units++;
    t->now_ms = now_ms;
    if (!t->parser_ready && !trigger_restart(t)) {
        t->counts.bad_units++;      /* no usable header */
        return;
    }
    int r = els_parser_feed(t->parser, a, alen, NULL);
    if (r == 0 && blen > 0)
        r = els_parser_feed(t->parser, b, blen, NULL);
    struct els_parse_status st;
    els_parser_status(t->parser, &st);
    if (r != 0 || (st.where != ELS_PARSE_AT_EVENT && st.where != ELS_PARSE_ENDED)) {
        t->counts.bad_units++;
        trigger_restart(t);
    } else if (st.where == ELS_PARSE_ENDED) {
        trigger_restart(t);         /* nothing may follow DATA_END */
    }
}

void elsi_trigger_loss(struct elsi_trigger *t, uint64_t lost_units, uint64_t now_ms)
{
    if (lost_units <= t->lost_seen)
        return;
    uint64_t was = t->lost_seen;
    t->lost_seen = lost_units;
    for (unsigned i = 0; i < t->cfg.n_conds; i++) {
        if (t->cfg.conds[i].kind == ELSI_TRIGGER_LOSS) {
            t->now_ms = now_ms;
            trigger_fire(t, t->last_time, "loss of %" PRIu64 " units",
                         lost_units - was);
            break;
        }
    }
}

bool elsi_trigger_due(const struct elsi_trigger *t, uint64_t now_ms, bool ending,
                      uint64_t *wake_ms)
{
    uint64_t at = t->armed ? t->armed_ms + t->cfg.after_ms : 0;
    if (wake_ms != NULL)
        *wake_ms = at;
    return t->armed && (ending || now_ms >= at);
}

unsigned elsi_trigger_take(struct elsi_trigger *t, char *cause, size_t len)
{
    if (cause != NULL && len > 0)
        snprintf(cause, len, "%s", t->armed ? t->cause : "");
    if (t->armed) {
        t->armed = false;
        t->have_last = true;
        t->last_armed_ms = t->armed_ms;
        t->counts.dumps++;
    }
    return t->counts.dumps;
}

void elsi_trigger_other_dump(struct elsi_trigger *t)
{
    t->other_dumps++;
}

uint64_t elsi_trigger_cause_time(const struct elsi_trigger *t)
{
    return t->cause_time;
}

void elsi_trigger_counts(const struct elsi_trigger *t, struct elsi_trigger_counts *out)
{
    *out = t->counts;
}
