#!/usr/bin/env bash
# test_no_profile_files.sh: +RTS --no-profile-files (RTS patch 0015) sends
# the heap and time profiles only to the eventlog: a program profiles in
# a directory it cannot write, and opens no .hp or .prof.
#
# tests/programs/ProfFiles.hs, built -hT-capable (-eventlog) and profiled
# (-prof), runs as uid 65534 (setpriv; as a non-root user, as that user)
# in a directory owned by root with mode 0555, streaming to `eventlog-sink
# recv` over a UNIX socket in a directory of its own.  Checked:
#   -hT --no-profile-files: exit 0, no "Can't open" message, nothing
#     created in the directory; the stream is complete and holds heap
#     censuses by closure type (ghc-events show);
#   -prof -hc -p --no-profile-files: the same, and the stream defines
#     pf_heavy, pf_light and pf_keep and holds time samples and censuses
#     by cost-centre stack; `eventlog-sink dump --prof` of it ranks
#     pf_heavy first;
#   -prof -hc -pj --no-profile-files with -l -ol<file elsewhere>: exit 0,
#     nothing created, the eventlog file holds time samples;
#   the same two programs without the flag: GHC's own behaviour, "Can't
#     open profiling report file" and no censuses or time samples in the
#     stream (the profiler turns itself off), nothing created;
#   refusals, exit 1: the flag with a profile and no eventlog (-hT; -p)
#     and with retainer profiling (-hr), one line each; in a program built
#     without -eventlog, the RTS's error for a flag the way lacks;
#     accepted silently with no profile and no eventlog;
#   `+RTS -?` lists the flag (the eventlog and profiled ways).
#
# Skips (77) without GHC, its profiling libraries, ghc-events, the patched
# RTS or the tool, or where no unprivileged user can be used (root
# without setpriv, or uid 65534 unusable).  The programs load the library
# from a copy in the temporary directory, which uid 65534 can reach
# wherever the build tree is.
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"

setup_prof_files_test
[ -n "$GHC_EVENTS" ] || skip "ghc-events not found"

# As root the programs run as uid 65534 (root ignores permissions); as
# anyone else, as themselves.
uid=$(id -u)
if [ "$uid" -eq 0 ]; then
    uid=65534
    part_runs_as no-files "$uid" || skip "cannot run the programs as an unprivileged user"
    run_as() { as_user "$uid" "$@"; }
else
    run_as() { "$@"; }
fi
chmod 0711 "$T"

# The programs find the library in $T/lib first: the build tree may sit
# in a directory the other user cannot enter.
mkdir -m 0755 "$T/lib" && cp -a "$ELS_LIBDIR"/libeventlog-sink.so* "$T/lib/" \
    || fail "cannot copy the shared library to $T/lib"
build_prof_files ht -eventlog -optl-Wl,-rpath,"$T/lib"
build_prof_files hc -prof -eventlog -optl-Wl,-rpath,"$T/lib"
build_prof_files plain
if [ "$(id -u)" -eq 0 ] && ! can_load_as "$uid" "$T/ht"; then
    fail "uid $uid cannot load $T/ht: $(as_user "$uid" ldd "$T/ht" 2>&1 | grep 'not found')"
fi

# The directory the programs run in (they cannot write it), and one for
# their sockets and eventlog files.
mkdir -m 0555 "$T/ro"
mkdir -m 0700 "$T/sock"
[ "$(id -u)" -ne 0 ] || chown "$uid:$uid" "$T/sock"
run_as test ! -w "$T/ro" || fail "the test cannot make a directory the programs cannot write"

# run NAME PROGRAM RTS-OPTS...: PROGRAM in $T/ro as the unprivileged user,
# streaming to unix:$T/sock/NAME.sock, received into $T/NAME.eventlog and
# shown into $T/NAME.show.  The program must exit 0.
run() {
    local name=$1 prog=$2
    shift 2
    (cd "$T/ro" && run_as "$T/$prog" +RTS "$@" "--eventlog-sink=unix:$T/sock/$name.sock?wait=60" -RTS \
        >"$T/$name.prog.out" 2>"$T/$name.prog.err" </dev/null) &
    ppid=$!
    bg_register "$ppid"
    start_receiver "$name" "unix:$T/sock/$name.sock"
    prog_rc=0; wait_pid "$ppid" 60 || prog_rc=$?
    [ "$prog_rc" -eq 0 ] || fail_showing "$T/$name.prog.err" "$name: the program exited with status $prog_rc"
    recv_rc=0; wait_pid "$rpid" 30 || recv_rc=$?
    check_recv "$name" "$recv_rc"
    show_events "$T/$name.eventlog" "$T/$name.show" || fail "$name: ghc-events cannot read the stream"
}

