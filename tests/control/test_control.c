/*
 * test_control.c: the control channel through real writers and real
 * sockets (lib/control/ through its ops table in lib/writer): sessions,
 * answers (frames for control-only clients, in-band notes at the point a
 * command took effect for stream consumers), user commands, the
 * authorisation rules (UNIX peer uid; TCP challenge and proof, for both
 * kinds of client; version-1 clients refused at once), control off by default, and the bounds that keep a
 * hostile client from blocking the writer.  The GHC commands are tested
 * end to end by tests/control/test_control.sh.
 */
#include <netinet/in.h>

#include "check.h"
#include "writer/writer_test.h"
#include "control/codec.h"
#include "control/frames.h"
#include "control/sha256.h"
#include "eventlog-sink/control.h"
#include "testutil.h"

static void send_all(int fd, const void *p, size_t n)
{
    CHECK_INT(send(fd, p, n, MSG_NOSIGNAL), ==, (ssize_t)n);
}

static void send_command(int fd, uint32_t id, const char *text)
{
    uint8_t f[1200];
    send_all(fd, f, command(f, id, text));
}

static const uint8_t nonce[16] = "0123456789ABCDEF";

static void send_hello_flags(int fd, unsigned flags)
{
    uint8_t p[17], f[64];
    p[0] = (uint8_t)flags;
    memcpy(p + 1, nonce, 16);
    send_all(fd, f, frame(f, ELSI_CTL_KIND_HELLO, p, 17));
}

static void send_hello(int fd)
{
    send_hello_flags(fd, ELSI_CTL_HELLO_CONTROL_ONLY);
}

struct answer {
    unsigned kind;
    uint32_t id;
    int status;
    char text[1100];
};

/* Read until the nonce (skipping stream bytes), once per connection. */
static void skip_to_nonce(int fd)
{
    uint8_t window[16] = { 0 };
    for (;;) {
        uint8_t b;
        CHECK_INT(tu_read_exact(fd, &b, 1, 10000), ==, 0);
        memmove(window, window + 1, 15);
        window[15] = b;
        if (memcmp(window, nonce, 16) == 0)
            return;
    }
}

/* An answer frame of protocol version (1 or 2). */
static void read_answer_v(int fd, unsigned version, struct answer *a)
{
    uint8_t h[16];
    CHECK_INT(tu_read_exact(fd, h, 16, 10000), ==, 0);
    CHECK(memcmp(h, "ELSR", 4) == 0);
    CHECK_INT(h[4], ==, version);
    a->kind = h[5];
    a->id = (uint32_t)h[6] << 24 | (uint32_t)h[7] << 16 | (uint32_t)h[8] << 8 | h[9];
    a->status = (int)((uint32_t)h[10] << 24 | (uint32_t)h[11] << 16 |
                      (uint32_t)h[12] << 8 | h[13]);
    size_t n = (size_t)h[14] << 8 | h[15];
    CHECK(n < sizeof a->text);
    CHECK_INT(tu_read_exact(fd, a->text, n, 10000), ==, 0);
    a->text[n] = '\0';
}

static void read_answer(int fd, struct answer *a)
{
    read_answer_v(fd, 2, a);
}

/* A control-only session on a fresh connection to path. */
static int open_session(const char *path, struct answer *hello)
{
    int fd = unix_connect(path);
    send_hello(fd);
    skip_to_nonce(fd);
    read_answer(fd, hello);
    CHECK_INT(hello->kind, ==, ELSI_CTL_KIND_HELLO_ANSWER);
    return fd;
}

/* Read the stream on fd (this thread) into got until it holds needle. */
static void read_until(int fd, struct evgen_buf *got, const char *needle)
{
    uint8_t buf[65536];
    while (!contains(got, needle)) {
        ssize_t n = 0;
        CHECK_INT(tu_wait_fd(fd, POLLIN, 10000), ==, 0);
        n = read(fd, buf, sizeof buf);
        CHECK_MSG(n > 0, "the stream ended without \"%s\"", needle);
        evgen_put(got, buf, (size_t)n);
    }
}

