/*
 * test_address.c: socket addresses as written in specs (lib/base/address.c).
 *
 * Parsing of the TCP forms and their refusals, name resolution of
 * loopback literals (no network needed), formatting of bound addresses
 * checked against real sockets bound to 127.0.0.1:0, and UNIX socket
 * paths at and beyond the sun_path limit, bound for real in the case's
 * temporary directory.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "check.h"
#include "base/address.h"
#include "eventlog-sink.h"

static void tcp_ok_(int line, const char *text, const char *host,
                    bool host_given, unsigned port)
{
    struct elsi_tcp_addr a;
    char err[256] = "";
    int rc = elsi_tcp_addr_parse(text, &a, err, sizeof err);
    if (rc != 0)
        check_fail_(__FILE__, line, "\"%s\": returned %d: %s", text, rc, err);
    if (strcmp(a.host, host) != 0 || a.host_given != host_given ||
        a.port != port)
        check_fail_(__FILE__, line, "\"%s\": got host \"%s\" (given %d) "
                    "port %u, wanted \"%s\" (given %d) port %u", text,
                    a.host, (int)a.host_given, (unsigned)a.port, host,
                    (int)host_given, port);
}
#define TCP_OK(text, host, given, port) \
    tcp_ok_(__LINE__, text, host, given, port)

static void tcp_bad_(int line, const char *text, const char *needle)
{
    struct elsi_tcp_addr a;
    char err[512] = "(untouched)";
    int rc = elsi_tcp_addr_parse(text, &a, err, sizeof err);
    if (rc != ELS_EINVAL)
        check_fail_(__FILE__, line, "\"%s\": returned %d, wanted EINVAL "
                    "(message: %s)", text ? text : "(null)", rc, err);
    if (strstr(err, needle) == NULL)
        check_fail_(__FILE__, line, "message for \"%s\" does not contain "
                    "\"%s\": \"%s\"", text ? text : "(null)", needle, err);
}
#define TCP_BAD(text, needle) tcp_bad_(__LINE__, text, needle)

static void tcp_port_alone_means_loopback(void)
{
    TCP_OK("8080", "127.0.0.1", false, 8080);
    TCP_OK("0", "127.0.0.1", false, 0);
    TCP_OK("65535", "127.0.0.1", false, 65535);
    TCP_OK("00080", "127.0.0.1", false, 80);
}

static void tcp_host_and_port(void)
{
    TCP_OK("localhost:80", "localhost", true, 80);
    TCP_OK("10.1.2.3:65535", "10.1.2.3", true, 65535);
    TCP_OK("0.0.0.0:0", "0.0.0.0", true, 0);
    TCP_OK("collector.example.com:4000", "collector.example.com", true, 4000);
    TCP_OK("[::1]:80", "::1", true, 80);
    TCP_OK("[::]:0", "::", true, 0);
    TCP_OK("[fe80::1%eth0]:9", "fe80::1%eth0", true, 9);

    char text[300], host[256];
    memset(host, 'h', 255);
    host[255] = '\0';
    snprintf(text, sizeof text, "%s:1", host);
    TCP_OK(text, host, true, 1);
}

static void tcp_refusals(void)
{
    TCP_BAD(NULL, "empty TCP address");
    TCP_BAD("", "empty TCP address (expected PORT, HOST:PORT or [IPV6]:PORT)");
    TCP_BAD("::1:80", "needs brackets, e.g. [::1]:80");
    TCP_BAD("fe80::2:4000", "[fe80::2]:4000");
    TCP_BAD("[::1]", "expected ':PORT' after ']'");
    TCP_BAD("[::1]80", "expected ':PORT'");
    TCP_BAD("[::1]:", "missing port");
    TCP_BAD("[::1", "missing ']'");
    TCP_BAD("[]:80", "empty host between brackets");
    TCP_BAD("[localhost]:80", "brackets are only for IPv6");
    TCP_BAD("[127.0.0.1]:80", "brackets are only for IPv6");
    TCP_BAD(":80", "empty host before ':'");
    TCP_BAD("localhost:", "missing port");
    TCP_BAD("a[b:80", "misplaced bracket");
    TCP_BAD("65536", "port \"65536\" is not a number from 0 to 65535");
    TCP_BAD("99999999999999999999", "port \"99999999999999999999\"");
    TCP_BAD("-1", "port \"-1\"");
    TCP_BAD("+80", "port \"+80\"");
    TCP_BAD(" 80", "port \" 80\"");
    TCP_BAD("80 ", "port \"80 \"");
    TCP_BAD("0x50", "port \"0x50\"");
    TCP_BAD("localhost:8a", "port \"8a\"");
    TCP_BAD("localhost:http", "port \"http\"");
    TCP_BAD("127.0.0.1:x", "port \"x\" is not a number from 0 to 65535");

    char text[300], host[257];
    memset(host, 'h', 256);
    host[256] = '\0';
    snprintf(text, sizeof text, "%s:1", host);
    TCP_BAD(text, "host is 256 bytes, longer than 255");

    /* A decoded control byte cannot break the one-line message. */
    TCP_BAD("a:8\n0", "port \"8\\x0a0\"");
    TCP_BAD("::1:8\n0", "e.g. [::1]:8\\x0a0");
}

