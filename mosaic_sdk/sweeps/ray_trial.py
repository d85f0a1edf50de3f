"""One trial on a Ray node: the worker under the runner's supervision, its output streamed to
the driver, its metric reported to Tune as episodes arrive. Imports Ray (the ``ray`` extra).

:class:`MosaicTrial` is a Tune class trainable (the class API, not a function: Tune calls its
``cleanup()`` when a scheduler such as ASHA stops the trial or the sweep is interrupted, and
that is where the worker gets SIGTERM, ends with ``run_cancelled``, and the rest of its output
is sent). The worker is supervised by
:class:`~mosaic_sdk.runner.supervision.lifecycle.RunLifecycle`, as under ``mosaic run``: one thread
starts it, reads it to the end and reaps what it left, so the worker is killed with the trial's
process if that dies (parent-death signal). The messages sent to the driver are those of
:mod:`mosaic_sdk.sweeps.collector`.

The spec's ``trial_stall_after`` is enforced here, on the trial's node, where the lines arrive
first: a :class:`~mosaic_sdk.runner.recording.health.RunHealth` is kept by the read loop's
observer; when the worker has written nothing for that long, the ``stalled`` event goes to the
driver (a ``health`` message, stored by the attempt's recorder) and the worker is stopped as
for the ``trial_timeout`` (SIGTERM, grace, SIGKILL); the ``end`` message says why
(``stalled``), and the attempt is stored ``failed``.
"""

from __future__ import annotations

import json
import queue
import socket
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ray import tune

from mosaic_sdk.runner.recording.health import STALLED_EVENT, RunHealth, stall_reason
from mosaic_sdk.runner.storage.paths import default_runs_dir
from mosaic_sdk.runner.supervision.launch import prepare_run, resolve_job
from mosaic_sdk.runner.supervision.lifecycle import RunLifecycle, RunObserver
from mosaic_sdk.runner.supervision.process import WorkerProcess
from mosaic_sdk.runner.supervisor import resolve_worker
from mosaic_sdk.sweeps.spec import trial_config

if TYPE_CHECKING:
    from ray.tune.experiment import Trial

#: Send a batch of lines to the driver when it is this old (s) or this long (lines).
FLUSH_AFTER = 0.1
FLUSH_LINES = 2000
#: Longest a ``step()`` waits for a new episode before reporting anyway (s): Tune's calls to
#: the trial (``stop`` included) wait for the running ``step()``.
STEP_WAIT = 0.5
#: Why a trial's worker is stopped before its end (Tune stops a trial for its scheduler, or
#: because the sweep was interrupted; the driver tells the two apart).
STOP_REASON = "stopped by Ray Tune"


class _Streamer(RunObserver):
    """Batches stdout lines for the driver, follows the episodes for the metric, and the
    run's health when the spec has a ``trial_stall_after``."""

    def __init__(self, trial: MosaicTrial, stall_after: float | None = None) -> None:
        self.trial = trial
        self.batch: list[bytes] = []
        self.first_at: float | None = None
        self.health = None if stall_after is None else RunHealth(stall_after)
        #: Why the worker was stopped for its stall limit (None: it was not).
        self.stalled: str | None = None

    def max_wait(self, now: float) -> float:
        return 0.1 if self.first_at is None else self.first_at + FLUSH_AFTER - now

    def on_lines(self, lines: list[bytes], arrived: float, eof: bool, partial: bool) -> None:
        if not lines:
            return
        if self.health is not None:
            self.health.last_line_at = arrived  # one store per chunk, not per line
        if self.first_at is None:
            self.first_at = time.monotonic()
        self.batch.extend(lines)
        values = []
        for raw in lines:
            if b'"episode"' in raw:
                try:
                    d = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(d, dict) and d.get("type") == "episode":
                    key = "total_reward" if self.trial.metric_name == "return" else "steps"
                    value = d.get(key)
                    if isinstance(value, (int, float)) and not isinstance(value, bool):
                        values.append(float(value))
        if values:
            self.trial.add_episodes(values)
        if len(self.batch) >= FLUSH_LINES or (eof and partial):
            self.flush(partial=eof and partial)

    def on_pass(self, now: float, eof: bool) -> None:
        if self.first_at is not None and (eof or now >= self.first_at + FLUSH_AFTER):
            self.flush()

    def on_check(self, now: float) -> None:
        health = self.health
        if health is None:
            return
        change = health.check(now)
        if change is None or change["event"] != STALLED_EVENT:
            return
        self.health = None  # stopped for it: one stall per trial
        self.flush()  # the lines before the stall go first
        reason = stall_reason(change)
        if self.trial.lifecycle.request_stop(reason):
            self.stalled = reason
        self.trial.send(("health", self.trial.run_id, change))

    def flush(self, partial: bool = False) -> None:
        if self.batch:
            self.trial.send(("out", self.trial.run_id, self.batch, partial))
        self.batch, self.first_at = [], None


