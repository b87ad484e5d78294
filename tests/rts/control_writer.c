/*
 * control_writer.c: an eventlog writer for the runtime-control tests
 * (tests/rts/test_rts_control.sh, with Control.hs) that also plays the late
 * joiner.
 *
 * Registers the scheme "cttest" with the patched RTS: `+RTS
 * --eventlog-sink=cttest:PREFIX` writes each stream the RTS starts to
 * PREFIX.PID.N.eventlog (N counts the streams of process PID).  It keeps
 * the stream's header; when a JOIN snapshot unit arrives
 * (EVENTLOG_UNIT_JOIN_SNAPSHOT) it starts the file
 * PREFIX.PID.N.join.K.eventlog (K counts the joins of that stream) with
 * the header and that unit, and appends every later unit of the stream to
 * it too, as the library does for a consumer that joins: header +
 * snapshot + what follows.  A JOIN unit must never reach the ordinary
 * file, and a unit of reason EVENTLOG_WRITE_SNAPSHOT is counted.  Plain
 * write(2), so nothing is buffered across a fork.  Not its job: parsing
 * (the shell test runs ghc-events).
 */
#include "Rts.h"
#include "rts/EventLogControl.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char ct_prefix[4000];
static char ct_path[4200];
static int ct_fd = -1;
static int ct_join_fd = -1;
static pid_t ct_owner;
static unsigned ct_streams;
static unsigned ct_join_count;
static unsigned char *ct_header;
static size_t ct_header_len;
static atomic_int ct_joins;
static atomic_int ct_snapshot_units;
static atomic_int ct_bad;
/* Units arrive from several capabilities at once. */
static pthread_mutex_t ct_lock = PTHREAD_MUTEX_INITIALIZER;

static void write_all(int fd, const void *buf, size_t size)
{
    const char *p = buf;
    while (size > 0) {
        ssize_t n = write(fd, p, size);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            perror("control_writer: write");
            exit(3);
        }
        p += n;
        size -= (size_t)n;
    }
}

static void ct_init(void)
{
    pid_t pid = getpid();
    pthread_mutex_init(&ct_lock, NULL);  /* a forked child's is fresh */
    if (pid != ct_owner)
        ct_streams = 0;
    snprintf(ct_path, sizeof ct_path, "%s.%ld.%u", ct_prefix, (long)pid,
             ct_streams++);
    char path[4300];
    snprintf(path, sizeof path, "%s.eventlog", ct_path);
    ct_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (ct_fd < 0) {
        perror(path);
        exit(3);
    }
    ct_owner = pid;
    ct_join_count = 0;
    if (ct_join_fd >= 0)
        close(ct_join_fd);
    ct_join_fd = -1;
    free(ct_header);
    ct_header = NULL;
    ct_header_len = 0;
}

static bool ct_write_unit(void *buf, size_t size, const EventLogUnitInfo *info)
{
    pthread_mutex_lock(&ct_lock);
    if (info->reason == EVENTLOG_WRITE_SNAPSHOT)
        atomic_fetch_add(&ct_snapshot_units, 1);
    if (info->kind == EVENTLOG_UNIT_HEADER) {
        ct_header = malloc(size);
        memcpy(ct_header, buf, size);
        ct_header_len = size;
    }
    if (info->kind == EVENTLOG_UNIT_JOIN_SNAPSHOT) {
        if (info->reason != EVENTLOG_WRITE_SNAPSHOT) {
            fprintf(stderr, "control_writer: JOIN unit with reason %d\n",
                    (int)info->reason);
            atomic_fetch_add(&ct_bad, 1);
        }
        if (ct_join_fd >= 0)
            close(ct_join_fd);
        char path[4300];
        snprintf(path, sizeof path, "%s.join.%u.eventlog", ct_path,
                 ct_join_count++);
        ct_join_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (ct_join_fd < 0) {
            perror(path);
            exit(3);
        }
        write_all(ct_join_fd, ct_header, ct_header_len);
        write_all(ct_join_fd, buf, size);
        atomic_fetch_add(&ct_joins, 1);
    } else {
        write_all(ct_fd, buf, size);
        if (ct_join_fd >= 0)
            write_all(ct_join_fd, buf, size);
    }
    pthread_mutex_unlock(&ct_lock);
    return true;
}

static bool ct_write(void *buf, size_t size)
{
    (void)buf; (void)size;
    fprintf(stderr, "control_writer: plain write on a unit writer\n");
    atomic_fetch_add(&ct_bad, 1);
    return true;
}

static void ct_stop(void)
{
    if (ct_join_fd >= 0)
        close(ct_join_fd);
    ct_join_fd = -1;
    close(ct_fd);
    ct_fd = -1;
}

static const EventLogUnitWriter ct_writer = {
    .base = {
        .initEventLogWriter = ct_init,
        .writeEventLog = ct_write,
        .stopEventLogWriter = ct_stop,
    },
    .writeEventLogUnit = ct_write_unit,
};

static const EventLogUnitWriter *ct_open(const char *spec, char *err,
                                         size_t err_size)
{
    const char *prefix = strchr(spec, ':') + 1;
    if (*prefix == '\0' || strlen(prefix) >= sizeof ct_prefix) {
        snprintf(err, err_size, "cttest: expected cttest:PREFIX");
        return NULL;
    }
    strcpy(ct_prefix, prefix);
    return &ct_writer;
}

__attribute__((constructor)) static void ct_register(void)
{
    if (registerEventLogSink("cttest", ct_open) != 0) {
        fprintf(stderr, "control_writer: cannot register cttest\n");
        exit(3);
    }
}

int ct_start(void) { return startEventLoggingWithUnits(&ct_writer) ? 1 : 0; }
void ct_end(void) { endEventLogging(); }
int ct_joins_written(void) { return atomic_load(&ct_joins); }
int ct_snapshot_units_written(void) { return atomic_load(&ct_snapshot_units); }
int ct_bad_units(void) { return atomic_load(&ct_bad); }

/* A request from an OS thread the RTS does not know, as the library's
 * writer thread makes it. */
static void *request_thread(void *arg)
{
    requestEventLogSnapshot((EventLogSnapshotKind)(long)arg);
    return NULL;
}

void ct_request_from_foreign_thread(int kind)
{
    pthread_t t;
    if (pthread_create(&t, NULL, request_thread, (void *)(long)kind) == 0)
        pthread_join(t, NULL);
}
