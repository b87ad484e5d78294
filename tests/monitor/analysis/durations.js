// durations.js TOP URL RUNDIR NAME SHOTDIR: the page's span durations
// table (tools/monitor/web/durations.js) in headless Chromium against
// the spans paired here from `ghc-events show` (RUNDIR/NAME.show), as
// tests/timeline/aggr.py pairs them: markers "NAME start"/"NAME end" and
// "NAME begin"/"NAME stop", messages "START NAME"/"STOP NAME", each end
// with the latest open start of the same name and pair posted by the
// thread running on its cap; a span counts in a window when its end
// falls in it; pK the nearest rank.
//  1. the whole run's table (each cell's data-ns) holds per name the
//     count, total, mean, p50, p99 and max computed here, and its
//     longest instance; the counts of what was not paired or not kept
//     are shown and equal those here (the five throwing "failing" spans
//     all closed);
//  2. a header click sorts by that column, a second reverses;
//  3. a shift-drag on the timeline selects a range (its exact ns read
//     from the URL's fragment), and the table becomes that range's;
//  4. a click on the "request" row selects its longest instance (the
//     fragment's sel is that instance, the view holds it) and the
//     timeline's "request" span lane paints a bar over it (pixels on
//     the canvas), not beside it.
// Saves SHOTDIR/monitor-durations-NAME.png.  Prints "ok ..." lines, or
// "FAIL ..." and exits 1.
"use strict";
const [top, url, rundir, name, shotdir] = process.argv.slice(2);
const { ok, fail, run, selectByDrag } = require("./page.js");
const fs = require("fs");


// ghc-events' lines, in its (time, stable) order: the marker events
// with their posting thread.
const marks = [];
{
  let on = false;
  const running = {};
  for (const l of fs.readFileSync(rundir + "/" + name + ".show", "utf8").split("\n")) {
    if (l === "Events:") { on = true; continue; }
    const m = on && /^\s*(\d+): (?:cap (\d+): )?(.*)$/.exec(l);
    if (!m) continue;
    const t = Number(m[1]), cap = m[2] === undefined ? null : Number(m[2]), text = m[3];
    const r = /^(running|stopping) thread (\d+)/.exec(text);
    if (r && cap !== null) { running[cap] = r[1] === "running" ? Number(r[2]) : 0; continue; }
    const th = running[cap] || 0;
    let k = /^marker: (.*) (start|end|begin|stop)$/.exec(text);
    if (k) {
      marks.push([t, th, k[1], k[2] === "start" || k[2] === "end" ? 0 : 1, k[2] === "end" || k[2] === "stop"]);
      continue;
    }
    k = /^(START|STOP) (.*)$/.exec(text);
    if (k) marks.push([t, th, k[2], 2, k[1] === "STOP"]);
  }
}
const spans = [];   // [name, start, end]
let unmatched = 0;
const stacks = new Map();
for (const [t, th, nm, fam, end] of marks) {
  const key = th + "\u0000" + nm + "\u0000" + fam;
  if (!stacks.has(key)) stacks.set(key, []);
  const st = stacks.get(key);
  if (!end) st.push(t);
  else if (st.length) spans.push([nm, st.pop(), t]);
  else unmatched++;
}
const stillOpen = [...stacks.values()].reduce((n, v) => n + v.length, 0);
if (spans.length < 100) { console.log("FAIL only " + spans.length + " spans in " + name + ".show"); process.exit(1); }

const nearest = (v, p) => v[Math.max(Math.ceil((p * v.length) / 100), 1) - 1];
// Per name over the spans whose end lies in [t0, t1].
function table(t0, t1) {
  const out = {};
  for (const [nm, a, b] of spans) {
    if (b < t0 || b > t1) continue;
    (out[nm] = out[nm] || []).push([a, b]);
  }
  for (const nm of Object.keys(out)) {
    const inst = out[nm], v = inst.map(([a, b]) => b - a).sort((x, y) => x - y);
    const total = v.reduce((s, x) => s + x, 0), max = v[v.length - 1];
    out[nm] = { count: v.length, total: total, mean: total / v.length, p50: nearest(v, 50),
                p99: nearest(v, 99), max: max, longest: inst.filter(([a, b]) => b - a === max) };
  }
  return out;
}

async function rows(page) {
  return page.$$eval("#durations tr.dur", (trs) => trs.map((tr) => {
    const cell = (k) => tr.querySelector('[data-key="' + k + '"]');
    const n = (k) => Number(cell(k).dataset.ns);
    return { name: cell("name").textContent, count: n("count"), total: n("total"), mean: n("mean"),
             p50: n("p50"), p99: n("p99"), max: n("max"), a: Number(tr.dataset.a), b: Number(tr.dataset.b),
             countText: cell("count").textContent, maxText: cell("max").textContent };
  }));
}
const durText = (ns) => ns >= 1e9 ? (ns / 1e9).toFixed(3) + " s" : ns >= 1e6 ? (ns / 1e6).toFixed(3) + " ms"
  : ns >= 1e3 ? (ns / 1e3).toFixed(3) + " \u00b5s" : Math.round(ns) + " ns";

