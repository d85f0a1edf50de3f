"""Env steps per second of ShmVectorEnv's asynchronous form (send/recv) beside its baselines.

Two scenarios, each measured ``--repeats`` times in turn (medians printed, ratios against
gymnasium's ``SyncVectorEnv`` measured in the same run):

- ``uneven``: an env whose step sleeps a random, seeded, uneven time (exponential, mean
  ``--mean-ms``; ``--work spin`` burns the CPU instead of sleeping). Lock-step vector envs wait
  for the slowest env of every step; ``send``/``recv`` with ``batch_size = num_envs / 2`` takes
  the half that finished first and hands those envs new actions at once.
- ``cartpole``: gymnasium's CartPole, cheap enough that a cross-process wake costs more than a
  step: ``ShmVectorEnv(mode="auto")`` steps it in the trainer's process.

Beside them, PufferLib's ``Multiprocessing`` backend (uneven: the same Python env) and
EnvPool (cartpole: its own C++ CartPole, as EnvPool cannot host a Python env) in their pooled
modes, when they are installed (``pip install envpool``, ``pip install pufferlib``: baselines
only, not dependencies of the SDK; envpool brings types-protobuf, which changes what mypy
reports); otherwise the table says
why they are absent.

    python benchmarks/shm/bench_async_vector_env.py [--seconds 2] [--repeats 3] [--envs 8]
        [--scenarios uneven cartpole] [--mean-ms 1.0] [--work sleep|spin]
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


class UnevenEnv(gym.Env):  # type: ignore[misc]
    """Steps take an exponential, seeded time (mean ``mean`` s): sleeping, or spinning."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, index: int = 0, mean: float = 1e-3, spin: bool = False) -> None:
        self.rng = np.random.default_rng(1000 + index)
        self.mean = mean
        self.spin = spin
        self.t = 0

    def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(4, np.float32), {}

    def step(self, action: Any) -> Any:
        delay = float(self.rng.exponential(self.mean))
        if self.spin:
            end = time.perf_counter() + delay
            while time.perf_counter() < end:
                pass
        else:
            time.sleep(delay)
        self.t += 1
        obs = np.full(4, (self.t % 100) / 100, np.float32)
        return obs, 1.0, False, self.t >= 200, {}


def uneven_fns(n: int, mean: float, spin: bool) -> list[Callable[[], gym.Env[Any, Any]]]:
    return [lambda i=i: UnevenEnv(i, mean, spin) for i in range(n)]


def lockstep_rate(envs: Any, seconds: float) -> float:
    """Env steps per second of ``step()`` on every env."""
    try:
        envs.reset(seed=0)
        n = envs.num_envs
        actions = np.zeros(n, np.int64)
        for _ in range(5):
            envs.step(actions)
        steps, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            envs.step(actions)
            steps += n
        return steps / elapsed
    finally:
        envs.close()


def pooled_rate(envs: ShmVectorEnv, seconds: float) -> float:
    """Env steps per second of ``recv()`` then ``send()`` to the envs received."""
    try:
        envs.async_reset(seed=0)
        actions = np.zeros(envs.batch_size, np.int64)
        for _ in range(5):
            _, _, _, _, infos = envs.recv()
            envs.send(actions[: len(infos["env_id"])], infos["env_id"])
        steps, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            _, _, _, _, infos = envs.recv()
            envs.send(actions[: len(infos["env_id"])], infos["env_id"])
            steps += len(infos["env_id"])
        return steps / elapsed
    finally:
        envs.close()


def envpool_rate(n: int, batch: int, seconds: float) -> float:
    import envpool  # optional: only this comparison needs it

    envs = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=n, batch_size=batch)
    try:
        envs.async_reset()
        actions = np.zeros(batch, np.int64)
        steps, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            _, _, _, _, info = envs.recv()
            envs.send(actions, info["env_id"])
            steps += batch
        return steps / elapsed
    finally:
        envs.close()


