/*
 * serve.c: `eventlog-sink serve`, the live monitor as a web page and a
 * Prometheus endpoint: its command line, the token, the
 * listener, and the one poll loop of its one thread.  The loop pumps the
 * eventlog source (tools/monitor/source.c) into the model (model.c),
 * closes a rate interval and pushes the state to every open page at each
 * interval, and hands ready clients to conn.c, which reads their
 * requests for routes.c to answer (the routes and the rules of
 * control are described there).  It listens on loopback unless told a
 * host; on loopback it answers only requests that name loopback in
 * their Host field (see http_host_is_loopback()).
 *
 * The token keeps out the other local users who can reach a loopback
 * port: the programs' data crosses no user boundary that their 0600
 * sockets keep (routes.c, Note [The session cookie]).  192 random
 * bits made at each start (or read from --token-file, a 0600 file of
 * ours), printed on the start-up line in the page's URL
 * ("/?token=..."), which a browser trades for a session cookie (a
 * second random value made here) and a URL without the token.  Scrapers
 * send "Authorization: Bearer TOKEN"; the page's buttons (--control)
 * send X-Eventlog-Sink-Token; with --all --control it is also
 * Alertmanager's, sent with each webhook (alert.c).
 * --public-read opens the reads to anyone who can connect, with a
 * warning.  Not its job: TLS (put a proxy in front to expose it).
 *
 * Our own process: it catches SIGINT/SIGTERM to stop cleanly.
 */
#if defined(HAVE_CONFIG_H)
#include "config.h"
#endif

#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "eventlog-sink.h"
#include "../monitor/run.h"
#include "serve.h"
#include "otlp.h"
#include "../discover.h"
#include "../tool.h"
#include "monitor/util.h"

#define SERVE_DEADLINE_STEP_MS 250      /* how late a deadline may be seen */
#define SERVE_TOKEN_BYTES 24            /* random bytes of a made token */
#define SERVE_TOKEN_MIN 32              /* characters of a --token-file's */

