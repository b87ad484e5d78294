/*
 * model.c: the monitor's aggregation of a GHC eventlog (see model.h).
 *
 * One parser callback (model_on_event) updates counters and state
 * machines; the renderers at the end read them.  Per-capability activity
 * is a state (idle, running a thread, in GC) changed only by that
 * capability's own events, so blocks arriving out of order across
 * capabilities do not confuse it.  Time spent in each state is added to
 * the capability's timeline, a row of bins whose width doubles whenever
 * the run outgrows MON_BINS bins (the whole run stays visible at bounded
 * memory).  Nothing here does I/O; the renderers are in render.c.
 * See Note [Stream-chosen keys] for what bounds memory and work when
 * the stream is hostile.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "eventlog-sink.h"
#include "eventlog-sink/parse.h"
#include "model_impl.h"

/* Prometheus histogram bounds of GC pauses, seconds. */
const double mon_pause_bounds[MON_PAUSE_BUCKETS] = {
    0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5
};

const char *const mon_spark_names[7] = {
    "created", "dud", "overflowed", "converted", "gcd", "fizzled", "pool"
};

const char *mon_class_name(enum mon_class c)
{
    static const char *const names[MON_CLASS_N] = {
        "scheduler", "gc", "heap", "spark", "user", "profiling", "meta",
        "other"
    };
    return (unsigned)c < MON_CLASS_N ? names[c] : "other";
}

enum mon_class mon_class_of(uint16_t tag)
{
    switch (tag) {
    case 0: case 1: case 2: case 3: case 4: case 8: case 15:
    case 45: case 46: case 47: case 48: case 55: case 56: case 57:
        return MON_CLASS_SCHED;
    case 9: case 10: case 11: case 12: case 20: case 21: case 22: case 54:
        return MON_CLASS_GC;
    case 49: case 50: case 51: case 52: case 53:
        return MON_CLASS_HEAP;
    case 34: case 35: case 36: case 37: case 38: case 39: case 40: case 41:
        return MON_CLASS_SPARK;
    case 19: case 58:
        return MON_CLASS_USER;
    case 16: case 18: case 25: case 26: case 27: case 28: case 29: case 30:
    case 31: case 32: case 33: case 43: case 44:
        return MON_CLASS_META;
    default:
        if (tag >= 160 && tag <= 169)
            return MON_CLASS_PROF;
        return MON_CLASS_OTHER;
    }
}

/* ------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------ */

