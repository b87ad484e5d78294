/*
 * model.c: the monitor's aggregation of a GHC eventlog (see model.h):
 * the model's life (new, reset, feed) and its one parser callback,
 * mon_on_event(), which sorts each event into its class and updates the
 * state of that class: capabilities and GC pauses, threads, heap and
 * heap samples, sparks, user messages, markers and their spans, the
 * sink's loss notes, cost-centre samples, the program's identity.
 * Per-capability activity is a state (idle, running a thread, in GC)
 * changed only by that capability's own events, so blocks arriving out
 * of order across capabilities do not confuse it.  Nothing here does
 * I/O.  Not its job: the timelines and rate intervals (model_time.c),
 * the thread and cost-centre tables and what bounds the model's memory
 * when the stream is hostile (model_tables.c, Note [Stream-chosen
 * keys]), or rendering (render.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eventlog-sink.h"
#include "eventlog-sink/parse.h"
#include "model_impl.h"

/* Prometheus histogram bounds of GC pauses, seconds. */
const double mon_pause_bounds[MON_PAUSE_BUCKETS] = {
    0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5
};

const char *const mon_spark_names[7] = {
    "created", "dud", "overflowed", "converted", "gcd", "fizzled", "pool"
};

const char *mon_class_name(enum mon_class c)
{
    static const char *const names[MON_CLASS_N] = {
        "scheduler", "gc", "heap", "spark", "user", "profiling", "meta",
        "other"
    };
    return (unsigned)c < MON_CLASS_N ? names[c] : "other";
}

enum mon_class mon_class_of(uint16_t tag)
{
    switch (tag) {
    case 0: case 1: case 2: case 3: case 4: case 8: case 15:
    case 45: case 46: case 47: case 48: case 55: case 56: case 57:
        return MON_CLASS_SCHED;
    case 9: case 10: case 11: case 12: case 20: case 21: case 22: case 54:
        return MON_CLASS_GC;
    case 49: case 50: case 51: case 52: case 53:
        return MON_CLASS_HEAP;
    case 34: case 35: case 36: case 37: case 38: case 39: case 40: case 41:
        return MON_CLASS_SPARK;
    case 19: case 58:
        return MON_CLASS_USER;
    case 16: case 18: case 25: case 26: case 27: case 28: case 29: case 30:
    case 31: case 32: case 33: case 43: case 44:
        return MON_CLASS_META;
    default:
        if (tag >= 160 && tag <= 169)
            return MON_CLASS_PROF;
        return MON_CLASS_OTHER;
    }
}

/* mon_class_of() for the tags below 256 (all GHC's), filled once
 * (mon_model_new()): a load per event instead of a call and a switch. */
static uint8_t mon_classes[256];
static bool mon_classes_ready;

static void mon_classes_init(void)
{
    if (mon_classes_ready)
        return;
    for (unsigned t = 0; t < 256; t++)
        mon_classes[t] = (uint8_t)mon_class_of((uint16_t)t);
    mon_classes_ready = true;
}

/* ------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------ */

/* Messages are short: a plain loop.  memcpy() here was inlined as `rep
 * movsq`, whose start-up cost was more than half of the model's time per
 * event on a stream of traceEvent messages (perf annotate). */
static void mon_copy(char *dst, size_t cap, const char *s, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    for (size_t i = 0; i < n; i++)
        dst[i] = s[i];
    dst[n] = '\0';
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t be64(const uint8_t *p)
{
    return (uint64_t)be32(p) << 32 | be32(p + 4);
}

/* ------------------------------------------------------------------------
 * User markers: "NAME start"/"NAME begin" opens a span that "NAME end"/
 * "NAME stop" closes.
 * ------------------------------------------------------------------------ */

static size_t mon_span_stem(const char *s, size_t n, bool *opens)
{
    static const struct { const char *w; bool opens; } words[] = {
        { " start", true }, { " begin", true }, { " end", false },
        { " stop", false },
    };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t wl = strlen(words[i].w);
        if (n > wl && memcmp(s + n - wl, words[i].w, wl) == 0) {
            *opens = words[i].opens;
            return n - wl;
        }
    }
    return 0;
}

