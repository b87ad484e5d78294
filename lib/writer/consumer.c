/*
 * consumer.c: one consumer of the stream, on the writer thread, from
 * attach to free.  A consumer is an accepted client, a dialled descriptor
 * (FIFO, file, connect-out socket) or a callback sink; this file decides
 * whether it is trusted (Note [Trusted consumers]), where it starts (Note
 * [Late joiners]), reads its input (handing it to the layer above,
 * writer/writer_ops.h), and closes and reaps it when it fails or hangs up;
 * and it offers the layer above its view of a consumer.
 *
 * Not this file's job: every byte a consumer is sent, its private bytes
 * and their bound among them (outgoing.c), deciding when it is too slow
 * (release.c), polling (loop.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "writer/writer_impl.h"
#include "eventlog-sink.h"
#include "format/evformat.h"
#include "base/log.h"
#include "queue/unitq.h"
#include "base/fdutil.h"

/* Who is at the other end of a socket: its family (AF_UNSPEC if fd is
 * not a socket) and, for a UNIX socket, the peer's uid (-1 when unknown:
 * not connected yet).  For an accepted client SO_PEERCRED gives the
 * client's credentials, for a dialled one the listener's (taken when it
 * called listen()). */
static int consumer_peer(int fd, long *uid)
{
    *uid = -1;
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (fd < 0 || getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return AF_UNSPEC;
#if defined(SO_PEERCRED)
    if (ss.ss_family == AF_UNIX) {
        struct ucred cred;
        socklen_t clen = sizeof cred;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0 &&
            cred.pid != 0)
            *uid = (long)cred.uid;
    }
#endif
    return ss.ss_family;
}

bool elsi_peer_uid_trusted(long uid, uid_t self)
{
    return uid >= 0 && ((uid_t)uid == self || uid == 0);
}

bool elsi_consumer_trust_rule(enum elsi_consumer_style style, int family,
                              long uid, bool dialled, bool vouched,
                              uid_t self)
{
    if (style == ELSI_CONSUMER_CALLBACK)
        return true;
    if (family == AF_UNSPEC)
        return dialled;     /* a file or FIFO: its mode says who reads */
    if (dialled && vouched)
        return true;        /* the user vouches for the collector */
    return family == AF_UNIX && elsi_peer_uid_trusted(uid, self);
}

/* May a consumer on fd hold producers back under policy=block?  The
 * rule on what fd's peer is (Note [Trusted consumers]). */
static bool consumer_is_trusted(const struct els_writer *w, int fd,
                                enum elsi_consumer_style style, bool dialled)
{
    long uid = -1;
    int family = style == ELSI_CONSUMER_CALLBACK ? AF_UNSPEC
                                            : consumer_peer(fd, &uid);
    return elsi_consumer_trust_rule(style, family, uid, dialled,
                                    w->spec.trust, geteuid());
}

/* Under policy=block, say why a collector the program dialled is served
 * as under policy=drop (Note [Trusted consumers]). */
static void consumer_untrusted_collector(struct els_writer *w,
                                         const struct elsi_consumer *c)
{
    if (c->trusted || !c->dialled || w->spec.policy != ELSI_POLICY_BLOCK)
        return;
    long uid;
    int family = consumer_peer(c->fd, &uid);
    char who[64];
    if (family == AF_UNIX && uid >= 0)
        snprintf(who, sizeof who, "listening as uid %ld", uid);
    else if (family == AF_UNIX)
        return;     /* not connected yet: judged when it is */
    else
        snprintf(who, sizeof who, "over TCP");
    elsi_log_limited(&w->cons.dial_log, ELSI_LOG_INTERVAL_MS, ELS_LOG_WARN,
                     "%s: the collector (%s) is not trusted to hold the "
                     "program back: served as under policy=drop%s",
                     w->endpoint, who, w->spec.collector_secret != NULL
                         ? " until it proves collector-secret="
                         : " (give collector-secret= or trust=1)");
}

/* A new consumer on fd, not yet in the list. */
static struct elsi_consumer *consumer_new(struct els_writer *w, int fd,
                                     enum elsi_consumer_style style, bool dialled)
{
    struct elsi_consumer *c = calloc(1, sizeof *c);
    if (c == NULL) {
        if (fd >= 0)
            elsi_close(fd);
        elsi_log(ELS_LOG_ERROR, "out of memory attaching a consumer");
        return NULL;
    }
    c->id = ++w->cons.next_consumer_id;
    c->style = style;
    c->fd = fd;
    c->dialled = dialled;
    c->trusted = consumer_is_trusted(w, fd, style, dialled);
    if (!c->trusted && w->spec.policy == ELSI_POLICY_BLOCK && !dialled)
        elsi_log(ELS_LOG_DEBUG, "%s: consumer %" PRIu64 " is not trusted to "
                 "hold the program back: served as under policy=drop",
                 w->endpoint, c->id);
    if (fd >= 0) {
        struct stat sb;
        c->is_socket = elsi_is_socket(fd);
        c->is_regular = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
        if (c->is_regular)
            c->file_piece_start = lseek(fd, 0, SEEK_CUR);
        else
            elsi_set_nonblock(fd);
    }
    c->join_start = JOIN_NONE;
    return c;
}

