/*
 * recorder.c: the flight recorder's side of the writer (ring: and any other
 * ELS_SINK_RECORD sink).  Keeps a usable start in the window by asking the
 * producer for join snapshots, and writes the window out on request as a
 * stream of its own.  Not this file's job: naming and opening dump files
 * (the sink), sending bytes (consumer.c), eviction (release.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "writer/writer_impl.h"
#include "eventlog-sink.h"
#include "base/log.h"
#include "queue/unitq.h"
#include "base/fdutil.h"
#include "writer/trigger.h"

/*
 * Note [Flight recorder]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * A RECORD sink has no consumers: the queue itself is the recording.  The
 * producers write into it as usual and the oldest units give way only when
 * a new one needs the room (below); they count as sent, since keeping
 * them for a while is all this sink promises.
 *
 * A dump must be a valid eventlog on its own, so it cannot simply begin
 * with the oldest retained unit: readers reject blocks about threads and
 * tasks whose creation they never saw (Note [Late joiners]).  A dump
 * therefore starts at the stream's own start while that is still queued,
 * and otherwise at the oldest retained join unit, and sends the header,
 * that snapshot, every unit after it up to the dump point, and the end
 * marker, skipping later join units.  To keep such a start near the back
 * of the window, like the generations of Go's flight recorder,
 * elsi_recorder_tick() asks the producer for a join snapshot whenever the
 * newest usable start is more than a quarter of the window behind the
 * head (or gone), at most once until the answer comes or a second
 * passes.  So a dump covers at least the newest three quarters of the
 * window minus what the queue keeps free for the next unit, and the memory
 * held is size= (the queue, snapshots included) plus the dump's private
 * bytes (an end marker, a note).  Without a snapshot source (a stock RTS)
 * a dump of a window whose start was evicted starts at the oldest unit,
 * after a note saying so, as a late joiner would.
 *
 * Eviction is the producers' job here: with no consumer to wait for, a
 * producer that finds no room evicts the oldest committed unit itself
 * rather than drop its own.  While a dump is being written (dump_active,
 * under the lock) the dump reads queued bytes without the lock (Note [Queue
 * locking]), so a producer evicts only units below dump_floor, which the
 * writer thread advances as the dump writes them; past that it drops its
 * own unit (queue-full, counted and noted like any loss).  The writer
 * thread never cuts a dump loose, which would lose its start.
 *
 * A dump is written by a consumer on the writer thread, so asking for one
 * never blocks a capability; els_writer_dump() waits for the answer.
 * Requests that arrive while a dump is being written are answered by the
 * next one; a dump covers the units committed when it started.  At the
 * end of the stream (once no producer is in flight) one last dump is
 * written, unless the sink declines (at-exit=0), within the stop
 * deadline.
 *
 * With dump-on= the writer thread also reads every committed unit (Note
 * [Triggered dumps] in writer/trigger.c) and starts a dump itself
 * when a condition met after= ago asks for one.  It reads a unit without
 * the lock as a dump does, and producers likewise evict nothing from the
 * unit being read (eval_seq) while it is read.
 *
 * Every dump ends in one of two ways, each answered to whoever asked and
 * counted: written whole, then made durable and given its final name by
 * the sink (dump_close; lib/sinks/ring.c's Note [A dump's name]), or failed, and
 * then removed.  The fsync and rename happen on the writer thread
 * without the lock, after the dump stopped reading the queue, so that
 * producers never wait for a disk.  A dump is refused before any file
 * is opened, with an answer saying why, when max-dumps= dumps were
 * written (whoever asks: els_writer_dump(), a control command, a
 * webhook through one, a signal, a condition; the dump at the end is not
 * bounded by it, at-exit= decides it) or when nothing was recorded (the
 * stream never started: a program whose next sink failed to open closes
 * this one at once), so an empty file never passes for a recording.
 */

/* How long a request for a join snapshot may go unanswered before the
 * recorder asks again. */
#define RECORDER_ASK_AGAIN_MS 1000u

