/*
 * test_model.c: the live monitor's model (tools/monitor/model.c).
 *
 * On a real eventlog of GHC 9.0.2 (tests/data/, written by a stock RTS
 * at -N2) fed in odd pieces: the model counts exactly the events, GCs,
 * threads, user messages and markers that a raw pass of the public parser
 * counts by tag, and the same JSON whatever the chunking.  On streams
 * built event by event in the RTS's layout: capability utilisation and GC
 * time from thread and GC events, GC pauses, thread states through the
 * table's growth and deletions, marker pairs as spans, the sink's in-band
 * notes (encoded by the library's own encoder), heap sizes and a -hT
 * sample, cost-centre samples (top-N and the speedscope export), the
 * program's name and pid in the Prometheus labels, restarts, resets, a
 * run long enough to coarsen the timeline, and a malformed stream.
 * Hostile streams: ESC sequences in every string the terminal view shows
 * reach it only in their safe form (the JSON keeps them exactly);
 * 120,000 thread ids chosen to collide under the model's first hash cost
 * no more table probes than sequential ids (counted, not timed); a flood
 * of cost centres with names of the largest size keeps the model's
 * memory (its own count and malloc's) within its stated bound.
 * The figures against the RTS's own accounts: a parallel collection is
 * one collection whose pause is its leader's (per generation), the
 * allocation is every capability's last total summed, censuses are
 * ranked by size with their time and breakdown, a cost centre keeps one
 * spelling in every view, the RTS's own cost centres are apart, events
 * and bytes by type, thread stops by reason with the time to the next
 * run whatever the order of the capabilities' blocks.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "eventlog-sink.h"
#include "eventlog-sink/parse.h"
#include "evgen.h"
#include "format/evformat.h"
#include "model_gen.h"
#include "monitor/model.h"

/* ------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------ */

