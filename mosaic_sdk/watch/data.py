"""What ``mosaic watch`` reads from the store (always read-only): runs, events, log lines and
learning curves. Values come back as the worker wrote them: escaping is the page's job."""

from __future__ import annotations

import base64
import json
import math
import os
import re
import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TypedDict

import numpy as np

from mosaic_sdk.control.protocol import PROTOCOL_VERSION as CONTROL_PROTOCOL
from mosaic_sdk.control.protocol import SOCKET_NAME
from mosaic_sdk.fastlane.writer import agent_stream_id, create_fastlane_name
from mosaic_sdk.json_types import JsonObject
from mosaic_sdk.plots.curves import AgentKey, Curve, RunningCurve, skipped_text
from mosaic_sdk.runner.storage.records import (
    AgentSummary,
    EventRecord,
    LogLineRecord,
    RunCounts,
    RunRecord,
)
from mosaic_sdk.runner.storage.store import RunStore, StoreError, status_text
from mosaic_sdk.telemetry.emitter import MAX_STEP

#: The most points of one curve the server sends (raw and smoothed each).
MAX_POINTS = 1000
#: Where POSIX shared-memory segments are listed (Linux); elsewhere a run shows its own stream.
SHM_DIR = Path("/dev/shm")
#: The lifecycle event a policy evaluation writes after each batch of episodes.
EVAL_BATCH_EVENT = "policy_eval_batch"
#: The file a policy evaluation keeps up to date in its run directory, and its schema prefix.
EVAL_SUMMARY_FILE = "eval_summary.json"
EVAL_SUMMARY_SCHEMA = "mosaic.cleanrl.eval_summary/"


class StreamRow(TypedDict):
    """A FastLane stream of the run page (``worker``: None for the run's own stream)."""

    stream: str
    label: str
    worker: int | None


def run_streams(run_id: str) -> list[StreamRow]:
    """The FastLane streams a run page shows: each ``{run_id}-w{n}`` stream whose segment
    exists (:func:`mosaic_sdk.fastlane.agent_stream_id`), and the run's own stream when it
    exists or when there is no per-agent one."""
    own: StreamRow = {"stream": run_id, "label": "run", "worker": None}
    prefix = create_fastlane_name(agent_stream_id(run_id, 0))[:-1]
    try:
        names = os.listdir(SHM_DIR)
    except OSError:
        return [own]
    numbers = sorted(
        int(name[len(prefix) :])
        for name in names
        if name.startswith(prefix) and name[len(prefix) :].isdigit()
    )
    if not numbers:
        return [own]
    streams: list[StreamRow] = [
        {"stream": agent_stream_id(run_id, n - 1), "label": f"agent stream {n}", "worker": n}
        for n in numbers
        if n >= 1
    ]
    if create_fastlane_name(run_id) in names:
        streams.insert(0, own)
    return streams


def stream_of_run(run_id: str, stream: str | None) -> str:
    """``stream`` when it is one of the run's (its own, or ``{run_id}-w{n}``); ValueError
    otherwise: a page reads the frames of the run it shows, nothing else."""
    if stream is None or stream == "" or stream == run_id:
        return run_id
    if re.fullmatch(re.escape(run_id) + r"-w[1-9][0-9]{0,5}", stream):
        return stream
    raise ValueError(f"stream {stream!r:.80} is not one of run {run_id}'s FastLane streams")


class AgentRow(AgentSummary):
    """An agent of the run page: its :class:`AgentSummary` and how the page names it."""

    label: str


def agent_rows(store: RunStore, run_id: str) -> list[AgentRow]:
    """The agents of a multi-agent run (``[]`` for one agent)."""
    return [
        {**a, "label": "(no agent_id)" if a["agent_id"] is None else str(a["agent_id"])}
        for a in store.agents(run_id)
    ]


class StoreMissingError(StoreError):
    """The store file does not exist (yet): no run has been started with it."""


