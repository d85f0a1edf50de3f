"""A sweep's search space: which distributions a config key may take (checked, every problem
one line), and the parameter sets the ``local`` engine draws from it."""

from __future__ import annotations

import itertools
import math
import random
from typing import Any

DISTRIBUTIONS = ("grid", "choice", "uniform", "loguniform")

#: A checked space: config key -> {distribution: values}.
Space = dict[str, dict[str, list[Any]]]


def is_number(value: Any) -> bool:
    """A finite int or float (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def parse_space(errors: list[str], raw: Any) -> Space:
    """The valid part of ``raw``; a line in ``errors`` for each key that is not."""
    if not isinstance(raw, dict):
        errors.append(f"space: give an object of key -> distribution (got {raw!r})")
        return {}
    space: Space = {}
    for key, dist in raw.items():
        where = f"space.{key}"
        if key in ("seed", "run_id"):
            errors.append(f"{where}: {key} is set by the sweep (use seeds = [...] for seeds)")
            continue
        if not isinstance(dist, dict) or len(dist) != 1 or next(iter(dist)) not in DISTRIBUTIONS:
            errors.append(
                f"{where}: give one of {', '.join(DISTRIBUTIONS)}, e.g. "
                f'{{"grid": [1, 2]}} (got {dist!r})'
            )
            continue
        kind, values = next(iter(dist.items()))
        if not isinstance(values, list) or not values:
            errors.append(f"{where}.{kind}: give a non-empty list (got {values!r})")
            continue
        if kind in ("uniform", "loguniform"):
            if len(values) != 2 or not all(is_number(v) for v in values) or values[0] >= values[1]:
                errors.append(
                    f"{where}.{kind}: give [low, high] with finite numbers low < high "
                    f"(got {values!r})"
                )
                continue
            if kind == "loguniform" and values[0] <= 0:
                errors.append(f"{where}.loguniform: low must be > 0 (got {values[0]!r})")
                continue
        space[key] = {kind: values}
    return space


def _draw(rng: random.Random, kind: str, values: list[Any]) -> Any:
    if kind == "choice":
        return values[rng.randrange(len(values))]
    low, high = float(values[0]), float(values[1])
    if kind == "uniform":
        return rng.uniform(low, high)
    return math.exp(rng.uniform(math.log(low), math.log(high)))


def space_points(space: Space, samples: int, sample_seed: int) -> list[dict[str, Any]]:
    """Every parameter set of a checked space, in a fixed order: the cartesian product of the
    grid keys, and at each grid point ``samples`` draws of the other keys (one set when there
    are none) with ``random.Random(sample_seed)``."""
    grid_keys = [k for k, d in space.items() if "grid" in d]
    random_keys = [k for k in space if k not in grid_keys]
    rng = random.Random(sample_seed)
    points: list[dict[str, Any]] = []
    for point in itertools.product(*(space[k]["grid"] for k in grid_keys)):
        for _ in range(samples if random_keys else 1):
            params = dict(zip(grid_keys, point, strict=True))
            for key in random_keys:
                kind, values = next(iter(space[key].items()))
                params[key] = _draw(rng, kind, values)
            points.append(params)
    return points
