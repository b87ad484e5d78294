/*
 * classes.h: the +RTS -l letters of the eventlog's classes, parsed and
 * printed for els_ghc_set_classes()/els_ghc_get_classes().  Pure string
 * work, no RTS headers, so that a unit test reaches it; runtime.c applies
 * the result to the RTS.
 */
#ifndef ELSI_GHC_CLASSES_H
#define ELSI_GHC_CLASSES_H

#include <stddef.h>

/* Bit i is RUNTIME_TRACE_FLAG i of rts/EventLogControl.h (TRACE_SCHEDULER
 * = 0 ... TRACE_USER = 5), the class of ELSI_CLASS_LETTERS[i]. */
#define ELSI_CLASS_LETTERS "sgnpfu"
#define ELSI_CLASS_COUNT 6
#define ELSI_CLASSES_ALL 0x3fu
/* -la: every class but the nonmoving GC's, as GHC 9.0.2's -l has it. */
#define ELSI_CLASSES_A 0x3bu

/* Parse letters into the new set of classes, given the current one.
 *  "sgu"   exactly these classes (absolute: starts with a letter);
 *  "-s+f"  relative to current: '-' turns the next letter off, '+' (or
 *          nothing) on, as in -l;
 *  'a' stands for s g p f u (not n), as in 9.0.2's -la.
 * Returns 0, or ELS_EINVAL after writing one line into err (an unknown
 * letter, a sign with no letter, an empty string). */
int elsi_ghc_parse_classes(const char *letters, unsigned current,
                           unsigned *out, char *err, size_t err_len);

/* The letters of the classes in set, in ELSI_CLASS_LETTERS order ("" for
 * none).  ELS_EINVAL if len cannot hold them and the NUL. */
int elsi_ghc_format_classes(unsigned set, char *buf, size_t len);

#endif /* ELSI_GHC_CLASSES_H */