static void serve_usage(FILE *out)
{
    fprintf(out,
"Usage: " TOOL_NAME " serve [OPTIONS] SPEC|FILE\n"
"       " TOOL_NAME " serve --all [OPTIONS]\n"
"\n"
"Serve a live web view of a GHC program's runtime, from its eventlog,\n"
"and its figures in the Prometheus text format at /metrics.\n"
"\n"
"With --all, every program announced on this host (`" TOOL_NAME " ps`)\n"
"as they come and go, at most 256 at once: / lists them with their\n"
"health (GCs, GC pause p99, heap, losses) as a page and /api/programs\n"
"as JSON, /p/PID/ is a program's live view (its /p/PID/metrics too),\n"
"and /metrics holds every program's series, labelled program and pid;\n"
"a program that exits leaves them.  One scrape target per host.\n"
"\n"
"SPEC|FILE as for `" TOOL_NAME " top`: unix:PATH, tcp:[HOST:]PORT,\n"
"fifo:PATH, pid:PID or name:NAME (`" TOOL_NAME " ps`), or a file,\n"
"followed as it grows (a saved eventlog shows the\n"
"whole run).  A target that is not there yet is waited for, and a line\n"
"on stderr says so at start.\n"
"\n"
"Options:\n"
"  --listen [HOST:]PORT  where to serve (default 127.0.0.1:8089; port 0\n"
"                        picks one; beyond loopback, plain HTTP: put a\n"
"                        TLS proxy in front)\n"
"  --interval SECS       refresh interval (default 1)\n"
"  --save FILE           copy the stream as received to FILE (a new run\n"
"                        replaces it)\n"
"  --all                 follow every announced program (no SPEC)\n"
"  --save-dir DIR        with --all: copy each run of each program's\n"
"                        stream to a new file, DIR/NAME.PID.N.eventlog\n"
"  --control             show control buttons: a control session with\n"
"                        the program at SPEC (unix: or tcp:; its sink\n"
"                        needs control=1): status, stats, flush,\n"
"                        snapshot, heap census, classes, restart, stop.\n"
"                        Only on a loopback listener, and only with the\n"
"                        token in X-Eventlog-Sink-Token (the page opened\n"
"                        with the start-up line's URL sends it).\n"
"                        With --all: take Alertmanager's webhook at\n"
"                        POST /api/alertmanager, with the token as\n"
"                        'Authorization: Bearer TOKEN': a firing alert\n"
"                        labelled pid (or program) makes that program's\n"
"                        ring: recorder dump, through its\n"
"                        control=unix:SOCK socket (on any listener:\n"
"                        beyond loopback the token is sent in the clear).\n"
"                        A program gets both sinks from one flag:\n"
"                        --eventlog-sink='unix:S|ring:F?control=unix:C'\n"
"  --token-file FILE     the token from FILE instead of a new random one\n"
"                        at each start, for a URL that stays the same:\n"
"                        32 to 128 characters of A-Z a-z 0-9 - . _ ~ in\n"
"                        a regular file of yours that only you can read\n"
"                        (mode 600)\n"
"  --public-read         the page, /api/* (GET) and /metrics answer\n"
"                        anyone who can connect, without the token (on\n"
"                        loopback: every local user; they see what the\n"
"                        programs' messages, labels and arguments say);\n"
"                        actions and alerts still need it\n"
"  --dump-cooldown SECS  with --all --control: a program dumped on an\n"
"                        alert is not dumped again for SECS (default\n"
"                        60; 0: no cooldown)\n"
"  --secret-file FILE    the control secret (tcp:), as for ctl\n"
"  --spool-dir DIR       where a live stream's bytes are kept for the\n"
"                        zoomable timeline: a new private directory\n"
"                        (mode 700) per run under DIR (default\n"
"                        $XDG_RUNTIME_DIR, else $TMPDIR, else /tmp),\n"
"                        removed when the run is forgotten; a FILE is\n"
"                        read where it lies\n"
"  --spool-size BYTES    at most BYTES kept per program (default 256M;\n"
"                        K, M, G suffixes): beyond, the oldest bytes are\n"
"                        dropped and counted (/api/info's dropped)\n"
"  --keep-ended N        with --all: keep the page, timeline and spool of\n"
"                        the last N programs that exited (default 16;\n"
"                        0: forget a program when it exits)\n"
"  --spool-total BYTES   with --all: while every program's spools\n"
"                        together pass BYTES (default 4G), the oldest\n"
"                        ended programs are forgotten\n"
"  -h, --help            this help\n"
"\n");
    fputs(serve_otlp_usage, out);
    fprintf(out, "\n"
"Every request needs the token (unless --public-read: GET and HEAD\n"
"do not): as 'Authorization: Bearer TOKEN' (Prometheus:\n"
"authorization: {credentials_file: FILE}), X-Eventlog-Sink-Token, or\n"
"the session cookie that a GET with ?token=TOKEN sets, answered with\n"
"303 to the same URL without the token (with --control, with\n"
"#token=TOKEN for the page's buttons: a fragment is never sent).\n"
"Without: 401, and nothing else.\n"
"Prints 'serving http://HOST:PORT/?token=TOKEN' on stderr once\n"
"listening (a new token at each start), the URL to open; with\n"
"--token-file the line names the file instead of the token.  With\n"
"--all --control the line also says where alerts go: '(alerts: POST\n"
"http://HOST:PORT/api/alertmanager with 'Authorization: Bearer' and\n"
"the token)'.\n"
"Pages: / (live view), /metrics, /api/state, /events (Server-Sent\n"
"Events), /api/series?from=NS&to=NS&cols=N (the charts' series),\n"
"the zoomable timeline's /api/info, /api/timeline?t0=NS&t1=NS&px=N,\n"
"/api/events?t0=NS&t1=NS&n=N, /api/range?t0=NS&t1=NS and\n"
"/api/pauses?t0=NS&t1=NS&n=N (the longest GC pauses), and over\n"
"any range: /api/heap (censuses by band, order=size|growth),\n"
"/api/durations (spans per name: count, total, p50, p99, max),\n"
"/api/spans and /api/profile (cost centres, format=speedscope|tree)\n"
"(JSON, times in ns of the run), /api/speedscope?from=NS&to=NS (cost-centre\n"
"samples of a profiled program as a speedscope profile), /api/control\n"
"(GET: the control session's state; POST ?cmd=ACTION[&class=X]: run\n"
"an action, answered as JSON {\"ok\":..,\"error\":..,\"result\":..}; 403\n"
"with the cookie alone, for another origin or an action off the\n"
"list).\n"
"POST /api/alertmanager (--all --control) takes Alertmanager's JSON\n"
"(version 4, Content-Type application/json, at most 256 KiB: 413\n"
"beyond) and answers JSON: per alert, each program's dump (file,\n"
"size) or why none (resolved, cooldown, unknown-program, no-recorder,\n"
"failed); at most 64 alerts (the rest counted as skipped) and 8 dumps\n"
"a request; 400 for malformed JSON or another shape, 401 without the\n"
"token (nothing done).\n"
"At most 64 connections, 32 of them /events (beyond: 503); a request\n"
"head within 10 s, a request within 60 s, a client 256 KiB behind\n"
"is not read and is closed after 15 s.\n");
}

