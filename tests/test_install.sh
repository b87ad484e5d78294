#!/usr/bin/env bash
# test_install.sh: the installed library, receiver and patched RTS work
# from where they were installed, including for a statically linked
# program.
#
# `make install prefix=DIR` from the build tree into a temporary
# directory; then, using only what is under DIR:
#   the installed ghc-eventlog-sink compiles a program linked with the
#     installed shared library (nothing from the build tree: checked with
#     ldd), it runs with +RTS --eventlog-sink=unix:..., and the installed
#     `eventlog-sink recv` receives a complete stream holding its event;
#   a fully static program (-optl-static, the installed libeventlog-sink.a,
#     and -optl-Wl,--undefined=els_ghc_writer as the README says: a static
#     archive's member, and so the constructor that registers the schemes
#     with the RTS, is linked only if something refers to it) takes
#     --eventlog-sink and streams to file: and unix: sinks;
#   the installed pkg-config file describes the installed library.
#
# Skips (77) without the patched RTS, GHC or ghc-events.
set -u -o pipefail

. "$(dirname "$0")/harness.sh"

require_tool
require_ghc
require_patched_rts
make_tmpdir
T=$ELS_TMP
P=$T/inst

# The build tree is complete (make check built it); install only copies.
# Keep the test harness's make settings out of the nested make.
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
    make -C "$ELS_TOP_BUILDDIR" install prefix="$P" >"$T/install.log" 2>&1 \
    || fail_showing "$T/install.log" "make install prefix=$P failed"
for f in bin/eventlog-sink bin/ghc-eventlog-sink lib/libeventlog-sink.so \
         lib/libeventlog-sink.a include/eventlog-sink.h include/eventlog-sink/ghc.h \
         include/eventlog-sink/sink.h lib/pkgconfig/eventlog-sink.pc; do
    [ -e "$P/$f" ] || fail "make install did not install $f"
done
# The .pc names the configured prefix; --define-prefix derives it from
# where the file is, as for a relocated install.
pc=$(PKG_CONFIG_PATH=$P/lib/pkgconfig pkg-config --define-prefix --cflags --libs eventlog-sink 2>&1) \
    || fail "pkg-config cannot read the installed eventlog-sink.pc: $pc"
[ "$(echo $pc)" = "-I$P/include -L$P/lib -leventlog-sink" ] \
    || fail "the installed eventlog-sink.pc says '$pc'"
ighc=$P/bin/ghc-eventlog-sink
grep -q "$P/lib/eventlog-sink/ghc-" "$ighc" \
    || fail "the installed ghc-eventlog-sink does not use the installed RTS: $(tail -n 1 "$ighc")"

mkdir -p "$T/src"
printf '%s\n' 'import Control.Monad (forM_)' 'import Debug.Trace (traceEventIO)' \
    'main :: IO ()' \
    'main = forM_ [1 .. 1000 :: Int] (\i -> traceEventIO ("installed " ++ show i)) >> putStrLn "installed ran"' \
    >"$T/src/Main.hs"

# ---------------------------------------------------------------------------
# Shared library.
# ---------------------------------------------------------------------------
(cd "$T/src" && "$ighc" -v0 -threaded -eventlog -rtsopts -outputdir obj-dyn Main.hs \
    -o "$T/app-dyn" -L"$P/lib" -leventlog-sink -optl-Wl,-rpath,"$P/lib") >"$T/build-dyn.log" 2>&1 \
    || fail_showing "$T/build-dyn.log" "the installed ghc-eventlog-sink could not build the program"
lib=$(ldd "$T/app-dyn" | awk '/libeventlog-sink/ { print $3 }')
[ "$lib" = "$P/lib/libeventlog-sink.so.1" ] \
    || fail "the program uses '$lib', not the installed library"

"$P/bin/eventlog-sink" recv --retry 10 -o "$T/dyn.eventlog" "unix:$T/dyn.sock" \
    >"$T/dyn.recv.out" 2>"$T/dyn.recv.err" &
rpid=$!
bg_register "$rpid"
start_program dyn "$T/app-dyn" +RTS "--eventlog-sink=unix:$T/dyn.sock?wait=10" -RTS
wait_both "$rpid"
check_program dyn "$prog_rc" "installed ran"
check_recv dyn "$recv_rc"
n=$(count_user_events "$T/dyn.eventlog" "installed ") || fail "dyn: ghc-events cannot parse the stream"
[ "$n" -eq 1000 ] || fail "dyn: $n of 1000 events in the stream"
note "shared: 1000 events through the installed library and receiver"

# ---------------------------------------------------------------------------
# Fully static.
# ---------------------------------------------------------------------------
(cd "$T/src" && "$ighc" -v0 -threaded -eventlog -rtsopts -outputdir obj-static Main.hs \
    -o "$T/app-static" -optl-static -optl-Wl,--undefined=els_ghc_writer \
    -L"$P/lib" -leventlog-sink) >"$T/build-static.log" 2>&1 \
    || fail_showing "$T/build-static.log" "could not link the program statically"
ldd "$T/app-static" >/dev/null 2>&1 && fail "app-static is not statically linked: $(ldd "$T/app-static" | head -n 2)"

start_program static-file "$T/app-static" +RTS "--eventlog-sink=file:$T/static.eventlog" -RTS
prog_rc=0; wait_pid "$ppid" 60 || prog_rc=$?
check_program static-file "$prog_rc" "installed ran"
n=$(count_user_events "$T/static.eventlog" "installed ") || fail "static-file: ghc-events cannot parse the file"
[ "$n" -eq 1000 ] || fail "static-file: $n of 1000 events in the file"

"$P/bin/eventlog-sink" recv --retry 10 -o "$T/static-unix.eventlog" "unix:$T/st.sock" \
    >"$T/static-unix.recv.out" 2>"$T/static-unix.recv.err" &
rpid=$!
bg_register "$rpid"
start_program static-unix "$T/app-static" +RTS "--eventlog-sink=unix:$T/st.sock?wait=10" -RTS
wait_both "$rpid"
check_program static-unix "$prog_rc" "installed ran"
check_recv static-unix "$recv_rc"
n=$(count_user_events "$T/static-unix.eventlog" "installed ") || fail "static-unix: ghc-events cannot parse the stream"
[ "$n" -eq 1000 ] || fail "static-unix: $n of 1000 events in the stream"
note "static: 1000 events to file: and unix:"
exit 0
