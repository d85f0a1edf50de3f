// A small line chart drawn as SVG: several series, axes with round ticks, a legend.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";

function svgEl(tag, attrs, text) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = String(text);
  return node;
}

function niceTicks(lo, hi, count) {
  if (!(hi > lo)) { hi = lo + 1; lo = lo - 1; }
  const raw = (hi - lo) / count;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) || raw;
  const ticks = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) ticks.push(v);
  return ticks;
}

function tickLabel(v) {
  const a = Math.abs(v);
  if (a >= 1e6) return (v / 1e6).toFixed(a >= 1e7 ? 0 : 1) + "M";
  if (a >= 1e3) return (v / 1e3).toFixed(a >= 1e4 ? 0 : 1) + "k";
  return Number.isInteger(v) ? String(v) : v.toFixed(2);
}

// series: [{label, color, points: [[x, y], ...], width, opacity}]
function drawChart(svg, series, opts) {
  const W = 640, H = 300, L = 56, R = 12, T = 12, B = 40;
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  svg.setAttribute("viewBox", "0 0 " + W + " " + H);
  const all = series.flatMap((s) => s.points);
  if (all.length === 0) {
    svg.appendChild(svgEl("text", { x: W / 2, y: H / 2, "text-anchor": "middle", class: "empty" }, opts.empty || "no episodes yet"));
    return;
  }
  let [x0, x1, y0, y1] = [Infinity, -Infinity, Infinity, -Infinity];
  for (const [x, y] of all) { x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y); }
  if (x1 === x0) { x1 = x0 + 1; }
  if (y1 === y0) { y0 -= 1; y1 += 1; }
  const sx = (x) => L + ((x - x0) / (x1 - x0)) * (W - L - R);
  const sy = (y) => H - B - ((y - y0) / (y1 - y0)) * (H - T - B);
  const axes = svgEl("g", { class: "axes" });
  for (const t of niceTicks(x0, x1, 6)) {
    axes.appendChild(svgEl("line", { x1: sx(t), x2: sx(t), y1: T, y2: H - B, class: "grid" }));
    axes.appendChild(svgEl("text", { x: sx(t), y: H - B + 14, "text-anchor": "middle" }, tickLabel(t)));
  }
  for (const t of niceTicks(y0, y1, 5)) {
    axes.appendChild(svgEl("line", { x1: L, x2: W - R, y1: sy(t), y2: sy(t), class: "grid" }));
    axes.appendChild(svgEl("text", { x: L - 6, y: sy(t) + 4, "text-anchor": "end" }, tickLabel(t)));
  }
  axes.appendChild(svgEl("text", { x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle" }, opts.xLabel || ""));
  axes.appendChild(svgEl("text", { x: 12, y: (T + H - B) / 2, "text-anchor": "middle", transform: "rotate(-90 12 " + (T + H - B) / 2 + ")" }, opts.yLabel || ""));
  svg.appendChild(axes);
  series.forEach((s, i) => {
    if (s.points.length === 0) return;
    const d = s.points.map(([x, y]) => sx(x).toFixed(1) + "," + sy(y).toFixed(1)).join(" ");
    svg.appendChild(svgEl("polyline", {
      points: d, fill: "none", stroke: s.color, "stroke-width": s.width || 1.5,
      "stroke-opacity": s.opacity || 1, class: "series", "data-label": s.label,
    }));
    if (s.points.length === 1) {
      const [x, y] = s.points[0];
      svg.appendChild(svgEl("circle", { cx: sx(x), cy: sy(y), r: 3, fill: s.color, class: "dot" }));
    }
    const lx = L + 8, ly = T + 12 + i * 14;
    svg.appendChild(svgEl("line", { x1: lx, x2: lx + 16, y1: ly - 4, y2: ly - 4, stroke: s.color, "stroke-width": 2, "stroke-opacity": s.opacity || 1 }));
    svg.appendChild(svgEl("text", { x: lx + 20, y: ly, class: "legend" }, s.label));
  });
}
