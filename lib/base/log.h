/*
 * log.h: the library's only way to say anything.  Formats one line and
 * hands it to the hook set by els_set_log_hook() (default: stderr), writes
 * one-line errors into callers' buffers, and quotes untrusted text for
 * both.  It does not decide what is worth saying; callers do.
 */
#ifndef ELS_LOG_H
#define ELS_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "eventlog-sink.h"

#if defined(__GNUC__)
#define ELSI_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define ELSI_PRINTF(f, a)
#endif

/* Format one line (cut with "..." past 511 bytes), write its control
 * bytes and DEL as \xNN, and hand it to the hook. */
void elsi_log(enum els_log_level level, const char *fmt, ...) ELSI_PRINTF(2, 3);

/* A message that can repeat for as long as a fault lasts (a failing sink,
 * accept() out of descriptors, a consumer refused) goes through a rate
 * limit: at most one line per interval_ms, and the next line that gets
 * through says how many were suppressed.  A struct elsi_ratelimit starts
 * zeroed and belongs to one thread (or is used under its owner's lock). */
struct elsi_ratelimit {
    uint64_t next_ms;           /* CLOCK_MONOTONIC ms of the next allowed line */
    uint64_t suppressed;        /* lines held back since the last one */
};

void elsi_log_limited(struct elsi_ratelimit *rl, unsigned interval_ms,
                      enum els_log_level level, const char *fmt, ...)
    ELSI_PRINTF(4, 5);

/* Write one formatted line into err (if err != NULL and err_len > 0) and
 * return code, so that failure paths read `return elsi_fail(...)`. */
int elsi_fail(char *err, size_t err_len, int code, const char *fmt, ...)
    ELSI_PRINTF(4, 5);

/* Copy n bytes of s into buf for quoting inside "..." in a message: control
 * bytes, DEL, '"' and '\\' become \xNN, so that text from a spec (where %0A
 * decodes to a newline) cannot break the one-line message or its quotes.
 * Cut with "..." after max bytes of input, or sooner if buf fills.
 * buf_len must be at least 4; ELSI_QUOTE_BUF(max) bytes always hold the
 * whole result.  Never allocates.  Returns buf. */
const char *elsi_quote(char *buf, size_t buf_len, const char *s, size_t n,
                       size_t max);

#define ELSI_QUOTE_BUF(max) ((max) * 4 + 4)

#endif /* ELS_LOG_H */
