/*
 * main.c: the other way to register a custom sink: from a C main, before
 * hs_init() parses +RTS --eventlog-sink.  For a program that has a C main
 * anyway; build rotate.c with -DROTATE_NO_CONSTRUCTOR so that this call is
 * the only registration, and link with -no-hs-main:
 *
 *   ghc-eventlog-sink -threaded -eventlog -no-hs-main Main.hs main.c \
 *       rotate.c -optc-DROTATE_NO_CONSTRUCTOR -leventlog-sink
 *
 * Registering later, from Haskell code, is too late for +RTS: the RTS has
 * refused the unknown scheme by then.  Not its job: choosing the sink (the
 * command line does) or anything the program does once it runs.
 */
#include <stdio.h>

#include <Rts.h>
#include <eventlog-sink.h>

#include "rotate.h"

extern StgClosure ZCMain_main_closure;

int main(int argc, char *argv[])
{
    int rc = rotate_sink_register();
    if (rc != 0) {
        fprintf(stderr, "%s: cannot register the rotate: eventlog sink: %s\n",
                argv[0], els_strerror(rc));
        return 1;
    }
    RtsConfig conf = defaultRtsConfig;
    conf.rts_opts_enabled = RtsOptsAll;
    return hs_main(argc, argv, &ZCMain_main_closure, conf);
}