static uint8_t *read_all(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    CHECK_MSG(fd >= 0, "%s: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    CHECK(buf != NULL);
    for (;;) {
        if (n == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            CHECK(buf != NULL);
        }
        ssize_t r = read(fd, buf + n, cap - n);
        CHECK(r >= 0);
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    *len = n;
    return buf;
}

static void json_of(const struct mon_model *m, struct strbuf *sb)
{
    sb_clear(sb);
    mon_model_json(m, sb);
    CHECK(!sb->failed);
}

/* Counting by tag with the public parser alone: the reference; and
 * each capability's last HEAP_ALLOCATED (its own running total). */
struct raw_counts {
    uint64_t events, by_tag[65536], alloc[257];
};

static int raw_on_event(void *user, const struct els_event *ev)
{
    struct raw_counts *r = user;
    if (ev->tag != ELS_EV_BLOCK_MARKER) {
        r->events++;
        r->by_tag[ev->tag]++;
    }
    if (ev->tag == ELS_EV_HEAP_ALLOCATED && ev->payload_len >= 12) {
        uint64_t v = 0;
        for (int i = 4; i < 12; i++)
            v = v << 8 | ev->payload[i];
        r->alloc[ev->cap >= 0 && ev->cap < 256 ? ev->cap : 256] = v;
    }
    return 0;
}

/* ------------------------------------------------------------------------
 * A real GHC eventlog
 * ------------------------------------------------------------------------ */

static void real_ghc_sample(void)
{
    size_t len;
    uint8_t *data = read_all(ELS_TEST_DATA_DIR "/ghc-9.0.2-N2.eventlog", &len);
    FILE *cf = fopen(ELS_TEST_DATA_DIR "/ghc-9.0.2-N2.events", "r");
    CHECK(cf != NULL);
    unsigned long long want_events = 0;
    CHECK(fscanf(cf, "%llu", &want_events) == 1);
    fclose(cf);

    struct raw_counts *raw = calloc(1, sizeof *raw);
    CHECK(raw != NULL);
    struct els_parse_callbacks cb = { .struct_size = sizeof cb,
                                      .on_event = raw_on_event };
    struct els_parser *p;
    CHECK_OK(els_parser_new(&p, &cb, raw, 0));
    CHECK_OK(els_parser_feed(p, data, len, NULL));
    els_parser_free(p);

    struct mon_model *whole, *pieces;
    CHECK_OK(mon_model_new(&whole));
    CHECK_OK(mon_model_new(&pieces));
    CHECK_OK(mon_model_feed(whole, data, len));
    static const size_t sizes[] = { 1, 7, 4096, 3, 13, 900 };
    for (size_t off = 0, k = 0; off < len; k++) {
        size_t n = sizes[k % 6];
        if (n > len - off)
            n = len - off;
        CHECK_OK(mon_model_feed(pieces, data + off, n));
        off += n;
    }
    struct mon_summary s;
    mon_model_summary(pieces, &s);
    CHECK_U64(s.events, ==, want_events);
    CHECK_U64(s.events, ==, raw->events);
    /* Collections: one request and one GC_STATS_GHC each; the starts
     * are every capability's. */
    CHECK_U64(s.collections, ==, raw->by_tag[ELS_EV_GC_STATS_GHC]);
    CHECK_U64(s.collections, ==, raw->by_tag[ELS_EV_REQUEST_SEQ_GC]
                                 + raw->by_tag[ELS_EV_REQUEST_PAR_GC]);
    CHECK_U64(s.gc_starts, ==, raw->by_tag[ELS_EV_GC_START]);
    uint64_t alloc = 0;
    for (int c = 0; c <= 256; c++)
        alloc += raw->alloc[c];
    CHECK_U64(s.heap_allocated, ==, alloc);
    CHECK_U64(s.threads_created, ==, raw->by_tag[ELS_EV_CREATE_THREAD]);
    CHECK_U64(s.user_messages, ==, raw->by_tag[ELS_EV_USER_MSG]);
    CHECK_U64(s.markers, ==, raw->by_tag[ELS_EV_USER_MARKER]);
    CHECK_U64(s.bytes, ==, len);
    CHECK(s.ended);
    CHECK_INT(s.caps, ==, 2);
    /* The sample's program: 2 workers x 200 messages and one marker each. */
    CHECK_U64(s.user_messages, ==, 400);
    CHECK_U64(s.markers, ==, 2);

    mon_model_tick(whole, 0, true);
    mon_model_tick(pieces, 0, true);
    struct strbuf a = { 0 }, b = { 0 };
    json_of(whole, &a);
    json_of(pieces, &b);
    CHECK_STR(a.p, b.p);
    CHECK_CONTAINS(a.p, "\"program\":{\"name\":\"Sample\"");
    CHECK_CONTAINS(a.p, "\"rts\":\"GHC-9.0.2 rts_thr_l\"");
    sb_free(&a);
    sb_free(&b);
    mon_model_free(whole);
    mon_model_free(pieces);
    free(raw);
    free(data);
}

/* ------------------------------------------------------------------------
 * Synthetic streams
 * ------------------------------------------------------------------------ */

/* Built event by event: header(), block(), ev_*() in model_gen.h. */

/* A run of 100 ms on capability 0 with every kind of event the views
 * show. */
static struct evgen_buf synthetic_run(void)
{
    struct evgen_buf b = header();
    block(&b, 0xffff, 0);
    ev(&b, 30, 0);
    static const char args[] = "/usr/bin/prog\0+RTS\0-l";
    evgen_u16(&b, (uint16_t)(4 + sizeof args));
    evgen_u32(&b, 1);
    evgen_put(&b, args, sizeof args);
    ev(&b, 32, 0);
    evgen_u32(&b, 1);
    evgen_u32(&b, 42);
    ev_cc(&b, 1, "main", "Main");
    ev_cc(&b, 2, "go", "Main");

    block(&b, 0, 0);
    ev_thread(&b, 0, 0, 1);
    ev_thread(&b, 1, 10 * MS, 1);
    ev_text(&b, 58, 20 * MS, "io start");
    ev_text(&b, 19, 30 * MS, "hello");
    ev_text(&b, 58, 40 * MS, "io end");
    static const uint32_t inner[] = { 2, 1 }, outer[] = { 1 };
    ev_sample(&b, 41 * MS, 2, inner);
    ev_sample(&b, 42 * MS, 2, inner);
    ev_sample(&b, 43 * MS, 2, inner);
    ev_sample(&b, 44 * MS, 1, outer);
    ev_stop(&b, 60 * MS, 1, 3);
    ev(&b, 11, 60 * MS);
    ev(&b, 9, 60 * MS);
    ev_gc_stats(&b, 69 * MS, 0);
    ev(&b, 10, 70 * MS);
    ev_thread(&b, 1, 70 * MS, 1);
    ev_stop(&b, 100 * MS, 1, 5);

    block(&b, 0xffff, 70 * MS);
    ev_heap(&b, 49, 70 * MS, 2000);
    ev_heap(&b, 50, 70 * MS, 1000);
    ev_heap(&b, 51, 70 * MS, 500);
    ev(&b, 162, 70 * MS);
    evgen_u64(&b, 1);
    ev(&b, 164, 70 * MS);
    evgen_u16(&b, (uint16_t)(1 + 8 + 6));
    uint8_t prof = 1;
    evgen_put(&b, &prof, 1);
    evgen_u64(&b, 300);
    evgen_put(&b, "THUNK", 6);
    ev(&b, 164, 70 * MS);
    evgen_u16(&b, (uint16_t)(1 + 8 + 10));
    evgen_put(&b, &prof, 1);
    evgen_u64(&b, 700);
    evgen_put(&b, "ARR_WORDS", 10);
    ev(&b, 165, 70 * MS);
    evgen_u64(&b, 1);

    /* A note as the library writes it (a complete global block). */
    end_block(&b);
    char note[] = "eventlog-sink: 3 units (4096 bytes) dropped here: "
                  "queue-full; blocks of cap 0";
    uint8_t nb[512];
    size_t n = elsi_note_encode(nb, sizeof nb, 80 * MS, note);
    CHECK(n > 0);
    evgen_put(&b, nb, n);
    evgen_put(&b, evgen_data_end, 2);
    return b;
}

static void synthetic_figures(void)
{
    struct evgen_buf b = synthetic_run();
    struct mon_model *m;
    CHECK_OK(mon_model_new(&m));
    int rc = mon_model_feed(m, b.p, b.len);
    CHECK_MSG(rc == 0, "feed: %s", mon_model_error(m));
    mon_model_tick(m, 0, true);
    struct strbuf sb = { 0 };
    json_of(m, &sb);
    /* 80 of 100 ms running, 10 in GC. */
    CHECK_CONTAINS(sb.p, "{\"cap\":0,\"state\":\"idle\",\"util\":0.8,\"gc\":0.1,");
    CHECK_CONTAINS(sb.p, "\"gc\":{\"collections\":1,\"requests\":1,\"stats\":1,");
    CHECK_CONTAINS(sb.p, "\"by_gen\":[{\"gen\":0,\"collections\":1,\"pauses\":1,"
                         "\"pause_max_ns\":10000000,\"pause_total_ns\":10000000,"
                         "\"pause_max_ms\":10,\"pause_total_s\":0.01}]");
    CHECK_CONTAINS(sb.p, "\"pause_p50_ms\":10,\"pause_max_ms\":10,");
    CHECK_CONTAINS(sb.p, "\"threads\":{\"created\":1,\"alive\":0,");
    CHECK_CONTAINS(sb.p, "\"heap\":{\"size\":1000,\"live\":500,\"allocated\":2000,");
    CHECK_CONTAINS(sb.p, "\"by_label\":[{\"label\":\"ARR_WORDS\",\"bytes\":700},"
                         "{\"label\":\"THUNK\",\"bytes\":300}]");
    CHECK_CONTAINS(sb.p, "\"top\":[{\"cc\":\"go\",\"module\":\"Main\",\"samples\":3},"
                         "{\"cc\":\"main\",\"module\":\"Main\",\"samples\":1}]");
    CHECK_CONTAINS(sb.p, "\"user\":{\"messages\":1,\"markers\":2,");
    CHECK_CONTAINS(sb.p, "\"loss\":{\"notes\":1,\"loss_notes\":1,\"dropped_units\":3,\"dropped_bytes\":4096,");
    CHECK_CONTAINS(sb.p, "\"program\":{\"name\":\"prog\",\"pid\":42,");

    sb_clear(&sb);
    mon_model_timeline_json(m, 0, 0, 10, &sb);
    CHECK_CONTAINS(sb.p, "\"spans\":[{\"t0\":20000000,\"t1\":40000000,\"text\":\"io\"}]");
    /* 10 ms columns: idle, then running, GC in the 7th. */
    CHECK_CONTAINS(sb.p, "\"run\":[0.000,1.000,1.000,1.000,1.000,1.000,0.000,1.000,1.000,1.000");
    CHECK_CONTAINS(sb.p, "\"gc\":[0.000,0.000,0.000,0.000,0.000,0.000,1.000,0.000");

    sb_clear(&sb);
    mon_model_speedscope(m, 0, 0, &sb);
    /* Outermost frame first; four samples, the first weighing 0. */
    CHECK_CONTAINS(sb.p, "\"samples\":[[1,2],[1,2],[1,2],[1]]");
    CHECK_CONTAINS(sb.p, "\"weights\":[0,1000000,1000000,1000000]");
    sb_clear(&sb);
    mon_model_speedscope(m, 42 * MS, 43 * MS, &sb);
    CHECK_CONTAINS(sb.p, "\"samples\":[[1,2],[1,2]]");

    sb_clear(&sb);
    mon_model_prometheus(m, &sb);
    CHECK_CONTAINS(sb.p, "\nghc_gc_collections_total{program=\"prog\",pid=\"42\",gen=\"0\"} 1\n");
    CHECK_CONTAINS(sb.p, "ghc_gc_pause_seconds_bucket{program=\"prog\",pid=\"42\",le=\"0.005\"} 0\n");
    CHECK_CONTAINS(sb.p, "ghc_gc_pause_seconds_bucket{program=\"prog\",pid=\"42\",le=\"0.01\"} 1\n");
    CHECK_CONTAINS(sb.p, "eventlog_lost_units_total{program=\"prog\",pid=\"42\",kind=\"dropped\"} 3\n");
    CHECK_CONTAINS(sb.p, "ghc_capability_utilisation{program=\"prog\",pid=\"42\",cap=\"0\"} 0.8\n");

    sb_free(&sb);
    mon_model_free(m);
    evgen_free(&b);
}

static void restart_and_reset(void)
{
    struct evgen_buf b = synthetic_run();
    struct mon_model *m;
    CHECK_OK(mon_model_new(&m));
    /* A restarted eventlog: a second stream after DATA_END. */
    CHECK_OK(mon_model_feed(m, b.p, b.len));
    CHECK_OK(mon_model_feed(m, b.p, b.len));
    struct mon_summary s;
    mon_model_summary(m, &s);
    CHECK_U64(s.streams, ==, 2);
    CHECK_U64(s.collections, ==, 2);
    CHECK_U64(s.user_messages, ==, 2);
    mon_model_reset(m);
    mon_model_summary(m, &s);
    CHECK_U64(s.streams, ==, 0);
    CHECK_U64(s.events, ==, 0);
    CHECK_OK(mon_model_feed(m, b.p, b.len));
    mon_model_summary(m, &s);
    CHECK_U64(s.collections, ==, 1);
    mon_model_free(m);
    evgen_free(&b);
}

static void malformed(void)
{
    struct evgen_buf b = header();
    block(&b, 0, 0);
    ev_thread(&b, 0, 0, 1);
    end_block(&b);
    evgen_u16(&b, 9999);            /* an undeclared tag */
    evgen_u64(&b, 1);
    struct mon_model *m;
    CHECK_OK(mon_model_new(&m));
    CHECK_INT(mon_model_feed(m, b.p, b.len), ==, ELS_EINVAL);
    CHECK(mon_model_error(m) != NULL);
    CHECK_INT(mon_model_feed(m, "more", 4), ==, ELS_EINVAL);
    struct strbuf sb = { 0 };
    json_of(m, &sb);
    CHECK_CONTAINS(sb.p, "\"bytes_unread\":4,");
    CHECK_CONTAINS(sb.p, "\"error\":\"offset ");
    sb_free(&sb);
    mon_model_free(m);
    evgen_free(&b);
}

static void many_threads_long_run(void)
{
    struct evgen_buf b = header();
    block(&b, 0, 0);
    /* 5000 threads: the table grows; all but thread 77 finish, in an
     * order that moves entries by backward shifts. */
    for (uint32_t t = 1; t <= 5000; t++)
        ev_thread(&b, 0, 0, t);
    for (uint32_t t = 5000; t >= 1; t--)
        if (t != 77)
            ev_stop(&b, 0, t, 5);
    ev_thread(&b, 1, 0, 77);
    /* Running for 100 s: the timeline coarsens many times. */
    ev_stop(&b, 100000 * MS, 77, 4);
    end_block(&b);
    evgen_put(&b, evgen_data_end, 2);

    struct mon_model *m;
    CHECK_OK(mon_model_new(&m));
    CHECK_OK(mon_model_feed(m, b.p, b.len));
    mon_model_tick(m, 0, true);
    struct strbuf sb = { 0 };
    json_of(m, &sb);
    /* Ended: the thread left is counted by its last state, at the end. */
    CHECK_CONTAINS(sb.p, "\"threads\":{\"created\":5000,\"alive\":1,\"running\":0,"
                         "\"runnable\":0,\"blocked\":0,");
    CHECK_CONTAINS(sb.p, "\"at_end\":{\"left\":1,\"running\":0,\"runnable\":0,\"blocked\":1}");
    CHECK_CONTAINS(sb.p, "\"util\":1,");
    sb_clear(&sb);
    mon_model_timeline_json(m, 0, 0, 4, &sb);
    CHECK_CONTAINS(sb.p, "\"run\":[1.000,1.000,1.000,");
    sb_free(&sb);
    mon_model_free(m);
    evgen_free(&b);
}

/* Blocks of different capabilities arrive out of time order: each event
 * lands in its own bin of the timeline, not in the last event's. */
static void timeline_out_of_order(void)
{
    struct evgen_buf b = header();
    block(&b, 1, 95 * MS);
    for (int i = 0; i < 3; i++)
        ev_text(&b, ELS_EV_USER_MSG, 95 * MS, "late");
    block(&b, 0, 5 * MS);
    for (int i = 0; i < 2; i++)
        ev_text(&b, ELS_EV_USER_MSG, 5 * MS, "early");
    ev_text(&b, ELS_EV_USER_MSG, 96 * MS, "late");
    end_block(&b);
    evgen_put(&b, evgen_data_end, 2);

    struct mon_model *m;
    CHECK_OK(mon_model_new(&m));
    CHECK_OK(mon_model_feed(m, b.p, b.len));
    struct strbuf sb = { 0 };
    mon_model_timeline_json(m, 0, 0, 10, &sb);
    /* 10 ms columns: two messages in the first, four in the tenth. */
    CHECK_CONTAINS(sb.p, "\"user_per_s\":[200,0,0,0,0,0,0,0,0,400]");
    sb_free(&sb);
    mon_model_free(m);
    evgen_free(&b);
}

/* The recent messages the JSON shows: the last 16 (the model's
 * MON_RECENT), oldest first, as the test expects them. */
#define RECENT 16
#define NMSG 40

static void expect_recent(struct strbuf *want, const uint64_t *t,
                          const int *cap, char (*text)[96], unsigned k)
{
    sb_clear(want);
    sb_puts(want, "\"recent_messages\":[");
    unsigned first = k > RECENT ? k - RECENT : 0;
    for (unsigned i = first; i < k; i++)
        sb_printf(want, "%s{\"t\":%" PRIu64 ",\"cap\":%d,\"text\":\"%s\"}",
                  i == first ? "" : ",", t[i], cap[i], text[i]);
    sb_puts(want, "],");
}

/* Note [Recent messages] in model.c: the model copies a message's text
 * only if it survives to the end of the feed call.  However the stream
 * is cut (many more messages than the ring in one piece, messages split
 * across pieces), after every feed call the JSON holds exactly the last
 * messages whose bytes have all arrived, and no text points into a piece
 * once the call has returned (each piece is overwritten after it). */
static void recent_messages(void)
{
    uint64_t t[NMSG];
    int cap[NMSG];
    char text[NMSG][96];
    size_t end[NMSG];
    struct evgen_buf b = header();
    for (unsigned i = 0; i < NMSG; i++) {
        if (i % 10 == 0)
            block(&b, (uint16_t)(i / 10 % 2), i * MS);
        t[i] = i * MS;
        cap[i] = (int)(i / 10 % 2);
        int n = snprintf(text[i], sizeof text[i], "msg %u ", i);
        memset(text[i] + n, 'a' + (int)(i % 26), 2 * i);
        text[i][n + 2 * (int)i] = '\0';
        if (i % 3 == 0)     /* markers between: another ring, another path */
            ev_text(&b, ELS_EV_USER_MARKER, t[i], "mark");
        ev_text(&b, ELS_EV_USER_MSG, t[i], text[i]);
        end[i] = b.len;
    }
    end_block(&b);
    evgen_put(&b, evgen_data_end, 2);

    static const size_t sizes[] = { SIZE_MAX, 1, 7, 23, 64, 333 };
    uint8_t *piece = malloc(b.len);
    CHECK(piece != NULL);
    struct strbuf sb = { 0 }, want = { 0 };
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        struct mon_model *m;
        CHECK_OK(mon_model_new(&m));
        for (size_t off = 0; off < b.len;) {
            size_t n = b.len - off < sizes[k] ? b.len - off : sizes[k];
            memcpy(piece, b.p + off, n);
            CHECK_OK(mon_model_feed(m, piece, n));
            memset(piece, 'Z', n);
            off += n;
            unsigned arrived = 0;
            while (arrived < NMSG && end[arrived] <= off)
                arrived++;
            json_of(m, &sb);
            expect_recent(&want, t, cap, text, arrived);
            CHECK_MSG(strstr(sb.p, want.p) != NULL, "pieces of %zu, at %zu: want %s in %s",
                      sizes[k], off, want.p, sb.p);
        }
        mon_model_free(m);
    }
    sb_free(&sb);
    sb_free(&want);
    free(piece);
    evgen_free(&b);
}

/* ------------------------------------------------------------------------
 * Time in GC: a share of the capabilities' time (Note [Time in GC])
 * ------------------------------------------------------------------------ */

/* The JSON's gc.time_frac. */
static double gc_time_frac(const struct mon_model *m)
{
    struct strbuf sb = { 0 };
    json_of(m, &sb);
    const char *p = strstr(sb.p, "\"time_frac\":");
    CHECK(p != NULL);
    double v = strtod(p + strlen("\"time_frac\":"), NULL);
    sb_free(&sb);
    return v;
}

static void gc_time_share(void)
{
    /* Two capabilities in the same GC from 10 to 100 ms, the run's last
     * event at 100 ms: 180 ms of pauses, as ghc-events sums GC_START to
     * GC_END per capability, over 2 x 100 ms of capability time (it was
     * shown as 180%). */
    struct evgen_buf b = header();
    block(&b, 0, 0);
    ev_thread(&b, 0, 0, 1);
    ev(&b, 9, 10 * MS);
    ev(&b, 10, 100 * MS);
    block(&b, 1, 0);
    ev(&b, 9, 10 * MS);
    ev(&b, 10, 100 * MS);
    end_block(&b);
    struct mon_model *m;
    CHECK_OK(mon_model_new(&m));
    CHECK_OK(mon_model_feed(m, b.p, b.len));
    mon_model_tick(m, 0, true);
    double frac = gc_time_frac(m);
    printf("# whole run: time_frac %g (ghc-events: 180 ms / (100 ms x 2 caps))\n", frac);
    CHECK(frac > 0.8999 && frac < 0.9001);
    struct strbuf sb = { 0 };
    json_of(m, &sb);
    CHECK_CONTAINS(sb.p, "\"time_s\":0.18,\"time_frac\":0.9,\"time_frac_caps\":2");
    sb_clear(&sb);
    mon_model_text(m, &sb, 100);
    CHECK_CONTAINS(sb.p, "time in GC 90.0% of 2 caps' time (0.18 s summed)");
    sb_free(&sb);
    mon_model_free(m);
    evgen_free(&b);

    /* Live intervals: a pause open at the first tick counts up to then;
     * the second counts only the rest (it counted the whole 100 ms pause
     * in the second 50 ms interval: 200%). */
    b = header();
    block(&b, 0, 0);
    ev(&b, 9, 0);
    block(&b, 1, 0);
    ev_thread(&b, 0, 50 * MS, 1);
    end_block(&b);
    CHECK_OK(mon_model_new(&m));
    CHECK_OK(mon_model_feed(m, b.p, b.len));
    mon_model_tick(m, 50 * MS, false);
    double first = gc_time_frac(m);
    b.len = 0;
    block(&b, 0, 50 * MS);
    ev(&b, 10, 100 * MS);
    block(&b, 1, 50 * MS);
    ev_thread(&b, 0, 100 * MS, 2);
    end_block(&b);
    CHECK_OK(mon_model_feed(m, b.p, b.len));
    mon_model_tick(m, 50 * MS, false);
    double second = gc_time_frac(m);
    printf("# intervals: time_frac %g then %g\n", first, second);
    CHECK(first > 0.4999 && first < 0.5001);
    CHECK(second > 0.4999 && second < 0.5001);

    /* A capability's block arriving late, with a pause that lies in an
     * interval already shown: no share above 1. */
    b.len = 0;
    block(&b, 1, 0);
    ev(&b, 9, 0);
    ev(&b, 10, 100 * MS);
    block(&b, 0, 100 * MS);
    ev_thread(&b, 0, 110 * MS, 3);
    end_block(&b);
    CHECK_OK(mon_model_feed(m, b.p, b.len));
    mon_model_tick(m, 10 * MS, false);
    double late = gc_time_frac(m);
    printf("# late block: time_frac %g\n", late);
    CHECK(late >= 0 && late <= 1);
    mon_model_free(m);
    evgen_free(&b);
}

/* ------------------------------------------------------------------------
 * Hostile text: nothing a stream sends reaches the terminal raw
 * ------------------------------------------------------------------------ */

/* Every string the terminal view shows, each carrying ESC sequences (a
 * clear screen, a window title, a cursor query that makes the terminal
 * answer on stdin), BEL, CR, DEL, a raw C1 byte and C1 as UTF-8. */
#define EVIL_MSG "\x1b[2J\x1b[Hgone\r\x7f\xc2\x9b" "6n"
#define EVIL_MARK "\x1b]2;title\x07 start"
#define EVIL_PROG "\x1b]0;pwned\x07" "evil\x9b" "2J"
#define EVIL_LABEL "\x1b[31mRED"
#define EVIL_CC "\x1b[6n"
#define EVIL_NOTE "eventlog-sink: \x1b[?1049l note"

static struct evgen_buf hostile_run(void)
{
    struct evgen_buf b = header();
    block(&b, 0xffff, 0);
    ev(&b, 30, 0);
    static const char args[] = "/usr/bin/" EVIL_PROG "\0+RTS";
    evgen_u16(&b, (uint16_t)(4 + sizeof args));
    evgen_u32(&b, 1);
    evgen_put(&b, args, sizeof args);
    ev_cc(&b, 1, EVIL_CC, "Main");
    ev_text(&b, 16, 0, EVIL_NOTE);
    block(&b, 0, 0);
    ev_text(&b, 19, 1 * MS, EVIL_MSG);
    ev_text(&b, 58, 2 * MS, EVIL_MARK);
    static const uint32_t ids[] = { 1 };
    ev_sample(&b, 3 * MS, 1, ids);
    ev(&b, 162, 4 * MS);
    evgen_u64(&b, 1);
    ev(&b, 164, 4 * MS);
    evgen_u16(&b, (uint16_t)(1 + 8 + sizeof EVIL_LABEL));
    uint8_t prof = 1;
    evgen_put(&b, &prof, 1);
    evgen_u64(&b, 300);
    evgen_put(&b, EVIL_LABEL, sizeof EVIL_LABEL);
    ev(&b, 165, 4 * MS);
    evgen_u64(&b, 1);
    end_block(&b);
    return b;
}

static void terminal_text_is_safe(void)
{
    struct evgen_buf b = hostile_run();
    struct mon_model *m;
    CHECK_OK(mon_model_new(&m));
    CHECK_OK(mon_model_feed(m, b.p, b.len));
    mon_model_tick(m, 0, true);
    struct strbuf sb = { 0 };
    mon_model_text(m, &sb, 120);
    CHECK(!sb.failed && sb.p != NULL);
    /* Every hostile string is ASCII but for its C1 bytes, so the safe
     * text is all printable ASCII and newlines. */
    for (size_t i = 0; i < sb.len; i++) {
        unsigned char c = (unsigned char)sb.p[i];
        CHECK_MSG(c == '\n' || (c >= 0x20 && c < 0x7f),
                  "byte 0x%02x at %zu of the terminal text:\n%s", c, i, sb.p);
    }
    CHECK_CONTAINS(sb.p, "top: \\u{1B}]0;pwned\\u{07}evil\\x9B2J pid");
    CHECK_CONTAINS(sb.p, "\\u{1B}[2J\\u{1B}[Hgone\\r\\u{7F}\\u{9B}6n");
    CHECK_CONTAINS(sb.p, "\\u{1B}]2;title\\u{07} start");
    CHECK_CONTAINS(sb.p, "\\u{1B}[31mRED");
    CHECK_CONTAINS(sb.p, "\\u{1B}[6n");
    CHECK_CONTAINS(sb.p, "Last note: eventlog-sink: \\u{1B}[?1049l note");

    /* JSON keeps the exact text (escaped as JSON). */
    json_of(m, &sb);
    CHECK_CONTAINS(sb.p, "\"program\":{\"name\":\"\\u001b]0;pwned\\u0007evil\\ufffd2J\"");
    CHECK_CONTAINS(sb.p, "\"text\":\"\\u001b[2J\\u001b[Hgone\\u000d\\u007f\xc2\x9b" "6n\"");
    CHECK_CONTAINS(sb.p, "\"text\":\"\\u001b]2;title\\u0007 start\"");
    CHECK_CONTAINS(sb.p, "{\"label\":\"\\u001b[31mRED\"");
    CHECK_CONTAINS(sb.p, "{\"cc\":\"\\u001b[6n\"");
    CHECK_CONTAINS(sb.p, "\"text\":\"eventlog-sink: \\u001b[?1049l note\"");
    sb_free(&sb);
    mon_model_free(m);
    evgen_free(&b);
}

/* ------------------------------------------------------------------------
 * Chosen keys: Note [Stream-chosen keys] in model_tables.c
 * ------------------------------------------------------------------------ */

#define FLOOD_THREADS 120000

/* Slots looked at to create n threads with the ids ids[0..n). */
static uint64_t probes_for(const uint32_t *ids, size_t n)
{
    struct evgen_buf b = header();
    block(&b, 0, 0);
    for (size_t i = 0; i < n; i++)
        ev_thread(&b, 0, 0, ids[i]);
    end_block(&b);
    struct mon_model *m;
    CHECK_OK(mon_model_new(&m));
    CHECK_OK(mon_model_feed(m, b.p, b.len));
    struct mon_summary s;
    mon_model_summary(m, &s);
    CHECK_U64(s.threads_alive, ==, n);
    CHECK_U64(s.threads_untracked, ==, 0);
    mon_model_free(m);
    evgen_free(&b);
    return s.probes;
}

static void chosen_thread_ids(void)
{
    /* The ids the model's first hash (id * 2654435761 mod 2^32, the
     * table's low bits) sends to slots 0..7 of every table size up to
     * 2^18: one cluster of 120,000, about 7 * 10^9 probes (20 s). */
    const uint32_t k = 2654435761u;
    uint32_t kinv = k;                  /* Newton: k * kinv = 1 mod 2^32 */
    for (int i = 0; i < 5; i++)
        kinv *= 2u - k * kinv;
    CHECK_U64((uint64_t)(uint32_t)(k * kinv), ==, 1);
    uint32_t *chosen = malloc(FLOOD_THREADS * sizeof *chosen);
    uint32_t *seq = malloc(FLOOD_THREADS * sizeof *seq);
    CHECK(chosen != NULL && seq != NULL);
    size_t n = 0;
    for (uint32_t t = 0; t < 16384 && n < FLOOD_THREADS; t++)
        for (uint32_t v = 0; v < 8 && n < FLOOD_THREADS; v++) {
            uint32_t id = (v + (t << 18)) * kinv;
            if (id == 0)
                continue;
            CHECK_U64(((uint32_t)(id * k)) & ((1u << 18) - 1), <, 8);
            chosen[n++] = id;
        }
    CHECK_U64(n, ==, FLOOD_THREADS);
    for (uint32_t i = 0; i < FLOOD_THREADS; i++)
        seq[i] = i + 1;
    uint64_t p_seq = probes_for(seq, FLOOD_THREADS);
    uint64_t p_chosen = probes_for(chosen, FLOOD_THREADS);
    printf("# %d threads: %" PRIu64 " probes with sequential ids, %" PRIu64
           " with chosen ids\n", FLOOD_THREADS, p_seq, p_chosen);
    CHECK_U64(p_chosen, <=, 3 * p_seq);
    free(chosen);
    free(seq);
}

/* Bytes malloc has handed out and not had back (glibc). */
static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

static void cost_centre_flood(void)
{
    /* 70,000 distinct cost centres (ids past the cap too), 500 of them
     * with names of the largest size an event holds, the others of 200
     * bytes: what the model keeps stays within its stated bound, and
     * what it refused or cut is counted. */
    static char big[32000], mid[201];
    memset(big, 'L', sizeof big - 1);
    memset(mid, 'm', sizeof mid - 1);
    struct mon_model *m;
    size_t before = heap_in_use();
    CHECK_OK(mon_model_new(&m));
    struct evgen_buf b = header();
    CHECK_OK(mon_model_feed(m, b.p, b.len));
    uint64_t fed = 0;
    for (uint32_t id = 0; id < 70000; id++) {
        b.len = 0;
        char *name = id < 500 ? big : mid;
        size_t len = id < 500 ? sizeof big - 1 : sizeof mid - 1;
        snprintf(name, 12, "%010" PRIu32, id);
        name[10] = 'x';
        ev_cc(&b, id, name, name);
        CHECK_OK(mon_model_feed(m, b.p, b.len));
        fed += b.len;
        (void)len;
    }
    evgen_free(&b);
    struct mon_summary s;
    mon_model_summary(m, &s);
    /* (Under ASan malloc's figures stay 0: only the model's count is
     * checked there.) */
    size_t after = heap_in_use(), used = after > before ? after - before : 0;
    printf("# %" PRIu64 " bytes of cost-centre definitions: the model holds %zu"
           " bytes by its count, malloc %zu more in use; stated bound %zu;"
           " refused %" PRIu64 ", names cut %" PRIu64 "\n", fed, s.memory, used,
           mon_model_memory_max(), s.ccs_refused, s.strings_cut);
    CHECK_U64(s.memory, <=, mon_model_memory_max());
    CHECK_U64(used, <=, mon_model_memory_max());
    CHECK_U64(s.strings_cut, >=, 2 * 500);
    CHECK_U64(s.ccs_refused, >=, 70000 - 65536);
    struct strbuf sb = { 0 };
    json_of(m, &sb);
    CHECK_CONTAINS(sb.p, "\"cost_centres_refused\":");
    sb_clear(&sb);
    mon_model_text(m, &sb, 100);
    CHECK_CONTAINS(sb.p, "Refused  threads untracked 0  cost centres ");
    sb_free(&sb);
    mon_model_free(m);
}

static void json_strings_escaped(void)
{
    struct strbuf sb = { 0 };
    sb_json_str(&sb, "a\"b\\c\n\x01\xff\xc3\xa9", 10);
    CHECK_STR(sb.p, "\"a\\\"b\\\\c\\u000a\\u0001\\ufffd\xc3\xa9\"");
    /* Numbers beyond int64_t's range (a fuzzed stream's counters). */
    sb_clear(&sb);
    sb_json_num(&sb, 6.40197e+20);
    sb_puts(&sb, " ");
    sb_json_num(&sb, -3.0);
    sb_puts(&sb, " ");
    sb_json_num(&sb, 0.5);
    CHECK_STR(sb.p, "6.40197e+20 -3 0.5");
    sb_free(&sb);
}

/* ------------------------------------------------------------------------
 * The figures the views show, each against what the RTS accounts
 * ------------------------------------------------------------------------ */

/* The model's JSON after a whole-run tick of stream b. */
static struct mon_model *model_of(const struct evgen_buf *b, struct strbuf *sb)
{
    struct mon_model *m;
    CHECK_OK(mon_model_new(&m));
    int rc = mon_model_feed(m, b->p, b->len);
    CHECK_MSG(rc == 0, "feed: %s", mon_model_error(m));
    mon_model_tick(m, 0, true);
    json_of(m, sb);
    return m;
}

/* Capabilities 0 and 1 created, as the RTS's first events say. */
static void two_caps(struct evgen_buf *b)
{
    block(b, 0xffff, 0);
    for (uint16_t c = 0; c < 2; c++) {
        ev(b, 45, 0);
        evgen_u16(b, c);
    }
}

/* Note [Collections]: a parallel collection at -N2 posts two GC_STARTs
 * and is one collection; its pause is its leader's GC_START to GC_END
 * (the capability that posted the request and the stats), not the
 * workers' wider span; blocks of the worker come first. */
static void gc_collections(void)
{
    struct evgen_buf b = header();
    two_caps(&b);
    /* The worker, cap 1: in GC from 0.5 to 6 ms, and again 20-21 ms. */
    block(&b, 1, 0);
    ev(&b, 9, MS / 2);
    ev(&b, 10, 6 * MS);
    ev(&b, 9, 20 * MS);
    ev(&b, 10, 21 * MS);
    /* Cap 0 leads the first (generation 1, 1 to 5 ms) and the second
     * (generation 0, 19.5 to 21.5 ms: 2 ms); cap 1 leads the third
     * alone (sequential, generation 0, 30 to 33 ms). */
    block(&b, 0, 0);
    ev(&b, 12, MS);
    ev(&b, 9, MS);
    ev_gc_stats(&b, 4 * MS, 1);
    ev(&b, 10, 5 * MS);
    ev(&b, 12, 19 * MS);
    ev(&b, 9, 19 * MS + MS / 2);
    ev_gc_stats(&b, 21 * MS, 0);
    ev(&b, 10, 21 * MS + MS / 2);
    block(&b, 1, 30 * MS);
    ev(&b, 11, 30 * MS);
    ev(&b, 9, 30 * MS);
    ev_gc_stats(&b, 32 * MS, 0);
    ev(&b, 10, 33 * MS);
    end_block(&b);
    evgen_put(&b, evgen_data_end, 2);

    struct strbuf sb = { 0 };
    struct mon_model *m = model_of(&b, &sb);
    CHECK_CONTAINS(sb.p, "\"gc\":{\"collections\":3,\"requests\":3,\"stats\":3,");
    CHECK_CONTAINS(sb.p, "\"by_gen\":[{\"gen\":0,\"collections\":2,\"pauses\":2,"
                         "\"pause_max_ns\":3000000,\"pause_total_ns\":5000000,"
                         "\"pause_max_ms\":3,\"pause_total_s\":0.005},"
                         "{\"gen\":1,\"collections\":1,\"pauses\":1,"
                         "\"pause_max_ns\":4000000,\"pause_total_ns\":4000000,"
                         "\"pause_max_ms\":4,\"pause_total_s\":0.004}]");
    CHECK_CONTAINS(sb.p, "\"pauses\":3,\"pause_p50_ns\":3000000,\"pause_max_ns\":4000000,"
                         "\"pause_total_ns\":9000000,\"pause_p50_ms\":3,\"pause_max_ms\":4,");
    /* Every capability's GC time: 5.5 + 1 + 4 + 2 + 3 ms. */
    CHECK_CONTAINS(sb.p, "\"starts\":5,\"time_s\":0.0155,");
    CHECK_CONTAINS(sb.p, "{\"cap\":0,\"state\":\"idle\",\"util\":0,\"gc\":");
    CHECK_CONTAINS(sb.p, "\"gc_starts\":2,");
    sb_clear(&sb);
    mon_model_text(m, &sb, 120);
    CHECK_CONTAINS(sb.p, "GC       3 collections (gen 0: 2, gen 1: 1)");
    CHECK_CONTAINS(sb.p, "max pause gen 0 3.00 ms, gen 1 4.00 ms");
    CHECK_CONTAINS(sb.p, "GC starts 5 (every capability's)");
    sb_clear(&sb);
    mon_model_prometheus(m, &sb);
    CHECK_CONTAINS(sb.p, "ghc_gc_collections_total{program=\"\",pid=\"0\",gen=\"0\"} 2\n"
                         "ghc_gc_collections_total{program=\"\",pid=\"0\",gen=\"1\"} 1\n");
    CHECK_CONTAINS(sb.p, "ghc_gc_pause_max_seconds{program=\"\",pid=\"0\",gen=\"1\"} 0.004\n");
    CHECK_CONTAINS(sb.p, "ghc_gc_pause_seconds_count{program=\"\",pid=\"0\"} 3\n");
    CHECK_CONTAINS(sb.p, "ghc_gc_capability_starts_total{program=\"\",pid=\"0\",cap=\"1\"} 3\n");
    struct mon_health h;
    mon_model_health(m, &h);
    CHECK_U64(h.collections, ==, 3);
    mon_model_free(m);

    /* Without the GC class (-l-g): the requests count the collections,
     * of no known generation, and there is no pause. */
    b.len = 0;
    struct evgen_buf h2 = header();
    evgen_put(&b, h2.p, h2.len);
    evgen_free(&h2);
    block(&b, 0, 0);
    ev(&b, 11, MS);
    ev(&b, 12, 2 * MS);
    end_block(&b);
    m = model_of(&b, &sb);
    CHECK_CONTAINS(sb.p, "\"gc\":{\"collections\":2,\"requests\":2,\"stats\":0,");
    CHECK_CONTAINS(sb.p, "\"pauses\":0,");
    sb_clear(&sb);
    mon_model_prometheus(m, &sb);
    CHECK_CONTAINS(sb.p, "ghc_gc_collections_total{program=\"\",pid=\"0\",gen=\"unknown\"} 2\n");
    mon_model_free(m);
    sb_free(&sb);
    evgen_free(&b);
}

/* Note [Allocation]: each capability posts its own running total; the
 * program's allocation is the sum of their last values. */
static void allocation_summed(void)
{
    struct evgen_buf b = header();
    two_caps(&b);
    block(&b, 1, 0);
    ev_heap(&b, 49, 5 * MS, 500);
    ev_heap(&b, 49, 15 * MS, 2500);
    block(&b, 0, 0);
    ev_heap(&b, 49, 5 * MS, 1000);
    ev_heap(&b, 49, 15 * MS, 3000);
    end_block(&b);
    struct strbuf sb = { 0 };
    struct mon_model *m = model_of(&b, &sb);
    CHECK_CONTAINS(sb.p, "\"heap\":{\"size\":0,\"live\":0,\"allocated\":5500,");
    CHECK_CONTAINS(sb.p, "\"gc_starts\":0,\"allocated\":3000,");
    CHECK_CONTAINS(sb.p, "\"gc_starts\":0,\"allocated\":2500,");
    struct mon_summary s;
    mon_model_summary(m, &s);
    CHECK_U64(s.heap_allocated, ==, 5500);
    sb_clear(&sb);
    mon_model_prometheus(m, &sb);
    CHECK_CONTAINS(sb.p, "ghc_heap_allocated_bytes_total{program=\"\",pid=\"0\"} 5500\n");
    sb_clear(&sb);
    mon_model_text(m, &sb, 100);
    CHECK_CONTAINS(sb.p, "(total 5.5 kB)");
    sb_free(&sb);
    mon_model_free(m);
    evgen_free(&b);
}

/* A heap census's bands ranked by size, not listed as they came (the
 * RTS's order), none cut at 8; the census's time and breakdown; a
 * census of more bands than the model keeps says how many it had. */
static void census_ranked(void)
{
    struct evgen_buf b = header();
    block(&b, 0xffff, 0);
    ev_heap_prof_begin(&b, 7);
    ev_census(&b, 162, 100 * MS, 1);
    for (unsigned i = 1; i <= 12; i++) {
        char l[16];
        snprintf(l, sizeof l, "BAND%02u", i);
        ev_band(&b, 100 * MS, 100 * i, l);
    }
    ev_census(&b, 165, 100 * MS, 1);
    /* The second census: 70 bands, the largest last. */
    ev_census(&b, 162, 250 * MS, 2);
    for (unsigned i = 1; i <= 70; i++) {
        char l[16];
        snprintf(l, sizeof l, "B%02u", i);
        ev_band(&b, 250 * MS, i, l);
    }
    end_block(&b);
    struct strbuf sb = { 0 };
    struct mon_model *m = model_of(&b, &sb);
    /* The second has not ended: the first is the last complete one. */
    CHECK_CONTAINS(sb.p, "\"samples\":1,\"census\":{\"time_ns\":100000000,"
                         "\"breakdown\":\"closure type (-hT)\",\"bands\":12,\"bytes\":7800},"
                         "\"by_label\":[{\"label\":\"BAND12\",\"bytes\":1200},"
                         "{\"label\":\"BAND11\",\"bytes\":1100},");
    CHECK_CONTAINS(sb.p, "{\"label\":\"BAND02\",\"bytes\":200},"
                         "{\"label\":\"BAND01\",\"bytes\":100}]");
    sb_clear(&sb);
    mon_model_text(m, &sb, 100);
    CHECK_CONTAINS(sb.p, "Heap census 1 at 0.100 s by closure type (-hT): 12 bands, 7.8 kB\n"
                         "      1.2 kB  BAND12\n      1.1 kB  BAND11\n");
    CHECK_CONTAINS(sb.p, "       800 B  BAND08\n      2.8 kB  (7 more bands)\n");
    sb_clear(&sb);
    mon_model_prometheus(m, &sb);
    CHECK_CONTAINS(sb.p, "ghc_heap_census_bytes{program=\"\",pid=\"0\",band=\"BAND12\"} 1200\n"
                         "ghc_heap_census_bytes{program=\"\",pid=\"0\",band=\"BAND11\"} 1100\n");
    CHECK_CONTAINS(sb.p, "ghc_heap_census_time_seconds{program=\"\",pid=\"0\"} 0.1\n");
    mon_model_free(m);

    b.len = 0;
    struct evgen_buf h = header();
    evgen_put(&b, h.p, h.len);
    evgen_free(&h);
    block(&b, 0xffff, 0);
    ev_census(&b, 162, 250 * MS, 2);
    for (unsigned i = 1; i <= 70; i++) {
        char l[16];
        snprintf(l, sizeof l, "B%02u", i);
        ev_band(&b, 250 * MS, i, l);
    }
    ev_census(&b, 165, 250 * MS, 2);
    end_block(&b);
    m = model_of(&b, &sb);
    CHECK_CONTAINS(sb.p, "\"census\":{\"time_ns\":250000000,\"breakdown\":\"?\","
                         "\"bands\":70,\"bytes\":2485},\"by_label\":[{\"label\":\"B70\",\"bytes\":70},");
    /* The 64 largest are kept: B07 is the last. */
    CHECK_CONTAINS(sb.p, "{\"label\":\"B07\",\"bytes\":7}]");
    sb_clear(&sb);
    mon_model_text(m, &sb, 100);
    CHECK_CONTAINS(sb.p, "(65 more bands)");
    sb_free(&sb);
    mon_model_free(m);
    evgen_free(&b);
}

/* One cost centre's name, the lambda GHC names "producer.go.\", in a
 * -hc census (stacks named as the RTS's .hp file does: innermost first,
 * a CAF as MODULE.CAF) and in time samples: one spelling, escaped only
 * for the medium. */
static void cost_centre_spelling(void)
{
    struct evgen_buf b = header();
    block(&b, 0xffff, 0);
    ev_cc(&b, 1, "main", "Main");
    ev_cc(&b, 2, "producer", "Main");
    ev_cc(&b, 3, "producer.go.\\", "Main");
    ev_cc(&b, 4, "CAF", "Main");
    ev_heap_prof_begin(&b, 1);
    ev_census(&b, 162, 10 * MS, 1);
    static const uint32_t lam[] = { 3, 2, 1 }, caf[] = { 4 };
    ev_cc_band(&b, 10 * MS, 400, 1, caf);
    ev_cc_band(&b, 10 * MS, 900, 3, lam);
    ev_cc_band(&b, 10 * MS, 50, 0, NULL);     /* CCS_MAIN: "MAIN" */
    ev_census(&b, 165, 10 * MS, 1);
    block(&b, 0, 0);
    ev_sample(&b, 11 * MS, 3, lam);
    end_block(&b);
    struct strbuf sb = { 0 };
    struct mon_model *m = model_of(&b, &sb);
    CHECK_CONTAINS(sb.p, "\"breakdown\":\"cost-centre stack (-hc)\",\"bands\":3,\"bytes\":1350},"
                         "\"by_label\":[{\"label\":\"producer.go.\\\\/producer/main\",\"bytes\":900},"
                         "{\"label\":\"Main.CAF\",\"bytes\":400},{\"label\":\"MAIN\",\"bytes\":50}]");
    CHECK_CONTAINS(sb.p, "\"top\":[{\"cc\":\"producer.go.\\\\\",\"module\":\"Main\",\"samples\":1}]");
    sb_clear(&sb);
    mon_model_text(m, &sb, 100);
    /* safetext's form: a backslash doubled. */
    CHECK_CONTAINS(sb.p, "  producer.go.\\\\/producer/main\n");
    CHECK_CONTAINS(sb.p, "         1  producer.go.\\\\\n");
    sb_clear(&sb);
    mon_model_prometheus(m, &sb);
    CHECK_CONTAINS(sb.p, "ghc_heap_census_bytes{program=\"\",pid=\"0\","
                         "band=\"producer.go.\\\\/producer/main\"} 900\n");
    sb_clear(&sb);
    mon_model_speedscope(m, 0, 0, &sb);
    CHECK_CONTAINS(sb.p, "{\"name\":\"producer.go.\\\\\",\"file\":\"Main\"}");
    sb_free(&sb);
    mon_model_free(m);
    evgen_free(&b);
}

/* The RTS's own cost centres (GC, IDLE, SYSTEM, ...) are counted apart
 * from the program's, as GHC's report leaves them out. */
static void rts_cost_centres_apart(void)
{
    struct evgen_buf b = header();
    block(&b, 0xffff, 0);
    ev_cc(&b, 1, "GC", "GC");
    ev_cc(&b, 2, "IDLE", "IDLE");
    ev_cc(&b, 3, "SYSTEM", "SYSTEM");
    ev_cc(&b, 4, "work", "Main");
    ev_cc(&b, 5, "GC", "Main");        /* the program's own "GC" */
    block(&b, 0, 0);
    static const uint32_t gc[] = { 1 }, idle[] = { 2 }, sys[] = { 3 },
                          work[] = { 4 }, mine[] = { 5 };
    for (int i = 0; i < 5; i++)
        ev_sample(&b, (uint64_t)(i + 1) * MS, 1, idle);
    for (int i = 0; i < 3; i++)
        ev_sample(&b, (uint64_t)(i + 10) * MS, 1, gc);
    ev_sample(&b, 20 * MS, 1, sys);
    ev_sample(&b, 21 * MS, 1, work);
    ev_sample(&b, 22 * MS, 1, work);
    ev_sample(&b, 23 * MS, 1, mine);
    end_block(&b);
    struct strbuf sb = { 0 };
    struct mon_model *m = model_of(&b, &sb);
    CHECK_CONTAINS(sb.p, "\"by_kind\":{\"program\":{\"samples\":3,\"interval\":3},"
                         "\"GC\":{\"samples\":3,\"interval\":3},"
                         "\"IDLE\":{\"samples\":5,\"interval\":5},"
                         "\"SYSTEM\":{\"samples\":1,\"interval\":1},");
    CHECK_CONTAINS(sb.p, "\"top\":[{\"cc\":\"work\",\"module\":\"Main\",\"samples\":2},"
                         "{\"cc\":\"GC\",\"module\":\"Main\",\"samples\":1}]}");
    sb_clear(&sb);
    mon_model_text(m, &sb, 100);
    /* A whole-run tick: the tables say so. */
    CHECK_CONTAINS(sb.p, "Top cost centres (samples over the whole run):\n"
                         "         2  work\n         1  GC\n"
                         "RTS cost centres (samples over the whole run): GC 3 IDLE 5 SYSTEM 1");
    sb_clear(&sb);
    mon_model_tick(m, 1000 * MS, false);
    mon_model_text(m, &sb, 100);
    CHECK_CONTAINS(sb.p, "RTS cost centres (samples in the last interval): GC 0 IDLE 0 SYSTEM 0");
    sb_free(&sb);
    mon_model_free(m);
    evgen_free(&b);
}

/* Events and bytes by type, the stream's own names, most first. */
static void event_types(void)
{
    struct evgen_buf b = header();
    block(&b, 0, 0);
    for (uint32_t t = 1; t <= 3; t++) {
        ev_thread(&b, 0, t * MS, t);
        ev_thread(&b, 1, t * MS, t);
        ev_stop(&b, t * MS + 1, t, 3);
    }
    ev_thread(&b, 1, 9 * MS, 1);
    ev_text(&b, 19, 10 * MS, "a message of 26 characters");
    end_block(&b);
    struct strbuf sb = { 0 };
    struct mon_model *m = model_of(&b, &sb);
    /* Run 4 x (2 + 8 + 4), stop 3 x (2 + 8 + 10), create 3 x 14, the
     * message 2 + 8 + 2 + 26. */
    CHECK_CONTAINS(sb.p, "\"by_type\":[{\"tag\":1,\"name\":\"Run thread\",\"count\":4,\"bytes\":56},"
                         "{\"tag\":0,\"name\":\"Create thread\",\"count\":3,\"bytes\":42},"
                         "{\"tag\":2,\"name\":\"Stop thread\",\"count\":3,\"bytes\":60},"
                         "{\"tag\":19,\"name\":\"User message\",\"count\":1,\"bytes\":38}]");
    sb_clear(&sb);
    mon_model_text(m, &sb, 100);
    CHECK_CONTAINS(sb.p, "  count  Run thread 4  Create thread 3  Stop thread 3  User message 1\n");
    CHECK_CONTAINS(sb.p, "  bytes  Stop thread 60 B  Run thread 56 B  Create thread 42 B  User message 38 B\n");
    sb_clear(&sb);
    mon_model_prometheus(m, &sb);
    CHECK_CONTAINS(sb.p, "eventlog_events_by_type_total{program=\"\",pid=\"0\",type=\"Run thread\",tag=\"1\"} 4\n");
    CHECK_CONTAINS(sb.p, "eventlog_event_bytes_by_type_total{program=\"\",pid=\"0\",type=\"Stop thread\",tag=\"2\"} 60\n");
    sb_free(&sb);
    mon_model_free(m);
    evgen_free(&b);
}

/* Note [Stopped time]: stops by reason, and the time from each stop to
 * the thread's next run in time, whatever order the capabilities'
 * blocks come in. */
static void thread_stops(void)
{
    struct evgen_buf b = header();
    two_caps(&b);
    /* Thread 5 runs on cap 0, blocks on an MVar at 10 ms, runs on cap 1
     * at 30 ms, overflows its heap at 40 ms, runs on cap 0 at 50 ms and
     * finishes at 60 ms.  Cap 1's block comes first. */
    block(&b, 1, 30 * MS);
    ev_thread(&b, 1, 30 * MS, 5);
    ev_stop(&b, 40 * MS, 5, 1);
    /* Thread 6, on cap 1 only: a black hole, 41 to 44 ms, and throwTo
     * (18), 45 ms to its next run at 47 ms. */
    ev_thread(&b, 1, 40 * MS + 1, 6);
    ev_stop(&b, 41 * MS, 6, 8);
    ev_thread(&b, 1, 44 * MS, 6);
    ev_stop(&b, 45 * MS, 6, 18);
    ev_thread(&b, 1, 47 * MS, 6);
    ev_stop(&b, 70 * MS, 6, 20);       /* an MVar read, never run again */
    block(&b, 0, 0);
    ev_thread(&b, 1, 0, 5);
    ev_stop(&b, 10 * MS, 5, 7);
    ev_thread(&b, 1, 50 * MS, 5);
    ev_stop(&b, 60 * MS, 5, 5);
    end_block(&b);

    struct strbuf sb = { 0 };
    struct mon_model *m = model_of(&b, &sb);
    /* Not ended: thread 6's last stop may still see a run. */
    CHECK_CONTAINS(sb.p, "\"stops\":[{\"status\":1,\"reason\":\"heap overflow\",\"count\":1,"
                         "\"paired\":1,\"stopped_ns\":10000000,\"stopped_s\":0.01},"
                         "{\"status\":5,\"reason\":\"finished\",\"count\":1,\"paired\":0,\"stopped_ns\":0,\"stopped_s\":0},"
                         "{\"status\":7,\"reason\":\"blocked on MVar\",\"count\":1,\"paired\":1,\"stopped_ns\":20000000,\"stopped_s\":0.02},"
                         "{\"status\":8,\"reason\":\"blocked on black hole\",\"count\":1,\"paired\":1,\"stopped_ns\":3000000,\"stopped_s\":0.003},"
                         "{\"status\":18,\"reason\":\"blocked in throwTo\",\"count\":1,\"paired\":1,\"stopped_ns\":2000000,\"stopped_s\":0.002},"
                         "{\"status\":20,\"reason\":\"blocked reading MVar\",\"count\":1,\"paired\":0,\"stopped_ns\":0,\"stopped_s\":0}]");
    sb_clear(&sb);
    mon_model_text(m, &sb, 70);
    CHECK_CONTAINS(sb.p, "Stops    heap overflow 1 (0.010 s)  finished 1 (0.000 s)\n"
                         "         blocked on MVar 1 (0.020 s)\n");
    sb_clear(&sb);
    mon_model_prometheus(m, &sb);
    CHECK_CONTAINS(sb.p, "ghc_thread_stops_total{program=\"\",pid=\"0\",reason=\"blocked in throwTo\"} 1\n");
    CHECK_CONTAINS(sb.p, "ghc_thread_stopped_seconds_total{program=\"\",pid=\"0\",reason=\"blocked on MVar\"} 0.02\n");
    sb_free(&sb);
    mon_model_free(m);
    evgen_free(&b);
}

/* Note [Waiting queues]: runs and stops of 4 capabilities, in blocks
 * cut at random and sent in a random order of capabilities (each one's
 * in order), pair as they would in time order: the paired counts and
 * stopped times equal those of a pass over all of them sorted by time. */
static void stops_queues_order(void)
{
    enum { CAPS = 4, THREADS = 40, PAIRS = 20000 };
    static const uint16_t why[] = { 1, 2, 3, 7, 8, 11, 14, 20 };
    struct tev { uint64_t t; uint32_t th; uint16_t status; uint8_t cap; };
    struct tev *all = calloc(2 * PAIRS, sizeof *all);
    uint64_t x = 0x9e3779b97f4a7c15ull, clock[CAPS] = { 0 };
    size_t n = 0;
    for (unsigned i = 0; i < PAIRS; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        uint8_t c = (uint8_t)(x % CAPS);
        uint32_t th = 1 + (uint32_t)((x >> 8) % THREADS);
        /* times are distinct: cap c's are c modulo CAPS */
        uint64_t t = clock[c] + CAPS * (1 + (x >> 16) % 5000);
        t += (c + CAPS - t % CAPS) % CAPS;
        clock[c] = t + CAPS * (1 + (x >> 32) % 3000);
        all[n++] = (struct tev){ t, th, 0, c };
        all[n++] = (struct tev){ clock[c], th, why[(x >> 40) % 8], c };
    }
    /* The reference: every event in time order. */
    struct tev *sorted = malloc(n * sizeof *sorted);
    memcpy(sorted, all, n * sizeof *sorted);
    for (size_t i = 1; i < n; i++)      /* insertion: nearly sorted by cap */
        for (size_t j = i; j > 0 && sorted[j].t < sorted[j - 1].t; j--) {
            struct tev tmp = sorted[j]; sorted[j] = sorted[j - 1]; sorted[j - 1] = tmp;
        }
    uint64_t stop_t[THREADS + 1] = { 0 }, ns[32] = { 0 }, paired[32] = { 0 }, count[32] = { 0 };
    uint16_t stop_s[THREADS + 1] = { 0 };
    for (size_t i = 0; i < n; i++) {
        const struct tev *e = &sorted[i];
        if (e->status != 0) {
            count[e->status]++;
            stop_t[e->th] = e->t;
            stop_s[e->th] = e->status;
        } else if (stop_s[e->th] != 0) {
            ns[stop_s[e->th]] += e->t - stop_t[e->th];
            paired[stop_s[e->th]]++;
            stop_s[e->th] = 0;
        }
    }
    /* The stream: each capability's events in order, cut into blocks of
     * 1 to 600 events, the blocks of the capabilities shuffled. */
    struct evgen_buf b = header();
    block(&b, 0xffff, 0);
    for (uint16_t c = 0; c < CAPS; c++) {
        ev(&b, 45, 0);
        evgen_u16(&b, c);
    }
    size_t next[CAPS] = { 0 }, left = n;
    while (left > 0) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        uint8_t c = (uint8_t)(x % CAPS);
        unsigned len = 1 + (unsigned)((x >> 8) % 600), put = 0;
        while (put < len && next[c] < n) {
            const struct tev *e = &all[next[c]++];
            if (e->cap != c)
                continue;
            if (put++ == 0)
                block(&b, c, e->t);
            if (e->status == 0)
                ev_thread(&b, 1, e->t, e->th);
            else
                ev_stop(&b, e->t, e->th, e->status);
            left--;
        }
    }
    end_block(&b);
    evgen_put(&b, evgen_data_end, 2);
    struct strbuf sb = { 0 };
    struct mon_model *m = model_of(&b, &sb);
    CHECK_CONTAINS(sb.p, "\"stops_waiting\":0,\"stops_out_of_order\":0,");
    for (unsigned k = 0; k < 8; k++) {
        char want[200];
        snprintf(want, sizeof want, "{\"status\":%u,\"reason\":", why[k]);
        const char *at = strstr(sb.p, want);
        CHECK_MSG(at != NULL, "no status %u", why[k]);
        if (at == NULL)
            continue;
        snprintf(want, sizeof want, "\"count\":%" PRIu64 ",\"paired\":%" PRIu64
                 ",\"stopped_ns\":%" PRIu64 ",", count[why[k]], paired[why[k]], ns[why[k]]);
        const char *end = strchr(at, '}');
        CHECK_MSG(end != NULL && strstr(at, want) != NULL && strstr(at, want) < end,
                  "status %u: want %s in %.200s", why[k], want, at);
    }
    sb_free(&sb);
    mon_model_free(m);
    evgen_free(&b);
    free(all);
    free(sorted);
}

