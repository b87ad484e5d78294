#!/usr/bin/env bash
# fuzz.sh: build the libFuzzer targets in fuzz/ and run them.
#
# Each target (fuzz/fuzz_TARGET.c) is compiled with clang
# -fsanitize=fuzzer,address,undefined together with the library's sources
# from lib/ (not the installed or built library: the targets call internal
# elsi_ functions, and every line they reach must be instrumented).  Build
# output goes to $BUILD_DIR (default _build-fuzz/ in the source tree), and
# is redone only when a source, header or the flags changed.  Each run
# starts from a scratch copy of fuzz/corpus/TARGET, so the committed corpus
# changes only with --update-corpus, which merges in just the new inputs
# that add coverage (libFuzzer -merge=1).  Any crash, leak, timeout or
# out-of-memory stops that target; the reproducer is kept under
# $BUILD_DIR/crashes/TARGET/ and its path printed, and the script exits 1
# after running the remaining targets.
#
# Usage: scripts/fuzz.sh [--seconds N] [--update-corpus] [--replay]
#                        [--build-only] [TARGET...]
#   --seconds N      fuzz each target for N seconds (default 60)
#   --replay         only run each target over its corpus (and over any
#                    file given with --input), no fuzzing: a regression check
#   --input FILE     (with one TARGET) run that target on FILE, e.g. a
#                    reproducer, with the sanitizer report on stderr
#   --update-corpus  merge new coverage-increasing inputs into fuzz/corpus/
#   --build-only     build and stop
#   TARGET           spec, address, parse, note, writer, control, http,
#                    model, trigger, json (default: all)
# Long run (an hour per target, about five hours in all):
#   scripts/fuzz.sh --seconds 3600
# Environment: BUILD_DIR, CC (default clang), MAKE_JOBS (parallel
# compiles, default 2), FUZZ_ARGS (extra libFuzzer flags, e.g. -jobs=2).
# Exit status: 0 all passed; 1 a target crashed or failed to build;
# 2 usage; 77 clang or its libFuzzer runtime is missing (Debian:
# clang and libclang-rt-dev).
set -uo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$top/_build-fuzz}
cc=${CC:-clang}
jobs=${MAKE_JOBS:-2}
all_targets=(spec address parse note writer control http model trigger json)

seconds=60
replay=0
update=0
build_only=0
input=
targets=()

usage() {
    sed -n '/^# Usage:/,/^# Exit status/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

while [ $# -gt 0 ]; do
    case "$1" in
        --seconds)
            [ $# -ge 2 ] || usage
            seconds=$2; shift 2 ;;
        --seconds=*)
            seconds=${1#--seconds=}; shift ;;
        --replay) replay=1; shift ;;
        --input) [ $# -ge 2 ] || usage; input=$2; shift 2 ;;
        --update-corpus) update=1; shift ;;
        --build-only) build_only=1; shift ;;
        -h|--help) usage ;;
        -*) echo "fuzz: unknown option $1" >&2; usage ;;
        *)
            t=${1#fuzz_}
            [ -f "$top/fuzz/fuzz_$t.c" ] || { echo "fuzz: no target '$1' (fuzz/fuzz_$t.c)" >&2; exit 2; }
            targets+=("$t"); shift ;;
    esac
done
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -eq 0 ]; then
    echo "fuzz: --seconds takes a whole number of seconds > 0" >&2
    exit 2
fi
[ "${#targets[@]}" -gt 0 ] || targets=("${all_targets[@]}")
if [ -n "$input" ] && [ "${#targets[@]}" -ne 1 ]; then
    echo "fuzz: --input needs exactly one TARGET" >&2
    exit 2
fi

# Per-target libFuzzer limits: the longest input worth trying.  The parser
# needs room for a real eventlog (the GHC seed is 5.5 KB); the note target
# builds its own long messages from a short input.
max_len() {
    case "$1" in
        parse|model) echo 16384 ;;
        writer) echo 512 ;;
        *) echo 1024 ;;
    esac
}

# ---------------------------------------------------------------------------
# Toolchain
# ---------------------------------------------------------------------------

