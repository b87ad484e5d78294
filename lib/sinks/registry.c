/*
 * registry.c: the table of sink schemes.
 *
 * Maps a scheme ("unix", "tcp", a custom one) to its struct els_sink_ops,
 * after checking that the table keeps the contract of <eventlog-sink/sink.h>:
 * its struct_size (a table smaller than ours is copied and completed with
 * NULL members), scheme syntax, the members its style requires and forbids,
 * and option names that are usable in a spec.  The six built-in sinks go
 * through the same checks.  It does not parse specs (spec.c does, and asks
 * here with an exact scheme) and never calls a sink member.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "sinks/sinks.h"
#include "sinks/spec.h"

#define REGISTRY_MAX ELSI_REGISTRY_MAX

struct registry_entry {
    char scheme[ELSI_SCHEME_MAX + 1];   /* our copy: lookups never touch
                                           the caller's strings */
    const struct els_sink_ops *ops;
    /* A table smaller than ours, completed: ops points here then. */
    struct els_sink_ops grown;
};

/*
 * Note [Registry locking]
 * ~~~~~~~~~~~~~~~~~~~~~~~
 * Registration and lookup may happen on any threads at once (a custom sink
 * registered from an ELF constructor while another thread opens a writer).
 * registry_lock guards registry_entries and registry_count; both readers
 * and writers take it, and no sink code runs under it.  Entries are never
 * removed or moved, so an ops pointer returned by a lookup stays valid
 * after the lock is released.
 *
 * The built-in sinks are added by registry_init() under pthread_once, which
 * every entry point calls first: whichever thread comes first registers
 * them, the others wait in pthread_once, and nobody can see a registry
 * without them or take a built-in scheme before its sink does.
 * registry_init() itself takes registry_lock per entry, which is safe since
 * no caller holds the lock while calling pthread_once.
 */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct registry_entry registry_entries[REGISTRY_MAX];
static size_t registry_count;
static pthread_once_t registry_once = PTHREAD_ONCE_INIT;
/* See elsi_registry_watch(); read and written under registry_lock. */
static void (*registry_watcher)(const char *scheme);

/* Check one table against the contract in <eventlog-sink/sink.h>.  0, or a
 * code with the reason in why. */
