/*
 * usage.h: how the monitor's files speak to the user of the command
 * that runs them (`top`, `serve`): the tool's name on every line, and a
 * usage error in the tool's one form.  Here so that tools/monitor/
 * needs nothing from the tool above it (tools/main.c keeps the same
 * form for the other commands).
 */
#ifndef ELS_MON_USAGE_H
#define ELS_MON_USAGE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#define MON_TOOL_NAME "eventlog-sink"

/* The exit status of a usage error (the tool's TOOL_EXIT_USAGE). */
#define MON_EXIT_USAGE 2

/* "eventlog-sink CMD: <message>\ntry 'eventlog-sink CMD --help'" on
 * stderr; returns MON_EXIT_USAGE. */
int mon_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int mon_usage_verror(const char *cmd, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* SECS: decimal seconds ("5", "0.5") from 0 to 86400, into milliseconds. */
bool mon_parse_secs(const char *text, uint64_t *ms);

#endif /* ELS_MON_USAGE_H */
