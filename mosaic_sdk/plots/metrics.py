"""Series of stored runs drawn to a PNG or SVG: one panel per series name, ``mosaic runs plot
--metric`` (:func:`plot_metrics`)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from mosaic_sdk.plots.curves import Band, Curve, CurveError, aggregate
from mosaic_sdk.plots.figure import (
    draw_band,
    draw_curve,
    literal,
    plot_format,
    require_matplotlib,
    run_label,
    save_figure,
    unique_runs,
)
from mosaic_sdk.plots.groups import DEFAULT_IGNORED, group_by_seed

if TYPE_CHECKING:
    from mosaic_sdk.runner.storage.records import RunRecord
    from mosaic_sdk.runner.storage.store import RunStore

#: The x axes of a series: its own step, or seconds since the run started.
METRIC_X_AXES: tuple[str, ...] = ("step", "time")
#: Panels per row of the figure.
COLUMNS = 2
#: Step ranges a long series is read in when drawn as it is (no smoothing, no seed groups):
#: each gives its lowest and highest point, about twice a panel's width in pixels.
PICTURE_BUCKETS = 1000
#: The most panels one figure holds (a glob like ``*`` on a run of thousands of series).
MAX_PANELS = 64
#: A panel whose values reach this magnitude is drawn in units of a power of ten (its axis
#: says which): matplotlib's arithmetic on a range like -1e308 .. 1e308 overflows.
HUGE = 1e300


@dataclass(frozen=True)
class MetricsPlot:
    """What :func:`plot_metrics` drew: the file, and the lines of each panel (by name)."""

    path: Path
    panels: dict[str, tuple[Curve | Band, ...]]
    #: Points not drawn (NaN or infinite), by series name.
    not_finite: dict[str, int]
    #: The series matched but not drawn, by name: why (no finite value in these runs).
    skipped: dict[str, str] = field(default_factory=dict)
    #: The panels drawn in units of a power of ten (values of :data:`HUGE` or more), by name.
    units: dict[str, float] = field(default_factory=dict)

    @property
    def lines(self) -> int:
        return sum(len(p) for p in self.panels.values())


def series_curve(
    store: RunStore,
    run: RunRecord,
    name: str,
    agent_id: str | None,
    x_axis: str = "step",
    buckets: int | None = None,
) -> tuple[Curve | None, int]:
    """The finite points of one series of ``run`` as a :class:`Curve` and how many were not
    finite; None when none is. ``buckets``: read downsampled to that many step ranges."""
    points = store.series_columns(run["run_id"], name, agent_id, buckets=buckets)
    if x_axis == "step":
        x = points.steps.astype(np.float64)
    else:
        x = points.wall_ns.astype(np.float64) / 1e9 - float(run["started_at"])
    keep = np.isfinite(points.values)
    dropped = points.not_finite
    if not keep.any():
        return None, dropped
    x, y = x[keep], points.values[keep]
    if x_axis == "time":
        order = np.argsort(x, kind="stable")
        x, y = x[order], y[order]
    agent = None if agent_id is None else ("agent", agent_id)
    return Curve(run["run_id"], x_axis, x, y, {}, agent), dropped


def series_mean_curve(
    store: RunStore, run: RunRecord, name: str, agent_id: str | None, buckets: int
) -> tuple[Curve | None, int]:
    """One series of ``run`` as the means of ``buckets`` equal step ranges
    (:meth:`RunStore.series_means`), and how many values were not finite; None when none is."""
    means = store.series_means(run["run_id"], name, agent_id, buckets=buckets)
    keep = np.isfinite(means.values)  # a range's sum of values near 1e308 may overflow
    dropped = means.not_finite + int((~keep).sum())
    if not keep.any():
        return None, dropped
    agent = None if agent_id is None else ("agent", agent_id)
    return Curve(run["run_id"], "step", means.steps[keep], means.values[keep], {}, agent), dropped


def plot_metrics(
    store: RunStore,
    run_ids: Sequence[str],
    patterns: Sequence[str],
    path: str | Path,
    *,
    x_axis: str = "step",
    window: int = 1,
    group_seeds: bool = False,
    spread: str = "minmax",
    ignore: Iterable[str] = DEFAULT_IGNORED,
    title: str | None = None,
) -> MetricsPlot:
    """Draw the series of ``run_ids`` whose names match any of ``patterns`` (fnmatch globs)
    into ``path``, one panel per name, one line per run (and agent), or with ``group_seeds``
    one mean line over a band per group. Non-finite points are counted in the legend; a series
    without a finite value is left out (``skipped`` says why), a panel of values past
    :data:`HUGE` is drawn in units of a power of ten (``units``). Raises ``CurveError`` (no
    series matches, or none has a value to draw), ValueError or MissingExtraError before
    writing."""
    plot_format(path)
    figure_mod = require_matplotlib()
    if x_axis not in METRIC_X_AXES:
        raise ValueError(f"x axis {x_axis!r} for series: use one of {', '.join(METRIC_X_AXES)}")
    if window < 1:
        raise ValueError(f"smoothing window {window}: use 1 (none) or more points")
    if not patterns:
        raise ValueError("name the series to plot: one or more names or globs")
    runs = unique_runs(store, run_ids)
    # name -> the (run, agent) series of that name, in run order
    found: dict[str, list[tuple[RunRecord, str | None]]] = {}
    known: set[str] = set()
    for run in runs:
        for info in store.series(run["run_id"]):
            known.add(info.name)
            if any(fnmatchcase(info.name, p) for p in patterns):
                found.setdefault(info.name, []).append((run, info.agent_id))
    if not found:
        have = ", ".join(sorted(known)[:20]) or "none"
        raise CurveError(
            f"no series of run(s) {', '.join(r['run_id'] for r in runs)} matches "
            f"{' or '.join(repr(p) for p in patterns)}; the runs have: {have}"
            + (" ..." if len(known) > 20 else "")
        )
    if len(found) > MAX_PANELS:
        raise CurveError(
            f"{len(found)} series match {' or '.join(repr(p) for p in patterns)}: more than "
            f"{MAX_PANELS} panels; give narrower globs"
        )
    panels: dict[str, tuple[Curve | Band, ...]] = {}
    labels: dict[str, list[str]] = {}
    not_finite: dict[str, int] = {}
    skipped: dict[str, str] = {}
    units: dict[str, float] = {}
    for name in sorted(found):
        try:
            lines, unit = _panel(
                store, name, found[name], x_axis, window, group_seeds, spread, ignore
            )
        except CurveError as exc:  # this series only: the others are drawn
            skipped[name] = str(exc)
            continue
        panels[name] = tuple(item for item, _, _ in lines)
        labels[name] = [label for _, label, _ in lines]
        not_finite[name] = sum(dropped for _, _, dropped in lines)
        if unit != 1.0:
            units[name] = unit
    names = sorted(panels)
    if not names:
        raise CurveError("; ".join(skipped.values()) + ": nothing to draw")
    cols = min(COLUMNS, len(names))
    rows = math.ceil(len(names) / cols)
    fig = figure_mod.Figure(figsize=(6.0 * cols, 3.6 * rows), dpi=100, layout="constrained")
    import matplotlib  # the plot extra: an optional dependency, present once required above

    colors = matplotlib.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    for i, name in enumerate(names):
        ax = fig.add_subplot(rows, cols, i + 1)
        for j, (item, label) in enumerate(zip(panels[name], labels[name], strict=True)):
            color = colors[j % len(colors)]
            if isinstance(item, Band):
                draw_band(ax, item, literal(label), color)
            else:
                draw_curve(ax, item, literal(label), color, window)
        heading = name + (
            f" ({not_finite[name]} NaN/inf points not drawn)" if not_finite[name] else ""
        )
        ax.set_title(literal(heading), fontsize="medium")
        if name in units:
            ax.set_ylabel(f"value (x {units[name]:g})")
        xlabel = "step" if x_axis == "step" else "wall time (s)"
        if _binned(x_axis, window, group_seeds):  # say what resolution the lines have
            xlabel += f" (each run: means of {PICTURE_BUCKETS} step ranges)"
        ax.set_xlabel(xlabel)
        ax.grid(True, alpha=0.3)
        if len(panels[name]) <= 12:
            ax.legend(loc="best", fontsize="x-small")
    if title:
        fig.suptitle(literal(title))
    out = save_figure(fig, path, title or "series")
    return MetricsPlot(out, panels, {k: v for k, v in not_finite.items() if v}, skipped, units)


def _binned(x_axis: str, window: int, group_seeds: bool) -> bool:
    """Whether a panel's seed groups are drawn from each run's means of PICTURE_BUCKETS step
    ranges (:func:`series_mean_curve`) rather than from every point."""
    return group_seeds and window == 1 and x_axis == "step"


def _panel(
    store: RunStore,
    name: str,
    members: list[tuple[RunRecord, str | None]],
    x_axis: str,
    window: int,
    group_seeds: bool,
    spread: str,
    ignore: Iterable[str],
) -> tuple[list[tuple[Curve | Band, str, int]], float]:
    """The lines of one panel: ``(line, label, points not drawn)``, and the unit its values
    are drawn in (1, or a power of ten for values of :data:`HUGE` or more)."""
    curves: dict[tuple[str, str | None], tuple[Curve, int]] = {}
    dropped_only = 0
    # smoothing needs every point; a line drawn as it is, a picture's worth (each step
    # range's lowest and highest point); seed groups against steps, each run's means of
    # PICTURE_BUCKETS step ranges (the grid the band is drawn on is no finer)
    buckets = PICTURE_BUCKETS if window == 1 and not group_seeds else None
    binned = _binned(x_axis, window, group_seeds)
    for run, agent in members:
        if binned:
            curve, dropped = series_mean_curve(store, run, name, agent, PICTURE_BUCKETS)
        else:
            curve, dropped = series_curve(store, run, name, agent, x_axis, buckets)
        if curve is None:
            dropped_only += dropped
            continue
        curves[run["run_id"], agent] = (curve, dropped)
    unit = _unit(curves.values())
    if unit != 1.0:  # before any smoothing or band: their sums would overflow too
        curves = {k: (replace(c, y=c.y / unit), d) for k, (c, d) in curves.items()}
    out: list[tuple[Curve | Band, str, int]] = []
    agents = list(dict.fromkeys(agent for _, agent in members))
    runs = list({r["run_id"]: r for r, _ in members}.values())
    if group_seeds:
        for group in group_by_seed(runs, ignore):
            for agent in agents:
                got = [curves[r, agent] for r in group.run_ids if (r, agent) in curves]
                suffix = "" if agent is None else f" agent {agent}"
                if len(got) == 1:
                    out.append(
                        (got[0][0], f"{got[0][0].run_id} ({group.label}){suffix}", got[0][1])
                    )
                elif got:
                    label = group.label + suffix
                    band = aggregate([c for c, _ in got], window=window, spread=spread, label=label)
                    out.append((band, label, sum(d for _, d in got)))
    else:
        for run in runs:
            for agent in agents:
                if (run["run_id"], agent) in curves:
                    curve, dropped = curves[run["run_id"], agent]
                    suffix = "" if agent is None else f" agent {agent}"
                    out.append((curve, run_label(run) + suffix, dropped))
    if out and dropped_only:
        first, label, dropped = out[0]
        out[0] = (first, label, dropped + dropped_only)
    if not out:
        raise CurveError(f"series {name!r} has no finite value to draw in these runs")
    return out, unit


def _unit(curves: Iterable[tuple[Curve, int]]) -> float:
    """1, or the power of ten the values of ``curves`` are drawn in when one reaches
    :data:`HUGE` (the largest then shows between 1 and 10)."""
    largest = max((float(np.max(np.abs(c.y))) for c, _ in curves if len(c.y)), default=0.0)
    if not math.isfinite(largest) or largest < HUGE:
        return 1.0
    return float(10.0 ** math.floor(math.log10(largest)))
