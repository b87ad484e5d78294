/*
 * dump.c: `eventlog-sink dump`, an eventlog file read through the
 * library's parser.
 *
 * Prints one line per event, or with --counts how many events of each
 * declared type the stream holds and where it ended: a way to look at a
 * captured stream without another reader, and what the tests compare
 * with `ghc-events show`; or with --hp/--prof feeds the profile
 * converters (profile.h), waking for the report's next rewrite when the
 * stream is quiet.  Restarted streams (a new header after DATA_END)
 * are followed.  It does not sort, validate thread states or follow a
 * growing file; ghc-events does that.  Every string the stream chose
 * (descriptions, messages, labels, the parser's error) is printed in
 * safetext's form: a hostile file cannot drive the terminal.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "eventlog-sink.h"
#include "eventlog-sink/parse.h"
#include "profile.h"
#include "monitor/safetext.h"
#include "tool.h"

enum {
    DUMP_EXIT_OK = 0,
    DUMP_EXIT_UNREADABLE = 1,
    DUMP_EXIT_BAD_STREAM = 3
};

struct dump {
    bool counts;
    FILE *out;
    uint64_t n[65536];          /* events per tag, this run */
    const struct els_parser *parser;
    /* --hp / --prof: the converters (profile_hp.c, profile_prof.c) see
     * every event; events are then not printed. */
    struct profile_hp *hp;
    struct profile_prof *prof;
    int profile_error;
};

/* A string from the stream, in its safe form (see safetext.h). */
static void dump_text(FILE *out, struct els_str s)
{
    safetext_fput(out, s.ptr, s.len);
}

static void dump_cstr(FILE *out, const char *s)
{
    safetext_fput(out, s, strlen(s));
}

static int dump_on_event(void *user, const struct els_event *ev)
{
    struct dump *d = user;
    d->n[ev->tag]++;
    if (d->hp != NULL || d->prof != NULL) {
        int rc = d->hp != NULL ? profile_hp_event(d->hp, ev) : 0;
        if (rc == 0 && d->prof != NULL)
            rc = profile_prof_event(d->prof, ev);
        if (rc < 0) {
            d->profile_error = rc;
            return 1;           /* stops the feed */
        }
        return 0;
    }
    if (d->counts)
        return 0;
    const struct els_event_type *t = els_parser_event_type(d->parser, ev->tag);
    fprintf(d->out, "%" PRIu64 " ", ev->time);
    if (ev->cap >= 0)
        fprintf(d->out, "cap %d", (int)ev->cap);
    else
        fputs("global", d->out);
    fprintf(d->out, " %u ", (unsigned)ev->tag);
    dump_cstr(d->out, t != NULL ? t->desc : "?");

    struct els_event_data e;
    struct els_note note;
    int noted = els_note_decode(ev, &note);
    if (noted == 0 && note.kind == ELS_NOTE_JOINED_AT_SNAPSHOT) {
        fputs(": joined at a snapshot (no loss)", d->out);
    } else if (noted == 0 && note.kind != ELS_NOTE_OTHER) {
        fprintf(d->out, ": loss note: %" PRIu64 " units, %" PRIu64 " bytes",
                note.units, note.bytes);
    } else if (els_event_decode(ev, &e) == 0) {
        switch (ev->tag) {
        case ELS_EV_LOG_MSG:
        case ELS_EV_USER_MSG:
        case ELS_EV_USER_MARKER:
            fputs(": ", d->out);
            dump_text(d->out, e.u.text);
            break;
        case ELS_EV_THREAD_LABEL:
            fprintf(d->out, ": thread %" PRIu32 " \"", e.u.thread_label.thread);
            dump_text(d->out, e.u.thread_label.label);
            fputc('"', d->out);
            break;
        case ELS_EV_CREATE_THREAD:
        case ELS_EV_RUN_THREAD:
        case ELS_EV_THREAD_RUNNABLE:
            fprintf(d->out, ": thread %" PRIu32, e.u.thread.thread);
            break;
        case ELS_EV_STOP_THREAD:
            fprintf(d->out, ": thread %" PRIu32 " status %u",
                    e.u.stop_thread.thread, (unsigned)e.u.stop_thread.status);
            break;
        case ELS_EV_HEAP_ALLOCATED:
        case ELS_EV_HEAP_SIZE:
        case ELS_EV_HEAP_LIVE:
            fprintf(d->out, ": %" PRIu64 " bytes", e.u.heap.bytes);
            break;
        default:
            break;
        }
    }
    fputc('\n', d->out);
    return 0;
}

static uint64_t dump_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* With --prof, wait for fd to be readable, but no longer than until the
 * report's next rewrite is due (Note [Live report cadence] in
 * profile_prof.c): a live report follows its stream even while no byte
 * arrives.  0, or a negative errno from the rewrite. */
