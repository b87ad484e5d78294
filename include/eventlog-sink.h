/*
 * eventlog-sink.h: the one header an application includes.
 *
 * libeventlog-sink takes the units of GHC eventlog data that the RTS hands
 * to an EventLogWriter (the header chunk, one block of events, or the final
 * DATA_END marker) and delivers them live to one or more consumers: UNIX or
 * TCP socket clients, a FIFO reader, a file, a collector we connect to, or a
 * custom sink registered through <eventlog-sink/sink.h>.  The calling thread
 * only copies the unit into a bounded queue; a background writer thread does
 * all I/O.
 *
 * Error convention: every function returning int returns 0 (or a
 * non-negative count where documented) on success and a negative errno value
 * on failure.  The codes below have one fixed meaning each; any other
 * negative value is an operating-system error passed through unchanged
 * (its meaning is strerror's).  els_strerror() turns any code into text.
 *
 * Thread safety: els_writer_write() may be called from any number of
 * threads at once.  els_writer_stats() may be called from any thread at
 * any time while the writer is open.  All other calls on one writer must
 * not overlap each other, except that els_writer_write() and
 * els_writer_flush() may overlap els_writer_close(): close waits for the
 * writes already under way, and calls that begin once close has begun
 * return ELS_ESTOPPED.  No call may begin after close has returned (the
 * writer is freed).
 *
 * This header compiles on its own in C99 and C++.  The GHC glue
 * (EventLogWriter, RtsConfig) lives in <eventlog-sink/ghc.h>.
 */
#ifndef EVENTLOG_SINK_H
#define EVENTLOG_SINK_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "eventlog-sink/sink.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ELS_VERSION_MAJOR 0
#define ELS_VERSION_MINOR 1
#define ELS_VERSION_PATCH 0

/* ------------------------------------------------------------------------
 * Error codes (always returned negated)
 * ------------------------------------------------------------------------ */

/* A spec, option value or argument is malformed. */
#define ELS_EINVAL          (-EINVAL)
/* The spec's scheme is not registered (link with -leventlog-sink, or
 * register the custom sink before opening). */
#define ELS_ENOSCHEME       (-EPROTONOSUPPORT)
/* A path does not fit (a UNIX socket path longer than sun_path). */
#define ELS_ENAMETOOLONG    (-ENAMETOOLONG)
/* The address is taken: a TCP port in use, a UNIX socket path on which a
 * live process is listening, or a FIFO another process is writing to. */
#define ELS_EADDRINUSE      (-EADDRINUSE)
/* Something already exists and will not be replaced: a file that is not a
 * socket (or not a FIFO) where one is to be created, or a scheme that is
 * already registered. */
#define ELS_EEXIST          (-EEXIST)
/* The writer (or the process-wide GHC writer) is already configured or
 * running. */
#define ELS_EBUSY           (-EBUSY)
/* Memory could not be allocated. */
#define ELS_ENOMEM          (-ENOMEM)
/* A unit is larger than the whole queue (buffer=) and can never be queued. */
#define ELS_EMSGSIZE        (-EMSGSIZE)
/* A custom-sink ops table's struct_size is not one this library can read
 * (see <eventlog-sink/sink.h>, "Growing the table"). */
#define ELS_EVERSION        (-EPROTO)
/* The writer has been stopped; nothing more is accepted. */
#define ELS_ESTOPPED        (-ESHUTDOWN)
/* The running RTS lacks what the call needs (a stock RTS, or one built
 * without the eventlog or without profiling). */
#define ELS_ENOTSUP         (-ENOTSUP)
/* A bound the spec sets is reached: a flight recorder wrote its
 * max-dumps= dumps and writes no more. */
#define ELS_ELIMIT          (-EDQUOT)

/* Text for any code this library returns, including passed-through errno
 * values.  Never NULL; the string is static. */
const char *els_strerror(int code);

/* The name of a code, for logs and programs: "ELS_EINVAL" ... "ELS_ESTOPPED"
 * for the codes above, the errno name ("ETIMEDOUT") for a passed-through
 * operating-system error, "OK" for 0, "UNKNOWN" for anything else (a
 * positive value).  Never NULL; the string is static. */
const char *els_err_name(int code);

