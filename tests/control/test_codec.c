/*
 * test_codec.c: the control channel's decoder and answer encoder
 * (lib/control/codec.c): both protocols, byte-at-a-time input, every
 * malformed case answered with the right error and followed by a clean
 * resynchronisation, oversized frames skipped without being held; proof
 * frames and the proof's value; a version-1 hello decoded only to be
 * refused, its secret wiped.
 */
#include "check.h"
#include "control/codec.h"
#include "control/frames.h"
#include "eventlog-sink.h"
#include "eventlog-sink/control.h"

#define MSGS_MAX 16

struct decoded {
    size_t n;
    struct elsi_ctl_msg m[MSGS_MAX];
};

/* Feed in pieces of `step` bytes (0: all at once). */
static void decode_all(const uint8_t *in, size_t len, size_t step,
                       struct decoded *out)
{
    static struct elsi_ctl_decoder d;
    elsi_ctl_decoder_init(&d);
    out->n = 0;
    size_t off = 0;
    while (off < len) {
        size_t piece = step == 0 || len - off < step ? len - off : step;
        size_t used = 0;
        while (used < piece) {
            bool got = false;
            CHECK(out->n < MSGS_MAX);
            size_t k = elsi_ctl_decode(&d, in + off + used, piece - used,
                                       &out->m[out->n], &got);
            CHECK(k > 0 || got);
            used += k;
            if (got)
                out->n++;
        }
        off += piece;
    }
}

/* eventlog-socket's own example, from its README: requestHeapCensus. */
static const uint8_t es_census[] =
    "\xF0\x9E\x97\x8C\x00\x0f" "eventlog-socket" "\x05";

static void test_es_message(void)
{
    for (size_t step = 0; step <= 1; step++) {
        struct decoded d;
        decode_all(es_census, sizeof es_census - 1, step, &d);
        CHECK_INT(d.n, ==, 1);
        CHECK_INT(d.m[0].type, ==, ELSI_CTL_MSG_ES);
        CHECK_STR(d.m[0].ns, "eventlog-socket");
        CHECK_INT(d.m[0].command_id, ==, 5);
    }
}

static void test_native_command_and_hello(void)
{
    uint8_t buf[4096];
    size_t n = 0;
    uint8_t hello[1 + 16];
    hello[0] = ELSI_CTL_HELLO_CONTROL_ONLY;
    for (int i = 0; i < 16; i++)
        hello[1 + i] = (uint8_t)(0xA0 + i);
    n += frame(buf + n, ELSI_CTL_KIND_HELLO, hello, sizeof hello);
    n += command(buf + n, 7, "set-classes -s+f");
    memcpy(buf + n, es_census, sizeof es_census - 1);
    n += sizeof es_census - 1;
    n += command(buf + n, 0xfffffffeu, "status");
    for (size_t step = 0; step <= 3; step++) {
        struct decoded d;
        decode_all(buf, n, step, &d);
        CHECK_INT(d.n, ==, 4);
        CHECK_INT(d.m[0].type, ==, ELSI_CTL_MSG_HELLO);
        CHECK_INT(d.m[0].flags, ==, ELSI_CTL_HELLO_CONTROL_ONLY);
        CHECK_INT(d.m[0].nonce[15], ==, 0xAF);
        CHECK_INT(d.m[1].type, ==, ELSI_CTL_MSG_COMMAND);
        CHECK_INT(d.m[1].request_id, ==, 7);
        CHECK_STR(d.m[1].text, "set-classes -s+f");
        CHECK_INT(d.m[2].type, ==, ELSI_CTL_MSG_ES);
        CHECK_INT(d.m[3].request_id, ==, 0xfffffffeu);
        CHECK_STR(d.m[3].text, "status");
    }
}

/* Junk, a bad magic, a wrong version: one error each (a run of junk is
 * one), and the message after them still decodes. */
static void test_malformed_then_resync(void)
{
    uint8_t buf[4096];
    size_t n = 0;
    memcpy(buf + n, "hello world\n", 12);       /* junk: one error */
    n += 12;
    n += command(buf + n, 1, "stats");
    memcpy(buf + n, "\xF0\x9E\x00", 3);         /* bad magic */
    n += 3;
    memcpy(buf + n, "\xF0\x9E\x97\x8C\x01", 5); /* es version 1 */
    n += 5;
    memcpy(buf + n, "ELSC\x03", 5);             /* our version 3 */
    n += 5;
    n += command(buf + n, 2, "status");
    for (size_t step = 0; step <= 1; step++) {
        struct decoded d;
        decode_all(buf, n, step, &d);
        CHECK_INT(d.n, ==, 6);
        CHECK_INT(d.m[0].type, ==, ELSI_CTL_MSG_ERROR);
        CHECK_INT(d.m[0].error, ==, ELS_EINVAL);
        CHECK_STR(d.m[1].text, "stats");
        CHECK_INT(d.m[2].type, ==, ELSI_CTL_MSG_ERROR);
        CHECK_INT(d.m[2].error, ==, ELS_EINVAL);
        CHECK_INT(d.m[3].error, ==, ELS_EVERSION);
        CHECK_INT(d.m[4].error, ==, ELS_EVERSION);
        CHECK_INT(d.m[5].type, ==, ELSI_CTL_MSG_COMMAND);
        CHECK_STR(d.m[5].text, "status");
    }
}

