"""Performance profiles (Agarwal et al., NeurIPS 2021): for each score tau, the fraction of a
set's runs that score above it; one step line per set, drawn to PNG or SVG with matplotlib
(the ``plot`` extra). ``mosaic runs compare A B --profile FILE.png`` draws A's and B's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from mosaic_sdk.plots.figure import literal, plot_format, require_matplotlib, save_figure


def profile(scores: Sequence[float], taus: Sequence[float]) -> list[float]:
    """The fraction of ``scores`` above each tau (higher is better: negate scores to rank
    lower first)."""
    n = len(scores)
    return [sum(s > t for s in scores) / n if n else 0.0 for t in taus]


def profile_taus(sets: Mapping[str, Sequence[float]]) -> list[float]:
    """The taus where a profile of ``sets`` changes: every score, and a little below the
    lowest (where every profile is 1)."""
    values = sorted({float(s) for scores in sets.values() for s in scores})
    if not values:
        return []
    span = (values[-1] - values[0]) or 1.0
    return [values[0] - 0.05 * span, *values]


def plot_profiles(
    sets: Mapping[str, Sequence[float]],
    path: str | Path,
    *,
    xlabel: str = "score",
    title: str = "performance profiles",
) -> Path:
    """Draw the performance profile of each named set of scores into ``path`` (.png/.svg)."""
    plot_format(path)  # a wrong suffix fails before anything is drawn
    figure_mod = require_matplotlib()
    taus = profile_taus(sets)
    if not taus:
        raise ValueError("nothing to plot: no scores")
    fig = figure_mod.Figure(figsize=(7.0, 4.5), dpi=110, layout="constrained")
    ax = fig.add_subplot()
    for name, scores in sets.items():
        ax.step(taus, profile(scores, taus), where="post", label=literal(f"{name} ({len(scores)})"))
    ax.set_xlabel(literal(xlabel))
    ax.set_ylabel("fraction of runs with score > tau")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(True, alpha=0.3)
    ax.set_title(literal(title))
    ax.legend(loc="lower left", fontsize="small")
    return save_figure(fig, path, title)