static void mon_copy(char *dst, size_t cap, const char *s, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = '\0';
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t be64(const uint8_t *p)
{
    return (uint64_t)be32(p) << 32 | be32(p + 4);
}

/* ------------------------------------------------------------------------
 * Timeline
 * ------------------------------------------------------------------------ */

/* Coarsen the timeline until t fits in MON_BINS bins: bins widen by
 * 2^k in one pass (a stream may jump far ahead in time at once). */
static void mon_fit(struct mon_model *m, uint64_t t)
{
    unsigned k = 0;
    while (k < 63 && (t / m->bin_ns) >> k >= MON_BINS)
        k++;
    if (k == 0)
        return;
    for (unsigned c = 0; c < m->ncaps; c++) {
        struct mon_bin *b = m->caps[c].bins;
        if (b == NULL)
            continue;
        for (unsigned i = 0; i < MON_BINS; i++) {
            unsigned j = i >> k;
            if (j == i)
                continue;
            /* Microseconds in a bin stay below 2^32 up to bins of 71
             * minutes; saturate rather than wrap beyond. */
            uint64_t r = (uint64_t)b[j].run_us + b[i].run_us;
            uint64_t g = (uint64_t)b[j].gc_us + b[i].gc_us;
            b[j].run_us = r > UINT32_MAX ? UINT32_MAX : (uint32_t)r;
            b[j].gc_us = g > UINT32_MAX ? UINT32_MAX : (uint32_t)g;
            b[i].run_us = b[i].gc_us = 0;
        }
    }
    struct mon_gbin *g = m->gbins;
    for (unsigned i = 0; i < MON_BINS; i++) {
        unsigned j = i >> k;
        if (j == i)
            continue;
        struct mon_gbin z = g[i];
        g[j].events += z.events;
        g[j].gcs += z.gcs;
        g[j].user += z.user;
        g[j].gc_ns += z.gc_ns;
        g[j].alloc += z.alloc;
        if (z.threads)
            g[j].threads = z.threads;
        if (z.heap_size)
            g[j].heap_size = z.heap_size;
        if (z.heap_live)
            g[j].heap_live = z.heap_live;
        memset(&g[i], 0, sizeof g[i]);
    }
    m->bin_ns = k < 63 && m->bin_ns <= UINT64_MAX >> k ? m->bin_ns << k : UINT64_MAX;
    m->last_bin >>= k;
}

static struct mon_gbin *mon_gbin_at(struct mon_model *m, uint64_t t)
{
    mon_fit(m, t);
    unsigned i = (unsigned)(t / m->bin_ns);
    if (i > m->last_bin) {
        /* Levels carry forward into bins no event touched. */
        for (unsigned j = m->last_bin + 1; j <= i; j++) {
            m->gbins[j].threads = m->gbins[m->last_bin].threads;
            m->gbins[j].heap_size = m->gbins[m->last_bin].heap_size;
            m->gbins[j].heap_live = m->gbins[m->last_bin].heap_live;
        }
        m->last_bin = i;
    }
    return &m->gbins[i];
}

/* Add [a, b) in state s to capability c's bins. */
static void mon_cap_span(struct mon_model *m, struct mon_cap *c,
                         enum mon_cap_state s, uint64_t a, uint64_t b)
{
    if (s == CAP_IDLE || b <= a || c->bins == NULL)
        return;
    if (s == CAP_RUN)
        c->run_ns += b - a;
    else
        c->gc_ns += b - a;
    mon_fit(m, b);
    while (a < b) {
        /* Saturate: near 2^64 (bad timestamps) the product wraps, and a
         * wrapped end would send a backwards for ever. */
        uint64_t i = a / m->bin_ns;
        uint64_t end = i + 1 <= UINT64_MAX / m->bin_ns ? (i + 1) * m->bin_ns
                                                        : UINT64_MAX;
        uint64_t upto = end < b ? end : b;
        uint32_t us = (uint32_t)((upto - a) / 1000u);
        if (s == CAP_RUN)
            c->bins[i].run_us += us;
        else
            c->bins[i].gc_us += us;
        a = upto;
    }
}

static struct mon_cap *mon_cap(struct mon_model *m, int32_t cap)
{
    if (cap < 0 || cap >= MON_MAX_CAPS)
        return NULL;
    struct mon_cap *c = &m->caps[cap];
    if (!c->seen) {
        c->bins = calloc(MON_BINS, sizeof *c->bins);
        if (c->bins == NULL)
            return NULL;
        m->mem += MON_BINS * sizeof *c->bins;
        c->seen = true;
        if ((unsigned)cap + 1 > m->ncaps)
            m->ncaps = (unsigned)cap + 1;
    }
    return c;
}

static void mon_cap_set(struct mon_model *m, struct mon_cap *c,
                        enum mon_cap_state s, uint64_t t)
{
    if (t < c->since)
        t = c->since;
    mon_cap_span(m, c, c->state, c->since, t);
    c->state = s;
    c->since = t;
}

/* ------------------------------------------------------------------------
 * Threads
 * ------------------------------------------------------------------------ */

/* Note [Stream-chosen keys]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Thread ids, cost-centre ids and every string come from the stream, and
 * whoever can reach the socket top or serve reads chooses them.  So:
 *
 *  - The thread table hashes ids with SipHash-1-3 under a key drawn from
 *    getrandom() once per process.  With a fixed hash (it was id *
 *    2654435761) ids can be chosen to land in one cluster: 120,000
 *    thread creations took 20 s instead of 0.1 s, in serve's only loop.
 *    Without the key an attacker cannot aim, so probes per lookup stay
 *    what random ids give.  (m->probes counts them for the tests.)
 *  - Every table has a cap and every stored string a length limit:
 *    threads MON_THREADS_MAX slots, cost centres ids below MON_CCS_MAX,
 *    their names MON_CC_NAME bytes each and MON_CC_TEXT_MAX bytes in
 *    all, heap labels MON_LABELS entries of MON_TEXT bytes.  What does
 *    not fit is counted (threads_untracked, ccs_refused, strings_cut),
 *    shown by the views, never silently lost.  mon_model_memory() adds
 *    up what the model holds; MON_MEMORY_MAX bounds it.
 *  - Work per event is bounded by a constant: no event walks a table
 *    (a heap sample by cost centre starts a new generation instead of
 *    clearing every cost centre's figure).
 */

#define ROTL64(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

/* SipHash-1-3 of one 64-bit word under key k (Aumasson and Bernstein;
 * the 1-3 rounds variant Rust's and Python's hash tables use). */
static uint64_t mon_siphash13(const uint64_t k[2], uint64_t w)
{
    uint64_t v0 = k[0] ^ 0x736f6d6570736575ull, v1 = k[1] ^ 0x646f72616e646f6dull,
             v2 = k[0] ^ 0x6c7967656e657261ull, v3 = k[1] ^ 0x7465646279746573ull;
#define MON_SIPROUND do { \
        v0 += v1; v1 = ROTL64(v1, 13); v1 ^= v0; v0 = ROTL64(v0, 32); \
        v2 += v3; v3 = ROTL64(v3, 16); v3 ^= v2; \
        v0 += v3; v3 = ROTL64(v3, 21); v3 ^= v0; \
        v2 += v1; v1 = ROTL64(v1, 17); v1 ^= v2; v2 = ROTL64(v2, 32); \
    } while (0)
    const uint64_t b = (uint64_t)8 << 56;   /* 8 bytes, no tail */
    v3 ^= w; MON_SIPROUND; v0 ^= w;
    v3 ^= b; MON_SIPROUND; v0 ^= b;
    v2 ^= 0xff;
    MON_SIPROUND; MON_SIPROUND; MON_SIPROUND;
#undef MON_SIPROUND
    return v0 ^ v1 ^ v2 ^ v3;
}

/* The process's hash key, drawn once (top and serve are one thread;
 * the fuzz target and the tests too).  Without getrandom() (an old
 * kernel, a sandbox), /dev/urandom; without that, the clock, the pid
 * and an address: weaker, but still not known to a remote stream. */
static uint64_t mon_key[2];
static bool mon_keyed;

