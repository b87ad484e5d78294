/*
 * loop.c: the writer thread.  One poll() loop per writer takes units out
 * of the ring and hands them to every consumer at its own pace, with
 * non-blocking I/O: it accepts the clients of a listening sink, dials (and
 * redials) a connect-out sink, feeds a callback sink, notices consumers
 * that hang up, sleeps when there is nothing to do (woken by producers
 * through a pipe), and at stop delivers what is queued until the deadline.
 *
 * Not this file's job: what a consumer is sent and in what order
 * (consumer.c), what is released or dropped when (release.c), putting
 * units in (lib/writer/producer.c), opening and closing (writer.c).
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
#include "queue/ring.h"
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
        struct consumer *c = elsi_consumer_attach(w, fd, CONSUMER_FD, true);
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
    for (const struct consumer *c = w->cons.list; c != NULL; c = c->next)
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
        int r = control ? w->ctl.hooks->accept(w->ctl.state, &fd)
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
                     : elsi_consumer_attach(w, fd, CONSUMER_FD, false)) != NULL)
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
        if (want > w->queue.ring.cap / 2)
            want = w->queue.ring.cap / 2;
        if (w->spec.policy == ELSI_POLICY_BLOCK && want > w->queue.join_reserve)
            w->queue.join_reserve = want;
    }
    if (!w->cons.join_ask_due)
        return false;
    uint64_t room = w->queue.join_refused_len < w->queue.ring.cap ? w->queue.join_refused_len
                                                      : w->queue.ring.cap;
    /* Spares would make way for it (Note [The queue's memory]). */
    if (!elsi_ring_has_room_without_spares(&w->queue.ring, (size_t)room))
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
static void behind_missed(struct els_writer *w, const struct consumer *c,
                          uint64_t *units, uint64_t *bytes)
{
    *units = *bytes = 0;
    uint64_t seq = c->seq > w->queue.ring.tail_seq ? c->seq : w->queue.ring.tail_seq;
    for (; seq < w->queue.ring.committed_seq; seq++) {
        const struct elsi_unit *u = elsi_ring_unit(&w->queue.ring, seq);
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

void *elsi_writer_main(void *arg)
{
    struct els_writer *w = arg;
    struct pollfd *pfds = NULL;
    struct consumer **pcons = NULL;
    size_t pcap = 0;

    if (w->ops->style == ELS_SINK_CALLBACK)
        elsi_consumer_attach(w, -1, CONSUMER_CALLBACK, false);

    for (;;) {
        uint64_t now = elsi_now_ms();
        if (w->ops->style == ELS_SINK_DIAL)
            dial_maybe(w, now);
        w->ctl.hooks->tick(w, w->ctl.state);

        pthread_mutex_lock(&w->lock);
        const uint8_t *header = w->queue.header;
        size_t header_len = w->queue.header_len;
        uint64_t visible = w->queue.ring.committed_seq;
        uint64_t join_seq = w->queue.join_seq, tail = w->queue.ring.tail_seq;
        bool ending = w->life.stopping;
        bool flush = w->queue.flush_requested;
        w->queue.flush_requested = false;
        /* Past the stop deadline nothing more is sent (a sink call that
         * returns after it must not start another): Note [Stop deadline]. */
        bool expired = w->life.stopping && now >= w->life.stop_deadline_ms;
        pthread_mutex_unlock(&w->lock);
        if (expired)
            break;

        elsi_consumers_join(w, join_seq, visible, tail, ending);
        for (struct consumer *c = w->cons.list; c != NULL; c = c->next)
            elsi_consumer_pump(w, c, header, header_len, visible);
        elsi_consumers_reap(w);
        if (flush && w->ops->flush != NULL)
            w->ops->flush(w->sink);

        elsi_recorder_tick(w);
        elsi_trigger_service(w);
        elsi_dump_service(w, false);

        pthread_mutex_lock(&w->lock);
        if (elsi_release_units(w) && w->queue.room_waiters > 0)
            pthread_cond_broadcast(&w->queue.room);
        publish_counters(w);
        els_snapshot_request_fn ask;
        void *ask_ctx;
        if (join_ask_again(w, &ask, &ask_ctx)) {
            pthread_mutex_unlock(&w->lock);
            ask(ask_ctx);
            pthread_mutex_lock(&w->lock);
        }
        bool all_caught_up = true, any_dead = false, any_awaiting = false;
        size_t n_cons = 0;
        for (struct consumer *c = w->cons.list; c != NULL; c = c->next) {
            n_cons++;
            any_dead |= c->dead;    /* cut loose and closed: reap now */
            any_awaiting |= c->awaiting_snapshot && !c->dead;
            if (!elsi_consumer_caught_up(c, header_len, w->queue.ring.committed_seq))
                all_caught_up = false;
        }
        bool more_now = w->queue.ring.committed_seq != visible || any_dead ||
                        w->queue.header_len != header_len || w->queue.flush_requested ||
                        w->rec.dumping != NULL ||
                        w->rec.dump_tickets > w->rec.dump_answered;
        bool stopping = w->life.stopping;
        uint64_t stop_deadline = w->life.stop_deadline_ms;
        /* A recorder's dump at the end is still to come.  The stop may
         * have begun after this turn's elsi_dump_service(), and nothing
         * will wake this thread again: go round at once, or, while
         * producers are still in flight (their leaving wakes nobody),
         * look again soon. */
        bool end_dump_due = stopping && elsi_dump_pending(w);
        if (end_dump_due && w->life.producers == 0)
            more_now = true;
        /* The stop began after this turn's joins were judged: a joiner
         * still waiting starts now (Note [Late joiners]), next turn. */
        if (stopping && any_awaiting)
            more_now = true;
        if (stopping && w->ops->style == ELS_SINK_LISTEN && !w->life.sink_closed) {
            /* Stop listening as soon as the stream is ending: a client that
             * connected later would be queued by the kernel and then cut
             * off with nothing; refused, it can retry and reach the next
             * stream (after a restart) instead. */
            w->life.sink_closed = true;
            pthread_mutex_unlock(&w->lock);
            accept_all(w, false);   /* those already queued get the rest */
            w->ops->close(w->sink);
            pthread_mutex_lock(&w->lock);
        }
        if (stopping) {
            bool done = ((all_caught_up && !more_now &&
                          w->queue.ring.committed_seq == w->queue.ring.head_seq) ||
                         n_cons == 0) && !elsi_dump_pending(w);
            done |= elsi_now_ms() >= w->life.stop_deadline_ms;
            if (done) {
                pthread_mutex_unlock(&w->lock);
                break;
            }
        }
        if (more_now) {
            pthread_mutex_unlock(&w->lock);
            continue;
        }
        w->queue.polling = true;
        pthread_mutex_unlock(&w->lock);

        /* Build the poll set. */
        size_t need = 3 + n_cons;
        if (need > pcap) {
            size_t cap = need * 2;
            struct pollfd *np = realloc(pfds, cap * sizeof *np);
            if (np != NULL)
                pfds = np;
            struct consumer **nc = realloc(pcons, cap * sizeof *nc);
            if (nc != NULL)
                pcons = nc;
            if (np == NULL || nc == NULL) {
                elsi_log_limited(&w->cons.loop_log, ELSI_LOG_INTERVAL_MS,
                                 ELS_LOG_ERROR, "%s: out of memory in the "
                                 "writer thread", w->endpoint);
                writer_pause(w);
                continue;
            }
            pcap = cap;
        }
        size_t n = 0;
        pfds[n] = (struct pollfd){ .fd = w->life.wake[0], .events = POLLIN };
        pcons[n++] = NULL;
        int listen_fd = -1;
        int timeout = -1;
        uint64_t t = elsi_now_ms();
        int signal_fd = -1;
        if (w->ops->style == ELS_SINK_RECORD && w->ops->listen_fd != NULL &&
            w->rec.dumping == NULL && !stopping) {
            /* Note [Dump on a signal] (ring.c); polled only between dumps,
             * since it stays readable until a dump drains it. */
            signal_fd = w->ops->listen_fd(w->sink);
            if (signal_fd >= 0) {
                pfds[n] = (struct pollfd){ .fd = signal_fd, .events = POLLIN };
                pcons[n++] = NULL;
            }
        }
        int ctl_fd = w->ctl.hooks->listen_fd != NULL
                         ? w->ctl.hooks->listen_fd(w->ctl.state) : -1;
        if (ctl_fd >= 0 && !stopping) {
            if (t >= w->cons.listen_resume_ms) {
                pfds[n] = (struct pollfd){ .fd = ctl_fd, .events = POLLIN };
                pcons[n++] = NULL;
            } else {
                timeout = (int)(w->cons.listen_resume_ms - t);
            }
        }
        if (w->ops->style == ELS_SINK_LISTEN && !stopping) {
            if (t >= w->cons.listen_resume_ms) {
                listen_fd = w->ops->listen_fd(w->sink);
                pfds[n] = (struct pollfd){ .fd = listen_fd, .events = POLLIN };
                pcons[n++] = NULL;
            } else {
                timeout = (int)(w->cons.listen_resume_ms - t);
            }
        }
        for (struct consumer *c = w->cons.list; c != NULL; c = c->next) {
            if (c->awaiting_snapshot) {     /* Note [Late joiners] */
                uint64_t until = c->await_since_ms + ELS_SNAPSHOT_WAIT_MS;
                int d = until > t ? (int)(until - t) : 0;
                if (timeout < 0 || d < timeout)
                    timeout = d;
            }
            if (c->retry_at_ms) {
                int d = c->retry_at_ms > t ? (int)(c->retry_at_ms - t) : 0;
                if (timeout < 0 || d < timeout)
                    timeout = d;
            }
            if (c->fd < 0)
                continue;
            short ev = 0;
            if (!c->read_closed && !c->is_regular)
                ev |= POLLIN;
            if (c->want_out || c->connecting)
                ev |= POLLOUT;
            if (c->is_regular)
                continue;   /* regular files are always ready */
            pfds[n] = (struct pollfd){ .fd = c->fd, .events = ev };
            pcons[n++] = c;
        }
        if (w->ops->style == ELS_SINK_DIAL && !w->cons.dial_active) {
            int d = w->cons.next_dial_ms > t ? (int)(w->cons.next_dial_ms - t) : 0;
            if (timeout < 0 || d < timeout)
                timeout = d;
        }
        uint64_t due = elsi_trigger_wake_ms(w);    /* Note [Triggered dumps] */
        if (due != 0) {
            int d = due > t ? (int)(due - t) : 0;
            if (timeout < 0 || d < timeout)
                timeout = d;
        }
        if (stopping) {
            int d = stop_deadline > t ? (int)(stop_deadline - t) : 0;
            if (timeout < 0 || d < timeout)
                timeout = d;
        }
        if (end_dump_due && (timeout < 0 || timeout > END_DUMP_RECHECK_MS))
            timeout = END_DUMP_RECHECK_MS;

        int pr = poll(pfds, (nfds_t)n, timeout);
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
            continue;
        }
        if (pfds[0].revents & POLLIN) {
            while (read(w->life.wake[0], w->cons.scratch, sizeof w->cons.scratch) > 0) {
            }
        }
        for (size_t i = 1; i < n; i++) {
            if (pfds[i].revents == 0)
                continue;
            if (pfds[i].fd == listen_fd && pcons[i] == NULL)
                accept_all(w, false);
            else if (pfds[i].fd == ctl_fd && pcons[i] == NULL)
                accept_all(w, true);
            else if (pfds[i].fd == signal_fd && pcons[i] == NULL)
                elsi_dump_service(w, true);
            else if (pcons[i] != NULL)
                elsi_consumer_input(w, pcons[i], pfds[i].revents);
        }
        elsi_consumers_reap(w);
    }

    /* Stopped: whatever is still queued was not delivered in time, to a
     * consumer that was too slow, or for want of one. */
    pthread_mutex_lock(&w->lock);
    uint64_t behind = 0;
    bool any = false;
    size_t off = 0;
    for (struct consumer *c = w->cons.list; c != NULL; c = c->next) {
        if (c->dead)
            continue;
        any = true;
        if (elsi_consumer_caught_up(c, w->queue.header_len, w->queue.ring.committed_seq))
            continue;
        behind++;
        uint64_t units, bytes;
        behind_missed(w, c, &units, &bytes);
        w->stats.st.behind_at_stop_units += units;
        w->stats.st.behind_at_stop_bytes += bytes;
        behind_describe(w, &off, behind, c->id, units, bytes);
    }
    w->stats.st.consumers_behind_at_stop += behind;
    while (w->queue.ring.tail_seq < w->queue.ring.committed_seq)
        elsi_release_oldest(w, any ? ELS_DROP_STOPPED : ELS_DROP_NO_CONSUMER);
    publish_counters(w);
    for (struct consumer *c = w->cons.list; c != NULL; c = c->next)
        c->dead = true;
    pthread_mutex_unlock(&w->lock);
    for (struct consumer *c = w->cons.list; c != NULL;) {
        struct consumer *next = c->next;
        /* Graceful: the consumer sees a clean end of stream. */
        elsi_consumer_free(w, c, true);
        c = next;
    }
    free(pfds);
    free(pcons);
    /* Note [Control lifetimes]: detached before w can be freed. */
    w->ctl.hooks->detach(w, w->ctl.state);
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
    return NULL;
}
