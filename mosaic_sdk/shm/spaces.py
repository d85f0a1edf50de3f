"""Gymnasium spaces in the transport: float32 rows in the hot regions, ``SpaceSpec`` on the wire.

Supported spaces (observation and action): ``Box`` (any shape and dtype; values travel as
float32, so float64 observations lose precision), ``Discrete`` (one float holding the value),
``MultiDiscrete`` and ``MultiBinary`` (one float per component). Others raise ``ValueError``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from mosaic_sdk.shm.commands import SpaceSpec

SUPPORTED = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)


def _shape(space: gym.Space[Any]) -> tuple[int, ...]:
    return tuple(space.shape) if space.shape is not None else ()


def check_supported(space: gym.Space[Any], role: str) -> None:
    """Raise a clear error for a space the transport cannot carry."""
    if not isinstance(space, SUPPORTED):
        raise ValueError(
            f"the shm transport carries Box, Discrete, MultiDiscrete and MultiBinary "
            f"{role} spaces, not {type(space).__name__}; flatten it first "
            "(gymnasium.wrappers.FlattenObservation) or use another vector env"
        )


def flat_size(space: gym.Space[Any]) -> int:
    """float32 values per env that ``space`` occupies in a hot region."""
    check_supported(space, "observation/action")
    if isinstance(space, gym.spaces.Discrete):
        return 1
    return int(np.prod(_shape(space), dtype=np.int64))


def to_spec(space: gym.Space[Any]) -> SpaceSpec:
    """Wire form of ``space``."""
    check_supported(space, "observation/action")
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


def encode_into(space: gym.Space[Any], value: Any, row: np.ndarray) -> None:
    """Write one env's ``value`` of ``space`` into its float32 ``row``."""
    if isinstance(space, gym.spaces.Discrete):
        row[0] = int(value)
    else:
        row[:] = np.asarray(value, dtype=np.float32).reshape(-1)


def decode_one(space: gym.Space[Any], row: np.ndarray) -> Any:
    """One env's value of ``space`` from its float32 ``row`` (a fresh object)."""
    if isinstance(space, gym.spaces.Discrete):
        return np.int64(round(float(row[0])))
    value = row.reshape(space.shape)
    if space.dtype == np.float32:
        return value.copy()
    if np.issubdtype(space.dtype, np.integer):
        value = np.rint(value)
    return value.astype(space.dtype)


def decode_batch(space: gym.Space[Any], rows: np.ndarray, copy: bool) -> np.ndarray:
    """A batch of ``space`` values from float32 ``rows`` (a view when possible and not ``copy``)."""
    n = rows.shape[0]
    if isinstance(space, gym.spaces.Discrete):
        return np.rint(rows[:, 0]).astype(space.dtype)
    value = rows.reshape((n, *_shape(space)))
    if space.dtype == np.float32:
        return value.copy() if copy else value
    if np.issubdtype(space.dtype, np.integer):
        value = np.rint(value)
    return value.astype(space.dtype)


def encode_batch(space: gym.Space[Any], values: Any, rows: np.ndarray) -> None:
    """Write a batch of ``space`` values into float32 ``rows``."""
    a = np.asarray(values)
    n = rows.shape[0]
    if a.size != rows.size:
        raise ValueError(
            f"actions of shape {a.shape} do not fit {n} envs of {space}: expected "
            f"{(n, *space.shape) if space.shape else (n,)}"
        )
    rows[...] = a.reshape(rows.shape)


def decode_rows(space: gym.Space[Any], rows: np.ndarray) -> list[Any]:
    """One value of ``space`` per float32 row (fresh objects, safe for envs to keep)."""
    if isinstance(space, gym.spaces.Discrete):
        return [int(x) for x in np.rint(rows[:, 0])]
    return list(decode_batch(space, rows, copy=True))


def encode_rows(space: gym.Space[Any], values: list[Any], rows: np.ndarray) -> None:
    """Write one value of ``space`` per row into float32 ``rows``."""
    if isinstance(space, gym.spaces.Discrete):
        rows[:, 0] = [int(v) for v in values]
    else:
        rows[...] = np.asarray(values, dtype=np.float32).reshape(rows.shape)
