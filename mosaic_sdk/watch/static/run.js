// The run page: summary, live frames (WebSocket of JPEGs), charts (episode returns and the
// run's series, charts.js), events, log lines.
"use strict";

const runId = decodeURIComponent(location.pathname.split("/").pop());
const state = {
  events: -1, logs: { stdout: -1, stderr: -1 }, read: -1, running: true, streaming: false,
  // a multi-agent run: its agents, which are shown, each one's curve cursor and points
  agents: [], hiddenAgents: new Set(), agentRead: {}, agentPoints: {},
  // a run with several FastLane streams (one per worker): the open ones, the hidden ones
  streams: [], open: {}, hiddenStreams: new Set(),
  evaluation: false, evalAfter: 0, evalBatches: [],
};
// Read by the end-to-end tests and the benchmark: what the page has shown.
window.__watch = {
  frames: 0, lastSeq: null, sizes: [], shown: [], events: 0, logs: 0, curvePoints: 0,
  agentCurves: {}, streamFrames: {}, evalBatches: 0, seriesCharts: [], seriesDrawMs: 0,
  chart: (title) => board && board.panel(title),
};
let board = null;  // the charts (SeriesBoard): built once the page has loaded
const returns = { line: null, panel: null, agentPanel: null, evalPanel: null };

function append(box, nodes) {
  const atEnd = box.scrollTop + box.clientHeight >= box.scrollHeight - 4;
  for (const node of nodes) box.appendChild(node);
  while (box.childNodes.length > 2000) box.removeChild(box.firstChild);
  if (atEnd) box.scrollTop = box.scrollHeight;
}

async function summary() {
  const { ok, data } = await watch.api(watch.apiUrl(runId));
  if (!ok) { watch.show("notice", data.error); return false; }
  watch.show("notice", "");
  document.getElementById("title").textContent = "run " + data.run_id;
  const c = data.named_counts;
  const counted = c.games === null
    ? [["episodes", c.episodes]]
    : [["games", c.games], ["agent-episodes", c.agent_episodes]];
  const rows = [
    ["status", data.status], ["worker", data.worker], ["env", data.env_id || "-"],
    ["env steps", c.env_steps], ["step lines", c.step_lines], ...counted,
    ["last return", watch.num(data.last_return)], ["duration", watch.duration(data.duration_seconds)],
    ["events", data.counts.events], ["log lines", data.counts.log_lines],
    ["invalid lines", data.counts.invalid_lines], ["exit code", data.exit_code === null ? "-" : data.exit_code],
    ["error", data.error || "-"],
  ];
  document.querySelector("#summary tbody").replaceChildren(...rows.map(([k, v]) => {
    const tr = watch.el("tr"); tr.appendChild(watch.el("th", k)); tr.appendChild(watch.el("td", v)); return tr;
  }));
  document.getElementById("config").textContent = JSON.stringify(data.config, null, 2);
  document.getElementById("controls").hidden = !data.control;
  for (const button of document.querySelectorAll("#controls button")) {
    button.hidden = !(data.control_commands || []).includes(button.dataset.cmd);
  }
  state.running = data.status.startsWith("running");
  showAgents(data.agents || []);
  state.evaluation = !!data.evaluation;
  const several = (data.streams || []).length > 1;
  if (state.running && !data.same_host) {
    watch.show("stream-note", "the run's runner is on host " + data.host + ": its frames are not on this machine");
  } else if (state.running && several) {
    showStreams(data.streams);
  } else if (state.running && !state.streaming) {
    startStream();
  } else if (!state.running && !state.streaming && Object.keys(state.open).length === 0) {
    watch.show("stream-note", "the run has ended: live frames exist only while a run is publishing");
  }
  return true;
}

// A row of checkboxes, one per item; toggling one calls onChange(key, shown).
function filterBoxes(box, items, hidden, onChange) {
  const have = new Set(Array.from(box.querySelectorAll("input")).map((i) => i.dataset.key));
  for (const item of items) {
    if (have.has(item.key)) continue;
    const input = watch.el("input", null, { type: "checkbox", "data-key": item.key });
    input.checked = !hidden.has(item.key);
    input.addEventListener("change", () => {
      if (input.checked) hidden.delete(item.key); else hidden.add(item.key);
      onChange(item.key, input.checked);
    });
    const label = watch.el("label");
    label.appendChild(input);
    label.appendChild(document.createTextNode(" " + item.label));
    box.appendChild(label);
  }
  box.hidden = items.length === 0;
}

function agentQuery(agent) {
  return agent.agent_id === null ? "agentless=1" : "agent=" + encodeURIComponent(agent.agent_id);
}

