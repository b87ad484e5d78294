/*
 * writer.c: the writer, the only place where the queue and the sinks meet.
 *
 * Posting threads (the RTS's capabilities) call els_writer_write(), which
 * copies a unit into the ring and returns; it never touches a descriptor
 * other than the writer's wake-up pipe.  One writer thread per writer takes
 * units out of the ring and delivers them to every consumer the sink
 * produced (accepted clients, a dialled descriptor, or the sink's own write
 * callback), each consumer at its own pace, with non-blocking I/O and one
 * poll() loop.
 *
 * Not this file's job: parsing specs (spec.c), binding and dialling
 * (sink_*.c), the eventlog format (evformat.c), GHC (ghc.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "eventlog-sink.h"
#include "format/evformat.h"
#include "sinks/fdutil.h"
#include "log.h"
#include "queue/ring.h"
#include "sinks/spec.h"

/*
 * Note [Queue locking]
 * ~~~~~~~~~~~~~~~~~~~~
 * w->lock guards the ring (head, tail, descriptors), the cached header,
 * the counters, the consumer list's membership and the flags below it in
 * struct els_writer.  It is held only for bookkeeping, never across I/O
 * or a large copy:
 *
 *   - A producer reserves space under the lock, copies the unit with the
 *     lock released, and commits under the lock.  Reserved space is never
 *     handed to anyone else, so the copy needs no lock.
 *   - The writer thread reads the bytes of committed units with the lock
 *     released.  This is safe because only the writer thread releases
 *     units, and it releases a unit only when no consumer still needs it;
 *     a producer writes only into space outside [tail, head).  The mutex
 *     acquire that made the unit visible orders the producer's copy before
 *     the writer thread's reads.
 *   - Per-consumer positions are private to the writer thread.
 *
 * Note [Waking the writer thread]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * The writer thread sleeps in poll() with no timeout unless it has a timer
 * (a redial, the stop deadline), so an idle program costs nothing.  Before
 * sleeping it sets w->polling under the lock after its last look at the
 * ring; a producer that commits afterwards sees polling set and writes one
 * byte to the wake pipe (at most one until the thread drains it:
 * wake_pending).  A producer that committed before that look needs no
 * wake-up.  So the common case of a busy writer costs producers no system
 * call at all.
 *
 * Note [What is dropped, and who is told]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A unit can be lost in three places, each counted by cause:
 *   1. At the door (producer side): policy=drop and no room, block:MS
 *      expired, or the unit is larger than the whole ring.  The loss is
 *      remembered as a gap carried by the next unit that does get in, and
 *      every consumer that reaches that unit is first sent a note.
 *   2. In the ring (writer side): under policy=drop, when the ring cannot
 *      take another unit as large as the largest seen, the writer frees the
 *      oldest half.  Consumers still behind that point are cut loose: each
 *      finishes the unit it was in the middle of (copied aside, so the
 *      stream stays well formed), is sent a note saying how much it missed,
 *      and resumes at a unit boundary.  With no consumer at all the same
 *      rule keeps the newest data for a late joiner (cause no-consumer).
 *   3. On the way out: a consumer fails on a unit (ENOSPC on a file).  A
 *      regular file is truncated back to the unit's start, so what is on
 *      disk stays a valid eventlog prefix; the consumer gets a note next.
 * Under policy=block nothing is dropped in 1 (without MS) or 2: producers
 * wait for the slowest consumer, which is what that policy means.
 * The header chunk is never dropped: it is kept apart and sent first to
 * every consumer.  DATA_END waits for room (up to linger=) whatever the
 * policy, so a stream that reaches its end is complete.
 */

enum consumer_style { CONSUMER_FD, CONSUMER_CALLBACK };

struct consumer {
    struct consumer *next;
    uint64_t id;
    enum consumer_style style;
    int fd;                     /* -1 for callback sinks */
    bool is_socket, is_regular;
    bool dialled;               /* from dial(): redial after it goes */
    bool connecting;            /* non-blocking connect in progress */
    bool read_closed;           /* peer shut its sending side */
    bool want_out;              /* last write would block: poll POLLOUT */
    bool dead;                  /* to be removed */

    size_t header_off;          /* header bytes sent */
    /* Private bytes to send before the next ring unit: the rest of a unit
     * the consumer was cut loose in (see Note [What is dropped...]) and
     * notes. */
    uint8_t *priv;
    size_t priv_len, priv_off, priv_cap;
    uint64_t seq;               /* next ring unit */
    size_t unit_off;            /* bytes of unit seq already sent */
    bool unit_announced;        /* notes for unit seq already queued */
    uint64_t lost_units, lost_bytes;    /* missed, not yet announced */
    uint64_t last_time;         /* end time of the last block sent */
    off_t file_piece_start;     /* regular files: where this piece began */
    uint64_t retry_at_ms;       /* regular files after an error */
};

struct els_writer {
    struct elsi_spec spec;
    const struct els_sink_ops *ops;
    void *sink;
    char endpoint[256];

    pthread_mutex_t lock;
    pthread_cond_t room;        /* producers waiting for room */
    pthread_cond_t changed;     /* a consumer attached (wait=) */
    struct elsi_ring ring;
    uint64_t max_unit_seen;

    /* --- guarded by lock (Note [Queue locking]) --- */
    uint8_t *header;
    size_t header_len;
    uint64_t gap_units, gap_bytes;
    uint8_t gap_cause;
    uint64_t gap_caps;          /* bit c: blocks of capability c in the gap */
    bool gap_global;            /* global blocks in the gap */
    uint64_t released_units, released_bytes;   /* ever released */
    struct els_stats st;
    struct els_cap_stats caps[ELS_MAX_CAPS];
    struct consumer *consumers;
    unsigned room_waiters;
    bool polling, wake_pending;
    bool flush_requested;
    bool stopping;
    uint64_t stop_deadline_ms;
    bool forked;                /* this copy lives in a forked child */
    bool sink_closed;           /* ops->close already called */

