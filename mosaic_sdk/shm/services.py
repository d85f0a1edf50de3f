"""The engine services' command messages (Agent, MuJoCo, Telemetry, Scene, Camera, Viewport,
Debug): Python dataclasses and their FlatBuffers form (``schema/shm_commands.fbs``).

Every dataclass here has a table of the same name in the schema. A field's annotation says how
it travels (``U32``, ``Strs``, ...: scalar, string, vector, struct, nested table; collected in
``FIELDS``); ``build`` and ``read`` walk that description with flatc's generated functions, so a
new message needs its table in the schema and its dataclass. ``commands.encode``/``decode``
call them for the payloads listed in ``TAGS``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Annotated, Any, get_type_hints

import flatbuffers
import numpy as np

from mosaic_sdk.shm import wire
from mosaic_sdk.shm.generated import shm_commands_generated as fb

# A field's wire kind, in its annotation: "u8" "u32" "u64" "i32" "i64" "f64" "bool" scalars;
# "str"; "bytes" ([ubyte], absent when empty); "v:<dtype>" numeric vector; "vstr" strings;
# "vec3" / "quat" structs; "mode" / "debug" enums (names <-> values); "t:<Class>" a nested
# table; "vt:<Class>" a vector of tables.
U32 = Annotated[int, "u32"]
U64 = Annotated[int, "u64"]
F64 = Annotated[float, "f64"]
Bool = Annotated[bool, "bool"]
Str = Annotated[str, "str"]
Mode = Annotated[str, "mode"]
U32s = Annotated[list[int], "v:u4"]
F64s = Annotated[list[float], "v:f8"]
Strs = Annotated[list[str], "vstr"]
Vec3 = Annotated[tuple[float, float, float], "vec3"]
Quat = Annotated[tuple[float, float, float, float], "quat"]

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

    num_envs: U32 = 0
    model_name: Str = ""
    obs_names: Strs = field(default_factory=list)
    act_names: Strs = field(default_factory=list)
    act_low: F64s = field(default_factory=list)
    act_high: F64s = field(default_factory=list)
    timestep: F64 = 0.0
    frame_skip: U32 = 1
    max_episode_steps: U32 = 0


@dataclass
class SimulationContract:
    """Domain randomisation applied to the envs of one reset (see the schema for the fields).

    Scales are drawn per env in ``[low, high]`` and apply to the model's own values (they never
    compound); ``restore_defaults`` puts the envs back on the model's parameters instead.
    """

    mass_scale_low: F64 = 1.0
    mass_scale_high: F64 = 1.0
    friction_scale_low: F64 = 1.0
    friction_scale_high: F64 = 1.0
    gain_scale_low: F64 = 1.0
    gain_scale_high: F64 = 1.0
    gravity: F64s = field(default_factory=list)
    qpos_noise: F64 = 0.0
    qvel_noise: F64 = 0.0
    seed: Annotated[int, "i64"] = -1
    restore_defaults: Bool = False


@dataclass
class AgentResetRequest:
    """Reset ``env_ids`` (empty = all), randomised by ``contract`` when given."""

    env_ids: U32s = field(default_factory=list)
    contract: Annotated[SimulationContract | None, "t:SimulationContract"] = None


@dataclass
class AgentResetResponse:
    """The reset envs, with the total mass and gravity each now simulates."""

    env_ids: U32s = field(default_factory=list)
    body_mass: F64s = field(default_factory=list)
    gravity_z: F64s = field(default_factory=list)


# -- MuJoCo -----------------------------------------------------------------------------------
@dataclass
class JointStateRequest:
    """qpos/qvel of the joints ``names`` (empty = all) of env ``env_id``."""

    env_id: U32 = 0
    names: Strs = field(default_factory=list)


@dataclass
class JointStateResponse:
    """Joint positions and velocities, flattened joint after joint."""

    names: Strs = field(default_factory=list)
    qpos_dims: U32s = field(default_factory=list)
    qvel_dims: U32s = field(default_factory=list)
    qpos: F64s = field(default_factory=list)
    qvel: F64s = field(default_factory=list)
    time: F64 = 0.0

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

    env_ids: U32s = field(default_factory=list)
    ctrl: F64s = field(default_factory=list)
    steps: U32 = 0


@dataclass
class SendControlResponse:
    """The controlled envs and their simulated time afterwards."""

    env_ids: U32s = field(default_factory=list)
    time: F64s = field(default_factory=list)


@dataclass
class MujocoInfoRequest:
    """Ask for the model's sizes and names."""


