"""Learning curves drawn to a PNG or SVG file (``mosaic runs plot``), with matplotlib (the
``plot`` extra) through its object API: pyplot is never imported, so no global backend is
chosen or changed."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mosaic_sdk.extras import require
from mosaic_sdk.plots.curves import (
    X_LABELS,
    AgentKey,
    Band,
    Curve,
    add_skipped,
    agent_name,
    aggregate,
    downsample,
    envelope,
    learning_curve,
    skipped_text,
    top_agents,
)
from mosaic_sdk.plots.groups import DEFAULT_IGNORED, group_by_seed

if TYPE_CHECKING:
    from mosaic_sdk.runner.storage.records import RunRecord
    from mosaic_sdk.runner.storage.store import RunStore

#: File suffixes :func:`render` writes, and matplotlib's format name for each.
FORMATS = {".png": "png", ".svg": "svg"}
#: Points drawn per line at most (long curves are downsampled, peaks kept).
DRAW_POINTS = 2000
#: Raw returns of a curve longer than this are drawn as their min-max envelope in
#: :data:`ENVELOPE_BUCKETS` buckets (a line through 10k points costs Agg seconds).
RAW_LINE_MAX = 1000
ENVELOPE_BUCKETS = 500
#: With ``by_agent``, the most agents of one run drawn (those with the most episodes).
MAX_AGENT_CURVES = 20
_FEATURE = "mosaic runs plot"


def plot_format(path: str | Path) -> str:
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"cannot tell the picture format of {str(path)!r}: name it .png or .svg")
    return FORMATS[suffix]


def require_matplotlib() -> Any:
    """The ``matplotlib.figure`` module, or MissingExtraError naming the pip command."""
    require("matplotlib", "plot", _FEATURE)
    return require("matplotlib.figure", "plot", _FEATURE)


@dataclass(frozen=True)
class PlotResult:
    """What :func:`plot_runs` drew."""

    path: Path
    series: tuple[Curve | Band, ...]
    labels: tuple[str, ...]
    #: The runs that have episodes without a point (by run id: counts by reason).
    skipped: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    #: The runs with several agents (by run id: the names of those drawn), split or not.
    multi_agent: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: Whether those runs were drawn one curve per agent.
    split_by_agent: bool = False
    #: The runs with more agents than :data:`MAX_AGENT_CURVES` (by run id: ``(drawn, agents)``).
    agents_left_out: Mapping[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def runs(self) -> int:
        ids = {r for s in self.series for r in (s.run_ids if isinstance(s, Band) else (s.run_id,))}
        return len(ids)  # a run drawn per agent is one run


def render(
    series: Sequence[Curve | Band],
    path: str | Path,
    *,
    labels: Sequence[str] | None = None,
    window: int = 1,
    title: str | None = None,
    size: tuple[float, float] = (9.0, 5.0),
    dpi: int = 110,
) -> Path:
    """Draw ``series`` into ``path`` (.png or .svg): curves raw and smoothed over ``window``
    episodes, bands as a mean line over a shaded spread. Skipped episodes are told in the
    legend, or over 20 series (no legend) in a note in the corner."""
    plot_format(path)  # a wrong suffix fails before anything is drawn
    if not series:
        raise ValueError("nothing to plot: no curves")
    figure_mod = require_matplotlib()
    import matplotlib  # optional: the plot extra (require_matplotlib said how to get it)

    if labels is None:
        labels = [s.label if isinstance(s, Band) else s.run_id for s in series]
    names = [literal(_with_skipped(n, item)) for n, item in zip(labels, series, strict=True)]
    fig = figure_mod.Figure(figsize=size, dpi=dpi, layout="constrained")
    ax = fig.add_subplot()
    colors = matplotlib.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    for i, (item, name) in enumerate(zip(series, names, strict=True)):
        color = colors[i % len(colors)]
        if isinstance(item, Band):
            draw_band(ax, item, name, color)
        else:
            draw_curve(ax, item, name, color, window)
    x_axis = series[0].x_axis
    ax.set_xlabel(X_LABELS.get(x_axis, x_axis))
    ax.set_ylabel("episode return" + (f" (smoothed over {window})" if window > 1 else ""))
    ax.grid(True, alpha=0.3)
    if title:
        ax.set_title(literal(title))
    if len(series) <= 20:
        ax.legend(loc="lower right", fontsize="small")
    else:
        total: dict[str, int] = {}
        for item in series:
            add_skipped(total, item.skipped)
        if total:
            note = f"{skipped_text(total)} (not on the curves)"
            ax.annotate(note, (0.01, 0.99), xycoords="axes fraction", va="top", fontsize="small")
    return save_figure(fig, path, title or "learning curves")


def save_figure(fig: Any, path: str | Path, title: str) -> Path:
    """Write a matplotlib ``Figure`` to ``path`` whole or not at all (written beside and
    renamed); an SVG carries no date (the same figure gives the same file)."""
    import matplotlib  # optional: the plot extra (a Figure given here means it is installed)

    fmt = plot_format(path)
    target = Path(path)
    partial = target.with_name(f".{target.name}.partial")
    meta = {"Date": None} if fmt == "svg" else {}
    try:
        with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "mosaic"}):
            fig.savefig(partial, format=fmt, metadata={**meta, "Title": title})
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def literal(text: str) -> str:
    """``text`` shown as written: matplotlib reads ``$...$`` as math (and fails on a lone
    ``$``), and labels hold config values a worker's user wrote."""
    return text.replace("$", r"\$")