static bool is_recorder(const struct els_writer *w)
{
    return w->ops->style == ELS_SINK_RECORD;
}

int elsi_writer_dump_enter(struct els_writer *w)
{
    if (!is_recorder(w))
        return ELS_EINVAL;
    pthread_mutex_lock(&w->lock);
    if (w->life.stopping) {
        pthread_mutex_unlock(&w->lock);
        return ELS_ESTOPPED;
    }
    /* Counted as in flight so that close waits for this call to leave
     * before freeing w (Note [Producers in flight]). */
    w->life.producers++;
    pthread_mutex_unlock(&w->lock);
    return 0;
}

int elsi_writer_dump_wait(struct els_writer *w, char *name, size_t name_len)
{
    pthread_mutex_lock(&w->lock);
    uint64_t ticket = ++w->rec.dump_tickets;
    if (elsi_writer_need_wake(w))
        elsi_writer_send_wake(w);
    while (w->rec.dump_answered < ticket && !w->life.stopping)
        pthread_cond_wait(&w->changed, &w->lock);
    bool answered = w->rec.dump_answered >= ticket;
    int r = answered ? w->rec.dump_result : ELS_ESTOPPED;
    /* The file, or why there is none. */
    if (name != NULL && name_len > 0)
        snprintf(name, name_len, "%s", answered ? w->rec.dump_name
                                                : "the recorder stopped");
    if (--w->life.producers == 0 && w->life.stopping)
        pthread_cond_broadcast(&w->life.producers_left);
    pthread_mutex_unlock(&w->lock);
    return r;
}

int els_writer_dump(struct els_writer *w, char *name, size_t name_len)
{
    if (w == NULL)
        return ELS_EINVAL;
    int r = elsi_writer_dump_enter(w);
    return r != 0 ? r : elsi_writer_dump_wait(w, name, name_len);
}

/* Answer the requests a dump was serving: its file, or why it failed.
 * Lock held. */
static void dump_answer(struct els_writer *w, uint64_t serving, int result,
                        const char *name)
{
    if (serving > w->rec.dump_answered) {
        w->rec.dump_answered = serving;
        w->rec.dump_result = result;
        snprintf(w->rec.dump_name, sizeof w->rec.dump_name, "%s", name);
        pthread_cond_broadcast(&w->changed);
    }
}

/* Drain the sink's signal descriptor for a dump that is not written
 * (Note [Dump on a signal] in lib/sinks/ring.c: it stays readable until drained),
 * without blocking whatever the descriptor is.  Was anything read? */
static bool dump_drain_signal(struct els_writer *w)
{
    int fd = w->ops->listen_fd != NULL ? w->ops->listen_fd(w->sink) : -1;
    bool any = false;
    struct pollfd p = { .fd = fd, .events = POLLIN };
    char buf[256];
    while (fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & POLLIN) &&
           read(fd, buf, sizeof buf) > 0)
        any = true;
    return any;
}

/* Past max-dumps= (which does not bound the dump at the end)?  Then
 * ELS_ELIMIT, with why. */
static int dump_over_limit(struct els_writer *w, enum els_dump_reason reason,
                           char *why, size_t why_len)
{
    if (reason == ELS_DUMP_EXIT || w->rec.max_dumps == 0 ||
        w->rec.dumps_counted < w->rec.max_dumps)
        return 0;
    snprintf(why, why_len, "max-dumps=%u reached: %u dumps written, no more",
             w->rec.max_dumps, w->rec.dumps_counted);
    return ELS_ELIMIT;
}

/* Remove a dump's file that was opened and will not be written (fd
 * closed by the caller). */
static void dump_discard(struct els_writer *w, int fd, char *name, size_t name_len)
{
    if (w->ops->dump_close != NULL)
        (void)w->ops->dump_close(w->sink, fd, 0, name, name_len);
    else
        unlink(name);
}

/* A dump that is not written (refused, or its file could not be
 * opened): counted, said, and answered to whoever asked (serving). */
