"""The built-in ``script`` worker: an unchanged Python script run as a worker.

``mosaic run path/to/train.py -- ARGS`` launches ``python -m mosaic_sdk.instrument --config
PATH`` (the runner's ``script`` worker: :mod:`mosaic_sdk.runner.supervision.script_worker`);
the SDK's ``worker_main`` parses it, validates the :class:`~.script_config.ScriptConfig`, gives the
telemetry stream the real stdout (what the script prints goes to stderr, the run's log, so a
script that writes binary to stdout cannot corrupt it), reads control commands from stdin
(the script gets ``/dev/null`` as its stdin) and runs a :class:`ScriptRun`, which

1. installs the patches (:mod:`mosaic_sdk.instrument`): every env the script makes reports
   steps, episodes and, when it renders ``rgb_array``, frames; its ``AsyncVectorEnv``
   subprocesses too; ``SummaryWriter`` scalars become series; each env step is a control
   safe point (pause blocks there, stop ends the script there if SIGTERM did not);
2. hands a checkpoint function the script registers (``mosaic_sdk.script.on_checkpoint``)
   to the control channel, and refuses ``checkpoint`` with that advice otherwise;
3. emits ``run_started`` (the script, its hash and arguments, the Python and package
   versions), runs the script as ``__main__`` with a heartbeat going;
4. reports the episodes still running as unfinished, and ends with one terminal event:
   ``run_completed`` (with a notice when the script made no env), ``run_cancelled``, or
   ``run_failed`` with the exception and where it was raised, or the script's exit status
   (``sys.exit(3)``: the worker exits with 3 too).

A script that does not end within ``stop_grace`` seconds of a stop (it ignores SIGTERM and
steps no env) is ended by the worker with ``run_cancelled``.
"""

from __future__ import annotations

import io
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from mosaic_sdk import script
from mosaic_sdk.control.channel import ControlChannel
from mosaic_sdk.fastlane.environment import resolve_fastlane
from mosaic_sdk.instrument.env_telemetry import TelemetrySink
from mosaic_sdk.instrument.execution import Ending, RunCancelled, ScriptTarget, execute
from mosaic_sdk.instrument.gym_patch import Instrumentation
from mosaic_sdk.instrument.scalar_series import ScalarSeries
from mosaic_sdk.instrument.script_config import (
    CAPABILITIES,
    NO_ENV_NOTICE,
    WORKER_TYPE,
    ScriptConfig,
    describe_script,
    versions,
)
from mosaic_sdk.instrument.subprocess_patch import child_variables
from mosaic_sdk.run_context import RunContext
from mosaic_sdk.telemetry import Heartbeat
from mosaic_sdk.worker_cli import worker_main

NO_CHECKPOINT = (
    "this script registered no checkpoint function",
    "call mosaic_sdk.script.on_checkpoint(save) in the script, with save() writing the model "
    "and returning the path it wrote",
)
#: Exit status when the worker ends a script that ignored a stop (as SIGTERM would).
STOPPED_STATUS = 143


