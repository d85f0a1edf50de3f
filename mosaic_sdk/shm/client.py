"""Trainer side of the transport: ``SharedMemoryClient``.

    client = SharedMemoryClient("sim")           # or $MOSAIC_SHM_NAME
    schema = client.get_schema()
    obs, infos = client.reset(seeds=list(range(client.num_envs)))
    obs, rewards, terminated, truncated = client.step(actions)

``obs``, ``actions``, ``rewards``, ``dones`` (= ``terminated``), ``truncated`` and ``resets`` are
numpy views into the segment: reading them copies nothing, and they change in place at every
step. Copy what you want to keep.
"""

from __future__ import annotations

import itertools
import os
import pickle
import time
from collections.abc import Sequence
from typing import Any

import cloudpickle
import numpy as np

from mosaic_sdk.shm import commands as cmd
from mosaic_sdk.shm import segment
from mosaic_sdk.shm.async_steps import AsyncSlices
from mosaic_sdk.shm.gpu import CudaIpcObs, GpuFields, open_gpu_obs, read_gpu_fields, segment_header
from mosaic_sdk.shm.layout import Layout
from mosaic_sdk.shm.mapping import MappedSegment, watch_error
from mosaic_sdk.shm.segment import attach_candidates
from mosaic_sdk.shm.service_client import (
    PUSHED_METHODS,
    AgentService,
    CameraService,
    DebugService,
    MujocoService,
    SceneService,
    Services,
    TelemetryService,
    ViewportService,
)
from mosaic_sdk.shm.sync import (
    PeerWatch,
    TransportError,
    TransportTimeoutError,
    command_spin_budget,
    spin_budget,
)


def _engine_error(reply: cmd.Decoded) -> BaseException:
    """The engine's exception (re-created from its pickle when it sent one)."""
    if reply.error_pickle:
        try:
            exc = pickle.loads(reply.error_pickle)
        except Exception:
            exc = None
        if isinstance(exc, BaseException):
            return exc
    return cmd.CommandError(f"engine failed {reply.method}: {reply.error}")


