/*
 * usage.c: the monitor's usage errors and SECS arguments (see usage.h),
 * in the same words as the rest of the tool.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "usage.h"

int mon_usage_verror(const char *cmd, const char *fmt, va_list ap)
{
    fprintf(stderr, MON_TOOL_NAME " %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\ntry '" MON_TOOL_NAME " %s --help'\n", cmd);
    return MON_EXIT_USAGE;
}

int mon_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = mon_usage_verror(cmd, fmt, ap);
    va_end(ap);
    return rc;
}

bool mon_parse_secs(const char *text, uint64_t *ms)
{
    bool digit = false, dot = false;
    for (const char *p = text; *p != '\0'; p++) {
        if (*p >= '0' && *p <= '9')
            digit = true;
        else if (*p == '.' && !dot)
            dot = true;
        else
            return false;
    }
    if (!digit)
        return false;
    double secs = strtod(text, NULL);
    if (!(secs >= 0.0 && secs <= 86400.0))
        return false;
    *ms = (uint64_t)(secs * 1000.0 + 0.5);
    return true;
}