/* SERVE_TOKEN_BYTES from getrandom() in hex into out (at least
 * 2 * SERVE_TOKEN_BYTES + 1 bytes).  0, or the exit status after a
 * message. */
static int serve_random_hex(char *out, const char *what)
{
    uint8_t raw[SERVE_TOKEN_BYTES];
    size_t got = 0;
    while (got < sizeof raw) {
        /* Blocks only until the kernel's pool is first seeded. */
        ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            fprintf(stderr, TOOL_NAME " serve: cannot get random bytes "
                    "for %s: %s\n", what, strerror(errno));
            return 1;
        }
        got += (size_t)n;
    }
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(out + 2 * i, 3, "%02x", raw[i]);
    explicit_bzero(raw, sizeof raw);
    return 0;
}

/* The token: read from token_file, or made by serve_random_hex().  0,
 * or the exit status after a message. */
static int serve_make_token(struct serve *s, const char *token_file)
{
    if (token_file != NULL) {
        char err[200];
        ssize_t n = util_read_private(token_file, s->token, HTTP_TOKEN_MAX,
                                      err, sizeof err);
        bool ok = n >= SERVE_TOKEN_MIN;
        for (ssize_t i = 0; ok && i < n; i++) {
            char ch = s->token[i];
            ok = (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
                 (ch >= 'A' && ch <= 'Z') ||
                 (ch != '\0' && strchr("-._~", ch) != NULL);
        }
        if (n < 0 || !ok) {
            /* The characters that a URL's query and fragment, a header
             * field and a cookie carry as they are. */
            fprintf(stderr, TOOL_NAME " serve: --token-file %s: %s\n",
                    token_file, n < 0 ? err : "expected a token of "
                    "32 to 128 characters of A-Z a-z 0-9 - . _ ~");
            explicit_bzero(s->token, sizeof s->token);
            return 1;
        }
        s->token[n] = '\0';
        return 0;
    }
    return serve_random_hex(s->token, "the token");
}

static int serve_listen(const char *where, char *name, size_t name_len)
{
    char spec[300];
    /* "PORT" alone means loopback. */
    if (strchr(where, ':') == NULL)
        snprintf(spec, sizeof spec, "tcp:127.0.0.1:%s", where);
    else
        snprintf(spec, sizeof spec, "tcp:%s", where);
    struct addrinfo *ai;
    char err[256];
    int rc = els_endpoint_resolve(spec, ELS_ENDPOINT_PASSIVE, &ai, err, sizeof err);
    if (rc < 0) {
        snprintf(name, name_len, "%s", err);
        return rc;
    }
    char at[256] = "";
    int fd = els_endpoint_listen_tcp(ai, 16, at, sizeof at);
    els_endpoint_free(ai);
    if (fd < 0) {
        snprintf(name, name_len, "cannot listen on %s: %s", at[0] ? at : where,
                 strerror(-fd));
        return fd;
    }
    if (els_endpoint_name(fd, name, name_len) < 0)
        snprintf(name, name_len, "%s", where);
    return fd;
}

static void serve_close_source(struct serve *s)
{
    if (s->all != NULL) {
        serve_all_free(s->all);
        serve_alerts_free(s->alerts);
    } else {
        serve_otlp_prog_free(s->otlp);  /* its last export, before the model goes */
        s->otlp = NULL;
        mon_close(&s->src, s->model);
        serve_tl_free(s->tl);
        s->tl = NULL;
    }
}

/* BYTES[K|M|G] (powers of 1024) into *out, at least 64 KiB. */
static bool serve_parse_bytes(const char *text, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (end == text || errno != 0 || text[0] == '-')
        return false;
    unsigned shift = 0;
    if (*end == 'K' || *end == 'k')
        shift = 10;
    else if (*end == 'M' || *end == 'm')
        shift = 20;
    else if (*end == 'G' || *end == 'g')
        shift = 30;
    if (shift != 0)
        end++;
    if (*end != '\0' || v > (UINT64_MAX >> shift) || (v << shift) < (64u << 10))
        return false;
    *out = (uint64_t)v << shift;
    return true;
}

/* What serve's command line asks for (serve_parse()). */
struct serve_opts {
    const char *listen_at;              /* --listen */
    const char *spec;                   /* SPEC or FILE; NULL with --all */
    const char *save, *save_dir;        /* --save, --save-dir */
    const char *secret_file, *token_file;
    uint64_t interval_ms, cooldown_ms;  /* --interval, --dump-cooldown */
    bool all, control, public_read;
    bool cooldown_given;
    const char *spool_dir;              /* --spool-dir */
    uint64_t spool_size, spool_total;   /* --spool-size, --spool-total */
    unsigned keep_ended;                /* --keep-ended */
    bool keep_given, total_given;
    struct serve_otlp_flags otlp;       /* --otlp-* (otlp.h) */
};

/* The command line into *o: TOOL_CONTINUE, or the exit status (after
 * --help or a usage error). */
static int serve_parse(int argc, char **argv, struct serve_opts *o)
{
    static const struct option opts[] = {
        { "listen", required_argument, NULL, 'l' },
        { "interval", required_argument, NULL, 'i' },
        { "save", required_argument, NULL, 's' },
        { "all", no_argument, NULL, 'a' },
        { "save-dir", required_argument, NULL, 'D' },
        { "control", no_argument, NULL, 'c' },
        { "secret-file", required_argument, NULL, 'S' },
        { "token-file", required_argument, NULL, 'T' },
        { "dump-cooldown", required_argument, NULL, 'C' },
        { "public-read", no_argument, NULL, 'P' },
        { "spool-dir", required_argument, NULL, 'd' },
        { "spool-size", required_argument, NULL, 'z' },
        { "spool-total", required_argument, NULL, 'Z' },
        { "keep-ended", required_argument, NULL, 'k' },
        { "help", no_argument, NULL, 'h' },
        SERVE_OTLP_OPTIONS,
        { NULL, 0, NULL, 0 },
    };
    *o = (struct serve_opts){
        .listen_at = "127.0.0.1:8089", .interval_ms = 1000,
        .cooldown_ms = SERVE_ALERT_COOLDOWN_MS,
        .spool_size = SERVE_SPOOL_DEFAULT, .spool_total = 4ull << 30,
        .keep_ended = 16,
    };
    int c, at;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, &at)) != -1) {
        switch (c) {
        case SERVE_OTLP_OPT:
            if ((c = serve_otlp_flag(&o->otlp, opts[at].name, optarg)) != 0)
                return c;
            break;
        case 'l': o->listen_at = optarg; break;
        case 'i':
            if ((c = mon_parse_interval("serve", optarg, &o->interval_ms)) != 0)
                return c;
            break;
        case 's': o->save = optarg; break;
        case 'a': o->all = true; break;
        case 'D': o->save_dir = optarg; break;
        case 'c': o->control = true; break;
        case 'S': o->secret_file = optarg; break;
        case 'T': o->token_file = optarg; break;
        case 'P': o->public_read = true; break;
        case 'C':
            if (!tool_parse_secs(optarg, &o->cooldown_ms))
                return tool_usage_error("serve", "--dump-cooldown takes "
                                        "seconds, not '%s'", optarg);
            o->cooldown_given = true;
            break;
        case 'd': o->spool_dir = optarg; break;
        case 'z':
        case 'Z':
            if (!serve_parse_bytes(optarg, c == 'z' ? &o->spool_size :
                                   &o->spool_total))
                return tool_usage_error("serve", "--%s takes bytes (64K, "
                                        "256M, 4G: at least 64K), not '%s'",
                                        c == 'z' ? "spool-size" : "spool-total",
                                        optarg);
            o->total_given |= c == 'Z';
            break;
        case 'k': {
            char *end;
            unsigned long n = strtoul(optarg, &end, 10);
            if (end == optarg || *end != '\0' || n > SERVE_ALL_MAX)
                return tool_usage_error("serve", "--keep-ended takes 0 .. %d, "
                                        "not '%s'", SERVE_ALL_MAX, optarg);
            o->keep_ended = (unsigned)n;
            o->keep_given = true;
            break;
        }
        case 'h': return tool_help(serve_usage);
        default: return tool_usage_error("serve", "unknown option");
        }
    }
    if (o->all) {
        if (optind != argc)
            return tool_usage_error("serve", "--all takes no SPEC");
        if (o->save != NULL)
            return tool_usage_error("serve", "--all does not take --save "
                                    "(see --save-dir)");
    } else {
        if (o->save_dir != NULL)
            return tool_usage_error("serve", "--save-dir needs --all");
        if (o->cooldown_given)
            return tool_usage_error("serve", "--dump-cooldown needs --all");
        if (o->keep_given || o->total_given)
            return tool_usage_error("serve", "--%s needs --all", o->keep_given ?
                                    "keep-ended" : "spool-total");
        if (optind + 1 != argc)
            return tool_usage_error("serve", "expected one SPEC or FILE");
        if ((c = disc_resolve_arg("serve", &argv[optind], false)) != 0)
            return c;
        o->spec = argv[optind];
    }
    if (o->cooldown_given && !o->control)
        return tool_usage_error("serve", "--dump-cooldown needs --control");
    return TOOL_CONTINUE;
}

