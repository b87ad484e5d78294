/*
 * ctl.c: `eventlog-sink ctl`, a client of the control channel
 * (docs/CONTROL.md).  It connects to a socket sink that has control=1
 * (or a ring: sink's control=unix: socket), opens a control-only session
 * (a hello with a nonce it chose; it skips the stream bytes sent before
 * the answers begin; over TCP it answers the program's challenge with a
 * proof of the secret), sends each command,
 * prints each answer, and says in its exit status whether all succeeded.
 * An answer's text is the peer's choice: it is printed in safetext's form
 * (or, with --json, JSON-escaped with the same notion of a control), so
 * whoever listens at SPEC cannot drive the terminal.
 *
 * The protocol client is ctlclient.c (shared with the monitor's keys and
 * buttons).  Not its job: reading the eventlog (use recv), interpreting
 * what a command did.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eventlog-sink.h"
#include "monitor/ctlclient.h"
#include "discover.h"
#include "monitor/safetext.h"
#include "tool.h"

enum {
    CTL_EXIT_OK = 0,
    CTL_EXIT_FAILED = 1,        /* a command failed, or no answer */
    CTL_EXIT_USAGE = TOOL_EXIT_USAGE
};

#define CTL_MAX_COMMANDS 64
#define CTL_MAX_TEXT CTLC_TEXT_MAX

static void ctl_usage(FILE *out)
{
    fprintf(out,
"Usage: " TOOL_NAME " ctl [--json] [--secret-file FILE] [--timeout SECS]\n"
"           SPEC COMMAND [ARGS] [, COMMAND [ARGS]]...\n"
"\n"
"Send commands to a running program whose socket sink has control=1\n"
"(e.g. +RTS --eventlog-sink='unix:/tmp/app.sock?control=1') or whose\n"
"ring: sink has a control socket (ring:FILE?control=unix:/tmp/app.ctl;\n"
"give unix:/tmp/app.ctl as SPEC), and print each answer on its own line,\n"
"\"COMMAND: RESULT\".  A lone \",\" separates commands; they run in order,\n"
"one after the other.\n"
"\n"
"SPEC:\n"
"  unix:PATH           the program's UNIX socket (its unix: sink or a\n"
"                      ring: sink's control=unix:PATH); only the program's\n"
"                      user or root may control it\n"
"  tcp:[HOST:]PORT     the program's TCP socket; needs --secret-file with\n"
"                      the secret of the sink's control-secret= file\n"
"  pid:PID, name:NAME  the control socket of a program `" TOOL_NAME " ps`\n"
"                      lists\n"
"\n"
"Commands (\"help\" lists those this program has):\n"
"  help                the commands the program accepts\n"
"  status              the stream's state in one line\n"
"  stats               the counters of the sink whose socket SPEC is\n"
"  stop                end the stream (consumers receive its end; with\n"
"                      several sinks, --eventlog-sink='A|B', every sink's)\n"
"  restart             end the stream and start a new one on the same\n"
"                      sinks\n"
"  ring-dump           write the ring: sink's window to a new file and\n"
"                      print its name and size (through the ring: sink's\n"
"                      control=unix:PATH socket; elsewhere ELS_EINVAL)\n"
"  user NS ID [ARGS]   command ID of namespace NS that the program\n"
"                      registered (or its name, if it gave one)\n"
"  Programs built with the runtime-control and profiling parts of the\n"
"  library also accept those commands: see docs/CONTROL.md.\n"
"\n"
"Options:\n"
"  -j, --json          print one JSON object per answer instead, failures\n"
"                      too, all on standard output:\n"
"                      {\"command\":...,\"ok\":true|false,\"status\":CODE,\n"
"                       \"error\":NAME|null,\"result\":TEXT}\n"
"                      (TEXT exact; controls as \\uXXXX escapes, bytes\n"
"                      that are not UTF-8 as \\ufffd)\n"
"  -s, --secret-file FILE  the shared secret (TCP): the file's bytes, one\n"
"                      trailing newline dropped, read with the rules of\n"
"                      the program's control-secret= file (yours, mode\n"
"                      600); ctl answers the program's challenge with a\n"
"                      proof and never sends the secret\n"
"  -t, --timeout SECS  give up waiting for an answer after SECS seconds\n"
"                      (default 10)\n"
"  -h, --help          show this help\n"
"\n"
"The program's answers are printed with control characters, escape\n"
"sequences and bytes that are not UTF-8 written out (\\u{1B}, \\xFF,\n"
"\\n, \\\\), so an answer cannot drive the terminal.\n"
"\n"
"Exit status:\n"
"  0  every command succeeded\n"
"  1  a command failed (its error is printed: NAME: text), the program\n"
"     refused the session, or it could not be reached or did not answer\n"
"  2  usage error\n");
}

#define ctl_usage_error(...) tool_usage_error("ctl", __VA_ARGS__)

/* --json strings: safetext.h's Note [Exact and safe JSON]. */
static void ctl_json_string(const char *s)
{
    safetext_json_fput(stdout, s, strlen(s));
}

/* Text from the peer on a terminal line: safetext's form. */
static void ctl_text(FILE *f, const char *s)
{
    safetext_fput(f, s, strlen(s));
}

