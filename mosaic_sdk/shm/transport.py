"""Engine side of the transport: ``SharedMemoryTransport`` (owner) and ``TransportWorker``.

An engine loop::

    transport = SharedMemoryTransport(num_envs=4096, obs_size=100, act_size=12, name="sim")
    transport.schema = GetSchemaResponse(...)          # answered to get_schema()
    while (seq := transport.wait_for_actions(handler)) is not None:
        step(transport.actions, transport.resets)      # read actions, honour reset flags
        transport.obs[:] = ...; transport.rewards[:] = ...
        transport.publish_frame(seq)
    transport.close()                                  # unlinks the segment

``handler(message)`` receives each command (``ResetRequest``, ...) and returns the response;
``Ping``, ``GetSchema`` (when ``schema`` is set) and ``Close`` are answered by the transport.

Several engine processes can step slices of the envs: the owner is worker 0 and
``TransportWorker(name, i)`` attaches worker ``i``; ``publish_frame`` on the owner waits until
every worker has published ``done_seq`` for the batch, then publishes ``frame_seq``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from mosaic_sdk.shm import commands as cmd
from mosaic_sdk.shm.layout import (
    DEFAULT_RING_SIZE,
    MODE_TRAINING,
    OFF,
    STATE_CLOSED,
    STATE_READY,
    Layout,
    worker_offset,
)
from mosaic_sdk.shm.mapping import MappedSegment, watch_error
from mosaic_sdk.shm.segment import create_segment, name_from_env, segment_name, unlink_segment
from mosaic_sdk.shm.sync import PeerWatch, spin_budget

Handler = Callable[[Any], Any]


class _Watches:
    """Pid watches for the processes whose death must abort a wait."""

    def __init__(self) -> None:
        self._watches: dict[int, tuple[str, PeerWatch]] = {}

    def watch(self, pid: int, role: str) -> None:
        if pid and pid not in self._watches:
            self._watches[pid] = (role, PeerWatch(pid))

    def forget(self, pid: int) -> None:
        entry = self._watches.pop(pid, None)
        if entry:
            entry[1].close()

    def check(self, name: str) -> None:
        for pid, (role, w) in list(self._watches.items()):
            if not w.alive():
                raise watch_error(name, role, pid)

    def close(self) -> None:
        for _, w in self._watches.values():
            w.close()
        self._watches.clear()


class _EngineSide:
    """What the owner and the extra workers share: views, waiting for actions, lifetime."""

    seg: MappedSegment

    def _init_side(self, spin: float | None, timeout: float | None) -> None:
        self.spin = spin_budget(spin)
        self.timeout = timeout
        self._watches = _Watches()
        self._client_pid = 0
        self._closing = False

    # -- region views (numpy, zero-copy) ----------------------------------------------------
    @property
    def name(self) -> str:
        """The segment name (pass it to the client)."""
        return self.seg.name

    @property
    def layout(self) -> Layout:
        """Sizes and offsets of every region."""
        return self.seg.layout

    @property
    def obs(self) -> np.ndarray:
        """float32 ``(num_envs, obs_size)``: the engine writes observations here."""
        return self.seg.obs

    @property
    def actions(self) -> np.ndarray:
        """float32 ``(num_envs, act_size)``: the client's actions for the current batch."""
        return self.seg.actions

    @property
    def rewards(self) -> np.ndarray:
        """float32 ``(num_envs,)``."""
        return self.seg.rewards

    @property
    def terminated(self) -> np.ndarray:
        """uint8 ``(num_envs,)``."""
        return self.seg.terminated

    @property
    def truncated(self) -> np.ndarray:
        """uint8 ``(num_envs,)``."""
        return self.seg.truncated

    @property
    def resets(self) -> np.ndarray:
        """uint8 ``(num_envs,)``: 1 = reset this env instead of stepping it (engine clears)."""
        return self.seg.resets

    @property
    def image(self) -> np.ndarray | None:
        """uint8 ``(num_envs, H, W, C)`` or None when the segment has no image region."""
        return self.seg.image

    @property
    def client_pid(self) -> int:
        """Pid of the attached client (0 when none)."""
        return self.seg.load("client_pid")

    def watch_peer(self, pid: int, role: str) -> None:
        """Abort waits with ``PeerGoneError`` once process ``pid`` (described as ``role``) exits."""
        self._watches.watch(pid, role)

    def _check(self) -> None:
        self.seg.check_open()
        pid = self.seg.load("client_pid")
        if pid != self._client_pid:
            self._watches.forget(self._client_pid)
            self._client_pid = pid
            self._watches.watch(pid, "client")
        self._watches.check(self.seg.name)

    def _deadline(self, timeout: float | None) -> float | None:
        t = self.timeout if timeout is None else timeout
        return None if t is None else time.monotonic() + t


