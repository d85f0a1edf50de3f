"""Text a worker wrote, made safe to print: nothing in it may act as terminal control."""

from __future__ import annotations

_BIDI = (0x061C, 0x200E, 0x200F, 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_SURROGATES = range(0xD800, 0xE000)
_CONTROLS = (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0), *_BIDI, *_SURROGATES)
_TABLE = {code: (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}") for code in _CONTROLS}


def printable(text: object) -> str:
    """``text`` (made a ``str``) with every terminal control character and lone surrogate
    escaped; linear time."""
    s = text if isinstance(text, str) else str(text)
    if s.isprintable():  # the common case: no control, format or separator character
        return s
    return s.translate(_TABLE)
