"""Overhead of the CleanRL worker: our PPO bare vs under the worker (telemetry + FastLane).

    python benchmarks/cleanrl/overhead.py [--steps 50000] [--rounds 3] [--fps 30]

Each round runs the PPO script twice, alternating: bare (``python -m
cleanrl_worker.algorithms.ppo``) and through the worker (``python -m cleanrl_worker``) with
step telemetry on its stdout pipe (drained by this process) and FastLane frames at ``--fps``.
Throughput is the script's own steady-state figure, the last ``charts/SPS`` scalar it wrote
to TensorBoard, so interpreter start-up is not counted. Prints the medians, their ratio
and the median of the per-round ratios (robust when other work on the machine drifts;
goal: >= 0.9).
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


def last_sps(tensorboard_dir: Path) -> float:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    files = sorted(tensorboard_dir.rglob("events.out.tfevents.*"))
    if not files:
        raise RuntimeError(f"no TensorBoard events under {tensorboard_dir}")
    acc = EventAccumulator(str(files[-1].parent))
    acc.Reload()
    return float(acc.Scalars("charts/SPS")[-1].value)


def run_bare(work: Path, steps: int, seed: int) -> float:
    out = work / f"bare-{uuid.uuid4().hex[:6]}"
    out.mkdir()
    cmd = [sys.executable, "-m", "cleanrl_worker.algorithms.ppo", f"--total-timesteps={steps}",
           f"--seed={seed}", f"--tensorboard-dir={out / 'tb'}",
           f"--checkpoint-dir={out / 'ckpt'}"]  # fmt: skip
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return last_sps(out / "tb")


def run_worker(work: Path, steps: int, seed: int, fps: float) -> tuple[float, int]:
    run_id = f"bench-{uuid.uuid4().hex[:10]}"
    run_dir = work / run_id
    run_dir.mkdir()
    config = {"run_id": run_id, "algo": "ppo", "total_timesteps": steps, "seed": seed,
              "fastlane": True, "fastlane_interval_ms": 1000.0 / fps}  # fmt: skip
    (run_dir / "config.json").write_text(json.dumps(config))
    env = dict(os.environ, MOSAIC_RUN_DIR=str(run_dir))
    proc = subprocess.Popen(
        [sys.executable, "-m", "cleanrl_worker", "--config", str(run_dir / "config.json")],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    lines = [0]

    def drain() -> None:
        assert proc.stdout is not None
        for _ in proc.stdout:
            lines[0] += 1

    t = threading.Thread(target=drain)
    t.start()
    code = proc.wait()
    t.join()
    if code != 0:
        raise RuntimeError(f"worker run failed with exit code {code}")
    return last_sps(run_dir / "tensorboard"), lines[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--fps", type=float, default=30.0)
    args = parser.parse_args()
    bare: list[float] = []
    worker: list[float] = []
    with tempfile.TemporaryDirectory(prefix="cleanrl-bench-") as tmp:
        work = Path(tmp)
        for r in range(args.rounds):
            bare.append(run_bare(work, args.steps, seed=r + 1))
            sps, lines = run_worker(work, args.steps, seed=r + 1, fps=args.fps)
            worker.append(sps)
            print(f"round {r + 1}: bare {bare[-1]:.0f} sps, worker {sps:.0f} sps "
                  f"({lines} telemetry lines)", flush=True)  # fmt: skip
    b, w = statistics.median(bare), statistics.median(worker)
    print(f"\nPPO on CartPole-v1, {args.steps} steps, {args.rounds} rounds (medians)")
    print(f"{'bare script':<40}{b:>10.0f} steps/s   (baseline)")
    print(f"{'worker + telemetry + FastLane ' + str(int(args.fps)) + ' fps':<40}{w:>10.0f} steps/s")
    paired = statistics.median(x / y for x, y in zip(worker, bare, strict=True))
    print(f"{'ratio of medians (goal >= 0.9)':<40}{w / b:>10.3f}")
    print(f"{'median of per-round ratios':<40}{paired:>10.3f}")


if __name__ == "__main__":
    main()
