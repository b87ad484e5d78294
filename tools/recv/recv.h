/*
 * recv.h: what the two halves of `eventlog-sink recv` share: recv.c
 * (connecting, copying, the command line) and listen.c (--listen:
 * waiting for the one producer among whatever else connects).
 */
#ifndef ELS_TOOL_RECV_H
#define ELS_TOOL_RECV_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

struct addrinfo;

enum recv_scheme { RECV_UNIX, RECV_TCP, RECV_FIFO };

struct recv_target {
    enum recv_scheme scheme;
    const char *spec;
    const char *address;            /* after "SCHEME:" */
    /* RECV_UNIX (one entry) and RECV_TCP, from els_endpoint_resolve(),
     * resolved once (passive for --listen). */
    struct addrinfo *ai;
    const char *path;               /* RECV_UNIX: the socket path */
};

/* Set by the SIGINT/SIGTERM handler (see Note [Stop signals]). */
extern volatile sig_atomic_t recv_stop_signal;

struct recv_signals {
    sigset_t blocked;     /* mask in force outside the windows */
    sigset_t waiting;     /* mask while waiting or writing */
};

uint64_t recv_now_ms(void);

/* The bytes a producer sent before it was recognised as one (its header
 * and whatever came with it): the copy starts with them. */
struct recv_prefix {
    uint8_t *bytes;       /* malloc'd; the caller frees it */
    size_t len;
};

/* Listen on t, announce it on stderr, and wait up to timeout_ms (< 0: no
 * limit) for a producer: the first connection that sends a complete
 * eventlog header (see Note [Waiting for the producer]).  The listener
 * is closed (and the socket file removed) before this returns, whatever
 * happens.  A connected descriptor, non-blocking and close-on-exec, with
 * what it already sent in *prefix; or -errno with a line in err:
 * -ETIMEDOUT when no producer came, -EINTR on a stop signal. */
int recv_listen_accept(const struct recv_signals *s,
                       const struct recv_target *t, long timeout_ms,
                       struct recv_prefix *prefix, char *err, size_t err_len);

#endif /* ELS_TOOL_RECV_H */
