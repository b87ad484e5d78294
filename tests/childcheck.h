/*
 * childcheck.h: waiting for a forked child in a unit test (tests/check.h
 * harness) and failing the case unless it exited with status 0.
 */
#ifndef ELS_TEST_CHILDCHECK_H
#define ELS_TEST_CHILDCHECK_H

#include <sys/wait.h>

#include "check.h"

static inline void check_child_ok(pid_t pid)
{
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "the child %s %d", WIFEXITED(status) ? "exited" : "was killed by signal",
              WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

#endif /* ELS_TEST_CHILDCHECK_H */
