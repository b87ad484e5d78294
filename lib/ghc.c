/*
 * ghc.c: the RTS adapter.  Presents the process-wide writer as GHC's
 * EventLogWriter (init / write / flush / stop).  It is the only file that
 * includes RTS headers, and it uses nothing from the RTS but the
 * EventLogWriter type, so the shared library links into plain C programs
 * too.  Not its job: queueing or I/O (writer.c).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eventlog-sink/ghc.h"
#include "log.h"

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
}

static const EventLogWriter ghc_writer = {
    .initEventLogWriter = ghc_init,
    .writeEventLog = ghc_write,
    .flushEventLog = ghc_flush,
    .stopEventLogWriter = ghc_stop,
};

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
