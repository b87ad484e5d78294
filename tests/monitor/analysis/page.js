// page.js: what the page drivers (tests/monitor/zoom.js and
// tests/monitor/analysis/*.js) share: headless Debian chromium through
// playwright-core, the "ok"/"FAIL" lines they print, and ghc-events
// show's event lines.
"use strict";
const fs = require("fs");

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

// run(top, body): body(page, report) in a fresh headless chromium page
// (1400x1000); exits 0 when nothing failed, 1 else (an exception fails).
// report.ok(s) and report.fail(s) print a line; a page error fails.
function run(top, body) {
  const { chromium } = require(top + "/tests/node/node_modules/playwright-core");
  const bad = [];
  const report = {
    ok: (s) => console.log("ok " + s),
    fail: (s) => { bad.push(s); console.log("FAIL " + s); },
  };
  (async () => {
    const browser = await chromium.launch({ executablePath: "/usr/bin/chromium",
      args: ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--no-first-run"] });
    try {
      const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
      page.on("pageerror", (e) => report.fail("page error: " + e.message));
      await body(page, report);
    } finally {
      await browser.close();
    }
    process.exit(bad.length ? 1 : 0);
  })().catch((e) => { console.log("FAIL " + (e.stack || e)); process.exit(1); });
}

module.exports = { showLines, run };
