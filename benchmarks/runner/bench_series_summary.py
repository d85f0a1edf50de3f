"""What the series' block summaries (``mosaic_sdk.runner.storage.summary``, issue 32) cost the
ingest: the same runs with the writer's summary hook on (as shipped) and off (the writer before
it: a monkeypatched no-op), alternating in the same run, medians of ``--repeat`` and ratios.

1. ``runner alone`` (``bench_series_ingest.py``'s part 1): the flood worker's step lines with
   one ``metrics`` line of two values per ``--series-every`` of them, through the runner's
   RunRecorder, batcher, ingest and store writer thread, in this process: lines/s and CPU per
   line;
2. ``writer``: ``insert_series`` alone, a series-heavy load: ``--points`` points of 20 series
   (one value of each per step, as CleanRL's ``add_scalar`` calls come), in transactions of
   ``--batch`` steps: the summary's cost per point at its worst (no step lines to share it).

    python benchmarks/runner/bench_series_summary.py [--alone-lines 100000] [--repeat 3]
        [--points 400000] [--batch 400]
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench_e2e import setup_env
from bench_series_ingest import alone_run, flood_lines

from mosaic_sdk.runner.storage import rows as rows_module

SERIES = 20


@contextmanager
def summary_off(off: bool) -> Iterator[None]:
    """The writer without its summary hook while ``off`` (the baseline)."""
    hook = rows_module.add_summary
    if off:
        rows_module.add_summary = lambda conn, run_id, points: None
    try:
        yield
    finally:
        rows_module.add_summary = hook


def writer_run(path: Path, points: int, batch: int) -> float:
    """Seconds of CPU to store ``points`` points of 20 series with ``insert_series``."""
    from mosaic_sdk.runner.storage.rows import LineBatch, insert_series
    from mosaic_sdk.runner.storage.schema import connect
    from mosaic_sdk.runner.storage.store import RunStore

    with RunStore(path) as store:
        store.create_run("W", "bench")
    conn = connect(path)
    steps = points // SERIES
    cpu = 0.0
    try:
        for start in range(0, steps, batch):
            part = LineBatch()
            if start == 0:
                part.series += [("W", k, f"losses/{k:02d}", None) for k in range(SERIES)]
            for i in range(start, min(steps, start + batch)):
                wall = 10**18 + i * 10**6
                part.points += [
                    ("W", k, i * 128, wall, i + 1, math.sin(i / 100 + k)) for k in range(SERIES)
                ]
            t = time.process_time()
            conn.execute("BEGIN")
            insert_series(conn, "W", part)
            conn.execute("COMMIT")
            cpu += time.process_time() - t
    finally:
        conn.close()
    return cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alone-lines", type=int, default=100_000)
    parser.add_argument("--series-every", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--points", type=int, default=400_000)
    parser.add_argument("--batch", type=int, default=400, help="steps per transaction")
    args = parser.parse_args()
    setup_env()
    reads = flood_lines(args.alone_lines, args.series_every)
    alone: dict[str, list[dict[str, float]]] = {"off": [], "on": []}
    writer: dict[str, list[float]] = {"off": [], "on": []}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for part in ("alone", "writer"):  # one part after the other: neither disturbs the other
            for rep in range(args.repeat):
                order = ("off", "on") if rep % 2 == 0 else ("on", "off")
                for name in order:
                    with summary_off(name == "off"):
                        if part == "alone":
                            alone[name].append(alone_run(reads, tmp, f"{rep}-{name}"))
                        else:
                            path = tmp / f"w-{rep}-{name}.sqlite"
                            writer[name].append(writer_run(path, args.points, args.batch))
    print(
        f"1. runner alone: {args.alone_lines:,} step lines, a metrics line (2 series) per "
        f"{args.series_every}; medians of {args.repeat}, alternating"
    )
    print(f"{'measure':<40} {'lines/s':>10} {'ratio':>6} {'CPU us/line':>12} {'ratio':>6}")
    base = statistics.median(r["lines/s"] for r in alone["off"])
    base_cpu = statistics.median(r["us/line"] for r in alone["off"])
    for name, label in (("off", "without summaries (before)"), ("on", "with summaries (now)")):
        rate = statistics.median(r["lines/s"] for r in alone[name])
        cpu = statistics.median(r["us/line"] for r in alone[name])
        print(
            f"{label:<40} {rate:>10,.0f} {rate / base:>5.2f}x {cpu:>12.2f} {cpu / base_cpu:>5.2f}x"
        )
    per_run = {n: [f"{r['lines/s'] / 1000:.1f}k" for r in rows] for n, rows in alone.items()}
    print(f"per run (in run order), lines/s: {per_run}")
    lost = [int(r["lost"]) for rows in alone.values() for r in rows]
    print(f"rows lost per run: {lost} (goal: all 0)")
    print(
        f"\n2. writer alone: {args.points:,} points of {SERIES} series, {args.batch} steps a "
        f"transaction; CPU us/point, medians of {args.repeat}"
    )
    off = statistics.median(writer["off"]) / args.points * 1e6
    on = statistics.median(writer["on"]) / args.points * 1e6
    print(f"without summaries (before) {off:6.2f}, with summaries (now) {on:6.2f}: {on / off:.2f}x")


if __name__ == "__main__":
    main()