static void mon_key_init(void)
{
    if (mon_keyed)
        return;
    uint8_t b[16];
    size_t got = 0;
    while (got < sizeof b) {
        ssize_t n = getrandom(b + got, sizeof b - got, GRND_NONBLOCK);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    if (got < sizeof b) {
        int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
        got = 0;
        if (fd >= 0) {
            ssize_t n = read(fd, b, sizeof b);
            got = n > 0 ? (size_t)n : 0;
            close(fd);
        }
    }
    if (got < sizeof b) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t x[2] = { (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 32,
                          (uint64_t)getpid() ^ (uint64_t)(uintptr_t)&ts };
        memcpy(b, x, sizeof b);
    }
    memcpy(mon_key, b, sizeof mon_key);
    mon_keyed = true;
}

static uint32_t mon_hash(uint32_t id)
{
    return (uint32_t)mon_siphash13(mon_key, id);
}

static struct mon_thread *mon_thread_find(struct mon_model *m, uint32_t id)
{
    if (m->threads == NULL || id == 0)
        return NULL;
    uint32_t mask = m->threads_cap - 1;
    for (uint32_t i = mon_hash(id) & mask;; i = (i + 1) & mask) {
        m->probes++;
        if (m->threads[i].id == id)
            return &m->threads[i];
        if (m->threads[i].id == 0)
            return NULL;
    }
}

static bool mon_thread_grow(struct mon_model *m)
{
    uint32_t ncap = m->threads_cap ? m->threads_cap * 2 : 1024;
    if (ncap > MON_THREADS_MAX)
        return false;
    struct mon_thread *t = calloc(ncap, sizeof *t);
    if (t == NULL)
        return false;
    for (uint32_t j = 0; j < m->threads_cap; j++) {
        if (m->threads[j].id == 0)
            continue;
        uint32_t i = mon_hash(m->threads[j].id) & (ncap - 1);
        while (m->probes++, t[i].id != 0)
            i = (i + 1) & (ncap - 1);
        t[i] = m->threads[j];
    }
    m->mem += ((size_t)ncap - m->threads_cap) * sizeof *t;
    free(m->threads);
    m->threads = t;
    m->threads_cap = ncap;
    return true;
}

/* Set thread id's state, adding it if new (false if the table is full:
 * counted in threads_untracked). */
static void mon_thread_set(struct mon_model *m, uint32_t id, uint8_t state)
{
    if (id == 0)
        return;
    struct mon_thread *t = mon_thread_find(m, id);
    if (t != NULL) {
        t->state = state;
        return;
    }
    if ((m->threads_used + 1) * 4 > m->threads_cap * 3 && !mon_thread_grow(m)) {
        m->threads_untracked++;
        return;
    }
    uint32_t mask = m->threads_cap - 1, i = mon_hash(id) & mask;
    while (m->probes++, m->threads[i].id != 0)
        i = (i + 1) & mask;
    m->threads[i].id = id;
    m->threads[i].state = state;
    m->threads_used++;
}

static void mon_thread_del(struct mon_model *m, uint32_t id)
{
    struct mon_thread *t = mon_thread_find(m, id);
    if (t == NULL)
        return;
    uint32_t mask = m->threads_cap - 1, i = (uint32_t)(t - m->threads);
    m->threads[i].id = 0;
    m->threads_used--;
    /* Backward shift: move later entries of the cluster into the hole
     * when their home slot is not between the hole and them. */
    for (uint32_t j = (i + 1) & mask; m->threads[j].id != 0; j = (j + 1) & mask) {
        m->probes++;
        uint32_t home = mon_hash(m->threads[j].id) & mask;
        bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
        if (!stays) {
            m->threads[i] = m->threads[j];
            m->threads[j].id = 0;
            i = j;
        }
    }
}

void mon_thread_counts(const struct mon_model *m, uint64_t *runnable,
                       uint64_t *running, uint64_t *blocked)
{
    *runnable = *running = *blocked = 0;
    for (uint32_t i = 0; i < m->threads_cap; i++) {
        if (m->threads[i].id == 0)
            continue;
        switch (m->threads[i].state) {
        case TH_RUNNABLE: (*runnable)++; break;
        case TH_RUNNING: (*running)++; break;
        default: (*blocked)++; break;
        }
    }
}

/* ------------------------------------------------------------------------
 * User markers: "NAME start"/"NAME begin" opens a span that "NAME end"/
 * "NAME stop" closes.
 * ------------------------------------------------------------------------ */

static size_t mon_span_stem(const char *s, size_t n, bool *opens)
{
    static const struct { const char *w; bool opens; } words[] = {
        { " start", true }, { " begin", true }, { " end", false },
        { " stop", false },
    };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t wl = strlen(words[i].w);
        if (n > wl && memcmp(s + n - wl, words[i].w, wl) == 0) {
            *opens = words[i].opens;
            return n - wl;
        }
    }
    return 0;
}

static void mon_marker(struct mon_model *m, const struct els_event *ev,
                       struct els_str text)
{
    struct mon_text *mt = &m->marks[m->markers % MON_MARKS];
    mt->t = ev->time;
    mt->cap = ev->cap;
    mon_copy(mt->s, sizeof mt->s, text.ptr, text.len);
    m->markers++;