static void dump_not_written(struct els_writer *w, enum els_dump_reason reason,
                             uint64_t serving, int r, const char *why)
{
    static const char *const asker[] = {
        [ELS_DUMP_REQUEST] = "a request", [ELS_DUMP_SIGNAL] = "the signal",
        [ELS_DUMP_EXIT] = "the end of the stream",
    };
    const char *who = w->rec.dump_nth != 0 ? "a condition" : asker[reason];
    if (w->rec.dump_nth != 0)
        elsi_log(ELS_LOG_WARN, "%s: dump %u (%s) not written: %s", w->endpoint,
                 w->rec.dump_nth, w->rec.dump_cause, why);
    else
        elsi_log(ELS_LOG_WARN, "%s: no dump for %s: %s", w->endpoint, who, why);
    pthread_mutex_lock(&w->lock);
    if (r == ELS_ELIMIT)
        w->stats.st.dumps_refused++;
    else
        w->stats.st.dumps_failed++;
    dump_answer(w, serving, r, why);
    pthread_mutex_unlock(&w->lock);
    w->rec.dump_nth = 0;
}

/* Open a dump for reason and start its consumer; the caller set
 * rec.dump_nth and rec.dump_cause for a triggered one. */
static void dump_start(struct els_writer *w, enum els_dump_reason reason,
                       uint64_t serving)
{
    int fd = -1;
    char name[sizeof w->rec.dump_file], why[sizeof w->rec.dump_name];
    name[0] = '\0';
    int r = dump_over_limit(w, reason, why, sizeof why);
    if (r != 0) {
        if (reason == ELS_DUMP_SIGNAL && !dump_drain_signal(w))
            return;     /* no signal after all: nothing asked */
        dump_not_written(w, reason, serving, r, why);
        return;
    }
    /* Opened first even when nothing was recorded: the sink drains its
     * signal and knows whether a dump at the end is wanted at all. */
    r = w->ops->dump_open(w->sink, reason, &fd, name, sizeof name);
    if (r == -ECANCELED) {
        pthread_mutex_lock(&w->lock);
        dump_answer(w, serving, r, "");
        pthread_mutex_unlock(&w->lock);
        return;
    }
    if (r != 0) {
        snprintf(why, sizeof why, "cannot open a dump: %s", els_strerror(r));
        dump_not_written(w, reason, serving, r, why);
        return;
    }

    pthread_mutex_lock(&w->lock);
    bool recorded = w->queue.header != NULL;
    pthread_mutex_unlock(&w->lock);
    if (!recorded) {
        dump_discard(w, fd, name, sizeof name);
        elsi_close(fd);
        dump_not_written(w, reason, serving, -ENODATA, "nothing was recorded: "
                         "the stream never started");
        return;
    }

    pthread_mutex_lock(&w->lock);
    struct elsi_unitq *uq = &w->queue.uq;
    uint64_t start = uq->tail_seq, join = JOIN_NONE;
    bool from_start = w->queue.released_units == 0;
    if (!from_start) {
        for (uint64_t s = uq->tail_seq; s < uq->committed_seq; s++) {
            if (elsi_unitq_unit(uq, s)->kind == ELSI_UNIT_KIND_JOIN) {
                start = join = s;
                break;
            }
        }
    }
    uint64_t end = uq->committed_seq;
    /* Producers evict only what the dump has written. */
    atomic_store_explicit(&w->rec.dump_floor, start, memory_order_release);
    w->rec.dump_active = true;
    uint64_t missed_units = w->queue.released_units, missed_bytes = w->queue.released_bytes;
    pthread_mutex_unlock(&w->lock);

    struct elsi_consumer *c = elsi_consumer_attach_dump(w, fd, start, join, end);
    if (c == NULL) {    /* closed fd; nothing written */
        dump_discard(w, -1, name, sizeof name);
        pthread_mutex_lock(&w->lock);
        w->rec.dump_active = false;
        pthread_mutex_unlock(&w->lock);
        dump_not_written(w, reason, serving, ELS_ENOMEM,
                         "out of memory for the dump's consumer");
        return;
    }
    if (!from_start && join == JOIN_NONE)
        elsi_consumer_note_missed(w, c, " (a dump without a snapshot)",
                                  missed_units, missed_bytes);
    w->rec.dumping = c;
    w->rec.dump_serving = serving;
    w->rec.dump_why = reason;
    snprintf(w->rec.dump_file, sizeof w->rec.dump_file, "%s", name);
    elsi_log(ELS_LOG_DEBUG, "%s: dumping units %" PRIu64 "-%" PRIu64 " to %s",
             w->endpoint, start, end, name);
}

