/*
 * control_impl.h: what the files of the control channel share: the
 * writer's side (struct elsi_control), a client's session, a command and
 * a job, and the functions each file offers the others.  Which file does
 * what: control.c (a writer's control state and the writer's ops),
 * table.c (the command table and the commands that need no RTS),
 * worker.c (the control thread), session.c (a client's session: input,
 * answers, commands), auth.c (who may control: peers, challenges,
 * proofs), collector.c (a connect-out collector's proof), listener.c
 * (control=unix:PATH's socket).  Not its job: what delivery offers
 * (writer/writer_ops.h), the byte layout (codec.h).
 */
#ifndef ELS_CONTROL_IMPL_H
#define ELS_CONTROL_IMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "control/codec.h"
#include "control/control.h"
#include "writer/writer_ops.h"

#define CTL_NAME_MAX 31

struct elsi_ctl_command {
    char ns[256];
    unsigned id;                        /* 0: text name only */
    char name[CTL_NAME_MAX + 1];        /* "" for id-only commands */
    const char *help;
    elsi_ctl_builtin_fn builtin;
    els_control_fn user_fn;
    void *user;
    unsigned flags;
};

struct elsi_ctl_job;

/* A writer's control state (control.c): Note [Control lifetimes]. */
struct elsi_control {
    pthread_mutex_t mu;
    unsigned refs;                  /* Note [Control lifetimes] */
    struct els_writer *w;           /* NULL once detached */
    struct elsi_ctl_job *done, *done_tail;
    uint8_t secret[ELSI_CTL_MAX_SECRET];
    size_t secret_len;              /* 0: no secret (UNIX peers only) */
    /* control=unix:PATH: the unix: sink state of its socket
     * (listener.c); NULL otherwise.  Writer thread, then the freeing
     * thread. */
    void *listener;
};

/* Bounds that keep a client from costing the program more than a little. */
#define CTL_SESSION_IN_FLIGHT 4u        /* commands queued or running */
#define CTL_QUEUE_MAX 64u               /* all sessions together */
#define CTL_OUT_MAX (64u * 1024)        /* unread answers of one session */
#define CTL_READ_BYTES 4096u            /* input taken per wake-up */

/* A client's session (session.c; writer thread only). */
struct elsi_ctl_session {
    struct elsi_ctl_decoder dec;
    bool checked;                   /* peer looked at */
    bool unix_peer, peer_ok;        /* UNIX peer with our uid or root */
    bool inet_peer, secret_ok;      /* TCP peer that proved the secret */
    /* Note [Challenges]: the one open challenge, and what it binds. */
    bool challenged;
    bool locked;                    /* a wrong proof: no more attempts */
    uint8_t challenge[ELSI_CTL_CHALLENGE_BYTES];
    uint8_t hello_nonce[ELSI_CTL_NONCE_BYTES];
    unsigned hello_flags;
    unsigned version;               /* 0 before a hello; 1: a v1 client,
                                     * answered in its framing */
    unsigned long peer_uid;
    bool control_only;
    /* On a control=unix: socket: answered in frames only, and refused
     * unless its first message is a control-only hello. */
    bool endpoint_only;
    unsigned in_flight;
    uint8_t *out;                   /* control-only: answer frames */
    size_t out_len, out_off, out_cap;
    /* On a control=unix: socket, the client is refused at this time
     * (CLOCK_MONOTONIC ms) unless its control-only hello came first:
     * Note [Control-only hello deadline]. */
    uint64_t hello_by_ms;
    bool refused;                   /* told so; closed once that is sent */
    size_t charged;                 /* Note [Control memory] */
    /* A connect-out collector's proof (Note [Collector proof]). */
    bool collector, collector_done;
    uint8_t collector_want[ELSI_CTL_PROOF_BYTES];
    uint8_t collector_got[ELSI_CTL_HEADER_BYTES + ELSI_CTL_PROOF_BYTES];
    size_t collector_got_len;
    struct elsi_ctl_note *notes, *notes_tail;    /* in-band answers */
    size_t notes_bytes;             /* their text, at most CTL_OUT_MAX */
    struct elsi_ctl_msg msg;        /* the message being handled */
    bool ended;                     /* the stream's DATA_END is unit */
    uint64_t end_seq;
};

struct elsi_ctl_note {
    struct elsi_ctl_note *next;
    uint64_t after_seq;             /* due once units before it are sent */
    char text[ELSI_CTL_MAX_ANSWER_TEXT + 64];
};

