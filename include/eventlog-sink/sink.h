/*
 * eventlog-sink/sink.h: the API for sinks, built-in and custom.
 *
 * A sink turns the part of a spec after "SCHEME:" into places where the
 * stream goes.  It does not see units, queues or threads: the writer
 * thread owns delivery.  A sink is one of three styles:
 *
 *   ELS_SINK_LISTEN    it owns a listening descriptor; each accepted
 *                      descriptor becomes a consumer (unix:, tcp:).
 *   ELS_SINK_DIAL      it produces one outgoing descriptor at a time, and
 *                      is asked again after that one fails or closes
 *                      (fifo:, file:, unix-connect:, tcp-connect:).
 *   ELS_SINK_CALLBACK  it takes the bytes itself through write(); the
 *                      usual choice for a custom sink.
 *   ELS_SINK_RECORD    a flight recorder: the stream stays in the writer's
 *                      queue (buffer=, or size= for this style), oldest
 *                      units giving way to new ones, and the sink only
 *                      opens a file for each dump of it (ring:).  See
 *                      dump_open and els_writer_dump().
 *
 * For the two descriptor styles the writer does all reads and writes on
 * the descriptors, non-blocking, with MSG_NOSIGNAL (and SIGPIPE blocked on
 * the writer thread for pipes); a sink must hand out descriptors opened
 * close-on-exec.  The writer closes the descriptors it was given.
 *
 * Threads: every member is called on the writer thread, except open(),
 * which runs on the thread calling els_writer_open(), and close(), which
 * runs on the writer thread for a LISTEN sink (as soon as the writer
 * stops, so no consumer connects to a stream that is ending) and otherwise
 * on the thread calling els_writer_close(), or, when a member was still
 * running at the stop deadline (linger=), on the writer thread as soon as
 * that member returns: els_writer_close() does not wait for it.  Members are never called
 * concurrently for one sink instance.  Rule: once open() has failed, no
 * other member is called for that instance and close() is not called.
 *
 * Errors: members return 0 or a negative errno (see <eventlog-sink.h>).
 *
 * Growing the table (the rule that keeps compiled sinks working):
 * struct els_sink_ops only ever grows at its end, and a table says how big
 * it was where it was compiled, in its first member:
 *     .struct_size = sizeof(struct els_sink_ops),
 * Registration accepts any struct_size from ELS_SINK_OPS_MIN_SIZE (the
 * table of the first release) up; the library reads the members that fit
 * in struct_size and treats every member past it as absent (NULL), so a
 * sink built against an older header keeps registering after operations
 * are added, and one built against a newer header registers with a library
 * that ignores the members it does not know.  A new member is therefore
 * always optional, and its absence must keep the old behaviour.  A size
 * below the minimum, or above any table this ABI could plausibly grow to
 * (ELS_SINK_OPS_MAX_SIZE), is refused with ELS_EVERSION: it is not a table.
 * Members are never removed, reordered or retyped.
 */
#ifndef EVENTLOG_SINK_SINK_H
#define EVENTLOG_SINK_SINK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum els_sink_style {
    ELS_SINK_LISTEN = 1,
    ELS_SINK_DIAL = 2,
    ELS_SINK_CALLBACK = 3,
    ELS_SINK_RECORD = 4
};

/* Why a RECORD sink is asked to open a dump. */
enum els_dump_reason {
    ELS_DUMP_REQUEST = 0,   /* els_writer_dump(), a control command */
    ELS_DUMP_SIGNAL = 1,    /* the sink's listen_fd became readable */
    ELS_DUMP_EXIT = 2       /* the stream ends (the program exits) */
};

/* What open() is given.  All strings stay valid until close() returns. */
struct els_sink_args {
    const char *scheme;   /* as registered, e.g. "unix" */
    const char *address;  /* the text between "SCHEME:" and "?" (may be "") */
    const char *spec;     /* the whole spec, for messages */
    /* Options the sink declared in ops->options and the spec gave, in spec
     * order.  Options common to all sinks (buffer, policy, wait, linger,
     * max-consumers, consumer-memory)
     * are handled by the writer and never appear here. */
    size_t n_options;
    const char *const *option_keys;
    const char *const *option_values;
    /* Where open() writes one line naming what is wrong when it fails. */
    char *err;
    size_t err_len;
};

/* Value of option key in args, or NULL if the spec did not give it. */
const char *els_sink_option(const struct els_sink_args *args, const char *key);

/* Parse a size as the library's own options take it (buffer=, ...):
 * digits with an optional K, M or G suffix (either case, binary
 * multiples), e.g. "256M".  For a sink's own options.  0, ELS_EINVAL
 * (not a size, or NULL) or -ERANGE (more than 2^64 - 1 bytes). */
int els_sink_parse_size(const char *text, uint64_t *bytes);

struct els_sink_ops {
    /* sizeof(struct els_sink_ops) where the table was compiled; see
     * "Growing the table" above. */
    size_t struct_size;
    /* Exact scheme this sink serves: [a-z][a-z0-9+.-]*, at most 31 bytes.
     * Matched exactly, never by prefix. */
    const char *scheme;
    /* NULL-terminated names of scheme-specific options; may be NULL.
     * Any other option in a spec is refused before open() is called. */
    const char *const *options;
    enum els_sink_style style;

