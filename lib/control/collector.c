/*
 * collector.c: trust for a connect-out sink's collector under
 * policy=block (Note [Collector proof]): the start-up line that says
 * which collector is trusted, the challenge sent to one that is not yet,
 * and the check of its proof.
 *
 * Not this file's job: deciding who is trusted to begin with
 * (writer/consumer.c, Note [Trusted consumers]), a control client's
 * proof (auth.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "control/control_impl.h"
#include "eventlog-sink.h"
#include "base/log.h"
#include "control/sha256.h"

/*
 * Note [Collector proof]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * Under policy=block a connect-out sink's collector holds the program
 * whenever it stops reading, so it must be one the user meant (Note
 * [Trusted consumers]): whoever listens first at a TCP port, or at a
 * socket path another user could bind, would otherwise freeze the
 * program.  A TCP collector (and a UNIX one of another uid) earns trust by
 * proving it knows the secret of collector-secret=FILE, the way a control
 * client proves control-secret= (Note [Challenges]), with the roles
 * turned: the program is the one that connects and the one that checks.
 *   - Right after the header, before any unit, the program sends the
 *     collector an in-band note (EVENT_LOG_MSG in a global block, like
 *     every note): "eventlog-sink collector challenge " and 64 lowercase
 *     hex digits, C (32 fresh bytes from getrandom()).
 *   - The collector answers on the same connection with one frame of the
 *     control protocol, kind 04: "ELSC" 02 04 00 20, then P =
 *     HMAC-SHA256(secret, "eventlog-sink collector proof v1" NUL || C):
 *     40 bytes, the first bytes it ever sends.
 *   - The program compares P in constant time.  Right: the consumer is
 *     trusted from then on (logged).  Anything else (another frame, other
 *     bytes, a wrong MAC): it stays untrusted for that connection (logged,
 *     no second try), and is served as under policy=drop, as it was while
 *     the proof was on its way.
 * The label differs from the control proof's, so neither proof can be
 * replayed as the other, and the program never computes a proof for
 * anyone, so it cannot be used as an oracle.  What it does not stop: a
 * listener that relays the connection to the real collector and back (an
 * active man in the middle), as for control; nor does it hide the stream.
 * The secret is read at open (checked there with control-secret='s rules)
 * and again at each connection, so a collector's secret can be changed
 * without restarting the program; the program keeps only the expected
 * MAC, wiped when the proof is checked.
 */
#define COLLECTOR_PROOF_LABEL "eventlog-sink collector proof v1"
#define COLLECTOR_CHALLENGE_PREFIX "eventlog-sink collector challenge "
#define ELSI_CTL_KIND_COLLECTOR_PROOF 4u

int elsi_ctl_collector_open(struct els_writer *w, char *err, size_t err_len)
{
    const struct elsi_spec *sp = elsi_writer_spec(w);
    bool connect_out = strcmp(sp->scheme, "tcp-connect") == 0 ||
                       strcmp(sp->scheme, "unix-connect") == 0;
    if (sp->collector_secret != NULL) {
        uint8_t secret[ELSI_CTL_MAX_SECRET];
        size_t len;
        int r = elsi_ctl_read_secret("collector-secret", sp->collector_secret, secret,
                                     &len, err, err_len);
        elsi_wipe(secret, sizeof secret);
        if (r != 0)
            return r;
    }
    if (!connect_out || sp->policy != ELSI_POLICY_BLOCK)
        return 0;
    bool tcp = strcmp(sp->scheme, "tcp-connect") == 0;
    char own[160];
    snprintf(own, sizeof own, tcp ? "" : "a collector listening as uid %lu or "
             "root is trusted; ", (unsigned long)geteuid());
    if (sp->trust)
        elsi_log(ELS_LOG_INFO, "%s: policy=block: the collector is trusted "
                 "(trust=1): the program waits while it does not read",
                 elsi_writer_endpoint(w));
    else if (sp->collector_secret != NULL)
        elsi_log(ELS_LOG_INFO, "%s: policy=block: %sanother collector is "
                 "trusted once it proves the secret of collector-secret=%s, "
                 "and served as under policy=drop until then", elsi_writer_endpoint(w),
                 own, sp->collector_secret);
    else
        elsi_log(ELS_LOG_INFO, "%s: policy=block: %s%s collector is not "
                 "trusted: served as under policy=drop (give "
                 "collector-secret= or trust=1)", elsi_writer_endpoint(w), own,
                 tcp ? "a TCP" : "any other");
    return 0;
}

/* A dialled socket consumer that is not trusted yet and whose spec has
 * collector-secret=: queue its challenge (the first note after the
 * header) and await the proof. */
