/*
 * address.c: socket addresses as written in specs.
 *
 * Parses the TCP forms PORT, HOST:PORT and [IPV6]:PORT, resolves them with
 * getaddrinfo(), formats bound addresses back into spec form, and builds
 * sockaddr_un values for UNIX socket paths, refusing (never truncating) a
 * path that does not fit.  It creates no sockets and knows nothing of
 * specs as a whole: its messages describe the address only, and the sinks
 * put them in the context of their spec.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "address.h"
#include "log.h"

/* How much of an address a message quotes before cutting it. */
#define ADDR_QUOTE_MAX 80

/* Copy n bytes of s into buf for quoting: control bytes, '"' and '\\'
 * become \xNN, so an address decoded from %0A cannot break the one-line
 * message; cut with "..." after ADDR_QUOTE_MAX bytes. */
static const char *addr_quote(char *buf, size_t buf_len, const char *s,
                              size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    bool cut = n > ADDR_QUOTE_MAX;
    if (cut)
        n = ADDR_QUOTE_MAX;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        bool plain = c >= 0x20 && c != 0x7f && c != '"' && c != '\\';
        if (o + (plain ? 1 : 4) + 4 > buf_len) {
            cut = true;
            break;
        }
        if (plain) {
            buf[o++] = (char)c;
        } else {
            buf[o++] = '\\';
            buf[o++] = 'x';
            buf[o++] = hex[c >> 4];
            buf[o++] = hex[c & 15];
        }
    }
    if (cut) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o] = '\0';
    return buf;
}

#define ADDR_QUOTE_BUF (ADDR_QUOTE_MAX * 4 + 4)

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
    addr_quote(q, sizeof q, text, strlen(text));

    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (close == NULL)
            return elsi_fail(err, err_len, ELS_EINVAL,
                             "TCP address \"%s\": missing ']' after the "
                             "IPv6 address", q);
        host = text + 1;
        hlen = (size_t)(close - host);
        if (hlen == 0)
            return elsi_fail(err, err_len, ELS_EINVAL,
                             "TCP address \"%s\": empty host between "
                             "brackets", q);
        /* Brackets exist to protect the colons of an IPv6 literal; a
         * name in brackets is a mistake we would otherwise resolve. */
        if (memchr(host, ':', hlen) == NULL)
            return elsi_fail(err, err_len, ELS_EINVAL,
                             "TCP address \"%s\": brackets are only for "
                             "IPv6 addresses (write HOST:PORT)", q);
        if (close[1] != ':')
            return elsi_fail(err, err_len, ELS_EINVAL,
                             "TCP address \"%s\": expected ':PORT' after "
                             "']'", q);
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
                             "TCP address \"%s\": an IPv6 address needs "
                             "brackets, e.g. [%s]:%s", q,
                             addr_quote(q2, sizeof q2, text,
                                        (size_t)(last - text)),
                             last + 1);
        } else {
            host = text;
            hlen = (size_t)(colon - text);
            if (hlen == 0)
                return elsi_fail(err, err_len, ELS_EINVAL,
                                 "TCP address \"%s\": empty host before "
                                 "':' (write PORT alone for 127.0.0.1)", q);
            if (memchr(host, '[', hlen) != NULL ||
                memchr(host, ']', hlen) != NULL)
                return elsi_fail(err, err_len, ELS_EINVAL,
                                 "TCP address \"%s\": misplaced bracket in "
                                 "host (expected [IPV6]:PORT)", q);
            port = colon + 1;
            out->host_given = true;
        }
    }

    if (hlen >= sizeof out->host)
        return elsi_fail(err, err_len, ELS_EINVAL,
                         "TCP address \"%s\": host is %zu bytes, longer "
                         "than %zu", q, hlen, sizeof out->host - 1);
    if (port[0] == '\0')
        return elsi_fail(err, err_len, ELS_EINVAL,
                         "TCP address \"%s\": missing port after ':'", q);
    if (addr_parse_port(port, &out->port) != 0)
        return elsi_fail(err, err_len, ELS_EINVAL,
                         "TCP address \"%s\": port \"%s\" is not a number "
                         "from 0 to 65535", q,
                         addr_quote(q2, sizeof q2, port, strlen(port)));
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
    addr_quote(q, sizeof q, a->host, strlen(a->host));
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
    if (sa == NULL || (buf == NULL && buf_len > 0))
        return ELS_EINVAL;
    if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        struct sockaddr_in in;
        memcpy(&in, sa, sizeof in);     /* sa may be unaligned storage */
        if (inet_ntop(AF_INET, &in.sin_addr, host, sizeof host) == NULL)
            return -errno;
        return snprintf(buf, buf_len, "%s:%u", host,
                        (unsigned)ntohs(in.sin_port));
    }
    if (sa->sa_family == AF_INET6 &&
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
    char q[ADDR_QUOTE_BUF];
    if (path == NULL || path[0] == '\0')
        return elsi_fail(err, err_len, ELS_EINVAL, "empty UNIX socket path");
    size_t n = strlen(path);
    /* sun_path must hold the path and its NUL.  Truncating would bind or
     * connect to some other file, so refuse. */
    if (n >= sizeof sa->sun_path)
        return elsi_fail(err, err_len, ELS_ENAMETOOLONG,
                         "UNIX socket path \"%s\" is %zu bytes; the limit is "
                         "%zu bytes (sun_path)",
                         addr_quote(q, sizeof q, path, n), n,
                         sizeof sa->sun_path - 1);
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    memcpy(sa->sun_path, path, n + 1);
    *sa_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
    return 0;
}
