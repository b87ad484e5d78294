/*
 * childcheck.h: forked children in a unit test (tests/check.h harness):
 * whether a child may start threads, and waiting for one, failing the
 * case unless it exited with status 0.
 */
#ifndef ELS_TEST_CHILDCHECK_H
#define ELS_TEST_CHILDCHECK_H

#include <sys/wait.h>

#include "check.h"

/* ThreadSanitizer cannot start a thread in the child of a multi-threaded
 * process (and starting a sink starts the writer thread). */
#if defined(__SANITIZE_THREAD__)
#define CHILD_CAN_START_THREADS 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CHILD_CAN_START_THREADS 0
#endif
#endif
#if !defined(CHILD_CAN_START_THREADS)
#define CHILD_CAN_START_THREADS 1
#endif

static inline void check_child_ok(pid_t pid)
{
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "the child %s %d", WIFEXITED(status) ? "exited" : "was killed by signal",
              WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

#endif /* ELS_TEST_CHILDCHECK_H */