    bool opens;
    size_t stem = mon_span_stem(text.ptr, text.len, &opens);
    if (stem == 0 || stem >= MON_TEXT)
        return;
    if (opens) {
        if (m->nopen == MON_OPEN_SPANS)
            return;
        struct mon_text *o = &m->open_spans[m->nopen++];
        o->t = ev->time;
        mon_copy(o->s, sizeof o->s, text.ptr, stem);
        return;
    }
    for (unsigned i = m->nopen; i-- > 0;) {
        struct mon_text *o = &m->open_spans[i];
        if (strlen(o->s) == stem && memcmp(o->s, text.ptr, stem) == 0) {
            struct mon_span *sp = &m->spans[m->nspans++ % MON_SPANS];
            sp->t0 = o->t;
            sp->t1 = ev->time;
            memcpy(sp->s, o->s, sizeof sp->s);
            m->open_spans[i] = m->open_spans[--m->nopen];
            return;
        }
    }
}

/* ------------------------------------------------------------------------
 * Profiling
 * ------------------------------------------------------------------------ */

static struct mon_cc *mon_cc(struct mon_model *m, uint32_t id, bool create)
{
    if (id >= MON_CCS_MAX) {
        if (create)
            m->ccs_refused++;
        return NULL;
    }
    if (id >= m->nccs) {
        if (!create)
            return NULL;
        uint32_t n = m->nccs ? m->nccs : 256;
        while (n <= id)
            n *= 2;
        struct mon_cc *c = realloc(m->ccs, n * sizeof *c);
        if (c == NULL)
            return NULL;
        memset(c + m->nccs, 0, (n - m->nccs) * sizeof *c);
        m->mem += (size_t)(n - m->nccs) * sizeof *c;
        m->ccs = c;
        m->nccs = n;
    }
    return &m->ccs[id];
}

/* A NUL-terminated string at *p within [*p, end); false if none. */
static bool mon_cstr(const uint8_t **p, const uint8_t *end, struct els_str *s)
{
    const uint8_t *z = memchr(*p, 0, (size_t)(end - *p));
    if (z == NULL)
        return false;
    s->ptr = (const char *)*p;
    s->len = (size_t)(z - *p);
    *p = z + 1;
    return true;
}

/* A copy of a cost centre's name, cut to MON_CC_NAME bytes (counted in
 * strings_cut); NULL when out of memory. */
static char *mon_cc_strdup(struct mon_model *m, struct els_str s)
{
    size_t n = s.len;
    if (n > MON_CC_NAME) {
        n = MON_CC_NAME;
        m->strings_cut++;
    }
    char *d = malloc(n + 1);
    if (d != NULL) {
        memcpy(d, s.ptr, n);
        d[n] = '\0';
        m->cc_text += MON_CC_CHARGE(n);
        m->mem += MON_CC_CHARGE(n);
    }
    return d;
}

static void mon_cc_strfree(struct mon_model *m, char **s)
{
    if (*s == NULL)
        return;
    size_t n = MON_CC_CHARGE(strlen(*s));
    m->cc_text -= n;
    m->mem -= n;
    free(*s);
    *s = NULL;
}

static void mon_prof_cc(struct mon_model *m, const struct els_event *ev)
{
    const uint8_t *p = ev->payload, *end = p + ev->payload_len;
    if (ev->payload_len < 4)
        return;
    uint32_t id = be32(p);
    p += 4;
    struct els_str label, module;
    if (!mon_cstr(&p, end, &label) || !mon_cstr(&p, end, &module))
        return;
    struct mon_cc *c = mon_cc(m, id, true);
    if (c == NULL)
        return;
    mon_cc_strfree(m, &c->label);
    mon_cc_strfree(m, &c->module);
    size_t need = MON_CC_CHARGE(label.len < MON_CC_NAME ? label.len : MON_CC_NAME)
                + MON_CC_CHARGE(module.len < MON_CC_NAME ? module.len : MON_CC_NAME);
    if (m->cc_text + need > MON_CC_TEXT_MAX) {
        m->ccs_refused++;   /* shown as "?" */
        return;
    }
    c->label = mon_cc_strdup(m, label);
    c->module = mon_cc_strdup(m, module);
}

static void mon_prof_sample(struct mon_model *m, const struct els_event *ev)
{
    /* capability:32 tick:64 depth:8 ids:32*depth, innermost first */
    if (ev->payload_len < 13)
        return;
    unsigned depth = ev->payload[12];
    if (ev->payload_len < 13 + 4 * (size_t)depth || depth == 0)
        return;
    if (m->samples == NULL) {
        m->samples = calloc(MON_SAMPLES, sizeof *m->samples);
        if (m->samples == NULL)
            return;
        m->mem += MON_SAMPLES * sizeof *m->samples;
    }
    struct mon_sample *s = &m->samples[m->prof_samples % MON_SAMPLES];
    s->t = ev->time;
    s->depth = (uint8_t)(depth > MON_STACK ? MON_STACK : depth);
    for (unsigned i = 0; i < s->depth; i++)
        s->ids[i] = be32(ev->payload + 13 + 4 * i);
    m->prof_samples++;
    struct mon_cc *c = mon_cc(m, s->ids[0], true);
    if (c != NULL)
        c->samples++;
}

