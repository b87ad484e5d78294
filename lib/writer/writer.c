/*
 * writer.c: the writer's life: open (parse the spec, allocate the queue,
 * open the sink, start the writer thread, wait= for a first consumer),
 * close (stop, linger, join, report losses, free), fork handling, and the
 * counters anyone may read.  The writer is the only place where the queue
 * and the sinks meet; its parts are lib/writer/producer.c (posting
 * threads), loop.c, consumer.c and release.c (the writer thread), sharing
 * writer_impl.h.
 *
 * Not this file's job: parsing specs (lib/sinks/spec.c), binding and
 * dialling (lib/sinks/), the eventlog format (lib/format/), GHC
 * (lib/ghc/ghc.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "writer/announce.h"
#include "writer/writer_impl.h"
#include "eventlog-sink.h"
#include "base/log.h"
#include "queue/unitq.h"
#include "base/fdutil.h"
#include "sinks/spec.h"

// ---------------------------------------------------------------------------
// Fork safety
// ---------------------------------------------------------------------------

/*
 * Note [Fork]
 * ~~~~~~~~~~~
 * fork() copies only the calling thread, so in a child every writer has a
 * queue but no writer thread, and its descriptors are shared with the
 * parent.  The atfork handlers take every writer's lock around fork() so
 * the child's copy is consistent, then mark the child's copies as forked.
 * In a child: els_writer_write() drops units (cause forked-child);
 * els_writer_close() closes the inherited descriptors without shutdown()
 * (which would end the parent's connections), lets the sink release its
 * copy of the endpoint (sinks never unlink a path created by another
 * process), never joins the thread, and frees memory.  A child that wants
 * its own stream opens a new writer with another address.
 */
static pthread_mutex_t all_writers_lock = PTHREAD_MUTEX_INITIALIZER;
static struct els_writer *all_writers;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void atfork_prepare(void)
{
    pthread_mutex_lock(&all_writers_lock);
    for (struct els_writer *w = all_writers; w != NULL; w = w->life.next_open)
        pthread_mutex_lock(&w->lock);
}

static void atfork_parent(void)
{
    for (struct els_writer *w = all_writers; w != NULL; w = w->life.next_open)
        pthread_mutex_unlock(&w->lock);
    pthread_mutex_unlock(&all_writers_lock);
}

static void atfork_child(void)
{
    for (struct els_writer *w = all_writers; w != NULL; w = w->life.next_open) {
        w->life.forked = true;
        pthread_mutex_unlock(&w->lock);
    }
    pthread_mutex_unlock(&all_writers_lock);
}

