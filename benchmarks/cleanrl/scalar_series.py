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
per-round ratios (goal: >= 0.97, within 3%), with the spread of the per-round ratios (min,
max) and a 95% bootstrap interval of their median.

A run's SPS moves by more than 3% from one run to the next on a shared machine, so the same run
also measures the capture's own cost, which other load disturbs far less: in this process, a
``SummaryWriter`` writing files gets the nine scalars of a PPO update per step, without the
capture and with it (the patch, the points held, one ``metrics`` line per step written to an
emitter), alternating; the difference is the capture's cost per ``add_scalar`` call. With the
scalars per env step that the runs wrote (points counted on their stdout) and the baseline's
SPS, it gives the SPS ratio the capture implies: 1 / (1 + calls per step x cost per call x SPS).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
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


def run_worker(
    work: Path, args: argparse.Namespace, seed: int, series: bool
) -> tuple[dict, list[int]]:
    """One run; returns (its last SPS figures, [metrics lines, points] it wrote)."""
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
    metrics = [0, 0]  # metrics lines, points

    def drain() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if b'"event":"metrics"' in line:
                metrics[0] += 1
                metrics[1] += len(json.loads(line)["payload"]["values"])

    t = threading.Thread(target=drain)
    t.start()
    code = proc.wait()
    t.join()
    if code != 0:
        raise RuntimeError(f"worker run failed with exit code {code}")
    return last_sps(run_dir), metrics


def bootstrap_median(values: list[float], draws: int = 2000) -> tuple[float, float]:
    """95% percentile bootstrap interval of the median of ``values`` (a fixed seed)."""
    rng = random.Random(0)
    meds = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(draws))
    return meds[int(0.025 * draws)], meds[int(0.975 * draws) - 1]


def report(label: str, off: list[float], on: list[float]) -> None:
    b, w = statistics.median(off), statistics.median(on)
    ratios = [x / y for x, y in zip(on, off, strict=True)]
    paired = statistics.median(ratios)
    low, high = bootstrap_median(ratios)
    print(f"\n{label}")
    print(f"{'  scalars to TensorBoard only':<42}{b:>10.0f}   (baseline)")
    print(f"{'  scalars also as series':<42}{w:>10.0f}")
    print(f"{'  ratio of medians (goal >= 0.97)':<42}{w / b:>10.3f}")
    print(
        f"{'  median of per-round ratios':<42}{paired:>10.3f}   (min {min(ratios):.3f}, "
        f"max {max(ratios):.3f}; 95% bootstrap interval {low:.3f}..{high:.3f})"
    )


#: The scalars CleanRL's PPO writes once per update (its loss and chart tags).
PPO_TAGS = (
    "charts/learning_rate", "losses/value_loss", "losses/policy_loss", "losses/entropy",
    "losses/old_approx_kl", "losses/approx_kl", "losses/clipfrac",
    "losses/explained_variance", "charts/SPS",
)  # fmt: skip


def capture_cost(work: Path, updates: int = 2000, rounds: int = 5) -> tuple[float, float]:
    """Microseconds per ``add_scalar`` call of a file-writing SummaryWriter: (without the
    capture, the capture's extra cost), medians of ``rounds`` alternating measurements."""
    from torch.utils.tensorboard import SummaryWriter

    from mosaic_sdk.instrument.scalar_series import ScalarSeries
    from mosaic_sdk.telemetry import TelemetryEmitter

    def per_call(name: str) -> float:
        writer = SummaryWriter(str(work / name))
        start = time.perf_counter()
        for step in range(updates):
            for tag in PPO_TAGS:
                writer.add_scalar(tag, 0.5, step)
        elapsed = time.perf_counter() - start
        writer.close()
        return elapsed / (updates * len(PPO_TAGS)) * 1e6

    plain: list[float] = []
    captured: list[float] = []
    for r in range(rounds):
        for on in (False, True) if r % 2 == 0 else (True, False):
            if not on:
                plain.append(per_call(f"plain-{r}"))
                continue
            emitter = TelemetryEmitter("bench", io.StringIO())
            restore = ScalarSeries(
                lambda v, s, em=emitter: em.metrics(v, step=s)  # type: ignore[misc]
            ).install()
            try:
                captured.append(per_call(f"captured-{r}"))
            finally:
                restore()
    base = statistics.median(plain)
    return base, statistics.median(captured) - base


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
    scalars: list[int] = []
    with tempfile.TemporaryDirectory(prefix="cleanrl-series-bench-") as tmp:
        work = Path(tmp)
        for r in range(args.rounds):
            order = (False, True) if r % 2 == 0 else (True, False)
            for series in order:
                sps, (lines, points) = run_worker(work, args, seed=r + 1, series=series)
                (on if series else off).append(sps)
                if series:
                    scalars.append(points)
                state = "on " if series else "off"
                print(f"round {r + 1}: series {state} {sps.get('charts/SPS', 0):.0f} sps "
                      f"({sps.get('charts/SPS_cpu', 0):.0f} per CPU s), {lines} metrics lines, "
                      f"{points} points", flush=True)  # fmt: skip
        plain_call, extra_call = capture_cost(work)
    threads = args.threads or "default"
    print(f"\n{args.algo} on {args.env_id}, {args.steps} steps, {args.rounds} rounds, "
          f"{threads} torch threads, medians")  # fmt: skip
    for tag, label in (("charts/SPS", "steps per second (wall)"),
                       ("charts/SPS_cpu", "steps per CPU second")):  # fmt: skip
        if all(tag in s for s in off + on):
            report(label, [s[tag] for s in off], [s[tag] for s in on])
    per_step = statistics.median(scalars) / args.steps
    base_sps = statistics.median(s["charts/SPS"] for s in off) if off else 0.0
    implied = 1 / (1 + per_step * extra_call * 1e-6 * base_sps)
    print(
        f"\ncapture's own cost (this process, {len(PPO_TAGS)} scalars per step, medians of 5, "
        f"alternating): add_scalar writing files {plain_call:.2f} us per call, the capture "
        f"adds {extra_call:.2f} us per call"
    )
    print(
        f"scalars per env step in these runs: {per_step:.4f}; at the baseline's "
        f"{base_sps:.0f} SPS the capture costs {per_step * extra_call * base_sps / 1e4:.4f}% "
        f"of the run's time: implied SPS ratio {implied:.4f} (goal >= 0.97)"
    )


if __name__ == "__main__":
    main()