class MosaicTrial(tune.Trainable):
    """A trial of a sweep (see the module docstring). Built by Tune with
    ``tune.with_parameters(MosaicTrial, setup_args=...)``."""

    def setup(self, config: dict[str, Any], setup_args: dict[str, Any]) -> None:  # type: ignore[override]
        self.inbox = setup_args["inbox"]
        self.metric_name = setup_args["metric"]
        self.last_n = setup_args["last"]
        self.grace = setup_args["grace"]
        #: ASHA stops a trial whose time reaches ``max_t``: until the worker ends, at most
        #: ``max_t - 1`` episodes are reported, so a trial that runs its full length completes.
        self.max_t: int | None = setup_args.get("max_t")
        self.handle = resolve_worker(setup_args["worker"])
        params = dict(config)
        job = resolve_job(trial_config(setup_args["spec"], params))
        runs_dir = setup_args.get("runs_dir")
        prepared = prepare_run(
            self.handle,
            job,
            runs_dir=Path(runs_dir) if runs_dir else default_runs_dir(),
            exclusive=True,
        )
        self.run_id = prepared.run_id
        self.values: list[float] = []
        self.ended = False
        self.cancel_reason: str | None = None
        self._cond = threading.Condition()
        self._reported = 0
        self.streamer = _Streamer(self, setup_args["spec"].trial_stall_after)
        self.lifecycle = RunLifecycle(
            self.handle,
            prepared,
            self.streamer,
            stderr_path=prepared.run_dir / "stderr.log",
            on_stderr_lines=lambda lines, partial: self.send(
                ("err", self.run_id, list(lines), partial)
            ),
            grace=self.grace,
            time_limit=setup_args["spec"].trial_timeout,
        )
        import ray

        self.start_info = {
            "trial_key": self.trial_id,
            "params": params,
            "config": prepared.config.to_dict(),
            "argv": prepared.argv,
            "run_dir": str(prepared.run_dir),
            "node": ray.get_runtime_context().get_node_id(),
            "host": socket.gethostname(),
        }
        self._started = threading.Event()
        self.thread = threading.Thread(target=self._supervise, name="mosaic-trial", daemon=True)
        self.thread.start()
        self._started.wait()

    # -- the supervision thread (starts, reads and reaps the worker) -------------------------
    def _supervise(self) -> None:
        exit_code: int | None = None
        start_error: str | None = None
        stderr_tail = ""
        try:
            self.send(("start", self.run_id, self.start_info))
            proc: WorkerProcess | None = None
            try:
                proc = self.lifecycle.start()
            except RuntimeError as exc:
                start_error = f"{exc}; check the worker's launch command (mosaic workers show)"
            else:
                self.send(("pid", self.run_id, proc.pid))
            self._started.set()
            if proc is not None:
                self.lifecycle.supervise()
                self.streamer.flush()
                exit_code = self.lifecycle.finish()
                stderr_tail = proc.stderr_text(limit=20)
            self.lifecycle.cleanup(exit_code)
        finally:
            self._started.set()
            self.lifecycle.close()
            self.send(
                (
                    "end",
                    self.run_id,
                    {
                        "exit_code": exit_code,
                        "cancel_reason": None
                        if self.lifecycle.time_limit_reason or self.streamer.stalled
                        else self.lifecycle.stop_reason,
                        "timed_out": self.lifecycle.time_limit_reason,
                        "stalled": self.streamer.stalled,
                        "stderr_tail": stderr_tail,
                        "start_error": start_error,
                    },
                )
            )
            with self._cond:
                self.ended = True
                self._cond.notify_all()

    def send(self, message: tuple[Any, ...]) -> None:
        import ray

        ray.get(self.inbox.put.remote(message))  # one at a time: the driver sees them in order

    def add_episodes(self, values: list[float]) -> None:
        with self._cond:
            self.values.extend(values)
            self._cond.notify_all()

    # -- Tune's side -------------------------------------------------------------------------
    def step(self) -> dict[str, float]:
        with self._cond:
            self._cond.wait_for(lambda: self.ended or len(self.values) > self._reported, STEP_WAIT)
            n = len(self.values)
            ended = self.ended
            recent = self.values[-self.last_n :]
        self._reported = n
        if not ended and self.max_t is not None:
            n = min(n, self.max_t - 1)
        result: dict[str, float] = {"episodes": n, "done": ended}
        if recent:
            result[self.metric_name] = sum(recent) / len(recent)
        return result

    def save_checkpoint(self, checkpoint_dir: str) -> dict[str, str]:
        """Nothing to save: an attempt that is retried starts its worker anew (a new run)."""
        return {"run_id": self.run_id}

    def load_checkpoint(self, checkpoint: object) -> None:
        """Nothing to load (see :meth:`save_checkpoint`)."""

    def cleanup(self) -> None:
        """Stop the worker if it still runs (ASHA, or the sweep interrupted) and wait for the
        rest of its output to be sent."""
        if self.thread.is_alive():
            self.lifecycle.request_stop(STOP_REASON)
            self.thread.join(self.grace + 5.0)


