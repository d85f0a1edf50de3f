"""One run of the CleanRL worker, inside the single process the runner started.

The SDK's ``worker_main`` has parsed the CLI, validated the config, given the telemetry
stream the real stdout (the script's prints go to ``algorithm.log`` in the run directory) and
installed the signal handlers. :func:`run` then:

1. resolves the algorithm and builds its command line (``launch_args``);
2. installs the SDK's patches (:mod:`mosaic_sdk.instrument`, set up by ``run_setup``):
   telemetry and FastLane on every env, the gymnasium 0.29 compatibility layer for upstream
   scripts, the ``sitecustomize`` switch for the env subprocesses of an ``AsyncVectorEnv``
   (only they get it), the curriculum env for ``curriculum`` runs;
3. emits ``run_started``, starts the heartbeat, and runs the script's module as ``__main__``
   in this process (no chain of interpreters; :func:`mosaic_sdk.instrument.execution.execute`),
   its ``SummaryWriter`` scalars reported as series (``scalar_series``), its TensorBoard files
   written only with ``track_tensorboard``;
4. maps the outcome to exactly one terminal event: ``run_completed``; ``run_cancelled`` on
   SIGTERM/SIGINT (the signal interrupts the script at once); ``run_failed`` with the
   traceback and the tail of the script's log on a crash or a non-zero ``sys.exit``;
5. writes ``analytics.json`` in every case.

``policy_eval`` runs no script: see :mod:`mosaic_worker_cleanrl.evaluation`.
"""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from mosaic_sdk.instrument.env_telemetry import TelemetrySink
from mosaic_sdk.instrument.execution import ScriptTarget, execute
from mosaic_sdk.instrument.gym_patch import Instrumentation
from mosaic_sdk.instrument.scalar_series import ScalarSeries
from mosaic_sdk.telemetry import Heartbeat
from mosaic_sdk.worker_cli import RunContext
from mosaic_worker_cleanrl.analytics import collect_checkpoints, log_tail, write_analytics
from mosaic_worker_cleanrl.config import CleanRLConfig
from mosaic_worker_cleanrl.curriculum_env import (
    CURRICULUM_ENV_ID,
    check_stage_spaces,
    register_curriculum,
)
from mosaic_worker_cleanrl.curriculum_remote import (
    CURRICULUM_VAR,
    STAGE_FILE,
    publish,
    remote_episode_feeder,
)
from mosaic_worker_cleanrl.curriculum_schedule import ScheduleProgress
from mosaic_worker_cleanrl.evaluation import run_policy_eval
from mosaic_worker_cleanrl.launch_args import build_argv
from mosaic_worker_cleanrl.legacy_gym import gym_module_on_path
from mosaic_worker_cleanrl.platform_config import METADATA_FIELDS, resolve_run, wandb_environment
from mosaic_worker_cleanrl.registry import AlgorithmSpec, resolve
from mosaic_worker_cleanrl.run_setup import install_instrumentation, make_sink
from mosaic_worker_cleanrl.stderr_tail import StderrTail
from mosaic_worker_cleanrl.upstream_outputs import OutputRedirect
from mosaic_worker_cleanrl.upstream_video import skip_recording

LOG_NAME = "algorithm.log"


def run(ctx: RunContext) -> None:
    """The worker's run function (see the module docstring)."""
    config = ctx.config
    assert isinstance(config, CleanRLConfig)
    resolution = resolve_run(config, os.environ)
    if resolution.ignored:  # once per run, on stderr (never the telemetry stream)
        ctx.log(f"cleanrl: {resolution.summary()}")
    ctx.config = config = resolution.config
    if config.track_wandb:
        for key, value in wandb_environment(config).items():
            os.environ.setdefault(key, value)
    if config.mode == "policy_eval":
        run_policy_eval(ctx)
        return
    run_algorithm(ctx, config, resolution.ignored)