# shellcheck disable=SC2054 # -fsanitize=address,undefined is one flag
cflags=(-std=gnu11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer
        -fsanitize=address,undefined -fno-sanitize-recover=all
        -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
        -Wpointer-arith -Wformat=2 -Wno-format-nonliteral -Wundef -pthread
        "-I$top/include" "-I$top/lib" "-I$top/fuzz")

mkdir -p "$build/obj" || exit 1
if ! command -v "$cc" >/dev/null 2>&1; then
    echo "fuzz: $cc not found (Debian: apt-get install clang libclang-rt-dev)" >&2
    exit 77
fi
probe=$build/obj/probe
printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' >"$probe.c"
if ! "$cc" -fsanitize=fuzzer,address,undefined "$probe.c" -o "$probe" >"$probe.log" 2>&1; then
    sed 's/^/fuzz:   /' "$probe.log" >&2
    echo "fuzz: $cc cannot link -fsanitize=fuzzer: its libFuzzer runtime is missing (Debian: apt-get install libclang-rt-dev)" >&2
    exit 77
fi

# ---------------------------------------------------------------------------
# Build
# ---------------------------------------------------------------------------

# Every library source but the GHC glue (lib/ghc/ needs the RTS headers).
mapfile -t lib_sources < <(cd "$top/lib" && find . -name '*.c' ! -path './ghc/*' | sed 's|^\./||; s|\.c$||' | sort)

# The stamp holds the compiler, its flags and the newest input's time; any
# change rebuilds everything (a full build takes seconds).
newest=$(find "$top/lib" "$top/include" "$top/fuzz" "$top/tests/evgen.h" "$top/tools/monitor" "$top/tools/serve" \
              "${BASH_SOURCE[0]}" -type f \( -name '*.c' -o -name '*.h' -o -name '*.sh' \) \
              -printf '%T@\n' | sort -n | tail -n 1)
stamp="$cc $("$cc" --version | head -n 1) ${cflags[*]} $newest"
built=1
for t in "${targets[@]}"; do
    [ -x "$build/fuzz_$t" ] || built=0
