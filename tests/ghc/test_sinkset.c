/*
 * test_sinkset.c: a list of sinks in one spec (lib/ghc/sinkset.c, through
 * the RTS adapter lib/ghc/ghc.c), against a fake RTS with the patched
 * RTS's unit writer and its buffer hand-over (patch 0014).
 *
 * The fake RTS is fake_units.h's, with eventLogUnitsMayBeKept and
 * getEventLogBufferSize, which ghc.c refers to weakly.  Its capability
 * buffer is malloc'd; when the writer keeps it, the fake fills the one it
 * got back next, and when the writer copies, the fake scribbles over its
 * buffer at once (so a writer that kept a pointer without keeping the
 * buffer sends garbage, and the stream comparison catches it).
 * Checked: refused lists (an empty spec, too many, a bad spec named by its
 * place, a '|' that belonged to a path); a path with %7C; every unit
 * reaches the consumers of every sink, byte for byte, the buffer handed
 * over to the last sink only; els_ghc_stats is the first sink's and
 * els_ghc_sink_stats each one's; a join snapshot one sink asked for goes
 * to every sink and runs the hooks once; els_ghc_ring_dump dumps the
 * list's recorder; a sink that cannot open closes those opened before
 * it; the RTS buffer size is checked against each sink; one announce
 * file lists every sink; a forked child's stop leaves the parent's sinks
 * alone; a restart opens every sink again.
 */
#include <Rts.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#undef CHECK                    /* Rts.h's; check.h has its own */
#include "check.h"
#include "childcheck.h"
#include "writer/writer_test.h"
#include "evgen.h"
#include "testutil.h"
#include "eventlog-sink.h"
#include "eventlog-sink/ghc.h"

// ---------------------------------------------------------------------------
// The fake RTS (fake_units.h), with the buffer hand-over of patch 0014
// ---------------------------------------------------------------------------

#include "fake_units.h"

size_t getEventLogBufferSize(void);

#define CAP_BUF (256u * 1024)   /* the fake capability's buffer */

static uint8_t *cap_buf;                /* the fake owns it */
static atomic_size_t fake_buffer_size;  /* 0: the default */

bool eventLogUnitsMayBeKept(void)
{
    return true;
}

size_t getEventLogBufferSize(void)
{
    return atomic_load(&fake_buffer_size);
}

/* The capability's buffer fills: one block of at least three quarters of
 * it, offered to keep.  A kept buffer is the writer's from then on; a
 * copied one is scribbled over at once. */
static void fake_full_block(uint64_t t0, const char *tag)
{
    struct evgen_buf b = evgen_block(0, t0, 10, tag, CAP_BUF * 3 / 4);
    CHECK(b.len <= CAP_BUF);
    pthread_mutex_lock(&fake_lock);
    CHECK(fake_writer != NULL);
    if (cap_buf == NULL)
        CHECK((cap_buf = malloc(CAP_BUF)) != NULL);
    memcpy(cap_buf, b.p, b.len);
    void *kept = NULL;
    const EventLogUnitInfo info = { EVENTLOG_UNIT_CAP_BLOCK,
                                    EVENTLOG_WRITE_BUFFER_FULL, 0, CAP_BUF,
                                    &kept };
    fake_writer->writeEventLogUnit(cap_buf, b.len, &info);
    if (kept != NULL)
        cap_buf = kept;
    else
        memset(cap_buf, 0xEE, CAP_BUF);
    evgen_put(&fake_written, b.p, b.len);
    pthread_mutex_unlock(&fake_lock);
    free(b.p);
}

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/* "unix:DIR/a.sock?OPTS|unix:DIR/b.sock?OPTS" and the like: each NAME of
 * names ("a.sock", "ring:r.eventlog?size=16M" for another scheme) in the
 * case's directory, unix: when no scheme is given. */
