/*
 * test_registry.c: the sink registry (lib/sinks/registry.c).
 *
 * The built-in schemes are present from the first call; every validation
 * rule of els_sink_register() refuses a table that breaks it (and logs
 * why); schemes are matched exactly; a taken scheme cannot be replaced;
 * the registry reports when it is full; and registration and lookup from
 * many threads at once, including the very first call, are consistent.
 */
#include <pthread.h>

#include "check.h"
#include "eventlog-sink.h"
#include "base/log.h"
#include "sinks/sinks.h"
#include "sinks/spec.h"

static int t_open(void **sink, const struct els_sink_args *args)
{
    (void)args;
    *sink = NULL;
    return 0;
}

static void t_close(void *sink)
{
    (void)sink;
}

static int t_listen_fd(void *sink)
{
    (void)sink;
    return -1;
}

static int t_accept(void *sink, int *fd)
{
    (void)sink;
    (void)fd;
    return -EAGAIN;
}

static int t_dump_open(void *sink, enum els_dump_reason why, int *fd,
                       char *name, size_t len)
{
    (void)sink; (void)why; (void)fd; (void)name; (void)len;
    return -ECANCELED;
}

static int t_dial(void *sink, int *fd)
{
    (void)sink;
    (void)fd;
    return -EAGAIN;
}

static int t_write(void *sink, const void *buf, size_t len)
{
    (void)sink;
    (void)buf;
    (void)len;
    return 0;
}

static struct els_sink_ops callback_ops(const char *scheme)
{
    struct els_sink_ops ops = {
        .struct_size = sizeof(struct els_sink_ops), .scheme = scheme,
        .style = ELS_SINK_CALLBACK,
        .open = t_open, .close = t_close, .write = t_write,
    };
    return ops;
}

/* A table with static lifetime, as the registry requires. */
static const struct els_sink_ops *keep(struct els_sink_ops ops)
{
    struct els_sink_ops *p = malloc(sizeof *p);
    CHECK(p != NULL);
    *p = ops;
    return p;
}

static char last_log[1024];

static void capture_hook(void *user, enum els_log_level level,
                         const char *message)
{
    (void)user;
    (void)level;
    snprintf(last_log, sizeof last_log, "%s", message);
}

/* ops must be refused with code, say why (needle) through the log hook,
 * and leave nothing registered. */
static void refused_(int line, struct els_sink_ops ops, int code,
                     const char *needle)
{
    els_set_log_hook(capture_hook, NULL, ELS_LOG_DEBUG);
    last_log[0] = '\0';
    const struct els_sink_ops *p = keep(ops);
    int rc = els_sink_register(p);
    if (rc != code)
        check_fail_(__FILE__, line, "returned %d, wanted %d (log: %s)", rc,
                    code, last_log);
    if (strstr(last_log, needle) == NULL)
        check_fail_(__FILE__, line, "log does not contain \"%s\": \"%s\"",
                    needle, last_log);
    if (ops.scheme != NULL && els_sink_lookup(ops.scheme) == p)
        check_fail_(__FILE__, line, "refused table was registered");
    free((void *)p);    /* refused: the registry kept no pointer to it */
}
#define REFUSED(ops, code, needle) refused_(__LINE__, ops, code, needle)

static void builtins_are_registered(void)
{
    static const struct {
        const char *scheme;
        const struct els_sink_ops *ops;
    } want[] = {
        { "unix", &elsi_sink_unix },
        { "unix-connect", &elsi_sink_unix_connect },
        { "tcp", &elsi_sink_tcp },
        { "tcp-connect", &elsi_sink_tcp_connect },
        { "fifo", &elsi_sink_fifo },
        { "file", &elsi_sink_file },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        CHECK(els_sink_lookup(want[i].scheme) == want[i].ops);
        CHECK_STR(want[i].ops->scheme, want[i].scheme);
    }
    char names[256];
    int n = elsi_registry_names(names, sizeof names);
    CHECK_STR(names, "unix, unix-connect, tcp, tcp-connect, fifo, file, ring");
    CHECK_INT(n, ==, (int)strlen(names));

    /* Like snprintf when the buffer is short. */
    char small[8];
    CHECK_INT(elsi_registry_names(small, sizeof small), ==, n);
    CHECK_STR(small, "unix, u");
    CHECK_INT(elsi_registry_names(NULL, 0), ==, n);
}

