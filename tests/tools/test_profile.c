/*
 * test_profile.c: the profile converters behind `eventlog-sink dump
 * --hp/--prof` (tools/profile_hp.c, tools/profile_prof.c and their shared
 * tools/profile_common.c), fed hand-built events whose payloads are laid
 * out as the RTS posts them, so every byte of the files they write can be
 * predicted here; tests/tools/test_profile_files.sh runs them on real
 * programs' streams.
 */
#include <stdarg.h>
#include <time.h>

#include "check.h"
#include "../tools/profile.h"

/* ------------------------------------------------------------------ */
/* Payloads, big-endian as in the eventlog. */

struct pl {
    uint8_t b[65536];           /* a variable-size event's largest payload */
    size_t n;
};

static void pl_bytes(struct pl *p, const void *d, size_t n)
{
    CHECK(p->n + n <= sizeof p->b);
    memcpy(p->b + p->n, d, n);
    p->n += n;
}

static void pl_uint(struct pl *p, uint64_t v, size_t n)
{
    CHECK(p->n + n <= sizeof p->b);
    for (size_t i = 0; i < n; i++)
        p->b[p->n + i] = (uint8_t)(v >> (8 * (n - 1 - i)));
    p->n += n;
}

static void pl_cstr(struct pl *p, const char *s)
{
    pl_bytes(p, s, strlen(s) + 1);
}

/* Both converters see every event, as dump.c feeds them. */
static struct profile_hp *hp;
static struct profile_prof *pp;

static void convert(const struct els_event *ev)
{
    if (hp != NULL)
        CHECK_OK(profile_hp_event(hp, ev));
    if (pp != NULL)
        CHECK_OK(profile_prof_event(pp, ev));
}

/* With stream open, the events are written there, in the eventlog's
 * layout, instead (stream_begin()). */
static FILE *stream;
static char *stream_bytes;
static size_t stream_len;

/* The event types of a profiled run, as the RTS declares them (-1:
 * variable size). */
static const struct { uint16_t tag; int16_t size; const char *desc; } stream_types[] = {
    { ELS_EV_PROGRAM_ARGS, -1, "Program arguments" },
    { ELS_EV_WALL_CLOCK_TIME, 16, "Wall clock time" },
    { ELS_EV_HEAP_PROF_COST_CENTRE, -1, "Cost center definition" },
    { ELS_EV_HEAP_PROF_SAMPLE_BEGIN, 8, "Start of heap profile sample" },
    { ELS_EV_HEAP_PROF_SAMPLE_COST_CENTRE, -1, "Heap profile cost-centre sample" },
    { ELS_EV_HEAP_PROF_SAMPLE_STRING, -1, "Heap profile string sample" },
    { ELS_EV_HEAP_PROF_SAMPLE_END, 8, "End of heap profile sample" },
    { ELS_EV_PROF_SAMPLE_COST_CENTRE, -1, "Time profile cost-centre stack" },
    { ELS_EV_PROF_BEGIN, 8, "Start of a time profile" },
};

/* Big-endian v, n bytes, to the stream. */
static void stream_uint(uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fputc((int)(uint8_t)(v >> (8 * (n - 1 - i))), stream);
}

static void feed(uint16_t tag, uint64_t t, const struct pl *p)
{
    if (stream == NULL) {
        struct els_event ev = { .tag = tag, .time = t, .cap = 0, .payload = p->b,
                                .payload_len = p->n, .offset = 0 };
        convert(&ev);
        return;
    }
    size_t i = 0;
    while (stream_types[i].tag != tag)
        CHECK(++i < sizeof stream_types / sizeof stream_types[0]);
    stream_uint(tag, 2);
    stream_uint(t, 8);
    if (stream_types[i].size < 0)
        stream_uint(p->n, 2);
    else
        CHECK_INT((int)p->n, ==, stream_types[i].size);
    fwrite(p->b, 1, p->n, stream);
}

/* Write the events from now on to a stream, after the header that
 * declares stream_types. */
static void stream_begin(void)
{
    stream = open_memstream(&stream_bytes, &stream_len);
    CHECK(stream != NULL);
    fputs("hdrbhetb", stream);
    for (size_t i = 0; i < sizeof stream_types / sizeof stream_types[0]; i++) {
        fputs("etb", stream);
        fputc(0, stream);
        stream_uint(stream_types[i].tag, 2);
        stream_uint((uint16_t)stream_types[i].size, 2);
        stream_uint(strlen(stream_types[i].desc), 4);
        fputs(stream_types[i].desc, stream);
        stream_uint(0, 4);              /* no extra info */
        fputs("ete", stream);
        fputc(0, stream);
    }
    fputs("hetehdredatb", stream);
}

static int stream_on_event(void *user, const struct els_event *ev)
{
    (void)user;
    convert(ev);
    return 0;
}

/* End the stream (DATA_END) and convert it as dump does: the library's
 * parser, in reads of 64 KiB, feeding the open converters.  Returns the
 * stream's size. */
static size_t stream_convert(void)
{
    stream_uint(0xffff, 2);
    CHECK(fclose(stream) == 0);
    stream = NULL;
    struct els_parse_callbacks cb = { .struct_size = sizeof cb, .on_event = stream_on_event };
    struct els_parser *parser;
    CHECK_OK(els_parser_new(&parser, &cb, NULL, 0));
    for (size_t off = 0; off < stream_len; off += 65536) {
        size_t n = stream_len - off < 65536 ? stream_len - off : 65536;
        CHECK_OK(els_parser_feed(parser, stream_bytes + off, n, NULL));
    }
    struct els_parse_status st;
    els_parser_status(parser, &st);
    CHECK_INT((int)st.where, ==, (int)ELS_PARSE_ENDED);
    els_parser_free(parser);
    free(stream_bytes);
    stream_bytes = NULL;
    return stream_len;
}