struct elsi_consumer *elsi_consumer_attach(struct els_writer *w, int fd,
                                        enum elsi_consumer_style style, bool dialled)
{
    struct elsi_consumer *c = consumer_new(w, fd, style, dialled);
    if (c == NULL)
        return NULL;
    pthread_mutex_lock(&w->lock);
    /* A late joiner starts at a join snapshot if the producer can give one
     * (Note [Late joiners]), else at the oldest unit still queued. */
    c->seq = w->queue.uq.tail_seq;
    uint64_t missed_units = w->queue.released_units, missed_bytes = w->queue.released_bytes;
    els_snapshot_request_fn request = NULL;
    void *request_ctx = w->queue.snapshot_ctx;
    if (missed_units > 0 && w->queue.header != NULL && w->queue.snapshot_request != NULL &&
        !w->life.stopping) {
        request = w->queue.snapshot_request;
        c->awaiting_snapshot = true;
        c->join_after = c->seq = w->queue.uq.head_seq;
        c->await_since_ms = elsi_now_ms();
        w->cons.awaiting++;
    }
    c->next = w->cons.list;
    w->cons.list = c;
    w->stats.st.consumers_connected++;
    w->stats.st.consumers_total++;
    pthread_cond_broadcast(&w->changed);
    pthread_mutex_unlock(&w->lock);

    if (dialled && !c->trusted && c->is_socket) {
        /* Note [Collector proof]: its challenge is the first note. */
        consumer_untrusted_collector(w, c);
        w->ctl.ops->attach(w, w->ctl.state, c,
                         ELSI_ATTACH_UNTRUSTED_COLLECTOR, &c->session);
    }
    if (request != NULL)
        request(request_ctx);
    else if (missed_units > 0)
        elsi_consumer_note_missed(w, c, "", missed_units, missed_bytes);
    elsi_log(ELS_LOG_DEBUG, "consumer %" PRIu64 " attached%s", c->id,
             request != NULL ? ", waiting for a join snapshot" : "");
    return c;
}

struct elsi_consumer *elsi_consumer_attach_control(struct els_writer *w, int fd)
{
    struct elsi_consumer *c = consumer_new(w, fd, ELSI_CONSUMER_FD, false);
    if (c == NULL)
        return NULL;
    c->trusted = false;     /* it never holds a unit */
    int r = w->ctl.ops->attach(w, w->ctl.state, c, ELSI_ATTACH_ENDPOINT,
                             &c->session);
    if (r != 0) {
        if (r == -ENOBUFS) {
            w->stats.dropped_for_memory++;
            elsi_log_limited(&w->cons.consumer_log, ELSI_LOG_INTERVAL_MS,
                             ELS_LOG_WARN, "%s: control client refused: its "
                             "session would pass the consumer-memory= bound "
                             "(%" PRIu64 " bytes)", w->endpoint,
                             w->spec.consumer_memory);
        } else {
            elsi_log(ELS_LOG_ERROR, "out of memory attaching a control client");
        }
        elsi_consumer_free(w, c, false);
        return NULL;
    }
    pthread_mutex_lock(&w->lock);
    c->seq = w->queue.uq.committed_seq;
    c->next = w->cons.list;
    w->cons.list = c;
    w->stats.st.consumers_connected++;
    w->stats.st.consumers_total++;
    pthread_mutex_unlock(&w->lock);
    elsi_log(ELS_LOG_DEBUG, "control client %" PRIu64 " attached", c->id);
    return c;
}

/* Note [Flight recorder]: units [start, end) to fd, then the end marker. */
struct elsi_consumer *elsi_consumer_attach_dump(struct els_writer *w, int fd,
                                           uint64_t start, uint64_t join_start,
                                           uint64_t end)
{
    struct elsi_consumer *c = consumer_new(w, fd, ELSI_CONSUMER_FD, false);
    if (c == NULL)
        return NULL;
    c->dump = true;
    c->seq = start;
    c->join_start = join_start;
    c->dump_end = end;
    c->unit_announced = join_start == start;    /* nothing before is its loss */
    pthread_mutex_lock(&w->lock);
    c->next = w->cons.list;
    w->cons.list = c;
    pthread_mutex_unlock(&w->lock);
    return c;
}

