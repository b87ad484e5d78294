#!/usr/bin/env bash
# test_custom_sink.sh: examples/custom-sink (the "rotate:" sink) end to end.
#
# examples/live-service, unchanged, is linked on the patched RTS with the
# shared library and the archive `make` builds from
# examples/custom-sink/rotate.c, whose ELF constructor registers the
# scheme; +RTS --eventlog-sink=rotate:DIR/app?... then chooses it.  So the
# test also shows that a scheme registered by the program reaches the RTS
# before hs_init opens the sink.  Checked here:
#   - a -threaded -N2 run of 200,000 user events with policy=block and a
#     small size= rotates several times; every file starts with the same
#     header, holds whole blocks, has only DATA_END at the end of the last
#     file, and parses with ghc-events; no file passes size= unless it
#     holds one block, and none was closed while the next block would
#     have fitted; the files hold each user event exactly once, and joined
#     by examples/custom-sink/join.sh they are a stream that
#     `ghc-events validate threads` accepts;
#   - files are created with mode 0600;
#   - keep= removes the oldest files (and only regular files of the
#     prefix); numbers continue across runs of the program past any name
#     in DIR, without touching a link planted at a name;
#   - stopping and starting the eventlog at runtime starts a new file for
#     each stream;
#   - malformed options and unusable directories stop the program at
#     start-up with one line on stderr, exit status 1 and no file made;
#   - registering from a C main before hs_init (examples/custom-sink/
#     main.c, rotate.c built without its constructor) works as well;
#   - under a file size limit below size= (EFBIG) the sink moves to the
#     next file and loses nothing; below one block, the lost units are
#     said on stderr, counted and announced in the files;
#   - with both libraries linked statically and the sink's constructor run
#     before the library's, the scheme still reaches the RTS.
# What a single file misses for thread-state analysis (the threads created
# in earlier files) is said in the README; the library's own delivery is
# other tests' job.
#
# Skips (77) without GHC, ghc-events, the patched RTS, or the archive.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"

require_ghc
require_patched_rts
make_tmpdir
T=$ELS_TMP
umask 022

ROTATE_LIBDIR=$ELS_TOP_BUILDDIR/examples/custom-sink/.libs
[ -f "$ROTATE_LIBDIR/librotate-sink.a" ] \
    || skip "examples/custom-sink not built: $ROTATE_LIBDIR/librotate-sink.a"

# ---------------------------------------------------------------------------
# The programs: live-service's source linked with the rotate sink, cached
# in the build tree and rebuilt when a source, this test, the library, the
# archive or the patched RTS is newer.
# ---------------------------------------------------------------------------
src=$ELS_TOP_SRCDIR/examples/live-service/Main.hs
ex=$ELS_TOP_SRCDIR/examples/custom-sink
out=$ELS_TOP_BUILDDIR/examples/custom-sink/out
mkdir -p "$out" || fail "cannot create $out"

# build NAME GHC-ARGS...: compile Main.hs with GHC-ARGS into $out/NAME,
# with patched_ghc_lib (the shared library), or with $ELS_PATCHED_GHC
# alone if GHC_LINK=static.
build() {
    local name=$1 ghc=patched_ghc_lib
    shift
    [ "${GHC_LINK:-}" != static ] || ghc=$ELS_PATCHED_GHC
    (
        if command -v flock >/dev/null 2>&1; then exec 9>"$out/.build.lock"; flock 9; fi
        ! newer_than_patched_build "$out/$name" "$0" "$src" "$ex/rotate.c" "$ex/main.c" \
            "$ROTATE_LIBDIR/librotate-sink.a" || exit 0
        rm -rf "$out/work" && mkdir -p "$out/work" && cp "$src" "$out/work/Main.hs"
        (cd "$out/work" && "$ghc" -v0 -O -threaded -eventlog -rtsopts \
            -outputdir obj Main.hs -o "$name" "$@") >"$T/build-$name.log" 2>&1 || exit 1
        mv -f "$out/work/$name" "$out/$name" && rm -rf "$out/work"
    ) || fail_showing "$T/build-$name.log" "could not build $name"
}

