// app.js: the live page of `eventlog-sink serve`.  State arrives as
// Server-Sent Events (/events, one JSON object per interval); the
// charts come from /api/series for the chosen window; the zoomable
// timeline is zoom.js's.
// No external assets, no framework: this file, index.html and style.css
// are the whole page, built into the binary.
"use strict";

const $ = (id) => document.getElementById(id);
let windowMode = null;        // "live" (last 30 s) or "all"; null: not chosen yet
let state = null;
let busy = false;
const NAME_MAX = 40;          // characters of a heap band's name shown

function fmt(n, unit) {
  if (n === null || n === undefined) return "?";
  const pre = ["", "k", "M", "G", "T"];
  let i = 0;
  while (Math.abs(n) >= 1000 && i < 4) { n /= 1000; i++; }
  return (i === 0 ? Math.round(n * 100) / 100 : n.toFixed(1)) + " " + pre[i] + (unit || "");
}
function setText(id, v) { const e = $(id); if (e && e.textContent !== String(v)) e.textContent = v; }

function rows(table, pairs) {
  const t = $(table);
  t.replaceChildren(...pairs.map(([k, v]) => {
    const tr = document.createElement("tr");
    const th = document.createElement("th"); th.textContent = k;
    const td = document.createElement("td"); td.textContent = v;
    tr.append(th, td);
    return tr;
  }));
}
function rows3(table, triples) {
  $(table).replaceChildren(...triples.map((r) => {
    const tr = document.createElement("tr");
    r.forEach((v, i) => {
      const td = document.createElement(i === 0 ? "th" : "td"); td.textContent = v; tr.append(td);
    });
    return tr;
  }));
}
function list(id, items) {
  $(id).replaceChildren(...items.map((s) => {
    const li = document.createElement("li"); li.textContent = s; return li;
  }));
}