static void mon_heap_cc_sample(struct mon_model *m, const struct els_event *ev)
{
    /* profile:8 residency:64 depth:8 ids:32*depth */
    if (ev->payload_len < 10)
        return;
    unsigned depth = ev->payload[9];
    if (depth == 0 || ev->payload_len < 10 + 4 * (size_t)depth)
        return;
    uint64_t res = be64(ev->payload + 1);
    struct mon_cc *c = mon_cc(m, be32(ev->payload + 10), true);
    if (c == NULL)
        return;
    if (!m->sample_by_cc) {
        /* First cost-centre entry of this sample: the last sample's
         * figures become stale at once (see Note [Stream-chosen keys]). */
        m->heap_gen++;
        m->sample_by_cc = true;
    }
    if (c->heap_gen != m->heap_gen) {
        c->heap = 0;
        c->heap_gen = m->heap_gen;
    }
    c->heap += res;
}

static void mon_heap_sample_end(struct mon_model *m)
{
    if (!m->in_sample)
        return;
    if (m->nstaging > 0) {
        memcpy(m->labels, m->staging, m->nstaging * sizeof m->staging[0]);
        m->nlabels = m->nstaging;
    }
    m->in_sample = false;
    m->heap_samples++;
}

static void mon_heap_sample_string(struct mon_model *m, uint64_t res,
                                   struct els_str label)
{
    /* Keep the MON_LABELS largest: replace the smallest if larger. */
    struct mon_label *slot = NULL;
    if (m->nstaging < MON_LABELS) {
        slot = &m->staging[m->nstaging++];
    } else {
        for (unsigned i = 0; i < MON_LABELS; i++)
            if (slot == NULL || m->staging[i].bytes < slot->bytes)
                slot = &m->staging[i];
        if (slot->bytes >= res)
            return;
    }
    slot->bytes = res;
    mon_copy(slot->s, sizeof slot->s, label.ptr, label.len);
}

/* ------------------------------------------------------------------------
 * Events
 * ------------------------------------------------------------------------ */

static void mon_recent(struct mon_text *ring, uint64_t n, const struct els_event *ev,
                       const char *s, size_t len)
{
    struct mon_text *t = &ring[n % MON_RECENT];
    t->t = ev->time;
    t->cap = ev->cap;
    mon_copy(t->s, sizeof t->s, s, len);
}

static int mon_on_header(void *user, const struct els_parser *p)
{
    (void)p;
    struct mon_model *m = user;
    m->streams++;
    m->ended = false;
    return 0;
}

static int mon_on_end(void *user, uint64_t offset)
{
    (void)offset;
    struct mon_model *m = user;
    m->ended = true;
    return 0;
}

