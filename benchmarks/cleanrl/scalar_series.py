"""Cost of turning a script's TensorBoard scalars into series: the same run with and without.

    python benchmarks/cleanrl/scalar_series.py [--steps 20000] [--rounds 5] [--algo ppo]
        [--env-id CartPole-v1] [--threads 1]

Each round runs the worker (``python -m mosaic_worker_cleanrl``, telemetry drained by this
process) twice on the same config and seed, in alternating order: ``scalar_series`` off (the
baseline: the scalars go to TensorBoard files only) and on (every ``add_scalar`` also a
``metrics`` event). TensorBoard files are written in both, and throughput is read from them:
the script's own last ``charts/SPS`` (interpreter start-up not counted) and, for our PPO,
``charts/SPS_cpu`` (steps per CPU second of the whole process, which other load on the
machine disturbs less). Prints the medians, the ratio of medians and the median of the
per-round ratios (goal: >= 0.97, within 3%).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import uuid
from pathlib import Path


def last_sps(tensorboard_dir: Path) -> dict[str, float]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    files = sorted(tensorboard_dir.rglob("events.out.tfevents.*"))
    if not files:
        raise RuntimeError(f"no TensorBoard events under {tensorboard_dir}")
    acc = EventAccumulator(str(files[-1].parent))
    acc.Reload()
    tags = acc.Tags()["scalars"]
    wanted = ("charts/SPS", "charts/SPS_cpu")
    return {t: float(acc.Scalars(t)[-1].value) for t in wanted if t in tags}


def run_worker(work: Path, args: argparse.Namespace, seed: int, series: bool) -> tuple[dict, int]:
    """One run; returns (its last SPS figures, how many metrics lines it wrote)."""
    run_id = f"bench-{uuid.uuid4().hex[:10]}"
    run_dir = work / run_id
    run_dir.mkdir()
    config = {"run_id": run_id, "algo": args.algo, "env_id": args.env_id,
              "total_timesteps": args.steps, "seed": seed, "scalar_series": series,
              "track_tensorboard": True}  # fmt: skip
    if args.algo == "dqn":
        config["algo_params"] = {"learning_starts": 1000, "train_frequency": 10}
    (run_dir / "config.json").write_text(json.dumps(config))
    env = dict(os.environ, MOSAIC_RUN_DIR=str(run_dir))
    if args.threads:  # torch's idle threads spin: on a shared machine that is most of the noise
        env.update(OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads))
    proc = subprocess.Popen(
        [sys.executable, "-m", "mosaic_worker_cleanrl", "--config", str(run_dir / "config.json")],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    metrics = [0]

    def drain() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if b'"event":"metrics"' in line:
                metrics[0] += 1

    t = threading.Thread(target=drain)
    t.start()
    code = proc.wait()
    t.join()
    if code != 0:
        raise RuntimeError(f"worker run failed with exit code {code}")
    return last_sps(run_dir), metrics[0]


def report(label: str, off: list[float], on: list[float]) -> None:
    b, w = statistics.median(off), statistics.median(on)
    paired = statistics.median(x / y for x, y in zip(on, off, strict=True))
    print(f"\n{label}")
    print(f"{'  scalars to TensorBoard only':<42}{b:>10.0f}   (baseline)")
    print(f"{'  scalars also as series':<42}{w:>10.0f}")
    print(f"{'  ratio of medians (goal >= 0.97)':<42}{w / b:>10.3f}")
    print(f"{'  median of per-round ratios':<42}{paired:>10.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--algo", default="ppo", help="ppo (ours) or an upstream one, e.g. dqn")
    parser.add_argument("--env-id", default="CartPole-v1")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="OMP/MKL threads of each run, the same for both (0: torch's default)",
    )
    args = parser.parse_args()
    off: list[dict] = []
    on: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="cleanrl-series-bench-") as tmp:
        work = Path(tmp)
        for r in range(args.rounds):
            order = (False, True) if r % 2 == 0 else (True, False)
            for series in order:
                sps, lines = run_worker(work, args, seed=r + 1, series=series)
                (on if series else off).append(sps)
                state = "on " if series else "off"
                print(f"round {r + 1}: series {state} {sps.get('charts/SPS', 0):.0f} sps "
                      f"({sps.get('charts/SPS_cpu', 0):.0f} per CPU s), {lines} metrics lines",
                      flush=True)  # fmt: skip
    threads = args.threads or "default"
    print(f"\n{args.algo} on {args.env_id}, {args.steps} steps, {args.rounds} rounds, "
          f"{threads} torch threads, medians")  # fmt: skip
    for tag, label in (("charts/SPS", "steps per second (wall)"),
                       ("charts/SPS_cpu", "steps per CPU second")):  # fmt: skip
        if all(tag in s for s in off + on):
            report(label, [s[tag] for s in off], [s[tag] for s in on])


if __name__ == "__main__":
    main()
