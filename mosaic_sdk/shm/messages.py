"""Command-channel messages as Python dataclasses (the wire form is in ``commands``).

Fields named ``*_pickle`` hold pickled Python objects: they carry what only a Python peer can
use exactly (spaces with their random state, info dicts with numpy values, exceptions).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class SpaceSpec:
    """A gymnasium space in wire form (see ``mosaic_sdk.shm.spaces`` for the conversion)."""

    kind: str  # "Box", "Discrete", "MultiDiscrete", "MultiBinary"
    shape: tuple[int, ...]
    dtype: str
    low: list[float] = field(default_factory=list)
    high: list[float] = field(default_factory=list)
    n: int = 0
    start: list[int] = field(default_factory=list)
    nvec: list[int] = field(default_factory=list)


@dataclass
class GetSchemaRequest:
    """Ask the engine for the spaces and sizes of its environments."""


@dataclass
class GetSchemaResponse:
    """Spaces (of one env), sizes and image configuration of the transport."""

    num_envs: int
    obs_size: int
    act_size: int
    observation_space: SpaceSpec | None
    action_space: SpaceSpec | None
    image: tuple[int, int, int] | None = None  # (height, width, channels)
    env_id: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    num_workers: int = 1
    spaces_pickle: bytes = b""


@dataclass
class ResetRequest:
    """Reset ``env_ids`` (empty = all) with one optional seed each and shared options."""

    env_ids: list[int] = field(default_factory=list)
    seeds: list[int | None] = field(default_factory=list)
    options: dict[str, Any] | None = None


@dataclass
class ResetResponse:
    """The envs that were reset; their observations are already in the obs region."""

    env_ids: list[int]
    infos: list[dict[str, Any]] = field(default_factory=list)
    payload_pickle: bytes = b""


@dataclass
class CloseRequest:
    """Ask the engine to shut down (it answers, then closes the transport)."""


@dataclass
class CloseResponse:
    """The engine is closing."""


@dataclass
class PingRequest:
    """Liveness check; echoed with the engine's current frame number."""

    nonce: int = 0


@dataclass
class PingResponse:
    """Answer to ``PingRequest``."""

    nonce: int
    frame_seq: int


@dataclass
class CallRequest:
    """``env.get_wrapper_attr(name)`` on every env, called with the arguments when callable."""

    name: str
    args_pickle: bytes = b""


@dataclass
class CallResponse:
    """The results of a ``CallRequest``, one per env, pickled."""

    results_pickle: bytes = b""


@dataclass
class SetAttrRequest:
    """``env.set_wrapper_attr(name, value)`` on every env, with one pickled value per env."""

    name: str
    values_pickle: bytes = b""


@dataclass
class SetAttrResponse:
    """The attribute is set on every env."""


Message = (
    GetSchemaRequest
    | GetSchemaResponse
    | ResetRequest
    | ResetResponse
    | CloseRequest
    | CloseResponse
    | PingRequest
    | PingResponse
    | CallRequest
    | CallResponse
    | SetAttrRequest
    | SetAttrResponse
)
