/*
 * loop.c: the writer thread.  One poll() loop per writer takes units out
 * of the queue and hands them to every consumer at its own pace, with
 * non-blocking I/O: it accepts the clients of a listening sink, dials (and
 * redials) a connect-out sink, feeds a callback sink, notices consumers
 * that hang up, sleeps when there is nothing to do (woken by producers
 * through a pipe), and at stop delivers what is queued until the deadline.
 * Its round is a few named steps: Note [The writer thread's round].
 *
 * Not this file's job: what a consumer is sent and in what order
 * (outgoing.c), attaching, input and reaping (consumer.c), what is released
 * or dropped when (release.c), putting units in (producer.c), opening and
 * closing (writer.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "writer/writer_impl.h"
#include "eventlog-sink.h"
#include "base/log.h"
#include "queue/unitq.h"
#include "base/fdutil.h"

/* How often a stopping recorder looks again for its dump at the end while
 * producers are still in flight. */
#define END_DUMP_RECHECK_MS 10

/* See Note [Waking the writer thread]. */
bool elsi_writer_need_wake(struct els_writer *w)
{
    if (w->queue.polling && !w->queue.wake_pending) {
        w->queue.wake_pending = true;
        return true;
    }
    return false;
}

void elsi_writer_send_wake(struct els_writer *w)
{
    static const char byte = 1;
    /* A full pipe already guarantees a wake-up; EAGAIN is fine. */
    ssize_t r;
    do {
        r = write(w->life.wake[1], &byte, 1);
    } while (r < 0 && errno == EINTR);
}

static void dial_maybe(struct els_writer *w, uint64_t now)
{
    if (w->ops->style != ELS_SINK_DIAL || w->cons.dial_active || now < w->cons.next_dial_ms)
        return;
    int fd = -1;
    int r = w->ops->dial(w->sink, &fd);
    if (r == 0 || r == -EINPROGRESS) {
        struct elsi_consumer *c = elsi_consumer_attach(w, fd, ELSI_CONSUMER_FD, true);
        if (c != NULL) {
            c->connecting = r == -EINPROGRESS;
            w->cons.dial_active = true;
            w->cons.dial_backoff_ms = DIAL_BACKOFF_MIN_MS;
        }
        return;
    }
    if (fd >= 0)
        elsi_close(fd);
    if (r != -EAGAIN)
        elsi_log_limited(&w->cons.dial_log, ELSI_LOG_INTERVAL_MS, ELS_LOG_WARN,
                         "%s: %s", w->endpoint, els_strerror(r));
    w->cons.next_dial_ms = now + w->cons.dial_backoff_ms;
    w->cons.dial_backoff_ms *= 2;
    if (w->cons.dial_backoff_ms > DIAL_BACKOFF_MAX_MS)
        w->cons.dial_backoff_ms = DIAL_BACKOFF_MAX_MS;
}

static size_t live_consumers(const struct els_writer *w)
{
    size_t n = 0;
    for (const struct elsi_consumer *c = w->cons.list; c != NULL; c = c->next)
        n += !c->dead && !c->dump;
    return n;
}

/* Accept every pending client of the sink, or (control) of the layer
 * above's own endpoint (control=unix:PATH).  Over max-consumers= a client is accepted and closed at once
 * (it learns immediately, and holds nothing). */
static void accept_all(struct els_writer *w, bool control)
{
    size_t live = live_consumers(w);
    for (;;) {
        int fd = -1;
        int r = control ? w->ctl.ops->accept(w->ctl.state, &fd)
                        : w->ops->accept(w->sink, &fd);
        if (r == -EAGAIN) {
            w->cons.accept_backoff_ms = 0;
            return;
        }
        if (r != 0) {
            /* Out of descriptors (EMFILE, ENFILE) or the like: the client
             * stays queued and poll() would report it again at once, so
             * the listener rests (doubling) while the consumers we have
             * are served. */
            w->stats.accept_errors++;
            unsigned b = w->cons.accept_backoff_ms;
            b = b == 0 ? ACCEPT_BACKOFF_MIN_MS
                       : (b * 2 > ACCEPT_BACKOFF_MAX_MS ? ACCEPT_BACKOFF_MAX_MS
                                                        : b * 2);
            w->cons.accept_backoff_ms = b;
            w->cons.listen_resume_ms = elsi_now_ms() + b;
            elsi_log_limited(&w->cons.accept_log, ELSI_LOG_INTERVAL_MS, ELS_LOG_WARN,
                             "%s: accept: %s; not accepting for %u ms",
                             w->endpoint, els_strerror(r), b);
            return;
        }
        w->cons.accept_backoff_ms = 0;
        if (live >= w->spec.max_consumers) {
            elsi_close(fd);
            w->stats.refused++;
            elsi_log_limited(&w->cons.refuse_log, ELSI_LOG_INTERVAL_MS, ELS_LOG_WARN,
                             "%s: refused a consumer: %zu connected already "
                             "(max-consumers=%u)", w->endpoint, live,
                             (unsigned)w->spec.max_consumers);
            continue;
        }
        if ((control ? elsi_consumer_attach_control(w, fd)
                     : elsi_consumer_attach(w, fd, ELSI_CONSUMER_FD, false)) != NULL)
            live++;
    }
}

