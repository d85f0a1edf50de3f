"""What the owner of a transport and its extra workers share: region views, peer watching."""

from __future__ import annotations

import time

import numpy as np

from mosaic_sdk.shm.gpu import GpuObsExport, segment_header
from mosaic_sdk.shm.layout import Layout
from mosaic_sdk.shm.mapping import MappedSegment, watch_error
from mosaic_sdk.shm.sync import PeerWatch, command_spin_budget, spin_budget


class PeerWatches:
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


class EngineSide:
    """What the owner and the extra workers share: views, waiting for actions, lifetime."""

    seg: MappedSegment

    def _init_side(
        self, spin: float | None, timeout: float | None, command_spin: float | None = None
    ) -> None:
        self.spin = spin_budget(spin)
        self.command_spin = command_spin_budget(command_spin)
        self.timeout = timeout
        self._watches = PeerWatches()
        self._client_pid = 0
        self._closing = False
        self._gpu_obs: GpuObsExport | None = None

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
        """float64 ``(num_envs,)`` (float32 in the lrbc layout)."""
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

    # -- GPU observations (mosaic_sdk.shm.gpu) -------------------------------------------------
    def export_gpu_obs(self, device: int | str = 0) -> GpuObsExport:
        """Export a float32 ``(num_envs, obs_size)`` buffer on CUDA ``device`` (``0``,
        ``"cuda:1"``) for ``client.obs_tensor()``; bring it up to date before each
        ``publish_frame`` (``upload(self.obs)`` or ``publish(tensor, self.obs)``). One per
        segment; ``close_gpu_obs()`` before ``close()``. ``GpuUnavailableError`` without
        PyTorch's CUDA build or a GPU."""
        if self._gpu_obs is not None:
            raise ValueError(
                f"shm transport {self.name!r} already exports GPU observations on cuda:"
                f"{self._gpu_obs.device}; call close_gpu_obs() first"
            )
        self._gpu_obs = GpuObsExport(segment_header(self.seg), self.layout, device)
        return self._gpu_obs

    @property
    def gpu_obs(self) -> GpuObsExport | None:
        """The exported GPU observation buffer, None when none is exported."""
        return self._gpu_obs

    def close_gpu_obs(self) -> None:
        """Stop exporting GPU observations (header back to mode 0) and free the buffer."""
        export, self._gpu_obs = self._gpu_obs, None
        if export is not None:
            export.close()

    @property
    def client_pid(self) -> int:
        """Pid of the attached client (0 when none)."""
        return self.seg.load("client_pid")

    def watch_peer(self, pid: int, role: str) -> None:
        """Abort waits with ``PeerGoneError`` once process ``pid`` (described as ``role``) exits."""
        self._watches.watch(pid, role)

    def _check(self) -> None:
        self.seg.verify_header()
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
