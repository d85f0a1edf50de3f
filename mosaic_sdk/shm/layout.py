"""The transport segment's layout: one definition, used by both sides and by ``schema/``.

A segment is a one-page header followed by 64-byte aligned regions::

    [header 4096 B][obs][actions][rewards f64][terminated u8][truncated u8]
    [reset flags u8][ring engine->client][ring client->engine][side areas (optional)]
    [image u8 (optional)]

``python -m mosaic_sdk.shm.layout [lrbc]`` prints ``schema/shm_layout.json`` (or the
LuckyEngine header's ``schema/lrbc_layout.json``); a test checks that they agree.
"""

from __future__ import annotations

import json
import struct
import sys
from dataclasses import dataclass
from typing import Any

MAGIC = b"MSHM"
VERSION = 2
HEADER_SIZE = 4096
ALIGN = 64
DEFAULT_RING_SIZE = 512 * 1024
RING_HEADER_SIZE = 128  # write_pos u64 on one line, read_pos u64 on the next
MAX_WORKERS = 16
GPU_HANDLE_SIZE = 64

MODE_TRAINING = 0
MODE_INFERENCE = 1

STATE_INITIALISING = 0
STATE_READY = 1
STATE_CLOSED = 2

# (name, offset, struct format, description). Offsets are fixed: new fields go into free space.
HEADER_FIELDS: tuple[tuple[str, int, str, str], ...] = (
    ("magic", 0, "4s", 'b"MSHM"'),
    ("version", 4, "I", "layout version, 2"),
    ("header_size", 8, "I", "bytes before the first region (4096)"),
    ("mode", 12, "I", "0 = training, 1 = inference"),
    ("engine_pid", 16, "I", "pid of the process that created the segment"),
    ("client_pid", 20, "I", "pid of the attached client, 0 when none (set with compare-and-swap)"),
    ("num_envs", 24, "I", "number of environments"),
    ("obs_size", 28, "I", "4-byte observation words per environment"),
    ("act_size", 32, "I", "4-byte action words per environment"),
    ("cmd_ring_size", 36, "I", "data bytes of each command ring (multiple of 8)"),
    ("image_width", 40, "I", "image region width in pixels, 0 when absent"),
    ("image_height", 44, "I", "image region height in pixels, 0 when absent"),
    ("image_channels", 48, "I", "image region channels, 0 when absent"),
    ("state", 52, "I", "0 = initialising, 1 = ready, 2 = closed by the engine"),
    ("total_size", 56, "Q", "size of the whole segment in bytes"),
    ("obs_offset", 64, "Q", "byte offset of obs (num_envs * obs_size 4-byte words)"),
    ("act_offset", 72, "Q", "byte offset of actions (num_envs * act_size 4-byte words)"),
    ("rewards_offset", 80, "Q", "byte offset of rewards float64[num_envs]"),
    ("terminated_offset", 88, "Q", "byte offset of terminated u8[num_envs]"),
    ("truncated_offset", 96, "Q", "byte offset of truncated u8[num_envs]"),
    ("resets_offset", 104, "Q", "byte offset of reset flags u8[num_envs]"),
    ("cmd_e2c_offset", 112, "Q", "byte offset of the engine->client ring"),
    ("cmd_c2e_offset", 120, "Q", "byte offset of the client->engine ring"),
    ("image_offset", 128, "Q", "byte offset of image u8[num_envs*H*W*C], 0 when absent"),
    ("num_workers", 136, "I", "engine processes sharing the segment (worker slots in use)"),
    ("side_offset", 144, "Q", "byte offset of the side areas, 0 when absent"),
    ("side_size", 152, "Q", "bytes of each side area (2 per worker: client->worker, back)"),
    ("gpu_available", 192, "B", "1 when GPU buffers are exported"),
    ("gpu_obs_mode", 193, "B", "0 = CPU, 1 = CUDA IPC, 2 = Vulkan external memory"),
    ("gpu_device_id", 196, "I", "CUDA device ordinal"),
    ("gpu_obs_handle", 200, "64s", "cudaIpcMemHandle_t or external-memory handle"),
    ("frame_seq", 320, "Q", "engine: number of the last published frame (release store)"),
    ("frame_bell", 328, "I", "futex word of the frame line, bumped on every frame and reply"),
    ("frame_waiters", 336, "Q", "client threads asleep on frame_bell"),
    ("action_seq", 384, "Q", "client: number of the last published action batch"),
    ("action_bell", 392, "I", "futex word of the action line, bumped on actions and commands"),
    ("action_waiters", 400, "Q", "engine processes asleep on action_bell"),
    ("worker_slots", 512, f"{MAX_WORKERS * ALIGN}s", "16 worker slots of 64 bytes, see below"),
)