void elsi_dump_service(struct els_writer *w, bool signalled)
{
    if (!is_recorder(w) || w->rec.dumping != NULL)
        return;
    pthread_mutex_lock(&w->lock);
    uint64_t tickets = w->rec.dump_tickets;
    bool asked = tickets > w->rec.dump_answered;
    /* The last dump waits for the last unit: no producer in flight. */
    bool at_end = w->life.stopping && !w->rec.exit_dumped && w->life.producers == 0;
    pthread_mutex_unlock(&w->lock);
    w->rec.dump_nth = 0;
    if (asked) {
        dump_start(w, ELS_DUMP_REQUEST, tickets);
    } else if (signalled) {
        dump_start(w, ELS_DUMP_SIGNAL, 0);
    } else if (at_end) {
        w->rec.exit_dumped = true;
        dump_start(w, ELS_DUMP_EXIT, 0);
    }
}

bool elsi_dump_pending(struct els_writer *w)
{
    bool armed = w->rec.trigger != NULL &&
                 elsi_trigger_due(w->rec.trigger, 0, true, NULL);
    return is_recorder(w) && (w->rec.dumping != NULL || !w->rec.exit_dumped || armed ||
                              w->rec.dump_tickets > w->rec.dump_answered);
}

void elsi_dump_ended(struct els_writer *w, struct elsi_consumer *c)
{
    if (c == w->rec.dumping)
        w->rec.dump_active = false;
}

void elsi_dump_finish(struct els_writer *w, struct elsi_consumer *c)
{
    if (c != w->rec.dumping)
        return;
    int r = c->dump_done ? 0 : c->dump_error != 0 ? c->dump_error : ELS_ESTOPPED;
    char file[sizeof w->rec.dump_file], why[sizeof w->rec.dump_name];
    snprintf(file, sizeof file, "%s", w->rec.dump_file);
    if (w->ops->dump_close != NULL) {
        int rc = w->ops->dump_close(w->sink, c->fd, r == 0, file, sizeof file);
        if (r == 0)
            r = rc;
    } else if (r != 0) {
        unlink(file);   /* half a dump is no eventlog */
    }
    bool counted = r == 0 && w->rec.dump_why != ELS_DUMP_EXIT;
    if (r != 0) {
        snprintf(why, sizeof why, "the dump to %.3800s failed: %s", w->rec.dump_file,
                 els_strerror(r));
        elsi_log(ELS_LOG_WARN, "%s: %s; no file is left", w->endpoint, why);
    } else if (w->rec.dump_nth != 0) {
        elsi_log(ELS_LOG_INFO, "%s: dump %u: %s: %s", w->endpoint,
                 w->rec.dump_nth, w->rec.dump_cause, file);
    } else if (w->rec.dump_why == ELS_DUMP_EXIT) {
        elsi_log(ELS_LOG_INFO, "%s: dumped the recording to %s", w->endpoint, file);
    }
    if (counted) {
        w->rec.dumps_counted++;
        /* Requests and signals count against the conditions' max-dumps=
         * too (the conditions count their own). */
        if (w->rec.trigger != NULL && w->rec.dump_nth == 0)
            elsi_trigger_other_dump(w->rec.trigger);
    }
    pthread_mutex_lock(&w->lock);
    w->rec.dumping = NULL;
    w->rec.dump_active = false;
    if (r == 0)
        w->stats.st.dumps_written++;
    else
        w->stats.st.dumps_failed++;
    dump_answer(w, w->rec.dump_serving, r, r == 0 ? file : why);
    pthread_mutex_unlock(&w->lock);
    w->rec.dump_nth = 0;
}

