"""Acquire/release access to words in shared memory, shared by FastLane and the shm transport:
``SharedWords(buffer)``, from a small C extension (``_atomics.c``) or, on x86 only, a
pure-Python fallback (``MOSAIC_ATOMICS=python`` forces it; ``IMPLEMENTATION`` says which).
"""

from __future__ import annotations

import os
import platform
import struct
import time
from typing import Any

_SLOT_LENGTHS = struct.Struct("<II")
_SLOT_METRICS = struct.Struct("<dddQ")

_TSO_MACHINES = {"x86_64", "amd64", "i386", "i686", "x86"}


class AtomicsUnavailableError(RuntimeError):
    """The native helper is missing on hardware where plain stores are not safe."""


class PythonSharedWords:
    """Pure-Python stand-in for the native ``SharedWords``, over ``memoryview`` casts.

    Correct only where the hardware never reorders stores with stores nor loads with loads
    (x86 "TSO") and every call into a memoryview is a compiler barrier, hence x86 only. Its
    read-modify-writes are not atomic across processes (right for the single-writer words
    they are used on), and it has no futex: ``futex_wait`` sleeps in short steps."""

    def __init__(self, buffer: Any) -> None:
        mv = memoryview(buffer)
        if mv.readonly:
            raise TypeError("SharedWords needs a writable buffer")
        self._mv: memoryview | None = mv.cast("B")
        self._size = len(self._mv)

    def _view(self, off: int, width: int) -> memoryview:
        mv = self._mv
        if mv is None:
            raise ValueError("SharedWords: buffer already released")
        if off < 0 or off + width > self._size:
            raise IndexError(
                f"SharedWords: offset {off} (+{width} bytes) outside a buffer of {self._size} bytes"
            )
        if off % width:
            raise ValueError(f"SharedWords: offset {off} is not {width}-byte aligned")
        return mv

    # -- loads and stores ----------------------------------------------------------------
    def load_u64(self, off: int) -> int:
        return int(self._view(off, 8)[off : off + 8].cast("Q")[0])

    def load_u32(self, off: int) -> int:
        return int(self._view(off, 4)[off : off + 4].cast("I")[0])

    def load_f64(self, off: int) -> float:
        return float(self._view(off, 8)[off : off + 8].cast("d")[0])

    def store_u64(self, off: int, value: int) -> None:
        self._view(off, 8)[off : off + 8].cast("Q")[0] = value

    def store_u32(self, off: int, value: int) -> None:
        self._view(off, 4)[off : off + 4].cast("I")[0] = value

    def store_f64(self, off: int, value: float) -> None:
        self._view(off, 8)[off : off + 8].cast("d")[0] = value

    # -- read-modify-write (single-writer words only, see module docs) ---------------------
    def fetch_add_u64(self, off: int, delta: int) -> int:
        old = self.load_u64(off)
        self.store_u64(off, (old + delta) & 0xFFFFFFFFFFFFFFFF)
        return old

    def fetch_or_u32(self, off: int, bits: int) -> int:
        old = self.load_u32(off)
        self.store_u32(off, old | bits)
        return old

    def fetch_and_u32(self, off: int, mask: int) -> int:
        old = self.load_u32(off)
        self.store_u32(off, old & mask)
        return old

    def cas_u64(self, off: int, expected: int, desired: int) -> bool:
        if self.load_u64(off) != expected:
            return False
        self.store_u64(off, desired)
        return True

    def cas_u32(self, off: int, expected: int, desired: int) -> bool:
        if self.load_u32(off) != expected:
            return False
        self.store_u32(off, desired)
        return True

    # -- waiting -----------------------------------------------------------------------
    def futex_wait(self, off: int, expected: int, timeout: float) -> bool:
        deadline = None if timeout < 0 else time.monotonic() + timeout
        pause = 20e-6
        while self.load_u32(off) == expected:
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(pause)
            pause = min(pause * 2, 1e-3)
        return True

    def futex_wake(self, off: int, count: int) -> int:
        self._view(off, 4)
        return 0

    def fence(self) -> None:
        return None

    # -- FastLane one-call slot write/read (mirror of the section at the end of _atomics.c) --
    def fastlane_write(
        self,
        slot_off: int,
        head: int,
        frame: Any,
        metadata: Any,
        payload_cap: int,
        metrics_off: int,
        last_reward: float,
        rolling_return: float,
        step_rate_hz: float,
        hud_off: int,
        head_off: int,
    ) -> None:
        """Seqlocked write of one FastLane slot, then a release store of ``head``."""
        mv = self._view(slot_off, 8)
        self._view(metrics_off, 8)
        self._view(metrics_off + 24, 8)
        self._view(head_off, 8)
        if slot_off + 16 + payload_cap > self._size:
            raise IndexError("fastlane_write: slot payload outside the buffer")
        fv = memoryview(frame).cast("B")
        meta = None if metadata is None else memoryview(metadata).cast("B")
        flen = fv.nbytes
        mlen = 0 if meta is None else meta.nbytes
        if flen + mlen > payload_cap:
            raise ValueError(
                f"fastlane_write: frame ({flen} bytes) + metadata ({mlen} bytes) exceed the slot "
                f"payload of {payload_cap} bytes"
            )
        values = (float(last_reward), float(rolling_return), float(step_rate_hz))
        # x86 keeps stores in program order, so plain stores give the release semantics.
        mv[slot_off : slot_off + 8].cast("Q")[0] = 2 * head + 1
        _SLOT_LENGTHS.pack_into(mv, slot_off + 8, flen, mlen)
        start = slot_off + 16
        mv[start : start + flen] = fv
        if meta is not None and mlen:
            mv[start + flen : start + flen + mlen] = meta
        _SLOT_METRICS.pack_into(mv, metrics_off, *values, time.monotonic_ns())
        mv[slot_off : slot_off + 8].cast("Q")[0] = 2 * head + 2
        if hud_off >= 0:
            for i, value in enumerate(values):
                self.store_f64(hud_off + 8 * i, value)
        mv[head_off : head_off + 8].cast("Q")[0] = head

    def fastlane_read(
        self, slot_off: int, head: int, metrics_off: int, payload_cap: int, dest: Any = None
    ) -> tuple[Any, bytes | None, float, float, float, int] | None:
        """Seqlocked copy of FastLane frame ``head``; None when it is not there complete."""
        mv = self._view(slot_off, 8)
        self._view(metrics_off, 8)
        self._view(metrics_off + 24, 8)
        if payload_cap < 0 or slot_off + 16 + payload_cap > self._size:
            raise IndexError("fastlane_read: slot payload outside the buffer")
        want = 2 * head + 2
        seq = mv[slot_off : slot_off + 8].cast("Q")
        if seq[0] != want:
            return None
        flen, mlen = _SLOT_LENGTHS.unpack_from(mv, slot_off + 8)
        if flen + mlen > payload_cap:
            return None
        start = slot_off + 16
        frame: Any
        if dest is not None:
            dv = memoryview(dest).cast("B")
            if dv.nbytes < flen:
                raise ValueError(
                    f"fastlane_read: destination holds {dv.nbytes} bytes, the frame has {flen}"
                )
            dv[:flen] = mv[start : start + flen]
            frame = flen
        else:
            frame = bytes(mv[start : start + flen])
        meta = bytes(mv[start + flen : start + flen + mlen]) if mlen else None
        r, g, hz, ns = _SLOT_METRICS.unpack_from(mv, metrics_off)
        if seq[0] != want:
            return None
        return frame, meta, r, g, hz, ns

    # -- lifetime ------------------------------------------------------------------------
    def release(self) -> None:
        if self._mv is not None:
            self._mv.release()
            self._mv = None

    @property
    def size(self) -> int:
        return 0 if self._mv is None else self._size

    def __enter__(self) -> PythonSharedWords:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _choose() -> tuple[Any, str, bool]:
    forced = os.environ.get("MOSAIC_ATOMICS", "").strip().lower()
    if forced not in ("", "native", "python"):
        raise AtomicsUnavailableError(
            f"MOSAIC_ATOMICS={forced!r} is not understood; use 'native' or 'python' (or unset it)"
        )
    if forced != "python":
        try:
            # Optional: the C extension, where it was built; else the Python fallback.
            from mosaic_sdk.shm import _atomics  # type: ignore[attr-defined]

            return _atomics.SharedWords, "native", bool(_atomics.HAVE_FUTEX)
        except ImportError:
            if forced == "native":
                raise AtomicsUnavailableError(
                    "MOSAIC_ATOMICS=native but the extension mosaic_sdk.shm._atomics is not built; "
                    "reinstall mosaic-worker-sdk with a C compiler available"
                ) from None
    return PythonSharedWords, "python", False


_IMPL, IMPLEMENTATION, HAVE_FUTEX = _choose()


def SharedWords(buffer: Any) -> Any:  # noqa: N802 - reads as the class it returns
    """Wrap ``buffer`` (writable, 8-byte aligned: ``SharedMemory.buf``, an ``mmap``, a
    ``bytearray``) for atomic word access at naturally aligned byte offsets.

    Acquire loads (``load_u32/u64/f64``), release stores (``store_*``), atomic ``fetch_add_u64``,
    ``fetch_or_u32``, ``fetch_and_u32``, ``cas_u32/u64``, ``futex_wait``/``futex_wake``,
    seqlocked FastLane slot copies, ``fence()`` and ``release()`` (before closing the mmap; also
    a context manager). The native helper uses C11 orderings (right on x86-64 and ARM64)."""
    if IMPLEMENTATION == "python" and platform.machine().lower() not in _TSO_MACHINES:
        raise AtomicsUnavailableError(
            f"the native atomics helper is not built and this CPU ({platform.machine()}) may "
            "reorder plain stores; reinstall mosaic-worker-sdk where a C compiler is available "
            "(pip install --force-reinstall --no-binary mosaic-worker-sdk mosaic-worker-sdk)"
        )
    return _IMPL(buffer)
