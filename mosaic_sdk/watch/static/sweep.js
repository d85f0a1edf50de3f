// The sweep page: one sweep's trials live (refreshed every 2 s while it runs), its parameters
// against the objective (ECharts' parallel coordinates), Optuna's parameter importance (ECharts
// bars), the best-so-far curve (uPlot), the Pareto front of several objectives, and a trial's
// curves on click (its run page). Everything from the store is set as text only.
"use strict";

const sweep = {
  id: decodeURIComponent(location.pathname.split("/").pop()),
  detail: null,
  selected: null,
  parallel: null, // the ECharts instance of the parallel coordinates
  importance: null, // the ECharts instance of the importance bars
  importanceData: null, // what /importance answered last
  importanceFor: null, // the finished count it was asked for
  importanceAt: 0, // when (performance.now())
  best: null, // the uPlot of the best-so-far curve
  parallelKeys: [], // the trial of each line drawn, in order
  drawnSignature: "",
  timer: null,
};
window.__sweep = sweep;

const FINISHED = ["completed", "stopped", "pruned", "failed"];

function fmt(value) {
  if (value === null || value === undefined) return "-";
  if (typeof value === "number") return Number.isInteger(value) ? String(value) : value.toPrecision(4);
  return typeof value === "string" ? value : JSON.stringify(value);
}

function api(what) {
  return watch.api("/api/sweeps/" + encodeURIComponent(sweep.id) + (what ? "/" + what : ""));
}

// -- summary and table ---------------------------------------------------------------------
function drawSummary(d) {
  const objectives = d.objectives.map((o) => o.label).join("; ");
  const counts = Object.entries(d.counts).map(([k, n]) => n + " " + k).join(", ") || "no trials yet";
  const lines = [
    d.worker + " on engine " + d.engine + ": " + d.status + (d.error ? " (" + d.error + ")" : ""),
    "sampler " + d.sampler + (d.pruner ? ", pruner " + d.pruner : "") + (d.seeds.length ? ", seeds " + d.seeds.join(" ") : ""),
    (d.objectives.length > 1 ? "objectives: " : "objective: ") + objectives,
    "trials: " + counts,
  ];
  if (d.pareto_front) lines.push("Pareto front: " + d.pareto_front.length + " trial(s), marked \u2605 (no other completed trial is as good in every objective and better in one)");
  document.getElementById("summary").replaceChildren(...lines.map((t) => watch.el("div", t)));
  document.getElementById("title").textContent = "sweep " + d.sweep_id;
}

function paramNames(d) {
  const names = d.params.map((p) => p.name);
  if (d.seeds.length) names.push("seed");
  return names;
}

function drawTable(d) {
  const names = paramNames(d);
  const head = ["trial", "try", "state", ...names, ...d.objectives.map((o) => o.name + " (" + o.mode + ")")];
  if (d.pareto_front) head.push("Pareto");
  head.push("pruned at step", "episodes", "run");
  const tr = watch.el("tr");
  for (const h of head) tr.appendChild(watch.el("th", h));
  document.querySelector("#trials thead").replaceChildren(tr);
  const rows = d.trials.map((t) => {
    const row = watch.el("tr", null, { class: "trial", "data-trial": t.trial_key });
    if (t.trial_key === sweep.selected) row.classList.add("chosen");
    row.appendChild(watch.el("td", t.trial_key));
    row.appendChild(watch.el("td", t.attempts > 1 ? t.attempt + " of " + t.attempts : t.attempt, { class: "n" }));
    row.appendChild(watch.el("td", t.status, { class: "status " + t.status, title: t.error || "" }));
    for (const name of names) row.appendChild(watch.el("td", fmt(t.params[name]), { class: "n" }));
    for (const v of t.values) row.appendChild(watch.el("td", fmt(v), { class: "n" }));
    if (d.pareto_front) row.appendChild(watch.el("td", t.pareto ? "\u2605 front" : "", { class: t.pareto ? "pareto" : "" }));
    row.appendChild(watch.el("td", fmt(t.pruned_step), { class: "n" }));
    row.appendChild(watch.el("td", t.episodes, { class: "n" }));
    const run = watch.el("td");
    if (t.run_id) run.appendChild(watch.el("a", t.run_id, { href: watch.withToken(watch.runUrl(t.run_id)) }));
    row.appendChild(run);
    row.addEventListener("click", (event) => {
      if (event.target.tagName !== "A") select(t.trial_key);
    });
    return row;
  });
  document.querySelector("#trials tbody").replaceChildren(...rows);
}

