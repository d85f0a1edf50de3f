"""The live view of ``mosaic run``: steps, episodes, mean return, steps/s, elapsed time."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any, Protocol, TextIO

from mosaic_sdk.runner.printable import printable

#: How many of the latest episodes the mean return is taken over.
RECENT_EPISODES = 20
#: How many agents of a multi-agent run the view shows a mean return for.
MAX_AGENTS_SHOWN = 4


def _lines_note(snap: Snapshot, plain: bool = False) -> str:
    """Says how many step lines arrived when that differs from the env steps shown."""
    if snap.step_lines is None or snap.step_lines == snap.steps:
        return ""
    return f" step_lines={snap.step_lines}" if plain else f"  {snap.step_lines:,} step lines"


@dataclass
class Snapshot:
    """What the view shows, taken from the supervisor's counters."""

    run_id: str
    worker: str
    elapsed: float
    steps: int
    episodes: int
    events: int
    log_lines: int
    recent_returns: list[float]
    last_event: str | None
    status: str = "running"
    #: Step lines received (fewer than ``steps`` when the worker throttles them).
    step_lines: int | None = None
    #: The reply to the last key pressed in the view (see run_control), and the keys' help.
    control_note: str | None = None
    control_keys: str | None = None
    #: The run's health when it is not well: ``"stalled: no output for S s (limit L s)"``.
    health: str | None = None
    #: A multi-agent run: its games so far (``episodes`` counts its agents' episode lines)
    #: and each agent's latest returns; None and empty for a single-agent run.
    games: int | None = None
    agent_returns: dict[str, list[float]] = field(default_factory=dict)

    @property
    def mean_return(self) -> float | None:
        return _recent_mean(self.recent_returns)

    def agent_means(self, pair: str = " ", sep: str = ", ") -> str:
        """Each agent's recent mean return: ``player_1 0.45, player_2 -0.45`` (the first few)."""
        shown = [
            f"{agent}{pair}{_fmt_return(_recent_mean(returns))}"
            for agent, returns in list(self.agent_returns.items())[:MAX_AGENTS_SHOWN]
        ]
        more = len(self.agent_returns) - MAX_AGENTS_SHOWN
        return sep.join(shown) + (f"{sep}+{more} more" if more > 0 else "")


class Display(Protocol):
    def update(self, snap: Snapshot) -> None: ...

    def finish(self, snap: Snapshot) -> None: ...


class _Rate:
    """Steps per second over the last few seconds (not since the start)."""

    def __init__(self, window: float = 3.0) -> None:
        self.window = window
        self.samples: list[tuple[float, int]] = []

    def __call__(self, now: float, steps: int) -> float:
        self.samples.append((now, steps))
        while len(self.samples) > 2 and now - self.samples[0][0] > self.window:
            self.samples.pop(0)
        t0, s0 = self.samples[0]
        return (steps - s0) / (now - t0) if now > t0 else 0.0


def _recent_mean(returns: list[float]) -> float | None:
    recent = returns[-RECENT_EPISODES:]
    return sum(recent) / len(recent) if recent else None


