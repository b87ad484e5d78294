# faults.sh (sourced by tests/harness.sh): judging captured streams and loss
# reports for the fault, security and soak runs, and running things as
# another user.

# ---------------------------------------------------------------------------
# Faults, security and soak (test_faults.sh, test_security.sh,
# scripts/soak.sh).  These helpers only look and report: they return a
# status and set variables, and leave failing to the caller, so that the
# soak script can count what a test would stop at.
# ---------------------------------------------------------------------------

# stream_header_len FILE: print the length of the eventlog header FILE
# starts with (from "hdrb" through "datb"); 1 if FILE does not start with
# "hdrb" or does not hold the whole header yet.  Meant for the start of a
# stream (grep stops at the first "datb").
stream_header_len() {
    local off
    [ "$(head -c 4 "$1" 2>/dev/null)" = hdrb ] || return 1
    off=$(head -c 1048576 "$1" | grep -obUaF -m 1 datb | head -n 1 | cut -d: -f1)
    [ -n "$off" ] || return 1
    echo $((off + 4))
}

# stream_has_data FILE [BYTES]: true once FILE holds the whole header and
# at least BYTES (default 200) bytes after it: a block marker and some
# events of the first block.
stream_has_data() {
    local h size
    h=$(stream_header_len "$1") || return 1
    size=$(stat -c %s "$1" 2>/dev/null) || return 1
    [ "$size" -ge $((h + ${2:-200})) ]
}

