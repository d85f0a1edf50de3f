"""The records of the store, typed once: what :class:`~mosaic_sdk.runner.storage.store.RunStore`
reads back and what the observer plugins are handed.

Rows read from the store are plain dicts (``TypedDict``: no object is built per row, and
``json.dumps`` prints them as they are); rows handed to observers are named tuples made when
read (:class:`StepRow`, :class:`EpisodeRow`). Their users are ``mosaic runs``
(:mod:`mosaic_sdk.cli`), ``mosaic watch`` (:mod:`mosaic_sdk.watch.data`), the curves
(:mod:`mosaic_sdk.plots`), the export (:mod:`mosaic_sdk.runner.storage.export`) and the
observer feed (:mod:`mosaic_sdk.runner.recording.observers`).

What the runner decides has its own type (``line_no: int``, ``raw: str``, ``event: str``...);
a column a worker fills holds what it wrote, as SQLite keeps it: :data:`Stored` (an integer,
a float, text, or NULL: an ``episode_index`` of ``"abc"`` stays text; the ``raw`` line keeps
the rest). A run's config is JSON (:data:`JsonObject`, defined in :mod:`mosaic_sdk.json_types`
and re-exported here).
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
    """The counts of a run, each named for what it counts. The writer updates the stored
    ones with the rows they count; ``step_lines``, ``env_steps``, ``games`` and
    ``agent_episodes`` are worked out when read."""

    #: step lines stored (the same as ``step_lines``; kept under its old name)
    steps: int
    #: step lines stored: fewer than the env steps when a worker throttles them
    step_lines: int
    #: environment steps: the sum of the ``steps`` of the episode lines plus the step lines
    #: of the episodes not finished (after an agent's last episode line), per agent summed
    #: for a multi-agent run; never fewer than the step lines
    env_steps: int
    #: episode lines stored (a multi-agent run writes one per agent per game)
    episodes: int
    #: multi-agent runs: games (distinct ``episode_index``) and the agents' episode lines;
    #: None for a single-agent run
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


#: The runner's lifecycle events (``synthesised``) when a run passes its stall limit, and when
#: lines come again (decided by :mod:`mosaic_sdk.runner.recording.health`; read back by the
#: store to give a running run's ``stalled``).
STALLED_EVENT = "stalled"
RECOVERED_EVENT = "recovered"


class RunRecord(TypedDict):
    """A stored run as :meth:`RunStore.get_run` and ``list_runs`` return it (and ``mosaic runs
    list/show --json`` print it): the ``runs`` row, with the counts gathered in ``counts``, the
    JSON columns decoded, and two figures of the reading: ``runner_alive`` (whether the
    runner of a ``running`` run still lives: None when unknown, e.g. on another host) and
    ``duration_seconds`` (until now for a run that has not ended)."""

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
    #: the payload of the runner's ``stalled`` event while a running run is stalled (its
    #: ``ts_unix_ns`` added), else None (:mod:`mosaic_sdk.runner.recording.health`)
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
    """The steps, episodes and returns of one agent of a multi-agent run
    (:meth:`RunStore.agents`); a return is None when the agent has no numeric one."""

    #: None: the run's rows without an ``agent_id``
    agent_id: str | None
    #: step lines of the agent
    steps: int
    #: env steps of the agent (the sum of its episodes' ``steps``, plus its step lines after
    #: its last episode line; at least its step lines)
    env_steps: int
    episodes: int
    mean_return: float | None
    min_return: float | None
    max_return: float | None
    last_return: float | None


class StepRow(NamedTuple):
    """One stored step: the columns of the ``steps`` table, in order, holding the values the
    writer bound (SQLite's column types may store them converted: ``True`` as 1, an integer
    ``agent_id`` as text)."""

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
    """One stored episode: the columns of the ``episodes`` table, in order, holding the values
    the writer bound (SQLite's column types may store them converted: ``True`` as 1, an
    integer ``agent_id`` as text)."""

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


#: A row of a batch as the ingest builds it: :class:`StepRow`'s or :class:`EpisodeRow`'s
#: values (a plain tuple: the hot path makes no objects), then the event and log rows in the
#: column order of their ``INSERT`` statements.
TelemetryValues: TypeAlias = tuple[
    str, int, Stored, Stored, Stored, Stored, Stored, Stored, Stored, str, Stored
]
EventValues: TypeAlias = tuple[str, int, Stored, str, Stored, int, str | None, str]
LogValues: TypeAlias = tuple[str, str, int, str, int, str | None, str]
#: A row of ``mosaic runs export``: the values of the exported columns.
ExportValues: TypeAlias = tuple[Stored, ...]
#: An episode as a learning curve reads it (:meth:`RunStore.episode_rows`): ``(line_no,
#: return, kind, steps, seconds since the run's start)``, numbers numpy takes at once.
EpisodePoint: TypeAlias = tuple[float, float, int, float, float]


#: A series of a batch as the ingest numbers it: ``(run_id, series_id, name, agent_id)``.
SeriesValues: TypeAlias = tuple[str, int, str, str | None]
#: A point of a batch: ``(run_id, series_id, step, wall_ns, line_no, value)``, the column
#: order of ``series_points`` (``value`` may be NaN or infinite).
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
    """One series of a run as :meth:`RunStore.series` lists it: its name (TensorBoard's
    ``group/name``), its ``agent_id`` (None for none), how many points it has, its first and
    last step, and its last point's value (the point of the largest step, then the latest
    wall time; may be NaN or infinite) and wall time (ns since the epoch)."""

    name: str
    agent_id: str | None
    points: int
    first_step: int
    last_step: int
    last_value: float
    last_wall_ns: int


@dataclass(frozen=True)
class SeriesPoints:
    """The points of one series (:meth:`RunStore.series_points`), by step, then wall time:
    three lists of one length (``values`` keeps NaN and infinities)."""

    name: str
    agent_id: str | None
    steps: list[int]
    values: list[float]
    wall_ns: list[int]


@dataclass(frozen=True, eq=False)
class SeriesColumns:
    """Points of one series as numpy columns (:meth:`RunStore.series_columns`), by step, then
    wall time: ``steps`` (int64), ``values`` (float64: NaN and infinities kept) and ``wall_ns``
    (int64, ns since the epoch), of one length.

    ``downsampled`` False: every point of the range asked for. True: the range held more
    points than a picture of ``buckets`` pixel columns can show, and these are, in each of
    the ``buckets`` equal step ranges, its lowest and its highest finite point (real points,
    at their own step, in step order; read from block summaries, up to one block from the
    range's edges): what a line drawn through all of them covers in each column. ``points``
    and ``not_finite`` count the range's points (all of them, drawn or not) and those whose
    value is NaN or infinite."""

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
    #: values not stored: not a number (a string, a list, a bool), no integer step, a name
    #: too long, or past the run's limit of distinct series
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