def _fmt_return(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _fmt_elapsed(seconds: float) -> str:
    minutes, sec = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{sec:02d}" if hours else f"{minutes:02d}:{sec:02d}"


class NullDisplay:
    """Shows nothing (``mosaic run --quiet``)."""

    def update(self, snap: Snapshot) -> None:
        return None

    def finish(self, snap: Snapshot) -> None:
        return None


class PlainDisplay:
    """One line of progress every ``interval`` seconds, for a stream that is not a terminal."""

    def __init__(self, stream: TextIO | None = None, interval: float = 2.0) -> None:
        self.stream = stream or sys.stdout
        self.interval = interval
        self._next = time.monotonic() + interval  # a run shorter than that: the summary only
        self._rate = _Rate()

    def line(self, snap: Snapshot, rate: float) -> str:
        if snap.games is None:
            played = f"episodes={snap.episodes} "
            returns = f"mean_return(last {RECENT_EPISODES})={_fmt_return(snap.mean_return)} "
        else:  # a multi-agent run: games and agent episodes apart, returns per agent
            played = f"games={snap.games} agent_episodes={snap.episodes} "
            means = printable(snap.agent_means(pair=":", sep=","))
            returns = f"mean_return(last {RECENT_EPISODES})={means or '-'} "
        return (
            f"[{snap.run_id}] {_fmt_elapsed(snap.elapsed)} steps={snap.steps} "
            f"({rate:.0f}/s){_lines_note(snap, plain=True)} {played}{returns}"
            f"last_event={printable(snap.last_event or '-')}"
            + (f" health={snap.health!r}" if snap.health else "")
        )

    def update(self, snap: Snapshot) -> None:
        now = time.monotonic()
        rate = self._rate(now, snap.steps)
        if now < self._next:
            return
        self._next = now + self.interval
        try:
            print(self.line(snap, rate), file=self.stream, flush=True)
        except (BrokenPipeError, ValueError, OSError):  # `mosaic run ... | head`: the run goes on
            self.interval = float("inf")

    def finish(self, snap: Snapshot) -> None:
        return None


class RichDisplay:
    """A live panel in the terminal (redrawn about four times a second)."""

    def __init__(
        self, stream: TextIO | None = None, refresh: float = 0.25, console: Any = None
    ) -> None:
        # rich only for the terminal view (PlainDisplay needs none)
        from rich.console import Console
        from rich.live import Live

        self.console = console if console is not None else Console(file=stream or sys.stdout)
        self.refresh = refresh
        self._rate = _Rate()
        self._next = 0.0
        self._live = Live(console=self.console, auto_refresh=False, transient=False)
        self._started = False

    def render(self, snap: Snapshot, rate: float) -> Any:
        from rich.table import Table  # rich only for the terminal view (PlainDisplay needs none)
        from rich.text import Text

        rows = [
            ("run", f"{snap.run_id}  ({snap.worker})"),
            ("status", snap.status if not snap.health else f"{snap.status} ({snap.health})"),
            ("elapsed", _fmt_elapsed(snap.elapsed)),
            ("steps", f"{snap.steps:,}  ({rate:,.0f}/s){_lines_note(snap)}"),
            ("episodes", f"{snap.episodes:,}"),
            (f"mean return (last {RECENT_EPISODES})", _fmt_return(snap.mean_return)),
        ]
        if snap.games is not None:  # a multi-agent run: games apart, returns per agent
            rows[-2:] = [
                ("games", f"{snap.games:,}  ({snap.episodes:,} agent episodes)"),
                (f"mean return (last {RECENT_EPISODES})", snap.agent_means() or "-"),
            ]
        rows.append(("last event", snap.last_event or "-"))
        if snap.log_lines:
            rows.append(("log lines", f"{snap.log_lines:,}"))
        if snap.control_note:
            rows.append(("control", snap.control_note))
        if snap.control_keys:
            rows.append(("keys", snap.control_keys))
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold cyan", justify="right")
        table.add_column()
        for key, value in rows:  # Text, not markup: "[/x]" in a value is shown as it is
            table.add_row(Text(key), Text(printable(value)))
        return table

    def update(self, snap: Snapshot) -> None:
        now = time.monotonic()
        rate = self._rate(now, snap.steps)
        if now < self._next:
            return
        self._next = now + self.refresh
        try:
            if not self._started:
                self._live.start()
                self._started = True
            self._live.update(self.render(snap, rate), refresh=True)
        except (BrokenPipeError, ValueError, OSError):  # the terminal went away: keep running
            self.refresh = float("inf")

    def finish(self, snap: Snapshot) -> None:
        if self._started:
            try:  # stop() draws the last frame once
                self._live.update(self.render(snap, self._rate(time.monotonic(), snap.steps)))
                self._live.stop()
            except (BrokenPipeError, ValueError, OSError):
                pass


def choose_display(stream: TextIO | None = None, *, quiet: bool = False) -> Display:
    """Rich in a terminal, plain lines elsewhere, nothing when ``quiet``."""
    if quiet:
        return NullDisplay()
    stream = stream or sys.stdout
    isatty = getattr(stream, "isatty", None)
    if callable(isatty) and isatty():
        return RichDisplay(stream)
    return PlainDisplay(stream)
