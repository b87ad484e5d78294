/*
 * model_user.c: the text events of a stream (the model's user and loss
 * parts, model_impl.h): the program's user messages, of which the
 * recent ones are kept without copying each (Note [Recent messages]),
 * its markers and the spans they open and close, and the sink's in-band
 * notes (LOG_MSG), whose losses are counted and which say whether the
 * stream starts mid-run (Note [Mid-run streams] in model.c).  Not its
 * job: deciding which events come here (model.c's mon_on_event()), or
 * rendering them (render*.c).
 */
#include <string.h>

#include "model_impl.h"

/* ------------------------------------------------------------------------
 * User messages
 * ------------------------------------------------------------------------ */

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

void mon_user_msg(struct mon_model *m, const struct els_event *ev)
{
    /* Decoded here, not by els_event_decode(): the busiest programs
     * post little else, and the text is just the payload, a trailing
     * NUL not counted (as els_event_decode() has it). */
    struct els_str text = { (const char *)ev->payload,
                            ev->payload != NULL ? ev->payload_len : 0 };
    if (text.len > 0 && text.ptr[text.len - 1] == '\0')
        text.len--;
    unsigned i = (unsigned)(m->user.messages++ % MON_RECENT);
    struct mon_text *t = &m->user.msgs[i];
    t->t = ev->time;
    t->cap = ev->cap;
    uintptr_t a = (uintptr_t)text.ptr;
    if (a >= m->user.feed_lo && a < m->user.feed_hi && text.len <= m->user.feed_hi - a) {
        m->user.msg_src[i] = text;
    } else {
        mon_copy(t->s, sizeof t->s, text.ptr, text.len);
        m->user.msg_src[i].ptr = NULL;
    }
}

/* The end of a feed call: copy the texts still only pointed at. */
void mon_user_msgs_copy(struct mon_model *m)
{
    for (unsigned i = 0; i < MON_RECENT; i++) {
        struct els_str *src = &m->user.msg_src[i];
        if (src->ptr != NULL) {
            mon_copy(m->user.msgs[i].s, sizeof m->user.msgs[i].s, src->ptr, src->len);
            src->ptr = NULL;
        }
    }
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

void mon_marker(struct mon_model *m, const struct els_event *ev,
                struct els_str text)
{
    struct mon_text *mt = &m->user.marks[m->user.markers % MON_MARKS];
    mt->t = ev->time;
    mt->cap = ev->cap;
    mon_copy(mt->s, sizeof mt->s, text.ptr, text.len);
    m->user.markers++;

    bool opens;
    size_t stem = mon_span_stem(text.ptr, text.len, &opens);
    if (stem == 0 || stem >= MON_TEXT)
        return;
    if (opens) {
        if (m->user.nopen == MON_OPEN_SPANS)
            return;
        struct mon_text *o = &m->user.open_spans[m->user.nopen++];
        o->t = ev->time;
        mon_copy(o->s, sizeof o->s, text.ptr, stem);
        return;
    }
    for (unsigned i = m->user.nopen; i-- > 0;) {
        struct mon_text *o = &m->user.open_spans[i];
        if (strlen(o->s) == stem && memcmp(o->s, text.ptr, stem) == 0) {
            struct mon_span *sp = &m->user.spans[m->user.nspans++ % MON_SPANS];
            sp->t0 = o->t;
            sp->t1 = ev->time;
            memcpy(sp->s, o->s, sizeof sp->s);
            m->user.open_spans[i] = m->user.open_spans[--m->user.nopen];
            return;
        }
    }
}

/* ------------------------------------------------------------------------
 * The sink's notes
 * ------------------------------------------------------------------------ */

static void mon_recent(struct mon_text *ring, uint64_t n, const struct els_event *ev,
                       const char *s, size_t len)
{
    struct mon_text *t = &ring[n % MON_RECENT];
    t->t = ev->time;
    t->cap = ev->cap;
    mon_copy(t->s, sizeof t->s, s, len);
}

/* A LOG_MSG: the sink's in-band notes (the loss part). */
void mon_on_note(struct mon_model *m, const struct mon_ev *e)
{
    struct els_note note;
    if (els_note_decode(e->ev, &note) != 0)
        return;
    struct mon_loss_part *l = &m->loss;
    switch (note.kind) {
    case ELS_NOTE_DROPPED:
        l->loss_notes++;
        l->dropped_units += note.units;
        l->dropped_bytes += note.bytes;
        break;
    case ELS_NOTE_CONSUMER_MISSED:
        l->loss_notes++;
        l->missed_units += note.units;
        l->missed_bytes += note.bytes;
        break;
    case ELS_NOTE_JOINED_LATE:
        l->loss_notes++;
        m->run.midrun = true;
        l->late_units += note.units;
        l->late_bytes += note.bytes;
        break;
    case ELS_NOTE_JOINED_AT_SNAPSHOT:
        l->joined_at_snapshot = true;
        m->run.midrun = true;
        return;
    default:
        /* Not a loss (Note [Mid-run streams] in model.c): a flight
         * recorder's dump says which it is. */
        if (note.text.len >= 20 &&
            memcmp(note.text.ptr, "eventlog-sink: dump ", 20) == 0)
            m->run.midrun = true;
        break;
    }
    mon_recent(l->note_texts, l->notes, e->ev, note.text.ptr, note.text.len);
    l->notes++;
}
