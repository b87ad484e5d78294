#!/usr/bin/env bash
# test_ended.sh: the live monitor on a flight recorder's dump and on a
# stream that ended, shown as what they are (Note [Mid-run streams] in
# tools/monitor/model.c, Note [After the end] in model_time.c).
#
# tests/programs/Sparks.hs (rounds of sparks and user messages, the marker
# "INCIDENT" between them) runs at -N2 on the patched RTS with
# ring:PATH?size=3M&dump-on=marker:INCIDENT&at-exit=0: the ring overflows
# long before the marker, so the dump starts mid-run at a join snapshot
# and opens with its note "eventlog-sink: dump 1: marker INCIDENT ...".
# `top --once --json` on the dump and serve's /api/state must say: no
# loss (the dump's note is one note, no loss note); the stream's time
# starts at its first event and its rates are over its span (both as
# `ghc-events show` of the dump gives them); the spark counters and the
# allocation are the change within the dump, per capability (the test
# computes them from ghc-events' SPARK_COUNTERS and HEAP_ALLOCATED
# lines).  The page in headless Chromium shows "no loss reported" and a
# time axis from the dump's first event.
#
# Then the same program live into serve (unix:, --interval 0.2) until it
# exits: after the end /api/state is over the whole run (whole_run), its
# GC rate is the collections over the run's span (not 0), its spark
# totals are the run's (ghc-events on the saved stream), no thread is
# running or runnable and those left are counted at the end.
#
# Skips (77) without the patched RTS, GHC, ghc-events or Chromium (the
# page's part only).
set -u -o pipefail

. "$(dirname "$0")/../harness.sh"
. "$(dirname "$0")/../ghcprog.sh"
. "$(dirname "$0")/monitor.sh"

setup_ghc_program_test sparks Sparks
SPARKS=$GHC_PROGRAM
export XDG_RUNTIME_DIR=$T/xdg
mkdir -m 700 "$XDG_RUNTIME_DIR" || fail "mkdir $XDG_RUNTIME_DIR"

# compare NAME JSON SHOW: the figures of the monitor's JSON against
# ghc-events show's text of the same stream; prints what it compared,
# exits 1 on a difference.  midrun: the stream starts mid-run (a dump).
compare() {
    "$PYTHON" - "$@" <<'PY'
import json, re, sys
name, jpath, spath, mode = sys.argv[1:5]
st = json.load(open(jpath))
events, on = [], False
for line in open(spath, errors="replace"):
    if line.startswith("Events:"):
        on = True
        continue
    m = re.match(r"^\s*(\d+): (?:cap (\d+): )?(.*)$", line) if on else None
    if m:
        events.append((int(m.group(1)), m.group(2), m.group(3)))
first, last = min(e[0] for e in events), max(e[0] for e in events)
sp_first, sp_last, al_first, al_last = {}, {}, {}, {}
for t, cap, text in events:
    m = re.match(r"spark stats: (\d+) created, (\d+) converted, (\d+) remaining "
                 r"\((\d+) overflowed, (\d+) dud, (\d+) GC'd, (\d+) fizzled\)", text)
    if m:
        v = tuple(int(x) for x in m.groups())
        sp_first.setdefault(cap, v)
        sp_last[cap] = v
    m = re.match(r"allocated on heap capset \d+: (\d+) total bytes", text)
    if m:
        al_first.setdefault(cap, int(m.group(1)))
        al_last[cap] = int(m.group(1))
midrun = mode == "midrun"
base = (lambda d, c: d[c]) if midrun else (lambda d, c: 0 if isinstance(d[c], int) else (0,) * 7)
created = sum(sp_last[c][0] - (sp_first[c][0] if midrun else 0) for c in sp_last)
converted = sum(sp_last[c][1] - (sp_first[c][1] if midrun else 0) for c in sp_last)
alloc = sum(al_last[c] - (al_first[c] if midrun else 0) for c in al_last)
span = (last - first) / 1e9
bad = []
def same(what, got, want):
    ok = got == want
    print("# %s: %s: monitor %r, want %r%s" % (name, what, got, want, "" if ok else "  <-- DIFFERS"))
    if not ok:
        bad.append(what)
def near(what, got, want, rel=1e-5):
    ok = abs(got - want) <= rel * max(abs(want), 1e-9)
    print("# %s: %s: monitor %r, want %r%s" % (name, what, got, want, "" if ok else "  <-- DIFFERS"))
    if not ok:
        bad.append(what)
same("first event's time (ns)", st["first_ns"], first)
same("last event's time (ns)", st["time_ns"], last)
near("span the rates are over (s)", st["interval_s"], span)
near("events per second over the span", st["events"]["per_s"], st["events"]["total"] / span)
same("spark counters' sparks created", st["sparks"]["total"]["created"], created)
same("spark counters' sparks converted", st["sparks"]["total"]["converted"], converted)
same("allocation (bytes)", st["heap"]["allocated"], alloc)
# The library's loss notes as ghc-events prints them (its own words,
# lib/format/parse_decode.c): a dump's note and a join at a snapshot
# are none.
losses = sum(1 for _, _, text in events if re.match(
    r"eventlog-sink: .*\b\d+ units? .*( dropped here: |this consumer missed | joined mid-run)",
    text) and "its stream starts at a snapshot" not in text)
same("loss notes", st["loss"]["loss_notes"], losses)
same("stream starts mid-run", st["midrun"], midrun)
if mode == "ended":
    same("over the whole run", st["whole_run"], True)
    near("GC collections per second over the span", st["gc"]["per_s"], st["gc"]["collections"] / span)
    same("threads running / runnable after the end",
         (st["threads"]["running"], st["threads"]["runnable"]), (0, 0))
    same("threads left counted at the end", st["threads"]["at_end"] is not None
         and st["threads"]["at_end"]["left"] == st["threads"]["alive"], True)
print("# %s: %d spark-counter capabilities, span %.3f s from %.3f s, %d loss notes"
      % (name, len(sp_last), span, first / 1e9, losses))
if not sp_last or created <= 0:
    print("# %s: no spark counters moved in the stream: nothing to compare" % name)
    bad.append("spark counters")
sys.exit(1 if bad else 0)
PY
}

