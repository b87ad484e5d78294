/*
 * writer_impl.h: what the pieces of the writer share.  The writer is one
 * object (struct els_writer) worked on from two sides: posting threads
 * (lib/writer/producer.c) and its own writer thread (lib/writer/loop.c,
 * consumer.c, release.c); lib/writer/writer.c opens, closes and reports
 * on it.  This header holds the object, its consumers, and the Notes that
 * say who may touch what and when.  Not its job: the queue itself
 * (queue/unitq.h), sinks (sinks/), the eventlog format (format/).
 */
#ifndef ELS_WRITER_IMPL_H
#define ELS_WRITER_IMPL_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "writer/writer_ops.h"
#include "eventlog-sink.h"
#include "format/evformat.h"
#include "base/log.h"
#include "queue/pool.h"
#include "queue/unitq.h"
#include "writer/trigger.h"
#include "sinks/spec.h"

/*
 * Note [Queue locking]
 * ~~~~~~~~~~~~~~~~~~~~
 * w->lock guards the queue (head, tail, descriptors), the cached header,
 * the counters, the consumer list's membership and every field of struct
 * els_writer whose group says "lock".  It is held only for bookkeeping,
 * never across I/O or a large copy:
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
 * Note [Producers in flight]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~
 * els_writer_close() frees the writer, and producers may be inside
 * els_writer_write() when it begins (libuv's rule for uv_close(): free
 * only after every caller has left).  w->life.producers counts the calls that
 * got past the stopping check and have not left; a producer touches w
 * outside the lock only to copy into its reserved space, and wakes the
 * writer thread before its last unlock, so once close has set stopping
 * and seen producers == 0 under the lock no producer will touch w again
 * (new calls see stopping and return ELS_ESTOPPED without touching
 * anything after their unlock).  Close waits on producers_left; the wait
 * is short, because a producer waiting for room gives up as soon as it
 * sees stopping and a copy is a memcpy.  A call that starts after close
 * returned is the caller's bug, as for any freed object.
 *
 * Note [Waking the writer thread]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * The writer thread sleeps in poll() with no timeout unless it has a timer
 * (a redial, the stop deadline), so an idle program costs nothing.  Before
 * sleeping it sets w->queue.polling under the lock after its last look at the
 * queue; a producer that commits afterwards sees polling set and writes one
 * byte to the wake pipe (at most one until the thread drains it:
 * wake_pending).  A producer that committed before that look needs no
 * wake-up.  So the common case of a busy writer costs producers no system
 * call at all.
 *
 * Note [What is dropped, and who is told]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A unit can be lost in three places, each counted by cause:
 *   1. At the door (producer side): policy=drop and no room, block:MS
 *      expired, or the unit is larger than the whole queue.  The loss is
 *      remembered as a gap carried by the next unit that does get in, and
 *      every consumer that reaches that unit is first sent a note.
 *   2. In the queue (writer side): under policy=drop, when the queue cannot
 *      take another unit as large as the largest seen, the writer frees the
 *      oldest half.  Consumers still behind that point are cut loose: each
 *      finishes the unit it was in the middle of (copied aside, so the
 *      stream stays well formed), is sent a note saying how much it missed,
 *      and resumes at a unit boundary.  With no consumer at all the same
 *      rule keeps the newest data for a late joiner (cause no-consumer).
 *   3. On the way out: a consumer fails on a unit (ENOSPC on a file).  A
 *      regular file is truncated back to the unit's start, so what is on
 *      disk stays a valid eventlog prefix; the consumer gets a note next.
 * Under policy=block nothing is dropped in 1 (without MS) or 2 for the
 * trusted consumers: producers wait for the slowest of them, which is what
 * that policy means (Note [Trusted consumers]).  The header chunk is never
 * dropped: it is kept apart and sent first to every consumer.  DATA_END
 * waits for room (up to the stop deadline) whatever the policy, so a
 * stream that reaches its end is complete.  Causes as users read them:
 * a consumer cut loose is slow-consumer, a failed write sink-error, units
 * still queued at the end stopped when a consumer was there to take them
 * and no-consumer when none was.
 *
 * Note [How long producers wait]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Stop has one deadline: linger= after the first of (a) the first unit of
 * the stop (reason STOP, or DATA_END) and (b) els_writer_close()
 * (elsi_stop_clock).  A producer that finds no room waits:
 *   - DATA_END (any policy) and STOP units (policy=block): until the stop
 *     deadline (or MS under block:MS, if sooner), then dropped as stopped
 *     (block-timeout after MS), so the whole stop, however many units it
 *     writes, waits at most linger=;
 *   - FLUSH units under policy=block: at most linger= (or MS if smaller),
 *     then block-timeout.  The RTS writes them with every capability
 *     stopped and its state mutex held; waiting longer would keep the stop
 *     that follows from ever starting;
 *   - other units under block: for ever, or MS under block:MS;
 *   - anything else: not at all (queue-full).
 * Close sets stopping, which wakes every waiter and makes it drop.
 *
 * Note [Stop deadline]
 * ~~~~~~~~~~~~~~~~~~~~
 * The writer thread delivers until the stop deadline and then closes its
 * consumers; els_writer_close() waits for it until the deadline plus
 * STOP_GRACE_MS.  A thread still inside a sink call then (a callback that
 * blocks, a write to a file on a stalled filesystem) is not waited for:
 * close sets abandoned under the lock, detaches the thread and returns;
 * the thread, when the call returns, finishes its loop, sees abandoned
 * under the lock and calls elsi_writer_finish() itself.  thread_done and
 * abandoned are both read and written under the lock, so exactly one of
 * the two frees the writer, and close touches nothing of w after its
 * unlock (it copies what it reports first).  Once abandoned, a sink call
 * that returns is followed by no other (elsi_consumer_pump() checks it).
 *
 * Note [Trusted consumers]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * Under policy=block a consumer that does not read stops the program, so
 * only consumers the program trusts count: callback sinks, dialled files
 * and FIFOs (whose mode says who may open them), UNIX-socket peers whose
 * SO_PEERCRED uid is the program's effective uid or root (the client of a
 * unix: sink; for unix-connect: the process that listens, since naming a
 * path is not knowing who binds it), and a connect-out collector the user
 * vouched for (trust=1) or that proved collector-secret= (Note [Collector
 * proof], lib/control/collector.c).  Whoever listens first at a tcp-connect:
 * port could be any local user, so without one of those a TCP collector
 * is not trusted.  Everyone else is served as under policy=drop:
 * release.c never keeps a unit for them that the trusted consumers are
 * done with, and cuts them loose when the queue needs room.  A collector
 * that proves the secret becomes trusted from then on; the start-up line
 * and a line per untrusted collector say which is which
 * (consumer.c, lib/control/collector.c).
 *
 * Note [Consumer memory]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * Besides the queue, the writer holds memory for individual consumers:
 * the rest of a unit a consumer was cut loose in (up to a whole unit: for
 * the GHC RTS one capability's buffer, +RTS --eventlog-buffer-size, 2 MiB
 * unless changed; the glue refuses a size above consumer-memory=, Note
 * [Unit size and the sink's limits] in lib/ghc/ghc.c) and in-band notes.  priv_bytes (writer thread only) is
 * the sum of their private buffers, which are freed as soon as they are
 * sent, and consumer_priv_append() refuses to grow it past
 * consumer-memory=.  A consumer whose copy or note is refused cannot go on
 * with a well-formed stream, so it is closed (counted in
 * consumers_dropped_memory, logged); the units it left are accounted as
 * for any consumer that goes away.  Control sessions count in the same
 * sum (Note [Control memory], lib/control/session.c).  So the library's memory is buffer= +
 * consumer-memory= + a fixed few hundred bytes per consumer, at most
 * max-consumers= of them.
 *
 * Note [Late joiners]
 * ~~~~~~~~~~~~~~~~~~~
 * A consumer that attaches once units of the stream have been released
 * would start in the middle of the program's story: blocks that run,
 * stop and delete threads and tasks it never saw created, which readers
 * that track them (ghc-events validate, ThreadScope) reject or silently
 * truncate.  When the producer registered a snapshot source, such a
 * consumer instead waits (awaiting_snapshot, sending nothing but the
 * header) and the writer thread asks for a join snapshot.  The producer
 * queues it as a unit of kind ELSI_UNIT_KIND_JOIN, written after every
 * unit before its point and before every unit after it (for the GHC RTS:
 * with every capability stopped, after every buffer was written out).  A
 * waiting consumer whose join_after is at or below that unit's sequence
 * number starts there: header, snapshot, the rest.  Any join unit after
 * the consumer attached is a valid start, so one snapshot serves every
 * consumer that was waiting for it.  Everyone else steps over join units
 * without sending them.  A waiting consumer keeps the units after its
 * join_after (it may yet need them, below) but never holds producers
 * back: under policy=block it is served as an untrusted consumer (a
 * producer that waits for room while the RTS has every capability
 * stopped to write the snapshot must never wait on it), and cutting it
 * loose only moves its position.  A join unit never waits for room: one
 * that finds none is not queued and is asked for again (Note [Asking
 * again for a join snapshot]).  A consumer still waiting when the stream
 * ends or after ELS_SNAPSHOT_WAIT_MS starts at the oldest unit still
 * queued, with a note, as it would without a snapshot source.  Join units
 * are not part of the stream: they have their own counters, not accepted/
 * sent/dropped, and they never carry or clear a gap.
 *
 * Note [Asking again for a join snapshot]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A join unit comes while the producer has every thread stopped (the RTS
 * takes it with every capability stopped), so it cannot wait for room;
 * but under policy=block with a slow trusted consumer the queue is full
 * exactly then, and again whenever room appears, since the producers
 * waiting for room take it first.  Asking again at once would only be
 * refused again.  So the writer thread, seeing a refusal
 * (snapshots_not_queued grew) while consumers await a snapshot, asks
 * again only once the queue has room for the refused unit, and from the
 * refusal until then, under policy=block, producers leave that much room
 * free (join_reserve: a stream unit other than DATA_END waits until the
 * queue holds it and the reserve).  Between the request and the answer the
 * producer only posts units that leave the reserve free, so a snapshot no
 * larger than the refused one fits.  A larger one is refused again and
 * the reserve grows to it.  Bounded: at most JOIN_ASKS_MAX requests again
 * while consumers wait, a reserve of at most half the queue, and no
 * consumer waits past ELS_SNAPSHOT_WAIT_MS; the reserve ends when no
 * consumer waits any more or the writer stops.  Under policy=drop the
 * writer frees room itself (release.c), so the request again needs no
 * reserve.
 */

