/*
 * clock.h: the library's one clock for timeouts, deadlines and rate
 * limits: CLOCK_MONOTONIC in milliseconds, which no settimeofday() or NTP
 * step moves.  It is not a timestamp for events (the RTS stamps those) and
 * not a source of entropy.
 */
#ifndef ELS_CLOCK_H
#define ELS_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t elsi_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

#endif /* ELS_CLOCK_H */