static void lookup_is_exact(void)
{
    static const char *const near_misses[] = {
        "un", "uni", "unixx", "unix ", " unix", "UNIX", "Unix", "tc",
        "tcpp", "tcp-", "tcp-connec", "tcp-connectx", "fifo:", "", "file/",
    };
    for (size_t i = 0; i < sizeof near_misses / sizeof near_misses[0]; i++)
        CHECK_MSG(els_sink_lookup(near_misses[i]) == NULL,
                  "lookup(\"%s\") matched", near_misses[i]);
    CHECK(els_sink_lookup(NULL) == NULL);
}

static void custom_sink_registers_and_is_found(void)
{
    static const char *const opts[] = { "level", "tag_name", NULL };
    struct els_sink_ops ops = callback_ops("my.sink+v2-x");
    ops.options = opts;
    const struct els_sink_ops *p = keep(ops);
    CHECK(els_sink_lookup("my.sink+v2-x") == NULL);
    CHECK_OK(els_sink_register(p));
    CHECK(els_sink_lookup("my.sink+v2-x") == p);
    CHECK(els_sink_lookup("my.sink+v2") == NULL);
    char names[256];
    elsi_registry_names(names, sizeof names);
    CHECK_CONTAINS(names, "file, ring, my.sink+v2-x");

    /* The other styles register too. */
    struct els_sink_ops l = {
        .struct_size = sizeof(struct els_sink_ops), .scheme = "my-listen",
        .style = ELS_SINK_LISTEN, .open = t_open, .close = t_close,
        .listen_fd = t_listen_fd, .accept = t_accept,
    };
    CHECK_OK(els_sink_register(keep(l)));
    struct els_sink_ops d = {
        .struct_size = sizeof(struct els_sink_ops), .scheme = "my-dial",
        .style = ELS_SINK_DIAL, .open = t_open, .close = t_close,
        .dial = t_dial,
    };
    CHECK_OK(els_sink_register(keep(d)));
    CHECK(els_sink_lookup("my-listen") != NULL);
    CHECK(els_sink_lookup("my-dial") != NULL);

    /* A 31-byte scheme is the longest allowed. */
    CHECK_OK(els_sink_register(keep(callback_ops(
        "abcdefghijklmnopqrstuvwxyzabcde"))));

    /* The registry keeps its own copy of the scheme for lookups. */
    char scheme[16] = "volatile";
    struct els_sink_ops v = callback_ops(scheme);
    CHECK_OK(els_sink_register(keep(v)));
    strcpy(scheme, "changed!");
    CHECK(els_sink_lookup("volatile") != NULL);
}