static void mon_marker(struct mon_model *m, const struct els_event *ev,
                       struct els_str text)
{
    struct mon_text *mt = &m->marks[m->markers % MON_MARKS];
    mt->t = ev->time;
    mt->cap = ev->cap;
    mon_copy(mt->s, sizeof mt->s, text.ptr, text.len);
    m->markers++;

    bool opens;
    size_t stem = mon_span_stem(text.ptr, text.len, &opens);
    if (stem == 0 || stem >= MON_TEXT)
        return;
    if (opens) {
        if (m->nopen == MON_OPEN_SPANS)
            return;
        struct mon_text *o = &m->open_spans[m->nopen++];
        o->t = ev->time;
        mon_copy(o->s, sizeof o->s, text.ptr, stem);
        return;
    }
    for (unsigned i = m->nopen; i-- > 0;) {
        struct mon_text *o = &m->open_spans[i];
        if (strlen(o->s) == stem && memcmp(o->s, text.ptr, stem) == 0) {
            struct mon_span *sp = &m->spans[m->nspans++ % MON_SPANS];
            sp->t0 = o->t;
            sp->t1 = ev->time;
            memcpy(sp->s, o->s, sizeof sp->s);
            m->open_spans[i] = m->open_spans[--m->nopen];
            return;
        }
    }
}

/* ------------------------------------------------------------------------
 * Profiling
 * ------------------------------------------------------------------------ */

/* A NUL-terminated string at *p within [*p, end); false if none. */
static bool mon_cstr(const uint8_t **p, const uint8_t *end, struct els_str *s)
{
    const uint8_t *z = memchr(*p, 0, (size_t)(end - *p));
    if (z == NULL)
        return false;
    s->ptr = (const char *)*p;
    s->len = (size_t)(z - *p);
    *p = z + 1;
    return true;
}

static void mon_prof_cc(struct mon_model *m, const struct els_event *ev)
{
    const uint8_t *p = ev->payload, *end = p + ev->payload_len;
    if (ev->payload_len < 4)
        return;
    uint32_t id = be32(p);
    p += 4;
    struct els_str label, module;
    if (!mon_cstr(&p, end, &label) || !mon_cstr(&p, end, &module))
        return;
    struct mon_cc *c = mon_cc(m, id, true);
    if (c != NULL)
        mon_cc_set_names(m, c, label, module);
}


static void mon_prof_sample(struct mon_model *m, const struct els_event *ev)
{
    /* capability:32 tick:64 depth:8 ids:32*depth, innermost first */
    if (ev->payload_len < 13)
        return;
    unsigned depth = ev->payload[12];
    if (ev->payload_len < 13 + 4 * (size_t)depth || depth == 0)
        return;
    if (m->samples == NULL) {
        m->samples = calloc(MON_SAMPLES, sizeof *m->samples);
        if (m->samples == NULL)
            return;
        m->mem += MON_SAMPLES * sizeof *m->samples;
    }
    struct mon_sample *s = &m->samples[m->prof_samples % MON_SAMPLES];
    s->t = ev->time;
    s->depth = (uint8_t)(depth > MON_STACK ? MON_STACK : depth);
    for (unsigned i = 0; i < s->depth; i++)
        s->ids[i] = be32(ev->payload + 13 + 4 * i);
    m->prof_samples++;
    struct mon_cc *c = mon_cc(m, s->ids[0], true);
    if (c != NULL)
        c->samples++;
}

static void mon_heap_cc_sample(struct mon_model *m, const struct els_event *ev)
{
    /* profile:8 residency:64 depth:8 ids:32*depth */
    if (ev->payload_len < 10)
        return;
    unsigned depth = ev->payload[9];
    if (depth == 0 || ev->payload_len < 10 + 4 * (size_t)depth)
        return;
    uint64_t res = be64(ev->payload + 1);
    struct mon_cc *c = mon_cc(m, be32(ev->payload + 10), true);
    if (c == NULL)
        return;
    if (!m->sample_by_cc) {
        /* First cost-centre entry of this sample: the last sample's
         * figures become stale at once (Note [Stream-chosen keys] in
         * model_tables.c). */
        m->heap_gen++;
        m->sample_by_cc = true;
    }
    if (c->heap_gen != m->heap_gen) {
        c->heap = 0;
        c->heap_gen = m->heap_gen;
    }
    c->heap += res;
}

