"""The worker's own ``--dry-run``, run by ``mosaic run`` before it claims a run id (a config
only the dry run refuses would otherwise leave a failed run in the store)."""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mosaic_sdk.exit_status import describe_exit
from mosaic_sdk.plugins import WorkerHandle
from mosaic_sdk.runner.supervision.launch import ResolvedJob, prepare_run, resolve_job
from mosaic_sdk.runner.supervision.lifecycle import RunLifecycle

#: Seconds a dry run may take before it is stopped (a worker that ignores ``--dry-run``).
DEFAULT_TIMEOUT = 120.0
#: How much of the worker's stderr a refusal quotes.
MAX_QUOTE = 2000
#: Stderr kept from a dry run (a chatty worker's first and last words are enough).
MAX_STDERR = 1 << 20


@dataclass(frozen=True)
class PreflightResult:
    """What the dry run said: ``ok`` (exit 0), else ``problem`` is one readable sentence."""

    ok: bool
    exit_code: int | None
    seconds: float
    stderr: str
    problem: str | None = None


class _StderrKeeper:
    """The dry run's stderr, bounded; fed from the lifecycle's stderr thread."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._size = 0
        self._lock = threading.Lock()

    def __call__(self, lines: list[bytes], partial: bool) -> None:
        with self._lock:
            for line in lines:
                if self._size >= MAX_STDERR:
                    return
                self._parts.append(line)
                self._size += len(line) + 1

    def text(self) -> str:
        with self._lock:
            return b"\n".join(self._parts).decode("utf-8", "replace")


def preflight(
    handle: WorkerHandle,
    config_data: Mapping[str, Any] | ResolvedJob | None,
    *,
    run_id: str | None = None,
    extra_env: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> PreflightResult:
    """Run ``handle``'s ``--dry-run`` on the config, prepared in a temporary directory (stdout
    dropped, no ``mosaic_run_cleanup``); ``ConfigError`` when the config model refuses it
    already, ``OSError`` when the worker's command cannot be started."""
    scratch = Path(tempfile.mkdtemp(prefix="mosaic-preflight-"))
    try:
        job = resolve_job(config_data, run_id=run_id)
        prepared = prepare_run(handle, job, runs_dir=scratch, extra_env=extra_env)
        stderr = _StderrKeeper()
        lifecycle = RunLifecycle(
            handle,
            prepared,
            argv=[*prepared.argv, "--dry-run"],
            on_stderr_lines=stderr,
            timeout=timeout,
        )
        started = time.monotonic()
        try:
            try:
                lifecycle.start()
            except RuntimeError as exc:
                raise OSError(str(exc)) from exc
            lifecycle.supervise()
        finally:
            code = lifecycle.finish()  # kills an interrupted dry run, reaps what it left
            lifecycle.close()
        seconds = time.monotonic() - started
        said = stderr.text()
        if lifecycle.timed_out:
            why = f"its dry run did not end within {timeout:g}s (does the worker handle --dry-run?)"
            return PreflightResult(False, None, seconds, said, why)
        if code == 0:
            return PreflightResult(True, 0, seconds, said)
        code = -1 if code is None else code
        return PreflightResult(False, code, seconds, said, _refusal(code, said))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _refusal(code: int, stderr: str) -> str:
    """The worker's reason: its ``error:`` lines, else the last lines of its stderr."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.lower().startswith("error")]
    quoted = "; ".join(errors or lines[-3:])
    if len(quoted) > MAX_QUOTE:
        quoted = quoted[: MAX_QUOTE - 3] + "..."
    return f"its dry run {describe_exit(code)}" + (f": {quoted}" if quoted else "")
