/*
 * top.c: `eventlog-sink top`, the live monitor in a terminal.
 *
 * Reads a program's eventlog from a sink's socket, a FIFO or a file a
 * stock `+RTS -l` is still writing (tools/monitor/source.c), folds it into
 * the monitor's model (tools/monitor/model.c; README, "What the figures
 * count") and redraws the figures
 * every interval: in place on a terminal (ANSI), as blocks of lines
 * otherwise, as one JSON object per interval with --json.  --once prints
 * one view and exits.  It sends nothing to the program unless given
 * --control: then keys run the monitor's control actions
 * (tools/monitor/control.c) on a control-only session with the program,
 * and the status line shows each answer.
 *
 * Our own process, so it may set signal dispositions: SIGINT and SIGTERM
 * set a flag that ends the loop (and restores the terminal); plain lines
 * and JSON then get one last view.
 */
#if defined(HAVE_CONFIG_H)
#include "config.h"
#endif

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "monitor/control.h"
#include "monitor/run.h"
#include "discover.h"
#include "tool.h"

static void top_usage(FILE *out)
{
    fprintf(out,
"Usage: " TOOL_NAME " top [OPTIONS] SPEC|FILE\n"
"\n"
"Show what a GHC program's runtime is doing, from its eventlog: per\n"
"capability activity, GC, heap and the last heap census, threads and\n"
"their stops, sparks, events per second and by type, cost centres,\n"
"user markers and messages, bytes received and reported losses.\n"
"\n"
"SPEC|FILE is unix:PATH or tcp:[HOST:]PORT (a sink serving consumers),\n"
"fifo:PATH, pid:PID or name:NAME (a program `" TOOL_NAME " ps` lists),\n"
"or a file (file:PATH or a path), followed as it grows, as a\n"
"stock `+RTS -l` writes it.  A unix: socket or a file that does not\n"
"exist yet is watched for and read as soon as it appears.  When the\n"
"stream ends or the file is replaced or truncated (the program\n"
"restarted), the view starts over with the new run.\n"
"\n"
"GC collections count each collection once (+RTS -s's colls), per\n"
"generation; a pause is the collection leader's GC start to end (+RTS\n"
"-s's Max pause); GC starts are every capability's.  Allocation is the\n"
"sum of every capability's total.  Time in GC is the share of the\n"
"capabilities' time spent in GC pauses (pauses summed over capabilities\n"
"/ (interval x capabilities)).  Text from the stream or the program\n"
"(names, messages, markers, labels, answers) is shown with control\n"
"characters escaped (\\u{1B}, \\xHH) and a backslash doubled;\n"
"--json keeps it exact.\n"
"\n"
"Options:\n"
"  --once           print one view and exit: a file is read to its\n"
"                   current end, however long that takes (rates are\n"
"                   then run averages), a socket or FIFO for one\n"
"                   interval; a target that is not there (no such\n"
"                   socket or file, a connection refused) is an error\n"
"  --json           print the figures as one JSON object per view (with\n"
"                   --control, the control session's state too)\n"
"  --interval SECS  refresh interval (default 1)\n"
"  --lines          plain lines even on a terminal\n"
"  --save FILE      copy the stream as received to FILE (a new run\n"
"                   replaces it)\n"
"  --control        enable the control keys: a control session with the\n"
"                   program at SPEC (unix: or tcp:; its sink needs\n"
"                   control=1), opened whenever its stream connects\n"
"  --secret-file FILE  the control secret (tcp:), as for ctl\n"
"  -h, --help       this help\n"
"\n"
"Keys (on a terminal): q quits.  With --control: f flush, s snapshot,\n"
"h heap census, c then a class letter (s g n p f u) toggles that class,\n"
"i status, t stats, R restart the eventlog, X then y stop it.  The\n"
"status line shows each answer (or why there is none: without --control\n"
"the keys say control is not enabled).\n"
"SIGINT or SIGTERM stops it; with plain lines or --json it prints one\n"
"last view first.\n"
"Without --once, a target that is not there yet is waited for, and a\n"
"line on stderr says so at start.\n"
"Exit status: 0, 1 if the stream was malformed or the target could not\n"
"be read (--once), 2 usage.\n");
}