/* PROGRAM_ARGS: n bytes of NUL-separated arguments. */
static void ev_args(const char *args, size_t n)
{
    struct pl p;
    p.n = 0;
    pl_uint(&p, 1, 4);
    pl_bytes(&p, args, n);
    feed(ELS_EV_PROGRAM_ARGS, 0, &p);
}

/* WALL_CLOCK_TIME: the clock read sec at t ns after the RTS's start. */
static void ev_clock(uint64_t t, uint64_t sec)
{
    struct pl p;
    p.n = 0;
    pl_uint(&p, 1, 4);
    pl_uint(&p, sec, 8);
    pl_uint(&p, 0, 4);
    feed(ELS_EV_WALL_CLOCK_TIME, t, &p);
}

static void ev_cc(uint32_t id, const char *label, const char *module, const char *src)
{
    struct pl p;
    p.n = 0;
    pl_uint(&p, id, 4);
    pl_cstr(&p, label);
    pl_cstr(&p, module);
    pl_cstr(&p, src);
    pl_uint(&p, 0, 1);
    feed(ELS_EV_HEAP_PROF_COST_CENTRE, 0, &p);
}

static void ev_heap_begin(uint64_t t, uint64_t era)
{
    struct pl p;
    p.n = 0;
    pl_uint(&p, era, 8);
    feed(ELS_EV_HEAP_PROF_SAMPLE_BEGIN, t, &p);
}

static void ev_heap_end(uint64_t t, uint64_t era)
{
    struct pl p;
    p.n = 0;
    pl_uint(&p, era, 8);
    feed(ELS_EV_HEAP_PROF_SAMPLE_END, t, &p);
}

static void ev_heap_string(uint64_t t, const char *label, uint64_t bytes)
{
    struct pl p;
    p.n = 0;
    pl_uint(&p, 0, 1);
    pl_uint(&p, bytes, 8);
    pl_cstr(&p, label);
    feed(ELS_EV_HEAP_PROF_SAMPLE_STRING, t, &p);
}

/* A stack of depth ids, innermost first. */
static void pl_stack(struct pl *p, unsigned depth, va_list ap)
{
    pl_uint(p, depth, 1);
    for (unsigned i = 0; i < depth; i++)
        pl_uint(p, va_arg(ap, uint32_t), 4);
}

static void ev_heap_ccs(uint64_t t, uint64_t bytes, unsigned depth, ...)
{
    struct pl p;
    p.n = 0;
    pl_uint(&p, 0, 1);
    pl_uint(&p, bytes, 8);
    va_list ap;
    va_start(ap, depth);
    pl_stack(&p, depth, ap);
    va_end(ap);
    feed(ELS_EV_HEAP_PROF_SAMPLE_COST_CENTRE, t, &p);
}

static void ev_prof_begin(uint64_t tick_ns)
{
    struct pl p;
    p.n = 0;
    pl_uint(&p, tick_ns, 8);
    feed(ELS_EV_PROF_BEGIN, 0, &p);
}

/* count ticks of cap, each charged to the stack given. */
static void ev_ticks(unsigned count, uint32_t cap, unsigned depth, ...)
{
    for (unsigned k = 0; k < count; k++) {
        struct pl p;
    p.n = 0;
        pl_uint(&p, cap, 4);
        pl_uint(&p, k, 8);
        va_list ap;
        va_start(ap, depth);
        pl_stack(&p, depth, ap);
        va_end(ap);
        feed(ELS_EV_PROF_SAMPLE_COST_CENTRE, 1000000u * k, &p);
    }
}

/* The whole file (malloc'd, NUL-terminated). */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "%s: %s", path, strerror(errno));
    char *s = NULL;
    size_t cap = 0;
    FILE *m = open_memstream(&s, &cap);
    CHECK(m != NULL);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        fwrite(buf, 1, n, m);
    fclose(f);
    fclose(m);
    return s;
}

/* The date is the local time of the program's start: UTC here, and the
 * clock says 1699999998 s at time 0 (1700000000 read 2 s in). */
static void fixed_run(void)
{
    setenv("TZ", "UTC", 1);
    tzset();
    static const char args[] = "prog\0+RTS\0-hT";
    ev_args(args, sizeof args);
    ev_clock(2000000000u, 1700000000u);
}

#define HP_HEAD                                                         \
    "JOB \"prog +RTS -hT\"\n"                                           \
    "DATE \"Tue Nov 14 22:13 2023\"\n"                                  \
    "SAMPLE_UNIT \"seconds\"\n"                                         \
    "VALUE_UNIT \"bytes\"\n"                                            \
    "BEGIN_SAMPLE 0.000000\n"                                           \
    "END_SAMPLE 0.000000\n"

/* ------------------------------------------------------------------ */
/* .hp */

static void hp_samples_make_the_exact_file(void)
{
    const char *path = check_path("a.hp");
    CHECK_OK(profile_hp_open(&hp, path, NULL));
    fixed_run();
    ev_heap_begin(2500000000u, 1);
    ev_heap_string(2500000000u, "ARR_WORDS", 1024);
    ev_heap_string(2500000000u, "(,)", 48);
    ev_heap_end(2500100000u, 1);
    ev_heap_begin(3250000000u, 2);
    ev_heap_string(3250000000u, "(,)", 96);
    ev_heap_string(3250000000u, "ARR_WORDS", 2048);
    ev_heap_string(3250000000u, "THUNK", 16);
    ev_heap_end(3300000000u, 2);
    CHECK_OK(profile_hp_finish(hp, true));
    profile_hp_free(hp);
    hp = NULL;
    char *got = slurp(path);
    /* Samples at their BEGIN's time, bands in the stream's order, and
     * the empty sample of a clean end at the last event's time. */
    CHECK_STR(got, HP_HEAD
              "BEGIN_SAMPLE 2.500000\n"
              "ARR_WORDS\t1024\n"
              "(,)\t48\n"
              "END_SAMPLE 2.500000\n"
              "BEGIN_SAMPLE 3.250000\n"
              "(,)\t96\n"
              "ARR_WORDS\t2048\n"
              "THUNK\t16\n"
              "END_SAMPLE 3.250000\n"
              "BEGIN_SAMPLE 3.300000\n"
              "END_SAMPLE 3.300000\n");
    free(got);
}

