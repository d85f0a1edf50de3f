"""The worker's own ``--dry-run``, run by ``mosaic run`` before it claims a run id.

The config model (the plugin's ``mosaic_worker_config_model`` hook) is checked in-process
when the launch is prepared; a worker's dry run may check more (the example and the template
ask gymnasium whether the env id exists; CleanRL checks its algorithm's options). A config
only the dry run refuses would otherwise start a worker that fails at once and leave a failed
run in the store. :func:`preflight` prepares the launch in a temporary directory, runs the
worker's command with ``--dry-run`` appended (the worker CLI contract every worker follows,
checked by the conformance suite's ``cli.dry_run_*`` checks), and answers what it said.

The temporary directory (and the config written in it) is removed whatever happens.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mosaic_sdk.plugins import WorkerHandle
from mosaic_sdk.runner.launch import ResolvedJob, prepare_run, resolve_job

#: How long a dry run may take before it is stopped (a worker that ignores ``--dry-run``
#: and trains instead).
DEFAULT_TIMEOUT = 120.0
#: How much of the worker's stderr a refusal quotes.
MAX_QUOTE = 2000


@dataclass(frozen=True)
class PreflightResult:
    """What the dry run said: ``ok`` (exit 0), else ``problem`` is one readable sentence."""

    ok: bool
    exit_code: int | None
    seconds: float
    stderr: str
    problem: str | None = None


def preflight(
    handle: WorkerHandle,
    config_data: Mapping[str, Any] | ResolvedJob | None,
    *,
    run_id: str | None = None,
    extra_env: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> PreflightResult:
    """Run ``handle``'s ``--dry-run`` on the config; raises ``ConfigError`` when the config
    model refuses it already, ``OSError`` when the worker's command cannot be started."""
    import time

    scratch = Path(tempfile.mkdtemp(prefix="mosaic-preflight-"))
    try:
        job = resolve_job(config_data, run_id=run_id)
        prepared = prepare_run(handle, job, runs_dir=scratch, extra_env=extra_env)
        started = time.monotonic()
        proc = subprocess.Popen(
            [*prepared.argv, "--dry-run"],
            cwd=prepared.cwd,
            env=prepared.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group: stopped whole on a timeout
        )
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            _, err = proc.communicate()
            return PreflightResult(
                False,
                None,
                time.monotonic() - started,
                _text(err),
                f"its dry run did not end within {timeout:g}s (does the worker handle --dry-run?)",
            )
        finally:
            if proc.poll() is None:  # interrupted (Ctrl-C): leave nothing running
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        done = subprocess.CompletedProcess(proc.args, proc.returncode, None, err)
        seconds = time.monotonic() - started
        said = _text(done.stderr)
        if done.returncode == 0:
            return PreflightResult(True, 0, seconds, said)
        return PreflightResult(
            False, done.returncode, seconds, said, _refusal(done.returncode, said)
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode("utf-8", "replace")


def _refusal(code: int, stderr: str) -> str:
    """The worker's reason: its ``error:`` lines, else the last lines of its stderr."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.lower().startswith("error")]
    quoted = "; ".join(errors or lines[-3:])
    if len(quoted) > MAX_QUOTE:
        quoted = quoted[: MAX_QUOTE - 3] + "..."
    return f"its dry run exited with code {code}" + (f": {quoted}" if quoted else "")


__all__ = ["DEFAULT_TIMEOUT", "PreflightResult", "preflight"]
