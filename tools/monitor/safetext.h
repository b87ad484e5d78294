/*
 * safetext.h: bytes from a stream, a file or a peer, shown as text.
 *
 * The one rule every subcommand follows before such bytes reach a
 * terminal or a line of plain output: printable ASCII and valid UTF-8
 * pass unchanged; a backslash is doubled; newline, tab and carriage
 * return are written \n, \t, \r; every other C0 control, ESC and DEL,
 * the C1 controls (U+0080..U+009F), the bidirectional overrides and
 * isolates (U+202A..U+202E, U+2066..U+2069) and the line and paragraph
 * separators (U+2028, U+2029) are written \u{XXXX}; a byte that does not
 * start a valid UTF-8 sequence is written \xHH.  So nothing a hostile
 * stream sends can move the cursor, retitle the window, reorder what is
 * shown or break a line, and the escaped form says which bytes arrived.
 * Exact output (--json) does not go through here: it is JSON-escaped.
 */
#ifndef ELS_TOOL_SAFETEXT_H
#define ELS_TOOL_SAFETEXT_H

#include <stddef.h>
#include <stdio.h>

/* The longest form one character takes ("\u{202E}"), without a NUL. */
#define SAFETEXT_CHAR_MAX 8

/* The display form of the character at s (n > 0 bytes available) into
 * out (not terminated), its length in *out_len; returns how many bytes
 * of s it took (at least 1). */
size_t safetext_char(const char *s, size_t n, char out[SAFETEXT_CHAR_MAX],
                     size_t *out_len);

/* s (n bytes) in its safe form on f. */
void safetext_fput(FILE *f, const char *s, size_t n);

/*
 * Note [Exact and safe JSON]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~
 * --json must give back the exact text, and its output may still reach a
 * terminal.  So every character safetext would escape is written as a
 * JSON escape, which decodes to the same character: C0 controls, DEL,
 * the C1 controls, the bidirectional and line-separator code points as
 * \uXXXX, newline/tab/CR/backslash as \n \t \r \\.  Only a byte that is
 * not valid UTF-8 cannot be kept: JSON text is Unicode, so it becomes
 * U+FFFD (\ufffd), as RFC 8259 readers would make of it anyway.  The
 * classification is safetext_char()'s, so the two forms never disagree
 * about what is a control.
 */
/* s (n bytes) as a quoted JSON string on f, by the Note above. */
void safetext_json_fput(FILE *f, const char *s, size_t n);

/* s (n bytes) in its safe form into dst (cap > 0 bytes, always
 * NUL-terminated), cut at a character boundary when it does not fit;
 * returns the length written. */
size_t safetext_copy(char *dst, size_t cap, const char *s, size_t n);

#endif /* ELS_TOOL_SAFETEXT_H */