/* ------------------------------------------------------------------------
 * Logging
 *
 * The library never prints on its own: every message goes through the log
 * hook.  The default hook writes "eventlog-sink: <message>" lines of level
 * INFO and more severe to stderr (a closed stderr loses the line, and never
 * raises SIGPIPE in the process).  Messages are single lines without a
 * trailing newline, with control bytes written as \xNN.  The hook may be
 * called from any thread, including the writer thread and RTS threads, and
 * from several at once; it must not call back into the library.
 * ------------------------------------------------------------------------ */

enum els_log_level {
    ELS_LOG_ERROR = 0,
    ELS_LOG_WARN  = 1,
    ELS_LOG_INFO  = 2,
    ELS_LOG_DEBUG = 3
};

typedef void (*els_log_fn)(void *user, enum els_log_level level,
                           const char *message);

/* Replace the log hook.  fn == NULL silences the library.  max_level drops
 * messages less severe than it before they reach fn.  Returns once no call
 * of the previous hook is running, so its user data may then be freed. */
void els_set_log_hook(els_log_fn fn, void *user, enum els_log_level max_level);

/* ------------------------------------------------------------------------
 * Writers
 *
 * A writer is one sink (chosen by a spec string) with its bounded queue and
 * its writer thread.  Spec grammar: SCHEME:REST[?key=value&...]; see docs/SINKS.md.
 * ------------------------------------------------------------------------ */

struct els_writer;

/* Why a unit, or part of the stream, did not reach a consumer. */
enum els_drop_cause {
    /* policy=drop and the queue had no room when the unit arrived. */
    ELS_DROP_QUEUE_FULL = 0,
    /* policy=block:MS and no room appeared within MS milliseconds. */
    ELS_DROP_BLOCK_TIMEOUT,
    /* The unit was larger than the whole queue. */
    ELS_DROP_TOO_BIG,
    /* No consumer was connected while the unit was queued and the queue
     * needed the room (the queue keeps the newest data for late joiners),
     * or none was connected when the writer stopped. */
    ELS_DROP_NO_CONSUMER,
    /* Every consumer that tried to take the unit failed on it (for example
     * ENOSPC on a file, or a callback sink returning an error). */
    ELS_DROP_SINK_ERROR,
    /* The unit arrived after stop began, or was still queued for a
     * consumer that had not taken it when the stop deadline (linger=)
     * expired. */
    ELS_DROP_STOPPED,
    /* The unit was written in a forked child, where the sink is closed. */
    ELS_DROP_FORKED_CHILD,
    /* The queue needed the room and every consumer still waiting for the
     * unit was cut loose for being slow (policy=drop, or an untrusted
     * consumer under policy=block: see els_writer_open()). */
    ELS_DROP_SLOW_CONSUMER,
    ELS_DROP__COUNT
};

/* Why the RTS hands over a unit now.  A GHC RTS with the eventlog-sink
 * patches says so for every unit (see rts-patches/); a stock RTS does not,
 * and its units count as ELS_REASON_UNKNOWN. */
enum els_write_reason {
    ELS_REASON_UNKNOWN = 0,
    ELS_REASON_START,           /* the header chunk of a new stream */
    ELS_REASON_BUFFER_FULL,     /* an RTS buffer had no room for an event */
    ELS_REASON_FLUSH,           /* flushEventLog() or the periodic flush */
    ELS_REASON_STOP,            /* the eventlog stops or the program exits */
    ELS_REASON_SNAPSHOT,        /* a snapshot of the state for every stream */
    ELS_REASON__COUNT
};

/* Per-capability counters kept for capabilities 0 to ELS_MAX_CAPS - 1
 * (blocks of higher capabilities are counted in the totals only). */
#define ELS_MAX_CAPS 64

/* Name of a drop cause ("queue-full", ...); "unknown" for bad values. */
const char *els_drop_cause_name(enum els_drop_cause cause);

/* Room in struct els_stats's arrays, for causes and reasons this and
 * later versions define: at least ELS_DROP__COUNT and ELS_REASON__COUNT,
 * fixed so that a new cause never moves a later field. */
#define ELS_STATS_DROP_SLOTS   16
#define ELS_STATS_REASON_SLOTS 16

