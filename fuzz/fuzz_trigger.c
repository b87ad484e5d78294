/*
 * fuzz_trigger.c: libFuzzer target for the dump-on= evaluator
 * (lib/writer/trigger.c, Note [Triggered dumps]), which reads every
 * unit a producer hands the writer, including a custom producer's garbage.
 * Input: the first byte picks a condition list; the rest is split at each
 * 0xA5 0x5A pair into units, the first being the header.  Properties: no
 * crash, leak or sanitizer report; every unit is counted; a dump is never
 * due while none was armed after a take; dumps never exceed max-dumps=.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eventlog-sink.h"
#include "writer/trigger.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const fuzz_trigger_conds[] = {
    "gc-pause>1ms,heap-live>1K,marker:A,message:,loss",
    "marker:,message:B%252C",
    "gc-pause>0ns",
    "heap-live>0",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    struct elsi_trigger_config cfg;
    char err[256];
    const char *on = fuzz_trigger_conds[data[0] % 4];
    if (elsi_trigger_parse(on, "0", "0", "3", &cfg, err, sizeof err) != 0)
        abort();
    struct elsi_trigger *t;
    if (elsi_trigger_new(&t, &cfg) != 0)
        return 0;
    data++;
    size--;
    bool header = true;
    uint64_t units = 0, now = 0;
    while (size > 0) {
        size_t n = 0;
        while (n + 1 < size && !(data[n] == 0xA5 && data[n + 1] == 0x5A))
            n++;
        if (n + 1 >= size)
            n = size;
        if (header) {
            elsi_trigger_header(t, data, n);
            header = false;
        } else {
            elsi_trigger_unit(t, data, n / 2, data + n / 2, n - n / 2, ++now);
            units++;
            elsi_trigger_loss(t, now / 3, now);
            if (elsi_trigger_due(t, now, false, NULL))
                elsi_trigger_take(t, NULL, 0);
            if (elsi_trigger_due(t, now, true, NULL))
                abort();    /* nothing can be armed between two units */
        }
        size_t skip = n + 2 <= size ? n + 2 : size;
        data += skip;
        size -= skip;
    }
    struct elsi_trigger_counts c;
    elsi_trigger_counts(t, &c);
    if (c.units != units || c.bad_units > c.units || c.dumps > cfg.max_dumps)
        abort();
    elsi_trigger_free(t);
    return 0;
}
