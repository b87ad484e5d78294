/*
 * ghc.c: the RTS adapter.  Presents the process-wide writer as GHC's
 * EventLogWriter (init / write / flush / stop) and, on an RTS with the
 * eventlog-sink patches (rts-patches/), as an EventLogUnitWriter that
 * +RTS --eventlog-sink=SPEC can select.  It is the only file that includes
 * RTS headers.  Everything it uses from the RTS beyond the EventLogWriter
 * type is a weak reference, so the library links into programs built
 * against a stock RTS, and into plain C programs.  Not its job: queueing or
 * I/O (writer.c).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eventlog-sink/ghc.h"
#include "log.h"
#include "sinks/sinks.h"

/*
 * Note [Patched and stock RTS]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * An RTS with the eventlog-sink patches declares registerEventLogSink()
 * and the unit-aware writer in rts/EventLogControl.h.  When this library
 * is built against such an RTS's headers it uses them; otherwise it
 * declares the same types itself (they must match
 * the patches in rts-patches/ghc-9.0.2/, which tests/test_rts_series.sh checks by
 * building this file against the patched headers).  The functions are weak
 * references: in a program linked with a stock RTS they are NULL and the
 * library only offers els_ghc_writer() for RtsConfig.eventlog_writer.
 */
#if defined(__has_include)
#if __has_include(<rts/EventLogControl.h>)
#include <rts/EventLogControl.h>
#define ELS_HAVE_EVENTLOG_CONTROL_H 1
#endif
#endif

#if !defined(ELS_HAVE_EVENTLOG_CONTROL_H)
typedef enum {
    EVENTLOG_UNIT_HEADER = 0,
    EVENTLOG_UNIT_CAP_BLOCK = 1,
    EVENTLOG_UNIT_GLOBAL_BLOCK = 2,
    EVENTLOG_UNIT_DATA_END = 3
} EventLogUnitKind;

typedef enum {
    EVENTLOG_WRITE_START = 0,
    EVENTLOG_WRITE_BUFFER_FULL = 1,
    EVENTLOG_WRITE_FLUSH = 2,
    EVENTLOG_WRITE_STOP = 3
} EventLogWriteReason;

typedef struct {
    EventLogUnitKind kind;
    EventLogWriteReason reason;
    uint32_t capno;
} EventLogUnitInfo;

typedef struct {
    EventLogWriter base;
    bool (*writeEventLogUnit)(void *eventlog, size_t eventlog_size,
                              const EventLogUnitInfo *info);
} EventLogUnitWriter;

typedef const EventLogUnitWriter *(*EventLogSinkOpen)(const char *spec,
                                                       char *err,
                                                       size_t err_size);
int registerEventLogSink(const char *scheme, EventLogSinkOpen open);

bool startEventLoggingWithUnits(const EventLogUnitWriter *writer);
#endif

int registerEventLogSink(const char *scheme, EventLogSinkOpen open)
    __attribute__((weak));
bool startEventLoggingWithUnits(const EventLogUnitWriter *writer)
    __attribute__((weak));
/* Weak too, so the library still links into programs without an RTS. */
bool startEventLogging(const EventLogWriter *writer) __attribute__((weak));
void endEventLogging(void) __attribute__((weak));

/*
 * Note [The process-wide writer]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * EventLogWriter has no context pointer, so the writer the RTS drives is a
 * global.  ghc_lock serialises configure/init/stop.  The write and flush
 * callbacks run on capability threads at any time between init and stop
 * and must not contend on a global lock, so they read ghc_running with an
 * acquire load; init publishes it with a release store after the writer is
 * fully open, and stop withdraws it before closing.  The RTS does not call
 * write after stop (GHC's endEventLogging stops writing before it calls
 * stopEventLogWriter), which is what makes the close safe.
 */
static pthread_mutex_t ghc_lock = PTHREAD_MUTEX_INITIALIZER;
static char *ghc_spec;
static pid_t ghc_pid;
static _Atomic(struct els_writer *) ghc_running;
/* Units the RTS handed over while no writer was running (a forked child,
 * or before init). */
static atomic_uint_fast64_t ghc_orphan_units;

int els_ghc_configure(const char *spec, char *err, size_t err_len)
{
    if (spec == NULL || spec[0] == '\0')
        return elsi_fail(err, err_len, ELS_EINVAL, "empty eventlog sink spec");
    /* Validate now, so a bad spec stops the program before it starts. */
    int r = els_spec_check(spec, err, err_len);
    if (r != 0)
        return r;
    char *copy = strdup(spec);
    if (copy == NULL)
        return elsi_fail(err, err_len, ELS_ENOMEM, "out of memory");

    pthread_mutex_lock(&ghc_lock);
    if (atomic_load(&ghc_running) != NULL) {
        pthread_mutex_unlock(&ghc_lock);
        free(copy);
        return elsi_fail(err, err_len, ELS_EBUSY,
                         "the eventlog sink is already running");
    }
    free(ghc_spec);
    ghc_spec = copy;
    ghc_pid = getpid();
    pthread_mutex_unlock(&ghc_lock);
    return 0;
}

