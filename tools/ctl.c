/*
 * ctl.c: `eventlog-sink ctl`, a client of the control channel
 * (docs/CONTROL.md).  It connects to a socket sink that has control=1,
 * opens a control-only session (a hello with a nonce it chose; it skips
 * the stream bytes sent before the answers begin), sends each command,
 * prints each answer, and says in its exit status whether all succeeded.
 *
 * It speaks the protocol from its description, on the public headers
 * only: the library's decoder is not used here, so the tests exercise two
 * implementations against each other.  Not its job: reading the eventlog
 * (use recv), interpreting what a command did.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <netdb.h>

#include "eventlog-sink.h"
#include "tool.h"
#include "util.h"

enum {
    CTL_EXIT_OK = 0,
    CTL_EXIT_FAILED = 1,        /* a command failed, or no answer */
    CTL_EXIT_USAGE = TOOL_EXIT_USAGE
};

#define CTL_MAX_COMMANDS 64
#define CTL_MAX_TEXT 1024
#define CTL_NONCE 16
#define CTL_ANSWER_HEADER 16

static void ctl_usage(FILE *out)
{
    fprintf(out,
"Usage: " TOOL_NAME " ctl [--json] [--secret-file FILE] [--timeout SECS]\n"
"           SPEC COMMAND [ARGS] [, COMMAND [ARGS]]...\n"
"\n"
"Send commands to a running program whose socket sink has control=1\n"
"(e.g. +RTS --eventlog-sink='unix:/tmp/app.sock?control=1') and print\n"
"each answer on its own line, \"COMMAND: RESULT\".  A lone \",\" separates\n"
"commands; they run in order, one after the other.\n"
"\n"
"SPEC:\n"
"  unix:PATH           the program's UNIX socket; only the program's user\n"
"                      or root may control it\n"
"  tcp:[HOST:]PORT     the program's TCP socket; needs --secret-file with\n"
"                      the secret of the sink's control-secret= file\n"
"\n"
"Commands (\"help\" lists those this program has):\n"
"  help                the commands the program accepts\n"
"  status              the stream's state in one line\n"
"  stats               the writer's counters\n"
"  stop                end the stream (consumers receive its end)\n"
"  restart             end the stream and start a new one on the same sink\n"
"  ring-dump           write the ring: sink's window to a new file (the\n"
"                      program's sink must be a ring: sink; else ELS_EINVAL)\n"
"  user NS ID [ARGS]   command ID of namespace NS that the program\n"
"                      registered (or its name, if it gave one)\n"
"  Programs built with the runtime-control and profiling parts of the\n"
"  library also accept those commands: see docs/CONTROL.md.\n"
"\n"
"Options:\n"
"  -j, --json          print one JSON object per answer instead, failures\n"
"                      too, all on standard output:\n"
"                      {\"command\":...,\"ok\":true|false,\"status\":CODE,\n"
"                       \"error\":NAME|null,\"result\":TEXT}\n"
"  -s, --secret-file FILE  the shared secret (TCP): the file's bytes, one\n"
"                      trailing newline dropped (as the program reads its\n"
"                      control-secret= file)\n"
"  -t, --timeout SECS  give up waiting for an answer after SECS seconds\n"
"                      (default 10)\n"
"  -h, --help          show this help\n"
"\n"
"Exit status:\n"
"  0  every command succeeded\n"
"  1  a command failed (its error is printed: NAME: text), the program\n"
"     refused the session, or it could not be reached or did not answer\n"
"  2  usage error\n");
}

#define ctl_usage_error(...) tool_usage_error("ctl", __VA_ARGS__)

struct ctl_conn {
    int fd;
    uint64_t deadline_ms;
    uint8_t buf[65536];
    size_t len;
};

static uint64_t ctl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Wait for fd to be ready for events until the deadline: 0, -ETIMEDOUT. */
static int ctl_wait(struct ctl_conn *c, short events)
{
    for (;;) {
        uint64_t now = ctl_now_ms();
        if (now >= c->deadline_ms)
            return -ETIMEDOUT;
        struct pollfd p = { .fd = c->fd, .events = events };
        int r = poll(&p, 1, (int)(c->deadline_ms - now));
        if (r > 0)
            return 0;
        if (r < 0 && errno != EINTR)
            return -errno;
    }
}