static int mon_on_event(void *user, const struct els_event *ev)
{
    struct mon_model *m = user;
    if (ev->tag == ELS_EV_BLOCK_MARKER)
        return 0;
    m->events++;
    enum mon_class cls = mon_class_of(ev->tag);
    m->by_class[cls]++;
    if (ev->time > m->now)
        m->now = ev->time;
    struct mon_gbin *gb = mon_gbin_at(m, ev->time);
    gb->events++;

    struct mon_cap *c = mon_cap(m, ev->cap);
    struct els_event_data d;
    int dr = els_event_decode(ev, &d);
    if (dr < 0)
        return 0;           /* short payload: counted, not interpreted */

    switch (ev->tag) {
    case ELS_EV_CREATE_THREAD:
        m->threads_created++;
        mon_thread_set(m, d.u.thread.thread, TH_RUNNABLE);
        break;
    case ELS_EV_RUN_THREAD:
        mon_thread_set(m, d.u.thread.thread, TH_RUNNING);
        if (c != NULL)
            mon_cap_set(m, c, CAP_RUN, ev->time);
        break;
    case ELS_EV_STOP_THREAD: {
        uint16_t st = d.u.stop_thread.status;
        if (st == 5)
            mon_thread_del(m, d.u.stop_thread.thread);
        else
            mon_thread_set(m, d.u.stop_thread.thread,
                           st <= 3 ? TH_RUNNABLE : TH_BLOCKED);
        if (c != NULL && c->state == CAP_RUN)
            mon_cap_set(m, c, CAP_IDLE, ev->time);
        break;
    }
    case ELS_EV_THREAD_RUNNABLE:
        mon_thread_set(m, d.u.thread.thread, TH_RUNNABLE);
        break;
    case ELS_EV_THREAD_WAKEUP:
        mon_thread_set(m, d.u.thread_cap.thread, TH_RUNNABLE);
        break;
    case ELS_EV_GC_START:
        m->gcs++;
        gb->gcs++;
        if (c != NULL) {
            c->gc_start = ev->time ? ev->time : 1;
            mon_cap_set(m, c, CAP_GC, ev->time);
        }
        break;
    case ELS_EV_GC_WORK:
        if (c != NULL)
            mon_cap_set(m, c, CAP_GC, ev->time);
        break;
    case ELS_EV_GC_DONE:
    case ELS_EV_GC_IDLE:
        if (c != NULL && c->gc_start == 0)
            mon_cap_set(m, c, CAP_IDLE, ev->time);
        break;
    case ELS_EV_GC_END:
        if (c != NULL) {
            if (c->gc_start != 0 && ev->time >= c->gc_start) {
                uint64_t p = ev->time - c->gc_start;
                m->gc_ns += p;
                c->gc_pause_ns += p;
                gb->gc_ns += p;
                if (p > m->pause_max)
                    m->pause_max = p;
                m->pauses[m->npauses++ % MON_PAUSES] = p;
                unsigned b = 0;
                while (b < MON_PAUSE_BUCKETS && (double)p / 1e9 > mon_pause_bounds[b])
                    b++;
                m->pause_hist[b]++;
            }
            c->gc_start = 0;
            mon_cap_set(m, c, CAP_IDLE, ev->time);
        }
        break;
    case ELS_EV_LOG_MSG: {
        struct els_note note;
        if (els_note_decode(ev, &note) == 0) {
            switch (note.kind) {
            case ELS_NOTE_DROPPED:
                m->dropped_units += note.units;
                m->dropped_bytes += note.bytes;
                break;
            case ELS_NOTE_CONSUMER_MISSED:
                m->missed_units += note.units;
                m->missed_bytes += note.bytes;
                break;
            case ELS_NOTE_JOINED_LATE:
                m->late_units += note.units;
                m->late_bytes += note.bytes;
                break;
            case ELS_NOTE_JOINED_AT_SNAPSHOT:
                m->joined_at_snapshot = true;
                break;
            default:
                break;
            }
            if (note.kind != ELS_NOTE_JOINED_AT_SNAPSHOT) {
                mon_recent(m->note_texts, m->notes, ev, note.text.ptr, note.text.len);
                m->notes++;
            }
        }
        break;
    }
    case ELS_EV_USER_MSG:
        mon_recent(m->msgs, m->user_messages, ev, d.u.text.ptr, d.u.text.len);
        m->user_messages++;
        gb->user++;
        break;
    case ELS_EV_USER_MARKER:
        mon_marker(m, ev, d.u.text);
        gb->user++;
        break;
    case ELS_EV_RTS_IDENTIFIER:
        mon_copy(m->rts, sizeof m->rts, d.u.capset_text.text.ptr,
                 d.u.capset_text.text.len);
        break;
    case ELS_EV_PROGRAM_ARGS: {
        struct els_str list = d.u.capset_strings.strings, first;
        if (els_str_next(&list, &first)) {
            const char *b = first.ptr + first.len;
            while (b > first.ptr && b[-1] != '/')
                b--;
            mon_copy(m->program, sizeof m->program, b,
                     first.len - (size_t)(b - first.ptr));
        }
        break;
    }
    case ELS_EV_OSPROCESS_PID:
        m->pid = d.u.os_pid.pid;
        break;
    case ELS_EV_CAP_CREATE:
        mon_cap(m, d.u.cap.cap);
        break;
    case ELS_EV_SPARK_COUNTERS:
        if (c != NULL) {
            c->sp[SP_CREATED] = d.u.spark_counters.created;
            c->sp[SP_DUD] = d.u.spark_counters.dud;
            c->sp[SP_OVERFLOWED] = d.u.spark_counters.overflowed;
            c->sp[SP_CONVERTED] = d.u.spark_counters.converted;
            c->sp[SP_GCD] = d.u.spark_counters.gcd;
            c->sp[SP_FIZZLED] = d.u.spark_counters.fizzled;
            c->sp[SP_REMAINING] = d.u.spark_counters.remaining;
        }
        break;
    case ELS_EV_SPARK_CREATE: case ELS_EV_SPARK_DUD: case ELS_EV_SPARK_OVERFLOW:
    case ELS_EV_SPARK_RUN: case ELS_EV_SPARK_STEAL: case ELS_EV_SPARK_FIZZLE:
    case ELS_EV_SPARK_GC:
        m->spark_events++;
        break;
    case ELS_EV_HEAP_ALLOCATED:
        if (d.u.heap.bytes > m->heap_alloc) {
            gb->alloc += d.u.heap.bytes - m->heap_alloc;
            m->heap_alloc = d.u.heap.bytes;
        }
        break;
    case ELS_EV_HEAP_SIZE:
        m->heap_size = d.u.heap.bytes;
        gb->heap_size = m->heap_size;
        break;
    case ELS_EV_HEAP_LIVE:
        m->heap_live = d.u.heap.bytes;
        gb->heap_live = m->heap_live;
        break;
    case ELS_EV_HEAP_INFO_GHC:
        m->heap_max = d.u.heap_info.max_heap_size;
        break;
    case ELS_EV_HEAP_PROF_SAMPLE_BEGIN:
    case ELS_EV_HEAP_BIO_PROF_SAMPLE_BEGIN:
        mon_heap_sample_end(m);
        m->in_sample = true;
        m->nstaging = 0;
        m->sample_by_cc = false;
        break;
    case ELS_EV_HEAP_PROF_SAMPLE_END:
        mon_heap_sample_end(m);
        break;
    case ELS_EV_HEAP_PROF_SAMPLE_STRING:
        mon_heap_sample_string(m, d.u.heap_sample_string.residency,
                               d.u.heap_sample_string.label);
        break;
    case ELS_EV_HEAP_PROF_COST_CENTRE:
        mon_prof_cc(m, ev);
        break;
    case ELS_EV_HEAP_PROF_SAMPLE_COST_CENTRE:
        mon_heap_cc_sample(m, ev);
        break;
    case MON_EV_PROF_SAMPLE_COST_CENTRE:
        mon_prof_sample(m, ev);
        break;
    default:
        break;
    }
    gb->threads = m->threads_used;
    return 0;
}

