/*
 * profile_common.c: what the .hp and .prof converters share: the
 * cost-centre table, the program's name and start time, and the rules
 * that turn stream text into text the classic formats can hold.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profile.h"

static bool profile_plain(unsigned char c)
{
    return c > 0x20 && c < 0x7f && c != '"' && c != '\\';
}

char *profile_word(struct els_str s)
{
    char *w = malloc(s.len + 2);
    if (w == NULL)
        return NULL;
    for (size_t i = 0; i < s.len; i++)
        w[i] = profile_plain((unsigned char)s.ptr[i]) ? s.ptr[i] : '_';
    if (s.len == 0)
        w[0] = '_';
    w[s.len > 0 ? s.len : 1] = '\0';
    return w;
}

void profile_quoted(FILE *f, struct els_str s)
{
    for (size_t i = 0; i < s.len; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        fputc(c == '"' ? '\'' : (c >= 0x20 && c < 0x7f) ? (int)c : '_', f);
    }
}

int profile_ccs_define(struct profile_ccs *t, const struct els_event_data *e)
{
    uint32_t id = e->u.cost_centre.id;
    if (id >= PROFILE_CC_MAX)
        return -ERANGE;
    if (id >= t->n) {
        uint32_t n = t->n ? t->n : 256;
        while (n <= id)
            n *= 2;
        struct profile_cc *v = realloc(t->v, n * sizeof *v);
        if (v == NULL)
            return -ENOMEM;
        memset(v + t->n, 0, (n - t->n) * sizeof *v);
        t->v = v;
        t->n = n;
    }
    struct profile_cc *c = &t->v[id];
    char *l = profile_word(e->u.cost_centre.label);
    char *m = profile_word(e->u.cost_centre.module);
    char *s = profile_word(e->u.cost_centre.srcloc);
    if (l == NULL || m == NULL || s == NULL) {
        free(l), free(m), free(s);
        return -ENOMEM;
    }
    free(c->label), free(c->module), free(c->srcloc);
    c->label = l, c->module = m, c->srcloc = s;
    c->defined = true;
    return 0;
}

const struct profile_cc *profile_ccs_get(const struct profile_ccs *t, uint32_t id)
{
    return id < t->n && t->v[id].defined ? &t->v[id] : NULL;
}

void profile_ccs_free(struct profile_ccs *t)
{
    for (uint32_t i = 0; i < t->n; i++)
        free(t->v[i].label), free(t->v[i].module), free(t->v[i].srcloc);
    free(t->v);
    t->v = NULL;
    t->n = 0;
}

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
