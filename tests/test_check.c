/*
 * test_check.c: the unit-test harness (tests/check.h) itself.
 *
 * Runs cases through check_run_one() the way check_main() does and looks
 * at the verdicts: a case that passes, one whose CHECK fails, one that is
 * killed by a signal, one that exits with another status, and one that
 * leaks memory.  The leak must fail its case in a build with LeakSanitizer
 * (the ASan run of scripts/sanitize.sh); elsewhere that part says it was
 * skipped.  What the library does is the other unit tests' business.
 */
#include "check.h"

static void *volatile lost;

static void passes(void)
{
    void *p = malloc(64);
    CHECK(p != NULL);
    free(p);
}

static void check_fails(void)
{
    CHECK_INT(1 + 1, ==, 3);
}

static void killed(void)
{
    raise(SIGKILL);
}

static void exits_2(void)
{
    fflush(NULL);
    _exit(2);
}

static void leaks(void)
{
    lost = malloc(4242);
    CHECK(lost != NULL);
    lost = NULL;        /* the only pointer to it is gone */
}

/* Run c through the harness as check_main() would, from inside this case
 * (check_dir is the harness's, so keep ours). */
static int verdict(void (*fn)(void), const char *name)
{
    struct check_case c = { name, fn, 30 };
    char saved[sizeof check_dir];
    memcpy(saved, check_dir, sizeof saved);
    printf("  running %s through the harness (its messages follow)\n", name);
    fflush(NULL);
    int rc = check_run_one(&c);
    memcpy(check_dir, saved, sizeof saved);
    return rc;
}

static void harness_verdicts(void)
{
    CHECK_INT(verdict(passes, "passes"), ==, 0);
    CHECK_INT(verdict(check_fails, "check_fails"), ==, 1);
    CHECK_INT(verdict(killed, "killed"), ==, 1);
    CHECK_INT(verdict(exits_2, "exits_2"), ==, 1);
}

static void leak_fails_its_case(void)
{
#ifdef CHECK_HAVE_LSAN
    int have_lsan = 1;
#else
    int have_lsan = __lsan_do_leak_check != NULL;
#endif
    if (!have_lsan) {
        printf("SKIPPED PART: leak_fails_its_case: no LeakSanitizer in this build "
               "(the ASan run checks it)\n");
        return;
    }
    /* With detect_leaks=0 the check is off by request: nothing to see. */
    const char *opts = getenv("ASAN_OPTIONS");
    if (opts != NULL && strstr(opts, "detect_leaks=0") != NULL) {
        printf("SKIPPED PART: leak_fails_its_case: ASAN_OPTIONS has detect_leaks=0\n");
        return;
    }
    printf("  the leak report below is expected\n");
    CHECK_INT(verdict(leaks, "leaks"), ==, 1);
    CHECK_INT(verdict(passes, "passes"), ==, 0);
}

static const struct check_case cases[] = {
    CHECK_CASE(harness_verdicts),
    CHECK_CASE(leak_fails_its_case),
};

CHECK_MAIN(cases)
