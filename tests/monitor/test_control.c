/*
 * test_control.c: the monitor's control actions (tools/monitor/control.c)
 * over the shared client (tools/monitor/ctlclient.c), against a real writer with
 * control=1 on a UNIX socket.  The program's commands flush, get-classes
 * and set-classes are stood in for by commands this test registers under
 * those names (the library's own are built in only with the runtime
 * control parts), so the class toggle's two steps, the answers' text and
 * JSON, the allowlist, control off, and a new session after the program
 * closed the old one are checked whatever the build has.  Without an
 * action, mon_control_poll() opens the session when the program's stream
 * connects (a monitor started before its program), again after the
 * program closed it, retries with backoff while the program's socket is
 * missing, and tries nothing while the stream is down or after a hello
 * that got no answer (a sink without control=1).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "eventlog-sink.h"
#include "eventlog-sink/control.h"
#include "monitor/control.h"
#include "tool.h"

/* control.c reports a usage error through main.c's function. */
int tool_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return TOOL_EXIT_USAGE;
}

static char classes[16] = "sgpu";
static unsigned flushes;

static int fake_get_classes(void *user, const char *args, char *out, size_t len)
{
    (void)user;
    (void)args;
    snprintf(out, len, "%s", classes);
    return 0;
}

/* "+X" or "-X" only: what toggle-class sends. */
static int fake_set_classes(void *user, const char *args, char *out, size_t len)
{
    (void)user;
    if ((args[0] != '+' && args[0] != '-') || args[1] == '\0' || args[2] != '\0') {
        snprintf(out, len, "expected +X or -X, not '%s'", args);
        return ELS_EINVAL;
    }
    char now[16] = "";
    size_t k = 0;
    for (const char *l = MON_CTL_CLASSES; *l != '\0'; l++) {
        bool on = strchr(classes, *l) != NULL;
        if (*l == args[1])
            on = args[0] == '+';
        if (on)
            now[k++] = *l;
    }
    memcpy(classes, now, sizeof now);
    snprintf(out, len, "%s", classes);
    return 0;
}

static int fake_flush(void *user, const char *args, char *out, size_t len)
{
    (void)user;
    (void)args;
    (void)out;
    (void)len;
    flushes++;
    return 0;
}

static struct els_writer *open_writer(char *spec, size_t len)
{
    snprintf(spec, len, "unix:%s/c.sock", check_dir);
    char full[700], err[256];
    snprintf(full, sizeof full, "%s?control=1", spec);
    struct els_writer *w = NULL;
    CHECK_INT(els_writer_open(full, &w, err, sizeof err), ==, 0);
    return w;
}

static const char *text_of(const struct mon_ctl_result *r, struct strbuf *sb)
{
    sb_clear(sb);
    mon_control_result_text(r, sb);
    CHECK(!sb->failed);
    return sb->p;
}

