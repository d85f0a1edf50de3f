// The run page: summary, live frames (WebSocket of JPEGs), learning curve, events, log lines.
"use strict";

const runId = decodeURIComponent(location.pathname.split("/").pop());
const state = { events: -1, logs: { stdout: -1, stderr: -1 }, read: -1, running: true, streaming: false };
// Read by the end-to-end tests and the benchmark: what the page has shown.
window.__watch = { frames: 0, lastSeq: null, sizes: [], shown: [], events: 0, logs: 0, curvePoints: 0 };

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
  const rows = [
    ["status", data.status], ["worker", data.worker], ["env", data.env_id || "-"],
    ["steps", data.counts.steps], ["episodes", data.counts.episodes],
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
  if (state.running && !data.same_host) {
    watch.show("stream-note", "the run's runner is on host " + data.host + ": its frames are not on this machine");
  } else if (state.running && !state.streaming) {
    startStream();
  } else if (!state.running && !state.streaming) {
    watch.show("stream-note", "the run has ended: live frames exist only while a run is publishing");
  }
  return true;
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
    data.episodes + " episode(s); smoothed: mean of the last " + data.smooth;
  // episodes without a usable return are not drawn: say how many, and why
  document.getElementById("curve-skipped").textContent = data.skipped_text ? data.skipped_text + " (not on the curve)" : "";
  drawChart(document.getElementById("curve"), [
    { label: "return", color: "#90caf9", points: data.raw, width: 1 },
    { label: "smoothed", color: "#0d47a1", points: data.smoothed, width: 2 },
  ], { xLabel: "env steps", yLabel: "episode return" });
  window.__watch.curvePoints = data.raw.length;
}

function startStream() {
  state.streaming = true;
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const token = watch.token();
  const url = scheme + "//" + location.host + "/ws/runs/" + encodeURIComponent(runId) + "/frames" +
    (token ? "?token=" + encodeURIComponent(token) : "");
  const socket = new WebSocket(url);
  socket.binaryType = "arraybuffer";
  const canvas = document.getElementById("frame");
  const context = canvas.getContext("2d");
  let count = 0, since = performance.now();
  socket.onmessage = async (message) => {
    if (typeof message.data === "string") {
      const note = JSON.parse(message.data);
      watch.show("stream-note", note.message);
      return;
    }
    const view = new DataView(message.data);
    const length = view.getUint32(0);
    const header = JSON.parse(new TextDecoder().decode(new Uint8Array(message.data, 4, length)));
    const blob = new Blob([new Uint8Array(message.data, 4 + length)], { type: "image/jpeg" });
    let bitmap;
    try {
      bitmap = await createImageBitmap(blob);  // decoded off the main thread
    } catch (e) {
      watch.show("stream-note", "a frame could not be decoded (" + e + ")");
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

async function tick() {
  // All four at once: the first look at a long run costs one round trip, not two.
  const [found] = await Promise.all([summary(), events(), logs(), curve()]);
  setTimeout(tick, found && !state.running ? 5000 : 1000);
}

document.addEventListener("DOMContentLoaded", () => {
  watch.token();
  document.getElementById("home").setAttribute("href", "/" + location.search);
  for (const button of document.querySelectorAll("#controls button")) {
    button.addEventListener("click", () => control(button.dataset.cmd));
  }
  tick();
});