__all__ = ["MosaicTrial"]


#: Trials whose attempt ended without its own ``end`` message, from :class:`LostAttempts` (Tune
#: calls it in the driver) to the engine: ``(trial_id, why)``.
NOTICES: queue.Queue[tuple[str, str]] = queue.Queue()


class LostAttempts(tune.Callback):
    """Tells the driver that a trial's attempt died (Tune pickles it with the experiment and
    restores it on ``--resume``: it holds nothing but finds :data:`NOTICES` by import)."""

    def on_trial_recover(
        self, iteration: int, trials: list[Trial], trial: Trial, **info: object
    ) -> None:
        NOTICES.put((trial.trial_id, "its Ray actor died (node lost?); Tune retries it"))

    def on_trial_error(
        self, iteration: int, trials: list[Trial], trial: Trial, **info: object
    ) -> None:
        NOTICES.put((trial.trial_id, "its Ray actor died (node lost?); no retry is left"))


class _Inbox:
    """The driver's mailbox (a Ray actor on the driver's node): trials ``put`` messages in
    order, the driver ``take``s everything there. At most ``max_items`` wait; a ``put`` past
    that waits (the trial's reader, then its worker, wait with it: nothing is dropped)."""

    def __init__(self, max_items: int) -> None:
        import asyncio

        self.items: list[object] = []
        self.max_items = max_items
        self.cond = asyncio.Condition()

    async def put(self, item: object) -> None:
        async with self.cond:
            await self.cond.wait_for(lambda: len(self.items) < self.max_items)
            self.items.append(item)
            self.cond.notify_all()

    async def take(self, timeout: float) -> list[object]:
        import asyncio

        async with self.cond:
            if not self.items:
                try:
                    await asyncio.wait_for(self.cond.wait_for(lambda: bool(self.items)), timeout)
                except asyncio.TimeoutError:
                    pass
            items, self.items = self.items, []
            self.cond.notify_all()
            return items


def make_inbox(max_items: int = 256) -> Any:
    """Start the inbox actor on this (the driver's) node; returns its handle."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = ray.get_runtime_context().get_node_id()
    actor = ray.remote(_Inbox).options(
        num_cpus=0,
        max_concurrency=1000,
        scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=False),
    )
    return actor.remote(max_items)


__all__ += ["NOTICES", "LostAttempts", "make_inbox"]