enum elsi_consumer_style { ELSI_CONSUMER_FD, ELSI_CONSUMER_CALLBACK };

struct elsi_consumer {
    struct elsi_consumer *next;
    uint64_t id;
    enum elsi_consumer_style style;
    int fd;                     /* -1 for callback sinks */
    bool is_socket, is_regular;
    bool dialled;               /* from dial(): redial after it goes */
    bool connecting;            /* non-blocking connect in progress */
    bool read_closed;           /* peer shut its sending side */
    bool want_out;              /* last write would block: poll POLLOUT */
    bool dead;                  /* to be removed */
    /* May hold producers back under policy=block (Note [Trusted
     * consumers]). */
    bool trusted;

    size_t header_off;          /* header bytes sent */
    /* Private bytes to send before the next queued unit: the rest of a unit
     * the consumer was cut loose in (see Note [What is dropped...]) and
     * notes. */
    uint8_t *priv;
    size_t priv_len, priv_off, priv_cap;
    uint64_t seq;               /* next queued unit */
    size_t unit_off;            /* bytes of unit seq already sent */
    bool unit_announced;        /* notes for unit seq already queued */
    uint64_t lost_units, lost_bytes;    /* missed, not yet announced */
    unsigned lost_causes;       /* bit per enum els_drop_cause of those */
    /* Announced in a note still in priv: if writing priv fails, they are
     * missed again (the note went with the write) and the next unit's
     * note says so. */
    uint64_t noted_units, noted_bytes;
    unsigned noted_causes;
    struct elsi_ratelimit log;  /* its repeating failures */
    uint64_t last_time;         /* end time of the last block sent */
    off_t file_piece_start;     /* regular files: where this piece began */
    uint64_t retry_at_ms;       /* regular files after an error; control
                                 * clients: Note [Control-only hello
                                 * deadline] */
    /* Note [Late joiners]: waiting for a join unit at or after join_after,
     * since await_since_ms. */
    bool awaiting_snapshot;
    uint64_t join_after;
    uint64_t join_start;        /* the join unit it started at, or JOIN_NONE */
    uint8_t last_kind;          /* kind of the last unit sent in full */
    /* A dump of a flight recorder (Note [Flight recorder]): units up to
     * dump_end, then the end marker (dump_closed: queued), then done. */
    bool dump, dump_closed, dump_done;
    uint64_t dump_end;
    int dump_error;             /* the write that failed it */
    uint64_t await_since_ms;
    /* The layer above's state for it (a control session, once it sent
     * something, or a collector's challenge): writer/writer_ops.h. */
    void *session;
};