function showState(s) {
  state = s;
  setText("program", s.program.name || "(program not named yet)");
  setText("pid", s.program.pid || "?");
  setText("source", s.source.state + (s.source.ended ? " (stream ended)" : "") +
          (s.source.error ? " MALFORMED: " + s.source.error : ""));
  setText("clock", "t = " + (s.time_ns / 1e9).toFixed(2) + " s of the run");
  const l = s.loss, lost = l.dropped_units + l.missed_units + l.joined_late_units;
  // Only the loss notes count: a dump's own note, say, is no loss.
  const loss = $("loss");
  loss.className = l.loss_notes > 0 ? "bad" : "ok";
  loss.textContent = l.loss_notes > 0
    ? "LOSS: " + lost + " units (" + fmt(l.dropped_bytes + l.missed_bytes + l.joined_late_bytes, "B") + ")"
    : "no loss reported";
  list("notes", l.recent.map((n) => (n.t / 1e9).toFixed(3) + " s: " + n.text));

  // Collections (one per collection, not per capability) and their
  // pauses; starts and time in GC are every capability's.
  setText("gc-count", s.gc.collections);
  setText("gc-gens", s.gc.by_gen.map((g) => "gen " + g.gen + ": " + g.collections).join(", ") || "?");
  setText("gc-rate", s.gc.per_s.toFixed(2));
  setText("gc-p50", s.gc.pause_p50_ms.toFixed(3));
  setText("gc-max", s.gc.pause_max_ms.toFixed(3));
  setText("gc-gen-max", s.gc.by_gen.map((g) => "gen " + g.gen + ": " + g.pause_max_ms.toFixed(3) + " ms").join(", ") || "?");
  setText("gc-starts", s.gc.starts);
  // time_frac: the share of the capabilities' time in GC (at most 1).
  // whole_run: the rates and tables are the stream's whole span (a
  // saved file, or a stream that ended), not the last interval.
  const over = s.whole_run ? "whole run" : "last interval";
  setText("gc-time", s.gc.time_s.toFixed(3) + " s summed over capabilities (" +
          (100 * s.gc.time_frac).toFixed(1) + "% of " + s.gc.time_frac_caps +
          " capabilities' time, " + over + ")");
  setText("heap-size", fmt(s.heap.size, "B"));
  setText("heap-live", fmt(s.heap.live, "B") +
          (s.heap.live_time_ns ? " (GC at " + (s.heap.live_time_ns / 1e9).toFixed(1) + " s)" : ""));
  setText("heap-alloc", fmt(s.heap.alloc_per_s, "B/s") + " (total " + fmt(s.heap.allocated, "B") + ")");
  // The last census, its bands largest first (the model ranks them).
  const c = s.heap.census, bands = s.heap.by_label;
  // The census's own moment: censuses come every -i of mutator time, so
  // after the end the last one and the live bytes are of different moments.
  setText("heap-census", s.heap.samples ? "census " + s.heap.samples + " at " + (c.time_ns / 1e9).toFixed(1) +
          " s by " + c.breakdown + ": " + c.bands + " bands, " + fmt(c.bytes, "B") +
          (s.source.ended ? "; at the end beside live " + fmt(s.heap.live, "B") + " (GC at " +
           (s.heap.live_time_ns / 1e9).toFixed(1) + " s): different moments" : "") : "");
  // A long name loses its start, not its end ("...Data.Map.Internal.Bin"):
  // the last part tells closures apart; the whole name is the title.
  const shown = bands.slice(0, 8), rest = c.bands - shown.length;
  const cut = (n) => n.length > NAME_MAX ? "\u2026" + n.slice(n.length - NAME_MAX + 1) : n;
  const trs = shown.map((x) => {
    const tr = document.createElement("tr");
    const b = document.createElement("td"); b.textContent = fmt(x.bytes, "B");
    const n = document.createElement("th"); n.className = "band"; n.textContent = cut(x.label);
    n.title = x.label;
    tr.append(b, n);
    return tr;
  });
  if (rest > 0) {
    const tr = document.createElement("tr");
    const b = document.createElement("td");
    b.textContent = fmt(c.bytes - shown.reduce((a, x) => a + x.bytes, 0), "B");
    const n = document.createElement("th"); n.textContent = "(" + rest + " more bands)";
    tr.append(b, n);
    trs.push(tr);
  }
  $("heap-labels").replaceChildren(...trs);
  setText("threads-created", s.threads.created);
  // After the end no thread runs: those left are counted by their last
  // state, labelled so.
  const th = s.threads.at_end || s.threads;
  setText("threads-alive-label", s.threads.at_end ? "not finished at the end" : "alive");
  setText("threads-state-label", s.threads.at_end ? "last seen running / runnable / blocked"
                                                  : "running / runnable / blocked");
  setText("threads-alive", s.threads.at_end ? th.left : s.threads.alive);
  setText("threads-running", th.running);
  setText("threads-runnable", th.runnable);
  setText("threads-blocked", th.blocked);
  rows3("stops", s.threads.stops.map((x) => [x.reason, x.count, x.stopped_s.toFixed(3) + " s"]));
  // Per second and in all (in the stream, for one that starts mid-run).
  setText("sparks-title", "Sparks (per second" + (s.whole_run ? ", over the whole run" : "") +
          "; " + (s.midrun ? "in the stream" : "in all") + ")");
  rows3("sparks", Object.entries(s.sparks.per_s).map(([k, v]) => [k, v.toFixed(1), s.sparks.total[k]])
    .concat([["pool (all caps)", "", s.sparks.total.pool]]));
  setText("events-total", s.events.total);
  setText("events-rate", fmt(s.events.per_s, "/s"));
  setText("bytes", fmt(s.source.bytes, "B") + " (" + fmt(s.source.bytes_per_s, "B/s") + ")");
  rows("classes", Object.entries(s.events.per_s_by_class).filter(([k]) => s.events.by_class[k] > 0)
    .map(([k, v]) => [k + " /s", fmt(v)]));
  rows3("types-count", s.events.by_type.slice(0, 8).map((x) => [x.name, x.count, fmt(x.bytes, "B")]));
  rows3("types-bytes", s.events.by_type.slice().sort((a, b) => b.bytes - a.bytes).slice(0, 8)
    .map((x) => [x.name, fmt(x.bytes, "B"), x.count]));
  setText("user-messages", s.user.messages);
  setText("markers", s.user.markers);
  list("recent-markers", s.user.recent_markers.slice().reverse()
    .map((m) => (m.t / 1e9).toFixed(3) + " s  cap " + m.cap + ": " + m.text));
  setText("cc-title", "Cost centres (" + over + ")");
  if (s.profile.top.length)
    rows("top-cc", s.profile.top.map((c) => [c.cc + " (" + c.module + ")", c.samples]));
  // The RTS's own cost centres, apart from the program's.
  const k = s.profile.by_kind, own = Object.entries(k).filter(([n]) => n !== "program");
  setText("rts-cc", own.some(([, v]) => v.samples > 0)
    ? "RTS (" + over + "): " + own.map(([n, v]) => n + " " + v.interval).join(", ") : "");

  if (windowMode === null) pickWindow(s.source.ended ? "all" : "live");
  refreshTimeline();
}

