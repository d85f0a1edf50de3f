"""Gymnasium's vector-env rules, applied by ``ShmVectorEnv`` before anything reaches the envs.

One place for what gymnasium's own vector envs refuse (and with which error type): the
observation mode, space consistency between sub-envs, reset seeds and ``reset_mask``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.spaces import Space
from gymnasium.spaces.utils import is_space_dtype_shape_equiv
from gymnasium.vector.utils import batch_differing_spaces, batch_space

NAME = "ShmVectorEnv"


def check_observation_mode(observation_mode: Any) -> None:
    """``ValueError`` / ``TypeError`` for a mode gymnasium does not know."""
    if isinstance(observation_mode, tuple) and len(observation_mode) == 2:
        if not all(isinstance(s, Space) for s in observation_mode):
            raise TypeError(
                "Expected both elements of observation_mode to be Spaces, got "
                f"{type(observation_mode[0])} and {type(observation_mode[1])}"
            )
        return
    if observation_mode not in ("same", "different"):
        raise ValueError(
            "Invalid `observation_mode`, expected: 'same' or 'different' or tuple of single and "
            f"batch observation space, actual got {observation_mode}"
        )


def observation_spaces(
    observation_mode: Any, env_spaces: Sequence[Space[Any]]
) -> tuple[Space[Any], Space[Any]]:
    """``(single_observation_space, observation_space)`` for the mode, as gymnasium builds them."""
    if isinstance(observation_mode, tuple):
        batched, single = observation_mode
        return single, batched
    single = env_spaces[0]
    if observation_mode == "same":
        return single, batch_space(single, len(env_spaces))
    return single, batch_differing_spaces(list(env_spaces))


def check_consistency(
    observation_mode: Any,
    single_obs: Space[Any],
    single_act: Space[Any],
    obs_spaces: Sequence[Space[Any]],
    act_spaces: Sequence[Space[Any]],
) -> None:
    """``RuntimeError`` when sub-envs' spaces do not fit together (gymnasium's rule)."""
    for obs_space, act_space in zip(obs_spaces, act_spaces, strict=True):
        if observation_mode == "same":
            if obs_space != single_obs:
                raise RuntimeError(
                    f"{NAME}(..., observation_mode='same') however the sub-environments "
                    f"observation spaces are not equivalent. single_observation_space="
                    f"{single_obs}, sub-environment observation_space={obs_space}. If this is "
                    "intentional, use `observation_mode='different'` instead."
                )
        elif not is_space_dtype_shape_equiv(obs_space, single_obs):
            raise RuntimeError(
                f"{NAME}(..., observation_mode='different' or custom space) however the "
                "sub-environments observation spaces do not share a common shape and dtype, "
                f"single_observation_space={single_obs}, sub-environment observation "
                f"space={obs_space}"
            )
        if act_space != single_act:
            raise RuntimeError(
                "Sub-environment action space doesn't make the `single_action_space`, "
                f"action_space={act_space}, single_action_space={single_act}"
            )


def reset_seeds(seed: int | Sequence[int | None] | None, num_envs: int) -> list[int | None]:
    """One seed per env: None, ``seed + i``, or the list given (its length checked)."""
    if seed is None:
        return [None] * num_envs
    if isinstance(seed, (int, np.integer)):
        return [int(seed) + i for i in range(num_envs)]
    seeds = list(seed)
    if len(seeds) != num_envs:
        raise ValueError(
            f"If seeds are passed as a list the length must match num_envs={num_envs} but got "
            f"length={len(seeds)}."
        )
    return [None if s is None else int(s) for s in seeds]


def reset_mask(options: dict[str, Any], num_envs: int) -> np.ndarray:
    """Pop and check ``options["reset_mask"]`` (gymnasium's error types and messages)."""
    mask = options.pop("reset_mask")
    if not isinstance(mask, np.ndarray):
        raise TypeError(f"`options['reset_mask']` must be a numpy array, got {type(mask)}")
    if mask.shape != (num_envs,):
        raise ValueError(
            f"`options['reset_mask']` must have shape `({num_envs},)`, got {mask.shape}"
        )
    if mask.dtype != np.bool_:
        raise TypeError(f"`options['reset_mask']` must have `dtype=np.bool_`, got {mask.dtype}")
    if not np.any(mask):
        raise ValueError(
            "`options['reset_mask']` must contain a boolean array with at least one True value, "
            f"got reset_mask={mask}"
        )
    return mask


def set_attr_values(values: Any, num_envs: int) -> list[Any]:
    """One value per env: a list/tuple of ``num_envs`` values, or one value for all."""
    if not isinstance(values, (list, tuple)):
        return [values] * num_envs
    if len(values) != num_envs:
        raise ValueError(
            "Values must be a list or tuple with length equal to the number of environments. "
            f"Got `{len(values)}` values for {num_envs} environments."
        )
    return list(values)


# -- the asynchronous form (send / recv) -------------------------------------------------------
class AsyncUsageError(RuntimeError):
    """``send``/``recv``/``step`` called out of order (see the message for the fix)."""


def batch_size(value: int | None, num_envs: int) -> int:
    """``batch_size``: ``num_envs`` when None, else an int in ``1..num_envs``."""
    if value is None:
        return num_envs
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"batch_size must be an int, got {value!r}")
    if not 1 <= value <= num_envs:
        raise ValueError(
            f"batch_size={value} must be in 1..num_envs={num_envs}: recv() returns at most "
            "every env"
        )
    return int(value)


