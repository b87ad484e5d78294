/*
 * frames.h: a client's frames of the control protocol (docs/CONTROL.md),
 * written from the description, for tests/control/test_*.c.  Include
 * after check.h.
 */
#ifndef ELS_TEST_CONTROL_FRAMES_H
#define ELS_TEST_CONTROL_FRAMES_H

#include <stdint.h>
#include <string.h>

/* "ELSC" version kind length[2] payload into buf; its length. */
static inline size_t frame_v(uint8_t *buf, unsigned version, unsigned kind,
                             const void *payload, size_t len)
{
    memcpy(buf, "ELSC", 4);
    buf[4] = (uint8_t)version;
    buf[5] = (uint8_t)kind;
    buf[6] = (uint8_t)(len >> 8);
    buf[7] = (uint8_t)len;
    memcpy(buf + 8, payload, len);
    return 8 + len;
}

/* A frame of the current version, 2. */
static inline size_t frame(uint8_t *buf, unsigned kind, const void *payload,
                           size_t len)
{
    return frame_v(buf, 2, kind, payload, len);
}

/* A command frame: request id, then the text. */
static inline size_t command(uint8_t *buf, uint32_t id, const char *text)
{
    uint8_t p[2048];
    size_t n = strlen(text);
    p[0] = (uint8_t)(id >> 24);
    p[1] = (uint8_t)(id >> 16);
    p[2] = (uint8_t)(id >> 8);
    p[3] = (uint8_t)id;
    memcpy(p + 4, text, n);
    return frame(buf, 2, p, 4 + n);
}

#endif /* ELS_TEST_CONTROL_FRAMES_H */
