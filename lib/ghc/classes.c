/*
 * classes.c: the -l letter syntax of els_ghc_set_classes(), both ways.
 * Not its job: talking to the RTS (runtime.c).
 */
#include <stdbool.h>
#include <string.h>

#include "eventlog-sink.h"
#include "ghc/classes.h"
#include "base/log.h"

static int class_bits(char c, unsigned *bits)
{
    if (c == 'a') {
        *bits = ELSI_CLASSES_A;
        return 0;
    }
    const char *p = c != '\0' ? strchr(ELSI_CLASS_LETTERS, c) : NULL;
    if (p == NULL) {
        return ELS_EINVAL;
    }
    *bits = 1u << (p - ELSI_CLASS_LETTERS);
    return 0;
}

int elsi_ghc_parse_classes(const char *letters, unsigned current,
                           unsigned *out, char *err, size_t err_len)
{
    if (letters == NULL || letters[0] == '\0') {
        return elsi_fail(err, err_len, ELS_EINVAL,
                         "no event classes given (letters of %s, or a)",
                         ELSI_CLASS_LETTERS);
    }
    bool relative = letters[0] == '-' || letters[0] == '+';
    unsigned set = relative ? current : 0;
    bool on = true;
    bool sign_pending = false;
    for (const char *c = letters; *c != '\0'; c++) {
        if (*c == '-' || *c == '+') {
            if (sign_pending) {
                return elsi_fail(err, err_len, ELS_EINVAL,
                                 "event classes '%s': '%c' after a sign",
                                 letters, *c);
            }
            on = *c == '+';
            sign_pending = true;
            continue;
        }
        unsigned bits;
        if (class_bits(*c, &bits) != 0) {
            return elsi_fail(err, err_len, ELS_EINVAL,
                             "event classes '%s': unknown class '%c' "
                             "(known: %s, a)", letters, *c,
                             ELSI_CLASS_LETTERS);
        }
        set = on ? set | bits : set & ~bits;
        on = true;
        sign_pending = false;
    }
    if (sign_pending) {
        return elsi_fail(err, err_len, ELS_EINVAL,
                         "event classes '%s': a sign with no class after it",
                         letters);
    }
    *out = set;
    return 0;
}

int elsi_ghc_format_classes(unsigned set, char *buf, size_t len)
{
    size_t n = 0;
    for (int i = 0; i < ELSI_CLASS_COUNT; i++) {
        if (set & (1u << i)) {
            if (n + 1 >= len) {
                return ELS_EINVAL;
            }
            buf[n++] = ELSI_CLASS_LETTERS[i];
        }
    }
    if (len == 0) {
        return ELS_EINVAL;
    }
    buf[n] = '\0';
    return 0;
}
