/*
 * worker.c: the control thread, one per process, which runs commands off
 * the writer thread (an RTS call may stop every capability while the
 * writer must keep delivering), and hands each result back to its
 * writer (Note [Control lifetimes], control.c); and the fork handlers
 * that keep its queue and the command table usable in a child.
 *
 * Not this file's job: finding the command (table.c), answering the
 * client (session.c).
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "control/control_impl.h"
#include "eventlog-sink.h"
#include "base/log.h"

static pthread_mutex_t queue_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_cv = PTHREAD_COND_INITIALIZER;
static struct elsi_ctl_job *queue_head, *queue_tail;
static unsigned queue_len;
static pid_t worker_pid;            /* the process whose thread runs */

void elsi_ctl_free_jobs(struct elsi_ctl_job *j)
{
    while (j != NULL) {
        struct elsi_ctl_job *next = j->next;
        free(j);
        j = next;
    }
}

static void run_job(struct elsi_ctl_job *j)
{
    j->out[0] = '\0';
    if (j->cmd.builtin != NULL)
        j->status = j->cmd.builtin(j->ctl, j->args, j->out, sizeof j->out);
    else
        j->status = j->cmd.user_fn(j->cmd.user, j->args, j->out, sizeof j->out);
    if (j->status > 0)
        j->status = ELS_EINVAL;     /* not a code: say it failed */
    j->out[sizeof j->out - 1] = '\0';
}

static void *worker_main(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&queue_mu);
        while (queue_head == NULL)
            pthread_cond_wait(&queue_cv, &queue_mu);
        struct elsi_ctl_job *j = queue_head;
        queue_head = j->next;
        if (queue_head == NULL)
            queue_tail = NULL;
        queue_len--;
        pthread_mutex_unlock(&queue_mu);

        j->next = NULL;
        run_job(j);

        struct elsi_control *ctl = j->ctl;
        pthread_mutex_lock(&ctl->mu);
        if (ctl->w != NULL && !(j->cmd.flags & ELSI_CTL_ANSWER_FIRST)) {
            if (ctl->done_tail != NULL)
                ctl->done_tail->next = j;
            else
                ctl->done = j;
            ctl->done_tail = j;
            elsi_writer_send_wake(ctl->w);
            j = NULL;
        }
        pthread_mutex_unlock(&ctl->mu);
        free(j);
        elsi_ctl_unref(ctl);
    }
    return NULL;
}

/* Queue j for the control thread, starting it in this process if needed.
 * 0 or ELS_EBUSY (queue full) or the pthread_create error. */
int elsi_ctl_worker_submit(struct elsi_ctl_job *j)
{
    pthread_mutex_lock(&queue_mu);
    int r = 0;
    if (worker_pid != getpid()) {
        /* First use, or a forked child (control_atfork_child). */
        pthread_t t;
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        r = -pthread_create(&t, NULL, worker_main, NULL);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r == 0) {
            pthread_detach(t);
            worker_pid = getpid();
        }
    }
    if (r == 0 && queue_len >= CTL_QUEUE_MAX)
        r = ELS_EBUSY;
    if (r == 0) {
        if (queue_tail != NULL)
            queue_tail->next = j;
        else
            queue_head = j;
        queue_tail = j;
        queue_len++;
        pthread_cond_signal(&queue_cv);
    }
    pthread_mutex_unlock(&queue_mu);
    return r;
}

/* fork(): the child would get these locks in whatever state another
 * thread held them, and has no control thread; the forking thread takes
 * them around fork and the child empties the queue (the parent's commands
 * are the parent's) and starts its own thread when it needs one. */
static void control_atfork_prepare(void)
{
    elsi_ctl_table_lock();
    pthread_mutex_lock(&queue_mu);
}

static void control_atfork_parent(void)
{
    pthread_mutex_unlock(&queue_mu);
    elsi_ctl_table_unlock();
}

static void control_atfork_child(void)
{
    /* The parent's control thread may have been waiting on queue_cv: no
     * such waiter exists here. */
    pthread_cond_init(&queue_cv, NULL);
    queue_head = queue_tail = NULL;
    queue_len = 0;
    worker_pid = 0;
    pthread_mutex_unlock(&queue_mu);
    elsi_ctl_table_unlock();
}

__attribute__((constructor)) static void control_fork_handlers(void)
{
    pthread_atfork(control_atfork_prepare, control_atfork_parent,
                   control_atfork_child);
}