static void atfork_register(void)
{
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

static void all_writers_add(struct els_writer *w)
{
    pthread_mutex_lock(&all_writers_lock);
    w->life.next_open = all_writers;
    all_writers = w;
    pthread_mutex_unlock(&all_writers_lock);
}

static void all_writers_remove(struct els_writer *w)
{
    pthread_mutex_lock(&all_writers_lock);
    for (struct els_writer **p = &all_writers; *p != NULL;
         p = &(*p)->life.next_open) {
        if (*p == w) {
            *p = w->life.next_open;
            break;
        }
    }
    pthread_mutex_unlock(&all_writers_lock);
}

// ---------------------------------------------------------------------------
// Counters
// ---------------------------------------------------------------------------

/* The arrays keep their room whatever is added: see struct els_stats. */
_Static_assert(ELS_DROP__COUNT <= ELS_STATS_DROP_SLOTS,
               "more drop causes than struct els_stats has room for");
_Static_assert(ELS_REASON__COUNT <= ELS_STATS_REASON_SLOTS,
               "more write reasons than struct els_stats has room for");

/* The caller's struct may be older (smaller) or newer (larger) than
 * ours: copy what both have, zero what only the caller has, and write
 * nothing past its size. */
int els_writer_stats_sized(struct els_writer *w, struct els_stats *out,
                           size_t size)
{
    if (w == NULL || out == NULL || size == 0)
        return ELS_EINVAL;
    struct els_stats s;
    pthread_mutex_lock(&w->lock);
    s = w->stats.st;
    pthread_mutex_unlock(&w->lock);
    size_t n = size < sizeof s ? size : sizeof s;
    memcpy(out, &s, n);
    if (size > n)
        memset((char *)out + n, 0, size - n);
    return 0;
}

int els_writer_cap_stats(struct els_writer *w, unsigned cap,
                         struct els_cap_stats *out)
{
    if (w == NULL || out == NULL || cap >= ELS_MAX_CAPS)
        return ELS_EINVAL;
    pthread_mutex_lock(&w->lock);
    *out = w->stats.caps[cap];
    pthread_mutex_unlock(&w->lock);
    return 0;
}

int els_writer_endpoint(struct els_writer *w, char *buf, size_t len)
{
    if (w == NULL)
        return ELS_EINVAL;
    return snprintf(buf, len, "%s", w->endpoint);
}

// ---------------------------------------------------------------------------
// For the layer above (writer/writer_ops.h)
// ---------------------------------------------------------------------------

const struct elsi_spec *elsi_writer_spec(const struct els_writer *w)
{
    return &w->spec;
}

const char *elsi_writer_endpoint(const struct els_writer *w)
{
    return w->endpoint;
}

struct elsi_ratelimit *elsi_writer_consumer_log(struct els_writer *w)
{
    return &w->cons.consumer_log;
}

uint64_t elsi_writer_committed(struct els_writer *w)
{
    pthread_mutex_lock(&w->lock);
    uint64_t seq = w->queue.uq.committed_seq;
    pthread_mutex_unlock(&w->lock);
    return seq;
}

int els_stats_format(const struct els_stats *s, char *buf, size_t len)
{
    uint64_t du = 0, db = 0;
    for (int i = 0; i < ELS_DROP__COUNT; i++) {
        du += s->units_dropped[i];
        db += s->bytes_dropped[i];
    }
    char triggers[200] = "";
    if (s->trigger_units_read + s->trigger_units_missed > 0)
        elsi_trigger_stats_format(s, triggers, sizeof triggers);
    return snprintf(buf, len,
                    "units accepted %" PRIu64 " sent %" PRIu64 " dropped %" PRIu64
                    " queued %" PRIu64 "; bytes accepted %" PRIu64 " sent %" PRIu64
                    " dropped %" PRIu64 " queued %" PRIu64 "; consumers %" PRIu64
                    " now, %" PRIu64 " total; consumer losses %" PRIu64 " units"
                    "; behind at stop %" PRIu64 " consumers, %" PRIu64
                    " units, %" PRIu64 " bytes%s%s",
                    s->units_accepted, s->units_sent, du, s->units_queued,
                    s->bytes_accepted, s->bytes_sent, db, s->bytes_queued,
                    s->consumers_connected, s->consumers_total,
                    s->consumer_lost_units, s->consumers_behind_at_stop,
                    s->behind_at_stop_units, s->behind_at_stop_bytes,
                    triggers[0] ? "; " : "", triggers);
}

int elsi_trigger_stats_format(const struct els_stats *s, char *buf, size_t len)
{
    return snprintf(buf, len, "dump-on read %" PRIu64 " units, %" PRIu64
                    " bad, %" PRIu64 " missed; %" PRIu64 " conditions met, %"
                    PRIu64 " suppressed, %" PRIu64 " dumps",
                    s->trigger_units_read, s->trigger_units_bad,
                    s->trigger_units_missed, s->trigger_fired,
                    s->trigger_suppressed, s->trigger_dumps);
}

// ---------------------------------------------------------------------------
// Open and close
// ---------------------------------------------------------------------------

static void writer_free(struct els_writer *w)
{
    if (w->life.wake[0] >= 0)
        elsi_close(w->life.wake[0]);
    if (w->life.wake[1] >= 0)
        elsi_close(w->life.wake[1]);
    elsi_unitq_destroy(&w->queue.uq);
    elsi_pool_destroy(&w->queue.pool);
    if (w->ctl.ops != NULL)
        w->ctl.ops->release(w->ctl.state);
    elsi_trigger_teardown(w);
    elsi_spec_free(&w->spec);
    free(w->queue.header);
    free(w->cons.join_buf);
    pthread_cond_destroy(&w->queue.room);
    pthread_cond_destroy(&w->changed);
    pthread_cond_destroy(&w->life.producers_left);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

static int init_monotonic_cond(pthread_cond_t *cv)
{
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0)
        return ELS_ENOMEM;
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    int r = pthread_cond_init(cv, &attr);
    pthread_condattr_destroy(&attr);
    return r == 0 ? 0 : -r;
}

int els_spec_check(const char *spec, char *err, size_t err_len)
{
    if (spec == NULL)
        return elsi_fail(err, err_len, ELS_EINVAL, "no spec given");
    struct elsi_spec parsed;
    int r = elsi_spec_parse(spec, &parsed, err, err_len);
    if (r == 0)
        elsi_spec_free(&parsed);
    return r;
}

/* Does the table keep the contract of writer/writer_ops.h? */
static bool ops_valid(const struct elsi_writer_ops *h)
{
    return h != NULL && h->struct_size >= sizeof *h && h->open != NULL &&
           (h->listen_fd == NULL || h->accept != NULL) &&
           (h->endpoint == NULL || h->listen_fd != NULL) && h->attach != NULL &&
           h->input != NULL && h->serve_only != NULL && h->due != NULL &&
           h->session_free != NULL && h->tick != NULL && h->detach != NULL &&
           h->release != NULL;
}

/* Put w in the discovery directory (announce.h): its endpoint and its
 * control socket, with the sockets that prove them; an endpoint that did
 * not fit (not whole) is not announced cut short. */
static void writer_announce(struct els_writer *w, bool whole)
{
    if (!w->spec.announce)
        return;
    if (!whole) {
        elsi_log(ELS_LOG_WARN, "%s...: not announced for eventlog-sink ps: "
                 "the endpoint is too long", w->endpoint);
        return;
    }
    struct elsi_announce_sink a = {
        .endpoint = w->endpoint,
        .listen_fd = w->ops->style == ELS_SINK_LISTEN && w->ops->listen_fd != NULL
                         ? w->ops->listen_fd(w->sink) : -1,
        .control_fd = -1,
    };
    char control[sizeof w->endpoint];
    if (w->spec.control) {
        int n = w->ctl.ops->endpoint == NULL ? -1
                : w->ctl.ops->endpoint(w->ctl.state, control, sizeof control);
        if (n >= 0 && (size_t)n < sizeof control) {
            a.control = control;
            a.control_fd = w->ctl.ops->listen_fd(w->ctl.state);  /* given */
        } else if (n < 0) {
            a.control = w->endpoint;    /* served on the sink's socket */
        } else {
            elsi_log(ELS_LOG_WARN, "%s: not announced for eventlog-sink ps: "
                     "the control socket's path is too long", w->endpoint);
            return;
        }
    }
    elsi_announce_add(w, &w->spec, &a);
}

/* wait=: hold the opening program until the consumers the spec asks for
 * attached (or the wait ended), with a line on what it waits for and, if
 * they did not all come, what came. */
static void wait_for_consumers(struct els_writer *w)
{
    /* wait-consumers=N: every consumer the user starts beside the
     * program (a recorder and a monitor, say) gets the first event. */
    uint32_t want = w->spec.wait_consumers;
    double secs = w->spec.wait_ms / 1000.0;
    if (want == 1)
        elsi_log(ELS_LOG_INFO, "waiting up to %.3g s for a consumer on %s",
                 secs, w->endpoint);
    else
        elsi_log(ELS_LOG_INFO, "waiting up to %.3g s for %" PRIu32
                 " consumers on %s", secs, want, w->endpoint);
    struct timespec deadline;
    elsi_deadline_timespec(w->spec.wait_ms, &deadline);
    pthread_mutex_lock(&w->lock);
    int rc = 0;
    while (w->stats.st.consumers_total < want && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&w->changed, &w->lock, &deadline);
    uint64_t got = w->stats.st.consumers_total;
    pthread_mutex_unlock(&w->lock);
    if (got == 0)
        elsi_log(ELS_LOG_WARN, "no consumer on %s after %.3g s; going on",
                 w->endpoint, secs);
    else if (got < want)
        elsi_log(ELS_LOG_WARN, "%" PRIu64 " of %" PRIu32 " consumers on %s "
                 "after %.3g s; going on", got, want, w->endpoint, secs);
}

int elsi_writer_open(const char *spec, const struct elsi_writer_ops *ctl_ops,
                     struct els_writer **out, char *err, size_t err_len)
{
    if (err != NULL && err_len > 0)
        err[0] = '\0';
    if (spec == NULL || out == NULL)
        return elsi_fail(err, err_len, ELS_EINVAL, "no spec given");
    *out = NULL;
    if (!ops_valid(ctl_ops))
        return elsi_fail(err, err_len, ELS_EINVAL, "the writer's ops table lacks "
                         "a member they must have");
    pthread_once(&atfork_once, atfork_register);

    struct els_writer *w = calloc(1, sizeof *w);
    if (w == NULL)
        return elsi_fail(err, err_len, ELS_ENOMEM, "out of memory");
    w->life.wake[0] = w->life.wake[1] = -1;
    w->queue.join_seq = JOIN_NONE;
    pthread_mutex_init(&w->lock, NULL);
    init_monotonic_cond(&w->queue.room);
    init_monotonic_cond(&w->changed);
    init_monotonic_cond(&w->life.producers_left);
    w->cons.dial_backoff_ms = DIAL_BACKOFF_MIN_MS;

    int r = elsi_spec_parse(spec, &w->spec, err, err_len);
    if (r != 0)
        goto fail;
    w->ops = w->spec.ops;
    uint64_t units = w->spec.buffer_bytes >> UNITS_PER_BYTE_SHIFT;
    r = elsi_unitq_init(&w->queue.uq, w->spec.buffer_bytes, units < 1024 ? 1024 : units);
    if (r != 0) {
        elsi_fail(err, err_len, r, "spec \"%s\": cannot allocate a %" PRIu64
                  "-byte buffer", spec, w->spec.buffer_bytes);
        goto fail;
    }
    w->queue.uq.spares = &w->queue.pool;  /* Note [The queue's memory] */
    r = elsi_pipe_nb(w->life.wake);
    if (r != 0) {
        elsi_fail(err, err_len, r, "cannot create the wake-up pipe: %s",
                  els_strerror(r));
        goto fail;
    }

    struct els_sink_args args;
    elsi_spec_sink_args(&w->spec, &args, err, err_len);
    r = w->ops->open(&w->sink, &args);
    if (r != 0) {
        if (err != NULL && err_len > 0 && err[0] == '\0')
            elsi_fail(err, err_len, r, "spec \"%s\": %s", spec, els_strerror(r));
        w->sink = NULL;
        goto fail;
    }
    int en = w->ops->endpoint == NULL
                 ? -1 : w->ops->endpoint(w->sink, w->endpoint, sizeof w->endpoint);
    if (en < 0)
        en = snprintf(w->endpoint, sizeof w->endpoint, "%s", spec);
    bool endpoint_whole = en >= 0 && (size_t)en < sizeof w->endpoint;
    r = elsi_trigger_setup(w);
    if (r != 0) {
        elsi_fail(err, err_len, r, "spec \"%s\": %s", spec, els_strerror(r));
        w->ops->close(w->sink);
        goto fail;
    }
    r = ctl_ops->open(w, &w->ctl.state, err, err_len);
    if (r != 0) {
        w->ops->close(w->sink);
        goto fail;
    }
    w->ctl.ops = ctl_ops;

    /* The writer thread must never take a signal meant for the program
     * (the RTS's timer, SIGINT...) and must hold SIGPIPE blocked for pipe
     * writes (see base/fdutil.h), so it starts with every signal blocked. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    r = -pthread_create(&w->life.thread, NULL, elsi_writer_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r != 0) {
        elsi_fail(err, err_len, r, "cannot start the writer thread: %s",
                  els_strerror(r));
        w->ops->close(w->sink);
        goto fail;
    }
    w->life.thread_started = true;
    all_writers_add(w);
    writer_announce(w, endpoint_whole);

    if (w->spec.wait_ms > 0)
        wait_for_consumers(w);
    *out = w;
    return 0;

fail:
    writer_free(w);
    return r;
}

/* The losses of a writer that stopped, one line per kind.  behind: the
 * consumers still behind at the deadline, each with what it missed
 * (NULL when the writer thread could not say). */
static void log_losses(const char *endpoint, const struct els_stats *s,
                       const char *behind)
{
    uint64_t units = 0, bytes = 0;
    char detail[256] = "";
    size_t off = 0;
    for (int i = 0; i < ELS_DROP__COUNT; i++) {
        if (s->units_dropped[i] == 0)
            continue;
        units += s->units_dropped[i];
        bytes += s->bytes_dropped[i];
        int n = snprintf(detail + off, sizeof detail - off, "%s%s %" PRIu64,
                         off ? ", " : "", els_drop_cause_name((enum els_drop_cause)i),
                         s->units_dropped[i]);
        if (n > 0 && (size_t)n < sizeof detail - off)
            off += (size_t)n;
    }
    if (units > 0)
        elsi_log(ELS_LOG_WARN, "%s: dropped %" PRIu64 " of %" PRIu64 " units (%"
                 PRIu64 " bytes): %s", endpoint, units, s->units_accepted,
                 bytes, detail);
    if (s->consumer_lost_units > 0)
        elsi_log(ELS_LOG_WARN, "%s: slow consumers missed %" PRIu64 " units (%"
                 PRIu64 " bytes) that others received", endpoint,
                 s->consumer_lost_units, s->consumer_lost_bytes);
    if (s->consumers_behind_at_stop > 0) {
        uint64_t n = s->consumers_behind_at_stop;
        char more[48] = "";
        char each[sizeof ((struct els_writer *)0)->life.behind_detail + sizeof more + 4] = "";
        if (n > BEHIND_DETAIL_MAX)
            snprintf(more, sizeof more, ", and %" PRIu64 " more",
                     n - BEHIND_DETAIL_MAX);
        if (behind != NULL && behind[0] != '\0')
            snprintf(each, sizeof each, " (%s%s)", behind, more);
        elsi_log(ELS_LOG_WARN, "%s: %" PRIu64 " consumers were still behind "
                 "when linger= ran out, missing %" PRIu64 " units (%" PRIu64
                 " bytes) in all%s: their streams end without the end marker",
                 endpoint, n, s->behind_at_stop_units, s->behind_at_stop_bytes,
                 each);
    }
    elsi_log(ELS_LOG_DEBUG, "%s: %" PRIu64 " units accepted, %" PRIu64
             " of them handed over without a copy", endpoint,
             s->units_accepted, s->units_handed_over);
    if (s->trigger_units_read + s->trigger_units_missed > 0) {
        char t[200];
        elsi_trigger_stats_format(s, t, sizeof t);
        elsi_log(s->trigger_units_bad + s->trigger_units_missed > 0
                     ? ELS_LOG_WARN : ELS_LOG_INFO, "%s: %s", endpoint, t);
    }
    if (s->dumps_failed + s->dumps_refused > 0)
        elsi_log(ELS_LOG_WARN, "%s: dumps: %" PRIu64 " written, %" PRIu64
                 " failed (no file left), %" PRIu64 " refused past max-dumps=",
                 endpoint, s->dumps_written, s->dumps_failed, s->dumps_refused);
    if (s->consumers_refused > 0)
        elsi_log(ELS_LOG_WARN, "%s: refused %" PRIu64 " consumers over "
                 "max-consumers=", endpoint, s->consumers_refused);
    if (s->consumers_dropped_memory > 0)
        elsi_log(ELS_LOG_WARN, "%s: closed %" PRIu64 " consumers that needed "
                 "more than consumer-memory=", endpoint,
                 s->consumers_dropped_memory);
}

/* See writer_impl.h: the end of a writer, on whichever thread finishes
 * last (Note [Stop deadline]). */
void elsi_writer_finish(struct els_writer *w)
{
    if (!w->life.sink_closed)
        w->ops->close(w->sink);
    writer_free(w);
}

int els_writer_close(struct els_writer *w)
{
    if (w == NULL)
        return ELS_EINVAL;
    elsi_announce_remove(w);
    all_writers_remove(w);

    pthread_mutex_lock(&w->lock);
    bool forked = w->life.forked;
    pthread_mutex_unlock(&w->lock);

    if (forked) {
        /* Note [Fork]: no thread to join; descriptors are shared. */
        for (struct elsi_consumer *c = w->cons.list; c != NULL;) {
            struct elsi_consumer *next = c->next;
            elsi_consumer_free(w, c, false);
            c = next;
        }
        elsi_writer_finish(w);
        return 0;
    }

    pthread_mutex_lock(&w->lock);
    w->life.stopping = true;
    elsi_stop_clock(w, elsi_now_ms());
    uint64_t deadline = w->life.stop_deadline_ms + STOP_GRACE_MS;
    if (elsi_writer_need_wake(w))
        elsi_writer_send_wake(w);
    pthread_cond_broadcast(&w->queue.room);   /* blocked producers give up */
    pthread_cond_broadcast(&w->changed);    /* so do dump waiters */
    /* Note [Producers in flight]: after this, none will touch w. */
    while (w->life.producers > 0)
        pthread_cond_wait(&w->life.producers_left, &w->lock);
    uint64_t now = elsi_now_ms();
    struct timespec ts;
    elsi_deadline_timespec(deadline > now ? deadline - now : 0, &ts);
    int rc = 0;
    while (!w->life.thread_done && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&w->changed, &w->lock, &ts);
    if (!w->life.thread_done) {
        /* Note [Stop deadline]: the writer thread is stuck in a sink call;
         * it finishes the writer when that returns.  Nothing of w may be
         * touched after the unlock. */
        atomic_store(&w->life.abandoned, true);
        struct els_stats s = w->stats.st;
        pthread_t thread = w->life.thread;
        char endpoint[sizeof w->endpoint];
        memcpy(endpoint, w->endpoint, sizeof endpoint);
        uint32_t linger_ms = w->spec.linger_ms;
        pthread_mutex_unlock(&w->lock);
        pthread_detach(thread);
        elsi_log(ELS_LOG_WARN, "%s: the sink was still busy when linger=%.3g "
                 "s ran out; closing without it", endpoint, linger_ms / 1000.0);
        /* What is still queued will not be delivered. */
        s.units_dropped[ELS_DROP_STOPPED] += s.units_queued;
        s.bytes_dropped[ELS_DROP_STOPPED] += s.bytes_queued;
        log_losses(endpoint, &s, NULL);
        return 0;
    }
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->life.thread, NULL);

    pthread_mutex_lock(&w->lock);
    /* Units committed after the writer thread finished were never sent. */
    while (w->queue.uq.tail_seq < w->queue.uq.committed_seq)
        elsi_release_oldest(w, ELS_DROP_STOPPED);
    struct els_stats s = w->stats.st;
    pthread_mutex_unlock(&w->lock);

    log_losses(w->endpoint, &s, w->life.behind_detail);
    elsi_writer_finish(w);
    return 0;
}