static void ghc_init(void)
{
    pthread_mutex_lock(&ghc_lock);
    if (ghc_spec == NULL || atomic_load(&ghc_running) != NULL) {
        pthread_mutex_unlock(&ghc_lock);
        return;
    }
    if (getpid() != ghc_pid) {
        /* forkProcess restarts the eventlog in the child.  The endpoint
         * belongs to the parent (see README, "fork"): the child's events
         * are not streamed. */
        pthread_mutex_unlock(&ghc_lock);
        elsi_log(ELS_LOG_DEBUG, "forked child %ld: eventlog not streamed",
                 (long)getpid());
        return;
    }
    char err[512];
    struct els_writer *w = NULL;
    int r = els_writer_open(ghc_spec, &w, err, sizeof err);
    if (r != 0) {
        pthread_mutex_unlock(&ghc_lock);
        /* As the RTS's own file writer does when it cannot open its file:
         * the user asked for an eventlog and cannot have it. */
        elsi_log(ELS_LOG_ERROR, "%s", err);
        exit(EXIT_FAILURE);
    }
    atomic_store_explicit(&ghc_running, w, memory_order_release);
    pthread_mutex_unlock(&ghc_lock);
}

static bool ghc_write(void *eventlog, size_t size)
{
    struct els_writer *w =
        atomic_load_explicit(&ghc_running, memory_order_acquire);
    if (w == NULL) {
        atomic_fetch_add(&ghc_orphan_units, 1);
        return true;
    }
    /* Returning false would make the RTS print a message per buffer and
     * discard it anyway; losses are counted and reported by the writer. */
    (void)els_writer_write(w, eventlog, size);
    return true;
}

static void ghc_flush(void)
{
    struct els_writer *w =
        atomic_load_explicit(&ghc_running, memory_order_acquire);
    if (w != NULL)
        els_writer_flush(w);
}

static void ghc_stop(void)
{
    pthread_mutex_lock(&ghc_lock);
    struct els_writer *w = atomic_exchange(&ghc_running, NULL);
    pthread_mutex_unlock(&ghc_lock);
    if (w != NULL)
        els_writer_close(w);
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
    }
    return ELS_REASON_UNKNOWN;
}

static bool ghc_write_unit(void *eventlog, size_t size,
                           const EventLogUnitInfo *info)
{
    struct els_writer *w =
        atomic_load_explicit(&ghc_running, memory_order_acquire);
    if (w == NULL) {
        atomic_fetch_add(&ghc_orphan_units, 1);
        return true;
    }
    /* The kind and capability are also in the unit's own bytes, which the
     * writer reads; the reason is news. */
    (void)els_writer_write_reason(w, eventlog, size, ghc_reason(info->reason));
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
    /* -1 for a scheme the RTS already knows: the watcher may report one
     * twice (elsi_registry_watch). */
    (void)registerEventLogSink(scheme, ghc_sink_open);
}

/* Runs when the library is loaded, before main() and so before hs_init
 * parses +RTS --eventlog-sink.  With a static libeventlog-sink.a this
 * object is only linked if something refers to it: see README. */
__attribute__((constructor)) static void ghc_register_sinks(void)
{
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
        elsi_log(ELS_LOG_ERROR, "%s=%s: %s", ELS_GHC_SPEC_ENV, spec, err);
        exit(EXIT_FAILURE);
    }
    return &ghc_writer;
}

int els_ghc_stats(struct els_stats *out)
{
    struct els_writer *w =
        atomic_load_explicit(&ghc_running, memory_order_acquire);
    if (w == NULL)
        return ELS_ESTOPPED;
    return els_writer_stats(w, out);
}

// ---------------------------------------------------------------------------
// Runtime on/off
// ---------------------------------------------------------------------------

int els_ghc_start(void)
{
    pthread_mutex_lock(&ghc_lock);
    bool configured = ghc_spec != NULL;
    pthread_mutex_unlock(&ghc_lock);
    if (!configured)
        return ELS_EINVAL;
    /* The RTS calls our init, which opens the sink, before the header. */
    bool started;
    if (startEventLoggingWithUnits != NULL)
        started = startEventLoggingWithUnits(&ghc_unit_writer);
    else if (startEventLogging != NULL)
        started = startEventLogging(&ghc_writer);
    else
        return ELS_ENOSCHEME;   /* not a Haskell program */
    return started ? 0 : ELS_EBUSY;
}

void els_ghc_stop(void)
{
    /* The RTS writes out every buffer and DATA_END, then calls our stop. */
    if (endEventLogging != NULL)
        endEventLogging();
}
