/*
 * session.c: a control client's session, on the writer thread: its input
 * decoded into messages, each routed (hello and proof to auth.c, a
 * command to the control thread), and its answers, as frames for a
 * control-only client or in-band notes at the point in the stream where
 * the command took effect; all within consumer-memory= (Note [Control
 * memory]).
 *
 * Not this file's job: who may do what (auth.c), running commands
 * (worker.c), the byte layout (codec.c), sending stream bytes
 * (writer/).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/control_impl.h"
#include "control/sha256.h"
#include "eventlog-sink.h"
#include "base/log.h"

/* How long a client of a control=unix: socket has for its control-only
 * hello (Note [Control-only hello deadline]); a variable so that a test
 * can shorten it. */
unsigned elsi_ctl_hello_deadline_ms = 2000u;

/*
 * Note [Control memory]
 * ~~~~~~~~~~~~~~~~~~~~~
 * A control session holds memory of its own: the session (its decoder
 * keeps up to one 1024-byte frame), unread answer frames of a
 * control-only client (up to CTL_OUT_MAX) and in-band answers waiting
 * for a stream consumer to read up to them (up to CTL_OUT_MAX).  All of
 * it counts against consumer-memory=, with the stream consumers' private
 * bytes (Note [Consumer memory]), through elsi_consumer_memory_take():
 * the session when it is made, the answer buffer by its capacity (freed
 * once sent, so an idle session holds none), each note by its size.  So
 * 64 clients that send commands and read nothing hold at most
 * consumer-memory= between them, not 64 x 128 KiB.  A session whose
 * memory does not fit is closed, counted with the consumers closed for
 * memory (consumers_dropped_memory) and logged: its client sent more than
 * it read, and the program's memory is not the place to wait for it.  Its
 * share is CTL_OUT_MAX of each kind while the whole bound has room, less
 * when other consumers hold the rest.  The control thread's queue is
 * bounded separately (CTL_QUEUE_MAX jobs for the whole process).
 */

/* The session_free op. */
void elsi_ctl_session_free(struct els_writer *w, void *session)
{
    struct elsi_ctl_session *s = session;
    if (s == NULL)
        return;
    free(s->out);
    for (struct elsi_ctl_note *n = s->notes; n != NULL;) {
        struct elsi_ctl_note *next = n->next;
        free(n);
        n = next;
    }
    elsi_consumer_memory_give(w, s->charged);
    elsi_wipe(s->collector_want, sizeof s->collector_want);
    free(s);
}

/* A new session in a consumer's slot, its own size counted (Note
 * [Control memory]): 0, ELS_ENOMEM, or -ENOBUFS over consumer-memory=. */
int elsi_ctl_session_new(struct els_writer *w, void **slot)
{
    struct elsi_ctl_session *s;
    if (!elsi_consumer_memory_take(w, sizeof *s))
        return -ENOBUFS;
    s = calloc(1, sizeof *s);
    if (s == NULL) {
        elsi_consumer_memory_give(w, sizeof *s);
        return ELS_ENOMEM;
    }
    s->charged = sizeof *s;
    elsi_ctl_decoder_init(&s->dec);
    *slot = s;
    return 0;
}

/*
 * Note [Control-only hello deadline]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A client of a control=unix: socket gets nothing but answers, so one that
 * has not said it is a control-only client is waiting for something this
 * socket never sends (a stream: `eventlog-sink recv unix:CTL`), or is
 * holding one of the max-consumers= places on purpose.  Its first message
 * decides (the refusal in elsi_ctl_input()), and so does the clock:
 * a client whose control-only hello is not complete CTL_HELLO_DEADLINE_MS
 * after it was accepted, whatever it sent meanwhile (nothing, a partial
 * frame, bytes one at a time), gets the same one answer frame and is
 * closed.  The writer thread wakes for the deadline through the
 * consumer's retry timer (retry_at_ms, which the poll loop already
 * sleeps on; a control-only consumer has no other use for it).  On a
 * control=1 socket no deadline applies: a client that says nothing is a
 * stream consumer, which is what that socket serves.
 */
