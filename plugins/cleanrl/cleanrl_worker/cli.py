"""``python -m cleanrl_worker --config PATH [--dry-run] [--worker-id ID] [-v]``.

The CLI contract (config loading and errors, stdout for telemetry only, signals, exit codes)
is the SDK's ``worker_main``; the worker adds its run function, a dry-run check and the log
file that receives the algorithm's own prints (``algorithm.log`` in the run directory).
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path

from cleanrl_worker.config import CleanRLConfig
from mosaic_sdk.contract import WorkerConfig
from mosaic_sdk.worker_cli import worker_main


def check_config(config: WorkerConfig) -> str:
    """Everything that can be checked without training; raises ValueError with the reason."""
    import gymnasium

    from cleanrl_worker.gym_compat import register_ale_envs
    from cleanrl_worker.registry import missing_modules, resolve

    assert isinstance(config, CleanRLConfig)
    register_ale_envs()
    if config.mode in ("policy_eval", "resume_training", "interactive"):
        path = Path(config.policy_path or "")
        if not path.is_file():
            raise ValueError(f"policy_path {str(path)!r} does not exist")
        from cleanrl_worker.evaluation import load_policy

        try:
            load_policy(str(path))
        except (ValueError, KeyError) as exc:
            raise ValueError(f"policy_path {str(path)!r}: {exc}") from None
    if config.eval_capture_video and importlib.util.find_spec("moviepy") is None:
        raise ValueError("eval_capture_video needs moviepy: pip install moviepy")
    if config.track_wandb and importlib.util.find_spec("wandb") is None:
        raise ValueError("track_wandb needs wandb: pip install wandb")
    if config.mode == "curriculum":
        from cleanrl_worker.curriculum_env import check_stage_spaces

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
    algo = resolve(config.algo, config.cleanrl_path)
    missing = missing_modules(algo.path)
    if missing:
        raise ValueError(
            f"algo {config.algo!r} imports {', '.join(missing)}, not installed here "
            f"(pip install {' '.join(missing)})"
        )
    from cleanrl_worker.launch_args import build_argv

    argv = build_argv(config, algo, Path("<run_dir>"))
    return f"{config.mode} {algo.module} on {target}: {' '.join(argv)}"


def log_path(config: WorkerConfig, run_dir: Path) -> Path:
    from cleanrl_worker.runtime import LOG_NAME

    return run_dir / LOG_NAME


def main(argv: Sequence[str] | None = None) -> int:
    from cleanrl_worker.interactive import interactive_session
    from cleanrl_worker.plugin import mosaic_worker_describe
    from cleanrl_worker.runtime import run

    return worker_main(
        config_model=CleanRLConfig,
        run=run,
        interactive=interactive_session,
        capabilities=mosaic_worker_describe()[1],
        describe_dry_run=check_config,
        argv=argv,
        prog="cleanrl_worker",
        log_path=log_path,
    )


if __name__ == "__main__":
    sys.exit(main())