/* Counters of one writer.  Units are whole writeEventLog() calls.
 * At every instant, for units and for bytes alike:
 *     accepted == sent + sum(dropped[]) + queued
 * where "sent" means delivered in full to at least one consumer.
 * consumer_lost_* count the units that at least one consumer received and
 * at least one other missed (a consumer cut loose for being slow under
 * policy=drop, or an untrusted one under policy=block, or one whose
 * writes failed); such units are "sent", each counted once however many
 * consumers missed it.  Every loss is also announced in-band to the
 * consumer concerned as an eventlog log-message event.  For a flight
 * recorder (ring:), a unit counts as sent when it leaves the window:
 * keeping it until then is all that sink promises.
 *
 * The caller allocates it and the library fills it, so its layout is
 * part of the ABI.  Append-only: fields are only ever added at the end
 * (after the last "end of version N" mark); none moves, changes
 * type or meaning, and the arrays keep their fixed room.  The caller's
 * size travels with every call (els_writer_stats_sized(), or the inline
 * els_writer_stats() which passes the sizeof of the header it was built
 * with): the library writes no more than that, so a program built
 * against an older header gets the fields it knows, and one built against
 * a newer header than the library gets zero in the fields the library
 * does not have. */
struct els_stats {
    uint64_t units_accepted, bytes_accepted;
    uint64_t units_sent, bytes_sent;
    uint64_t units_dropped[ELS_STATS_DROP_SLOTS];   /* by enum els_drop_cause */
    uint64_t bytes_dropped[ELS_STATS_DROP_SLOTS];
    uint64_t units_queued, bytes_queued;
    uint64_t consumer_lost_units, consumer_lost_bytes;
    uint64_t consumers_connected;   /* right now */
    uint64_t consumers_total;       /* ever attached, including now */
    uint64_t header_bytes;          /* size of the cached header chunk */
    /* Units accepted, by why the RTS wrote them (header excluded; by enum
     * els_write_reason). */
    uint64_t units_by_reason[ELS_STATS_REASON_SLOTS];
    /* Consumers still behind when the stop deadline (linger=) expired:
     * their streams end without the end marker.  What they missed is
     * behind_at_stop_units/bytes below. */
    uint64_t consumers_behind_at_stop;
    /* Connections closed at once because the sink already had
     * max-consumers= consumers. */
    uint64_t consumers_refused;
    /* Consumers closed because the copy of a partly sent unit (or a note)
     * they needed did not fit in consumer-memory=. */
    uint64_t consumers_dropped_memory;
    /* Bytes the writer holds for individual consumers (those copies and
     * in-band notes) now, and the most at any time; both at most
     * consumer-memory=. */
    uint64_t consumer_memory, consumer_memory_peak;
    /* accept() failures on a listening sink (EMFILE...); after each the
     * listener rests, 100 ms doubling to 5 s. */
    uint64_t accept_errors;
    /* Join snapshots (els_writer_write_snapshot()): queued for consumers
     * that joined mid-stream, and not queued for want of room.  They are
     * not part of the stream, so not in accepted/sent/dropped/queued. */
    uint64_t snapshot_units, snapshot_bytes;
    uint64_t snapshots_not_queued;
    /* Consumers that joined mid-stream: started at a join snapshot, or,
     * when none came within ELS_SNAPSHOT_WAIT_MS (or the writer has no
     * snapshot source), at the oldest unit still queued, with an in-band
     * note saying so. */
    uint64_t joiners_with_snapshot, joiners_without_snapshot;
    /* What the consumers still behind at the stop deadline never
     * received, summed over them: units not received in full, and the
     * bytes of those units they did not receive. */
    uint64_t behind_at_stop_units, behind_at_stop_bytes;
    /* --- end of version 1: add new fields below this line only --- */
    /* A ring: recorder's dump-on= evaluator (all 0 without dump-on=):
     * units it read; of those, units that did not parse as whole events
     * (skipped, never fatal); units the recorder forgot before the
     * evaluator reached them (it fell a whole window behind: 0 while it
     * keeps up); conditions met; of those, met within cooldown= or past
     * max-dumps= (no dump); dumps the conditions wrote. */
    uint64_t trigger_units_read, trigger_units_bad, trigger_units_missed;
    uint64_t trigger_fired, trigger_suppressed, trigger_dumps;
    /* Units queued without a copy (els_writer_hand_over()); of
     * units_accepted. */
    uint64_t units_handed_over;
    /* --- end of version 2 --- */
    /* A flight recorder's dumps (ring:): written whole (under their
     * final names); failed, leaving no file (the file could not be
     * opened or written, nothing was recorded, the stop deadline cut
     * it); refused past max-dumps= when asked for or due (conditions met
     * past it are counted in trigger_suppressed instead). */
    uint64_t dumps_written, dumps_failed, dumps_refused;
    /* --- end of version 3 --- */
};

