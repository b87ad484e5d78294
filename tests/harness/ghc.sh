# ghc.sh (sourced by tests/harness.sh): what the tests need of GHC: the
# requirements (GHC, ghc-events, hsc2hs), reading eventlogs with the
# independent ghc-events reader, the example programs, and the patched
# RTS with examples/live-service built against it.

# ---------------------------------------------------------------------------
# Requirements
# ---------------------------------------------------------------------------

# require_tool: skip unless the receiver was built.
require_tool() {
    [ -x "$ELS_SINK_TOOL" ] || skip "receiver not built: $ELS_SINK_TOOL"
}

# require_ghc: skip unless GHC with RTS headers, ghc-events and the shared
# library with its GHC glue are all there.
require_ghc() {
    [ -n "$GHC" ] && command -v "$GHC" >/dev/null 2>&1 || skip "GHC not found"
    [ -n "$GHC_EVENTS" ] && command -v "$GHC_EVENTS" >/dev/null 2>&1 || skip "ghc-events not found"
    if [ -z "${GHC_INCLUDE_DIR:-}" ]; then
        local libdir
        libdir=$("$GHC" --print-libdir 2>/dev/null) || skip "$GHC --print-libdir failed"
        [ -f "$libdir/include/Rts.h" ] || skip "GHC has no RTS headers (Rts.h)"
    fi
    [ -e "$ELS_SHLIB" ] || skip "shared library not built: $ELS_SHLIB"
}

# require_hsc2hs: skip unless hsc2hs is installed (it generates
# GHC.Eventlog.Sink from its .hsc for the tests that build the Haskell
# package without cabal); a dependency, so a failure under
# ELS_REQUIRE_ALL.  Sets HSC2HS.
require_hsc2hs() {
    if [ -z "${HSC2HS:-}" ]; then HSC2HS=$(command -v hsc2hs 2>/dev/null || true); fi
    [ -n "$HSC2HS" ] || skip "hsc2hs not installed (it builds GHC.Eventlog.Sink)"
}

# ---------------------------------------------------------------------------
# Reading eventlogs with ghc-events
# ---------------------------------------------------------------------------

# ghc-events 0.17 `show` prints each event as "TIME: cap N: TEXT" (or
# "TIME: TEXT" for events without a capability).  A traceEventIO message
# prints as its bare text, exactly like an RTS log message (so do the
# library's in-band loss notices), and traceMarkerIO as "marker: TEXT": a
# user event is therefore recognised by its text, which hello-stream makes
# "hello-stream N".

# show_events FILE OUT: ghc-events show FILE > OUT; fails if ghc-events
# cannot parse FILE (it accepts a log cut at an event boundary, so callers
# must also count).
show_events() {
    "$GHC_EVENTS" show "$1" >"$2" 2>"$2.err" || {
        echo "# ghc-events show $1: $(head -c 400 "$2.err")" >&2
        return 1
    }
}

# count_user_events FILE [PREFIX]: print how many user events whose message
# starts with PREFIX (default "hello-stream ") FILE holds; status 1 if
# ghc-events cannot parse FILE.
count_user_events() {
    local file=$1 prefix=${2:-hello-stream } shown
    shown=$(mktemp "${ELS_TMP:-${TMPDIR:-/tmp}}/show.XXXXXX")
    if ! show_events "$file" "$shown"; then
        rm -f "$shown" "$shown.err"
        return 1
    fi
    # Fixed-string match on the part after "cap N: ": no regex
    # metacharacters from PREFIX leak in.
    awk -v p="$prefix" '
        /^ *[0-9]+: / {
            sub(/^ *[0-9]+: (cap [0-9]+: )?/, "")
            if (index($0, p) == 1) n++
        }
        END { print n + 0 }' "$shown"
    rm -f "$shown" "$shown.err"
}

# count_events FILE: print how many events (of any kind) FILE holds;
# status 1 if ghc-events cannot parse it.
count_events() {
    local file=$1 shown
    shown=$(mktemp "${ELS_TMP:-${TMPDIR:-/tmp}}/show.XXXXXX")
    if ! show_events "$file" "$shown"; then
        rm -f "$shown" "$shown.err"
        return 1
    fi
    awk '/^Events:/ { on = 1; next } on && /^ *[0-9]+: / { n++ } END { print n + 0 }' "$shown"
    rm -f "$shown" "$shown.err"
}

# ---------------------------------------------------------------------------
# The example program
# ---------------------------------------------------------------------------

