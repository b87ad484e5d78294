/*
 * eventlog-sink/ghc.h: glue between libeventlog-sink and the GHC RTS.
 *
 * GHC's EventLogWriter carries no context pointer, so the RTS side is a
 * process-wide singleton: configure it with a spec, then hand
 * els_ghc_writer() to the RTS in RtsConfig.eventlog_writer from a C main()
 * (see examples/hello-stream/main.c).  The RTS calls the writer's init when
 * event logging starts (+RTS -l), which opens the sink (els_ghc_start()
 * opens it itself first); stop closes it.
 *
 * Include <Rts.h> (GHC's include directory, `ghc --print-libdir`/include)
 * before this header, or let it include Rts.h itself.
 */
#ifndef EVENTLOG_SINK_GHC_H
#define EVENTLOG_SINK_GHC_H

#include <Rts.h>

#include "../eventlog-sink.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The environment variable els_ghc_writer_from_env() reads. */
#define ELS_GHC_SPEC_ENV "EVENTLOG_SINK"

/* A spec given to the process-wide writer (+RTS --eventlog-sink=,
 * $EVENTLOG_SINK, els_ghc_configure()) may be a list of up to this many
 * sink specs separated by '|', e.g.
 *   unix:/tmp/app.sock|ring:/tmp/app.eventlog?size=64M&control=unix:/tmp/app.ctl
 * Each sink gets every unit of the stream and is a writer of its own (its
 * own queue, consumers, control socket, losses and announce entry).  A
 * '|' inside an address or option value is written %7C. */
#define ELS_GHC_SINKS_MAX 4

/* Check spec, one sink spec or a list of them (syntax, registered
 * schemes, options; a list with an empty spec or more than
 * ELS_GHC_SINKS_MAX is refused whole) and remember it for the
 * process-wide writer, as this process's.  Opens nothing: the sinks are
 * opened when event logging starts.  ELS_EBUSY while that writer is
 * running or being started.  On failure writes one line naming the
 * problem to err (for a list, "sink K of N: ..."). */
int els_ghc_configure(const char *spec, char *err, size_t err_len);

/* The EventLogWriter to give the RTS.  Its init opens the configured sink
 * and, if that fails (port in use, path refused...), reports the one-line
 * reason through the log hook and exits the program with status 1, as the
 * RTS's own file writer does when it cannot open its file (at start-up;
 * els_ghc_start() returns the error instead).  In a forked child it opens
 * nothing: the parent's sink is not the child's.  Its stop delivers what
 * is queued (linger=), reports any losses through the log hook and closes
 * the sink, once no other thread is still using it. */
const EventLogWriter *els_ghc_writer(void);

/* For a C main(): read $EVENTLOG_SINK.  Unset or empty: returns NULL (keep
 * the RTS default).  Valid: configures it and returns els_ghc_writer().
 * Invalid: reports the one-line error through the log hook and exits with
 * status 1. */
const EventLogWriter *els_ghc_writer_from_env(void);

/* Counters of the process-wide writer, as els_writer_stats_sized() (size
 * is the caller's sizeof(struct els_stats); nothing past it is written);
 * ELS_ESTOPPED if it is not running.  With a list of sinks, the first
 * sink's counters (the spec the list starts with): not a sum, which would
 * count every unit once per sink; each sink's are els_ghc_sink_stats(). */
int els_ghc_stats_sized(struct els_stats *out, size_t size);

/* els_ghc_stats_sized() with this header's sizeof(struct els_stats). */
static inline int els_ghc_stats(struct els_stats *out)
{
    return els_ghc_stats_sized(out, sizeof *out);
}

/* The counters of sink index (0 for the first of the list) of the
 * process-wide writer, as els_ghc_stats_sized(); ELS_EINVAL past the
 * last sink, ELS_ESTOPPED if it is not running. */
int els_ghc_sink_stats_sized(unsigned index, struct els_stats *out,
                             size_t size);

static inline int els_ghc_sink_stats(unsigned index, struct els_stats *out)
{
    return els_ghc_sink_stats_sized(index, out, sizeof *out);
}

