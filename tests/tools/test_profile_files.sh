#!/usr/bin/env bash
# test_profile_files.sh: `eventlog-sink dump --hp/--prof` rebuilds GHC's
# classic profile files from a stream, checked against the files the RTS
# writes on the same run (tools/profile_hp.c, tools/profile_prof.c).
#
# tests/programs/ProfFiles.hs runs once per case, writing its .hp (and .prof)
# as usual while streaming:
#   -hT (not profiled), streamed over unix: to `eventlog-sink recv`: the
#     rebuilt .hp has the same censuses as the RTS's (count, and per
#     census the same bands with the same bytes, in the same order); its
#     times increase (they are elapsed seconds, the RTS's mutator CPU
#     seconds: not compared);
#   -prof -hc -P, streamed to a file: sink (policy=block: nothing lost):
#     the same for the .hp, band names compared without their "(N)" stack
#     number; the .prof (both in -P's layout, with ticks), against the
#     stream's ticks as `ghc-events show` reads them, which holds by
#     construction: the same total, the same ticks on every call-tree
#     stack, and a flat table of exactly the cost centres above 1% of the
#     ticks with the stream's ticks, by ticks; against the RTS's own
#     .prof, which may differ from its stream by ticks the RTS counted on
#     one stack and posted on another (see same_ticks): at most
#     max(3, 1%) such moves, and the same ranks wherever the RTS's ticks
#     differ by more than the moves could change (equal ticks are ranked
#     by allocation in the RTS's, which the eventlog lacks);
#   hp2ps takes both rebuilt .hp files (exit 0, PostScript out);
#   live (-prof -hc -p, "hold": the program waits after its first round):
#     `recv ... | dump --hp --prof -` converts the stream as it arrives;
#     while the program still runs and waits, the .hp holds the censuses
#     the RTS's own .hp holds so far (the same bands and bytes), ends with
#     a whole sample and hp2ps takes it, and the .prof is a report that
#     ranks pf_heavy first; then the program is killed (SIGKILL): dump
#     exits 3 (truncated) and its .hp still holds every census the RTS's
#     file holds, hp2ps takes it, and converting the saved stream
#     afterwards gives the same censuses;
#   late joiner (the same program, held after its first round): a second
#     consumer connects while it waits, then the second round runs; its
#     stream starts at a snapshot, and dump of it as it arrives gives a
#     .hp whose censuses are the last ones of the whole stream's (names
#     and all: the snapshot defined the cost centres) and a .prof that
#     ranks pf_heavy first;
#   bad input: a stream without heap samples (tests/data) gives a .hp
#     with the header and no census, a message, exit 0; the -hc stream cut
#     in half gives a .hp whose censuses are the first ones of the whole
#     (every BEGIN_SAMPLE closed) and which hp2ps takes, and a .prof.
#
# Skips (77) without GHC, its profiling libraries, hp2ps, the patched RTS
# or the tool.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"

setup_prof_files_test
command -v hp2ps >/dev/null 2>&1 || skip "hp2ps not found (it comes with Debian's ghc)"
build_prof_files ht -eventlog
build_prof_files hc -prof -eventlog

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

# --- -prof -hc -P, streamed to a file: sink ---------------------------------
(cd "$T" && "$T/hc" +RTS -P -hc -i0.02 -l "--eventlog-sink=file:$T/hc.eventlog?policy=block" -RTS \
    >"$T/hc.out" 2>"$T/hc.err") || fail_showing "$T/hc.err" "hc: the program failed"
"$ELS_SINK_TOOL" dump --hp "$T/hc.from.hp" --prof "$T/hc.from.prof" "$T/hc.eventlog" \
    2>"$T/hc.dump.err" || fail_showing "$T/hc.dump.err" "hc: dump --hp --prof failed"
same_censuses hc "$T/hc.hp" "$T/hc.from.hp" 1
hp2ps_takes "$T/hc.from.hp"