/* Counters of one capability's blocks. */
struct els_cap_stats {
    uint64_t units_accepted, bytes_accepted;
    uint64_t units_dropped, bytes_dropped;      /* at the door, any cause */
};

/* Check a spec without opening anything: syntax, registered scheme, the
 * common options (buffer, policy, wait, linger, max-consumers,
 * consumer-memory) and their values, and that
 * every other option is one the sink declares.  The address and the
 * sink's own option values (mode=) are checked by the sink when it opens,
 * as is whether the address can be bound.  0, or a negative code with one
 * line in err. */
int els_spec_check(const char *spec, char *err, size_t err_len);

/* Parse spec, open the sink (bind, listen, create the FIFO, open the file...)
 * and start the writer thread.  If the spec has wait=SECS, return only once
 * a first consumer is attached or SECS have passed (not an error).
 * Consumers: at most max-consumers= at once (default 64; more are accepted
 * and closed at once, counted in consumers_refused); the memory held for
 * individual consumers stays within consumer-memory= (default 8M; a
 * consumer that would need more is closed, counted in
 * consumers_dropped_memory).  Under policy=block only trusted consumers
 * may hold producers back: callback sinks, files, FIFOs, the connect-out
 * sinks, and UNIX-socket clients running as the program's user or root;
 * TCP clients and other users' UNIX clients are served as under
 * policy=drop.
 * On failure returns a negative code, stores nothing in *out, and, if
 * err != NULL, writes one line naming the part of the spec that is wrong
 * (NUL-terminated, truncated to err_len). */
int els_writer_open(const char *spec, struct els_writer **out,
                    char *err, size_t err_len);

/* Hand one unit to the writer: the header chunk, one eventlog block, or the
 * DATA_END marker, exactly as the RTS passes it to writeEventLog().  Copies
 * it into the queue and returns without doing I/O.  Under policy=drop a
 * full queue drops the unit (counted; never the header chunk, which is
 * kept apart); under policy=block it waits for room (for ever, or MS
 * under block:MS).  Whatever the policy, waits end by the stop deadline:
 * DATA_END and (under block) units with reason ELS_REASON_STOP wait at
 * most until linger= after the first of them, units with reason
 * ELS_REASON_FLUSH at most linger=; see els_writer_close().
 * Returns 0 when the unit was queued or cached, 1 when it was dropped
 * (the drop is counted in the stats), or a negative code (ELS_EINVAL for a
 * NULL or empty unit, ELS_ESTOPPED after close began). */
int els_writer_write(struct els_writer *w, const void *unit, size_t len);

/* As els_writer_write(), but the writer may keep the buffer instead of
 * copying the unit out of it.  *buf is a buffer of size bytes allocated
 * with malloc, holding the unit in its first len bytes.  When the writer
 * keeps it (a unit of at least half its buffer, with room for it), *buf is
 * set to another malloc'd buffer of size bytes, now the caller's, to fill
 * next and eventually free(); otherwise (a smaller unit, copied as by
 * els_writer_write(), or a unit dropped) *buf is left as it was.  Either
 * way the caller must not touch a buffer it no longer holds.  Returns as
 * els_writer_write_reason(); ELS_EINVAL also for buf or *buf NULL or len
 * > size.  What the writer kept is counted in units_handed_over.  The
 * patched RTS hands over its full buffers this way. */
int els_writer_hand_over(struct els_writer *w, void **buf, size_t len,
                         size_t size, enum els_write_reason reason);

