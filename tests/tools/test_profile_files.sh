#!/usr/bin/env bash
# test_profile_files.sh: `eventlog-sink dump --hp/--prof` rebuilds GHC's
# classic profile files from a stream, checked against the files the RTS
# writes on the same run (tools/profile_hp.c, tools/profile_prof.c).
#
# tests/ghc/ProfFiles.hs runs once per case, writing its .hp (and .prof)
# as usual while streaming:
#   -hT (not profiled), streamed over unix: to `eventlog-sink recv`: the
#     rebuilt .hp has the same censuses as the RTS's (count, and per
#     census the same bands with the same bytes, in the same order); its
#     times increase (they are elapsed seconds, the RTS's mutator CPU
#     seconds: not compared);
#   -prof -hc -p, streamed to a file: sink: the same for the .hp, band
#     names compared without their "(N)" stack number; the rebuilt
#     .prof's top 5 cost centres by individual %time are the RTS's, in
#     the same order, each share within 3 points (the RTS's report and the
#     eventlog count the same ticks: measured equal here);
#   hp2ps takes both rebuilt .hp files (exit 0, PostScript out);
#   bad input: a stream without heap samples (tests/data) gives a .hp
#     with the header and no census, a message, exit 0; the -hc stream cut
#     in half gives a .hp whose censuses are the first ones of the whole
#     (every BEGIN_SAMPLE closed) and which hp2ps takes, and a .prof.
#
# Skips (77) without GHC, its profiling libraries, hp2ps, the patched RTS
# or the tool.
set -u -o pipefail

. "$(dirname "$0")/../lib.sh"

require_tool
require_ghc
require_patched_rts
command -v hp2ps >/dev/null 2>&1 || skip "hp2ps not found (it comes with Debian's ghc)"
ghc_libdir=$("$GHC" --print-libdir) || fail "$GHC --print-libdir failed"
[ -f "$ghc_libdir/rts/libHSrts_thr_p.a" ] \
    || skip "GHC's profiling libraries are not installed (Debian package ghc-prof)"
make_tmpdir
T=$ELS_TMP
SRC=$ELS_TOP_SRCDIR/tests/ghc/ProfFiles.hs

# build NAME GHC-FLAGS...: $T/NAME from ProfFiles.hs on the patched RTS.
build() {
    local name=$1
    shift
    mkdir -p "$T/b-$name" && cp "$SRC" "$T/b-$name/Main.hs" || fail "cannot copy $SRC"
    (cd "$T/b-$name" && patched_ghc_lib -v0 -O "$@" -eventlog -threaded -rtsopts \
        -outputdir obj Main.hs -o "$T/$name") >"$T/build-$name.log" 2>&1 \
        || fail_showing "$T/build-$name.log" "could not build ProfFiles.hs ($*)"
}
build ht
build hc -prof

# censuses FILE STRIP: one line per census, "band=bytes ..." in the file's
# order (STRIP=1: band names without their "(N)" prefix), the initial and
# final empty samples included.
censuses() {
    awk -v strip="$2" '/^BEGIN_SAMPLE/ { line = ""; next }
        /^END_SAMPLE/ { print "census:" line; next }
        /\t/ { n = $1; if (strip) sub(/^\([0-9]+\)/, "", n); line = line " " n "=" $2 }' "$1"
}
# times FILE: true when the census times never decrease.
times_increase() {
    awk '/^BEGIN_SAMPLE/ { if ($2 + 0 < last) bad = 1; last = $2 + 0 } END { exit bad }' "$1"
}
# same_censuses WHAT RTS.hp OURS.hp STRIP
same_censuses() {
    censuses "$2" "$4" >"$T/$1.rts.c"
    censuses "$3" "$4" >"$T/$1.ours.c"
    local n_rts n_ours
    n_rts=$(wc -l <"$T/$1.rts.c"); n_ours=$(wc -l <"$T/$1.ours.c")
    [ "$n_rts" -ge 3 ] || fail "$1: the RTS's .hp has only $n_rts samples (the program ran too short)"
    cmp -s "$T/$1.rts.c" "$T/$1.ours.c" \
        || fail "$1: the rebuilt .hp differs from the RTS's ($n_ours samples against $n_rts): $(diff "$T/$1.rts.c" "$T/$1.ours.c" | head -c 600)"
    times_increase "$3" || fail "$1: the rebuilt .hp's times decrease"
    note "$1: $n_ours samples, the same bands and bytes as the RTS's .hp"
}
# hp2ps_takes FILE.hp
hp2ps_takes() {
    local base=${1%.hp}
    (cd "$(dirname "$1")" && hp2ps "$(basename "$1")") >"$T/hp2ps.out" 2>&1 \
        || fail_showing "$T/hp2ps.out" "hp2ps rejects $1"
    head -c 2 "$base.ps" | grep -q '%!' || fail "hp2ps wrote no PostScript for $1"
}

# --- -hT, streamed to recv over unix: --------------------------------------
(cd "$T" && "$T/ht" +RTS -hT -i0.02 -l "--eventlog-sink=unix:$T/ht.sock?wait=30" -RTS \
    >"$T/ht.out" 2>"$T/ht.err") &
