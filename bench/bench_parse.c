/*
 * bench_parse.c: what reading every event of a stream costs, per event,
 * three ways, for bench/bench_app.sh's trigger-cost section: the public
 * parser delivering every event to a callback (as the monitors read), the
 * flight recorder's dump-on= evaluator (lib/writer/trigger.c, which
 * selects only what its conditions read: Note [Selected events]), and
 * the parser without a callback (as recv checks what it copies).  Reads
 * an eventlog FILE into memory, cuts it into its blocks (the units the RTS
 * hands the writer), and times REPS passes of each; prints one line per
 * way, "NAME NS_PER_EVENT MB_PER_S", the median pass.  Not a test: it
 * fails only when the stream does not parse or the evaluator counts a
 * bad unit.
 *
 * Usage: bench_parse FILE DUMP_ON [REPS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eventlog-sink.h"
#include "eventlog-sink/parse.h"
#include "writer/trigger.h"
#include "bench_util.h"

struct bp_stream {
    const unsigned char *data;
    size_t len, header_len;
    size_t *block_off;          /* where each block starts; [n] = end */
    size_t n_blocks;
    unsigned long long events;
};

static int bp_on_header(void *user, const struct els_parser *p)
{
    (void)user;
    (void)p;
    return 1;                   /* stop right after "datb" */
}

static int bp_on_block(void *user, const struct els_event *ev)
{
    struct bp_stream *s = user;
    if (ev->tag != ELS_EV_BLOCK_MARKER)
        return 0;
    size_t *grown = realloc(s->block_off, (s->n_blocks + 3) * sizeof *grown);
    if (grown == NULL)
        return 2;
    s->block_off = grown;
    s->block_off[s->n_blocks++] = (size_t)ev->offset;
    return 0;
}

/* Find the header's end and every block: the units the writer sees. */
static int bp_split(struct bp_stream *s)
{
    struct els_parse_callbacks cb = {
        .struct_size = sizeof cb, .on_header = bp_on_header,
    };
    struct els_parser *p;
    size_t used = 0;
    if (els_parser_new(&p, &cb, s, 0) != 0 ||
        els_parser_feed(p, s->data, s->len, &used) != 1)
        return -1;
    s->header_len = used;
    els_parser_free(p);
    cb.on_header = NULL;
    cb.on_event = bp_on_block;
    struct els_parse_status st;
    if (els_parser_new(&p, &cb, s, 0) != 0 ||
        els_parser_feed(p, s->data, s->len, NULL) != 0)
        return -1;
    els_parser_status(p, &st);
    els_parser_free(p);
    if (s->n_blocks == 0 || st.where != ELS_PARSE_ENDED)
        return -1;
    if (s->block_off[0] != s->header_len) {     /* events before a block */
        memmove(s->block_off + 1, s->block_off, s->n_blocks * sizeof *s->block_off);
        s->block_off[0] = s->header_len;
        s->n_blocks++;
    }
    s->block_off[s->n_blocks] = (size_t)st.item_offset;   /* DATA_END */
    s->events = st.events;
    return 0;
}

static int bp_count(void *user, const struct els_event *ev)
{
    (*(unsigned long long *)user) += ev->payload_len;
    return 0;
}

/* One pass of the parser over the whole stream, in blocks. */
static double bp_parser_pass(const struct bp_stream *s, bool callback)
{
    unsigned long long seen = 0;
    struct els_parse_callbacks cb = { .struct_size = sizeof cb, .on_event = bp_count };
    struct els_parser *p;
    if (els_parser_new(&p, callback ? &cb : NULL, &seen, 0) != 0)
        return -1;
    double t0 = bench_now();
    int r = els_parser_feed(p, s->data, s->header_len, NULL);
    for (size_t i = 0; r == 0 && i < s->n_blocks; i++)
        r = els_parser_feed(p, s->data + s->block_off[i],
                            s->block_off[i + 1] - s->block_off[i], NULL);
    double t = bench_now() - t0;
    struct els_parse_status st;
    els_parser_status(p, &st);
    els_parser_free(p);
    return r == 0 && st.events == s->events ? t : -1;
}

/* One pass of the dump-on= evaluator, a block per unit. */
static double bp_trigger_pass(const struct bp_stream *s,
                              const struct elsi_trigger_config *cfg)
{
    struct elsi_trigger *t;
    if (elsi_trigger_new(&t, cfg) != 0)
        return -1;
    double t0 = bench_now();
    elsi_trigger_header(t, s->data, s->header_len);
    for (size_t i = 0; i < s->n_blocks; i++)
        elsi_trigger_unit(t, s->data + s->block_off[i],
                          s->block_off[i + 1] - s->block_off[i], NULL, 0, 0);
    double took = bench_now() - t0;
    struct elsi_trigger_counts c;
    elsi_trigger_counts(t, &c);
    elsi_trigger_free(t);
    return c.bad_units == 0 && c.units == s->n_blocks ? took : -1;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_parse FILE DUMP_ON [REPS]\n");
        return 2;
    }
    int reps = bench_reps(argc > 3 ? argv[3] : NULL);
    struct elsi_trigger_config cfg;
    char err[256];
    if (elsi_trigger_parse(argv[2], NULL, NULL, NULL, &cfg, err, sizeof err) != 0) {
        fprintf(stderr, "bench_parse: %s\n", err);
        return 2;
    }
    size_t len;
    unsigned char *data = bench_read_file(argv[1], &len);
    if (data == NULL)
        return 1;
    struct bp_stream s = { .data = data, .len = len };
    if (bp_split(&s) != 0) {
        fprintf(stderr, "bench_parse: %s: not a complete eventlog\n", argv[1]);
        return 1;
    }
    static const char *const names[] = { "callback", "dump-on", "no-callback" };
    double *t = calloc((size_t)reps, sizeof *t);
    for (int way = 0; way < 3 && t != NULL; way++) {
        for (int r = 0; r < reps; r++) {
            t[r] = way == 1 ? bp_trigger_pass(&s, &cfg) : bp_parser_pass(&s, way == 0);
            if (t[r] < 0) {
                fprintf(stderr, "bench_parse: %s: pass failed\n", names[way]);
                return 1;
            }
        }
        qsort(t, (size_t)reps, sizeof *t, bench_cmp_double);
        double m = t[reps / 2];
        printf("%s %.2f %.0f\n", names[way], m * 1e9 / (double)s.events,
               (double)len / 1e6 / m);
    }
    free(t);
    free(s.block_off);
    free(data);
    return 0;
}
