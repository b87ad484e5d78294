/*
 * check.h: the unit-test harness shared by every tests/test_*.c program.
 *
 * Each program lists its cases in a table and calls check_main().  Every
 * case runs in its own forked process with a timeout (a guard against a
 * hang, longer under sanitizers; a hang or a crash fails that case only), in a fresh temporary directory that is removed
 * afterwards.  Assertions print both sides.  The program exits 0 only if
 * every case passed, and prints "N passed, N failed" last.
 *
 * Leaks: a case ends with _exit() (so that the parent's atexit handlers and
 * stdio buffers are not run twice), which skips LeakSanitizer's exit-time
 * check; so in a build with LeakSanitizer (ASan, or -fsanitize=leak) every
 * case that passed runs the leak check itself before it exits, and a leak
 * fails that case (check_exit_ok()).  Memory still reachable (from a
 * global, or a thread that is still running) is not a leak.
 *
 * A case that cannot run here ends with CHECK_SKIP_PART(why): it passes,
 * and its "SKIPPED PART:" line is listed in scripts/test-all.sh's summary.
 *
 * Usage: test_x [CASE...]   runs only the named cases.
 */
#ifndef ELS_TEST_CHECK_H
#define ELS_TEST_CHECK_H

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct check_case {
    const char *name;
    void (*fn)(void);
    unsigned timeout_s;     /* 0: 30 s (times CHECK_TIMEOUT_SCALE) */
};

#define CHECK_CASE(fn) { #fn, fn, 0 }
#define CHECK_CASE_T(fn, secs) { #fn, fn, secs }

/* The temporary directory of the running case (absolute path). */
static char check_dir[512];
/* The running case's name. */
static const char *check_case_name = "";

/* LeakSanitizer is linked in with ASan (GCC: __SANITIZE_ADDRESS__; clang:
 * __has_feature) or on its own with -fsanitize=leak, which defines no
 * macro: a weak reference finds it there (null when it is absent, as
 * under TSan or in a plain build). */
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define CHECK_HAVE_LSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(CHECK_HAVE_LSAN)
#define CHECK_HAVE_LSAN 1
#endif
/* A case's timeout is a guard against a hang, never a verdict on speed:
 * sanitizers slow a program down several times, so the guard grows with
 * them. */
#if defined(__SANITIZE_THREAD__)
#define CHECK_TIMEOUT_SCALE 5
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CHECK_TIMEOUT_SCALE 5
#endif
#endif
#if !defined(CHECK_TIMEOUT_SCALE) && defined(CHECK_HAVE_LSAN)
#define CHECK_TIMEOUT_SCALE 3
#endif
#ifndef CHECK_TIMEOUT_SCALE
#define CHECK_TIMEOUT_SCALE 1
#endif

#ifdef CHECK_HAVE_LSAN
void __lsan_do_leak_check(void);
#else
void __lsan_do_leak_check(void) __attribute__((weak));
#endif

/* End a forked case (or a child a case forked) that passed: flush, run the
 * leak check where LeakSanitizer is present (with detect_leaks=1 it reports
 * and exits non-zero on a leak; detect_leaks=0 makes it a no-op), exit 0. */
static inline void check_exit_ok(void) __attribute__((noreturn));
static inline void check_exit_ok(void)
{
    fflush(NULL);
#ifdef CHECK_HAVE_LSAN
    __lsan_do_leak_check();
#else
    if (__lsan_do_leak_check != NULL)
        __lsan_do_leak_check();
#endif
    _exit(0);
}

