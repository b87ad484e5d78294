#!/usr/bin/env python3
"""aggr.py: the timeline's aggregates (kind=heap, durations, spans,
profile through tl_driver) against `ghc-events show`, `eventlog-sink dump
--hp` and the RTS's own .hp (see test_timeline_aggr.sh).

    aggr.py DRIVER EVENTLOG SHOWN DUMP_HP RTS_HP|- LEAK_WORD|-

Prints one line per check; exits 1 when any differs."""
import json
import re
import subprocess
import sys

driver, log, shown, dump_hp, rts_hp, leak_word = sys.argv[1:7]
bad = 0


def same(what, got, want):
    global bad
    ok = got == want
    if not ok:
        bad += 1
    g, w = repr(got), repr(want)
    print("%s %s: %s%s" % ("ok  " if ok else "FAIL", what, g[:300],
                           "" if ok else "  want " + w[:300]))


def q(kind, qs=""):
    r = subprocess.run([driver, log, kind, qs], capture_output=True, text=True)
    if r.returncode != 0:
        print("FAIL tl_driver %s %s: %s %s" % (kind, qs, r.stdout[:300], r.stderr))
        sys.exit(1)
    return json.loads(r.stdout)


# ---------------------------------------------------------------------------
# ghc-events show
# ---------------------------------------------------------------------------
events = []
on = False
with open(shown) as f:
    for line in f:
        line = line.rstrip("\n")
        if line.startswith("Events:"):
            on = True
            continue
        m = re.match(r"^\s*(\d+): (?:cap (\d+): )?(.*)$", line) if on else None
        if m:
            events.append((int(m.group(1)),
                           None if m.group(2) is None else int(m.group(2)), m.group(3)))
t_first, t_last = events[0][0], max(e[0] for e in events)
third = (t_last - t_first) // 3
windows = [("whole run", None, None), ("middle third", t_first + third, t_first + 2 * third)]

# ---------------------------------------------------------------------------
# Heap: every census, every band
# ---------------------------------------------------------------------------


def read_hp(path):
    out, cur = [], None
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("BEGIN_SAMPLE"):
            cur = (line.split()[1], {})
        elif line.startswith("END_SAMPLE"):
            out.append(cur)
            cur = None
        elif cur is not None and "\t" in line:
            name, v = line.rsplit("\t", 1)
            cur[1][name] = cur[1].get(name, 0) + int(v)
    # The empty samples the RTS writes first and at exit (dump --hp too).
    if out and not out[0][1]:
        out = out[1:]
    if out and not out[-1][1]:
        out = out[:-1]
    return out


def nonzero(d):
    return {k: v for k, v in d.items() if v}


hp = read_hp(dump_hp)
h = q("heap", "bands=0&px=8192")
same("heap: unit", h["unit"], "bytes")
same("heap: censuses (dump --hp)", h["censuses"], len(hp))
same("heap: sampling", h["sampling"], "every" if len(hp) <= 8192 else "last_per_pixel")
ours = []
for i, t in enumerate(h["times"]):
    ours.append(("%f" % (t / 1e9), nonzero({b["name"]: b["series"][i] for b in h["bands"]})))
same("heap: census times and bands, every census (dump --hp)",
     ours, [(t, nonzero(d)) for t, d in hp])
same("heap: totals per census (dump --hp)", h["total"], [sum(d.values()) for _, d in hp])
same("heap: no band refused, no census lost",
     (h["band_table"]["refused_samples"], h["lost"], h["bands_more"]), (0, 0, 0))
print("note heap: %d censuses, %d bands, breakdown %s" % (len(hp), len(h["bands"]), h["breakdown"]))
if len(hp) < 4:
    print("FAIL too few censuses to test: %d" % len(hp))
    bad += 1

