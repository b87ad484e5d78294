/*
 * eventlog-sink/control.h: commands of the program's own, run by the
 * control channel of a socket sink (spec option control=1) or of a ring:
 * sink's control socket (control=unix:PATH); the protocol and every
 * built-in command are in docs/CONTROL.md.
 *
 * A command is named by a namespace (1 to 255 bytes) and an id (1 to 255),
 * as in eventlog-socket's protocol, so eventlog-socket clients can call it
 * with its binary messages; a name gives it a text form for
 * `eventlog-sink ctl SPEC NAME [ARGS]` as well.  This project's own
 * clients can always call it as `user NAMESPACE ID [ARGS]`.
 */
#ifndef EVENTLOG_SINK_CONTROL_H
#define EVENTLOG_SINK_CONTROL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The handler of a command.  It runs on the library's control thread (one
 * command at a time, never on the writer thread and never on an RTS
 * thread), so it may block, call into the RTS through the C API, or take
 * its time; other commands wait meanwhile.  args is the text after the
 * command's name ("" for eventlog-socket messages, which carry none).
 * Write the result (or the reason for a failure) as one line of text to
 * out (out_len > 0 bytes, NUL-terminated; longer text is cut) and return
 * 0 or a negative ELS_E* code: the client receives both. */
typedef int (*els_control_fn)(void *user, const char *args, char *out,
                              size_t out_len);

/* Register fn as command id (1 to 255) of namespace ns (1 to 255 bytes,
 * printable, no space; "eventlog-sink" and "eventlog-socket" are the
 * library's).  name may be NULL, or [a-z][a-z0-9-]* of at most 31 bytes
 * that no built-in command or earlier registration uses.  Register before
 * clients may call (commands registered later are served from then on).
 * Returns 0, ELS_EINVAL (a malformed or reserved namespace, id or name),
 * ELS_EEXIST (the namespace and id, or the name, are taken) or
 * ELS_ENOMEM (the table holds 256 user commands at most).  Thread-safe. */
int els_control_register(const char *ns, unsigned id, const char *name,
                         els_control_fn fn, void *user);

/* A TCP client's proof of the shared secret (the sink's control-secret=
 * file) for one challenge, as docs/CONTROL.md ("Proving the secret")
 * defines it: HMAC-SHA256 under the secret of a fixed label, the
 * program's challenge (32 bytes, from the challenge answer's hex text),
 * the client's hello nonce (16 bytes) and the hello's flags byte.  For
 * clients written in C; the document gives every byte for the others.
 * Returns 0, or ELS_EINVAL (secret_len not 1 to 255, a NULL pointer,
 * flags above 0xff).  Thread-safe. */
#define ELS_CONTROL_NONCE_BYTES 16
#define ELS_CONTROL_CHALLENGE_BYTES 32
#define ELS_CONTROL_PROOF_BYTES 32
int els_control_proof(const void *secret, size_t secret_len,
                      const uint8_t challenge[ELS_CONTROL_CHALLENGE_BYTES],
                      const uint8_t nonce[ELS_CONTROL_NONCE_BYTES],
                      unsigned hello_flags,
                      uint8_t proof[ELS_CONTROL_PROOF_BYTES]);

#ifdef __cplusplus
}
#endif

#endif /* EVENTLOG_SINK_CONTROL_H */