int elsi_ctl_endpoint_session(struct els_writer *w, struct elsi_consumer *c,
                              void **slot)
{
    int r = elsi_ctl_session_new(w, slot);
    if (r != 0)
        return r;
    struct elsi_ctl_session *s = *slot;
    s->endpoint_only = true;
    s->hello_by_ms = elsi_now_ms() + elsi_ctl_hello_deadline_ms;
    elsi_consumer_wake_at(c, s->hello_by_ms);
    return 0;
}

static void session_kill(struct els_writer *w, struct elsi_consumer *c,
                         const char *why)
{
    if (!elsi_consumer_dead(c))
        elsi_log_limited(elsi_writer_consumer_log(w), ELSI_LOG_INTERVAL_MS, ELS_LOG_WARN,
                         "%s: control client %" PRIu64 " closed: %s",
                         elsi_writer_endpoint(w), elsi_consumer_id(c), why);
    elsi_consumer_close(c);
}

/* Note [Control memory]: a session that does not fit is closed. */
static void session_over_memory(struct els_writer *w, struct elsi_consumer *c,
                                const char *what)
{
    if (!elsi_consumer_dead(c))
        elsi_consumer_over_memory(w, c, what);
    elsi_consumer_close(c);
}

/* Give back the answer buffer once everything in it is sent. */
static void out_drop(struct els_writer *w, struct elsi_ctl_session *s)
{
    elsi_consumer_memory_give(w, s->out_cap);
    s->charged -= s->out_cap;
    free(s->out);
    s->out = NULL;
    s->out_len = s->out_off = s->out_cap = 0;
}

void elsi_ctl_out_append(struct els_writer *w, struct elsi_consumer *c,
                         const uint8_t *p, size_t n)
{
    struct elsi_ctl_session *s = elsi_consumer_session(c);
    if (s->out_off > 0 && s->out_off == s->out_len)
        s->out_off = s->out_len = 0;
    if (s->out_len - s->out_off + n > CTL_OUT_MAX) {
        session_kill(w, c, "it does not read its answers");
        return;
    }
    if (s->out_off > 0) {
        memmove(s->out, s->out + s->out_off, s->out_len - s->out_off);
        s->out_len -= s->out_off;
        s->out_off = 0;
    }
    size_t need = s->out_len + n;
    if (need > s->out_cap) {
        size_t cap = s->out_cap ? s->out_cap : 1024;
        while (cap < need)
            cap *= 2;
        if (cap > CTL_OUT_MAX)
            cap = CTL_OUT_MAX;
        if (!elsi_consumer_memory_take(w, cap - s->out_cap)) {
            session_over_memory(w, c, "its unread answers");
            return;
        }
        uint8_t *grown = realloc(s->out, cap);
        if (grown == NULL) {
            elsi_consumer_memory_give(w, cap - s->out_cap);
            session_kill(w, c, "out of memory");
            return;
        }
        s->charged += cap - s->out_cap;
        s->out = grown;
        s->out_cap = cap;
    }
    memcpy(s->out + s->out_len, p, n);
    s->out_len += n;
}

/* Answer on c: a frame for a control-only client, else an in-band note
 * due after every unit committed so far. */
