"""How the telemetry emitter's lines reach the stream: :class:`LineOutput`."""

from __future__ import annotations

import atexit
import codecs
import os
import sys
import threading
import time
import weakref
from typing import TextIO

DEFAULT_FLUSH_INTERVAL = 0.02
_FLUSH_BYTES = 65536


def env_float(name: str, default: float) -> float:
    """The number in the environment variable ``name`` (``default`` when unset or blank);
    ``ValueError`` naming the variable when it is not a number or negative."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a number") from None
    if value < 0:
        raise ValueError(f"{name}={raw!r} must not be negative")
    return value


JSON_ESCAPE_ERRORS = "mosaic.json-escape"
"""The codec error handler that writes an unencodable character as a JSON ``\\uXXXX`` escape."""


def _json_escape(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    out = []
    for ch in exc.object[exc.start : exc.end]:
        code = ord(ch)
        if code > 0xFFFF:  # a character outside the BMP: a JSON surrogate pair
            code -= 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            out.append(f"\\u{code:04x}")
    return "".join(out), exc.end


codecs.register_error(JSON_ESCAPE_ERRORS, _json_escape)


def json_escape_unencodable(text: str, encoding: str | None) -> str:
    """``text`` (JSON lines) with every character ``encoding`` cannot encode (lone surrogates,
    for UTF-8) written as a JSON ``\\uXXXX`` escape. Only valid for JSON text, where every
    such character stands inside a string."""
    codec = encoding or "utf-8"
    return text.encode(codec, JSON_ESCAPE_ERRORS).decode(codec)


class LineOutput:
    r"""Buffered, thread-safe writing of whole lines to ``stream`` (default: stdout).

    Urgent lines (lifecycle, control replies) are written at once with anything pending, the
    rest when 64 KiB are pending or ``flush_interval`` seconds after the first pending line (a
    daemon thread keeps that bound). A closed or broken stream is said once on stderr and never
    stops the worker; every live output is flushed at interpreter exit. Characters the stream
    cannot encode (lone surrogates) are written as JSON ``\uXXXX`` escapes, said once on
    stderr. Subclasses call :meth:`_write_locked` holding ``self._lock``, so what they number
    under it is written in that order.
    """

    def __init__(self, stream: TextIO | None, flush_interval: float | None) -> None:
        self._stream = stream if stream is not None else sys.stdout
        #: The encoding of a stream that would not refuse what it cannot encode (stdout under a
        #: C locale has ``errors="surrogateescape"``: ``"\udcff"`` would go out as the byte
        #: 0xff, not UTF-8); None for a strict one.
        errors = getattr(self._stream, "errors", None)
        self._lenient: str | None = None
        if errors not in (None, "strict"):
            self._lenient = getattr(self._stream, "encoding", None) or "utf-8"
        if flush_interval is None:
            flush_interval = (
                env_float("MOSAIC_TELEMETRY_FLUSH_MS", DEFAULT_FLUSH_INTERVAL * 1e3) / 1e3
            )
        if flush_interval < 0:
            raise ValueError("flush_interval must be >= 0 seconds")
        self.flush_interval = float(flush_interval)
        self._lock = threading.Lock()
        self._buf: list[str] = []
        self._pending = 0
        self._closed = False
        #: True once the stream refused a write: later lines are dropped.
        self.broken = False
        #: Characters the stream could not encode, written as JSON escapes instead.
        self.escaped = 0
        self._lines = 0
        self._wake = threading.Event()
        self._flusher: threading.Thread | None = None
        _LIVE.add(self)  # closed (and flushed) at interpreter exit

    def _write_locked(self, line: str, urgent: bool) -> None:
        if self._closed:
            raise RuntimeError(f"{type(self).__name__} is closed")
        self._buf.append(line)
        self._pending += len(line)
        self._lines += 1
        if urgent or self.flush_interval == 0 or self._pending >= _FLUSH_BYTES:
            self._flush_locked()
        elif len(self._buf) == 1:
            self._ensure_flusher()
            self._wake.set()

    def _flush_locked(self) -> None:
        if not self._buf:
            return
        data = "".join(self._buf)
        self._buf.clear()
        self._pending = 0
        if self.broken:
            return
        try:
            try:
                if self._lenient is not None and not data.isascii():
                    data.encode(self._lenient)  # what a strict stream would refuse, refused
                self._stream.write(data)
            except UnicodeEncodeError:  # a subclass of ValueError: the stream itself is fine
                self._write_escaped(data)
            self._stream.flush()
        except (BrokenPipeError, ValueError, OSError) as exc:
            # The reader is gone (or stdout closed): keep the worker alive, say it once.
            self.broken = True
            try:
                sys.stderr.write(f"mosaic telemetry: output lost, stream closed ({exc})\n")
            except Exception:  # noqa: BLE001 - stderr may be gone too
                pass

    def _write_escaped(self, data: str) -> None:
        """Write ``data`` with what the stream cannot encode as JSON escapes; say it once."""
        escaped = json_escape_unencodable(data, getattr(self._stream, "encoding", None))
        self._stream.write(escaped)
        if not self.escaped:
            try:
                sys.stderr.write(
                    "mosaic telemetry: a line held text the output cannot encode (such as a "
                    "lone surrogate); it was written as JSON \\u escapes, as later ones will be\n"
                )
            except Exception:  # noqa: BLE001 - stderr may be gone
                pass
        self.escaped += 1

    def _ensure_flusher(self) -> None:
        if self._flusher is None:
            self._flusher = threading.Thread(
                target=self._flush_loop, name="mosaic-telemetry-flush", daemon=True
            )
            self._flusher.start()

    def _flush_loop(self) -> None:
        while True:
            self._wake.wait()
            if self._closed:
                return
            time.sleep(self.flush_interval)
            with self._lock:
                self._wake.clear()
                self._flush_locked()

    def flush(self) -> None:
        """Write everything pending now."""
        with self._lock:
            self._flush_locked()

    def close(self) -> None:
        """Flush and stop the flusher thread; further writes raise ``RuntimeError``."""
        with self._lock:
            if self._closed:
                return
            self._flush_locked()
            self._closed = True
        self._wake.set()
        _LIVE.discard(self)


_LIVE: weakref.WeakSet[LineOutput] = weakref.WeakSet()


@atexit.register
def _flush_all_at_exit() -> None:
    for output in list(_LIVE):
        try:
            output.close()
        except Exception:  # noqa: BLE001 - never fail interpreter exit
            pass
