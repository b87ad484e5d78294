/*
 * ghc.c: the RTS adapter.  Presents the process-wide set of writers (one
 * per sink of the configured list, sinkset.c) as GHC's EventLogWriter
 * (init / write / flush / stop) and, on an RTS with the eventlog-sink
 * patches (rts-patches/), as an EventLogUnitWriter that
 * +RTS --eventlog-sink=SPEC[|SPEC...] can select; it tells hooks.c when a
 * snapshot starts a stream.  It and its neighbours in lib/ghc/ (runtime.c,
 * prof.c, commands.c, hooks.c, sinkset.c) are the only files that include
 * RTS headers.  Everything it uses from the RTS beyond the EventLogWriter
 * type is a weak reference, so the library links into programs built
 * against a stock RTS, and into plain C programs.  Not its job: queueing or
 * I/O (writer.c), handing a unit to each writer of the set (sinkset.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eventlog-sink/ghc.h"
#include "ghc/glue.h"
#include "ghc/sinkset.h"
#include "base/log.h"
#include "sinks/sinks.h"
#include "sinks/spec.h"

/* The patched RTS's declarations: Note [Patched and stock RTS] in
 * rtsunits.h.  Each function is a weak reference here. */
#include "ghc/rtsunits.h"

int registerEventLogSink(const char *scheme, EventLogSinkOpen open)
    __attribute__((weak));
/* An RTS whose units may be kept without a copy (patch 0014). */
bool eventLogUnitsMayBeKept(void) __attribute__((weak));
#if defined(EVENTLOG_SINK_SCHEMES_MAX)
/* Every scheme the library can register must fit in the RTS's table. */
_Static_assert(EVENTLOG_SINK_SCHEMES_MAX >= ELSI_REGISTRY_MAX,
               "the RTS's sink table is smaller than the library's registry");
#endif
bool startEventLoggingWithUnits(const EventLogUnitWriter *writer)
    __attribute__((weak));
void requestEventLogSnapshot(EventLogSnapshotKind kind) __attribute__((weak));
/* Patch 0011: each capability's buffer size (+RTS --eventlog-buffer-size). */
size_t getEventLogBufferSize(void) __attribute__((weak));
/* Weak too, so the library still links into programs without an RTS. */
bool startEventLogging(const EventLogWriter *writer) __attribute__((weak));
void endEventLogging(void) __attribute__((weak));
enum EventLogStatus eventLogStatus(void) __attribute__((weak));

/*
 * Note [The process-wide writer]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * EventLogWriter has no context pointer, so the writer the RTS drives is a
 * global, ghc_running: the set of writers of the configured list (one
 * for a single spec; Note [Several sinks] in sinkset.c), opened, used and
 * closed as one.  ghc_lock guards the configuration (ghc_spec,
 * ghc_pid), the hand-over of a set that els_ghc_start() opened
 * (ghc_pending) and the flags saying that a start or an open is under way;
 * it is only ever held for a few loads and stores, or a strdup (never
 * across opening a sink, which with wait= can take seconds, nor around a log line or a call
 * into the writer), so that the atfork handlers may take it; see Note
 * [Fork and the glue].
 *
 * The write and flush callbacks run on capability threads at any time
 * between init and stop, and els_ghc_stats() on any thread at any time;
 * none of them may contend on a global lock or use a writer that stop has
 * freed.  Each counts itself in ghc_in_flight, then loads ghc_running
 * (ghc_enter), and counts itself out when done with the writer
 * (ghc_leave).  Stop withdraws the pointer (exchange with NULL), then waits
 * until ghc_in_flight is zero (ghc_drain), then closes the writer.  Both
 * sides use sequentially consistent operations, so of "caller increments,
 * then loads the pointer" and "stop clears the pointer, then loads the
 * count" at least one sees the other's store: either the caller finds
 * NULL, or stop sees it in flight and waits for it.  A caller counted in
 * flight on a newer writer only makes stop wait a little longer.  The
 * RTS does not write after stop (the patched RTS stops every capability
 * around it), so the wait is normally for a flush or a stats call; the
 * count is what makes a racing one safe rather than a use after free.
 * Init publishes the writer with a release store after it is fully open;
 * ghc_enter's load pairs with it.
 *
 * Opening can fail.  At program start-up (the RTS calling init for
 * +RTS --eventlog-sink, or a C main's RtsConfig) that ends the program, as
 * the RTS's own file writer does when it cannot open its file.
 * els_ghc_start() instead opens the writer itself before asking the RTS
 * to start, returns the error if that fails, and otherwise leaves the open
 * writer in ghc_pending for init to publish.
 */
