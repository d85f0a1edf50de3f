"""Lock-step signalling over shared words: spin briefly, then sleep on a futex."""

from __future__ import annotations

import os
import select
import time
from collections.abc import Callable
from typing import Any

from mosaic_sdk.shm.processes import process_alive

SLICE = 0.05
_MINUS_ONE = (1 << 64) - 1
_WAKE_ALL = 0x7FFFFFFF
_U32 = 0xFFFFFFFF

# Largest spin budget (seconds) before sleeping; see docs/guides/shm_transport.md.
DEFAULT_SPIN = 100e-6
# The budget adapts: twice the longest wait that spinning caught, halved after every spin that
# caught nothing (to 0 below MIN_SPIN), and the full budget is tried again every PROBE_EVERY
# waits. Spinning thus stops where it only burns a core the peer needs (oversubscribed machine,
# slow peer) and resumes where it pays.
MIN_SPIN = 2e-6
PROBE_EVERY = 64
SPIN_ENV = "MOSAIC_SHM_SPIN_US"
# Largest spin budget of a command wait (seconds): a reply takes the engine tens of
# microseconds of Python; spinning that long saves the two futex wake-ups of a round trip.
# (No sched_yield while spinning: on a loaded machine it hands the core away for milliseconds.)
DEFAULT_COMMAND_SPIN = 300e-6
COMMAND_SPIN_ENV = "MOSAIC_SHM_COMMAND_SPIN_US"


class TransportError(RuntimeError):
    """Base class of the transport's runtime errors."""


class PeerGoneError(TransportError):
    """The process on the other side of the transport exited."""


class TransportClosedError(TransportError):
    """The engine closed the transport."""


class TransportTimeoutError(TransportError, TimeoutError):
    """A wait took longer than the configured timeout."""


def spin_budget(
    spin: float | None, env_name: str = SPIN_ENV, default: float = DEFAULT_SPIN
) -> float:
    """The spin budget in seconds: ``spin`` if given, else ``$MOSAIC_SHM_SPIN_US``, else default
    (``env_name`` and ``default`` name another budget's variable and default)."""
    if spin is not None:
        if spin < 0:
            raise ValueError(f"spin must be >= 0 seconds, got {spin}")
        return float(spin)
    env = os.environ.get(env_name, "").strip()
    if env:
        try:
            value = float(env)
        except ValueError:
            raise ValueError(f"{env_name}={env!r} is not a number of microseconds") from None
        if value < 0:
            raise ValueError(f"{env_name} must be >= 0 microseconds, got {env}")
        return value * 1e-6
    return default


def command_spin_budget(spin: float | None) -> float:
    """The command waits' spin budget: ``spin``, else ``$MOSAIC_SHM_COMMAND_SPIN_US``, else
    ``DEFAULT_COMMAND_SPIN``."""
    return spin_budget(spin, COMMAND_SPIN_ENV, DEFAULT_COMMAND_SPIN)


class PeerWatch:
    """Tells whether process ``pid`` still runs; exited-but-unreaped (zombie) counts as gone."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._fd: int | None = None
        self._poll: Any = None
        self._gone = False
        try:
            self._fd = os.pidfd_open(pid)
        except ProcessLookupError:
            self._gone = True
        except (AttributeError, OSError):
            pass  # no pidfd here: alive() asks process_alive
        else:
            self._poll = select.poll()
            self._poll.register(self._fd, select.POLLIN)

    def alive(self) -> bool:
        """True while the process runs."""
        if not self._gone:
            poll = self._poll
            self._gone = bool(poll.poll(0)) if poll is not None else not process_alive(self.pid)
        return not self._gone

    def close(self) -> None:
        """Release the pidfd."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
            self._poll = None