struct top_term {
    bool active;
    struct termios saved;
};

static void top_term_enter(struct top_term *t)
{
    if (tcgetattr(STDIN_FILENO, &t->saved) == 0) {
        struct termios raw = t->saved;
        raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
        raw.c_cc[VMIN] = 0;
        raw.c_cc[VTIME] = 0;
        (void)tcsetattr(STDIN_FILENO, TCSANOW, &raw);
        t->active = true;
    }
    /* Alternate screen, cursor hidden. */
    fputs("\x1b[?1049h\x1b[?25l", stdout);
}

static void top_term_leave(struct top_term *t)
{
    fputs("\x1b[?25h\x1b[?1049l", stdout);
    fflush(stdout);
    if (t->active)
        (void)tcsetattr(STDIN_FILENO, TCSANOW, &t->saved);
}

static unsigned top_width(void)
{
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    return 100;
}

/* The keys' state: a 'c' or 'X' waits for its second key. */
struct top_keys {
    char pending;
    bool keyed;                         /* line answers a key */
    char line[CTLC_TEXT_MAX + 100];     /* the status line */
};

static void top_render(struct mon_model *m, struct mon_control *mc, bool json,
                       bool ansi, struct top_keys *k, struct strbuf *sb)
{
    sb_clear(sb);
    if (!k->keyed) {
        /* No key yet: the session's state, as it changes. */
        struct strbuf st = { 0 };
        mon_control_state_text(mc, &st);
        snprintf(k->line, sizeof k->line, "control: %s",
                 st.failed || st.p == NULL ? "?" : st.p);
        sb_free(&st);
    }
    if (json) {
        mon_model_json(m, sb);
        /* With --control, the session too: the object's last member. */
        if (mc->enabled && sb->len > 0 && sb->p[sb->len - 1] == '}') {
            sb->len--;
            sb_puts(sb, ",\"control\":");
            mon_control_json(mc, sb);
            sb_puts(sb, "}");
        }
        sb_puts(sb, "\n");
    } else {
        if (ansi)
            sb_puts(sb, "\x1b[H\x1b[2J");
        mon_model_text(m, sb, top_width());
        if (ansi)
            sb_printf(sb, "\n%s\n(q quits; f flush, s snapshot, h heap census, "
                      "c+letter class, i status, t stats, R restart, X stop)",
                      k->line);
        else
            sb_puts(sb, "\n");
    }
    if (!sb->failed && sb->p != NULL)
        fwrite(sb->p, 1, sb->len, stdout);
    fflush(stdout);
}

/* Run an action; its answer goes to the status line, in its safe form
 * (what the program sends never reaches the terminal raw). */
static void top_act(struct mon_control *mc, struct top_keys *k,
                    const char *action, const char *arg)
{
    struct mon_ctl_result r;
    struct strbuf sb = { 0 };
    snprintf(k->line, sizeof k->line, "control: %s ...", action);
    mon_control_run(mc, action, arg, &r);
    mon_control_result_text(&r, &sb);
    snprintf(k->line, sizeof k->line, "control: %s", sb.failed ? "?" : sb.p);
    sb_free(&sb);
}

