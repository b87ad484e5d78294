/*
 * test_safetext.c: tools/monitor/safetext.c, the one rule for showing bytes from a
 * stream, a file or a peer on a terminal.
 */
#include "check.h"
#include "../tools/monitor/safetext.h"

static void show(const char *s, size_t n, char *out, size_t cap)
{
    safetext_copy(out, cap, s, n);
}

static void printable_text_passes(void)
{
    char out[128];
    show("hello, world 42 ~", 17, out, sizeof out);
    CHECK_STR(out, "hello, world 42 ~");
    /* Valid UTF-8 (e-acute, a CJK character, an emoji) passes. */
    const char *u = "caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80";
    show(u, strlen(u), out, sizeof out);
    CHECK_STR(out, u);
}

static void terminal_controls_are_escaped(void)
{
    char out[256];
    /* An OSC title change, a clear screen, a bell, DEL, a C1 CSI. */
    const char *s = "a\x1b]0;owned\x07" "b\x1b[2Jc\x7f" "d\xc2\x9b" "e";
    show(s, strlen(s), out, sizeof out);
    CHECK_STR(out, "a\\u{1B}]0;owned\\u{07}b\\u{1B}[2Jc\\u{7F}d\\u{9B}e");
    CHECK(strchr(out, 0x1b) == NULL);
    show("x\ny\tz\r\\", 7, out, sizeof out);
    CHECK_STR(out, "x\\ny\\tz\\r\\\\");
    /* A NUL in the middle is shown, not a terminator. */
    show("a\0b", 3, out, sizeof out);
    CHECK_STR(out, "a\\u{00}b");
}

static void bidi_and_separators_are_escaped(void)
{
    char out[128];
    const char *s = "a\xe2\x80\xae" "b\xe2\x81\xa6" "c\xe2\x80\xa8" "d";
    show(s, strlen(s), out, sizeof out);
    CHECK_STR(out, "a\\u{202E}b\\u{2066}c\\u{2028}d");
}

static void invalid_utf8_is_shown_byte_by_byte(void)
{
    char out[128];
    /* A lone continuation byte, an overlong slash, a surrogate, a cut
     * sequence at the end, a byte past U+10FFFF. */
    const char *s = "\x80" "\xc0\xaf" "\xed\xa0\x80" "\xf4\x90\x80\x80" "\xe6\x97";
    show(s, strlen(s), out, sizeof out);
    CHECK_STR(out, "\\x80\\xC0\\xAF\\xED\\xA0\\x80\\xF4\\x90\\x80\\x80\\xE6\\x97");
}

static void copy_cuts_at_a_character(void)
{
    char out[8];
    /* "ab" then ESC (\u{1B}, 6 bytes) does not fit in 7 + NUL after "ab". */
    size_t n = safetext_copy(out, sizeof out, "ab\x1b" "cd", 5);
    CHECK_STR(out, "ab");
    CHECK_INT((int)n, ==, 2);
    n = safetext_copy(out, 4, "\xc3\xa9\xc3\xa9", 4);
    CHECK_STR(out, "\xc3\xa9");
    char one[1];
    CHECK_INT((int)safetext_copy(one, 1, "abc", 3), ==, 0);
    CHECK_INT(one[0], ==, 0);
}

static void fput_matches_copy(void)
{
    char path[600], got[256], want[256];
    snprintf(path, sizeof path, "%s/out", check_dir);
    FILE *f = fopen(path, "w+");
    CHECK(f != NULL);
    const char s[] = "m\x1b[31mred\x9b\xff\n";
    safetext_fput(f, s, sizeof s - 1);
    rewind(f);
    size_t n = fread(got, 1, sizeof got - 1, f);
    got[n] = '\0';
    fclose(f);
    safetext_copy(want, sizeof want, s, sizeof s - 1);
    CHECK_STR(got, want);
    CHECK_STR(got, "m\\u{1B}[31mred\\x9B\\xFF\\n");
}

static void json_keeps_the_text_and_escapes_controls(void)
{
    char path[600], got[256];
    snprintf(path, sizeof path, "%s/json", check_dir);
    FILE *f = fopen(path, "w+");
    CHECK(f != NULL);
    const char s[] = "a\"b\\c\x1b[2J\n\xc2\x9b\xe2\x80\xae\xff\xc3\xa9";
    safetext_json_fput(f, s, sizeof s - 1);
    rewind(f);
    size_t n = fread(got, 1, sizeof got - 1, f);
    got[n] = '\0';
    fclose(f);
    CHECK_STR(got, "\"a\\\"b\\\\c\\u001B[2J\\n\\u009B\\u202E\\ufffd\xc3\xa9\"");
}

/* Every single byte and every pair: the output never holds a control. */
static void no_control_ever_passes(void)
{
    char out[64];
    for (unsigned a = 0; a < 256; a++) {
        for (unsigned b = 0; b < 256; b++) {
            char in[2] = { (char)a, (char)b };
            size_t n = safetext_copy(out, sizeof out, in, 2);
            for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char)out[i];
                CHECK_MSG(c >= 0x20 && c != 0x7f, "byte %02x %02x gave control %02x", a, b, c);
            }
            /* C1 controls as UTF-8 (C2 80..C2 9F) never pass. */
            CHECK(!(n >= 2 && (unsigned char)out[0] == 0xc2
                    && (unsigned char)out[1] >= 0x80 && (unsigned char)out[1] <= 0x9f));
        }
    }
}

static const struct check_case cases[] = {
    CHECK_CASE(printable_text_passes),
    CHECK_CASE(terminal_controls_are_escaped),
    CHECK_CASE(bidi_and_separators_are_escaped),
    CHECK_CASE(invalid_utf8_is_shown_byte_by_byte),
    CHECK_CASE(copy_cuts_at_a_character),
    CHECK_CASE(fput_matches_copy),
    CHECK_CASE(json_keeps_the_text_and_escapes_controls),
    CHECK_CASE(no_control_ever_passes),
};

CHECK_MAIN(cases)
