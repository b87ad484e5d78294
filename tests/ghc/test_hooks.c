/*
 * test_hooks.c: the snapshot hooks (lib/ghc/hooks.c) through the RTS
 * adapter (lib/ghc/ghc.c), against a fake RTS with the patched RTS's
 * unit writer.
 *
 * The fake RTS (fake_units.h) writes the header unit at start, as the
 * patched RTS does, and a test "takes" a join snapshot by writing a unit
 * of that kind through the writer the fake was given.
 * (tests/ghc/test_ghc.c drives the stock route, without units.)  Checked: registration's limits (NULL, the same
 * hook twice, ELS_GHC_SNAPSHOT_HOOKS_MAX, unregistering); hooks run after
 * a start, a join snapshot and a restart, on a thread that is not the
 * writing one; a hook that blocks holds neither the snapshot's writer nor
 * a restart nor a consumer's stream, and the requests made meanwhile
 * become one run after it; els_ghc_off_snapshot waits for a call under
 * way (except from the hook itself); a forked child runs the hooks for
 * its own stream; a Haskell hook without a Haskell runtime is counted as
 * failed and logged.  The real programs are in tests/rts/test_snapshot_hooks.sh.
 */
#include <Rts.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#undef CHECK                    /* Rts.h's; check.h has its own */
#include "check.h"
#include "childcheck.h"
#include "evgen.h"
#include "testutil.h"
#include "eventlog-sink.h"
#include "eventlog-sink/ghc.h"

#include "fake_units.h"

static void start(const char *spec)
{
    char err[512];
    int r = els_ghc_configure(spec, err, sizeof err);
    CHECK_MSG(r == 0, "configure %s: %d %s", spec, r, err);
    CHECK_OK(els_ghc_start());
}

static const char *sock_spec(const char *name)
{
    static char spec[700];
    snprintf(spec, sizeof spec, "unix:%s", check_path(name));
    return spec;
}

// ---------------------------------------------------------------------------
// Hooks the tests register
// ---------------------------------------------------------------------------

static atomic_int calls;
static atomic_bool called_on_writing_thread;
static _Thread_local bool writing_thread;

static void counting_hook(void *ctx)
{
    if (writing_thread)
        atomic_store(&called_on_writing_thread, true);
    atomic_fetch_add(&calls, 1);
    if (ctx != NULL)
        atomic_fetch_add((atomic_int *)ctx, 1);
}

/* Blocks until released; says when it is inside. */
static atomic_bool blocker_inside, blocker_release;
static atomic_int blocker_calls;

static void blocking_hook(void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&blocker_calls, 1);
    atomic_store(&blocker_inside, true);
    while (!atomic_load(&blocker_release))
        check_sleep_ms(1);
    atomic_store(&blocker_inside, false);
}

/* Wait (a hang guard, not a verdict) until *v reaches n. */
static void wait_calls(atomic_int *v, int n)
{
    uint64_t end = check_now_ms() + TU_WAIT_MS;
    while (atomic_load(v) < n && check_now_ms() < end)
        check_sleep_ms(1);
    CHECK_INT(atomic_load(v), >=, n);
}

static struct els_ghc_hook_stats hook_stats(void)
{
    struct els_ghc_hook_stats s;
    CHECK_OK(els_ghc_hook_stats(&s));
    return s;
}

/* The hooks' thread is idle: every request has had its run. */
static void wait_idle(void)
{
    uint64_t end = check_now_ms() + TU_WAIT_MS;
    for (;;) {
        struct els_ghc_hook_stats s = hook_stats();
        if (s.running == 0 && s.runs + s.coalesced + s.skipped >= s.requests)
            return;
        CHECK_MSG(check_now_ms() < end, "hooks still busy: %llu requests, "
                  "%llu runs, %llu coalesced", (unsigned long long)s.requests,
                  (unsigned long long)s.runs, (unsigned long long)s.coalesced);
        check_sleep_ms(1);
    }
}

// ---------------------------------------------------------------------------
// Cases
// ---------------------------------------------------------------------------

