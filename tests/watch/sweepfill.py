"""Sweeps written through the sweeps' own store code (SweepStore), their trials' runs filled
the way the runner fills them: for the sweep pages' tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mosaic_sdk.runner.storage.store import RunStore
from mosaic_sdk.sweeps.spec import parse_spec
from mosaic_sdk.sweeps.store import SweepStore
from tests.watch.storefill import FilledRun


def make_sweep(
    store: Path,
    sweep_id: str,
    raw: dict[str, Any],
    trials: list[tuple[str, dict[str, Any], str, float | None, str | None]],
    episodes: dict[str, list[tuple[float, int]]] | None = None,
) -> None:
    """A sweep as the driver stores it: ``trials`` are (key, params, status, metric, error)
    attempts in order; ``episodes``: (return, steps) of the run of a trial key's last attempt."""
    spec = parse_spec(raw)
    stored = spec.to_dict()
    stored["sampler"] = raw.get("sampler", "random")
    with RunStore(store) as runs:
        SweepStore(runs).create_sweep(sweep_id, "example", "local", stored, spec.metric)
    for n, (key, params, status, metric, error) in enumerate(trials):
        run_id = f"{sweep_id}-{key}-{n}"
        run = FilledRun(store, run_id, config=params)
        for ret, steps in (episodes or {}).get(key, []):
            run.add_episode(ret, steps)
        with RunStore(store) as runs:
            sweeps = SweepStore(runs)
            sweeps.add_attempt(sweep_id, key, run_id, params)
            if status != "running":
                sweeps.finish_attempt(run_id, status, metric, error)
        if status != "running":
            run.finish("cancelled" if status in ("pruned", "stopped") else status)
