"""The sweep pages of ``mosaic watch`` and their JSON routes (``/api/sweeps``, ``/api/sweeps/{id}``,
``/api/sweeps/{id}/importance``), read through the sweeps' read API."""

from __future__ import annotations

import re
import sqlite3
import threading
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from mosaic_sdk.sweeps.objective import pareto_front
from mosaic_sdk.sweeps.search import LOCAL_KEY, check_history
from mosaic_sdk.sweeps.spec import Metric, parse_spec
from mosaic_sdk.sweeps.store import BEST_FROM, SweepStore
from mosaic_sdk.watch import data
from mosaic_sdk.watch.data import finite_or_none
from mosaic_sdk.watch.routes import answer, store_path

#: The most sweeps the list sends.
MAX_SWEEPS = 500
#: Finished parameter sets a sweep needs before its parameter importance is computed.
MIN_IMPORTANCE_SETS = 4
#: Trial states that have their final objective values.
SCORED = ("completed", "stopped")
_PRUNED_AT = re.compile(r"\bat step (\d+)\b")
_NUMBER = re.compile(r"(\d+)$")


def _no_sweeps_yet(exc: sqlite3.OperationalError) -> bool:
    """A store written before sweeps existed has no ``sweeps`` table (it has no sweeps)."""
    return "no such table" in str(exc)


def list_sweeps(path: Path, include_unfinished: bool = False) -> dict[str, object]:
    """Every sweep of the store (newest first): id, worker, engine, status, metric, counts,
    and the best metric of its completed trials (of any trial with ``include_unfinished``)."""
    with data.open_store(path) as runs:
        try:
            sweeps = SweepStore(runs)
            rows = sweeps.list_sweeps(limit=MAX_SWEEPS, include_unfinished=include_unfinished)
        except sqlite3.OperationalError as exc:
            if not _no_sweeps_yet(exc):
                raise
            rows = []
    for row in rows:
        row["best"] = finite_or_none(row["best"])
    return {"store": str(path), "sweeps": rows}


def _param_axes(spec: Mapping[str, Any]) -> list[dict[str, object]]:
    """One axis per key of the space: ``float`` (uniform), ``log`` (loguniform) or
    ``category`` (grid and choice keys, with their values)."""
    axes: list[dict[str, object]] = []
    for key, dist in (spec.get("space") or {}).items():
        kind, values = next(iter(dist.items()))
        if kind in ("uniform", "loguniform"):
            scale = "log" if kind == "loguniform" else "float"
            axes.append({"name": key, "kind": scale, "min": values[0], "max": values[1]})
        elif all(finite_or_none(v) is not None for v in values):
            axes.append({"name": key, "kind": "number", "values": values})
        else:
            axes.append({"name": key, "kind": "category", "values": values})
    return axes


def trial_number(trial_key: str) -> int:
    """The number of a trial from its key: the order the sweep made them (the local engine's
    ``t0007`` is 7, a Ray Tune trial id ``ab12c_00007`` too); -1 for a key without one."""
    found = _NUMBER.search(trial_key)
    return int(found.group(1)) if found else -1


def pruned_step(error: str | None) -> int | None:
    """The step at which the pruner stopped a trial, from the reason stored with it
    ("pruned by the median pruner at step 12 (...)")."""
    found = _PRUNED_AT.search(error or "")
    return int(found.group(1)) if found else None


class ObjectiveCache:
    """The objective values of finished runs (they no longer change), so a page polling a
    sweep with several objectives reads each run's series once."""

    def __init__(self, limit: int = 20_000) -> None:
        self._values: dict[tuple[str, str, int], float | None] = {}
        self._lock = threading.Lock()
        self.limit = limit

    def value(self, sweeps: SweepStore, run_id: str, index: int, metric: Metric) -> float | None:
        key = (str(sweeps.runs.path), run_id, index)
        with self._lock:
            if key in self._values:
                return self._values[key]
        value = finite_or_none(sweeps.metric_of_run(run_id, metric))
        with self._lock:
            if len(self._values) >= self.limit:
                self._values.clear()
            self._values[key] = value
        return value


