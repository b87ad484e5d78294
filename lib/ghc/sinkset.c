/*
 * sinkset.c: the RTS adapter's set of writers.  Splits a list of sink
 * specs (SPEC|SPEC|...) and checks it, opens one writer per spec, and
 * hands every unit the RTS writes to each of them: copies to all but the
 * last, which may keep the RTS's buffer.  Each writer is an ordinary one
 * (its own queue, consumers, control socket, announce entry, losses and
 * exit report); this file only fans out.  Not its job: the RTS's
 * callbacks, the process-wide state and its locks (ghc.c), what a spec
 * means (lib/sinks/spec.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ghc/sinkset.h"
#include "base/log.h"
#include "sinks/sinks.h"
#include "sinks/spec.h"

/*
 * Note [Several sinks]
 * ~~~~~~~~~~~~~~~~~~~~
 * A fleet's program wants a live socket that a monitor follows and a
 * flight recorder that an alert dumps, at once, while the patched RTS
 * takes one --eventlog-sink flag and hands its whole value to the open
 * function of the scheme it starts with (ghc.c, ghc_sink_open).  So the
 * list lives in the value: specs separated by '|', at most
 * ELS_GHC_SINKS_MAX.  '|' appears in no scheme, key or common option
 * value, and an address or a sink's option value that needs one writes
 * %7C (both are %-decoded), so the split is exact: every '|' separates.
 *
 * Every unit goes to every writer, in the list's order.  The RTS may let
 * the writer keep its buffer (Note [Units handed over] in
 * lib/writer/producer.c), and a buffer can have one owner only: the
 * writers before the last copy the unit out of it, then the last is
 * offered the buffer, and nothing touches it afterwards (it may belong to
 * that writer by then).  The copies come first because a writer that kept
 * the buffer may release it, and the pool may hand it out again, before
 * this function returns.
 *
 * Join snapshots go to every writer: each writer's snapshot source asks
 * the RTS for one when a consumer of its own joins (and a recorder when
 * its latest is too far back to start a dump), and the RTS's answer is
 * one unit, which a writer without a joiner waiting keeps only as the
 * latest snapshot (a recorder's next dump starts there).  One request
 * thus serves every writer that waits, and the hooks run once per
 * snapshot (ghc.c), not once per writer.
 *
 * A writer's losses, stats and exit report are its own.  els_ghc_stats()
 * reports the first writer's (the spec the flag starts with, which is
 * also the one the RTS reads for its default flush interval), so a
 * program that ran with one sink reads the same figures after a second
 * is added; els_ghc_sink_stats() reads any other.  A sum would count
 * every unit once per writer.
 */

// ---------------------------------------------------------------------------
// The list
// ---------------------------------------------------------------------------

/* How much of a list a message quotes. */
#define SINKS_QUOTE_MAX 160

struct sink_specs {
    char *buf;                          /* the list, '|' replaced by NUL */
    unsigned n;
    const char *spec[ELS_GHC_SINKS_MAX];
};

static int specs_split(const char *list, struct sink_specs *out, char *err,
                       size_t err_len)
{
    memset(out, 0, sizeof *out);
    if (list == NULL || list[0] == '\0')
        return elsi_fail(err, err_len, ELS_EINVAL, "empty eventlog sink spec");
    char q[ELSI_QUOTE_BUF(SINKS_QUOTE_MAX)];
    size_t n = 1;
    for (const char *p = list; *p != '\0'; p++)
        n += *p == '|';
    if (n > ELS_GHC_SINKS_MAX)
        return elsi_fail(err, err_len, ELS_EINVAL, "sink list \"%s\": %zu "
                         "sinks, at most %d (specs are separated by '|'; "
                         "write %%7C for a '|' inside an address or option "
                         "value)", elsi_quote(q, sizeof q, list, strlen(list),
                                              SINKS_QUOTE_MAX),
                         n, ELS_GHC_SINKS_MAX);
    out->buf = strdup(list);
    if (out->buf == NULL)
        return elsi_fail(err, err_len, ELS_ENOMEM, "out of memory");
    char *p = out->buf;
    for (unsigned i = 0; i < n; i++) {
        char *bar = strchr(p, '|');
        if (bar != NULL)
            *bar = '\0';
        if (p[0] == '\0') {
            free(out->buf);
            out->buf = NULL;
            return elsi_fail(err, err_len, ELS_EINVAL, "sink list \"%s\": "
                             "sink %u of %zu is empty (specs are separated "
                             "by one '|')",
                             elsi_quote(q, sizeof q, list, strlen(list),
                                        SINKS_QUOTE_MAX), i + 1, n);
        }
        out->spec[i] = p;
        if (bar != NULL)
            p = bar + 1;
    }
    out->n = (unsigned)n;
    return 0;
}

/* Does spec start with something shaped like a scheme and ':'?  A part
 * that does not was most likely cut from the one before it by a '|' that
 * belonged to a path. */
static bool specs_looks_like_spec(const char *spec)
{
    const char *colon = strchr(spec, ':');
    if (colon == NULL || colon == spec || (size_t)(colon - spec) > ELSI_SCHEME_MAX)
        return false;
    char scheme[ELSI_SCHEME_MAX + 1];
    memcpy(scheme, spec, (size_t)(colon - spec));
    scheme[colon - spec] = '\0';
    return elsi_scheme_valid(scheme);
}