def execute_module(
    ctx: RunContext,
    algo: AlgorithmSpec,
    argv: list[str],
    patches: Sequence[Callable[[], Callable[[], None]]] = (),
) -> tuple[str, Any]:
    """Run the script's module as ``__main__`` in the run directory (the SDK's
    :func:`~mosaic_sdk.instrument.execution.execute`); returns (outcome, detail).

    outcome is ``completed``, ``cancelled`` (detail: the signal name) or ``failed`` (detail: a
    dict with error, error_type, traceback). ``patches`` are installed just before the
    script runs and undone after it, in reverse order.
    """
    target = ScriptTarget(module=algo.module, import_root=algo.import_root)
    ending = execute(ctx, target, argv, cwd=ctx.run_dir, patches=patches)
    if ending.outcome == "cancelled":
        return "cancelled", ending.reason
    if ending.outcome == "failed":
        if ending.error_type == "SystemExit":
            error = f"{algo.module} exited with status {ending.exit_code}"
        else:
            error = ending.message or str(ending.error_type)
        return "failed", {
            "error": error,
            "error_type": ending.error_type,
            "traceback": ending.traceback,
        }
    return "completed", None


def run_algorithm(
    ctx: RunContext, config: CleanRLConfig, ignored: dict[str, str] | None = None
) -> None:
    """train, resume_training and curriculum runs (``ignored``: what of the platform's config
    the run does not use, see :mod:`mosaic_worker_cleanrl.platform_config`)."""
    emitter = ctx.emitter
    started = time.monotonic()
    run_dir = ctx.run_dir
    run_dir.mkdir(parents=True, exist_ok=True)
    algo = resolve(config.algo, config.cleanrl_path)
    compat = config.gym_compat == "on" or (config.gym_compat == "auto" and algo.upstream)
    sink = make_sink(ctx, config)
    inst = install_instrumentation(ctx, config, sink, compat)
    undo_curriculum = None
    progress = None
    env_id = config.env_id
    outcome: str = "failed"
    detail: Any = None
    started_wall = time.time()
    stderr_tail = StderrTail()
    try:
        if config.mode == "curriculum":
            progress, undo_curriculum = _setup_curriculum(ctx, config, inst, sink)

            env_id = CURRICULUM_ENV_ID
        argv = build_argv(config, algo, run_dir, env_id=env_id)
        emitter.run_started(
            worker_type="cleanrl",
            algo=config.algo,
            env_id=config.env_id,
            seed=config.seed,
            config=config.to_dict(),
            mode=config.mode,
            module=algo.module,
            argv=argv,
            gym_compat=compat,
            fastlane=inst.fastlane_settings,
            ignored=ignored or {},
        )
        if config.mode == "resume_training":
            _announce_resume(ctx, config)
        heartbeat = Heartbeat(emitter, config.heartbeat_interval, progress=sink.progress)
        gym_layer = gym_module_on_path() if compat else nullcontext()
        outputs = _upstream_outputs(algo, config, run_dir, ctx.log)
        with heartbeat, stderr_tail, gym_layer, outputs:
            outcome, detail = execute_module(ctx, algo, argv, _scalar_series(ctx, config))
    except Exception as exc:  # noqa: BLE001 - a setup error still gets analytics
        outcome = "failed"
        detail = {"error": str(exc) or type(exc).__name__, "error_type": type(exc).__name__,
                  "traceback": traceback.format_exc()}  # fmt: skip
    finally:
        inst.uninstall(hurry=outcome != "completed")
        if undo_curriculum is not None:
            undo_curriculum()
    if isinstance(detail, dict):
        detail["stderr_tail"] = stderr_tail.text()
    finish(ctx, config, sink, outcome, detail, started, started_wall, progress, ignored)


@contextmanager
def _upstream_outputs(
    algo: AlgorithmSpec, config: CleanRLConfig, run_dir: Path, log: Any
) -> Iterator[None]:
    """An upstream script's TensorBoard events and saved models go where the config says
    (see :mod:`mosaic_worker_cleanrl.upstream_outputs`), and its videos are skipped with a warning
    when moviepy is missing (:mod:`mosaic_worker_cleanrl.upstream_video`); our PPO takes its outputs
    as arguments."""
    if not algo.upstream:
        yield
        return

    undo = OutputRedirect(run_dir, config.tensorboard_dir).install()
    undo_video = skip_recording(log)
    try:
        yield
    finally:
        undo_video()
        undo()