/* With a flight recorder (+RTS --eventlog-sink=ring:PATH, or a list with
 * a ring: sink: the first of them): write the
 * window it keeps out into a new file now and put its name in name; see
 * els_writer_dump().  Any thread; it waits for the file write only,
 * never for a capability, so an unsafe foreign call would do, but a safe
 * one lets other Haskell threads run meanwhile:
 *   foreign import ccall safe "els_ghc_ring_dump"
 *       elsRingDump :: CString -> CSize -> IO CInt
 * ELS_ESTOPPED if the eventlog is not running through this library,
 * ELS_EINVAL if no sink of it is a flight recorder. */
int els_ghc_ring_dump(char *name, size_t name_len);

/* Stop the eventlog at runtime: every consumer receives the rest of the
 * stream and its end, and the sink (every sink of a list) is closed.
 * Start it again with els_ghc_start(): the configured sinks are opened
 * anew and every consumer gets a fresh stream, header first.  Both are safe while Haskell threads
 * run only with an RTS that has the eventlog-sink patches (on a stock
 * 9.0.2 RTS, GHC's own start/stop race with running capabilities).  Call
 * them from Haskell through a *safe* foreign import:
 *
 *   foreign import ccall safe "els_ghc_stop"  elsStop  :: IO ()
 *   foreign import ccall safe "els_ghc_start" elsStart :: IO CInt
 *
 * els_ghc_start opens the sink before it asks the RTS to start, and
 * returns 0; ELS_EBUSY if the eventlog runs already, with this writer or
 * another (nothing is opened then), or another start is under way;
 * ELS_EINVAL if no sink was configured in this process (a forked child
 * must call els_ghc_configure() with an address of its own: its
 * parent's is not its to open); ELS_ENOSCHEME without an RTS, or
 * with one built without eventlog support (link with -eventlog); or,
 * when a sink cannot be opened (a port taken while the eventlog was
 * stopped, a path refused...), the code els_writer_open() returned
 * (ELS_EADDRINUSE, ...), after one log line with the reason (rate-limited
 * if it repeats; for a list, naming the sink, whose predecessors are
 * closed again).  It never ends the program: after a failure the
 * eventlog stays stopped, and a later els_ghc_start() may succeed.
 * els_ghc_stop, els_ghc_start, els_ghc_stats and the writer's callbacks
 * may race each other and fork() safely. */
int els_ghc_start(void);
void els_ghc_stop(void);

/* ------------------------------------------------------------------------
 * Runtime control (an RTS with the eventlog-sink patches; on a stock RTS,
 * or without one, each returns ELS_ENOTSUP).
 *
 * Every call below but els_ghc_get_classes and els_ghc_buffer_size stops
 * every capability while it works, and returns when done.  So call them
 * from a thread that holds no capability: from Haskell through a *safe*
 * foreign import (an unsafe one would deadlock), or from a C thread;
 * never from inside the eventlog writer's callbacks.  They may be called
 * from several threads at once; the stops are serialised.
 * ------------------------------------------------------------------------ */

/* Write every buffer out to the writer now (every capability's and the
 * global one) and flush it: when it returns, everything posted before the
 * call has reached the sink's queue (every sink's, for a list).  ELS_ESTOPPED while the eventlog is
 * stopped.  9.0.2's base has no flushEventLog: this is how Haskell code
 * flushes. */
int els_ghc_flush(void);

/* Take a SYNC snapshot into the stream of every consumer: wall clock, the
 * label and state of every live thread, heap figures and the classes,
 * between snapshot begin/end events (see rts/EventLogControl.h).  Returns
 * once it is written.  ELS_ESTOPPED while the eventlog is stopped. */
int els_ghc_snapshot(void);

/* Turn classes of events on and off, in +RTS -l letters: s scheduler, g
 * GC, n nonmoving GC, p sparks (sampled), f sparks (full), u user events,
 * a = sgpfu.  "sgu" sets exactly those classes; a string that starts with
 * '-' or '+' changes the current set: "-s+f" turns s off and f on.
 * Each change takes effect at a point every capability agrees on and is
 * recorded in the stream (EVENT_TRACE_CLASS).  ELS_EINVAL (and one line
 * in err) for an unknown letter or a dangling sign; nothing changes then. */
