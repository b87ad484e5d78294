/*
 * profile_hp.c: a heap profile (.hp, the file hp2ps reads) from the
 * eventlog's heap-profile samples.
 *
 * Each census arrives as HEAP_PROF_SAMPLE_BEGIN, one HEAP_PROF_SAMPLE_
 * STRING (-hT, -hd, -hy, -hm, -hb) or HEAP_PROF_SAMPLE_COST_CENTRE (-hc)
 * per band, and HEAP_PROF_SAMPLE_END; it becomes BEGIN_SAMPLE, one
 * "NAME<TAB>BYTES" line per band in the RTS's order, END_SAMPLE.  The
 * header (JOB, DATE, SAMPLE_UNIT, VALUE_UNIT) and the empty sample at 0
 * that the RTS writes first come before the first census; the empty
 * sample the RTS writes at exit is added when the stream ends cleanly.
 *
 * Differences from the RTS's own file, all forced by what the eventlog
 * carries: a sample's time is the census event's time (seconds since the
 * RTS started, wall clock), where the RTS writes the mutator's CPU time;
 * a cost-centre stack's band is "(K)label/caller/..." cut at 25
 * characters as the RTS cuts it, but K numbers the stacks in the order
 * this file first met them (the eventlog does not carry the RTS's stack
 * number).  Band names are made hp2ps tokens by profile_word(): a byte
 * that is not printable ASCII, a space, '"' or '\\' becomes '_' (hp2ps
 * reads a band name up to white space and prints it in a PostScript
 * string).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile.h"

/* Note [Valid at every sample]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * The .hp file only grows: a census is built in memory and appended with
 * one write() when its END arrives, after which the file ends with a
 * whole END_SAMPLE line.  So whatever stops the program, the stream or
 * this tool, the file holds every census received whole and nothing
 * half-written by us (a write cut by a full disk is reported).  A census
 * whose END never came (a truncated stream) is dropped.  Appending keeps
 * the cost per census constant, unlike rewriting the whole file.
 */

#define HP_CCS_LENGTH 25        /* the RTS's default -L */

struct hp_stack {
    uint8_t depth;
    uint32_t ids[255];
};

struct profile_hp {
    int fd;
    const char *path;
    FILE *msgs;
    struct profile_run run;
    struct profile_ccs ccs;
    bool header_done;
    bool in_sample;
    uint64_t era;
    double begin_time;          /* of the census being built, seconds */
    uint64_t last_time;
    uint64_t samples;
    char *buf;                  /* the census being built */
    size_t buf_len;
    FILE *cur;
    struct hp_stack *stacks;    /* numbering of cost-centre stacks */
    size_t n_stacks, cap_stacks;
};