@dataclass
class MujocoInfoResponse:
    """The MuJoCo model: version, sizes, names."""

    version: Str = ""
    nq: U32 = 0
    nv: U32 = 0
    nu: U32 = 0
    nbody: U32 = 0
    njnt: U32 = 0
    ngeom: U32 = 0
    ncam: U32 = 0
    timestep: F64 = 0.0
    joint_names: Strs = field(default_factory=list)
    actuator_names: Strs = field(default_factory=list)
    body_names: Strs = field(default_factory=list)
    camera_names: Strs = field(default_factory=list)


# -- Telemetry --------------------------------------------------------------------------------
@dataclass
class TelemetrySchemaRequest:
    """Ask which per-step quantities can be streamed."""


@dataclass
class TelemetrySchemaResponse:
    """Quantity names, values per env of each, one line of description each."""

    names: Strs = field(default_factory=list)
    sizes: U32s = field(default_factory=list)
    descriptions: Strs = field(default_factory=list)


@dataclass
class TelemetryStreamRequest:
    """Start a telemetry stream (``rate_hz`` in simulated time; 0 = every physics step)."""

    env_ids: U32s = field(default_factory=list)
    names: Strs = field(default_factory=list)
    rate_hz: F64 = 0.0
    max_frames: U32 = 0


@dataclass
class StreamResponse:
    """A stream started: its id (the correlation id of its frames) and what a frame holds."""

    stream_id: U64 = 0
    names: Strs = field(default_factory=list)
    sizes: U32s = field(default_factory=list)


@dataclass
class TelemetryFrame:
    """One telemetry frame, pushed by the engine."""

    stream_id: U64 = 0
    seq: U64 = 0
    sim_time: F64 = 0.0
    frame_seq: U64 = 0
    env_ids: U32s = field(default_factory=list)
    values: F64s = field(default_factory=list)


@dataclass
class StreamStopRequest:
    """Stop stream ``stream_id``."""

    stream_id: U64 = 0


@dataclass
class StreamStopResponse:
    """The stream is stopped after ``frames_sent`` frames."""

    stream_id: U64 = 0
    frames_sent: U64 = 0


# -- Scene ------------------------------------------------------------------------------------
@dataclass
class SceneInfoRequest:
    """Ask for the scene's description and simulation mode."""


@dataclass
class SceneInfoResponse:
    """The scene: model, env count, mode, per-env simulated time, sizes."""

    model_name: Str = ""
    num_envs: U32 = 0
    timestep: F64 = 0.0
    mode: Mode = "lockstep"
    realtime: Bool = False
    sim_time: F64s = field(default_factory=list)
    nbody: U32 = 0
    ngeom: U32 = 0
    ncam: U32 = 0


@dataclass
class Entity:
    """A body or geom of the scene."""

    id: U32 = 0
    kind: Str = ""
    name: Str = ""
    parent: Str = ""


@dataclass
class ListEntitiesRequest:
    """List the bodies and/or geoms (``kind`` "body", "geom" or "" for both)."""

    kind: Str = ""


@dataclass
class ListEntitiesResponse:
    """The scene's entities."""

    entities: Annotated[list[Entity], "vt:Entity"] = field(default_factory=list)


@dataclass
class GetEntityPoseRequest:
    """World pose of entity ``name`` (a body or geom) in env ``env_id``."""

    env_id: U32 = 0
    kind: Str = "body"
    name: Str = ""


@dataclass
class EntityPose:
    """An entity's world position and orientation (quaternion w, x, y, z)."""

    env_id: U32 = 0
    kind: Str = "body"
    name: Str = ""
    pos: Vec3 = (0.0, 0.0, 0.0)
    quat: Quat = (1.0, 0.0, 0.0, 0.0)


@dataclass
class SetEntityPoseRequest:
    """Move an entity (a free or mocap body) to ``pose``."""

    pose: Annotated[EntityPose, "t:EntityPose"] = field(default_factory=EntityPose)