class ScriptRun:
    """One run of a script in this process (see the module docstring)."""

    def __init__(self, ctx: RunContext) -> None:
        config = ctx.config
        assert isinstance(config, ScriptConfig)
        self.ctx = ctx
        self.config = config
        self.started = time.monotonic()
        #: The script's ``sys.exit(N)``, N not 0: the worker's exit status too.
        self.exit_code: int | None = None
        self.finished = threading.Event()
        self.sink = TelemetrySink(
            ctx.emitter,
            steps=config.telemetry_steps,
            step_every=config.telemetry_step_every,
            step_rate=config.telemetry_step_rate,
        )
        self.sink.safe_point = self.safe_point
        self.series = ScalarSeries(self._emit_series)

    @property
    def target(self) -> ScriptTarget:
        if self.config.script is not None:
            return ScriptTarget(path=Path(self.config.script))
        return ScriptTarget(module=self.config.module)

    # -- control ----------------------------------------------------------------------------
    def safe_point(self) -> None:
        """Before each env step: block while paused, run a requested checkpoint, and end the
        script when the run must stop (``ctx.cancelled`` is the channel's safe point)."""
        if self.ctx.cancelled:
            raise RunCancelled(self.ctx.stop_reason)

    def _checkpoint(self, save: script.SaveFunction) -> Callable[[], str]:
        emitter, sink = self.ctx.emitter, self.sink

        def run_save() -> str:
            path = os.fspath(save())
            emitter.checkpoint_saved(
                checkpoint_path=os.path.abspath(path), episode=sink.episodes, step=sink.total_steps
            )
            return path

        return run_save

    def _emit_series(self, values: dict[str, float], step: int) -> None:
        self.ctx.emitter.metrics(values, step=step)

    def _watch_stop(self) -> None:
        """End the process when the script outlives a stop by ``stop_grace`` seconds."""
        self.ctx.cancel.wait()
        if self.finished.wait(self.config.stop_grace):
            return
        self.ctx.log(
            f"mosaic: the script did not end within {self.config.stop_grace:g} s of the stop "
            "(it ignores SIGTERM and steps no env): ending it"
        )
        self.ctx.emitter.run_cancelled(
            reason=self.ctx.stop_reason,
            completed_episodes=self.sink.episodes,
            step=self.sink.total_steps,
            forced=True,
        )
        self.ctx.emitter.close()
        os._exit(STOPPED_STATUS)

    # -- the run ----------------------------------------------------------------------------
    def instrumentation(self) -> Instrumentation:
        """The patches of this run, FastLane as the config and the launcher decide."""
        config, ctx = self.config, self.ctx
        decided = resolve_fastlane(config.fastlane, environ=os.environ)
        every_env = decided.enabled  # switched on: every env, asked to render rgb_array
        settings: dict[str, Any] | None = decided.as_hook_settings()
        if config.fastlane is False or decided.video_mode == "off":
            settings = None
        children = child_variables(
            render_frames=every_env and settings is not None,
            owner_pid=os.getpid(),
            steps=config.telemetry_steps,
            step_every=config.telemetry_step_every,
            step_rate=config.telemetry_step_rate,
        )
        return Instrumentation(
            self.sink,
            config.run_id,
            fastlane_settings=settings,
            fastlane_hook=_fastlane_wrap if settings is not None else None,
            render_frames=every_env and settings is not None,
            log=ctx.log,
            child_variables=children,
        )

    def run(self) -> None:
        ctx, config, emitter = self.ctx, self.config, self.ctx.emitter
        os.environ["MOSAIC_RUN_ID"] = config.run_id
        if ctx.control is not None:
            channel = ctx.control
            stop_listening = script.listen(
                lambda save: channel.on_checkpoint(self._checkpoint(save))
            )
        else:
            stop_listening = _nothing
        watchdog = threading.Thread(target=self._watch_stop, name="mosaic-stop-watch", daemon=True)
        watchdog.start()
        inst = self.instrumentation().install()
        ending: Ending | None = None
        try:
            emitter.run_started(
                worker_type=WORKER_TYPE,
                seed=config.seed,
                config=config.to_dict(),
                script=describe_script(config),
                versions=versions(),
                fastlane=inst.fastlane_settings,
            )
            patches = [self.series.install] if config.scalar_series else []
            with Heartbeat(emitter, config.heartbeat_interval, progress=self.progress):
                ending = execute(ctx, self.target, config.args, patches=patches)
        finally:
            inst.uninstall(hurry=ending is None or ending.outcome != "completed")
            stop_listening()
            self.finished.set()
        self.finish(ending)

    def progress(self) -> dict[str, Any]:
        return {**self.sink.progress(), "series_points": self.series.points}

    def finish(self, ending: Ending) -> None:
        """The one terminal event."""
        ctx, emitter, sink = self.ctx, self.ctx.emitter, self.sink
        duration = time.monotonic() - self.started
        final = {
            "mean_return": sink.mean_return(),
            "steps": sink.total_steps,
            "unfinished_episodes": sink.unfinished,
            "series_points": self.series.points,
        }
        if ending.outcome == "completed":
            extra: dict[str, Any] = {}
            if sink.episodes == 0 and sink.total_steps == 0:
                extra["notice"] = NO_ENV_NOTICE
                ctx.log(f"mosaic: notice: {NO_ENV_NOTICE}")
            emitter.run_completed(
                episodes=sink.episodes,
                total_reward=sink.total_reward,
                duration_seconds=duration,
                final_metrics=final,
                **extra,
            )
        elif ending.outcome == "cancelled":
            reason = ctx.stop_reason if ctx.cancel.is_set() else str(ending.reason)
            emitter.run_cancelled(
                reason=reason, completed_episodes=sink.episodes, step=sink.total_steps
            )
        else:
            self.exit_code = ending.exit_code
            emitter.run_failed(
                error=ending.error,
                error_type=ending.error_type,
                traceback=ending.traceback,
                episode=sink.episodes,
                step=sink.total_steps,
                exit_code=ending.exit_code,
                script=describe_script(self.config),
            )


def _nothing() -> None:
    pass


def _fastlane_wrap(env: Any, run_id: str, settings: dict[str, Any]) -> Any:
    # Imported here: FastLane's wrappers only for a run that shows frames.
    from mosaic_sdk.fastlane.wrapper import wrap_env

    return wrap_env(env, run_id, settings)


def refuse_checkpoints_until_registered(channel: ControlChannel) -> None:
    """Before the first command: ``checkpoint`` is refused with the script's advice until
    the script registers a function (``mosaic_sdk.script.on_checkpoint``)."""
    channel.no_checkpoint = NO_CHECKPOINT


def private_stdin() -> BinaryIO:
    """The control channel's stdin: fd 0 moved to a descriptor of its own (no child inherits
    it); the script reads ``/dev/null``, so an ``input()`` in it cannot eat a command."""
    try:
        private = os.dup(0)
    except OSError:
        return io.BytesIO(b"")  # no stdin at all: the same as one that is closed
    os.set_inheritable(private, False)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return open(private, "rb")  # noqa: SIM115 - read until EOF by the control channel


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m mosaic_sdk.instrument --config PATH``: the exit status is the worker's, or
    the script's own ``sys.exit(N)``."""
    runs: list[ScriptRun] = []

    def run(ctx: RunContext) -> None:
        runs.append(ScriptRun(ctx))
        runs[-1].run()

    code = worker_main(
        config_model=ScriptConfig,
        run=run,
        describe_dry_run=lambda config: f"would run {config.target_text()}",  # type: ignore[attr-defined]
        argv=argv,
        prog="mosaic-script",
        capabilities=CAPABILITIES,
        control_stdin=private_stdin(),
        control_setup=refuse_checkpoints_until_registered,
    )
    script_code = runs[-1].exit_code if runs else None
    if script_code is not None and code == 1:
        return script_code
    return code


__all__ = ["ScriptRun", "main", "private_stdin", "refuse_checkpoints_until_registered"]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
