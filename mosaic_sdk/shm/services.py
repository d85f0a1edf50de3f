"""The engine services' command messages (Agent, MuJoCo, Telemetry, Scene, Camera, Viewport,
Debug): Python dataclasses and their FlatBuffers form (``schema/shm_commands.fbs``).

Every dataclass here has a table of the same name in the schema. ``FIELDS`` says, per class,
how each field travels (scalar, string, vector, struct, nested table); ``build`` and ``read``
walk that description with flatc's generated functions, so a new message needs its table in the
schema, its dataclass and one ``FIELDS`` entry. ``commands.encode``/``decode`` call them for the
payloads listed in ``TAGS``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, fields
from typing import Any

import flatbuffers
import numpy as np

from mosaic_sdk.shm import wire
from mosaic_sdk.shm.generated import shm_commands_generated as fb

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]

SIM_MODES = ("lockstep", "run", "pause", "step")
DEBUG_KINDS = ("line", "sphere", "text")
_ENUMS = {"mode": SIM_MODES, "debug": DEBUG_KINDS}


# -- Agent ------------------------------------------------------------------------------------
@dataclass
class AgentSchemaRequest:
    """Ask for the agent's schema: observation and action names, bounds, timing."""


@dataclass
class AgentSchemaResponse:
    """What one env observes and takes, by name."""

    num_envs: int = 0
    model_name: str = ""
    obs_names: list[str] = field(default_factory=list)
    act_names: list[str] = field(default_factory=list)
    act_low: list[float] = field(default_factory=list)
    act_high: list[float] = field(default_factory=list)
    timestep: float = 0.0
    frame_skip: int = 1
    max_episode_steps: int = 0


@dataclass
class SimulationContract:
    """Domain randomisation applied to the envs of one reset (see the schema for the fields).

    Scales are drawn per env in ``[low, high]`` and apply to the model's own values (they never
    compound); ``restore_defaults`` puts the envs back on the model's parameters instead.
    """

    mass_scale_low: float = 1.0
    mass_scale_high: float = 1.0
    friction_scale_low: float = 1.0
    friction_scale_high: float = 1.0
    gain_scale_low: float = 1.0
    gain_scale_high: float = 1.0
    gravity: list[float] = field(default_factory=list)
    qpos_noise: float = 0.0
    qvel_noise: float = 0.0
    seed: int = -1
    restore_defaults: bool = False


@dataclass
class AgentResetRequest:
    """Reset ``env_ids`` (empty = all), randomised by ``contract`` when given."""

    env_ids: list[int] = field(default_factory=list)
    contract: SimulationContract | None = None


@dataclass
class AgentResetResponse:
    """The reset envs, with the total mass and gravity each now simulates."""

    env_ids: list[int] = field(default_factory=list)
    body_mass: list[float] = field(default_factory=list)
    gravity_z: list[float] = field(default_factory=list)


# -- MuJoCo -----------------------------------------------------------------------------------
@dataclass
class JointStateRequest:
    """qpos/qvel of the joints ``names`` (empty = all) of env ``env_id``."""

    env_id: int = 0
    names: list[str] = field(default_factory=list)