static void table_validation(void)
{
    els_set_log_hook(capture_hook, NULL, ELS_LOG_DEBUG);
    CHECK_INT(els_sink_register(NULL), ==, ELS_EINVAL);
    CHECK_CONTAINS(last_log, "ops table is NULL");

    /* struct_size: garbage (0, below the first release's table, far
     * above anything the table could grow to) is refused. */
    struct els_sink_ops o = callback_ops("v-abi");
    static const size_t garbage[] = {
        0, 1, 8, ELS_SINK_OPS_MIN_SIZE - 1, ELS_SINK_OPS_MAX_SIZE + 1,
        (size_t)0x100000000ull, (size_t)-1,
    };
    for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++) {
        o.struct_size = garbage[i];
        char needle[64];
        snprintf(needle, sizeof needle, "struct_size %zu;", garbage[i]);
        REFUSED(o, ELS_EVERSION, needle);
    }

    static const char *const bad_schemes[] = {
        "", "Abc", "aBc", "1abc", "-abc", "+abc", ".abc", "a b", "a_b", "a:b",
        "a/b", "abc ", "abcdefghijklmnopqrstuvwxyzabcdef",
    };
    for (size_t i = 0; i < sizeof bad_schemes / sizeof bad_schemes[0]; i++)
        REFUSED(callback_ops(bad_schemes[i]), ELS_EINVAL,
                "is not [a-z][a-z0-9+.-]*");
    REFUSED(callback_ops(NULL), ELS_EINVAL, "no scheme");

    o = callback_ops("v-open");
    o.open = NULL;
    REFUSED(o, ELS_EINVAL, "sink v-open: open is required");
    o = callback_ops("v-close");
    o.close = NULL;
    REFUSED(o, ELS_EINVAL, "sink v-close: close is required");
}

/* A table as a sink built against the first release's header has it:
 * exactly ELS_SINK_OPS_MIN_SIZE bytes, in a block of that size (a read
 * past it is an ASan report), registers; the registry keeps a copy with
 * the members added since (dump_open) absent, so the block may go. */
static void struct_size_first_release(void)
{
    struct els_sink_ops full = callback_ops("v-first");
    full.struct_size = ELS_SINK_OPS_MIN_SIZE;
    struct els_sink_ops *p = malloc(ELS_SINK_OPS_MIN_SIZE);
    CHECK(p != NULL);
    memcpy(p, &full, ELS_SINK_OPS_MIN_SIZE);
    CHECK_OK(els_sink_register(p));
    free(p);
    const struct els_sink_ops *got = els_sink_lookup("v-first");
    CHECK(got != NULL);
    CHECK(got->write == t_write);
    CHECK(got->open == t_open);
    CHECK(got->dump_open == NULL);
}

/* A newer table (a sink built against a header with more members than
 * this library knows) registers; the members past ours are ignored. */
static void struct_size_newer(void)
{
    struct newer {
        struct els_sink_ops ops;
        int (*later)(void *sink);
        char more[64];
    };
    struct newer *n = calloc(1, sizeof *n);
    CHECK(n != NULL);
    n->ops = callback_ops("v-newer");
    n->ops.struct_size = sizeof *n;
    memset(n->more, 0xa5, sizeof n->more);
    CHECK_OK(els_sink_register(&n->ops));
    CHECK(els_sink_lookup("v-newer") == &n->ops);
}

/* The day members are appended, a table of the old size registers with
 * the new members absent whatever bytes follow it in memory.  Stood for
 * here by a smaller minimum: a table cut after write (as if flush and
 * endpoint had come in a later release), followed by garbage. */
static void struct_size_older_reads_members_as_absent(void)
{
    size_t old_size = offsetof(struct els_sink_ops, flush);
    struct els_sink_ops t = callback_ops("v-older");
    t.struct_size = old_size;
    uint8_t *block = malloc(sizeof t);
    CHECK(block != NULL);
    memset(block, 0xa5, sizeof t);          /* garbage where flush... */
    memcpy(block, &t, old_size);            /* ...and endpoint would be */
    struct els_sink_ops out;
    char why[256];
    CHECK_INT(elsi_sink_ops_import((const struct els_sink_ops *)block,
                                   old_size, &out, why, sizeof why), ==, 1);
    CHECK(out.write == t_write && out.open == t_open);
    CHECK(out.flush == NULL);
    CHECK(out.endpoint == NULL);
    CHECK_U64(out.struct_size, ==, old_size);
    /* Below that minimum: refused. */
    t.struct_size = old_size - 1;
    memcpy(block, &t, sizeof t.struct_size);
    CHECK_INT(elsi_sink_ops_import((const struct els_sink_ops *)block,
                                   old_size, &out, why, sizeof why), ==,
              ELS_EVERSION);
    CHECK_CONTAINS(why, "struct_size");
    /* A full-size table is used as is. */
    t = callback_ops("v-full");
    CHECK_INT(elsi_sink_ops_import(&t, old_size, &out, why, sizeof why), ==, 0);
    free(block);
}

