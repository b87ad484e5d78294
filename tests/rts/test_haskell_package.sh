#!/usr/bin/env bash
# test_haskell_package.sh: the Haskell package (haskell/eventlog-sink,
# module GHC.Eventlog.Sink) and its example (examples/haskell-control).
#
# Checked here: cabal-install builds both offline with the patched RTS's
# compiler driver against the built library (a private CABAL_DIR whose
# config names no package repository, as on a machine without network),
# and so does the route without cabal (hsc2hs, then ghc-eventlog-sink -i);
# each program, on the patched RTS with a unix: sink and `eventlog-sink
# recv` as the consumer, then
#   - flushes from Haskell: the marker posted before the flush reaches the
#     consumer while the program waits for the consumer's acknowledgement
#     on its stdin (a FIFO), with a few KiB of events in 2 MiB buffers, so
#     only the flush can have delivered it (no timing: the consumer waits
#     for the marker, the program for the acknowledgement);
#   - stops and starts the stream from Haskell (one program on the same
#     sink, the other switching to a second socket with configure between
#     stop and start): two complete streams, each
#     parsed by ghc-events, each with exactly its round's 2N user events
#     and marker; stats while stopped and a second start fail with the
#     library's codes, named by the library (ELS_ESTOPPED, ELS_EBUSY);
#   - reads the counters from Haskell: for units and bytes, accepted ==
#     sent + dropped + queued; the flush is counted as a reason; the drop
#     causes carry the library's names; one consumer connected;
# runtime control from Haskell: the classes read back ("sgpu"), f turned
# on ("sgpfu"), a snapshot in the second stream, the buffer size changed;
# a spec the library refuses comes back from configure as ELS_ENOSCHEME
# with the library's one-line reason; and Haddock documents every exported
# name without a warning (a skipped part if haddock, which comes with
# Debian's ghc, is missing: a failure under ELS_REQUIRE_ALL=1).
#
# Skips (77) without cabal, hsc2hs, the patched RTS, GHC, ghc-events, the
# receiver or the library.  The builds are cached in
# $ELS_TOP_BUILDDIR/examples/haskell-control/out (cabal's and GHC's own
# incremental builds).
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"

require_tool
require_ghc
require_patched_rts
command -v cabal >/dev/null 2>&1 || skip "cabal-install not found (scripts/install-deps.sh installs it)"
command -v hsc2hs >/dev/null 2>&1 || skip "hsc2hs not found (it comes with Debian's ghc)"
make_tmpdir
T=$ELS_TMP

N=100
B=$ELS_TOP_BUILDDIR/examples/haskell-control/out
S=$ELS_TOP_SRCDIR
mkdir -p "$B" || fail "cannot create $B"

# ---------------------------------------------------------------------------
# Builds (serialised on a lock: cabal's build directory is not shareable)
# ---------------------------------------------------------------------------

# A config without a repository stanza: cabal then resolves base-only
# packages from the compiler's package db and never looks for Hackage.
cabal_offline() {
    mkdir -p "$B/cabal-dir"
    printf '%s\n' '-- written by tests/rts/test_haskell_package.sh: no repository' \
        'jobs: 1' >"$B/cabal-dir/config"
    CABAL_DIR=$B/cabal-dir cabal "$1" --project-file="$S/cabal.project" \
        --builddir="$B/dist-newstyle" \
        --with-compiler="$ELS_PATCHED_GHC" \
        --extra-lib-dirs="$ELS_LIBDIR" --extra-include-dirs="$ELS_INCLUDEDIR" \
        --ghc-options="-Werror -optl-Wl,-rpath,$ELS_LIBDIR" "${@:2}"
}

