/*
 * control.c: the control channel's server side: the command table, the
 * control thread that runs commands, and the sessions of the clients that
 * send them (authorisation, answers).  See control.h for who calls what,
 * docs/CONTROL.md for the protocol as clients see it.
 *
 * Not this file's job: the byte layout (codec.c), what the GHC commands do
 * (lib/ghc/commands.c), sending stream bytes (deliver/consumer.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "control/codec.h"
#include "control/control.h"
#include "control/sha256.h"
#include "deliver/hooks.h"
#include "eventlog-sink.h"
#include "log.h"
#include "sinks/fdutil.h"

/*
 * Note [Control lifetimes]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * A command may outlive the writer whose client sent it: stop closes that
 * very writer from the control thread.  So the writer's side (struct
 * elsi_control) is reference-counted: the writer holds one reference,
 * each queued or running command another.  ctl->w is set while the
 * writer's thread runs and cleared under ctl->mu by elsi_control_detach()
 * at the thread's end, before the writer can be freed; the control thread
 * touches the writer (to hand a result back and wake its thread, or to
 * read its counters) only under ctl->mu with ctl->w set.  Lock order:
 * ctl->mu before w->lock; the writer thread takes ctl->mu with no lock
 * held.  Sessions live on the writer thread only; a result names its
 * consumer by id, and one whose consumer has gone is dropped.
 */

// ---------------------------------------------------------------------------
// The command table
// ---------------------------------------------------------------------------

#define CTL_MAX_COMMANDS 320
#define CTL_MAX_USER_COMMANDS 256
#define CTL_NAME_MAX 31

struct ctl_command {
    char ns[256];
    unsigned id;                        /* 0: text name only */
    char name[CTL_NAME_MAX + 1];        /* "" for id-only commands */
    const char *help;
    elsi_ctl_builtin_fn builtin;
    els_control_fn user_fn;
    void *user;
    unsigned flags;
};

static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;
static struct ctl_command table[CTL_MAX_COMMANDS];
static size_t table_len, table_user;

static bool name_valid(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > CTL_NAME_MAX || name[0] < 'a' || name[0] > 'z')
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
            return false;
    }
    return true;
}

static bool ns_valid(const char *ns)
{
    size_t n = strlen(ns);
    if (n == 0 || n > 255)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)ns[i] <= 0x20 || ns[i] == 0x7f)
            return false;
    return true;
}

/* table_mu held. */
static struct ctl_command *find_id(const char *ns, size_t ns_len, unsigned id)
{
    for (size_t i = 0; i < table_len; i++)
        if (table[i].id == id && id != 0 && strlen(table[i].ns) == ns_len &&
            memcmp(table[i].ns, ns, ns_len) == 0)
            return &table[i];
    return NULL;
}

static struct ctl_command *find_name(const char *name)
{
    for (size_t i = 0; i < table_len; i++)
        if (table[i].name[0] != '\0' && strcmp(table[i].name, name) == 0)
            return &table[i];
    return NULL;
}

static int table_add(const struct ctl_command *cmd, bool user)
{
    pthread_mutex_lock(&table_mu);
    int r = 0;
    if ((cmd->id != 0 && find_id(cmd->ns, strlen(cmd->ns), cmd->id)) ||
        (cmd->name[0] != '\0' && find_name(cmd->name)))
        r = ELS_EEXIST;
    else if (table_len == CTL_MAX_COMMANDS ||
             (user && table_user == CTL_MAX_USER_COMMANDS))
        r = ELS_ENOMEM;
    else {
        table[table_len++] = *cmd;
        table_user += user;
    }
    pthread_mutex_unlock(&table_mu);
    return r;
}

int elsi_control_register_builtin(const char *ns, unsigned id,
                                  const char *name, const char *help,
                                  elsi_ctl_builtin_fn fn, unsigned flags)
{
    struct ctl_command cmd = { .id = id, .help = help, .builtin = fn,
                               .flags = flags };
    snprintf(cmd.ns, sizeof cmd.ns, "%s", ns);
    snprintf(cmd.name, sizeof cmd.name, "%s", name != NULL ? name : "");
    return table_add(&cmd, false);
}

int els_control_register(const char *ns, unsigned id, const char *name,
                         els_control_fn fn, void *user)
{
    if (ns == NULL || fn == NULL || !ns_valid(ns) || id < 1 || id > 255 ||
        strcmp(ns, ELSI_CTL_NAMESPACE) == 0 ||
        strcmp(ns, ELSI_ES_NAMESPACE) == 0 ||
        (name != NULL && !name_valid(name)))
        return ELS_EINVAL;
    struct ctl_command cmd = { .id = id, .user_fn = fn, .user = user,
                               .help = "a command of the program's" };
    snprintf(cmd.ns, sizeof cmd.ns, "%s", ns);
    snprintf(cmd.name, sizeof cmd.name, "%s", name != NULL ? name : "");
    return table_add(&cmd, true);
}

// ---------------------------------------------------------------------------
// The writer's side
// ---------------------------------------------------------------------------

struct ctl_job;

struct elsi_control {
    pthread_mutex_t mu;
    unsigned refs;                  /* Note [Control lifetimes] */
    struct els_writer *w;           /* NULL once detached */
    struct ctl_job *done, *done_tail;
    uint8_t secret[ELSI_CTL_MAX_SECRET];
    size_t secret_len;              /* 0: no secret (UNIX peers only) */
    /* control=unix:PATH: the unix: sink state of its socket
     * (listener.c); NULL otherwise.  Writer thread, then the freeing
     * thread. */
    void *listener;
};

/* How long a client of a control=unix: socket has for its control-only
 * hello (Note [Control-only hello deadline]); a variable so that a test
 * can shorten it. */
unsigned elsi_ctl_hello_deadline_ms = 2000u;

/* Bounds that keep a client from costing the program more than a little. */
#define CTL_SESSION_IN_FLIGHT 4u        /* commands queued or running */
#define CTL_QUEUE_MAX 64u               /* all sessions together */
#define CTL_OUT_MAX (64u * 1024)        /* unread answers of one session */
#define CTL_READ_BYTES 4096u            /* input taken per wake-up */

/*
 * Note [Control memory]
 * ~~~~~~~~~~~~~~~~~~~~~
 * A control session holds memory of its own: the session (its decoder
 * keeps up to one 1024-byte frame), unread answer frames of a
 * control-only client (up to CTL_OUT_MAX) and in-band answers waiting
 * for a stream consumer to read up to them (up to CTL_OUT_MAX).  All of
 * it counts against consumer-memory=, with the stream consumers' private
 * bytes (Note [Consumer memory]), through elsi_consumer_memory_take():
 * the session when it is made, the answer buffer by its capacity (freed
 * once sent, so an idle session holds none), each note by its size.  So
 * 64 clients that send commands and read nothing hold at most
 * consumer-memory= between them, not 64 x 128 KiB.  A session whose
 * memory does not fit is closed, counted with the consumers closed for
 * memory (consumers_dropped_memory) and logged: its client sent more than
 * it read, and the program's memory is not the place to wait for it.  Its
 * share is CTL_OUT_MAX of each kind while the whole bound has room, less
 * when other consumers hold the rest.  The control thread's queue is
 * bounded separately (CTL_QUEUE_MAX jobs for the whole process).
 */