static void style_members_validation(void)
{
    const struct els_sink_ops listen = {
        .struct_size = sizeof(struct els_sink_ops), .scheme = "v-listen",
        .style = ELS_SINK_LISTEN, .open = t_open, .close = t_close,
        .listen_fd = t_listen_fd, .accept = t_accept,
    };
    const struct els_sink_ops dial = {
        .struct_size = sizeof(struct els_sink_ops), .scheme = "v-dial",
        .style = ELS_SINK_DIAL, .open = t_open, .close = t_close,
        .dial = t_dial,
    };
    const struct els_sink_ops cb = callback_ops("v-cb");
    struct els_sink_ops o;

    o = listen; o.accept = NULL;
    REFUSED(o, ELS_EINVAL, "style LISTEN requires listen_fd and accept");
    o = listen; o.listen_fd = NULL;
    REFUSED(o, ELS_EINVAL, "style LISTEN requires");
    o = listen; o.dial = t_dial;
    REFUSED(o, ELS_EINVAL, "style LISTEN must leave dial and write NULL");
    o = listen; o.write = t_write;
    REFUSED(o, ELS_EINVAL, "style LISTEN must leave");

    o = dial; o.dial = NULL;
    REFUSED(o, ELS_EINVAL, "style DIAL requires dial");
    o = dial; o.accept = t_accept;
    REFUSED(o, ELS_EINVAL, "style DIAL must leave listen_fd, accept");
    o = dial; o.listen_fd = t_listen_fd;
    REFUSED(o, ELS_EINVAL, "style DIAL must leave");
    o = dial; o.write = t_write;
    REFUSED(o, ELS_EINVAL, "style DIAL must leave");

    o = cb; o.write = NULL;
    REFUSED(o, ELS_EINVAL, "style CALLBACK requires write");
    o = cb; o.dial = t_dial;
    REFUSED(o, ELS_EINVAL, "style CALLBACK must leave");
    o = cb; o.accept = t_accept;
    REFUSED(o, ELS_EINVAL, "style CALLBACK must leave");
    o = cb; o.listen_fd = t_listen_fd;
    REFUSED(o, ELS_EINVAL, "style CALLBACK must leave");

    o = cb; o.style = (enum els_sink_style)0;
    REFUSED(o, ELS_EINVAL, "unknown style 0");
    o = cb; o.style = (enum els_sink_style)5;
    REFUSED(o, ELS_EINVAL, "unknown style 5");
    o = cb; o.style = ELS_SINK_RECORD; o.write = NULL;
    REFUSED(o, ELS_EINVAL, "style RECORD requires dump_open");
    o = cb; o.style = ELS_SINK_RECORD; o.dump_open = t_dump_open;
    REFUSED(o, ELS_EINVAL, "style RECORD must leave accept, dial and write NULL");

    /* Optional members are optional for every style. */
    o = listen; o.flush = NULL; o.endpoint = NULL;
    CHECK_OK(els_sink_register(keep(o)));
    o = dial;
    CHECK_OK(els_sink_register(keep(o)));
    o = cb;
    CHECK_OK(els_sink_register(keep(o)));
}