static void check_fail_(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

static void check_fail_(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    _exit(1);
}

#define CHECK(cond)                                                         \
    do {                                                                    \
        if (!(cond))                                                        \
            check_fail_(__FILE__, __LINE__, "check failed: %s", #cond);     \
    } while (0)

#define CHECK_MSG(cond, ...)                                                \
    do {                                                                    \
        if (!(cond))                                                        \
            check_fail_(__FILE__, __LINE__, __VA_ARGS__);                   \
    } while (0)

#define CHECK_INT(a, op, b)                                                 \
    do {                                                                    \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);     \
        if (!(check_a_ op check_b_))                                        \
            check_fail_(__FILE__, __LINE__, "%s %s %s: %lld vs %lld",       \
                        #a, #op, #b, check_a_, check_b_);                   \
    } while (0)

#define CHECK_U64(a, op, b)                                                 \
    do {                                                                    \
        uint64_t check_a_ = (uint64_t)(a), check_b_ = (uint64_t)(b);        \
        if (!(check_a_ op check_b_))                                        \
            check_fail_(__FILE__, __LINE__, "%s %s %s: %" PRIu64            \
                        " vs %" PRIu64, #a, #op, #b, check_a_, check_b_);   \
    } while (0)

#define CHECK_STR(a, b)                                                     \
    do {                                                                    \
        const char *check_a_ = (a), *check_b_ = (b);                        \
        if (check_a_ == NULL || check_b_ == NULL ||                         \
            strcmp(check_a_, check_b_) != 0)                                \
            check_fail_(__FILE__, __LINE__, "%s == %s: \"%s\" vs \"%s\"",   \
                        #a, #b, check_a_ ? check_a_ : "(null)",             \
                        check_b_ ? check_b_ : "(null)");                    \
    } while (0)

/* haystack contains needle */
#define CHECK_CONTAINS(hay, needle)                                         \
    do {                                                                    \
        const char *check_h_ = (hay), *check_n_ = (needle);                 \
        if (check_h_ == NULL || strstr(check_h_, check_n_) == NULL)         \
            check_fail_(__FILE__, __LINE__, "%s does not contain \"%s\": "  \
                        "\"%s\"", #hay, check_n_,                           \
                        check_h_ ? check_h_ : "(null)");                    \
    } while (0)

/* expr returns 0 */
#define CHECK_OK(expr)                                                      \
    do {                                                                    \
        long long check_r_ = (long long)(expr);                             \
        if (check_r_ != 0)                                                  \
            check_fail_(__FILE__, __LINE__, "%s: returned %lld (%s)",       \
                        #expr, check_r_,                                    \
                        check_r_ < 0 ? strerror((int)-check_r_) : "");      \
    } while (0)

/*
 * CHECK_SKIP_PART(fmt, ...): the running case cannot run here: print
 * "SKIPPED PART: CASE: why" and end the case as passed.  Only for what
 * the machine may lack (root, an IPv6 loopback) or a build cannot host
 * (an address-space limit under a sanitizer): scripts/test-all.sh lists
 * every such line in its summary and allows them under ELS_REQUIRE_ALL,
 * so a missing dependency of the project must fail instead.
 */
#define CHECK_SKIP_PART(...) check_skip_part_(__VA_ARGS__)

static inline void check_skip_part_(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

static inline void check_skip_part_(const char *fmt, ...)
{
    va_list ap;
    printf("SKIPPED PART: %s: ", check_case_name);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    check_exit_ok();
}

/* A path inside the case's temporary directory. */
static inline const char *check_path(const char *name)
{
    static char buf[8][1024];
    static int next;
    char *p = buf[next++ % 8];
    snprintf(p, sizeof buf[0], "%s/%s", check_dir, name);
    return p;
}

/* Monotonic milliseconds, for waiting loops (never for pass/fail). */
static inline uint64_t check_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static inline void check_sleep_ms(unsigned ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void check_rm_rf(const char *dir)
{
    pid_t pid = fork();
    if (pid == 0) {
        execlp("rm", "rm", "-rf", dir, (char *)NULL);
        _exit(127);
    }
    if (pid > 0)
        waitpid(pid, NULL, 0);
}

static int check_run_one(const struct check_case *c)
{
    const char *base = getenv("TMPDIR");
    snprintf(check_dir, sizeof check_dir, "%s/els-test-XXXXXX",
             base && *base ? base : "/tmp");
    if (mkdtemp(check_dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        /* Own process group, so the timeout kills helpers it forked too. */
        setpgid(0, 0);
        check_case_name = c->name;
        alarm((c->timeout_s ? c->timeout_s : 30) * CHECK_TIMEOUT_SCALE);
        signal(SIGALRM, SIG_DFL);
        c->fn();
        check_exit_ok();
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    kill(-pid, SIGKILL);
    check_rm_rf(check_dir);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    /* 1 is a failed CHECK, which said why; anything else is a sanitizer
     * (a leak report exits 23 or 1) or an exit() in the code under test. */
    if (WIFEXITED(status) && WEXITSTATUS(status) != 1)
        fprintf(stderr, "  %s: exit status %d\n", c->name, WEXITSTATUS(status));
    if (WIFSIGNALED(status))
        fprintf(stderr, "  %s: killed by signal %d%s\n", c->name,
                WTERMSIG(status),
                WTERMSIG(status) == SIGALRM ? " (timeout)" : "");
    return 1;
}

static int check_main(const struct check_case *cases, size_t n,
                      int argc, char **argv)
{
    unsigned passed = 0, failed = 0;
    /* A test that writes to a closed socket must see EPIPE, not die: the
     * library promises MSG_NOSIGNAL, and tests check that promise
     * separately where it matters. */
    for (size_t i = 0; i < n; i++) {
        if (argc > 1) {
            int wanted = 0;
            for (int a = 1; a < argc; a++)
                if (strcmp(argv[a], cases[i].name) == 0)
                    wanted = 1;
            if (!wanted)
                continue;
        }
        int rc = check_run_one(&cases[i]);
        printf("%s - %s\n", rc == 0 ? "ok" : "FAIL", cases[i].name);
        fflush(stdout);
        if (rc == 0)
            passed++;
        else
            failed++;
    }
    printf("%u passed, %u failed\n", passed, failed);
    return failed == 0 && passed > 0 ? 0 : 1;
}

#define CHECK_MAIN(cases)                                                   \
    int main(int argc, char **argv)                                         \
    {                                                                       \
        return check_main(cases, sizeof(cases) / sizeof(cases[0]),          \
                          argc, argv);                                      \
    }

#endif /* ELS_TEST_CHECK_H */
