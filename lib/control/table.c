/*
 * table.c: the command table, which the library's commands (help,
 * status and stats here; the GHC glue's, lib/ghc/commands.c) and the
 * program's (els_control_register()) join, and the lookups a session
 * makes in it.  Entries are only ever added, so a lookup hands out a
 * copy.
 *
 * Not this file's job: who may run a command (auth.c), running it
 * (worker.c), what the GHC commands do (lib/ghc/commands.c).
 */
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/control_impl.h"
#include "eventlog-sink.h"
#include "base/log.h"

#define CTL_MAX_COMMANDS 320
#define CTL_MAX_USER_COMMANDS 256

static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;
static struct elsi_ctl_command table[CTL_MAX_COMMANDS];
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
static struct elsi_ctl_command *find_id(const char *ns, size_t ns_len, unsigned id)
{
    for (size_t i = 0; i < table_len; i++)
        if (table[i].id == id && id != 0 && strlen(table[i].ns) == ns_len &&
            memcmp(table[i].ns, ns, ns_len) == 0)
            return &table[i];
    return NULL;
}

static struct elsi_ctl_command *find_name(const char *name)
{
    for (size_t i = 0; i < table_len; i++)
        if (table[i].name[0] != '\0' && strcmp(table[i].name, name) == 0)
            return &table[i];
    return NULL;
}

static int table_add(const struct elsi_ctl_command *cmd, bool user)
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
    struct elsi_ctl_command cmd = { .id = id, .help = help, .builtin = fn,
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
    struct elsi_ctl_command cmd = { .id = id, .user_fn = fn, .user = user,
                               .help = "a command of the program's" };
    snprintf(cmd.ns, sizeof cmd.ns, "%s", ns);
    snprintf(cmd.name, sizeof cmd.name, "%s", name != NULL ? name : "");
    return table_add(&cmd, true);
}

bool elsi_ctl_lookup_id(const char *ns, size_t ns_len, unsigned id,
                        struct elsi_ctl_command *copy)
{
    pthread_mutex_lock(&table_mu);
    struct elsi_ctl_command *f = find_id(ns, ns_len, id);
    if (f != NULL)
        *copy = *f;
    pthread_mutex_unlock(&table_mu);
    return f != NULL;
}

/* Split "name args" and find the command. */
struct elsi_ctl_command *elsi_ctl_lookup_text(const char *text, char *label,
                                         size_t label_len, const char **args,
                                         struct elsi_ctl_command *copy)
{
    size_t n = strcspn(text, " ");
    char name[CTL_NAME_MAX + 2];
    *args = text + n + (text[n] == ' ');
    snprintf(label, label_len, "%.*s", (int)(n < 64 ? n : 64), text);
    if (n > CTL_NAME_MAX)
        return NULL;
    memcpy(name, text, n);
    name[n] = '\0';
    struct elsi_ctl_command *found = NULL;
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

void elsi_ctl_table_lock(void)
{
    pthread_mutex_lock(&table_mu);
}

void elsi_ctl_table_unlock(void)
{
    pthread_mutex_unlock(&table_mu);
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
        const struct elsi_ctl_command *c = &table[i];
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
    char endpoint[PATH_MAX + 64];   /* a file: sink's path may be that long */
    int r = elsi_control_writer_stats(ctl, &st, endpoint, sizeof endpoint);
    if (r != 0)
        return r;
    uint64_t dropped = 0;
    for (int i = 0; i < ELS_DROP__COUNT; i++)
        dropped += st.units_dropped[i];
    int w = snprintf(out, out_len, "running on %s; protocol %u; consumers %" PRIu64
                     "; units accepted %" PRIu64 " sent %" PRIu64 " queued %" PRIu64
                     " dropped %" PRIu64, endpoint, ELSI_CTL_VERSION,
                     st.consumers_connected, st.units_accepted, st.units_sent,
                     st.units_queued, dropped);
    if (w < 0 || (size_t)w >= out_len) {
        /* A path near PATH_MAX outgrows an answer: say it was cut. */
        if (out_len > 4)
            memcpy(out + out_len - 4, "...", 4);
        return 0;
    }
    if (st.trigger_units_read + st.trigger_units_missed > 0) {
        size_t n = strlen(out);
        if (n + 2 < out_len) {
            memcpy(out + n, "; ", 3);
            elsi_trigger_stats_format(&st, out + n + 2, out_len - n - 2);
        }
    }
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

__attribute__((constructor)) static void control_builtins(void)
{
    elsi_control_register_builtin(ELSI_CTL_NAMESPACE, 0, "help",
                                  "list the commands", cmd_help, 0);
    elsi_control_register_builtin(ELSI_CTL_NAMESPACE, 0, "status",
                                  "the stream's state in one line",
                                  cmd_status, 0);
    elsi_control_register_builtin(ELSI_CTL_NAMESPACE, 0, "stats",
                                  "the writer's counters", cmd_stats, 0);
}
