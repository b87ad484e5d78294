/*
 * fuzz_framer.c: libFuzzer target for the stream framer and the unit
 * classifier (lib/format/evformat.c), the code that reads eventlog bytes from
 * outside: `eventlog-sink recv` runs every byte it receives through the
 * framer, and the writer classifies every unit the RTS hands it.
 *
 * Input: byte 0 says how many split sizes follow (0 to 7), each one byte
 * (a piece of 1 to 256 bytes); the rest is the stream.  The stream is fed
 * three ways, each into its own framer: in one call, in pieces of the
 * chosen sizes (cycling), and one byte at a time (for streams up to 16 KiB).
 * Every piece is copied into an exactly sized heap block of its own, so a
 * read past the end of a piece is an AddressSanitizer report, not a silent
 * read of the next bytes.  Properties: the three framers end in the same state
 * with the same counters and the same message (the framer promises that
 * where the pieces fall does not matter); without an error the offset is
 * the number of bytes fed; once in error every later call fails and
 * nothing changes; after DATA_END one more byte is an error; the message
 * is one printable line.  elsi_unit_classify() is checked against the
 * definitions in evformat.h on the whole stream and on every piece.  The
 * framer's verdict on real streams (is it what ghc-events accepts?) is the
 * unit and end-to-end tests' job, not this target's.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eventlog-sink.h"
#include "format/evformat.h"
#include "fuzz.h"

/* Byte-at-a-time feeding costs one call per byte: bounded. */
#define FUZZ_FRAMER_BYTEWISE_MAX (16u * 1024)

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t *fuzz_framer_one;

/* elsi_framer_init() fills a 65536-entry table, which under the fuzzer's
 * comparison tracing costs more than framing a whole eventlog.  So it
 * runs once, here, and each input's framers start as copies of that
 * freshly initialised framer with their own copy of its table (the
 * framer keeps no other pointer).  Their tables are kept for the next
 * input rather than given to elsi_framer_destroy(). */
#define FUZZ_FRAMER_TYPES 65536u
static struct elsi_framer fuzz_framer_pristine;
static int32_t *fuzz_framer_tables[3];

static void fuzz_framer_start(struct elsi_framer *f, unsigned k)
{
    *f = fuzz_framer_pristine;
    f->sizes = fuzz_framer_tables[k];
    memcpy(f->sizes, fuzz_framer_pristine.sizes,
           FUZZ_FRAMER_TYPES * sizeof f->sizes[0]);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);
    fuzz_framer_one = fuzz_alloc(1);
    FUZZ_CHECK(elsi_framer_init(&fuzz_framer_pristine) == 0, "init");
    for (unsigned k = 0; k < 3; k++)
        fuzz_framer_tables[k] =
            fuzz_alloc(FUZZ_FRAMER_TYPES * sizeof(int32_t));
    return 0;
}

