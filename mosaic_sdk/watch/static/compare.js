// Several runs on the same charts (runs picked on the runs page: ?run=A&run=B): their episode
// returns on one chart, and a chart per series name with a line per run (charts.js).
"use strict";

const runIds = new URLSearchParams(location.search).getAll("run");
const curves = new Map();  // run id -> its episode-return line
let board = null;
let returnPanel = null;
window.__watch = { seriesCharts: [], seriesDrawMs: 0, chart: (title) => board && board.panel(title) };

async function returnCurves() {
  const problems = [];
  await Promise.all(runIds.map(async (runId) => {
    const old = curves.get(runId);
    const known = old ? old.read : -1;
    const { ok, data } = await watch.api(watch.apiUrl(runId, "curve") + "?known=" + known);
    if (!ok) { problems.push(runId + ": " + data.error); return; }
    if (data.unchanged) return;
    curves.set(runId, {
      run_id: runId, name: "episode return", read: data.read, version: (old ? old.version : 0) + 1,
      label: runId + " (" + data.episodes + " episodes" + (data.skipped_text ? "; " + data.skipped_text : "") + ")",
      steps: data.raw.map((p) => p[0]), values: data.raw.map((p) => p[1]), wall: null, width: 2,
    });
  }));
  watch.show("notice", runIds.length ? problems.join("\n") : "No runs picked: pick some on the runs page.");
  const lines = runIds.filter((id) => curves.has(id)).map((id) => curves.get(id));
  lines.forEach((line, i) => { line.color = watch.colors[i % watch.colors.length]; });
  if (!returnPanel) {
    returnPanel = new ChartPanel(board.grid, "episode return", { xLabel: "env steps", yLabel: "episode return" });
    board.grid.insertBefore(returnPanel.box, board.grid.firstChild);
    board.extra.push(returnPanel);
  }
  returnPanel.update(lines, board.settings);
}

async function refresh() {
  await Promise.all([returnCurves(), board.poll()]);
  const list = document.getElementById("runs");
  list.replaceChildren(...runIds.map((id, i) => {
    const li = watch.el("li");
    const swatch = watch.el("span", null, { class: "swatch" });
    swatch.style.background = watch.colors[i % watch.colors.length];
    li.appendChild(swatch);
    li.appendChild(watch.el("a", id, { href: watch.runUrl(id) }));
    return li;
  }));
}

document.addEventListener("DOMContentLoaded", () => {
  watch.token();
  const section = seriesSection();
  document.getElementById("series-slot").replaceWith(section);
  board = new SeriesBoard(section, runIds);
  const tick = async () => { await refresh(); setTimeout(tick, 2000); };
  tick();
});
