/*
 * address.c: socket addresses as written in specs.
 *
 * Parses the TCP forms PORT, HOST:PORT and [IPV6]:PORT, resolves them with
 * getaddrinfo(), formats bound addresses back into spec form, and builds
 * sockaddr_un values for UNIX socket paths, refusing (never truncating) a
 * path that does not fit.  It creates no sockets and knows nothing of
 * specs as a whole: its messages say what is wrong with the address,
 * quoting the piece at fault (a port, a host) but not the whole address,
 * since every caller (the sinks, the receiver) puts them after the spec
 * the address came from.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base/address.h"
#include "base/log.h"

/* How much of an address a message quotes (through elsi_quote(), since an
 * address decoded from %0A must not break the one-line message) before
 * cutting it. */
#define ADDR_QUOTE_MAX 80
#define ADDR_QUOTE_BUF ELSI_QUOTE_BUF(ADDR_QUOTE_MAX)

/* PORT: decimal 0..65535, digits only (no sign, no space, no "0x"). */
static int addr_parse_port(const char *s, uint16_t *port)
{
    unsigned v = 0;
    size_t i = 0;
    for (; s[i] >= '0' && s[i] <= '9'; i++) {
        v = v * 10 + (unsigned)(s[i] - '0');
        if (v > 65535)
            return ELS_EINVAL;
    }
    if (i == 0 || s[i] != '\0')
        return ELS_EINVAL;
    *port = (uint16_t)v;
    return 0;
}

/* Note [Numeric host shorthands]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * getaddrinfo() reads a host the way inet_aton() does before it tries a
 * name: "0" is 0.0.0.0 (every interface), "127.1" is 127.0.0.1,
 * "2130706433" and "0x7f.1" are too, and "010.0.0.1" is 8.0.0.1 (octal).
 * A spec such as tcp:0:4000, read as "port 4000 on host 0", would then
 * expose the stream to the network without anyone having asked.  So an
 * IPv4 address must be written in full, four decimal numbers (what
 * inet_pton() accepts); every other text inet_aton() would take is
 * refused, naming the address it would have meant.  Listening on every
 * interface takes 0.0.0.0 or [::], written out. */
static int addr_check_ipv4_form(const char *host, char *err, size_t err_len)
{
    struct in_addr a;
    if (inet_pton(AF_INET, host, &a) == 1 || inet_aton(host, &a) == 0)
        return 0;
    char q[ADDR_QUOTE_BUF], meant[INET_ADDRSTRLEN];
    if (inet_ntop(AF_INET, &a, meant, sizeof meant) == NULL)
        snprintf(meant, sizeof meant, "?");
    return elsi_fail(err, err_len, ELS_EINVAL,
                     "host \"%s\" is a shorthand for %s%s; write IPv4 "
                     "addresses as four decimal numbers (0.0.0.0 listens on "
                     "every interface)",
                     elsi_quote(q, sizeof q, host, strlen(host), ADDR_QUOTE_MAX),
                     meant, a.s_addr == htonl(INADDR_ANY)
                                ? " (every interface)" : "");
}