static void test_actions(void)
{
    CHECK_INT(els_control_register("fake", 1, "get-classes", fake_get_classes,
                                   NULL), ==, 0);
    CHECK_INT(els_control_register("fake", 2, "set-classes", fake_set_classes,
                                   NULL), ==, 0);
    CHECK_INT(els_control_register("fake", 3, "flush", fake_flush, NULL), ==, 0);
    char spec[600];
    struct els_writer *w = open_writer(spec, sizeof spec);
    static struct mon_control mc;
    CHECK_INT(mon_control_init(&mc, "test", spec, NULL), ==, 0);
    CHECK(mon_control_ready(&mc));
    struct mon_ctl_result r;
    struct strbuf sb = { 0 };

    CHECK_INT(mon_control_run(&mc, "classes", "", &r), ==, 0);
    CHECK_STR(text_of(&r, &sb), "classes: ok: sgpu");
    CHECK_INT(mon_control_run(&mc, "toggle-class", "g", &r), ==, 0);
    CHECK_STR(r.command, "set-classes -g");
    CHECK_STR(text_of(&r, &sb), "toggle-class g: ok: spu");
    CHECK_INT(mon_control_run(&mc, "toggle-class", "g", &r), ==, 0);
    CHECK_STR(r.command, "set-classes +g");
    CHECK_STR(text_of(&r, &sb), "toggle-class g: ok: sgpu");
    CHECK_INT(mon_control_run(&mc, "toggle-class", "f", &r), ==, 0);
    CHECK_STR(text_of(&r, &sb), "toggle-class f: ok: sgpfu");

    CHECK_INT(mon_control_run(&mc, "flush", "", &r), ==, 0);
    CHECK_STR(text_of(&r, &sb), "flush: ok");
    CHECK_INT(flushes, ==, 1);
    sb_clear(&sb);
    mon_control_result_json(&r, &sb);
    CHECK_STR(sb.p, "{\"action\":\"flush\",\"command\":\"flush\",\"ok\":true,"
              "\"status\":0,\"error\":null,\"result\":\"\"}");

    /* A command this program lacks: the error answer, cleanly. */
    CHECK_INT(mon_control_run(&mc, "snapshot", "", &r), ==, ELS_EINVAL);
    CHECK_STR(text_of(&r, &sb), "snapshot: ELS_EINVAL: unknown command (send "
              "\"help\" for the list)");
    sb_clear(&sb);
    mon_control_result_json(&r, &sb);
    CHECK_CONTAINS(sb.p, "\"ok\":false,\"status\":-22,\"error\":\"ELS_EINVAL\"");

    CHECK_INT(mon_control_run(&mc, "status", "", &r), ==, 0);
    CHECK_CONTAINS(text_of(&r, &sb), "status: ok: running on unix:");
    sb_clear(&sb);
    mon_control_json(&mc, &sb);
    CHECK_CONTAINS(sb.p, "{\"enabled\":true,\"ready\":true,");
    CHECK_CONTAINS(sb.p, "\"last\":{\"action\":\"status\"");

    /* The program closes the session (its stream ended); the next action
     * opens a new one with the program's next writer. */
    CHECK_INT(els_writer_close(w), ==, 0);
    for (int i = 0; i < 1000 && mon_control_ready(&mc); i++)
        usleep(10000);
    CHECK(!mon_control_ready(&mc));
    CHECK_CONTAINS(mc.state, "the program closed the session");
    w = open_writer(spec, sizeof spec);
    CHECK_INT(mon_control_run(&mc, "status", "", &r), ==, 0);
    CHECK_CONTAINS(r.text, "running on unix:");
    CHECK(mon_control_ready(&mc));
    mon_control_close(&mc);
    CHECK_INT(els_writer_close(w), ==, 0);

    /* Nobody there: the reason, no session. */
    CHECK_INT(mon_control_run(&mc, "status", "", &r), <, 0);
    CHECK_CONTAINS(r.text, "c.sock");
    CHECK(!mon_control_ready(&mc));
    sb_free(&sb);
}

/* The session follows the stream without a key: see Note [Following the
 * stream] in control.c. */
