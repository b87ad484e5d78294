/*
 * alert.c: `serve --all`'s webhook for Prometheus' Alertmanager,
 * POST /api/alertmanager: a firing alert whose labels name a program on
 * this host (pid, else program) makes that program's ring: flight
 * recorder write a dump, through the recorder's control socket
 * (ring:PATH?control=unix:SOCK, listed in the program's announce file:
 * tools/discover.c), as `eventlog-sink ctl unix:SOCK ring-dump` would.
 * The answer (JSON) says per alert what was done: each program's dump
 * (file and size) or why there was none: "resolved" (nothing to do),
 * "no-target" (no pid or program label), "unknown-program" (none
 * announced here), "no-recorder" (no ring: sink with a control
 * socket), "cooldown", "over-limit" (the request's dumps were used up),
 * "failed" (the recorder's error); and how many alerts were skipped.
 *
 * Note [Alerts from outside]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Who may ask, routes.c decides (serve's token, as
 * "Authorization: Bearer TOKEN", on any listener: a fleet's
 * Alertmanager runs elsewhere); what they send is still judged here,
 * and bounded, so that the token's holder can make dumps and nothing
 * more, and not many:
 *  - the body: at most SERVE_ALERT_BODY_MAX bytes (conn.c refuses
 *    more with 413 before reading it), Content-Type application/json
 *    (else 415), strict JSON (json.c: no recursion, at most
 *    SERVE_ALERT_TOKENS values, else 413) of Alertmanager's webhook
 *    version "4" (else 400, and nothing is done: a batch is judged whole
 *    before any dump);
 *  - the work: the first SERVE_ALERT_MAX alerts are looked at (the
 *    answer counts the rest as skipped), and at most SERVE_ALERT_DUMPS
 *    dumps are asked for per request, each answered within
 *    SERVE_ALERT_CTL_MS or given up: the server's one loop waits for
 *    them (a dump takes milliseconds);
 *  - the disk: a program dumped (or asked and failing) is not asked
 *    again within the cooldown (--dump-cooldown, 60 s by default), kept
 *    per program (pid and start time) in a table of SERVE_ALERT_KEPT
 *    (when every one is within its cooldown, no other program is
 *    dumped: forgetting one would let it be dumped twice); an alert
 *    that repeats, or two alerts of one program in a batch, write one
 *    dump.  The recorder's own dump-on= cooldown is its own.
 * Labels other than pid and program are not read; a pid that is not a
 * program announced here, a program without a recorder, a resolved
 * alert: each is an answer for that alert, never an error of the batch.
 *
 * Not its job: authentication and the HTTP exchange (routes.c,
 * conn.c), what a dump holds (the library's ring: sink).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "eventlog-sink.h"
#include "monitor/ctlclient.h"
#include "../discover.h"
#include "json.h"
#include "monitor/safetext.h"
#include "serve.h"
#include "../tool.h"

#define SERVE_ALERT_TOKENS 16384    /* JSON values in a body */
#define SERVE_ALERT_MAX 64          /* alerts looked at per request */
#define SERVE_ALERT_DUMPS 8         /* dumps asked for per request */
#define SERVE_ALERT_CTL_MS 3000     /* for each dump's answer */
#define SERVE_ALERT_KEPT 256        /* programs whose last dump is kept */
#define SERVE_ALERT_LABEL_MAX 256   /* the pid and program labels' bytes */

struct serve_alert_last {
    long pid;
    uint64_t start;
    uint64_t at;                    /* when asked, in mon_now_ms() */
};

struct serve_alerts {
    uint64_t cooldown_ms;
    struct serve_alert_last last[SERVE_ALERT_KEPT];
    unsigned nlast;
    uint64_t dumps;                 /* written since start */
};

/* One request's work: the programs announced, its dump budget. */
struct serve_alert_batch {
    struct serve_alerts *a;
    struct disc_list progs;
    bool scanned;
    char scan_error[256];
    unsigned asked;                 /* dumps asked for */
    unsigned dumped;
    uint64_t now;
    struct strbuf *b;
};

struct serve_alerts *serve_alerts_new(uint64_t cooldown_ms)
{
    struct serve_alerts *a = calloc(1, sizeof *a);
    if (a != NULL)
        a->cooldown_ms = cooldown_ms;
    return a;
}