/* The token, the cookie, the control session, the source(s) and the
 * listener (its name into name): 0, or the exit status after a message,
 * with nothing left open. */
static int serve_setup(struct serve *s, const struct serve_opts *o,
                       char *name, size_t name_len)
{
    int c;
    s->src.fd = -1;
    s->public_read = o->public_read;
    s->actions = o->control;
    if ((c = serve_otlp_start(&o->otlp)) != 0)
        return c;
    if ((c = serve_make_token(s, o->token_file)) != 0 ||
        (c = serve_random_hex(s->cookie, "the session cookie")) != 0)
        return c;
    /* With --all the token is the webhook's: no control session. */
    if ((c = mon_control_init(&s->control, "serve",
                              o->control && !o->all ? o->spec : NULL,
                              o->secret_file)) != 0)
        return c;
    const char *parent = o->spool_dir != NULL ? o->spool_dir :
                         serve_tl_default_parent();
    if (o->all && ((s->all = serve_all_new(o->save_dir, parent, o->spool_size,
                                           o->keep_ended, o->spool_total)) == NULL ||
                   (o->control &&
                    (s->alerts = serve_alerts_new(o->cooldown_ms)) == NULL))) {
        fprintf(stderr, TOOL_NAME " serve: out of memory\n");
        serve_all_free(s->all);
        serve_alerts_free(s->alerts);
        mon_control_close(&s->control);
        return 1;
    }
    if (!o->all) {
        /* The tap goes in before mon_open(), which reads at once; a FILE
         * is then indexed where it lies (serve_tl_catch_up()). */
        if ((s->tl = serve_tl_new(parent, NULL, o->spool_size)) == NULL) {
            fprintf(stderr, TOOL_NAME " serve: out of memory\n");
            mon_control_close(&s->control);
            return 1;
        }
        struct mon_taps taps = { .bytes = { .fn = serve_tl_tap, .ctx = s->tl } };
        if ((s->otlp = serve_otlp_prog_new(NULL, NULL, 0)) != NULL) {
            taps.events = serve_otlp_tap;               /* OTLP's, likewise */
            taps.events_ctx = s->otlp;
        }
        c = mon_open("serve", o->spec, o->save, false, &taps, &s->src, &s->model);
        serve_otlp_prog_attach(s->otlp, c == 0 ? s->model : NULL);
        if (c != 0) {
            serve_tl_free(s->tl);
            s->tl = NULL;
            mon_control_close(&s->control);
            return c;
        }
        if (mon_source_is_file(&s->src) &&
            serve_tl_set_file(s->tl, s->src.path) == 0 && !s->src.fresh &&
            s->src.fd >= 0)
            (void)serve_tl_catch_up(s->tl, s->src.offset);
    }
    s->listen_fd = serve_listen(o->listen_at, name, name_len);
    if (s->listen_fd < 0) {
        fprintf(stderr, TOOL_NAME " serve: %s\n", name);
        serve_close_source(s);
        mon_control_close(&s->control);
        return s->listen_fd == ELS_EINVAL ? TOOL_EXIT_USAGE : 1;
    }
    for (unsigned i = 0; i < SERVE_CLIENTS; i++)
        s->clients[i].fd = -1;
    serve_limits(&s->limits);
    return 0;
}