def pufferlib_rate(fns: list[Callable[[], Any]], batch: int, seconds: float) -> float:
    import pufferlib.emulation  # optional: only this comparison needs it
    import pufferlib.vector

    creators = [lambda fn=fn, **kw: pufferlib.emulation.GymnasiumPufferEnv(env=fn()) for fn in fns]
    envs = pufferlib.vector.make(
        creators,
        env_args=[[] for _ in fns],
        env_kwargs=[{} for _ in fns],
        backend=pufferlib.vector.Multiprocessing,
        num_envs=len(fns),
        num_workers=len(fns),
        batch_size=batch,
    )
    try:
        envs.async_reset(seed=0)
        actions = np.zeros(batch, np.int64)
        steps, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            envs.recv()
            envs.send(actions)
            steps += batch
        return steps / elapsed
    finally:
        envs.close()


def optional(name: str, run: Callable[[], float]) -> tuple[float | None, str]:
    """Run an optional comparison; (rate, "") or (None, why it did not run)."""
    try:
        return run(), ""
    except ImportError as exc:
        return None, f"not installed ({exc.name}): pip install {name}"
    except Exception as exc:  # its envs or API are missing on this Python
        return None, f"failed: {type(exc).__name__}: {exc}"[:120]


def candidates(
    scenario: str, n: int, args: argparse.Namespace
) -> list[tuple[str, Callable[[], float]]]:
    seconds, batch = args.seconds, n // 2
    if scenario == "uneven":
        fns = uneven_fns(n, args.mean_ms * 1e-3, args.work == "spin")
        return [
            ("SyncVectorEnv", lambda: lockstep_rate(gym.vector.SyncVectorEnv(fns), seconds)),
            (
                "AsyncVectorEnv(shared_memory=True)",
                lambda: lockstep_rate(gym.vector.AsyncVectorEnv(fns, shared_memory=True), seconds),
            ),
            (
                f"ShmVectorEnv(num_workers={n}) step()",
                lambda: lockstep_rate(ShmVectorEnv(fns, num_workers=n), seconds),
            ),
            (
                f"ShmVectorEnv(batch_size={batch}) recv/send",
                lambda: pooled_rate(ShmVectorEnv(fns, batch_size=batch), seconds),
            ),
            (
                f"PufferLib Multiprocessing(batch_size={batch})",
                lambda: pufferlib_rate(fns, batch, seconds),
            ),
        ]
    fns = [lambda: gym.make("CartPole-v1") for _ in range(n)]
    return [
        ("SyncVectorEnv", lambda: lockstep_rate(gym.vector.SyncVectorEnv(fns), seconds)),
        ("ShmVectorEnv(mode=auto) step()", lambda: lockstep_rate(ShmVectorEnv(fns), seconds)),
        (
            f"ShmVectorEnv(batch_size={batch}) recv/send",
            lambda: pooled_rate(ShmVectorEnv(fns, batch_size=batch), seconds),
        ),
        (f"EnvPool(batch_size={batch}) own CartPole", lambda: envpool_rate(n, batch, seconds)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--scenarios", nargs="+", default=["uneven", "cartpole"])
    parser.add_argument("--mean-ms", type=float, default=1.0)
    parser.add_argument("--work", choices=["sleep", "spin"], default="sleep")
    args = parser.parse_args()
    chosen = ShmVectorEnv([lambda: gym.make("CartPole-v1")] * args.envs)
    print(
        f"ShmVectorEnv(mode='auto') chose {chosen.mode!r} for {args.envs} CartPoles "
        f"(measured {chosen.step_cost * 1e6:.1f} us per env step)"
    )
    chosen.close()
    print(f"{'scenario':<9}{'vector env':<46}{'env steps/s':>12}{'vs Sync':>9}  note")
    for scenario in args.scenarios:
        runs = candidates(scenario, args.envs, args)
        rates: dict[str, list[float]] = {label: [] for label, _ in runs}
        notes: dict[str, str] = {}
        for _ in range(args.repeats):
            for label, run in runs:
                if label in notes:
                    continue
                package = "pufferlib" if "PufferLib" in label else "envpool"
                rate, why = (
                    optional(package, run)
                    if label.startswith(("PufferLib", "EnvPool"))
                    else (run(), "")
                )
                if rate is None:
                    notes[label] = why
                else:
                    rates[label].append(rate)
        base = statistics.median(rates["SyncVectorEnv"])
        for label, _ in runs:
            if label in notes:
                print(f"{scenario:<9}{label:<46}{'-':>12}{'-':>9}  {notes[label]}")
                continue
            median = statistics.median(rates[label])
            print(f"{scenario:<9}{label:<46}{median:12.0f}{median / base:8.2f}x")


if __name__ == "__main__":
    main()