static const char *list_of(const char *const *names, size_t n)
{
    static char list[4096];
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        const char *name = names[i];
        const char *colon = strchr(name, ':');
        char scheme[16] = "unix";
        if (colon != NULL) {
            snprintf(scheme, sizeof scheme, "%.*s", (int)(colon - name), name);
            name = colon + 1;
        }
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%s:%s/%s",
                              i ? "|" : "", scheme, check_dir, name);
        CHECK(o < sizeof list);
    }
    return list;
}

static int configure_err(const char *spec, char *err, size_t err_len)
{
    err[0] = '\0';
    return els_ghc_configure(spec, err, err_len);
}

static void start_list(const char *list)
{
    char err[512];
    int r = configure_err(list, err, sizeof err);
    CHECK_MSG(r == 0, "configure %s: %d %s", list, r, err);
    CHECK_OK(els_ghc_start());
}

/* A consumer connecting (with retries) and reading to EOF on its own
 * thread. */
struct consumer {
    const char *path;
    pthread_t thread;
    char *got;
    size_t len;
};

static void *consumer_main(void *arg)
{
    struct consumer *c = arg;
    int fd = tu_connect_unix(c->path, TU_WAIT_MS);
    if (fd < 0)
        return NULL;
    c->got = tu_read_all(fd, &c->len, TU_WAIT_MS * 3);
    close(fd);
    return NULL;
}

static void consumer_start(struct consumer *c, const char *name)
{
    memset(c, 0, sizeof *c);
    c->path = strdup(check_path(name));
    CHECK_OK(pthread_create(&c->thread, NULL, consumer_main, c));
}

/* Join the consumer; it received exactly what the fake RTS wrote. */
static void consumer_check_whole(struct consumer *c)
{
    CHECK_OK(pthread_join(c->thread, NULL));
    CHECK_MSG(c->got != NULL, "%s: nothing received", c->path);
    CHECK_MSG(c->len == fake_written.len && memcmp(c->got, fake_written.p, c->len) == 0,
              "%s: received %zu bytes, not the %zu the RTS wrote", c->path,
              c->len, fake_written.len);
    free(c->got);
    free((void *)c->path);
}

static struct els_stats sink_stats(unsigned i)
{
    struct els_stats st;
    CHECK_OK(els_ghc_sink_stats(i, &st));
    return st;
}

// ---------------------------------------------------------------------------
// The list's syntax
// ---------------------------------------------------------------------------

static void refused(const char *spec, const char *expect)
{
    char err[512];
    int r = configure_err(spec, err, sizeof err);
    CHECK_MSG(r == ELS_EINVAL || r == ELS_ENOSCHEME, "configure \"%s\": %d",
              spec, r);
    CHECK_MSG(strstr(err, expect) != NULL, "configure \"%s\": \"%s\" does not "
              "say \"%s\"", spec, err, expect);
    CHECK_MSG(strchr(err, '\n') == NULL, "not one line: %s", err);
}

static void bad_lists_refused(void)
{
    refused("unix:/tmp/a.sock|", "sink list \"unix:/tmp/a.sock|\": sink 2 of 2 is empty");
    refused("|unix:/tmp/a.sock", "sink 1 of 2 is empty");
    refused("unix:/tmp/a.sock||unix:/tmp/b.sock", "sink 2 of 3 is empty");
    refused("unix:/a|unix:/b|unix:/c|unix:/d|unix:/e",
            "5 sinks, at most 4 (specs are separated by '|'; write %7C");
    refused("unix:/tmp/a.sock|ring:/tmp/r?bogus=1",
            "sink 2 of 2: spec \"ring:/tmp/r?bogus=1\": unknown option 'bogus'");
    refused("unix:/tmp/a.sock|tc:1", "sink 2 of 2: spec \"tc:1\": scheme \"tc\" "
            "is not registered");
    /* A '|' that belonged to a path: the rest has no scheme. */
    refused("unix:/tmp/a|b.sock", "sink 2 of 2: spec \"b.sock\": ");
    refused("unix:/tmp/a|b.sock", "(write %7C for a '|' inside an address or "
            "option value)");
    refused("ring:/tmp/r?dump-on=marker:a|b", "sink 2 of 2: spec \"b\"");
    /* A spec alone is worded as before: no place in a list. */
    char err[512];
    CHECK_INT(configure_err("unix:/tmp/a.sock?bogus=1", err, sizeof err), ==, ELS_EINVAL);
    CHECK_MSG(strncmp(err, "spec \"unix:/tmp/a.sock?bogus=1\": ", 33) == 0,
              "a single spec's error changed: %s", err);
    CHECK_INT(configure_err("", err, sizeof err), ==, ELS_EINVAL);
    CHECK_STR(err, "empty eventlog sink spec");
    /* Four is allowed. */
    CHECK_OK(configure_err("unix:/a|unix:/b|unix:/c|unix:/d", err, sizeof err));
}