function showAgents(agents) {
  state.agents = agents;
  document.getElementById("agents-section").hidden = agents.length === 0;
  if (agents.length === 0) return;
  document.getElementById("agents-info").textContent = agents.length + " agents";
  document.querySelector("#agents tbody").replaceChildren(...agents.map((a) => {
    const tr = watch.el("tr");
    tr.appendChild(watch.el("td", a.label));
    tr.appendChild(watch.el("td", a.steps, { class: "n" }));
    tr.appendChild(watch.el("td", a.episodes, { class: "n" }));
    tr.appendChild(watch.el("td", watch.num(a.mean_return), { class: "n" }));
    return tr;
  }));
  filterBoxes(document.getElementById("agent-filter"),
    agents.map((a) => ({ key: agentQuery(a), label: a.label })), state.hiddenAgents, drawAgents);
}

async function agentCurves() {
  await Promise.all(state.agents.map(async (agent) => {
    const key = agentQuery(agent);
    const known = key in state.agentRead ? state.agentRead[key] : -1;
    const { ok, data } = await watch.api(watch.apiUrl(runId, "curve") + "?known=" + known + "&" + key);
    if (!ok || data.unchanged) return;
    state.agentRead[key] = data.read;
    const old = state.agentPoints[key];
    state.agentPoints[key] = {
      label: agent.label, agent_id: agent.agent_id, name: "episode return", run_id: runId,
      steps: data.raw.map((p) => p[0]), values: data.raw.map((p) => p[1]), wall: null,
      version: (old ? old.version : 0) + 1,
    };
  }));
  if (state.agents.length) drawAgents();
}

function drawAgents() {
  const lines = [];
  state.agents.forEach((agent, i) => {
    const key = agentQuery(agent);
    const line = state.agentPoints[key];
    if (!line || state.hiddenAgents.has(key)) return;
    line.color = watch.colors[i % watch.colors.length];
    lines.push(line);
  });
  if (!returns.agentPanel) {
    returns.agentPanel = new ChartPanel(board.grid, "episode return per agent",
      { xLabel: "env steps of the agent", yLabel: "episode return" });
    board.grid.insertBefore(returns.agentPanel.box, board.grid.children[1] || null);
    board.extra.push(returns.agentPanel);
  }
  returns.agentPanel.update(lines, board.settings);
  const shown = {};
  for (const l of lines) shown[l.label] = l.values.length;
  window.__watch.agentCurves = shown;
}

function showStreams(streams) {
  state.streams = streams;
  filterBoxes(document.getElementById("stream-filter"),
    streams.map((s) => ({ key: s.stream, label: s.label })), state.hiddenStreams, (key, shown) => {
      const figure = document.querySelector('figure[data-stream="' + CSS.escape(key) + '"]');
      if (figure) figure.hidden = !shown;
      if (!shown && state.open[key]) { state.open[key].close(); }
      if (shown) showStreams(state.streams);
    });
  const box = document.getElementById("streams");
  for (const s of streams) {
    let figure = box.querySelector('figure[data-stream="' + CSS.escape(s.stream) + '"]');
    if (!figure) {
      figure = watch.el("figure", null, { "data-stream": s.stream });
      figure.appendChild(watch.el("canvas", null, { role: "img", "aria-label": "the newest frame of " + s.label }));
      figure.appendChild(watch.el("figcaption", s.label));
      box.appendChild(figure);
    }
    figure.hidden = state.hiddenStreams.has(s.stream);
    if (!figure.hidden && !state.open[s.stream]) openStream(s.stream, s.label, figure);
  }
}

// One per-worker stream into its own small canvas (a run with several streams).
function openStream(stream, label, figure) {
  const socket = frameSocket(stream);
  state.open[stream] = socket;
  const canvas = figure.querySelector("canvas");
  const caption = figure.querySelector("figcaption");
  const context = canvas.getContext("2d");
  socket.onmessage = async (message) => {
    if (typeof message.data === "string") {
      caption.textContent = label + ": " + JSON.parse(message.data).message;
      return;
    }
    const { header, bitmap } = await decodeFrame(message.data);
    socket.send("ack");
    if (!bitmap) return;
    if (canvas.width !== bitmap.width || canvas.height !== bitmap.height) {
      canvas.width = bitmap.width; canvas.height = bitmap.height;
    }
    context.drawImage(bitmap, 0, 0);
    bitmap.close();
    caption.textContent = label + "\n" + header.hud_text;
    const counts = window.__watch.streamFrames;
    counts[stream] = (counts[stream] || 0) + 1;
  };
  socket.onclose = () => { delete state.open[stream]; };
}

