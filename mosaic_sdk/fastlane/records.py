"""FastLane value types: configuration, metrics, frames, and the errors the ring raises."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mosaic_sdk.fastlane.layout import DEFAULT_CAPACITY, PIXEL_FORMATS

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


class FastLaneError(RuntimeError):
    """A FastLane segment could not be created, attached or used."""


class FastLaneBusyError(FastLaneError):
    """Another live writer owns the segment (FastLane has exactly one producer per run)."""


class FastLaneUnavailableError(FastLaneError):
    """No usable segment for the run: none yet, still initialising, or its writer has gone."""


class FastLaneCorruptError(FastLaneError):
    """The segment contradicts itself: its header, extension block or a slot's lengths do not
    fit the frame shape or the segment's size. The message names the field. The reader never
    reads outside a slot nor returns a frame of the wrong size; it raises this instead."""


#: The largest height or width of a FastLane frame.
MAX_FRAME_SIDE = 1 << 15


@dataclass(frozen=True)
class FastLaneConfig:
    """Shape of the frames a ring carries.

    ``pixel_format`` follows ``channels`` when left at ``"RGB"``: 1 channel becomes ``"GRAY"``
    and 4 channels ``"RGBA"``. ``capacity`` is the number of slots (the reader only ever wants
    the newest frame; 4 slots give it three frames of time before its slot is reused).
    ``metadata_size`` is the largest metadata blob ``publish`` accepts, in bytes.
    """

    width: int
    height: int
    channels: int = 3
    pixel_format: str = "RGB"
    capacity: int = DEFAULT_CAPACITY
    metadata_size: int = 0

    def __post_init__(self) -> None:
        for name in ("width", "height"):
            value = getattr(self, name)
            if not isinstance(value, int) or not 0 < value <= MAX_FRAME_SIDE:
                raise ValueError(
                    f"FastLaneConfig.{name} must be an int in 1..{MAX_FRAME_SIDE}, got {value!r}"
                )
        if self.channels not in (1, 3, 4):
            raise ValueError(f"FastLaneConfig.channels must be 1, 3 or 4, got {self.channels!r}")
        fmt = str(self.pixel_format).upper()
        if fmt == "RGB" and self.channels != 3:
            fmt = {1: "GRAY", 4: "RGBA"}[self.channels]
        if fmt == "L":
            fmt = "GRAY"
        if PIXEL_FORMATS.get(fmt) != self.channels:
            raise ValueError(
                f"FastLaneConfig.pixel_format {self.pixel_format!r} does not match "
                f"channels={self.channels}; use one of GRAY (1), RGB (3), RGBA (4)"
            )
        object.__setattr__(self, "pixel_format", fmt)
        if not isinstance(self.capacity, int) or not 2 <= self.capacity <= 1024:
            raise ValueError(
                f"FastLaneConfig.capacity must be an int in 2..1024 (default {DEFAULT_CAPACITY}), "
                f"got {self.capacity!r}"
            )
        if not isinstance(self.metadata_size, int) or not 0 <= self.metadata_size < (1 << 24):
            raise ValueError(
                f"FastLaneConfig.metadata_size must be 0..16 MiB, got {self.metadata_size!r}"
            )
        if self.width * self.height * self.channels + self.metadata_size >= (1 << 32) - 4096:
            raise ValueError("FastLaneConfig: a frame plus metadata must stay below 4 GiB")

    @property
    def frame_bytes(self) -> int:
        """Bytes of one frame: width * height * channels."""
        return self.width * self.height * self.channels

    @property
    def shape(self) -> tuple[int, int, int]:
        """The numpy shape of a frame, ``(height, width, channels)``."""
        return (self.height, self.width, self.channels)

    @classmethod
    def for_array(cls, frame: Any, **kwargs: Any) -> FastLaneConfig:
        """A config for frames shaped like ``frame`` (an HxW or HxWxC uint8 array)."""
        shape = tuple(frame.shape)
        if len(shape) == 2:
            shape = (*shape, 1)
        if len(shape) != 3:
            raise ValueError(f"a FastLane frame must be HxW or HxWxC, got shape {shape}")
        return cls(width=int(shape[1]), height=int(shape[0]), channels=int(shape[2]), **kwargs)


@dataclass(frozen=True, slots=True)
class FastLaneMetrics:
    """The HUD scalars published with a frame."""

    last_reward: float = 0.0
    rolling_return: float = 0.0
    step_rate_hz: float = 0.0

    def hud_text(self) -> str:
        """The HUD as the platform's viewer prints it (three lines)."""
        return (
            f"reward: {self.last_reward:.2f}\nreturn: {self.rolling_return:.2f}\n"
            f"step/sec: {self.step_rate_hz:.1f}"
        )


@dataclass(frozen=True, slots=True)
class FastLaneFrame:
    """One frame read from a ring: its bytes and the metrics published with those bytes.

    ``data`` is ``bytes`` (a private copy) or, from ``read_latest_into``, the caller's array.
    ``seq`` is the frame's number within its ``generation`` (what ``publish`` returned).
    Slotted: the native reader fills the slots in directly (``SharedWords.fastlane_cursor``).
    """

    data: Any
    width: int
    height: int
    channels: int
    metrics: FastLaneMetrics
    metadata: bytes | None = None
    seq: int = 0
    generation: int = 0

    def array(self) -> np.ndarray:
        """The frame as a read-only ``(height, width, channels)`` uint8 array (no copy)."""
        import numpy as np  # numpy only for a frame read as an array

        arr = np.frombuffer(
            self.data, dtype=np.uint8, count=self.width * self.height * self.channels
        )
        return arr.reshape(self.height, self.width, self.channels)


_new = object.__new__


def _slot_setters(cls: type, *names: str) -> tuple[Any, ...]:
    """The ``__set__`` of each named slot of ``cls`` (they write past a frozen ``__setattr__``)."""
    return tuple(vars(cls)[name].__set__ for name in names)


(
    _set_data,
    _set_width,
    _set_height,
    _set_channels,
    _set_metrics,
    _set_metadata,
    _set_seq,
    _set_generation,
) = _slot_setters(
    FastLaneFrame,
    "data",
    "width",
    "height",
    "channels",
    "metrics",
    "metadata",
    "seq",
    "generation",
)
_set_reward, _set_return, _set_rate = _slot_setters(
    FastLaneMetrics, "last_reward", "rolling_return", "step_rate_hz"
)


def make_metrics(last_reward: float, rolling_return: float, step_rate_hz: float) -> FastLaneMetrics:
    """Build a FastLaneMetrics through its slots, without the frozen ``__init__`` (the
    Python reader's hot path; the native one fills the same slots in C)."""
    obj = _new(FastLaneMetrics)
    _set_reward(obj, last_reward)
    _set_return(obj, rolling_return)
    _set_rate(obj, step_rate_hz)
    return obj


def make_frame(
    data: Any,
    width: int,
    height: int,
    channels: int,
    metrics: FastLaneMetrics,
    metadata: bytes | None,
    seq: int,
    generation: int,
) -> FastLaneFrame:
    """Build a FastLaneFrame through its slots, without the frozen ``__init__``."""
    obj = _new(FastLaneFrame)
    _set_data(obj, data)
    _set_width(obj, width)
    _set_height(obj, height)
    _set_channels(obj, channels)
    _set_metrics(obj, metrics)
    _set_metadata(obj, metadata)
    _set_seq(obj, seq)
    _set_generation(obj, generation)
    return obj
