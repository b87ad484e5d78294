#!/usr/bin/env bash
# bench_app.sh: what streaming the eventlog costs a real Haskell program,
# measured side by side on this machine, printed as Markdown tables.
#
# One binary, bench/App.hs built with the patched RTS's ghc-eventlog-sink
# and linked with the built library, runs every configuration; the
# helpers (bench/latency.c: a latency-measuring consumer, a stalled
# consumer and a command timer using wait4's rusage) are built beside it.
# Sections (default: all, in this order; each states its duration):
#
#   app      the event-heavy workload (App.hs `work`, -N2) with no
#            eventlog, with stock `+RTS -l` to a file, and with each
#            built-in sink and a draining consumer; ROUNDS rounds, each
#            running every configuration once in shuffled order; wall-time
#            medians and the ratios sink/file and file/no-eventlog.
#            About 8 x ROUNDS x 3 s (2-3 minutes).
#   latency  event posted to event received, through a unix: sink, at
#            --eventlog-flush-interval 1, 0.1 and 0.01 s (and none), with
#            the program otherwise quiet and with a busy thread; then the
#            cost of each interval on the app workload's wall time.
#            About 7 x LAT_SECS + 4 x ROUNDS x 3 s (2-2.5 minutes).
#   triggercost the flight recorder's dump-on= conditions evaluated on
#            every unit (conditions that never hold), against the same
#            ring: without them, on the flushcost program; paired ratios;
#            then what reading every event costs apart from the program
#            (bench/bench_parse.c on its eventlog: ns an event).
#   filecost a unix: sink with a draining consumer against the same
#            binary writing -l to tmpfs (GHC's own file writer), on the
#            flushcost program; paired ratios, FLUSH_ROUNDS rounds.  With
#            BENCH_BEFORE_PGHC, also the unix: run of App.hs built against
#            that RTS (e.g. one without the hand-over patch), paired
#            against this RTS's.
#   flushcost the cost of --eventlog-flush-interval on an event-heavy
#            program: App.hs `events FLUSH_EVENTS 4` (four threads, -N2,
#            about 3 M user events a second), unix: sink and a draining
#            consumer, with no interval, 1 s and 0.01 s (FLUSH_INTERVALS),
#            the same binary;
#            FLUSH_ROUNDS rounds, each running every configuration once in
#            shuffled order; medians and per-round paired ratios against
#            no interval (median and quartiles), wall and CPU.  With
#            BENCH_BEFORE_PGHC (another patched RTS's ghc-eventlog-sink),
#            the same rows for App.hs built against that RTS, in the same
#            rounds (before/after figures in one run).  About 6 x
#            FLUSH_ROUNDS x 2-3 s.
#   memory   peak and current RSS over MEM_SECS of steady events with
#            buffer=32M policy=drop and a stalled consumer, beside the same
#            run with no consumer and with no eventlog (run concurrently).
#            About MEM_SECS + 5 s.
#   idle     CPU time of an idle program over IDLE_SECS with no eventlog,
#            with -l, with a unix: sink and a connected consumer (the sink's
#            default 1 s flush interval), and with
#            --eventlog-flush-interval=0.1 (run concurrently).  About
#            IDLE_SECS + 3 s.
#   peer     side by side with well-typed's eventlog-socket, when
#            ELS_PEER_EVENTLOG_SOCKET names a checkout of its sources (the
#            repository or its eventlog-socket/ package directory; nothing
#            is downloaded, nothing is written there): App.hs `events N`
#            (PEER_EVENTS user events, -N2) built once with the patched RTS
#            and this library and once with the installed `ghc`
#            (BENCH_PEER_GHC), the peer's C files and bench/peer_main.c;
#            both drained by the same consumer (`eventlog-sink recv -o
#            /dev/null` over a unix socket); ROUNDS alternating rounds,
#            wall time and peak RSS.  With BENCH_BEFORE_LIBDIR (a directory
#            holding another build's libeventlog-sink.so), the same binary
#            also runs against that library, for before/after figures.
#
#   scale    cost per consumer (1, 10, 100 on one unix: sink), -N2, -N8
#            and -N16 against no eventlog at the same -N, and CPU cost at
#            rising event rates (App.hs steady); ROUNDS rounds.
#   skew     does live streaming skew the picture: App.hs alloc, sparks
#            and threads with no eventlog, -l, each sink, unix: and tcp:
#            with the live monitor attached, and stock `-l -ol FIFO`; wall time and +RTS -s mutator/GC figures
#            against what the captured eventlog shows.
#
# Usage: bench/bench_app.sh [app|latency|flushcost|triggercost|filecost|memory|idle|peer|scale|skew ...]
# Environment: BUILD_DIR (default: the source tree's _build), BENCH_ROUNDS
# (5), BENCH_SCALE (300: the work size), LAT_SECS (10), LAT_RATE (200),
# MEM_SECS (60), MEM_RATE (100000 events/s), IDLE_SECS (30),
# BENCH_APP_BUILD (where the binaries are cached, default
# ${TMPDIR:-/tmp}/bench_app-build), BENCH_KEEP=1 keeps the raw data,
# ELS_PEER_EVENTLOG_SOCKET, BENCH_PEER_GHC (ghc), PEER_EVENTS (8000000),
# BENCH_BEFORE_LIBDIR; FLUSH_EVENTS (4000000), FLUSH_ROUNDS (BENCH_ROUNDS),
# FLUSH_INTERVALS ("1 0.01"), BENCH_BEFORE_PGHC; SCALE_EVENTS (2000000), SCALE_WORK (100),
# SCALE_RATES ("10000 100000 1000000"), SCALE_SECS (3); SKEW_ALLOC (60),
# SKEW_SPARKS (1000), SKEW_THREADS (500).
#
# Markdown goes to standard output, progress to standard error.  This
# script measures; it asserts nothing about time (targets are stated next
# to the numbers for the reader) and fails only when a run goes wrong (a
# program or consumer exits badly).  It builds nothing in the source or
# build tree.
set -u -o pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$TOP/_build}
ROUNDS=${BENCH_ROUNDS:-5}
SCALE=${BENCH_SCALE:-300}
LAT_SECS=${LAT_SECS:-10}
LAT_RATE=${LAT_RATE:-200}
MEM_SECS=${MEM_SECS:-60}
MEM_RATE=${MEM_RATE:-100000}
IDLE_SECS=${IDLE_SECS:-30}
PEER_EVENTS=${PEER_EVENTS:-8000000}
PEER_SRC=${ELS_PEER_EVENTLOG_SOCKET:-}
BEFORE_LIBDIR=${BENCH_BEFORE_LIBDIR:-}
BEFORE_PGHC=${BENCH_BEFORE_PGHC:-}
FLUSH_EVENTS=${FLUSH_EVENTS:-4000000}
FLUSH_ROUNDS=${FLUSH_ROUNDS:-$ROUNDS}
FLUSH_INTERVALS=${FLUSH_INTERVALS:-1 0.01}
OBJ=${BENCH_APP_BUILD:-${TMPDIR:-/tmp}/bench_app-build}

TOOL=$BUILD_DIR/tools/eventlog-sink
LIBDIR=$BUILD_DIR/lib/.libs
PGHC=$BUILD_DIR/patched-rts/bin/ghc-eventlog-sink
APP=$OBJ/app
LAT=$OBJ/latency
PEER_APP=$OBJ/peer-app
APP_RTS_BEFORE=$OBJ/app-rts-before

log() { echo "bench_app: $*" >&2; }
die() { echo "bench_app: error: $*" >&2; exit 1; }

for s in "$@"; do
    case $s in
        app | latency | flushcost | triggercost | filecost | memory | idle | peer | scale | skew) ;;
        *) echo "usage: bench/bench_app.sh [app|latency|flushcost|triggercost|filecost|memory|idle|peer|scale|skew ...]" >&2; exit 2 ;;
    esac
done
[ "$#" -gt 0 ] || set -- app latency flushcost triggercost filecost memory idle peer scale skew

[ -x "$TOOL" ] || die "no receiver at $TOOL (build the tree first: scripts/build.sh)"
[ -e "$LIBDIR/libeventlog-sink.so" ] || die "no library in $LIBDIR"
[ -x "$PGHC" ] || die "no patched RTS at $PGHC"
[ -z "$BEFORE_PGHC" ] || [ -x "$BEFORE_PGHC" ] || die "BENCH_BEFORE_PGHC: no $BEFORE_PGHC"

# ---------------------------------------------------------------------------
# Temporary directory (tmpfs when there is one, so that the -l file and the
# file: sink write to memory as the consumers write to /dev/null) and the
# background processes this script started
# ---------------------------------------------------------------------------

if [ -d /dev/shm ] && [ -w /dev/shm ]; then
    W=$(mktemp -d /dev/shm/bench_app.XXXXXX) || die "mktemp failed"
else
    W=$(mktemp -d "${TMPDIR:-/tmp}/bench_app.XXXXXX") || die "mktemp failed"