LAYOUT_MSHM = "mshm"
LAYOUT_LRBC = "lrbc"
LAYOUTS = (LAYOUT_MSHM, LAYOUT_LRBC)

LRBC_MAGIC = 0x4C524243  # "LRBC"; stored as a little-endian u32: bytes 43 42 52 4C
LRBC_VERSION = 1
LRBC_RING_HEADER_SIZE = 8  # write_pos u32, read_pos u32, then the data
LRBC_RING_WRITE_POS = 0
LRBC_RING_READ_POS = 4
LRBC_SEED_END = 204  # the design's fields end here; mosaic's optional extension starts at 256
LRBC_EXTENSION = 256

# The LuckyEngine design's header: its fields in its order, each at C's natural alignment
# (``struct`` with no packing), then mosaic's optional extension in the design's reserved bytes
# (all zero when a design-only engine wrote the segment; see schema/lrbc_layout.md).
LRBC_HEADER_FIELDS: tuple[tuple[str, int, str, str], ...] = (
    ("magic", 0, "I", "0x4C524243 as a little-endian u32 (bytes 43 42 52 4C), written last"),
    ("version", 4, "I", "layout version, 1"),
    ("server_pid", 8, "I", "pid of the engine process (it created the segment)"),
    ("client_pid", 12, "I", "pid of the attached client, 0 when none (set on attach)"),
    ("mode", 16, "B", "0 = training, 1 = inference (3 padding bytes follow)"),
    ("num_envs", 20, "I", "number of environments"),
    ("obs_size", 24, "I", "float32 observation values per environment"),
    ("act_size", 28, "I", "float32 action values per environment"),
    ("frame_seq", 32, "Q", "engine: number of the last published frame (release store)"),
    ("action_seq", 40, "Q", "client: number of the last published action batch"),
    ("obs_offset", 48, "Q", "byte offset of obs float32[num_envs*obs_size]"),
    ("act_offset", 56, "Q", "byte offset of actions float32[num_envs*act_size]"),
    ("rewards_offset", 64, "Q", "byte offset of rewards float32[num_envs]"),
    ("dones_offset", 72, "Q", "byte offset of dones u8[num_envs]; truncateds u8[num_envs] follow"),
    ("resets_offset", 80, "Q", "byte offset of reset flags u8[num_envs]"),
    ("cmd_s2c_offset", 88, "Q", "byte offset of the server->client ring"),
    ("cmd_c2s_offset", 96, "Q", "byte offset of the client->server ring"),
    ("cmd_ring_size", 104, "I", "data bytes of each ring, a power of two (4 padding bytes follow)"),
    ("image_offset", 112, "Q", "byte offset of image u8[num_envs*H*W*C], 0 when absent"),
    ("image_width", 120, "I", "image width in pixels, 0 when absent"),
    ("image_height", 124, "I", "image height in pixels, 0 when absent"),
    ("image_channels", 128, "I", "image channels, 0 when absent"),
    ("gpu_available", 132, "B", "1 when GPU buffers are exported"),
    ("gpu_obs_mode", 133, "B", "0 = CPU, 1 = CUDA IPC, 2 = Vulkan external memory"),
    ("gpu_obs_handle", 134, "64s", "cudaIpcMemHandle_t (2 padding bytes follow)"),
    ("gpu_device_id", 200, "I", "CUDA device ordinal"),
    # mosaic extension (optional; zero when absent)
    ("state", 256, "I", "ext: 0 = not used, 1 = ready, 2 = closed by the engine"),
    ("num_workers", 260, "I", "ext: engine processes sharing the segment, 0 = 1"),
    ("total_size", 264, "Q", "ext: size of the whole segment in bytes, 0 = unknown"),
    ("side_offset", 272, "Q", "ext: byte offset of the side areas, 0 when absent"),
    ("side_size", 280, "Q", "ext: bytes of each side area"),
    ("frame_bell", 328, "I", "ext: futex word bumped after every frame and reply"),
    ("frame_waiters", 336, "Q", "ext: client threads asleep on frame_bell"),
    ("action_bell", 392, "I", "ext: futex word bumped after actions and requests"),
    ("action_waiters", 400, "Q", "ext: engine processes asleep on action_bell"),
    ("worker_slots", 512, f"{MAX_WORKERS * ALIGN}s", "ext: 16 worker slots, as in MSHM"),
)
# The design's names for the fields both layouts have under another name.
LRBC_ALIASES = {
    "engine_pid": "server_pid",
    "terminated_offset": "dones_offset",
    "cmd_e2c_offset": "cmd_s2c_offset",
    "cmd_c2e_offset": "cmd_c2s_offset",
}

