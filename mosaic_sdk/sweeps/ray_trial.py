"""One trial on a Ray node: the worker under the runner's supervision, its output streamed to
the driver, its metric reported to Tune as episodes arrive. Imports Ray (the ``ray`` extra).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import queue
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ray
from ray import tune
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from mosaic_sdk.runner.recording.health import STALLED_EVENT, RunHealth, stall_reason
from mosaic_sdk.runner.storage.paths import default_runs_dir
from mosaic_sdk.runner.supervision.launch import prepare_run, resolve_job
from mosaic_sdk.runner.supervision.lifecycle import RunLifecycle, RunObserver
from mosaic_sdk.runner.supervision.process import WorkerProcess
from mosaic_sdk.runner.supervisor import resolve_worker
from mosaic_sdk.sweeps.objective import StreamObjective
from mosaic_sdk.sweeps.ray_search import LIST_INDEX, STEP, TRIAL_INDEX, objective_key
from mosaic_sdk.sweeps.search import params_of
from mosaic_sdk.sweeps.spec import SweepSpec, trial_config

if TYPE_CHECKING:
    from ray.tune.experiment import Trial

#: Send a batch of lines to the driver when it is this old (s) or this long (lines).
FLUSH_AFTER = 0.1
FLUSH_LINES = 2000
#: Longest a ``step()`` waits for a new episode before reporting anyway (s): Tune's ``stop``
#: waits for it.
STEP_WAIT = 0.5
#: Why a trial's worker is stopped before its end (its scheduler, or the sweep interrupted).
STOP_REASON = "stopped by Ray Tune"
OBJECTIVE_KEY = objective_key(0)


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
        self.trial.add_lines(lines)
        if len(self.batch) >= FLUSH_LINES or (eof and partial):
            self.flush(partial=eof and partial)

    def on_pass(self, now: float, eof: bool) -> None:
        if self.first_at is not None and (eof or now >= self.first_at + FLUSH_AFTER):
            self.flush()

    def on_check(self, now: float) -> None:
        change = None if self.health is None else self.health.check(now)
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
        self.spec: SweepSpec = setup_args["spec"]
        self.objectives = list(self.spec.objectives or (self.spec.metric,))
        self.search: str = setup_args.get("search", "list")
        self.grace = setup_args["grace"]
        #: ASHA stops a trial at ``max_t``: at most ``max_t - 1`` episodes are reported until
        #: the worker ends, so a trial that runs its full length completes.
        self.max_t: int | None = setup_args.get("max_t")
        self.runs_dir = setup_args.get("runs_dir")
        self.handle = resolve_worker(setup_args["worker"])
        self.params = self._params(config)
        #: PBT: the checkpoint the next generation starts from, and the run that saved it
        self.resume_path: str | None = None
        self.parent_run_id: str | None = None
        self._own_dir = tempfile.mkdtemp(prefix="mosaic-trial-")
        #: (value, step) of the last result reported with the objective
        self.last: tuple[float, int] | None = None
        #: what cleanup() found when Tune stopped the trial (a pruner's scheduler)
        self.stopped_at: tuple[float, int] | None = None
        self._cond = threading.Condition()
        self.thread: threading.Thread | None = None
        if self.spec.pbt is None:
            self._start_run()

    def _params(self, config: dict[str, Any]) -> dict[str, Any]:
        """The trial's parameters: its config (the list of trials, or PBT's), or the study's
        values made the worker's (the Repeater's index picks the seed)."""
        if self.search == "list":
            return {k: v for k, v in config.items() if k not in (TRIAL_INDEX, LIST_INDEX)}
        params = params_of(self.spec, config)
        if self.spec.seeds:
            params["seed"] = self.spec.seeds[int(config.get(TRIAL_INDEX, 0))]
        return params

    def reset_config(self, new_config: dict[str, Any]) -> bool:
        """PBT's new parameters for this actor (its next generation runs with them)."""
        self.params = self._params(new_config)
        return True

    def _start_run(self) -> None:
        """Start one run of the worker (the trial's, or PBT's next generation)."""
        spec = self.spec
        config = trial_config(spec, self.params)
        if spec.pbt is not None and self.resume_path is not None:
            config[spec.pbt.resume_key] = self.resume_path
        prepared = prepare_run(
            self.handle,
            resolve_job(config),
            runs_dir=Path(self.runs_dir) if self.runs_dir else default_runs_dir(),
            exclusive=True,
        )
        self.run_id = prepared.run_id
        self.stream = StreamObjective(self.objectives)
        self.version = 0
        self._reported = -1
        self.ended = False
        self.cancel_reason: str | None = None
        self.streamer = _Streamer(self, spec.trial_stall_after)
        self.lifecycle = RunLifecycle(
            self.handle,
            prepared,
            self.streamer,
            stderr_path=prepared.run_dir / "stderr.log",
            on_stderr_lines=lambda lines, partial: self.send(
                ("err", self.run_id, list(lines), partial)
            ),
            grace=self.grace,
            time_limit=spec.trial_timeout,
        )

        self.start_info = {
            "trial_key": self.trial_id,
            "params": dict(self.params),
            "config": prepared.config.to_dict(),
            "argv": prepared.argv,
            "run_dir": str(prepared.run_dir),
            "node": ray.get_runtime_context().get_node_id(),
            "host": socket.gethostname(),
            "parent_run_id": self.parent_run_id,
        }
        self._started = threading.Event()
        self.thread = threading.Thread(target=self._supervise, name="mosaic-trial", daemon=True)
        self.thread.start()
        self._started.wait()

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
            timed_out, stalled = self.lifecycle.time_limit_reason, self.streamer.stalled
            end = {
                "exit_code": exit_code,
                "cancel_reason": None if timed_out or stalled else self.lifecycle.stop_reason,
                "timed_out": timed_out,
                "stalled": stalled,
                "stderr_tail": stderr_tail,
                "start_error": start_error,
                "pruned": self.stopped_at if self.spec.pruner is not None else None,
            }
            self.send(("end", self.run_id, end))
            with self._cond:
                self.ended = True
                self._cond.notify_all()

    def send(self, message: tuple[Any, ...]) -> None:
        ray.get(self.inbox.put.remote(message))  # one at a time: the driver sees them in order

    def add_lines(self, lines: list[bytes]) -> None:
        """The worker's lines as they arrive: the objective follows them."""
        with self._cond:
            self.stream.add(lines)
            if self.stream.rows > self.version:
                self.version = self.stream.rows
                self._cond.notify_all()

    def _result(self) -> dict[str, Any]:
        """The objective so far (each objective's value; the first one's step)."""
        result: dict[str, Any] = {}
        for i, metric in enumerate(self.objectives):
            value = self.stream.value(metric)
            if value is not None:
                result[objective_key(i)] = value[0]
                if i == 0:
                    result[STEP] = value[1]
                    self.last = value
        return result

    def step(self) -> dict[str, Any]:
        if self.spec.pbt is not None:
            return self._generation()
        with self._cond:
            self._cond.wait_for(lambda: self.ended or self.version > self._reported, STEP_WAIT)
            self._reported = self.version
            ended = self.ended
            n = self.stream.episodes
            result = self._result()
        if not ended and self.max_t is not None:
            n = min(n, self.max_t - 1)
        return {**result, "episodes": n, "done": ended}

    def _generation(self) -> dict[str, Any]:
        """PBT: one generation, a whole run of the worker from the last checkpoint."""
        self._start_run()
        with self._cond:
            while not self.ended:
                self._cond.wait(STEP_WAIT)
            result = self._result()
            checkpoint = self.stream.checkpoint
            episodes = self.stream.episodes
        self.parent_run_id = self.run_id
        if checkpoint is not None and Path(checkpoint).is_file():
            self.resume_path = checkpoint
        # a generation without a value (it failed) ends the trial
        return {**result, "episodes": episodes, "done": OBJECTIVE_KEY not in result}

    def save_checkpoint(self, checkpoint_dir: str) -> dict[str, Any] | None:
        """PBT: the last generation's checkpoint file, and the run that saved it. Otherwise
        nothing: an attempt that is retried starts its worker anew (a new run)."""
        if self.spec.pbt is None or self.resume_path is None:
            return {"run_id": getattr(self, "run_id", None)}
        name = Path(self.resume_path).name
        shutil.copyfile(self.resume_path, Path(checkpoint_dir) / name)
        (Path(checkpoint_dir) / "mosaic.json").write_text(
            json.dumps({"run_id": self.parent_run_id, "file": name})
        )
        return None

    def load_checkpoint(self, checkpoint: Any) -> None:
        """PBT: the next generation starts from this checkpoint (a better trial's, or this
        one's after a retry), linked to the run that saved it."""
        if self.spec.pbt is None or not isinstance(checkpoint, str):
            return
        meta_path = Path(checkpoint) / "mosaic.json"
        if not meta_path.is_file():
            return
        meta = json.loads(meta_path.read_text())
        kept = Path(self._own_dir) / f"{meta['run_id']}-{meta['file']}"
        shutil.copyfile(Path(checkpoint) / meta["file"], kept)  # Tune may remove its copy
        self.resume_path = str(kept)
        self.parent_run_id = meta["run_id"]

    def cleanup(self) -> None:
        """Stop the worker if it still runs (a scheduler, or the sweep interrupted) and wait
        for the rest of its output to be sent."""
        if self.thread is not None and self.thread.is_alive():
            self.stopped_at = self.last
            self.lifecycle.request_stop(STOP_REASON)
            self.thread.join(self.grace + 5.0)
        shutil.rmtree(self._own_dir, ignore_errors=True)


#: ``(trial_id, why)`` of attempts that died, from :class:`LostAttempts` to the engine.
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
        self.items: list[object] = []
        self.max_items = max_items
        self.cond = asyncio.Condition()

    async def put(self, item: object) -> None:
        async with self.cond:
            await self.cond.wait_for(lambda: len(self.items) < self.max_items)
            self.items.append(item)
            self.cond.notify_all()

    async def take(self, timeout: float) -> list[object]:
        async with self.cond:
            if not self.items:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self.cond.wait_for(lambda: bool(self.items)), timeout)
            items, self.items = self.items, []
            self.cond.notify_all()
            return items


def make_inbox(max_items: int = 256) -> Any:
    """Start the inbox actor on this (the driver's) node; returns its handle."""
    here = ray.get_runtime_context().get_node_id()
    actor = ray.remote(_Inbox).options(
        num_cpus=0,
        max_concurrency=1000,
        scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=False),
    )
    return actor.remote(max_items)
