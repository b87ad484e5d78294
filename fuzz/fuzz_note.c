/*
 * fuzz_note.c: libFuzzer target for the in-band note encoder
 * (elsi_note_encode() in lib/format/evformat.c), the one place the library writes
 * eventlog bytes of its own into a consumer's stream.  A note carries text
 * that can come from outside (a spec quoted in a loss message), so every
 * message must give a block that any reader parses.
 *
 * Input: 8 bytes of timestamp, one byte of flags, one byte of split point,
 * then the message (up to its first NUL, as for a C string).  Flag bit 0
 * repeats the message to a length near the 16-bit event-size limit
 * (65535 bytes, plus or minus a few chosen by the next byte) so that the
 * cut is exercised.  Properties: the encoder writes exactly
 * elsi_note_size() bytes and refuses a buffer one byte shorter (writing
 * nothing); the block classifies as a global block with the timestamp as
 * start and end; its size field is its length; the message inside is the
 * given one, cut at 65535 bytes; and the note, between a minimal valid
 * header (tests/evgen.h) and DATA_END, fed to the parser in two pieces
 * split where the input says, makes a complete stream with one block and
 * one event whose text is the message.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eventlog-sink.h"
#include "eventlog-sink/parse.h"
#include "format/evformat.h"
#include "fuzz.h"
#include "../tests/evgen.h"

#define FUZZ_NOTE_MSG_MAX 0xffffu

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct evgen_buf fuzz_note_header;

/* One parser, reset for each input; the message it last delivered. */
static struct els_parser *fuzz_note_parser;
static struct els_str fuzz_note_seen;
static char *fuzz_note_copy;