// -- a trial's details and curves ------------------------------------------------------------
function select(key) {
  const d = sweep.detail;
  const t = d && d.trials.find((x) => x.trial_key === key);
  if (!t) return;
  sweep.selected = key;
  for (const row of document.querySelectorAll("#trials tr.trial")) {
    row.classList.toggle("chosen", row.getAttribute("data-trial") === key);
  }
  document.getElementById("selected").hidden = false;
  document.getElementById("selected-key").textContent = key;
  const values = d.objectives.map((o, i) => o.name + " " + fmt(t.values[i])).join(", ");
  const pruned = t.status === "pruned" ? ", stopped at step " + fmt(t.pruned_step) : "";
  const text = t.status + pruned + "; " + values + "; parameters " + JSON.stringify(t.params) + (t.pareto ? "; on the Pareto front" : "");
  document.getElementById("selected-text").textContent = text;
  const link = document.getElementById("selected-curves");
  link.hidden = !t.run_id;
  if (t.run_id) link.setAttribute("href", watch.withToken(watch.runUrl(t.run_id)));
}

// -- parallel coordinates (ECharts) ----------------------------------------------------------
function categoryLabel(value) {
  return typeof value === "string" ? value : JSON.stringify(value);
}

function axisValue(p, value) {
  if (p.kind === "category") return categoryLabel(value);
  return typeof value === "number" ? value : Number(value);
}

function parallelOption(d) {
  const axes = d.params.map((p, i) => {
    if (p.kind === "category") return { dim: i, name: p.name, type: "category", data: p.values.map(categoryLabel) };
    return { dim: i, name: p.name, type: p.kind === "log" ? "log" : "value", scale: true };
  });
  d.objectives.forEach((o, j) => axes.push({ dim: d.params.length + j, name: o.name + " (" + o.mode + ")", type: "value", scale: true }));
  const shown = d.trials.filter((t) => t.values.every((v) => v !== null) && d.params.every((p) => t.params[p.name] !== undefined));
  const item = (t) => ({ name: t.trial_key, value: [...d.params.map((p) => axisValue(p, t.params[p.name])), ...t.values] });
  const groups = [
    { name: "trials", keep: (t) => t.status !== "pruned" && !t.pareto, style: { width: 1.5, opacity: 0.8 } },
    { name: "Pareto front", keep: (t) => t.pareto, style: { width: 3.5, opacity: 1, color: "#f57f17" } },
    { name: "pruned", keep: (t) => t.status === "pruned", style: { width: 1.5, opacity: 0.7, color: "#9e9e9e", type: "dashed" } },
  ];
  sweep.parallelKeys = [];
  const series = [];
  for (const g of groups) {
    const data = shown.filter(g.keep);
    if (!data.length) continue;
    sweep.parallelKeys.push(...data.map((t) => t.trial_key));
    series.push({ name: g.name, type: "parallel", lineStyle: g.style, emphasis: { lineStyle: { width: 4 } }, data: data.map(item), animation: false });
  }
  const values = shown.filter((t) => t.status !== "pruned").map((t) => t.values[0]);
  const option = {
    animation: false,
    parallelAxis: axes,
    parallel: { left: 50, right: 90, top: 40, bottom: 30 },
    legend: { show: series.length > 1, bottom: 0 },
    tooltip: { trigger: "item", formatter: (p) => p.name },
    series: series,
  };
  const colored = series.findIndex((s) => s.name === "trials");
  if (colored >= 0 && values.length) {
    option.visualMap = {
      type: "continuous", dimension: d.params.length, seriesIndex: colored,
      min: Math.min(...values), max: Math.max(...values), show: false,
      inRange: { color: d.objectives[0].mode === "max" ? ["#90caf9", "#0d47a1"] : ["#0d47a1", "#90caf9"] },
    };
  }
  return option;
}