int elsi_tcp_addr_parse(const char *text, struct elsi_tcp_addr *out,
                        char *err, size_t err_len)
{
    char q[ADDR_QUOTE_BUF], q2[ADDR_QUOTE_BUF];
    const char *host = NULL;
    size_t hlen = 0;
    const char *port;

    memset(out, 0, sizeof *out);
    if (text == NULL || text[0] == '\0')
        return elsi_fail(err, err_len, ELS_EINVAL,
                         "empty TCP address (expected PORT, HOST:PORT or "
                         "[IPV6]:PORT)");

    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (close == NULL)
            return elsi_fail(err, err_len, ELS_EINVAL,
                             "missing ']' after the IPv6 address");
        host = text + 1;
        hlen = (size_t)(close - host);
        if (hlen == 0)
            return elsi_fail(err, err_len, ELS_EINVAL,
                             "empty host between brackets");
        /* Brackets exist to protect the colons of an IPv6 literal; a
         * name in brackets is a mistake we would otherwise resolve. */
        if (memchr(host, ':', hlen) == NULL)
            return elsi_fail(err, err_len, ELS_EINVAL,
                             "brackets are only for IPv6 addresses (write "
                             "HOST:PORT)");
        if (close[1] != ':')
            return elsi_fail(err, err_len, ELS_EINVAL,
                             "expected ':PORT' after ']'");
        port = close + 2;
        out->host_given = true;
    } else {
        const char *colon = strchr(text, ':');
        if (colon == NULL) {
            port = text;
        } else if (strchr(colon + 1, ':') != NULL) {
            /* Suggest the bracketed form, splitting at the last colon. */
            const char *last = strrchr(text, ':');
            return elsi_fail(err, err_len, ELS_EINVAL,
                             "an IPv6 address needs brackets, e.g. [%s]:%s",
                             elsi_quote(q, sizeof q, text,
                                        (size_t)(last - text),
                                        ADDR_QUOTE_MAX),
                             elsi_quote(q2, sizeof q2, last + 1,
                                        strlen(last + 1), ADDR_QUOTE_MAX));
        } else {
            host = text;
            hlen = (size_t)(colon - text);
            if (hlen == 0)
                return elsi_fail(err, err_len, ELS_EINVAL,
                                 "empty host before ':' (write PORT alone "
                                 "for 127.0.0.1)");
            if (memchr(host, '[', hlen) != NULL ||
                memchr(host, ']', hlen) != NULL)
                return elsi_fail(err, err_len, ELS_EINVAL,
                                 "misplaced bracket in host (expected "
                                 "[IPV6]:PORT)");
            port = colon + 1;
            out->host_given = true;
        }
    }

    if (hlen >= sizeof out->host)
        return elsi_fail(err, err_len, ELS_EINVAL,
                         "host is %zu bytes, longer than %zu", hlen,
                         sizeof out->host - 1);
    if (host != NULL && text[0] != '[') {
        char h[sizeof out->host];
        memcpy(h, host, hlen);
        h[hlen] = '\0';
        int rc = addr_check_ipv4_form(h, err, err_len);
        if (rc < 0)
            return rc;
    }
    if (port[0] == '\0')
        return elsi_fail(err, err_len, ELS_EINVAL, "missing port after ':'");
    if (addr_parse_port(port, &out->port) != 0)
        return elsi_fail(err, err_len, ELS_EINVAL,
                         "port \"%s\" is not a number from 0 to 65535",
                         elsi_quote(q, sizeof q, port, strlen(port),
                                    ADDR_QUOTE_MAX));
    if (host != NULL) {
        memcpy(out->host, host, hlen);
        out->host[hlen] = '\0';
    } else {
        /* Loopback by default: exposing the eventlog beyond this machine
         * must be asked for by naming a host. */
        strcpy(out->host, "127.0.0.1");
    }
    return 0;
}

int elsi_tcp_resolve(const struct elsi_tcp_addr *a, bool passive,
                     struct addrinfo **res, char *err, size_t err_len)
{
    char port[8];
    char q[ADDR_QUOTE_BUF];
    snprintf(port, sizeof port, "%u", (unsigned)a->port);
    /* No AI_ADDRCONFIG: it hides 127.0.0.1 and ::1 on a machine whose only
     * interface is loopback, which is exactly where tests and offline
     * users run.  A host with a ':' can only be an IPv6 literal. */
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC,
        .ai_socktype = SOCK_STREAM,
        .ai_protocol = IPPROTO_TCP,
        .ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0) |
                    (strchr(a->host, ':') != NULL ? AI_NUMERICHOST : 0),
    };
    *res = NULL;
    int saved_errno = errno;
    errno = 0;
    int rc = getaddrinfo(a->host, port, &hints, res);
    if (rc == 0)
        return 0;
    int sys_errno = errno;
    errno = saved_errno;
    *res = NULL;
    elsi_quote(q, sizeof q, a->host, strlen(a->host), ADDR_QUOTE_MAX);
    if (rc == EAI_MEMORY)
        return elsi_fail(err, err_len, ELS_ENOMEM,
                         "cannot resolve TCP host \"%s\": out of memory", q);
    if (rc == EAI_SYSTEM && sys_errno != 0)
        return elsi_fail(err, err_len, -sys_errno,
                         "cannot resolve TCP host \"%s\": %s", q,
                         els_strerror(-sys_errno));
    return elsi_fail(err, err_len, ELS_EINVAL,
                     "cannot resolve TCP host \"%s\": %s", q,
                     gai_strerror(rc));
}

