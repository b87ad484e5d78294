/*
 * sha256.h: SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), for the
 * control channel's challenge-response (docs/CONTROL.md): plain C, libc
 * only, no allocation, no global state, so any thread may call it.
 *
 * Not its job: randomness (the caller brings its nonces), comparing MACs
 * (elsi_ct_equal() below is the constant-time comparison to use), or
 * being fast: it hashes a few hundred bytes per control session.
 */
#ifndef ELS_CONTROL_SHA256_H
#define ELS_CONTROL_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ELSI_SHA256_BYTES 32u
#define ELSI_SHA256_BLOCK 64u

struct elsi_sha256 {
    uint32_t h[8];
    uint64_t total;             /* bytes hashed so far */
    uint8_t block[ELSI_SHA256_BLOCK];
    size_t used;                /* bytes in block */
};

void elsi_sha256_init(struct elsi_sha256 *s);
void elsi_sha256_update(struct elsi_sha256 *s, const void *p, size_t n);
/* The digest; s is wiped and must be initialised again before reuse. */
void elsi_sha256_final(struct elsi_sha256 *s, uint8_t out[ELSI_SHA256_BYTES]);

/* HMAC-SHA256 of msg under key (any length: a key longer than a block is
 * hashed first, as RFC 2104 says). */
void elsi_hmac_sha256(const void *key, size_t key_len, const void *msg,
                      size_t msg_len, uint8_t out[ELSI_SHA256_BYTES]);

/* a[0..n) == b[0..n), in a time that depends on n only. */
bool elsi_ct_equal(const uint8_t *a, const uint8_t *b, size_t n);

/* Zero n bytes at p in a way the compiler may not drop as a dead store. */
void elsi_wipe(void *p, size_t n);

#endif /* ELS_CONTROL_SHA256_H */