log=$T/build.log
(
    if command -v flock >/dev/null 2>&1; then exec 9>"$B/.lock"; flock 9; fi
    # (No set -e: it does not act in a subshell on the left of ||.)
    # Neither cabal nor GHC relinks a program when only the patched RTS
    # (or the library) changed: start afresh then.
    for p in "$B/plain/haskell-control" \
             "$(find "$B/dist-newstyle" -type f -name haskell-control -path '*/build/haskell-control/*' 2>/dev/null | head -n 1)"; do
        newer_than_patched_build "$p" || { echo "== rebuilding: $p is stale or missing"; rm -rf "$B/dist-newstyle" "$B/plain"; break; }
    done
    echo "== cabal build all"
    (cd "$S" && cabal_offline build all) || exit 1
    # Without cabal: hsc2hs, then the example with the module's source
    # directory on GHC's search path.
    echo "== hsc2hs + ghc-eventlog-sink"
    mkdir -p "$B/plain/src/GHC/Eventlog" || exit 1
    hsc2hs -I"$ELS_INCLUDEDIR" -o "$B/plain/Sink.hs.new" \
        "$S/haskell/eventlog-sink/src/GHC/Eventlog/Sink.hsc" || exit 1
    # Replaced only when it changed: GHC recompiles by timestamp.
    cmp -s "$B/plain/Sink.hs.new" "$B/plain/src/GHC/Eventlog/Sink.hs" \
        || mv -f "$B/plain/Sink.hs.new" "$B/plain/src/GHC/Eventlog/Sink.hs" || exit 1
    "$ELS_PATCHED_GHC" -v0 -O -threaded -eventlog -rtsopts -Wall -Werror \
        -i"$B/plain/src" -outputdir "$B/plain/obj" \
        "$S/examples/haskell-control/Main.hs" -o "$B/plain/haskell-control" \
        -L"$ELS_LIBDIR" -leventlog-sink -optl-Wl,-rpath,"$ELS_LIBDIR"
) >"$log" 2>&1 || {
    sed 's/^/#   /' "$log" >&2
    fail "could not build the Haskell package or its example (log above)"
}
grep -Eq ':[0-9]+:[0-9]+: warning' "$log" && {
    sed 's/^/#   /' "$log" >&2
    fail "the Haskell build printed warnings (log above)"
}

CABAL_PROGRAM=$(find "$B/dist-newstyle" -type f -perm -u+x -name haskell-control -path '*/build/haskell-control/*' | head -n 1)
[ -x "$CABAL_PROGRAM" ] || fail "no haskell-control under $B/dist-newstyle after cabal build"
PLAIN_PROGRAM=$B/plain/haskell-control

# ---------------------------------------------------------------------------
# Haddock
# ---------------------------------------------------------------------------