int elsi_sockaddr_format(const struct sockaddr *sa, socklen_t len,
                         char *buf, size_t buf_len)
{
    char host[INET6_ADDRSTRLEN];
    if (sa == NULL || (buf == NULL && buf_len > 0) ||
        len < (socklen_t)sizeof(sa_family_t))
        return ELS_EINVAL;
    sa_family_t family;
    memcpy(&family, (const char *)sa + offsetof(struct sockaddr, sa_family),
           sizeof family);     /* sa may be unaligned storage */
    if (family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        struct sockaddr_in in;
        memcpy(&in, sa, sizeof in);     /* sa may be unaligned storage */
        if (inet_ntop(AF_INET, &in.sin_addr, host, sizeof host) == NULL)
            return -errno;
        return snprintf(buf, buf_len, "%s:%u", host,
                        (unsigned)ntohs(in.sin_port));
    }
    if (family == AF_INET6 &&
        len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 in6;
        memcpy(&in6, sa, sizeof in6);
        if (inet_ntop(AF_INET6, &in6.sin6_addr, host, sizeof host) == NULL)
            return -errno;
        /* A link-local address is useless without its interface; the
         * numeric "%N" form is what getaddrinfo() reads back. */
        if (in6.sin6_scope_id != 0)
            return snprintf(buf, buf_len, "[%s%%%u]:%u", host,
                            (unsigned)in6.sin6_scope_id,
                            (unsigned)ntohs(in6.sin6_port));
        return snprintf(buf, buf_len, "[%s]:%u", host,
                        (unsigned)ntohs(in6.sin6_port));
    }
    return ELS_EINVAL;
}

int elsi_unix_addr_make(const char *path, struct sockaddr_un *sa,
                        socklen_t *sa_len, char *err, size_t err_len)
{
    if (path == NULL || path[0] == '\0')
        return elsi_fail(err, err_len, ELS_EINVAL, "empty UNIX socket path");
    size_t n = strlen(path);
    /* sun_path must hold the path and its NUL.  Truncating would bind or
     * connect to some other file, so refuse. */
    if (n >= sizeof sa->sun_path)
        return elsi_fail(err, err_len, ELS_ENAMETOOLONG,
                         "the UNIX socket path is %zu bytes; the limit is "
                         "%zu bytes (sun_path)", n, sizeof sa->sun_path - 1);
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    memcpy(sa->sun_path, path, n + 1);
    *sa_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
    return 0;
}

/* The IPv4 address an AF_INET or v4-mapped AF_INET6 address holds. */
static bool addr_ipv4_of(const struct sockaddr *sa, socklen_t len,
                         struct in_addr *out)
{
    sa_family_t family;
    if (len < (socklen_t)sizeof(sa_family_t))
        return false;
    memcpy(&family, (const char *)sa + offsetof(struct sockaddr, sa_family),
           sizeof family);
    if (family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        struct sockaddr_in in;
        memcpy(&in, sa, sizeof in);
        *out = in.sin_addr;
        return true;
    }
    if (family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 in6;
        memcpy(&in6, sa, sizeof in6);
        if (IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr)) {
            memcpy(&out->s_addr, in6.sin6_addr.s6_addr + 12, 4);
            return true;
        }
    }
    return false;
}

enum elsi_reach elsi_sockaddr_reach(const struct sockaddr *sa, socklen_t len)
{
    struct in_addr v4;
    if (addr_ipv4_of(sa, len, &v4)) {
        uint32_t h = ntohl(v4.s_addr);
        if (h == INADDR_ANY)
            return ELSI_REACH_ANY;
        return (h >> 24) == 127 ? ELSI_REACH_LOOPBACK : ELSI_REACH_NETWORK;
    }
    sa_family_t family = AF_UNSPEC;
    if (len >= (socklen_t)sizeof(sa_family_t))
        memcpy(&family, (const char *)sa + offsetof(struct sockaddr, sa_family),
               sizeof family);
    if (family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 in6;
        memcpy(&in6, sa, sizeof in6);
        if (IN6_IS_ADDR_UNSPECIFIED(&in6.sin6_addr))
            return ELSI_REACH_ANY;
        if (IN6_IS_ADDR_LOOPBACK(&in6.sin6_addr))
            return ELSI_REACH_LOOPBACK;
    }
    return ELSI_REACH_NETWORK;
}