static uint64_t fuzz_be(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* elsi_unit_classify() against evformat.h's definitions. */
static void fuzz_classify(const uint8_t *data, size_t len)
{
    uint8_t *unit = fuzz_bytes(data, len);
    struct elsi_unit_info info;
    memset(&info, 0xa5, sizeof info);
    elsi_unit_classify(unit, len, &info);

    enum elsi_unit_kind want = ELSI_UNIT_KIND_OTHER;
    if (len >= 4 && fuzz_be(unit, 4) == ELSI_EVENT_HEADER_BEGIN)
        want = ELSI_UNIT_KIND_HEADER;
    else if (len == 2 && fuzz_be(unit, 2) == ELSI_EVENT_DATA_END)
        want = ELSI_UNIT_KIND_END;
    else if (len >= ELSI_BLOCK_MARKER_BYTES &&
             fuzz_be(unit, 2) == ELSI_EVENT_BLOCK_MARKER)
        want = ELSI_UNIT_KIND_BLOCK;
    FUZZ_CHECK(info.kind == want, "kind %d, expected %d (len %zu)",
               (int)info.kind, (int)want, len);
    if (want == ELSI_UNIT_KIND_BLOCK) {
        FUZZ_CHECK(info.start_time == fuzz_be(unit + 2, 8), "start time");
        FUZZ_CHECK(info.end_time == fuzz_be(unit + 14, 8), "end time");
        FUZZ_CHECK(info.cap == fuzz_be(unit + 22, 2), "cap");
    } else {
        FUZZ_CHECK(info.cap == ELSI_CAP_GLOBAL && info.start_time == 0 &&
                   info.end_time == 0, "fields set for a non-block");
    }
    free(unit);
}

/* Feed one piece from its own heap block, checking the per-call rules. */
static int fuzz_feed(struct elsi_framer *f, const uint8_t *data, size_t len)
{
    bool was_error = f->state == ELSI_FRAMER_ERROR;
    bool was_ended = f->state == ELSI_FRAMER_ENDED;
    uint64_t before = f->offset;
    char old_error[sizeof f->error];
    memcpy(old_error, f->error, sizeof old_error);

    uint8_t *piece = fuzz_bytes(data, len);
    int rc = elsi_framer_feed(f, piece, len);
    free(piece);

    FUZZ_CHECK(rc == 0 || rc == ELS_EINVAL, "feed returned %d", rc);
    FUZZ_CHECK((rc == 0) == (f->state != ELSI_FRAMER_ERROR),
               "rc %d but state %d", rc, (int)f->state);
    if (was_error) {
        FUZZ_CHECK(rc == ELS_EINVAL, "accepted bytes after an error");
        FUZZ_CHECK(f->offset == before &&
                   memcmp(old_error, f->error, sizeof old_error) == 0,
                   "a failed framer changed");
    } else if (rc == 0) {
        FUZZ_CHECK(f->offset == before + len, "offset %llu after %llu + %zu",
                   (unsigned long long)f->offset,
                   (unsigned long long)before, len);
        FUZZ_CHECK(!was_ended || len == 0, "accepted bytes after DATA_END");
    } else {
        FUZZ_CHECK(f->offset <= before + len, "offset past the bytes fed");
        FUZZ_CHECK(fuzz_one_line(f->error, sizeof f->error) &&
                   strncmp(f->error, "offset ", 7) == 0,
                   "error message: \"%s\"", f->error);
    }
    FUZZ_CHECK(elsi_framer_complete(f) == (f->state == ELSI_FRAMER_ENDED),
               "complete() disagrees with the state");
    return rc;
}

static void fuzz_same(const struct elsi_framer *a, const struct elsi_framer *b,
                      const char *how)
{
    FUZZ_CHECK(a->state == b->state, "%s: state %d vs %d", how,
               (int)a->state, (int)b->state);
    FUZZ_CHECK(a->events == b->events && a->blocks == b->blocks &&
               a->event_types == b->event_types && a->offset == b->offset,
               "%s: counters differ (events %llu/%llu, blocks %llu/%llu, "
               "types %llu/%llu, offset %llu/%llu)", how,
               (unsigned long long)a->events, (unsigned long long)b->events,
               (unsigned long long)a->blocks, (unsigned long long)b->blocks,
               (unsigned long long)a->event_types,
               (unsigned long long)b->event_types,
               (unsigned long long)a->offset, (unsigned long long)b->offset);
    FUZZ_CHECK(a->state != ELSI_FRAMER_ERROR ||
               strcmp(a->error, b->error) == 0,
               "%s: \"%s\" vs \"%s\"", how, a->error, b->error);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_reader r = { data, size };
    size_t n_splits = fuzz_u8(&r) % 8;
    size_t splits[8];
    for (size_t i = 0; i < n_splits; i++)
        splits[i] = 1 + (size_t)fuzz_u8(&r);
    size_t len;
    const uint8_t *stream = fuzz_take(&r, r.left, &len);

    fuzz_classify(stream, len);
    elsi_unit_classify(NULL, len, &(struct elsi_unit_info){ 0 });

    /* Whole. */
    struct elsi_framer whole;
    fuzz_framer_start(&whole, 0);
    fuzz_feed(&whole, stream, len);
    fuzz_feed(&whole, stream, 0);

    /* In the chosen pieces, classifying each as if it were a unit. */
    struct elsi_framer pieces;
    fuzz_framer_start(&pieces, 1);
    size_t at = 0;
    for (size_t k = 0; at < len; k++) {
        size_t n = n_splits > 0 ? splits[k % n_splits] : len;
        if (n > len - at)
            n = len - at;
        fuzz_classify(stream + at, n);
        fuzz_feed(&pieces, stream + at, n);
        at += n;
    }
    fuzz_same(&whole, &pieces, "whole vs pieces");

    /* A byte at a time, through one reused 1-byte heap block (a fresh
     * block per byte costs more than the framer), with the cheap checks
     * only: the rest are the same for every call. */
    if (len <= FUZZ_FRAMER_BYTEWISE_MAX) {
        struct elsi_framer bytes;
        fuzz_framer_start(&bytes, 2);
        for (size_t i = 0; i < len; i++) {
            *fuzz_framer_one = stream[i];
            uint64_t before = bytes.offset;
            int rc = elsi_framer_feed(&bytes, fuzz_framer_one, 1);
            FUZZ_CHECK((rc == 0) == (bytes.state != ELSI_FRAMER_ERROR) &&
                       (rc != 0 || bytes.offset == before + 1),
                       "byte %zu: rc %d, state %d", i, rc, (int)bytes.state);
        }
        fuzz_same(&whole, &bytes, "whole vs bytewise");
    }

    /* Nothing may follow DATA_END. */
    if (whole.state == ELSI_FRAMER_ENDED) {
        static const uint8_t extra = 0;
        FUZZ_CHECK(fuzz_feed(&whole, &extra, 1) == ELS_EINVAL,
                   "a byte after DATA_END was accepted");
    }

    return 0;
}
