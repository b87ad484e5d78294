/*
 * codec.c: decoding the control channel's input and encoding its answers
 * (the byte layout is docs/CONTROL.md's).  See codec.h for the contract.
 *
 * Not this file's job: acting on a message, authorising it (auth.c
 * checks proofs; this file only says what they are), or queueing its
 * answer (session.c).
 */
#include <stdio.h>
#include <string.h>

#include "control/codec.h"
#include "control/sha256.h"
#include "eventlog-sink.h"
#include "eventlog-sink/control.h"

static const uint8_t es_magic[4] = { 0xF0, 0x9E, 0x97, 0x8C };

void elsi_ctl_decoder_init(struct elsi_ctl_decoder *d)
{
    memset(d, 0, sizeof *d);
}

static void msg_error(struct elsi_ctl_msg *msg, uint32_t id, int code,
                      const char *text)
{
    msg->type = ELSI_CTL_MSG_ERROR;
    msg->request_id = id;
    msg->error = code;
    snprintf(msg->error_text, sizeof msg->error_text, "%s", text);
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
           (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* A version-1 frame: only its hello is understood (to answer a client
 * that is not updated yet in a way it can read); the secret it may carry
 * is wiped from the buffer, never copied. */
static void decode_frame_v1(struct elsi_ctl_decoder *d, size_t plen,
                            struct elsi_ctl_msg *msg)
{
    unsigned kind = d->buf[5];
    uint8_t *p = d->buf + ELSI_CTL_HEADER_BYTES;
    if (kind == ELSI_CTL_KIND_HELLO && plen >= 1 + ELSI_CTL_NONCE_BYTES &&
        plen <= 1 + ELSI_CTL_NONCE_BYTES + ELSI_CTL_MAX_SECRET) {
        msg->type = ELSI_CTL_MSG_HELLO_V1;
        msg->flags = p[0];
        memcpy(msg->nonce, p + 1, ELSI_CTL_NONCE_BYTES);
        elsi_wipe(p, plen);
        return;
    }
    /* A version-1 command: its id, so the client can match the error. */
    msg_error(msg, kind == ELSI_CTL_KIND_COMMAND && plen >= 4 ? be32(p) : 0,
              ELS_EVERSION, "control protocol version 1 is not served: this "
              "program speaks version 2 (update the client)");
}

/* A whole frame of this project's protocol is in d->buf. */
static void decode_frame(struct elsi_ctl_decoder *d, size_t plen,
                         struct elsi_ctl_msg *msg)
{
    unsigned kind = d->buf[5];
    const uint8_t *p = d->buf + ELSI_CTL_HEADER_BYTES;
    if (d->buf[4] == ELSI_CTL_VERSION_1) {
        decode_frame_v1(d, plen, msg);
        return;
    }
    if (kind == ELSI_CTL_KIND_HELLO) {
        if (plen != 1 + ELSI_CTL_NONCE_BYTES) {
            msg_error(msg, 0, ELS_EINVAL, "malformed hello (expected flags "
                      "and a 16-byte nonce)");
            return;
        }
        msg->type = ELSI_CTL_MSG_HELLO;
        msg->flags = p[0];
        memcpy(msg->nonce, p + 1, ELSI_CTL_NONCE_BYTES);
        return;
    }
    if (kind == ELSI_CTL_KIND_PROOF) {
        if (plen != ELSI_CTL_PROOF_BYTES) {
            msg_error(msg, 0, ELS_EINVAL, "malformed proof (expected 32 "
                      "bytes of HMAC-SHA256)");
            return;
        }
        msg->type = ELSI_CTL_MSG_PROOF;
        memcpy(msg->proof, p, ELSI_CTL_PROOF_BYTES);
        return;
    }
    if (kind != ELSI_CTL_KIND_COMMAND) {
        char t[64];
        snprintf(t, sizeof t, "unknown frame kind %u", kind);
        msg_error(msg, 0, ELS_EINVAL, t);
        return;
    }
    if (plen < 4) {
        msg_error(msg, 0, ELS_EINVAL, "command frame without a request id");
        return;
    }
    uint32_t id = be32(p);
    size_t tlen = plen - 4;
    if (tlen == 0) {
        msg_error(msg, id, ELS_EINVAL, "empty command");
        return;
    }
    for (size_t i = 0; i < tlen; i++) {
        uint8_t c = p[4 + i];
        if (c < 0x20 || c == 0x7f) {
            msg_error(msg, id, ELS_EINVAL, "control character in the command "
                      "text");
            return;
        }
    }
    msg->type = ELSI_CTL_MSG_COMMAND;
    msg->request_id = id;
    memcpy(msg->text, p + 4, tlen);
    msg->text[tlen] = '\0';
}

/* The first five bytes of either protocol: a magic, then a version.
 * false when they fail (d->len reset; an error reported unless it is part
 * of a run of junk already reported; *retry when the failing byte may
 * start the next message). */
static bool check_prefix(struct elsi_ctl_decoder *d, const uint8_t *magic,
                         unsigned version, unsigned old_version,
                         const char *protocol, struct elsi_ctl_msg *msg,
                         bool *report, bool *retry)
{
    size_t n = d->len;
    uint8_t b = d->buf[n - 1];
    if (n <= 4 && b != magic[n - 1]) {
        d->len = 0;
        *retry = true;
        if (!d->in_garbage) {
            msg_error(msg, 0, ELS_EINVAL, "not a control message (bad magic)");
            *report = true;
        }
        d->in_garbage = true;
        return false;
    }
    if (n == 5 && b != version && b != old_version) {
        d->len = 0;
        char t[96];
        snprintf(t, sizeof t, "%s protocol version %u (only version %u is "
                 "known)", protocol, (unsigned)b, version);
        msg_error(msg, 0, ELS_EVERSION, t);
        *report = true;
        return false;
    }
    return true;
}

/* What d->buf holds so far, one byte added: a complete message (true), or
 * more needed (false, d->len kept), or a failed candidate (false, d->len
 * reset to 0 and *retry set when the last byte must be looked at again as
 * a possible start). */
static bool decode_step(struct elsi_ctl_decoder *d, struct elsi_ctl_msg *msg,
                        bool *report, bool *retry)
{
    size_t n = d->len;
    uint8_t b = d->buf[n - 1];
    *report = false;
    *retry = false;
    if (d->buf[0] == ELSI_ES_MAGIC0) {
        if (!check_prefix(d, es_magic, ELSI_ES_VERSION, ELSI_ES_VERSION,
                          "eventlog-socket", msg, report, retry) ||
            n < 7 || n < 7u + d->buf[5])
            return false;
        msg->type = ELSI_CTL_MSG_ES;
        msg->ns_len = d->buf[5];
        memcpy(msg->ns, d->buf + 6, msg->ns_len);
        msg->ns[msg->ns_len] = '\0';
        msg->command_id = b;
        d->len = 0;
        d->in_garbage = false;
        return true;
    }
    /* This project's frame: "ELSC" version kind length[2] payload. */
    if (!check_prefix(d, (const uint8_t *)ELSI_CTL_MAGIC, ELSI_CTL_VERSION,
                      ELSI_CTL_VERSION_1, "control", msg, report, retry))
        return false;
    if (n < ELSI_CTL_HEADER_BYTES)
        return false;
    size_t plen = (size_t)d->buf[6] << 8 | d->buf[7];
    if (plen > ELSI_CTL_MAX_PAYLOAD) {
        d->len = 0;
        d->skip = plen;
        char t[96];
        snprintf(t, sizeof t, "frame of %zu bytes (at most %u)", plen,
                 ELSI_CTL_MAX_PAYLOAD);
        msg_error(msg, 0, ELS_EMSGSIZE, t);
        *report = true;
        return false;
    }
    if (n < ELSI_CTL_HEADER_BYTES + plen)
        return false;
    decode_frame(d, plen, msg);
    d->len = 0;
    d->in_garbage = false;
    return true;
}

size_t elsi_ctl_decode(struct elsi_ctl_decoder *d, const uint8_t *in,
                       size_t len, struct elsi_ctl_msg *msg, bool *got)
{
    *got = false;
    size_t i = 0;
    while (i < len) {
        if (d->skip > 0) {
            size_t k = len - i < d->skip ? len - i : d->skip;
            d->skip -= k;
            i += k;
            continue;
        }
        uint8_t b = in[i];
        if (d->len == 0) {
            if (b != ELSI_ES_MAGIC0 && b != (uint8_t)ELSI_CTL_MAGIC[0]) {
                i++;
                if (!d->in_garbage) {
                    d->in_garbage = true;
                    msg_error(msg, 0, ELS_EINVAL, "not a control message "
                              "(expected a frame starting with \"ELSC\" or "
                              "eventlog-socket's magic F0 9E 97 8C)");
                    *got = true;
                    return i;
                }
                continue;
            }
        }
        d->buf[d->len++] = b;
        i++;
        bool report, retry;
        bool done = decode_step(d, msg, &report, &retry);
        if (retry && (b == ELSI_ES_MAGIC0 || b == (uint8_t)ELSI_CTL_MAGIC[0]))
            i--;    /* this byte may start the next message */
        if (done || report) {
            *got = true;
            return i;
        }
    }
    return i;
}

size_t elsi_ctl_encode_answer(uint8_t *buf, size_t cap, unsigned version,
                              unsigned kind, uint32_t request_id, int status,
                              const char *text)
{
    size_t tlen = text != NULL ? strlen(text) : 0;
    if (tlen > ELSI_CTL_MAX_ANSWER_TEXT)
        tlen = ELSI_CTL_MAX_ANSWER_TEXT;
    size_t n = ELSI_CTL_ANSWER_HEADER_BYTES + tlen;
    if (buf == NULL || cap < n)
        return 0;
    uint32_t st = (uint32_t)status;
    memcpy(buf, ELSI_CTL_ANSWER_MAGIC, 4);
    buf[4] = (uint8_t)version;
    buf[5] = (uint8_t)kind;
    for (int k = 0; k < 4; k++) {
        buf[6 + k] = (uint8_t)(request_id >> (24 - 8 * k));
        buf[10 + k] = (uint8_t)(st >> (24 - 8 * k));
    }
    buf[14] = (uint8_t)(tlen >> 8);
    buf[15] = (uint8_t)tlen;
    memcpy(buf + ELSI_CTL_ANSWER_HEADER_BYTES, text, tlen);
    return n;
}

void elsi_ctl_proof(const uint8_t *secret, size_t secret_len,
                    const uint8_t challenge[ELSI_CTL_CHALLENGE_BYTES],
                    const uint8_t nonce[ELSI_CTL_NONCE_BYTES], unsigned flags,
                    uint8_t proof[ELSI_CTL_PROOF_BYTES])
{
    uint8_t m[sizeof ELSI_CTL_PROOF_LABEL + ELSI_CTL_CHALLENGE_BYTES +
              ELSI_CTL_NONCE_BYTES + 1];
    size_t n = 0;
    memcpy(m, ELSI_CTL_PROOF_LABEL, sizeof ELSI_CTL_PROOF_LABEL);
    n += sizeof ELSI_CTL_PROOF_LABEL;
    memcpy(m + n, challenge, ELSI_CTL_CHALLENGE_BYTES);
    n += ELSI_CTL_CHALLENGE_BYTES;
    memcpy(m + n, nonce, ELSI_CTL_NONCE_BYTES);
    n += ELSI_CTL_NONCE_BYTES;
    m[n++] = (uint8_t)flags;
    elsi_hmac_sha256(secret, secret_len, m, n, proof);
}

int els_control_proof(const void *secret, size_t secret_len,
                      const uint8_t challenge[ELS_CONTROL_CHALLENGE_BYTES],
                      const uint8_t nonce[ELS_CONTROL_NONCE_BYTES],
                      unsigned hello_flags,
                      uint8_t proof[ELS_CONTROL_PROOF_BYTES])
{
    if (secret == NULL || secret_len == 0 ||
        secret_len > ELSI_CTL_MAX_SECRET || challenge == NULL ||
        nonce == NULL || proof == NULL || hello_flags > 0xff)
        return ELS_EINVAL;
    elsi_ctl_proof(secret, secret_len, challenge, nonce, hello_flags, proof);
    return 0;
}