/* Read the rest of the stream on fd into got, until end of file. */
static void read_to_end(int fd, struct evgen_buf *got)
{
    uint8_t buf[65536];
    for (;;) {
        CHECK_INT(tu_wait_fd(fd, POLLIN, 10000), ==, 0);
        ssize_t n = read(fd, buf, sizeof buf);
        CHECK(n >= 0);
        if (n == 0)
            return;
        evgen_put(got, buf, (size_t)n);
    }
}

static int user_calls;

static int user_echo(void *user, const char *args, char *out, size_t len)
{
    CHECK(user == &user_calls);
    user_calls++;
    if (strcmp(args, "fail") == 0) {
        snprintf(out, len, "asked to fail");
        return ELS_EBUSY;
    }
    snprintf(out, len, "echo [%s]", args);
    return 0;
}

static void test_status_and_user_commands(void)
{
    CHECK_INT(els_control_register("test-app", 1, "echo", user_echo,
                                   &user_calls), ==, 0);
    const char *path;
    struct els_writer *w = open_at("unix", "c.sock", "control=1", &path);
    struct answer a;
    int fd = open_session(path, &a);
    CHECK_INT(a.status, ==, 0);
    CHECK_CONTAINS(a.text, "protocol 2");

    send_command(fd, 11, "status");
    read_answer(fd, &a);
    CHECK_INT(a.kind, ==, ELSI_CTL_KIND_COMMAND_ANSWER);
    CHECK_INT(a.id, ==, 11);
    CHECK_INT(a.status, ==, 0);
    CHECK_CONTAINS(a.text, "running on unix:");

    send_command(fd, 12, "echo a b");
    read_answer(fd, &a);
    CHECK_INT(a.id, ==, 12);
    CHECK_STR(a.text, "echo [a b]");
    send_command(fd, 13, "user test-app 1 fail");
    read_answer(fd, &a);
    CHECK_INT(a.status, ==, ELS_EBUSY);
    CHECK_STR(a.text, "ELS_EBUSY: asked to fail");
    send_command(fd, 14, "no-such-command");
    read_answer(fd, &a);
    CHECK_INT(a.status, ==, ELS_EINVAL);
    CHECK_INT(user_calls, ==, 2);
    close(fd);
    els_writer_close(w);
}

static void test_register_rules(void)
{
    CHECK_INT(els_control_register("eventlog-socket", 1, NULL, user_echo, NULL),
              ==, ELS_EINVAL);
    CHECK_INT(els_control_register("eventlog-sink", 1, NULL, user_echo, NULL),
              ==, ELS_EINVAL);
    CHECK_INT(els_control_register("app", 0, NULL, user_echo, NULL), ==, ELS_EINVAL);
    CHECK_INT(els_control_register("app", 256, NULL, user_echo, NULL), ==, ELS_EINVAL);
    CHECK_INT(els_control_register("", 1, NULL, user_echo, NULL), ==, ELS_EINVAL);
    CHECK_INT(els_control_register("a b", 1, NULL, user_echo, NULL), ==, ELS_EINVAL);
    CHECK_INT(els_control_register("app", 1, "Bad", user_echo, NULL), ==, ELS_EINVAL);
    CHECK_INT(els_control_register("app", 1, NULL, NULL, NULL), ==, ELS_EINVAL);
    CHECK_INT(els_control_register("app", 1, NULL, user_echo, NULL), ==, 0);
    CHECK_INT(els_control_register("app", 1, NULL, user_echo, NULL), ==, ELS_EEXIST);
    CHECK_INT(els_control_register("app", 2, "status", user_echo, NULL), ==,
              ELS_EEXIST);
}

/* A stream consumer's answer is a note in its stream, after the units
 * written before the command ran and before those written after. */
