/*
 * all.c: the set of programs `eventlog-sink serve --all` follows:
 * every program announced in the discovery directory (tools/discover.c
 * reads it), each with its own connection to its sink (a mon_source), its
 * own model and, with --save-dir, its own copy of each run of its stream
 * (DIR/NAME.PID.N.eventlog).  The set follows programs as they come and
 * go: the directory is rescanned every
 * SERVE_ALL_SCAN_MS, and at once when inotify reports a change in it; a
 * program whose announce file went (it exited or stopped its sink) or
 * whose pid is gone ends once its stream has closed (Note [A program
 * leaving]): its series leave /metrics, and its page, model, timeline
 * and spool are kept a while (Note [Ended programs]).  Each program's
 * stream also feeds its timeline (timeline.c).  It also renders what spans the set: the index page, its
 * JSON, and /metrics with every program's series (render.c's Note
 * [Metric families of many programs]).
 *
 * Note [Bounded fleet]
 * ~~~~~~~~~~~~~~~~~~~~
 * Memory: at most SERVE_ALL_MAX programs are followed, each holding one
 * connection, one model (its tables capped: mon_model_memory_max()) and
 * its source's buffers; programs beyond are counted in the index, and
 * followed once a slot frees.  CPU: a loop turn reads each ready program
 * at most its share of MON_PUMP_MAX (and at least SERVE_ALL_PUMP_MIN), so
 * a program that floods its sink is read a share per turn like the others
 * and cannot starve them (nor the clients: the loop goes round); the set
 * is scanned once a second, not per turn.  The order in which programs
 * are read rotates, so that none is always read last.
 *
 * Not its job: the routes (routes.c), the clients (conn.c),
 * what an announce file says or when an entry is stale (discover.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../discover.h"
#include "../monitor/run.h"
#include "serve.h"
#include "otlp.h"
#include "../tool.h"
#include "monitor/util.h"

#define SERVE_ALL_SCAN_MS 1000
#define SERVE_ALL_PUMP_MIN (64u << 10)
/* How long a program whose announcement went is still read while its
 * stream stays open (Note [A program leaving]). */
#define SERVE_ALL_LEAVE_MS 10000

struct serve_prog {
    long pid;
    uint64_t start;
    char name[128];             /* the announced name (argv[0]'s base) */
    char endpoint[512];
    struct mon_source src;
    struct mon_model *model;
    bool seen;                  /* in the latest scan */
    uint64_t gone_since;        /* its announcement went (0: announced) */
    struct serve_tl *tl;        /* its stream's timeline */
    bool ended;                 /* exited: kept for its page (not read) */
    uint64_t ended_seq;         /* the order in which programs ended */
    struct serve_otlp_prog *otlp;   /* its OTLP export (otlp.h), or NULL */
};

struct serve_all {
    struct serve_prog *progs[SERVE_ALL_MAX];
    unsigned n;
    unsigned rr;                /* where the next turn starts reading */
    unsigned skipped;           /* announced, beyond SERVE_ALL_MAX */
    uint64_t next_scan;
    int watch_fd;               /* inotify on the directory, or -1 */
    bool watching;
    char *save_dir;
    char scan_error[256];
    char *spool_parent;
    uint64_t spool_max, spool_total;
    unsigned keep_ended;
    uint64_t ended_seq;         /* the last program's to end */
    uint64_t forgotten;         /* ended programs forgotten for the bounds */
};

struct serve_all *serve_all_new(const char *save_dir, const char *spool_parent,
                                uint64_t spool_max, unsigned keep_ended,
                                uint64_t spool_total)
{
    struct serve_all *a = calloc(1, sizeof *a);
    if (a == NULL)
        return NULL;
    a->watch_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    a->spool_max = spool_max;
    a->spool_total = spool_total;
    a->keep_ended = keep_ended;
    if ((a->spool_parent = strdup(spool_parent)) == NULL ||
        (save_dir != NULL && (a->save_dir = strdup(save_dir)) == NULL)) {
        serve_all_free(a);
        return NULL;
    }
    return a;
}

static void serve_prog_free(struct serve_prog *p)
{
    serve_otlp_prog_free(p->otlp);      /* before its model goes */
    mon_close(&p->src, p->model);
    serve_tl_free(p->tl);
    free(p);
}

void serve_all_free(struct serve_all *a)
{
    if (a == NULL)
        return;
    for (unsigned i = 0; i < a->n; i++)
        serve_prog_free(a->progs[i]);
    if (a->watch_fd >= 0)
        util_close(a->watch_fd);
    free(a->save_dir);
    free(a->spool_parent);
    free(a);
}

