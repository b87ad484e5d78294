/*
 * fuzz_spec.c: libFuzzer target for the sink spec parser (lib/sinks/spec*.c).
 *
 * The input, NUL-terminated, is a spec as a user would type it after
 * --eventlog-sink= or in EVENTLOG_SINK.  It goes through elsi_spec_parse()
 * (with a roomy error buffer, an exactly sized tiny one and none at all),
 * els_spec_check(), and, when it parses, the helpers the sinks' open()
 * applies to the result: elsi_spec_sink_args(), els_sink_option(),
 * elsi_sink_mode() and the address parsers of lib/base/address.c.  Besides "no
 * crash, no leak, no sanitizer report" it checks what spec.h promises: the
 * documented codes only, *out left empty on failure, every field of a
 * parsed spec within its documented range, the options exactly those the
 * sink declared, each once, and every message one printable line.  A
 * custom sink "fuzz" declaring more options than a spec may carry is
 * registered so that the option-count limit is reachable.  It opens no
 * sink: binding and creating files is the sinks' job, not the parser's.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "eventlog-sink.h"
#include "base/address.h"
#include "sinks/spec.h"
#include "fuzz.h"

static const char *const fuzz_spec_options[] = {
    "o1", "o2", "o3", "o4", "o5", "o6", "o7", "o8", "o9", "o10",
    "o11", "o12", "o13", "o14", "o15", "o16", "o17", "o18", "mode", NULL
};

static int fuzz_spec_open(void **sink, const struct els_sink_args *args)
{
    (void)sink;
    (void)args;
    return ELS_EINVAL;      /* never opened: the target only parses */
}

static void fuzz_spec_close(void *sink)
{
    (void)sink;
}

static int fuzz_spec_write(void *sink, const void *buf, size_t len)
{
    (void)sink;
    (void)buf;
    (void)len;
    return 0;
}

static const struct els_sink_ops fuzz_spec_sink = {
    .struct_size = sizeof(struct els_sink_ops),
    .scheme = "fuzz",
    .options = fuzz_spec_options,
    .style = ELS_SINK_CALLBACK,
    .open = fuzz_spec_open,
    .close = fuzz_spec_close,
    .write = fuzz_spec_write,
};

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    els_set_log_hook(NULL, NULL, ELS_LOG_ERROR);
    int rc = els_sink_register(&fuzz_spec_sink);
    FUZZ_CHECK(rc == 0, "els_sink_register: %d", rc);
    return 0;
}

static bool fuzz_spec_declared(const struct els_sink_ops *ops, const char *key)
{
    for (size_t i = 0; ops->options != NULL && ops->options[i] != NULL; i++)
        if (strcmp(ops->options[i], key) == 0)
            return true;
    return false;
}

/* Every field of a parsed spec is within what spec.h documents. */
static void fuzz_spec_check_parsed(const char *text, const struct elsi_spec *s)
{
    const char *colon = strchr(text, ':');
    FUZZ_CHECK(colon != NULL, "parsed a spec without ':'");
    size_t n = (size_t)(colon - text);
    FUZZ_CHECK(strlen(s->scheme) == n && memcmp(s->scheme, text, n) == 0,
               "scheme \"%s\" is not the text before the first ':'",
               s->scheme);
    FUZZ_CHECK(elsi_scheme_valid(s->scheme), "invalid scheme accepted");
    FUZZ_CHECK(s->ops != NULL && strcmp(s->ops->scheme, s->scheme) == 0,
               "ops do not match scheme \"%s\"", s->scheme);
    FUZZ_CHECK(s->text != NULL && strcmp(s->text, text) == 0,
               "spec text not copied");
    FUZZ_CHECK(s->address != NULL, "no address");
    /* Decoding only shrinks: "%XX" is three bytes for one. */
    FUZZ_CHECK(strlen(s->address) <= strlen(colon + 1),
               "address longer than its text");
    FUZZ_CHECK(s->buffer_bytes > ELSI_RTS_BUFFER_BYTES &&
               s->buffer_bytes <= ELSI_MAX_BUFFER,
               "buffer_bytes %llu out of range",
               (unsigned long long)s->buffer_bytes);
    if (s->policy == ELSI_POLICY_DROP) {
        FUZZ_CHECK(s->block_ms == 0, "block_ms %lld under policy=drop",
                   (long long)s->block_ms);
    } else {
        FUZZ_CHECK(s->policy == ELSI_POLICY_BLOCK, "policy %d", s->policy);
        FUZZ_CHECK(s->block_ms == -1 ||
                   (s->block_ms >= 1 &&
                    s->block_ms <= (int64_t)ELSI_MAX_SECONDS * 1000),
                   "block_ms %lld out of range", (long long)s->block_ms);
    }
    FUZZ_CHECK(s->wait_ms <= ELSI_MAX_SECONDS * 1000u, "wait_ms %u",
               (unsigned)s->wait_ms);
    FUZZ_CHECK(s->linger_ms <= ELSI_MAX_SECONDS * 1000u, "linger_ms %u",
               (unsigned)s->linger_ms);
    FUZZ_CHECK(s->n_options <= ELSI_SPEC_MAX_OPTIONS, "n_options %zu",
               s->n_options);
    for (size_t i = 0; i < s->n_options; i++) {
        const char *k = s->option_keys[i];
        const char *v = s->option_values[i];
        FUZZ_CHECK(k != NULL && v != NULL, "option %zu missing", i);
        FUZZ_CHECK(elsi_option_key_valid(k), "invalid key \"%s\"", k);
        FUZZ_CHECK(!elsi_option_is_common(k), "common option \"%s\" kept", k);
        FUZZ_CHECK(fuzz_spec_declared(s->ops, k), "undeclared option \"%s\"",
                   k);
        FUZZ_CHECK(v[0] != '\0', "empty value of \"%s\"", k);
        for (size_t j = 0; j < i; j++)
            FUZZ_CHECK(strcmp(s->option_keys[j], k) != 0,
                       "option \"%s\" kept twice", k);
    }
}