def _with_skipped(name: str, item: Curve | Band) -> str:
    text = skipped_text(item.skipped)
    return f"{name} [{text}]" if text else name


def draw_curve(ax: Any, curve: Curve, name: str, color: str, window: int) -> None:
    smoothed = window > 1
    raw_label = None if smoothed else name
    if len(curve) > RAW_LINE_MAX:
        x, low, high = envelope(curve.x, curve.y, ENVELOPE_BUCKETS)
        alpha = 0.2 if smoothed else 0.45
        ax.fill_between(x, low, high, color=color, alpha=alpha, linewidth=0, label=raw_label)
    else:
        alpha = 0.25 if smoothed else 1.0
        ax.plot(curve.x, curve.y, color=color, alpha=alpha, linewidth=1.0, label=raw_label)
    if smoothed:
        x, y = downsample(curve.x, curve.smoothed(window), DRAW_POINTS)
        ax.plot(x, y, color=color, linewidth=1.6, label=name)
    if len(curve) == 1:  # one episode: a line of one point is invisible
        ax.plot(curve.x, curve.y, "o", color=color)


def draw_band(ax: Any, band: Band, name: str, color: str) -> None:
    spread = "min-max" if band.spread == "minmax" else "±1 std"
    label = f"{name} (mean of {len(band.run_ids)}, {spread})"
    ax.fill_between(band.x, band.low, band.high, color=color, alpha=0.2, linewidth=0)
    ax.plot(band.x, band.mean, color=color, linewidth=1.6, label=label)
    if len(band.x) == 1:
        ax.plot(band.x, band.mean, "o", color=color)


