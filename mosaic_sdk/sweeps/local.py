"""The ``local`` engine: trials as child processes of this machine, a bounded number at once."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from types import FrameType
from typing import Protocol

from mosaic_sdk.plugins import WorkerHandle
from mosaic_sdk.runner.supervision.signals import install_stop_handlers
from mosaic_sdk.runner.supervisor import RunSupervisor
from mosaic_sdk.sweeps.objective import metric_points, reduce_values
from mosaic_sdk.sweeps.spec import SweepSpec, Trial, trial_config
from mosaic_sdk.sweeps.store import SweepStore


class TrialSource(Protocol):
    """Where the pool's trials come from, and where their results go."""

    @property
    def total(self) -> int: ...

    def next(self) -> Trial | None: ...

    def report(self, key: str, value: float, step: int) -> bool: ...

    def finished(
        self,
        key: str,
        status: str,
        metric: float | None,
        values: Sequence[float | None] | None = None,
    ) -> None: ...


class ListSource:
    """A fixed list of trials, in order (sampler ``grid``)."""

    def __init__(self, trials: list[Trial]) -> None:
        self._trials = list(trials)
        self.total = len(trials)

    def next(self) -> Trial | None:
        return self._trials.pop(0) if self._trials else None

    def report(self, key: str, value: float, step: int) -> bool:
        return False

    def finished(
        self,
        key: str,
        status: str,
        metric: float | None,
        values: Sequence[float | None] | None = None,
    ) -> None:
        pass