# Layout of one worker slot (worker i at worker_slots + 64*i).
WORKER_FIELDS: tuple[tuple[str, int, str, str], ...] = (
    ("done_seq", 0, "Q", "last action batch this worker has fully applied"),
    ("done_bell", 8, "I", "futex word bumped with done_seq"),
    ("pid", 12, "I", "worker pid, 0 when the slot is free"),
    ("done_waiters", 16, "Q", "processes asleep on done_bell"),
    ("env_begin", 24, "I", "first environment index stepped by this worker"),
    ("env_end", 28, "I", "one past the last environment index"),
    (
        "kick",
        32,
        "I",
        "bumped by the owner (with a ring of the action bell) to wake the worker "
        "for out-of-band work such as a forwarded reset",
    ),
)

OFF: dict[str, int] = {name: off for name, off, _, _ in HEADER_FIELDS}
WORKER_OFF: dict[str, int] = {name: off for name, off, _, _ in WORKER_FIELDS}
RING_WRITE_POS = 0
RING_READ_POS = 64
LRBC_OFF: dict[str, int] = {name: off for name, off, _, _ in LRBC_HEADER_FIELDS}
LRBC_OFF.update({ours: LRBC_OFF[theirs] for ours, theirs in LRBC_ALIASES.items()})

_STATIC = (
    "magic version header_size mode engine_pid num_envs obs_size act_size cmd_ring_size "
    "image_width image_height image_channels total_size obs_offset act_offset rewards_offset "
    "terminated_offset truncated_offset resets_offset cmd_e2c_offset cmd_c2e_offset "
    "image_offset num_workers side_offset side_size"
).split()
SIDE_DATA = 64  # data of a side area starts here; its first u64 is the byte count


def align_up(value: int, alignment: int = ALIGN) -> int:
    """Round ``value`` up to a multiple of ``alignment``."""
    return (value + alignment - 1) // alignment * alignment


def worker_offset(index: int, field: str) -> int:
    """Absolute header offset of ``field`` in worker slot ``index``."""
    if not 0 <= index < MAX_WORKERS:
        raise ValueError(f"worker index {index} outside 0..{MAX_WORKERS - 1}")
    return OFF["worker_slots"] + ALIGN * index + WORKER_OFF[field]


class LayoutError(ValueError):
    """A segment header that does not describe a valid version-1 transport."""


