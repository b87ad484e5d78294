/*
 * render.c: the monitor model's outputs (see model.h): the views' JSON,
 * the run's timeline, speedscope profiles, Prometheus text and the
 * terminal view's text.  Reads the state model.c builds (model_impl.h);
 * changes nothing.  The model keeps a stream's strings as the bytes
 * arrived: the JSON renderers escape them as JSON (exact text), the
 * terminal view shows them through safetext.c (nothing a stream
 * sends can drive the terminal).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "safetext.h"
#include "model_impl.h"

static int mon_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* ------------------------------------------------------------------------
 * Renderers
 * ------------------------------------------------------------------------ */

static void mon_pause_pcts(const struct mon_model *m, uint64_t *p50,
                           uint64_t *recent_max)
{
    unsigned n = m->gc.npauses < MON_PAUSES ? m->gc.npauses : MON_PAUSES;
    *p50 = *recent_max = 0;
    if (n == 0)
        return;
    uint64_t tmp[MON_PAUSES];
    memcpy(tmp, m->gc.pauses, n * sizeof tmp[0]);
    qsort(tmp, n, sizeof tmp[0], mon_cmp_u64);
    *p50 = tmp[(n - 1) / 2];
    *recent_max = tmp[n - 1];
}

/* The last census's bands, largest first, ties in the census's order
 * (insertion sort: at most MON_BANDS). */
