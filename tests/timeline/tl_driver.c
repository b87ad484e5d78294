/*
 * tl_driver.c: the timeline engine (tools/timeline) from the command
 * line, for the shell tests and the bench: index a file, where it lies
 * or through a live spool, and print one route's JSON.
 *
 *   tl_driver [--live DIR MAX_BYTES] FILE KIND [QUERY_STRING]
 *
 * KIND: info, timeline, events, range (timeline_route()'s).  With
 * --live, FILE's bytes are appended to a spool in DIR bounded by
 * MAX_BYTES, 64 KiB at a time, and the index trimmed as it drops.
 * stderr gets "index_ms=N rss_kib=N".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "timeline/index.h"
#include "timeline/query.h"
#include "timeline/spool.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    const char *live = NULL;
    unsigned long long max = 0;
    int a = 1;
    if (argc > 3 && !strcmp(argv[1], "--live")) {
        live = argv[2];
        max = strtoull(argv[3], NULL, 10);
        a = 4;
    }
    if (argc - a < 2) {
        fprintf(stderr, "usage: tl_driver [--live DIR MAX_BYTES] FILE KIND [QS]\n");
        return 2;
    }
    const char *file = argv[a], *kind = argv[a + 1];
    const char *qs = argc - a > 2 ? argv[a + 2] : "";
    struct tl_index *ix;
    struct tl_spool *sp;
    int rc = tl_index_new(&ix, 0);
    if (rc < 0)
        return 1;
    rc = live ? tl_spool_open_dir(&sp, live, max, max / 8)
              : tl_spool_open_file(&sp, file);
    if (rc < 0) {
        fprintf(stderr, "tl_driver: spool: %s\n", strerror(-rc));
        return 1;
    }
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "tl_driver: %s: %s\n", file, strerror(errno));
        return 1;
    }
    double t = now_ms();
    static char buf[1 << 20];
    size_t piece = live ? 65536 : sizeof buf;
    for (;;) {
        ssize_t n = read(fd, buf, piece);
        if (n < 0) {
            fprintf(stderr, "tl_driver: read: %s\n", strerror(errno));
            return 1;
        }
        if (n == 0)
            break;
        if (live) {
            rc = tl_spool_append(sp, buf, (size_t)n);
            if (rc < 0) {
                fprintf(stderr, "tl_driver: append: %s\n", strerror(-rc));
                return 1;
            }
        }
        rc = tl_index_feed(ix, buf, (size_t)n);
        if (rc < 0) {
            fprintf(stderr, "tl_driver: index: %s\n", tl_index_error(ix));
            return 1;
        }
        if (live)
            tl_index_trim(ix, tl_spool_base(sp));
    }
    close(fd);
    double index_ms = now_ms() - t;
    struct strbuf out = { 0 };
    t = now_ms();
    int status = timeline_route(ix, sp, kind, qs, &out);
    double q_ms = now_ms() - t;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    fwrite(out.p, 1, out.len, stdout);
    putchar('\n');
    fprintf(stderr, "index_ms=%.0f query_ms=%.1f rss_kib=%ld status=%d\n",
            index_ms, q_ms, ru.ru_maxrss, status);
    sb_free(&out);
    tl_spool_close(sp);
    tl_index_free(ix);
    return status == 200 ? 0 : 1;
}