def _last_attempts(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each trial's last attempt (with how many it had), by trial number."""
    last: dict[str, dict[str, Any]] = {}
    for row in sorted(rows, key=lambda r: (r["trial_key"], r["attempt"])):
        last[row["trial_key"]] = row
    return sorted(last.values(), key=lambda r: (trial_number(r["trial_key"]), r["trial_key"]))


def _values(
    sweeps: SweepStore,
    trial: Mapping[str, Any],
    objectives: Sequence[Metric],
    cache: ObjectiveCache,
) -> list[float | None]:
    """The trial's value of each objective: the stored metric for the first; the others read
    from its run once it finished (a running trial has none yet)."""
    first = finite_or_none(trial["metric"])
    if len(objectives) == 1:
        return [first]
    if trial["status"] not in SCORED or not trial["run_id"]:
        return [first] + [None] * (len(objectives) - 1)
    rest = [cache.value(sweeps, trial["run_id"], i, m) for i, m in enumerate(objectives) if i > 0]
    return [first, *rest]


def _best_so_far(
    trials: Sequence[Mapping[str, Any]], mode: str, include_unfinished: bool = False
) -> dict[str, list[object]]:
    """Columns of the best-so-far curve: each scored trial's number, its value of the first
    objective and the best value up to it: of the completed trials (a trial the scheduler
    stopped has a value of a run cut short), of every scored one with ``include_unfinished``."""
    xs: list[object] = []
    values: list[object] = []
    best: list[object] = []
    current: float | None = None
    for t in trials:
        value = t["values"][0]
        if t["status"] not in SCORED or value is None:
            continue
        counts = include_unfinished or t["status"] == BEST_FROM
        better = current is None or (value > current if mode == "max" else value < current)
        current = value if better and counts else current
        xs.append(t["number"])
        values.append(value)
        best.append(current)
    return {"number": xs, "value": values, "best": best}


def sweep_detail(
    path: Path, sweep_id: str, cache: ObjectiveCache, include_unfinished: bool = False
) -> dict[str, object]:
    """One sweep and its trials (see the module docstring); ``include_unfinished``: its best
    so far counts every scored trial, not only the completed ones."""
    with data.open_store(path) as runs:
        sweeps = SweepStore(runs)
        try:
            sweep = sweeps.get_sweep(sweep_id)
        except sqlite3.OperationalError as exc:
            if not _no_sweeps_yet(exc):
                raise
            raise data.StoreMissingError(f"no sweeps in the store {path} yet") from None
        spec = sweep.pop("spec")
        objectives = parse_spec({"metric": spec.get("metric", {})}).objectives
        rows = sweeps.trials(sweep["sweep_id"])
        attempts = Counter(row["trial_key"] for row in rows)
        trials = [
            {
                "trial_key": row["trial_key"],
                "number": trial_number(row["trial_key"]),
                "attempt": row["attempt"],
                "attempts": attempts[row["trial_key"]],
                "run_id": row["run_id"],
                "status": row["status"],
                "params": row["params"],
                "values": _values(sweeps, row, objectives, cache),
                "pruned_step": pruned_step(row["error"]) if row["status"] == "pruned" else None,
                "error": row["error"],
                "episodes": row["episodes"] or 0,
                "steps": row["steps"] or 0,
                "started_at": row["started_at"],
                "ended_at": row["ended_at"],
                "pareto": False,
            }
            for row in _last_attempts(rows)
        ]
    front: list[str] | None = None
    if len(objectives) > 1:
        scored = [
            (t["trial_key"], t["values"])
            for t in trials
            if t["status"] in SCORED and all(v is not None for v in t["values"])
        ]
        front = pareto_front(scored, [m.mode for m in objectives])
        on_front = set(front)
        for t in trials:
            t["pareto"] = t["trial_key"] in on_front
    counts = Counter(t["status"] for t in trials)
    return {
        **{k: sweep[k] for k in ("sweep_id", "worker", "engine", "status", "error")},
        "created_at": sweep["created_at"],
        "ended_at": sweep["ended_at"],
        "sampler": spec.get("sampler", "grid"),
        "pruner": (spec.get("pruner") or {}).get("type"),
        "seeds": spec.get("seeds") or [],
        "objectives": [{"name": m.name, "mode": m.mode, "label": m.describe()} for m in objectives],
        "params": _param_axes(spec),
        "trials": trials,
        "counts": counts,
        "pareto_front": front,
        "best_so_far": _best_so_far(trials, objectives[0].mode, include_unfinished),
    }


def importance(path: Path, sweep_id: str) -> dict[str, object]:
    """Optuna's parameter importance of the sweep (PED-ANOVA) per objective, on the study
    rebuilt from its stored trials; ``note`` says why there is none (too few finished
    parameter sets, a space of one key, no Optuna)."""
    with data.open_store(path) as runs:
        sweeps = SweepStore(runs)
        sweep = sweeps.get_sweep(sweep_id)
        history = sweeps.trials(sweep["sweep_id"])
        spec = parse_spec(sweep["spec"])  # get_sweep refused a spec that does not parse
        objectives = spec.objectives

        def score(run_id: str) -> list[float | None]:
            return [sweeps.metric_of_run(run_id, m) for m in objectives]

        try:
            return _importance(sweep["sweep_id"], spec, history, score)
        except ImportError:
            return {
                "importances": None,
                "note": "parameter importance is Optuna's: pip install 'mosaic-worker-sdk[search]'",
            }


def _importance(
    sweep_id: str, spec: Any, history: list[dict[str, Any]], score: Any
) -> dict[str, object]:
    # Optional: Optuna (the search extra); the page says how to install it.
    import optuna
    from optuna.importance import PedAnovaImportanceEvaluator, get_param_importances

    # optional dependency (the search extra): only for importance
    from mosaic_sdk.sweeps.search import OptunaSource

    names = list(spec.space)
    objectives = [{"name": m.name, "mode": m.mode} for m in spec.objectives]

    def none(note: str, **more: object) -> dict[str, object]:  # why there is no importance
        return {"importances": None, "objectives": objectives, **more, "note": note}

    if any(LOCAL_KEY.fullmatch(str(row["trial_key"])) is None for row in history):
        return none(
            "parameter importance is computed on the study of a local-engine sweep "
            "(mosaic sweep --engine local), rebuilt from its trials as --resume does"
        )
    if len(names) < 2:
        return none(
            "parameter importance compares the parameters of a space of two or more "
            f"keys; this sweep searches {len(names)}"
        )
    check_history(sweep_id, history, spec)  # a damaged row: an error naming it
    # The study as --resume rebuilds it (a random sampler: no suggestion is used here, and it
    # needs nothing beyond Optuna whatever sampler the sweep ran).
    source = OptunaSource(replace(spec, pruner=None), "random", history, score)
    study = source.study
    complete = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    if len(complete) < MIN_IMPORTANCE_SETS:
        return none(
            f"parameter importance needs {MIN_IMPORTANCE_SETS} finished parameter sets; this "
            f"sweep has {len(complete)} so far",
            finished_sets=len(complete),
        )
    per_objective: list[dict[str, float]] = []
    notes: list[str] = []
    for index, metric in enumerate(spec.objectives):
        sign = -1.0 if metric.mode == "max" else 1.0  # PED-ANOVA ranks low targets best

        def target(t: optuna.trial.FrozenTrial, i: int = index, s: float = sign) -> float:
            return s * float(t.values[i])

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            found = get_param_importances(
                study, evaluator=PedAnovaImportanceEvaluator(), target=target, normalize=True
            )
        said = [str(w.message) for w in caught if "importances will be equal" in str(w.message)]
        if said:
            notes.append(f"{metric.name}: {said[0]}")
        per_objective.append({name: float(found.get(name, 0.0)) for name in names})
    out: dict[str, object] = {
        "params": names,
        "objectives": objectives,
        "importances": per_objective,
        "finished_sets": len(complete),
        "evaluator": "PED-ANOVA (optuna.importance.PedAnovaImportanceEvaluator)",
    }
    if notes:
        out["note"] = "; ".join(notes)
    return out


async def api_sweeps(request: Request) -> JSONResponse:
    path = store_path(request)

    unfinished = request.query_params.get("include_unfinished") == "1"

    def work() -> dict[str, object]:
        try:
            return list_sweeps(path, unfinished)
        except data.StoreMissingError as exc:  # no store yet: an empty list and the reason
            return {"store": str(path), "sweeps": [], "notice": str(exc)}

    return await answer(work)


async def api_sweep(request: Request) -> JSONResponse:
    sweep_id = request.path_params["sweep_id"]
    cache: ObjectiveCache = request.app.state.objectives
    unfinished = request.query_params.get("include_unfinished") == "1"
    return await answer(lambda: sweep_detail(store_path(request), sweep_id, cache, unfinished))


async def api_importance(request: Request) -> JSONResponse:
    sweep_id = request.path_params["sweep_id"]
    return await answer(lambda: importance(store_path(request), sweep_id))