/* Make the writer thread's own counters visible to els_writer_stats().
 * Lock held. */
static void publish_counters(struct els_writer *w)
{
    w->stats.st.consumer_memory = w->stats.priv_bytes;
    w->stats.st.consumer_memory_peak = w->stats.priv_bytes_peak;
    w->stats.st.consumers_dropped_memory = w->stats.dropped_for_memory;
    w->stats.st.consumers_refused = w->stats.refused;
    w->stats.st.accept_errors = w->stats.accept_errors;
}

/* Note [Asking again for a join snapshot]: whether to ask the snapshot
 * source again now (*request, *ctx set).  Lock held. */
static bool join_ask_again(struct els_writer *w, els_snapshot_request_fn *request,
                           void **ctx)
{
    uint64_t refusals = w->stats.st.snapshots_not_queued;
    bool refused = refusals != w->cons.join_refusals_seen;
    w->cons.join_refusals_seen = refusals;
    if (w->cons.awaiting == 0 || w->life.stopping || w->queue.snapshot_request == NULL ||
        w->cons.join_asks >= JOIN_ASKS_MAX) {
        bool held = w->queue.join_reserve > 0;
        w->queue.join_reserve = 0;
        w->cons.join_ask_due = false;
        if (w->cons.awaiting == 0)
            w->cons.join_asks = 0;
        if (held && w->queue.room_waiters > 0)
            pthread_cond_broadcast(&w->queue.room);
        return false;
    }
    if (refused) {
        w->cons.join_ask_due = true;
        uint64_t want = w->queue.join_refused_len;
        if (want > w->queue.uq.cap / 2)
            want = w->queue.uq.cap / 2;
        if (w->spec.policy == ELSI_POLICY_BLOCK && want > w->queue.join_reserve)
            w->queue.join_reserve = want;
    }
    if (!w->cons.join_ask_due)
        return false;
    uint64_t room = w->queue.join_refused_len < w->queue.uq.cap ? w->queue.join_refused_len
                                                      : w->queue.uq.cap;
    /* Spares would make way for it (Note [The queue's memory]). */
    if (!elsi_unitq_has_room_without_spares(&w->queue.uq, (size_t)room))
        return false;
    w->cons.join_ask_due = false;
    w->cons.join_asks++;
    *request = w->queue.snapshot_request;
    *ctx = w->queue.snapshot_ctx;
    return true;
}

/* After an unexpected failure (no memory, poll error): wait a little
 * rather than spin, then try again. */
static void writer_pause(struct els_writer *w)
{
    struct timespec ts = { 0, 100000000L };
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&w->lock);
    w->queue.polling = false;
    w->queue.wake_pending = false;
    pthread_mutex_unlock(&w->lock);
}

/* What consumer c, still behind at the stop deadline, never received:
 * the units it had not received in full (join units aside: not part of
 * the stream) and their bytes it had not received.  Lock held. */
static void behind_missed(struct els_writer *w, const struct elsi_consumer *c,
                          uint64_t *units, uint64_t *bytes)
{
    *units = *bytes = 0;
    uint64_t seq = c->seq > w->queue.uq.tail_seq ? c->seq : w->queue.uq.tail_seq;
    for (; seq < w->queue.uq.committed_seq; seq++) {
        const struct elsi_unit *u = elsi_unitq_unit(&w->queue.uq, seq);
        if (u->kind == ELSI_UNIT_KIND_JOIN)
            continue;
        size_t sent = seq == c->seq ? c->unit_off : 0;
        (*units)++;
        *bytes += u->len - (sent < u->len ? sent : u->len);
    }
}

/* Add "consumer ID missed U units (B bytes)" to the stop report
 * (behind_detail, read by els_writer_close once this thread is done);
 * the first few consumers only, then a count.  Lock held. */