/* As els_writer_write(), saying why the RTS wrote the unit now. */
int els_writer_write_reason(struct els_writer *w, const void *unit, size_t len,
                            enum els_write_reason reason);

/*
 * Consumers that join a running stream.  A consumer that attaches after
 * the start of the stream has left the queue would otherwise get the
 * header and then blocks that refer to threads and tasks it never saw
 * created, which readers that track them reject.  A producer that can
 * describe its state (the GHC glue, with the eventlog-sink RTS patches)
 * registers a snapshot source: the writer thread calls request(ctx) when
 * a consumer joins such a stream; request must not block, and the
 * producer answers, soon and from any thread, with
 * els_writer_write_snapshot(): complete blocks describing the state at
 * that point, written when every unit before that point was already
 * written and before any unit after it.  The joiner then gets the
 * header, that snapshot and every unit after it; other consumers never
 * see it.  Consumers that were waiting when the stream ends, or for
 * longer than ELS_SNAPSHOT_WAIT_MS, start at the oldest unit still
 * queued instead, with an in-band note.  Call set_snapshot_source before
 * the first unit, or from the thread that writes units.  0, or
 * ELS_EINVAL.
 */
#define ELS_SNAPSHOT_WAIT_MS 5000
typedef void (*els_snapshot_request_fn)(void *ctx);
int els_writer_set_snapshot_source(struct els_writer *w,
                                   els_snapshot_request_fn request, void *ctx);
/* A join snapshot (see above).  Never waits: without room it is not
 * queued (counted in snapshots_not_queued), and while consumers still
 * await one the writer thread calls request(ctx) again once the queue has
 * room for it (at most 8 times for the same joiners; under policy=block
 * producers leave that room free meanwhile).  0 when queued, 1 when not,
 * or a negative code as els_writer_write(). */
int els_writer_write_snapshot(struct els_writer *w, const void *unit, size_t len);

/* Flight recorders (ring:, or a custom ELS_SINK_RECORD sink): write the
 * window kept in memory out now, as a stream of its own (header, a
 * snapshot, the units up to this point, the end marker), into a new file
 * whose name goes to name.  Waits for the writer thread to write it (the
 * window is in memory: a file write of at most size=) and never for the
 * program's threads.  Requests made while a dump is being written are
 * answered by the next one.  0; ELS_EINVAL if w is not a flight recorder;
 * ELS_ESTOPPED once close began; ELS_ELIMIT once the recorder wrote its
 * max-dumps= dumps; -ENODATA when nothing was recorded yet; or the error
 * that failed the dump (opening or writing the file; a failed dump
 * leaves no file).  On a failure after the request reached the writer,
 * name gets one line saying why. */
int els_writer_dump(struct els_writer *w, char *name, size_t name_len);

/* Counters of capability cap's blocks (cap < ELS_MAX_CAPS), else
 * ELS_EINVAL.  Safe from any thread while w is open. */
int els_writer_cap_stats(struct els_writer *w, unsigned cap,
                         struct els_cap_stats *out);

/* Ask the writer thread to push out what is queued now and to call the
 * sink's flush.  Does not wait for it.  ELS_ESTOPPED once close began. */
int els_writer_flush(struct els_writer *w);

/* Stop accepting units, deliver what is queued to every consumer within
 * the spec's linger= time (default 5 s), close consumers and the sink
 * (removing a socket file or FIFO that the writer created) and free w.
 * The deadline is linger= after the first of this call and the first
 * unit of the stop (DATA_END or reason ELS_REASON_STOP); close returns by
 * then (plus 0.25 s to close the consumers) whatever consumers and sinks
 * do: a sink call still running then (a callback or a file write that
 * blocks) is left to finish on the writer thread, which closes the sink
 * and frees w afterwards.  Consumers still behind at the deadline get a
 * stream without the end marker; the losses are logged (one line per
 * kind) before close returns.
 * In a forked child it only releases memory: see docs/C-API.md, "fork". */
int els_writer_close(struct els_writer *w);

/* Copy the counters into out, which has size bytes (the caller's
 * sizeof(struct els_stats)): the first min(size, the library's size)
 * bytes get the counters, the rest of size zeros; nothing past size is
 * written.  ELS_EINVAL for a NULL w or out or a size of 0.  Safe from any
 * thread while w is open. */
