#!/usr/bin/env python3
"""figures.py: the independent side of tests/monitor/test_figures.sh.

For one run of tests/programs/Figures.hs it computes what the monitor's figures
must be from sources that are not the monitor: the RTS's own report
(+RTS -s: collections and the longest and total pause per generation,
bytes allocated), `ghc-events show` of the same eventlog (GC starts, the
collections' leaders and pauses, each capability's last HEAP_ALLOCATED,
thread stops and the time to each thread's next run, heap censuses and
their bands, cost-centre definitions and time samples), a walk of the
eventlog's bytes written here from GHC's format (events and bytes by
type; checked against ghc-events' counts), and GHC's own headers (what
each STOP_THREAD status means).  It then checks every view the monitor
offers of that run: `top --once --json`, `top --once`'s text, serve's
/api/state (the page's data) and /metrics (and, profiled, the speedscope
export), and prints one table row per figure: the view, our value and
the independent one.  Exit status 1 if any differs.

Usage: figures.py RUN DIR [--prof]
  DIR holds RUN.eventlog, RUN.show (ghc-events show), RUN.stats (+RTS -s),
  RUN.json (top --once --json), RUN.txt (top --once), RUN.api.json
  (/api/state), RUN.metrics (/metrics), and with --prof RUN.speedscope.json.
Rows are appended to DIR/table.tsv.
"""
import json
import os
import re
import struct
import sys

RUN, DIR = sys.argv[1], sys.argv[2]
PROF = "--prof" in sys.argv[3:]
CONSTANTS = os.environ.get("GHC_CONSTANTS_H", "/usr/lib/ghc/include/rts/Constants.h")
path = lambda ext: os.path.join(DIR, RUN + ext)
failures = []
rows = []


def row(view, figure, ours, want, ok):
    rows.append((RUN, view, figure, str(ours), str(want), "ok" if ok else "DIFFERS"))
    if not ok:
        failures.append("%s: %s: ours %s, independent %s" % (view, figure, ours, want))


def same(view, figure, ours, want):
    row(view, figure, ours, want, ours == want)


def near(view, figure, ours, want, tol):
    ok = ours is not None and want is not None and abs(ours - want) <= tol
    row(view, figure, ours, want, ok)


# ---------------------------------------------------------------------------
# Independent sources
# ---------------------------------------------------------------------------

def rts_stats(text):
    """+RTS -s: bytes allocated; per generation colls, elapsed and max pause
    (seconds as printed: %.3f and %.4f)."""
    alloc = int(re.search(r"^\s*([\d,]+) bytes allocated in the heap", text, re.M)
                .group(1).replace(",", ""))
    gens = {}
    for g, colls, _par, _cpu, elapsed, _avg, mx in re.findall(
            r"^\s*Gen\s+(\d+)\s+(\d+) colls,\s+(\d+) par\s+([\d.]+)s\s+([\d.]+)s"
            r"\s+([\d.]+)s\s+([\d.]+)s", text, re.M):
        gens[int(g)] = {"colls": int(colls), "elapsed": float(elapsed), "max": float(mx)}
    return alloc, gens


def walk(data):
    """The eventlog's events as GHC writes them (rts/eventlog/EventLog.c):
    header of event types, then events, block markers among them; yields
    (tag, time, cap, payload, bytes) for every event but block markers,
    and returns the type table through walk.types."""
    assert data[:8] == b"hdrbhetb", "not an eventlog"
    i, types = 8, {}
    while data[i:i + 4] == b"etb\0":
        tag, size, dlen = struct.unpack(">HhI", data[i + 4:i + 12])
        desc = data[i + 12:i + 12 + dlen].decode("utf-8", "replace")
        j = i + 12 + dlen
        ext, = struct.unpack(">I", data[j:j + 4])
        j += 4 + ext
        assert data[j:j + 4] == b"ete\0"
        types[tag] = (size, desc)
        i = j + 4
    assert data[i:i + 12] == b"hetehdredatb"
    i += 12
    walk.types = types
    cap, block_end = -1, None
    while True:
        tag, = struct.unpack(">H", data[i:i + 2])
        if tag == 0xFFFF:
            return
        t, = struct.unpack(">Q", data[i + 2:i + 10])
        size = types[tag][0]
        if size == -1:
            plen, = struct.unpack(">H", data[i + 10:i + 12])
            payload, n = data[i + 12:i + 12 + plen], 12 + plen
        else:
            payload, n = data[i + 10:i + 10 + size], 10 + size
        if block_end is not None and i >= block_end:
            cap, block_end = -1, None
        if tag == 18:               # block marker: size, end time, cap
            bsize, = struct.unpack(">I", payload[:4])
            c, = struct.unpack(">H", payload[12:14])
            cap, block_end = (-1 if c == 0xFFFF else c), i + bsize
        else:
            yield tag, t, cap, payload, n
        i += n


