#!/usr/bin/env python3
# figures.py DRIVER EVENTLOG SHOWN MARKER: the timeline engine
# (tests/timeline/tl_driver) against `ghc-events show` (SHOWN: its
# output for EVENTLOG).
#
#  1. The 1 ms window centred on the first marker whose text is MARKER:
#     the events the engine lists are exactly the lines ghc-events shows
#     with a time in the window, in the same order.
#  2. The figures of that window, of a 20 ms window around it and of the
#     whole run, computed here from the shown lines: collections (a
#     "finished GC" in the window, its pause from the "starting GC"
#     before it on its cap), allocation (the rise of each cap's
#     "allocated on heap" counter since its previous report), and each
#     thread's running time (from "running thread" to "stopping thread"
#     on one cap, clipped to the window).
#  3. Thread labels and stop reasons: each labelled thread's lane carries
#     its label, and every stop reason the window's lines show for a
#     thread appears in its figures.
# Prints what differs and exits 1, or prints "ok ..." lines.
import json, re, subprocess, sys

driver, eventlog, shown, marker = sys.argv[1:5]
live = sys.argv[5:]  # optional: --live DIR BYTES

lines = []
on = False
for l in open(shown, encoding="utf-8", errors="replace"):
    l = l.rstrip("\n")
    if l == "Events:":
        on = True
        continue
    if not on:
        continue
    m = re.match(r"^\s*(\d+): (.*)$", l)
    if m:
        lines.append((int(m.group(1)), m.group(2)))

def run(kind, qs):
    out = subprocess.run([driver] + live + [eventlog, kind, qs], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)

bad = []
mt = [t for t, s in lines if re.search(r"marker: " + re.escape(marker) + "$", s)]
if not mt:
    sys.exit("no marker %r in %s" % (marker, shown))
T = mt[0]
w0, w1 = T - 500000, T + 500000

# 1. the window's events
want = [(t, s) for t, s in lines if w0 <= t <= w1]
got = run("events", "t0=%d&t1=%d&n=100000" % (w0, w1))
have = [(e[0], ("cap %d: " % e[1] if e[1] >= 0 else "") + e[2]) for e in got["events"]]
if got["total"] != len(want) or have != want:
    bad.append("window [%d,%d]: engine %d events, ghc-events %d" % (w0, w1, got["total"], len(want)))
    for i, (a, b) in enumerate(zip(have + [None] * len(want), want + [None] * len(have))):
        if a != b:
            bad.append("  first difference at %d: engine %r, ghc-events %r" % (i, a, b))
            break
else:
    print("ok window of 1 ms around marker %r at %d: %d events equal" % (marker, T, len(want)))

# 2. figures
def figures(t0, t1):
    gstart, alloc_prev, since = {}, {}, {}
    gcs = tot = mx = alloc = 0
    run_ns, stops = {}, {}
    for t, s in lines:
        m = re.match(r"cap (\d+): (.*)$", s)
        if not m:
            continue
        cap, s = int(m.group(1)), m.group(2)
        inw = t0 <= t <= t1
        if s == "starting GC":
            gstart[cap] = t
        elif s == "finished GC":
            if inw and cap in gstart:
                p = t - gstart[cap]
                gcs, tot, mx = gcs + 1, tot + p, max(mx, p)
            gstart.pop(cap, None)
        elif s.startswith("allocated on heap capset"):
            v = int(re.search(r": (\d+) total bytes", s).group(1))
            if inw:
                prev = alloc_prev.get(cap, 0)
                alloc += v - prev if v >= prev else v
            alloc_prev[cap] = v
        elif s.startswith("running thread "):
            since[cap] = (int(s.split()[2]), t)
        elif s.startswith("stopping thread "):
            th = int(s.split()[2])
            if cap in since and since[cap][0] == th:
                a, b = max(since[cap][1], t0), min(t, t1)
                if b > a:
                    run_ns[th] = run_ns.get(th, 0) + b - a
                del since[cap]
            if inw:
                stops.setdefault(th, set()).add(re.search(r"\((.*)\)$", s).group(1))
    for cap, (th, t) in since.items():   # still running at the end
        a, b = max(t, t0), t1
        if b > a:
            run_ns[th] = run_ns.get(th, 0) + b - a
    return gcs, tot, mx, alloc, run_ns, stops

names = {"thread yielding": "ThreadYielding", "thread finished": "ThreadFinished",
         "blocked on an MVar": "BlockedOnMVar", "heap overflow": "HeapOverflow",
         "stack overflow": "StackOverflow", "making a foreign call": "ForeignCall",
         "blocked on threadDelay": "BlockedOnDelay", "thread blocked": "ThreadBlocked",
         "blocked on a black hole": "BlockedOnBlackHole",
         "blocked reading an MVar": "BlockedOnMVarRead"}
first, last = lines[0][0], lines[-1][0]
for name, (t0, t1) in (("1 ms", (w0, w1)), ("20 ms", (T - 10000000, T + 10000000)),
                       ("whole run", (first, last))):
    gcs, tot, mx, alloc, run_ns, stops = figures(t0, t1)
    r = run("range", "t0=%d&t1=%d" % (t0, t1))
    g = r["gc"]
    if not r["exact"]:
        bad.append("%s: not replayed exactly" % name)
    if (g["count"], g["total_ns"], g["max_ns"]) != (gcs, tot, mx):
        bad.append("%s: GC engine %r, ghc-events %r" % (name, (g["count"], g["total_ns"], g["max_ns"]), (gcs, tot, mx)))
    if r["alloc_bytes"] != alloc:
        bad.append("%s: allocation engine %d, ghc-events %d" % (name, r["alloc_bytes"], alloc))
    eng = {th["id"]: th for th in r["threads"] or []}
    for th, ns in run_ns.items():
        e = eng.get(th, {}).get("running_ns", 0)
        if e != ns:
            bad.append("%s: thread %d running engine %d, ghc-events %d" % (name, th, e, ns))
    for th, reasons in stops.items():
        got_r = set(eng.get(th, {}).get("stops", {}))
        for reason in reasons:
            if names.get(reason, "?") not in got_r:
                bad.append("%s: thread %d stopped (%s), engine says %r" % (name, th, reason, sorted(got_r)))
    if not [b for b in bad if b.startswith(name)]:
        print("ok %s: %d collections, %d ns paused, %d bytes allocated, %d threads' running time equal"
              % (name, gcs, tot, alloc, len(run_ns)))

# 3. labels on the lanes
labels = {}
for t, s in lines:
    m = re.match(r'cap \d+: thread (\d+) has label "(.*)"$', s)
    if m:
        labels[int(m.group(1))] = m.group(2)
tl = run("timeline", "t0=%d&t1=%d&px=400" % (first, last))
lanes = {th["id"]: th for th in tl["threads"] or []}
for th, label in labels.items():
    if th in lanes and lanes[th]["label"] != label:
        bad.append("thread %d lane label %r, ghc-events %r" % (th, lanes[th]["label"], label))
if labels and not any(th in lanes for th in labels):
    bad.append("no labelled thread has a lane")
else:
    print("ok %d labels on the lanes" % len(labels))

for b in bad:
    print("FAIL", b)
sys.exit(1 if bad else 0)