static void mon_heap_sample_end(struct mon_model *m)
{
    if (!m->in_sample)
        return;
    if (m->nstaging > 0) {
        memcpy(m->labels, m->staging, m->nstaging * sizeof m->staging[0]);
        m->nlabels = m->nstaging;
    }
    m->in_sample = false;
    m->heap_samples++;
}

static void mon_heap_sample_string(struct mon_model *m, uint64_t res,
                                   struct els_str label)
{
    /* Keep the MON_LABELS largest: replace the smallest if larger. */
    struct mon_label *slot = NULL;
    if (m->nstaging < MON_LABELS) {
        slot = &m->staging[m->nstaging++];
    } else {
        for (unsigned i = 0; i < MON_LABELS; i++)
            if (slot == NULL || m->staging[i].bytes < slot->bytes)
                slot = &m->staging[i];
        if (slot->bytes >= res)
            return;
    }
    slot->bytes = res;
    mon_copy(slot->s, sizeof slot->s, label.ptr, label.len);
}

/* ------------------------------------------------------------------------
 * Events
 * ------------------------------------------------------------------------ */

static void mon_recent(struct mon_text *ring, uint64_t n, const struct els_event *ev,
                       const char *s, size_t len)
{
    struct mon_text *t = &ring[n % MON_RECENT];
    t->t = ev->time;
    t->cap = ev->cap;
    mon_copy(t->s, sizeof t->s, s, len);
}

/* Note [Recent messages]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * The views show the last MON_RECENT user messages, and the busiest
 * programs post millions a second, nearly all of them overwritten in
 * the ring before anything reads it.  Copying each one's text cost a
 * quarter of the model's time on bench/App.hs's eventlog (bench_monitor:
 * about 1,700 MB/s copying, 2,300 MB/s not), so a message whose text
 * lies in the piece being fed (the parser hands out pointers into it)
 * records only where its text is, in msg_src[], and mon_model_feed()
 * copies the survivors' texts before it returns, while the piece is
 * still alive.  Between feed calls, so whenever anything reads the
 * model, every text is a copy.  A text anywhere else (an
 * event the parser assembled across pieces in its own buffer, which a
 * later event may reuse) is copied at once. */

static void mon_user_msg(struct mon_model *m, const struct els_event *ev)
{
    /* Decoded here, not by els_event_decode(): the busiest programs
     * post little else, and the text is just the payload, a trailing
     * NUL not counted (as els_event_decode() has it). */
    struct els_str text = { (const char *)ev->payload,
                            ev->payload != NULL ? ev->payload_len : 0 };
    if (text.len > 0 && text.ptr[text.len - 1] == '\0')
        text.len--;
    unsigned i = (unsigned)(m->user_messages++ % MON_RECENT);
    struct mon_text *t = &m->msgs[i];
    t->t = ev->time;
    t->cap = ev->cap;
    uintptr_t a = (uintptr_t)text.ptr;
    if (a >= m->feed_lo && a < m->feed_hi && text.len <= m->feed_hi - a) {
        m->msg_src[i] = text;
    } else {
        mon_copy(t->s, sizeof t->s, text.ptr, text.len);
        m->msg_src[i].ptr = NULL;
    }
}

/* The end of a feed call: copy the texts still only pointed at. */
static void mon_user_msgs_copy(struct mon_model *m)
{
    for (unsigned i = 0; i < MON_RECENT; i++) {
        struct els_str *src = &m->msg_src[i];
        if (src->ptr != NULL) {
            mon_copy(m->msgs[i].s, sizeof m->msgs[i].s, src->ptr, src->len);
            src->ptr = NULL;
        }
    }
}

static int mon_on_header(void *user, const struct els_parser *p)
{
    (void)p;
    struct mon_model *m = user;
    m->streams++;
    m->ended = false;
    return 0;
}

