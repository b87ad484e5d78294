// zoom.js TOP URL SHOWN MARKER SHOT: the page's zoomable timeline in
// headless Chromium (playwright-core) against `ghc-events show` (SHOWN:
// its output for the stream the serve at URL reads).  Driven with the
// mouse as a user would:
//  1. the wheel over a marker MARKER (from the whole run; the first
//     around which ghc-events shows what these checks need, see Note
//     [Zoom targets] in tests/programs/Zoom.hs) and a drag bring the
//     view to about 1 ms around it; the view's event list is
//     exactly ghc-events' lines in the view (the view read from the
//     URL's fragment), and on the canvas every thread's running interval
//     of 3 px or more is painted running from its first whole pixel to
//     its last, and the pixels just outside it are not (a 1 px shift
//     fails); each HEC's GC work (starting GC to GC idle, done or
//     finished) is painted GC; the heap lane's size and live bytes and
//     each HEC's spark lane (created, converted, pool) equal, column by
//     column, what ghc-events' reports give, are painted at their
//     heights (created sparks: a mark at the lane's foot) and are what
//     the pointer's text says over them;
//  2. the thread lanes carry the labels ghc-events shows, and every stop
//     in the view starts a lane segment carrying its reason's name;
//  3. zoomed out to about 16 ms, a shift-drag selects a range whose
//     figures (collections, their pauses, allocation, each thread's
//     running time) equal those computed here from ghc-events' lines;
//  4. a reload of the URL reopens the same view, selection and figures.
// Saves a screenshot as SHOT.  Prints "ok ..." lines, or "FAIL ..." and
// exits 1.
"use strict";
const [top, url, shownPath, marker, shot] = process.argv.slice(2);
const { ok, fail, showLines, run } = require("./analysis/page.js");

const lines = showLines(shownPath);
const targets = lines.filter(([, s]) => s.endsWith("marker: " + marker)).map(([t]) => t);
if (!targets.length) { console.log("FAIL no marker " + marker + " in " + shownPath); process.exit(1); }

const NAMES = { "thread yielding": "ThreadYielding", "thread finished": "ThreadFinished",
  "blocked on an MVar": "BlockedOnMVar", "heap overflow": "HeapOverflow", "stack overflow": "StackOverflow",
  "making a foreign call": "ForeignCall", "blocked on threadDelay": "BlockedOnDelay",
  "thread blocked": "ThreadBlocked", "blocked on a black hole": "BlockedOnBlackHole",
  "blocked reading an MVar": "BlockedOnMVarRead" };

// Intervals from ghc-events' lines: each thread's running [a,b] and each
// cap's GC [a,b].
function intervals() {
  const run = [], gc = [], since = {}, gstart = {};
  for (const [t, s0] of lines) {
    const m = /^cap (\d+): (.*)$/.exec(s0);
    if (!m) continue;
    const cap = +m[1], s = m[2];
    if (s.startsWith("running thread ")) since[cap] = [+s.split(" ")[2], t];
    else if (s.startsWith("stopping thread ")) {
      const th = +s.split(" ")[2];
      if (since[cap] && since[cap][0] === th) run.push({ th: th, cap: cap, a: since[cap][1], b: t });
      delete since[cap];
    } else if (s === "starting GC") gstart[cap] = t;
    // GC working: from its start to the first of idle, done or finished.
    else if ((s === "finished GC" || s === "GC idle" || s === "GC done") && cap in gstart) {
      gc.push({ cap: cap, a: gstart[cap], b: t }); delete gstart[cap];
    }
  }
  return [run, gc];
}
// figures.py's figures over [t0,t1].
function figures(t0, t1) {
  const gstart = {}, allocPrev = {}, since = {}, runNs = {};
  let gcs = 0, tot = 0, mx = 0, alloc = 0;
  for (const [t, s0] of lines) {
    const m = /^cap (\d+): (.*)$/.exec(s0);
    if (!m) continue;
    const cap = +m[1], s = m[2], inw = t0 <= t && t <= t1;
    if (s === "starting GC") gstart[cap] = t;
    else if (s === "finished GC") {
      if (inw && cap in gstart) { const p = t - gstart[cap]; gcs++; tot += p; mx = Math.max(mx, p); }
      delete gstart[cap];
    } else if (s.startsWith("allocated on heap capset")) {
      const v = +/: (\d+) total bytes/.exec(s)[1];
      if (inw) { const prev = allocPrev[cap] || 0; alloc += v >= prev ? v - prev : v; }
      allocPrev[cap] = v;
    } else if (s.startsWith("running thread ")) since[cap] = [+s.split(" ")[2], t];
    else if (s.startsWith("stopping thread ")) {
      const th = +s.split(" ")[2];
      if (since[cap] && since[cap][0] === th) {
        const a = Math.max(since[cap][1], t0), b = Math.min(t, t1);
        if (b > a) runNs[th] = (runNs[th] || 0) + b - a;
        delete since[cap];
      }
    }
  }
  for (const [th, t] of Object.values(since)) {
    const a = Math.max(t, t0), b = t1;
    if (b > a) runNs[th] = (runNs[th] || 0) + b - a;
  }
  return { gcs: gcs, tot: tot, mx: mx, alloc: alloc, runNs: runNs };
}