# prof_total FILE.prof: the report's total ticks.
prof_total() {
    awk '/^\ttotal time/ { sub(/^.*\(/, ""); print $1; exit }' "$1"
}
# prof_flat FILE.prof: "LABEL@MODULE TICKS" for each row of the flat
# table, in its order (-P's layout: ticks is the last field but one).
prof_flat() {
    awk '/^COST CENTRE/ { getline; on = 1; next } on && NF == 0 { exit }
        on { print $1 "@" $2, $(NF - 1) }' "$1"
}
# prof_tree FILE.prof: "PATH TICKS" for each call-tree row with ticks,
# PATH the LABEL@MODULE names from MAIN down, "/"-joined; sorted.
prof_tree() {
    awk '/^COST CENTRE/ && / no\. / { getline; on = 1; next } on && NF == 0 { exit }
        on { d = match($0, /[^ ]/) - 1; name[d] = $1 "@" $2; p = name[0]
             for (i = 1; i <= d; i++) p = p "/" name[i]
             if ($(NF - 1) > 0) print p, $(NF - 1) }' "$1" | LC_ALL=C sort
}
# stream_ticks SHOWN OUT: the time-profile ticks of a stream as
# `ghc-events show` printed it (SHOWN), tallied as a report counts them:
# OUT.tree ("PATH TICKS", as prof_tree), OUT.flat ("LABEL@MODULE TICKS"
# per innermost cost centre), OUT.total, OUT.ignored (the ticks of the
# RTS's own GC, IDLE, SYSTEM, OVERHEAD_of and DONT_CARE, which reports
# leave out).
stream_ticks() {
    awk -v out="$2" '
        / cost centre [0-9]+ .* in .* at / && !/cost centre stack/ {
            for (i = 1; i <= NF; i++) if ($i == "centre") break
            name[$(i + 1)] = $(i + 2) "@" $(i + 4); next }
        /, prof sample [0-9]+, cost centre stack/ {
            s = $0; sub(/^.*cost centre stack */, "", s); stack[++n] = s }
        END {
            split("GC@GC IDLE@IDLE SYSTEM@SYSTEM OVERHEAD_of@PROFILING DONT_CARE@MAIN", b, " ")
            for (i in b) builtin[b[i]] = 1
            for (k = 1; k <= n; k++) {
                d = split(stack[k], ids, /, */)
                for (j = 1; j <= d; j++) ids[j] = (ids[j] in name) ? name[ids[j]] : "?@?"
                if (d == 1 && (ids[1] in builtin)) { ignored++; continue }
                p = "MAIN@MAIN"
                for (j = d; j >= 1; j--) p = p "/" ids[j]
                tree[p]++; flat[d ? ids[1] : "MAIN@MAIN"]++; total++
            }
            for (p in tree) print p, tree[p] | "LC_ALL=C sort >" out ".tree"
            for (c in flat) print c, flat[c] >out ".flat"
            print total + 0 >out ".total"; print ignored + 0 >out ".ignored"
        }' "$1"
}
# same_ticks WHAT RTS.prof OURS.prof STREAM: see the top of this file.
same_ticks() {
    local what=$1 rts=$2 ours=$3 ev=$T/$1.ev t_ev t_rts t_ours moves
    show_events "$4" "$T/$what.show" || fail "$what: ghc-events cannot read the stream"
    stream_ticks "$T/$what.show" "$ev"
    t_ev=$(cat "$ev.total"); t_rts=$(prof_total "$rts"); t_ours=$(prof_total "$ours")
    [ "$t_ev" -gt 0 ] || fail "$what: no time-profile ticks in the stream"
    # The rebuilt report against the stream: equal by construction.
    [ "$t_ours" = "$t_ev" ] || fail "$what: the stream holds $t_ev ticks, the rebuilt .prof counts $t_ours"
    grep -q "the $(cat "$ev.ignored") ticks of GC, IDLE, SYSTEM" "$ours" \
        || fail "$what: the rebuilt .prof does not leave out the stream's $(cat "$ev.ignored") ticks of the RTS's own cost centres"
    prof_tree "$ours" >"$T/$what.tree.ours"
    cmp -s "$ev.tree" "$T/$what.tree.ours" \
        || fail "$what: the rebuilt call tree's ticks differ from the stream's (< stream, > rebuilt): $(diff "$ev.tree" "$T/$what.tree.ours" | head -c 600)"
    prof_flat "$ours" >"$T/$what.flat.ours"
    awk -v total="$t_ev" '
        FNR == 1 { f++ }
        f == 1 { ev[$1] = $2; next }
        { if ($1 in seen) { print "listed twice: " $1; bad = 1 }
          seen[$1] = 1
          if (!($1 in ev) || ev[$1] != $2) { print $1 ": " ($1 in ev ? ev[$1] : 0) " ticks in the stream, " $2 " rebuilt"; bad = 1 }
          if (FNR > 1 && $2 > last) { print $1 " (" $2 ") ranked after " lastc " (" last ")"; bad = 1 }
          last = $2; lastc = $1 }
        END { for (c in ev) if (ev[c] * 100 > total && !(c in seen)) {
                  print c ": " ev[c] " of " total " ticks in the stream, not in the flat table"; bad = 1 }
              exit bad }' "$ev.flat" "$T/$what.flat.ours" >"$T/$what.flat.diff" \
        || fail "$what: the rebuilt flat table is not the stream's: $(head -c 600 "$T/$what.flat.diff")"
    # The RTS's report against the stream: the RTS reads a capability's
    # stack twice per tick, to count it and to post it (handleProfTick,
    # rts/Proftimer.c), so a tick can be counted on one stack and posted
    # on another (or on one of its own cost centres, which reports leave
    # out); one tick in about one run in five on a loaded machine.  Each
    # such move changes two stacks by one, or one stack and the total:
    # at most max(3, 1% of the ticks) moves.
    prof_tree "$rts" >"$T/$what.tree.rts"
    [ -s "$T/$what.tree.rts" ] || fail "$what: no call-tree rows with ticks in the RTS's .prof"
    moves=$(( t_ev / 100 > 3 ? t_ev / 100 : 3 ))
    awk -v d_total=$(( t_rts - t_ev )) -v moves="$moves" '
        FNR == 1 { f++ }
        f == 1 { rts[$1] = $2; next }
        { ev[$1] = $2 }
        END { d = d_total < 0 ? -d_total : d_total
              for (p in rts) { x = rts[p] - ev[p]; d += x < 0 ? -x : x }
              for (p in ev) if (!(p in rts)) d += ev[p]
              print d " ticks"
              exit d > 2 * moves }' "$T/$what.tree.rts" "$ev.tree" >"$T/$what.moves" \
        || fail "$what: the RTS's .prof ($t_rts ticks) and the stream ($t_ev) differ by more than $moves moved ticks: $(diff "$T/$what.tree.rts" "$ev.tree" | head -c 600)"
    # Ranks: where the RTS's flat table's ticks differ by more than the
    # moves could change, the rebuilt one orders the same; a cost centre
    # the RTS lists with more than 1% of the ticks plus the moves is in
    # the rebuilt table (the RTS lists others by their allocation).
    prof_flat "$rts" >"$T/$what.flat.rts"
    awk -v total="$t_rts" -v moves="$moves" '
        FNR == 1 { f++ }
        f == 1 { rts[$1] = $2; order[++n] = $1; next }
        { pos[$1] = FNR }
        END { for (i = 1; i <= n; i++) {
                  a = order[i]
                  if (!(a in pos) && (rts[a] - moves) * 100 > total) {
                      print a ": " rts[a] " of " total " ticks in the RTS, not in the rebuilt table"; bad = 1 }
                  for (j = i + 1; j <= n; j++) {
                      b = order[j]
                      if ((a in pos) && (b in pos) && rts[a] - rts[b] > 2 * moves && pos[a] > pos[b]) {
                          print "ranks: " a " (" rts[a] ") before " b " (" rts[b] ") in the RTS, after it rebuilt"; bad = 1 } } }
              exit bad }' "$T/$what.flat.rts" "$T/$what.flat.ours" >"$T/$what.flat.rdiff" \
        || fail "$what: the rebuilt flat table ranks unlike the RTS's: $(head -c 600 "$T/$what.flat.rdiff")"
    note "$what: $t_ours ticks, each where the stream has it; the RTS's .prof $t_rts, $(cat "$T/$what.moves") apart (at most 2 x $moves); flat (RTS | rebuilt): $(paste -d'|' "$T/$what.flat.rts" "$T/$what.flat.ours" | head -n 5 | tr '\n' ';')"
}
same_ticks hc "$T/hc.prof" "$T/hc.from.prof" "$T/hc.eventlog"

