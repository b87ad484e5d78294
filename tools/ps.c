/*
 * ps.c: `eventlog-sink ps`, the programs of this user streaming their
 * eventlog on this host, from the discovery directory (discover.h): pid,
 * name, uptime, and per sink (a program may have several: +RTS
 * --eventlog-sink=SPEC|SPEC) its endpoint, control socket and, for a sink
 * with control on, its consumers now and losses, asked with the `stats`
 * command over a short deadline ("-" when control is off or the program
 * does not answer).
 * Text from the files goes through safetext (a table) or JSON escapes
 * (--json, as Note [Exact and safe JSON] in ctl.c).  Not its job: the
 * directory's rules (discover.c), the control protocol (ctlclient.c).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "monitor/ctlclient.h"
#include "discover.h"
#include "monitor/safetext.h"
#include "tool.h"

static void ps_usage(FILE *out)
{
    fprintf(out,
"Usage: " TOOL_NAME " ps [--json] [--timeout SECS]\n"
"\n"
"List this user's programs that stream their eventlog to a sink, from the\n"
"discovery directory ($XDG_RUNTIME_DIR/eventlog-sink, else\n"
"${TMPDIR:-/tmp}/eventlog-sink-UID), where each announces itself unless its\n"
"spec says announce=0.  Entries of programs that are gone (or whose pid\n"
"now belongs to another process, or that no longer hold their sockets:\n"
"they exec'd) are skipped and removed.  Entries that are not trusted\n"
"(another user's, writable by others, naming a relative path or no\n"
"socket the program holds) are skipped with a line on stderr saying why.\n"
"\n"
"Columns: PID, NAME, UPTIME (seconds), SINK (where a consumer connects),\n"
"CONTROL (the control socket, or -), CONSUMERS (now, not counting ps's own\n"
"control session) and LOST (units the\n"
"writer dropped plus units slow consumers missed), both asked over the\n"
"sink's control socket ('-' when control is off or there is no answer).\n"
"A program with several sinks has a line per sink, the first with its\n"
"PID, NAME and UPTIME.\n"
"\n"
"Options:\n"
"  -j, --json          one JSON array of objects (pid, start, name, argv,\n"
"                      uptime_s, sinks [{spec, endpoint, control,\n"
"                      consumers, dropped_units, consumer_lost_units}],\n"
"                      and consumers, dropped_units, consumer_lost_units\n"
"                      of its first sink with control; null when not\n"
"                      known)\n"
"  -t, --timeout SECS  how long to wait for each program's answer\n"
"                      (default 0.5)\n"
"  -h, --help          show this help\n"
"\n"
"pid:PID and name:NAME name a listed program wherever top, serve, ctl and\n"
"recv take a spec.\n");
}

struct ps_stats {
    bool known;
    uint64_t consumers, dropped, consumer_lost;
};

/* "units accepted A sent S dropped D ...; consumers N now, ...;
 * consumer losses L units; ..." (els_stats_format()). */
static bool ps_parse_stats(const char *text, struct ps_stats *st)
{
    const char *p = strstr(text, " dropped ");
    const char *c = strstr(text, "consumers ");
    const char *l = strstr(text, "consumer losses ");
    if (p == NULL || c == NULL || l == NULL)
        return false;
    st->dropped = strtoull(p + 9, NULL, 10);
    st->consumers = strtoull(c + 10, NULL, 10);
    st->consumer_lost = strtoull(l + 16, NULL, 10);
    return true;
}

/* The counters of e's sink k, over its control socket. */
static void ps_ask(const struct disc_entry *e, size_t k, uint64_t timeout_ms,
                   struct ps_stats *st)
{
    memset(st, 0, sizeof *st);
    const char *ctl = e->sinks[k].control;
    if (ctl == NULL)
        return;
    static struct ctlc conn;
    struct ctlc_answer a;
    char err[700];
    /* A TCP control socket wants a secret ps does not have: its hello
     * fails and the columns say "-". */
    if (ctlc_open(&conn, ctl, NULL, 0, timeout_ms, &a, err, sizeof err) != 0)
        return;
    if (a.status == 0 && ctlc_call(&conn, "stats", timeout_ms, &a) == 0 &&
        a.status == 0)
        st->known = ps_parse_stats(a.text, st);
    /* Our own session is one of the sink's clients, and counted, over
     * control=1 and over a control socket of its own (control=unix:)
     * alike (elsi_consumer_attach_control()): the column means the
     * others. */
    if (st->known && st->consumers > 0)
        st->consumers--;
    ctlc_close(&conn);
}

/* See Note [Exact and safe JSON] in safetext.h: the same rule. */
static void ps_json_string(const char *s)
{
    safetext_json_fput(stdout, s, strlen(s));
}

/* Seconds since boot, from /proc/uptime; -1 when unknown. */
static double ps_boot_uptime(void)
{
    FILE *f = fopen("/proc/uptime", "re");
    double up = -1;
    if (f != NULL) {
        if (fscanf(f, "%lf", &up) != 1)
            up = -1;
        fclose(f);
    }
    return up;
}

static long ps_uptime(const struct disc_entry *e, double boot_up)
{
    long tck = sysconf(_SC_CLK_TCK);
    if (boot_up < 0 || tck <= 0)
        return -1;
    double s = boot_up - (double)e->start / (double)tck;
    return s < 0 ? 0 : (long)s;
}

static void ps_cell(const char *s, int width)
{
    char buf[512];
    size_t n = safetext_copy(buf, sizeof buf, s, strlen(s));
    fputs(buf, stdout);
    for (int i = (int)n; i < width; i++)
        putchar(' ');
}

