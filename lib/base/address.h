/*
 * address.h: socket addresses as written in specs.
 *
 *   TCP:   PORT | HOST:PORT | [IPV6]:PORT     (PORT 0..65535; no HOST means
 *          loopback, 127.0.0.1; an IPv4 HOST is four decimal numbers:
 *          shorthands such as "0" or "127.1" are refused, see Note
 *          [Numeric host shorthands] in address.c)
 *   UNIX:  a filesystem path that must fit sun_path with its NUL; refused,
 *          never truncated.
 *
 * Shared by the sinks and the receiver tool.  No sockets are created here
 * except by elsi_tcp_resolve()'s name lookup.
 */
#ifndef ELS_ADDRESS_H
#define ELS_ADDRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netdb.h>

/* Enough err_len for the messages below.  They say what is wrong with the
 * address without repeating it (the caller puts them after the spec, as in
 * `spec "tcp:x": port "x" is not a number from 0 to 65535`) and quote at
 * most 80 bytes of each piece they name. */
#define ELSI_ADDR_ERR_MAX 512

struct elsi_tcp_addr {
    char host[256];     /* without brackets; "127.0.0.1" when not given */
    bool host_given;
    uint16_t port;
};

/* Parse a TCP address.  ELS_EINVAL with a one-line message in err. */
int elsi_tcp_addr_parse(const char *text, struct elsi_tcp_addr *out,
                        char *err, size_t err_len);

/* getaddrinfo() for a, SOCK_STREAM, numeric port.  passive: for bind().
 * Caller frees *res with freeaddrinfo().  ELS_EINVAL on lookup failure
 * (message names the host). */
int elsi_tcp_resolve(const struct elsi_tcp_addr *a, bool passive,
                     struct addrinfo **res, char *err, size_t err_len);

/* Format a bound address as "HOST:PORT" or "[V6]:PORT". */
int elsi_sockaddr_format(const struct sockaddr *sa, socklen_t len,
                         char *buf, size_t buf_len);

/* Who can reach a bound address: this machine only (127.0.0.0/8, ::1),
 * every interface (0.0.0.0, ::), or the hosts that reach one network
 * address. */
enum elsi_reach { ELSI_REACH_LOOPBACK, ELSI_REACH_ANY, ELSI_REACH_NETWORK };
enum elsi_reach elsi_sockaddr_reach(const struct sockaddr *sa, socklen_t len);

/* Build a sockaddr_un for path.  ELS_EINVAL for an empty path,
 * ELS_ENAMETOOLONG if it does not fit sun_path (message gives both
 * lengths). */
int elsi_unix_addr_make(const char *path, struct sockaddr_un *sa,
                        socklen_t *sa_len, char *err, size_t err_len);

#endif /* ELS_ADDRESS_H */