@dataclass(frozen=True)
class Layout:
    """Sizes and byte offsets of every region of one transport segment, and the static part
    of its header (little-endian, ``HEADER_FIELDS``; ``kind`` is ``"mshm"`` or ``"lrbc"``,
    the LuckyEngine header, ``LRBC_HEADER_FIELDS``, told apart by the magic).

    The obs and actions regions are sized in 4-byte words per env; ``ShmVectorEnv`` packs
    each leaf of a space into them in its own dtype. The optional side areas (two per
    worker, ``side_size`` bytes each) carry what fits no fixed row (pickled observations,
    step infos, errors): a u64 byte count (0 = empty), the data 64 bytes in. Sequence words
    sit on their own 64-byte lines (protocol: ``mosaic_sdk.shm.sync``)."""

    num_envs: int
    obs_size: int
    act_size: int
    cmd_ring_size: int = DEFAULT_RING_SIZE
    image_width: int = 0
    image_height: int = 0
    image_channels: int = 0
    mode: int = MODE_TRAINING
    num_workers: int = 1
    obs_offset: int = 0
    act_offset: int = 0
    rewards_offset: int = 0
    terminated_offset: int = 0
    truncated_offset: int = 0
    resets_offset: int = 0
    cmd_e2c_offset: int = 0
    cmd_c2e_offset: int = 0
    image_offset: int = 0
    side_offset: int = 0
    side_size: int = 0
    total_size: int = 0
    kind: str = LAYOUT_MSHM

    @property
    def off(self) -> dict[str, int]:
        """Header offsets of this layout's fields (``OFF`` or ``LRBC_OFF``)."""
        return LRBC_OFF if self.kind == LAYOUT_LRBC else OFF

    @property
    def fields(self) -> tuple[tuple[str, int, str, str], ...]:
        """The header's field table."""
        return LRBC_HEADER_FIELDS if self.kind == LAYOUT_LRBC else HEADER_FIELDS

    @property
    def rewards_dtype(self) -> str:
        """numpy dtype of the rewards region: float64 (MSHM) or float32 (LRBC)."""
        return "<f4" if self.kind == LAYOUT_LRBC else "<f8"

    @property
    def ring_header_size(self) -> int:
        """Bytes before a ring's data: 128 (two u64 on own lines) or 8 (two u32)."""
        return LRBC_RING_HEADER_SIZE if self.kind == LAYOUT_LRBC else RING_HEADER_SIZE

    @classmethod
    def compute(
        cls,
        num_envs: int,
        obs_size: int,
        act_size: int,
        *,
        cmd_ring_size: int = DEFAULT_RING_SIZE,
        image_shape: tuple[int, int, int] | None = None,
        mode: int = MODE_TRAINING,
        num_workers: int = 1,
        side_size: int = 0,
        kind: str = LAYOUT_MSHM,
    ) -> Layout:
        """Place every region for the given sizes; ``image_shape`` is ``(H, W, C)``.

        ``kind`` is the header layout, ``"mshm"`` (ours) or ``"lrbc"`` (the design's).
        """
        if kind not in LAYOUTS:
            raise LayoutError(f"layout must be one of {', '.join(LAYOUTS)}; got {kind!r}")
        lrbc = kind == LAYOUT_LRBC
        if lrbc and cmd_ring_size & (cmd_ring_size - 1):
            raise LayoutError(
                f"cmd_ring_size must be a power of two in the lrbc layout (its u32 ring positions "
                f"wrap at 2**32), got {cmd_ring_size}"
            )
        for label, value in (("num_envs", num_envs), ("obs_size", obs_size)):
            if not isinstance(value, int) or value < 1:
                raise LayoutError(f"{label} must be a positive integer, got {value!r}")
        if not isinstance(act_size, int) or act_size < 0:
            raise LayoutError(f"act_size must be a non-negative integer, got {act_size!r}")
        if cmd_ring_size < 64 or cmd_ring_size % 8:
            raise LayoutError(
                f"cmd_ring_size must be a multiple of 8 and at least 64, got {cmd_ring_size}"
            )
        if mode not in (MODE_TRAINING, MODE_INFERENCE):
            raise LayoutError(f"mode must be 0 (training) or 1 (inference), got {mode}")
        if not 1 <= num_workers <= MAX_WORKERS:
            raise LayoutError(f"num_workers must be in 1..{MAX_WORKERS}, got {num_workers}")
        if side_size and (side_size < 2 * SIDE_DATA or side_size % ALIGN):
            raise LayoutError(
                f"side_size must be 0 or a multiple of {ALIGN} of at least {2 * SIDE_DATA}, "
                f"got {side_size}"
            )
        height, width, channels = image_shape if image_shape else (0, 0, 0)
        if image_shape and min(image_shape) < 1:
            raise LayoutError(f"image_shape must be positive (H, W, C), got {image_shape}")
        pos = HEADER_SIZE
        offsets: dict[str, int] = {}
        ring_bytes = (LRBC_RING_HEADER_SIZE if lrbc else RING_HEADER_SIZE) + cmd_ring_size
        for name, nbytes in (
            ("obs_offset", 4 * num_envs * obs_size),
            ("act_offset", 4 * num_envs * act_size),
            ("rewards_offset", (4 if lrbc else 8) * num_envs),
            ("terminated_offset", 2 * num_envs if lrbc else num_envs),
            ("truncated_offset", 0 if lrbc else num_envs),
            ("resets_offset", num_envs),
            ("cmd_e2c_offset", ring_bytes),
            ("cmd_c2e_offset", ring_bytes),
        ):
            offsets[name] = pos
            pos = align_up(pos + nbytes)
        if lrbc:  # the design has no truncateds offset: they follow the dones
            offsets["truncated_offset"] = offsets["terminated_offset"] + num_envs
        side_offset = 0
        if side_size:
            side_offset = align_up(pos, 4096)
            pos = side_offset + 2 * num_workers * side_size
        image_offset = 0
        if image_shape:
            image_offset = align_up(pos, 4096)
            pos = image_offset + num_envs * height * width * channels
        return cls(
            num_envs=num_envs,
            obs_size=obs_size,
            act_size=act_size,
            cmd_ring_size=cmd_ring_size,
            image_width=width,
            image_height=height,
            image_channels=channels,
            mode=mode,
            num_workers=num_workers,
            image_offset=image_offset,
            side_offset=side_offset,
            side_size=side_size,
            total_size=align_up(pos, 4096),
            kind=kind,
            **offsets,
        )

    @property
    def image_shape(self) -> tuple[int, int, int] | None:
        """``(H, W, C)`` of one environment's image, or None without an image region."""
        if not self.image_offset:
            return None
        return (self.image_height, self.image_width, self.image_channels)

    def side_area(self, worker: int, to_worker: bool) -> int:
        """Byte offset of worker ``worker``'s side area (client->worker when ``to_worker``)."""
        if not self.side_size:
            raise LayoutError("this segment has no side areas")
        return self.side_offset + (2 * worker + (0 if to_worker else 1)) * self.side_size

    def write_header(self, buf: Any, engine_pid: int) -> None:
        """Write the static header fields (not ``state`` nor the sync words) into ``buf``.

        An lrbc header is written without its magic: ``publish_magic`` stores it last, once
        the engine is ready (a design client takes the magic for "ready").
        """
        values = {name: getattr(self, name, None) for name in _STATIC}
        values.update(magic=MAGIC, version=VERSION, header_size=HEADER_SIZE, engine_pid=engine_pid)
        if self.kind == LAYOUT_LRBC:
            values.update({theirs: values[ours] for ours, theirs in LRBC_ALIASES.items()})
            values.update(magic=None, version=LRBC_VERSION)
        for name, off, fmt, _ in self.fields:
            if values.get(name) is not None:
                struct.pack_into("<" + fmt, buf, off, values[name])

    @classmethod
    def read_header(cls, buf: Any) -> Layout:
        """Read and validate the static header fields of a segment (either layout)."""
        if len(buf) < HEADER_SIZE:
            raise LayoutError(f"segment of {len(buf)} bytes is smaller than the header")
        if detect_kind(buf) == LAYOUT_LRBC:
            return cls._read_lrbc(buf)
        values = {}
        for name, off, fmt, _ in HEADER_FIELDS:
            if name in _STATIC:
                values[name] = struct.unpack_from("<" + fmt, buf, off)[0]
        if values["magic"] != MAGIC:
            if values["magic"] == _LRBC_BIG_ENDIAN:
                raise LayoutError(
                    "the segment's magic reads 'LRBC' byte by byte, i.e. the u32 0x4C524243 "
                    "stored big-endian; the lrbc layout stores it little-endian (bytes "
                    "43 42 52 4C): write it as a native u32 on a little-endian machine "
                    "(see schema/lrbc_layout.md)"
                )
            raise LayoutError(
                f"not a mosaic shm transport segment (magic {values['magic']!r}, "
                f"expected {MAGIC!r} or the u32 0x{LRBC_MAGIC:08X} of the lrbc layout)"
            )
        if values["version"] != VERSION:
            raise LayoutError(
                f"transport layout version {values['version']} is not supported (this SDK reads "
                f"version {VERSION}); use the same mosaic-worker-sdk version on both sides"
            )
        if values["total_size"] > len(buf):
            raise LayoutError(
                f"header says {values['total_size']} bytes but the segment has {len(buf)}"
            )
        for name in ("magic", "version", "header_size", "engine_pid"):
            del values[name]
        found = cls(**values)
        found._check_against_sizes()
        return found

    @classmethod
    def _read_lrbc(cls, buf: Any) -> Layout:
        """An lrbc header: offsets are taken as written (a design engine places its regions
        where it likes), and checked to lie inside the segment past the header."""
        raw = {
            name: struct.unpack_from("<" + fmt, buf, off)[0]
            for name, off, fmt, _ in LRBC_HEADER_FIELDS
            if name not in ("gpu_obs_handle", "worker_slots")
        }
        if raw["version"] != LRBC_VERSION:
            raise LayoutError(
                f"lrbc layout version {raw['version']} is not supported (this SDK reads version "
                f"{LRBC_VERSION})"
            )
        n, obs, act, ring = raw["num_envs"], raw["obs_size"], raw["act_size"], raw["cmd_ring_size"]
        size = len(buf)
        problems = []
        if n < 1 or obs < 1:
            problems.append(f"num_envs {n} and obs_size {obs} must be positive")
        if ring < 64 or ring & (ring - 1):
            problems.append(f"cmd_ring_size {ring} must be a power of two of at least 64")
        if raw["mode"] not in (MODE_TRAINING, MODE_INFERENCE):
            problems.append(f"mode {raw['mode']} must be 0 or 1")
        if raw["total_size"] and raw["total_size"] > size:
            problems.append(f"total_size {raw['total_size']} exceeds the segment's {size} bytes")
        h, w, c = raw["image_height"], raw["image_width"], raw["image_channels"]
        workers = raw["num_workers"] or 1
        regions = [
            ("obs_offset", 4 * n * obs),
            ("act_offset", 4 * n * act),
            ("rewards_offset", 4 * n),
            ("dones_offset", 2 * n),
            ("resets_offset", n),
            ("cmd_s2c_offset", LRBC_RING_HEADER_SIZE + ring),
            ("cmd_c2s_offset", LRBC_RING_HEADER_SIZE + ring),
        ]
        if raw["image_offset"]:
            regions.append(("image_offset", n * h * w * c))
        if raw["side_offset"]:
            regions.append(("side_offset", 2 * workers * raw["side_size"]))
        aligned = {"obs_offset": 4, "act_offset": 4, "rewards_offset": 4}
        aligned.update(cmd_s2c_offset=8, cmd_c2s_offset=8)
        for name, nbytes in regions:
            off = raw[name]
            if off < HEADER_SIZE or off + nbytes > size or off % aligned.get(name, 1):
                problems.append(
                    f"{name} {off} (+{nbytes} bytes) is not an aligned region inside the "
                    f"{size}-byte segment after its {HEADER_SIZE}-byte header"
                )
        if problems:
            raise LayoutError("corrupt lrbc header: " + "; ".join(problems))
        image = (w, h, c) if raw["image_offset"] else (0, 0, 0)
        same = "mode obs_offset act_offset rewards_offset resets_offset image_offset side_offset"
        return cls(
            num_envs=n,
            obs_size=obs,
            act_size=act,
            cmd_ring_size=ring,
            image_width=image[0],
            image_height=image[1],
            image_channels=image[2],
            num_workers=workers,
            terminated_offset=raw["dones_offset"],
            truncated_offset=raw["dones_offset"] + n,
            cmd_e2c_offset=raw["cmd_s2c_offset"],
            cmd_c2e_offset=raw["cmd_c2s_offset"],
            side_size=raw["side_size"] if raw["side_offset"] else 0,
            total_size=raw["total_size"] or size,
            kind=LAYOUT_LRBC,
            **{name: raw[name] for name in same.split()},
        )

    def static_spans(self) -> tuple[int, tuple[tuple[int, int], ...]]:
        """``(end, holes)``: the header's bytes ``[0, end)`` stay as written once the segment
        is ready, but for the ``(offset, size)`` holes (words that change on purpose)."""
        if self.kind == LAYOUT_LRBC:
            gpu = LRBC_OFF["gpu_available"]  # the GPU fields: an engine exports after ready
            holes = (
                (12, 4),
                (32, 16),
                (gpu, LRBC_SEED_END - gpu),
                (LRBC_SEED_END, LRBC_EXTENSION + 4 - LRBC_SEED_END),
            )
            return LRBC_OFF["side_size"] + 8, holes
        return OFF["side_size"] + 8, ((OFF["client_pid"], 4), (OFF["state"], 4))

    def _check_against_sizes(self) -> None:
        """``LayoutError`` unless every offset is where the declared sizes put it."""
        image = None
        if self.image_offset or self.image_width or self.image_height:
            image = (self.image_height, self.image_width, self.image_channels)
        try:
            expected = Layout.compute(
                self.num_envs,
                self.obs_size,
                self.act_size,
                cmd_ring_size=self.cmd_ring_size,
                image_shape=image,
                mode=self.mode,
                num_workers=self.num_workers,
                side_size=self.side_size,
            )
        except LayoutError as exc:
            raise LayoutError(f"corrupt transport header: {exc}") from None
        for name in _STATIC:
            if name.endswith("offset") or name == "total_size":
                got, want = getattr(self, name), getattr(expected, name)
                if got != want:
                    raise LayoutError(
                        f"corrupt transport header: {name} is {got} but the sizes it declares "
                        f"put it at {want}; the segment was not written by a compatible "
                        "mosaic-worker-sdk engine (or was overwritten)"
                    )