/* getaddrinfo() would read these hosts as inet_aton() does: "0" as
 * 0.0.0.0, so tcp:0:4000 would listen on every interface.  Every IPv4
 * shorthand is refused, naming the address it stands for; the full forms,
 * names and IPv6 literals are not touched. */
static void tcp_numeric_shorthands_refused(void)
{
    TCP_BAD("0:4000", "host \"0\" is a shorthand for 0.0.0.0 (every interface)");
    TCP_BAD("0:4000", "0.0.0.0 listens on every interface");
    TCP_BAD("127.1:80", "host \"127.1\" is a shorthand for 127.0.0.1;");
    TCP_BAD("0x7f.1:80", "host \"0x7f.1\" is a shorthand for 127.0.0.1");
    TCP_BAD("0x7f000001:80", "shorthand for 127.0.0.1");
    TCP_BAD("2130706433:80", "shorthand for 127.0.0.1");
    TCP_BAD("010.0.0.1:80", "host \"010.0.0.1\" is a shorthand for 8.0.0.1");
    TCP_BAD("0.0:80", "shorthand for 0.0.0.0 (every interface)");
    TCP_BAD("127.0.0.01:80", "shorthand for 127.0.0.1");
    TCP_BAD("00:1", "shorthand for 0.0.0.0");

    TCP_OK("0.0.0.0:4000", "0.0.0.0", true, 4000);
    TCP_OK("127.0.0.1:80", "127.0.0.1", true, 80);
    TCP_OK("255.255.255.255:80", "255.255.255.255", true, 80);
    TCP_OK("[::]:4000", "::", true, 4000);
    TCP_OK("[::ffff:127.0.0.1]:80", "::ffff:127.0.0.1", true, 80);
    TCP_OK("deadbeef:80", "deadbeef", true, 80);    /* a name */
    TCP_OK("4000", "127.0.0.1", false, 4000);
}

/* Who can reach a bound address, for the start-up line. */
static void sockaddr_reach(void)
{
    struct sockaddr_in in = { .sin_family = AF_INET };
    struct sockaddr_in6 in6 = { .sin6_family = AF_INET6 };
    const struct { int v6; const char *text; enum elsi_reach want; } cases[] = {
        { 0, "127.0.0.1", ELSI_REACH_LOOPBACK },
        { 0, "127.255.0.9", ELSI_REACH_LOOPBACK },
        { 0, "0.0.0.0", ELSI_REACH_ANY },
        { 0, "10.1.2.3", ELSI_REACH_NETWORK },
        { 0, "128.0.0.1", ELSI_REACH_NETWORK },
        { 1, "::1", ELSI_REACH_LOOPBACK },
        { 1, "::", ELSI_REACH_ANY },
        { 1, "::ffff:0.0.0.0", ELSI_REACH_ANY },
        { 1, "::ffff:127.0.0.1", ELSI_REACH_LOOPBACK },
        { 1, "fe80::1", ELSI_REACH_NETWORK },
        { 1, "2001:db8::1", ELSI_REACH_NETWORK },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        enum elsi_reach got;
        if (cases[i].v6) {
            CHECK_INT(inet_pton(AF_INET6, cases[i].text, &in6.sin6_addr), ==, 1);
            got = elsi_sockaddr_reach((struct sockaddr *)&in6, sizeof in6);
        } else {
            CHECK_INT(inet_pton(AF_INET, cases[i].text, &in.sin_addr), ==, 1);
            got = elsi_sockaddr_reach((struct sockaddr *)&in, sizeof in);
        }
        CHECK_MSG(got == cases[i].want, "%s: reach %d, wanted %d",
                  cases[i].text, (int)got, (int)cases[i].want);
    }
    /* Too short to hold an address: the worst is assumed. */
    CHECK_INT(elsi_sockaddr_reach((struct sockaddr *)&in, 1), ==,
              ELSI_REACH_NETWORK);
}