void elsi_ctl_collector_challenge(struct els_writer *w, struct elsi_consumer *c,
                                  void **slot)
{
    const struct elsi_spec *sp = elsi_writer_spec(w);
    if (sp->collector_secret == NULL || *slot != NULL)
        return;
    uint8_t secret[ELSI_CTL_MAX_SECRET];
    size_t len = 0;
    char err[300] = "";
    uint8_t challenge[ELSI_CTL_CHALLENGE_BYTES];
    int r = elsi_ctl_read_secret("collector-secret", sp->collector_secret, secret, &len,
                                 err, sizeof err);
    if (r == 0 && elsi_ctl_challenge_bytes(challenge, sizeof challenge) != 0)
        r = elsi_fail(err, sizeof err, ELS_EBUSY, "no random bytes for a "
                      "challenge yet");
    if (r == 0)
        r = elsi_ctl_session_new(w, slot);
    if (r != 0) {
        elsi_wipe(secret, sizeof secret);
        elsi_log_limited(elsi_writer_consumer_log(w), ELSI_LOG_INTERVAL_MS, ELS_LOG_WARN,
                         "%s: collector %" PRIu64 " not challenged (stays "
                         "untrusted): %s", elsi_writer_endpoint(w), elsi_consumer_id(c),
                         err[0] ? err : els_strerror(r));
        return;
    }
    struct elsi_ctl_session *s = *slot;
    s->collector = true;
    uint8_t m[sizeof COLLECTOR_PROOF_LABEL + ELSI_CTL_CHALLENGE_BYTES];
    memcpy(m, COLLECTOR_PROOF_LABEL, sizeof COLLECTOR_PROOF_LABEL);
    memcpy(m + sizeof COLLECTOR_PROOF_LABEL, challenge, sizeof challenge);
    elsi_hmac_sha256(secret, len, m, sizeof m, s->collector_want);
    elsi_wipe(secret, sizeof secret);
    char text[sizeof COLLECTOR_CHALLENGE_PREFIX + 2 * ELSI_CTL_CHALLENGE_BYTES];
    size_t off = (size_t)snprintf(text, sizeof text, "%s",
                                  COLLECTOR_CHALLENGE_PREFIX);
    for (size_t i = 0; i < sizeof challenge; i++)
        off += (size_t)snprintf(text + off, sizeof text - off, "%02x",
                                challenge[i]);
    elsi_consumer_note_text(w, c, text);
}

/* Input from such a consumer: the proof, once; trusted when right. */
void elsi_ctl_collector_input(struct els_writer *w, struct elsi_consumer *c,
                              struct elsi_ctl_session *s)
{
    const uint8_t *data;
    ssize_t n = elsi_consumer_read(w, c, SIZE_MAX, &data);
    if (n < 0)
        elsi_consumer_close(c);
    if (n <= 0)
        return;
    if (s->collector_done)
        return;     /* one proof per connection; the rest is discarded */
    size_t want = sizeof s->collector_got - s->collector_got_len;
    size_t k = (size_t)n < want ? (size_t)n : want;
    memcpy(s->collector_got + s->collector_got_len, data, k);
    s->collector_got_len += k;
    if (s->collector_got_len < sizeof s->collector_got)
        return;
    s->collector_done = true;
    static const uint8_t head[ELSI_CTL_HEADER_BYTES] = {
        'E', 'L', 'S', 'C', ELSI_CTL_VERSION, ELSI_CTL_KIND_COLLECTOR_PROOF,
        0, ELSI_CTL_PROOF_BYTES
    };
    bool ok = memcmp(s->collector_got, head, sizeof head) == 0 &&
              elsi_ct_equal(s->collector_got + sizeof head, s->collector_want,
                            ELSI_CTL_PROOF_BYTES);
    elsi_wipe(s->collector_want, sizeof s->collector_want);
    if (ok) {
        elsi_consumer_set_trusted(c, true);
        elsi_log(ELS_LOG_INFO, "%s: collector %" PRIu64 " proved the secret "
                 "of collector-secret=: trusted%s", elsi_writer_endpoint(w), elsi_consumer_id(c),
                 elsi_writer_spec(w)->policy == ELSI_POLICY_BLOCK
                     ? " (policy=block waits for it)" : "");
    } else {
        elsi_log_limited(elsi_writer_consumer_log(w), ELSI_LOG_INTERVAL_MS, ELS_LOG_WARN,
                         "%s: collector %" PRIu64 " gave a wrong proof of "
                         "collector-secret=: not trusted (served as under "
                         "policy=drop)", elsi_writer_endpoint(w), elsi_consumer_id(c));
    }
}
