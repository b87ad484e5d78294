/*
 * pauses.h: a window's longest GC pauses (pauses.c).
 *
 * kind=pauses (t0, t1, n: at most n, default 10, max 1000):
 *   {"t0":T,"t1":T,"pauses":[[START,END,CAP],...],"exact":true|false}
 *   the longest pauses whose GC_END falls in the window, longest first
 *   (START..END: GC_START..GC_END on HEC CAP), overlapping ones across
 *   HECs listed once (the longest); exact: no longer pause can be left
 *   out (see Note [Longest pauses]).
 */
#ifndef ELS_TL_PAUSES_H
#define ELS_TL_PAUSES_H

#include <stdint.h>

#include "monitor/strbuf.h"

struct tl_index;
/* 0, or -1 out of memory. */
int tl_pauses(struct tl_index *ix, uint64_t t0, uint64_t t1, unsigned n,
              struct strbuf *out);

#endif /* ELS_TL_PAUSES_H */
