"""The built-in ``script`` worker's contract: its config, its capabilities, and the versions a
run of it records (cheap to import: no gymnasium, no numpy; the runner reads it too)."""

from __future__ import annotations

import importlib.metadata
import platform
import sys
from typing import Any

from pydantic import Field, model_validator

from mosaic_sdk.contract import WorkerCapabilities, WorkerConfig

#: The worker's name (``mosaic run train.py`` records its runs under it).
WORKER_TYPE = "script"

#: What ``run_completed``, the run's log and ``mosaic run`` say when the script made no env.
NO_ENV_NOTICE = (
    "the script made no env through gymnasium.make, gymnasium.make_vec or a gymnasium vector "
    "env, so the run has no steps and no episodes (its series, if any, are stored)"
)

#: The packages whose versions a run records, when installed.
KEY_PACKAGES = (
    "gymnasium",
    "numpy",
    "torch",
    "stable-baselines3",
    "tensorboardX",
    "tensorboard",
    "mosaic-worker-sdk",
)

CAPABILITIES = WorkerCapabilities.model_validate(
    {
        "worker_type": WORKER_TYPE,
        "supported_paradigms": ("sequential",),
        "env_families": ("gymnasium",),
        "action_spaces": ("discrete", "continuous"),
        "observation_spaces": ("vector", "image"),
        # pause and resume inside env.step; checkpoint where the script registers a function
        # (mosaic_sdk.script.on_checkpoint), refused with the reason otherwise
        "supports_pause_resume": True,
        "supports_checkpointing": True,
        "supports_fastlane": True,
        "control_protocol": 1,
    }
)


class ScriptConfig(WorkerConfig):
    """One run of an unchanged Python script (``mosaic run path/to/train.py -- ARGS``)."""

    script: str | None = Field(
        None, description="the script's path, run as `python PATH ARGS` (or give module)"
    )
    module: str | None = Field(
        None, description="a module run as `python -m MODULE ARGS` (or give script)"
    )
    args: list[str] = Field(default_factory=list, description="the script's own arguments")
    cwd: str | None = Field(
        None, description="the working directory the script runs in (where mosaic run started)"
    )
    script_sha256: str | None = Field(
        None, description="the sha256 of the script's file when the run was launched"
    )
    environment: dict[str, str] = Field(
        default_factory=dict,
        description="Python and key package versions of the interpreter that runs the script",
    )
    fastlane: bool | None = Field(
        None,
        description="frames to FastLane: true for every env (asking for rgb_array), false for "
        "none; null: the envs the script makes with render_mode='rgb_array', or every env "
        "when the launcher switches FastLane on (MOSAIC_FASTLANE=1)",
    )
    telemetry_steps: bool = Field(True, description="write step lines (sampled)")
    telemetry_step_every: int = Field(
        20, ge=1, description="a step line every N steps of each episode (its last always)"
    )
    telemetry_step_rate: float | None = Field(
        None, gt=0, description="at most this many step lines per second over all envs"
    )
    scalar_series: bool = Field(
        True, description="every SummaryWriter scalar is also a series point at its step"
    )
    heartbeat_interval: float = Field(5.0, gt=0, description="seconds between heartbeats")
    stop_grace: float = Field(
        10.0,
        ge=0,
        description="after a stop (command or SIGTERM), seconds the script may take to end "
        "before the worker ends it (a script that ignores SIGTERM and steps no env)",
    )

    @model_validator(mode="after")
    def _one_target(self) -> ScriptConfig:
        if (self.script is None) == (self.module is None):
            raise ValueError("give exactly one of script (a file) and module (python -m)")
        return self

    def target_text(self) -> str:
        """``train.py ARGS`` or ``-m pkg.train ARGS``, as a person would type it."""
        head = self.script if self.script is not None else f"-m {self.module}"
        return " ".join([str(head), *self.args])


def versions() -> dict[str, str]:
    """``{"python": "3.11.9", "python_implementation": "CPython", NAME: VERSION...}`` for the
    :data:`KEY_PACKAGES` installed here (read from their metadata: nothing is imported)."""
    found = {
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "python_executable": sys.executable,
    }
    for name in KEY_PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def describe_script(config: Any) -> dict[str, Any]:
    """What ``run_started`` says of the script: path or module, hash, arguments, directory."""
    return {
        "path": config.script,
        "module": config.module,
        "sha256": config.script_sha256,
        "args": list(config.args),
        "cwd": config.cwd,
    }


__all__ = [
    "CAPABILITIES",
    "KEY_PACKAGES",
    "NO_ENV_NOTICE",
    "WORKER_TYPE",
    "ScriptConfig",
    "describe_script",
    "versions",
]