/* ------------------------------------------------------------------------
 * Lifecycle and feeding
 * ------------------------------------------------------------------------ */

static void mon_clear_run(struct mon_model *m)
{
    for (unsigned c = 0; c < MON_MAX_CAPS; c++)
        free(m->caps[c].bins);
    for (uint32_t i = 0; i < m->nccs; i++) {
        free(m->ccs[i].label);
        free(m->ccs[i].module);
    }
    free(m->ccs);
    free(m->threads);
    free(m->samples);
    free(m->gbins);
}

size_t mon_model_memory(const struct mon_model *m)
{
    return sizeof *m + MON_BINS * sizeof *m->gbins + m->mem;
}

size_t mon_model_memory_max(void)
{
    return sizeof(struct mon_model) + MON_BINS * sizeof(struct mon_gbin)
         + (size_t)MON_MAX_CAPS * MON_BINS * sizeof(struct mon_bin)
         + (size_t)MON_THREADS_MAX * sizeof(struct mon_thread)
         + (size_t)MON_CCS_MAX * sizeof(struct mon_cc) + MON_CC_TEXT_MAX
         + (size_t)MON_SAMPLES * sizeof(struct mon_sample);
}

int mon_model_new(struct mon_model **out)
{
    mon_key_init();
    struct mon_model *m = calloc(1, sizeof *m);
    if (m == NULL)
        return ELS_ENOMEM;
    const struct els_parse_callbacks cb = {
        .struct_size = sizeof cb,
        .on_header = mon_on_header,
        .on_event = mon_on_event,
        .on_end = mon_on_end,
    };
    int rc = els_parser_new(&m->parser, &cb, m, ELS_PARSE_RESTART);
    if (rc < 0) {
        free(m);
        return rc;
    }
    m->bin_ns = MON_BIN0_NS;
    m->gbins = calloc(MON_BINS, sizeof *m->gbins);
    if (m->gbins == NULL) {
        els_parser_free(m->parser);
        free(m);
        return ELS_ENOMEM;
    }
    *out = m;
    return 0;
}

void mon_model_free(struct mon_model *m)
{
    if (m == NULL)
        return;
    mon_clear_run(m);
    els_parser_free(m->parser);
    free(m);
}

void mon_model_reset(struct mon_model *m)
{
    struct els_parser *p = m->parser;
    struct mon_model keep = *m;
    mon_clear_run(m);
    els_parser_reset(p);
    memset(m, 0, sizeof *m);
    m->parser = p;
    m->bin_ns = MON_BIN0_NS;
    m->gbins = calloc(MON_BINS, sizeof *m->gbins);
    memcpy(m->spec, keep.spec, sizeof m->spec);
    memcpy(m->source_state, keep.source_state, sizeof m->source_state);
    m->connections = keep.connections;
}

int mon_model_feed(struct mon_model *m, const void *buf, size_t len)
{
    if (m->failed || m->gbins == NULL) {
        m->bytes_skipped += len;
        return ELS_EINVAL;
    }
    m->bytes += len;
    int rc = els_parser_feed(m->parser, buf, len, NULL);
    if (rc < 0) {
        struct els_parse_status st;
        els_parser_status(m->parser, &st);
        snprintf(m->error, sizeof m->error, "%s", st.error ? st.error : "malformed stream");
        m->failed = true;
        return ELS_EINVAL;
    }
    return 0;
}

const char *mon_model_error(const struct mon_model *m)
{
    return m->failed ? m->error : NULL;
}

void mon_model_set_source(struct mon_model *m, const char *spec,
                          const char *state)
{
    if (spec != NULL)
        snprintf(m->spec, sizeof m->spec, "%s", spec);
    snprintf(m->source_state, sizeof m->source_state, "%s", state);
}

void mon_model_note_connection(struct mon_model *m)
{
    m->connections++;
}

/* Busy and GC time of c up to t, the open state included. */
static void mon_cap_upto(const struct mon_cap *c, uint64_t t, uint64_t *run,
                         uint64_t *gc)
{
    *run = c->run_ns;
    *gc = c->gc_ns;
    if (t > c->since) {
        if (c->state == CAP_RUN)
            *run += t - c->since;
        else if (c->state == CAP_GC)
            *gc += t - c->since;
    }
}

/* Note [Time in GC]
 * ~~~~~~~~~~~~~~~~~
 * "Time in GC" is the share of the capabilities' time spent in GC
 * pauses over the interval: the pause time (GC_START to GC_END, per
 * capability, as ghc-events reads it) summed over capabilities, divided
 * by the interval times the capabilities seen.  It was the sum divided
 * by the interval alone, which exceeds 100% as soon as several
 * capabilities post GC_START and GC_END for the same collection (a
 * parallel GC; the README's own screenshot showed 103.5%).
 * Each capability's part is clipped to the interval: a pause still open
 * counts up to now, and one that ends in a later interval counts there
 * only what that interval has not already counted; a block that arrives
 * late (capabilities' blocks come out of order) never makes a share
 * exceed 1.  Over a whole saved run every pause is closed, so the figure
 * is exactly ghc-events' sum / (last event's time x capabilities).
 * The same clipping keeps each capability's util and gc shares <= 1. */

