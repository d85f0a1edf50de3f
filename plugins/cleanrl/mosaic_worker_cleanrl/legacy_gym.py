"""The ``gym`` 0.23 API on top of gymnasium, for CleanRL scripts that still ``import gym``.

CleanRL 1.2.0's c51, sac_continuous_action, td3_continuous_action (and the Atari, JAX and
Procgen variants) were written for gym 0.23: ``env.seed(s)``, ``reset()`` returning only the
observation, ``step()`` returning ``(obs, reward, done, info)`` with
``info["TimeLimit.truncated"]``, and vector envs whose ``infos`` is a list of per-env dicts
holding ``terminal_observation`` for an env that just finished. This module gives them that
API while every env underneath is a gymnasium env made by ``gymnasium.make`` and batched by
``gymnasium.vector`` (looked up when called, so the worker's telemetry and FastLane patches
see them as they see any other script's envs).

- :class:`LegacyEnv` presents one gymnasium env with the old API; :func:`modern` takes it
  back (carrying a pending ``seed`` to the first reset);
- :func:`lift` turns a gymnasium wrapper into an old-API wrapper (``gym.wrappers.X``);
- :class:`LegacyVectorEnv` presents a gymnasium vector env (SAME_STEP autoreset) with the
  old API.

The ``gym`` package itself lives in ``mosaic_worker_cleanrl/_gym/`` and is put on ``sys.path`` only
while the worker runs an upstream script (:func:`gym_module_on_path`), and in that script's
env subprocesses; it is never installed.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode

from mosaic_worker_cleanrl.gym_compat import env_info

#: The directory that holds only the ``gym`` package of this layer.
GYM_DIR = Path(__file__).resolve().parent / "_gym"
#: The gym version the layer presents.
LEGACY_VERSION = "0.23.1"


class LegacyEnv:
    """One gymnasium env with gym 0.23's API (``seed``, 1-value ``reset``, 4-value ``step``)."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self._seed: int | None = None

    def seed(self, seed: int | None = None) -> list[int | None]:
        """Seed the env's next reset (gym 0.23: the generator, once)."""
        self._seed = seed
        return [seed]

    def reset(self, **kwargs: Any) -> Any:
        if self._seed is not None and kwargs.get("seed") is None:
            kwargs["seed"] = self._seed
        self._seed = None
        kwargs.pop("return_info", None)
        obs, _info = self.env.reset(**kwargs)
        return obs

    def step(self, action: Any) -> tuple[Any, Any, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        info = dict(info)
        if truncated and not terminated:
            info["TimeLimit.truncated"] = True
        return obs, reward, bool(terminated or truncated), info

    def render(self, mode: str | None = None, **kwargs: Any) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()

    @property
    def unwrapped(self) -> Any:
        return self.env.unwrapped

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.env, name)

    def __repr__(self) -> str:
        return f"<LegacyEnv {self.env!r}>"


class _SeedFirstReset(gymnasium.Wrapper):  # type: ignore[type-arg]
    """Passes ``seed`` to the first reset that asks for none (a pending ``env.seed``)."""

    def __init__(self, env: Any, seed: int) -> None:
        super().__init__(env)
        self._pending: int | None = seed

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        if seed is None:
            seed = self._pending
        self._pending = None
        return self.env.reset(seed=seed, options=options)


def modern(env: Any) -> Any:
    """The gymnasium env behind ``env`` (an old-API :class:`LegacyEnv` or a gymnasium env)."""
    if isinstance(env, LegacyEnv):
        inner, seed = env.env, env._seed
        return inner if seed is None else _SeedFirstReset(inner, seed)
    if isinstance(env, gymnasium.Env):
        return env
    raise TypeError(
        f"{type(env).__name__} is neither a gymnasium env nor an env of this gym layer; the "
        "layer only runs envs made by gym.make / gymnasium.make"
    )


def lift(wrapper: type) -> Callable[..., LegacyEnv]:
    """``wrapper`` (a gymnasium wrapper class) as an old-API wrapper factory."""

    @functools.wraps(wrapper, updated=())
    def build(env: Any, *args: Any, **kwargs: Any) -> LegacyEnv:
        return LegacyEnv(wrapper(modern(env), *args, **kwargs))

    return build


def make(id: Any, **kwargs: Any) -> LegacyEnv:
    """gym 0.23's ``gym.make``: any env can render ``rgb_array`` on demand, as there."""
    kwargs.setdefault("render_mode", "rgb_array")
    return LegacyEnv(gymnasium.make(id, **kwargs))


