/*
 * model_tables.c: the monitor model's keyed tables and its bounds: the
 * tables keyed by thread id (the threads alive and the threads stopped;
 * open addressing under a per-process SipHash key), the cost-centre table (indexed by id, capped, names cut and charged), and
 * mon_model_memory() with the most it can ever be.  The stream chooses
 * every key and string kept here, so Note [Stream-chosen keys] lives
 * here.  Not its job: reading events (model.c decides which thread or
 * cost centre an event names and what happens to it), time and
 * timelines (model_time.c), or rendering (render*.c).
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "model_impl.h"

/* ------------------------------------------------------------------------
 * Threads
 * ------------------------------------------------------------------------ */

/* Note [Stream-chosen keys]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Thread ids, cost-centre ids and every string come from the stream, and
 * whoever can reach the socket top or serve reads chooses them.  So:
 *
 *  - The thread tables hash ids with SipHash-1-3 under a key drawn from
 *    getrandom() once per process.  With a fixed hash (it was id *
 *    2654435761) ids can be chosen to land in one cluster: 120,000
 *    thread creations took 20 s instead of 0.1 s, in serve's only loop.
 *    Without the key an attacker cannot aim, so probes per lookup stay
 *    what random ids give.  (m->threads.probes counts them for the tests.)
 *  - Every table has a cap and every stored string a length limit:
 *    threads alive MON_THREADS_MAX slots, threads stopped
 *    MON_STOPPED_MAX, runs and stops waiting for their turn MON_REORDER (in
 *    MON_TEV_CHUNKS chunks), cost centres ids below
 *    MON_CCS_MAX, their names MON_CC_NAME bytes each and
 *    MON_CC_TEXT_MAX bytes in all, a heap census MON_BANDS bands (the
 *    largest) of MON_TEXT bytes or MON_STACK frames.  What does not
 *    fit is counted (threads_untracked, stops_untracked, tevs_early,
 *    ccs_refused, strings_cut, a census's bands_all), shown by the
 *    views, never silently lost.  mon_model_memory() adds up what the
 *    model holds; mon_model_memory_max() bounds it.
 *  - Work per event is bounded: no event walks a table (a census band
 *    replaces the smallest of MON_BANDS; a run or a stop costs an
 *    append to its capability's queue, moved at most MON_TEV_BACK places
 *    back, and a look at each capability: Note [Waiting queues]).
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

void mon_key_init(void)
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

/* Note [Hash memo]
 * ~~~~~~~~~~~~~~~~
 * A run and a stop look their thread up three times (alive, stopped,
 * its stop gone), and SipHash was a fifth of the model's time on a
 * 300-thread file.  A program's threads are few and their ids close, so
 * each thread remembers the hashes of the last ids seen, direct-mapped
 * by their low bits: ids the stream chooses only make it miss, which
 * costs what no memo did.  Per thread, as the key is per process. */
#define MON_HASH_MEMO 4096
static _Thread_local struct { uint32_t id, hash; } mon_hash_memo[MON_HASH_MEMO];

static uint32_t mon_hash(uint32_t id)
{
    unsigned i = id & (MON_HASH_MEMO - 1);
    if (mon_hash_memo[i].id == id && id != 0)
        return mon_hash_memo[i].hash;
    uint32_t h = (uint32_t)mon_siphash13(mon_key, id);
    mon_hash_memo[i].id = id;
    mon_hash_memo[i].hash = h;
    return h;
}

static struct mon_thread *mon_tid_find(struct mon_model *m,
                                       const struct mon_tids *tab, uint32_t id)
{
    if (tab->slots == NULL || id == 0)
        return NULL;
    uint32_t mask = tab->cap - 1;
    for (uint32_t i = mon_hash(id) & mask;; i = (i + 1) & mask) {
        m->threads.probes++;
        if (tab->slots[i].id == id)
            return &tab->slots[i];
        if (tab->slots[i].id == 0)
            return NULL;
    }
}

