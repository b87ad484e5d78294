// zoom.js: the page's zoomable timeline, from the whole run down to
// microseconds, drawn on one canvas from serve's /api/timeline (what ran
// where in the view, one answer per pixel column), with the view's or
// the selection's events from /api/events and a selection's figures from
// /api/range (tools/timeline/query.h says what they answer).  Wheel:
// zoom around the pointer; drag: pan; shift-drag or a drag on the time
// ruler: select.  The URL's fragment holds the view and the selection
// (#t0=NS&t1=NS&sel=A,B, ns of the run), so a reload or a shared link
// opens the same view.  A live stream's whole-run view follows its end
// until the user zooms.  window.elsZoom exposes the view and the layout
// (for tests and the curious), and open(A, B[, SPAN]), which shows the
// instant A..B selected with a margin either side, or SPAN ns around it
// (the durations table's and the pauses list's rows).
// Each time the selection changes, window gets an "els-selection" event
// whose detail is the selection ([t0, t1] in ns) or null: the heap,
// durations and cost-centre views follow it.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const cv = $("zoom");
  if (!cv) return;
  const L = 120;                 // the lanes' names, left of the time area
  const RULER = 22, ACT = 40, HEC = 16, SPARK = 10, HEAP = 36, MARK = 18, SPAN = 10, THR = 12;
  const COLORS = { gc: "#e08a00", idle: "#f0f1f4", running: "#2e9d4f", runnable: "#a8d5b5",
                   blocked: "#d9534f", finished: "#999999", marker: "#c4a000" };
  const z = {
    info: null, view: null, sel: null, follow: "all",
    tl: null, drawnView: null, seq: 0, lanes: [], left: L, width: 0,
    events: null, range: null, eventsFor: null, rangeFor: null,
  };
  window.elsZoom = z;

  const fmtT = (ns, span) => {
    // Seconds with as many decimals as the view's span needs (to 1 ns).
    const d = Math.max(0, Math.min(9, Math.ceil(-Math.log10(Math.max(1, span) / 1e9)) + 2));
    return (ns / 1e9).toFixed(d) + " s";
  };
  const fmtDur = (ns) => ns >= 1e9 ? (ns / 1e9).toFixed(3) + " s" : ns >= 1e6 ? (ns / 1e6).toFixed(3) + " ms"
    : ns >= 1e3 ? (ns / 1e3).toFixed(3) + " \u00b5s" : ns + " ns";
  const hue = (id) => "hsl(" + ((id * 137) % 360) + ",55%,45%)";

  // Time <-> pixel over the view: x = left + (t - t0) * width / (t1 - t0).
  const xOf = (t) => z.left + ((t - z.view[0]) * z.width) / (z.view[1] - z.view[0]);
  const tOf = (x) => z.view[0] + ((x - z.left) * (z.view[1] - z.view[0])) / z.width;

  // --- the view and the fragment -------------------------------------------
  function readHash() {
    const h = new URLSearchParams(location.hash.slice(1));
    const t0 = Number(h.get("t0")), t1 = Number(h.get("t1"));
    if (!h.has("t0") || !h.has("t1") || !(t1 > t0)) return false;
    z.view = [Math.round(t0), Math.round(t1)];
    z.follow = null;
    const s = (h.get("sel") || "").split(",").map(Number);
    z.sel = s.length === 2 && s[1] > s[0] ? [Math.round(s[0]), Math.round(s[1])] : null;
    return true;
  }
  function writeHash() {
    if (!z.view) return;
    const h = new URLSearchParams(location.hash.slice(1));
    h.delete("t0"); h.delete("t1"); h.delete("sel");
    const keep = h.toString();
    let s = "t0=" + z.view[0] + "&t1=" + z.view[1] + (z.sel ? "&sel=" + z.sel[0] + "," + z.sel[1] : "");
    if (keep) s += "&" + keep;
    if (location.hash.slice(1) !== s) history.replaceState(null, "", "#" + s);
  }
  function setView(t0, t1, follow) {
    const min = 1000;                                   // 1 us at the deepest
    if (t1 - t0 < min) { const c = (t0 + t1) / 2; t0 = c - min / 2; t1 = c + min / 2; }
    if (t0 < 0) { t1 -= t0; t0 = 0; }                  // no time before the RTS started
    z.view = [Math.round(t0), Math.round(t1)];
    z.follow = follow || null;
    ["zoom-all", "zoom-last"].forEach((id) => $(id).classList.toggle("on",
      (id === "zoom-all" && z.follow === "all") || (id === "zoom-last" && z.follow === "last")));
    writeHash();
    schedule();
  }
  // Tell the views that follow the selection; only on a change.
  let toldSel = "";
  function tellSelection() {
    const key = z.sel ? z.sel[0] + "," + z.sel[1] : "";
    if (key === toldSel) return;
    toldSel = key;
    window.dispatchEvent(new CustomEvent("els-selection", { detail: z.sel ? z.sel.slice() : null }));
  }
  // open(a, b[, span]): a..b selected, in a view a third wider either
  // side, or span ns wide around it when that is wider.
  z.open = (a, b, span) => {
    let m = Math.max(500, Math.round((b - a) / 3));
    if (span && span > b - a + 2 * m) m = Math.round((span - (b - a)) / 2);
    z.sel = [Math.round(a), Math.round(b)];
    setView(a - m, b + m, null);
    tellSelection();
  };
  z.selection = () => (z.sel ? z.sel.slice() : null);
  function followView() {
    if (!z.info || !z.follow) return;
    const a = z.info.t_first, b = Math.max(z.info.t_last, a + 1000);
    if (z.follow === "all") setView(a, b, "all");
    else setView(Math.max(a, b - 30e9), b, "last");
  }

  // --- fetching ------------------------------------------------------------
  let timer = null;
  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(load, 40);
  }
  async function getJSON(url) {
    const r = await fetch(url);
    const j = await r.json();
    if (!r.ok) throw new Error(j.error || r.status);
    return j;
  }
  z.getJSON = getJSON;

  // watch(load, status, what): the page's views of a range (pauses,
  // durations, heap, cost centres) follow the selection and the stream
  // alike: load(sel) fetches and shows the whole run (sel null) or the
  // selection, one call at a time, when the selection or the run
  // changes, and while the range still grows (the whole run, or a
  // selection up to the stream's end) when events arrive, at most every
  // 2 s.  A failure is written into status, after what.  The function it
  // returns loads again at once (a setting of the view changed).
  z.watch = (load, status, what) => {
    let sel = z.selection(), busy = false, again = false, shown = null, last = 0;
    async function run(force) {
      const info = z.info;
      if (!info) return;
      if (busy) { again = again || force === true; return; }
      const key = (sel ? sel.join(",") : "all") + "/" + info.run;
      const want = key + (!sel || sel[1] >= info.t_last ? "/" + info.events : "");
      if (force !== true && (want === shown ||
          (shown && shown.startsWith(key + "/") && Date.now() - last < 2000))) return;
      busy = true;
      last = Date.now();
      try {
        await load(sel);
        shown = want;
      } catch (e) {
        status.textContent = what + ": " + e.message;
      } finally {
        busy = false;
      }
      if (again) { again = false; run(true); }
    }
    window.addEventListener("els-selection", (e) => { sel = e.detail; run(true); });
    setInterval(run, 1000);
    return () => run(true);
  };
  async function load() {
    if (!z.view) return;
    const seq = ++z.seq, [t0, t1] = z.view;
    fitCanvas();
    const px = Math.max(1, Math.min(8192, Math.floor(z.width)));
    try {
      const tl = await getJSON("api/timeline?t0=" + t0 + "&t1=" + t1 + "&px=" + px);
      if (seq !== z.seq) return;
      z.tl = tl;
      z.drawnView = [t0, t1];
      draw();
      await loadLists(seq);
    } catch (e) {
      $("zoom-status").textContent = "timeline: " + e.message;
    }
  }
  // The selection's figures and events, else the view's events.
  async function loadLists(seq) {
    const w = z.sel || z.view;
    const key = w[0] + "," + w[1];
    if (z.eventsFor !== key) {
      const ev = await getJSON("api/events?t0=" + w[0] + "&t1=" + w[1] + "&n=2000");
      if (seq !== z.seq) return;
      z.events = ev;
      z.eventsFor = key;
      showEvents(ev, !!z.sel);
    }
    if (z.sel && z.rangeFor !== key) {
      const r = await getJSON("api/range?t0=" + w[0] + "&t1=" + w[1]);
      if (seq !== z.seq) return;
      z.range = r;
      z.rangeFor = key;
      showRange(r);
    } else if (!z.sel) {
      z.range = null; z.rangeFor = null;
      $("zoom-range").replaceChildren();
      $("zoom-range-title").textContent = "Selection: none (shift-drag, or drag on the time ruler)";
    }
    $("zoom-status").textContent = "";
  }
  async function loadInfo() {
    try {
      const info = await getJSON("api/info");
      const fresh = !z.info || z.info.run !== info.run;
      const grew = !z.info || z.info.events !== info.events || z.info.t_last !== info.t_last;
      z.info = info;
      $("zoom-info").textContent = fmt(info.events) + " events, " + fmtDur(info.t_last - info.t_first) +
        (info.dropped.bytes ? "; " + fmt(info.dropped.bytes) + "B dropped from the spool (before " +
          fmtT(info.dropped.t_last, 1e6) + ")" : "") + (info.timeline_error ? "; " + info.timeline_error : "");
      if (!z.view) { if (!readHash()) z.follow = "all"; }
      if (z.follow && (grew || fresh || !z.tl)) followView();
      else if (fresh || !z.tl) schedule();
    } catch (e) {
      $("zoom-info").textContent = "timeline: " + e.message;
    }
  }
  const fmt = (n) => {
    const pre = ["", "k", "M", "G", "T"];
    let i = 0;
    while (Math.abs(n) >= 1000 && i < 4) { n /= 1000; i++; }
    return (i === 0 ? String(n) : n.toFixed(1)) + " " + pre[i];
  };

  // --- lists -----------------------------------------------------------------
  function showEvents(ev, ofSel) {
    $("zoom-events-title").textContent = (ofSel ? "Events in the selection" : "Events in the view") +
      ": " + ev.events.length + (ev.truncated || ev.events.length < ev.total ? " of " + ev.total + (ev.exact ? "" : " (estimate)") : "");
    const tb = $("zoom-events");
    tb.replaceChildren(...ev.events.map((e) => {
      const tr = document.createElement("tr");
      tr.dataset.t = e[0]; tr.dataset.cap = e[1];
      const a = document.createElement("td"); a.textContent = e[0];
      const b = document.createElement("td"); b.textContent = e[1] >= 0 ? "cap " + e[1] : "";
      const c = document.createElement("td"); c.textContent = e[2];
      tr.append(a, b, c);
      return tr;
    }));
  }
  function showRange(r) {
    $("zoom-range-title").textContent = "Selection " + fmtT(r.t0, r.t1 - r.t0) + " \u2013 " +
      fmtT(r.t1, r.t1 - r.t0) + " (" + fmtDur(r.t1 - r.t0) + (r.exact ? "" : ", from the summary: zoom in for exact figures") + ")";
    const rows = [
      ["gc-count", "collections", r.gc.count, r.gc.count],
      ["gc-total", "GC pauses, total", r.gc.total_ns, fmtDur(r.gc.total_ns)],
      ["gc-max", "GC pause, longest", r.gc.max_ns, fmtDur(r.gc.max_ns)],
      ["alloc", "allocated", r.alloc_bytes, fmt(r.alloc_bytes) + "B"],
      ["hec-run", "HEC time running", r.hec_ns.run, fmtDur(r.hec_ns.run)],
      ["hec-gc", "HEC time in GC", r.hec_ns.gc, fmtDur(r.hec_ns.gc)],
      ["hec-idle", "HEC time idle", r.hec_ns.idle, fmtDur(r.hec_ns.idle)],
    ];
    const trs = rows.map(([k, name, v, shown]) => {
      const tr = document.createElement("tr");
      tr.dataset.key = k; tr.dataset.value = v;
      const th = document.createElement("th"); th.textContent = name;
      const td = document.createElement("td"); td.textContent = shown;
      tr.append(th, td);
      return tr;
    });
    (r.threads || []).forEach((t) => {
      const tr = document.createElement("tr");
      tr.dataset.key = "thread"; tr.dataset.thread = t.id; tr.dataset.running = t.running_ns;
      tr.dataset.runnable = t.runnable_ns; tr.dataset.blocked = t.blocked_ns;
      tr.dataset.stops = JSON.stringify(t.stops);
      const th = document.createElement("th");
      th.textContent = "thread " + t.id + (t.label ? " (" + t.label + ")" : "");
      const td = document.createElement("td");
      td.textContent = "running " + fmtDur(t.running_ns) + ", runnable " + fmtDur(t.runnable_ns) +
        ", blocked " + fmtDur(t.blocked_ns) + "; stops: " +
        (Object.entries(t.stops).map(([k, n]) => k + " " + n).join(", ") || "none");
      tr.append(th, td);
      trs.push(tr);
    });
    $("zoom-range").replaceChildren(...trs);
  }

  // --- drawing ---------------------------------------------------------------
  function fitCanvas() {
    const w = cv.clientWidth || 1200;
    if (cv.width !== w) cv.width = w;
    z.left = L;
    z.width = Math.max(1, w - L - 4);
  }
  function layout(tl) {
    const lanes = [];
    let y = 0;
    const add = (name, h, extra) => { lanes.push(Object.assign({ name: name, y: y, h: h }, extra || {})); y += h + 2; };
    add("ruler", RULER);
    add("activity", ACT);
    tl.caps.forEach((c) => { add("HEC " + c.cap, HEC, { cap: c }); add("sparks " + c.cap, SPARK, { sparks: c }); });
    add("heap", HEAP);
    add("markers", MARK);
    const labels = [...new Set(tl.spans.map((s) => s[2]))].slice(0, 8);
    labels.forEach((l) => add("span " + l, SPAN, { span: l }));
    (tl.threads || []).forEach((t) => add("thread " + t.id, THR, { thread: t }));
    return [lanes, y];
  }
  function draw() {
    const tl = z.tl;
    const [lanes, height] = layout(tl);
    z.lanes = lanes;
    if (cv.height !== height) { cv.height = height; cv.style.height = height + "px"; }
    const ctx = cv.getContext("2d");
    ctx.clearRect(0, 0, cv.width, cv.height);
    ctx.font = "11px sans-serif";
    ctx.textBaseline = "middle";
    const span = z.view[1] - z.view[0], W = z.width, x0 = z.left;
    // Whole pixels: abutting segments abut, with no blended seam.
    const seg = (s, e) => {
      const a = Math.round(Math.max(x0, xOf(s))), b = Math.round(Math.min(x0 + W, xOf(e)));
      return [a, Math.max(b - a, 1)];
    };
    lanes.forEach((ln) => {
      ctx.fillStyle = "#445";
      const name = ln.thread ? (ln.thread.label ? ln.thread.label + " " : "") + "#" + ln.thread.id : ln.name;
      ctx.fillText(name.slice(0, 20), 2, ln.y + ln.h / 2);
      if (ln.name === "ruler") {
        ctx.fillStyle = "#e8eaf0"; ctx.fillRect(x0, ln.y, W, ln.h);
        const step = niceStep(span / Math.max(1, W / 110));
        ctx.fillStyle = "#334"; ctx.strokeStyle = "#889";
        for (let t = Math.ceil(z.view[0] / step) * step; t <= z.view[1]; t += step) {
          const x = xOf(t);
          ctx.fillRect(x, ln.y + ln.h - 6, 1, 6);
          ctx.fillText(fmtT(t, step * 10), x + 2, ln.y + 8);
        }
      } else if (ln.name === "activity") {
        const ncap = Math.max(1, tl.caps.length);
        ctx.fillStyle = "#f7f8fa"; ctx.fillRect(x0, ln.y, W, ln.h);
        for (let i = 0; i < tl.activity.length; i++) {
          const a = tl.activity[i] / ncap, g = tl.gc[i] / ncap;
          if (a > 0) { ctx.fillStyle = COLORS.running; ctx.fillRect(x0 + i, ln.y + ln.h * (1 - a), 1, ln.h * a); }
          if (g > 0) { ctx.fillStyle = COLORS.gc; ctx.fillRect(x0 + i, ln.y + ln.h * (1 - a - g), 1, ln.h * g); }
        }
      } else if (ln.cap) {
        ctx.fillStyle = COLORS.idle; ctx.fillRect(x0, ln.y, W, ln.h);
        ln.cap.segments.forEach((s) => {
          const [a, w] = seg(s[0], s[1]);
          if (s[2] === "run") { ctx.fillStyle = hue(s[3]); ctx.fillRect(a, ln.y, w, ln.h); }
          else if (s[2] === "gc") { ctx.fillStyle = COLORS.gc; ctx.fillRect(a, ln.y, w, ln.h); }
          else if (s[2] === "mixed") {
            const r = s[3], g = s[4];
            ctx.fillStyle = hue(s[5] || 0); ctx.fillRect(a, ln.y + ln.h * (1 - r), w, ln.h * r);
            ctx.fillStyle = COLORS.gc; ctx.fillRect(a, ln.y + ln.h * (1 - r - g), w, ln.h * g);
          }
        });
        if (tl.mode === "raw") {       // the thread's id on its bar, where it fits
          ctx.fillStyle = "#fff";
          ln.cap.segments.forEach((s) => {
            if (s[2] !== "run") return;
            const [a, w] = seg(s[0], s[1]);
            if (w > 30) ctx.fillText(String(s[3]), a + 2, ln.y + ln.h / 2);
          });
        }
      } else if (ln.sparks) {
        const p = ln.sparks.sparks.pool, max = Math.max(1, ...p);
        ctx.strokeStyle = "#75507b"; ctx.beginPath();
        p.forEach((v, i) => { const y = ln.y + ln.h - (ln.h * v) / max; i ? ctx.lineTo(x0 + i, y) : ctx.moveTo(x0 + i, y); });
        ctx.stroke();
        const c = ln.sparks.sparks.created;
        ctx.fillStyle = "rgba(117,80,123,0.5)";
        c.forEach((v, i) => { if (v > 0) ctx.fillRect(x0 + i, ln.y + ln.h - 2, 1, 2); });
      } else if (ln.name === "heap") {
        const sz = tl.heap.size, lv = tl.heap.live, max = Math.max(1, ...sz, ...lv);
        [[sz, "#3465a4"], [lv, "#2e9d4f"]].forEach(([v, col]) => {
          ctx.strokeStyle = col; ctx.beginPath();
          v.forEach((x, i) => { const y = ln.y + ln.h - (ln.h * x) / max; i ? ctx.lineTo(x0 + i, y) : ctx.moveTo(x0 + i, y); });
          ctx.stroke();
        });
        ctx.fillStyle = "#556"; ctx.fillText(fmt(max) + "B", x0 + W - 60, ln.y + 6);
      } else if (ln.name === "markers") {
        let lastText = -1e9;
        tl.markers.forEach((m) => {
          const x = xOf(m[0]);
          ctx.fillStyle = COLORS.marker; ctx.fillRect(x, ln.y, 1.5, ln.h);
          if (x - lastText > 90) { ctx.fillStyle = "#554"; ctx.fillText(m[2].slice(0, 24), x + 3, ln.y + ln.h / 2); lastText = x; }
        });
      } else if (ln.span) {
        tl.spans.filter((s) => s[2] === ln.span).forEach((s) => {
          const [a, w] = seg(s[0], s[1] < 0 ? z.view[1] : s[1]);
          ctx.fillStyle = "rgba(117,80,123,0.45)"; ctx.fillRect(a, ln.y, w, ln.h);
          if (w > 40) { ctx.fillStyle = "#222"; ctx.fillText(ln.span, a + 2, ln.y + ln.h / 2); }
        });
      } else if (ln.thread) {
        ln.thread.segments.forEach((s) => {
          const [a, w] = seg(s[0], s[1]);
          if (s[2] === "mixed") {
            ctx.fillStyle = COLORS.runnable; ctx.fillRect(a, ln.y, w, ln.h);
            ctx.fillStyle = COLORS.running; ctx.fillRect(a, ln.y + ln.h * (1 - s[3]), w, ln.h * s[3]);
            ctx.fillStyle = COLORS.blocked; ctx.fillRect(a, ln.y, w, ln.h * s[4]);
          } else {
            ctx.fillStyle = COLORS[s[2]] || "#ccc"; ctx.fillRect(a, ln.y, w, ln.h);
          }
        });
      }
    });
    // The selection over every lane.
    if (z.sel) {
      const a = xOf(z.sel[0]), b = xOf(z.sel[1]);
      ctx.fillStyle = "rgba(52,101,164,0.15)"; ctx.fillRect(a, 0, Math.max(1, b - a), height);
      ctx.fillStyle = "#3465a4"; ctx.fillRect(a, 0, 1, height); ctx.fillRect(b, 0, 1, height);
    }
    $("zoom-view").textContent = fmtT(z.view[0], span) + " \u2013 " + fmtT(z.view[1], span) + " (" + fmtDur(span) +
      ", " + (tl.mode === "raw" ? "every event" : "summary, " + fmtDur(tl.resolution_ns) + " bins") + ")" +
      (tl.threads ? "" : "; zoom in for per-thread lanes");
  }
  function niceStep(raw) {
    const p = Math.pow(10, Math.floor(Math.log10(Math.max(1, raw))));
    for (const m of [1, 2, 5, 10]) if (p * m >= raw) return p * m;
    return p * 10;
  }

  // --- what is under the pointer --------------------------------------------
  function under(x, y) {
    if (!z.tl || x < z.left) return "";
    const t = tOf(x), ln = z.lanes.find((l) => y >= l.y && y < l.y + l.h);
    if (!ln) return "";
    const at = fmtT(Math.round(t), z.view[1] - z.view[0]);
    const hit = (segs) => segs.find((s) => s[0] <= t && t < (s[1] < 0 ? Infinity : s[1]));
    const slack = (3 * (z.view[1] - z.view[0])) / z.width;
    if (ln.cap) {
      const s = hit(ln.cap.segments);
      if (!s) return ln.name + " at " + at + ": idle";
      const d = " (" + fmtDur(s[1] - s[0]) + " from " + fmtT(s[0], z.view[1] - z.view[0]) + ")";
      if (s[2] === "run") return ln.name + ": thread " + s[3] + " running" + d;
      if (s[2] === "mixed") return ln.name + " at " + at + ": " + Math.round(s[3] * 100) + "% running (mostly thread " +
        s[5] + "), " + Math.round(s[4] * 100) + "% GC";
      return ln.name + ": " + s[2] + d;
    }
    if (ln.thread) {
      const s = hit(ln.thread.segments), th = "thread " + ln.thread.id + (ln.thread.label ? " (" + ln.thread.label + ")" : "");
      if (!s) return th + " at " + at + ": not seen";
      return th + ": " + s[2] + (s[2] === "mixed" ? "" : s[3] ? " (" + s[3] + ")" : "") + " for " +
        fmtDur(s[1] - s[0]) + " from " + fmtT(s[0], z.view[1] - z.view[0]);
    }
    if (ln.name === "markers") {
      const m = z.tl.markers.filter((m) => Math.abs(m[0] - t) <= slack);
      return m.length ? m.map((m) => "marker at " + m[0] + " ns: " + m[2]).join("; ") : "markers at " + at;
    }
    if (ln.span) {
      const s = z.tl.spans.filter((s) => s[2] === ln.span && s[0] <= t && (s[1] < 0 || t <= s[1]));
      return s.length ? s.map((s) => ln.span + ": " + fmtDur((s[1] < 0 ? z.info.t_last : s[1]) - s[0])).join("; ") : ln.span + " at " + at;
    }
    const i = Math.floor(x - z.left);
    if (ln.name === "activity") return at + ": " + (z.tl.activity[i] || 0).toFixed(2) + " HECs running, " + (z.tl.gc[i] || 0).toFixed(2) + " in GC";
    if (ln.name === "heap") return at + ": heap " + fmt(z.tl.heap.size[i] || 0) + "B, live " + fmt(z.tl.heap.live[i] || 0) + "B";
    if (ln.sparks) return ln.name + " at " + at + ": pool " + (ln.sparks.sparks.pool[i] || 0) + ", created " + (ln.sparks.sparks.created[i] || 0);
    return at;
  }

  // --- the pointer -----------------------------------------------------------
  let drag = null;
  const pos = (e) => { const r = cv.getBoundingClientRect(); return [e.clientX - r.left, e.clientY - r.top]; };
  cv.addEventListener("wheel", (e) => {
    if (!z.view) return;
    e.preventDefault();
    const [x] = pos(e), t = tOf(Math.max(z.left, x));
    const f = Math.exp(Math.max(-1, Math.min(1, e.deltaY * 0.002)));
    const a = t - (t - z.view[0]) * f, b = t + (z.view[1] - t) * f;
    setView(a, b, null);
  }, { passive: false });
  cv.addEventListener("mousedown", (e) => {
    if (!z.view) return;
    const [x, y] = pos(e);
    const select = e.shiftKey || y < RULER;
    drag = { x: x, view: z.view.slice(), select: select, t: tOf(Math.max(z.left, x)), moved: false };
    e.preventDefault();
  });
  window.addEventListener("mousemove", (e) => {
    const [x, y] = pos(e);
    if (!drag) {
      $("zoom-hover").textContent = under(x, y);
      return;
    }
    if (Math.abs(x - drag.x) > 2) drag.moved = true;
    if (!drag.moved) return;
    if (drag.select) {
      const t = tOf(Math.max(z.left, Math.min(z.left + z.width, x)));
      z.sel = [Math.round(Math.min(t, drag.t)), Math.round(Math.max(t, drag.t))];
      writeHash();
      if (z.tl) draw();
    } else {
      const dt = ((x - drag.x) * (drag.view[1] - drag.view[0])) / z.width;
      setView(drag.view[0] - dt, drag.view[1] - dt, null);
    }
  });
  window.addEventListener("mouseup", () => {
    if (drag && drag.select && drag.moved) schedule();
    else if (drag && drag.select && !drag.moved && z.sel) { z.sel = null; writeHash(); schedule(); }
    if (drag && drag.select) tellSelection();
    drag = null;
  });
  $("zoom-all").addEventListener("click", () => { z.follow = "all"; followView(); });
  $("zoom-last").addEventListener("click", () => { z.follow = "last"; followView(); });
  $("zoom-out").addEventListener("click", () => {
    const c = (z.view[0] + z.view[1]) / 2, h = z.view[1] - z.view[0];
    setView(c - h, c + h, null);
  });
  $("zoom-sel").addEventListener("click", () => { if (z.sel) setView(z.sel[0], z.sel[1], null); });
  window.addEventListener("hashchange", () => {
    if (readHash()) { z.eventsFor = null; z.rangeFor = null; schedule(); tellSelection(); }
  });
  window.addEventListener("resize", schedule);
  if (readHash()) setTimeout(tellSelection, 0);
  loadInfo();
  setInterval(loadInfo, 1000);
})();
