"""Asynchronous stepping over the transport: each worker's slice is sent and received alone
(``ShmVectorEnv(..., batch_size=B)``'s ``send``/``recv``), in the lock-step segment layout.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from mosaic_sdk.shm.layout import OFF, STATE_CLOSED, worker_offset
from mosaic_sdk.shm.mapping import MappedSegment, watch_error
from mosaic_sdk.shm.sync import PeerWatch, SignalLine

RESET = 1
REQUEST = 2
_U32 = 0xFFFFFFFF
_WAKE_ALL = 0x7FFFFFFF


def ring_shared(words: Any, line: SignalLine) -> None:
    """Ring ``line``'s bell when several processes ring it (an atomic increment, then wake)."""
    off = line.bell_off
    while True:
        old = int(words.load_u32(off))
        if words.cas_u32(off, old, (old + 1) & _U32):
            break
    words.fence()
    if words.load_u64(line.waiters_off):
        words.futex_wake(off, _WAKE_ALL)


# -- engine side ---------------------------------------------------------------------------
class SliceServer:
    """One host process's side: wait for its slice's request, step, publish ``done_seq``.

    The client sets ``resets[i]`` bit 0 ``RESET`` (reset instead of step) and bit 1
    ``REQUEST`` for the slice's envs, then bumps ``action_seq``. Once its results are written
    the worker clears the flags, publishes its slot's ``done_seq`` and rings the frame bell
    (an atomic increment: every worker rings it). One request per worker is in flight."""

    def __init__(self, seg: MappedSegment, index: int, begin: int, end: int) -> None:
        self.seg = seg
        self.index = index
        self.begin, self.end = begin, end
        self._seq_off = OFF["action_seq"]
        self._done_off = worker_offset(index, "done_seq")
        self.served = int(seg.words.load_u64(self._done_off))
        self.seen = -1  # look at our flags once: a send may have come before this loop

    def new_send(self) -> bool:
        """True when the client published a send since the last look."""
        return int(self.seg.words.load_u64(self._seq_off)) != self.seen

    def requested(self) -> bool:
        """Take note of the latest send; True when it (or an earlier one) asks for our slice.

        ``action_seq`` is read (acquire) before the flag, so a flag set before a send that we
        have not seen yet is caught when that send's bump wakes us.
        """
        self.seen = int(self.seg.words.load_u64(self._seq_off))
        resets = self.seg.resets
        return bool(self.begin < self.end and int(resets[self.begin]) & REQUEST)

    def finish(self) -> None:
        """Clear the slice's flags and publish one more request served."""
        self.seg.resets[self.begin : self.end] = 0
        self.served += 1
        self.seg.words.store_u64(self._done_off, self.served)
        ring_shared(self.seg.words, self.seg.frame)


def serve_owner(transport: Any, stepper: Any, handler: Callable[[Any], Any]) -> None:
    """Worker 0's loop: answer commands, step its slice when asked, until ``Close``."""
    seg = transport.seg
    server = SliceServer(seg, 0, stepper.begin, stepper.end)
    pending = seg.c2e.pending
    while not transport._closing:
        seg.action.wait_until(
            lambda: server.new_send() or pending() > 0, transport.spin, None, transport._check
        )
        if pending():
            transport.serve_commands(handler)
            continue
        if server.requested():
            stepper.step()
            server.finish()


def serve_worker(worker: Any, stepper: Any, index: int, on_kick: Callable[[], None]) -> None:
    """Worker ``index``'s loop: forwarded commands on a kick, its slice when asked; returns
    once the owner closes the transport."""
    seg = worker.seg
    server = SliceServer(seg, index, stepper.begin, stepper.end)
    kick_off = worker_offset(index, "kick")
    load32 = seg.words.load_u32
    # the kick word as the worker read it when it attached, before it reported ready: the
    # owner may kick (forward a command) as soon as every worker is ready
    kick = [int(worker._kick)]

    def kicked() -> bool:
        return int(load32(kick_off)) != kick[0]

    while True:
        try:
            seg.action.wait_until(
                lambda: server.new_send() or kicked(), worker.spin, None, worker._check
            )
        except Exception:
            if seg.words.load_u32(OFF["state"]) == STATE_CLOSED:
                return
            raise
        if kicked():
            kick[0] = int(load32(kick_off))
            on_kick()
            continue
        if server.requested():
            stepper.step()
            server.finish()


# -- client side ---------------------------------------------------------------------------
class AsyncSlices:
    """The client's bookkeeping: which worker slices are in flight, which came back.

    ``send(workers)`` starts idle workers whose actions and reset bits are written; ``wait(k)``
    returns at least ``k`` finished workers (every one in flight, if fewer), oldest first.
    """

    def __init__(
        self,
        seg: MappedSegment,
        check: Callable[[], None],
        spin: float,
        timeout: float | None,
    ) -> None:
        self.seg = seg
        self._check_engine = check
        self.spin = spin
        self.timeout = timeout
        n = seg.layout.num_workers
        self.slices = [seg.worker_slice(w) for w in range(n)]
        self.sent = [int(seg.workers[w].load()) for w in range(n)]
        self.in_flight: set[int] = set()
        self.ready: deque[int] = deque()
        self._watches: dict[int, PeerWatch] = {}

    def send(self, workers: Sequence[int]) -> None:
        """Flag each worker's slice as requested and publish one send."""
        resets = self.seg.resets
        for w in workers:
            if w in self.in_flight or w in self.ready:
                raise RuntimeError(f"worker {w} already has a request in flight")
            b, e = self.slices[w]
            resets[b:e] |= REQUEST
            self.sent[w] += 1
            self.in_flight.add(w)
        action = self.seg.action
        action.publish(action.load() + 1)

    def poll(self) -> None:
        """Move every finished in-flight worker to ``ready``."""
        workers = self.seg.workers
        for w in sorted(self.in_flight):
            if workers[w].load() >= self.sent[w]:
                self.in_flight.discard(w)
                self.ready.append(w)

    def _any_done(self) -> bool:
        workers = self.seg.workers
        return any(workers[w].load() >= self.sent[w] for w in self.in_flight)

    def _check(self) -> None:
        self._check_engine()
        for w in self.in_flight:
            pid = self.seg.worker_pid(w)
            if pid and pid not in self._watches:
                self._watches[pid] = PeerWatch(pid)
            if pid and not self._watches[pid].alive():
                raise watch_error(self.seg.name, f"engine worker {w}", pid)

    def wait(self, count: int) -> list[int]:
        """At least ``min(count, in flight + ready)`` finished workers, oldest first."""
        self.poll()
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        while len(self.ready) < count and self.in_flight:
            self.seg.frame.wait_until(self._any_done, self.spin, deadline, self._check)
            self.poll()
        return [self.ready.popleft() for _ in range(min(count, len(self.ready)))]

    def close(self) -> None:
        """Release the pid watches."""
        for watch in self._watches.values():
            watch.close()
        self._watches.clear()
