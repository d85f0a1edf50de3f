"""``gym.wrappers`` of the CleanRL worker's gym layer: gymnasium's wrappers with gym 0.23's API.

``gym.wrappers.X(env, ...)`` wraps the gymnasium env behind ``env`` with gymnasium's ``X`` and
hands it back with the old API; gym's old names map to their gymnasium successors.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import gymnasium
from mosaic_worker_cleanrl import gym_compat
from mosaic_worker_cleanrl.legacy_gym import lift

_RENAMED: dict[str, Any] = {
    "GrayScaleObservation": gymnasium.wrappers.GrayscaleObservation,
    "FrameStack": gym_compat.FrameStack,
    "TransformObservation": gym_compat.TransformObservation,
}


@cache
def _lifted(name: str) -> Any:
    wrapper = _RENAMED.get(name) or getattr(gymnasium.wrappers, name, None)
    if not isinstance(wrapper, type) or not issubclass(wrapper, gymnasium.Wrapper):
        raise AttributeError(
            f"gym.wrappers.{name} has no gymnasium counterpart in the CleanRL worker's gym layer"
        )
    return lift(wrapper)


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    return _lifted(name)