/* Note [Waiting queues]'s bounds: 100 capabilities' runs and stops
 * wait for one that never posts, 2,500 each (no entry goes early for
 * want of a chunk), then one capability's times run back by more than
 * MON_TEV_BACK places (counted out of order, no more); the memory stays
 * within the stated bound, and at the end nothing waits. */
static void stops_queues_bounds(void)
{
    enum { CAPS = 101, EACH = 2500 };
    struct evgen_buf b = header();
    block(&b, 0xffff, 0);
    for (uint16_t c = 0; c < CAPS; c++) {
        ev(&b, 45, 0);
        evgen_u16(&b, c);
    }
    for (uint16_t c = 0; c < CAPS - 1; c++) {
        block(&b, c, MS);
        for (uint32_t i = 0; i < EACH / 2; i++) {
            uint32_t th = 1 + c * 10 + i % 10;
            ev_thread(&b, 1, MS + 2 * i * 1000 + c, th);
            ev_stop(&b, MS + (2 * i + 1) * 1000 + c, th, 7);
        }
    }
    block(&b, 0, 10000 * MS);           /* cap 0's times run back */
    for (uint32_t i = 0; i < 200; i++)
        ev_thread(&b, 1, 10000 * MS - i * 1000, 1);
    end_block(&b);
    evgen_put(&b, evgen_data_end, 2);
    struct strbuf sb = { 0 };
    struct mon_model *m = model_of(&b, &sb);
    struct mon_summary s;
    mon_model_summary(m, &s);
    CHECK_U64(s.memory, <=, mon_model_memory_max());
    CHECK_CONTAINS(sb.p, "\"stops_waiting\":0,");
    const char *o = strstr(sb.p, "\"stops_out_of_order\":");
    CHECK(o != NULL);
    uint64_t early = o != NULL ? strtoull(o + 21, NULL, 10) : 0;
    /* the i-th of the 200 going back belongs i places back: those from
     * i = MON_TEV_BACK + 1 on stop short */
    CHECK_U64(early, ==, 200 - 33);
    CHECK_CONTAINS(sb.p, "{\"status\":7,\"reason\":\"blocked on MVar\",\"count\":125000,");
    sb_free(&sb);
    mon_model_free(m);
    evgen_free(&b);
}