static void mon_band_order(const struct mon_census *c, unsigned *order)
{
    for (unsigned i = 0; i < c->nbands; i++)
        order[i] = i;
    for (unsigned i = 1; i < c->nbands; i++)
        for (unsigned j = i; j > 0; j--) {
            const struct mon_band *a = &c->bands[order[j]], *b = &c->bands[order[j - 1]];
            if (a->bytes < b->bytes || (a->bytes == b->bytes && a->seq > b->seq))
                break;
            unsigned t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
}

static const char *mon_cc_name(const struct mon_model *m, uint32_t id)
{
    if (id < m->prof.nccs && m->prof.ccs[id].label != NULL)
        return m->prof.ccs[id].label;
    return "?";
}

/* A band's name as the stream's bytes (each view escapes it for its
 * medium): a string band's text, or a cost-centre stack as the RTS
 * names it in its .hp file (rts/ProfHeap.c's fprint_ccs(), without
 * the stack's number, which the eventlog does not carry): labels from
 * the innermost cost centre out, joined by "/", a CAF as MODULE.CAF,
 * "/..." after MON_STACK frames. */
static void mon_band_name(const struct mon_model *m, const struct mon_band *b,
                          struct strbuf *out)
{
    sb_clear(out);
    if (b->depth == 0) {
        sb_puts(out, b->u.s);
        return;
    }
    for (unsigned i = 0; i < b->depth; i++) {
        uint32_t id = b->u.ids[i];
        const char *l = mon_cc_name(m, id);
        if (i > 0)
            sb_puts(out, "/");
        if (strcmp(l, "CAF") == 0 && m->prof.ccs[id].module != NULL) {
            sb_puts(out, m->prof.ccs[id].module);
            sb_puts(out, ".CAF");
        } else {
            sb_puts(out, l);
        }
    }
    if (b->deeper)
        sb_puts(out, "/...");
}

/* GHC's HEAP_PROF_BREAKDOWN_* (rts/EventLogFormat.h) in words. */
static const char *mon_breakdown_name(uint32_t b)
{
    static const char *const names[] = {
        "?", "cost-centre stack (-hc)", "module (-hm)",
        "closure description (-hd)", "type description (-hy)",
        "retainer set (-hr)", "biography (-hb)", "closure type (-hT)",
    };
    return b < sizeof names / sizeof names[0] ? names[b] : "?";
}

/* STOP_THREAD's status in words, as GHC 9.0.2 posts it (1-5: StgRun's
 * return codes; 6: a safe foreign call; 6 + why_blocked for a blocked
 * thread: includes/rts/Constants.h). */
static const char *mon_stop_name(unsigned status, char *buf, size_t cap)
{
    static const char *const names[] = {
        [1] = "heap overflow", [2] = "stack overflow", [3] = "yielding",
        [4] = "blocked", [5] = "finished", [6] = "foreign call",
        [7] = "blocked on MVar", [8] = "blocked on black hole",
        [9] = "blocked on I/O read", [10] = "blocked on I/O write",
        [11] = "blocked on delay", [12] = "blocked in STM retry",
        [13] = "blocked on asyncDoProc", [16] = "blocked in foreign call",
        [17] = "blocked in interruptible foreign call",
        [18] = "blocked in throwTo", [19] = "migrating",
        [20] = "blocked reading MVar", [21] = "blocked on I/O completion",
    };
    if (status < sizeof names / sizeof names[0] && names[status] != NULL)
        return names[status];
    if (status == MON_STOPS - 1)
        snprintf(buf, cap, "status %u or more", status);
    else
        snprintf(buf, cap, "status %u", status);
    return buf;
}

/* An event type's name: the stream's own description of its tag. */
static const char *mon_type_name(const struct mon_model *m, unsigned k,
                                 char *buf, size_t cap)
{
    if (k < MON_TAGS) {
        const struct els_event_type *ty = els_parser_event_type(m->parser, (uint16_t)k);
        if (ty != NULL && ty->desc != NULL && ty->desc[0] != '\0')
            return ty->desc;
        snprintf(buf, cap, "type %u", k);
    } else {
        snprintf(buf, cap, "types %u and above", MON_TAGS);
    }
    return buf;
}

/* The bytes of tag k's events in the stream: each one's tag and time,
 * the size field of a type the header declares of variable size, and
 * the payloads (model.c's mon_count_type()).  The tags past MON_TAGS
 * are counted together: their size fields are not told apart. */
static uint64_t mon_type_bytes(const struct mon_model *m, unsigned k)
{
    const struct els_event_type *ty =
        k < MON_TAGS ? els_parser_event_type(m->parser, (uint16_t)k) : NULL;
    bool var = ty != NULL && ty->size == ELS_EVENT_SIZE_VARIABLE;
    return m->counts.type_n[k] * (var ? 12 : 10) + m->counts.type_payload[k];
}

/* Every event type's bytes (for ranking). */
static void mon_types_bytes(const struct mon_model *m, uint64_t *out)
{
    for (unsigned k = 0; k <= MON_TAGS; k++)
        out[k] = m->counts.type_n[k] ? mon_type_bytes(m, k) : 0;
}

/* Indexes of the non-zero entries of v[0..n), largest first (ties:
 * lower index first); returns how many. */
static unsigned mon_rank(const uint64_t *v, unsigned n, unsigned *order)
{
    unsigned k = 0;
    for (unsigned i = 0; i < n; i++) {
        if (v[i] == 0)
            continue;
        unsigned j = k++;
        while (j > 0 && v[order[j - 1]] < v[i]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    return k;
}

static const char *mon_state_name(enum mon_cap_state s)
{
    return s == CAP_RUN ? "running" : s == CAP_GC ? "gc" : "idle";
}

static void mon_json_texts(struct strbuf *sb, const struct mon_text *ring,
                           uint64_t n, unsigned size, unsigned want)
{
    unsigned k = n < size ? (unsigned)n : size;
    if (k > want)
        k = want;
    sb_puts(sb, "[");
    for (unsigned i = 0; i < k; i++) {
        const struct mon_text *t = &ring[(n - k + i) % size];
        sb_printf(sb, "%s{\"t\":%" PRIu64 ",\"cap\":%d,\"text\":", i ? "," : "",
                  t->t, (int)t->cap);
        sb_json_str(sb, t->s, strlen(t->s));
        sb_puts(sb, "}");
    }
    sb_puts(sb, "]");
}

/* Spark counters' totals as of the last tick: the change within the
 * stream for one that starts mid-run (Note [Mid-run streams] in
 * model.c); the pool (SP_REMAINING) as it is. */
static void mon_spark_totals(const struct mon_model *m, uint64_t sp[7])
{
    uint64_t base[7];
    mon_spark_base(m, base);
    for (int k = 0; k < 7; k++)
        sp[k] = m->rate.prev_sp[k] > base[k] ? m->rate.prev_sp[k] - base[k] : 0;
}

/* Allocation: the capabilities' sum, less what came before a mid-run
 * stream's start. */
static uint64_t mon_allocated(const struct mon_model *m)
{
    uint64_t base = mon_alloc_base(m);
    return m->heap.alloc > base ? m->heap.alloc - base : 0;
}

void mon_model_json(const struct mon_model *m, struct strbuf *sb)
{
    uint64_t runnable, running, blocked;
    mon_thread_counts(m, &runnable, &running, &blocked);
    uint64_t p50, rmax;
    mon_pause_pcts(m, &p50, &rmax);

    sb_puts(sb, "{\"program\":{\"name\":");
    sb_json_str(sb, m->run.program, strlen(m->run.program));
    sb_printf(sb, ",\"pid\":%" PRIu32 ",\"rts\":", m->run.pid);
    sb_json_str(sb, m->run.rts, strlen(m->run.rts));
    sb_puts(sb, "},\"source\":{\"spec\":");
    sb_json_str(sb, m->src.spec, strlen(m->src.spec));
    sb_puts(sb, ",\"state\":");
    sb_json_str(sb, m->src.state, strlen(m->src.state));
    sb_printf(sb, ",\"bytes\":%" PRIu64 ",\"bytes_per_s\":", m->src.bytes);
    sb_json_num(sb, m->rate.bytes);
    sb_printf(sb, ",\"connections\":%" PRIu64 ",\"streams\":%" PRIu64
              ",\"ended\":%s,\"error\":", m->src.connections, m->run.streams,
              m->run.ended ? "true" : "false");
    if (m->failed)
        sb_json_str(sb, m->error, strlen(m->error));
    else
        sb_puts(sb, "null");
    sb_printf(sb, "},\"time_ns\":%" PRIu64 ",\"first_ns\":%" PRIu64
              ",\"midrun\":%s,\"whole_run\":%s,\"interval_s\":", m->run.now,
              m->run.first_seen ? m->run.first : 0, m->run.midrun ? "true" : "false",
              m->rate.whole_run ? "true" : "false");
    sb_json_num(sb, m->rate.interval_s);

    sb_printf(sb, ",\"events\":{\"total\":%" PRIu64 ",\"per_s\":", m->counts.events);
    sb_json_num(sb, m->rate.events);
    sb_puts(sb, ",\"by_class\":{");
    for (int i = 0; i < MON_CLASS_N; i++)
        sb_printf(sb, "%s\"%s\":%" PRIu64, i ? "," : "", mon_class_name((enum mon_class)i),
                  m->counts.by_class[i]);
    sb_puts(sb, "},\"per_s_by_class\":{");
    for (int i = 0; i < MON_CLASS_N; i++) {
        sb_printf(sb, "%s\"%s\":", i ? "," : "", mon_class_name((enum mon_class)i));
        sb_json_num(sb, m->rate.class[i]);
    }
    /* Every type seen, most events first. */
    sb_puts(sb, "},\"by_type\":[");
    unsigned rank[MON_TAGS + 1];
    unsigned nt = mon_rank(m->counts.type_n, MON_TAGS + 1, rank);
    for (unsigned i = 0; i < nt; i++) {
        char buf[48];
        const char *name = mon_type_name(m, rank[i], buf, sizeof buf);
        sb_printf(sb, "%s{\"tag\":%u,\"name\":", i ? "," : "", rank[i]);
        sb_json_str(sb, name, strlen(name));
        sb_printf(sb, ",\"count\":%" PRIu64 ",\"bytes\":%" PRIu64 "}",
                  m->counts.type_n[rank[i]], mon_type_bytes(m, rank[i]));
    }
    sb_puts(sb, "]},\"caps\":[");
    bool first = true;
    for (unsigned c = 0; c < m->caps.n; c++) {
        const struct mon_cap *cp = &m->caps.at[c];
        if (!cp->seen)
            continue;
        sb_printf(sb, "%s{\"cap\":%u,\"state\":\"%s\",\"util\":", first ? "" : ",",
                  c, mon_state_name(cp->state));
        first = false;
        sb_json_num(sb, cp->util);
        sb_puts(sb, ",\"gc\":");
        sb_json_num(sb, cp->gc_frac);
        sb_printf(sb, ",\"gc_starts\":%" PRIu64 ",\"allocated\":%" PRIu64
                  ",\"spark_pool\":%" PRIu64 "}", cp->gc_starts,
                  m->run.midrun && cp->alloc_seen ? cp->alloc - cp->alloc_first : cp->alloc,
                  cp->sp[SP_REMAINING]);
    }
    /* Collections, their pauses and generations: Note [Collections]. */
    sb_printf(sb, "],\"gc\":{\"collections\":%" PRIu64 ",\"requests\":%" PRIu64
              ",\"stats\":%" PRIu64 ",\"per_s\":", mon_collections(m),
              m->gc.requests, m->gc.stats);
    sb_json_num(sb, m->rate.gcs);
    sb_puts(sb, ",\"by_gen\":[");
    for (unsigned g = 0; g < m->gc.ngens; g++) {
        sb_printf(sb, "%s{\"gen\":%u,\"collections\":%" PRIu64 ",\"pauses\":%"
                  PRIu64 ",\"pause_max_ns\":%" PRIu64 ",\"pause_total_ns\":%" PRIu64
                  ",\"pause_max_ms\":", g ? "," : "", g, m->gc.gen_colls[g],
                  m->gc.gen_npauses[g], m->gc.gen_pause_max[g], m->gc.gen_pause_ns[g]);
        sb_json_num(sb, (double)m->gc.gen_pause_max[g] / 1e6);
        sb_puts(sb, ",\"pause_total_s\":");
        sb_json_num(sb, (double)m->gc.gen_pause_ns[g] / 1e9);
        sb_puts(sb, "}");
    }
    sb_printf(sb, "],\"pauses\":%" PRIu64 ",\"pause_p50_ns\":%" PRIu64
              ",\"pause_max_ns\":%" PRIu64 ",\"pause_total_ns\":%" PRIu64
              ",\"pause_p50_ms\":", m->gc.npauses, p50, m->gc.pause_max, m->gc.pause_ns);
    sb_json_num(sb, (double)p50 / 1e6);
    sb_puts(sb, ",\"pause_max_ms\":");
    sb_json_num(sb, (double)m->gc.pause_max / 1e6);
    sb_puts(sb, ",\"pause_recent_max_ms\":");
    sb_json_num(sb, (double)rmax / 1e6);
    sb_puts(sb, ",\"pause_total_s\":");
    sb_json_num(sb, (double)m->gc.pause_ns / 1e9);
    /* starts, time_s, time_frac: every capability's GC_START..GC_END
     * (Note [Time in GC]). */
    sb_printf(sb, ",\"starts\":%" PRIu64 ",\"time_s\":", m->gc.starts);
    sb_json_num(sb, (double)m->gc.ns / 1e9);
    sb_puts(sb, ",\"time_frac\":");
    sb_json_num(sb, m->rate.gc_frac);
    sb_printf(sb, ",\"time_frac_caps\":%u", m->gc.caps);

    sb_printf(sb, "},\"heap\":{\"size\":%" PRIu64 ",\"live\":%" PRIu64
              ",\"allocated\":%" PRIu64 ",\"max\":%" PRIu64 ",\"alloc_per_s\":",
              m->heap.size, m->heap.live, mon_allocated(m), m->heap.max);
    sb_json_num(sb, m->rate.alloc);
    const struct mon_census *cs = &m->heap.census;
    sb_printf(sb, ",\"live_time_ns\":%" PRIu64, m->heap.live_t);
    sb_printf(sb, ",\"samples\":%" PRIu64 ",\"census\":{\"time_ns\":%" PRIu64
              ",\"breakdown\":\"%s\",\"bands\":%" PRIu64 ",\"bytes\":%" PRIu64
              "},\"by_label\":[", m->heap.censuses, cs->t,
              mon_breakdown_name(m->heap.breakdown), cs->bands_all, cs->bytes);
    unsigned order[MON_BANDS];
    mon_band_order(cs, order);
    struct strbuf name = { 0 };
    for (unsigned i = 0; i < cs->nbands; i++) {
        const struct mon_band *b = &cs->bands[order[i]];
        mon_band_name(m, b, &name);
        sb_printf(sb, "%s{\"label\":", i ? "," : "");
        sb_json_str(sb, name.p ? name.p : "", name.len);
        sb_printf(sb, ",\"bytes\":%" PRIu64 "}", b->bytes);
    }
    sb_free(&name);

    /* After the end no thread runs (Note [After the end]): the threads
     * left are counted by their last state in at_end. */
    sb_printf(sb, "]},\"threads\":{\"created\":%" PRIu64 ",\"alive\":%" PRIu32
              ",\"running\":%" PRIu64 ",\"runnable\":%" PRIu64
              ",\"blocked\":%" PRIu64 ",\"untracked\":%" PRIu64,
              m->threads.created, m->threads.alive.used, m->run.ended ? 0 : running,
              m->run.ended ? 0 : runnable, m->run.ended ? 0 : blocked, m->threads.untracked);
    if (m->run.ended)
        sb_printf(sb, ",\"at_end\":{\"left\":%" PRIu32 ",\"running\":%" PRIu64
                  ",\"runnable\":%" PRIu64 ",\"blocked\":%" PRIu64 "}",
                  m->threads.alive.used, running, runnable, blocked);
    else
        sb_puts(sb, ",\"at_end\":null");
    /* Stops by status, most first; stopped_s: stop to next run, over
     * the paired ones (Note [Stopped time]). */
    sb_puts(sb, ",\"stops\":[");
    unsigned nst = mon_rank(m->stops.n, MON_STOPS, rank);
    for (unsigned i = 0; i < nst; i++) {
        char buf[48];
        const char *r = mon_stop_name(rank[i], buf, sizeof buf);
        sb_printf(sb, "%s{\"status\":%u,\"reason\":\"%s\",\"count\":%" PRIu64
                  ",\"paired\":%" PRIu64 ",\"stopped_ns\":%" PRIu64 ",\"stopped_s\":",
                  i ? "," : "", rank[i], r, m->stops.n[rank[i]], m->stops.paired[rank[i]],
                  m->stops.ns[rank[i]]);
        sb_json_num(sb, (double)m->stops.ns[rank[i]] / 1e9);
        sb_puts(sb, "}");
    }
    sb_printf(sb, "],\"stops_waiting\":%" PRIu32 ",\"stops_out_of_order\":%" PRIu64
              ",\"stops_untracked\":%" PRIu64 "}", m->stops.ntevs, m->stops.tevs_early,
              m->stops.untracked);

    sb_printf(sb, ",\"sparks\":{\"events\":%" PRIu64 ",\"total\":{", m->sparks.events);
    uint64_t sp[7];
    mon_spark_totals(m, sp);
    for (int k = 0; k < 7; k++)
        sb_printf(sb, "%s\"%s\":%" PRIu64, k ? "," : "", mon_spark_names[k], sp[k]);
    sb_puts(sb, "},\"per_s\":{");
    for (int k = 0; k < 6; k++) {
        sb_printf(sb, "%s\"%s\":", k ? "," : "", mon_spark_names[k]);
        sb_json_num(sb, m->rate.sp[k]);
    }
    sb_printf(sb, "}},\"profile\":{\"samples\":%" PRIu64 ",\"cost_centres_refused\":%"
              PRIu64 ",\"names_cut\":%" PRIu64, m->prof.samples,
              m->prof.ccs_refused, m->prof.strings_cut);
    /* The RTS's own cost centres apart from the program's (top). */
    sb_puts(sb, ",\"by_kind\":{");
    for (int k = 0; k < MON_CC_BUILTINS; k++)
        sb_printf(sb, "%s\"%s\":{\"samples\":%" PRIu64 ",\"interval\":%" PRIu64 "}",
                  k ? "," : "", mon_builtin_names[k], m->prof.kind_samples[k],
                  m->prof.kind_interval[k]);
    sb_puts(sb, "},\"top\":[");
    for (unsigned i = 0; i < m->prof.ntop; i++) {
        sb_printf(sb, "%s{\"cc\":", i ? "," : "");
        const char *n = mon_cc_name(m, m->prof.top[i].id);
        sb_json_str(sb, n, strlen(n));
        sb_puts(sb, ",\"module\":");
        const char *mod = m->prof.top[i].id < m->prof.nccs && m->prof.ccs[m->prof.top[i].id].module
                          ? m->prof.ccs[m->prof.top[i].id].module : "";
        sb_json_str(sb, mod, strlen(mod));
        sb_printf(sb, ",\"samples\":%" PRIu64 "}", m->prof.top[i].n);
    }
    sb_printf(sb, "]},\"user\":{\"messages\":%" PRIu64 ",\"markers\":%" PRIu64
              ",\"per_s\":", m->user.messages, m->user.markers);
    sb_json_num(sb, m->rate.user);
    sb_puts(sb, ",\"recent_messages\":");
    mon_json_texts(sb, m->user.msgs, m->user.messages, MON_RECENT, MON_RECENT);
    sb_puts(sb, ",\"recent_markers\":");
    mon_json_texts(sb, m->user.marks, m->user.markers, MON_MARKS, MON_RECENT);
    sb_printf(sb, "},\"loss\":{\"notes\":%" PRIu64 ",\"loss_notes\":%" PRIu64
              ",\"dropped_units\":%" PRIu64
              ",\"dropped_bytes\":%" PRIu64 ",\"missed_units\":%" PRIu64
              ",\"missed_bytes\":%" PRIu64 ",\"joined_late_units\":%" PRIu64
              ",\"joined_late_bytes\":%" PRIu64 ",\"bytes_unread\":%" PRIu64
              ",\"joined_at_snapshot\":%s,\"recent\":",
              m->loss.notes, m->loss.loss_notes, m->loss.dropped_units, m->loss.dropped_bytes, m->loss.missed_units,
              m->loss.missed_bytes, m->loss.late_units, m->loss.late_bytes, m->src.bytes_skipped,
              m->loss.joined_at_snapshot ? "true" : "false");
    mon_json_texts(sb, m->loss.note_texts, m->loss.notes, MON_RECENT, MON_RECENT);
    sb_puts(sb, "}}");
}

void mon_model_timeline_json(const struct mon_model *m, uint64_t from_ns,
                             uint64_t to_ns, unsigned cols, struct strbuf *sb)
{
    if (to_ns == 0 || to_ns > m->run.now)
        to_ns = m->run.now;
    if (from_ns > to_ns)
        from_ns = to_ns;
    uint64_t w = m->tl.bin_ns;
    /* Bins [b0, b1) cover [from_ns, to_ns]; a window ending on a bin
     * boundary does not take the empty bin after it. */
    uint64_t b0 = from_ns / w, b1 = to_ns / w + (to_ns % w != 0);
    if (b1 > MON_BINS)
        b1 = MON_BINS;
    if (b0 >= b1)
        b0 = b1 ? b1 - 1 : 0;
    if (b1 <= b0)
        b1 = b0 + 1;
    uint64_t nb = b1 - b0;
    if (cols == 0)
        cols = 1;
    uint64_t per = (nb + cols - 1) / cols;  /* bins per column */
    if (per == 0)
        per = 1;
    unsigned ncols = (unsigned)((nb + per - 1) / per);
    sb_printf(sb, "{\"from_ns\":%" PRIu64 ",\"col_ns\":%" PRIu64
              ",\"cols\":%u,\"now_ns\":%" PRIu64 ",\"caps\":[",
              b0 * w, per * w, ncols, m->run.now);
    bool first = true;
    for (unsigned c = 0; c < m->caps.n; c++) {
        const struct mon_cap *cp = &m->caps.at[c];
        if (!cp->seen)
            continue;
        sb_printf(sb, "%s{\"cap\":%u,\"run\":[", first ? "" : ",", c);
        first = false;
        struct strbuf gc = { 0 };
        for (unsigned k = 0; k < ncols; k++) {
            uint64_t r = 0, g = 0;
            for (uint64_t i = b0 + k * per; i < b0 + (k + 1) * per && i < b1; i++) {
                r += cp->bins[i].run_us;
                g += cp->bins[i].gc_us;
            }
            double span_us = (double)(per * w) / 1000.0;
            sb_printf(sb, "%s%.3f", k ? "," : "", (double)r / span_us);
            sb_printf(&gc, "%s%.3f", k ? "," : "", (double)g / span_us);
        }
        sb_puts(sb, "],\"gc\":[");
        if (gc.p != NULL)
            sb_put(sb, gc.p, gc.len);
        sb_free(&gc);
        sb_puts(sb, "]}");
    }
    sb_puts(sb, "],\"series\":{");
    static const char *const names[] = {
        "events_per_s", "gcs", "gc_ms", "alloc_per_s", "heap_size",
        "heap_live", "threads", "user_per_s"
    };
    for (int s = 0; s < 8; s++) {
        sb_printf(sb, "%s\"%s\":[", s ? "," : "", names[s]);
        double level = 0;
        for (unsigned k = 0; k < ncols; k++) {
            double v = 0, secs = (double)(per * w) / 1e9;
            for (uint64_t i = b0 + k * per; i < b0 + (k + 1) * per && i < b1; i++) {
                const struct mon_gbin *g = &m->tl.gbins[i];
                switch (s) {
                case 0: v += g->events / secs; break;
                case 1: v += g->gcs; break;
                case 2: v += (double)g->gc_ns / 1e6; break;
                case 3: v += (double)g->alloc / secs; break;
                case 4: v = (double)g->heap_size; break;
                case 5: v = (double)g->heap_live; break;
                case 6: v = g->threads; break;
                default: v += g->user / secs; break;
                }
            }
            /* Heap levels hold until the next report (blocks arrive out
             * of order, so a column may have none). */
            if (s == 4 || s == 5) {
                if (v == 0)
                    v = level;
                level = v;
            }
            sb_printf(sb, "%s", k ? "," : "");
            sb_json_num(sb, v);
        }
        sb_puts(sb, "]");
    }
    sb_puts(sb, "},\"markers\":[");
    unsigned k = m->user.markers < MON_MARKS ? (unsigned)m->user.markers : MON_MARKS;
    first = true;
    for (unsigned i = 0; i < k; i++) {
        const struct mon_text *t = &m->user.marks[(m->user.markers - k + i) % MON_MARKS];
        if (t->t < b0 * w || t->t > to_ns)
            continue;
        sb_printf(sb, "%s{\"t\":%" PRIu64 ",\"cap\":%d,\"text\":", first ? "" : ",",
                  t->t, (int)t->cap);
        first = false;
        sb_json_str(sb, t->s, strlen(t->s));
        sb_puts(sb, "}");
    }
    sb_puts(sb, "],\"spans\":[");
    first = true;
    for (unsigned i = 0; i < MON_SPANS; i++) {
        const struct mon_span *sp = &m->user.spans[i];
        if (sp->t1 == 0 || sp->t1 < b0 * w || sp->t0 > to_ns)
            continue;
        sb_printf(sb, "%s{\"t0\":%" PRIu64 ",\"t1\":%" PRIu64 ",\"text\":",
                  first ? "" : ",", sp->t0, sp->t1);
        first = false;
        sb_json_str(sb, sp->s, strlen(sp->s));
        sb_puts(sb, "}");
    }
    for (unsigned i = 0; i < m->user.nopen; i++) {
        sb_printf(sb, "%s{\"t0\":%" PRIu64 ",\"t1\":null,\"text\":",
                  first ? "" : ",", m->user.open_spans[i].t);
        first = false;
        sb_json_str(sb, m->user.open_spans[i].s, strlen(m->user.open_spans[i].s));
        sb_puts(sb, "}");
    }
    sb_puts(sb, "]}");
}

void mon_model_speedscope(const struct mon_model *m, uint64_t from_ns,
                          uint64_t to_ns, struct strbuf *sb)
{
    if (to_ns == 0)
        to_ns = UINT64_MAX;
    sb_puts(sb, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
                "\"exporter\":\"eventlog-sink serve\",\"name\":");
    sb_json_str(sb, m->run.program, strlen(m->run.program));
    sb_puts(sb, ",\"activeProfileIndex\":0,\"shared\":{\"frames\":[");
    for (uint32_t i = 0; i < m->prof.nccs; i++) {
        const char *n = m->prof.ccs[i].label ? m->prof.ccs[i].label : "?";
        const char *f = m->prof.ccs[i].module ? m->prof.ccs[i].module : "";
        sb_printf(sb, "%s{\"name\":", i ? "," : "");
        sb_json_str(sb, n, strlen(n));
        sb_puts(sb, ",\"file\":");
        sb_json_str(sb, f, strlen(f));
        sb_puts(sb, "}");
    }
    sb_puts(sb, "]},\"profiles\":[{\"type\":\"sampled\",\"name\":");
    sb_json_str(sb, m->run.program, strlen(m->run.program));
    sb_puts(sb, ",\"unit\":\"nanoseconds\"");
    uint64_t n = m->prof.samples < MON_SAMPLES ? m->prof.samples : MON_SAMPLES;
    uint64_t t_first = 0, t_last = 0;
    struct strbuf weights = { 0 };
    sb_puts(sb, ",\"samples\":[");
    bool first = true;
    uint64_t prev_t = 0;
    for (uint64_t i = 0; i < n; i++) {
        const struct mon_sample *s = &m->prof.ring[(m->prof.samples - n + i) % MON_SAMPLES];
        if (s->t < from_ns || s->t > to_ns)
            continue;
        if (first)
            t_first = s->t;
        t_last = s->t;
        sb_puts(sb, first ? "[" : ",[");
        /* speedscope stacks are outermost first. */
        for (unsigned d = s->depth; d-- > 0;)
            sb_printf(sb, "%s%" PRIu32, d + 1 == s->depth ? "" : ",",
                      s->ids[d] < m->prof.nccs ? s->ids[d] : 0);
        sb_puts(sb, "]");
        /* Each sample weighs the time since the previous one (the
         * profiling interval), the first one as much as the next. */
        uint64_t wgt = first ? 0 : s->t - prev_t;
        sb_printf(&weights, "%s%" PRIu64, first ? "" : ",", wgt);
        prev_t = s->t;
        first = false;
    }
    sb_puts(sb, "],\"weights\":[");
    if (weights.p != NULL)
        sb_put(sb, weights.p, weights.len);
    sb_free(&weights);
    sb_printf(sb, "],\"startValue\":%" PRIu64 ",\"endValue\":%" PRIu64 "}]}",
              t_first, t_last);
}

/* A sample's value: an integer as such, else 15 significant digits (a
 * census's time in seconds keeps its nanoseconds; sb_json_num()'s 6
 * digits did not). */
static void mon_prom_num(struct strbuf *sb, double v)
{
    if (isfinite(v) && fabs(v) < 1e15 && v == floor(v))
        sb_printf(sb, "%lld", (long long)v);
    else
        sb_printf(sb, "%.15g", isfinite(v) ? v : 0);
}

/* One Prometheus sample line with the program's labels (extra: more
 * labels, "" for none). */
static void mon_prom(const struct mon_model *m, struct strbuf *sb,
                     const char *name, const char *extra, double v)
{
    sb_printf(sb, "%s{program=", name);
    /* The program's name comes from the stream (argv[0]): any bytes.
     * Not JSON's escaping: a scraper refuses its \u0009. */
    sb_prom_label(sb, m->run.program, strlen(m->run.program));
    sb_printf(sb, ",pid=\"%" PRIu32 "\"%s%s} ", m->run.pid, *extra ? "," : "", extra);
    mon_prom_num(sb, v);
    sb_puts(sb, "\n");
}

/* One sample whose label key carries text from the stream (a band, an
 * event type's description), escaped as a label value, with more of our
 * own labels (extra, "" for none) after it. */
static void mon_prom_text(const struct mon_model *m, struct strbuf *sb,
                          const char *name, const char *key, const char *text,
                          size_t len, const char *extra, double v)
{
    sb_printf(sb, "%s{program=", name);
    sb_prom_label(sb, m->run.program, strlen(m->run.program));
    sb_printf(sb, ",pid=\"%" PRIu32 "\",%s=", m->run.pid, key);
    sb_prom_label(sb, text, len);
    sb_printf(sb, "%s%s} ", *extra ? "," : "", extra);
    mon_prom_num(sb, v);
    sb_puts(sb, "\n");
}

static void mon_prom_head(struct strbuf *sb, const char *name,
                          const char *type, const char *help)
{
    /* Our own texts, escaped all the same so that a later one with a
     * backslash or a line break cannot break the exposition. */
    sb_printf(sb, "# HELP %s ", name);
    sb_prom_help(sb, help, strlen(help));
    sb_printf(sb, "\n# TYPE %s %s\n", name, type);
}

/* Note [Metric families of many programs]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * The exposition format wants each family's samples together, after
 * its one HELP and TYPE: a second TYPE line for a name is an error to
 * Prometheus.  `serve --all` renders many programs' models into one
 * /metrics, so the families are the outer loop and the programs the
 * inner one (mon_models_prometheus()); each program's samples carry its
 * own program and pid labels.  A model that has not yet read the
 * program's pid (no stream yet) is left out: its samples would carry
 * pid="0" and clash with any other such program's. */
enum {
    PF_PAUSE, PF_GC_RATIO, PF_COLLECTIONS, PF_GEN_PAUSE_MAX, PF_GC_STARTS,
    PF_HEAP_SIZE, PF_HEAP_LIVE, PF_HEAP_ALLOC, PF_CENSUS_BYTES, PF_CENSUS_TIME,
    PF_CENSUSES, PF_THREADS, PF_THREADS_CREATED, PF_STOPS, PF_STOPPED,
    PF_SPARKS, PF_SPARK_POOL, PF_CAP_UTIL, PF_CAP_GC, PF_EVENTS,
    PF_EVENTS_RATE, PF_TYPE_EVENTS, PF_TYPE_BYTES, PF_USER, PF_BYTES,
    PF_LOST_UNITS, PF_LOST_BYTES, PF_UNREAD, PF_N
};

/* Bands of the last census on /metrics (the largest; the page and
 * --json have all MON_BANDS kept). */
#define MON_PROM_BANDS 20

static const struct {
    const char *name, *type, *help;
} mon_prom_families[PF_N] = {
    [PF_PAUSE] = { "ghc_gc_pause_seconds", "histogram",
                   "GC pauses, one per collection: its leading capability's "
                   "GC_START to GC_END (the elapsed time +RTS -s counts)" },
    [PF_GC_RATIO] = { "ghc_gc_time_ratio", "gauge",
                      "Share of the capabilities' time spent in GC pauses over "
                      "the last interval (GC time summed over capabilities / "
                      "(interval x capabilities)); at most 1" },
    [PF_COLLECTIONS] = { "ghc_gc_collections_total", "counter",
                         "GC collections (one per REQUEST_SEQ_GC/REQUEST_PAR_GC or "
                         "GC_STATS_GHC, as +RTS -s counts colls) by generation; "
                         "gen=\"unknown\": collections the stream gave no "
                         "generation for" },
    [PF_GEN_PAUSE_MAX] = { "ghc_gc_pause_max_seconds", "gauge",
                           "Longest collection pause by generation (+RTS -s's "
                           "Max pause)" },
    [PF_GC_STARTS] = { "ghc_gc_capability_starts_total", "counter",
                       "GC_START events by capability: every capability taking "
                       "part in a collection posts one (not collections)" },
    [PF_HEAP_SIZE] = { "ghc_heap_size_bytes", "gauge", "Heap size" },
    [PF_HEAP_LIVE] = { "ghc_heap_live_bytes", "gauge", "Live data after the last GC" },
    [PF_HEAP_ALLOC] = { "ghc_heap_allocated_bytes_total", "counter",
                        "Bytes allocated: the sum of every capability's last "
                        "HEAP_ALLOCATED (+RTS -s's bytes allocated in the heap)" },
    [PF_CENSUS_BYTES] = { "ghc_heap_census_bytes", "gauge",
                          "Bytes of the largest bands of the last heap census "
                          "(-hT, -hc, -hm, -hd, -hy, ...)" },
    [PF_CENSUS_TIME] = { "ghc_heap_census_time_seconds", "gauge",
                         "When the last heap census began, in seconds of the run" },
    [PF_CENSUSES] = { "ghc_heap_censuses_total", "counter", "Heap censuses" },
    [PF_THREADS] = { "ghc_threads", "gauge", "Haskell threads alive by state" },
    [PF_THREADS_CREATED] = { "ghc_threads_created_total", "counter",
                             "Haskell threads created" },
    [PF_STOPS] = { "ghc_thread_stops_total", "counter",
                   "Thread stops by reason (STOP_THREAD's status)" },
    [PF_STOPPED] = { "ghc_thread_stopped_seconds_total", "counter",
                     "Time from each thread stop to the thread's next run, by "
                     "the stop's reason" },
    [PF_SPARKS] = { "ghc_sparks_total", "counter",
                    "Spark counters summed over capabilities" },
    [PF_SPARK_POOL] = { "ghc_spark_pool", "gauge", "Sparks in the pool per capability" },
    [PF_CAP_UTIL] = { "ghc_capability_utilisation", "gauge",
                      "Share of the last interval a capability ran Haskell code" },
    [PF_CAP_GC] = { "ghc_capability_gc_ratio", "gauge",
                    "Share of the last interval a capability spent in GC" },
    [PF_EVENTS] = { "eventlog_events_total", "counter", "Events read by class" },
    [PF_EVENTS_RATE] = { "eventlog_events_per_second", "gauge",
                         "Events per second over the last interval by class" },
    [PF_TYPE_EVENTS] = { "eventlog_events_by_type_total", "counter",
                         "Events read by type (the stream's description of the tag)" },
    [PF_TYPE_BYTES] = { "eventlog_event_bytes_by_type_total", "counter",
                        "Bytes of the events read by type (tag, time, size, payload)" },
    [PF_USER] = { "eventlog_user_events_total", "counter", "User messages and markers" },
    [PF_BYTES] = { "eventlog_received_bytes_total", "counter", "Eventlog bytes received" },
    [PF_LOST_UNITS] = { "eventlog_lost_units_total", "counter",
                        "Units the sink reported lost in-band, by kind" },
    [PF_LOST_BYTES] = { "eventlog_lost_bytes_total", "counter",
                        "Bytes the sink reported lost in-band, by kind" },
    [PF_UNREAD] = { "eventlog_unread_bytes_total", "counter",
                    "Bytes not interpreted after the stream became malformed" },
};

/* Family f's samples of one program. */
static void mon_prom_family(const struct mon_model *m, struct strbuf *sb, int f)
{
    char lab[96];
    const char *name = mon_prom_families[f].name;
    uint64_t runnable, running, blocked, cum = 0;
    unsigned rank[MON_TAGS + 1], n;
    switch (f) {
    case PF_PAUSE:
        for (size_t b = 0; b <= MON_PAUSE_BUCKETS; b++) {
            cum += m->gc.pause_hist[b];
            if (b < MON_PAUSE_BUCKETS)
                snprintf(lab, sizeof lab, "le=\"%g\"", mon_pause_bounds[b]);
            else
                snprintf(lab, sizeof lab, "le=\"+Inf\"");
            mon_prom(m, sb, "ghc_gc_pause_seconds_bucket", lab, (double)cum);
        }
        mon_prom(m, sb, "ghc_gc_pause_seconds_sum", "", (double)m->gc.pause_ns / 1e9);
        mon_prom(m, sb, "ghc_gc_pause_seconds_count", "", (double)cum);
        break;
    case PF_GC_RATIO: mon_prom(m, sb, name, "", m->rate.gc_frac); break;
    case PF_COLLECTIONS: {
        for (unsigned g = 0; g < m->gc.ngens; g++) {
            snprintf(lab, sizeof lab, "gen=\"%u\"", g);
            mon_prom(m, sb, name, lab, (double)m->gc.gen_colls[g]);
        }
        uint64_t unknown = mon_collections(m) - m->gc.stats;
        if (unknown > 0 || m->gc.ngens == 0)
            mon_prom(m, sb, name, "gen=\"unknown\"", (double)unknown);
        break;
    }
    case PF_GEN_PAUSE_MAX:
        for (unsigned g = 0; g < m->gc.ngens; g++) {
            snprintf(lab, sizeof lab, "gen=\"%u\"", g);
            mon_prom(m, sb, name, lab, (double)m->gc.gen_pause_max[g] / 1e9);
        }
        break;
    case PF_HEAP_SIZE: mon_prom(m, sb, name, "", (double)m->heap.size); break;
    case PF_HEAP_LIVE: mon_prom(m, sb, name, "", (double)m->heap.live); break;
    case PF_HEAP_ALLOC: mon_prom(m, sb, name, "", (double)mon_allocated(m)); break;
    case PF_CENSUS_BYTES: {
        unsigned order[MON_BANDS];
        struct strbuf band = { 0 };
        mon_band_order(&m->heap.census, order);
        for (unsigned i = 0; i < m->heap.census.nbands && i < MON_PROM_BANDS; i++) {
            const struct mon_band *b = &m->heap.census.bands[order[i]];
            mon_band_name(m, b, &band);
            mon_prom_text(m, sb, name, "band", band.p ? band.p : "", band.len, "",
                          (double)b->bytes);
        }
        sb_free(&band);
        break;
    }
    case PF_CENSUS_TIME:
        if (m->heap.censuses > 0)
            mon_prom(m, sb, name, "", (double)m->heap.census.t / 1e9);
        break;
    case PF_CENSUSES: mon_prom(m, sb, name, "", (double)m->heap.censuses); break;
    case PF_THREADS:
        mon_thread_counts(m, &runnable, &running, &blocked);
        if (m->run.ended)           /* Note [After the end] */
            runnable = running = blocked = 0;
        mon_prom(m, sb, name, "state=\"running\"", (double)running);
        mon_prom(m, sb, name, "state=\"runnable\"", (double)runnable);
        mon_prom(m, sb, name, "state=\"blocked\"", (double)blocked);
        break;
    case PF_THREADS_CREATED:
        mon_prom(m, sb, name, "", (double)m->threads.created);
        break;
    case PF_STOPS: case PF_STOPPED:
        n = mon_rank(m->stops.n, MON_STOPS, rank);
        for (unsigned i = 0; i < n; i++) {
            char buf[48];
            snprintf(lab, sizeof lab, "reason=\"%s\"",
                     mon_stop_name(rank[i], buf, sizeof buf));
            mon_prom(m, sb, name, lab, f == PF_STOPS ? (double)m->stops.n[rank[i]]
                                                     : (double)m->stops.ns[rank[i]] / 1e9);
        }
        break;
    case PF_SPARKS: {
        uint64_t sp[7];
        mon_spark_totals(m, sp);
        for (int k = 0; k < 6; k++) {
            snprintf(lab, sizeof lab, "outcome=\"%s\"", mon_spark_names[k]);
            mon_prom(m, sb, name, lab, (double)sp[k]);
        }
        break;
    }
    case PF_GC_STARTS: case PF_SPARK_POOL: case PF_CAP_UTIL: case PF_CAP_GC:
        for (unsigned c = 0; c < m->caps.n; c++) {
            if (!m->caps.at[c].seen)
                continue;
            snprintf(lab, sizeof lab, "cap=\"%u\"", c);
            mon_prom(m, sb, name, lab, f == PF_GC_STARTS ? (double)m->caps.at[c].gc_starts :
                     f == PF_SPARK_POOL ? (double)m->caps.at[c].sp[SP_REMAINING] :
                     f == PF_CAP_UTIL ? m->caps.at[c].util : m->caps.at[c].gc_frac);
        }
        break;
    case PF_EVENTS: case PF_EVENTS_RATE:
        for (int i = 0; i < MON_CLASS_N; i++) {
            snprintf(lab, sizeof lab, "class=\"%s\"",
                     mon_class_name((enum mon_class)i));
            mon_prom(m, sb, name, lab, f == PF_EVENTS ?
                     (double)m->counts.by_class[i] : m->rate.class[i]);
        }
        break;
    case PF_TYPE_EVENTS: case PF_TYPE_BYTES:
        n = mon_rank(m->counts.type_n, MON_TAGS + 1, rank);
        for (unsigned i = 0; i < n; i++) {
            char buf[48];
            const char *t = mon_type_name(m, rank[i], buf, sizeof buf);
            snprintf(lab, sizeof lab, "tag=\"%u\"", rank[i]);
            mon_prom_text(m, sb, name, "type", t, strlen(t), lab,
                          f == PF_TYPE_EVENTS ? (double)m->counts.type_n[rank[i]]
                                              : (double)mon_type_bytes(m, rank[i]));
        }
        break;
    case PF_USER:
        mon_prom(m, sb, name, "kind=\"message\"", (double)m->user.messages);
        mon_prom(m, sb, name, "kind=\"marker\"", (double)m->user.markers);
        break;
    case PF_BYTES: mon_prom(m, sb, name, "", (double)m->src.bytes); break;
    case PF_LOST_UNITS:
        mon_prom(m, sb, name, "kind=\"dropped\"", (double)m->loss.dropped_units);
        mon_prom(m, sb, name, "kind=\"missed\"", (double)m->loss.missed_units);
        mon_prom(m, sb, name, "kind=\"joined_late\"", (double)m->loss.late_units);
        break;
    case PF_LOST_BYTES:
        mon_prom(m, sb, name, "kind=\"dropped\"", (double)m->loss.dropped_bytes);
        mon_prom(m, sb, name, "kind=\"missed\"", (double)m->loss.missed_bytes);
        mon_prom(m, sb, name, "kind=\"joined_late\"", (double)m->loss.late_bytes);
        break;
    case PF_UNREAD: mon_prom(m, sb, name, "", (double)m->src.bytes_skipped); break;
    }
}

void mon_models_prometheus(const struct mon_model *const *ms, size_t n,
                           bool need_pid, struct strbuf *sb)
{
    for (int f = 0; f < PF_N; f++) {
        mon_prom_head(sb, mon_prom_families[f].name, mon_prom_families[f].type,
                      mon_prom_families[f].help);
        for (size_t i = 0; i < n; i++)
            if (ms[i] != NULL && (!need_pid || ms[i]->run.pid != 0))
                mon_prom_family(ms[i], sb, f);
    }
}

void mon_model_prometheus(const struct mon_model *m, struct strbuf *sb)
{
    mon_models_prometheus(&m, 1, false, sb);
}

void mon_model_health(const struct mon_model *m, struct mon_health *h)
{
    memset(h, 0, sizeof *h);
    unsigned n = m->gc.npauses < MON_PAUSES ? m->gc.npauses : MON_PAUSES;
    if (n > 0) {
        uint64_t tmp[MON_PAUSES];
        memcpy(tmp, m->gc.pauses, n * sizeof tmp[0]);
        qsort(tmp, n, sizeof tmp[0], mon_cmp_u64);
        h->pause_p99_ns = tmp[(size_t)((n - 1) * 99 / 100)];
    }
    h->collections = mon_collections(m);
    h->heap_size = m->heap.size;
    h->heap_live = m->heap.live;
    h->lost_units = m->loss.dropped_units + m->loss.missed_units + m->loss.late_units;
    h->bytes = m->src.bytes;
    h->pid = m->run.pid;
    h->program = m->run.program;
    h->ended = m->run.ended;
}

/* ------------------------------------------------------------------------
 * The terminal view's text
 * ------------------------------------------------------------------------ */

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

void mon_model_text(const struct mon_model *m, struct strbuf *sb, unsigned width)
{
    char a[32], b[32], c[32], d[32];
    uint64_t runnable, running, blocked, p50, rmax;
    mon_thread_counts(m, &runnable, &running, &blocked);
    mon_pause_pcts(m, &p50, &rmax);
    if (width < 60)
        width = 60;

    sb_puts(sb, "eventlog-sink top: ");
    if (m->run.program[0])
        mon_safe_tail(sb, m->run.program, strlen(m->run.program), width - 55);
    else
        sb_puts(sb, "(program?)");
    sb_printf(sb, " pid %" PRIu32 "  run %" PRIu64 "  t=%.1f s\n", m->run.pid,
              m->src.connections, (double)m->run.now / 1e9);
    /* The source's state (a path, a reason) on lines of its own, wrapped
     * at spaces, so that the header never wraps on a narrow terminal. */
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
    /* Collections (Note [Collections]) and their pauses. */
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
    if (m->run.ended)               /* Note [After the end] */
        sb_printf(sb, "Threads  at the end: %" PRIu32 " not finished  (created %" PRIu64
                  ")\n         last seen running %" PRIu64 ", runnable %" PRIu64
                  ", blocked %" PRIu64 "\n", m->threads.alive.used, m->threads.created,
                  running, runnable, blocked);
    else
        sb_printf(sb, "Threads  alive %" PRIu32 "  running %" PRIu64 "  runnable %" PRIu64
                  "  blocked %" PRIu64 "  (created %" PRIu64 ")\n", m->threads.alive.used,
                  running, runnable, blocked, m->threads.created);
    /* Stops by reason, most first, with the time to the next run. */
    unsigned rank[MON_TAGS + 1];
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
    /* Event types: the most events, and the most bytes. */
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
    /* The last heap census, largest bands first. */
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
