"""Engine side of the transport: ``SharedMemoryTransport`` (owner) and ``TransportWorker``.

An engine loop::

    transport = SharedMemoryTransport(num_envs=4096, obs_size=100, act_size=12, name="sim")
    transport.schema = GetSchemaResponse(...)          # answered to get_schema()
    while (seq := transport.wait_for_actions(handler)) is not None:
        step(transport.actions, transport.resets)      # read actions, honour reset flags
        transport.obs[:] = ...; transport.rewards[:] = ...
        transport.publish_frame(seq)
    transport.close()                                  # unlinks the segment

``handler(message)`` answers each command but ``Ping``, ``GetSchema`` and ``Close``.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from typing import Any

from mosaic_sdk.shm import commands as cmd
from mosaic_sdk.shm.engine_side import EngineSide
from mosaic_sdk.shm.layout import (
    DEFAULT_RING_SIZE,
    LAYOUT_LRBC,
    LAYOUT_MSHM,
    MODE_TRAINING,
    STATE_CLOSED,
    Layout,
    worker_offset,
)
from mosaic_sdk.shm.mapping import MappedSegment
from mosaic_sdk.shm.ring import MessageTooLargeError
from mosaic_sdk.shm.segment import (
    create_segment,
    lrbc_name,
    name_from_env,
    segment_name,
    unlink_segment,
)

Handler = Callable[[Any], Any]


class SharedMemoryTransport(EngineSide):
    """Creates and owns a transport segment; the engine steps envs through it.

    ``name`` (or ``$MOSAIC_SHM_NAME``, else random) gets the ``mosaic`` prefix, but with
    ``layout="lrbc"`` (``schema/lrbc_layout.md``; default ``$LUCKY_SHM_NAME``, else
    ``LuckyEngine_<pid>``). ``timeout`` (seconds, None = none) bounds each wait; a dead client
    or one of ``peer_pids`` aborts it. With ``num_workers > 1``, ``TransportWorker(name, i)``
    steps slice ``i`` and ``publish_frame`` waits for every worker's ``done_seq`` first.
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
        side_size: int = 0,
        spin: float | None = None,
        timeout: float | None = None,
        peer_pids: tuple[int, ...] = (),
        layout: str = LAYOUT_MSHM,
        command_spin: float | None = None,
    ) -> None:
        if layout == LAYOUT_LRBC:
            seg_name = lrbc_name(name, f"LuckyEngine_{os.getpid()}")
        elif name is None and os.environ.get("MOSAIC_SHM_NAME"):
            seg_name = name_from_env(None)
        else:
            seg_name = segment_name(name)
        sizes = Layout.compute(
            num_envs,
            obs_size,
            act_size,
            cmd_ring_size=cmd_ring_size,
            image_shape=image_shape,
            mode=mode,
            num_workers=num_workers,
            side_size=side_size,
            kind=layout,
        )
        mm = create_segment(seg_name, sizes.total_size)
        try:
            sizes.write_header(mm, os.getpid())
            self.seg = MappedSegment(seg_name, mm, sizes)
            self._init_side(spin, timeout, command_spin)
            self.set_worker_slice(0, 0, num_envs)
            self.seg.words.store_u32(worker_offset(0, "pid"), os.getpid())
            for pid in peer_pids:
                self._watches.watch(pid, "launcher")
            self.schema: cmd.GetSchemaResponse | None = None
            self._frame = 0
            self._worker_pids: dict[int, int] = {}
            self.seg.mark_ready()
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
        """Block until the client publishes the next action batch; returns its number (None
        once the client sent ``Close``), serving commands meanwhile. ``PeerGoneError`` when a
        watched peer exits, ``TransportTimeoutError`` after ``timeout`` (default: ours)."""
        seg = self.seg
        target = self._frame + 1
        load = seg.words.load_u64
        seq_off = seg.off["action_seq"]
        pending = seg.c2e.pending
        deadline = self._deadline(timeout)
        served = False
        while True:
            if self._closing:
                return None
            # right after a command, the next one often follows at once: spin for it as long
            # as commands are answered (the command budget), else as long as steps come
            line, spin = (seg.requests, self.command_spin) if served else (seg.action, self.spin)
            line.wait_until(
                lambda: load(seq_off) >= target or pending() > 0,
                spin,
                deadline,
                self._check,
            )
            if pending():
                served = self.serve_commands(handler) > 0
                continue
            seq = int(load(seq_off))
            if seq != target:
                seg.verify_header()
                raise seg.corrupted(
                    f"action_seq is {seq} while batch {target} was expected (a process wrote "
                    "into the segment, or two clients share it)"
                )
            seg.verify_now_and_then()
            return seq

    def publish_frame(self, seq: int | None = None, timeout: float | None = None) -> None:
        """Publish the frame for action batch ``seq`` (default: the next one), once obs,
        rewards and dones are written (and every worker published that batch as done)."""
        seq = self._frame + 1 if seq is None else seq
        seg = self.seg
        if len(seg.workers) > 1:
            deadline = self._deadline(timeout)
            for index in range(1, len(seg.workers)):
                pid = self._worker_pid(index)
                self._watches.watch(pid, f"engine worker {index}")
                seg.workers[index].wait_seq(seq, self.spin, deadline, self._check_workers)
        self._frame = seq
        seg.frame.publish(seq)

    def _check_workers(self) -> None:
        for index in range(1, len(self.seg.workers)):
            self._watches.watch(self._worker_pid(index), f"engine worker {index}")
        self._check()

    def _worker_pid(self, index: int) -> int:
        """Worker slot ``index``'s pid (a worker keeps its slot: a changed pid is corruption)."""
        pid = self.seg.worker_pid(index)
        known = self._worker_pids.setdefault(index, pid) if pid else pid
        if pid and known != pid:
            self.seg.verify_header()
            raise self.seg.corrupted(f"worker slot {index} changed from pid {known} to {pid}")
        return pid

    # -- commands -----------------------------------------------------------------------------
    def serve_commands(self, handler: Handler | None = None) -> int:
        """Answer every pending command; returns how many were served."""
        served = 0
        while True:
            try:
                data = self.seg.c2e.try_read()
            except MessageTooLargeError as exc:  # dropped: its sender gets the error
                served += 1
                cid, method = cmd.envelope_ids(exc.head)
                self.send_error(ValueError(f"{exc}: send less per command"), cid, method)
                continue
            if data is None:
                return served
            served += 1
            try:
                request = cmd.decode(data)
            except cmd.CommandError as exc:
                self.send(None, 0, error=str(exc), method=0)
                continue
            try:
                response = self._answer(request.message, handler)
            except Exception as exc:  # the engine's error goes back to the caller
                method = int(getattr(cmd.fb.Method, request.method, 0))
                self.send_error(exc, request.correlation_id, method)
                continue
            self.send(response, request.correlation_id)
            if isinstance(request.message, cmd.CloseRequest):
                self._closing = True

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
        self,
        message: Any,
        correlation_id: int,
        *,
        error: str | None = None,
        method: int = 0,
        error_pickle: bytes = b"",
    ) -> None:
        """Write one envelope on the engine->client ring and ring the client's bell."""
        self.seg.e2c.write(
            cmd.encode(
                message, correlation_id, error=error, method=method, error_pickle=error_pickle
            ),
            timeout=self.timeout if self.timeout is not None else 5.0,
            check=self._check,
            ring=self.seg.frame.ring,
        )
        self.seg.frame.ring()

    def send_error(self, exc: Exception, correlation_id: int, method: int) -> None:
        """Answer a request with ``exc``, pickled too for a Python client to re-raise."""
        error = f"{type(exc).__name__}: {exc}"
        self.send(None, correlation_id, error=error, method=method, error_pickle=_pickled(exc))

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


def _pickled(exc: BaseException) -> bytes:
    """The exception pickled for a Python client to re-raise (b"" when it cannot be)."""
    try:
        data = pickle.dumps(exc)
        pickle.loads(data)
        return data
    except Exception:
        return b""