void elsi_ctl_answer(struct els_writer *w, struct elsi_consumer *c, unsigned kind,
                     uint32_t id, bool es, const char *label, int status,
                     const char *text)
{
    struct elsi_ctl_session *s = elsi_consumer_session(c);
    if (elsi_consumer_dead(c))
        return;
    if (s->control_only || s->endpoint_only) {
        uint8_t frame[ELSI_CTL_ANSWER_HEADER_BYTES + ELSI_CTL_MAX_ANSWER_TEXT];
        char full[ELSI_CTL_MAX_ANSWER_TEXT];
        if (status != 0)
            snprintf(full, sizeof full, "%s: %s", els_err_name(status),
                     text[0] ? text : els_strerror(status));
        else
            snprintf(full, sizeof full, "%s", text);
        size_t n = elsi_ctl_encode_answer(frame, sizeof frame,
                                          s->version != 0 ? s->version
                                                          : ELSI_CTL_VERSION,
                                          kind, id, status, full);
        elsi_ctl_out_append(w, c, frame, n);
        return;
    }
    if (s->notes_bytes + sizeof(struct elsi_ctl_note) > CTL_OUT_MAX) {
        /* Its answers wait for it to read the stream up to them. */
        session_kill(w, c, "it sends commands and does not read its stream");
        return;
    }
    if (!elsi_consumer_memory_take(w, sizeof(struct elsi_ctl_note))) {
        session_over_memory(w, c, "its in-band answers");
        return;
    }
    struct elsi_ctl_note *note = malloc(sizeof *note);
    if (note == NULL) {
        elsi_consumer_memory_give(w, sizeof *note);
        session_kill(w, c, "out of memory");
        return;
    }
    s->charged += sizeof *note;
    note->next = NULL;
    note->after_seq = elsi_writer_committed(w);
    char idtext[24] = "";
    if (!es)
        snprintf(idtext, sizeof idtext, " #%" PRIu32, id);
    if (status != 0)
        snprintf(note->text, sizeof note->text, "eventlog-sink control%s %s: "
                 "error %s: %s", idtext, label, els_err_name(status),
                 text[0] ? text : els_strerror(status));
    else
        snprintf(note->text, sizeof note->text, "eventlog-sink control%s %s: "
                 "ok%s%s", idtext, label, text[0] ? ": " : "", text);
    s->notes_bytes += sizeof *note;
    if (s->notes_tail != NULL)
        s->notes_tail->next = note;
    else
        s->notes = note;
    s->notes_tail = note;
}

/* The one answer a client of a control=unix: socket gets when it is not
 * a control-only client (docs/CONTROL.md); it is closed once that is
 * sent, and nothing it says is read any more. */
static void refuse_not_control_only(struct els_writer *w, struct elsi_consumer *c,
                                    unsigned kind, uint32_t id)
{
    struct elsi_ctl_session *s = elsi_consumer_session(c);
    elsi_ctl_answer(w, c, kind, id, false, "hello", ELS_EINVAL, "this socket serves "
                    "control-only clients: send a hello with the control-only flag "
                    "first (eventlog-sink ctl does); the eventlog is in the sink's "
                    "dumps");
    s->refused = true;
    elsi_consumer_stop_reading(c);
    elsi_consumer_wake_at(c, 0);
}

/* The due op. */
void elsi_ctl_due(struct els_writer *w, struct elsi_consumer *c,
                  void *session, uint64_t seq, bool at_end)
{
    struct elsi_ctl_session *s = session;
    /* Called before every unit: so it sees DATA_END before c passes it,
     * and nothing may follow that in the stream. */
    if (!s->ended && at_end)
        s->ended = true, s->end_seq = seq;
    while (s->notes != NULL && s->notes->after_seq <= seq &&
           !elsi_consumer_dead(c)) {
        struct elsi_ctl_note *n = s->notes;
        s->notes = n->next;
        if (s->notes == NULL)
            s->notes_tail = NULL;
        s->notes_bytes -= sizeof *n;
        s->charged -= sizeof *n;
        elsi_consumer_memory_give(w, sizeof *n);
        if (s->ended && seq > s->end_seq)
            elsi_log(ELS_LOG_DEBUG, "%s: consumer %" PRIu64 ": an answer came "
                     "after its stream ended: %s", elsi_writer_endpoint(w), elsi_consumer_id(c), n->text);
        else
            elsi_consumer_note_text(w, c, n->text);
        free(n);
    }
}

/* The serve_only op: a control-only client has no stream (delivery
 * counts it caught up, never holding a unit back), only answer frames. */