/* One key; false for q. */
static bool top_key(struct mon_control *mc, struct top_keys *k, char key)
{
    char pending = k->pending;
    k->pending = 0;
    if (strchr("fshitRcX", key) != NULL || pending != 0)
        k->keyed = true;
    if (pending == 'c') {
        char arg[2] = { key, '\0' };
        if (strchr(MON_CTL_CLASSES, key) != NULL && key != '\0')
            top_act(mc, k, "toggle-class", arg);
        else
            snprintf(k->line, sizeof k->line, "control: no class '%c' (one of "
                     MON_CTL_CLASSES ")", key);
        return true;
    }
    if (pending == 'X') {
        if (key == 'y')
            top_act(mc, k, "stop", "");
        else
            snprintf(k->line, sizeof k->line, "control: stop cancelled");
        return true;
    }
    switch (key) {
    case 'q': return false;
    case 'f': top_act(mc, k, "flush", ""); break;
    case 's': top_act(mc, k, "snapshot", ""); break;
    case 'h': top_act(mc, k, "heap-census", ""); break;
    case 'i': top_act(mc, k, "status", ""); break;
    case 't': top_act(mc, k, "stats", ""); break;
    case 'R': top_act(mc, k, "restart", ""); break;
    case 'c':
        k->pending = 'c';
        snprintf(k->line, sizeof k->line, "control: class to toggle? "
                 "(s g n p f u)");
        break;
    case 'X':
        k->pending = 'X';
        snprintf(k->line, sizeof k->line, "control: stop the program's "
                 "eventlog? (y: stop; there is no start)");
        break;
    default: break;
    }
    return true;
}

/* What top's command line asks for (top_parse()). */
struct top_opts {
    const char *spec;
    const char *save, *secret_file;     /* --save, --secret-file */
    uint64_t interval_ms;               /* --interval */
    bool once, json, lines, control;
};

/* The command line into *o: TOOL_CONTINUE, or the exit status (after
 * --help or a usage error). */
static int top_parse(int argc, char **argv, struct top_opts *o)
{
    static const struct option opts[] = {
        { "once", no_argument, NULL, 'o' },
        { "json", no_argument, NULL, 'j' },
        { "interval", required_argument, NULL, 'i' },
        { "lines", no_argument, NULL, 'l' },
        { "save", required_argument, NULL, 's' },
        { "control", no_argument, NULL, 'c' },
        { "secret-file", required_argument, NULL, 'S' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    *o = (struct top_opts){ .interval_ms = 1000 };
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': o->once = true; break;
        case 'j': o->json = true; break;
        case 'l': o->lines = true; break;
        case 'i':
            if ((c = mon_parse_interval("top", optarg, &o->interval_ms)) != 0)
                return c;
            break;
        case 's': o->save = optarg; break;
        case 'c': o->control = true; break;
        case 'S': o->secret_file = optarg; break;
        case 'h': return tool_help(top_usage);
        default: return tool_usage_error("top", "unknown option");
        }
    }
    if (optind + 1 != argc)
        return tool_usage_error("top", "expected one SPEC or FILE");
    if ((c = disc_resolve_arg("top", &argv[optind], false)) != 0)
        return c;
    o->spec = argv[optind];
    return TOOL_CONTINUE;
}

/* How long to wait for input before the next tick or retry. */
static uint64_t top_wait_ms(struct mon_source *src, struct mon_control *mc,
                            uint64_t now, uint64_t next_tick, bool more)
{
    /* Files have nothing to poll: look again 5 times a second. */
    uint64_t wait = next_tick > now ? next_tick - now : 0;
    if ((mon_source_is_file(src) || mon_source_fd(src) < 0) && wait > 200)
        wait = 200;
    /* A source waiting for its path retries sooner (source.c's Note
     * [Waiting for a path]). */
    uint64_t src_wait = mon_source_wait_ms(src, now);
    if (src_wait < wait)
        wait = src_wait;
    uint64_t ctl_wait = mon_control_wait_ms(mc, now);
    if (ctl_wait < wait)
        wait = ctl_wait;
    if (more)
        wait = 0;               /* the source has more: read on after a look */
    return wait;
}

/* The keys waiting on the terminal: false when one of them quits. */
static bool top_read_keys(struct mon_control *mc, struct top_keys *keys,
                          bool *redraw)
{
    char k[16];
    ssize_t r = read(STDIN_FILENO, k, sizeof k);
    bool go_on = true;
    for (ssize_t i = 0; i < r && go_on; i++) {
        if (k[i] == '\x1b')
            break;          /* an escape sequence (arrows...): not ours */
        go_on = top_key(mc, keys, k[i]);
    }
    *redraw = r > 0;
    return go_on;
}

