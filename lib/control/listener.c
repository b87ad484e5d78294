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
 * (control.c), accepting and polling (deliver/loop.c).
 */
#include <stdio.h>

#include "control/control.h"
#include "deliver/writer_impl.h"
#include "eventlog-sink.h"
#include "log.h"
#include "sinks/sinks.h"

int elsi_control_endpoint_open(struct els_writer *w, char *err, size_t err_len)
{
    const struct els_sink_ops *unix_ops = &elsi_sink_unix;
    struct els_sink_args args = {
        .scheme = unix_ops->scheme,
        .address = w->spec.control_endpoint,
        .spec = w->spec.text,
        .err = err,
        .err_len = err_len,
    };
    void *listener = NULL;
    int r = unix_ops->open(&listener, &args);
    if (r != 0) {
        if (err != NULL && err_len > 0 && err[0] == '\0')
            elsi_fail(err, err_len, r, "control=unix:%s: %s",
                      w->spec.control_endpoint, els_strerror(r));
        return r;
    }
    w->ctl_listener = listener;
    return 0;
}

int elsi_control_endpoint_fd(struct els_writer *w)
{
    return w->ctl_listener != NULL ? elsi_sink_unix.listen_fd(w->ctl_listener)
                                   : -1;
}

int elsi_control_endpoint_accept(struct els_writer *w, int *fd)
{
    return elsi_sink_unix.accept(w->ctl_listener, fd);
}

int elsi_control_endpoint_name(struct els_writer *w, char *buf, size_t len)
{
    return elsi_sink_unix.endpoint(w->ctl_listener, buf, len);
}

void elsi_control_endpoint_close(struct els_writer *w)
{
    if (w->ctl_listener == NULL)
        return;
    elsi_sink_unix.close(w->ctl_listener);
    w->ctl_listener = NULL;
}
