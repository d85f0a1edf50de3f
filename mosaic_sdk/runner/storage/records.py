"""The records of the store, typed once: what :class:`~mosaic_sdk.runner.storage.store.RunStore`
reads back (plain dicts: ``TypedDict``) and what the observer plugins are handed (named tuples).

A column a worker fills holds what it wrote, as SQLite keeps it: :data:`Stored` (an
``episode_index`` of ``"abc"`` stays text; the ``raw`` line keeps the rest).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple, TypeAlias, TypedDict

if TYPE_CHECKING:  # annotations only: the CLI starts without numpy
    import numpy as np

from mosaic_sdk.json_types import JsonObject, JsonValue

#: A value a worker wrote, as a column of the store holds it (SQLite's storage classes but
#: BLOB, which the runner never binds). A JSON ``true`` is stored as 1.
Stored: TypeAlias = int | float | str | None


class RunCounts(TypedDict):
    """The counts of a run (``step_lines``, ``env_steps``, ``games`` and ``agent_episodes``
    are worked out when read)."""

    #: step lines stored (the same as ``step_lines``; kept under its old name)
    steps: int
    #: step lines stored: fewer than the env steps when a worker throttles them
    step_lines: int
    #: environment steps: the ``steps`` of the episode lines plus the step lines after an
    #: agent's last one, summed over agents; never fewer than the step lines
    env_steps: int
    #: finished episodes: the episode lines stored but those flagged unfinished (a
    #: multi-agent run writes one per agent per game)
    episodes: int
    #: episode lines flagged unfinished (cut off by the run's end: in no count of episodes,
    #: see ``docs/reference/telemetry.md``); 0 on a store older than the flag, read-only
    unfinished_episodes: int
    #: multi-agent runs: games (distinct ``episode_index``) and the agents' episode lines,
    #: finished ones; None for a single-agent run
    games: int | None
    agent_episodes: int | None
    events: int
    log_lines: int
    invalid_lines: int
    stderr_lines: int
    #: stdout lines read (telemetry or not)
    lines: int
    #: series points stored, and values refused as points (:meth:`RunStore.series_counts`)
    series_points: int
    series_refused: int


class ObserverRecord(TypedDict):
    """What one observer plugin got of a run and what it missed (``runs.observers_json``; see
    :class:`~mosaic_sdk.runner.recording.observers.ObserverReport`)."""

    name: str
    delivered_steps: int
    delivered_episodes: int
    missed_steps: int
    missed_episodes: int
    #: ``"ExcType: message"`` of the exception that disabled it, or None.
    error: str | None
    #: series points given to ``mosaic_telemetry_series`` and missed (version 5)
    delivered_points: int
    missed_points: int


#: The runner's events when a run passes its stall limit, and when lines come again
#: (:mod:`mosaic_sdk.runner.recording.health`).
STALLED_EVENT = "stalled"
RECOVERED_EVENT = "recovered"


class RunRecord(TypedDict):
    """A stored run as :meth:`RunStore.get_run` and ``list_runs`` return it: the ``runs``
    row, the counts gathered in ``counts``, the JSON columns decoded, ``runner_alive``
    (None when unknown, e.g. on another host) and ``duration_seconds`` (until now while
    it runs)."""

    run_id: str
    worker: str
    #: ``running`` | ``completed`` | ``failed`` | ``cancelled``
    status: str
    exit_code: int | None
    error: str | None
    started_at: float
    ended_at: float | None
    runner_pid: int | None
    runner_host: str | None
    worker_pid: int | None
    run_dir: str | None
    stderr_path: str | None
    last_episode_return: float | None
    lost_rows: int
    #: the control protocol the worker claims (None: it reads no commands)
    control_protocol: int | None
    counts: RunCounts
    config: JsonObject | None
    argv: list[str] | None
    observers: list[ObserverRecord]
    runner_alive: bool | None
    #: the payload of the ``stalled`` event (with its ``ts_unix_ns``) while stalled, else None
    stalled: JsonObject | None
    duration_seconds: float


class EventRecord(TypedDict):
    """A stored lifecycle event (``events`` table, without the run id and the raw line)."""

    line_no: int
    seq: Stored
    event: str
    ts_unix_ns: Stored
    #: 1 for an event the runner wrote itself (a ``run_failed`` for a worker that died...)
    synthesised: int
    #: the payload as JSON text (None: the line had none, or it could not be encoded)
    payload_json: str | None


class LogLineRecord(TypedDict):
    """A stored log line (``log_lines`` table, without the run id)."""

    #: ``stdout`` | ``stderr``
    stream: str
    line_no: int
    #: ``log`` | ``invalid`` | ``unstored``
    kind: str
    #: 1 for a last line that ended without a newline
    partial: int
    error: str | None
    text: str


class AgentSummary(TypedDict):
    """One agent of a multi-agent run (:meth:`RunStore.agents`); a return is None when the
    agent has no numeric one."""

    #: None: the run's rows without an ``agent_id``
    agent_id: str | None
    #: step lines of the agent
    steps: int
    #: env steps of the agent (see :class:`RunCounts`)
    env_steps: int
    episodes: int
    mean_return: float | None
    min_return: float | None
    max_return: float | None
    last_return: float | None


class StepRow(NamedTuple):
    """One stored step: the columns of the ``steps`` table, in order, as the writer bound
    them (SQLite may store them converted: ``True`` as 1)."""

    run_id: str
    line_no: int
    seq: Stored
    episode_index: Stored
    step_index: Stored
    reward: Stored
    terminated: Stored
    truncated: Stored
    ts_unix_ns: Stored
    raw: str
    agent_id: Stored


class EpisodeRow(NamedTuple):
    """One stored episode: the columns of the ``episodes`` table, in order, as the writer
    bound them (SQLite may store them converted: ``True`` as 1)."""

    run_id: str
    line_no: int
    seq: Stored
    episode_index: Stored
    total_reward: Stored
    steps: Stored
    terminated: Stored
    truncated: Stored
    ts_unix_ns: Stored
    raw: str
    agent_id: Stored
    #: 1 for an episode the run's end cut off (``metadata.unfinished``), else 0 (version 9)
    unfinished: int = 0


#: Rows of a batch as the ingest builds them (plain tuples: :class:`StepRow`'s or
#: :class:`EpisodeRow`'s values; events and logs in their ``INSERT`` column order).
TelemetryValues: TypeAlias = tuple[
    str, int, Stored, Stored, Stored, Stored, Stored, Stored, Stored, str, Stored
]
#: An episode row of a batch: :data:`TelemetryValues` and its ``unfinished`` flag (0 or 1).
EpisodeValues: TypeAlias = tuple[
    str, int, Stored, Stored, Stored, Stored, Stored, Stored, Stored, str, Stored, int
]
EventValues: TypeAlias = tuple[str, int, Stored, str, Stored, int, str | None, str]
LogValues: TypeAlias = tuple[str, str, int, str, int, str | None, str]
#: A row of ``mosaic runs export``: the values of the exported columns.
ExportValues: TypeAlias = tuple[Stored, ...]
#: An episode as a learning curve reads it (:meth:`RunStore.episode_rows`).
EpisodePoint: TypeAlias = tuple[float, float, int, float, float]
#: A series of a batch as the ingest numbers it: ``(run_id, series_id, name, agent_id)``.
SeriesValues: TypeAlias = tuple[str, int, str, str | None]
#: A point of a batch, in the column order of ``series_points`` (``value`` may be NaN).
PointValues: TypeAlias = tuple[str, int, int, int, int, float]


class SeriesPoint(NamedTuple):
    """One point of a series as observer plugins get it (``mosaic_telemetry_series``)."""

    run_id: str
    name: str
    agent_id: str | None
    step: int
    #: may be NaN or infinite
    value: float
    #: the line's time, ns since the epoch
    wall_ns: int


@dataclass(frozen=True)
class SeriesInfo:
    """One series of a run as :meth:`RunStore.series` lists it; its last point is that of
    the largest step, then the latest wall time (its value may be NaN or infinite)."""

    name: str
    agent_id: str | None
    points: int
    first_step: int
    last_step: int
    last_value: float
    last_wall_ns: int


@dataclass(frozen=True)
class SeriesPoints:
    """The points of one series (:meth:`RunStore.series_points`), by step, then wall time
    (``values`` keeps NaN and infinities)."""

    name: str
    agent_id: str | None
    steps: list[int]
    values: list[float]
    wall_ns: list[int]


@dataclass(frozen=True, eq=False)
class SeriesColumns:
    """Points of one series as numpy columns (:meth:`RunStore.series_columns`), by step, then
    wall time: ``steps`` (int64), ``values`` (float64: NaN and infinities kept), ``wall_ns``.

    ``downsampled`` True: the lowest and highest finite point of each of ``buckets`` equal
    step ranges (real points, in step order), not every point. ``points`` and
    ``not_finite`` count all the range's points and those that are NaN or infinite."""

    name: str
    agent_id: str | None
    steps: np.ndarray
    values: np.ndarray
    wall_ns: np.ndarray
    points: int
    not_finite: int
    downsampled: bool = False

    def __len__(self) -> int:
        return len(self.steps)


class SeriesCounts(TypedDict):
    """What a run's series hold (:meth:`RunStore.series_counts`)."""

    #: points stored
    points: int
    #: values not stored: no number, no integer step, a name too long, or past the limits
    refused: int
    #: distinct (name, agent_id) series
    series: int


def columns_of(record: type) -> tuple[str, ...]:
    """The keys of a record type in their order (its SQL ``SELECT`` list)."""
    return tuple(record.__annotations__)


__all__ = [
    "AgentSummary",
    "EpisodePoint",
    "EpisodeRow",
    "EpisodeValues",
    "EventRecord",
    "EventValues",
    "ExportValues",
    "JsonObject",
    "RECOVERED_EVENT",
    "STALLED_EVENT",
    "JsonValue",
    "LogLineRecord",
    "LogValues",
    "ObserverRecord",
    "RunCounts",
    "PointValues",
    "RunRecord",
    "SeriesColumns",
    "SeriesCounts",
    "SeriesInfo",
    "SeriesPoint",
    "SeriesPoints",
    "SeriesValues",
    "Stored",
    "StepRow",
    "TelemetryValues",
    "columns_of",
]