# nothing_created NAME: the run directory is still empty, and no profile
# file was made anywhere under $T.
nothing_created() {
    [ -z "$(ls -A "$T/ro")" ] || fail "$1: files in the read-only directory: $(ls -A "$T/ro")"
    [ -z "$(find "$T" \( -name '*.hp' -o -name '*.prof' \) -print)" ] \
        || fail "$1: profile files were written: $(find "$T" \( -name '*.hp' -o -name '*.prof' \) -print)"
}

# ran_clean NAME: exit 0, the program's own output, and no message about a
# profile file.
ran_clean() {
    [ "$prog_rc" -eq 0 ] || fail_showing "$T/$1.prog.err" "$1: the program exited with status $prog_rc"
    grep -qx 400 "$T/$1.prog.out" || fail_showing "$T/$1.prog.err" "$1: the program did not finish its work"
    ! grep -q "Can't open" "$T/$1.prog.err" || fail_showing "$T/$1.prog.err" "$1: the RTS tried to open a profile file"
}

# count PATTERN FILE: how many lines of FILE match the ERE PATTERN.
count() {
    grep -Ec -- "$1" "$2" || true
}
CENSUS='^ *[0-9]+: start heap prof sample '
BY_TYPE='^ *[0-9]+: heap prof sample [0-9]+, residency [0-9]+, label '
BY_CCS='^ *[0-9]+: heap prof sample [0-9]+, residency [0-9]+, cost centre stack '
TICK='^ *[0-9]+: cap no [0-9]+, prof sample [0-9]+, cost centre stack '

# --- -hT, not profiled --------------------------------------------------------
run ht ht -hT -i0.02 --no-profile-files
ran_clean ht
nothing_created ht
n=$(count "$CENSUS" "$T/ht.show"); b=$(count "$BY_TYPE" "$T/ht.show")
[ "$n" -ge 3 ] && [ "$b" -ge "$n" ] \
    || fail "ht: $n censuses and $b closure-type bands in the stream (expected at least 3 censuses, each with bands)"
note "ht: $n censuses, $b bands by closure type; nothing written"

# --- -prof -hc -p ---------------------------------------------------------------
run hc hc -hc -p -i0.02 --no-profile-files
ran_clean hc
nothing_created hc
for cc in pf_heavy pf_light pf_keep; do
    grep -Eq "^ *[0-9]+: cost centre [0-9]+ $cc in Main " "$T/hc.show" \
        || fail "hc: the stream does not define the cost centre $cc"
done
n=$(count "$CENSUS" "$T/hc.show"); b=$(count "$BY_CCS" "$T/hc.show"); t=$(count "$TICK" "$T/hc.show")
[ "$n" -ge 3 ] && [ "$b" -ge "$n" ] && [ "$t" -ge 100 ] \
    || fail "hc: $n censuses, $b cost-centre bands, $t time samples in the stream (expected at least 3 censuses with bands and 100 time samples)"
"$ELS_SINK_TOOL" dump --prof "$T/rebuilt.txt" "$T/hc.eventlog" 2>"$T/hc.dump.err" \
    || fail_showing "$T/hc.dump.err" "hc: dump --prof failed on the stream"
top=$(awk '/^COST CENTRE/ { getline; getline; print $1; exit }' "$T/rebuilt.txt")
[ "$top" = pf_heavy ] || fail "hc: the report rebuilt from the stream ranks '$top' first, not pf_heavy: $(head -c 800 "$T/rebuilt.txt")"
note "hc: $n censuses, $b bands by cost-centre stack, $t time samples; pf_heavy first in the rebuilt report; nothing written"

# --- -pj with -l to a file elsewhere -------------------------------------------
prog_rc=0
(cd "$T/ro" && run_as "$T/hc" +RTS -hc -pj -i0.02 -l "-ol$T/sock/pj.eventlog" --no-profile-files -RTS \
    >"$T/pj.prog.out" 2>"$T/pj.prog.err" </dev/null) || prog_rc=$?
ran_clean pj
nothing_created pj
show_events "$T/sock/pj.eventlog" "$T/pj.show" || fail "pj: ghc-events cannot read the eventlog file"
t=$(count "$TICK" "$T/pj.show")
[ "$t" -ge 100 ] || fail "pj: $t time samples in the eventlog file (expected at least 100)"
note "pj: -pj with -l -ol: $t time samples in the eventlog file, no .prof"