function compare(what, got, want) {
  const names = Object.keys(want).sort();
  const gotNames = got.map((r) => r.name).sort();
  if (JSON.stringify(names) !== JSON.stringify(gotNames)) {
    fail(what + ": names " + JSON.stringify(gotNames) + ", ghc-events " + JSON.stringify(names));
    return;
  }
  let same = true;
  for (const r of got) {
    const w = want[r.name];
    const fields = ["count", "total", "p50", "p99", "max"];
    const diff = fields.filter((f) => r[f] !== w[f]);
    if (Math.abs(r.mean - w.mean) > 1e-9 * w.mean + 1e-6) diff.push("mean");
    if (!w.longest.some(([a, b]) => a === r.a && b === r.b)) diff.push("longest");
    if (r.countText !== String(w.count) || r.maxText !== durText(w.max)) diff.push("shown text");
    if (diff.length) {
      same = false;
      fail(what + ": " + r.name + " differs in " + diff.join(", ") + ": page " + JSON.stringify(r) +
           ", ghc-events " + JSON.stringify(Object.assign({}, w, { longest: w.longest.slice(0, 3) })));
    }
  }
  if (same) ok(what + ": " + got.length + " names as ghc-events pairs them (" +
               got.map((r) => r.name + " " + r.count + ", p99 " + r.p99 + " ns").join("; ") + ")");
}

const settled = (page) => page.waitForFunction(() => {
  const z = window.elsZoom;
  return z && z.view && z.tl && z.drawnView && z.drawnView[0] === z.view[0] && z.drawnView[1] === z.view[1];
}, null, { timeout: 60000 });