class SignalLine:
    """One signal line of a segment: ``seq`` (u64, published sequence number), ``bell`` (u32
    futex word, bumped after every publication) and ``waiters`` (u64, processes asleep on it).

    The publisher stores ``seq``, bumps ``bell``, fences, and wakes only if ``waiters``. A
    waiter spins on ``seq`` for its budget, then loops: ``waiters += 1``, fence, load ``bell``,
    re-check ``seq``, ``futex_wait(bell, b, slice)``: the fences make a lost wake-up
    impossible, the slice bounds every sleep."""

    __slots__ = ("_w", "seq_off", "bell_off", "waiters_off", "_adaptive", "_countdown", "slice")

    def __init__(
        self, words: Any, seq_off: int, bell_off: int, waiters_off: int, slice_s: float = SLICE
    ) -> None:
        self._w = words
        self.slice = slice_s  # longest sleep between looks at seq (peers that never ring)
        self._adaptive = float("inf")
        self._countdown = PROBE_EVERY
        self.seq_off = seq_off
        self.bell_off = bell_off
        self.waiters_off = waiters_off

    def load(self) -> int:
        """Acquire load of the sequence number."""
        return int(self._w.load_u64(self.seq_off))

    def publish(self, value: int) -> None:
        """Release-store ``value`` as the sequence number and wake any sleeper."""
        self._w.store_u64(self.seq_off, value)
        self.ring()

    def ring(self) -> None:
        """Bump the bell and wake sleepers (only if some sleep)."""
        w = self._w
        w.store_u32(self.bell_off, (w.load_u32(self.bell_off) + 1) & _U32)
        w.fence()
        if w.load_u64(self.waiters_off):
            w.futex_wake(self.bell_off, _WAKE_ALL)

    def _budget(self, spin: float) -> float:
        if spin <= 0:
            return 0.0
        self._countdown -= 1
        if self._countdown <= 0:
            self._countdown = PROBE_EVERY
            return spin
        return min(spin, self._adaptive)

    def _spun(self, elapsed: float, spin: float) -> None:
        self._adaptive = min(spin, max(self._adaptive, 2.0 * elapsed, MIN_SPIN))

    def _missed(self, budget: float) -> None:
        low = min(self._adaptive, budget)  # a failed probe must not raise the budget
        self._adaptive = low / 2 if low > MIN_SPIN else 0.0

    def wait_seq(
        self,
        target: int,
        spin: float,
        deadline: float | None,
        check: Callable[[], None],
    ) -> int:
        """Wait until ``seq >= target``; returns the sequence number seen. ``spin``: the largest
        spin budget (s); ``check()`` runs between sleeps and raises to abort; ``deadline``: a
        ``time.monotonic()`` value or None."""
        load = self._w.load_u64
        off = self.seq_off
        seq = load(off)
        if seq >= target:
            return int(seq)
        budget = self._budget(spin)
        if budget > 0:
            now = time.perf_counter
            start = now()
            end = start + budget
            while True:
                for _ in range(16):
                    seq = load(off)
                    if seq >= target:
                        self._spun(now() - start, spin)
                        return int(seq)
                if now() >= end:
                    break
            self._missed(budget)
        self._sleep_until(lambda: load(off) >= target, deadline, check)
        return int(load(off))

    def wait_until(
        self,
        ready: Callable[[], bool],
        spin: float,
        deadline: float | None,
        check: Callable[[], None],
    ) -> None:
        """Wait until ``ready()`` is true; the other side rings this line when it may be."""
        if ready():
            return
        budget = self._budget(spin)
        if budget > 0:
            now = time.perf_counter
            start = now()
            end = start + budget
            while True:
                for _ in range(8):
                    if ready():
                        self._spun(now() - start, spin)
                        return
                if now() >= end:
                    break
            self._missed(budget)
        self._sleep_until(ready, deadline, check)

    def twin(self) -> SignalLine:
        """A line on the same words with its own adaptive spin (for command waits)."""
        return SignalLine(self._w, self.seq_off, self.bell_off, self.waiters_off, self.slice)

    def _sleep_until(
        self, ready: Callable[[], bool], deadline: float | None, check: Callable[[], None]
    ) -> None:
        w = self._w
        while True:
            w.fetch_add_u64(self.waiters_off, 1)
            try:
                w.fence()
                bell = w.load_u32(self.bell_off)
                if ready():
                    return
                w.futex_wait(self.bell_off, bell, self.slice)
            finally:
                w.fetch_add_u64(self.waiters_off, _MINUS_ONE)
            if ready():
                return
            check()
            if deadline is not None and time.monotonic() >= deadline:
                raise TransportTimeoutError(
                    "shm transport: the other side did not answer in time (timeout reached); "
                    "raise the timeout or check that the peer is making progress"
                )
