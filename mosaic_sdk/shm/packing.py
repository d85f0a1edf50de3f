"""Gymnasium spaces in a transport row: each leaf in its own dtype, nothing rounded.

A ``RowCodec`` lays one env's value of a space out in a row of bytes. In a *fixed* space
(``Box``, ``Discrete``, ``MultiDiscrete``, ``MultiBinary`` and ``Tuple``/``Dict`` nests of them)
every leaf gets its own aligned byte range in the dtype gymnasium batches it in. Values of any
other space travel pickled through the side areas. Batched values have gymnasium's batched
structure (``batch_space``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

Path = tuple[Any, ...]


@dataclass(frozen=True)
class Leaf:
    """One fixed-size leaf of a space: where it sits in the row and in the value."""

    path: Path  # indices (Tuple) and keys (Dict) from the root value to this leaf
    dtype: np.dtype[Any]
    shape: tuple[int, ...]
    offset: int  # byte offset in the row

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


def _leaf_type(space: gym.Space[Any]) -> tuple[np.dtype[Any], tuple[int, ...]] | None:
    if isinstance(space, gym.spaces.Discrete):
        return np.dtype(space.dtype), ()
    if isinstance(space, gym.spaces.MultiBinary):
        return np.dtype(np.int8), tuple(space.shape)
    if isinstance(space, (gym.spaces.Box, gym.spaces.MultiDiscrete)):
        return np.dtype(space.dtype), tuple(space.shape)
    return None


def _collect(space: gym.Space[Any], path: Path, out: list[tuple[Path, Any, Any]]) -> bool:
    if isinstance(space, gym.spaces.Tuple):
        return all(_collect(s, (*path, i), out) for i, s in enumerate(space.spaces))
    if isinstance(space, gym.spaces.Dict):
        return all(_collect(s, (*path, k), out) for k, s in space.spaces.items())
    kind = _leaf_type(space)
    if kind is None:
        return False
    out.append((path, kind[0], kind[1]))
    return True


def _get(value: Any, path: Path) -> Any:
    for key in path:
        value = value[key]
    return value


class RowCodec:
    """How values of ``space`` sit in rows of bytes (see the module docstring)."""

    def __init__(self, space: gym.Space[Any]) -> None:
        self.space = space
        found: list[tuple[Path, Any, Any]] = []
        self.fixed = _collect(space, (), found)
        self.leaves: list[Leaf] = []
        pos = 0
        if self.fixed:
            for path, dtype, shape in found:
                align = max(1, dtype.itemsize)
                pos = (pos + align - 1) // align * align
                leaf = Leaf(path, dtype, shape, pos)
                self.leaves.append(leaf)
                pos += leaf.nbytes
        self.row_bytes = (pos + 7) // 8 * 8  # rows stay 8-byte aligned
        self.words = max(1, self.row_bytes // 4)

    # -- views ----------------------------------------------------------------------------
    def leaf_views(self, rows: np.ndarray) -> list[np.ndarray]:
        """One ``(n, *shape)`` array per leaf, viewing ``rows`` (uint8 or float32 ``(n, w)``)."""
        raw = rows.view(np.uint8)
        return [
            raw[:, lf.offset : lf.offset + lf.nbytes].view(lf.dtype).reshape((len(raw), *lf.shape))
            for lf in self.leaves
        ]

    def _build(self, space: gym.Space[Any], path: Path, by_path: dict[Path, Any]) -> Any:
        if isinstance(space, gym.spaces.Tuple):
            return tuple(self._build(s, (*path, i), by_path) for i, s in enumerate(space.spaces))
        if isinstance(space, gym.spaces.Dict):
            return {k: self._build(s, (*path, k), by_path) for k, s in space.spaces.items()}
        return by_path[path]

    def batch(self, views: Sequence[np.ndarray], copy: bool) -> Any:
        """The batched value held by ``views`` (copies, or the views themselves)."""
        arrays = [np.array(v) if copy else v for v in views]
        if len(self.leaves) == 1 and not self.leaves[0].path:
            return arrays[0]
        by_path = {lf.path: a for lf, a in zip(self.leaves, arrays, strict=True)}
        return self._build(self.space, (), by_path)

    # -- engine side: per-env values ------------------------------------------------------
    def write_values(self, views: Sequence[np.ndarray], values: Sequence[Any], begin: int) -> None:
        """Write one value per env into envs ``begin, begin + 1, ...`` of ``views``."""
        end = begin + len(values)
        for leaf, view in zip(self.leaves, views, strict=True):
            items = [_get(v, leaf.path) for v in values] if leaf.path else list(values)
            view[begin:end] = np.asarray(items).reshape(view[begin:end].shape)

    def read_values(self, views: Sequence[np.ndarray], begin: int, end: int) -> list[Any]:
        """One value per env ``begin..end-1`` (fresh objects, safe for envs to keep)."""
        columns = [np.array(v[begin:end]) for v in views]
        if len(self.leaves) == 1 and not self.leaves[0].path:
            return list(columns[0])
        out = []
        for k in range(end - begin):
            by_path = {lf.path: col[k] for lf, col in zip(self.leaves, columns, strict=True)}
            out.append(self._build(self.space, (), by_path))
        return out

    # -- client side: a whole batch -------------------------------------------------------
    def write_batch(self, views: Sequence[np.ndarray], batch: Any) -> None:
        """Write a batched value into ``views``; ``TypeError`` for a scalar, ``ValueError`` for
        a wrong number of values, as gymnasium's ``iterate`` raises."""
        for leaf, view in zip(self.leaves, views, strict=True):
            try:
                part = _get(batch, leaf.path)
            except (KeyError, IndexError, TypeError) as exc:
                raise ValueError(
                    f"actions {batch!r} do not have the structure of {self.space} batches: "
                    f"no element at {leaf.path}"
                ) from exc
            array = np.asarray(part)
            if array.ndim == 0:
                raise TypeError(
                    f"expected a batch of {view.shape[0]} actions for {self.space}, got the "
                    f"scalar {part!r}; pass one action per env"
                )
            if array.shape[0] != view.shape[0]:
                raise ValueError(
                    f"got {array.shape[0]} actions for {view.shape[0]} envs "
                    f"(actions of shape {array.shape}); pass one action per env"
                )
            try:
                view[...] = array.reshape(view.shape)
            except ValueError as exc:
                raise ValueError(
                    f"actions of shape {array.shape} do not fit {view.shape[0]} envs of "
                    f"{self.space}: expected {view.shape}"
                ) from exc
