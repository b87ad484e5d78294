/*
 * evformat.h: the few facts about the GHC eventlog binary format that the
 * library needs, and a streaming checker for whole streams.
 *
 * - Classifying a unit handed to writeEventLog() (header chunk, block,
 *   DATA_END) and reading its block marker.
 * - Encoding an in-band note: a complete block, capability 0xFFFF (global),
 *   holding one EVENT_LOG_MSG event, which any eventlog reader shows.
 * - A framer that follows a byte stream (header, event-type table, events
 *   by their declared sizes, the 0xFFFF end) fed in arbitrary pieces, and
 *   says whether it is well formed and complete.  It keeps O(1) memory
 *   apart from the event-size table, and never trusts a length it reads.
 *
 * All integers in the format are big-endian.  Format reference: GHC's
 * includes/rts/EventLogFormat.h and rts/eventlog/EventLog.c.
 */
#ifndef ELS_EVFORMAT_H
#define ELS_EVFORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ELSI_EVENT_HEADER_BEGIN 0x68647262u /* "hdrb" */
#define ELSI_EVENT_HEADER_END   0x68647265u /* "hdre" */
#define ELSI_EVENT_HET_BEGIN    0x68657462u /* "hetb" */
#define ELSI_EVENT_HET_END      0x68657465u /* "hete" */
#define ELSI_EVENT_ET_BEGIN     0x65746200u /* "etb\0" */
#define ELSI_EVENT_ET_END       0x65746500u /* "ete\0" */
#define ELSI_EVENT_DATA_BEGIN   0x64617462u /* "datb" */
#define ELSI_EVENT_DATA_END     0xffffu

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
    ELSI_UNIT_KIND_OTHER = 3    /* anything else (passed through as is) */
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

/* Streaming framer. */
enum elsi_framer_state {
    ELSI_FRAMER_HEADER = 0,  /* inside the header */
    ELSI_FRAMER_DATA,        /* between events */
    ELSI_FRAMER_ENDED,       /* saw DATA_END; anything after is an error */
    ELSI_FRAMER_ERROR
};

struct elsi_framer {
    enum elsi_framer_state state;
    /* Declared payload size per event type: -1 unknown type, -2 variable
     * (16-bit length prefix follows the timestamp). */
    int32_t *sizes;          /* 65536 entries, allocated by init */
    uint64_t events;         /* complete events seen */
    uint64_t blocks;         /* block markers seen */
    uint64_t event_types;    /* event types declared in the header */
    uint64_t offset;         /* stream bytes consumed */
    char error[160];         /* set when state == ERROR */
    /* Internal parser state (evformat.c): the step being taken, the bytes
     * of the fixed-size item being assembled (at most 8: a timestamp) or
     * the count of bytes still to skip (description, payload). */
    uint8_t pending[8];
    uint32_t pending_len;
    uint32_t need;           /* bytes the current item needs; 0: skipping */
    uint64_t skip;           /* bytes still to skip */
    uint64_t item_start;     /* stream offset of the current item */
    int step;
    uint16_t cur_type;       /* event being read */
    int32_t et_size;         /* event-type entry being read */
    uint16_t et_type;
};

int elsi_framer_init(struct elsi_framer *f);      /* 0 or ELS_ENOMEM */
void elsi_framer_destroy(struct elsi_framer *f);
/* Consume len bytes.  Returns 0, or ELS_EINVAL once the stream is
 * malformed (f->error says where; every later call fails too). */
int elsi_framer_feed(struct elsi_framer *f, const void *buf, size_t len);
/* True when DATA_END was seen at an event boundary. */
bool elsi_framer_complete(const struct elsi_framer *f);

#endif /* ELS_EVFORMAT_H */
