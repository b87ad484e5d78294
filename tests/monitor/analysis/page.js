// page.js: what the page drivers (tests/monitor/zoom.js and
// tests/monitor/analysis/*.js) share:
// headless Debian chromium through playwright-core, the "ok"/"FAIL"
// lines they print, ghc-events show's event lines, and a selection made
// with the mouse on the timeline.
"use strict";
const fs = require("fs");

const bad = [];
const ok = (s) => console.log("ok " + s);
const fail = (s) => { bad.push(s); console.log("FAIL " + s); };

// The event lines of `ghc-events show`'s output in path: [[t, text]...].
function showLines(path) {
  const out = [];
  let on = false;
  for (const l of fs.readFileSync(path, "utf8").split("\n")) {
    if (l === "Events:") { on = true; continue; }
    const m = on && /^\s*(\d+): (.*)$/.exec(l);
    if (m) out.push([Number(m[1]), m[2]]);
  }
  return out;
}

// run(top, body): body(page) in a fresh headless chromium page
// (1400x1000), then exit 0 when nothing failed, 1 else (an exception or
// a page error fails).
function run(top, body) {
  const { chromium } = require(top + "/tests/node/node_modules/playwright-core");
  (async () => {
    const browser = await chromium.launch({ executablePath: "/usr/bin/chromium",
      args: ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--no-first-run"] });
    try {
      const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
      page.on("pageerror", (e) => fail("page error: " + e.message));
      await body(page);
    } finally {
      await browser.close();
    }
    process.exit(bad.length ? 1 : 0);
  })().catch((e) => { console.log("FAIL " + (e.stack || e)); process.exit(1); });
}

// A shift-drag on the timeline at height y (px into the canvas) from the
// fraction a of its time area to b, as a user selects; the selection's
// [t0, t1] as the URL's fragment then says.
async function selectByDrag(page, a, b, y) {
  await page.locator("#zoom").scrollIntoViewIfNeeded();
  const box = await page.locator("#zoom").boundingBox();
  const lay = await page.evaluate(() => ({ left: window.elsZoom.left, width: window.elsZoom.width }));
  await page.keyboard.down("Shift");
  await page.mouse.move(box.x + lay.left + lay.width * a, box.y + y);
  await page.mouse.down();
  await page.mouse.move(box.x + lay.left + lay.width * (a + b) / 2, box.y + y, { steps: 4 });
  await page.mouse.move(box.x + lay.left + lay.width * b, box.y + y, { steps: 4 });
  await page.mouse.up();
  await page.keyboard.up("Shift");
  await page.waitForFunction(() => /[#&]sel=\d+,\d+/.test(location.hash), null, { timeout: 10000 })
    .catch(async () => { throw new Error("no selection in the URL after a shift-drag: " + await page.evaluate(() => location.hash)); });
  return (await page.evaluate(() => new URLSearchParams(location.hash.slice(1)).get("sel"))).split(",").map(Number);
}

module.exports = { ok, fail, showLines, run, selectByDrag };
