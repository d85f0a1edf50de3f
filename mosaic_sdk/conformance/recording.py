"""Launching a worker the way the runner does and recording everything it does."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mosaic_sdk.conformance.leftovers import (
    end_processes,
    processes_of,
    remove_shm_segments,
    shm_segments_of,
)
from mosaic_sdk.exit_status import exit_status
from mosaic_sdk.plugins import WorkerHandle
from mosaic_sdk.runner.supervision.launch import PreparedRun, ResolvedJob, prepare_run, resolve_job
from mosaic_sdk.runner.supervision.lifecycle import END_OF_OUTPUT_WAIT, RunLifecycle, RunObserver
from mosaic_sdk.runner.supervision.process import WorkerProcess
from mosaic_sdk.submit.dispatch import (
    DEFAULT_DAEMON,
    dispatcher_argv,
    dispatcher_env,
    module_launch,
)
from mosaic_sdk.telemetry.emitter import TERMINAL_EVENTS
from mosaic_sdk.telemetry.reader import TelemetryLine, classify_line

#: Seconds to wait for the first step line before SIGTERM is sent anyway (stop runs).
STOP_FALLBACK_DELAY = 2.0

#: A line is late when it arrives this long after the worker wrote it (``ts_unix_ns``)...
STREAM_LAG_SECONDS = 0.25
#: ...and later than this fraction of the time over which the run wrote its lines.
STREAM_LAG_FRACTION = 0.5
#: Without timestamps: a run streams when its first line arrives this many seconds before
#: exit, or this fraction of the whole run (launch to exit) before exit.
STREAM_LEAD_SECONDS = 0.25
STREAM_LEAD_FRACTION = 0.2

Probe = Callable[[str, WorkerProcess, threading.Event], Any]


@dataclass(frozen=True)
class RunPlan:
    """How to launch one recorded run.

    ``config_text`` replaces the prepared config file before the launch (a bad config);
    ``stop_on_step`` sends SIGTERM once the first step line has arrived (or
    :data:`STOP_FALLBACK_DELAY` s after the first line, or ``stop_at`` s after the launch,
    whichever comes first) and allows ``stop_grace`` seconds before the process group is
    killed; ``probe(run_id, process, done)`` runs in a thread while the
    worker runs and its return value is kept in ``RecordedRun.probe``.
    """

    kind: str
    run_id: str
    config: Mapping[str, Any]
    extra_env: Mapping[str, str] = field(default_factory=dict)
    argv_suffix: tuple[str, ...] = ()
    config_text: str | None = None
    stop_on_step: bool = False
    stop_at: float | None = None
    stop_grace: float = 10.0
    timeout: float = 120.0
    probe: Probe | None = None
    dispatched_as: str | None = None


@dataclass
class RecordedLine:
    text: str
    arrived: float
    line: TelemetryLine

    @property
    def event(self) -> str | None:
        return self.line.data.get("event") if self.line.kind == "lifecycle" else None


@dataclass
class RecordedRun:
    """Everything observed during one launch (times are ``time.monotonic()`` seconds)."""

    kind: str
    run_id: str
    argv: list[str] = field(default_factory=list)
    run_dir: Path | None = None
    launch_error: str | None = None
    exit_code: int | None = None
    started_at: float = 0.0
    #: ``time.time() - time.monotonic()`` during the run: turns arrival times into wall time.
    clock_offset: float = 0.0
    exited_at: float | None = None
    lines: list[RecordedLine] = field(default_factory=list)
    stderr: str = ""
    timed_out: bool = False
    #: Why the suite stopped the worker (the lifecycle's stop reason: the stop run's SIGTERM,
    #: "the worker closed its stdout but did not exit"...), None when it ended by itself.
    stopped_by: str | None = None
    signal_sent_at: float | None = None
    finished_before_signal: bool = False
    killed_after_grace: bool = False
    new_files: list[str] = field(default_factory=list)
    leftover_pids: list[int] = field(default_factory=list)
    leftover_shm: list[str] = field(default_factory=list)
    stdout_held_open: bool = False
    probe: Any = None
    probe_error: str | None = None

    @property
    def telemetry(self) -> list[RecordedLine]:
        return [r for r in self.lines if r.line.is_telemetry]

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [r.line.data for r in self.lines if r.line.kind == kind]

    def events(self) -> list[str]:
        return [r.event for r in self.lines if r.event is not None]

    def ending(self) -> str:
        """How the run ended, for a check's reason: its exit code, how long it ran, and who
        stopped it (``killed by signal SIGTERM (-15) after 12.4 s, stopped by the suite: ...``)."""
        text = exit_status(self.exit_code)
        if self.exited_at is not None and self.started_at:
            text += f" after {self.exited_at - self.started_at:.1f} s"
        if self.timed_out:
            text += ", killed: the run took longer than its time limit"
        elif self.stopped_by is not None:
            text += f", stopped by the suite: {self.stopped_by}"
        return text

    def stderr_excerpt(self, limit: int = 3) -> str:
        tail = [s for s in self.stderr.splitlines() if s.strip()][-limit:]
        return " | ".join(tail)


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def prepare_conformance_run(
    handle: WorkerHandle,
    job: ResolvedJob,
    *,
    runs_dir: Path,
    extra_env: Mapping[str, str] | None = None,
) -> PreparedRun:
    """Prepare a launch of the suite: the runner's own preparation, in the environment the
    platform's dispatcher gives a worker (``like_platform``)."""
    return prepare_run(handle, job, runs_dir=runs_dir, extra_env=extra_env, like_platform=True)