static int dump_wait(struct dump *d, int fd)
{
    for (;;) {
        uint64_t due = profile_prof_due(d->prof), now = dump_now_ns();
        if (due == UINT64_MAX)
            return 0;
        if (due <= now) {
            int rc = profile_prof_flush(d->prof, now);
            if (rc < 0)
                return rc;
            continue;
        }
        uint64_t ms = (due - now + 999999) / 1000000;
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        int r = poll(&pfd, 1, ms > INT_MAX ? INT_MAX : (int)ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r != 0)
            return 0;           /* readable, or let read() say what is wrong */
    }
}

static void dump_usage(FILE *out)
{
    fprintf(out,
"Usage: " TOOL_NAME " dump [--counts] [--hp OUT.hp] [--prof OUT.prof] [FILE]\n"
"\n"
"Read an eventlog from FILE (default: standard input) with the library's\n"
"parser and print one line per event: time, capability (or \"global\"),\n"
"tag, description and the main fields; log messages that are this\n"
"library's loss notes show their figures.\n"
"\n"
"Options:\n"
"  -c, --counts   print instead one line per event type the header\n"
"                 declares, \"COUNT TAG DESCRIPTION\" (block markers, tag\n"
"                 18, included), then \"end: WHERE at offset N\" (WHERE:\n"
"                 ended, at-event, in-event, in-header, at-start, failed)\n"
"      --hp OUT.hp    write the stream's heap profile samples (+RTS -h...)\n"
"                 as GHC's .hp file, which hp2ps renders: one census\n"
"                 appended whole as its last event arrives; the times are\n"
"                 the census events' (elapsed seconds, where the RTS\n"
"                 writes mutator CPU seconds); -hc bands are numbered in\n"
"                 the file's own order; band names keep printable ASCII\n"
"                 only (space, '\"', '\\' and other bytes become '_')\n"
"      --prof OUT.prof  write a time profile report (+RTS -p) in the\n"
"                 layout of +RTS -P's .prof (with ticks) from the\n"
"                 cost-centre samples, rewritten whole (temporary name,\n"
"                 rename) at most once a second while the stream arrives\n"
"                 and at its end; entry counts and allocation are not in\n"
"                 the eventlog (shown as 0); names longer than 60\n"
"                 characters are cut in the tables (\"...[K]\") and given\n"
"                 in full at the end\n"
"                 With --hp or --prof no events are printed; FILE may be\n"
"                 a stream still arriving on standard input (\"-\"): the\n"
"                 .hp is valid at every sample received, the .prof at\n"
"                 every rewrite.  -hc stacks beyond 65536 and call-tree\n"
"                 nodes beyond 131072 are counted in \"(other)\" (said\n"
"                 on stderr).\n"
"  -h, --help     show this help\n"
"\n"
"A new header after DATA_END starts a new stream; counts add up.\n"
"Descriptions, messages and labels come from the stream: control\n"
"characters, escape sequences and bytes that are not UTF-8 in them are\n"
"written out (\\u{1B}, \\xFF, \\n, \\\\) so they cannot drive the terminal.\n"
"\n"
"Exit status:\n"
"  0  the stream ended with DATA_END\n"
"  1  FILE could not be read\n"
"  2  usage error\n"
"  3  the stream was truncated or malformed (said on stderr)\n");
}

/* What dump's command line asks for (dump_parse()); --counts goes
 * into struct dump. */
struct dump_opts {
    const char *name;                   /* FILE, "-" for standard input */
    const char *hp_path, *prof_path;    /* --hp, --prof */
};

/* The command line into *o and d: TOOL_CONTINUE, or the exit status
 * (after --help or a usage error). */
static int dump_parse(int argc, char **argv, struct dump_opts *o,
                      struct dump *d)
{
    static const struct option longopts[] = {
        { "counts", no_argument, NULL, 'c' },
        { "help", no_argument, NULL, 'h' },
        { "hp", required_argument, NULL, 'H' },
        { "prof", required_argument, NULL, 'P' },
        { NULL, 0, NULL, 0 },
    };
    *o = (struct dump_opts){ .name = "-" };
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":ch", longopts, NULL)) != -1) {
        switch (c) {
        case 'H':
            o->hp_path = optarg;
            break;
        case 'P':
            o->prof_path = optarg;
            break;
        case ':':
            return tool_usage_error("dump", "option '%s' needs a file name",
                                    argv[optind - 1]);
        case 'c':
            d->counts = true;
            break;
        case 'h':
            return tool_help(dump_usage);
        default:
            return tool_usage_error("dump", "unknown option '%s'",
                                    argv[optind - 1]);
        }
    }
    if (argc - optind > 1)
        return tool_usage_error("dump", "one FILE only");
    if (optind < argc)
        o->name = argv[optind];
    return TOOL_CONTINUE;
}

/* Feed fd to the parser to its end, a stop from the parser, or an
 * error: DUMP_EXIT_OK, or DUMP_EXIT_UNREADABLE after a message (a
 * profile file's error is left in d->profile_error). */
