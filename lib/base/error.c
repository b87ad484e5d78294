/*
 * error.c: text for error codes and drop causes.
 *
 * Turns the library's codes (0 or a negative errno, see <eventlog-sink.h>)
 * into fixed strings (text, and the code's name), and names the drop causes for stats and messages.
 * Every string returned is static and immutable, so these functions are
 * safe from any thread, including RTS threads in the middle of a crash
 * report.  Deciding which code to return is the job of the callers, not of
 * this file.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* strerrordesc_np (glibc 2.32) */
#endif

#include <errno.h>
#include <limits.h>
#include <string.h>

#include "eventlog-sink.h"

/* The texts of our own codes: the meanings documented in eventlog-sink.h,
 * worded for someone reading a failed spec on stderr.  They take
 * precedence over strerror's because each of these errno values has one
 * fixed meaning when this library returns it. */
#define ERROR_CODE(c) c, #c
static const struct {
    int code;
    const char *name;
    const char *text;
} error_texts[] = {
    { ERROR_CODE(ELS_EINVAL), "malformed spec, option value or argument" },
    { ERROR_CODE(ELS_ENOSCHEME),
      "sink scheme not registered (link with -leventlog-sink)" },
    { ERROR_CODE(ELS_ENAMETOOLONG),
      "path too long (a UNIX socket path must fit sun_path)" },
    { ERROR_CODE(ELS_EADDRINUSE),
      "address in use (TCP port taken, or a live process listens on the "
      "UNIX socket path)" },
    { ERROR_CODE(ELS_EEXIST),
      "already exists and will not be replaced (a file that is not a "
      "socket or FIFO, or a scheme already registered)" },
    { ERROR_CODE(ELS_EBUSY), "writer already configured or running" },
    { ERROR_CODE(ELS_ENOMEM), "out of memory" },
    { ERROR_CODE(ELS_EMSGSIZE),
      "unit larger than the whole queue (raise buffer=)" },
    { ERROR_CODE(ELS_EVERSION),
      "custom sink ops table of a size this library's sink ABI cannot "
      "read (struct_size)" },
    { ERROR_CODE(ELS_ESTOPPED), "writer stopped; nothing more is accepted" },
    { ERROR_CODE(ELS_ENOTSUP), "not supported by the running RTS" },
    { ERROR_CODE(ELS_ELIMIT),
      "a bound the spec sets is reached (a flight recorder's max-dumps=)" },
};
#undef ERROR_CODE

const char *els_strerror(int code)
{
    if (code == 0)
        return "success";
    if (code > 0 || code == INT_MIN)
        return "unknown error code";
    for (size_t i = 0; i < sizeof error_texts / sizeof error_texts[0]; i++)
        if (error_texts[i].code == code)
            return error_texts[i].text;
    /* strerrordesc_np() returns glibc's constant, untranslated table entry
     * and never writes a buffer, unlike strerror() (which may format
     * "Unknown error N" into static storage shared by all threads). */
    const char *text = strerrordesc_np(-code);
    return text != NULL ? text : "unknown error code";
}

const char *els_err_name(int code)
{
    if (code == 0)
        return "OK";
    if (code > 0 || code == INT_MIN)
        return "UNKNOWN";
    for (size_t i = 0; i < sizeof error_texts / sizeof error_texts[0]; i++)
        if (error_texts[i].code == code)
            return error_texts[i].name;
    /* glibc's constant table, like strerrordesc_np() above. */
    const char *name = strerrorname_np(-code);
    return name != NULL ? name : "UNKNOWN";
}

static const char *const drop_cause_names[ELS_DROP__COUNT] = {
    [ELS_DROP_QUEUE_FULL] = "queue-full",
    [ELS_DROP_BLOCK_TIMEOUT] = "block-timeout",
    [ELS_DROP_TOO_BIG] = "too-big",
    [ELS_DROP_NO_CONSUMER] = "no-consumer",
    [ELS_DROP_SINK_ERROR] = "sink-error",
    [ELS_DROP_STOPPED] = "stopped",
    [ELS_DROP_FORKED_CHILD] = "forked-child",
    [ELS_DROP_SLOW_CONSUMER] = "slow-consumer",
};

const char *els_drop_cause_name(enum els_drop_cause cause)
{
    /* Compare as unsigned: an out-of-range enum value may be negative. */
    if ((unsigned)cause >= (unsigned)ELS_DROP__COUNT ||
        drop_cause_names[cause] == NULL)
        return "unknown";
    return drop_cause_names[cause];
}