/* What the sinks' open() does with a parsed spec before acquiring
 * anything: read options, decode mode=, parse the address. */
static void fuzz_spec_sink_side(const struct elsi_spec *s)
{
    char err[ELSI_ADDR_ERR_MAX];
    struct els_sink_args args;
    elsi_spec_sink_args(s, &args, err, sizeof err);
    FUZZ_CHECK(args.address == s->address && args.spec == s->text,
               "sink args do not point at the spec");
    for (size_t i = 0; i < s->n_options; i++)
        FUZZ_CHECK(els_sink_option(&args, s->option_keys[i]) ==
                   s->option_values[i], "els_sink_option(\"%s\")",
                   s->option_keys[i]);

    unsigned mode = 0;
    err[0] = '\0';
    int rc = elsi_sink_mode(&args, 0600, &mode);
    if (rc == 0) {
        FUZZ_CHECK(mode <= 0777, "mode %o", mode);
    } else {
        FUZZ_CHECK(rc == ELS_EINVAL, "elsi_sink_mode: %d", rc);
        FUZZ_CHECK(fuzz_one_line(err, sizeof err),
                   "elsi_sink_mode message is not one printable line: "
                   "\"%s\"", err);
    }

    if (strcmp(s->scheme, "tcp") == 0 ||
        strcmp(s->scheme, "tcp-connect") == 0) {
        struct elsi_tcp_addr a;
        err[0] = '\0';
        rc = elsi_tcp_addr_parse(s->address, &a, err, sizeof err);
        FUZZ_CHECK(rc == 0 || rc == ELS_EINVAL, "tcp parse: %d", rc);
        if (rc != 0)
            FUZZ_CHECK(fuzz_one_line(err, sizeof err),
                       "tcp address message: \"%s\"", err);
    } else if (strcmp(s->scheme, "unix") == 0 ||
               strcmp(s->scheme, "unix-connect") == 0) {
        struct sockaddr_un sa;
        socklen_t sa_len = 0;
        err[0] = '\0';
        rc = elsi_unix_addr_make(s->address, &sa, &sa_len, err, sizeof err);
        FUZZ_CHECK(rc == 0 || rc == ELS_EINVAL || rc == ELS_ENAMETOOLONG,
                   "unix address: %d", rc);
        if (rc != 0)
            FUZZ_CHECK(fuzz_one_line(err, sizeof err),
                       "unix address message: \"%s\"", err);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstring(data, size);
    static const struct elsi_spec empty;
    struct elsi_spec spec;
    char err[1024];

    /* 1. The ordinary call, with room for any message. */
    memset(err, 0, sizeof err);
    int rc = elsi_spec_parse(text, &spec, err, sizeof err);
    FUZZ_CHECK(rc == 0 || rc == ELS_EINVAL || rc == ELS_ENOSCHEME ||
               rc == ELS_ENOMEM, "elsi_spec_parse returned %d", rc);
    if (rc == 0) {
        fuzz_spec_check_parsed(text, &spec);
        fuzz_spec_sink_side(&spec);
        elsi_spec_free(&spec);
        FUZZ_CHECK(memcmp(&spec, &empty, sizeof spec) == 0,
                   "elsi_spec_free left fields set");
    } else {
        FUZZ_CHECK(memcmp(&spec, &empty, sizeof spec) == 0,
                   "failed parse left *out non-empty (rc %d)", rc);
        FUZZ_CHECK(fuzz_one_line(err, sizeof err),
                   "message is not one printable line: \"%s\"", err);
        FUZZ_CHECK(strncmp(err, "spec \"", 6) == 0,
                   "message does not quote the spec: \"%s\"", err);
    }

    /* 2. A tiny, exactly sized error buffer: same code, no overflow, a
     *    NUL-terminated cut. */
    size_t small_len = 1 + size % 24;
    char *small = fuzz_alloc(small_len);
    memset(small, 'x', small_len);
    int rc2 = elsi_spec_parse(text, &spec, small, small_len);
    FUZZ_CHECK(rc2 == rc, "rc %d with a small err buffer, %d with a big one",
               rc2, rc);
    if (rc2 == 0)
        elsi_spec_free(&spec);
    else
        FUZZ_CHECK(memchr(small, '\0', small_len) != NULL,
                   "small err buffer not NUL-terminated");
    free(small);

    /* 3. No error buffer at all. */
    int rc3 = elsi_spec_parse(text, &spec, NULL, 0);
    FUZZ_CHECK(rc3 == rc, "rc %d without err buffer, %d with", rc3, rc);
    if (rc3 == 0)
        elsi_spec_free(&spec);

    /* 4. The public check agrees with the parser. */
    char err2[1024];
    int rc4 = els_spec_check(text, err2, sizeof err2);
    FUZZ_CHECK(rc4 == rc, "els_spec_check %d, elsi_spec_parse %d", rc4, rc);
    if (rc4 != 0)
        FUZZ_CHECK(strcmp(err, err2) == 0,
                   "els_spec_check says \"%s\", the parser \"%s\"", err2, err);

    free(text);
    return 0;
}
