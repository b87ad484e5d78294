/*
 * test_endpoint.c: the public endpoint calls (lib/sinks/endpoint.c).
 *
 * els_endpoint_resolve() reads unix: and tcp: specs (and their -connect
 * forms) by the sinks' rules, refuses what the sinks refuse with the
 * documented codes (a malformed address is ELS_EINVAL, a host that does
 * not resolve -EHOSTUNREACH; no network needed: literals only), and its
 * lists are freed by els_endpoint_free() whatever their family.
 * els_endpoint_listen_tcp() and els_endpoint_name() are checked on real
 * sockets: a listener on port 0 names its real port, and a client
 * connects there; a UNIX socket bound in the case's directory names its
 * path.
 */
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "check.h"
#include "eventlog-sink.h"

static void resolve_unix(void)
{
    struct addrinfo *res;
    char err[256];
    CHECK_OK(els_endpoint_resolve("unix:/tmp/x.sock", 0, &res, err, sizeof err));
    CHECK_INT(res->ai_family, ==, AF_UNIX);
    CHECK_INT(res->ai_socktype, ==, SOCK_STREAM);
    CHECK(res->ai_next == NULL);
    CHECK_STR(((struct sockaddr_un *)(void *)res->ai_addr)->sun_path,
              "/tmp/x.sock");
    els_endpoint_free(res);
    CHECK_OK(els_endpoint_resolve("unix-connect:rel.sock",
                                  ELS_ENDPOINT_PASSIVE, &res, err, sizeof err));
    els_endpoint_free(res);

    char longpath[200];
    memset(longpath, 'a', sizeof longpath);
    memcpy(longpath, "unix:/", 6);
    longpath[sizeof longpath - 1] = '\0';
    CHECK_INT(els_endpoint_resolve(longpath, 0, &res, err, sizeof err), ==,
              ELS_ENAMETOOLONG);
    CHECK(res == NULL);
    CHECK_CONTAINS(err, "sun_path");
    CHECK_INT(els_endpoint_resolve("unix:", 0, &res, err, sizeof err), ==,
              ELS_EINVAL);
    CHECK_CONTAINS(err, "empty");
}

static void resolve_tcp(void)
{
    struct addrinfo *res;
    char err[256];
    CHECK_OK(els_endpoint_resolve("tcp:4000", 0, &res, err, sizeof err));
    CHECK_INT(res->ai_family, ==, AF_INET);
    CHECK_INT(ntohs(((struct sockaddr_in *)(void *)res->ai_addr)->sin_port),
              ==, 4000);
    els_endpoint_free(res);
    CHECK_OK(els_endpoint_resolve("tcp-connect:[::1]:4001", 0, &res, err,
                                  sizeof err));
    CHECK_INT(res->ai_family, ==, AF_INET6);
    els_endpoint_free(res);

    /* Port 0: only for binding. */
    CHECK_INT(els_endpoint_resolve("tcp:0", 0, &res, err, sizeof err), ==,
              ELS_EINVAL);
    CHECK_CONTAINS(err, "port 0 cannot be connected to");
    CHECK_OK(els_endpoint_resolve("tcp:0", ELS_ENDPOINT_PASSIVE, &res, err,
                                  sizeof err));
    els_endpoint_free(res);

    static const char *const bad[] = {
        "tcp:", "tcp:70000", "tcp:x", "tcp:[::1", "fifo:/tmp/f", "file:/x",
        "tc:1", "tcpx:1", "nocolon", "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        res = (struct addrinfo *)1;
        CHECK_MSG(els_endpoint_resolve(bad[i], 0, &res, err, sizeof err) ==
                  ELS_EINVAL, "\"%s\" accepted", bad[i]);
        CHECK(res == NULL);
    }
    /* Well formed, but no such host (an IPv6 literal that is not one
     * fails without asking DNS). */
    CHECK_INT(els_endpoint_resolve("tcp:[zz::1]:80", 0, &res, err, sizeof err),
              ==, -EHOSTUNREACH);
    CHECK_CONTAINS(err, "cannot resolve");
    CHECK_INT(els_endpoint_resolve("tcp:1", 4, &res, err, sizeof err), ==,
              ELS_EINVAL);
    els_endpoint_free(NULL);
}