function pickWindow(mode) {
  windowMode = mode;
  $("win-live").className = mode === "live" ? "on" : "";
  $("win-all").className = mode === "all" ? "on" : "";
}

// The stream's time starts at its first event: a flight recorder's dump
// or a stream joined mid-run starts well into the run.
function windowRange() {
  const now = state ? state.time_ns : 0, first = state ? Math.min(state.first_ns, now) : 0;
  return windowMode === "live" ? [Math.max(first, now - 30e9), now] : [first, now];
}

async function refreshTimeline() {
  if (busy) return;
  busy = true;
  try {
    const [from, to] = windowRange();
    const cols = Math.max(50, Math.min(2000, Math.floor($("chart-gc").clientWidth || 600)));
    const r = await fetch("api/series?from=" + Math.floor(from) + "&to=" + Math.floor(to) + "&cols=" + cols);
    const tl = await r.json();
    const t = [tl.from_ns, tl.from_ns + tl.col_ns * Math.max(1, tl.cols)];
    chart("chart-gc", [[tl.series.gc_ms, "#e08a00"]], "GC time per column", "ms", t);
    chart("chart-heap", [[tl.series.heap_size, "#3465a4"], [tl.series.heap_live, "#2e9d4f"]],
          "heap size (blue), live (green)", "B", t);
    chart("chart-threads", [[tl.series.threads, "#75507b"]], "threads alive", "", t);
    chart("chart-events", [[tl.series.events_per_s, "#23303f"], [tl.series.user_per_s, "#c4a000"]],
          "events (dark), user events (yellow)", "/s", t);
  } catch (e) {
    // The server went away between two updates: the next event retries.
    console.error("timeline: " + e);
  } finally {
    busy = false;
  }
}

function fit(cv) {
  const w = cv.clientWidth || cv.width, h = cv.clientHeight || cv.height;
  if (cv.width !== w) cv.width = w;
  if (cv.height !== h) cv.height = h;
  const ctx = cv.getContext("2d");
  ctx.clearRect(0, 0, w, h);
  return [ctx, w, h];
}

// A chart with its axes: the value axis from 0 to the window's largest
// value in the series' unit (SI prefixes, powers of 1000), the time axis
// the window's start and end in seconds of the run.
function chart(id, lines, label, unit, t) {
  const [ctx, w, h] = fit($(id));
  const left = 52, top = 14, bottom = 14, pw = w - left - 4, ph = h - top - bottom;
  let max = 0;
  lines.forEach(([v]) => v.forEach((x) => { if (x > max) max = x; }));
  ctx.strokeStyle = "#99a";
  ctx.beginPath();
  ctx.moveTo(left, top); ctx.lineTo(left, top + ph); ctx.lineTo(left + pw, top + ph);
  ctx.stroke();
  lines.forEach(([v, color]) => {
    ctx.strokeStyle = color;
    ctx.beginPath();
    v.forEach((x, i) => {
      const px = left + (i / Math.max(1, v.length - 1)) * pw;
      const py = top + ph - (max > 0 ? (x / max) * ph : 0);
      if (i === 0) ctx.moveTo(px, py); else ctx.lineTo(px, py);
    });
    ctx.stroke();
  });
  ctx.fillStyle = "#667";
  ctx.font = "10px sans-serif";
  ctx.fillText(label, left + 4, 10);
  ctx.textAlign = "right";
  ctx.fillText(fmt(max, unit), left - 3, top + 8);
  ctx.fillText(fmt(0, unit), left - 3, top + ph);
  ctx.textAlign = "left";
  ctx.fillText((t[0] / 1e9).toFixed(1) + " s", left, h - 2);
  ctx.textAlign = "right";
  ctx.fillText((t[1] / 1e9).toFixed(1) + " s", left + pw, h - 2);
  ctx.textAlign = "left";
  // The figures drawn, for tests and screen readers.
  $(id).setAttribute("aria-label", label + ": 0 to " + fmt(max, unit) + ", " +
                     (t[0] / 1e9).toFixed(1) + " s to " + (t[1] / 1e9).toFixed(1) + " s");
}

$("win-live").onclick = () => { pickWindow("live"); refreshTimeline(); };
$("win-all").onclick = () => { pickWindow("all"); refreshTimeline(); };

