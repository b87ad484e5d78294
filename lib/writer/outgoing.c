/*
 * send.c: what a consumer is sent, on the writer thread, in stream order:
 * the cached header, its private bytes (the rest of a unit it was cut
 * loose in, in-band notes about what it missed), then ring units, as
 * fast as it takes them; regular files rolled back to a unit boundary
 * after a failed write; and cutting a consumer loose (Note [What is
 * dropped, and who is told]).
 *
 * Not this file's job: deciding when a consumer is too slow (release.c
 * decides and calls elsi_consumer_cut()), attaching, reaping and input
 * (consumer.c), polling (loop.c), the note encoding (format/evformat.c).
 */
#include <errno.h>
#include <inttypes.h>
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
#include "queue/ring.h"
#include "base/fdutil.h"

/*
 * Write one piece (up to two iovecs) to c.  Returns bytes written (>= 0)
 * when the consumer lives on, or -1 when it failed: for a regular file the
 * piece is rolled back and the caller skips it; otherwise c is dead.
 */
static ssize_t consumer_write(struct els_writer *w, struct consumer *c,
                              const struct iovec *iov, int iovcnt)
{
    if (c->style == CONSUMER_CALLBACK) {
        /* The contract promises whole units in one call: join a unit that
         * wraps around the end of the ring. */
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
static bool consumer_outlives_failure(const struct consumer *c)
{
    /* A dump that cannot be written whole is a failed dump. */
    return !c->dump && (c->is_regular || c->style == CONSUMER_CALLBACK);
}

/* Note a piece fully written to a regular file (the next may roll back to
 * here). */
static void consumer_piece_done(struct consumer *c)
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
static const char *consumer_loss_text(const struct consumer *c)
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
static void consumer_announce(struct els_writer *w, struct consumer *c,
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

static void consumer_next_unit(struct consumer *c)
{
    c->seq++;
    c->unit_off = 0;
    c->unit_announced = false;
}

/*
 * Send c as much as it takes now, in stream order: header, private bytes
 * (carry and notes), then ring units below visible.  Lock not held; see
 * Note [Queue locking] for why reading ring bytes is safe.
 */
void elsi_consumer_pump(struct els_writer *w, struct consumer *c,
                          const uint8_t *header, size_t header_len,
                          uint64_t visible)
{
    if (c->dead || c->connecting)
        return;
    if (c->session != NULL && w->ctl.hooks->serve_only(w, c, c->session)) {
        /* No stream: always caught up, never holding a unit back. */
        c->header_off = header_len;
        c->seq = visible;
        c->unit_off = 0;
        c->priv_off = c->priv_len;
        return;
    }
    if (header == NULL)
        return;
    if (c->retry_at_ms && elsi_now_ms() < c->retry_at_ms)
        return;
    c->retry_at_ms = 0;
    c->want_out = false;

    while (c->header_off < header_len) {
        struct iovec iov = { (void *)(header + c->header_off),
                             header_len - c->header_off };
        ssize_t n = consumer_write(w, c, &iov, 1);
        if (n <= 0)
            return;     /* blocked, dead, or (file) retry later */
        c->header_off += (size_t)n;
        if (c->header_off == header_len)
            consumer_piece_done(c);
    }

    for (;;) {
        /* Note [Stop deadline]: close has given up on this thread. */
        if (atomic_load_explicit(&w->life.abandoned, memory_order_relaxed))
            return;
        if (c->priv_off < c->priv_len) {
            struct iovec iov = { c->priv + c->priv_off, c->priv_len - c->priv_off };
            ssize_t n = consumer_write(w, c, &iov, 1);
            if (n < 0) {
                if (consumer_outlives_failure(c)) {
                    /* The notes are lost with the write: what they
                     * announced is owed again, before the next unit. */
                    c->lost_units += c->noted_units;
                    c->lost_bytes += c->noted_bytes;
                    c->lost_causes |= c->noted_causes;
                    c->noted_units = c->noted_bytes = 0;
                    c->noted_causes = 0;
                    elsi_consumer_priv_drop(w, c);
                }
                return;
            }
            if (n == 0)
                return;
            c->priv_off += (size_t)n;
            if (c->priv_off < c->priv_len)
                continue;
            elsi_consumer_priv_drop(w, c);
            c->noted_units = c->noted_bytes = 0;
            c->noted_causes = 0;
            consumer_piece_done(c);
        }
        if (c->session != NULL && c->unit_off == 0 && !c->awaiting_snapshot) {
            /* Control answers go in at the point the command took effect. */
            bool at_end = c->seq < visible &&
                          elsi_ring_unit_at(&w->queue.ring, c->seq)->kind ==
                              ELSI_UNIT_KIND_END;
            w->ctl.hooks->due(w, c, c->session, c->seq, at_end);
            if (c->dead)
                return;
            if (c->priv_off < c->priv_len)
                continue;
        }
        if (c->dump && c->seq >= c->dump_end) {
            /* Note [Flight recorder]: a dump ends as a stream does. */
            if (!c->dump_closed) {
                c->dump_closed = true;
                if (c->last_kind != ELSI_UNIT_KIND_END) {
                    int r = elsi_consumer_priv_append(w, c, elsi_data_end,
                                                      sizeof elsi_data_end);
                    if (r != 0)
                        elsi_consumer_starved(w, c, r);
                }
                continue;
            }
            c->dump_done = true;
            c->dead = true;
            return;
        }
        if (c->seq >= visible || c->awaiting_snapshot)
            return;
        /* c->seq < visible and the tail never passes a consumer, so the
         * unit is retained (Note [Queue locking]). */
        struct elsi_unit *u = elsi_ring_unit_at(&w->queue.ring, c->seq);
        if (u->kind == ELSI_UNIT_KIND_JOIN && c->seq != c->join_start) {
            consumer_next_unit(c);  /* Note [Late joiners]: not ours */
            continue;
        }
        if (c->unit_off == 0 && !c->unit_announced) {
            consumer_announce(w, c, u);
            if (c->dead)
                return;
            if (c->priv_off < c->priv_len)
                continue;
        }
        struct iovec iov[2];
        int cnt = elsi_ring_iov(&w->queue.ring, u, c->unit_off, iov);
        ssize_t n = consumer_write(w, c, iov, cnt);
        if (n < 0) {
            if (consumer_outlives_failure(c)) { /* the unit is lost for c */
                c->lost_units++;
                c->lost_bytes += u->len;
                c->lost_causes |= 1u << ELS_DROP_SINK_ERROR;
                u->failed = true;
                consumer_next_unit(c);
            }
            return;
        }
        if (n == 0)
            return;
        c->unit_off += (size_t)n;
        if (c->unit_off < u->len)
            continue;
        consumer_piece_done(c);
        c->last_kind = u->kind;
        /* Only this thread writes delivered; producers never read it. */
        u->delivered = true;
        if (u->end_time)
            c->last_time = u->end_time;
        consumer_next_unit(c);
        if (c->dump)    /* Note [Flight recorder]: what producers may evict */
            atomic_store_explicit(&w->rec.dump_floor, c->seq, memory_order_release);
    }
}

/* Has c received everything up to visible? */
bool elsi_consumer_caught_up(const struct consumer *c, size_t header_len,
                               uint64_t visible)
{
    /* A consumer still waiting for its join snapshot has not started,
     * whatever its seq says (a release moves it along: nothing before its
     * start is its loss). */
    return c->dead || (!c->awaiting_snapshot && c->header_off == header_len &&
                       c->priv_off == c->priv_len && c->seq >= visible);
}

/* Cut c loose so that it resumes at unit `to` (Note [What is dropped...]). */
void elsi_consumer_cut(struct els_writer *w, struct consumer *c, uint64_t to)
{
    if (c->awaiting_snapshot) {
        c->seq = to;    /* it has not started: nothing is its loss */
        return;
    }
    uint64_t seq = c->seq;
    uint64_t lost_units = 0, lost_bytes = 0;
    if (c->unit_off > 0) {
        /* Finish the unit it is in the middle of from a private copy. */
        struct elsi_unit *u = elsi_ring_unit(&w->queue.ring, seq);
        struct iovec iov[2];
        int cnt = elsi_ring_iov(&w->queue.ring, u, c->unit_off, iov);
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
        struct elsi_unit *u = elsi_ring_unit(&w->queue.ring, seq);
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
