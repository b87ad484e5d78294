/*
 * ccs.c: the cost-centre table and the classic formats' names for cost
 * centres and heap bands (ccs.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "monitor/ccs.h"

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
    c->len[0] = strlen(l), c->len[1] = strlen(m), c->len[2] = strlen(s);
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

/* Only the first PROFILE_BAND_CHARS + 1 characters are ever looked at: a
 * label may be 64 KiB long. */
size_t profile_ccs_band(const struct profile_ccs *t, const struct els_ccs *s,
                        uint32_t number, char *out, size_t cap)
{
    if (s->depth == 0)
        return (size_t)snprintf(out, cap, "MAIN");
    char buf[PROFILE_BAND_CHARS + 2];
    size_t p = 0;
    for (size_t i = 0; i < s->depth && p <= PROFILE_BAND_CHARS; i++) {
        const struct profile_cc *c = profile_ccs_get(t, els_ccs_id(s, i));
        char unknown[24];
        const char *parts[3] = { unknown, "", i + 1 < s->depth ? "/" : "" };
        if (c == NULL)
            snprintf(unknown, sizeof unknown, "cc%" PRIu32, els_ccs_id(s, i));
        else if (strcmp(c->label, "CAF") == 0)
            parts[0] = c->module, parts[1] = ".CAF", parts[2] = "";
        else
            parts[0] = c->label;
        for (int j = 0; j < 3; j++)
            for (const char *q = parts[j]; *q != '\0' && p <= PROFILE_BAND_CHARS; q++)
                buf[p++] = *q;
    }
    if (p > PROFILE_BAND_CHARS)
        memcpy(buf + PROFILE_BAND_CHARS - 4, "...", 4), p = PROFILE_BAND_CHARS - 1;
    buf[p] = '\0';
    return (size_t)snprintf(out, cap, "(%" PRIu32 ")%s", number, buf);
}
