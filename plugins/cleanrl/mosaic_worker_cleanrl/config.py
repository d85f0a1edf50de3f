"""The CleanRL worker's configuration: the SDK's ``WorkerConfig`` plus typed fields.

Every option the platform's CleanRL worker kept in a free-form ``extras`` dict is a typed
field here, and unknown keys are rejected by the base class. Three shapes load:

- flat: ``{"run_id": "r1", "algo": "dqn", "env_id": "CartPole-v1", "mode": "train", ...}``;
- flat with the platform's ``extras`` dict: ``{"algo": ..., "extras": {"algo_params": ...}}``
  (its keys are merged into the top level; each must be a known field);
- nested: a job descriptor with the config under ``metadata.worker.config``.

Everything the platform's CleanRL form puts there is accepted (its W&B fields, ``notes``,
``agent_id``, ``algo_params`` that repeat ``env_id`` / ``num_envs``, arguments of a newer
CleanRL): :mod:`mosaic_worker_cleanrl.platform_config` decides what of it a run uses. Other
``algo_params`` are checked against the algorithm's own argument definitions (read from its
source, see :mod:`mosaic_worker_cleanrl.arguments`): an unknown name or a value of the wrong
type is an error naming the argument, never a flag passed on blindly.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, PrivateAttr, SecretStr, model_validator

from mosaic_sdk.contract import WorkerConfig
from mosaic_worker_cleanrl.algo_params import (
    FOLDED_ARGUMENTS,
    NOT_FORWARDED,
    RESERVED_ARGUMENTS,
    VERSION_DEPENDENT,
    fold_algo_params,
    is_placeholder,
    known_kind,
)
from mosaic_worker_cleanrl.arguments import ArgumentSpec, check_value, normalise_name
from mosaic_worker_cleanrl.curriculum_presets import preset_schedule
from mosaic_worker_cleanrl.curriculum_schedule import CurriculumStage
from mosaic_worker_cleanrl.registry import AlgorithmNotFoundError, resolve

Mode = Literal["train", "policy_eval", "resume_training", "curriculum", "interactive"]

_ALIASES = {"use_cuda": "cuda"}


class CleanRLConfig(WorkerConfig):
    """One run of a CleanRL algorithm (see the module docstring for the accepted shapes)."""

    algo: str = Field("ppo", description="Algorithm name (see `mosaic workers show cleanrl`)")
    env_id: str = Field("CartPole-v1", min_length=1, description="Gymnasium env id")
    total_timesteps: int = Field(
        100_000, ge=1, description="Env steps to train (in resume_training: steps of this run)"
    )
    num_envs: int | None = Field(
        None, ge=1, description="Parallel envs (None: the algorithm's default)"
    )
    worker_id: str | None = Field(
        None,
        description="The platform's worker id: stamped on every telemetry line when the "
        "worker CLI gets no --worker-id (which wins)",
    )

    mode: Mode = Field(
        "train",
        description="train, policy_eval, resume_training, curriculum or interactive (step "
        "policy_path's checkpoint on command: the control protocol, `mosaic play cleanrl`)",
    )
    cuda: bool = Field(False, description="Use CUDA when available")
    tensorboard_dir: str = Field(
        "tensorboard",
        description="TensorBoard directory, relative to the run directory (upstream scripts' "
        "runs/<run_name> lands in <tensorboard_dir>/<run_name>)",
    )
    track_tensorboard: bool | None = Field(
        None,
        description="Write TensorBoard event files (None: unless TRACK_TENSORBOARD=0); the "
        "scripts' scalars are series either way",
    )
    scalar_series: bool = Field(
        True,
        description="Report every SummaryWriter.add_scalar(s) of the script as a series "
        "point (a metrics event at its global_step)",
    )
    track_wandb: bool = Field(False, description="Log to Weights & Biases (needs wandb)")
    wandb_project_name: str | None = Field(None, description="W&B project (with track_wandb)")
    wandb_entity: str | None = Field(None, description="W&B entity (with track_wandb)")
    wandb_run_name: str | None = Field(
        None, description="Accepted from the platform; CleanRL scripts name their W&B run"
    )
    wandb_api_key: SecretStr | None = Field(
        None, description="W&B API key, given to wandb as WANDB_API_KEY (never written out)"
    )
    wandb_use_vpn_proxy: bool = Field(False, description="Reach W&B through the proxies below")
    wandb_http_proxy: str | None = Field(None, description="HTTP proxy for W&B")
    wandb_https_proxy: str | None = Field(None, description="HTTPS proxy for W&B")
    agent_id: str | None = Field(
        None, description="The platform's agent id: run metadata (CLEANRL_AGENT_ID when unset)"
    )
    notes: str | None = Field(None, description="Free text about the run: run metadata")
    algo_params: dict[str, Any] = Field(
        default_factory=dict,
        description="Algorithm arguments by name (snake_case or kebab-case), checked before "
        "launch and passed as --kebab-case=value",
    )
    cleanrl_path: str | None = Field(
        None, description="A CleanRL checkout to take upstream scripts from instead of cleanrl"
    )
    gym_compat: Literal["auto", "on", "off"] = Field(
        "auto",
        description="gymnasium 0.29 compatibility layer: auto = on for upstream scripts only",
    )

    curriculum_schedule: list[CurriculumStage] | None = Field(
        None,
        description="Stages of a curriculum, or a preset's name (babyai_goto, babyai_doorkey); "
        "sets mode to curriculum",
    )

    fastlane: bool | None = Field(
        None, description="Publish frames (None: follow MOSAIC_FASTLANE / *_FASTLANE_ONLY)"
    )
    fastlane_only: bool = Field(False, description="Frames only: no step lines on stdout")
    fastlane_slot: int = Field(0, ge=0, description="Which env of a vector env is shown")
    fastlane_video_mode: Literal["single", "grid", "off"] = Field("single")
    fastlane_grid_limit: int = Field(4, ge=1, description="Envs tiled in grid mode")
    fastlane_interval_ms: float | None = Field(
        None, ge=0, description="Min ms between frames (None: CLEANRL_FASTLANE_INTERVAL_MS)"
    )
    fastlane_max_dim: int | None = Field(
        None, ge=0, description="Downscale frames larger than this (None: CLEANRL_FASTLANE_MAX_DIM)"
    )

    telemetry_steps: bool = Field(True, description="Write step lines (episodes always)")
    telemetry_step_every: int = Field(
        20, ge=1, description="Write every Nth step of each episode (its last step always)"
    )
    telemetry_step_rate: float | None = Field(
        None, gt=0, description="Also cap step lines per second (not deterministic; None: no cap)"
    )
    heartbeat_interval: float | None = Field(
        None, gt=0, description="Seconds between heartbeats (None: MOSAIC_HEARTBEAT_INTERVAL/30)"
    )

    policy_path: str | None = Field(
        None, description="Checkpoint to evaluate (policy_eval) or continue (resume_training)"
    )
    eval_episodes: int = Field(10, ge=1, description="Episodes of policy_eval")
    eval_gamma: float = Field(0.99, ge=0, le=1, description="Discount for policy_eval returns")
    eval_capture_video: bool = Field(False, description="Record policy_eval episodes (moviepy)")
    eval_deterministic: bool = Field(True, description="Greedy actions in policy_eval")
    eval_batch_size: int = Field(
        5, ge=1, description="policy_eval episodes per batch (a policy_eval_batch event each)"
    )

    #: The payload as received by :meth:`from_dict` (see :attr:`raw`).
    _raw: dict[str, Any] = PrivateAttr(default_factory=dict)

    @property
    def raw(self) -> dict[str, Any]:
        """The full payload this config was loaded from, as received (a job descriptor stays
        whole, ``extras`` stay nested): for debugging and for platform fields the worker does
        not model. Not part of the config's value: ``to_dict``, the schema and ``==`` leave
        it out, and a payload cannot set it."""
        return self._raw

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CleanRLConfig:
        config = super().from_dict(data)
        assert isinstance(config, CleanRLConfig)
        config._raw = copy.deepcopy(dict(data))
        return config

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CleanRLConfig):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]

    @model_validator(mode="before")
    @classmethod
    def _merge_platform_extras(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        if "raw" in data or "raw" in (data.get("extras") or {}):
            raise ValueError(
                "'raw' is not a config key: the worker keeps the payload it received in "
                "CleanRLConfig.raw itself; remove the key"
            )
        extras = data.pop("extras", None)
        if extras is not None:
            if not isinstance(extras, Mapping):
                raise ValueError("'extras' must be an object of worker options")
            for key, value in extras.items():
                if key in data and data[key] != value:
                    raise ValueError(f"{key!r} is given both at the top level and in extras")
                data[key] = value
        for alias, name in _ALIASES.items():
            if alias in data:
                value = data.pop(alias)
                data.setdefault(name, value)
        data = fold_algo_params(data)
        if isinstance(data.get("curriculum_schedule"), str):
            data["curriculum_schedule"] = preset_schedule(data["curriculum_schedule"])
        if data.get("curriculum_schedule") and data.get("mode", "train") == "train":
            data["mode"] = "curriculum"
        return data

    @model_validator(mode="after")
    def _check_consistency(self) -> CleanRLConfig:
        if self.mode == "curriculum" and not self.curriculum_schedule:
            raise ValueError("mode 'curriculum' needs a non-empty curriculum_schedule")
        if self.mode in ("policy_eval", "resume_training", "interactive") and not self.policy_path:
            raise ValueError(f"mode {self.mode!r} needs policy_path (a checkpoint file)")
        if self.mode == "resume_training" and self.algo != "ppo":
            raise ValueError(
                "resume_training continues checkpoints of this worker's own PPO; set algo 'ppo'"
            )
        if self.mode == "policy_eval":
            return self  # evaluation runs no algorithm script
        try:
            spec = resolve(self.algo, self.cleanrl_path)
        except AlgorithmNotFoundError as exc:
            raise ValueError(str(exc)) from None
        check_algo_params(self, spec.arguments())
        return self


def check_algo_params(config: CleanRLConfig, script: Any) -> None:
    """Raise ``ValueError`` naming every bad ``algo_params`` entry (unknown name, bad type);
    the names the algorithm accepts are listed once, after all the problems."""
    problems = []
    unknown = []
    seen: set[str] = set()
    allowed = [n for n in script.arguments if n not in RESERVED_ARGUMENTS]
    for key, value in config.algo_params.items():
        name = normalise_name(key)
        if name in seen:
            problems.append(f"algo_params sets {name!r} twice")
        seen.add(name)
        if name in FOLDED_ARGUMENTS and is_placeholder(value):  # the form's empty field
            continue
        if name in RESERVED_ARGUMENTS:
            problems.append(
                f"algo_params.{key} is set by the worker; use the config field "
                f"{RESERVED_ARGUMENTS[name]!r} instead"
            )
            continue
        spec = script.arguments.get(name)
        kind = known_kind(name)
        if spec is None and kind is not None:  # accepted for every algorithm
            spec = ArgumentSpec(name, kind)
        if spec is None and script.style == "unknown":
            problems.append(
                f"algo_params.{key}: cannot read the arguments of {config.algo!r}, so nothing "
                "can be forwarded safely"
            )
            continue
        if spec is None:
            close = difflib.get_close_matches(name, allowed, n=3)
            unknown.append(f"{key!r}" + (f" (did you mean {', '.join(close)}?)" if close else ""))
            continue
        why = check_value(spec, value)
        if why:
            problems.append(f"algo_params.{key}: {why}")
    if unknown:
        anywhere = sorted({*NOT_FORWARDED, *VERSION_DEPENDENT} - set(allowed))
        problems.append(
            f"algo_params: {config.algo} has no argument {', '.join(unknown)}; "
            f"it accepts {', '.join(sorted(allowed))} (and, as for every algorithm, "
            f"{', '.join(anywhere)})"
        )
    if problems:
        raise ValueError("; ".join(problems))


__all__ = ["RESERVED_ARGUMENTS", "CleanRLConfig", "Mode", "check_algo_params"]