static void test_in_band_answer(void)
{
    CHECK_INT(els_control_register("app", 7, NULL, user_echo, &user_calls), ==, 0);
    int fd;
    struct evgen_buf h;
    struct els_writer *w = open_unix_with_client("control=1", &fd, &h);
    struct evgen_buf got = { 0 };
    struct evgen_buf b1 = evgen_block(0, 100, 5, "before", 0);
    write_ok(w, b1.p, b1.len);
    read_until(fd, &got, "before 4");
    /* eventlog-socket message for app/7 (no reply in its protocol: ours
     * is in-band). */
    static const uint8_t es[] = "\xF0\x9E\x97\x8C\x00\x03" "app" "\x07";
    send_all(fd, es, sizeof es - 1);
    send_command(fd, 5, "status");
    read_until(fd, &got, "eventlog-sink control #5 status");
    struct evgen_buf b2 = evgen_block(0, 200, 5, "after", 0);
    write_ok(w, b2.p, b2.len);
    write_ok(w, evgen_data_end, 2);
    els_writer_close(w);
    read_to_end(fd, &got);
    close(fd);
    check_stream_parses(&got, true);
    CHECK(contains(&got, "eventlog-sink control app command 7: ok: echo []"));
    CHECK(contains(&got, "eventlog-sink control #5 status: ok: running"));
    /* The note sits between the blocks. */
    const char *needle = "app command 7";
    size_t at_before = 0, at_note = 0, at_after = 0;
    for (size_t i = 0; i + 8 < got.len; i++) {
        if (!at_before && memcmp(got.p + i, "before 4", 8) == 0)
            at_before = i;
        if (!at_note && memcmp(got.p + i, needle, strlen(needle)) == 0)
            at_note = i;
        if (!at_after && memcmp(got.p + i, "after 0", 7) == 0)
            at_after = i;
    }
    CHECK(at_before && at_note && at_after);
    CHECK(at_before < at_note);
    CHECK(at_note < at_after);
    evgen_free(&b1);
    evgen_free(&b2);
    evgen_free(&h);
    evgen_free(&got);
}

/* Without control=1 input is discarded: no answer, the stream as ever. */
static void test_control_off_by_default(void)
{
    int fd;
    struct evgen_buf h;
    struct els_writer *w = open_unix_with_client("", &fd, &h);
    struct reader rd;
    reader_start(&rd, fd, false);
    send_hello(fd);
    send_command(fd, 1, "stop");
    struct evgen_buf b = evgen_block(0, 100, 5, "data", 0);
    write_ok(w, b.p, b.len);
    write_ok(w, evgen_data_end, 2);
    els_writer_close(w);
    reader_join(&rd);
    check_stream_parses(&rd.got, true);
    CHECK(!contains(&rd.got, "ELSR"));
    CHECK(!contains(&rd.got, "0123456789ABCDEF"));
    CHECK(!contains(&rd.got, "eventlog-sink control"));
    CHECK(contains(&rd.got, "data 4"));
    evgen_free(&b);
    evgen_free(&h);
    evgen_free(&rd.got);
}

/* A client that floods commands and never reads its answers (control-only:
 * answer frames; a stream consumer: in-band answers waiting for it to read
 * up to them) is closed; the writer keeps delivering to the other
 * consumer meanwhile. */
