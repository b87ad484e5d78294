/*
 * test_log.c: lib/base/log.c beyond formatting (test_spec.c has that): the
 * default hook never dies of SIGPIPE and leaves signals as it found them;
 * control bytes, including those a spec decodes (%1B), never reach a log
 * line raw; fork() at any moment leaves the child able to log and to set
 * a hook; a hook replaced is no longer running when els_set_log_hook()
 * returns.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "check.h"
#include "childcheck.h"
#include "eventlog-sink.h"
#include "base/log.h"

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

#define MAX_LINES 16

struct captured {
    pthread_mutex_t lock;
    int n;
    char lines[MAX_LINES][600];
};

static void capture_hook(void *user, enum els_log_level level,
                         const char *message)
{
    (void)level;
    struct captured *c = user;
    pthread_mutex_lock(&c->lock);
    if (c->n < MAX_LINES)
        snprintf(c->lines[c->n++], sizeof c->lines[0], "%s", message);
    pthread_mutex_unlock(&c->lock);
}

static bool has_control_byte(const char *s)
{
    for (; *s != '\0'; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return true;
    return false;
}

static bool sigpipe_pending(void)
{
    sigset_t pending;
    CHECK_OK(sigpending(&pending));
    return sigismember(&pending, SIGPIPE) == 1;
}

static bool sigpipe_blocked(void)
{
    sigset_t mask;
    CHECK_OK(pthread_sigmask(SIG_SETMASK, NULL, &mask));
    return sigismember(&mask, SIGPIPE) == 1;
}

/* stderr becomes a pipe whose reader has gone. */
static void stderr_to_closed_pipe(void)
{
    int p[2];
    CHECK_OK(pipe(p));
    CHECK(dup2(p[1], STDERR_FILENO) == STDERR_FILENO);
    close(p[0]);
    close(p[1]);
}

static void sigpipe_default_unblocked(void)
{
    CHECK(signal(SIGPIPE, SIG_DFL) != SIG_ERR);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    CHECK_OK(pthread_sigmask(SIG_UNBLOCK, &set, NULL));
}

// ---------------------------------------------------------------------------
// The default hook and SIGPIPE
// ---------------------------------------------------------------------------

/* A plain C program whose stderr reader went away: logging must not kill
 * it, and must leave the disposition, the mask and the pending set as
 * they were. */
static void default_hook_survives_closed_stderr(void)
{
    sigpipe_default_unblocked();
    stderr_to_closed_pipe();
    for (int i = 0; i < 3; i++)
        elsi_log(ELS_LOG_ERROR, "nobody reads this %d", i);
    CHECK(!sigpipe_pending());
    CHECK(!sigpipe_blocked());
    struct sigaction sa;
    CHECK_OK(sigaction(SIGPIPE, NULL, &sa));
    CHECK(sa.sa_handler == SIG_DFL);
}

/* A SIGPIPE that was pending before the log line is someone else's: it
 * stays pending. */
static void default_hook_keeps_foreign_sigpipe(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    CHECK_OK(pthread_sigmask(SIG_BLOCK, &set, NULL));
    CHECK_OK(pthread_kill(pthread_self(), SIGPIPE));
    CHECK(sigpipe_pending());
    stderr_to_closed_pipe();
    elsi_log(ELS_LOG_ERROR, "nobody reads this either");
    CHECK(sigpipe_pending());
    CHECK(sigpipe_blocked());
}

// ---------------------------------------------------------------------------
// Control bytes
// ---------------------------------------------------------------------------

static void control_bytes_are_escaped(void)
{
    static struct captured c = { .lock = PTHREAD_MUTEX_INITIALIZER };
    els_set_log_hook(capture_hook, &c, ELS_LOG_DEBUG);
    elsi_log(ELS_LOG_WARN, "a%sb", "\x1b[31m\t\x7f\x01");
    CHECK_INT(c.n, ==, 1);
    CHECK_STR(c.lines[0], "a\\x1b[31m\\x09\\x7f\\x01b");
    /* Line ends stay what they were: spaces, trailing ones dropped. */
    elsi_log(ELS_LOG_WARN, "one\ntwo\r\n");
    CHECK_STR(c.lines[1], "one two");
    /* Bytes >= 0x80 (UTF-8 in paths) pass. */
    elsi_log(ELS_LOG_WARN, "caf\xc3\xa9");
    CHECK_STR(c.lines[2], "caf\xc3\xa9");

    /* Escaping never overflows the 511 bytes a hook is promised: a line of
     * escapes is cut, with "...". */
    char many[600];
    memset(many, 0x1b, sizeof many - 1);
    many[sizeof many - 1] = '\0';
    elsi_log(ELS_LOG_WARN, "%s", many);
    CHECK(strlen(c.lines[3]) <= 511);
    CHECK_CONTAINS(c.lines[3] + strlen(c.lines[3]) - 7, "1b...");
    /* 511 plain bytes fit exactly, with no "...". */
    char fits[512];
    memset(fits, 'y', sizeof fits - 1);
    fits[sizeof fits - 1] = '\0';
    elsi_log(ELS_LOG_WARN, "%s", fits);
    CHECK_STR(c.lines[4], fits);
}

/* Text a spec decodes (%1B is an escape, %07 a bell) reaches log lines
 * through the writer's messages about its endpoint: escaped there too,
 * and never raw on the terminal through the default hook. */