void elsi_recorder_tick(struct els_writer *w)
{
    if (!is_recorder(w))
        return;
    uint64_t now = elsi_now_ms();
    pthread_mutex_lock(&w->lock);
    struct elsi_unitq *uq = &w->queue.uq;
    els_snapshot_request_fn request = w->queue.snapshot_request;
    void *ctx = w->queue.snapshot_ctx;
    bool ask = false;
    if (request != NULL && !w->life.stopping && w->queue.header != NULL) {
        bool join_kept = w->queue.join_seq != JOIN_NONE && w->queue.join_seq >= uq->tail_seq;
        uint64_t anchor = 0;
        bool have_anchor = true;
        /* Measured in bytes copied in, as the byte buffer's offsets once
         * were: those offsets also jump (Note [The queue's memory]). */
        if (join_kept)
            anchor = w->queue.join_at;
        else if (w->queue.released_units == 0)
            anchor = uq->copied_in - uq->buf_bytes;    /* the stream's own start */
        else
            have_anchor = false;
        bool stale = !have_anchor || uq->copied_in - anchor > uq->cap / 4;
        bool waiting = w->rec.recorder_asked && w->rec.recorder_asked_join == w->queue.join_seq &&
                       now - w->rec.recorder_asked_ms < RECORDER_ASK_AGAIN_MS;
        if (stale && !waiting) {
            ask = true;
            w->rec.recorder_asked = true;
            w->rec.recorder_asked_join = w->queue.join_seq;
            w->rec.recorder_asked_ms = now;
        }
    }
    pthread_mutex_unlock(&w->lock);
    if (ask)
        request(ctx);
}

// ---------------------------------------------------------------------------
// Triggered dumps (Note [Triggered dumps] in writer/trigger.c)
// ---------------------------------------------------------------------------

/* The value of the sink option key as the spec gave it, or NULL. */
static const char *spec_option(const struct elsi_spec *spec, const char *key)
{
    for (size_t i = 0; i < spec->n_options; i++)
        if (strcmp(spec->option_keys[i], key) == 0)
            return spec->option_values[i];
    return NULL;
}

int elsi_trigger_setup(struct els_writer *w)
{
    if (!is_recorder(w))
        return 0;
    struct elsi_trigger_config cfg;
    char err[256];
    /* The sink checked these at open; a RECORD sink that does not declare
     * them never has them. */
    const char *max_dumps = spec_option(&w->spec, "max-dumps");
    if (elsi_trigger_parse(spec_option(&w->spec, "dump-on"),
                           spec_option(&w->spec, "after"),
                           spec_option(&w->spec, "cooldown"),
                           max_dumps, &cfg, err, sizeof err) != 0)
        return 0;
    /* max-dumps= bounds every dump but the one at the end (Note [Flight
     * recorder]); without it, only the conditions' dumps are bounded, by
     * its default. */
    w->rec.max_dumps = max_dumps != NULL ? cfg.max_dumps : 0;
    if (cfg.n_conds == 0)
        return 0;
    return elsi_trigger_new(&w->rec.trigger, &cfg);
}

void elsi_trigger_teardown(struct els_writer *w)
{
    elsi_trigger_free(w->rec.trigger);
    w->rec.trigger = NULL;
}

/* Read every unit committed since the last round.  A unit is read without
 * the lock, like a dump reads it (Note [Queue locking]); eval_seq keeps
 * producers from evicting it meanwhile.  Units evicted before their turn
 * (the writer thread fell a whole window behind) are not read. */
