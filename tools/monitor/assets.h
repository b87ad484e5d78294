/*
 * assets.h: the web page `eventlog-sink serve` ships (tools/monitor/web),
 * embedded into the binary at build time by embed.sh.
 */
#ifndef ELS_MON_ASSETS_H
#define ELS_MON_ASSETS_H

#include <stddef.h>

struct mon_asset {
    const char *path;           /* "/index.html" */
    const char *type;           /* Content-Type */
    const unsigned char *data;
    size_t len;
};

extern const struct mon_asset mon_assets[];
extern const unsigned mon_n_assets;

#endif /* ELS_MON_ASSETS_H */
