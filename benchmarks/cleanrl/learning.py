"""Learning of our PPO on CartPole-v1 beside CleanRL's published figure for its ppo.py.

    python benchmarks/cleanrl/learning.py [--steps 500000] [--seeds 1 2 3]

Runs the script bare with its default hyperparameters, one seed after the other, and
reports per seed the mean episodic return of the last 20 episodes, then the mean and
standard deviation over seeds next to CleanRL's published result for ppo.py on CartPole-v1
(about 490; CleanRL's benchmark page reports 492.40 +- 13.05 over 3 seeds at 500k steps).
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CLEANRL_PUBLISHED = 492.40
_RETURN = re.compile(r"episodic_return=([-0-9.]+)")


def run_seed(work: Path, steps: int, seed: int) -> float:
    out = work / f"seed{seed}"
    cmd = [sys.executable, "-m", "mosaic_worker_cleanrl.algorithms.ppo",
           f"--total-timesteps={steps}", f"--seed={seed}", f"--tensorboard-dir={out / 'tb'}",
           f"--checkpoint-dir={out / 'ckpt'}"]  # fmt: skip
    proc = subprocess.run(cmd, check=True, capture_output=True, text=True)
    returns = [float(x) for x in _RETURN.findall(proc.stdout)]
    return statistics.fmean(returns[-20:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500_000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="cleanrl-learn-") as tmp:
        for seed in args.seeds:
            results.append(run_seed(Path(tmp), args.steps, seed))
            print(f"seed {seed}: mean return of the last 20 episodes {results[-1]:.1f}", flush=True)
    mean = statistics.fmean(results)
    std = statistics.pstdev(results) if len(results) > 1 else 0.0
    print(f"\nPPO on CartPole-v1, {args.steps} steps, seeds {args.seeds}")
    print(f"{'ours (mosaic_worker_cleanrl.algorithms.ppo)':<40}{mean:>8.1f} +- {std:.1f}")
    print(f"{'CleanRL ppo.py, published':<40}{CLEANRL_PUBLISHED:>8.1f} (baseline)")


if __name__ == "__main__":
    main()