// The target to zoom onto (see Note [Zoom targets] in
// tests/programs/Zoom.hs): the first marker MARKER around which
// ghc-events shows what the checks below need, within CORE ns either
// side (inside any view the wheel and drag leave: more than 0.54 ms, the
// wheel's last step from above 1.2 ms, with the marker in its middle): 3
// running or GC intervals of 5 us (3 px at 1.2 ms) or more, a thread stop
// not followed by its run within 5 us, a HEC's spark counters reporting
// sparks created since its previous report (also there), and the heap's
// size and live bytes.
const CORE = 260000, LONG = 5000;
let ivs = null;
function lacks(T) {
  const a = T - CORE, b = T + CORE, miss = [];
  const [runs, gcs] = ivs = ivs || intervals();
  const n = runs.concat(gcs).filter((r) => Math.min(r.b, b) - Math.max(r.a, a) >= LONG).length;
  if (n < 3) miss.push(n + " intervals");
  const stop = lines.some(([t, s], k) => {
    const m = a <= t && t <= b && /^cap \d+: stopping thread (\d+) /.exec(s);
    if (!m) return false;
    const next = lines.slice(k).find(([, x]) => x.endsWith("running thread " + m[1]));
    return !next || next[0] - t >= LONG;
  });
  if (!stop) miss.push("no stop");
  if (!sparkReports().some((r) => a <= r.prevT && r.t <= b && r.dcr > 0)) miss.push("no sparks created");
  for (const k of ["size", "live"])
    if (!heapReports(k).some((r) => a <= r.t && r.t <= b)) miss.push("no heap " + k);
  return miss;
}
// ghc-events' spark counters: {t, cap, cr, cv, rem, dcr, dcv, prevT} (d*:
// the increase since the cap's previous report, at prevT; null for its
// first).
function sparkReports() {
  const out = [], prev = {};
  for (const [t, s] of lines) {
    const m = /^cap (\d+): spark stats: (\d+) created, (\d+) converted, (\d+) remaining/.exec(s);
    if (!m) continue;
    const cap = +m[1], cr = +m[2], cv = +m[3], p = prev[cap];
    out.push({ t: t, cap: cap, cr: cr, cv: cv, rem: +m[4], prevT: p ? p.t : -1,
               dcr: p ? (cr >= p.cr ? cr - p.cr : 0) : null, dcv: p ? (cv >= p.cv ? cv - p.cv : 0) : null });
    prev[cap] = { t: t, cr: cr, cv: cv };
  }
  return out;
}
// ghc-events' heap size ("size") or live bytes ("live"): {t, v}.
function heapReports(kind) {
  const re = kind === "size" ? /: size of heap capset \d+: (\d+) bytes$/ : /: live data in heap capset \d+: (\d+) bytes$/;
  return lines.map(([t, s]) => { const m = re.exec(s); return m && { t: t, v: +m[1] }; }).filter((x) => x);
}
const T = targets.find((t) => lacks(t).length === 0);
if (T === undefined) {
  console.log("FAIL no marker " + marker + " has in ghc-events, within " + CORE + " ns, what the checks need: " +
              targets.map((t) => t + ": " + lacks(t).join(", ")).join("; "));
  process.exit(1);
}
{
  const why = {};
  for (const t of targets.slice(0, targets.indexOf(T))) for (const m of lacks(t)) why[m] = (why[m] || 0) + 1;
  console.log("ok zoom target: " + marker + " at " + T + ", " + (targets.indexOf(T) + 1) + " of " + targets.length +
              (Object.keys(why).length ? " (those before it lacked: " + Object.entries(why).map(([m, n]) => m + " x" + n).join(", ") + ")" : ""));
}