/* The entry's first sink a consumer can connect to (unix: or tcp:). */
static const char *serve_all_endpoint(const struct disc_entry *e)
{
    for (size_t i = 0; i < e->n_sinks; i++) {
        const char *ep = e->sinks[i].endpoint;
        if (ep != NULL && (strncmp(ep, "unix:", 5) == 0 ||
                           strncmp(ep, "tcp:", 4) == 0))
            return ep;
    }
    return NULL;
}

/* Start following e: its own source, model and copy. */
static struct serve_prog *serve_prog_new(struct serve_all *a,
                                         const struct disc_entry *e,
                                         const char *ep)
{
    struct serve_prog *p = calloc(1, sizeof *p);
    if (p == NULL)
        return NULL;
    p->pid = e->pid;
    p->start = e->start;
    snprintf(p->name, sizeof p->name, "%s", e->name ? e->name : "?");
    snprintf(p->endpoint, sizeof p->endpoint, "%s", ep);
    char err[300];
    if (mon_source_init(&p->src, ep, err, sizeof err) < 0) {
        free(p);
        return NULL;
    }
    if (a->save_dir != NULL) {
        /* The name as a file name: no '/' (a base name has none), no
         * leading '.'.  Each run gets DIR/NAME.PID.N.eventlog of its own
         * (Note [Saved runs] in monitor/source.c). */
        char stem[160], safe[128];
        size_t j = 0;
        for (const char *c = p->name; *c != '\0' && j + 1 < sizeof safe; c++)
            safe[j++] = (*c == '/' || (unsigned char)*c < 0x20) ? '_' : *c;
        safe[j] = '\0';
        if (safe[0] == '.')
            safe[0] = '_';
        snprintf(stem, sizeof stem, "%s.%ld", safe, p->pid);
        mon_source_save_runs(&p->src, a->save_dir, stem);
    }
    if (mon_model_new(&p->model) < 0 ||
        (p->tl = serve_tl_new(a->spool_parent, NULL, a->spool_max)) == NULL) {
        if (p->model != NULL)
            mon_model_free(p->model);
        mon_source_close(&p->src);
        free(p);
        return NULL;
    }
    p->src.tap = (struct mon_tap){ .fn = serve_tl_tap, .ctx = p->tl };
    p->otlp = serve_otlp_prog_new(p->model, p->name, p->pid);
    mon_model_set_source(p->model, p->src.spec, "starting");
    return p;
}

static struct serve_prog *serve_all_find(struct serve_all *a, long pid,
                                         uint64_t start)
{
    for (unsigned i = 0; i < a->n; i++)
        if (a->progs[i]->pid == pid &&
            (start == 0 || a->progs[i]->start == start))
            return a->progs[i];
    return NULL;
}

/* Watch the directory for announce files coming and going (it may not
 * exist yet: then the periodic scan finds it, and watches it then). */
static void serve_all_watch(struct serve_all *a)
{
    char dir[4096];
    if (a->watching || a->watch_fd < 0 || disc_dir_path(dir, sizeof dir) < 0)
        return;
    if (inotify_add_watch(a->watch_fd, dir, IN_CREATE | IN_MOVED_TO |
                          IN_DELETE | IN_MOVED_FROM | IN_ONLYDIR) >= 0)
        a->watching = true;
}

/*
 * Note [A program leaving]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * A program removes its announcement when it stops, before its sink has
 * sent the last units and the end marker.  Closing the connection then
 * would lose the end of its run (its last GCs, and the sink counts the
 * units as dropped for want of a consumer), so a program whose
 * announcement went is read while its stream stays open, and forgotten
 * when it closes (the next scan) or after SERVE_ALL_LEAVE_MS, whichever
 * comes first.
 */

/*
 * Note [Ended programs]
 * ~~~~~~~~~~~~~~~~~~~~~
 * A program that exited is what one most often wants to look at after
 * the fact (why did it stall before it died?), so when it leaves (Note
 * [A program leaving]) it is not forgotten but ended: its connection
 * closes, its model ticks once over the whole run (rates are the run's
 * averages) and then holds still, its series leave /metrics (a scrape
 * is of programs that run), and its page /p/PID/, its timeline and its
 * spool stay, listed at / and in /api/programs as ended.  Bounded: the
 * last keep_ended programs to end are kept (--keep-ended), and while
 * the spools of every program together pass spool_total
 * (--spool-total) the oldest ended program is forgotten, and so is one
 * when a new program needs its slot (SERVE_ALL_MAX counts ended ones);
 * /api/programs counts those forgotten.  A program's spool is removed
 * with it.
 */