int top_main(int argc, char **argv)
{
    struct top_opts o;
    int c = top_parse(argc, argv, &o);
    if (c != TOOL_CONTINUE)
        return c;

    static struct mon_control mc;
    if ((c = mon_control_init(&mc, "top", o.control ? o.spec : NULL,
                              o.secret_file)) != 0)
        return c;
    struct mon_source src;
    struct mon_model *m;
    if ((c = mon_open("top", o.spec, o.save, o.once, NULL, &src, &m)) != 0) {
        mon_control_close(&mc);
        return c;
    }
    struct top_keys keys_state = { 0 };
    mon_catch_stop_signals();

    bool once = o.once, json = o.json;
    bool ansi = !json && !once && !o.lines && isatty(STDOUT_FILENO);
    bool keys = ansi && isatty(STDIN_FILENO);
    struct top_term term = { 0 };
    if (ansi)
        top_term_enter(&term);

    struct strbuf sb = { 0 };
    uint64_t start = mon_now_ms(), last_tick = start;
    uint64_t next_tick = start + o.interval_ms;
    int status = 0;
    /* --once on a file reads all of it, however long that takes: no
     * interval ends it, as a view of part of the file would pass for
     * the whole run's. */
    bool whole_file = once && mon_source_is_file(&src);
    for (;;) {
        uint64_t now = mon_now_ms();
        bool more = mon_source_pump(&src, m, now, MON_PUMP_MAX) == MON_PUMP_MAX;
        mon_control_poll(&mc, now, src.opens, mon_source_up(&src));
        if (whole_file && src.eof) {
            mon_model_tick(m, 0, true);
            top_render(m, &mc, json, false, &keys_state, &sb);
            status = mon_model_error(m) != NULL ? 1 : 0;
            break;
        }
        if (whole_file && !mon_source_up(&src)) {
            /* Replaced while read, and the new one cannot be opened. */
            char why[160];
            mon_source_why(&src, why, sizeof why);
            fprintf(stderr, TOOL_NAME " top: cannot read %s: %s\n", src.spec,
                    why);
            status = 1;
            break;
        }
        now = mon_now_ms();
        if (!whole_file && now >= next_tick) {
            if (once && (status = mon_once_reached("top", &src)) != 0)
                break;
            mon_model_tick(m, (now - last_tick) * 1000000ull, false);
            last_tick = now;
            next_tick = now + o.interval_ms;
            top_render(m, &mc, json, ansi, &keys_state, &sb);
            if (once) {
                status = mon_model_error(m) != NULL ? 1 : 0;
                break;
            }
        }
        if (mon_stop) {
            /* Lines and JSON go to a file or a pipe: end them with the
             * figures as they stand, not as of the last interval. */
            if (!ansi) {
                mon_model_tick(m, (now - last_tick) * 1000000ull, false);
                top_render(m, &mc, json, false, &keys_state, &sb);
            }
            break;
        }
        struct pollfd pfd[2] = {
            { .fd = mon_source_fd(&src), .events = POLLIN },
            { .fd = keys ? STDIN_FILENO : -1, .events = POLLIN },
        };
        int n = poll(pfd, 2, (int)top_wait_ms(&src, &mc, now, next_tick, more));
        if (n > 0 && (pfd[1].revents & POLLIN)) {
            bool redraw;
            if (!top_read_keys(&mc, &keys_state, &redraw))
                break;
            if (redraw)
                top_render(m, &mc, json, ansi, &keys_state, &sb);
        }
    }
    if (ansi)
        top_term_leave(&term);
    if (sb.failed)
        fprintf(stderr, TOOL_NAME " top: out of memory\n");
    sb_free(&sb);
    mon_close(&src, m);
    mon_control_close(&mc);
    return status;
}