const viewOf = (page) => page.evaluate(() => {
  const h = new URLSearchParams(location.hash.slice(1));
  return { t0: +h.get("t0"), t1: +h.get("t1"), sel: h.get("sel") };
});
// Until the page has drawn the view its fragment names, and listed its
// events (and the selection's figures).
async function settled(page) {
  await page.waitForFunction(() => {
    const z = window.elsZoom;
    if (!z || !z.view || !z.drawnView || !z.tl) return false;
    const w = z.sel || z.view, key = w[0] + "," + w[1];
    return z.drawnView[0] === z.view[0] && z.drawnView[1] === z.view[1] && z.eventsFor === key &&
      (!z.sel || z.rangeFor === key) && location.hash.includes("t0=" + z.view[0] + "&t1=" + z.view[1]);
  }, null, { timeout: 60000 });
}

run(top, async (page) => {
    await page.goto(url);
    await page.waitForFunction(() => window.elsZoom && window.elsZoom.tl, null, { timeout: 60000 });
    await settled(page);
    const box = await page.locator("#zoom").boundingBox();
    const lay = await page.evaluate(() => ({ left: window.elsZoom.left, width: window.elsZoom.width }));
    const xAt = (v, t) => lay.left + ((t - v.t0) * lay.width) / (v.t1 - v.t0);

    // 1. wheel onto the marker, then drag it to the middle.
    let v = await viewOf(page);
    for (let i = 0; i < 60 && v.t1 - v.t0 > 1.2e6; i++) {
      await page.mouse.move(box.x + xAt(v, T), box.y + 60);
      await page.mouse.wheel(0, -400);
      await settled(page);
      v = await viewOf(page);
    }
    const mid = lay.left + lay.width / 2;
    await page.mouse.move(box.x + xAt(v, T), box.y + 60);
    await page.mouse.down();
    await page.mouse.move(box.x + (xAt(v, T) + mid) / 2, box.y + 60, { steps: 3 });
    await page.mouse.move(box.x + mid, box.y + 60, { steps: 3 });
    await page.mouse.up();
    await settled(page);
    v = await viewOf(page);
    const span = v.t1 - v.t0;
    if (!(v.t0 <= T && T <= v.t1 && span <= 1.2e6 && span >= 0.3e6))
      fail("the view after wheel and drag is [" + v.t0 + "," + v.t1 + "], not about 1 ms around " + T);
    else if (Math.abs(xAt(v, T) - mid) > 3)
      fail("the drag left the marker at x " + xAt(v, T) + ", not " + mid);
    else ok("wheel and drag: view [" + v.t0 + ", " + v.t1 + "] (" + span + " ns) around " + marker + " at " + T);

    const want = lines.filter(([t]) => v.t0 <= t && t <= v.t1).map(([t, s]) => t + " " + s);
    const have = await page.$$eval("#zoom-events tr", (trs) => trs.map((tr) => {
      const td = tr.querySelectorAll("td");
      return td[0].textContent + " " + (td[1].textContent ? td[1].textContent + ": " : "") + td[2].textContent;
    }));
    if (want.length === 0 || want.join("\n") !== have.join("\n")) {
      const i = want.findIndex((w, k) => w !== have[k]);
      fail("the view's events: page " + have.length + ", ghc-events " + want.length + "; first difference at " + i +
           ": page " + JSON.stringify(have[i]) + ", ghc-events " + JSON.stringify(want[i]));
    } else ok("the view's event list: " + have.length + " events, equal to ghc-events show's in the view");

    // The canvas: running and GC intervals where ghc-events puts them.
    const info = await page.evaluate(() => ({ lanes: window.elsZoom.lanes.map((l) => ({ name: l.name, y: l.y, h: l.h,
      thread: l.thread ? { id: l.thread.id, label: l.thread.label, segments: l.thread.segments } : null })) }));
    const img = await page.evaluate(() => {
      const cv = document.getElementById("zoom");
      return { w: cv.width, h: cv.height, d: Array.from(cv.getContext("2d").getImageData(0, 0, cv.width, cv.height).data) };
    });
    const px = (x, y) => { const i = (y * img.w + x) * 4; return [img.d[i], img.d[i + 1], img.d[i + 2]].join(","); };
    const RUN = "46,157,79", GC = "224,138,0";
    const [runs, gcs] = intervals();
    const laneOf = (name) => info.lanes.find((l) => l.name === name);
    let checked = 0, edges = 0;
    for (const r of runs.concat(gcs.map((g) => Object.assign({ gc: true }, g)))) {
      const ln = laneOf(r.gc ? "HEC " + r.cap : "thread " + r.th);
      if (!ln) { if (!r.gc && r.b > v.t0 && r.a < v.t1) fail("thread " + r.th + " ran in the view but has no lane"); continue; }
      const a = Math.max(r.a, v.t0), b = Math.min(r.b, v.t1), xa = xAt(v, a), xb = xAt(v, b);
      if (xb - xa < 3) continue;
      const y = Math.floor(ln.y + ln.h / 2), col = r.gc ? GC : RUN;
      for (let x = Math.ceil(xa); x <= Math.floor(xb) - 1; x++) {
        if (px(x, y) !== col) { fail((r.gc ? "HEC " + r.cap + " GC" : "thread " + r.th + " running") + " [" + r.a + "," + r.b +
          "] spans x " + xa.toFixed(2) + ".." + xb.toFixed(2) + " but pixel " + x + " is " + px(x, y)); break; }
      }
      // Just outside: not this colour, where ghc-events says the lane was
      // in another state for 2 px or more (a thread runs on one cap at a time).
      if (!r.gc) {
        const before = runs.filter((o) => o.th === r.th && o.b <= r.a).pop(), after = runs.find((o) => o.th === r.th && o.a >= r.b);
        if (r.a > v.t0 && (!before || xAt(v, before.b) < xa - 3) && px(Math.floor(xa) - 2, y) === RUN)
          fail("thread " + r.th + " painted running at x " + (Math.floor(xa) - 2) + ", before it ran at " + r.a);
        if (r.b < v.t1 && (!after || xAt(v, after.a) > xb + 3) && px(Math.ceil(xb) + 1, y) === RUN)
          fail("thread " + r.th + " painted running at x " + (Math.ceil(xb) + 1) + ", after it stopped at " + r.b);
        edges++;
      }
      checked++;
    }
    if (checked < 3) fail("only " + checked + " intervals of 3 px or more in the view to check");
    else ok("the canvas: " + checked + " running and GC intervals painted where ghc-events puts them (" + edges + " threads' edges)");

    // The heap and spark lanes, per pixel column of the view's answer
    // (column q: [t0 + q * nspp, t0 + (q + 1) * nspp), nspp = (t1 - t0 +
    // 1) / columns, query.h), from ghc-events' reports: the heap's size
    // and live bytes are the last reported at or before the column's end;
    // a HEC's sparks created and converted in a column are the increases
    // its counters report there, its pool what the last of its reports in
    // the view up to the column says remains (0 before its first).  What
    // depends on a report before the view (the heap before the view's
    // first report of it, an increase over a report before the view) is
    // only noted: the page replays from the chunk holding the view's
    // start, which may begin after that report.
    const tlv = await page.evaluate(() => {
      const z = window.elsZoom;
      return { t0: z.drawnView[0], t1: z.drawnView[1], mode: z.tl.mode, heap: z.tl.heap,
               caps: z.tl.caps.map((c) => ({ cap: c.cap, sparks: c.sparks })) };
    });
    const W = tlv.heap.size.length, nspp = (tlv.t1 - tlv.t0 + 1) / W;
    const colOf = (t) => t < tlv.t0 ? -1 : Math.min(W - 1, Math.floor((t - tlv.t0) / nspp));
    const firstDiff = (a, b, from, skip) => {
      for (let q = from || 0; q < W; q++) if (a[q] !== b[q] && !(skip && skip.has(q))) return q;
      return -1;
    };
    const note = (s) => console.log("note " + s);
    const heapWant = {}, heapFrom = {};
    for (const k of ["size", "live"]) {
      const v = heapWant[k] = new Array(W).fill(0), rs = heapReports(k);
      for (const r of rs) if (r.t <= tlv.t1) v.fill(r.v, Math.max(0, colOf(r.t)));
      const first = rs.find((r) => tlv.t0 <= r.t && r.t <= tlv.t1);
      heapFrom[k] = first ? colOf(first.t) : W;
      const q = firstDiff(tlv.heap[k], v, heapFrom[k]), q0 = firstDiff(tlv.heap[k], v);
      if (q >= 0)
        fail("heap " + k + " at column " + q + " (" + (tlv.t0 + q * nspp).toFixed(0) + " ns): page " + tlv.heap[k][q] +
             ", ghc-events " + v[q]);
      else if (q0 >= 0)
        note("heap " + k + " before the view's first report (column " + heapFrom[k] + "): page " + tlv.heap[k][q0] +
             ", ghc-events " + v[q0] + " (reported before the view)");
    }
    const sparkWant = {};
    for (const c of tlv.caps) {
      const w = sparkWant[c.cap] = { created: new Array(W).fill(0), converted: new Array(W).fill(0),
                                     pool: new Array(W).fill(0), before: new Set() };
      for (const r of sparkReports().filter((r) => r.cap === c.cap && tlv.t0 <= r.t && r.t <= tlv.t1)) {
        const q = colOf(r.t);
        if (r.dcr !== null && r.prevT < tlv.t0) w.before.add(q);
        if (r.dcr !== null) { w.created[q] += r.dcr; w.converted[q] += r.dcv; }
        w.pool.fill(r.rem, q);
      }
      for (const k of ["created", "converted", "pool"]) {
        const q = firstDiff(c.sparks[k], w[k], 0, k === "pool" ? null : w.before), q0 = firstDiff(c.sparks[k], w[k]);
        if (q >= 0) fail("HEC " + c.cap + " sparks " + k + " at column " + q + " (" + (tlv.t0 + q * nspp).toFixed(0) +
                         " ns): page " + c.sparks[k][q] + ", ghc-events " + w[k][q]);
        else if (q0 >= 0) note("HEC " + c.cap + " sparks " + k + " at column " + q0 + ": page " + c.sparks[k][q0] +
                               ", ghc-events " + w[k][q0] + " (an increase over a report before the view)");
      }
      for (const q of w.before) { w.created[q] = -1; w.converted[q] = -1; }   // not checked below
    }
    const sum = (v) => v.reduce((a, b) => a + b, 0);
    const ncr = tlv.caps.map((c) => sum(sparkWant[c.cap].created.filter((x) => x > 0)));
    if (tlv.mode !== "raw") fail("the view is in " + tlv.mode + " mode, not every event");
    else if (tlv.caps.length < 2 || sum(ncr) === 0 || heapFrom.size >= W || heapFrom.live >= W)
      fail("the view holds too little heap and spark data to test: sparks created per HEC " + ncr);
    else ok("heap and spark lanes' data: size and live bytes (from the view's first reports) and each HEC's sparks (created " +
            ncr.join(", ") + ") in every column equal to ghc-events'");
    // What they paint, where their lanes are: the heap's two lines at
    // the height of their values (scaled by the largest in the view) in
    // columns where neither moves and they lie 3 px apart or more; a
    // HEC's created sparks as a mark at its lane's foot in every column
    // where ghc-events has some, and none where it has none and the pool
    // lies at the foot.
    {
      const rgba = (x, y) => { const i = (y * img.w + x) * 4; return [img.d[i], img.d[i + 1], img.d[i + 2], img.d[i + 3]]; };
      const SIZE = [52, 101, 164], LIVE = [46, 157, 79], SPARKC = [117, 80, 123];
      const near = (p, col) => p[3] > 40 && Math.abs(p[0] - col[0]) + Math.abs(p[1] - col[1]) + Math.abs(p[2] - col[2]) < 60;
      const hl = laneOf("heap"), max = Math.max(1, ...heapWant.size, ...heapWant.live);
      let hn = 0, herr = null;
      for (let q = 1; q < W - 1 && !herr; q++) {
        const ys = {};
        let flat = true;
        for (const k of ["size", "live"]) {
          const v = heapWant[k];
          if (v[q - 1] !== v[q] || v[q + 1] !== v[q]) flat = false;
          ys[k] = hl.y + hl.h - (hl.h * v[q]) / max;
        }
        // (right: the max's text; left: columns from the view's first reports)
        if (!flat || Math.abs(ys.size - ys.live) < 3 || q > W - 70 || q <= heapFrom.size || q <= heapFrom.live) continue;
        for (const [k, col] of [["size", SIZE], ["live", LIVE]]) {
          const x = lay.left + q, y = ys[k], rows = [...new Set([Math.floor(y - 0.5), Math.floor(y)])].filter((r) => r >= hl.y && r < hl.y + hl.h);
          if (rows.length && !rows.some((r) => near(rgba(x, r), col)))
            herr = "heap " + k + " " + heapWant[k][q] + " B at column " + q + " should be painted at y " + y.toFixed(1) +
                   " but pixels " + rows.map((r) => r + ": " + rgba(x, r)).join(", ");
        }
        hn++;
      }
      if (herr) fail(herr);
      else if (hn === 0) fail("no column where the heap's lines can be told apart");
      else ok("heap lane: size and live painted at their heights in " + hn + " columns");
      let sn = 0, serr = null;
      for (const c of tlv.caps) {
        const sl = laneOf("sparks " + c.cap), w = sparkWant[c.cap], y = sl.y + sl.h - 2;
        for (let q = 1; q < W - 1 && !serr; q++) {
          const p = rgba(lay.left + q, y);
          if (w.created[q] > 0 && !near(p, SPARKC))
            serr = "HEC " + c.cap + ": " + w.created[q] + " sparks created at column " + q + " but no mark (pixel " + p + ")";
          // (the pool's line reaches column q from the points q-1 .. q+2;
          // a mark is the marks' colour, as above: a neighbour's
          // anti-aliased edge, a few percent opaque, is none)
          else if (w.created[q] === 0 && q < W - 2 && [-1, 0, 1, 2].every((d) => w.pool[q + d] === 0) && near(p, SPARKC))
            serr = "HEC " + c.cap + ": no sparks created at column " + q + " but a mark (pixel " + p + ")";
          else if (w.created[q] > 0) sn++;
        }
      }
      if (serr) fail(serr);
      else ok("spark lanes: created sparks marked in " + sn + " columns, none elsewhere");
    }
    // What the pointer says over them.
    {
      const fmt = (n) => { let i = 0; while (Math.abs(n) >= 1000 && i < 4) { n /= 1000; i++; }
        return (i === 0 ? Math.round(n * 100) / 100 : n.toFixed(1)) + " " + ["", "k", "M", "G", "T"][i]; };
      const hover = async (ln, q) => {
        await page.mouse.move(box.x + lay.left + q + 0.5, box.y + ln.y + ln.h / 2);
        return page.textContent("#zoom-hover");
      };
      const hl = laneOf("heap"), q = Math.max(Math.floor(W / 2), heapFrom.size, heapFrom.live), hv = await hover(hl, q);
      const hwant = "heap " + fmt(heapWant.size[q]) + "B, live " + fmt(heapWant.live[q]) + "B";
      if (!hv.endsWith(hwant)) fail("hover over the heap at column " + q + " says " + JSON.stringify(hv) + ", ghc-events " + JSON.stringify(hwant));
      let said = [JSON.stringify(hv)];
      for (const c of tlv.caps) {
        const w = sparkWant[c.cap], k = w.created.findIndex((x) => x > 0), col = k >= 0 ? k : w.created.findIndex((x) => x === 0);
        const sv = await hover(laneOf("sparks " + c.cap), col);
        const swant = "sparks " + c.cap + " at ", stail = ": pool " + w.pool[col] + ", created " + w.created[col];
        if (!sv.startsWith(swant) || !sv.endsWith(stail))
          fail("hover over HEC " + c.cap + "'s sparks at column " + col + " says " + JSON.stringify(sv) + ", ghc-events " + JSON.stringify(stail));
        said.push(JSON.stringify(sv));
      }
      ok("hover over heap and sparks: " + said.join(", "));
    }

    // 2. labels and stop reasons on the thread lanes.
    const labels = {};
    for (const [, s] of lines) { const m = /thread (\d+) has label "(.*)"$/.exec(s); if (m) labels[+m[1]] = m[2]; }
    let nl = 0;
    for (const ln of info.lanes.filter((l) => l.thread)) {
      if (labels[ln.thread.id] !== undefined) {
        nl++;
        if (ln.thread.label !== labels[ln.thread.id]) fail("thread " + ln.thread.id + " lane label " + JSON.stringify(ln.thread.label) + ", ghc-events " + JSON.stringify(labels[ln.thread.id]));
      }
    }
    let ns = 0;
    for (const [t, s] of lines.filter(([t]) => v.t0 <= t && t < v.t1)) {
      const m = /stopping thread (\d+) \((.*)\)$/.exec(s);
      if (!m) continue;
      // A stop the thread runs again from within 2 px draws no segment.
      const next = lines.find(([u, x]) => u >= t && x.endsWith("running thread " + m[1]));
      if (next && xAt(v, next[0]) - xAt(v, t) < 2) continue;
      const ln = info.lanes.find((l) => l.thread && l.thread.id === +m[1]);
      const seg = ln && ln.thread.segments.find((g) => g[0] === t);
      // A finished thread's last segment is "finished" (query.h: it has no
      // reason); every other stop's segment carries the stop's reason.
      // (ghc-events names a black hole's owner: "blocked on black hole owned by thread N")
      const name = /^blocked on black hole owned by thread \d+$/.test(m[2]) ? "BlockedOnBlackHole" : NAMES[m[2]];
      const right = m[2] === "thread finished" ? seg && seg[2] === "finished" : seg && seg[3] === name;
      if (!right) fail("thread " + m[1] + " stopped at " + t + " (" + m[2] + "): its lane has " + JSON.stringify(seg));
      else ns++;
    }
    if (nl === 0) fail("no labelled thread has a lane in the view");
    if (ns === 0) fail("no thread stopped in the view");
    if (nl > 0 && ns > 0) ok("thread lanes: " + nl + " labels as ghc-events shows them, " + ns + " stops carry their reasons");
    // What the pointer is over says so.
    const st = info.lanes.find((l) => l.thread && l.thread.segments.some((g) => g[2] === "blocked" && xAt(v, Math.min(g[1], v.t1)) - xAt(v, Math.max(g[0], v.t0)) > 6));
    if (st) {
      const g = st.thread.segments.find((g) => g[2] === "blocked" && xAt(v, Math.min(g[1], v.t1)) - xAt(v, Math.max(g[0], v.t0)) > 6);
      await page.mouse.move(box.x + (xAt(v, Math.max(g[0], v.t0)) + xAt(v, Math.min(g[1], v.t1))) / 2, box.y + st.y + st.h / 2);
      const hv = await page.textContent("#zoom-hover");
      if (!hv.includes("thread " + st.thread.id) || !hv.includes("blocked (" + g[3] + ")")) fail("hover over a blocked thread says " + JSON.stringify(hv));
      else ok("hover: " + JSON.stringify(hv));
    }
    await page.screenshot({ path: shot, fullPage: false });

    // 3. zoom out to about 16 ms and select the middle of the view.
    for (let i = 0; i < 4; i++) { await page.click("#zoom-out"); await settled(page); }
    v = await viewOf(page);
    await page.keyboard.down("Shift");
    await page.mouse.move(box.x + lay.left + lay.width * 0.2, box.y + 80);
    await page.mouse.down();
    await page.mouse.move(box.x + lay.left + lay.width * 0.5, box.y + 80, { steps: 4 });
    await page.mouse.move(box.x + lay.left + lay.width * 0.8, box.y + 80, { steps: 4 });
    await page.mouse.up();
    await page.keyboard.up("Shift");
    await settled(page);
    v = await viewOf(page);
    const sel = (v.sel || "").split(",").map(Number);
    const readRange = () => page.evaluate(() => {
      const o = {};
      document.querySelectorAll("#zoom-range tr").forEach((tr) => {
        if (tr.dataset.key === "thread") o["thread " + tr.dataset.thread] = +tr.dataset.running;
        else o[tr.dataset.key] = +tr.dataset.value;
      });
      o.exact = window.elsZoom.range && window.elsZoom.range.exact;
      return o;
    });
    const got = await readRange();
    if (sel.length !== 2 || !(sel[1] > sel[0])) fail("no selection in the fragment: " + JSON.stringify(v));
    else {
      const f = figures(sel[0], sel[1]);
      const diffs = [];
      if (!got.exact) diffs.push("not exact");
      if (got["gc-count"] !== f.gcs) diffs.push("collections page " + got["gc-count"] + ", ghc-events " + f.gcs);
      if (got["gc-total"] !== f.tot) diffs.push("pause total page " + got["gc-total"] + ", ghc-events " + f.tot);
      if (got["gc-max"] !== f.mx) diffs.push("longest pause page " + got["gc-max"] + ", ghc-events " + f.mx);
      if (got.alloc !== f.alloc) diffs.push("allocation page " + got.alloc + ", ghc-events " + f.alloc);
      for (const [th, n] of Object.entries(f.runNs))
        if ((got["thread " + th] || 0) !== n) diffs.push("thread " + th + " running page " + got["thread " + th] + ", ghc-events " + n);
      if (diffs.length) fail("selection [" + sel + "]: " + diffs.join("; "));
      else if (f.gcs === 0 || Object.keys(f.runNs).length < 2) fail("selection [" + sel + "] holds too little to test: " + JSON.stringify(f));
      else ok("selection [" + sel[0] + ", " + sel[1] + "] (" + (sel[1] - sel[0]) + " ns): " + f.gcs + " collections, " + f.tot +
              " ns paused (longest " + f.mx + "), " + f.alloc + " bytes allocated, " + Object.keys(f.runNs).length +
              " threads' running time: equal to ghc-events");
    }

    // 4. the same URL again.
    const before = await viewOf(page), url2 = page.url();
    await page.reload();
    await page.waitForFunction(() => window.elsZoom && window.elsZoom.tl, null, { timeout: 60000 });
    await settled(page);
    const after = await viewOf(page), got2 = await readRange();
    if (after.t0 !== before.t0 || after.t1 !== before.t1 || after.sel !== before.sel || JSON.stringify(got2) !== JSON.stringify(got))
      fail("reload of " + url2 + ": view " + JSON.stringify(after) + ", before " + JSON.stringify(before));
    else ok("reload: the same view [" + after.t0 + ", " + after.t1 + "], selection " + after.sel + " and figures");
});