/* Note [Valid at every sample]: a census whose END never came is not
 * written, whether the stream stops inside it or a new census starts. */
static void hp_unfinished_sample_is_not_written(void)
{
    const char *path = check_path("cut.hp");
    CHECK_OK(profile_hp_open(&hp, path, NULL));
    fixed_run();
    ev_heap_begin(1000000000u, 1);
    ev_heap_string(1000000000u, "A", 10);
    ev_heap_end(1000000000u, 1);
    ev_heap_begin(2000000000u, 2);      /* its END is lost */
    ev_heap_string(2000000000u, "LOST", 20);
    ev_heap_begin(3000000000u, 3);
    ev_heap_string(3000000000u, "B", 30);
    ev_heap_end(3000000000u, 3);
    /* Written so far: every whole census. */
    char *mid = slurp(path);
    CHECK_STR(mid, HP_HEAD
              "BEGIN_SAMPLE 1.000000\nA\t10\nEND_SAMPLE 1.000000\n"
              "BEGIN_SAMPLE 3.000000\nB\t30\nEND_SAMPLE 3.000000\n");
    free(mid);
    ev_heap_begin(4000000000u, 4);      /* the stream is cut here */
    ev_heap_string(4000000000u, "CUT", 40);
    CHECK_OK(profile_hp_finish(hp, false));
    profile_hp_free(hp);
    hp = NULL;
    char *got = slurp(path);
    CHECK_STR(got, HP_HEAD
              "BEGIN_SAMPLE 1.000000\nA\t10\nEND_SAMPLE 1.000000\n"
              "BEGIN_SAMPLE 3.000000\nB\t30\nEND_SAMPLE 3.000000\n");
    free(got);
}

/* profile_word(): hp2ps reads a band name up to white space and prints
 * it in a PostScript string, so every byte that is not printable ASCII,
 * a space, '"' and '\\' become '_', an empty name "_". */
static void hp_band_names_are_made_safe(void)
{
    const char *path = check_path("names.hp");
    CHECK_OK(profile_hp_open(&hp, path, NULL));
    setenv("TZ", "UTC", 1);
    tzset();
    /* The JOB's "..." field keeps spaces; '"' becomes '\'', controls '_'. */
    static const char args[] = "p\"q\0a b\x1b[2J\xff";
    ev_args(args, sizeof args);
    ev_clock(0, 1700000000u);
    ev_cc(5, "lab el\"\\\x07\xc3\xa9", "M", "m.hs");
    ev_heap_begin(1000000000u, 1);
    ev_heap_string(1000000000u, "with space", 1);
    ev_heap_string(1000000000u, "q\"uote", 2);
    ev_heap_string(1000000000u, "back\\slash", 3);
    ev_heap_string(1000000000u, "ctl\x01\t\n\x1b[2J\x7f", 4);
    ev_heap_string(1000000000u, "caf\xc3\xa9\xff\xc0\xaf", 5);
    ev_heap_string(1000000000u, "", 6);
    char *big = malloc(6001);
    memset(big, 'b', 6000);
    big[6000] = '\0';
    ev_heap_string(1000000000u, big, 8);
    free(big);
    ev_heap_ccs(1000000000u, 7, 1, 5u);
    ev_heap_end(1000000000u, 1);
    CHECK_OK(profile_hp_finish(hp, false));
    profile_hp_free(hp);
    hp = NULL;
    char *got = slurp(path);
    /* a 6000-byte name is cut to hp2ps's 4999, ending in "..." */
    char *b = strstr(got, "\nbbbb");
    CHECK(b != NULL);
    CHECK(strspn(b + 1, "b") == PROFILE_HP_NAME_MAX - 3);
    CHECK(strncmp(b + 1 + PROFILE_HP_NAME_MAX - 3, "...\t8\n", 6) == 0);
    memmove(b + 1, b + 1 + PROFILE_HP_NAME_MAX + 3, strlen(b + 1 + PROFILE_HP_NAME_MAX + 3) + 1);
    CHECK_STR(got, "JOB \"p'q a b_[2J_\"\n"
              "DATE \"Tue Nov 14 22:13 2023\"\n"
              "SAMPLE_UNIT \"seconds\"\nVALUE_UNIT \"bytes\"\n"
              "BEGIN_SAMPLE 0.000000\nEND_SAMPLE 0.000000\n"
              "BEGIN_SAMPLE 1.000000\n"
              "with_space\t1\n"
              "q_uote\t2\n"
              "back_slash\t3\n"
              "ctl____[2J_\t4\n"
              "caf_____\t5\n"
              "_\t6\n"
              "(1)lab_el_____\t7\n"
              "END_SAMPLE 1.000000\n");
    free(got);
}

static void word_and_quoted_rules(void)
{
    char *w = profile_word((struct els_str){ "a b\"c\\d\x01\x7f\x80\xff~!", 13 });
    CHECK(w != NULL);
    CHECK_STR(w, "a_b_c_d____~!");
    free(w);
    w = profile_word((struct els_str){ "", 0 });
    CHECK_STR(w, "_");
    free(w);
    /* A NUL inside is a byte like any other. */
    w = profile_word((struct els_str){ "x\0y", 3 });
    CHECK_STR(w, "x_y");
    free(w);
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    CHECK(f != NULL);
    profile_quoted(f, (struct els_str){ "a \"b\"\\\t\xe2\x80\xae", 10 });
    fclose(f);
    CHECK_STR(s, "a 'b'\\____");
    free(s);
}

