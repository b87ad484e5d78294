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


/* Note [Stack numbers, bounded]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A -hc band is named by its stack's number, so every distinct stack
 * met is remembered: its cost-centre ids, back to back in one array
 * (4 bytes an id, a stack as deep as it is), found again through a hash
 * index (profile_table): a sample costs a few probes however many
 * stacks came before, so a stream converts in time linear in its size.
 * Memory is bounded: past PROFILE_HP_STACKS_MAX stacks or
 * PROFILE_HP_STACK_IDS_MAX ids in all, a sample of a stack not yet
 * numbered is added to its census's "(other)" band (written last in the
 * census, the sum of such samples' bytes) instead of a band of its own;
 * stacks numbered before keep their bands.  How many samples went to
 * "(other)" is said on the messages stream at the end (the .hp format
 * has no comments).
 */

struct hp_stack {
    uint32_t off;               /* of its first id in ids[] */
    uint8_t depth;
};

struct profile_hp {
    int fd;
    const char *path;
    FILE *msgs;
    struct profile_run run;
    struct profile_ccs ccs;
    bool header_done;
    uint64_t era;
    double begin_time;          /* of the census being built, seconds */
    uint64_t last_time;
    uint64_t samples;
    char *buf;                  /* the census being built */
    size_t buf_len;
    FILE *cur;
    bool cur_other;             /* the census has an "(other)" band */
    uint64_t cur_other_bytes;
    /* Numbering of cost-centre stacks: Note [Stack numbers, bounded]. */
    struct hp_stack *stacks;
    uint32_t n_stacks, cap_stacks;
    uint32_t *ids;
    size_t n_ids, cap_ids;
    struct profile_table index;
    uint64_t other;             /* samples put in "(other)" */
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

struct hp_key {
    const struct profile_hp *h;
    const uint32_t *ids;
    uint8_t depth;
};

static bool hp_same_stack(const void *ctx, uint32_t idx)
{
    const struct hp_key *k = ctx;
    const struct hp_stack *s = &k->h->stacks[idx];
    return s->depth == k->depth &&
           memcmp(&k->h->ids[s->off], k->ids, k->depth * sizeof *k->ids) == 0;
}

/* The number this file gives the stack s (see the file's comment), or 0
 * when the table is full (Note [Stack numbers, bounded]) or memory is
 * short (*rc then says so). */
static uint32_t hp_stack_number(struct profile_hp *h, const struct els_ccs *s, int *rc)
{
    uint32_t ids[255];
    for (size_t j = 0; j < s->depth; j++)
        ids[j] = els_ccs_id(s, j);
    struct hp_key key = { .h = h, .ids = ids, .depth = s->depth };
    uint32_t hash = profile_hash_words(ids, s->depth);
    int64_t found = profile_table_find(&h->index, hash, hp_same_stack, &key);
    if (found >= 0)
        return (uint32_t)found + 1;
    if (h->n_stacks >= PROFILE_HP_STACKS_MAX ||
        h->n_ids + s->depth > PROFILE_HP_STACK_IDS_MAX)
        return 0;
    if (h->n_stacks == h->cap_stacks) {
        uint32_t cap = h->cap_stacks ? 2 * h->cap_stacks : 64;
        struct hp_stack *v = realloc(h->stacks, cap * sizeof *v);
        if (v == NULL)
            goto nomem;
        h->stacks = v;
        h->cap_stacks = cap;
    }
    if (h->n_ids + s->depth > h->cap_ids) {
        size_t cap = h->cap_ids ? 2 * h->cap_ids : 1024;
        while (cap < h->n_ids + s->depth)
            cap *= 2;
        uint32_t *v = realloc(h->ids, cap * sizeof *v);
        if (v == NULL)
            goto nomem;
        h->ids = v;
        h->cap_ids = cap;
    }
    if (profile_table_add(&h->index, hash, h->n_stacks) != 0)
        goto nomem;
    h->stacks[h->n_stacks] = (struct hp_stack){ .off = (uint32_t)h->n_ids, .depth = s->depth };
    memcpy(&h->ids[h->n_ids], ids, s->depth * sizeof *ids);
    h->n_ids += s->depth;
    return ++h->n_stacks;
nomem:
    *rc = -ENOMEM;
    return 0;
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
        h->cur_other = false;
        h->cur_other_bytes = 0;
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
            /* hp2ps refuses a band name of PROFILE_HP_NAME_MAX + 1 bytes
             * or more ("integer must follow identifier"). */
            if (strlen(w) > PROFILE_HP_NAME_MAX)
                memcpy(w + PROFILE_HP_NAME_MAX - 3, "...", 4);
            fprintf(h->cur, "%s\t%" PRIu64 "\n", w, e.u.heap_sample_string.residency);
            free(w);
        }
        return 0;
    case ELS_EV_HEAP_PROF_SAMPLE_COST_CENTRE:
        if (h->cur == NULL || els_event_decode(ev, &e) != 0 ||
            e.u.heap_sample_ccs.profile != 0)
            return 0;
        {
            const struct els_ccs *st = &e.u.heap_sample_ccs.stack;
            uint64_t bytes = e.u.heap_sample_ccs.residency;
            int rc = 0;
            uint32_t k = st->depth > 0 ? hp_stack_number(h, st, &rc) : 0;
            if (rc != 0)
                return rc;
            if (st->depth > 0 && k == 0) {
                h->cur_other = true;
                h->cur_other_bytes = bytes > UINT64_MAX - h->cur_other_bytes
                                         ? UINT64_MAX : h->cur_other_bytes + bytes;
                h->other++;
                return 0;
            }
            {
                char name[PROFILE_BAND_MAX];
                profile_ccs_band(&h->ccs, st, k, name, sizeof name);
                fputs(name, h->cur);
            }
            fprintf(h->cur, "\t%" PRIu64 "\n", bytes);
        }
        return 0;
    case ELS_EV_HEAP_PROF_SAMPLE_END: {
        if (h->cur == NULL || els_event_decode(ev, &e) != 0)
            return 0;
        /* END carries the census's time 0 in the RTS: the BEGIN's time
         * stands for the census, as in the RTS's file. */
        if (h->cur_other)
            fprintf(h->cur, "(other)\t%" PRIu64 "\n", h->cur_other_bytes);
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
    if (h->other > 0 && h->msgs != NULL)
        fprintf(h->msgs, "eventlog-sink dump: %s: %" PRIu64 " samples of cost-centre "
                "stacks beyond the first %u (or %u ids in all) are in the band (other)\n",
                h->path, h->other, PROFILE_HP_STACKS_MAX, PROFILE_HP_STACK_IDS_MAX);
    if (rc == 0 && fsync(h->fd) != 0 && errno != EINVAL)
        rc = -errno;
    return rc;
}

void profile_hp_stats(const struct profile_hp *h, struct profile_stats *st)
{
    *st = (struct profile_stats){ .probes = h->index.probes, .entries = h->n_stacks,
                                  .other = h->other };
}

void profile_hp_free(struct profile_hp *h)
{
    if (h == NULL)
        return;
    if (h->cur != NULL)
        fclose(h->cur);
    free(h->buf);
    free(h->stacks);
    free(h->ids);
    profile_table_free(&h->index);
    profile_ccs_free(&h->ccs);
    close(h->fd);
    free(h);
}
