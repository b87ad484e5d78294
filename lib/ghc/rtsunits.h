/*
 * rtsunits.h: what the RTS adapter uses of a patched RTS's
 * rts/EventLogControl.h (the unit writer, its units and their hand-over,
 * join snapshots, sink registration), from that header when the build
 * has it, else declared here.  ghc.c refers to each function weakly; the
 * adapter's unit tests (tests/ghc/) define them in their fake RTS against
 * these same declarations.  Include <Rts.h> first.  Not its job: the
 * runtime calls (runtime.c declares those it uses).
 */
#ifndef ELS_GHC_RTSUNITS_H
#define ELS_GHC_RTSUNITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Note [Patched and stock RTS]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * An RTS with the eventlog-sink patches declares registerEventLogSink()
 * and the unit-aware writer in rts/EventLogControl.h.  When this library
 * is built against such an RTS's headers it uses them; otherwise it
 * declares the same types itself (they must match the patches in
 * rts-patches/ghc-9.0.2/: the build uses the installed GHC's headers, so
 * these declarations are the ones every end-to-end test runs against the
 * patched RTS, and the adapter's unit tests build their fake RTS on).
 * The functions are weak references: in a program linked with a stock
 * RTS they are NULL and the library only offers els_ghc_writer() for
 * RtsConfig.eventlog_writer.
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
    EVENTLOG_UNIT_DATA_END = 3,
    EVENTLOG_UNIT_JOIN_SNAPSHOT = 4
} EventLogUnitKind;

typedef enum {
    EVENTLOG_WRITE_START = 0,
    EVENTLOG_WRITE_BUFFER_FULL = 1,
    EVENTLOG_WRITE_FLUSH = 2,
    EVENTLOG_WRITE_STOP = 3,
    EVENTLOG_WRITE_SNAPSHOT = 4
} EventLogWriteReason;

typedef enum {
    EVENTLOG_SNAPSHOT_JOIN = 0,
    EVENTLOG_SNAPSHOT_SYNC = 1
} EventLogSnapshotKind;

void requestEventLogSnapshot(EventLogSnapshotKind kind);

typedef struct {
    EventLogUnitKind kind;
    EventLogWriteReason reason;
    uint32_t capno;
    size_t buffer_size;         /* only where eventLogUnitsMayBeKept() exists */
    void **keep;
} EventLogUnitInfo;

bool eventLogUnitsMayBeKept(void);

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

#endif /* ELS_GHC_RTSUNITS_H */