bool elsi_ctl_serve_only(struct els_writer *w, struct elsi_consumer *c,
                         void *session)
{
    struct elsi_ctl_session *s = session;
    if (!s->control_only && !s->endpoint_only)
        return false;
    if (s->endpoint_only && !s->control_only && !s->refused && !elsi_consumer_dead(c) &&
        elsi_now_ms() >= s->hello_by_ms) {
        /* Note [Control-only hello deadline]. */
        elsi_log_limited(elsi_writer_consumer_log(w), ELSI_LOG_INTERVAL_MS, ELS_LOG_WARN,
                         "%s: control client %" PRIu64 " sent no control-only "
                         "hello within %u ms: refused", elsi_writer_endpoint(w), elsi_consumer_id(c),
                         elsi_ctl_hello_deadline_ms);
        refuse_not_control_only(w, c, ELSI_CTL_KIND_HELLO_ANSWER, 0);
    }
    while (!elsi_consumer_dead(c) && s->out_off < s->out_len) {
        ssize_t n = elsi_consumer_send(c, s->out + s->out_off,
                                       s->out_len - s->out_off);
        if (n == -EAGAIN) {
            if (s->refused)
                elsi_consumer_close(c);     /* told as much as it takes */
            return true;
        }
        if (n < 0) {
            elsi_consumer_close(c);     /* the client went away */
            return true;
        }
        s->out_off += (size_t)n;
    }
    if (!elsi_consumer_dead(c) && s->out_cap > 0)
        out_drop(w, s);
    /* A client that has shut its side (or was refused) and has nothing
     * more coming is done (over TCP only POLLIN says so: nothing is
     * written to it). */
    if (elsi_consumer_input_ended(c) && s->in_flight == 0 &&
        s->out_off == s->out_len)
        elsi_consumer_close(c);
    return true;
}

static void dispatch(struct els_writer *w, struct elsi_control *ctl,
                     struct elsi_consumer *c, const struct elsi_ctl_msg *m)
{
    struct elsi_ctl_session *s = elsi_consumer_session(c);
    bool es = m->type == ELSI_CTL_MSG_ES;
    uint32_t id = es ? 0 : m->request_id;
    char label[300];
    char why[200];
    const char *args = "";
    struct elsi_ctl_command cmd;
    struct elsi_ctl_command *found = NULL;

    if (es) {
        snprintf(label, sizeof label, "%.*s command %u",
                 (int)(m->ns_len < 200 ? m->ns_len : 200), m->ns,
                 (unsigned)m->command_id);
        if (elsi_ctl_lookup_id(m->ns, m->ns_len, m->command_id, &cmd))
            found = &cmd;
    } else {
        found = elsi_ctl_lookup_text(m->text, label, sizeof label, &args, &cmd);
    }
    int status = elsi_ctl_allowed(ctl, c, why, sizeof why);
    if (status != 0) {
        elsi_ctl_answer(w, c, ELSI_CTL_KIND_COMMAND_ANSWER, id, es, label, status, why);
        return;
    }
    if (found == NULL) {
        elsi_ctl_answer(w, c, ELSI_CTL_KIND_COMMAND_ANSWER, id, es, label, ELS_EINVAL,
                        "unknown command (send \"help\" for the list)");
        return;
    }
    if (s->in_flight >= CTL_SESSION_IN_FLIGHT) {
        elsi_ctl_answer(w, c, ELSI_CTL_KIND_COMMAND_ANSWER, id, es, label, ELS_EBUSY,
                        "too many commands of this client are waiting; send the "
                        "next after an answer");
        return;
    }
    struct elsi_ctl_job *j = calloc(1, sizeof *j);
    if (j == NULL) {
        elsi_ctl_answer(w, c, ELSI_CTL_KIND_COMMAND_ANSWER, id, es, label, ELS_ENOMEM, "");
        return;
    }
    j->ctl = ctl;
    j->consumer_id = elsi_consumer_id(c);
    j->request_id = id;
    j->es = es;
    j->cmd = *found;
    snprintf(j->label, sizeof j->label, "%s", label);
    snprintf(j->args, sizeof j->args, "%s", args);
    pthread_mutex_lock(&ctl->mu);
    ctl->refs++;
    pthread_mutex_unlock(&ctl->mu);
    int r = elsi_ctl_worker_submit(j);
    if (r != 0) {
        elsi_ctl_unref(ctl);
        free(j);
        elsi_ctl_answer(w, c, ELSI_CTL_KIND_COMMAND_ANSWER, id, es, label, r,
                        r == ELS_EBUSY ? "the control thread is busy; try again" : "");
        return;
    }
    if (found->flags & ELSI_CTL_ANSWER_FIRST)
        elsi_ctl_answer(w, c, ELSI_CTL_KIND_COMMAND_ANSWER, id, es, label, 0,
                        "accepted; the stream ends now");
    else
        s->in_flight++;
}

