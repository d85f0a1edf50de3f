"""``TransportWorker``: an extra engine process stepping a slice of a transport's envs."""

from __future__ import annotations

import os

from mosaic_sdk.shm.engine_side import EngineSide
from mosaic_sdk.shm.layout import STATE_CLOSED, worker_offset
from mosaic_sdk.shm.mapping import MappedSegment
from mosaic_sdk.shm.segment import attach_candidates


class TransportWorker(EngineSide):
    """An extra engine process stepping envs ``[env_begin, env_end)`` of worker slot ``index``.

    Attach after the owner created the segment (the owner's ``num_workers`` counts this one).
    Loop: ``seq = worker.wait_for_actions()`` (None once closed), step the slice, write its
    obs/rewards/dones, ``worker.publish_done(seq)``.
    """

    def __init__(
        self,
        name: str | None,
        index: int,
        *,
        spin: float | None = None,
        timeout: float | None = None,
        attach_timeout: float = 10.0,
    ) -> None:
        self.seg = MappedSegment.attach(attach_candidates(name), attach_timeout)
        if not 1 <= index < self.seg.layout.num_workers:
            n = self.seg.layout.num_workers
            self.seg.release()
            raise ValueError(f"worker index {index} outside 1..{n - 1} of this transport")
        self.index = index
        self._init_side(spin, timeout)
        self._done = int(self.seg.workers[index].load())
        self._kick = int(self.seg.words.load_u32(worker_offset(index, "kick")))
        self.seg.words.store_u32(worker_offset(index, "pid"), os.getpid())
        self._watches.watch(self.seg.load("engine_pid"), "engine owner")

    @property
    def env_slice(self) -> tuple[int, int]:
        """``(env_begin, env_end)`` this worker steps."""
        return self.seg.worker_slice(self.index)

    def wait_for_actions(self, timeout: float | None = None) -> int | None:
        """Block until the next action batch and return its number.

        Returns 0 when the owner kicked this worker (see ``SharedMemoryTransport.kick_worker``)
        and None once the owner closed the transport.
        """
        seg = self.seg
        load = seg.words.load_u64
        load32 = seg.words.load_u32
        seq_off, kick_off = seg.off["action_seq"], worker_offset(self.index, "kick")
        target, kick = self._done + 1, self._kick
        try:
            seg.action.wait_until(
                lambda: load(seq_off) >= target or load32(kick_off) != kick,
                self.spin,
                self._deadline(timeout),
                self._check,
            )
        except Exception:
            if seg.words.load_u32(seg.off["state"]) == STATE_CLOSED:
                return None
            raise
        if load32(kick_off) != kick:
            self._kick = int(load32(kick_off))
            return 0
        seg.verify_now_and_then()
        return int(load(seq_off))

    def publish_done(self, seq: int) -> None:
        """Tell the owner this worker's slice of batch ``seq`` is written."""
        self._done = seq
        self.seg.workers[self.index].publish(seq)

    def close(self) -> None:
        """Unmap (the owner unlinks)."""
        if not self.seg.closed:
            self.seg.words.store_u32(worker_offset(self.index, "pid"), 0)
            self._watches.close()
            self.seg.release()
