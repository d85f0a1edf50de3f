"""Client side of the engine services: ``client.agent``, ``client.mujoco``, ``client.telemetry``,
``client.scene``, ``client.camera``, ``client.viewport``, ``client.debug``.

    client = SharedMemoryClient(name)
    client.agent.reset([1, 3], SimulationContract(mass_scale_low=0.5, mass_scale_high=2.0))
    state = client.mujoco.joint_state(env=0, names=["x"])
    with client.camera.stream("overhead", env_ids=[0], rate_hz=30, max_frames=3) as frames:
        for frame in frames:                 # pushed by the engine: no request per frame
            frame.pixels[0]                  # (H, W, 3) uint8, copied out of the image region

Each method sends one request through the command channel and returns the response.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np

from mosaic_sdk.shm import commands as cmd
from mosaic_sdk.shm import services as sv
from mosaic_sdk.shm.sync import TransportTimeoutError


class EngineLink(Protocol):
    """What the services use of a :class:`~mosaic_sdk.shm.client.SharedMemoryClient` (which
    builds its ``services`` from this module, so it is named here by what it offers)."""

    image: np.ndarray | None

    def request(self, message: Any) -> Any: ...

    def next_envelope(self, deadline: float) -> cmd.Decoded | None: ...


PUSHED_METHODS = ("TelemetryFrame", "ImageFrame")
_T = TypeVar("_T")


@dataclass
class Pushed:
    """One frame an engine pushed: the message, and for an image frame its pixels."""

    stream_id: int
    message: Any  # sv.TelemetryFrame | sv.ImageFrame
    pixels: np.ndarray | None = None  # (len(env_ids), H, W, C) uint8 for image frames
    error: str | None = None


class Services:
    """The service namespaces of one client, and the frames pushed to it.

    Frames that arrive while the client waits for a response are kept here. An image frame's
    pixels are copied out when its message is read (the engine draws the next one only after).
    """

    def __init__(self, client: EngineLink) -> None:
        self.client = client
        self._pushed: deque[Pushed] = deque()
        self.agent = AgentService(self)
        self.mujoco = MujocoService(self)
        self.telemetry = TelemetryService(self)
        self.scene = SceneService(self)
        self.camera = CameraService(self)
        self.viewport = ViewportService(self)
        self.debug = DebugService(self)

    def request(self, message: Any) -> Any:
        """One request, its response (``CommandError`` when the engine refused it)."""
        return self.client.request(message)

    def on_push(self, reply: cmd.Decoded) -> None:
        """Keep a pushed frame (called by the client for every pushed envelope it reads)."""
        pixels = None
        if isinstance(reply.message, sv.ImageFrame) and self.client.image is not None:
            pixels = self.client.image[reply.message.env_ids].copy()
        self._pushed.append(Pushed(reply.correlation_id, reply.message, pixels, reply.error))

    def next_pushed(self, stream_id: int | None = None, timeout: float = 5.0) -> Pushed | None:
        """The oldest pushed frame (of ``stream_id`` when given), waiting up to ``timeout`` s;
        None when none came. Frames of other streams stay queued."""
        deadline = time.monotonic() + timeout
        while True:
            for k, p in enumerate(self._pushed):
                if stream_id is None or p.stream_id == stream_id:
                    del self._pushed[k]
                    return p
            reply = self.client.next_envelope(deadline)
            if reply is None:
                return None
            if reply.method in PUSHED_METHODS:
                self.on_push(reply)
            # else: a response to a request abandoned earlier


class _Service:
    def __init__(self, services: Services) -> None:
        self._s = services

    def _ask(self, message: Any, expected: type[_T]) -> _T:
        response = self._s.request(message)
        if not isinstance(response, expected):
            raise cmd.CommandError(
                f"{type(message).__name__} answered with {type(response).__name__}, "
                f"expected {expected.__name__}"
            )
        return response


def _ids(env_ids: Sequence[int] | None) -> list[int]:
    return [] if env_ids is None else [int(i) for i in env_ids]


class Stream:
    """A stream the engine pushes: iterate over its frames; ``stop()`` ends it early.

    ``timeout`` bounds the wait for each frame (``TransportTimeoutError`` when exceeded).
    """

    def __init__(self, services: Services, started: sv.StreamResponse, max_frames: int) -> None:
        self._s = services
        self.stream_id = started.stream_id
        self.names = list(started.names)
        self.sizes = list(started.sizes)
        self.max_frames = max_frames
        self.received = 0
        self.timeout = 10.0
        self.stopped = False

    def next(self, timeout: float | None = None) -> Pushed:
        """The next frame of this stream."""
        wait = self.timeout if timeout is None else timeout
        p = self._s.next_pushed(self.stream_id, wait)
        if p is None:
            raise TransportTimeoutError(f"stream {self.stream_id}: no frame in {wait} s")
        if p.error is not None:
            raise cmd.CommandError(f"stream {self.stream_id} failed: {p.error}")
        self.received += 1
        return p

    def __iter__(self) -> Iterator[Pushed]:
        while not self.stopped and (not self.max_frames or self.received < self.max_frames):
            yield self.next()

    def values(self, frame: Pushed) -> dict[str, np.ndarray]:
        """A telemetry frame's values by quantity name, each ``(len(env_ids), size)``."""
        msg = frame.message
        flat = np.asarray(msg.values, dtype=np.float64).reshape(len(msg.env_ids), -1)
        out, col = {}, 0
        for name, size in zip(self.names, self.sizes, strict=True):
            out[name] = flat[:, col : col + size]
            col += size
        return out

    def stop(self) -> sv.StreamStopResponse:
        """Stop the stream (frames already pushed stay readable with ``next``)."""
        self.stopped = True
        return self._s.request(sv.StreamStopRequest(self.stream_id))  # type: ignore[no-any-return]

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.stopped and (not self.max_frames or self.received < self.max_frames):
            self.stop()


