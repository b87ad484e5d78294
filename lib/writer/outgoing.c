/*
 * outgoing.c: a consumer's outgoing bytes, on the writer thread, every
 * one of them: what it is sent and in what order (the cached header, its
 * private bytes, then queued units, as fast as it takes them), its private
 * bytes themselves (the rest of a unit it was cut loose in, in-band notes
 * about what it missed, a dump's end marker) kept within consumer-memory=
 * (Note [Consumer memory]), regular files rolled back to a unit boundary
 * after a failed write, cutting a consumer loose (Note [What is dropped,
 * and who is told]), and the layer above's own bytes to its clients.
 *
 * Not this file's job: deciding when a consumer is too slow (release.c
 * decides and calls elsi_consumer_cut()), attaching, input and reaping
 * (consumer.c: a consumer that cannot be written is closed there), polling
 * (loop.c), the note encoding (format/evformat.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "writer/writer_impl.h"
#include "eventlog-sink.h"
#include "format/evformat.h"
#include "base/log.h"
#include "queue/unitq.h"
#include "base/fdutil.h"

// ---------------------------------------------------------------------------
// Private bytes: what c is owed beside the queue (Note [Consumer memory])
// ---------------------------------------------------------------------------

/* Give back c's private buffer once it is sent: an idle consumer holds
 * no memory (Note [Consumer memory]). */
void elsi_consumer_priv_drop(struct els_writer *w, struct elsi_consumer *c)
{
    w->stats.priv_bytes -= c->priv_cap;
    free(c->priv);
    c->priv = NULL;
    c->priv_cap = c->priv_len = c->priv_off = 0;
}

/* Append to c's private bytes within consumer-memory=.  0, ELS_ENOMEM,
 * or -ENOBUFS when the bound would be exceeded (Note [Consumer memory]). */
int elsi_consumer_priv_append(struct els_writer *w, struct elsi_consumer *c,
                              const void *data, size_t len)
{
    if (c->priv_off == c->priv_len)
        c->priv_off = c->priv_len = 0;
    size_t need = c->priv_len + len;
    if (need > c->priv_cap) {
        size_t cap = c->priv_cap ? c->priv_cap : 256;
        while (cap < need)
            cap *= 2;
        uint64_t others = w->stats.priv_bytes - c->priv_cap;
        if (others + cap > w->spec.consumer_memory)
            cap = need;     /* exactly what it takes, if that fits */
        if (others + cap > w->spec.consumer_memory)
            return -ENOBUFS;
        uint8_t *p = realloc(c->priv, cap);
        if (p == NULL)
            return ELS_ENOMEM;
        w->stats.priv_bytes = others + cap;
        if (w->stats.priv_bytes > w->stats.priv_bytes_peak)
            w->stats.priv_bytes_peak = w->stats.priv_bytes;
        c->priv = p;
        c->priv_cap = cap;
    }
    memcpy(c->priv + c->priv_len, data, len);
    c->priv_len = need;
    return 0;
}

/* Note [Control memory] (lib/control/session.c): a control session's bytes count
 * against the same bound as the consumers' private bytes. */
bool elsi_consumer_memory_take(struct els_writer *w, size_t n)
{
    if (w->stats.priv_bytes + n > w->spec.consumer_memory)
        return false;
    w->stats.priv_bytes += n;
    if (w->stats.priv_bytes > w->stats.priv_bytes_peak)
        w->stats.priv_bytes_peak = w->stats.priv_bytes;
    return true;
}

void elsi_consumer_memory_give(struct els_writer *w, size_t n)
{
    w->stats.priv_bytes -= n;
}

void elsi_consumer_over_memory(struct els_writer *w, struct elsi_consumer *c,
                               const char *what)
{
    if (c->dead)
        return;
    w->stats.dropped_for_memory++;
    char why[160];
    snprintf(why, sizeof why, "%s would pass the consumer-memory= bound "
             "(%" PRIu64 " bytes)", what, w->spec.consumer_memory);
    elsi_consumer_kill(w, c, why, 0);
}

/* c cannot be given bytes it must have (a note about its losses, the rest
 * of a unit it is in the middle of): its stream cannot go on well formed,
 * so it is closed, and counted when for want of consumer-memory=. */
void elsi_consumer_starved(struct els_writer *w, struct elsi_consumer *c, int err)
{
    if (c->dead)
        return;
    if (err == -ENOBUFS) {
        w->stats.dropped_for_memory++;
        elsi_consumer_kill(w, c, "over the consumer-memory= bound", 0);
    } else {
        elsi_consumer_kill(w, c, "out of memory", err);
    }
}

