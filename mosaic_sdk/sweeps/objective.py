"""A trial's objective: any episode field or series of its run, for one agent or all, reduced."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from mosaic_sdk.runner.recording.ingest import LineIngest
from mosaic_sdk.runner.storage.rows import LineBatch
from mosaic_sdk.runner.storage.store import RunStore
from mosaic_sdk.sweeps.spec import Metric


def metric_points(runs: RunStore, run_id: str, metric: Metric) -> tuple[list[float], list[float]]:
    """The (x, value) pairs the metric of ``run_id`` is made of, in order, finite values only."""
    if metric.is_episode_field:
        # (line_no, return, kind, steps, seconds): kind 0 is a stored number, 3 an unfinished
        # episode (left out unless the metric includes them), steps -1 none
        rows = runs.episode_rows(
            run_id, 0.0, 0, metric.agent, include_unfinished=metric.include_unfinished
        )
        if metric.name == "return":
            values = [float(r[1]) for r in rows if r[2] == 0]
        else:
            values = [float(r[3]) for r in rows if r[3] >= 0 and r[2] != 3]
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


class StreamObjective:
    """The metrics of one run computed from its stdout lines as they arrive (see the module
    docstring): ``value(metric)`` is what :func:`metric_of_run` gives once the same lines
    are stored. Also keeps the path of the last ``checkpoint_saved`` event."""

    def __init__(self, metrics: Sequence[Metric]) -> None:
        self.metrics = list(metrics)
        self._ingest = LineIngest("objective")
        #: (return, steps, agent, unfinished) of each episode line, in line order
        self._episodes: list[tuple[Any, Any, Any, int]] = []
        #: series id -> (name, agent); series id -> [(step, wall, line_no, value)]
        self._names: dict[int, tuple[str, str | None]] = {}
        self._points: dict[int, list[tuple[int, int, int, float]]] = {}
        self.episodes = 0
        #: Episodes and series points so far (it changes when the objective may have).
        self.rows = 0
        #: The ``checkpoint_path`` of the last ``checkpoint_saved`` event (None: none yet).
        self.checkpoint: str | None = None

    def add(self, lines: list[bytes]) -> None:
        batch = LineBatch()
        lifecycle = self._ingest.add(batch, lines)
        # run_id, line_no, seq, index, total, steps, ..., raw, agent, unfinished
        for row in batch.episodes:
            self._episodes.append((row[4], row[5], row[10], row[11]))
        self.episodes += sum(1 for row in batch.episodes if not row[11])  # finished ones
        self.rows += len(batch.episodes) + len(batch.points)
        for _, sid, name, agent in batch.series:
            self._names[sid] = (name, agent)
        for _, sid, step, wall, line_no, value in batch.points:
            self._points.setdefault(sid, []).append((step, wall, line_no, value))
        for event in lifecycle:
            if event.get("event") == "checkpoint_saved":
                payload = event.get("payload")
                path = payload.get("checkpoint_path") if isinstance(payload, dict) else None
                if isinstance(path, str) and path:
                    self.checkpoint = path

    def points(self, metric: Metric) -> tuple[list[float], list[float]]:
        """The (x, value) pairs of ``metric`` so far, as :func:`metric_points` reads them."""
        if metric.is_episode_field:
            values: list[float] = []
            for total, steps, agent, cut in self._episodes:
                if metric.agent is not None and agent != metric.agent:
                    continue
                if cut and not metric.include_unfinished:
                    continue
                if metric.name == "return":
                    if type(total) in (int, float):
                        values.append(float(total))
                elif type(steps) is int and steps >= 0:
                    values.append(float(steps))
            pairs = [(float(i + 1), v) for i, v in enumerate(values)]
        else:
            # the store's order: agentless first, then by agent; each series by step, wall time
            sids = sorted(
                (sid for sid, (name, agent) in self._names.items() if name == metric.name),
                key=lambda sid: (self._names[sid][1] is not None, self._names[sid][1] or ""),
            )
            pairs = []
            for sid in sids:
                if metric.agent is not None and self._names[sid][1] != metric.agent:
                    continue
                pts = sorted(self._points.get(sid, []))
                pairs.extend((float(step), value) for step, _, _, value in pts)
            pairs.sort(key=lambda p: p[0])
        pairs = [(x, v) for x, v in pairs if math.isfinite(v)]
        return [x for x, _ in pairs], [v for _, v in pairs]

    def value(self, metric: Metric) -> tuple[float, int] | None:
        """``(value, step)``: the metric so far and the x of its last point; None before it has
        one."""
        xs, values = self.points(metric)
        value = reduce_values(xs, values, metric)
        return None if value is None else (value, int(xs[-1]))


def pareto_front(points: Sequence[tuple[str, Sequence[float]]], modes: Sequence[str]) -> list[str]:
    """The keys of the points no other point dominates (at least as good in every objective,
    better in one; ``modes``: ``max``/``min`` per objective), in the order given."""
    signs = [1.0 if m == "max" else -1.0 for m in modes]
    scored = [(key, [s * v for s, v in zip(signs, vs, strict=True)]) for key, vs in points]

    def dominates(a: list[float], b: list[float]) -> bool:
        return all(x >= y for x, y in zip(a, b, strict=True)) and a != b

    return [k for k, v in scored if not any(dominates(w, v) for _, w in scored)]
