#!/usr/bin/env bash
# test_snapshot_hooks.sh: a library that posts an id-to-name table at
# start and registers the same posting with GHC.Eventlog.Sink.onSnapshot
# gets it into every stream that starts later, so that its consumer can
# name every id it sees used.
#
# tests/programs/Hooks.hs posts "name ID NAME" events, registers them (after
# a hook that always throws), and uses the ids ("use ID ...") in three
# settings:
#   late: a consumer joins a -N2 program's unix: sink (buffer=3M) after
#     6 MB of uses, when the start of the stream (and the table) has left
#     the queue; its stream starts at a join snapshot;
#   restart: the program stops the eventlog and starts it again into
#     another file: the second file is a stream of its own;
#   fork: a forkProcess child starts a stream of its own (file:).
# Checked, for each of those streams: every id used in it is named in it,
# every id of the table is used in it, ghc-events (validate threads and
# tasks) and ThreadScope's rule take it whole; the hook ran on a bound
# thread; the throwing hook was counted and logged on stderr without
# stopping the other.  Then the same with "noregister" (no onSnapshot): the
# joiner's stream names none of the ids, which shows that the names came
# from the hook.
#
# Skips (77) without the patched RTS, GHC, hsc2hs or ghc-events.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"
. "$(dirname "$0")/../ghcprog.sh"

require_tool
require_ghc
require_patched_rts
command -v hsc2hs >/dev/null 2>&1 || skip "no hsc2hs (GHC.Eventlog.Sink is a .hsc module)"
make_tmpdir
T=$ELS_TMP

# GHC.Eventlog.Sink without cabal, as test_flight_recorder.sh builds it.
hsdir=$ELS_TOP_BUILDDIR/tests/ghc/out/hooks-src
hsc=$ELS_TOP_SRCDIR/haskell/eventlog-sink/src/GHC/Eventlog/Sink.hsc
if ! [ "$hsdir/GHC/Eventlog/Sink.hs" -nt "$hsc" ]; then
    mkdir -p "$hsdir/GHC/Eventlog" || fail "mkdir $hsdir"
    hsc2hs -I"$ELS_INCLUDEDIR" -o "$hsdir/GHC/Eventlog/Sink.hs" "$hsc" \
        >"$T/hsc2hs.log" 2>&1 || fail_showing "$T/hsc2hs.log" "hsc2hs $hsc failed"
    rm -f "$ELS_TOP_BUILDDIR/tests/ghc/out/hooks"
fi
build_ghc_program hooks Hooks patched_ghc_lib -threaded -eventlog -rtsopts "-i$hsdir"
PROG=$GHC_PROGRAM
PROGRAM_LABEL=hooks
IDS=12

# check_names NAME FILE: every id used in FILE is named in it, and all
# IDS ids are used.
check_names() {
    local name=$1 file=$2 shown=$T/$1.show verdict
    show_events "$file" "$shown" || fail "$name: ghc-events cannot parse $file"
    verdict=$(awk '
        /^ *[0-9]+: / {
            sub(/^ *[0-9]+: (cap [0-9]+: )?/, "")
            if ($1 == "name" && NF == 3) named[$2] = 1
            else if ($1 == "use" && NF >= 3) used[$2]++
        }
        END {
            n = 0; u = 0
            for (i in used) { u++; if (!(i in named)) { n++; missing = missing " " i } }
            printf "%d %d%s\n", u, n, missing
        }' "$shown")
    local used unnamed
    read -r used unnamed _ <<<"$verdict"
    note "$name: $used ids used, $unnamed of them unnamed"
    [ "$used" -eq "$IDS" ] || fail "$name: $used of the $IDS ids are used in $file"
    [ "$unnamed" -eq 0 ] || fail "$name: ids used but never named in $file:${verdict#* * }"
}

# check_hook_ran NAME BOUND: the hook re-posted, on a bound thread (when
# BOUND is yes), and the throwing hook was logged.
check_hook_ran() {
    local name=$1
    grep -qx "no re-post came" "$T/$name.prog.out" \
        && fail_showing "$T/$name.prog.err" "$name: the onSnapshot hook did not run"
    if [ "$2" = yes ]; then
        grep -qx "hook bound: True" "$T/$name.prog.out" \
            || fail "$name: the hook did not run on a bound thread: $(grep 'hook bound' "$T/$name.prog.out")"
    fi
    grep -q "eventlog-sink: snapshot hook failed: user error (a hook that always throws)" \
        "$T/$name.prog.err" \
        || fail_showing "$T/$name.prog.err" "$name: the throwing hook was not logged"
}

# --- late: a consumer joins after the start left the queue ------------
late() {
    local name=$1 reg=$2 sock=$T/$1.sock
    start_controlled "$name" "$PROG" late 6000000 $reg +RTS -N2 \
        "--eventlog-sink=unix:$sock?buffer=3M" -RTS
    wait_output "$name" ready
    start_receiver "$name" "unix:$sock"
    wait_until 60 els_has_header "$T/$name.eventlog" \
        || fail_showing "$T/$name.recv.err" "$name: the joiner got no header within 60 s"
    tell_controlled go
    wait_output "$name" done
    stop_controlled
    wait_both "$rpid"
    check_program "$name" "$prog_rc" done
    check_recv "$name" "$recv_rc"
}

late late ""
check_hook_ran late yes
check_names late "$T/late.eventlog"
grep -q 'joined mid-run; its stream starts at a snapshot' "$T/late.show" \
    || fail "late: the joiner's stream does not start at a snapshot (did the start leave the queue?)"
grep -q "filler 1 " "$T/late.show" && fail "late: the joiner got the first uses: the start had not left the queue"
check_readers_accept late "$T/late.eventlog"
note "late: $kept_line"

# --- restart: a stream of its own after stop and start ---------------
start_program restart "$PROG" restart "$T/restart.2.eventlog" +RTS -N2 \
    "--eventlog-sink=file:$T/restart.1.eventlog" -RTS
prog_rc=0; wait_pid "$ppid" 60 || prog_rc=$?
check_program restart "$prog_rc" done
check_hook_ran restart yes
check_names restart "$T/restart.2.eventlog"
check_readers_accept restart "$T/restart.2.eventlog"
note "restart: $kept_line"

# --- fork: a child's own stream ----------------------------------------
start_program fork "$PROG" fork "$T/fork.child.eventlog" +RTS -N2 \
    "--eventlog-sink=file:$T/fork.eventlog" -RTS
prog_rc=0; wait_pid "$ppid" 60 || prog_rc=$?
check_program fork "$prog_rc" done
grep -qx "child exited: Just (Exited ExitSuccess)" "$T/fork.prog.out" \
    || fail_showing "$T/fork.prog.err" "fork: the child did not exit normally"
check_hook_ran fork no
check_names fork "$T/fork.child.eventlog"
check_readers_accept fork "$T/fork.child.eventlog"
note "fork: $kept_line"

# --- without the hook, the joiner cannot name the ids ------------------
late late-noreg noregister
show_events "$T/late-noreg.eventlog" "$T/late-noreg.show" || fail "late-noreg: ghc-events cannot parse its stream"
n=$(count_shown_user_events "$T/late-noreg.show" "name ")
[ "$n" -eq 0 ] || fail "late-noreg: without onSnapshot the joiner still got $n names (the test would not show the hook's work)"
note "without onSnapshot the joiner got no names"
exit 0