# --- A flight recorder's dump ----------------------------------------------
"$SPARKS" 1500 300 +RTS -N2 -A256k \
    "--eventlog-sink=ring:$T/rec.eventlog?size=3M&at-exit=0&dump-on=marker:INCIDENT&after=0.2s" \
    --eventlog-flush-interval=0.1 -RTS >"$T/dump.prog.out" 2>"$T/dump.prog.err" \
    || fail_showing "$T/dump.prog.err" "the program with a ring: sink failed"
DUMP=$T/rec.1.eventlog
[ -f "$DUMP" ] || fail_showing "$T/dump.prog.err" "no dump $DUMP"
show_events "$DUMP" "$T/dump.show" || fail "ghc-events cannot read the dump"
grep -q 'eventlog-sink: dump 1: marker INCIDENT' "$T/dump.show" \
    || fail_showing "$T/dump.show" "the dump has no note naming its cause"
"$ELS_SINK_TOOL" top --once --json "$DUMP" >"$T/dump.json" 2>"$T/dump.top.err" \
    || fail_showing "$T/dump.top.err" "top --once --json on the dump failed"
compare "top --json on the dump" "$T/dump.json" "$T/dump.show" midrun \
    || fail "top --json on the dump differs from ghc-events show (above)"
[ "$(json_get "$T/dump.json" loss.notes)" -ge 1 ] || fail "top --json on the dump: no note counted"
"$ELS_SINK_TOOL" top --once "$DUMP" >"$T/dump.txt" 2>&1 || fail "top --once on the dump failed"
# (The JSON's loss notes are ghc-events', checked above.)
if [ "$(json_get "$T/dump.json" loss.loss_notes)" -eq 0 ]; then
    grep -q '^Loss: none reported$' "$T/dump.txt" || fail_showing "$T/dump.txt" "top on the dump reports a loss"
else
    grep -q '^LOSS: ' "$T/dump.txt" || fail_showing "$T/dump.txt" "top on the dump does not show its loss notes"
fi

start_serve dumpview "$DUMP" --interval 0.2
wait_until 60 eval 'state dumpview && [ "$(json_get "$T/dumpview.state" source.ended)" = true ]' \
    || fail "serve did not read the dump to its end within 60 s"
# Ticks after the end (5 of 0.2 s) change nothing.
sleep 1
state dumpview || fail "serve's /api/state on the dump"
compare "serve /api/state on the dump" "$T/dumpview.state" "$T/dump.show" midrun \
    || fail "serve's /api/state on the dump differs from ghc-events show (above)"

CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -n "$CHROMIUM" ]; then
    first_s=$(json_get "$T/dumpview.state" first_ns)
    ready='document.getElementById("loss").textContent.length > 0
           && document.getElementById("chart-heap").getAttribute("aria-label") !== null'
    values='({loss: document.getElementById("loss").textContent,
             cls: document.getElementById("loss").className,
             heap: document.getElementById("chart-heap").getAttribute("aria-label")})'
    "$PYTHON" "$ELS_TOP_SRCDIR/tests/monitor/browser.py" "$CHROMIUM" \
        "$SERVE_URL" "$ready" "$values" "$T/dump.png" 90 \
        >"$T/dump.dom.json" 2>"$T/dump.browser.err" \
        || fail_showing "$T/dump.browser.err" "the browser could not read the dump's page"
    "$PYTHON" - "$T/dump.dom.json" "$first_s" "$T/dumpview.state" <<'PY' || fail_showing "$T/dump.dom.json" "the dump's page (above)"
