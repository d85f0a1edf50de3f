// Several runs' smoothed curves on one chart (runs picked on the runs page: ?run=A&run=B).
"use strict";

const runIds = new URLSearchParams(location.search).getAll("run");
const curves = new Map();

async function refresh() {
  const problems = [];
  await Promise.all(runIds.map(async (runId) => {
    const known = curves.has(runId) ? curves.get(runId).read : -1;
    const { ok, data } = await watch.api(watch.apiUrl(runId, "curve") + "?known=" + known);
    if (!ok) { problems.push(runId + ": " + data.error); return; }
    if (!data.unchanged) curves.set(runId, data);
  }));
  watch.show("notice", runIds.length ? problems.join("\n") : "No runs picked: pick some on the runs page.");
  const series = runIds.filter((id) => curves.has(id)).map((id, i) => ({
    label: id + " (" + curves.get(id).episodes + " episodes"
      + (curves.get(id).skipped_text ? "; " + curves.get(id).skipped_text : "") + ")",
    color: watch.colors[i % watch.colors.length],
    points: curves.get(id).smoothed,
    width: 2,
  }));
  drawChart(document.getElementById("curves"), series, { xLabel: "env steps", yLabel: "episode return" });
  const list = document.getElementById("runs");
  list.replaceChildren(...runIds.map((id) => {
    const li = watch.el("li"); li.appendChild(watch.el("a", id, { href: watch.runUrl(id) })); return li;
  }));
}

document.addEventListener("DOMContentLoaded", () => {
  watch.token();
  refresh();
  setInterval(refresh, 3000);
});
