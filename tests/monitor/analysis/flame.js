// flame.js TOP URL RUNDIR NAME SHOTDIR: the page's cost-centre flame
// graph (tools/monitor/web/flame.js) in headless Chromium against the
// samples counted here from `ghc-events show` (RUNDIR/NAME.show): each
// "prof sample" line's stack (innermost first) at its time, its cost
// centres named by the "cost centre N LABEL in MODULE at SRC" lines, a
// stack of one of the RTS's own (GC/GC, IDLE/IDLE, SYSTEM/SYSTEM,
// OVERHEAD_of/PROFILING, DONT_CARE/MAIN) counted apart, as
// tests/timeline/aggr.py does.
// A run with samples (NAME=prof):
//  1. for the whole run and for a selection made with the mouse
//     (shift-drag on the timeline; its ns read from the URL's fragment):
//     the graph's frames (the page's list of them) hold exactly the
//     samples of that range per stack, each frame's total the samples of
//     the stacks under it, the RTS's own counted beside as here; with the
//     toggle on they are in the graph, as stacks of one;
//  2. on the canvas, every frame 3 px wide or more is one run of its
//     colour as wide as its share of the width (to a pixel), after a
//     background pixel, and the pointer over it says its name, module,
//     source location, samples, self samples and share;
//  3. the speedscope file the page downloads for the selection holds the
//     same samples per stack;
//  4. a click on a frame zooms into it: it fills the width, its children
//     in proportion; "reset" goes back.
// A run without samples (NAME=plain): the view says so, and how to run.
// Saves SHOTDIR/monitor-flame-NAME.png.  Prints "ok ..." lines, or
// "FAIL ..." and exits 1.
"use strict";
const [top, url, rundir, name, shotdir] = process.argv.slice(2);
const { ok, fail, run: inChromium, selectByDrag } = require("./page.js");
const fs = require("fs");