/* The oldest ended program's index in a->progs, or a->n. */
static unsigned serve_all_oldest_ended(const struct serve_all *a)
{
    unsigned best = a->n;
    for (unsigned i = 0; i < a->n; i++)
        if (a->progs[i]->ended &&
            (best == a->n || a->progs[i]->ended_seq < a->progs[best]->ended_seq))
            best = i;
    return best;
}

static void serve_all_drop(struct serve_all *a, unsigned i)
{
    serve_prog_free(a->progs[i]);
    memmove(&a->progs[i], &a->progs[i + 1], (a->n - i - 1) * sizeof a->progs[0]);
    a->n--;
}

static void serve_all_forget(struct serve_all *a, unsigned i)
{
    serve_all_drop(a, i);
    a->forgotten++;
}

/* A program ended here but announced again (its eventlog stopped and
 * started: `ctl restart`, a hand-over): the kept page gives way to the
 * program followed afresh, as it did before ended pages were kept, so
 * its next run is read (and saved) like any new program's.  Returns the
 * program still followed, or NULL. */
static struct serve_prog *serve_all_revive(struct serve_all *a,
                                           struct serve_prog *p)
{
    if (p == NULL || !p->ended)
        return p;
    for (unsigned i = 0; i < a->n; i++)
        if (a->progs[i] == p) {
            serve_all_drop(a, i);
            break;
        }
    return NULL;
}

/* Keep the ended programs within their bounds (Note [Ended programs]). */
static void serve_all_bound_ended(struct serve_all *a)
{
    for (;;) {
        unsigned ended = 0;
        uint64_t disk = 0;
        for (unsigned i = 0; i < a->n; i++) {
            ended += a->progs[i]->ended;
            disk += serve_tl_disk(a->progs[i]->tl);
        }
        unsigned i = serve_all_oldest_ended(a);
        if (i == a->n || (ended <= a->keep_ended && disk <= a->spool_total))
            return;
        serve_all_forget(a, i);
    }
}

/* p exited: keep what it showed (Note [Ended programs]). */
static void serve_prog_end(struct serve_all *a, struct serve_prog *p)
{
    p->ended = true;
    p->ended_seq = ++a->ended_seq;
    mon_source_close(&p->src);
    mon_model_tick(p->model, 0, true);
    serve_otlp_prog_end(p->otlp);       /* its last figures, as /p/PID/metrics */
}

void serve_all_scan(struct serve_all *a, uint64_t now)
{
    if (a->watch_fd >= 0) {
        /* Drain the watch: a change makes the scan due now. */
        char buf[4096];
        ssize_t n;
        bool woken = false;
        while ((n = read(a->watch_fd, buf, sizeof buf)) > 0)
            woken = true;
        if (woken)
            a->next_scan = now;
    }
    if (now < a->next_scan)
        return;
    a->next_scan = now + SERVE_ALL_SCAN_MS;
    serve_all_watch(a);
    struct disc_list l;
    char err[256] = "";
    if (disc_scan(&l, err, sizeof err) < 0) {
        /* Keep following what we follow; say why on the index. */
        snprintf(a->scan_error, sizeof a->scan_error, "%s", err);
        return;
    }
    a->scan_error[0] = '\0';
    for (unsigned i = 0; i < a->n; i++)
        a->progs[i]->seen = false;
    a->skipped = 0;
    for (size_t k = 0; k < l.n; k++) {
        const struct disc_entry *e = &l.v[k];
        const char *ep = serve_all_endpoint(e);
        if (ep == NULL)
            continue;           /* nothing to connect to (file:, ring:) */
        struct serve_prog *p = serve_all_revive(a, serve_all_find(a, e->pid, e->start));
        if (p != NULL) {
            p->seen = true;
            continue;
        }
        if (a->n == SERVE_ALL_MAX && serve_all_oldest_ended(a) < a->n)
            serve_all_forget(a, serve_all_oldest_ended(a));
        if (a->n == SERVE_ALL_MAX) {
            a->skipped++;
            continue;
        }
        if ((p = serve_prog_new(a, e, ep)) == NULL) {
            a->skipped++;
            continue;
        }
        p->seen = true;
        a->progs[a->n++] = p;
    }
    disc_list_free(&l);
    /* End the programs gone, keeping the others' order; one whose
     * stream is still open is read to its end first. */
    unsigned j = 0;
    for (unsigned i = 0; i < a->n; i++) {
        struct serve_prog *p = a->progs[i];
        if (p->ended) {
            a->progs[j++] = p;
            continue;
        }
        if (!p->seen && p->src.fd >= 0 && !mon_source_is_file(&p->src)) {
            if (p->gone_since == 0)
                p->gone_since = now;
            p->seen = now - p->gone_since < SERVE_ALL_LEAVE_MS;
        }
        if (p->seen) {
            a->progs[j++] = p;
        } else if (a->keep_ended > 0) {
            serve_prog_end(a, p);
            a->progs[j++] = p;
        } else {
            serve_prog_free(p);
        }
    }
    a->n = j;
    serve_all_bound_ended(a);
    if (a->rr >= a->n)
        a->rr = 0;
}