static void spec_text_is_escaped_in_log_lines(void)
{
    static struct captured c = { .lock = PTHREAD_MUTEX_INITIALIZER };
    els_set_log_hook(capture_hook, &c, ELS_LOG_DEBUG);
    char spec[700];
    snprintf(spec, sizeof spec, "unix:%s/a%%1Bb%%07.sock?wait=0.01",
             check_dir);
    struct els_writer *w = NULL;
    char err[512];
    int r = els_writer_open(spec, &w, err, sizeof err);
    CHECK_MSG(r == 0, "open %s: %s", spec, err);
    CHECK_OK(els_writer_close(w));
    bool named = false;
    pthread_mutex_lock(&c.lock);
    for (int i = 0; i < c.n; i++) {
        CHECK_MSG(!has_control_byte(c.lines[i]), "raw control byte in: %s",
                  c.lines[i]);
        if (strstr(c.lines[i], "a\\x1bb\\x07.sock") != NULL)
            named = true;
    }
    pthread_mutex_unlock(&c.lock);
    CHECK_MSG(named, "no log line names the socket (%d lines)", c.n);
}

// ---------------------------------------------------------------------------
// fork()
// ---------------------------------------------------------------------------

/* In the child: set a hook and log through it; exit 0 if all of it
 * returned and the lines arrived (the alarm catches a hang). */
static void child_logs(void)
{
    static struct captured c = { .lock = PTHREAD_MUTEX_INITIALIZER };
    alarm(10);
    els_set_log_hook(capture_hook, &c, ELS_LOG_DEBUG);
    elsi_log(ELS_LOG_INFO, "child one");
    elsi_log(ELS_LOG_INFO, "child two");
    _exit(c.n == 2 && strcmp(c.lines[1], "child two") == 0 ? 0 : 2);
}

/* After the library has logged (its atfork handlers are registered), a
 * forked child can still log and set a hook. */
static void child_logs_after_fork(void)
{
    static struct captured c = { .lock = PTHREAD_MUTEX_INITIALIZER };
    els_set_log_hook(capture_hook, &c, ELS_LOG_DEBUG);
    elsi_log(ELS_LOG_INFO, "parent");
    for (int round = 0; round < 3; round++) {
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0)
            child_logs();
        check_child_ok(pid);
        elsi_log(ELS_LOG_INFO, "parent again");
    }
}

/* A hook that blocks until released, as a hook writing to a full pipe
 * does. */
static atomic_bool hook_entered;
static atomic_bool hook_release;
static atomic_bool set_returned;
static atomic_bool set_returned_early;

static void blocking_hook(void *user, enum els_log_level level,
                          const char *message)
{
    (void)user;
    (void)level;
    (void)message;
    atomic_store(&hook_entered, true);
    while (!atomic_load(&hook_release))
        sched_yield();
    if (atomic_load(&set_returned))
        atomic_store(&set_returned_early, true);
}

static void *log_once_thread(void *arg)
{
    (void)arg;
    elsi_log(ELS_LOG_INFO, "into the blocking hook");
    return NULL;
}

/* fork() while another thread is inside a hook: neither the fork nor the
 * child waits for that call, which does not exist in the child. */
static void fork_while_a_hook_runs(void)
{
    els_set_log_hook(blocking_hook, NULL, ELS_LOG_DEBUG);
    pthread_t t;
    CHECK_OK(pthread_create(&t, NULL, log_once_thread, NULL));
    while (!atomic_load(&hook_entered))
        sched_yield();
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
        child_logs();
    check_child_ok(pid);
    atomic_store(&hook_release, true);
    CHECK_OK(pthread_join(t, NULL));
}

// ---------------------------------------------------------------------------
// Replacing the hook
// ---------------------------------------------------------------------------

static void *set_hook_thread(void *arg)
{
    (void)arg;
    els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);
    atomic_store(&set_returned, true);
    return NULL;
}

/* els_set_log_hook() returns only once the old hook's calls have ended,
 * so its caller may free what the old hook used. */
static void set_hook_waits_for_calls(void)
{
    els_set_log_hook(blocking_hook, NULL, ELS_LOG_DEBUG);
    pthread_t logger, setter;
    CHECK_OK(pthread_create(&logger, NULL, log_once_thread, NULL));
    while (!atomic_load(&hook_entered))
        sched_yield();
    CHECK_OK(pthread_create(&setter, NULL, set_hook_thread, NULL));
    /* Give the setter every chance to return too early (not a timing
     * condition: a correct setter cannot return before the release). */
    for (int i = 0; i < 1000 && !atomic_load(&set_returned); i++)
        sched_yield();
    CHECK(!atomic_load(&set_returned));
    atomic_store(&hook_release, true);
    CHECK_OK(pthread_join(setter, NULL));
    CHECK_OK(pthread_join(logger, NULL));
    CHECK(!atomic_load(&set_returned_early));
    /* The new hook (none) is in force. */
    elsi_log(ELS_LOG_ERROR, "to nobody");
}

static const struct check_case cases[] = {
    CHECK_CASE(default_hook_survives_closed_stderr),
    CHECK_CASE(default_hook_keeps_foreign_sigpipe),
    CHECK_CASE(control_bytes_are_escaped),
    CHECK_CASE(spec_text_is_escaped_in_log_lines),
    CHECK_CASE(child_logs_after_fork),
    CHECK_CASE(fork_while_a_hook_runs),
    CHECK_CASE(set_hook_waits_for_calls),
};

CHECK_MAIN(cases)
