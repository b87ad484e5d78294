/*
 * latency.c: the small helper programs bench/bench_app.sh needs around
 * the Haskell program it measures (bench/App.hs), in one binary:
 *
 *   latency recv [--retry SECS] [-o SAMPLES] unix:PATH
 *       Connect to a unix: sink, follow the eventlog stream (header,
 *       event-type table, events by their declared sizes) and, for every
 *       user-message event (type 19) whose text is "lat NS", take the
 *       CLOCK_MONOTONIC time at which the read() that completed the event
 *       returned, minus NS (the program's own CLOCK_MONOTONIC reading just
 *       before it posted the event).  Prints one line: count, p50, p90,
 *       p99, max in microseconds, and whether the stream ended with
 *       DATA_END.  -o writes every sample (us) to a file, one per line.
 *   latency stall [--retry SECS] unix:PATH
 *       Connect and never read: a stalled consumer.  Waits until killed.
 *   latency run [-p PIDFILE] -o RESULT -- CMD [ARGS...]
 *       Run CMD, write its pid to PIDFILE once it is started, wait for it
 *       and write "wall_s user_s sys_s maxrss_kb status" to RESULT, with
 *       the child's own rusage (microsecond resolution), so that timings
 *       have no shell in them.  Exits with CMD's status.
 *
 * It is a measuring tool, not a checker: it trusts the stream's structure
 * only as far as it needs to find events (lengths are bounded by the
 * buffer and a malformed stream stops it with a message), and leaves
 * validation to `eventlog-sink recv` and ghc-events.  It does not use the
 * library: it measures it from the outside, as any consumer would.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LAT_EVENT_USER_MSG 19
#define LAT_DATA_END 0xffffu
#define LAT_VARIABLE 0xffffu

static uint64_t lat_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void lat_sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static uint16_t lat_be16(const unsigned char *p)
{
    return (uint16_t)((p[0] << 8) | p[1]);
}

static uint32_t lat_be32(const unsigned char *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
           ((uint32_t)p[2] << 8) | p[3];
}

/* Connect to unix:PATH, retrying every 100 ms for up to retry_ms while the
 * socket is absent or nobody listens yet.  Returns the fd or -1. */
static int lat_connect(const char *spec, long retry_ms)
{
    if (strncmp(spec, "unix:", 5) != 0) {
        fprintf(stderr, "latency: '%s': only unix:PATH is supported\n", spec);
        return -1;
    }
    const char *path = spec + 5;
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof sa.sun_path) {
        fprintf(stderr, "latency: '%s': path too long\n", path);
        return -1;
    }
    strcpy(sa.sun_path, path);
    uint64_t deadline = lat_now_ns() + (uint64_t)retry_ms * 1000000u;
    for (;;) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            perror("latency: socket");
            return -1;
        }
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
            return fd;
        int e = errno;
        close(fd);
        if ((e != ENOENT && e != ECONNREFUSED && e != EINTR) ||
            lat_now_ns() >= deadline) {
            fprintf(stderr, "latency: connect %s: %s\n", path, strerror(e));
            return -1;
        }
        lat_sleep_ms(100);
    }
}

/* ------------------------------------------------------------------------
 * recv: a minimal stream follower
 * ------------------------------------------------------------------------ */

struct lat_stream {
    int32_t sizes[65536];     /* payload size per type; -1 variable, -2 unknown */
    bool in_data;             /* past "datb" */
    bool ended;               /* saw DATA_END */
    uint64_t events;
    uint64_t *samples;        /* latencies in ns */
    size_t nsamples, cap;
};

static int lat_push(struct lat_stream *s, uint64_t v)
{
    if (s->nsamples == s->cap) {
        size_t ncap = s->cap ? s->cap * 2 : 4096;
        uint64_t *n = realloc(s->samples, ncap * sizeof *n);
        if (n == NULL)
            return -1;
        s->samples = n;
        s->cap = ncap;
    }
    s->samples[s->nsamples++] = v;
    return 0;
}

/* Parse the whole header in buf[0, len).  Returns bytes consumed, 0 when
 * more bytes are needed, -1 when it is malformed. */