static void behind_describe(struct els_writer *w, size_t *off, uint64_t nth,
                            uint64_t id, uint64_t units, uint64_t bytes)
{
    char *d = w->life.behind_detail;
    size_t cap = sizeof w->life.behind_detail;
    int n;
    if (nth <= BEHIND_DETAIL_MAX)
        n = snprintf(d + *off, cap - *off, "%sconsumer %" PRIu64 " missed %"
                     PRIu64 " units (%" PRIu64 " bytes)", nth > 1 ? ", " : "",
                     id, units, bytes);
    else
        n = 0;  /* counted in the total the report gives */
    if (n > 0 && (size_t)n < cap - *off)
        *off += (size_t)n;
}

// ---------------------------------------------------------------------------
// One round of the writer thread
// ---------------------------------------------------------------------------

/*
 * Note [The writer thread's round]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * elsi_writer_main() goes round these steps until the stop is done:
 *
 *   1. round_deliver: read under the lock what is visible (the header,
 *      the committed units) and whether the stop deadline has passed;
 *      then, lock released, start the joiners and send every consumer
 *      what it takes now.
 *   2. round_settle: under the lock, release what every consumer has,
 *      publish the counters, ask again for a join snapshot, and decide:
 *      go round again at once (more came in meanwhile), end (the stop is
 *      done, stop_done), or sleep.  A sleep sets queue.polling under the
 *      same lock hold that found nothing to do, so a producer that
 *      commits after it wakes the thread (Note [Waking the writer
 *      thread]).
 *   3. poll_set_build: the descriptors to wait on and one timeout, the
 *      nearest of every timer (wake_by).
 *   4. poll_dispatch: poll(), then accept, start a signalled dump, or
 *      read a consumer's input, for each descriptor that is ready.
 *
 * At the end, drain_at_stop counts what was not delivered and closes the
 * consumers, and thread_end hands the writer back to close.
 */

/* What a round read, and what its end leaves for the sleep after it. */
struct round {
    const uint8_t *header;
    size_t header_len;
    uint64_t visible;           /* committed_seq at the round's start */
    bool stopping;
    uint64_t stop_deadline;
    bool end_dump_due;          /* see round_settle */
    size_t n_cons;
};

enum round_next { ROUND_SLEEP, ROUND_AGAIN, ROUND_STOP };

/* The descriptors the thread sleeps on: the wake pipe first, then the
 * writer's own (listeners, the recorder's signal), then consumers.
 * pcons[i] is the consumer of pfds[i], NULL for the writer's own. */
struct poll_set {
    struct pollfd *pfds;
    struct elsi_consumer **pcons;
    size_t n, cap;
    int listen_fd, ctl_fd, signal_fd;   /* -1: not polled this round */
    int timeout;                        /* ms for poll(); -1: none */
};

/* The one clamp of every timer the thread sleeps on: wake by `at`
 * (CLOCK_MONOTONIC ms) at the latest, at once if it has passed. */
static void wake_by(int *timeout, uint64_t at, uint64_t now)
{
    int d = at > now ? (int)(at - now) : 0;
    if (*timeout < 0 || d < *timeout)
        *timeout = d;
}

/* Step 1.  false when the stop deadline has passed: past it nothing more
 * is sent (a sink call that returns after it must not start another):
 * Note [Stop deadline]. */
static bool round_deliver(struct els_writer *w, struct round *r)
{
    uint64_t now = elsi_now_ms();
    if (w->ops->style == ELS_SINK_DIAL)
        dial_maybe(w, now);
    w->ctl.ops->tick(w, w->ctl.state);

    pthread_mutex_lock(&w->lock);
    r->header = w->queue.header;
    r->header_len = w->queue.header_len;
    r->visible = w->queue.uq.committed_seq;
    uint64_t join_seq = w->queue.join_seq, tail = w->queue.uq.tail_seq;
    bool ending = w->life.stopping;
    bool flush = w->queue.flush_requested;
    w->queue.flush_requested = false;
    bool expired = w->life.stopping && now >= w->life.stop_deadline_ms;
    pthread_mutex_unlock(&w->lock);
    if (expired)
        return false;

    elsi_consumers_join(w, join_seq, r->visible, tail, ending);
    for (struct elsi_consumer *c = w->cons.list; c != NULL; c = c->next)
        elsi_consumer_pump(w, c, r->header, r->header_len, r->visible);
    elsi_consumers_reap(w);
    if (flush && w->ops->flush != NULL)
        w->ops->flush(w->sink);

    elsi_recorder_tick(w);
    elsi_trigger_service(w);
    elsi_dump_service(w, false);
    return true;
}