static int registry_check(const struct els_sink_ops *ops, char *why,
                          size_t why_len)
{
    if (ops->scheme == NULL)
        return elsi_fail(why, why_len, ELS_EINVAL, "ops table has no scheme");
    /* The rules spec.c parses specs by, so that every registered scheme
     * and declared option can be written in a spec. */
    if (!elsi_scheme_valid(ops->scheme))
        return elsi_fail(why, why_len, ELS_EINVAL,
                         "scheme \"%.64s\" is not [a-z][a-z0-9+.-]* of at "
                         "most %d bytes", ops->scheme, ELSI_SCHEME_MAX);
    const char *scheme = ops->scheme;
    if (ops->open == NULL)
        return elsi_fail(why, why_len, ELS_EINVAL,
                         "sink %s: open is required", scheme);
    if (ops->close == NULL)
        return elsi_fail(why, why_len, ELS_EINVAL,
                         "sink %s: close is required", scheme);

    /* Each style names the members it requires; members of the other
     * styles must be NULL, since the writer would never call them and a
     * table that sets them was probably meant to have another style. */
    bool has_listen = ops->listen_fd != NULL || ops->accept != NULL;
    switch (ops->style) {
    case ELS_SINK_LISTEN:
        if (ops->listen_fd == NULL || ops->accept == NULL)
            return elsi_fail(why, why_len, ELS_EINVAL,
                             "sink %s: style LISTEN requires listen_fd and "
                             "accept", scheme);
        if (ops->dial != NULL || ops->write != NULL)
            return elsi_fail(why, why_len, ELS_EINVAL,
                             "sink %s: style LISTEN must leave dial and "
                             "write NULL", scheme);
        break;
    case ELS_SINK_DIAL:
        if (ops->dial == NULL)
            return elsi_fail(why, why_len, ELS_EINVAL,
                             "sink %s: style DIAL requires dial", scheme);
        if (has_listen || ops->write != NULL)
            return elsi_fail(why, why_len, ELS_EINVAL,
                             "sink %s: style DIAL must leave listen_fd, "
                             "accept and write NULL", scheme);
        break;
    case ELS_SINK_CALLBACK:
        if (ops->write == NULL)
            return elsi_fail(why, why_len, ELS_EINVAL,
                             "sink %s: style CALLBACK requires write", scheme);
        if (has_listen || ops->dial != NULL)
            return elsi_fail(why, why_len, ELS_EINVAL,
                             "sink %s: style CALLBACK must leave listen_fd, "
                             "accept and dial NULL", scheme);
        break;
    case ELS_SINK_RECORD:
        if (ops->dump_open == NULL)
            return elsi_fail(why, why_len, ELS_EINVAL,
                             "sink %s: style RECORD requires dump_open", scheme);
        if (ops->accept != NULL || ops->dial != NULL || ops->write != NULL)
            return elsi_fail(why, why_len, ELS_EINVAL,
                             "sink %s: style RECORD must leave accept, dial "
                             "and write NULL", scheme);
        break;
    default:
        return elsi_fail(why, why_len, ELS_EINVAL,
                         "sink %s: unknown style %d", scheme, (int)ops->style);
    }

    if (ops->options != NULL) {
        for (size_t i = 0; ops->options[i] != NULL; i++) {
            const char *name = ops->options[i];
            if (!elsi_option_key_valid(name))
                return elsi_fail(why, why_len, ELS_EINVAL,
                                 "sink %s: option name \"%.64s\" is not "
                                 "[a-z][a-z0-9_-]* of at most %d bytes",
                                 scheme, name, ELSI_OPTION_KEY_MAX);
            /* spec.c would never hand these to the sink. */
            if (elsi_option_is_common(name))
                return elsi_fail(why, why_len, ELS_EINVAL,
                                 "sink %s: option '%s' is common to all "
                                 "sinks and handled by the writer",
                                 scheme, name);
            for (size_t j = 0; j < i; j++)
                if (strcmp(name, ops->options[j]) == 0)
                    return elsi_fail(why, why_len, ELS_EINVAL,
                                     "sink %s: option '%s' is declared "
                                     "twice", scheme, name);
        }
    }
    return 0;
}

int elsi_sink_ops_import(const struct els_sink_ops *ops, size_t min_size,
                         struct els_sink_ops *out, char *why, size_t why_len)
{
    if (ops == NULL)
        return elsi_fail(why, why_len, ELS_EINVAL, "ops table is NULL");
    /* struct_size is the first member of every version of the table, so
     * it is safe to read first; nothing else is until it checks out. */
    size_t size = ops->struct_size;
    if (size < min_size || size > ELS_SINK_OPS_MAX_SIZE)
        return elsi_fail(why, why_len, ELS_EVERSION,
                         "ops table has struct_size %zu; this library reads "
                         "tables of %zu to %u bytes (set .struct_size = "
                         "sizeof(struct els_sink_ops))", size, min_size,
                         ELS_SINK_OPS_MAX_SIZE);
    if (size >= sizeof *out)
        return 0;
    /* An older table: the members it lacks are absent. */
    memset(out, 0, sizeof *out);
    memcpy(out, ops, size);
    return 1;
}

