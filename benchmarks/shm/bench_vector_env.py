"""Steps per second of ShmVectorEnv vs gymnasium's SyncVectorEnv and AsyncVectorEnv.

CartPole-v1 with 8 and 64 envs, random actions, gymnasium's default autoreset. Each figure is
vector steps per second (multiply by the env count for env steps) over ``--seconds`` of
stepping after a short warm-up.

    python benchmarks/shm/bench_vector_env.py [--seconds 2] [--sizes 8 64]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from mosaic_sdk.shm.vector_env import ShmVectorEnv


def make_fns(n: int) -> list[Callable[[], gym.Env[Any, Any]]]:
    return [lambda: gym.make("CartPole-v1") for _ in range(n)]


def steps_per_second(envs: gym.vector.VectorEnv, seconds: float) -> float:
    try:
        envs.reset(seed=0)
        rng = np.random.default_rng(0)
        actions = [rng.integers(0, 2, envs.num_envs) for _ in range(64)]
        for i in range(50):
            envs.step(actions[i % 64])
        steps, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            for _ in range(20):
                envs.step(actions[steps % 64])
                steps += 1
        return steps / elapsed
    finally:
        envs.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 64])
    args = parser.parse_args()
    print(f"{'num_envs':>8}  {'vector env':<40}{'steps/s':>10}{'env steps/s':>13}{'vs Sync':>9}")
    for n in args.sizes:
        candidates: list[tuple[str, Callable[[], gym.vector.VectorEnv]]] = [
            ("SyncVectorEnv", lambda n=n: gym.vector.SyncVectorEnv(make_fns(n))),
            (
                "AsyncVectorEnv(shared_memory=True)",
                lambda n=n: gym.vector.AsyncVectorEnv(make_fns(n), shared_memory=True),
            ),
            ("ShmVectorEnv(num_workers=1)", lambda n=n: ShmVectorEnv(make_fns(n))),
            ("ShmVectorEnv(num_workers=2)", lambda n=n: ShmVectorEnv(make_fns(n), num_workers=2)),
        ]
        base = None
        for label, factory in candidates:
            rate = steps_per_second(factory(), args.seconds)
            base = base or rate
            print(f"{n:>8}  {label:<40}{rate:10.0f}{rate * n:13.0f}{rate / base:8.2f}x")


if __name__ == "__main__":
    main()