# --- without the flag: GHC's own behaviour --------------------------------------
run ht-files ht -hT -i0.02
grep -q "Can't open profiling report file ht.hp" "$T/ht-files.prog.err" \
    || fail_showing "$T/ht-files.prog.err" "ht-files: no message about the .hp it cannot write"
n=$(count "$CENSUS" "$T/ht-files.show")
[ "$n" -eq 0 ] || fail "ht-files: $n censuses in the stream, though the heap profiler could not open its file"
nothing_created ht-files
run hc-files hc -hc -p -i0.02
grep -q "Can't open profiling report file hc.prof" "$T/hc-files.prog.err" \
    || fail_showing "$T/hc-files.prog.err" "hc-files: no message about the .prof it cannot write"
n=$(count "$CENSUS" "$T/hc-files.show"); t=$(count "$TICK" "$T/hc-files.show")
[ "$n" -eq 0 ] && [ "$t" -eq 0 ] \
    || fail "hc-files: $n censuses and $t time samples in the stream, though the profilers could not open their files"
nothing_created hc-files
note "without the flag: the RTS says it cannot open its files, and the stream has no profile"

# --- refusals -------------------------------------------------------------------
# refused NAME PATTERN PROGRAM RTS-OPTS...: one line matching PATTERN, exit 1.
refused() {
    local name=$1 pattern=$2 prog=$3 rc=0 lines
    shift 3
    (cd "$T" && "$T/$prog" +RTS "$@" -RTS >"$T/$name.prog.out" 2>"$T/$name.prog.err" </dev/null) || rc=$?
    [ "$rc" -eq 1 ] || fail_showing "$T/$name.prog.err" "$name: exit status $rc, expected 1"
    lines=$(wc -l <"$T/$name.prog.err")
    [ "$lines" -eq 1 ] || fail_showing "$T/$name.prog.err" "$name: $lines lines on stderr, expected 1"
    grep -Eq -- "$pattern" "$T/$name.prog.err" || fail_showing "$T/$name.prog.err" "$name: the error does not match /$pattern/"
    [ ! -s "$T/$name.prog.out" ] || fail "$name: the program ran anyway"
    note "$name: $(cat "$T/$name.prog.err")"
}
refused no-eventlog-h 'no-profile-files sends the heap profile \(-h\) only to the eventlog, and there is none' \
    ht -hT --no-profile-files
refused no-eventlog-p 'no-profile-files sends the time profile \(-p\) only to the eventlog, and there is none' \
    hc -p --no-profile-files
refused retainer 'no-profile-files cannot be used with retainer profiling \(-hr\)' \
    hc -hr -l "-ol$T/hr.eventlog" --no-profile-files
# (An RTS option error in GHC 9.0.2 is followed by the whole usage text.)
rc=0
(cd "$T" && "$T/plain" +RTS --no-profile-files -RTS >"$T/plain.prog.out" 2>"$T/plain.prog.err" </dev/null) || rc=$?
[ "$rc" -eq 1 ] && [ ! -s "$T/plain.prog.out" ] \
    && head -n 1 "$T/plain.prog.err" | grep -q 'the flag --no-profile-files requires the program to be built with -eventlog' \
    || fail_showing "$T/plain.prog.err" "plain: exit $rc; expected 1 and the RTS's error for a flag this way lacks first"
[ ! -e "$T/hr.eventlog" ] || fail "retainer: the refused program wrote its eventlog"
(cd "$T" && "$T/ht" +RTS --no-profile-files -RTS >"$T/quiet.prog.out" 2>"$T/quiet.prog.err" </dev/null) \
    || fail_showing "$T/quiet.prog.err" "quiet: the flag without a profile stopped the program"
[ ! -s "$T/quiet.prog.err" ] && grep -qx 400 "$T/quiet.prog.out" \
    || fail_showing "$T/quiet.prog.err" "quiet: the flag without a profile or eventlog was not silent"

# --- +RTS -? ----------------------------------------------------------------------
for prog in ht hc; do
    "$T/$prog" +RTS -? -RTS >/dev/null 2>"$T/usage-$prog.txt" || true
    grep -q -- '--no-profile-files' "$T/usage-$prog.txt" \
        || fail "$prog: +RTS -? does not list --no-profile-files: $(grep -c '' "$T/usage-$prog.txt") lines"
done
note "+RTS -? lists --no-profile-files (eventlog and profiled ways)"
exit 0