void serve_alerts_free(struct serve_alerts *a)
{
    free(a);
}

/* ------------------------------------------------------------------------
 * The cooldown
 * ------------------------------------------------------------------------ */

/* When e was last asked for a dump within the cooldown: that entry, or
 * NULL. */
static struct serve_alert_last *serve_alert_recent(struct serve_alerts *a,
                                                   const struct disc_entry *e,
                                                   uint64_t now)
{
    for (unsigned i = 0; i < a->nlast; i++) {
        struct serve_alert_last *l = &a->last[i];
        if (l->pid == e->pid && l->start == e->start &&
            now - l->at < a->cooldown_ms)
            return l;
    }
    return NULL;
}

/* Note that e is asked for a dump now: false when the table holds
 * SERVE_ALERT_KEPT programs all within their cooldown (forgetting one
 * would let it be dumped again within its cooldown: none is asked). */
static bool serve_alert_remember(struct serve_alerts *a,
                                 const struct disc_entry *e, uint64_t now)
{
    if (a->cooldown_ms == 0)
        return true;
    /* Its own entry (its cooldown is over: it was not found recent), a
     * free one, or one whose cooldown is over. */
    struct serve_alert_last *slot = NULL;
    for (unsigned i = 0; i < a->nlast && slot == NULL; i++)
        if (a->last[i].pid == e->pid && a->last[i].start == e->start)
            slot = &a->last[i];
    if (slot == NULL && a->nlast < SERVE_ALERT_KEPT)
        slot = &a->last[a->nlast++];
    for (unsigned i = 0; i < a->nlast && slot == NULL; i++)
        if (now - a->last[i].at >= a->cooldown_ms)
            slot = &a->last[i];
    if (slot == NULL)
        return false;
    *slot = (struct serve_alert_last){ .pid = e->pid, .start = e->start,
                                       .at = now };
    return true;
}

/* ------------------------------------------------------------------------
 * A dump through the recorder's control socket
 * ------------------------------------------------------------------------ */

/* The control socket of e's ring: sink, or NULL. */
static const char *serve_alert_recorder(const struct disc_entry *e)
{
    for (size_t i = 0; i < e->n_sinks; i++) {
        const struct disc_sink *s = &e->sinks[i];
        if (s->spec != NULL && strncmp(s->spec, "ring:", 5) == 0 &&
            s->control != NULL && strncmp(s->control, "unix:", 5) == 0)
            return s->control;
    }
    return NULL;
}

/* `ring-dump` through ctl: the dump's file and size ("FILE (N bytes)",
 * lib/ghc/commands.c), or a negative code with err. */
static int serve_alert_ring_dump(const char *ctl, char *file, size_t file_len,
                                 long long *size, char *err, size_t err_len)
{
    static struct ctlc conn;    /* 64 KiB of buffer: not on the stack */
    struct ctlc_answer a;
    int r = ctlc_open(&conn, ctl, NULL, 0, SERVE_ALERT_CTL_MS, &a, err, err_len);
    if (r != 0)
        return r;
    if (a.status == 0) {
        r = ctlc_call(&conn, "ring-dump", SERVE_ALERT_CTL_MS, &a);
        if (r != 0)
            snprintf(err, err_len, "ring-dump: no answer: %s", ctlc_strerror(r));
    }
    ctlc_close(&conn);
    if (r != 0)
        return r;
    if (a.status != 0) {
        snprintf(err, err_len, "%s: %s", els_err_name(a.status), ctlc_detail(&a));
        return a.status;
    }
    const char *text = a.text;
    size_t n = strlen(text);
    const char *open = strrchr(text, '(');
    *size = -1;
    if (open != NULL && open > text && open[-1] == ' ' && n > 7 &&
        strcmp(text + n - 7, " bytes)") == 0) {
        char *end;
        errno = 0;
        long long v = strtoll(open + 1, &end, 10);
        if (errno == 0 && end == text + n - 7 && v >= 0) {
            *size = v;
            n = (size_t)(open - 1 - text);
        }
    }
    snprintf(file, file_len, "%.*s", (int)n, text);
    if (*size < 0) {
        struct stat st;
        if (stat(file, &st) == 0)
            *size = (long long)st.st_size;
    }
    return 0;
}