/* Note [Late joiners]. */
void elsi_consumers_join(struct els_writer *w, uint64_t join_seq,
                         uint64_t visible, uint64_t tail, bool ending)
{
    if (w->cons.awaiting == 0)
        return;
    uint64_t now = elsi_now_ms();
    bool ask_again = false;
    for (struct elsi_consumer *c = w->cons.list; c != NULL; c = c->next) {
        if (!c->awaiting_snapshot || c->dead)
            continue;
        bool have = join_seq != JOIN_NONE && join_seq >= c->join_after &&
                    join_seq < visible && join_seq >= tail;
        bool give_up = ending || now - c->await_since_ms >= ELS_SNAPSHOT_WAIT_MS;
        if (!have && !give_up) {
            /* A join unit of ours released before we got here. */
            ask_again |= join_seq != JOIN_NONE && join_seq >= c->join_after &&
                         join_seq < tail;
            continue;
        }
        pthread_mutex_lock(&w->lock);
        c->awaiting_snapshot = false;
        w->cons.awaiting--;
        uint64_t missed_units = w->queue.released_units, missed_bytes = w->queue.released_bytes;
        if (have) {
            c->seq = c->join_start = join_seq;
            w->stats.st.joiners_with_snapshot++;
        } else {
            c->seq = w->queue.uq.tail_seq;
            w->stats.st.joiners_without_snapshot++;
        }
        pthread_mutex_unlock(&w->lock);
        c->unit_off = 0;
        /* What came before its start is not this consumer's loss. */
        c->unit_announced = have;
        if (have)
            /* A reader should know the stream does not start with the
             * program: say so, ahead of the snapshot. */
            elsi_consumer_note(w, c, 0, "eventlog-sink: consumer %" PRIu64 " joined "
                               "mid-run; its stream starts at a snapshot of the "
                               "program's state taken then", c->id);
        else
            elsi_consumer_note_missed(w, c, ending ? " (no snapshot before the end)"
                                              : " (no snapshot in time)",
                                 missed_units, missed_bytes);
        elsi_log(ELS_LOG_DEBUG, "consumer %" PRIu64 " starts %s", c->id,
                 have ? "at a join snapshot" : "without a snapshot");
    }
    if (ask_again) {
        pthread_mutex_lock(&w->lock);
        els_snapshot_request_fn request = w->queue.snapshot_request;
        void *ctx = w->queue.snapshot_ctx;
        pthread_mutex_unlock(&w->lock);
        if (request != NULL)
            request(ctx);
    }
}

void elsi_consumer_free(struct els_writer *w, struct elsi_consumer *c, bool graceful)
{
    if (c->fd >= 0) {
        /* In a forked child the descriptor is shared with the parent:
         * shutdown() would end the parent's connection.  See Note [Fork]. */
        if (graceful && c->is_socket && !w->life.forked)
            shutdown(c->fd, SHUT_WR);
        elsi_close(c->fd);
    }
    elsi_consumer_priv_drop(w, c);
    if (c->session != NULL)
        w->ctl.ops->session_free(w, c->session);
    free(c);
}

/* Unlink dead consumers; redial if a dialled one went away. */
void elsi_consumers_reap(struct els_writer *w)
{
    pthread_mutex_lock(&w->lock);
    struct elsi_consumer *dead = NULL;
    for (struct elsi_consumer **p = &w->cons.list; *p != NULL;) {
        struct elsi_consumer *c = *p;
        if (c->dead) {
            *p = c->next;
            c->next = dead;
            dead = c;
            if (c->dump)
                elsi_dump_ended(w, c);      /* lock held: reads no more */
            else
                w->stats.st.consumers_connected--;
            if (c->awaiting_snapshot)
                w->cons.awaiting--;
        } else {
            p = &c->next;
        }
    }
    pthread_mutex_unlock(&w->lock);
    while (dead != NULL) {
        struct elsi_consumer *c = dead;
        dead = c->next;
        /* Whatever this consumer had not received is its loss; the other
         * consumers and the queue accounting are unaffected. */
        elsi_log(ELS_LOG_DEBUG, "consumer %" PRIu64 " detached", c->id);
        if (c->dialled) {
            w->cons.dial_active = false;
            w->cons.next_dial_ms = elsi_now_ms() + w->cons.dial_backoff_ms;
        }
        if (c->dump)
            elsi_dump_finish(w, c);         /* while its file is open */
        elsi_consumer_free(w, c, false);
    }
}