/* How much of a spec a log line quotes. */
#define GHC_QUOTE_MAX 200

static pthread_mutex_t ghc_lock = PTHREAD_MUTEX_INITIALIZER;
static char *ghc_spec;                  /* guarded by ghc_lock */
static pid_t ghc_pid;                   /* who configured it; ghc_lock */
static struct elsi_ghc_sinks *ghc_pending;  /* opened by start; ghc_lock */
static bool ghc_starting;               /* in els_ghc_start; ghc_lock */
static bool ghc_opening;                /* init opening; ghc_lock */
/* A pending writer whose opener is gone (a fork came between open and
 * publication): closed by the child's next call.  ghc_lock. */
static struct elsi_ghc_sinks *ghc_stale;
static _Atomic(struct elsi_ghc_sinks *) ghc_running;
/* Units the RTS handed over while no writer was running (a forked child,
 * or before init). */
static atomic_uint_fast64_t ghc_orphan_units;

static atomic_uint ghc_in_flight;
static atomic_uint ghc_draining;        /* stops waiting in ghc_drain */
static pthread_mutex_t ghc_drain_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ghc_drained = PTHREAD_COND_INITIALIZER;

/* The running writer, counted in flight, or NULL (not counted).  See Note
 * [The process-wide writer]. */
static struct elsi_ghc_sinks *ghc_enter(void)
{
    atomic_fetch_add(&ghc_in_flight, 1);
    struct elsi_ghc_sinks *w = atomic_load(&ghc_running);
    if (w == NULL)
        atomic_fetch_sub(&ghc_in_flight, 1);
    return w;
}

static void ghc_leave(void)
{
    if (atomic_fetch_sub(&ghc_in_flight, 1) == 1 &&
        atomic_load(&ghc_draining) > 0) {
        pthread_mutex_lock(&ghc_drain_lock);
        pthread_cond_broadcast(&ghc_drained);
        pthread_mutex_unlock(&ghc_drain_lock);
    }
}

/* After ghc_running was withdrawn: wait until no caller can still be using
 * the writer it held. */
static void ghc_drain(void)
{
    atomic_fetch_add(&ghc_draining, 1);
    pthread_mutex_lock(&ghc_drain_lock);
    while (atomic_load(&ghc_in_flight) > 0)
        pthread_cond_wait(&ghc_drained, &ghc_drain_lock);
    pthread_mutex_unlock(&ghc_drain_lock);
    atomic_fetch_sub(&ghc_draining, 1);
}

/*
 * Note [Fork and the glue]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * fork() (GHC's forkProcess, or a C program's) copies only the calling
 * thread.  A lock another thread held, a call it had in flight, or a start
 * or open it was in the middle of, would never end in the child.  As
 * lttng-ust does, the atfork handlers take ghc_lock and ghc_drain_lock
 * around fork(), which cannot wait long (neither is held for more than a
 * few loads and stores, or a strdup, nor across another lock: Note [The
 * process-wide writer]).  The child's one thread took them and unlocks them; it
 * rebuilds the condition (its waiters are gone), counts no caller in
 * flight, and forgets the start or open under way.  A writer that start
 * had opened but not yet handed over is closed by the child's next call
 * into the glue (the writer marks it forked: its descriptors are the
 * parent's too, so nothing is shut down or removed).  The writer itself
 * and the log hook have their own handlers.
 */
static void ghc_atfork_prepare(void)
{
    pthread_mutex_lock(&ghc_lock);
    pthread_mutex_lock(&ghc_drain_lock);
}