static void flood(bool control_only)
{
    const char *path;
    struct els_writer *w = open_at("unix", "f.sock", "control=1", &path);
    int good = unix_connect(path);
    wait_consumers(w, 1);
    struct evgen_buf got = { 0 };
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    int bad = unix_connect(path);
    wait_consumers(w, 2);
    if (control_only)
        send_hello(bad);
    /* Unknown commands: each answered at once, none runs. */
    uint8_t f[64];
    uint8_t p[] = { 0, 0, 0, 1, 'x' };
    size_t n = frame(f, ELSI_CTL_KIND_COMMAND, p, sizeof p);
    bool closed = false;
    for (int i = 0; i < 200000 && !closed; i++) {
        ssize_t r = send(bad, f, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r < 0 && (errno == EPIPE || errno == ECONNRESET))
            closed = true;
        else if (r < 0 && errno == EAGAIN) {
            /* Its input is full: the writer must still be delivering. */
            char tag[32], needle[40];
            snprintf(tag, sizeof tag, "live-%d", i);
            snprintf(needle, sizeof needle, "%s 2", tag);
            struct evgen_buf b = evgen_block(0, 1000 + (uint64_t)i, 3, tag, 0);
            write_ok(w, b.p, b.len);
            evgen_free(&b);
            read_until(good, &got, needle);
        }
    }
    CHECK_MSG(closed, "the flooding client was never closed");
    struct evgen_buf b = evgen_block(0, 9999999, 3, "last", 0);
    write_ok(w, b.p, b.len);
    read_until(good, &got, "last 2");     /* the writer still delivers */
    close(bad);
    write_ok(w, evgen_data_end, 2);
    els_writer_close(w);
    read_to_end(good, &got);
    close(good);
    check_stream_parses(&got, true);
    evgen_free(&b);
    evgen_free(&h);
    evgen_free(&got);
}

static void test_flood_control_only(void)
{
    flood(true);
}

static void test_flood_stream_consumer(void)
{
    flood(false);
}

/* Malformed and oversized input gets error answers; the session goes on. */
static void test_malformed_answered(void)
{
    const char *path;
    struct els_writer *w = open_at("unix", "m.sock", "control=1", &path);
    struct answer a;
    int fd = open_session(path, &a);
    send_all(fd, "garbage!", 8);
    read_answer(fd, &a);
    CHECK_INT(a.status, ==, ELS_EINVAL);
    static uint8_t big[8 + 5000];
    memcpy(big, "ELSC\x01\x02\x13\x88", 8);     /* 5000 bytes */
    memset(big + 8, 'A', 5000);
    send_all(fd, big, sizeof big);
    read_answer(fd, &a);
    CHECK_INT(a.status, ==, ELS_EMSGSIZE);
    send_command(fd, 3, "status");
    read_answer(fd, &a);
    CHECK_INT(a.id, ==, 3);
    CHECK_INT(a.status, ==, 0);
    close(fd);
    els_writer_close(w);
}

static void test_spec_and_open_rules(void)
{
    char err[300];
    CHECK_INT(els_spec_check("unix:/tmp/x?control=2", err, sizeof err), ==,
              ELS_EINVAL);
    CHECK_CONTAINS(err, "control=2");
    CHECK_INT(els_spec_check("unix:/tmp/x?control-secret=/tmp/s", err,
                             sizeof err), ==, ELS_EINVAL);
    CHECK_CONTAINS(err, "without control=1");
    struct els_writer *w = NULL;
    char spec[700];
    snprintf(spec, sizeof spec, "file:%s?control=1", check_path("f.ev"));
    CHECK_INT(els_writer_open(spec, &w, err, sizeof err), ==, ELS_EINVAL);
    CHECK_CONTAINS(err, "needs a listening sink");
    /* A secret others may read is refused. */
    const char *secret = check_path("secret");
    CHECK_OK(tu_write_file(secret, "0123456789abcdef0123\n"));
    chmod(secret, 0644);
    snprintf(spec, sizeof spec, "tcp:0?control=1&control-secret=%s", secret);
    CHECK_INT(els_writer_open(spec, &w, err, sizeof err), ==, ELS_EINVAL);
    CHECK_CONTAINS(err, "chmod 600");
    chmod(secret, 0600);
    CHECK_OK(tu_write_file(secret, "short\n"));
    chmod(secret, 0600);
    CHECK_INT(els_writer_open(spec, &w, err, sizeof err), ==, ELS_EINVAL);
    CHECK_CONTAINS(err, "16 to 255 bytes");
}