/* ------------------------------------------------------------------------
 * One alert
 * ------------------------------------------------------------------------ */

/* Dump program e for an alert (its answer's entry into b); returns
 * the outcome's name. */
static const char *serve_alert_program(struct serve_alert_batch *bt,
                                       const struct disc_entry *e,
                                       const char *alertname)
{
    struct strbuf *b = bt->b;
    sb_printf(b, "{\"pid\":%ld,\"program\":", e->pid);
    sb_json_str(b, e->name ? e->name : "", e->name ? strlen(e->name) : 0);
    const char *ctl = serve_alert_recorder(e);
    struct serve_alert_last *recent;
    const char *outcome;
    if (ctl == NULL) {
        outcome = "no-recorder";
        sb_puts(b, ",\"outcome\":\"no-recorder\",\"error\":\"no ring: sink "
                "with a control=unix: socket\"");
    } else if ((recent = serve_alert_recent(bt->a, e, bt->now)) != NULL) {
        outcome = "cooldown";
        double left = (double)(bt->a->cooldown_ms - (bt->now - recent->at)) / 1e3;
        sb_printf(b, ",\"outcome\":\"cooldown\",\"cooldown_left_s\":%.1f",
                  left);
        /* Said too, so that whoever wonders why no dump came sees it. */
        fprintf(stderr, TOOL_NAME " serve: alert ");
        safetext_fput(stderr, alertname, strlen(alertname));
        fprintf(stderr, ": pid %ld: no dump, cooldown (%.1f s left)\n",
                e->pid, left);
    } else if (bt->asked >= SERVE_ALERT_DUMPS) {
        outcome = "over-limit";
        sb_printf(b, ",\"outcome\":\"over-limit\",\"error\":\"at most %d "
                  "dumps per request\"", SERVE_ALERT_DUMPS);
    } else if (!serve_alert_remember(bt->a, e, bt->now)) {
        outcome = "over-limit";
        sb_printf(b, ",\"outcome\":\"over-limit\",\"error\":\"%d programs "
                  "are in their cooldown\"", SERVE_ALERT_KEPT);
    } else {
        char file[CTLC_TEXT_MAX + 1], err[CTLC_TEXT_MAX + 64];
        long long size = -1;
        bt->asked++;
        int r = serve_alert_ring_dump(ctl, file, sizeof file, &size, err,
                                      sizeof err);
        fprintf(stderr, TOOL_NAME " serve: alert ");
        safetext_fput(stderr, alertname, strlen(alertname));
        fprintf(stderr, ": pid %ld: ", e->pid);
        safetext_fput(stderr, r == 0 ? file : err, strlen(r == 0 ? file : err));
        if (r == 0) {
            fprintf(stderr, " (%lld bytes)\n", size);
            sb_puts(b, ",\"outcome\":\"dumped\",\"file\":");
            sb_json_str(b, file, strlen(file));
            sb_printf(b, ",\"size\":%lld", size);
            bt->dumped++;
            bt->a->dumps++;
            outcome = "dumped";
        } else {
            fputc('\n', stderr);
            sb_puts(b, ",\"outcome\":\"failed\",\"error\":");
            sb_json_str(b, err, strlen(err));
            outcome = "failed";
        }
    }
    sb_puts(b, "}");
    return outcome;
}

/* Label name's value into out: 1, 0 when absent, -1 when it is not a
 * string or longer than out holds. */
static int serve_alert_label(const struct json_doc *d, unsigned labels,
                             const char *name, char *out, size_t cap)
{
    int v = json_member(d, labels, name);
    if (v == -1)
        return 0;
    if (v < 0 || d->tok[v].type != JSON_STRING)
        return -1;
    if (json_str(d, (unsigned)v, out, cap) < 0)
        return -1;
    return 1;
}

/* The programs alert i names (its answer into b).  The batch was
 * checked: i is an object with status and labels. */