/* Print one answer; returns whether it was a success. */
static bool ctl_print(bool json, const char *command, const struct ctlc_answer *a)
{
    const char *name = a->status != 0 ? els_err_name(a->status) : NULL;
    const char *detail = ctlc_detail(a);
    if (json) {
        printf("{\"command\":");
        ctl_json_string(command);
        printf(",\"ok\":%s,\"status\":%d,\"error\":", a->status == 0 ? "true" : "false",
               (int)a->status);
        if (name != NULL)
            ctl_json_string(name);
        else
            printf("null");
        printf(",\"result\":");
        ctl_json_string(detail);
        printf("}\n");
    } else if (a->status == 0) {
        printf("%s: ", command);
        ctl_text(stdout, a->text[0] ? a->text : "ok");
        putchar('\n');
    } else {
        fprintf(stderr, TOOL_NAME " ctl: %s: %s: ", command, name);
        ctl_text(stderr, detail);
        fputc('\n', stderr);
    }
    fflush(stdout);
    return a->status == 0;
}

int ctl_main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "json", no_argument, NULL, 'j' },
        { "secret-file", required_argument, NULL, 's' },
        { "timeout", required_argument, NULL, 't' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    bool json = false;
    const char *secret_file = NULL;
    uint64_t timeout_ms = 10000;
    int opt;
    /* '+': options end at SPEC, so that "set-classes -s" is a command. */
    while ((opt = getopt_long(argc, argv, "+js:t:h", opts, NULL)) != -1) {
        switch (opt) {
        case 'j':
            json = true;
            break;
        case 's':
            secret_file = optarg;
            break;
        case 't':
            if (!tool_parse_secs(optarg, &timeout_ms) || timeout_ms == 0)
                return ctl_usage_error("--timeout takes seconds > 0, not '%s'",
                                       optarg);
            break;
        case 'h':
            return tool_help(ctl_usage);
        default:
            return ctl_usage_error("unknown option");
        }
    }
    if (argc - optind < 2)
        return ctl_usage_error("expected SPEC and at least one COMMAND");
    int dr = disc_resolve_arg("ctl", &argv[optind], true);
    if (dr != 0)
        return dr;
    const char *spec = argv[optind++];

    /* Commands: words up to a lone ",".  Fixed buffers, not strdup():
     * every early return (usage, secret, connection) would otherwise have
     * to free them, and LeakSanitizer's run of the tests caught one that
     * did not. */
    static char commands[CTL_MAX_COMMANDS][CTL_MAX_TEXT + 1];
    size_t n_commands = 0;
    while (optind < argc) {
        if (n_commands == CTL_MAX_COMMANDS)
            return ctl_usage_error("at most %d commands", CTL_MAX_COMMANDS);
        char text[CTL_MAX_TEXT + 1] = "";
        size_t tl = 0;
        for (; optind < argc && strcmp(argv[optind], ",") != 0; optind++) {
            int n = snprintf(text + tl, sizeof text - tl, "%s%s", tl ? " " : "",
                             argv[optind]);
            if (n < 0 || (size_t)n >= sizeof text - tl)
                return ctl_usage_error("a command is longer than %d bytes",
                                       CTL_MAX_TEXT);
            tl += (size_t)n;
        }
        optind++;   /* the "," */
        if (tl == 0)
            return ctl_usage_error("empty command (two \",\" in a row?)");
        memcpy(commands[n_commands], text, tl + 1);
        n_commands++;
    }

    uint8_t secret[CTLC_SECRET_MAX];
    size_t secret_len = 0;
    if (secret_file != NULL) {
        char err[160];
        if (ctlc_read_secret(secret_file, secret, &secret_len, err, sizeof err) != 0) {
            fprintf(stderr, TOOL_NAME " ctl: %s: %s\n", secret_file, err);
            return CTL_EXIT_FAILED;
        }
    }

    static struct ctlc conn;
    char err[700];
    struct ctlc_answer a;
    int r = ctlc_open(&conn, spec, secret, secret_len, timeout_ms, &a, err,
                      sizeof err);
    if (r != 0) {
        fprintf(stderr, TOOL_NAME " ctl: %s\n", err);
        return r == ELS_EINVAL || r == ELS_ENAMETOOLONG ? CTL_EXIT_USAGE
                                                        : CTL_EXIT_FAILED;
    }
    if (a.status != 0) {
        ctl_print(json, "hello", &a);
        ctlc_close(&conn);
        return CTL_EXIT_FAILED;
    }

    int status = CTL_EXIT_OK;
    for (size_t i = 0; i < n_commands; i++) {
        /* One at a time: each answer before the next command. */
        unsigned errors = conn.protocol_errors;
        r = ctlc_call(&conn, commands[i], timeout_ms, &a);
        if (conn.protocol_errors != errors) {
            ctl_print(json, "(protocol)", &conn.protocol_error);
            status = CTL_EXIT_FAILED;
        }
        if (r != 0) {
            fprintf(stderr, TOOL_NAME " ctl: %s: no answer: %s\n", commands[i],
                    ctlc_strerror(r));
            status = CTL_EXIT_FAILED;
            break;
        }
        if (!ctl_print(json, commands[i], &a))
            status = CTL_EXIT_FAILED;
    }
    ctlc_close(&conn);
    return status;
}