int els_ghc_set_classes(const char *letters, char *err, size_t err_len);

/* The classes that are on, as letters in the order sgnpfu (e.g. "sgpu";
 * "" for none) into buf.  ELS_EINVAL if len cannot hold them and the NUL.
 * Any thread, never blocks. */
int els_ghc_get_classes(char *buf, size_t len);

/* Each capability's buffer size in bytes (+RTS --eventlog-buffer-size,
 * default 2 MiB): every buffer is written out and replaced, with every
 * capability stopped.  ELS_EINVAL outside 64 KiB..1 GiB, or (with one
 * log line) when the running sink's buffer= is not above it or its
 * consumer-memory= is below it: its units would be dropped as too big,
 * or a slow consumer closed instead of cut loose.  The same contradiction
 * at start-up stops the program with that line (els_ghc_start() returns
 * ELS_EINVAL instead). */
int els_ghc_set_buffer_size(size_t bytes);

/* The current size in bytes, or ELS_ENOTSUP.  Any thread, never blocks. */
long els_ghc_buffer_size(void);

/* ---------------------------------------------------------------------
 * Snapshot hooks: a library's own state in every new stream.
 *
 * A library that posts an id-to-name table once at start (a profiler's
 * cost-centre names, a tracer's span kinds) leaves a consumer that
 * starts later unable to name anything.  A hook posts the table again:
 * it runs after every snapshot that starts a stream, namely
 *   - a join snapshot, taken for a consumer that joins a running stream
 *     after its start has left the queue;
 *   - the start of a stream: a restart (els_ghc_start() after
 *     els_ghc_stop()), a forked child's first stream of its own, and the
 *     program's first stream if the hook was registered before it (a C
 *     main before hs_init);
 * and then the library writes every buffer out (els_ghc_flush()), so
 * what the hooks posted goes out at once.  A consumer that joins sees,
 * in order: the header, the in-band note that it joined mid-run, the
 * snapshot, then the hooks' events (among whatever the program posts
 * meanwhile).  Every consumer receives the hooks' events, not only the
 * new one, so post state that may be posted twice.
 *
 * The hooks run on a thread of this library, one after another in
 * registration order, never on a thread of the RTS and never while
 * capabilities are stopped: a hook may post events (through Haskell, or
 * els_ghc_haskell_hook below), block, or call anything in this header.
 * A hook that blocks delays only later runs of the hooks, which are then
 * merged into one (counted in coalesced); the stream, the snapshots and
 * the consumers go on.  Requests that come while a run waits to begin
 * are answered by it; one that comes while a run is under way gets a run
 * of its own after it.  Needs the unit writer of an RTS with the
 * eventlog-sink patches (+RTS --eventlog-sink, or els_ghc_start()):
 * with a stock RTS no snapshot starts a stream and hooks never run.
 * See Note [Snapshot hooks] in lib/ghc/hooks.c.
 * --------------------------------------------------------------------- */

/* At most this many hooks are registered at a time. */
#define ELS_GHC_SNAPSHOT_HOOKS_MAX 16

/* Register fn(ctx) as a snapshot hook.  Any thread, any time (before
 * the RTS starts too); it takes effect from the next snapshot.  0;
 * ELS_EINVAL for a NULL fn; ELS_EEXIST if the same fn and ctx are
 * registered already; ELS_ENOMEM when ELS_GHC_SNAPSHOT_HOOKS_MAX hooks
 * are. */
int els_ghc_on_snapshot(void (*fn)(void *ctx), void *ctx);

/* Unregister it.  When this returns, fn(ctx) is not running and will not
 * be called again (called from inside a hook, the calling hook is the
 * one exception: it goes on until it returns), so ctx may be freed;
 * it waits for a call under way, so do not call it while holding
 * something that hook waits for.  0, or ELS_EINVAL if it was not
 * registered. */
int els_ghc_off_snapshot(void (*fn)(void *ctx), void *ctx);

/* What the hooks did since the program started.  Append-only, as struct
 * els_stats. */
