#!/usr/bin/env bash
# test_parse_ghc_events.sh: the library's parser (<eventlog-sink/parse.h>)
# against ghc-events on real streams.
#
# A GHC program that exercises every event family a live monitor reads
# (threads with labels, migrations and wake-ups on -N2, sparks created,
# run, stolen and fizzled, GCs with their statistics, heap samples of -hT,
# user messages and markers, tasks, capsets) is run on the stock RTS
# (+RTS -l to a file; threaded -N2 and non-threaded) and, where the patched
# RTS was built, through the library's sinks: file:, unix: to `recv`,
# tcp-connect: to `recv --listen`, and a consumer joining late, whose
# stream must start at a snapshot of the program's state and say so in
# an in-band "joined mid-run" note.  For every stream,
# `eventlog-sink dump --counts` (the parser) and `ghc-events show` must
# agree on the number of events of each type (show prints no block
# markers, and prints user and log messages alike, so those two are
# compared as their sum), every line show prints must be of a known kind,
# the parser must say the stream ended with DATA_END, and the late
# joiner's note must decode (els_note_decode through `dump`) as a join at
# a snapshot.
#
# Skips (77) without the tool, GHC or ghc-events.  Without the patched RTS
# the sink streams are a skipped part (listed by scripts/test-all.sh), a
# failure under ELS_REQUIRE_ALL.  Synchronises on the program's own output
# lines, never on time.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"

require_tool
[ -n "$GHC" ] && command -v "$GHC" >/dev/null 2>&1 || skip "GHC not found"
[ -n "$GHC_EVENTS" ] && command -v "$GHC_EVENTS" >/dev/null 2>&1 || skip "ghc-events not found"
make_tmpdir
T=$ELS_TMP

# ---------------------------------------------------------------------------
# The workload
# ---------------------------------------------------------------------------

mkdir -p "$T/src"
cat >"$T/src/Work.hs" <<'EOF'
-- Every event family a monitor reads, in a few hundred milliseconds.
-- Arguments: [N [wait FILE]]: N user events (default 300); with "wait
-- FILE", after the work print "work done" and wait until FILE exists (the
-- test's signal) before exiting.
import Control.Concurrent
import Control.Monad
import Debug.Trace
import GHC.Conc (labelThread, par, pseq)
import System.Directory (doesFileExist)
import System.Environment (getArgs)
import System.IO
import System.Mem (performMajorGC)

fib :: Int -> Integer
fib n = if n < 2 then toInteger n else fib (n - 1) + fib (n - 2)

-- Sparks: many small ones (some run locally, some stolen, some fizzle).
parSum :: [Int] -> Integer
parSum [] = 0
parSum (x:xs) = let a = fib x; b = parSum xs in a `par` (b `pseq` (a + b))

main :: IO ()
main = do
  args <- getArgs
  hSetBuffering stdout LineBuffering
  me <- myThreadId
  labelThread me "ws-main"
  let (n, waitFor) = case args of
        [c, "wait", f] -> (read c, Just f)
        [c] -> (read c, Nothing)
        _ -> (300 :: Int, Nothing)
  forM_ [1 .. n] $ \i -> do
    traceEventIO ("ws user " ++ show i)
    when (i `mod` 10 == 0) $ traceMarkerIO ("ws marker " ++ show i)
  print (parSum (concat (replicate 20 [10 .. 22])))
  done <- newEmptyMVar
  forM_ [1 .. 4 :: Int] $ \k -> forkIO $ do
    t <- myThreadId
    labelThread t ("ws-worker-" ++ show k)
    let xs = [1 .. 200000 :: Int]
    putMVar done $! sum (map (* k) xs)
  rs <- replicateM 4 (takeMVar done)
  print (sum rs)
  -- A major GC: with -hT -i0 a heap census (sample events) for certain.
  performMajorGC
  case waitFor of
    Just file -> do
      putStrLn "work done"
      let loop = do e <- doesFileExist file
                    unless e (threadDelay 10000 >> loop)
      loop
    Nothing -> return ()
EOF

# ---------------------------------------------------------------------------
# Comparing one stream
# ---------------------------------------------------------------------------