fi
bg_pids=()
cleanup() {
    local p
    for p in "${bg_pids[@]}"; do
        kill "$p" 2>/dev/null || true
    done
    if [ "${BENCH_KEEP:-0}" = 1 ]; then
        log "raw data kept in $W"
    else
        rm -rf "$W"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------------------
# Build (cached; rebuilt when a source, the library or the RTS is newer)
# ---------------------------------------------------------------------------

build() {
    mkdir -p "$OBJ" || die "cannot create $OBJ"
    (
        if command -v flock >/dev/null 2>&1; then
            exec 9>"$OBJ/.lock"
            flock 9
        fi
        fresh=1 dep=
        [ -x "$APP" ] || fresh=0
        for dep in "$TOP/bench/App.hs" "$LIBDIR/libeventlog-sink.so" "$PGHC" \
                   "$BUILD_DIR"/patched-rts/lib/rts/libHSrts*.a; do
            [ -e "$dep" ] || continue
            [ "$fresh" -eq 0 ] || [ "$APP" -nt "$dep" ] || fresh=0
        done
        if [ "$fresh" -eq 0 ]; then
            log "building $APP"
            cp "$TOP/bench/App.hs" "$OBJ/App.hs" &&
            (cd "$OBJ" && "$PGHC" -v0 -O -threaded -eventlog -rtsopts \
                -outputdir obj App.hs -o app.new \
                -L"$LIBDIR" -leventlog-sink -optl-Wl,-rpath,"$LIBDIR") &&
            mv -f "$OBJ/app.new" "$APP" || exit 1
        fi
        # The same program against another patched RTS, for the
        # flushcost section's before/after rows; rebuilt every run, since
        # that RTS may have changed under the same path.
        if [ -n "$BEFORE_PGHC" ]; then
            log "building $APP_RTS_BEFORE with $BEFORE_PGHC"
            mkdir -p "$OBJ/before" &&
            cp "$TOP/bench/App.hs" "$OBJ/before/App.hs" &&
            (cd "$OBJ/before" && "$BEFORE_PGHC" -v0 -O -threaded -eventlog -rtsopts \
                -outputdir obj -fforce-recomp App.hs -o app.new \
                -L"$LIBDIR" -leventlog-sink -optl-Wl,-rpath,"$LIBDIR") &&
            mv -f "$OBJ/before/app.new" "$APP_RTS_BEFORE" || exit 1
        fi
        if [ -n "$PEER_SRC" ] && { [ ! -x "$PEER_APP" ] ||
                [ "$TOP/bench/App.hs" -nt "$PEER_APP" ] ||
                [ "$TOP/bench/peer_main.c" -nt "$PEER_APP" ]; }; then
            build_peer || exit 1
        fi
        if [ ! -x "$LAT" ] || [ "$TOP/bench/latency.c" -nt "$LAT" ]; then
            log "building $LAT"
            ${CC:-cc} -std=gnu11 -O2 -Wall -Wextra "$TOP/bench/latency.c" \
                -o "$LAT.new" && mv -f "$LAT.new" "$LAT" || exit 1
        fi
    ) || die "build failed"
}

# build_peer: App.hs with the installed (stock) GHC, a C main
# (bench/peer_main.c) and the peer's C files, as its C-main examples are
# built, from a copy of its sources under $OBJ.
build_peer() {
    local pkg=$PEER_SRC src=$OBJ/peer-src f cs=()
    [ -d "$pkg/eventlog-socket/cbits" ] && pkg=$pkg/eventlog-socket
    [ -f "$pkg/cbits/eventlog_socket.c" ] && [ -f "$pkg/include/eventlog_socket.h" ] || {
        echo "bench_app: $PEER_SRC holds no eventlog-socket sources (cbits/eventlog_socket.c)" >&2
        return 1
    }
    log "building $PEER_APP from $pkg with $("${BENCH_PEER_GHC:-ghc}" --numeric-version)"
    rm -rf "$src" && mkdir -p "$src" && cp -R "$pkg/cbits" "$pkg/include" "$src/" || return 1
    while IFS= read -r f; do cs+=("$f"); done < <(find "$src/cbits" -name '*.c' ! -name control.c | sort)
    cp "$TOP/bench/App.hs" "$TOP/bench/peer_main.c" "$src/" &&
    # The package's own flags (eventlog-socket.cabal: -std=c11
    # -D_POSIX_C_SOURCE, NDEBUG without the debug flag; control commands
    # off by default); <assert.h> is included by Cabal's build, not by
    # every file.
    (cd "$src" && "${BENCH_PEER_GHC:-ghc}" -v0 -O -threaded -eventlog -no-hs-main \
        -outputdir obj -optc-O2 -optc-std=c11 -optc-D_POSIX_C_SOURCE=200112L \
        -optc-DNDEBUG=1 -optc-include -optcassert.h -Icbits -Iinclude \
        App.hs peer_main.c "${cs[@]}" -o "$PEER_APP.new") &&
    mv -f "$PEER_APP.new" "$PEER_APP"
}

# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

# median: of the numbers on standard input.
median() {
    sort -g | awk '{ a[NR] = $1 } END {
        if (NR == 0) print "nan";
        else if (NR % 2) print a[(NR + 1) / 2];
        else printf "%.6f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

# wait_line FILE ERE SECS: print the first match of ERE in FILE once it
# appears (at most SECS seconds); fail otherwise.
wait_line() {
    local i=0 n=$(( $3 * 100 )) m
    while [ "$i" -lt "$n" ]; do
        m=$(grep -Eo "$2" "$1" 2>/dev/null | head -n 1)
        if [ -n "$m" ]; then
            echo "$m"
            return 0
        fi
        sleep 0.01
        i=$((i + 1))
    done
    die "no '$2' in $1 within $3 s: $(tail -n 3 "$1" 2>/dev/null)"
}

# wait_socket PATH SECS: wait until the sink's UNIX socket exists.
wait_socket() {
    local i=0
    while [ ! -S "$1" ]; do
        [ "$i" -lt $(( $2 * 100 )) ] || die "no socket $1 within $2 s"
        sleep 0.01
        i=$((i + 1))
    done
}

# start_recv BASE RECV-ARGS...: a draining consumer writing to /dev/null,
# its summary in BASE.recv.err, its rusage in BASE.recv.res; sets rpid.
start_recv() {
    local base=$1
    shift
    "$LAT" run -o "$base.recv.res" -- "$TOOL" recv -o /dev/null "$@" \
        >/dev/null 2>"$base.recv.err" &
    rpid=$!
    bg_pids+=("$rpid")
}

# spec_for CONFIG: the program's sink options and its consumer, for the
# tables.
spec_for() {
    case $1 in
        none) echo "APP work $SCALE +RTS -N2 -RTS" ;;
        file) echo "APP work $SCALE +RTS -N2 -l -ol\$W/l.eventlog -RTS" ;;
        unix) echo "APP work $SCALE +RTS -N2 --eventlog-sink=unix:\$W/s.sock -RTS
    consumer: eventlog-sink recv --retry 10 -o /dev/null unix:\$W/s.sock (started first)" ;;
        tcp) echo "APP work $SCALE +RTS -N2 --eventlog-sink=tcp:127.0.0.1:0 -RTS
    consumer: eventlog-sink recv -o /dev/null tcp:127.0.0.1:PORT (PORT from the program's log line)" ;;
        fifo) echo "APP work $SCALE +RTS -N2 --eventlog-sink=fifo:\$W/f.fifo -RTS
    consumer: eventlog-sink recv --retry 10 -o /dev/null fifo:\$W/f.fifo (started first)" ;;
        filesink) echo "APP work $SCALE +RTS -N2 --eventlog-sink=file:\$W/sink.eventlog -RTS" ;;
        unix-connect) echo "APP work $SCALE +RTS -N2 --eventlog-sink=unix-connect:\$W/c.sock -RTS
    collector: eventlog-sink recv --listen --timeout 60 -o /dev/null unix:\$W/c.sock (listening first)" ;;
        tcp-connect) echo "APP work $SCALE +RTS -N2 --eventlog-sink=tcp-connect:127.0.0.1:PORT -RTS
    collector: eventlog-sink recv --listen --timeout 60 -o /dev/null tcp:127.0.0.1:0 (listening first)" ;;
    esac
}

# run_one CONFIG TAG APP-ARGS...: run App with the sink of CONFIG (and
# the RTS options in the array EXTRA_RTS) and, where the sink needs one, a
# draining consumer.  Appends "CONFIG TAG wall user sys maxrss_kb
# consumer_ok bytes drops consumer_cpu" to $W/runs.tsv and prints the same
# line.
EXTRA_RTS=()
run_one() {
    local cfg=$1 tag=$2 base rts=(-N2) runner port rpid="" rrc=0 prc=0
    local bin=$APP envs=()
    shift 2
    base=$W/$tag
    rm -f "$W/s.sock" "$W/c.sock" "$W/f.fifo" "$W/l.eventlog" "$W/sink.eventlog" "$W/p.sock"
    case $cfg in
        none) ;;
        peer-none) bin=$PEER_APP ;;
        peer)
            bin=$PEER_APP
            start_recv "$base" --retry 10 "unix:$W/p.sock"
            envs=("GHC_EVENTLOG_UNIX_PATH=$W/p.sock" GHC_EVENTLOG_WAIT=1) ;;
        unix-before)
            start_recv "$base" --retry 10 "unix:$W/s.sock"
            envs=("LD_LIBRARY_PATH=$BEFORE_LIBDIR")
            rts+=("--eventlog-sink=unix:$W/s.sock") ;;
        file) rts+=(-l "-ol$W/l.eventlog") ;;
        unix-rts-before)
            bin=$APP_RTS_BEFORE
            start_recv "$base" --retry 10 "unix:$W/s.sock"
            rts+=("--eventlog-sink=unix:$W/s.sock") ;;
        unix)
            start_recv "$base" --retry 10 "unix:$W/s.sock"
            rts+=("--eventlog-sink=unix:$W/s.sock") ;;
        tcp) rts+=("--eventlog-sink=tcp:127.0.0.1:0") ;;
        fifo)
            start_recv "$base" --retry 10 "fifo:$W/f.fifo"
            rts+=("--eventlog-sink=fifo:$W/f.fifo") ;;
        filesink) rts+=("--eventlog-sink=file:$W/sink.eventlog") ;;
        ring) rts+=("--eventlog-sink=ring:$W/r.eventlog?size=64M&at-exit=0") ;;
        ring-trigger)
            # Conditions that read every unit and never hold: the
            # evaluator's cost alone.
            rts+=("--eventlog-sink=ring:$W/r.eventlog?size=64M&at-exit=0&dump-on=$TRIGGER_CONDS") ;;
        unix-connect)
            start_recv "$base" --listen --timeout 60 "unix:$W/c.sock"
            wait_line "$base.recv.err" 'listening on unix:' 10 >/dev/null
            rts+=("--eventlog-sink=unix-connect:$W/c.sock") ;;
        tcp-connect)
            start_recv "$base" --listen --timeout 60 "tcp:127.0.0.1:0"
            port=$(wait_line "$base.recv.err" 'listening on tcp:127\.0\.0\.1:[0-9]+' 10)
            rts+=("--eventlog-sink=tcp-connect:127.0.0.1:${port##*:}") ;;
        *) die "unknown configuration $cfg" ;;
    esac
    env "${envs[@]}" "$LAT" run -o "$base.res" -- "$bin" "$@" +RTS "${rts[@]}" "${EXTRA_RTS[@]}" -RTS \
        >"$base.out" 2>"$base.err" &
    runner=$!
    bg_pids+=("$runner")
    if [ "$cfg" = tcp ]; then
        port=$(wait_line "$base.err" 'listening on tcp:127\.0\.0\.1:[0-9]+' 10)
        start_recv "$base" "tcp:127.0.0.1:${port##*:}"
    fi
    wait "$runner" || prc=$?
    if [ -n "$rpid" ]; then wait "$rpid" || rrc=$?; fi
    [ "$prc" -eq 0 ] || die "$tag: the program exited with $prc: $(tail -n 3 "$base.err")"
    local ok=- bytes=- drops=0 d ccpu=0
    if [ -n "$rpid" ]; then
        [ "$rrc" -eq 0 ] && ok=yes || ok="no(rc=$rrc)"
        ccpu=$(awk '{ print $2 + $3 }' "$base.recv.res")
        bytes=$(grep -Eo 'received [0-9]+ bytes' "$base.recv.err" | grep -Eo '[0-9]+' || echo -)
    elif [ "$cfg" = file ]; then
        bytes=$(stat -c %s "$W/l.eventlog")
    elif [ "$cfg" = filesink ]; then
        bytes=$(stat -c %s "$W/sink.eventlog")
    fi
    # "eventlog-sink: SPEC: dropped N of M units (B bytes): ..." at exit.
    d=$(grep -Eo 'dropped [0-9]+ of' "$base.err" | grep -Eo '[0-9]+' | head -n 1)
    [ -z "$d" ] || drops=$d
    local line
    line="$cfg $tag $(cut -d' ' -f1-4 "$base.res") $ok $bytes $drops $ccpu"
    echo "$line" >>"$W/runs.tsv"
    log "$line"
    rm -f "$W/l.eventlog" "$W/sink.eventlog"
}