/* Note [Mid-run streams]: a flight recorder's dump that starts 22 s into
 * the run.  Its own note is no loss; its rates are over its span (22 to
 * 25 s), its time starts at its first event, and its cumulative counters
 * count the change within it, per capability. */
static void dump_starts_mid_run(void)
{
    const uint64_t T0 = 22000 * MS;
    struct evgen_buf b = header();
    block(&b, 0xffff, T0);
    for (uint16_t c = 0; c < 2; c++) {
        ev(&b, 45, T0);
        evgen_u16(&b, c);
    }
    block(&b, 0, T0);
    ev_heap(&b, 49, T0, 1000);
    ev_sparks(&b, T0 + 100 * MS, (const uint64_t[7]){ 100, 1, 2, 50, 3, 4, 7 });
    ev_thread(&b, 0, T0 + 200 * MS, 9);
    ev_thread(&b, 1, T0 + 500 * MS, 9);
    ev_stop(&b, T0 + 2500 * MS, 9, 3);
    ev_heap(&b, 49, T0 + 3000 * MS, 4000);
    ev_sparks(&b, T0 + 3000 * MS, (const uint64_t[7]){ 160, 1, 2, 80, 3, 4, 5 });
    block(&b, 1, T0 + 200 * MS);
    ev_sparks(&b, T0 + 200 * MS, (const uint64_t[7]){ 10, 0, 0, 5, 0, 0, 0 });
    ev_heap(&b, 49, T0 + 200 * MS, 500);
    ev_sparks(&b, T0 + 2000 * MS, (const uint64_t[7]){ 30, 0, 0, 9, 0, 0, 1 });
    ev_heap(&b, 49, T0 + 2000 * MS, 1500);
    end_block(&b);
    char note[] = "eventlog-sink: dump 1: marker boom";
    uint8_t nb[512];
    size_t n = elsi_note_encode(nb, sizeof nb, T0 + 3000 * MS, note);
    CHECK(n > 0);
    evgen_put(&b, nb, n);
    evgen_put(&b, evgen_data_end, 2);

    struct strbuf sb = { 0 };
    struct mon_model *m = model_of(&b, &sb);
    /* A note, not a loss. */
    CHECK_CONTAINS(sb.p, "\"loss\":{\"notes\":1,\"loss_notes\":0,\"dropped_units\":0,");
    CHECK_CONTAINS(sb.p, "\"time_ns\":25000000000,\"first_ns\":22000000000,\"midrun\":true,"
                         "\"whole_run\":true,\"interval_s\":3,");
    /* The change within the dump: cap 0 3000 and cap 1 1000 bytes; 60 +
     * 20 sparks created, 30 + 4 converted, over 3 s. */
    CHECK_CONTAINS(sb.p, "\"allocated\":4000,");
    CHECK_CONTAINS(sb.p, "\"gc_starts\":0,\"allocated\":3000,");
    CHECK_CONTAINS(sb.p, "\"gc_starts\":0,\"allocated\":1000,");
    CHECK_CONTAINS(sb.p, "\"alloc_per_s\":1333.33,");
    CHECK_CONTAINS(sb.p, "\"total\":{\"created\":80,\"dud\":0,\"overflowed\":0,"
                         "\"converted\":34,\"gcd\":0,\"fizzled\":0,\"pool\":6}");
    CHECK_CONTAINS(sb.p, "\"per_s\":{\"created\":26.6667,");
    /* Thread 9 ran 2 s of cap 0's 3 s. */
    CHECK_CONTAINS(sb.p, "{\"cap\":0,\"state\":\"idle\",\"util\":0.666667,");
    sb_clear(&sb);
    mon_model_text(m, &sb, 100);
    CHECK_CONTAINS(sb.p, "Loss: none reported\n");
    CHECK(strstr(sb.p, "LOSS") == NULL);
    sb_clear(&sb);
    mon_model_prometheus(m, &sb);
    CHECK_CONTAINS(sb.p, "ghc_sparks_total{program=\"\",pid=\"0\",outcome=\"created\"} 80\n");
    CHECK_CONTAINS(sb.p, "ghc_heap_allocated_bytes_total{program=\"\",pid=\"0\"} 4000\n");
    sb_free(&sb);
    mon_model_free(m);
    evgen_free(&b);
}

