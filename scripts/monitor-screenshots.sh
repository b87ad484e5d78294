#!/usr/bin/env bash
# monitor-screenshots.sh: remake docs/MONITORS.md's pictures of the live
# monitor, docs/monitor-serve.png (the page of `eventlog-sink serve`) and
# docs/monitor-top.png (`eventlog-sink top` in a terminal), from the demo
# program examples/live-service running `steady` at -N2 on the patched
# RTS.  The terminal is tmux; its text is drawn into a PNG by the same
# headless Chromium that photographs the page (tests/monitor/browser.py).
#
# Usage: scripts/monitor-screenshots.sh [BUILD_DIR]   (default _build)
# Needs the build with its patched RTS, tmux, chromium and python3.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$top/_build}" && pwd)
ghc=$build/patched-rts/bin/ghc-eventlog-sink
tool=$build/tools/eventlog-sink
libdir=$build/lib/.libs
chromium=$(command -v chromium || command -v chromium-browser)
work=$(mktemp -d /tmp/els-shots.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    tmux -S "$work/tmux.sock" kill-server 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/b"
cp "$top/examples/live-service/Main.hs" "$work/b/Main.hs"
(cd "$work/b" && "$ghc" -v0 -O -threaded -eventlog -rtsopts -L"$libdir" \
    -leventlog-sink -optl-Wl,-rpath,"$libdir" Main.hs -o "$work/live-service")

sock=$work/app.sock
"$tool" serve --listen 127.0.0.1:0 "unix:$sock" 2>"$work/serve.err" &
pids+=($!)
"$work/live-service" steady 40 +RTS -N2 "--eventlog-sink=unix:$sock?wait=10" \
    --eventlog-flush-interval=0.5 -RTS >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do grep -q "serving http://" "$work/serve.err" && break; sleep 0.1; done
# The page's URL with serve's token (http://HOST:PORT/?token=TOKEN):
# the browser opens it (serve trades it for a cookie), curl sends the
# token as a scraper does.
url=$(sed -n 's|.*serving \(http://[^ ]*\)$|\1|p' "$work/serve.err")
base=${url%%\?*}
token=${url#*\?token=}

# serve is the first consumer (it gets the start-up events: the program's
# name and pid); top joins later, as a second viewer would.
for _ in $(seq 1 100); do
    curl -sf -H "Authorization: Bearer $token" "${base}api/state" | grep -q '"connections":1' && break
    sleep 0.1
done
tmux -S "$work/tmux.sock" new-session -d -s top -x 100 -y 34 "$tool top unix:$sock"
sleep 10    # a picture, not a test: let both views fill with some history

python3 "$top/tests/monitor/browser.py" "$chromium" "$url" \
    'document.getElementById("speedscope").href.indexOf("from=") > 0' \
    'document.getElementById("events-total").textContent' \
    "$top/docs/monitor-serve.png" 60 >/dev/null

tmux -S "$work/tmux.sock" capture-pane -p -t top >"$work/top.txt"
python3 - "$work/top.txt" "$work/top.html" <<'PY'
import html, sys
text = open(sys.argv[1]).read().rstrip("\n")
open(sys.argv[2], "w").write(
    "<!DOCTYPE html><html><body style='margin:0;background:#1d1f21'>"
    "<pre style='margin:0;padding:12px;color:#e0e0e0;"
    "font:14px/1.25 DejaVu Sans Mono,monospace'>" + html.escape(text) +
    "</pre></body></html>")
PY
ELS_SHOT_CLIP=0,0,880,${shot_h:-520} python3 "$top/tests/monitor/browser.py" "$chromium" \
    "file://$work/top.html" 'document.readyState == "complete"' '1' \
    "$top/docs/monitor-top.png" 30 >/dev/null
echo "wrote docs/monitor-serve.png and docs/monitor-top.png"
