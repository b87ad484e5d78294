/*
 * test_sha256.c: SHA-256 and HMAC-SHA256 (lib/control/sha256.c) against
 * the published test vectors: FIPS 180-4's examples (NIST's "abc",
 * two-block and one-million-"a" messages, plus the empty message),
 * lengths at the padding's edges, and RFC 4231's seven HMAC-SHA256 cases; the same digests when the input
 * arrives in pieces of every size across block boundaries; and the
 * constant-time comparison's answers.
 */
#include "check.h"
#include "control/sha256.h"

static void hex(const uint8_t *p, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", p[i]);
}

static void check_digest(const void *msg, size_t len, const char *want)
{
    uint8_t d[ELSI_SHA256_BYTES];
    char got[2 * ELSI_SHA256_BYTES + 1];
    struct elsi_sha256 s;
    elsi_sha256_init(&s);
    elsi_sha256_update(&s, msg, len);
    elsi_sha256_final(&s, d);
    hex(d, sizeof d, got);
    CHECK_STR(got, want);
}

static void test_fips_vectors(void)
{
    check_digest("abc", 3, "ba7816bf8f01cfea414140de5dae2223"
                           "b00361a396177a9cb410ff61f20015ad");
    check_digest("", 0, "e3b0c44298fc1c149afbf4c8996fb924"
                        "27ae41e4649b934ca495991b7852b855");
    /* 448 bits: the padding needs a second block. */
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    check_digest(two, strlen(two), "248d6a61d20638b8e5c026930c3e6039"
                                   "a33ce45964ff2167f6ecedd419db06c1");
    static char million[1000000];
    memset(million, 'a', sizeof million);
    check_digest(million, sizeof million, "cdc76e5c9914fb9281a1c7e284d73e67"
                                          "f1809a48a497200e046d39ccc7112cd0");
}

/* Lengths around the padding's edges (55 bytes still fit the length in
 * their block, 56 do not; 64 and 120 likewise one block on); digests
 * from Python's hashlib, an independent implementation. */
static void test_padding_edges(void)
{
    static const struct { size_t len; const char *digest; } v[] = {
        { 55, "e7313d333c272e639f790978283f9eb392e843d0f29b7016828bb1daa4aac70b" },
        { 56, "4324d65f3c103567f5589c710bc08f8523f929a9272e3af36fc968e52abc6c27" },
        { 63, "81c80242132f230c3bd41b3e63bbcff16107339549214a99614ff26664625055" },
        { 64, "39e3d7b6b5d075d37d053ad89b24b41bef4f3c29760c84447cab3f3be1882241" },
        { 65, "aacca6ff74fdbb296d165a45cecfa04e5127bc008770fbbdd48006f2d2fae95e" },
        { 119, "9ce7368e4daf32341631b492e80359dc9f594b48453cd0dd5bf0b19279cc177e" },
        { 120, "7836b787757e95e58b3ca5aec90b1b004e8deba1e50e9675af9cabf1a13a04b5" },
    };
    uint8_t msg[128];
    for (size_t i = 0; i < sizeof msg; i++)
        msg[i] = (uint8_t)(i * 7 + 3);
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        check_digest(msg, v[i].len, v[i].digest);
}

/* Every split of a 200-byte message gives the digest of the whole. */
static void test_pieces(void)
{
    uint8_t msg[200], whole[ELSI_SHA256_BYTES], part[ELSI_SHA256_BYTES];
    for (size_t i = 0; i < sizeof msg; i++)
        msg[i] = (uint8_t)(i * 7 + 3);
    struct elsi_sha256 s;
    elsi_sha256_init(&s);
    elsi_sha256_update(&s, msg, sizeof msg);
    elsi_sha256_final(&s, whole);
    for (size_t step = 1; step <= 130; step++) {
        elsi_sha256_init(&s);
        for (size_t off = 0; off < sizeof msg; off += step)
            elsi_sha256_update(&s, msg + off,
                               sizeof msg - off < step ? sizeof msg - off : step);
        elsi_sha256_final(&s, part);
        CHECK_MSG(memcmp(whole, part, sizeof whole) == 0, "step %zu", step);
    }
}

static void check_hmac(const void *key, size_t klen, const char *data,
                       size_t dlen, const char *want)
{
    uint8_t mac[ELSI_SHA256_BYTES];
    char got[2 * ELSI_SHA256_BYTES + 1];
    elsi_hmac_sha256(key, klen, data, dlen, mac);
    hex(mac, sizeof mac, got);
    /* Case 5 publishes only the first 128 bits. */
    CHECK_MSG(strncmp(got, want, strlen(want)) == 0, "got %s, want %s", got,
              want);
}

static void test_rfc4231_vectors(void)
{
    uint8_t k[131], d[50];
    memset(k, 0x0b, 20);
    check_hmac(k, 20, "Hi There", 8, "b0344c61d8db38535ca8afceaf0bf12b"
                                     "881dc200c9833da726e9376c2e32cff7");
    const char *q = "what do ya want for nothing?";
    check_hmac("Jefe", 4, q, strlen(q), "5bdcc146bf60754e6a042426089575c7"
                                        "5a003f089d2739839dec58b964ec3843");
    memset(k, 0xaa, 20);
    memset(d, 0xdd, 50);
    check_hmac(k, 20, (const char *)d, 50, "773ea91e36800e46854db8ebd09181a7"
                                           "2959098b3ef8c122d9635514ced565fe");
    for (int i = 0; i < 25; i++)
        k[i] = (uint8_t)(i + 1);
    memset(d, 0xcd, 50);
    check_hmac(k, 25, (const char *)d, 50, "82558a389a443c0ea4cc819899f2083a"
                                           "85f0faa3e578f8077a2e3ff46729665b");
    memset(k, 0x0c, 20);
    check_hmac(k, 20, "Test With Truncation", 20,
               "a3b6167473100ee06e0c796c2955552b");
    /* Keys longer than a block are hashed first. */
    memset(k, 0xaa, 131);
    const char *t6 = "Test Using Larger Than Block-Size Key - Hash Key First";
    check_hmac(k, 131, t6, strlen(t6), "60e431591ee0b67f0d8a26aacbf5b77f"
                                       "8e0bc6213728c5140546040f0ee37f54");
    const char *t7 = "This is a test using a larger than block-size key and a "
                     "larger than block-size data. The key needs to be hashed "
                     "before being used by the HMAC algorithm.";
    check_hmac(k, 131, t7, strlen(t7), "9b09ffa71b942fcb27635fbcd5b0e944"
                                       "bfdc63644f0713938a7f51535c3a35e2");
}

static void test_ct_equal(void)
{
    uint8_t a[32] = { 0 }, b[32] = { 0 };
    CHECK(elsi_ct_equal(a, b, 32));
    b[31] = 1;
    CHECK(!elsi_ct_equal(a, b, 32));
    CHECK(elsi_ct_equal(a, b, 31));
    b[0] = 0x80;
    CHECK(!elsi_ct_equal(a, b, 1));
    elsi_wipe(b, sizeof b);
    CHECK(elsi_ct_equal(a, b, 32));
}

static const struct check_case cases[] = {
    CHECK_CASE(test_fips_vectors),
    CHECK_CASE(test_padding_edges),
    CHECK_CASE(test_pieces),
    CHECK_CASE(test_rfc4231_vectors),
    CHECK_CASE(test_ct_equal),
};

CHECK_MAIN(cases)