def shown(text):
    """ghc-events show's events: (time, cap or None, text), in its order
    (by time)."""
    out = []
    on = False
    for line in text.split("\n"):
        if line.startswith("Events:"):
            on = True
            continue
        m = re.match(r"^\s*(\d+): (?:cap (\d+): )?(.*)$", line) if on else None
        if m:
            out.append((int(m.group(1)), None if m.group(2) is None else int(m.group(2)),
                        m.group(3)))
    return out


# ghc-events 0.17's words for STOP_THREAD's status (for an eventlog of
# GHC >= 7.8.3, whose header declares event 59): its table, read back.
GHC_EVENTS_STOP = {
    "heap overflow": 1, "stack overflow": 2, "thread yielding": 3,
    "thread blocked": 4, "thread finished": 5, "making a foreign call": 6,
    "blocked on an MVar": 7, "blocked on I/O read": 9, "blocked on I/O write": 10,
    "blocked on threadDelay": 11, "blocked in STM retry": 12,
    "blocked on asyncDoProc": 13, "blocked in throwTo": 16, "thread migrating": 17,
    "waiting for data to be globalised": 18, "blocked reading an MVar": 20,
}


def stop_code(words):
    if words.startswith("blocked on black hole owned by thread"):
        return 8
    return GHC_EVENTS_STOP.get(words)


def rts_stop_names():
    """What each status means to GHC 9.0.2: 1-5 StgRun's return codes, 6 a
    safe foreign call (EventLogFormat.h), 6 + why_blocked for a blocked
    thread (rts/Schedule.c), from the installed Constants.h, in the
    monitor's words."""
    words = {
        "HeapOverflow": "heap overflow", "StackOverflow": "stack overflow",
        "ThreadYielding": "yielding", "ThreadBlocked": "blocked",
        "ThreadFinished": "finished", "BlockedOnMVar": "blocked on MVar",
        "BlockedOnMVarRead": "blocked reading MVar",
        "BlockedOnBlackHole": "blocked on black hole",
        "BlockedOnRead": "blocked on I/O read", "BlockedOnWrite": "blocked on I/O write",
        "BlockedOnDelay": "blocked on delay", "BlockedOnSTM": "blocked in STM retry",
        "BlockedOnDoProc": "blocked on asyncDoProc",
        "BlockedOnCCall": "blocked in foreign call",
        "BlockedOnCCall_Interruptible": "blocked in interruptible foreign call",
        "BlockedOnMsgThrowTo": "blocked in throwTo", "ThreadMigrating": "migrating",
        "BlockedOnIOCompletion": "blocked on I/O completion",
    }
    names = {6: "foreign call"}
    text = open(CONSTANTS).read()
    for name, v in re.findall(r"^#define\s+(\w+)\s+(\d+)", text, re.M):
        if name in words:
            returned = name in ("HeapOverflow", "StackOverflow", "ThreadYielding",
                                "ThreadBlocked", "ThreadFinished")
            names[int(v) if returned else 6 + int(v)] = words[name]
    return names


def safetext(s):
    """tools/monitor/safetext.h's rule, for the characters these runs' names hold:
    a backslash doubled, controls escaped."""
    out = []
    for ch in s:
        o = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch in "\n\t\r":
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}[ch])
        elif o < 0x20 or o == 0x7F or 0x80 <= o <= 0x9F:
            out.append("\\u{%02X}" % o)
        else:
            out.append(ch)
    return "".join(out)