ppid=$!
bg_register "$ppid"
start_receiver ht "unix:$T/ht.sock"
wait_pid "$ppid" 120 || fail_showing "$T/ht.err" "ht: the program failed"
rc=0; wait_pid "$rpid" 30 || rc=$?
check_recv ht "$rc"
"$ELS_SINK_TOOL" dump --hp "$T/ht.from.hp" "$T/ht.eventlog" 2>"$T/ht.dump.err" \
    || fail_showing "$T/ht.dump.err" "ht: dump --hp failed"
same_censuses ht "$T/ht.hp" "$T/ht.from.hp" 0
hp2ps_takes "$T/ht.from.hp"

# --- -prof -hc -p, streamed to a file: sink ---------------------------------
(cd "$T" && "$T/hc" +RTS -p -hc -i0.02 -l "--eventlog-sink=file:$T/hc.eventlog" -RTS \
    >"$T/hc.out" 2>"$T/hc.err") || fail_showing "$T/hc.err" "hc: the program failed"
"$ELS_SINK_TOOL" dump --hp "$T/hc.from.hp" --prof "$T/hc.from.prof" "$T/hc.eventlog" \
    2>"$T/hc.dump.err" || fail_showing "$T/hc.dump.err" "hc: dump --hp --prof failed"
same_censuses hc "$T/hc.hp" "$T/hc.from.hp" 1
hp2ps_takes "$T/hc.from.hp"

# top5 FILE.prof: "NAME MODULE %TIME" of the first 5 rows of the flat table.
top5() {
    awk '/^COST CENTRE/ && !seen { seen = 1; getline; on = 1; next }
        on && NF == 0 { exit } on { print $1, $2, $(NF - 1); if (++n == 5) exit }' "$1"
}
top5 "$T/hc.prof" >"$T/top.rts"
top5 "$T/hc.from.prof" >"$T/top.ours"
[ -s "$T/top.rts" ] || fail "hc: no flat table in the RTS's .prof"
paste -d' ' "$T/top.rts" "$T/top.ours" | awk '{
        if ($1 != $4 || $2 != $5) { print "rank " NR ": " $1 " in the RTS, " $4 " rebuilt"; bad = 1 }
        d = $3 - $6; if (d < 0) d = -d
        if (d > 3) { print $1 ": " $3 "% in the RTS, " $6 "% rebuilt"; bad = 1 } }
        END { exit bad }' >"$T/top.diff" \
    || fail "hc: the rebuilt .prof ranks differently: $(cat "$T/top.diff")"
[ "$(wc -l <"$T/top.rts")" -eq "$(wc -l <"$T/top.ours")" ] \
    || fail "hc: $(wc -l <"$T/top.rts") top cost centres in the RTS's .prof, $(wc -l <"$T/top.ours") rebuilt"
note "hc: top cost centres (RTS | rebuilt): $(paste -d'|' "$T/top.rts" "$T/top.ours" | tr '\n' ';')"

# --- bad input ---------------------------------------------------------------
"$ELS_SINK_TOOL" dump --hp "$T/none.hp" "$ELS_TOP_SRCDIR/tests/data/ghc-9.0.2-N2.eventlog" \
    2>"$T/none.err" || fail_showing "$T/none.err" "none: dump --hp failed on a stream without heap samples"
grep -q 'no heap profile samples' "$T/none.err" || fail_showing "$T/none.err" "none: no message about the missing samples"
grep -q '^JOB ' "$T/none.hp" && [ "$(grep -c '^BEGIN_SAMPLE' "$T/none.hp")" -eq 2 ] \
    || fail "none: expected a header and the two empty samples: $(head -c 300 "$T/none.hp")"
grep -q '	' "$T/none.hp" && fail "none: bands in a stream without heap samples"
hp2ps_takes "$T/none.hp"

size=$(wc -c <"$T/hc.eventlog")
head -c $((size / 2)) "$T/hc.eventlog" >"$T/cut.eventlog"
rc=0
"$ELS_SINK_TOOL" dump --hp "$T/cut.hp" --prof "$T/cut.prof" "$T/cut.eventlog" 2>"$T/cut.err" || rc=$?
[ "$rc" -eq 3 ] || fail_showing "$T/cut.err" "cut: dump exited $rc on a truncated stream (expected 3)"
n_b=$(grep -c '^BEGIN_SAMPLE' "$T/cut.hp"); n_e=$(grep -c '^END_SAMPLE' "$T/cut.hp")
[ "$n_b" -eq "$n_e" ] && tail -n 1 "$T/cut.hp" | grep -q '^END_SAMPLE' \
    || fail "cut: the .hp of a truncated stream ends inside a sample"
censuses "$T/cut.hp" 0 >"$T/cut.c"
censuses "$T/hc.from.hp" 0 | head -n "$(wc -l <"$T/cut.c")" | cmp -s - "$T/cut.c" \
    || fail "cut: the censuses of the truncated stream are not the first ones of the whole"
hp2ps_takes "$T/cut.hp"
grep -q 'Time and Allocation Profiling Report' "$T/cut.prof" || fail "cut: no report"
note "cut: half the stream gives $((n_b - 1)) whole censuses and a report"
exit 0