static unsigned tcp_port_of(struct els_writer *w)
{
    char ep[256];
    CHECK(els_writer_endpoint(w, ep, sizeof ep) > 0);
    const char *colon = strrchr(ep, ':');
    CHECK(colon != NULL);
    return (unsigned)atoi(colon + 1);
}

/* "challenge HEX" (an answer's text, or a note's tail) into its bytes. */
static void parse_challenge(const char *text, uint8_t ch[32])
{
    const char *p = strstr(text, "challenge ");
    CHECK_MSG(p != NULL, "no challenge in \"%s\"", text);
    p += strlen("challenge ");
    for (int i = 0; i < 32; i++) {
        unsigned v;
        CHECK_INT(sscanf(p + 2 * i, "%2x", &v), ==, 1);
        ch[i] = (uint8_t)v;
    }
}

static void send_proof(int fd, const uint8_t proof[32])
{
    uint8_t f[64];
    send_all(fd, f, frame(f, ELSI_CTL_KIND_PROOF, proof, 32));
}

/* Our proof for a challenge, built from docs/CONTROL.md's layout with the
 * HMAC primitive (not with elsi_ctl_proof(), which the server uses). */
static void prove(const char *secret, const uint8_t ch[32], unsigned flags,
                  uint8_t proof[32])
{
    uint8_t m[128];
    size_t n = 0;
    memcpy(m, "eventlog-sink control proof v2", 31);   /* with its NUL */
    n += 31;
    memcpy(m + n, ch, 32);
    n += 32;
    memcpy(m + n, nonce, 16);
    n += 16;
    m[n++] = (uint8_t)flags;
    elsi_hmac_sha256(secret, strlen(secret), m, n, proof);
}

/* A control-only TCP session: hello, then its challenge in *a. */
static int tcp_hello(unsigned port, struct answer *a)
{
    int fd = tu_connect_tcp("127.0.0.1", port, 10000);
    CHECK(fd >= 0);
    send_hello(fd);
    skip_to_nonce(fd);
    read_answer(fd, a);
    return fd;
}

/* A control-only TCP session that answers its challenge with the proof
 * of secret; the answer to the proof in *a, the proof in proof_out. */
static int tcp_session(unsigned port, const char *secret, struct answer *a,
                       uint8_t proof_out[32])
{
    int fd = tcp_hello(port, a);
    CHECK_INT(a->kind, ==, ELSI_CTL_KIND_CHALLENGE);
    CHECK_INT(a->status, ==, 0);
    CHECK_INT(strlen(a->text), ==, strlen("challenge ") + 64);
    uint8_t ch[32], proof[32];
    parse_challenge(a->text, ch);
    prove(secret, ch, ELSI_CTL_HELLO_CONTROL_ONLY, proof);
    send_proof(fd, proof);
    read_answer(fd, a);
    CHECK_INT(a->kind, ==, ELSI_CTL_KIND_HELLO_ANSWER);
    if (proof_out != NULL)
        memcpy(proof_out, proof, 32);
    return fd;
}

static void expect_status(int fd, uint32_t id, int status)
{
    struct answer a;
    send_command(fd, id, "status");
    read_answer(fd, &a);
    CHECK_INT(a.id, ==, id);
    CHECK_INT(a.status, ==, status);
}

static struct els_writer *tcp_writer_with_secret(const char *secret_text)
{
    const char *secret = check_path("secret");
    CHECK_OK(tu_write_file(secret, secret_text));
    chmod(secret, 0600);
    char spec[700];
    snprintf(spec, sizeof spec, "tcp:0?control=1&control-secret=%s", secret);
    return open_ok(spec);
}