# build_example: compile examples/hello-stream against the built shared
# library, once per build tree (cached in
# $ELS_TOP_BUILDDIR/examples/hello-stream/out and rebuilt only when a
# source or the library is newer), and set HELLO_STREAM to the program.
build_example() {
    local out log
    log=${ELS_TMP:-${TMPDIR:-/tmp}}/build-example.log
    if ! out=$(GHC=$GHC "$ELS_TOP_SRCDIR/examples/hello-stream/build.sh" \
                   "$ELS_TOP_BUILDDIR" "$ELS_TOP_BUILDDIR/examples/hello-stream/out" 2>"$log"); then
        cat "$log" >&2
        fail "could not build examples/hello-stream"
    fi
    HELLO_STREAM=$(printf '%s\n' "$out" | tail -n 1)
    [ -x "$HELLO_STREAM" ] || fail "build.sh did not produce a program ($HELLO_STREAM)"
}

# free_tcp_port: print a TCP port on 127.0.0.1 that nothing listens on now
# (a random one in 20000..59999 not in /proc/net/tcp{,6}).  Another process
# may take it before we bind: callers retry on "address in use".
free_tcp_port() {
    local port hex
    for _ in $(seq 1 50); do
        port=$(( 20000 + (RANDOM * 32768 + RANDOM) % 40000 ))
        hex=$(printf '%04X' "$port")
        # awk reads to the end: a `grep -q` here would leave the writer
        # to die of SIGPIPE, a failed pipeline under pipefail.
        if ! cat /proc/net/tcp /proc/net/tcp6 2>/dev/null \
                | awk -v p=":$hex" 'substr($2, length($2) - 4) == p { f = 1 } END { exit !f }'; then
            echo "$port"
            return 0
        fi
    done
    return 1
}

# ---------------------------------------------------------------------------
# The patched RTS (rts-patches/) and examples/live-service
# ---------------------------------------------------------------------------

# Where `make` built the patched RTS (TESTS_ENVIRONMENT passes it; by hand
# it is the build tree's patched-rts/) and its compiler driver.
if [ -z "${ELS_PATCHED_RTS_DIR:-}" ]; then
    ELS_PATCHED_RTS_DIR=$ELS_TOP_BUILDDIR/patched-rts
fi
ELS_PATCHED_GHC=$ELS_PATCHED_RTS_DIR/bin/ghc-eventlog-sink
export ELS_PATCHED_RTS_DIR ELS_PATCHED_GHC

# require_patched_rts: skip unless the patched RTS's ghc-eventlog-sink was
# built (configure found the GHC version the series is for and was not
# given --disable-patched-rts).
require_patched_rts() {
    if [ ! -x "$ELS_PATCHED_GHC" ]; then
        if [ -f "$ELS_PATCHED_RTS_DIR/SKIPPED" ]; then
            skip "no patched RTS: $(head -n 1 "$ELS_PATCHED_RTS_DIR/SKIPPED")"
        fi
        skip "no patched RTS ($ELS_PATCHED_GHC): configure found no GHC the series is for, or --disable-patched-rts"
    fi
}

# patched_ghc_lib ARGS...: compile with the patched RTS, against the built
# shared library (-leventlog-sink is added; give -rtsopts etc. yourself).
patched_ghc_lib() {
    "$ELS_PATCHED_GHC" "$@" -L"$ELS_LIBDIR" -leventlog-sink -optl-Wl,-rpath,"$ELS_LIBDIR"
}

# newer_than_patched_build PROG SRC: true when PROG exists and is newer than
# SRC, the library and the patched RTS it was linked with (no rebuild due).
newer_than_patched_build() {
    local prog=$1 dep
    shift
    [ -x "$prog" ] || return 1
    for dep in "$@" "$ELS_SHLIB" "$ELS_PATCHED_GHC" \
               "$ELS_PATCHED_RTS_DIR"/lib/rts/libHSrts*.a; do
        [ -e "$dep" ] || continue
        [ "$prog" -nt "$dep" ] || return 1
    done
    return 0
}

# setup_live_service_test: the common start of the patched-RTS tests: skip
# (77) without the receiver, GHC, ghc-events or the patched RTS; make the
# temporary directory T; build examples/live-service (LIVE_SERVICE).
setup_live_service_test() {
    require_tool
    require_ghc
    require_patched_rts
    make_tmpdir
    build_live_service
    note "program: $LIVE_SERVICE"
    T=$ELS_TMP
    PROGRAM_LABEL=live-service
}