def open_store(path: Path) -> RunStore:
    """The store opened read-only; :class:`StoreMissingError` when there is no file yet."""
    if not path.exists():
        raise StoreMissingError(
            f"no store at {path} yet: start a run with `mosaic run NAME --store {path}` "
            "(or pass the store your runs use: mosaic watch --store PATH)"
        )
    return RunStore(path, readonly=True)


def control_commands(run: RunRecord) -> list[str]:
    """The buttons the run page offers (only stop for a worker that reads no commands)."""
    if run.get("control_protocol") == CONTROL_PROTOCOL:
        return ["pause", "resume", "stop"]
    return ["stop"]


def control_available(run: RunRecord) -> bool:
    """Whether the run's directory holds a control socket (the runner made one)."""
    run_dir = run.get("run_dir")
    if not run_dir or run["status"] != "running":
        return False
    try:
        return (Path(run_dir) / SOCKET_NAME).is_socket()
    except OSError:
        return False


class RunRow(TypedDict):
    """One line of the runs page (``/api/runs``)."""

    run_id: str
    worker: str
    status: str
    stalled: JsonObject | None
    env_id: str | None
    steps: int
    env_steps: int
    episodes: int
    last_return: float | None
    started_at: float
    ended_at: float | None
    duration_seconds: float


class NamedCounts(TypedDict):
    """What a run's numbers count, named apart (``games`` and ``agent_episodes``: None but
    for a multi-agent run)."""

    env_steps: int
    step_lines: int
    episodes: int
    games: int | None
    agent_episodes: int | None


def named_counts(run: RunRecord) -> NamedCounts:
    """The run's :class:`NamedCounts`, from the store's counts."""
    c = run["counts"]
    return {
        "env_steps": c["env_steps"],
        "step_lines": c["step_lines"],
        "episodes": c["episodes"],
        "games": c["games"],
        "agent_episodes": c["agent_episodes"],
    }


class RunDetail(RunRow):
    """The run page's summary (``/api/runs/{run_id}``)."""

    named_counts: NamedCounts
    agents: list[AgentRow]
    streams: list[StreamRow]
    evaluation: bool
    counts: RunCounts
    config: JsonObject | None
    exit_code: int | None
    error: str | None
    run_dir: str | None
    control: bool
    control_commands: list[str]
    host: str | None
    same_host: bool


def run_row(run: RunRecord) -> RunRow:
    """One line of the runs page."""
    config = run.get("config") or {}
    env = config.get("env_id") if isinstance(config, dict) else None
    return {
        "run_id": run["run_id"],
        "worker": run["worker"],
        "status": status_text(run),  # the text `mosaic runs` shows
        "stalled": run.get("stalled"),  # the runner's stalled event while the run is stalled
        "env_id": None if env is None else str(env),
        "steps": run["counts"]["steps"],
        "env_steps": run["counts"]["env_steps"],
        "episodes": run["counts"]["episodes"],
        "last_return": run["last_episode_return"],
        "started_at": run["started_at"],
        "ended_at": run["ended_at"],
        "duration_seconds": run["duration_seconds"],
    }


class RunList(TypedDict):
    """The runs page (``/api/runs``): its rows, and the workers and statuses to filter by."""

    runs: list[RunRow]
    workers: list[str]
    statuses: list[str]


def list_runs(path: Path, status: str | None = None, worker: str | None = None) -> RunList:
    """Every run of the store (newest first), filtered, with the workers and statuses seen."""
    with open_store(path) as store:
        stored = store.list_runs(limit=None)
    runs = [run_row(r) for r in stored]
    workers = sorted({r["worker"] for r in runs})
    statuses = sorted({r["status"] for r in stored})  # "running" also finds runner-died runs
    if status:
        runs = [r for r in runs if r["status"] == status or r["status"].startswith(status + " ")]
    if worker:
        runs = [r for r in runs if r["worker"] == worker]
    return {"runs": runs, "workers": workers, "statuses": statuses}