@dataclass(eq=False)
class LocalEngine:
    """Run the trials of one sweep."""

    handle: WorkerHandle
    spec: SweepSpec
    sweeps: SweepStore
    sweep_id: str
    _: KW_ONLY
    runs_dir: Path | None = None
    grace: float = 10.0
    report: Callable[[str], None] = print

    def __post_init__(self) -> None:
        self.store_path = self.sweeps.runs.path
        self.cancel_reason: str | None = None
        self._lock = threading.Lock()  # the driver's store connection and the active set
        self._active: dict[str, RunSupervisor] = {}
        self._source: TrialSource = ListSource([])
        self._trial_of: dict[str, Trial] = {}
        #: run id -> (value, step, reason) of the trials the pruner stopped
        self._pruned: dict[str, tuple[float, int, str]] = {}
        self.errors: list[str] = []

    def cancel(self, reason: str = "the sweep was cancelled") -> None:
        """Start no more trials; cancel the running ones (a second call kills them)."""
        with self._lock:
            self.cancel_reason = self.cancel_reason or reason
            active = list(self._active.values())
        for sup in active:
            sup.cancel(reason)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.cancel(f"{signal.Signals(signum).name} received by mosaic sweep")

    def run(self, trials: list[Trial] | TrialSource) -> None:
        """Run ``trials`` (a list, or a source asked as threads free up) to the end (or until
        cancelled)."""
        self._source = ListSource(trials) if isinstance(trials, list) else trials
        restore = install_stop_handlers(self._on_signal)
        threads = [
            threading.Thread(target=self._pool_thread, name=f"mosaic-sweep-{i}", daemon=True)
            for i in range(min(self.spec.trials_at_once, self._source.total))
        ]
        if self.spec.pruner is not None:  # joined with the pool (it ends with it)
            threads.append(threading.Thread(target=self._monitor, args=(threads[:],), daemon=True))
        try:
            for t in threads:
                t.start()
            for t in threads:
                while t.is_alive():  # join with a timeout: signals are handled meanwhile
                    t.join(0.2)
        finally:
            restore()

    def _monitor(self, threads: list[threading.Thread]) -> None:
        """Feed the pruner: every ``pruner.interval`` s, each running trial's metric so far (its
        committed episodes or series points); a trial it rejects is stopped through its
        supervisor (SIGTERM, as Ctrl-C does) and stored ``pruned``."""
        pruner = self.spec.pruner
        assert pruner is not None
        while any(t.is_alive() for t in threads):
            time.sleep(pruner.interval)
            stop: list[tuple[RunSupervisor, str]] = []
            with self._lock:
                for run_id, sup in list(self._active.items()):
                    trial = self._trial_of.get(run_id)
                    if trial is None or run_id in self._pruned:
                        continue
                    try:
                        xs, values = metric_points(self.sweeps.runs, run_id, self.spec.metric)
                    except Exception:  # noqa: BLE001 - not yet readable: next round
                        continue
                    value = reduce_values(xs, values, self.spec.metric)
                    if value is None:
                        continue
                    step = int(xs[-1])
                    if self._source.report(trial.key, value, step):
                        reason = (
                            f"pruned by the {pruner.type} pruner at step {step} "
                            f"({self.spec.metric.name} {value:.4g})"
                        )
                        self._pruned[run_id] = (value, step, reason)
                        stop.append((sup, reason))
            for sup, reason in stop:
                sup.cancel(reason)

    def _pool_thread(self) -> None:
        while True:
            try:
                with self._lock:  # no new trial once cancelled
                    trial = None if self.cancel_reason is not None else self._source.next()
            except Exception as exc:  # noqa: BLE001 - the search failed: stop starting trials
                message = f"the search could not propose a trial: {type(exc).__name__}: {exc}"
                self.errors.append(message)
                self.report(f"mosaic: warning: {message}")
                return
            if trial is None:
                return
            try:
                self._run_trial(trial)
            except Exception as exc:  # noqa: BLE001 - one trial's problem must not end the sweep
                message = f"trial {trial.key} could not run: {type(exc).__name__}: {exc}"
                self.errors.append(message)
                self.report(f"mosaic: warning: {message}")

    def _run_trial(self, trial: Trial) -> None:
        sup = RunSupervisor(
            self.handle,
            trial_config(self.spec, trial.params),
            store=self.store_path,
            runs_dir=self.runs_dir,
            grace=self.grace,
            time_limit=self.spec.trial_timeout,
            stall_after=self.spec.trial_stall_after,
            on_stall="warn" if self.spec.trial_stall_after is None else "cancel",
        )
        with self._lock:
            self.sweeps.add_attempt(self.sweep_id, trial.key, sup.run_id, trial.params)
            self._active[sup.run_id] = sup
            self._trial_of[sup.run_id] = trial
            reason = self.cancel_reason
        if reason is not None:  # cancelled between the pick and now: stored as cancelled
            sup.cancel(reason)
        try:
            result = sup.run()
        finally:
            with self._lock:
                self._active.pop(sup.run_id, None)
        with self._lock:
            status, error = result.status, result.error
            pruned = self._pruned.get(result.run_id)
            if pruned is not None and status == "cancelled" and self.cancel_reason is None:
                status, error = "pruned", pruned[2]
                metric: float | None = pruned[0]  # the value it was stopped at
            else:
                metric = self.sweeps.metric_of_run(result.run_id, self.spec.metric)
            # several objectives: the study takes all
            others = [self.sweeps.metric_of_run(result.run_id, m) for m in self.spec.objectives[1:]]
            values = [metric, *others]
            self.sweeps.finish_attempt(result.run_id, status, metric, error)
            self._source.finished(trial.key, status, metric, values)
        shown = "-" if metric is None else f"{metric:.4g}"
        why = f" ({error})" if error and status != "completed" else ""
        counts = result.counts
        played = (  # a multi-agent run counts games, not its agents' episode lines
            f"{counts['episodes']} episodes"
            if counts.get("games") is None
            else f"{counts['games']} games ({counts['agent_episodes']} agent episodes)"
        )
        self.report(
            f"trial {trial.key} {status}{why}: {self.spec.metric.name} {shown}, "
            f"{played}; params {trial.params}; run {result.run_id}"
        )
