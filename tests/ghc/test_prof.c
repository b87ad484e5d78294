/*
 * test_prof.c: lib/ghc/prof.c (the profilers' controls) against a fake
 * RTS: one that has patch 0011's heap profile control (requestHeapCensus,
 * startHeapProfTimer, stopHeapProfTimer) and RtsFlags, but is not profiled
 * (no CC_LIST), like a program built without -prof.  Checked: the heap
 * calls reach the RTS only when a heap profiling mode is set, and answer
 * ELS_ENOTSUP otherwise; the time call answers ELS_ENOTSUP without a
 * profiled RTS and calls nothing.  Real programs: tests/rts/test_profiling.sh.
 */
#include <Rts.h>

#undef CHECK                    /* Rts.h's; check.h has its own */
#include "check.h"
#include "eventlog-sink.h"
#include "eventlog-sink/ghc.h"

/* rts/ProfilingControl.h of the patched RTS (not in the stock headers). */
void requestHeapCensus(void);
void startHeapProfTimer(void);
void stopHeapProfTimer(void);

RTS_FLAGS RtsFlags;
static int censuses, timer_starts, timer_stops, prof_timer_calls;

void requestHeapCensus(void) { censuses++; }
void startHeapProfTimer(void) { timer_starts++; }
void stopHeapProfTimer(void) { timer_stops++; }
void startProfTimer(void) { prof_timer_calls++; }
void stopProfTimer(void) { prof_timer_calls++; }

static void heap_calls_need_a_heap_profiling_mode(void)
{
    RtsFlags.ProfFlags.doHeapProfile = 0;
    CHECK_INT(els_ghc_heap_profiling(0), ==, ELS_ENOTSUP);
    CHECK_INT(els_ghc_heap_profiling(1), ==, ELS_ENOTSUP);
    CHECK_INT(els_ghc_heap_census(), ==, ELS_ENOTSUP);
    CHECK_INT(censuses + timer_starts + timer_stops, ==, 0);
}

static void heap_calls_reach_the_rts(void)
{
    RtsFlags.ProfFlags.doHeapProfile = HEAP_BY_CLOSURE_TYPE;
    CHECK_INT(els_ghc_heap_profiling(0), ==, 0);
    CHECK_INT(timer_stops, ==, 1);
    CHECK_INT(els_ghc_heap_census(), ==, 0);
    CHECK_INT(censuses, ==, 1);
    CHECK_INT(els_ghc_heap_profiling(1), ==, 0);
    CHECK_INT(timer_starts, ==, 1);
    CHECK_INT(timer_stops, ==, 1);
}

static void time_call_needs_a_profiled_rts(void)
{
    CHECK_INT(els_ghc_time_profiling(0), ==, ELS_ENOTSUP);
    CHECK_INT(els_ghc_time_profiling(1), ==, ELS_ENOTSUP);
    CHECK_INT(prof_timer_calls, ==, 0);
}

static const struct check_case cases[] = {
    CHECK_CASE(heap_calls_need_a_heap_profiling_mode),
    CHECK_CASE(heap_calls_reach_the_rts),
    CHECK_CASE(time_call_needs_a_profiled_rts),
};

CHECK_MAIN(cases)
