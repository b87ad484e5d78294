/*
 * log.c: the library's only voice.
 *
 * elsi_log() formats one line on the caller's stack and hands it to the hook
 * set by els_set_log_hook(); the default hook writes it to stderr.
 * elsi_fail() formats a one-line error into a caller's buffer, and
 * elsi_quote() makes untrusted text safe to put inside one.  This file does
 * not decide what is worth saying or at which level (callers do), and it
 * never allocates, so it can be used on failure paths, from the writer
 * thread and from RTS threads alike.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

/* Longest message handed to a hook, including its NUL; longer ones are cut
 * and end in "...". */
#define LOG_MESSAGE_MAX 512

static const char log_prefix[] = "eventlog-sink: ";

static void log_default_hook(void *user, enum els_log_level level,
                             const char *message);

/*
 * Note [Log hook updates]
 * ~~~~~~~~~~~~~~~~~~~~~~~
 * The hook is a pair (fn, user) plus a level; a message must never be
 * delivered to the new fn with the old user or the other way round, and
 * once els_set_log_hook() returns the old hook must not be running or be
 * called again, so that its caller may free whatever `user` points to.
 * Hence a read-write lock: elsi_log() holds it for reading while it calls
 * the hook (many threads may log at once), els_set_log_hook() takes it for
 * writing, which waits for calls in flight.  The hook must not call back
 * into the library (documented in eventlog-sink.h), so a reader never
 * tries to take the lock for writing.
 *
 * log_level_hint is a copy of log_max_level that elsi_log() reads without
 * the lock, so that a disabled DEBUG message costs one relaxed load and no
 * formatting.  It is only a filter: the level is checked again under the
 * lock, so a stale hint can at worst cost one needless formatting.
 *
 * fork(): a thread holding the lock does not exist in the child, and a
 * lock taken there would never be released.  The pthread_atfork handlers
 * take the lock for writing around fork() so the child starts with it
 * free (and a child may log: the writer counts units written in a forked
 * child and may say so).
 */
static pthread_rwlock_t log_lock = PTHREAD_RWLOCK_INITIALIZER;
static els_log_fn log_fn = log_default_hook;       /* guarded by log_lock */
static void *log_user;                             /* guarded by log_lock */
static enum els_log_level log_max_level = ELS_LOG_INFO; /* guarded by log_lock */
static atomic_int log_level_hint = ELS_LOG_INFO;

static pthread_once_t log_once = PTHREAD_ONCE_INIT;

static void log_atfork_prepare(void)
{
    pthread_rwlock_wrlock(&log_lock);
}

static void log_atfork_release(void)
{
    pthread_rwlock_unlock(&log_lock);
}

/* Runs once, before the first message and before the first
 * els_set_log_hook(), so an explicit hook always wins over the
 * environment. */
static void log_init(void)
{
    const char *debug = getenv("EVENTLOG_SINK_DEBUG");
    if (debug != NULL && debug[0] != '\0' && strcmp(debug, "0") != 0) {
        pthread_rwlock_wrlock(&log_lock);
        log_max_level = ELS_LOG_DEBUG;
        atomic_store_explicit(&log_level_hint, ELS_LOG_DEBUG,
                              memory_order_relaxed);
        pthread_rwlock_unlock(&log_lock);
    }
    /* Failure (ENOMEM) only loses the fork protection described in
     * Note [Log hook updates]; logging itself still works. */
    (void)pthread_atfork(log_atfork_prepare, log_atfork_release,
                         log_atfork_release);
}

void els_set_log_hook(els_log_fn fn, void *user, enum els_log_level max_level)
{
    pthread_once(&log_once, log_init);
    pthread_rwlock_wrlock(&log_lock);
    log_fn = fn;
    log_user = user;
    log_max_level = max_level;
    atomic_store_explicit(&log_level_hint, (int)max_level,
                          memory_order_relaxed);
    pthread_rwlock_unlock(&log_lock);
}