int els_writer_stats_sized(struct els_writer *w, struct els_stats *out,
                           size_t size);

/* els_writer_stats_sized() with the size of struct els_stats in the
 * header this caller was built with. */
static inline int els_writer_stats(struct els_writer *w, struct els_stats *out)
{
    return els_writer_stats_sized(w, out, sizeof *out);
}

/* The sink's bound endpoint in spec form, e.g. "tcp:127.0.0.1:40321" when
 * the spec asked for port 0, into buf (NUL-terminated).  Returns the length
 * of the full text (like snprintf) or a negative code. */
int els_writer_endpoint(struct els_writer *w, char *buf, size_t len);

/* Write a one-line human summary of stats into buf ("units: accepted 12,
 * sent 12, ..."), like snprintf.  Used by the GHC glue at exit. */
int els_stats_format(const struct els_stats *s, char *buf, size_t len);

/* ------------------------------------------------------------------------
 * Endpoints, for consumers and collectors
 *
 * The addresses of the socket sinks, read by the sinks' own rules, for a
 * program that connects to a unix: or tcp: sink or listens for a
 * unix-connect: or tcp-connect: one (the eventlog-sink tool is such a
 * program).  Grammar: unix:PATH (PATH must fit sun_path: refused, never
 * truncated); tcp:PORT, tcp:HOST:PORT, tcp:[IPV6]:PORT (no HOST:
 * 127.0.0.1); the -connect schemes take the same addresses.  No options
 * (a '?' is part of the address).
 * ------------------------------------------------------------------------ */

struct addrinfo;

/* For els_endpoint_resolve(): the addresses are for bind() (a TCP PORT of
 * 0 is then allowed: the kernel picks one). */
#define ELS_ENDPOINT_PASSIVE 1u

/* Resolve spec into a list of stream-socket addresses to try in order: one
 * AF_UNIX entry for unix:, what getaddrinfo() gives for tcp:.  Free it with
 * els_endpoint_free(), never freeaddrinfo().  0, or with one line in err:
 * ELS_EINVAL (malformed spec or address, unknown scheme, port 0 when not
 * passive), ELS_ENAMETOOLONG, -EHOSTUNREACH (the host does not resolve),
 * ELS_ENOMEM. */
int els_endpoint_resolve(const char *spec, unsigned flags,
                         struct addrinfo **res, char *err, size_t err_len);
void els_endpoint_free(struct addrinfo *res);

/* Listen on the first TCP address of res that binds: close-on-exec,
 * non-blocking, SO_REUSEADDR, IPV6_V6ONLY for an IPv6 address.  The
 * descriptor, or -errno of the first "in use" failure (else of the first
 * failure) with that address as "HOST:PORT" in where; ELS_EINVAL for a
 * list that is not TCP.  UNIX paths are not handled here: what to do
 * with a file in the way is the caller's policy. */
int els_endpoint_listen_tcp(const struct addrinfo *res, int backlog,
                            char *where, size_t where_len);

/* Listen on the UNIX socket path with exactly mode (0600, say) from the
 * first moment the path names it: the socket is bound, given its mode and
 * made to listen in a private directory and then renamed into place, so
 * there is no window with wider permissions and nothing planted at path
 * (a symbolic link) is followed (the unix: sink's way).  It never
 * replaces anything: a stale socket is the caller's to remove first.  The
 * descriptor (close-on-exec, non-blocking), with the socket file's device
 * and inode in *dev and *ino (to remove it later only if the path still
 * names it), or a negative code with one line in err: ELS_EEXIST
 * something is at path, ELS_ENAMETOOLONG (the path does not fit
 * sun_path, so clients could not connect to it), ELS_EINVAL (mode above
 * 0777), -errno. */
int els_endpoint_listen_unix(const char *path, unsigned mode, int backlog,
                             uint64_t *dev, uint64_t *ino,
                             char *err, size_t err_len);

/* The address socket fd is bound to (local) in spec form: "tcp:HOST:PORT"
 * (the real port after binding port 0), "tcp:[V6]:PORT" or "unix:PATH";
 * like snprintf, or a negative code. */
int els_endpoint_name(int fd, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* EVENTLOG_SINK_H */