_LRBC_BIG_ENDIAN = struct.pack(">I", LRBC_MAGIC)


def detect_kind(buf: Any) -> str | None:
    """``"mshm"`` or ``"lrbc"`` from a segment's magic; None while it is still zero (an
    engine being set up). ``LayoutError`` for anything else."""
    head = bytes(buf[:4])
    if head == MAGIC:
        return LAYOUT_MSHM
    if struct.unpack("<I", head)[0] == LRBC_MAGIC:
        return LAYOUT_LRBC
    if head == bytes(4):
        return None
    if head == _LRBC_BIG_ENDIAN:
        return LAYOUT_MSHM  # read_header explains the byte order
    raise LayoutError(
        f"not a mosaic shm transport segment (magic {head!r}, expected {MAGIC!r} or the u32 "
        f"0x{LRBC_MAGIC:08X} of the lrbc layout)"
    )


def creator_pid(buf: Any) -> int | None:
    """The pid of the process that created a transport segment, read from its header's first
    bytes (either layout, an lrbc header before its magic too); None when ``buf`` holds no
    transport header (another program's segment)."""
    head = bytes(buf[:64])
    if len(head) < 64:
        return None
    if head[:4] == MAGIC:
        return int(struct.unpack_from("<I", head, OFF["engine_pid"])[0])
    magic = struct.unpack_from("<I", head, LRBC_OFF["magic"])[0]
    version = struct.unpack_from("<I", head, LRBC_OFF["version"])[0]
    if version == LRBC_VERSION and magic in (0, LRBC_MAGIC):
        return int(struct.unpack_from("<I", head, LRBC_OFF["server_pid"])[0])
    return None


