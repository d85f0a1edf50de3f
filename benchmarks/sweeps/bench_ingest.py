"""Ingest at the sweep driver: trials streaming flat out, their lines stored by the driver.

Two figures, each beside its baseline measured in the same run:

1. ``collector``: the driver's own cost. K trial attempts (K = 1, 2, 4) send batches of 2000
   real step lines (the flood worker's, through the telemetry emitter) to one
   :class:`~mosaic_sdk.sweeps.collector.Collector`, interleaved as an inbox delivers them;
   lines/s, microseconds per line on the driver, and lost lines (store rows against lines
   sent). Baseline: the same lines of one run through the runner's own path (``LineIngest`` +
   ``StoreWriter``, what ``mosaic run`` does per run).
2. ``ray`` (``--ray``): end to end through Ray, two trials of the flood worker at once on a
   local Ray instance; lines stored / time from the first trial's start to the last's end,
   and lost lines.

The lines carry series as a training worker's do (``--series-every``: one ``metrics`` line of
two values after every N step lines, 10 by default; 0: step lines only). Repetitions alternate
the baseline and the collector runs (medians of ``--reps``); the goal is ingest at or above
100k lines/s (issue 34).

    python benchmarks/sweeps/bench_ingest.py [--lines 400000] [--reps 3] [--series-every 10]
        [--ray]
"""

from __future__ import annotations

import argparse
import io
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FLOOD = HERE.parent / "runner"


def flood_lines(n: int, series_every: int = 0) -> list[bytes]:
    """The lines the flood worker writes for ``n`` steps (emitter output, newlines removed),
    with a ``metrics`` line after every ``series_every`` of them (0: none)."""
    sys.path.insert(0, str(FLOOD))
    from flood_worker import flood

    buf = io.StringIO()
    real, sys.stdout = sys.stdout, buf
    try:
        flood("bench", n, 1000, series_every)
    finally:
        sys.stdout = real
    return [line.encode() for line in buf.getvalue().splitlines()]


def stored_rows(store: Path) -> int:
    conn = sqlite3.connect(store)
    try:
        return sum(
            conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("steps", "episodes", "events")
        )
    finally:
        conn.close()


def collector_run(lines: list[bytes], trials: int, tmp: Path) -> tuple[float, float, int]:
    """Lines/s, driver CPU us/line and lost lines for ``trials`` attempts of ``lines`` each."""
    from mosaic_sdk.runner.storage.ids import new_run_id
    from mosaic_sdk.sweeps.collector import Collector
    from mosaic_sdk.sweeps.spec import Metric
    from mosaic_sdk.sweeps.store import SweepStore

    store = tmp / f"c{trials}-{time.monotonic_ns()}.sqlite"
    coll = Collector(store, "flood", "bench", Metric(), report=lambda _m: None)
    SweepStore(coll.runs).create_sweep("bench", "flood", "ray", {}, Metric())
    ids = [new_run_id() for _ in range(trials)]
    batches = [lines[i : i + 2000] for i in range(0, len(lines), 2000)]
    info = {"params": {}, "config": {}, "argv": [], "run_dir": str(tmp), "node": "n"}
    coll.handle([("start", r, {**info, "trial_key": f"t{i}"}) for i, r in enumerate(ids)])
    cpu0, t0 = time.process_time(), time.perf_counter()
    for batch in batches:
        coll.handle([("out", r, batch, False) for r in ids])
    coll.handle([("end", r, {"exit_code": 0}) for r in ids])
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    coll.close()
    total = len(lines) * trials
    return total / elapsed, cpu / total * 1e6, total - stored_rows(store)


def runner_baseline(lines: list[bytes], tmp: Path) -> tuple[float, float, int]:
    """The same lines of one run through LineIngest + StoreWriter (mosaic run's path)."""
    from mosaic_sdk.runner.recording.ingest import LineBatch, LineIngest, StoreWriter
    from mosaic_sdk.runner.storage.store import RunStore

    store = tmp / f"base-{time.monotonic_ns()}.sqlite"
    with RunStore(store) as rs:
        rs.create_run("base", "flood")
    writer = StoreWriter(store, "base")
    ingest = LineIngest("base")
    cpu0, t0 = time.process_time(), time.perf_counter()
    for i in range(0, len(lines), 2000):
        batch = LineBatch()
        ingest.add(batch, lines[i : i + 2000])
        writer.submit(batch)
    writer.close()
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return len(lines) / elapsed, cpu / len(lines) * 1e6, len(lines) - stored_rows(store)


def ray_run(lines: int, tmp: Path) -> tuple[float, int]:
    """Two flood trials at once through the ray engine: stored lines/s and lost lines."""
    os.environ["PYTHONPATH"] = str(FLOOD) + os.pathsep + os.environ.get("PYTHONPATH", "")
    os.environ["MOSAIC_PLUGINS"] = "flood=flood_worker:FloodWorker"
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    from mosaic_sdk.sweeps.driver import run_sweep

    store = tmp / f"ray-{time.monotonic_ns()}.sqlite"
    ray_tmp = tempfile.mkdtemp(prefix="mb-")
    result = run_sweep(
        "flood",
        {
            "base": {"lines": lines},
            "space": {"episode_length": {"grid": [1000, 999]}},
            "trials_at_once": 2,
        },
        engine="ray",
        store=store,
        report=lambda _m: None,
        ray_options={"num_cpus": 2, "ray_temp_dir": ray_tmp},
    )
    start = min(t["started_at"] for t in result.trials)
    end = max(t["ended_at"] for t in result.trials)
    expected = sum(lines + lines // t["params"]["episode_length"] + 2 for t in result.trials)
    stored = stored_rows(store)
    return stored / (end - start), expected - stored


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=400_000, help="step lines per trial")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--ray", action="store_true", help="also end to end through Ray")
    parser.add_argument(
        "--series-every", type=int, default=10, help="step lines per metrics line (0: none)"
    )
    args = parser.parse_args()
    lines = flood_lines(args.lines, args.series_every)
    print(
        f"{len(lines):,} lines per trial ({args.lines:,} step lines"
        + (f", a metrics line of 2 series per {args.series_every}" if args.series_every else "")
        + ")"
    )
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        base: list[tuple[float, float, int]] = []
        got: dict[int, list[tuple[float, float, int]]] = {1: [], 2: [], 4: []}
        for _ in range(args.reps):  # alternating: each repetition runs every kind once
            base.append(runner_baseline(lines, tmp))
            for k, runs in got.items():
                runs.append(collector_run(lines, k, tmp))
        base_rate = statistics.median(b[0] for b in base)
        print(
            f"baseline, one run through LineIngest+StoreWriter: "
            f"{base_rate / 1e3:.1f}k lines/s, "
            f"{statistics.median(b[1] for b in base):.2f} us CPU/line, "
            f"lost {max(b[2] for b in base)}"
        )
        for k, runs in got.items():
            rate = statistics.median(g[0] for g in runs)
            print(
                f"collector, {k} trial(s) interleaved: {rate / 1e3:.1f}k lines/s "
                f"({rate / base_rate:.2f}x baseline), "
                f"{statistics.median(g[1] for g in runs):.2f} us CPU/line, "
                f"lost {max(g[2] for g in runs)}; goal >= 100k lines/s: "
                + ("met" if rate >= 100_000 else "NOT met")
            )
        if args.ray:
            rate, lost = ray_run(args.lines, tmp)
            print(
                f"ray, 2 flood trials at once end to end: {rate / 1e3:.1f}k lines/s stored, "
                f"lost {lost}"
            )
    print(f"(medians of {args.reps}; load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