# rounds PREFIX CONFIG...: ROUNDS rounds, each running every CONFIG once
# in a shuffled order, tagged PREFIX-CONFIG-ROUND; APP_ARGS and EXTRA_RTS
# per configuration come from the function cfg_setup CONFIG.
rounds() {
    local prefix=$1 r c order
    shift
    for r in $(seq 1 "$ROUNDS"); do
        order=$(printf '%s\n' "$@" | shuf)
        log "$prefix round $r/$ROUNDS: $(echo "$order" | tr '\n' ' ')"
        for c in $order; do
            cfg_setup "$c"
            run_one "$CFG_SINK" "$prefix-$c-$r" "${APP_ARGS[@]}"
        done
    done
}

# stats PREFIX CONFIG: "median_wall median_cpu n complete drops MB
# median_consumer_cpu min_wall" over the runs tagged PREFIX-CONFIG-N.
stats() {
    local rows
    rows=$(awk -v p="$1-$2-" 'index($2, p) == 1 && substr($2, length(p) + 1) ~ /^[0-9]+$/' "$W/runs.tsv")
    local mw mc n ok dr by cc mn
    mw=$(echo "$rows" | awk '{ print $3 }' | median)
    mc=$(echo "$rows" | awk '{ print $4 + $5 }' | median)
    n=$(echo "$rows" | grep -c .)
    ok=$(echo "$rows" | awk '$7 == "yes" { k++ } $7 == "-" { d++ } END {
        if (d == NR) print "n/a"; else printf "%d/%d\n", k, NR }')
    dr=$(echo "$rows" | awk '{ s += $9 } END { print s + 0 }')
    by=$(echo "$rows" | awk '$8 != "-" { print $8 / 1e6 }' | median)
    [ "$by" = nan ] && by=- || by=$(printf '%.1f' "$by")
    cc=$(echo "$rows" | awk '{ print $10 }' | median)
    mn=$(echo "$rows" | awk '{ print $3 }' | sort -g | head -n 1)
    echo "$mw $mc $n $ok $dr $by $cc $mn"
}

# paired PREFIX A B: median over rounds of wall(A)/wall(B) in the same round.
paired() {
    local r a b
    for r in $(seq 1 "$ROUNDS"); do
        a=$(awk -v t="$1-$2-$r" '$2 == t { print $3 }' "$W/runs.tsv")
        b=$(awk -v t="$1-$3-$r" '$2 == t { print $3 }' "$W/runs.tsv")
        [ -n "$a" ] && [ -n "$b" ] && awk -v a="$a" -v b="$b" 'BEGIN { print a / b }'
    done | median
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

# flush_off BIN: set FLUSH_OFF to the RTS options that turn the periodic
# flush off in BIN: --eventlog-flush-interval=0 where its RTS accepts it
# (a sink other than file: then flushes every second unless told
# otherwise), none for an RTS from before that default (which refuses 0
# and flushes only when asked).  Probed once per binary.
declare -A FLUSH_OFF_CACHE=()
FLUSH_OFF=()
flush_off() {
    if [ -z "${FLUSH_OFF_CACHE[$1]+x}" ]; then
        if "$1" idle 0.01 +RTS --eventlog-flush-interval=0 -RTS >/dev/null 2>&1; then
            FLUSH_OFF_CACHE[$1]=--eventlog-flush-interval=0
        else
            FLUSH_OFF_CACHE[$1]=
        fi
    fi
    FLUSH_OFF=(${FLUSH_OFF_CACHE[$1]})
}

machine() {
    echo "Machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'),"
    echo "Linux $(uname -r), $(date -u '+%Y-%m-%d %H:%M UTC'); GHC $("$PGHC" --numeric-version) (patched RTS),"
    echo "library and receiver from $BUILD_DIR; work dir on $(df -P "$W" | awk 'NR == 2 { print $1 }');"
    echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)."
    echo
}

# ---------------------------------------------------------------------------
# 3. Application overhead
# ---------------------------------------------------------------------------

APP_CONFIGS=(none file unix tcp fifo filesink unix-connect tcp-connect)

cfg_setup_app() {
    CFG_SINK=$1
    APP_ARGS=(work "$SCALE")
    EXTRA_RTS=()
}

section_app() {
    local t0=$SECONDS c s base
    log "app: ${#APP_CONFIGS[@]} configurations x $ROUNDS rounds of 'app work $SCALE'"
    cfg_setup() { cfg_setup_app "$@"; }
    # Warm-up (page cache, CPU frequency), not counted.
    run_one none warm-none work "$SCALE"
    run_one unix warm-unix work "$SCALE"
    rounds app "${APP_CONFIGS[@]}"
    local basecpu basemin mw mc n ok dr by cc mn
    read -r base basecpu _ _ _ _ _ basemin <<<"$(stats app file)"
    read -r none _ <<<"$(stats app none)"
    echo "### 3. Application overhead"
    echo
    echo "\`app work $SCALE +RTS -N2 SINK -RTS\` (bench/App.hs: 8 workers running a"
    echo "par/pseq fold over fresh lists with a user event every 4th iteration, two"
    echo "MVar ping-pong pairs pinned to one capability each, 60,000 short-lived"
    echo "threads; at SCALE 300 about 3.9 million events, 66 MB of eventlog), $ROUNDS"
    echo "rounds, each running every configuration once in shuffled order, medians."
    echo "Consumers write to /dev/null; files go to $(df -P "$W" | awk 'NR == 2 { print $1 }')."
    echo "Sinks use the defaults (buffer=32M, policy=drop, linger=5)."
    echo
    echo "| configuration | wall s (median) | vs -l file | vs no eventlog | paired vs -l | min wall s (vs -l) | program CPU s | consumer CPU s | all CPU vs -l | MB/run | consumer complete | units dropped |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
    for c in "${APP_CONFIGS[@]}"; do
        read -r mw mc n ok dr by cc mn <<<"$(stats app "$c")"
        local pr=-
        [ "$c" = file ] || [ "$c" = none ] || pr=$(paired app "$c" file | xargs printf '%.3f')
        printf '| %s | %.3f | %s | %s | %s | %.3f (%s) | %.2f | %.3f | %s | %s | %s | %s |\n' \
            "$(label "$c")" "$mw" "$(ratio "$mw" "$base")" "$(ratio "$mw" "$none")" \
            "$pr" "$mn" "$(ratio "$mn" "$basemin")" "$mc" "$cc" "$(ratio "$(awk -v a="$mc" -v b="$cc" 'BEGIN { print a + b }')" "$basecpu")" \
            "${by:--}" "$ok" "$dr"
    done
    echo
    echo "Target: sink/file <= 1.03 (the \"vs -l file\" column for the sinks)."
    echo "\"paired vs -l\" is the median over rounds of wall(sink)/wall(-l) in the same round."
    echo "\"min wall\" is the best of the rounds: on a shared machine, the run least disturbed by other load."
    echo "CPU is user+sys from wait4's rusage (medians); \"all CPU vs -l\" is (program + consumer)"
    echo "over the -l program's, the machine-time cost of streaming, less sensitive to other load."
    echo
    echo "Commands (W is a fresh directory on tmpfs; APP is bench/App.hs built with"
    echo "\`ghc-eventlog-sink -O -threaded -eventlog -rtsopts -leventlog-sink\`):"
    echo
    echo '```'
    for c in "${APP_CONFIGS[@]}"; do
        echo "$(label "$c"): $(spec_for "$c")"
    done
    echo '```'
    echo
    echo "Section time: $((SECONDS - t0)) s."
    echo
}

label() {
    case $1 in
        none) echo "no eventlog" ;;
        file) echo "stock -l (file)" ;;
        filesink) echo "file: sink" ;;
        *) echo "$1: sink" ;;
    esac
}

# ---------------------------------------------------------------------------
# 4. Latency
# ---------------------------------------------------------------------------

lat_run() {
    local tag=$1 interval=$2 base=$W/$1 rts=(-N2) lpid rc=0 busy=()
    [ -z "$3" ] || busy=("$3")
    rm -f "$W/lat.sock"
    "$LAT" recv --retry 10 -o "$base.samples" "unix:$W/lat.sock" >"$base.lat" 2>"$base.lat.err" &
    lpid=$!
    bg_pids+=("$lpid")
    rts+=("--eventlog-sink=unix:$W/lat.sock?wait=10")
    if [ "$interval" = none ]; then
        flush_off "$APP"
        rts+=("${FLUSH_OFF[@]}")
    else
        rts+=("--eventlog-flush-interval=$interval")
    fi
    "$APP" latency "$LAT_RATE" "$LAT_SECS" "${busy[@]}" +RTS "${rts[@]}" -RTS >"$base.out" 2>"$base.err" \
        || die "$tag: the program failed: $(tail -n 3 "$base.err")"
    wait "$lpid" || rc=$?
    [ "$rc" -eq 0 ] || die "$tag: the latency consumer exited with $rc: $(cat "$base.lat.err")"
    log "$tag: $(cat "$base.lat")"
}

