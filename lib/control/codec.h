/*
 * codec.h: the bytes of the control channel (docs/CONTROL.md): decoding
 * what a client sends (this project's frames and eventlog-socket's binary
 * messages, interleaved in any order) and encoding the answers.  The
 * decoder is incremental, bounded (it never holds more than one frame) and
 * total: any byte sequence decodes into messages and errors, and an error
 * never stops it (it resynchronises at the next magic).
 *
 * Not its job: what a command does (table.c, lib/ghc/commands.c), who
 * may send one (auth.c: it checks the proofs computed here), the
 * eventlog note an in-band answer travels in (format/evformat.c).
 */
#ifndef ELS_CONTROL_CODEC_H
#define ELS_CONTROL_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* This project's frames: "ELSC" version kind length[2] payload. */
#define ELSI_CTL_MAGIC          "ELSC"
#define ELSI_CTL_ANSWER_MAGIC   "ELSR"
#define ELSI_CTL_VERSION        2u
/* The version whose hello carried the secret in clear: its hello is
 * still decoded, to answer it ELS_EVERSION in its own framing. */
#define ELSI_CTL_VERSION_1      1u
#define ELSI_CTL_HEADER_BYTES   8u
#define ELSI_CTL_MAX_PAYLOAD    1024u
#define ELSI_CTL_KIND_HELLO     1u
#define ELSI_CTL_KIND_COMMAND   2u
#define ELSI_CTL_KIND_PROOF     3u
#define ELSI_CTL_KIND_HELLO_ANSWER   0x81u
#define ELSI_CTL_KIND_COMMAND_ANSWER 0x82u
#define ELSI_CTL_KIND_CHALLENGE      0x83u
/* Answer frame: magic[4] version kind request-id[4] status[4] length[2]. */
#define ELSI_CTL_ANSWER_HEADER_BYTES 16u
#define ELSI_CTL_MAX_ANSWER_TEXT     1024u
#define ELSI_CTL_NONCE_BYTES    16u     /* the client's, in its hello */
#define ELSI_CTL_CHALLENGE_BYTES 32u    /* the program's, in a challenge */
#define ELSI_CTL_PROOF_BYTES    32u     /* HMAC-SHA256 */
#define ELSI_CTL_MAX_SECRET     255u
#define ELSI_CTL_HELLO_CONTROL_ONLY 0x01u
/* A challenge's answer text: this prefix, then the challenge in lowercase
 * hex (the same text in an answer frame and in an in-band note). */
#define ELSI_CTL_CHALLENGE_PREFIX "challenge "
/* What the proof's MAC covers first (docs/CONTROL.md), NUL included. */
#define ELSI_CTL_PROOF_LABEL "eventlog-sink control proof v2"

/* eventlog-socket's messages: magic version nslen namespace command-id. */
#define ELSI_ES_MAGIC0 0xF0u
#define ELSI_ES_VERSION 0u
#define ELSI_ES_NAMESPACE "eventlog-socket"

enum elsi_ctl_msg_type {
    ELSI_CTL_MSG_HELLO,
    ELSI_CTL_MSG_HELLO_V1,      /* a version-1 hello: flags and nonce only
                                 * (its secret, if any, is not kept) */
    ELSI_CTL_MSG_PROOF,
    ELSI_CTL_MSG_COMMAND,       /* text command of this project's protocol */
    ELSI_CTL_MSG_ES,            /* eventlog-socket namespace + command id */
    ELSI_CTL_MSG_ERROR          /* malformed input: answer with an error */
};

struct elsi_ctl_msg {
    enum elsi_ctl_msg_type type;
    uint32_t request_id;        /* COMMAND (and ERROR inside a frame) */
    int error;                  /* ERROR: a negative ELS_E* code */
    char error_text[160];
    /* HELLO, HELLO_V1 */
    unsigned flags;
    uint8_t nonce[ELSI_CTL_NONCE_BYTES];
    /* PROOF */
    uint8_t proof[ELSI_CTL_PROOF_BYTES];
    /* COMMAND: NUL-terminated, printable, no control characters */
    char text[ELSI_CTL_MAX_PAYLOAD + 1];
    /* ES */
    char ns[256];
    size_t ns_len;
    uint8_t command_id;
};

enum elsi_ctl_dec_state { DEC_SYNC, DEC_FRAME, DEC_SKIP };

struct elsi_ctl_decoder {
    uint8_t buf[ELSI_CTL_HEADER_BYTES + ELSI_CTL_MAX_PAYLOAD];
    size_t len;                 /* bytes held in buf */
    size_t skip;                /* DEC_SKIP: payload bytes still to skip */
    bool in_garbage;            /* already reported the current junk run */
};

void elsi_ctl_decoder_init(struct elsi_ctl_decoder *d);

/* Consume bytes from in[0..len) until one message is complete.  Returns
 * the number of bytes consumed; *got says whether *msg holds a message.
 * Call again with the rest until it consumes everything. */
size_t elsi_ctl_decode(struct elsi_ctl_decoder *d, const uint8_t *in,
                       size_t len, struct elsi_ctl_msg *msg, bool *got);

/* An answer frame of protocol version (ELSI_CTL_VERSION, or
 * ELSI_CTL_VERSION_1 for a version-1 client) into buf; text is cut to
 * ELSI_CTL_MAX_ANSWER_TEXT.  Returns its length, or 0 if buf is too
 * small. */
size_t elsi_ctl_encode_answer(uint8_t *buf, size_t cap, unsigned version,
                              unsigned kind, uint32_t request_id, int status,
                              const char *text);

/* The proof of a secret for one challenge (docs/CONTROL.md): HMAC-SHA256
 * under the secret of ELSI_CTL_PROOF_LABEL with its NUL, the challenge,
 * the client's hello nonce and the hello's flags byte. */
void elsi_ctl_proof(const uint8_t *secret, size_t secret_len,
                    const uint8_t challenge[ELSI_CTL_CHALLENGE_BYTES],
                    const uint8_t nonce[ELSI_CTL_NONCE_BYTES], unsigned flags,
                    uint8_t proof[ELSI_CTL_PROOF_BYTES]);

#endif /* ELS_CONTROL_CODEC_H */
