/*
 * control.c: a writer's control state and the ops the writer calls
 * (writer/writer_ops.h): at open, the secrets and the control=unix: socket;
 * at the writer thread's end, detaching, so that commands still running
 * never touch a freed writer; each round, the answers of finished
 * commands; the counters and dumps commands ask for.  See control.h for
 * who calls what, docs/CONTROL.md for the protocol as clients see it.
 *
 * Not this file's job: the command table (table.c), running commands
 * (worker.c), a client's session (session.c, auth.c), the byte layout
 * (codec.c), sending stream bytes (writer/).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "control/control_impl.h"
#include "control/sha256.h"
#include "eventlog-sink.h"
#include "base/log.h"
#include "base/fdutil.h"

/*
 * Note [Control lifetimes]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * A command may outlive the writer whose client sent it: stop closes that
 * very writer from the control thread.  So the writer's side (struct
 * elsi_control) is reference-counted: the writer holds one reference,
 * each queued or running command another.  ctl->w is set while the
 * writer's thread runs and cleared under ctl->mu by the detach op
 * (control_detach()) at the thread's end, before the writer can be
 * freed; the control thread
 * touches the writer (to hand a result back and wake its thread, or to
 * read its counters) only under ctl->mu with ctl->w set.  Lock order:
 * ctl->mu before w->lock; the writer thread takes ctl->mu with no lock
 * held.  Sessions live on the writer thread only; a result names its
 * consumer by id, and one whose consumer has gone is dropped.
 */

/* Read the secret: a regular file owned by this user (or root), not
 * readable or writable by group or others, 16 to 255 bytes after one
 * trailing newline is removed. */
int elsi_ctl_read_secret(const char *opt, const char *path, uint8_t *secret,
                         size_t *secret_len, char *err, size_t err_len)
{
    *secret_len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return elsi_fail(err, err_len, ELS_EINVAL, "%s=%s: %s", opt, path,
                         strerror(errno));
    struct stat sb;
    int r = 0;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
        r = elsi_fail(err, err_len, ELS_EINVAL, "%s=%s: not a regular file",
                      opt, path);
    else if (sb.st_uid != geteuid() && sb.st_uid != 0)
        r = elsi_fail(err, err_len, ELS_EINVAL, "%s=%s: owned by uid %lu, "
                      "not by this program's user", opt, path,
                      (unsigned long)sb.st_uid);
    else if (sb.st_mode & 077)
        r = elsi_fail(err, err_len, ELS_EINVAL, "%s=%s: mode %03o lets "
                      "others read or change it (chmod 600)", opt, path,
                      (unsigned)(sb.st_mode & 0777));
    if (r != 0) {
        elsi_close(fd);
        return r;
    }
    uint8_t buf[ELSI_CTL_MAX_SECRET + 2];
    ssize_t n = read(fd, buf, sizeof buf);
    elsi_close(fd);
    if (n > 0 && buf[n - 1] == '\n')
        n--;
    if (n >= 16 && n <= (ssize_t)ELSI_CTL_MAX_SECRET) {
        memcpy(secret, buf, (size_t)n);
        *secret_len = (size_t)n;
    }
    elsi_wipe(buf, sizeof buf);
    if (*secret_len == 0)
        return elsi_fail(err, err_len, ELS_EINVAL, "%s=%s: the secret must "
                         "be 16 to %u bytes", opt, path, ELSI_CTL_MAX_SECRET);
    return 0;
}

/* The open op: see control.h. */
static int control_open(struct els_writer *w, void **state, char *err,
                        size_t err_len)
{
    const struct elsi_spec *sp = elsi_writer_spec(w);
    *state = NULL;
    int cr = elsi_ctl_collector_open(w, err, err_len);
    if (cr != 0)
        return cr;
    if (!sp->control)
        return 0;
    bool own_socket = sp->control_endpoint != NULL;
    if (sp->ops->style != ELS_SINK_LISTEN && !own_socket)
        return elsi_fail(err, err_len, ELS_EINVAL, "spec \"%s\": control=1 "
                         "needs a listening sink (unix:, tcp:)%s", sp->text,
                         sp->ops->style == ELS_SINK_RECORD
                             ? "; a ring: sink takes control=unix:PATH" : "");
    struct elsi_control *ctl = calloc(1, sizeof *ctl);
    if (ctl == NULL)
        return elsi_fail(err, err_len, ELS_ENOMEM, "out of memory");
    pthread_mutex_init(&ctl->mu, NULL);
    ctl->refs = 1;
    if (sp->control_secret != NULL) {
        int r = elsi_ctl_read_secret("control-secret", sp->control_secret,
                                     ctl->secret, &ctl->secret_len, err, err_len);
        if (r != 0) {
            pthread_mutex_destroy(&ctl->mu);
            free(ctl);
            return r;
        }
    }
    if (own_socket) {
        int r = elsi_control_endpoint_open(sp, &ctl->listener, err, err_len);
        if (r != 0) {
            pthread_mutex_destroy(&ctl->mu);
            free(ctl);
            return r;
        }
    }
    ctl->w = w;
    *state = ctl;
    const char *endpoint = elsi_writer_endpoint(w);
    char where[300];
    if (own_socket &&
        elsi_control_endpoint_name(ctl->listener, where, sizeof where) >= 0)
        elsi_log(ELS_LOG_INFO, "control enabled on %s through %s (control-only "
                 "clients): UNIX peers with uid %lu or root", endpoint,
                 where, (unsigned long)geteuid());
    else if (ctl->secret_len > 0)
        elsi_log(ELS_LOG_INFO, "control enabled on %s: UNIX peers with uid "
                 "%lu or root; TCP peers with the secret from %s",
                 endpoint, (unsigned long)geteuid(), sp->control_secret);
    else
        elsi_log(ELS_LOG_INFO, "control enabled on %s: UNIX peers with uid "
                 "%lu or root (TCP peers are refused: no control-secret=)",
                 endpoint, (unsigned long)geteuid());
    return 0;
}

