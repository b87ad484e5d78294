/*
 * main.c: the C main() of hello-stream, which hands the RTS the
 * eventlog-sink writer when $EVENTLOG_SINK names a sink.
 *
 * GHC 9.0.2 offers no flag to choose an EventLogWriter; the only way in is
 * RtsConfig.eventlog_writer, which a program sets from its own C main()
 * (link with -no-hs-main).  This file does only that and otherwise behaves
 * like the main() GHC generates: with EVENTLOG_SINK unset or empty the RTS
 * keeps its default writer (the file PROG.eventlog under +RTS -l).  It is
 * not responsible for checking the spec or opening the sink: the library
 * reports a bad spec on one line and exits with status 1, and opens the
 * sink when the RTS starts event logging.
 */
#include <Rts.h>

#include <eventlog-sink/ghc.h>

/* The closure of Main.main, defined by the compiled Haskell module. */
extern StgClosure ZCMain_main_closure;

int main(int argc, char *argv[])
{
    RtsConfig conf = defaultRtsConfig;
    const EventLogWriter *writer;

    /* As with -rtsopts: every +RTS option, including -l, is accepted. */
    conf.rts_opts_enabled = RtsOptsAll;
    conf.rts_opts_suggestions = true;
    conf.rts_hs_main = true;

    writer = els_ghc_writer_from_env();
    if (writer != NULL)
        conf.eventlog_writer = writer;

    return hs_main(argc, argv, &ZCMain_main_closure, conf);
}