@dataclass
class JointStateResponse:
    """Joint positions and velocities, flattened joint after joint."""

    names: list[str] = field(default_factory=list)
    qpos_dims: list[int] = field(default_factory=list)
    qvel_dims: list[int] = field(default_factory=list)
    qpos: list[float] = field(default_factory=list)
    qvel: list[float] = field(default_factory=list)
    time: float = 0.0

    def joints(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """``{name: (qpos, qvel)}``, each an array of the joint's own size."""
        out, p, v = {}, 0, 0
        for name, dp, dv in zip(self.names, self.qpos_dims, self.qvel_dims, strict=True):
            out[name] = (np.asarray(self.qpos[p : p + dp]), np.asarray(self.qvel[v : v + dv]))
            p, v = p + dp, v + dv
        return out


@dataclass
class SendControlRequest:
    """Set ``ctrl`` (``len(env_ids) * nu`` values) and advance those envs ``steps`` steps."""

    env_ids: list[int] = field(default_factory=list)
    ctrl: list[float] = field(default_factory=list)
    steps: int = 0


@dataclass
class SendControlResponse:
    """The controlled envs and their simulated time afterwards."""

    env_ids: list[int] = field(default_factory=list)
    time: list[float] = field(default_factory=list)


@dataclass
class MujocoInfoRequest:
    """Ask for the model's sizes and names."""


@dataclass
class MujocoInfoResponse:
    """The MuJoCo model: version, sizes, names."""

    version: str = ""
    nq: int = 0
    nv: int = 0
    nu: int = 0
    nbody: int = 0
    njnt: int = 0
    ngeom: int = 0
    ncam: int = 0
    timestep: float = 0.0
    joint_names: list[str] = field(default_factory=list)
    actuator_names: list[str] = field(default_factory=list)
    body_names: list[str] = field(default_factory=list)
    camera_names: list[str] = field(default_factory=list)


# -- Telemetry --------------------------------------------------------------------------------
@dataclass
class TelemetrySchemaRequest:
    """Ask which per-step quantities can be streamed."""


@dataclass
class TelemetrySchemaResponse:
    """Quantity names, values per env of each, one line of description each."""

    names: list[str] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    descriptions: list[str] = field(default_factory=list)


@dataclass
class TelemetryStreamRequest:
    """Start a telemetry stream (``rate_hz`` in simulated time; 0 = every physics step)."""

    env_ids: list[int] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    rate_hz: float = 0.0
    max_frames: int = 0


@dataclass
class StreamResponse:
    """A stream started: its id (the correlation id of its frames) and what a frame holds."""

    stream_id: int = 0
    names: list[str] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)


@dataclass
class TelemetryFrame:
    """One telemetry frame, pushed by the engine."""

    stream_id: int = 0
    seq: int = 0
    sim_time: float = 0.0
    frame_seq: int = 0
    env_ids: list[int] = field(default_factory=list)
    values: list[float] = field(default_factory=list)


@dataclass
class StreamStopRequest:
    """Stop stream ``stream_id``."""

    stream_id: int = 0


@dataclass
class StreamStopResponse:
    """The stream is stopped after ``frames_sent`` frames."""

    stream_id: int = 0
    frames_sent: int = 0


# -- Scene ------------------------------------------------------------------------------------
@dataclass
class SceneInfoRequest:
    """Ask for the scene's description and simulation mode."""


@dataclass
class SceneInfoResponse:
    """The scene: model, env count, mode, per-env simulated time, sizes."""

    model_name: str = ""
    num_envs: int = 0
    timestep: float = 0.0
    mode: str = "lockstep"
    realtime: bool = False
    sim_time: list[float] = field(default_factory=list)
    nbody: int = 0
    ngeom: int = 0
    ncam: int = 0


@dataclass
class Entity:
    """A body or geom of the scene."""

    id: int = 0
    kind: str = ""
    name: str = ""
    parent: str = ""


@dataclass
class ListEntitiesRequest:
    """List the bodies and/or geoms (``kind`` "body", "geom" or "" for both)."""

    kind: str = ""


@dataclass
class ListEntitiesResponse:
    """The scene's entities."""

    entities: list[Entity] = field(default_factory=list)


@dataclass
class GetEntityPoseRequest:
    """World pose of entity ``name`` (a body or geom) in env ``env_id``."""

    env_id: int = 0
    kind: str = "body"
    name: str = ""


@dataclass
class EntityPose:
    """An entity's world position and orientation (quaternion w, x, y, z)."""

    env_id: int = 0
    kind: str = "body"
    name: str = ""
    pos: Vec3 = (0.0, 0.0, 0.0)
    quat: Quat = (1.0, 0.0, 0.0, 0.0)