static int mon_on_end(void *user, uint64_t offset)
{
    (void)offset;
    struct mon_model *m = user;
    m->ended = true;
    return 0;
}

static int mon_on_event(void *user, const struct els_event *ev)
{
    struct mon_model *m = user;
    if (ev->tag == ELS_EV_BLOCK_MARKER)
        return 0;
    m->events++;
    m->by_class[ev->tag < 256 ? mon_classes[ev->tag] : MON_CLASS_OTHER]++;
    if (ev->time > m->now)
        m->now = ev->time;
    struct mon_gbin *gb = mon_gbin_at(m, ev->time);
    gb->events++;

    struct mon_cap *c = mon_cap(m, ev->cap);
    if (ev->tag == ELS_EV_USER_MSG) {
        mon_user_msg(m, ev);
        gb->user++;
        gb->threads = m->threads_used;
        return 0;
    }
    struct els_event_data d;
    int dr = els_event_decode(ev, &d);
    if (dr < 0)
        return 0;           /* short payload: counted, not interpreted */

    switch (ev->tag) {
    case ELS_EV_CREATE_THREAD:
        m->threads_created++;
        mon_thread_set(m, d.u.thread.thread, TH_RUNNABLE);
        break;
    case ELS_EV_RUN_THREAD:
        mon_thread_set(m, d.u.thread.thread, TH_RUNNING);
        if (c != NULL)
            mon_cap_set(m, c, CAP_RUN, ev->time);
        break;
    case ELS_EV_STOP_THREAD: {
        uint16_t st = d.u.stop_thread.status;
        if (st == 5)
            mon_thread_del(m, d.u.stop_thread.thread);
        else
            mon_thread_set(m, d.u.stop_thread.thread,
                           st <= 3 ? TH_RUNNABLE : TH_BLOCKED);
        if (c != NULL && c->state == CAP_RUN)
            mon_cap_set(m, c, CAP_IDLE, ev->time);
        break;
    }
    case ELS_EV_THREAD_RUNNABLE:
        mon_thread_set(m, d.u.thread.thread, TH_RUNNABLE);
        break;
    case ELS_EV_THREAD_WAKEUP:
        mon_thread_set(m, d.u.thread_cap.thread, TH_RUNNABLE);
        break;
    case ELS_EV_GC_START:
        m->gcs++;
        gb->gcs++;
        if (c != NULL) {
            c->gc_start = ev->time ? ev->time : 1;
            mon_cap_set(m, c, CAP_GC, ev->time);
        }
        break;
    case ELS_EV_GC_WORK:
        if (c != NULL)
            mon_cap_set(m, c, CAP_GC, ev->time);
        break;
    case ELS_EV_GC_DONE:
    case ELS_EV_GC_IDLE:
        if (c != NULL && c->gc_start == 0)
            mon_cap_set(m, c, CAP_IDLE, ev->time);
        break;
    case ELS_EV_GC_END:
        if (c != NULL) {
            if (c->gc_start != 0 && ev->time >= c->gc_start) {
                uint64_t p = ev->time - c->gc_start;
                m->gc_ns += p;
                c->gc_pause_ns += p;
                gb->gc_ns += p;
                if (p > m->pause_max)
                    m->pause_max = p;
                m->pauses[m->npauses++ % MON_PAUSES] = p;
                unsigned b = 0;
                while (b < MON_PAUSE_BUCKETS && (double)p / 1e9 > mon_pause_bounds[b])
                    b++;
                m->pause_hist[b]++;
            }
            c->gc_start = 0;
            mon_cap_set(m, c, CAP_IDLE, ev->time);
        }
        break;
    case ELS_EV_LOG_MSG: {
        struct els_note note;
        if (els_note_decode(ev, &note) == 0) {
            switch (note.kind) {
            case ELS_NOTE_DROPPED:
                m->dropped_units += note.units;
                m->dropped_bytes += note.bytes;
                break;
            case ELS_NOTE_CONSUMER_MISSED:
                m->missed_units += note.units;
                m->missed_bytes += note.bytes;
                break;
            case ELS_NOTE_JOINED_LATE:
                m->late_units += note.units;
                m->late_bytes += note.bytes;
                break;
            case ELS_NOTE_JOINED_AT_SNAPSHOT:
                m->joined_at_snapshot = true;
                break;
            default:
                break;
            }
            if (note.kind != ELS_NOTE_JOINED_AT_SNAPSHOT) {
                mon_recent(m->note_texts, m->notes, ev, note.text.ptr, note.text.len);
                m->notes++;
            }
        }
        break;
    }
    case ELS_EV_USER_MARKER:
        mon_marker(m, ev, d.u.text);
        gb->user++;
        break;
    case ELS_EV_RTS_IDENTIFIER:
        mon_copy(m->rts, sizeof m->rts, d.u.capset_text.text.ptr,
                 d.u.capset_text.text.len);
        break;
    case ELS_EV_PROGRAM_ARGS: {
        struct els_str list = d.u.capset_strings.strings, first;
        if (els_str_next(&list, &first)) {
            const char *b = first.ptr + first.len;
            while (b > first.ptr && b[-1] != '/')
                b--;
            mon_copy(m->program, sizeof m->program, b,
                     first.len - (size_t)(b - first.ptr));
        }
        break;
    }
    case ELS_EV_OSPROCESS_PID:
        m->pid = d.u.os_pid.pid;
        break;
    case ELS_EV_CAP_CREATE:
        mon_cap(m, d.u.cap.cap);
        break;
    case ELS_EV_SPARK_COUNTERS:
        if (c != NULL) {
            c->sp[SP_CREATED] = d.u.spark_counters.created;
            c->sp[SP_DUD] = d.u.spark_counters.dud;
            c->sp[SP_OVERFLOWED] = d.u.spark_counters.overflowed;
            c->sp[SP_CONVERTED] = d.u.spark_counters.converted;
            c->sp[SP_GCD] = d.u.spark_counters.gcd;
            c->sp[SP_FIZZLED] = d.u.spark_counters.fizzled;
            c->sp[SP_REMAINING] = d.u.spark_counters.remaining;
        }
        break;
    case ELS_EV_SPARK_CREATE: case ELS_EV_SPARK_DUD: case ELS_EV_SPARK_OVERFLOW:
    case ELS_EV_SPARK_RUN: case ELS_EV_SPARK_STEAL: case ELS_EV_SPARK_FIZZLE:
    case ELS_EV_SPARK_GC:
        m->spark_events++;
        break;
    case ELS_EV_HEAP_ALLOCATED:
        if (d.u.heap.bytes > m->heap_alloc) {
            gb->alloc += d.u.heap.bytes - m->heap_alloc;
            m->heap_alloc = d.u.heap.bytes;
        }
        break;
    case ELS_EV_HEAP_SIZE:
        m->heap_size = d.u.heap.bytes;
        gb->heap_size = m->heap_size;
        break;
    case ELS_EV_HEAP_LIVE:
        m->heap_live = d.u.heap.bytes;
        gb->heap_live = m->heap_live;
        break;
    case ELS_EV_HEAP_INFO_GHC:
        m->heap_max = d.u.heap_info.max_heap_size;
        break;
    case ELS_EV_HEAP_PROF_SAMPLE_BEGIN:
    case ELS_EV_HEAP_BIO_PROF_SAMPLE_BEGIN:
        mon_heap_sample_end(m);
        m->in_sample = true;
        m->nstaging = 0;
        m->sample_by_cc = false;
        break;
    case ELS_EV_HEAP_PROF_SAMPLE_END:
        mon_heap_sample_end(m);
        break;
    case ELS_EV_HEAP_PROF_SAMPLE_STRING:
        mon_heap_sample_string(m, d.u.heap_sample_string.residency,
                               d.u.heap_sample_string.label);
        break;
    case ELS_EV_HEAP_PROF_COST_CENTRE:
        mon_prof_cc(m, ev);
        break;
    case ELS_EV_HEAP_PROF_SAMPLE_COST_CENTRE:
        mon_heap_cc_sample(m, ev);
        break;
    case MON_EV_PROF_SAMPLE_COST_CENTRE:
        mon_prof_sample(m, ev);
        break;
    default:
        break;
    }
    gb->threads = m->threads_used;
    return 0;
}

