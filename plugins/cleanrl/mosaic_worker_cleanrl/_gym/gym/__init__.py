"""gym 0.23's API on gymnasium, for CleanRL scripts that ``import gym``.

This package is the CleanRL worker's compatibility layer, not the gym distribution: the
worker puts its directory on ``sys.path`` only while it runs an upstream script (and in that
script's env subprocesses). The adapters live in :mod:`mosaic_worker_cleanrl.legacy_gym`.
"""

from __future__ import annotations

import sys
from typing import Any

import gymnasium
from gymnasium import error, logger, spaces
from mosaic_worker_cleanrl.legacy_gym import LEGACY_VERSION as __version__
from mosaic_worker_cleanrl.legacy_gym import make

# ``import gym.spaces`` / ``from gym.spaces import Box`` give gymnasium's modules themselves,
# so spaces made by the script and by gymnasium are the same classes.
for _name, _module in (("spaces", spaces), ("error", error), ("logger", logger)):
    sys.modules[f"{__name__}.{_name}"] = _module

from gym import vector, wrappers  # noqa: E402

Env = gymnasium.Env
Space = spaces.Space


def __getattr__(name: str) -> Any:
    raise AttributeError(
        f"gym.{name} is not part of the CleanRL worker's gym layer (it offers make, spaces, "
        "vector, wrappers, error, logger, Env, Space); the script needs more than gym renamed"
    )


__all__ = ["Env", "Space", "__version__", "error", "logger", "make", "spaces", "vector", "wrappers"]
