"""Steps per second of ShmVectorEnv vs gymnasium's SyncVectorEnv and AsyncVectorEnv.

CartPole-v1 with 8 and 64 envs, random actions, gymnasium's default autoreset, in three
scenarios: ``cartpole`` (Box observations, no step infos), ``dict`` (the same env observed as
``Dict(state=Box(4), tick=Discrete(501))``) and ``infos`` (an info dict on every step, which
ShmVectorEnv carries through its side areas), plus ``null`` (an env whose step does no work: the
figure is the vector env's own cost per step, which bounds what several host processes can
gain on cheap envs). Each figure is the median over ``--repeats`` runs (taken in turn) of
vector steps per second (multiply by the env count for env steps) over ``--seconds`` of
stepping after a short warm-up; ratios are against ``SyncVectorEnv`` in the same run.
``ShmVectorEnv(mode=auto)`` is the default construction: the label says which mode it chose.

    python benchmarks/shm/bench_vector_env.py [--seconds 2] [--repeats 3] [--sizes 8 64]
        [--scenarios cartpole dict infos null]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from mosaic_sdk.shm.vector_env import ShmVectorEnv


class DictObservation(gym.ObservationWrapper):  # type: ignore[misc]
    """CartPole observed as a Dict: the state and the step count."""

    def __init__(self, env: gym.Env[Any, Any]) -> None:
        super().__init__(env)
        self.observation_space = gym.spaces.Dict(
            {"state": env.observation_space, "tick": gym.spaces.Discrete(501)}
        )
        self.tick = 0

    def reset(self, **kwargs: Any) -> Any:
        self.tick = 0
        return super().reset(**kwargs)

    def observation(self, observation: Any) -> dict[str, Any]:
        self.tick += 1
        return {"state": observation, "tick": min(self.tick, 500)}


class StepInfos(gym.Wrapper):  # type: ignore[misc]
    """CartPole that reports an info dict on every step."""

    def step(self, action: Any) -> Any:
        obs, reward, term, trunc, info = self.env.step(action)
        return obs, reward, term, trunc, {**info, "x": float(obs[0]), "alive": not term}


class NullEnv(gym.Env):  # type: ignore[misc]
    """An env whose reset and step do no work: what remains is the vector env's own cost."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
        super().reset(seed=seed)
        return np.zeros(4, np.float32), {}

    def step(self, action: Any) -> Any:
        return np.zeros(4, np.float32), 1.0, False, False, {}


SCENARIOS: dict[str, Callable[[], gym.Env[Any, Any]]] = {
    "cartpole": lambda: gym.make("CartPole-v1"),
    "dict": lambda: DictObservation(gym.make("CartPole-v1")),
    "infos": lambda: StepInfos(gym.make("CartPole-v1")),
    "null": NullEnv,
}


def make_fns(n: int, scenario: str = "cartpole") -> list[Callable[[], gym.Env[Any, Any]]]:
    return [SCENARIOS[scenario] for _ in range(n)]


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
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 64])
    parser.add_argument("--scenarios", nargs="+", default=list(SCENARIOS), choices=SCENARIOS)
    args = parser.parse_args()
    print(
        f"{'scenario':<9}{'num_envs':>8}  {'vector env':<36}{'steps/s':>10}{'env steps/s':>13}"
        f"{'vs Sync':>9}"
    )
    for scenario in args.scenarios:
        for n in args.sizes:
            fns = make_fns(n, scenario)
            auto = ShmVectorEnv(fns)
            chosen = auto.mode
            auto.close()
            candidates: list[tuple[str, Callable[[], gym.vector.VectorEnv]]] = [
                ("SyncVectorEnv", lambda fns=fns: gym.vector.SyncVectorEnv(fns)),
                (
                    "AsyncVectorEnv(shared_memory=True)",
                    lambda fns=fns: gym.vector.AsyncVectorEnv(fns, shared_memory=True),
                ),
                (f"ShmVectorEnv(mode=auto: {chosen})", lambda fns=fns: ShmVectorEnv(fns)),
                (
                    "ShmVectorEnv(mode=process)",
                    lambda fns=fns: ShmVectorEnv(fns, mode="process"),
                ),
                (
                    "ShmVectorEnv(num_workers=2)",
                    lambda fns=fns: ShmVectorEnv(fns, num_workers=2),
                ),
            ]
            rates: dict[str, list[float]] = {label: [] for label, _ in candidates}
            for _ in range(args.repeats):
                for label, factory in candidates:
                    rates[label].append(steps_per_second(factory(), args.seconds))
            base = statistics.median(rates["SyncVectorEnv"])
            for label, _ in candidates:
                rate = statistics.median(rates[label])
                print(
                    f"{scenario:<9}{n:>8}  {label:<36}{rate:10.0f}{rate * n:13.0f}"
                    f"{rate / base:8.2f}x"
                )


if __name__ == "__main__":
    main()