/* ------------------------------------------------------------------------
 * Lifecycle and feeding
 * ------------------------------------------------------------------------ */

static void mon_clear_run(struct mon_model *m)
{
    for (unsigned c = 0; c < MON_MAX_CAPS; c++)
        free(m->caps[c].bins);
    for (uint32_t i = 0; i < m->nccs; i++) {
        free(m->ccs[i].label);
        free(m->ccs[i].module);
    }
    free(m->ccs);
    free(m->threads);
    free(m->samples);
    free(m->gbins);
}


int mon_model_new(struct mon_model **out)
{
    mon_key_init();
    mon_classes_init();
    struct mon_model *m = calloc(1, sizeof *m);
    if (m == NULL)
        return ELS_ENOMEM;
    const struct els_parse_callbacks cb = {
        .struct_size = sizeof cb,
        .on_header = mon_on_header,
        .on_event = mon_on_event,
        .on_end = mon_on_end,
    };
    int rc = els_parser_new(&m->parser, &cb, m, ELS_PARSE_RESTART);
    if (rc < 0) {
        free(m);
        return rc;
    }
    m->bin_ns = MON_BIN0_NS;
    m->gbins = calloc(MON_BINS, sizeof *m->gbins);
    if (m->gbins == NULL) {
        els_parser_free(m->parser);
        free(m);
        return ELS_ENOMEM;
    }
    *out = m;
    return 0;
}