def _from_thunk(thunk: Callable[[], Any]) -> Any:
    return modern(thunk())


def split_infos(
    infos: dict[str, Any],
    num_envs: int,
    terminated: np.ndarray,
    truncated: np.ndarray,
) -> list[dict[str, Any]]:
    """gym 0.23's list of per-env info dicts out of a SAME_STEP vector info dict (1.x names
    ``final_obs`` / ``final_info``, or the 0.29 shape of the compatibility layer)."""
    out = []
    legacy = "final_observation" in infos
    for i in range(num_envs):
        done = bool(terminated[i] or truncated[i])
        if not done:
            out.append(env_info(infos, i))
            continue
        if legacy:
            info = dict(infos["final_info"][i] or {})
            final_obs = infos["final_observation"][i]
        else:
            info = env_info(infos.get("final_info", {}), i)
            final_obs = infos["final_obs"][i]
        info["terminal_observation"] = final_obs
        if truncated[i] and not terminated[i]:
            info["TimeLimit.truncated"] = True
        out.append(info)
    return out


class LegacyVectorEnv:
    """A gymnasium vector env (SAME_STEP autoreset) with gym 0.23's vector API."""

    asynchronous = False

    def __init__(self, env_fns: Any, **kwargs: Any) -> None:

        thunks = [functools.partial(_from_thunk, fn) for fn in env_fns]
        kwargs["autoreset_mode"] = AutoresetMode.SAME_STEP
        vector = gymnasium.vector
        factory = vector.AsyncVectorEnv if self.asynchronous else vector.SyncVectorEnv
        self.vector = factory(thunks, **kwargs)
        self._seeds: list[int | None] | None = None

    def seed(self, seed: int | list[int] | None = None) -> list[int | None]:
        n = self.num_envs
        seeds = list(seed) if isinstance(seed, (list, tuple)) else [
            None if seed is None else seed + i for i in range(n)
        ]  # fmt: skip
        self._seeds = seeds
        return seeds

    def reset(self, **kwargs: Any) -> Any:
        if self._seeds is not None and kwargs.get("seed") is None:
            kwargs["seed"] = self._seeds
        self._seeds = None
        kwargs.pop("return_info", None)
        obs, _info = self.vector.reset(**kwargs)
        return obs

    def step(self, actions: Any) -> tuple[Any, Any, np.ndarray, list[dict[str, Any]]]:
        obs, rewards, terminated, truncated, infos = self.vector.step(actions)
        dones = np.logical_or(terminated, truncated)
        return obs, rewards, dones, split_infos(infos, self.num_envs, terminated, truncated)

    def close(self, **kwargs: Any) -> None:
        self.vector.close(**kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "vector":
            raise AttributeError(name)
        return getattr(self.vector, name)


class LegacySyncVectorEnv(LegacyVectorEnv):
    """``gym.vector.SyncVectorEnv`` of this layer."""


class LegacyAsyncVectorEnv(LegacyVectorEnv):
    """``gym.vector.AsyncVectorEnv`` of this layer (env subprocesses get the layer too)."""

    asynchronous = True


def _purge_gym_modules() -> None:
    """Forget the ``gym`` modules of this layer (and the gymnasium aliases it registered)."""
    for name in [n for n in sys.modules if n == "gym" or n.startswith("gym.")]:
        module = sys.modules[name]
        where = str(getattr(module, "__file__", "") or "")
        if where.startswith(str(GYM_DIR)) or module.__name__.startswith("gymnasium"):
            del sys.modules[name]


def put_on_path(path: list[str] | None = None) -> None:
    """Make ``import gym`` find this layer (first on ``path``, default ``sys.path``)."""
    path = sys.path if path is None else path
    if str(GYM_DIR) not in path:
        path.insert(0, str(GYM_DIR))


@contextmanager
def gym_module_on_path() -> Iterator[None]:
    """``import gym`` gives this layer inside the block; outside it, whatever it gave before
    (an ``ImportError`` when gym is not installed)."""
    put_on_path()
    try:
        yield
    finally:
        while str(GYM_DIR) in sys.path:
            sys.path.remove(str(GYM_DIR))
        _purge_gym_modules()


__all__ = [
    "GYM_DIR",
    "LEGACY_VERSION",
    "LegacyAsyncVectorEnv",
    "LegacyEnv",
    "LegacySyncVectorEnv",
    "LegacyVectorEnv",
    "gym_module_on_path",
    "lift",
    "make",
    "modern",
    "put_on_path",
    "split_infos",
]
