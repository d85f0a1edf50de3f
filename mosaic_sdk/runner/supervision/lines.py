"""Cutting a worker's output into lines: linear time, bounded memory, whatever it writes."""

from __future__ import annotations

#: The default longest line kept whole (16 MiB); longer lines are cut (see CutLine).
DEFAULT_MAX_LINE = 16 * 1024 * 1024


class CutLine(bytes):
    """A line longer than the maximum: its first ``max_line`` bytes; ``dropped`` bytes lost."""

    dropped: int

    def __new__(cls, head: bytes, dropped: int) -> CutLine:
        line = super().__new__(cls, head)
        line.dropped = dropped
        return line

    def note(self) -> str:
        """What the runner stores in the ``error`` column of the line."""
        total = len(self) + self.dropped
        return (
            f"line of {total} bytes is longer than the maximum line length ({len(self)} "
            f"bytes): the first {len(self)} bytes are kept, {self.dropped} bytes were dropped"
        )


class LineSplitter:
    """Bytes in, complete lines out (without their line ends). Keeps at most ``max_line``
    bytes of an unfinished line (a longer one comes out as a :class:`CutLine`); with
    ``cr=True`` (stderr) a lone ``\\r`` ends a line too (one line per progress-bar redraw)."""

    __slots__ = ("max_line", "cr", "_parts", "_size", "_dropped", "_after_cr", "peak_pending")

    def __init__(self, max_line: int = DEFAULT_MAX_LINE, *, cr: bool = False) -> None:
        if max_line < 1:
            raise ValueError(f"max_line must be >= 1 byte, got {max_line}")
        self.max_line = max_line
        self.cr = cr
        self._parts: list[bytes] = []  # the kept pieces of the unfinished line
        self._size = 0  # bytes in _parts (never more than max_line)
        self._dropped = 0  # bytes of the unfinished line beyond max_line
        self._after_cr = False  # the previous chunk ended with "\r" (a "\n" may follow)
        #: The most bytes ever held for an unfinished line (at most ``max_line``).
        self.peak_pending = 0

    def feed(self, data: bytes) -> list[bytes]:
        """The lines that ``data`` completes, in order."""
        if not data:
            return []
        if self.cr:
            if self._after_cr and data[:1] == b"\n":
                data = data[1:]  # the "\n" of a "\r\n" split across two reads
            self._after_cr = data[-1:] == b"\r"
            if not data:
                return []
            pieces = data.splitlines()  # bytes: splits on \n, \r and \r\n only
            tail = pieces.pop() if data[-1:] not in (b"\n", b"\r") else b""
        else:
            pieces = data.split(b"\n")
            tail = pieces.pop()
        out: list[bytes] = []
        if pieces:
            out.append(self._finish(pieces[0]))
            limit = self.max_line
            for piece in pieces[1:]:
                out.append(
                    piece if len(piece) <= limit else CutLine(piece[:limit], len(piece) - limit)
                )
        if tail:
            self._keep(tail)
        return out

    def finish(self) -> bytes | None:
        """The unfinished last line (no line end came), or None; the splitter is then empty."""
        if not self._parts and not self._dropped:
            return None
        return self._finish(b"")

    def _keep(self, piece: bytes) -> None:
        room = self.max_line - self._size
        if len(piece) > room:
            self._dropped += len(piece) - room
            piece = piece[:room]
        if piece:
            self._parts.append(piece)
            self._size += len(piece)
            self.peak_pending = max(self.peak_pending, self._size)

    def _finish(self, piece: bytes) -> bytes:
        if not self._parts and not self._dropped:
            if len(piece) <= self.max_line:
                return piece
        self._keep(piece)
        line = b"".join(self._parts)
        dropped = self._dropped
        self._parts, self._size, self._dropped = [], 0, 0
        return CutLine(line, dropped) if dropped else line