/* The cookie's name and the loopback rule from where the listener is
 * (name, "tcp:HOST:PORT"), then the warnings and the line with the URL. */
static void serve_announce(struct serve *s, const struct serve_opts *o,
                           const char *name)
{
    const char *hp = strncmp(name, "tcp:", 4) == 0 ? name + 4 : name;
    const char *port = strrchr(hp, ':');
    snprintf(s->cookie_name, sizeof s->cookie_name, "eventlog-sink-%s",
             port != NULL ? port + 1 : "serve");
    s->loopback = strncmp(hp, "127.", 4) == 0 || strncmp(hp, "[::1]", 5) == 0;
    if (!s->loopback)
        fprintf(stderr, TOOL_NAME " serve: warning: serving beyond this "
                "machine over plain HTTP: the token and the programs' data "
                "cross the network unencrypted (put a TLS proxy in front)%s\n",
                o->control && !o->all ? "; control requests are refused "
                "(loopback only)" : "");
    if (o->public_read)
        fprintf(stderr, TOOL_NAME " serve: warning: --public-read: the page, "
                "/api and /metrics answer %s without the token (actions "
                "still need it)\n", s->loopback ? "every user of this machine" :
                "anyone who can reach this port");
    /* One line, so that whoever waits for it reads the URL whole: the
     * page's URL with the token (or where the token is), and with --all
     * --control where alerts go. */
    char alerts[400] = "";
    if (o->all && o->control)
        snprintf(alerts, sizeof alerts, " (alerts: POST http://%s/api/"
                 "alertmanager with 'Authorization: Bearer' and the token)",
                 hp);
    if (o->token_file != NULL)
        fprintf(stderr, TOOL_NAME " serve: serving http://%s/ (open "
                "http://%s/?token= followed by the token in %s, or send "
                "'Authorization: Bearer' and that token)%s\n", hp, hp,
                o->token_file, alerts);
    else
        fprintf(stderr, TOOL_NAME " serve: serving http://%s/?token=%s%s\n",
                hp, s->token, alerts);
}

