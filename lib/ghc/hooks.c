/*
 * hooks.c: snapshot hooks.  A library registers a function
 * (els_ghc_on_snapshot) that this file calls, on a thread of its own,
 * after every snapshot that starts a stream (a new stream's start: the
 * program's, a restart's, a forked child's; a join snapshot taken for a
 * late consumer), so that it can post its own state again (an id-to-name
 * table) as ordinary user events, which reach the new stream right after
 * its snapshot; then it flushes the eventlog.  It also runs Haskell
 * actions for the Haskell package (els_ghc_haskell_hook).  ghc.c tells it
 * when such a snapshot was written (elsi_ghc_hooks_kick).  Not its job:
 * taking snapshots (the RTS) or delivering them (lib/writer).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "eventlog-sink/ghc.h"
#include "ghc/glue.h"
#include "base/log.h"

/*
 * Note [Snapshot hooks]
 * ~~~~~~~~~~~~~~~~~~~~~
 * Where a hook runs.  The RTS writes a stream's start and a join
 * snapshot with every capability stopped, on whichever thread stopped
 * them; a hook that posts events needs a capability, and one that blocks
 * must not hold the stream.  So the write path only counts a request and
 * signals (elsi_ghc_hooks_kick: a short lock, never a wait on a hook),
 * and one thread of this library runs the hooks, one after another, then
 * flushes the eventlog (els_ghc_flush), so that what they posted goes out
 * at once instead of when a buffer fills.  The thread starts with the
 * first request that finds a hook registered, in every process (a forked
 * child has none: fork copies only the forking thread).
 *
 * Coalescing.  requested counts requests, started the requests the thread
 * had seen when it last began a run.  A run that begins answers every
 * request made before it began, so requests made while a run waits to
 * begin are merged into it (counted as coalesced); a request made while a
 * run is under way makes one more run after it: that request's snapshot
 * may have been taken after the running hooks posted part of their
 * state, and its stream needs all of it.  A hook that blocks therefore
 * delays only later runs, which then come as one; the stream and the
 * snapshots go on meanwhile.
 *
 * What a new stream sees.  A join snapshot is written after every unit
 * before its point, and the consumer starts there; a stream's start
 * posts the snapshot content into the fresh buffers with every capability
 * stopped.  A hook runs only after that (for a start: once the RTS says
 * the eventlog runs, which it sets in the same stop; and a Haskell hook
 * needs a capability, which it only gets once the stop is over), so its
 * events are in units after the snapshot: the consumer sees the header,
 * the note that it joined mid-run, the snapshot, then the hooks' events,
 * mixed with whatever the program posts meanwhile.  Every consumer
 * receives them, not only the new one: a hook must post state that may
 * be posted twice.
 *
 * Haskell hooks (els_ghc_haskell_hook).  The thread enters Haskell as any
 * foreign thread does (rts_lock: a bound Haskell thread on this OS
 * thread), evaluates the action of a StablePtr (rts_evalStableIO) and
 * leaves (rts_unlock).  Two alternatives were rejected.  A Haskell thread
 * that waits in a safe foreign call for requests would not exist in a
 * forkProcess child (only the forking Haskell thread survives there), so
 * the child's stream would get no hook; the registered StablePtr does
 * survive, and this thread is started anew in the child.  A "wrapper"
 * FunPtr would do the same calls, but its stub ends the program
 * (rts_checkSchedStatus) when the call is killed, which happens to a call
 * that is under way while the program exits; here the status is only
 * counted.  The RTS cannot be entered after hs_exit has begun to take it
 * down, so a run checks the scheduler's state before rts_lock and skips
 * the call once the RTS is shutting down; a call already inside when the
 * shutdown begins is killed by it (not counted as a failure).  What is
 * left is a request that passes that check just before the shutdown and
 * then stays descheduled for the whole of it: rts_lock would then report
 * that the RTS is not initialised.  The non-threaded RTS cannot be
 * entered from another OS thread at all: there the call is refused
 * (counted and logged), and the Haskell package refuses to register.
 */

#define HOOKS_WAIT_RUNNING_MS 5000

/* The RTS entry points for Haskell hooks, weak as in ghc.c: NULL in a
 * program without an RTS. */
Capability *rts_lock(void) __attribute__((weak));
void rts_unlock(Capability *token) __attribute__((weak));
void rts_evalStableIO(Capability **cap, HsStablePtr s, HsStablePtr *ret)
    __attribute__((weak));
SchedulerStatus rts_getSchedStatus(Capability *cap) __attribute__((weak));
HsBool rtsSupportsBoundThreads(void) __attribute__((weak));
enum EventLogStatus eventLogStatus(void) __attribute__((weak));
/* The scheduler's state (rts/Schedule.h, exported by every RTS way);
 * SCHED_RUNNING is 0 there.  The patched RTS checks it the same way
 * before it takes a snapshot. */