run(top, async (page) => {
    await page.goto(url);
    await page.waitForFunction(() => document.getElementById("durations").dataset.range === "all" &&
                               document.querySelectorAll("#durations tr.dur").length > 0, null, { timeout: 60000 });
    // 1. the whole run.
    const all = table(0, Number.MAX_SAFE_INTEGER);
    compare("whole run", await rows(page), all);
    const title = await page.textContent("#durations-title"), rule = await page.textContent("#durations-rule");
    if (/whole run/.test(title) && /when its end falls in it/.test(rule)) ok("the title says: " + title);
    else fail("the title or rule does not say which window or rule: " + title + " / " + rule);
    const unp = await page.$$eval("#durations-unpaired tr", (trs) =>
      Object.fromEntries(trs.map((tr) => [tr.dataset.key, Number(tr.cells[1].textContent)])));
    const wantUnp = { unmatched_ends: unmatched, open: stillOpen, pending: 0, open_refused: 0,
                      names_refused: 0, released_early: 0, lost: 0 };
    const failing = (all.failing || { count: 0 }).count;
    if (JSON.stringify(unp) === JSON.stringify(wantUnp) && failing === 5 && unmatched + stillOpen === 0)
      ok("not paired or not kept, as shown: " + JSON.stringify(unp) + "; the 5 throwing \"failing\" spans all closed");
    else fail("not paired or not kept: page " + JSON.stringify(unp) + ", ghc-events " + JSON.stringify(wantUnp) +
              ", failing closed " + failing + " of 5");

    // 2. sorting by a header.
    await page.click('#durations th[data-key="count"]');
    let c = (await rows(page)).map((r) => r.count);
    const down = c.every((x, i) => i === 0 || c[i - 1] >= x);
    await page.click('#durations th[data-key="count"]');
    c = (await rows(page)).map((r) => r.count);
    const up = c.every((x, i) => i === 0 || c[i - 1] <= x);
    if (down && up && c.length > 1) ok("the count header sorts the rows, a second click reverses: " + c.join(" "));
    else fail("sorting by count: " + c.join(" "));

    // 3. a selection made with the mouse on the whole-run view.
    await settled(page);
    const [s0, s1] = await selectByDrag(page, 0.3, 0.6, 60), sel = s0 + "," + s1;
    await page.waitForFunction((r) => document.getElementById("durations").dataset.range === r,
                               sel, { timeout: 60000 });
    const part = table(s0, s1);
    const inSel = Object.values(part).reduce((n, x) => n + x.count, 0);
    if (inSel === 0 || inSel === spans.length) fail("the selection " + sel + " holds " + inSel + " of " + spans.length + " spans: nothing to tell");
    compare("selection " + s0 + ".." + s1 + " (" + inSel + " of " + spans.length + " spans end there)", await rows(page), part);

    // 4. the "request" row opens its longest instance of the run.
    // A shift-click clears the selection: the table is the run's again.
    await page.locator("#zoom").scrollIntoViewIfNeeded();
    const box = await page.locator("#zoom").boundingBox();
    const lay = await page.evaluate(() => ({ left: window.elsZoom.left, width: window.elsZoom.width }));
    await page.keyboard.down("Shift");
    await page.mouse.click(box.x + lay.left + lay.width * 0.5, box.y + 60);
    await page.keyboard.up("Shift");
    await page.waitForFunction(() => document.getElementById("durations").dataset.range === "all",
                               null, { timeout: 60000 });
    const req = all.request;
    if (!req) throw new Error("no request spans in " + name + ".show");
    await page.click('#durations tr.dur[data-name="request"]');
    await page.waitForFunction(() => { const z = window.elsZoom; return z.sel && location.hash.includes("sel="); },
                               null, { timeout: 60000 });
    await settled(page);
    const st = await page.evaluate(() => {
      const z = window.elsZoom, h = new URLSearchParams(location.hash.slice(1));
      const ln = z.lanes.find((l) => l.span === "request");
      const cv = document.getElementById("zoom"), ctx = cv.getContext("2d");
      const xOf = (t) => z.left + ((t - z.view[0]) * z.width) / (z.view[1] - z.view[0]);
      const px = (x) => Array.from(ctx.getImageData(Math.round(x), ln.y + (ln.h >> 1), 1, 1).data);
      const sel = (h.get("sel") || "").split(",").map(Number);
      if (!ln) return { sel: sel, view: z.view, lane: null, spans: z.tl.spans.length };
      const a = xOf(sel[0]), b = xOf(sel[1]);
      const inside = [];
      for (let x = Math.ceil(a) + 1; x <= Math.floor(b) - 1; x += 3) inside.push([x, px(x)]);
      return { sel: sel, view: z.view, lane: ln.y,
               listed: z.tl.spans.some((s) => s[0] === sel[0] && s[1] === sel[1] && s[2] === "request"), xa: a, xb: b, inside: inside,
               before: [Math.round(a) - 4, px(Math.round(a) - 4)], after: [Math.round(b) + 4, px(Math.round(b) + 4)],
               nsPerPx: (z.view[1] - z.view[0]) / z.width, left: z.left };
    });
    const [a, b] = st.sel;
    if (req.longest.some(([x, y]) => x === a && y === b) && st.view[0] <= a && b <= st.view[1])
      ok("the request row selects its longest instance " + a + ".." + b + " (" + (b - a) + " ns, as ghc-events pairs it) in the view [" +
         st.view[0] + ", " + st.view[1] + "]");
    else fail("the request row: sel " + JSON.stringify(st.sel) + " view " + JSON.stringify(st.view) +
              ", want one of " + JSON.stringify(req.longest) + " in the view");
    // A bar: every pixel inside is opaque enough to be the span's bar
    // (or a label drawn on one), more than the selection's tint alone;
    // a pixel just outside, where no other request lies, is not.
    const bar = (p) => p[3] >= 100;
    const free = (x) => {
      const t = st.view[0] + (x - st.left) * st.nsPerPx;
      const m = 2 * st.nsPerPx;
      return !spans.some(([nm, s, e]) => nm === "request" && s <= t + m && e >= t - m);
    };
    if (st.lane === null) fail("no \"request\" span lane on the timeline (" + st.spans + " spans in the answer)");
    else {
      const off = st.inside.filter(([, p]) => !bar(p));
      const outside = [st.before, st.after].filter(([x]) => free(x));
      const paintedOut = outside.filter(([, p]) => bar(p));
      if (st.listed && st.inside.length >= 3 && !off.length && !paintedOut.length)
        ok("the request lane paints the instance /api/timeline lists as a bar over x " + st.xa.toFixed(1) + ".." +
           st.xb.toFixed(1) + " (" + st.inside.length + " pixels checked)" + (outside.length ? " and not at " +
           outside.map(([x]) => x).join(", ") + " outside it" : "; beside it other requests overlap"));
      else fail("the request lane (the instance " + (st.listed ? "" : "not ") + "in /api/timeline's spans) over x " + st.xa.toFixed(1) + ".." + st.xb.toFixed(1) + ": unpainted inside " +
                JSON.stringify(off.slice(0, 5)) + " of " + st.inside.length + ", painted outside " + JSON.stringify(paintedOut));
    }
    if (shotdir) await page.locator("#durations-box").screenshot({ path: shotdir + "/monitor-durations-" + name + ".png" });
});