/* Note [After the end]: once the stream has ended, a view's next ticks
 * (wall-clock intervals with no events) show the run's totals and its
 * rates over its span, labelled so, not zeros; threads left in the table
 * are counted by their last state at the end, none running. */
static void after_the_end(void)
{
    struct evgen_buf b = header();
    two_caps(&b);
    ev_cc(&b, 1, "main", "Main");
    block(&b, 0, 0);
    ev_thread(&b, 0, 0, 5);
    ev_thread(&b, 1, 0, 5);
    static const uint32_t outer[] = { 1 };
    ev_sample(&b, 10 * MS, 1, outer);
    ev_sample(&b, 20 * MS, 1, outer);
    ev_stop(&b, 50 * MS, 5, 3);         /* yields: runnable, never run again */
    ev_sparks(&b, 60 * MS, (const uint64_t[7]){ 40, 0, 0, 30, 0, 2, 0 });
    ev_thread(&b, 0, 60 * MS, 6);
    ev_thread(&b, 1, 60 * MS, 6);
    ev_stop(&b, 80 * MS, 6, 7);         /* blocked on an MVar */
    ev(&b, 11, 80 * MS);
    ev(&b, 9, 80 * MS);
    ev_gc_stats(&b, 85 * MS, 0);
    ev(&b, 10, 100 * MS);
    end_block(&b);
    evgen_put(&b, evgen_data_end, 2);

    struct mon_model *m;
    CHECK_OK(mon_model_new(&m));
    CHECK_OK(mon_model_feed(m, b.p, b.len));
    struct mon_summary su;
    mon_model_summary(m, &su);
    CHECK(su.ended);
    /* Two seconds of wall time after the end, as top and serve tick. */
    mon_model_tick(m, 1000 * MS, false);
    mon_model_tick(m, 1000 * MS, false);
    struct strbuf sb = { 0 };
    json_of(m, &sb);
    CHECK_CONTAINS(sb.p, "\"whole_run\":true,\"interval_s\":0.1,");
    /* 40 sparks, 1 collection, 20 ms of 100 in GC on cap 0 of two. */
    CHECK_CONTAINS(sb.p, "\"per_s\":{\"created\":400,\"dud\":0,\"overflowed\":0,\"converted\":300,");
    CHECK_CONTAINS(sb.p, "\"total\":{\"created\":40,");
    CHECK_CONTAINS(sb.p, "\"gc\":{\"collections\":1,\"requests\":1,\"stats\":1,\"per_s\":10,");
    CHECK_CONTAINS(sb.p, "\"time_frac\":0.1,");
    CHECK_CONTAINS(sb.p, "\"running\":0,\"runnable\":0,\"blocked\":0,");
    CHECK_CONTAINS(sb.p, "\"at_end\":{\"left\":2,\"running\":0,\"runnable\":1,\"blocked\":1}");
    CHECK_CONTAINS(sb.p, "\"top\":[{\"cc\":\"main\",\"module\":\"Main\",\"samples\":2}]");
    sb_clear(&sb);
    mon_model_text(m, &sb, 100);
    CHECK_CONTAINS(sb.p, "Threads  at the end: 2 not finished  (created 2)\n"
                         "         last seen running 0, runnable 1, blocked 1\n");
    CHECK_CONTAINS(sb.p, "Sparks   in all created 40  converted 30  fizzled 2");
    CHECK_CONTAINS(sb.p, "Top cost centres (samples over the whole run):\n");
    sb_clear(&sb);
    mon_model_prometheus(m, &sb);
    CHECK_CONTAINS(sb.p, "ghc_threads{program=\"\",pid=\"0\",state=\"runnable\"} 0\n");
    sb_free(&sb);
    mon_model_free(m);
    evgen_free(&b);
}