static long lat_parse_header(struct lat_stream *s, const unsigned char *buf,
                             size_t len)
{
    size_t off = 0;
#define NEED(n) do { if (len - off < (size_t)(n)) return 0; } while (0)
    NEED(8);
    if (memcmp(buf, "hdrbhetb", 8) != 0)
        return -1;
    off = 8;
    for (;;) {
        NEED(4);
        if (memcmp(buf + off, "hete", 4) == 0) {
            off += 4;
            break;
        }
        if (memcmp(buf + off, "etb\0", 4) != 0)
            return -1;
        NEED(4 + 2 + 2 + 4);
        uint16_t type = lat_be16(buf + off + 4);
        uint16_t size = lat_be16(buf + off + 6);
        uint32_t dlen = lat_be32(buf + off + 8);
        off += 12;
        NEED((uint64_t)dlen + 4);
        off += dlen;
        uint32_t xlen = lat_be32(buf + off);
        off += 4;
        NEED((uint64_t)xlen + 4);
        off += xlen;
        if (memcmp(buf + off, "ete\0", 4) != 0)
            return -1;
        off += 4;
        s->sizes[type] = size == LAT_VARIABLE ? -1 : (int32_t)size;
    }
    NEED(8);
    if (memcmp(buf + off, "hdredatb", 8) != 0)
        return -1;
    return (long)(off + 8);
#undef NEED
}

/* Parse complete events in buf[0, len), all received at time now.
 * Returns bytes consumed or -1 when malformed. */
static long lat_parse_events(struct lat_stream *s, const unsigned char *buf,
                             size_t len, uint64_t now)
{
    size_t off = 0;
    while (len - off >= 2) {
        uint16_t type = lat_be16(buf + off);
        if (type == LAT_DATA_END) {
            s->ended = true;
            return (long)(off + 2);
        }
        if (s->sizes[type] == -2) {
            fprintf(stderr, "latency: undeclared event type %u\n", type);
            return -1;
        }
        size_t hdr = 2 + 8, body;
        if (s->sizes[type] == -1) {
            if (len - off < hdr + 2)
                break;
            body = 2 + lat_be16(buf + off + hdr);
        } else {
            body = (size_t)s->sizes[type];
        }
        if (len - off < hdr + body)
            break;
        if (type == LAT_EVENT_USER_MSG) {
            const char *text = (const char *)buf + off + hdr + 2;
            size_t tlen = body - 2;
            if (tlen > 4 && tlen < 40 && memcmp(text, "lat ", 4) == 0) {
                char num[40];
                memcpy(num, text + 4, tlen - 4);
                num[tlen - 4] = '\0';
                uint64_t sent = strtoull(num, NULL, 10);
                if (sent != 0 && lat_push(s, now >= sent ? now - sent : 0) != 0)
                    return -1;
            }
        }
        s->events++;
        off += hdr + body;
    }
    return (long)off;
}

static int lat_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double lat_pct_us(const uint64_t *v, size_t n, double p)
{
    if (n == 0)
        return 0.0;
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    return (double)v[i] / 1000.0;
}