static bool mon_tid_grow(struct mon_model *m, struct mon_tids *tab)
{
    uint32_t ncap = tab->cap ? tab->cap * 2 : 1024;
    if (ncap > tab->max)
        return false;
    struct mon_thread *t = calloc(ncap, sizeof *t);
    uint64_t *times = tab->timed ? calloc(ncap, sizeof *times) : NULL;
    if (t == NULL || (tab->timed && times == NULL)) {
        free(t);
        free(times);
        return false;
    }
    for (uint32_t j = 0; j < tab->cap; j++) {
        if (tab->slots[j].id == 0)
            continue;
        uint32_t i = mon_hash(tab->slots[j].id) & (ncap - 1);
        while (m->threads.probes++, t[i].id != 0)
            i = (i + 1) & (ncap - 1);
        t[i] = tab->slots[j];
        if (times != NULL)
            times[i] = tab->times[j];
    }
    m->mem += ((size_t)ncap - tab->cap) * (sizeof *t + (tab->timed ? sizeof *times : 0));
    free(tab->slots);
    free(tab->times);
    tab->slots = t;
    tab->times = times;
    tab->cap = ncap;
    return true;
}

struct mon_thread *mon_tid_get(struct mon_model *m, struct mon_tids *tab,
                               uint32_t id, bool create)
{
    if (id == 0)
        return NULL;
    struct mon_thread *t = mon_tid_find(m, tab, id);
    if (t != NULL || !create)
        return t;
    if ((tab->used + 1) * 4 > tab->cap * 3 && !mon_tid_grow(m, tab))
        return NULL;
    uint32_t mask = tab->cap - 1, i = mon_hash(id) & mask;
    while (m->threads.probes++, tab->slots[i].id != 0)
        i = (i + 1) & mask;
    tab->slots[i] = (struct mon_thread){ .id = id };
    if (tab->timed)
        tab->times[i] = 0;
    tab->used++;
    return &tab->slots[i];
}

void mon_tid_del(struct mon_model *m, struct mon_tids *tab, uint32_t id)
{
    struct mon_thread *t = mon_tid_find(m, tab, id);
    if (t == NULL)
        return;
    uint32_t mask = tab->cap - 1, i = (uint32_t)(t - tab->slots);
    tab->slots[i].id = 0;
    tab->used--;
    /* Backward shift: move later entries of the cluster into the hole
     * when their home slot is not between the hole and them. */
    for (uint32_t j = (i + 1) & mask; tab->slots[j].id != 0; j = (j + 1) & mask) {
        m->threads.probes++;
        uint32_t home = mon_hash(tab->slots[j].id) & mask;
        bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
        if (!stays) {
            tab->slots[i] = tab->slots[j];
            if (tab->timed)
                tab->times[i] = tab->times[j];
            tab->slots[j].id = 0;
            i = j;
        }
    }
}

void mon_tids_init(struct mon_model *m)
{
    m->threads.alive.max = MON_THREADS_MAX;
    m->stops.stopped.max = MON_STOPPED_MAX;
    m->stops.stopped.timed = true;
}

void mon_thread_set(struct mon_model *m, uint32_t id, uint8_t state)
{
    if (id == 0)
        return;
    struct mon_thread *t = mon_tid_get(m, &m->threads.alive, id, true);
    if (t == NULL) {
        m->threads.untracked++;
        return;
    }
    t->state = state;
}

void mon_thread_del(struct mon_model *m, uint32_t id)
{
    mon_tid_del(m, &m->threads.alive, id);
}

void mon_thread_counts(const struct mon_model *m, uint64_t *runnable,
                       uint64_t *running, uint64_t *blocked)
{
    *runnable = *running = *blocked = 0;
    for (uint32_t i = 0; i < m->threads.alive.cap; i++) {
        if (m->threads.alive.slots[i].id == 0)
            continue;
        switch (m->threads.alive.slots[i].state) {
        case TH_RUNNABLE: (*runnable)++; break;
        case TH_RUNNING: (*running)++; break;
        default: (*blocked)++; break;
        }
    }
}

/* ------------------------------------------------------------------------
 * Cost centres
 * ------------------------------------------------------------------------ */