/* The detach op: Note [Control lifetimes]. */
static void control_detach(struct els_writer *w, void *state)
{
    struct elsi_control *ctl = state;
    (void)w;
    if (ctl == NULL)
        return;
    pthread_mutex_lock(&ctl->mu);
    ctl->w = NULL;
    struct elsi_ctl_job *done = ctl->done;
    ctl->done = ctl->done_tail = NULL;
    pthread_mutex_unlock(&ctl->mu);
    elsi_ctl_free_jobs(done);
    elsi_control_endpoint_close(&ctl->listener);
}

/* The release op: the writer's reference goes. */
static void control_release(void *state)
{
    struct elsi_control *ctl = state;
    if (ctl == NULL)
        return;
    elsi_control_endpoint_close(&ctl->listener);   /* if detach did not */
    elsi_ctl_unref(ctl);
}

void elsi_ctl_unref(struct elsi_control *ctl)
{
    pthread_mutex_lock(&ctl->mu);
    bool last = --ctl->refs == 0;
    struct elsi_ctl_job *done = last ? ctl->done : NULL;
    pthread_mutex_unlock(&ctl->mu);
    if (last) {
        elsi_ctl_free_jobs(done);
        pthread_mutex_destroy(&ctl->mu);
        elsi_wipe(ctl->secret, sizeof ctl->secret);
        free(ctl);
    }
}

int elsi_control_writer_dump(struct elsi_control *ctl, char *name,
                             size_t name_len)
{
    if (ctl == NULL)
        return ELS_ESTOPPED;
    pthread_mutex_lock(&ctl->mu);
    struct els_writer *w = ctl->w;
    /* Counted in flight before ctl->mu is let go: w stays until this
     * call leaves (Note [Control lifetimes]). */
    int r = w == NULL ? ELS_ESTOPPED : elsi_writer_dump_enter(w);
    if (name_len > 0)
        name[0] = '\0';
    if (r == ELS_EINVAL)
        snprintf(name, name_len, "%s keeps no recording: ring-dump is for a "
                 "ring: sink, through its control=unix:PATH socket",
                 elsi_writer_endpoint(w));
    pthread_mutex_unlock(&ctl->mu);
    return r != 0 ? r : elsi_writer_dump_wait(w, name, name_len);
}

int elsi_control_writer_stats(struct elsi_control *ctl, struct els_stats *st,
                              char *endpoint, size_t endpoint_len)
{
    int r = ELS_ESTOPPED;
    pthread_mutex_lock(&ctl->mu);
    if (ctl->w != NULL) {
        r = els_writer_stats(ctl->w, st);
        if (endpoint != NULL)
            snprintf(endpoint, endpoint_len, "%s", elsi_writer_endpoint(ctl->w));
    }
    pthread_mutex_unlock(&ctl->mu);
    return r;
}

/* The tick op: hand finished commands' answers to their sessions. */
static void control_tick(struct els_writer *w, void *state)
{
    struct elsi_control *ctl = state;
    if (ctl == NULL)
        return;
    pthread_mutex_lock(&ctl->mu);
    struct elsi_ctl_job *done = ctl->done;
    ctl->done = ctl->done_tail = NULL;
    pthread_mutex_unlock(&ctl->mu);
    while (done != NULL) {
        struct elsi_ctl_job *j = done;
        done = j->next;
        struct elsi_consumer *c = elsi_consumer_find(w, j->consumer_id);
        struct elsi_ctl_session *s = c != NULL ? elsi_consumer_session(c)
                                               : NULL;
        if (s != NULL) {
            s->in_flight--;
            elsi_ctl_answer(w, c, ELSI_CTL_KIND_COMMAND_ANSWER, j->request_id, j->es,
                            j->label, j->status, j->out);
        }
        free(j);
    }
}

// ---------------------------------------------------------------------------
// The ops the writer calls (writer/writer_ops.h)
// ---------------------------------------------------------------------------

static int control_listen_fd(void *state)
{
    struct elsi_control *ctl = state;
    return ctl != NULL ? elsi_control_endpoint_fd(ctl->listener) : -1;
}

static int control_endpoint(void *state, char *buf, size_t len)
{
    struct elsi_control *ctl = state;
    return ctl != NULL && ctl->listener != NULL
           ? elsi_control_endpoint_name(ctl->listener, buf, len) : -1;
}

static int control_accept(void *state, int *fd)
{
    struct elsi_control *ctl = state;
    return elsi_control_endpoint_accept(ctl->listener, fd);
}

static int control_attach(struct els_writer *w, void *state,
                          struct elsi_consumer *c, enum elsi_attach_kind kind,
                          void **slot)
{
    (void)state;
    if (kind == ELSI_ATTACH_ENDPOINT)
        return elsi_ctl_endpoint_session(w, c, slot);
    elsi_ctl_collector_challenge(w, c, slot);
    return 0;
}

const struct elsi_writer_ops elsi_control_ops = {
    .struct_size = sizeof(struct elsi_writer_ops),
    .open = control_open,
    .listen_fd = control_listen_fd,
    .accept = control_accept,
    .endpoint = control_endpoint,
    .attach = control_attach,
    .input = elsi_ctl_input,
    .serve_only = elsi_ctl_serve_only,
    .due = elsi_ctl_due,
    .session_free = elsi_ctl_session_free,
    .tick = control_tick,
    .detach = control_detach,
    .release = control_release,
};