void mon_model_free(struct mon_model *m)
{
    if (m == NULL)
        return;
    mon_clear_run(m);
    els_parser_free(m->parser);
    free(m);
}

void mon_model_reset(struct mon_model *m)
{
    struct els_parser *p = m->parser;
    struct mon_model keep = *m;
    mon_clear_run(m);
    els_parser_reset(p);
    memset(m, 0, sizeof *m);
    m->parser = p;
    m->bin_ns = MON_BIN0_NS;
    m->gbins = calloc(MON_BINS, sizeof *m->gbins);
    memcpy(m->spec, keep.spec, sizeof m->spec);
    memcpy(m->source_state, keep.source_state, sizeof m->source_state);
    m->connections = keep.connections;
}

int mon_model_feed(struct mon_model *m, const void *buf, size_t len)
{
    if (m->failed || m->gbins == NULL) {
        m->bytes_skipped += len;
        return ELS_EINVAL;
    }
    m->bytes += len;
    m->feed_lo = (uintptr_t)buf;
    m->feed_hi = m->feed_lo + len;
    int rc = els_parser_feed(m->parser, buf, len, NULL);
    mon_user_msgs_copy(m);
    m->feed_lo = m->feed_hi = 0;
    if (rc < 0) {
        struct els_parse_status st;
        els_parser_status(m->parser, &st);
        snprintf(m->error, sizeof m->error, "%s", st.error ? st.error : "malformed stream");
        m->failed = true;
        return ELS_EINVAL;
    }
    return 0;
}

const char *mon_model_error(const struct mon_model *m)
{
    return m->failed ? m->error : NULL;
}

void mon_model_set_source(struct mon_model *m, const char *spec,
                          const char *state)
{
    if (spec != NULL)
        snprintf(m->spec, sizeof m->spec, "%s", spec);
    snprintf(m->source_state, sizeof m->source_state, "%s", state);
}

void mon_model_note_connection(struct mon_model *m)
{
    m->connections++;
}


void mon_model_summary(const struct mon_model *m, struct mon_summary *out)
{
    *out = (struct mon_summary){
        .now_ns = m->now, .bytes = m->bytes, .events = m->events,
        .gcs = m->gcs, .threads_created = m->threads_created,
        .threads_alive = m->threads_used, .user_messages = m->user_messages,
        .markers = m->markers, .streams = m->streams, .caps = m->ncaps,
        .ended = m->ended, .probes = m->probes,
        .threads_untracked = m->threads_untracked,
        .ccs_refused = m->ccs_refused, .strings_cut = m->strings_cut,
        .memory = mon_model_memory(m),
    };
}
