/*
 * <eventlog-sink/discovery.h>: the rules of the per-user discovery directory that both of
 * its ends must apply alike: the library, which writes a program's entry
 * (lib/writer/announce.c), and every reader (tools/discover.c, behind
 * `eventlog-sink ps` and pid:/name: arguments).  Where the directory is,
 * when a directory or an entry is trusted, how a value is escaped on a
 * line, how a process is told from a later one with its pid, and how a
 * reader proves that the program still holds the sockets its entry names.
 * See Note [Announce files] in discovery.c.
 *
 * Public, so that a reader of its own (a fleet tool, an exporter) applies
 * the library's rules and not a copy of them; the eventlog-sink command
 * reads the directory through these alone.  Only libc; nothing here logs.
 */
#ifndef ELS_DISCOVERY_H
#define ELS_DISCOVERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The first line of every entry: format name and version.  Version 2
 * entries name absolute paths and prove their sockets (Note [Proof of
 * life]); a version 1 entry proves nothing and is not trusted. */
#define ELS_DISCOVERY_MAGIC "eventlog-sink-announce 2"
/* An entry's file name is PID followed by this suffix. */
#define ELS_DISCOVERY_SUFFIX ".announce"

/* The directory's path into buf: $XDG_RUNTIME_DIR/eventlog-sink when
 * XDG_RUNTIME_DIR is an absolute path, else
 * ${TMPDIR:-/tmp}/eventlog-sink-UID.  0, or -ENAMETOOLONG. */
int els_discovery_dir_path(char *buf, size_t len);

/* May user self trust the directory (dir set) or the entry file (dir
 * unset) that st describes?  0; or with one line in why (naming neither
 * path: the caller puts it in front): -EPERM another owner, -EACCES a
 * mode that lets others in (a directory: any group or other bit; an
 * entry: group or other write), -ENOTDIR / -EINVAL not a directory / not
 * a regular file. */
int els_discovery_judge(const struct stat *st, uid_t self, bool dir,
                         char *why, size_t why_len);

/* Open the directory (creating it with mode 0700 when create is set and
 * it is missing), refusing a symbolic link and anything
 * els_discovery_judge() refuses.  The descriptor (close-on-exec), or
 * -errno with one line in err naming the path: -ELOOP a symbolic link,
 * -EPERM another owner, -EACCES a loose mode, -ENOENT missing (create
 * unset), -ENAMETOOLONG. */
int els_discovery_dir_open(bool create, char *err, size_t err_len);

/* Field 22 of /proc/PID/stat (start time in clock ticks after boot),
 * which tells a process from a later one given the same pid.  0, or
 * -ENOENT (no such process), -EPROTO (unreadable), -errno. */
int els_discovery_proc_start(pid_t pid, uint64_t *start);

/* The identity of socket fd as /proc/PID/fd shows it (socket:[ID]): its
 * inode number; 0 when fd is not a socket. */
uint64_t els_discovery_socket_id(int fd);

/* Does process pid hold a descriptor of every socket in ids[0..n)?  0
 * yes (n == 0: at once, nothing to prove); -ENOENT one is not held
 * (*missing: the first such id); -ESRCH no such process; -EACCES or
 * another -errno: cannot tell (its descriptors are not ours to list).
 * See Note [Proof of life]. */
int els_discovery_holds_sockets(pid_t pid, const uint64_t *ids, size_t n,
                                 uint64_t *missing);

/* Is endpoint (an endpoint or control spec from an entry) one a reader
 * may use wherever it runs?  A unix: path must be absolute.  0, or
 * -EINVAL with one line in why (which does not repeat endpoint: the
 * caller shows it in its safe form). */
int els_discovery_endpoint_check(const char *endpoint, char *why,
                                  size_t why_len);

/* Does a reader connect to endpoint (unix: or tcp:), so that its socket
 * must be proved? */
bool els_discovery_connectable(const char *endpoint);

/* The escape of byte c on a line ("%XX" into out, 3 bytes), or 0 when c
 * stands for itself. */
size_t els_discovery_escape(unsigned char c, char out[4]);

/* Undo the escapes of s, in place. */
void els_discovery_unescape(char *s);

#ifdef __cplusplus
}
#endif

#endif /* ELS_DISCOVERY_H */