static int dump_read(struct dump *d, struct els_parser *p, int fd,
                     const char *name)
{
    static uint8_t buf[64 * 1024];
    int rc;
    for (;;) {
        if (d->prof != NULL && (rc = dump_wait(d, fd)) < 0) {
            d->profile_error = rc;
            return DUMP_EXIT_OK;
        }
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            fprintf(stderr, TOOL_NAME " dump: cannot read %s: %s\n", name,
                    strerror(errno));
            return DUMP_EXIT_UNREADABLE;
        }
        if (n == 0 || els_parser_feed(p, buf, (size_t)n, NULL) != 0)
            return DUMP_EXIT_OK;
        /* A live stream: the report follows, at a bounded cadence. */
        if (d->prof != NULL &&
            (rc = profile_prof_flush(d->prof, dump_now_ns())) < 0) {
            d->profile_error = rc;
            return DUMP_EXIT_OK;
        }
    }
}

/* --counts' table, the verdict on the stream and the profile files'
 * last words: the exit status, from status (dump_read()'s) on. */
static int dump_finish(struct dump *d, struct els_parser *p, int status)
{
    struct els_parse_status st;
    els_parser_status(p, &st);
    if (d->counts) {
        const struct els_event_type *types;
        size_t nt = els_parser_event_types(p, &types);
        for (size_t i = 0; i < nt; i++) {
            printf("%" PRIu64 " %u ", d->n[types[i].tag],
                   (unsigned)types[i].tag);
            dump_cstr(stdout, types[i].desc);
            putchar('\n');
        }
        printf("end: %s at offset %" PRIu64 "\n",
               els_parse_where_name(st.where), st.offset);
    }
    if (status == DUMP_EXIT_OK && st.where == ELS_PARSE_FAILED) {
        fputs(TOOL_NAME " dump: stream malformed at ", stderr);
        dump_cstr(stderr, st.error);
        fputc('\n', stderr);
        status = DUMP_EXIT_BAD_STREAM;
    } else if (status == DUMP_EXIT_OK && st.where != ELS_PARSE_ENDED) {
        fprintf(stderr, TOOL_NAME " dump: stream truncated at offset %" PRIu64
                " (%s, the unfinished item began at %" PRIu64 ")\n",
                st.offset, els_parse_where_name(st.where), st.item_offset);
        status = DUMP_EXIT_BAD_STREAM;
    }
    if (d->hp != NULL || d->prof != NULL) {
        bool clean = st.where == ELS_PARSE_ENDED;
        if (d->profile_error == 0 && d->hp != NULL)
            d->profile_error = profile_hp_finish(d->hp, clean);
        if (d->profile_error == 0 && d->prof != NULL)
            d->profile_error = profile_prof_finish(d->prof, clean);
        if (d->profile_error < 0) {
            fprintf(stderr, TOOL_NAME " dump: cannot write the profile files: %s\n",
                    strerror(-d->profile_error));
            status = DUMP_EXIT_UNREADABLE;
        }
        profile_hp_free(d->hp);
        profile_prof_free(d->prof);
    }
    return status;
}

int dump_main(int argc, char **argv)
{
    static struct dump d;
    memset(&d, 0, sizeof d);
    d.out = stdout;
    struct dump_opts o;
    int rc = dump_parse(argc, argv, &o, &d);
    if (rc != TOOL_CONTINUE)
        return rc;

    int fd = STDIN_FILENO;
    if (strcmp(o.name, "-") != 0) {
        fd = open(o.name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
            fprintf(stderr, TOOL_NAME " dump: cannot open %s: %s\n", o.name,
                    strerror(errno));
            return DUMP_EXIT_UNREADABLE;
        }
    }

    if (o.hp_path != NULL &&
        (rc = profile_hp_open(&d.hp, o.hp_path, stderr)) < 0) {
        fprintf(stderr, TOOL_NAME " dump: cannot write %s: %s\n", o.hp_path,
                strerror(-rc));
        return DUMP_EXIT_UNREADABLE;
    }
    if (o.prof_path != NULL &&
        (rc = profile_prof_open(&d.prof, o.prof_path, stderr)) < 0) {
        fprintf(stderr, TOOL_NAME " dump: %s: %s\n", o.prof_path,
                strerror(-rc));
        profile_hp_free(d.hp);
        return DUMP_EXIT_UNREADABLE;
    }

    struct els_parse_callbacks cb = {
        .struct_size = sizeof cb, .on_event = dump_on_event,
    };
    struct els_parser *p;
    rc = els_parser_new(&p, &cb, &d, ELS_PARSE_RESTART);
    if (rc < 0) {
        fprintf(stderr, TOOL_NAME " dump: %s\n", els_strerror(rc));
        return DUMP_EXIT_UNREADABLE;
    }
    d.parser = p;

    int status = dump_read(&d, p, fd, o.name);
    if (fd != STDIN_FILENO)
        close(fd);
    status = dump_finish(&d, p, status);
    els_parser_free(p);
    if (fflush(stdout) != 0 && status == DUMP_EXIT_OK)
        status = DUMP_EXIT_UNREADABLE;
    return status;
}