    /* --- writer thread only --- */
    pthread_t thread;
    bool thread_started;
    int wake[2];
    uint64_t next_consumer_id;
    bool dial_active;           /* a dialled consumer exists */
    uint64_t next_dial_ms;
    unsigned dial_backoff_ms;
    uint8_t scratch[4096];
    uint8_t *join_buf;          /* callback sinks: a unit that wraps */
    size_t join_cap;

    struct els_writer *next_open;   /* all_writers list, for fork */
};

#define DIAL_BACKOFF_MIN_MS 100u
#define DIAL_BACKOFF_MAX_MS 5000u
/* After a failed write to a consumer that stays attached (a regular file,
 * a callback sink): when to try that consumer again. */
#define RETRY_AFTER_FAILURE_MS 100u
/* Descriptors per byte of ring: RTS units are at most 2 MiB but flushes
 * make small ones; allow one descriptor per 4 KiB, at least 1024. */
#define UNITS_PER_BYTE_SHIFT 12

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void deadline_timespec(uint64_t ms_from_now, struct timespec *ts)
{
    /* Condition variables below use CLOCK_MONOTONIC (see writer_open). */
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += (time_t)(ms_from_now / 1000u);
    ts->tv_nsec += (long)(ms_from_now % 1000u) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

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
    for (struct els_writer *w = all_writers; w != NULL; w = w->next_open)
        pthread_mutex_lock(&w->lock);
}

static void atfork_parent(void)
{
    for (struct els_writer *w = all_writers; w != NULL; w = w->next_open)
        pthread_mutex_unlock(&w->lock);
    pthread_mutex_unlock(&all_writers_lock);
}

