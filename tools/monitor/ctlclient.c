/*
 * ctlclient.c: the control channel's client (see ctlclient.h), written
 * from docs/CONTROL.md's byte layout, version 2.  The proof of the
 * secret comes from the library's els_control_proof(); everything else
 * is this file's own reading of the document.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "eventlog-sink.h"
#include "eventlog-sink/control.h"
#include "ctlclient.h"
#include "util.h"

#define CTLC_ANSWER_HEADER 16
#define CTLC_VERSION 2
#define CTLC_KIND_HELLO 1
#define CTLC_KIND_COMMAND 2
#define CTLC_KIND_PROOF 3
#define CTLC_KIND_CHALLENGE 0x83

static uint64_t ctlc_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Wait for fd to be ready for events until the deadline: 0, -ETIMEDOUT. */
static int ctlc_wait(struct ctlc *c, short events)
{
    for (;;) {
        uint64_t now = ctlc_now_ms();
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

static int ctlc_connect(struct ctlc *c, const char *spec, char *err,
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
        r = ctlc_wait(c, POLLOUT);
        if (r == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 &&
            soerr != 0)
            r = -soerr;
        if (r == 0)
            break;
        util_close(fd);
    }
    els_endpoint_free(ai);
    if (r != 0) {
        c->fd = -1;
        snprintf(err, err_len, "%s: %s", spec, strerror(-r));
    }
    return r;
}

static int ctlc_send(struct ctlc *c, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                return -errno;
            int r = ctlc_wait(c, POLLOUT);
            if (r != 0)
                return r;
            continue;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* A frame: "ELSC" 2 kind length[2] payload. */
static int ctlc_send_frame(struct ctlc *c, unsigned kind,
                           const uint8_t *payload, size_t len)
{
    uint8_t f[8 + 4 + CTLC_TEXT_MAX];
    if (len > sizeof f - 8)
        return -EMSGSIZE;
    memcpy(f, "ELSC", 4);
    f[4] = CTLC_VERSION;
    f[5] = (uint8_t)kind;
    f[6] = (uint8_t)(len >> 8);
    f[7] = (uint8_t)len;
    memcpy(f + 8, payload, len);
    return ctlc_send(c, f, 8 + len);
}

/* Read more into c->buf; 0, -ECONNRESET at end of stream, -ETIMEDOUT. */
static int ctlc_fill(struct ctlc *c)
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
        int r = ctlc_wait(c, POLLIN);
        if (r != 0)
            return r;
    }
}

/* Skip the stream bytes that came before the answers: everything up to
 * and including the nonce. */
static int ctlc_skip_to_nonce(struct ctlc *c, const uint8_t *nonce)
{
    for (;;) {
        if (c->len >= CTLC_NONCE) {
            uint8_t *hit = memmem(c->buf, c->len, nonce, CTLC_NONCE);
            if (hit != NULL) {
                size_t after = (size_t)(hit - c->buf) + CTLC_NONCE;
                memmove(c->buf, c->buf + after, c->len - after);
                c->len -= after;
                return 0;
            }
            /* Keep the tail that may hold the start of the nonce. */
            memmove(c->buf, c->buf + c->len - (CTLC_NONCE - 1), CTLC_NONCE - 1);
            c->len = CTLC_NONCE - 1;
        }
        int r = ctlc_fill(c);
        if (r != 0)
            return r;
    }
}

