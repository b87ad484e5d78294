/*
 * evformat.c: the GHC eventlog format, as far as the library needs it.
 *
 * Two jobs for the writer: tell what kind of unit the RTS handed to
 * writeEventLog() (header chunk, block, DATA_END) without reading past its
 * end, and encode an in-band note as a complete global block holding one
 * EVENT_LOG_MSG.  Reading whole streams is parse.c's job.
 *
 * Format reference: GHC 9.0.2 includes/rts/EventLogFormat.h and
 * rts/eventlog/EventLog.c (postHeaderEvents, postEventType,
 * postBlockMarker, closeBlockMarker, postLogMsg).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eventlog-sink.h"
#include "format/evformat.h"
#include "base/log.h"

/* ------------------------------------------------------------------------
 * Big-endian helpers
 * ------------------------------------------------------------------------ */

static uint8_t *evformat_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
    return p + 2;
}

static uint8_t *evformat_put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
    return p + 4;
}

static uint8_t *evformat_put64(uint8_t *p, uint64_t v)
{
    p = evformat_put32(p, (uint32_t)(v >> 32));
    return evformat_put32(p, (uint32_t)v);
}

/* ------------------------------------------------------------------------
 * Units
 * ------------------------------------------------------------------------ */

void elsi_unit_classify(const void *unit, size_t len, struct elsi_unit_info *info)
{
    const uint8_t *p = unit;

    info->kind = ELSI_UNIT_KIND_OTHER;
    info->cap = ELSI_CAP_GLOBAL;
    info->start_time = 0;
    info->end_time = 0;
    if (p == NULL)
        return;

    if (len >= 4 && elsi_be32(p) == ELSI_EVENT_HEADER_BEGIN) {
        info->kind = ELSI_UNIT_KIND_HEADER;
    } else if (len == 2 && elsi_be16(p) == ELSI_EVENT_DATA_END) {
        info->kind = ELSI_UNIT_KIND_END;
    } else if (len >= ELSI_BLOCK_MARKER_BYTES &&
               elsi_be16(p) == ELSI_EVENT_BLOCK_MARKER) {
        /* type:16 time:64 size:32 end_time:64 cap:16 */
        info->kind = ELSI_UNIT_KIND_BLOCK;
        info->start_time = elsi_be64(p + 2);
        info->end_time = elsi_be64(p + 14);
        info->cap = elsi_be16(p + 22);
    }
}

/* ------------------------------------------------------------------------
 * Notes
 *
 * A note is what GHC's own global buffer would hold if the RTS had posted
 * one log message into a fresh block: postBlockMarker() then postLogMsg(),
 * with closeBlockMarker() filling in the size (counted from the first byte
 * of the marker to the end of the block) and the end time.
 * ------------------------------------------------------------------------ */

/* EVENT_LOG_MSG: type:16 time:64 payload_size:16, then the message. */
#define EVFORMAT_LOG_MSG_HEADER_BYTES 12
/* The payload size is a 16-bit field. */
#define EVFORMAT_MSG_MAX 0xffffu

size_t elsi_note_size(size_t msg_len)
{
    if (msg_len > EVFORMAT_MSG_MAX)
        msg_len = EVFORMAT_MSG_MAX;
    return ELSI_BLOCK_MARKER_BYTES + EVFORMAT_LOG_MSG_HEADER_BYTES + msg_len;
}

size_t elsi_note_encode(void *buf, size_t buf_len, uint64_t timestamp,
                        const char *msg)
{
    if (msg == NULL)
        msg = "";
    /* strnlen: a message longer than the cut is never scanned to its end. */
    size_t msg_len = strnlen(msg, EVFORMAT_MSG_MAX);
    size_t total = elsi_note_size(msg_len);
    if (buf == NULL || buf_len < total)
        return 0;

    uint8_t *p = buf;
    p = evformat_put16(p, ELSI_EVENT_BLOCK_MARKER);
    p = evformat_put64(p, timestamp);
    p = evformat_put32(p, (uint32_t)total);   /* at most 65571: fits */
    p = evformat_put64(p, timestamp);         /* end time */
    p = evformat_put16(p, ELSI_CAP_GLOBAL);

    p = evformat_put16(p, ELSI_EVENT_LOG_MSG);
    p = evformat_put64(p, timestamp);
    p = evformat_put16(p, (uint16_t)msg_len);
    memcpy(p, msg, msg_len);
    return total;
}
