// heap.js: the heap profile by band over time, as eventlog2html draws
// it, from serve's /api/heap (tools/timeline/aggr.h: every census of the
// range, each band's bytes, named as `dump --hp` names them), over the
// whole run or the timeline's selection: stacked, normalised (each
// census 100 %) or one line per band; bands ranked by size (at the
// census under the pointer, else the range's last) or by growth over the
// range (a leak's signature), each with its sparkline; census times
// ticked under the chart, markers (/api/timeline's) drawn over it; a
// click on a band shows its series alone.  The table under "table"
// lists every census and band with exact bytes.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const cv = $("heap-chart");
  if (!cv || !window.elsZoom) return;
  const z = window.elsZoom;
  const BANDS = 64, PAD_L = 70, PAD_B = 18;
  const st = { form: "stacked", order: "size", solo: null, hover: -1, sel: null,
               data: null, markers: [], shownFor: null };
  window.elsHeap = st;

  const colour = (i) => "hsl(" + ((i * 47) % 360) + ",60%," + (i % 2 ? "58%" : "45%") + ")";
  const fmtB = (n) => {
    const u = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (Math.abs(n) >= 1024 && i < 4) { n /= 1024; i++; }
    return (i ? n.toFixed(1) : String(n)) + " " + u[i];
  };
  const sec = (ns) => (ns / 1e9).toFixed(6) + " s";

  // Bands in the order asked: by growth as the answer ranks them; by
  // size at the hovered census (else the last).
  function ranked() {
    const d = st.data;
    const idx = d.bands.map((b, i) => i);
    if (st.order === "size") {
      const c = st.hover >= 0 ? st.hover : d.times.length - 1;
      idx.sort((a, b) => d.bands[b].series[c] - d.bands[a].series[c] || a - b);
    }
    return idx;
  }

  // --- layout ----------------------------------------------------------------
  const X = () => ({ l: PAD_L, w: cv.width - PAD_L - 8, t0: st.data.t0, t1: st.data.t1 });
  const xOf = (t) => { const x = X(); return x.l + ((t - x.t0) * x.w) / Math.max(1, x.t1 - x.t0); };
  const H = () => cv.height - PAD_B - 4;
  // The values drawn, per band (in the bands' own order) per census.
  function drawn() {
    const d = st.data, n = d.times.length;
    const bands = st.solo !== null ? [st.solo] : d.bands.map((b, i) => i);
    const top = new Array(n).fill(0), lo = {}, hi = {};
    const tot = d.times.map((t, c) => bands.reduce((s, i) => s + d.bands[i].series[c], 0));
    let max = 1;
    for (const i of bands) {
      lo[i] = []; hi[i] = [];
      for (let c = 0; c < n; c++) {
        let v = d.bands[i].series[c];
        if (st.form === "normalised") v = tot[c] ? v / tot[c] : 0;
        const base = st.form === "lines" ? 0 : top[c];
        lo[i].push(base); hi[i].push(base + v);
        if (st.form !== "lines") top[c] += v;
        max = Math.max(max, base + v);
      }
    }
    if (st.form === "normalised") max = 1;
    return { bands, lo, hi, max };
  }

  function draw() {
    const d = st.data;
    cv.width = cv.clientWidth || 1200;
    const ctx = cv.getContext("2d");
    ctx.clearRect(0, 0, cv.width, cv.height);
    ctx.font = "11px sans-serif";
    if (!d || !d.times.length) {
      ctx.fillStyle = "#556";
      ctx.fillText(d && d.censuses_total ? "no census in this range" :
        "no heap census: run the program with +RTS -hT (-hc, -hm, -hd or -hy when it is profiled) and -l",
        PAD_L, 30);
      return;
    }
    const g = drawn(), h = H(), yOf = (v) => 4 + h - (v * h) / g.max;
    st.layout = { max: g.max, top: 4, height: h, left: PAD_L, width: X().w };
    // axis
    ctx.fillStyle = "#556";
    ctx.textAlign = "right";
    for (let k = 0; k <= 4; k++) {
      const v = (g.max * k) / 4, y = yOf(v);
      ctx.fillText(st.form === "normalised" ? (25 * k) + " %" : fmtB(Math.round(v)), PAD_L - 4, y + 4);
      const gy = Math.round(y) + 0.5;           // one crisp row
      ctx.strokeStyle = "#eef"; ctx.beginPath(); ctx.moveTo(PAD_L, gy); ctx.lineTo(cv.width - 8, gy); ctx.stroke();
    }
    ctx.textAlign = "left";
    const xs = d.times.map(xOf);
    for (const i of g.bands) {
      ctx.fillStyle = ctx.strokeStyle = colour(i);
      ctx.beginPath();
      if (st.form === "lines") {
        xs.forEach((x, c) => (c ? ctx.lineTo(x, yOf(g.hi[i][c])) : ctx.moveTo(x, yOf(g.hi[i][c]))));
        ctx.lineWidth = 1.5; ctx.stroke(); ctx.lineWidth = 1;
        if (xs.length === 1) ctx.fillRect(xs[0] - 1, yOf(g.hi[i][0]) - 1, 3, 3);
      } else {
        // A step chart: a census holds until the next one.
        const edge = (c) => (c + 1 < xs.length ? xs[c + 1] : Math.max(xs[c] + 1, cv.width - 8));
        ctx.moveTo(xs[0], yOf(g.lo[i][0]));
        for (let c = 0; c < xs.length; c++) { ctx.lineTo(xs[c], yOf(g.hi[i][c])); ctx.lineTo(edge(c), yOf(g.hi[i][c])); }
        for (let c = xs.length - 1; c >= 0; c--) { ctx.lineTo(edge(c), yOf(g.lo[i][c])); ctx.lineTo(xs[c], yOf(g.lo[i][c])); }
        ctx.closePath(); ctx.fill();
      }
    }
    // census ticks
    ctx.fillStyle = "#334";
    for (const x of xs) ctx.fillRect(Math.round(x), 4 + h + 2, 1, 5);
    // markers: lines over the chart, or only ticks along its top when
    // so many that lines would hide it (the pointer names each)
    const few = st.markers.length <= 60;
    ctx.strokeStyle = few ? "rgba(196,160,0,.8)" : "rgba(160,120,0,.9)";
    for (const [t] of st.markers) {
      const x = Math.round(xOf(t)) + 0.5;
      ctx.beginPath(); ctx.moveTo(x, 4); ctx.lineTo(x, few ? 4 + h : 10); ctx.stroke();
    }
    if (st.hover >= 0) {
      ctx.strokeStyle = "#000";
      const x = Math.round(xs[st.hover]) + 0.5;
      ctx.beginPath(); ctx.moveTo(x, 4); ctx.lineTo(x, 4 + h); ctx.stroke();
    }
  }

  // --- legend and table ------------------------------------------------------
  function spark(series, i) {
    const c = document.createElement("canvas");
    c.width = 90; c.height = 18; c.className = "spark";
    const x = c.getContext("2d"), max = Math.max(1, ...series);
    x.strokeStyle = colour(i);
    x.beginPath();
    series.forEach((v, k) => {
      const px = series.length > 1 ? (k * 89) / (series.length - 1) : 45, py = 17 - (v * 16) / max;
      k ? x.lineTo(px, py) : x.moveTo(px, py);
    });
    x.stroke();
    return c;
  }
  function legend() {
    const d = st.data, c = st.hover >= 0 ? st.hover : d.times.length - 1;
    const head = document.createElement("tr");
    ["", "band", st.hover >= 0 ? "at " + sec(d.times[c]) : "last census", "growth", "over the range"].forEach((h) => {
      const th = document.createElement("th"); th.textContent = h; head.append(th);
    });
    const rows = ranked().map((i) => {
      const b = d.bands[i], tr = document.createElement("tr");
      tr.className = "band" + (st.solo === i ? " solo" : "");
      tr.dataset.band = b.name; tr.dataset.index = i;
      tr.dataset.bytes = b.series[c]; tr.dataset.growth = b.growth;
      const k = document.createElement("td"); const sw = document.createElement("i");
      sw.className = "k"; sw.style.background = colour(i); k.append(sw);
      const n = document.createElement("th"); n.textContent = b.name;
      const v = document.createElement("td"); v.textContent = fmtB(b.series[c]);
      const gr = document.createElement("td"); gr.textContent = (b.growth >= 0 ? "+" : "-") + fmtB(Math.abs(b.growth));
      const sp = document.createElement("td"); sp.append(spark(b.series, i));
      tr.append(k, n, v, gr, sp);
      tr.addEventListener("click", () => solo(i));
      return tr;
    });
    $("heap-bands").replaceChildren(head, ...rows);
    $("heap-more").textContent = (d.bands_more ? d.bands_more + " smaller bands not drawn; " : "") +
      (d.sampling === "every" ? "" : "one census per pixel column shown (zoom in for all); ") +
      (d.lost ? d.lost + " records lost from the side files; " : "");
  }
  function table() {
    const d = st.data, tb = $("heap-table");
    if (!$("heap-show-table").classList.contains("on")) { tb.replaceChildren(); return; }
    const head = document.createElement("tr");
    const th0 = document.createElement("th"); th0.textContent = "census (s)"; head.append(th0);
    d.bands.forEach((b) => { const th = document.createElement("th"); th.textContent = b.name; head.append(th); });
    const rows = d.times.map((t, c) => {
      const tr = document.createElement("tr");
      tr.dataset.t = t;
      const td0 = document.createElement("th"); td0.textContent = sec(t); tr.append(td0);
      d.bands.forEach((b) => {
        const td = document.createElement("td");
        td.dataset.band = b.name; td.dataset.bytes = b.series[c]; td.textContent = b.series[c];
        tr.append(td);
      });
      return tr;
    });
    tb.replaceChildren(head, ...rows);
  }
  function render() {
    $("heap-title").textContent = "Heap by band, " + (st.sel ? "in the selection" : "whole run") +
      (st.data && st.data.breakdown ? " (" + st.data.breakdown + ")" : "") +
      (st.data ? ": " + st.data.times.length + " censuses" : "");
    draw();
    if (st.data && st.data.times.length) { legend(); table(); }
    else { $("heap-bands").replaceChildren(); $("heap-table").replaceChildren(); $("heap-more").textContent = ""; }
    $("heap-solo").textContent = st.solo !== null && st.data ? "showing " + st.data.bands[st.solo].name +
      " alone (click it again or Esc: every band)" : "";
  }
  function solo(i) { st.solo = st.solo === i ? null : i; render(); }

  // --- data ----------------------------------------------------------------------
  // One answer: the range's censuses in the order asked, and the
  // timeline's markers over the same range.  st.shownFor says which.
  async function load(sel) {
    const w = sel ? "&t0=" + sel[0] + "&t1=" + sel[1] : "", order = st.order;
    const px = Math.max(1, Math.min(8192, X0()));
    const d = await z.getJSON("api/heap?order=" + order + "&bands=" + BANDS + "&px=" + px + w);
    const markers = d.times.length ? (await z.getJSON("api/timeline?t0=" + d.t0 + "&t1=" + d.t1 +
                                                      "&px=" + px + "&threads=1")).markers : [];
    if (st.solo !== null && (!st.data || !d.bands[st.solo] || d.bands[st.solo].name !== st.data.bands[st.solo].name))
      st.solo = null;
    st.sel = sel;
    st.data = d; st.markers = markers; st.hover = -1; st.shownFor = w + "/" + order + "/";
    $("heap-status").textContent = "";
    render();
  }
  const X0 = () => (cv.clientWidth || 1200) - PAD_L - 8;

  cv.addEventListener("mousemove", (e) => {
    const d = st.data;
    if (!d || !d.times.length) return;
    const x = e.offsetX * (cv.width / cv.clientWidth);
    let best = 0;
    d.times.forEach((t, c) => { if (Math.abs(xOf(t) - x) < Math.abs(xOf(d.times[best]) - x)) best = c; });
    if (best !== st.hover) {
      st.hover = best;
      draw(); legend();
    }
    const m = st.markers.find(([t]) => Math.abs(xOf(t) - x) <= 2);
    $("heap-hover").textContent = "census at " + sec(d.times[best]) + ": " +
      ranked().map((i) => d.bands[i].name + " " + d.bands[i].series[best]).join(", ") +
      (m ? "; marker: " + m[2] : "");
  });
  cv.addEventListener("mouseleave", () => { st.hover = -1; $("heap-hover").textContent = ""; if (st.data) { draw(); legend(); } });
  cv.addEventListener("click", (e) => {
    // The band under the pointer (stacked and normalised forms).
    const d = st.data;
    if (!d || st.hover < 0 || st.form === "lines" || !st.layout) return;
    const g = drawn(), y = e.offsetY * (cv.height / cv.clientHeight);
    const v = ((4 + st.layout.height - y) * g.max) / st.layout.height;
    const hit = g.bands.find((i) => v >= g.lo[i][st.hover] && v < g.hi[i][st.hover]);
    if (hit !== undefined) solo(hit);
  });
  window.addEventListener("keydown", (e) => { if (e.key === "Escape" && st.solo !== null) solo(st.solo); });
  const choose = (ids, on) => ids.forEach((id) => $(id).classList.toggle("on", id === on));
  [["heap-stacked", "stacked"], ["heap-normalised", "normalised"], ["heap-lines", "lines"]].forEach(([id, f]) =>
    $(id).addEventListener("click", () => { st.form = f; choose(["heap-stacked", "heap-normalised", "heap-lines"], id); render(); }));
  [["heap-by-size", "size"], ["heap-by-growth", "growth"]].forEach(([id, o]) =>
    $(id).addEventListener("click", () => { st.order = o; choose(["heap-by-size", "heap-by-growth"], id); reload(); }));
  $("heap-show-table").addEventListener("click", () => { $("heap-show-table").classList.toggle("on"); if (st.data) table(); });
  const reload = z.watch(load, $("heap-status"), "heap");
})();