/* The input op: a collector's proof (Note [Collector proof]), or a
 * client's control messages when control=1. */
bool elsi_ctl_input(struct els_writer *w, void *state,
                    struct elsi_consumer *c, void **slot)
{
    struct elsi_control *ctl = state;
    if (*slot != NULL && ((struct elsi_ctl_session *)*slot)->collector) {
        elsi_ctl_collector_input(w, c, *slot);
        return true;
    }
    if (ctl == NULL || !elsi_consumer_accepted(c))
        return false;
    if (*slot == NULL) {
        int r = elsi_ctl_session_new(w, slot);
        if (r == -ENOBUFS) {
            session_over_memory(w, c, "a control session");
            return true;
        }
        if (r != 0) {
            session_kill(w, c, "out of memory");
            return true;
        }
    }
    struct elsi_ctl_session *s = *slot;
    if (s->refused) {
        /* Told and closing: what it says now is not read. */
        elsi_consumer_stop_reading(c);
        return true;
    }
    if (!s->checked)
        elsi_ctl_check_peer(w, c);
    const uint8_t *data;
    ssize_t n = elsi_consumer_read(w, c, CTL_READ_BYTES, &data);
    if (n < 0)
        elsi_consumer_close(c);
    if (n <= 0)
        return true;
    size_t off = 0;
    struct elsi_ctl_msg *msg = &s->msg;
    while (off < (size_t)n && !elsi_consumer_dead(c)) {
        bool got = false;
        off += elsi_ctl_decode(&s->dec, data + off, (size_t)n - off,
                               msg, &got);
        if (!got)
            continue;
        if (s->endpoint_only && !s->control_only &&
            !(msg->type == ELSI_CTL_MSG_HELLO &&
              (msg->flags & ELSI_CTL_HELLO_CONTROL_ONLY))) {
            /* It could only be waiting for a stream this socket never
             * sends: say so, and close once it has the answer. */
            refuse_not_control_only(w, c, msg->type == ELSI_CTL_MSG_HELLO
                                              ? ELSI_CTL_KIND_HELLO_ANSWER
                                              : ELSI_CTL_KIND_COMMAND_ANSWER,
                                    msg->type == ELSI_CTL_MSG_COMMAND
                                        ? msg->request_id : 0);
            break;
        }
        switch (msg->type) {
        case ELSI_CTL_MSG_HELLO:
        case ELSI_CTL_MSG_HELLO_V1:
            elsi_ctl_on_hello(w, ctl, c, msg);
            break;
        case ELSI_CTL_MSG_PROOF:
            elsi_ctl_on_proof(w, ctl, c, msg);
            break;
        case ELSI_CTL_MSG_COMMAND:
        case ELSI_CTL_MSG_ES:
            dispatch(w, ctl, c, msg);
            break;
        case ELSI_CTL_MSG_ERROR:
            /* Without a frame there is no request id to repeat. */
            elsi_ctl_answer(w, c, ELSI_CTL_KIND_COMMAND_ANSWER, msg->request_id,
                            msg->request_id == 0, "(malformed)", msg->error,
                            msg->error_text);
            break;
        }
    }
    return true;
}