static uint32_t ctlc_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
           (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static int ctlc_read_answer(struct ctlc *c, struct ctlc_answer *a)
{
    for (;;) {
        if (c->len >= CTLC_ANSWER_HEADER) {
            if (memcmp(c->buf, "ELSR", 4) != 0 || c->buf[4] != CTLC_VERSION)
                return -EPROTO;
            size_t tlen = (size_t)c->buf[14] << 8 | c->buf[15];
            if (tlen > CTLC_TEXT_MAX)
                return -EPROTO;
            if (c->len >= CTLC_ANSWER_HEADER + tlen) {
                a->kind = c->buf[5];
                a->id = ctlc_be32(c->buf + 6);
                a->status = (int32_t)ctlc_be32(c->buf + 10);
                memcpy(a->text, c->buf + CTLC_ANSWER_HEADER, tlen);
                a->text[tlen] = '\0';
                size_t used = CTLC_ANSWER_HEADER + tlen;
                memmove(c->buf, c->buf + used, c->len - used);
                c->len -= used;
                return 0;
            }
        }
        int r = ctlc_fill(c);
        if (r != 0)
            return r;
    }
}

int ctlc_read_secret(const char *path, uint8_t *secret, size_t *len,
                     char *err, size_t err_len)
{
    /* The program refuses a secret file others can read; so do we, so
     * that a mistake shows on the side that made it. */
    ssize_t n = util_read_private(path, (char *)secret, CTLC_SECRET_MAX,
                                  err, err_len);
    if (n == -EFBIG)
        snprintf(err, err_len, "expected a secret of 1 to %u bytes",
                 (unsigned)CTLC_SECRET_MAX);
    if (n < 0)
        return (int)n;
    *len = (size_t)n;
    return 0;
}

void ctlc_close(struct ctlc *c)
{
    if (c->fd >= 0)
        util_close(c->fd);
    c->fd = -1;
    c->len = 0;
}

/* "challenge HEX": the 32 bytes, or false if the text is not that. */
static bool ctlc_parse_challenge(const char *text,
                                 uint8_t out[ELS_CONTROL_CHALLENGE_BYTES])
{
    static const char prefix[] = "challenge ";
    if (strncmp(text, prefix, sizeof prefix - 1) != 0 ||
        strlen(text) != sizeof prefix - 1 + 2 * ELS_CONTROL_CHALLENGE_BYTES)
        return false;
    text += sizeof prefix - 1;
    for (size_t i = 0; i < ELS_CONTROL_CHALLENGE_BYTES; i++) {
        unsigned v = 0;
        for (int k = 0; k < 2; k++) {
            char ch = text[2 * i + (size_t)k];
            unsigned d = ch >= '0' && ch <= '9' ? (unsigned)(ch - '0')
                       : ch >= 'a' && ch <= 'f' ? (unsigned)(ch - 'a' + 10)
                       : 16;
            if (d == 16)
                return false;
            v = v << 4 | d;
        }
        out[i] = (uint8_t)v;
    }
    return true;
}

/* The hello was answered with a challenge: prove the secret (never send
 * it), and read the answer to the proof into *hello.  Without a secret,
 * *hello says so (the program would refuse every command). */
static int ctlc_prove(struct ctlc *c, const uint8_t *hello_payload,
                      const uint8_t *secret, size_t secret_len,
                      struct ctlc_answer *hello)
{
    uint8_t challenge[ELS_CONTROL_CHALLENGE_BYTES];
    uint8_t proof[ELS_CONTROL_PROOF_BYTES];
    if (!ctlc_parse_challenge(hello->text, challenge))
        return -EPROTO;
    if (secret_len == 0) {
        hello->kind = 0x81;
        hello->status = -EPERM;
        snprintf(hello->text, sizeof hello->text, "EPERM: the program asks "
                 "for proof of its shared secret (give --secret-file)");
        return 0;
    }
    int r = els_control_proof(secret, secret_len, challenge, hello_payload + 1,
                              hello_payload[0], proof);
    if (r == 0)
        r = ctlc_send_frame(c, CTLC_KIND_PROOF, proof, sizeof proof);
    if (r == 0)
        r = ctlc_read_answer(c, hello);
    if (r == 0 && hello->kind != 0x81)
        r = -EPROTO;
    return r;
}

int ctlc_open(struct ctlc *c, const char *spec, const uint8_t *secret,
              size_t secret_len, uint64_t timeout_ms, struct ctlc_answer *hello,
              char *err, size_t err_len)
{
    c->fd = -1;
    c->len = 0;
    c->last_id = 0;
    c->protocol_errors = 0;
    uint8_t h[1 + CTLC_NONCE];
    if (secret_len > CTLC_SECRET_MAX) {
        snprintf(err, err_len, "the secret is longer than %d bytes",
                 CTLC_SECRET_MAX);
        return -EINVAL;
    }
    h[0] = 1;   /* control-only session */
    if (getrandom(h + 1, CTLC_NONCE, 0) != CTLC_NONCE) {
        int e = errno;
        snprintf(err, err_len, "cannot get random bytes: %s", strerror(e));
        return -e;
    }
    c->deadline_ms = ctlc_now_ms() + timeout_ms;
    int r = ctlc_connect(c, spec, err, err_len);
    if (r != 0)
        return r;
    r = ctlc_send_frame(c, CTLC_KIND_HELLO, h, sizeof h);
    if (r == 0)
        r = ctlc_skip_to_nonce(c, h + 1);
    if (r == 0)
        r = ctlc_read_answer(c, hello);
    if (r == 0 && hello->kind == CTLC_KIND_CHALLENGE && hello->status == 0)
        r = ctlc_prove(c, h, secret, secret_len, hello);
    if (r != 0) {
        snprintf(err, err_len, "%s: no answer to the hello: %s (is control=1 "
                 "in the program's spec?)", spec, ctlc_strerror(r));
        ctlc_close(c);
    }
    return r;
}

int ctlc_call(struct ctlc *c, const char *command, uint64_t timeout_ms,
              struct ctlc_answer *a)
{
    uint8_t payload[4 + CTLC_TEXT_MAX];
    size_t tl = strlen(command);
    if (tl == 0 || tl > CTLC_TEXT_MAX)
        return -EMSGSIZE;
    uint32_t id = ++c->last_id;
    payload[0] = (uint8_t)(id >> 24);
    payload[1] = (uint8_t)(id >> 16);
    payload[2] = (uint8_t)(id >> 8);
    payload[3] = (uint8_t)id;
    memcpy(payload + 4, command, tl);
    c->deadline_ms = ctlc_now_ms() + timeout_ms;
    int r = ctlc_send_frame(c, CTLC_KIND_COMMAND, payload, 4 + tl);
    while (r == 0) {
        r = ctlc_read_answer(c, a);
        if (r == 0 && a->kind == 0x82 && a->id == id)
            return 0;
        if (r == 0 && a->kind == 0x82 && a->id == 0 && a->status != 0) {
            c->protocol_errors++;   /* a framing error of ours */
            c->protocol_error = *a;
        }
    }
    return r;
}

bool ctlc_closed(struct ctlc *c)
{
    if (c->fd < 0)
        return true;
    struct pollfd p = { .fd = c->fd, .events = POLLIN };
    if (poll(&p, 1, 0) <= 0)
        return false;
    /* An idle session is sent nothing: readable means closed, or bytes
     * no command asked for. */
    char b;
    ssize_t n = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
                      errno != EINTR);
}

const char *ctlc_detail(const struct ctlc_answer *a)
{
    const char *name = a->status != 0 ? els_err_name(a->status) : NULL;
    const char *detail = a->text;
    if (name != NULL) {
        size_t n = strlen(name);
        if (strncmp(detail, name, n) == 0 && detail[n] == ':' && detail[n + 1] == ' ')
            detail += n + 2;
    }
    return detail;
}

const char *ctlc_strerror(int code)
{
    return code == -ETIMEDOUT ? "timed out"
         : code == -ECONNRESET ? "connection closed"
         : code == -EPROTO ? "not a control answer"
         : strerror(-code);
}