@dataclass
class SetEntityPoseRequest:
    """Move an entity (a free or mocap body) to ``pose``."""

    pose: EntityPose = field(default_factory=EntityPose)


@dataclass
class SetEntityPoseResponse:
    """The entity's pose after the move."""

    pose: EntityPose = field(default_factory=EntityPose)


@dataclass
class SetSimModeRequest:
    """Switch the simulation mode (one of ``SIM_MODES``)."""

    mode: str = "lockstep"
    realtime: bool = False
    steps: int = 1


@dataclass
class SetSimModeResponse:
    """The mode now in force."""

    mode: str = "lockstep"
    realtime: bool = False
    sim_time: float = 0.0


# -- Camera, viewport -------------------------------------------------------------------------
@dataclass
class CameraInfo:
    """A camera of the model."""

    id: int = 0
    name: str = ""
    fovy: float = 0.0


@dataclass
class ListCamerasRequest:
    """Ask for the model's cameras."""


@dataclass
class ListCamerasResponse:
    """The cameras and the image region's frame size."""

    cameras: list[CameraInfo] = field(default_factory=list)
    width: int = 0
    height: int = 0
    channels: int = 0


@dataclass
class CameraStreamRequest:
    """Stream frames of ``camera`` for ``env_ids`` into the image region at ``rate_hz``."""

    camera: str = ""
    env_ids: list[int] = field(default_factory=list)
    rate_hz: float = 30.0
    max_frames: int = 0


@dataclass
class ImageFrame:
    """Frame ``seq`` of a stream: the pixels of ``env_ids`` are in the image region."""

    stream_id: int = 0
    seq: int = 0
    camera: str = ""
    env_ids: list[int] = field(default_factory=list)
    width: int = 0
    height: int = 0
    channels: int = 0
    sim_time: float = 0.0
    frame_seq: int = 0


@dataclass
class ViewportInfoRequest:
    """Ask for the viewport (the free camera) settings."""


@dataclass
class ViewportInfoResponse:
    """The viewport's size and free-camera placement."""

    width: int = 0
    height: int = 0
    lookat: Vec3 = (0.0, 0.0, 0.0)
    distance: float = 0.0
    azimuth: float = 0.0
    elevation: float = 0.0


@dataclass
class ViewportStreamRequest:
    """Stream the free camera of env ``env_id``, placed as given (distance 0: keep)."""

    env_id: int = 0
    rate_hz: float = 30.0
    max_frames: int = 0
    lookat: Vec3 = (0.0, 0.0, 0.0)
    distance: float = 0.0
    azimuth: float = 0.0
    elevation: float = 0.0


# -- Debug ------------------------------------------------------------------------------------
@dataclass
class DebugShape:
    """A line (pos -> end, width ``size``), sphere (radius ``size``) or text at ``pos``."""

    kind: str = "line"
    pos: Vec3 = (0.0, 0.0, 0.0)
    end: Vec3 = (0.0, 0.0, 0.0)
    size: float = 0.01
    rgba: list[float] = field(default_factory=lambda: [1.0, 0.0, 0.0, 1.0])
    text: str = ""


@dataclass
class DebugDrawRequest:
    """Draw ``shapes`` into the rendered frames of ``env_ids`` (empty = all)."""

    env_ids: list[int] = field(default_factory=list)
    shapes: list[DebugShape] = field(default_factory=list)
    clear: bool = False


@dataclass
class DebugDrawResponse:
    """How many shapes the envs now draw (per env, the largest)."""

    count: int = 0


ServiceMessage = Any