// Control buttons (serve --control): each POSTs its action to
// /api/control and shows the program's answer.  The section stays hidden
// when serve has no control session to offer.  The page's own requests
// carry the session cookie that opening serve's start-up URL
// (/?token=...) set; actions need the token itself, which serve's
// redirect from that URL gives the page in its fragment (#token=...):
// kept for this tab in sessionStorage, then taken out of the address bar
// (out of bookmarks, history and screen shares), and sent in a request
// field, never in a URL.
const TOKEN_KEY = "eventlog-sink-token";
(function takeToken() {
  const t = new URLSearchParams(location.hash.slice(1)).get("token");
  if (t === null) return;
  sessionStorage.setItem(TOKEN_KEY, t);
  history.replaceState(null, "", location.pathname + location.search);
})();

// The answers: the last CTL_KEEP, newest first, each with the command it
// sent and the time, so that a second button does not hide the first
// answer.  The box takes the newest answer's colour.
const CTL_KEEP = 5;
const answers = [];
function showAnswer(entry) {
  if (!answers.includes(entry)) {
    answers.unshift(entry);
    answers.length = Math.min(answers.length, CTL_KEEP);
  }
  const box = $("ctl-answer");
  box.className = answers[0].cls;
  box.replaceChildren(...answers.map((a) => {
    const line = document.createElement("div");
    line.className = "ctl-entry " + a.cls;
    line.textContent = a.text;
    const meta = document.createElement("small");
    meta.textContent = "  [" + a.time + (a.command ? ", sent: " + a.command : "") + "]";
    line.appendChild(meta);
    return line;
  }));
}

async function control(action, cls) {
  const name = action + (cls ? " " + cls : "");
  const entry = { cls: "busy", text: name + " ...", command: "",
                  time: new Date().toTimeString().slice(0, 8) };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (!token) {
    entry.cls = "bad";
    entry.text = action + ": control needs the page's token URL " +
      "(see serve's start-up line: http://HOST:PORT/?token=...)";
    showAnswer(entry);
    return;
  }
  showAnswer(entry);
  try {
    const r = await fetch("api/control?cmd=" + encodeURIComponent(action) +
                          (cls ? "&class=" + encodeURIComponent(cls) : ""),
                          { method: "POST", headers: { "X-Eventlog-Sink-Token": token } });
    if (!r.ok) throw new Error("HTTP " + r.status + ": " + (await r.text()).trim());
    const a = await r.json();
    entry.cls = a.ok ? "ok" : "bad";
    entry.command = a.command;
    entry.text = a.action + ": " + (a.ok ? "ok" + (a.result ? ": " + a.result : "")
                                         : a.error + ": " + a.result);
  } catch (e) {
    entry.cls = "bad";
    entry.text = name + ": " + e.message;
  }
  entry.time = new Date().toTimeString().slice(0, 8);
  showAnswer(entry);
  refreshControl();
}

let controlEnabled = false;
async function refreshControl() {
  try {
    const c = await (await fetch("api/control")).json();
    controlEnabled = c.enabled;
    $("control").hidden = !c.enabled;
    setText("ctl-state", c.state);
  } catch (e) {
    console.error("control: " + e);
  }
}

document.querySelectorAll("#control button").forEach((b) => {
  b.onclick = () => {
    if (b.dataset.confirm && !b.classList.contains("armed")) {
      // A second click confirms: no modal dialog.
      b.classList.add("armed");
      b.dataset.label = b.textContent;
      b.textContent = b.dataset.confirm;
      return;
    }
    if (b.dataset.confirm) { b.classList.remove("armed"); b.textContent = b.dataset.label; }
    control(b.dataset.action, b.dataset.class);
  };
});
refreshControl();

const es = new EventSource("events");
es.onmessage = (e) => {
  showState(JSON.parse(e.data));
  if (controlEnabled) refreshControl();   // the session's state, e.g. closed by a restart
};
// A stream refused for good: serve may have restarted (a new cookie at
// each start) and wants its start-up URL again.
es.onerror = async () => {
  if (es.readyState !== EventSource.CLOSED) return;
  try {
    const r = await fetch("api/state");
    if (r.status === 401)
      setText("source", "not authorized (serve restarted?): open the URL on " +
              "serve's start-up line (http://HOST:PORT/?token=...)");
  } catch (e) {
    console.error("events: " + e);
  }
};