def human(v, unit):
    """render.c's mon_human()."""
    pre = ["", "k", "M", "G", "T"]
    i = 0
    while v >= 1000 and i < 4:
        v /= 1000
        i += 1
    return ("%.0f %s%s" if i == 0 else "%.1f %s%s") % (v, pre[i], unit)


def metrics(text):
    """/metrics as {name: [(labels dict, value)]}, HELP texts."""
    fam, helps = {}, {}
    for line in text.split("\n"):
        if line.startswith("# HELP "):
            name, _, h = line[7:].partition(" ")
            helps[name] = h
            continue
        m = re.match(r"^([a-z_]+)\{(.*)\} (\S+)$", line)
        if not m:
            continue
        labels = {}
        for k, v in re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2)):
            labels[k] = re.sub(r"\\(.)", lambda e: "\n" if e.group(1) == "n" else e.group(1), v)
        fam.setdefault(m.group(1), []).append((labels, float(m.group(3))))
    return fam, helps


# ---------------------------------------------------------------------------
# What the independent sources say about this run
# ---------------------------------------------------------------------------

alloc_s, gens_s = rts_stats(open(path(".stats")).read())
events = shown(open(path(".show"), errors="replace").read())
raw = open(path(".eventlog"), "rb").read()
by_tag = {}
for tag, t, cap, payload, n in walk(raw):
    c = by_tag.setdefault(tag, [0, 0])
    c[0] += 1
    c[1] += n
types = walk.types
last_t = max(t for t, _, _ in events)
first_t = min(t for t, _, _ in events)

# A collection's leader posts its request, GC_START, GC_END and GC stats;
# GC_END carries the time +RTS -s took at the start of stat_endGC(), so in
# time order the stats (posted after it, with the time then) may come
# first or after.
starts, starts_cap, leaders, start_at, lead_gen = 0, {}, [], {}, {}
requested, ended = set(), {}
alloc_cap = {}
ccs = {}                        # id -> (label, module)
censuses, census = [], None
samples = {}                    # stack tuple -> ticks
thread_ev = {}                  # thread -> [(t, "run"|code)]
stops = {}                      # code -> count
for t, cap, text in events:
    if text in ("requesting parallel GC", "requesting sequential GC"):
        requested.add(cap)
    elif text == "starting GC":
        starts += 1
        starts_cap[cap] = starts_cap.get(cap, 0) + 1
        start_at[cap] = t
    elif text.startswith("GC stats for heap capset "):
        gen = int(re.search(r"generation (\d+)", text).group(1))
        if cap in ended:
            leaders.append((gen, ended.pop(cap)))
        else:
            lead_gen[cap] = gen
    elif text == "finished GC":
        if cap in requested and cap in start_at:
            requested.discard(cap)
            if cap in lead_gen:
                leaders.append((lead_gen.pop(cap), t - start_at[cap]))
            else:
                ended[cap] = t - start_at[cap]
    elif text.startswith("allocated on heap capset "):
        alloc_cap[cap] = int(re.search(r": (\d+) total bytes", text).group(1))
    elif text.startswith("stopping thread "):
        m = re.match(r"stopping thread (\d+) \((.*)\)$", text)
        code = stop_code(m.group(2))
        assert code is not None, "unknown stop status in ghc-events: " + text
        stops[code] = stops.get(code, 0) + 1
        thread_ev.setdefault(int(m.group(1)), []).append((t, code))
    elif text.startswith("running thread "):
        thread_ev.setdefault(int(text.split()[2]), []).append((t, "run"))
    elif text.startswith("cost centre "):
        m = re.match(r"cost centre (\d+) (.*) in (\S+) at ", text)
        ccs[int(m.group(1))] = (m.group(2), m.group(3))
    elif text.startswith("start heap prof sample"):
        census = {"t": t, "bands": []}
    elif text.startswith("heap prof sample ") and census is not None:
        m = re.match(r"heap prof sample \d+, residency (\d+), (label (.*)|cost centre stack (.*))$", text)
        if m.group(3) is not None:
            census["bands"].append((m.group(3), int(m.group(1))))
        else:
            ids = [int(x) for x in m.group(4).split(", ") if x]
            census["bands"].append((ids, int(m.group(1))))
    elif text.startswith("end prof sample") and census is not None:
        censuses.append(census)
        census = None
    elif text.startswith("cap no "):
        m = re.match(r"cap no \d+, prof sample \d+, cost centre stack (.*)$", text)
        stack = tuple(int(x) for x in m.group(1).split(", ") if x)
        samples[stack] = samples.get(stack, 0) + 1

