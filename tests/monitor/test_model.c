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

/* Counting by tag with the public parser alone: the reference. */
struct raw_counts {
    uint64_t events, by_tag[65536];
};

static int raw_on_event(void *user, const struct els_event *ev)
{
    struct raw_counts *r = user;
    if (ev->tag != ELS_EV_BLOCK_MARKER) {
        r->events++;
        r->by_tag[ev->tag]++;
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
    CHECK_U64(s.gcs, ==, raw->by_tag[ELS_EV_GC_START]);
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
    ev(&b, 9, 60 * MS);
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
    CHECK_CONTAINS(sb.p, "\"gc\":{\"count\":1,");
    CHECK_CONTAINS(sb.p, "\"pause_p50_ms\":10,\"pause_max_ms\":10,");
    CHECK_CONTAINS(sb.p, "\"threads\":{\"created\":1,\"alive\":0,");
    CHECK_CONTAINS(sb.p, "\"heap\":{\"size\":1000,\"live\":500,\"allocated\":2000,");
    CHECK_CONTAINS(sb.p, "\"by_label\":[{\"label\":\"ARR_WORDS\",\"bytes\":700},"
                         "{\"label\":\"THUNK\",\"bytes\":300}]");
    CHECK_CONTAINS(sb.p, "\"top\":[{\"cc\":\"go\",\"module\":\"Main\",\"samples\":3},"
                         "{\"cc\":\"main\",\"module\":\"Main\",\"samples\":1}]");
    CHECK_CONTAINS(sb.p, "\"user\":{\"messages\":1,\"markers\":2,");
    CHECK_CONTAINS(sb.p, "\"loss\":{\"notes\":1,\"dropped_units\":3,\"dropped_bytes\":4096,");
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
    CHECK_CONTAINS(sb.p, "\nghc_gc_total{program=\"prog\",pid=\"42\"} 1\n");
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
    CHECK_U64(s.gcs, ==, 2);
    CHECK_U64(s.user_messages, ==, 2);
    mon_model_reset(m);
    mon_model_summary(m, &s);
    CHECK_U64(s.streams, ==, 0);
    CHECK_U64(s.events, ==, 0);
    CHECK_OK(mon_model_feed(m, b.p, b.len));
    mon_model_summary(m, &s);
    CHECK_U64(s.gcs, ==, 1);
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
    CHECK_CONTAINS(sb.p, "\"threads\":{\"created\":5000,\"alive\":1,\"running\":0,"
                         "\"runnable\":0,\"blocked\":1,");
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
};

CHECK_MAIN(cases)