/* A stream joined at a snapshot re-posts the definitions: the second
 * definition of an id is the one used, in both files. */
static void cost_centre_redefinition_replaces(void)
{
    struct profile_ccs t = { 0 };
    struct els_event_data e;
    memset(&e, 0, sizeof e);
    e.u.cost_centre.id = 300;           /* past the first table size */
    e.u.cost_centre.label = (struct els_str){ "old", 3 };
    e.u.cost_centre.module = (struct els_str){ "Old", 3 };
    e.u.cost_centre.srcloc = (struct els_str){ "o.hs", 4 };
    CHECK_OK(profile_ccs_define(&t, &e));
    e.u.cost_centre.label = (struct els_str){ "new one", 7 };
    e.u.cost_centre.module = (struct els_str){ "New", 3 };
    e.u.cost_centre.srcloc = (struct els_str){ "", 0 };
    CHECK_OK(profile_ccs_define(&t, &e));
    const struct profile_cc *c = profile_ccs_get(&t, 300);
    CHECK(c != NULL);
    CHECK_STR(c->label, "new_one");
    CHECK_STR(c->module, "New");
    CHECK_STR(c->srcloc, "_");
    CHECK(profile_ccs_get(&t, 299) == NULL);
    CHECK(profile_ccs_get(&t, 1u << 30) == NULL);
    e.u.cost_centre.id = PROFILE_CC_MAX;
    CHECK_INT(profile_ccs_define(&t, &e), ==, -ERANGE);
    profile_ccs_free(&t);

    /* Through both converters: the band and the report name the new. */
    const char *hpath = check_path("re.hp"), *ppath = check_path("re.prof");
    CHECK_OK(profile_hp_open(&hp, hpath, NULL));
    CHECK_OK(profile_prof_open(&pp, ppath, NULL));
    fixed_run();
    ev_cc(7, "first", "A", "a.hs:1");
    ev_cc(7, "second", "B", "b.hs:2");
    ev_heap_begin(1000000000u, 1);
    ev_heap_ccs(1000000000u, 64, 1, 7u);
    ev_heap_end(1000000000u, 1);
    ev_ticks(1, 0, 1, 7u);
    CHECK_OK(profile_hp_finish(hp, false));
    CHECK_OK(profile_prof_finish(pp, false));
    profile_hp_free(hp);
    profile_prof_free(pp);
    hp = NULL;
    pp = NULL;
    char *h = slurp(hpath), *r = slurp(ppath);
    CHECK_CONTAINS(h, "\nBEGIN_SAMPLE 1.000000\n(1)second\t64\nEND_SAMPLE 1.000000\n");
    CHECK(strstr(h, "first") == NULL);
    CHECK_CONTAINS(r, "\n second     B      b.hs:2       1           0  100.0    0.0   100.0    0.0      1         0\n");
    CHECK(strstr(r, "first") == NULL && strstr(r, "a.hs") == NULL);
    free(h);
    free(r);
}

/* -hc bands: innermost first, "/"-joined, numbered in order of first
 * appearance, a CAF as Module.CAF. */
static void hp_cost_centre_stack_names(void)
{
    const char *path = check_path("hc.hp");
    CHECK_OK(profile_hp_open(&hp, path, NULL));
    fixed_run();
    ev_cc(1, "main", "Main", "m.hs:1");
    ev_cc(2, "work", "Main", "m.hs:2");
    ev_cc(3, "CAF", "Lib", "<entire-module>");
    ev_heap_begin(1000000000u, 1);
    ev_heap_ccs(1000000000u, 100, 2, 2u, 1u);
    ev_heap_ccs(1000000000u, 200, 1, 3u);
    ev_heap_ccs(1000000000u, 300, 0);
    ev_heap_end(1000000000u, 1);
    ev_heap_begin(2000000000u, 2);
    ev_heap_ccs(2000000000u, 5, 1, 3u);
    ev_heap_ccs(2000000000u, 6, 2, 2u, 1u);
    ev_heap_end(2000000000u, 2);
    CHECK_OK(profile_hp_finish(hp, false));
    profile_hp_free(hp);
    hp = NULL;
    char *got = slurp(path);
    CHECK_STR(got, HP_HEAD
              "BEGIN_SAMPLE 1.000000\n(1)work/main\t100\n(2)Lib.CAF\t200\n"
              "MAIN\t300\nEND_SAMPLE 1.000000\n"
              "BEGIN_SAMPLE 2.000000\n(2)Lib.CAF\t5\n(1)work/main\t6\n"
              "END_SAMPLE 2.000000\n");
    free(got);
}

/* A stream with no samples: the header, the RTS's first empty sample
 * and (clean end) its last one, and a note saying why it is empty. */
static void hp_no_samples_is_empty_but_valid(void)
{
    const char *path = check_path("none.hp");
    char *note = NULL;
    size_t nn = 0;
    FILE *msgs = open_memstream(&note, &nn);
    CHECK(msgs != NULL);
    CHECK_OK(profile_hp_open(&hp, path, msgs));
    ev_cc(1, "main", "Main", "m.hs:1");
    fixed_run();
    CHECK_OK(profile_hp_finish(hp, true));
    profile_hp_free(hp);
    hp = NULL;
    fclose(msgs);
    char *got = slurp(path);
    CHECK_STR(got, HP_HEAD "BEGIN_SAMPLE 2.000000\nEND_SAMPLE 2.000000\n");
    CHECK_CONTAINS(note, "holds no heap profile samples");
    free(got);
    free(note);

    /* Cut before anything: the header and the first sample alone. */
    CHECK_OK(profile_hp_open(&hp, path, NULL));
    CHECK_OK(profile_hp_finish(hp, false));
    profile_hp_free(hp);
    hp = NULL;
    got = slurp(path);
    CHECK_CONTAINS(got, "JOB \"eventlog\"\nDATE \"");
    CHECK_CONTAINS(got, "\"\nSAMPLE_UNIT \"seconds\"\nVALUE_UNIT \"bytes\"\n"
                   "BEGIN_SAMPLE 0.000000\nEND_SAMPLE 0.000000\n");
    CHECK(strstr(got, "END_SAMPLE 0.000000\n")[strlen("END_SAMPLE 0.000000\n")] == '\0');
    free(got);
}

