/*
 * fuzz_writer.c: libFuzzer target for the writer's handling of units
 * (lib/queue/, lib/writer/): what reaches a consumer when the units,
 * their sizes, their order, the sink's failures and its stalls are chosen by the
 * fuzzer.  Consumers' own input needs no target: the writer reads it only
 * to discard it (and to notice end of input), and parses none of it.
 *
 * Each input is a small program run against a fresh writer on a custom
 * callback sink ("fuzzw:"), which appends what it is given to a buffer.
 * Byte 0 picks the policy (drop, block:MS, or block when the program never
 * stalls the sink); then each op is one byte plus its operands:
 *   header; a well-formed block (capability, event count, padding to make
 *   it large enough to fill the 3M queue); a raw unit of fuzzer bytes;
 *   DATA_END; a flush; "the sink fails its next N writes"; "the sink
 *   stalls / resumes" (so the queue fills and the policy drops); a write
 *   with a reason code, valid or not.
 * Properties: every call returns what eventlog-sink.h documents for it;
 * accepted == sent + dropped + queued (units and bytes) after every call;
 * the sink gets the header chunk first; and when the program wrote only
 * well-formed units in a well-formed order (header first, DATA_END last,
 * no raw unit), the bytes the sink received are a well-formed eventlog
 * (checked with the parser) despite drops, failures and in-band loss
 * notes, and complete when DATA_END was written while the sink was not
 * stalled.  The sink fails only blocks (the fuzzer's and the in-band
 * notes), never the header or DATA_END: a stream whose header or end
 * could not be delivered cannot be well formed, and says nothing about
 * the writer.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eventlog-sink.h"
#include "eventlog-sink/parse.h"
#include "format/evformat.h"
#include "fuzz.h"
#include "../tests/evgen.h"

#define FUZZW_MAX_OPS 48
/* Padding of a block: up to 255 * 8 KiB, so two or three big blocks fill
 * the 3M queue. */
#define FUZZW_PAD_UNIT (8u * 1024)

enum fuzzw_op_kind {
    FUZZW_HEADER = 0,
    FUZZW_BLOCK,
    FUZZW_RAW,
    FUZZW_END,
    FUZZW_FLUSH,
    FUZZW_FAIL,
    FUZZW_STALL,
    FUZZW_REASON,
    FUZZW__KINDS
};

struct fuzzw_op {
    enum fuzzw_op_kind kind;
    uint16_t cap;
    unsigned count;         /* events, fail count, reason */
    size_t pad;
    const uint8_t *raw;
    size_t raw_len;
};

/* The sink's side, written by the writer thread, read by the fuzzer
 * thread after els_writer_close(). */
static pthread_mutex_t fuzzw_lock = PTHREAD_MUTEX_INITIALIZER;
static struct evgen_buf fuzzw_got;
static bool fuzzw_header_first_seen;
static atomic_uint fuzzw_fail_next;
static atomic_bool fuzzw_stalled;

static int fuzzw_open(void **sink, const struct els_sink_args *args)
{
    (void)args;
    *sink = &fuzzw_got;
    return 0;
}

static void fuzzw_close(void *sink)
{
    (void)sink;
}

static int fuzzw_write(void *sink, const void *buf, size_t len)
{
    (void)sink;
    struct elsi_unit_info info;
    elsi_unit_classify(buf, len, &info);
    while (atomic_load(&fuzzw_stalled)) {
        struct timespec ts = { 0, 200 * 1000 };
        nanosleep(&ts, NULL);
    }
    if (info.kind == ELSI_UNIT_KIND_BLOCK) {
        unsigned f = atomic_load(&fuzzw_fail_next);
        while (f > 0 && !atomic_compare_exchange_weak(&fuzzw_fail_next, &f,
                                                      f - 1)) {
        }
        if (f > 0)
            return -EIO;
    }
    pthread_mutex_lock(&fuzzw_lock);
    if (fuzzw_got.len == 0)
        fuzzw_header_first_seen = info.kind == ELSI_UNIT_KIND_HEADER;
    evgen_put(&fuzzw_got, buf, len);
    pthread_mutex_unlock(&fuzzw_lock);
    return 0;
}

static const struct els_sink_ops fuzzw_sink = {
    .struct_size = sizeof(struct els_sink_ops),
    .scheme = "fuzzw",
    .style = ELS_SINK_CALLBACK,
    .open = fuzzw_open,
    .close = fuzzw_close,
    .write = fuzzw_write,
};

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* FUZZ_WRITER_DEBUG=FILE: show the library's messages (DEBUG and up) on
 * stderr and write what the sink received to FILE, to study a reproducer
 * with ghc-events or the receiver. */
static const char *fuzzw_debug_out;

