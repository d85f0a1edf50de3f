"""``run_sweep``: check a spec, record the sweep, hand its trials to an engine, finish it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mosaic_sdk.plugins import WorkerHandle
from mosaic_sdk.runner.storage import private
from mosaic_sdk.runner.storage.ids import new_run_id
from mosaic_sdk.runner.storage.paths import default_store_path
from mosaic_sdk.runner.storage.store import RunStore
from mosaic_sdk.runner.supervisor import resolve_worker
from mosaic_sdk.sweeps.local import LocalEngine
from mosaic_sdk.sweeps.search import check_history, check_sampler
from mosaic_sdk.sweeps.spec import (
    SpecError,
    SweepSpec,
    check_against_model,
    expand_trials,
    parse_spec,
)
from mosaic_sdk.sweeps.store import SweepStore

ENGINES = ("local", "ray")


@dataclass
class SweepResult:
    sweep_id: str
    status: str
    store_path: Path
    trials: list[dict[str, Any]]

    @property
    def exit_code(self) -> int:
        """0 ran to the end, 130 cancelled, 1 when no trial completed."""
        if self.status == "cancelled":
            return 130
        return 0 if any(t["status"] == "completed" for t in self.trials) else 1


def check_spec(
    worker: str | WorkerHandle, raw: Mapping[str, object]
) -> tuple[WorkerHandle, SweepSpec]:
    """The worker's handle and the parsed spec, checked against its config model."""
    spec = parse_spec(raw)
    name = worker if isinstance(worker, str) else worker.name
    if spec.worker is not None and spec.worker != name:
        raise SpecError([f"worker: the spec is for {spec.worker!r}, not {name!r}"])
    handle = resolve_worker(worker)
    check_against_model(spec, handle.config_model())
    return handle, spec


def check_engine(spec: SweepSpec, engine: str, handle: WorkerHandle | None = None) -> str:
    """The sampler the sweep runs on ``engine`` (``SpecError`` when it cannot run there, or
    PBT's worker does not checkpoint or lacks ``pbt.resume_key``)."""
    sampler = check_sampler(spec, engine)
    if spec.pbt is not None and handle is not None:
        _, capabilities = handle.describe()
        if not capabilities.supports_checkpointing:
            raise SpecError(
                f"pbt: worker {handle.name!r} does not declare supports_checkpointing; "
                "population-based training resumes trials from checkpoints"
            )
        fields = getattr(handle.config_model(), "model_fields", {})
        if spec.pbt.resume_key not in fields:
            raise SpecError(
                f"pbt.resume_key: worker {handle.name!r} has no config key "
                f"{spec.pbt.resume_key!r} to resume from a checkpoint; give the key that "
                "takes a checkpoint's path (see mosaic workers show)"
            )
    return sampler


def run_sweep(
    worker: str | WorkerHandle,
    raw: Mapping[str, object],
    *,
    engine: str = "local",
    store: Path | str | None = None,
    runs_dir: Path | None = None,
    address: str | None = None,
    resume: str | None = None,
    grace: float = 10.0,
    report: Callable[[str], None] = print,
    ray_options: Mapping[str, Any] | None = None,
) -> SweepResult:
    """Run a sweep of ``worker`` (a name, or a handle whose plugins hear of every trial) to
    the end; :class:`SpecError`, ``PluginError`` or ``StoreError`` before anything starts."""
    if engine not in ENGINES:
        raise SpecError([f"--engine {engine!r}: give one of {', '.join(ENGINES)}"])
    if store is None:
        store = default_store_path()
        private.make_dir(store.parent)
    runs = RunStore(Path(store))
    try:
        sweeps = SweepStore(runs)
        if resume is not None:
            sweep_id = sweeps.resolve(resume)
            row = sweeps.get_sweep(sweep_id)
            name = worker if isinstance(worker, str) else worker.name
            if row["worker"] != name:
                raise SpecError(
                    [f"--resume {resume}: that sweep ran worker {row['worker']!r}, not {name!r}"]
                )
            if row["engine"] != engine:
                raise SpecError(
                    [f"--resume {resume}: that sweep ran on --engine {row['engine']}; give it"]
                )
            handle, spec = check_spec(worker, row["spec"])
            sampler = check_engine(spec, engine, handle)
            # a damaged row is refused here, before the sweep is touched (its status kept)
            history = sweeps.trials(sweep_id)
            if engine == "local" and sampler != "grid":
                check_history(sweep_id, history, spec)
            lost = sweeps.mark_lost(sweep_id)
            sweeps.set_status(sweep_id, "running")
            report(f"resuming sweep {sweep_id}")
            if lost:
                report(f"{lost} attempt(s) whose driver is gone are marked lost; they run again")
        else:
            handle, spec = check_spec(worker, raw)
            sampler = check_engine(spec, engine, handle)
            sweep_id = new_run_id()
            stored = spec.to_dict()
            stored["sampler"] = sampler  # the default resolved: --resume runs the same search
            sweeps.create_sweep(sweep_id, handle.name, engine, stored, spec.metric)
            report(
                f"sweep {sweep_id} of {handle.name} on engine {engine}, sampler {sampler}; "
                f"store {runs.path}"
            )
        try:
            if engine == "local":
                local = LocalEngine(
                    handle, spec, sweeps, sweep_id, runs_dir=runs_dir, grace=grace, report=report
                )
                cancelled = _run_local(local, sampler, resume is not None)
            else:
                # Optional: Ray Tune (the sweeps-ray extra).
                from mosaic_sdk.sweeps.ray_engine import RayEngine

                ray = RayEngine(
                    handle,
                    spec,
                    sweeps,
                    sweep_id,
                    sampler=sampler,
                    address=address,
                    runs_dir=runs_dir,
                    grace=grace,
                    report=report,
                    **dict(ray_options or {}),
                )
                cancelled = ray.run(resume=resume is not None)
        except BaseException as exc:
            sweeps.set_status(sweep_id, "failed", f"{type(exc).__name__}: {exc}")
            raise
        status = "cancelled" if cancelled else "completed"
        sweeps.set_status(sweep_id, status)
        return SweepResult(sweep_id, status, runs.path, sweeps.trials(sweep_id))
    finally:
        runs.close()


def _run_local(local: LocalEngine, sampler: str, resuming: bool) -> bool:
    """Run the trials on the local engine; True when the sweep was cancelled."""
    spec, sweeps, sweep_id, report = local.spec, local.sweeps, local.sweep_id, local.report
    if sampler != "grid":
        # Optional: Optuna (the search extra), only for a sampler that learns.
        from mosaic_sdk.sweeps.search import OptunaSource

        def score(run_id: str) -> list[float | None]:
            return [sweeps.metric_of_run(run_id, m) for m in spec.objectives]

        history = sweeps.trials(sweep_id) if resuming else ()
        source = OptunaSource(spec, sampler, history, score)
        if resuming:
            report(
                f"{source.resumed} of {source.total} trials finished; the search "
                f"({sampler}) resumes from them"
            )
        local.run(source)
        return local.cancel_reason is not None
    trials = expand_trials(spec)
    done = sweeps.finished_keys(sweep_id) if resuming else set()
    todo = [t for t in trials if t.key not in done]
    if resuming:
        report(f"{len(trials) - len(todo)} of {len(trials)} trials finished; running {len(todo)}")
    local.run(todo)
    return local.cancel_reason is not None