/* ------------------------------------------------------------------ */
/* .prof */

#define PROF_REBUILT                                                      \
    "\tRebuilt from an eventlog by eventlog-sink dump --prof, in +RTS -P's\n" \
    "\tlayout: the eventlog carries the time samples (ticks), not entry\n"    \
    "\tcounts or allocation; both are shown as 0, and \"no.\" numbers this\n" \
    "\treport's nodes, not the RTS's.\n"

/*
 * Ticks (10 ms each) and the stacks they carry, innermost first:
 *   2 x main               (cap 0)
 *   3 x work<main          (cap 1)
 *   4 x helper<work<main   (cap 0)
 *   1 x helper<main        (cap 1)
 *   5 x GC                 (left out, as the RTS leaves it out)
 * Total 10 ticks on 2 capabilities: 10 x 10 ms / 2 = 0.05 s.
 * Individual: main 2/10 = 20%, work 30%, helper<work 40%, helper<main
 * 10%.  Inherited: MAIN 100%, main 100%, work 3+4 = 70%, helper<work
 * 40%, helper<main 10%.  By cost centre: helper 4+1 = 50% (5 ticks), work
 * 30%, main 20%.  Widths, each table its own as in the RTS's: COST
 * CENTRE 11 (the header; the widest label plus depth is helper at depth
 * 3, 9), MODULE 6, SRC 6 in the flat table ("a.hs:3"), 10 in the tree
 * ("<built-in>"), no. 3 (the header).
 */
static void prof_report_is_exact(void)
{
    const char *path = check_path("a.prof");
    CHECK_OK(profile_prof_open(&pp, path, NULL));
    fixed_run();
    ev_prof_begin(10000000u);
    ev_cc(1, "main", "Main", "a.hs:1");
    ev_cc(2, "work", "Main", "a.hs:2");
    ev_cc(3, "helper", "Main", "a.hs:3");
    ev_cc(4, "GC", "GC", "<built-in>");
    ev_ticks(2, 0, 1, 1u);
    ev_ticks(3, 1, 2, 2u, 1u);
    ev_ticks(4, 0, 3, 3u, 2u, 1u);
    ev_ticks(5, 0, 1, 4u);
    ev_ticks(1, 1, 2, 3u, 1u);
    CHECK_OK(profile_prof_finish(pp, true));
    profile_prof_free(pp);
    pp = NULL;
    char *got = slurp(path);
    CHECK_STR(got,
        "\tTue Nov 14 22:13 2023 Time and Allocation Profiling Report  (Final)\n\n"
        "\t   prog +RTS -hT\n\n"
        PROF_REBUILT
        "\tAs in the RTS's report, the 5 ticks of GC, IDLE, SYSTEM and\n"
        "\tprofiling overhead are left out.\n\n"
        "\ttotal time  =         0.05 secs   (10 ticks @ 10000 us, 2 processors)\n"
        "\ttotal alloc =           0 bytes  (not in the eventlog)\n\n"
        "COST CENTRE MODULE SRC     %time %alloc  ticks     bytes\n\n"
        "helper      Main   a.hs:3   50.0    0.0      5         0\n"
        "work        Main   a.hs:2   30.0    0.0      3         0\n"
        "main        Main   a.hs:1   20.0    0.0      2         0\n"
        "\n\n"
        "                                                 individual      inherited\n"
        "COST CENTRE MODULE SRC        no.     entries  %time %alloc   %time %alloc  ticks     bytes\n\n"
        "MAIN        MAIN   <built-in>   0           0    0.0    0.0   100.0    0.0      0         0\n"
        " main       Main   a.hs:1       1           0   20.0    0.0   100.0    0.0      2         0\n"
        "  work      Main   a.hs:2       2           0   30.0    0.0    70.0    0.0      3         0\n"
        "   helper   Main   a.hs:3       3           0   40.0    0.0    40.0    0.0      4         0\n"
        "  helper    Main   a.hs:3       4           0   10.0    0.0    10.0    0.0      1         0\n");
    free(got);
}

/* Note [Live report cadence]: flush() writes the first report at once,
 * then rewrites it only when ticks arrived since the last one and a
 * second has passed (times are the caller's; a rewrite of this report
 * takes far less than the 100 s that would stretch the gap). */
static void prof_flush_reports_so_far(void)
{
    const uint64_t t0 = 5000000000u, s = 1000000000u;
    const char *path = check_path("live.prof");
    CHECK_OK(profile_prof_open(&pp, path, NULL));
    fixed_run();
    ev_cc(1, "main", "Main", "a.hs:1");
    ev_ticks(3, 0, 1, 1u);
    CHECK_OK(profile_prof_flush(pp, t0));
    char *got = slurp(path);
    CHECK_CONTAINS(got, "Profiling Report  (so far)\n");
    CHECK_CONTAINS(got, "(3 ticks @ 1000 us, 1 processor)\n");
    free(got);
    CHECK_OK(unlink(path));
    CHECK_U64(profile_prof_due(pp), ==, UINT64_MAX);    /* nothing new */
    CHECK_OK(profile_prof_flush(pp, t0 + 10 * s));
    CHECK(access(path, F_OK) != 0);
    ev_ticks(1, 0, 1, 1u);
    /* New ticks, but within a second of the last report: not yet. */
    CHECK_U64(profile_prof_due(pp), >=, t0 + s);
    CHECK_OK(profile_prof_flush(pp, t0 + s / 2));
    CHECK(access(path, F_OK) != 0);
    ev_ticks(1, 0, 1, 1u);
    CHECK_OK(profile_prof_flush(pp, t0 + 100 * s));
    got = slurp(path);
    CHECK_CONTAINS(got, "(5 ticks @ 1000 us, 1 processor)\n");
    free(got);
    struct profile_stats st;
    profile_prof_stats(pp, &st);
    CHECK_U64(st.rewrites, ==, 2);
    profile_prof_free(pp);
    pp = NULL;
}