/* Queue an in-band note for c (a global block with one log message). */
void elsi_consumer_note(struct els_writer *w, struct elsi_consumer *c,
                        uint64_t timestamp, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    uint8_t block[512];
    size_t n = elsi_note_encode(block, sizeof block, timestamp, msg);
    int r = n == 0 ? ELS_EINVAL : elsi_consumer_priv_append(w, c, block, n);
    if (r != 0)
        elsi_consumer_starved(w, c, r);
}

void elsi_consumer_note_text(struct els_writer *w, struct elsi_consumer *c,
                             const char *msg)
{
    elsi_consumer_note(w, c, c->last_time, "%s", msg);
}

/* The note a consumer that starts mid-stream without a snapshot gets. */
void elsi_consumer_note_missed(struct els_writer *w, struct elsi_consumer *c,
                                 const char *why, uint64_t units, uint64_t bytes)
{
    elsi_consumer_note(w, c, 0, "eventlog-sink: consumer %" PRIu64 " joined mid-run%s; "
                       "%" PRIu64 " earlier units (%" PRIu64 " bytes) were no "
                       "longer queued", c->id, why, units, bytes);
}

// ---------------------------------------------------------------------------
// Writing to c
// ---------------------------------------------------------------------------

/* For the layer above (writer/writer_ops.h): its own bytes to a consumer
 * that takes no stream (a control client's answers). */
ssize_t elsi_consumer_send(struct elsi_consumer *c, const void *p, size_t n)
{
    struct iovec iov = { (void *)p, n };
    ssize_t r = elsi_write_iov(c->fd, c->is_socket, &iov, 1);
    if (r == -EAGAIN)
        c->want_out = true;
    return r;
}

/*
 * Write one piece (up to two iovecs) to c.  Returns bytes written (>= 0)
 * when the consumer lives on, or -1 when it failed: for a regular file the
 * piece is rolled back and the caller skips it; otherwise c is dead.
 */
static ssize_t consumer_write(struct els_writer *w, struct elsi_consumer *c,
                              const struct iovec *iov, int iovcnt)
{
    if (c->style == ELSI_CONSUMER_CALLBACK) {
        /* The contract promises whole units in one call: join a unit that
         * wraps around the end of the queue. */
        const void *buf = iov[0].iov_base;
        size_t total = iov[0].iov_len;
        if (iovcnt > 1 && iov[1].iov_len > 0) {
            total += iov[1].iov_len;
            if (total > w->cons.join_cap) {
                uint8_t *p = realloc(w->cons.join_buf, total);
                if (p == NULL) {
                    elsi_log_limited(&c->log, ELSI_LOG_INTERVAL_MS, ELS_LOG_ERROR,
                                     "%s: out of memory joining a unit",
                                     w->endpoint);
                    c->retry_at_ms = elsi_now_ms() + RETRY_AFTER_FAILURE_MS;
                    return -1;
                }
                w->cons.join_buf = p;
                w->cons.join_cap = total;
            }
            memcpy(w->cons.join_buf, iov[0].iov_base, iov[0].iov_len);
            memcpy(w->cons.join_buf + iov[0].iov_len, iov[1].iov_base, iov[1].iov_len);
            buf = w->cons.join_buf;
        }
        int r = w->ops->write(w->sink, buf, total);
        if (r < 0) {
            elsi_log_limited(&c->log, ELSI_LOG_INTERVAL_MS, ELS_LOG_WARN,
                             "%s: sink write failed: %s", w->endpoint,
                             els_strerror(r));
            /* No descriptor to poll: the retry timer wakes us. */
            c->retry_at_ms = elsi_now_ms() + RETRY_AFTER_FAILURE_MS;
            return -1;
        }
        return (ssize_t)total;
    }
    ssize_t n = elsi_write_iov(c->fd, c->is_socket, iov, iovcnt);
    if (n >= 0)
        return n;
    if (n == -EAGAIN) {
        c->want_out = true;
        return 0;
    }
    if (c->dump) {
        c->dump_error = (int)n;     /* reported by recorder.c when reaped */
        c->dead = true;
        return -1;
    }
    if (c->is_regular) {
        /* Keep the file a valid eventlog prefix: cut the partial piece. */
        bool rolled_back = ftruncate(c->fd, c->file_piece_start) == 0 &&
                           lseek(c->fd, c->file_piece_start, SEEK_SET) >= 0;
        int e = errno;
        elsi_log_limited(&c->log, ELSI_LOG_INTERVAL_MS, ELS_LOG_WARN,
                         "%s: write failed: %s%s%s", w->endpoint,
                         els_strerror((int)n),
                         rolled_back ? "" : "; could not cut the partial block: ",
                         rolled_back ? "" : strerror(e));
        c->retry_at_ms = elsi_now_ms() + RETRY_AFTER_FAILURE_MS;
        return -1;
    }
    elsi_consumer_kill(w, c, "write failed", (int)n);
    return -1;
}

