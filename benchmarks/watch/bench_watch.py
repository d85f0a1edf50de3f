"""mosaic watch, measured in a real browser (Debian's Chromium driven by Playwright).

1. The frame stream, at 256x256 and 1920x1080: a publisher process writes frames at 60 Hz into
   a FastLane ring; one browser viewer shows the run page of ``mosaic watch``. Printed: frames
   the viewer drew per second, over the page's own clock (goal >= 30 at 256x256), the server's
   CPU (``mosaic watch``'s utime + stime over the window, in cores; goal <= 0.3 at 256x256),
   and the median latency
   from publish (the writer's wall clock) to the frame drawn in the page (the page's wall
   clock; goal <= 50 ms). Baselines, same run: ``mosaic fastlane snapshot`` once per frame
   (frames/s a viewer polling the CLI would get) and ``FastLaneReader.latest_frame`` alone (the
   raw segment read: the ceiling no stream can beat).
   With ``--streams N`` (N > 1), what an N-agent run gives instead of the 1080p case: one
   publisher process (a multi-agent worker is one process) writing each agent's frames at
   60 Hz and 256x256 to its own stream, ``agent_stream_id(run_id, i)``, and one browser page,
   the run page, which shows one frame view per agent stream (each its own WebSocket).
   Printed: frames each view drew per second (median and lowest; goal >= 30 each, the
   per-viewer cap), the server's CPU (goal < 0.5 core) and its CPU per frame sent, beside the
   one-stream page measured in the same run.
2. A run page for a store with 1M steps and 10k episodes: seconds from navigation until the
   curve (10k episodes, downsampled on the server) and the events are drawn (goal <= 1 s).
   Baseline, same store: the naive curve, every episode's raw line parsed plus COUNT(*) over
   the steps, ``mosaic runs show`` of that run, and a new page of one CSS file from the same
   server (what the browser itself costs).

    python benchmarks/watch/bench_watch.py [--seconds 10] [--streams 4] [--skip-stream]
        [--skip-page]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from mosaic_sdk.fastlane import (  # noqa: E402
    FastLaneConfig,
    FastLaneMetrics,
    FastLaneReader,
    FastLaneWriter,
    agent_stream_id,
)
from mosaic_sdk.fastlane.layout import segment_name  # noqa: E402
from mosaic_sdk.runner.storage.store import INSERT_EPISODE, INSERT_STEP, RunStore  # noqa: E402
from mosaic_sdk.shm.segment import shm_unlink  # noqa: E402
from mosaic_sdk.watch.browser import headless_chromium  # noqa: E402

TOKEN = "bench-token-0123456789abcdef"


def publisher(run_id: str, width: int, height: int, hz: float, conn: Any) -> None:
    """Publish changing frames at ``hz`` until told to stop; send back {seq: publish wall
    time in ns}."""
    times: dict[int, int] = {}
    # Like a rendered env: a smooth background and a moving block (noise would make every
    # JPEG as large as the raw frame, which no renderer's output is).
    ramp = np.linspace(40, 200, width, dtype=np.float32)
    base = np.repeat(
        np.stack([ramp, ramp[::-1], np.full(width, 90, np.float32)], -1)[None], height, 0
    )
    base = base.astype(np.uint8)
    side = max(8, height // 6)
    with FastLaneWriter.create(run_id, FastLaneConfig(width=width, height=height)) as w:
        conn.send("ready")
        start = time.monotonic()
        n = 0
        while not conn.poll():
            n += 1
            frame = base.copy()
            x = (n * max(1, width // 120)) % (width - side)
            frame[height // 2 - side // 2 : height // 2 + side // 2, x : x + side] = (250, 250, 250)
            times[w.publish(frame, metrics=FastLaneMetrics(1.0, float(n), hz))] = time.time_ns()
            next_at = start + n / hz
            time.sleep(max(0.0, next_at - time.monotonic()))
        conn.send(times)


def agents_publisher(
    run_id: str, agents: int, width: int, height: int, hz: float, conn: Any
) -> None:
    """One process publishing each agent's frames to its own stream (``agent_stream_id``) at
    ``hz`` until told to stop, as a multi-agent worker does; send back the frames published
    per second to each stream."""
    ramp = np.linspace(40, 200, width, dtype=np.float32)
    base = np.repeat(
        np.stack([ramp, ramp[::-1], np.full(width, 90, np.float32)], -1)[None], height, 0
    ).astype(np.uint8)
    side = max(8, height // 6)
    config = FastLaneConfig(width=width, height=height)
    writers = [FastLaneWriter.create(agent_stream_id(run_id, i), config) for i in range(agents)]
    try:
        conn.send("ready")
        start = time.monotonic()
        n = 0
        while not conn.poll():
            n += 1
            for i, w in enumerate(writers):
                frame = base.copy()
                x = (n * max(1, width // 120) + i * side) % (width - side)
                y = (height // (agents + 1)) * (i + 1) - side // 2
                frame[y : y + side, x : x + side] = (250, 250, 250)
                w.publish(frame, metrics=FastLaneMetrics(float(i), float(n), hz))
            time.sleep(max(0.0, start + n / hz - time.monotonic()))
        conn.send(n / (time.monotonic() - start))
    finally:
        for w in writers:
            w.close()


def agent_rows(store: Path, run_id: str, agents: int, episodes: int = 50) -> None:
    """Episode rows for each agent, so the page also draws its per-agent curves."""
    conn = sqlite3.connect(store, isolation_level=None)
    conn.execute("BEGIN")
    line = 0
    for e in range(episodes):
        for i in range(agents):
            line += 1
            raw = json.dumps({"type": "episode", "episode_index": e, "agent_id": f"agent_{i}"})
            conn.execute(
                INSERT_EPISODE,
                (run_id, line, line, e, float(e + i), 100, 1, 0, 0, raw, f"agent_{i}", 0),
            )
    conn.execute("UPDATE runs SET episodes=? WHERE run_id=?", (episodes * agents, run_id))
    conn.execute("COMMIT")
    conn.close()


def agent_streams(
    browser: Any, agents: int, width: int, height: int, seconds: float
) -> dict[str, Any]:
    """The run page of an ``agents``-agent run: frames/s drawn per agent view, server CPU."""
    run_id = f"bench-{uuid.uuid4().hex[:8]}"
    names = [agent_stream_id(run_id, i) for i in range(agents)]
    with tempfile.TemporaryDirectory() as tmp_name:
        store = Path(tmp_name) / "runs.sqlite"
        with RunStore(store) as s:
            s.create_run(run_id, "bench", config={"env_id": f"{agents}x{width}x{height}"})
        agent_rows(store, run_id, agents)
        ours, parent = mp.Pipe()
        pub = mp.Process(
            target=agents_publisher, args=(run_id, agents, width, height, 60.0, parent)
        )
        pub.start()
        watch, base = start_watch(store)
        # the counts with the page's clock: the rate over the page's own time, not the time
        # the evaluation's round trip adds
        counts = "() => [performance.now(), {...window.__watch.streamFrames}]"
        try:
            assert ours.recv() == "ready"
            page = browser.new_page()
            page.goto(f"{base}/runs/{run_id}?token={TOKEN}")
            page.wait_for_function(
                f"() => Object.values(window.__watch.streamFrames).filter(n => n >= 10).length"
                f" === {agents}",
                timeout=60_000,
            )
            cpu0, t0 = cpu_seconds(watch.pid), time.monotonic()
            page0, frames0 = page.evaluate(counts)
            time.sleep(seconds)
            page1, frames1 = page.evaluate(counts)
            cpu1, t1 = cpu_seconds(watch.pid), time.monotonic()
            views = page.locator("#streams figure").count()
            page.close()
            ours.send("stop")
            written = ours.recv()
            pub.join(30)
        finally:
            watch.terminate()
            watch.wait(30)
            if pub.is_alive():
                pub.terminate()
            for name in names:
                shm_unlink(segment_name(name))
    assert sorted(frames1) == sorted(names), frames1
    fps = [(frames1[n] - frames0[n]) / (page1 - page0) * 1e3 for n in names]
    cpu = (cpu1 - cpu0) / (t1 - t0)
    return {
        "fps": fps,
        "cpu": cpu,
        "cpu_per_frame_ms": cpu / sum(fps) * 1e3,
        "views": views,
        "written_fps": written,
    }


def start_watch(store: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mosaic_sdk.cli", "watch", "--store", str(store), "--port", "0"]
        + ["--token", TOKEN],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if "open http://" in line:
            return proc, line.split("open ", 1)[1].strip().split("/?token=")[0]
    raise SystemExit("mosaic watch did not start")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def snapshot_baseline(run_id: str, tmp: Path, n: int = 5) -> float:
    """Frames per second of ``mosaic fastlane snapshot`` run once per frame."""
    times = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "mosaic_sdk.cli", "fastlane", "snapshot", run_id]
            + [str(tmp / "snap.png")],
            check=True,
            capture_output=True,
        )
        times.append(time.perf_counter() - t)
    return 1.0 / statistics.median(times)


def raw_read_baseline(run_id: str, seconds: float = 1.0) -> float:
    """``latest_frame`` calls per second (a copy of the newest frame each)."""
    with FastLaneReader.attach(run_id) as reader:
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            reader.latest_frame()
            n += 1
    return n / (time.perf_counter() - start)


def stream(browser: Any, width: int, height: int, seconds: float) -> dict[str, float]:
    run_id = f"bench-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        store = tmp / "runs.sqlite"
        with RunStore(store) as s:
            s.create_run(run_id, "bench", config={"env_id": f"{width}x{height}"})
        ours, parent = mp.Pipe()
        pub = mp.Process(target=publisher, args=(run_id, width, height, 60.0, parent))
        pub.start()
        watch, base = start_watch(store)
        try:
            assert ours.recv() == "ready"
            page = browser.new_page()
            page.goto(f"{base}/runs/{run_id}?token={TOKEN}")
            page.wait_for_function("() => window.__watch.frames >= 10", timeout=30_000)
            # frames counted with the page's clock (an evaluation's round trip is not)
            counts = "() => [performance.now(), window.__watch.frames]"
            cpu0, t0 = cpu_seconds(watch.pid), time.monotonic()
            page0, frames0 = page.evaluate(counts)
            time.sleep(seconds)
            page1, frames1 = page.evaluate(counts)
            cpu1, t1 = cpu_seconds(watch.pid), time.monotonic()
            shown = page.evaluate("() => window.__watch.shown")
            page.close()
            snap = snapshot_baseline(run_id, tmp)
            raw = raw_read_baseline(run_id)
            ours.send("stop")
            published = ours.recv()
            pub.join(30)
        finally:
            watch.terminate()
            watch.wait(30)
            if pub.is_alive():
                pub.terminate()
            shm_unlink(segment_name(run_id))
    latencies = [wall - published[seq] / 1e6 for _gen, seq, wall in shown if seq in published]
    return {
        "fps": (frames1 - frames0) / (page1 - page0) * 1e3,
        "cpu": (cpu1 - cpu0) / (t1 - t0),
        "latency_ms": statistics.median(latencies),
        "latency_p90_ms": float(np.percentile(latencies, 90)),
        "snapshot_fps": snap,
        "raw_reads_per_s": raw,
    }


def big_store(path: Path, run_id: str, steps: int, episodes: int) -> None:
    """A finished run with ``steps`` step rows and ``episodes`` episode rows, bulk-inserted."""
    with RunStore(path) as s:
        s.create_run(run_id, "bench", config={"env_id": "CartPole-v1"})
    conn = sqlite3.connect(path, isolation_level=None)
    per = steps // episodes
    conn.execute("BEGIN")
    rows = (
        (run_id, i + 1, i, i // per, i % per, 1.0, 0, 0, i, '{"type":"step"}', None)
        for i in range(steps)
    )
    conn.executemany(INSERT_STEP, rows)
    rng = np.random.default_rng(0)
    ep_rows = []
    for e in range(episodes):
        ret = float(per * min(1.0, e / episodes * 2) + rng.normal(0, 5))
        raw = json.dumps({"type": "episode", "episode_index": e, "total_reward": ret, "steps": per})
        ep_rows.append((run_id, steps + e + 1, e, e, ret, per, 1, 0, 0, raw, None, 0))
    conn.executemany(INSERT_EPISODE, ep_rows)
    for k in range(200):
        conn.execute(
            "INSERT INTO events VALUES (?,?,?,?,?,?,?,?)",
            (run_id, steps + episodes + k + 1, k, "heartbeat", 0, 0, "{}", "{}"),
        )
    conn.execute(
        "UPDATE runs SET steps=?, episodes=?, events=200, status='completed', ended_at=?"
        " WHERE run_id=?",
        (steps, episodes, time.time(), run_id),
    )
    conn.execute("COMMIT")
    conn.close()


def page_open(browser: Any, steps: int, episodes: int, repeats: int = 5) -> dict[str, float]:
    run_id = "BIG"
    with tempfile.TemporaryDirectory() as tmp_name:
        store = Path(tmp_name) / "runs.sqlite"
        t = time.perf_counter()
        big_store(store, run_id, steps, episodes)
        print(
            f"  (store with {steps} steps, {episodes} episodes built in "
            f"{time.perf_counter() - t:.1f} s)"
        )
        watch, base = start_watch(store)
        try:
            api = []  # the curve as the page gets it: first (cold) then warm
            for _ in range(repeats):
                t = time.perf_counter()
                with urllib.request.urlopen(f"{base}/api/runs/{run_id}/curve") as response:
                    response.read()
                api.append(time.perf_counter() - t)
            opens = []
            for _ in range(repeats):  # each a new page: the server's curve cache stays warm
                page = browser.new_page()
                t = time.perf_counter()
                page.goto(f"{base}/runs/{run_id}")
                page.wait_for_function(
                    "() => window.__watch.curvePoints > 0 && window.__watch.events >= 200",
                    timeout=60_000,
                )
                opens.append(time.perf_counter() - t)
                page.close()
            floor = []
            for _ in range(repeats):  # the browser's own cost of a new page of ours
                page = browser.new_page()
                t = time.perf_counter()
                page.goto(f"{base}/static/watch.css")
                page.wait_for_function("() => true")
                floor.append(time.perf_counter() - t)
                page.close()
        finally:
            watch.terminate()
            watch.wait(30)
        naive = []
        for _ in range(repeats):
            t = time.perf_counter()
            conn = sqlite3.connect(store)
            conn.execute("SELECT count(*) FROM steps WHERE run_id=?", (run_id,)).fetchone()
            curve = [
                json.loads(r)
                for (r,) in conn.execute(
                    "SELECT raw FROM episodes WHERE run_id=? ORDER BY line_no", (run_id,)
                )
            ]
            json.dumps(curve)
            conn.close()
            naive.append(time.perf_counter() - t)
        show = []
        for _ in range(3):
            t = time.perf_counter()
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "mosaic_sdk.cli",
                    "runs",
                    "show",
                    run_id,
                    "--store",
                    str(store),
                ],
                check=True,
                capture_output=True,
            )
            show.append(time.perf_counter() - t)
    return {
        "first_open_s": opens[0],
        "open_median_s": statistics.median(opens),
        "naive_curve_s": statistics.median(naive),
        "runs_show_s": statistics.median(show),
        "blank_page_s": statistics.median(floor),
        "curve_cold_s": api[0],
        "curve_warm_s": statistics.median(api[1:]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument(
        "--streams",
        type=int,
        default=1,
        help="N > 1: an N-agent run's page (one 256x256 stream per agent) beside one stream",
    )
    parser.add_argument("--skip-stream", action="store_true")
    parser.add_argument("--skip-page", action="store_true")
    args = parser.parse_args()
    with headless_chromium() as browser:
        if not args.skip_stream and args.streams > 1:
            one = stream(browser, 256, 256, args.seconds)
            many = agent_streams(browser, args.streams, 256, 256, args.seconds)
            fps = many["fps"]
            print(
                f"run page of a {args.streams}-agent run, {many['views']} frame views (one "
                f"page, one WebSocket per agent stream), 256x256, writers at 60 Hz: frames/s "
                f"drawn per stream {' / '.join(f'{f:.1f}' for f in fps)} (median "
                f"{statistics.median(fps):.1f}, lowest {min(fps):.1f}; goal >= 30 each), server "
                f"CPU {many['cpu']:.3f} cores (goal < 0.5), {many['cpu_per_frame_ms']:.2f} ms "
                f"per frame sent; each writer published {many['written_fps']:.1f} frames/s "
                f"| baseline, same run: one stream {one['fps']:.1f} frames/s, "
                f"{one['cpu']:.3f} cores, {one['cpu'] / one['fps'] * 1e3:.2f} ms per frame "
                f"(latency median {one['latency_ms']:.1f} ms); {args.streams} streams / one: "
                f"{statistics.median(fps) / one['fps']:.2f}x frames/s per stream, "
                f"{many['cpu'] / one['cpu']:.2f}x CPU; load average "
                f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}"
            )
        elif not args.skip_stream:
            for w, h in ((256, 256), (1920, 1080)):
                r = stream(browser, w, h, args.seconds)
                print(
                    f"stream {w}x{h}, writer at 60 Hz: {r['fps']:.1f} frames/s drawn, "
                    f"server CPU {r['cpu']:.3f} cores, latency median "
                    f"{r['latency_ms']:.1f} ms (p90 {r['latency_p90_ms']:.1f}) | baselines: "
                    f"`mosaic fastlane snapshot` per frame {r['snapshot_fps']:.2f} frames/s "
                    f"({r['fps'] / r['snapshot_fps']:.0f}x fewer than the stream); raw "
                    f"latest_frame {r['raw_reads_per_s']:.0f}/s"
                )
        if not args.skip_page:
            r = page_open(browser, args.steps, args.episodes)
            print(
                f"run page, {args.steps} steps / {args.episodes} episodes: first open "
                f"{r['first_open_s']:.3f} s, median {r['open_median_s']:.3f} s; curve API "
                f"{r['curve_cold_s']:.3f} s cold, {r['curve_warm_s']:.3f} s warm | baselines: "
                f"naive curve (every episode's raw line + COUNT(*) steps) "
                f"{r['naive_curve_s']:.3f} s; `mosaic runs show` {r['runs_show_s']:.3f} s; "
                f"a new page of one CSS file (the browser's floor) {r['blank_page_s']:.3f} s"
            )


if __name__ == "__main__":
    main()