static int ctl_connect(const char *spec, struct ctl_conn *c, char *err,
                       size_t err_len)
{
    struct addrinfo *ai = NULL;
    char why[256] = "";
    int r = els_endpoint_resolve(spec, 0, &ai, why, sizeof why);
    if (r < 0) {
        snprintf(err, err_len, "%s", why);
        return r;
    }
    r = -ECONNREFUSED;
    for (struct addrinfo *a = ai; a != NULL; a = a->ai_next) {
        int fd = util_socket_nb(a->ai_family, SOCK_STREAM);
        if (fd < 0) {
            r = fd;
            continue;
        }
        c->fd = fd;
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0 &&
            errno != EINPROGRESS) {
            r = -errno;
            util_close(fd);
            continue;
        }
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        r = ctl_wait(c, POLLOUT);
        if (r == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 &&
            soerr != 0)
            r = -soerr;
        if (r == 0)
            break;
        util_close(fd);
    }
    els_endpoint_free(ai);
    if (r != 0)
        snprintf(err, err_len, "%s: %s", spec, strerror(-r));
    return r;
}

static int ctl_send(struct ctl_conn *c, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                return -errno;
            int r = ctl_wait(c, POLLOUT);
            if (r != 0)
                return r;
            continue;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* A frame: "ELSC" 1 kind length[2] payload. */
static int ctl_send_frame(struct ctl_conn *c, unsigned kind,
                          const uint8_t *payload, size_t len)
{
    uint8_t f[8 + 4 + CTL_MAX_TEXT + 300];
    if (len > sizeof f - 8)
        return -EMSGSIZE;
    memcpy(f, "ELSC", 4);
    f[4] = 1;
    f[5] = (uint8_t)kind;
    f[6] = (uint8_t)(len >> 8);
    f[7] = (uint8_t)len;
    memcpy(f + 8, payload, len);
    return ctl_send(c, f, 8 + len);
}

/* Read more into c->buf; 0, -ECONNRESET at end of stream, -ETIMEDOUT. */
static int ctl_fill(struct ctl_conn *c)
{
    if (c->len == sizeof c->buf)
        return -ENOBUFS;
    for (;;) {
        ssize_t n = recv(c->fd, c->buf + c->len, sizeof c->buf - c->len, 0);
        if (n > 0) {
            c->len += (size_t)n;
            return 0;
        }
        if (n == 0)
            return -ECONNRESET;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return -errno;
        int r = ctl_wait(c, POLLIN);
        if (r != 0)
            return r;
    }
}

/* Skip the stream bytes that came before the answers: everything up to
 * and including the nonce. */
static int ctl_skip_to_nonce(struct ctl_conn *c, const uint8_t *nonce)
{
    for (;;) {
        if (c->len >= CTL_NONCE) {
            uint8_t *hit = memmem(c->buf, c->len, nonce, CTL_NONCE);
            if (hit != NULL) {
                size_t after = (size_t)(hit - c->buf) + CTL_NONCE;
                memmove(c->buf, c->buf + after, c->len - after);
                c->len -= after;
                return 0;
            }
            /* Keep the tail that may hold the start of the nonce. */
            memmove(c->buf, c->buf + c->len - (CTL_NONCE - 1), CTL_NONCE - 1);
            c->len = CTL_NONCE - 1;
        }
        int r = ctl_fill(c);
        if (r != 0)
            return r;
    }
}

struct ctl_answer {
    unsigned kind;
    uint32_t id;
    int32_t status;
    char text[CTL_MAX_TEXT + 1];
};

static uint32_t ctl_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
           (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static int ctl_read_answer(struct ctl_conn *c, struct ctl_answer *a)
{
    for (;;) {
        if (c->len >= CTL_ANSWER_HEADER) {
            if (memcmp(c->buf, "ELSR", 4) != 0 || c->buf[4] != 1)
                return -EPROTO;
            size_t tlen = (size_t)c->buf[14] << 8 | c->buf[15];
            if (tlen > CTL_MAX_TEXT)
                return -EPROTO;
            if (c->len >= CTL_ANSWER_HEADER + tlen) {
                a->kind = c->buf[5];
                a->id = ctl_be32(c->buf + 6);
                a->status = (int32_t)ctl_be32(c->buf + 10);
                memcpy(a->text, c->buf + CTL_ANSWER_HEADER, tlen);
                a->text[tlen] = '\0';
                size_t used = CTL_ANSWER_HEADER + tlen;
                memmove(c->buf, c->buf + used, c->len - used);
                c->len -= used;
                return 0;
            }
        }
        int r = ctl_fill(c);
        if (r != 0)
            return r;
    }
}

static void ctl_json_string(const char *s)
{
    putchar('"');
    for (; *s != '\0'; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20 || ch == 0x7f)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

/* Print one answer; returns whether it was a success. */
static bool ctl_print(bool json, const char *command, const struct ctl_answer *a)
{
    const char *name = a->status != 0 ? els_err_name(a->status) : NULL;
    /* The program's error text is "NAME: detail". */
    const char *detail = a->text;
    if (name != NULL) {
        size_t n = strlen(name);
        if (strncmp(detail, name, n) == 0 && detail[n] == ':' && detail[n + 1] == ' ')
            detail += n + 2;
    }
    if (json) {
        printf("{\"command\":");
        ctl_json_string(command);
        printf(",\"ok\":%s,\"status\":%d,\"error\":", a->status == 0 ? "true" : "false",
               (int)a->status);
        if (name != NULL)
            ctl_json_string(name);
        else
            printf("null");
        printf(",\"result\":");
        ctl_json_string(detail);
        printf("}\n");
    } else if (a->status == 0) {
        printf("%s: %s\n", command, a->text[0] ? a->text : "ok");
    } else {
        fprintf(stderr, TOOL_NAME " ctl: %s: %s: %s\n", command, name, detail);
    }
    fflush(stdout);
    return a->status == 0;
}

static int ctl_read_secret(const char *path, uint8_t *secret, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    uint8_t buf[300];
    ssize_t n = read(fd, buf, sizeof buf);
    util_close(fd);
    if (n < 0)
        return -errno;
    if (n > 0 && buf[n - 1] == '\n')
        n--;
    if (n < 1 || n > 255)
        return -EINVAL;
    memcpy(secret, buf, (size_t)n);
    *len = (size_t)n;
    return 0;
}

int ctl_main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "json", no_argument, NULL, 'j' },
        { "secret-file", required_argument, NULL, 's' },
        { "timeout", required_argument, NULL, 't' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    bool json = false;
    const char *secret_file = NULL;
    uint64_t timeout_ms = 10000;
    int opt;
    /* '+': options end at SPEC, so that "set-classes -s" is a command. */
    while ((opt = getopt_long(argc, argv, "+js:t:h", opts, NULL)) != -1) {
        switch (opt) {
        case 'j':
            json = true;
            break;
        case 's':
            secret_file = optarg;
            break;
        case 't':
            if (!tool_parse_secs(optarg, &timeout_ms) || timeout_ms == 0)
                return ctl_usage_error("--timeout takes seconds > 0, not '%s'",
                                       optarg);
            break;
        case 'h':
            return tool_help(ctl_usage);
        default:
            return ctl_usage_error("unknown option");
        }
    }
    if (argc - optind < 2)
        return ctl_usage_error("expected SPEC and at least one COMMAND");
    const char *spec = argv[optind++];

    /* Commands: words up to a lone ",". */
    char *commands[CTL_MAX_COMMANDS];
    size_t n_commands = 0;
    while (optind < argc) {
        if (n_commands == CTL_MAX_COMMANDS)
            return ctl_usage_error("at most %d commands", CTL_MAX_COMMANDS);
        char text[CTL_MAX_TEXT + 1] = "";
        size_t tl = 0;
        for (; optind < argc && strcmp(argv[optind], ",") != 0; optind++) {
            int n = snprintf(text + tl, sizeof text - tl, "%s%s", tl ? " " : "",
                             argv[optind]);
            if (n < 0 || (size_t)n >= sizeof text - tl)
                return ctl_usage_error("a command is longer than %d bytes",
                                       CTL_MAX_TEXT);
            tl += (size_t)n;
        }
        optind++;   /* the "," */
        if (tl == 0)
            return ctl_usage_error("empty command (two \",\" in a row?)");
        commands[n_commands] = strdup(text);
        if (commands[n_commands] == NULL)
            return CTL_EXIT_FAILED;
        n_commands++;
    }

    uint8_t hello[1 + CTL_NONCE + 255];
    size_t hello_len = 1 + CTL_NONCE;
    hello[0] = 1;   /* control-only session */
    if (getrandom(hello + 1, CTL_NONCE, 0) != CTL_NONCE) {
        fprintf(stderr, TOOL_NAME " ctl: cannot get random bytes: %s\n",
                strerror(errno));
        return CTL_EXIT_FAILED;
    }
    if (secret_file != NULL) {
        size_t sl = 0;
        int r = ctl_read_secret(secret_file, hello + hello_len, &sl);
        if (r != 0) {
            fprintf(stderr, TOOL_NAME " ctl: %s: %s\n", secret_file,
                    r == -EINVAL ? "expected a secret of 1 to 255 bytes"
                                 : strerror(-r));
            return CTL_EXIT_FAILED;
        }
        hello_len += sl;
    }

    static struct ctl_conn conn;
    conn.deadline_ms = ctl_now_ms() + timeout_ms;
    char err[512];
    int r = ctl_connect(spec, &conn, err, sizeof err);
    if (r != 0) {
        fprintf(stderr, TOOL_NAME " ctl: %s\n", err);
        return r == ELS_EINVAL || r == ELS_ENAMETOOLONG ? CTL_EXIT_USAGE
                                                        : CTL_EXIT_FAILED;
    }
    r = ctl_send_frame(&conn, 1, hello, hello_len);
    if (r == 0)
        r = ctl_skip_to_nonce(&conn, hello + 1);
    struct ctl_answer a;
    if (r == 0)
        r = ctl_read_answer(&conn, &a);
    if (r != 0) {
        fprintf(stderr, TOOL_NAME " ctl: %s: no answer to the hello: %s (is "
                "control=1 in the program's spec?)\n", spec,
                r == -ETIMEDOUT ? "timed out" : r == -ECONNRESET
                ? "connection closed" : strerror(-r));
        util_close(conn.fd);
        return CTL_EXIT_FAILED;
    }
    if (a.status != 0) {
        ctl_print(json, "hello", &a);
        util_close(conn.fd);
        return CTL_EXIT_FAILED;
    }

    int status = CTL_EXIT_OK;
    for (size_t i = 0; i < n_commands; i++) {
        /* One at a time: each answer before the next command. */
        uint8_t payload[4 + CTL_MAX_TEXT];
        size_t tl = strlen(commands[i]);
        uint32_t id = (uint32_t)i + 1;
        payload[0] = (uint8_t)(id >> 24);
        payload[1] = (uint8_t)(id >> 16);
        payload[2] = (uint8_t)(id >> 8);
        payload[3] = (uint8_t)id;
        memcpy(payload + 4, commands[i], tl);
        conn.deadline_ms = ctl_now_ms() + timeout_ms;
        r = ctl_send_frame(&conn, 2, payload, 4 + tl);
        while (r == 0) {
            r = ctl_read_answer(&conn, &a);
            if (r == 0 && a.kind == 0x82 && a.id == id)
                break;
            if (r == 0 && a.kind == 0x82 && a.id == 0 && a.status != 0) {
                ctl_print(json, "(protocol)", &a);  /* framing error */
                status = CTL_EXIT_FAILED;
            }
        }
        if (r != 0) {
            fprintf(stderr, TOOL_NAME " ctl: %s: no answer: %s\n", commands[i],
                    r == -ETIMEDOUT ? "timed out" : r == -ECONNRESET
                    ? "connection closed" : strerror(-r));
            status = CTL_EXIT_FAILED;
            break;
        }
        if (!ctl_print(json, commands[i], &a))
            status = CTL_EXIT_FAILED;
    }
    util_close(conn.fd);
    for (size_t i = 0; i < n_commands; i++)
        free(commands[i]);
    return status;
}