static void registration_limits(void)
{
    static int ctx[ELS_GHC_SNAPSHOT_HOOKS_MAX + 1];
    CHECK_INT(els_ghc_on_snapshot(NULL, NULL), ==, ELS_EINVAL);
    for (int i = 0; i < ELS_GHC_SNAPSHOT_HOOKS_MAX; i++)
        CHECK_OK(els_ghc_on_snapshot(counting_hook, &ctx[i]));
    CHECK_INT(els_ghc_on_snapshot(counting_hook, &ctx[0]), ==, ELS_EEXIST);
    CHECK_INT(els_ghc_on_snapshot(counting_hook, &ctx[ELS_GHC_SNAPSHOT_HOOKS_MAX]),
              ==, ELS_ENOMEM);
    CHECK_INT(hook_stats().registered, ==, ELS_GHC_SNAPSHOT_HOOKS_MAX);
    CHECK_INT(els_ghc_off_snapshot(counting_hook, &ctx[ELS_GHC_SNAPSHOT_HOOKS_MAX]),
              ==, ELS_EINVAL);
    CHECK_OK(els_ghc_off_snapshot(counting_hook, &ctx[3]));
    CHECK_INT(els_ghc_off_snapshot(counting_hook, &ctx[3]), ==, ELS_EINVAL);
    CHECK_OK(els_ghc_on_snapshot(counting_hook, &ctx[ELS_GHC_SNAPSHOT_HOOKS_MAX]));
    /* Full again. */
    CHECK_INT(els_ghc_on_snapshot(blocking_hook, NULL), ==, ELS_ENOMEM);

    /* Every registered hook runs once per request, in order; the one
     * removed does not. */
    els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);
    writing_thread = true;
    start(sock_spec("s.sock"));
    wait_calls(&calls, ELS_GHC_SNAPSHOT_HOOKS_MAX);
    wait_idle();
    CHECK_INT(atomic_load(&calls), ==, ELS_GHC_SNAPSHOT_HOOKS_MAX);
    CHECK_INT(ctx[3], ==, 0);
    CHECK_INT(ctx[0], ==, 1);
    CHECK_INT(ctx[ELS_GHC_SNAPSHOT_HOOKS_MAX], ==, 1);
    els_ghc_stop();

    struct els_ghc_hook_stats s;
    CHECK_INT(els_ghc_hook_stats_sized(NULL, sizeof s), ==, ELS_EINVAL);
    CHECK_INT(els_ghc_hook_stats_sized(&s, 0), ==, ELS_EINVAL);
    /* An older caller's smaller struct: nothing past it is written. */
    unsigned char buf[sizeof s + 16];
    memset(buf, 0xA5, sizeof buf);
    CHECK_OK(els_ghc_hook_stats_sized((void *)buf, offsetof(struct els_ghc_hook_stats, running)));
    for (size_t i = offsetof(struct els_ghc_hook_stats, running); i < sizeof buf; i++)
        CHECK_MSG(buf[i] == 0xA5, "byte %zu written", i);
}

/* A start, a join snapshot and a restart each run the hooks, never on the
 * thread that wrote the unit. */
static void hooks_run_for_every_new_stream(void)
{
    els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);
    CHECK_OK(els_ghc_on_snapshot(counting_hook, NULL));
    writing_thread = true;
    start(sock_spec("s.sock"));
    wait_calls(&calls, 1);
    wait_idle();
    fake_join_snapshot();
    wait_calls(&calls, 2);
    wait_idle();
    els_ghc_stop();
    CHECK_OK(els_ghc_start());
    wait_calls(&calls, 3);
    wait_idle();
    els_ghc_stop();
    CHECK_INT(atomic_load(&calls), ==, 3);
    CHECK(!atomic_load(&called_on_writing_thread));
    struct els_ghc_hook_stats s = hook_stats();
    CHECK_INT(s.requests, ==, 3);
    CHECK_INT(s.runs, ==, 3);
    CHECK_INT(s.calls, ==, 3);
    CHECK_INT(s.coalesced, ==, 0);
    CHECK_INT(s.failures, ==, 0);

    /* Unregistered: no more calls. */
    CHECK_OK(els_ghc_off_snapshot(counting_hook, NULL));
    CHECK_OK(els_ghc_start());
    fake_join_snapshot();
    els_ghc_stop();
    s = hook_stats();
    CHECK_INT(s.requests, ==, 5);
    CHECK_INT(atomic_load(&calls), ==, 3);
}

/* A hook that blocks: the join snapshots are written, the stream is
 * restarted and a consumer receives the new stream's header while it
 * blocks; the requests made meanwhile become one run once it returns. */