static int count_family(const struct addrinfo *res, int family)
{
    int n = 0;
    for (const struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next)
        if (ai->ai_family == family && ai->ai_socktype == SOCK_STREAM)
            n++;
    return n;
}

static void resolve_loopback_literals(void)
{
    struct elsi_tcp_addr a;
    struct addrinfo *res = NULL;
    char err[256];
    char text[64];

    CHECK_OK(elsi_tcp_addr_parse("4000", &a, err, sizeof err));
    CHECK_OK(elsi_tcp_resolve(&a, true, &res, err, sizeof err));
    CHECK_INT(count_family(res, AF_INET), >=, 1);
    CHECK_INT(elsi_sockaddr_format(res->ai_addr, res->ai_addrlen, text,
                                   sizeof text), >, 0);
    CHECK_STR(text, "127.0.0.1:4000");
    freeaddrinfo(res);

    /* ::1 resolves even where no interface has IPv6 configured, because
     * AI_ADDRCONFIG is not used. */
    CHECK_OK(elsi_tcp_addr_parse("[::1]:5", &a, err, sizeof err));
    CHECK_OK(elsi_tcp_resolve(&a, false, &res, err, sizeof err));
    CHECK_INT(count_family(res, AF_INET6), >=, 1);
    CHECK_INT(elsi_sockaddr_format(res->ai_addr, res->ai_addrlen, text,
                                   sizeof text), >, 0);
    CHECK_STR(text, "[::1]:5");
    freeaddrinfo(res);
}

static void resolve_failure_names_the_host(void)
{
    /* An impossible IPv6 literal fails without asking any DNS server. */
    struct elsi_tcp_addr a;
    struct addrinfo *res = (struct addrinfo *)&a;   /* must be reset */
    char err[256] = "";
    CHECK_OK(elsi_tcp_addr_parse("[::zz]:80", &a, err, sizeof err));
    CHECK_INT(elsi_tcp_resolve(&a, false, &res, err, sizeof err), ==,
              ELS_EINVAL);
    CHECK(res == NULL);
    CHECK_CONTAINS(err, "cannot resolve TCP host \"::zz\"");
}

/* The text a listening socket reports must parse back to the same port
 * and reach it: this is what els_writer_endpoint() relies on. */
static void bound_address_round_trips(void)
{
    struct elsi_tcp_addr a;
    struct addrinfo *res = NULL;
    char err[256];
    CHECK_OK(elsi_tcp_addr_parse("0", &a, err, sizeof err));
    CHECK_OK(elsi_tcp_resolve(&a, true, &res, err, sizeof err));
    int ls = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC,
                    res->ai_protocol);
    CHECK(ls >= 0);
    CHECK_OK(bind(ls, res->ai_addr, res->ai_addrlen));
    CHECK_OK(listen(ls, 1));
    freeaddrinfo(res);

    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    CHECK_OK(getsockname(ls, (struct sockaddr *)&ss, &sl));
    char text[64];
    int n = elsi_sockaddr_format((struct sockaddr *)&ss, sl, text, sizeof text);
    CHECK_INT(n, ==, (int)strlen(text));
    CHECK_INT(strncmp(text, "127.0.0.1:", 10), ==, 0);

    struct elsi_tcp_addr back;
    CHECK_OK(elsi_tcp_addr_parse(text, &back, err, sizeof err));
    CHECK_STR(back.host, "127.0.0.1");
    CHECK_INT(back.port, ==, ntohs(((struct sockaddr_in *)&ss)->sin_port));
    CHECK_INT(back.port, !=, 0);

    CHECK_OK(elsi_tcp_resolve(&back, false, &res, err, sizeof err));
    int cs = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC,
                    res->ai_protocol);
    CHECK(cs >= 0);
    CHECK_OK(connect(cs, res->ai_addr, res->ai_addrlen));
    freeaddrinfo(res);
    close(cs);
    close(ls);
}