unsigned serve_all_pollfds(struct serve_all *a, struct pollfd *pfd,
                           uint64_t now, uint64_t *wait)
{
    unsigned k = 0;
    pfd[k++] = (struct pollfd){ .fd = a->watching ? a->watch_fd : -1,
                                .events = POLLIN };
    for (unsigned i = 0; i < a->n; i++) {
        struct mon_source *src = &a->progs[i]->src;
        bool ended = a->progs[i]->ended;
        pfd[k++] = (struct pollfd){ .fd = ended ? -1 : mon_source_fd(src),
                                    .events = POLLIN };
        if (ended)
            continue;
        uint64_t w = mon_source_wait_ms(src, now);
        if (w < *wait)
            *wait = w;
    }
    uint64_t scan = a->next_scan > now ? a->next_scan - now : 0;
    if (scan < *wait)
        *wait = scan;
    return k;
}

bool serve_all_pump(struct serve_all *a, const struct pollfd *pfd,
                    unsigned npfd, uint64_t now)
{
    if (a->n == 0)
        return false;
    uint64_t share = MON_PUMP_MAX / a->n;
    if (share < SERVE_ALL_PUMP_MIN)
        share = SERVE_ALL_PUMP_MIN;
    bool more = false;
    unsigned n = a->n, first = a->rr;
    for (unsigned k = 0; k < n; k++) {
        unsigned i = (first + k) % n;
        struct serve_prog *p = a->progs[i];
        if (p->ended)
            continue;
        int fd = mon_source_fd(&p->src);
        /* pfd[0] is the watch; the programs follow in order (the set
         * does not change between serve_all_pollfds() and here). */
        bool ready = i + 1 < npfd && pfd[i + 1].fd == fd && fd >= 0 &&
                     pfd[i + 1].revents != 0;
        /* Not ready: only a source waiting for its retry is due (a
         * connected one waits for ever). */
        if (!ready && mon_source_wait_ms(&p->src, now) > 0)
            continue;
        if (mon_source_pump(&p->src, p->model, now, share) >= share)
            more = true;
    }
    a->rr = (first + 1) % n;
    return more;
}

void serve_all_tick(struct serve_all *a, uint64_t wall_ns)
{
    for (unsigned i = 0; i < a->n; i++)
        if (!a->progs[i]->ended)        /* held still: Note [Ended programs] */
            mon_model_tick(a->progs[i]->model, wall_ns, false);
}

struct serve_tl *serve_all_timeline(struct serve_all *a, long pid,
                                    uint64_t start)
{
    struct serve_prog *p = serve_all_find(a, pid, start);
    return p != NULL ? p->tl : NULL;
}

struct mon_model *serve_all_model(struct serve_all *a, long pid,
                                  uint64_t *start)
{
    struct serve_prog *p = serve_all_find(a, pid, *start);
    if (p == NULL)
        return NULL;
    *start = p->start;
    return p->model;
}

void serve_all_prometheus(struct serve_all *a, struct strbuf *b)
{
    const struct mon_model *ms[SERVE_ALL_MAX];
    unsigned n = 0;
    for (unsigned i = 0; i < a->n; i++)
        if (!a->progs[i]->ended)        /* Note [Ended programs] */
            ms[n++] = a->progs[i]->model;
    mon_models_prometheus(ms, n, true, b);
}

/* s as HTML text: markup characters escaped, control bytes shown as '?'. */
static void sb_html(struct strbuf *b, const char *s)
{
    for (; *s != '\0'; s++) {
        switch (*s) {
        case '&': sb_puts(b, "&amp;"); break;
        case '<': sb_puts(b, "&lt;"); break;
        case '>': sb_puts(b, "&gt;"); break;
        case '"': sb_puts(b, "&quot;"); break;
        case '\'': sb_puts(b, "&#39;"); break;
        default:
            if ((unsigned char)*s < 0x20 || *s == 0x7f)
                sb_puts(b, "?");
            else
                sb_put(b, s, 1);
        }
    }
}