struct mon_cc *mon_cc(struct mon_model *m, uint32_t id, bool create)
{
    if (id >= MON_CCS_MAX) {
        if (create)
            m->prof.ccs_refused++;
        return NULL;
    }
    if (id >= m->prof.nccs) {
        if (!create)
            return NULL;
        uint32_t n = m->prof.nccs ? m->prof.nccs : 256;
        while (n <= id)
            n *= 2;
        struct mon_cc *c = realloc(m->prof.ccs, n * sizeof *c);
        if (c == NULL)
            return NULL;
        memset(c + m->prof.nccs, 0, (n - m->prof.nccs) * sizeof *c);
        m->mem += (size_t)(n - m->prof.nccs) * sizeof *c;
        m->prof.ccs = c;
        m->prof.nccs = n;
    }
    return &m->prof.ccs[id];
}

/* A copy of a cost centre's name, cut to MON_CC_NAME bytes (counted in
 * strings_cut); NULL when out of memory. */
static char *mon_cc_strdup(struct mon_model *m, struct els_str s)
{
    size_t n = s.len;
    if (n > MON_CC_NAME) {
        n = MON_CC_NAME;
        m->prof.strings_cut++;
    }
    char *d = malloc(n + 1);
    if (d != NULL) {
        memcpy(d, s.ptr, n);
        d[n] = '\0';
        m->prof.cc_text += MON_CC_CHARGE(n);
        m->mem += MON_CC_CHARGE(n);
    }
    return d;
}

static void mon_cc_strfree(struct mon_model *m, char **s)
{
    if (*s == NULL)
        return;
    size_t n = MON_CC_CHARGE(strlen(*s));
    m->prof.cc_text -= n;
    m->mem -= n;
    free(*s);
    *s = NULL;
}

/* Which of the RTS's own cost centres (rts/Profiling.c's CC_DECLAREs
 * that ignoreCCS() leaves out of the report) label and module name. */
static uint8_t mon_cc_builtin(struct els_str label, struct els_str module)
{
    static const struct { const char *label, *module; uint8_t kind; } rts[] = {
        { "GC", "GC", MON_CC_GC }, { "IDLE", "IDLE", MON_CC_IDLE },
        { "SYSTEM", "SYSTEM", MON_CC_SYSTEM },
        { "OVERHEAD_of", "PROFILING", MON_CC_OVERHEAD },
        { "DONT_CARE", "MAIN", MON_CC_DONT_CARE },
    };
    for (size_t i = 0; i < sizeof rts / sizeof rts[0]; i++)
        if (label.len == strlen(rts[i].label) && module.len == strlen(rts[i].module)
            && memcmp(label.ptr, rts[i].label, label.len) == 0
            && memcmp(module.ptr, rts[i].module, module.len) == 0)
            return rts[i].kind;
    return MON_CC_PROGRAM;
}

void mon_cc_set_names(struct mon_model *m, struct mon_cc *c,
                      struct els_str label, struct els_str module)
{
    c->builtin = mon_cc_builtin(label, module);
    mon_cc_strfree(m, &c->label);
    mon_cc_strfree(m, &c->module);
    size_t need = MON_CC_CHARGE(label.len < MON_CC_NAME ? label.len : MON_CC_NAME)
                + MON_CC_CHARGE(module.len < MON_CC_NAME ? module.len : MON_CC_NAME);
    if (m->prof.cc_text + need > MON_CC_TEXT_MAX) {
        m->prof.ccs_refused++;   /* shown as "?" */
        return;
    }
    c->label = mon_cc_strdup(m, label);
    c->module = mon_cc_strdup(m, module);
}

/* ------------------------------------------------------------------------
 * Bounds
 * ------------------------------------------------------------------------ */

size_t mon_model_memory(const struct mon_model *m)
{
    return sizeof *m + MON_BINS * sizeof *m->tl.gbins + m->mem;
}

size_t mon_model_memory_max(void)
{
    return sizeof(struct mon_model) + MON_BINS * sizeof(struct mon_gbin)
         + (size_t)MON_MAX_CAPS * MON_BINS * sizeof(struct mon_bin)
         + (size_t)MON_THREADS_MAX * sizeof(struct mon_thread)
         + (size_t)MON_STOPPED_MAX * (sizeof(struct mon_thread) + sizeof(uint64_t))
         + (size_t)MON_TEV_CHUNKS * sizeof(struct mon_tevchunk)
         + (size_t)MON_CCS_MAX * sizeof(struct mon_cc) + MON_CC_TEXT_MAX
         + (size_t)MON_SAMPLES * sizeof(struct mon_sample);
}