/* Note [Asking again for a join snapshot], made outside the lock.  Lock
 * held. */
static void join_ask_maybe(struct els_writer *w)
{
    els_snapshot_request_fn ask;
    void *ask_ctx;
    if (join_ask_again(w, &ask, &ask_ctx)) {
        pthread_mutex_unlock(&w->lock);
        ask(ask_ctx);
        pthread_mutex_lock(&w->lock);
    }
}

/* Stop listening as soon as the stream is ending: a client that
 * connected later would be queued by the kernel and then cut off with
 * nothing; refused, it can retry and reach the next stream (after a
 * restart) instead.  Lock held. */
static void stop_listening(struct els_writer *w)
{
    if (w->ops->style != ELS_SINK_LISTEN || w->life.sink_closed)
        return;
    w->life.sink_closed = true;
    pthread_mutex_unlock(&w->lock);
    accept_all(w, false);   /* those already queued get the rest */
    w->ops->close(w->sink);
    pthread_mutex_lock(&w->lock);
}

/* Is the stop done: everything delivered (or no one to deliver it to),
 * no dump still owed, or the deadline reached?  Lock held. */
static bool stop_done(struct els_writer *w, bool all_caught_up, bool more_now,
                      size_t n_cons)
{
    bool done = ((all_caught_up && !more_now &&
                  w->queue.uq.committed_seq == w->queue.uq.head_seq) ||
                 n_cons == 0) && !elsi_dump_pending(w);
    return done || elsi_now_ms() >= w->life.stop_deadline_ms;
}

/* Step 2: see Note [The writer thread's round]. */
static enum round_next round_settle(struct els_writer *w, struct round *r)
{
    pthread_mutex_lock(&w->lock);
    if (elsi_release_units(w) && w->queue.room_waiters > 0)
        pthread_cond_broadcast(&w->queue.room);
    publish_counters(w);
    join_ask_maybe(w);
    bool all_caught_up = true, any_dead = false, any_awaiting = false;
    r->n_cons = 0;
    for (struct elsi_consumer *c = w->cons.list; c != NULL; c = c->next) {
        r->n_cons++;
        any_dead |= c->dead;    /* cut loose and closed: reap now */
        any_awaiting |= c->awaiting_snapshot && !c->dead;
        if (!elsi_consumer_caught_up(c, r->header_len, w->queue.uq.committed_seq))
            all_caught_up = false;
    }
    bool more_now = w->queue.uq.committed_seq != r->visible || any_dead ||
                    w->queue.header_len != r->header_len || w->queue.flush_requested ||
                    w->rec.dumping != NULL ||
                    w->rec.dump_tickets > w->rec.dump_answered;
    r->stopping = w->life.stopping;
    r->stop_deadline = w->life.stop_deadline_ms;
    /* A recorder's dump at the end is still to come.  The stop may have
     * begun after this round's elsi_dump_service(), and nothing will wake
     * this thread again: go round at once, or, while producers are still
     * in flight (their leaving wakes nobody), look again soon. */
    r->end_dump_due = r->stopping && elsi_dump_pending(w);
    if (r->end_dump_due && w->life.producers == 0)
        more_now = true;
    /* The stop began after this round's joins were judged: a joiner
     * still waiting starts now (Note [Late joiners]), next round. */
    if (r->stopping && any_awaiting)
        more_now = true;
    if (r->stopping)
        stop_listening(w);
    enum round_next next = ROUND_SLEEP;
    if (r->stopping && stop_done(w, all_caught_up, more_now, r->n_cons))
        next = ROUND_STOP;
    else if (more_now)
        next = ROUND_AGAIN;
    else
        w->queue.polling = true;
    pthread_mutex_unlock(&w->lock);
    return next;
}

// ---------------------------------------------------------------------------
// Sleeping: the poll set, and what is ready
// ---------------------------------------------------------------------------

/* Room for `need` descriptors; false (logged) when out of memory. */
static bool poll_set_reserve(struct els_writer *w, struct poll_set *ps, size_t need)
{
    if (need <= ps->cap)
        return true;
    size_t cap = need * 2;
    struct pollfd *np = realloc(ps->pfds, cap * sizeof *np);
    if (np != NULL)
        ps->pfds = np;
    struct elsi_consumer **nc = realloc(ps->pcons, cap * sizeof *nc);
    if (nc != NULL)
        ps->pcons = nc;
    if (np == NULL || nc == NULL) {
        elsi_log_limited(&w->cons.loop_log, ELSI_LOG_INTERVAL_MS,
                         ELS_LOG_ERROR, "%s: out of memory in the "
                         "writer thread", w->endpoint);
        return false;
    }
    ps->cap = cap;
    return true;
}