# validate_stream FILE SHOWN [PREFIX]: read FILE with ghc-events (output in
# SHOWN) and judge it as a captured stream: it starts with the header,
# ghc-events exits 0 and prints nothing on stderr, and no user event text
# starting with PREFIX (default "live-service ") occurs twice (every
# workload of live-service numbers its events).  Sets vs_events (all
# events), vs_user (events starting with PREFIX), vs_dups (repeated user
# event texts), vs_notes (in-band loss notes: "... dropped here" and
# "this consumer missed ..." from the library), vs_joined (notes that the
# consumer joined after earlier units had left the queue) and, on
# failure, vs_why.
# Status 0 if the stream is valid.  A stream cut anywhere (a killed
# consumer, a killed program) is valid: ghc-events reads such a prefix
# without complaint, which is why callers also compare counts.
validate_stream() {
    local file=$1 shown=$2 prefix=${3:-live-service } rc=0
    vs_events=0 vs_user=0 vs_dups=0 vs_notes=0 vs_joined=0 vs_why=
    if [ ! -s "$file" ]; then
        vs_why="$file is missing or empty"
        return 1
    fi
    if [ "$(head -c 4 "$file")" != hdrb ]; then
        vs_why="$file does not start with the eventlog header (hdrb): $(head -c 4 "$file" | od -An -c | tr -s ' ')"
        return 1
    fi
    "$GHC_EVENTS" show "$file" >"$shown" 2>"$shown.err" || rc=$?
    if [ "$rc" -ne 0 ] || [ -s "$shown.err" ]; then
        vs_why="ghc-events show exited $rc: $(head -c 300 "$shown.err")"
        return 1
    fi
    read -r vs_events vs_user vs_dups vs_notes vs_joined < <(awk -v p="$prefix" '
        /^Events:/ { on = 1; next }
        on && /^ *[0-9]+: / {
            n++
            sub(/^ *[0-9]+: (cap [0-9]+: )?/, "")
            if (index($0, p) == 1) { u++; if (seen[$0]++) d++ }
            if (index($0, "eventlog-sink: ") == 1 &&
                ($0 ~ / dropped here: / || $0 ~ /^eventlog-sink: this consumer missed /))
                l++
            if (index($0, "eventlog-sink: consumer ") == 1 && $0 ~ / joined mid-run; /)
                j++
        }
        END { print n + 0, u + 0, d + 0, l + 0, j + 0 }' "$shown")
    if [ "$vs_dups" -ne 0 ]; then
        vs_why="$vs_dups user events occur more than once"
        return 1
    fi
    return 0
}

# recv_events ERRFILE: print the number of events `eventlog-sink recv`
# reported on its stderr ("received N bytes, E events, ..."); 1 if it
# printed no such line (it was killed with SIGKILL).
recv_events() {
    sed -n 's/^eventlog-sink recv: received [0-9]* bytes, \([0-9]*\) events.*/\1/p' "$1" \
        | tail -n 1 | grep .
}

# loss_lines ERRFILE: print the writer's loss report lines from a
# program's stderr ("SINK: dropped N of M units (...): CAUSE N, ..." and
# "SINK: slow consumers missed N units (...) ..."); 1 if there are none.
loss_lines() {
    grep -E '^eventlog-sink: .*: (dropped [0-9]+ of [0-9]+ units \([0-9]+ bytes\): [a-z-]+ [0-9]+|slow consumers missed [0-9]+ units)' "$1"
}

# Loss causes as the writer names them in its loss report at exit and in
# its in-band notes (els_drop_cause_name).  Tests name a cause only through
# these variables, so a renamed cause changes here, once.
#   units still queued at exit in a program that never had a consumer:
ELS_CAUSE_NEVER_CONSUMED=no-consumer
#   units released for room while no consumer was connected:
ELS_CAUSE_RELEASED_UNCONSUMED=no-consumer
#   units a slow consumer (the only one) was cut loose from:
ELS_CAUSE_CUT_LOOSE=slow-consumer
#   units every consumer failed to take (ENOSPC on a file):
ELS_CAUSE_SINK_FAILED=sink-error
#   units still queued for a connected consumer at the linger= deadline:
ELS_CAUSE_LINGER=stopped

# loss_figures ERRFILE: parse the writer's loss report ("SINK: dropped N of
# M units (B bytes): CAUSE N, CAUSE N") on a program's stderr into
# lf_dropped, lf_accepted, lf_bytes and lf_causes ("cause=N ..."); status 1
# (all zero) if there is none.  The per-cause counts must add up to N, or
# the report itself is wrong: then status 2 and lf_why.
loss_figures() {
    local line rest
    lf_dropped=0 lf_accepted=0 lf_bytes=0 lf_causes='' lf_why=''
    line=$(grep -E '^eventlog-sink: .*: dropped [0-9]+ of [0-9]+ units \([0-9]+ bytes\): ' "$1" | tail -n 1)
    [ -n "$line" ] || return 1
    read -r lf_dropped lf_accepted lf_bytes < <(printf '%s\n' "$line" |
        sed -E 's/.*: dropped ([0-9]+) of ([0-9]+) units \(([0-9]+) bytes\): .*/\1 \2 \3/')
    rest=${line##*bytes): }
    lf_causes=$(printf '%s\n' "$rest" | tr ',' '\n' | awk 'NF == 2 { printf "%s=%s ", $1, $2 }')
    local sum
    sum=$(printf '%s\n' "$lf_causes" | tr ' ' '\n' | awk -F= 'NF == 2 { n += $2 } END { print n + 0 }')
    if [ "$sum" -ne "$lf_dropped" ]; then
        lf_why="the causes add up to $sum, the report says $lf_dropped dropped: $line"
        return 2
    fi
    return 0
}

# loss_cause CAUSE: the count loss_figures found for CAUSE (0 if absent).
loss_cause() {
    printf '%s\n' "$lf_causes" | tr ' ' '\n' | awk -F= -v c="$1" '$1 == c { n += $2 } END { print n + 0 }'
}

# check_noted_losses NAME ERRFILE CAUSE UNITS BYTES: the in-band notes of
# a stream said UNITS units (BYTES bytes) were lost for CAUSE; the loss
# report on the program's stderr (ERRFILE) must exist, add up, count
# exactly UNITS under CAUSE and, when CAUSE is its only cause, BYTES bytes.
check_noted_losses() {
    local name=$1 err=$2 cause=$3 units=$4 bytes=$5 rc=0
    loss_figures "$err" || rc=$?
    [ "$rc" -ne 1 ] || fail_showing "$err" "$name: the stream was told of $units lost units ($cause), but the program reported no loss at exit"
    [ "$rc" -eq 0 ] || fail "$name: $lf_why"
    [ "$(loss_cause "$cause")" -eq "$units" ] \
        || fail "$name: the stream's notes count $units units; the loss report counts $(loss_cause "$cause") as $cause ($lf_causes)"
    if [ "$lf_causes" = "$cause=$units " ]; then
        [ "$lf_bytes" -eq "$bytes" ] \
            || fail "$name: the stream's notes count $bytes bytes; the loss report says $lf_bytes"
    fi
}

# wait_count SECS FILE PATTERN N: wait until at least N lines of FILE
# match the grep pattern PATTERN; 1 if SECS passed first.
els_count_at_least() {
    [ "$(grep -c -- "$2" "$1" 2>/dev/null)" -ge "$3" ]
}
wait_count() {
    wait_until "$1" els_count_at_least "$2" "$3" "$4"
}

# rss_kb PID: print the resident set size of PID in KiB; 1 if PID is gone.
rss_kb() {
    awk '/^VmRSS:/ { print $2; found = 1 } END { exit !found }' "/proc/$1/status" 2>/dev/null
}

# as_user UID CMD...: run CMD with real and effective user and group UID
# and no supplementary groups (setpriv, util-linux), and a discovery
# directory of that user's own (as_user_runtime_dir).
as_user() {
    local uid=$1 rt
    shift
    rt=$(as_user_runtime_dir "$uid") || return 1
    XDG_RUNTIME_DIR=$rt setpriv --reuid="$uid" --regid="$uid" --clear-groups -- "$@"
}

# as_user_bg UID COMMAND [ARGS...]: as_user in the background, with $!
# the command itself (setpriv execs it), so that killing $! (or the
# EXIT trap's bg_register cleanup) stops it; a backgrounded function
# would leave $! naming a subshell and the command running on.
as_user_bg() {
    local uid=$1 rt
    shift
    rt=$(as_user_runtime_dir "$uid") || return 1
    XDG_RUNTIME_DIR=$rt setpriv --reuid="$uid" --regid="$uid" --clear-groups -- "$@" &
}

# as_user_runtime_dir UID: print the XDG_RUNTIME_DIR for programs run as
# UID: the test's own (Note [A discovery directory per test] in
# Makefile.am) is this user's, mode 0700, where UID's programs could not
# announce themselves; the ${TMPDIR:-/tmp} fallback would be UID's real
# one, where UID's `serve --all` would attach to them.  So UID gets
# $ELS_TMP.run-UID (beside $ELS_TMP, which UID may not enter), made once,
# owned by UID, mode 0700, removed on exit (els_cleanup).  Before
# make_tmpdir, the test's own (nothing announced then: can_run_as).
as_user_runtime_dir() {
    local uid=$1 d
    if [ -z "$ELS_TMP" ] || [ "$uid" = "$(id -u)" ]; then
        echo "${XDG_RUNTIME_DIR:-}"
        return 0
    fi
    d=$ELS_TMP.run-$uid
    if ! mkdir -m 0700 "$d" 2>/dev/null; then
        # Made by an earlier call: it must still be the one made here.
        [ -d "$d" ] && [ ! -L "$d" ] && [ "$(stat -c %u:%a "$d")" = "$uid:700" ] \
            || { echo "FAIL: $els_test_name: $d is not a directory of uid $uid's own" >&2; return 1; }
    else
        chown "$uid:$uid" "$d" || return 1
    fi
    echo "$d"
}

# can_run_as UID: true if this process can run commands as UID (root with
# setpriv, and UID really unprivileged: it cannot read a root-only file).
can_run_as() {
    [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1 || return 1
    [ "$(as_user "$1" id -u 2>/dev/null)" = "$1" ] || return 1
    ! as_user "$1" test -r /proc/1/environ 2>/dev/null
}

# can_load_as UID PROGRAM: true if UID can load PROGRAM and its shared
# libraries (the build tree's libeventlog-sink.so sits under the clone,
# which a private directory such as a 0700 home or mktemp -d hides from
# other users).
can_load_as() {
    local missing
    missing=$(as_user "$1" ldd "$2" 2>&1) || return 1
    ! printf '%s\n' "$missing" | grep -q 'not found'
}

# build_tiny_program NAME GHC-ARGS...: compile a one-line Haskell program
# (one user event "tiny", then "tiny ran" on stdout) with the patched RTS's
# driver and GHC-ARGS, cached in
# $ELS_TOP_BUILDDIR/examples/live-service/out/tiny-lib/NAME (rebuilt when
# this file, the library or the patched RTS is newer; concurrent callers
# serialise on a lock).  Use patched_ghc_lib as the first GHC-ARG to link
# the library.  Sets TINY_PROGRAM.
build_tiny_program() {
    local name=$1 dir=$ELS_TOP_BUILDDIR/examples/live-service/out/tiny-lib log
    shift
    log=${ELS_TMP:-${TMPDIR:-/tmp}}/tiny-$name.log
    mkdir -p "$dir" || fail "cannot create $dir"
    (
        if command -v flock >/dev/null 2>&1; then exec 9>"$dir/.lock"; flock 9; fi
        p=$dir/$name
        ! newer_than_patched_build "$p" "${BASH_SOURCE[0]}" || exit 0
        rm -rf "$dir/work-$name"
        mkdir -p "$dir/work-$name"
        printf '%s\n' 'import Debug.Trace (traceEventIO)' 'main :: IO ()' \
            'main = traceEventIO "tiny" >> putStrLn "tiny ran"' >"$dir/work-$name/Tiny.hs"
        (cd "$dir/work-$name" && "$@" -v0 -outputdir obj Tiny.hs -o "$name") >"$log" 2>&1 \
            || exit 1
        mv -f "$dir/work-$name/$name" "$p" && rm -rf "$dir/work-$name"
    ) || {
        sed 's/^/#   /' "$log" >&2
        fail "could not build the test program $name ($*)"
    }
    TINY_PROGRAM=$dir/$name
}
