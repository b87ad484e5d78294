/*
 * endpoint.c: the public endpoint calls of <eventlog-sink.h>.
 *
 * Lets a program on the other end of a socket sink (a consumer connecting
 * to unix: or tcp:, a collector listening for unix-connect: or
 * tcp-connect:) read an address by the same rules the sinks do, through
 * base/address.c and base/fdutil.c, so that both ends can never disagree
 * on what a spec means.  It opens nothing but the listeners asked for (TCP, and a
 * UNIX socket with its mode right from the start); what to do with a file
 * already in the way of a UNIX socket path is the caller's policy.
 */
#include <errno.h>
#include <netdb.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "eventlog-sink.h"
#include "base/log.h"
#include "base/address.h"
#include "base/fdutil.h"

/* A unix: entry: the addrinfo and its sockaddr_un in one allocation, so
 * that els_endpoint_free() knows it by its family (getaddrinfo() never
 * returns AF_UNIX). */
struct endpoint_unix {
    struct addrinfo ai;
    struct sockaddr_un sun;
};

static int endpoint_unix(const char *path, struct addrinfo **res, char *err,
                         size_t err_len)
{
    struct endpoint_unix *u = calloc(1, sizeof *u);
    if (u == NULL)
        return elsi_fail(err, err_len, ELS_ENOMEM, "out of memory");
    socklen_t len;
    int rc = elsi_unix_addr_make(path, &u->sun, &len, err, err_len);
    if (rc < 0) {
        free(u);
        return rc;
    }
    u->ai.ai_family = AF_UNIX;
    u->ai.ai_socktype = SOCK_STREAM;
    u->ai.ai_addr = (struct sockaddr *)&u->sun;
    u->ai.ai_addrlen = len;
    *res = &u->ai;
    return 0;
}

int els_endpoint_resolve(const char *spec, unsigned flags,
                         struct addrinfo **res, char *err, size_t err_len)
{
    if (res == NULL)
        return ELS_EINVAL;
    *res = NULL;
    if (spec == NULL || (flags & ~ELS_ENDPOINT_PASSIVE) != 0)
        return elsi_fail(err, err_len, ELS_EINVAL, "no spec, or unknown flags");
    bool passive = (flags & ELS_ENDPOINT_PASSIVE) != 0;
    const char *colon = strchr(spec, ':');
    size_t n = colon != NULL ? (size_t)(colon - spec) : 0;
    const char *address = colon != NULL ? colon + 1 : "";

#define ENDPOINT_SCHEME(s) (n == sizeof s - 1 && memcmp(spec, s, n) == 0)
    if (ENDPOINT_SCHEME("unix") || ENDPOINT_SCHEME("unix-connect"))
        return endpoint_unix(address, res, err, err_len);
    if (!ENDPOINT_SCHEME("tcp") && !ENDPOINT_SCHEME("tcp-connect"))
        return elsi_fail(err, err_len, ELS_EINVAL, "not a unix:, tcp:, "
                         "unix-connect: or tcp-connect: spec");
#undef ENDPOINT_SCHEME

    struct elsi_tcp_addr a;
    int rc = elsi_tcp_addr_parse(address, &a, err, err_len);
    if (rc < 0)
        return rc;
    /* Port 0 is a fine thing to bind (the kernel picks); nobody can
     * connect to it. */
    if (a.port == 0 && !passive)
        return elsi_fail(err, err_len, ELS_EINVAL,
                         "port 0 cannot be connected to");
    rc = elsi_tcp_resolve(&a, passive, res, err, err_len);
    /* elsi_tcp_resolve() says EINVAL for a name that does not resolve:
     * here the address was well formed, so it is a reachability error. */
    return rc == ELS_EINVAL ? -EHOSTUNREACH : rc;
}

void els_endpoint_free(struct addrinfo *res)
{
    if (res == NULL)
        return;
    if (res->ai_family == AF_UNIX)
        free((struct endpoint_unix *)(void *)((char *)res -
                                              offsetof(struct endpoint_unix, ai)));
    else
        freeaddrinfo(res);
}

int els_endpoint_listen_tcp(const struct addrinfo *res, int backlog,
                            char *where, size_t where_len)
{
    if (res == NULL || (res->ai_family != AF_INET && res->ai_family != AF_INET6))
        return ELS_EINVAL;
    return elsi_tcp_listen(res, backlog, "?", where, where_len);
}

int els_endpoint_listen_unix(const char *path, unsigned mode, int backlog,
                             uint64_t *dev, uint64_t *ino,
                             char *err, size_t err_len)
{
    if (path == NULL || mode > 0777)
        return elsi_fail(err, err_len, ELS_EINVAL, "no path, or mode %o is "
                         "not permission bits", mode);
    /* A file clients could not name in connect() is of no use. */
    struct sockaddr_un sa;
    if (strlen(path) >= sizeof sa.sun_path)
        return elsi_fail(err, err_len, ELS_ENAMETOOLONG, "the path is %zu "
                         "bytes; a UNIX socket path must be under %zu",
                         strlen(path), sizeof sa.sun_path);
    int fd = elsi_socket_nb(AF_UNIX, SOCK_STREAM);
    if (fd < 0)
        return elsi_fail(err, err_len, fd, "cannot create a socket: %s",
                         strerror(-fd));
    /* See Note [Socket file permissions] in unix.c. */
    struct stat st;
    int rc = elsi_unix_bind_listen(fd, path, (mode_t)mode, backlog, &st, err,
                                   err_len);
    if (rc < 0) {
        elsi_close(fd);
        return rc;
    }
    if (dev != NULL)
        *dev = (uint64_t)st.st_dev;
    if (ino != NULL)
        *ino = (uint64_t)st.st_ino;
    return fd;
}

int els_endpoint_name(int fd, char *buf, size_t len)
{
    struct sockaddr_storage ss;
    socklen_t ss_len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &ss_len) < 0)
        return -errno;
    if (ss.ss_family == AF_UNIX) {
        const struct sockaddr_un *sun = (const struct sockaddr_un *)&ss;
        size_t max = ss_len > offsetof(struct sockaddr_un, sun_path)
                     ? ss_len - offsetof(struct sockaddr_un, sun_path) : 0;
        return snprintf(buf, len, "unix:%.*s", (int)strnlen(sun->sun_path, max),
                        sun->sun_path);
    }
    char host[300];
    int rc = elsi_sockaddr_format((const struct sockaddr *)&ss, ss_len, host,
                                  sizeof host);
    if (rc < 0)
        return rc;
    return snprintf(buf, len, "tcp:%s", host);
}