/* %7C is a '|' inside an address (%-decoded, as every address). */
static void escaped_bar_in_a_path(void)
{
    els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);
    static const char *const names[] = { "a%7Cb.sock", "c.sock" };
    start_list(list_of(names, 2));
    CHECK(tu_exists(check_path("a|b.sock")));
    CHECK(tu_exists(check_path("c.sock")));
    els_ghc_stop();
    CHECK(!tu_exists(check_path("a|b.sock")));
    CHECK(!tu_exists(check_path("c.sock")));
}

// ---------------------------------------------------------------------------
// Units to every sink
// ---------------------------------------------------------------------------

#define BLOCKS 12

/* Every unit reaches both sinks' consumers whole; only the last sink
 * keeps buffers; the stats calls read the right sink.  Then a restart
 * opens both again. */
static void every_unit_to_every_sink(void)
{
    els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);
    static const char *const names[] = { "a.sock?wait=20", "b.sock?wait=20" };
    const char *list = list_of(names, 2);
    for (int round = 0; round < 2; round++) {
        struct consumer ca, cb;
        evgen_free(&fake_written);
        consumer_start(&ca, "a.sock");
        consumer_start(&cb, "b.sock");
        if (round == 0)
            start_list(list);
        else
            CHECK_OK(els_ghc_start());
        for (unsigned i = 0; i < BLOCKS; i++)
            fake_full_block(1000u * (i + 1), "x");
        struct els_stats a = sink_stats(0), b = sink_stats(1), first;
        CHECK_OK(els_ghc_stats(&first));
        CHECK_U64(a.units_accepted, ==, BLOCKS);
        CHECK_U64(b.units_accepted, ==, BLOCKS);
        CHECK_U64(a.units_handed_over, ==, 0);
        CHECK_U64(b.units_handed_over, ==, BLOCKS);
        CHECK_U64(first.units_accepted, ==, a.units_accepted);
        CHECK_U64(first.units_handed_over, ==, 0);
        struct els_stats none;
        CHECK_INT(els_ghc_sink_stats(2, &none), ==, ELS_EINVAL);
        els_ghc_stop();
        CHECK_INT(els_ghc_sink_stats(0, &none), ==, ELS_ESTOPPED);
        consumer_check_whole(&ca);
        consumer_check_whole(&cb);
        CHECK(!tu_exists(check_path("a.sock")));
        CHECK(!tu_exists(check_path("b.sock")));
    }
    free(cap_buf);
    evgen_free(&fake_written);
}

/* A consumer joining sink 1 makes it ask for a snapshot; the RTS's one
 * answer reaches both sinks and runs the hooks once. */
