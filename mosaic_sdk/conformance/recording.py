"""Launching a worker the way the runner does and recording everything it does.

:func:`record_run` prepares the launch with :func:`mosaic_sdk.runner.launch.prepare_run`,
starts it with :class:`mosaic_sdk.runner.process.WorkerProcess`, and keeps every stdout line
with its arrival time, the exit code and time, stderr, the files the run added to its run
directory, and what it left behind (processes, shared-memory segments). Then it releases
those leftovers (``mosaic_run_cleanup``, the process group, segments named after the run id),
so that checks can report them without the machine keeping them.
"""

from __future__ import annotations

import json
import signal
import subprocess
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
from mosaic_sdk.plugins import WorkerHandle
from mosaic_sdk.runner.launch import prepare_run
from mosaic_sdk.runner.process import WorkerProcess
from mosaic_sdk.telemetry.emitter import TERMINAL_EVENTS
from mosaic_sdk.telemetry.reader import TelemetryLine, classify_line

#: Seconds to wait for the first step line before SIGTERM is sent anyway (stop runs).
STOP_FALLBACK_DELAY = 2.0
#: Seconds to wait for stdout to close once the worker has exited.
EOF_GRACE = 2.0

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
    exited_at: float | None = None
    lines: list[RecordedLine] = field(default_factory=list)
    stderr: str = ""
    timed_out: bool = False
    signal_sent_at: float | None = None
    finished_before_signal: bool = False
    killed_after_grace: bool = False
    new_files: list[str] = field(default_factory=list)
    leftover_pids: list[int] = field(default_factory=list)
    leftover_shm: list[str] = field(default_factory=list)
    stdout_held_open: bool = False
    probe: Any = None
    probe_error: str | None = None
    cleanup_errors: list[str] = field(default_factory=list)

    @property
    def telemetry(self) -> list[RecordedLine]:
        return [r for r in self.lines if r.line.is_telemetry]

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [r.line.data for r in self.lines if r.line.kind == kind]

    def events(self) -> list[str]:
        return [r.event for r in self.lines if r.event is not None]

    @property
    def first_line_at(self) -> float | None:
        return self.lines[0].arrived if self.lines else None

    def stderr_excerpt(self, limit: int = 3) -> str:
        tail = [s for s in self.stderr.splitlines() if s.strip()][-limit:]
        return " | ".join(tail)