static void serve_alert_one(struct serve_alert_batch *bt,
                            const struct json_doc *d, unsigned i,
                            unsigned index)
{
    struct strbuf *b = bt->b;
    unsigned labels = (unsigned)json_member(d, i, "labels");
    char alertname[SERVE_ALERT_LABEL_MAX] = "", pidtext[SERVE_ALERT_LABEL_MAX] = "",
         program[SERVE_ALERT_LABEL_MAX] = "";
    (void)serve_alert_label(d, labels, "alertname", alertname, sizeof alertname);
    int has_pid = serve_alert_label(d, labels, "pid", pidtext, sizeof pidtext);
    int has_prog = serve_alert_label(d, labels, "program", program, sizeof program);
    bool firing = json_str_eq(d, (unsigned)json_member(d, i, "status"), "firing");

    sb_printf(b, "%s{\"index\":%u,\"alertname\":", index ? "," : "", index);
    sb_json_str(b, alertname, strlen(alertname));
    sb_printf(b, ",\"status\":\"%s\"", firing ? "firing" : "resolved");
    if (has_pid > 0) {
        sb_puts(b, ",\"pid\":");
        sb_json_str(b, pidtext, strlen(pidtext));
    }
    if (has_prog > 0) {
        sb_puts(b, ",\"program\":");
        sb_json_str(b, program, strlen(program));
    }
    if (!firing) {
        sb_puts(b, ",\"outcome\":\"resolved\",\"programs\":[]}");
        return;
    }
    long pid = 0;
    if (has_pid > 0) {
        char *end;
        errno = 0;
        pid = strtol(pidtext, &end, 10);
        if (errno != 0 || end == pidtext || *end != '\0' || pid <= 0 ||
            pidtext[0] == '+' || pidtext[0] == ' ')
            pid = -1;
    }
    const char *why = NULL;
    if (has_pid < 0 || has_prog < 0 || pid < 0)
        why = "the pid or program label is not a pid or a name";
    else if (has_pid == 0 && has_prog == 0)
        why = "no pid or program label";
    if (why != NULL) {
        sb_puts(b, ",\"outcome\":\"no-target\",\"error\":");
        sb_json_str(b, why, strlen(why));
        sb_puts(b, ",\"programs\":[]}");
        return;
    }
    if (!bt->scanned) {
        bt->scanned = true;
        if (disc_scan(&bt->progs, bt->scan_error, sizeof bt->scan_error) < 0)
            bt->progs = (struct disc_list){ 0 };
    }
    /* The pid names one program (whose name, if given too, must agree:
     * a pid reused by another program is not the one alerted on); a
     * program name alone names every program of that name. */
    sb_puts(b, ",\"programs\":[");
    unsigned matched = 0;
    /* The alert's outcome: "dumped" if any program was, else the
     * programs' one outcome, else "mixed". */
    const char *outcome = NULL, *mismatch = NULL;
    for (size_t k = 0; k < bt->progs.n; k++) {
        const struct disc_entry *e = &bt->progs.v[k];
        const char *name = e->name ? e->name : "";
        if (pid > 0 && e->pid != pid)
            continue;
        if (has_prog > 0 && strcmp(name, program) != 0) {
            if (pid > 0)
                mismatch = name;
            continue;
        }
        sb_puts(b, matched++ ? "," : "");
        const char *o = serve_alert_program(bt, e, alertname);
        if (outcome == NULL || strcmp(o, "dumped") == 0)
            outcome = o;
        else if (strcmp(outcome, o) != 0 && strcmp(outcome, "dumped") != 0)
            outcome = "mixed";
    }
    sb_puts(b, "]");
    if (matched == 0) {
        char msg[400];
        if (bt->scan_error[0] != '\0')
            snprintf(msg, sizeof msg, "cannot read the programs announced "
                     "here: %s", bt->scan_error);
        else if (mismatch != NULL)
            snprintf(msg, sizeof msg, "pid %ld is another program", pid);
        else if (pid > 0)
            snprintf(msg, sizeof msg, "no program with pid %ld is announced "
                     "here", pid);
        else
            snprintf(msg, sizeof msg, "no program of that name is announced "
                     "here");
        sb_puts(b, ",\"outcome\":\"unknown-program\",\"error\":");
        sb_json_str(b, msg, strlen(msg));
    } else {
        sb_printf(b, ",\"outcome\":\"%s\"", outcome);
    }
    sb_puts(b, "}");
}

/* ------------------------------------------------------------------------
 * The batch
 * ------------------------------------------------------------------------ */

/* Is the whole batch what Alertmanager sends (version "4", alerts an
 * array, each of the first SERVE_ALERT_MAX an object with status firing
 * or resolved and labels an object of strings)?  NULL, or why not. */