static void ghc_atfork_parent(void)
{
    pthread_mutex_unlock(&ghc_drain_lock);
    pthread_mutex_unlock(&ghc_lock);
}

static void ghc_atfork_child(void)
{
    pthread_cond_init(&ghc_drained, NULL);
    atomic_store(&ghc_in_flight, 0);
    atomic_store(&ghc_draining, 0);
    ghc_starting = false;
    ghc_opening = false;
    if (ghc_pending != NULL) {
        ghc_stale = ghc_pending;
        ghc_pending = NULL;
    }
    pthread_mutex_unlock(&ghc_drain_lock);
    pthread_mutex_unlock(&ghc_lock);
}

/* In a forked child: close what a vanished start left behind. */
static void ghc_close_stale(void)
{
    pthread_mutex_lock(&ghc_lock);
    struct elsi_ghc_sinks *w = ghc_stale;
    ghc_stale = NULL;
    pthread_mutex_unlock(&ghc_lock);
    elsi_ghc_sinks_close(w);
}

/* Busy: a writer runs, or a start or an open is under way. */
static bool ghc_busy_locked(void)
{
    return atomic_load(&ghc_running) != NULL || ghc_starting || ghc_opening;
}

int els_ghc_configure(const char *spec, char *err, size_t err_len)
{
    /* Validate now, so a bad spec stops the program before it starts. */
    int r = elsi_ghc_specs_check(spec, err, err_len);
    if (r != 0)
        return r;
    char *copy = strdup(spec);
    if (copy == NULL)
        return elsi_fail(err, err_len, ELS_ENOMEM, "out of memory");
    ghc_close_stale();

    pthread_mutex_lock(&ghc_lock);
    if (ghc_busy_locked()) {
        pthread_mutex_unlock(&ghc_lock);
        free(copy);
        return elsi_fail(err, err_len, ELS_EBUSY,
                         "the eventlog sink is already running");
    }
    char *old = ghc_spec;
    ghc_spec = copy;
    ghc_pid = getpid();
    pthread_mutex_unlock(&ghc_lock);
    free(old);
    return 0;
}

/* A copy of the spec if this process configured one; NULL otherwise
 * (with *foreign set if a parent process did).  Under ghc_lock. */
static char *ghc_spec_copy_locked(bool *foreign);

/*
 * Note [Unit size and the sink's limits]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * The RTS hands over one capability's buffer at a time, so its size
 * (+RTS --eventlog-buffer-size with the patches, a fixed 2 MiB in a
 * stock RTS) is the largest unit the writer receives.  Two options of the
 * spec must hold one: buffer= (a larger unit is dropped as too big,
 * every time the buffer fills) and consumer-memory= (a slow consumer cut
 * loose in the middle of a unit needs the rest of it copied aside; when
 * that does not fit it is closed instead: Note [Consumer memory]).  The
 * two contradict each other only through a flag the library cannot see
 * in the spec, so the glue checks them where both are known: before the
 * writer opens (start-up, which then stops the program with one line, as
 * a bad spec does; els_ghc_start, which returns ELS_EINVAL) and before a
 * change of the buffer size at runtime (refused the same way).  Each sink
 * of a list receives every unit, so each is checked.
 */
static size_t ghc_unit_max(void)
{
    size_t size = getEventLogBufferSize != NULL ? getEventLogBufferSize() : 0;
    return size > 0 ? size : ELSI_RTS_BUFFER_BYTES;
}