import json, re, sys
d = json.load(open(sys.argv[1]))
first = int(sys.argv[2]) / 1e9
print("# page on the dump: badge %r (%s); heap chart %r" % (d["loss"], d["cls"], d["heap"]))
m = re.search(r", ([\d.]+) s to ([\d.]+) s$", d["heap"])
lost = json.load(open(sys.argv[3]))["loss"]["loss_notes"] > 0
ok = (d["cls"] == "bad" if lost else d["loss"] == "no loss reported" and d["cls"] == "ok") and m is not None \
    and abs(float(m.group(1)) - first) <= 0.05 + 0.011
print("# the axis starts at %s s, the dump's first event at %.3f s" % (m.group(1) if m else "?", first))
sys.exit(0 if ok else 1)
PY
else
    note "chromium not installed: the dump's page not looked at"
fi
kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null

# --- A stream that ended -----------------------------------------------------
start_serve ended "unix:$T/p.sock" --interval 0.2
# In $T: -hT writes sparks.hp in the working directory.
(cd "$T" && exec "$SPARKS" 300 100 +RTS -N2 -A256k -hT -i0.02 "--eventlog-sink=unix:$T/p.sock?wait=60" -RTS) \
    >"$T/ended.prog.out" 2>"$T/ended.prog.err" \
    || fail_showing "$T/ended.prog.err" "the program on a unix: sink failed"
# Ended, and ticked since (a tick after the end was all zeros before).
wait_until 60 eval 'state ended && [ "$(json_get "$T/ended.state" source.ended)" = true ]' \
    || fail "serve did not see the stream end within 60 s"
# Ticks after the end (5 of 0.2 s: each was all zeros before) change
# nothing.
sleep 1
state ended || fail "serve's /api/state after the end"
show_events "$T/ended.saved" "$T/ended.show" || fail "ghc-events cannot read the saved stream"
compare "serve /api/state after the end" "$T/ended.state" "$T/ended.show" ended \
    || fail "serve's /api/state after the end differs from ghc-events show (above)"

# --- The page after the end, its layout ------------------------------------
if [ -n "$CHROMIUM" ]; then
    ready='document.getElementById("heap-census").textContent.length > 0
           && document.getElementById("chart-gc").getAttribute("aria-label") !== null'
    values='(() => {
      // Lines the cell takes: the distinct tops of its text boxes.
      const one = (e) => { const r = document.createRange(); r.selectNodeContents(e);
                           return new Set(Array.from(r.getClientRects())
                                          .filter((b) => b.width > 0)
                                          .map((b) => Math.round(b.top))).size; };
      // Cards as narrow as the grid makes them (330 px) on a small screen.
      document.querySelector("section.grid").style.width = "700px";
      void document.body.offsetHeight;
      const row = document.getElementById("gc-pause-row");
      return {census: document.getElementById("heap-census").textContent,
              bands: Array.from(document.querySelectorAll("#heap-labels th.band"))
                     .map((e) => [e.textContent, e.title]),
              alive: document.getElementById("threads-alive-label").textContent,
              cc: document.getElementById("cc-title").textContent,
              pause_lines: [one(row.cells[0]), one(row.cells[1])],
              gc_chart: document.getElementById("chart-gc").getAttribute("aria-label")}; })()'
    "$PYTHON" "$ELS_TOP_SRCDIR/tests/monitor/browser.py" "$CHROMIUM" \
        "$SERVE_URL" "$ready" "$values" "$T/ended.png" 90 \
        >"$T/ended.dom.json" 2>"$T/ended.browser.err" \
        || fail_showing "$T/ended.browser.err" "the browser could not read the page after the end"
    "$PYTHON" - "$T/ended.dom.json" "$T/ended.state" <<'PY' || fail_showing "$T/ended.dom.json" "the page after the end (above)"
import json, sys
d, st = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
h, c = st["heap"], st["heap"]["census"]
bad = []
def check(what, ok, got):
    print("# page after the end: %s: %r%s" % (what, got, "" if ok else "  <-- WRONG"))
    if not ok:
        bad.append(what)
want = "census %d at %.1f s" % (h["samples"], c["time_ns"] / 1e9)
check("the census's number and time (" + want + ")", d["census"].startswith(want), d["census"])
check("the last census beside live bytes, of different moments",
      "at the end beside live" in d["census"] and "different moments" in d["census"], d["census"])
labels = [b["label"] for b in h["by_label"][:8]]
check("every band's whole name in its title", [t for _, t in d["bands"]] == labels, d["bands"])
check("a band's name cut only from the left",
      all(n == t or (n.startswith("\u2026") and t.endswith(n[1:])) for n, t in d["bands"]), d["bands"])
