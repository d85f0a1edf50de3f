"""Running scripts written for gymnasium 0.29 on gymnasium 1.x, unmodified.

What changed under CleanRL 1.x's scripts, and what this module puts back while installed:

- vector envs autoreset on the *next* step in 1.x and report a finished episode only as
  arrays: :class:`LegacySyncVectorEnv` / :class:`LegacyAsyncVectorEnv` run in SAME_STEP
  autoreset mode and also report ``final_observation`` / ``final_info`` in 0.29's shape
  (object arrays, ``None`` for envs that did not finish, masks ``_final_observation`` /
  ``_final_info``);
- ``TransformObservation`` requires ``observation_space``: it defaults to ``None`` again
  (the wrapped env's space);
- ``GrayScaleObservation`` and ``FrameStack`` were renamed ``GrayscaleObservation`` and
  ``FrameStackObservation`` (``num_stack`` became ``stack_size``);
- ALE envs are no longer registered on import: they are registered when ``ale_py`` is
  installed.

:func:`install_compat` returns a function that undoes everything. Our own PPO does not need
any of it.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv


def env_info(vector_info: dict[str, Any], index: int) -> dict[str, Any]:
    """The info dict of env ``index`` out of a vectorised info dict (masks respected)."""
    out: dict[str, Any] = {}
    for key, value in vector_info.items():
        if key.startswith("_"):
            continue
        mask = vector_info.get("_" + key)
        if mask is not None and not mask[index]:
            continue
        out[key] = env_info(value, index) if isinstance(value, dict) else value[index]
    return out


def to_legacy_infos(infos: dict[str, Any], num_envs: int) -> dict[str, Any]:
    """Add 0.29's ``final_observation`` / ``final_info`` shape to SAME_STEP infos."""
    if "final_obs" not in infos:
        return infos
    mask = np.asarray(infos.get("_final_obs", np.zeros(num_envs, dtype=bool)), dtype=bool)
    final_obs = np.full(num_envs, None, dtype=object)
    final_info = np.full(num_envs, None, dtype=object)
    vector_final_info = infos.get("final_info", {})
    for i in np.flatnonzero(mask):
        final_obs[i] = infos["final_obs"][i]
        final_info[i] = env_info(vector_final_info, int(i)) if vector_final_info else {}
    legacy = {k: v for k, v in infos.items() if k not in ("final_obs", "_final_obs")}
    legacy["final_observation"], legacy["_final_observation"] = final_obs, mask.copy()
    legacy["final_info"], legacy["_final_info"] = final_info, mask.copy()
    return legacy


class LegacySyncVectorEnv(SyncVectorEnv):
    """``SyncVectorEnv`` in SAME_STEP autoreset mode with 0.29-shaped final infos."""

    def __init__(self, env_fns: Any, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("autoreset_mode", AutoresetMode.SAME_STEP)
        super().__init__(env_fns, *args, **kwargs)

    def step(self, actions: Any) -> Any:
        obs, rewards, terminations, truncations, infos = super().step(actions)
        return obs, rewards, terminations, truncations, to_legacy_infos(infos, self.num_envs)


class LegacyAsyncVectorEnv(AsyncVectorEnv):
    """``AsyncVectorEnv`` in SAME_STEP autoreset mode with 0.29-shaped final infos."""

    def __init__(self, env_fns: Any, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("autoreset_mode", AutoresetMode.SAME_STEP)
        super().__init__(env_fns, *args, **kwargs)

    def step_wait(self, timeout: float | None = None) -> Any:
        obs, rewards, terminations, truncations, infos = super().step_wait(timeout)
        return obs, rewards, terminations, truncations, to_legacy_infos(infos, self.num_envs)


class TransformObservation(gymnasium.wrappers.TransformObservation):  # type: ignore[type-arg]
    """1.x's ``TransformObservation`` with ``observation_space`` optional again."""

    def __init__(self, env: Any, func: Any, observation_space: Any = None) -> None:
        super().__init__(env, func, observation_space)


class FrameStack(gymnasium.wrappers.FrameStackObservation):  # type: ignore[type-arg]
    """0.29's ``FrameStack(env, num_stack)`` on top of ``FrameStackObservation``."""

    def __init__(self, env: Any, num_stack: int, lz4_compress: bool = False) -> None:
        super().__init__(env, stack_size=num_stack)


def register_ale_envs() -> bool:
    """Register the ALE envs with gymnasium when ale_py is installed; True if it was."""
    if importlib.util.find_spec("ale_py") is None:
        return False
    import ale_py  # optional dependency

    gymnasium.register_envs(ale_py)
    return True


def install_compat(vector_envs: bool = True) -> Callable[[], None]:
    """Install the aliases (and, with ``vector_envs``, the legacy vector envs) on
    ``gymnasium``; returns the function that restores the originals."""
    saved: list[tuple[Any, str, Any]] = []

    def put(owner: Any, name: str, value: Any) -> None:
        saved.append((owner, name, getattr(owner, name, _MISSING)))
        setattr(owner, name, value)

    wrappers = gymnasium.wrappers
    put(wrappers, "TransformObservation", TransformObservation)
    put(wrappers, "GrayScaleObservation", wrappers.GrayscaleObservation)
    put(wrappers, "FrameStack", FrameStack)
    if vector_envs:
        put(gymnasium.vector, "SyncVectorEnv", LegacySyncVectorEnv)
        put(gymnasium.vector, "AsyncVectorEnv", LegacyAsyncVectorEnv)
    register_ale_envs()

    def undo() -> None:
        for owner, name, value in reversed(saved):
            if value is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, value)
        saved.clear()

    return undo


_MISSING = object()

__all__ = [
    "FrameStack",
    "LegacyAsyncVectorEnv",
    "LegacySyncVectorEnv",
    "TransformObservation",
    "install_compat",
    "register_ale_envs",
    "to_legacy_infos",
]