def _scalar_series(
    ctx: RunContext, config: CleanRLConfig
) -> list[Callable[[], Callable[[], None]]]:
    """The patch that makes the script's TensorBoard scalars series, and writes its
    TensorBoard files only with ``track_tensorboard`` (see
    :mod:`mosaic_sdk.instrument.scalar_series`); none when neither is asked for."""
    files = config.track_tensorboard is not False  # None (not resolved): as by default
    if not config.scalar_series and files:
        return []
    emitter = ctx.emitter

    def emit(values: dict[str, float], step: int) -> None:
        if config.scalar_series:  # else files only: the series are not wanted
            emitter.metrics(values, step=step)

    return [ScalarSeries(emit, write_files=files).install]


def _setup_curriculum(
    ctx: RunContext, config: CleanRLConfig, inst: Instrumentation, sink: TelemetrySink
) -> Any:
    """Check the stages, register the curriculum env id here and, through a stage file, in
    env subprocesses (:mod:`mosaic_worker_cleanrl.curriculum_remote`); returns (progress, undo)."""

    stages = list(config.curriculum_schedule or [])
    check_stage_spaces(stages, inst.original_make)
    stage_file = ctx.run_dir / STAGE_FILE

    def on_advance(old: int, new: int, stats: dict[str, Any]) -> None:
        publish(stage_file, progress)
        ctx.emitter.lifecycle(
            "curriculum_stage",
            {"from_stage": old, "to_stage": new, "env_id": stages[new].env_id,
             "completed": stats},
        )  # fmt: skip

    progress = ScheduleProgress(stages, on_advance)
    publish(stage_file, progress)
    if inst.child_variables is not None:
        inst.child_variables[CURRICULUM_VAR] = str(stage_file)
    sink.on_remote_episode = remote_episode_feeder(progress)
    unregister = register_curriculum(progress, inst.original_make)

    def undo() -> None:
        unregister()
        sink.on_remote_episode = None
        stage_file.unlink(missing_ok=True)

    return progress, undo


def _announce_resume(ctx: RunContext, config: CleanRLConfig) -> None:
    # torch only to check a resumed policy (start-up time)
    from mosaic_worker_cleanrl.agents import load_policy

    policy = load_policy(config.policy_path or "")
    ctx.emitter.checkpoint_loaded(
        checkpoint_path=str(Path(config.policy_path or "").resolve()),
        step=policy.global_step,
        metrics={"agent": policy.kind, "source": policy.source},
    )


def finish(
    ctx: RunContext,
    config: CleanRLConfig,
    sink: TelemetrySink,
    outcome: str,
    detail: Any,
    started: float,
    started_wall: float,
    progress: Any = None,
    ignored: dict[str, str] | None = None,
) -> None:
    """Checkpoint events, analytics.json and the one terminal event."""
    emitter = ctx.emitter
    duration = time.monotonic() - started
    checkpoints = collect_checkpoints(ctx.run_dir, since=started_wall)
    for ckpt in checkpoints:
        emitter.checkpoint_saved(checkpoint_path=ckpt["path"], step=ckpt.get("step"))
    extra: dict[str, Any] = {}
    if progress is not None:
        extra["curriculum"] = {"stages_completed": progress.history, "final": progress.stats()}
    for name in METADATA_FIELDS:
        if getattr(config, name) is not None:
            extra[name] = getattr(config, name)
    if ignored:
        extra["ignored"] = dict(ignored)
    write_analytics(ctx.run_dir, config, sink, checkpoints, duration, outcome, extra)
    final = {"mean_return": sink.mean_return(), "steps": sink.total_steps}
    if outcome == "completed":
        emitter.run_completed(
            episodes=sink.episodes,
            total_reward=sink.total_reward,
            duration_seconds=duration,
            final_metrics=final,
        )
    elif outcome == "cancelled":
        emitter.run_cancelled(
            reason=str(detail), completed_episodes=sink.episodes, step=sink.total_steps
        )
    else:
        emitter.run_failed(
            **detail,
            episode=sink.episodes,
            step=sink.total_steps,
            log_tail=log_tail(ctx.run_dir / LOG_NAME),
        )


__all__ = ["LOG_NAME", "execute_module", "run", "run_algorithm"]
