/*
 * fuzz.h: what the libFuzzer targets in fuzz/ share: a check macro that
 * turns a broken property into a crash libFuzzer records (with the input
 * that caused it), a copy of the input into an exactly sized heap block so
 * that AddressSanitizer sees any read past its end, and the test that a
 * library message is the one printable line the error convention promises.
 * It holds no target logic; each fuzz_*.c says what it exercises.
 */
#ifndef ELS_FUZZ_H
#define ELS_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A property the library promises does not hold: say which and where, and
 * abort so that libFuzzer saves the input as a crash reproducer. */
#define FUZZ_CHECK(cond, ...)                                               \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "%s:%d: property failed: %s: ", __FILE__,       \
                    __LINE__, #cond);                                       \
            fprintf(stderr, __VA_ARGS__);                                   \
            fputc('\n', stderr);                                            \
            abort();                                                        \
        }                                                                   \
    } while (0)

/* malloc() that treats failure as a harness bug, not a finding. */
static inline void *fuzz_alloc(size_t n)
{
    void *p = malloc(n > 0 ? n : 1);
    if (p == NULL) {
        fprintf(stderr, "fuzz: out of memory (%zu bytes)\n", n);
        abort();
    }
    return p;
}

/* data[0..size) as a NUL-terminated string in its own heap block of
 * exactly size + 1 bytes.  An embedded NUL ends the string early, as it
 * would for any C caller. */
static inline char *fuzz_cstring(const uint8_t *data, size_t size)
{
    char *s = fuzz_alloc(size + 1);
    if (size > 0)
        memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* data[0..size) in its own heap block of exactly size bytes. */
static inline uint8_t *fuzz_bytes(const uint8_t *data, size_t size)
{
    uint8_t *p = fuzz_alloc(size);
    if (size > 0)
        memcpy(p, data, size);
    return p;
}

/* Is msg a non-empty NUL-terminated line of at most len - 1 bytes with no
 * control characters (the error convention: one line, untrusted text
 * quoted with elsi_quote())? */
static inline bool fuzz_one_line(const char *msg, size_t len)
{
    size_t n = strnlen(msg, len);
    if (n == 0 || n == len)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)msg[i];
        if (c < 0x20 || c == 0x7f)
            return false;
    }
    return true;
}

/* A reader over the fuzzer's bytes that yields 0 once they run out, so a
 * target can take its choices from the front of the input. */
struct fuzz_reader {
    const uint8_t *p;
    size_t left;
};

static inline uint8_t fuzz_u8(struct fuzz_reader *r)
{
    if (r->left == 0)
        return 0;
    r->left--;
    return *r->p++;
}

static inline uint16_t fuzz_u16(struct fuzz_reader *r)
{
    uint16_t hi = fuzz_u8(r);
    return (uint16_t)(hi << 8 | fuzz_u8(r));
}

/* Take up to n bytes; *got says how many there were. */
static inline const uint8_t *fuzz_take(struct fuzz_reader *r, size_t n,
                                       size_t *got)
{
    const uint8_t *p = r->p;
    if (n > r->left)
        n = r->left;
    r->p += n;
    r->left -= n;
    *got = n;
    return p;
}

/* A big-endian integer of n bytes (the eventlog's byte order), written
 * independently of the library's readers that a target checks. */
static inline uint64_t fuzz_be(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

#endif /* ELS_FUZZ_H */
