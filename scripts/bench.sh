#!/usr/bin/env bash
# bench.sh: THE benchmark command.  Prints the machine it runs on and, per
# section, Markdown tables for docs/BENCHMARKS.md.
#
# Sections (default: all, in this order):
#   throughput  sink bandwidth vs raw socket/pipe/file bandwidth, side by
#               side (bench/bench_sinks.c)
#   writecost   time of els_writer_write() for a 2 MiB unit vs memcpy
#               (bench/bench_sinks.c)
#   app latency flushcost triggercost filecost memory idle peer scale skew
#               benchmarks with a real Haskell program: run by
#               bench/bench_app.sh SECTION when that file exists; peer
#               (side by side with well-typed's eventlog-socket) runs only
#               when given the path of that project's sources with
#               --peer-eventlog-socket=DIR (or ELS_PEER_EVENTLOG_SOCKET=DIR):
#               nothing is downloaded
#
# Each section is one function, section_NAME; a new section is a new
# function plus its name in SECTIONS.  The C benchmark is built here with
# cc against the convenience library of the build tree (BUILD_DIR, default
# _build): scripts/build.sh is run first when the tree has no library yet,
# else `make lib/libelscore.la` brings it up to date.  The binary goes to
# BUILD_DIR/bench/; temporary sockets, FIFOs and files go to a fresh
# directory under /dev/shm (tmpfs; /tmp when /dev/shm is not writable),
# removed at exit.  Timings are never pass/fail (the machine may be shared
# and noisy); the exit status is non-zero only when a section could not
# run or the library lost or corrupted data where policy=block forbids it.
#
# Usage: scripts/bench.sh [-h] [--peer-eventlog-socket=DIR] [SECTION...]
# Environment: BUILD_DIR, CC; BENCH_MB (MiB per throughput run, 512),
#   BENCH_REPS (9), BENCH_PRODUCERS (1), BENCH_SINKS (comma list; default
#   every sink but the listening tcp:, see bench_sinks.c),
#   BENCH_SAMPLES (writecost samples per case, 2000), BENCH_PACE_US (1000).
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"
build_dir=${BUILD_DIR:-_build}
case $build_dir in
    /*) ;;
    *) build_dir=$top/$build_dir ;;
esac

SECTIONS=(throughput writecost app latency flushcost triggercost filecost memory idle peer scale skew)

usage() {
    echo "usage: scripts/bench.sh [--peer-eventlog-socket=DIR] [SECTION...]   (sections: ${SECTIONS[*]}; default all)"
}

bench_bin=
bench_tmp=

cleanup() {
    if [ -n "$bench_tmp" ]; then
        rm -rf -- "$bench_tmp"
    fi
}
trap cleanup EXIT

# Build bench_sinks once per run, against the current library sources.
build_bench() {
    [ -n "$bench_bin" ] && return 0
    if [ ! -f "$build_dir/lib/.libs/libelscore.a" ]; then
        echo "bench: no library in $build_dir; running scripts/build.sh" >&2
        BUILD_DIR=$build_dir "$top/scripts/build.sh" >&2
    else
        make -s -C "$build_dir" lib/libelscore.la >&2
    fi
    mkdir -p "$build_dir/bench"
    ${CC:-cc} -std=gnu11 -O2 -g -D_GNU_SOURCE -pthread -Wall -Wextra \
        -I"$top/include" -I"$top/tests" "$top/bench/bench_sinks.c" \
        "$build_dir/lib/.libs/libelscore.a" -o "$build_dir/bench/bench_sinks"
    bench_bin=$build_dir/bench/bench_sinks
}

make_tmp() {
    [ -n "$bench_tmp" ] && return 0
    local base=/dev/shm
    [ -d "$base" ] && [ -w "$base" ] || base=${TMPDIR:-/tmp}
    bench_tmp=$(mktemp -d "$base/eventlog-sink-bench.XXXXXX")
}

run_bench_sinks() {
    build_bench
    make_tmp
    "$bench_bin" --dir "$bench_tmp" \
        --mb "${BENCH_MB:-512}" --reps "${BENCH_REPS:-9}" \
        --producers "${BENCH_PRODUCERS:-1}" \
        --sinks "${BENCH_SINKS:-unix,fifo,file,unix-connect,tcp-connect}" \
        --samples "${BENCH_SAMPLES:-2000}" --pace-us "${BENCH_PACE_US:-1000}" \
        "$@"
}

machine() {
    local cpu
    cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
    echo "## Machine"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- command: scripts/bench.sh $*"
    echo "- nproc: $(nproc); CPU: ${cpu:-unknown}"
    echo "- kernel: $(uname -sr); $(grep -m1 '^PRETTY_NAME=' /etc/os-release 2>/dev/null | cut -d'"' -f2)"
    echo "- compiler: $(${CC:-cc} --version | head -n 1)"
    echo "- load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
}

# ---------------------------------------------------------------------------
# Sections implemented here
# ---------------------------------------------------------------------------

section_throughput() {
    make_tmp
    echo "- temporary files on: $(stat -f -c %T "$bench_tmp") ($bench_tmp)"
    echo
    run_bench_sinks throughput
}

section_writecost() {
    run_bench_sinks writecost
}

# ---------------------------------------------------------------------------
# Hooks: sections that need a Haskell program live in bench/bench_app.sh,
# which takes the section name as its only argument.
# ---------------------------------------------------------------------------

app_hook() {
    if [ -f "$top/bench/bench_app.sh" ]; then
        bash "$top/bench/bench_app.sh" "$1"
    else
        echo "$1: not available (bench/bench_app.sh is not there)"
        echo
    fi
}

section_app() { app_hook app; }
section_latency() { app_hook latency; }
section_flushcost() { app_hook flushcost; }
section_triggercost() { app_hook triggercost; }
section_filecost() { app_hook filecost; }
section_memory() { app_hook memory; }
section_idle() { app_hook idle; }
section_peer() { app_hook peer; }
section_scale() { app_hook scale; }
section_skew() { app_hook skew; }

# ---------------------------------------------------------------------------

selected=()
for arg in "$@"; do
    case $arg in
        -h|--help) usage; exit 0 ;;
        --peer-eventlog-socket=*)
            ELS_PEER_EVENTLOG_SOCKET=$(cd "${arg#*=}" && pwd) || exit 2
            export ELS_PEER_EVENTLOG_SOCKET
            continue ;;
    esac
    known=0
    for s in "${SECTIONS[@]}"; do
        [ "$arg" = "$s" ] && known=1
    done
    if [ "$known" -eq 0 ]; then
        echo "bench: unknown section '$arg'" >&2
        usage >&2
        exit 2
    fi
    selected+=("$arg")
done
[ "${#selected[@]}" -gt 0 ] || selected=("${SECTIONS[@]}")

machine "$@"
status=0
for s in "${selected[@]}"; do
    echo "## Section: $s"
    echo
    start=$(date +%s)
    if ! "section_$s"; then
        echo "bench: section $s failed" >&2
        status=1
    fi
    echo "($s: $(( $(date +%s) - start )) s)"
    echo
done
exit "$status"
