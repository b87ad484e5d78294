/*
 * auth.c: who may control the program: a UNIX peer by its uid, a TCP
 * peer by proving the shared secret (Note [Challenges]), and the hello
 * and proof messages that settle it.
 *
 * Not this file's job: a connect-out collector's proof (collector.c),
 * what an allowed client may run (table.c, worker.c), the MAC itself
 * (codec.c, sha256.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "control/control_impl.h"
#include "control/sha256.h"
#include "eventlog-sink.h"
#include "base/log.h"

/* Look at the peer once: who it is decides what it may do. */
void elsi_ctl_check_peer(struct els_writer *w, struct elsi_consumer *c)
{
    struct elsi_ctl_session *s = elsi_consumer_session(c);
    (void)w;
    s->checked = true;
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(elsi_consumer_fd(c), (struct sockaddr *)&ss, &len) != 0)
        return;
    if (ss.ss_family == AF_UNIX) {
        s->unix_peer = true;
#if defined(SO_PEERCRED)
        struct ucred cred;
        socklen_t clen = sizeof cred;
        if (getsockopt(elsi_consumer_fd(c), SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0) {
            s->peer_uid = cred.uid;
            s->peer_ok = elsi_peer_uid_trusted((long)cred.uid, geteuid());
        }
#endif
    } else if (ss.ss_family == AF_INET || ss.ss_family == AF_INET6) {
        s->inet_peer = true;
    }
}

/*
 * Note [Challenges]
 * ~~~~~~~~~~~~~~~~~
 * A TCP peer proves it knows the secret without sending it: its hello is
 * answered with a challenge of 32 fresh random bytes, and its proof frame
 * must carry HMAC-SHA256(secret, label || challenge || hello nonce ||
 * hello flags) (elsi_ctl_proof()).  A sniffer sees a challenge and a MAC
 * that are worth nothing on any other connection, where the challenge
 * differs.  Each challenge is good for one proof: the proof frame
 * consumes it whatever it holds; a new hello replaces it.  A wrong proof
 * locks the session: every later hello, proof and command is refused, so
 * a guesser pays a TCP connection per attempt (each one logged).  The
 * session is not closed, because a stream consumer may go on reading
 * the stream, which needs no control.  The MAC is compared in constant
 * time, so the time an answer takes says nothing about the right one.
 * Challenges come from getrandom() without blocking: the writer thread
 * must not wait; if the kernel has no entropy yet the hello is refused
 * (ELS_EBUSY), never answered with a weak challenge.
 */

/* May c run commands?  0, or the error and its text. */
int elsi_ctl_allowed(const struct elsi_control *ctl,
                     struct elsi_consumer *c, char *why, size_t why_len)
{
    struct elsi_ctl_session *s = elsi_consumer_session(c);
    if (s->version == ELSI_CTL_VERSION_1) {
        snprintf(why, why_len, "control protocol version 1 is not served: "
                 "this program speaks version %u (update the client)",
                 ELSI_CTL_VERSION);
        return ELS_EVERSION;
    }
    if (s->unix_peer) {
        if (s->peer_ok)
            return 0;
        snprintf(why, why_len, "peer uid %lu may not control this program "
                 "(only uid %lu or root)", s->peer_uid,
                 (unsigned long)geteuid());
        return -EPERM;
    }
    if (s->inet_peer) {
        if (s->secret_ok)
            return 0;
        snprintf(why, why_len, "%s", ctl->secret_len == 0
                 ? "control over TCP is refused: the sink has no "
                   "control-secret="
                 : s->locked
                 ? "a wrong proof was given on this connection; connect "
                   "again to retry"
                 : "send a hello and answer its challenge with the proof "
                   "of the shared secret first");
        return -EPERM;
    }
    snprintf(why, why_len, "this connection cannot carry control");
    return -EPERM;
}

