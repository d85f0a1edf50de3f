"""Env families beyond gymnasium's own: registering them, and their standard observation wrapper.

MiniGrid and BabyAI come from the ``minigrid`` package (the worker's ``minigrid`` extra):
importing it registers every ``MiniGrid-*`` and ``BabyAI-*`` id with gymnasium.
:func:`register_env_families` does that in every process that makes envs: the worker process
(``runtime``, the dry run, the plugin's ``make_env``), every env subprocess the patch reaches
(``subprocess_patch``, ``spawn`` and ``forkserver`` included) and our PPO's env thunks (so the
script runs MiniGrid bare too).

Their observations are a ``Dict`` (``image``, ``direction``, ``mission``);
:func:`wrap_observations` keeps only the ``(7, 7, 3)`` image through MiniGrid's own
``ImgObsWrapper``, which is what the CNN agent takes.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

#: Env id prefixes and the package that registers them.
FAMILY_PACKAGES = {"MiniGrid-": "minigrid", "BabyAI-": "minigrid"}
_registered: set[str] = set()


def register_env_families() -> list[str]:
    """Import the installed family packages (idempotent); returns the ones registered."""
    for package in sorted(set(FAMILY_PACKAGES.values())):
        if package in _registered or importlib.util.find_spec(package) is None:
            continue
        importlib.import_module(package)
        _registered.add(package)
    return sorted(_registered)


def missing_family_package(env_id: str) -> str | None:
    """The package ``env_id``'s family needs when it is not installed, else ``None``."""
    for prefix, package in FAMILY_PACKAGES.items():
        if env_id.startswith(prefix) and importlib.util.find_spec(package) is None:
            return package
    return None


def wrap_observations(env: Any) -> Any:
    """``env`` with MiniGrid's ``ImgObsWrapper`` when it observes a ``Dict`` with an
    ``image``; any other env unchanged."""
    import gymnasium  # gymnasium only when an env is wrapped (this module stays light)

    space = env.observation_space
    if isinstance(space, gymnasium.spaces.Dict) and "image" in space.spaces:
        from minigrid.wrappers import ImgObsWrapper  # optional dependency (MiniGrid)

        return ImgObsWrapper(env)
    return env


__all__ = [
    "FAMILY_PACKAGES",
    "missing_family_package",
    "register_env_families",
    "wrap_observations",
]