/*
 * The writer, grouped by concern.  Each group names the file that changes
 * it and the rule for touching it; "lock" is w->lock (Note [Queue
 * locking]), "writer thread" means lib/writer's own thread only.
 */
struct els_writer {
    /* Set at open (writer.c) and never changed: read anywhere without
     * the lock. */
    struct elsi_spec spec;
    const struct els_sink_ops *ops;
    void *sink;
    /* The sink's endpoint(), whole: a unix: path is absolute, so it may
     * be as long as a path. */
    char endpoint[PATH_MAX + 64];

    /* The one lock of every group below that says "lock", and the
     * condition that anyone waiting for the writer to change waits on (a
     * consumer attached for wait=, a dump answered, the thread done). */
    pthread_mutex_t lock;
    pthread_cond_t changed;

    /* The queue: units in, units out.  Owners: lib/writer/producer.c puts
     * units in, release.c takes them out; loop.c sets join_reserve and
     * clears flush_requested.  Lock, except that queued bytes of committed
     * units are read without it (Note [Queue locking]). */
    struct {
        pthread_cond_t room;        /* producers waiting for room */
        unsigned room_waiters;
        struct elsi_unitq uq;
        struct elsi_pool pool;      /* Note [Units handed over] */
        uint64_t max_unit_seen;
        uint8_t *header;
        size_t header_len;
        uint64_t gap_units, gap_bytes;
        uint8_t gap_cause;
        uint64_t gap_caps;          /* bit c: blocks of capability c in the gap */
        bool gap_global;            /* global blocks in the gap */
        uint64_t released_units, released_bytes;   /* ever released */
        bool polling, wake_pending; /* Note [Waking the writer thread] */
        bool flush_requested;
        /* Note [Late joiners]: the newest join unit's sequence number
         * (JOIN_NONE if none was queued), and the source to ask for one. */
        uint64_t join_seq;
        uint64_t join_at;           /* uq.copied_in before it */
        els_snapshot_request_fn snapshot_request;
        void *snapshot_ctx;
        /* Note [Asking again for a join snapshot]: the size of the last
         * join unit refused for want of room (producer side), and the
         * room that producers under policy=block leave free for the next
         * one. */
        uint64_t join_refused_len;
        uint64_t join_reserve;
    } queue;

