/*
 * listener.c: the control endpoint of a sink that takes no connections
 * (control=unix:PATH on a ring: sink, docs/CONTROL.md): a UNIX socket of
 * its own on which the writer thread accepts control-only clients.  The
 * socket file is the unix: sink's: created through that sink's open()
 * (stale-socket and symlink handling, mode 0600 from the first moment,
 * path length checked) and removed by its close() if still ours, so the
 * two cannot drift apart.
 *
 * Not this file's job: what a client may do and what it is answered
 * (session.c, auth.c), accepting and polling (writer/loop.c).
 */
#include <stdio.h>

#include "control/control.h"
#include "eventlog-sink.h"
#include "base/log.h"
#include "sinks/sinks.h"
#include "sinks/spec.h"

int elsi_control_endpoint_open(const struct elsi_spec *sp, void **listener,
                               char *err, size_t err_len)
{
    const struct els_sink_ops *unix_ops = &elsi_sink_unix;
    struct els_sink_args args = {
        .scheme = unix_ops->scheme,
        .address = sp->control_endpoint,
        .spec = sp->text,
        .err = err,
        .err_len = err_len,
    };
    *listener = NULL;
    int r = unix_ops->open(listener, &args);
    if (r != 0) {
        if (err != NULL && err_len > 0 && err[0] == '\0')
            elsi_fail(err, err_len, r, "control=unix:%s: %s",
                      sp->control_endpoint, els_strerror(r));
        *listener = NULL;
        return r;
    }
    return 0;
}

int elsi_control_endpoint_fd(void *listener)
{
    return listener != NULL ? elsi_sink_unix.listen_fd(listener) : -1;
}

int elsi_control_endpoint_accept(void *listener, int *fd)
{
    return elsi_sink_unix.accept(listener, fd);
}

int elsi_control_endpoint_name(void *listener, char *buf, size_t len)
{
    return elsi_sink_unix.endpoint(listener, buf, len);
}

void elsi_control_endpoint_close(void **listener)
{
    if (*listener == NULL)
        return;
    elsi_sink_unix.close(*listener);
    *listener = NULL;
}
