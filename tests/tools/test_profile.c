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
    uint8_t b[512];
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

static void feed(uint16_t tag, uint64_t t, const struct pl *p)
{
    struct els_event ev = { .tag = tag, .time = t, .cap = 0, .payload = p->b,
                            .payload_len = p->n, .offset = 0 };
    if (hp != NULL)
        CHECK_OK(profile_hp_event(hp, &ev));
    if (pp != NULL)
        CHECK_OK(profile_prof_event(pp, &ev));
}

/* PROGRAM_ARGS: n bytes of NUL-separated arguments. */
static void ev_args(const char *args, size_t n)
{
    struct pl p = { .n = 0 };
    pl_uint(&p, 1, 4);
    pl_bytes(&p, args, n);
    feed(ELS_EV_PROGRAM_ARGS, 0, &p);
}

/* WALL_CLOCK_TIME: the clock read sec at t ns after the RTS's start. */
static void ev_clock(uint64_t t, uint64_t sec)
{
    struct pl p = { .n = 0 };
    pl_uint(&p, 1, 4);
    pl_uint(&p, sec, 8);
    pl_uint(&p, 0, 4);
    feed(ELS_EV_WALL_CLOCK_TIME, t, &p);
}

static void ev_cc(uint32_t id, const char *label, const char *module, const char *src)
{
    struct pl p = { .n = 0 };
    pl_uint(&p, id, 4);
    pl_cstr(&p, label);
    pl_cstr(&p, module);
    pl_cstr(&p, src);
    pl_uint(&p, 0, 1);
    feed(ELS_EV_HEAP_PROF_COST_CENTRE, 0, &p);
}

static void ev_heap_begin(uint64_t t, uint64_t era)
{
    struct pl p = { .n = 0 };
    pl_uint(&p, era, 8);
    feed(ELS_EV_HEAP_PROF_SAMPLE_BEGIN, t, &p);
}

static void ev_heap_end(uint64_t t, uint64_t era)
{
    struct pl p = { .n = 0 };
    pl_uint(&p, era, 8);
    feed(ELS_EV_HEAP_PROF_SAMPLE_END, t, &p);
}

static void ev_heap_string(uint64_t t, const char *label, uint64_t bytes)
{
    struct pl p = { .n = 0 };
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
    struct pl p = { .n = 0 };
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
    struct pl p = { .n = 0 };
    pl_uint(&p, tick_ns, 8);
    feed(ELS_EV_PROF_BEGIN, 0, &p);
}

/* count ticks of cap, each charged to the stack given. */
static void ev_ticks(unsigned count, uint32_t cap, unsigned depth, ...)
{
    for (unsigned k = 0; k < count; k++) {
        struct pl p = { .n = 0 };
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
    ev_heap_ccs(1000000000u, 7, 1, 5u);
    ev_heap_end(1000000000u, 1);
    CHECK_OK(profile_hp_finish(hp, false));
    profile_hp_free(hp);
    hp = NULL;
    char *got = slurp(path);
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
    CHECK_CONTAINS(r, "\n second     B      b.hs:2          1           0  100.0    0.0   100.0    0.0\n");
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
 * 40%, helper<main 10%.  By cost centre: helper 4+1 = 50%, work 30%,
 * main 20%.  Widths: COST CENTRE 11 (the widest label plus depth is
 * helper at depth 3, 9), MODULE 6, SRC 10 ("<built-in>").
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
        "\tRebuilt from an eventlog by eventlog-sink dump --prof: the eventlog\n"
        "\tcarries time samples, not entry counts or allocation; both are\n"
        "\tshown as 0, and \"no.\" numbers this report's nodes, not the RTS's.\n"
        "\tAs in the RTS's report, the 5 ticks of GC, IDLE, SYSTEM and\n"
        "\tprofiling overhead are left out.\n\n"
        "\ttotal time  =         0.05 secs   (10 ticks @ 10000 us, 2 processors)\n"
        "\ttotal alloc =           0 bytes  (not in the eventlog)\n\n"
        "COST CENTRE MODULE SRC         %time %alloc\n\n"
        "helper      Main   a.hs:3       50.0    0.0\n"
        "work        Main   a.hs:2       30.0    0.0\n"
        "main        Main   a.hs:1       20.0    0.0\n"
        "\n\n"
        "                                                    individual      inherited\n"
        "COST CENTRE MODULE SRC           no.     entries  %time %alloc   %time %alloc\n\n"
        "MAIN        MAIN   <built-in>      0           0    0.0    0.0   100.0    0.0\n"
        " main       Main   a.hs:1          1           0   20.0    0.0   100.0    0.0\n"
        "  work      Main   a.hs:2          2           0   30.0    0.0    70.0    0.0\n"
        "   helper   Main   a.hs:3          3           0   40.0    0.0    40.0    0.0\n"
        "  helper    Main   a.hs:3          4           0   10.0    0.0    10.0    0.0\n");
    free(got);
}

/* flush() rewrites the report only when ticks arrived since the last. */
static void prof_flush_reports_so_far(void)
{
    const char *path = check_path("live.prof");
    CHECK_OK(profile_prof_open(&pp, path, NULL));
    fixed_run();
    ev_cc(1, "main", "Main", "a.hs:1");
    ev_ticks(3, 0, 1, 1u);
    CHECK_OK(profile_prof_flush(pp));
    char *got = slurp(path);
    CHECK_CONTAINS(got, "Profiling Report  (so far)\n");
    CHECK_CONTAINS(got, "(3 ticks @ 1000 us, 1 processor)\n");
    free(got);
    CHECK_OK(unlink(path));
    CHECK_OK(profile_prof_flush(pp));   /* nothing new: not rewritten */
    CHECK(access(path, F_OK) != 0);
    ev_ticks(1, 0, 1, 1u);
    CHECK_OK(profile_prof_flush(pp));
    got = slurp(path);
    CHECK_CONTAINS(got, "(4 ticks @ 1000 us, 1 processor)\n");
    free(got);
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
        "\tRebuilt from an eventlog by eventlog-sink dump --prof: the eventlog\n"
        "\tcarries time samples, not entry counts or allocation; both are\n"
        "\tshown as 0, and \"no.\" numbers this report's nodes, not the RTS's.\n"
        "\tAs in the RTS's report, the 0 ticks of GC, IDLE, SYSTEM and\n"
        "\tprofiling overhead are left out.\n\n"
        "\ttotal time  =         0.00 secs   (0 ticks @ 1000 us, 1 processor)\n"
        "\ttotal alloc =           0 bytes  (not in the eventlog)\n\n"
        "COST CENTRE MODULE SRC         %time %alloc\n\n"
        "\n\n"
        "                                                    individual      inherited\n"
        "COST CENTRE MODULE SRC           no.     entries  %time %alloc   %time %alloc\n\n"
        "MAIN        MAIN   <built-in>      0           0    0.0    0.0     0.0    0.0\n");
    CHECK_CONTAINS(note, "holds no time profile samples");
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
};

CHECK_MAIN(cases)