void elsi_consumer_kill(struct els_writer *w, struct elsi_consumer *c,
                        const char *why, int err)
{
    if (!c->dead) {
        /* A peer hanging up is routine; anything else is worth a line,
         * but many consumers can fail at once. */
        if (err == -EPIPE || err == -ECONNRESET || strcmp(why, "hung up") == 0)
            elsi_log(ELS_LOG_DEBUG, "consumer %" PRIu64 " closed: %s", c->id, why);
        else
            elsi_log_limited(&w->cons.consumer_log, ELSI_LOG_INTERVAL_MS, ELS_LOG_WARN,
                             "%s: consumer %" PRIu64 " closed: %s%s%s",
                             w->endpoint, c->id, why, err ? ": " : "",
                             err ? els_strerror(err) : "");
    }
    c->dead = true;
}

void elsi_consumer_input(struct els_writer *w, struct elsi_consumer *c, short revents)
{
    if (c->connecting) {
        if (revents & (POLLOUT | POLLERR | POLLHUP)) {
            int err = 0;
            socklen_t len = sizeof err;
            if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
                err = errno;
            if (err == ECONNREFUSED || err == ENOENT) {
                /* The collector is not up yet: as quiet as dial()'s
                 * -EAGAIN; the redial backoff applies. */
                c->dead = true;
            } else if (err != 0) {
                elsi_consumer_kill(w, c, "connect failed", -err);
            }
            else {
                c->connecting = false;
                if (!c->trusted && consumer_is_trusted(w, c->fd, c->style,
                                                       c->dialled))
                    c->trusted = true;  /* a UNIX listener of ours */
                else if (!c->trusted && c->style == ELSI_CONSUMER_FD) {
                    long uid;
                    if (consumer_peer(c->fd, &uid) == AF_UNIX)
                        consumer_untrusted_collector(w, c);  /* now known */
                }
            }
        }
        return;
    }
    if ((revents & POLLIN) &&
        !w->ctl.ops->input(w, w->ctl.state, c, &c->session)) {
        /* Without control=1 consumers have nothing to say: read and
         * discard, and notice end of input. */
        const uint8_t *data;
        ssize_t n = elsi_consumer_read(w, c, sizeof w->cons.scratch, &data);
        if (n < 0)
            elsi_consumer_kill(w, c, "read failed", (int)n);
    }
    if (revents & (POLLERR | POLLHUP | POLLNVAL))
        elsi_consumer_kill(w, c, "hung up", 0);
}

// ---------------------------------------------------------------------------
// For the layer above (writer/writer_ops.h)
// ---------------------------------------------------------------------------

ssize_t elsi_consumer_read(struct els_writer *w, struct elsi_consumer *c,
                           size_t max, const uint8_t **data)
{
    ssize_t n;
    if (max > sizeof w->cons.scratch)
        max = sizeof w->cons.scratch;
    do {
        n = read(c->fd, w->cons.scratch, max);
    } while (n < 0 && errno == EINTR);
    *data = w->cons.scratch;
    if (n == 0)
        c->read_closed = true;
    if (n < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
    return n;
}

struct elsi_consumer *elsi_consumer_find(struct els_writer *w, uint64_t id)
{
    for (struct elsi_consumer *c = w->cons.list; c != NULL; c = c->next)
        if (c->id == id)
            return c;
    return NULL;
}

void elsi_consumer_stream_off(struct els_writer *w, struct elsi_consumer *c)
{
    pthread_mutex_lock(&w->lock);
    if (c->awaiting_snapshot) {
        /* Note [Late joiners]: no snapshot is needed for it. */
        c->awaiting_snapshot = false;
        w->cons.awaiting--;
    }
    pthread_mutex_unlock(&w->lock);
}

uint64_t elsi_consumer_id(const struct elsi_consumer *c) { return c->id; }
int elsi_consumer_fd(const struct elsi_consumer *c) { return c->fd; }
bool elsi_consumer_dead(const struct elsi_consumer *c) { return c->dead; }
void *elsi_consumer_session(const struct elsi_consumer *c) { return c->session; }
void elsi_consumer_close(struct elsi_consumer *c) { c->dead = true; }
void elsi_consumer_stop_reading(struct elsi_consumer *c) { c->read_closed = true; }
void elsi_consumer_wake_at(struct elsi_consumer *c, uint64_t ms)
{
    c->retry_at_ms = ms;
}

bool elsi_consumer_accepted(const struct elsi_consumer *c)
{
    return c->is_socket && !c->dialled;
}

bool elsi_consumer_input_ended(const struct elsi_consumer *c)
{
    return c->read_closed;
}

void elsi_consumer_set_trusted(struct elsi_consumer *c, bool trusted)
{
    c->trusted = trusted;
}