static void test_tcp_needs_secret(void)
{
    /* Without control-secret=: TCP peers are refused, no challenge. */
    struct els_writer *w = open_ok("tcp:0?control=1");
    struct answer a;
    int fd = tcp_hello(tcp_port_of(w), &a);
    CHECK_INT(a.kind, ==, ELSI_CTL_KIND_HELLO_ANSWER);
    CHECK_INT(a.status, ==, -EPERM);
    CHECK_CONTAINS(a.text, "no control-secret=");
    expect_status(fd, 1, -EPERM);
    close(fd);
    els_writer_close(w);
}

/* The right proof is accepted; a wrong one is refused and locks the
 * session (Note [Challenges]); a proof replayed on another connection,
 * whose challenge differs, is refused; a challenge is good for one proof;
 * a command before the proof is refused. */
static void test_tcp_challenge(void)
{
    static const char secret[] = "correct horse battery staple";
    struct els_writer *w = tcp_writer_with_secret("correct horse battery staple\n");
    unsigned port = tcp_port_of(w);
    struct answer a;
    uint8_t good[32], p2[32];

    int fd = tcp_session(port, secret, &a, good);
    CHECK_INT(a.status, ==, 0);
    CHECK_CONTAINS(a.text, "protocol 2");
    expect_status(fd, 2, 0);
    /* The challenge was used up: another proof answers nothing. */
    send_proof(fd, good);
    read_answer(fd, &a);
    CHECK_INT(a.status, ==, -EPERM);
    CHECK_CONTAINS(a.text, "no challenge to answer");
    expect_status(fd, 3, 0);        /* still allowed */
    close(fd);

    /* Replay: the recorded proof against a new connection's challenge. */
    fd = tcp_hello(port, &a);
    CHECK_INT(a.kind, ==, ELSI_CTL_KIND_CHALLENGE);
    expect_status(fd, 4, -EPERM);   /* nothing before the proof */
    send_proof(fd, good);
    read_answer(fd, &a);
    CHECK_INT(a.status, ==, -EPERM);
    CHECK_CONTAINS(a.text, "wrong proof");
    expect_status(fd, 5, -EPERM);
    /* Locked: a new hello gets no challenge, a proof no hearing. */
    send_hello(fd);
    read_answer(fd, &a);
    CHECK_INT(a.kind, ==, ELSI_CTL_KIND_HELLO_ANSWER);
    CHECK_INT(a.status, ==, -EPERM);
    CHECK_CONTAINS(a.text, "a wrong proof was given on this connection");
    send_proof(fd, good);
    read_answer(fd, &a);
    CHECK_INT(a.status, ==, -EPERM);
    close(fd);

    /* A wrong secret; then the right one still works on a new connection. */
    fd = tcp_session(port, "correct horse battery stapl", &a, p2);
    CHECK_INT(a.status, ==, -EPERM);
    expect_status(fd, 6, -EPERM);
    close(fd);
    fd = tcp_session(port, secret, &a, p2);
    CHECK_INT(a.status, ==, 0);
    CHECK(memcmp(good, p2, 32) != 0);   /* fresh challenges */
    expect_status(fd, 7, 0);
    close(fd);
    els_writer_close(w);
}

/* A stream consumer over TCP gets its challenge in-band, as every answer,
 * proves the secret in-band, and then may run commands. */