// dump --hp's and serve's spelling of a name (profile_word): one
// printable token.
const word = (s) => s.replace(/[^\x21-\x7e]|["\\]/g, "_") || "_";
const BUILTIN = { "GC GC": "GC", "IDLE IDLE": "IDLE", "SYSTEM SYSTEM": "SYSTEM",
                  "OVERHEAD_of PROFILING": "OVERHEAD_of", "DONT_CARE MAIN": "DONT_CARE" };

const ccs = {}, ticks = [];
{
  let on = false;
  for (const l of fs.readFileSync(rundir + "/" + name + ".show", "utf8").split("\n")) {
    if (l === "Events:") { on = true; continue; }
    const m = on && /^\s*(\d+): (.*)$/.exec(l);
    if (!m) continue;
    // ghc-events ends a CAF's definition with " CAF" after its location.
    let d = /^cost centre (\d+) (.*) in (\S+) at (.*?)( CAF)?$/.exec(m[2]);
    if (d) { ccs[d[1]] = [d[2], d[3], d[4]]; continue; }
    d = /^cap no \d+, prof sample \d+, cost centre stack (.*)$/.exec(m[2]);
    if (d) ticks.push([Number(m[1]), d[1].split(", ").filter((x) => x)]);
  }
}

// The samples in [t0, t1]: per stack (outermost first, as [name,
// module] pairs, a JSON key) and the RTS's own by kind.
function expect(t0, t1) {
  const prog = {}, kinds = { GC: 0, IDLE: 0, SYSTEM: 0, OVERHEAD_of: 0, DONT_CARE: 0 };
  let n = 0;
  for (const [t, s] of ticks) {
    if (t < t0 || t > t1) continue;
    n++;
    const c = s.length === 1 && ccs[s[0]];
    const k = c && BUILTIN[c[0] + " " + c[1]];
    if (k) { kinds[k]++; continue; }
    const key = JSON.stringify(s.slice().reverse().map((i) => [word(ccs[i][0]), word(ccs[i][1])]));
    prog[key] = (prog[key] || 0) + 1;
  }
  return { prog: prog, kinds: kinds, n: n };
}
const sum = (o) => Object.values(o).reduce((a, b) => a + b, 0);
// The samples of the stacks under a path (a prefix of theirs).
function under(prog, path) {
  const p = JSON.parse(path);
  let n = 0;
  for (const [k, v] of Object.entries(prog)) {
    const s = JSON.parse(k);
    if (s.length >= p.length && p.every((f, i) => f[0] === s[i][0] && f[1] === s[i][1])) n += v;
  }
  return n;
}
function diff(got, want) {
  const out = [];
  for (const k of new Set(Object.keys(got).concat(Object.keys(want))))
    if ((got[k] || 0) !== (want[k] || 0)) out.push(k + ": page " + (got[k] || 0) + ", ghc-events " + (want[k] || 0));
  return out;
}

const frames = (page) => page.$$eval("#flame-list tr.frame", (trs) => trs.map((tr) => {
  const d = tr.dataset;
  return { path: d.path, name: d.name, module: d.module, src: d.src, self: +d.self, total: +d.total,
           depth: +d.depth, x: d.x === undefined ? null : +d.x, y: +d.y, w: +d.w, h: +d.h };
}));
const rtsShown = (page) => page.$$eval("#flame-rts-counts tr[data-kind]", (trs) => {
  const o = {};
  trs.forEach((tr) => { o[tr.dataset.kind] = +tr.dataset.samples; });
  return o;
});
async function shown(page, range, rts) {
  await page.waitForFunction(([r, i]) => {
    const b = document.getElementById("flame-box");
    return b.dataset.range === r && b.dataset.rts === i && b.dataset.empty === "no";
  }, [range, rts], { timeout: 60000 }).catch(async () => {
    const d = await page.evaluate(() => Object.assign({}, document.getElementById("flame-box").dataset));
    throw new Error("the graph never showed range " + range + " with the RTS's own " + rts + ": it shows " + JSON.stringify(d));
  });
}

// 1. The frames against ghc-events' samples of [t0, t1].
async function compare(page, what, t0, t1, include) {
  const e = expect(t0, t1), fr = await frames(page);
  const got = {};
  for (const f of fr) if (f.self) got[f.path] = (got[f.path] || 0) + f.self;
  const want = Object.assign({}, e.prog);
  if (include)
    for (const [c, k] of Object.entries(BUILTIN))
      if (e.kinds[k]) want[JSON.stringify([c.split(" ")])] = e.kinds[k];
  const d = diff(got, want);
  if (d.length) fail(what + ": samples per stack differ: " + d.slice(0, 5).join("; "));
  else ok(what + ": " + sum(got) + " samples in " + Object.keys(got).length + " stacks, as ghc-events shows them");
  // Two cost centres of one name and module (at two places) make two
  // frames of one path: their totals together are the samples under it.
  const byPath = {};
  for (const f of fr) byPath[f.path] = (byPath[f.path] || 0) + f.total;
  const totals = Object.keys(byPath).filter((p) => byPath[p] !== under(want, p));
  if (totals.length) fail(what + ": a frame's total is not the samples under it: " + totals.slice(0, 3).map((p) =>
    p + " total " + byPath[p] + ", ghc-events " + under(want, p)).join("; "));
  const srcs = fr.filter((f) => f.depth > 0 && !Object.values(ccs).some((c) =>
    word(c[0]) === f.name && word(c[1]) === f.module && c[2] === f.src));
  if (srcs.length) fail(what + ": frames whose source location ghc-events does not give: " +
    srcs.slice(0, 3).map((f) => f.name + " " + f.src).join("; "));
  const rts = await rtsShown(page);
  if (JSON.stringify(rts) !== JSON.stringify(e.kinds))
    fail(what + ": the RTS's own shown " + JSON.stringify(rts) + ", ghc-events " + JSON.stringify(e.kinds));
  else ok(what + ": the RTS's own " + (include ? "in the graph" : "apart") + ", counted " + JSON.stringify(rts));
  const title = await page.textContent("#flame-title");
  if (!title.includes(sum(want) + " samples")) fail(what + ": the title " + JSON.stringify(title) + " does not say " + sum(want) + " samples");
  return { e: e, fr: fr };
}

// The canvas as pixels, and where its drawing starts in the viewport.
async function canvas(page) {
  await page.evaluate(() => document.getElementById("flame").scrollIntoView({ block: "start" }));
  // The pixels travel as base64: a plain array of a megapixel's bytes
  // takes seconds to pass as JSON.
  const img = await page.evaluate(() => {
    const cv = document.getElementById("flame"), r = cv.getBoundingClientRect();
    const data = cv.getContext("2d").getImageData(0, 0, cv.width, cv.height).data;
    let bin = "";
    for (let i = 0; i < data.length; i += 0x8000) bin += String.fromCharCode.apply(null, data.subarray(i, i + 0x8000));
    return { w: cv.width, h: cv.height, left: r.left + cv.clientLeft, top: r.top + cv.clientTop,
             dpr: window.devicePixelRatio, d: btoa(bin) };
  });
  img.d = Buffer.from(img.d, "base64");
  return img;
}
const px = (img, x, y) => { const i = (y * img.w + x) * 4; return img.d[i] + "," + img.d[i + 1] + "," + img.d[i + 2]; };
const WHITE = "255,255,255";
// The run of one colour starting at (x, y): its length.
function run(img, x, y) {
  const c = px(img, x, y);
  let n = 0;
  while (x + n < img.w && px(img, x + n, y) === c) n++;
  return [c, n];
}

// 2. Every frame drawn 3 px or more: one run of its colour after a
// background pixel, as wide as total * W / all (to a pixel), and
// (the widest, at most 40) named by the pointer.
async function pixels(page, what, fr, all) {
  const img = await canvas(page);
  if (img.dpr !== 1) { fail("device pixel ratio " + img.dpr); return; }
  const W = img.w;
  let checked = 0;
  for (const f of fr) {
    if (f.x === null) {
      if ((f.total * W) / all >= 4) fail(what + ": " + f.path + " (" + f.total + " samples, " + ((f.total * W) / all).toFixed(1) + " px) is not drawn");
      continue;
    }
    if (f.w < 3) continue;
    const [c, n] = run(img, f.x, f.y + 1), want = (f.total * W) / all;
    if (c === WHITE || Math.abs(n + 1 - want) > 1 || (f.x > 0 && px(img, f.x - 1, f.y + 1) !== WHITE)) {
      fail(what + ": " + f.path + " (" + f.total + " of " + all + " samples) is drawn from x " + f.x + " as " + n +
           " px of " + c + " after " + (f.x > 0 ? px(img, f.x - 1, f.y + 1) : "the edge") + ", want " + (want - 1).toFixed(1) + " px");
      continue;
    }
    checked++;
  }
  if (checked < 5) fail(what + ": only " + checked + " frames of 3 px or more to check");
  else ok(what + ": " + checked + " frames drawn as wide as their samples (" + W + " px for " + all + ")");
  let hovered = 0;
  for (const f of fr.filter((f) => f.depth > 0 && f.x !== null && f.w >= 6).sort((a, b) => b.total - a.total).slice(0, 40)) {
    await page.mouse.move(img.left + f.x + f.w / 2, img.top + f.y + f.h / 2);
    const h = await page.textContent("#flame-hover");
    const share = (100 * f.total / all).toFixed(1) + "%";
    if (!(h.startsWith(f.name + "  " + f.module + "  " + f.src + ": ") && h.includes(": " + f.total + " samples (" + share) &&
          h.endsWith(", " + f.self + " self"))) {
      fail(what + ": the pointer over " + f.path + " at x " + (f.x + f.w / 2) + " says " + JSON.stringify(h)); return;
    }
    hovered++;
  }
  ok(what + ": the pointer over " + hovered + " frames names them, e.g. " + JSON.stringify(await page.textContent("#flame-hover")));
}

inChromium(top, async (page) => {
    await page.goto(url);
    const shot = shotdir + "/monitor-flame-" + name + ".png";

    if (ticks.length === 0) {
      // A run without samples: the view says so.
      await page.waitForFunction(() => document.getElementById("flame-box").dataset.empty === "yes" &&
                                 document.getElementById("flame-empty").textContent !== "", null, { timeout: 60000 });
      const t = await page.textContent("#flame-empty");
      const hidden = await page.evaluate(() => document.getElementById("flame").hidden);
      if (t.includes("no cost-centre samples") && t.includes("not profiled") && t.includes("-prof") &&
          t.includes("+RTS -p") && hidden)
        ok("no samples in " + name + ".show; the view says " + JSON.stringify(t));
      else fail("no samples in " + name + ".show; the view says " + JSON.stringify(t) + (hidden ? "" : ", and shows a graph"));
      await page.locator("#flame-box").screenshot({ path: shot });
      return;
    }
    if (ticks.length < 50) { fail("only " + ticks.length + " samples in " + name + ".show"); return; }

    // 1, 2: the whole run.
    await shown(page, "all", "apart");
    const whole = await compare(page, "whole run", 0, Number.MAX_SAFE_INTEGER, false);
    if (whole.e.n !== ticks.length) fail("whole run: " + whole.e.n + " of " + ticks.length + " samples");
    await pixels(page, "whole run", whole.fr, sum(whole.e.prog));

    // 4. a click zooms into a frame with children, and reset goes back.
    const all = sum(whole.e.prog);
    // The deepest frame with children 12 px wide or more, one narrower
    // than the root first (the zoom widens it).
    const target = whole.fr.filter((f) => f.depth >= 1 && f.w >= 12 && f.total > f.self &&
                                    whole.fr.some((c) => c.depth === f.depth + 1 && c.path.startsWith(f.path.slice(0, -1))))
      .sort((a, b) => (a.total < all ? 0 : 1) - (b.total < all ? 0 : 1) || b.depth - a.depth || b.total - a.total)[0];
    if (!target) fail("no frame with children 12 px wide to zoom into");
    else {
      let img = await canvas(page);
      await page.mouse.click(img.left + target.x + target.w / 2, img.top + target.y + target.h / 2);
      await page.waitForFunction((n) => document.getElementById("flame-box").dataset.zoom === n, target.name, { timeout: 10000 });
      img = await canvas(page);
      const fr = await frames(page);
      const me = fr.find((f) => f.path === target.path);
      const [c, n] = run(img, 0, me.y + 1);
      const kids = fr.filter((f) => f.depth === me.depth + 1 && f.path.startsWith(me.path.slice(0, -1)) && f.w >= 3);
      const wrong = kids.filter((k) => { const [kc, kn] = run(img, k.x, k.y + 1);
        return kc === WHITE || Math.abs(kn + 1 - (k.total * img.w) / me.total) > 1; });
      const crumbs = await page.textContent("#flame-crumbs");
      if (me.x === 0 && n === img.w - 1 && c !== WHITE && kids.length && !wrong.length && crumbs.includes(target.name))
        ok("a click on " + target.name + " (" + target.total + " samples) zooms into it: " + n + " px wide, its " +
           kids.length + " children in proportion; breadcrumb " + JSON.stringify(crumbs));
      else fail("zoom into " + target.path + ": drawn at x " + me.x + ", " + n + " px of " + img.w + ", children wrong " +
                JSON.stringify(wrong.map((k) => k.path)) + ", breadcrumb " + JSON.stringify(crumbs));
      await page.click("#flame-crumbs button");
      await page.waitForFunction(() => document.getElementById("flame-box").dataset.zoom === "", null, { timeout: 10000 });
      img = await canvas(page);
      const root = run(img, 0, 1);
      if (root[1] === img.w - 1) ok("reset: the root fills the width again");
      else fail("after reset the root row is " + root[1] + " px of " + img.w);
    }

    // 1: a selection made with the mouse on the timeline.
    await page.evaluate(() => window.scrollTo(0, 0));
    const [a, b] = await selectByDrag(page, 0.3, 0.6, 80);
    await shown(page, a + "," + b, "apart");
    const part = await compare(page, "selection " + a + ".." + b, a, b, false);
    if (!(part.e.n >= 20 && part.e.n < ticks.length))
      fail("the selection holds " + part.e.n + " of " + ticks.length + " samples: not a part to test with");
    await pixels(page, "selection", part.fr, sum(part.e.prog));

    // 3: its speedscope file.
    const [dl] = await Promise.all([page.waitForEvent("download", { timeout: 60000 }), page.click("#flame-speedscope")]);
    const ss = JSON.parse(fs.readFileSync(await dl.path(), "utf8"));
    const got = {}, sf = ss.shared.frames, sp = ss.profiles[0];
    sp.samples.forEach((s, i) => {
      const k = JSON.stringify(s.map((f) => [sf[f].name, sf[f].file]));
      got[k] = (got[k] || 0) + sp.weights[i];
    });
    const d = diff(got, part.e.prog);
    if (d.length) fail("the selection's speedscope file (" + dl.suggestedFilename() + "): " + d.slice(0, 5).join("; "));
    else ok("the selection's speedscope file " + dl.suggestedFilename() + ": " + sum(got) + " samples in " +
            Object.keys(got).length + " stacks, as ghc-events shows them");

    // 1: the toggle puts the RTS's own into the graph.
    await page.check("#flame-rts");
    await shown(page, a + "," + b, "include");
    await compare(page, "selection, the RTS's own included", a, b, true);
    await page.uncheck("#flame-rts");
    await shown(page, a + "," + b, "apart");
    await page.locator("#flame-box").screenshot({ path: shot });
});