def check_batch_fits(batch: int, num_envs: int, num_workers: int) -> None:
    """``ValueError`` unless host processes can serve batches of ``batch`` envs."""
    if batch == num_envs:
        return
    if num_envs % num_workers:
        raise ValueError(
            f"batch_size={batch} < num_envs={num_envs} needs slices of equal size, but "
            f"{num_envs} envs do not split evenly over num_workers={num_workers}; pick a "
            "num_workers that divides num_envs"
        )
    per = num_envs // num_workers
    if batch % per:
        raise ValueError(
            f"batch_size={batch} is not a multiple of the {per} envs each host process steps "
            f"together (num_envs={num_envs} / num_workers={num_workers}); pick such a "
            "batch_size or more workers"
        )


def num_workers(value: int | None, num_envs: int, batch: int, most: int = 16) -> int:
    """Host processes for ``batch``: the given number (checked), or 1 in lock-step, or the
    most (up to ``most``) whose slices divide both ``num_envs`` and ``batch``."""
    if value is not None:
        check_batch_fits(batch, num_envs, value)
        return value
    if batch == num_envs:
        return 1
    for workers in range(min(most, num_envs), 1, -1):
        if num_envs % workers == 0 and batch % (num_envs // workers) == 0:
            return workers
    raise ValueError(
        f"batch_size={batch} with num_envs={num_envs} would need more than {most} host "
        f"processes (each steps num_envs/num_workers envs together); pick a batch_size that "
        f"is a multiple of num_envs/{most}, or mode='inline'"
    )


def env_ids(value: Any, num_envs: int) -> np.ndarray:
    """``send``'s env ids as an int64 array: in range, each once, at least one."""
    ids = np.asarray(value).reshape(-1)
    if ids.size == 0:
        raise ValueError("send(): env_ids is empty; pass the ids of the envs to step")
    if ids.dtype.kind not in "iu":
        raise TypeError(f"send(): env_ids must be integers, got {ids.dtype} ({value!r})")
    if ids.min() < 0 or ids.max() >= num_envs:
        bad = [int(i) for i in ids if not 0 <= i < num_envs]
        raise ValueError(f"send(): env ids {bad} outside 0..{num_envs - 1}")
    if np.bincount(ids, minlength=num_envs).max() > 1:
        raise ValueError(f"send(): env ids {ids.tolist()} repeat an id; pass each env once")
    return ids.astype(np.int64, copy=False)


def select_infos(infos: dict[str, Any], ids: Sequence[int] | np.ndarray) -> dict[str, Any]:
    """Gymnasium-style vector infos (one row per env) cut down to the rows of ``ids``."""
    out: dict[str, Any] = {}
    for key, value in infos.items():
        if isinstance(value, dict):
            out[key] = select_infos(value, ids)
        elif isinstance(value, np.ndarray):
            out[key] = value[np.asarray(ids)]
        else:
            out[key] = value
    return out