    /* The consumers and how they come: consumer.c (attach, send, reap)
     * and loop.c (accept, dial, poll).  list's membership and awaiting:
     * lock; the rest: writer thread. */
    struct {
        struct elsi_consumer *list;
        unsigned awaiting;          /* consumers awaiting_snapshot */
        uint64_t next_consumer_id;
        bool dial_active;           /* a dialled consumer exists */
        uint64_t next_dial_ms;
        unsigned dial_backoff_ms;
        uint64_t listen_resume_ms;  /* accept() failed: listener rests until */
        unsigned accept_backoff_ms;
        uint8_t scratch[4096];      /* input read and discarded, or handed up */
        uint8_t *join_buf;          /* callback sinks: a unit that wraps */
        size_t join_cap;
        /* Note [Asking again for a join snapshot]: refusals seen so far,
         * a request due once there is room, and requests made again while
         * these consumers wait (loop.c). */
        uint64_t join_refusals_seen;
        bool join_ask_due;
        unsigned join_asks;
        struct elsi_ratelimit consumer_log, accept_log, refuse_log, dial_log,
                              loop_log;
    } cons;

    /* The flight recorder (Note [Flight recorder]): recorder.c.  Dumps asked
     * for (tickets handed out) and answered (done), the last one's result
     * and file, under the lock (waiters wait on changed); the dump being
     * written and the recorder's own snapshot requests: writer thread. */
    struct {
        uint64_t dump_tickets, dump_answered;
        bool dump_active;           /* a dump consumer reads the queue */
        /* While dump_active: the dump has written every unit below this
         * (writer thread stores, producers load under the lock). */
        _Atomic uint64_t dump_floor;
        int dump_result;
        char dump_name[4096];       /* the file, or why there is none */
        struct elsi_consumer *dumping;   /* the dump being written, or NULL */
        uint64_t dump_serving;      /* tickets it answers */
        char dump_file[4096];
        enum els_dump_reason dump_why;
        /* A triggered dump: its number and cause (0: not triggered). */
        unsigned dump_nth;
        char dump_cause[ELSI_TRIGGER_CAUSE_MAX];
        bool exit_dumped;           /* the dump at the end was started */
        /* max-dumps= (0: no bound) and the dumps written that count
         * against it, every one but the dump at the end (writer
         * thread). */
        unsigned max_dumps, dumps_counted;
        bool recorder_asked;        /* a join snapshot was asked for ... */
        uint64_t recorder_asked_join, recorder_asked_ms;   /* ... when */
        /* Note [Triggered dumps] (writer/trigger.c): the evaluator
         * (NULL without dump-on=; writer thread), the next unit it reads
         * (writer thread), and the unit it is reading without the lock
         * (eval_active, eval_seq: lock; producers evict nothing from
         * eval_seq on while it is set). */
        struct elsi_trigger *trigger;
        bool trigger_header_fed;
        uint64_t eval_next;
        bool eval_active;
        uint64_t eval_seq;
    } rec;

