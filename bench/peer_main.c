/*
 * peer_main.c: the C main of the peer comparison's program (bench_app.sh
 * section "peer"): bench/App.hs linked with well-typed's eventlog-socket,
 * started as that library's own C-main examples do.  With
 * GHC_EVENTLOG_UNIX_PATH set, the RTS starts with eventlog-socket's writer
 * (and, with GHC_EVENTLOG_WAIT, waits for a client first); without it, the
 * program runs with no eventlog, so the same binary gives the peer's
 * baseline.
 *
 * Not this file's job: anything of this project's library (the binary
 * does not link it); the peer's sources are never part of this tree,
 * bench_app.sh compiles them from the directory it is given.
 */
#include <Rts.h>
#include <eventlog_socket.h>
#include <string.h>

extern StgClosure ZCMain_main_closure;

int main(int argc, char *argv[])
{
    RtsConfig conf = defaultRtsConfig;
    conf.rts_opts_enabled = RtsOptsAll;

    EventlogSocketAddr addr = {0};
    EventlogSocketOpts opts = {0};
    EventlogSocketStatus st = eventlog_socket_from_env(&addr, &opts);
    if (st.ess_status_code == EVENTLOG_SOCKET_OK) {
        conf.rts_opts = "-l";   /* as the peer's examples: binary eventlog */
        eventlog_socket_wrap_hs_main(argc, argv, conf, &ZCMain_main_closure,
                                     &addr, &opts);
        return 1;               /* not reached: it exits */
    }
    return hs_main(argc, argv, &ZCMain_main_closure, conf);
}