static int ghc_check_unit_one(const char *spec, void *ctx, char *err,
                              size_t err_len)
{
    size_t unit = *(const size_t *)ctx;
    struct elsi_spec parsed;
    int r = elsi_spec_parse(spec, &parsed, err, err_len);
    if (r != 0)
        return r;
    uint64_t buffer = parsed.buffer_bytes, memory = parsed.consumer_memory;
    bool record = parsed.ops != NULL && parsed.ops->style == ELS_SINK_RECORD;
    elsi_spec_free(&parsed);
    const char *what = getEventLogBufferSize != NULL
        ? "+RTS --eventlog-buffer-size" : "the RTS's eventlog buffer";
    /* As for buffer= itself (lib/sinks/spec_options.c): the queue holds a full
     * buffer plus the unit in flight. */
    if (unit >= buffer)
        return elsi_fail(err, err_len, ELS_EINVAL, "%s=%zu is not below the "
                         "sink's %s=%" PRIu64 ": every full RTS buffer would be "
                         "dropped as too big; raise %s or lower the buffer size",
                         what, unit, record ? "size" : "buffer", buffer,
                         record ? "size=" : "buffer=");
    if (unit > memory)
        return elsi_fail(err, err_len, ELS_EINVAL, "%s=%zu is above the "
                         "sink's consumer-memory=%" PRIu64 ": a slow consumer "
                         "would be closed instead of cut loose; raise "
                         "consumer-memory= to at least %zu or lower the buffer "
                         "size", what, unit, memory, unit);
    return 0;
}

int elsi_ghc_check_unit_size(const char *spec, size_t unit, char *err,
                             size_t err_len)
{
    return elsi_ghc_specs_each(spec, ghc_check_unit_one, &unit, err, err_len);
}

int elsi_ghc_check_buffer_size(size_t bytes, char *err, size_t err_len)
{
    pthread_mutex_lock(&ghc_lock);
    bool foreign;
    char *spec = ghc_spec_copy_locked(&foreign);
    pthread_mutex_unlock(&ghc_lock);
    if (spec == NULL)
        return 0;   /* no sink of ours (a parent's, or none) to contradict */
    int r = elsi_ghc_check_unit_size(spec, bytes, err, err_len);
    free(spec);
    return r;
}

static char *ghc_spec_copy_locked(bool *foreign)
{
    *foreign = ghc_spec != NULL && ghc_pid != getpid();
    if (ghc_spec == NULL || *foreign)
        return NULL;
    return strdup(ghc_spec);
}

static void ghc_init(void)
{
    ghc_close_stale();
    pthread_mutex_lock(&ghc_lock);
    if (ghc_pending != NULL) {
        /* els_ghc_start opened it. */
        atomic_store_explicit(&ghc_running, ghc_pending, memory_order_release);
        ghc_pending = NULL;
        pthread_mutex_unlock(&ghc_lock);
        return;
    }
    if (ghc_spec == NULL || ghc_busy_locked()) {
        pthread_mutex_unlock(&ghc_lock);
        return;
    }
    bool foreign;
    char *spec = ghc_spec_copy_locked(&foreign);
    ghc_opening = spec != NULL;
    pthread_mutex_unlock(&ghc_lock);
    if (foreign) {
        /* forkProcess restarts the eventlog in the child.  The endpoint
         * belongs to the parent (see README, "fork"): the child's events
         * are not streamed. */
        elsi_log(ELS_LOG_DEBUG, "forked child %ld: eventlog not streamed",
                 (long)getpid());
        return;
    }
    if (spec == NULL) {
        elsi_log(ELS_LOG_ERROR, "out of memory starting the eventlog sink");
        exit(EXIT_FAILURE);
    }
    char err[512];
    struct elsi_ghc_sinks *w = NULL;
    /* Note [Unit size and the sink's limits]. */
    int r = elsi_ghc_check_unit_size(spec, ghc_unit_max(), err, sizeof err);
    if (r == 0)
        r = elsi_ghc_sinks_open(spec, &w, err, sizeof err);
    free(spec);
    if (r != 0) {
        /* Start-up (Note [The process-wide writer]): the user asked for
         * an eventlog and cannot have it. */
        elsi_log(ELS_LOG_ERROR, "%s", err);
        exit(EXIT_FAILURE);
    }
    pthread_mutex_lock(&ghc_lock);
    ghc_opening = false;
    atomic_store_explicit(&ghc_running, w, memory_order_release);
    pthread_mutex_unlock(&ghc_lock);
}

