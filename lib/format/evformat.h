/*
 * evformat.h: the few facts about the GHC eventlog binary format that the
 * writer needs.
 *
 * - Classifying a unit handed to writeEventLog() (header chunk, block,
 *   DATA_END) and reading its block marker.
 * - Encoding an in-band note: a complete block, capability 0xFFFF (global),
 *   holding one EVENT_LOG_MSG event, which any eventlog reader shows.
 * Following a whole stream is the public parser's job
 * (<eventlog-sink/parse.h>, parse.c).
 *
 * All integers in the format are big-endian.  Format reference: GHC's
 * includes/rts/EventLogFormat.h and rts/eventlog/EventLog.c.
 */
#ifndef ELS_EVFORMAT_H
#define ELS_EVFORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Big-endian reads, as every integer in the format is. */
static inline uint16_t elsi_be16(const uint8_t *p)
{
    return (uint16_t)((unsigned)p[0] << 8 | (unsigned)p[1]);
}

static inline uint32_t elsi_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
           (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static inline uint64_t elsi_be64(const uint8_t *p)
{
    return (uint64_t)elsi_be32(p) << 32 | elsi_be32(p + 4);
}

#define ELSI_EVENT_HEADER_BEGIN 0x68647262u /* "hdrb" */
#define ELSI_EVENT_HEADER_END   0x68647265u /* "hdre" */
#define ELSI_EVENT_HET_BEGIN    0x68657462u /* "hetb" */
#define ELSI_EVENT_HET_END      0x68657465u /* "hete" */
#define ELSI_EVENT_ET_BEGIN     0x65746200u /* "etb\0" */
#define ELSI_EVENT_ET_END       0x65746500u /* "ete\0" */
#define ELSI_EVENT_DATA_BEGIN   0x64617462u /* "datb" */
#define ELSI_EVENT_DATA_END     0xffffu
/* The stream's end marker, as bytes. */
static const uint8_t elsi_data_end[2] = { 0xff, 0xff };

#define ELSI_EVENT_LOG_MSG      16
#define ELSI_EVENT_BLOCK_MARKER 18
#define ELSI_EVENT_USER_MSG     19

/* type:16 time:64 size:32 end_time:64 cap:16 */
#define ELSI_BLOCK_MARKER_BYTES 24
#define ELSI_CAP_GLOBAL 0xffffu

enum elsi_unit_kind {
    ELSI_UNIT_KIND_BLOCK = 0,   /* starts with a block marker */
    ELSI_UNIT_KIND_HEADER = 1,  /* starts with "hdrb" */
    ELSI_UNIT_KIND_END = 2,     /* exactly the 2-byte DATA_END */
    ELSI_UNIT_KIND_OTHER = 3,   /* anything else (passed through as is) */
    /* Never from classification: a join snapshot, queued by
     * els_writer_write_snapshot() for consumers that join mid-stream. */
    ELSI_UNIT_KIND_JOIN = 4
};

struct elsi_unit_info {
    enum elsi_unit_kind kind;
    uint16_t cap;            /* for blocks; ELSI_CAP_GLOBAL for others */
    uint64_t start_time;     /* block marker timestamp, else 0 */
    uint64_t end_time;       /* block marker end time, else 0 */
};

void elsi_unit_classify(const void *unit, size_t len, struct elsi_unit_info *info);

/* Bytes needed to encode a note with a message of msg_len bytes (the
 * message is cut to fit the 16-bit event size). */
size_t elsi_note_size(size_t msg_len);

/* Encode a global block [timestamp, timestamp] holding one EVENT_LOG_MSG
 * with msg into buf.  Returns bytes written, or 0 if buf_len is too
 * small. */
size_t elsi_note_encode(void *buf, size_t buf_len, uint64_t timestamp,
                        const char *msg);

#endif /* ELS_EVFORMAT_H */