# --- live: converted as it arrives, then a crash ------------------------------
# hp_samples FILE: how many samples FILE holds (END_SAMPLE lines).
hp_samples() {
    grep -c '^END_SAMPLE' "$1" 2>/dev/null || true
}
# hp_reached FILE N: FILE holds at least N samples.
hp_reached() {
    [ "$(hp_samples "$1")" -ge "$2" ]
}
# whole_samples FILE: every sample of FILE is closed and it ends with one.
whole_samples() {
    [ "$(grep -c '^BEGIN_SAMPLE' "$1")" -eq "$(hp_samples "$1")" ] && tail -n 1 "$1" | grep -q '^END_SAMPLE'
}
# censuses_prefix WHAT SHORT.hp LONG.hp: SHORT holds LONG's first censuses
# (bands compared without their stack numbers), at least $n_rts of them.
censuses_prefix() {
    censuses "$2" 1 >"$T/$1.short.c"
    [ "$(wc -l <"$T/$1.short.c")" -ge "$n_rts" ] \
        || fail "$1: $2 holds $(wc -l <"$T/$1.short.c") samples, fewer than the $n_rts the RTS had written"
    censuses "$3" 1 | head -n "$(wc -l <"$T/$1.short.c")" | cmp -s - "$T/$1.short.c" \
        || fail "$1: the censuses of $2 are not the first ones of $3: $(censuses "$3" 1 | diff - "$T/$1.short.c" | head -c 600)"
}
# top_cc FILE.prof: the first cost centre of the report's flat table.
top_cc() {
    awk '/^COST CENTRE/ { getline; getline; print $1; exit }' "$1"
}
# ranks_first FILE.prof CC: FILE is a report whose flat table starts with CC.
ranks_first() {
    grep -q 'Time and Allocation Profiling Report' "$1" 2>/dev/null && [ "$(top_cc "$1")" = "$2" ]
}