static bool ghc_write(void *eventlog, size_t size)
{
    struct elsi_ghc_sinks *w = ghc_enter();
    if (w == NULL) {
        atomic_fetch_add(&ghc_orphan_units, 1);
        return true;
    }
    /* Returning false would make the RTS print a message per buffer and
     * discard it anyway; losses are counted and reported by the writers. */
    elsi_ghc_sinks_write(w, &eventlog, size, 0, ELS_REASON_UNKNOWN);
    ghc_leave();
    return true;
}

static void ghc_flush(void)
{
    struct elsi_ghc_sinks *w = ghc_enter();
    if (w != NULL) {
        elsi_ghc_sinks_flush(w);
        ghc_leave();
    }
}

static void ghc_stop(void)
{
    ghc_close_stale();
    struct elsi_ghc_sinks *w = atomic_exchange(&ghc_running, NULL);
    if (w != NULL) {
        ghc_drain();
        elsi_ghc_sinks_close(w);
    }
    /* Units the RTS handed over while no sink was open (a forked child,
     * whose eventlog is not streamed) are lost too: say so. */
    uint_fast64_t orphans = atomic_exchange(&ghc_orphan_units, 0);
    if (orphans > 0)
        elsi_log(ELS_LOG_WARN, "discarded %llu eventlog units written while "
                 "no sink was open (process %ld)", (unsigned long long)orphans,
                 (long)getpid());
}

static const EventLogWriter ghc_writer = {
    .initEventLogWriter = ghc_init,
    .writeEventLog = ghc_write,
    .flushEventLog = ghc_flush,
    .stopEventLogWriter = ghc_stop,
};

static enum els_write_reason ghc_reason(EventLogWriteReason reason)
{
    switch (reason) {
    case EVENTLOG_WRITE_START:       return ELS_REASON_START;
    case EVENTLOG_WRITE_BUFFER_FULL: return ELS_REASON_BUFFER_FULL;
    case EVENTLOG_WRITE_FLUSH:       return ELS_REASON_FLUSH;
    case EVENTLOG_WRITE_STOP:        return ELS_REASON_STOP;
    case EVENTLOG_WRITE_SNAPSHOT:    return ELS_REASON_SNAPSHOT;
    }
    return ELS_REASON_UNKNOWN;
}

/* The writer thread's snapshot source (see els_writer_set_snapshot_source):
 * the RTS takes it at its next safe point and writes it through
 * ghc_write_unit; it never blocks, and does nothing once the eventlog or
 * the RTS stops. */
static void ghc_request_join_snapshot(void *ctx)
{
    (void)ctx;
    requestEventLogSnapshot(EVENTLOG_SNAPSHOT_JOIN);
}

static bool ghc_write_unit(void *eventlog, size_t size,
                           const EventLogUnitInfo *info)
{
    struct elsi_ghc_sinks *w = ghc_enter();
    if (w == NULL) {
        atomic_fetch_add(&ghc_orphan_units, 1);
        return true;
    }
    /* The kind and capability are also in the unit's own bytes, which the
     * writers read; the reason is news, and so is a join snapshot. */
    if (info->kind == EVENTLOG_UNIT_JOIN_SNAPSHOT) {
        /* To every writer, whichever asked: Note [Several sinks]. */
        elsi_ghc_sinks_write_snapshot(w, eventlog, size);
        /* A new stream starts at it: the libraries' hooks post their
         * state after it (Note [Snapshot hooks] in hooks.c).  Also when
         * it was not queued: the hooks' events are wanted after the
         * snapshot that is, and a run already due absorbs this one. */
        elsi_ghc_hooks_kick();
    } else {
        /* This RTS writes join snapshots to a unit writer (this one) when
         * asked: let consumers that join mid-stream ask. */
        if (info->kind == EVENTLOG_UNIT_HEADER && requestEventLogSnapshot != NULL)
            elsi_ghc_sinks_set_snapshot_source(w, ghc_request_join_snapshot, NULL);
        /* A block the RTS lets us keep (Note [Units handed over] in
         * lib/writer/producer.c), by one writer at most. */
        bool may_keep = eventLogUnitsMayBeKept != NULL && info->keep != NULL &&
                        info->buffer_size > 0;
        void *buf = eventlog;
        elsi_ghc_sinks_write(w, &buf, size, may_keep ? info->buffer_size : 0,
                             ghc_reason(info->reason));
        if (buf != eventlog)
            *info->keep = buf;
        /* A new stream (program start, restart, a forked child's own):
         * its snapshot content follows the header; the hooks wait for
         * the RTS to finish it. */
        if (info->kind == EVENTLOG_UNIT_HEADER)
            elsi_ghc_hooks_kick();
    }
    ghc_leave();
    return true;
}


