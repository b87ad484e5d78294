// flame.js: the cost-centre flame graph of the whole run, or of the
// timeline's selection, from serve's /api/profile?format=tree (tools/
// timeline/aggr.h: the PROF_SAMPLE_COST_CENTRE ticks of a window by
// stack).  The root is at the top, each row a stack level, each frame as
// wide as its samples (left-heavy: a frame's children widest first).  The
// RTS's own cost centres (GC, IDLE, SYSTEM, ...) are counted beside the
// graph unless the toggle puts them in it (rts=include).  Hover says a
// frame's place in the source and its samples; a click zooms into it (the
// breadcrumb goes back); the search highlights matching frames.  The
// link downloads speedscope's file of the very range and setting shown.
// The graph is also listed, frame by frame, in a table whose rows carry
// what each frame holds and where it is drawn (data-*: for tests, screen
// readers and the curious).  A whole run's graph follows a live stream.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const cv = $("flame");
  if (!cv || !window.elsZoom) return;
  const z = window.elsZoom;
  const ROW = 18, LIST_MAX = 5000;
  const RTS_KINDS = ["GC", "IDLE", "SYSTEM", "OVERHEAD_of", "DONT_CARE"];
  const box = $("flame-box");
  let sel = z.selection(), include = false, query = "";
  let tree = null;           // the answer shown, made into nodes
  let zoomPath = [];         // the zoomed frame's path of frame keys
  let rects = [];            // [x0, x1, row, node] as drawn

  const fmtS = (ns) => (ns / 1e9).toFixed(6) + " s";
  const pct = (n, d) => (d ? (100 * n / d).toFixed(1) : "0.0") + "%";
  const key = (f) => f.name + "\u0000" + f.module + "\u0000" + f.src;

  // The answer's nodes as a tree: children widest first (then by name),
  // a node's total and self as serve counted them.
  function build(p) {
    const nodes = p.nodes.map(([parent, frame, self, total]) => ({
      parent: parent, frame: frame < 0 ? null : p.frames[frame], self: self, total: total,
      children: [], depth: 0,
    }));
    for (let i = 1; i < nodes.length; i++) nodes[nodes[i].parent].children.push(nodes[i]);
    const order = (n) => {
      n.children.sort((a, b) => b.total - a.total || (a.frame.name < b.frame.name ? -1 : a.frame.name > b.frame.name ? 1 : 0));
      n.children.forEach((c) => { c.depth = n.depth + 1; c.up = n; order(c); });
    };
    order(nodes[0]);
    let depth = 0;
    nodes.forEach((n) => { depth = Math.max(depth, n.depth); });
    return { p: p, root: nodes[0], nodes: nodes, depth: depth };
  }

  // The node that zoomPath names, or the deepest of it still there.
  function zoomed() {
    let n = tree.root;
    for (const k of zoomPath) {
      const c = n.children.find((c) => key(c.frame) === k);
      if (!c) break;
      n = c;
    }
    return n;
  }
  const pathOf = (n) => { const v = []; for (; n.up; n = n.up) v.unshift(n); return v; };
  const matches = (n) => query && n.frame &&
    (n.frame.name.toLowerCase().includes(query) || n.frame.module.toLowerCase().includes(query));

  function colour(n) {
    if (matches(n)) return "#d63af9";
    let h = 0;
    for (const c of n.frame.module) h = (h * 31 + c.charCodeAt(0)) >>> 0;
    let g = 0;
    for (const c of n.frame.name) g = (g * 31 + c.charCodeAt(0)) >>> 0;
    return "hsl(" + (h % 50 + 5) + "," + (65 + g % 20) + "%," + (55 + (g >> 5) % 15) + "%)";
  }

  // Draw: the zoomed node fills the width; its ancestors lie above it,
  // full width and grey.  A frame from x0 to x1 (whole pixels) fills
  // x0 .. x1-2, so each frame's right edge is one background pixel.
  function draw() {
    const dpr = window.devicePixelRatio || 1;
    const W = Math.max(200, Math.floor(cv.clientWidth || 1000));
    const zn = zoomed();
    let deepest = zn.depth;
    (function d(n) { deepest = Math.max(deepest, n.depth); n.children.forEach(d); })(zn);
    const rows = deepest + 1;
    cv.width = W * dpr;
    cv.height = rows * ROW * dpr;
    cv.style.height = rows * ROW + "px";
    const ctx = cv.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, W, rows * ROW);
    ctx.font = "11px system-ui, sans-serif";
    ctx.textBaseline = "alphabetic";
    rects = [];
    const rect = (n, x0, x1, fill, label) => {
      const y = n.depth * ROW;
      ctx.fillStyle = fill;
      ctx.fillRect(x0, y, x1 - x0 - 1, ROW - 1);
      if (x1 - x0 > 30) {
        ctx.save();
        ctx.beginPath();
        ctx.rect(x0, y, x1 - x0 - 4, ROW);
        ctx.clip();
        ctx.fillStyle = "#222";
        ctx.fillText(label, x0 + 3, y + 13);
        ctx.restore();
      }
      rects.push([x0, x1, n.depth, n]);
      n.drawn = [x0, n.depth * ROW, x1 - x0 - 1, ROW - 1];
    };
    tree.nodes.forEach((n) => { n.drawn = null; });
    const all = tree.root;
    const rootLabel = "all: " + all.total + " samples";
    for (const a of [all].concat(pathOf(zn)).slice(0, zn.depth))
      rect(a, 0, W, "#d8dbe2", a === all ? rootLabel : a.frame.name);
    const T = zn.total;
    (function place(n, a) {
      const x0 = Math.round((a * W) / T), x1 = Math.round(((a + n.total) * W) / T);
      if (x1 - x0 < 2) return;
      rect(n, x0, x1, n === all ? "#c9ccd4" : colour(n), n === all ? rootLabel : n.frame.name);
      let c = a;
      for (const k of n.children) { place(k, c); c += k.total; }
    })(zn, 0);
    box.dataset.zoom = zoomPath.length ? zn.frame.name : "";
    crumbs(zn);
    list();
    searchNote();
  }

  function crumbs(zn) {
    const el = $("flame-crumbs");
    const parts = [];
    const go = (path, text, title) => {
      const b = document.createElement("button");
      b.textContent = text;
      b.title = title;
      b.addEventListener("click", () => { zoomPath = path; draw(); });
      return b;
    };
    parts.push(go([], zoomPath.length ? "reset" : "all", "the whole graph"));
    const path = pathOf(zn);
    path.forEach((n, i) => {
      parts.push(document.createTextNode(" \u203a "));
      parts.push(go(path.slice(0, i + 1).map((m) => key(m.frame)), n.frame.name, n.frame.module + " " + n.frame.src));
    });
    el.replaceChildren(...parts);
  }

  // Every frame as a table row (LIST_MAX of them at most, widest first
  // within a parent, depth first): its path from the root and samples,
  // and where it is drawn.
  function list() {
    const rows = [];
    const head = document.createElement("tr");
    ["frame", "module", "source", "samples", "self"].forEach((h) => {
      const th = document.createElement("th"); th.textContent = h; head.append(th);
    });
    const T = tree.root.total;
    (function walk(n, path) {
      if (rows.length >= LIST_MAX) return;
      const tr = document.createElement("tr");
      tr.className = "frame";
      const f = n.frame || { name: "all", module: "", src: "" };
      tr.dataset.path = JSON.stringify(path);
      tr.dataset.name = f.name; tr.dataset.module = f.module; tr.dataset.src = f.src;
      tr.dataset.total = n.total; tr.dataset.self = n.self; tr.dataset.depth = n.depth;
      if (n.drawn) [tr.dataset.x, tr.dataset.y, tr.dataset.w, tr.dataset.h] = n.drawn;
      [f.name, f.module, f.src, n.total + " (" + pct(n.total, T) + ")", String(n.self)].forEach((t, i) => {
        const td = document.createElement("td");
        td.textContent = t;
        if (i === 0) td.style.paddingLeft = n.depth + "em";
        tr.append(td);
      });
      rows.push(tr);
      for (const c of n.children) walk(c, path.concat([[c.frame.name, c.frame.module]]));
    })(tree.root, []);
    $("flame-list").replaceChildren(head, ...rows);
    $("flame-list-note").textContent = rows.length >= LIST_MAX
      ? "the first " + LIST_MAX + " frames of " + (tree.nodes.length) : tree.nodes.length + " frames";
  }

  function searchNote() {
    if (!query) { $("flame-match").textContent = ""; return; }
    let n = 0;
    (function walk(x) { if (matches(x)) { n += x.total; return; } x.children.forEach(walk); })(tree.root);
    $("flame-match").textContent = n + " samples in matching frames (" + pct(n, tree.root.total) + ")";
  }

  function rtsCounts(p) {
    const all = p.samples;
    const head = document.createElement("tr");
    const th = document.createElement("th");
    th.colSpan = 3;
    th.textContent = "the RTS's own cost centres" + (p.rts_included ? " (in the graph)" : " (apart)");
    head.append(th);
    $("flame-rts-counts").replaceChildren(head, ...RTS_KINDS.map((k) => {
      const tr = document.createElement("tr");
      tr.dataset.kind = k;
      tr.dataset.samples = p.rts[k];
      [k, String(p.rts[k]), pct(p.rts[k], all)].forEach((t, i) => {
        const c = document.createElement(i ? "td" : "th"); c.textContent = t; tr.append(c);
      });
      return tr;
    }));
  }

  // A run without samples says why, and what to run it with.
  async function empty(p) {
    let why;
    if (!z.info || !z.info.aggr || z.info.aggr.ticks === 0) {
      let rts = "";
      try { rts = ((await (await fetch("api/state")).json()).program || {}).rts || ""; } catch (e) { /* unknown */ }
      const profiled = /rts\w*_p\b/.test(rts);
      const unknown = !/rts\w*_/.test(rts);
      why = "This run has no cost-centre samples" + (unknown ? "" : profiled
        ? ": the program is profiled but was not run with +RTS -p (run it with +RTS -p and the eventlog on)"
        : ": the program is not profiled (build it with -prof, e.g. ghc -prof -fprof-auto -eventlog, and run it with +RTS -p)");
      if (unknown) why += ": build the program with -prof (e.g. -prof -fprof-auto) and run it with +RTS -p";
    } else {
      why = "No cost-centre samples " + (sel ? "in the selection" : "in this range") +
        (p.samples ? " outside the RTS's own cost centres (the toggle shows them)" : "");
    }
    $("flame-empty").textContent = why;
  }

  async function show(p) {
    tree = build(p);
    const range = sel ? "the selection " + fmtS(p.t0) + " .. " + fmtS(p.t1) : "the whole run (" + fmtS(p.t0) + " .. " + fmtS(p.t1) + ")";
    $("flame-title").textContent = "Cost centres of " + range + ": " + tree.root.total + " samples" +
      (p.rts_included ? " (the RTS's own included)" : "");
    box.dataset.range = sel ? sel.join(",") : "all";
    box.dataset.rts = p.rts_included ? "include" : "apart";
    box.dataset.samples = tree.root.total;
    box.dataset.t0 = p.t0; box.dataset.t1 = p.t1;
    $("flame-other").textContent = p.other ? p.other + " samples of stacks past serve's table are not drawn" : "";
    rtsCounts(p);
    const a = $("flame-speedscope");
    a.href = "api/profile?format=speedscope&t0=" + p.t0 + "&t1=" + p.t1 + (include ? "&rts=include" : "");
    a.download = "profile-" + p.t0 + "-" + p.t1 + ".speedscope.json";
    const none = tree.root.total === 0;
    cv.hidden = none;
    if (none) await empty(p); else $("flame-empty").textContent = "";
    box.dataset.empty = none ? "yes" : "no";
    draw();
  }

  async function load(s) {
    sel = s;
    await show(await z.getJSON("api/profile?format=tree" + (sel ? "&t0=" + sel[0] + "&t1=" + sel[1] : "") +
                               (include ? "&rts=include" : "")));
    $("flame-status").textContent = "";
  }

  function at(ev) {
    const r = cv.getBoundingClientRect();
    const x = ev.clientX - r.left, row = Math.floor((ev.clientY - r.top) / ROW);
    return rects.find(([x0, x1, d]) => d === row && x >= x0 && x < x1 - 1);
  }
  cv.addEventListener("mousemove", (ev) => {
    const h = tree && at(ev);
    if (!h) { $("flame-hover").textContent = ""; return; }
    const n = h[3], T = tree.root.total;
    $("flame-hover").textContent = n.frame
      ? n.frame.name + "  " + n.frame.module + "  " + n.frame.src + ": " + n.total + " samples (" +
        pct(n.total, T) + " of the " + T + " in the graph), " + n.self + " self"
      : "all: " + T + " samples";
  });
  cv.addEventListener("mouseleave", () => { $("flame-hover").textContent = ""; });
  cv.addEventListener("click", (ev) => {
    const h = tree && at(ev);
    if (!h) return;
    zoomPath = pathOf(h[3]).map((n) => key(n.frame));
    draw();
  });
  $("flame-rts").addEventListener("change", (ev) => { include = ev.target.checked; reload(); });
  $("flame-search").addEventListener("input", (ev) => {
    query = ev.target.value.trim().toLowerCase();
    if (tree) draw();
  });
  window.addEventListener("resize", () => { if (tree) draw(); });
  const reload = z.watch(load, $("flame-status"), "cost centres");
})();
