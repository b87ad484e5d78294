/*
 * render_json.c: the monitor model as JSON (see model.h): the views'
 * single source (mon_model_json(), one function per section), the run's
 * timeline and speedscope profiles.  The model keeps a stream's strings
 * as the bytes arrived: they are escaped as JSON (exact text).  Reads
 * the model; changes nothing.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "render.h"

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

/* The program, the source and the run's span. */
static void mon_json_head(const struct mon_model *m, struct strbuf *sb)
{
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
}

/* Events by class and by type (every type seen, most events first). */
static void mon_json_events(const struct mon_model *m, struct strbuf *sb)
{
    unsigned rank[MON_TAGS + 1];
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
    unsigned nt = mon_rank(m->counts.type_n, MON_TAGS + 1, rank);
    for (unsigned i = 0; i < nt; i++) {
        char buf[48];
        const char *name = mon_type_name(m, rank[i], buf, sizeof buf);
        sb_printf(sb, "%s{\"tag\":%u,\"name\":", i ? "," : "", rank[i]);
        sb_json_str(sb, name, strlen(name));
        sb_printf(sb, ",\"count\":%" PRIu64 ",\"bytes\":%" PRIu64 "}",
                  m->counts.type_n[rank[i]], mon_type_bytes(m, rank[i]));
    }
}

/* Each capability seen. */
static void mon_json_caps(const struct mon_model *m, struct strbuf *sb)
{
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
}

/* Collections, their pauses and generations (Note [Collections] in
 * model.c), and every capability's time in GC. */
static void mon_json_gc(const struct mon_model *m, struct strbuf *sb)
{
    uint64_t p50, rmax;
    mon_pause_pcts(m, &p50, &rmax);
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
}

/* The heap and the last census's bands, largest first. */
static void mon_json_heap(const struct mon_model *m, struct strbuf *sb)
{
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
}

/* Threads by state and their stops by status. */
static void mon_json_threads(const struct mon_model *m, struct strbuf *sb)
{
    uint64_t runnable, running, blocked;
    mon_thread_counts(m, &runnable, &running, &blocked);
    unsigned rank[MON_STOPS];
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
}

/* Spark counters, and the cost-centre profile. */
static void mon_json_sparks(const struct mon_model *m, struct strbuf *sb)
{
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
}

/* User messages and markers, and the sink's loss notes. */
static void mon_json_user(const struct mon_model *m, struct strbuf *sb)
{
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

void mon_model_json(const struct mon_model *m, struct strbuf *sb)
{
    mon_json_head(m, sb);
    mon_json_events(m, sb);
    mon_json_caps(m, sb);
    mon_json_gc(m, sb);
    mon_json_heap(m, sb);
    mon_json_threads(m, sb);
    mon_json_sparks(m, sb);
    mon_json_user(m, sb);
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
