/*
 * bench_profile.c: what `eventlog-sink dump --hp --prof` costs on a stream
 * of many distinct cost-centre stacks, for one or more builds of the tool
 * (before/after figures in one run).
 *
 * Writes a profiled run's stream of about BYTES (default 1.5 MB): STACKS
 * cost centres defined (each its own label), then CENSUSES heap censuses
 * in which each stack <leaf K, work, main> has a -hc band, and one
 * time-profile tick per stack, along the first census; every stack is distinct and the leaves are
 * all children of one node (the fan-out that made the converters'
 * searches quadratic).  Then runs each TOOL `dump --hp OUT.hp --prof
 * OUT.prof STREAM` REPS times and prints, per tool, the median wall and
 * CPU seconds (user + system, from wait4()), the largest resident size
 * and the sizes of the files written.  Not a test: it fails only when a
 * tool fails.
 *
 * Usage: bench_profile [-b BYTES] [-c CENSUSES] [-r REPS] TOOL...
 *   bench/bench_profile -r 3 /path/to/old/eventlog-sink _build/tools/eventlog-sink
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"

static FILE *out;

static void put(uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fputc((int)(uint8_t)(v >> (8 * (n - 1 - i))), out);
}

static void type(uint16_t tag, int16_t size, const char *desc)
{
    fputs("etb", out);
    fputc(0, out);
    put(tag, 2);
    put((uint16_t)size, 2);
    put(strlen(desc), 4);
    fputs(desc, out);
    put(0, 4);
    fputs("ete", out);
    fputc(0, out);
}

/* A variable-size event's head. */
static void event(uint16_t tag, uint64_t t, size_t len)
{
    put(tag, 2);
    put(t, 8);
    put(len, 2);
}

static void cost_centre(uint32_t id, const char *label)
{
    static const char module[] = "Bench", src[] = "bench.hs:1:1";
    event(161, 0, 4 + strlen(label) + 1 + sizeof module + sizeof src + 1);
    put(id, 4);
    fwrite(label, 1, strlen(label) + 1, out);
    fwrite(module, 1, sizeof module, out);
    fwrite(src, 1, sizeof src, out);
    put(0, 1);
}

static void stack(uint32_t leaf)
{
    put(3, 1);
    put(leaf, 4);
    put(1, 4);                  /* work */
    put(0, 4);                  /* main */
}

/* The stream, to path; returns its number of stacks. */
static uint32_t write_stream(const char *path, size_t bytes, unsigned censuses)
{
    out = fopen(path, "wb");
    if (out == NULL) {
        perror(path);
        exit(1);
    }
    fputs("hdrbhetb", out);
    type(161, -1, "Cost center definition");
    type(162, 8, "Start of heap profile sample");
    type(163, -1, "Heap profile cost-centre sample");
    type(165, 8, "End of heap profile sample");
    type(167, -1, "Time profile cost-centre stack");
    type(168, 8, "Start of a time profile");
    fputs("hetehdredatb", out);
    put(168, 2), put(0, 8), put(1000000, 8);    /* PROF_BEGIN: 1 ms ticks */
    cost_centre(0, "main");
    cost_centre(1, "work");
    /* Per stack: a definition (about 46 bytes), a band per census (34
     * bytes) and a tick (37 bytes). */
    size_t per = 46 + 34 * censuses + 37;
    uint32_t n = (uint32_t)(bytes / per);
    char label[32];
    for (uint32_t k = 0; k < n; k++) {
        snprintf(label, sizeof label, "leaf%" PRIu32, k);
        cost_centre(2 + k, label);
    }
    for (unsigned c = 0; c < censuses; c++) {
        uint64_t t = 1000000000u * (c + 1);
        put(162, 2), put(t, 8), put(c + 1, 8);
        for (uint32_t k = 0; k < n; k++) {
            event(163, t, 1 + 8 + 13);
            put(0, 1);
            put(64 + k, 8);
            stack(2 + k);
            if (c == 0) {       /* the ticks run along the stream */
                event(167, t + k, 4 + 8 + 13);
                put(0, 4);
                put(k, 8);
                stack(2 + k);
            }
        }
        put(165, 2), put(t, 8), put(c + 1, 8);
    }
    put(0xffff, 2);
    if (fclose(out) != 0) {
        perror(path);
        exit(1);
    }
    return n;
}

struct run {
    double wall, cpu;
    long rss_kb;
};

static int run_tool(const char *tool, const char *dir, const char *stream, struct run *r)
{
    char hp[4096], prof[4096];
    snprintf(hp, sizeof hp, "%s/out.hp", dir);
    snprintf(prof, sizeof prof, "%s/out.prof", dir);
    double t0 = bench_now();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        execl(tool, tool, "dump", "--hp", hp, "--prof", prof, stream, (char *)NULL);
        perror(tool);
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid)
        return -1;
    r->wall = bench_now() - t0;
    r->cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
             (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    r->rss_kb = ru.ru_maxrss;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static long long file_size(const char *dir, const char *name)
{
    char p[4096];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &st) == 0 ? (long long)st.st_size : -1;
}

int main(int argc, char **argv)
{
    size_t bytes = 1500000;
    unsigned censuses = 2;
    int reps = 3, opt;
    while ((opt = getopt(argc, argv, "b:c:r:")) != -1) {
        if (opt == 'b')
            bytes = strtoull(optarg, NULL, 10);
        else if (opt == 'c')
            censuses = (unsigned)atoi(optarg);
        else if (opt == 'r')
            reps = bench_reps(optarg);
        else
            return 2;
    }
    if (optind >= argc || censuses < 1 || censuses > 100) {
        fprintf(stderr, "usage: bench_profile [-b BYTES] [-c CENSUSES] [-r REPS] TOOL...\n");
        return 2;
    }
    char dir[] = "/tmp/els-bench-profile.XXXXXX";
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    char stream[4096];
    snprintf(stream, sizeof stream, "%s/stacks.eventlog", dir);
    uint32_t n = write_stream(stream, bytes, censuses);
    printf("stream: %lld bytes, %" PRIu32 " distinct stacks, %u censuses, %" PRIu32
           " ticks; median of %d runs\n\n", file_size(dir, "stacks.eventlog"), n, censuses, n,
           reps);
    printf("| tool | wall s | CPU s | max RSS MiB | .hp bytes | .prof bytes |\n");
    printf("|---|---:|---:|---:|---:|---:|\n");
    int status = 0;
    for (int t = optind; t < argc; t++) {
        double wall[1000], cpu[1000];
        long rss = 0;
        for (int i = 0; i < reps; i++) {
            struct run r;
            if (run_tool(argv[t], dir, stream, &r) != 0) {
                fprintf(stderr, "bench_profile: %s dump failed\n", argv[t]);
                status = 1;
                break;
            }
            wall[i] = r.wall, cpu[i] = r.cpu;
            rss = r.rss_kb > rss ? r.rss_kb : rss;
        }
        qsort(wall, (size_t)reps, sizeof wall[0], bench_cmp_double);
        qsort(cpu, (size_t)reps, sizeof cpu[0], bench_cmp_double);
        printf("| %s | %.3f | %.3f | %.1f | %lld | %lld |\n", argv[t], wall[reps / 2],
               cpu[reps / 2], rss / 1024.0, file_size(dir, "out.hp"), file_size(dir, "out.prof"));
        fflush(stdout);
    }
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        status = 1;
    return status;
}