check("threads left at the end so labelled", d["alive"] == "not finished at the end", d["alive"])
check("cost centres over the whole run", d["cc"] == "Cost centres (whole run)", d["cc"])
check("pause p50 / max on one line", d["pause_lines"] == [1, 1], d["pause_lines"])
check("the GC chart's axes in ms and seconds", " ms, " in d["gc_chart"] and d["gc_chart"].endswith(" s"),
      d["gc_chart"])
sys.exit(1 if bad else 0)
PY
fi

# --- top's lines at 80, 110 and 120 columns ----------------------------------
if command -v tmux >/dev/null 2>&1; then
    TMUX_SOCK=$T/tmux.sock
    tm() { tmux -S "$TMUX_SOCK" "$@"; }
    trap 'tm kill-server 2>/dev/null || true; els_cleanup' EXIT
    for cols in 80 110 120; do
        tm new-session -d -s "w$cols" -x "$cols" -y 60 \
            "'$ELS_SINK_TOOL' top --interval 0.2 '$T/ended.saved'" \
            || fail "tmux could not start a session"
        pane() {
            tm capture-pane -J -p -t "w$cols" >"$T/top$cols.txt" 2>/dev/null \
                && grep -q '^Heap ' "$T/top$cols.txt" && grep -q '\[ended\]' "$T/top$cols.txt"
        }
        wait_until 30 pane || fail_showing "$T/top$cols.txt" "top at $cols columns did not show the file read"
        tm kill-session -t "w$cols"
        # -J joins what the terminal wrapped: a line wider than the
        # terminal is one that wrapped.  The header (to the HEC table) and
        # the GC lines (to Heap) must not.
        awk -v cols="$cols" '
            /^HEC / { head = 0 } NR == 1 { head = 1 }
            /^GC / { gc = 1 } /^Heap / { gc = 0 }
            { sub(/ +$/, "") }
            (head || gc) && length($0) > cols { print "wrapped at " cols ": " $0; bad = 1 }
            END { exit bad }' "$T/top$cols.txt" \
            || fail_showing "$T/top$cols.txt" "top's header or GC lines wrap at $cols columns"
        note "top at $cols columns: header and GC lines within $cols: $(grep -c . "$T/top$cols.txt") lines"
    done
else
    note "tmux not installed: top's widths not checked"
fi

# --- serve --all's index: each header over its cells ------------------------
if [ -n "$CHROMIUM" ]; then
    build_ghc_program busy Busy patched_ghc_lib -threaded -eventlog -rtsopts
    BUSY=$GHC_PROGRAM
    # serve --all first: the program waits for it (wait=) to print "ready".
    # The index reloads every 2 s: read it once its stylesheet applies.
    start_serve_all
    start_busy_live idx 1 "$T/idx.sock"
    # Text aligned alike: the program's name at the left, every other
    # column at the right, its header's text edge on its cells' (1 px).
    values='(() => {
      const box = (e) => { const r = document.createRange(); r.selectNodeContents(e);
                           return r.getBoundingClientRect(); };
      const t = document.getElementById("programs"), row = t.tBodies[0].rows[0];
      return Array.from(t.tHead.rows[0].cells).map((h, i) => {
        const a = box(h), b = box(row.cells[i]);
        return [h.textContent, i === 0 ? a.left - b.left : a.right - b.right,
                row.cells[i].textContent]; }); })()'
    "$PYTHON" "$ELS_TOP_SRCDIR/tests/monitor/browser.py" "$CHROMIUM" "$SERVE_URL" \
        "document.querySelectorAll('tr.program').length === 1 && document.readyState === 'complete'
         && document.styleSheets.length > 0 && document.styleSheets[0].cssRules.length > 0" \
        "$values" "$T/index.png" 60 \
        >"$T/index.json" 2>"$T/index.browser.err" \
        || fail_showing "$T/index.browser.err" "the browser could not read serve --all's index"
    "$PYTHON" - "$T/index.json" <<'PY' || fail_showing "$T/index.json" "serve --all's index: a header off its cells (above)"
import json, sys
cols = json.load(open(sys.argv[1]))
import re
for name, off, cell in cols:
    print("# index column %r: header text %+.1f px from its cells' (%r)" % (name, off, cell))
# Sizes in the one unit family of top and the page (SI: kB, MB).
sizes = [cell for name, _, cell in cols if name in ("heap", "live")]
print("# index sizes: %r" % sizes)
ok = all(abs(off) <= 1 for _, off, _ in cols) and len(sizes) == 2 \
    and all(re.fullmatch(r"[\d.]+ (B|kB|MB|GB)", c) for c in sizes)
sys.exit(0 if ok else 1)
PY
    stop_controlled
fi
exit 0
