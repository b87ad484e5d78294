/*
 * bench_util.h: what the C benches that read an eventlog share: a clock,
 * a repetition count, a median's comparison, and reading a whole file
 * into memory.
 */
#ifndef ELS_BENCH_UTIL_H
#define ELS_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Repetitions from an optional argument: 5 unless it says 1 to 1000. */
static inline int bench_reps(const char *arg)
{
    int reps = arg != NULL ? atoi(arg) : 5;
    return reps >= 1 && reps <= 1000 ? reps : 5;
}

/* For qsort() of doubles, to take a median. */
static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The whole of path, malloc'ed, its length in *len; NULL (and a message
 * on stderr) if it cannot be read or is empty. */
static inline unsigned char *bench_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        return NULL;
    }
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    unsigned char *data = n > 0 ? malloc((size_t)n) : NULL;
    if (data == NULL || fseek(f, 0, SEEK_SET) != 0 ||
        fread(data, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "cannot read %s\n", path);
        free(data);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return data;
}

#endif
