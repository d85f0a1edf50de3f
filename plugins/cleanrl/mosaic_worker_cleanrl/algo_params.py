"""The ``algo_params`` names that are not plain script arguments: those the config's own fields
set, those never forwarded, those only some script versions have, and the form's 0 placeholder.

Both the config's validation (:mod:`mosaic_worker_cleanrl.config`) and what a run uses of the
platform's config (:mod:`mosaic_worker_cleanrl.platform_config`) read these.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mosaic_worker_cleanrl.arguments import normalise_name

#: Script arguments the worker sets from its own typed fields (not through algo_params).
RESERVED_ARGUMENTS: dict[str, str] = {
    "env_id": "env_id",
    "total_timesteps": "total_timesteps",
    "seed": "seed",
    "num_envs": "num_envs",
    "cuda": "cuda",
    "track": "track_wandb",
    "tensorboard_dir": "tensorboard_dir",
    "checkpoint_dir": "(the run directory's checkpoints/)",
    "resume_from": "policy_path with mode resume_training",
}

#: ``algo_params`` names that are the config's own fields (name -> field).
FOLDED_ARGUMENTS: dict[str, str] = {
    "env_id": "env_id",
    "num_envs": "num_envs",
    "seed": "seed",
    "total_timesteps": "total_timesteps",
    "cuda": "cuda",
    "track": "track_wandb",
}

#: Folded names whose 0 is the form's empty field, not a value.
COUNT_ARGUMENTS = ("num_envs", "total_timesteps")

NO_UPLOAD = "no network upload from this worker: saved models stay in the run directory"

#: ``algo_params`` accepted for every algorithm and never forwarded: (kind, reason).
NOT_FORWARDED: dict[str, tuple[str, str]] = {
    "upload_model": ("bool", NO_UPLOAD),
    "hf_entity": ("str", NO_UPLOAD),
    "total_frames": ("int", "the run's length is the config's total_timesteps"),
    "procedural_generation": (
        "bool",
        "fixed levels are not supported: envs reset with the seeds the script gives them",
    ),
}

#: CleanRL arguments that some versions of a script have and others lack (name -> kind):
#: accepted for every algorithm, forwarded when the installed script declares them.
VERSION_DEPENDENT: dict[str, str] = {
    "save_model": "bool",
    "capture_video": "bool",
    "torch_deterministic": "bool",
    "num_envs": "int",
    "local_num_envs": "int",
    "local_batch_size": "int",
    "local_minibatch_size": "int",
    "world_size": "int",
    "exp_name": "str",
    "wandb_project_name": "str",
    "wandb_entity": "str",
}


def fold_algo_params(data: dict[str, Any]) -> dict[str, Any]:
    """Move ``algo_params`` entries that name one of the config's own fields into that field
    (the platform's form repeats ``env_id`` and ``num_envs`` there). Raises ``ValueError`` when
    such an entry contradicts the field."""
    params = data.get("algo_params")
    if not isinstance(params, Mapping):
        return data
    kept: dict[str, Any] = {}
    problems = []
    for key, value in params.items():
        name = normalise_name(key) if isinstance(key, str) else key
        target = FOLDED_ARGUMENTS.get(name)
        if target is None or (target in COUNT_ARGUMENTS and is_placeholder(value)):
            # 0 for num_envs: the form's empty number field (resolve reports it)
            kept[key] = value
            continue
        if target in data and data[target] != value:
            problems.append(
                f"algo_params.{key} is {value!r} but {target} is {data[target]!r}; "
                f"they name the same setting: remove one or make them equal"
            )
            continue
        data[target] = value
    if problems:
        raise ValueError("; ".join(problems))
    data["algo_params"] = kept
    return data


def is_placeholder(value: Any) -> bool:
    """The platform's form writes 0 for a number field whose default is empty."""
    return value == 0 and isinstance(value, (int, float)) and not isinstance(value, bool)


PLACEHOLDER = "0 read as unset: the platform's form writes 0 for an empty number field"


def known_kind(name: str) -> str | None:
    """The kind of an ``algo_params`` name accepted for every algorithm (None: not one)."""
    if name in NOT_FORWARDED:
        return NOT_FORWARDED[name][0]
    return VERSION_DEPENDENT.get(name)


__all__ = [
    "COUNT_ARGUMENTS",
    "FOLDED_ARGUMENTS",
    "NOT_FORWARDED",
    "PLACEHOLDER",
    "RESERVED_ARGUMENTS",
    "VERSION_DEPENDENT",
    "fold_algo_params",
    "is_placeholder",
    "known_kind",
]
