"""Overhead of the CleanRL worker: our PPO bare vs under the worker (telemetry + FastLane).

    python benchmarks/cleanrl/overhead.py [--steps 50000] [--rounds 3] [--fps 30]
        [--env-id CartPole-v1 | MiniGrid-Empty-5x5-v0]

With a MiniGrid env id the PPO trains its CNN agent (needs the worker's ``minigrid`` extra),
and FastLane frames are MiniGrid's own renders.

Each round runs the PPO script twice, alternating: bare (``python -m
mosaic_worker_cleanrl.algorithms.ppo``) and through the worker (``python -m
mosaic_worker_cleanrl``) with
step telemetry on its stdout pipe (drained by this process) and FastLane frames at ``--fps``.
Throughput is the script's own steady-state figure, the last ``charts/SPS`` scalar it wrote
to TensorBoard (interpreter start-up is not counted), and ``charts/SPS_cpu``, steps per CPU
second of the whole process (every thread: telemetry flushing, heartbeats and FastLane
rendering included), which other load on the machine disturbs far less than wall time.
Prints the medians, their ratio and the median of the per-round ratios (goal: >= 0.9).
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


def last_sps(tensorboard_dir: Path) -> tuple[float, float]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    files = sorted(tensorboard_dir.rglob("events.out.tfevents.*"))
    if not files:
        raise RuntimeError(f"no TensorBoard events under {tensorboard_dir}")
    acc = EventAccumulator(str(files[-1].parent))
    acc.Reload()
    return (
        float(acc.Scalars("charts/SPS")[-1].value),
        float(acc.Scalars("charts/SPS_cpu")[-1].value),
    )


def run_bare(work: Path, steps: int, seed: int, env_id: str) -> tuple[float, float]:
    out = work / f"bare-{uuid.uuid4().hex[:6]}"
    out.mkdir()
    cmd = [sys.executable, "-m", "mosaic_worker_cleanrl.algorithms.ppo",
           f"--total-timesteps={steps}", f"--seed={seed}", f"--env-id={env_id}",
           f"--tensorboard-dir={out / 'tb'}",
           f"--checkpoint-dir={out / 'ckpt'}"]  # fmt: skip
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return last_sps(out / "tb")


def run_worker(
    work: Path, steps: int, seed: int, fps: float, env_id: str
) -> tuple[tuple[float, float], int]:
    run_id = f"bench-{uuid.uuid4().hex[:10]}"
    run_dir = work / run_id
    run_dir.mkdir()
    config = {"run_id": run_id, "algo": "ppo", "env_id": env_id, "total_timesteps": steps,
              "seed": seed,
              "fastlane": True, "fastlane_interval_ms": 1000.0 / fps}  # fmt: skip
    (run_dir / "config.json").write_text(json.dumps(config))
    env = dict(os.environ, MOSAIC_RUN_DIR=str(run_dir))
    proc = subprocess.Popen(
        [sys.executable, "-m", "mosaic_worker_cleanrl", "--config", str(run_dir / "config.json")],
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


def report(label: str, bare: list[float], worker: list[float], fps: float) -> None:
    b, w = statistics.median(bare), statistics.median(worker)
    paired = statistics.median(x / y for x, y in zip(worker, bare, strict=True))
    print(f"\n{label}")
    print(f"{'  bare script':<42}{b:>10.0f}   (baseline)")
    print(f"{'  worker + telemetry + FastLane ' + str(int(fps)) + ' fps':<42}{w:>10.0f}")
    print(f"{'  ratio of medians (goal >= 0.9)':<42}{w / b:>10.3f}")
    print(f"{'  median of per-round ratios':<42}{paired:>10.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--fps", type=float, default=30.0)
    parser.add_argument("--env-id", default="CartPole-v1")
    args = parser.parse_args()
    bare: list[tuple[float, float]] = []
    worker: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory(prefix="cleanrl-bench-") as tmp:
        work = Path(tmp)
        for r in range(args.rounds):
            bare.append(run_bare(work, args.steps, seed=r + 1, env_id=args.env_id))
            sps, lines = run_worker(work, args.steps, r + 1, args.fps, args.env_id)
            worker.append(sps)
            print(
                f"round {r + 1}: bare {bare[-1][0]:.0f} sps ({bare[-1][1]:.0f} per CPU s), "
                f"worker {sps[0]:.0f} sps ({sps[1]:.0f} per CPU s), {lines} telemetry lines",
                flush=True,
            )
    print(f"\nPPO on {args.env_id}, {args.steps} steps, {args.rounds} rounds, medians")
    report("steps per second (wall)", [b[0] for b in bare], [w[0] for w in worker], args.fps)
    report("steps per CPU second", [b[1] for b in bare], [w[1] for w in worker], args.fps)


if __name__ == "__main__":
    main()