static void test_tcp_in_band_challenge(void)
{
    static const char secret[] = "another secret of some length";
    struct els_writer *w = tcp_writer_with_secret("another secret of some length\n");
    int fd = tu_connect_tcp("127.0.0.1", tcp_port_of(w), 10000);
    CHECK(fd >= 0);
    wait_consumers(w, 1);
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    struct evgen_buf got = { 0 };
    send_hello_flags(fd, 0);
    read_until(fd, &got, "hello: ok: challenge ");
    /* The note's text ends the stream read so far only once its 64 hex
     * digits are in: read up to them. */
    char text[200];
    for (;;) {
        const char *at = memmem(got.p, got.len, "challenge ", 10);
        size_t have = got.len - (size_t)((const uint8_t *)at - got.p);
        if (have >= 10 + 64) {
            snprintf(text, sizeof text, "%.*s", 74, at);
            break;
        }
        uint8_t b[4096];
        CHECK_INT(tu_wait_fd(fd, POLLIN, 10000), ==, 0);
        ssize_t n = read(fd, b, sizeof b);
        CHECK(n > 0);
        evgen_put(&got, b, (size_t)n);
    }
    uint8_t ch[32], proof[32];
    parse_challenge(text, ch);
    prove(secret, ch, 0, proof);
    send_proof(fd, proof);
    read_until(fd, &got, "eventlog-sink control #0 proof: ok: eventlog-sink "
               "control protocol 2");
    send_command(fd, 9, "status");
    read_until(fd, &got, "eventlog-sink control #9 status: ok: running on tcp:");
    write_ok(w, evgen_data_end, 2);
    els_writer_close(w);
    read_to_end(fd, &got);
    close(fd);
    check_stream_parses(&got, true);
    evgen_free(&h);
    evgen_free(&got);
}

/* A version-1 client (hello with its secret) is answered in version 1's
 * framing with ELS_EVERSION, at once: it never waits for its timeout. */
static void test_version_1_client(void)
{
    const char *path;
    struct els_writer *w = open_at("unix", "v1.sock", "control=1", &path);
    int fd = unix_connect(path);
    uint8_t p[64], f[128];
    p[0] = ELSI_CTL_HELLO_CONTROL_ONLY;
    memcpy(p + 1, nonce, 16);
    memcpy(p + 17, "0123456789abcdef0123", 20);
    send_all(fd, f, frame_v(f, 1, ELSI_CTL_KIND_HELLO, p, 37));
    skip_to_nonce(fd);
    struct answer a;
    read_answer_v(fd, 1, &a);
    CHECK_INT(a.kind, ==, ELSI_CTL_KIND_HELLO_ANSWER);
    CHECK_INT(a.status, ==, ELS_EVERSION);
    CHECK_CONTAINS(a.text, "version 1 is not served");
    close(fd);
    els_writer_close(w);
}

/* Under ASan or TSan the resident set holds the sanitizer's shadow memory
 * and its quarantine of freed blocks, so it says nothing about what the
 * library keeps: there the allocator's own count of live heap bytes
 * stands in for it (same question, the program's memory, asked of the
 * allocator). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MEM_FROM_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define MEM_FROM_ALLOCATOR 1
#endif
#endif
#ifdef MEM_FROM_ALLOCATOR
/* sanitizer/allocator_interface.h, which not every compiler installs. */
size_t __sanitizer_get_current_allocated_bytes(void);
#endif

/* This process's resident set, from /proc/self/status (kB); under a
 * sanitizer, its live heap (see above). */
static long rss_kb(const char *field)
{
#ifdef MEM_FROM_ALLOCATOR
    (void)field;
    return (long)(__sanitizer_get_current_allocated_bytes() / 1024);
#else
    FILE *f = fopen("/proc/self/status", "r");
    CHECK(f != NULL);
    char line[256];
    long kb = -1;
    size_t n = strlen(field);
    while (fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, field, n) == 0 && line[n] == ':')
            kb = strtol(line + n + 1, NULL, 10);
    fclose(f);
    CHECK(kb >= 0);
    return kb;
#endif
}

/* Note [Control memory]: 64 control-only clients send commands and read
 * nothing, so each has answers pending in the program.  The program's
 * real memory (VmRSS, sampled while they flood, and the peak VmHWM) grows
 * by at most consumer-memory= plus a small constant, and the sessions
 * that would pass the bound are closed and counted.  Before, each session
 * could hold 64 KiB of answers outside the bound (4 MiB for 64). */