# kinds: "u8" "u32" "u64" "i32" "i64" "f64" "bool" scalars; "str"; "bytes" ([ubyte], absent
# when empty); "v:<dtype>" numeric vector; "vstr" strings; "vec3" / "quat" structs; "mode" /
# "debug" enums (names <-> values); "t:<Class>" a nested table; "vt:<Class>" a vector of tables.
FIELDS: dict[type, dict[str, str]] = {
    AgentSchemaRequest: {},
    AgentSchemaResponse: {
        "num_envs": "u32",
        "model_name": "str",
        "obs_names": "vstr",
        "act_names": "vstr",
        "act_low": "v:f8",
        "act_high": "v:f8",
        "timestep": "f64",
        "frame_skip": "u32",
        "max_episode_steps": "u32",
    },
    SimulationContract: {
        "mass_scale_low": "f64",
        "mass_scale_high": "f64",
        "friction_scale_low": "f64",
        "friction_scale_high": "f64",
        "gain_scale_low": "f64",
        "gain_scale_high": "f64",
        "gravity": "v:f8",
        "qpos_noise": "f64",
        "qvel_noise": "f64",
        "seed": "i64",
        "restore_defaults": "bool",
    },
    AgentResetRequest: {"env_ids": "v:u4", "contract": "t:SimulationContract"},
    AgentResetResponse: {"env_ids": "v:u4", "body_mass": "v:f8", "gravity_z": "v:f8"},
    JointStateRequest: {"env_id": "u32", "names": "vstr"},
    JointStateResponse: {
        "names": "vstr",
        "qpos_dims": "v:u4",
        "qvel_dims": "v:u4",
        "qpos": "v:f8",
        "qvel": "v:f8",
        "time": "f64",
    },
    SendControlRequest: {"env_ids": "v:u4", "ctrl": "v:f8", "steps": "u32"},
    SendControlResponse: {"env_ids": "v:u4", "time": "v:f8"},
    MujocoInfoRequest: {},
    MujocoInfoResponse: {
        "version": "str",
        **{k: "u32" for k in ("nq", "nv", "nu", "nbody", "njnt", "ngeom", "ncam")},
        "timestep": "f64",
        "joint_names": "vstr",
        "actuator_names": "vstr",
        "body_names": "vstr",
        "camera_names": "vstr",
    },
    TelemetrySchemaRequest: {},
    TelemetrySchemaResponse: {"names": "vstr", "sizes": "v:u4", "descriptions": "vstr"},
    TelemetryStreamRequest: {
        "env_ids": "v:u4",
        "names": "vstr",
        "rate_hz": "f64",
        "max_frames": "u32",
    },
    StreamResponse: {"stream_id": "u64", "names": "vstr", "sizes": "v:u4"},
    TelemetryFrame: {
        "stream_id": "u64",
        "seq": "u64",
        "sim_time": "f64",
        "frame_seq": "u64",
        "env_ids": "v:u4",
        "values": "v:f8",
    },
    StreamStopRequest: {"stream_id": "u64"},
    StreamStopResponse: {"stream_id": "u64", "frames_sent": "u64"},
    SceneInfoRequest: {},
    SceneInfoResponse: {
        "model_name": "str",
        "num_envs": "u32",
        "timestep": "f64",
        "mode": "mode",
        "realtime": "bool",
        "sim_time": "v:f8",
        "nbody": "u32",
        "ngeom": "u32",
        "ncam": "u32",
    },
    Entity: {"id": "u32", "kind": "str", "name": "str", "parent": "str"},
    ListEntitiesRequest: {"kind": "str"},
    ListEntitiesResponse: {"entities": "vt:Entity"},
    GetEntityPoseRequest: {"env_id": "u32", "kind": "str", "name": "str"},
    EntityPose: {"env_id": "u32", "kind": "str", "name": "str", "pos": "vec3", "quat": "quat"},
    SetEntityPoseRequest: {"pose": "t:EntityPose"},
    SetEntityPoseResponse: {"pose": "t:EntityPose"},
    SetSimModeRequest: {"mode": "mode", "realtime": "bool", "steps": "u32"},
    SetSimModeResponse: {"mode": "mode", "realtime": "bool", "sim_time": "f64"},
    CameraInfo: {"id": "i32", "name": "str", "fovy": "f64"},
    ListCamerasRequest: {},
    ListCamerasResponse: {
        "cameras": "vt:CameraInfo",
        "width": "u32",
        "height": "u32",
        "channels": "u32",
    },
    CameraStreamRequest: {
        "camera": "str",
        "env_ids": "v:u4",
        "rate_hz": "f64",
        "max_frames": "u32",
    },
    ImageFrame: {
        "stream_id": "u64",
        "seq": "u64",
        "camera": "str",
        "env_ids": "v:u4",
        "width": "u32",
        "height": "u32",
        "channels": "u32",
        "sim_time": "f64",
        "frame_seq": "u64",
    },
    ViewportInfoRequest: {},
    ViewportInfoResponse: {
        "width": "u32",
        "height": "u32",
        "lookat": "vec3",
        "distance": "f64",
        "azimuth": "f64",
        "elevation": "f64",
    },
    ViewportStreamRequest: {
        "env_id": "u32",
        "rate_hz": "f64",
        "max_frames": "u32",
        "lookat": "vec3",
        "distance": "f64",
        "azimuth": "f64",
        "elevation": "f64",
    },
    DebugShape: {
        "kind": "debug",
        "pos": "vec3",
        "end": "vec3",
        "size": "f64",
        "rgba": "v:f4",
        "text": "str",
    },
    DebugDrawRequest: {"env_ids": "v:u4", "shapes": "vt:DebugShape", "clear": "bool"},
    DebugDrawResponse: {"count": "u32"},
}
_BY_NAME = {cls.__name__: cls for cls in FIELDS}