    /* The layer above (writer/writer_ops.h): set by writer.c at open, read by
     * the writer thread and at free; state is the layer's, never looked
     * into here. */
    struct {
        const struct elsi_writer_ops *ops;
        void *state;
    } ctl;

    /* The counters.  st and caps: lock (producers and the writer thread
     * add, els_writer_stats() reads); the rest: writer thread, copied
     * into st by loop.c's publish_counters(). */
    struct {
        struct els_stats st;
        struct els_cap_stats caps[ELS_MAX_CAPS];
        uint64_t priv_bytes, priv_bytes_peak;   /* Note [Consumer memory] */
        uint64_t dropped_for_memory;
        uint64_t refused;           /* connections over max-consumers= */
        uint64_t accept_errors;
    } stats;

    /* Start and end: writer.c (open, close, fork), loop.c (the thread's
     * end).  Lock, except thread, thread_started and wake (set at open)
     * and abandoned (Note [Stop deadline]). */
    struct {
        pthread_t thread;
        bool thread_started;
        int wake[2];                /* Note [Waking the writer thread] */
        unsigned producers;         /* Note [Producers in flight] */
        pthread_cond_t producers_left;
        bool stopping;
        bool stop_clock;            /* stop_deadline_ms is set */
        uint64_t stop_deadline_ms;  /* Note [How long producers wait] */
        bool forked;                /* this copy lives in a forked child */
        bool thread_done;           /* the writer thread has finished */
        /* Close returned without the writer thread: Note [Stop deadline].
         * Written and read under the lock; atomic so that elsi_consumer_pump()
         * may also look without it, to send nothing more once it is set. */
        atomic_bool abandoned;
        bool sink_closed;           /* ops->close already called */
        /* The stop report's consumers still behind at the deadline, each
         * with what it missed (loop.c writes it as the thread ends; close
         * logs it after the join). */
        char behind_detail[320];
        struct els_writer *next_open;   /* all_writers list, for fork */
    } life;
};

#define DIAL_BACKOFF_MIN_MS 100u
#define DIAL_BACKOFF_MAX_MS 5000u
/* How long close waits for the writer thread past the stop deadline
 * (it closes the consumers then) before leaving it behind. */
#define STOP_GRACE_MS 250u
/* accept() failing for want of descriptors (EMFILE, ENFILE...): how long
 * the listener rests before the next try, doubling. */
#define ACCEPT_BACKOFF_MIN_MS 100u
#define ACCEPT_BACKOFF_MAX_MS 5000u
/* After a failed write to a consumer that stays attached (a regular file,
 * a callback sink): when to try that consumer again. */
