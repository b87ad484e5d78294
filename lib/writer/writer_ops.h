/*
 * writer_ops.h: what the writer offers the layer above it (the control
 * channel, lib/control/).  The writer calls that layer only through one
 * ops table, struct elsi_writer_ops, handed to elsi_writer_open() (as
 * nng's core calls a transport only through its ops, and libuv a handle's
 * owner only through the callbacks it gave); the layer sees the writer and
 * its consumers only through the functions below, under the writer's
 * rules.  So the writer never names the layer above, and that layer never
 * reaches into struct els_writer, its lock or its queue.
 *
 * Not this header's job: the writer's own parts (writer_impl.h), what the
 * ops do (lib/control/), putting the two together (lib/open.c).
 */
#ifndef ELS_WRITER_OPS_H
#define ELS_WRITER_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "eventlog-sink.h"
#include "base/clock.h"
#include "base/log.h"
#include "sinks/spec.h"

struct elsi_consumer;

/* At most one line per interval for a message that can repeat. */
#define ELSI_LOG_INTERVAL_MS 1000u

/* Why delivery calls the attach op (only then: other consumers have no
 * business with the layer above until they send something). */
enum elsi_attach_kind {
    /* Accepted on the layer's listen_fd: never sent stream bytes. */
    ELSI_ATTACH_ENDPOINT,
    /* A dialled socket not trusted under policy=block (Note [Trusted
     * consumers]): the layer may let it prove itself. */
    ELSI_ATTACH_UNTRUSTED_COLLECTOR
};

/*
 * The table.  "Writer thread" members are called from the writer's poll
 * loop with no lock held and must never block (they read and write only
 * non-blocking descriptors); state is what open returned (NULL when the
 * layer keeps nothing for w: every member taking it must accept NULL),
 * session a consumer's slot for the layer (NULL until the layer fills
 * it).  Every
 * member is required unless it says "may be NULL"; elsi_writer_open()
 * refuses a table that lacks one (ELS_EINVAL), before it opens anything.
 */
struct elsi_writer_ops {
    /* sizeof (struct elsi_writer_ops) as the layer was built. */
    size_t struct_size;
    /* At open, after the sink opened and before the writer thread starts,
     * on the caller's thread; may block briefly (it reads files).  Sets
     * *state (NULL: nothing to keep for this writer).  0, or ELS_EINVAL /
     * ELS_ENOMEM / another code with one line in err: the open fails and
     * no other member is called for w. */
    int (*open)(struct els_writer *w, void **state, char *err, size_t err_len);
    /* The layer's own listening descriptor (-1: none now).  Writer thread,
     * and once at open (see endpoint).  May be NULL (never one). */
    int (*listen_fd)(void *state);
    /* Accept one client on it: 0 with *fd, -EAGAIN when none is waiting,
     * or a negative errno (the listener rests, as a sink's does).  Called
     * only once listen_fd gave a descriptor (so state is not NULL).  Writer
     * thread.  Required when listen_fd is given. */
    int (*accept)(void *state, int *fd);
    /* Where that descriptor listens, in spec form with its path absolute
     * ("unix:/run/app.ctl"), as snprintf; negative when the layer has no
     * descriptor of its own.  Read once, with listen_fd, on the thread
     * that opens the writer, for the discovery entry (announce.h).  May
     * be NULL (never one). */
    int (*endpoint)(void *state, char *buf, size_t len);
    /* A consumer joined, for the reason kind says.  May set *session and
     * queue notes (elsi_consumer_note_text()).  0, or for an endpoint
     * client ELS_ENOMEM / -ENOBUFS (over consumer-memory=): delivery then
     * closes it and counts nothing but the memory refusal; a collector's
     * attach does not fail (the layer logs).  Writer thread. */
    int (*attach)(struct els_writer *w, void *state, struct elsi_consumer *c,
                  enum elsi_attach_kind kind, void **session);
    /* c is readable (POLLIN).  Read it with elsi_consumer_read() and act;
     * false when the layer takes no input from c (delivery then reads and
     * discards it).  Writer thread. */
    bool (*input)(struct els_writer *w, void *state, struct elsi_consumer *c,
                  void **session);
    /* c has a session: when that session takes the place of c's stream (a
     * control-only client), serve it (elsi_consumer_send()) and return
     * true; delivery then counts c as caught up.  Writer thread. */
    bool (*serve_only)(struct els_writer *w, struct elsi_consumer *c, void *session);
    /* Before c's unit seq (at_end: it is DATA_END), or with c caught up:
     * queue the session's in-band answers due there
     * (elsi_consumer_note_text()).  Writer thread. */
    void (*due)(struct els_writer *w, struct elsi_consumer *c, void *session,
                uint64_t seq, bool at_end);
    /* c is being freed: free its session (never NULL here).  Writer thread,
     * or the thread closing a writer in a forked child. */
    void (*session_free)(struct els_writer *w, void *session);
    /* Once per round of the poll loop: route work finished elsewhere to
     * its consumers.  Writer thread; state may be NULL. */
    void (*tick)(struct els_writer *w, void *state);
    /* The writer thread is ending (its last call into the layer for w):
     * after this the layer must not touch w.  state may be NULL. */
    void (*detach)(struct els_writer *w, void *state);
    /* w is being freed (any thread): drop state (may be NULL). */
    void (*release)(void *state);
};