# classify SHOWN: the ghc-events 0.17 text of each event (after the time and
# "cap N: ") mapped to its GHC tag; prints "TAG COUNT" lines, "msg COUNT"
# for user and log messages (told apart by text only: ours start "ws " or
# "eventlog-sink: "), and "unknown COUNT" plus the first unknown line.
classify() {
    awk '
        /^Events:/ { on = 1; next }
        !on || !/^ *[0-9]+: / { next }
        {
            sub(/^ *[0-9]+: (cap [0-9]+: )?/, "")
            t = ""
            if      (/^creating thread [0-9]+$/) t = 0
            else if (/^running thread [0-9]+$/) t = 1
            else if (/^stopping thread [0-9]+ \(/) t = 2
            else if (/^thread [0-9]+ is runnable$/) t = 3
            else if (/^migrating thread [0-9]+ to cap [0-9]+$/) t = 4
            else if (/^waking up thread [0-9]+ on cap [0-9]+$/) t = 8
            else if ($0 == "starting GC") t = 9
            else if ($0 == "finished GC") t = 10
            else if ($0 == "requesting sequential GC") t = 11
            else if ($0 == "requesting parallel GC") t = 12
            else if (/^creating spark thread [0-9]+$/) t = 15
            else if ($0 == "GC idle") t = 20
            else if ($0 == "GC working") t = 21
            else if ($0 == "GC done") t = 22
            else if (/^created capset [0-9]+ of type /) t = 25
            else if (/^deleted capset [0-9]+$/) t = 26
            else if (/^assigned cap [0-9]+ to capset [0-9]+$/) t = 27
            else if (/^removed cap [0-9]+ from capset [0-9]+$/) t = 28
            else if (/^capset [0-9]+: RTS version /) t = 29
            else if (/^capset [0-9]+: args: /) t = 30
            else if (/^capset [0-9]+: env: /) t = 31
            else if (/^capset [0-9]+: pid [0-9]+$/) t = 32
            else if (/^capset [0-9]+: parent pid [0-9]+$/) t = 33
            else if (/^spark stats: /) t = 34
            else if ($0 == "spark created") t = 35
            else if ($0 == "dud spark discarded") t = 36
            else if ($0 == "overflowed spark discarded") t = 37
            else if ($0 == "running a local spark") t = 38
            else if (/^stealing a spark from cap [0-9]+$/) t = 39
            else if ($0 == "spark fizzled") t = 40
            else if ($0 == "spark GCed") t = 41
            else if (/^capset [0-9]+: wall clock time /) t = 43
            else if (/^thread [0-9]+ has label "/) t = 44
            else if (/^created cap [0-9]+$/) t = 45
            else if (/^deleted cap [0-9]+$/) t = 46
            else if (/^disabled cap [0-9]+$/) t = 47
            else if (/^enabled cap [0-9]+$/) t = 48
            else if (/^allocated on heap capset /) t = 49
            else if (/^size of heap capset /) t = 50
            else if (/^live data in heap capset /) t = 51
            else if (/^heap stats for heap capset /) t = 52
            else if (/^GC stats for heap capset /) t = 53
            else if ($0 == "all caps stopped for GC") t = 54
            else if (/^task 0x[0-9a-f]+ created on cap /) t = 55
            else if (/^task 0x[0-9a-f]+ migrated from cap /) t = 56
            else if (/^task 0x[0-9a-f]+ deleted$/) t = 57
            else if (/^marker: /) t = 58
            else if (/^start heap profiling /) t = 160
            else if (/^start heap prof sample [0-9]+$/) t = 162
            else if (/^heap prof sample [0-9]+, residency [0-9]+, label /) t = 164
            else if (/^end prof sample [0-9]+$/) t = 165
            # Event types the patched RTS adds (rts-patches 0007, 0009):
            # ghc-events 0.17 shows them by the header description.
            else if ($0 == "Trace class") t = 240
            else if ($0 == "Snapshot begin") t = 241
            else if ($0 == "Snapshot end") t = 242
            else if ($0 == "Snapshot thread state") t = 243
            else if (/^ws / || /^eventlog-sink: /) t = "msg"
            else {
                if (!unknown) first = $0
                unknown++
                next
            }
            n[t]++
        }
        END {
            for (t in n) print t, n[t]
            if (unknown) print "unknown", unknown, first
        }' "$1"
}

# compare NAME FILE: the parser and ghc-events agree on FILE.
compare() {
    local name=$1 file=$2 tag count desc want got shown=$T/$1.show
    [ -s "$file" ] || fail "$name: no stream ($file missing or empty)"
    show_events "$file" "$shown" || fail "$name: ghc-events cannot parse $file"
    "$ELS_SINK_TOOL" dump --counts "$file" >"$T/$name.counts" 2>"$T/$name.dump.err" \
        || fail_showing "$T/$name.dump.err" "$name: eventlog-sink dump --counts exited with $?"
    grep -qx 'end: ended at offset [0-9]*' "$T/$name.counts" \
        || fail "$name: the parser says: $(tail -n 1 "$T/$name.counts")"
    [ "$(sed -n 's/^end: ended at offset //p' "$T/$name.counts")" -eq "$(wc -c <"$file")" ] \
        || fail "$name: the parser's end offset is not the file's size"
    classify "$shown" >"$T/$name.classes"
    if grep -q '^unknown ' "$T/$name.classes"; then
        fail "$name: ghc-events shows events of no known kind, e.g. '$(sed -n 's/^unknown [0-9]* //p' "$T/$name.classes")'"
    fi
    local msgs=0 total=0 types=0
    while read -r count tag desc; do
        [ "$count" = end: ] && continue
        case "$tag" in
            18) continue ;;                         # block markers: not shown
            16|19) msgs=$((msgs + count)); continue ;;
        esac
        got=$(awk -v t="$tag" '$1 == t { print $2 }' "$T/$name.classes")
        [ "${got:-0}" -eq "$count" ] \
            || fail "$name: event type $tag ($desc): parser $count, ghc-events ${got:-0}"
        total=$((total + count))
        [ "$count" -eq 0 ] || types=$((types + 1))
    done <"$T/$name.counts"
    got=$(awk '$1 == "msg" { print $2 }' "$T/$name.classes")
    [ "${got:-0}" -eq "$msgs" ] \
        || fail "$name: user and log messages: parser $msgs, ghc-events ${got:-0}"
    # Every kind show printed was declared (and counted) by the parser.
    while read -r tag count _; do
        [ "$tag" = msg ] && continue
        grep -q "^[0-9]* $tag " "$T/$name.counts" \
            || fail "$name: ghc-events shows $count events of type $tag, which the parser's table lacks"
    done <"$T/$name.classes"
    note "$name: $((total + msgs)) events of $((types + 1)) kinds agree"
    COMPARED_TYPES=$types
}