# start_held NAME RTS-OPTS...: $T/hc in "hold" mode in $T/NAME (a
# directory of its own: the RTS writes its .hp and .prof there), streaming
# to unix:$T/NAME.sock; its stdin is the FIFO $T/NAME.in, held open
# read-write on descriptor 7 (no wait for the program to open it): a line
# on 7 starts the second round.  Sets ppid.
start_held() {
    local name=$1
    shift
    mkdir -p "$T/$name" && mkfifo "$T/$name.in" || fail "$name: cannot make $T/$name and its FIFO"
    exec 7<>"$T/$name.in"
    (cd "$T/$name" && exec "$T/hc" hold +RTS "$@" "--eventlog-sink=unix:$T/$name.sock?wait=30" -RTS \
        <"$T/$name.in" >"$T/$name.out" 2>"$T/$name.err") &
    ppid=$!
    bg_register "$ppid"
}
# wait_worked NAME: the held program finished its first round.
wait_worked() {
    wait_until 120 grep -qx worked "$T/$1.out" \
        || fail_showing "$T/$1.err" "$1: the program did not finish its first round"
}
# live_dump NAME DUMP-ARGS...: receive unix:$T/NAME.sock, keep the stream
# in $T/NAME.eventlog and convert it as it arrives (dump DUMP-ARGS -); when
# both end, "RECV-STATUS DUMP-STATUS" goes to $T/NAME.rcs.  Sets lpid.
live_dump() {
    local name=$1
    shift
    { "$ELS_SINK_TOOL" recv --retry 60 --quiet "unix:$T/$name.sock" 2>"$T/$name.recv.err" \
          | tee "$T/$name.eventlog" \
          | "$ELS_SINK_TOOL" dump "$@" - 2>"$T/$name.dump.err"
      echo "${PIPESTATUS[0]} ${PIPESTATUS[2]}" >"$T/$name.rcs"; } &
    lpid=$!
    bg_register "$lpid"
}

# -I0: no idle GC, so no census while the program waits.  The RTS's .hp
# is fflushed at every census, so it holds at least what the stream does.
start_held live -p -hc -i0.02 -I0
live_dump live --hp "$T/live.from.hp" --prof "$T/live.from.prof"
wait_worked live
n_rts=$(hp_samples "$T/live/hc.hp")
wait_until 60 hp_reached "$T/live.from.hp" "$n_rts" \
    || fail_showing "$T/live.dump.err" "live: the converted .hp did not reach the $n_rts samples of the RTS's while the program waited ($(hp_samples "$T/live.from.hp") so far)"
kill -0 "$ppid" 2>/dev/null && ! grep -qx '[0-9]*' "$T/live.out" \
    || fail "live: the program is no longer waiting"
# The report follows the stream within about a second (Note [Live report
# cadence] in tools/profile_prof.c), even while no byte arrives.
wait_until 60 ranks_first "$T/live.from.prof" pf_heavy \
    || fail "live: the .prof of a stream still arriving is not a report that ranks pf_heavy first: $(head -c 600 "$T/live.from.prof" 2>&1)"
cp "$T/live.from.hp" "$T/snap.hp" && cp "$T/live.from.prof" "$T/snap.prof" || fail "live: cannot copy the files"
whole_samples "$T/snap.hp" || fail "live: the .hp of a stream still arriving ends inside a sample"
censuses_prefix live-running "$T/snap.hp" "$T/live/hc.hp"
hp2ps_takes "$T/snap.hp"
grep -q 'Profiling Report  (so far)' "$T/snap.prof" || fail "live: the report of a stream still arriving does not say so far"
note "live: while the program waited, $(hp_samples "$T/snap.hp") samples and a report, both valid"

