#!/usr/bin/env bash
# test_private_discovery.sh: a test's writers never meet the user's
# `eventlog-sink serve --all` (Note [A discovery directory per test] in
# Makefile.am).
#
# For each way the host's discovery directory is found (XDG_RUNTIME_DIR
# set: $XDG_RUNTIME_DIR/eventlog-sink; unset: $TMPDIR/eventlog-sink-UID),
# in a host directory the test names as the user's (under its temporary
# directory: the real one may hold other programs), a real `serve --all`
# runs on loopback.  Then:
#   - a probe test (a .test script) runs through this build tree's own
#     harness (`make check-TESTS`, its AM_TESTS_ENVIRONMENT and
#     TESTS_ENVIRONMENT, the test driver) with that host environment, and
#     opens a writer (a C program on the built library: a unix: sink, so it
#     announces itself) that stays open until told;
#   - a writer started the same way but outside the harness, in the host
#     environment, is announced in the host directory, and serve --all
#     lists it (/api/programs) and attaches to it (its consumer count):
#     serve --all sees that directory, so the check below can fail;
#   - once serve --all has taken that later writer, the probe's writer is
#     announced in a directory of its own (not the host's), serve --all
#     does not list it, and no consumer ever attached to it.
# The probe test passes in the nested harness (its .trs says PASS).
# Skips (77) without the tool, the library, curl or a C compiler.
set -u -o pipefail

. "$(dirname "$0")/harness.sh"

require_tool
lib=$ELS_SHLIB
[ -e "$lib" ] || lib=$ELS_LIBDIR/libeventlog-sink.a
[ -e "$lib" ] || skip "library not built: $ELS_SHLIB"
command -v curl >/dev/null 2>&1 || skip "curl not installed (scripts/install-deps.sh)"
CC=${CC:-cc}
command -v "$CC" >/dev/null 2>&1 || skip "no C compiler ($CC)"
[ -f "$ELS_TOP_BUILDDIR/Makefile" ] || skip "no configured build tree in $ELS_TOP_BUILDDIR"
make_tmpdir
T=$ELS_TMP
deadline_set 300

# The writer: opens SPEC (a sink: it announces itself), prints "ready
# PID", then until STOP exists writes its consumer counts to STATS every
# 50 ms (whole lines, by rename).
cat >"$T/probe-writer.c" <<'EOF'
#include <eventlog-sink.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    struct els_writer *w;
    char err[512], tmp[4096];
    if (argc != 4) {
        fprintf(stderr, "usage: probe-writer SPEC STATS STOP\n");
        return 2;
    }
    if (els_writer_open(argv[1], &w, err, sizeof err) < 0) {
        fprintf(stderr, "probe-writer: %s\n", err);
        return 1;
    }
    printf("ready %ld\n", (long)getpid());
    fflush(stdout);
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[2]);
    for (;;) {
        struct els_stats st;
        FILE *f;
        if (els_writer_stats(w, &st) < 0 || (f = fopen(tmp, "w")) == NULL)
            return 1;
        fprintf(f, "connected %" PRIu64 " total %" PRIu64 "\n",
                st.consumers_connected, st.consumers_total);
        if (fclose(f) != 0 || rename(tmp, argv[2]) != 0)
            return 1;
        if (access(argv[3], F_OK) == 0)
            break;
        poll(NULL, 0, 50);
    }
    return els_writer_close(w) < 0;
}
EOF
"$CC" -I"$ELS_INCLUDEDIR" -o "$T/probe-writer" "$T/probe-writer.c" "$lib" \
    -Wl,-rpath,"$ELS_LIBDIR" -lpthread >"$T/cc.log" 2>&1 \
    || fail_showing "$T/cc.log" "cannot build the probe writer"

# The probe test the nested harness runs: it records the environment the
# harness gave it and runs the writer in it.
cat >"$T/probe.test" <<'EOF'
#!/bin/sh
d=$ELS_PROBE_DIR k=$ELS_PROBE_KIND
printf '%s\n' "${XDG_RUNTIME_DIR-(unset)}" >"$d/$k.xdg"
exec "$d/probe-writer" "unix:$d/$k.sock" "$d/$k.stats" "$d/$k.stop" >"$d/$k.out"
EOF
chmod +x "$T/probe.test"

# listed KIND PID: serve --all's index (/api/programs) lists PID.
listed() {
    curl -sf --max-time 10 -H "Authorization: Bearer $token" \
        "http://127.0.0.1:$port/api/programs" -o "$T/$1.programs" \
        && grep -q "\"pid\":$2," "$T/$1.programs"
}

# stats_say FILE WORD N: the writer's STATS file says WORD N.
stats_say() {
    grep -q "$2 $3 " "$1" 2>/dev/null || grep -q "$2 $3\$" "$1" 2>/dev/null
}

# ready_pid FILE: the pid in the writer's "ready PID" line.
ready_pid() {
    sed -n 's/^ready \([0-9][0-9]*\)$/\1/p' "$1" 2>/dev/null
}