static void format_ipv6_and_limits(void)
{
    struct sockaddr_in6 in6;
    memset(&in6, 0, sizeof in6);
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons(80);
    CHECK_INT(inet_pton(AF_INET6, "::1", &in6.sin6_addr), ==, 1);
    char text[64];
    CHECK_INT(elsi_sockaddr_format((struct sockaddr *)&in6, sizeof in6, text,
                                   sizeof text), ==, 8);
    CHECK_STR(text, "[::1]:80");

    CHECK_INT(inet_pton(AF_INET6, "fe80::1", &in6.sin6_addr), ==, 1);
    in6.sin6_scope_id = 3;
    CHECK_INT(elsi_sockaddr_format((struct sockaddr *)&in6, sizeof in6, text,
                                   sizeof text), >, 0);
    CHECK_STR(text, "[fe80::1%3]:80");
    struct elsi_tcp_addr back;
    char err[128];
    CHECK_OK(elsi_tcp_addr_parse(text, &back, err, sizeof err));
    CHECK_STR(back.host, "fe80::1%3");

    /* Like snprintf: the full length, a cut NUL-terminated text. */
    struct sockaddr_in in;
    memset(&in, 0, sizeof in);
    in.sin_family = AF_INET;
    in.sin_port = htons(65535);
    in.sin_addr.s_addr = htonl(0x0a000001);
    char small[6];
    CHECK_INT(elsi_sockaddr_format((struct sockaddr *)&in, sizeof in, small,
                                   sizeof small), ==, 14);
    CHECK_STR(small, "10.0.");
    CHECK_INT(elsi_sockaddr_format((struct sockaddr *)&in, sizeof in, NULL, 0),
              ==, 14);

    /* Wrong family or short length: refused, not misread. */
    CHECK_INT(elsi_sockaddr_format((struct sockaddr *)&in, sizeof in - 1,
                                   text, sizeof text), ==, ELS_EINVAL);
    struct sockaddr_un un = { .sun_family = AF_UNIX };
    CHECK_INT(elsi_sockaddr_format((struct sockaddr *)&un, sizeof un, text,
                                   sizeof text), ==, ELS_EINVAL);
}

static void unix_path_limits(void)
{
    struct sockaddr_un sa;
    socklen_t len = 0;
    char err[512];
    char path[200];
    size_t limit = sizeof sa.sun_path - 1;     /* 107 on Linux */

    memset(path, 'p', limit);
    path[limit] = '\0';
    CHECK_OK(elsi_unix_addr_make(path, &sa, &len, err, sizeof err));
    CHECK_INT(sa.sun_family, ==, AF_UNIX);
    CHECK_STR(sa.sun_path, path);
    CHECK_INT(len, ==, offsetof(struct sockaddr_un, sun_path) + limit + 1);

    /* One byte more: refused, and sa is not touched (never truncated). */
    memset(path, 'q', limit + 1);
    path[limit + 1] = '\0';
    memset(&sa, 0xaa, sizeof sa);
    struct sockaddr_un before = sa;
    CHECK_INT(elsi_unix_addr_make(path, &sa, &len, err, sizeof err), ==,
              ELS_ENAMETOOLONG);
    CHECK_CONTAINS(err, "is 108 bytes");
    CHECK_CONTAINS(err, "the limit is 107 bytes");
    CHECK(memcmp(&sa, &before, sizeof sa) == 0);

    CHECK_INT(elsi_unix_addr_make("", &sa, &len, err, sizeof err), ==,
              ELS_EINVAL);
    CHECK_CONTAINS(err, "empty UNIX socket path");
    CHECK_INT(elsi_unix_addr_make(NULL, &sa, &len, err, sizeof err), ==,
              ELS_EINVAL);
}

static void unix_address_binds(void)
{
    struct sockaddr_un sa;
    socklen_t len = 0;
    char err[256];
    const char *path = check_path("s.sock");
    CHECK_OK(elsi_unix_addr_make(path, &sa, &len, err, sizeof err));
    int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(ls >= 0);
    CHECK_OK(bind(ls, (struct sockaddr *)&sa, len));
    CHECK_OK(listen(ls, 1));
    struct stat st;
    CHECK_OK(stat(path, &st));
    CHECK(S_ISSOCK(st.st_mode));

    struct sockaddr_un sb;
    socklen_t lb = 0;
    CHECK_OK(elsi_unix_addr_make(path, &sb, &lb, err, sizeof err));
    int cs = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(cs >= 0);
    CHECK_OK(connect(cs, (struct sockaddr *)&sb, lb));
    close(cs);
    close(ls);
}

static const struct check_case cases[] = {
    CHECK_CASE(tcp_port_alone_means_loopback),
    CHECK_CASE(tcp_host_and_port),
    CHECK_CASE(tcp_refusals),
    CHECK_CASE(tcp_numeric_shorthands_refused),
    CHECK_CASE(sockaddr_reach),
    CHECK_CASE(resolve_loopback_literals),
    CHECK_CASE(resolve_failure_names_the_host),
    CHECK_CASE(bound_address_round_trips),
    CHECK_CASE(format_ipv6_and_limits),
    CHECK_CASE(unix_path_limits),
    CHECK_CASE(unix_address_binds),
};

CHECK_MAIN(cases)
