# controlled.sh (sourced by tests/harness.sh): tests/programs/Controlled.hs,
# a program that runs until the test says stop.

# ---------------------------------------------------------------------------
# tests/programs/Controlled.hs: a program that runs until the test says stop
# ---------------------------------------------------------------------------

# build_controlled KIND: compile tests/programs/Controlled.hs and set
# CONTROLLED.  KIND patched: with the patched RTS's driver (-threaded
# -eventlog -rtsopts; the sink comes from +RTS --eventlog-sink=SPEC).
# KIND stock: with the stock GHC and examples/hello-stream/main.c as its C
# main (the sink comes from EVENTLOG_SINK).  Both link the built shared
# library.  Cached in $ELS_TOP_BUILDDIR/tests/programs/out/KIND, rebuilt
# when a source, the library or (patched) the patched RTS is newer;
# concurrent callers serialise on a lock.
build_controlled() {
    local kind=$1 src=$ELS_TOP_SRCDIR/tests/programs/Controlled.hs
    local cmain=$ELS_TOP_SRCDIR/examples/hello-stream/main.c
    local dir=$ELS_TOP_BUILDDIR/tests/programs/out/$kind log
    log=${ELS_TMP:-${TMPDIR:-/tmp}}/build-controlled-$kind.log
    mkdir -p "$dir" || fail "cannot create $dir"
    (
        if command -v flock >/dev/null 2>&1; then exec 9>"$dir/.lock"; flock 9; fi
        p=$dir/controlled
        if [ "$kind" = patched ]; then
            ! newer_than_patched_build "$p" "$src" "${BASH_SOURCE[0]}" || exit 0
        elif [ -x "$p" ]; then
            fresh=1
            for dep in "$src" "$cmain" "$ELS_SHLIB" "$ELS_INCLUDEDIR/eventlog-sink/ghc.h" \
                       "${BASH_SOURCE[0]}"; do
                [ "$p" -nt "$dep" ] || fresh=0
            done
            [ "$fresh" -eq 0 ] || exit 0
        fi
        # ghc writes a C file's object next to the source: compile copies.
        rm -rf "$dir/work"
        mkdir -p "$dir/work"
        cp "$src" "$dir/work/Controlled.hs"
        case "$kind" in
            patched)
                (cd "$dir/work" && patched_ghc_lib -v0 -O -threaded -eventlog -rtsopts \
                    -outputdir obj Controlled.hs -o controlled) ;;
            stock)
                cp "$cmain" "$dir/work/main.c"
                (cd "$dir/work" && "$GHC" -v0 -O -threaded -eventlog -no-hs-main \
                    -I"$ELS_INCLUDEDIR" -outputdir obj Controlled.hs main.c \
                    -L"$ELS_LIBDIR" -leventlog-sink -optl-Wl,-rpath,"$ELS_LIBDIR" \
                    -o controlled) ;;
            *) echo "build_controlled: unknown kind $kind" >&2; exit 1 ;;
        esac >"$log" 2>&1 || exit 1
        mv -f "$dir/work/controlled" "$p" && rm -rf "$dir/work"
    ) || {
        sed 's/^/#   /' "$log" >&2
        fail "could not build tests/programs/Controlled.hs ($kind)"
    }
    CONTROLLED=$dir/controlled
}

# start_controlled NAME CMD ARGS...: like start_program, with the program's
# standard input a FIFO that the test holds open (ctl_fd): the program
# (Controlled.hs) runs until stop_controlled.  One at a time.
start_controlled() {
    local name=$1 fifo=$ELS_TMP/$1.ctl
    shift
    rm -f "$fifo"
    mkfifo "$fifo" || fail "$name: mkfifo $fifo"
    prog_args=("$@")
    # The background shell blocks opening the FIFO until we open its
    # other end just below.
    "$@" <"$fifo" >"$ELS_TMP/$name.prog.out" 2>"$ELS_TMP/$name.prog.err" &
    ppid=$!
    bg_register "$ppid"
    exec {ctl_fd}>"$fifo"
}

# tell_controlled LINE: send LINE to the program started by
# start_controlled (see Controlled.hs for what it understands).
tell_controlled() {
    printf '%s\n' "$1" >&"$ctl_fd"
}

# stop_controlled: tell the program started by start_controlled to finish.
stop_controlled() {
    # In a subshell that ignores SIGPIPE: the program may be dead already
    # (killed by the test), and a write to a FIFO nobody reads must not
    # kill the test.
    (trap '' PIPE; echo stop >&"$ctl_fd") 2>/dev/null || true
    exec {ctl_fd}>&-
}

# wait_output NAME LINE [SECS]: wait (default 60 s, a hang guard) until
# the program (ppid) printed LINE (a whole line, fixed string) on stdout;
# fail, showing its stderr, if it exits or the guard passes first.
els_printed_or_gone() {
    grep -qxF -- "$2" "$1" || ! kill -0 "$3" 2>/dev/null
}
wait_output() {
    local out=$ELS_TMP/$1.prog.out
    wait_until "${3:-60}" els_printed_or_gone "$out" "$2" "$ppid" \
        || fail_showing "$ELS_TMP/$1.prog.err" "$1: the program did not print '$2' within ${3:-60} s"
    grep -qxF -- "$2" "$out" \
        || fail_showing "$ELS_TMP/$1.prog.err" "$1: the program ended without printing '$2'"
}