# A narrow px: the last census of each pixel.
px = 3
t0, t1 = h["t0"], h["t1"]
times_all = h["times"]
want = {}
for t in times_all:
    want[(t - t0) * px // (t1 - t0 + 1)] = t
hs = q("heap", "px=%d&bands=3" % px)
same("heap px=3: last census per pixel", (hs["sampling"], hs["times"]),
     ("last_per_pixel", [want[k] for k in sorted(want)]))
same("heap px=3: 3 bands shown, the rest counted", (len(hs["bands"]), hs["bands_more"]),
     (3, hs["bands_seen"] - 3))

# A window from one census's time to another's, both included.
a, b = times_all[1], times_all[-2]
hw = q("heap", "t0=%d&t1=%d&bands=0" % (a, b))
same("heap: a window's censuses, bounds included", hw["times"], times_all[1:-1])

# Growth: last minus first over the run, from the .hp.
first, last = hp[0][1], hp[-1][1]
growth = {n: last.get(n, 0) - first.get(n, 0) for n in set(first) | set(last)}
top = max(growth.values())
g = q("heap", "order=growth&bands=5")
same("heap: growth ranking's first band grew most (dump --hp)",
     growth.get(g["bands"][0]["name"]), top)
same("heap: growth figure", g["bands"][0]["growth"], top)
if leak_word != "-":
    same("heap: the leaking cost centre's band grew most",
         leak_word in g["bands"][0]["name"], True)
    print("note heap: growth first: %s (+%d bytes)" % (g["bands"][0]["name"], top))

# dump --hp's spelling rule (profile_word): one printable token.
word = lambda s: "".join(c if 0x20 < ord(c) < 0x7f and c not in '"\\' else "_" for c in s) or "_"
if rts_hp != "-":
    # The RTS's bands, spelt by dump --hp's rule, without stack numbers.
    bare = lambda k: word(re.sub(r"^\(\d+\)", "", k))
    merged = lambda d: {k: sum(v for kk, v in d.items() if bare(kk) == k)
                        for k in {bare(kk) for kk, v in d.items() if v}}
    rts = read_hp(rts_hp)
    same("heap: censuses (the RTS's .hp)", h["censuses"], len(rts))
    same("heap: every census's bands without stack numbers (the RTS's .hp)",
         [merged(d) for _, d in ours], [merged(d) for _, d in rts])

# ---------------------------------------------------------------------------
# Durations: pairs matched here from ghc-events' lines
# ---------------------------------------------------------------------------
# The poster of a marker: the thread running on its cap (ghc-events'
# "running thread N" / "stopping thread N" lines on that cap).
marks, running = [], {}
for t, cap, text in events:
    m = re.match(r"^(running|stopping) thread (\d+)", text)
    if m and cap is not None:
        running[cap] = int(m.group(2)) if m.group(1) == "running" else 0
        continue
    th = running.get(cap, 0)
    m = re.match(r"^marker: (.*) (start|end|begin|stop)$", text)
    if m:
        fam = 0 if m.group(2) in ("start", "end") else 1
        marks.append((t, th, m.group(1), fam, m.group(2) in ("end", "stop")))
        continue
    m = re.match(r"^(START|STOP) (.*)$", text)
    if m:
        marks.append((t, th, m.group(2), 2, m.group(1) == "STOP"))
stacks, spans, unmatched = {}, [], 0
for t, th, name, fam, end in marks:        # ghc-events sorts by time, stably
    st = stacks.setdefault((th, name, fam), [])
    if not end:
        st.append(t)
    elif st:
        spans.append((name, st.pop(), t))
    else:
        unmatched += 1
still_open = sum(len(v) for v in stacks.values())


def nearest(v, p):
    r = -(-p * len(v) // 100)
    return v[max(r, 1) - 1]


ends = sorted(e for _, _, e in spans)
dwindows = windows + [("ends of spans n/4 .. 3n/4 (bounds included)",
                       ends[len(ends) // 4], ends[3 * len(ends) // 4])]
for label, a, b in dwindows:
    qs = "" if a is None else "t0=%d&t1=%d" % (a, b)
    d = q("durations", qs)
    lo, hi = (d["t0"], d["t1"])
    sel = [s for s in spans if lo <= s[2] <= hi]
    want, longest = {}, {}
    for name in sorted({s[0] for s in sel}):
        v = sorted(e - s for n, s, e in sel if n == name)
        want[name] = (len(v), sum(v), nearest(v, 50), nearest(v, 99), v[-1])
        longest[name] = {(s, e) for n, s, e in sel if n == name and e - s == v[-1]}
    got = {x["name"]: (x["count"], x["total_ns"], x["p50_ns"], x["p99_ns"], x["max_ns"])
           for x in d["names"]}
    same("durations %s: count, total, p50, p99, max per name (ghc-events)" % label, got, want)
    same("durations %s: longest instance per name" % label,
         all(tuple(x["longest"]) in longest[x["name"]] for x in d["names"]), True)
    same("durations %s: exact" % label, d["exact"], True)
    if a is None:
        same("durations: unmatched ends, still open (ghc-events)",
             (d["unmatched_ends"], d["open"], d["pending"]), (unmatched, still_open, 0))
        same("durations: the throwing spans were closed (the program's 5)",
             got.get("failing", (0,))[0], 5)
        same("durations: every request's span (3 workers x 120 + nested)",
             got.get("request", (0,))[0], 3 * 120 + 3 * 4)
        print("note durations: %s" % json.dumps(d["names"])[:400])
    else:
        sp = q("spans", qs + "&n=100000")
        same("spans %s: instances overlapping (ghc-events)" % label, sp["total"],
             sum(1 for _, s, e in spans if s <= hi and e >= lo))
        same("spans %s: listed" % label, len(sp["spans"]), sp["total"])

# ---------------------------------------------------------------------------
# Cost-centre ticks
# ---------------------------------------------------------------------------
ccs, ticks = {}, []
for t, _, text in events:
    if text.startswith("cost centre "):
        m = re.match(r"cost centre (\d+) (.*) in (\S+) at ", text)
        ccs[int(m.group(1))] = (m.group(2), m.group(3))
    elif text.startswith("cap no "):
        m = re.match(r"cap no \d+, prof sample \d+, cost centre stack (.*)$", text)
        ticks.append((t, tuple(int(x) for x in m.group(1).split(", ") if x)))
if leak_word != "-":
    BUILTIN = {("GC", "GC"): "GC", ("IDLE", "IDLE"): "IDLE", ("SYSTEM", "SYSTEM"): "SYSTEM",
               ("OVERHEAD_of", "PROFILING"): "OVERHEAD_of", ("DONT_CARE", "MAIN"): "DONT_CARE"}
    tt = sorted(t for t, _ in ticks)
    pwindows = windows + [("ticks n/3 .. 2n/3 (bounds included)",
                           tt[len(tt) // 3], tt[2 * len(tt) // 3])]
    for label, a, b in pwindows:
        qs = "" if a is None else "t0=%d&t1=%d" % (a, b)
        tr = q("profile", qs + "&format=tree")
        lo, hi = tr["t0"], tr["t1"]
        sel = [s for t, s in ticks if lo <= t <= hi]
        kinds = {k: 0 for k in BUILTIN.values()}
        prog = {}
        for s in sel:
            k = BUILTIN.get(ccs.get(s[0])) if len(s) == 1 else None
            if k:
                kinds[k] += 1
            else:
                key = tuple((word(ccs[i][0]), word(ccs[i][1])) for i in reversed(s))
                prog[key] = prog.get(key, 0) + 1
        same("profile %s: ticks (ghc-events)" % label, tr["samples"], len(sel))
        same("profile %s: the RTS's own, apart (ghc-events)" % label, tr["rts"], kinds)
        same("profile %s: the tree's root holds the rest" % label, tr["nodes"][0][3],
             len(sel) - sum(kinds.values()))
        ss = q("profile", qs + "&format=speedscope")
        fr = ss["shared"]["frames"]
        p = ss["profiles"][0]
        got = {}
        for smp, w in zip(p["samples"], p["weights"]):
            key = tuple((fr[i]["name"], fr[i]["file"]) for i in smp)
            got[key] = got.get(key, 0) + w
        same("profile %s: speedscope's stacks and weights (ghc-events)" % label, got, prog)
        if a is None:
            print("note profile: %d ticks, %d stacks, rts %s" % (len(sel), len(prog), kinds))
            if len(sel) < 20:
                print("FAIL too few ticks to test: %d" % len(sel))
                bad += 1
sys.exit(1 if bad else 0)