function frameSocket(stream) {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const params = new URLSearchParams();
  const token = watch.token();
  if (token) params.set("token", token);
  if (stream !== undefined) params.set("stream", stream);
  const query = params.toString();
  const socket = new WebSocket(scheme + "//" + location.host + "/ws/runs/" + encodeURIComponent(runId) +
    "/frames" + (query ? "?" + query : ""));
  socket.binaryType = "arraybuffer";
  return socket;
}

async function decodeFrame(buffer) {
  const view = new DataView(buffer);
  const length = view.getUint32(0);
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 4, length)));
  const blob = new Blob([new Uint8Array(buffer, 4 + length)], { type: "image/jpeg" });
  try {
    return { header, bitmap: await createImageBitmap(blob) };  // decoded off the main thread
  } catch (e) {
    return { header, bitmap: null, error: String(e) };
  }
}

async function evaluation() {
  if (!state.evaluation) return;
  const { ok, data } = await watch.api(watch.apiUrl(runId, "eval") + "?after=" + state.evalAfter);
  if (!ok) return;
  document.getElementById("eval-section").hidden = false;
  const s = data.summary;
  if (s) {
    document.getElementById("eval-info").textContent = s.status + ": " + s.episodes +
      (s.episodes_planned ? " of " + s.episodes_planned : "") + " episodes, average " +
      watch.num(s.avg_return) + " (min " + watch.num(s.min_return) + ", max " + watch.num(s.max_return) + ")";
  }
  if (data.batches.length === 0) return;
  for (const b of data.batches) state.evalAfter = Math.max(state.evalAfter, b.line_no);
  state.evalBatches.push(...data.batches);
  // the summary file knows the last batch's min and max when its event did not carry them
  const last = s && s.last_batch;
  for (const b of state.evalBatches) {
    if (last && b.batch === last.index && b.min === null) { b.min = last.min_return; b.max = last.max_return; }
  }
  document.querySelector("#eval tbody").replaceChildren(...state.evalBatches.map((b) => {
    const tr = watch.el("tr");
    for (const v of [b.batch, b.batch_episodes, watch.num(b.avg), watch.num(b.min), watch.num(b.max)]) {
      tr.appendChild(watch.el("td", v, { class: "n" }));
    }
    return tr;
  }));
  const line = (key, label, color, width) => {
    const kept = state.evalBatches.filter((b) => b[key] !== null);
    return { label, color, width, steps: kept.map((b) => b.batch), values: kept.map((b) => b[key]),
      wall: null, version: state.evalBatches.length };
  };
  if (!returns.evalPanel) {
    returns.evalPanel = new ChartPanel(document.getElementById("eval-curve"), "evaluation return",
      { xLabel: "batch", yLabel: "episode return", smoothable: false });
  }
  returns.evalPanel.update([
    line("avg", "average", "#0d47a1", 2), line("min", "min", "#90caf9", 1), line("max", "max", "#ef9a9a", 1),
  ], board.settings);
  window.__watch.evalBatches = state.evalBatches.length;
}

async function events() {
  const { ok, data } = await watch.api(watch.apiUrl(runId, "events") + "?after=" + state.events);
  if (!ok) return;
  append(document.getElementById("events"), data.events.map((e) => {
    state.events = Math.max(state.events, e.line_no);
    const flag = e.synthesised ? " (written by mosaic run)" : "";
    return watch.el("div", "#" + e.line_no + " " + e.event + flag + "  " + (e.payload_json || ""), { class: "event" });
  }));
  window.__watch.events = document.getElementById("events").childNodes.length;
}

async function logs() {
  const q = "?after_stdout=" + state.logs.stdout + "&after_stderr=" + state.logs.stderr;
  const { ok, data } = await watch.api(watch.apiUrl(runId, "logs") + q);
  if (!ok) return;
  append(document.getElementById("logs"), data.logs.map((line) => {
    state.logs[line.stream] = Math.max(state.logs[line.stream], line.line_no);
    const tag = "[" + line.stream + (line.kind === "invalid" ? " invalid" : "") + "] ";
    return watch.el("div", tag + line.text, { class: "log " + line.stream + " " + line.kind });
  }));
  window.__watch.logs = document.getElementById("logs").childNodes.length;
}