/* A long run of junk costs one error, not one per byte. */
static void test_junk_reported_once(void)
{
    uint8_t buf[3000];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)('a' + i % 3);
    struct decoded d;
    decode_all(buf, sizeof buf, 7, &d);
    CHECK_INT(d.n, ==, 1);
    CHECK_INT(d.m[0].type, ==, ELSI_CTL_MSG_ERROR);
}

/* An oversized frame is answered ELS_EMSGSIZE and skipped by its length,
 * whatever it holds (here: something that looks like a command). */
static void test_oversized_skipped(void)
{
    static uint8_t buf[70000];
    size_t plen = 60000;
    memcpy(buf, "ELSC\x02\x02", 6);
    buf[6] = (uint8_t)(plen >> 8);
    buf[7] = (uint8_t)plen;
    memset(buf + 8, 'x', plen);
    command(buf + 100, 9, "stop");  /* inside the payload: not a command */
    size_t n = 8 + plen;
    n += command(buf + n, 3, "status");
    for (size_t step = 0; step <= 1000; step += 1000) {
        struct decoded d;
        decode_all(buf, n, step, &d);
        CHECK_INT(d.n, ==, 2);
        CHECK_INT(d.m[0].error, ==, ELS_EMSGSIZE);
        CHECK_STR(d.m[1].text, "status");
    }
}

static void test_bad_frames(void)
{
    uint8_t buf[256];
    struct decoded d;
    decode_all(buf, command(buf, 4, "a\x01" "b"), 0, &d);
    CHECK_INT(d.n, ==, 1);
    CHECK_INT(d.m[0].type, ==, ELSI_CTL_MSG_ERROR);
    CHECK_INT(d.m[0].request_id, ==, 4);
    decode_all(buf, frame(buf, 9, "abcd", 4), 0, &d);
    CHECK_INT(d.m[0].type, ==, ELSI_CTL_MSG_ERROR);
    decode_all(buf, frame(buf, ELSI_CTL_KIND_COMMAND, "ab", 2), 0, &d);
    CHECK_INT(d.m[0].type, ==, ELSI_CTL_MSG_ERROR);
    decode_all(buf, frame(buf, ELSI_CTL_KIND_HELLO, "ab", 2), 0, &d);
    CHECK_INT(d.m[0].type, ==, ELSI_CTL_MSG_ERROR);
    decode_all(buf, command(buf, 5, ""), 0, &d);
    CHECK_INT(d.m[0].type, ==, ELSI_CTL_MSG_ERROR);
}

static void test_encode_answer(void)
{
    uint8_t buf[64];
    size_t n = elsi_ctl_encode_answer(buf, sizeof buf, ELSI_CTL_VERSION, 0x82,
                                      0x01020304, (-EPERM), "no");
    CHECK_INT(n, ==, 18);
    CHECK(memcmp(buf, "ELSR\x02\x82\x01\x02\x03\x04", 10) == 0);
    int32_t st = (int32_t)((uint32_t)buf[10] << 24 | (uint32_t)buf[11] << 16 |
                           (uint32_t)buf[12] << 8 | buf[13]);
    CHECK_INT(st, ==, (-EPERM));
    CHECK_INT(buf[14], ==, 0);
    CHECK_INT(buf[15], ==, 2);
    CHECK_INT(elsi_ctl_encode_answer(buf, 17, 2, 0x82, 1, 0, "no"), ==, 0);
    /* A version-1 client's answers keep its framing. */
    elsi_ctl_encode_answer(buf, sizeof buf, ELSI_CTL_VERSION_1, 0x81, 0,
                           ELS_EVERSION, "x");
    CHECK(memcmp(buf, "ELSR\x01\x81", 6) == 0);
}

/* Proofs: exactly 32 bytes; a hello is exactly flags and nonce (a
 * version-2 hello has no room for a secret); both decode byte by byte. */
