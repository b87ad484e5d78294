#!/usr/bin/env bash
# build.sh: compile hello-stream (Main.hs + main.c) against libeventlog-sink.
#
# Usage: examples/hello-stream/build.sh [LIBLOC [OUTDIR]]
#
#   LIBLOC  where the library is:
#           - a build tree (configure was run there and `make` built
#             lib/.libs/libeventlog-sink.so), e.g. _build; the headers are
#             taken from that tree's source directory;
#           - or an install prefix (PREFIX/include/eventlog-sink.h and
#             PREFIX/lib/libeventlog-sink.so, e.g. /usr/local);
#           - omitted: pkg-config eventlog-sink is asked.
#   OUTDIR  where the objects and the program go; default
#           LIBLOC/examples/hello-stream/out for a build tree, else
#           ./hello-stream-out.  The source directory is never written to
#           (it is read-only under `make distcheck`).
#
# Environment: GHC (default: ghc on PATH).  GHC_FLAGS adds options to the
# ghc command line.
#
# Prints the path of the program on stdout (last line).  Rebuilds only when
# the program is missing or older than Main.hs, main.c, the library or its
# GHC header, so calling it once per test is cheap; concurrent calls on the
# same OUTDIR serialise on a lock file.
#
# This script does not build the library (scripts/build.sh does) and does
# not run the program.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ghc=${GHC:-ghc}

die() { echo "hello-stream/build.sh: $*" >&2; exit 1; }

command -v "$ghc" >/dev/null 2>&1 || die "GHC not found (set GHC=/path/to/ghc)"

libloc=${1:-}
outdir=${2:-}
incdir='' libdir=''

if [ -z "$libloc" ]; then
    command -v pkg-config >/dev/null 2>&1 && pkg-config --exists eventlog-sink \
        || die "no LIBLOC given and pkg-config does not know eventlog-sink"
    incdir=$(pkg-config --variable=includedir eventlog-sink)
    libdir=$(pkg-config --variable=libdir eventlog-sink)
    : "${outdir:=$PWD/hello-stream-out}"
elif [ -f "$libloc/lib/.libs/libeventlog-sink.so" ] || [ -f "$libloc/Makefile" ]; then
    # A build tree.  Its Makefile records where the sources are (an
    # out-of-tree build, or distcheck's); fall back to this script's tree.
    libloc=$(cd "$libloc" && pwd)
    srcdir=
    if [ -f "$libloc/Makefile" ]; then
        srcdir=$(sed -n 's/^abs_top_srcdir = //p' "$libloc/Makefile" | head -n 1)
    fi
    [ -n "$srcdir" ] && [ -f "$srcdir/include/eventlog-sink/ghc.h" ] || srcdir=$(cd "$here/../.." && pwd)
    incdir=$srcdir/include
    libdir=$libloc/lib/.libs
    : "${outdir:=$libloc/examples/hello-stream/out}"
elif [ -f "$libloc/include/eventlog-sink/ghc.h" ]; then
    libloc=$(cd "$libloc" && pwd)
    incdir=$libloc/include
    libdir=$libloc/lib
    if [ ! -e "$libdir/libeventlog-sink.so" ]; then
        # A multiarch libdir (lib/x86_64-linux-gnu) under the prefix.
        for d in "$libloc"/lib/*/; do
            if [ -e "$d/libeventlog-sink.so" ]; then libdir=${d%/}; break; fi
        done
    fi
    : "${outdir:=$PWD/hello-stream-out}"
else
    die "$libloc is neither a build tree nor an install prefix of eventlog-sink"
fi

lib=$libdir/libeventlog-sink.so
[ -e "$lib" ] || die "$lib not found: build the library first (scripts/build.sh)"
[ -f "$incdir/eventlog-sink/ghc.h" ] || die "$incdir/eventlog-sink/ghc.h not found"

mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
prog=$outdir/hello-stream

# Serialise concurrent builds into the same OUTDIR (parallel make check).
if command -v flock >/dev/null 2>&1; then
    exec 9>"$outdir/.build.lock"
    flock 9
fi

up_to_date() {
    [ -x "$prog" ] || return 1
    local dep
    for dep in "$here/Main.hs" "$here/main.c" "$lib" "$incdir/eventlog-sink/ghc.h" \
               "$incdir/eventlog-sink.h"; do
        [ "$prog" -nt "$dep" ] || return 1
    done
    return 0
}

if ! up_to_date; then
    # ghc puts a C file's object next to the source whatever -outputdir
    # says, so compile copies in a work directory, then move the program
    # into place in one step (a concurrent reader never sees half a file).
    work=$outdir/work
    rm -rf "$work"
    mkdir -p "$work"
    cp "$here/Main.hs" "$here/main.c" "$work/"
    # -no-hs-main: main() comes from main.c.  -threaded -eventlog: the
    # thr_l RTS, needed for +RTS -l and -N.  (-rtsopts would be ignored
    # with -no-hs-main; main.c enables all RTS options itself.)
    # shellcheck disable=SC2086
    (cd "$work" && "$ghc" -v0 -O -threaded -eventlog -no-hs-main \
        -optc-Wall -optc-Wextra \
        -I"$incdir" Main.hs main.c \
        -L"$libdir" -leventlog-sink -optl-Wl,-rpath,"$libdir" \
        ${GHC_FLAGS:-} -o hello-stream) \
        || die "ghc failed (see above)"
    mv -f "$work/hello-stream" "$prog"
    rm -rf "$work"
fi

echo "$prog"