extern volatile StgWord sched_state __attribute__((weak));
#define HOOKS_SCHED_RUNNING 0

static bool rts_shutting_down(void)
{
    return &sched_state != NULL &&
           __atomic_load_n(&sched_state, __ATOMIC_RELAXED) != HOOKS_SCHED_RUNNING;
}

struct hook {
    void (*fn)(void *);
    void *ctx;
};

static pthread_mutex_t hooks_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hooks_wake = PTHREAD_COND_INITIALIZER;   /* a request */
static pthread_cond_t hooks_idle = PTHREAD_COND_INITIALIZER;   /* a call ended */
/* Everything below is guarded by hooks_lock. */
static struct hook hooks[ELS_GHC_SNAPSHOT_HOOKS_MAX];
static unsigned hooks_count;
static uint64_t hooks_requested, hooks_started;
static bool hooks_thread_up;
static pthread_t hooks_thread;
static bool hooks_calling;              /* hooks_current is being called */
static struct hook hooks_current;
static struct els_ghc_hook_stats hooks_stats;

static bool hook_eq(struct hook a, void (*fn)(void *), void *ctx)
{
    return a.fn == fn && a.ctx == ctx;
}

static bool hook_registered_locked(struct hook h)
{
    for (unsigned i = 0; i < hooks_count; i++)
        if (hook_eq(hooks[i], h.fn, h.ctx))
            return true;
    return false;
}

static void hooks_sleep_ms(long ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Is a stream running to post into?  A start's request comes with the
 * header, before the RTS has set up the stream's buffers and turned the
 * eventlog on (Note [Snapshot hooks]): wait for that, a little. */
static bool hooks_stream_running(void)
{
    if (eventLogStatus == NULL)
        return true;    /* no RTS to ask (a test, a C producer) */
    long waited = 0, step = 1;
    while (eventLogStatus() != EVENTLOG_RUNNING) {
        if (waited >= HOOKS_WAIT_RUNNING_MS)
            return false;
        hooks_sleep_ms(step);
        waited += step;
        if (step < 20)
            step *= 2;
    }
    return true;
}

static void *hooks_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&hooks_lock);
    for (;;) {
        while (hooks_started == hooks_requested)
            pthread_cond_wait(&hooks_wake, &hooks_lock);
        hooks_started = hooks_requested;
        pthread_mutex_unlock(&hooks_lock);
        bool running = hooks_stream_running();
        pthread_mutex_lock(&hooks_lock);
        if (!running) {
            hooks_stats.skipped++;
            continue;
        }
        hooks_stats.runs++;
        /* In registration order; one removed meanwhile is not called, one
         * added meanwhile is (the copy is only for the walk). */
        struct hook run[ELS_GHC_SNAPSHOT_HOOKS_MAX];
        unsigned n = hooks_count;
        memcpy(run, hooks, n * sizeof run[0]);
        for (unsigned i = 0; i < n; i++) {
            if (!hook_registered_locked(run[i]))
                continue;
            hooks_calling = true;
            hooks_current = run[i];
            hooks_stats.calls++;
            pthread_mutex_unlock(&hooks_lock);
            run[i].fn(run[i].ctx);
            pthread_mutex_lock(&hooks_lock);
            hooks_calling = false;
            pthread_cond_broadcast(&hooks_idle);
        }
        pthread_mutex_unlock(&hooks_lock);
        /* ELS_ESTOPPED (stopped meanwhile) or ELS_ENOTSUP (no patched
         * RTS): nothing to flush.  Once hs_exit has begun, its own stop
         * writes everything out. */
        if (!rts_shutting_down())
            (void)els_ghc_flush();
        pthread_mutex_lock(&hooks_lock);
    }
    return NULL;
}

void elsi_ghc_hooks_kick(void)
{
    bool failed = false;
    pthread_mutex_lock(&hooks_lock);
    hooks_stats.requests++;
    if (hooks_count > 0) {
        if (hooks_requested != hooks_started)
            hooks_stats.coalesced++;    /* a run is due already */
        hooks_requested++;
        if (!hooks_thread_up) {
            pthread_attr_t attr;
            pthread_attr_init(&attr);
            pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
            /* Like the writer thread: no signal of the program's (the
             * RTS owns them) is delivered to this thread. */
            sigset_t all, old;
            sigfillset(&all);
            pthread_sigmask(SIG_SETMASK, &all, &old);
            hooks_thread_up =
                pthread_create(&hooks_thread, &attr, hooks_main, NULL) == 0;
            pthread_sigmask(SIG_SETMASK, &old, NULL);
            pthread_attr_destroy(&attr);
            if (!hooks_thread_up) {
                /* The next request tries again. */
                hooks_started = hooks_requested;
                hooks_stats.skipped++;
                failed = true;
            }
        }
        pthread_cond_signal(&hooks_wake);
    }
    pthread_mutex_unlock(&hooks_lock);
    if (failed)
        elsi_log(ELS_LOG_WARN, "snapshot hooks not run: cannot start their thread");
}

