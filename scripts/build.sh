#!/usr/bin/env bash
# build.sh: build eventlog-sink out of tree in _build/.
#
# Installs missing Debian packages (scripts/install-deps.sh) and the
# tests' npm packages (scripts/install-node-deps.sh), regenerates
# the build system with `autoreconf -fi` when configure is missing or older
# than configure.ac / Makefile.am, configures _build/ when it is new (or
# when CONFIGURE-ARGS are given), and runs make.  Safe to run again: each
# step is skipped when it is up to date.  It does not run tests
# (scripts/test-all.sh).  autoreconf writes its output (configure,
# Makefile.in, build-aux/) into the source tree, as autotools must; every
# compiled file goes to _build/.
#
# Usage: scripts/build.sh [CONFIGURE-ARGS...]
# Environment: BUILD_DIR (default _build), MAKE_JOBS (default 2),
#              ELS_SKIP_DEPS=1 to skip install-deps.sh,
#              ELS_DEPS=--demo to install only the demo's packages,
#              MAKE_TARGETS to make those targets instead of all.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"
build_dir=${BUILD_DIR:-_build}
jobs=${MAKE_JOBS:-2}

if [ -z "${ELS_SKIP_DEPS:-}" ]; then
    # shellcheck disable=SC2086
    "$top/scripts/install-deps.sh" ${ELS_DEPS:-}
    # The tests' npm packages (tests/node), pinned by their lockfile.
    [ "${ELS_DEPS:-}" = --demo ] || "$top/scripts/install-node-deps.sh"
else
    echo "build: ELS_SKIP_DEPS=$ELS_SKIP_DEPS: not checking the Debian packages (scripts/install-deps.sh)"
fi

# `make` reruns automake/autoconf itself when its inputs change once the
# build is configured; this covers a fresh checkout and a stale configure.
regen=0
if [ ! -x configure ] || [ ! -f Makefile.in ]; then
    regen=1
else
    for f in configure.ac Makefile.am; do
        [ configure -nt "$f" ] && [ Makefile.in -nt "$f" ] || regen=1
    done
fi
if [ "$regen" -eq 1 ]; then
    echo "build: autoreconf -fi"
    autoreconf -fi
fi

mkdir -p "$build_dir"
cd "$build_dir"
# Once configured, make itself reruns config.status --recheck (keeping the
# original configure arguments) when configure changes; configure here only
# for a new tree or new arguments.
if [ ! -f config.status ] || [ ! -f Makefile ] || [ "$#" -gt 0 ]; then
    echo "build: configure in $build_dir"
    "$top/configure" "$@"
fi

echo "build: make -j$jobs ${MAKE_TARGETS:-} in $build_dir"
# shellcheck disable=SC2086
make -j"$jobs" ${MAKE_TARGETS:-}