done
if [ "$built" -eq 0 ] || [ "$(cat "$build/stamp" 2>/dev/null)" != "$stamp" ]; then
    echo "fuzz: building in $build"
    rm -f "$build/stamp"
    # Pairs of source and object, compiled $jobs at a time.
    srcs=()
    for s in "${lib_sources[@]}"; do
        srcs+=("$top/lib/$s.c" "$build/obj/${s//\//_}.o")
    done
    for t in "${all_targets[@]}"; do
        srcs+=("$top/fuzz/fuzz_$t.c" "$build/obj/fuzz_$t.o")
    done
    pids=()
    failed=0
    for ((i = 0; i < ${#srcs[@]}; i += 2)); do
        "$cc" "${cflags[@]}" -fsanitize=fuzzer-no-link \
            -c "${srcs[i]}" -o "${srcs[i + 1]}" &
        pids+=("$!")
        if [ "${#pids[@]}" -ge "$jobs" ]; then
            wait "${pids[0]}" || failed=1
            pids=("${pids[@]:1}")
        fi
    done
    for pid in "${pids[@]}"; do
        wait "$pid" || failed=1
    done
    if [ "$failed" -ne 0 ]; then
        echo "fuzz: compilation failed" >&2
        exit 1
    fi
    lib_objs=()
    for s in "${lib_sources[@]}"; do
        lib_objs+=("$build/obj/${s//\//_}.o")
    done
    for t in "${all_targets[@]}"; do
        "$cc" -fsanitize=fuzzer,address,undefined -pthread \
            "$build/obj/fuzz_$t.o" "${lib_objs[@]}" -o "$build/fuzz_$t" || {
            echo "fuzz: linking fuzz_$t failed" >&2
            exit 1
        }
    done
    echo "$stamp" >"$build/stamp"
fi
[ "$build_only" -eq 0 ] || exit 0

# ---------------------------------------------------------------------------
# Run
# ---------------------------------------------------------------------------

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"

status=0
summary=()

count_files() {
    find "$1" -maxdepth 1 -type f | wc -l
}

# report TARGET LOG: one summary line from libFuzzer's final stats.
report() {
    local t=$1 log=$2 runs eps last
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    last=$(grep -E '^#[0-9]+' "$log" | tail -n 1 | grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9]+[a-zA-Z]*')
    summary+=("$t: ${runs:-?} runs, ${eps:-?} exec/s, ${last:-no stats}")
}

for t in "${targets[@]}"; do
    bin=$build/fuzz_$t
    run=$build/run/$t
    rm -rf "$run"
    mkdir -p "$run/corpus" "$run/artifacts"
    if [ -d "$top/fuzz/corpus/$t" ]; then
        cp -p "$top/fuzz/corpus/$t"/* "$run/corpus/" 2>/dev/null || true
    fi
    dict=()
    [ -f "$top/fuzz/$t.dict" ] && dict=("-dict=$top/fuzz/$t.dict")
    common=(-error_exitcode=1 -timeout=30 -rss_limit_mb=2048 -max_len="$(max_len "$t")"
            -print_final_stats=1 -artifact_prefix="$run/artifacts/" "${dict[@]}")
    log=$run/fuzz.log
    if [ -n "$input" ]; then
        echo "fuzz: $t: running on $input"
        "$bin" "${common[@]}" "$input"
        exit $?
    elif [ "$replay" -eq 1 ]; then
        echo "fuzz: $t: replaying $(count_files "$run/corpus") corpus inputs"
        # shellcheck disable=SC2086 # FUZZ_ARGS is a list of flags
        "$bin" "${common[@]}" ${FUZZ_ARGS:-} -runs=0 "$run/corpus" >"$log" 2>&1
    else
        echo "fuzz: $t: fuzzing for $seconds s ($log)"
        # shellcheck disable=SC2086
        "$bin" "${common[@]}" ${FUZZ_ARGS:-} -max_total_time="$seconds" \
            "$run/corpus" >"$log" 2>&1
    fi
    rc=$?
    report "$t" "$log"
    found=$(find "$run/artifacts" -type f \( -name 'crash-*' -o -name 'leak-*' \
                 -o -name 'timeout-*' -o -name 'oom-*' \) | sort)
    if [ "$rc" -ne 0 ] || [ -n "$found" ]; then
        status=1
        mkdir -p "$build/crashes/$t"
        # The reproducer's bytes too (libFuzzer's "Base64:" line), so that
        # a log is enough even when the files are gone.
        grep -aE 'property failed|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error|SUMMARY|^Base64: ' \
            "$log" | head -n 10 | sed "s/^/fuzz: $t: /" >&2
        if [ -z "$found" ]; then
            # A replayed seed that fails is its own reproducer.
            found=$(sed -n 's/^Running: //p' "$log" | tail -n 1)
        fi
        for f in $found; do
            keep=$build/crashes/$t/$(basename "$f")
            [ "$f" -ef "$keep" ] || cp -p "$f" "$keep" 2>/dev/null || keep=$f
            echo "fuzz: $t: FAILED (exit $rc); reproducer: $keep" >&2
            echo "fuzz: $t: reproduce with: scripts/fuzz.sh --input $keep $t" >&2
        done
        [ -n "$found" ] || echo "fuzz: $t: FAILED (exit $rc); see $log" >&2
    fi
    if [ "$update" -eq 1 ] && [ "$replay" -eq 0 ]; then
        mkdir -p "$top/fuzz/corpus/$t"
        before=$(count_files "$top/fuzz/corpus/$t")
        "$bin" -merge=1 -max_len="$(max_len "$t")" -timeout=30 \
            "$top/fuzz/corpus/$t" "$run/corpus" >"$run/merge.log" 2>&1 \
            || { echo "fuzz: $t: merge failed ($run/merge.log)" >&2; status=1; }
        echo "fuzz: $t: corpus $before -> $(count_files "$top/fuzz/corpus/$t") files"
    fi
done

for line in "${summary[@]}"; do
    echo "fuzz: $line"
done
if [ "$status" -eq 0 ]; then
    echo "fuzz: all targets passed"
else
    echo "fuzz: FAILED (reproducers under $build/crashes/)" >&2
fi
exit "$status"