/* A band's name too long for the terminal loses its start, not its end:
 * the last part tells closures apart ("...Data.Map.Internal.Bin"). */
static void band_name_cut_from_left(void)
{
    static const char name[] = "containers-0.6.5.1-4b2f9c0e7d31a8f5:Data.Map.Internal.Bin";
    struct evgen_buf b = header();
    block(&b, 0xffff, 0);
    ev_heap_prof_begin(&b, 7);
    ev_census(&b, 162, 100 * MS, 1);
    ev_band(&b, 100 * MS, 4000, name);
    ev_census(&b, 165, 100 * MS, 1);
    end_block(&b);
    struct strbuf sb = { 0 };
    struct mon_model *m = model_of(&b, &sb);
    sb_clear(&sb);
    /* 60 columns: 46 for the name, 3 of them the ellipsis. */
    mon_model_text(m, &sb, 60);
    CHECK_CONTAINS(sb.p, "      4.0 kB  ....5.1-4b2f9c0e7d31a8f5:Data.Map.Internal.Bin\n");
    sb_clear(&sb);
    mon_model_text(m, &sb, 100);
    CHECK_CONTAINS(sb.p, "      4.0 kB  containers-0.6.5.1-4b2f9c0e7d31a8f5:Data.Map.Internal.Bin\n");
    sb_free(&sb);
    mon_model_free(m);
    evgen_free(&b);
}

static const struct check_case cases[] = {
    CHECK_CASE(real_ghc_sample),
    CHECK_CASE(synthetic_figures),
    CHECK_CASE(restart_and_reset),
    CHECK_CASE(malformed),
    CHECK_CASE(many_threads_long_run),
    CHECK_CASE(timeline_out_of_order),
    CHECK_CASE(recent_messages),
    CHECK_CASE(json_strings_escaped),
    CHECK_CASE(terminal_text_is_safe),
    CHECK_CASE(chosen_thread_ids),
    CHECK_CASE(gc_time_share),
    CHECK_CASE(cost_centre_flood),
    CHECK_CASE(gc_collections),
    CHECK_CASE(allocation_summed),
    CHECK_CASE(census_ranked),
    CHECK_CASE(cost_centre_spelling),
    CHECK_CASE(rts_cost_centres_apart),
    CHECK_CASE(event_types),
    CHECK_CASE(thread_stops),
    CHECK_CASE(stops_queues_order),
    CHECK_CASE(stops_queues_bounds),
    CHECK_CASE(dump_starts_mid_run),
    CHECK_CASE(after_the_end),
    CHECK_CASE(band_name_cut_from_left),
};

CHECK_MAIN(cases)