static void test_follow_stream(void)
{
    static struct mon_control mc;
    char spec[600];
    snprintf(spec, sizeof spec, "unix:%s/c.sock", check_dir);
    /* Started before the program: no socket yet. */
    CHECK_INT(mon_control_init(&mc, "test", spec, NULL), ==, 0);
    CHECK(!mon_control_ready(&mc));
    CHECK_CONTAINS(mc.state, "not connected");
    uint64_t now = 1000;
    mon_control_poll(&mc, now, 0, false);
    CHECK(!mon_control_ready(&mc));
    CHECK(mon_control_wait_ms(&mc, now) == UINT64_MAX);

    /* The program comes; the stream connects (its first open): the
     * session opens, no action needed. */
    struct els_writer *w = open_writer(spec, sizeof spec);
    mon_control_poll(&mc, now, 1, true);
    CHECK(mon_control_ready(&mc));
    CHECK_CONTAINS(mc.state, "connected to unix:");
    CHECK_CONTAINS(mc.state, "c.sock");
    CHECK(mon_control_wait_ms(&mc, now) == UINT64_MAX);

    /* The program ends: the session closes; nothing is tried while the
     * stream is down. */
    CHECK_INT(els_writer_close(w), ==, 0);
    for (int i = 0; i < 1000 && mon_control_ready(&mc); i++)
        usleep(10000);
    mon_control_poll(&mc, now, 1, false);
    CHECK(!mon_control_ready(&mc));
    CHECK(mon_control_wait_ms(&mc, now) == UINT64_MAX);
    /* Its next run: the stream's second open brings the session back. */
    w = open_writer(spec, sizeof spec);
    mon_control_poll(&mc, now, 2, true);
    CHECK(mon_control_ready(&mc));

    /* A stream up while the socket is gone (the program between two
     * runs): retried, 250 ms, then 500 ms later, until it is back. */
    CHECK_INT(els_writer_close(w), ==, 0);
    for (int i = 0; i < 1000 && mon_control_ready(&mc); i++)
        usleep(10000);
    mon_control_poll(&mc, now, 3, true);
    CHECK(!mon_control_ready(&mc));
    CHECK_CONTAINS(mc.state, "retrying in 0.25 s");
    CHECK(mon_control_wait_ms(&mc, now) == MON_CTL_RETRY_MIN_MS);
    mon_control_poll(&mc, now + 100, 3, true);      /* not due yet */
    CHECK(mon_control_wait_ms(&mc, now + 100) == MON_CTL_RETRY_MIN_MS - 100);
    now += MON_CTL_RETRY_MIN_MS;
    mon_control_poll(&mc, now, 3, true);
    CHECK(!mon_control_ready(&mc));
    CHECK(mon_control_wait_ms(&mc, now) == 2 * MON_CTL_RETRY_MIN_MS);
    w = open_writer(spec, sizeof spec);
    now += 2 * MON_CTL_RETRY_MIN_MS;
    mon_control_poll(&mc, now, 3, true);
    CHECK(mon_control_ready(&mc));
    CHECK(mon_control_wait_ms(&mc, now) == UINT64_MAX);
    mon_control_close(&mc);
    CHECK_INT(els_writer_close(w), ==, 0);

    /* A sink without control=1 never answers the hello: no timed retry
     * (each attempt holds the loop up and costs the program a join
     * snapshot); the next stream, or an action, tries again. */
    char err[256];
    CHECK_INT(els_writer_open(spec, &w, err, sizeof err), ==, 0);
    mon_control_poll(&mc, now, 4, true);
    CHECK(!mon_control_ready(&mc));
    CHECK_CONTAINS(mc.state, "no answer to the hello");
    CHECK(mon_control_wait_ms(&mc, now) == UINT64_MAX);
    mon_control_close(&mc);
    CHECK_INT(els_writer_close(w), ==, 0);
}

static void test_allowlist(void)
{
    CHECK(mon_control_allowed("status", ""));
    CHECK(mon_control_allowed("heap-census", ""));
    CHECK(mon_control_allowed("toggle-class", "u"));
    CHECK(!mon_control_allowed("status", "x"));
    CHECK(!mon_control_allowed("toggle-class", ""));
    CHECK(!mon_control_allowed("toggle-class", "x"));
    CHECK(!mon_control_allowed("toggle-class", "gs"));
    CHECK(!mon_control_allowed("ring-dump", ""));
    CHECK(!mon_control_allowed("set-classes", ""));
    CHECK(!mon_control_allowed("user", ""));
    CHECK(!mon_control_allowed("", ""));
    /* Off the list: refused before anything is sent. */
    static struct mon_control mc;
    char spec[600];
    struct els_writer *w = open_writer(spec, sizeof spec);
    CHECK_INT(mon_control_init(&mc, "test", spec, NULL), ==, 0);
    struct mon_ctl_result r;
    CHECK_INT(mon_control_run(&mc, "ring-dump", "", &r), ==, ELS_EINVAL);
    CHECK_STR(r.text, "not an action of the monitor");
    CHECK_STR(r.command, "");
    mon_control_close(&mc);
    CHECK_INT(els_writer_close(w), ==, 0);
}

static void write_secret(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    CHECK(fputs(text, f) >= 0);
    CHECK_INT(fclose(f), ==, 0);
    CHECK_INT(chmod(path, 0600), ==, 0);
}

/* TCP: the session carries the secret of --secret-file; a wrong one is
 * refused, with the program's reason. */