    /* Required.  Validate args->address and options, acquire the endpoint
     * (bind and listen, create a FIFO...) and store the instance in *sink.
     * May block briefly (name resolution).  On failure return a negative
     * code and write one line to args->err. */
    int (*open)(void **sink, const struct els_sink_args *args);

    /* Required.  Release the endpoint (close a listening descriptor, remove
     * a socket file this instance created).  Never fails, never blocks for
     * long.  Descriptors handed out by accept()/dial() are not its job. */
    void (*close)(void *sink);

    /* LISTEN: required.  The listening descriptor to poll for POLLIN. */
    int (*listen_fd)(void *sink);
    /* LISTEN: required.  Accept one pending consumer into *fd
     * (non-blocking, close-on-exec).  -EAGAIN when none is pending; other
     * codes are logged and the listener keeps going. */
    int (*accept)(void *sink, int *fd);

    /* DIAL: required.  Produce the next descriptor.  0: *fd is ready to
     * write.  -EINPROGRESS: *fd is connecting; the writer polls it for
     * POLLOUT and checks SO_ERROR.  -EAGAIN: nothing yet (no FIFO reader,
     * collector down); the writer asks again after a backoff (100 ms
     * doubling to 5 s).  Any other code: logged, then the same backoff. */
    int (*dial)(void *sink, int *fd);

    /* CALLBACK: required.  Take len bytes (part of the stream, always whole
     * units, the header chunk first).  May block; while it blocks the
     * queue fills and the policy applies.  A negative code drops this unit
     * for this sink (counted, announced in-band before the next unit). */
    int (*write)(void *sink, const void *buf, size_t len);

    /* Optional for every style.  Called after the writer drained the queue
     * in answer to a flush request. */
    int (*flush)(void *sink);

    /* Optional.  Describe the bound endpoint in spec form, e.g.
     * "tcp:127.0.0.1:40321", like snprintf. */
    int (*endpoint)(void *sink, char *buf, size_t len);

    /* End of the first release's table (ELS_SINK_OPS_MIN_SIZE).  New
     * members go below this line, optional, with what NULL means. */

    /* RECORD: required (NULL: the table cannot have that style).  Open a
     * new file for one dump into *fd (a regular file, write-only,
     * close-on-exec; the writer closes it) and write its name into name.
     * -ECANCELED: no dump now (a signal pipe with nothing pending, no dump
     * wanted at exit); any other negative code fails this dump (reported
     * to whoever asked).  RECORD sinks may also give listen_fd: when it is
     * readable the writer calls dump_open with ELS_DUMP_SIGNAL, which must
     * drain it. */
    int (*dump_open)(void *sink, enum els_dump_reason why, int *fd,
                     char *name, size_t name_len);

    /* RECORD: optional.  The dump dump_open opened has ended: complete is
     * 1 when all of it was written (the end marker included), 0 when it
     * failed or was cut short (a write error, the stop deadline).  fd is
     * still open (the writer closes it afterwards), or -1 when it is
     * already closed; name holds dump_open's name.  For a complete dump,
     * make it durable and give it its final name (ring: writes into
     * NAME.K.eventlog.partial, then fsyncs it and renames it to
     * NAME.K.eventlog, so that a dump cut by a crash never carries a
     * dump's name), and write that name into name: 0, or a negative code
     * that fails the dump.  Whenever the dump fails (complete 0, or a
     * code returned), remove what dump_open created: a failed dump
     * leaves no file.  NULL: dump_open's file is the dump itself, and
     * the writer removes it when the dump fails. */
    int (*dump_close)(void *sink, int fd, int complete, char *name,
                      size_t name_len);
};

/* The size of the first release's table: the least struct_size accepted. */
#define ELS_SINK_OPS_MIN_SIZE \
    (offsetof(struct els_sink_ops, endpoint) + sizeof(void (*)(void)))
/* The largest struct_size accepted; anything bigger is garbage. */
#define ELS_SINK_OPS_MAX_SIZE 4096u

/* Register a sink.  Validates the table (struct_size, scheme syntax,
 * required members for the style) and returns ELS_EVERSION for a
 * struct_size outside [ELS_SINK_OPS_MIN_SIZE, ELS_SINK_OPS_MAX_SIZE],
 * ELS_EINVAL for another fault, ELS_EEXIST if the scheme is taken.  The table must
 * outlive every writer that uses it (normally: static storage).
 * Thread-safe.  The built-in schemes are always registered (the registry
 * adds them on its first use). */
int els_sink_register(const struct els_sink_ops *ops);

/* The registered table for scheme (exact match), or NULL.  For a table
 * smaller than this library's struct els_sink_ops it is the registry's
 * copy, with the members past its struct_size NULL; otherwise the table
 * that was registered. */
const struct els_sink_ops *els_sink_lookup(const char *scheme);

#ifdef __cplusplus
}
#endif

#endif /* EVENTLOG_SINK_SINK_H */
