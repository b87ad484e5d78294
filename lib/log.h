/*
 * log.h: the library's only way to say anything.  Formats one line and
 * hands it to the hook set by els_set_log_hook() (default: stderr).  It does
 * not decide what is worth saying; callers do.
 */
#ifndef ELS_LOG_H
#define ELS_LOG_H

#include "eventlog-sink.h"

#if defined(__GNUC__)
#define ELSI_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define ELSI_PRINTF(f, a)
#endif

void elsi_log(enum els_log_level level, const char *fmt, ...) ELSI_PRINTF(2, 3);

/* Write one formatted line into err (if err != NULL and err_len > 0) and
 * return code, so that failure paths read `return elsi_fail(...)`. */
int elsi_fail(char *err, size_t err_len, int code, const char *fmt, ...)
    ELSI_PRINTF(4, 5);

#endif /* ELS_LOG_H */
