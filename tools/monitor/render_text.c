/*
 * render_text.c: the terminal view of the monitor model
 * (mon_model_text() in model.h), one function per section, on lines of
 * about the terminal's width.  The stream's strings are shown through
 * safetext.c: nothing a stream sends can drive the terminal.  Reads the
 * model; changes nothing.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "render.h"
#include "safetext.h"

/* s (n bytes from the stream) in its safe form (safetext.h), at
 * most max bytes of it, cut at a character; "" when n is 0. */
static void mon_safe(struct strbuf *sb, const char *s, size_t n, size_t max)
{
    char c[SAFETEXT_CHAR_MAX];
    size_t i = 0, out = 0;
    while (i < n) {
        size_t l, took = safetext_char(s + i, n - i, c, &l);
        if (out + l > max)
            return;
        sb_put(sb, c, l);
        out += l;
        i += took;
    }
}

/* As mon_safe(), but a name too long for max loses its start, not its
 * end: "...Data.Map.Internal.Bin" (a closure's or module's last part
 * tells it apart).  Cut at a character. */
static void mon_safe_tail(struct strbuf *sb, const char *s, size_t n, size_t max)
{
    char c[SAFETEXT_CHAR_MAX];
    size_t need = 0;
    for (size_t i = 0; i < n;) {
        size_t l;
        i += safetext_char(s + i, n - i, c, &l);
        need += l;
    }
    if (need <= max || max < 4) {
        mon_safe(sb, s, n, max);
        return;
    }
    /* Skip characters until the rest fits after "...". */
    size_t i = 0;
    while (i < n && need > max - 3) {
        size_t l;
        i += safetext_char(s + i, n - i, c, &l);
        need -= l;
    }
    sb_puts(sb, "...");
    mon_safe(sb, s + i, n - i, max - 3);
}

static void mon_safe_str(struct strbuf *sb, const char *s, size_t max)
{
    mon_safe(sb, s, strlen(s), max);
}

/* Items on lines of about width columns: the first line starts with
 * lead, the next ones with as many spaces. */
struct mon_wrap {
    struct strbuf *sb;
    unsigned width, col;
    const char *lead;
};

static void mon_wrap_item(struct mon_wrap *w, const struct strbuf *item)
{
    size_t lead = strlen(w->lead);
    if (w->col == 0) {
        sb_puts(w->sb, w->lead);
        w->col = (unsigned)lead;
    } else if (w->col + 2 + item->len > w->width) {
        sb_printf(w->sb, "\n%*s", (int)lead, "");
        w->col = (unsigned)lead;
    } else {
        sb_puts(w->sb, "  ");
        w->col += 2;
    }
    if (item->p != NULL)
        sb_put(w->sb, item->p, item->len);
    w->col += (unsigned)item->len;
}

static void mon_wrap_end(struct mon_wrap *w)
{
    if (w->col > 0)
        sb_puts(w->sb, "\n");
}

static void mon_human(char *out, size_t cap, double v, const char *unit)
{
    static const char *const pre[] = { "", "k", "M", "G", "T" };
    int i = 0;
    while (v >= 1000 && i < 4) {
        v /= 1000;
        i++;
    }
    snprintf(out, cap, i == 0 ? "%.0f %s%s" : "%.1f %s%s", v, pre[i], unit);
}

/* The source's state (a path, a reason) on lines of its own, wrapped
 * at spaces, so that the header never wraps on a narrow terminal. */
static void mon_text_source(const struct mon_model *m, struct strbuf *sb,
                        unsigned width)
{
    struct strbuf word = { 0 };
    const char *p = m->src.state;
    size_t col = 0;
    sb_puts(sb, "Source  ");
    col = 8;
    while (*p != '\0') {
        size_t n = strcspn(p, " ");
        if (n > 0) {
            sb_clear(&word);
            mon_safe(&word, p, n, width - 9);
            if (col > 8 && col + 1 + word.len > width) {
                sb_puts(sb, "\n        ");
                col = 8;
            }
            sb_puts(sb, " ");
            sb_put(sb, word.p, word.len);
            col += 1 + word.len;
        }
        p += n;
        while (*p == ' ')
            p++;
    }
    sb_puts(sb, "\n");
    sb_free(&word);
}