# Collections and pauses: -s per generation; ghc-events' leaders.
colls_s = sum(g["colls"] for g in gens_s.values())
pauses = [p for _, p in leaders]
by_gen_ev = {}
for g, p in leaders:
    e = by_gen_ev.setdefault(g, [0, 0, 0])
    e[0] += 1
    e[1] = max(e[1], p)
    e[2] += p
recent = sorted(pauses[-1024:])
p50 = recent[(len(recent) - 1) // 2] if recent else 0

# Stops: the time from each stop to the thread's next run, in time order.
stopped, paired = {}, {}
for th, evs in thread_ev.items():
    evs.sort(key=lambda e: e[0])
    for k, (t, what) in enumerate(evs):
        if what != "run" and k + 1 < len(evs) and evs[k + 1][1] == "run":
            stopped[what] = stopped.get(what, 0) + (evs[k + 1][0] - t)
            paired[what] = paired.get(what, 0) + 1
stop_names = rts_stop_names()

# The last complete census, ranked: bytes down, ties in census order.
def band_name(b):
    """A band as the RTS's .hp file names it (rts/ProfHeap.c's fprint_ccs(),
    without the stack's number): the empty stack is MAIN."""
    if isinstance(b, str):
        return b
    if not b:
        return "MAIN"
    parts = []
    for i in b:
        label, module = ccs[i]
        parts.append(module + ".CAF" if label == "CAF" else label)
    return "/".join(parts)

last = censuses[-1]
ranked = [(band_name(b), n) for k, (b, n) in
          sorted(enumerate(last["bands"]), key=lambda e: (-e[1][1], e[0]))]

BUILTIN = {("GC", "GC"): "GC", ("IDLE", "IDLE"): "IDLE", ("SYSTEM", "SYSTEM"): "SYSTEM",
           ("OVERHEAD_of", "PROFILING"): "OVERHEAD_of", ("DONT_CARE", "MAIN"): "DONT_CARE"}
kinds, per_cc = {}, {}
for stack, n in samples.items():
    k = BUILTIN.get(ccs.get(stack[0])) if len(stack) == 1 else None
    kinds[k or "program"] = kinds.get(k or "program", 0) + n
    if k is None and stack:             # the empty stack: MAIN, no cost centre
        per_cc[stack[0]] = per_cc.get(stack[0], 0) + n

# The walk against ghc-events: the same events.
same("walk", "events (all types)", sum(c[0] for c in by_tag.values()), len(events))
for tag, words in ((9, "starting GC"), (10, "finished GC"), (1, "running thread "),
                   (2, "stopping thread "), (49, "allocated on heap capset "),
                   (53, "GC stats for heap capset ")):
    same("walk", "events of type %d" % tag, by_tag.get(tag, [0])[0],
         sum(1 for _, _, x in events if x.startswith(words)))

# ---------------------------------------------------------------------------
# Each view against them
# ---------------------------------------------------------------------------

def chk(view, figure, ours, want, tol=None):
    """One figure of a JSON view: ours() may find no such figure (a view
    without it: "absent")."""
    try:
        v = ours()
    except (KeyError, IndexError, TypeError, StopIteration):
        row(view, figure, "absent", want, False)
        return
    if tol is None:
        same(view, figure, v, want)
    else:
        near(view, figure, v, want, tol)


def check_json(view, d, whole_run):
    g = lambda: d["gc"]
    gen_of = lambda gen: next(x for x in d["gc"]["by_gen"] if x["gen"] == gen)
    chk(view, "GC collections (+RTS -s colls)", lambda: g()["collections"], colls_s)
    for gen, s in sorted(gens_s.items()):
        chk(view, "gen %d collections (+RTS -s)" % gen,
            lambda: gen_of(gen)["collections"], s["colls"])
        # -s prints seconds with 4 (max) and 3 (total) decimals.
        chk(view, "gen %d max pause s (+RTS -s, %%.4f)" % gen,
            lambda: gen_of(gen)["pause_max_ns"] / 1e9, s["max"], 0.00005 + 1e-9)
        chk(view, "gen %d pause total s (+RTS -s, %%.3f)" % gen,
            lambda: gen_of(gen)["pause_total_ns"] / 1e9, s["elapsed"], 0.0005 + 1e-9)
        chk(view, "gen %d max pause ns (ghc-events leader)" % gen,
            lambda: gen_of(gen)["pause_max_ns"], by_gen_ev.get(gen, [0, 0, 0])[1])
        chk(view, "gen %d pause total ns (ghc-events leader)" % gen,
            lambda: gen_of(gen)["pause_total_ns"], by_gen_ev.get(gen, [0, 0, 0])[2])
    chk(view, "collection pauses (ghc-events leaders)", lambda: g()["pauses"], len(pauses))
    chk(view, "pause p50 ns (ghc-events leaders)", lambda: g()["pause_p50_ns"], p50)
    chk(view, "pause max ns (ghc-events leaders)", lambda: g()["pause_max_ns"], max(pauses))
    chk(view, "GC starts, every capability's (ghc-events)", lambda: g()["starts"], starts)
    if whole_run:
        # Over the run's span, its first event to its last.
        rate = colls_s / ((last_t - first_t) / 1e9)
        chk(view, "collections per s (run average)", lambda: g()["per_s"], rate, 1e-5 * rate)
    h = lambda: d["heap"]
    chk(view, "bytes allocated (+RTS -s)", lambda: h()["allocated"], alloc_s)
    chk(view, "bytes allocated (ghc-events: last per cap summed)", lambda: h()["allocated"],
        sum(alloc_cap.values()))
    for c in d["caps"]:
        chk(view, "cap %d allocated (ghc-events)" % c["cap"], lambda: c["allocated"],
            alloc_cap.get(c["cap"], 0))
        chk(view, "cap %d GC starts (ghc-events)" % c["cap"], lambda: c["gc_starts"],
            starts_cap.get(c["cap"], 0))
    cs = lambda: d["heap"]["census"]
    chk(view, "censuses (ghc-events)", lambda: h()["samples"], len(censuses))
    chk(view, "census time ns (ghc-events)", lambda: cs()["time_ns"], last["t"])
    chk(view, "census bands (ghc-events)", lambda: cs()["bands"], len(last["bands"]))
    chk(view, "census bytes (ghc-events)", lambda: cs()["bytes"],
        sum(n for _, n in last["bands"]))
    chk(view, "census bands ranked (ghc-events)",
        lambda: [(x["label"], x["bytes"]) for x in h()["by_label"]], ranked[:64])
    want = sorted(((tag, c[0], c[1]) for tag, c in by_tag.items()),
                  key=lambda e: (-e[1], e[0]))
    chk(view, "event types by count: tag, name, count, bytes (walk)",
        lambda: [(x["tag"], x["name"], x["count"], x["bytes"]) for x in d["events"]["by_type"]],
        [(tag, types[tag][1], n, b) for tag, n, b in want])
    st = lambda: d["threads"]["stops"]
    chk(view, "stops by status (ghc-events)",
        lambda: sorted((x["status"], x["count"]) for x in st()), sorted(stops.items()))
    chk(view, "stops followed by a run (ghc-events)",
        lambda: sorted((x["status"], x["paired"]) for x in st() if x["paired"]),
        sorted(paired.items()))
    chk(view, "time from stop to next run ns (ghc-events)",
        lambda: sorted((x["status"], x["stopped_ns"]) for x in st() if x["paired"]),
        sorted(stopped.items()))
    chk(view, "stop reasons' names (GHC's Constants.h)",
        lambda: sorted((x["status"], x["reason"]) for x in st()),
        sorted((c, stop_names.get(c)) for c in stops))
    if PROF:
        chk(view, "time samples by kind: program, RTS's own (ghc-events)",
            lambda: sorted((n, v["samples"]) for n, v in d["profile"]["by_kind"].items()
                           if v["samples"]),
            sorted(kinds.items()))
        if whole_run:
            top = sorted(per_cc.items(), key=lambda e: (-e[1], e[0]))[:10]
            chk(view, "top cost centres (ghc-events, the RTS's own apart)",
                lambda: [(x["cc"], x["samples"]) for x in d["profile"]["top"]],
                [(ccs[i][0], n) for i, n in top])


top_json = json.load(open(path(".json")))
check_json("top --json", top_json, True)
check_json("serve /api/state", json.load(open(path(".api.json"))), False)

# top's text: the same figures, names in their safe form.
text = open(path(".txt"), errors="replace").read()
gen_list = ", ".join("gen %d: %d" % (g, s["colls"]) for g, s in sorted(gens_s.items()))
line = "GC       %d collections (%s)" % (colls_s, gen_list)
row("top text", "GC line", line if line in text else re.search(r"^GC .*$", text, re.M).group(0),
    line, line in text)
line = "max pause " + ", ".join("gen %d %.2f ms" % (g, by_gen_ev[g][1] / 1e6)
                                for g in sorted(by_gen_ev))
row("top text", "max pause line (ghc-events leaders)", line if line in text else "absent", line,
    line in text)
line = "GC starts %d (every capability's)" % starts
row("top text", "GC starts", line if line in text else "absent", line, line in text)
line = "(total %s)" % human(alloc_s, "B")
row("top text", "allocation (+RTS -s)", line if line in text else "absent", line, line in text)
head = "Heap census %d at %.3f s by " % (len(censuses), last["t"] / 1e9)
got = [l[14:] for l in text.split("\n") if l.startswith("  ") and len(l) > 14
       and l[12:14] == "  " and l[:12].strip().endswith("B")]
want = [safetext(n) for n, _ in ranked[:5]]
row("top text", "census line", head if head in text else "absent", head, head in text)
row("top text", "census top bands (safe text)", got[:5], want, got[:5] == want)
for code, n in sorted(stops.items()):
    item = "%s %d (" % (stop_names.get(code), n)
    row("top text", "stops: " + stop_names.get(code, "?"), item if item in text else "absent",
        item, item in text)
first = sorted(by_tag.items(), key=lambda e: (-e[1][0], e[0]))[:3]
line = "  count  " + "  ".join("%s %d" % (types[t][1], c[0]) for t, c in first)
row("top text", "event types by count", line if line in text else "absent", line, line in text)

# /metrics.
fam, helps = metrics(open(path(".metrics")).read())
mview = "/metrics"
val = lambda name, **lab: next((v for l, v in fam.get(name, [])
                                if all(l.get(k) == w for k, w in lab.items())), None)
for gen, s in sorted(gens_s.items()):
    same(mview, "ghc_gc_collections_total gen %d (+RTS -s)" % gen,
         val("ghc_gc_collections_total", gen=str(gen)), float(s["colls"]))
    near(mview, "ghc_gc_pause_max_seconds gen %d (+RTS -s)" % gen,
         val("ghc_gc_pause_max_seconds", gen=str(gen)), s["max"], 0.00005 + 1e-9)
row(mview, "ghc_gc_collections_total HELP says what it counts",
    helps.get("ghc_gc_collections_total", "")[:40], "GC collections ...",
    helps.get("ghc_gc_collections_total", "").startswith("GC collections"))
same(mview, "ghc_heap_allocated_bytes_total (+RTS -s)",
     val("ghc_heap_allocated_bytes_total"), float(alloc_s))
buckets = sorted(((float(l["le"]), v) for l, v in fam.get("ghc_gc_pause_seconds_bucket", [])),
                 key=lambda e: e[0])
same(mview, "ghc_gc_pause_seconds buckets (ghc-events leaders)", [v for _, v in buckets],
     [float(sum(1 for p in pauses if p / 1e9 <= le)) for le, _ in buckets])
for cap, n in sorted(starts_cap.items()):
    same(mview, "ghc_gc_capability_starts_total cap %d" % cap,
         val("ghc_gc_capability_starts_total", cap=str(cap)), float(n))
same(mview, "ghc_heap_census_bytes, ranked (ghc-events)",
     [(l["band"], v) for l, v in fam.get("ghc_heap_census_bytes", [])],
     [(n, float(b)) for n, b in ranked[:20]])
near(mview, "ghc_heap_census_time_seconds (ghc-events)",
     val("ghc_heap_census_time_seconds"), last["t"] / 1e9, 1e-9)
same(mview, "eventlog_events_by_type_total (walk)",
     sorted((int(l["tag"]), l["type"], v) for l, v in fam.get("eventlog_events_by_type_total", [])),
     sorted((t, types[t][1], float(c[0])) for t, c in by_tag.items()))
same(mview, "eventlog_event_bytes_by_type_total (walk)",
     sorted((int(l["tag"]), v) for l, v in fam.get("eventlog_event_bytes_by_type_total", [])),
     sorted((t, float(c[1])) for t, c in by_tag.items()))
same(mview, "ghc_thread_stops_total (ghc-events)",
     sorted((l["reason"], v) for l, v in fam.get("ghc_thread_stops_total", [])),
     sorted((stop_names.get(c), float(n)) for c, n in stops.items()))
ours = dict((l["reason"], v) for l, v in fam.get("ghc_thread_stopped_seconds_total", []))
row(mview, "ghc_thread_stopped_seconds_total (ghc-events)",
    sorted(ours.items()), sorted((stop_names[c], ns / 1e9) for c, ns in stopped.items()),
    all(abs(ours.get(stop_names[c], -1) - ns / 1e9) <= 1e-9
        for c, ns in stopped.items()))

# One spelling of each cost centre: the stream's, escaped only for each
# medium (JSON, Prometheus label, safe text).
if PROF:
    ss = json.load(open(path(".speedscope.json")))
    frames = ss["shared"]["frames"]
    same("speedscope", "frame names (ghc-events' definitions)",
         [(i, f["name"]) for i, f in enumerate(frames) if i in ccs],
         [(i, ccs[i][0]) for i in sorted(ccs) if i < len(frames)])
    # The lambda of producer's go: the heap it keeps and time samples.
    label = "producer.go.\\"
    same("ghc-events", "cost centre " + label + " defined", label in [l for l, _ in ccs.values()], True)
    in_census = [n for n, _ in ranked[:5] if label in n]
    same("ghc-events", label + " in the census's 5 largest bands", bool(in_census), True)
    in_json = [x["label"] for x in top_json["heap"].get("by_label", []) if label in x["label"]]
    row("top --json", "spelling of " + label + " (JSON decoded)", in_json[:1], in_census[:1],
        in_json[:1] == in_census[:1])
    in_prom = [l["band"] for l, _ in fam.get("ghc_heap_census_bytes", []) if label in l["band"]]
    row("/metrics", "spelling of " + label + " (label unescaped)", in_prom[:1], in_census[:1],
        in_prom[:1] == in_census[:1])
    want = safetext(in_census[0]) if in_census else None
    row("top text", "spelling of " + label + " (safe text: backslash doubled)",
        want if want and want in text else "absent", want, bool(want) and want in text)
    row("speedscope", "spelling of " + label,
        [f["name"] for f in frames if f["name"] == label], [label],
        [f["name"] for f in frames if f["name"] == label] == [label])

with open(os.path.join(DIR, "table.tsv"), "a") as f:
    for r in rows:
        f.write("\t".join(x.replace("\t", " ") for x in r) + "\n")
for r in rows:
    print("# %-4s %-16s %-58s %s | %s  %s" % (r[0], r[1], r[2], r[3][:70], r[4][:70], r[5]))
if failures:
    for f in failures:
        print("FAIL %s: %s" % (RUN, f), file=sys.stderr)
    sys.exit(1)
print("# %s: %d figures agree" % (RUN, len(rows)))