struct els_ghc_hook_stats {
    /* Snapshots that started a stream (with or without hooks). */
    uint64_t requests;
    /* Runs of the hooks, and requests merged into a run already due. */
    uint64_t runs, coalesced;
    /* Runs not made: no stream ran within 5 s of the request (it was
     * stopped meanwhile), or the hooks' thread could not be started. */
    uint64_t skipped;
    /* Hook calls, and hooks that failed (els_ghc_hook_failed(): a
     * Haskell hook that threw, or could not run). */
    uint64_t calls, failures;
    /* A hook is running now (1) or not (0); hooks registered now. */
    uint64_t running, registered;
    /* --- end of version 1: add new fields below this line only --- */
};

/* Copy the counters into out, which has size bytes (the caller's
 * sizeof(struct els_ghc_hook_stats)); as els_writer_stats_sized().  0,
 * or ELS_EINVAL for a NULL out or a size of 0.  Any thread. */
int els_ghc_hook_stats_sized(struct els_ghc_hook_stats *out, size_t size);

static inline int els_ghc_hook_stats(struct els_ghc_hook_stats *out)
{
    return els_ghc_hook_stats_sized(out, sizeof *out);
}

/* For hooks written in other languages: count a hook that failed and
 * say why through the log hook (one WARN line "snapshot hook failed:
 * WHY").  The Haskell package calls it for an action that threw. */
void els_ghc_hook_failed(const char *why);

/* A hook that runs a Haskell action: register it with the action's
 * StablePtr (an IO ()) as ctx.  The action runs as a bound Haskell
 * thread on the hooks' thread (rts_lock), starting with asynchronous
 * exceptions masked, as rts_evalStableIO starts every action
 * (onSnapshot unmasks them around each of its actions).  An action
 * that ends with an exception is counted as failed
 * (els_ghc_hook_failed); during the RTS's shutdown none is started.  The threaded RTS only: on the non-threaded RTS
 * another OS thread cannot enter Haskell, so the call is counted as
 * failed.  GHC.Eventlog.Sink.onSnapshot does all of this. */
void els_ghc_haskell_hook(void *stable_ptr);

/* ---------------------------------------------------------------------
 * Profiling: the heap profile timer, heap censuses on request, and the
 * time (cost-centre) profiler of a running program.  What they produce
 * goes to the eventlog (and to the .hp/.prof files, as +RTS -h/-p say):
 * heap samples (+RTS -hT, or -hc, -hy, ... in a profiled program) and
 * cost-centre samples (+RTS -p, profiled programs).
 *
 * Each may be called from any thread (a Haskell thread through a safe
 * foreign import, a C thread of the program or of this library) while
 * the RTS is initialised, and never blocks: it sets a flag the RTS's timer
 * or scheduler reads.  Each returns 0, or ELS_ENOTSUP when the running
 * RTS cannot serve it (said per function); nothing changes then.
 * --------------------------------------------------------------------- */

/* Start (on != 0) or stop (on == 0) the heap profile timer: the periodic
 * censuses every +RTS -i interval (it starts with the program).  After a
 * stop, a census already due may still be taken; then none until a start
 * or els_ghc_heap_census().
 * ELS_ENOTSUP unless the RTS has the eventlog-sink patches' heap profile
 * control (patch 0011, GHC 9.2's startHeapProfTimer/stopHeapProfTimer) and
 * the program runs with a heap profiling mode (+RTS -h...). */
int els_ghc_heap_profiling(int on);

/* Ask for one heap census, whether the heap profile timer runs or not
 * (GHC 9.2's requestHeapCensus()).  It is taken at the next context switch
 * of a capability that runs Haskell code (during a major GC), not before
 * this returns; requests made before it starts coalesce into it.
 * ELS_ENOTSUP as for els_ghc_heap_profiling(). */
int els_ghc_heap_census(void);

/* Start (on != 0) or stop (on == 0) the time profiler: the cost-centre
 * samples of every tick (+RTS -p starts it with the program).  A stop
 * takes effect from the next tick.  ELS_ENOTSUP unless the program is
 * profiled (built with -prof). */
int els_ghc_time_profiling(int on);

#ifdef __cplusplus
}
#endif

#endif /* EVENTLOG_SINK_GHC_H */