# check_host KIND HOSTDIR ENV...: the whole check, with the host's
# discovery directory HOSTDIR and the host environment ENV (arguments
# for env).
check_host() {
    local k=$1 hostdir=$2 spid mpid mrc=0 ppid cpid priv serve_err
    shift 2
    serve_err=$T/$k.serve.err
    env "$@" "$ELS_SINK_TOOL" serve --all --listen 127.0.0.1:0 >"$T/$k.serve.out" 2>"$serve_err" &
    spid=$!
    bg_register "$spid"
    wait_until 60 grep -q "serving http://" "$serve_err" \
        || fail_showing "$serve_err" "$k: serve --all did not start listening"
    port=$(sed -n 's|.*serving http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$serve_err" | head -n 1)
    [ -n "$port" ] || fail_showing "$serve_err" "$k: no port in serve's output"
    token=$(sed -n 's|.*serving http://[^ ]*?token=\([0-9a-f]*\).*|\1|p' "$serve_err" | head -n 1)
    [ -n "$token" ] || fail_showing "$serve_err" "$k: no token in serve's output"

    # The probe, through the harness (the caller's make settings kept
    # out: this make is not part of the running one).
    cp "$T/probe.test" "$T/$k.test"
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u GNUMAKEFLAGS -u MAKEOVERRIDES -u MAKEFILES \
        "$@" ELS_PROBE_DIR="$T" ELS_PROBE_KIND="$k" \
        make -s -C "$ELS_TOP_BUILDDIR" check-TESTS TESTS="$T/$k.test" \
        TEST_SUITE_LOG="$T/$k-suite.log" >"$T/$k.make.out" 2>&1 &
    mpid=$!
    bg_register "$mpid"
    wait_until 120 grep -qs '^ready ' "$T/$k.out" \
        || fail_showing "$T/$k.make.out" "$k: the probe test's writer did not start under the harness"
    ppid=$(ready_pid "$T/$k.out")
    priv=$(cat "$T/$k.xdg")
    note "$k: the harness gave the probe XDG_RUNTIME_DIR=$priv; its writer is pid $ppid"
    case $priv in
        /*) ;;
        *) fail "$k: the harness gave the probe no absolute XDG_RUNTIME_DIR ('$priv'): it announces in \${TMPDIR:-/tmp}" ;;
    esac
    [ "$priv/eventlog-sink" != "$hostdir" ] || fail "$k: the harness left the probe in the host's directory $hostdir"
    [ "$(stat -c %u:%a "$priv")" = "$(id -u):700" ] \
        || fail "$k: the probe's XDG_RUNTIME_DIR $priv is $(stat -c %u:%a "$priv"), not $(id -u):700"
    [ -e "$priv/eventlog-sink/$ppid.announce" ] \
        || fail "$k: the probe's writer is not announced in $priv/eventlog-sink (the check would prove nothing)"
    [ ! -e "$hostdir/$ppid.announce" ] || fail "$k: the probe's writer is announced in the host's $hostdir"

    # Announced later, in the host's directory: serve --all lists it and
    # attaches.
    env "$@" "$T/probe-writer" "unix:$T/$k-host.sock" "$T/$k-host.stats" "$T/$k-host.stop" \
        >"$T/$k-host.out" 2>"$T/$k-host.err" &
    cpid=$!
    bg_register "$cpid"
    wait_until 60 grep -qs '^ready ' "$T/$k-host.out" \
        || fail_showing "$T/$k-host.err" "$k: the host's writer did not start"
    [ -e "$hostdir/$cpid.announce" ] || fail "$k: the host's writer is not announced in $hostdir"
    wait_until 60 listed "$k" "$cpid" \
        || fail_showing "$serve_err" "$k: serve --all does not list the writer announced in $hostdir (pid $cpid)"
    wait_until 60 stats_say "$T/$k-host.stats" connected 1 \
        || fail_showing "$serve_err" "$k: serve --all did not attach to the host's writer: $(cat "$T/$k-host.stats")"

    # serve --all has taken a later announcement: the probe's writer was
    # never one it could see.
    listed "$k" "$cpid" || fail "$k: serve --all stopped answering"
    ! grep -q "\"pid\":$ppid," "$T/$k.programs" \
        || fail_showing "$T/$k.programs" "$k: serve --all lists the writer of a test run by the harness (pid $ppid)"
    stats_say "$T/$k.stats" total 0 \
        || fail_showing "$serve_err" "$k: a consumer attached to the writer of a test run by the harness: $(cat "$T/$k.stats")"
    ! grep -q "$ppid" "$serve_err" || fail_showing "$serve_err" "$k: serve --all speaks of pid $ppid"
    note "$k: serve --all lists and holds the host's writer ($(cat "$T/$k-host.stats")), not the harness's ($(cat "$T/$k.stats"))"

    touch "$T/$k.stop" "$T/$k-host.stop"
    wait_pid "$mpid" 120 || mrc=$?
    [ "$mrc" -eq 0 ] || fail_showing "$T/$k.make.out" "$k: the harness run of the probe test ended with status $mrc"
    grep -qx ':test-result: PASS' "$T/$k.trs" \
        || fail_showing "$T/$k.log" "$k: the probe test did not pass under the harness"
    wait_pid "$cpid" 60 || fail "$k: the host's writer did not end"
    kill "$spid" 2>/dev/null
    wait "$spid" 2>/dev/null
}

uid=$(id -u)
mkdir -m 0700 "$T/xdg-host" "$T/tmp-host"
check_host xdg "$T/xdg-host/eventlog-sink" XDG_RUNTIME_DIR="$T/xdg-host"
check_host tmp "$T/tmp-host/eventlog-sink-$uid" -u XDG_RUNTIME_DIR TMPDIR="$T/tmp-host"
exit 0