/* The program, the source, the bytes and events received, errors and
 * loss. */
static void mon_text_head(const struct mon_model *m, struct strbuf *sb,
                          unsigned width)
{
    char a[32], b[32], c[32], d[32];
    sb_puts(sb, "eventlog-sink top: ");
    if (m->run.program[0])
        mon_safe_tail(sb, m->run.program, strlen(m->run.program), width - 55);
    else
        sb_puts(sb, "(program?)");
    sb_printf(sb, " pid %" PRIu32 "  run %" PRIu64 "  t=%.1f s\n", m->run.pid,
              m->src.connections, (double)m->run.now / 1e9);
    mon_text_source(m, sb, width);
    mon_human(a, sizeof a, (double)m->src.bytes, "B");
    mon_human(b, sizeof b, m->rate.bytes, "B/s");
    mon_human(c, sizeof c, (double)m->counts.events, "");
    mon_human(d, sizeof d, m->rate.events, "/s");
    sb_printf(sb, "Received %s (%s)  events %s(%s)  streams %" PRIu64 "%s%s\n",
              a, b, c, d, m->run.streams, m->run.ended ? "  [ended]" : "",
              m->failed ? "  [malformed]" : "");
    if (m->failed) {
        sb_puts(sb, "Error: ");
        mon_safe_str(sb, m->error, SIZE_MAX);
        sb_puts(sb, "\n");
    }
    uint64_t lost = m->loss.dropped_units + m->loss.missed_units + m->loss.late_units;
    if (m->loss.loss_notes > 0)
        sb_printf(sb, "LOSS: %" PRIu64 " units (%" PRIu64 " dropped, %" PRIu64
                  " missed, %" PRIu64 " before joining), %" PRIu64 " notes\n",
                  lost, m->loss.dropped_units, m->loss.missed_units, m->loss.late_units, m->loss.loss_notes);
    else
        sb_puts(sb, "Loss: none reported\n");
    if (m->loss.joined_at_snapshot)
        sb_puts(sb, "Joined mid-run, at a snapshot of the program's state\n");
}

/* Each capability: its state, utilisation and GC share, and a bar. */
static void mon_text_caps(const struct mon_model *m, struct strbuf *sb,
                          unsigned width)
{
    sb_puts(sb, "\nHEC state    util   gc    pool  activity\n");
    unsigned barw = width > 40 ? width - 36 : 4;
    for (unsigned i = 0; i < m->caps.n; i++) {
        const struct mon_cap *cp = &m->caps.at[i];
        if (!cp->seen)
            continue;
        sb_printf(sb, "%3u %-8s %4.0f%% %4.0f%% %5" PRIu64 "  ", i,
                  mon_state_name(cp->state), cp->util * 100, cp->gc_frac * 100,
                  cp->sp[SP_REMAINING]);
        unsigned r = (unsigned)(cp->util * barw + 0.5), g = (unsigned)(cp->gc_frac * barw + 0.5);
        if (r > barw) r = barw;
        if (g > barw - r) g = barw - r;
        for (unsigned k = 0; k < barw; k++)
            { char ch = k < r ? '#' : k < r + g ? 'G' : '.'; sb_put(sb, &ch, 1); }
        sb_puts(sb, "\n");
    }
}