static const EventLogUnitWriter ghc_unit_writer = {
    .base = {
        .initEventLogWriter = ghc_init,
        .writeEventLog = ghc_write,
        .flushEventLog = ghc_flush,
        .stopEventLogWriter = ghc_stop,
    },
    .writeEventLogUnit = ghc_write_unit,
};

// ---------------------------------------------------------------------------
// +RTS --eventlog-sink=SPEC (patched RTS)
// ---------------------------------------------------------------------------

/* The RTS calls this for a spec whose scheme we registered, when event
 * logging starts; the writer's init then opens the sink. */
static const EventLogUnitWriter *ghc_sink_open(const char *spec, char *err,
                                               size_t err_size)
{
    if (els_ghc_configure(spec, err, err_size) != 0)
        return NULL;
    return &ghc_unit_writer;
}

static void ghc_register_scheme(const char *scheme)
{
    int r = registerEventLogSink(scheme, ghc_sink_open);
    /* -EEXIST: the watcher may report a scheme twice
     * (elsi_registry_watch).  -1: an RTS from before the series said why;
     * it also meant "already registered" there.  Anything else means
     * +RTS --eventlog-sink=SCHEME:... will not find this scheme, so say
     * so now rather than let it surface as an unknown scheme later. */
    if (r == 0 || r == -EEXIST || r == -1)
        return;
    if (r == -ENOSPC)
        elsi_log(ELS_LOG_ERROR, "sink scheme \"%s\" not registered with the "
                 "RTS: its table of sink schemes is full", scheme);
    else
        elsi_log(ELS_LOG_ERROR, "sink scheme \"%s\" not registered with the "
                 "RTS: %s", scheme, strerror(-r));
}

/* Runs when the library is loaded, before main() and so before hs_init
 * parses +RTS --eventlog-sink.  With a static libeventlog-sink.a this
 * object is only linked if something refers to it: see README. */
__attribute__((constructor)) static void ghc_register_sinks(void)
{
    /* Failure (ENOMEM) only loses what Note [Fork and the glue] provides. */
    (void)pthread_atfork(ghc_atfork_prepare, ghc_atfork_parent,
                         ghc_atfork_child);
    if (registerEventLogSink == NULL)
        return;     /* stock RTS, or no RTS at all */
    elsi_registry_watch(ghc_register_scheme);
}

const EventLogWriter *els_ghc_writer(void)
{
    return &ghc_writer;
}

const EventLogWriter *els_ghc_writer_from_env(void)
{
    const char *spec = getenv(ELS_GHC_SPEC_ENV);
    if (spec == NULL || spec[0] == '\0')
        return NULL;
    char err[512];
    if (els_ghc_configure(spec, err, sizeof err) != 0) {
        char q[ELSI_QUOTE_BUF(GHC_QUOTE_MAX)];
        elsi_log(ELS_LOG_ERROR, "%s=\"%s\": %s", ELS_GHC_SPEC_ENV,
                 elsi_quote(q, sizeof q, spec, strlen(spec), GHC_QUOTE_MAX),
                 err);
        exit(EXIT_FAILURE);
    }
    return &ghc_writer;
}

int els_ghc_ring_dump(char *name, size_t name_len)
{
    struct elsi_ghc_sinks *w = ghc_enter();
    if (w == NULL)
        return ELS_ESTOPPED;
    int r = elsi_ghc_sinks_dump(w, name, name_len);
    ghc_leave();
    return r;
}