static void listen_and_name(void)
{
    struct addrinfo *res;
    char err[256], where[128], name[128];
    CHECK_OK(els_endpoint_resolve("tcp:127.0.0.1:0", ELS_ENDPOINT_PASSIVE, &res,
                                  err, sizeof err));
    int fd = els_endpoint_listen_tcp(res, 4, where, sizeof where);
    CHECK_MSG(fd >= 0, "listen: %d (%s)", fd, where);
    els_endpoint_free(res);
    int n = els_endpoint_name(fd, name, sizeof name);
    CHECK_INT(n, ==, (int)strlen(name));
    CHECK(strncmp(name, "tcp:127.0.0.1:", 14) == 0 && strcmp(name + 14, "0") != 0);

    /* The name is a spec a client reaches the listener with. */
    CHECK_OK(els_endpoint_resolve(name, 0, &res, err, sizeof err));
    int c = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(c >= 0);
    CHECK_MSG(connect(c, res->ai_addr, res->ai_addrlen) == 0, "connect %s: %s",
              name, strerror(errno));
    els_endpoint_free(res);
    close(c);

    /* A second listener on that port: in use, and where says which. */
    CHECK_OK(els_endpoint_resolve(name, ELS_ENDPOINT_PASSIVE, &res, err,
                                  sizeof err));
    CHECK_INT(els_endpoint_listen_tcp(res, 4, where, sizeof where), ==,
              -EADDRINUSE);
    CHECK_STR(where, name + 4);
    els_endpoint_free(res);
    close(fd);

    /* UNIX lists are not for this call.  (The relative name binds in the
     * case's own directory, so a second run finds no socket left over.) */
    CHECK_OK(chdir(check_dir));
    CHECK_OK(els_endpoint_resolve("unix:s.sock", 0, &res, err, sizeof err));
    CHECK_INT(els_endpoint_listen_tcp(res, 4, where, sizeof where), ==,
              ELS_EINVAL);
    int u = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(u >= 0);
    CHECK_OK(bind(u, res->ai_addr, res->ai_addrlen));
    CHECK_INT(els_endpoint_name(u, name, sizeof name), ==, 11);
    CHECK_STR(name, "unix:s.sock");
    /* Like snprintf when short. */
    char small[6];
    CHECK_INT(els_endpoint_name(u, small, sizeof small), ==, 11);
    CHECK_STR(small, "unix:");
    close(u);
    els_endpoint_free(res);
    CHECK_INT(els_endpoint_name(-1, name, sizeof name), ==, -EBADF);
}

/* els_endpoint_listen_unix(): the mode from the first moment, nothing
 * replaced, the file's identity given back. */
static void listen_unix(void)
{
    const char *path = check_path("l.sock");
    char err[256];
    uint64_t dev = 0, ino = 0;
    int fd = els_endpoint_listen_unix(path, 0600, 4, &dev, &ino, err, sizeof err);
    CHECK_MSG(fd >= 0, "listen_unix: %s", err);
    struct stat st;
    CHECK(lstat(path, &st) == 0);
    CHECK(S_ISSOCK(st.st_mode));
    CHECK_INT((int)(st.st_mode & 07777), ==, 0600);
    CHECK_U64((uint64_t)st.st_dev, ==, dev);
    CHECK_U64((uint64_t)st.st_ino, ==, ino);
    CHECK((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
    CHECK((fcntl(fd, F_GETFL) & O_NONBLOCK) != 0);
    /* It listens: a client connects. */
    int c = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    CHECK(connect(c, (struct sockaddr *)&sa, sizeof sa) == 0);
    close(c);
    /* Something at the path (the socket itself, a file): refused. */
    CHECK_INT(els_endpoint_listen_unix(path, 0600, 4, NULL, NULL, err, sizeof err),
              ==, ELS_EEXIST);
    close(fd);
    unlink(path);
    CHECK(symlink("/etc/passwd", path) == 0);
    CHECK_INT(els_endpoint_listen_unix(path, 0600, 4, NULL, NULL, err, sizeof err),
              ==, ELS_EEXIST);
    unlink(path);
    CHECK_INT(els_endpoint_listen_unix(path, 01777, 4, NULL, NULL, err, sizeof err),
              ==, ELS_EINVAL);
    char longp[200];
    memset(longp, 'a', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    CHECK_INT(els_endpoint_listen_unix(longp, 0600, 4, NULL, NULL, err, sizeof err),
              ==, ELS_ENAMETOOLONG);
    CHECK_CONTAINS(err, "must be under");
    CHECK(access(longp, F_OK) != 0);
}

static const struct check_case cases[] = {
    CHECK_CASE(resolve_unix),
    CHECK_CASE(resolve_tcp),
    CHECK_CASE(listen_and_name),
    CHECK_CASE(listen_unix),
};

CHECK_MAIN(cases)