# The archive's constructor registers the scheme.  --undefined: nothing in
# the program refers to the archive's only member, which the linker would
# otherwise leave out, and the constructor with it.
build live-service-rotate -L"$ROTATE_LIBDIR" -lrotate-sink \
    -optl-Wl,--undefined=rotate_sink_register
# A C main registers it before hs_init (examples/custom-sink/main.c).
build live-service-rotate-cmain -no-hs-main -I"$ELS_INCLUDEDIR" -I"$ex" \
    "$ex/main.c" "$ex/rotate.c" -optc-DROTATE_NO_CONSTRUCTOR
# Both libraries static, the sink's archive first: its constructor runs
# before the library's (checked below), so the library finds the custom
# scheme already registered when it hands its schemes to the RTS.
GHC_LINK=static build live-service-rotate-static "$ROTATE_LIBDIR/librotate-sink.a" \
    "$ELS_LIBDIR/libeventlog-sink.a" -optl-Wl,--undefined=rotate_sink_register \
    -optl-Wl,--undefined=els_ghc_writer -optl-pthread
PROG=$out/live-service-rotate
PROGRAM_LABEL=live-service-rotate

# run NAME SPEC ARGS...: run the program with ARGS and
# +RTS -N2 --eventlog-sink=SPEC; status in prog_rc.
run() {
    local name=$1 spec=$2
    shift 2
    start_program "$name" "$PROG" "$@" +RTS -N2 "--eventlog-sink=$spec" -RTS
    prog_rc=0; wait_pid "$ppid" 120 || prog_rc=$?
}

# ---------------------------------------------------------------------------
# Reading the files
# ---------------------------------------------------------------------------

# be_uint FILE OFFSET BYTES: the big-endian unsigned integer at OFFSET.
be_uint() {
    od -An -v -tu"$3" --endian=big -j "$2" -N "$3" "$1" | tr -d ' '
}

# walk FILE: check that FILE is a header followed by whole blocks (a block
# marker, tag 18, gives its block's size at offset 10) and, optionally,
# DATA_END (tag 0xFFFF) as its last two bytes.  Sets w_header (header
# length), w_blocks, w_end (1 if it ends with DATA_END), w_first (size of
# the first block), w_body (bytes before DATA_END); status 1, with w_why,
# if FILE is anything else.
walk() {
    local f=$1 size off tag bs
    w_blocks=0 w_end=0 w_first=0 w_why=
    size=$(stat -c %s "$f") || { w_why="$f: cannot stat"; return 1; }
    w_header=$(stream_header_len "$f") || { w_why="$f: does not start with a whole header"; return 1; }
    off=$w_header
    while [ "$off" -lt "$size" ]; do
        tag=$(be_uint "$f" "$off" 2)
        if [ "$tag" = 65535 ]; then
            [ $((off + 2)) -eq "$size" ] || { w_why="$f: DATA_END at $off of $size bytes"; return 1; }
            w_end=1
            break
        fi
        [ "$tag" = 18 ] || { w_why="$f: event tag $tag at $off where a block marker belongs"; return 1; }
        bs=$(be_uint "$f" $((off + 10)) 4)
        [ "$bs" -ge 24 ] && [ $((off + bs)) -le "$size" ] \
            || { w_why="$f: block of $bs bytes at $off overruns $size bytes"; return 1; }
        [ "$w_blocks" -gt 0 ] || w_first=$bs
        off=$((off + bs))
        w_blocks=$((w_blocks + 1))
    done
    w_body=$off
    [ "$w_blocks" -gt 0 ] || { w_why="$f: no block"; return 1; }
    return 0
}