def plot_runs(
    store: RunStore,
    run_ids: Sequence[str],
    path: str | Path,
    *,
    x_axis: str = "steps",
    window: int = 1,
    group_seeds: bool = False,
    by_agent: bool | None = None,
    spread: str = "minmax",
    ignore: Iterable[str] = DEFAULT_IGNORED,
    title: str | None = None,
    include_unfinished: bool = False,
) -> PlotResult:
    """Draw the learning curves of ``run_ids`` (ids or unique prefixes) into ``path``
    (``include_unfinished``: the episodes the run's end cut off too).

    ``group_seeds``: runs whose configs are equal apart from ``ignore`` become one mean line
    over a ``spread`` band. ``by_agent`` (``None``: for runs with several agents): one curve
    per agent, at most :data:`MAX_AGENT_CURVES` a run. Raises ``UnknownRunError``,
    ``CurveError``, ValueError (not .png/.svg) or MissingExtraError before writing."""
    plot_format(path)
    require_matplotlib()
    if window < 1:
        raise ValueError(f"smoothing window {window}: use 1 (none) or more episodes")
    runs = unique_runs(store, run_ids)
    # one entry per (run, agent): agent None is the whole run
    agents_of: dict[str, list[AgentKey | None]] = {}
    multi_agent: dict[str, tuple[str, ...]] = {}
    left_out: dict[str, tuple[int, int]] = {}
    for r in runs:
        drawn, total = top_agents(store, r["run_id"], MAX_AGENT_CURVES)
        if total > 1:
            multi_agent[r["run_id"]] = tuple(agent_name(a) for a in drawn)
        split = by_agent if by_agent is not None else total > 1
        if split and total > len(drawn):
            left_out[r["run_id"]] = (len(drawn), total)
        found: list[AgentKey | None] = list(drawn) if split else []
        agents_of[r["run_id"]] = found or [None]
    curves = {
        (rid, agent): learning_curve(
            store, rid, x_axis, agent, include_unfinished=include_unfinished
        )
        for rid, agents in agents_of.items()
        for agent in agents
    }
    series: list[Curve | Band] = []
    labels: list[str] = []
    if group_seeds:
        for group in group_by_seed(runs, ignore):
            # the agents of the group's runs, each once, in the order they first come
            for agent in dict.fromkeys(a for r in group.run_ids for a in agents_of[r]):
                members = [curves[r, agent] for r in group.run_ids if (r, agent) in curves]
                suffix = "" if agent is None else f" agent {agent_name(agent)}"
                if len(members) == 1:
                    series.append(members[0])
                    labels.append(f"{members[0].run_id} ({group.label}){suffix}")
                else:
                    label = group.label + suffix
                    series.append(aggregate(members, window=window, spread=spread, label=label))
                    labels.append(label)
    else:
        for run in runs:
            for agent in agents_of[run["run_id"]]:
                series.append(curves[run["run_id"], agent])
                suffix = "" if agent is None else f" agent {agent_name(agent)}"
                labels.append(run_label(run) + suffix)
    out = render(series, path, labels=labels, window=window, title=title)
    skipped: dict[str, dict[str, int]] = {}
    for (rid, _agent), c in curves.items():
        if c.skipped:
            add_skipped(skipped.setdefault(rid, {}), c.skipped)
    split = bool(multi_agent) and by_agent is not False
    return PlotResult(out, tuple(series), tuple(labels), skipped, multi_agent, split, left_out)


def unique_runs(store: RunStore, run_ids: Sequence[str]) -> list[RunRecord]:
    if not run_ids:
        raise ValueError("no run to plot: give one or more run ids")
    seen: dict[str, RunRecord] = {}
    for run_id in run_ids:
        run = store.get_run(run_id)
        seen.setdefault(run["run_id"], run)
    return list(seen.values())


def run_label(run: RunRecord) -> str:
    config = run["config"] or {}
    seed = config.get("seed") if isinstance(config, Mapping) else None  # a hand-edited store
    extra = f", seed {seed}" if seed is not None else ""
    return f"{run['run_id']} ({run['worker']}{extra})"


__all__ = [
    "DRAW_POINTS",
    "ENVELOPE_BUCKETS",
    "FORMATS",
    "MAX_AGENT_CURVES",
    "RAW_LINE_MAX",
    "PlotResult",
    "draw_band",
    "draw_curve",
    "literal",
    "plot_format",
    "plot_runs",
    "render",
    "run_label",
    "save_figure",
    "unique_runs",
]