static void join_snapshot_to_every_sink(void)
{
    els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);
    static const char *const names[] = { "a.sock", "b.sock?wait=20" };
    struct consumer first;
    consumer_start(&first, "b.sock");
    start_list(list_of(names, 2));
    for (unsigned i = 0; i < 3; i++)
        fake_full_block(1000u * (i + 1), "x");
    /* The first consumer has everything: the stream's start has left
     * sink 1's queue, so the next consumer joins mid-stream. */
    WAIT_UNTIL(sink_stats(1).units_queued == 0, 5, "sink 1 still queues units");
    CHECK_INT(atomic_load(&fake_snapshot_requests), ==, 0);
    int fd = tu_connect_unix(check_path("b.sock"), TU_WAIT_MS);
    CHECK(fd >= 0);
    WAIT_UNTIL(atomic_load(&fake_snapshot_requests) >= 1, 5, "no snapshot request");
    struct els_ghc_hook_stats h0, h1;
    CHECK_OK(els_ghc_hook_stats(&h0));
    fake_join_snapshot();
    CHECK_OK(els_ghc_hook_stats(&h1));
    CHECK_U64(h1.requests, ==, h0.requests + 1);
    CHECK_U64(sink_stats(0).snapshot_units, ==, 1);
    CHECK_U64(sink_stats(1).snapshot_units, ==, 1);
    /* The joiner starts at the header; the snapshot follows. */
    els_ghc_stop();
    size_t len;
    char *got = tu_read_all(fd, &len, TU_WAIT_MS);
    CHECK(got != NULL);
    struct evgen_buf joined = { 0 }, h = evgen_header();
    evgen_put(&joined, got, len);
    CHECK(joined.len > h.len && memcmp(joined.p, h.p, h.len) == 0);
    CHECK(contains(&joined, "snapshot 0"));
    check_stream_parses(&joined, true);
    close(fd);
    free(got);
    evgen_free(&joined);
    evgen_free(&h);
    consumer_check_whole(&first);
    free(cap_buf);
    evgen_free(&fake_written);
}

/* els_ghc_ring_dump dumps the list's recorder, wherever it stands; a
 * list without one has nothing to dump. */
static void ring_dump_of_the_list(void)
{
    els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);
    static const char *const names[] = { "a.sock", "ring:r.eventlog?size=16M&at-exit=0" };
    start_list(list_of(names, 2));
    for (unsigned i = 0; i < 3; i++)
        fake_full_block(1000u * (i + 1), "x");
    char name[1024];
    CHECK_OK(els_ghc_ring_dump(name, sizeof name));
    CHECK_STR(name, check_path("r.1.eventlog"));
    char *dump = tu_read_file(name);
    CHECK(dump != NULL);
    free(dump);
    els_ghc_stop();

    static const char *const two[] = { "a.sock", "b.sock" };
    start_list(list_of(two, 2));
    CHECK_INT(els_ghc_ring_dump(name, sizeof name), ==, ELS_EINVAL);
    els_ghc_stop();
    free(cap_buf);
    evgen_free(&fake_written);
}

// ---------------------------------------------------------------------------
// Opening
// ---------------------------------------------------------------------------

/* Sink 2 cannot open: start says which, sink 1 is closed again (its
 * socket gone); once the way is clear both open. */
static void failed_open_closes_the_others(void)
{
    tu_log_capture();
    static const char *const names[] = { "a.sock", "b.sock" };
    CHECK_OK(tu_write_file(check_path("b.sock"), "in the way\n"));
    char err[512];
    CHECK_OK(configure_err(list_of(names, 2), err, sizeof err));
    int r = els_ghc_start();
    CHECK_MSG(r < 0 && r != ELS_EBUSY, "start with b.sock taken: %d", r);
    CHECK(!tu_exists(check_path("a.sock")));
    CHECK_MSG(tu_log_contains("els_ghc_start: sink 2 of 2: "),
              "the failure does not name sink 2");
    struct els_stats st;
    CHECK_INT(els_ghc_stats(&st), ==, ELS_ESTOPPED);
    CHECK(unlink(check_path("b.sock")) == 0);
    CHECK_OK(els_ghc_start());
    CHECK(tu_exists(check_path("a.sock")) && tu_exists(check_path("b.sock")));
    els_ghc_stop();
    evgen_free(&fake_written);
}

/* Each sink must hold a whole RTS buffer: the second one's buffer= is
 * too small, and nothing opens. */