/* Collections (Note [Collections]) and their pauses. */
static void mon_text_gc(const struct mon_model *m, struct strbuf *sb)
{
    uint64_t p50, rmax;
    mon_pause_pcts(m, &p50, &rmax);
    sb_printf(sb, "\nGC       %" PRIu64 " collections", mon_collections(m));
    for (unsigned g = 0; g < m->gc.ngens; g++)
        sb_printf(sb, "%sgen %u: %" PRIu64, g ? ", " : " (", g, m->gc.gen_colls[g]);
    /* Lines of at most 80 columns for the usual figures. */
    sb_printf(sb, "%s  %.1f/s\n         pause p50 %.2f ms  max %.2f ms\n",
              m->gc.ngens ? ")" : "", m->rate.gcs, (double)p50 / 1e6,
              (double)m->gc.pause_max / 1e6);
    if (m->gc.ngens > 0) {
        sb_puts(sb, "         max pause");
        for (unsigned g = 0; g < m->gc.ngens; g++)
            sb_printf(sb, "%s gen %u %.2f ms", g ? "," : "", g,
                      (double)m->gc.gen_pause_max[g] / 1e6);
        sb_puts(sb, "\n");
    }
    sb_printf(sb, "         GC starts %" PRIu64 " (every capability's)\n"
              "         time in GC %.1f%% of %u cap%s' time (%.2f s summed)%s\n",
              m->gc.starts, m->rate.gc_frac * 100, m->gc.caps, m->gc.caps == 1 ? "" : "s",
              (double)m->gc.ns / 1e9, m->rate.whole_run ? ", whole run" : "");
}

/* The heap, and after the end the last census beside the live bytes. */
static void mon_text_heap(const struct mon_model *m, struct strbuf *sb)
{
    char a[32], b[32], c[32], d[32];
    mon_human(a, sizeof a, (double)m->heap.size, "B");
    mon_human(b, sizeof b, (double)m->heap.live, "B");
    mon_human(c, sizeof c, m->rate.alloc, "B/s");
    mon_human(d, sizeof d, (double)mon_allocated(m), "B");
    sb_printf(sb, "Heap     size %s  live %s  alloc %s (total %s)\n", a, b, c, d);
    /* After the end the last census stands beside the live bytes; they
     * come from different moments (a census runs every -i of mutator
     * time, live data is the last collection's). */
    if (m->run.ended && m->heap.censuses > 0) {
        mon_human(a, sizeof a, (double)m->heap.census.bytes, "B");
        mon_human(b, sizeof b, (double)m->heap.live, "B");
        sb_printf(sb, "         census %" PRIu64 " %s at %.1f s, live %s at %.1f s:"
                  " different moments\n", m->heap.censuses, a,
                  (double)m->heap.census.t / 1e9, b, (double)m->heap.live_t / 1e9);
    }
}

/* Threads, and their stops by reason, most first, with the time to the
 * next run. */
static void mon_text_threads(const struct mon_model *m, struct strbuf *sb,
                             unsigned width)
{
    uint64_t runnable, running, blocked;
    mon_thread_counts(m, &runnable, &running, &blocked);
    if (m->run.ended)               /* Note [After the end] */
        sb_printf(sb, "Threads  at the end: %" PRIu32 " not finished  (created %" PRIu64
                  ")\n         last seen running %" PRIu64 ", runnable %" PRIu64
                  ", blocked %" PRIu64 "\n", m->threads.alive.used, m->threads.created,
                  running, runnable, blocked);
    else
        sb_printf(sb, "Threads  alive %" PRIu32 "  running %" PRIu64 "  runnable %" PRIu64
                  "  blocked %" PRIu64 "  (created %" PRIu64 ")\n", m->threads.alive.used,
                  running, runnable, blocked, m->threads.created);
    unsigned rank[MON_STOPS];
    unsigned n = mon_rank(m->stops.n, MON_STOPS, rank);
    struct strbuf item = { 0 };
    struct mon_wrap w = { sb, width, 0, "Stops    " };
    for (unsigned i = 0; i < n; i++) {
        char buf[48];
        sb_clear(&item);
        sb_printf(&item, "%s %" PRIu64 " (%.3f s)", mon_stop_name(rank[i], buf, sizeof buf),
                  m->stops.n[rank[i]], (double)m->stops.ns[rank[i]] / 1e9);
        mon_wrap_item(&w, &item);
    }
    mon_wrap_end(&w);
    sb_free(&item);
}