# has_types NAME TAG...: the stream NAME held events of each TAG (so the
# comparison above covered them).
has_types() {
    local name=$1 tag c
    shift
    for tag in "$@"; do
        c=$(awk -v t="$tag" '$2 == t { print $1 }' "$T/$name.counts")
        [ "${c:-0}" -gt 0 ] || fail "$name: no events of type $tag in the stream: the workload no longer covers it"
    done
}

# The families a monitor reads that every threaded -N2 run produces.
# Migrations, wake-ups, parallel GCs, spark threads, local spark runs and
# steals depend on scheduling, and the shutdown events (capset and cap
# deletion, task deletion) on whether the RTS could free its capabilities
# at exit: compared whenever they occur, not required.
FAMILIES="0 1 2 9 10 19 20 21 22 25 27 29 30 32 33 34 35 43 44 45 49 50 51 52 53 54 55 58 160 162 164 165"

# ---------------------------------------------------------------------------
# Stock RTS: -l files
# ---------------------------------------------------------------------------

build() {
    local out=$1 log=$T/$1.build.log
    shift
    (cd "$T/src" && "$@" -v0 -O -rtsopts -outputdir "obj-$out" Work.hs -o "$out") \
        >"$log" 2>&1 || fail_showing "$log" "could not compile the workload ($out)"
}

build stock-thr "$GHC" -threaded -eventlog
build stock-plain "$GHC" -eventlog

(cd "$T" && "$T/src/stock-thr" +RTS -N2 -lsgpfu -hT -i0 -ol"$T/stock-thr.eventlog" -RTS \
    >"$T/stock-thr.out" 2>"$T/stock-thr.err") \
    || fail_showing "$T/stock-thr.err" "the threaded workload failed"
compare stock-thr "$T/stock-thr.eventlog"
has_types stock-thr $FAMILIES

(cd "$T" && "$T/src/stock-plain" +RTS -lsgpfu -hT -i0 -ol"$T/stock-plain.eventlog" -RTS \
    >"$T/stock-plain.out" 2>"$T/stock-plain.err") \
    || fail_showing "$T/stock-plain.err" "the non-threaded workload failed"
compare stock-plain "$T/stock-plain.eventlog"
has_types stock-plain 0 1 2 9 10 19 44 58 164

# Fed by `recv` from a FIFO the stock stream is parsed by the same code:
# the receiver's verdict is the same as dump's.
# ---------------------------------------------------------------------------
# Patched RTS: the library's sinks
# ---------------------------------------------------------------------------

if [ ! -x "$ELS_PATCHED_GHC" ] || [ ! -e "$ELS_SHLIB" ]; then
    skip_part_dep sinks "no patched RTS ($ELS_PATCHED_GHC) or shared library ($ELS_SHLIB): the sink streams are not compared"
    exit 0
