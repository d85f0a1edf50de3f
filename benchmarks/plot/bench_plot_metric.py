"""`mosaic runs plot --metric` of 1M series points (goal < 3 s), beside the return curve plot of
the same number of episodes, measured in the same run.

Fills a temporary store with 4 runs (2 seeds of two configs), each with two series
(``losses/value`` and ``losses/policy``) of ``--points / 8`` points, 1M points in all; and 4
runs of ``--points / 4`` episodes each (1M episodes: the baseline, what ``mosaic runs plot``
draws today). Then, interleaved, medians of ``--repeat``:

- as commands (a new interpreter each time, as a user runs them): ``mosaic runs plot RUN...
  --metric 'losses/*'`` (two panels of 4 lines) and with ``--group-seeds`` (two bands per
  panel), beside ``mosaic runs plot RUN...`` of the 1M episodes;
- in-process: ``plot_metrics`` beside ``plot_runs``, and beside itself reading every point
  (what it did before the downsampled read: ``PICTURE_BUCKETS`` off), with and without
  ``group_seeds`` (grouped: each run's means of 1000 step ranges from the store's block
  summaries, beside every point read and interpolated, as before); reading the points
  alone: ``RunStore.series_columns`` (numpy, every point) and its downsampled read (1000
  step ranges' lowest and highest point, what the plot reads, from the block summaries)
  beside ``series_points`` (lists, the read before), beside the downsampled read by
  scanning every point (before the block summaries) and beside reading the episodes;
  ``series_means`` (what a grouped plot reads) beside ``series_columns``.

    python benchmarks/plot/bench_plot_metric.py [--points 1000000] [--repeat 3]

Needs the plot extra (`pip install -e ".[plot]"`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

NAMES = ("losses/value", "losses/policy")


def fill_series(path: Path, runs: int, per_series: int) -> list[str]:
    """Runs with two series each, stored as the runner's writer stores them."""
    from mosaic_sdk.runner.storage.rows import LineBatch, insert_batch
    from mosaic_sdk.runner.storage.store import RunStore

    rng = np.random.default_rng(0)
    ids = []
    with RunStore(path) as store:
        for i in range(runs):
            run_id = f"series-{i}"
            config = {"run_id": run_id, "lr": 0.1 if i < runs // 2 else 0.3, "seed": i}
            store.create_run(run_id, "example", config=config)
            batch = LineBatch()
            t0 = time.time_ns()
            for sid, name in enumerate(NAMES, 1):
                batch.series.append((run_id, sid, name, None))
                values = np.exp(-np.arange(per_series) / per_series * 3) + rng.normal(
                    0, 0.05, per_series
                )
                batch.points.extend(
                    (run_id, sid, n * 8, t0 + n * 10**6, n + 2, float(values[n]))
                    for n in range(per_series)
                )
            store.conn.execute("BEGIN")
            insert_batch(store.conn, run_id, batch)
            store.conn.execute("COMMIT")
            ids.append(run_id)
    return ids


def fill_episodes(path: Path, runs: int, episodes: int) -> list[str]:
    from mosaic_sdk.runner.storage.schema import INSERT_EPISODE
    from mosaic_sdk.runner.storage.store import RunStore

    rng = np.random.default_rng(1)
    ids = []
    with RunStore(path) as store:
        for i in range(runs):
            run_id = f"episodes-{i}"
            config = {"run_id": run_id, "lr": 0.1 if i < runs // 2 else 0.3, "seed": i}
            store.create_run(run_id, "example", config=config)
            returns = 500 * (1 - np.exp(-np.arange(episodes) / episodes * 3))
            returns += rng.normal(0, 10, episodes)
            t0 = time.time_ns()
            raw = json.dumps({"type": "episode", "total_reward": 0.0, "steps": 200})
            rows = [
                (run_id, n + 2, n + 2, n, float(returns[n]), 200, 1, 0, t0 + n * 10**6,
                 raw, None, 0)
                for n in range(episodes)
            ]  # fmt: skip
            store.conn.execute("BEGIN")
            store.conn.executemany(INSERT_EPISODE, rows)
            store.conn.execute("COMMIT")
            ids.append(run_id)
    return ids


def timed(fn) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def command(store: Path, ids: list[str], out: Path, *extra: str) -> None:
    argv = [sys.executable, "-m", "mosaic_sdk.cli", "runs", "plot", *ids, "--store", str(store)]
    subprocess.run([*argv, "-o", str(out), *extra], check=True, stdout=subprocess.DEVNULL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=1_000_000, help="series points in all")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    runs = 4
    per_series = args.points // (runs * len(NAMES))

    from mosaic_sdk.plots import metrics as metrics_mod
    from mosaic_sdk.plots.curves import read_episodes
    from mosaic_sdk.plots.figure import plot_runs
    from mosaic_sdk.plots.metrics import PICTURE_BUCKETS, plot_metrics
    from mosaic_sdk.runner.storage.store import RunStore

    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        store_path = tmpdir / "runs.sqlite"
        start = time.perf_counter()
        series_ids = fill_series(store_path, runs, per_series)
        episode_ids = fill_episodes(store_path, runs, args.points // runs)
        total = runs * len(NAMES) * per_series
        print(
            f"store: {runs} runs x {len(NAMES)} series x {per_series:,} points ({total:,} "
            f"points); {runs} runs x {args.points // runs:,} episodes "
            f"({time.perf_counter() - start:.1f} s to fill)"
        )
        with RunStore(store_path, readonly=True) as store:  # warm up: imports, font cache
            plot_runs(store, episode_ids[:1], tmpdir / "warm.png")
            plot_metrics(store, series_ids[:1], ["losses/*"], tmpdir / "warm2.png")
        figures: dict[str, list[float]] = {}

        def add(name: str, seconds: float) -> None:
            figures.setdefault(name, []).append(seconds)

        metric = ("--metric", "losses/*")
        for _ in range(args.repeat):
            add(
                "cmd metric",
                timed(lambda: command(store_path, series_ids, tmpdir / "m.png", *metric)),
            )
            add("cmd returns", timed(lambda: command(store_path, episode_ids, tmpdir / "r.png")))
            add(
                "cmd metric grouped",
                timed(lambda: command(store_path, series_ids, tmpdir / "g.png", *metric,
                                      "--group-seeds")),
            )  # fmt: skip
            add(
                "cmd returns grouped",
                timed(lambda: command(store_path, episode_ids, tmpdir / "h.png", "--group-seeds")),
            )
            with RunStore(store_path, readonly=True) as store:
                add(
                    "read points",
                    timed(lambda: [store.series_points(r, n) for r in series_ids for n in NAMES]),  # noqa: B023
                )
                add(
                    "read columns",
                    timed(lambda: [store.series_columns(r, n) for r in series_ids for n in NAMES]),  # noqa: B023
                )
                add(
                    "read downsampled",
                    timed(
                        lambda: [
                            store.series_columns(r, n, buckets=PICTURE_BUCKETS)  # noqa: B023
                            for r in series_ids
                            for n in NAMES
                        ]
                    ),
                )
                add("read episodes", timed(lambda: [read_episodes(store, r) for r in episode_ids]))  # noqa: B023
                add(
                    "plot_metrics",
                    timed(lambda: plot_metrics(store, series_ids, ["losses/*"], tmpdir / "p.png")),  # noqa: B023
                )
                add("plot_runs", timed(lambda: plot_runs(store, episode_ids, tmpdir / "q.png")))  # noqa: B023
                add(
                    "plot_metrics grouped",
                    timed(
                        lambda: plot_metrics(
                            store,  # noqa: B023
                            series_ids,
                            ["losses/*"],
                            tmpdir / "pg.png",
                            group_seeds=True,
                        )
                    ),
                )
                add(
                    "read means",
                    timed(
                        lambda: [
                            store.series_means(r, n, buckets=PICTURE_BUCKETS)  # noqa: B023
                            for r in series_ids
                            for n in NAMES
                        ]
                    ),
                )
                metrics_mod.PICTURE_BUCKETS = None  # type: ignore[assignment]  # every point read
                try:
                    add(
                        "plot_metrics every point",
                        timed(
                            lambda: plot_metrics(store, series_ids, ["losses/*"], tmpdir / "e.png")
                        ),  # noqa: B023
                    )
                    add(
                        "plot_metrics grouped every point",
                        timed(
                            lambda: plot_metrics(
                                store,  # noqa: B023
                                series_ids,
                                ["losses/*"],
                                tmpdir / "eg.png",
                                group_seeds=True,
                            )
                        ),
                    )
                finally:
                    metrics_mod.PICTURE_BUCKETS = PICTURE_BUCKETS
                store._blocks = False  # the store read as before its block summaries
                try:
                    add(
                        "read downsampled scanning",
                        timed(
                            lambda: [
                                store.series_columns(r, n, buckets=PICTURE_BUCKETS)  # noqa: B023
                                for r in series_ids
                                for n in NAMES
                            ]
                        ),
                    )
                finally:
                    store._blocks = None
        med = {k: statistics.median(v) for k, v in figures.items()}
        print(f"\nmedians of {args.repeat}, seconds (ratio: ours / the return curve's)")
        rows = [
            ("mosaic runs plot --metric 'losses/*'", "cmd metric", "cmd returns", "< 3 s"),
            ("  with --group-seeds", "cmd metric grouped", "cmd returns grouped", "< 3 s"),
            ("in-process: plot_metrics / plot_runs", "plot_metrics", "plot_runs", ""),
            ("  / itself reading every point", "plot_metrics", "plot_metrics every point", ""),
            ("reading: series_points / read_episodes", "read points", "read episodes", ""),
            ("  --group-seeds, runs' means / every point", "plot_metrics grouped",
             "plot_metrics grouped every point", ""),
            ("reading: series_columns / series_points", "read columns", "read points", ""),
            ("  downsampled / series_points", "read downsampled", "read points", ""),
            ("  downsampled: blocks / scanning", "read downsampled",
             "read downsampled scanning", ""),
            ("  series_means / series_columns", "read means", "read columns", ""),
        ]  # fmt: skip
        print(f"{'measure':<42} {'ours':>8} {'baseline':>9} {'ratio':>6} {'goal':>7}")
        for label, ours, base, goal in rows:
            print(
                f"{label:<42} {med[ours]:>8.3f} {med[base]:>9.3f} "
                f"{med[ours] / med[base]:>5.2f}x {goal:>7}"
            )
        per_run = {k: [round(v, 3) for v in vs] for k, vs in figures.items()}
        print(f"per repetition: {per_run}")
        met = med["cmd metric"] < 3 and med["cmd metric grouped"] < 3
        print(f"goal (1M points drawn as a command in under 3 s): {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
