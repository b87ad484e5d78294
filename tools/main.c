/*
 * main.c: the eventlog-sink tool's entry point and command table.
 *
 * Chooses a subcommand by its exact name and hands it the rest of the
 * command line, and holds the option helpers the commands share.  What
 * each command does is its own file's business.  The map of tools/:
 *
 *   main.c tool.h      this table and the helpers every command shares
 *   dump.c ctl.c ps.c top.c
 *                      one file per small command
 *   recv/              recv: recv.c (connecting, copying, the command
 *                      line) and listen.c (--listen)
 *   serve/             serve: serve.c (command line, poll loop),
 *                      conn.c (connections), routes.c (what each path
 *                      answers), all.c (--all), alert.c (Alertmanager's
 *                      webhook), http.c (request parser), json.c (the
 *                      webhook's JSON reader)
 *   monitor/           the floor every command stands on: the live model,
 *                      its source and renderers (top and serve), the page
 *                      serve embeds, ctlclient.c (the control channel's
 *                      client), safetext.c (untrusted text made safe to
 *                      print), util.c (descriptor plumbing); it calls
 *                      nothing of tools/ outside it
 *   timeline/          the zoomable timeline's spool, index and queries
 *   otlp/              OpenTelemetry export: encoders, configuration,
 *                      the delivery queue
 *   discover.c         the discovery directory's reader (ps, ctl, top,
 *                      serve, recv)
 *   profile*.c         dump's .hp and .prof converters
 */
#if defined(HAVE_CONFIG_H)
#include "config.h"
#endif

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "monitor/usage.h"
#include "tool.h"

#if defined(PACKAGE_VERSION)
#define TOOL_VERSION PACKAGE_VERSION
#else
#define TOOL_VERSION "0.1.0"
#endif

static const struct tool_command tool_commands[] = {
    { "recv", "receive one eventlog stream from a socket or FIFO", recv_main },
    { "dump", "print an eventlog's events or counts, or rebuild .hp and .prof files",
      dump_main },
    { "ctl", "send control commands to a running program (control=1, control=unix:)",
      ctl_main },
    { "top", "show a running program's runtime in the terminal", top_main },
    { "serve", "serve a live web view and /metrics of a program (--all: of every one)",
      serve_main },
    { "ps", "list this user's programs that stream their eventlog", ps_main },
};

#define TOOL_N_COMMANDS (sizeof tool_commands / sizeof tool_commands[0])

static void tool_usage(FILE *out)
{
    fprintf(out,
            "Usage: " TOOL_NAME " COMMAND [ARGS...]\n"
            "       " TOOL_NAME " --help | --version\n"
            "\n"
            "Commands:\n");
    for (size_t i = 0; i < TOOL_N_COMMANDS; i++)
        fprintf(out, "  %-8s %s\n", tool_commands[i].name,
                tool_commands[i].summary);
    fprintf(out,
            "\n"
            "Run '" TOOL_NAME " COMMAND --help' for the options of a "
            "command.\n");
}

/* The monitor's form (tools/monitor/usage.c) is the tool's one form. */
int tool_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = mon_usage_verror(cmd, fmt, ap);
    va_end(ap);
    return rc;
}

bool tool_parse_secs(const char *text, uint64_t *ms)
{
    return mon_parse_secs(text, ms);
}

int tool_help(void (*usage)(FILE *out))
{
    usage(stdout);
    return fflush(stdout) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        tool_usage(stderr);
        return TOOL_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0)
        return tool_help(tool_usage);
    if (strcmp(cmd, "--version") == 0) {
        printf(TOOL_NAME " %s\n", TOOL_VERSION);
        return fflush(stdout) == 0 ? 0 : 1;
    }
    for (size_t i = 0; i < TOOL_N_COMMANDS; i++)
        if (strcmp(cmd, tool_commands[i].name) == 0)
            return tool_commands[i].run(argc - 1, argv + 1);

    fprintf(stderr, TOOL_NAME ": unknown command '%s'\n"
            "try '" TOOL_NAME " --help'\n", cmd);
    return TOOL_EXIT_USAGE;
}