int els_ghc_sink_stats_sized(unsigned index, struct els_stats *out,
                             size_t size)
{
    struct elsi_ghc_sinks *w = ghc_enter();
    if (w == NULL)
        return ELS_ESTOPPED;
    int r = elsi_ghc_sinks_stats(w, index, out, size);
    ghc_leave();
    return r;
}

int els_ghc_stats_sized(struct els_stats *out, size_t size)
{
    /* The first sink's: Note [Several sinks] in sinkset.c. */
    return els_ghc_sink_stats_sized(0, out, size);
}

// ---------------------------------------------------------------------------
// Runtime on/off
// ---------------------------------------------------------------------------

int els_ghc_start(void)
{
    bool have_rts = startEventLoggingWithUnits != NULL ||
                    startEventLogging != NULL;
    /* Opening a sink the RTS would refuse could still take a port or
     * create a file: ask first.  (The RTS's answer below is the final
     * one.) */
    if (have_rts && eventLogStatus != NULL) {
        enum EventLogStatus status = eventLogStatus();
        if (status == EVENTLOG_RUNNING)
            return ELS_EBUSY;
        if (status == EVENTLOG_NOT_SUPPORTED)
            return ELS_ENOSCHEME;   /* an RTS without -eventlog */
    }
    ghc_close_stale();
    pthread_mutex_lock(&ghc_lock);
    if (ghc_busy_locked()) {
        pthread_mutex_unlock(&ghc_lock);
        return ELS_EBUSY;
    }
    bool foreign;
    char *spec = ghc_spec_copy_locked(&foreign);
    bool configured = ghc_spec != NULL;
    ghc_starting = spec != NULL && have_rts;
    pthread_mutex_unlock(&ghc_lock);
    if (!configured || foreign)
        return ELS_EINVAL;  /* a parent's endpoint is not this process's */
    if (!have_rts) {
        free(spec);
        return ELS_ENOSCHEME;   /* not a Haskell program */
    }
    if (spec == NULL)
        return ELS_ENOMEM;

    /* Open before the RTS starts, so that a sink that cannot be opened
     * (a port taken while the eventlog was stopped) is an error returned
     * here, not the end of the program; see Note [The process-wide
     * writer].  ghc_starting keeps other starts, configures and inits off
     * until the RTS has taken the writer or refused. */
    char err[512];
    struct elsi_ghc_sinks *w = NULL;
    /* Note [Unit size and the sink's limits]. */
    int r = elsi_ghc_check_unit_size(spec, ghc_unit_max(), err, sizeof err);
    if (r == 0)
        r = elsi_ghc_sinks_open(spec, &w, err, sizeof err);
    free(spec);
    if (r != 0) {
        /* ghc_starting makes this thread the limiter's only user. */
        static struct elsi_ratelimit start_failures;
        elsi_log_limited(&start_failures, 10000, ELS_LOG_WARN,
                         "els_ghc_start: %s", err);
        pthread_mutex_lock(&ghc_lock);
        ghc_starting = false;
        pthread_mutex_unlock(&ghc_lock);
        return r;
    }
    pthread_mutex_lock(&ghc_lock);
    ghc_pending = w;
    pthread_mutex_unlock(&ghc_lock);

    /* The RTS calls our init, which publishes the writer, before the
     * header. */
    bool started;
    if (startEventLoggingWithUnits != NULL)
        started = startEventLoggingWithUnits(&ghc_unit_writer);
    else
        started = startEventLogging(&ghc_writer);

    pthread_mutex_lock(&ghc_lock);
    struct elsi_ghc_sinks *unused = ghc_pending;  /* the RTS did not call init */
    ghc_pending = NULL;
    ghc_starting = false;
    pthread_mutex_unlock(&ghc_lock);
    elsi_ghc_sinks_close(unused);
    return started ? 0 : ELS_EBUSY;
}

void els_ghc_stop(void)
{
    /* The RTS writes out every buffer and DATA_END, then calls our stop. */
    if (endEventLogging != NULL)
        endEventLogging();
}
