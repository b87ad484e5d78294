/*
 * profile_common.c: what the .hp and .prof converters share beyond the
 * cost-centre table (monitor/ccs.c): the program's name and start time,
 * and the hash index of their stacks and call-tree nodes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profile.h"

void profile_run_event(struct profile_run *r, const struct els_event *ev)
{
    struct els_event_data e;
    if (els_event_decode(ev, &e) != 0)
        return;
    if (ev->tag == ELS_EV_PROGRAM_ARGS) {
        /* The RTS's JOB is the arguments joined by spaces. */
        FILE *f = fmemopen(r->job, sizeof r->job - 1, "w");
        if (f == NULL)
            return;
        setvbuf(f, NULL, _IONBF, 0);
        struct els_str list = e.u.capset_strings.strings, item;
        bool first = true;
        while (els_str_next(&list, &item)) {
            if (!first)
                fputc(' ', f);
            profile_quoted(f, item);
            first = false;
        }
        fclose(f);
        r->job[sizeof r->job - 1] = '\0';
    } else if (ev->tag == ELS_EV_WALL_CLOCK_TIME) {
        r->have_clock = true;
        r->start_sec = (int64_t)e.u.wall_clock.sec - (int64_t)(ev->time / 1000000000u);
    }
}

void profile_run_date(const struct profile_run *r, char *buf, size_t cap)
{
    time_t t = r->have_clock ? (time_t)r->start_sec : time(NULL);
    struct tm tm;
    if (localtime_r(&t, &tm) == NULL || strftime(buf, cap, "%a %b %d %H:%M %Y", &tm) == 0)
        snprintf(buf, cap, "unknown");
}

/* ------------------------------------------------------------------ */
/* The hash index (see profile.h) */

uint32_t profile_hash_words(const uint32_t *w, size_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15u ^ n;
    for (size_t i = 0; i < n; i++) {
        h ^= w[i];
        h *= 0xbf58476d1ce4e5b9u;
        h ^= h >> 31;
    }
    h ^= h >> 29;
    h *= 0x94d049bb133111ebu;
    h ^= h >> 32;
    return (uint32_t)h;
}

int64_t profile_table_find(struct profile_table *t, uint32_t h,
                           bool (*same)(const void *ctx, uint32_t idx), const void *ctx)
{
    if (t->cap == 0)
        return -1;
    for (size_t i = h & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        const struct profile_slot *s = &t->slots[i];
        t->probes++;
        if (s->idx1 == 0)
            return -1;
        if (s->hash == h && same(ctx, s->idx1 - 1))
            return s->idx1 - 1;
    }
}

static void profile_table_put(struct profile_table *t, uint32_t h, uint32_t idx1)
{
    size_t i = h & (t->cap - 1);
    while (t->slots[i].idx1 != 0) {
        t->probes++;
        i = (i + 1) & (t->cap - 1);
    }
    t->probes++;
    t->slots[i].hash = h;
    t->slots[i].idx1 = idx1;
}

int profile_table_add(struct profile_table *t, uint32_t h, uint32_t idx)
{
    if (idx == UINT32_MAX)
        return -ERANGE;
    if (2 * (t->n + 1) > t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        struct profile_slot *old = t->slots;
        size_t old_cap = t->cap;
        t->slots = calloc(cap, sizeof *t->slots);
        if (t->slots == NULL) {
            t->slots = old;
            return -ENOMEM;
        }
        t->cap = cap;
        for (size_t i = 0; i < old_cap; i++)
            if (old[i].idx1 != 0)
                profile_table_put(t, old[i].hash, old[i].idx1);
        free(old);
    }
    profile_table_put(t, h, idx + 1);
    t->n++;
    return 0;
}

void profile_table_free(struct profile_table *t)
{
    free(t->slots);
    *t = (struct profile_table){ 0 };
}