/* A command on its way to the control thread and back (worker.c). */
struct elsi_ctl_job {
    struct elsi_ctl_job *next;
    struct elsi_control *ctl;
    uint64_t consumer_id;
    uint32_t request_id;
    bool es;                        /* an eventlog-socket message */
    struct elsi_ctl_command cmd;         /* a copy: the table only grows */
    char label[300];                /* what the answer repeats */
    char args[ELSI_CTL_MAX_PAYLOAD + 1];
    int status;
    char out[ELSI_CTL_MAX_ANSWER_TEXT];
};

// ---------------------------------------------------------------------------
// Between the files
// ---------------------------------------------------------------------------

/* control.c */
int elsi_ctl_read_secret(const char *opt, const char *path, uint8_t *secret,
                         size_t *secret_len, char *err, size_t err_len);
void elsi_ctl_unref(struct elsi_control *ctl);

/* table.c: look a command up and copy it (the table only grows): by
 * namespace and id, or from "name args" (label: what an answer repeats;
 * *args: the rest); around fork(), its lock (worker.c). */
bool elsi_ctl_lookup_id(const char *ns, size_t ns_len, unsigned id,
                        struct elsi_ctl_command *copy);
struct elsi_ctl_command *elsi_ctl_lookup_text(const char *text, char *label,
                                         size_t label_len, const char **args,
                                         struct elsi_ctl_command *copy);
void elsi_ctl_table_lock(void);
void elsi_ctl_table_unlock(void);

/* worker.c: queue j for the control thread, starting it in this process
 * if needed: 0 or ELS_EBUSY (queue full) or the pthread_create error. */
int elsi_ctl_worker_submit(struct elsi_ctl_job *j);
void elsi_ctl_free_jobs(struct elsi_ctl_job *j);

/* session.c: the writer's session ops (writer/writer_ops.h), a new session
 * in a consumer's slot (0, ELS_ENOMEM, -ENOBUFS over consumer-memory=),
 * a control=unix: client's session, an answer on c (a frame for a
 * control-only client, else an in-band note due after every unit
 * committed so far), and bytes for a control-only client's answers. */
void elsi_ctl_session_free(struct els_writer *w, void *session);
bool elsi_ctl_input(struct els_writer *w, void *state, struct elsi_consumer *c,
                    void **slot);
bool elsi_ctl_serve_only(struct els_writer *w, struct elsi_consumer *c,
                         void *session);
void elsi_ctl_due(struct els_writer *w, struct elsi_consumer *c, void *session,
                  uint64_t seq, bool at_end);
int elsi_ctl_session_new(struct els_writer *w, void **slot);
int elsi_ctl_endpoint_session(struct els_writer *w, struct elsi_consumer *c,
                              void **slot);
void elsi_ctl_answer(struct els_writer *w, struct elsi_consumer *c, unsigned kind,
                     uint32_t id, bool es, const char *label, int status,
                     const char *text);
void elsi_ctl_out_append(struct els_writer *w, struct elsi_consumer *c,
                         const uint8_t *p, size_t n);

/* auth.c: look at c's peer once; may c run commands (0, or the error
 * and its text); fresh random bytes without blocking (0 or -errno); a
 * hello; a proof. */
void elsi_ctl_check_peer(struct els_writer *w, struct elsi_consumer *c);
int elsi_ctl_allowed(const struct elsi_control *ctl, struct elsi_consumer *c,
                     char *why, size_t why_len);
int elsi_ctl_challenge_bytes(uint8_t *p, size_t n);
void elsi_ctl_on_hello(struct els_writer *w, const struct elsi_control *ctl,
                       struct elsi_consumer *c, const struct elsi_ctl_msg *m);
void elsi_ctl_on_proof(struct els_writer *w, const struct elsi_control *ctl,
                       struct elsi_consumer *c, const struct elsi_ctl_msg *m);

/* collector.c (Note [Collector proof]): at open, for every spec; a
 * dialled untrusted socket consumer's challenge; its input. */
int elsi_ctl_collector_open(struct els_writer *w, char *err, size_t err_len);
void elsi_ctl_collector_challenge(struct els_writer *w, struct elsi_consumer *c,
                                  void **slot);
void elsi_ctl_collector_input(struct els_writer *w, struct elsi_consumer *c,
                              struct elsi_ctl_session *s);

#endif /* ELS_CONTROL_IMPL_H */