class AgentService(_Service):
    """The agent: schema, and resets with domain randomisation."""

    def schema(self) -> sv.AgentSchemaResponse:
        """Observation and action names, bounds, timing."""
        return self._ask(sv.AgentSchemaRequest(), sv.AgentSchemaResponse)

    def reset(
        self,
        env_ids: Sequence[int] | None = None,
        contract: sv.SimulationContract | dict[str, Any] | None = None,
    ) -> sv.AgentResetResponse:
        """Reset ``env_ids`` (default all), randomised by ``contract`` (fields of
        ``SimulationContract``, or one)."""
        if isinstance(contract, dict):
            contract = sv.SimulationContract(**contract)
        return self._ask(sv.AgentResetRequest(_ids(env_ids), contract), sv.AgentResetResponse)


class MujocoService(_Service):
    """MuJoCo itself: joint state, direct control, model info."""

    def joint_state(
        self, env: int = 0, names: Sequence[str] | None = None
    ) -> sv.JointStateResponse:
        """qpos/qvel of the joints ``names`` (default all) of env ``env``."""
        return self._ask(sv.JointStateRequest(int(env), list(names or [])), sv.JointStateResponse)

    def control(self, env_ids: Sequence[int], ctrl: Any, steps: int = 0) -> sv.SendControlResponse:
        """Set the actuators of ``env_ids`` (``ctrl``: one row of ``nu`` values per env) and
        advance them ``steps`` physics steps."""
        flat = [float(x) for x in np.asarray(ctrl, dtype=np.float64).ravel()]
        return self._ask(
            sv.SendControlRequest(_ids(env_ids), flat, int(steps)), sv.SendControlResponse
        )

    def info(self) -> sv.MujocoInfoResponse:
        """Version, sizes and names of the model."""
        return self._ask(sv.MujocoInfoRequest(), sv.MujocoInfoResponse)


class TelemetryService(_Service):
    """Named per-step quantities, streamed."""

    def schema(self) -> sv.TelemetrySchemaResponse:
        """The quantities the engine can stream."""
        return self._ask(sv.TelemetrySchemaRequest(), sv.TelemetrySchemaResponse)

    def stream(
        self,
        names: Sequence[str] | None = None,
        env_ids: Sequence[int] | None = None,
        rate_hz: float = 0.0,
        max_frames: int = 0,
    ) -> Stream:
        """Stream ``names`` (default all) of ``env_ids`` at ``rate_hz`` of simulated time
        (0: every physics step), ``max_frames`` frames (0: until stopped)."""
        started = self._ask(
            sv.TelemetryStreamRequest(_ids(env_ids), list(names or []), rate_hz, max_frames),
            sv.StreamResponse,
        )
        return Stream(self._s, started, max_frames)


