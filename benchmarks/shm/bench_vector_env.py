"""Steps per second of ShmVectorEnv vs gymnasium's SyncVectorEnv and AsyncVectorEnv.

CartPole-v1 with 8, 64 and 256 envs, random actions, gymnasium's default autoreset, in three
scenarios: ``cartpole`` (Box observations, no step infos), ``dict`` (the same env observed as
``Dict(state=Box(4), tick=Discrete(501))``) and ``infos`` (an info dict on every step, which
ShmVectorEnv carries through its side areas), plus ``null`` (an env whose step does no work: the
figure is the vector env's own cost per step, which bounds what several host processes can
gain on cheap envs). Each figure is the median over ``--repeats`` runs (taken in turn) of
vector steps per second (multiply by the env count for env steps) over ``--seconds`` of
stepping after a short warm-up; ratios are against ``SyncVectorEnv`` in the same run.
``ShmVectorEnv(mode=auto)`` is the default construction, built anew for each run: the label
says which mode it chose in how many runs (its race of the two modes at construction is not
timed). ``mode=process`` uses the host processes auto would start (one per CPU). PufferLib's
``Multiprocessing`` backend (same worker count) runs when pufferlib is importable; otherwise
its row says "not installed". AsyncVectorEnv (one process per env) runs up to 64 envs.

    python benchmarks/shm/bench_vector_env.py [--seconds 2] [--repeats 3] [--sizes 8 64 256]
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

from mosaic_sdk.shm.layout import MAX_WORKERS
from mosaic_sdk.shm.processes import cpus
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


def pufferlib_factory(
    fns: list[Callable[[], gym.Env[Any, Any]]], workers: int
) -> Callable[[], Any] | str:
    """A PufferLib Multiprocessing vector env of ``fns``, or why there is none."""
    try:
        import pufferlib.emulation  # type: ignore[import-not-found]
        import pufferlib.vector  # type: ignore[import-not-found]
    except ImportError:
        return "not installed"
    creators = [lambda fn=fn: pufferlib.emulation.GymnasiumPufferEnv(env_creator=fn) for fn in fns]
    return lambda: pufferlib.vector.make(
        creators,
        env_args=[[] for _ in fns],
        env_kwargs=[{} for _ in fns],
        backend=pufferlib.vector.Multiprocessing,
        num_envs=len(fns),
        num_workers=workers,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 64, 256])
    parser.add_argument("--scenarios", nargs="+", default=list(SCENARIOS), choices=SCENARIOS)
    args = parser.parse_args()
    print(
        f"{'scenario':<9}{'num_envs':>8}  {'vector env':<48}{'steps/s':>10}{'env steps/s':>13}"
        f"{'vs Sync':>9}"
    )
    for scenario in args.scenarios:
        for n in args.sizes:
            fns = make_fns(n, scenario)
            workers = min(cpus(), n, MAX_WORKERS)
            choices: list[str] = []

            def auto(fns: list[Any] = fns, choices: list[str] = choices) -> ShmVectorEnv:
                envs = ShmVectorEnv(fns)
                choices.append(envs.mode)
                return envs

            candidates: list[tuple[str, Callable[[], Any]]] = [
                ("SyncVectorEnv", lambda fns=fns: gym.vector.SyncVectorEnv(fns)),
            ]
            if n <= 64:
                candidates.append(
                    (
                        "AsyncVectorEnv(shared_memory=True)",
                        lambda fns=fns: gym.vector.AsyncVectorEnv(fns, shared_memory=True),
                    )
                )
            candidates += [
                ("ShmVectorEnv(mode=auto)", auto),
                ("ShmVectorEnv(mode=inline)", lambda fns=fns: ShmVectorEnv(fns, mode="inline")),
                (
                    f"ShmVectorEnv(mode=process, {workers} workers)",
                    lambda fns=fns, w=workers: ShmVectorEnv(fns, mode="process", num_workers=w),
                ),
            ]
            puffer = pufferlib_factory(fns, workers)
            puffer_label = f"PufferLib Multiprocessing({workers} workers)"
            if not isinstance(puffer, str):
                candidates.append((puffer_label, puffer))
            rates: dict[str, list[float]] = {label: [] for label, _ in candidates}
            failed: dict[str, str] = {}
            for _ in range(args.repeats):
                for label, factory in candidates:
                    if label in failed:
                        continue
                    try:
                        rates[label].append(steps_per_second(factory(), args.seconds))
                    except Exception as exc:  # a third-party backend that does not run here
                        failed[label] = f"failed: {type(exc).__name__}: {exc}"[:80]
            base = statistics.median(rates["SyncVectorEnv"])
            for label, _ in candidates:
                shown = label
                if label == "ShmVectorEnv(mode=auto)":
                    counts = {m: choices.count(m) for m in ("inline", "process") if m in choices}
                    summary = ", ".join(f"{m} {k}/{len(choices)}" for m, k in counts.items())
                    shown = f"ShmVectorEnv(mode=auto: {summary})"
                if label in failed:
                    print(f"{scenario:<9}{n:>8}  {shown:<48}{failed[label]}")
                    continue
                rate = statistics.median(rates[label])
                print(
                    f"{scenario:<9}{n:>8}  {shown:<48}{rate:10.0f}{rate * n:13.0f}"
                    f"{rate / base:8.2f}x"
                )
            if isinstance(puffer, str):
                print(f"{scenario:<9}{n:>8}  {puffer_label:<48}{puffer}")


if __name__ == "__main__":
    main()
