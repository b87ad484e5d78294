/*
 * ctlclient.h: the client side of the control channel (docs/CONTROL.md),
 * shared by `eventlog-sink ctl` and the monitor's keys and buttons
 * (tools/monitor/control.c).
 *
 * One control-only session: connect to a socket sink, send the hello
 * with a nonce of our own, skip the stream bytes sent before the nonce,
 * answer a challenge with the proof of the secret (TCP), then one
 * command at a time, each waited for up to a deadline.  Calls
 * block (poll with a deadline): a command is answered within
 * milliseconds by a program that has control, and the deadline bounds
 * the wait otherwise.  It speaks the protocol from its description on
 * the public headers only: the library's decoder is not used, so the
 * tests exercise two implementations against each other.  Not its job:
 * what a command means, printing answers, reading the eventlog.
 */
#ifndef ELS_TOOL_CTLCLIENT_H
#define ELS_TOOL_CTLCLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CTLC_TEXT_MAX 1024      /* command text and answer text */
#define CTLC_NONCE 16
#define CTLC_SECRET_MAX 255

struct ctlc_answer {
    unsigned kind;              /* 0x81 hello answer, 0x82 command answer */
    uint32_t id;
    int32_t status;             /* 0 or an ELS_E* code */
    char text[CTLC_TEXT_MAX + 1];
};

struct ctlc {
    int fd;                     /* -1: no session */
    uint64_t deadline_ms;
    uint32_t last_id;
    /* Answers with id 0 that are errors (a framing error of ours): the
     * count and the last one. */
    unsigned protocol_errors;
    struct ctlc_answer protocol_error;
    uint8_t buf[65536];
    size_t len;
};

/* Read a secret file (TCP) with the program's rules for its
 * control-secret= file (util_read_private(): a regular file of this user
 * or root, no group or other permission bits, 1 to CTLC_SECRET_MAX bytes,
 * one trailing newline dropped).  0, or a negative errno with one line
 * in err. */
int ctlc_read_secret(const char *path, uint8_t *secret, size_t *len,
                     char *err, size_t err_len);

/* Connect to spec (unix:PATH, tcp:[HOST:]PORT), send the hello and read
 * its answer into *hello, all within timeout_ms.  If the program answers
 * with a challenge (TCP), send the proof of the secret (secret_len 0:
 * none; then *hello is a local EPERM saying the program wants one) and
 * read its answer into *hello instead: the secret never leaves this
 * process.  0 with the session open (the program may still have
 * refused it: hello->status), or a negative code with one line in err
 * and no session: ELS_EINVAL/ELS_ENAMETOOLONG a malformed spec,
 * -ETIMEDOUT or -ECONNRESET no answer to the hello (control off?),
 * -errno connecting. */
int ctlc_open(struct ctlc *c, const char *spec, const uint8_t *secret,
              size_t secret_len, uint64_t timeout_ms, struct ctlc_answer *hello,
              char *err, size_t err_len);

/* Send command (text "NAME [ARGS]", at most CTLC_TEXT_MAX bytes) and wait
 * up to timeout_ms for its answer.  0 with *a filled (a->status says
 * whether the command succeeded), or a negative code: -ETIMEDOUT,
 * -ECONNRESET (the program closed the session), -EPROTO (not an answer),
 * -EMSGSIZE (command too long), -errno; the session is unusable then. */
int ctlc_call(struct ctlc *c, const char *command, uint64_t timeout_ms,
              struct ctlc_answer *a);

/* Has the program closed an idle session (its stream stopped or
 * restarted)?  Never blocks.  A session the program closed answers
 * nothing more: open a new one. */
bool ctlc_closed(struct ctlc *c);

void ctlc_close(struct ctlc *c);

/* An answer's text without the "NAME: " its error texts start with. */
const char *ctlc_detail(const struct ctlc_answer *a);

/* A failure of ctlc_open()/ctlc_call() in words ("timed out", ...). */
const char *ctlc_strerror(int code);

#endif /* ELS_TOOL_CTLCLIENT_H */