/* The loop's clock: when the model last ticked and ticks next. */
struct serve_clock {
    uint64_t interval_ms, last_tick, next_tick;
    bool whole_run_ticked;
    bool more;                  /* a source has more to read at once */
};

/* Read the source (single) or rescan (--all), tick the model(s) when
 * due and push the new figures to the event streams, and judge the
 * clients' deadlines. */
static void serve_step(struct serve *s, struct serve_clock *k, uint64_t now)
{
    uint64_t got = 0;
    if (s->all != NULL) {
        serve_all_scan(s->all, now);
        /* The programs' input: read after the poll (serve_wait()). */
    } else {
        got = mon_source_pump(&s->src, s->model, now, MON_PUMP_MAX);
        k->more = got == MON_PUMP_MAX;
        mon_control_poll(&s->control, now, s->src.opens,
                         mon_source_up(&s->src));
    }
    if (got > 0)
        k->whole_run_ticked = false;
    if (now >= k->next_tick) {
        if (s->all != NULL) {
            serve_all_tick(s->all, (now - k->last_tick) * 1000000ull);
        } else {
            /* A file read to its end and not growing: rates are the
             * run's averages (a saved eventlog); otherwise the last
             * interval's. */
            bool whole = mon_source_is_file(&s->src) && s->src.eof && got == 0;
            if (!(whole && k->whole_run_ticked))
                mon_model_tick(s->model, (now - k->last_tick) * 1000000ull,
                               whole);
            k->whole_run_ticked = whole;
        }
        k->last_tick = now;
        k->next_tick = now + k->interval_ms;
        serve_push(s);
    }
    serve_otlp_tick(now);
    serve_deadlines(s, now);
}

