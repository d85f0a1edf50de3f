"""Gymnasium spaces in wire form (``SpaceSpec``), for engines and clients in other languages.

``GetSchemaResponse`` describes the env's spaces twice: pickled (``spaces_pickle``, what
``ShmVectorEnv`` uses: any space, with its random state) and, for ``Box``, ``Discrete``,
``MultiDiscrete`` and ``MultiBinary``, as a ``SpaceSpec`` that any FlatBuffers reader can use.
How values sit in the hot regions is ``mosaic_sdk.shm.packing``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from mosaic_sdk.shm.commands import SpaceSpec


def _shape(space: gym.Space[Any]) -> tuple[int, ...]:
    return tuple(space.shape) if space.shape is not None else ()


def to_spec(space: gym.Space[Any]) -> SpaceSpec:
    """Wire form of ``space`` (``ValueError`` for a space that has none)."""
    kinds = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)
    if not isinstance(space, kinds):
        raise ValueError(
            "a SpaceSpec describes Box, Discrete, MultiDiscrete and MultiBinary observation/action "
            f"spaces, not {type(space).__name__}; Python clients read spaces_pickle instead"
        )
    dtype = np.dtype(space.dtype).name if space.dtype is not None else "float32"
    if isinstance(space, gym.spaces.Box):
        return SpaceSpec(
            "Box",
            _shape(space),
            dtype,
            low=[float(x) for x in np.asarray(space.low, dtype=np.float64).ravel()],
            high=[float(x) for x in np.asarray(space.high, dtype=np.float64).ravel()],
        )
    if isinstance(space, gym.spaces.Discrete):
        return SpaceSpec("Discrete", (), dtype, n=int(space.n), start=[int(space.start)])
    if isinstance(space, gym.spaces.MultiDiscrete):
        return SpaceSpec(
            "MultiDiscrete",
            _shape(space),
            dtype,
            nvec=[int(x) for x in np.asarray(space.nvec).ravel()],
            start=[int(x) for x in np.asarray(space.start).ravel()],
        )
    return SpaceSpec("MultiBinary", _shape(space), dtype)


def from_spec(spec: SpaceSpec) -> gym.Space[Any]:
    """Rebuild the gymnasium space described by ``spec``."""
    dtype = np.dtype(spec.dtype)
    if spec.kind == "Box":
        low = np.asarray(spec.low, dtype=np.float64).reshape(spec.shape)
        high = np.asarray(spec.high, dtype=np.float64).reshape(spec.shape)
        return gym.spaces.Box(low.astype(dtype), high.astype(dtype), spec.shape, dtype)
    if spec.kind == "Discrete":
        return gym.spaces.Discrete(spec.n, start=spec.start[0] if spec.start else 0)
    if spec.kind == "MultiDiscrete":
        nvec = np.asarray(spec.nvec, dtype=np.int64).reshape(spec.shape)
        start = np.asarray(spec.start, dtype=np.int64).reshape(spec.shape) if spec.start else None
        return gym.spaces.MultiDiscrete(nvec, dtype=dtype, start=start)
    if spec.kind == "MultiBinary":
        shape = spec.shape if len(spec.shape) != 1 else spec.shape[0]
        return gym.spaces.MultiBinary(shape)
    raise ValueError(f"unknown space kind {spec.kind!r}")