function drawParallel(d) {
  if (typeof echarts === "undefined") return;
  if (!sweep.parallel) {
    sweep.parallel = echarts.init(document.getElementById("parallel"), null, { renderer: "svg" });
    sweep.parallel.on("click", (p) => { if (p.seriesType === "parallel" && p.name) select(p.name); });
  }
  sweep.parallel.setOption(parallelOption(d), { notMerge: true });
}

// -- parameter importance (Optuna's, ECharts bars) -------------------------------------------
// Asked again when more trials finished, at most every 10 s while the sweep runs (the server
// rebuilds the study each time).
async function refreshImportance(finished, running) {
  if (sweep.importanceFor === finished) return;
  if (running && sweep.importanceAt && performance.now() - sweep.importanceAt < 10000) return;
  sweep.importanceFor = finished;
  sweep.importanceAt = performance.now();
  const { ok, data } = await api("importance");
  if (!ok) { watch.show("importance-note", data.error); return; }
  sweep.importanceData = data;
  watch.show("importance-note", data.note || "");
  const box = document.getElementById("importance");
  box.hidden = !data.importances;
  if (!data.importances || typeof echarts === "undefined") return;
  if (!sweep.importance) sweep.importance = echarts.init(box, null, { renderer: "svg" });
  const params = data.params.slice().reverse(); // the first key on top
  sweep.importance.setOption({
    animation: false,
    grid: { left: 110, right: 20, top: 20, bottom: data.objectives.length > 1 ? 64 : 40 },
    legend: { show: data.objectives.length > 1, bottom: 0 },
    tooltip: { trigger: "item" },
    xAxis: { type: "value", min: 0, max: 1, name: "importance (PED-ANOVA)", nameLocation: "middle", nameGap: 24 },
    yAxis: { type: "category", data: params },
    series: data.importances.map((imp, i) => ({
      name: data.objectives[i].name, type: "bar", data: params.map((p) => imp[p]),
      itemStyle: { color: watch.colors[i % watch.colors.length] },
    })),
  }, { notMerge: true });
}

// -- best so far (uPlot) -----------------------------------------------------------------------
function drawBest(d) {
  if (typeof uPlot === "undefined") return;
  const b = d.best_so_far;
  const columns = [b.number, b.value, b.best];
  const box = document.getElementById("best");
  if (!sweep.best) {
    const o = d.objectives[0];
    sweep.best = new uPlot({
      width: Math.max(400, box.clientWidth || 900), height: 260,
      scales: { x: { time: false } },
      axes: [{ label: "trial number", incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000] }, { label: o.name + " (" + o.mode + ")" }],
      series: [
        { label: "trial" },
        { label: "trial's value", stroke: "#90a4ae", width: 0, points: { show: true, size: 6, fill: "#90a4ae" } },
        { label: "best so far", stroke: "#1565c0", width: 2, paths: uPlot.paths.stepped({ align: 1 }), points: { show: false } },
      ],
    }, columns, box);
  } else {
    sweep.best.setData(columns);
  }
}

// -- refresh -----------------------------------------------------------------------------------
async function refresh() {
  const { ok, data } = await api("");
  if (!ok) { watch.show("notice", data.error); return; }
  watch.show("notice", "");
  sweep.detail = data;
  drawSummary(data);
  drawTable(data);
  const signature = JSON.stringify(data.trials.map((t) => [t.trial_key, t.status, t.values, t.pareto]));
  if (signature !== sweep.drawnSignature) {
    sweep.drawnSignature = signature;
    drawParallel(data);
    drawBest(data);
  }
  if (sweep.selected) select(sweep.selected);
  const finished = data.trials.filter((t) => FINISHED.includes(t.status)).length;
  await refreshImportance(finished, data.status === "running");
  if (data.status !== "running" && sweep.timer !== null) {
    clearInterval(sweep.timer); // the sweep ended: nothing changes any more
    sweep.timer = null;
  }
  sweep.refreshed = (sweep.refreshed || 0) + 1;
}

document.addEventListener("DOMContentLoaded", () => {
  watch.token();
  document.getElementById("sweeps-link").setAttribute("href", watch.withToken("/sweeps"));
  window.addEventListener("resize", () => {
    if (sweep.parallel) sweep.parallel.resize();
    if (sweep.importance) sweep.importance.resize();
  });
  refresh();
  sweep.timer = setInterval(refresh, 2000);
});
