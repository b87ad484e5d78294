/*
 * fake_units.h: a fake patched RTS with the unit writer, for the RTS
 * adapter's unit tests that drive it (test_hooks.c, test_sinkset.c).
 *
 * It defines startEventLoggingWithUnits, endEventLogging, eventLogStatus
 * and requestEventLogSnapshot, which ghc.c refers to weakly, with the
 * types of lib/ghc/rtsunits.h: starting writes the header unit, as the
 * patched RTS does, and stopping the DATA_END unit before the writer's
 * stop; a test "takes" a join snapshot (fake_join_snapshot()) or writes
 * other units (fake_unit()) through the writer the fake was given, under
 * fake_lock.  fake_written holds what a consumer from the start must
 * receive of what the fake wrote (the test adds its own blocks);
 * fake_snapshot_requests counts the adapter's requests.  Include after
 * <Rts.h>, check.h and evgen.h; one test program each.
 */
#ifndef ELS_TEST_FAKE_UNITS_H
#define ELS_TEST_FAKE_UNITS_H

#include <pthread.h>
#include <stdatomic.h>

#include "ghc/rtsunits.h"

static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;
static const EventLogUnitWriter *fake_writer;
static atomic_uint fake_snapshot_requests;
static struct evgen_buf fake_written;

/* A unit of that kind and reason, not offered to keep.  fake_lock held. */
static inline bool fake_unit(const void *p, size_t len, EventLogUnitKind kind,
                             EventLogWriteReason reason)
{
    const EventLogUnitInfo info = { kind, reason, (uint32_t)-1, 0, NULL };
    return fake_writer->writeEventLogUnit((void *)p, len, &info);
}

bool startEventLoggingWithUnits(const EventLogUnitWriter *writer)
{
    pthread_mutex_lock(&fake_lock);
    if (fake_writer != NULL) {
        pthread_mutex_unlock(&fake_lock);
        return false;
    }
    writer->base.initEventLogWriter();
    fake_writer = writer;
    struct evgen_buf h = evgen_header();
    fake_unit(h.p, h.len, EVENTLOG_UNIT_HEADER, EVENTLOG_WRITE_START);
    evgen_put(&fake_written, h.p, h.len);
    free(h.p);
    pthread_mutex_unlock(&fake_lock);
    return true;
}

void endEventLogging(void)
{
    pthread_mutex_lock(&fake_lock);
    if (fake_writer != NULL) {
        fake_unit(evgen_data_end, sizeof evgen_data_end,
                  EVENTLOG_UNIT_DATA_END, EVENTLOG_WRITE_STOP);
        evgen_put(&fake_written, evgen_data_end, sizeof evgen_data_end);
        fake_writer->base.stopEventLogWriter();
        fake_writer = NULL;
    }
    pthread_mutex_unlock(&fake_lock);
}

enum EventLogStatus eventLogStatus(void)
{
    pthread_mutex_lock(&fake_lock);
    bool running = fake_writer != NULL;
    pthread_mutex_unlock(&fake_lock);
    return running ? EVENTLOG_RUNNING : EVENTLOG_NOT_CONFIGURED;
}

/* The adapter asks when a consumer joins; the tests take the snapshots
 * themselves. */
void requestEventLogSnapshot(EventLogSnapshotKind kind)
{
    (void)kind;
    atomic_fetch_add(&fake_snapshot_requests, 1);
}

/* The RTS taking a join snapshot: one block, written as that kind.  Must
 * return however the hooks behave. */
static inline void fake_join_snapshot(void)
{
    struct evgen_buf b = evgen_block(0, 1000, 3, "snapshot", 0);
    pthread_mutex_lock(&fake_lock);
    CHECK(fake_writer != NULL);
    fake_unit(b.p, b.len, EVENTLOG_UNIT_JOIN_SNAPSHOT, EVENTLOG_WRITE_SNAPSHOT);
    pthread_mutex_unlock(&fake_lock);
    free(b.p);
}

#endif /* ELS_TEST_FAKE_UNITS_H */
