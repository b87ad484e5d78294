#!/usr/bin/env bash
# test_fork.sh: a GHC forkProcess child runs and exits normally in every
# sink configuration, and the parent's stream is unharmed.
#
# tests/programs/Fork.hs, compiled with the patched RTS and the library, posts
# N events, forks with the RTS's forkProcess (System.Posix.Process), waits
# for the child and posts N more.  For every built-in sink (unix, tcp,
# fifo, file, unix-connect, tcp-connect) it runs three ways:
#   attached: a consumer attached before the fork (wait=); the child posts
#     N events, which are not streamed (the sink is the parent's), and
#     reports them lost on stderr;
#   own: as attached, but the child stops the eventlog it inherited,
#     configures a file: sink of its own and starts it;
#   alone: no consumer at all (file: has no such case).
# Checked: the program and the child exit with status 0 (a child that
# hangs at exit leaves the parent waiting: the deadline catches it); the
# parent's stream is complete and holds its 2N events and none of the
# child's; the child's own stream holds its N events and none of the
# parent's.
#
# Skips (77) without the patched RTS, GHC or ghc-events.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"
. "$(dirname "$0")/../ghcprog.sh"

setup_ghc_program_test fork-test Fork
FORK=$GHC_PROGRAM
N=2000

# count NAME FILE WHAT: user events "fork-test WHAT ..." in FILE.
count() {
    local shown=$T/$1.$(basename "$2").show
    show_events "$2" "$shown" || fail "$1: ghc-events cannot parse $2"
    count_shown_user_events "$shown" "fork-test $3 "
}

# check_parent NAME FILE: FILE holds the parent's 2N events, no child's.
check_parent() {
    local before after child
    before=$(count "$1" "$2" "parent before")
    after=$(count "$1" "$2" "parent after")
    child=$(count "$1" "$2" child)
    note "$1: parent stream: $before before, $after after, $child child events"
    [ "$before" -eq "$N" ] && [ "$after" -eq "$N" ] \
        || fail "$1: the parent's stream holds $before/$after of its $N/$N events"
    [ "$child" -eq 0 ] || fail "$1: the child's events reached the parent's stream ($child)"
}

# check_run NAME HOW: the program and its child exited normally; an own
# child stream holds its N events.
check_run() {
    local name=$1 how=$2 out=$T/$1.prog.out n
    check_program "$name" "$prog_rc" "parent done"
    grep -qx "child exited: Just (Exited ExitSuccess)" "$out" \
        || fail_showing "$T/$name.prog.err" "$name: the child did not exit normally: $(grep 'child exited' "$out")"
    grep -qx "child done" "$out" || fail "$name: no 'child done' from the child"
    if [ "$how" = own ]; then
        grep -qx "child started: 0" "$out" \
            || fail_showing "$T/$name.prog.err" "$name: the child could not start its own sink: $(grep 'child started' "$out")"
        n=$(count "$name" "$T/$name.child.eventlog" child)
        [ "$n" -eq "$N" ] || fail "$name: the child's own stream holds $n of its $N events"
        n=$(count "$name" "$T/$name.child.eventlog" parent)
        [ "$n" -eq 0 ] || fail "$name: the parent's events are in the child's stream ($n)"
    else
        # The child's events have nowhere to go: counted and said.
        grep -q "discarded [1-9][0-9]* eventlog units written while no sink was open" \
            "$T/$name.prog.err" \
            || fail_showing "$T/$name.prog.err" "$name: the child did not report its unstreamed events"
    fi
}

# run NAME HOW SPEC: run fork-test with --eventlog-sink=SPEC in the
# background (sets ppid); HOW=own gives the child its file: sink.
run() {
    local name=$1 how=$2 spec=$3
    if [ "$how" = own ]; then
        start_program "$name" "$FORK" "$N" "file:$T/$name.child.eventlog" \
            +RTS -N2 "--eventlog-sink=$spec" -RTS
    else
        start_program "$name" "$FORK" "$N" +RTS -N2 "--eventlog-sink=$spec" -RTS
    fi
}

for how in attached own alone; do
    # unix, fifo: the receiver retries until the endpoint exists.
    for kind in unix fifo; do
        name=$kind-$how
        path=$T/$name.$kind
        if [ "$how" = alone ]; then
            run "$name" "$how" "$kind:$path"
            prog_rc=0; wait_pid "$ppid" 60 || prog_rc=$?
        else
            start_receiver "$name" "$kind:$path"
            run "$name" "$how" "$kind:$path?wait=10&policy=block"
            wait_both "$rpid"
            check_recv "$name" "$recv_rc"
            check_parent "$name" "$T/$name.eventlog"
        fi
        check_run "$name" "$how"
    done

    # tcp: the receiver learns the port from the program's stderr.
    name=tcp-$how
    if [ "$how" = alone ]; then
        run "$name" "$how" "tcp:127.0.0.1:0"
        prog_rc=0; wait_pid "$ppid" 60 || prog_rc=$?
    else
        run "$name" "$how" "tcp:127.0.0.1:0?wait=10&policy=block"
        program_tcp_endpoint "$name"
        start_receiver "$name" "$endpoint"
        wait_both "$rpid"
        check_recv "$name" "$recv_rc"
        check_parent "$name" "$T/$name.eventlog"
    fi
    check_run "$name" "$how"

    # file: the file is the consumer.
    if [ "$how" != alone ]; then
        name=file-$how
        run "$name" "$how" "file:$T/$name.eventlog?policy=block"
        prog_rc=0; wait_pid "$ppid" 60 || prog_rc=$?
        check_run "$name" "$how"
        check_parent "$name" "$T/$name.eventlog"
    fi

    # unix-connect, tcp-connect: a collector listens; alone, nothing does
    # (the sink keeps reconnecting with backoff).
    for kind in unix-connect tcp-connect; do
        name=$kind-$how
        if [ "$how" = alone ]; then
            if [ "$kind" = unix-connect ]; then
                addr=$T/nobody.sock
            else
                addr=127.0.0.1:$(free_tcp_port) || fail "no free TCP port"
            fi
            run "$name" "$how" "$kind:$addr"
            prog_rc=0; wait_pid "$ppid" 60 || prog_rc=$?
        else
            if [ "$kind" = unix-connect ]; then
                start_collector "$name" "unix:$T/$name.sock"
                addr=$T/$name.sock
            else
                start_collector "$name" tcp:127.0.0.1:0
                addr=127.0.0.1:${collector_endpoint##*:}
            fi
            run "$name" "$how" "$kind:$addr?wait=10&policy=block"
            wait_both "$cpid"
            check_recv "$name" "$recv_rc"
            check_parent "$name" "$T/$name.eventlog"
        fi
        check_run "$name" "$how"
    done
done
note "all forks ran and exited normally"
exit 0
