/*
 * bench_control_writer.c: the eventlog writer of bench/ControlBench.hs:
 * writes every unit to the file $BENCH_CONTROL_OUT (one file for every
 * stream, so restarts append) and lets the program restart the eventlog.
 * Not its job: measuring (ControlBench.hs does).
 */
#include "Rts.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int bench_fd = -1;

static void bench_init(void)
{
    if (bench_fd >= 0)
        return;
    const char *path = getenv("BENCH_CONTROL_OUT");
    bench_fd = open(path != NULL ? path : "/dev/null",
                    O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (bench_fd < 0) {
        perror("bench_control_writer");
        exit(3);
    }
}

static bool bench_write(void *buf, size_t size)
{
    const char *p = buf;
    while (size > 0) {
        ssize_t n = write(bench_fd, p, size);
        if (n <= 0)
            return false;
        p += n;
        size -= (size_t)n;
    }
    return true;
}

static const EventLogWriter bench_writer = {
    .initEventLogWriter = bench_init,
    .writeEventLog = bench_write,
};

int bench_start_eventlog(void)
{
    return startEventLogging(&bench_writer) ? 1 : 0;
}
