// pauses.js TOP URL RUNDIR NAME SHOTDIR: the page's list of the longest
// GC pauses (tools/monitor/web/pauses.js) in headless Chromium against
// the pauses computed here from `ghc-events show` (RUNDIR/NAME.show):
// each HEC's "starting GC" to its next "finished GC", overlapping ones
// (the same collection on several HECs) counted once as the longest,
// longest first.
//  1. the whole run's list is the first 10 of those, exactly (start,
//     end, HEC and the length shown) when the page says it is exact, and
//     else real pauses, longest first, the first the run's longest;
//  2. a click on the first row selects that pause in a 300 ms view
//     around it (a third of the pause either side when that is wider), and the selection's figures (serve's /api/range) give
//     it as the longest pause;
//  3. with a selection (the URL's fragment) the list holds the
//     selection's pauses only.
// Saves SHOTDIR/monitor-pauses-NAME.png.  Prints "ok ..." lines, or
// "FAIL ..." and exits 1.
"use strict";
const [top, url, rundir, name, shotdir] = process.argv.slice(2);
const { ok, fail, showLines, run } = require("./page.js");

// Every HEC's GC_START..GC_END, from ghc-events' lines.
const pauses = [];
{
  const start = {};
  for (const [t, l] of showLines(rundir + "/" + name + ".show")) {
    const m = /^cap (\d+): (starting GC|finished GC)$/.exec(l);
    if (!m) continue;
    const cap = Number(m[1]);
    if (m[2] === "starting GC") start[cap] = t;
    else if (start[cap] !== undefined) { pauses.push([start[cap], t, cap]); delete start[cap]; }
  }
}
if (pauses.length < 20) { console.log("FAIL only " + pauses.length + " pauses in " + name + ".show"); process.exit(1); }

// The n longest whose GC_END is in [t0, t1], overlapping ones once.
function longest(t0, t1, n) {
  const v = pauses.filter(([, b]) => b >= t0 && b <= t1)
    .sort((p, q) => (q[1] - q[0]) - (p[1] - p[0]) || p[1] - q[1]);
  const out = [];
  for (const p of v) {
    if (out.length === n) break;
    if (!out.some((q) => q[0] <= p[1] && p[0] <= q[1])) out.push(p);
  }
  return out;
}
const isPause = (p) => pauses.some((q) => q[0] === p[0] && q[1] === p[1] && q[2] === p[2]);

async function rows(page) {
  return page.$$eval("#pauses tr.pause", (trs) => trs.map((tr) =>
    [Number(tr.dataset.a), Number(tr.dataset.b), Number(tr.dataset.cap), tr.cells[2].textContent]));
}
async function exactShown(page) {
  return (await page.textContent("#pauses-note")) === "";
}

function compare(what, got, want, exact) {
  const fmt = (p) => "[" + p[0] + "," + p[1] + ",cap " + p[2] + "]";
  if (exact) {
    const same = got.length === want.length && got.every((g, i) =>
      g[0] === want[i][0] && g[1] === want[i][1] && g[2] === want[i][2] &&
      g[3] === ((want[i][1] - want[i][0]) / 1e6).toFixed(3) + " ms");
    if (same) ok(what + ": " + got.length + " pauses as ghc-events gives them, the longest " +
                 got[0][3] + " at " + got[0][1]);
    else fail(what + ": page " + JSON.stringify(got) + ", ghc-events " + want.map(fmt).join(" "));
    return;
  }
  const real = got.every((g) => isPause(g));
  const sorted = got.every((g, i) => i === 0 || g[1] - g[0] <= got[i - 1][1] - got[i - 1][0]);
  if (real && sorted && got.length && got[0][0] === want[0][0] && got[0][1] === want[0][1])
    ok(what + " (not exact, as the page says): " + got.length + " real pauses, longest first");
  else fail(what + ": page " + JSON.stringify(got) + ", ghc-events " + want.map(fmt).join(" "));
}

run(top, async (page) => {
    await page.goto(url);
    await page.waitForFunction(() => document.getElementById("pauses").dataset.range === "all" &&
                               document.querySelectorAll("#pauses tr.pause").length > 0, null, { timeout: 60000 });
    const all = longest(0, Number.MAX_SAFE_INTEGER, 10);
    compare("whole run", await rows(page), all, await exactShown(page));

    // 2. the first row.
    await page.click("#pauses tr.pause");
    const [a, b] = [all[0][0], all[0][1]];
    await page.waitForFunction((sel) => {
      const z = window.elsZoom;
      return z.sel && z.sel[0] === sel[0] && z.sel[1] === sel[1] && z.rangeFor === sel[0] + "," + sel[1];
    }, [a, b], { timeout: 60000 });
    const v = await page.evaluate(() => ({ view: window.elsZoom.view, hash: location.hash }));
    const maxNs = await page.getAttribute('#zoom-range tr[data-key="gc-max"]', "data-value");
    // 300 ms around it, or a third of a longer pause either side.
    const width = Math.max(300e6, (b - a) * 5 / 3);
    if (v.view[0] <= a && v.view[1] >= b && Math.abs(v.view[1] - v.view[0] - width) <= 2 &&
        v.hash.includes("sel=" + a + "," + b) && Number(maxNs) === b - a)
      ok("the first row opens [" + v.view[0] + ", " + v.view[1] + "] (" + (v.view[1] - v.view[0]) / 1e6 + " ms) with the pause " +
         a + ".." + b + " selected; the selection's longest pause is " + maxNs + " ns");
    else fail("the first row: view " + JSON.stringify(v) + ", longest pause " + maxNs + ", want " + a + ".." + b);
    if (shotdir) await page.screenshot({ path: shotdir + "/monitor-pauses-" + name + ".png" });

    // 3. a selection: the middle third of the run.
    const t0 = pauses[0][0], t1 = pauses[pauses.length - 1][1];
    const s0 = Math.round(t0 + (t1 - t0) / 3), s1 = Math.round(t0 + 2 * (t1 - t0) / 3);
    const want = longest(s0, s1, 10);
    await page.evaluate(([x, y]) => { location.hash = "t0=" + x + "&t1=" + y + "&sel=" + x + "," + y; }, [s0, s1]);
    await page.waitForFunction((r) => document.getElementById("pauses").dataset.range === r,
                               s0 + "," + s1, { timeout: 60000 });
    compare("selection " + s0 + ".." + s1, await rows(page), want, await exactShown(page));
});