def publish_magic(layout: Layout, words: Any) -> None:
    """Store an lrbc header's magic (release): the last write of an engine's set-up."""
    if layout.kind == LAYOUT_LRBC:
        words.store_u32(LRBC_OFF["magic"], LRBC_MAGIC)


def _described(fields: Any) -> list[dict[str, Any]]:
    """Header or slot fields ``(name, offset, struct format, doc)`` as the JSON layout tables
    list them, each with its size."""
    return [
        {"name": n, "offset": o, "format": f, "size": struct.calcsize("<" + f), "doc": d}
        for n, o, f, d in fields
    ]


def lrbc_description() -> dict[str, Any]:
    """The machine-readable layout written to ``schema/lrbc_layout.json``."""
    example = Layout.compute(4096, 100, 12, kind=LAYOUT_LRBC)
    return {
        "title": "LuckyEngine shared-memory segment (lrbc layout of the mosaic transport)",
        "version": LRBC_VERSION,
        "byte_order": "little",
        "magic_u32": LRBC_MAGIC,
        "magic_bytes_hex": struct.pack("<I", LRBC_MAGIC).hex(" "),
        "header_size": HEADER_SIZE,
        "alignment": "each field at a multiple of its size (C struct, no packing)",
        "seed_fields_end": LRBC_SEED_END,
        "extension_start": LRBC_EXTENSION,
        "regions_in_order": [
            "obs float32[num_envs*obs_size] at obs_offset",
            "actions float32[num_envs*act_size] at act_offset",
            "rewards float32[num_envs] at rewards_offset",
            "dones u8[num_envs] at dones_offset",
            "truncateds u8[num_envs] at dones_offset + num_envs (no offset field)",
            "reset flags u8[num_envs] at resets_offset",
            "ring server->client at cmd_s2c_offset",
            "ring client->server at cmd_c2s_offset",
            "image u8[num_envs*H*W*C] at image_offset (optional)",
            "side areas at side_offset (optional, mosaic extension)",
        ],
        "ring": {
            "write_pos": [LRBC_RING_WRITE_POS, "I", "bytes ever written, modulo 2**32"],
            "read_pos": [LRBC_RING_READ_POS, "I", "bytes ever read, modulo 2**32"],
            "data_offset": LRBC_RING_HEADER_SIZE,
            "entry": "[length u32][payload][pad to 8]; payload may wrap around the data end",
        },
        "header": _described(LRBC_HEADER_FIELDS),
        "example_4096x100x12": {
            "obs_offset": example.obs_offset,
            "act_offset": example.act_offset,
            "rewards_offset": example.rewards_offset,
            "dones_offset": example.terminated_offset,
            "truncateds_offset": example.truncated_offset,
            "resets_offset": example.resets_offset,
            "cmd_s2c_offset": example.cmd_e2c_offset,
            "cmd_c2s_offset": example.cmd_c2e_offset,
            "cmd_ring_size": example.cmd_ring_size,
            "total_size": example.total_size,
        },
    }