class SceneService(_Service):
    """The scene: info, entities, poses, simulation mode."""

    def info(self) -> sv.SceneInfoResponse:
        """Model, env count, mode, simulated time per env."""
        return self._ask(sv.SceneInfoRequest(), sv.SceneInfoResponse)

    def entities(self, kind: str = "") -> list[sv.Entity]:
        """Bodies and geoms ("body", "geom" or "" for both)."""
        return self._ask(sv.ListEntitiesRequest(kind), sv.ListEntitiesResponse).entities

    def pose(self, name: str, env: int = 0, kind: str = "body") -> sv.EntityPose:
        """World pose of a body or geom."""
        return self._ask(sv.GetEntityPoseRequest(int(env), kind, name), sv.EntityPose)

    def set_pose(
        self,
        name: str,
        pos: Sequence[float],
        quat: Sequence[float] = (1.0, 0.0, 0.0, 0.0),
        env: int = 0,
    ) -> sv.EntityPose:
        """Move a free or mocap body; returns its pose afterwards."""
        pose = sv.EntityPose(int(env), "body", name, tuple(pos), tuple(quat))  # type: ignore[arg-type]
        return self._ask(sv.SetEntityPoseRequest(pose), sv.SetEntityPoseResponse).pose

    def set_mode(self, mode: str, realtime: bool = False, steps: int = 1) -> sv.SetSimModeResponse:
        """``lockstep`` (physics advances with the client's steps), ``run`` (free-running,
        ``realtime`` or as fast as possible), ``pause``, or ``step`` (``steps`` control steps,
        then pause)."""
        if mode not in sv.SIM_MODES:
            raise ValueError(f"sim mode {mode!r}: use one of {', '.join(sv.SIM_MODES)}")
        return self._ask(sv.SetSimModeRequest(mode, realtime, steps), sv.SetSimModeResponse)


class CameraService(_Service):
    """The model's cameras, streamed into the image region."""

    def list(self) -> sv.ListCamerasResponse:
        """The cameras and the frame size."""
        return self._ask(sv.ListCamerasRequest(), sv.ListCamerasResponse)

    def stream(
        self,
        camera: str,
        env_ids: Sequence[int] | None = None,
        rate_hz: float = 30.0,
        max_frames: int = 0,
    ) -> Stream:
        """Frames of ``camera`` for ``env_ids`` (default all) at ``rate_hz`` per second."""
        started = self._ask(
            sv.CameraStreamRequest(camera, _ids(env_ids), rate_hz, max_frames), sv.StreamResponse
        )
        return Stream(self._s, started, max_frames)


class ViewportService(_Service):
    """The free camera (the editor's viewport), streamed into the image region."""

    def info(self) -> sv.ViewportInfoResponse:
        """Size and placement of the free camera."""
        return self._ask(sv.ViewportInfoRequest(), sv.ViewportInfoResponse)

    def stream(
        self,
        env: int = 0,
        rate_hz: float = 30.0,
        max_frames: int = 0,
        *,
        lookat: Sequence[float] = (0.0, 0.0, 0.0),
        distance: float = 0.0,
        azimuth: float = 90.0,
        elevation: float = -45.0,
    ) -> Stream:
        """Frames of the free camera on env ``env``; ``distance`` > 0 places the camera."""
        x, y, z = (float(v) for v in lookat)
        request = sv.ViewportStreamRequest(
            int(env), rate_hz, max_frames, (x, y, z), distance, azimuth, elevation
        )
        return Stream(self._s, self._ask(request, sv.StreamResponse), max_frames)


class DebugService(_Service):
    """Lines, spheres and text drawn into the rendered frames."""

    def draw(
        self,
        shapes: Sequence[sv.DebugShape],
        env_ids: Sequence[int] | None = None,
        clear: bool = False,
    ) -> int:
        """Add ``shapes`` to ``env_ids`` (default all; ``clear`` drops earlier ones first);
        returns how many shapes they now draw."""
        request = sv.DebugDrawRequest(_ids(env_ids), list(shapes), clear)
        return int(self._ask(request, sv.DebugDrawResponse).count)

    def clear(self, env_ids: Sequence[int] | None = None) -> int:
        """Drop every shape of ``env_ids``."""
        return self.draw([], env_ids, clear=True)

    @staticmethod
    def line(
        start: Sequence[float],
        end: Sequence[float],
        rgba: Sequence[float] = (1, 0, 0, 1),
        width: float = 3.0,
    ) -> sv.DebugShape:
        """A line from ``start`` to ``end`` (``width`` in pixels)."""
        return sv.DebugShape("line", tuple(start), tuple(end), width, list(rgba))  # type: ignore[arg-type]

    @staticmethod
    def sphere(
        center: Sequence[float], radius: float, rgba: Sequence[float] = (0, 1, 0, 1)
    ) -> sv.DebugShape:
        """A sphere."""
        return sv.DebugShape("sphere", tuple(center), (0, 0, 0), radius, list(rgba))  # type: ignore[arg-type]

    @staticmethod
    def text(
        position: Sequence[float], text: str, rgba: Sequence[float] = (1, 1, 1, 1)
    ) -> sv.DebugShape:
        """A text label at ``position``."""
        return sv.DebugShape("text", tuple(position), (0, 0, 0), 0.0, list(rgba), text)  # type: ignore[arg-type]