static void option_name_validation(void)
{
    static const char *const bad[][3] = {
        { "Mode", NULL, "option name \"Mode\" is not" },
        { "", NULL, "option name \"\" is not" },
        { "a b", NULL, "option name \"a b\"" },
        { "1x", NULL, "option name \"1x\"" },
        { "a=b", NULL, "option name \"a=b\"" },
        { "a%b", NULL, "option name \"a%b\"" },
        { "abcdefghijklmnopqrstuvwxyzabcdef", NULL, "at most 31 bytes" },
        { "buffer", NULL, "option 'buffer' is common to all sinks" },
        { "policy", NULL, "option 'policy' is common" },
        { "wait", NULL, "option 'wait' is common" },
        { "linger", NULL, "option 'linger' is common" },
        { "mode", "mode", "option 'mode' is declared twice" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char **opts = calloc(3, sizeof *opts);
        CHECK(opts != NULL);
        opts[0] = bad[i][0];
        opts[1] = bad[i][1];
        struct els_sink_ops o = callback_ops("v-opt");
        o.options = opts;
        REFUSED(o, ELS_EINVAL, bad[i][2]);
        free(opts);
    }
    static const char *const good[] = {
        "mode", "a", "tag_name", "x-y", "abcdefghijklmnopqrstuvwxyzabcde",
        NULL,
    };
    struct els_sink_ops o = callback_ops("v-opt");
    o.options = good;
    CHECK_OK(els_sink_register(keep(o)));
    o = callback_ops("v-noopt");
    static const char *const none[] = { NULL };
    o.options = none;
    CHECK_OK(els_sink_register(keep(o)));
}

static void taken_schemes_are_not_replaced(void)
{
    els_set_log_hook(capture_hook, NULL, ELS_LOG_DEBUG);
    /* A built-in scheme cannot be displaced by a custom table... */
    REFUSED(callback_ops("tcp"), ELS_EEXIST, "scheme tcp is already registered");
    CHECK(els_sink_lookup("tcp") == &elsi_sink_tcp);
    /* ...nor re-registered with its own table. */
    CHECK_INT(els_sink_register(&elsi_sink_unix), ==, ELS_EEXIST);

    const struct els_sink_ops *first = keep(callback_ops("mine"));
    CHECK_OK(els_sink_register(first));
    CHECK_INT(els_sink_register(first), ==, ELS_EEXIST);
    REFUSED(callback_ops("mine"), ELS_EEXIST, "already registered");
    CHECK(els_sink_lookup("mine") == first);
}

static void full_registry_says_so(void)
{
    els_set_log_hook(capture_hook, NULL, ELS_LOG_DEBUG);
    int added = 0, rc = 0;
    const struct els_sink_ops *tables[1000];
    for (int i = 0; i < 1000; i++) {
        char *scheme = malloc(32);
        CHECK(scheme != NULL);
        snprintf(scheme, 32, "fill%d", i);
        tables[i] = keep(callback_ops(scheme));
        rc = els_sink_register(tables[i]);
        if (rc != 0)
            break;
        added++;
    }
    CHECK_INT(rc, ==, -ENOSPC);
    CHECK_CONTAINS(last_log, "registry is full");
    CHECK_INT(added, >, 0);
    /* Everything registered before stays found, and the built-ins too. */
    for (int i = 0; i < added; i++)
        CHECK(els_sink_lookup(tables[i]->scheme) == tables[i]);
    CHECK(els_sink_lookup("unix") == &elsi_sink_unix);
    CHECK(els_sink_lookup(tables[added]->scheme) == NULL);
    free((void *)tables[added]->scheme);    /* refused: not kept */
    free((void *)tables[added]);
    /* Still full; a duplicate is still a duplicate. */
    const struct els_sink_ops *late = keep(callback_ops("late"));
    const struct els_sink_ops *dup = keep(callback_ops("fill0"));
    CHECK_INT(els_sink_register(late), ==, -ENOSPC);
    CHECK_INT(els_sink_register(dup), ==, ELS_EEXIST);
    free((void *)late);
    free((void *)dup);
}

/* ------------------------------------------------------------------------
 * Concurrency
 * ------------------------------------------------------------------------ */

#define N_THREADS 8
#define PER_THREAD 6

static pthread_barrier_t start_line;

struct reg_thread {
    int index;
    int own_failures;
    int shared_rc;
    const struct els_sink_ops *own[PER_THREAD];
    const struct els_sink_ops *shared;
};

static void *register_thread(void *arg)
{
    struct reg_thread *t = arg;
    pthread_barrier_wait(&start_line);
    /* Everyone races for the same scheme first, then registers its own
     * while the others look things up. */
    t->shared_rc = els_sink_register(t->shared);
    for (int i = 0; i < PER_THREAD; i++) {
        if (els_sink_register(t->own[i]) != 0)
            t->own_failures++;
        if (els_sink_lookup(t->own[i]->scheme) != t->own[i])
            t->own_failures++;
        if (els_sink_lookup("tcp") != &elsi_sink_tcp)
            t->own_failures++;
    }
    return NULL;
}

static void concurrent_registration(void)
{
    struct reg_thread t[N_THREADS];
    pthread_t tid[N_THREADS];
    els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);   /* the losers' EEXIST */
    CHECK_INT(pthread_barrier_init(&start_line, NULL, N_THREADS), ==, 0);
    for (int i = 0; i < N_THREADS; i++) {
        memset(&t[i], 0, sizeof t[i]);
        t[i].index = i;
        t[i].shared = keep(callback_ops("shared"));
        for (int j = 0; j < PER_THREAD; j++) {
            char *scheme = malloc(32);
            CHECK(scheme != NULL);
            snprintf(scheme, 32, "t%d-%d", i, j);
            t[i].own[j] = keep(callback_ops(scheme));
        }
    }
    /* Before the built-ins exist: the first calls of all come at once. */
    for (int i = 0; i < N_THREADS; i++)
        CHECK_INT(pthread_create(&tid[i], NULL, register_thread, &t[i]), ==, 0);
    for (int i = 0; i < N_THREADS; i++)
        CHECK_INT(pthread_join(tid[i], NULL), ==, 0);

    int winners = 0;
    const struct els_sink_ops *winner = NULL;
    for (int i = 0; i < N_THREADS; i++) {
        CHECK_INT(t[i].own_failures, ==, 0);
        if (t[i].shared_rc == 0) {
            winners++;
            winner = t[i].shared;
        } else {
            CHECK_INT(t[i].shared_rc, ==, ELS_EEXIST);
            free((void *)t[i].shared);  /* refused: not kept */
        }
        for (int j = 0; j < PER_THREAD; j++)
            CHECK(els_sink_lookup(t[i].own[j]->scheme) == t[i].own[j]);
    }
    CHECK_INT(winners, ==, 1);
    CHECK(els_sink_lookup("shared") == winner);

    /* The built-ins came first, once each, and every name appears once. */
    char names[2048];
    elsi_registry_names(names, sizeof names);
    CHECK_INT(strncmp(names, "unix, unix-connect, tcp, tcp-connect, fifo, "
                      "file, ", 44), ==, 0);
    int commas = 0;
    for (const char *p = names; *p != '\0'; p++)
        commas += *p == ',';
    CHECK_INT(commas + 1, ==, 7 + 1 + N_THREADS * PER_THREAD);
}

static const struct check_case cases[] = {
    CHECK_CASE(builtins_are_registered),
    CHECK_CASE(lookup_is_exact),
    CHECK_CASE(custom_sink_registers_and_is_found),
    CHECK_CASE(table_validation),
    CHECK_CASE(struct_size_first_release),
    CHECK_CASE(struct_size_newer),
    CHECK_CASE(struct_size_older_reads_members_as_absent),
    CHECK_CASE(style_members_validation),
    CHECK_CASE(option_name_validation),
    CHECK_CASE(taken_schemes_are_not_replaced),
    CHECK_CASE(full_registry_says_so),
    CHECK_CASE(concurrent_registration),
};

CHECK_MAIN(cases)