struct elsi_ctl_session {
    struct elsi_ctl_decoder dec;
    bool checked;                   /* peer looked at */
    bool unix_peer, peer_ok;        /* UNIX peer with our uid or root */
    bool inet_peer, secret_ok;      /* TCP peer that proved the secret */
    /* Note [Challenges]: the one open challenge, and what it binds. */
    bool challenged;
    bool locked;                    /* a wrong proof: no more attempts */
    uint8_t challenge[ELSI_CTL_CHALLENGE_BYTES];
    uint8_t hello_nonce[ELSI_CTL_NONCE_BYTES];
    unsigned hello_flags;
    unsigned version;               /* 0 before a hello; 1: a v1 client,
                                     * answered in its framing */
    unsigned long peer_uid;
    bool control_only;
    /* On a control=unix: socket: answered in frames only, and refused
     * unless its first message is a control-only hello. */
    bool endpoint_only;
    unsigned in_flight;
    uint8_t *out;                   /* control-only: answer frames */
    size_t out_len, out_off, out_cap;
    /* On a control=unix: socket, the client is refused at this time
     * (CLOCK_MONOTONIC ms) unless its control-only hello came first:
     * Note [Control-only hello deadline]. */
    uint64_t hello_by_ms;
    bool refused;                   /* told so; closed once that is sent */
    size_t charged;                 /* Note [Control memory] */
    /* A connect-out collector's proof (Note [Collector proof]). */
    bool collector, collector_done;
    uint8_t collector_want[ELSI_CTL_PROOF_BYTES];
    uint8_t collector_got[ELSI_CTL_HEADER_BYTES + ELSI_CTL_PROOF_BYTES];
    size_t collector_got_len;
    struct ctl_note *notes, *notes_tail;    /* in-band answers */
    size_t notes_bytes;             /* their text, at most CTL_OUT_MAX */
    struct elsi_ctl_msg msg;        /* the message being handled */
    bool ended;                     /* the stream's DATA_END is unit */
    uint64_t end_seq;
};

struct ctl_note {
    struct ctl_note *next;
    uint64_t after_seq;             /* due once units before it are sent */
    char text[ELSI_CTL_MAX_ANSWER_TEXT + 64];
};

static void ctl_unref(struct elsi_control *ctl);

/* Read the secret: a regular file owned by this user (or root), not
 * readable or writable by group or others, 16 to 255 bytes after one
 * trailing newline is removed. */