static void poll_set_add(struct poll_set *ps, int fd, short events,
                         struct elsi_consumer *c)
{
    ps->pfds[ps->n] = (struct pollfd){ .fd = fd, .events = events };
    ps->pcons[ps->n++] = c;
}

/* The writer's own descriptors: the recorder's signal, the control
 * endpoint and the sink's listener.  A listener resting after accept()
 * failed (accept_all) is not polled: its rest's end is a timer. */
static void poll_set_own(struct els_writer *w, struct poll_set *ps,
                         const struct round *r, uint64_t now)
{
    if (w->ops->style == ELS_SINK_RECORD && w->ops->listen_fd != NULL &&
        w->rec.dumping == NULL && !r->stopping) {
        /* Note [Dump on a signal] (lib/sinks/ring.c); polled only between dumps,
         * since it stays readable until a dump drains it. */
        ps->signal_fd = w->ops->listen_fd(w->sink);
        if (ps->signal_fd >= 0)
            poll_set_add(ps, ps->signal_fd, POLLIN, NULL);
    }
    ps->ctl_fd = w->ctl.ops->listen_fd != NULL
                     ? w->ctl.ops->listen_fd(w->ctl.state) : -1;
    bool resting = now < w->cons.listen_resume_ms;
    if (ps->ctl_fd >= 0 && !r->stopping) {
        if (!resting)
            poll_set_add(ps, ps->ctl_fd, POLLIN, NULL);
        else
            wake_by(&ps->timeout, w->cons.listen_resume_ms, now);
    }
    if (w->ops->style == ELS_SINK_LISTEN && !r->stopping) {
        if (!resting) {
            ps->listen_fd = w->ops->listen_fd(w->sink);
            poll_set_add(ps, ps->listen_fd, POLLIN, NULL);
        } else {
            wake_by(&ps->timeout, w->cons.listen_resume_ms, now);
        }
    }
}

/* Step 3: what to wait on, and for how long.  false when out of memory. */
static bool poll_set_build(struct els_writer *w, struct poll_set *ps,
                           const struct round *r)
{
    if (!poll_set_reserve(w, ps, 3 + r->n_cons))
        return false;
    ps->n = 0;
    ps->listen_fd = ps->ctl_fd = ps->signal_fd = -1;
    ps->timeout = -1;
    uint64_t now = elsi_now_ms();
    poll_set_add(ps, w->life.wake[0], POLLIN, NULL);
    poll_set_own(w, ps, r, now);
    for (struct elsi_consumer *c = w->cons.list; c != NULL; c = c->next) {
        if (c->awaiting_snapshot)   /* Note [Late joiners] */
            wake_by(&ps->timeout, c->await_since_ms + ELS_SNAPSHOT_WAIT_MS, now);
        if (c->retry_at_ms)
            wake_by(&ps->timeout, c->retry_at_ms, now);
        if (c->fd < 0 || c->is_regular)
            continue;   /* regular files are always ready */
        short ev = 0;
        if (!c->read_closed)
            ev |= POLLIN;
        if (c->want_out || c->connecting)
            ev |= POLLOUT;
        poll_set_add(ps, c->fd, ev, c);
    }
    if (w->ops->style == ELS_SINK_DIAL && !w->cons.dial_active)
        wake_by(&ps->timeout, w->cons.next_dial_ms, now);
    uint64_t due = elsi_trigger_wake_ms(w);    /* Note [Triggered dumps] */
    if (due != 0)
        wake_by(&ps->timeout, due, now);
    if (r->stopping)
        wake_by(&ps->timeout, r->stop_deadline, now);
    if (r->end_dump_due)
        wake_by(&ps->timeout, now + END_DUMP_RECHECK_MS, now);
    return true;
}

