// The runs page: every run of the store, refreshed every 2 s; filters; pick runs to compare.
"use strict";

const picked = new Set();

function fillSelect(id, values) {
  const select = document.getElementById(id);
  const current = select.value;
  const have = new Set(Array.from(select.options).map((o) => o.value));
  for (const value of values) {
    if (!have.has(value)) select.appendChild(watch.el("option", value, { value: value }));
  }
  select.value = current;
}

function row(run) {
  const tr = watch.el("tr", null, { "data-run": run.run_id });
  const box = watch.el("input", null, { type: "checkbox", "aria-label": "pick" });
  box.checked = picked.has(run.run_id);
  box.addEventListener("change", () => {
    if (box.checked) picked.add(run.run_id); else picked.delete(run.run_id);
    document.getElementById("compare").disabled = picked.size === 0;
  });
  const pick = watch.el("td"); pick.appendChild(box); tr.appendChild(pick);
  const link = watch.el("a", run.run_id, { href: watch.runUrl(run.run_id) + location.search });
  const id = watch.el("td"); id.appendChild(link); tr.appendChild(id);
  const stalled = run.stalled ? " stalled" : "";
  tr.appendChild(watch.el("td", run.status, { class: "status " + run.status.split(" ")[0] + stalled }));
  tr.appendChild(watch.el("td", run.worker));
  tr.appendChild(watch.el("td", run.env_id || "-"));
  tr.appendChild(watch.el("td", run.steps, { class: "n" }));
  tr.appendChild(watch.el("td", run.env_steps, { class: "n" }));
  tr.appendChild(watch.el("td", run.episodes, { class: "n" }));
  tr.appendChild(watch.el("td", watch.num(run.last_return), { class: "n" }));
  tr.appendChild(watch.el("td", watch.duration(run.duration_seconds), { class: "n" }));
  return tr;
}

async function refresh() {
  const params = new URLSearchParams();
  const status = document.getElementById("status").value;
  const worker = document.getElementById("worker").value;
  if (status) params.set("status", status);
  if (worker) params.set("worker", worker);
  const { ok, data } = await watch.api("/api/runs?" + params);
  if (!ok) { watch.show("notice", data.error); return; }
  document.getElementById("store").textContent = "store " + data.store;
  watch.show("notice", data.notice || (data.runs.length ? "" : "No runs match."));
  fillSelect("status", data.statuses);
  fillSelect("worker", data.workers);
  const body = document.querySelector("#runs tbody");
  body.replaceChildren(...data.runs.map(row));
  document.getElementById("count").textContent = data.runs.length + " run(s)";
}

document.addEventListener("DOMContentLoaded", () => {
  watch.token();
  for (const id of ["status", "worker"]) document.getElementById(id).addEventListener("change", refresh);
  document.getElementById("compare").addEventListener("click", () => {
    const params = new URLSearchParams();
    for (const runId of picked) params.append("run", runId);
    location.href = "/compare?" + params;
  });
  refresh();
  setInterval(refresh, 2000);
});
