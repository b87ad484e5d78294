/*
 * log.c: the library's only voice.
 *
 * elsi_log() formats one line on the caller's stack, escapes the control
 * bytes in it, and hands it to the hook set by els_set_log_hook(); the
 * default hook writes it to stderr and never dies of SIGPIPE.
 * elsi_fail() formats a one-line error into a caller's buffer, and
 * elsi_quote() makes untrusted text safe to put inside one.  This file does
 * not decide what is worth saying or at which level (callers do), and it
 * never allocates, so it can be used on failure paths, from the writer
 * thread and from RTS threads alike.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/fdutil.h"

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
 *
 * log_lock guards the triple and log_calls, the number of hook calls in
 * flight.  elsi_log() copies the triple and counts itself in under the
 * lock, calls the hook without it (many threads may log at once, and a
 * hook may block on a full pipe), then counts itself out.
 * els_set_log_hook() swaps the triple and waits on log_idle until no call
 * is in flight, so no call of the old hook outlives it.  The hook must not
 * call back into the library (documented in eventlog-sink.h), so it never
 * waits for itself.
 *
 * log_level_hint is a copy of log_max_level that elsi_log() reads without
 * the lock, so that a disabled DEBUG message costs one relaxed load and no
 * formatting.  It is only a filter: the level is checked again under the
 * lock, so a stale hint can at worst cost one needless formatting.
 *
 * fork(): only the forking thread exists in the child; a lock held by
 * another thread, or a call in flight there, would never end.  As
 * lttng-ust does with its own locks, the atfork handlers take log_lock
 * around fork() (it is only ever held for a few loads and stores, never
 * across a hook call or another lock, so this cannot wait long or
 * deadlock).  The child's one thread is the one that took it, and
 * unlocks it; it rebuilds the condition (its waiters are gone) and counts
 * no call in flight: it starts with the triple as it was and may log (the
 * writer says what a forked child lost).  A read-write lock held across
 * the hook, as this file had, cannot be handed to the child: glibc's
 * rwlock unlock tells a writer by its thread id, which is new in the
 * child, so it takes the parent's write lock for a read lock, and the
 * child's next message waits forever.
 */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t log_idle = PTHREAD_COND_INITIALIZER;
static els_log_fn log_fn = log_default_hook;       /* guarded by log_lock */
static void *log_user;                             /* guarded by log_lock */
static enum els_log_level log_max_level = ELS_LOG_INFO; /* guarded by log_lock */
static unsigned log_calls;                         /* guarded by log_lock */
static atomic_int log_level_hint = ELS_LOG_INFO;

static pthread_once_t log_once = PTHREAD_ONCE_INIT;

static void log_atfork_prepare(void)
{
    pthread_mutex_lock(&log_lock);
}

static void log_atfork_parent(void)
{
    pthread_mutex_unlock(&log_lock);
}

static void log_atfork_child(void)
{
    pthread_cond_init(&log_idle, NULL);
    log_calls = 0;
    pthread_mutex_unlock(&log_lock);
}

/* Runs once, before the first message and before the first
 * els_set_log_hook(), so an explicit hook always wins over the
 * environment. */
static void log_init(void)
{
    const char *debug = getenv("EVENTLOG_SINK_DEBUG");
    if (debug != NULL && debug[0] != '\0' && strcmp(debug, "0") != 0) {
        pthread_mutex_lock(&log_lock);
        log_max_level = ELS_LOG_DEBUG;
        atomic_store_explicit(&log_level_hint, ELS_LOG_DEBUG,
                              memory_order_relaxed);
        pthread_mutex_unlock(&log_lock);
    }
    /* Failure (ENOMEM) only loses the fork protection described in
     * Note [Log hook updates]; logging itself still works. */
    (void)pthread_atfork(log_atfork_prepare, log_atfork_parent,
                         log_atfork_child);
}