/* ,"consumers":N,"dropped_units":N,"consumer_lost_units":N (or nulls). */
static void ps_json_stats(const struct ps_stats *st)
{
    if (st->known)
        printf(",\"consumers\":%" PRIu64 ",\"dropped_units\":%" PRIu64
               ",\"consumer_lost_units\":%" PRIu64, st->consumers,
               st->dropped, st->consumer_lost);
    else
        fputs(",\"consumers\":null,\"dropped_units\":null,"
              "\"consumer_lost_units\":null", stdout);
}

/* st holds DISC_SINKS_MAX counters per entry, one per sink. */
static void ps_print_json(const struct disc_list *l, const struct ps_stats *st,
                          double boot_up)
{
    putchar('[');
    for (size_t i = 0; i < l->n; i++) {
        const struct disc_entry *e = &l->v[i];
        printf("%s\n{\"pid\":%ld,\"start\":%" PRIu64 ",\"name\":", i ? "," : "",
               e->pid, e->start);
        ps_json_string(e->name);
        fputs(",\"argv\":[", stdout);
        for (size_t a = 0; a < e->argc; a++) {
            if (a)
                putchar(',');
            ps_json_string(e->argv[a]);
        }
        long up = ps_uptime(e, boot_up);
        if (up >= 0)
            printf("],\"uptime_s\":%ld,\"sinks\":[", up);
        else
            fputs("],\"uptime_s\":null,\"sinks\":[", stdout);
        const struct ps_stats *first = NULL;    /* of a sink with control */
        for (size_t s = 0; s < e->n_sinks; s++) {
            const struct disc_sink *k = &e->sinks[s];
            fputs(s ? ",{\"spec\":" : "{\"spec\":", stdout);
            ps_json_string(k->spec ? k->spec : "");
            fputs(",\"endpoint\":", stdout);
            ps_json_string(k->endpoint ? k->endpoint : "");
            fputs(",\"control\":", stdout);
            if (k->control)
                ps_json_string(k->control);
            else
                fputs("null", stdout);
            ps_json_stats(&st[i * DISC_SINKS_MAX + s]);
            putchar('}');
            if (first == NULL && k->control != NULL)
                first = &st[i * DISC_SINKS_MAX + s];
        }
        putchar(']');
        static const struct ps_stats unknown;
        ps_json_stats(first != NULL ? first : &unknown);
        putchar('}');
    }
    fputs(l->n ? "\n]\n" : "]\n", stdout);
}

static void ps_print_table(const struct disc_list *l, const struct ps_stats *st,
                           double boot_up)
{
    printf("%-8s %-16s %8s %-32s %-32s %9s %8s\n", "PID", "NAME", "UPTIME",
           "SINK", "CONTROL", "CONSUMERS", "LOST");
    for (size_t i = 0; i < l->n; i++) {
        const struct disc_entry *e = &l->v[i];
        /* A line per sink (one with "-" for an entry without any). */
        for (size_t s = 0; s == 0 || s < e->n_sinks; s++) {
            const struct disc_sink *k = e->n_sinks ? &e->sinks[s] : NULL;
            const struct ps_stats *ks = &st[i * DISC_SINKS_MAX + s];
            if (s == 0) {
                printf("%-8ld ", e->pid);
                ps_cell(e->name, 16);
                long up = ps_uptime(e, boot_up);
                if (up >= 0)
                    printf(" %8ld ", up);
                else
                    printf(" %8s ", "-");
            } else {
                printf("%-8s %-16s %8s ", "", "", "");
            }
            ps_cell(k && k->endpoint ? k->endpoint : "-", 32);
            putchar(' ');
            ps_cell(k && k->control ? k->control : "-", 32);
            if (ks->known)
                printf(" %9" PRIu64 " %8" PRIu64 "\n", ks->consumers,
                       ks->dropped + ks->consumer_lost);
            else
                printf(" %9s %8s\n", "-", "-");
        }
    }
}

int ps_main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "json", no_argument, NULL, 'j' },
        { "timeout", required_argument, NULL, 't' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    bool json = false;
    uint64_t timeout_ms = 500;
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "+jt:h", opts, NULL)) != -1) {
        switch (opt) {
        case 'j':
            json = true;
            break;
        case 't':
            if (!tool_parse_secs(optarg, &timeout_ms) || timeout_ms == 0)
                return tool_usage_error("ps", "--timeout %s: expected "
                                        "seconds like 0.5", optarg);
            break;
        case 'h':
            return tool_help(ps_usage);
        default:
            return tool_usage_error("ps", "unknown option '%s'",
                                    argv[optind - 1]);
        }
    }
    if (optind != argc)
        return tool_usage_error("ps", "unexpected argument '%s'",
                                argv[optind]);

    struct disc_list l;
    char err[700];
    if (disc_scan(&l, err, sizeof err) != 0) {
        fprintf(stderr, TOOL_NAME " ps: %s\n", err);
        return 1;
    }
    for (size_t i = 0; i < l.n_notes; i++)
        fprintf(stderr, TOOL_NAME " ps: left out %s\n", l.notes[i].text);
    struct ps_stats *st = calloc((l.n ? l.n : 1) * DISC_SINKS_MAX, sizeof *st);
    if (st == NULL) {
        disc_list_free(&l);
        fprintf(stderr, TOOL_NAME " ps: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < l.n; i++)
        for (size_t k = 0; k < l.v[i].n_sinks; k++)
            ps_ask(&l.v[i], k, timeout_ms, &st[i * DISC_SINKS_MAX + k]);
    double boot_up = ps_boot_uptime();
    if (json)
        ps_print_json(&l, st, boot_up);
    else
        ps_print_table(&l, st, boot_up);
    free(st);
    disc_list_free(&l);
    return fflush(stdout) == 0 ? 0 : 1;
}
