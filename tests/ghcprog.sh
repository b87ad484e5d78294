# ghcprog.sh: building the Haskell test programs in tests/programs/ and setting
# up the tests that run them (sourced by those tests, after tests/harness.sh).
# It runs no test itself.
#
# build_ghc_program OUT SRC GHC-ARGS...: compile tests/programs/SRC.hs with
# GHC-ARGS (the compiler first: e.g. patched_ghc_lib, or
# "$ELS_PATCHED_GHC" with your own link flags) into
# $ELS_TOP_BUILDDIR/tests/ghc/out/OUT, once per build tree: rebuilt only
# when the source, a C file among GHC-ARGS (a C main), this file, the
# library or the patched RTS is newer.
# Concurrent callers serialise on a lock file; the source directory may be
# read-only (distcheck), so the build happens in a work directory.  Sets
# GHC_PROGRAM.

build_ghc_program() {
    local name=$1 src=$ELS_TOP_SRCDIR/tests/programs/$2.hs what=tests/programs/$2.hs
    local dir=$ELS_TOP_BUILDDIR/tests/ghc/out log a cfiles=()
    shift 2
    for a in "$@"; do
        case $a in *.c) cfiles+=("$a") ;; esac
    done
    log=${ELS_TMP:-${TMPDIR:-/tmp}}/build-$name.log
    mkdir -p "$dir" || fail "cannot create $dir"
    (
        if command -v flock >/dev/null 2>&1; then exec 9>"$dir/.lock"; flock 9; fi
        ! newer_than_patched_build "$dir/$name" "$src" "${cfiles[@]}" \
            "${BASH_SOURCE[0]}" || exit 0
        rm -rf "$dir/work-$name"
        mkdir -p "$dir/work-$name"
        cp "$src" "$dir/work-$name/Main.hs"
        (cd "$dir/work-$name" && "$@" -v0 -outputdir obj Main.hs -o "$name") >"$log" 2>&1 \
            || exit 1
        mv -f "$dir/work-$name/$name" "$dir/$name" && rm -rf "$dir/work-$name"
    ) || {
        sed 's/^/#   /' "$log" >&2
        fail "could not build $what as $name ($*)"
    }
    GHC_PROGRAM=$dir/$name
}

# setup_ghc_program_test OUT SRC [GHC-ARGS...]: the common start of the
# tests that run a program from tests/programs/: skip (77) without the
# receiver, GHC, ghc-events or the patched RTS; make the temporary
# directory T; build SRC with the patched RTS and the built library
# (-threaded -eventlog -rtsopts, and GHC-ARGS) as OUT (GHC_PROGRAM, and
# PROGRAM_LABEL for messages).
setup_ghc_program_test() {
    require_tool
    require_ghc
    require_patched_rts
    make_tmpdir
    T=$ELS_TMP
    build_ghc_program "$1" "$2" patched_ghc_lib -threaded -eventlog -rtsopts "${@:3}"
    PROGRAM_LABEL=$1
}

# setup_durations_programs: the start of the tests on
# tests/programs/Durations.hs (setup_ghc_program_test's, and skip (77)
# without ghc-events or GHC's profiling libraries, Debian's ghc-prof):
# PLAIN, built -O, and PROF, built -O -prof -fprof-auto, both with the
# Haskell package's GHC.Eventlog.Sink.Span on the source path.
setup_durations_programs() {
    [ -n "$GHC_EVENTS" ] && command -v "$GHC_EVENTS" >/dev/null 2>&1 || skip "ghc-events not found"
    require_ghc
    local libdir p out span_src=$ELS_TOP_SRCDIR/haskell/eventlog-sink/src
    libdir=$("$GHC" --print-libdir) || fail "$GHC --print-libdir failed"
    [ -f "$libdir/rts/libHSrts_thr_p.a" ] \
        || skip "GHC's profiling libraries are not installed (Debian package ghc-prof)"
    # build_ghc_program rebuilds when Durations.hs changed, not the module
    # it imports: start afresh when Span.hs is newer than a program.
    for p in durations durations-prof; do
        out=$ELS_TOP_BUILDDIR/tests/ghc/out/$p
        [ "$span_src/GHC/Eventlog/Sink/Span.hs" -nt "$out" ] && rm -f "$out"
    done
    # -O always: see test_figures.sh (profiled censuses of unoptimised code).
    setup_ghc_program_test durations Durations -O -i"$span_src"
    PLAIN=$GHC_PROGRAM
    build_ghc_program durations-prof Durations patched_ghc_lib -threaded -eventlog -rtsopts \
        -O -prof -fprof-auto -i"$span_src"
    PROF=$GHC_PROGRAM
}

# check_readers_accept NAME FILE: the stream in FILE is one the readers
# take whole: `ghc-events validate threads` and `validate tasks` find it
# valid (they exit 0 either way: their output says), and ThreadScope's
# rule (tests/programs/ThreadScopeKeeps.hs) keeps every event.  Sets kept_line.
check_readers_accept() {
    local name=$1 file=$2 what out
    for what in threads tasks; do
        out=$("$GHC_EVENTS" validate "$what" "$file" 2>&1)
        case $out in
            *Invalid*|*invalid*) fail "$name: ghc-events validate $what rejects $file: $(printf '%s' "$out" | head -c 400)" ;;
        esac
        case $out in
            *Valid*) ;;
            *) fail "$name: ghc-events validate $what said neither valid nor invalid: $(printf '%s' "$out" | head -c 300)" ;;
        esac
    done
    [ -n "${THREADSCOPE_KEEPS:-}" ] || {
        build_ghc_program threadscope-keeps ThreadScopeKeeps "$GHC" -O0 -package ghc-events
        THREADSCOPE_KEEPS=$GHC_PROGRAM
    }
    kept_line=$("$THREADSCOPE_KEEPS" "$file" 2>&1) \
        || fail "$name: ThreadScope's reader cannot read $file: $kept_line"
    local kept total
    read -r kept total < <(printf '%s\n' "$kept_line" | sed -n 's/^kept \([0-9]*\) of \([0-9]*\)$/\1 \2/p')
    [ -n "$kept" ] || fail "$name: unexpected ThreadScope rule output: $kept_line"
    [ "$kept" -eq "$total" ] \
        || fail "$name: ThreadScope would keep only $kept of $total events of $file"
}

# windows SHOWN: each event line of SHOWN (ghc-events show output)
# prefixed by the number of event-class changes before it ("N: TEXT");
# the "Trace class" events inside a snapshot's bracket report the classes,
# they do not change anything.
windows() {
    awk '/^Events:/ { on = 1; next }
         !on || !/^ *[0-9]+: / { next }
         /: Snapshot begin$/ { snap = 1; next }
         /: Snapshot end$/ { snap = 0; next }
         /: Trace class$/ { if (!snap) w++; next }
         { sub(/^ *[0-9]+: (cap [0-9]+: )?/, ""); print w ": " $0 }' "$1"
}

# The GC events of the g class, as ghc-events show prints them.
GC_EVENTS_RE='starting GC|finished GC|GC stats|all caps stopped for GC|GC (idle|working|done)'
