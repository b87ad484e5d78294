/*
 * prof.c: the RTS profilers' controls for a running program: the heap
 * profile timer, heap censuses on request, and the time (cost-centre)
 * profiler.  Part of the RTS adapter (lib/ghc/): it includes RTS headers,
 * and everything it calls in the RTS is a weak reference, so the library
 * still links into programs built against a stock or non-profiled RTS and
 * into plain C programs, where these calls answer ELS_ENOTSUP.  Not its
 * job: the eventlog writer (ghc.c), or taking censuses and samples (the
 * RTS does, and posts them to the eventlog when it runs).
 */
#include <stddef.h>

#include "eventlog-sink/ghc.h"

/*
 * Note [Which RTS can do what]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * requestHeapCensus(), startHeapProfTimer() and stopHeapProfTimer() are
 * public only in an RTS with patch 0011 (rts/ProfilingControl.h, GHC 9.2's
 * names and meaning); a stock 9.0.2 RTS has the two timer functions as
 * hidden symbols the scheduler overrides, so they are unusable, and no
 * requestHeapCensus.  Every RTS way has them, profiled or not: a census
 * by closure type (+RTS -hT) needs no -prof.  They do something only in a
 * program run with a heap profiling mode, which RtsFlags says.
 *
 * startProfTimer()/stopProfTimer() exist in every RTS but do something
 * only in a profiled one (-prof); CC_LIST, the list of cost centres, is
 * defined only there, so it tells the two apart.
 *
 * A weak reference in this library, which is usually a shared object,
 * resolves against the program's definitions at load time; the program's
 * static link exports them because the library refers to them.
 */
void requestHeapCensus(void) __attribute__((weak));
void startHeapProfTimer(void) __attribute__((weak));
void stopHeapProfTimer(void) __attribute__((weak));
void startProfTimer(void) __attribute__((weak));
void stopProfTimer(void) __attribute__((weak));
#pragma weak RtsFlags
extern void *CC_LIST __attribute__((weak));

/* The program runs with a heap profiling mode on an RTS with patch 0011. */
static int heap_profiler_ready(void)
{
    if (requestHeapCensus == NULL || startHeapProfTimer == NULL ||
        stopHeapProfTimer == NULL || &RtsFlags == NULL)
        return 0;
    return RtsFlags.ProfFlags.doHeapProfile != 0;
}

int els_ghc_heap_profiling(int on)
{
    if (!heap_profiler_ready())
        return ELS_ENOTSUP;
    if (on)
        startHeapProfTimer();
    else
        stopHeapProfTimer();
    return 0;
}

int els_ghc_heap_census(void)
{
    if (!heap_profiler_ready())
        return ELS_ENOTSUP;
    requestHeapCensus();
    return 0;
}

int els_ghc_time_profiling(int on)
{
    if (&CC_LIST == NULL || startProfTimer == NULL || stopProfTimer == NULL)
        return ELS_ENOTSUP;
    if (on)
        startProfTimer();
    else
        stopProfTimer();
    return 0;
}
