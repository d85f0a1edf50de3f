"""Runs as TensorBoard event files (tensorboardX, the ``tensorboard`` extra): written after a
run by ``mosaic runs export --format tensorboard``, during it by :class:`TensorBoardObserver`.

``DIR/<run_id>/`` holds the series without an ``agent_id``, ``DIR/<run_id>/agent_<id>/`` each
agent's (ids URL-quoted; a name longer than :data:`MAX_NAME` is its first characters, ``~`` and
16 hex digits of the id's SHA-256, so that any id makes a directory); the tag is the series'
name. Beside the series:

- the finished episodes' returns and lengths, tags :data:`RETURN_TAG` and :data:`LENGTH_TAG`,
  at the env steps taken by the episode's end (an agent's own in its directory); an episode
  the run's end cut off is not one (``docs/reference/telemetry.md``, "Unfinished episodes");
- the HParams plugin's summaries (tensorboardX's ``hparams``): the run's config as its
  hyperparameters (nested keys dotted), and at the run's end its status and its final metrics
  (``run_completed``'s ``final_metrics``) as scalars :data:`FINAL_PREFIX` + name, which the
  HParams tab shows as metrics beside the last value of every other scalar.

Values are float32 ``simple_value`` scalars, which every reader reads (TensorBoard's
``EventAccumulator.Scalars``, and the tools built on it). ``doubles``: double-precision
scalar tensors instead (``plugin_name`` ``scalars``), so NaN, infinities and every float64 come
back exactly (``EventAccumulator.Tensors``; TensorBoard's UI shows both).

An export into a directory that already holds the run's event files replaces them (written
beside, then swapped in), so a second export does not double every point.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import shutil
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from mosaic_sdk.extras import require
from mosaic_sdk.hookspecs import hookimpl
from mosaic_sdk.runner.reporting import current_reporter
from mosaic_sdk.runner.storage.records import SeriesPoint

if TYPE_CHECKING:
    from mosaic_sdk.runner.storage.store import RunStore

_WRITERS = itertools.count(1)

#: The extra that installs tensorboardX.
EXTRA = "tensorboard"
#: Where :class:`TensorBoardObserver` writes when set (``mosaic run --tensorboard DIR`` sets it).
ENV_DIR = "MOSAIC_TENSORBOARD_DIR"
#: ``1``: the observer writes double-precision tensors (``mosaic run --tensorboard-doubles``).
ENV_DOUBLES = "MOSAIC_TENSORBOARD_DOUBLES"
#: The tags of a finished episode's return and length.
RETURN_TAG = "episode/return"
LENGTH_TAG = "episode/length"
#: The tag prefix of ``run_completed``'s final metrics.
FINAL_PREFIX = "final/"
#: The event files' name prefix (tensorboardX names them ``events.out.tfevents.*``).
EVENTS_GLOB = "events.out.tfevents.*"
#: An HParams session's status by the run's end (TensorBoard's ``api.Status``).
_STATUS = {
    "run_completed": "STATUS_SUCCESS",
    "completed": "STATUS_SUCCESS",
    "run_failed": "STATUS_FAILURE",
    "failed": "STATUS_FAILURE",
}


#: The longest directory name made of an id (file systems take 255 bytes).
MAX_NAME = 100


def _dir_name(text: str, prefix: str = "") -> str:
    """``prefix`` and ``text`` URL-quoted (never ``.`` or ``..``); one over :data:`MAX_NAME`
    characters shortened, with a hash of ``text`` that keeps two ids apart."""
    name = prefix + quote(text, safe="")
    if name in (".", ".."):  # a directory of its own, not this one or its parent
        name = name.replace(".", "%2E")
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{name[: MAX_NAME - 17]}~{digest}"


def run_dir(root: Path, run_id: str, agent_id: str | None) -> Path:
    """The directory of one run's (and agent's) event files under ``root``."""
    base = Path(root) / _dir_name(run_id)
    return base if agent_id is None else base / _dir_name(agent_id, "agent_")


def hparams_of(config: Mapping[str, Any] | None) -> dict[str, str | float | bool]:
    """A run's config as HParams values: nested objects flattened to dotted keys; numbers,
    strings and booleans as they are, other values (lists, null) as JSON text; the run's id
    left out (the session is the run)."""
    out: dict[str, str | float | bool] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, Mapping):
            for key, inner in value.items():
                walk(f"{prefix}{key}.", inner)
            return
        key = prefix[:-1]
        if isinstance(value, bool | str):
            out[key] = value
        elif isinstance(value, int | float):
            out[key] = float(value)
        else:
            out[key] = json.dumps(value, sort_keys=True, default=str)

    for key, value in (config or {}).items():
        if key != "run_id":
            walk(f"{key}.", value)
    return out


def final_metrics(payload: Mapping[str, Any] | None) -> dict[str, float]:
    """The numbers of ``run_completed``'s ``final_metrics`` (nested keys joined by ``/``), by
    tag (:data:`FINAL_PREFIX` + name)."""
    out: dict[str, float] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, Mapping):
            for key, inner in value.items():
                walk(f"{prefix}{key}/", inner)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            out[FINAL_PREFIX + prefix[:-1]] = float(value)

    metrics = (payload or {}).get("final_metrics")
    if isinstance(metrics, Mapping):
        walk("", metrics)
    return out


class EventFiles:
    """The event files of one run under ``root``: one tensorboardX ``EventsWriter`` per agent
    (see the module docstring). ``doubles``: exact double-precision tensors instead of
    float32 ``simple_value`` scalars. Not thread-safe."""

    def __init__(
        self,
        root: Path,
        run_id: str,
        feature: str = "TensorBoard event files",
        on_error: Callable[[str | None, OSError], None] | None = None,
        *,
        doubles: bool = False,
    ) -> None:
        """``on_error``: called when an agent's files cannot be made; that agent's points
        are then left out (the others go on). Without it, the OSError is raised."""
        require("tensorboardX", EXTRA, feature)
        # tensorboardX is the optional `tensorboard` extra: imported once it is known present.
        # Its EventsWriter writes each event as it is given (its FileWriter queues them for a
        # thread, and its flush does not wait for that queue: a reader would miss points).
        from tensorboardX.event_file_writer import EventsWriter
        from tensorboardX.proto import api_pb2, types_pb2
        from tensorboardX.proto.event_pb2 import Event
        from tensorboardX.proto.plugin_hparams_pb2 import HParamsPluginData, SessionEndInfo
        from tensorboardX.proto.summary_pb2 import Summary, SummaryMetadata
        from tensorboardX.proto.tensor_pb2 import TensorProto
        from tensorboardX.proto.tensor_shape_pb2 import TensorShapeProto
        from tensorboardX.summary import hparams

        self._events_writer = EventsWriter
        self._event, self._summary, self._tensor = Event, Summary, TensorProto
        self._hparams, self._status = hparams, api_pb2.Status
        self._plugin_data, self._session_end = HParamsPluginData, SessionEndInfo
        self._summary_metadata = SummaryMetadata
        self._double, self._scalar_shape = types_pb2.DT_DOUBLE, TensorShapeProto()
        self._metadata = SummaryMetadata(
            plugin_data=SummaryMetadata.PluginData(plugin_name="scalars")
        )
        self.root = Path(root)
        self.run_id = run_id
        self.doubles = doubles
        self._writers: dict[str | None, Any] = {}
        self._on_error = on_error
        #: Agents whose files could not be made (their points are left out).
        self.failed: set[str | None] = set()
        self.points = 0
        #: Each agent's env steps so far (the x of its episodes), and their last step seen.
        self._env_steps: dict[str | None, int] = {}
        self.last_step = 0

    def _writer(self, agent_id: str | None) -> Any:
        """The agent's writer, made at its first event; None when its files cannot be made
        (reported to ``on_error`` once)."""
        writer = self._writers.get(agent_id)
        if writer is None:
            if agent_id in self.failed:
                return None
            path = run_dir(self.root, self.run_id, agent_id)
            # a file of its own: two writers of one directory in one second (the observer
            # after a run's cleanup closed its files) would otherwise share a file name
            suffix = f".{os.getpid()}.{next(_WRITERS)}"
            try:
                path.mkdir(parents=True, exist_ok=True)
                writer = self._events_writer(str(path / "events"), suffix)
            except OSError as exc:
                if self._on_error is None:
                    raise
                self.failed.add(agent_id)
                self._on_error(agent_id, exc)
                return None
            self._writers[agent_id] = writer
        return writer

    def add(self, name: str, agent_id: str | None, step: int, value: float, wall_ns: int) -> None:
        """One scalar point of tag ``name``."""
        writer = self._writer(agent_id)
        if writer is None:
            return
        if self.doubles:
            tensor = self._tensor(
                dtype=self._double, double_val=[value], tensor_shape=self._scalar_shape
            )
            summary_value = self._summary.Value(tag=name, tensor=tensor, metadata=self._metadata)
        else:
            summary_value = self._summary.Value(tag=name, simple_value=value)  # float32
        summary = self._summary(value=[summary_value])
        event = self._event(wall_time=wall_ns / 1e9, step=int(step), summary=summary)
        writer.write_event(event)
        self.points += 1
        self.last_step = max(self.last_step, int(step))

    def add_episode(
        self,
        agent_id: str | None,
        total_reward: object,
        steps: object,
        wall_ns: int,
        *,
        finished: bool = True,
        tags: Sequence[str] | None = None,
    ) -> int:
        """One episode line of ``agent_id``: its steps count towards the agent's env steps;
        a finished one's return (a number) and length are written at that count (only the
        tags matching a glob of ``tags``, when given). Returns the points written."""
        length = steps if isinstance(steps, int) and not isinstance(steps, bool) else 0
        x = self._env_steps.get(agent_id, 0) + max(0, length)
        self._env_steps[agent_id] = x
        if not finished:
            return 0
        written = 0
        ret = total_reward
        pairs: list[tuple[str, float]] = []
        if isinstance(ret, int | float) and not isinstance(ret, bool):
            pairs.append((RETURN_TAG, float(ret)))
        if isinstance(steps, int) and not isinstance(steps, bool) and steps >= 0:
            pairs.append((LENGTH_TAG, float(steps)))
        for tag, value in pairs:
            if tags and not any(fnmatchcase(tag, t) for t in tags):
                continue
            self.add(tag, agent_id, x, value, wall_ns)
            written += 1
        return written

    def add_hparams(self, config: Mapping[str, Any] | None, wall_ns: int) -> None:
        """The HParams session of the run: its config (see :func:`hparams_of`)."""
        values = hparams_of(config)
        _, start, _ = self._hparams(values, {})
        event = self._event(wall_time=wall_ns / 1e9, step=0, summary=start)
        writer = self._writer(None)
        if writer is not None:
            writer.write_event(event)

    def end_session(self, status: str, wall_ns: int) -> None:
        """The HParams session's end: ``status`` a run's (``completed``, ``failed``,
        ``cancelled``) or its terminal event's name."""
        name = _STATUS.get(status, "STATUS_UNKNOWN")
        end = self._session_end(status=self._status.Value(name), end_time_secs=wall_ns / 1e9)
        data = self._plugin_data(session_end_info=end, version=0)
        metadata = self._summary_metadata(
            plugin_data=self._summary_metadata.PluginData(
                plugin_name="hparams", content=data.SerializeToString()
            )
        )
        value = self._summary.Value(tag="_hparams_/session_end_info", metadata=metadata)
        event = self._event(
            wall_time=wall_ns / 1e9, step=self.last_step, summary=self._summary(value=[value])
        )
        writer = self._writer(None)
        if writer is not None:
            writer.write_event(event)

    def flush(self) -> None:
        for writer in self._writers.values():
            writer.flush()

    def close(self) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()


