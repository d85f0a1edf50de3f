"""Checkpointing (when claimed): the run saves a checkpoint, and the file it names exists."""

from __future__ import annotations

from pathlib import Path

from mosaic_sdk.conformance.checks.cli import launched
from mosaic_sdk.conformance.checks.gates import claims
from mosaic_sdk.conformance.registry import SDK, conformance_check
from mosaic_sdk.conformance.results import CheckFailed
from mosaic_sdk.conformance.subject import WorkerSubject


@conformance_check(
    "checkpoint.saved_and_exists",
    description="A worker that claims checkpointing reports checkpoint_saved during the "
    "conformance run, naming a file or directory that exists",
    hint="Save at least one checkpoint with the conformance config (e.g. at the end of the "
    "run) and emit checkpoint_saved(checkpoint_path=...) only after the file is written",
    runs=("normal",),
    gates=(claims("supports_checkpointing"),),
    levels=(SDK,),
)
def saved_and_exists(subject: WorkerSubject) -> str | None:
    run = launched(subject, "normal")
    saved = [r.line.data.get("payload", {}) for r in run.telemetry if r.event == "checkpoint_saved"]
    if not saved:
        raise CheckFailed("no checkpoint_saved event in the conformance run")
    missing = []
    for payload in saved:
        raw = payload.get("checkpoint_path")
        if not isinstance(raw, str) or not raw:
            missing.append(f"checkpoint_path {raw!r}")
            continue
        path = Path(raw)
        if not path.is_absolute() and run.run_dir is not None:
            path = run.run_dir / path
        if not path.exists():
            missing.append(raw)
    if missing:
        raise CheckFailed(
            f"{len(missing)} of {len(saved)} checkpoints do not exist: {missing[0]}",
            details=missing,
        )
    return f"{len(saved)} checkpoint(s)"