static void prof_no_samples_is_empty_but_valid(void)
{
    const char *path = check_path("none.prof");
    char *note = NULL;
    size_t nn = 0;
    FILE *msgs = open_memstream(&note, &nn);
    CHECK(msgs != NULL);
    CHECK_OK(profile_prof_open(&pp, path, msgs));
    fixed_run();
    ev_cc(1, "main", "Main", "a.hs:1");
    CHECK_OK(profile_prof_finish(pp, true));
    profile_prof_free(pp);
    pp = NULL;
    fclose(msgs);
    char *got = slurp(path);
    CHECK_STR(got,
        "\tTue Nov 14 22:13 2023 Time and Allocation Profiling Report  (Final)\n\n"
        "\t   prog +RTS -hT\n\n"
        PROF_REBUILT
        "\tAs in the RTS's report, the 0 ticks of GC, IDLE, SYSTEM and\n"
        "\tprofiling overhead are left out.\n\n"
        "\ttotal time  =         0.00 secs   (0 ticks @ 1000 us, 1 processor)\n"
        "\ttotal alloc =           0 bytes  (not in the eventlog)\n\n"
        "COST CENTRE MODULE SRC  %time %alloc  ticks     bytes\n\n"
        "\n\n"
        "                                                 individual      inherited\n"
        "COST CENTRE MODULE SRC        no.     entries  %time %alloc   %time %alloc  ticks     bytes\n\n"
        "MAIN        MAIN   <built-in>   0           0    0.0    0.0     0.0    0.0      0         0\n");
    CHECK_CONTAINS(note, "holds no time profile samples");
    free(got);
    free(note);
}

/* ------------------------------------------------------------------ */
/* Through the parser, and the bounds */

/* A census band above 4 GiB (a heap of that size, -hT and -hc) keeps
 * every bit, through the library's parser as dump reads a stream. */
static void hp_residency_beyond_32_bits(void)
{
    const char *path = check_path("big.hp");
    CHECK_OK(profile_hp_open(&hp, path, NULL));
    stream_begin();
    fixed_run();
    ev_cc(1, "main", "Main", "m.hs:1");
    ev_heap_begin(1000000000u, 1);
    ev_heap_string(1000000000u, "ARR_WORDS", UINT64_C(5368709123));     /* 5 GiB + 3 */
    ev_heap_string(1000000000u, "THUNK", UINT64_C(4294967296));         /* 2^32 */
    ev_heap_ccs(1000000000u, UINT64_C(4294967297), 1, 1u);              /* 2^32 + 1 */
    ev_heap_ccs(1000000000u, UINT64_MAX - 1, 0);
    ev_heap_end(1000000000u, 1);
    stream_convert();
    CHECK_OK(profile_hp_finish(hp, false));
    profile_hp_free(hp);
    hp = NULL;
    char *got = slurp(path);
    CHECK_STR(got, HP_HEAD
              "BEGIN_SAMPLE 1.000000\n"
              "ARR_WORDS\t5368709123\n"
              "THUNK\t4294967296\n"
              "(1)main\t4294967297\n"
              "MAIN\t18446744073709551614\n"
              "END_SAMPLE 1.000000\n");
    free(got);
}