def record_run(
    handle: WorkerHandle, plan: RunPlan, *, runs_dir: Path, logs_dir: Path
) -> RecordedRun:
    """Launch the worker as ``plan`` says, record it, release its leftovers (never raises for a
    misbehaving worker: problems are recorded)."""
    run = RecordedRun(kind=plan.kind, run_id=plan.run_id)
    try:
        prepared = prepare_conformance_run(
            handle,
            resolve_job(plan.config).with_run_id(plan.run_id),
            runs_dir=runs_dir,
            extra_env=plan.extra_env,
        )
    except Exception as exc:  # noqa: BLE001 - a worker's hook may raise anything
        run.launch_error = f"preparing the launch failed: {type(exc).__name__}: {exc}"
        return run
    run.run_dir = prepared.run_dir
    if plan.config_text is not None:
        prepared.config_path.write_text(plan.config_text, encoding="utf-8")
    before = _files(prepared.run_dir)
    run.argv = prepared.argv + list(plan.argv_suffix)
    if plan.dispatched_as is not None:
        try:
            prepared, run.argv = as_dispatched(handle, prepared, plan.dispatched_as)
        except Exception as exc:  # noqa: BLE001 - a worker's hook may raise anything
            run.launch_error = str(exc)
            return run
    logs_dir.mkdir(parents=True, exist_ok=True)
    recorder = _Recorder(plan, run)
    lifecycle = RunLifecycle(
        handle,
        prepared,
        recorder,
        argv=run.argv,
        stderr_path=logs_dir / f"{plan.run_id}.stderr.log",
        tail_lines=200,
        grace=plan.stop_grace,
        timeout=plan.timeout,
        stop_after_eof=max(plan.stop_grace, END_OF_OUTPUT_WAIT) + 1,
    )
    recorder.lifecycle = lifecycle
    try:
        proc = lifecycle.start()
    except RuntimeError as exc:
        run.launch_error = str(exc)
        return run
    run.started_at = proc.started_at
    run.clock_offset = time.time() - time.monotonic()
    done = threading.Event()
    prober = _start_probe(plan, run, proc, done)
    try:
        lifecycle.supervise()
    finally:
        done.set()
        if prober is not None:
            prober.join(timeout=5)
        _release(lifecycle, plan, run)
    run.new_files = sorted(_files(prepared.run_dir) - before)
    return run


def as_dispatched(
    handle: WorkerHandle, prepared: PreparedRun, worker_id: str
) -> tuple[PreparedRun, list[str]]:
    """``prepared`` launched as MOSAIC's dispatcher launches: its argv and environment. The
    run directory it names (``MOSAIC_RUN_DIR``) is not created, as the daemon creates none."""
    launch = module_launch(handle, prepared.config)
    argv = dispatcher_argv(launch, prepared.config_path, worker_id, DEFAULT_DAEMON)
    platform_dir = prepared.run_dir / "platform" / prepared.run_id
    env = dispatcher_env(
        prepared.env, prepared.config_path, worker_id, {"MOSAIC_RUN_DIR": str(platform_dir)}
    )
    return dataclasses.replace(prepared, env=env), argv


