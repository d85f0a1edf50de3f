"""`mosaic runs plot` of 10 runs of 10k episodes each (goal <= 3 s), and export throughput.

Fills a temporary store (10 runs x 10k episodes: 5 seeds of two configs; and one run of
--steps step lines), then measures, interleaved, medians of --repeat:

- `mosaic runs plot` of the 10 runs as a command (a new interpreter each time, as a user
  runs it), with --smooth 100, plain and with --group-seeds;
- in-process: `plot_runs` beside its two baselines, reading the episodes alone (the same
  query into numpy) and a plain matplotlib plot of the same arrays (one `ax.plot` per run,
  no smoothing, no downsampling), and the interpreter start with matplotlib imported;
- `export_run` of the steps as CSV, JSONL and Parquet in rows/s, beside iterating the same
  rows from SQLite and doing nothing with them.

    python benchmarks/plot/bench_plot.py [--repeat 5] [--steps 1000000] [--quick]

Needs the plot and parquet extras (`pip install -e ".[plot,parquet]"`).
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

RUNS, EPISODES = 10, 10_000


def fill_episodes(path: Path, runs: int, episodes: int) -> list[str]:
    from mosaic_sdk.runner.storage.store import INSERT_EPISODE, RunStore

    rng = np.random.default_rng(0)
    ids = []
    with RunStore(path) as store:
        for i in range(runs):
            run_id = f"bench-{i:02d}"
            lr, seed = (0.1, i) if i < runs // 2 else (0.3, i)
            store.create_run(run_id, "example", config={"run_id": run_id, "lr": lr, "seed": seed})
            store.conn.execute("UPDATE runs SET status = 'completed' WHERE run_id = ?", (run_id,))
            rise = 1 - np.exp(-np.arange(episodes) / (episodes * (0.1 if lr < 0.2 else 0.3)))
            lengths = (20 + 480 * rise * rng.uniform(0.6, 1.0, episodes)).astype(int)
            returns = lengths + rng.normal(0, 10, episodes)
            t0 = time.time_ns()
            rows = [
                (run_id, n + 2, n + 2, n, float(returns[n]), int(lengths[n]), 1, 0, t0 + n * 10**7,
                 json.dumps({"type": "episode", "episode_index": n}), None, 0)
                for n in range(episodes)
            ]  # fmt: skip
            store.conn.execute("BEGIN")
            store.conn.executemany(INSERT_EPISODE, rows)
            store.conn.execute("COMMIT")
            ids.append(run_id)
    return ids


def fill_steps(path: Path, steps: int) -> str:
    from mosaic_sdk.runner.storage.store import INSERT_STEP, RunStore

    run_id = "steps"
    obs = [0.0123456789, -0.25, 0.03125, 1.5]
    with RunStore(path) as store:
        store.create_run(run_id, "example")
        store.conn.execute("BEGIN")
        batch = []
        for n in range(steps):
            raw = json.dumps({"type": "step", "step_index": n % 500, "observation": obs})
            batch.append(
                (run_id, n + 2, n + 2, n // 500, n % 500, 1.0, 0, 0, 1_750_000 + n, raw, None)
            )
            if len(batch) == 50_000:
                store.conn.executemany(INSERT_STEP, batch)
                batch.clear()
        store.conn.executemany(INSERT_STEP, batch)
        store.conn.execute("COMMIT")
    return run_id


def timed(fn) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def command(store: Path, ids: list[str], out: Path, *extra: str) -> None:
    argv = [sys.executable, "-m", "mosaic_sdk.cli", "runs", "plot", *ids, "--store", str(store)]
    subprocess.run([*argv, "-o", str(out), "--smooth", "100", *extra], check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip


def plain_matplotlib(store_path: Path, ids: list[str], out: Path) -> None:
    from matplotlib.figure import Figure

    from mosaic_sdk.plots.curves import learning_curve
    from mosaic_sdk.runner.storage.store import RunStore

    with RunStore(store_path, readonly=True) as store:
        curves = [learning_curve(store, r) for r in ids]
    fig = Figure(figsize=(9, 5), dpi=110)
    ax = fig.add_subplot()
    for c in curves:
        ax.plot(c.x, c.y)
    fig.savefig(out, format="png")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--steps", type=int, default=1_000_000, help="step rows to export")
    parser.add_argument("--quick", action="store_true", help="smoke run: tiny sizes, 1 repeat")
    args = parser.parse_args()
    runs, episodes, steps, repeat = RUNS, EPISODES, args.steps, args.repeat
    if args.quick:
        runs, episodes, steps, repeat = 4, 500, 5_000, 1

    from mosaic_sdk.plots import plot_runs, read_episodes
    from mosaic_sdk.runner.storage.export import export_run, iter_batches
    from mosaic_sdk.runner.storage.store import RunStore

    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        store_path = tmpdir / "runs.sqlite"
        start = time.perf_counter()
        ids = fill_episodes(store_path, runs, episodes)
        steps_run = fill_steps(store_path, steps)
        t = time.perf_counter() - start
        print(f"store: {runs} runs x {episodes} episodes, 1 run of {steps} steps ({t:.1f} s)")

        figures: dict[str, list[float]] = {}

        def add(name: str, seconds: float) -> None:
            figures.setdefault(name, []).append(seconds)

        startup = [sys.executable, "-c", "import matplotlib.figure, mosaic_sdk.plots.figure"]
        with RunStore(store_path, readonly=True) as store:  # warm up: imports, font cache
            plot_runs(store, ids[:1], tmpdir / "warm.png")
            export_run(store, steps_run, what="steps", fmt="parquet", output=tmpdir / "w.pq")
        plain_matplotlib(store_path, ids[:1], tmpdir / "warm.png")
        for _ in range(repeat):
            add("cmd", timed(lambda: command(store_path, ids, tmpdir / "a.png")))
            add("cmd_grouped", timed(lambda: command(store_path, ids, tmpdir / "b.png",
                                                     "--group-seeds")))  # fmt: skip
            add("startup", timed(lambda: subprocess.run(startup, check=True)))
            with RunStore(store_path, readonly=True) as store:
                add("read", timed(lambda: [read_episodes(store, r) for r in ids]))  # noqa: B023
                add("ours", timed(lambda: plot_runs(store, ids, tmpdir / "c.png", window=100)))  # noqa: B023
            add("plain", timed(lambda: plain_matplotlib(store_path, ids, tmpdir / "d.png")))

        med = {k: statistics.median(v) for k, v in figures.items()}
        print(f"\n`mosaic runs plot` of {runs} runs x {episodes} episodes, median of {repeat}:")
        print(f"  command, --smooth 100          : {med['cmd']:.3f} s   (goal <= 3 s)")
        print(f"  command, --group-seeds         : {med['cmd_grouped']:.3f} s")
        print(f"  of which interpreter + imports : {med['startup']:.3f} s")
        print("in-process:")
        print(f"  baseline, reading the episodes : {med['read']:.3f} s")
        print(f"  baseline, plain matplotlib plot: {med['plain']:.3f} s  (same arrays, raw)")
        print(
            f"  plot_runs (raw + smoothed)     : {med['ours']:.3f} s  "
            f"({med['ours'] / med['plain']:.2f}x the plain plot)"
        )

        rates: dict[str, list[float]] = {}
        with RunStore(store_path, readonly=True) as store:
            for _ in range(repeat):
                start = time.perf_counter()
                rows = sum(len(b) for b in iter_batches(store, steps_run, "steps"))
                rates.setdefault("iterate", []).append(rows / (time.perf_counter() - start))
                for fmt in ("csv", "jsonl", "parquet"):
                    out = tmpdir / f"steps.{fmt}"
                    start = time.perf_counter()
                    rows = export_run(store, steps_run, what="steps", fmt=fmt, output=out)
                    rates.setdefault(fmt, []).append(rows / (time.perf_counter() - start))
        rate = {k: statistics.median(v) for k, v in rates.items()}
        print(f"\nexport of {steps} step rows to a file, median of {repeat} (rows/s):")
        print(f"  baseline, iterating the rows   : {rate['iterate'] / 1e3:8.0f}k")
        for fmt in ("csv", "jsonl", "parquet"):
            size = (tmpdir / f"steps.{fmt}").stat().st_size / 2**20
            print(
                f"  {fmt:<7}                        : {rate[fmt] / 1e3:8.0f}k  "
                f"({rate[fmt] / rate['iterate']:.2f}x the baseline, {size:.0f} MiB)"
            )


if __name__ == "__main__":
    main()