void els_set_log_hook(els_log_fn fn, void *user, enum els_log_level max_level)
{
    pthread_once(&log_once, log_init);
    pthread_mutex_lock(&log_lock);
    log_fn = fn;
    log_user = user;
    log_max_level = max_level;
    atomic_store_explicit(&log_level_hint, (int)max_level,
                          memory_order_relaxed);
    while (log_calls > 0)
        pthread_cond_wait(&log_idle, &log_lock);
    pthread_mutex_unlock(&log_lock);
}

/* One write(2) per line, so that lines from several threads (or from
 * several processes sharing stderr) do not interleave mid-line.  stderr
 * may be a pipe whose reader has gone: the write then raises SIGPIPE,
 * which must not kill the program, and the process-wide disposition is not
 * ours to change.  So SIGPIPE is blocked on this thread for the write, and
 * elsi_write_iov() consumes the one the write raised (Note [Consuming
 * SIGPIPE] in sinks/fdutil.c); as a plain write() it works on a socket
 * too.  The line is then lost, as it would be anyway. */
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
    sigset_t pipe_only, old;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
    struct iovec iov = { .iov_base = line, .iov_len = plen + mlen + 1 };
    /* is_socket false even for a socket: writev, never MSG_DONTWAIT, so a
     * blocking stderr blocks as write() would. */
    (void)elsi_write_iov(STDERR_FILENO, false, &iov, 1);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
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
    uint64_t now = elsi_now_ms();
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

/* Hooks are promised one line of text: messages often carry text from a
 * spec, where %0A decodes to a newline and %1B to an escape that a
 * terminal would obey.  Copy msg into out without trailing line ends,
 * with other line ends as spaces and every other control byte (and DEL)
 * as \xNN, cut with "..." where out fills. */
/* Line ends inside a message become spaces. */
static unsigned char log_byte(char c)
{
    return c == '\n' || c == '\r' ? ' ' : (unsigned char)c;
}

static bool log_plain(unsigned char c)
{
    return c >= 0x20 && c != 0x7f;
}

static void log_sanitise(char *out, size_t out_size, const char *msg)
{
    static const char hex[] = "0123456789abcdef";
    size_t len = strlen(msg);
    while (len > 0 && (msg[len - 1] == '\n' || msg[len - 1] == '\r'))
        len--;
    size_t whole = 0;
    for (size_t i = 0; i < len; i++)
        whole += log_plain(log_byte(msg[i])) ? 1 : 4;
    /* Room for the NUL, and for "..." if the whole does not fit. */
    size_t room = out_size - (whole < out_size ? 1 : 4);
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = log_byte(msg[i]);
        if (o + (log_plain(c) ? 1 : 4) > room) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        if (log_plain(c)) {
            out[o++] = (char)c;
        } else {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = '\0';
}

void elsi_log(enum els_log_level level, const char *fmt, ...)
{
    /* Once first: EVENTLOG_SINK_DEBUG may raise the hint. */
    pthread_once(&log_once, log_init);
    if ((int)level > atomic_load_explicit(&log_level_hint,
                                          memory_order_relaxed))
        return;

    int saved_errno = errno;
    char raw[LOG_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    log_vformat(raw, sizeof raw, fmt, ap);
    va_end(ap);
    char msg[LOG_MESSAGE_MAX];
    log_sanitise(msg, sizeof msg, raw);

    /* See Note [Log hook updates]. */
    pthread_mutex_lock(&log_lock);
    els_log_fn fn = log_fn;
    void *user = log_user;
    bool wanted = fn != NULL && level <= log_max_level;
    if (wanted)
        log_calls++;
    pthread_mutex_unlock(&log_lock);
    if (wanted) {
        fn(user, level, msg);
        pthread_mutex_lock(&log_lock);
        if (--log_calls == 0)
            pthread_cond_broadcast(&log_idle);
        pthread_mutex_unlock(&log_lock);
    }
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