static void unit_size_checked_for_each_sink(void)
{
    tu_log_capture();
    atomic_store(&fake_buffer_size, 4u << 20);
    static const char *const names[] = { "a.sock?buffer=64M", "b.sock?buffer=3M" };
    char err[512];
    CHECK_OK(configure_err(list_of(names, 2), err, sizeof err));
    CHECK_INT(els_ghc_start(), ==, ELS_EINVAL);
    CHECK(!tu_exists(check_path("a.sock")));
    CHECK_MSG(tu_log_contains("sink 2 of 2: +RTS --eventlog-buffer-size=4194304 "
                              "is not below the sink's buffer=3145728"),
              "the refusal does not name sink 2");
    /* A runtime change is checked against each sink too. */
    static const char *const ok[] = { "a.sock?buffer=64M", "b.sock?buffer=5M" };
    CHECK_OK(configure_err(list_of(ok, 2), err, sizeof err));
    CHECK_OK(els_ghc_start());
    els_ghc_stop();
    evgen_free(&fake_written);
}

/* One announce file for the process, listing both sinks (and the ring's
 * control socket); gone when the eventlog stops. */
static void one_announce_file_lists_every_sink(void)
{
    els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);
    CHECK(setenv("XDG_RUNTIME_DIR", check_dir, 1) == 0);
    char ctl[700], want[1400];
    snprintf(ctl, sizeof ctl, "unix:%s", check_path("r.ctl"));
    static const char *const names[] = { "a.sock", "ring:r.eventlog?size=16M&at-exit=0&control=unix:" };
    char list[2048];
    snprintf(list, sizeof list, "%s%s", list_of(names, 2), check_path("r.ctl"));
    start_list(list);
    char path[1024];
    snprintf(path, sizeof path, "%s/eventlog-sink/%ld.announce", check_dir,
             (long)getpid());
    char *text = tu_read_file(path);
    CHECK_MSG(text != NULL, "no announce file %s", path);
    const char *bar = strchr(list, '|');
    snprintf(want, sizeof want, "\nsink %.*s\n", (int)(bar - list), list);
    CHECK_CONTAINS(text, want);
    snprintf(want, sizeof want, "\nsink %s\n", bar + 1);
    CHECK_CONTAINS(text, want);
    snprintf(want, sizeof want, "\ncontrol %s\n", ctl);
    CHECK_CONTAINS(text, want);
    size_t sinks = 0;
    for (const char *p = text; (p = strstr(p, "\nsink ")) != NULL; p++)
        sinks++;
    CHECK_INT(sinks, ==, 2);
    free(text);
    els_ghc_stop();
    CHECK(!tu_exists(path));
    evgen_free(&fake_written);
}

/* A forked child stops its copy of the list: the parent's sinks stay
 * (their sockets too) and go on serving. */
static void forked_child_leaves_the_sinks(void)
{
    els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);
    static const char *const names[] = { "a.sock", "b.sock" };
    start_list(list_of(names, 2));
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        alarm(10);
        els_ghc_stop();
        _exit(0);
    }
    check_child_ok(pid);
    CHECK(tu_exists(check_path("a.sock")) && tu_exists(check_path("b.sock")));
    fake_full_block(1000, "after the fork");
    struct consumer ca, cb;
    consumer_start(&ca, "a.sock");
    consumer_start(&cb, "b.sock");
    WAIT_UNTIL(sink_stats(0).consumers_connected == 1 &&
               sink_stats(1).consumers_connected == 1, 5, "consumers not attached");
    els_ghc_stop();
    consumer_check_whole(&ca);
    consumer_check_whole(&cb);
    free(cap_buf);
    evgen_free(&fake_written);
}

static const struct check_case cases[] = {
    CHECK_CASE(bad_lists_refused),
    CHECK_CASE(escaped_bar_in_a_path),
    CHECK_CASE(every_unit_to_every_sink),
    CHECK_CASE(join_snapshot_to_every_sink),
    CHECK_CASE(ring_dump_of_the_list),
    CHECK_CASE(failed_open_closes_the_others),
    CHECK_CASE(unit_size_checked_for_each_sink),
    CHECK_CASE(one_announce_file_lists_every_sink),
    CHECK_CASE(forked_child_leaves_the_sinks),
};

CHECK_MAIN(cases)