/* How often needle occurs in hay. */
static size_t count_of(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* Note [Bounded columns]: a 60,000-byte label on a cost centre that tops
 * a thousand stacks is cut in every row and given once in full; the
 * report stays within a small multiple of the stream.  (Padded to the
 * longest name, as GHC pads, it would be 60 MB.) */
/* needle is in hay; on failure, only the needle's start is shown (the
 * haystack holds 60,000-byte names). */
#define HAS(hay, needle)                                                   \
    CHECK_MSG(strstr((hay), (needle)) != NULL, "no \"%.200s\" in the report", (needle))

static void prof_long_name_is_bounded(void)
{
    enum { LONG = 60000, STACKS = 1000 };
    char *label = malloc(LONG + 1), *module = malloc(101);
    CHECK(label != NULL && module != NULL);
    for (size_t i = 0; i < LONG; i++)
        label[i] = (char)('a' + i % 26);
    label[LONG] = '\0';
    memset(module, 'M', 100);
    module[100] = '\0';
    const char *path = check_path("long.prof");
    CHECK_OK(profile_prof_open(&pp, path, NULL));
    stream_begin();
    fixed_run();
    ev_cc(1, "main", "Main", "a.hs:1");
    ev_cc(2, label, module, "a.hs:2");
    for (uint32_t i = 0; i < STACKS; i++) {
        char name[16];
        snprintf(name, sizeof name, "f%" PRIu32, i);
        ev_cc(10 + i, name, "Main", "a.hs:3");
        /* f<i> under the long one under main, and the long one under f<i> */
        ev_ticks(1, 0, 3, 10u + i, 2u, 1u);
        ev_ticks(1, 0, 3, 2u, 10u + i, 1u);
    }
    size_t stream_size = stream_convert();
    CHECK_OK(profile_prof_finish(pp, true));
    profile_prof_free(pp);
    pp = NULL;
    char *got = slurp(path);
    size_t size = strlen(got);
    /* Every row of the tables is at most 255 (indentation) + 3 x 61 +
     * 100 characters (the figures) long: the report has a row per node,
     * and a node takes at least one tick event (35 bytes here). */
    CHECK_MSG(size < 5 * stream_size, "a report of %zu bytes from a stream of %zu", size,
              stream_size);
    const char *names = strstr(got, "\n\nNames longer than");
    CHECK(names != NULL);
    for (const char *line = got; line < names;) {
        const char *end = strchr(line, '\n');
        CHECK_MSG(end - line < 255 + 3 * 61 + 100, "a line of %td characters", end - line);
        line = end + 1;
    }
    CHECK_INT((int)count_of(got, label), ==, 1);
    CHECK_INT((int)count_of(got, module), ==, 1);
    /* Cut to 60 characters ending "...[K]", numbered in order of use:
     * the flat table lists the long label first (1000 ticks). */
    char cut[160];
    snprintf(cut, sizeof cut, "%.54s...[1]", label);
    HAS(got, cut);
    CHECK_INT((int)count_of(got, cut), ==, 1 + 1 + STACKS);    /* flat, tree */
    snprintf(cut, sizeof cut, "\n%.54s...[1] %.54s...[2] a.hs:2", label, module);
    HAS(got, cut);
    HAS(got, "\n\nNames longer than 60 characters are cut in the tables above and end\n"
                        "in \"...[K]\"; in full:\n\n[1] COST CENTRE ");
    char *full = malloc(LONG + 200);
    CHECK(full != NULL);
    snprintf(full, LONG + 200, "\n[1] COST CENTRE %s\n[2] MODULE %s\n", label, module);
    HAS(got, full);
    /* The rows of short names are as narrow as their own columns allow:
     * the label column is 3 (depth) + 60 wide. */
    snprintf(cut, sizeof cut, "\n  %-61s Main ", "f0");
    HAS(got, cut);
    free(full);
    free(got);
    free(label);
    free(module);
}

/* depth-2 stacks <i, 1> (i from 2), n of them: one census band each for
 * the .hp, one tick each for the .prof (all children of one node: the
 * fan-out that a walk through siblings made quadratic). */
static void many_stacks(unsigned n, struct profile_stats *hst, struct profile_stats *pst)
{
    const char *hpath = check_path("many.hp"), *ppath = check_path("many.prof");
    CHECK_OK(profile_hp_open(&hp, hpath, NULL));
    CHECK_OK(profile_prof_open(&pp, ppath, NULL));
    ev_heap_begin(1000000000u, 1);
    for (uint32_t i = 0; i < n; i++) {
        ev_heap_ccs(1000000000u, 8 + i, 2, 2u + i, 1u);
        ev_ticks(1, 0, 2, 2u + i, 1u);
    }
    ev_heap_end(1000000000u, 1);
    CHECK_OK(profile_hp_finish(hp, true));
    CHECK_OK(profile_prof_finish(pp, true));
    profile_hp_stats(hp, hst);
    profile_prof_stats(pp, pst);
    profile_hp_free(hp);
    profile_prof_free(pp);
    hp = NULL;
    pp = NULL;
    CHECK_U64(hst->entries, ==, n);
    CHECK_U64(pst->entries, ==, n + 2);        /* and MAIN, and cost centre 1 */
}

/* Note [Stack numbers, bounded] and Note [Linear in the stream]: the work
 * per stack does not grow with the stacks met before.  Counted, not
 * timed: the hash probes for N and 4N distinct stacks grow about 4-fold
 * (a search through the earlier stacks would make it 16-fold) and stay
 * a few per stack. */
static void stacks_cost_linear_work(void)
{
    enum { N = 4000 };
    struct profile_stats h1, p1, h4, p4;
    many_stacks(N, &h1, &p1);
    many_stacks(4 * N, &h4, &p4);
    printf("  probes for %u and %u stacks: .hp %" PRIu64 ", %" PRIu64 "; .prof %" PRIu64
           ", %" PRIu64 "\n", N, 4 * N, h1.probes, h4.probes, p1.probes, p4.probes);
    fflush(stdout);
    CHECK_U64(h4.probes, <, 6 * h1.probes);
    CHECK_U64(p4.probes, <, 6 * p1.probes);
    /* .hp: a find and an add per stack, and the rehashes; .prof: that for
     * the tree and again for the flat table, and the find of the parent. */
    CHECK_U64(h4.probes, <, 8 * 4 * N);
    CHECK_U64(p4.probes, <, 16 * 4 * N);
    CHECK_U64(h1.probes, >=, 2 * N);           /* a find and an add each */
    CHECK_U64(p1.probes, >=, 2 * N);
}

/* The caps: the 65,537th distinct stack's samples go to "(other)", the
 * stacks numbered before keep their bands, and the count is said. */
static void hp_stacks_beyond_the_cap_are_other(void)
{
    const char *path = check_path("cap.hp");
    char *note = NULL;
    size_t nn = 0;
    FILE *msgs = open_memstream(&note, &nn);
    CHECK(msgs != NULL);
    CHECK_OK(profile_hp_open(&hp, path, msgs));
    fixed_run();
    ev_heap_begin(1000000000u, 1);
    for (uint32_t i = 0; i < PROFILE_HP_STACKS_MAX + 3; i++)
        ev_heap_ccs(1000000000u, 1000, 1, i);
    ev_heap_end(1000000000u, 1);
    ev_heap_begin(2000000000u, 2);
    ev_heap_ccs(2000000000u, 5, 1, PROFILE_HP_STACKS_MAX + 7);     /* new: other */
    ev_heap_ccs(2000000000u, 6, 1, 0u);                            /* band (1) */
    ev_heap_ccs(2000000000u, UINT64_MAX, 1, PROFILE_HP_STACKS_MAX); /* other, saturates */
    ev_heap_ccs(2000000000u, 7, 1, PROFILE_HP_STACKS_MAX - 1);     /* the last band */
    ev_heap_end(2000000000u, 2);
    struct profile_stats st;
    profile_hp_stats(hp, &st);
    CHECK_U64(st.entries, ==, PROFILE_HP_STACKS_MAX);
    CHECK_U64(st.other, ==, 3 + 2);
    CHECK_OK(profile_hp_finish(hp, false));
    profile_hp_free(hp);
    hp = NULL;
    fclose(msgs);
    char *got = slurp(path);
    CHECK_CONTAINS(got, "\n(65536)cc65535\t1000\n(other)\t3000\nEND_SAMPLE 1.000000\n");
    CHECK_CONTAINS(got, "\nBEGIN_SAMPLE 2.000000\n(1)cc0\t6\n(65536)cc65535\t7\n"
                        "(other)\t18446744073709551615\nEND_SAMPLE 2.000000\n");
    CHECK_INT((int)count_of(got, "\n(other)\t"), ==, 2);
    CHECK_CONTAINS(note, "cap.hp: 5 samples of cost-centre stacks beyond the first 65536 "
                         "(or 4194304 ids in all) are in the band (other)\n");
    free(got);
    free(note);

    /* Deep stacks reach the bound on ids first: 4194304 / 255 = 16448. */
    CHECK_OK(profile_hp_open(&hp, path, NULL));
    ev_heap_begin(1000000000u, 1);
    for (uint32_t i = 0; i < 16449; i++) {
        struct pl p;
    p.n = 0;
        pl_uint(&p, 0, 1);
        pl_uint(&p, 1, 8);
        pl_uint(&p, 255, 1);
        for (uint32_t j = 0; j < 255; j++)
            pl_uint(&p, i + j, 4);
        feed(ELS_EV_HEAP_PROF_SAMPLE_COST_CENTRE, 1000000000u, &p);
    }
    ev_heap_end(1000000000u, 1);
    profile_hp_stats(hp, &st);
    CHECK_U64(st.entries, ==, 16448);
    CHECK_U64(st.other, ==, 1);
    profile_hp_free(hp);
    hp = NULL;
}

/* Call-tree nodes beyond the cap: the ticks of stacks that need one go to
 * "(other)" under MAIN, in both tables, and the count is said. */
static void prof_nodes_beyond_the_cap_are_other(void)
{
    const char *path = check_path("cap.prof");
    char *note = NULL;
    size_t nn = 0;
    FILE *msgs = open_memstream(&note, &nn);
    CHECK(msgs != NULL);
    CHECK_OK(profile_prof_open(&pp, path, msgs));
    fixed_run();
    /* MAIN and PROFILE_PROF_NODES_MAX - 1 children of it: the tree is full. */
    for (uint32_t i = 1; i < PROFILE_PROF_NODES_MAX; i++)
        ev_ticks(1, 0, 1, i);
    ev_ticks(1, 0, 1, 1u);                      /* known: its own node */
    ev_ticks(2, 0, 1, PROFILE_PROF_NODES_MAX);  /* new: (other) */
    ev_ticks(1, 0, 2, 5u, 1u);                  /* a new child of a known node */
    struct profile_stats st;
    profile_prof_stats(pp, &st);
    CHECK_U64(st.entries, ==, PROFILE_PROF_NODES_MAX + 1);
    CHECK_U64(st.other, ==, 3);
    CHECK_OK(profile_prof_finish(pp, true));
    profile_prof_free(pp);
    pp = NULL;
    fclose(msgs);
    char *got = slurp(path);
    CHECK_CONTAINS(got, "\n\t3 ticks of stacks beyond the report's 131072 call-tree\n"
                        "\tnodes are counted in (other).\n");
    CHECK_CONTAINS(got, "(131075 ticks @ 1000 us, 1 processor)");
    /* The last child of MAIN, node 131072, with its 3 ticks (the names
     * of the undefined cost centres, "?", leave the columns at their
     * headers' widths). */
    char row[160];
    snprintf(row, sizeof row, "\n %-10s %-6s %-10s %6u %11d  %5.1f  %5.1f   %5.1f  %5.1f  %5d %9d\n",
             "(other)", "-", "-", PROFILE_PROF_NODES_MAX, 0, 0.0, 0.0, 0.0, 0.0, 3, 0);
    CHECK_MSG(strstr(got, row) != NULL, "no row %s", row);
    CHECK_INT((int)count_of(got, "(other)"), ==, 2);  /* the header's, the row */
    CHECK_CONTAINS(note, "cap.prof: 3 ticks of stacks beyond the report's 131072 call-tree "
                         "nodes are counted in (other)\n");
    free(got);
    free(note);
}

static const struct check_case cases[] = {
    CHECK_CASE(hp_samples_make_the_exact_file),
    CHECK_CASE(hp_unfinished_sample_is_not_written),
    CHECK_CASE(hp_band_names_are_made_safe),
    CHECK_CASE(word_and_quoted_rules),
    CHECK_CASE(cost_centre_redefinition_replaces),
    CHECK_CASE(hp_cost_centre_stack_names),
    CHECK_CASE(hp_no_samples_is_empty_but_valid),
    CHECK_CASE(prof_report_is_exact),
    CHECK_CASE(prof_flush_reports_so_far),
    CHECK_CASE(prof_no_samples_is_empty_but_valid),
    CHECK_CASE(hp_residency_beyond_32_bits),
    CHECK_CASE(prof_long_name_is_bounded),
    CHECK_CASE(stacks_cost_linear_work),
    CHECK_CASE(hp_stacks_beyond_the_cap_are_other),
    CHECK_CASE(prof_nodes_beyond_the_cap_are_other),
};

CHECK_MAIN(cases)