/* Open a writer whose layer above is ctl_ops (els_writer_open()'s contract
 * otherwise).  ELS_EINVAL when the table lacks a required member. */
int elsi_writer_open(const char *spec, const struct elsi_writer_ops *ctl_ops,
                     struct els_writer **out, char *err, size_t err_len);

// ---------------------------------------------------------------------------
// The writer, as the layer above sees it (any thread unless said)
// ---------------------------------------------------------------------------

const struct elsi_spec *elsi_writer_spec(const struct els_writer *w);
/* What the sink calls itself ("unix:/run/x.sock"): for log lines. */
const char *elsi_writer_endpoint(const struct els_writer *w);
/* The limiter for lines about consumers (writer thread). */
struct elsi_ratelimit *elsi_writer_consumer_log(struct els_writer *w);
/* The sequence number the next committed unit will have (read under the
 * writer's lock): an answer queued now is due there. */
uint64_t elsi_writer_committed(struct els_writer *w);
/* The dump-on= evaluator's counters of s in one phrase ("dump-on read N
 * units, ..."), as snprintf. */
int elsi_trigger_stats_format(const struct els_stats *s, char *buf, size_t len);
/* Wake the writer thread (a finished command's answer is waiting). */
void elsi_writer_send_wake(struct els_writer *w);
/* els_writer_dump() in two steps, for a caller that must let go of a
 * lock of its own in between (the control channel's ring-dump): enter
 * counts the caller in flight (0, ELS_EINVAL: no recorder, ELS_ESTOPPED),
 * so w stays until wait, after a 0, has answered.  No lock held. */
int elsi_writer_dump_enter(struct els_writer *w);
int elsi_writer_dump_wait(struct els_writer *w, char *name, size_t name_len);

// ---------------------------------------------------------------------------
// Consumers, as the layer above sees them (writer thread only)
// ---------------------------------------------------------------------------

uint64_t elsi_consumer_id(const struct elsi_consumer *c);
int elsi_consumer_fd(const struct elsi_consumer *c);
bool elsi_consumer_dead(const struct elsi_consumer *c);
/* The attached consumer with this id (dead or not), or NULL. */
struct elsi_consumer *elsi_consumer_find(struct els_writer *w, uint64_t id);
void *elsi_consumer_session(const struct elsi_consumer *c);
/* An accepted socket client (not dialled, not a file, not a callback). */
bool elsi_consumer_accepted(const struct elsi_consumer *c);
/* c shut its sending side, or is polled for input no more. */
bool elsi_consumer_input_ended(const struct elsi_consumer *c);
/* Mark c to be closed and freed (no line logged). */
void elsi_consumer_close(struct elsi_consumer *c);
/* Poll c for input no more (it was refused, or said its last). */
void elsi_consumer_stop_reading(struct elsi_consumer *c);
/* Wake the loop for c at ms (CLOCK_MONOTONIC, elsi_now_ms()); 0: never. */
void elsi_consumer_wake_at(struct elsi_consumer *c, uint64_t ms);
/* Whether c may hold producers back under policy=block (Note [Trusted
 * consumers]). */
void elsi_consumer_set_trusted(struct elsi_consumer *c, bool trusted);
/* Is a UNIX peer whose SO_PEERCRED uid is uid (-1: unknown) this
 * program's user (effective uid self) or root: may it hold the program
 * back, or control it?  Any thread. */
bool elsi_peer_uid_trusted(long uid, uid_t self);
/* c will never read the stream (a control-only client): it stops
 * awaiting a join snapshot (Note [Late joiners]). */
void elsi_consumer_stream_off(struct els_writer *w, struct elsi_consumer *c);
/* Read what c sent, once, into the writer thread's buffer (*data, good
 * until the next call; at most max bytes): n > 0; 0 when nothing came or
 * c shut its sending side (then polled for input no more); or -errno of
 * a failed read, c left as it was. */
ssize_t elsi_consumer_read(struct els_writer *w, struct elsi_consumer *c,
                           size_t max, const uint8_t **data);
/* Write to c's descriptor: bytes written, -EAGAIN (c is then polled for
 * room), or another -errno. */
ssize_t elsi_consumer_send(struct elsi_consumer *c, const void *p, size_t n);
/* Queue an in-band note with msg for c (kills c if it cannot be queued
 * within consumer-memory=). */
void elsi_consumer_note_text(struct els_writer *w, struct elsi_consumer *c,
                             const char *msg);
/* Note [Control memory]: count n more bytes against consumer-memory=:
 * true, or false (nothing counted) when they would pass it. */
bool elsi_consumer_memory_take(struct els_writer *w, size_t n);
void elsi_consumer_memory_give(struct els_writer *w, size_t n);
/* c asked for more than consumer-memory= has room for (what: for what):
 * closed, counted in consumers_dropped_memory, logged. */
void elsi_consumer_over_memory(struct els_writer *w, struct elsi_consumer *c,
                               const char *what);

#endif /* ELS_WRITER_OPS_H */