static void test_control_memory_bounded_rss(void)
{
    enum { CLIENTS = 64, BOUND_KB = 512, SLACK_KB = 1024 };
    const char *path;
    char query[128];
    snprintf(query, sizeof query, "control=1&consumer-memory=%dK&"
             "max-consumers=100", BOUND_KB);
    struct els_writer *w = open_at("unix", "m.sock", query, &path);
    struct evgen_buf h = evgen_header();
    write_ok(w, h.p, h.len);
    /* The peak from here on (clear_refs 5 resets VmHWM; where it cannot,
     * the samples below still bound it). */
#ifdef MEM_FROM_ALLOCATOR
    bool hwm = false;       /* no peak to read: the samples bound it */
#else
    FILE *cr = fopen("/proc/self/clear_refs", "w");
    bool hwm = cr != NULL && fputs("5", cr) >= 0 && fclose(cr) == 0;
#endif
    long before = rss_kb("VmRSS");

    int fd[CLIENTS];
    bool closed[CLIENTS] = { false };
    for (int i = 0; i < CLIENTS; i++) {
        fd[i] = unix_connect(path);
        send_hello(fd[i]);
    }
    uint8_t f[64];
    uint8_t p[] = { 0, 0, 0, 1, 'x' };
    size_t n = frame(f, ELSI_CTL_KIND_COMMAND, p, sizeof p);
    uint8_t batch[4096];
    size_t per = sizeof batch / n;
    for (size_t k = 0; k < per; k++)
        memcpy(batch + k * n, f, n);
    long peak = 0;
    int open_clients = CLIENTS;
    for (int round = 0; round < 400 && open_clients > 0; round++) {
        for (int i = 0; i < CLIENTS; i++) {
            if (closed[i])
                continue;
            ssize_t r = send(fd[i], batch, per * n, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (r < 0 && (errno == EPIPE || errno == ECONNRESET)) {
                closed[i] = true;
                open_clients--;
            }
        }
        check_sleep_ms(5);
        long now = rss_kb("VmRSS");
        if (now > peak)
            peak = now;
    }
    if (hwm) {
        long h2 = rss_kb("VmHWM");
        if (h2 > peak)
            peak = h2;
    }
    struct els_stats st = stats_of(w);
    fprintf(stderr, "  VmRSS before %ld kB, peak %ld kB (growth %ld kB; "
            "bound %d kB + %d kB); %d of %d clients closed; sessions closed "
            "for memory %llu, consumer memory peak %llu bytes\n", before,
            peak, peak - before, BOUND_KB, SLACK_KB, CLIENTS - open_clients,
            CLIENTS, (unsigned long long)st.consumers_dropped_memory,
            (unsigned long long)st.consumer_memory_peak);
    CHECK_MSG(peak - before <= BOUND_KB + SLACK_KB, "RSS grew by %ld kB with "
              "consumer-memory=%dK", peak - before, BOUND_KB);
    CHECK_MSG(st.consumers_dropped_memory > 0, "no session was closed for "
              "consumer-memory=");
    CHECK_U64(st.consumer_memory_peak, <=, (uint64_t)BOUND_KB * 1024);
    for (int i = 0; i < CLIENTS; i++)
        close(fd[i]);
    els_writer_close(w);
    evgen_free(&h);
}

static const struct check_case cases[] = {
    CHECK_CASE(test_status_and_user_commands),
    CHECK_CASE(test_register_rules),
    CHECK_CASE(test_in_band_answer),
    CHECK_CASE(test_control_off_by_default),
    CHECK_CASE(test_flood_control_only),
    CHECK_CASE(test_flood_stream_consumer),
    CHECK_CASE(test_malformed_answered),
    CHECK_CASE(test_spec_and_open_rules),
    CHECK_CASE(test_tcp_needs_secret),
    CHECK_CASE(test_tcp_challenge),
    CHECK_CASE(test_tcp_in_band_challenge),
    CHECK_CASE(test_version_1_client),
    CHECK_CASE(test_control_memory_bounded_rss),
};

CHECK_MAIN(cases)