static void blocked_hook_holds_no_stream(void)
{
    els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);
    CHECK_OK(els_ghc_on_snapshot(blocking_hook, NULL));
    CHECK_OK(els_ghc_on_snapshot(counting_hook, NULL));
    start(sock_spec("s.sock"));
    while (!atomic_load(&blocker_inside))
        check_sleep_ms(1);
    CHECK_INT(hook_stats().running, ==, 1);

    /* Everything below returns while the hook blocks (a hang here is the
     * failure: the case's timeout ends it). */
    fake_join_snapshot();
    fake_join_snapshot();
    els_ghc_stop();
    CHECK_OK(els_ghc_start());
    int fd = tu_connect_unix(check_path("s.sock"), TU_WAIT_MS);
    CHECK(fd >= 0);
    struct evgen_buf h = evgen_header();
    unsigned char got[256];
    CHECK(h.len <= sizeof got);
    CHECK_OK(tu_read_exact(fd, got, h.len, TU_WAIT_MS));
    CHECK(memcmp(got, h.p, h.len) == 0);
    free(h.p);
    fake_join_snapshot();
    CHECK(atomic_load(&blocker_inside));
    CHECK_INT(atomic_load(&calls), ==, 0);
    struct els_ghc_hook_stats s = hook_stats();
    CHECK_INT(s.requests, ==, 5);
    CHECK_INT(s.runs, ==, 1);
    /* Of the 4 requests after the first, one made a run due and 3
     * merged into it. */
    CHECK_INT(s.coalesced, ==, 3);

    atomic_store(&blocker_release, true);
    wait_calls(&calls, 2);
    wait_idle();
    s = hook_stats();
    CHECK_INT(s.runs, ==, 2);           /* the first, then one for the rest */
    CHECK_INT(atomic_load(&blocker_calls), ==, 2);
    CHECK_INT(atomic_load(&calls), ==, 2);
    close(fd);
    els_ghc_stop();
}

static atomic_bool off_returned;

static void *off_thread(void *arg)
{
    (void)arg;
    CHECK_OK(els_ghc_off_snapshot(blocking_hook, NULL));
    atomic_store(&off_returned, true);
    return NULL;
}

static void self_removing_hook(void *ctx)
{
    (void)ctx;
    CHECK_OK(els_ghc_off_snapshot(self_removing_hook, NULL));
    atomic_fetch_add(&calls, 1);
}

/* els_ghc_off_snapshot returns once the hook is not running; from inside
 * a hook it does not wait for itself. */
static void off_waits_for_the_call(void)
{
    els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);
    CHECK_OK(els_ghc_on_snapshot(self_removing_hook, NULL));
    CHECK_OK(els_ghc_on_snapshot(blocking_hook, NULL));
    start(sock_spec("s.sock"));
    while (!atomic_load(&blocker_inside))
        check_sleep_ms(1);
    CHECK_INT(atomic_load(&calls), ==, 1);
    CHECK_INT(hook_stats().registered, ==, 1);
    pthread_t t;
    CHECK_OK(pthread_create(&t, NULL, off_thread, NULL));
    /* It has no way to return while the hook blocks; give it the chance
     * to do so wrongly. */
    check_sleep_ms(50);
    CHECK(!atomic_load(&off_returned));
    atomic_store(&blocker_release, true);
    CHECK_OK(pthread_join(t, NULL));
    CHECK(atomic_load(&off_returned));
    CHECK(!atomic_load(&blocker_inside));
    CHECK_INT(hook_stats().registered, ==, 0);
    els_ghc_stop();
}

/* A child's own stream runs the hooks in the child (which has no hooks'
 * thread of its parent). */
static void forked_child_runs_hooks(void)
{
    els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);
    CHECK_OK(els_ghc_on_snapshot(counting_hook, NULL));
    start(sock_spec("s.sock"));
    wait_calls(&calls, 1);
    wait_idle();
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        alarm(10);
        if (!CHILD_CAN_START_THREADS)
            _exit(0);
        els_ghc_stop();         /* the parent's writer: forked, closed */
        char err[512];
        if (els_ghc_configure(sock_spec("child.sock"), err, sizeof err) != 0)
            _exit(2);
        if (els_ghc_start() != 0)
            _exit(3);
        while (atomic_load(&calls) < 2)
            check_sleep_ms(1);
        els_ghc_stop();
        _exit(0);
    }
    check_child_ok(pid);
    els_ghc_stop();
    CHECK_INT(atomic_load(&calls), ==, 1);
}

/* Without a Haskell runtime (a C program) a Haskell hook cannot run: it
 * is counted as failed, with a log line. */
static void haskell_hook_without_rts_fails(void)
{
    tu_log_capture();
    els_ghc_haskell_hook(NULL);
    CHECK(tu_log_contains("snapshot hook failed: a Haskell hook without a Haskell runtime"));
    els_ghc_hook_failed("a reason");
    CHECK(tu_log_contains("snapshot hook failed: a reason"));
    CHECK_INT(hook_stats().failures, ==, 2);
}

static const struct check_case cases[] = {
    CHECK_CASE(registration_limits),
    CHECK_CASE(hooks_run_for_every_new_stream),
    CHECK_CASE(blocked_hook_holds_no_stream),
    CHECK_CASE(off_waits_for_the_call),
    CHECK_CASE(forked_child_runs_hooks),
    CHECK_CASE(haskell_hook_without_rts_fails),
};

CHECK_MAIN(cases)
