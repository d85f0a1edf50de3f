"""``python -m mosaic_worker_cleanrl --config PATH [--dry-run] [--worker-id ID] [-v]``.

The CLI contract (config loading and errors, stdout for telemetry only, signals, exit codes)
is the SDK's ``worker_main``; the worker adds its run function, a dry-run check and the log
file that receives the algorithm's own prints (``algorithm.log`` in the run directory).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

import gymnasium

from mosaic_sdk.contract import ConfigError, WorkerConfig, read_config_json, unwrap_job_descriptor
from mosaic_sdk.worker_cli import worker_main
from mosaic_worker_cleanrl.availability import check
from mosaic_worker_cleanrl.config import CleanRLConfig
from mosaic_worker_cleanrl.curriculum_env import check_stage_spaces
from mosaic_worker_cleanrl.env_families import missing_family_package, register_env_families
from mosaic_worker_cleanrl.evaluation import eval_env_id, make_eval_env
from mosaic_worker_cleanrl.gym_compat import register_ale_envs
from mosaic_worker_cleanrl.interactive import interactive_session
from mosaic_worker_cleanrl.launch_args import build_argv
from mosaic_worker_cleanrl.platform_config import resolve_run
from mosaic_worker_cleanrl.plugin import mosaic_worker_describe
from mosaic_worker_cleanrl.registry import default_env, resolve
from mosaic_worker_cleanrl.runtime import LOG_NAME, run
from mosaic_worker_cleanrl.upstream_video import VIDEO_INSTALL, video_available


def check_config(config: WorkerConfig) -> str:
    """Everything that can be checked without training; raises ValueError with the reason."""
    assert isinstance(config, CleanRLConfig)
    register_ale_envs()
    register_env_families()
    env_ids = [s.env_id for s in config.curriculum_schedule or []] or [config.env_id]
    for env_id in env_ids:
        package = missing_family_package(env_id)
        if package is not None:
            raise ValueError(
                f"env_id {env_id!r} needs the {package} package: "
                "pip install 'mosaic-worker-cleanrl[minigrid]'"
            )
    if config.mode in ("policy_eval", "resume_training", "interactive"):
        path = Path(config.policy_path or "")
        if not path.is_file():
            raise ValueError(f"policy_path {str(path)!r} does not exist")
        _check_policy(config, path)
    if config.eval_capture_video and not video_available():
        raise ValueError(f"eval_capture_video needs moviepy: {VIDEO_INSTALL}")
    if config.mode == "curriculum":
        check_stage_spaces(list(config.curriculum_schedule or []), gymnasium.make)
        target = f"a curriculum of {len(config.curriculum_schedule or [])} stages"
    else:
        try:
            gymnasium.spec(config.env_id)
        except gymnasium.error.Error as exc:
            raise ValueError(f"env_id {config.env_id!r} is not registered ({exc})") from None
        target = config.env_id
    if config.mode == "interactive":
        return f"play {config.policy_path} on {target} step by step (control protocol)"
    if config.mode == "policy_eval":
        return f"evaluate {config.policy_path} for {config.eval_episodes} episodes on {target}"

    resolution = resolve_run(config, os.environ)
    config = resolution.config
    algo = resolve(config.algo, config.cleanrl_path)
    compat = config.gym_compat if algo.upstream else "off" if config.gym_compat != "on" else "on"
    found = check(algo.path, default_env(algo), gym_compat=compat)
    if not found.runs:
        raise ValueError(f"algo {config.algo!r} does not run here: {found.why_not}")

    argv = build_argv(config, algo, Path("<run_dir>"))
    ignored = f"\n{resolution.summary()}" if resolution.ignored else ""
    return (
        f"{config.mode} {algo.module} on {target}: {' '.join(argv)}\n"
        f"scalars: {_scalar_destinations(config)}{ignored}"
    )


def _scalar_destinations(config: CleanRLConfig) -> str:
    """Where the script's ``SummaryWriter`` scalars go (a line of the dry run)."""
    places = []
    if config.scalar_series:
        places.append("series (metrics events)")
    if config.track_tensorboard is not False:
        places.append(f"TensorBoard files in <run_dir>/{config.tensorboard_dir}/")
    return " and ".join(places) or "nowhere (scalar_series and track_tensorboard are off)"


def _check_policy(config: CleanRLConfig, path: Path) -> None:
    """The policy loads, and (policy_eval) acts in the env it will be evaluated on."""
    # Imported here: the agents import torch, which only the policy modes need.
    from mosaic_worker_cleanrl.agents import load_policy

    try:
        policy = load_policy(str(path))
    except ValueError as exc:
        raise ValueError(f"policy_path {str(path)!r}: {exc}") from None
    if config.mode != "policy_eval":
        return  # resume_training checks against the script's own envs
    # torch only when a policy is checked (start-up time)
    from mosaic_worker_cleanrl.agents.spaces import check_fits

    env_id = eval_env_id(config, policy)
    try:
        env = make_eval_env(env_id)
    except Exception as exc:  # noqa: BLE001 - gymnasium raises many kinds
        raise ValueError(f"cannot make env {env_id!r} to evaluate on: {exc}") from None
    try:
        check_fits(policy.agent, env, where=f"policy_path {str(path)!r}")
    finally:
        env.close()


def log_path(config: WorkerConfig, run_dir: Path) -> Path:
    return run_dir / LOG_NAME


def with_config_worker_id(argv: Sequence[str]) -> list[str]:
    """``argv`` plus ``--worker-id`` from the config's ``worker_id`` when the command line
    gives none (the command line wins); unchanged when the config cannot be read (the SDK
    then reports why)."""
    args = list(argv)
    if any(a == "--worker-id" or a.startswith("--worker-id=") for a in args):
        return args
    path = next((args[i + 1] for i, a in enumerate(args[:-1]) if a == "--config"), None)
    path = path or next((a.split("=", 1)[1] for a in args if a.startswith("--config=")), None)
    if path is None:
        return args
    try:
        flat = unwrap_job_descriptor(read_config_json(path))
    except (ConfigError, OSError, ValueError, TypeError, AttributeError):
        return args
    extras = flat.get("extras")
    worker_id = flat.get("worker_id") or (
        extras.get("worker_id") if isinstance(extras, dict) else None
    )
    if isinstance(worker_id, str) and worker_id:
        args += ["--worker-id", worker_id]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    argv = with_config_worker_id(sys.argv[1:] if argv is None else argv)
    return worker_main(
        config_model=CleanRLConfig,
        run=run,
        interactive=interactive_session,
        capabilities=mosaic_worker_describe()[1],
        describe_dry_run=check_config,
        argv=argv,
        prog="mosaic_worker_cleanrl",
        log_path=log_path,
    )


if __name__ == "__main__":
    sys.exit(main())
