// pauses.js: the longest GC pauses of the whole run, or of the
// timeline's selection, from serve's /api/pauses (tools/timeline/
// pauses.h: each pause's GC_START..GC_END on the HEC that led it,
// longest first, exact or saying it is not).  A row opens 300 ms of the
// timeline around its pause, the pause selected: the way to the worst
// moment of a day-long run or a 2 GB file in one click.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const tb = $("pauses");
  if (!tb || !window.elsZoom) return;
  const z = window.elsZoom;
  const N = 10, AROUND = 300e6;
  let sel = null;

  const ms = (ns) => (ns / 1e6).toFixed(3) + " ms";
  const sec = (ns) => (ns / 1e9).toFixed(6) + " s";

  function show(p) {
    tb.dataset.range = sel ? sel.join(",") : "all";
    $("pauses-title").textContent = "Longest GC pauses " + (sel ? "in the selection" : "of the whole run") +
      (p.pauses.length ? "" : ": none");
    $("pauses-note").textContent = p.exact ? "" :
      "a burst of long pauses in one stretch of the stream may hide one of these ranks: select a shorter range";
    const head = document.createElement("tr");
    ["#", "ended at", "pause", "HEC"].forEach((h) => {
      const th = document.createElement("th"); th.textContent = h; head.append(th);
    });
    tb.replaceChildren(head, ...p.pauses.map(([a, b, cap], i) => {
      const tr = document.createElement("tr");
      tr.className = "pause";
      tr.dataset.a = a; tr.dataset.b = b; tr.dataset.cap = cap;
      tr.title = "open 300 ms of the timeline around this pause, the pause selected";
      [String(i + 1), sec(b), ms(b - a), String(cap)].forEach((t) => {
        const td = document.createElement("td"); td.textContent = t; tr.append(td);
      });
      tr.addEventListener("click", () => {
        z.open(a, b, AROUND);
        $("zoom-box").scrollIntoView({ block: "start" });
      });
      return tr;
    }));
  }

  z.watch(async (s) => {
    sel = s;
    show(await z.getJSON("api/pauses?n=" + N + (sel ? "&t0=" + sel[0] + "&t1=" + sel[1] : "")));
  }, $("pauses-note"), "pauses");
})();