if part_needs haddock haddock; then
    hlog=$T/haddock.log
    (
        if command -v flock >/dev/null 2>&1; then exec 9>"$B/.lock"; flock 9; fi
        cd "$S" && cabal_offline haddock eventlog-sink
    ) >"$hlog" 2>&1 || { sed 's/^/#   /' "$hlog" >&2; fail "cabal haddock failed (log above)"; }
    # Haddock prints "NN% (a / b) in 'Module'" per module and names what
    # it could not document.
    grep -Eq "100% \( *[0-9]+ / *[0-9]+\) in 'GHC.Eventlog.Sink'" "$hlog" \
        || { sed 's/^/#   /' "$hlog" >&2; fail "Haddock does not document every export of GHC.Eventlog.Sink"; }
    grep -Eq "100% \( *[0-9]+ / *[0-9]+\) in 'GHC.Eventlog.Sink.Profiling'" "$hlog" \
        || { sed 's/^/#   /' "$hlog" >&2; fail "Haddock does not document every export of GHC.Eventlog.Sink.Profiling"; }
    grep -Eq "100% \( *[0-9]+ / *[0-9]+\) in 'GHC.Eventlog.Sink.Span'" "$hlog" \
        || { sed 's/^/#   /' "$hlog" >&2; fail "Haddock does not document every export of GHC.Eventlog.Sink.Span"; }
    # Warnings about our API fail; the two that only say base's own
    # documentation is not installed here (Debian's ghc-doc) do not: a
    # missing link destination is ours if it is in GHC.Eventlog.Sink.
    bad=$(awk '
        /^Warning: The documentation for the following packages are not installed/ { skip = 1; next }
        /could not find link destinations for:/ { links = 1; next }
        links && /^[ \t]*- / { if ($2 ~ /^GHC[.]Eventlog[.]Sink[.]/) print "no link: " $2; next }
        links && /^[ \t]*$/ { next }
        { links = 0 }
        skip && /^[a-z]/ { next }
        { skip = 0 }
        /[Ww]arning|[Mm]issing documentation/ { print }' "$hlog")
    [ -z "$bad" ] || { sed 's/^/#   /' "$hlog" >&2; fail "Haddock warned about the API: $bad"; }
fi

# ---------------------------------------------------------------------------
# The two rounds, on each build of the example
# ---------------------------------------------------------------------------

# ack NAME: acknowledge on the program's stdin (fd 3).  In a subshell, so
# that a program that died costs a failed write rather than SIGPIPE here.
ack() {
    ( echo ack >&3 ) 2>/dev/null || fail_showing "$T/$1.prog.err" "$1: the program is gone (cannot acknowledge)"
}

# wait_line NAME LINE: wait until the program printed LINE.
wait_line() {
    wait_until 60 grep -qx -- "$2" "$T/$1.prog.out" \
        || fail_showing "$T/$1.prog.err" "$1: the program did not print '$2' (stdout: $(tr '\n' '|' <"$T/$1.prog.out"))"
}

# wait_marker NAME FILE R: wait until the consumer's file holds round R's
# marker (its text is in the event's payload, verbatim).
# shellcheck disable=SC2317 # called through wait_until
els_has_marker() {
    grep -qaF "haskell-control flushed $2" "$1" 2>/dev/null
}
wait_marker() {
    wait_until 60 els_has_marker "$2" "$3" \
        || fail "$1: the marker of round $3 did not reach the consumer after the flush ($(stat -c %s "$2" 2>/dev/null || echo 0) bytes received)"
}

# check_stats NAME R: the program's "stats R:" line is consistent.
check_stats() {
    local name=$1 r=$2 line kind a s q d names
    line=$(grep "^stats $r: " "$T/$name.prog.out") || fail "$name: no 'stats $r:' line"
    note "$name: $line"
    for kind in units bytes; do
        read -r a s q d < <(sed -n "s/.* $kind accepted \([0-9]*\) sent \([0-9]*\) queued \([0-9]*\) dropped \([0-9]*\);.*/\1 \2 \3 \4/p" <<<"$line")
        [ -n "${d:-}" ] || fail "$name: cannot read the $kind counters of '$line'"
        [ "$a" -gt 0 ] || fail "$name: round $r: no $kind accepted"
        [ "$a" -eq $((s + q + d)) ] \
            || fail "$name: round $r: $kind accepted $a != sent $s + queued $q + dropped $d"
    done
    sed -n 's/.* reasons .* flush \([0-9]*\) .*/\1/p' <<<"$line" | grep -qv '^0$' \
        || fail "$name: round $r: the flush is not counted among the reasons"
    grep -q '; consumers 1$' <<<"$line" || fail "$name: round $r: not exactly one consumer connected"
    # Causes named by the library: words, none "unknown" (the name of a
    # cause the library does not have), none twice.
    names=$(sed -n 's/.*; drops \([^;]*\);.*/\1/p' <<<"$line" | awk '{ for (i = 1; i < NF; i += 2) print $i }')
    [ -n "$names" ] || fail "$name: round $r: no drop causes listed"
    ! grep -qvE '^[a-z][a-z-]*$' <<<"$names" || fail "$name: round $r: odd drop cause names: $names"
    ! grep -qx unknown <<<"$names" || fail "$name: round $r: a drop cause the library does not know"
    [ -z "$(sort <<<"$names" | uniq -d)" ] || fail "$name: round $r: a drop cause listed twice"
}

# check_stream NAME R FILE: a valid stream with round R's events only.
check_stream() {
    local name=$1 r=$2 file=$3 other=$((3 - $2)) n
    validate_stream "$file" "$T/$name.$r.show" "haskell-control " \
        || fail "$name: stream $r: $vs_why"
    n=$(count_shown_user_events "$T/$name.$r.show" "haskell-control $r ")
    [ "$n" -eq $((2 * N)) ] || fail "$name: stream $r holds $n of its $((2 * N)) user events"
    n=$(count_shown_user_events "$T/$name.$r.show" "haskell-control $other ")
    [ "$n" -eq 0 ] || fail "$name: stream $r holds $n events of round $other"
    grep -q "marker: haskell-control flushed $r\$" "$T/$name.$r.show" \
        || fail "$name: stream $r lacks its marker"
    note "$name: stream $r: $vs_events events"
}

# scenario NAME PROGRAM same|switch: both rounds with PROGRAM; the
# second stream on the same socket, or (switch) on another one that the
# program chooses in Haskell between stop and start (configure).
scenario() {
    local name=$1 prog=$2 sock=$T/$1.sock sock2=$T/$1.sock r1 r2 rc switch=()
    if [ "$3" = switch ]; then
        sock2=$T/$1-2.sock
        switch=(--restart-on "unix:$sock2")
    fi
    mkfifo "$T/$name.ctl" || fail "mkfifo failed"
    start_receiver "$name.1" "unix:$sock"
    r1=$rpid
    "$prog" "${switch[@]}" "$N" +RTS -N2 "--eventlog-sink=unix:$sock" -RTS \
        <"$T/$name.ctl" >"$T/$name.prog.out" 2>"$T/$name.prog.err" &
    ppid=$!
    bg_register "$ppid"
    exec 3>"$T/$name.ctl"

    wait_line "$name" "flushed 1"
    wait_marker "$name" "$T/$name.1.eventlog" 1
    ack "$name"
    # The stop ends stream 1: its consumer gets DATA_END and exits.
    rc=0; wait_pid "$r1" 60 || rc=$?
    check_recv "$name.1" "$rc"
    wait_line "$name" "stats while stopped: ELS_ESTOPPED"
    wait_line "$name" "second start: ELS_EBUSY"
    wait_line "$name" "started"

    start_receiver "$name.2" "unix:$sock2"
    r2=$rpid
    wait_line "$name" "flushed 2"
    wait_marker "$name" "$T/$name.2.eventlog" 2
    ack "$name"
    exec 3>&-
    wait_both "$r2"
    check_program "$name" "$prog_rc" "stats 2: .*"
    check_recv "$name.2" "$recv_rc"
    # Runtime control from Haskell: classes read back, f turned on, a
    # snapshot in the stream, the buffer size changed.
    check_program "$name" "$prog_rc" "classes sgpu"
    check_program "$name" "$prog_rc" "classes sgpfu"
    check_program "$name" "$prog_rc" "buffer 1048576"

    check_stats "$name" 1
    check_stats "$name" 2
    check_stream "$name" 1 "$T/$name.1.eventlog"
    check_stream "$name" 2 "$T/$name.2.eventlog"
    # Every stream starts with a snapshot; the one taken from Haskell is
    # the second.
    n=$("$GHC_EVENTS" show "$T/$name.2.eventlog" | grep -c ': Snapshot begin$')
    [ "$n" -ge 2 ] || fail "$name: the second stream lacks the snapshot taken from Haskell ($n snapshots)"
}

scenario cabal "$CABAL_PROGRAM" same
scenario plain "$PLAIN_PROGRAM" switch

# A spec the library refuses: configure returns ELS_ENOSCHEME with the
# library's one-line reason, and the program says so and exits 1.  (Its
# first stream has no consumer; the acknowledgement is already waiting.)
rc=0
"$PLAIN_PROGRAM" --restart-on "tc:$T/x" 1 +RTS "--eventlog-sink=unix:$T/bad.sock" -RTS \
    <<<ack >"$T/bad.prog.out" 2>"$T/bad.prog.err" || rc=$?
[ "$rc" -eq 1 ] || fail_showing "$T/bad.prog.err" "bad spec: exit status $rc (expected 1)"
if [ "$(grep -c '^haskell-control: ' "$T/bad.prog.err")" -ne 1 ] ||
   ! grep -q '^haskell-control: configure: ELS_ENOSCHEME: .*tc' "$T/bad.prog.err"; then
    fail_showing "$T/bad.prog.err" "bad spec: not one line with configure's ELS_ENOSCHEME and the scheme"
fi
exit 0
