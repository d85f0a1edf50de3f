"""Small envs for the gymnasium-compatibility tests (importable, so spawn/forkserver work)."""

from __future__ import annotations

import os
import time
from typing import Any

import gymnasium as gym
import numpy as np


class ExactEnv(gym.Env):
    """Observes int32 16777217, rewards 0.1 and reports the action it received as an info."""

    observation_space = gym.spaces.Box(0, 2**30, (2,), np.int32)
    action_space = gym.spaces.Discrete(2**26)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
        super().reset(seed=seed)
        return np.array([16777217, 1], np.int32), {}

    def step(self, action: Any) -> tuple:
        obs = np.array([16777217, 2], np.int32)
        return obs, 0.1, False, False, {"action": int(action)}


class EchoEnv(gym.Env):
    """Samples observations from any space; reports whether each action was in its space."""

    def __init__(self, obs_space: gym.Space, act_space: gym.Space, done_every: int = 3) -> None:
        self.observation_space = obs_space
        self.action_space = act_space
        self.done_every = done_every
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
        super().reset(seed=seed)
        if seed is not None:
            self.observation_space.seed(seed)
        self.t = 0
        return self.observation_space.sample(), {"reset": True}

    def step(self, action: Any) -> tuple:
        self.t += 1
        ok = bool(self.action_space.contains(action))
        done = self.t % self.done_every == 0
        info = {"ok": ok} if self.t % 2 else {}
        return self.observation_space.sample(), float(self.t), done, False, info


class Probe(gym.Env):
    """An env with a method and an attribute, for call/get_attr/set_attr."""

    observation_space = gym.spaces.Box(-1, 1, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, ident: int = 0) -> None:
        self.ident = ident
        self.level = 1.0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
        super().reset(seed=seed)
        if options and options.get("explode"):
            raise KeyError("no such level")
        return np.zeros(1, np.float32), {}

    def step(self, action: Any) -> tuple:
        if action == 1:
            raise LookupError(f"env {self.ident} cannot do 1")
        return np.zeros(1, np.float32), 0.0, False, False, {}

    def scaled(self, x: float, factor: float = 2.0) -> float:
        return x * factor + self.ident


class StepInfo(gym.Wrapper):
    """Adds deterministic infos: the step count every 3rd step, the return at an episode end."""

    def reset(self, **kwargs: Any) -> tuple:
        self.steps, self.total = 0, 0.0
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple:
        obs, reward, term, trunc, info = self.env.step(action)
        self.steps += 1
        self.total += float(reward)
        info = dict(info)
        if self.steps % 3 == 0:
            info["steps"] = self.steps
        if term or trunc:
            info["episode"] = {"r": self.total, "l": self.steps}
        return obs, reward, term, trunc, info


def probe(ident: int):  # noqa: ANN201 - an env constructor
    return lambda: Probe(ident)


def cartpole(seed: int, max_steps: int | None = None):  # noqa: ANN201 - an env constructor
    """CartPole with its action space seeded, as gymnasium's own vector tests build it."""

    def make() -> gym.Env:
        env = StepInfo(gym.make("CartPole-v1", max_episode_steps=max_steps))
        env.action_space.seed(seed)
        return env

    return make


def broken_constructor() -> gym.Env:
    """An env constructor that fails, as a missing asset would."""
    raise FileNotFoundError("missing asset: level-7.xml")


class GatedEnv(gym.Env):
    """Env ``index``: steps block while ``gate`` names a file that does not exist yet.

    Observes ``[index, t]``, rewards ``index + t / 2``, terminates every ``done_every`` steps
    and reports ``{"t": t}`` on every third step: data that tells envs and steps apart.
    """

    observation_space = gym.spaces.Box(-1e6, 1e6, (2,), np.float32)
    action_space = gym.spaces.Discrete(3)

    def __init__(self, index: int, gate: str | None = None, done_every: int = 5) -> None:
        self.index = index
        self.gate = gate
        self.done_every = done_every
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
        super().reset(seed=seed)
        self.t = 0
        return np.array([self.index, 0], np.float32), {"reset_of": self.index}

    def step(self, action: Any) -> tuple:
        while self.gate is not None and not os.path.exists(self.gate):
            time.sleep(0.002)
        self.t += int(action) + 1
        obs = np.array([self.index, self.t], np.float32)
        done = self.t >= self.done_every
        info = {"t": self.t} if self.t % 3 == 0 else {}
        return obs, self.index + self.t / 2, done, False, info


class SlowEnv(GatedEnv):
    """A ``GatedEnv`` whose step also sleeps ``delay`` seconds."""

    def __init__(self, index: int, delay: float) -> None:
        super().__init__(index, None, done_every=7)
        self.delay = delay

    def step(self, action: Any) -> tuple:
        time.sleep(self.delay)
        return super().step(action)


def gated(index: int, gate: str | None = None, done_every: int = 5):  # noqa: ANN201
    return lambda: GatedEnv(index, gate, done_every)


def slow(index: int, delay: float):  # noqa: ANN201
    return lambda: SlowEnv(index, delay)


class LifetimeEnv(gym.Env):
    """Observes ``[steps, resets]`` counted since it was built (a reset does not clear them),
    so an env stepped before the trainer sees it shows; each step sleeps ``delay`` seconds."""

    observation_space = gym.spaces.Box(0, 1e9, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.steps = 0
        self.resets = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
        super().reset(seed=seed)
        self.resets += 1
        return np.array([self.steps, self.resets], np.float32), {}

    def step(self, action: Any) -> tuple:
        if self.delay:
            time.sleep(self.delay)
        self.steps += 1
        obs = np.array([self.steps, self.resets], np.float32)
        return obs, float(self.np_random.random()), False, False, {}


def lifetime(delay: float = 0.0):  # noqa: ANN201
    return lambda: LifetimeEnv(delay)