static void fuzzw_log(void *user, enum els_log_level level, const char *msg)
{
    (void)user;
    fprintf(stderr, "fuzz_writer: log %d: %s\n", (int)level, msg);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzzw_debug_out = getenv("FUZZ_WRITER_DEBUG");
    if (fuzzw_debug_out != NULL)
        els_set_log_hook(fuzzw_log, NULL, ELS_LOG_DEBUG);
    else
        els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);
    int rc = els_sink_register(&fuzzw_sink);
    FUZZ_CHECK(rc == 0, "els_sink_register: %d", rc);
    (void)evgen_block;
    return 0;
}

static void fuzzw_check_stats(struct els_writer *w)
{
    struct els_stats s;
    FUZZ_CHECK(els_writer_stats(w, &s) == 0, "els_writer_stats");
    uint64_t units = s.units_sent + s.units_queued;
    uint64_t bytes = s.bytes_sent + s.bytes_queued;
    for (int i = 0; i < ELS_DROP__COUNT; i++) {
        units += s.units_dropped[i];
        bytes += s.bytes_dropped[i];
    }
    FUZZ_CHECK(units == s.units_accepted && bytes == s.bytes_accepted,
               "accepted %llu units / %llu bytes, accounted %llu / %llu",
               (unsigned long long)s.units_accepted,
               (unsigned long long)s.bytes_accepted,
               (unsigned long long)units, (unsigned long long)bytes);
}

/* A block of cap with n user messages, padded to pad bytes or more. */
static struct evgen_buf fuzzw_block(uint16_t cap, uint64_t t0, unsigned n,
                                    size_t pad)
{
    return evgen_block(cap, t0, n, "fuzz", pad);
}