class SharedMemoryClient:
    """Attach to an engine's transport segment and step its environments in lock-step.

    ``timeout`` (seconds, None = no limit) bounds each wait for the engine; a dead engine is
    detected by pid within about 0.1 s regardless. ``spin``/``command_spin``: the largest spin
    budgets (s) of a step's and a command's wait; ``attach_timeout``: how long to wait for the
    segment to appear. The client never unlinks the segment.

    Either header layout is read (``layout.kind``). ``name`` is looked up with the
    ``mosaic.shm.`` prefix, then as given (``exact_name=True``: only as given); without it,
    ``$MOSAIC_SHM_NAME`` then ``$LUCKY_SHM_NAME``.
    """

    def __init__(
        self,
        name: str | None = None,
        *,
        timeout: float | None = None,
        spin: float | None = None,
        command_spin: float | None = None,
        attach_timeout: float = 10.0,
        exact_name: bool = False,
    ) -> None:
        names = (segment.exact_name(name),) if exact_name else attach_candidates(name)
        self._seg = seg = MappedSegment.attach(names, attach_timeout)
        self.name = seg.name
        self.timeout = timeout
        self.spin = spin_budget(spin)
        self.command_spin = command_spin_budget(command_spin)
        me = os.getpid()
        words = seg.words
        off = seg.off
        while not words.cas_u32(off["client_pid"], 0, me):
            other = int(words.load_u32(off["client_pid"]))
            if other == me or (other and PeerWatch(other).alive()):
                seg.release()
                raise TransportError(
                    f"shm transport {self.name!r} already has a client (pid {other}); "
                    "one client per segment"
                )
            words.cas_u32(off["client_pid"], other, 0)  # a dead client's claim
        self.engine_pid = int(words.load_u32(off["engine_pid"]))
        self._engine = PeerWatch(self.engine_pid)
        self._seq = int(seg.action.load())
        self._ids = itertools.count(1)
        self._closed = False
        self.obs: np.ndarray = seg.obs
        self.actions: np.ndarray = seg.actions
        self.rewards: np.ndarray = seg.rewards
        self.terminated: np.ndarray = seg.terminated
        self.dones: np.ndarray = seg.terminated
        self.truncated: np.ndarray = seg.truncated
        self.resets: np.ndarray = seg.resets
        self.image: np.ndarray | None = seg.image
        self.side: list[tuple[np.ndarray, np.ndarray]] = seg.side  # (to worker, back) per worker
        self._services: Services | None = None
        self._gpu_obs: CudaIpcObs | None = None
        self._gpu_tensor: Any = None

    # -- description --------------------------------------------------------------------------
    @property
    def layout(self) -> Layout:
        """Sizes and offsets read from the header."""
        return self._seg.layout

    @property
    def num_envs(self) -> int:
        """Number of environments."""
        return self._seg.layout.num_envs

    @property
    def base_address(self) -> int:
        """Address of the segment's first byte in this process."""
        return self._seg.base_address

    @property
    def frame_seq(self) -> int:
        """Number of the last frame the engine published."""
        return int(self._seg.frame.load())

    def _check(self) -> None:
        self._seg.verify_header()
        self._seg.check_open()
        if not self._engine.alive():
            raise watch_error(self.name, "engine", self.engine_pid)

    def _deadline(self) -> float | None:
        return None if self.timeout is None else time.monotonic() + self.timeout

    # -- hot path -----------------------------------------------------------------------------
    def step(self, actions: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Publish ``actions`` (or whatever is already in ``self.actions``) and wait for the frame.

        Returns the ``obs``, ``rewards``, ``terminated``, ``truncated`` views (no copies).
        Envs whose ``resets`` flag is 1 are reset instead of stepped; the engine clears the flag.
        """
        if actions is not None:
            a = np.asarray(actions, dtype=np.float32)
            if a.size != self.actions.size:
                raise ValueError(
                    f"step: got {a.size} action values, the transport takes "
                    f"{self.actions.shape[0]} envs x {self.actions.shape[1]} = {self.actions.size}"
                )
            self.actions[...] = a.reshape(self.actions.shape)
        seg = self._seg
        seq = self._seq = self._seq + 1  # published even if the wait below fails
        seg.action.publish(seq)
        got = seg.frame.wait_seq(seq, self.spin, self._deadline(), self._check)
        if got != seq:  # the engine cannot answer a batch that was never sent
            seg.verify_header()
            raise seg.corrupted(f"frame_seq is {got} but this client published batch {seq}")
        seg.verify_now_and_then()
        return self.obs, self.rewards, self.terminated, self.truncated

    def async_slices(self) -> AsyncSlices:
        """Send and receive each worker's slice on its own, for an engine launched with
        ``asynchronous=True`` (``step()`` does not serve it); see ``AsyncSlices``."""
        return AsyncSlices(self._seg, self._check, self.spin, self.timeout)

    # -- GPU observations (mosaic_sdk.shm.gpu) ---------------------------------------------------
    @property
    def gpu_fields(self) -> GpuFields:
        """The header's GPU fields as they are now (``mode`` 0 CPU, 1 CUDA IPC, 2 Vulkan)."""
        return read_gpu_fields(segment_header(self._seg), self.layout)

    def obs_cuda_array(self) -> CudaIpcObs | None:
        """The engine's CUDA observation buffer (``__cuda_array_interface__``, float32
        ``(num_envs, obs_size)``), or None when it exports none (read ``obs``).
        ``GpuModeError`` for Vulkan (mode 2), ``GpuUnavailableError`` without PyTorch's CUDA
        build or a GPU."""
        fields = self.gpu_fields
        view = self._gpu_obs
        if view is not None and view.fields == fields and not view.closed:
            return view
        del view
        self._close_gpu_obs()
        self._gpu_obs = open_gpu_obs(segment_header(self._seg), self.layout)
        return self._gpu_obs

    def obs_tensor(self) -> Any:
        """``obs_cuda_array()`` as a torch tensor (a view: it changes in place at every step,
        like ``obs``), or None."""
        view = self.obs_cuda_array()
        if view is None:
            return None
        if self._gpu_tensor is None:
            self._gpu_tensor = view.tensor()
        return self._gpu_tensor

    def _close_gpu_obs(self) -> None:
        view, self._gpu_obs, self._gpu_tensor = self._gpu_obs, None, None
        del view  # the mapping closes with its last reference (a caller's tensor keeps it)

    # -- commands -----------------------------------------------------------------------------
    def request(self, message: Any) -> Any:
        """Send one command and wait for its response (raises ``CommandError`` on error)."""
        seg = self._seg
        cid = next(self._ids)
        seg.c2e.write(
            cmd.encode(message, cid),
            timeout=self.timeout or 5.0,
            check=self._check,
            ring=seg.action.ring,
        )
        seg.action.ring()
        deadline = self._deadline()
        pending = seg.e2c.pending
        while True:
            seg.replies.wait_until(lambda: pending() > 0, self.command_spin, deadline, self._check)
            data = seg.e2c.try_read()
            if data is None:
                continue
            reply = cmd.decode(data)
            if reply.correlation_id != cid:
                if reply.method in PUSHED_METHODS:  # a stream's frame: kept for its reader
                    self.services.on_push(reply)
                continue  # else an answer to a request abandoned earlier (timeout)
            if reply.error is not None:
                raise _engine_error(reply)
            return reply.message

    def next_envelope(self, deadline: float) -> cmd.Decoded | None:
        """The next envelope the engine wrote that no request is waiting for (a pushed stream
        frame, or the late answer to an abandoned request), waiting until ``deadline``
        (``time.monotonic()``); None when none came by then."""
        seg = self._seg
        while True:
            data = seg.e2c.try_read()
            if data is not None:
                return cmd.decode(data)
            try:
                seg.frame.wait_until(
                    lambda: seg.e2c.pending() > 0, self.spin, deadline, self._check
                )
            except TransportTimeoutError:
                return None

    def get_schema(self) -> cmd.GetSchemaResponse:
        """The engine's spaces, sizes and image configuration."""
        response = self.request(cmd.GetSchemaRequest())
        if not isinstance(response, cmd.GetSchemaResponse):
            raise cmd.CommandError(f"GetSchema answered with {type(response).__name__}")
        return response

    def reset(
        self,
        env_ids: Sequence[int] | None = None,
        seeds: Sequence[int | None] | int | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[np.ndarray, list[dict[str, Any]]]:
        """Reset ``env_ids`` (default all) through the command channel, seeded per env.

        ``seeds`` is one seed per env id, or one int ``s`` meaning ``s + i`` for the i-th id
        (as gymnasium's vector envs do). Returns the ``obs`` view and one info dict per env.
        """
        ids = list(range(self.num_envs)) if env_ids is None else [int(i) for i in env_ids]
        bad = [i for i in ids if not 0 <= i < self.num_envs]
        if bad:
            raise ValueError(f"reset: env ids {bad} outside 0..{self.num_envs - 1}")
        if seeds is None:
            seed_list: list[int | None] = []
        elif isinstance(seeds, (int, np.integer)):
            seed_list = [int(seeds) + k for k in range(len(ids))]
        else:
            seed_list = [None if s is None else int(s) for s in seeds]
        return self.obs, list(self.reset_detailed(ids, seed_list, options)["infos"])

    def reset_detailed(
        self,
        env_ids: Sequence[int],
        seeds: Sequence[int | None],
        options: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Reset as ``reset`` does; returns ``{"infos": [...], "obs": [...] or None}`` exactly
        as the engine produced them (pickled; ``obs`` for spaces without a fixed row)."""
        response = self.request(
            cmd.ResetRequest(env_ids=list(env_ids), seeds=list(seeds), options=options)
        )
        if not response.payload_pickle:
            return {"infos": list(response.infos), "obs": None}
        return dict(pickle.loads(response.payload_pickle))

    def call(self, name: str, *args: Any, **kwargs: Any) -> list[Any]:
        """``env.get_wrapper_attr(name)`` on every env, called with the arguments when callable.

        Arguments and results travel pickled (cloudpickle) through the command channel.
        """
        blob = bytes(cloudpickle.dumps((args, kwargs)))
        response = self.request(cmd.CallRequest(name=name, args_pickle=blob))
        return list(pickle.loads(response.results_pickle))

    def set_attr(self, name: str, values: Sequence[Any]) -> None:
        """``env.set_wrapper_attr(name, value)`` on every env, one value per env."""
        values = list(values)
        if len(values) != self.num_envs:
            raise ValueError(f"set_attr: {len(values)} values for {self.num_envs} envs")
        blob = bytes(cloudpickle.dumps(values))
        self.request(cmd.SetAttrRequest(name=name, values_pickle=blob))

    def ping(self, nonce: int = 0) -> cmd.PingResponse:
        """Round trip through the command channel."""
        response = self.request(cmd.PingRequest(nonce=nonce))
        if not isinstance(response, cmd.PingResponse) or response.nonce != nonce:
            raise cmd.CommandError(f"ping {nonce} answered with {response!r}")
        return response

    # -- engine services (mosaic_sdk.shm.service_client) ---------------------------------------
    @property
    def services(self) -> Services:
        """The engine services and the frames their streams pushed."""
        if self._services is None:
            self._services = Services(self)
        return self._services

    @property
    def agent(self) -> AgentService:
        """Agent service: ``schema()``, ``reset(env_ids, contract)``."""
        return self.services.agent

    @property
    def mujoco(self) -> MujocoService:
        """MuJoCo service: ``joint_state``, ``control``, ``info``."""
        return self.services.mujoco

    @property
    def telemetry(self) -> TelemetryService:
        """Telemetry service: ``schema()``, ``stream(...)``."""
        return self.services.telemetry

    @property
    def scene(self) -> SceneService:
        """Scene service: ``info``, ``entities``, ``pose``, ``set_pose``, ``set_mode``."""
        return self.services.scene

    @property
    def camera(self) -> CameraService:
        """Camera service: ``list()``, ``stream(camera, ...)``."""
        return self.services.camera

    @property
    def viewport(self) -> ViewportService:
        """Viewport service: ``info()``, ``stream(env, ...)``."""
        return self.services.viewport

    @property
    def debug(self) -> DebugService:
        """Debug service: ``draw(shapes, env_ids)``, ``clear()``, shape helpers."""
        return self.services.debug

    # -- lifetime -----------------------------------------------------------------------------
    def close(self, shutdown_engine: bool = False) -> None:
        """Detach (never unlinks); with ``shutdown_engine`` first ask the engine to close."""
        if self._closed:
            return
        self._closed = True
        try:
            if shutdown_engine and self._seg.state != 2:
                try:
                    self.request(cmd.CloseRequest())
                except TransportError:
                    pass
            self._seg.words.cas_u32(self._seg.off["client_pid"], os.getpid(), 0)
        finally:
            self._close_gpu_obs()
            self._engine.close()
            for attr in ("obs", "actions", "rewards", "terminated", "dones", "truncated"):
                setattr(self, attr, None)
            self.resets = None  # type: ignore[assignment]
            self.image = None
            self.side = []
            self._seg.release()

    def __enter__(self) -> SharedMemoryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