cfg_setup_lat() {
    CFG_SINK=unix
    APP_ARGS=(work "$SCALE")
    case $1 in
        i-none) flush_off "$APP"; EXTRA_RTS=("${FLUSH_OFF[@]}") ;;
        i-*) EXTRA_RTS=("--eventlog-flush-interval=${1#i-}") ;;
    esac
}

section_latency() {
    local t0=$SECONDS i b v
    log "latency: $LAT_RATE events/s for $LAT_SECS s per run"
    for b in quiet busy; do
        for i in none 1 0.1 0.01; do
            [ "$b:$i" != busy:none ] || continue
            lat_run "lat-$b-$i" "$i" "$([ "$b" = busy ] && echo busy)"
        done
    done
    echo "### 4. Latency"
    echo
    echo "\`app latency $LAT_RATE $LAT_SECS [busy] +RTS -N2 --eventlog-sink='unix:\$W/lat.sock?wait=10' [--eventlog-flush-interval=I] -RTS\`"
    echo "with \`latency recv --retry 10 unix:\$W/lat.sock\` (bench/latency.c) as the consumer: each"
    echo "user event carries CLOCK_MONOTONIC read just before it is posted; latency is the"
    echo "consumer's CLOCK_MONOTONIC when the read() completing the event returned, minus that."
    echo "$LAT_RATE events/s for $LAT_SECS s per run.  \"quiet\": the program does nothing else;"
    echo "\"busy\": one more thread computes all the time (the RTS never goes idle)."
    echo
    echo "| program | flush interval | events | p50 ms | p90 ms | p99 ms | max ms | stream complete |"
    echo "|---|---|---|---|---|---|---|---|"
    for b in quiet busy; do
        for i in none 1 0.1 0.01; do
            [ "$b:$i" != busy:none ] || continue
            v=$(cat "$W/lat-$b-$i.lat")
            echo "$v" | awk -v b="$b" -v i="$i" '{
                printf "| %s | %s | %s | %.1f | %.1f | %.1f | %.1f | %s |\n",
                    b, (i == "none" ? "none (2 MiB buffers fill or exit)" : i " s"),
                    $2, $4 / 1000, $6 / 1000, $8 / 1000, $10 / 1000, $14 }'
        done
    done
    echo
    log "latency: cost of the flush interval on 'app work $SCALE', $ROUNDS rounds"
    cfg_setup() { cfg_setup_lat "$@"; }
    rounds flush i-none i-1 i-0.1 i-0.01
    local mw mc n ok dr by cc base
    read -r base _ <<<"$(stats flush i-none)"
    echo "Cost of the interval on the program: \`app work $SCALE +RTS -N2 --eventlog-sink=unix:\$W/s.sock"
    echo "[--eventlog-flush-interval=I] -RTS\` with \`recv --retry 10 unix:\$W/s.sock -o /dev/null\`,"
    echo "$ROUNDS rounds in shuffled order, medians."
    echo
    echo "| flush interval | wall s (median) | vs no interval | paired vs no interval | CPU s (user+sys) | consumer complete | units dropped |"
    echo "|---|---|---|---|---|---|---|"
    for i in none 1 0.1 0.01; do
        read -r mw mc n ok dr by cc mn <<<"$(stats flush "i-$i")"
        local pr=-
        [ "$i" = none ] || pr=$(paired flush "i-$i" i-none | xargs printf '%.3f')
        printf '| %s | %.3f | %s | %s | %.2f | %s | %s |\n' "$i" "$mw" \
            "$(ratio "$mw" "$base")" "$pr" "$mc" "$ok" "$dr"
    done
    echo
    echo "Section time: $((SECONDS - t0)) s."
    echo
}

# ---------------------------------------------------------------------------
# 4b. Flush interval cost on an event-heavy program
# ---------------------------------------------------------------------------

# paired_q PREFIX A B COL: median, first and third quartile over rounds of
# COL(A)/COL(B) in the same round; COL is wall (the program's elapsed
# time) or cpu (its user+sys).
paired_q() {
    local r a b
    for r in $(seq 1 "$ROUNDS"); do
        a=$(awk -v t="$1-$2-$r" -v c="$4" '$2 == t { print (c == "wall" ? $3 : $4 + $5) }' "$W/runs.tsv")
        b=$(awk -v t="$1-$3-$r" -v c="$4" '$2 == t { print (c == "wall" ? $3 : $4 + $5) }' "$W/runs.tsv")
        [ -n "$a" ] && [ -n "$b" ] && awk -v a="$a" -v b="$b" 'BEGIN { print a / b }'
    done | sort -g | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "nan nan nan"; exit }
        # quartiles by linear interpolation between order statistics
        split("0.5 0.25 0.75", q, " ")
        for (i = 1; i <= 3; i++) {
            h = (NR - 1) * q[i] + 1; l = int(h)
            x = (l < NR) ? v[l] + (h - l) * (v[l + 1] - v[l]) : v[l]
            printf "%.3f%s", x, (i < 3 ? " " : "\n")
        } }'
}

cfg_setup_flushcost() {
    APP_ARGS=(events "$FLUSH_EVENTS" 4)
    local bin=$APP
    case $1 in
        after-*) CFG_SINK=unix ;;
        before-*) CFG_SINK=unix-rts-before bin=$APP_RTS_BEFORE ;;
    esac
    case ${1#*-} in
        none) flush_off "$bin"; EXTRA_RTS=("${FLUSH_OFF[@]}") ;;
        *) EXTRA_RTS=("--eventlog-flush-interval=${1#*-}") ;;
    esac
}