/* Fresh random bytes without blocking the writer thread: 0 or -errno. */
int elsi_ctl_challenge_bytes(uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t k = getrandom(p, n, GRND_NONBLOCK);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* The first control-only flag switches c to answer frames; the nonce it
 * chose marks where they begin. */
static void hello_control_only(struct els_writer *w, struct elsi_consumer *c,
                               const struct elsi_ctl_msg *m)
{
    struct elsi_ctl_session *s = elsi_consumer_session(c);
    if (!(m->flags & ELSI_CTL_HELLO_CONTROL_ONLY) || s->control_only)
        return;
    s->control_only = true;
    elsi_consumer_set_trusted(c, false);
    elsi_consumer_wake_at(c, 0);     /* Note [Control-only hello deadline]: met */
    elsi_consumer_stream_off(w, c);    /* it will never read a stream */
    elsi_ctl_out_append(w, c, m->nonce, ELSI_CTL_NONCE_BYTES);
}

void elsi_ctl_on_hello(struct els_writer *w, const struct elsi_control *ctl,
                       struct elsi_consumer *c, const struct elsi_ctl_msg *m)
{
    struct elsi_ctl_session *s = elsi_consumer_session(c);
    char text[200];
    if (m->type == ELSI_CTL_MSG_HELLO_V1) {
        if (s->version == 0) {
            /* Answered in version 1's framing, which it reads, so it
             * fails at once instead of waiting for answers it cannot
             * parse. */
            s->version = ELSI_CTL_VERSION_1;
            hello_control_only(w, c, m);
            elsi_log_limited(elsi_writer_consumer_log(w), ELSI_LOG_INTERVAL_MS,
                             ELS_LOG_WARN, "%s: control client %" PRIu64
                             " speaks protocol version 1 (refused; its hello "
                             "carries any secret in clear)", elsi_writer_endpoint(w),
                             elsi_consumer_id(c));
        }
        snprintf(text, sizeof text, "control protocol version 1 is not "
                 "served: this program speaks version %u (update the "
                 "client)", ELSI_CTL_VERSION);
        elsi_ctl_answer(w, c, ELSI_CTL_KIND_HELLO_ANSWER, 0, false, "hello",
                        ELS_EVERSION, text);
        return;
    }
    if (s->version == 0)
        s->version = ELSI_CTL_VERSION;
    hello_control_only(w, c, m);
    int status = 0;
    if (s->version == ELSI_CTL_VERSION && s->inet_peer && !s->secret_ok &&
        !s->locked && ctl->secret_len > 0) {
        int r = elsi_ctl_challenge_bytes(s->challenge, sizeof s->challenge);
        s->challenged = r == 0;
        if (r != 0) {
            elsi_ctl_answer(w, c, ELSI_CTL_KIND_HELLO_ANSWER, 0, false, "hello",
                            ELS_EBUSY, "no random bytes for a challenge yet; try "
                            "again");
            return;
        }
        memcpy(s->hello_nonce, m->nonce, sizeof s->hello_nonce);
        s->hello_flags = m->flags;
        size_t off = (size_t)snprintf(text, sizeof text, "%s",
                                      ELSI_CTL_CHALLENGE_PREFIX);
        for (size_t i = 0; i < sizeof s->challenge; i++)
            off += (size_t)snprintf(text + off, sizeof text - off, "%02x",
                                    s->challenge[i]);
        elsi_ctl_answer(w, c, ELSI_CTL_KIND_CHALLENGE, 0, false, "hello", 0, text);
        return;
    }
    status = elsi_ctl_allowed(ctl, c, text, sizeof text);
    if (status == 0)
        snprintf(text, sizeof text, "eventlog-sink control protocol %u; "
                 "send \"help\" for the commands", ELSI_CTL_VERSION);
    elsi_ctl_answer(w, c, ELSI_CTL_KIND_HELLO_ANSWER, 0, false, "hello", status, text);
}

/* A proof answers the open challenge, once (Note [Challenges]). */
void elsi_ctl_on_proof(struct els_writer *w, const struct elsi_control *ctl,
                       struct elsi_consumer *c, const struct elsi_ctl_msg *m)
{
    struct elsi_ctl_session *s = elsi_consumer_session(c);
    int status;
    char text[200];
    if (!s->challenged) {
        status = elsi_ctl_allowed(ctl, c, text, sizeof text);
        if (status == 0 || !s->locked) {
            status = -EPERM;
            snprintf(text, sizeof text, "no challenge to answer: a proof "
                     "answers the challenge of the hello before it");
        }
    } else {
        uint8_t want[ELSI_CTL_PROOF_BYTES];
        s->challenged = false;
        elsi_ctl_proof(ctl->secret, ctl->secret_len, s->challenge,
                       s->hello_nonce, s->hello_flags, want);
        s->secret_ok = elsi_ct_equal(want, m->proof, sizeof want);
        elsi_wipe(want, sizeof want);
        elsi_wipe(s->challenge, sizeof s->challenge);
        s->locked = !s->secret_ok;
        if (s->locked)
            elsi_log_limited(elsi_writer_consumer_log(w), ELSI_LOG_INTERVAL_MS,
                             ELS_LOG_WARN, "%s: control client %" PRIu64
                             " gave a wrong proof of the secret", elsi_writer_endpoint(w),
                             elsi_consumer_id(c));
        status = elsi_ctl_allowed(ctl, c, text, sizeof text);
        if (status == 0)
            snprintf(text, sizeof text, "eventlog-sink control protocol %u; "
                     "send \"help\" for the commands", ELSI_CTL_VERSION);
        else
            snprintf(text, sizeof text, "wrong proof of the shared secret; "
                     "this connection may not try again");
    }
    elsi_ctl_answer(w, c, ELSI_CTL_KIND_HELLO_ANSWER, 0, false, "proof", status, text);
}