/* Step 4: sleep in poll(), then serve each descriptor that is ready. */
static void poll_dispatch(struct els_writer *w, struct poll_set *ps)
{
    int pr = poll(ps->pfds, (nfds_t)ps->n, ps->timeout);
    int poll_errno = errno;

    pthread_mutex_lock(&w->lock);
    w->queue.polling = false;
    w->queue.wake_pending = false;
    pthread_mutex_unlock(&w->lock);

    if (pr < 0) {
        if (poll_errno != EINTR) {
            elsi_log_limited(&w->cons.loop_log, ELSI_LOG_INTERVAL_MS,
                             ELS_LOG_ERROR, "%s: poll: %s", w->endpoint,
                             strerror(poll_errno));
            writer_pause(w);
        }
        return;
    }
    if (ps->pfds[0].revents & POLLIN) {
        while (read(w->life.wake[0], w->cons.scratch, sizeof w->cons.scratch) > 0) {
        }
    }
    for (size_t i = 1; i < ps->n; i++) {
        const struct pollfd *p = &ps->pfds[i];
        struct elsi_consumer *c = ps->pcons[i];
        if (p->revents == 0)
            continue;
        if (c != NULL)
            elsi_consumer_input(w, c, p->revents);
        else if (p->fd == ps->listen_fd)
            accept_all(w, false);
        else if (p->fd == ps->ctl_fd)
            accept_all(w, true);
        else if (p->fd == ps->signal_fd)
            elsi_dump_service(w, true);
    }
    elsi_consumers_reap(w);
}

// ---------------------------------------------------------------------------
// The end
// ---------------------------------------------------------------------------

/* Stopped: whatever is still queued was not delivered in time, to a
 * consumer that was too slow, or for want of one.  Count it, then close
 * every consumer gracefully (it sees a clean end of stream). */
static void drain_at_stop(struct els_writer *w)
{
    pthread_mutex_lock(&w->lock);
    uint64_t behind = 0;
    bool any = false;
    size_t off = 0;
    for (struct elsi_consumer *c = w->cons.list; c != NULL; c = c->next) {
        if (c->dead)
            continue;
        any = true;
        if (elsi_consumer_caught_up(c, w->queue.header_len, w->queue.uq.committed_seq))
            continue;
        behind++;
        uint64_t units, bytes;
        behind_missed(w, c, &units, &bytes);
        w->stats.st.behind_at_stop_units += units;
        w->stats.st.behind_at_stop_bytes += bytes;
        behind_describe(w, &off, behind, c->id, units, bytes);
    }
    w->stats.st.consumers_behind_at_stop += behind;
    while (w->queue.uq.tail_seq < w->queue.uq.committed_seq)
        elsi_release_oldest(w, any ? ELS_DROP_STOPPED : ELS_DROP_NO_CONSUMER);
    publish_counters(w);
    for (struct elsi_consumer *c = w->cons.list; c != NULL; c = c->next)
        c->dead = true;
    pthread_mutex_unlock(&w->lock);
    for (struct elsi_consumer *c = w->cons.list; c != NULL;) {
        struct elsi_consumer *next = c->next;
        elsi_consumer_free(w, c, true);
        c = next;
    }
}

/* Hand the writer back: close may be waiting for this thread, or may
 * have given up on it. */
static void thread_end(struct els_writer *w)
{
    /* Note [Control lifetimes]: detached before w can be freed. */
    w->ctl.ops->detach(w, w->ctl.state);
    pthread_mutex_lock(&w->lock);
    w->cons.list = NULL;
    w->stats.st.consumers_connected = 0;
    publish_counters(w);
    pthread_cond_broadcast(&w->queue.room);
    /* Note [Stop deadline]: if close gave up waiting for this thread,
     * finishing the writer is this thread's job now. */
    w->life.thread_done = true;
    bool abandoned = atomic_load(&w->life.abandoned);

    pthread_cond_broadcast(&w->changed);
    pthread_mutex_unlock(&w->lock);
    if (abandoned)
        elsi_writer_finish(w);
}

/* The writer thread: Note [The writer thread's round]. */
void *elsi_writer_main(void *arg)
{
    struct els_writer *w = arg;
    struct poll_set ps = { 0 };

    if (w->ops->style == ELS_SINK_CALLBACK)
        elsi_consumer_attach(w, -1, ELSI_CONSUMER_CALLBACK, false);
    for (;;) {
        struct round r;
        if (!round_deliver(w, &r))
            break;
        enum round_next next = round_settle(w, &r);
        if (next == ROUND_STOP)
            break;
        if (next == ROUND_AGAIN)
            continue;
        if (!poll_set_build(w, &ps, &r)) {
            writer_pause(w);
            continue;
        }
        poll_dispatch(w, &ps);
    }
    drain_at_stop(w);
    free(ps.pfds);
    free(ps.pcons);
    thread_end(w);
    return NULL;
}