kill -KILL "$ppid" 2>/dev/null
rc=0; { wait_pid "$ppid" 30; } 2>/dev/null || rc=$?
[ "$rc" -eq 137 ] || fail "live: the killed program exited with status $rc"
exec 7>&-
wait_pid "$lpid" 30 || fail "live: the receiver and dump did not end after the program was killed"
[ "$(cat "$T/live.rcs")" = "3 3" ] \
    || fail_showing "$T/live.dump.err" "live: recv and dump exited '$(cat "$T/live.rcs")' after the crash (expected 3 3: truncated)"
whole_samples "$T/live.from.hp" || fail "live: the .hp ends inside a sample after the crash"
hp2ps_takes "$T/live.from.hp"
censuses_prefix live-kept "$T/snap.hp" "$T/live.from.hp"
censuses_prefix live-killed "$T/live.from.hp" "$T/live/hc.hp"
"$ELS_SINK_TOOL" dump --hp "$T/live.again.hp" "$T/live.eventlog" 2>"$T/live.again.err"
censuses "$T/live.from.hp" 0 | cmp -s - <(censuses "$T/live.again.hp" 0) \
    || fail "live: converting the saved stream gives other censuses than converting it live"
grep -q 'Time and Allocation Profiling Report' "$T/live.from.prof" || fail "live: no report after the crash"

# --- late joiner: a stream that starts at a snapshot ---------------------------
start_held late -p -hc -i0.02
start_receiver late-full "unix:$T/late.sock"
wait_worked late
live_dump late --hp "$T/late.from.hp" --prof "$T/late.from.prof"
wait_until 60 els_has_header "$T/late.eventlog" \
    || fail_showing "$T/late.recv.err" "late: the late consumer got no header"
echo go >&7
rc=0; wait_pid "$ppid" 120 || rc=$?
exec 7>&-
[ "$rc" -eq 0 ] || fail_showing "$T/late.err" "late: the program exited with status $rc"
rc=0; wait_pid "$rpid" 30 || rc=$?
check_recv late-full "$rc"
wait_pid "$lpid" 30 || fail "late: the late receiver and dump did not end"
[ "$(cat "$T/late.rcs")" = "0 0" ] \
    || fail_showing "$T/late.dump.err" "late: recv and dump of the late stream exited '$(cat "$T/late.rcs")' (expected 0 0)"
"$ELS_SINK_TOOL" dump --hp "$T/late-full.hp" "$T/late-full.eventlog" 2>"$T/late-full.dump.err" \
    || fail_showing "$T/late-full.dump.err" "late: dump of the whole stream failed"
same_censuses late-full "$T/late/hc.hp" "$T/late-full.hp" 1
# The late .hp: its empty first sample, then the last censuses of the
# whole stream (stack numbers are each file's own: compared without).
censuses "$T/late.from.hp" 1 | tail -n +2 >"$T/late.c"
n_late=$(wc -l <"$T/late.c")
[ "$n_late" -ge 3 ] || fail "late: only $n_late samples in the late joiner's .hp"
censuses "$T/late-full.hp" 1 | tail -n "$n_late" | cmp -s - "$T/late.c" \
    || fail "late: the late joiner's censuses are not the last $n_late of the whole stream: $(diff <(censuses "$T/late-full.hp" 1 | tail -n "$n_late") "$T/late.c" | head -c 600)"
[ "$n_late" -lt "$(censuses "$T/late-full.hp" 1 | wc -l)" ] || fail "late: the late joiner got every census, so it did not join late"
grep -q 'pf_keep' "$T/late.from.hp" || fail "late: no census band names pf_keep"
show_events "$T/late.eventlog" "$T/late.show" || fail "late: ghc-events cannot read the late stream"
grep -q 'joined mid-run; its stream starts at a snapshot' "$T/late.show" \
    || fail "late: the late stream does not say it starts at a snapshot"
hp2ps_takes "$T/late.from.hp"
[ "$(top_cc "$T/late.from.prof")" = pf_heavy ] \
    || fail "late: the late joiner's report does not rank pf_heavy first: $(head -c 600 "$T/late.from.prof")"
note "late: a consumer joining after the first round converts $((n_late - 1)) censuses, the whole stream's last ones, and a report"

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
    || fail "cut: the censuses of the truncated stream are not the first ones of the whole: $(censuses "$T/hc.from.hp" 0 | diff - "$T/cut.c" | head -c 600)"
hp2ps_takes "$T/cut.hp"
grep -q 'Time and Allocation Profiling Report' "$T/cut.prof" || fail "cut: no report"
note "cut: half the stream gives $((n_b - 1)) whole censuses and a report"
exit 0