def _event_files(directory: Path) -> Iterator[Path]:
    """The event files of one run's directory: its own and its agents'."""
    if not directory.is_dir():
        return
    yield from directory.glob(EVENTS_GLOB)
    for sub in directory.glob("agent_*"):
        if sub.is_dir():
            yield from sub.glob(EVENTS_GLOB)


def _swap_in(staged: Path, target: Path) -> None:
    """Replace the event files of the run directory ``target`` by those of ``staged``."""
    old = list(_event_files(target))
    for path in _event_files(staged):
        place = target / path.relative_to(staged)
        place.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, place)
    for path in old:
        path.unlink(missing_ok=True)


def export_tensorboard(
    store: RunStore,
    run_id: str,
    out_dir: str | Path,
    *,
    agent: str | None = None,
    metrics: Sequence[str] | None = None,
    doubles: bool = False,
) -> int:
    """Write ``run_id`` (a full id) as event files under ``out_dir`` (created): its series,
    its finished episodes' returns and lengths, its HParams session (config, status, final
    metrics). Only the tags of ``agent``, and that match a glob of ``metrics``, when given.
    Replaces the event files an earlier export (or the observer) wrote for the run there.
    Returns the number of points written. Everything is read in one read transaction: a run
    being written exports each series up to the same write."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    staging = out / f".{_dir_name(run_id)}.export-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    files = EventFiles(staging, run_id, "mosaic runs export --format tensorboard", doubles=doubles)
    try:
        with store.snapshot():  # one read transaction: a live run's rows up to one write
            run = store.get_run(run_id)
            started_ns = int(round(float(run["started_at"]) * 1e9))
            files.add_hparams(run["config"], started_ns)
            for info in store.series(run_id):
                if agent is not None and info.agent_id != agent:
                    continue
                if metrics and not any(fnmatchcase(info.name, m) for m in metrics):
                    continue
                p = store.series_columns(run_id, info.name, info.agent_id)
                columns = (p.steps.tolist(), p.values.tolist(), p.wall_ns.tolist())
                for step, value, wall in zip(*columns, strict=True):
                    files.add(info.name, info.agent_id, step, value, wall)
            _export_episodes(store, run_id, files, run["started_at"], agent, metrics)
            _export_end(store, run, files, metrics, agent)
    except BaseException:
        files.close()
        shutil.rmtree(staging, ignore_errors=True)
        raise
    files.close()
    try:
        _swap_in(run_dir(staging, run_id, None), run_dir(out, run_id, None))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return files.points


def _export_episodes(
    store: RunStore,
    run_id: str,
    files: EventFiles,
    started_at: float,
    agent: str | None,
    metrics: Sequence[str] | None,
) -> None:
    """Each agent's (and the agentless rows') episodes, in line order."""
    agents: list[str | None] = [agent] if agent is not None else [None, *store.agent_ids(run_id)]
    for who in agents:
        if who is None:
            multi = agent is None and bool(store.agent_ids(run_id))
            rows = store.episode_rows(run_id, started_at, agentless=multi)
        else:
            rows = store.episode_rows(run_id, started_at, 0, who)
        # (line_no, return, kind, steps, seconds): kind 0 a number, 3 an unfinished episode
        for _, ret, kind, steps, seconds in rows:
            finite_time = math.isfinite(seconds)
            wall = int(round((started_at + (seconds if finite_time else 0.0)) * 1e9))
            value: object = ret if kind == 0 else None
            length = int(steps) if steps >= 0 else None
            files.add_episode(who, value, length, wall, finished=kind != 3, tags=metrics)


def _export_end(
    store: RunStore,
    run: Mapping[str, Any],
    files: EventFiles,
    metrics: Sequence[str] | None,
    agent: str | None,
) -> None:
    """The run's final metrics and the HParams session's end, once the run has ended."""
    if run["status"] == "running":
        return
    ended_ns = int(round(float(run["ended_at"] or run["started_at"]) * 1e9))
    events = store.events_named(run["run_id"], "run_completed")
    if events and agent is None:
        try:
            payload = json.loads(events[-1]["payload_json"] or "{}")
        except ValueError:
            payload = {}
        step = max(files.last_step, int(run["counts"]["env_steps"]))
        for tag, value in final_metrics(payload if isinstance(payload, dict) else {}).items():
            if not metrics or any(fnmatchcase(tag, m) for m in metrics):
                files.add(tag, None, step, value, ended_ns)
    files.end_session(str(run["status"]), ended_ns)


class TensorBoardObserver:
    """An observer plugin writing every run under ``root`` as it goes (see the module
    docstring; flushed after each delivery; a run's files are closed at its
    ``mosaic_run_cleanup``). ``doubles``: double-precision tensors instead of float32
    scalars."""

    def __init__(self, root: str | Path, *, doubles: bool = False) -> None:
        self.root = Path(root)
        self.doubles = doubles
        self._lock = threading.Lock()
        self._runs: dict[str, EventFiles] = {}
        #: Runs whose cleanup came (the last points may still be on their way: written,
        #: then closed at once). The newest ones only: a sweep makes many runs.
        self._ended: dict[str, None] = {}

    def _files(self, run_id: str) -> EventFiles:
        files = self._runs.get(run_id)
        if files is None:
            on_error = _warner(self.root, run_id)
            files = EventFiles(self.root, run_id, ENV_DIR, on_error, doubles=self.doubles)
            if run_id not in self._ended:
                self._runs[run_id] = files
        return files

    def _done(self, run_id: str, files: EventFiles) -> None:
        files.flush()
        if run_id in self._ended:
            files.close()

    @hookimpl
    def mosaic_telemetry_series(self, run_id: str, points: Sequence[SeriesPoint]) -> None:
        with self._lock:
            files = self._files(run_id)
            for p in points:
                files.add(p.name, p.agent_id, p.step, p.value, p.wall_ns)
            self._done(run_id, files)

    @hookimpl
    def mosaic_telemetry_episodes(self, run_id: str, episodes: Sequence[Any]) -> None:
        with self._lock:
            files = self._files(run_id)
            for row in episodes:
                agent = row.agent_id if isinstance(row.agent_id, str) else None
                wall = row.ts_unix_ns if isinstance(row.ts_unix_ns, int) else 0
                finished = not getattr(row, "unfinished", 0)
                files.add_episode(agent, row.total_reward, row.steps, wall, finished=finished)
            self._done(run_id, files)

    @hookimpl
    def mosaic_telemetry_event(self, run_id: str, worker: str, event: Mapping[str, Any]) -> None:
        name = event.get("event")
        if name not in ("run_started", "run_completed", "run_failed", "run_cancelled"):
            return
        payload = event.get("payload")
        payload = payload if isinstance(payload, Mapping) else {}
        ts = event.get("ts_unix_ns")
        wall = ts if isinstance(ts, int) and not isinstance(ts, bool) else 0
        with self._lock:
            files = self._files(run_id)
            if name == "run_started":
                config = payload.get("config")
                files.add_hparams(config if isinstance(config, Mapping) else {}, wall)
            else:
                for tag, value in final_metrics(payload).items():
                    files.add(tag, None, files.last_step, value, wall)
                files.end_session(str(name), wall)
            self._done(run_id, files)

    @hookimpl
    def mosaic_run_cleanup(self, run_id: str) -> None:
        with self._lock:
            files = self._runs.pop(run_id, None)
            self._ended[run_id] = None
            while len(self._ended) > 1000:
                del self._ended[next(iter(self._ended))]
        if files is not None:
            files.close()


def _warner(root: Path, run_id: str) -> Callable[[str | None, OSError], None]:
    def warn(agent_id: str | None, exc: OSError) -> None:
        whose = "its series" if agent_id is None else f"agent {agent_id!r:.80}'s series"
        current_reporter().warn(
            f"TensorBoard event files of run {run_id} under {root}: cannot write {whose} "
            f"({exc.strerror or exc}); they are left out, the other agents' are written "
            "(the store keeps every point)"
        )

    return warn


#: The plugin name the runner registers the observer under.
PLUGIN_NAME = "builtin:tensorboard"


def register_from_env(pm: Any) -> bool:
    """Register a :class:`TensorBoardObserver` in ``pm`` (a pluggy plugin manager) when
    :data:`ENV_DIR` names a directory to write to (:data:`ENV_DOUBLES` ``1``: exact doubles);
    whether one is registered now. Refuses (MissingExtraError, one line naming the pip
    command) when tensorboardX is absent."""
    root = os.environ.get(ENV_DIR, "")
    if not root:
        return False
    doubles = os.environ.get(ENV_DOUBLES, "") == "1"
    current = pm.get_plugin(PLUGIN_NAME)
    if (
        current is not None
        and getattr(current, "root", None) == Path(root)
        and getattr(current, "doubles", None) == doubles
    ):
        return True
    require("tensorboardX", EXTRA, f"{ENV_DIR} (mosaic run --tensorboard)")
    if current is not None:
        pm.unregister(name=PLUGIN_NAME)
    pm.register(TensorBoardObserver(root, doubles=doubles), name=PLUGIN_NAME)
    return True