/* (now - prev) / span clipped to [0, 1]. */
static double mon_share(uint64_t now, uint64_t prev, uint64_t span)
{
    if (span == 0 || now <= prev)
        return 0;
    uint64_t d = now - prev;
    return d >= span ? 1.0 : (double)d / (double)span;
}

void mon_model_tick(struct mon_model *m, uint64_t wall_ns, bool whole_run)
{
    double dt = whole_run ? (double)m->now / 1e9 : (double)wall_ns / 1e9;
    uint64_t since = whole_run ? 0 : m->prev_now;
    if (whole_run) {
        m->prev_events = m->prev_gcs = m->prev_gc_ns = m->prev_alloc = 0;
        m->prev_user = m->prev_bytes = 0;
        memset(m->prev_class, 0, sizeof m->prev_class);
        memset(m->prev_sp, 0, sizeof m->prev_sp);
        for (unsigned i = 0; i < m->nccs; i++)
            m->ccs[i].prev_samples = 0;
        for (unsigned c = 0; c < m->ncaps; c++)
            m->caps[c].prev_run = m->caps[c].prev_gc = m->caps[c].prev_pause = 0;
    }
    m->interval_s = dt;
    double inv = dt > 0 ? 1.0 / dt : 0;
    m->rate_events = (double)(m->events - m->prev_events) * inv;
    for (int i = 0; i < MON_CLASS_N; i++) {
        m->rate_class[i] = (double)(m->by_class[i] - m->prev_class[i]) * inv;
        m->prev_class[i] = m->by_class[i];
    }
    m->rate_gcs = (double)(m->gcs - m->prev_gcs) * inv;
    m->rate_alloc = (double)(m->heap_alloc - m->prev_alloc) * inv;
    uint64_t user = m->user_messages + m->markers;
    m->rate_user = (double)(user - m->prev_user) * inv;
    m->rate_bytes = (double)(m->bytes - m->prev_bytes) * inv;

    /* Utilisation in event time: the share of [since, now] each
     * capability spent running or in GC.  See Note [Time in GC]. */
    uint64_t span = m->now > since ? m->now - since : 0;
    uint64_t sp[7] = { 0 }, pause = 0;
    unsigned caps = 0;
    for (unsigned c = 0; c < m->ncaps; c++) {
        struct mon_cap *cp = &m->caps[c];
        if (!cp->seen)
            continue;
        caps++;
        uint64_t run, gc;
        mon_cap_upto(cp, m->now, &run, &gc);
        cp->util = mon_share(run, cp->prev_run, span);
        cp->gc_frac = mon_share(gc, cp->prev_gc, span);
        cp->prev_run = run > cp->prev_run ? run : cp->prev_run;
        cp->prev_gc = gc > cp->prev_gc ? gc : cp->prev_gc;
        uint64_t p = cp->gc_pause_ns;
        if (cp->gc_start != 0 && m->now > cp->gc_start)
            p += m->now - cp->gc_start;
        uint64_t d = p > cp->prev_pause ? p - cp->prev_pause : 0;
        pause += d < span ? d : span;
        cp->prev_pause = p > cp->prev_pause ? p : cp->prev_pause;
        for (int k = 0; k < 7; k++)
            sp[k] += cp->sp[k];
    }
    m->gc_caps = caps;
    m->gc_frac = span && caps ? (double)pause / ((double)span * caps) : 0;
    for (int k = 0; k < 7; k++) {
        m->rate_sp[k] = k == SP_REMAINING ? (double)sp[k]
                        : (double)(sp[k] >= m->prev_sp[k] ? sp[k] - m->prev_sp[k] : 0) * inv;
        m->prev_sp[k] = sp[k];
    }

    /* Top cost centres of the interval. */
    m->ntop = 0;
    for (uint32_t i = 0; i < m->nccs; i++) {
        uint64_t n = m->ccs[i].samples - m->ccs[i].prev_samples;
        m->ccs[i].prev_samples = m->ccs[i].samples;
        if (n == 0)
            continue;
        unsigned pos = m->ntop < 10 ? m->ntop++ : 10;
        while (pos > 0 && m->top[pos - 1].n < n) {
            if (pos < 10)
                m->top[pos] = m->top[pos - 1];
            pos--;
        }
        if (pos < 10)
            m->top[pos] = (struct mon_text_topcc){ i, n };
    }

    m->prev_now = m->now;
    m->prev_events = m->events;
    m->prev_gcs = m->gcs;
    m->prev_gc_ns = m->gc_ns;
    m->prev_alloc = m->heap_alloc;
    m->prev_user = user;
    m->prev_bytes = m->bytes;
}

void mon_model_summary(const struct mon_model *m, struct mon_summary *out)
{
    *out = (struct mon_summary){
        .now_ns = m->now, .bytes = m->bytes, .events = m->events,
        .gcs = m->gcs, .threads_created = m->threads_created,
        .threads_alive = m->threads_used, .user_messages = m->user_messages,
        .markers = m->markers, .streams = m->streams, .caps = m->ncaps,
        .ended = m->ended, .probes = m->probes,
        .threads_untracked = m->threads_untracked,
        .ccs_refused = m->ccs_refused, .strings_cut = m->strings_cut,
        .memory = mon_model_memory(m),
    };
}