/* Does c stay attached after a failed write?  A regular file (ENOSPC may
 * pass) and a callback sink do: the failed piece is skipped (a unit: lost
 * for c, counted and announced) or, for the header, retried.  A socket or
 * pipe that fails is gone. */
static bool consumer_outlives_failure(const struct elsi_consumer *c)
{
    /* A dump that cannot be written whole is a failed dump. */
    return !c->dump && (c->is_regular || c->style == ELSI_CONSUMER_CALLBACK);
}

/* Note a piece fully written to a regular file (the next may roll back to
 * here). */
static void consumer_piece_done(struct elsi_consumer *c)
{
    if (c->is_regular)
        c->file_piece_start = lseek(c->fd, 0, SEEK_CUR);
}

/* "capabilities 0 1 and the global buffer" for the blocks in u's gap. */
static void gap_owners(const struct elsi_unit *u, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (unsigned cap = 0; cap < ELS_MAX_CAPS && off < len; cap++) {
        if (u->gap_caps & ((uint64_t)1 << cap)) {
            int n = snprintf(buf + off, len - off, "%s %u",
                             off == 0 ? "capabilities" : "", cap);
            off += n > 0 ? (size_t)n : 0;
        }
    }
    if (u->gap_global && off < len)
        snprintf(buf + off, len - off, "%sthe global buffer",
                 off ? " and " : "");
    else if (off == 0)
        snprintf(buf, len, "unknown origin");
}

/* What c's losses since its last note were, in the words of the drop
 * causes (README, "Losses and counters"). */
static const char *consumer_loss_text(const struct elsi_consumer *c)
{
    bool slow = c->lost_causes & (1u << ELS_DROP_SLOW_CONSUMER);
    bool failed = c->lost_causes & (1u << ELS_DROP_SINK_ERROR);
    if (slow && failed)
        return "slow-consumer (it fell behind and was cut loose) and "
               "sink-error (writing them failed)";
    return slow ? "slow-consumer (it fell behind and was cut loose)"
                : "sink-error (writing them failed)";
}

/* Before c starts unit u: queue the notes it is owed. */
static void consumer_announce(struct els_writer *w, struct elsi_consumer *c,
                              const struct elsi_unit *u)
{
    uint64_t ts = u->start_time ? u->start_time : c->last_time;
    if (c->lost_units > 0) {
        elsi_consumer_note(w, c, ts, "eventlog-sink: this consumer missed %" PRIu64
                           " units (%" PRIu64 " bytes) here: %s", c->lost_units,
                           c->lost_bytes, consumer_loss_text(c));
        c->noted_units += c->lost_units;
        c->noted_bytes += c->lost_bytes;
        c->noted_causes |= c->lost_causes;
        c->lost_units = c->lost_bytes = 0;
        c->lost_causes = 0;
    }
    if (u->gap_units > 0) {
        char whose[200];
        gap_owners(u, whose, sizeof whose);
        elsi_consumer_note(w, c, ts, "eventlog-sink: %" PRIu64 " units (%" PRIu64
                           " bytes) dropped here: %s; blocks of %s", u->gap_units,
                      u->gap_bytes,
                      els_drop_cause_name((enum els_drop_cause)u->gap_cause),
                      whose);
    }
    c->unit_announced = true;
}

static void consumer_next_unit(struct elsi_consumer *c)
{
    c->seq++;
    c->unit_off = 0;
    c->unit_announced = false;
}

/* What a step of elsi_consumer_pump() leaves it to do: go on to the
 * next step, go round again from the top, or stop for now. */
enum pump_next { PUMP_ON, PUMP_AGAIN, PUMP_STOP };

/* Before sending anything: false when c is to be sent nothing now (dead,
 * connecting, no header yet, resting after a failure), or never (a
 * control client that takes no stream). */
static bool pump_ready(struct els_writer *w, struct elsi_consumer *c,
                       const uint8_t *header, size_t header_len,
                       uint64_t visible)
{
    if (c->dead || c->connecting)
        return false;
    if (c->session != NULL && w->ctl.ops->serve_only(w, c, c->session)) {
        /* No stream: always caught up, never holding a unit back. */
        c->header_off = header_len;
        c->seq = visible;
        c->unit_off = 0;
        c->priv_off = c->priv_len;
        return false;
    }
    if (header == NULL)
        return false;
    if (c->retry_at_ms && elsi_now_ms() < c->retry_at_ms)
        return false;
    c->retry_at_ms = 0;
    c->want_out = false;
    return true;
}