section_flushcost() {
    local t0=$SECONDS saved=$ROUNDS rts cfgs=() i
    local rtss=(after)
    [ -z "$BEFORE_PGHC" ] || rtss+=(before)
    for rts in "${rtss[@]}"; do
        for i in none $FLUSH_INTERVALS; do cfgs+=("$rts-$i"); done
    done
    ROUNDS=$FLUSH_ROUNDS
    log "flushcost: ${#cfgs[@]} configurations x $ROUNDS rounds of 'app events $FLUSH_EVENTS 4'"
    cfg_setup() { cfg_setup_flushcost "$@"; }
    cfg_setup after-none
    run_one unix warm-flush-unix "${APP_ARGS[@]}"
    rounds fc "${cfgs[@]}"
    echo "### 4b. Flush interval cost on an event-heavy program"
    echo
    echo "\`app events $FLUSH_EVENTS 4 +RTS -N2 --eventlog-sink=unix:\$W/s.sock [--eventlog-flush-interval=I] -RTS\`"
    echo "(four threads posting user events as fast as they can, two pinned to each capability)"
    echo "with \`recv --retry 10 unix:\$W/s.sock -o /dev/null\` draining it; the same binary for every"
    echo "interval, $ROUNDS rounds each running every configuration once in shuffled order."
    echo "\"none\": \`--eventlog-flush-interval=0\` where the RTS accepts it (a unix: sink's default"
    echo "is 1 s there), no flag for an RTS from before that default."
    echo "Paired: the median (first-third quartile) over rounds of the run's figure divided"
    echo "by the same RTS's no-interval run of that round.  Wall and CPU are the program's own"
    echo "(elapsed, user+sys).  Load average now: $(cut -d' ' -f1-3 /proc/loadavg)."
    [ -z "$BEFORE_PGHC" ] || echo "\"before\": App.hs built with $BEFORE_PGHC."
    echo
    echo "| RTS | flush interval | events/s | wall s (median) | paired wall | CPU s (median) | paired CPU | consumer complete |"
    echo "|---|---|---|---|---|---|---|---|"
    local c mw mc n ok dr by cc mn pw pc
    for c in "${cfgs[@]}"; do
        read -r mw mc n ok dr by cc mn <<<"$(stats fc "$c")"
        pw=- pc=-
        if [ "${c#*-}" != none ]; then
            pw=$(paired_q fc "$c" "${c%%-*}-none" wall | awk '{ printf "%s (%s-%s)", $1, $2, $3 }')
            pc=$(paired_q fc "$c" "${c%%-*}-none" cpu | awk '{ printf "%s (%s-%s)", $1, $2, $3 }')
        fi
        printf '| %s | %s | %.2f M | %.3f | %s | %.2f | %s | %s |\n' "${c%%-*}" \
            "$([ "${c#*-}" = none ] && echo none || echo "${c#*-} s")" \
            "$(awk -v e="$FLUSH_EVENTS" -v w="$mw" 'BEGIN { print e / w / 1e6 }')" \
            "$mw" "$pw" "$mc" "$pc" "$ok"
    done
    echo
    echo "Section time: $((SECONDS - t0)) s."
    echo
    ROUNDS=$saved
}

# paired_rows PREFIX BASE LABEL-FUNCTION CFG...: one row per CFG of the
# rounds PREFIX: events/s, median wall and CPU, and for every CFG but
# BASE the paired ratios against BASE (median, first-third quartile).
paired_rows() {
    local prefix=$1 base=$2 label=$3 c mw mc n ok dr by cc mn pw pc
    shift 3
    echo "| configuration | events/s | wall s (median) | paired wall | CPU s (median) | paired CPU | consumer complete |"
    echo "|---|---|---|---|---|---|---|"
    for c in "$@"; do
        read -r mw mc n ok dr by cc mn <<<"$(stats "$prefix" "$c")"
        pw=- pc=-
        if [ "$c" != "$base" ]; then
            pw=$(paired_q "$prefix" "$c" "$base" wall | awk '{ printf "%s (%s-%s)", $1, $2, $3 }')
            pc=$(paired_q "$prefix" "$c" "$base" cpu | awk '{ printf "%s (%s-%s)", $1, $2, $3 }')
        fi
        printf '| %s | %.2f M | %.3f | %s | %.2f | %s | %s |\n' "$("$label" "$c")" \
            "$(awk -v e="$FLUSH_EVENTS" -v w="$mw" 'BEGIN { print e / w / 1e6 }')" \
            "$mw" "$pw" "$mc" "$pc" "$ok"
    done
}

cfg_setup_heavy() {
    APP_ARGS=(events "$FLUSH_EVENTS" 4)
    CFG_SINK=$1
    EXTRA_RTS=()
}

# heavy_rounds NAME PREFIX CFG...: FLUSH_ROUNDS rounds (ROUNDS is set;
# the caller restores it) of the event-heavy program in each CFG, after
# one warm-up run of the second.
heavy_rounds() {
    local name=$1 prefix=$2
    shift 2
    ROUNDS=$FLUSH_ROUNDS
    log "$name: $# configurations x $ROUNDS rounds of 'app events $FLUSH_EVENTS 4'"
    cfg_setup() { cfg_setup_heavy "$@"; }
    cfg_setup "$2"
    run_one "$2" "warm-$name" "${APP_ARGS[@]}"
    rounds "$prefix" "$@"
}

# 4c. The flight recorder's dump-on= conditions, evaluated on every unit
# by the writer thread, against the same ring: without them.
TRIGGER_CONDS='marker:never-posted,message:never-posted,gc-pause>60s,heap-live>1000G'

# What reading every event costs apart from the program: bench_parse.c on
# the same program's eventlog, cut into the units the writer sees.
trigger_reading_alone() {
    local out rate cb dn nc
    "$APP" "${APP_ARGS[@]}" +RTS -N2 -l "-ol$W/tc.eventlog" -RTS >/dev/null 2>"$W/tc-file.err" ||
        die "app -l failed (see $W/tc-file.err)"
    cc -O2 -std=gnu11 -I"$TOP/include" -I"$TOP/lib" "$TOP/bench/bench_parse.c" \
        "$LIBDIR/libelscore.a" -lpthread -o "$W/bench_parse" || die "cannot build bench_parse"
    out=$("$W/bench_parse" "$W/tc.eventlog" "$TRIGGER_CONDS" 5) || die "bench_parse failed"
    read -r _ cb _ <<<"$(grep '^callback ' <<<"$out")"
    read -r _ dn _ <<<"$(grep '^dump-on ' <<<"$out")"
    read -r _ nc _ <<<"$(grep '^no-callback ' <<<"$out")"
    rate=$(awk -v e="$FLUSH_EVENTS" -v w="$(stats tc ring | cut -d' ' -f1)" 'BEGIN { print e / w }')
    echo "Reading alone (bench/bench_parse.c on the same program's \`-l\` eventlog,"
    echo "$(wc -c <"$W/tc.eventlog") bytes, cut into its blocks as the writer receives them; median of 5 passes):"
    echo "the parser delivering every event to a callback $cb ns an event, the dump-on= evaluator"
    echo "$dn ns, the parser without a callback $nc ns.  At the plain ring: run's"
    echo "$(awk -v r="$rate" 'BEGIN { printf "%.2f", r / 1e6 }') M events/s the evaluator needs $(awk -v r="$rate" -v n="$dn" 'BEGIN { printf "%.1f", r * n / 1e7 }')% of one core."
    echo
}
label_triggercost() { [ "$1" = ring ] && echo "ring:" || echo "ring: with dump-on="; }
section_triggercost() {
    local t0=$SECONDS saved=$ROUNDS cfgs=(ring ring-trigger)
    heavy_rounds triggercost tc "${cfgs[@]}"
    echo "### 4c. Flight recorder triggers on an event-heavy program"
    echo
    echo "\`app events $FLUSH_EVENTS 4 +RTS -N2 --eventlog-sink='ring:\$W/r.eventlog?size=64M&at-exit=0[&dump-on=...]' -RTS\`"
    echo "(four threads posting user events as fast as they can); with dump-on= the writer"
    echo "thread parses every unit for \`$TRIGGER_CONDS\`"
    echo "(conditions that never hold: the evaluation alone).  The same binary, $ROUNDS rounds each"
    echo "running both once in shuffled order; paired: the median (first-third quartile) over"
    echo "rounds of the dump-on= run's figure divided by the plain ring: run's of that round."
    echo "Load average now: $(cut -d' ' -f1-3 /proc/loadavg)."
    echo
    paired_rows tc ring label_triggercost "${cfgs[@]}"
    # Did the evaluator keep up?  Its report at exit, summed over the
    # dump-on= runs.
    local read=0 bad=0 missed=0 f line
    for f in "$W"/tc-ring-trigger-*.err; do
        [ -e "$f" ] || continue
        line=$(grep -o 'dump-on read [0-9]* units, [0-9]* bad, [0-9]* missed' "$f") || continue
        set -- $line
        read=$((read + $3)) bad=$((bad + $5)) missed=$((missed + $7))
    done
    echo
    echo "The evaluator over all dump-on= runs: read $read units, $bad that did not parse,"
    echo "$missed forgotten by the recorder before it reached them (0: it kept up)."
    echo
    trigger_reading_alone
    echo "Section time: $((SECONDS - t0)) s."
    echo
    ROUNDS=$saved
}

# 4d. A unix: sink with a draining consumer against GHC's own file writer
# (-l to tmpfs), the same binary, on the event-heavy program.
label_filecost() {
    case $1 in
        file) echo "-l -ol (tmpfs)" ;;
        unix) echo "unix: sink + recv" ;;
        unix-rts-before) echo "unix: sink + recv, RTS before" ;;
    esac
}
section_filecost() {
    local t0=$SECONDS saved=$ROUNDS cfgs=(file unix)
    [ -z "$BEFORE_PGHC" ] || cfgs+=(unix-rts-before)
    heavy_rounds filecost fw "${cfgs[@]}"
    echo "### 4d. A unix: sink against GHC's own file writer on an event-heavy program"
    echo
    echo "\`app events $FLUSH_EVENTS 4 +RTS -N2 -l -ol\$W/l.eventlog -RTS\` (\$W on $(df --output=fstype "$W" | tail -n 1))"
    echo "against \`app events $FLUSH_EVENTS 4 +RTS -N2 --eventlog-sink=unix:\$W/s.sock -RTS\` with"
    echo "\`recv --retry 10 unix:\$W/s.sock -o /dev/null\` draining it (the sink's default 1 s flush)."
    echo "The same binary, $ROUNDS rounds each running both once in shuffled order; wall and CPU"
    echo "are the program's own (elapsed, user+sys; the consumer's CPU is apart); paired: the"
    echo "median (first-third quartile) over rounds of the unix: run's figure divided by the"
    echo "file run's of that round.  Load average now: $(cut -d' ' -f1-3 /proc/loadavg)."
    echo
    paired_rows fw file label_filecost "${cfgs[@]}"
    # On two cores the program keeps busy, the consumer's CPU is taken from
    # the program: say how much.
    echo
    echo "The consumer (recv) used $(stats fw unix | awk '{ printf "%.3f", $7 }') s of CPU per run (median), beside the"
    echo "program's $(stats fw unix | awk '{ printf "%.3f", $2 }') s; the file writer's runs have none."
    if [ -n "$BEFORE_PGHC" ]; then
        echo
        echo "\"RTS before\": App.hs built with $BEFORE_PGHC, the same library."
        echo "Paired, this RTS's unix: run against the before RTS's of the same round:"
        echo "wall $(paired_q fw unix unix-rts-before wall | awk '{ printf "%s (%s-%s)", $1, $2, $3 }'),"
        echo "CPU $(paired_q fw unix unix-rts-before cpu | awk '{ printf "%s (%s-%s)", $1, $2, $3 }')."
    fi
    echo
    echo "Section time: $((SECONDS - t0)) s."
    echo
    ROUNDS=$saved
}

# ---------------------------------------------------------------------------
# 5. Memory
# ---------------------------------------------------------------------------

# child_of PID: the first child of PID (the program under /usr/bin/time).
child_of() {
    local i c
    for i in $(seq 1 500); do
        c=$(awk '{ print $1 }' "/proc/$1/task/$1/children" 2>/dev/null)
        if [ -n "$c" ]; then
            echo "$c"
            return 0
        fi
        sleep 0.01
    done
    die "no child of $1"
}

status_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status" 2>/dev/null; }

