# harness.sh: helpers sourced by the shell tests (tests/*/test_*.sh).
#
# It finds the source and build trees (ELS_TOP_SRCDIR, ELS_TOP_BUILDDIR from
# the Makefile's TESTS_ENVIRONMENT, else from this file's location), the
# built receiver and library, GHC and ghc-events; gives each test a private
# temporary directory removed on exit together with any background process
# the test registered, and a discovery directory of its own; and offers waiting helpers with deadlines, a user-event
# counter built on the independent ghc-events reader, cached builds of the
# example programs, and, for the end-to-end tests, the steps they share:
# starting the program, a receiver or a collector and checking how each
# ended.  It runs no test itself.  The helpers live in tests/harness/, one
# file per concern (outcome.sh, ghc.sh, e2e.sh, faults.sh, controlled.sh),
# sourced here in that order.
#
# Exit statuses follow automake's harness: 0 pass, 1 fail, 77 skip.
#
# Usage (from a test in tests/LAYER/):  . "$(dirname "$0")/../harness.sh"
# (after set -u if wanted)

# ---------------------------------------------------------------------------
# Trees and tools
# ---------------------------------------------------------------------------

els_harness_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${ELS_TOP_SRCDIR:=$(cd "$els_harness_dir/.." && pwd)}"
if [ -z "${ELS_TOP_BUILDDIR:-}" ]; then
    # Run by hand: prefer the out-of-tree build scripts/build.sh makes.
    if [ -f "$ELS_TOP_SRCDIR/_build/Makefile" ]; then
        ELS_TOP_BUILDDIR=$ELS_TOP_SRCDIR/_build
    else
        ELS_TOP_BUILDDIR=$ELS_TOP_SRCDIR
    fi
fi
export ELS_TOP_SRCDIR ELS_TOP_BUILDDIR

# ELS_TOOL_UNDER_TEST names another eventlog-sink binary to test in this
# tree's setting (scripts/sanitize.sh: the ASan+UBSan one, against the
# plain build's library, programs and patched RTS).
ELS_SINK_TOOL=${ELS_TOOL_UNDER_TEST:-$ELS_TOP_BUILDDIR/tools/eventlog-sink}
ELS_LIBDIR=$ELS_TOP_BUILDDIR/lib/.libs
ELS_SHLIB=$ELS_LIBDIR/libeventlog-sink.so
ELS_INCLUDEDIR=$ELS_TOP_SRCDIR/include
export ELS_SINK_TOOL ELS_LIBDIR ELS_SHLIB ELS_INCLUDEDIR

# configure found them (TESTS_ENVIRONMENT passes them, possibly empty);
# when run by hand, look on PATH.
if [ -z "${GHC:-}" ]; then GHC=$(command -v ghc 2>/dev/null || true); fi
if [ -z "${GHC_EVENTS:-}" ]; then GHC_EVENTS=$(command -v ghc-events 2>/dev/null || true); fi
export GHC GHC_EVENTS

els_test_name=$(basename "$0" .sh)

for els_harness_part in outcome ghc e2e faults controlled; do
    # shellcheck source=/dev/null
    . "$els_harness_dir/harness/$els_harness_part.sh"
done
unset els_harness_part

# A discovery directory of the test's own (Note [A discovery directory
# per test] in Makefile.am): `make check` gives one
# (ELS_TEST_RUNTIME_DIR, the XDG_RUNTIME_DIR it sets); a test run by
# hand makes one in $TMPDIR, removed on exit, so that its programs never
# announce themselves where the user's `serve --all` would attach to them.
if [ -z "${ELS_TEST_RUNTIME_DIR:-}" ] || [ "${XDG_RUNTIME_DIR:-}" != "$ELS_TEST_RUNTIME_DIR" ]; then
    els_own_runtime_dir=$(mktemp -d "${TMPDIR:-/tmp}/els-run-$els_test_name.XXXXXX") \
        || { echo "FAIL: $els_test_name: cannot make a discovery directory in ${TMPDIR:-/tmp}" >&2; exit 1; }
    ELS_TEST_RUNTIME_DIR=$els_own_runtime_dir
    XDG_RUNTIME_DIR=$els_own_runtime_dir
    export ELS_TEST_RUNTIME_DIR XDG_RUNTIME_DIR
    trap els_cleanup EXIT
fi