/* Fill pfd: the listener, the clients, then (single) the source or
 * (--all) the discovery watch and each program's source.  Their count,
 * and in *wait how long poll() may wait. */
static unsigned serve_pollfds(struct serve *s, const struct serve_clock *k,
                              struct pollfd *pfd, uint64_t now, uint64_t *wait)
{
    const unsigned base = 1 + SERVE_CLIENTS;
    unsigned npfd = base;
    *wait = k->next_tick > now ? k->next_tick - now : 0;
    pfd[0] = (struct pollfd){ .fd = s->listen_fd, .events = POLLIN };
    if (s->all != NULL) {
        npfd += serve_all_pollfds(s->all, pfd + base, now, wait);
    } else {
        pfd[npfd++] = (struct pollfd){ .fd = mon_source_fd(&s->src),
                                       .events = POLLIN };
        if ((mon_source_is_file(&s->src) || mon_source_fd(&s->src) < 0) &&
            *wait > 200)
            *wait = 200;
        /* A source waiting for its path retries sooner (source.c's
         * Note [Waiting for a path]). */
        uint64_t src_wait = mon_source_wait_ms(&s->src, now);
        if (src_wait < *wait)
            *wait = src_wait;
        uint64_t ctl_wait = mon_control_wait_ms(&s->control, now);
        if (ctl_wait < *wait)
            *wait = ctl_wait;
    }
    bool clients = false;
    for (unsigned i = 0; i < SERVE_CLIENTS; i++) {
        struct serve_client *cl = &s->clients[i];
        pfd[1 + i] = (struct pollfd){ .fd = cl->fd };
        if (cl->fd < 0)
            continue;
        clients = true;
        /* A paused client's input waits in the kernel (POLLIN would
         * wake us for ever for bytes we will not read). */
        if (!serve_paused(cl))
            pfd[1 + i].events |= POLLIN;
        if (cl->out.len > cl->out_off)
            pfd[1 + i].events |= POLLOUT;
    }
    if (clients && *wait > SERVE_DEADLINE_STEP_MS)
        *wait = SERVE_DEADLINE_STEP_MS; /* deadlines are judged in time */
    if (k->more)
        *wait = 0;              /* a source has more: read on after a look */
    return npfd;
}