@dataclass
class SetEntityPoseResponse:
    """The entity's pose after the move."""

    pose: Annotated[EntityPose, "t:EntityPose"] = field(default_factory=EntityPose)


@dataclass
class SetSimModeRequest:
    """Switch the simulation mode (one of ``SIM_MODES``)."""

    mode: Mode = "lockstep"
    realtime: Bool = False
    steps: U32 = 1


@dataclass
class SetSimModeResponse:
    """The mode now in force."""

    mode: Mode = "lockstep"
    realtime: Bool = False
    sim_time: F64 = 0.0


# -- Camera, viewport -------------------------------------------------------------------------
@dataclass
class CameraInfo:
    """A camera of the model."""

    id: Annotated[int, "i32"] = 0
    name: Str = ""
    fovy: F64 = 0.0


@dataclass
class ListCamerasRequest:
    """Ask for the model's cameras."""


@dataclass
class ListCamerasResponse:
    """The cameras and the image region's frame size."""

    cameras: Annotated[list[CameraInfo], "vt:CameraInfo"] = field(default_factory=list)
    width: U32 = 0
    height: U32 = 0
    channels: U32 = 0


@dataclass
class CameraStreamRequest:
    """Stream frames of ``camera`` for ``env_ids`` into the image region at ``rate_hz``."""

    camera: Str = ""
    env_ids: U32s = field(default_factory=list)
    rate_hz: F64 = 30.0
    max_frames: U32 = 0


@dataclass
class ImageFrame:
    """Frame ``seq`` of a stream: the pixels of ``env_ids`` are in the image region."""

    stream_id: U64 = 0
    seq: U64 = 0
    camera: Str = ""
    env_ids: U32s = field(default_factory=list)
    width: U32 = 0
    height: U32 = 0
    channels: U32 = 0
    sim_time: F64 = 0.0
    frame_seq: U64 = 0


@dataclass
class ViewportInfoRequest:
    """Ask for the viewport (the free camera) settings."""


@dataclass
class ViewportInfoResponse:
    """The viewport's size and free-camera placement."""

    width: U32 = 0
    height: U32 = 0
    lookat: Vec3 = (0.0, 0.0, 0.0)
    distance: F64 = 0.0
    azimuth: F64 = 0.0
    elevation: F64 = 0.0


@dataclass
class ViewportStreamRequest:
    """Stream the free camera of env ``env_id``, placed as given (distance 0: keep)."""

    env_id: U32 = 0
    rate_hz: F64 = 30.0
    max_frames: U32 = 0
    lookat: Vec3 = (0.0, 0.0, 0.0)
    distance: F64 = 0.0
    azimuth: F64 = 0.0
    elevation: F64 = 0.0


# -- Debug ------------------------------------------------------------------------------------
@dataclass
class DebugShape:
    """A line (pos -> end, width ``size``), sphere (radius ``size``) or text at ``pos``."""

    kind: Annotated[str, "debug"] = "line"
    pos: Vec3 = (0.0, 0.0, 0.0)
    end: Vec3 = (0.0, 0.0, 0.0)
    size: F64 = 0.01
    rgba: Annotated[list[float], "v:f4"] = field(default_factory=lambda: [1.0, 0.0, 0.0, 1.0])
    text: Str = ""


@dataclass
class DebugDrawRequest:
    """Draw ``shapes`` into the rendered frames of ``env_ids`` (empty = all)."""

    env_ids: U32s = field(default_factory=list)
    shapes: Annotated[list[DebugShape], "vt:DebugShape"] = field(default_factory=list)
    clear: Bool = False


@dataclass
class DebugDrawResponse:
    """How many shapes the envs now draw (per env, the largest)."""

    count: U32 = 0


ServiceMessage = Any


def _kinds(cls: type) -> dict[str, str]:
    """The wire kind of each field of ``cls``: its annotation's metadata."""
    hints = get_type_hints(cls, include_extras=True)
    return {f.name: hints[f.name].__metadata__[0] for f in fields(cls)}


#: message class -> its fields' kinds (every dataclass of this module, in definition order)
FIELDS: dict[type, dict[str, str]] = {
    cls: _kinds(cls)
    for cls in list(globals().values())
    if isinstance(cls, type) and is_dataclass(cls) and cls.__module__ == __name__
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
