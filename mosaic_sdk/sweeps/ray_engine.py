"""The ``ray`` engine: trials through Ray Tune, on a running cluster or a local Ray instance.

The driver (this process) holds the store. Tune places each trial
(:class:`~mosaic_sdk.sweeps.ray_trial.MosaicTrial`) on a node, where it runs the worker under
the runner's supervision and sends its output to the driver's inbox actor; a thread here
takes it and stores it through a :class:`~mosaic_sdk.sweeps.collector.Collector`. The search
space is Tune's own (``tune.grid_search``, ``tune.choice``, ``tune.uniform``,
``tune.loguniform``; ``num_samples`` = the spec's ``samples``), the scheduler Tune's
``ASHAScheduler`` (counted in episodes), retries Tune's ``FailureConfig(max_failures)``.

Faults: an attempt whose actor dies (its node lost) is stored ``failed`` with what it had sent,
and Tune starts the trial again (a new attempt, a new run). Ctrl-C (SIGINT or SIGTERM) ends
the sweep as Tune ends an interrupted experiment: its state is saved, every running trial is
stopped (its worker gets SIGTERM, then SIGKILL) and stored ``cancelled``; ``--resume`` hands
the saved experiment to ``Tuner.restore``, which runs what had not finished.
"""

from __future__ import annotations

import os
import signal
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mosaic_sdk.plugins import WorkerHandle
from mosaic_sdk.runner.storage.paths import runs_dir_for
from mosaic_sdk.sweeps.collector import Collector
from mosaic_sdk.sweeps.spec import SweepSpec
from mosaic_sdk.sweeps.store import SweepStore


def param_space(spec: SweepSpec) -> dict[str, Any]:
    """The spec's search space in Tune's terms."""
    from ray import tune

    makers: dict[str, Callable[[list[Any]], Any]] = {
        "grid": tune.grid_search,
        "choice": tune.choice,
        "uniform": lambda v: tune.uniform(v[0], v[1]),
        "loguniform": lambda v: tune.loguniform(v[0], v[1]),
    }
    out = {}
    for key, dist in spec.space.items():
        kind, values = next(iter(dist.items()))
        out[key] = makers[kind](values)
    if spec.seeds:
        out["seed"] = tune.grid_search(spec.seeds)
    return out