/* The rest of the header; false until c has it all. */
static bool pump_header(struct els_writer *w, struct elsi_consumer *c,
                        const uint8_t *header, size_t header_len)
{
    while (c->header_off < header_len) {
        struct iovec iov = { (void *)(header + c->header_off),
                             header_len - c->header_off };
        ssize_t n = consumer_write(w, c, &iov, 1);
        if (n <= 0)
            return false;   /* blocked, dead, or (file) retry later */
        c->header_off += (size_t)n;
        if (c->header_off == header_len)
            consumer_piece_done(c);
    }
    return true;
}

/* c's private bytes (carry and notes), before any queued unit. */
static enum pump_next pump_private(struct els_writer *w, struct elsi_consumer *c)
{
    if (c->priv_off == c->priv_len)
        return PUMP_ON;
    struct iovec iov = { c->priv + c->priv_off, c->priv_len - c->priv_off };
    ssize_t n = consumer_write(w, c, &iov, 1);
    if (n < 0) {
        if (consumer_outlives_failure(c)) {
            /* The notes are lost with the write: what they announced is
             * owed again, before the next unit. */
            c->lost_units += c->noted_units;
            c->lost_bytes += c->noted_bytes;
            c->lost_causes |= c->noted_causes;
            c->noted_units = c->noted_bytes = 0;
            c->noted_causes = 0;
            elsi_consumer_priv_drop(w, c);
        }
        return PUMP_STOP;
    }
    if (n == 0)
        return PUMP_STOP;
    c->priv_off += (size_t)n;
    if (c->priv_off < c->priv_len)
        return PUMP_AGAIN;
    elsi_consumer_priv_drop(w, c);
    c->noted_units = c->noted_bytes = 0;
    c->noted_causes = 0;
    consumer_piece_done(c);
    return PUMP_ON;
}

/* Control answers go in at the point the command took effect. */
static enum pump_next pump_control_due(struct els_writer *w, struct elsi_consumer *c,
                                       uint64_t visible)
{
    if (c->session == NULL || c->unit_off != 0 || c->awaiting_snapshot)
        return PUMP_ON;
    bool at_end = c->seq < visible &&
                  elsi_unitq_unit_at(&w->queue.uq, c->seq)->kind ==
                      ELSI_UNIT_KIND_END;
    w->ctl.ops->due(w, c, c->session, c->seq, at_end);
    if (c->dead)
        return PUMP_STOP;
    return c->priv_off < c->priv_len ? PUMP_AGAIN : PUMP_ON;
}

/* Note [Flight recorder]: a dump ends as a stream does, with the end
 * marker, then is done. */
static enum pump_next pump_dump_end(struct els_writer *w, struct elsi_consumer *c)
{
    if (!c->dump || c->seq < c->dump_end)
        return PUMP_ON;
    if (!c->dump_closed) {
        c->dump_closed = true;
        if (c->last_kind != ELSI_UNIT_KIND_END) {
            int r = elsi_consumer_priv_append(w, c, elsi_data_end,
                                              sizeof elsi_data_end);
            if (r != 0)
                elsi_consumer_starved(w, c, r);
        }
        return PUMP_AGAIN;
    }
    c->dump_done = true;
    c->dead = true;
    return PUMP_STOP;
}

/* The next queued unit below visible, or the rest of it. */
static enum pump_next pump_unit(struct els_writer *w, struct elsi_consumer *c,
                                uint64_t visible)
{
    if (c->seq >= visible || c->awaiting_snapshot)
        return PUMP_STOP;
    /* c->seq < visible and the tail never passes a consumer, so the unit
     * is retained (Note [Queue locking]). */
    struct elsi_unit *u = elsi_unitq_unit_at(&w->queue.uq, c->seq);
    if (u->kind == ELSI_UNIT_KIND_JOIN && c->seq != c->join_start) {
        consumer_next_unit(c);  /* Note [Late joiners]: not ours */
        return PUMP_AGAIN;
    }
    if (c->unit_off == 0 && !c->unit_announced) {
        consumer_announce(w, c, u);
        if (c->dead)
            return PUMP_STOP;
        if (c->priv_off < c->priv_len)
            return PUMP_AGAIN;
    }
    struct iovec iov[2];
    int cnt = elsi_unitq_iov(&w->queue.uq, u, c->unit_off, iov);
    ssize_t n = consumer_write(w, c, iov, cnt);
    if (n < 0) {
        if (consumer_outlives_failure(c)) { /* the unit is lost for c */
            c->lost_units++;
            c->lost_bytes += u->len;
            c->lost_causes |= 1u << ELS_DROP_SINK_ERROR;
            u->failed = true;
            consumer_next_unit(c);
        }
        return PUMP_STOP;
    }
    if (n == 0)
        return PUMP_STOP;
    c->unit_off += (size_t)n;
    if (c->unit_off < u->len)
        return PUMP_AGAIN;
    consumer_piece_done(c);
    c->last_kind = u->kind;
    /* Only this thread writes delivered; producers never read it. */
    u->delivered = true;
    if (u->end_time)
        c->last_time = u->end_time;
    consumer_next_unit(c);
    if (c->dump)    /* Note [Flight recorder]: what producers may evict */
        atomic_store_explicit(&w->rec.dump_floor, c->seq, memory_order_release);
    return PUMP_AGAIN;
}