async function curve() {
  const { ok, data } = await watch.api(watch.apiUrl(runId, "curve") + "?known=" + state.read);
  if (!ok || data.unchanged) return;
  state.read = data.read;
  document.getElementById("curve-info").textContent =
    "episode return: " + data.episodes + " episode(s)" + (data.raw.length < data.episodes ? ", " + data.raw.length + " drawn (lowest and highest kept)" : "");
  // episodes without a usable return are not drawn: say how many, and why
  document.getElementById("curve-skipped").textContent = data.skipped_text ? data.skipped_text + " (not on the curve)" : "";
  const version = returns.line ? returns.line.version + 1 : 1;
  returns.line = {
    label: "episode return", name: "episode return", run_id: runId, color: "#0d47a1", width: 2,
    steps: data.raw.map((p) => p[0]), values: data.raw.map((p) => p[1]), wall: null, version,
  };
  if (!returns.panel) {
    returns.panel = new ChartPanel(board.grid, "episode return", { xLabel: "env steps", yLabel: "episode return" });
    board.grid.insertBefore(returns.panel.box, board.grid.firstChild);
    board.extra.push(returns.panel);
  }
  returns.panel.update([returns.line], board.settings);
  window.__watch.curvePoints = data.raw.length;
}

function startStream() {
  state.streaming = true;
  const socket = frameSocket();
  const canvas = document.getElementById("frame");
  const context = canvas.getContext("2d");
  let count = 0, since = performance.now();
  socket.onmessage = async (message) => {
    if (typeof message.data === "string") {
      const note = JSON.parse(message.data);
      watch.show("stream-note", note.message);
      return;
    }
    const { header, bitmap, error } = await decodeFrame(message.data);
    if (!bitmap) {
      watch.show("stream-note", "a frame could not be decoded (" + error + ")");
      socket.send("ack");
      return;
    }
    if (canvas.width !== bitmap.width || canvas.height !== bitmap.height) {
      canvas.width = bitmap.width; canvas.height = bitmap.height;
    }
    context.drawImage(bitmap, 0, 0);
    bitmap.close();
    socket.send("ack");
    const now = performance.timeOrigin + performance.now();
    canvas.hidden = false;
    const w = window.__watch;
    w.frames += 1; w.lastSeq = header.seq;
    if (w.shown.length < 20000) w.shown.push([header.generation, header.seq, now]);
    const size = header.width + "x" + header.height;
    if (w.sizes[w.sizes.length - 1] !== size) w.sizes.push(size);
    document.getElementById("hud").textContent = header.hud_text;
    count += 1;
    const elapsed = (performance.now() - since) / 1000;
    if (elapsed >= 1) {
      document.getElementById("stream-stats").textContent =
        "frame " + header.seq + " (" + size + ", generation " + header.generation + "), " +
        (count / elapsed).toFixed(1) + " frames/s";
      count = 0; since = performance.now();
    }
  };
  socket.onclose = (event) => {
    state.streaming = false;
    watch.show("stream-note", "the frame stream closed" + (event.reason ? ": " + event.reason : "") +
      (state.running ? "; reconnecting" : ""));
  };
}

async function control(cmd) {
  const reply = document.getElementById("control-reply");
  reply.textContent = cmd + "...";
  const { data } = await watch.api(watch.apiUrl(runId, "control"), {
    method: "POST", body: JSON.stringify({ cmd: cmd }), headers: { "Content-Type": "application/json" },
  });
  if (data.error) { reply.textContent = data.error; return; }
  const r = data.reply || {};
  reply.textContent = r.ok ? cmd + ": done" : cmd + " refused: " + ((r.error || {}).message || "no reason given");
}

// The series follow on their own: the first look at a long run may take a while, and the
// summary, events and log lines keep coming meanwhile.
async function follow() {
  await board.poll();
  setTimeout(follow, state.running ? 1000 : 5000);
}

async function tick() {
  // All four at once: the first look at a long run costs one round trip, not two.
  const [found] = await Promise.all([summary(), events(), logs(), curve()]);
  await Promise.all([agentCurves(), evaluation()]);  // they need what summary() found
  setTimeout(tick, found && !state.running ? 5000 : 1000);
}

document.addEventListener("DOMContentLoaded", () => {
  watch.token();
  const slot = document.getElementById("series-slot");
  const section = seriesSection();
  slot.replaceWith(section);
  const grid = section.querySelector(".chart-grid");
  section.insertBefore(document.getElementById("curve-info"), grid);
  section.insertBefore(document.getElementById("curve-skipped"), grid);
  board = new SeriesBoard(section, [runId]);
  document.getElementById("home").setAttribute("href", "/" + location.search);
  for (const button of document.querySelectorAll("#controls button")) {
    button.addEventListener("click", () => control(button.dataset.cmd));
  }
  tick();
  follow();
});
