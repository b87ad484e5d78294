/*
 * runtime.c: the running RTS's eventlog, steered from C and
 * Haskell callers: flush, SYNC snapshot, classes (-l letters), buffer
 * size.  Every RTS function it calls is a weak reference, as in ghc.c, so
 * the library still links into programs with a stock RTS (or none); there
 * each call returns ELS_ENOTSUP.  Not its job: the letter syntax
 * (classes.c) or the writer (ghc.c, lib/writer).
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "eventlog-sink/ghc.h"
#include "ghc/classes.h"
#include "ghc/glue.h"
#include "base/log.h"

/*
 * The RTS side, from rts/EventLogControl.h of the patched RTS
 * (rts-patches/ghc-9.0.2/0007-0010).  Declared here, with the same types,
 * since the library is built against the installed (stock) headers.
 * flushEventLog exists in a stock 9.0.2 RTS too, as an internal function
 * of another signature (it only flushes the writer), so the calls below
 * check a symbol only the patched RTS has before using it.
 */
void flushEventLog(Capability **cap) __attribute__((weak));
void snapshotEventLog(Capability **cap, int kind) __attribute__((weak));
bool getTraceFlag(int flag) __attribute__((weak));
void setTraceFlag(int flag, bool enabled) __attribute__((weak));
size_t getEventLogBufferSize(void) __attribute__((weak));
int setEventLogBufferSize(size_t bytes) __attribute__((weak));
enum EventLogStatus eventLogStatus(void) __attribute__((weak));

#define SNAPSHOT_SYNC 1   /* EVENTLOG_SNAPSHOT_SYNC */

static bool eventlog_running(void)
{
    return eventLogStatus != NULL && eventLogStatus() == EVENTLOG_RUNNING;
}

int els_ghc_flush(void)
{
    if (snapshotEventLog == NULL || flushEventLog == NULL) {
        return ELS_ENOTSUP;
    }
    if (!eventlog_running()) {
        return ELS_ESTOPPED;
    }
    flushEventLog(NULL);
    return 0;
}

int els_ghc_snapshot(void)
{
    if (snapshotEventLog == NULL) {
        return ELS_ENOTSUP;
    }
    if (!eventlog_running()) {
        return ELS_ESTOPPED;
    }
    snapshotEventLog(NULL, SNAPSHOT_SYNC);
    return 0;
}

static unsigned current_classes(void)
{
    unsigned set = 0;
    for (int i = 0; i < ELSI_CLASS_COUNT; i++) {
        if (getTraceFlag(i)) {
            set |= 1u << i;
        }
    }
    return set;
}

int els_ghc_set_classes(const char *letters, char *err, size_t err_len)
{
    if (getTraceFlag == NULL || setTraceFlag == NULL) {
        return elsi_fail(err, err_len, ELS_ENOTSUP,
                         "the running RTS cannot change event classes "
                         "(it lacks the eventlog-sink patches)");
    }
    unsigned current = current_classes();
    unsigned wanted;
    int rc = elsi_ghc_parse_classes(letters, current, &wanted, err, err_len);
    if (rc != 0) {
        return rc;
    }
    // One change per class, each at its own stop of every capability.
    for (int i = 0; i < ELSI_CLASS_COUNT; i++) {
        bool on = (wanted >> i) & 1u;
        if (on != (bool)((current >> i) & 1u)) {
            setTraceFlag(i, on);
        }
    }
    return 0;
}

int els_ghc_get_classes(char *buf, size_t len)
{
    if (getTraceFlag == NULL) {
        return ELS_ENOTSUP;
    }
    if (buf == NULL) {
        return ELS_EINVAL;
    }
    return elsi_ghc_format_classes(current_classes(), buf, len);
}

int els_ghc_set_buffer_size(size_t bytes)
{
    if (setEventLogBufferSize == NULL) {
        return ELS_ENOTSUP;
    }
    // Note [Unit size and the sink's limits] (ghc.c).
    char err[512];
    if (elsi_ghc_check_buffer_size(bytes, err, sizeof err) != 0) {
        elsi_log(ELS_LOG_WARN, "buffer size not changed: %s", err);
        return ELS_EINVAL;
    }
    int rc = setEventLogBufferSize(bytes);
    return rc == -EINVAL ? ELS_EINVAL : rc == -ENOTSUP ? ELS_ENOTSUP : rc;
}

long els_ghc_buffer_size(void)
{
    if (getEventLogBufferSize == NULL) {
        return ELS_ENOTSUP;
    }
    size_t size = getEventLogBufferSize();
    return size == 0 ? ELS_ENOTSUP : (long)size;
}