def header_description() -> dict[str, Any]:
    """The machine-readable layout description written to ``schema/shm_layout.json``."""
    example = Layout.compute(4096, 100, 12)
    return {
        "title": "mosaic shared-memory transport segment",
        "version": VERSION,
        "byte_order": "little",
        "magic": MAGIC.decode(),
        "header_size": HEADER_SIZE,
        "region_alignment": ALIGN,
        "regions_in_order": [
            "obs (num_envs*obs_size 4-byte words)",
            "actions (num_envs*act_size 4-byte words)",
            "rewards f64[num_envs]",
            "terminated u8[num_envs]",
            "truncated u8[num_envs]",
            "resets u8[num_envs]",
            "ring engine->client",
            "ring client->engine",
            "side areas (optional, 4096-aligned): per worker [client->worker][worker->client], "
            "each side_size bytes: [count u64][pad to 64][data]",
            "image u8[num_envs*H*W*C] (optional, 4096-aligned)",
        ],
        "ring": {
            "write_pos": [RING_WRITE_POS, "Q", "bytes ever written (monotonic)"],
            "read_pos": [RING_READ_POS, "Q", "bytes ever read (monotonic)"],
            "data_offset": RING_HEADER_SIZE,
            "entry": "[length u32][payload][pad to 8]; payload may wrap around the data end",
        },
        "header": _described(HEADER_FIELDS),
        "worker_slot": _described(WORKER_FIELDS),
        "example_4096x100x12": {
            k: getattr(example, k)
            for k in _STATIC
            if k.endswith(("offset", "size")) and hasattr(example, k)
        },
    }


def main() -> None:
    """Print ``schema/shm_layout.json`` (``lrbc`` as argument: ``schema/lrbc_layout.json``)."""
    lrbc = sys.argv[1:] == [LAYOUT_LRBC]
    print(json.dumps(lrbc_description() if lrbc else header_description(), indent=2))


if __name__ == "__main__":
    main()