static void trigger_read_units(struct els_writer *w, uint64_t now)
{
    struct elsi_trigger *t = w->rec.trigger;
    struct elsi_unitq *uq = &w->queue.uq;
    for (;;) {
        pthread_mutex_lock(&w->lock);
        if (!w->rec.trigger_header_fed && w->queue.header != NULL) {
            /* The header is kept apart and never freed before the writer
             * (producer.c's cache_header). */
            const uint8_t *h = w->queue.header;
            size_t hl = w->queue.header_len;
            pthread_mutex_unlock(&w->lock);
            elsi_trigger_header(t, h, hl);
            w->rec.trigger_header_fed = true;
            continue;
        }
        uint64_t seq = w->rec.eval_next;
        if (seq < uq->tail_seq) {
            w->stats.st.trigger_units_missed += uq->tail_seq - seq;
            seq = uq->tail_seq;
        }
        uint64_t lost = 0;
        for (int i = 0; i < ELS_DROP__COUNT; i++)
            lost += w->stats.st.units_dropped[i];
        if (seq >= uq->committed_seq || !w->rec.trigger_header_fed) {
            w->rec.eval_next = seq;
            pthread_mutex_unlock(&w->lock);
            elsi_trigger_loss(t, lost, now);
            return;
        }
        const struct elsi_unit *u = elsi_unitq_unit(uq, seq);
        struct iovec iov[2] = { { NULL, 0 }, { NULL, 0 } };
        bool join = u->kind == ELSI_UNIT_KIND_JOIN;
        int n = join ? 0 : elsi_unitq_iov(uq, u, 0, iov);
        w->rec.eval_seq = seq;
        w->rec.eval_active = true;
        pthread_mutex_unlock(&w->lock);
        /* A join unit restates the program's state: nothing happened in
         * it. */
        if (!join && n > 0)
            elsi_trigger_unit(t, iov[0].iov_base, iov[0].iov_len,
                              n > 1 ? iov[1].iov_base : NULL,
                              n > 1 ? iov[1].iov_len : 0, now);
        pthread_mutex_lock(&w->lock);
        w->rec.eval_active = false;
        w->rec.eval_next = seq + 1;
        pthread_mutex_unlock(&w->lock);
    }
}

/* The evaluator's counts into the writer's stats.  Lock held. */
static void trigger_publish(struct els_writer *w)
{
    struct elsi_trigger_counts c;
    elsi_trigger_counts(w->rec.trigger, &c);
    w->stats.st.trigger_units_read = c.units;
    w->stats.st.trigger_units_bad = c.bad_units;
    w->stats.st.trigger_fired = c.fired;
    w->stats.st.trigger_suppressed = c.suppressed;
    w->stats.st.trigger_dumps = c.dumps;
}

void elsi_trigger_service(struct els_writer *w)
{
    struct elsi_trigger *t = w->rec.trigger;
    if (t == NULL)
        return;
    uint64_t now = elsi_now_ms();
    trigger_read_units(w, now);
    pthread_mutex_lock(&w->lock);
    bool ending = w->life.stopping;
    trigger_publish(w);
    pthread_mutex_unlock(&w->lock);
    if (w->rec.dumping != NULL || !elsi_trigger_due(t, now, ending, NULL))
        return;
    uint64_t at = elsi_trigger_cause_time(t);
    w->rec.dump_nth = elsi_trigger_take(t, w->rec.dump_cause,
                                        sizeof w->rec.dump_cause);
    pthread_mutex_lock(&w->lock);
    trigger_publish(w);
    pthread_mutex_unlock(&w->lock);
    /* Not written (refused, or failed to open): dump_start said why.
     * Written: elsi_dump_finish() names its file once it has its name. */
    unsigned nth = w->rec.dump_nth;
    dump_start(w, ELS_DUMP_REQUEST, 0);
    if (w->rec.dumping != NULL)
        elsi_consumer_note(w, w->rec.dumping, at, "eventlog-sink: dump %u: %.200s",
                           nth, w->rec.dump_cause);
}

uint64_t elsi_trigger_wake_ms(struct els_writer *w)
{
    uint64_t at = 0;
    if (w->rec.trigger != NULL)
        elsi_trigger_due(w->rec.trigger, 0, false, &at);
    return at;
}