# files DIR: the rotate files of prefix app in DIR, oldest first.
files() {
    find "$1" -maxdepth 1 -type f -name 'app.*.eventlog' -printf '%f\n' \
        | grep -E '^app\.[0-9]{6,}\.eventlog$' | sort -t. -k2,2n | sed "s|^|$1/|"
}

# number FILE: the number in .../app.NNNNNN.eventlog.
number() {
    local b=${1##*/app.}
    echo $((10#${b%.eventlog}))
}

# check_files NAME DIR SIZE [lossy]: every file in DIR passes walk, starts
# with the first file's header, parses with ghc-events, keeps to SIZE bytes
# unless it holds one block, and (unless lossy: a unit that failed was not
# written) was not closed while the next file's first block would have
# fitted (files of one stream: a file ending with DATA_END ends its
# stream).  Sets cf_files (the list), cf_streams (files ending with
# DATA_END); the user events of all files go to $T/NAME.user.
check_files() {
    local name=$1 dir=$2 size=$3 lossy=${4:-} f prev= prev_body=0 prev_end=1 i=0
    mapfile -t cf_files < <(files "$dir")
    [ "${#cf_files[@]}" -gt 0 ] || fail "$name: no file in $dir"
    cf_streams=0
    : >"$T/$name.user"
    for f in "${cf_files[@]}"; do
        walk "$f" || fail "$name: $w_why"
        cmp -s -n "$w_header" "${cf_files[0]}" "$f" \
            || fail "$name: $f does not start with the header of ${cf_files[0]}"
        [ "$w_body" -le "$size" ] || [ "$w_blocks" -eq 1 ] \
            || fail "$name: $f holds $w_body bytes in $w_blocks blocks, past size=$size"
        if [ -z "$lossy" ] && [ "$prev_end" -eq 0 ] && [ $((prev_body + w_first)) -le "$size" ]; then
            fail "$name: $prev was closed at $prev_body bytes though the next block ($w_first bytes) fitted in size=$size"
        fi
        [ "$(stat -c %a "$f")" = 600 ] || fail "$name: $f has mode $(stat -c %a "$f"), expected 600"
        show_events "$f" "$T/$name.$i.show" || fail "$name: ghc-events cannot parse $f"
        [ ! -s "$T/$name.$i.show.err" ] || fail "$name: ghc-events show $f: $(head -c 300 "$T/$name.$i.show.err")"
        awk '/^ *[0-9]+: / { sub(/^ *[0-9]+: (cap [0-9]+: )?/, ""); if (index($0, "live-service ") == 1) print }' \
            "$T/$name.$i.show" >>"$T/$name.user"
        cf_streams=$((cf_streams + w_end))
        prev=$f prev_body=$w_body prev_end=$w_end i=$((i + 1))
    done
    [ "$prev_end" -eq 1 ] || fail "$name: the last file $prev does not end with DATA_END"
    note "$name: ${#cf_files[@]} files, $cf_streams streams, $(wc -l <"$T/$name.user") user events"
}

# check_each_once NAME N: the files' burst events are each of 1..N once.
check_each_once() {
    local got
    got=$(awk -v n="$2" '
        { if ($0 !~ /^live-service burst [0-9]+$/) next
          i = $3 + 0; if (i < 1 || i > n || seen[i]++) bad++; else k++ }
        END { print (bad + 0) " " (k + 0) }' "$T/$1.user")
    [ "$got" = "0 $2" ] \
        || fail "$1: the files hold user events 'bad distinct' = '$got', expected '0 $2' (each of 1..$2 once)"
}

# ---------------------------------------------------------------------------
# 1. Rotation: every user event of a run, exactly once, in files that each
#    parse.  The flush interval makes blocks smaller than size=, so files
#    hold several blocks and the size rule is exercised.
# ---------------------------------------------------------------------------
N=200000
SIZE=$((1024 * 1024))
mkdir "$T/r1"
run r1 "rotate:$T/r1/app?size=1M&policy=block" burst "$N" +RTS --eventlog-flush-interval=0.05 -RTS
check_program r1 "$prog_rc" "emitted $N user events"
check_files r1 "$T/r1" "$SIZE"
[ "${#cf_files[@]}" -ge 3 ] || fail "r1: ${#cf_files[@]} files for $N events with size=1M: it did not rotate"
[ "$cf_streams" -eq 1 ] || fail "r1: $cf_streams files end with DATA_END, expected only the last"
for i in "${!cf_files[@]}"; do
    [ "$(number "${cf_files[$i]}")" -eq $((i + 1)) ] \
        || fail "r1: files are not numbered 1..${#cf_files[@]}: ${cf_files[*]##*/}"
done
check_each_once r1 "$N"
bash "$ELS_TOP_SRCDIR/examples/custom-sink/join.sh" "${cf_files[@]}" >"$T/r1.joined" \
    || fail "r1: examples/custom-sink/join.sh could not join the files"
"$GHC_EVENTS" validate threads "$T/r1.joined" >"$T/r1.validate" 2>&1
head -n 1 "$T/r1.validate" | grep -q '^Valid event log' \
    || fail_showing "$T/r1.validate" "r1: the joined files are not a valid stream for 'ghc-events validate threads'"

# ---------------------------------------------------------------------------
# 2. keep=, numbering across runs, and nothing but our files touched.
# ---------------------------------------------------------------------------
mkdir "$T/r2"
echo victim >"$T/victim"
ln -s "$T/victim" "$T/r2/app.000007.eventlog"
echo other >"$T/r2/app.eventlog"
echo other >"$T/r2/app.01.eventlog"
echo other >"$T/r2/other.000001.eventlog"
run r2a "rotate:$T/r2/app?size=256K&keep=2&policy=block" burst 100000 +RTS --eventlog-flush-interval=0.05 -RTS
check_program r2a "$prog_rc" "emitted 100000 user events"
check_files r2a "$T/r2" $((256 * 1024))
[ "${#cf_files[@]}" -eq 2 ] || fail "r2a: ${#cf_files[@]} files left with keep=2: ${cf_files[*]##*/}"
first=$(number "${cf_files[0]}") last=$(number "${cf_files[1]}")
[ "$last" -eq $((first + 1)) ] || fail "r2a: kept files ${cf_files[*]##*/} are not the newest two"
[ "$last" -ge 10 ] || fail "r2a: only files 8..$last were made (past the link at 7): keep=2 removed nothing"
[ "$cf_streams" -eq 1 ] || fail "r2a: $cf_streams of the kept files end with DATA_END, expected the last"

run r2b "rotate:$T/r2/app?size=256K&keep=2&policy=block" burst 1000
check_program r2b "$prog_rc" "emitted 1000 user events"
check_files r2b "$T/r2" $((256 * 1024))
[ "${#cf_files[@]}" -eq 2 ] && [ "$(number "${cf_files[0]}")" -eq "$last" ] \
    && [ "$(number "${cf_files[1]}")" -eq $((last + 1)) ] \
    || fail "r2b: a second run left ${cf_files[*]##*/}, expected app.$(printf %06d "$last") and the next number"
[ "$(grep -c '^live-service burst ' "$T/r2b.user")" -ge 1000 ] \
    || fail "r2b: the newest files lack the second run's 1000 user events"
[ -L "$T/r2/app.000007.eventlog" ] && [ "$(cat "$T/victim")" = victim ] \
    || fail "r2: the link app.000007.eventlog or the file it points to was touched"
for f in app.eventlog app.01.eventlog other.000001.eventlog; do
    [ "$(cat "$T/r2/$f")" = other ] || fail "r2: $f, not a file of the sink, was touched"
done

# ---------------------------------------------------------------------------
# 3. A restart of the eventlog starts a new file: K stops and starts give
#    K+1 streams, each ending with DATA_END in a file of its own.
# ---------------------------------------------------------------------------
K=3
mkdir "$T/r3"
run r3 "rotate:$T/r3/app?size=256K&policy=block" restart "$K" 20000
check_program r3 "$prog_rc" "restarted $K times"
check_files r3 "$T/r3" $((256 * 1024))
[ "$cf_streams" -eq $((K + 1)) ] \
    || fail "r3: $cf_streams files end with DATA_END after $K restarts, expected $((K + 1))"
dups=$(sort "$T/r3.user" | uniq -d | wc -l)
[ "$dups" -eq 0 ] || fail "r3: $dups user events occur in more than one place"
# Each stream holds at least the 20000 events the program waits for, less
# the two workers' chunks of 100 begun while the eventlog was stopped.
min=$(( (K + 1) * (20000 - 200) ))
[ "$(wc -l <"$T/r3.user")" -ge "$min" ] \
    || fail "r3: $(wc -l <"$T/r3.user") user events in the files, expected at least $min"

# ---------------------------------------------------------------------------
# 4. Refusals: one line, status 1, no file.
# ---------------------------------------------------------------------------
mkdir "$T/e" "$T/real"
echo x >"$T/plain"
ln -s "$T/real" "$T/link"
i=0
while IFS='|' read -r spec want; do
    [ -n "$spec" ] || continue
    i=$((i + 1))
    run "bad$i" "rotate:$T/$spec" burst 10
    err=$T/bad$i.prog.err
    [ "$prog_rc" -eq 1 ] || fail_showing "$err" "rotate:$spec: exit status $prog_rc, expected 1"
    [ "$(wc -l <"$err")" -eq 1 ] || fail_showing "$err" "rotate:$spec: not one line on stderr"
    grep -qF -- "$want" "$err" || fail_showing "$err" "rotate:$spec: no '$want' on stderr"
    made=$(find "$T/e" "$T/real" -mindepth 1)
    [ -z "$made" ] || fail "rotate:$spec: a file was made: $made"
done <<EOF
e/app?size=12Q|size=12Q is not a size
e/app?size=1.5M|size=1.5M is not a size
e/app?size=-1|size=-1 is not a size
e/app?size=0|size=0: a file must be allowed at least one byte
e/app?size=99999999999999999999G|size=99999999999999999999G is too large
e/app?size=|option 'size' has an empty value
e/app?keep=0|keep=0 would remove the file being written
e/app?keep=two|keep=two is not a number of files
e/app?keep=-1|keep=-1 is not a number of files
e/app?mode=1777|mode=1777 is not octal permission bits
e/app?sise=1M|unknown option 'sise' for scheme rotate
e/|no file name prefix after the directory
e/..|the file name prefix cannot be ".."
missing/app|directory $T/missing: does not exist
plain/app|$T/plain is not a directory
link/app|$T/link is a symbolic link
EOF
[ "$i" -eq 16 ] || fail "ran $i refusal cases, expected 16"
note "refusals: $i cases"

# ---------------------------------------------------------------------------
# 5. Registered from a C main before hs_init instead of a constructor.
# ---------------------------------------------------------------------------
mkdir "$T/r5"
PROG=$out/live-service-rotate-cmain PROGRAM_LABEL=live-service-rotate-cmain
run r5 "rotate:$T/r5/app?policy=block" burst 1000
check_program r5 "$prog_rc" "emitted 1000 user events"
check_files r5 "$T/r5" $((256 * 1024 * 1024))
[ "$(grep -c '^live-service burst ' "$T/r5.user")" -eq 1000 ] \
    || fail "r5: $(grep -c '^live-service burst ' "$T/r5.user") user events, expected 1000"

# ---------------------------------------------------------------------------
# 6. Files that cannot grow (RLIMIT_FSIZE; SIGXFSZ ignored so that write
#    fails with EFBIG).  Below size=, the sink moves to the next file and
#    nothing is lost.  Below one block, units are lost: said on stderr
#    naming the file, counted by the writer (sink-error), announced in the
#    files, which stay whole units.
# ---------------------------------------------------------------------------
limited() {
    local kib=$1
    shift
    (trap '' XFSZ; ulimit -f "$kib"; run "$@"; exit "$prog_rc")   # bash: KiB
    prog_rc=$?
}
mkdir "$T/r6a" "$T/r6b"
PROG=$out/live-service-rotate PROGRAM_LABEL=live-service-rotate
# The limit leaves room for the header and the largest block, one full
# 2 MiB RTS buffer.
limited 3072 r6a "rotate:$T/r6a/app?size=8M&policy=block" burst "$N" +RTS --eventlog-flush-interval=0.05 -RTS
check_program r6a "$prog_rc" "emitted $N user events"
check_files r6a "$T/r6a" $((3 * 1024 * 1024))
[ "${#cf_files[@]}" -ge 2 ] || fail "r6a: ${#cf_files[@]} file under a 3 MiB file size limit"
check_each_once r6a "$N"
! loss_lines "$T/r6a.prog.err" >/dev/null || fail_showing "$T/r6a.prog.err" "r6a: units were lost"

# Few units: the limit applies to the program's stderr file too.
limited 4 r6b "rotate:$T/r6b/app?size=4M&policy=block" burst 2000 +RTS --eventlog-flush-interval=0.05 -RTS
check_program r6b "$prog_rc" "emitted 2000 user events"
check_files r6b "$T/r6b" 4096 lossy
grep -q "^eventlog-sink: rotate: cannot write $T/r6b/app\.[0-9]*\.eventlog: File too large\$" "$T/r6b.prog.err" \
    || fail_showing "$T/r6b.prog.err" "r6b: no line naming the file that could not be written"
loss_lines "$T/r6b.prog.err" | grep -q 'sink-error [1-9]' \
    || fail_showing "$T/r6b.prog.err" "r6b: the writer reported no sink-error loss"
# grep reads the files itself: in `cat FILES | grep -q` under pipefail,
# cat dies of SIGPIPE when grep has its match before cat's last write,
# and the check failed on a loaded machine with the note there.
grep -q 'eventlog-sink: this consumer missed [1-9][0-9]* units' "$T"/r6b.*.show \
    || fail "r6b: no file announces the lost units"

# ---------------------------------------------------------------------------
# 7. The other order of the constructors: the sink registers before the
#    library's constructor hands the registry to the RTS.
# ---------------------------------------------------------------------------
static=$out/live-service-rotate-static
ldd "$static" | grep -q libeventlog-sink && fail "r7: $static links the shared library"
if part_needs r7-order objcopy nm; then
    # Position of a static function in .init_array (run in that order).
    init_index() {
        local addr
        addr=$(nm "$static" | awk -v f="$1" '$3 == f { print $1 }')
        [ -n "$addr" ] || return 1
        objcopy -O binary --only-section=.init_array "$static" /dev/stdout \
            | od -An -v -tx8 | tr -s ' ' '\n' | grep . | grep -nx "$addr" | cut -d: -f1
    }
    sink_at=$(init_index rotate_sink_register_early) lib_at=$(init_index ghc_register_sinks)
    [ -n "$sink_at" ] && [ -n "$lib_at" ] && [ "$sink_at" -lt "$lib_at" ] \
        || fail "r7: the sink's constructor is not run first (.init_array: sink ${sink_at:-?}, library ${lib_at:-?})"
fi
mkdir "$T/r7"
PROG=$static PROGRAM_LABEL=live-service-rotate-static
run r7 "rotate:$T/r7/app?policy=block" burst 1000
check_program r7 "$prog_rc" "emitted 1000 user events"
check_files r7 "$T/r7" $((256 * 1024 * 1024))
check_each_once r7 1000
