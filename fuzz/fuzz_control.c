/*
 * fuzz_control.c: libFuzzer target for the control channel's decoder
 * (elsi_ctl_decode() in lib/control/codec.c), which reads whatever a
 * client sends: this project's frames and eventlog-socket's binary
 * messages, interleaved: version-2 hellos, proofs and commands, and the
 * version-1 hello that is still decoded (to be refused in its framing).
 *
 * Input: one byte of piece size, then the bytes a client sends.  The
 * bytes are decoded once whole and once in pieces of that size.
 * Properties: every call makes progress (consumes a byte or yields a
 * message); both runs yield the same messages; every message is
 * well formed (a command's text is NUL-terminated, printable, at most
 * ELSI_CTL_MAX_PAYLOAD bytes; an error carries a negative code and a
 * one-line text; a hello's flags fit a byte); the answer encoder, given the error
 * text, writes exactly the frame length it returns; and a proof's MAC
 * depends on every byte of its challenge.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "control/codec.h"
#include "control/sha256.h"
#include "eventlog-sink.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CTL_MAX_MSGS 4096

struct fuzz_ctl_run {
    size_t n;
    unsigned type[FUZZ_CTL_MAX_MSGS];
    uint32_t hash[FUZZ_CTL_MAX_MSGS];
};

static uint32_t fuzz_ctl_hash(const struct elsi_ctl_msg *m)
{
    const char *s = m->type == ELSI_CTL_MSG_COMMAND ? m->text
                  : m->type == ELSI_CTL_MSG_ES ? m->ns
                  : m->type == ELSI_CTL_MSG_ERROR ? m->error_text : "";
    /* Only the fields each type defines. */
    uint32_t h = 2166136261u;
    if (m->type == ELSI_CTL_MSG_COMMAND || m->type == ELSI_CTL_MSG_ERROR)
        h ^= m->request_id;
    if (m->type == ELSI_CTL_MSG_ERROR)
        h ^= (uint32_t)m->error * 31u;
    if (m->type == ELSI_CTL_MSG_ES)
        h ^= m->command_id;
    if (m->type == ELSI_CTL_MSG_HELLO || m->type == ELSI_CTL_MSG_HELLO_V1) {
        h ^= (uint32_t)m->type << 8 | m->flags;
        for (size_t i = 0; i < ELSI_CTL_NONCE_BYTES; i++)
            h = (h ^ m->nonce[i]) * 16777619u;
    }
    if (m->type == ELSI_CTL_MSG_PROOF)
        for (size_t i = 0; i < ELSI_CTL_PROOF_BYTES; i++)
            h = (h ^ m->proof[i]) * 16777619u;
    for (; *s != '\0'; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static void fuzz_ctl_check(const struct elsi_ctl_msg *m)
{
    switch (m->type) {
    case ELSI_CTL_MSG_COMMAND: {
        size_t n = strlen(m->text);
        FUZZ_CHECK(n > 0 && n <= ELSI_CTL_MAX_PAYLOAD, "text of %zu bytes", n);
        for (size_t i = 0; i < n; i++)
            FUZZ_CHECK((uint8_t)m->text[i] >= 0x20 && m->text[i] != 0x7f,
                       "control byte in a command");
        break;
    }
    case ELSI_CTL_MSG_ES:
        FUZZ_CHECK(m->ns_len <= 255 && m->ns[m->ns_len] == '\0', "namespace");
        break;
    case ELSI_CTL_MSG_HELLO:
    case ELSI_CTL_MSG_HELLO_V1:
        FUZZ_CHECK(m->flags <= 0xff, "flags %u", m->flags);
        break;
    case ELSI_CTL_MSG_PROOF: {
        /* The proof's input as the server builds it, with the received
         * bytes as challenge: flipping one challenge bit changes it. */
        uint8_t ch[ELSI_CTL_CHALLENGE_BYTES], a[ELSI_CTL_PROOF_BYTES],
                b[ELSI_CTL_PROOF_BYTES];
        memcpy(ch, m->proof, sizeof ch);
        elsi_ctl_proof((const uint8_t *)"fuzz-secret", 11, ch, m->proof, 1, a);
        ch[m->proof[0] % sizeof ch] ^= 1;
        elsi_ctl_proof((const uint8_t *)"fuzz-secret", 11, ch, m->proof, 1, b);
        FUZZ_CHECK(memcmp(a, b, sizeof a) != 0, "proof ignores its challenge");
        break;
    }
    case ELSI_CTL_MSG_ERROR: {
        FUZZ_CHECK(m->error < 0, "error code %d", m->error);
        FUZZ_CHECK(fuzz_one_line(m->error_text, sizeof m->error_text), "error text");
        uint8_t frame[ELSI_CTL_ANSWER_HEADER_BYTES + ELSI_CTL_MAX_ANSWER_TEXT];
        size_t n = elsi_ctl_encode_answer(frame, sizeof frame,
                                          ELSI_CTL_VERSION, 0x82,
                                          m->request_id, m->error,
                                          m->error_text);
        FUZZ_CHECK(n == ELSI_CTL_ANSWER_HEADER_BYTES + strlen(m->error_text),
                   "answer of %zu bytes", n);
        break;
    }
    default:
        FUZZ_CHECK(0, "message type %d", (int)m->type);
    }
}

static void fuzz_ctl_run(const uint8_t *in, size_t len, size_t step,
                         struct fuzz_ctl_run *run)
{
    static struct elsi_ctl_decoder d;
    static struct elsi_ctl_msg m;
    elsi_ctl_decoder_init(&d);
    run->n = 0;
    for (size_t off = 0; off < len;) {
        size_t piece = step == 0 || len - off < step ? len - off : step;
        uint8_t *copy = fuzz_bytes(in + off, piece);
        size_t used = 0;
        while (used < piece) {
            bool got = false;
            size_t k = elsi_ctl_decode(&d, copy + used, piece - used, &m, &got);
            FUZZ_CHECK(k > 0 || got, "no progress at %zu", off + used);
            FUZZ_CHECK(k <= piece - used, "consumed past the input");
            used += k;
            if (got) {
                fuzz_ctl_check(&m);
                FUZZ_CHECK(run->n < FUZZ_CTL_MAX_MSGS, "too many messages");
                run->type[run->n] = m.type;
                run->hash[run->n] = fuzz_ctl_hash(&m);
                run->n++;
            }
        }
        free(copy);
        off += piece;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t step = (size_t)data[0] + 1;
    static struct fuzz_ctl_run whole, pieces;
    fuzz_ctl_run(data + 1, size - 1, 0, &whole);
    fuzz_ctl_run(data + 1, size - 1, step, &pieces);
    FUZZ_CHECK(whole.n == pieces.n, "%zu messages whole, %zu in pieces of %zu",
               whole.n, pieces.n, step);
    for (size_t i = 0; i < whole.n; i++)
        FUZZ_CHECK(whole.type[i] == pieces.type[i] &&
                   whole.hash[i] == pieces.hash[i],
                   "message %zu differs in pieces of %zu", i, step);
    return 0;
}