/* Sparks, events per second by class. */
static void mon_text_sparks(const struct mon_model *m, struct strbuf *sb)
{
    sb_printf(sb, "Sparks/s created %.0f  converted %.0f  fizzled %.0f  overflowed %.0f"
              "  GC'd %.0f  pool %.0f\n", m->rate.sp[SP_CREATED],
              m->rate.sp[SP_CONVERTED], m->rate.sp[SP_FIZZLED],
              m->rate.sp[SP_OVERFLOWED], m->rate.sp[SP_GCD], m->rate.sp[SP_REMAINING]);
    uint64_t sp[7];
    mon_spark_totals(m, sp);
    if (sp[SP_CREATED] || sp[SP_DUD] || sp[SP_OVERFLOWED])
        sb_printf(sb, "Sparks   %s created %" PRIu64 "  converted %" PRIu64
                  "  fizzled %" PRIu64 "  overflowed %" PRIu64 "  GC'd %" PRIu64
                  "  dud %" PRIu64 "\n", m->run.midrun ? "in the stream" : "in all",
                  sp[SP_CREATED], sp[SP_CONVERTED], sp[SP_FIZZLED],
                  sp[SP_OVERFLOWED], sp[SP_GCD], sp[SP_DUD]);
    sb_puts(sb, "Events/s");
    for (int i = 0; i < MON_CLASS_N; i++)
        if (m->counts.by_class[i] > 0)
            sb_printf(sb, " %s %.0f", mon_class_name((enum mon_class)i), m->rate.class[i]);
    sb_puts(sb, "\n");
}

/* Event types: the most events, and the most bytes. */
static void mon_text_types(const struct mon_model *m, struct strbuf *sb,
                           unsigned width)
{
    char a[32];
    unsigned rank[MON_TAGS + 1], n;
    struct strbuf item = { 0 };
    struct mon_wrap w;
    uint64_t tbytes[MON_TAGS + 1];
    mon_types_bytes(m, tbytes);
    for (int by_bytes = 0; by_bytes < 2; by_bytes++) {
        n = mon_rank(by_bytes ? tbytes : m->counts.type_n, MON_TAGS + 1, rank);
        w = (struct mon_wrap){ sb, width, 0, by_bytes ? "  bytes  " : "  count  " };
        for (unsigned i = 0; i < n && i < 6; i++) {
            char buf[48];
            const char *t = mon_type_name(m, rank[i], buf, sizeof buf);
            sb_clear(&item);
            mon_safe_str(&item, t, 60);
            if (by_bytes) {
                mon_human(a, sizeof a, (double)tbytes[rank[i]], "B");
                sb_printf(&item, " %s", a);
            } else {
                sb_printf(&item, " %" PRIu64, m->counts.type_n[rank[i]]);
            }
            mon_wrap_item(&w, &item);
        }
        mon_wrap_end(&w);
    }
    sb_free(&item);
}

/* User messages and markers: counts and the last of each. */
static void mon_text_user(const struct mon_model *m, struct strbuf *sb,
                          unsigned width)
{
    sb_printf(sb, "User     messages %" PRIu64 "  markers %" PRIu64 "  (%.0f/s)\n",
              m->user.messages, m->user.markers, m->rate.user);
    if (m->user.markers > 0) {
        const struct mon_text *t = &m->user.marks[(m->user.markers - 1) % MON_MARKS];
        sb_printf(sb, "  last marker at %.3f s: ", (double)t->t / 1e9);
        mon_safe_str(sb, t->s, width - 30);
        sb_puts(sb, "\n");
    }
    if (m->user.messages > 0) {
        const struct mon_text *t = &m->user.msgs[(m->user.messages - 1) % MON_RECENT];
        sb_printf(sb, "  last message at %.3f s: ", (double)t->t / 1e9);
        mon_safe_str(sb, t->s, width - 30);
        sb_puts(sb, "\n");
    }
}

