"""The command line an algorithm script is run with, built from a validated config.

The worker's typed fields become the script's standard arguments (``--env-id``,
``--total-timesteps``, ``--seed``, ``--num-envs``, ``--cuda``, ``--track``, and for our PPO
``--tensorboard-dir`` / ``--checkpoint-dir`` / ``--resume-from``); ``algo_params`` follow,
each as ``--kebab-case=value`` in the syntax the script's argument parser expects.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mosaic_worker_cleanrl.arguments import ArgumentSpec, ScriptArguments, normalise_name, to_flags
from mosaic_worker_cleanrl.config import CleanRLConfig
from mosaic_worker_cleanrl.platform_config import WANDB_ARGUMENTS
from mosaic_worker_cleanrl.registry import AlgorithmSpec


def _flags(script: ScriptArguments, name: str, value: Any) -> list[str]:
    spec = script.arguments.get(name)
    if spec is None:
        return []
    return to_flags(spec, value)


def build_argv(
    config: CleanRLConfig,
    algo: AlgorithmSpec,
    run_dir: Path,
    *,
    env_id: str | None = None,
) -> list[str]:
    """Arguments (without the program name) for ``algo``'s script."""
    script = algo.arguments()
    argv: list[str] = []
    argv += _flags(script, "env_id", env_id or config.env_id)
    argv += _flags(script, "total_timesteps", config.total_timesteps)
    if config.seed is not None:
        argv += _flags(script, "seed", config.seed)
    if config.num_envs is not None:
        argv += _flags(script, "num_envs", config.num_envs)
    argv += _flags(script, "cuda", config.cuda)
    argv += _flags(script, "track", config.track_wandb)
    if config.track_wandb:
        for name in WANDB_ARGUMENTS:
            if getattr(config, name) is not None:
                argv += _flags(script, name, getattr(config, name))
    argv += _flags(script, "tensorboard_dir", str(run_dir / config.tensorboard_dir))
    argv += _flags(script, "checkpoint_dir", str(run_dir / "checkpoints"))
    if config.mode == "resume_training":
        argv += _flags(script, "resume_from", str(Path(config.policy_path or "").resolve()))
    for key, value in config.algo_params.items():
        spec: ArgumentSpec = script.arguments[normalise_name(key)]
        argv += to_flags(spec, value)
    return argv


__all__ = ["build_argv"]