static size_t fuzzw_parse(struct fuzz_reader *r, struct fuzzw_op *ops)
{
    size_t n = 0;
    while (r->left > 0 && n < FUZZW_MAX_OPS) {
        struct fuzzw_op *op = &ops[n++];
        memset(op, 0, sizeof *op);
        op->kind = (enum fuzzw_op_kind)(fuzz_u8(r) % FUZZW__KINDS);
        switch (op->kind) {
        case FUZZW_BLOCK: {
            uint8_t c = fuzz_u8(r);
            /* Mostly small capabilities; sometimes the global buffer or
             * one past the per-capability counters. */
            op->cap = c == 0xff ? ELSI_CAP_GLOBAL : c == 0xfe ? 200 : c % 4;
            op->count = fuzz_u8(r) % 32;
            op->pad = (size_t)fuzz_u8(r) * FUZZW_PAD_UNIT;
            break;
        }
        case FUZZW_RAW:
            op->raw = fuzz_take(r, fuzz_u8(r), &op->raw_len);
            break;
        case FUZZW_FAIL:
            op->count = fuzz_u8(r) % 4;
            break;
        case FUZZW_REASON:
            op->count = fuzz_u8(r) % (ELS_REASON__COUNT + 1);
            op->cap = fuzz_u8(r) % 4;
            break;
        default:
            break;
        }
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_reader r = { data, size };
    uint8_t config = fuzz_u8(&r);
    struct fuzzw_op ops[FUZZW_MAX_OPS];
    size_t n_ops = fuzzw_parse(&r, ops);

    bool stalls = false;
    for (size_t i = 0; i < n_ops; i++)
        stalls |= ops[i].kind == FUZZW_STALL;
    const char *policy;
    switch (config % 3) {
    case 0: policy = "drop"; break;
    case 1: policy = "block:5"; break;
    default: policy = stalls ? "block:20" : "block"; break;
    }
    char spec[128];
    snprintf(spec, sizeof spec, "fuzzw:x?buffer=3M&policy=%s&linger=%s",
             policy, stalls ? "0.5" : "2");

    pthread_mutex_lock(&fuzzw_lock);
    free(fuzzw_got.p);
    memset(&fuzzw_got, 0, sizeof fuzzw_got);
    fuzzw_header_first_seen = false;
    pthread_mutex_unlock(&fuzzw_lock);
    atomic_store(&fuzzw_fail_next, 0);
    atomic_store(&fuzzw_stalled, false);

    struct els_writer *w = NULL;
    char err[256];
    int rc = els_writer_open(spec, &w, err, sizeof err);
    FUZZ_CHECK(rc == 0, "els_writer_open(%s): %s", spec, err);

    /* Well-formed program: header first, nothing after DATA_END, no raw
     * units, no second header, at most one DATA_END. */
    bool well_formed = n_ops > 0 && ops[0].kind == FUZZW_HEADER;
    bool header = false, ended = false, end_while_stalled = false;
    uint64_t t = 1000;
    for (size_t i = 0; i < n_ops; i++) {
        const struct fuzzw_op *op = &ops[i];
        switch (op->kind) {
        case FUZZW_HEADER: {
            struct evgen_buf h = evgen_header();
            rc = els_writer_write_reason(w, h.p, h.len, ELS_REASON_START);
            FUZZ_CHECK(rc == (header ? 1 : 0), "header write: %d", rc);
            if (header || ended)
                well_formed = false;
            header = true;
            free(h.p);
            break;
        }
        case FUZZW_BLOCK: {
            struct evgen_buf b = fuzzw_block(op->cap, t, op->count, op->pad);
            t += op->count + 1;
            rc = els_writer_write(w, b.p, b.len);
            FUZZ_CHECK(rc == 0 || rc == 1, "block write: %d", rc);
            if (ended)
                well_formed = false;
            free(b.p);
            break;
        }
        case FUZZW_RAW: {
            uint8_t *u = fuzz_bytes(op->raw, op->raw_len);
            rc = els_writer_write(w, u, op->raw_len);
            if (op->raw_len == 0)
                FUZZ_CHECK(rc == ELS_EINVAL, "empty unit: %d", rc);
            else
                FUZZ_CHECK(rc == 0 || rc == 1, "raw write: %d", rc);
            well_formed = false;
            free(u);
            break;
        }
        case FUZZW_END:
            rc = els_writer_write_reason(w, evgen_data_end, 2,
                                         ELS_REASON_STOP);
            FUZZ_CHECK(rc == 0 || rc == 1, "DATA_END write: %d", rc);
            if (ended)
                well_formed = false;
            ended = true;
            end_while_stalled = atomic_load(&fuzzw_stalled);
            break;
        case FUZZW_FLUSH:
            FUZZ_CHECK(els_writer_flush(w) == 0, "flush");
            break;
        case FUZZW_FAIL:
            atomic_store(&fuzzw_fail_next, op->count);
            break;
        case FUZZW_STALL:
            atomic_store(&fuzzw_stalled, !atomic_load(&fuzzw_stalled));
            break;
        case FUZZW_REASON: {
            struct evgen_buf b = fuzzw_block(op->cap, t, 1, 0);
            t += 2;
            rc = els_writer_write_reason(w, b.p, b.len,
                                         (enum els_write_reason)op->count);
            if (op->count >= ELS_REASON__COUNT)
                FUZZ_CHECK(rc == ELS_EINVAL, "bad reason %u: %d", op->count,
                           rc);
            else
                FUZZ_CHECK(rc == 0 || rc == 1, "reason write: %d", rc);
            if (ended)
                well_formed = false;
            free(b.p);
            break;
        }
        case FUZZW__KINDS:
            break;
        }
        fuzzw_check_stats(w);
        struct els_cap_stats cs;
        FUZZ_CHECK(els_writer_cap_stats(w, ELS_MAX_CAPS, &cs) == ELS_EINVAL,
                   "cap_stats past ELS_MAX_CAPS");
        FUZZ_CHECK(els_writer_cap_stats(w, 0, &cs) == 0, "cap_stats(0)");
    }
    atomic_store(&fuzzw_stalled, false);
    FUZZ_CHECK(els_writer_close(w) == 0, "els_writer_close");

    pthread_mutex_lock(&fuzzw_lock);
    if (fuzzw_debug_out != NULL) {
        FILE *out = fopen(fuzzw_debug_out, "wb");
        if (out != NULL) {
            fwrite(fuzzw_got.p, 1, fuzzw_got.len, out);
            fclose(out);
        }
        fprintf(stderr, "fuzz_writer: %s, %zu ops, the sink got %zu bytes "
                "(in %s)\n", spec, n_ops, fuzzw_got.len, fuzzw_debug_out);
    }
    if (header && fuzzw_got.len > 0)
        FUZZ_CHECK(fuzzw_header_first_seen,
                   "the sink's first unit was not the header");
    if (well_formed) {
        struct els_parser *p;
        struct els_parse_status st;
        FUZZ_CHECK(els_parser_new(&p, NULL, NULL, 0) == 0, "parser");
        rc = els_parser_feed(p, fuzzw_got.p, fuzzw_got.len, NULL);
        els_parser_status(p, &st);
        FUZZ_CHECK(rc == 0, "the sink got a malformed stream (%zu bytes, "
                   "policy %s): %s", fuzzw_got.len, policy, st.error);
        /* DATA_END waits for room (up to linger) whatever the policy, so
         * it arrives unless the sink was stalled when it was written. */
        if (ended && !end_while_stalled)
            FUZZ_CHECK(st.where == ELS_PARSE_ENDED,
                       "DATA_END was written but the stream is incomplete");
        els_parser_free(p);
    }
    pthread_mutex_unlock(&fuzzw_lock);
    return 0;
}
