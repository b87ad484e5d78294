/*
 * fuzz_model.c: the live monitor's model (tools/monitor/model*.c) on any
 * stream: what `top` and `serve` do with the bytes a program, or anyone
 * who can reach the socket they read, sends them.
 *
 * Properties, for any bytes fed in two pieces (split where the first
 * byte says): nothing crashes or leaks; the model's JSON is the same as
 * when the bytes come in one piece (chunking never changes the figures);
 * every renderer (JSON, timeline, speedscope, Prometheus, terminal text)
 * produces text without NUL bytes, and the JSON ones start and end as
 * objects; the terminal text holds no control character but newlines
 * (no ESC, DEL or C1: tools/monitor/safetext.c).  Built with the monitor's own source files.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "../tools/monitor/model.c"
#include "../tools/monitor/model_tables.c"
#include "../tools/monitor/model_stops.c"
#include "../tools/monitor/model_prof.c"
#include "../tools/monitor/model_user.c"
#include "../tools/monitor/model_time.c"
#include "../tools/monitor/render.c"
#include "../tools/monitor/render_json.c"
#include "../tools/monitor/render_text.c"
#include "../tools/monitor/render_prom.c"
#include "../tools/monitor/series.c"
#include "../tools/monitor/strbuf.c"
#include "../tools/monitor/safetext.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void model_fuzz_text(const struct strbuf *sb, bool object)
{
    FUZZ_CHECK(!sb->failed, "renderer ran out of memory");
    FUZZ_CHECK(sb->p != NULL && strlen(sb->p) == sb->len, "NUL in rendered text");
    if (object)
        FUZZ_CHECK(sb->p[0] == '{' && sb->p[sb->len - 1] == '}', "not an object");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *bytes = fuzz_bytes(data, size);
    struct mon_model *one, *two;
    if (mon_model_new(&one) < 0 || mon_model_new(&two) < 0)
        abort();
    (void)mon_model_feed(one, bytes, size);
    size_t cut = size ? data[0] % (size + 1) : 0;
    (void)mon_model_feed(two, bytes, cut);
    (void)mon_model_feed(two, bytes + cut, size - cut);
    mon_model_tick(one, 0, true);
    mon_model_tick(two, 0, true);

    struct strbuf a = { 0 }, b = { 0 };
    mon_model_json(one, &a);
    mon_model_json(two, &b);
    model_fuzz_text(&a, true);
    model_fuzz_text(&b, true);
    /* The unread-bytes count may differ (a malformed stream stops
     * reading mid-piece); everything else must not. */
    if (mon_model_error(one) == NULL)
        FUZZ_CHECK(strcmp(a.p, b.p) == 0, "chunking changed the figures");
    sb_clear(&a);
    mon_model_timeline_json(two, 0, 0, 50, &a);
    model_fuzz_text(&a, true);
    sb_clear(&a);
    mon_model_speedscope(two, 0, 0, &a);
    model_fuzz_text(&a, true);
    sb_clear(&a);
    mon_model_prometheus(two, &a);
    model_fuzz_text(&a, false);
    sb_clear(&a);
    mon_model_text(two, &a, 80);
    model_fuzz_text(&a, false);
    for (size_t i = 0; i < a.len; i++) {
        unsigned char ch = (unsigned char)a.p[i];
        FUZZ_CHECK(ch >= 0x20 ? ch != 0x7f : ch == '\n', "control byte in terminal text");
        /* C1 controls as UTF-8 (U+0080..U+009F). */
        FUZZ_CHECK(!(ch == 0xc2 && i + 1 < a.len && (unsigned char)a.p[i + 1] >= 0x80
                     && (unsigned char)a.p[i + 1] <= 0x9f), "C1 control in terminal text");
    }
    sb_free(&a);
    sb_free(&b);
    mon_model_free(one);
    mon_model_free(two);
    free(bytes);
    return 0;
}
