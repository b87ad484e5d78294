/*
 * rotate.h: the "rotate:" eventlog sink, an example of a custom sink
 * (see rotate.c and docs/CUSTOM-SINKS.md).
 *
 *   rotate:DIR/PREFIX[?size=SIZE][&keep=N][&mode=OCTAL]
 *
 * writes the eventlog into DIR/PREFIX.000001.eventlog,
 * DIR/PREFIX.000002.eventlog, ... starting a new file before one would grow
 * past SIZE (digits with an optional K, M or G, binary multiples; default
 * 256M) and removing the oldest files of that PREFIX in DIR while more than
 * N remain (default: none is removed).  Files are created with mode OCTAL
 * (default 0600, less the umask).  The common options (buffer, policy,
 * wait, linger) apply as to any sink.
 */
#ifndef ROTATE_SINK_H
#define ROTATE_SINK_H

#ifdef __cplusplus
extern "C" {
#endif

/* Register the scheme with libeventlog-sink: 0 or a negative code (see
 * els_sink_register()).  rotate.c calls it from an ELF constructor, so a
 * program that links rotate.c needs no call of its own; a C main may call
 * it too, before hs_init() (ELS_EEXIST then says it is registered
 * already), or alone when rotate.c is built with -DROTATE_NO_CONSTRUCTOR. */
int rotate_sink_register(void);

#ifdef __cplusplus
}
#endif

#endif /* ROTATE_SINK_H */