class _Recorder(RunObserver):
    """Keeps every line with its arrival time and sends the stop of a stop run."""

    def __init__(self, plan: RunPlan, run: RecordedRun) -> None:
        self.plan = plan
        self.run = run
        self.lifecycle: RunLifecycle | None = None
        self.fallback_at: float | None = None

    def on_lines(self, lines: list[bytes], arrived: float, eof: bool, partial: bool) -> None:
        run, plan = self.run, self.plan
        for raw in lines:
            text = raw.decode("utf-8", errors="replace")
            rec = RecordedLine(text, arrived, classify_line(text))
            run.lines.append(rec)
            if not plan.stop_on_step or run.signal_sent_at is not None:
                continue
            if rec.event in TERMINAL_EVENTS:
                run.finished_before_signal = True
            elif rec.line.kind == "step":
                self._stop()
            elif self.fallback_at is None:
                self.fallback_at = arrived + STOP_FALLBACK_DELAY
        if eof and plan.stop_on_step and run.signal_sent_at is None:
            run.finished_before_signal = True  # stdout closed before anything to react to

    def on_check(self, now: float) -> None:
        plan = self.plan
        fallen_back = self.fallback_at is not None and now >= self.fallback_at
        late = plan.stop_at is not None and now - self.run.started_at >= plan.stop_at
        if plan.stop_on_step and (fallen_back or late):
            self._stop()  # once, and not after the run finished by itself

    def _stop(self) -> None:
        if self.run.finished_before_signal or self.run.signal_sent_at is not None:
            return
        assert self.lifecycle is not None
        self.run.signal_sent_at = time.monotonic()
        self.lifecycle.request_stop("the conformance suite stops this run")

    def on_exit_before_eof(self) -> None:
        # The worker is gone but something it started still holds stdout open: what is
        # there now is left behind (the lifecycle reaps it next).
        self.run.leftover_pids = processes_of(self.plan.run_id)

    def on_output_held_open(self) -> None:
        self.run.stdout_held_open = True
        end_processes(processes_of(self.plan.run_id))


def _start_probe(
    plan: RunPlan, run: RecordedRun, proc: WorkerProcess, done: threading.Event
) -> threading.Thread | None:
    probe = plan.probe
    if probe is None:
        return None

    def run_probe() -> None:
        try:
            run.probe = probe(plan.run_id, proc, done)
        except Exception as exc:  # noqa: BLE001 - recorded for the check to report
            run.probe_error = f"{type(exc).__name__}: {exc}"

    thread = threading.Thread(target=run_probe, name=f"conformance-probe-{proc.pid}", daemon=True)
    thread.start()
    return thread


def _release(lifecycle: RunLifecycle, plan: RunPlan, run: RecordedRun) -> None:
    proc = lifecycle.proc
    assert proc is not None
    if proc.poll() is not None and not run.leftover_pids:
        run.leftover_pids = processes_of(plan.run_id)
    run.exit_code = lifecycle.finish()
    run.exited_at = proc.exited_at
    run.timed_out = lifecycle.timed_out
    run.stopped_by = lifecycle.stop_reason
    run.killed_after_grace = lifecycle.killed_after_grace
    if not run.leftover_pids and not run.timed_out:
        run.leftover_pids = processes_of(plan.run_id)
    end_processes(processes_of(plan.run_id))
    run.leftover_shm = shm_segments_of(plan.run_id)
    lifecycle.cleanup(run.exit_code)
    remove_shm_segments(shm_segments_of(plan.run_id))
    run.stderr = proc.stderr_text()
    lifecycle.close()


def streaming(run: RecordedRun) -> tuple[bool, str]:
    """Whether the run's lines arrived while it ran, and the measurement that says so: the
    first line's lag behind its write time (:func:`written_at`) when the lines say it, else
    its lead on the process's exit (a worker that prints everything at the end delivers its
    first line a whole run late)."""
    stamped = [
        (r.arrived + run.clock_offset, written)
        for r in run.telemetry
        if (written := written_at(r.line.data)) is not None
    ]
    if len(stamped) >= 2:
        lag = stamped[0][0] - stamped[0][1]
        span = stamped[-1][1] - stamped[0][1]
        note = (
            f"first line arrived {lag:.2f} s after it was written (lines written over {span:.2f} s)"
        )
        return lag <= max(STREAM_LAG_SECONDS, STREAM_LAG_FRACTION * span), note
    if run.exited_at is None or not run.lines:
        return False, "the exit time of the worker was not observed"
    lead = run.exited_at - run.lines[0].arrived
    span = run.exited_at - run.started_at
    note = f"first line {lead:.2f} s before exit (run {span:.2f} s)"
    return lead >= STREAM_LEAD_SECONDS or lead >= STREAM_LEAD_FRACTION * span, note


def written_at(data: Mapping[str, object]) -> float | None:
    """When the worker says it wrote a line (wall-clock seconds): ``ts_unix_ns``, else a
    lifecycle line's ``timestamp``; None when the line says neither."""
    ts = data.get("ts_unix_ns")
    if isinstance(ts, int) and not isinstance(ts, bool):
        return ts / 1e9
    seconds = data.get("timestamp")
    if isinstance(seconds, (int, float)) and not isinstance(seconds, bool):
        return float(seconds)
    return None