int els_ghc_on_snapshot(void (*fn)(void *), void *ctx)
{
    if (fn == NULL)
        return ELS_EINVAL;
    int r = 0;
    pthread_mutex_lock(&hooks_lock);
    if (hook_registered_locked((struct hook){ fn, ctx }))
        r = ELS_EEXIST;
    else if (hooks_count == ELS_GHC_SNAPSHOT_HOOKS_MAX)
        r = ELS_ENOMEM;
    else
        hooks[hooks_count++] = (struct hook){ fn, ctx };
    pthread_mutex_unlock(&hooks_lock);
    return r;
}

int els_ghc_off_snapshot(void (*fn)(void *), void *ctx)
{
    pthread_mutex_lock(&hooks_lock);
    unsigned i = 0;
    while (i < hooks_count && !hook_eq(hooks[i], fn, ctx))
        i++;
    if (i == hooks_count) {
        pthread_mutex_unlock(&hooks_lock);
        return ELS_EINVAL;
    }
    memmove(&hooks[i], &hooks[i + 1], (hooks_count - i - 1) * sizeof hooks[0]);
    hooks_count--;
    /* No call of it after this returns; from inside a hook (the hooks'
     * own thread) there is none to wait for but the caller itself. */
    bool self = hooks_thread_up && pthread_equal(pthread_self(), hooks_thread);
    while (!self && hooks_calling && hook_eq(hooks_current, fn, ctx))
        pthread_cond_wait(&hooks_idle, &hooks_lock);
    pthread_mutex_unlock(&hooks_lock);
    return 0;
}

int els_ghc_hook_stats_sized(struct els_ghc_hook_stats *out, size_t size)
{
    if (out == NULL || size == 0)
        return ELS_EINVAL;
    pthread_mutex_lock(&hooks_lock);
    struct els_ghc_hook_stats s = hooks_stats;
    s.running = hooks_calling;
    s.registered = hooks_count;
    pthread_mutex_unlock(&hooks_lock);
    memset(out, 0, size);
    memcpy(out, &s, size < sizeof s ? size : sizeof s);
    return 0;
}

void els_ghc_hook_failed(const char *why)
{
    pthread_mutex_lock(&hooks_lock);
    hooks_stats.failures++;
    pthread_mutex_unlock(&hooks_lock);
    elsi_log(ELS_LOG_WARN, "snapshot hook failed: %s",
             why != NULL ? why : "(no reason given)");
}

void els_ghc_haskell_hook(void *stable_ptr)
{
    if (rts_lock == NULL || rts_evalStableIO == NULL || rts_unlock == NULL ||
        rts_getSchedStatus == NULL) {
        els_ghc_hook_failed("a Haskell hook without a Haskell runtime");
        return;
    }
    if (rtsSupportsBoundThreads == NULL || !rtsSupportsBoundThreads()) {
        els_ghc_hook_failed("a Haskell hook needs the threaded RTS (-threaded)");
        return;
    }
    /* Note [Snapshot hooks]: never enter an RTS that is shutting down. */
    if (rts_shutting_down())
        return;
    Capability *cap = rts_lock();
    rts_evalStableIO(&cap, (HsStablePtr)stable_ptr, NULL);
    SchedulerStatus status = rts_getSchedStatus(cap);
    rts_unlock(cap);
    if (status != Success && !rts_shutting_down())
        els_ghc_hook_failed(status == Killed
            ? "a Haskell hook was killed (an exception it did not catch)"
            : "a Haskell hook was interrupted");
}

// ---------------------------------------------------------------------------
// fork()
// ---------------------------------------------------------------------------

/* Note [Fork and the glue] (ghc.c), for this file's lock: it is never
 * held across a hook call, so the prepare handler waits at most for a
 * few loads and stores.  The child has no hook thread and no call under
 * way; a run the parent had due is not the child's (its stream starts
 * later, with a request of its own). */
static void hooks_atfork_prepare(void)
{
    pthread_mutex_lock(&hooks_lock);
}

static void hooks_atfork_parent(void)
{
    pthread_mutex_unlock(&hooks_lock);
}

static void hooks_atfork_child(void)
{
    pthread_cond_init(&hooks_wake, NULL);
    pthread_cond_init(&hooks_idle, NULL);
    hooks_thread_up = false;
    hooks_calling = false;
    hooks_started = hooks_requested;
    pthread_mutex_unlock(&hooks_lock);
}

__attribute__((constructor)) static void hooks_init(void)
{
    /* Failure (ENOMEM) only loses what the handlers provide. */
    (void)pthread_atfork(hooks_atfork_prepare, hooks_atfork_parent,
                         hooks_atfork_child);
}