/* The last heap census, largest bands first. */
static void mon_text_census(const struct mon_model *m, struct strbuf *sb,
                            unsigned width)
{
    char a[32];
    struct strbuf item = { 0 };
    const struct mon_census *cs = &m->heap.census;
    if (m->heap.censuses > 0) {
        mon_human(a, sizeof a, (double)cs->bytes, "B");
        sb_printf(sb, "Heap census %" PRIu64 " at %.3f s by %s: %" PRIu64 " band%s, %s\n",
                  m->heap.censuses, (double)cs->t / 1e9,
                  mon_breakdown_name(m->heap.breakdown), cs->bands_all,
                  cs->bands_all == 1 ? "" : "s", a);
        unsigned order[MON_BANDS];
        mon_band_order(cs, order);
        uint64_t shown = 0;
        unsigned k = 0;
        for (; k < cs->nbands && k < 5; k++) {
            const struct mon_band *bd = &cs->bands[order[k]];
            mon_band_name(m, bd, &item);
            mon_human(a, sizeof a, (double)bd->bytes, "B");
            sb_printf(sb, "  %10s  ", a);
            mon_safe_tail(sb, item.p ? item.p : "", item.len, width - 14);
            sb_puts(sb, "\n");
            shown += bd->bytes;
        }
        if (cs->bands_all > k) {
            mon_human(a, sizeof a, (double)(cs->bytes - shown), "B");
            sb_printf(sb, "  %10s  (%" PRIu64 " more band%s)\n", a, cs->bands_all - k,
                      cs->bands_all - k == 1 ? "" : "s");
        }
    }
    sb_free(&item);
}

/* The top cost centres, the RTS's own apart, what the model refused,
 * the last note. */
static void mon_text_prof(const struct mon_model *m, struct strbuf *sb,
                          unsigned width)
{
    if (m->prof.ntop > 0) {
        sb_puts(sb, m->rate.whole_run ? "Top cost centres (samples over the whole run):\n"
                                 : "Top cost centres (samples in the last interval):\n");
        for (unsigned i = 0; i < m->prof.ntop && i < 5; i++) {
            sb_printf(sb, "  %8" PRIu64 "  ", m->prof.top[i].n);
            mon_safe_str(sb, mon_cc_name(m, m->prof.top[i].id), width - 12);
            sb_puts(sb, "\n");
        }
    }
    /* The RTS's own cost centres, apart (as GHC's report leaves them
     * out of its tables). */
    uint64_t rts_total = 0;
    for (int k = MON_CC_GC; k < MON_CC_BUILTINS; k++)
        rts_total += m->prof.kind_samples[k];
    if (rts_total > 0) {
        sb_puts(sb, m->rate.whole_run ? "RTS cost centres (samples over the whole run):"
                                 : "RTS cost centres (samples in the last interval):");
        for (int k = MON_CC_GC; k < MON_CC_BUILTINS; k++)
            sb_printf(sb, " %s %" PRIu64, mon_builtin_names[k], m->prof.kind_interval[k]);
        sb_puts(sb, "\n");
    }
    if (m->threads.untracked || m->prof.ccs_refused || m->prof.strings_cut)
        sb_printf(sb, "Refused  threads untracked %" PRIu64 "  cost centres %" PRIu64
                  "  names cut %" PRIu64 " (the monitor's limits)\n",
                  m->threads.untracked, m->prof.ccs_refused, m->prof.strings_cut);
    if (m->loss.notes > 0) {
        const struct mon_text *t = &m->loss.note_texts[(m->loss.notes - 1) % MON_RECENT];
        sb_puts(sb, "Last note: ");
        mon_safe_str(sb, t->s, width - 11);
        sb_puts(sb, "\n");
    }
}

void mon_model_text(const struct mon_model *m, struct strbuf *sb, unsigned width)
{
    if (width < 60)
        width = 60;
    mon_text_head(m, sb, width);
    mon_text_caps(m, sb, width);
    mon_text_gc(m, sb);
    mon_text_heap(m, sb);
    mon_text_threads(m, sb, width);
    mon_text_sparks(m, sb);
    mon_text_types(m, sb, width);
    mon_text_user(m, sb, width);
    mon_text_census(m, sb, width);
    mon_text_prof(m, sb, width);
}
