"""mosaic watch's charts (uPlot, ``static/charts.js``), measured in a real browser (Debian's
Chromium driven by Playwright), beside baselines measured in the same run.

1. Draw: one chart of 20 series x 100k points each (the goal: under 300 ms in Chromium),
   timed in the page with ``performance.now()``, medians of ``--repeats``. First as the page
   does it now: the 20 series read from the server downsampled to the chart's width (each
   pixel column's lowest and highest point, ``buckets=``) in one batch request
   (``/api/series/batch``, binary float64 columns), decoded and drawn, from the request to
   uPlot's ``draw`` hook; beside, alternating in the same run, the same lines read with one
   request per series (``series/points``, base64 columns: the page before the batch route),
   each split into its read and its drawing; and the approach before (every point read,
   decoded and drawn; the same server, the same run). Then drawing alone, the 2M points already in
   the page, from the chart's update to the ``draw`` hook: smoothing off (20 lines) and on
   (TensorBoard's smoothing: each line smoothed, its raw values faint behind it: 40 lines),
   the 20 lines at the same steps (one x array) and at 20 different steps (the runs of a
   comparison: x joined, 2M values). Baselines: uPlot alone given the same columns
   ready-made (the library's floor), and the hand-written SVG chart this replaced
   (``static/chart.js`` before issue 32, read from git) drawing the same lines. Also: the
   run page of that run opened from the server (20 charts of 100k points each), navigation
   to the last chart drawn (now: downsampled from the store's block summaries; before, every
   point was read: 17-27 s), beside a copy of the run whose series are read by scanning
   (the downsampled read before the block summaries: 8-9 s), alternating in the same run;
   and the server's read alone in this process, blocks beside scanning.
2. Live: a run growing by one update a second (a ``metrics`` line of 20 values and an
   episode, through the runner's own ingest and store writer) followed by the run page in
   Chromium: the server's CPU (``mosaic watch``'s utime + stime over the window, in cores;
   goal under 0.2), beside the same server with no page open (idle) in the same run.

    python benchmarks/watch/bench_charts.py [--points 100000] [--series 20] [--seconds 30]
        [--repeats 5] [--skip-draw] [--skip-live]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from mosaic_sdk.runner.recording.ingest import LineIngest  # noqa: E402
from mosaic_sdk.runner.storage.rows import LineBatch, insert_series  # noqa: E402
from mosaic_sdk.runner.storage.schema import connect  # noqa: E402
from mosaic_sdk.runner.storage.store import RunStore  # noqa: E402
from mosaic_sdk.runner.storage.writer import StoreWriter  # noqa: E402
from mosaic_sdk.watch.browser import headless_chromium  # noqa: E402
from tests.watch.conftest import TOKEN  # noqa: E402
from tests.watch.processes import start_watch, stop  # noqa: E402
from tests.watch.storefill import metrics_line  # noqa: E402

T0 = 1_800_000_000_000_000_000
OLD_CHART = "252488d:mosaic_sdk/watch/static/chart.js"  # the SVG chart before issue 32
BATCH = "read + draw, one batch request"
PER_SERIES = "read + draw, one request per series (before)"


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def scanned_copy(store: Path, run_id: str, copy: str) -> None:
    """A copy of run ``run_id`` whose series are read by scanning their points (as every
    series was before the block summaries, and as a series whose points came out of step
    order still is): the baseline of the same points in the same store."""
    with RunStore(store) as s:
        s.create_run(copy, "bench")
    conn = connect(store)
    try:
        conn.execute("BEGIN")
        conn.execute(
            "INSERT INTO series SELECT ?, series_id, name, agent_id, points, first_step,"
            " last_step, last_value, last_wall_ns, 0 FROM series WHERE run_id = ?",
            (copy, run_id),
        )
        conn.execute(
            "INSERT INTO series_points SELECT ?, series_id, step, wall_ns, line_no, value"
            " FROM series_points WHERE run_id = ?",
            (copy, run_id),
        )
        conn.execute("COMMIT")
    finally:
        conn.close()


def store_reads(store: Path, series: int, repeats: int) -> dict[str, list[float]]:
    """The server's read alone (in this process): the 20 series downsampled to 900 pixel
    columns from their block summaries, beside the same points read by scanning."""
    out: dict[str, list[float]] = {}
    with RunStore(store, readonly=True) as s:
        for _ in range(repeats):
            for label, run_id in (("blocks", "BIG"), ("scan", "SCAN")):
                t = time.perf_counter()
                for k in range(series):
                    s.series_columns(run_id, f"metric/{k:02d}", buckets=900)
                out.setdefault(label, []).append((time.perf_counter() - t) * 1000)
    return out


def big_run(store: Path, run_id: str, series: int, points: int) -> None:
    """``series`` series of ``points`` points each, at the same steps, written with the store's
    own statement for series batches (the ingest's parsing is not what is measured here)."""
    with RunStore(store) as s:
        s.create_run(run_id, "bench")
    conn = connect(store)
    try:
        names = [(run_id, k, f"metric/{k:02d}", None) for k in range(series)]
        chunk = 20_000
        for start in range(0, points, chunk):
            batch = LineBatch()
            if start == 0:
                batch.series.extend(names)
            for i in range(start, min(points, start + chunk)):
                wall = T0 + i * 10_000_000
                for k in range(series):
                    value = k + math.sin(i / 700 + k) + 0.3 * math.sin(i * 1.7 + k * k)
                    batch.points.append((run_id, k, i * 8, wall, i + 1, value))
            conn.execute("BEGIN")
            insert_series(conn, run_id, batch)
            conn.execute("COMMIT")
    finally:
        conn.close()


FETCH_FULL = """async () => {
  const feed = board.feeds[0];
  window.__full = [];
  for (const l of feed.lines.values()) {
    window.__full.push(Object.assign({}, l, await feed.range(l, null, null, null)));
  }
  return window.__full.reduce((n, l) => n + l.values.length, 0);
}"""

# A chart's lines read (one batch request, or one request per series: ``batch``) and drawn.
FETCH_DRAW = """async ([buckets, weight, repeats, batch]) => {
  const feed = board.feeds[0];
  const base = [...feed.lines.values()];
  const times = [], draws = [], reads = [];
  let points = 0;
  for (let r = 0; r < repeats; r++) {
    const box = document.createElement("div");
    box.style.width = "900px";
    document.body.appendChild(box);
    const panel = new ChartPanel(box, "bench");
    const t0 = performance.now();
    const query = base.map((l) => ({ run_id: l.run_id, name: l.name, agent_id: l.agent_id }));
    const got = batch
      ? (await charts.batch(query, buckets)).series
      : await Promise.all(base.map((l) => feed.range(l, null, null, buckets)));
    const lines = got.map((g, i) => ({ label: "run " + i, color: watch.colors[i % 8], version: 1,
      steps: g.steps, values: g.values, wall: g.wall, downsampled: g.downsampled }));
    const t1 = performance.now();
    panel.update(lines, { weight, mode: "step" });
    while (!panel.drawnAt) await new Promise((r) => setTimeout(r, 0));
    times.push(panel.drawnAt - t0);
    reads.push(t1 - t0);
    draws.push(panel.drawnAt - t1);
    points = lines.reduce((n, l) => n + l.values.length, 0);
    panel.remove(); box.remove();
  }
  return { times, draws, reads, points };
}"""

DRAW = """async ([weight, unaligned, repeats]) => {
  const lines = window.__full.map((l, i) => ({
    label: "run " + i, color: watch.colors[i % watch.colors.length], version: 1,
    steps: unaligned ? l.steps.map((s) => s + i) : l.steps, values: l.values, wall: l.wall,
  }));
  const times = [];
  for (let r = 0; r < repeats; r++) {
    const box = document.createElement("div");
    box.style.width = "900px";
    document.body.appendChild(box);
    const panel = new ChartPanel(box, "bench");
    const t0 = performance.now();
    panel.update(lines, { weight, mode: "step" });
    while (!panel.drawnAt) await new Promise((r) => setTimeout(r, 0));
    times.push(panel.drawnAt - t0);
    panel.remove(); box.remove();
  }
  return { times, points: lines.reduce((n, l) => n + l.values.length, 0), drawn: lines.length };
}"""

UPLOT_ALONE = """async ([repeats]) => {
  const lines = window.__full;
  const data = [lines[0].steps, ...lines.map((l) => l.values)];  // float64 columns, as kept
  const series = [{}, ...lines.map((l, i) => ({ stroke: watch.colors[i % 8], width: 1.5 }))];
  const times = [];
  for (let r = 0; r < repeats; r++) {
    const box = document.createElement("div");
    document.body.appendChild(box);
    let drawn = 0;
    const t0 = performance.now();
    const u = new uPlot({ width: 900, height: 220, series, legend: { show: false },
      hooks: { draw: [() => { drawn = performance.now(); }] } }, data, box);
    while (!drawn) await new Promise((r) => setTimeout(r, 0));
    times.push(drawn - t0);
    u.destroy(); box.remove();
  }
  return { times };
}"""

SVG_BASELINE = """async ([repeats]) => {
  const lines = window.__full;
  const series = lines.map((l, i) => ({ label: "run " + i, color: watch.colors[i % 8], width: 1.5,
    points: Array.from(l.steps, (s, k) => [s, l.values[k]]) }));
  const times = [];
  for (let r = 0; r < repeats; r++) {
    const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    svg.setAttribute("width", "900"); svg.setAttribute("height", "300");
    document.body.appendChild(svg);
    const t0 = performance.now();
    drawChart(svg, series, { xLabel: "step", yLabel: "value" });
    svg.getBoundingClientRect();
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));  // painted
    times.push(performance.now() - t0);
    svg.remove();
  }
  return { times };
}"""


def draw(browser: Any, series: int, points: int, repeats: int) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="bench-charts-"))
    store = tmp / "runs.sqlite"
    t = time.perf_counter()
    big_run(store, "BIG", series, points)
    print(f"(store of {series} x {points:,} points written in {time.perf_counter() - t:.1f} s)")
    scanned_copy(store, "BIG", "SCAN")
    out: dict[str, Any] = {"store read": store_reads(store, series, repeats)}
    watch, base = start_watch(store)
    try:
        context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
        page = context.new_page()
        # the run page opened from the server (20 charts of 100k points): the run read from
        # its block summaries, and its copy read by scanning (the baseline), alternating
        for _ in range(2):
            for run_id in ("SCAN", "BIG"):
                t0 = time.perf_counter()
                page.goto(f"{base}/runs/{run_id}?token={TOKEN}")
                page.wait_for_function(
                    f"() => window.__watch.seriesCharts.length === {series} && "
                    f"window.__watch.chart('metric/{series - 1:02d}').drawnAt",
                    timeout=300_000,
                )
                out.setdefault(f"page_open_s {run_id}", []).append(time.perf_counter() - t0)
                if run_id == "SCAN":
                    got = page.evaluate(FETCH_DRAW, [900, 0.6, max(1, repeats // 2), False])
                    name = "read + draw, downsampled by scanning (before)"
                    out.setdefault(name, []).extend(got["times"])
        # the chart's lines in one batch request (the page now) and one request per series
        # (before), alternating in the same run
        for r in range(repeats):
            paths = [(BATCH, True), (PER_SERIES, False)]
            for name, batch in paths if r % 2 else paths[::-1]:  # each first in turn
                got = page.evaluate(FETCH_DRAW, [900, 0.6, 1, batch])
                for part in ("times", "draws", "reads"):
                    out.setdefault(f"{name} {part}", []).extend(got[part])
                out[f"{name} points"] = [got["points"]]
        out["read + draw, downsampled to 900 px"] = out[f"{BATCH} times"]
        out["read + draw, downsampled to 900 px draw"] = out[f"{BATCH} draws"]
        out["read + draw, downsampled to 900 px points"] = out[f"{BATCH} points"]
        for name, buckets, times in (
            ("read + draw, every point (before)", None, max(1, repeats // 2)),
        ):
            got = page.evaluate(FETCH_DRAW, [buckets, 0.6, times, False])
            out[name] = got["times"]
            out[f"{name} draw"] = got["draws"]
            out[f"{name} points"] = [got["points"]]
        out["full points"] = [page.evaluate(FETCH_FULL)]
        for name, weight, unaligned in (
            ("same steps, smoothing off", 0, False),
            ("same steps, smoothing 0.6", 0.6, False),
            ("20 different steps, smoothing 0.6", 0.6, True),
        ):
            got = page.evaluate(DRAW, [weight, unaligned, repeats])
            out[name] = got["times"]
        out["uPlot alone, columns ready"] = page.evaluate(UPLOT_ALONE, [repeats])["times"]
        try:
            old = subprocess.run(
                ["git", "-C", str(ROOT), "show", OLD_CHART],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        except (OSError, subprocess.CalledProcessError):
            old = ""
        if old:
            page.add_script_tag(content=old)
            out["SVG chart before (chart.js)"] = page.evaluate(SVG_BASELINE, [1])["times"]
        context.close()
    finally:
        stop(watch)
    return out


class LiveRun:
    """One run growing by a ``metrics`` line of ``series`` values and an episode a second,
    through the runner's ingest and store writer (in this process, not the server's)."""

    def __init__(self, store: Path, run_id: str, series: int, history: int) -> None:
        self.run_id, self.series = run_id, series
        with RunStore(store) as s:
            s.create_run(run_id, "bench")
        self.ingest = LineIngest(run_id)
        self.writer = StoreWriter(store, run_id)
        self.step = 0
        for _ in range(0, history, 1000):
            self.add(1000)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def add(self, n: int = 1) -> None:
        lines = []
        for _ in range(n):
            t = self.step
            values = {f"metric/{k:02d}": k + math.sin(t / 50 + k) for k in range(self.series)}
            lines.append(metrics_line(values, step=t * 64, ts_ns=T0 + t * 1_000_000_000))
            episode = {"type": "episode", "total_reward": t % 50, "steps": 64}
            lines.append(json.dumps(episode))
            self.step += 1
        batch = LineBatch()
        self.ingest.add(batch, [line.encode() for line in lines])
        self.writer.submit(batch)

    def loop(self) -> None:
        while not self.stopped.wait(1.0):
            self.add()

    def close(self) -> None:
        self.stopped.set()
        if self.thread.is_alive():
            self.thread.join()
        self.writer.close()


def live(browser: Any, series: int, seconds: float) -> dict[str, float]:
    tmp = Path(tempfile.mkdtemp(prefix="bench-charts-live-"))
    store = tmp / "runs.sqlite"
    run = LiveRun(store, "LIVE", series, history=10_000)
    watch, base = start_watch(store)
    try:
        run.thread.start()
        time.sleep(2)
        cpu0, t0 = cpu_seconds(watch.pid), time.monotonic()
        time.sleep(seconds)
        idle = (cpu_seconds(watch.pid) - cpu0) / (time.monotonic() - t0)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.goto(f"{base}/runs/LIVE?token={TOKEN}")
        page.wait_for_function(
            f"() => window.__watch.seriesCharts.length === {series}", timeout=120_000
        )
        time.sleep(5)  # the first look (the history) is read; now it follows
        first = page.evaluate("() => window.__watch.chart('metric/00').drawn[0].length")
        cpu0, t0 = cpu_seconds(watch.pid), time.monotonic()
        time.sleep(seconds)
        following = (cpu_seconds(watch.pid) - cpu0) / (time.monotonic() - t0)
        last = page.evaluate("() => window.__watch.chart('metric/00').drawn[0].length")
        context.close()
    finally:
        run.close()
        stop(watch)
    return {"idle": idle, "following": following, "points_gained": last - first}


def median_ms(times: list[float]) -> str:
    return f"{statistics.median(times):7.1f} ms (of {len(times)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--series", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-draw", action="store_true")
    parser.add_argument("--skip-live", action="store_true")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    with headless_chromium() as browser:
        if not args.skip_draw:
            got = draw(browser, args.series, args.points, args.repeats)
            size = f"{args.series} series x {args.points:,} points"
            print(f"\n1. one chart of {size} (goal < 300 ms)")
            fetched = got["read + draw, downsampled to 900 px"]
            before = got["read + draw, every point (before)"]
            print(
                f"   read + draw, downsampled to 900 px:  {median_ms(fetched)}, "
                f"{got['read + draw, downsampled to 900 px points'][0]:,} points drawn"
                " (goal < 300 ms)"
            )
            print(
                f"   read + draw, every point (before):   {median_ms(before)}, "
                f"{got['read + draw, every point (before) points'][0]:,} points drawn"
            )
            ratio = statistics.median(before) / statistics.median(fetched)
            print(f"   before / now: {ratio:.1f}x")
            for name in (BATCH, PER_SERIES):
                print(
                    f"   {name + ':':46s} {median_ms(got[f'{name} times'])}; of which "
                    f"read (requests, transfer, decoding) {median_ms(got[f'{name} reads'])}, "
                    f"drawing {median_ms(got[f'{name} draws'])}"
                )
            ratio = statistics.median(got[f"{PER_SERIES} times"]) / statistics.median(fetched)
            reads = statistics.median(got[f"{PER_SERIES} reads"]) / statistics.median(
                got[f"{BATCH} reads"]
            )
            print(f"   per-series requests / one batch: {ratio:.2f}x (reads alone {reads:.2f}x)")
            scanned = got["read + draw, downsampled by scanning (before)"]
            print(
                f"   read + draw, downsampled by scanning every point (before the block "
                f"summaries): {median_ms(scanned)}, "
                f"{statistics.median(scanned) / statistics.median(fetched):.1f}x now"
            )
            reads = got["store read"]
            print(
                f"   the server's read alone ({args.series} series, 900 columns): from blocks "
                f"{median_ms(reads['blocks'])}, by scanning {median_ms(reads['scan'])}, "
                f"{statistics.median(reads['scan']) / statistics.median(reads['blocks']):.1f}x"
            )
            drawn_now = got["read + draw, downsampled to 900 px draw"]
            drawn_before = got["read + draw, every point (before) draw"]
            print(
                f"   of which drawing (update to uPlot's draw): now {median_ms(drawn_now)}, "
                f"before {median_ms(drawn_before)}, "
                f"{statistics.median(drawn_before) / statistics.median(drawn_now):.1f}x"
            )
            print(f"   drawing alone, {got['full points'][0]:,} points already in the page:")
            for name, times in got.items():
                if name.startswith(("page_open_s", "read + draw", "full points", "store read")):
                    continue
                print(f"   {name:36s} {median_ms(times)}")
            base = statistics.median(got["uPlot alone, columns ready"])
            ours = statistics.median(got["same steps, smoothing 0.6"])
            print(f"   ours (smoothing 0.6) / uPlot alone: {ours / base:.2f}x")
            if "SVG chart before (chart.js)" in got:
                old = statistics.median(got["SVG chart before (chart.js)"])
                print(f"   SVG chart before / ours: {old / ours:.1f}x")
            opened = ", ".join(f"{s:.2f}" for s in got["page_open_s BIG"])
            scan_opened = ", ".join(f"{s:.2f}" for s in got["page_open_s SCAN"])
            print(
                f"   the run page with {args.series} charts of that run, opened: {opened} s; "
                f"its copy read by scanning (before): {scan_opened} s"
            )
        if not args.skip_live:
            got = live(browser, args.series, args.seconds)
            window = f"({args.series} series), {args.seconds:.0f} s"
            print(f"\n2. following a live run at 1 update/s {window}")
            following = got["following"]
            print(f"   server CPU with the run page open: {following:.3f} cores (goal < 0.2)")
            print(f"   server CPU with no page (idle):    {got['idle']:.3f} cores")
            print(f"   points the chart gained meanwhile: {got['points_gained']}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