class RayEngine:
    """Run one sweep through Ray Tune (see the module docstring)."""

    def __init__(
        self,
        handle: WorkerHandle,
        spec: SweepSpec,
        sweeps: SweepStore,
        sweep_id: str,
        *,
        address: str | None = None,
        runs_dir: Path | None = None,
        grace: float = 10.0,
        report: Callable[[str], None] = print,
        num_cpus: int | None = None,
        ray_temp_dir: str | None = None,
        storage_dir: Path | None = None,
        trial_cpus: float = 1.0,
    ) -> None:
        self.handle = handle
        self.spec = spec
        self.sweeps = sweeps
        self.sweep_id = sweep_id
        self.address = address
        self.runs_dir = runs_dir
        # Tune's end of an experiment waits 5 s for trials to stop: stay inside it.
        self.grace = min(grace, 3.0)
        self.report = report
        self.num_cpus = num_cpus
        self.ray_temp_dir = ray_temp_dir
        self.storage_dir = storage_dir or runs_dir_for(sweeps.runs.path) / "ray"
        self.trial_cpus = trial_cpus
        self.interrupted = False

    def run(self, resume: bool = False) -> bool:
        """Run the sweep to its end; True when it was interrupted."""
        import ray

        started = False
        if not ray.is_initialized():
            if self.address is not None:
                ray.init(address=self.address, log_to_driver=False)
            else:
                temp = self.ray_temp_dir or tempfile.mkdtemp(prefix="mosaic-ray-")
                ray.init(
                    num_cpus=self.num_cpus or max(2, self.spec.trials_at_once),
                    include_dashboard=False,
                    _temp_dir=temp,
                    log_to_driver=False,
                )
            started = True
        collector = Collector(
            self.sweeps.runs.path,
            self.handle.name,
            self.sweep_id,
            self.spec.metric,
            report=self.report,
            pm=self.handle.pm,
        )
        restore = self._install_signal_handlers(collector)
        try:
            return self._run(collector, resume)
        finally:
            restore()
            collector.close()
            if started:
                ray.shutdown()

    def _run(self, collector: Collector, resume: bool) -> bool:
        from ray import tune

        from mosaic_sdk.sweeps.ray_trial import NOTICES, MosaicTrial, make_inbox

        # A trial reports its metric once it has episodes: results before that lack it.
        os.environ.setdefault("TUNE_DISABLE_STRICT_METRIC_CHECKING", "1")
        # Tune's own progress tables would mix with our output (and --json): verbose=0 is
        # silent only in its classic reporter.
        os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
        while not NOTICES.empty():  # left by an earlier sweep of this process
            NOTICES.get_nowait()
        inbox = make_inbox()
        setup_args = {
            "inbox": inbox,
            "worker": self.handle.name,
            "spec": self.spec,
            "metric": self.spec.metric.name,
            "last": self.spec.metric.last,
            "grace": self.grace,
            "runs_dir": None if self.runs_dir is None else str(self.runs_dir),
            "max_t": None if self.spec.scheduler is None else self.spec.scheduler.max_t,
        }
        trainable = tune.with_resources(
            tune.with_parameters(MosaicTrial, setup_args=setup_args), {"cpu": self.trial_cpus}
        )
        if resume:
            path = self.sweeps.get_sweep(self.sweep_id)["engine_state"]
            tuner = tune.Tuner.restore(path, trainable=trainable, resume_errored=False)
        else:
            tuner = self._new_tuner(trainable)
            self.sweeps.set_engine_state(self.sweep_id, str(self.storage_dir / self.sweep_id))
        stop = threading.Event()
        pump = threading.Thread(
            target=self._pump,
            args=(inbox, collector, stop),
            name="mosaic-sweep-inbox",
            daemon=True,
        )
        pump.start()
        try:
            tuner.fit()
        finally:
            stop.set()
            pump.join()
            self._drain(inbox, collector)
            for run_id in collector.open_attempts():
                if self.interrupted:
                    collector.lost(run_id, "the sweep was interrupted", status="cancelled")
                else:
                    collector.lost(run_id, "the trial ended without its worker's end")
        return self.interrupted

    def _new_tuner(self, trainable: Any) -> Any:
        from ray import tune
        from ray.tune.schedulers import ASHAScheduler

        from mosaic_sdk.sweeps.ray_trial import LostAttempts

        spec = self.spec
        scheduler = None
        if spec.scheduler is not None:
            scheduler = ASHAScheduler(
                time_attr="episodes",
                max_t=spec.scheduler.max_t,
                grace_period=spec.scheduler.grace_period,
                reduction_factor=spec.scheduler.reduction_factor,
            )
        return tune.Tuner(
            trainable,
            param_space=param_space(spec),
            tune_config=tune.TuneConfig(
                metric=spec.metric.name,
                mode=spec.metric.mode,
                num_samples=spec.samples,
                max_concurrent_trials=spec.trials_at_once,
                scheduler=scheduler,
            ),
            run_config=tune.RunConfig(
                name=self.sweep_id,
                storage_path=str(self.storage_dir),
                failure_config=tune.FailureConfig(max_failures=spec.max_failures),
                # No trial checkpoints: a retried attempt starts its worker anew, so the
                # nodes need no storage shared with the driver.
                checkpoint_config=tune.CheckpointConfig(
                    checkpoint_frequency=0, checkpoint_at_end=False
                ),
                callbacks=[LostAttempts()],
                verbose=0,
            ),
        )

    # -- the inbox ---------------------------------------------------------------------------
    def _pump(self, inbox: Any, collector: Collector, stop: threading.Event) -> None:
        import ray

        while not stop.is_set():
            collector.handle(ray.get(inbox.take.remote(0.2)))
            self._apply_notices(inbox, collector)

    def _drain(self, inbox: Any, collector: Collector) -> None:
        import ray

        while items := ray.get(inbox.take.remote(0.0)):
            collector.handle(items)
        self._apply_notices(inbox, collector)

    def _apply_notices(self, inbox: Any, collector: Collector) -> None:
        """Close the attempts of trials Tune saw die, after storing all they had sent."""
        import ray

        from mosaic_sdk.sweeps.ray_trial import NOTICES

        notices = []
        while not NOTICES.empty():
            notices.append(NOTICES.get_nowait())
        if not notices:
            return
        collector.handle(ray.get(inbox.take.remote(0.0)))  # what the dead sent before dying
        for trial_key, why in notices:
            for run_id in collector.open_attempts(trial_key):
                collector.lost(run_id, f"this attempt of trial {trial_key} was lost: {why}")

    def _install_signal_handlers(self, collector: Collector) -> Callable[[], None]:
        """SIGINT/SIGTERM: mark the sweep interrupted, then let Tune end the experiment as on
        its own Ctrl-C (it listens to SIGUSR1 for that; its SIGINT handler is off)."""
        if threading.current_thread() is not threading.main_thread():
            return lambda: None
        previous_env = os.environ.get("TUNE_DISABLE_SIGINT_HANDLER")
        os.environ["TUNE_DISABLE_SIGINT_HANDLER"] = "1"

        def on_signal(signum: int, frame: Any) -> None:
            if self.interrupted:  # a second Ctrl-C: Tune's own handler is gone; stop now
                raise KeyboardInterrupt
            self.interrupted = True
            collector.sweep_cancelled = True
            self.report(f"mosaic sweep: {signal.Signals(signum).name}: stopping every trial")
            signal.raise_signal(signal.SIGUSR1)

        previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}

        def restore() -> None:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            if previous_env is None:
                os.environ.pop("TUNE_DISABLE_SIGINT_HANDLER", None)
            else:
                os.environ["TUNE_DISABLE_SIGINT_HANDLER"] = previous_env

        return restore


__all__ = ["RayEngine", "param_space"]