static void test_proof_frames(void)
{
    uint8_t buf[512], mac[32], hello[18];
    size_t n = 0;
    for (int i = 0; i < 32; i++)
        mac[i] = (uint8_t)(0xC0 + i);
    hello[0] = 0;
    memset(hello + 1, 'N', 17);
    n += frame(buf + n, ELSI_CTL_KIND_PROOF, mac, 32);
    n += frame(buf + n, ELSI_CTL_KIND_PROOF, mac, 31);     /* truncated */
    n += frame(buf + n, ELSI_CTL_KIND_PROOF, buf, 33);     /* oversized */
    n += frame(buf + n, ELSI_CTL_KIND_HELLO, hello, 18);   /* + 1 byte */
    n += frame(buf + n, ELSI_CTL_KIND_HELLO, hello, 16);   /* short nonce */
    n += command(buf + n, 8, "status");
    for (size_t step = 0; step <= 1; step++) {
        struct decoded d;
        decode_all(buf, n, step, &d);
        CHECK_INT(d.n, ==, 6);
        CHECK_INT(d.m[0].type, ==, ELSI_CTL_MSG_PROOF);
        CHECK(memcmp(d.m[0].proof, mac, 32) == 0);
        for (int i = 1; i <= 4; i++) {
            CHECK_INT(d.m[i].type, ==, ELSI_CTL_MSG_ERROR);
            CHECK_INT(d.m[i].error, ==, ELS_EINVAL);
        }
        CHECK_CONTAINS(d.m[1].error_text, "malformed proof");
        CHECK_CONTAINS(d.m[3].error_text, "malformed hello");
        CHECK_STR(d.m[5].text, "status");
    }
}

/* A version-1 client: its hello still decodes (flags and nonce, so it
 * can be answered in its framing) and its secret is wiped from the
 * decoder; its commands are ELS_EVERSION with their ids. */
static void test_version_1(void)
{
    static const char secret[] = "correct horse battery staple";
    uint8_t buf[512], p[64];
    p[0] = ELSI_CTL_HELLO_CONTROL_ONLY;
    memset(p + 1, 'n', 16);
    memcpy(p + 17, secret, sizeof secret - 1);
    size_t n = frame_v(buf, 1, ELSI_CTL_KIND_HELLO, p, 17 + sizeof secret - 1);
    uint8_t c[16] = { 0, 0, 0, 42, 's', 't', 'o', 'p' };
    n += frame_v(buf + n, 1, ELSI_CTL_KIND_COMMAND, c, 8);
    static struct elsi_ctl_decoder dec;
    elsi_ctl_decoder_init(&dec);
    struct elsi_ctl_msg m;
    bool got = false;
    size_t used = elsi_ctl_decode(&dec, buf, n, &m, &got);
    CHECK(got);
    CHECK_INT(m.type, ==, ELSI_CTL_MSG_HELLO_V1);
    CHECK_INT(m.flags, ==, ELSI_CTL_HELLO_CONTROL_ONLY);
    CHECK_INT(m.nonce[0], ==, 'n');
    CHECK(memmem(&dec, sizeof dec, "horse", 5) == NULL);
    CHECK(memmem(&m, sizeof m, "horse", 5) == NULL);
    used += elsi_ctl_decode(&dec, buf + used, n - used, &m, &got);
    CHECK(got);
    CHECK_INT(used, ==, n);
    CHECK_INT(m.type, ==, ELSI_CTL_MSG_ERROR);
    CHECK_INT(m.error, ==, ELS_EVERSION);
    CHECK_INT(m.request_id, ==, 42);
    CHECK_CONTAINS(m.error_text, "version 1 is not served");
}

/* The proof's bytes as docs/CONTROL.md gives them (its example, computed
 * with Python's hmac module, an independent implementation), and each
 * input changes it. */
static void test_proof_value(void)
{
    static const char secret[] = "correct horse battery staple";
    uint8_t challenge[32], nonce[16], proof[32], other[32];
    for (int i = 0; i < 32; i++)
        challenge[i] = (uint8_t)i;
    for (int i = 0; i < 16; i++)
        nonce[i] = (uint8_t)(0xA0 + i);
    CHECK_INT(els_control_proof(secret, sizeof secret - 1, challenge, nonce, 1,
                                proof), ==, 0);
    char hex[65];
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", proof[i]);
    CHECK_STR(hex, "8661e1f319ded49b35504ef8fe249f39"
                   "9315e384fbf808a5e2fc7f8444f601e2");
    elsi_ctl_proof((const uint8_t *)secret, sizeof secret - 1, challenge,
                   nonce, 0, other);
    CHECK(memcmp(proof, other, 32) != 0);
    nonce[3] ^= 1;
    elsi_ctl_proof((const uint8_t *)secret, sizeof secret - 1, challenge,
                   nonce, 1, other);
    CHECK(memcmp(proof, other, 32) != 0);
    CHECK_INT(els_control_proof(secret, 0, challenge, nonce, 1, proof), ==,
              ELS_EINVAL);
    CHECK_INT(els_control_proof(secret, 256, challenge, nonce, 1, proof), ==,
              ELS_EINVAL);
    CHECK_INT(els_control_proof(secret, 5, challenge, nonce, 256, proof), ==,
              ELS_EINVAL);
}

static const struct check_case cases[] = {
    CHECK_CASE(test_es_message),
    CHECK_CASE(test_native_command_and_hello),
    CHECK_CASE(test_malformed_then_resync),
    CHECK_CASE(test_junk_reported_once),
    CHECK_CASE(test_oversized_skipped),
    CHECK_CASE(test_bad_frames),
    CHECK_CASE(test_encode_answer),
    CHECK_CASE(test_proof_frames),
    CHECK_CASE(test_version_1),
    CHECK_CASE(test_proof_value),
};

CHECK_MAIN(cases)