static int hp_write(struct profile_hp *h, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(h->fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -errno;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

static int hp_header(struct profile_hp *h)
{
    if (h->header_done)
        return 0;
    char date[64];
    profile_run_date(&h->run, date, sizeof date);
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    if (f == NULL)
        return -ENOMEM;
    fprintf(f, "JOB \"%s\"\nDATE \"%s\"\nSAMPLE_UNIT \"seconds\"\n"
            "VALUE_UNIT \"bytes\"\nBEGIN_SAMPLE 0.000000\nEND_SAMPLE 0.000000\n",
            h->run.job[0] ? h->run.job : "eventlog", date);
    if (fclose(f) != 0) {
        free(s);
        return -ENOMEM;
    }
    int rc = hp_write(h, s, n);
    free(s);
    h->header_done = rc == 0;
    return rc;
}

int profile_hp_open(struct profile_hp **out, const char *path, FILE *msgs)
{
    struct profile_hp *h = calloc(1, sizeof *h);
    if (h == NULL)
        return -ENOMEM;
    h->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0666);
    if (h->fd < 0) {
        int e = -errno;
        free(h);
        return e;
    }
    h->path = path;
    h->msgs = msgs;
    *out = h;
    return 0;
}

/* The number this file gives the stack s (see the file's comment). */
static size_t hp_stack_number(struct profile_hp *h, const struct els_ccs *s)
{
    for (size_t i = 0; i < h->n_stacks; i++) {
        const struct hp_stack *k = &h->stacks[i];
        if (k->depth != s->depth)
            continue;
        size_t j = 0;
        while (j < s->depth && k->ids[j] == els_ccs_id(s, j))
            j++;
        if (j == s->depth)
            return i + 1;
    }
    if (h->n_stacks == h->cap_stacks) {
        size_t cap = h->cap_stacks ? 2 * h->cap_stacks : 64;
        struct hp_stack *v = realloc(h->stacks, cap * sizeof *v);
        if (v == NULL)
            return 0;
        h->stacks = v;
        h->cap_stacks = cap;
    }
    struct hp_stack *k = &h->stacks[h->n_stacks++];
    k->depth = s->depth;
    for (size_t j = 0; j < s->depth; j++)
        k->ids[j] = els_ccs_id(s, j);
    return h->n_stacks;
}

/* The RTS's fprint_ccs(): innermost first, CAFs as Module.CAF, cut at
 * HP_CCS_LENGTH characters ending "...". */
static void hp_ccs_name(struct profile_hp *h, FILE *f, const struct els_ccs *s)
{
    if (s->depth == 0) {
        fputs("MAIN", f);
        return;
    }
    char buf[HP_CCS_LENGTH + 1 + 64];
    size_t p = 0;
    bool cut = false;
    for (size_t i = 0; i < s->depth && !cut; i++) {
        const struct profile_cc *c = profile_ccs_get(&h->ccs, els_ccs_id(s, i));
        char unknown[24];
        const char *label = c != NULL ? c->label : unknown;
        if (c == NULL)
            snprintf(unknown, sizeof unknown, "cc%" PRIu32, els_ccs_id(s, i));
        char part[HP_CCS_LENGTH + 2];
        if (c != NULL && strcmp(label, "CAF") == 0)
            snprintf(part, sizeof part, "%s.CAF", c->module);
        else
            snprintf(part, sizeof part, "%s%s", label, i + 1 < s->depth ? "/" : "");
        for (const char *q = part; *q != '\0'; q++) {
            if (p >= HP_CCS_LENGTH + 1) {
                cut = true;
                break;
            }
            buf[p++] = *q;
        }
        if (p >= HP_CCS_LENGTH + 1)
            cut = true;
    }
    if (cut)
        memcpy(buf + HP_CCS_LENGTH - 4, "...", 4), p = HP_CCS_LENGTH - 1;
    buf[p] = '\0';
    fprintf(f, "(%zu)%s", hp_stack_number(h, s), buf);
}

int profile_hp_event(struct profile_hp *h, const struct els_event *ev)
{
    struct els_event_data e;
    h->last_time = ev->time;
    profile_run_event(&h->run, ev);
    switch (ev->tag) {
    case ELS_EV_HEAP_PROF_COST_CENTRE:
        if (els_event_decode(ev, &e) == 0)
            return profile_ccs_define(&h->ccs, &e);
        return 0;
    case ELS_EV_HEAP_PROF_SAMPLE_BEGIN:
    case ELS_EV_HEAP_BIO_PROF_SAMPLE_BEGIN:
        if (els_event_decode(ev, &e) != 0)
            return 0;
        if (h->cur != NULL) {           /* a census without its END */
            fclose(h->cur);
            free(h->buf);
            h->buf = NULL;
        }
        h->cur = open_memstream(&h->buf, &h->buf_len);
        if (h->cur == NULL)
            return -ENOMEM;
        h->era = e.u.heap_sample.era;
        h->begin_time = (double)ev->time / 1e9;
        fprintf(h->cur, "BEGIN_SAMPLE %f\n", h->begin_time);
        return 0;
    case ELS_EV_HEAP_PROF_SAMPLE_STRING:
        if (h->cur == NULL || els_event_decode(ev, &e) != 0 ||
            e.u.heap_sample_string.profile != 0)
            return 0;
        {
            char *w = profile_word(e.u.heap_sample_string.label);
            if (w == NULL)
                return -ENOMEM;
            fprintf(h->cur, "%s\t%" PRIu64 "\n", w, e.u.heap_sample_string.residency);
            free(w);
        }
        return 0;
    case ELS_EV_HEAP_PROF_SAMPLE_COST_CENTRE:
        if (h->cur == NULL || els_event_decode(ev, &e) != 0 ||
            e.u.heap_sample_ccs.profile != 0)
            return 0;
        hp_ccs_name(h, h->cur, &e.u.heap_sample_ccs.stack);
        fprintf(h->cur, "\t%" PRIu64 "\n", e.u.heap_sample_ccs.residency);
        return 0;
    case ELS_EV_HEAP_PROF_SAMPLE_END: {
        if (h->cur == NULL || els_event_decode(ev, &e) != 0)
            return 0;
        /* END carries the census's time 0 in the RTS: the BEGIN's time
         * stands for the census, as in the RTS's file. */
        fprintf(h->cur, "END_SAMPLE %f\n", h->begin_time);
        if (fclose(h->cur) != 0) {
            h->cur = NULL;
            return -ENOMEM;
        }
        h->cur = NULL;
        int rc = hp_header(h);
        if (rc == 0)
            rc = hp_write(h, h->buf, h->buf_len);
        free(h->buf);
        h->buf = NULL;
        if (rc == 0)
            h->samples++;
        return rc;
    }
    default:
        return 0;
    }
}

int profile_hp_finish(struct profile_hp *h, bool clean)
{
    int rc = hp_header(h);
    if (rc == 0 && clean) {
        char line[96];
        int n = snprintf(line, sizeof line, "BEGIN_SAMPLE %f\nEND_SAMPLE %f\n",
                         (double)h->last_time / 1e9, (double)h->last_time / 1e9);
        rc = hp_write(h, line, (size_t)n);
    }
    if (h->samples == 0 && h->msgs != NULL)
        fprintf(h->msgs, "eventlog-sink dump: %s: the stream holds no heap profile "
                "samples (was the program run with +RTS -h...?): the file has none\n",
                h->path);
    if (rc == 0 && fsync(h->fd) != 0 && errno != EINVAL)
        rc = -errno;
    return rc;
}

void profile_hp_free(struct profile_hp *h)
{
    if (h == NULL)
        return;
    if (h->cur != NULL)
        fclose(h->cur);
    free(h->buf);
    free(h->stacks);
    profile_ccs_free(&h->ccs);
    close(h->fd);
    free(h);
}