section_memory() {
    local t0=$SECONDS timer=() names=(stalled nocons noel) n spid
    local opts="buffer=32M&policy=drop&linger=1"
    if [ -x /usr/bin/time ]; then timer=(/usr/bin/time -v -o); fi
    log "memory: $MEM_SECS s of about $MEM_RATE events/s, three programs at once"
    rm -f "$W/m1.sock" "$W/m2.sock"
    "$LAT" stall --retry 10 "unix:$W/m1.sock" 2>"$W/mem-stall.err" &
    spid=$!
    bg_pids+=("$spid")
    declare -A tpid ppid
    for n in "${names[@]}"; do
        local rts=(-N2)
        case $n in
            stalled) rts+=("--eventlog-sink=unix:$W/m1.sock?$opts") ;;
            nocons) rts+=("--eventlog-sink=unix:$W/m2.sock?$opts") ;;
        esac
        if [ "${#timer[@]}" -gt 0 ]; then
            "${timer[@]}" "$W/mem-$n.time" "$APP" steady "$MEM_SECS" "$MEM_RATE" \
                +RTS "${rts[@]}" -RTS >"$W/mem-$n.out" 2>"$W/mem-$n.err" &
            tpid[$n]=$!
            ppid[$n]=$(child_of "${tpid[$n]}")
        else
            "$LAT" run -p "$W/mem-$n.pid" -o "$W/mem-$n.res" -- "$APP" steady "$MEM_SECS" \
                "$MEM_RATE" +RTS "${rts[@]}" -RTS >"$W/mem-$n.out" 2>"$W/mem-$n.err" &
            tpid[$n]=$!
            sleep 0.2
            ppid[$n]=$(cat "$W/mem-$n.pid")
        fi
        bg_pids+=("${tpid[$n]}")
    done
    # Sample VmRSS and VmHWM every 5 s while they run.
    local start=$EPOCHREALTIME t next=0 row
    : >"$W/mem.samples"
    while :; do
        t=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')
        if [ "$t" -ge "$next" ]; then
            row="$t"
            for n in "${names[@]}"; do
                row="$row $(status_kb "${ppid[$n]}" VmRSS || true) $(status_kb "${ppid[$n]}" VmHWM || true)"
            done
            echo "$row" >>"$W/mem.samples"
            next=$((next + 5))
            [ "$t" -lt "$MEM_SECS" ] || break
        fi
        kill -0 "${ppid[stalled]}" 2>/dev/null || break
        sleep 0.2
    done
    for n in "${names[@]}"; do
        wait "${tpid[$n]}" || die "memory: $n exited badly: $(tail -n 3 "$W/mem-$n.err")"
    done
    kill "$spid" 2>/dev/null
    wait "$spid" 2>/dev/null
    echo "### 5. Memory"
    echo
    echo "\`app steady $MEM_SECS $MEM_RATE +RTS -N2 SINK -RTS\`: about $MEM_RATE user events a second"
    echo "(two threads, batches every 10 ms) for $MEM_SECS s, the three programs at once:"
    echo
    echo "* stalled: \`--eventlog-sink='unix:\$W/m1.sock?$opts'\` with a consumer that connects"
    echo "  and never reads (\`latency stall unix:\$W/m1.sock\`, bench/latency.c);"
    echo "* no consumer: \`--eventlog-sink='unix:\$W/m2.sock?$opts'\`, nobody connects;"
    echo "* no eventlog."
    echo
    echo "RSS in MiB from /proc/PID/status (VmRSS current, VmHWM peak), sampled every 5 s:"
    echo
    echo "| t s | stalled RSS | stalled peak | no consumer RSS | no consumer peak | no eventlog RSS | no eventlog peak |"
    echo "|---|---|---|---|---|---|---|"
    awk '{ printf "| %s |", $1; for (i = 2; i <= 7; i++) printf " %s |", ($i == "" ? "-" : sprintf("%.1f", $i / 1024)); printf "\n" }' "$W/mem.samples"
    echo
    echo "| program | max RSS MiB (time -v / wait4) | user events | exit report on stderr |"
    echo "|---|---|---|---|"
    local mx ev rep lab
    for n in "${names[@]}"; do
        if [ -f "$W/mem-$n.time" ]; then
            mx=$(awk -F': ' '/Maximum resident set size/ { printf "%.1f", $2 / 1024 }' "$W/mem-$n.time")
        else
            mx=$(awk '{ printf "%.1f", $4 / 1024 }' "$W/mem-$n.res")
        fi
        ev=$(grep -Eo '[0-9]+' "$W/mem-$n.out" | head -n 1)
        rep=$(grep -E 'dropped' "$W/mem-$n.err" | head -n 1 | sed 's/|/\\|/g')
        case $n in stalled) lab="stalled consumer" ;; nocons) lab="no consumer" ;; noel) lab="no eventlog" ;; esac
        echo "| $lab | $mx | ${ev:--} | ${rep:--} |"
    done
    echo
    echo "Section time: $((SECONDS - t0)) s."
    echo
}

# ---------------------------------------------------------------------------
# 6. Idle cost
# ---------------------------------------------------------------------------

section_idle() {
    local t0=$SECONDS names=(noel file unix unix-flush file-flush) n hz
    hz=$(getconf CLK_TCK)
    log "idle: $IDLE_SECS s, five programs at once"
    declare -A rpid ppid last
    for n in "${names[@]}"; do
        local rts=(-N2)
        rm -f "$W/idle-$n.sock"
        case $n in
            file) rts+=(-l "-ol$W/idle-$n.eventlog") ;;
            file-flush) rts+=(-l "-ol$W/idle-$n.eventlog" --eventlog-flush-interval=0.1) ;;
            unix) rts+=("--eventlog-sink=unix:$W/idle-$n.sock?wait=10") ;;
            unix-flush) rts+=("--eventlog-sink=unix:$W/idle-$n.sock?wait=10" --eventlog-flush-interval=0.1) ;;
        esac
        case $n in
            unix*)
                "$LAT" run -o "$W/idle-$n.recv.res" -- "$TOOL" recv --retry 10 -o /dev/null \
                    "unix:$W/idle-$n.sock" >/dev/null 2>"$W/idle-$n.recv.err" &
                rpid[$n]=$!
                bg_pids+=("${rpid[$n]}") ;;
        esac
        "$LAT" run -p "$W/idle-$n.pid" -o "$W/idle-$n.res" -- "$APP" idle "$IDLE_SECS" \
            +RTS "${rts[@]}" -RTS >"$W/idle-$n.out" 2>"$W/idle-$n.err" &
        bg_pids+=("$!")
    done
    sleep 0.5
    for n in "${names[@]}"; do ppid[$n]=$(cat "$W/idle-$n.pid"); done
    # /proc/PID/stat utime+stime (fields 14 and 15, clock ticks), the last
    # sample before each program exits.
    local alive=1 s
    while [ "$alive" -eq 1 ]; do
        alive=0
        for n in "${names[@]}"; do
            s=$(sed 's/^.*) //' "/proc/${ppid[$n]}/stat" 2>/dev/null | awk '{ print $12 + $13 }')
            if [ -n "$s" ]; then last[$n]=$s; alive=1; fi
        done
        sleep 1
    done
    wait 2>/dev/null
    echo "### 6. Idle cost"
    echo
    echo "\`app idle $IDLE_SECS +RTS -N2 SINK -RTS\` (wakes every 100 ms, does nothing), five programs"
    echo "at once; CPU seconds of the program from wait4's rusage (and /proc/PID/stat utime+stime,"
    echo "last sample before exit, 1/$hz s ticks), and of the consumer where there is one."
    echo
    echo "| configuration | program CPU s (rusage) | program CPU s (/proc stat) | wall s | consumer CPU s |"
    echo "|---|---|---|---|---|"
    local lab
    for n in "${names[@]}"; do
        case $n in
            noel) lab="no eventlog" ;;
            file) lab="-l (file)" ;;
            file-flush) lab="-l --eventlog-flush-interval=0.1" ;;
            unix) lab="unix: sink + recv (its default 1 s flush interval)" ;;
            unix-flush) lab="unix: sink + recv, --eventlog-flush-interval=0.1" ;;
        esac
        local rc=-
        [ ! -f "$W/idle-$n.recv.res" ] || rc=$(awk '{ printf "%.3f", $2 + $3 }' "$W/idle-$n.recv.res")
        awk -v l="$lab" -v p="${last[$n]:-0}" -v hz="$hz" -v rc="$rc" \
            '{ printf "| %s | %.3f | %.2f | %.2f | %s |\n", l, $2 + $3, p / hz, $1, rc }' "$W/idle-$n.res"
    done
    echo
    echo "Sinks: \`--eventlog-sink='unix:\$W/idle-N.sock?wait=10'\` with"
    echo "\`recv --retry 10 -o /dev/null unix:\$W/idle-N.sock\`; -l writes \`-ol\$W/idle-N.eventlog\`."
    echo
    echo "Section time: $((SECONDS - t0)) s."
    echo
}

# ---------------------------------------------------------------------------
# 7. Side by side with the peer, eventlog-socket
# ---------------------------------------------------------------------------

cfg_setup_peer() {
    CFG_SINK=$1
    APP_ARGS=(events "$PEER_EVENTS")
    EXTRA_RTS=()
}

# rss_stats PREFIX CONFIG: "median min max" of the peak RSS in MiB.
rss_stats() {
    awk -v p="$1-$2-" 'index($2, p) == 1 && substr($2, length(p) + 1) ~ /^[0-9]+$/ { print $6 / 1024 }' \
        "$W/runs.tsv" | sort -g | awk '{ a[NR] = $1 } END {
            m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
            printf "%.1f %.1f %.1f\n", m, a[1], a[NR] }'
}

section_peer() {
    local t0=$SECONDS c cfgs=(none file unix peer-none peer)
    if [ -z "$PEER_SRC" ]; then
        echo "### 7. Side by side with eventlog-socket"
        echo
        echo "Not run: give the path of eventlog-socket's sources"
        echo "(\`scripts/bench.sh --peer-eventlog-socket=DIR peer\` or ELS_PEER_EVENTLOG_SOCKET=DIR)."
        echo
        return 0
    fi
    [ -z "$BEFORE_LIBDIR" ] || cfgs+=(unix-before)
    log "peer: ${#cfgs[@]} configurations x $ROUNDS rounds of 'app events $PEER_EVENTS'"
    cfg_setup() { cfg_setup_peer "$@"; }
    run_one unix warm-peer-unix events "$PEER_EVENTS"
    run_one peer warm-peer-peer events "$PEER_EVENTS"
    rounds peer "${cfgs[@]}"
    local mw mc n ok dr by cc mn none pnone peer rm rlo rhi
    read -r none _ <<<"$(stats peer none)"
    read -r pnone _ <<<"$(stats peer peer-none)"
    read -r peer _ <<<"$(stats peer peer)"
    echo "### 7. Side by side with eventlog-socket"
    echo
    echo "\`app events $PEER_EVENTS +RTS -N2 -RTS\` (bench/App.hs: $PEER_EVENTS user events from two"
    echo "threads pinned to capabilities 0 and 1, nothing else), $ROUNDS rounds, each running every"
    echo "configuration once in shuffled order, medians.  This project: APP built with the patched"
    echo "RTS and this library.  eventlog-socket: PEER_APP, the same App.hs built with the installed"
    echo "GHC $("${BENCH_PEER_GHC:-ghc}" --numeric-version), bench/peer_main.c and the peer's C files from"
    echo "$PEER_SRC (commit $(git -C "$PEER_SRC" rev-parse --short HEAD 2>/dev/null || echo unknown))."
    echo "Both streams are drained by the same consumer, \`eventlog-sink recv -o /dev/null\`"
    echo "(read() into a buffer, write() to /dev/null)."
    echo
    echo "| configuration | wall s (median) | vs own no eventlog | vs eventlog-socket | paired vs eventlog-socket | peak RSS MiB (median, min-max) | program CPU s | consumer CPU s | MB received | consumer exit 0 | units dropped |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|"
    for c in "${cfgs[@]}"; do
        read -r mw mc n ok dr by cc mn <<<"$(stats peer "$c")"
        read -r rm rlo rhi <<<"$(rss_stats peer "$c")"
        local own=$none pr=-
        case $c in peer*) own=$pnone ;; esac
        case $c in unix | unix-before) pr=$(paired peer "$c" peer | xargs printf '%.3f') ;; esac
        printf '| %s | %.3f | %s | %s | %s | %s (%s-%s) | %.2f | %.3f | %s | %s | %s |\n' \
            "$(peer_label "$c")" "$mw" "$(ratio "$mw" "$own")" "$(ratio "$mw" "$peer")" "$pr" \
            "$rm" "$rlo" "$rhi" "$mc" "$cc" "${by:--}" "$ok" "$dr"
    done
    echo
    echo "\"vs eventlog-socket\" divides medians; \"paired\" is the median over rounds of the ratio"
    echo "within a round.  Peak RSS is ru_maxrss from wait4.  eventlog-socket's consumer exits"
    echo "non-zero because the stream ends without its end-of-data marker (the peer stops"
    echo "writing at exit before the RTS's last blocks are sent)."
    echo
    echo "Commands (W a fresh directory on tmpfs):"
    echo
    echo '```'
    echo "no eventlog: APP events $PEER_EVENTS +RTS -N2 -RTS"
    echo "stock -l (file): APP events $PEER_EVENTS +RTS -N2 -l -ol\$W/l.eventlog -RTS"
    echo "unix: sink: APP events $PEER_EVENTS +RTS -N2 --eventlog-sink=unix:\$W/s.sock -RTS"
    echo "    consumer: eventlog-sink recv --retry 10 -o /dev/null unix:\$W/s.sock (started first)"
    echo "eventlog-socket, no eventlog: PEER_APP events $PEER_EVENTS +RTS -N2 -RTS"
    echo "eventlog-socket: GHC_EVENTLOG_UNIX_PATH=\$W/p.sock GHC_EVENTLOG_WAIT=1 PEER_APP events $PEER_EVENTS +RTS -N2 -RTS"
    echo "    consumer: eventlog-sink recv --retry 10 -o /dev/null unix:\$W/p.sock (started first)"
    [ -z "$BEFORE_LIBDIR" ] ||
        echo "unix: sink, $BEFORE_LIBDIR: LD_LIBRARY_PATH=$BEFORE_LIBDIR, as unix: sink"
    echo '```'
    echo
    echo "Section time: $((SECONDS - t0)) s."
    echo
}