static void atfork_child(void)
{
    for (struct els_writer *w = all_writers; w != NULL; w = w->next_open) {
        w->forked = true;
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
    w->next_open = all_writers;
    all_writers = w;
    pthread_mutex_unlock(&all_writers_lock);
}

static void all_writers_remove(struct els_writer *w)
{
    pthread_mutex_lock(&all_writers_lock);
    for (struct els_writer **p = &all_writers; *p != NULL; p = &(*p)->next_open) {
        if (*p == w) {
            *p = w->next_open;
            break;
        }
    }
    pthread_mutex_unlock(&all_writers_lock);
}

// ---------------------------------------------------------------------------
// Producer side
// ---------------------------------------------------------------------------

/* Count a unit lost at the door and remember the gap for the consumers.
 * Lock held. */
static void drop_at_door(struct els_writer *w, size_t len, uint16_t cap,
                         enum els_drop_cause cause)
{
    w->st.units_accepted++;
    w->st.bytes_accepted += len;
    w->st.units_dropped[cause]++;
    w->st.bytes_dropped[cause] += len;
    if (cap < ELS_MAX_CAPS) {
        w->caps[cap].units_accepted++;
        w->caps[cap].bytes_accepted += len;
        w->caps[cap].units_dropped++;
        w->caps[cap].bytes_dropped += len;
        w->gap_caps |= (uint64_t)1 << cap;
    } else if (cap == ELSI_CAP_GLOBAL) {
        w->gap_global = true;
    }
    w->gap_units++;
    w->gap_bytes += len;
    w->gap_cause = (uint8_t)cause;
}

/* Wake the writer thread if it is asleep.  Lock held; returns whether the
 * caller must write the wake byte after unlocking. */
static bool need_wake(struct els_writer *w)
{
    if (w->polling && !w->wake_pending) {
        w->wake_pending = true;
        return true;
    }
    return false;
}

static void send_wake(struct els_writer *w)
{
    static const char byte = 1;
    /* A full pipe already guarantees a wake-up; EAGAIN is fine. */
    ssize_t r;
    do {
        r = write(w->wake[1], &byte, 1);
    } while (r < 0 && errno == EINTR);
}

static int cache_header(struct els_writer *w, const void *unit, size_t len)
{
    if (w->header != NULL) {
        /* A second header in one writer means the RTS restarted logging
         * without stopping this writer: consumers already have a header,
         * and a second one would corrupt their stream. */
        elsi_log(ELS_LOG_WARN, "ignoring a second eventlog header (%zu bytes)", len);
        return 1;
    }
    uint8_t *copy = malloc(len);
    if (copy == NULL)
        return ELS_ENOMEM;
    memcpy(copy, unit, len);
    w->header = copy;
    w->header_len = len;
    w->st.header_bytes = len;
    return 0;
}

int els_writer_write(struct els_writer *w, const void *unit, size_t len)
{
    return els_writer_write_reason(w, unit, len, ELS_REASON_UNKNOWN);
}

int els_writer_write_reason(struct els_writer *w, const void *unit, size_t len,
                            enum els_write_reason reason)
{
    if (w == NULL || unit == NULL || len == 0 ||
        (unsigned)reason >= ELS_REASON__COUNT)
        return ELS_EINVAL;

    struct elsi_unit_info info;
    elsi_unit_classify(unit, len, &info);

    pthread_mutex_lock(&w->lock);
    if (w->forked) {
        drop_at_door(w, len, info.cap, ELS_DROP_FORKED_CHILD);
        pthread_mutex_unlock(&w->lock);
        return 1;
    }
    if (w->stopping) {
        pthread_mutex_unlock(&w->lock);
        return ELS_ESTOPPED;
    }
    if (info.kind == ELSI_UNIT_KIND_HEADER) {
        int r = cache_header(w, unit, len);
        bool wake = need_wake(w);
        pthread_mutex_unlock(&w->lock);
        if (wake)
            send_wake(w);
        return r;
    }

    /* A unit is counted as accepted in the same critical section that
     * queues or drops it, so accepted == sent + dropped + queued holds in
     * every snapshot, even while a producer waits for room. */
    if (len > w->ring.cap || len > UINT32_MAX) {
        drop_at_door(w, len, info.cap, ELS_DROP_TOO_BIG);
        pthread_mutex_unlock(&w->lock);
        return 1;
    }

    struct elsi_unit meta = {
        .kind = (uint8_t)info.kind,
        .cap = info.cap,
        .start_time = info.start_time,
        .end_time = info.end_time,
    };
    uint64_t seq;
    struct iovec iov[2];
    /* DATA_END waits (bounded by linger) whatever the policy: see Note
     * [What is dropped, and who is told]. */
    bool is_end = info.kind == ELSI_UNIT_KIND_END;
    bool may_wait = is_end || w->spec.policy == ELSI_POLICY_BLOCK;
    int64_t wait_ms = is_end ? (int64_t)w->spec.linger_ms : w->spec.block_ms;
    struct timespec deadline;
    if (wait_ms >= 0)
        deadline_timespec((uint64_t)wait_ms, &deadline);

    /* Counted once, whatever happens to the unit next. */
    w->st.units_by_reason[reason]++;
    for (;;) {
        meta.gap_units = w->gap_units;
        meta.gap_bytes = w->gap_bytes;
        meta.gap_cause = w->gap_cause;
        meta.gap_caps = w->gap_caps;
        meta.gap_global = w->gap_global;
        int r = elsi_ring_reserve(&w->ring, len, &meta, &seq, iov);
        if (r == 0)
            break;
        bool wake = need_wake(w);   /* the writer may free room */
        if (!may_wait || w->stopping) {
            drop_at_door(w, len, info.cap,
                         w->stopping ? ELS_DROP_STOPPED : ELS_DROP_QUEUE_FULL);
            pthread_mutex_unlock(&w->lock);
            if (wake)
                send_wake(w);
            return 1;
        }
        if (wake) {
            pthread_mutex_unlock(&w->lock);
            send_wake(w);
            pthread_mutex_lock(&w->lock);
            continue;
        }
        w->room_waiters++;
        int rc = 0;
        if (wait_ms < 0)
            pthread_cond_wait(&w->room, &w->lock);
        else
            rc = pthread_cond_timedwait(&w->room, &w->lock, &deadline);
        w->room_waiters--;
        if (rc == ETIMEDOUT && !elsi_ring_has_room(&w->ring, len)) {
            drop_at_door(w, len, info.cap, ELS_DROP_BLOCK_TIMEOUT);
            pthread_mutex_unlock(&w->lock);
            return 1;
        }
    }
    w->gap_units = w->gap_bytes = 0;
    w->gap_caps = 0;
    w->gap_global = false;
    if (info.cap < ELS_MAX_CAPS) {
        w->caps[info.cap].units_accepted++;
        w->caps[info.cap].bytes_accepted += len;
    }
    if (len > w->max_unit_seen)
        w->max_unit_seen = len;
    w->st.units_accepted++;
    w->st.bytes_accepted += len;
    w->st.units_queued++;
    w->st.bytes_queued += len;
    pthread_mutex_unlock(&w->lock);

    memcpy(iov[0].iov_base, unit, iov[0].iov_len);
    if (iov[1].iov_len)
        memcpy(iov[1].iov_base, (const uint8_t *)unit + iov[0].iov_len,
               iov[1].iov_len);

    pthread_mutex_lock(&w->lock);
    elsi_ring_commit(&w->ring, seq);
    bool wake = need_wake(w);
    pthread_mutex_unlock(&w->lock);
    if (wake)
        send_wake(w);
    return 0;
}

int els_writer_flush(struct els_writer *w)
{
    if (w == NULL)
        return ELS_EINVAL;
    pthread_mutex_lock(&w->lock);
    w->flush_requested = true;
    bool wake = need_wake(w);
    pthread_mutex_unlock(&w->lock);
    if (wake)
        send_wake(w);
    return 0;
}

int els_writer_stats(struct els_writer *w, struct els_stats *out)
{
    if (w == NULL || out == NULL)
        return ELS_EINVAL;
    pthread_mutex_lock(&w->lock);
    *out = w->st;
    pthread_mutex_unlock(&w->lock);
    return 0;
}

int els_writer_cap_stats(struct els_writer *w, unsigned cap,
                         struct els_cap_stats *out)
{
    if (w == NULL || out == NULL || cap >= ELS_MAX_CAPS)
        return ELS_EINVAL;
    pthread_mutex_lock(&w->lock);
    *out = w->caps[cap];
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
// Consumers (writer thread)
// ---------------------------------------------------------------------------

static int consumer_priv_append(struct consumer *c, const void *data, size_t len)
{
    if (c->priv_off == c->priv_len)
        c->priv_off = c->priv_len = 0;
    if (c->priv_len + len > c->priv_cap) {
        size_t cap = c->priv_cap ? c->priv_cap : 256;
        while (cap < c->priv_len + len)
            cap *= 2;
        uint8_t *p = realloc(c->priv, cap);
        if (p == NULL)
            return ELS_ENOMEM;
        c->priv = p;
        c->priv_cap = cap;
    }
    memcpy(c->priv + c->priv_len, data, len);
    c->priv_len += len;
    return 0;
}

/* Queue an in-band note for c (a global block with one log message). */
static void consumer_note(struct consumer *c, uint64_t timestamp,
                          const char *fmt, ...) ELSI_PRINTF(3, 4);

static void consumer_note(struct consumer *c, uint64_t timestamp,
                          const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    uint8_t block[512];
    size_t n = elsi_note_encode(block, sizeof block, timestamp, msg);
    if (n == 0 || consumer_priv_append(c, block, n) != 0)
        elsi_log(ELS_LOG_WARN, "consumer %" PRIu64 ": could not queue note: %s",
                 c->id, msg);
}

static struct consumer *consumer_attach(struct els_writer *w, int fd,
                                        enum consumer_style style, bool dialled)
{
    struct consumer *c = calloc(1, sizeof *c);
    if (c == NULL) {
        if (fd >= 0)
            elsi_close(fd);
        elsi_log(ELS_LOG_ERROR, "out of memory attaching a consumer");
        return NULL;
    }
    c->id = ++w->next_consumer_id;
    c->style = style;
    c->fd = fd;
    c->dialled = dialled;
    if (fd >= 0) {
        struct stat sb;
        c->is_socket = elsi_is_socket(fd);
        c->is_regular = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
        if (c->is_regular)
            c->file_piece_start = lseek(fd, 0, SEEK_CUR);
        else
            elsi_set_nonblock(fd);
    }

    pthread_mutex_lock(&w->lock);
    /* A late joiner starts at the oldest unit still queued. */
    c->seq = w->ring.tail_seq;
    uint64_t missed_units = w->released_units, missed_bytes = w->released_bytes;
    c->next = w->consumers;
    w->consumers = c;
    w->st.consumers_connected++;
    w->st.consumers_total++;
    pthread_cond_broadcast(&w->changed);
    pthread_mutex_unlock(&w->lock);

    if (missed_units > 0)
        consumer_note(c, 0, "eventlog-sink: consumer %" PRIu64 " joined mid-run; "
                      "%" PRIu64 " earlier units (%" PRIu64 " bytes) were no "
                      "longer queued", c->id, missed_units, missed_bytes);
    elsi_log(ELS_LOG_DEBUG, "consumer %" PRIu64 " attached", c->id);
    return c;
}

static void consumer_free(struct els_writer *w, struct consumer *c, bool graceful)
{
    if (c->fd >= 0) {
        /* In a forked child the descriptor is shared with the parent:
         * shutdown() would end the parent's connection.  See Note [Fork]. */
        if (graceful && c->is_socket && !w->forked)
            shutdown(c->fd, SHUT_WR);
        elsi_close(c->fd);
    }
    free(c->priv);
    free(c);
}

/* Unlink dead consumers; redial if a dialled one went away. */
static void consumers_reap(struct els_writer *w)
{
    pthread_mutex_lock(&w->lock);
    struct consumer *dead = NULL;
    for (struct consumer **p = &w->consumers; *p != NULL;) {
        struct consumer *c = *p;
        if (c->dead) {
            *p = c->next;
            c->next = dead;
            dead = c;
            w->st.consumers_connected--;
        } else {
            p = &c->next;
        }
    }
    pthread_mutex_unlock(&w->lock);
    while (dead != NULL) {
        struct consumer *c = dead;
        dead = c->next;
        /* Whatever this consumer had not received is its loss; the other
         * consumers and the ring accounting are unaffected. */
        elsi_log(ELS_LOG_DEBUG, "consumer %" PRIu64 " detached", c->id);
        if (c->dialled) {
            w->dial_active = false;
            w->next_dial_ms = now_ms() + w->dial_backoff_ms;
        }
        consumer_free(w, c, false);
    }
}

static void consumer_kill(struct consumer *c, const char *why, int err)
{
    if (!c->dead)
        elsi_log(err == -EPIPE || err == -ECONNRESET || err == 0
                     ? ELS_LOG_DEBUG : ELS_LOG_WARN,
                 "consumer %" PRIu64 " closed: %s%s%s", c->id, why,
                 err ? ": " : "", err ? els_strerror(err) : "");
    c->dead = true;
}

/*
 * Write one piece (up to two iovecs) to c.  Returns bytes written (>= 0)
 * when the consumer lives on, or -1 when it failed: for a regular file the
 * piece is rolled back and the caller skips it; otherwise c is dead.
 */
static ssize_t consumer_write(struct els_writer *w, struct consumer *c,
                              const struct iovec *iov, int iovcnt)
{
    if (c->style == CONSUMER_CALLBACK) {
        /* The contract promises whole units in one call: join a unit that
         * wraps around the end of the ring. */
        const void *buf = iov[0].iov_base;
        size_t total = iov[0].iov_len;
        if (iovcnt > 1 && iov[1].iov_len > 0) {
            total += iov[1].iov_len;
            if (total > w->join_cap) {
                uint8_t *p = realloc(w->join_buf, total);
                if (p == NULL) {
                    elsi_log(ELS_LOG_ERROR, "out of memory joining a unit");
                    return -1;
                }
                w->join_buf = p;
                w->join_cap = total;
            }
            memcpy(w->join_buf, iov[0].iov_base, iov[0].iov_len);
            memcpy(w->join_buf + iov[0].iov_len, iov[1].iov_base, iov[1].iov_len);
            buf = w->join_buf;
        }
        int r = w->ops->write(w->sink, buf, total);
        if (r < 0) {
            elsi_log(ELS_LOG_WARN, "%s sink write failed: %s",
                     w->spec.scheme, els_strerror(r));
            /* No descriptor to poll: the retry timer wakes us. */
            c->retry_at_ms = now_ms() + RETRY_AFTER_FAILURE_MS;
            return -1;
        }
        return (ssize_t)total;
    }
    ssize_t n = elsi_write_iov(c->fd, c->is_socket, iov, iovcnt);
    if (n >= 0)
        return n;
    if (n == -EAGAIN) {
        c->want_out = true;
        return 0;
    }
    if (c->is_regular) {
        /* Keep the file a valid eventlog prefix: cut the partial piece. */
        if (ftruncate(c->fd, c->file_piece_start) != 0 ||
            lseek(c->fd, c->file_piece_start, SEEK_SET) < 0)
            elsi_log(ELS_LOG_WARN, "could not roll back a partial write: %s",
                     strerror(errno));
        elsi_log(ELS_LOG_WARN, "file write failed: %s", els_strerror((int)n));
        c->retry_at_ms = now_ms() + RETRY_AFTER_FAILURE_MS;
        return -1;
    }
    consumer_kill(c, "write failed", (int)n);
    return -1;
}

/* Does c stay attached after a failed write?  A regular file (ENOSPC may
 * pass) and a callback sink do: the failed piece is skipped (a unit: lost
 * for c, counted and announced) or, for the header, retried.  A socket or
 * pipe that fails is gone. */
static bool consumer_outlives_failure(const struct consumer *c)
{
    return c->is_regular || c->style == CONSUMER_CALLBACK;
}

/* Note a piece fully written to a regular file (the next may roll back to
 * here). */
static void consumer_piece_done(struct consumer *c)
{
    if (c->is_regular)
        c->file_piece_start = lseek(c->fd, 0, SEEK_CUR);
}

/* "capabilities 0 1 and the global buffer" for the blocks in u's gap. */
static void gap_owners(const struct elsi_unit *u, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (unsigned cap = 0; cap < ELS_MAX_CAPS && off < len; cap++) {
        if (u->gap_caps & ((uint64_t)1 << cap)) {
            int n = snprintf(buf + off, len - off, "%s %u",
                             off == 0 ? "capabilities" : "", cap);
            off += n > 0 ? (size_t)n : 0;
        }
    }
    if (u->gap_global && off < len)
        snprintf(buf + off, len - off, "%sthe global buffer",
                 off ? " and " : "");
    else if (off == 0)
        snprintf(buf, len, "unknown origin");
}

/* Before c starts unit u: queue the notes it is owed. */
static void consumer_announce(struct consumer *c, const struct elsi_unit *u)
{
    uint64_t ts = u->start_time ? u->start_time : c->last_time;
    if (c->lost_units > 0) {
        consumer_note(c, ts, "eventlog-sink: this consumer missed %" PRIu64
                      " units (%" PRIu64 " bytes) here: it fell behind or "
                      "failed to take them", c->lost_units, c->lost_bytes);
        c->lost_units = c->lost_bytes = 0;
    }
    if (u->gap_units > 0) {
        char whose[200];
        gap_owners(u, whose, sizeof whose);
        consumer_note(c, ts, "eventlog-sink: %" PRIu64 " units (%" PRIu64
                      " bytes) dropped here: %s; blocks of %s", u->gap_units,
                      u->gap_bytes,
                      els_drop_cause_name((enum els_drop_cause)u->gap_cause),
                      whose);
    }
    c->unit_announced = true;
}

/*
 * Send c as much as it takes now, in stream order: header, private bytes
 * (carry and notes), then ring units below visible.  Lock not held; see
 * Note [Queue locking] for why reading ring bytes is safe.
 */
static void consumer_pump(struct els_writer *w, struct consumer *c,
                          const uint8_t *header, size_t header_len,
                          uint64_t visible)
{
    if (c->dead || c->connecting || header == NULL)
        return;
    if (c->retry_at_ms && now_ms() < c->retry_at_ms)
        return;
    c->retry_at_ms = 0;
    c->want_out = false;

    while (c->header_off < header_len) {
        struct iovec iov = { (void *)(header + c->header_off),
                             header_len - c->header_off };
        ssize_t n = consumer_write(w, c, &iov, 1);
        if (n <= 0)
            return;     /* blocked, dead, or (file) retry later */
        c->header_off += (size_t)n;
        if (c->header_off == header_len)
            consumer_piece_done(c);
    }

    for (;;) {
        if (c->priv_off < c->priv_len) {
            struct iovec iov = { c->priv + c->priv_off, c->priv_len - c->priv_off };
            ssize_t n = consumer_write(w, c, &iov, 1);
            if (n < 0) {
                if (consumer_outlives_failure(c))
                    c->priv_off = c->priv_len;  /* notes lost with the write */
                return;
            }
            if (n == 0)
                return;
            c->priv_off += (size_t)n;
            if (c->priv_off < c->priv_len)
                continue;
            consumer_piece_done(c);
        }
        if (c->seq >= visible)
            return;
        /* c->seq < visible and the tail never passes a consumer, so the
         * unit is retained (Note [Queue locking]). */
        struct elsi_unit *u = elsi_ring_unit_at(&w->ring, c->seq);
        if (c->unit_off == 0 && !c->unit_announced) {
            consumer_announce(c, u);
            if (c->priv_off < c->priv_len)
                continue;
        }
        struct iovec iov[2];
        int cnt = elsi_ring_iov(&w->ring, u, c->unit_off, iov);
        ssize_t n = consumer_write(w, c, iov, cnt);
        if (n < 0) {
            if (consumer_outlives_failure(c)) { /* the unit is lost for c */
                c->lost_units++;
                c->lost_bytes += u->len;
                u->failed = true;
                c->seq++;
                c->unit_off = 0;
                c->unit_announced = false;
            }
            return;
        }
        if (n == 0)
            return;
        c->unit_off += (size_t)n;
        if (c->unit_off < u->len)
            continue;
        consumer_piece_done(c);
        /* Only this thread writes delivered; producers never read it. */
        u->delivered = true;
        if (u->end_time)
            c->last_time = u->end_time;
        c->seq++;
        c->unit_off = 0;
        c->unit_announced = false;
    }
}

/* Has c received everything up to visible? */
static bool consumer_caught_up(const struct consumer *c, size_t header_len,
                               uint64_t visible)
{
    return c->dead || (c->header_off == header_len &&
                       c->priv_off == c->priv_len && c->seq >= visible);
}

// ---------------------------------------------------------------------------
// Releasing units (writer thread, lock held)
// ---------------------------------------------------------------------------

static void release_oldest(struct els_writer *w, enum els_drop_cause cause)
{
    struct elsi_unit *u = elsi_ring_unit(&w->ring, w->ring.tail_seq);
    uint64_t len = u->len;
    if (u->delivered) {
        w->st.units_sent++;
        w->st.bytes_sent += len;
        if (u->failed) {    /* sent, but some consumer missed it */
            w->st.consumer_lost_units++;
            w->st.consumer_lost_bytes += len;
        }
    } else {
        /* A unit a consumer failed on keeps that cause. */
        if (cause != ELS_DROP_STOPPED && u->failed)
            cause = ELS_DROP_SINK_ERROR;
        w->st.units_dropped[cause]++;
        w->st.bytes_dropped[cause] += len;
    }
    w->st.units_queued--;
    w->st.bytes_queued -= len;
    w->released_units++;
    w->released_bytes += len;
    elsi_ring_release(&w->ring);
}

/* Cut c loose so that it resumes at unit `to` (Note [What is dropped...]). */
static void consumer_cut(struct els_writer *w, struct consumer *c, uint64_t to)
{
    uint64_t seq = c->seq;
    uint64_t lost_units = 0, lost_bytes = 0;
    if (c->unit_off > 0) {
        /* Finish the unit it is in the middle of from a private copy. */
        struct elsi_unit *u = elsi_ring_unit(&w->ring, seq);
        struct iovec iov[2];
        int cnt = elsi_ring_iov(&w->ring, u, c->unit_off, iov);
        for (int i = 0; i < cnt; i++)
            consumer_priv_append(c, iov[i].iov_base, iov[i].iov_len);
        if (u->end_time)
            c->last_time = u->end_time;
        u->delivered = true;    /* it will have been, in full */
        seq++;
    }
    for (; seq < to; seq++) {
        struct elsi_unit *u = elsi_ring_unit(&w->ring, seq);
        lost_units++;
        lost_bytes += u->len;
        u->failed = true;
    }
    /* The writer-wide count is taken when the units are released: only a
     * unit some other consumer received is a consumer loss; one nobody
     * received is dropped (release_oldest). */
    c->lost_units += lost_units;
    c->lost_bytes += lost_bytes;
    c->seq = to;
    c->unit_off = 0;
    c->unit_announced = false;
}

/*
 * Release every unit no consumer needs; under policy=drop, when the ring
 * could not take another unit as large as the largest seen, free the
 * oldest units down to half the ring, cutting loose the consumers still
 * in them.  Returns whether anything was released.
 */
static bool release_units(struct els_writer *w)
{
    struct elsi_ring *r = &w->ring;
    uint64_t before = r->tail_seq;

    uint64_t min_seq = r->committed_seq;
    for (struct consumer *c = w->consumers; c != NULL; c = c->next)
        if (!c->dead && c->seq < min_seq)
            min_seq = c->seq;
    bool have_consumers = w->consumers != NULL;
    if (!have_consumers)
        min_seq = r->tail_seq;  /* keep data for a late joiner */
    while (r->tail_seq < min_seq)
        release_oldest(w, ELS_DROP_NO_CONSUMER);

    /* Headroom: with two of the largest units free after this pass, a
     * producer can post once more before the next pass without finding
     * the ring full because of a consumer that is about to be cut.  Rings
     * under four units big cannot afford that and keep room for one. */
    uint64_t max = w->max_unit_seen;
    uint64_t headroom = r->cap >= 4 * max ? 2 * max : max;
    bool pressure = elsi_ring_bytes(r) + headroom > r->cap;
    if (pressure && w->spec.policy == ELSI_POLICY_DROP) {
        /* Free the oldest units until at most half the ring (or, for a
         * small ring, all but the headroom) is in use. */
        uint64_t target = r->cap / 2 < r->cap - headroom ? r->cap / 2
                                                         : r->cap - headroom;
        uint64_t to = r->tail_seq, used = elsi_ring_bytes(r);
        while (to < r->committed_seq && used > target) {
            used -= elsi_ring_unit(r, to)->len;
            to++;
        }
        for (struct consumer *c = w->consumers; c != NULL; c = c->next)
            if (!c->dead && c->seq < to)
                consumer_cut(w, c, to);
        while (r->tail_seq < to)
            release_oldest(w, have_consumers ? ELS_DROP_SINK_ERROR
                                             : ELS_DROP_NO_CONSUMER);
    }
    return r->tail_seq != before;
}

// ---------------------------------------------------------------------------
// The writer thread
// ---------------------------------------------------------------------------

static void dial_maybe(struct els_writer *w, uint64_t now)
{
    if (w->ops->style != ELS_SINK_DIAL || w->dial_active || now < w->next_dial_ms)
        return;
    int fd = -1;
    int r = w->ops->dial(w->sink, &fd);
    if (r == 0 || r == -EINPROGRESS) {
        struct consumer *c = consumer_attach(w, fd, CONSUMER_FD, true);
        if (c != NULL) {
            c->connecting = r == -EINPROGRESS;
            w->dial_active = true;
            w->dial_backoff_ms = DIAL_BACKOFF_MIN_MS;
        }
        return;
    }
    if (fd >= 0)
        elsi_close(fd);
    if (r != -EAGAIN)
        elsi_log(ELS_LOG_WARN, "%s: %s", w->endpoint, els_strerror(r));
    w->next_dial_ms = now + w->dial_backoff_ms;
    w->dial_backoff_ms *= 2;
    if (w->dial_backoff_ms > DIAL_BACKOFF_MAX_MS)
        w->dial_backoff_ms = DIAL_BACKOFF_MAX_MS;
}

static void accept_all(struct els_writer *w)
{
    for (;;) {
        int fd = -1;
        int r = w->ops->accept(w->sink, &fd);
        if (r == -EAGAIN)
            return;
        if (r != 0) {
            /* EMFILE and friends: keep serving the consumers we have. */
            elsi_log(ELS_LOG_WARN, "%s: accept: %s", w->endpoint, els_strerror(r));
            return;
        }
        consumer_attach(w, fd, CONSUMER_FD, false);
    }
}

static void consumer_input(struct els_writer *w, struct consumer *c, short revents)
{
    if (c->connecting) {
        if (revents & (POLLOUT | POLLERR | POLLHUP)) {
            int err = 0;
            socklen_t len = sizeof err;
            if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
                err = errno;
            if (err == ECONNREFUSED || err == ENOENT) {
                /* The collector is not up yet: as quiet as dial()'s
                 * -EAGAIN; the redial backoff applies. */
                c->dead = true;
            } else if (err != 0) {
                consumer_kill(c, "connect failed", -err);
            }
            else
                c->connecting = false;
        }
        return;
    }
    if (revents & POLLIN) {
        /* Consumers have nothing to say yet (control commands are not
         * enabled): read and discard, and notice end of input. */
        ssize_t n;
        do {
            n = read(c->fd, w->scratch, sizeof w->scratch);
        } while (n < 0 && errno == EINTR);
        if (n == 0)
            c->read_closed = true;
        else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            consumer_kill(c, "read failed", -errno);
    }
    if (revents & (POLLERR | POLLHUP | POLLNVAL))
        consumer_kill(c, "hung up", 0);
}

/* After an unexpected failure (no memory, poll error): wait a little
 * rather than spin, then try again. */
static void writer_pause(struct els_writer *w)
{
    struct timespec ts = { 0, 100000000L };
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&w->lock);
    w->polling = false;
    w->wake_pending = false;
    pthread_mutex_unlock(&w->lock);
}

static void *writer_main(void *arg)
{
    struct els_writer *w = arg;
    struct pollfd *pfds = NULL;
    struct consumer **pcons = NULL;
    size_t pcap = 0;

    if (w->ops->style == ELS_SINK_CALLBACK)
        consumer_attach(w, -1, CONSUMER_CALLBACK, false);

    for (;;) {
        uint64_t now = now_ms();
        if (w->ops->style == ELS_SINK_DIAL)
            dial_maybe(w, now);

        pthread_mutex_lock(&w->lock);
        const uint8_t *header = w->header;
        size_t header_len = w->header_len;
        uint64_t visible = w->ring.committed_seq;
        bool flush = w->flush_requested;
        w->flush_requested = false;
        pthread_mutex_unlock(&w->lock);

        for (struct consumer *c = w->consumers; c != NULL; c = c->next)
            consumer_pump(w, c, header, header_len, visible);
        consumers_reap(w);
        if (flush && w->ops->flush != NULL)
            w->ops->flush(w->sink);

        pthread_mutex_lock(&w->lock);
        if (release_units(w) && w->room_waiters > 0)
            pthread_cond_broadcast(&w->room);
        bool all_caught_up = true;
        size_t n_cons = 0;
        for (struct consumer *c = w->consumers; c != NULL; c = c->next) {
            n_cons++;
            if (!consumer_caught_up(c, header_len, w->ring.committed_seq))
                all_caught_up = false;
        }
        bool more_now = w->ring.committed_seq != visible ||
                        w->header_len != header_len || w->flush_requested;
        bool stopping = w->stopping;
        uint64_t stop_deadline = w->stop_deadline_ms;
        if (stopping && w->ops->style == ELS_SINK_LISTEN && !w->sink_closed) {
            /* Stop listening as soon as the stream is ending: a client that
             * connected later would be queued by the kernel and then cut
             * off with nothing; refused, it can retry and reach the next
             * stream (after a restart) instead. */
            w->sink_closed = true;
            pthread_mutex_unlock(&w->lock);
            accept_all(w);  /* those already queued get the rest */
            w->ops->close(w->sink);
            pthread_mutex_lock(&w->lock);
        }
        if (stopping) {
            bool done = (all_caught_up && !more_now &&
                         w->ring.committed_seq == w->ring.head_seq) ||
                        n_cons == 0 || now_ms() >= w->stop_deadline_ms;
            if (done) {
                pthread_mutex_unlock(&w->lock);
                break;
            }
        }
        if (more_now) {
            pthread_mutex_unlock(&w->lock);
            continue;
        }
        w->polling = true;
        pthread_mutex_unlock(&w->lock);

        /* Build the poll set. */
        size_t need = 2 + n_cons;
        if (need > pcap) {
            size_t cap = need * 2;
            struct pollfd *np = realloc(pfds, cap * sizeof *np);
            if (np != NULL)
                pfds = np;
            struct consumer **nc = realloc(pcons, cap * sizeof *nc);
            if (nc != NULL)
                pcons = nc;
            if (np == NULL || nc == NULL) {
                elsi_log(ELS_LOG_ERROR, "out of memory in the writer thread");
                writer_pause(w);
                continue;
            }
            pcap = cap;
        }
        size_t n = 0;
        pfds[n] = (struct pollfd){ .fd = w->wake[0], .events = POLLIN };
        pcons[n++] = NULL;
        int listen_fd = -1;
        if (w->ops->style == ELS_SINK_LISTEN && !stopping) {
            listen_fd = w->ops->listen_fd(w->sink);
            pfds[n] = (struct pollfd){ .fd = listen_fd, .events = POLLIN };
            pcons[n++] = NULL;
        }
        int timeout = -1;
        uint64_t t = now_ms();
        for (struct consumer *c = w->consumers; c != NULL; c = c->next) {
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
        if (w->ops->style == ELS_SINK_DIAL && !w->dial_active) {
            int d = w->next_dial_ms > t ? (int)(w->next_dial_ms - t) : 0;
            if (timeout < 0 || d < timeout)
                timeout = d;
        }
        if (stopping) {
            int d = stop_deadline > t ? (int)(stop_deadline - t) : 0;
            if (timeout < 0 || d < timeout)
                timeout = d;
        }

        int pr = poll(pfds, (nfds_t)n, timeout);
        int poll_errno = errno;

        pthread_mutex_lock(&w->lock);
        w->polling = false;
        w->wake_pending = false;
        pthread_mutex_unlock(&w->lock);

        if (pr < 0) {
            if (poll_errno != EINTR) {
                elsi_log(ELS_LOG_ERROR, "poll: %s", strerror(poll_errno));
                writer_pause(w);
            }
            continue;
        }
        if (pfds[0].revents & POLLIN) {
            while (read(w->wake[0], w->scratch, sizeof w->scratch) > 0) {
            }
        }
        for (size_t i = 1; i < n; i++) {
            if (pfds[i].revents == 0)
                continue;
            if (pfds[i].fd == listen_fd && pcons[i] == NULL)
                accept_all(w);
            else if (pcons[i] != NULL)
                consumer_input(w, pcons[i], pfds[i].revents);
        }
        consumers_reap(w);
    }

    /* Stopped: whatever is still queued was not delivered in time. */
    pthread_mutex_lock(&w->lock);
    while (w->ring.tail_seq < w->ring.committed_seq)
        release_oldest(w, ELS_DROP_STOPPED);
    for (struct consumer *c = w->consumers; c != NULL; c = c->next)
        c->dead = true;
    pthread_mutex_unlock(&w->lock);
    for (struct consumer *c = w->consumers; c != NULL;) {
        struct consumer *next = c->next;
        /* Graceful: the consumer sees a clean end of stream. */
        consumer_free(w, c, true);
        c = next;
    }
    pthread_mutex_lock(&w->lock);
    w->consumers = NULL;
    w->st.consumers_connected = 0;
    pthread_cond_broadcast(&w->room);
    pthread_mutex_unlock(&w->lock);
    free(pfds);
    free(pcons);
    return NULL;
}

// ---------------------------------------------------------------------------
// Open and close
// ---------------------------------------------------------------------------

static void writer_free(struct els_writer *w)
{
    if (w->wake[0] >= 0)
        elsi_close(w->wake[0]);
    if (w->wake[1] >= 0)
        elsi_close(w->wake[1]);
    elsi_ring_destroy(&w->ring);
    elsi_spec_free(&w->spec);
    free(w->header);
    free(w->join_buf);
    pthread_cond_destroy(&w->room);
    pthread_cond_destroy(&w->changed);
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

int els_writer_open(const char *spec, struct els_writer **out,
                    char *err, size_t err_len)
{
    if (err != NULL && err_len > 0)
        err[0] = '\0';
    if (spec == NULL || out == NULL)
        return elsi_fail(err, err_len, ELS_EINVAL, "no spec given");
    *out = NULL;
    pthread_once(&atfork_once, atfork_register);

    struct els_writer *w = calloc(1, sizeof *w);
    if (w == NULL)
        return elsi_fail(err, err_len, ELS_ENOMEM, "out of memory");
    w->wake[0] = w->wake[1] = -1;
    pthread_mutex_init(&w->lock, NULL);
    init_monotonic_cond(&w->room);
    init_monotonic_cond(&w->changed);
    w->dial_backoff_ms = DIAL_BACKOFF_MIN_MS;

    int r = elsi_spec_parse(spec, &w->spec, err, err_len);
    if (r != 0)
        goto fail;
    w->ops = w->spec.ops;
    uint64_t units = w->spec.buffer_bytes >> UNITS_PER_BYTE_SHIFT;
    r = elsi_ring_init(&w->ring, w->spec.buffer_bytes, units < 1024 ? 1024 : units);
    if (r != 0) {
        elsi_fail(err, err_len, r, "spec \"%s\": cannot allocate a %" PRIu64
                  "-byte buffer", spec, w->spec.buffer_bytes);
        goto fail;
    }
    r = elsi_pipe_nb(w->wake);
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
    if (w->ops->endpoint == NULL ||
        w->ops->endpoint(w->sink, w->endpoint, sizeof w->endpoint) < 0)
        snprintf(w->endpoint, sizeof w->endpoint, "%s", spec);

    /* The writer thread must never take a signal meant for the program
     * (the RTS's timer, SIGINT...) and must hold SIGPIPE blocked for pipe
     * writes (see fdutil.h), so it starts with every signal blocked. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    r = -pthread_create(&w->thread, NULL, writer_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r != 0) {
        elsi_fail(err, err_len, r, "cannot start the writer thread: %s",
                  els_strerror(r));
        w->ops->close(w->sink);
        goto fail;
    }
    w->thread_started = true;
    all_writers_add(w);

    if (w->spec.wait_ms > 0) {
        elsi_log(ELS_LOG_INFO, "waiting up to %.3g s for a consumer on %s",
                 w->spec.wait_ms / 1000.0, w->endpoint);
        struct timespec deadline;
        deadline_timespec(w->spec.wait_ms, &deadline);
        pthread_mutex_lock(&w->lock);
        int rc = 0;
        while (w->st.consumers_total == 0 && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&w->changed, &w->lock, &deadline);
        bool got = w->st.consumers_total > 0;
        pthread_mutex_unlock(&w->lock);
        if (!got)
            elsi_log(ELS_LOG_WARN, "no consumer on %s after %.3g s; going on",
                     w->endpoint, w->spec.wait_ms / 1000.0);
    }
    *out = w;
    return 0;

fail:
    writer_free(w);
    return r;
}

static void log_losses(struct els_writer *w, const struct els_stats *s)
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
                 PRIu64 " bytes): %s", w->endpoint, units, s->units_accepted,
                 bytes, detail);
    if (s->consumer_lost_units > 0)
        elsi_log(ELS_LOG_WARN, "%s: slow consumers missed %" PRIu64 " units (%"
                 PRIu64 " bytes) that others received", w->endpoint,
                 s->consumer_lost_units, s->consumer_lost_bytes);
}

int els_writer_close(struct els_writer *w)
{
    if (w == NULL)
        return ELS_EINVAL;
    all_writers_remove(w);

    pthread_mutex_lock(&w->lock);
    bool forked = w->forked;
    pthread_mutex_unlock(&w->lock);

    if (forked) {
        /* Note [Fork]: no thread to join; descriptors are shared. */
        for (struct consumer *c = w->consumers; c != NULL;) {
            struct consumer *next = c->next;
            consumer_free(w, c, false);
            c = next;
        }
        if (!w->sink_closed)
            w->ops->close(w->sink);
        writer_free(w);
        return 0;
    }

    pthread_mutex_lock(&w->lock);
    w->stopping = true;
    w->stop_deadline_ms = now_ms() + w->spec.linger_ms;
    bool wake = need_wake(w);
    pthread_cond_broadcast(&w->room);   /* blocked producers give up */
    pthread_mutex_unlock(&w->lock);
    if (wake)
        send_wake(w);
    if (w->thread_started)
        pthread_join(w->thread, NULL);

    /* Producers blocked for room were woken above and see stopping; wait
     * for them to leave before freeing what they wait on. */
    pthread_mutex_lock(&w->lock);
    while (w->room_waiters > 0) {
        pthread_mutex_unlock(&w->lock);
        sched_yield();
        pthread_mutex_lock(&w->lock);
    }
    struct els_stats s = w->st;
    pthread_mutex_unlock(&w->lock);

    log_losses(w, &s);
    if (!w->sink_closed)
        w->ops->close(w->sink);
    writer_free(w);
    return 0;
}

int els_stats_format(const struct els_stats *s, char *buf, size_t len)
{
    uint64_t du = 0, db = 0;
    for (int i = 0; i < ELS_DROP__COUNT; i++) {
        du += s->units_dropped[i];
        db += s->bytes_dropped[i];
    }
    return snprintf(buf, len,
                    "units accepted %" PRIu64 " sent %" PRIu64 " dropped %" PRIu64
                    " queued %" PRIu64 "; bytes accepted %" PRIu64 " sent %" PRIu64
                    " dropped %" PRIu64 " queued %" PRIu64 "; consumers %" PRIu64
                    " now, %" PRIu64 " total; consumer losses %" PRIu64 " units",
                    s->units_accepted, s->units_sent, du, s->units_queued,
                    s->bytes_accepted, s->bytes_sent, db, s->bytes_queued,
                    s->consumers_connected, s->consumers_total,
                    s->consumer_lost_units);
}