/* Put "sink K of N: " before the message fn left in err (a list only). */
static int specs_name_part(const struct sink_specs *s, unsigned i, int code,
                           char *err, size_t err_len)
{
    if (s->n == 1 || err == NULL || err_len == 0)
        return code;
    char *what = strdup(err);
    if (what == NULL)
        return code;        /* the message alone still says what is wrong */
    bool hint = !specs_looks_like_spec(s->spec[i]);
    elsi_fail(err, err_len, code, "sink %u of %u: %s%s", i + 1, s->n, what,
              hint ? " (write %7C for a '|' inside an address or option "
                     "value)" : "");
    free(what);
    return code;
}

int elsi_ghc_specs_each(const char *list, elsi_ghc_spec_fn fn, void *ctx,
                        char *err, size_t err_len)
{
    struct sink_specs s;
    int r = specs_split(list, &s, err, err_len);
    for (unsigned i = 0; r == 0 && i < s.n; i++) {
        r = fn(s.spec[i], ctx, err, err_len);
        if (r != 0)
            r = specs_name_part(&s, i, r, err, err_len);
    }
    free(s.buf);
    return r;
}

static int specs_check_one(const char *spec, void *ctx, char *err,
                           size_t err_len)
{
    (void)ctx;
    return els_spec_check(spec, err, err_len);
}

int elsi_ghc_specs_check(const char *list, char *err, size_t err_len)
{
    return elsi_ghc_specs_each(list, specs_check_one, NULL, err, err_len);
}

// ---------------------------------------------------------------------------
// The writers
// ---------------------------------------------------------------------------

static int sinks_open_one(const char *spec, void *ctx, char *err,
                          size_t err_len)
{
    struct elsi_ghc_sinks *s = ctx;
    struct elsi_spec parsed;
    int r = elsi_spec_parse(spec, &parsed, err, err_len);
    if (r != 0)
        return r;
    bool recorder = parsed.ops != NULL && parsed.ops->style == ELS_SINK_RECORD;
    elsi_spec_free(&parsed);
    r = els_writer_open(spec, &s->w[s->n], err, err_len);
    if (r != 0)
        return r;
    s->recorder[s->n++] = recorder;
    return 0;
}

int elsi_ghc_sinks_open(const char *list, struct elsi_ghc_sinks **out,
                        char *err, size_t err_len)
{
    struct elsi_ghc_sinks *s = calloc(1, sizeof *s);
    if (s == NULL)
        return elsi_fail(err, err_len, ELS_ENOMEM, "out of memory");
    int r = elsi_ghc_specs_each(list, sinks_open_one, s, err, err_len);
    if (r != 0) {
        elsi_ghc_sinks_close(s);
        return r;
    }
    *out = s;
    return 0;
}

void elsi_ghc_sinks_close(struct elsi_ghc_sinks *s)
{
    if (s == NULL)
        return;
    /* In order: each writer's stop deadline has run since the stop's
     * first unit reached it (els_writer_close()), so the closes after the
     * first wait little more. */
    for (unsigned i = 0; i < s->n; i++)
        (void)els_writer_close(s->w[i]);
    free(s);
}

void elsi_ghc_sinks_write(struct elsi_ghc_sinks *s, void **buf, size_t len,
                          size_t size, enum els_write_reason reason)
{
    /* Copies first, the buffer last: Note [Several sinks]. */
    unsigned last = s->n - 1;
    for (unsigned i = 0; i < last; i++)
        (void)els_writer_write_reason(s->w[i], *buf, len, reason);
    if (size > 0)
        (void)els_writer_hand_over(s->w[last], buf, len, size, reason);
    else
        (void)els_writer_write_reason(s->w[last], *buf, len, reason);
}

void elsi_ghc_sinks_write_snapshot(struct elsi_ghc_sinks *s, const void *unit,
                                   size_t len)
{
    /* Not queued (1) means that writer asks again when it has room: Note
     * [Asking again for a join snapshot]. */
    for (unsigned i = 0; i < s->n; i++)
        (void)els_writer_write_snapshot(s->w[i], unit, len);
}

void elsi_ghc_sinks_set_snapshot_source(struct elsi_ghc_sinks *s,
                                        els_snapshot_request_fn request,
                                        void *ctx)
{
    for (unsigned i = 0; i < s->n; i++)
        (void)els_writer_set_snapshot_source(s->w[i], request, ctx);
}

void elsi_ghc_sinks_flush(struct elsi_ghc_sinks *s)
{
    for (unsigned i = 0; i < s->n; i++)
        (void)els_writer_flush(s->w[i]);
}

int elsi_ghc_sinks_dump(struct elsi_ghc_sinks *s, char *name, size_t name_len)
{
    for (unsigned i = 0; i < s->n; i++)
        if (s->recorder[i])
            return els_writer_dump(s->w[i], name, name_len);
    return ELS_EINVAL;
}

int elsi_ghc_sinks_stats(struct elsi_ghc_sinks *s, unsigned i,
                         struct els_stats *out, size_t size)
{
    if (i >= s->n)
        return ELS_EINVAL;
    return els_writer_stats_sized(s->w[i], out, size);
}
