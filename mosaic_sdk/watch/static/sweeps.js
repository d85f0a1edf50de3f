// The sweeps page: every sweep of the store, newest first, refreshed every 2 s.
"use strict";

function sweepRow(sweep) {
  const tr = watch.el("tr", null, { "data-sweep": sweep.sweep_id });
  const link = watch.el("a", sweep.sweep_id, { href: watch.withToken("/sweeps/" + encodeURIComponent(sweep.sweep_id)) });
  const id = watch.el("td"); id.appendChild(link); tr.appendChild(id);
  tr.appendChild(watch.el("td", sweep.status, { class: "status " + sweep.status }));
  tr.appendChild(watch.el("td", sweep.worker));
  tr.appendChild(watch.el("td", sweep.engine));
  tr.appendChild(watch.el("td", new Date(sweep.created_at * 1000).toLocaleString()));
  tr.appendChild(watch.el("td", sweep.trials, { class: "n" }));
  tr.appendChild(watch.el("td", sweep.completed || 0, { class: "n" }));
  tr.appendChild(watch.el("td", sweep.failed || 0, { class: "n" }));
  const best = sweep.best === null ? "-" : sweep.metric + " " + watch.num(sweep.best, 4) + " (" + sweep.mode + ")";
  tr.appendChild(watch.el("td", best));
  return tr;
}

async function refresh() {
  const { ok, data } = await watch.api("/api/sweeps");
  if (!ok) { watch.show("notice", data.error); return; }
  document.getElementById("store").textContent = "store " + data.store;
  watch.show("notice", data.notice || (data.sweeps.length ? "" : "No sweeps in this store yet: start one with `mosaic sweep NAME SPEC`."));
  document.querySelector("#sweeps tbody").replaceChildren(...data.sweeps.map(sweepRow));
  document.getElementById("count").textContent = data.sweeps.length + " sweep(s)";
}

document.addEventListener("DOMContentLoaded", () => {
  watch.token();
  refresh();
  setInterval(refresh, 2000);
});
