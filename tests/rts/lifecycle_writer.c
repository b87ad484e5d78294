/*
 * lifecycle_writer.c: a checking eventlog writer for the RTS lifecycle
 * tests (tests/rts/test_rts_lifecycle.sh, with Lifecycle.hs).
 *
 * Registers the scheme "lctest" with the patched RTS, so that
 * `+RTS --eventlog-sink=lctest:PREFIX` starts it.  Each stream the RTS
 * starts goes to its own file PREFIX.PID.N.eventlog (N counts the streams
 * of process PID), written with plain write(2) so that nothing is
 * buffered across a fork.  While it writes it checks what the RTS
 * promises a writer (rts/EventLogControl.h): no unit before init or after
 * stop, the header first and only once, nothing after DATA_END, DATA_END
 * before stop.  Every breach is counted (lc_violations) and described on
 * stderr.  It also gives the Haskell side start, stop and both flush
 * paths (lc_flush_locked holds a capability through rts_lock()).
 *
 * With LC_FILL_REGISTRY=1 in the environment its constructor also fills
 * the RTS's scheme table and prints what each kind of refusal returned.
 * Not its job: parsing streams (the shell test runs ghc-events).
 */
#include "Rts.h"
#include "rts/EventLogControl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char lc_prefix[4096];
static int lc_fd = -1;
static pid_t lc_owner;            /* the process that opened lc_fd */
static unsigned lc_streams;       /* streams started by this process */
static atomic_bool lc_running;
static atomic_bool lc_header_seen;
static atomic_bool lc_end_seen;
static atomic_int lc_violations_n;
static atomic_long lc_units_by_reason[4];

static void violation(const char *what)
{
    atomic_fetch_add(&lc_violations_n, 1);
    fprintf(stderr, "lifecycle_writer: violation: %s\n", what);
}

static void lc_init(void)
{
    if (atomic_load(&lc_running))
        violation("init while a stream runs");
    pid_t pid = getpid();
    if (pid != lc_owner)
        lc_streams = 0;
    char path[4200];
    snprintf(path, sizeof path, "%s.%ld.%u.eventlog", lc_prefix, (long)pid,
             lc_streams++);
    lc_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (lc_fd < 0) {
        perror(path);
        exit(3);
    }
    lc_owner = pid;
    atomic_store(&lc_header_seen, false);
    atomic_store(&lc_end_seen, false);
    atomic_store(&lc_running, true);
}

static bool lc_write_unit(void *buf, size_t size, const EventLogUnitInfo *info)
{
    if (!atomic_load(&lc_running)) {
        violation("unit written while no stream runs");
        return true;
    }
    if (atomic_load(&lc_end_seen))
        violation("unit written after DATA_END");
    if (info->kind == EVENTLOG_UNIT_HEADER) {
        if (atomic_exchange(&lc_header_seen, true))
            violation("second header in one stream");
    } else if (!atomic_load(&lc_header_seen)) {
        violation("unit written before the header");
    }
    if (info->kind == EVENTLOG_UNIT_DATA_END)
        atomic_store(&lc_end_seen, true);
    if ((unsigned)info->reason < 4)
        atomic_fetch_add(&lc_units_by_reason[info->reason], 1);
    const char *p = buf;
    while (size > 0) {
        ssize_t n = write(lc_fd, p, size);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            perror("lifecycle_writer: write");
            exit(3);
        }
        p += n;
        size -= (size_t)n;
    }
    return true;
}

static bool lc_write(void *buf, size_t size)
{
    violation("plain writeEventLog called on a unit writer");
    (void)buf; (void)size;
    return true;
}

static void lc_flush(void)
{
    if (!atomic_load(&lc_running))
        violation("flush while no stream runs");
}

static void lc_stop(void)
{
    if (!atomic_load(&lc_running))
        violation("stop while no stream runs");
    /* A forked child's RTS stops the stream it inherited without ending
     * it, then starts its own. */
    if (getpid() == lc_owner && !atomic_load(&lc_end_seen))
        violation("stop before DATA_END");
    atomic_store(&lc_running, false);
    close(lc_fd);
    lc_fd = -1;
}

static const EventLogUnitWriter lc_writer = {
    .base = {
        .initEventLogWriter = lc_init,
        .writeEventLog = lc_write,
        .flushEventLog = lc_flush,
        .stopEventLogWriter = lc_stop,
    },
    .writeEventLogUnit = lc_write_unit,
};

static const EventLogUnitWriter *lc_open(const char *spec, char *err,
                                         size_t err_size)
{
    const char *prefix = strchr(spec, ':') + 1;
    if (*prefix == '\0' || strlen(prefix) >= sizeof lc_prefix) {
        snprintf(err, err_size, "lctest: expected lctest:PREFIX");
        return NULL;
    }
    strcpy(lc_prefix, prefix);
    return &lc_writer;
}

static const EventLogUnitWriter *lc_open_never(const char *spec, char *err,
                                               size_t err_size)
{
    (void)spec;
    snprintf(err, err_size, "not a real sink");
    return NULL;
}

__attribute__((constructor)) static void lc_register(void)
{
    int r = registerEventLogSink("lctest", lc_open);
    if (r != 0) {
        fprintf(stderr, "lifecycle_writer: registerEventLogSink: %d\n", r);
        exit(3);
    }
    const char *fill = getenv("LC_FILL_REGISTRY");
    if (fill == NULL || strcmp(fill, "1") != 0)
        return;
    printf("duplicate: %d\n", registerEventLogSink("lctest", lc_open_never));
    printf("malformed: %d\n", registerEventLogSink("Bad", lc_open_never));
    int n = 1;      /* lctest */
    for (;;) {
        char scheme[32];
        snprintf(scheme, sizeof scheme, "fill%d", n);
        r = registerEventLogSink(scheme, lc_open_never);
        if (r != 0)
            break;
        n++;
    }
    printf("registered: %d, then: %d\n", n, r);
    fflush(stdout);
}

int lc_start(void)
{
    return startEventLoggingWithUnits(&lc_writer) ? 1 : 0;
}

void lc_end(void)
{
    endEventLogging();
}

/* flushEventLog with a capability held: this OS thread takes one through
 * rts_lock() (from a safe foreign call it holds none). */
void lc_flush_locked(void)
{
    Capability *cap = rts_lock();
    flushEventLog(&cap);
    rts_unlock(cap);
}

void lc_flush_null(void)
{
    flushEventLog(NULL);
}

int lc_violations(void)
{
    return atomic_load(&lc_violations_n);
}

long lc_units(int reason)
{
    return reason >= 0 && reason < 4 ? atomic_load(&lc_units_by_reason[reason]) : -1;
}
