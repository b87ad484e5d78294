#!/usr/bin/env bash
# test_live_default.sh: live by default on the patched GHC RTS.  +RTS
# --eventlog-sink= with any sink but file: implies a 1 s flush interval
# unless --eventlog-flush-interval is given (rts-patches 0004), so a quiet
# program's events reach a consumer while it runs, with no flush flag.
# Checked here, with tests/programs/Controlled.hs (`controlled idle` posts
# "idle-marker" on capability 0 and then does nothing until told):
#
#   a. unix: sink, no flush flag: the marker arrives while the program
#      still waits (the hang guard is 60 s; nothing asserts on time: the
#      default's interval is 1 s, the issue asks for arrival within 3 s);
#   b. file: sink, no flush flag: today's behaviour, no periodic flush:
#      once capability 1's whole buffers (`flood`) are in the file, and 3 s
#      later (longer than the default interval), the marker, in capability
#      0's buffer, is still not there; it is there after exit;
#   c. the non-threaded RTS, which refuses a flush interval, takes no
#      default: a unix: sink with no flag runs and streams.
#
# --eventlog-flush-interval=0 keeping the flush off is test_e2e_rts.sh's
# "noflush" case.  Skips (77) without the patched RTS, GHC or ghc-events.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"

require_tool
require_ghc
require_patched_rts
make_tmpdir
T=$ELS_TMP
build_controlled patched
PROGRAM_LABEL=controlled

# marker_in NAME: what has arrived in $T/NAME.eventlog so far (a prefix of
# the stream, which ghc-events reads) holds the marker.
marker_in() {
    cp "$T/$1.eventlog" "$T/$1.part" 2>/dev/null || return 1
    show_events "$T/$1.part" "$T/$1.part.show" 2>/dev/null || return 1
    has_shown_event "$T/$1.part.show" idle-marker
}

# a. A socket sink flushes by default.
start_receiver live "unix:$T/l.sock"
start_controlled live "$CONTROLLED" idle +RTS -N2 "--eventlog-sink=unix:$T/l.sock?wait=60" -RTS
wait_output live posted
wait_until 60 marker_in live \
    || fail "live: 'idle-marker' did not arrive while the program waited (unix: sink, no --eventlog-flush-interval)"
kill -0 "$ppid" 2>/dev/null || fail_showing "$T/live.prog.err" "live: the program ended before it was told to"
note "live: 'idle-marker' arrived while the program ran, with no flush flag ($(wc -c <"$T/live.part") bytes so far)"
stop_controlled
wait_both "$rpid"
check_program live "$prog_rc" "idle done"
check_recv live "$recv_rc"

# b. file: keeps today's behaviour.  No clock: the check is made once the
# other capability's full buffers are in the file.
start_controlled file "$CONTROLLED" idle +RTS -N2 "--eventlog-sink=file:$T/file.eventlog" -RTS
wait_output file posted
tell_controlled flood
wait_output file flooded
wait_until 60 stream_has_data "$T/file.eventlog" $((2 * 1024 * 1024)) \
    || fail_showing "$T/file.prog.err" "file: capability 1's full buffers did not reach the file"
kill -0 "$ppid" 2>/dev/null || fail_showing "$T/file.prog.err" "file: the program ended before it was told to"
# Give a wrongly applied 1 s default time to deliver the marker: this
# wait can only hide a failure, never cause one (the marker must be absent
# however long the program waits).
sleep 3
cp "$T/file.eventlog" "$T/file.part"
show_events "$T/file.part" "$T/file.part.show" || fail "file: ghc-events cannot parse what the file holds so far"
! has_shown_event "$T/file.part.show" idle-marker \
    || fail "file: 'idle-marker' reached the file while the program waited: file: took a flush interval"
has_shown_event "$T/file.part.show" "controlled flood 1" \
    || fail "file: what reached the file does not start capability 1's flood"
stop_controlled
prog_rc=0; wait_pid "$ppid" 60 || prog_rc=$?
check_program file "$prog_rc" "idle done"
show_events "$T/file.eventlog" "$T/file.show" || fail "file: ghc-events cannot parse the complete file"
has_shown_event "$T/file.show" idle-marker || fail "file: 'idle-marker' is not in the complete file either"

# c. The non-threaded RTS takes no default (it would refuse the flag).
build_tiny_program nonthreaded patched_ghc_lib -eventlog -rtsopts
start_receiver nt "unix:$T/nt.sock"
start_program nt "$TINY_PROGRAM" +RTS "--eventlog-sink=unix:$T/nt.sock?wait=60" -RTS
wait_both "$rpid"
check_program nt "$prog_rc" "tiny ran"
check_recv nt "$recv_rc"
show_events "$T/nt.eventlog" "$T/nt.show" || fail "nt: ghc-events cannot parse the stream"
has_shown_event "$T/nt.show" tiny || fail "nt: the user event is not in the stream"

exit 0
