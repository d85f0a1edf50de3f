"""Text a worker wrote, made safe to print: nothing in it may act as terminal control.

A worker's event names, log lines, stderr and error messages end up on the user's terminal
(the live view, ``mosaic run``'s summary, ``mosaic runs show``). :func:`printable` escapes
every character that a terminal would act on instead of showing: C0 controls (ESC starts
ANSI/OSC sequences that recolour, move the cursor, clear the screen, set the window title or
hyperlinks; BEL, backspace, carriage return, newline, tab), DEL, the C1 controls (U+0080 to
U+009F: an 8-bit CSI or OSC), the Unicode bidirectional overrides and isolates, which
reorder what follows, and the line and paragraph separators. Each becomes its Python escape
(``\\x1b``, ``\\u202e``), so the text stays readable and nothing is hidden. Lone surrogates
(``\\udcff`` from a file name read with ``surrogateescape``, ``\\ud800`` from a JSON escape)
are escaped the same way: no UTF-8 terminal can take them, and printing one would end the
command with ``UnicodeEncodeError``. Everything else (any script, emoji, joiners) is kept.

The store and ``--json`` keep the original text; only what is printed for humans is escaped.
Rich markup is a separate matter: pass worker text to Rich as ``rich.text.Text``, never as a
markup string (see :mod:`mosaic_sdk.runner.live`).
"""

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


__all__ = ["printable"]