# Messages that answer several methods: the envelope's method is given by the caller.
SHARED_RESPONSES = (StreamResponse, EntityPose)


def tags(cls: type) -> tuple[int | None, int]:
    """``(Method value or None, Payload union tag)`` of a message class: its Method is its name
    less Request/Response (a pushed frame's is its own name)."""
    method = cls.__name__.removesuffix("Request").removesuffix("Response")
    return getattr(fb.Method, method, None), getattr(fb.Payload, cls.__name__)


#: message class -> (Method value or None, Payload union tag)
TAGS = {cls: tags(cls) for cls in FIELDS if hasattr(fb.Payload, cls.__name__)}
PAYLOAD_CLASSES: dict[int, type] = {tag: cls for cls, (_, tag) in TAGS.items()}

_SCALAR_DEFAULTS = {"u8", "u32", "u64", "i32", "i64", "f64", "bool"}


@functools.cache
def _fb(name: str) -> Any:
    """A function of the generated module (looked up once)."""
    return getattr(fb, name)


@functools.cache
def _dtype(code: str) -> np.dtype[Any]:
    return np.dtype(code).newbyteorder("<")


def build(b: flatbuffers.Builder, message: Any, spec: dict[str, str] | None = None) -> int:
    """Write ``message`` (a dataclass of this module, else one whose field kinds ``spec``
    gives) into ``b``; returns its table offset."""
    cls = type(message)
    spec = FIELDS[cls] if spec is None else spec
    table = cls.__name__
    made: dict[str, int] = {}
    for name, kind in spec.items():  # children first: a table is built in one piece
        value = getattr(message, name)
        if kind == "str":
            made[name] = b.CreateString(value or "")
        elif kind == "bytes" and value:
            made[name] = b.CreateByteVector(value)
        elif kind.startswith("v:"):
            arr = np.ascontiguousarray(value, dtype=_dtype(kind[2:]))
            made[name] = b.CreateNumpyVector(arr.ravel())
        elif kind == "vstr" or kind.startswith("vt:"):
            items = [
                b.CreateString(str(v)) if kind == "vstr" else build(b, v) for v in (value or [])
            ]
            b.StartVector(4, len(items), 4)
            for off in reversed(items):
                b.PrependUOffsetTRelative(off)
            made[name] = b.EndVector()
        elif kind.startswith("t:") and value is not None:
            made[name] = build(b, value)
    _fb(f"{table}Start")(b)
    for name, kind in spec.items():
        add = _fb(f"{table}Add{wire.camel(name)}")
        value = getattr(message, name)
        if name in made:
            add(b, made[name])
        elif kind in _SCALAR_DEFAULTS:
            add(b, bool(value) if kind == "bool" else value)
        elif kind in _ENUMS:
            add(b, wire.enum_value(kind, _ENUMS[kind], value))
        elif kind == "vec3":
            x, y, z = (float(v) for v in value)
            add(b, fb.CreateVec3(b, x, y, z))
        elif kind == "quat":
            w, x, y, z = (float(v) for v in value)
            add(b, fb.CreateQuat(b, w, x, y, z))
    return int(_fb(f"{table}End")(b))


