"""Single-producer single-consumer byte ring inside a shared segment (the command channel).

Ring region at ``offset``::

    +0    write_pos u64   bytes ever written; only the writer stores it (release)
    +64   read_pos  u64   bytes ever read; only the reader stores it (release)
    +128  data[capacity]  capacity is a multiple of 8

The lrbc layout (``compact=True``): ``write_pos`` u32 at +0, ``read_pos`` u32 at +4, data at
+8, positions modulo 2**32 (a power-of-two capacity).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from typing import Any

from mosaic_sdk.shm.layout import (
    LRBC_RING_HEADER_SIZE,
    LRBC_RING_READ_POS,
    LRBC_RING_WRITE_POS,
    RING_HEADER_SIZE,
    RING_READ_POS,
    RING_WRITE_POS,
)
from mosaic_sdk.shm.sync import TransportError, TransportTimeoutError

_LEN = struct.Struct("<I")
MORE = 0x8000_0000  # top bit of an entry's length: the message continues in the next entry
_ZEROS = bytes(8)
#: Largest message (bytes, its fragments joined) a reader takes by default.
MAX_MESSAGE = 64 << 20


class RingCorruptError(TransportError):
    """The ring's positions or an entry's length are inconsistent (memory was overwritten)."""


class MessageTooLargeError(TransportError):
    """A message's fragments grew past the reader's ``max_message``: they were dropped.

    ``head`` is the message's first fragment (where an envelope's ids are)."""

    def __init__(self, text: str, head: bytes = b"") -> None:
        super().__init__(text)
        self.head = head


def entry_size(payload_len: int) -> int:
    """Bytes an entry of ``payload_len`` bytes occupies in the ring."""
    return (4 + payload_len + 7) & ~7


class ByteRing:
    """One direction of the command channel; use ``write`` on one side, ``read`` on the other.

    Positions only grow; position ``p`` is ``data[p % capacity]``. An entry is ``[length
    u32][payload][zero padding to 8]``, published by advancing ``write_pos`` after the copy. A
    message larger than the ring goes as fragments (``MORE`` set in every length but the last).
    A full ring makes the writer poll, with a timeout.

    The reader joins fragments up to ``max_message`` bytes: past it, ``try_read`` raises
    ``MessageTooLargeError`` at once and drops the message's fragments as they come (nothing
    is kept), up to the entry that ends it; that entry is returned as a message of its own when
    ``resync(entry)`` says it begins one (the next message of a writer that gave up the
    refused one), else dropped too."""

    def __init__(
        self,
        buf: Any,
        words: Any,
        offset: int,
        capacity: int,
        *,
        compact: bool = False,
        max_message: int = MAX_MESSAGE,
        resync: Callable[[bytes], bool] | None = None,
    ) -> None:
        if capacity < 16 or capacity % 8:
            raise ValueError(f"ring capacity must be a multiple of 8, >= 16; got {capacity}")
        if compact and capacity & (capacity - 1):
            raise ValueError(f"a ring with u32 positions needs a power-of-two capacity: {capacity}")
        self._mv = memoryview(buf).cast("B")
        self._w = words
        if compact:
            self._wpos = offset + LRBC_RING_WRITE_POS
            self._rpos = offset + LRBC_RING_READ_POS
            self._data = offset + LRBC_RING_HEADER_SIZE
            self._load, self._store, self._mask = words.load_u32, words.store_u32, 0xFFFFFFFF
        else:
            self._wpos = offset + RING_WRITE_POS
            self._rpos = offset + RING_READ_POS
            self._data = offset + RING_HEADER_SIZE
            self._load, self._store, self._mask = words.load_u64, words.store_u64, (1 << 64) - 1
        self.capacity = capacity
        self.max_message = max_message
        self._resync = resync
        self._partial: list[bytes] = []
        self._partial_size = 0
        self._dropping = False  # reading the fragments of a refused message
        if self._data + capacity > len(self._mv):
            raise ValueError("ring does not fit in the buffer")

    @property
    def max_payload(self) -> int:
        """Largest payload one entry can carry."""
        return self.capacity - 4

    def pending(self) -> int:
        """Bytes written and not yet read."""
        return int((self._load(self._wpos) - self._load(self._rpos)) & self._mask)

    def _copy_out(self, pos: int, n: int) -> bytes:
        cap, start = self.capacity, pos % self.capacity
        first = min(n, cap - start)
        out = bytes(self._mv[self._data + start : self._data + start + first])
        if first < n:
            out += bytes(self._mv[self._data : self._data + n - first])
        return out

    def try_write(self, payload: bytes | bytearray | memoryview, more: bool = False) -> bool:
        """Append one entry (``more``: a fragment the next one continues); False when the ring
        lacks room."""
        n = len(payload) if not isinstance(payload, memoryview) else payload.nbytes
        size = entry_size(n)
        cap = self.capacity
        if size > cap or n >= MORE:
            raise ValueError(
                f"command of {n} bytes does not fit a ring of {cap} bytes "
                f"(max {self.max_payload}); use write(), which splits it into fragments"
            )
        w = self._load(self._wpos)
        if cap - ((w - self._load(self._rpos)) & self._mask) < size:
            return False
        # the whole entry in one piece: length word, payload, zero padding
        entry = _LEN.pack(n | (MORE if more else 0)) + payload + _ZEROS[: size - 4 - n]
        start = w % cap
        at = self._data + start
        if start + size <= cap:
            self._mv[at : at + size] = entry
        else:  # the payload wraps around the end of the data area
            first = cap - start
            self._mv[at : at + first] = entry[:first]
            self._mv[self._data : self._data + size - first] = entry[first:]
        self._store(self._wpos, (w + size) & self._mask)
        return True

    def write(
        self,
        payload: bytes | bytearray | memoryview,
        timeout: float | None = 5.0,
        check: Callable[[], None] | None = None,
        ring: Callable[[], None] | None = None,
    ) -> None:
        """Append one message, waiting (up to ``timeout`` s per entry) while the ring is full;
        ``ring()`` (the reader's bell) is called after each fragment of a large one."""
        if type(payload) is bytes and len(payload) + 11 <= self.capacity:  # one whole entry
            if self.try_write(payload):
                return
        data = memoryview(payload).cast("B")
        if entry_size(len(data)) <= self.capacity:
            self._write_entry(data, False, timeout, check)
            return
        step = self.capacity // 2 - 8
        for begin in range(0, len(data), step):
            last = begin + step >= len(data)
            self._write_entry(data[begin : begin + step], not last, timeout, check)
            if ring is not None and not last:
                ring()

    def _write_entry(
        self,
        payload: memoryview,
        more: bool,
        timeout: float | None,
        check: Callable[[], None] | None,
    ) -> None:
        if self.try_write(payload, more):
            return
        deadline = None if timeout is None else time.monotonic() + timeout
        pause = 20e-6
        while not self.try_write(payload, more):
            if check is not None:
                check()
            if deadline is not None and time.monotonic() >= deadline:
                raise TransportTimeoutError(
                    f"command ring full for {timeout} s: the reader is not draining it "
                    "(is the other side serving commands?)"
                )
            time.sleep(pause)
            pause = min(pause * 2, 5e-3)

    def try_read(self) -> bytes | None:
        """Remove and return the oldest message, or None when no whole message is there."""
        while (entry := self._read_entry()) is not None:
            chunk, more = entry
            if self._dropping:  # the rest of a refused message
                if more:
                    continue
                self._dropping = False
                if self._resync is not None and self._resync(chunk):
                    return chunk
                continue
            if not self._partial and not more:
                return chunk
            size = self._partial_size + len(chunk)
            if size > self.max_message:
                head = self._partial[0] if self._partial else chunk
                self._partial, self._partial_size, self._dropping = [], 0, more
                limit = self.max_message
                mib = f" ({limit / 2**20:g} MiB)" if limit >= 1 << 20 else ""
                raise MessageTooLargeError(
                    f"message refused: larger than {limit} bytes{mib}, the most one message "
                    f"may have ({size} bytes came); its fragments are dropped",
                    head,
                )
            self._partial.append(chunk)
            self._partial_size = size
            if more:
                continue
            chunk = b"".join(self._partial)
            self._partial, self._partial_size = [], 0
            return chunk
        return None

    def _read_entry(self) -> tuple[bytes, bool] | None:
        r = self._load(self._rpos)
        avail = (self._load(self._wpos) - r) & self._mask
        if avail == 0:
            return None
        if avail > self.capacity or avail % 8 or r % 8:
            raise RingCorruptError(
                f"command ring positions are inconsistent (read {r}, {avail} bytes pending, "
                f"capacity {self.capacity}); the segment was overwritten"
            )
        word = _LEN.unpack_from(self._mv, self._data + r % self.capacity)[0]
        n, more = word & ~MORE, bool(word & MORE)
        if entry_size(n) > avail:
            raise RingCorruptError(
                f"command ring entry at position {r} claims {n} bytes but only {avail - 4} "
                "were written; the segment was overwritten or a writer broke the framing"
            )
        out = self._copy_out(r + 4, n)
        self._store(self._rpos, (r + entry_size(n)) & self._mask)
        return out, more

    def release(self) -> None:
        """Drop the view on the buffer (before the mapping is closed)."""
        self._mv.release()
