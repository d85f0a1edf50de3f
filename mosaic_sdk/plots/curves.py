"""Learning curves from the store: episode returns against env steps, episodes or wall time
(numpy only; ``mosaic runs plot`` reads a run at once, ``mosaic watch`` as it grows)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from mosaic_sdk.runner.storage.records import EpisodePoint
    from mosaic_sdk.runner.storage.store import RunStore

X_AXES: tuple[str, ...] = ("steps", "episodes", "time")
#: The axis label of each x.
X_LABELS = {"steps": "env steps", "episodes": "episodes", "time": "wall time (s)"}
SPREADS: tuple[str, ...] = ("minmax", "std")


#: Why an episode has no point on its run's curve (the keys of ``skipped``), in words.
SKIP_REASONS: dict[str, str] = {
    "not_a_number": "a return that is not a number",
    "not_finite": "a return that is not finite",
    "no_return": "no return",
    "no_time": "no timestamp",
    "unfinished": "no end of its own (the run's end cut it off: unfinished)",
}
# The ``kind`` column of RunStore.episode_rows: what the stored return was, or an episode
# the run's end cut off (docs/reference/telemetry.md, "Unfinished episodes").
_KIND_NUMBER, _KIND_NULL, _KIND_UNFINISHED = 0, 1, 3


def skipped_text(skipped: Mapping[str, int]) -> str:
    """The skipped episodes in words (``"2 episodes skipped: 1 with a return that is not a
    number, 1 with a return that is not finite"``); ``""`` when none was skipped."""
    total = sum(skipped.values())
    if not total:
        return ""
    parts = [f"{n} with {text}" for key, text in SKIP_REASONS.items() if (n := skipped.get(key))]
    return f"{total} episode{'s' if total != 1 else ''} skipped: {', '.join(parts)}"


def add_skipped(total: dict[str, int], more: Mapping[str, int]) -> dict[str, int]:
    for key, n in more.items():
        if n:
            total[key] = total.get(key, 0) + n
    return total


#: One agent of a multi-agent run: ``("agent", ID)``, or ``("agentless",)`` (no ``agent_id``).
AgentKey = tuple[str, ...]
NO_AGENT: AgentKey = ("agentless",)


def agent_key(agent_id: str | None) -> AgentKey:
    """The :data:`AgentKey` of a stored ``agent_id`` (``None``: the rows without one)."""
    return NO_AGENT if agent_id is None else ("agent", str(agent_id))


#: The most characters of an agent id a chart's label or a message shows (it may be any text).
AGENT_NAME_MAX = 40


def agent_name(key: AgentKey) -> str:
    """How an agent is named on a chart: its id (cut to :data:`AGENT_NAME_MAX` characters,
    saying how long it was), or ``(no agent_id)``."""
    if key == NO_AGENT:
        return "(no agent_id)"
    name = key[1]
    if len(name) <= AGENT_NAME_MAX:
        return name
    return f"{name[:AGENT_NAME_MAX]}... ({len(name):,} characters)"


def run_agents(store: RunStore, run_id: str) -> list[AgentKey]:
    """The agents of a run (a full id) that have episodes, in the order ``mosaic runs show``
    lists them; ``[]`` for a run of one agent (or none)."""
    return [agent_key(a["agent_id"]) for a in store.agents(run_id) if a["episodes"]]


def top_agents(store: RunStore, run_id: str, limit: int) -> tuple[list[AgentKey], int]:
    """The ``limit`` agents with the most episodes (in :func:`run_agents`'s order), and how
    many agents with episodes the run has."""
    agents = [a for a in store.agents(run_id) if a["episodes"]]
    order = sorted(range(len(agents)), key=lambda i: -agents[i]["episodes"])
    kept = sorted(order[: max(0, limit)])
    return [agent_key(agents[i]["agent_id"]) for i in kept], len(agents)


def _rows(
    store: RunStore,
    run_id: str,
    started_at: float,
    after: int,
    agent: AgentKey | None,
    include_unfinished: bool = False,
) -> list[EpisodePoint]:
    more = include_unfinished
    if agent is None:
        return store.episode_rows(run_id, started_at, after, include_unfinished=more)
    if agent == NO_AGENT:
        return store.episode_rows(
            run_id, started_at, after, agentless=True, include_unfinished=more
        )
    return store.episode_rows(run_id, started_at, after, agent[1], include_unfinished=more)


class CurveError(ValueError):
    """A run has no curve to draw (no episodes, no returns, no step counts...): one line."""


@dataclass(frozen=True)
class Episodes:
    """A run's stored episodes as arrays, in ``line_no`` order. ``returns``: NaN where the
    stored value is NULL, not a number or not finite (counted by reason in ``skipped``);
    ``steps``: 0 where the line had none; ``seconds``: from the run's start, NaN where the line
    had no timestamp; ``last_line``: where a later read goes on (0 when none)."""

    run_id: str
    returns: np.ndarray
    steps: np.ndarray
    seconds: np.ndarray
    has_steps: bool
    skipped: Mapping[str, int] = field(default_factory=dict)
    last_line: int = 0

    def __len__(self) -> int:
        return len(self.returns)


@dataclass(frozen=True)
class Curve:
    """One run's learning curve: ``y`` (episode returns) at ``x``; ``x`` never decreases.
    ``skipped``: the run's episodes that have no point, by reason (see :func:`skipped_text`)."""

    run_id: str
    x_axis: str
    x: np.ndarray
    y: np.ndarray
    skipped: Mapping[str, int] = field(default_factory=dict)
    #: The agent this curve is of (see :func:`run_agents`); ``None``: the whole run.
    agent: AgentKey | None = None

    def __len__(self) -> int:
        return len(self.x)

    def smoothed(self, window: int) -> np.ndarray:
        """``y`` smoothed with a trailing moving average of ``window`` episodes."""
        return smooth(self.y, window)


@dataclass(frozen=True)
class Band:
    """The mean of several runs' (smoothed) curves and their spread, on one x grid;
    ``skipped``: the episodes of all of them that have no point, by reason."""

    label: str
    run_ids: tuple[str, ...]
    x_axis: str
    spread: str
    x: np.ndarray
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    skipped: Mapping[str, int] = field(default_factory=dict)


def episodes_from_rows(run_id: str, rows: Sequence[Sequence[float]]) -> Episodes:
    """The :class:`Episodes` of rows of ``RunStore.episode_rows``: the one place that decides
    which stored returns are on a curve and why the others are not (an unfinished episode's
    steps still count on the x axis: they were taken)."""
    data = np.array(rows, dtype=np.float64).reshape(-1, 5)
    lines, kind = data[:, 0], data[:, 2]
    returns, steps, seconds = data[:, 1].copy(), data[:, 3], data[:, 4]
    number = kind == _KIND_NUMBER
    finite = np.isfinite(returns)
    unfinished = kind == _KIND_UNFINISHED
    skipped = {
        "not_a_number": int(((kind != _KIND_NUMBER) & (kind != _KIND_NULL) & ~unfinished).sum()),
        "not_finite": int((number & ~finite).sum()),
        "no_return": int((kind == _KIND_NULL).sum()),
        "unfinished": int(unfinished.sum()),
    }
    returns[~(number & finite)] = np.nan
    has_steps = bool((steps >= 0).any())
    steps = np.where(steps >= 0, steps, 0.0)
    seconds = np.where(np.isfinite(seconds), seconds, np.nan)
    last_line = int(lines[-1]) if len(lines) else 0
    kept = {k: n for k, n in skipped.items() if n}
    return Episodes(run_id, returns, steps, seconds, has_steps, kept, last_line)


def read_episodes(
    store: RunStore,
    run_id: str,
    agent: AgentKey | None = None,
    *,
    include_unfinished: bool = False,
) -> Episodes:
    """The episodes of ``run_id`` (an id or unique prefix), of one ``agent`` or all; an
    unfinished one has no return (skipped) unless ``include_unfinished``."""
    full, started_at = store.started_at(run_id)
    return episodes_from_rows(full, _rows(store, full, started_at, 0, agent, include_unfinished))


def curve_from_episodes(
    episodes: Episodes, x_axis: str = "steps", agent: AgentKey | None = None
) -> Curve:
    """The learning curve of ``episodes`` against ``x_axis``: one point per episode with a
    finite return (the others counted by reason, :data:`SKIP_REASONS`); :class:`CurveError`
    when nothing is left to draw."""
    if x_axis not in X_AXES:
        raise ValueError(f"x axis {x_axis!r}: use one of {', '.join(X_AXES)}")
    run = episodes.run_id + ("" if agent is None else f" (agent {agent_name(agent)})")
    if len(episodes) == 0:
        raise CurveError(
            f"run {run} has no stored episodes, so no learning curve (its worker writes no "
            "episode lines, or the run has not finished one yet)"
        )
    if x_axis == "steps":
        if not episodes.has_steps:
            raise CurveError(f"run {run}'s episodes carry no step counts; use --x episodes")
        x = np.cumsum(episodes.steps)
    elif x_axis == "episodes":
        x = np.arange(1, len(episodes) + 1, dtype=np.float64)
    else:
        x = episodes.seconds
    has_return = np.isfinite(episodes.returns)
    keep = has_return & np.isfinite(x)
    skipped = dict(episodes.skipped)
    add_skipped(skipped, {"no_time": int((has_return & ~keep).sum())})
    if not keep.any():
        why = "a finite return" if x_axis != "time" else "a finite return and a timestamp"
        raise CurveError(
            f"none of run {run}'s {len(episodes)} episodes has {why} ({skipped_text(skipped)})"
        )
    x, y = x[keep], episodes.returns[keep]
    if x_axis == "time":
        x = np.maximum.accumulate(x)  # clocks step back (NTP); the curve must not
    return Curve(episodes.run_id, x_axis, x, y, skipped, agent)


def learning_curve(
    store: RunStore,
    run_id: str,
    x_axis: str = "steps",
    agent: AgentKey | None = None,
    *,
    include_unfinished: bool = False,
) -> Curve:
    """The learning curve of one run of ``store`` (read-only); of one of its agents when
    ``agent`` is given (x then counts that agent's own env steps and episodes). An episode
    the run's end cut off has no point unless ``include_unfinished``."""
    episodes = read_episodes(store, run_id, agent, include_unfinished=include_unfinished)
    return curve_from_episodes(episodes, x_axis, agent)


class RunningCurve:
    """One run's (or ``agent``'s) curve against env steps, grown as the run goes: each
    :meth:`update` reads only the episodes stored since the previous one. The points of
    ``learning_curve(store, run_id, "steps")``, but episodes without step counts sit at x = 0
    rather than refuse. Not thread-safe."""

    def __init__(
        self,
        run_id: str,
        started_at: float,
        agent: AgentKey | None = None,
        *,
        include_unfinished: bool = False,
    ) -> None:
        self.run_id = run_id
        self.agent = agent
        self.include_unfinished = include_unfinished
        self.started_at = float(started_at)
        #: Episodes read so far (on the curve and skipped).
        self.read = 0
        self.last_line = 0
        self.total_steps = 0.0
        self.skipped: dict[str, int] = {}
        self._x: list[float] = []
        self._y: list[float] = []

    def update(self, store: RunStore) -> int:
        """Read the episodes stored since the last update; how many there were."""
        rows = _rows(
            store, self.run_id, self.started_at, self.last_line, self.agent, self.include_unfinished
        )
        if not rows:
            return 0
        part = episodes_from_rows(self.run_id, rows)
        ends = np.cumsum(part.steps) + self.total_steps
        keep = np.isfinite(part.returns)
        self._x.extend(ends[keep].tolist())
        self._y.extend(part.returns[keep].tolist())
        self.total_steps = float(ends[-1])
        self.last_line = part.last_line
        self.read += len(part)
        add_skipped(self.skipped, part.skipped)
        return len(part)

    def curve(self) -> Curve:
        """The curve read so far (arrays of its own: later updates do not change it)."""
        x = np.asarray(self._x, dtype=np.float64)
        y = np.asarray(self._y, dtype=np.float64)
        return Curve(self.run_id, "steps", x, y, dict(self.skipped), self.agent)


def smooth(y: np.ndarray, window: int) -> np.ndarray:
    """Trailing moving average: point i is the mean of ``y[max(0, i-window+1) : i+1]``."""
    y = np.asarray(y, dtype=np.float64)
    if window <= 1 or len(y) == 0:
        return y.copy()
    sums = np.concatenate(([0.0], np.cumsum(y)))
    idx = np.arange(1, len(y) + 1)
    start = np.maximum(idx - window, 0)
    return (sums[idx] - sums[start]) / (idx - start)


def aggregate(
    curves: Sequence[Curve],
    *,
    window: int = 1,
    spread: str = "minmax",
    label: str = "",
    points: int = 1000,
) -> Band:
    """The mean and spread (``minmax`` or ``std``) of ``curves``, each smoothed over
    ``window`` episodes, on ``points`` x values over the range all of them cover."""
    if not curves:
        raise ValueError("aggregate() needs at least one curve")
    if spread not in SPREADS:
        raise ValueError(f"spread {spread!r}: use one of {', '.join(SPREADS)}")
    axes = {c.x_axis for c in curves}
    if len(axes) != 1:
        raise ValueError(f"curves against different x axes: {sorted(axes)}")
    lo = max(float(c.x[0]) for c in curves)
    hi = min(float(c.x[-1]) for c in curves)
    ids = tuple(c.run_id for c in curves)
    if hi < lo:
        raise CurveError(
            f"runs {', '.join(ids)} share no range of {X_LABELS[curves[0].x_axis]} "
            f"({lo:g} is past {hi:g}); plot them without --group-seeds"
        )
    longest = max(len(c) for c in curves)
    n = max(1, min(points, longest)) if hi > lo else 1
    grid = np.linspace(lo, hi, n)
    ys = np.vstack([np.interp(grid, c.x, c.smoothed(window)) for c in curves])
    mean = ys.mean(axis=0)
    if spread == "minmax":
        low, high = ys.min(axis=0), ys.max(axis=0)
    else:
        std = ys.std(axis=0)
        low, high = mean - std, mean + std
    skipped: dict[str, int] = {}
    for c in curves:
        add_skipped(skipped, c.skipped)
    return Band(label, ids, curves[0].x_axis, spread, grid, mean, low, high, skipped)


def downsample(x: np.ndarray, y: np.ndarray, points: int) -> tuple[np.ndarray, np.ndarray]:
    """At most about ``points`` points of a long curve: each of ``points // 2`` buckets keeps
    its lowest and highest point, so spikes stay visible."""
    n = len(x)
    if points < 4 or n <= points:
        return x, y
    buckets = points // 2
    size = math.ceil(n / buckets)
    pad = buckets * size - n
    yy = np.concatenate([y, np.full(pad, np.nan)]).reshape(buckets, size)
    filled = np.where(np.isnan(yy), np.inf, yy)
    lo_i = np.argmin(filled, axis=1)
    hi_i = np.argmax(np.where(np.isnan(yy), -np.inf, yy), axis=1)
    base = np.arange(buckets) * size
    picks = np.sort(np.concatenate([base + lo_i, base + hi_i]))
    picks = np.unique(picks[picks < n])
    return x[picks], y[picks]


def envelope(
    x: np.ndarray, y: np.ndarray, buckets: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(x, low, high)`` of a long curve cut into ``buckets``: each one's mean x and its
    lowest and highest y (drawn as a band instead of a line through thousands of points)."""
    n = len(x)
    buckets = max(1, min(buckets, n))
    size = math.ceil(n / buckets)
    buckets = math.ceil(n / size)
    pad = buckets * size - n
    xx = np.concatenate([x, np.full(pad, np.nan)]).reshape(buckets, size)
    yy = np.concatenate([y, np.full(pad, np.nan)]).reshape(buckets, size)
    return np.nanmean(xx, axis=1), np.nanmin(yy, axis=1), np.nanmax(yy, axis=1)


__all__ = [
    "NO_AGENT",
    "SKIP_REASONS",
    "SPREADS",
    "X_AXES",
    "X_LABELS",
    "Band",
    "Curve",
    "CurveError",
    "Episodes",
    "RunningCurve",
    "AgentKey",
    "add_skipped",
    "AGENT_NAME_MAX",
    "agent_key",
    "agent_name",
    "aggregate",
    "curve_from_episodes",
    "downsample",
    "envelope",
    "episodes_from_rows",
    "learning_curve",
    "read_episodes",
    "run_agents",
    "top_agents",
    "skipped_text",
    "smooth",
]