def run_detail(path: Path, run_id: str) -> RunDetail:
    """The run page's summary: the row, its counts, config, and what can be shown live."""
    with open_store(path) as store:
        run = store.get_run(run_id)
        agents = agent_rows(store, run["run_id"])
        evaluation = bool(store.events_named(run["run_id"], EVAL_BATCH_EVENT, limit=1))
    run_dir = run["run_dir"]
    if not evaluation and run_dir:
        evaluation = (Path(run_dir) / EVAL_SUMMARY_FILE).is_file()
    return {
        **run_row(run),
        "named_counts": named_counts(run),
        "agents": agents,
        "streams": run_streams(run["run_id"]),
        "evaluation": evaluation,
        "counts": run["counts"],
        "config": run["config"],
        "exit_code": run["exit_code"],
        "error": run["error"],
        "run_dir": run["run_dir"],
        "control": control_available(run),
        "control_commands": control_commands(run),
        "host": run["runner_host"],
        "same_host": run["runner_host"] in (None, socket.gethostname()),
    }


def events_after(path: Path, run_id: str, after: int, limit: int = 500) -> list[EventRecord]:
    """The run's lifecycle events with ``line_no > after`` (the last ``limit`` when ``after``
    is below 0: the page's first look at a long run)."""
    with open_store(path) as store:
        full = store.resolve(run_id)
        if after < 0:
            return store.events(full, limit=limit)
        return store.events_after(full, after, limit)


def logs_after(
    path: Path, run_id: str, after: dict[str, int], limit: int = 500
) -> list[LogLineRecord]:
    """Log lines of both streams past the page's cursors (``after[stream]``; below 0: the
    last ``limit`` lines of that stream)."""
    out: list[LogLineRecord] = []
    with open_store(path) as store:
        full = store.resolve(run_id)
        for stream in ("stdout", "stderr"):
            cursor = after.get(stream, -1)
            out.extend(
                store.log_lines(full, limit=limit, stream=stream)
                if cursor < 0
                else store.log_lines_after(full, stream, cursor, limit)
            )
    return out


def eval_batches(path: Path, run_id: str, after: int = 0) -> dict[str, object]:
    """A policy evaluation's batches past ``after`` (one row per ``policy_eval_batch`` event;
    ``line_no``: the cursor), and ``summary``: the run's ``eval_summary.json`` or None."""
    with open_store(path) as store:
        run = store.get_run(run_id)
        events = store.events_named(run["run_id"], EVAL_BATCH_EVENT, after)
    batches = []
    for e in events:
        try:
            payload = json.loads(e["payload_json"] or "{}")
        except ValueError:
            continue
        if not isinstance(payload, dict):
            continue
        batches.append(
            {
                "line_no": e["line_no"],
                "batch": payload.get("batch"),
                "episodes": payload.get("episodes"),
                "batch_episodes": payload.get("batch_episodes"),
                "avg": finite_or_none(payload.get("batch_avg_return")),
                "min": finite_or_none(payload.get("batch_min_return")),
                "max": finite_or_none(payload.get("batch_max_return")),
                "overall_avg": finite_or_none(payload.get("avg_return")),
            }
        )
    return {"run_id": run["run_id"], "batches": batches, "summary": _eval_summary(run)}


