// durations.js: how long each kind of span took, over the whole run or
// the timeline's selection, as ghc-events-analyze tabulates it: per
// name the count, total, mean, p50, p99 and longest, from serve's
// /api/durations (tools/timeline/aggr.h: markers "NAME start"/"NAME
// end" and "NAME begin"/"NAME stop", messages "START NAME"/"STOP NAME",
// each end with the latest open start of its thread; a span counts in a
// window when its end falls in it).  Beside the table, whatever was not
// paired or not kept, each count shown even when 0 and marked when not.
// A row opens its longest instance on the timeline, selected, where the
// span lanes draw it.  Any column sorts (a second click reverses).
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const tb = $("durations");
  if (!tb || !window.elsZoom) return;
  const z = window.elsZoom;
  // [key in the answer, header, data-* name, tooltip]
  const COLS = [
    ["name", "span", "name", "the marker or message name"],
    ["count", "count", "count", "spans that ended in the window"],
    ["total_ns", "total", "total", "their durations added up"],
    ["mean_ns", "mean", "mean", "total / count"],
    ["p50_ns", "p50", "p50", "nearest rank: the ceil(count/2)-th shortest"],
    ["p99_ns", "p99", "p99", "nearest rank: the ceil(0.99 count)-th shortest"],
    ["max_ns", "max", "max", "the longest; click the row to open it on the timeline"],
  ];
  const UNPAIRED = [
    ["unmatched_ends", "ends with no open start"],
    ["open", "starts still open"],
    ["pending", "marker events not yet paired (a capability may still send earlier ones)"],
    ["open_refused", "starts refused (too many open)"],
    ["names_refused", "spans of names past the table (counted as (other))"],
    ["released_early", "marker events paired before every capability had caught up"],
    ["lost", "spans not kept (the side file could not be written)"],
  ];
  let sel = null, last = null;
  let sortKey = "total_ns", sortDown = true;

  const dur = (ns) => ns === null || ns === undefined ? "\u2014"
    : ns >= 1e9 ? (ns / 1e9).toFixed(3) + " s" : ns >= 1e6 ? (ns / 1e6).toFixed(3) + " ms"
      : ns >= 1e3 ? (ns / 1e3).toFixed(3) + " \u00b5s" : Math.round(ns) + " ns";
  const sec = (ns) => (ns / 1e9).toFixed(6) + " s";

  function sorted(names) {
    const v = names.slice();
    v.sort((a, b) => {
      const x = a[sortKey], y = b[sortKey];
      let c = sortKey === "name" ? String(x).localeCompare(String(y))
        : (x === null ? -1 : x) - (y === null ? -1 : y);
      if (!c) c = a.name < b.name ? -1 : a.name > b.name;
      return sortDown ? -c : c;
    });
    return v;
  }

  function show(d) {
    last = d;
    tb.dataset.range = sel ? sel.join(",") : "all";
    tb.dataset.sort = sortKey + (sortDown ? ",down" : ",up");
    $("durations-title").textContent = "Span durations " + (sel ? "in the selection " + sec(sel[0]) +
      " \u2013 " + sec(sel[1]) : "of the whole run") + ": " + d.spans + " spans" + (d.names.length ? "" : ", none");
    $("durations-rule").textContent = "A span counts in " + (sel ? "the selection" : "the run") +
      " when its end falls in it (rule " + d.rule + "). Pairs: markers \u201cNAME start\u201d/\u201cNAME end\u201d and " +
      "\u201cNAME begin\u201d/\u201cNAME stop\u201d, messages \u201cSTART NAME\u201d/\u201cSTOP NAME\u201d, each end with " +
      "the latest open start of its thread." + (d.exact ? "" : " Too many spans for exact quantiles: select a shorter range.");
    const head = document.createElement("tr");
    COLS.forEach(([k, h, , tip]) => {
      const th = document.createElement("th");
      th.textContent = h + (k === sortKey ? (sortDown ? " \u25bc" : " \u25b2") : "");
      th.dataset.key = k; th.title = tip + " (click to sort)";
      th.addEventListener("click", () => {
        if (sortKey === k) sortDown = !sortDown;
        else { sortKey = k; sortDown = k !== "name"; }
        show(last);
      });
      head.append(th);
    });
    // The mean as total / count, exact (the answer's mean_ns is rounded).
    d.names.forEach((n) => { n.mean_ns = n.total_ns / n.count; });
    tb.replaceChildren(head, ...sorted(d.names).map((n) => {
      const tr = document.createElement("tr");
      tr.className = "dur";
      tr.dataset.name = n.name;
      tr.dataset.a = n.longest[0]; tr.dataset.b = n.longest[1];
      tr.title = "open the longest " + n.name + " (" + dur(n.max_ns) + " from " + sec(n.longest[0]) +
        ") on the timeline, selected";
      COLS.forEach(([k, , attr]) => {
        const td = document.createElement(k === "name" ? "th" : "td");
        const v = n[k];
        td.dataset.key = attr;
        if (k === "name") td.textContent = v;
        else {
          td.dataset.ns = v === null ? "" : String(v);
          td.textContent = k === "count" ? String(v) : dur(v);
        }
        tr.dataset[attr] = v === null ? "" : String(v);
        tr.append(td);
      });
      tr.addEventListener("click", () => {
        z.open(n.longest[0], n.longest[1]);
        $("zoom-box").scrollIntoView({ block: "start" });
      });
      return tr;
    }));
    $("durations-unpaired").replaceChildren(...UNPAIRED.map(([k, what]) => {
      const tr = document.createElement("tr");
      tr.dataset.key = k; tr.dataset.value = d[k];
      tr.className = d[k] ? "bad" : "";
      const th = document.createElement("th"); th.textContent = what;
      const td = document.createElement("td"); td.textContent = String(d[k]);
      tr.append(th, td);
      return tr;
    }));
  }

  z.watch(async (s) => {
    sel = s;
    show(await z.getJSON("api/durations" + (sel ? "?t0=" + sel[0] + "&t1=" + sel[1] : "")));
    $("durations-note").textContent = "";
  }, $("durations-note"), "durations");
})();