static int lat_recv(const char *spec, long retry_ms, const char *out)
{
    struct lat_stream *s = calloc(1, sizeof *s);
    size_t cap = 4u << 20, have = 0;
    unsigned char *buf = malloc(cap);
    if (s == NULL || buf == NULL) {
        fprintf(stderr, "latency: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < 65536; i++)
        s->sizes[i] = -2;
    int fd = lat_connect(spec, retry_ms);
    if (fd < 0)
        return 1;
    int rc = 0;
    while (!s->ended) {
        if (have == cap) {
            fprintf(stderr, "latency: an item larger than %zu bytes\n", cap);
            rc = 1;
            break;
        }
        ssize_t n = read(fd, buf + have, cap - have);
        uint64_t now = lat_now_ns();
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            perror("latency: read");
            rc = 1;
            break;
        }
        if (n == 0)
            break;
        have += (size_t)n;
        size_t used = 0;
        if (!s->in_data) {
            long h = lat_parse_header(s, buf, have);
            if (h < 0) {
                fprintf(stderr, "latency: malformed header\n");
                rc = 1;
                break;
            }
            if (h == 0)
                continue;
            used = (size_t)h;
            s->in_data = true;
        }
        long e = lat_parse_events(s, buf + used, have - used, now);
        if (e < 0) {
            rc = 1;
            break;
        }
        used += (size_t)e;
        memmove(buf, buf + used, have - used);
        have -= used;
    }
    close(fd);
    qsort(s->samples, s->nsamples, sizeof *s->samples, lat_cmp_u64);
    if (out != NULL) {
        FILE *f = fopen(out, "we");
        if (f == NULL) {
            perror(out);
            rc = 1;
        } else {
            for (size_t i = 0; i < s->nsamples; i++)
                fprintf(f, "%.1f\n", (double)s->samples[i] / 1000.0);
            fclose(f);
        }
    }
    size_t n = s->nsamples;
    printf("samples %zu p50_us %.0f p90_us %.0f p99_us %.0f max_us %.0f "
           "events %llu ended %s\n",
           n, lat_pct_us(s->samples, n, 0.50), lat_pct_us(s->samples, n, 0.90),
           lat_pct_us(s->samples, n, 0.99),
           n ? (double)s->samples[n - 1] / 1000.0 : 0.0,
           (unsigned long long)s->events, s->ended ? "yes" : "no");
    bool ended = s->ended;
    free(s->samples);
    free(s);
    free(buf);
    return rc != 0 ? rc : ended ? 0 : 3;
}

/* ------------------------------------------------------------------------
 * stall: connect, never read
 * ------------------------------------------------------------------------ */

static int lat_stall(const char *spec, long retry_ms)
{
    int fd = lat_connect(spec, retry_ms);
    if (fd < 0)
        return 1;
    fprintf(stderr, "latency: stalled consumer connected to %s\n", spec);
    for (;;)
        pause();
}

/* ------------------------------------------------------------------------
 * run: time a command
 * ------------------------------------------------------------------------ */

static int lat_run(const char *pidfile, const char *result, char **argv)
{
    uint64_t t0 = lat_now_ns();
    pid_t pid = fork();
    if (pid < 0) {
        perror("latency: fork");
        return 1;
    }
    if (pid == 0) {
        execvp(argv[0], argv);
        fprintf(stderr, "latency: exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    if (pidfile != NULL) {
        FILE *f = fopen(pidfile, "we");
        if (f != NULL) {
            fprintf(f, "%d\n", (int)pid);
            fclose(f);
        }
    }
    int status;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0) {
        if (errno != EINTR) {
            perror("latency: wait4");
            return 1;
        }
    }
    uint64_t t1 = lat_now_ns();
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    FILE *f = fopen(result, "we");
    if (f == NULL) {
        perror(result);
        return 1;
    }
    fprintf(f, "%.6f %.6f %.6f %ld %d\n", (double)(t1 - t0) / 1e9,
            (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6,
            (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6,
            ru.ru_maxrss, code);
    fclose(f);
    return code;
}

static int lat_usage(void)
{
    fprintf(stderr,
            "usage: latency recv [--retry SECS] [-o SAMPLES] unix:PATH\n"
            "       latency stall [--retry SECS] unix:PATH\n"
            "       latency run [-p PIDFILE] -o RESULT -- CMD [ARGS...]\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return lat_usage();
    const char *cmd = argv[1];
    const char *out = NULL, *pidfile = NULL, *target = NULL;
    long retry_ms = 0;
    int i = 2;
    for (; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        } else if (strcmp(argv[i], "--retry") == 0 && i + 1 < argc) {
            retry_ms = (long)(atof(argv[++i]) * 1000.0);
        } else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
            out = argv[++i];
        } else if (strcmp(argv[i], "-p") == 0 && i + 1 < argc) {
            pidfile = argv[++i];
        } else if (argv[i][0] != '-' && target == NULL) {
            target = argv[i];
        } else {
            return lat_usage();
        }
    }
    if (strcmp(cmd, "recv") == 0 && target != NULL)
        return lat_recv(target, retry_ms, out);
    if (strcmp(cmd, "stall") == 0 && target != NULL)
        return lat_stall(target, retry_ms);
    if (strcmp(cmd, "run") == 0 && out != NULL && i < argc && target == NULL)
        return lat_run(pidfile, out, argv + i);
    return lat_usage();
}