/* One write(2) per line, so that lines from several threads (or from
 * several processes sharing stderr) do not interleave mid-line. */
static void log_default_hook(void *user, enum els_log_level level,
                             const char *message)
{
    (void)user;
    (void)level;
    char line[sizeof log_prefix - 1 + LOG_MESSAGE_MAX + 1];
    size_t plen = sizeof log_prefix - 1;
    size_t mlen = strnlen(message, LOG_MESSAGE_MAX - 1);
    memcpy(line, log_prefix, plen);
    memcpy(line + plen, message, mlen);
    line[plen + mlen] = '\n';
    int saved_errno = errno;
    while (write(STDERR_FILENO, line, plen + mlen + 1) < 0 && errno == EINTR) {
    }
    errno = saved_errno;
}

static void log_vformat(char *msg, size_t size, const char *fmt, va_list ap)
{
    int n = vsnprintf(msg, size, fmt, ap);
    if (n < 0) {
        snprintf(msg, size, "(unformattable message: %s)", fmt);
    } else if ((size_t)n >= size) {
        memcpy(msg + size - 4, "...", 4);
    }
}

void elsi_log_limited(struct elsi_ratelimit *rl, unsigned interval_ms,
                      enum els_log_level level, const char *fmt, ...)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    if (now < rl->next_ms) {
        rl->suppressed++;
        return;
    }
    rl->next_ms = now + interval_ms;
    char msg[LOG_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    log_vformat(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (rl->suppressed > 0) {
        uint64_t n = rl->suppressed;
        rl->suppressed = 0;
        elsi_log(level, "%s (%" PRIu64 " similar messages suppressed)", msg, n);
    } else {
        elsi_log(level, "%s", msg);
    }
}

void elsi_log(enum els_log_level level, const char *fmt, ...)
{
    /* Once first: EVENTLOG_SINK_DEBUG may raise the hint. */
    pthread_once(&log_once, log_init);
    if ((int)level > atomic_load_explicit(&log_level_hint,
                                          memory_order_relaxed))
        return;

    int saved_errno = errno;
    char msg[LOG_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    log_vformat(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* Hooks are promised single lines without a trailing newline; messages
     * often quote user-supplied specs, which may contain anything. */
    size_t len = strlen(msg);
    while (len > 0 && (msg[len - 1] == '\n' || msg[len - 1] == '\r'))
        msg[--len] = '\0';
    for (size_t i = 0; i < len; i++)
        if (msg[i] == '\n' || msg[i] == '\r')
            msg[i] = ' ';

    pthread_rwlock_rdlock(&log_lock);
    if (log_fn != NULL && level <= log_max_level)
        log_fn(log_user, level, msg);
    pthread_rwlock_unlock(&log_lock);
    errno = saved_errno;
}

int elsi_fail(char *err, size_t err_len, int code, const char *fmt, ...)
{
    if (err != NULL && err_len > 0) {
        int saved_errno = errno;
        va_list ap;
        va_start(ap, fmt);
        if (vsnprintf(err, err_len, fmt, ap) < 0)
            err[0] = '\0';
        va_end(ap);
        errno = saved_errno;
    }
    return code;
}

const char *elsi_quote(char *buf, size_t buf_len, const char *s, size_t n,
                       size_t max)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    bool cut = n > max;
    if (cut)
        n = max;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        bool plain = c >= 0x20 && c != 0x7f && c != '"' && c != '\\';
        size_t need = plain ? 1 : 4;
        if (o + need + 4 > buf_len) {   /* room for "..." and the NUL */
            cut = true;
            break;
        }
        if (plain) {
            buf[o++] = (char)c;
        } else {
            buf[o++] = '\\';
            buf[o++] = 'x';
            buf[o++] = hex[c >> 4];
            buf[o++] = hex[c & 15];
        }
    }
    if (cut) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o] = '\0';
    return buf;
}