fi
build sink-thr patched_ghc_lib -threaded -eventlog
PROG=$T/src/sink-thr
RTSFLAGS=(-N2 -lsgpfu -hT -i0)

# file:
(cd "$T" && "$PROG" +RTS "${RTSFLAGS[@]}" "--eventlog-sink=file:$T/file.eventlog" -RTS \
    >"$T/file.out" 2>"$T/file.err") || fail_showing "$T/file.err" "file: the workload failed"
compare file "$T/file.eventlog"
has_types file $FAMILIES

# unix: to a connecting receiver (the program waits for it: wait=).
"$ELS_SINK_TOOL" recv --retry 20 -o "$T/unix.eventlog" "unix:$T/w.sock" \
    >"$T/unix.recv.out" 2>"$T/unix.recv.err" &
rpid=$!
bg_register "$rpid"
start_program unix "$PROG" +RTS "${RTSFLAGS[@]}" \
    "--eventlog-sink=unix:$T/w.sock?wait=20&policy=block" -RTS
wait_both "$rpid"
[ "$prog_rc" -eq 0 ] || fail_showing "$T/unix.prog.err" "unix: the workload exited with $prog_rc"
check_recv unix "$recv_rc"
compare unix "$T/unix.eventlog"
has_types unix $FAMILIES

# tcp-connect: to a listening receiver.
start_collector tcpc tcp:127.0.0.1:0
start_program tcpc "$PROG" +RTS "${RTSFLAGS[@]}" \
    "--eventlog-sink=tcp-connect:${collector_endpoint#tcp:}?wait=20&policy=block&trust=1" -RTS
wait_both "$cpid"
[ "$prog_rc" -eq 0 ] || fail_showing "$T/tcpc.prog.err" "tcp-connect: the workload exited with $prog_rc"
check_recv tcpc "$recv_rc"
compare tcpc "$T/tcpc.eventlog"
has_types tcpc $FAMILIES

# A consumer joining late, after the queue (3 MiB) let go of earlier
# units: its stream starts with the cached header, carries the library's
# "joined mid-run" note, and still agrees with ghc-events.  The program
# says "work done" once its 300000 user events are out, and exits when the
# test creates the go file, after the receiver took the stream's start.
start_program late "$PROG" 300000 wait "$T/go" +RTS -N2 \
    "--eventlog-sink=unix:$T/late.sock?buffer=3M&policy=drop" \
    --eventlog-flush-interval=0.1 -RTS
wait_until 60 grep -qx 'work done' "$T/late.prog.out" \
    || fail_showing "$T/late.prog.err" "late: the workload never said 'work done'"
"$ELS_SINK_TOOL" recv -o "$T/late.eventlog" "unix:$T/late.sock" \
    >"$T/late.recv.out" 2>"$T/late.recv.err" &
rpid=$!
bg_register "$rpid"
# The header and the note come first; once the receiver holds more than
# the header, let the program end.
wait_until 30 stream_has_data "$T/late.eventlog" \
    || fail_showing "$T/late.recv.err" "late: the receiver got no events"
touch "$T/go"
wait_both "$rpid"
[ "$prog_rc" -eq 0 ] || fail_showing "$T/late.prog.err" "late: the workload exited with $prog_rc"
check_recv late "$recv_rc"
compare late "$T/late.eventlog"
# The note, as ghc-events shows it and as the parser decodes it: with the
# patched RTS the joiner starts at a snapshot of the program's state (no
# loss).  A join without one (the note's "N earlier units (B bytes) were
# no longer queued") means the program's snapshot never came: a failure.
"$ELS_SINK_TOOL" dump "$T/late.eventlog" >"$T/late.dump" 2>&1 \
    || fail_showing "$T/late.dump" "late: dump failed"
shown_note=$(grep -m 1 -o 'eventlog-sink: consumer [0-9]* joined mid-run; .*' "$T/late.show") \
    || fail "late: no 'joined mid-run' note in the stream (the queue kept everything?)"
case "$shown_note" in
    *'joined mid-run; its stream starts at a snapshot'*) ;;
    *) fail "late: the joiner did not start at a snapshot of the program's state: '$shown_note'" ;;
esac
grep -q ": joined at a snapshot (no loss)\$" "$T/late.dump" \
    || fail "late: the note says '$shown_note', the decoder: $(grep -m 1 'joined\|loss note' "$T/late.dump" || echo nothing)"
# The snapshot itself: its bracket, compared above like every event.
has_types late 241 242
note "late: $shown_note, decoded as a join at a snapshot"
exit 0