/* Bytes in the monitor's one unit family: SI prefixes, powers of 1000
 * (kB, MB), as top and the page show them. */
static void serve_all_bytes(char *out, size_t cap, uint64_t v)
{
    static const char *const unit[] = { "B", "kB", "MB", "GB", "TB" };
    double d = (double)v;
    int i = 0;
    while (d >= 1000 && i < 4) {
        d /= 1000;
        i++;
    }
    snprintf(out, cap, i == 0 ? "%.0f %s" : "%.1f %s", d, unit[i]);
}

void serve_all_index_html(struct serve_all *a, struct strbuf *b)
{
    sb_puts(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"refresh\" content=\"2\">"
            "<title>eventlog-sink: programs</title>"
            "<link rel=\"stylesheet\" href=\"style.css\"></head><body>\n"
            "<h1>Programs on this host</h1>\n");
    sb_printf(b, "<p id=\"summary\">%u followed", a->n);
    if (a->skipped > 0)
        sb_printf(b, ", %u more announced beyond the limit of %d",
                  a->skipped, SERVE_ALL_MAX);
    sb_puts(b, " &middot; <a href=\"metrics\">/metrics</a></p>\n");
    if (a->scan_error[0] != '\0') {
        sb_puts(b, "<p class=\"error\">");
        sb_html(b, a->scan_error);
        sb_puts(b, "</p>\n");
    }
    sb_puts(b, "<table id=\"programs\"><thead><tr><th>program</th><th>pid</th>"
            "<th>GC collections</th><th>GC pause p99</th><th>heap</th><th>live</th>"
            "<th>lost units</th><th>stream</th></tr></thead><tbody>\n");
    for (unsigned i = 0; i < a->n; i++) {
        const struct serve_prog *p = a->progs[i];
        struct mon_health h;
        mon_model_health(p->model, &h);
        char heap[32], live[32];
        serve_all_bytes(heap, sizeof heap, h.heap_size);
        serve_all_bytes(live, sizeof live, h.heap_live);
        sb_printf(b, "<tr class=\"program\" data-pid=\"%ld\"><td><a href=\"p/%ld/\">",
                  p->pid, p->pid);
        sb_html(b, p->name);
        sb_printf(b, "</a></td><td>%ld</td><td>%" PRIu64 "</td><td>%.3f ms</td>"
                  "<td>%s</td><td>%s</td><td%s>%" PRIu64 "</td><td>",
                  p->pid, h.collections, (double)h.pause_p99_ns / 1e6, heap, live,
                  h.lost_units > 0 ? " class=\"error\"" : "", h.lost_units);
        sb_html(b, p->ended ? "exited" : h.bytes > 0 ? (h.ended ? "ended" : "live") :
                p->src.fd >= 0 ? "connected" : "connecting");
        sb_puts(b, "</td></tr>\n");
    }
    sb_puts(b, "</tbody></table>\n</body></html>\n");
}

void serve_all_index_json(struct serve_all *a, struct strbuf *b)
{
    sb_printf(b, "{\"max\":%d,\"skipped\":%u,\"keep_ended\":%u,"
              "\"ended_forgotten\":%" PRIu64 ",\"programs\":[", SERVE_ALL_MAX,
              a->skipped, a->keep_ended, a->forgotten);
    for (unsigned i = 0; i < a->n; i++) {
        const struct serve_prog *p = a->progs[i];
        struct mon_health h;
        mon_model_health(p->model, &h);
        sb_printf(b, "%s{\"pid\":%ld,\"name\":", i ? "," : "", p->pid);
        sb_json_str(b, p->name, strlen(p->name));
        sb_puts(b, ",\"endpoint\":");
        sb_json_str(b, p->endpoint, strlen(p->endpoint));
        sb_printf(b, ",\"url\":\"p/%ld/\",\"gc_collections\":%" PRIu64
                  ",\"gc_pause_p99_ns\":%" PRIu64 ",\"heap_size\":%" PRIu64
                  ",\"heap_live\":%" PRIu64 ",\"lost_units\":%" PRIu64
                  ",\"bytes\":%" PRIu64 ",\"ended\":%s,\"spool_bytes\":%" PRIu64
                  "}", p->pid, h.collections, h.pause_p99_ns,
                  h.heap_size, h.heap_live, h.lost_units, h.bytes,
                  p->ended ? "true" : "false", serve_tl_disk(p->tl));
    }
    sb_puts(b, "]}");
}
