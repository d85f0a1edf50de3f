"""Series as TensorBoard event files (tensorboardX, the ``tensorboard`` extra): written after a
run by ``mosaic runs export --format tensorboard``, during it by :class:`TensorBoardObserver`.

``DIR/<run_id>/`` holds the series without an ``agent_id``, ``DIR/<run_id>/agent_<id>/`` each
agent's (ids URL-quoted; a name longer than :data:`MAX_NAME` is its first characters, ``~`` and
16 hex digits of the id's SHA-256, so that any id makes a directory); the tag is the series'
name. Values are double-precision scalar
tensors, so NaN, infinities and every float64 come back exactly (``simple_value`` is float32).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import threading
from collections.abc import Callable, Sequence
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


class EventFiles:
    """The event files of one run under ``root``: one tensorboardX ``FileWriter`` per agent
    (see the module docstring). Not thread-safe."""

    def __init__(
        self,
        root: Path,
        run_id: str,
        feature: str = "TensorBoard event files",
        on_error: Callable[[str | None, OSError], None] | None = None,
    ) -> None:
        """``on_error``: called when an agent's files cannot be made; that agent's points
        are then left out (the others go on). Without it, the OSError is raised."""
        require("tensorboardX", EXTRA, feature)
        # tensorboardX is the optional `tensorboard` extra: imported once it is known present.
        # Its EventsWriter writes each event as it is given (its FileWriter queues them for a
        # thread, and its flush does not wait for that queue: a reader would miss points).
        from tensorboardX.event_file_writer import EventsWriter
        from tensorboardX.proto import types_pb2
        from tensorboardX.proto.event_pb2 import Event
        from tensorboardX.proto.summary_pb2 import Summary, SummaryMetadata
        from tensorboardX.proto.tensor_pb2 import TensorProto
        from tensorboardX.proto.tensor_shape_pb2 import TensorShapeProto

        self._events_writer = EventsWriter
        self._event, self._summary, self._tensor = Event, Summary, TensorProto
        self._double, self._scalar_shape = types_pb2.DT_DOUBLE, TensorShapeProto()
        self._metadata = SummaryMetadata(
            plugin_data=SummaryMetadata.PluginData(plugin_name="scalars")
        )
        self.root = Path(root)
        self.run_id = run_id
        self._writers: dict[str | None, Any] = {}
        self._on_error = on_error
        #: Agents whose files could not be made (their points are left out).
        self.failed: set[str | None] = set()
        self.points = 0

    def add(self, name: str, agent_id: str | None, step: int, value: float, wall_ns: int) -> None:
        writer = self._writers.get(agent_id)
        if writer is None:
            if agent_id in self.failed:
                return
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
                return
            self._writers[agent_id] = writer
        tensor = self._tensor(
            dtype=self._double, double_val=[value], tensor_shape=self._scalar_shape
        )
        summary = self._summary(
            value=[self._summary.Value(tag=name, tensor=tensor, metadata=self._metadata)]
        )
        writer.write_event(self._event(wall_time=wall_ns / 1e9, step=int(step), summary=summary))
        self.points += 1

    def flush(self) -> None:
        for writer in self._writers.values():
            writer.flush()

    def close(self) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()


def export_tensorboard(
    store: RunStore,
    run_id: str,
    out_dir: str | Path,
    *,
    agent: str | None = None,
    metrics: Sequence[str] | None = None,
) -> int:
    """Write the series of ``run_id`` (a full id) as event files under ``out_dir`` (created;
    only the series of ``agent``, and whose names match a glob of ``metrics``, when given).
    Returns the number of points written. Every series is read in one read transaction: a
    run being written exports each series up to the same write."""
    files = EventFiles(Path(out_dir), run_id, "mosaic runs export --format tensorboard")
    try:
        with store.snapshot():
            for info in store.series(run_id):
                if agent is not None and info.agent_id != agent:
                    continue
                if metrics and not any(fnmatchcase(info.name, m) for m in metrics):
                    continue
                p = store.series_columns(run_id, info.name, info.agent_id)
                columns = (p.steps.tolist(), p.values.tolist(), p.wall_ns.tolist())
                for step, value, wall in zip(*columns, strict=True):
                    files.add(info.name, info.agent_id, step, value, wall)
    finally:
        files.close()
    return files.points


class TensorBoardObserver:
    """An observer plugin writing every run's series under ``root`` as it goes (flushed after
    each delivery; a run's files are closed at its ``mosaic_run_cleanup``)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._lock = threading.Lock()
        self._runs: dict[str, EventFiles] = {}
        #: Runs whose cleanup came (the last points may still be on their way: written,
        #: then closed at once). The newest ones only: a sweep makes many runs.
        self._ended: dict[str, None] = {}

    @hookimpl
    def mosaic_telemetry_series(self, run_id: str, points: Sequence[SeriesPoint]) -> None:
        with self._lock:
            files = self._runs.get(run_id)
            if files is None:
                files = EventFiles(self.root, run_id, ENV_DIR, _warner(self.root, run_id))
                if run_id not in self._ended:
                    self._runs[run_id] = files
            for p in points:
                files.add(p.name, p.agent_id, p.step, p.value, p.wall_ns)
            files.flush()
            if run_id in self._ended:
                files.close()

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
    :data:`ENV_DIR` names a directory to write to; whether one is registered now. Refuses
    (MissingExtraError, one line naming the pip command) when tensorboardX is absent."""
    root = os.environ.get(ENV_DIR, "")
    if not root:
        return False
    current = pm.get_plugin(PLUGIN_NAME)
    if current is not None and getattr(current, "root", None) == Path(root):
        return True
    require("tensorboardX", EXTRA, f"{ENV_DIR} (mosaic run --tensorboard)")
    if current is not None:
        pm.unregister(name=PLUGIN_NAME)
    pm.register(TensorBoardObserver(root), name=PLUGIN_NAME)
    return True
