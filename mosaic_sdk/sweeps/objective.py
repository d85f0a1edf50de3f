"""A trial's objective: any episode field or series of its run, for one agent or all, reduced.

:class:`~mosaic_sdk.sweeps.spec.Metric` says what: ``name`` is ``return`` or ``steps`` (the
episodes' total reward or length, x = the episode's ordinal 1, 2, 3...) or the name of any
series the worker reports (``metrics`` events and its own lifecycle events' numbers, see
:mod:`mosaic_sdk.runner.recording.series`; x = the point's step), read through the
:class:`~mosaic_sdk.runner.storage.store.RunStore` read API. ``agent``: that agent's episodes or
series only; None: every row (all agents' episodes; every agent's series of that name, merged
by step). Non-finite values are left out. ``reduce``:

- ``last_mean``: the mean of the last ``last`` values (the default, as before);
- ``best``: the highest (``mode = "max"``) or lowest value;
- ``mean``: the mean of all values;
- ``auc``: the area under the curve, trapezoids over x (one value: that value).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from mosaic_sdk.runner.storage.store import RunStore
from mosaic_sdk.sweeps.spec import Metric


def metric_points(runs: RunStore, run_id: str, metric: Metric) -> tuple[list[float], list[float]]:
    """The (x, value) pairs the metric of ``run_id`` is made of, in order, finite values only."""
    if metric.is_episode_field:
        # (line_no, return, kind, steps, seconds): kind 0 is a stored number, steps -1 none
        rows = runs.episode_rows(run_id, 0.0, 0, metric.agent)
        if metric.name == "return":
            values = [float(r[1]) for r in rows if r[2] == 0]
        else:
            values = [float(r[3]) for r in rows if r[3] >= 0]
        pairs = [(float(i + 1), v) for i, v in enumerate(values)]
    else:
        agents = (
            [metric.agent]
            if metric.agent is not None
            else [s.agent_id for s in runs.series(run_id) if s.name == metric.name]
        )
        pairs = []
        for agent in agents:
            pts = runs.series_columns(run_id, metric.name, agent)
            pairs.extend(zip(pts.steps.astype(float).tolist(), pts.values.tolist(), strict=True))
        pairs.sort(key=lambda p: p[0])  # stable: one agent's points keep their order
    pairs = [(x, v) for x, v in pairs if math.isfinite(v)]
    return [x for x, _ in pairs], [v for _, v in pairs]


def reduce_values(xs: Sequence[float], values: Sequence[float], metric: Metric) -> float | None:
    """One number of the values (see the module docstring); None when there are none."""
    if not values:
        return None
    if metric.reduce == "last_mean":
        recent = values[-metric.last :]
        return sum(recent) / len(recent)
    if metric.reduce == "best":
        return max(values) if metric.mode == "max" else min(values)
    if metric.reduce == "mean":
        return sum(values) / len(values)
    if len(values) == 1:  # auc of one point
        return float(values[0])
    return sum(
        (xs[i + 1] - xs[i]) * (values[i] + values[i + 1]) / 2 for i in range(len(values) - 1)
    )


def metric_of_run(runs: RunStore, run_id: str, metric: Metric) -> float | None:
    """The metric of a run (None when it has no value for it)."""
    xs, values = metric_points(runs, run_id, metric)
    return reduce_values(xs, values, metric)


def pareto_front(points: Sequence[tuple[str, Sequence[float]]], modes: Sequence[str]) -> list[str]:
    """The keys of the points no other point dominates (at least as good in every objective,
    better in one; ``modes``: ``max``/``min`` per objective), in the order given."""
    signs = [1.0 if m == "max" else -1.0 for m in modes]
    scored = [(key, [s * v for s, v in zip(signs, vs, strict=True)]) for key, vs in points]

    def dominates(a: list[float], b: list[float]) -> bool:
        return all(x >= y for x, y in zip(a, b, strict=True)) and a != b

    return [k for k, v in scored if not any(dominates(w, v) for _, w in scored)]


__all__ = ["metric_of_run", "metric_points", "pareto_front", "reduce_values"]