static int fuzz_note_on_event(void *user, const struct els_event *ev)
{
    (void)user;
    struct els_event_data d;
    if (ev->tag == ELS_EV_LOG_MSG && els_event_decode(ev, &d) == 0) {
        /* The payload lives only during the callback. */
        memcpy(fuzz_note_copy, d.u.text.ptr, d.u.text.len);
        fuzz_note_seen.ptr = fuzz_note_copy;
        fuzz_note_seen.len = d.u.text.len;
    }
    return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);
    fuzz_note_header = evgen_header();
    static const struct els_parse_callbacks cb = {
        .struct_size = sizeof(struct els_parse_callbacks),
        .on_event = fuzz_note_on_event
    };
    FUZZ_CHECK(els_parser_new(&fuzz_note_parser, &cb, NULL, 0) == 0,
               "parser");
    fuzz_note_copy = fuzz_alloc(FUZZ_NOTE_MSG_MAX);
    (void)evgen_block;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_reader r = { data, size };
    uint64_t ts = (uint64_t)fuzz_u16(&r) << 48 | (uint64_t)fuzz_u16(&r) << 32 |
                  (uint64_t)fuzz_u16(&r) << 16 | fuzz_u16(&r);
    uint8_t flags = fuzz_u8(&r);
    uint8_t split = fuzz_u8(&r);
    uint8_t around = fuzz_u8(&r);
    size_t got;
    const uint8_t *rest = fuzz_take(&r, r.left, &got);
    char *text = fuzz_cstring(rest, got);
    size_t text_len = strlen(text);

    char *msg = text;
    size_t msg_len = text_len;
    if ((flags & 1) && text_len > 0) {
        /* Near the limit: 65535 - 8 .. 65535 + 7 bytes. */
        msg_len = FUZZ_NOTE_MSG_MAX - 8 + around % 16;
        msg = fuzz_alloc(msg_len + 1);
        for (size_t i = 0; i < msg_len; i++)
            msg[i] = text[i % text_len];
        msg[msg_len] = '\0';
    }
    size_t kept = msg_len < FUZZ_NOTE_MSG_MAX ? msg_len : FUZZ_NOTE_MSG_MAX;

    size_t need = elsi_note_size(msg_len);
    FUZZ_CHECK(need == ELSI_BLOCK_MARKER_BYTES + 12 + kept,
               "elsi_note_size(%zu) = %zu", msg_len, need);

    /* One byte short: refused, and nothing written. */
    uint8_t *small = fuzz_alloc(need - 1);
    memset(small, 0x5a, need - 1);
    FUZZ_CHECK(elsi_note_encode(small, need - 1, ts, msg) == 0,
               "encoded into a buffer one byte short");
    for (size_t i = 0; i < need - 1; i++)
        FUZZ_CHECK(small[i] == 0x5a, "wrote into a buffer it refused");
    free(small);
    FUZZ_CHECK(elsi_note_encode(NULL, need, ts, msg) == 0, "NULL buffer");

    /* Exactly sized: any write past it is an ASan report. */
    uint8_t *note = fuzz_alloc(need);
    size_t n = elsi_note_encode(note, need, ts, msg);
    FUZZ_CHECK(n == need, "encoded %zu bytes, elsi_note_size says %zu", n,
               need);

    struct elsi_unit_info info;
    elsi_unit_classify(note, n, &info);
    FUZZ_CHECK(info.kind == ELSI_UNIT_KIND_BLOCK && info.cap == ELSI_CAP_GLOBAL
               && info.start_time == ts && info.end_time == ts,
               "classified as kind %d cap %u", (int)info.kind,
               (unsigned)info.cap);
    FUZZ_CHECK(fuzz_be(note + 10, 4) == n, "block size field %llu for "
               "%zu bytes", (unsigned long long)fuzz_be(note + 10, 4), n);
    const uint8_t *ev = note + ELSI_BLOCK_MARKER_BYTES;
    FUZZ_CHECK(fuzz_be(ev, 2) == ELSI_EVENT_LOG_MSG, "event type");
    FUZZ_CHECK(fuzz_be(ev + 2, 8) == ts, "event timestamp");
    FUZZ_CHECK(fuzz_be(ev + 10, 2) == kept, "payload size %llu, "
               "expected %zu", (unsigned long long)fuzz_be(ev + 10, 2),
               kept);
    FUZZ_CHECK(memcmp(ev + 12, msg, kept) == 0, "message bytes differ");

    /* Header + note + DATA_END is a complete stream, however split. */
    size_t stream_len = fuzz_note_header.len + n + 2;
    uint8_t *stream = fuzz_alloc(stream_len);
    memcpy(stream, fuzz_note_header.p, fuzz_note_header.len);
    memcpy(stream + fuzz_note_header.len, note, n);
    memcpy(stream + fuzz_note_header.len + n, evgen_data_end, 2);
    size_t cut = (size_t)split * stream_len / 256;
    struct els_parser *p = fuzz_note_parser;
    struct els_parse_status st;
    els_parser_reset(p);
    fuzz_note_seen.len = 0;
    uint8_t *a = fuzz_bytes(stream, cut);
    uint8_t *b = fuzz_bytes(stream + cut, stream_len - cut);
    int rc = els_parser_feed(p, a, cut, NULL);
    if (rc == 0)
        rc = els_parser_feed(p, b, stream_len - cut, NULL);
    els_parser_status(p, &st);
    FUZZ_CHECK(rc == 0, "parser refused the note: %s", st.error);
    FUZZ_CHECK(st.where == ELS_PARSE_ENDED && st.blocks == 1 && st.events == 1,
               "where %s, blocks %llu, events %llu",
               els_parse_where_name(st.where), (unsigned long long)st.blocks,
               (unsigned long long)st.events);
    FUZZ_CHECK(fuzz_note_seen.len == kept &&
               memcmp(fuzz_note_seen.ptr, msg, fuzz_note_seen.len) == 0,
               "the parser decoded another text (%zu bytes, %zu expected)",
               fuzz_note_seen.len, kept);
    free(a);
    free(b);
    free(stream);
    free(note);
    if (msg != text)
        free(msg);
    free(text);
    return 0;
}