static void test_tcp_secret(void)
{
    char secret[600], wrong[600], spec[700], ep[256], err[256];
    snprintf(secret, sizeof secret, "%s/secret", check_dir);
    snprintf(wrong, sizeof wrong, "%s/wrong", check_dir);
    write_secret(secret, "0123456789abcdef0123\n");
    write_secret(wrong, "0123456789abcdef0124\n");
    snprintf(spec, sizeof spec, "tcp:127.0.0.1:0?control=1&control-secret=%s",
             secret);
    struct els_writer *w = NULL;
    CHECK_INT(els_writer_open(spec, &w, err, sizeof err), ==, 0);
    CHECK(els_writer_endpoint(w, ep, sizeof ep) > 0);
    static struct mon_control mc;
    CHECK_INT(mon_control_init(&mc, "test", ep, secret), ==, 0);
    struct mon_ctl_result r;
    CHECK_INT(mon_control_run(&mc, "status", "", &r), ==, 0);
    CHECK_CONTAINS(r.text, "running on tcp:");
    mon_control_close(&mc);
    CHECK_INT(mon_control_init(&mc, "test", ep, wrong), ==, 0);
    CHECK(!mon_control_ready(&mc));
    CHECK_INT(mon_control_run(&mc, "status", "", &r), ==, -EPERM);
    CHECK_CONTAINS(r.text, "the program refused the session");
    mon_control_close(&mc);
    CHECK_INT(els_writer_close(w), ==, 0);
}

/* A program (or whoever holds its socket) answering with ESC sequences:
 * the status line's text shows them in their safe form, the JSON the
 * exact text. */
#define EVIL_ANSWER "\x1b]2;pwned\x07" "done\x1b[2J\r\n\x7f\xc2\x9b"

static int evil_flush(void *user, const char *args, char *out, size_t len)
{
    (void)user;
    (void)args;
    snprintf(out, len, "%s", EVIL_ANSWER);
    return 0;
}

static void test_answer_shown_safely(void)
{
    CHECK_INT(els_control_register("fake", 3, "flush", evil_flush, NULL), ==, 0);
    char spec[600];
    struct els_writer *w = open_writer(spec, sizeof spec);
    static struct mon_control mc;
    CHECK_INT(mon_control_init(&mc, "test", spec, NULL), ==, 0);
    struct mon_ctl_result r;
    struct strbuf sb = { 0 };
    CHECK_INT(mon_control_run(&mc, "flush", "", &r), ==, 0);
    const char *t = text_of(&r, &sb);
    for (const char *p = t; *p != '\0'; p++)
        CHECK_MSG((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f,
                  "byte 0x%02x in the status text: %s", (unsigned char)*p, t);
    CHECK_STR(t, "flush: ok: \\u{1B}]2;pwned\\u{07}done\\u{1B}[2J\\r\\n"
                 "\\u{7F}\\u{9B}");
    sb_clear(&sb);
    mon_control_result_json(&r, &sb);
    CHECK_CONTAINS(sb.p, "\"result\":\"\\u001b]2;pwned\\u0007done\\u001b[2J"
                         "\\u000d\\u000a\\u007f\xc2\x9b\"");
    sb_free(&sb);
    mon_control_close(&mc);
    CHECK_INT(els_writer_close(w), ==, 0);
}

static void test_off(void)
{
    static struct mon_control mc;
    CHECK_INT(mon_control_init(&mc, "test", NULL, NULL), ==, 0);
    struct mon_ctl_result r;
    CHECK_INT(mon_control_run(&mc, "flush", "", &r), ==, ELS_ENOTSUP);
    CHECK_CONTAINS(r.text, "control is not enabled");
    CHECK(!mon_control_ready(&mc));
    CHECK_INT(mon_control_init(&mc, "test", "fifo:/tmp/x", NULL), ==, TOOL_EXIT_USAGE);
    CHECK_INT(mon_control_init(&mc, "test", NULL, "/nonexistent"), ==, TOOL_EXIT_USAGE);
}

static const struct check_case cases[] = {
    CHECK_CASE(test_actions),
    CHECK_CASE(test_allowlist),
    CHECK_CASE(test_follow_stream),
    CHECK_CASE(test_tcp_secret),
    CHECK_CASE(test_off),
    CHECK_CASE(test_answer_shown_safely),
};

CHECK_MAIN(cases)