def read(cls: type, table: Any, spec: dict[str, str] | None = None) -> Any:
    """The dataclass ``cls`` read from a flatbuffers table (``table.Bytes``, ``table.Pos``);
    ``spec`` gives the field kinds of a class outside ``FIELDS``."""
    obj = getattr(fb, cls.__name__)()
    obj.Init(table.Bytes, table.Pos)
    return _read_obj(cls, obj, FIELDS[cls] if spec is None else spec)


def _read_obj(cls: type, obj: Any, spec: dict[str, str]) -> Any:
    values: dict[str, Any] = {}
    defaults = {f.name: f for f in fields(cls)}
    for name, kind in spec.items():
        camel = wire.camel(name)
        get = getattr(obj, camel)
        n = getattr(obj, f"{camel}Length", int)()  # a vector's length (0 for other kinds)
        if kind in _SCALAR_DEFAULTS:
            raw = get()
            values[name] = bool(raw) if kind == "bool" else raw
        elif kind in _ENUMS:
            values[name] = wire.enum_name(kind, _ENUMS[kind], get())
        elif kind == "str":
            raw = get()
            values[name] = raw.decode() if raw is not None else ""
        elif kind == "bytes":
            values[name] = bytes(getattr(obj, f"{camel}AsNumpy")().tobytes()) if n else b""
        elif kind.startswith("v:"):
            values[name] = [x.item() for x in getattr(obj, f"{camel}AsNumpy")()] if n else []
        elif kind == "vstr":
            values[name] = [get(j).decode() for j in range(n)]
        elif kind.startswith("vt:"):
            sub = _BY_NAME[kind[3:]]
            values[name] = [_read_obj(sub, get(j), FIELDS[sub]) for j in range(n)]
        elif kind.startswith("t:"):
            child, sub = get(), _BY_NAME[kind[2:]]
            if child is not None:
                values[name] = _read_obj(sub, child, FIELDS[sub])
            else:
                values[name] = None if defaults[name].default is None else sub()
        elif kind == "vec3":
            s = get()
            values[name] = (s.X(), s.Y(), s.Z()) if s is not None else (0.0, 0.0, 0.0)
        elif kind == "quat":
            s = get()
            values[name] = (s.W(), s.X(), s.Y(), s.Z()) if s is not None else (1.0, 0.0, 0.0, 0.0)
    return cls(**values)


def _specs() -> dict[type, wire.TableSpec]:
    """Every message's ``wire.TableSpec`` (children first: a spec names its children's)."""
    by_name: dict[str, wire.TableSpec] = {}

    def spec(cls: type) -> wire.TableSpec:
        if cls.__name__ not in by_name:
            for kind in FIELDS[cls].values():
                if kind.startswith(("t:", "vt:")):
                    spec(_BY_NAME[kind.split(":", 1)[1]])
            by_name[cls.__name__] = wire.TableSpec.of(cls, FIELDS[cls], fb, None, by_name, _ENUMS)
        return by_name[cls.__name__]

    return {cls: spec(cls) for cls in FIELDS}


#: message class -> how it travels through ``wire`` (``commands.encode``/``decode``'s fast path)
SPECS = _specs()