class SharedMemoryTransport(_EngineSide):
    """Creates and owns a transport segment; the engine steps envs through it.

    ``name`` (or ``$MOSAIC_SHM_NAME``; a random name when both are absent) gets the ``mosaic``
    prefix. ``image_shape=(H, W, C)`` adds an image region. ``timeout`` (seconds, None = no
    limit) bounds each wait; a dead client is detected by pid regardless. ``peer_pids`` are
    further processes (e.g. a launcher) whose death aborts a wait.
    """

    def __init__(
        self,
        num_envs: int,
        obs_size: int,
        act_size: int,
        *,
        name: str | None = None,
        image_shape: tuple[int, int, int] | None = None,
        mode: int = MODE_TRAINING,
        cmd_ring_size: int = DEFAULT_RING_SIZE,
        num_workers: int = 1,
        spin: float | None = None,
        timeout: float | None = None,
        peer_pids: tuple[int, ...] = (),
    ) -> None:
        if name is None and os.environ.get("MOSAIC_SHM_NAME"):
            name = name_from_env(None)
        layout = Layout.compute(
            num_envs,
            obs_size,
            act_size,
            cmd_ring_size=cmd_ring_size,
            image_shape=image_shape,
            mode=mode,
            num_workers=num_workers,
        )
        seg_name = segment_name(name)
        mm = create_segment(seg_name, layout.total_size)
        self._owner = True
        try:
            layout.write_header(mm, os.getpid())
            self.seg = MappedSegment(seg_name, mm, layout)
            self._init_side(spin, timeout)
            self.set_worker_slice(0, 0, num_envs)
            self.seg.words.store_u32(worker_offset(0, "pid"), os.getpid())
            for pid in peer_pids:
                self._watches.watch(pid, "launcher")
            self.schema: cmd.GetSchemaResponse | None = None
            self._frame = 0
            self.seg.store("state", STATE_READY)
        except BaseException:
            unlink_segment(seg_name)
            raise

    def set_worker_slice(self, index: int, begin: int, end: int) -> None:
        """Record which envs worker ``index`` steps (informational, read by the workers)."""
        if not 0 <= begin <= end <= self.layout.num_envs:
            raise ValueError(f"worker slice [{begin}, {end}) outside 0..{self.layout.num_envs}")
        self.seg.words.store_u32(worker_offset(index, "env_begin"), begin)
        self.seg.words.store_u32(worker_offset(index, "env_end"), end)

    def kick_worker(self, index: int) -> None:
        """Wake worker ``index`` for out-of-band work (its ``wait_for_actions`` returns 0)."""
        off = worker_offset(index, "kick")
        self.seg.words.store_u32(off, (self.seg.words.load_u32(off) + 1) & 0xFFFFFFFF)
        self.seg.action.ring()

    @property
    def frame_seq(self) -> int:
        """Number of the last published frame."""
        return self._frame

    # -- lock-step ----------------------------------------------------------------------------
    def wait_for_actions(
        self, handler: Handler | None = None, timeout: float | None = None
    ) -> int | None:
        """Block until the client publishes the next action batch; returns its number.

        Commands that arrive meanwhile are served (see ``serve_commands``). Returns None once
        the client sent ``Close``. Raises ``PeerGoneError`` when the client (or a watched
        peer) exits, ``TransportTimeoutError`` after ``timeout`` (default: the transport's).
        """
        seg = self.seg
        target = self._frame + 1
        load = seg.words.load_u64
        seq_off = OFF["action_seq"]
        pending = seg.c2e.pending
        deadline = self._deadline(timeout)
        while True:
            if self._closing:
                return None
            seg.action.wait_until(
                lambda: load(seq_off) >= target or pending() > 0,
                self.spin,
                deadline,
                self._check,
            )
            if pending():
                self.serve_commands(handler)
                continue
            seq = int(load(seq_off))
            if seq != target:
                raise RuntimeError(
                    f"shm transport {self.name!r}: client published action batch {seq} while "
                    f"batch {target} was expected (two clients on one segment?)"
                )
            return seq

    def publish_frame(self, seq: int | None = None, timeout: float | None = None) -> None:
        """Publish the frame for action batch ``seq`` (default: the next one).

        Call after obs/rewards/dones are written. With several workers, waits first until
        every worker has published that batch as done.
        """
        seq = self._frame + 1 if seq is None else seq
        seg = self.seg
        if len(seg.workers) > 1:
            deadline = self._deadline(timeout)
            for index in range(1, len(seg.workers)):
                pid = seg.worker_pid(index)
                self._watches.watch(pid, f"engine worker {index}")
                seg.workers[index].wait_seq(seq, self.spin, deadline, self._check_workers)
        self._frame = seq
        seg.frame.publish(seq)

    def _check_workers(self) -> None:
        for index in range(1, len(self.seg.workers)):
            self._watches.watch(self.seg.worker_pid(index), f"engine worker {index}")
        self._check()

    # -- commands -----------------------------------------------------------------------------
    def serve_commands(self, handler: Handler | None = None) -> int:
        """Answer every pending command; returns how many were served."""
        served = 0
        while (data := self.seg.c2e.try_read()) is not None:
            served += 1
            try:
                request = cmd.decode(data)
            except cmd.CommandError as exc:
                self.send(None, 0, error=str(exc), method=0)
                continue
            try:
                response = self._answer(request.message, handler)
            except Exception as exc:  # the engine's error goes back to the caller
                self.send(
                    None,
                    request.correlation_id,
                    error=f"{type(exc).__name__}: {exc}",
                    method=_method_value(request.method),
                )
                continue
            self.send(response, request.correlation_id)
            if isinstance(request.message, cmd.CloseRequest):
                self._closing = True
        return served

    def _answer(self, message: Any, handler: Handler | None) -> Any:
        if isinstance(message, cmd.PingRequest):
            return cmd.PingResponse(nonce=message.nonce, frame_seq=self._frame)
        if isinstance(message, cmd.CloseRequest):
            if handler is not None:
                handler(message)
            return cmd.CloseResponse()
        if isinstance(message, cmd.GetSchemaRequest) and self.schema is not None:
            return self.schema
        response = handler(message) if handler is not None else None
        if response is None:
            raise NotImplementedError(f"this engine does not serve {type(message).__name__}")
        return response

    def send(
        self, message: Any, correlation_id: int, *, error: str | None = None, method: int = 0
    ) -> None:
        """Write one envelope on the engine->client ring and ring the client's bell."""
        self.seg.e2c.write(
            cmd.encode(message, correlation_id, error=error, method=method),
            timeout=self.timeout if self.timeout is not None else 5.0,
            check=self._check,
        )
        self.seg.frame.ring()

    # -- lifetime -----------------------------------------------------------------------------
    def close(self) -> None:
        """Mark the segment closed (waking every waiter), unmap it and unlink it."""
        seg = getattr(self, "seg", None)
        if seg is None or seg.closed:
            return
        seg.store("state", STATE_CLOSED)
        seg.frame.ring()
        seg.action.ring()
        self._watches.close()
        seg.release()
        unlink_segment(seg.name)

    def __enter__(self) -> SharedMemoryTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _method_value(name: str) -> int:
    return int(getattr(cmd.fb.Method, name, 0))


class TransportWorker(_EngineSide):
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
        self.seg = MappedSegment.attach(name_from_env(name), attach_timeout)
        if not 1 <= index < self.seg.layout.num_workers:
            n = self.seg.layout.num_workers
            self.seg.release()
            raise ValueError(f"worker index {index} outside 1..{n - 1} of this transport")
        self.index = index
        self._init_side(spin, timeout)
        self._done = int(self.seg.workers[index].load())
        self._kick = int(self.seg.words.load_u32(worker_offset(index, "kick")))
        self.seg.words.store_u32(worker_offset(index, "pid"), os.getpid())
        self._watches.watch(int(self.seg.words.load_u32(OFF["engine_pid"])), "engine owner")

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
        seq_off, kick_off = OFF["action_seq"], worker_offset(self.index, "kick")
        target, kick = self._done + 1, self._kick
        try:
            seg.action.wait_until(
                lambda: load(seq_off) >= target or load32(kick_off) != kick,
                self.spin,
                self._deadline(timeout),
                self._check,
            )
        except Exception:
            if seg.words.load_u32(OFF["state"]) == STATE_CLOSED:
                return None
            raise
        if load32(kick_off) != kick:
            self._kick = int(load32(kick_off))
            return 0
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