peer_label() {
    case $1 in
        none) echo "no eventlog (patched RTS)" ;;
        file) echo "stock -l (file)" ;;
        unix) echo "unix: sink (this project)" ;;
        unix-before) echo "unix: sink, library from BENCH_BEFORE_LIBDIR" ;;
        peer-none) echo "no eventlog (stock RTS, peer binary)" ;;
        peer) echo "eventlog-socket (unix socket)" ;;
    esac
}

# ---------------------------------------------------------------------------
# 8. Scale: consumers, capabilities, event rate
# ---------------------------------------------------------------------------

# scale_run TAG CONSUMERS APP-ARGS... : APP with a unix: sink (none when
# CONSUMERS is "none") and that many draining consumers started first;
# appends "TAG wall cpu maxrss consumers_cpu_sum mb_median" to scale.tsv.
SCALE_RTS=(-N2)
scale_run() {
    local tag=$1 k=$2 base=$W/$1 i pids=() rts=("${SCALE_RTS[@]}") rc=0
    shift 2
    rm -f "$W/k.sock"
    if [ "$k" != none ]; then
        for i in $(seq 1 "$k"); do
            "$LAT" run -o "$base.c$i.res" -- "$TOOL" recv --retry 20 -o /dev/null "unix:$W/k.sock" \
                >/dev/null 2>"$base.c$i.err" &
            pids+=("$!")
        done
        bg_pids+=("${pids[@]}")
        rts+=("--eventlog-sink=unix:$W/k.sock?max-consumers=128")
    fi
    "$LAT" run -o "$base.res" -- "$APP" "$@" +RTS "${rts[@]}" -RTS >"$base.out" 2>"$base.err" || rc=$?
    [ "$rc" -eq 0 ] || die "$tag: the program exited with $rc: $(tail -n 3 "$base.err")"
    for i in "${pids[@]}"; do wait "$i" || true; done
    local ccpu=0 mb=-
    if [ "$k" != none ]; then
        ccpu=$(cat "$base".c*.res | awk '{ s += $2 + $3 } END { printf "%.3f", s }')
        mb=$(cat "$base".c*.err | grep -Eo 'received [0-9]+ bytes' | grep -Eo '[0-9]+' |
             awk '{ print $1 / 1e6 }' | median | xargs printf '%.2f')
    fi
    local line
    line="$tag $(awk '{ print $1, $2 + $3, $4 }' "$base.res") $ccpu $mb"
    echo "$line" >>"$W/scale.tsv"
    log "$line"
    rm -f "$base".c*.res "$base".c*.err
}

# scale_med TAGPREFIX FIELD: median of FIELD (2 wall, 3 cpu, 5 consumers'
# cpu, 6 MB) over rows TAGPREFIX-ROUND.
scale_med() {
    awk -v p="$1-" -v f="$2" 'index($1, p) == 1 && substr($1, length(p) + 1) ~ /^[0-9]+$/ { print $f }' \
        "$W/scale.tsv" | median
}

section_scale() {
    local t0=$SECONDS r k n rate ev=${SCALE_EVENTS:-2000000} work=${SCALE_WORK:-100}
    local rates=(${SCALE_RATES:-10000 100000 1000000}) secs=${SCALE_SECS:-3}
    : >"$W/scale.tsv"
    log "scale: consumers (1, 10, 100), -N (2, 8, 16), event rates (${rates[*]}); $ROUNDS rounds"
    for r in $(seq 1 "$ROUNDS"); do
        SCALE_RTS=(-N2)
        for k in $(printf '%s\n' none 1 10 100 | shuf); do
            scale_run "cons-$k-$r" "$k" events "$ev"
        done
        for n in $(printf '%s\n' 2 8 16 | shuf); do
            SCALE_RTS=("-N$n")
            scale_run "caps-$n-none-$r" none work "$work"
            scale_run "caps-$n-unix-$r" 1 work "$work"
        done
        SCALE_RTS=(-N2)
        for rate in $(printf '%s\n' "${rates[@]}" | shuf); do
            scale_run "rate-$rate-none-$r" none steady "$secs" "$rate"
            scale_run "rate-$rate-unix-$r" 1 steady "$secs" "$rate"
        done
    done
    local w0 w c cc mb
    w0=$(scale_med cons-none 2)
    echo "### 8. Scale"
    echo
    echo "Consumers: \`app events $ev +RTS -N2 --eventlog-sink='unix:\$W/k.sock?max-consumers=128' -RTS\`"
    echo "with K consumers (\`eventlog-sink recv --retry 20 -o /dev/null unix:\$W/k.sock\`, all started"
    echo "first; those that connect after the program started get the stream from where it is),"
    echo "$ROUNDS rounds, medians:"
    echo
    echo "| consumers | wall s | vs no eventlog | vs 1 consumer | program CPU s | all consumers' CPU s | MB received (median consumer) |"
    echo "|---|---|---|---|---|---|---|"
    local w1
    w1=$(scale_med cons-1 2)
    for k in none 1 10 100; do
        w=$(scale_med "cons-$k" 2); c=$(scale_med "cons-$k" 3)
        cc=$(scale_med "cons-$k" 5); mb=$(scale_med "cons-$k" 6)
        printf '| %s | %.3f | %s | %s | %.2f | %.2f | %s |\n' "$([ "$k" = none ] && echo "none (no eventlog)" || echo "$k")" \
            "$w" "$(ratio "$w" "$w0")" "$(ratio "$w" "$w1")" "$c" "$cc" "$mb"
    done
    echo
    echo "Capabilities on $(nproc) cores: \`app work $work +RTS -NN [--eventlog-sink=unix:\$W/k.sock] -RTS\`, one consumer:"
    echo
    echo "| -N | wall s no eventlog | wall s unix: sink | sink / none | CPU s none | CPU s sink | CPU sink / none |"
    echo "|---|---|---|---|---|---|---|"
    local wn ws cn cs
    for n in 2 8 16; do
        wn=$(scale_med "caps-$n-none" 2); ws=$(scale_med "caps-$n-unix" 2)
        cn=$(scale_med "caps-$n-none" 3); cs=$(scale_med "caps-$n-unix" 3)
        printf '| %s | %.3f | %.3f | %s | %.2f | %.2f | %s |\n' "$n" "$wn" "$ws" "$(ratio "$ws" "$wn")" \
            "$cn" "$cs" "$(ratio "$cs" "$cn")"
    done
    echo
    echo "Event rate: \`app steady $secs RATE +RTS -N2 [--eventlog-sink=unix:\$W/k.sock] -RTS\` (a fixed"
    echo "duration, so the cost shows in CPU time), one consumer:"
    echo
    echo "| events/s asked | CPU s none | CPU s sink | extra CPU s | sink / none | consumer CPU s | MB received |"
    echo "|---|---|---|---|---|---|---|"
    for rate in "${rates[@]}"; do
        cn=$(scale_med "rate-$rate-none" 3); cs=$(scale_med "rate-$rate-unix" 3)
        cc=$(scale_med "rate-$rate-unix" 5); mb=$(scale_med "rate-$rate-unix" 6)
        printf '| %s | %.3f | %.3f | %+.3f | %s | %.3f | %s |\n' "$rate" "$cn" "$cs" \
            "$(awk -v a="$cs" -v b="$cn" 'BEGIN { print a - b }')" "$(ratio "$cs" "$cn")" "$cc" "$mb"
    done
    echo
    echo "Section time: $((SECONDS - t0)) s."
    echo
}

# ---------------------------------------------------------------------------
# 9. Does live streaming skew the picture?
# ---------------------------------------------------------------------------

# unixtop and tcptop: the unix: and tcp: sinks with the live monitor
# (eventlog-sink top) attached as a second consumer beside recv.
SKEW_CONFIGS=(none file filesink unix unixtop tcp tcptop fifo olfifo)