static int read_secret(const char *opt, const char *path, uint8_t *secret,
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

static int collector_open(struct els_writer *w, char *err, size_t err_len);

/* The open hook: see control.h. */
static int control_open(struct els_writer *w, void **state, char *err,
                        size_t err_len)
{
    const struct elsi_spec *sp = elsi_writer_spec(w);
    *state = NULL;
    int cr = collector_open(w, err, err_len);
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
        int r = read_secret("control-secret", sp->control_secret,
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

static void free_jobs(struct ctl_job *j);

/* The detach hook: Note [Control lifetimes]. */
static void control_detach(struct els_writer *w, void *state)
{
    struct elsi_control *ctl = state;
    (void)w;
    if (ctl == NULL)
        return;
    pthread_mutex_lock(&ctl->mu);
    ctl->w = NULL;
    struct ctl_job *done = ctl->done;
    ctl->done = ctl->done_tail = NULL;
    pthread_mutex_unlock(&ctl->mu);
    free_jobs(done);
    elsi_control_endpoint_close(&ctl->listener);
}

/* The release hook: the writer's reference goes. */
static void control_release(void *state)
{
    struct elsi_control *ctl = state;
    if (ctl == NULL)
        return;
    elsi_control_endpoint_close(&ctl->listener);   /* if detach did not */
    ctl_unref(ctl);
}

static void ctl_unref(struct elsi_control *ctl)
{
    pthread_mutex_lock(&ctl->mu);
    bool last = --ctl->refs == 0;
    struct ctl_job *done = last ? ctl->done : NULL;
    pthread_mutex_unlock(&ctl->mu);
    if (last) {
        free_jobs(done);
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

// ---------------------------------------------------------------------------
// The control thread
// ---------------------------------------------------------------------------

struct ctl_job {
    struct ctl_job *next;
    struct elsi_control *ctl;
    uint64_t consumer_id;
    uint32_t request_id;
    bool es;                        /* an eventlog-socket message */
    struct ctl_command cmd;         /* a copy: the table only grows */
    char label[300];                /* what the answer repeats */
    char args[ELSI_CTL_MAX_PAYLOAD + 1];
    int status;
    char out[ELSI_CTL_MAX_ANSWER_TEXT];
};

static pthread_mutex_t queue_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_cv = PTHREAD_COND_INITIALIZER;
static struct ctl_job *queue_head, *queue_tail;
static unsigned queue_len;
static pid_t worker_pid;            /* the process whose thread runs */

static void free_jobs(struct ctl_job *j)
{
    while (j != NULL) {
        struct ctl_job *next = j->next;
        free(j);
        j = next;
    }
}

static void run_job(struct ctl_job *j)
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
        struct ctl_job *j = queue_head;
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
        ctl_unref(ctl);
    }
    return NULL;
}

/* Queue j for the control thread, starting it in this process if needed.
 * 0 or ELS_EBUSY (queue full) or the pthread_create error. */
static int worker_submit(struct ctl_job *j)
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

// ---------------------------------------------------------------------------
// Sessions (writer thread only)
// ---------------------------------------------------------------------------

/* The session_free hook. */
static void control_session_free(struct els_writer *w, void *session)
{
    struct elsi_ctl_session *s = session;
    if (s == NULL)
        return;
    free(s->out);
    for (struct ctl_note *n = s->notes; n != NULL;) {
        struct ctl_note *next = n->next;
        free(n);
        n = next;
    }
    elsi_consumer_memory_give(w, s->charged);
    elsi_wipe(s->collector_want, sizeof s->collector_want);
    free(s);
}

/* A new session in a consumer's slot, its own size counted (Note
 * [Control memory]): 0, ELS_ENOMEM, or -ENOBUFS over consumer-memory=. */
static int session_new(struct els_writer *w, void **slot)
{
    struct elsi_ctl_session *s;
    if (!elsi_consumer_memory_take(w, sizeof *s))
        return -ENOBUFS;
    s = calloc(1, sizeof *s);
    if (s == NULL) {
        elsi_consumer_memory_give(w, sizeof *s);
        return ELS_ENOMEM;
    }
    s->charged = sizeof *s;
    elsi_ctl_decoder_init(&s->dec);
    *slot = s;
    return 0;
}

/*
 * Note [Control-only hello deadline]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A client of a control=unix: socket gets nothing but answers, so one that
 * has not said it is a control-only client is waiting for something this
 * socket never sends (a stream: `eventlog-sink recv unix:CTL`), or is
 * holding one of the max-consumers= places on purpose.  Its first message
 * decides (the refusal in elsi_control_input()), and so does the clock:
 * a client whose control-only hello is not complete CTL_HELLO_DEADLINE_MS
 * after it was accepted, whatever it sent meanwhile (nothing, a partial
 * frame, bytes one at a time), gets the same one answer frame and is
 * closed.  The writer thread wakes for the deadline through the
 * consumer's retry timer (retry_at_ms, which the poll loop already
 * sleeps on; a control-only consumer has no other use for it).  On a
 * control=1 socket no deadline applies: a client that says nothing is a
 * stream consumer, which is what that socket serves.
 */
static int endpoint_session(struct els_writer *w, struct consumer *c,
                            void **slot)
{
    int r = session_new(w, slot);
    if (r != 0)
        return r;
    struct elsi_ctl_session *s = *slot;
    s->endpoint_only = true;
    s->hello_by_ms = elsi_now_ms() + elsi_ctl_hello_deadline_ms;
    elsi_consumer_wake_at(c, s->hello_by_ms);
    return 0;
}

static void session_kill(struct els_writer *w, struct consumer *c,
                         const char *why)
{
    if (!elsi_consumer_dead(c))
        elsi_log_limited(elsi_writer_consumer_log(w), ELSI_LOG_INTERVAL_MS, ELS_LOG_WARN,
                         "%s: control client %" PRIu64 " closed: %s",
                         elsi_writer_endpoint(w), elsi_consumer_id(c), why);
    elsi_consumer_close(c);
}

/* Note [Control memory]: a session that does not fit is closed. */
static void session_over_memory(struct els_writer *w, struct consumer *c,
                                const char *what)
{
    if (!elsi_consumer_dead(c))
        elsi_consumer_over_memory(w, c, what);
    elsi_consumer_close(c);
}

/* Give back the answer buffer once everything in it is sent. */
static void out_drop(struct els_writer *w, struct elsi_ctl_session *s)
{
    elsi_consumer_memory_give(w, s->out_cap);
    s->charged -= s->out_cap;
    free(s->out);
    s->out = NULL;
    s->out_len = s->out_off = s->out_cap = 0;
}

static void out_append(struct els_writer *w, struct consumer *c,
                       const uint8_t *p, size_t n)
{
    struct elsi_ctl_session *s = elsi_consumer_session(c);
    if (s->out_off > 0 && s->out_off == s->out_len)
        s->out_off = s->out_len = 0;
    if (s->out_len - s->out_off + n > CTL_OUT_MAX) {
        session_kill(w, c, "it does not read its answers");
        return;
    }
    if (s->out_off > 0) {
        memmove(s->out, s->out + s->out_off, s->out_len - s->out_off);
        s->out_len -= s->out_off;
        s->out_off = 0;
    }
    size_t need = s->out_len + n;
    if (need > s->out_cap) {
        size_t cap = s->out_cap ? s->out_cap : 1024;
        while (cap < need)
            cap *= 2;
        if (cap > CTL_OUT_MAX)
            cap = CTL_OUT_MAX;
        if (!elsi_consumer_memory_take(w, cap - s->out_cap)) {
            session_over_memory(w, c, "its unread answers");
            return;
        }
        uint8_t *grown = realloc(s->out, cap);
        if (grown == NULL) {
            elsi_consumer_memory_give(w, cap - s->out_cap);
            session_kill(w, c, "out of memory");
            return;
        }
        s->charged += cap - s->out_cap;
        s->out = grown;
        s->out_cap = cap;
    }
    memcpy(s->out + s->out_len, p, n);
    s->out_len += n;
}

/* Answer on c: a frame for a control-only client, else an in-band note
 * due after every unit committed so far. */
static void answer(struct els_writer *w, struct consumer *c, unsigned kind,
                   uint32_t id, bool es, const char *label, int status,
                   const char *text)
{
    struct elsi_ctl_session *s = elsi_consumer_session(c);
    if (elsi_consumer_dead(c))
        return;
    if (s->control_only || s->endpoint_only) {
        uint8_t frame[ELSI_CTL_ANSWER_HEADER_BYTES + ELSI_CTL_MAX_ANSWER_TEXT];
        char full[ELSI_CTL_MAX_ANSWER_TEXT];
        if (status != 0)
            snprintf(full, sizeof full, "%s: %s", els_err_name(status),
                     text[0] ? text : els_strerror(status));
        else
            snprintf(full, sizeof full, "%s", text);
        size_t n = elsi_ctl_encode_answer(frame, sizeof frame,
                                          s->version != 0 ? s->version
                                                          : ELSI_CTL_VERSION,
                                          kind, id, status, full);
        out_append(w, c, frame, n);
        return;
    }
    if (s->notes_bytes + sizeof(struct ctl_note) > CTL_OUT_MAX) {
        /* Its answers wait for it to read the stream up to them. */
        session_kill(w, c, "it sends commands and does not read its stream");
        return;
    }
    if (!elsi_consumer_memory_take(w, sizeof(struct ctl_note))) {
        session_over_memory(w, c, "its in-band answers");
        return;
    }
    struct ctl_note *note = malloc(sizeof *note);
    if (note == NULL) {
        elsi_consumer_memory_give(w, sizeof *note);
        session_kill(w, c, "out of memory");
        return;
    }
    s->charged += sizeof *note;
    note->next = NULL;
    note->after_seq = elsi_writer_committed(w);
    char idtext[24] = "";
    if (!es)
        snprintf(idtext, sizeof idtext, " #%" PRIu32, id);
    if (status != 0)
        snprintf(note->text, sizeof note->text, "eventlog-sink control%s %s: "
                 "error %s: %s", idtext, label, els_err_name(status),
                 text[0] ? text : els_strerror(status));
    else
        snprintf(note->text, sizeof note->text, "eventlog-sink control%s %s: "
                 "ok%s%s", idtext, label, text[0] ? ": " : "", text);
    s->notes_bytes += sizeof *note;
    if (s->notes_tail != NULL)
        s->notes_tail->next = note;
    else
        s->notes = note;
    s->notes_tail = note;
}

/* The one answer a client of a control=unix: socket gets when it is not
 * a control-only client (docs/CONTROL.md); it is closed once that is
 * sent, and nothing it says is read any more. */
static void refuse_not_control_only(struct els_writer *w, struct consumer *c,
                                    unsigned kind, uint32_t id)
{
    struct elsi_ctl_session *s = elsi_consumer_session(c);
    answer(w, c, kind, id, false, "hello", ELS_EINVAL, "this socket serves "
           "control-only clients: send a hello with the control-only flag "
           "first (eventlog-sink ctl does); the eventlog is in the sink's "
           "dumps");
    s->refused = true;
    elsi_consumer_stop_reading(c);
    elsi_consumer_wake_at(c, 0);
}

/* The due hook. */
static void control_due(struct els_writer *w, struct consumer *c,
                        void *session, uint64_t seq, bool at_end)
{
    struct elsi_ctl_session *s = session;
    /* Called before every unit: so it sees DATA_END before c passes it,
     * and nothing may follow that in the stream. */
    if (!s->ended && at_end)
        s->ended = true, s->end_seq = seq;
    while (s->notes != NULL && s->notes->after_seq <= seq &&
           !elsi_consumer_dead(c)) {
        struct ctl_note *n = s->notes;
        s->notes = n->next;
        if (s->notes == NULL)
            s->notes_tail = NULL;
        s->notes_bytes -= sizeof *n;
        s->charged -= sizeof *n;
        elsi_consumer_memory_give(w, sizeof *n);
        if (s->ended && seq > s->end_seq)
            elsi_log(ELS_LOG_DEBUG, "%s: consumer %" PRIu64 ": an answer came "
                     "after its stream ended: %s", elsi_writer_endpoint(w), elsi_consumer_id(c), n->text);
        else
            elsi_consumer_note_text(w, c, n->text);
        free(n);
    }
}

/* The serve_only hook: a control-only client has no stream (delivery
 * counts it caught up, never holding a unit back), only answer frames. */
static bool control_serve_only(struct els_writer *w, struct consumer *c,
                               void *session)
{
    struct elsi_ctl_session *s = session;
    if (!s->control_only && !s->endpoint_only)
        return false;
    if (s->endpoint_only && !s->control_only && !s->refused && !elsi_consumer_dead(c) &&
        elsi_now_ms() >= s->hello_by_ms) {
        /* Note [Control-only hello deadline]. */
        elsi_log_limited(elsi_writer_consumer_log(w), ELSI_LOG_INTERVAL_MS, ELS_LOG_WARN,
                         "%s: control client %" PRIu64 " sent no control-only "
                         "hello within %u ms: refused", elsi_writer_endpoint(w), elsi_consumer_id(c),
                         elsi_ctl_hello_deadline_ms);
        refuse_not_control_only(w, c, ELSI_CTL_KIND_HELLO_ANSWER, 0);
    }
    while (!elsi_consumer_dead(c) && s->out_off < s->out_len) {
        ssize_t n = elsi_consumer_send(c, s->out + s->out_off,
                                       s->out_len - s->out_off);
        if (n == -EAGAIN) {
            if (s->refused)
                elsi_consumer_close(c);     /* told as much as it takes */
            return true;
        }
        if (n < 0) {
            elsi_consumer_close(c);     /* the client went away */
            return true;
        }
        s->out_off += (size_t)n;
    }
    if (!elsi_consumer_dead(c) && s->out_cap > 0)
        out_drop(w, s);
    /* A client that has shut its side (or was refused) and has nothing
     * more coming is done (over TCP only POLLIN says so: nothing is
     * written to it). */
    if (elsi_consumer_input_ended(c) && s->in_flight == 0 &&
        s->out_off == s->out_len)
        elsi_consumer_close(c);
    return true;
}

/* Look at the peer once: who it is decides what it may do. */
static void session_check_peer(struct els_writer *w, struct consumer *c)
{
    struct elsi_ctl_session *s = elsi_consumer_session(c);
    (void)w;
    s->checked = true;
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(elsi_consumer_fd(c), (struct sockaddr *)&ss, &len) != 0)
        return;
    if (ss.ss_family == AF_UNIX) {
        s->unix_peer = true;
#if defined(SO_PEERCRED)
        struct ucred cred;
        socklen_t clen = sizeof cred;
        if (getsockopt(elsi_consumer_fd(c), SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0) {
            s->peer_uid = cred.uid;
            s->peer_ok = cred.uid == geteuid() || cred.uid == 0;
        }
#endif
    } else if (ss.ss_family == AF_INET || ss.ss_family == AF_INET6) {
        s->inet_peer = true;
    }
}

/*
 * Note [Challenges]
 * ~~~~~~~~~~~~~~~~~
 * A TCP peer proves it knows the secret without sending it: its hello is
 * answered with a challenge of 32 fresh random bytes, and its proof frame
 * must carry HMAC-SHA256(secret, label || challenge || hello nonce ||
 * hello flags) (elsi_ctl_proof()).  A sniffer sees a challenge and a MAC
 * that are worth nothing on any other connection, where the challenge
 * differs.  Each challenge is good for one proof: the proof frame
 * consumes it whatever it holds; a new hello replaces it.  A wrong proof
 * locks the session: every later hello, proof and command is refused, so
 * a guesser pays a TCP connection per attempt (each one logged).  The
 * session is not closed, because a stream consumer may go on reading
 * the stream, which needs no control.  The MAC is compared in constant
 * time, so the time an answer takes says nothing about the right one.
 * Challenges come from getrandom() without blocking: the writer thread
 * must not wait; if the kernel has no entropy yet the hello is refused
 * (ELS_EBUSY), never answered with a weak challenge.
 */

/* May c run commands?  0, or the error and its text. */
static int session_allowed(const struct elsi_control *ctl,
                           struct consumer *c, char *why, size_t why_len)
{
    struct elsi_ctl_session *s = elsi_consumer_session(c);
    if (s->version == ELSI_CTL_VERSION_1) {
        snprintf(why, why_len, "control protocol version 1 is not served: "
                 "this program speaks version %u (update the client)",
                 ELSI_CTL_VERSION);
        return ELS_EVERSION;
    }
    if (s->unix_peer) {
        if (s->peer_ok)
            return 0;
        snprintf(why, why_len, "peer uid %lu may not control this program "
                 "(only uid %lu or root)", s->peer_uid,
                 (unsigned long)geteuid());
        return -EPERM;
    }
    if (s->inet_peer) {
        if (s->secret_ok)
            return 0;
        snprintf(why, why_len, "%s", ctl->secret_len == 0
                 ? "control over TCP is refused: the sink has no "
                   "control-secret="
                 : s->locked
                 ? "a wrong proof was given on this connection; connect "
                   "again to retry"
                 : "send a hello and answer its challenge with the proof "
                   "of the shared secret first");
        return -EPERM;
    }
    snprintf(why, why_len, "this connection cannot carry control");
    return -EPERM;
}

/* Fresh random bytes without blocking the writer thread: 0 or -errno. */
static int challenge_bytes(uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t k = getrandom(p, n, GRND_NONBLOCK);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* The first control-only flag switches c to answer frames; the nonce it
 * chose marks where they begin. */
static void hello_control_only(struct els_writer *w, struct consumer *c,
                               const struct elsi_ctl_msg *m)
{
    struct elsi_ctl_session *s = elsi_consumer_session(c);
    if (!(m->flags & ELSI_CTL_HELLO_CONTROL_ONLY) || s->control_only)
        return;
    s->control_only = true;
    elsi_consumer_set_trusted(c, false);
    elsi_consumer_wake_at(c, 0);     /* Note [Control-only hello deadline]: met */
    elsi_consumer_stream_off(w, c);    /* it will never read a stream */
    out_append(w, c, m->nonce, ELSI_CTL_NONCE_BYTES);
}

static void on_hello(struct els_writer *w, const struct elsi_control *ctl,
                     struct consumer *c, const struct elsi_ctl_msg *m)
{
    struct elsi_ctl_session *s = elsi_consumer_session(c);
    char text[200];
    if (m->type == ELSI_CTL_MSG_HELLO_V1) {
        if (s->version == 0) {
            /* Answered in version 1's framing, which it reads, so it
             * fails at once instead of waiting for answers it cannot
             * parse. */
            s->version = ELSI_CTL_VERSION_1;
            hello_control_only(w, c, m);
            elsi_log_limited(elsi_writer_consumer_log(w), ELSI_LOG_INTERVAL_MS,
                             ELS_LOG_WARN, "%s: control client %" PRIu64
                             " speaks protocol version 1 (refused; its hello "
                             "carries any secret in clear)", elsi_writer_endpoint(w),
                             elsi_consumer_id(c));
        }
        snprintf(text, sizeof text, "control protocol version 1 is not "
                 "served: this program speaks version %u (update the "
                 "client)", ELSI_CTL_VERSION);
        answer(w, c, ELSI_CTL_KIND_HELLO_ANSWER, 0, false, "hello",
               ELS_EVERSION, text);
        return;
    }
    if (s->version == 0)
        s->version = ELSI_CTL_VERSION;
    hello_control_only(w, c, m);
    int status = 0;
    if (s->version == ELSI_CTL_VERSION && s->inet_peer && !s->secret_ok &&
        !s->locked && ctl->secret_len > 0) {
        int r = challenge_bytes(s->challenge, sizeof s->challenge);
        s->challenged = r == 0;
        if (r != 0) {
            answer(w, c, ELSI_CTL_KIND_HELLO_ANSWER, 0, false, "hello",
                   ELS_EBUSY, "no random bytes for a challenge yet; try "
                   "again");
            return;
        }
        memcpy(s->hello_nonce, m->nonce, sizeof s->hello_nonce);
        s->hello_flags = m->flags;
        size_t off = (size_t)snprintf(text, sizeof text, "%s",
                                      ELSI_CTL_CHALLENGE_PREFIX);
        for (size_t i = 0; i < sizeof s->challenge; i++)
            off += (size_t)snprintf(text + off, sizeof text - off, "%02x",
                                    s->challenge[i]);
        answer(w, c, ELSI_CTL_KIND_CHALLENGE, 0, false, "hello", 0, text);
        return;
    }
    status = session_allowed(ctl, c, text, sizeof text);
    if (status == 0)
        snprintf(text, sizeof text, "eventlog-sink control protocol %u; "
                 "send \"help\" for the commands", ELSI_CTL_VERSION);
    answer(w, c, ELSI_CTL_KIND_HELLO_ANSWER, 0, false, "hello", status, text);
}

/* A proof answers the open challenge, once (Note [Challenges]). */
static void on_proof(struct els_writer *w, const struct elsi_control *ctl,
                     struct consumer *c, const struct elsi_ctl_msg *m)
{
    struct elsi_ctl_session *s = elsi_consumer_session(c);
    int status;
    char text[200];
    if (!s->challenged) {
        status = session_allowed(ctl, c, text, sizeof text);
        if (status == 0 || !s->locked) {
            status = -EPERM;
            snprintf(text, sizeof text, "no challenge to answer: a proof "
                     "answers the challenge of the hello before it");
        }
    } else {
        uint8_t want[ELSI_CTL_PROOF_BYTES];
        s->challenged = false;
        elsi_ctl_proof(ctl->secret, ctl->secret_len, s->challenge,
                       s->hello_nonce, s->hello_flags, want);
        s->secret_ok = elsi_ct_equal(want, m->proof, sizeof want);
        elsi_wipe(want, sizeof want);
        elsi_wipe(s->challenge, sizeof s->challenge);
        s->locked = !s->secret_ok;
        if (s->locked)
            elsi_log_limited(elsi_writer_consumer_log(w), ELSI_LOG_INTERVAL_MS,
                             ELS_LOG_WARN, "%s: control client %" PRIu64
                             " gave a wrong proof of the secret", elsi_writer_endpoint(w),
                             elsi_consumer_id(c));
        status = session_allowed(ctl, c, text, sizeof text);
        if (status == 0)
            snprintf(text, sizeof text, "eventlog-sink control protocol %u; "
                     "send \"help\" for the commands", ELSI_CTL_VERSION);
        else
            snprintf(text, sizeof text, "wrong proof of the shared secret; "
                     "this connection may not try again");
    }
    answer(w, c, ELSI_CTL_KIND_HELLO_ANSWER, 0, false, "proof", status, text);
}

/* Split "name args" and find the command. */
static struct ctl_command *lookup_text(const char *text, char *label,
                                       size_t label_len, const char **args,
                                       struct ctl_command *copy)
{
    size_t n = strcspn(text, " ");
    char name[CTL_NAME_MAX + 2];
    *args = text + n + (text[n] == ' ');
    snprintf(label, label_len, "%.*s", (int)(n < 64 ? n : 64), text);
    if (n > CTL_NAME_MAX)
        return NULL;
    memcpy(name, text, n);
    name[n] = '\0';
    struct ctl_command *found = NULL;
    pthread_mutex_lock(&table_mu);
    if (strcmp(name, "user") == 0) {
        /* user NAMESPACE ID [ARGS] */
        const char *p = *args;
        size_t nslen = strcspn(p, " ");
        char *end = NULL;
        unsigned long id = p[nslen] == ' ' ? strtoul(p + nslen + 1, &end, 10) : 0;
        if (end != NULL && (*end == ' ' || *end == '\0') && id >= 1 && id <= 255) {
            found = find_id(p, nslen, (unsigned)id);
            *args = end + (*end == ' ');
            snprintf(label, label_len, "user %.*s %lu", (int)(nslen < 200 ? nslen : 200),
                     p, id);
        }
    } else {
        found = find_name(name);
    }
    if (found != NULL)
        *copy = *found;
    pthread_mutex_unlock(&table_mu);
    return found != NULL ? copy : NULL;
}

static void dispatch(struct els_writer *w, struct elsi_control *ctl,
                     struct consumer *c, const struct elsi_ctl_msg *m)
{
    struct elsi_ctl_session *s = elsi_consumer_session(c);
    bool es = m->type == ELSI_CTL_MSG_ES;
    uint32_t id = es ? 0 : m->request_id;
    char label[300];
    char why[200];
    const char *args = "";
    struct ctl_command cmd;
    struct ctl_command *found = NULL;

    if (es) {
        snprintf(label, sizeof label, "%.*s command %u",
                 (int)(m->ns_len < 200 ? m->ns_len : 200), m->ns,
                 (unsigned)m->command_id);
        pthread_mutex_lock(&table_mu);
        struct ctl_command *f = find_id(m->ns, m->ns_len, m->command_id);
        if (f != NULL) {
            cmd = *f;
            found = &cmd;
        }
        pthread_mutex_unlock(&table_mu);
    } else {
        found = lookup_text(m->text, label, sizeof label, &args, &cmd);
    }
    int status = session_allowed(ctl, c, why, sizeof why);
    if (status != 0) {
        answer(w, c, ELSI_CTL_KIND_COMMAND_ANSWER, id, es, label, status, why);
        return;
    }
    if (found == NULL) {
        answer(w, c, ELSI_CTL_KIND_COMMAND_ANSWER, id, es, label, ELS_EINVAL,
               "unknown command (send \"help\" for the list)");
        return;
    }
    if (s->in_flight >= CTL_SESSION_IN_FLIGHT) {
        answer(w, c, ELSI_CTL_KIND_COMMAND_ANSWER, id, es, label, ELS_EBUSY,
               "too many commands of this client are waiting; send the "
               "next after an answer");
        return;
    }
    struct ctl_job *j = calloc(1, sizeof *j);
    if (j == NULL) {
        answer(w, c, ELSI_CTL_KIND_COMMAND_ANSWER, id, es, label, ELS_ENOMEM, "");
        return;
    }
    j->ctl = ctl;
    j->consumer_id = elsi_consumer_id(c);
    j->request_id = id;
    j->es = es;
    j->cmd = *found;
    snprintf(j->label, sizeof j->label, "%s", label);
    snprintf(j->args, sizeof j->args, "%s", args);
    pthread_mutex_lock(&ctl->mu);
    ctl->refs++;
    pthread_mutex_unlock(&ctl->mu);
    int r = worker_submit(j);
    if (r != 0) {
        ctl_unref(ctl);
        free(j);
        answer(w, c, ELSI_CTL_KIND_COMMAND_ANSWER, id, es, label, r,
               r == ELS_EBUSY ? "the control thread is busy; try again" : "");
        return;
    }
    if (found->flags & ELSI_CTL_ANSWER_FIRST)
        answer(w, c, ELSI_CTL_KIND_COMMAND_ANSWER, id, es, label, 0,
               "accepted; the stream ends now");
    else
        s->in_flight++;
}

static void collector_input(struct els_writer *w, struct consumer *c,
                            struct elsi_ctl_session *s);

/* The input hook: a collector's proof (Note [Collector proof]), or a
 * client's control messages when control=1. */
static bool control_input(struct els_writer *w, void *state,
                          struct consumer *c, void **slot)
{
    struct elsi_control *ctl = state;
    if (*slot != NULL && ((struct elsi_ctl_session *)*slot)->collector) {
        collector_input(w, c, *slot);
        return true;
    }
    if (ctl == NULL || !elsi_consumer_accepted(c))
        return false;
    if (*slot == NULL) {
        int r = session_new(w, slot);
        if (r == -ENOBUFS) {
            session_over_memory(w, c, "a control session");
            return true;
        }
        if (r != 0) {
            session_kill(w, c, "out of memory");
            return true;
        }
    }
    struct elsi_ctl_session *s = *slot;
    if (s->refused) {
        /* Told and closing: what it says now is not read. */
        elsi_consumer_stop_reading(c);
        return true;
    }
    if (!s->checked)
        session_check_peer(w, c);
    const uint8_t *data;
    ssize_t n = elsi_consumer_read(w, c, CTL_READ_BYTES, &data);
    if (n < 0)
        elsi_consumer_close(c);
    if (n <= 0)
        return true;
    size_t off = 0;
    struct elsi_ctl_msg *msg = &s->msg;
    while (off < (size_t)n && !elsi_consumer_dead(c)) {
        bool got = false;
        off += elsi_ctl_decode(&s->dec, data + off, (size_t)n - off,
                               msg, &got);
        if (!got)
            continue;
        if (s->endpoint_only && !s->control_only &&
            !(msg->type == ELSI_CTL_MSG_HELLO &&
              (msg->flags & ELSI_CTL_HELLO_CONTROL_ONLY))) {
            /* It could only be waiting for a stream this socket never
             * sends: say so, and close once it has the answer. */
            refuse_not_control_only(w, c, msg->type == ELSI_CTL_MSG_HELLO
                                              ? ELSI_CTL_KIND_HELLO_ANSWER
                                              : ELSI_CTL_KIND_COMMAND_ANSWER,
                                    msg->type == ELSI_CTL_MSG_COMMAND
                                        ? msg->request_id : 0);
            break;
        }
        switch (msg->type) {
        case ELSI_CTL_MSG_HELLO:
        case ELSI_CTL_MSG_HELLO_V1:
            on_hello(w, ctl, c, msg);
            break;
        case ELSI_CTL_MSG_PROOF:
            on_proof(w, ctl, c, msg);
            break;
        case ELSI_CTL_MSG_COMMAND:
        case ELSI_CTL_MSG_ES:
            dispatch(w, ctl, c, msg);
            break;
        case ELSI_CTL_MSG_ERROR:
            /* Without a frame there is no request id to repeat. */
            answer(w, c, ELSI_CTL_KIND_COMMAND_ANSWER, msg->request_id,
                   msg->request_id == 0, "(malformed)", msg->error,
                   msg->error_text);
            break;
        }
    }
    return true;
}

/* The tick hook: hand finished commands' answers to their sessions. */
static void control_tick(struct els_writer *w, void *state)
{
    struct elsi_control *ctl = state;
    if (ctl == NULL)
        return;
    pthread_mutex_lock(&ctl->mu);
    struct ctl_job *done = ctl->done;
    ctl->done = ctl->done_tail = NULL;
    pthread_mutex_unlock(&ctl->mu);
    while (done != NULL) {
        struct ctl_job *j = done;
        done = j->next;
        struct consumer *c = elsi_consumer_find(w, j->consumer_id);
        struct elsi_ctl_session *s = c != NULL ? elsi_consumer_session(c)
                                               : NULL;
        if (s != NULL) {
            s->in_flight--;
            answer(w, c, ELSI_CTL_KIND_COMMAND_ANSWER, j->request_id, j->es,
                   j->label, j->status, j->out);
        }
        free(j);
    }
}

// ---------------------------------------------------------------------------
// The commands that need no RTS
// ---------------------------------------------------------------------------

static int cmd_help(struct elsi_control *ctl, const char *args, char *out,
                    size_t out_len)
{
    (void)ctl;
    (void)args;
    size_t off = 0;
    out[0] = '\0';
    pthread_mutex_lock(&table_mu);
    for (size_t i = 0; i < table_len && off < out_len; i++) {
        const struct ctl_command *c = &table[i];
        int n;
        if (c->name[0] == '\0')
            continue;
        n = snprintf(out + off, out_len - off, "%s%s", off ? ", " : "",
                     c->name);
        off += n > 0 ? (size_t)n : 0;
    }
    pthread_mutex_unlock(&table_mu);
    return 0;
}

static int cmd_status(struct elsi_control *ctl, const char *args, char *out,
                      size_t out_len)
{
    (void)args;
    struct els_stats st;
    char endpoint[256];
    int r = elsi_control_writer_stats(ctl, &st, endpoint, sizeof endpoint);
    if (r != 0)
        return r;
    uint64_t dropped = 0;
    for (int i = 0; i < ELS_DROP__COUNT; i++)
        dropped += st.units_dropped[i];
    snprintf(out, out_len, "running on %s; protocol %u; consumers %" PRIu64
             "; units accepted %" PRIu64 " sent %" PRIu64 " queued %" PRIu64
             " dropped %" PRIu64, endpoint, ELSI_CTL_VERSION,
             st.consumers_connected, st.units_accepted, st.units_sent,
             st.units_queued, dropped);
    return 0;
}

static int cmd_stats(struct elsi_control *ctl, const char *args, char *out,
                     size_t out_len)
{
    (void)args;
    struct els_stats st;
    int r = elsi_control_writer_stats(ctl, &st, NULL, 0);
    if (r != 0)
        return r;
    r = els_stats_format(&st, out, out_len);
    return r < 0 ? r : 0;
}

/* fork(): the child would get these locks in whatever state another
 * thread held them, and has no control thread; the forking thread takes
 * them around fork and the child empties the queue (the parent's commands
 * are the parent's) and starts its own thread when it needs one. */
static void control_atfork_prepare(void)
{
    pthread_mutex_lock(&table_mu);
    pthread_mutex_lock(&queue_mu);
}

static void control_atfork_parent(void)
{
    pthread_mutex_unlock(&queue_mu);
    pthread_mutex_unlock(&table_mu);
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
    pthread_mutex_unlock(&table_mu);
}

__attribute__((constructor)) static void control_builtins(void)
{
    pthread_atfork(control_atfork_prepare, control_atfork_parent,
                   control_atfork_child);
    elsi_control_register_builtin(ELSI_CTL_NAMESPACE, 0, "help",
                                  "list the commands", cmd_help, 0);
    elsi_control_register_builtin(ELSI_CTL_NAMESPACE, 0, "status",
                                  "the stream's state in one line",
                                  cmd_status, 0);
    elsi_control_register_builtin(ELSI_CTL_NAMESPACE, 0, "stats",
                                  "the writer's counters", cmd_stats, 0);
}

// ---------------------------------------------------------------------------
// Connect-out trust: the collector's proof
// ---------------------------------------------------------------------------

/*
 * Note [Collector proof]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * Under policy=block a connect-out sink's collector holds the program
 * whenever it stops reading, so it must be one the user meant (Note
 * [Trusted consumers]): whoever listens first at a TCP port, or at a
 * socket path another user could bind, would otherwise freeze the
 * program.  A TCP collector (and a UNIX one of another uid) earns trust by
 * proving it knows the secret of collector-secret=FILE, the way a control
 * client proves control-secret= (Note [Challenges]), with the roles
 * turned: the program is the one that connects and the one that checks.
 *   - Right after the header, before any unit, the program sends the
 *     collector an in-band note (EVENT_LOG_MSG in a global block, like
 *     every note): "eventlog-sink collector challenge " and 64 lowercase
 *     hex digits, C (32 fresh bytes from getrandom()).
 *   - The collector answers on the same connection with one frame of the
 *     control protocol, kind 04: "ELSC" 02 04 00 20, then P =
 *     HMAC-SHA256(secret, "eventlog-sink collector proof v1" NUL || C):
 *     40 bytes, the first bytes it ever sends.
 *   - The program compares P in constant time.  Right: the consumer is
 *     trusted from then on (logged).  Anything else (another frame, other
 *     bytes, a wrong MAC): it stays untrusted for that connection (logged,
 *     no second try), and is served as under policy=drop, as it was while
 *     the proof was on its way.
 * The label differs from the control proof's, so neither proof can be
 * replayed as the other, and the program never computes a proof for
 * anyone, so it cannot be used as an oracle.  What it does not stop: a
 * listener that relays the connection to the real collector and back (an
 * active man in the middle), as for control; nor does it hide the stream.
 * The secret is read at open (checked there with control-secret='s rules)
 * and again at each connection, so a collector's secret can be changed
 * without restarting the program; the program keeps only the expected
 * MAC, wiped when the proof is checked.
 */
#define COLLECTOR_PROOF_LABEL "eventlog-sink collector proof v1"
#define COLLECTOR_CHALLENGE_PREFIX "eventlog-sink collector challenge "
#define ELSI_CTL_KIND_COLLECTOR_PROOF 4u

static int collector_open(struct els_writer *w, char *err, size_t err_len)
{
    const struct elsi_spec *sp = elsi_writer_spec(w);
    bool connect_out = strcmp(sp->scheme, "tcp-connect") == 0 ||
                       strcmp(sp->scheme, "unix-connect") == 0;
    if (sp->collector_secret != NULL) {
        uint8_t secret[ELSI_CTL_MAX_SECRET];
        size_t len;
        int r = read_secret("collector-secret", sp->collector_secret, secret,
                            &len, err, err_len);
        elsi_wipe(secret, sizeof secret);
        if (r != 0)
            return r;
    }
    if (!connect_out || sp->policy != ELSI_POLICY_BLOCK)
        return 0;
    bool tcp = strcmp(sp->scheme, "tcp-connect") == 0;
    char own[160];
    snprintf(own, sizeof own, tcp ? "" : "a collector listening as uid %lu or "
             "root is trusted; ", (unsigned long)geteuid());
    if (sp->trust)
        elsi_log(ELS_LOG_INFO, "%s: policy=block: the collector is trusted "
                 "(trust=1): the program waits while it does not read",
                 elsi_writer_endpoint(w));
    else if (sp->collector_secret != NULL)
        elsi_log(ELS_LOG_INFO, "%s: policy=block: %sanother collector is "
                 "trusted once it proves the secret of collector-secret=%s, "
                 "and served as under policy=drop until then", elsi_writer_endpoint(w),
                 own, sp->collector_secret);
    else
        elsi_log(ELS_LOG_INFO, "%s: policy=block: %s%s collector is not "
                 "trusted: served as under policy=drop (give "
                 "collector-secret= or trust=1)", elsi_writer_endpoint(w), own,
                 tcp ? "a TCP" : "any other");
    return 0;
}

/* A dialled socket consumer that is not trusted yet and whose spec has
 * collector-secret=: queue its challenge (the first note after the
 * header) and await the proof. */
static void collector_challenge(struct els_writer *w, struct consumer *c,
                                void **slot)
{
    const struct elsi_spec *sp = elsi_writer_spec(w);
    if (sp->collector_secret == NULL || *slot != NULL)
        return;
    uint8_t secret[ELSI_CTL_MAX_SECRET];
    size_t len = 0;
    char err[300] = "";
    uint8_t challenge[ELSI_CTL_CHALLENGE_BYTES];
    int r = read_secret("collector-secret", sp->collector_secret, secret, &len,
                        err, sizeof err);
    if (r == 0 && challenge_bytes(challenge, sizeof challenge) != 0)
        r = elsi_fail(err, sizeof err, ELS_EBUSY, "no random bytes for a "
                      "challenge yet");
    if (r == 0)
        r = session_new(w, slot);
    if (r != 0) {
        elsi_wipe(secret, sizeof secret);
        elsi_log_limited(elsi_writer_consumer_log(w), ELSI_LOG_INTERVAL_MS, ELS_LOG_WARN,
                         "%s: collector %" PRIu64 " not challenged (stays "
                         "untrusted): %s", elsi_writer_endpoint(w), elsi_consumer_id(c),
                         err[0] ? err : els_strerror(r));
        return;
    }
    struct elsi_ctl_session *s = *slot;
    s->collector = true;
    uint8_t m[sizeof COLLECTOR_PROOF_LABEL + ELSI_CTL_CHALLENGE_BYTES];
    memcpy(m, COLLECTOR_PROOF_LABEL, sizeof COLLECTOR_PROOF_LABEL);
    memcpy(m + sizeof COLLECTOR_PROOF_LABEL, challenge, sizeof challenge);
    elsi_hmac_sha256(secret, len, m, sizeof m, s->collector_want);
    elsi_wipe(secret, sizeof secret);
    char text[sizeof COLLECTOR_CHALLENGE_PREFIX + 2 * ELSI_CTL_CHALLENGE_BYTES];
    size_t off = (size_t)snprintf(text, sizeof text, "%s",
                                  COLLECTOR_CHALLENGE_PREFIX);
    for (size_t i = 0; i < sizeof challenge; i++)
        off += (size_t)snprintf(text + off, sizeof text - off, "%02x",
                                challenge[i]);
    elsi_consumer_note_text(w, c, text);
}

/* Input from such a consumer: the proof, once; trusted when right. */
static void collector_input(struct els_writer *w, struct consumer *c,
                            struct elsi_ctl_session *s)
{
    const uint8_t *data;
    ssize_t n = elsi_consumer_read(w, c, SIZE_MAX, &data);
    if (n < 0)
        elsi_consumer_close(c);
    if (n <= 0)
        return;
    if (s->collector_done)
        return;     /* one proof per connection; the rest is discarded */
    size_t want = sizeof s->collector_got - s->collector_got_len;
    size_t k = (size_t)n < want ? (size_t)n : want;
    memcpy(s->collector_got + s->collector_got_len, data, k);
    s->collector_got_len += k;
    if (s->collector_got_len < sizeof s->collector_got)
        return;
    s->collector_done = true;
    static const uint8_t head[ELSI_CTL_HEADER_BYTES] = {
        'E', 'L', 'S', 'C', ELSI_CTL_VERSION, ELSI_CTL_KIND_COLLECTOR_PROOF,
        0, ELSI_CTL_PROOF_BYTES
    };
    bool ok = memcmp(s->collector_got, head, sizeof head) == 0 &&
              elsi_ct_equal(s->collector_got + sizeof head, s->collector_want,
                            ELSI_CTL_PROOF_BYTES);
    elsi_wipe(s->collector_want, sizeof s->collector_want);
    if (ok) {
        elsi_consumer_set_trusted(c, true);
        elsi_log(ELS_LOG_INFO, "%s: collector %" PRIu64 " proved the secret "
                 "of collector-secret=: trusted%s", elsi_writer_endpoint(w), elsi_consumer_id(c),
                 elsi_writer_spec(w)->policy == ELSI_POLICY_BLOCK
                     ? " (policy=block waits for it)" : "");
    } else {
        elsi_log_limited(elsi_writer_consumer_log(w), ELSI_LOG_INTERVAL_MS, ELS_LOG_WARN,
                         "%s: collector %" PRIu64 " gave a wrong proof of "
                         "collector-secret=: not trusted (served as under "
                         "policy=drop)", elsi_writer_endpoint(w), elsi_consumer_id(c));
    }
}

// ---------------------------------------------------------------------------
// The hooks delivery calls (deliver/hooks.h)
// ---------------------------------------------------------------------------

static int control_listen_fd(void *state)
{
    struct elsi_control *ctl = state;
    return ctl != NULL ? elsi_control_endpoint_fd(ctl->listener) : -1;
}

static int control_accept(void *state, int *fd)
{
    struct elsi_control *ctl = state;
    return elsi_control_endpoint_accept(ctl->listener, fd);
}

static int control_attach(struct els_writer *w, void *state,
                          struct consumer *c, enum elsi_attach_kind kind,
                          void **slot)
{
    (void)state;
    if (kind == ELSI_ATTACH_ENDPOINT)
        return endpoint_session(w, c, slot);
    collector_challenge(w, c, slot);
    return 0;
}

const struct elsi_writer_hooks elsi_control_hooks = {
    .struct_size = sizeof(struct elsi_writer_hooks),
    .open = control_open,
    .listen_fd = control_listen_fd,
    .accept = control_accept,
    .attach = control_attach,
    .input = control_input,
    .serve_only = control_serve_only,
    .due = control_due,
    .session_free = control_session_free,
    .tick = control_tick,
    .detach = control_detach,
    .release = control_release,
};