static const char *serve_alert_check(const struct json_doc *d, int *alerts,
                                     char *why, size_t why_len)
{
    int v = json_member(d, 0, "version");
    if (v == -3)
        return "expected a JSON object";
    if (v < 0 || !json_str_eq(d, (unsigned)v, "4"))
        return "expected Alertmanager's webhook version \"4\"";
    *alerts = json_member(d, 0, "alerts");
    if (*alerts < 0 || d->tok[*alerts].type != JSON_ARRAY)
        return "expected \"alerts\": an array";
    unsigned k = 0;
    for (unsigned i = json_first(d, (unsigned)*alerts); i && k < SERVE_ALERT_MAX;
         i = json_next(d, (unsigned)*alerts, i), k++) {
        int st = json_member(d, i, "status");
        int lb = json_member(d, i, "labels");
        const char *bad = NULL;
        if (d->tok[i].type != JSON_OBJECT)
            bad = "not an object";
        else if (st < 0 || !(json_str_eq(d, (unsigned)st, "firing") ||
                             json_str_eq(d, (unsigned)st, "resolved")))
            bad = "status is not \"firing\" or \"resolved\"";
        else if (lb < 0 || d->tok[lb].type != JSON_OBJECT)
            bad = "labels is not an object";
        for (unsigned l = bad ? 0 : json_first(d, (unsigned)lb); l;
             l = json_next(d, (unsigned)lb, l))
            if (d->tok[l + 1].type != JSON_STRING)
                bad = "a label's value is not a string";
        if (bad != NULL) {
            snprintf(why, why_len, "alert %u: %s", k, bad);
            return why;
        }
    }
    return NULL;
}

/* Does the Content-Type say JSON ("application/json", any case, with
 * parameters such as charset after ';')? */
static bool serve_alert_is_json(const char *type)
{
    size_t n = strcspn(type, ";");
    while (n > 0 && (type[n - 1] == ' ' || type[n - 1] == '\t'))
        n--;
    return n == 16 && strncasecmp(type, "application/json", 16) == 0;
}

int serve_alerts_handle(struct serve_alerts *a, const struct http_request *r,
                        uint64_t now, struct strbuf *b, const char **type)
{
    static struct json_tok toks[SERVE_ALERT_TOKENS];
    struct json_doc d;
    char err[200], why[120];
    *type = "text/plain; charset=utf-8";
    if (!serve_alert_is_json(r->content_type)) {
        sb_puts(b, "415 Unsupported Media Type: expected Content-Type: "
                "application/json (Alertmanager's webhook)\n");
        return 415;
    }
    int rc = json_parse(&d, r->body ? r->body : "", r->body_len, toks,
                        SERVE_ALERT_TOKENS, err, sizeof err);
    if (rc != JSON_OK) {
        sb_printf(b, "%s: malformed JSON %s\n", rc == JSON_ETOOMANY ?
                  "413 Content Too Large" : "400 Bad Request", err);
        return rc == JSON_ETOOMANY ? 413 : 400;
    }
    int alerts;
    const char *bad = serve_alert_check(&d, &alerts, why, sizeof why);
    if (bad != NULL) {
        sb_printf(b, "400 Bad Request: %s\n", bad);
        return 400;
    }
    struct serve_alert_batch bt = { .a = a, .now = now, .b = b };
    unsigned received = d.tok[alerts].count;
    unsigned handled = received < SERVE_ALERT_MAX ? received : SERVE_ALERT_MAX;
    *type = "application/json";
    sb_printf(b, "{\"received\":%u,\"handled\":%u,\"skipped\":%u,"
              "\"max_alerts\":%d,\"max_dumps\":%d,\"cooldown_s\":%.1f,"
              "\"alerts\":[", received, handled, received - handled,
              SERVE_ALERT_MAX, SERVE_ALERT_DUMPS, (double)a->cooldown_ms / 1e3);
    unsigned k = 0;
    for (unsigned i = json_first(&d, (unsigned)alerts); i && k < handled;
         i = json_next(&d, (unsigned)alerts, i), k++)
        serve_alert_one(&bt, &d, i, k);
    sb_printf(b, "],\"dumped\":%u}\n", bt.dumped);
    disc_list_free(&bt.progs);
    return 200;
}