# setup_prof_files_test: the common start of the tests that run
# tests/programs/ProfFiles.hs: skip (77) without the tool, GHC, the patched RTS
# or GHC's profiling libraries (Debian's ghc-prof); make the temporary
# directory T.
setup_prof_files_test() {
    local libdir
    require_tool
    require_ghc
    require_patched_rts
    libdir=$("$GHC" --print-libdir) || fail "$GHC --print-libdir failed"
    [ -f "$libdir/rts/libHSrts_thr_p.a" ] \
        || skip "GHC's profiling libraries are not installed (Debian package ghc-prof)"
    make_tmpdir
    T=$ELS_TMP
}

# build_prof_files NAME GHC-FLAGS...: $T/NAME (mode 0755) from
# tests/programs/ProfFiles.hs on the patched RTS, linked with the library,
# -O -threaded -rtsopts and GHC-FLAGS.  Always -O: unoptimised, a
# profiled ProfFiles.hs meets GHC 9.0.2's "PAP object entered" crash
# during heap censuses (README, "Profiled programs").
build_prof_files() {
    local name=$1 src=$ELS_TOP_SRCDIR/tests/programs/ProfFiles.hs
    shift
    mkdir -p "$T/b-$name" && cp "$src" "$T/b-$name/Main.hs" || fail "cannot copy $src"
    (cd "$T/b-$name" && patched_ghc_lib -v0 -O "$@" -threaded -rtsopts \
        -outputdir obj Main.hs -o "$T/$name") >"$T/build-$name.log" 2>&1 \
        || fail_showing "$T/build-$name.log" "could not build ProfFiles.hs ($*)"
    chmod 0755 "$T/$name"
}

# build_live_service: compile examples/live-service with the patched RTS
# (-threaded -eventlog -rtsopts) and the built shared library, once per
# build tree: cached in $ELS_TOP_BUILDDIR/examples/live-service/out and
# rebuilt only when Main.hs, the library or the patched RTS is newer.
# Concurrent callers serialise on a lock file.  Sets LIVE_SERVICE.
build_live_service() {
    local src=$ELS_TOP_SRCDIR/examples/live-service/Main.hs
    local out=$ELS_TOP_BUILDDIR/examples/live-service/out
    local prog=$out/live-service log
    log=${ELS_TMP:-${TMPDIR:-/tmp}}/build-live-service.log
    mkdir -p "$out" || fail "cannot create $out"
    (
        if command -v flock >/dev/null 2>&1; then
            exec 9>"$out/.build.lock"
            flock 9
        fi
        ! newer_than_patched_build "$prog" "$src" || exit 0
        # The source directory is read-only under distcheck: compile a
        # copy in a work directory, move the program into place in one
        # step (a concurrent reader never sees half a file).
        rm -rf "$out/work"
        mkdir -p "$out/work"
        cp "$src" "$out/work/Main.hs"
        (cd "$out/work" && patched_ghc_lib -v0 -O -threaded -eventlog -rtsopts \
            -outputdir obj Main.hs -o live-service) >"$log" 2>&1 || exit 1
        mv -f "$out/work/live-service" "$prog" && rm -rf "$out/work"
    ) || {
        sed 's/^/#   /' "$log" >&2
        fail "could not build examples/live-service with $ELS_PATCHED_GHC"
    }
    LIVE_SERVICE=$prog
    [ -x "$LIVE_SERVICE" ] || fail "no program at $LIVE_SERVICE after the build"
}

# count_shown_user_events SHOWN [PREFIX]: like count_user_events, on the
# output of show_events (so that one `ghc-events show` serves several
# checks).
count_shown_user_events() {
    awk -v p="${2:-hello-stream }" '
        /^ *[0-9]+: / {
            sub(/^ *[0-9]+: (cap [0-9]+: )?/, "")
            if (index($0, p) == 1) n++
        }
        END { print n + 0 }' "$1"
}

# has_shown_event SHOWN TEXT: true if an event in the output of show_events
# reads exactly TEXT once its "TIME: [cap N: ]" prefix is removed.
has_shown_event() {
    awk -v t="$2" '
        /^ *[0-9]+: / {
            sub(/^ *[0-9]+: (cap [0-9]+: )?/, "")
            if ($0 == t) { found = 1; exit }
        }
        END { exit !found }' "$1"
}
