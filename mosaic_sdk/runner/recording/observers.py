"""Committed steps, episodes and series points, delivered to the observer plugins."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from itertools import chain
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from mosaic_sdk.runner.reporting import current_reporter
from mosaic_sdk.runner.storage.records import (
    EpisodeRow,
    EpisodeValues,
    ObserverRecord,
    SeriesPoint,
    StepRow,
    TelemetryValues,
)
from mosaic_sdk.runner.storage.rows import LineBatch

if TYPE_CHECKING:
    from pluggy import PluginManager

STEPS_HOOK = "mosaic_telemetry_steps"
EPISODES_HOOK = "mosaic_telemetry_episodes"
SERIES_HOOK = "mosaic_telemetry_series"

#: Rows an observer may have waiting before its oldest waiting batches are dropped for it.
MAX_PENDING_ROWS = 50_000
#: How long the end of a run waits for the observers to take what is queued (seconds).
DRAIN_TIMEOUT = 5.0
#: An observer is called at most this often (seconds), with what arrived in between. Longer
#: is not cheaper: rows that wait longer make the garbage collector run more often.
DELIVERY_INTERVAL = 0.01


RowT = TypeVar("RowT", StepRow, EpisodeRow)


class RowBatch(Sequence[RowT], Generic[RowT]):
    """The rows of one delivery: a read-only sequence of :class:`StepRow` or
    :class:`EpisodeRow`, each made when it is read. ``list(rows)`` gives a list."""

    __slots__ = ("_rows", "_make")

    def __init__(
        self, rows: Sequence[TelemetryValues] | Sequence[EpisodeValues], row_type: type[RowT]
    ) -> None:
        self._rows = rows
        self._make: Callable[[TelemetryValues | EpisodeValues], RowT] = row_type._make

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, index: int) -> RowT: ...

    @overload
    def __getitem__(self, index: slice) -> RowBatch[RowT]: ...

    def __getitem__(self, index: int | slice) -> RowT | RowBatch[RowT]:
        if isinstance(index, slice):
            out: RowBatch[RowT] = RowBatch.__new__(RowBatch)
            out._rows, out._make = self._rows[index], self._make
            return out
        return self._make(self._rows[index])

    def __iter__(self) -> Iterator[RowT]:
        return map(self._make, self._rows)

    def __repr__(self) -> str:
        return f"<RowBatch of {len(self._rows)} rows>"


@dataclass
class ObserverReport:
    """What one observer plugin got of a run, and what it did not."""

    name: str
    delivered_steps: int = 0
    delivered_episodes: int = 0
    missed_steps: int = 0
    missed_episodes: int = 0
    #: ``"ExcType: message"`` of the exception that disabled it, or None.
    error: str | None = None
    delivered_points: int = 0
    missed_points: int = 0

    def to_dict(self) -> ObserverRecord:
        return ObserverRecord(**asdict(self))  # type: ignore[typeddict-item]


Rows = list[TelemetryValues]
EpisodeRows = list[EpisodeValues]
Points = list[SeriesPoint]


class _Observer:
    """One observer plugin: its queue, its thread, its report."""

    def __init__(
        self,
        name: str,
        run_id: str,
        hooks: Mapping[str, Callable[..., object] | None],
        max_pending_rows: int,
        warn: Callable[[str], None],
    ) -> None:
        self.run_id = run_id
        self.report = ObserverReport(name)
        self._steps_hook = hooks[STEPS_HOOK]
        self._episodes_hook = hooks[EPISODES_HOOK]
        self.series_hook = hooks[SERIES_HOOK]
        self._max = max_pending_rows
        self._warn = warn
        self._pending: deque[tuple[Rows, EpisodeRows, Points]] = deque()
        self._pending_rows = 0
        self._in_flight = (0, 0, 0)
        self._cond = threading.Condition()
        self._closing = False
        self._given_up = False  # disabled, or the end of the run stopped waiting for it
        self._warned_slow = False
        self._thread = threading.Thread(
            target=self._loop, name=f"mosaic-observer-{name}", daemon=True
        )
        self._thread.start()

    # -- the writer's thread ------------------------------------------------------------------
    def offer(self, steps: Rows, episodes: EpisodeRows, points: Points | None = None) -> None:
        steps = steps if self._steps_hook is not None else []
        episodes = episodes if self._episodes_hook is not None else []
        points = points if points and self.series_hook is not None else []
        if not steps and not episodes and not points:
            return
        slow = False
        with self._cond:
            if self._given_up:
                self._miss(len(steps), len(episodes), len(points))
                return
            self._pending.append((steps, episodes, points))
            self._pending_rows += len(steps) + len(episodes) + len(points)
            while self._pending_rows > self._max and len(self._pending) > 1:
                old_steps, old_episodes, old_points = self._pending.popleft()
                self._pending_rows -= len(old_steps) + len(old_episodes) + len(old_points)
                self._miss(len(old_steps), len(old_episodes), len(old_points))
                if not self._warned_slow:
                    slow = self._warned_slow = True
            self._cond.notify()
        if slow:
            self._warn(
                f"observer plugin {self.report.name!r} cannot keep up with run {self.run_id}: "
                f"it misses rows while more than {self._max} wait for it (the store keeps "
                "every row; the count is in `mosaic runs show`)"
            )

    def _miss(self, steps: int, episodes: int, points: int = 0) -> None:  # self._cond held
        self.report.missed_steps += steps
        self.report.missed_episodes += episodes
        self.report.missed_points += points

    def _miss_pending(self) -> None:  # self._cond held
        for steps, episodes, points in self._pending:
            self._miss(len(steps), len(episodes), len(points))
        self._pending.clear()

    # -- its own thread -----------------------------------------------------------------------
    def _loop(self) -> None:
        last = 0.0
        while True:
            with self._cond:
                while not self._pending and not self._closing:
                    self._cond.wait()
                # a quarter of the bound waiting: deliver now, do not risk dropping rows
                hurry = self._closing or self._pending_rows >= self._max // 4
            wait = last + DELIVERY_INTERVAL - time.monotonic()
            if wait > 0 and not hurry:  # let more batches arrive: one call for all of them
                time.sleep(wait)
            last = time.monotonic()
            with self._cond:
                if not self._pending or self._given_up:
                    return
                chunks = list(self._pending)
                self._pending.clear()
                self._pending_rows = 0
                steps = _joined([c[0] for c in chunks])
                episodes = _joined([c[1] for c in chunks])
                points = _joined([c[2] for c in chunks])
                self._in_flight = (len(steps), len(episodes), len(points))
            failed = self._deliver(steps, episodes, points)
            with self._cond:
                self._in_flight = (0, 0, 0)
                if failed is not None:
                    return

    def _deliver(self, steps: Rows, episodes: EpisodeRows, points: Points) -> str | None:
        hook = STEPS_HOOK
        try:
            if steps and self._steps_hook is not None:
                self._steps_hook(run_id=self.run_id, steps=RowBatch(steps, StepRow))
            with self._cond:
                self.report.delivered_steps += len(steps)
                steps = []
            hook = EPISODES_HOOK
            if episodes and self._episodes_hook is not None:
                self._episodes_hook(run_id=self.run_id, episodes=RowBatch(episodes, EpisodeRow))
            with self._cond:
                self.report.delivered_episodes += len(episodes)
                episodes = []
            hook = SERIES_HOOK
            if points and self.series_hook is not None:
                self.series_hook(run_id=self.run_id, points=points)
            with self._cond:
                self.report.delivered_points += len(points)
            return None
        except BaseException as exc:  # noqa: BLE001 - a plugin's bug must not touch the run
            error = f"{type(exc).__name__}: {exc}"
            with self._cond:
                self.report.error = error
                self._given_up = True
                self._miss(len(steps), len(episodes), len(points))
                self._miss_pending()
                self._pending_rows = 0
            self._warn(
                f"observer plugin {self.report.name!r} raised {error} in {hook} for run "
                f"{self.run_id}; it gets no more data of this run (the run goes on, every row "
                "is stored)"
            )
            return error

    # -- the end of the run -------------------------------------------------------------------
    def close(self, deadline: float) -> ObserverReport:
        with self._cond:
            self._closing = True
            self._cond.notify()
        self._thread.join(max(0.0, deadline - time.monotonic()))
        with self._cond:
            if self._thread.is_alive():  # still in a hook call: what it has not got is missed
                self._given_up = True
                self._miss(*self._in_flight)
                self._miss_pending()
                self._in_flight = (0, 0, 0)
            return ObserverReport(**asdict(self.report))


def _joined(parts: list[list[Any]]) -> list[Any]:
    return parts[0] if len(parts) == 1 else list(chain.from_iterable(parts))


class ObserverFeed:
    """The observers of one run (build it with :meth:`for_plugins`), each on its own thread
    and bounded queue, so neither ingest nor another observer waits for a slow one. Past
    ``max_pending_rows`` an observer's oldest batches are dropped for it alone and counted as
    missed (warned once); one that raises is reported once and gets nothing more."""

    def __init__(self, observers: list[_Observer], warn: Callable[[str], None]) -> None:
        self._observers = observers
        self._warn = warn
        self._reports: list[ObserverReport] | None = None
        #: The run's series by number (from the committed batches), when one observes them.
        self._series: dict[int, tuple[str, str | None]] = {}
        self._wants_series = any(o.series_hook is not None for o in observers)

    @classmethod
    def for_plugins(
        cls,
        pm: PluginManager,
        run_id: str,
        *,
        max_pending_rows: int | None = None,
        warn: Callable[[str], None] | None = None,
    ) -> ObserverFeed | None:
        """A feed for the plugins of ``pm`` that implement an observer hook; None when none
        does. ``warn`` (default: the process's reporter) hears of observers that fall behind
        or fail."""
        warn = warn or current_reporter().warn
        max_pending_rows = MAX_PENDING_ROWS if max_pending_rows is None else max_pending_rows
        if max_pending_rows < 1:
            raise ValueError(f"max_pending_rows must be >= 1, got {max_pending_rows}")
        hooks: dict[str, dict[str, object]] = {}  # plugin name -> hook name -> plugin
        for hook_name in (STEPS_HOOK, EPISODES_HOOK, SERIES_HOOK):
            caller = getattr(pm.hook, hook_name, None)
            if caller is None:
                continue
            for impl in caller.get_hookimpls():
                if impl.hookwrapper or impl.wrapper:
                    continue  # wrappers decorate calls; they are not observers
                hooks.setdefault(impl.plugin_name, {})[hook_name] = impl.plugin
        if not hooks:
            return None
        every = [plugin for _, plugin in pm.list_name_plugin()]
        observers = []
        for name, by_hook in sorted(hooks.items()):
            plugin = next(iter(by_hook.values()))
            others = [p for p in every if p is not plugin]
            callers = {
                h: pm.subset_hook_caller(h, remove_plugins=others) if h in by_hook else None
                for h in (STEPS_HOOK, EPISODES_HOOK, SERIES_HOOK)
            }
            observers.append(_Observer(name, run_id, callers, max_pending_rows, warn))
        return cls(observers, warn)

    @property
    def names(self) -> list[str]:
        return [o.report.name for o in self._observers]

    def offer(self, batch: LineBatch) -> None:
        """Queue a committed batch's rows and points for every observer (on the writer's
        thread; never waits, never raises)."""
        points: Points = []
        if self._wants_series:
            names = self._series
            for _, sid, name, agent in batch.series:
                names[sid] = (name, agent)
            points = [
                SeriesPoint(run_id, *names[sid], step, value, wall)
                for run_id, sid, step, wall, _, value in batch.points
            ]
        if not (batch.steps or batch.episodes or points):
            return
        for observer in self._observers:
            try:
                observer.offer(batch.steps, batch.episodes, points)
            except Exception:  # noqa: BLE001 - pragma: no cover - nothing above should raise
                pass

    def close(self, timeout: float = DRAIN_TIMEOUT) -> list[ObserverRecord]:
        """Let every observer take what is queued (``timeout`` seconds for all of them), then
        return one report dict per observer; warns about each one that missed rows. Idempotent."""
        if self._reports is None:
            deadline = time.monotonic() + timeout
            self._reports = [o.close(deadline) for o in self._observers]
            for r in self._reports:
                if r.missed_steps or r.missed_episodes or r.missed_points:
                    why = f"it was disabled by {r.error}" if r.error else "it was too slow"
                    self._warn(
                        f"observer plugin {r.name!r} missed {r.missed_steps} steps and "
                        f"{r.missed_episodes} episodes"
                        + (f" and {r.missed_points} series points" if r.missed_points else "")
                        + f" of run {self._observers[0].run_id} "
                        f"({why}); the store holds them all"
                    )
        return [r.to_dict() for r in self._reports]
