"""Learning of our PPO with the MiniGrid CNN agent, beside random and a published figure.

    python benchmarks/cleanrl/learning_minigrid.py [--steps 100000] [--seeds 1 2 3]
        [--envs MiniGrid-Empty-5x5-v0 MiniGrid-DoorKey-5x5-v0] [--eval-episodes 100]
        [--hparams cleanrl|zoo]

For each env and seed the script trains ``python -m mosaic_worker_cleanrl.algorithms.ppo`` bare with
its default hyperparameters (``--hparams cleanrl``: CleanRL's, 4 envs x 128 steps, 4
minibatches x 4 epochs, entropy 0.01, lr 2.5e-4 annealed; the CNN agent is chosen from the
observation space) or with RL Zoo's for MiniGrid (``--hparams zoo``: 8 envs x 128 steps, 16
minibatches of 64 x 10 epochs, entropy 0, lr 2.5e-4 constant: five times the gradient steps per
sample; RL Zoo also normalises observations and rewards, we do not), then plays its final
checkpoint for ``--eval-episodes`` episodes on fixed seeds, greedily (argmax, as the published
figures are measured) and sampling its actions (the policy as trained: a young greedy policy
can walk into a wall for ever). Random actions are played on the same episode seeds in the same
run. Printed per env: ours (mean and standard deviation over seeds, greedy and sampled),
random, and the published figure where one exists.

Published figures (RL Baselines3 Zoo, ``benchmark.md``: Stable-Baselines3 PPO with an MLP on
``FlatObsWrapper`` observations, 8 envs, 100k steps, one training run, deterministic
evaluation): ``MiniGrid-DoorKey-5x5-v0`` 0.964 +- 0.006. There is none for
``MiniGrid-Empty-5x5-v0``; the closest is ``MiniGrid-Empty-Random-5x5-v0`` (random start
position) at 0.968 +- 0.013, printed as a reference only.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

#: Our PPO's flags for each set of hyperparameters (nothing: the script's defaults).
HPARAMS = {
    "cleanrl": [],
    "zoo": ["--num-envs=8", "--num-steps=128", "--num-minibatches=16", "--update-epochs=10",
            "--ent-coef=0.0", "--no-anneal-lr"],
}  # fmt: skip
PUBLISHED = {
    "MiniGrid-DoorKey-5x5-v0": ("RL Zoo PPO, 100k steps", 0.964),
    "MiniGrid-Empty-5x5-v0": ("none; RL Zoo Empty-Random-5x5, 100k", 0.968),
}
_RETURN = re.compile(r"episodic_return=([-0-9.]+)")
EVAL_SEED = 10_000


def train(
    work: Path, env_id: str, steps: int, seed: int, hparams: str = "cleanrl"
) -> tuple[Path, list[float]]:
    out = work / f"{env_id}-{seed}-{hparams}"
    cmd = [sys.executable, "-m", "mosaic_worker_cleanrl.algorithms.ppo", f"--env-id={env_id}",
           f"--total-timesteps={steps}", f"--seed={seed}", f"--tensorboard-dir={out / 'tb'}",
           f"--checkpoint-dir={out / 'ckpt'}", *HPARAMS[hparams]]  # fmt: skip
    proc = subprocess.run(cmd, check=True, capture_output=True, text=True)
    returns = [float(x) for x in _RETURN.findall(proc.stdout)]
    return sorted((out / "ckpt").glob("ppo_*.pt"))[-1], returns


def play(env_id: str, episodes: int, policy=None, greedy: bool = True) -> float:
    """Mean return over ``episodes`` on seeds EVAL_SEED.. (the policy, or random actions)."""
    import gymnasium
    import torch
    from mosaic_worker_cleanrl.env_families import register_env_families, wrap_observations

    register_env_families()
    torch.manual_seed(EVAL_SEED)
    env = wrap_observations(gymnasium.make(env_id))
    env.action_space.seed(EVAL_SEED)
    returns = []
    for episode in range(episodes):
        obs, _ = env.reset(seed=EVAL_SEED + episode)
        total, done = 0.0, False
        while not done:
            action = env.action_space.sample() if policy is None else policy.act(obs, greedy)
            obs, reward, terminated, truncated, _ = env.step(action)
            total, done = total + float(reward), bool(terminated or truncated)
        returns.append(total)
    env.close()
    return statistics.fmean(returns)


def mean_std(values: list[float]) -> str:
    std = statistics.pstdev(values) if len(values) > 1 else 0.0
    return f"{statistics.fmean(values):.3f} +- {std:.3f}"


def main() -> None:
    import torch
    from mosaic_worker_cleanrl.agents import load_policy

    torch.set_num_threads(1)  # one small forward pass per step

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--envs", nargs="+",
                        default=["MiniGrid-Empty-5x5-v0", "MiniGrid-DoorKey-5x5-v0"])  # fmt: skip
    parser.add_argument("--eval-episodes", type=int, default=100)
    parser.add_argument("--hparams", choices=sorted(HPARAMS), default="cleanrl",
                        help="our PPO's defaults (CleanRL's) or RL Zoo's for MiniGrid")  # fmt: skip
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="cleanrl-minigrid-") as tmp:
        for env_id in args.envs:
            greedy, sampled = [], []
            for seed in args.seeds:
                checkpoint, train_returns = train(Path(tmp), env_id, args.steps, seed, args.hparams)
                policy = load_policy(checkpoint)
                greedy.append(play(env_id, args.eval_episodes, policy, greedy=True))
                sampled.append(play(env_id, args.eval_episodes, policy, greedy=False))
                last = statistics.fmean(train_returns[-20:]) if train_returns else float("nan")
                print(f"{env_id} seed {seed}: greedy {greedy[-1]:.3f}, sampled "
                      f"{sampled[-1]:.3f}, last 20 training episodes {last:.3f}",
                      flush=True)  # fmt: skip
            rows.append((env_id, greedy, sampled, play(env_id, args.eval_episodes)))
    print(f"\nPPO + MiniGrid CNN, {args.hparams} hyperparameters, {args.steps} steps, seeds "
          f"{args.seeds}, evaluation over "
          f"{args.eval_episodes} episodes (mean +- std over seeds)")  # fmt: skip
    print(f"{'env':<26}{'ours greedy':>17}{'ours sampled':>17}{'random':>8}   published")
    for env_id, greedy, sampled, random_mean in rows:
        source, value = PUBLISHED.get(env_id, ("none found", float("nan")))
        print(f"{env_id:<26}{mean_std(greedy):>17}{mean_std(sampled):>17}{random_mean:>8.3f}"
              f"   {value:.3f} ({source})")  # fmt: skip


if __name__ == "__main__":
    main()
