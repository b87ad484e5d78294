/*
 * tool.h: what the subcommands of the eventlog-sink tool share.
 *
 * The command table lives in main.c; each subcommand is one file with one
 * entry point, declared here.  Adding a command is one line in main.c's
 * table, one declaration here, and its file (listed in Makefile.am).  The tool uses only the
 * library's public headers; the few descriptor helpers it needs beyond
 * them are in monitor/util.c.
 */
#ifndef ELS_TOOL_H
#define ELS_TOOL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define TOOL_NAME "eventlog-sink"

/* Exit status of a usage error, for every command. */
#define TOOL_EXIT_USAGE 2

/* What a command's option parser returns when the command goes on (any
 * other value is the exit status: --help, or a usage error). */
#define TOOL_CONTINUE (-1)

struct tool_command {
    const char *name;
    const char *summary;
    /* argv[0] is the command name; returns the exit status. */
    int (*run)(int argc, char **argv);
};

int recv_main(int argc, char **argv);
int dump_main(int argc, char **argv);
int ctl_main(int argc, char **argv);
int top_main(int argc, char **argv);
int serve_main(int argc, char **argv);
int ps_main(int argc, char **argv);

/* "eventlog-sink CMD: <message>\ntry 'eventlog-sink CMD --help'" on
 * stderr; returns TOOL_EXIT_USAGE. */
int tool_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* SECS: decimal seconds ("5", "0.5") from 0 to 86400, into milliseconds. */
bool tool_parse_secs(const char *text, uint64_t *ms);

/* Print a command's help to stdout; the exit status for --help. */
int tool_help(void (*usage)(FILE *out));

#endif /* ELS_TOOL_H */