#define RETRY_AFTER_FAILURE_MS 100u
/* Descriptors per byte of queue: RTS units are at most one capability's
 * buffer (2 MiB by default, 64 KiB at the least) but flushes make small
 * ones; allow one descriptor per 4 KiB, at least 1024. */
#define UNITS_PER_BYTE_SHIFT 12
/* Consumers named, each with what it missed, in the stop report. */
#define BEHIND_DETAIL_MAX 4u
/* No join unit queued yet. */
#define JOIN_NONE UINT64_MAX
/* Requests for a join snapshot made again after refusals while the same
 * consumers wait: Note [Asking again for a join snapshot]. */
#define JOIN_ASKS_MAX 8u

static inline void elsi_deadline_timespec(uint64_t ms_from_now, struct timespec *ts)
{
    /* Condition variables of the writer use CLOCK_MONOTONIC (see
     * els_writer_open). */
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += (time_t)(ms_from_now / 1000u);
    ts->tv_nsec += (long)(ms_from_now % 1000u) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

// ---------------------------------------------------------------------------
// The writer thread (loop.c)
// ---------------------------------------------------------------------------

/* The writer thread's body; arg is the writer. */
void *elsi_writer_main(void *arg);

/* Close the sink if still open and free w (writer.c). */
void elsi_writer_finish(struct els_writer *w);

/* Wake the writer thread if it is asleep.  Lock held; returns whether the
 * caller must call elsi_writer_send_wake() after unlocking.  See Note
 * [Waking the writer thread]. */
bool elsi_writer_need_wake(struct els_writer *w);

// ---------------------------------------------------------------------------
// Consumers (consumer.c, outgoing.c; writer thread only, except where said)
// ---------------------------------------------------------------------------

struct elsi_consumer *elsi_consumer_attach(struct els_writer *w, int fd,
                                      enum elsi_consumer_style style, bool dialled);
/* Note [Trusted consumers], as a decision on what is known of a
 * consumer: its style, its peer's address family (AF_UNSPEC: not a
 * socket, a file or FIFO) and, for a UNIX peer, its SO_PEERCRED uid (-1:
 * not known yet), whether the program dialled it, whether the spec
 * vouches for a dialled collector (trust=1), and the program's effective
 * uid.  Pure: the tests feed it peers no test can be. */
bool elsi_consumer_trust_rule(enum elsi_consumer_style style, int family,
                              long uid, bool dialled, bool vouched,
                              uid_t self);
/* Close c's descriptor (shutdown first if graceful) and free it; c must
 * be off the list.  Also used by els_writer_close() in a forked child. */
void elsi_consumer_free(struct els_writer *w, struct elsi_consumer *c, bool graceful);
void elsi_consumers_reap(struct els_writer *w);
void elsi_consumer_pump(struct els_writer *w, struct elsi_consumer *c,
                        const uint8_t *header, size_t header_len,
                        uint64_t visible);
bool elsi_consumer_caught_up(const struct elsi_consumer *c, size_t header_len,
                             uint64_t visible);
void elsi_consumer_input(struct els_writer *w, struct elsi_consumer *c,
                         short revents);
/* Lock held. */
void elsi_consumer_cut(struct els_writer *w, struct elsi_consumer *c, uint64_t to);
/* A client of the layer above's own endpoint (control=unix:PATH): never
 * sent stream bytes; NULL (fd closed) when out of memory. */
struct elsi_consumer *elsi_consumer_attach_control(struct els_writer *w, int fd);
/* A consumer writing units [start, end) to fd, then the end marker; see
 * Note [Flight recorder].  Not counted as a connected consumer. */
struct elsi_consumer *elsi_consumer_attach_dump(struct els_writer *w, int fd,
                                           uint64_t start, uint64_t join_start,
                                           uint64_t end);
/* c's private bytes (Note [Consumer memory]): give them back once sent,
 * or append within consumer-memory= (0, ELS_ENOMEM, or -ENOBUFS when the
 * bound would be exceeded). */
void elsi_consumer_priv_drop(struct els_writer *w, struct elsi_consumer *c);
int elsi_consumer_priv_append(struct els_writer *w, struct elsi_consumer *c,
                              const void *data, size_t len);
/* Queue an in-band note for c (a global block with one log message). */
void elsi_consumer_note(struct els_writer *w, struct elsi_consumer *c,
                        uint64_t timestamp, const char *fmt, ...)
    ELSI_PRINTF(4, 5);
/* c cannot be given bytes it must have: closed, and counted when for
 * want of consumer-memory= (err -ENOBUFS). */
void elsi_consumer_starved(struct els_writer *w, struct elsi_consumer *c, int err);
/* Close c with a line saying why (err: the code, or 0). */
void elsi_consumer_kill(struct els_writer *w, struct elsi_consumer *c,
                        const char *why, int err);
/* Queue the note for a consumer that starts mid-stream without a snapshot. */
void elsi_consumer_note_missed(struct els_writer *w, struct elsi_consumer *c,
                               const char *why, uint64_t units, uint64_t bytes);
/* Start the consumers awaiting a join snapshot (Note [Late joiners]):
 * at join unit join_seq when it is visible and theirs, else, when the
 * stream is ending or they waited ELS_SNAPSHOT_WAIT_MS, at the oldest
 * queued unit.  Lock not held; join_seq, visible, tail and ending as read
 * under it this round. */
void elsi_consumers_join(struct els_writer *w, uint64_t join_seq,
                         uint64_t visible, uint64_t tail, bool ending);

// ---------------------------------------------------------------------------
// Releasing units (release.c; writer thread, lock held)
// ---------------------------------------------------------------------------

void elsi_release_oldest(struct els_writer *w, enum els_drop_cause cause);
/* The room spare buffers may take: what buffer= has left beside the
 * byte buffer's touched bytes and the buffers retained (Note [The queue's
 * memory] in queue/unitq.h).  Lock held. */
uint64_t elsi_pool_room(struct els_writer *w);

/* The policy for a producer that finds no room (lock held, any thread):
 * false if the unit is to be dropped at once (cause queue-full), else
 * true with the absolute CLOCK_MONOTONIC deadline in ms (UINT64_MAX:
 * none) and the cause to count if it passes.  See Note [How long
 * producers wait]. */
bool elsi_room_deadline(struct els_writer *w, enum elsi_unit_kind kind,
                        enum els_write_reason reason, uint64_t now,
                        uint64_t *deadline_ms, enum els_drop_cause *cause);
/* Start the stop deadline (linger= from now) unless it runs already. */
void elsi_stop_clock(struct els_writer *w, uint64_t now);
bool elsi_release_units(struct els_writer *w);

// ---------------------------------------------------------------------------
// Flight recorder (recorder.c; writer thread)
// ---------------------------------------------------------------------------

/* Start a dump if one is due: asked for (els_writer_dump), signalled
 * (signalled: the sink's listen_fd was readable), or, once the stream
 * ends, the dump at the end.  Lock not held. */
void elsi_dump_service(struct els_writer *w, bool signalled);
/* Is a dump still being written, or the one at the end still due?  Lock
 * held. */
bool elsi_dump_pending(struct els_writer *w);
/* A dump consumer is being reaped: it reads the queue no more.  Lock
 * held. */
void elsi_dump_ended(struct els_writer *w, struct elsi_consumer *c);
/* Then, before its descriptor is closed: give the dump its final name
 * (or remove it), count it and answer whoever asked.  Lock not held. */
void elsi_dump_finish(struct els_writer *w, struct elsi_consumer *c);
/* Ask for a join snapshot when the window's oldest usable start is
 * getting old (Note [Flight recorder]).  Lock not held. */
void elsi_recorder_tick(struct els_writer *w);
/* Set up the dump-on= evaluator from the spec (writer.c, at open; 0 or
 * ELS_ENOMEM), and free it. */
int elsi_trigger_setup(struct els_writer *w);
void elsi_trigger_teardown(struct els_writer *w);
/* Read the units committed since the last call and start a triggered
 * dump when one is due (Note [Triggered dumps]).  Lock not held. */
void elsi_trigger_service(struct els_writer *w);
/* When the writer thread must look again for a due dump (CLOCK_MONOTONIC
 * ms; 0: no timer).  Writer thread. */
uint64_t elsi_trigger_wake_ms(struct els_writer *w);

#endif /* ELS_WRITER_IMPL_H */