/* After poll(): accept, read and write the clients whose descriptors
 * are ready, then send what this round's requests queued. */
static void serve_clients(struct serve *s, const struct pollfd *pfd,
                          uint64_t now)
{
    if (pfd[0].revents & POLLIN)
        serve_accept(s, now);
    for (unsigned i = 0; i < SERVE_CLIENTS; i++) {
        struct serve_client *cl = &s->clients[i];
        short re = pfd[1 + i].revents;
        if (cl->fd < 0 || pfd[1 + i].fd != cl->fd || re == 0)
            continue;
        if ((re & (POLLHUP | POLLERR)) && serve_paused(cl)) {
            serve_close(s, cl);         /* gone, with its answers unread */
            continue;
        }
        if (re & (POLLIN | POLLHUP | POLLERR))
            serve_read(s, cl, now);
        if (cl->fd >= 0 && !serve_flush(cl, now))
            serve_close(s, cl);
    }
    /* Responses queued by this round's requests go out at once; a
     * client back under its output bound has its waiting requests
     * handled. */
    for (unsigned i = 0; i < SERVE_CLIENTS; i++) {
        struct serve_client *cl = &s->clients[i];
        if (cl->fd >= 0 && cl->out.len > cl->out_off && !serve_flush(cl, now))
            serve_close(s, cl);
        if (cl->fd >= 0 && cl->in_len > 0 && !cl->closing && !cl->sse &&
            !serve_paused(cl)) {
            serve_requests(s, cl, now);
            if (cl->out.len > cl->out_off && !serve_flush(cl, now))
                serve_close(s, cl);
        }
    }
}

/* Until a stop signal: read, tick, poll, serve. */
static void serve_loop(struct serve *s, uint64_t interval_ms)
{
    static struct pollfd pfd[1 + SERVE_CLIENTS + 1 + SERVE_ALL_MAX];
    const unsigned base = 1 + SERVE_CLIENTS;
    struct serve_clock k = { .interval_ms = interval_ms };
    k.last_tick = mon_now_ms();
    k.next_tick = k.last_tick + interval_ms;
    while (!mon_stop) {
        uint64_t now = mon_now_ms();
        serve_step(s, &k, now);
        uint64_t wait;
        unsigned npfd = serve_pollfds(s, &k, pfd, now, &wait);
        int n = poll(pfd, npfd, (int)wait);
        now = mon_now_ms();
        if (s->all != NULL)
            k.more = serve_all_pump(s->all, pfd + base, npfd - base, now);
        if (n > 0)
            serve_clients(s, pfd, now);
    }
}

static void serve_teardown(struct serve *s)
{
    for (unsigned i = 0; i < SERVE_CLIENTS; i++)
        serve_close(s, &s->clients[i]);
    util_close(s->listen_fd);
    sb_free(&s->scratch);
    serve_close_source(s);
    serve_otlp_stop();
    mon_control_close(&s->control);
    explicit_bzero(s->token, sizeof s->token);
    explicit_bzero(s->cookie, sizeof s->cookie);
}

int serve_main(int argc, char **argv)
{
    struct serve_opts o;
    int c = serve_parse(argc, argv, &o);
    if (c != TOOL_CONTINUE)
        return c;
    static struct serve s;
    char name[300];
    if ((c = serve_setup(&s, &o, name, sizeof name)) != 0) {
        serve_otlp_stop();
        return c;
    }
    mon_catch_stop_signals();
    serve_announce(&s, &o, name);
    serve_loop(&s, o.interval_ms);
    serve_teardown(&s);
    return 0;
}