def _files(root: Path) -> set[str]:
    if not root.is_dir():
        return set()
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def record_run(
    handle: WorkerHandle, plan: RunPlan, *, runs_dir: Path, logs_dir: Path
) -> RecordedRun:
    """Launch the worker as ``plan`` says, record it, release its leftovers (never raises for a
    misbehaving worker: problems are recorded)."""
    run = RecordedRun(kind=plan.kind, run_id=plan.run_id)
    try:
        prepared = prepare_run(
            handle,
            plan.config,
            run_id=plan.run_id,
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
    logs_dir.mkdir(parents=True, exist_ok=True)
    try:
        proc = WorkerProcess(
            run.argv,
            env=prepared.env,
            cwd=prepared.cwd,
            stderr_path=logs_dir / f"{plan.run_id}.stderr.log",
            tail_lines=200,
        )
    except RuntimeError as exc:
        run.launch_error = str(exc)
        return run
    run.started_at = proc.started_at
    try:
        _supervise(proc, plan, run)
    finally:
        _release(handle, proc, plan, run)
    run.new_files = sorted(_files(prepared.run_dir) - before)
    return run


def _supervise(proc: WorkerProcess, plan: RunPlan, run: RecordedRun) -> None:
    done = threading.Event()
    eof = threading.Event()
    stopper: list[threading.Thread] = []
    lock = threading.Lock()

    def watchdog() -> None:
        if not done.wait(plan.timeout):
            run.timed_out = True
            proc.kill_group(signal.SIGKILL)
            end_processes(processes_of(plan.run_id), grace=0.5)

    def exit_watcher() -> None:
        proc.wait()
        if not eof.wait(EOF_GRACE):
            # The worker is gone but something it started still holds stdout open.
            run.stdout_held_open = True
            run.leftover_pids = processes_of(plan.run_id)
            proc.reap_group()
            end_processes(processes_of(plan.run_id))

    def send_stop() -> None:
        with lock:
            if run.signal_sent_at is not None or run.finished_before_signal:
                return
            run.signal_sent_at = time.monotonic()

        def stop() -> None:
            try:
                proc.stop(grace=plan.stop_grace)
            except subprocess.SubprocessError:
                pass
            run.killed_after_grace = (
                proc.exited_at is not None
                and run.signal_sent_at is not None
                and proc.exited_at - run.signal_sent_at >= plan.stop_grace
            )

        t = threading.Thread(target=stop, name=f"conformance-stop-{proc.pid}", daemon=True)
        stopper.append(t)
        t.start()

    threads = [
        threading.Thread(target=watchdog, daemon=True),
        threading.Thread(target=exit_watcher, daemon=True),
    ]
    if plan.probe is not None:
        probe = plan.probe

        def run_probe() -> None:
            try:
                run.probe = probe(plan.run_id, proc, done)
            except Exception as exc:  # noqa: BLE001 - recorded for the check to report
                run.probe_error = f"{type(exc).__name__}: {exc}"

        threads.append(threading.Thread(target=run_probe, daemon=True))
    for t in threads:
        t.start()
    fallback: threading.Timer | None = None
    deadline: threading.Timer | None = None
    if plan.stop_on_step and plan.stop_at is not None:
        deadline = threading.Timer(plan.stop_at, send_stop)
        deadline.daemon = True
        deadline.start()
    try:
        for raw, arrived in proc.lines():
            text = raw.decode("utf-8", errors="replace")
            rec = RecordedLine(text, arrived, classify_line(text))
            run.lines.append(rec)
            if not plan.stop_on_step or run.signal_sent_at is not None:
                continue
            if rec.event in TERMINAL_EVENTS:
                with lock:
                    if run.signal_sent_at is None:
                        run.finished_before_signal = True
            elif rec.line.kind == "step":
                send_stop()
            elif fallback is None:
                fallback = threading.Timer(STOP_FALLBACK_DELAY, send_stop)
                fallback.daemon = True
                fallback.start()
        eof.set()
        if plan.stop_on_step and run.signal_sent_at is None and not run.finished_before_signal:
            run.finished_before_signal = True  # stdout closed before anything to react to
        try:
            run.exit_code = proc.wait(timeout=max(plan.stop_grace, EOF_GRACE) + 1)
        except subprocess.TimeoutExpired:
            # stdout closed but the worker keeps running: stop it the runner's way.
            run.exit_code = proc.stop(grace=plan.stop_grace)
    finally:
        for timer in (fallback, deadline):
            if timer is not None:
                timer.cancel()
        for t in stopper:
            t.join(timeout=plan.stop_grace + 5)
        done.set()
        eof.set()
        for t in threads:
            t.join(timeout=5)
    run.exited_at = proc.exited_at


def _release(handle: WorkerHandle, proc: WorkerProcess, plan: RunPlan, run: RecordedRun) -> None:
    if proc.poll() is None:
        proc.kill_group(signal.SIGKILL)
        proc.wait()
    if not run.leftover_pids:
        run.leftover_pids = processes_of(plan.run_id)
    proc.reap_group()
    end_processes(processes_of(plan.run_id))
    run.leftover_shm = shm_segments_of(plan.run_id)
    try:
        handle.pm.hook.mosaic_run_cleanup(
            run_id=plan.run_id,
            worker=handle.name,
            run_dir=run.run_dir,
            exit_code=run.exit_code,
        )
    except Exception as exc:  # noqa: BLE001 - reported, never fatal
        run.cleanup_errors.append(f"mosaic_run_cleanup raised {type(exc).__name__}: {exc}")
    remove_shm_segments(shm_segments_of(plan.run_id))
    run.stderr = proc.stderr_text()
    proc.close()


def dump_run(run: RecordedRun) -> str:
    """A JSON summary of a recorded run (for debugging a failing check)."""
    return json.dumps(
        {
            "kind": run.kind,
            "run_id": run.run_id,
            "argv": run.argv,
            "exit_code": run.exit_code,
            "lines": len(run.lines),
            "events": run.events(),
            "stderr": run.stderr_excerpt(10),
            "leftover_pids": run.leftover_pids,
            "leftover_shm": run.leftover_shm,
            "new_files": run.new_files,
        },
        indent=2,
    )


__all__ = ["RecordedLine", "RecordedRun", "RunPlan", "dump_run", "record_run"]