def _eval_summary(run: RunRecord) -> JsonObject | None:
    run_dir = run["run_dir"]
    if not run_dir:
        return None
    try:
        summary = json.loads((Path(run_dir) / EVAL_SUMMARY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # absent, or caught between two writes
        return None
    if isinstance(summary, dict) and str(summary.get("schema", "")).startswith(EVAL_SUMMARY_SCHEMA):
        return summary
    return None


def finite_or_none(value: object) -> float | None:
    """``value`` as a float when it is a finite number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


class CurveCache:
    """Learning curves of runs, one :class:`~mosaic_sdk.plots.curves.RunningCurve` each: a
    request reads only the episodes stored since the previous one."""

    def __init__(self, store_path: Path) -> None:
        self.store_path = store_path
        self._curves: dict[tuple[str, AgentKey | None, bool], RunningCurve] = {}
        self._lock = threading.Lock()

    def _update(
        self,
        store: RunStore,
        run_id: str,
        agent: AgentKey | None = None,
        include_unfinished: bool = False,
    ) -> tuple[Curve, int]:
        started_at = float(store.get_run(run_id)["started_at"])
        key = (run_id, agent, include_unfinished)
        with self._lock:
            running = self._curves.get(key)
            if running is None or running.started_at != started_at:  # new, or a new run
                running = RunningCurve(
                    run_id, started_at, agent, include_unfinished=include_unfinished
                )
                self._curves[key] = running
            running.update(store)
            return running.curve(), running.read

    def curve(
        self,
        run_id: str,
        *,
        smooth: int = 20,
        points: int = MAX_POINTS,
        known: int = -1,
        agent: AgentKey | None = None,
        include_unfinished: bool = False,
    ) -> dict[str, object]:
        """The run's (or ``agent``'s) curve, raw and smoothed over ``smooth`` episodes, at most
        ``points`` points each. ``known``: the ``read`` the page already has; when no episode
        came since, only ``{"episodes", "read", "unchanged": true}`` is returned. An episode
        the run's end cut off has no point (it is ``skipped``) unless ``include_unfinished``."""
        started = time.perf_counter()
        with open_store(self.store_path) as store:
            full = store.resolve(run_id)
            curve, read = self._update(store, full, agent, include_unfinished)
        n = len(curve)
        if read == known:
            return {"run_id": full, "episodes": n, "read": read, "unchanged": True}
        smooth = max(1, min(int(smooth), 10_000))
        keep = downsample_indices(curve.y, max(2, min(points, MAX_POINTS)))
        return {
            "run_id": full,
            "episodes": n,
            "read": read,
            "unchanged": False,
            "smooth": smooth,
            "raw": _pairs(curve.x[keep], curve.y[keep]),
            "smoothed": _pairs(curve.x[keep], curve.smoothed(smooth)[keep]),
            "skipped": dict(curve.skipped),
            "skipped_text": skipped_text(curve.skipped),
            "build_ms": round((time.perf_counter() - started) * 1000, 2),
        }


class SeriesRow(TypedDict):
    """One series of a run as the chart pages list it (``/api/runs/{run_id}/series``)."""

    name: str
    agent_id: str | None
    points: int
    first_step: int
    last_step: int
    #: a number, or ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` (JSON has no such numbers)
    last_value: float | str
    #: seconds since the epoch
    last_wall: float


#: The most points of one series one request returns (a page asks again from the last step).
MAX_SERIES_POINTS = 200_000
#: The most series one points request reads.
MAX_SERIES_PER_REQUEST = 200
#: The most points one answer of the points or batch API holds, its series together (24 MB
#: of columns in a batch answer): without ``buckets`` each of ``n`` series gets at most
#: ``MAX_ANSWER_POINTS // n`` (``more`` says when it has more: ask again past ``through``);
#: ``buckets`` that could give more (two points a bucket) are refused.
MAX_ANSWER_POINTS = 1_000_000


def json_number(value: float) -> float | str:
    """``value``, or its name when JSON has no number for it (``"NaN"``, ``"Infinity"``,
    ``"-Infinity"``: what JavaScript's ``Number()`` reads back)."""
    if math.isfinite(value):
        return value
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def series_list(path: Path, run_id: str, pattern: str | None = None) -> dict[str, object]:
    """The run's series (``pattern``: an fnmatch glob on the name), with the store's counts."""
    with open_store(path) as store:
        run = store.get_run(run_id)
        full = run["run_id"]
        infos = store.series(full, pattern or None)
        counts = store.series_counts(full)
    rows: list[SeriesRow] = [
        {
            "name": i.name,
            "agent_id": i.agent_id,
            "points": i.points,
            "first_step": i.first_step,
            "last_step": i.last_step,
            "last_value": json_number(i.last_value),
            "last_wall": i.last_wall_ns / 1e9,
        }
        for i in infos
    ]
    return {
        "run_id": full,
        "status": status_text(run),
        "started_at": run["started_at"],
        "pattern": pattern,
        "series": rows,
        "counts": dict(counts),
    }


class SeriesWanted(TypedDict):
    """One series a page asks the points of: its name, agent, the last step it has
    (``after_step``) and, for a zoom, the last step it wants (``through_step``)."""

    name: str
    agent_id: str | None
    after_step: int | None
    through_step: int | None


def _is_step(value: object) -> bool:
    return value is None or (
        isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63
    )


def parse_wanted(raw: str) -> list[SeriesWanted]:
    """The ``series`` query parameter of the points API: a JSON list of ``{"name", "agent_id",
    "after_step", "through_step"}`` (the last three optional); ValueError saying what is
    wrong otherwise."""
    hint = (
        'series= takes a JSON list like [{"name": "losses/value", "agent_id": null, '
        '"after_step": 120}]'
    )
    try:
        items = json.loads(raw)
    except ValueError:
        raise ValueError(f"{hint}; got {raw!r:.80}, not JSON") from None
    if not isinstance(items, list) or not items:
        raise ValueError(f"{hint}; got {raw!r:.80}")
    if len(items) > MAX_SERIES_PER_REQUEST:
        raise ValueError(f"at most {MAX_SERIES_PER_REQUEST} series a request; got {len(items)}")
    out: list[SeriesWanted] = []
    for item in items:
        given = item if isinstance(item, dict) else {}
        name, agent = given.get("name"), given.get("agent_id")
        after, through = given.get("after_step"), given.get("through_step")
        if (
            not isinstance(name, str)
            or not (agent is None or isinstance(agent, str))
            or not (_is_step(after) and _is_step(through))
        ):
            raise ValueError(f"{hint}; {json.dumps(item)[:80]} is not one")
        out.append({"name": name, "agent_id": agent, "after_step": after, "through_step": through})
    return out


#: How the points API gives its columns: JSON numbers, or little-endian float64 in base64.
ENCODINGS = ("json", "base64")


def _float64_base64(values: object) -> str:
    return base64.b64encode(np.asarray(values, dtype="<f8").tobytes()).decode("ascii")


#: The most pixel columns a points request may downsample to.
MAX_BUCKETS = 8192


def series_points(
    path: Path,
    run_id: str,
    wanted: list[SeriesWanted],
    limit: int = MAX_SERIES_POINTS,
    encoding: str = "json",
    buckets: int | None = None,
) -> dict[str, object]:
    """The points of each wanted series past its ``after_step`` (up to ``through_step``; at
    most ``limit``, ``more`` says when there are more), as columns ``steps``, ``values`` and
    ``wall`` (seconds): JSON, or ``base64`` of little-endian float64. ``buckets`` (a chart's
    width in pixels): a longer range comes downsampled; ``through`` is the last step the
    answer covers."""
    if encoding not in ENCODINGS:
        raise ValueError(f"encoding={encoding!r:.40} is not one of {', '.join(ENCODINGS)}")
    limit, buckets = _read_bounds(limit, buckets, len(wanted))
    out = []
    with open_store(path) as store:
        full = store.resolve(run_id)
        for row, steps, values, walls in _series_reads(store, full, wanted, limit, buckets):
            if encoding == "base64":
                _exact_as_float64(full, row, steps)
                row["steps"] = _float64_base64(steps)
                row["values"] = _float64_base64(values)
                row["wall"] = _float64_base64(walls / 1e9)
            else:
                row["steps"] = steps.tolist()
                row["values"] = [json_number(v) for v in values.tolist()]
                row["wall"] = (walls / 1e9).tolist()
            out.append(row)
    return {
        "run_id": full,
        "encoding": encoding,
        "buckets": buckets,
        "limit": limit,
        "series": out,
    }


def _read_bounds(limit: int, buckets: int | None, series: int) -> tuple[int, int | None]:
    """The most points of one of ``series`` series an answer holds (``limit``, cut to
    :data:`MAX_SERIES_POINTS` and to its share of :data:`MAX_ANSWER_POINTS`), and ``buckets``
    checked; ValueError saying what to ask instead otherwise."""
    if buckets is not None and not 1 <= buckets <= MAX_BUCKETS:
        raise ValueError(f"buckets={buckets}: give a chart width from 1 to {MAX_BUCKETS} pixels")
    series = max(1, series)
    if buckets is not None and 2 * buckets * series > MAX_ANSWER_POINTS:
        raise ValueError(
            f"buckets={buckets} for {series} series may give {2 * buckets * series:,} points, "
            f"more than the {MAX_ANSWER_POINTS:,} one answer holds: ask at most "
            f"{MAX_ANSWER_POINTS // (2 * series)} buckets for {series} series, or fewer series "
            "a request"
        )
    return max(1, min(int(limit), MAX_SERIES_POINTS, MAX_ANSWER_POINTS // series)), buckets


def _exact_as_float64(run_id: str, row: dict[str, object], steps: np.ndarray) -> None:
    """ValueError when ``steps`` (int64) hold one that a float64 column would round: past
    2**53, which the store refuses since version 8 but an older one may hold."""
    if len(steps) and max(int(steps.max()), -int(steps.min())) > MAX_STEP:
        raise ValueError(
            f"series {row['name']!r:.80} of run {run_id} has steps past 2**53 (from "
            f"{int(steps.min())} to {int(steps.max())}), which float64 columns do not hold "
            "exactly: read it with encoding=json from /api/runs/RUN/series/points, or export "
            "it (mosaic runs export RUN --what metrics)"
        )


def _series_reads(
    store: RunStore, full: str, wanted: list[SeriesWanted], limit: int, buckets: int | None
) -> Iterator[tuple[dict[str, object], np.ndarray, np.ndarray, np.ndarray]]:
    """Each wanted series of run ``full``: its row and its columns (steps, values, wall ns)."""
    last = {(i.name, i.agent_id): i.last_step for i in store.series(full)}
    for w in wanted:
        through = w["through_step"]
        known = last.get((w["name"], w["agent_id"]))
        if known is not None:  # points stored during this read come with the next one
            through = known if through is None else min(through, known)
        bound = {"limit": limit + 1} if buckets is None else {"buckets": buckets}
        p = store.series_columns(
            full,
            w["name"],
            w["agent_id"],
            after_step=w["after_step"],
            through_step=through,
            **bound,
        )
        more = len(p.steps) > limit
        steps, values, walls = p.steps[:limit], p.values[:limit], p.wall_ns[:limit]
        asked = [s for s in (w["after_step"], through) if s is not None]
        covered = int(steps[-1]) if more else max(asked, default=None)
        row: dict[str, object] = {
            "name": p.name,
            "agent_id": p.agent_id,
            "more": more,
            "downsampled": p.downsampled,
            "points": len(steps) if more else p.points,
            "through": covered,
        }
        yield row, steps, values, walls


class BatchWanted(SeriesWanted):
    """One series of a batch read: a :class:`SeriesWanted` of the run ``run_id``."""

    run_id: str


def parse_batch(raw: str) -> list[BatchWanted]:
    """The ``series`` query parameter of the batch API: :func:`parse_wanted`'s list, each with
    a ``run_id``; ValueError saying what is wrong otherwise."""
    wanted = parse_wanted(raw)
    items = json.loads(raw)
    out: list[BatchWanted] = []
    for item, w in zip(items, wanted, strict=True):
        run = item.get("run_id")
        if not isinstance(run, str) or not run:
            raise ValueError(
                'series= of a batch takes a JSON list like [{"run_id": "RUN-1", "name": '
                f'"losses/value", "after_step": 120}}]; {json.dumps(item)[:80]} has no run_id'
            )
        out.append({**w, "run_id": run})
    return out


#: The media type of a batch answer (:func:`series_batch`).
BATCH_MEDIA_TYPE = "application/vnd.mosaic.series-batch"


def series_batch(
    path: Path,
    wanted: list[BatchWanted],
    limit: int = MAX_SERIES_POINTS,
    buckets: int | None = None,
) -> bytes:
    """The points of several series of several runs, read in one snapshot of the store, in
    binary: a little-endian uint32 ``n``, ``n`` bytes of JSON (``{"buckets", "series": [{...,
    "n"}]}``, in the order asked), zero bytes up to a multiple of 8, then for each series its
    ``n`` steps, values and wall times (seconds) as little-endian float64. At most
    :data:`MAX_ANSWER_POINTS` points in all (``limit`` in the JSON: the most of one series)."""
    limit, buckets = _read_bounds(limit, buckets, len(wanted))
    rows: list[dict[str, object]] = [{} for _ in wanted]
    columns: list[bytes] = [b"" for _ in wanted]
    with open_store(path) as store, store.snapshot():
        asked: dict[str, list[int]] = {}
        for i, w in enumerate(wanted):
            asked.setdefault(w["run_id"], []).append(i)
        for run_id, at in asked.items():
            full = store.resolve(run_id)
            reads = _series_reads(store, full, [wanted[i] for i in at], limit, buckets)
            for i, (row, steps, values, walls) in zip(at, reads, strict=True):
                _exact_as_float64(full, row, steps)
                rows[i] = {"run_id": full, **row, "n": len(steps)}
                columns[i] = np.concatenate([steps, values, walls / 1e9]).astype("<f8").tobytes()
    meta = {"buckets": buckets, "limit": limit, "series": rows}
    header = json.dumps(meta, separators=(",", ":")).encode()
    head = struct.pack("<I", len(header)) + header
    head += b"\0" * (-len(head) % 8)
    return head + b"".join(columns)


def _pairs(x: np.ndarray, y: np.ndarray) -> list[list[float]]:
    return [[float(a), float(b)] for a, b in zip(x.tolist(), y.tolist(), strict=True)]


def downsample_indices(y: np.ndarray, points: int) -> np.ndarray:
    """Indices of at most ``points`` values that keep the shape: the first and last, and the
    lowest and highest value of each of ``points // 2`` equal buckets, in order."""
    n = y.size
    if n <= points:
        return np.arange(n)
    buckets = max(1, points // 2 - 1)
    edges = np.linspace(1, n - 1, buckets + 1).astype(np.int64)
    keep = [0, n - 1]
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        if hi <= lo:
            continue
        part = y[lo:hi]
        keep.append(lo + int(np.argmin(part)))
        keep.append(lo + int(np.argmax(part)))
    return np.unique(np.asarray(keep, dtype=np.int64))


__all__ = [
    "EVAL_BATCH_EVENT",
    "EVAL_SUMMARY_FILE",
    "SHM_DIR",
    "agent_rows",
    "eval_batches",
    "run_streams",
    "stream_of_run",
    "MAX_POINTS",
    "NamedCounts",
    "named_counts",
    "MAX_ANSWER_POINTS",
    "MAX_BUCKETS",
    "MAX_SERIES_POINTS",
    "SeriesRow",
    "SeriesWanted",
    "json_number",
    "parse_wanted",
    "series_list",
    "series_points",
    "BATCH_MEDIA_TYPE",
    "BatchWanted",
    "parse_batch",
    "series_batch",
    "CurveCache",
    "StoreMissingError",
    "control_available",
    "control_commands",
    "downsample_indices",
    "events_after",
    "list_runs",
    "logs_after",
    "open_store",
    "run_detail",
    "run_row",
]
