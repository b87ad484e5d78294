/*
 * bench_monitor.c: how fast the live monitor's model (tools/monitor/
 * model*.c, on the public parser) digests an eventlog, in MB/s, for
 * bench/bench_monitor.sh.  Reads FILE into memory and feeds it to a fresh
 * model REPS times in 64 KiB pieces (as top and serve read), rendering
 * the JSON once per pass as the views do each second; prints the median
 * pass's MB/s.  Not a test: it checks only that the stream parses.
 *
 * Usage: bench_monitor FILE [REPS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "monitor/model.h"
#include "bench_util.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_monitor FILE [REPS]\n");
        return 2;
    }
    int reps = bench_reps(argc > 2 ? argv[2] : NULL);
    size_t len;
    unsigned char *data = bench_read_file(argv[1], &len);
    if (data == NULL)
        return 1;
    double *rate = calloc((size_t)reps, sizeof *rate);
    struct strbuf sb = { 0 };
    for (int r = 0; r < reps; r++) {
        struct mon_model *m;
        if (mon_model_new(&m) < 0)
            return 1;
        double t0 = bench_now();
        for (size_t off = 0; off < len; off += 65536) {
            size_t n = len - off < 65536 ? len - off : 65536;
            if (mon_model_feed(m, data + off, (size_t)n) < 0) {
                fprintf(stderr, "malformed: %s\n", mon_model_error(m));
                return 1;
            }
        }
        mon_model_tick(m, 1000000000ull, false);
        sb_clear(&sb);
        mon_model_json(m, &sb);
        double t = bench_now() - t0;
        rate[r] = (double)len / 1e6 / t;
        mon_model_free(m);
    }
    qsort(rate, (size_t)reps, sizeof *rate, bench_cmp_double);
    printf("%.1f\n", rate[reps / 2]);
    sb_free(&sb);
    free(rate);
    free(data);
    return 0;
}