/* Validate and insert.  Takes registry_lock. */
static int registry_add(const struct els_sink_ops *ops, char *why,
                        size_t why_len)
{
    struct els_sink_ops grown;
    int rc = elsi_sink_ops_import(ops, ELS_SINK_OPS_MIN_SIZE, &grown, why,
                                  why_len);
    if (rc < 0)
        return rc;
    bool is_grown = rc == 1;
    rc = registry_check(is_grown ? &grown : ops, why, why_len);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&registry_lock);
    for (size_t i = 0; i < registry_count; i++) {
        if (strcmp(registry_entries[i].scheme, ops->scheme) == 0) {
            pthread_mutex_unlock(&registry_lock);
            return elsi_fail(why, why_len, ELS_EEXIST,
                             "scheme %s is already registered", ops->scheme);
        }
    }
    if (registry_count == REGISTRY_MAX) {
        pthread_mutex_unlock(&registry_lock);
        return elsi_fail(why, why_len, -ENOSPC,
                         "cannot register scheme %s: the registry is full "
                         "(%d sinks)", ops->scheme, REGISTRY_MAX);
    }
    struct registry_entry *e = &registry_entries[registry_count];
    /* Length checked by elsi_scheme_valid(). */
    memcpy(e->scheme, ops->scheme, strlen(ops->scheme) + 1);
    if (is_grown) {
        e->grown = grown;
        e->ops = &e->grown;
    } else {
        e->ops = ops;
    }
    registry_count++;
    pthread_mutex_unlock(&registry_lock);
    return 0;
}

static void registry_init(void)
{
    static const struct els_sink_ops *const builtins[] = {
        &elsi_sink_unix, &elsi_sink_unix_connect,
        &elsi_sink_tcp, &elsi_sink_tcp_connect,
        &elsi_sink_fifo, &elsi_sink_file, &elsi_sink_ring,
    };
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++) {
        char why[256];
        int rc = registry_add(builtins[i], why, sizeof why);
        if (rc != 0) {
            /* A built-in table that fails its own contract is a bug in
             * this library, not a condition a program can handle. */
            elsi_log(ELS_LOG_ERROR, "built-in sink table #%zu is invalid: "
                     "%s (a bug in eventlog-sink)", i, why);
            abort();
        }
    }
}

int els_sink_register(const struct els_sink_ops *ops)
{
    pthread_once(&registry_once, registry_init);
    char why[256];
    int rc = registry_add(ops, why, sizeof why);
    if (rc != 0) {
        elsi_log(ELS_LOG_WARN, "els_sink_register: %s", why);
        return rc;
    }
    pthread_mutex_lock(&registry_lock);
    void (*watcher)(const char *) = registry_watcher;
    pthread_mutex_unlock(&registry_lock);
    if (watcher != NULL)
        watcher(ops->scheme);
    return 0;
}

void elsi_registry_watch(void (*fn)(const char *scheme))
{
    pthread_once(&registry_once, registry_init);
    pthread_mutex_lock(&registry_lock);
    registry_watcher = fn;
    size_t n = registry_count;
    pthread_mutex_unlock(&registry_lock);
    /* Entries are only ever appended, and their names never change, so
     * the first n can be read without the lock. */
    for (size_t i = 0; i < n && fn != NULL; i++)
        fn(registry_entries[i].scheme);
}

const struct els_sink_ops *els_sink_lookup(const char *scheme)
{
    pthread_once(&registry_once, registry_init);
    if (scheme == NULL)
        return NULL;
    const struct els_sink_ops *found = NULL;
    pthread_mutex_lock(&registry_lock);
    for (size_t i = 0; i < registry_count; i++) {
        if (strcmp(registry_entries[i].scheme, scheme) == 0) {
            found = registry_entries[i].ops;
            break;
        }
    }
    pthread_mutex_unlock(&registry_lock);
    return found;
}

int elsi_registry_names(char *buf, size_t len)
{
    pthread_once(&registry_once, registry_init);
    size_t total = 0;
    if (buf != NULL && len > 0)
        buf[0] = '\0';
    pthread_mutex_lock(&registry_lock);
    for (size_t i = 0; i < registry_count; i++) {
        const char *sep = i > 0 ? ", " : "";
        size_t room = buf != NULL && total < len ? len - total : 0;
        int n = snprintf(room > 0 ? buf + total : NULL, room, "%s%s", sep,
                         registry_entries[i].scheme);
        if (n > 0)
            total += (size_t)n;
    }
    pthread_mutex_unlock(&registry_lock);
    return (int)total;
}