# skew_run PROG-ARGS-TAG CONFIG ROUND: one program (SKEW_ARGS) with the
# eventlog going to CONFIG, captured to $W/TAG.eventlog where there is
# one, +RTS -s to $W/TAG.s; appends "prog cfg round wall mut_el gc_el
# colls" to skew.tsv, plus the eventlog's GC count, GC elapsed and span
# (seconds) for round 1.
skew_run() {
    local prog=$1 cfg=$2 r=$3 tag=skew-$1-$2-$3 base rts=(-N2) rpid="" tpid="" cap port rc=0
    base=$W/$tag
    cap=$base.eventlog
    rm -f "$W/k.sock" "$W/k.fifo" "$W/o.fifo"
    rts+=("-s$base.s")
    case $cfg in
        none) cap= ;;
        file) rts+=(-l "-ol$cap") ;;
        filesink) rts+=("--eventlog-sink=file:$cap") ;;
        unix | unixtop)
            "$TOOL" recv --retry 10 -o "$cap" "unix:$W/k.sock" 2>"$base.recv.err" & rpid=$!
            rts+=("--eventlog-sink=unix:$W/k.sock") ;;
        tcp | tcptop) rts+=("--eventlog-sink=tcp:127.0.0.1:0") ;;
        fifo)
            "$TOOL" recv --retry 10 -o "$cap" "fifo:$W/k.fifo" 2>"$base.recv.err" & rpid=$!
            rts+=("--eventlog-sink=fifo:$W/k.fifo") ;;
        olfifo)
            mkfifo "$W/o.fifo"
            cat "$W/o.fifo" >"$cap" & rpid=$!
            rts+=(-l "-ol$W/o.fifo") ;;
    esac
    [ -z "$rpid" ] || bg_pids+=("$rpid")
    "$LAT" run -o "$base.res" -- "$APP" "${SKEW_ARGS[@]}" +RTS "${rts[@]}" -RTS \
        >"$base.out" 2>"$base.err" &
    local runner=$!
    bg_pids+=("$runner")
    case $cfg in
        tcp | tcptop)
            port=$(wait_line "$base.err" 'listening on tcp:127\.0\.0\.1:[0-9]+' 10)
            "$TOOL" recv -o "$cap" "tcp:127.0.0.1:${port##*:}" 2>"$base.recv.err" & rpid=$! ;;
    esac
    case $cfg in
        unixtop)
            wait_socket "$W/k.sock" 10
            "$TOOL" top --lines "unix:$W/k.sock" >"$base.top" 2>&1 & tpid=$! ;;
        tcptop)
            "$TOOL" top --lines "tcp:127.0.0.1:${port##*:}" >"$base.top" 2>&1 & tpid=$! ;;
    esac
    [ -z "$tpid" ] || bg_pids+=("$tpid")
    wait "$runner" || rc=$?
    if [ -n "$tpid" ]; then
        kill -INT "$tpid" 2>/dev/null || true
        wait "$tpid" 2>/dev/null || true
        grep -q '^eventlog-sink top: ' "$base.top" ||
            die "$tag: the monitor showed no view: $(tail -n 3 "$base.top")"
    fi
    [ "$rc" -eq 0 ] || die "$tag: the program exited with $rc: $(tail -n 3 "$base.err")"
    [ -z "$rpid" ] || wait "$rpid" || true
    local st el="- - -"
    st=$(awk '/Gen  [01]/ { c += $3 } /MUT +time/ { m = $5 } /GC +time/ { g = $5 }
              END { gsub(/[(s]/, "", m); gsub(/[(s]/, "", g); print m, g, c }' "$base.s")
    if [ -n "$cap" ] && [ "$r" = 1 ]; then
        # GC count: GC statistics events (tag 53); GC elapsed: time while
        # at least one capability is between Starting GC (9) and Finished
        # GC (10); span: the last event's time.
        el=$("$TOOL" dump "$cap" 2>/dev/null | awk '$2 == "cap" && ($4 == 9 || $4 == 10) { print $1, $4 }
                $2 == "cap" && $4 == 53 { n++ } $1 + 0 > last { last = $1 + 0 }
                END { print "N", n + 0, last }' | sort -k1,1n | awk '
                $1 == "N" { n = $2; last = $3; next }
                $2 == 9 { if (a++ == 0) s = $1 } $2 == 10 && a > 0 { if (--a == 0) g += $1 - s }
                END { printf "%d %.3f %.3f\n", n, g / 1e9, last / 1e9 }')
    fi
    local line
    line="$prog $cfg $r $(awk '{ print $1 }' "$base.res") $st $el $( [ -n "$cap" ] && stat -c %s "$cap" || echo 0)"
    echo "$line" >>"$W/skew.tsv"
    log "$line"
    rm -f "$cap"
}

skew_med() {
    awk -v p="$1" -v c="$2" -v f="$3" '$1 == p && $2 == c && $f != "-" { print $f }' "$W/skew.tsv" | median
}
skew_r1() {
    awk -v p="$1" -v c="$2" -v f="$3" '$1 == p && $2 == c && $3 == 1 { print $f }' "$W/skew.tsv"
}

section_skew() {
    local t0=$SECONDS r c p
    local -A args=([alloc]="alloc ${SKEW_ALLOC:-60}" [sparks]="sparks ${SKEW_SPARKS:-1000}"
                   [threads]="threads ${SKEW_THREADS:-500}")
    : >"$W/skew.tsv"
    log "skew: 3 programs x ${#SKEW_CONFIGS[@]} configurations x $ROUNDS rounds"
    for r in $(seq 1 "$ROUNDS"); do
        for p in alloc sparks threads; do
            read -r -a SKEW_ARGS <<<"${args[$p]}"
            for c in $(printf '%s\n' "${SKEW_CONFIGS[@]}" | shuf); do
                skew_run "$p" "$c" "$r"
            done
        done
    done
    echo "### 9. Does live streaming skew the picture?"
    echo
    echo "Three programs (bench/App.hs), each \`+RTS -N2 -sFILE\` with no eventlog, the stock"
    echo "\`-l\` file, each sink with a consumer writing the stream to a file, and the stock"
    echo "\`-l -ol FIFO\` route with \`cat FIFO > file\` as the reader; $ROUNDS rounds, configurations"
    echo "shuffled within each, medians.  Program figures are what \`+RTS -s\` reports (elapsed"
    echo "times; medians, then round 1's beside the eventlog's); eventlog figures come from the captured stream of round 1 (\`eventlog-sink"
    echo "dump\`): GC count = GC statistics events, GC elapsed = time during which at least one"
    echo "capability is between Starting GC and Finished GC, mutator = last event time - GC."
    echo "\"+ monitor\": the same sink with \`eventlog-sink top --lines\` attached as a second"
    echo "consumer once the sink listens (so it joins at a snapshot), refreshing every second."
    echo
    local w0 w mut gc n en eg es mb
    for p in alloc sparks threads; do
        w0=$(skew_med "$p" none 4)
        echo "\`app ${args[$p]}\`:"
        echo
        echo "| configuration | wall s | vs no eventlog | MUT s (-s) | GC s (-s) | GCs (-s) | round 1: GCs (-s) | GCs (eventlog) | GC s (-s) | GC s (eventlog) | MUT s (-s) | mutator s (eventlog) | MB |"
        echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        for c in "${SKEW_CONFIGS[@]}"; do
            w=$(skew_med "$p" "$c" 4); mut=$(skew_med "$p" "$c" 5); gc=$(skew_med "$p" "$c" 6)
            n=$(skew_med "$p" "$c" 7)
            en=$(skew_r1 "$p" "$c" 8); eg=$(skew_r1 "$p" "$c" 9); es=$(skew_r1 "$p" "$c" 10)
            mb=$(skew_r1 "$p" "$c" 11)
            local em=-
            [ "$en" = - ] || em=$(awk -v a="$es" -v b="$eg" 'BEGIN { printf "%.3f", a - b }')
            printf '| %s | %.3f | %s | %.3f | %.3f | %.0f | %s | %s | %s | %s | %s | %s | %s |\n' "$(skew_label "$c")" \
                "$w" "$(ratio "$w" "$w0")" "$mut" "$gc" "$n" "$(skew_r1 "$p" "$c" 7)" "$en" \
                "$(skew_r1 "$p" "$c" 6)" "$eg" "$(skew_r1 "$p" "$c" 5)" "$em" \
                "$(awk -v b="$mb" 'BEGIN { if (b > 0) printf "%.2f", b / 1e6; else print "-" }')"
        done
        echo
    done
    echo "Commands (W a fresh directory on tmpfs; PROG one of \`alloc ${SKEW_ALLOC:-60}\`, \`sparks ${SKEW_SPARKS:-1000}\`, \`threads ${SKEW_THREADS:-500}\`):"
    echo
    echo '```'
    echo "no eventlog: APP PROG +RTS -N2 -s\$W/x.s -RTS"
    echo "stock -l (file): APP PROG +RTS -N2 -s\$W/x.s -l -ol\$W/x.eventlog -RTS"
    echo "file: sink: APP PROG +RTS -N2 -s\$W/x.s --eventlog-sink=file:\$W/x.eventlog -RTS"
    echo "unix: sink: APP PROG +RTS -N2 -s\$W/x.s --eventlog-sink=unix:\$W/k.sock -RTS"
    echo "    consumer: eventlog-sink recv --retry 10 -o \$W/x.eventlog unix:\$W/k.sock (started first)"
    echo "tcp: sink: APP PROG +RTS -N2 -s\$W/x.s --eventlog-sink=tcp:127.0.0.1:0 -RTS"
    echo "    consumer: eventlog-sink recv -o \$W/x.eventlog tcp:127.0.0.1:PORT"
    echo "+ monitor: the unix: or tcp: run above, and once the sink listens:"
    echo "    eventlog-sink top --lines unix:\$W/k.sock (or tcp:127.0.0.1:PORT)"
    echo "fifo: sink: APP PROG +RTS -N2 -s\$W/x.s --eventlog-sink=fifo:\$W/k.fifo -RTS"
    echo "    consumer: eventlog-sink recv --retry 10 -o \$W/x.eventlog fifo:\$W/k.fifo (started first)"
    echo "stock -ol FIFO: mkfifo \$W/o.fifo; cat \$W/o.fifo > \$W/x.eventlog &"
    echo "    APP PROG +RTS -N2 -s\$W/x.s -l -ol\$W/o.fifo -RTS"
    echo '```'
    echo
    echo "Section time: $((SECONDS - t0)) s."
    echo
}

skew_label() {
    case $1 in
        none) echo "no eventlog" ;;
        file) echo "stock -l (file)" ;;
        filesink) echo "file: sink" ;;
        olfifo) echo "stock -l -ol FIFO + cat" ;;
        unixtop) echo "unix: sink + recv + monitor" ;;
        tcptop) echo "tcp: sink + recv + monitor" ;;
        *) echo "$1: sink + recv" ;;
    esac
}

# ---------------------------------------------------------------------------

build
: >"$W/runs.tsv"
machine
for s in "$@"; do
    "section_$s"
done
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
