"""Jinja filters that embed user text safely into the files of a baked worker, loaded by
cookiecutter through ``_extensions`` in ``cookiecutter.json``. Standard library and Jinja only.

Loading it also drops the traceback plain ``cookiecutter`` logs after the ``pre_gen_project``
hook has refused the answers (the hook's message and the exit status stay).
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import Callable
from typing import Any

from jinja2.ext import Extension

_PY_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_TOML_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
_MD_SPECIAL = set("\\`*_{}[]()<>#+!|~")


def _escape_code_point(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _quoted(
    value: Any, escapes: dict[str, str], hidden: Callable[[int], bool], code: Callable[[str], str]
) -> str:
    """``value`` in double quotes: ``escapes`` for their characters, ``code(ch)`` for the
    characters whose code point is ``hidden``."""
    out = (escapes.get(ch) or (code(ch) if hidden(ord(ch)) else ch) for ch in str(value))
    return '"' + "".join(out) + '"'


def python_string_literal(value: Any) -> str:
    """``value`` as a double-quoted Python string literal that evaluates to it exactly, e.g.
    ``O"Neil`` -> ``"O\\"Neil"``."""
    hidden = lambda c: not chr(c).isprintable() or 0xD800 <= c <= 0xDFFF  # noqa: E731
    return _quoted(value, _PY_ESCAPES, hidden, _escape_code_point)


def toml_string_literal(value: Any) -> str:
    """``value`` as a TOML basic string that parses to it exactly."""
    hidden = lambda c: c < 0x20 or c == 0x7F or 0xD800 <= c <= 0xDFFF  # noqa: E731
    return _quoted(value, _TOML_ESCAPES, hidden, lambda ch: f"\\u{ord(ch):04x}")


def markdown_text(value: Any) -> str:
    """``value`` as inline Markdown text: markup escaped, line breaks turned into spaces."""
    text = " ".join(str(value).split())
    return "".join("\\" + ch if ch in _MD_SPECIAL else ch for ch in text)


class _NoHookTraceback(logging.Filter):
    """Drop the traceback cookiecutter logs when a hook script exits non-zero."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if type(exc).__name__ == "FailedHookException":
            record.exc_info = None
            record.exc_text = None
        return True


class EmbedExtension(Extension):
    """Registers the filters ``py_str``, ``toml_str``, ``md_text`` and ``sh_str`` (one shell
    word, single-quoted when needed)."""

    def __init__(self, environment: Any) -> None:
        super().__init__(environment)
        environment.filters["py_str"] = python_string_literal
        environment.filters["toml_str"] = toml_string_literal
        environment.filters["md_text"] = markdown_text
        environment.filters["sh_str"] = shlex.quote
        logger = logging.getLogger("cookiecutter.hooks")
        if not any(isinstance(f, _NoHookTraceback) for f in logger.filters):
            logger.addFilter(_NoHookTraceback())