/*
 * Send c as much as it takes now, in stream order: header, private bytes
 * (carry and notes), control answers that are due, then queued units below
 * visible (a dump: up to its end, then the end marker).  Lock not held;
 * see Note [Queue locking] for why reading queued bytes is safe.
 */
void elsi_consumer_pump(struct els_writer *w, struct elsi_consumer *c,
                        const uint8_t *header, size_t header_len,
                        uint64_t visible)
{
    if (!pump_ready(w, c, header, header_len, visible) ||
        !pump_header(w, c, header, header_len))
        return;
    for (;;) {
        /* Note [Stop deadline]: close has given up on this thread. */
        if (atomic_load_explicit(&w->life.abandoned, memory_order_relaxed))
            return;
        enum pump_next next = pump_private(w, c);
        if (next == PUMP_ON)
            next = pump_control_due(w, c, visible);
        if (next == PUMP_ON)
            next = pump_dump_end(w, c);
        if (next == PUMP_ON)
            next = pump_unit(w, c, visible);
        if (next == PUMP_STOP)
            return;
    }
}

/* Has c received everything up to visible? */
bool elsi_consumer_caught_up(const struct elsi_consumer *c, size_t header_len,
                               uint64_t visible)
{
    /* A consumer still waiting for its join snapshot has not started,
     * whatever its seq says (a release moves it along: nothing before its
     * start is its loss). */
    return c->dead || (!c->awaiting_snapshot && c->header_off == header_len &&
                       c->priv_off == c->priv_len && c->seq >= visible);
}

/* Cut c loose so that it resumes at unit `to` (Note [What is dropped...]). */
void elsi_consumer_cut(struct els_writer *w, struct elsi_consumer *c, uint64_t to)
{
    if (c->awaiting_snapshot) {
        c->seq = to;    /* it has not started: nothing is its loss */
        return;
    }
    uint64_t seq = c->seq;
    uint64_t lost_units = 0, lost_bytes = 0;
    if (c->unit_off > 0) {
        /* Finish the unit it is in the middle of from a private copy. */
        struct elsi_unit *u = elsi_unitq_unit(&w->queue.uq, seq);
        struct iovec iov[2];
        int cnt = elsi_unitq_iov(&w->queue.uq, u, c->unit_off, iov);
        size_t len_before = c->priv_len;
        int r = 0;
        for (int i = 0; i < cnt && r == 0; i++)
            r = elsi_consumer_priv_append(w, c, iov[i].iov_base, iov[i].iov_len);
        if (r != 0) {
            /* Half a unit cannot be followed by anything well formed:
             * this consumer ends here, and the unit is not delivered by
             * it (others may still deliver it). */
            c->priv_len = len_before;
            elsi_consumer_starved(w, c, r);
            return;
        }
        if (u->end_time)
            c->last_time = u->end_time;
        u->delivered = true;    /* it will have been, in full */
        seq++;
    }
    for (; seq < to; seq++) {
        struct elsi_unit *u = elsi_unitq_unit(&w->queue.uq, seq);
        if (u->kind == ELSI_UNIT_KIND_JOIN)
            continue;   /* not part of the stream */
        lost_units++;
        lost_bytes += u->len;
        u->skipped = true;
    }
    if (lost_units > 0)
        c->lost_causes |= 1u << ELS_DROP_SLOW_CONSUMER;
    /* The writer-wide count is taken when the units are released: only a
     * unit some other consumer received is a consumer loss; one nobody
     * received is dropped (release_oldest). */
    c->lost_units += lost_units;
    c->lost_bytes += lost_bytes;
    c->seq = to;
    c->unit_off = 0;
    c->unit_announced = false;
}
