"""Ingest with series (issue 32): `mosaic run` stores a flood of step lines with one `metrics`
line (two series) per 10 step lines, beside today's ingest of the same step lines without
series, alternating in the same run.

The flood worker (``flood_worker.py``, ``series_every``) writes ``--lines`` step lines and,
after every ``--series-every`` of them, one ``metrics`` line of two values (``losses/value``
and ``charts/sps``). Each repetition runs twice, alternating: without series (the baseline:
what ``bench_e2e.py`` measures) and with them. Printed: lines/s of every stdout line stored
(step lines plus metrics lines) and of the step lines alone, the runner's CPU per line, and
what the store holds: step lines, metrics events and series points against what the worker
wrote (0 lost, 0 refused). Goal: >= 100k lines/s with series, 0 lost.

    python benchmarks/runner/bench_series_ingest.py [--lines 1000000] [--series-every 10]
        [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_e2e import cpu_seconds, setup_env


def one_run(lines: int, series_every: int, tmp: Path, rep: int) -> dict[str, float]:
    from mosaic_sdk.runner.storage.store import RunStore
    from mosaic_sdk.runner.supervisor import resolve_worker, run_worker

    store = tmp / f"run-{rep}-{series_every}.sqlite"
    handle = resolve_worker("flood")  # discovery is not part of the measured run
    config = {"lines": lines, "series_every": series_every}
    cpu0 = cpu_seconds()
    start = time.perf_counter()
    result = run_worker(handle, config, store=store, runs_dir=tmp / "runs", stall_after=60.0)
    elapsed = time.perf_counter() - start
    cpu1 = cpu_seconds()
    assert result.status == "completed", result.error
    metrics_lines = lines // series_every if series_every else 0
    total = lines + metrics_lines
    with RunStore(store, readonly=True) as s:
        counts = s.count_rows(result.run_id)
        series = s.series_counts(result.run_id)
        points = {i.name: i.points for i in s.series(result.run_id)}
    want_points = (
        {"losses/value": metrics_lines, "charts/sps": metrics_lines} if series_every else {}
    )
    return {
        "lines/s": total / elapsed,
        "step lines/s": lines / elapsed,
        "runner us/line": (cpu1[0] - cpu0[0]) / total * 1e6,
        "lost steps": lines - counts["steps"],
        # run_started, run_completed and the metrics lines
        "lost events": metrics_lines + 2 - counts["events"],
        "lost points": 2 * metrics_lines - series["points"],
        "refused": series["refused"],
        "wrong series": float(points != want_points),
        "lost rows": result.lost_rows,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lines", type=int, default=1_000_000, help="step lines per run")
    p.add_argument("--series-every", type=int, default=10, help="step lines per metrics line")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    setup_env()
    runs: dict[str, list[dict[str, float]]] = {"without series": [], "with series": []}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        os.environ["MOSAIC_HOME"] = str(tmp / "home")
        for rep in range(args.repeat):
            runs["without series"].append(one_run(args.lines, 0, tmp, rep))
            runs["with series"].append(one_run(args.lines, args.series_every, tmp, rep))
    base = statistics.median(r["lines/s"] for r in runs["without series"])
    print(
        f"ingest with series: {args.lines:,} step lines per run, one metrics line (2 series) "
        f"per {args.series_every} step lines; medians of {args.repeat} runs, alternating"
    )
    print(f"{'measure':<44} {'lines/s':>10} {'step lines/s':>13} {'us/line':>8} {'ratio':>6}")
    for name, rows in runs.items():
        rate = statistics.median(r["lines/s"] for r in rows)
        steps = statistics.median(r["step lines/s"] for r in rows)
        cpu = statistics.median(r["runner us/line"] for r in rows)
        label = f"mosaic run, {name}" + (" (baseline)" if name == "without series" else "")
        print(f"{label:<44} {rate:>10,.0f} {steps:>13,.0f} {cpu:>8.2f} {rate / base:>5.2f}x")
    per_run = {name: [f"{r['lines/s'] / 1000:.1f}k" for r in rows] for name, rows in runs.items()}
    print(f"per run (in run order), lines/s: {per_run}")
    faults = {
        key: [int(r[key]) for r in runs["with series"]]
        for key in (
            "lost steps",
            "lost events",
            "lost points",
            "refused",
            "wrong series",
            "lost rows",
        )
    }
    print(f"with series, per run: {faults} (goal: all 0)")
    with_series = statistics.median(r["lines/s"] for r in runs["with series"])
    print(
        f"goal >= 100,000 lines/s with series: {'met' if with_series >= 100_000 else 'NOT met'}; "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end"
    )
    ok = all(v == 0 for values in faults.values() for v in values)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
