/*
 * strbuf.h: a growable text buffer for the monitor's renderers (JSON,
 * Prometheus text, HTTP responses).  An allocation failure makes the
 * buffer "failed" (sb->failed) and later appends no-ops, so renderers
 * check once at the end instead of after every append.  Not a general
 * string library: append-only, no shrinking.
 */
#ifndef ELS_MON_STRBUF_H
#define ELS_MON_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

struct strbuf {
    char *p;
    size_t len, cap;
    bool failed;
};

void sb_free(struct strbuf *sb);
void sb_clear(struct strbuf *sb);
void sb_put(struct strbuf *sb, const void *d, size_t n);
void sb_puts(struct strbuf *sb, const char *s);
void sb_printf(struct strbuf *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* s (n bytes, any content) as a quoted JSON string: control characters
 * escaped, bytes that are not UTF-8 replaced by U+FFFD. */
void sb_json_str(struct strbuf *sb, const char *s, size_t n);
/* s (n bytes, any content) as a quoted Prometheus label value, as the
 * text exposition format says: backslash, double quote and newline
 * escaped (\\ \" \n), everything else literal UTF-8 (a tab too), bytes
 * that are not UTF-8 replaced by U+FFFD (a scraper refuses them). */
void sb_prom_label(struct strbuf *sb, const char *s, size_t n);
/* s as the text of a Prometheus HELP line: backslash and newline
 * escaped, the rest as for sb_prom_label(). */
void sb_prom_help(struct strbuf *sb, const char *s, size_t n);
/* A double as JSON (non-finite numbers become 0). */
void sb_json_num(struct strbuf *sb, double v);

#endif /* ELS_MON_STRBUF_H */
