/* tcsim HTML report: draws the run's data (the JSON block #tcsim-data).  Written for tcsim; no libraries. */
(function () {
  "use strict";
  const D = JSON.parse(document.getElementById("tcsim-data").textContent);
  const app = document.getElementById("app");
  const CAT = D.cats;
  const SVGNS = "http://www.w3.org/2000/svg";

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) {
      if (k === "onclick") e.addEventListener("click", attrs[k]);
      else if (k === "text") e.textContent = attrs[k];
      else e.setAttribute(k, attrs[k]);
    }
    for (const c of kids) if (c != null) e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    return e;
  }
  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVGNS, tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text != null) e.textContent = text;
    return e;
  }
  const STALL_COLORS = { "dependency": "#e8a33d", "unit": "#c266d9", "issue slot": "#9aa3ad", "mbarrier": "#d9534f",
    "barrier": "#e06666", "cluster barrier": "#b04a4a", "tmem": "#8e6bd8", "wait": "#d98c5f", "sleep": "#bbbbbb" };
  const UNIT_COLORS = { "tma": "#2f9e73", "tensor_pipe": "#1f6fd1", "tcgen05": "#3fb0c9", "wgmma": "#1f6fd1",
    "lsu": "#6aa84f" };
  function stallColor(r) { return STALL_COLORS[r] || "#e69138"; }
  const ns = D.clock_mhz ? 1000 / D.clock_mhz : 0;
  function num(v) { return Number.isInteger(v) ? String(v) : String(Math.round(v * 10) / 10); }   // fractional cycles: one decimal
  function cyc(c) { return num(c) + " cyc" + (ns ? " (" + (c * ns).toFixed(1) + " ns)" : ""); }

  // ------------------------------------------------------------------ header
  const st = D.stats || {};
  app.appendChild(el("header", {},
    el("h1", { text: "tcsim report: " + D.title }),
    el("div", { class: "facts" },
      el("span", { text: "kernel " + D.kernel }), el("span", { text: D.arch }),
      el("span", { text: D.cycles + " cycles" + (ns ? " = " + (D.cycles * ns / 1000).toFixed(2) + " us at " + D.clock_mhz + " MHz" : "") }),
      el("span", { text: (st.warp_instructions || 0) + " warp-instructions, " + (st.ctas || D.ctas.length) + " CTA(s), " + (st.warps || "?") + " warp(s)" }),
      el("span", { text: D.findings.length + " finding(s)" }))));
  // ------------------------------------------------------------------ the error that ended the run
  const E = D.error;
  if (E) {
    const secE = el("section", { id: "error-section", class: "error" },
      el("h2", { text: "The run ended in a " + E.kind + (E.cycle ? " after cycle " + E.cycle : "") }),
      el("div", { id: "error-message", class: "sev-error", text: (E.loc ? E.loc + ": " : "") + E.message }));
    const dl = el("table", { id: "error-facts" });
    function fact(k, v) { if (v != null && v !== "") dl.appendChild(el("tr", {}, el("td", { text: k }), el("td", {}, v))); }
    fact("at", E.line != null ? el("a", { class: "link", id: "error-line", onclick: () => showLine(E.line), text: "line " + E.line + (E.text ? "  `" + E.text + "`" : "") }) : E.loc);
    fact("in", E.where);
    fact("expected", E.expected);
    fact("on a GPU", E.gpu_error === "hang" ? "the kernel never finishes (a hang)" : E.gpu_error);
    secE.appendChild(dl);
    if (E.warps && E.warps.length) {
      const wl = el("table", { id: "error-warps", class: "src" });
      wl.appendChild(el("tr", {}, ...["CTA", "warp", "last instruction retired", "cycle"].map(h => el("th", { text: h }))));
      E.warps.forEach(w => wl.appendChild(el("tr", {}, el("td", { text: "(" + w.cta.join(",") + ")" }), el("td", { class: "num", text: String(w.warp) }),
        el("td", {}, el("a", { class: "link", onclick: () => showLine(w.line), text: "line " + w.line + "  " + w.text })), el("td", { class: "num", text: String(w.cycle) }))));
      secE.appendChild(el("div", { class: "legend", text: "What ran up to the error: each warp's last retired instruction (below: the timeline and the per-line counts of the run until it stopped)." }));
      secE.appendChild(wl);
    } else secE.appendChild(el("div", { class: "legend", text: "No instruction retired before the error." }));
    app.appendChild(secE);
  }
  app.appendChild(el("section", { class: "legend" },
    el("b", { text: "How to read this page. " }),
    "Times are simulated SM cycles. In the timeline each CTA has a row per warp: blue slices are runs of PTX lines the warp issued, " +
    "coloured slices are stalls named by reason and by what the warp waits on (an mbarrier stall also names the mbarrier phase that released it). " +
    "Async units (TMA engine, tensor pipe, tcgen05 ld/st) have a row per operation in flight; each mbarrier has a row of phases, " +
    "a marker where a phase completed, and counters. Click a slice: the panel below the timeline lists its fields and its arrows " +
    "(issuing instruction -> operation -> phase completion -> the warps it woke), each a link. Wheel zooms, drag pans. " +
    "Click a finding to scroll the PTX source to its line. The source view lists, per PTX line, the SASS instructions ptxas made of it (where a disassembler or a committed listing was found)."));

  // ------------------------------------------------------------------ findings
  const secF = el("section", { id: "findings-section" }, el("h2", { text: "Findings of the race detector (" + D.findings.length + ")" }));
  const ol = el("ol", { id: "findings" });
  D.findings.forEach((f, i) => {
    const side = (f.sides || []).filter(s => s.loc).slice(-1)[0];
    const line = side ? side.loc.line : null;
    const li = el("li", { class: "finding", "data-line": line == null ? "" : String(line), "data-index": String(i) },
      el("span", { class: "sev-" + f.severity, text: f.severity + " [class " + f["class"] + ": " + f.title + "] " }),
      (line != null ? "line " + line + ": " : "") + f.message + (f.missing ? " Missing: " + f.missing + "." : "") + (f.fix ? " Fix: " + f.fix : ""));
    li.addEventListener("click", () => { if (line != null) showLine(line); selectFinding(i); });
    ol.appendChild(li);
  });
  if (!D.findings.length) secF.appendChild(el("div", { text: "No findings." }));
  secF.appendChild(ol);
  app.appendChild(secF);

  // ------------------------------------------------------------------ simulator vs GPU
  let firstDivergence = null;
  if (D.diff) {
    const X = D.diff;
    const secD = el("section", { id: "diff-section" }, el("h2", { text: "Simulator vs GPU: " + X.a_name + "  vs  " + X.b_name }));
    secD.appendChild(el("div", { id: "diff-verdict", class: X.identical ? "" : "sev-error",
      text: X.unavailable ? "no comparison: " + X.unavailable : X.identical ? "identical: every output bit for bit" + (X.mismatches ? ", every compared register value" : "") :
        "DIFFERENT: " + X.outputs.filter(o => !o.equal).length + " output buffer(s), " + X.n_value_mismatches + " register value mismatch(es)" }));
    const ot = el("ol", { id: "diff-outputs" });
    X.outputs.forEach(o => ot.appendChild(el("li", { class: o.equal ? "" : "sev-error",
      text: (o.name || ("argument " + o.index)) + ": " + (o.equal ? "identical" : (o.first ? "differs in " + o.n_diff + " element(s); first [" + o.first.join(",") + "]: " + o.a + " (" + o.a_bits + ") vs " + o.b + " (" + o.b_bits + ")" : o.note)) })));
    secD.appendChild(ot);
    const ml = el("ol", { id: "diff-mismatches" });
    X.mismatches.forEach((m, k) => {
      const li = el("li", { class: "finding", "data-line": String(m.line),
        text: m.kind + " mismatch, " + m.warp + " lane " + m.lane + ", line " + m.line + " `" + m.text + "`" + (m.reg ? " " + m.reg + ": " + m.a + " vs " + m.b : "") + (m.note ? " (" + m.note + ")" : "") });
      li.addEventListener("click", () => goDivergence(m));
      ml.appendChild(li);
      if (k === 0) firstDivergence = m;
    });
    secD.appendChild(ml);
    for (const n of X.notes || []) secD.appendChild(el("div", { class: "legend", text: n }));
    app.appendChild(secD);
  }
  function goDivergence(m) {
    showLine(m.line);
    const w = /warp (\d+)/.exec(m.warp || ""), cta = /\(([\d,]+)\)/.exec(m.warp || "");
    if (w) {
      const ctaName = cta ? "CTA (" + cta[1] + ")" : null;
      for (let i = 0; i < D.slices.length; i++) {
        const s = D.slices[i], a = s[5];
        if (CAT[s[4]] === "inst" && a.warp === Number(w[1]) && (!ctaName || a.cta.endsWith(ctaName)) &&
            a.first_line <= m.line && m.line <= a.last_line) { select(i, true); break; }
      }
    }
    const sd = document.getElementById("diff-section"); if (sd) sd.scrollIntoView({ block: "start" });
  }

  // ------------------------------------------------------------------ timeline
  // rows per CTA: warps, each mbarrier with its counters, the async unit lanes, the CTA's counters, findings
  const UR = { tma: 0, tensor_pipe: 1, tcgen05: 2, wgmma: 3 };
  function rowKey(t) {
    if (t.kind === "warp") return [t.cta, 0, t.warp || 0, 0];
    if (t.kind === "mbarrier") return [t.cta, 1, t.id, 0];
    if (t.kind === "counter" && t.name.startsWith("mbarrier")) {
      const mt = D.tracks.find(m => m.kind === "mbarrier" && m.cta === t.cta && t.name.startsWith(m.name + " "));
      const m = mt ? mt.id : null;
      return [t.cta, 1, m != null ? m : t.id, 1 + t.id];
    }
    if (t.kind === "unit") return [t.cta, 2, (UR[t.group] != null ? UR[t.group] : 9), t.lane || 0];
    if (t.kind === "counter") return [t.cta, 3, t.id, 0];
    return [t.cta, 4, t.id, 0];
  }
  function cmpKey(a, b) { const x = rowKey(a), y = rowKey(b); for (let i = 0; i < 4; i++) if (x[i] !== y[i]) return x[i] - y[i]; return a.id - b.id; }
  const rows = [];         // {track|null, label, y, h, header}
  const byTrack = {};      // track id -> sorted slice indices
  const maxDur = {};
  D.slices.forEach((s, i) => { (byTrack[s[0]] = byTrack[s[0]] || []).push(i); maxDur[s[0]] = Math.max(maxDur[s[0]] || 0, s[2]); });
  for (const k in byTrack) byTrack[k].sort((a, b) => D.slices[a][1] - D.slices[b][1]);
  const counterOf = {};
  D.counters.forEach(c => { counterOf[c.track] = c; });
  const tracks = D.tracks.slice().sort(cmpKey);
  let y = 0, lastCta = -1;
  for (const t of tracks) {
    if (t.cta !== lastCta) { rows.push({ track: null, label: D.ctas[t.cta] || ("CTA " + t.cta), y: y, h: 16, header: true }); y += 16; lastCta = t.cta; }
    const h = t.kind === "counter" ? 16 : (t.kind === "unit" && t.lane) ? 11 : 18;
    rows.push({ track: t, label: t.kind === "counter" && t.name.startsWith("mbarrier") ? "   " + t.name.replace(/^mbarrier (\S+ )?@0x[0-9a-f]+ /, "") : t.name, y: y, h: h }); y += h;
  }
  const rowOf = {};
  rows.forEach(r => { if (r.track) rowOf[r.track.id] = r; });
  const flowEnds = {};     // flow id -> {out: slice idx, in: slice idx}
  D.slices.forEach((s, i) => { for (const f of s[6]) (flowEnds[f] = flowEnds[f] || {}).out = i; for (const f of s[7]) (flowEnds[f] = flowEnds[f] || {}).in = i; });

  const secT = el("section", { id: "timeline-section" }, el("h2", { text: "Timeline" }));
  const toolbar = el("div", { class: "toolbar" });
  const canvas = el("canvas", { id: "tl-canvas" });
  const wrap = el("div", { id: "tl-wrap" }, canvas);
  const tip = el("div", { id: "tl-tip" });
  const details = el("div", { id: "tl-details", text: "Click a slice to see its fields and arrows." });
  secT.append(toolbar, wrap, details, tip);
  app.appendChild(secT);
  const LABEL = 230;
  const V = { t0: 0, t1: Math.max(D.cycles, 1), sel: null };
  function width() { return Math.max(600, wrap.clientWidth || 1000); }
  function xOf(t) { return LABEL + (t - V.t0) * (width() - LABEL) / (V.t1 - V.t0); }
  function tOf(x) { return V.t0 + (x - LABEL) * (V.t1 - V.t0) / (width() - LABEL); }
  function colorOf(s) {
    const cat = CAT[s[4]], a = s[5] || {};
    if (cat === "inst") return "#4a86e8";
    if (cat === "stall") return stallColor(a.reason);
    if (cat === "async") return UNIT_COLORS[a.unit] || "#2f9e73";
    if (cat === "phase") return (a.phase % 2) ? "#f3c7c5" : "#f8dedd";
    return "#b3261e";
  }
  function draw() {
    const W = width(), H = y + 4, dpr = window.devicePixelRatio || 1;
    canvas.width = W * dpr; canvas.height = H * dpr; canvas.style.width = W + "px"; canvas.style.height = H + "px";
    const g = canvas.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, W, H); g.font = "11px system-ui, sans-serif"; g.textBaseline = "middle";
    for (const r of rows) {
      if (r.header) { g.fillStyle = "#e3e8ee"; g.fillRect(0, r.y, W, r.h); g.fillStyle = "#1d232b"; g.fillText(r.label, 4, r.y + r.h / 2); continue; }
      g.fillStyle = "#fbfcfd"; g.fillRect(LABEL, r.y, W - LABEL, r.h - 1);
      g.fillStyle = "#3d4955"; g.fillText(r.label.length > 36 ? r.label.slice(0, 35) + "…" : r.label, 6, r.y + r.h / 2);
      const t = r.track;
      if (t.kind === "counter") { drawCounter(g, r, counterOf[t.id]); continue; }
      const idx = byTrack[t.id] || [];
      let lo = 0, hi = idx.length, from = V.t0 - (maxDur[t.id] || 0);
      while (lo < hi) { const m = (lo + hi) >> 1; if (D.slices[idx[m]][1] < from) lo = m + 1; else hi = m; }
      for (let k = lo; k < idx.length; k++) {
        const s = D.slices[idx[k]];
        if (s[1] > V.t1) break;
        const x0 = Math.max(LABEL, xOf(s[1])), x1 = Math.min(W, xOf(s[1] + s[2]));
        const cat = CAT[s[4]];
        if (s[2] === 0 || cat === "phase_done" || cat === "finding") {
          g.fillStyle = cat === "finding" ? "#b3261e" : "#7a1f1b";
          const cx = xOf(s[1]); g.beginPath(); g.moveTo(cx, r.y + 2); g.lineTo(cx - 5, r.y + r.h - 2); g.lineTo(cx + 5, r.y + r.h - 2); g.fill();
          continue;
        }
        g.fillStyle = colorOf(s); g.fillRect(x0, r.y + 2, Math.max(1, x1 - x0 - 0.5), r.h - 5);
        if (x1 - x0 > 40) { g.fillStyle = "#fff"; g.save(); g.beginPath(); g.rect(x0, r.y, x1 - x0, r.h); g.clip(); g.fillStyle = cat === "phase" ? "#5a1d1b" : "#fff"; g.fillText(s[3], x0 + 3, r.y + r.h / 2); g.restore(); }
      }
    }
    if (V.sel != null) {
      const s = D.slices[V.sel], r = rowOf[s[0]];
      if (r) { g.strokeStyle = "#000"; g.lineWidth = 2; g.strokeRect(xOf(s[1]) - 1, r.y + 1, Math.max(3, xOf(s[1] + s[2]) - xOf(s[1]) + 2), r.h - 3); }
      g.strokeStyle = "#111"; g.lineWidth = 1.2;
      for (const f of s[6].concat(s[7])) {
        const e = flowEnds[f]; if (!e || e.out == null || e.in == null) continue;
        const a = D.slices[e.out], b = D.slices[e.in], ra = rowOf[a[0]], rb = rowOf[b[0]];
        if (!ra || !rb) continue;
        const ax = xOf(a[1] + a[2]), ay = ra.y + ra.h / 2, bx = xOf(b[1]), by = rb.y + rb.h / 2;
        g.beginPath(); g.moveTo(ax, ay); g.bezierCurveTo(ax + 30, ay, bx - 30, by, bx, by); g.stroke();
        g.beginPath(); g.moveTo(bx, by); g.lineTo(bx - 6, by - 4); g.lineTo(bx - 6, by + 4); g.fill();
      }
    }
    if (E && E.cycle >= V.t0 && E.cycle <= V.t1) {        // where the run stopped
      const ex = xOf(E.cycle); g.strokeStyle = "#b3261e"; g.lineWidth = 2;
      g.beginPath(); g.moveTo(ex, 0); g.lineTo(ex, H); g.stroke();
      g.fillStyle = "#b3261e"; g.fillText(E.kind, Math.min(ex + 4, W - 120), 20);
    }
    g.fillStyle = "#5b6570"; g.fillText(cyc(Math.round(V.t0)) + "  …  " + cyc(Math.round(V.t1)), LABEL + 4, 8);
  }
  function drawCounter(g, r, c) {
    if (!c || !c.points.length) return;
    let mx = 0; for (const p of c.points) mx = Math.max(mx, p[1]);
    if (mx <= 0) mx = 1;
    g.strokeStyle = "#0b7a5a"; g.fillStyle = "#0b7a5a33"; g.beginPath();
    let px = LABEL, py = r.y + r.h - 2; g.moveTo(px, py);
    for (const p of c.points) {
      const x = Math.min(Math.max(xOf(p[0]), LABEL), width()), yy = r.y + r.h - 2 - (r.h - 5) * p[1] / mx;
      g.lineTo(x, py); g.lineTo(x, yy); px = x; py = yy;
    }
    g.lineTo(width(), py); g.stroke();
    g.fillStyle = "#3d4955"; g.fillText("max " + mx, width() - 80, r.y + r.h / 2);
  }
  function hit(mx, my) {
    for (const r of rows) {
      if (r.header || my < r.y || my >= r.y + r.h || r.track.kind === "counter") continue;
      const idx = byTrack[r.track.id] || []; const t = tOf(mx), slack = 5 * (V.t1 - V.t0) / (width() - LABEL);
      let best = null;
      for (const i of idx) { const s = D.slices[i]; if (s[1] - slack <= t && t <= s[1] + s[2] + slack) { best = i; if (s[2] > 0 && s[1] <= t && t < s[1] + s[2]) return i; } }
      return best;
    }
    return null;
  }
  function describe(i) {
    const s = D.slices[i], t = D.tracks.find(t => t.id === s[0]);
    const tb = el("table");
    const add = (k, v) => tb.appendChild(el("tr", {}, el("td", { text: k }), v instanceof Node ? el("td", {}, v) : el("td", { text: String(v) })));
    add("slice", s[3]); add("track", (D.ctas[t.cta] || "") + " / " + t.name); add("category", CAT[s[4]]);
    add("start", cyc(s[1])); add("duration", cyc(s[2]));
    for (const k in s[5]) {
      const v = s[5][k];
      if ((k === "line" || k === "first_line") && v != null) add(k, el("a", { class: "link", onclick: () => showLine(v), text: "line " + v }));
      else add(k, Array.isArray(v) ? v.join("; ") : v);
    }
    if (s[5].released_by) {             // the phase completion that released this stall, as a link
      const t0 = D.tracks[s[0]] || t;
      for (let j = 0; j < D.slices.length; j++) {
        const o = D.slices[j], a = o[5];
        if (CAT[o[4]] === "phase_done" && D.tracks[o[0]].cta === t0.cta &&
            s[5].released_by.startsWith(a.mbarrier + " phase " + a.phase + " ")) {
          add("released by", el("a", { class: "link", id: "released-by-link", onclick: () => select(j, true),
            text: "go to the phase completion: " + o[3] + " of " + a.mbarrier + " @" + o[1] }));
          break;
        }
      }
    }
    const link = (j, dir) => el("a", { class: "link", onclick: () => select(j, true), text: dir + " " + D.slices[j][3] + " @" + D.slices[j][1] });
    for (const f of s[7]) { const e = flowEnds[f]; if (e && e.out != null) add("arrow from", link(e.out, "←")); }
    for (const f of s[6]) { const e = flowEnds[f]; if (e && e.in != null) add("arrow to", link(e.in, "→")); }
    details.replaceChildren(tb);
  }
  function select(i, center) {
    V.sel = i;
    if (i != null) {
      const s = D.slices[i];
      if (center && (s[1] < V.t0 || s[1] > V.t1)) { const w = V.t1 - V.t0; V.t0 = Math.max(0, s[1] - w / 2); V.t1 = V.t0 + w; }
      describe(i);
      const r = rowOf[s[0]];
      if (r && center && (r.y < wrap.scrollTop || r.y + r.h > wrap.scrollTop + wrap.clientHeight)) wrap.scrollTop = Math.max(0, r.y - 60);
    }
    draw();
  }
  function selectFinding(k) {
    for (let i = 0; i < D.slices.length; i++) if (CAT[D.slices[i][4]] === "finding" && D.slices[i][5].finding === k) { select(i, true); return; }
  }
  let drag = null;
  canvas.addEventListener("mousedown", e => { drag = { x: e.clientX, t0: V.t0, t1: V.t1, moved: false }; canvas.style.cursor = "grabbing"; });
  window.addEventListener("mouseup", e => {
    if (drag && !drag.moved) { const b = canvas.getBoundingClientRect(); const i = hit(e.clientX - b.left, e.clientY - b.top); if (i != null) select(i, false); }
    drag = null; canvas.style.cursor = "grab";
  });
  canvas.addEventListener("mousemove", e => {
    const b = canvas.getBoundingClientRect();
    if (drag) {
      const dx = e.clientX - drag.x; if (Math.abs(dx) > 2) drag.moved = true;
      const dt = dx * (drag.t1 - drag.t0) / (width() - LABEL); V.t0 = drag.t0 - dt; V.t1 = drag.t1 - dt; draw(); return;
    }
    const i = hit(e.clientX - b.left, e.clientY - b.top);
    if (i == null) { tip.style.display = "none"; return; }
    const s = D.slices[i]; const a = s[5];
    tip.textContent = s[3] + "\n" + cyc(s[1]) + " +" + s[2] + (a.released_by ? "\nreleased by " + a.released_by : "") + (a.line ? "\nline " + a.line : "");
    tip.style.left = (e.clientX + 12) + "px"; tip.style.top = (e.clientY + 12) + "px"; tip.style.display = "block";
  });
  canvas.addEventListener("mouseleave", () => { tip.style.display = "none"; });
  canvas.addEventListener("wheel", e => {
    e.preventDefault();
    const b = canvas.getBoundingClientRect(), t = tOf(e.clientX - b.left), f = e.deltaY > 0 ? 1.25 : 0.8;
    zoom(f, t);
  }, { passive: false });
  function zoom(f, at) {
    const w = Math.max(4, (V.t1 - V.t0) * f); at = at == null ? (V.t0 + V.t1) / 2 : at;
    const r = (at - V.t0) / (V.t1 - V.t0); V.t0 = at - r * w; V.t1 = V.t0 + w; draw();
  }
  toolbar.append(el("button", { id: "zoom-in", onclick: () => zoom(0.5), text: "zoom in" }),
    el("button", { id: "zoom-out", onclick: () => zoom(2), text: "zoom out" }),
    el("button", { id: "zoom-reset", onclick: () => { V.t0 = 0; V.t1 = Math.max(D.cycles, 1); draw(); }, text: "whole run" }),
    el("span", { class: "hint", text: "wheel: zoom, drag: pan, click: details and arrows" }));
  window.addEventListener("resize", draw);

  // ------------------------------------------------------------------ source view
  const secS = el("section", { id: "source-section" }, el("h2", { text: "PTX source " + (D.source_name || "") + " (per line: executions, issue cycles, stalls, the SASS ptxas made of it)" }));
  // SASS: each PTX line's instructions (offset, text), from the listing ptxas + nvdisasm made (tcsim.report.sass)
  const S = D.sass || {}, sassOf = {};
  (S.functions || []).forEach(f => f.insts.forEach(x => { if (x[1] != null) (sassOf[x[1]] = sassOf[x[1]] || []).push([f.name, x[0], x[2]]); }));
  const nSass = (S.functions || []).reduce((a, f) => a + f.insts.length, 0);
  const sassNote = el("div", { class: "hint", id: "sass-note", text: S.error ? S.error :
    "SASS for " + S.arch + ": " + nSass + " instructions (" + (S.from || "") + "; " + (S.tools || "") + "). Click a line's SASS count to list them under it." });
  const allBox = el("input", { type: "checkbox", id: "sass-all" });
  if (!S.error) secS.appendChild(el("div", { class: "toolbar" }, el("label", {}, allBox, " SASS under every PTX line"), " ", sassNote));
  else secS.appendChild(sassNote);
  const tbl = el("table", { class: "src", id: "source" });
  tbl.appendChild(el("tr", {}, ...["line", "warp-inst", "lanes", "issued (first..last)", "latency", "stall cycles by reason", "", "SASS", "PTX"].map(h => el("th", { text: h }))));
  const sassRows = {};
  function toggleSass(n, on) {
    const have = sassRows[n];
    if (on === undefined) on = !have;
    if (!on) { if (have) { have.remove(); delete sassRows[n]; } return; }
    if (have || !sassOf[n]) return;
    const pre = el("td", { class: "code sass" });
    pre.textContent = sassOf[n].map(x => "/*" + x[1].toString(16).padStart(4, "0") + "*/  " + x[2]).join("\n");
    const tr = el("tr", { class: "sass-row", id: "S" + n, "data-line": String(n) }, el("td", { class: "num" }), el("td", { colspan: "7" }), pre);
    srcRows[n].after(tr); sassRows[n] = tr;
  }
  allBox.addEventListener("change", () => { for (const n in sassOf) if (srcRows[n]) toggleSass(n, allBox.checked); });
  const findLines = {};
  D.findings.forEach((f, i) => (f.sides || []).forEach(s => { if (s.loc) (findLines[s.loc.line] = findLines[s.loc.line] || []).push(i); }));
  let maxStall = 1;
  for (const k in D.lines) { let t = 0; for (const r in D.lines[k].stalls) t += D.lines[k].stalls[r]; maxStall = Math.max(maxStall, t); }
  const srcRows = {};
  (D.source.length ? D.source : Object.keys(D.lines).map(k => D.lines[k].text)).forEach((text, j) => {
    const n = D.source.length ? j + 1 : Number(Object.keys(D.lines)[j]);
    const L = D.lines[String(n)];
    const stallCell = el("td");
    if (L) {
      let tot = 0;
      for (const r in L.stalls) { const v = L.stalls[r]; tot += v; stallCell.appendChild(el("span", { class: "bar", title: r + ": " + num(v) + " cycles", style: "width:" + Math.max(1, 120 * v / maxStall) + "px;background:" + stallColor(r) })); }
      if (tot) stallCell.appendChild(document.createTextNode(" " + num(tot) + " (" + Object.keys(L.stalls).map(r => r + " " + num(L.stalls[r])).join(", ") + ")"));
    }
    const fcell = el("td");
    if (E && E.line === n) fcell.appendChild(el("span", { class: "badge", title: E.message, text: E.kind }));
    for (const i of findLines[n] || []) fcell.appendChild(el("span", { class: "badge", title: D.findings[i].title, onclick: () => selectFinding(i), text: "class " + D.findings[i]["class"] }));
    const tr = el("tr", { id: "L" + n, class: (L ? "" : "cold") + (findLines[n] || (E && E.line === n) ? " has-finding" : "") + (E && E.line === n ? " has-error" : "") },
      el("td", { class: "num", text: String(n) }), el("td", { class: "num", text: L ? String(L.executions) : "" }),
      el("td", { class: "num", text: L ? String(L.lanes) : "" }),
      el("td", { class: "num", text: L ? L.first + ".." + L.last : "" }), el("td", { class: "num", text: L && L.latency ? String(L.latency) : "" }),
      stallCell, fcell,
      el("td", { class: "num" }, sassOf[n] ? el("a", { class: "link sass-count", title: sassOf[n].map(x => x[2]).join("\n"),
        onclick: () => toggleSass(n), text: sassOf[n].length + " SASS" }) : null),
      el("td", { class: "code", text: text }));
    srcRows[n] = tr; tbl.appendChild(tr);
  });
  const srcWrap = el("div", { id: "source-wrap" }, tbl);
  secS.appendChild(srcWrap);
  if (nSass) {     // the whole listing in address order, each instruction a link to its PTX line
    const lst = el("table", { class: "src", id: "sass-listing" });
    lst.appendChild(el("tr", {}, ...["function", "offset", "SASS", "PTX line"].map(h => el("th", { text: h }))));
    S.functions.forEach(f => f.insts.forEach(x => lst.appendChild(el("tr", {}, el("td", { text: f.name }),
      el("td", { class: "num", text: x[0].toString(16).padStart(4, "0") }), el("td", { class: "code", text: x[2] }),
      el("td", { class: "num" }, x[1] != null ? el("a", { class: "link", onclick: () => showLine(x[1]), text: "line " + x[1] }) : null)))));
    secS.appendChild(el("details", { id: "sass-details" }, el("summary", { text: "SASS listing in address order (" + nSass + " instructions; click a line number to see it in the PTX)" }),
      el("div", { class: "sass-wrap" }, lst)));
  }
  app.appendChild(secS);
  let hl = null;
  function showLine(n) {
    const tr = srcRows[n]; if (!tr) return;
    if (hl) hl.classList.remove("hl");
    tr.classList.add("hl"); hl = tr;
    const dy = tr.getBoundingClientRect().top - srcWrap.getBoundingClientRect().top;
    srcWrap.scrollTop = Math.max(0, srcWrap.scrollTop + dy - srcWrap.clientHeight / 3);
    secS.scrollIntoView({ block: "nearest" });
  }

  // ------------------------------------------------------------------ charts
  const secC = el("section", { id: "charts-section" }, el("h2", { text: "Stalls, utilisation, mbarrier phases, occupancy" }));
  const charts = el("div", { class: "charts" });
  secC.appendChild(charts); app.appendChild(secC);
  function chart(title, node) { charts.appendChild(el("div", { class: "chart" }, el("h3", { text: title }), node)); }
  // stalls per warp by reason (the timing report's counts)
  (function () {
    const ws = D.warps; if (!ws.length) return;
    let mx = 1; for (const w of ws) { let t = 0; for (const r in w.stalls) t += w.stalls[r]; mx = Math.max(mx, t); }
    const reasons = {}; ws.forEach(w => Object.keys(w.stalls).forEach(r => { reasons[r] = 1; }));
    const H = 16 * ws.length + 40, s = svg("svg", { width: 460, height: H, id: "stall-chart" });
    ws.forEach((w, i) => {
      s.appendChild(svg("text", { x: 0, y: 12 + 16 * i }, "cta " + w.cta.join(",") + " w" + w.warp));
      let x = 90;
      for (const r in w.stalls) { const wd = 340 * w.stalls[r] / mx; s.appendChild(svg("rect", { x: x, y: 3 + 16 * i, width: wd, height: 12, fill: stallColor(r) })).appendChild(svg("title", {}, r + ": " + num(w.stalls[r]) + " cycles")); x += wd; }
    });
    let lx = 0; Object.keys(reasons).forEach(r => { s.appendChild(svg("rect", { x: lx, y: H - 14, width: 10, height: 10, fill: stallColor(r) })); s.appendChild(svg("text", { x: lx + 13, y: H - 5 }, r)); lx += 20 + 7 * r.length; });
    chart("Stall cycles per warp, by reason", s);
  })();
  // unit utilisation
  (function () {
    const names = Object.keys(D.units || {}); if (!names.length) return;
    const s = svg("svg", { width: 420, height: 18 * names.length + 6, id: "unit-chart" });
    names.forEach((n, i) => {
      const u = D.units[n], f = Math.max(0, Math.min(1, u.utilisation || 0));
      s.appendChild(svg("text", { x: 0, y: 13 + 18 * i }, n));
      s.appendChild(svg("rect", { x: 150, y: 3 + 18 * i, width: 200, height: 12, fill: "#eef1f4" }));
      s.appendChild(svg("rect", { x: 150, y: 3 + 18 * i, width: 200 * f, height: 12, fill: "#1f6fd1" }));
      s.appendChild(svg("text", { x: 356, y: 13 + 18 * i }, (100 * f).toFixed(1) + "%"));
    });
    chart("Async unit utilisation (busy / capacity)", s);
  })();
  // mbarrier phase diagram
  (function () {
    const mbs = D.tracks.filter(t => t.kind === "mbarrier"); if (!mbs.length) return;
    const W = 560, L = 130, sc = (W - L - 10) / Math.max(1, D.cycles);
    const s = svg("svg", { width: W, height: 30 * mbs.length + 16, id: "mbarrier-chart" });
    mbs.forEach((t, i) => {
      const y0 = 4 + 30 * i;
      s.appendChild(svg("text", { x: 0, y: y0 + 12 }, (D.ctas.length > 1 ? "cta" + t.cta + " " : "") + t.name.replace("mbarrier ", "")));
      for (const j of byTrack[t.id] || []) {
        const sl = D.slices[j], a = sl[5];
        if (CAT[sl[4]] === "phase") {
          const r = svg("rect", { x: L + sl[1] * sc, y: y0 + 2, width: Math.max(1, sl[2] * sc), height: 14, fill: a.phase % 2 ? "#f3c7c5" : "#f8dedd", stroke: "#c9a09e" });
          r.appendChild(svg("title", {}, sl[3] + ": cycles " + sl[1] + ".." + (sl[1] + sl[2])));
          s.appendChild(r);
        } else if (CAT[sl[4]] === "phase_done") {
          const m = svg("path", { d: "M" + (L + sl[1] * sc) + " " + (y0 + 1) + " l-4 16 l8 0 z", fill: "#7a1f1b" });
          m.appendChild(svg("title", {}, sl[3] + " at cycle " + sl[1] + (a.woke ? "; woke " + a.woke.join(", ") : "") + (a.op ? "; completed by " + a.op : "")));
          s.appendChild(m);
          if (a.woke) s.appendChild(svg("text", { x: L + sl[1] * sc + 5, y: y0 + 27 }, "woke " + a.woke.length + " warp(s)"));
        }
      }
    });
    chart("mbarrier phases (span of each phase, ▲ completion; hover for the warps it woke)", s);
  })();
  // occupancy: SMEM stages in flight, TMEM columns allocated
  (function () {
    const cs = D.tracks.filter(t => t.kind === "counter" && !t.name.startsWith("mbarrier"));
    if (!cs.length) return;
    const W = 560, L = 10, H = 60, sc = (W - L - 60) / Math.max(1, D.cycles);
    const s = svg("svg", { width: W, height: (H + 18) * cs.length, id: "occupancy-chart" });
    cs.forEach((t, i) => {
      const c = counterOf[t.id]; if (!c) return;
      let mx = 1; c.points.forEach(p => { mx = Math.max(mx, p[1]); });
      const y0 = (H + 18) * i + 14;
      s.appendChild(svg("text", { x: L, y: y0 - 3 }, (D.ctas.length > 1 ? D.ctas[t.cta] + ": " : "") + t.name + " (max " + mx + ")"));
      let d = "M" + L + " " + (y0 + H), py = y0 + H;
      for (const p of c.points) { const x = L + p[0] * sc, yy = y0 + H - H * p[1] / mx; d += " L" + x + " " + py + " L" + x + " " + yy; py = yy; }
      d += " L" + (L + D.cycles * sc) + " " + py;
      s.appendChild(svg("path", { d: d, fill: "none", stroke: "#0b7a5a", "stroke-width": 1.5 }));
      s.appendChild(svg("line", { x1: L, y1: y0 + H, x2: L + D.cycles * sc, y2: y0 + H, stroke: "#9aa3ad" }));
    });
    chart("SMEM and TMEM occupancy over time (cycles)", s);
  })();

  draw();
  if (E) {                                                      // the page opens at the error
    if (E.line != null) showLine(E.line);
    document.getElementById("error-section").scrollIntoView({ block: "start" });
  } else if (firstDivergence) goDivergence(firstDivergence);          // the page opens at the first divergence
  else if (D.diff && !D.diff.identical) document.getElementById("diff-section").scrollIntoView({ block: "start" });
  window.tcsimReport = { select: select, showLine: showLine, selectFinding: selectFinding, toggleSass: toggleSass, view: V, data: D, rows: rows };
  document.body.setAttribute("data-ready", "1");
})();
